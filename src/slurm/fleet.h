/*
 * fleet.h: the engine of 'vigil fleet check': one srun step over the runnable nodes (the
 * default, fleet_step.h), or one 'srun --nodelist=NODE ... vigil check --json' per runnable node,
 * a deadline each, at most N at once, all in one poll loop of the calling thread
 * (lib/run_group.h); then the node policy (--drain) and the table or JSON of the fleet.
 *
 * A node that does not answer in time, that Slurm cannot run a task on (drained, down, not
 * responding) or whose answer is not a report is 'unreachable', never healthy.
 *
 * Ownership: struct fleet owns its rows (their nodes, reasons, reports); fleet_release() frees
 * them. struct fleet_plan borrows its strings.
 */
#ifndef VIGIL_SLURM_FLEET_H
#define VIGIL_SLURM_FLEET_H

#include "slurm.h"
#include "../lib/strindex.h"

#include <signal.h>

/* Verdicts of a fleet row: a node's own three, and one for a node that gave none. */
enum fleet_verdict { FLEET_HEALTHY, FLEET_UNHEALTHY, FLEET_UNKNOWN, FLEET_UNREACHABLE };

struct fleet_row {
	struct slurm_node node;
	enum fleet_verdict verdict;
	char *reason;
	char *report_json; /* the node's own report, when it answered */
	uint64_t ms;
	int exit_code;     /* srun's (the remote vigil's, when it ran); -1: none */
	bool run;          /* a task was (to be) started on the node */
	struct slurm_decision decision;
	char *slurm_error;
};

struct fleet {
	struct fleet_row *rows;
	size_t nr;
	unsigned steps; /* srun invocations of the round */
	char *note;     /* what the round did beside the plan (a fallback), for a log line */
};

/* What to start on each node: srun_args[0] is srun; "--nodelist=NODE" follows it, then the rest
 * of srun_args, then remote (the vigil and its arguments), then "--host NODE". */
struct fleet_plan {
	const char *const *srun_args;
	size_t nr_srun_args;
	const char *const *remote;
	size_t nr_remote;
	unsigned timeout_ms; /* each node's deadline, from its own start */
	unsigned parallel;   /* nodes at once; 0: all */
	/* One srun step over all the runnable nodes (fleet_step.h): srun_args' --nodes=,
	 * --ntasks= and --quiet are replaced, remote gets --host-from-slurmd instead of --host.
	 * false: one srun a node, as above. */
	bool one_step;
	/* when set (by the caller's signal handler): nothing more is started, so a step that a
	 * signal ended is not asked again one srun a node; NULL: never */
	volatile sig_atomic_t *stop;
};

/* Rows for the nodes of list (of partition, when not NULL), sorted by name; the nodes move into
 * the rows (list keeps empty entries). Returns the number of rows. */
size_t fleet_rows(struct fleet *f, struct slurm_nodes *list, const char *partition);
/* The argv of one node's srun (NULL-terminated, borrowed strings but for the --nodelist
 * element, kept in nodelist). No limit on the number of arguments. */
const char **fleet_argv(const struct fleet_plan *p, const char *node, struct strbuf *nodelist);
/* Check every runnable row: one step, or one srun a node (p->one_step). */
void fleet_run(struct fleet *f, const struct fleet_plan *p);
/* One srun a node, for the runnable rows i with pick[i] (pick NULL: all of them). */
void fleet_run_nodes(struct fleet *f, const struct fleet_plan *p, const unsigned char *pick);
/* A row's verdict and reason (control bytes made spaces). */
void fleet_row_set(struct fleet_row *r, enum fleet_verdict v, const char *fmt, ...)
	PRINTF_LIKE(3, 4);
/* The drain/resume policy on every row that answered, each node's state read again first. */
void fleet_drain(struct fleet *f, const struct slurm_cmds *cmds, const struct slurm_policy *pol);
/* The fleet's exit code (0 healthy, 1 unhealthy, 3 could not tell) and its name. */
int fleet_exit_code(const struct fleet *f, const char **verdict);
void fleet_table(const struct fleet *f, bool drain, double secs, struct strbuf *out);
void fleet_json(const struct fleet *f, bool drain, double secs, struct strbuf *out);
/* The JSON of a fleet that could not be looked at (Slurm unreachable): verdict unknown, the
 * error, no nodes. */
void fleet_json_error(const char *error, int exit_code, struct strbuf *out);
void fleet_release(struct fleet *f);
/* strindex_name_fn's for a struct fleet's rows and a struct slurm_nodes' items (arr is the
 * struct itself), so a caller indexes either by name. */
const char *fleet_row_name(const void *fleet, size_t i);
const char *fleet_node_name(const void *slurm_nodes, size_t i);

#endif
