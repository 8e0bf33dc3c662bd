/*
 * detect.h: hang and slowdown detection over a run's step times, for the supervisor (docs/SUPERVISOR.md).
 *
 * Pure: every function is a function of (config, state, event, now) that updates the state and
 * says what happened; no clock, no I/O, so tests replay any timeline. Times are seconds on the
 * caller's monotonic clock. The rules (docs/SUPERVISOR.md):
 *
 * - startup: before the first step, nothing is wrong until startup_timeout_s after the launch;
 *   then DETECT_STARTUP_TIMEOUT, once.
 * - hang: no new step for limit = max(hang_factor × median interval between steps, hang_floor_s)
 *   → DETECT_HANG, once until the next step. Until min_samples intervals are known the median is
 *   not trusted and limit = max(startup_timeout_s, hang_floor_s), counted from the last step.
 * - slow: a step whose time (interval ÷ steps it covers) is over slow_factor × the running
 *   median of step times (at least min_samples known) → DETECT_SLOW_STEP (log it); slow_steps
 *   such steps in a row → DETECT_SLOWDOWN (act), once per run of slow steps.
 *
 * The medians are over the last `window` intervals (at most DETECT_WINDOW_MAX). A step that
 * goes backwards (a resumed trainer) or jumps is progress (the trainer is alive) but its
 * interval is no sample; a step seen again is no progress at all.
 */
#ifndef VIGIL_DETECT_H
#define VIGIL_DETECT_H

#include "../logs/steps.h"

#define DETECT_WINDOW_MAX 128

struct detect_config {
	double hang_factor;       /* K */
	double hang_floor_s;      /* floor */
	double startup_timeout_s; /* before the first step */
	double slow_factor;       /* F */
	unsigned slow_steps;      /* M */
	unsigned window;          /* 1..DETECT_WINDOW_MAX */
	unsigned min_samples;     /* intervals needed before a median is trusted (>= 1) */
};

/* K 3, floor 60 s, startup 300 s, F 2, M 5, window 50, min_samples 3. */
void detect_config_default(struct detect_config *c);

struct detect_state {
	double start; /* the launch */
	bool have_step;
	uint64_t last_step;
	double last_progress; /* when the last new step was seen */
	/* ring of the last samples: seconds between steps, and seconds per step */
	double interval[DETECT_WINDOW_MAX];
	double per_step[DETECT_WINDOW_MAX];
	unsigned nr, next;
	unsigned slow_run;
	bool fired; /* the hang or startup timeout was reported; cleared by progress */
};

enum detect_what {
	DETECT_NOTHING,
	DETECT_PROGRESS,
	DETECT_SLOW_STEP,
	DETECT_SLOWDOWN,
	DETECT_HANG,
	DETECT_STARTUP_TIMEOUT,
};

struct detect_result {
	enum detect_what what;
	double step_time; /* this step's seconds per step (0 when not sampled) */
	double median;    /* the running median it was compared with (0 when unknown) */
	double silent_s;  /* hang / startup: seconds since the last step (or the launch) */
	double limit_s;   /* hang / startup: the bound that fired */
	unsigned slow_run;
};

/* A fresh attempt launched at now. */
void detect_start(struct detect_state *s, double now);
/* A step from the parser (steps.h), seen at now. */
enum detect_what detect_on_step(const struct detect_config *c, struct detect_state *s,
				uint64_t step, enum step_change change, double now,
				struct detect_result *out);
/* Time passed: is the run hung, or still not started? */
enum detect_what detect_on_tick(const struct detect_config *c, struct detect_state *s, double now,
				struct detect_result *out);
/* When a tick would next report something (absolute); INFINITY once fired, until progress. */
double detect_deadline(const struct detect_config *c, const struct detect_state *s);
/* The hang bound in force now (seconds after the last step, or after the launch). */
double detect_hang_limit(const struct detect_config *c, const struct detect_state *s);
/* Median of n values (0 for none); v is not changed. */
double detect_median(const double *v, unsigned n);
const char *detect_what_name(enum detect_what w);

#endif
