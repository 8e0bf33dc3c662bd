/*
 * nvml_snapshot.c: libFuzzer target for the NVML snapshot parser (src/gpu/snapshot_parse.c),
 * which turns the agent's GET /gpu-reading answer into the readings `vigil check` judges. For any
 * input: no crash, leak or UB; a refusal says why (clean) and leaves no GPU; what it accepts, written
 * back and parsed again, writes the same text (the parser is the writer's inverse).
 *
 * Seeds (tests/fuzz/corpus/nvml_snapshot): snapshots of the lent H200 machines and fixtures of
 * tests/scenarios (a lost GPU, init failures, NVLink lines), and hostile variants (guesses).
 */
#include "../../src/gpu/snapshot.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nvml_host h, again;
	struct strbuf err = STRBUF_INIT, one = STRBUF_INIT, two = STRBUF_INIT;
	nvml_host_init(&h);
	nvml_host_init(&again);
	if (nvml_snapshot_parse((const char *)data, size, &h, &err) < 0) {
		if (!err.len || !str_is_clean(err.buf) || h.nr)
			__builtin_trap();
		goto out;
	}
	nvml_snapshot_format(&h, &one);
	if (nvml_snapshot_parse(one.buf, one.len, &again, &err) < 0)
		__builtin_trap();
	nvml_snapshot_format(&again, &two);
	if (strcmp(one.buf, two.buf))
		__builtin_trap();
out:
	nvml_host_release(&h);
	nvml_host_release(&again);
	strbuf_release(&err);
	strbuf_release(&one);
	strbuf_release(&two);
	return 0;
}
