/*
 * diag_logs.c: libFuzzer target for 'vigil diagnose logs' (src/diagnose/logs.h): the line
 * classifier on every line of the input, and the whole reader on the input split into files
 * and chunks of any size. No crash, leak or UB; a known line has a code, a cause, an action
 * and a tier in range, a host of at most DLOG_HOST_MAX - 1 printable bytes; the same bytes in
 * other chunks give the same findings; the root is a finding; the JSON parses back.
 */
#include "../../src/diagnose/logs.h"
#include "../../src/lib/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_match(const struct dlog_match *m)
{
	if (!m->code || !*m->code || !m->cause || !m->action || m->tier > DLOG_TIER_CASCADE ||
	    (int)m->act < 0 || m->act >= ACTION__COUNT || m->rank < -1 ||
	    strlen(m->host) >= DLOG_HOST_MAX)
		__builtin_trap();
	for (const char *h = m->host; *h; h++)
		if ((unsigned char)*h <= ' ' || (unsigned char)*h >= 0x7f)
			__builtin_trap();
}

/* The input as files: a 0x1e byte starts the next file; chunk bytes per feed. */
static void run(struct dlog *d, const uint8_t *data, size_t size, size_t chunk)
{
	dlog_init(d);
	size_t start = 0, nfile = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != 0x1e)
			continue;
		char name[32];
		snprintf(name, sizeof(name), "attempt-1/rank-%zu.err", nfile++);
		dlog_file_begin(d, name, "", (long)nfile - 1);
		for (size_t off = start; off < i; off += chunk)
			dlog_feed(d, (const char *)data + off, i - off < chunk ? i - off : chunk);
		dlog_file_end(d, NULL);
		start = i + 1;
	}
	dlog_finish(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlog_match m;
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != '\n')
			continue;
		if (dlog_classify((const char *)data + start, i - start, &m))
			check_match(&m);
		start = i + 1;
	}

	struct dlog a, b;
	run(&a, data, size, size ? size : 1);
	run(&b, data, size, size ? (size_t)data[0] % 13 + 1 : 1);
	if (a.nr != b.nr || (a.nr && a.root != 0) || (!a.nr && a.root != -1))
		__builtin_trap();
	/* "not text" is counted per byte: however the file is read, the same files are it */
	if (dlog_unreadable(&a) != dlog_unreadable(&b))
		__builtin_trap();
	for (size_t i = 0; i < a.nr; i++) {
		if (strcmp(a.f[i].code, b.f[i].code) || a.f[i].num != b.f[i].num ||
		    a.f[i].count != b.f[i].count || a.f[i].first.line != b.f[i].first.line ||
		    a.f[i].first.file != b.f[i].first.file || !a.f[i].count)
			__builtin_trap();
	}

	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	dlog_write_json(&a, &out);
	struct json_value *v = json_parse(out.buf, out.len, &err);
	if (!v)
		__builtin_trap();
	json_free(v);
	strbuf_reset(&out);
	dlog_write_text(&a, &out);
	strbuf_release(&out);
	strbuf_release(&err);
	dlog_release(&a);
	dlog_release(&b);
	return 0;
}
