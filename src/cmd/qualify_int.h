/*
 * qualify_int.h: what the two halves of 'vigil qualify' share: src/cmd/qualify.c (options, the
 * plan, the loop over the stages, the state directory, the outputs) and src/cmd/qualify_stages.c
 * (what each stage runs on the nodes, and --drain).
 */
#ifndef VIGIL_CMD_QUALIFY_INT_H
#define VIGIL_CMD_QUALIFY_INT_H

#include "common.h"
#include "../lib/strlist.h"
#include "../qualify/stage.h"

#include <signal.h>

struct qargs {
	double budget_s;
	bool asked[Q_NR_STAGES], stages_given, drain;
	const char *storage, *train, *json, *html, *compare, *resume, *dir, *from, *config;
	const char *compare_json; /* --compare-json FILE ("-": stdout) */
	const char *train_groups; /* --train-groups: NULL, "switch" or a count (2 to 64) */
	unsigned gpn;
	struct strlist sets;
};

struct qrun {
	struct qargs *a;
	struct config cfg;
	struct slurm_cmds cmds;
	struct slurm_policy pol;
	struct strlist srun;
	struct q_reach reach;
	struct q_card card;
	struct strbuf dir;
	char self[4096];
	uint64_t t0;
	unsigned storage_writers, stall_ms;
	uint64_t storage_size;
	unsigned port;
	unsigned master_port; /* run.master-port: the train groups' ports follow it */
	bool one_step;
	double expect, floor;
};

/* The signal that stopped the run (SIGINT, SIGTERM, SIGHUP), 0 while none. */
extern volatile sig_atomic_t qualify_stop;

/* A progress line on stderr, "vigil qualify: ...", control bytes made safe. */
void qualify_say(const char *fmt, ...) PRINTF_LIKE(1, 2);
double qualify_elapsed_s(const struct qrun *r);
/* Run stage s on the card's nodes within share seconds (qualify_stages.c). */
void qualify_stage_run(struct qrun *r, enum q_stage s, double share);
/* The train stage within share seconds (qualify_train.c). */
void qualify_train(struct qrun *r, double share);
/* The fabric stage's burn-in step on nodes (every one with an active IB port) within share
 * seconds (qualify_burnin.c). */
void qualify_burnin(struct qrun *r, const char *const *nodes, size_t n, double share);
/* --drain: the nodes that failed (and, by slurm.on-unknown, those that could not be told). */
void qualify_drain(struct qrun *r);

#endif
