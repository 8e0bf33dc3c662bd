/*
 * diag_rows.c: libFuzzer target for the row reader of 'vigil diagnose' (src/diagnose/rows.h)
 * and the two analyses behind it. For any bytes, fed in any chunks: no crash, leak or UB; the
 * rows do not depend on how the input was cut; every kept value is finite and in its range;
 * the host table stays bounded; and the steps and stragglers analyses either tell or say why.
 * A raw trainer log (a first line that is no row) goes through the step rules: the same
 * invariants, read as one reporter's rows and as every rank's (stragglers), and with a pattern.
 */
#include "../../src/diagnose/steps.h"
#include "../../src/diagnose/stragglers.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct diag_rows a, b;
static struct diag_steps s;
static struct diag_stragglers g;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf err = STRBUF_INIT;
	size_t chunk = size ? 1 + data[0] % 97 : 1;
	diag_rows_init(&a);
	diag_rows_init(&b);
	diag_rows_feed(&a, (const char *)data, size);
	diag_rows_finish(&a);
	for (size_t off = 0; off < size; off += chunk)
		diag_rows_feed(&b, (const char *)data + off, size - off < chunk ? size - off : chunk);
	diag_rows_finish(&b);
	if (a.nr != b.nr || a.garbage != b.garbage || a.skipped != b.skipped ||
	    a.lines != b.lines || a.hosts_nr != b.hosts_nr ||
	    (a.nr && memcmp(a.v, b.v, a.nr * sizeof(*a.v))))
		__builtin_trap();
	if (a.hosts_nr > DIAG_HOSTS_MAX || a.garbage_line_nr > DIAG_GARBAGE_KEPT)
		__builtin_trap();
	for (size_t i = 0; i < a.nr; i++) {
		const struct diag_row *r = &a.v[i];
		if ((double)r->step > DIAG_STEP_MAX || !isfinite(r->time) || !isfinite(r->mfu) ||
		    !isfinite(r->step_time) || !isfinite(r->tokens) || !isfinite(r->compute) ||
		    r->mfu < 0 || r->mfu > 1 || r->step_time < 0 ||
		    ((r->has & DROW_HOST) && r->host >= a.hosts_nr) || r->line == 0 ||
		    r->line > a.lines)
			__builtin_trap();
	}
	const struct diag_steps_opts o = { 0 };
	if (diag_steps_analyse(&a, &o, &s, &err) == 0) {
		if (s.used < DIAG_MIN_POINTS || s.pat_nr > DIAG_MAX_PATTERNS)
			__builtin_trap();
		for (size_t i = 0; i < s.pat_nr; i++)
			if (!(s.pat[i].cost >= 0) || s.pat[i].kind >= DP_NR)
				__builtin_trap();
		/* expected events (issue 18): bounded, in step order, warm-up within the run */
		if (s.event_nr > DIAG_EVENTS_KEPT || s.warmup_steps >= s.used)
			__builtin_trap();
		for (size_t i = 0; i < s.event_nr; i++)
			if (s.event[i].kind >= DE_NR || s.event[i].end_step < s.event[i].start_step ||
			    (i && s.event[i].start_step < s.event[i - 1].start_step))
				__builtin_trap();
	} else if (!err.len) {
		__builtin_trap();
	}
	strbuf_reset(&err);
	if (diag_stragglers_analyse(&a, &g, &err) < 0 && !err.len)
		__builtin_trap();
	diag_rows_release(&a);
	diag_rows_release(&b);
	/* every rank's rows, and a user's pattern: chunking changes nothing either */
	for (int mode = 0; mode < 2; mode++) {
		diag_rows_init(&a);
		diag_rows_init(&b);
		const char *pat = mode ? "it=([0-9]+)" : NULL;
		if (diag_rows_log(&a, pat, true, &err) || diag_rows_log(&b, pat, true, &err))
			__builtin_trap();
		diag_rows_feed(&a, (const char *)data, size);
		diag_rows_finish(&a);
		for (size_t off = 0; off < size; off += chunk)
			diag_rows_feed(&b, (const char *)data + off,
				       size - off < chunk ? size - off : chunk);
		diag_rows_finish(&b);
		if (a.nr != b.nr || a.lines != b.lines || a.garbage != b.garbage ||
		    (a.nr && memcmp(a.v, b.v, a.nr * sizeof(*a.v))))
			__builtin_trap();
		for (size_t i = 0; i < a.nr; i++)
			if (a.v[i].line == 0 || a.v[i].line > a.lines || !isfinite(a.v[i].step_time) ||
			    a.v[i].step_time < 0 || a.v[i].mfu < 0 || a.v[i].mfu > 1)
				__builtin_trap();
		strbuf_reset(&err);
		if (diag_stragglers_analyse(&a, &g, &err) < 0 && !err.len)
			__builtin_trap();
		diag_rows_release(&a);
		diag_rows_release(&b);
	}
	strbuf_release(&err);
	return 0;
}
