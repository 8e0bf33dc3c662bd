/*
 * kmsg.c: libFuzzer target for the kernel log parser and the 'kernel' check's evaluation.
 *
 *   make fuzz-build && build/fuzz/kmsg -max_total_time=60 tests/fuzz/corpus/kmsg
 *
 * The first byte picks options (strict mode, a short window, where "now" comes from); the rest is
 * the log. Besides "no crash, no leak, no UB", it checks what must hold for any input:
 *   - every event string is printable ASCII and within its field;
 *   - parsing the whole buffer at once and parsing it line by line give the same events
 *     (the trigger scan looks at every third byte: this catches a trigger it steps over;
 *     only the year of yearless syslog stamps may differ, as it depends on the lines sampled);
 *   - feeding it in chunks (kmsg_feed(), as the file reader does; the two top bits of the
 *     first byte pick 1, 7, 4096 or 4161 bytes) gives the same events, lines and bytes;
 *   - evaluation gives findings with a code and a message, and a summary.
 */
#include "../../src/checks/kernel.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_string(const char *s, size_t size)
{
	size_t n = strnlen(s, size);
	if (n == size)
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			__builtin_trap();
}

static bool same_event(const struct kmsg_event *a, const struct kmsg_event *b)
{
	return a->kind == b->kind && a->num == b->num && a->line == b->line &&
	       a->count == b->count && a->tb == b->tb && a->boot == b->boot &&
	       !strcmp(a->bdf, b->bdf) && !strcmp(a->name, b->name) && !strcmp(a->text, b->text) &&
	       /* yearless stamps: the year depends on which months were sampled */
	       (a->tb == KMSG_TB_NONE || a->year_guessed || a->ts == b->ts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	unsigned flags = data[0];
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	struct kmsg_opts opts = { .year_hint = (flags & 8) ? 0 : 1.8e9 };
	struct kernel_input in;
	memset(&in, 0, sizeof(in));
	in.source = xstrdup("fuzz");

	kmsg_log_init(&in.log, &opts);
	kmsg_parse(&in.log, buf, len);
	kmsg_log_finish(&in.log);

	/* the same, line by line */
	struct kmsg_log pieces;
	kmsg_log_init(&pieces, &opts);
	for (size_t off = 0; off < len;) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (buf + off)) + 1 : len - off;
		kmsg_parse(&pieces, buf + off, n);
		off += n;
	}
	kmsg_log_finish(&pieces);
	if (pieces.nr != in.log.nr || pieces.lines != in.log.lines)
		__builtin_trap();
	for (size_t i = 0; i < in.log.nr; i++)
		if (!same_event(&in.log.ev[i], &pieces.ev[i]))
			__builtin_trap();
	kmsg_log_release(&pieces);

	/* the same, in chunks that cut lines anywhere */
	static const size_t chunks[] = { 1, 7, 4096, 4161 };
	size_t chunk = chunks[flags >> 6];
	kmsg_log_init(&pieces, &opts);
	for (size_t off = 0; off < len; off += chunk)
		kmsg_feed(&pieces, buf + off, len - off < chunk ? len - off : chunk);
	kmsg_log_finish(&pieces);
	if (pieces.nr != in.log.nr || pieces.lines != in.log.lines ||
	    pieces.bytes != in.log.bytes || pieces.cut_lines != in.log.cut_lines ||
	    pieces.dropped != in.log.dropped || pieces.lost != in.log.lost)
		__builtin_trap();
	for (size_t i = 0; i < in.log.nr; i++)
		if (!same_event(&in.log.ev[i], &pieces.ev[i]))
			__builtin_trap();
	kmsg_log_release(&pieces);

	if (in.log.nr > KMSG_EVENTS_HARD_MAX || in.log.lines > len + 1)
		__builtin_trap();
	for (size_t i = 0; i < in.log.nr; i++) {
		const struct kmsg_event *ev = &in.log.ev[i];
		check_string(ev->bdf, sizeof(ev->bdf));
		check_string(ev->name, sizeof(ev->name));
		check_string(ev->uuid, sizeof(ev->uuid));
		check_string(ev->text, sizeof(ev->text));
		if (ev->count < 1 || ev->boot > in.log.boots || ev->line < 1 || ev->line > in.log.lines)
			__builtin_trap();
	}

	if (flags & 4) {
		/* live /dev/kmsg: now from the clock */
		in.have_now = true;
		in.now_tb = KMSG_TB_MONO;
		in.now = 1e5;
	} else if (in.log.has_last) {
		in.have_now = true;
		in.now_tb = in.log.last_tb;
		in.now = in.log.last_ts;
	}
	struct kernel_config kc;
	kernel_config_load(NULL, &kc, NULL);
	kc.strict = flags & 1;
	if (flags & 2)
		kc.window = 1;
	if (flags & 16)
		strlist_add(&kc.allow, "GPU");
	if (flags & 32) {
		ALLOC_GROW(kc.ignore_xid, kc.nr_ignore_xid + 1, kc.alloc_ignore_xid);
		kc.ignore_xid[kc.nr_ignore_xid++] = 79;
	}
	struct check_result res;
	check_result_init(&res, "kernel");
	kernel_evaluate(&in, &kc, &res);
	result_finish(&res);
	if (!result_find(&res, "summary", NULL))
		__builtin_trap();
	for (size_t i = 0; i < res.nr; i++)
		if (!res.findings[i].code[0] || !res.findings[i].message[0])
			__builtin_trap();
	check_result_release(&res);
	kernel_config_release(&kc);
	kernel_input_release(&in);
	return 0;
}
