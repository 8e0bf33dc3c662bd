/*
 * sim.h: `vigil sim`'s run (docs/SIM.md): vigil run's real supervisor (supervise_in) in
 * virtual time against the simulated world (world.h), with failures drawn from a model
 * (model.h) by a seeded generator, for a job of gpus / gpus_per_node nodes and its spares
 * over days. Faults come one at a time (the next one only): exponential inter-arrival times
 * at the model's total rate times the job's GPUs, the class in proportion to its rate, the
 * victim uniform among the job's nodes. A broken host is repaired after its class's hours
 * and comes back to the pool; vigil run never takes back a host it excluded, so when the
 * supervisor gives up for want of hosts, the job is requeued (a fresh vigil run, as Slurm's
 * requeue would start it) once enough hosts are back: that wait is "waiting for nodes".
 *
 * Ownership: the params and the model are borrowed; the result is a plain value.
 */
#ifndef VIGIL_SIM_SIM_H
#define VIGIL_SIM_SIM_H

#include "model.h"

#include <stdint.h>

struct sim_params {
	unsigned gpus, gpus_per_node, spares;
	double days, step_s;
	double checkpoint_every_s, checkpoint_cost_s, restart_cost_s;
	double check_interval_s; /* the supervisor's periodic vigil check and Slurm poll */
	double repair_hours;     /* > 0: every host class's repair time, else the model's */
	double hang_floor_s;     /* the supervisor's hang limit's floor (vigil run's default 60) */
	uint64_t seed;
	const char *tmpdir;      /* where the private run directory goes (TMPDIR; NULL: /tmp) */
};

enum sim_cause {
	SIM_LOST_DETECTION,  /* from the fault to the step's end (a hang: detected, stacks) */
	SIM_LOST_RESTART,    /* from the step's end to the next step (checks, srun, start-up) */
	SIM_LOST_RECOMPUTE,  /* steps done again since the last checkpoint */
	SIM_LOST_WAITING,    /* no run: waiting for repaired hosts to requeue the job */
	SIM_LOST_CHECKPOINT, /* the trainer stalled saving checkpoints */
	SIM_LOST_SLOWDOWN,   /* steps slower than the step time */
	SIM_CAUSE_NR
};

struct sim_result {
	unsigned nodes;            /* the job's nodes (gpus / gpus_per_node) */
	double wall_s;             /* days in seconds */
	double productive_s;       /* unique steps kept x step time */
	double ettr, goodput;
	uint64_t steps;
	unsigned interruptions;    /* faults that struck the job */
	unsigned by_class[SIM_CLASSES_MAX];
	double lost_s[SIM_CAUSE_NR];
	unsigned spares_used_max;  /* most spares that took a place in one vigil run */
	unsigned requeues;         /* vigil runs after the first (the spares ran out) */
	unsigned restarts;         /* relaunches by the supervisor, all runs together */
	unsigned check_rounds;     /* vigil check rounds the world answered */
	double mtbf_s;             /* the model's mean time between faults for this job */
	double young_daly_s;       /* sqrt(2 mtbf C) */
};

/* Run it: 0, or -1 with *err (a bad parameter, the run directory, the supervisor). */
int sim_run(const struct sim_params *p, const struct sim_model *m, struct sim_result *r,
	    struct strbuf *err);

const char *sim_cause_name(enum sim_cause c);

/* The generator (xoshiro256**, seeded by splitmix64): the same numbers on every machine. */
struct sim_rng {
	uint64_t s[4];
};
void sim_rng_seed(struct sim_rng *g, uint64_t seed);
uint64_t sim_rng_next(struct sim_rng *g);
double sim_rng_uniform(struct sim_rng *g); /* [0, 1) */

#endif
