/* sweep.c: vigil sim's replicas, sweeps and recommendations (sweep.h, docs/SIM.md). */
#include "sweep.h"

#include "../lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sweep_options[SIM_SWEEP_NR] = {
	[SIM_SWEEP_CKPT] = "checkpoint-every", [SIM_SWEEP_SPARES] = "spares",
	[SIM_SWEEP_GPUS] = "gpus",
};
static const char *const sweep_keys[SIM_SWEEP_NR] = {
	[SIM_SWEEP_CKPT] = "checkpoint_every_s", [SIM_SWEEP_SPARES] = "spares",
	[SIM_SWEEP_GPUS] = "gpus",
};

const char *sim_sweep_option(enum sim_sweep_param k)
{
	return k < SIM_SWEEP_NR ? sweep_options[k] : "?";
}

const char *sim_sweep_key(enum sim_sweep_param k)
{
	return k < SIM_SWEEP_NR ? sweep_keys[k] : "?";
}

void sim_study_init(struct sim_study *st)
{
	memset(st, 0, sizeof(*st));
	st->replicas = 1;
	st->spares_risk = 0.01;
	st->rec_ckpt_s = NAN;
	st->rec_spares = -1;
}

bool sim_study_extended(const struct sim_study *st)
{
	bool any = st->replicas > 1 || st->risk_given;
	for (int k = 0; k < SIM_SWEEP_NR; k++)
		any |= st->sweeps[k].on;
	return any;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The values' bounds: as the options' own (src/cmd/sim.c). */
static const double lo_of[SIM_SWEEP_NR] = { 0.001, 0, 1 };
static const double hi_of[SIM_SWEEP_NR] = { 1e7, 100000, 10000000 };

int sim_sweep_parse(struct sim_study *st, const char *arg, struct strbuf *err)
{
	size_t nlen = strcspn(arg, "=");
	int k = 0;
	while (k < SIM_SWEEP_NR && (strlen(sweep_options[k]) != nlen ||
				    strncmp(arg, sweep_options[k], nlen)))
		k++;
	if (k == SIM_SWEEP_NR) {
		strbuf_addstr(err, "--sweep wants checkpoint-every[=LIST], spares=LIST or "
			      "gpus=LIST, not '");
		strbuf_add_excerpt(err, arg, 64);
		strbuf_addch(err, '\'');
		return -1;
	}
	struct sim_sweep *sw = &st->sweeps[k];
	if (sw->on) {
		strbuf_addf(err, "--sweep %s is given twice", sweep_options[k]);
		return -1;
	}
	sw->on = true;
	if (!arg[nlen]) {
		if (k != SIM_SWEEP_CKPT) {
			strbuf_addf(err, "--sweep %s wants a list: %s=A,B,...", sweep_options[k],
				    sweep_options[k]);
			return -1;
		}
		sw->automatic = true; /* the values come with Young/Daly's interval */
		return 0;
	}
	const char *s = arg + nlen + 1;
	for (;;) {
		size_t len = strcspn(s, ",");
		char one[64];
		double v;
		uint64_t u;
		bool ok = len > 0 && len < sizeof(one);
		if (ok) {
			memcpy(one, s, len);
			one[len] = '\0';
			ok = k == SIM_SWEEP_CKPT ? parse_double(one, &v)
						 : (parse_u64(one, &u) && (v = (double)u, true));
			ok = ok && v >= lo_of[k] && v <= hi_of[k];
		}
		if (!ok) {
			strbuf_addf(err, "--sweep %s wants %s from %g to %g, comma separated, not '",
				    sweep_options[k], k == SIM_SWEEP_CKPT ? "numbers" : "whole numbers",
				    lo_of[k], hi_of[k]);
			strbuf_add_excerpt(err, s, len < 64 ? len : 64);
			strbuf_addch(err, '\'');
			return -1;
		}
		if (sw->nr == SIM_SWEEP_VALUES_MAX) {
			strbuf_addf(err, "--sweep %s: at most %d values", sweep_options[k],
				    SIM_SWEEP_VALUES_MAX);
			return -1;
		}
		sw->values[sw->nr++] = v;
		if (!s[len])
			break;
		s += len + 1;
	}
	qsort(sw->values, sw->nr, sizeof(double), cmp_double);
	size_t n = 0;
	for (size_t i = 0; i < sw->nr; i++)
		if (!n || sw->values[i] != sw->values[n - 1])
			sw->values[n++] = sw->values[i];
	sw->nr = n;
	return 0;
}

int sim_study_check(const struct sim_study *st, const struct sim_params *p, struct strbuf *err)
{
	const struct sim_sweep *g = &st->sweeps[SIM_SWEEP_GPUS], *c = &st->sweeps[SIM_SWEEP_CKPT];
	for (size_t i = 0; i < g->nr; i++)
		if ((unsigned)g->values[i] % p->gpus_per_node) {
			strbuf_addf(err, "--sweep gpus: %g is not a whole number of nodes of %u GPUs",
				    g->values[i], p->gpus_per_node);
			return -1;
		}
	for (size_t i = 0; i < c->nr; i++)
		if (c->values[i] < p->step_s) {
			strbuf_addf(err, "--sweep checkpoint-every: %g is shorter than one step "
				    "(%g s)", c->values[i], p->step_s);
			return -1;
		}
	if (c->automatic && !(p->checkpoint_cost_s > 0)) {
		strbuf_addstr(err, "--sweep checkpoint-every around Young/Daly wants a "
			      "--checkpoint-cost above 0 (give the values: checkpoint-every=LIST)");
		return -1;
	}
	return 0;
}

/* ---- statistics ---- */

double sim_t975(unsigned n)
{
	static const double t[] = { 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
				    2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
				    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
				    2.060, 2.056, 2.052, 2.048, 2.045, 2.042 };
	if (n < 2)
		return 0;
	unsigned df = n - 1;
	if (df <= ARRAY_SIZE(t))
		return t[df - 1];
	/* Cornish-Fisher's expansion about the normal's 1.96: within 0.001 from 30 on */
	double z = 1.959964, d = df;
	return z + (z * z * z + z) / (4 * d) +
	       (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

static struct sim_stat stat_of(const double *x, unsigned n, double lo, double hi)
{
	struct sim_stat s = { 0, 0, 0 };
	for (unsigned i = 0; i < n; i++)
		s.mean += x[i];
	s.mean /= n;
	double ss = 0;
	for (unsigned i = 0; i < n; i++)
		ss += (x[i] - s.mean) * (x[i] - s.mean);
	double half = n > 1 ? sim_t975(n) * sqrt(ss / (n - 1)) / sqrt(n) : 0;
	s.lo = s.mean - half < lo ? lo : s.mean - half;
	s.hi = s.mean + half > hi ? hi : s.mean + half;
	return s;
}

static unsigned round_mean(uint64_t sum, unsigned n)
{
	return (unsigned)((sum + n / 2) / n);
}

void sim_summarise(const struct sim_result *rs, unsigned n, struct sim_summary *s)
{
	double value = s->value;
	memset(s, 0, sizeof(*s));
	s->value = value;
	s->replicas = n;
	if (n == 1) { /* the run itself, not a mean of one (the same bytes as without) */
		s->mean = rs[0];
	} else {
		struct sim_result *m = &s->mean;
		uint64_t inter = 0, req = 0, rst = 0, chk = 0, steps = 0, flt = 0,
			 cls[SIM_CLASSES_MAX] = { 0 };
		*m = rs[0];
		m->productive_s = m->ettr = m->goodput = 0;
		for (int c = 0; c < SIM_CAUSE_NR; c++)
			m->lost_s[c] = 0;
		m->spares_used_max = 0;
		for (unsigned i = 0; i < n; i++) {
			const struct sim_result *r = &rs[i];
			m->productive_s += r->productive_s / n;
			m->ettr += r->ettr / n;
			m->goodput += r->goodput / n;
			for (int c = 0; c < SIM_CAUSE_NR; c++)
				m->lost_s[c] += r->lost_s[c] / n;
			if (r->spares_used_max > m->spares_used_max)
				m->spares_used_max = r->spares_used_max;
			inter += r->interruptions;
			req += r->requeues;
			rst += r->restarts;
			chk += r->check_rounds;
			flt += r->faults;
			steps += r->steps;
			for (int c = 0; c < SIM_CLASSES_MAX; c++)
				cls[c] += r->by_class[c];
		}
		m->interruptions = round_mean(inter, n);
		m->requeues = round_mean(req, n);
		m->restarts = round_mean(rst, n);
		m->check_rounds = round_mean(chk, n);
		m->faults = round_mean(flt, n);
		m->steps = (steps + n / 2) / n;
		for (int c = 0; c < SIM_CLASSES_MAX; c++)
			m->by_class[c] = round_mean(cls[c], n);
	}
	double *x = xcalloc(n, sizeof(double));
	for (unsigned i = 0; i < n; i++)
		x[i] = rs[i].ettr;
	s->ettr = stat_of(x, n, 0, 1);
	for (unsigned i = 0; i < n; i++)
		x[i] = rs[i].goodput;
	s->goodput = stat_of(x, n, 0, 1);
	for (unsigned i = 0; i < n; i++)
		x[i] = rs[i].interruptions;
	s->interruptions = stat_of(x, n, 0, INFINITY);
	free(x);
	for (unsigned i = 0; i < n; i++) {
		s->spares_used[i] = rs[i].spares_used_max;
		s->ran_short[i] = rs[i].requeues > 0;
		s->short_runs += s->ran_short[i];
	}
}

/* ---- recommendations ---- */

/* The interval the world runs: whole steps (sim.c rounds the same way). */
static double effective_interval(double every, double step)
{
	double k = llround(every / step);
	return (k < 1 ? 1 : k) * step;
}

double sim_recommend_interval(const struct sim_sweep *sw, bool *at_edge)
{
	*at_edge = false;
	if (!sw->nr)
		return NAN;
	size_t b = 0;
	for (size_t i = 1; i < sw->nr; i++)
		if (sw->rows[i].ettr.mean > sw->rows[b].ettr.mean)
			b = i;
	*at_edge = sw->nr > 1 && (b == 0 || b == sw->nr - 1);
	double best = sw->rows[b].value;
	size_t lo = b >= 2 ? b - 2 : 0, hi = b + 2 < sw->nr ? b + 2 : sw->nr - 1;
	if (hi - lo < 2)
		return best;
	/* least squares of loss = a u + b T + c, u = 1/T: the normal equations, 3 x 3 */
	double A[3][4] = { { 0 } };
	for (size_t i = lo; i <= hi; i++) {
		double T = sw->rows[i].value, f[3] = { 1 / T, T, 1 },
		       y = 1 - sw->rows[i].ettr.mean;
		for (int r = 0; r < 3; r++) {
			for (int c = 0; c < 3; c++)
				A[r][c] += f[r] * f[c];
			A[r][3] += f[r] * y;
		}
	}
	for (int c = 0; c < 3; c++) { /* Gauss-Jordan with partial pivoting */
		int piv = c;
		for (int r = c + 1; r < 3; r++)
			if (fabs(A[r][c]) > fabs(A[piv][c]))
				piv = r;
		if (fabs(A[piv][c]) < 1e-300)
			return best;
		for (int j = 0; j < 4; j++) {
			double t = A[c][j];
			A[c][j] = A[piv][j];
			A[piv][j] = t;
		}
		for (int r = 0; r < 3; r++) {
			if (r == c)
				continue;
			double f = A[r][c] / A[c][c];
			for (int j = 0; j < 4; j++)
				A[r][j] -= f * A[c][j];
		}
	}
	double a = A[0][3] / A[0][0], bb = A[1][3] / A[1][1];
	if (!(a > 0) || !(bb > 0))
		return best;
	double t = sqrt(a / bb), tlo = sw->rows[lo].value, thi = sw->rows[hi].value;
	return t < tlo ? tlo : t > thi ? thi : t;
}

/* The fewest K whose share of replicas that would have run short is at most the risk: a
 * replica that used u spares in one vigil run runs short with fewer than u; one that ran short
 * needed more than the spares it had (how many more is not known). */
long sim_recommend_spares(const struct sim_study *st, unsigned spares)
{
	const struct sim_sweep *sw = &st->sweeps[SIM_SWEEP_SPARES];
	double risk = st->spares_risk;
	if (sw->on) {
		for (size_t i = 0; i < sw->nr; i++)
			if (sw->rows[i].short_runs <= risk * sw->rows[i].replicas + 1e-9)
				return (long)sw->values[i];
		return -1;
	}
	const struct sim_summary *s = &st->base;
	for (unsigned k = 0; k <= spares; k++) {
		unsigned shortk = 0;
		for (unsigned i = 0; i < s->replicas; i++)
			shortk += s->ran_short[i] || (k < spares && s->spares_used[i] > k);
		if (shortk <= risk * s->replicas + 1e-9)
			return k;
	}
	return -1; /* more than the spares run: sweep them, or run with more */
}

/* ---- the runs ---- */

static int run_set(const struct sim_params *p, const struct sim_model *m, unsigned n,
		   struct sim_result *rs, struct sim_summary *s, struct strbuf *err)
{
	struct sim_params q = *p;
	for (unsigned i = 0; i < n; i++) {
		q.seed = p->seed + i; /* wraps at 2^64: still a seed */
		if (sim_run(&q, m, &rs[i], err) < 0)
			return -1;
	}
	sim_summarise(rs, n, s);
	return 0;
}

int sim_study_run(struct sim_study *st, const struct sim_params *p, const struct sim_model *m,
		  struct strbuf *err)
{
	unsigned n = st->replicas ? st->replicas : 1;
	struct sim_result *rs = xcalloc(n, sizeof(*rs));
	int ret = -1;
	if (run_set(p, m, n, rs, &st->base, err) < 0)
		goto out;
	struct sim_sweep *ck = &st->sweeps[SIM_SWEEP_CKPT];
	if (ck->automatic) { /* Young/Daly's interval x 2^(k/2), in whole steps */
		double yd = st->base.mean.young_daly_s;
		ck->nr = 0;
		for (int k = -SIM_SWEEP_AUTO_STEPS; k <= SIM_SWEEP_AUTO_STEPS; k++)
			ck->values[ck->nr++] = yd * pow(2, k / 2.0);
	}
	/* the intervals the world runs (whole steps), for the fit: once each */
	size_t nr = 0;
	for (size_t i = 0; i < ck->nr; i++) {
		double v = effective_interval(ck->values[i], p->step_s);
		if (!nr || v != ck->values[nr - 1])
			ck->values[nr++] = v;
	}
	ck->nr = nr;
	for (int k = 0; k < SIM_SWEEP_NR; k++) {
		struct sim_sweep *sw = &st->sweeps[k];
		for (size_t i = 0; i < sw->nr; i++) {
			struct sim_params q = *p;
			if (k == SIM_SWEEP_CKPT)
				q.checkpoint_every_s = sw->values[i];
			else if (k == SIM_SWEEP_SPARES)
				q.spares = (unsigned)sw->values[i];
			else
				q.gpus = (unsigned)sw->values[i];
			sw->rows[i].value = sw->values[i];
			if (run_set(&q, m, n, rs, &sw->rows[i], err) < 0) {
				strbuf_addf(err, " (--sweep %s=%g)", sweep_options[k], sw->values[i]);
				goto out;
			}
		}
	}
	if (ck->on)
		st->rec_ckpt_s = sim_recommend_interval(ck, &st->rec_ckpt_at_edge);
	st->rec_spares = sim_recommend_spares(st, p->spares);
	ret = 0;
out:
	free(rs);
	return ret;
}

/* ---- outputs ---- */

static void ci_json(struct json_writer *w, const char *key, const struct sim_stat *s, int dec)
{
	json_key(w, key);
	json_open_array(w);
	json_fixed(w, s->lo, dec);
	json_fixed(w, s->hi, dec);
	json_close_array(w);
}

static double share(unsigned k, unsigned n)
{
	return n ? (double)k / n : 0;
}

void sim_study_json_recommended(struct json_writer *w, const struct sim_study *st)
{
	if (isfinite(st->rec_ckpt_s)) /* only from a sweep: never a guess */
		json_fixed(w, st->rec_ckpt_s, 1);
	else
		json_null(w);
}

static void row_json(struct json_writer *w, enum sim_sweep_param k, const struct sim_summary *s)
{
	const struct sim_result *m = &s->mean;
	json_open_object(w);
	json_key(w, "parameter");
	json_string(w, sweep_keys[k]);
	json_key(w, "value");
	json_double(w, s->value);
	json_key(w, "ettr");
	json_fixed(w, m->ettr, 6);
	if (s->replicas > 1)
		ci_json(w, "ettr_ci95", &s->ettr, 6);
	json_key(w, "goodput");
	json_fixed(w, m->goodput, 6);
	if (s->replicas > 1)
		ci_json(w, "goodput_ci95", &s->goodput, 6);
	json_key(w, "interruptions");
	json_fixed(w, s->interruptions.mean, 2);
	if (s->replicas > 1)
		ci_json(w, "interruptions_ci95", &s->interruptions, 2);
	json_key(w, "lost_seconds_by_cause");
	json_open_object(w);
	for (int c = 0; c < SIM_CAUSE_NR; c++) {
		json_key(w, sim_cause_name((enum sim_cause)c));
		json_fixed(w, m->lost_s[c], 1);
	}
	json_close_object(w);
	json_key(w, "spares_used_max");
	json_uint(w, m->spares_used_max);
	json_key(w, "spares_exhausted_share");
	json_fixed(w, share(s->short_runs, s->replicas), 4);
	json_key(w, "young_daly_checkpoint_every_s");
	json_fixed(w, m->young_daly_s, 1);
	json_key(w, "mtbf_s");
	json_fixed(w, m->mtbf_s, 1);
	json_close_object(w);
}

void sim_study_json(struct json_writer *w, const struct sim_study *st)
{
	const struct sim_summary *b = &st->base;
	json_key(w, "replicas");
	json_uint(w, b->replicas);
	if (b->replicas > 1) {
		ci_json(w, "ettr_ci95", &b->ettr, 6);
		ci_json(w, "goodput_ci95", &b->goodput, 6);
		ci_json(w, "interruptions_ci95", &b->interruptions, 2);
	}
	json_key(w, "spares_exhausted_share");
	json_fixed(w, share(b->short_runs, b->replicas), 4);
	json_key(w, "spares_risk");
	json_double(w, st->spares_risk);
	json_key(w, "recommended_spares");
	if (st->rec_spares >= 0)
		json_uint(w, (uint64_t)st->rec_spares);
	else
		json_null(w);
	if (st->sweeps[SIM_SWEEP_CKPT].on) {
		json_key(w, "recommended_checkpoint_every_at_edge");
		json_bool(w, st->rec_ckpt_at_edge);
	}
	bool any = false;
	for (int k = 0; k < SIM_SWEEP_NR; k++)
		any |= st->sweeps[k].on;
	if (!any)
		return;
	json_key(w, "sweep");
	json_open_array(w);
	for (int k = 0; k < SIM_SWEEP_NR; k++)
		for (size_t i = 0; i < st->sweeps[k].nr; i++)
			row_json(w, (enum sim_sweep_param)k, &st->sweeps[k].rows[i]);
	json_close_array(w);
}

static void stat_text(struct strbuf *out, const char *name, const struct sim_stat *s,
		      const char *fmt)
{
	strbuf_addf(out, "  %-15s ", name);
	strbuf_addf(out, fmt, s->mean);
	strbuf_addstr(out, "   [");
	strbuf_addf(out, fmt, s->lo);
	strbuf_addstr(out, ", ");
	strbuf_addf(out, fmt, s->hi);
	strbuf_addstr(out, "]\n");
}

void sim_study_text(const struct sim_study *st, const struct sim_params *p, struct strbuf *out)
{
	const struct sim_summary *b = &st->base;
	strbuf_addch(out, '\n');
	if (b->replicas > 1) {
		strbuf_addf(out, "  replicas        %u (seeds %llu to %llu): the figures above are "
			    "means;\n  95 %% intervals (Student's t):\n", b->replicas,
			    (unsigned long long)p->seed,
			    (unsigned long long)(p->seed + b->replicas - 1));
		stat_text(out, "ETTR", &b->ettr, "%.4f");
		stat_text(out, "goodput", &b->goodput, "%.4f");
		stat_text(out, "interruptions", &b->interruptions, "%.1f");
	}
	strbuf_addf(out, "  spares          ran short in %u of %u replica%s; ", b->short_runs,
		    b->replicas, b->replicas == 1 ? "" : "s");
	if (st->rec_spares >= 0)
		strbuf_addf(out, "recommended %ld for a risk of %g %%\n", st->rec_spares,
			    100 * st->spares_risk);
	else
		strbuf_addf(out, "for a risk of %g %%: more than %s (sweep more spares)\n",
			    100 * st->spares_risk,
			    st->sweeps[SIM_SWEEP_SPARES].on ? "the most swept" : "--spares");
	for (int k = 0; k < SIM_SWEEP_NR; k++) {
		const struct sim_sweep *sw = &st->sweeps[k];
		if (!sw->on)
			continue;
		strbuf_addf(out, "\n  sweep %-17s ETTR     95 %% interval       goodput  "
			    "interruptions  spares used  ran short\n", sweep_options[k]);
		for (size_t i = 0; i < sw->nr; i++) {
			const struct sim_summary *s = &sw->rows[i];
			strbuf_addf(out, "    %-20g %.4f  ", s->value, s->ettr.mean);
			if (s->replicas > 1)
				strbuf_addf(out, "[%.4f, %.4f]", s->ettr.lo, s->ettr.hi);
			else
				strbuf_addf(out, "%-16s", "-");
			strbuf_addf(out, "  %.4f  %13.1f  %11u  %u/%u\n", s->goodput.mean,
				    s->interruptions.mean, s->mean.spares_used_max, s->short_runs,
				    s->replicas);
		}
	}
	if (isfinite(st->rec_ckpt_s))
		strbuf_addf(out, "\n  recommended     checkpoint every %.0f s (Young/Daly %.0f s)%s\n",
			    st->rec_ckpt_s, b->mean.young_daly_s,
			    st->rec_ckpt_at_edge ? "; the best was at the sweep's edge: widen it" : "");
}
