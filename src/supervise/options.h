/*
 * options.h: what `vigil run` was asked to do (src/cmd/run.c fills it from the command line and
 * the configuration). Its own header so the supervisor's parts (collect.h, the supervisor's
 * files) include it without including the supervisor: includes in src/supervise point down only.
 */
#ifndef VIGIL_SUP_OPTIONS_H
#define VIGIL_SUP_OPTIONS_H

#include "detect.h"
#include "../slurm/slurm.h"

#include <stdbool.h>
#include <stddef.h>

struct sup_options {
	const char *job_id;        /* SLURM_JOB_ID */
	const char *nodelist;      /* the allocation's nodes (a Slurm hostlist) */
	const char *hosts;         /* NULL, or the only ones of them to use (a hostlist) */
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
	bool fleet_one_step;       /* a check round is one srun step (fleet.one-step) */
	bool json;                 /* the final report as JSON on stdout */
	const char *nccl_recorder; /* libnccl-profiler-vigil.so loaded into the ranks; NULL: not */
	const char *const *smoke;  /* argv, NULL-terminated; NULL: CMD with VIGIL_SMOKE=1 */
	const char *const *sdc_test; /* argv; NULL: vigil_remote stress gpu (run.sdc-test) */
	const char *const *cmd;    /* the trainer, NULL-terminated */
	const char *vigil_remote;  /* the vigil run on the nodes (fleet.command) */
	const char *const *srun_extra; /* fleet.srun-arg */
	size_t nr_srun_extra;
	const char *const *check_args; /* more arguments of the nodes' vigil check */
	size_t nr_check_args;
	struct slurm_cmds cmds;
	const char *scancel;       /* NULL: "scancel" */
};

#endif
