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
#include "schedule.h"

#include <stdint.h>

/* Who handles the faults (docs/SIM.md, "Policies"). Only vigil's is the real supervisor; the
 * others are event loops over the same world and the same schedule (policy.c). */
enum sim_policy {
	SIM_POLICY_VIGIL,    /* vigil run's own supervisor, in virtual time */
	SIM_POLICY_TORCHRUN, /* torchrun --max-restarts: restarts, excludes no one */
	SIM_POLICY_MANUAL,   /* an operator paged on each failure */
	SIM_POLICY_NR
};

/* The defaults of a 0 in sim_params (so a caller that knows nothing of policies gets them). */
#define SIM_NCCL_TIMEOUT_S 600.0  /* NCCL's watchdog (torch's default process group timeout) */
#define SIM_OPERATOR_MINUTES 30.0 /* an operator's response to a page */
#define SIM_TORCHRUN_MONITOR_S 0.1 /* torchrun's --monitor-interval since torch 2.4 */

struct sim_params {
	unsigned gpus, gpus_per_node, spares;
	double days, step_s;
	double checkpoint_every_s, checkpoint_cost_s, restart_cost_s;
	double check_interval_s; /* the supervisor's periodic vigil check and Slurm poll */
	double repair_hours;     /* > 0: every host class's repair time, else the model's */
	double hang_floor_s;     /* the supervisor's hang limit's floor (vigil run's default 60) */
	uint64_t seed;
	const char *tmpdir;      /* where the private run directory goes (TMPDIR; NULL: /tmp) */
	enum sim_policy policy;  /* 0: vigil */
	double nccl_timeout_s;   /* torchrun's and manual's hang detection (0: 600) */
	double operator_minutes; /* manual's response, torchrun's to a lost node (0: 30) */
	double torchrun_monitor_s; /* torchrun's poll of its workers (0: 0.1) */
	/* the simulated cluster's latencies for vigil's supervisor (a replay of a testbed);
	 * 0: world.c's (a check round 2 s, a stop 3 s, stacks 5 s, a smoke run 30 s) and
	 * vigil run's test options' restart delay (2 s) */
	double lat_check_s, lat_stop_s, lat_stacks_s, lat_smoke_s, lat_restart_delay_s;
	/* the faults; NULL: drawn from seed (sim_schedule_draw) for this run */
	const struct sim_schedule *schedule;
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
	unsigned faults;           /* faults in the schedule (struck the job or not) */
};

/* Run it: 0, or -1 with *err (a bad parameter, the run directory, the supervisor). */
int sim_run(const struct sim_params *p, const struct sim_model *m, struct sim_result *r,
	    struct strbuf *err);

const char *sim_cause_name(enum sim_cause c);
const char *sim_policy_name(enum sim_policy p);
/* "vigil", "torchrun", "manual": 0 and *out, or -1. */
int sim_policy_parse(const char *name, enum sim_policy *out);

/* torchrun's and manual's run (policy.c): the same world's rules as an event loop over the
 * schedule s; called by sim_run for those policies. */
int sim_policy_run(const struct sim_params *p, const struct sim_model *m,
		   const struct sim_schedule *s, struct sim_result *r, struct strbuf *err);

/* The generator (xoshiro256**, seeded by splitmix64): the same numbers on every machine. */
struct sim_rng {
	uint64_t s[4];
};
void sim_rng_seed(struct sim_rng *g, uint64_t seed);
uint64_t sim_rng_next(struct sim_rng *g);
double sim_rng_uniform(struct sim_rng *g); /* [0, 1) */

#endif
