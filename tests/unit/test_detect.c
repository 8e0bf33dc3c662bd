/*
 * test_detect.c: the supervisor's pure detection rules (src/supervise/detect.h) on made-up
 * timelines: the startup timeout before any step, the hang bound max(K × median, floor) and the
 * untrusted median of the first steps, a slow step against a sustained slowdown, the window's
 * bound, and counters that repeat, resume backwards or jump.
 */
#include "../harness.h"
#include "../../src/supervise/detect.h"

#include <math.h>

static struct detect_config cfg(void)
{
	struct detect_config c;
	detect_config_default(&c);
	c.hang_factor = 3;
	c.hang_floor_s = 5;
	c.startup_timeout_s = 100;
	c.slow_factor = 2;
	c.slow_steps = 3;
	c.window = 8;
	c.min_samples = 3;
	return c;
}

/* Steps first..last, every `every` steps, each `secs` apart after `t`. Returns the time. */
static double steady(const struct detect_config *c, struct detect_state *s, uint64_t first,
		     uint64_t last, uint64_t every, double t, double secs)
{
	struct detect_result r;
	for (uint64_t k = first; k <= last; k += every, t += secs) {
		enum step_change ch = s->have_step ? STEP_NEXT : STEP_FIRST;
		enum detect_what w = detect_on_step(c, s, k, ch, t, &r);
		CHECK_MSG(w == DETECT_PROGRESS, "step %llu: %s", (unsigned long long)k,
			  detect_what_name(w));
	}
	return t - secs;
}

TEST(detect_median_values)
{
	double v[] = { 5, 1, 3, 2, 4 };
	CHECK(detect_median(v, 0) == 0);
	CHECK(detect_median(v, 1) == 5);
	CHECK(detect_median(v, 2) == 3);
	CHECK(detect_median(v, 5) == 3);
	CHECK(detect_median(v, 4) == 2.5);
	CHECK(v[0] == 5 && v[1] == 1); /* untouched */
}

TEST(detect_startup_timeout_before_any_step)
{
	struct detect_config c = cfg();
	struct detect_state s;
	struct detect_result r;
	detect_start(&s, 1000);
	CHECK(detect_deadline(&c, &s) == 1100);
	CHECK_INT(detect_on_tick(&c, &s, 1099.9, &r), DETECT_NOTHING);
	CHECK_INT(detect_on_tick(&c, &s, 1100.5, &r), DETECT_STARTUP_TIMEOUT);
	CHECK(r.limit_s == 100 && r.silent_s == 100.5);
	/* said once; no busy deadline after it */
	CHECK_INT(detect_on_tick(&c, &s, 1200, &r), DETECT_NOTHING);
	CHECK(isinf(detect_deadline(&c, &s)));
	/* a late first step is progress and re-arms the rules */
	CHECK_INT(detect_on_step(&c, &s, 1, STEP_FIRST, 1300, &r), DETECT_PROGRESS);
	CHECK(detect_deadline(&c, &s) == 1400);
}

TEST(detect_one_step_uses_the_startup_bound)
{
	struct detect_config c = cfg();
	struct detect_state s;
	struct detect_result r;
	detect_start(&s, 0);
	CHECK_INT(detect_on_step(&c, &s, 0, STEP_FIRST, 50, &r), DETECT_PROGRESS);
	CHECK(r.step_time == 0); /* startup time is no step time */
	CHECK_INT(s.nr, 0);
	/* one or two intervals are no median: the bound is still max(startup, floor) */
	CHECK(detect_hang_limit(&c, &s) == 100);
	CHECK_INT(detect_on_tick(&c, &s, 50 + 99, &r), DETECT_NOTHING);
	CHECK_INT(detect_on_step(&c, &s, 1, STEP_NEXT, 51, &r), DETECT_PROGRESS);
	CHECK_INT(detect_on_step(&c, &s, 2, STEP_NEXT, 52, &r), DETECT_PROGRESS);
	CHECK(detect_hang_limit(&c, &s) == 100);
	CHECK_INT(detect_on_step(&c, &s, 3, STEP_NEXT, 53, &r), DETECT_PROGRESS);
	/* three 1 s intervals: max(3 × 1, floor 5) */
	CHECK(detect_hang_limit(&c, &s) == 5);
	CHECK_INT(detect_on_tick(&c, &s, 57.9, &r), DETECT_NOTHING);
	CHECK_INT(detect_on_tick(&c, &s, 58, &r), DETECT_HANG);
	CHECK(r.limit_s == 5 && r.silent_s == 5 && r.median == 1);
	CHECK_INT(detect_on_tick(&c, &s, 80, &r), DETECT_NOTHING);
}

TEST(detect_hang_after_k_times_the_median)
{
	struct detect_config c = cfg();
	struct detect_state s;
	struct detect_result r;
	detect_start(&s, 0);
	/* printed every 10 steps, 10 s apart: a 1 s step, a 10 s interval: bound 30 s */
	double t = steady(&c, &s, 0, 200, 10, 5, 10);
	CHECK(detect_hang_limit(&c, &s) == 30);
	CHECK(detect_deadline(&c, &s) == t + 30);
	CHECK_INT(detect_on_tick(&c, &s, t + 29, &r), DETECT_NOTHING);
	/* the same step printed again is no progress */
	CHECK_INT(detect_on_step(&c, &s, 200, STEP_SAME, t + 29.5, &r), DETECT_NOTHING);
	CHECK_INT(detect_on_tick(&c, &s, t + 31, &r), DETECT_HANG);
	CHECK(r.silent_s == 31 && r.limit_s == 30);
	/* the floor wins over a tiny median */
	c.hang_floor_s = 45;
	CHECK(detect_hang_limit(&c, &s) == 45);
}

TEST(detect_slow_step_then_sustained_slowdown)
{
	struct detect_config c = cfg();
	struct detect_state s;
	struct detect_result r;
	c.window = 32;
	detect_start(&s, 0);
	double t = steady(&c, &s, 1, 6, 1, 10, 1);
	/* one step at 3 s: a slow step, logged; then normal again */
	CHECK_INT(detect_on_step(&c, &s, 7, STEP_NEXT, t + 3, &r), DETECT_SLOW_STEP);
	CHECK(r.step_time == 3 && r.median == 1 && r.slow_run == 1);
	t += 3;
	CHECK_INT(detect_on_step(&c, &s, 8, STEP_NEXT, t + 1, &r), DETECT_PROGRESS);
	CHECK_INT(s.slow_run, 0);
	t += 1;
	/* exactly F × median is not slow */
	CHECK_INT(detect_on_step(&c, &s, 9, STEP_NEXT, t + 2, &r), DETECT_PROGRESS);
	t += 2;
	/* M = 3 slow steps in a row: slow, slow, slowdown; then slow steps again */
	CHECK_INT(detect_on_step(&c, &s, 10, STEP_NEXT, t + 5, &r), DETECT_SLOW_STEP);
	CHECK_INT(detect_on_step(&c, &s, 11, STEP_NEXT, t + 10, &r), DETECT_SLOW_STEP);
	CHECK_INT(detect_on_step(&c, &s, 12, STEP_NEXT, t + 15, &r), DETECT_SLOWDOWN);
	CHECK_INT(r.slow_run, 3);
	CHECK_INT(detect_on_step(&c, &s, 13, STEP_NEXT, t + 20, &r), DETECT_SLOW_STEP);
	/* per step, not per line: 10 steps in 10 s is no slow step */
	c.slow_steps = 1;
	detect_start(&s, 0);
	t = steady(&c, &s, 1, 5, 1, 0, 1);
	CHECK_INT(detect_on_step(&c, &s, 15, STEP_NEXT, t + 10, &r), DETECT_PROGRESS);
	CHECK_INT(detect_on_step(&c, &s, 16, STEP_NEXT, t + 13, &r), DETECT_SLOWDOWN);
}

TEST(detect_no_slow_verdict_without_a_median)
{
	struct detect_config c = cfg();
	struct detect_state s;
	struct detect_result r;
	detect_start(&s, 0);
	CHECK_INT(detect_on_step(&c, &s, 1, STEP_FIRST, 1, &r), DETECT_PROGRESS);
	CHECK_INT(detect_on_step(&c, &s, 2, STEP_NEXT, 2, &r), DETECT_PROGRESS);
	/* only one sample known: 100× slower is not judged yet */
	CHECK_INT(detect_on_step(&c, &s, 3, STEP_NEXT, 102, &r), DETECT_PROGRESS);
	CHECK(r.median == 0);
}

TEST(detect_resumed_counter_and_jumps_are_progress_not_samples)
{
	struct detect_config c = cfg();
	struct detect_state s;
	struct detect_result r;
	c.window = 32;
	detect_start(&s, 0);
	double t = steady(&c, &s, 100, 110, 1, 0, 1);
	unsigned nr = s.nr;
	/* the trainer resumed from its checkpoint at step 50 after a long reload */
	CHECK_INT(detect_on_step(&c, &s, 50, STEP_BACKWARDS, t + 40, &r), DETECT_PROGRESS);
	CHECK_INT(s.nr, nr);
	CHECK(s.last_step == 50 && detect_deadline(&c, &s) == t + 40 + 5);
	CHECK_INT(detect_on_step(&c, &s, 51, STEP_NEXT, t + 41, &r), DETECT_PROGRESS);
	CHECK_INT(s.nr, nr + 1);
	/* a jump: alive, but 1e6 steps in 1 s would drag the median to nothing */
	CHECK_INT(detect_on_step(&c, &s, 1000051, STEP_JUMP, t + 42, &r), DETECT_PROGRESS);
	CHECK_INT(s.nr, nr + 1);
	CHECK(detect_hang_limit(&c, &s) == 5);
	/* the backwards step even when the parser called it next (another stream) */
	CHECK_INT(detect_on_step(&c, &s, 7, STEP_NEXT, t + 43, &r), DETECT_PROGRESS);
	CHECK_INT(s.nr, nr + 1);
	CHECK(s.last_step == 7);
}

TEST(detect_window_is_bounded)
{
	struct detect_config c = cfg();
	struct detect_state s;
	struct detect_result r;
	detect_start(&s, 0);
	/* 1000 steps at 1 s, then 8 (the window) at 1.5 s: the median follows the window */
	double t = steady(&c, &s, 1, 1000, 1, 0, 1);
	CHECK_INT(s.nr, 8);
	for (uint64_t k = 1001; k <= 1008; k++) {
		t += 1.5;
		detect_on_step(&c, &s, k, STEP_NEXT, t, &r);
	}
	CHECK(detect_hang_limit(&c, &s) == 5);
	CHECK(detect_median(s.interval, s.nr) == 1.5);
	c.window = 100000; /* clamped to DETECT_WINDOW_MAX */
	detect_start(&s, 0);
	steady(&c, &s, 1, 1000, 1, 0, 1);
	CHECK_INT(s.nr, DETECT_WINDOW_MAX);
}
