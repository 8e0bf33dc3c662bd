/*
 * fleetgen.h: a fleet's recorded history generated from a failure model with planted lemons,
 * seeded and deterministic, written in the shapes `vigil fleet model` and `vigil fleet lemons`
 * read: Slurm's node events as `sacctmgr show event -P` prints them (DIR/slurm-events.txt),
 * every node's agent history (DIR/agent/NODE/history.json), and vigil run journals
 * (DIR/runs/run-NNN/journal.jsonl). Used by tests/unit/test_fleet_lemons.c and
 * bench/fleet_gen.c.
 *
 * The model: host faults at rate_node_day per node per day (lemons at lemon_factor times it),
 * in the proportions of Llama 3's host causes (vigil sim's default model: off the bus 165,
 * HBM 91, NVLink 10, InfiniBand 42, host lost 46, slowdown 6, SDC 6), each a drain by vigil
 * (or Slurm's "Not responding") and a resume after its repair; GPU faults also in the agent's
 * history (a new boot each); a third of the faults also in a run journal (a crash, then the
 * host excluded), and software crashes (no host at fault) at soft_rate_node_day in the
 * journals only. Plus a few planned maintenance drains, which are not faults.
 */
#ifndef VIGIL_TESTS_FLEETGEN_H
#define VIGIL_TESTS_FLEETGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fleetgen {
	unsigned nodes;
	double days;
	double rate_node_day;      /* host faults a node-day, normal nodes */
	double soft_rate_node_day; /* software faults a node-day (journals) */
	double lemon_share;        /* e.g. 0.02 */
	double lemon_factor;       /* e.g. 10 */
	uint64_t seed;
	double start;              /* epoch seconds of the window's start */
};

/* Write the history under dir (created); is_lemon[nodes] says which nodes were planted.
 * Returns the host faults written, or -1 (a message on stderr). */
long fleetgen_write(const struct fleetgen *g, const char *dir, bool *is_lemon);
/* Node i's name: "gpu-NNNN". */
void fleetgen_node_name(unsigned i, char out[32]);

#endif
