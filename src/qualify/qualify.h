/*
 * qualify.h: 'vigil qualify', a fresh allocation judged in one command (docs/QUALIFY.md).
 *
 * The stages (passive, node, fabric, storage, train) run in order; each one is a round of
 * existing vigil commands on the allocation's nodes (one srun step, src/slurm/fleet_step.c),
 * and each round's answers are kept per node, as the nodes' own JSON reports. The scorecard
 * (src/qualify/scorecard.c) is made from what the stages kept, nothing else: so a stage saved
 * to the state directory and loaded again (--resume) gives the same scorecard as the run that
 * made it.
 *
 * Pure parts: the plan (plan.c: the stages, their share of the budget), the figures (figures.c:
 * what each node's reports measured, the cluster's distribution, ranks and outliers) and the
 * scorecard (scorecard.c). Running the rounds (stage.c) uses the fleet engine.
 *
 * Ownership: struct q_card owns its nodes, their reports, its stage results and points;
 * q_card_release() frees them.
 */
#ifndef VIGIL_QUALIFY_H
#define VIGIL_QUALIFY_H

#include "../lib/json.h"
#include "../lib/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

enum q_stage { Q_PASSIVE, Q_NODE, Q_FABRIC, Q_STORAGE, Q_TRAIN, Q_NR_STAGES };

/* A stage's, or a node's in a stage: passed, failed, unknown (ran, could not tell), skipped (not
 * asked or not possible here, with the reason), not_run (asked, but the budget or a signal
 * stopped the run first). */
enum q_status { Q_NOT_RUN, Q_PASSED, Q_FAILED, Q_UNKNOWN, Q_SKIPPED };

const char *q_stage_name(enum q_stage s);
int q_stage_from_name(const char *name); /* -1: none */
const char *q_status_name(enum q_status s);
int q_status_from_name(const char *name);

/* ---- figures (figures.c) ---- */

enum q_better { Q_HIGHER, Q_LOWER };
struct q_fig_def {
	const char *name, *unit;
	enum q_better better;
	enum q_stage stage;
};
enum {
	QF_GEMM_BF16, QF_GEMM_FP16, QF_GEMM_TF32, QF_GEMM_FP8, QF_HBM_COPY, QF_NVLINK_MIN,
	QF_NCCL_LOCAL, QF_IB_PAIR, QF_ST_WRITE, QF_ST_READ, QF_FSYNC_P50, QF_FSYNC_P99, QF_META,
	QF_TRAIN_STEP, QF_NR
};
extern const struct q_fig_def q_figs[QF_NR];

/* ---- the card ---- */

struct q_node {
	char *name;
	enum q_status st[Q_NR_STAGES];
	char *reason[Q_NR_STAGES];             /* the node's own reason in each stage */
	struct json_value *report[Q_NR_STAGES]; /* its report, when it answered */
	double fig[QF_NR];
	bool have[QF_NR];
	unsigned rank[QF_NR];                  /* 1 = best; 0 = no figure */
	bool outlier[QF_NR];
	/* with --drain: what was done */
	char *drain_reason;
	bool drained;
	char *drain_error;
};

struct q_stage_result {
	enum q_status st;
	double budget_s, wall_s;
	char *reason;
};

/* One NCCL measurement across nodes (the fabric stage). */
struct q_nccl_point {
	char op[24];
	unsigned nodes, gpus;
	double bytes, busbw_gbps, expected_gbps;
	enum q_status st;
	char *reason;
};

/* One InfiniBand pair test (the fabric stage): 'vigil net ib --srun' on nodes a and b, the
 * client's (b's) report. */
struct q_ib_pair {
	char *a, *b;
	enum q_status st;
	double gbps; /* the weakest HCA's bandwidth; 0: none measured */
	char *reason;
};

struct q_card {
	char *job_id, *cluster;
	time_t started;
	double budget_s, wall_s;
	bool drain, complete;
	char *not_run_why[Q_NR_STAGES]; /* for stages not_run or skipped: why */
	struct q_stage_result stages[Q_NR_STAGES];
	bool asked[Q_NR_STAGES];
	struct q_node *nodes;
	size_t nr;
	struct q_nccl_point *nccl;
	size_t nr_nccl, alloc_nccl;
	struct q_ib_pair *ib;
	size_t nr_ib, alloc_ib;
	char *storage_dir;
	struct json_value *train; /* the train stage's figures object, or NULL */
	struct json_value *burnin; /* the fabric stage's burn-in step (burnin.c), or NULL */
	double outlier_margin;    /* fraction: a node this far from the median is an outlier */
};

void q_card_init(struct q_card *c);
void q_card_release(struct q_card *c);
struct q_node *q_card_node(struct q_card *c, const char *name); /* NULL: none */
struct q_node *q_card_add_node(struct q_card *c, const char *name);
struct q_nccl_point *q_card_add_nccl(struct q_card *c);
struct q_ib_pair *q_card_add_ib(struct q_card *c, const char *a, const char *b);

/* A node's answer in a stage, from its report's verdict (healthy -> passed, unhealthy ->
 * failed, else unknown); report may be NULL (no answer: unknown with reason). Takes report. */
void q_node_set(struct q_node *n, enum q_stage s, enum q_status st, const char *reason,
		struct json_value *report);

/* Figures of every node from its reports, then ranks and outliers (figures.c). */
void q_figures(struct q_card *c);
/* Distribution of figure f over the nodes that have it: n, median, p5 (the 5th percentile in
 * the figure's worse direction), worst and best with their nodes. false: no node has it. */
struct q_dist {
	size_t n;
	double median, p5, worst, best;
	const char *worst_node, *best_node;
};
bool q_fig_dist(const struct q_card *c, int f, struct q_dist *d);

/* The verdict of the card: 0 every node passed every stage that ran and every asked stage ran;
 * 1 a node failed a stage; 3 otherwise (unknown, partial). reason: one line. */
int q_card_verdict(const struct q_card *c, struct strbuf *reason);
/* The overall status of a node, and the action: keep, drain (failed) or check (unknown). */
enum q_status q_node_status(const struct q_card *c, const struct q_node *n);

/* ---- plan.c: the stages' shares of the budget ---- */

/* Each asked stage's least time; a budget below their sum is refused. */
extern const double q_stage_min_s[Q_NR_STAGES];
/* The seconds stage s gets when left_s remain and the stages asked[] from s on are still to
 * run: its weight's share of what is left, at least its minimum, the passive stage at most
 * 120 s. 0 when left_s is below the stage's minimum (the budget ran out). */
double q_stage_share(enum q_stage s, const bool asked[Q_NR_STAGES], double left_s);
/* -1 with *err when budget_s cannot hold every asked stage's minimum. */
int q_plan_check(const bool asked[Q_NR_STAGES], double budget_s, struct strbuf *err);
/* "passive,node,storage" into asked[]; -1 with *err naming an unknown stage. */
int q_parse_stages(const char *list, bool asked[Q_NR_STAGES], struct strbuf *err);

/* ---- scorecard.c ---- */

/* The scorecard JSON (docs/schema/qualify.json; tests/data/qualify/card-a.json). */
void q_card_json(const struct q_card *c, struct strbuf *out);
/* The text a person reads: stages, nodes with findings, figures' spread, the verdict. */
void q_card_text(const struct q_card *c, struct strbuf *out);

/* A stage's results as the state directory keeps them (one JSON document per stage), and back.
 * q_stage_load fills c's nodes' results for that stage; -1 with *err on a document that is not
 * one (truncated, another stage, another job). */
void q_stage_save(const struct q_card *c, enum q_stage s, struct strbuf *out);
int q_stage_load(struct q_card *c, const char *text, size_t len, enum q_stage expect,
		 struct strbuf *err);

#endif
