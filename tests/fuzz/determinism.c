/*
 * determinism.c: libFuzzer target for the determinism test's parsers and verdicts
 * (src/stress/determinism.h). The input is read twice: as the reference file (tab-separated
 * lines) and as the helper's JSON lines, which are then judged against what parsed as
 * references. For any bytes: no crash, leak or UB; a GPU keeps at most DET_MAX_DIGESTS
 * digests whose counts add up, with the rest counted in 'others'; a majority holds more than
 * half of the repeats; a reference parse that fails leaves nothing behind.
 */
#include "../../src/stress/determinism.h"
#include "../../src/stress/helper.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf err = STRBUF_INIT;
	struct det_refs refs;
	memset(&refs, 0, sizeof(refs));
	if (det_refs_parse(&refs, (const char *)data, size, &err) < 0)
		det_refs_release(&refs);
	struct helper_out ho;
	helper_out_init(&ho);
	helper_parse_lines(&ho, (const char *)data, size);
	struct det_run r;
	det_run_init(&r);
	strbuf_reset(&err);
	det_run_parse(&r, (const struct json_value *const *)ho.lines, ho.nr, &err);
	if (r.nr > DET_MAX_GPUS)
		__builtin_trap();
	for (size_t i = 0; i < r.nr; i++) {
		const struct det_gpu *g = &r.gpus[i];
		uint64_t sum = g->others;
		if (g->nr_d > DET_MAX_DIGESTS)
			__builtin_trap();
		for (size_t k = 0; k < g->nr_d; k++)
			sum += g->d[k].count;
		if (sum != g->repeats)
			__builtin_trap();
		const struct det_digest *m = det_majority(g);
		if (m && 2 * (uint64_t)m->count <= g->repeats)
			__builtin_trap();
	}
	struct gs_end end;
	memset(&end, 0, sizeof(end));
	end.ran = true;
	end.describe = "exited with 0";
	struct report rep;
	report_init(&rep, "fuzz", 0);
	det_evaluate(&r, &end, &refs, &rep);
	report_finish(&rep);
	report_release(&rep);
	det_run_release(&r);
	det_refs_release(&refs);
	helper_out_release(&ho);
	strbuf_release(&err);
	return 0;
}
