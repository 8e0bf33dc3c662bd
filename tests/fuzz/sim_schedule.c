/*
 * sim_schedule.c: libFuzzer target for vigil sim's fault schedule reader (src/sim/schedule.c),
 * the --schedule FILE parser. For any bytes: no crash, leak or UB; a refusal says why in a
 * non-empty message; a schedule it takes has at most SIM_SCHEDULE_MAX faults, each at a finite
 * time from 0 and before the horizon, of a class of the model, on a slot below the job's
 * nodes, in time order.
 *
 * Seeds (tests/fuzz/corpus/sim_schedule): run-faults' replay, an empty list, one out of order,
 * and broken ones (an unknown key, a class not in the model, a slot too high, not a list).
 */
#include "../../src/sim/schedule.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sim_model m;
	if (!m.nr) {
		static const char *const names[] = { "crash", "hang", "sick", "slow", "lost" };
		for (size_t i = 0; i < 5; i++) {
			snprintf(m.classes[i].name, sizeof(m.classes[i].name), "%s", names[i]);
			m.classes[i].rate = 1;
		}
		m.nr = 5;
	}
	struct sim_schedule s;
	struct strbuf err = STRBUF_INIT;
	const double horizon = 600;
	const unsigned nodes = 4;
	if (sim_schedule_parse((const char *)data, size, &m, nodes, horizon, &s, &err) < 0) {
		if (!err.len || s.nr || s.f)
			__builtin_trap();
		goto out;
	}
	if (s.nr > SIM_SCHEDULE_MAX || !s.scripted)
		__builtin_trap();
	for (size_t i = 0; i < s.nr; i++) {
		const struct sim_fault_at *f = &s.f[i];
		if (!isfinite(f->at) || f->at < 0 || f->at >= horizon || f->cls < 0 ||
		    (size_t)f->cls >= m.nr || f->slot >= nodes || (i && f->at < s.f[i - 1].at))
			__builtin_trap();
	}
	sim_schedule_release(&s);
out:
	strbuf_release(&err);
	return 0;
}
