/*
 * supervisor.h: the loop of `vigil run` (issue 9). It turns the world into the events of the
 * state machine (machine.h) and carries out the machine's actions:
 *
 *   world                                   event            action (done here)
 *   vigil check on every allocated node     preflight_*      preflight (fleet fan-out)
 *   srun step started / its step id         launched         launch (src/slurm/step.c)
 *   rank 0's output, $VIGIL_STEP_FILE       step, slow*, hang (detect.h)
 *   srun's "task N: Killed", srun's exit    task_exit        stop_step (TERM, grace, KILL)
 *   a node not responding, unreachable      node_lost        drain_host, replace_host
 *   a periodic check says unhealthy         host_sick        run_checks
 *   stacks of every rank (vigil stacks)     evidence_done    collect_stacks
 *   smoke runs on groups (grouptest.h)      smoke_result     group_test
 *   SIGTERM, SIGINT, SIGHUP                 cancel           journal, report
 *
 * One thread, one poll loop: the step's output (streamed, split per rank by rankout.h), the
 * periodic check (a forked child running the fleet fan-out, so a slow srun never stops the
 * loop), signals through a self-pipe, and the deadlines of detect.h. Blocking work (preflight,
 * checks after a stop, stacks, smoke runs) happens only while no step runs.
 *
 * Ownership: the options are borrowed for the run.
 */
#ifndef VIGIL_SUPERVISOR_H
#define VIGIL_SUPERVISOR_H

#include "detect.h"
#include "../slurm/slurm.h"

struct sup_options {
	const char *job_id;        /* SLURM_JOB_ID */
	const char *nodelist;      /* the allocation's nodes (a Slurm hostlist) */
	unsigned nodes;            /* N; 0: the allocation minus the spares */
	unsigned spares;
	unsigned tasks_per_node;   /* G */
	const char *run_dir;
	unsigned max_restarts;
	const char *step_pattern;  /* NULL: the default rules */
	struct detect_config detect;
	double check_interval_s;   /* periodic vigil check of the run's nodes; 0: none */
	double node_poll_s;        /* Slurm's view of the run's nodes */
	double check_timeout_s;    /* one node's vigil check */
	double stacks_timeout_s;   /* one node's vigil stacks */
	double smoke_timeout_s;    /* one smoke run */
	double restart_delay_s;    /* between a stop and the next launch */
	unsigned grace_ms;         /* TERM to KILL when a step is stopped */
	unsigned master_port;      /* base; attempt k uses base + k % 1000 */
	bool python_stacks;        /* the faulthandler hook on the trainer's PYTHONPATH */
	bool drain;                /* drain excluded hosts in Slurm */
	bool agent_cache;          /* ask the nodes' agents for their cached result first */
	bool json;                 /* the final report as JSON on stdout */
	const char *nccl_recorder; /* libnccl-profiler-vigil.so loaded into the ranks; NULL: not */
	const char *const *smoke;  /* argv, NULL-terminated; NULL: CMD with VIGIL_SMOKE=1 */
	const char *const *cmd;    /* the trainer, NULL-terminated */
	const char *vigil_remote;  /* the vigil run on the nodes (fleet.command) */
	const char *const *srun_extra; /* fleet.srun-arg */
	size_t nr_srun_extra;
	const char *const *check_args; /* more arguments of the nodes' vigil check */
	size_t nr_check_args;
	struct slurm_cmds cmds;
	const char *scancel;       /* NULL: "scancel" */
};

/* Run (or resume, from RUN_DIR's journal) the supervised run. Returns the exit code: 0 the run
 * finished, 1 it failed (too few healthy hosts, restart budget spent, cancelled), 2 it could not
 * start (*err says why). */
int supervise(const struct sup_options *o, struct strbuf *err);

#endif
