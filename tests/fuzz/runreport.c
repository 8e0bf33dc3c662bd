/*
 * runreport.c: libFuzzer target for the run report (src/supervise/runreport.h). For any bytes
 * taken as a journal: no crash, leak or UB; every number it reports is sane (ETTR in [0, 1] or
 * unknown, no attempt more productive than it lasted, nothing redone beyond what it did); the
 * text has no raw control byte but newlines; the JSON parses; the page has no script and no tag
 * from the input.
 */
#include "../../src/supervise/runreport.h"
#include "../../src/lib/json.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run_report r;
	struct strbuf out = STRBUF_INIT;
	runreport_build((const char *)data, size, &r);
	if (!isnan(r.ettr) && !(r.ettr >= 0 && r.ettr <= 1))
		__builtin_trap();
	if (r.records && !(r.wall_s >= 0))
		__builtin_trap();
	for (size_t i = 0; i < r.nr_attempts; i++) {
		const struct rr_attempt *a = &r.attempts[i];
		if (!(a->productive_s >= 0) || a->productive_s > a->end - a->start + 1e-6)
			__builtin_trap();
		if (a->has_steps && a->last_step >= a->first_step &&
		    a->steps_redone > a->last_step - a->first_step + 1)
			__builtin_trap();
		if (a->nr_samples > RR_MAX_SAMPLES)
			__builtin_trap();
	}
	runreport_text(&r, "run", &out);
	for (size_t i = 0; i < out.len; i++)
		if (out.buf[i] != '\n' && ((unsigned char)out.buf[i] < 0x20 || out.buf[i] == 0x7f))
			__builtin_trap();
	strbuf_reset(&out);
	runreport_json(&r, "run", &out);
	struct json_value *v = json_parse(out.buf, out.len, NULL);
	if (!v)
		__builtin_trap();
	json_free(v);
	strbuf_reset(&out);
	runreport_html(&r, "run", &out);
	if (strstr(out.buf, "<script") || strstr(out.buf, "<img") || strstr(out.buf, "<iframe"))
		__builtin_trap();
	strbuf_release(&out);
	run_report_release(&r);
	return 0;
}
