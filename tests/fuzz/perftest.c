/*
 * perftest.c: libFuzzer target for the perftest readers (src/fabric/perftest.h) and the burn-in
 * plan and counters readers (src/fabric/burnin_run.h): the input as an --out_json file, as the
 * text a test printed (bandwidth and latency), as a failed run's output, as a plan and as a
 * counters report. No crash, leak or UB; a result that parsed holds only sane figures; a plan
 * that parsed has plain names; the judgement of a parsed plan is JSON that parses back.
 */
#include "../../src/fabric/perftest.h"
#include "../../src/fabric/burnin_run.h"
#include "../../src/lib/json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct pt_result *r, enum pt_kind k)
{
	if (!r->have)
		return;
	const double v[] = { r->bw_avg, r->bw_peak, r->msg_rate, r->t_avg, r->p99, r->p999 };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (!isfinite(v[i]) || v[i] < 0)
			__builtin_trap();
	if (k == PT_BW && r->bw_avg > 100000)
		__builtin_trap();
	if (strlen(r->device) >= sizeof(r->device))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	struct strbuf err = STRBUF_INIT;
	struct pt_result r;
	for (int k = 0; k < 2; k++) {
		strbuf_reset(&err);
		if (pt_parse_json(t, size, (enum pt_kind)k, &r, &err) == 0)
			check(&r, (enum pt_kind)k);
		else if (!err.len)
			__builtin_trap();
		strbuf_reset(&err);
		if (pt_parse_text(t, size, (enum pt_kind)k, &r, &err) == 0)
			check(&r, (enum pt_kind)k);
		else if (!err.len)
			__builtin_trap();
	}
	if ((unsigned)pt_failure_cause(t, size) > PT_CAUSE_USAGE)
		__builtin_trap();

	struct br_plan p;
	strbuf_reset(&err);
	if (br_plan_parse(t, size, &p, &err) == 0) {
		for (size_t i = 0; i < p.nr_stages; i++)
			for (size_t k = 0; k < p.stages[i].nr; k++) {
				struct br_pair *q = &p.stages[i].pairs[k];
				if (q->a[0] == '-' || strchr(q->a, ' ') || !strcmp(q->a, q->b))
					__builtin_trap();
				q->ran = true;
				q->verdict = (enum ib_verdict)((i + k) % 4);
			}
		struct br_judgement j;
		br_judge(&p, NULL, 0, &j);
		struct json_value *v = json_parse(j.json.buf, j.json.len, &err);
		if (!v)
			__builtin_trap();
		json_free(v);
		br_judgement_release(&j);
	}
	br_plan_release(&p);
	struct br_counters c;
	strbuf_reset(&err);
	br_counters_parse(t, size, &c, &err);
	br_counters_release(&c);
	strbuf_release(&err);
	return 0;
}
