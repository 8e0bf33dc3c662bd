/*
 * steps.c: the step-time pattern detector of 'vigil diagnose steps' (see steps.h). Real step
 * times are noisy and heavy-tailed, so every level here is a median and every scale a MAD:
 * single-step drops are outliers against a rolling median, levels come from binary segmentation
 * of block medians with a MAD-scaled penalty, a decline is a Theil-Sen slope, and a period is the
 * most common gap between drops that puts most of them on one grid. docs/DIAGNOSE.md has the
 * thresholds and why.
 */
#include "steps.h"
#include "../lib/json.h"

#include <math.h>

/* ---- the table of REFERENCE.md §9 ---- */

static const struct {
	const char *name, *cause, *action;
} pattern_info[DP_NR] = {
	[DP_HEALTHY] = { "healthy", "", "nothing to do" },
	[DP_FLAT_TENTH] = { "flat-tenth",
			    "InfiniBand hardware (a bad T2/T3 switch), or GPU-NIC PCIe trouble "
			    "('x16 lanes limited' in dmesg)",
			    "run 'vigil fleet check' for PCIe link downgrades and InfiniBand errors, "
			    "then 'vigil net nccl' between hosts to find the slow link" },
	[DP_FLAT_THIRD] = { "flat-third", "GPUDirect RDMA misconfigured on one host",
			    "check GPUDirect RDMA (nvidia-peermem loaded; NCCL_DEBUG=INFO says GDRDMA) "
			    "on every host; 'vigil net nccl' across host pairs finds the one" },
	[DP_FLAT_DEGRADED] = { "flat-degraded",
			       "a degraded InfiniBand link or NIC (NCCL routing around it), or CPU "
			       "throttling",
			       "look for InfiniBand ports below their speed or with errors ('vigil "
			       "check') and CPU frequency limits; 'vigil net nccl' per host pair" },
	[DP_PERIODIC_DROPS] = { "periodic-drops", "checkpointing or evaluation at a fixed interval",
				"match the period with the checkpoint and evaluation intervals; make "
				"checkpoints asynchronous or less frequent" },
	[DP_RANDOM_DROPS] = { "random-drops",
			      "a CPU-heavy process on one host, network blips, or data loader stalls",
			      "run 'vigil diagnose stragglers' on per-rank compute times around the "
			      "drops; look for other processes and data loader waits on the hosts" },
	[DP_SLOW_DECLINE] = { "slow-decline",
			      "Python garbage collection (back to full speed after a restart)",
			      "disable automatic GC (gc.disable(), gc.freeze()) and collect on a "
			      "schedule, on all ranks at the same step" },
	[DP_STEP_DOWN] = { "step-down", "GPU clock throttling (temperature, fans, power supply)",
			   "look at GPU clocks and throttle reasons from the step it changed ('vigil "
			   "check'), then the host's cooling and power; 'vigil diagnose stragglers' "
			   "names the host" },
	[DP_NOISY] = { "noisy", "moderate InfiniBand degradation or a flapping link",
		       "look for InfiniBand link flaps and symbol errors ('vigil check') and run "
		       "'vigil net nccl'" },
};

const char *diag_pattern_name(enum diag_pattern_kind k) { return pattern_info[k].name; }
const char *diag_pattern_cause(enum diag_pattern_kind k) { return pattern_info[k].cause; }
const char *diag_pattern_action(enum diag_pattern_kind k) { return pattern_info[k].action; }

/* ---- robust statistics ---- */

double diag_select(double *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		double pivot = a[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;
		while (i <= j) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i <= j) {
				double t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return a[k];
}

double diag_median(double *a, size_t n)
{
	if (!n)
		return NAN;
	return diag_select(a, n, n / 2);
}

/* the q-quantile of a[0..n) through scratch (a is left as it is) */
static double quantile(const double *a, size_t n, double q, double *scratch)
{
	if (!n)
		return NAN;
	memcpy(scratch, a, n * sizeof(*a));
	size_t k = (size_t)(q * (double)(n - 1) + 0.5);
	return diag_select(scratch, n, k < n ? k : n - 1);
}

/* 1.4826 * MAD: the standard deviation a normal sample would have */
static double robust_sigma(const double *a, size_t n, double *scratch)
{
	if (!n)
		return 0;
	double med = quantile(a, n, 0.5, scratch);
	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(a[i] - med);
	return 1.4826 * diag_median(scratch, n);
}

/* Centred rolling median of window w (clipped at the ends), in O(n w) with a sorted window. */
static void rolling_median(const double *x, size_t n, size_t w, double *out)
{
	double *win = xmalloc((w + 1) * sizeof(*win));
	size_t h = w / 2, len = 0, clo = 0, chi = 0;
	for (size_t i = 0; i < n; i++) {
		size_t lo = i > h ? i - h : 0, hi = i + h + 1 < n ? i + h + 1 : n;
		for (; chi < hi; chi++) { /* insert x[chi] */
			size_t p = len;
			while (p && win[p - 1] > x[chi]) {
				win[p] = win[p - 1];
				p--;
			}
			win[p] = x[chi];
			len++;
		}
		for (; clo < lo; clo++) { /* remove x[clo] */
			size_t a = 0, b = len;
			while (a < b) {
				size_t m = (a + b) / 2;
				if (win[m] < x[clo])
					a = m + 1;
				else
					b = m;
			}
			memmove(win + a, win + a + 1, (len - a - 1) * sizeof(*win));
			len--;
		}
		out[i] = len & 1 ? win[len / 2] : (win[len / 2 - 1] + win[len / 2]) / 2;
	}
	free(win);
}

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
	for (size_t i = 0; i < rows->nr; i++) {
		const struct diag_row *r = &rows->v[i];
		bool same_exec = prev && r->step > prev->step && r->attempt == prev->attempt;
		if (prev && !same_exec) {
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

/* ---- levels: binary segmentation of block medians ---- */

struct seg {
	size_t a, b; /* blocks [a, b) */
};

/* the gain of splitting [a,b) at k under an L2 cost, with prefix sums */
static double split_gain(const double *ps, const double *ps2, size_t a, size_t k, size_t b)
{
	double n1 = (double)(k - a), n2 = (double)(b - k), s1 = ps[k] - ps[a], s2 = ps[b] - ps[k];
	double m1 = s1 / n1, m2 = s2 / n2;
	(void)ps2;
	return n1 * n2 / (n1 + n2) * (m1 - m2) * (m1 - m2);
}

/*
 * Change points of blk[0..nb) (block medians, share of expected): split the segment with the
 * largest gain while the gain beats the penalty and the shift is at least min_shift of the
 * level; segments at least min_len blocks. Sorted positions in cp[], returns how many.
 */
static size_t segment(const double *blk, size_t nb, double sigma, double min_shift,
		      size_t min_len, size_t *cp, size_t max_cp)
{
	double *ps = xmalloc((nb + 1) * sizeof(*ps));
	ps[0] = 0;
	for (size_t i = 0; i < nb; i++)
		ps[i + 1] = ps[i] + blk[i];
	double pen = 4.0 * sigma * sigma * log((double)nb + 1.0) + 1e-12;
	struct seg segs[2 * DIAG_MAX_CHANGES + 2];
	size_t nseg = 1, ncp = 0;
	segs[0] = (struct seg){ 0, nb };
	while (ncp < max_cp) {
		double best = 0;
		size_t bs = 0, bk = 0;
		for (size_t s = 0; s < nseg; s++) {
			size_t a = segs[s].a, b = segs[s].b;
			for (size_t k = a + min_len; k + min_len <= b; k++) {
				double g = split_gain(ps, NULL, a, k, b);
				double m1 = (ps[k] - ps[a]) / (double)(k - a),
				       m2 = (ps[b] - ps[k]) / (double)(b - k);
				double hi = m1 > m2 ? m1 : m2;
				if (g > best && fabs(m1 - m2) >= min_shift * hi) {
					best = g;
					bs = s;
					bk = k;
				}
			}
		}
		if (best <= pen)
			break;
		struct seg old = segs[bs];
		segs[bs] = (struct seg){ old.a, bk };
		segs[nseg++] = (struct seg){ bk, old.b };
		cp[ncp++] = bk;
	}
	free(ps);
	for (size_t i = 1; i < ncp; i++) /* sort (few) */
		for (size_t j = i; j && cp[j - 1] > cp[j]; j--) {
			size_t t = cp[j];
			cp[j] = cp[j - 1];
			cp[j - 1] = t;
		}
	return ncp;
}

/* Theil-Sen slope of (xs, ys): the median of pairwise slopes (all pairs up to 1000 points) */
static double theil_sen(const double *xs, const double *ys, size_t n)
{
	size_t m = n * (n - 1) / 2, k = 0;
	if (!m)
		return 0;
	double *sl = xmalloc(m * sizeof(*sl));
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (xs[j] != xs[i])
				sl[k++] = (ys[j] - ys[i]) / (xs[j] - xs[i]);
	double s = k ? diag_median(sl, k) : 0;
	free(sl);
	return s;
}

/* ---- the patterns ---- */

static struct diag_pattern *add_pattern(struct diag_steps *s, enum diag_pattern_kind k)
{
	if (s->pat_nr >= DIAG_MAX_PATTERNS)
		return NULL;
	struct diag_pattern *p = &s->pat[s->pat_nr++];
	memset(p, 0, sizeof(*p));
	p->kind = k;
	return p;
}

struct ctx {
	size_t n;
	const uint64_t *step;
	const uint32_t *exec;
	const double *rr; /* raw throughput, share of expected */
	const double *c;  /* drops replaced by the local level */
	const double *m;  /* rolling median */
	const bool *drop;
	double total;     /* sum of 1/rr: the run's time in expected steps */
	double *scratch;
};

/* the share of the run's time spent in [a, b) beyond what it would take at level ref */
static double cost_vs(const struct ctx *x, size_t a, size_t b, double ref)
{
	double c = 0;
	for (size_t i = a; i < b; i++) {
		double d = 1.0 / x->c[i] - 1.0 / ref;
		if (d > 0)
			c += d;
	}
	return c / x->total;
}

static void find_drops(struct diag_steps *s, struct ctx *x)
{
	size_t nev = 0, cap = 0;
	uint64_t *ev = NULL;
	double *depth = NULL;
	double dcost = 0;
	size_t dcap = 0;
	for (size_t i = 0; i < x->n; i++) {
		if (!x->drop[i] || (i && x->drop[i - 1]))
			continue;
		ALLOC_GROW(ev, nev + 1, cap);
		ALLOC_GROW(depth, nev + 1, dcap);
		ev[nev] = x->step[i];
		depth[nev] = x->rr[i] / x->m[i];
		nev++;
		if (s->drop_nr < DIAG_DROPS_KEPT) {
			s->drop_step[s->drop_nr] = x->step[i];
			s->drop_level[s->drop_nr++] = x->rr[i];
		}
	}
	if (!nev)
		return;
	bool *on = xcalloc(nev, sizeof(*on));
	uint64_t period = 0;
	size_t on_nr = 0;
	if (nev >= 3) {
		/* candidate periods: the most common gaps between drops; the one that puts the
		 * most drops on one grid (step = phase mod period, give or take a step) wins */
		size_t ng = nev - 1;
		uint64_t *g = xmalloc(ng * sizeof(*g));
		for (size_t i = 0; i < ng; i++)
			g[i] = ev[i + 1] - ev[i];
		for (size_t i = 1; i < ng; i++)
			for (size_t j = i; j && g[j - 1] > g[j]; j--) {
				uint64_t t = g[j];
				g[j] = g[j - 1];
				g[j - 1] = t;
			}
		uint64_t cand[3] = { 0, 0, 0 };
		size_t cand_n[3] = { 0, 0, 0 };
		for (size_t i = 0; i < ng;) {
			size_t j = i;
			while (j < ng && g[j] - g[i] <= (g[i] >= 50 ? 1 : 0))
				j++;
			size_t cnt = j - i;
			for (int c = 0; c < 3; c++)
				if (cnt > cand_n[c]) {
					for (int d = 2; d > c; d--) {
						cand[d] = cand[d - 1];
						cand_n[d] = cand_n[d - 1];
					}
					cand[c] = g[i];
					cand_n[c] = cnt;
					break;
				}
			i = j;
		}
		free(g);
		for (int c = 0; c < 3; c++) {
			uint64_t p = cand[c];
			if (p < 2 || cand_n[c] < 2)
				continue;
			/* the phase: the residue most drops share */
			size_t best_nr = 0;
			uint64_t best_phase = 0;
			for (size_t i = 0; i < nev && i < 64; i++) {
				uint64_t ph = ev[i] % p;
				size_t cnt = 0;
				for (size_t j = 0; j < nev; j++) {
					uint64_t d = (ev[j] + p - ph) % p;
					cnt += d <= 1 || d + 1 >= p;
				}
				if (cnt > best_nr) {
					best_nr = cnt;
					best_phase = ph;
				}
			}
			if (best_nr > on_nr) {
				on_nr = best_nr;
				period = p;
				for (size_t j = 0; j < nev; j++) {
					uint64_t d = (ev[j] + p - best_phase) % p;
					on[j] = d <= 1 || d + 1 >= p;
				}
			}
		}
		if (on_nr < 3 || on_nr * 10 < nev * 6) {
			period = 0;
			on_nr = 0;
			memset(on, 0, nev * sizeof(*on));
		}
	}
	/* the cost of each kind: the time of the drop steps beyond their local level */
	double cost_on = 0, cost_off = 0;
	for (size_t i = 0, e = 0; i < x->n; i++) {
		if (!x->drop[i])
			continue;
		while (e + 1 < nev && ev[e + 1] <= x->step[i])
			e++;
		double d = (1.0 / x->rr[i] - 1.0 / x->m[i]) / x->total;
		if (on[e])
			cost_on += d;
		else
			cost_off += d;
	}
	dcost = cost_on + cost_off;
	(void)dcost;
	for (int kind = 0; kind < 2; kind++) {
		bool periodic = kind == 0;
		size_t cnt = 0;
		double *dd = x->scratch;
		struct diag_pattern tmp;
		memset(&tmp, 0, sizeof(tmp));
		for (size_t j = 0; j < nev; j++) {
			if (on[j] != periodic)
				continue;
			if (!cnt)
				tmp.start_step = ev[j];
			tmp.end_step = ev[j];
			if (tmp.steps_at_nr < ARRAY_SIZE(tmp.steps_at))
				tmp.steps_at[tmp.steps_at_nr++] = ev[j];
			dd[cnt++] = depth[j];
		}
		if (!cnt || (periodic && !period))
			continue;
		double cost = periodic ? cost_on : cost_off;
		/* one or two drops in a long run are life, not a pattern */
		if (!periodic && cnt < 3 && cost < 0.005)
			continue;
		struct diag_pattern *p = add_pattern(s, periodic ? DP_PERIODIC_DROPS : DP_RANDOM_DROPS);
		if (!p)
			break;
		*p = tmp;
		p->kind = periodic ? DP_PERIODIC_DROPS : DP_RANDOM_DROPS;
		p->count = cnt;
		p->depth = diag_median(dd, cnt);
		p->period = periodic ? period : 0;
		p->cost = cost;
	}
	free(on);
	free(ev);
	free(depth);
}

/* The level analysis of one execution [a, b): a slow decline, or change points. */
static void levels(struct diag_steps *s, struct ctx *x, size_t a, size_t b, bool *declined)
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
	double sigma = nb > 2 ? robust_sigma(d, nb - 1, x->scratch) / sqrt(2.0) : 0;
	size_t min_len = nb >= 60 ? 5 : 3;
	size_t cp[DIAG_MAX_CHANGES];
	size_t ncp = segment(blk, nb, sigma, 0.08, min_len, cp, DIAG_MAX_CHANGES);

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
	double slope = nb >= 8 ? theil_sen(bx, blk, nb) : 0;
	for (size_t j = 0; j < nb; j++)
		d[j] = blk[j] - slope * bx[j];
	double icpt = diag_median(d, nb);
	for (size_t j = 0; j < nb; j++)
		res[j] = fabs(blk[j] - (icpt + slope * bx[j]));
	double r_line = diag_median(res, nb);
	double l0 = icpt + slope * bx[0], l1 = icpt + slope * bx[nb - 1];
	double decline = l0 > 0 ? (l0 - l1) / l0 : 0;
	if (nb >= 8 && ncp >= 1 && decline >= 0.15 && r_line <= 1.5 * r_step + 0.01 * l0) {
		struct diag_pattern *p = add_pattern(s, DP_SLOW_DECLINE);
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
			struct diag_pattern *p = add_pattern(s, DP_STEP_DOWN);
			if (!p)
				break;
			p->start_step = p->changed_at = x->step[i];
			p->end_step = x->step[end - 1];
			p->level_before = before;
			p->level = after;
			p->cost = cost_vs(x, i, end, before);
		}
	}
out:
	free(blk);
	free(bx);
	free(d);
	free(res);
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

	scratch = xmalloc(n * sizeof(*scratch));
	m = xmalloc(n * sizeof(*m));
	c = xmalloc(n * sizeof(*c));
	rr = xmalloc(n * sizeof(*rr));
	dres = xmalloc(n * sizeof(*dres));
	drop = xcalloc(n, sizeof(*drop));
	size_t w = n / 3 < 31 ? (n / 3) | 1 : 31;
	rolling_median(x, n, w, m);
	for (size_t i = 0; i < n; i++)
		dres[i] = (x[i] - m[i]) / m[i];
	double sig = robust_sigma(dres, n, scratch);
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
		s->expected = quantile(m, n, 0.95, scratch); /* the run's best sustained level */
	}
	double total = 0;
	for (size_t i = 0; i < n; i++) {
		rr[i] = x[i] / s->expected;
		m[i] /= s->expected;
		c[i] /= s->expected;
		total += 1.0 / rr[i];
	}
	s->median_level = quantile(c, n, 0.5, scratch);
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

	struct ctx cx = { n, step, exec, rr, c, m, drop, total, scratch };
	find_drops(s, &cx);

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
			struct diag_pattern *p = add_pattern(s, k);
			if (p) {
				p->start_step = step[0];
				p->end_step = step[first_end - 1];
				p->level = l0;
				p->cost = cost_vs(&cx, 0, first_end, 1.0);
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
		double q10 = quantile(dres, k, 0.10, scratch), q90 = quantile(dres, k, 0.90, scratch),
		       q95 = quantile(dres, k, 0.95, scratch);
		/* the stamps' ticks are not noise: a spread within two of them is none */
		double tick = s->metric_mfu && !s->mfu_computed ? 0 : 2 * s->resolution_share;
		if (q90 - q10 - tick >= 0.06 && s->median_level >= 0.85) {
			struct diag_pattern *p = add_pattern(s, DP_NOISY);
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

bool diag_steps_healthy(const struct diag_steps *s)
{
	return s->pat_nr == 0;
}

/* ---- output ---- */

static void evidence_text(const struct diag_steps *s, const struct diag_pattern *p,
			  struct strbuf *o)
{
	switch (p->kind) {
	case DP_FLAT_TENTH:
	case DP_FLAT_THIRD:
	case DP_FLAT_DEGRADED:
		strbuf_addf(o, "throughput %.0f%% of expected from step %llu", 100 * p->level,
			    (unsigned long long)p->start_step);
		break;
	case DP_PERIODIC_DROPS:
		strbuf_addf(o, "%zu single-step drops to %.0f%% of the local level, every %llu steps "
			       "from step %llu",
			    p->count, 100 * p->depth, (unsigned long long)p->period,
			    (unsigned long long)p->start_step);
		break;
	case DP_RANDOM_DROPS:
		strbuf_addf(o, "%zu single-step drops to %.0f%% of the local level at irregular "
			       "steps (",
			    p->count, 100 * p->depth);
		for (size_t i = 0; i < p->steps_at_nr; i++)
			strbuf_addf(o, "%s%llu", i ? ", " : "", (unsigned long long)p->steps_at[i]);
		strbuf_addstr(o, p->count > p->steps_at_nr ? ", ...)" : ")");
		break;
	case DP_SLOW_DECLINE:
		strbuf_addf(o, "from %.0f%% to %.0f%% of expected between steps %llu and %llu",
			    100 * p->level_before, 100 * p->level, (unsigned long long)p->start_step,
			    (unsigned long long)p->end_step);
		break;
	case DP_STEP_DOWN:
		strbuf_addf(o, "from %.0f%% to %.0f%% of expected at step %llu",
			    100 * p->level_before, 100 * p->level, (unsigned long long)p->changed_at);
		break;
	case DP_NOISY:
		strbuf_addf(o, "steps spread over %.0f%% of the local level (10th to 90th "
			       "percentile), median %.0f%% of expected",
			    100 * p->spread, 100 * p->level);
		break;
	case DP_HEALTHY:
	case DP_NR:
		break;
	}
	(void)s;
}

void diag_steps_text(const struct diag_steps *s, const struct diag_rows *rows, const char *file,
		     struct strbuf *o)
{
	strbuf_addstr(o, "vigil diagnose steps: ");
	strbuf_add_clean(o, file);
	strbuf_addf(o, "\n  %zu steps (%llu to %llu) from %zu rows (%s)", s->used,
		    (unsigned long long)s->first_step, (unsigned long long)s->last_step, rows->nr,
		    diag_format_name(rows->format));
	if (rows->garbage)
		strbuf_addf(o, "; %zu garbage row%s skipped (first: %s)", rows->garbage,
			    rows->garbage == 1 ? "" : "s", rows->garbage_why);
	if (rows->truncated)
		strbuf_addf(o, "; only the first %u rows read", DIAG_ROWS_MAX);
	strbuf_addch(o, '\n');
	if (s->restarts) {
		strbuf_addf(o, "  %zu restart%s (the last run of each step kept):", s->restarts,
			    s->restarts == 1 ? "" : "s");
		for (size_t i = 0; i < s->restart_nr; i++)
			strbuf_addf(o, "%s step %llu back to %llu (line %u)", i ? "," : "",
				    (unsigned long long)s->restart[i].from_step,
				    (unsigned long long)s->restart[i].to_step, s->restart[i].line);
		strbuf_addch(o, '\n');
	}
	if (s->gaps)
		strbuf_addf(o, "  %zu gap%s, %zu steps missing\n", s->gaps, s->gaps == 1 ? "" : "s",
			    s->missing_steps);
	strbuf_addf(o, "  throughput: %s; expected %.4g %s (%s); median %.0f%% of expected",
		    s->metric_mfu ? (s->mfu_computed ? "MFU from tokens" : "MFU") : "steps per second",
		    s->expected, s->metric_mfu ? "MFU" : "steps/s",
		    s->expected_given ? "given" : "the run's best sustained level",
		    100 * s->median_level);
	if (s->median_step_time > 0)
		strbuf_addf(o, "; median step %.3g s", s->median_step_time);
	strbuf_addch(o, '\n');
	if (s->resolution > 0 && s->resolution_share >= 0.005)
		strbuf_addf(o, "  %s written to %.6g s (%.1f%% of a row's time): a spread within "
			       "two of those is the clock's, not noise\n",
			    s->resolution_of_time ? "times" : "step times", s->resolution,
			    100 * s->resolution_share);
	if (s->backwards)
		strbuf_addf(o, "  the times go backwards at line %u (%zu row%s): those steps have no "
			       "time\n", s->backwards_line, s->backwards, s->backwards == 1 ? "" : "s");
	if (!s->pat_nr) {
		strbuf_addstr(o, "\nhealthy: no pattern found\n");
		if (!s->expected_given)
			strbuf_addstr(o, "  (a run flat below its target looks healthy against itself: "
					 "give --expected-mfu or --expected-step-time)\n");
		return;
	}
	for (size_t i = 0; i < s->pat_nr; i++) {
		const struct diag_pattern *p = &s->pat[i];
		strbuf_addf(o, "\n%s from step %llu: costs %.1f%% of the throughput\n",
			    diag_pattern_name(p->kind), (unsigned long long)p->start_step,
			    100 * p->cost);
		strbuf_addstr(o, "  evidence: ");
		evidence_text(s, p, o);
		strbuf_addf(o, "\n  likely cause: %s\n  next: %s\n", diag_pattern_cause(p->kind),
			    diag_pattern_action(p->kind));
	}
}

void diag_steps_json(const struct diag_steps *s, const struct diag_rows *rows, const char *file,
		     struct strbuf *out)
{
	struct json_writer w;
	struct strbuf ev = STRBUF_INIT;
	json_writer_init(&w, out, true);
	json_open_object(&w);
	json_key(&w, "file");
	json_string(&w, file);
	json_key(&w, "verdict");
	json_string(&w, s->pat_nr ? "patterns" : "healthy");
	json_key(&w, "format");
	json_string(&w, diag_format_name(rows->format));
	json_key(&w, "rows");
	json_uint(&w, rows->nr);
	json_key(&w, "steps");
	json_uint(&w, s->used);
	json_key(&w, "first_step");
	json_uint(&w, s->first_step);
	json_key(&w, "last_step");
	json_uint(&w, s->last_step);
	json_key(&w, "garbage");
	json_open_object(&w);
	json_key(&w, "count");
	json_uint(&w, rows->garbage);
	json_key(&w, "lines");
	json_open_array(&w);
	for (size_t i = 0; i < rows->garbage_line_nr; i++)
		json_uint(&w, rows->garbage_line[i]);
	json_close_array(&w);
	json_key(&w, "first");
	if (rows->garbage)
		json_string(&w, rows->garbage_why);
	else
		json_null(&w);
	json_close_object(&w);
	json_key(&w, "truncated");
	json_bool(&w, rows->truncated);
	json_key(&w, "restarts");
	json_uint(&w, s->restarts);
	json_key(&w, "restarted");
	json_open_array(&w);
	for (size_t i = 0; i < s->restart_nr; i++) {
		json_open_object(&w);
		json_key(&w, "line");
		json_uint(&w, s->restart[i].line);
		json_key(&w, "from_step");
		json_uint(&w, s->restart[i].from_step);
		json_key(&w, "to_step");
		json_uint(&w, s->restart[i].to_step);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "gaps");
	json_uint(&w, s->gaps);
	json_key(&w, "missing_steps");
	json_uint(&w, s->missing_steps);
	json_key(&w, "metric");
	json_string(&w, s->metric_mfu ? "mfu" : "steps_per_s");
	json_key(&w, "expected");
	json_double(&w, s->expected);
	json_key(&w, "expected_source");
	json_string(&w, s->expected_given ? "given" : "best_sustained");
	json_key(&w, "median_level");
	json_fixed(&w, s->median_level, 4);
	json_key(&w, "noise");
	json_fixed(&w, s->noise, 4);
	json_key(&w, "median_step_time");
	if (s->median_step_time > 0)
		json_double(&w, s->median_step_time);
	else
		json_null(&w);
	json_key(&w, "resolution");
	if (s->resolution > 0)
		json_double(&w, s->resolution);
	else
		json_null(&w);
	json_key(&w, "backwards");
	json_uint(&w, s->backwards);
	json_key(&w, "patterns");
	json_open_array(&w);
	for (size_t i = 0; i < s->pat_nr || (!s->pat_nr && i == 0); i++) {
		const struct diag_pattern *p = s->pat_nr ? &s->pat[i] : NULL;
		json_open_object(&w);
		json_key(&w, "pattern");
		json_string(&w, diag_pattern_name(p ? p->kind : DP_HEALTHY));
		if (p) {
			json_key(&w, "start_step");
			json_uint(&w, p->start_step);
			json_key(&w, "end_step");
			json_uint(&w, p->end_step);
		}
		json_key(&w, "cost");
		json_fixed(&w, p ? p->cost : 0, 4);
		if (p && p->kind == DP_PERIODIC_DROPS) {
			json_key(&w, "period");
			json_uint(&w, p->period);
		}
		if (p && p->kind == DP_STEP_DOWN) {
			json_key(&w, "changed_at");
			json_uint(&w, p->changed_at);
		}
		json_key(&w, "evidence");
		json_open_object(&w);
		if (p) {
			switch (p->kind) {
			case DP_PERIODIC_DROPS:
			case DP_RANDOM_DROPS:
				json_key(&w, "drops");
				json_uint(&w, p->count);
				json_key(&w, "depth");
				json_fixed(&w, p->depth, 4);
				json_key(&w, "steps");
				json_open_array(&w);
				for (size_t k = 0; k < p->steps_at_nr; k++)
					json_uint(&w, p->steps_at[k]);
				json_close_array(&w);
				break;
			case DP_SLOW_DECLINE:
			case DP_STEP_DOWN:
				json_key(&w, "level_before");
				json_fixed(&w, p->level_before, 4);
				json_key(&w, "level_after");
				json_fixed(&w, p->level, 4);
				break;
			case DP_NOISY:
				json_key(&w, "spread");
				json_fixed(&w, p->spread, 4);
				json_key(&w, "level");
				json_fixed(&w, p->level, 4);
				break;
			default:
				json_key(&w, "level");
				json_fixed(&w, p->level, 4);
				break;
			}
			strbuf_reset(&ev);
			evidence_text(s, p, &ev);
			json_key(&w, "text");
			json_string(&w, ev.buf);
		}
		json_close_object(&w);
		json_key(&w, "cause");
		json_string(&w, diag_pattern_cause(p ? p->kind : DP_HEALTHY));
		json_key(&w, "action");
		json_string(&w, diag_pattern_action(p ? p->kind : DP_HEALTHY));
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "change_points");
	json_open_array(&w);
	for (size_t i = 0; i < s->change_nr; i++) {
		json_open_object(&w);
		json_key(&w, "step");
		json_uint(&w, s->change[i].step);
		json_key(&w, "before");
		json_fixed(&w, s->change[i].before, 4);
		json_key(&w, "after");
		json_fixed(&w, s->change[i].after, 4);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
	strbuf_release(&ev);
}
