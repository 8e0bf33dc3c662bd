/*
 * steps_drops.c: single slow steps of 'vigil diagnose steps' (steps_int.h) and their periods.
 * Real runs checkpoint and evaluate every K steps, sometimes by the clock rather than the step
 * (K give or take one), sometimes two at once (evaluation every 100, a checkpoint every 500 on
 * top of it), and slow steps off any period happen too (a GC pause, a data loader stall). So a
 * period is not a grid fitted to all drops: it is a chain (a slow step with another one P steps
 * later, within a tolerance), and what is off the chain is named on its own: random drops when
 * they cost enough or are deep, otherwise isolated slow steps, which are no fault.
 */
#include "steps_int.h"

#include <math.h>

struct diag_pattern *diag_add_pattern(struct diag_steps *s, enum diag_pattern_kind k)
{
	if (s->pat_nr >= DIAG_MAX_PATTERNS)
		return NULL;
	struct diag_pattern *p = &s->pat[s->pat_nr++];
	memset(p, 0, sizeof(*p));
	p->kind = k;
	return p;
}

struct diag_event *diag_add_event(struct diag_steps *s, enum diag_event_kind k)
{
	if (s->event_nr >= DIAG_EVENTS_KEPT)
		return NULL;
	struct diag_event *e = &s->event[s->event_nr++];
	memset(e, 0, sizeof(*e));
	e->kind = k;
	return e;
}

double diag_cost_vs(const struct diag_ctx *x, size_t a, size_t b, double ref)
{
	double c = 0;
	for (size_t i = a; i < b; i++) {
		double d = 1.0 / x->c[i] - 1.0 / ref;
		if (d > 0)
			c += d;
	}
	return c / x->total;
}

/* how far a gap may be from the period: a step either way (a checkpoint by the clock, or one
 * logged a step late), 0.5 % of long periods (a clock's period over 1800 steps of 1-5 % jitter
 * strays by well under a step; a wider tolerance chains random slow steps by chance) */
static uint64_t tol_of(uint64_t p)
{
	return p < 4 ? 0 : p < 200 ? 1 : p / 200;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* the steps on a chain of period p: member[], and the longest chain's length */
static size_t chain_of(const uint64_t *e, size_t n, uint64_t p, uint64_t tol, bool *member,
		       size_t *longest, size_t *next)
{
	size_t nr = 0, best = 0;
	for (size_t i = 0; i < n; i++) {
		member[i] = false;
		next[i] = SIZE_MAX;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n && e[j] <= e[i] + p + tol; j++)
			if (e[j] + tol >= e[i] + p) {
				next[i] = j;
				member[i] = member[j] = true;
				break;
			}
	/* chain lengths from the end: next only points forward */
	size_t *len = xmalloc(n * sizeof(*len));
	for (size_t i = n; i-- > 0;) {
		len[i] = next[i] == SIZE_MAX ? 1 : 1 + len[next[i]];
		if (len[i] > best)
			best = len[i];
		nr += member[i];
	}
	free(len);
	*longest = best;
	return nr;
}

uint64_t diag_find_period(const uint64_t *e, size_t n, size_t min_members, uint64_t span,
			  bool *member, uint64_t *tol_out)
{
	enum { NEXT = 8, CANDS = 8 };
	if (n < 3)
		return 0;
	/* candidates: the most common gaps from each slow step to its next few (so that two
	 * interleaved series each show their own gap) */
	size_t nd = 0;
	uint64_t *d = xmalloc(n * NEXT * sizeof(*d));
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n && j <= i + NEXT; j++)
			d[nd++] = e[j] - e[i];
	qsort(d, nd, sizeof(*d), cmp_u64);
	uint64_t cand[CANDS] = { 0 };
	size_t cand_n[CANDS] = { 0 }, lo = 0, hi = 0;
	for (size_t i = 0; i < nd; i++) {
		if (i && d[i] == d[i - 1])
			continue;
		uint64_t v = d[i], t = tol_of(v);
		while (d[lo] + t < v)
			lo++;
		if (hi < lo)
			hi = lo;
		while (hi < nd && d[hi] <= v + t)
			hi++;
		size_t cnt = hi - lo;
		if (v < 2 || cnt < 2)
			continue;
		/* keep the CANDS best, one per neighbourhood */
		int near = -1;
		for (int c = 0; c < CANDS; c++)
			if (cand_n[c] &&
			    (cand[c] > v ? cand[c] - v : v - cand[c]) <= tol_of(cand[c]))
				near = c;
		if (near >= 0) {
			if (cnt > cand_n[near]) {
				cand[near] = v;
				cand_n[near] = cnt;
			}
			continue;
		}
		int worst = 0;
		for (int c = 1; c < CANDS; c++)
			if (cand_n[c] < cand_n[worst])
				worst = c;
		if (cnt > cand_n[worst]) {
			cand[worst] = v;
			cand_n[worst] = cnt;
		}
	}
	free(d);
	bool *m = xmalloc(n * sizeof(*m));
	size_t *next = xmalloc(n * sizeof(*next));
	uint64_t best = 0, best_tol = 0;
	for (int c = 0; c < CANDS; c++) {
		if (!cand_n[c])
			continue;
		size_t longest, nr = chain_of(e, n, cand[c], tol_of(cand[c]), m, &longest, next);
		if (longest < 3 || nr < min_members)
			continue;
		/* a period holds over the run: half its slots or more have a slow step */
		if (span && (double)nr < 0.5 * (double)span / (double)cand[c])
			continue;
		/* the shortest period that holds enough: a multiple of it chains the same steps
		 * and, with a second series, those of both (100 and 250 are both on 500) */
		if (!best || cand[c] < best) {
			best = cand[c];
			best_tol = tol_of(cand[c]);
		}
	}
	if (best) {
		size_t longest;
		chain_of(e, n, best, best_tol, member, &longest, next);
		/* the period said is the median link of the chain, not the candidate's edge */
		uint64_t *g = xmalloc(n * sizeof(*g));
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (next[i] != SIZE_MAX)
				g[k++] = e[next[i]] - e[i];
		qsort(g, k, sizeof(*g), cmp_u64);
		best = g[k / 2];
		uint64_t spread = 0;
		for (size_t i = 0; i < k; i++) {
			uint64_t dv = g[i] > best ? g[i] - best : best - g[i];
			if (dv > spread)
				spread = dv;
		}
		free(g);
		best_tol = spread;
	}
	free(m);
	free(next);
	*tol_out = best_tol;
	return best;
}

/* one slow step, or two or three in a row */
struct drop_ev {
	uint64_t step;
	double depth; /* throughput over the local level at the slowest */
	double cost;  /* share of the run's time beyond the local level */
	double xs;    /* seconds beyond the local level, NaN unknown */
	double level; /* the lowest throughput (share of expected) it reached: the page's dot */
	int series;   /* -1 none, else 0 or 1 */
	bool deep;    /* also on series 1 (a second series on top of the first) */
};

static double median_of(double *scratch, size_t k)
{
	return k ? diag_median(scratch, k) : NAN;
}

/* periodic-drops for the events of series ser */
static void add_series(struct diag_steps *s, struct diag_ctx *x, const struct drop_ev *ev,
		       size_t nev, int ser, uint64_t period, uint64_t tol, double base_cost,
		       double base_xs)
{
	struct diag_pattern *p = diag_add_pattern(s, DP_PERIODIC_DROPS);
	if (!p)
		return;
	double *dd = x->scratch;
	size_t cnt = 0, nxs = 0;
	double cost = 0;
	for (size_t j = 0; j < nev; j++) {
		bool in = ev[j].series == ser || (ser == 1 && ev[j].deep);
		if (!in)
			continue;
		if (!cnt)
			p->start_step = ev[j].step;
		p->end_step = ev[j].step;
		if (p->steps_at_nr < ARRAY_SIZE(p->steps_at))
			p->steps_at[p->steps_at_nr++] = ev[j].step;
		double c = ev[j].cost;
		if (ev[j].deep) /* shared with series 0: what series 0's steps cost is its own */
			c = ser == 0 ? fmin(c, base_cost) : fmax(c - base_cost, 0);
		cost += c;
		dd[cnt++] = ev[j].depth;
	}
	p->count = cnt;
	p->depth = median_of(dd, cnt);
	for (size_t j = 0; j < nev; j++) {
		bool in = ev[j].series == ser || (ser == 1 && ev[j].deep);
		if (in && !isnan(ev[j].xs))
			dd[nxs++] = ev[j].deep && ser == 1 ? ev[j].xs - base_xs : ev[j].xs;
	}
	p->extra_s = nxs ? median_of(dd, nxs) : 0;
	if (!(p->extra_s > 0))
		p->extra_s = 0;
	p->period = period;
	p->period_tol = tol;
	p->cost = cost;
}

/* the events' steps where want(ev) into out[], indexes into idx[]; how many */
static size_t pick(const struct drop_ev *ev, size_t nev, int which, uint64_t *out, size_t *idx)
{
	size_t k = 0;
	for (size_t j = 0; j < nev; j++) {
		bool take = which == 0	 ? true
			    : which == 1 ? ev[j].series < 0
					 : ev[j].series < 0 || ev[j].deep;
		if (take) {
			out[k] = ev[j].step;
			idx[k++] = j;
		}
	}
	return k;
}

/*
 * A second series on top of the first (evaluation every 100 and a checkpoint every 500: at 500
 * both happen, and that step is the deepest): series 0's steps split by how long they took, at
 * the widest ratio between neighbours if it is 1.5 or more. The deep ones are candidates for
 * the second series, with the steps off series 0.
 */
static void mark_deep(struct drop_ev *ev, size_t nev, double *scratch)
{
	size_t k = 0;
	for (size_t j = 0; j < nev; j++)
		if (ev[j].series == 0)
			scratch[k++] = ev[j].cost;
	if (k < 5)
		return;
	qsort(scratch, k, sizeof(*scratch), cmp_double);
	double best = 1.5, cut = NAN;
	for (size_t i = 3; i + 2 <= k; i++) /* at least 3 shallow and 2 deep */
		if (scratch[i - 1] > 0 && scratch[i] / scratch[i - 1] >= best) {
			best = scratch[i] / scratch[i - 1];
			cut = scratch[i];
		}
	if (isnan(cut))
		return;
	for (size_t j = 0; j < nev; j++)
		ev[j].deep = ev[j].series == 0 && ev[j].cost >= cut;
}

static int by_depth(const void *a, const void *b)
{
	const struct drop_ev *x = *(const struct drop_ev *const *)a,
			     *y = *(const struct drop_ev *const *)b;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->step < y->step ? -1 : x->step > y->step;
}

/* For the page: every drop counted by its place along the run, and the deepest kept (in step
 * order) as dots at their steps, so a long run's drops spread over the whole axis. */
static void keep_drops(struct diag_steps *s, const struct drop_ev *ev, size_t nev)
{
	uint64_t span = s->last_step > s->first_step ? s->last_step - s->first_step : 1;
	s->drop_total = nev;
	for (size_t i = 0; i < nev; i++) {
		uint64_t off = ev[i].step > s->first_step ? ev[i].step - s->first_step : 0;
		size_t b = (size_t)((double)off / (double)span * DIAG_DROP_BINS);
		s->drop_bin[b < DIAG_DROP_BINS ? b : DIAG_DROP_BINS - 1]++;
	}
	const struct drop_ev **p = xmalloc(nev * sizeof(*p));
	for (size_t i = 0; i < nev; i++)
		p[i] = &ev[i];
	size_t k = nev;
	if (k > DIAG_DROPS_KEPT) {
		qsort(p, nev, sizeof(*p), by_depth);
		k = DIAG_DROPS_KEPT;
		/* back to step order */
		for (size_t i = 1; i < k; i++)
			for (size_t j = i; j && p[j - 1]->step > p[j]->step; j--) {
				const struct drop_ev *t = p[j];
				p[j] = p[j - 1];
				p[j - 1] = t;
			}
	}
	for (size_t i = 0; i < k; i++) {
		s->drop_step[i] = p[i]->step;
		s->drop_level[i] = p[i]->level;
	}
	s->drop_nr = k;
	free(p);
}

void diag_find_drops(struct diag_steps *s, struct diag_ctx *x)
{
	size_t nev = 0, cap = 0;
	struct drop_ev *ev = NULL;
	for (size_t i = 0; i < x->n; i++) {
		if (!x->drop[i])
			continue;
		double c = (1.0 / x->rr[i] - 1.0 / x->m[i]) / x->total;
		double xs = isnan(x->st[i]) ? NAN : x->st[i] * (1.0 - x->rr[i] / x->m[i]);
		if (i && x->drop[i - 1] && nev) { /* the same event, one more step */
			struct drop_ev *e = &ev[nev - 1];
			e->cost += c;
			e->xs += xs;
			if (x->rr[i] / x->m[i] < e->depth) {
				e->depth = x->rr[i] / x->m[i];
				e->level = x->rr[i];
			}
			continue;
		}
		ALLOC_GROW(ev, nev + 1, cap);
		ev[nev++] = (struct drop_ev){ x->step[i], x->rr[i] / x->m[i], c, xs, x->rr[i], -1,
					      false };
	}
	if (!nev)
		return;
	keep_drops(s, ev, nev);
	uint64_t *es = xmalloc(nev * sizeof(*es));
	size_t *idx = xmalloc(nev * sizeof(*idx));
	bool *mem = xmalloc(nev * sizeof(*mem));
	uint64_t p0 = 0, t0 = 0, p1 = 0, t1 = 0;

	/* series 0: the chain over all slow steps, when it holds 3 or more and 60 % of them
	 * (random drops by the dozen make short chains by chance) */
	size_t k = pick(ev, nev, 0, es, idx);
	uint64_t span = x->step[x->n - 1] - x->step[0];
	p0 = diag_find_period(es, k, (k * 6 + 9) / 10 > 3 ? (k * 6 + 9) / 10 : 3, span, mem, &t0);
	size_t on = 0;
	for (size_t j = 0; p0 && j < k; j++)
		on += mem[j];
	if (p0 && on >= 3 && on * 10 >= k * 6) {
		for (size_t j = 0; j < k; j++)
			if (mem[j])
				ev[idx[j]].series = 0;
	} else {
		p0 = 0;
	}
	/* series 1: on top of series 0 (its deepest steps and the ones off it), or beside it */
	double base_cost = 0, base_xs = 0;
	if (p0) {
		mark_deep(ev, nev, x->scratch);
		size_t nd = 0;
		for (size_t j = 0; j < nev; j++)
			nd += ev[j].deep;
		k = pick(ev, nev, nd ? 2 : 1, es, idx);
		p1 = diag_find_period(es, k, (k * 6 + 9) / 10 > 3 ? (k * 6 + 9) / 10 : 3, span, mem,
				      &t1);
		size_t on1 = 0, on1_off0 = 0;
		for (size_t j = 0; p1 && j < k; j++) {
			on1 += mem[j];
			on1_off0 += mem[j] && ev[idx[j]].series < 0;
		}
		/* 60 % of the candidates on it, and either some of them off series 0 (beside it)
		 * or its period a multiple of series 0's (on top of it) */
		bool ok = p1 && on1 >= 3 && on1 * 10 >= k * 6 && (on1_off0 || p1 >= 2 * p0 - t0);
		if (!ok) {
			for (size_t j = 0; j < nev; j++)
				ev[j].deep = false;
			p1 = 0;
		} else {
			size_t ks = 0, kx = 0;
			for (size_t j = 0; j < nev; j++)
				if (ev[j].series == 0 && !ev[j].deep)
					x->scratch[ks++] = ev[j].cost;
			base_cost = median_of(x->scratch, ks);
			for (size_t j = 0; j < nev; j++)
				if (ev[j].series == 0 && !ev[j].deep && !isnan(ev[j].xs))
					x->scratch[kx++] = ev[j].xs;
			base_xs = kx ? median_of(x->scratch, kx) : 0;
			for (size_t j = 0; j < k; j++) {
				struct drop_ev *e = &ev[idx[j]];
				if (!mem[j])
					e->deep = false;
				else if (e->series < 0)
					e->series = 1;
			}
		}
	}
	if (p0)
		add_series(s, x, ev, nev, 0, p0, t0, base_cost, base_xs);
	if (p1)
		add_series(s, x, ev, nev, 1, p1, t1, base_cost, base_xs);

	/* off every period: random drops when they cost or are deep, else a GC pause now and
	 * then, named and no fault */
	struct diag_pattern tmp;
	memset(&tmp, 0, sizeof(tmp));
	double *dd = x->scratch, cost = 0, xs_sum = 0, slowest = 1;
	size_t cnt = 0, nxs = 0;
	for (size_t j = 0; j < nev; j++) {
		if (ev[j].series >= 0)
			continue;
		if (!cnt)
			tmp.start_step = ev[j].step;
		tmp.end_step = ev[j].step;
		if (tmp.steps_at_nr < ARRAY_SIZE(tmp.steps_at))
			tmp.steps_at[tmp.steps_at_nr++] = ev[j].step;
		cost += ev[j].cost;
		if (!isnan(ev[j].xs)) {
			xs_sum += ev[j].xs;
			nxs++;
		}
		if (ev[j].depth < slowest)
			slowest = ev[j].depth;
		dd[cnt++] = ev[j].depth;
	}
	if (cnt) {
		double depth = median_of(dd, cnt);
		if (cost >= DIAG_RANDOM_MIN_COST || (cnt >= 3 && depth <= DIAG_DEEP_DROP)) {
			struct diag_pattern *p = diag_add_pattern(s, DP_RANDOM_DROPS);
			if (p) {
				*p = tmp;
				p->kind = DP_RANDOM_DROPS;
				p->count = cnt;
				p->depth = depth;
				p->cost = cost;
				p->off_period = p0;
				p->extra_s = nxs ? xs_sum / (double)nxs : 0;
			}
		} else {
			struct diag_event *e = diag_add_event(s, DE_ISOLATED);
			if (e) {
				e->start_step = tmp.start_step;
				e->end_step = tmp.end_step;
				e->count = cnt;
				memcpy(e->steps_at, tmp.steps_at, sizeof(e->steps_at));
				e->steps_at_nr = tmp.steps_at_nr;
				e->slowest = slowest > 0 ? 1.0 / slowest : 0;
				e->seconds = xs_sum;
				e->cost = cost;
			}
		}
	}
	free(es);
	free(idx);
	free(mem);
	free(ev);
}
