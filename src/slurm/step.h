/*
 * step.h: one srun job step of a `vigil run` attempt (docs/SUPERVISOR.md): its argv and environment (a pure
 * plan, unit-tested), and its life as a child of the supervisor (start, poll, stop).
 *
 * The step runs G tasks on each of the chosen hosts. Every task gets what torch.distributed's
 * init_method="env://" reads (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, NODE_RANK) plus the resume contract (VIGIL_ATTEMPT, VIGIL_RUN_DIR,
 * VIGIL_STEP_FILE). The values common to all tasks travel in srun's environment (--export=ALL);
 * the per-task ones are derived inside each task from SLURM_PROCID by a fixed /bin/sh script
 * (STEP_TASK_SCRIPT) that receives the trainer's argv as its positional parameters and execs it,
 * so no user text is ever part of a shell string. Tasks are laid out with
 * --distribution=arbitrary and a node list that repeats each host G times, so rank r runs on
 * hosts[r / G] in the caller's order and rank 0 is on hosts[0] (MASTER_ADDR): Slurm's own
 * SLURM_NODEID follows its node table, not the caller's order, and is not used.
 *
 * Each rank's stdout and stderr go to ATTEMPT_DIR/rank-N.out and rank-N.err (srun --output and
 * --error with %t), so attempts never mix; or, labelled, through srun's own pipes with each line
 * prefixed by its rank, for a supervisor that reads progress live and writes the rank files
 * itself (time-stamped, src/supervise/rankout.h). Rank 0 writes "JOBID.STEPID" to ATTEMPT_DIR/step-id,
 * which stop uses to scancel the step when srun does not end on its own.
 *
 * Ownership: struct step_plan owns its strings and arrays (step_plan_release()). struct step owns
 * its plan and child (step_release(), after step_stop() or a finished poll).
 */
#ifndef VIGIL_SLURM_STEP_H
#define VIGIL_SLURM_STEP_H

#include "slurm.h"
#include "../lib/run.h"

/* The script each task runs before exec'ing the trainer; constant, user input only in "$@". */
extern const char STEP_TASK_SCRIPT[];

#define STEP_MAX_TASKS_PER_NODE 1024u
#define STEP_MAX_HOSTS 65536u

struct step_spec {
	const char *const *hosts;  /* Slurm node names, rank order; slurm_node_name_ok() each */
	size_t nr_hosts;
	unsigned tasks_per_node;   /* G, 1..STEP_MAX_TASKS_PER_NODE */
	const char *master_addr;   /* NULL: hosts[0] (a node name that is not a resolvable host
				    * name needs its address here) */
	unsigned master_port;      /* 1..65535 */
	unsigned attempt;          /* VIGIL_ATTEMPT */
	const char *run_dir;       /* VIGIL_RUN_DIR */
	const char *attempt_dir;   /* rank files and step-id; no '%' or '\\' (srun patterns) */
	const char *step_file;     /* VIGIL_STEP_FILE */
	const char *label;         /* srun --job-name; NULL: "vigil-run" */
	unsigned wait_s;           /* srun --wait (end the rest this long after a task exits); 0:
				    * not passed, the supervisor decides */
	bool labelled;             /* every task's output through srun's own stdout and stderr,
				    * each line prefixed with "RANK: " (srun --label), for the
				    * caller to read live; otherwise the rank-N files below */
	const char *const *env;    /* more "NAME=VALUE" for every task (NULL-terminated, optional) */
	const char *const *cmd;    /* the trainer's argv, NULL-terminated, at least one entry */
};

struct step_plan {
	char **argv;  /* NULL-terminated: srun, options, /bin/sh -c SCRIPT sh CMD... */
	char **env;   /* NULL-terminated "NAME=VALUE" for srun's environment */
	size_t argc, envc;
};

/* The argv and environment of the step (pure). 0, or -1 with *err naming the bad field. */
int step_plan(const struct slurm_cmds *c, const struct step_spec *s, struct step_plan *out,
	      struct strbuf *err);
void step_plan_release(struct step_plan *p);
/* The value of NAME in the plan's environment, or NULL. */
const char *step_plan_env(const struct step_plan *p, const char *name);

struct step {
	const char *scancel;       /* program; NULL: "scancel" */
	const char *scontrol;      /* program to see the step gone; NULL: c->scontrol */
	/* a labelled step's output, as it comes (run.h's on_output); set before step_start() */
	void (*on_output)(void *arg, int stream, const char *data, size_t len);
	void *on_output_arg;
	struct step_plan plan;
	struct child child;        /* srun; its own process group */
	char attempt_dir[4096];
	char id[64];               /* "JOBID.STEPID" once known, else "" */
	bool started;
};

void step_init(struct step *st);
/* Plan and start srun. 0, or -1 with *err (bad spec, srun could not be started). */
int step_start(struct step *st, const struct slurm_cmds *c, const struct step_spec *s,
	       struct strbuf *err);
/* Poll plumbing, as run.h's: the supervisor multiplexes the step with everything else. */
size_t step_pollfds(const struct step *st, struct pollfd *pfd);
/* true once srun has ended (every task of the step is done); then st->child says how. */
bool step_handle(struct step *st, const struct pollfd *pfd, size_t n);
/* "JOBID.STEPID" from the step-id file once rank 0 has written it, else NULL. */
const char *step_id(struct step *st);
/*
 * Stop the step and leave no task of it on any node: SIGTERM to srun's group (srun forwards it
 * to every task), up to grace_ms for srun to end; then scancel of the step (when its id is
 * known) and SIGKILL to srun's group; then, with an id, wait (bounded by c->timeout_ms) until
 * scontrol no longer knows the step. 0, or -1 with *err when the step could not be seen gone
 * (the caller must not launch the next attempt on those hosts blindly).
 */
int step_stop(struct step *st, const struct slurm_cmds *c, unsigned grace_ms, struct strbuf *err);
/*
 * Stop a step this process did not start (a supervisor before it was killed, found in the
 * journal): scancel --signal=KILL and scancel of id, then wait (bounded) until scontrol no
 * longer knows it. 0 when it is gone (or was never known), -1 with *err.
 */
int step_stop_id(const struct slurm_cmds *c, const char *scancel, const char *scontrol,
		 const char *id, struct strbuf *err);
/* Is s a step id as Slurm prints it, "JOBID.STEPID"? */
bool step_id_ok(const char *s);
void step_release(struct step *st);

#endif
