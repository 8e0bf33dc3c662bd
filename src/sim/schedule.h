/*
 * schedule.h: the faults of one `vigil sim` run, fixed before any policy runs (docs/SIM.md,
 * "The fault schedule"): drawn from the seed and the model ahead of time, or read from a file
 * (--schedule, a replay). Every policy (vigil's real supervisor, torchrun's, an operator's)
 * gets the same list: what a policy does cannot change which faults come, when, of which
 * class, or on which of the job's node slots. A slot is a place in the job (0 .. nodes - 1);
 * the fault strikes the host that holds it then (vigil may have moved a spare into it).
 *
 * Ownership: a schedule owns its array; sim_schedule_release() frees it.
 */
#ifndef VIGIL_SIM_SCHEDULE_H
#define VIGIL_SIM_SCHEDULE_H

#include "model.h"

#include <stdint.h>

/* A schedule file is small: more than this is not a schedule. */
#define SIM_SCHEDULE_FILE_MAX (1 << 20)
#define SIM_SCHEDULE_MAX 100000

struct sim_fault_at {
	double at;     /* virtual seconds from the start */
	int cls;       /* the model's class index */
	unsigned slot; /* the job's node slot, 0 .. nodes - 1 */
};

struct sim_schedule {
	struct sim_fault_at *f;
	size_t nr, alloc;
	bool scripted; /* read from a file, not drawn */
};

/* Draw the faults of horizon_s seconds for a job of gpus GPUs on nodes nodes: exponential
 * inter-arrival times at the model's total rate x gpus, the class in proportion to its
 * rate, the slot uniform; xoshiro256** from seed (sim.h), the same numbers as phase 1 drew
 * lazily (one run's vigil figures did not change when the schedule was drawn ahead). */
void sim_schedule_draw(const struct sim_model *m, unsigned gpus, unsigned nodes,
		       double horizon_s, uint64_t seed, struct sim_schedule *s);
/* Parse a JSON list of {"at_s": S, "class": NAME, "node": SLOT}: classes by the model's
 * names, slots below nodes, at_s from 0; strict (an unknown key, a class not in the model, a
 * slot out of range is an error naming the entry). Sorted by at_s (a file in order keeps
 * it; ties otherwise by slot, then class); faults at or after horizon_s are dropped.
 * 0, or -1 with *err. */
int sim_schedule_parse(const char *text, size_t len, const struct sim_model *m, unsigned nodes,
		       double horizon_s, struct sim_schedule *s, struct strbuf *err);
int sim_schedule_load(const char *path, const struct sim_model *m, unsigned nodes,
		      double horizon_s, struct sim_schedule *s, struct strbuf *err);
void sim_schedule_release(struct sim_schedule *s);

#endif
