/* detect.c: hang and slowdown rules over step times, pure (see detect.h). */
#include "detect.h"

#include <math.h>

void detect_config_default(struct detect_config *c)
{
	c->hang_factor = 3;
	c->hang_floor_s = 60;
	c->startup_timeout_s = 300;
	c->slow_factor = 2;
	c->slow_steps = 5;
	c->window = 50;
	c->min_samples = 3;
}

void detect_start(struct detect_state *s, double now)
{
	memset(s, 0, sizeof(*s));
	s->start = now;
}

static unsigned window_of(const struct detect_config *c)
{
	if (c->window < 1)
		return 1;
	return c->window > DETECT_WINDOW_MAX ? DETECT_WINDOW_MAX : c->window;
}

static unsigned min_samples_of(const struct detect_config *c)
{
	return c->min_samples ? c->min_samples : 1;
}

double detect_median(const double *v, unsigned n)
{
	double tmp[DETECT_WINDOW_MAX];
	if (!n)
		return 0;
	if (n > DETECT_WINDOW_MAX)
		n = DETECT_WINDOW_MAX;
	/* insertion sort: n is small and bounded */
	for (unsigned i = 0; i < n; i++) {
		unsigned j = i;
		while (j > 0 && tmp[j - 1] > v[i]) {
			tmp[j] = tmp[j - 1];
			j--;
		}
		tmp[j] = v[i];
	}
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/* Samples in the ring, oldest first is not needed: medians ignore order. */
static unsigned samples(const struct detect_config *c, const struct detect_state *s)
{
	unsigned w = window_of(c);
	return s->nr < w ? s->nr : w;
}

double detect_hang_limit(const struct detect_config *c, const struct detect_state *s)
{
	if (!s->have_step)
		return c->startup_timeout_s;
	if (samples(c, s) < min_samples_of(c))
		return fmax(c->startup_timeout_s, c->hang_floor_s);
	return fmax(c->hang_factor * detect_median(s->interval, samples(c, s)), c->hang_floor_s);
}

double detect_deadline(const struct detect_config *c, const struct detect_state *s)
{
	if (s->fired)
		return INFINITY;
	return (s->have_step ? s->last_progress : s->start) + detect_hang_limit(c, s);
}

static void add_sample(const struct detect_config *c, struct detect_state *s, double interval,
		       double per_step)
{
	unsigned w = window_of(c);
	if (s->next >= w)
		s->next = 0;
	s->interval[s->next] = interval;
	s->per_step[s->next] = per_step;
	s->next = (s->next + 1) % w;
	if (s->nr < w)
		s->nr++;
}

static void progress(struct detect_state *s, uint64_t step, double now)
{
	s->have_step = true;
	s->last_step = step;
	s->last_progress = now;
	s->fired = false;
}

enum detect_what detect_on_step(const struct detect_config *c, struct detect_state *s,
				uint64_t step, enum step_change change, double now,
				struct detect_result *out)
{
	memset(out, 0, sizeof(*out));
	if (change == STEP_SAME || (s->have_step && step == s->last_step))
		return out->what = DETECT_NOTHING;
	if (!s->have_step || change != STEP_NEXT || step < s->last_step) {
		/* the first step (startup time is no step time), a resumed counter, a jump */
		progress(s, step, now);
		s->slow_run = 0;
		return out->what = DETECT_PROGRESS;
	}
	double interval = now > s->last_progress ? now - s->last_progress : 0;
	double per = interval / (double)(step - s->last_step);
	unsigned n = samples(c, s);
	out->step_time = per;
	out->what = DETECT_PROGRESS;
	if (n >= min_samples_of(c)) {
		out->median = detect_median(s->per_step, n);
		if (out->median > 0 && per > c->slow_factor * out->median) {
			s->slow_run++;
			out->what = s->slow_run == (c->slow_steps ? c->slow_steps : 1)
					    ? DETECT_SLOWDOWN
					    : DETECT_SLOW_STEP;
		} else {
			s->slow_run = 0;
		}
	}
	out->slow_run = s->slow_run;
	add_sample(c, s, interval, per);
	progress(s, step, now);
	return out->what;
}

enum detect_what detect_on_tick(const struct detect_config *c, struct detect_state *s, double now,
				struct detect_result *out)
{
	memset(out, 0, sizeof(*out));
	if (s->fired || now < detect_deadline(c, s))
		return out->what = DETECT_NOTHING;
	s->fired = true;
	out->limit_s = detect_hang_limit(c, s);
	out->silent_s = now - (s->have_step ? s->last_progress : s->start);
	if (s->have_step && samples(c, s))
		out->median = detect_median(s->interval, samples(c, s));
	return out->what = s->have_step ? DETECT_HANG : DETECT_STARTUP_TIMEOUT;
}

const char *detect_what_name(enum detect_what w)
{
	switch (w) {
	case DETECT_NOTHING:
		return "nothing";
	case DETECT_PROGRESS:
		return "progress";
	case DETECT_SLOW_STEP:
		return "slow_step";
	case DETECT_SLOWDOWN:
		return "slowdown";
	case DETECT_HANG:
		return "hang";
	case DETECT_STARTUP_TIMEOUT:
		return "startup_timeout";
	}
	return "?";
}
