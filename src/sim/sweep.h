/*
 * sweep.h: replicas, sweeps and recommendations of `vigil sim` (docs/SIM.md, "Replicas",
 * "Sweeps", "Recommendations"). A study is the base run (the parameters as given) and up to
 * one sweep per parameter (checkpoint-every, spares, gpus), each value a copy of the base with
 * that one parameter changed. Every parameter set runs R replicas with the seeds seed,
 * seed+1, ..., seed+R-1 (each expanded by splitmix64 in sim_rng_seed, so neighbouring seeds
 * give unrelated streams); every value of a sweep uses the same seeds as the base (common
 * random numbers: the differences between values are the parameter's, not the draws').
 * Figures are means over the replicas with a 95 % interval from Student's t distribution
 * (R - 1 degrees of freedom). With R = 1 and no sweep the result is replica 0's, exactly.
 *
 * Recommendations: the checkpoint interval from a checkpoint-every sweep (the best value, then
 * loss(T) = a/T + bT + c fitted by least squares through it and up to two values either side:
 * sqrt(a/b) when the fit is convex, clamped to those values); the spares from a spares sweep
 * (the fewest swept spares whose replicas ran short in at most the risk's share) or else from
 * the base's replicas (the fewest K such that the share of replicas that used more than K
 * spares in one vigil run, or ran short, is at most the risk).
 *
 * Ownership: a study is a plain value (fixed arrays); the params and the model are borrowed.
 */
#ifndef VIGIL_SIM_SWEEP_H
#define VIGIL_SIM_SWEEP_H

#include "sim.h"
#include "../lib/json.h"

#include <math.h>
#include <stdbool.h>

#define SIM_REPLICAS_MAX 1000
#define SIM_SWEEP_VALUES_MAX 32
/* checkpoint-every alone: Young/Daly's interval times 2^(k/2), k = -4..4 (0.25x to 4x) */
#define SIM_SWEEP_AUTO_STEPS 4

enum sim_sweep_param { SIM_SWEEP_CKPT, SIM_SWEEP_SPARES, SIM_SWEEP_GPUS, SIM_SWEEP_NR };

/* A mean and its 95 % interval [lo, hi] (lo = hi = mean with one replica). */
struct sim_stat {
	double mean, lo, hi;
};

/* R replicas of one parameter set. */
struct sim_summary {
	unsigned replicas;
	double value;             /* the swept parameter's value (the base: 0) */
	struct sim_result mean;   /* means; counts (faults too) rounded; spares_used_max the largest */
	struct sim_stat ettr, goodput, interruptions;
	unsigned short_runs;      /* replicas whose spares ran out (a requeue) */
	unsigned spares_used[SIM_REPLICAS_MAX]; /* per replica */
	bool ran_short[SIM_REPLICAS_MAX];
};

struct sim_sweep {
	bool on, automatic;       /* automatic: checkpoint-every alone, around Young/Daly */
	size_t nr;
	double values[SIM_SWEEP_VALUES_MAX]; /* ascending, distinct */
	struct sim_summary rows[SIM_SWEEP_VALUES_MAX];
};

struct sim_study {
	unsigned replicas;        /* 1 by default */
	double spares_risk;       /* 0.01 by default */
	bool risk_given;
	struct sim_summary base;
	struct sim_sweep sweeps[SIM_SWEEP_NR];
	double rec_ckpt_s;        /* NAN: no checkpoint-every sweep */
	bool rec_ckpt_at_edge;    /* the best swept value was the first or the last */
	long rec_spares;          /* -1: none (not asked, or more than the spares run) */
};

void sim_study_init(struct sim_study *st);
/* The name in --sweep and the JSON rows' "parameter". */
const char *sim_sweep_option(enum sim_sweep_param k);
const char *sim_sweep_key(enum sim_sweep_param k);
/* One --sweep argument, "NAME=LIST" or "checkpoint-every": 0, or -1 with *err (usage). */
int sim_sweep_parse(struct sim_study *st, const char *arg, struct strbuf *err);
/* The swept values against the base (whole nodes, at least one step): 0 or -1, *err. */
int sim_study_check(const struct sim_study *st, const struct sim_params *p, struct strbuf *err);
/* Whether the output is more than one plain run (replicas, a sweep or a risk asked). */
bool sim_study_extended(const struct sim_study *st);
/* Run it all: 0, or -1 with *err (as sim_run). */
int sim_study_run(struct sim_study *st, const struct sim_params *p, const struct sim_model *m,
		  struct strbuf *err);

/* The interval for the outputs: t(0.975, n - 1) (Student). */
double sim_t975(unsigned n);
/* Summarise n results (n >= 1) into s. */
void sim_summarise(const struct sim_result *rs, unsigned n, struct sim_summary *s);
/* The recommendation from a sweep's rows, and from replicas with a risk (see above). */
double sim_recommend_interval(const struct sim_sweep *sw, bool *at_edge);
long sim_recommend_spares(const struct sim_study *st, unsigned spares);

/* recommended_checkpoint_every_s's value (a number or null). */
void sim_study_json_recommended(struct json_writer *w, const struct sim_study *st);
/* The study's own top-level fields (only when sim_study_extended()). */
void sim_study_json(struct json_writer *w, const struct sim_study *st);
/* The study's text after the plain table (only when sim_study_extended()). */
void sim_study_text(const struct sim_study *st, const struct sim_params *p, struct strbuf *out);

#endif
