/*
 * stragglers.c: the straggler finder of 'vigil diagnose stragglers' (see stragglers.h). Medians
 * and MADs throughout: one slow host among eight is an outlier the median of the ranks does not
 * follow, and a window's median z ignores the odd slow step that any host has.
 */
#include "stragglers.h"
#include "steps.h"
#include "steps_int.h"
#include "../lib/json.h"

#include <math.h>

struct ent {
	uint64_t step;
	uint32_t id;   /* host index or rank */
	uint32_t line;
	uint32_t host; /* the group: host index, or rank's compressed index */
	double v;
};

static int by_step_id_line(const void *a, const void *b)
{
	const struct ent *p = a, *q = b;
	if (p->step != q->step)
		return p->step < q->step ? -1 : 1;
	if (p->id != q->id)
		return p->id < q->id ? -1 : 1;
	return p->line < q->line ? -1 : p->line > q->line;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t p = *(const uint32_t *)a, q = *(const uint32_t *)b;
	return p < q ? -1 : p > q;
}

static int by_slower(const void *a, const void *b)
{
	const struct diag_straggler *p = a, *q = b;
	return p->slower < q->slower ? 1 : p->slower > q->slower ? -1 : 0;
}

struct hz {
	uint32_t g;
	uint64_t step;
	double z, slower;
};

static int by_median_desc(const void *a, const void *b)
{
	const struct diag_group_dist *x = a, *y = b;
	if (x->q[2] != y->q[2])
		return x->q[2] > y->q[2] ? -1 : 1;
	return x->host < y->host ? -1 : x->host > y->host;
}

/* Each group's spread for the page; the slowest DIAG_DIST_KEPT by median (stragglers first
 * in any case, so none is left off the chart). */
static void group_dists(struct diag_stragglers *out, const struct hz *sorted, const size_t *cnt,
			size_t ng, bool by_rank, const uint32_t *gid)
{
	static const double qs[5] = { 0.10, 0.25, 0.50, 0.75, 0.90 };
	size_t most = 0;
	for (size_t g = 0; g < ng; g++)
		if (cnt[g + 1] - cnt[g] > most)
			most = cnt[g + 1] - cnt[g];
	double *v = xmalloc((most ? most : 1) * sizeof(*v)), *scr = xmalloc((most ? most : 1) *
									  sizeof(*scr));
	struct diag_group_dist *all = xmalloc((ng ? ng : 1) * sizeof(*all));
	size_t na = 0;
	for (size_t g = 0; g < ng; g++) {
		size_t m = cnt[g + 1] - cnt[g];
		if (!m)
			continue;
		struct diag_group_dist *d = &all[na++];
		memset(d, 0, sizeof(*d));
		d->host = by_rank ? gid[g] : (uint32_t)g;
		d->by_rank = by_rank;
		d->n = m;
		for (size_t i = 0; i < m; i++)
			v[i] = sorted[cnt[g] + i].slower;
		for (size_t k = 0; k < 5; k++)
			d->q[k] = diag_quantile(v, m, qs[k], scr);
		for (size_t i = 0; i < out->nr; i++)
			if (out->s[i].host == d->host)
				d->straggler = true;
	}
	qsort(all, na, sizeof(*all), by_median_desc);
	out->dist_total = na;
	/* stragglers first, then the slowest of the rest */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < na && out->dist_nr < DIAG_DIST_KEPT; i++)
			if (all[i].straggler == !pass)
				out->dist[out->dist_nr++] = all[i];
	qsort(out->dist, out->dist_nr, sizeof(*out->dist), by_median_desc);
	free(v);
	free(scr);
	free(all);
}

int diag_stragglers_analyse(const struct diag_rows *rows, struct diag_stragglers *out,
			    struct strbuf *err)
{
	memset(out, 0, sizeof(*out));
	out->rows = rows->nr;
	bool hosts = rows->columns & DROW_HOST, ranks = rows->columns & DROW_RANK;
	out->compute = rows->columns & DROW_COMPUTE;
	if (!hosts && !ranks)
		return error_set(err, "no 'host' or 'rank' column: per-rank rows are needed");
	if (!out->compute && !(rows->columns & DROW_STEP_TIME))
		return error_set(err, "no 'compute_time' or 'step_time' column");
	unsigned need = (out->compute ? DROW_COMPUTE : DROW_STEP_TIME) |
			(ranks ? DROW_RANK : DROW_HOST);
	struct ent *e = xmalloc((rows->nr ? rows->nr : 1) * sizeof(*e));
	size_t n = 0;
	for (size_t i = 0; i < rows->nr; i++) {
		const struct diag_row *r = &rows->v[i];
		if ((r->has & need) != need)
			continue;
		e[n].step = r->step;
		e[n].id = ranks ? r->rank : r->host;
		e[n].line = r->line;
		e[n].host = hosts && (r->has & DROW_HOST) ? r->host : UINT32_MAX;
		e[n].v = out->compute ? r->compute : r->step_time;
		n++;
	}
	/* the last row of each (step, rank) wins: a resumed run did the step again */
	qsort(e, n, sizeof(*e), by_step_id_line);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && e[k - 1].step == e[i].step && e[k - 1].id == e[i].id) {
			e[k - 1] = e[i];
			out->duplicates++;
		} else {
			e[k++] = e[i];
		}
	}
	n = k;
	/* groups: hosts where the rows name them, else ranks (compressed to 0..G) */
	uint32_t *gid = NULL;
	size_t ng = 0;
	bool by_rank = !hosts;
	if (by_rank) {
		gid = xmalloc((n ? n : 1) * sizeof(*gid));
		for (size_t i = 0; i < n; i++)
			gid[i] = e[i].id;
		qsort(gid, n, sizeof(*gid), cmp_u32);
		for (size_t i = 0; i < n; i++)
			if (!ng || gid[ng - 1] != gid[i])
				gid[ng++] = gid[i];
		for (size_t i = 0; i < n; i++) {
			uint32_t *p = bsearch(&e[i].id, gid, ng, sizeof(*gid), cmp_u32);
			e[i].host = (uint32_t)(p - gid);
		}
	} else {
		ng = rows->hosts_nr;
	}
	out->hosts = ng;
	/* per step: robust z of each rank, the median per group */
	struct hz *h = xmalloc((n ? n : 1) * sizeof(*h));
	double *vals = xmalloc((n ? n : 1) * sizeof(*vals)), *tmp = xmalloc((n ? n : 1) * sizeof(*tmp));
	struct ent *byg = xmalloc((n ? n : 1) * sizeof(*byg));
	size_t nh = 0, max_ranks = 0;
	for (size_t a = 0; a < n;) {
		size_t b = a;
		while (b < n && e[b].step == e[a].step)
			b++;
		size_t m = b - a;
		out->steps++;
		if (m > max_ranks)
			max_ranks = m;
		if (m >= 3) {
			out->used_steps++;
			if (!out->first_step && out->used_steps == 1)
				out->first_step = e[a].step;
			out->last_step = e[a].step;
			for (size_t i = 0; i < m; i++)
				vals[i] = e[a + i].v;
			memcpy(tmp, vals, m * sizeof(*tmp));
			double med = diag_median(tmp, m);
			for (size_t i = 0; i < m; i++)
				tmp[i] = fabs(vals[i] - med);
			double sd = 1.4826 * diag_median(tmp, m);
			/* identical ranks have no spread: one percent of the level is the floor, so a
			 * rank a hair slower is not a straggler */
			if (sd < 0.01 * med)
				sd = 0.01 * med;
			if (sd <= 0)
				sd = 1e-9;
			/* group the step's ranks by host (insertion sort: a step has few ranks) */
			memcpy(byg, e + a, m * sizeof(*byg));
			for (size_t i = 1; i < m; i++)
				for (size_t j = i; j && byg[j - 1].host > byg[j].host; j--) {
					struct ent t = byg[j];
					byg[j] = byg[j - 1];
					byg[j - 1] = t;
				}
			for (size_t i = 0; i < m;) {
				size_t j = i;
				while (j < m && byg[j].host == byg[i].host)
					j++;
				if (byg[i].host != UINT32_MAX) {
					for (size_t q = i; q < j; q++)
						tmp[q - i] = (byg[q].v - med) / sd;
					double z = diag_median(tmp, j - i);
					for (size_t q = i; q < j; q++)
						tmp[q - i] = byg[q].v;
					double hv = diag_median(tmp, j - i);
					h[nh++] = (struct hz){ byg[i].host, e[a].step, z,
							       med > 0 ? hv / med - 1 : 0 };
				}
				i = j;
			}
		}
		a = b;
	}
	out->ranks = max_ranks;
	int ret = 0;
	if (out->used_steps < 5) {
		ret = error_set(err, "too few steps to tell: %zu with at least 3 ranks (at least 5 "
				     "needed)", out->used_steps);
		goto out;
	}
	/* per group, its steps in order (counting sort keeps the step order) */
	size_t *cnt = xcalloc(ng + 1, sizeof(*cnt));
	for (size_t i = 0; i < nh; i++)
		cnt[h[i].g + 1]++;
	/* Robust z across the ranks of one step puts the median inside one of two hosts: with
	 * two, either could be the slow one (or neither), so two is "cannot tell", never "no
	 * straggler" */
	{
		size_t seen = 0;
		for (size_t g = 0; g < ng; g++)
			seen += cnt[g + 1] > 0;
		out->hosts = seen;
		if (seen < DIAG_MIN_GROUPS) {
			ret = error_set(err, "%zu %s with times: at least %d are needed to tell a slow "
					     "one from its peers (with two, either could be the slow one)",
					seen, by_rank ? (seen == 1 ? "rank" : "ranks")
						      : (seen == 1 ? "host" : "hosts"),
					DIAG_MIN_GROUPS);
			free(cnt);
			goto out;
		}
	}
	for (size_t g = 0; g < ng; g++)
		cnt[g + 1] += cnt[g];
	struct hz *sorted = xmalloc((nh ? nh : 1) * sizeof(*sorted));
	size_t *pos = xmalloc((ng ? ng : 1) * sizeof(*pos));
	memcpy(pos, cnt, ng * sizeof(*pos));
	for (size_t i = 0; i < nh; i++)
		sorted[pos[h[i].g]++] = h[i];
	size_t W = out->used_steps / 10;
	W = W < 5 ? 5 : W > 50 ? 50 : W;
	out->window = W;
	double *wz = xmalloc(2 * W * sizeof(*wz)), *ws = xmalloc(2 * W * sizeof(*ws)),
	       *slows = xmalloc((nh / W + 2) * sizeof(*slows)), *zs = xmalloc((nh / W + 2) * sizeof(*zs));
	for (size_t g = 0; g < ng; g++) {
		struct hz *p = sorted + cnt[g];
		size_t m = cnt[g + 1] - cnt[g];
		struct diag_straggler st;
		memset(&st, 0, sizeof(st));
		size_t nslow = 0;
		bool last_slow = false;
		size_t nw = m >= W ? m / W : 1; /* the last window takes the tail */
		for (size_t j = 0; j < nw && m; j++) {
			size_t a = j * W, b = j + 1 == nw ? m : a + W;
			for (size_t i = a; i < b; i++) {
				wz[i - a] = p[i].z;
				ws[i - a] = p[i].slower;
			}
			double mz = diag_median(wz, b - a), ms = diag_median(ws, b - a);
			st.windows++;
			last_slow = mz > DIAG_Z_SLOW && ms >= DIAG_SLOW_MIN;
			if (last_slow) {
				if (!nslow)
					st.since_step = p[a].step;
				st.until_step = p[b - 1].step;
				slows[nslow] = ms;
				zs[nslow++] = mz;
			}
		}
		if (!nslow || out->nr >= DIAG_STRAGGLERS_KEPT)
			continue;
		st.host = by_rank ? gid[g] : (uint32_t)g;
		st.by_rank = by_rank;
		st.slow_windows = nslow;
		st.recovered = !last_slow;
		st.slower = diag_median(slows, nslow);
		st.z = diag_median(zs, nslow);
		out->s[out->nr++] = st;
	}
	qsort(out->s, out->nr, sizeof(out->s[0]), by_slower);
	group_dists(out, sorted, cnt, ng, by_rank, gid);
	free(cnt);
	free(sorted);
	free(pos);
	free(wz);
	free(ws);
	free(slows);
	free(zs);
out:
	free(e);
	free(gid);
	free(h);
	free(vals);
	free(tmp);
	free(byg);
	return ret;
}

void diag_straggler_name(const struct diag_straggler *g, const struct diag_rows *rows,
			 struct strbuf *out)
{
	if (g->by_rank)
		strbuf_addf(out, "rank %u", g->host);
	else if (g->host < rows->hosts_nr)
		strbuf_add_clean(out, rows->hosts[g->host]);
}

void diag_stragglers_text(const struct diag_stragglers *s, const struct diag_rows *rows,
			  const char *file, struct strbuf *o)
{
	strbuf_addstr(o, "vigil diagnose stragglers: ");
	strbuf_add_clean(o, file);
	strbuf_addf(o, "\n  %zu steps with at least 3 ranks (%llu to %llu), %zu %s, up to %zu "
		       "ranks a step; %s; windows of %zu steps",
		    s->used_steps, (unsigned long long)s->first_step,
		    (unsigned long long)s->last_step, s->hosts,
		    rows->columns & DROW_HOST ? "hosts" : "ranks (no host column)", s->ranks,
		    s->compute ? "compute_time" : "per-rank step_time", s->window);
	if (rows->garbage)
		strbuf_addf(o, "; %zu garbage row%s skipped (first: %s)", rows->garbage,
			    rows->garbage == 1 ? "" : "s", rows->garbage_why);
	strbuf_addch(o, '\n');
	if (!s->nr) {
		strbuf_addstr(o, "\nno straggler: no host is slower than its peers for a window of "
				 "steps\n");
		return;
	}
	for (size_t i = 0; i < s->nr; i++) {
		const struct diag_straggler *g = &s->s[i];
		strbuf_addch(o, '\n');
		diag_straggler_name(g, rows, o);
		strbuf_addf(o, ": %.1f%% slower than the median rank (robust z %.1f) since step %llu",
			    100 * g->slower, g->z, (unsigned long long)g->since_step);
		if (g->recovered)
			strbuf_addf(o, ", until step %llu (recovered)",
				    (unsigned long long)g->until_step);
		strbuf_addf(o, "; slow in %zu of %zu windows\n", g->slow_windows, g->windows);
	}
	strbuf_addstr(o, "  next: 'vigil check' on the host (GPU clocks and throttle reasons, "
			 "other processes, PCIe); drain it if it stays slow\n");
}

void diag_stragglers_json(const struct diag_stragglers *s, const struct diag_rows *rows,
			  const char *file, struct strbuf *out)
{
	struct json_writer w;
	struct strbuf name = STRBUF_INIT;
	json_writer_init(&w, out, true);
	json_open_top(&w);
	json_key(&w, "file");
	json_string(&w, file);
	json_key(&w, "verdict");
	json_string(&w, s->nr ? "stragglers" : "healthy");
	json_key(&w, "format");
	json_string(&w, diag_format_name(rows->format));
	json_key(&w, "rows");
	json_uint(&w, rows->nr);
	json_key(&w, "garbage");
	json_uint(&w, rows->garbage);
	json_key(&w, "steps");
	json_uint(&w, s->used_steps);
	json_key(&w, "hosts");
	json_uint(&w, s->hosts);
	json_key(&w, "ranks");
	json_uint(&w, s->ranks);
	json_key(&w, "metric");
	json_string(&w, s->compute ? "compute_time" : "step_time");
	json_key(&w, "window");
	json_uint(&w, s->window);
	json_key(&w, "stragglers");
	json_open_array(&w);
	for (size_t i = 0; i < s->nr; i++) {
		const struct diag_straggler *g = &s->s[i];
		json_open_object(&w);
		strbuf_reset(&name);
		if (g->by_rank) {
			json_key(&w, "rank");
			json_uint(&w, g->host);
		} else {
			json_key(&w, "host");
			json_string(&w, g->host < rows->hosts_nr ? rows->hosts[g->host] : "");
		}
		json_key(&w, "slower_pct");
		json_fixed(&w, 100 * g->slower, 1);
		json_key(&w, "z");
		json_fixed(&w, g->z, 2);
		json_key(&w, "since_step");
		json_uint(&w, g->since_step);
		json_key(&w, "until_step");
		json_uint(&w, g->until_step);
		json_key(&w, "recovered");
		json_bool(&w, g->recovered);
		json_key(&w, "slow_windows");
		json_uint(&w, g->slow_windows);
		json_key(&w, "windows");
		json_uint(&w, g->windows);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
	strbuf_release(&name);
}
