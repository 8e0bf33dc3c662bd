/*
 * steps_series.c: the series 'vigil diagnose steps' analyses, from its rows (steps_int.h): the
 * last execution of each step, executions split at restarts and at pauses long enough to be
 * one, step times derived from stamps (the reader's jitter paired off), the stamps' resolution,
 * tokens per step, and the warm-up of each execution and the run's last step, named and then
 * left out.
 */
#include "steps_int.h"

#include <math.h>

/* ---- building the series ---- */

/*
 * Step times derived from the times rows were written at (a supervisor's journal: the time it
 * read the line) carry the reader's jitter: a line read late makes its step look long and the
 * next one short, though the two together took what two steps take. A long derived time
 * followed by one under a quarter of the median is such a pair: each gets their mean. Only
 * derived times of one execution are touched; a step_time the trainer measured is its own.
 */
static void dejitter(double *st, const bool *derived, const uint32_t *exec, size_t n)
{
	double *v = xmalloc((n ? n : 1) * sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (derived[i] && st[i] > 0)
			v[k++] = st[i];
	double med = k >= 8 ? diag_median(v, k) : NAN;
	free(v);
	for (size_t i = 0; med > 0 && i + 1 < n; i++) {
		if (!derived[i] || !derived[i + 1] || exec[i] != exec[i + 1])
			continue;
		double a = st[i], b = st[i + 1];
		if (a > med && b < med / 4) {
			st[i] = st[i + 1] = (a + b) / 2;
			i++;
		}
	}
	/* a time of 0 left alone says nothing of the step (infinitely fast): unknown */
	for (size_t i = 0; i < n; i++)
		if (derived[i] && !(st[i] > 0))
			st[i] = NAN;
}

struct cand {
	uint64_t step;
	size_t row;
};

static int by_step(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return x->step < y->step ? -1 : x->step > y->step;
}

/*
 * Pauses between rows that are restarts: a job requeued or a process restarted in place goes
 * on at the next step, minutes later, and its first steps are warm-up again. A pause is the
 * time between two rows beyond what their steps take at the median pace, at least
 * DIAG_PAUSE_MIN_S and DIAG_PAUSE_STEPS steps; pauses that come back on a period are
 * checkpoints or evaluations (periodic drops), not restarts. NULL or a flag per row.
 */
static bool *find_pauses(const struct diag_rows *rows)
{
	size_t nr = rows->nr, k = 0, nc = 0;
	bool *pause = NULL;
	if (nr < 8)
		return NULL;
	/* the median pace from a sample of at most DIAG_SAMPLE rows spread over the run: the
	 * pace is no finer thing, and a million-row run should not pay for it */
	size_t stride = nr / DIAG_SAMPLE + 1;
	double *iv = xmalloc((nr / stride + 1) * sizeof(*iv));
	struct cand *c = NULL;
	for (size_t i = stride; i < nr; i += stride) {
		const struct diag_row *a = &rows->v[i - 1], *b = &rows->v[i];
		if ((a->has & b->has & DROW_TIME) && a->attempt == b->attempt &&
		    b->step > a->step && b->time >= a->time)
			iv[k++] = (b->time - a->time) / (double)(b->step - a->step);
	}
	double med = k >= 8 ? diag_median(iv, k) : NAN;
	free(iv);
	if (!(med > 0))
		return NULL;
	double min = fmax(DIAG_PAUSE_MIN_S, DIAG_PAUSE_STEPS * med);
	size_t cap = 0;
	for (size_t i = 1; i < nr; i++) {
		const struct diag_row *a = &rows->v[i - 1], *b = &rows->v[i];
		if (!((a->has & b->has & DROW_TIME) && a->attempt == b->attempt &&
		      b->step > a->step))
			continue;
		if (b->time - a->time - med * (double)(b->step - a->step) < min)
			continue;
		ALLOC_GROW(c, nc + 1, cap);
		c[nc++] = (struct cand){ b->step, i };
	}
	if (!nc)
		return NULL;
	qsort(c, nc, sizeof(*c), by_step);
	uint64_t *cs = xmalloc(nc * sizeof(*cs)), tol;
	bool *mem = xcalloc(nc, sizeof(*mem));
	for (size_t j = 0; j < nc; j++)
		cs[j] = c[j].step;
	if (!diag_find_period(cs, nc, 3, 0, mem, &tol))
		memset(mem, 0, nc * sizeof(*mem));
	pause = xcalloc(nr, sizeof(*pause));
	for (size_t j = 0; j < nc; j++)
		pause[c[j].row] = !mem[j];
	free(cs);
	free(mem);
	free(c);
	return pause;
}

/*
 * The last execution of each step, in step order: a row whose step is not above the last kept
 * one (a resumed run doing steps again) removes the kept rows from its step on. Step times
 * missing are derived from the time of the previous row of the same execution.
 */
void diag_build_series(const struct diag_rows *rows, struct diag_steps *out, uint64_t **step,
		       double **st, double **mfu, double **tok, uint32_t **exec, uint32_t **line,
		       size_t *n_out)
{
	size_t n = 0, cap = rows->nr ? rows->nr : 1;
	uint32_t ex = 0;
	*step = xmalloc(cap * sizeof(**step));
	*st = xmalloc(cap * sizeof(**st));
	*mfu = xmalloc(cap * sizeof(**mfu));
	*tok = xmalloc(cap * sizeof(**tok));
	*exec = xmalloc(cap * sizeof(**exec));
	*line = xmalloc(cap * sizeof(**line));
	const struct diag_row *prev = NULL;
	bool *derived = xcalloc(cap, sizeof(*derived));
	bool back = false; /* the row before went back in time */
	bool *pause = find_pauses(rows);
	for (size_t i = 0; i < rows->nr; i++) {
		const struct diag_row *r = &rows->v[i];
		bool paused = pause && pause[i];
		bool same_exec =
			prev && r->step > prev->step && r->attempt == prev->attempt && !paused;
		if (paused) {
			/* a new execution: the pause is no step's time, and warm-up follows */
			ex++;
			out->pauses++;
			struct diag_event *e = diag_add_event(out, DE_PAUSE);
			if (e) {
				e->start_step = prev->step;
				e->end_step = r->step;
				e->seconds = r->time - prev->time;
			}
		} else if (prev && !same_exec) {
			if (r->step < prev->step || r->attempt != prev->attempt) {
				ex++;
				if (r->step <= prev->step) {
					if (out->restart_nr < DIAG_RESTARTS_KEPT)
						out->restart[out->restart_nr++] =
							(struct diag_restart){ r->line, prev->step,
									       r->step };
					out->restarts++;
				}
			} else {
				out->duplicates++; /* the same step again: the later row wins */
			}
		}
		while (n && (*step)[n - 1] >= r->step)
			n--;
		double t = NAN;
		if (!same_exec)
			back = false;
		if (r->has & DROW_STEP_TIME)
			t = r->step_time;
		else if (same_exec && (r->has & DROW_TIME) && (prev->has & DROW_TIME) &&
			 r->time < prev->time) {
			/* a clock set back: the interval into this row and the one out of it are
			 * both the clock's, neither the step's */
			if (!out->backwards++)
				out->backwards_line = r->line;
			back = true;
		} else if (back) {
			back = false;
		} else if (same_exec && (r->has & DROW_TIME) && (prev->has & DROW_TIME) &&
			   r->time >= prev->time)
			/* 0 (two lines read at once) is kept for dejitter(), which pairs it
			 * with the long one before it or drops it */
			t = (r->time - prev->time) / (double)(r->step - prev->step);
		derived[n] = !(r->has & DROW_STEP_TIME) && !isnan(t);
		(*step)[n] = r->step;
		(*st)[n] = t;
		(*mfu)[n] = r->has & DROW_MFU ? r->mfu : NAN;
		(*tok)[n] = r->has & DROW_TOKENS ? r->tokens : NAN;
		(*exec)[n] = ex;
		(*line)[n] = r->line;
		n++;
		prev = r;
	}
	*n_out = n;
	dejitter(*st, derived, *exec, n);
	free(derived);
	free(pause);
}

/*
 * Warm-up: the first steps of each execution (the run's start, and after a restart or a pause)
 * are slow by nature: compilation (torch.compile's first step takes tens to hundreds of times a
 * step), allocator and NCCL warm-up, the data loader's first batches. From the execution's
 * first step, the steps below its settled level (the median of its first 200) by more than 8 %
 * or four times the step-to-step noise, until five in a row are not, within the first quarter
 * of the execution and at most 100 steps. The run's last step, when it is a drop (a final
 * checkpoint or evaluation, a shutdown), is named too. skip[] marks both.
 */
void diag_find_warmup(struct diag_steps *s, const double *x, const double *st, const uint64_t *step,
		      const uint32_t *exec, size_t n, bool *skip, double *scratch)
{
	size_t k = 0;
	double total = 0;
	size_t stride = n / DIAG_SAMPLE + 1; /* the noise from a sample spread over the run */
	for (size_t i = 0; i < n; i++) {
		total += 1.0 / x[i];
		if (i && i % stride == 0 && exec[i] == exec[i - 1])
			scratch[k++] = x[i] / x[i - 1] - 1;
	}
	/* the step-to-step noise: a difference of two steps has sqrt(2) times their sigma */
	double sig = k >= 8 ? diag_robust_sigma(scratch, k, scratch + k) / sqrt(2.0) : 0;
	memcpy(scratch, x, n * sizeof(*x));
	double run_level = diag_median(scratch, n);
	double thr = fmax(0.08, 4 * sig);
	for (size_t a = 0; a < n;) {
		size_t b = a;
		while (b < n && exec[b] == exec[a])
			b++;
		size_t ne = b - a, w = ne < 200 ? ne : 200;
		double level = run_level;
		if (ne >= 5) {
			memcpy(scratch, x + a, w * sizeof(*x));
			level = diag_median(scratch, w);
		}
		size_t maxw = ne / 4 > 100 ? 100 : ne / 4 ? ne / 4 : 1, last = SIZE_MAX, ok = 0;
		for (size_t i = a; i < a + maxw && i < b; i++) {
			if (x[i] < level * (1 - thr)) {
				last = i;
				ok = 0;
			} else if (++ok >= 5) {
				break;
			}
		}
		if (last != SIZE_MAX) {
			double slow = x[a], extra = 0, secs = 0;
			for (size_t i = a; i <= last; i++) {
				skip[i] = true;
				if (x[i] < slow)
					slow = x[i];
				if (x[i] < level) {
					extra += 1.0 / x[i] - 1.0 / level;
					if (!isnan(st[i]))
						secs += st[i] * (1 - x[i] / level);
				}
			}
			s->warmup_steps += last - a + 1;
			struct diag_event *e = diag_add_event(s, DE_WARMUP);
			if (e) {
				e->start_step = step[a];
				e->end_step = step[last];
				e->count = last - a + 1;
				e->slowest = level / slow;
				e->seconds = secs;
				e->cost = extra / total;
				e->after_restart = a > 0;
			}
		}
		a = b;
	}
	/* the last step: against the level of the steps before it */
	size_t i = n - 1, lo = i > 31 ? i - 31 : 0;
	if (skip[i] || i - lo < 5)
		return;
	memcpy(scratch, x + lo, (i - lo) * sizeof(*x));
	double level = diag_median(scratch, i - lo), d = x[i] / level - 1;
	if (d < -0.5 && d < -6 * sig) {
		skip[i] = true;
		struct diag_event *e = diag_add_event(s, DE_LAST_STEP);
		if (e) {
			e->start_step = e->end_step = step[i];
			e->count = 1;
			e->slowest = level / x[i];
			e->seconds = isnan(st[i]) ? 0 : st[i] * (1 - x[i] / level);
			e->cost = (1.0 / x[i] - 1.0 / level) / total;
		}
	}
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/*
 * The resolution the values are written at: the greatest common divisor, in microseconds, of
 * the changes between consecutive step times (derived: of the changes between consecutive
 * rows' time differences). vigil run's journal writes ms, many trainers 0.01 s or 0.1 s, and
 * times stamped at 1 ms around 15.3 ms steps make a perfectly steady run's step times 15 or
 * 16 ms: a spread of 6.5 % that is the clock's, not the run's. Changes, not the values: a
 * perfectly even series (every time on a grid of its own period) has no tick to find, and its
 * spread is none anyway. 0 when nothing was read or nothing changed.
 */
double diag_resolution_of(const struct diag_rows *rows, bool of_time)
{
	uint64_t g = 0;
	int64_t prev_v = 0, prev_d = 0;
	bool have_v = false, have_d = false;
	uint32_t prev_attempt = 0;
	for (size_t i = 0; i < rows->nr && g != 1; i++) {
		const struct diag_row *r = &rows->v[i];
		if (!(r->has & (of_time ? DROW_TIME : DROW_STEP_TIME)))
			continue;
		double f = (of_time ? r->time : r->step_time) * 1e6;
		if (!(f >= 0) || f > 9e18)
			continue;
		int64_t v = (int64_t)llround(f);
		if (!of_time) {
			if (have_v)
				g = gcd64(g, (uint64_t)(v > prev_v ? v - prev_v : prev_v - v));
			prev_v = v;
			have_v = true;
			continue;
		}
		if (have_v && r->attempt == prev_attempt && v >= prev_v) {
			int64_t d = v - prev_v;
			if (have_d)
				g = gcd64(g, (uint64_t)(d > prev_d ? d - prev_d : prev_d - d));
			prev_d = d;
			have_d = true;
		} else {
			have_d = false;
		}
		prev_v = v;
		prev_attempt = r->attempt;
		have_v = true;
	}
	/* a clock writes a decimal resolution (1 s, 0.1 s, ... 1 us); a divisor that is not one
	 * (0.2 s) is a series regular on its own period, whose ticks cannot be seen */
	for (uint64_t p = 1; p <= 10000000; p *= 10)
		if (g == p)
			return (double)g / 1e6;
	return 0;
}

/* tokens that only grow are a running total (an attempt's steps.jsonl may count so): per step
 * they are the difference over the steps between rows */
void diag_tokens_per_step(double *tok, const uint64_t *step, const uint32_t *exec, size_t n)
{
	size_t up = 0, pairs = 0;
	for (size_t i = 1; i < n; i++) {
		if (isnan(tok[i]) || isnan(tok[i - 1]) || exec[i] != exec[i - 1])
			continue;
		pairs++;
		up += tok[i] > tok[i - 1];
	}
	if (!pairs || up * 10 < pairs * 9)
		return;
	for (size_t i = n; i-- > 0;) {
		if (i && !isnan(tok[i]) && !isnan(tok[i - 1]) && exec[i] == exec[i - 1] &&
		    tok[i] > tok[i - 1])
			tok[i] = (tok[i] - tok[i - 1]) / (double)(step[i] - step[i - 1]);
		else
			tok[i] = NAN;
	}
}
