/*
 * steps_int.h: what the parts of 'vigil diagnose steps' share and nothing else includes:
 * steps.c (levels, flat, noise and the analysis), steps_series.c (the series, restarts, pauses
 * and warm-up), steps_drops.c (drops and their periods), steps_stats.c (robust statistics),
 * steps_out.c (text and JSON).
 */
#ifndef VIGIL_DIAGNOSE_STEPS_INT_H
#define VIGIL_DIAGNOSE_STEPS_INT_H

#include "steps.h"

/* the most steps a pace or a noise is estimated from (a sample spread over the run) */
#define DIAG_SAMPLE 65536

/* the q-quantile of a[0..n) through scratch (a is left as it is) */
double diag_quantile(const double *a, size_t n, double q, double *scratch);
/* 1.4826 * MAD of a[0..n), through scratch */
double diag_robust_sigma(const double *a, size_t n, double *scratch);
/* centred rolling median of window w (clipped at the ends) */
void diag_rolling_median(const double *x, size_t n, size_t w, double *out);
/* change points of blk[0..nb) by binary segmentation; sorted in cp[], returns how many */
size_t diag_segment(const double *blk, size_t nb, double sigma, double min_shift, size_t min_len,
		    size_t *cp, size_t max_cp);
double diag_theil_sen(const double *xs, const double *ys, size_t n);

/* The analysed series (warm-up and the slow last step left out), shares of expected. */
struct diag_ctx {
	size_t n;
	const uint64_t *step;
	const uint32_t *exec;
	const double *rr; /* raw throughput, share of expected */
	const double *c;  /* drops replaced by the local level */
	const double *m;  /* rolling median */
	const bool *drop;
	const double *st; /* step time, seconds (NaN unknown) */
	double total;	  /* sum of 1/rr: the run's time in expected steps */
	double *scratch;
};

/*
 * The series (steps_series.c): the last execution of each step in step order, with its step
 * time (NaN unknown), MFU, tokens, execution and line; arrays allocated here, the caller's.
 */
void diag_build_series(const struct diag_rows *rows, struct diag_steps *out, uint64_t **step,
		       double **st, double **mfu, double **tok, uint32_t **exec, uint32_t **line,
		       size_t *n_out);
/* the resolution the times (of_time) or step times are written at, seconds; 0 unknown */
double diag_resolution_of(const struct diag_rows *rows, bool of_time);
/* running token totals into tokens per step */
void diag_tokens_per_step(double *tok, const uint64_t *step, const uint32_t *exec, size_t n);
/* warm-up of each execution and the run's slow last step: events in s, skip[] set;
 * scratch holds 2n */
void diag_find_warmup(struct diag_steps *s, const double *x, const double *st, const uint64_t *step,
		      const uint32_t *exec, size_t n, bool *skip, double *scratch);

struct diag_pattern *diag_add_pattern(struct diag_steps *s, enum diag_pattern_kind k);
struct diag_event *diag_add_event(struct diag_steps *s, enum diag_event_kind k);
/* the share of the run's time spent in [a, b) beyond what it would take at level ref */
double diag_cost_vs(const struct diag_ctx *x, size_t a, size_t b, double ref);

/*
 * Periods in a set of slow steps: steps[0..n) ascending. A period P is a chain: a step with
 * another P later (give or take tol(P)); the shortest P among the most common gaps that chains
 * at least min_members steps, with a chain of at least three and (span given: the steps the
 * run covers) a slow step in half its slots, wins. member[] set for the steps on it; returns
 * P (0: none), *tol how far its gaps stray from it.
 */
uint64_t diag_find_period(const uint64_t *steps, size_t n, size_t min_members, uint64_t span,
			  bool *member, uint64_t *tol);
/* the drops of x (drop[] set) into periodic and random patterns and isolated events */
void diag_find_drops(struct diag_steps *s, struct diag_ctx *x);

#endif
