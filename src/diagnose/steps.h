/*
 * steps.h: 'vigil diagnose steps' as a pure function: a training run's per-step rows in, the
 * throughput patterns of docs/DIAGNOSE.md out (flat at a tenth, a third or 60-80 % of expected,
 * periodic or random single-step drops, a slow decline, a step down, high-frequency noise), each
 * with where it started, its evidence, the likely cause, the next action and the share of the
 * run's throughput it cost. The methods (rolling medians, MAD, binary segmentation, Theil-Sen) are
 * in docs/DIAGNOSE.md.
 */
#ifndef VIGIL_DIAGNOSE_STEPS_H
#define VIGIL_DIAGNOSE_STEPS_H

#include "rows.h"

#define DIAG_TICKS_MAX_SHARE 0.25 /* a row shorter than 4 ticks of the stamps: cannot tell */
#define DIAG_MIN_POINTS 30   /* fewer usable steps than this: could not tell */
#define DIAG_PLOT_POINTS 800 /* columns of the page's curve */
#define DIAG_MAX_CHANGES 16
#define DIAG_MAX_PATTERNS 12
#define DIAG_RESTARTS_KEPT 8
#define DIAG_DROPS_KEPT 64
#define DIAG_DROP_BINS 100 /* the page's count of every drop along the x axis */
#define DIAG_EVENTS_KEPT 16
#define DIAG_PAUSES_KEPT 8
/* a pause between two rows longer than this and than DIAG_PAUSE_STEPS steps is a restart */
#define DIAG_PAUSE_MIN_S 120.0
#define DIAG_PAUSE_STEPS 30.0
/* random drops below this share of the run's time are life (a GC pause now and then), unless
 * there are three or more at least DIAG_DEEP_DROP deep (5x a step: Imbue's 10x drops) */
#define DIAG_RANDOM_MIN_COST 0.005
#define DIAG_DEEP_DROP 0.2
/* noisy: q90 - q10 of throughput over its local level; log-normal jitter of 5 % (a healthy run)
 * gives 12.8 %, uniform noise between 80 and 100 % of the level 18 % */
#define DIAG_NOISY_SPREAD 0.15

enum diag_pattern_kind {
	DP_HEALTHY,
	DP_FLAT_TENTH,
	DP_FLAT_THIRD,
	DP_FLAT_DEGRADED,
	DP_PERIODIC_DROPS,
	DP_RANDOM_DROPS,
	DP_SLOW_DECLINE,
	DP_STEP_DOWN,
	DP_NOISY,
	DP_NR
};
const char *diag_pattern_name(enum diag_pattern_kind k);
const char *diag_pattern_cause(enum diag_pattern_kind k);
const char *diag_pattern_action(enum diag_pattern_kind k);

struct diag_steps_opts {
	double expected_mfu;       /* 0: not given */
	double expected_step_time; /* seconds; 0: not given */
	double flops_per_token;    /* with peak_flops: MFU from tokens and step_time */
	double peak_flops;
};

struct diag_pattern {
	enum diag_pattern_kind kind;
	uint64_t start_step;
	uint64_t end_step;  /* the last step it was seen at */
	double cost;        /* share of the run's throughput it cost, 0..1 */
	double level;       /* throughput during it, share of expected */
	double level_before; /* step-down, slow-decline: the level before it */
	uint64_t period;    /* periodic-drops */
	uint64_t changed_at; /* step-down */
	size_t count;       /* drops */
	double depth;       /* drops: median throughput at a drop, share of the local level */
	double spread;      /* noisy: q90 - q10 of throughput around its local level */
	uint64_t steps_at[8]; /* drops: the first few steps they happened at */
	size_t steps_at_nr;
	uint64_t period_tol; /* periodic-drops: the gaps are period +- this */
	uint64_t off_period; /* random-drops: the odd ones out of a series of this period */
	double extra_s;      /* drops: median seconds a slow step took beyond its level; 0: unknown */
};

/*
 * What every run does and is no fault: named so that nobody takes it for one, never a pattern
 * (a run with only these is healthy, exit 0), and kept out of the analysis of the rest.
 */
enum diag_event_kind {
	DE_WARMUP,    /* the first steps of an execution: compilation, warm-up, data loader start */
	DE_LAST_STEP, /* the run's last step slow: a final checkpoint, evaluation or shutdown */
	DE_PAUSE,     /* a pause between rows long enough to be a restart: a new execution */
	DE_ISOLATED,  /* slow steps too few and too cheap to be a pattern (a GC pause now and then) */
	DE_NR
};
const char *diag_event_name(enum diag_event_kind k);

struct diag_event {
	enum diag_event_kind kind;
	uint64_t start_step, end_step;
	size_t count;     /* warm-up, isolated: steps */
	double slowest;   /* warm-up, last step, isolated: the slowest step's time over its level's */
	double seconds;   /* time beyond the level (pause: its length), seconds; 0: unknown */
	double cost;      /* share of the run's time */
	bool after_restart; /* warm-up: of an execution after a restart or pause, not the run's start */
	uint64_t steps_at[8];
	size_t steps_at_nr;
};

struct diag_change {
	uint64_t step;
	double before, after; /* share of expected */
};

struct diag_restart {
	uint32_t line;
	uint64_t from_step, to_step;
};

struct diag_steps {
	/* the input */
	size_t rows, used, duplicates, restarts, gaps, missing_steps, no_value;
	struct diag_restart restart[DIAG_RESTARTS_KEPT];
	size_t restart_nr;
	uint64_t first_step, last_step;
	bool metric_mfu;      /* the throughput is MFU (else steps per second) */
	bool mfu_computed;    /* from tokens and --flops-per-token/--peak-flops */
	bool expected_given;
	double expected;      /* in the metric's unit */
	double median_level;  /* the run's median throughput, share of expected */
	double noise;         /* robust sigma of throughput around its local level, share */
	double median_step_time; /* seconds, 0 when unknown */
	/* per step its tokens over its time, the median over the steps median_step_time is taken
	 * over (warm-up and the slow last step left out); 0 when the rows carry no tokens */
	double median_tokens_per_s;
	size_t tokens_steps; /* the steps it is the median of */
	/* the resolution the times (or step times) are written at, seconds (0: unknown), and as
	 * a share of a row's time: a spread within two of these is the stamps, not the run */
	double resolution, resolution_share;
	bool resolution_of_time; /* of 'time' (step times derived), else of 'step_time' */
	size_t pauses;           /* pauses between rows taken for restarts (a new execution) */
	size_t warmup_steps;     /* steps in warm-up (all executions), kept out of the analysis */
	struct diag_event event[DIAG_EVENTS_KEPT]; /* expected, not faults, in step order */
	size_t event_nr;
	size_t backwards;        /* rows whose time is before the row before (a clock set back) */
	uint32_t backwards_line; /* the first such row's line */
	/* what was found, most costly first; healthy alone when nothing */
	struct diag_pattern pat[DIAG_MAX_PATTERNS];
	size_t pat_nr;
	struct diag_change change[DIAG_MAX_CHANGES];
	size_t change_nr;
	/* the curve for the page: per column the median and the lowest throughput (share of
	 * expected) and its first step; drops by step */
	double plot_med[DIAG_PLOT_POINTS], plot_min[DIAG_PLOT_POINTS];
	uint64_t plot_step[DIAG_PLOT_POINTS];
	size_t plot_nr;
	/* the DIAG_DROPS_KEPT deepest drops (events: a run of slow steps is one), in step order;
	 * drop_total counts them all and drop_bin[] counts them all by their place between
	 * first_step and last_step (a run of 1 M steps once kept its first 64, all at the
	 * left of the page) */
	uint64_t drop_step[DIAG_DROPS_KEPT];
	double drop_level[DIAG_DROPS_KEPT];
	size_t drop_nr, drop_total;
	uint32_t drop_bin[DIAG_DROP_BINS];
};

/*
 * Diagnose rows (in file order). 0 with *out filled; -1 with *err when it cannot tell (fewer
 * than DIAG_MIN_POINTS usable steps, no throughput column, --expected-mfu without MFU).
 * Warm-up (the first steps of each execution), the run's slow last step and pauses are events,
 * not patterns: they never make a run unhealthy, and the patterns are looked for without them.
 */
int diag_steps_analyse(const struct diag_rows *rows, const struct diag_steps_opts *o,
		       struct diag_steps *out, struct strbuf *err);
/* Is it healthy (nothing found)? */
bool diag_steps_healthy(const struct diag_steps *s);
void diag_steps_text(const struct diag_steps *s, const struct diag_rows *rows, const char *file,
		     struct strbuf *out);
void diag_steps_json(const struct diag_steps *s, const struct diag_rows *rows, const char *file,
		     struct strbuf *out);

/* Helpers the stragglers share: the k-th smallest of a[0..n) (reorders a), and the median. */
double diag_select(double *a, size_t n, size_t k);
double diag_median(double *a, size_t n);

#endif
