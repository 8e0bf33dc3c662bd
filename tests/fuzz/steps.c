/*
 * steps.c: libFuzzer target for the progress parsers (src/logs/steps.h). For any bytes, fed in
 * any chunks: no crash, leak or UB; the kept line never passes STEP_LINE_MAX; every step and
 * token count is at most STEP_MAX and every loss finite; each update's class agrees with the
 * step before it; every step time is above 0 and finite, every MFU from 0 to 1, every stamp
 * finite; and the steps found (with the line numbers and stamps read beside them) do not depend
 * on how the input was cut into chunks.
 */
#include "../../src/logs/steps.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SEEN 4096

struct seen {
	uint64_t steps[MAX_SEEN], lines[MAX_SEEN];
	size_t nr, total;
	const struct step_parser *p;
};

static void on_step(void *arg, const struct step_update *u)
{
	struct seen *s = arg;
	if (u->r.step > STEP_MAX || (u->r.has_tokens && u->r.tokens > STEP_MAX) ||
	    (u->r.has_loss && !isfinite(u->r.loss)) ||
	    (u->r.has_total && u->r.total < u->r.step) || s->p->line.len > STEP_LINE_MAX ||
	    (u->r.has_step_time && !(u->r.step_time > 0 && isfinite(u->r.step_time))) ||
	    (u->r.has_mfu && !(u->r.mfu >= 0 && u->r.mfu <= 1)) ||
	    (u->meta.has_time && !isfinite(u->meta.time)) || u->line_no > s->p->newlines + 1)
		__builtin_trap();
	switch (u->change) {
	case STEP_FIRST:
		if (s->total)
			__builtin_trap();
		break;
	case STEP_SAME:
		if (u->prev != u->r.step)
			__builtin_trap();
		break;
	case STEP_BACKWARDS:
		if (u->r.step >= u->prev)
			__builtin_trap();
		break;
	case STEP_NEXT:
	case STEP_JUMP:
		if (u->r.step <= u->prev)
			__builtin_trap();
		break;
	}
	if (s->nr < MAX_SEEN) {
		s->lines[s->nr] = u->line_no;
		s->steps[s->nr++] = u->r.step ^ (u->meta.has_rank ? (uint64_t)u->meta.rank << 53 : 0);
	}
	s->total++;
}

static void run(struct step_parser *whole, struct step_parser *cut, const uint8_t *data,
		size_t size, size_t chunk)
{
	static struct seen a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.p = whole;
	b.p = cut;
	step_parser_feed(whole, (const char *)data, size, on_step, &a);
	step_parser_finish(whole, on_step, &a);
	for (size_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		step_parser_feed(cut, (const char *)data + off, n, on_step, &b);
	}
	step_parser_finish(cut, on_step, &b);
	if (a.total != b.total || a.nr != b.nr || memcmp(a.steps, b.steps, a.nr * sizeof(a.steps[0])) ||
	    memcmp(a.lines, b.lines, a.nr * sizeof(a.lines[0])))
		__builtin_trap();
	if (whole->lines != cut->lines || whole->overlong_lines != cut->overlong_lines ||
	    whole->newlines != cut->newlines || whole->other_bars != cut->other_bars)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct step_parser a, b;
	struct strbuf err = STRBUF_INIT;
	size_t chunk = size ? 1 + data[0] % 64 : 1;

	if (step_parser_init_output(&a, NULL, &err) || step_parser_init_output(&b, NULL, &err))
		__builtin_trap();
	a.want_meta = b.want_meta = true;
	run(&a, &b, data, size, chunk);
	step_parser_release(&a);
	step_parser_release(&b);

	step_parser_init_json(&a);
	step_parser_init_json(&b);
	run(&a, &b, data, size, chunk);
	step_parser_release(&a);
	step_parser_release(&b);

	if (step_parser_init_output(&a, "it=([0-9]+)", &err) ||
	    step_parser_init_output(&b, "it=([0-9]+)", &err))
		__builtin_trap();
	run(&a, &b, data, size, chunk);
	step_parser_release(&a);
	step_parser_release(&b);
	strbuf_release(&err);
	return 0;
}
