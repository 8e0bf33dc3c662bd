/*
 * sim_model.c: libFuzzer target for vigil sim's failure model reader (src/sim/model.c), the
 * --failures FILE parser. For any bytes: no crash, leak or UB; a refusal says why in a non-empty
 * message; a model it takes has 1 to 32 classes with clean names and finite rates from 0 up, and
 * reads back to itself: written with sim_model_json() and parsed again, it writes the same bytes.
 *
 * Seeds (tests/fuzz/corpus/sim_model): the default model as --print-model writes it, one-class
 * models, and broken ones (an unknown key, a missing field, a negative rate, a bad kind).
 */
#include "../../src/sim/model.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_model m, back;
	struct strbuf err = STRBUF_INIT, j1 = STRBUF_INIT, j2 = STRBUF_INIT;
	int r = sim_model_parse((const char *)data, size, &m, &err);
	if (r < 0) {
		if (!err.len)
			__builtin_trap();
		goto out;
	}
	if (!m.nr || m.nr > SIM_CLASSES_MAX)
		__builtin_trap();
	for (size_t i = 0; i < m.nr; i++)
		if (!m.classes[i].name[0] || !isfinite(m.classes[i].rate) || m.classes[i].rate < 0 ||
		    !(m.classes[i].repair_hours >= 0))
			__builtin_trap();
	sim_model_json(&m, &j1);
	if (sim_model_parse(j1.buf, j1.len, &back, &err) < 0)
		__builtin_trap();
	sim_model_json(&back, &j2);
	if (strcmp(j1.buf, j2.buf))
		__builtin_trap();
out:
	strbuf_release(&err);
	strbuf_release(&j1);
	strbuf_release(&j2);
	return 0;
}
