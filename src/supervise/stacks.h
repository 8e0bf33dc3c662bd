/*
 * stacks.h: the stacks of one attempt's ranks on this host, for 'vigil stacks' (the supervisor
 * runs it on every host of a hung or slow attempt, before anything is killed; docs/SUPERVISOR.md, "Evidence").
 *
 * The gather side of the evidence (src/supervise/evidence.h judges it): it finds the processes
 * whose environment has VIGIL_ATTEMPT_DIR equal to the attempt directory and a RANK, samples the
 * main thread's state from /proc/PID/stat, takes the Python stack through the hook
 * (src/supervise/pyhook.h: SIGURG, then the new text of pystack/rank-N.txt) and the native
 * stack through eu-stack (elfutils) where it is installed. Everything read is outside input:
 * bounded, and each stack text is cleaned line by line for a terminal (strbuf_add_clean()).
 *
 * Ownership: struct stacks_result owns everything in it; stacks_release() frees it.
 */
#ifndef VIGIL_STACKS_H
#define VIGIL_STACKS_H

#include "../lib/strbuf.h"
#include "../lib/strlist.h"

#include <sys/types.h>

/* Caps: per stack text, per environment read, ranks per host. */
#define STACKS_TEXT_MAX (64u << 10)
#define STACKS_ENVIRON_MAX (1u << 20)
#define STACKS_RANKS_MAX 1024

struct stacks_options {
	const char *attempt_dir; /* compared with each process's VIGIL_ATTEMPT_DIR */
	const char *host;	 /* the name written in the output; a process whose
				  * SLURMD_NODENAME is another name is not reported */
	unsigned samples;	 /* state samples (>= 1) */
	unsigned interval_ms;	 /* between samples */
	bool no_signal;		 /* no SIGURG: no Python stack */
	unsigned py_wait_ms;	 /* how long to wait for the dump after SIGURG; 0: 2000 */
	const char *eu_stack;	 /* the program; NULL: "eu-stack" found in PATH */
	unsigned native_timeout_ms; /* per eu-stack run; 0: 10000 */
	/*
	 * Whose ranks (docs/SECURITY.md): a rank is a process of the job, never merely one whose
	 * environment names the attempt. job: the Slurm job id (required); step: the attempt's
	 * step id (NULL: unknown, and then every rank is doubt); uid: the job's uid. A process
	 * that names the attempt but is not the job's uid, not of the job and step by its
	 * environment (SLURM_JOB_ID, SLURM_STEP_ID) or, where Slurm's cgroups are in use, not in
	 * the step's cgroup, is ignored and named in ignored.
	 */
	const char *job, *step;
	uid_t uid;
};

enum { STACKS_R, STACKS_S, STACKS_D, STACKS_T, STACKS_Z, STACKS_OTHER, STACKS_NSTATES };

struct stacks_rank {
	long rank, local_rank;	/* local_rank -1: not in its environment */
	pid_t pid;
	unsigned states[STACKS_NSTATES];
	unsigned samples;	/* samples taken (fewer when it exited meanwhile) */
	double cpu_s;		/* utime + stime over the sampling window */
	char *wchan;		/* NULL when unknown or running */
	int gpu;		/* 1: it maps libcuda (a CUDA process: its waits on the GPU
				 * spin on a CPU), 0: it does not, -1: its maps unread */
	char *py_stack;		/* the new text of its pystack file, NULL when none */
	char *native_stack;	/* eu-stack's output, NULL when none */
	char *ring_dir;		/* where its NCCL recorder ring is (it loads the plugin), or NULL */
	char *nccl_ring;	/* the copy of that ring in ATTEMPT_DIR/nccl/, NULL when none */
	struct strlist errors;	/* why a part is missing, in words */
	char *doubt;		/* another process of the job claims this rank too: its
				 * evidence is unknown (NULL: none) */
	/* between the steps */
	unsigned long long start_time, cpu0, cpu1;
	bool gone;
};

struct stacks_result {
	char *host, *attempt_dir;
	char *eu_stack;		/* the program used, NULL when not found */
	struct stacks_rank *ranks; /* sorted by rank */
	size_t nr, alloc;
	struct strlist errors;
	char *job, *step;	/* what the ranks were checked against; step NULL: unknown */
	long uid;
	struct strlist ignored;	/* "ignored pid P (uid U): not of job J step S: why" */
	bool cgroup_checked;	/* Slurm's step cgroup was found and every rank is in it */
};

void stacks_result_init(struct stacks_result *r);
void stacks_result_release(struct stacks_result *r);

/*
 * Look: find the ranks, sample, signal, read, run eu-stack. Whatever could not be had is in
 * the errors of the rank or of the result; 0 even when no rank was found. -1 with *err only
 * when this host's processes cannot be listed at all.
 */
int stacks_collect(struct stacks_result *r, const struct stacks_options *o, struct strbuf *err);

/* {"host":..,"attempt_dir":..,"eu_stack":..,"ranks":[..],"errors":[..]} (docs/vigil-stacks.1). */
void stacks_write_json(const struct stacks_result *r, struct strbuf *out);
/* The same for a person. */
void stacks_write_text(const struct stacks_result *r, struct strbuf *out);

/*
 * Is a process whose /proc/PID/cgroup is cg in Slurm's cgroup of job's step? own: vigil stacks'
 * own /proc/self/cgroup (in a step of the same job). NULL when it is (or nothing can be
 * checked: no Slurm step cgroup on either side), else why not (in why, ASCII only). *checked:
 * a Slurm step cgroup was compared. For find_ranks() and its tests.
 */
const char *stacks_cgroup_why(const struct strbuf *own, const struct strbuf *cg, const char *job,
			      const char *step, bool *checked, struct strbuf *why);

/* Append text to out cleaned line by line (strbuf_add_clean()), newlines kept; at most max
 * bytes of text are taken, a cut said. For the stack texts (and evidence.c's quotes). */
void stacks_add_clean_lines(struct strbuf *out, const char *text, size_t len, size_t max);

#endif
