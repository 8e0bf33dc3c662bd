/*
 * steps.c: the step-time pattern detector of 'vigil diagnose steps' (see steps.h). Real step
 * times are noisy and heavy-tailed, so every level here is a median and every scale a MAD:
 * single-step drops are outliers against a rolling median, levels come from binary segmentation
 * of block medians with a MAD-scaled penalty, a decline is a Theil-Sen slope, and a period is the
 * most common gap between drops that puts most of them on one grid. docs/DIAGNOSE.md has the
 * thresholds and why.
 */
#include "steps_int.h"
#include "../lib/json.h"

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
	double *iv = xmalloc(nr * sizeof(*iv));
	struct cand *c = NULL;
	for (size_t i = 1; i < nr; i++) {
		const struct diag_row *a = &rows->v[i - 1], *b = &rows->v[i];
		if ((a->has & b->has & DROW_TIME) && a->attempt == b->attempt && b->step > a->step &&
		    b->time >= a->time)
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
		if (!((a->has & b->has & DROW_TIME) && a->attempt == b->attempt && b->step > a->step))
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
static void build_series(const struct diag_rows *rows, struct diag_steps *out, uint64_t **step,
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
		bool same_exec = prev && r->step > prev->step && r->attempt == prev->attempt && !paused;
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
						out->restart[out->restart_nr++] = (struct diag_restart){
							r->line, prev->step, r->step
						};
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
static void find_warmup(struct diag_steps *s, const double *x, const double *st,
			const uint64_t *step, const uint32_t *exec, size_t n, bool *skip,
			double *scratch)
{
	size_t k = 0;
	double total = 0;
	for (size_t i = 0; i < n; i++) {
		total += 1.0 / x[i];
		if (i && exec[i] == exec[i - 1])
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
static double resolution_of(const struct diag_rows *rows, bool of_time)
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
static void tokens_per_step(double *tok, const uint64_t *step, const uint32_t *exec, size_t n)
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

/* ---- the patterns ---- */

/* The level analysis of one execution [a, b): a slow decline, or change points. */
static void levels(struct diag_steps *s, struct diag_ctx *x, size_t a, size_t b, bool *declined)
{
	size_t n = b - a;
	if (n < 20)
		return;
	size_t bs = (n + 999) / 1000, nb = (n + bs - 1) / bs;
	double *blk = xmalloc(nb * sizeof(*blk)), *bx = xmalloc(nb * sizeof(*bx));
	for (size_t j = 0; j < nb; j++) {
		size_t lo = a + j * bs, hi = lo + bs < b ? lo + bs : b;
		memcpy(x->scratch, x->c + lo, (hi - lo) * sizeof(double));
		blk[j] = diag_median(x->scratch, hi - lo);
		bx[j] = (double)(lo + hi) / 2;
	}
	double *d = xmalloc(nb * sizeof(*d));
	for (size_t j = 1; j < nb; j++)
		d[j - 1] = blk[j] - blk[j - 1];
	double sigma = nb > 2 ? diag_robust_sigma(d, nb - 1, x->scratch) / sqrt(2.0) : 0;
	size_t min_len = nb >= 60 ? 5 : 3;
	size_t cp[DIAG_MAX_CHANGES];
	size_t ncp = diag_segment(blk, nb, sigma, 0.08, min_len, cp, DIAG_MAX_CHANGES);

	/* the step model's and the line's residuals */
	double *res = xmalloc(nb * sizeof(*res));
	for (size_t k = 0, j0 = 0; k <= ncp; k++) {
		size_t j1 = k < ncp ? cp[k] : nb;
		memcpy(x->scratch, blk + j0, (j1 - j0) * sizeof(double));
		double lv = diag_median(x->scratch, j1 - j0);
		for (size_t j = j0; j < j1; j++)
			res[j] = fabs(blk[j] - lv);
		j0 = j1;
	}
	double r_step = diag_median(res, nb);
	double slope = nb >= 8 ? diag_theil_sen(bx, blk, nb) : 0;
	for (size_t j = 0; j < nb; j++)
		d[j] = blk[j] - slope * bx[j];
	double icpt = diag_median(d, nb);
	for (size_t j = 0; j < nb; j++)
		res[j] = fabs(blk[j] - (icpt + slope * bx[j]));
	double r_line = diag_median(res, nb);
	double l0 = icpt + slope * bx[0], l1 = icpt + slope * bx[nb - 1];
	double decline = l0 > 0 ? (l0 - l1) / l0 : 0;
	if (nb >= 8 && ncp >= 1 && decline >= 0.15 && r_line <= 1.5 * r_step + 0.01 * l0) {
		struct diag_pattern *p = diag_add_pattern(s, DP_SLOW_DECLINE);
		if (p) {
			p->start_step = x->step[a];
			p->end_step = x->step[b - 1];
			p->level_before = l0;
			p->level = l1;
			/* beyond the start level, what the decline cost */
			double c = 0;
			for (size_t i = a; i < b; i++) {
				double lv = icpt + slope * (double)i;
				double e = 1.0 / (lv > 0.01 ? lv : 0.01) - 1.0 / l0;
				if (e > 0)
					c += e;
			}
			p->cost = c / x->total;
		}
		*declined = true;
		goto out;
	}
	for (size_t k = 0; k < ncp && s->change_nr < DIAG_MAX_CHANGES; k++) {
		size_t j0 = k ? cp[k - 1] : 0, j1 = cp[k], j2 = k + 1 < ncp ? cp[k + 1] : nb;
		memcpy(x->scratch, blk + j0, (j1 - j0) * sizeof(double));
		double before = diag_median(x->scratch, j1 - j0);
		memcpy(x->scratch, blk + j1, (j2 - j1) * sizeof(double));
		double after = diag_median(x->scratch, j2 - j1);
		/* the step of the change: within its block, where the running level crosses */
		size_t lo = a + j1 * bs, i = lo;
		if (bs > 1) {
			size_t from = lo - bs;
			for (i = from; i < lo + bs && i < b; i++)
				if (fabs(x->c[i] - after) < fabs(x->c[i] - before) &&
				    i + 1 < b && fabs(x->c[i + 1] - after) < fabs(x->c[i + 1] - before))
					break;
		}
		s->change[s->change_nr++] = (struct diag_change){ x->step[i], before, after };
		/* a lasting drop: the lower level holds to the end of the execution or for at least
		 * a twentieth of the run */
		size_t end = a + j2 * bs < b ? a + j2 * bs : b;
		if (after < before * 0.88 && (j2 == nb || end - i >= x->n / 20)) {
			struct diag_pattern *p = diag_add_pattern(s, DP_STEP_DOWN);
			if (!p)
				break;
			p->start_step = p->changed_at = x->step[i];
			p->end_step = x->step[end - 1];
			p->level_before = before;
			p->level = after;
			p->cost = diag_cost_vs(x, i, end, before);
		}
	}
out:
	free(blk);
	free(bx);
	free(d);
	free(res);
}

static int event_by_step(const void *a, const void *b)
{
	const struct diag_event *p = a, *q = b;
	return p->start_step < q->start_step ? -1 : p->start_step > q->start_step ? 1
	       : (int)p->kind - (int)q->kind;
}

static int by_cost(const void *a, const void *b)
{
	const struct diag_pattern *p = a, *q = b;
	return p->cost < q->cost ? 1 : p->cost > q->cost ? -1 : (int)p->kind - (int)q->kind;
}

int diag_steps_analyse(const struct diag_rows *rows, const struct diag_steps_opts *o,
		       struct diag_steps *s, struct strbuf *err)
{
	uint64_t *step;
	double *st, *mfu, *tok;
	uint32_t *exec, *line;
	size_t n0, n = 0, have_mfu = 0, have_st = 0, have_tok = 0;
	int ret = -1;
	double *x = NULL, *m = NULL, *c = NULL, *rr = NULL, *scratch = NULL, *dres = NULL;
	bool *drop = NULL;

	memset(s, 0, sizeof(*s));
	s->rows = rows->nr;
	build_series(rows, s, &step, &st, &mfu, &tok, &exec, &line, &n0);
	tokens_per_step(tok, step, exec, n0);
	for (size_t i = 0; i < n0; i++) {
		have_mfu += !isnan(mfu[i]);
		have_st += !isnan(st[i]);
		have_tok += !isnan(tok[i]) && !isnan(st[i]);
	}
	bool can_compute = o->flops_per_token > 0 && o->peak_flops > 0 && have_tok;
	if (o->expected_step_time > 0)
		s->metric_mfu = false;
	else if (o->expected_mfu > 0 || have_mfu * 2 >= n0 || (can_compute && have_tok * 2 >= n0))
		s->metric_mfu = true;
	if (s->metric_mfu && have_mfu * 2 < n0 && !can_compute) {
		error_set(err, "no MFU: the rows have no 'mfu', and no 'tokens' with step times and "
			       "--flops-per-token and --peak-flops to compute it from");
		goto out;
	}
	s->mfu_computed = s->metric_mfu && have_mfu * 2 < n0;
	if (!s->metric_mfu && !have_st && s->backwards) {
		error_set(err, "no step times: the times go backwards at line %u (%zu row%s with a "
			       "time before the row before; a clock set back?), and there is no "
			       "'step_time'", s->backwards_line, s->backwards,
			  s->backwards == 1 ? "" : "s");
		goto out;
	}
	if (!s->metric_mfu && !have_st && (rows->columns & DROW_TIME) && s->duplicates) {
		/* per-rank rows: each step's rows repeat it, and no time lies between two steps'
		 * rows of one execution */
		error_set(err, "no step times: each step has several rows (%zu repeated%s), so no time "
			       "between steps can be derived; one row a step, or 'step_time'%s",
			  s->duplicates, (rows->columns & DROW_RANK) ? ", with a 'rank'" : "",
			  (rows->columns & DROW_RANK) ? " (per-rank rows are for 'vigil diagnose "
							"stragglers')" : "");
		goto out;
	}
	if (!s->metric_mfu && !have_st) {
		error_set(err, "no step times: the rows have no 'step_time' and no 'time' to derive "
			       "them from (nor 'mfu')");
		goto out;
	}
	x = xmalloc((n0 ? n0 : 1) * sizeof(*x));
	/* compact to the rows that have the metric */
	for (size_t i = 0; i < n0; i++) {
		double v = NAN;
		if (!s->metric_mfu)
			v = isnan(st[i]) ? NAN : 1.0 / st[i];
		else if (!s->mfu_computed)
			v = mfu[i];
		else if (!isnan(tok[i]) && !isnan(st[i]))
			v = tok[i] * o->flops_per_token / (st[i] * o->peak_flops);
		if (!(v > 0) || !isfinite(v)) {
			s->no_value++;
			continue;
		}
		step[n] = step[i];
		exec[n] = exec[i];
		line[n] = line[i];
		st[n] = st[i];
		x[n++] = v;
	}
	s->used = n;
	if (n < DIAG_MIN_POINTS) {
		error_set(err, "too few steps to tell: %zu with a throughput (at least %d needed)", n,
			  DIAG_MIN_POINTS);
		goto out;
	}
	/* steps logged every k: gaps are what is beyond the usual stride */
	s->first_step = step[0];
	s->last_step = step[n - 1];
	{
		size_t stride_gaps = 0, missing = 0;
		uint64_t stride = (step[n - 1] - step[0]) / (n - 1);
		if (stride < 1)
			stride = 1;
		for (size_t i = 1; i < n; i++)
			if (exec[i] == exec[i - 1] &&
			    step[i] - step[i - 1] > (stride > 1 ? 2 * stride : 1)) {
				stride_gaps++;
				missing += step[i] - step[i - 1] - stride;
			}
		s->gaps = stride_gaps;
		s->missing_steps = missing;
	}
	/* warm-up and the slow last step: named, then left out of everything that follows */
	{
		bool *skip = xcalloc(n, sizeof(*skip));
		size_t k = 0;
		scratch = xmalloc(2 * n * sizeof(*scratch));
		find_warmup(s, x, st, step, exec, n, skip, scratch);
		for (size_t i = 0; i < n; i++) {
			if (skip[i])
				continue;
			step[k] = step[i];
			exec[k] = exec[i];
			line[k] = line[i];
			st[k] = st[i];
			x[k++] = x[i];
		}
		free(skip);
		free(scratch);
		scratch = NULL;
		if (k < DIAG_MIN_POINTS / 2) {
			error_set(err, "too few steps to tell: %zu with a throughput, %zu of them "
				       "warm-up (at least %d others needed)", n, n - k,
				  DIAG_MIN_POINTS / 2);
			goto out;
		}
		n = k;
	}

	scratch = xmalloc(n * sizeof(*scratch));
	m = xmalloc(n * sizeof(*m));
	c = xmalloc(n * sizeof(*c));
	rr = xmalloc(n * sizeof(*rr));
	dres = xmalloc(n * sizeof(*dres));
	drop = xcalloc(n, sizeof(*drop));
	size_t w = n / 3 < 31 ? (n / 3) | 1 : 31;
	diag_rolling_median(x, n, w, m);
	for (size_t i = 0; i < n; i++)
		dres[i] = (x[i] - m[i]) / m[i];
	double sig = diag_robust_sigma(dres, n, scratch);
	s->noise = sig;
	/* a drop: throughput under half its local level and far outside the noise, one to three
	 * steps long (longer is a level, not a drop) */
	for (size_t i = 0; i < n;) {
		if (!(dres[i] < -0.5 && dres[i] < -6 * sig)) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && dres[j] < -0.5 && dres[j] < -6 * sig)
			j++;
		if (j - i <= 3)
			for (size_t k = i; k < j; k++)
				drop[k] = true;
		i = j;
	}
	for (size_t i = 0; i < n; i++)
		c[i] = drop[i] ? m[i] : x[i];
	if (o->expected_step_time > 0 && !s->metric_mfu) {
		s->expected = 1.0 / o->expected_step_time;
		s->expected_given = true;
	} else if (o->expected_mfu > 0 && s->metric_mfu) {
		s->expected = o->expected_mfu;
		s->expected_given = true;
	} else {
		s->expected = diag_quantile(m, n, 0.95, scratch); /* the run's best sustained level */
	}
	double total = 0;
	for (size_t i = 0; i < n; i++) {
		rr[i] = x[i] / s->expected;
		m[i] /= s->expected;
		c[i] /= s->expected;
		total += 1.0 / rr[i];
	}
	s->median_level = diag_quantile(c, n, 0.5, scratch);
	if (have_st) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (!isnan(st[i]))
				scratch[k++] = st[i];
		s->median_step_time = k ? diag_median(scratch, k) : 0;
	}
	/* the stamps' resolution against a row's time: derived step times are the difference of
	 * two stamps over the steps between rows, each end off by up to one tick */
	{
		size_t derived = 0, k = 0;
		for (size_t i = 0; i < rows->nr; i++)
			derived += !(rows->v[i].has & DROW_STEP_TIME) && (rows->v[i].has & DROW_TIME);
		s->resolution_of_time = derived * 2 > rows->nr;
		s->resolution = resolution_of(rows, s->resolution_of_time);
		double row_time = 0;
		if (s->resolution_of_time) {
			/* the mean time between rows over each execution: a median of quantised
			 * differences is a tick count (1 s stamps over 0.2 s steps: 0 or 1 s) */
			double span = 0;
			size_t gaps = 0;
			for (size_t i = 1; i < rows->nr; i++) {
				const struct diag_row *a = &rows->v[i - 1], *b = &rows->v[i];
				if ((a->has & b->has & DROW_TIME) && a->attempt == b->attempt &&
				    b->step > a->step && b->time >= a->time) {
					span += b->time - a->time;
					gaps++;
				}
			}
			row_time = gaps ? span / (double)gaps : 0;
		} else {
			for (size_t i = 0; i < n; i++)
				if (!isnan(st[i]))
					scratch[k++] = st[i];
			row_time = k ? diag_median(scratch, k) : 0;
		}
		if (s->resolution > 0 && row_time > 0)
			s->resolution_share = s->resolution / row_time;
		/* a row spans fewer than four ticks: a step's time is mostly the clock's; what
		 * the run did (noise, drops, how much) cannot be told from it */
		if (s->resolution_share > DIAG_TICKS_MAX_SHARE && !(s->metric_mfu && !s->mfu_computed)) {
			error_set(err, "the %s are written to %.6g s, %.0f%% of a row's time (%.3g s): "
				       "a step's time cannot be told from the clock's ticks; write "
				       "'step_time', or times to a finer resolution",
				  s->resolution_of_time ? "times" : "step times", s->resolution,
				  100 * s->resolution_share, row_time);
			goto out;
		}
	}

	struct diag_ctx cx = { n, step, exec, rr, c, m, drop, st, total, scratch };
	diag_find_drops(s, &cx);

	/* levels, one execution at a time (a restart may bring the level back) */
	bool declined = false;
	for (size_t a = 0; a < n;) {
		size_t b = a;
		while (b < n && exec[b] == exec[a])
			b++;
		levels(s, &cx, a, b, &declined);
		a = b;
	}
	/* flat: the run's level from the start, against an expected value given (the run's own
	 * best level is the run: it cannot be flat against itself) */
	{
		size_t first_end = n;
		for (size_t k = 0; k < s->change_nr; k++)
			for (size_t i = 0; i < n; i++)
				if (step[i] == s->change[k].step) {
					if (i < first_end)
						first_end = i;
					break;
				}
		memcpy(scratch, c, first_end * sizeof(double));
		double l0 = diag_median(scratch, first_end);
		enum diag_pattern_kind k = DP_HEALTHY;
		if (l0 < 0.15)
			k = DP_FLAT_TENTH;
		else if (l0 < 0.45)
			k = DP_FLAT_THIRD;
		else if (l0 < 0.88)
			k = DP_FLAT_DEGRADED;
		if (k != DP_HEALTHY && s->expected_given && !declined) {
			struct diag_pattern *p = diag_add_pattern(s, k);
			if (p) {
				p->start_step = step[0];
				p->end_step = step[first_end - 1];
				p->level = l0;
				p->cost = diag_cost_vs(&cx, 0, first_end, 1.0);
			}
		}
	}
	/* noisy: good on average, with a wide spread around the local level; the spread of the
	 * steps outside drops, q90 - q10 of throughput / local level */
	{
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (!drop[i])
				dres[k++] = c[i] / m[i];
		double q10 = diag_quantile(dres, k, 0.10, scratch), q90 = diag_quantile(dres, k, 0.90, scratch),
		       q95 = diag_quantile(dres, k, 0.95, scratch);
		/* the stamps' ticks are not noise: a spread within two of them is none */
		double tick = s->metric_mfu && !s->mfu_computed ? 0 : 2 * s->resolution_share;
		if (q90 - q10 - tick >= DIAG_NOISY_SPREAD && s->median_level >= 0.85) {
			struct diag_pattern *p = diag_add_pattern(s, DP_NOISY);
			if (p) {
				p->start_step = step[0];
				p->end_step = step[n - 1];
				p->spread = q90 - q10;
				p->level = s->median_level;
				double cst = 0;
				for (size_t i = 0; i < n; i++) {
					double e = drop[i] ? 0 : 1.0 / c[i] - 1.0 / (m[i] * q95);
					if (e > 0)
						cst += e;
				}
				p->cost = cst / total;
			}
		}
	}
	if (s->pat_nr > 1)
		qsort(s->pat, s->pat_nr, sizeof(s->pat[0]), by_cost);
	if (s->event_nr > 1)
		qsort(s->event, s->event_nr, sizeof(s->event[0]), event_by_step);

	/* the page's curve: per column the median and the lowest of the raw throughput */
	s->plot_nr = n < DIAG_PLOT_POINTS ? n : DIAG_PLOT_POINTS;
	for (size_t j = 0; j < s->plot_nr; j++) {
		size_t lo = j * n / s->plot_nr, hi = (j + 1) * n / s->plot_nr;
		double mn = rr[lo];
		for (size_t i = lo; i < hi; i++)
			if (rr[i] < mn)
				mn = rr[i];
		memcpy(scratch, c + lo, (hi - lo) * sizeof(double));
		s->plot_med[j] = diag_median(scratch, hi - lo);
		s->plot_min[j] = mn;
		s->plot_step[j] = step[lo];
	}
	ret = 0;
out:
	free(step);
	free(st);
	free(mfu);
	free(tok);
	free(exec);
	free(line);
	free(x);
	free(m);
	free(c);
	free(rr);
	free(scratch);
	free(dres);
	free(drop);
	return ret;
}

