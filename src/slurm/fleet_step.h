/*
 * fleet_step.h: a check round over N nodes as ONE srun step (one task a node) instead of N
 * steps: on 4,096 nodes that is one step for slurmctld to create, not 4,096.
 *
 *   srun --nodes=N --ntasks=N --ntasks-per-node=1 --nodelist=LIST --label -v [extra] \
 *        VIGIL check --json [args] --host-from-slurmd
 *
 * Who answered (docs/SLURM.md, "How a check round runs"): the testbed runs many slurmd on one
 * host, so task order and host names prove nothing. Three facts are crossed, two from srun and
 * one from the task: srun's --label says which task printed a line; srun's -v line "launching
 * StepId=J.S on host NODE, 1 tasks: T" says on which node srun started task T; the report's
 * "host" is the task's SLURMD_NODENAME (vigil check --host-from-slurmd). An answer counts for
 * NODE only when the task srun started on NODE says it is NODE; where srun printed no launch
 * line for a task, only when no other task claims the same name. Anything else is not
 * believed and the node is unreachable, by name.
 *
 * When Slurm cannot launch on one node (a slurmd that stopped but is not yet marked down),
 * srun aborts the whole step and kills the live tasks (Slurm 22.05, seen on the testbed: see
 * tests/data/realworld/slurm-step.md). The node srun names in "Task launch for StepId=... failed
 * on node NODE: ..." is unreachable with that message; the nodes that gave no answer are asked
 * again one srun each (the old path), and fleet->note says so.
 *
 * The splitter (fleet_split_*) is pure and bounded: srun's stdout and stderr arrive in chunks
 * that cut lines anywhere and interleave the tasks' lines; each task's stdout is kept up to a
 * cap, srun lines longer than FLEET_SPLIT_LINE_MAX are dropped (counted in garbled).
 *
 * Ownership: struct fleet_split owns everything it holds; fleet_split_release() frees it.
 */
#ifndef VIGIL_SLURM_FLEET_STEP_H
#define VIGIL_SLURM_FLEET_STEP_H

#include "fleet.h"

#define FLEET_SPLIT_LINE_MAX 65536 /* srun's own lines are short; a label line is <= 1 KiB */

struct fleet_task {
	struct strbuf out;     /* the task's stdout, srun's line breaks removed (see .c) */
	struct strbuf errline; /* the task's last stderr line */
	char *launched_on;     /* srun's "launching ... on host NODE" for this task; NULL: none */
	int exit_code;         /* from srun's task exit lines; -1: not known */
	bool killed;           /* srun said "task T: Killed" */
	bool over;             /* out passed the cap */
	uint64_t last_ms;      /* when its last stdout arrived (the caller's clock) */
};

struct fleet_launch_fail {
	char *node, *why;
};

struct fleet_split {
	struct fleet_task *tasks;
	size_t nr_tasks;
	size_t cap;                        /* bytes of stdout kept per task */
	struct strbuf part[3];             /* a line cut by a chunk, per stream (1, 2) */
	bool skipping[3];                  /* inside an overlong line, per stream */
	struct fleet_launch_fail *fails;   /* "Task launch ... failed on node NODE: WHY" */
	size_t nr_fails, alloc_fails;
	struct strbuf srun_error;          /* srun's last "srun: error:" line about the step */
	char *step_id;                     /* "J.S" from the launch lines; NULL: none seen */
	size_t garbled;                    /* lines neither labelled by a task nor srun's */
};

void fleet_split_init(struct fleet_split *s, size_t nr_tasks, size_t cap);
/* A chunk of srun's stdout (stream 1) or stderr (stream 2), at now_ms. */
void fleet_split_feed(struct fleet_split *s, int stream, const char *data, size_t len,
		      uint64_t now_ms);
/* srun ended: a last line without a newline is taken as whole. */
void fleet_split_finish(struct fleet_split *s, uint64_t now_ms);
void fleet_split_release(struct fleet_split *s);

/*
 * The rows' answers from a finished split. rows[idx[k]] for k < n are the step's nodes (the
 * --nodelist). Each such row gets an answer, "launch failed" or a reason saying what was
 * wrong (no answer, not believed); done[k] is set where the row is settled and must not be
 * asked again. timed_out: srun was stopped at the deadline (timeout_ms).
 */
void fleet_split_assign(const struct fleet_split *s, struct fleet_row *rows, const size_t *idx,
			size_t n, bool timed_out, unsigned timeout_ms, bool *done);

/* A Slurm hostlist of names (sorted or not): "n[1-4,7],gpu-a". The names are plain
 * (slurm_node_name_ok). */
void fleet_hostlist(const char *const *names, size_t n, struct strbuf *out);

/* The round as one step over the runnable rows, then one srun each for those that did not
 * answer when the step failed (not when it timed out). */
void fleet_step_run(struct fleet *f, const struct fleet_plan *p);

#endif
