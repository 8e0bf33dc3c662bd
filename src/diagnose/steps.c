/*
 * steps.c: the step-time pattern detector of 'vigil diagnose steps' (see steps.h): the series
 * (steps_series.c, warm-up and the last step left out), single-step drops against a rolling
 * median and their periods (steps_drops.c), levels from binary segmentation of block medians
 * with a MAD-scaled penalty, a decline as a Theil-Sen slope, flat against an expected value,
 * noise as a spread. Real step times are noisy and heavy-tailed, so every level here is a
 * median and every scale a MAD. docs/DIAGNOSE.md has the thresholds and why.
 */
#include "steps_int.h"

#include <math.h>

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
	diag_build_series(rows, s, &step, &st, &mfu, &tok, &exec, &line, &n0);
	diag_tokens_per_step(tok, step, exec, n0);
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
		tok[n] = tok[i];
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
		diag_find_warmup(s, x, st, step, exec, n, skip, scratch);
		for (size_t i = 0; i < n; i++) {
			if (skip[i])
				continue;
			step[k] = step[i];
			exec[k] = exec[i];
			line[k] = line[i];
			st[k] = st[i];
			tok[k] = tok[i];
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
	/* tokens per second, step by step: a median of rates, so that a slow step weighs as one
	 * step (as in the median step time), not by its length */
	{
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			double r = tok[i] / st[i];
			if (!isnan(tok[i]) && !isnan(st[i]) && r > 0 && isfinite(r))
				scratch[k++] = r;
		}
		s->tokens_steps = k;
		s->median_tokens_per_s = k ? diag_median(scratch, k) : 0;
	}
	/* the stamps' resolution against a row's time: derived step times are the difference of
	 * two stamps over the steps between rows, each end off by up to one tick */
	{
		size_t derived = 0, k = 0;
		for (size_t i = 0; i < rows->nr; i++)
			derived += !(rows->v[i].has & DROW_STEP_TIME) && (rows->v[i].has & DROW_TIME);
		s->resolution_of_time = derived * 2 > rows->nr;
		s->resolution = diag_resolution_of(rows, s->resolution_of_time);
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

