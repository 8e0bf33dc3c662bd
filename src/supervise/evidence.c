/*
 * evidence.c: judging the stacks of every host of a hung or slow attempt (rules in evidence.h
 * and docs/SUPERVISOR.md, "Evidence"). Pure: host outputs in, groups, suspects, a summary and
 * the JSON of evidence.json out. Every text taken from the outputs is cleaned before it is
 * kept, and bounded: a stack is read for its first STACK_MAX bytes, a thread for MAX_FRAMES
 * frames.
 */
#include "evidence_int.h"
#include "../lib/json.h"

#include <math.h>
#include <stdarg.h>

void evidence_init(struct evidence *e)
{
	memset(e, 0, sizeof(*e));
	e->py_majority = e->native_majority = -1;
	strbuf_init(&e->summary, 0);
	strbuf_init(&e->json, 0);
}

static void groups_free(struct evidence_group *g, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(g[i].signature);
		free(g[i].top);
		free(g[i].ranks);
		strlist_release(&g[i].hosts);
	}
	free(g);
}

void evidence_release(struct evidence *e)
{
	for (size_t i = 0; i < e->hosts_nr; i++) {
		free(e->hosts[i].host);
		free(e->hosts[i].why);
		free(e->hosts[i].doubt);
	}
	free(e->hosts);
	for (size_t i = 0; i < e->ranks_nr; i++)
		free(e->ranks[i].host);
	free(e->ranks);
	groups_free(e->py, e->py_nr);
	groups_free(e->native, e->native_nr);
	free(e->missing);
	for (size_t i = 0; i < e->suspects_nr; i++) {
		free(e->suspects[i].host);
		strlist_release(&e->suspects[i].reasons);
	}
	free(e->suspects);
	strlist_release(&e->silent_first);
	strlist_release(&e->suspect_hosts);
	strlist_release(&e->doubtful_hosts);
	strbuf_release(&e->summary);
	strbuf_release(&e->json);
	evidence_init(e);
}

char *evidence_clean_dup(const char *s, size_t max)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_excerpt(&sb, s, max);
	return strbuf_detach(&sb, NULL);
}

/* ---- reading the hosts' outputs ---- */

struct staged {
	struct evidence_rank r;
	char *py_sig, *py_top, *nat_sig, *nat_top;
};

struct work {
	struct staged *s;
	size_t nr, alloc;
	bool lines; /* a hang: the innermost Python frame keeps its line (evidence.h) */
};

static struct evidence_rank *find_rank(struct work *w, long rank)
{
	for (size_t i = 0; i < w->nr; i++)
		if (w->s[i].r.rank == rank)
			return &w->s[i].r;
	return NULL;
}

static bool get_count(const struct json_value *o, const char *key, double max, double *out)
{
	double d;
	if (!o || !json_get_number(o, key, &d) || !(d >= 0) || d > max)
		return false;
	*out = d;
	return true;
}

static void host_status(struct evidence_host_status *h, bool answered, const char *fmt, ...)
	PRINTF_LIKE(3, 4);
static void host_status(struct evidence_host_status *h, bool answered, const char *fmt, ...)
{
	h->answered = answered;
	if (!fmt)
		return;
	/* notes add up, each once, within a bound (a host with a thousand bad entries) */
	struct strbuf sb = STRBUF_INIT, one = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&one, fmt, ap);
	va_end(ap);
	if (h->why && (strstr(h->why, one.buf) || strlen(h->why) > 400)) {
		strbuf_release(&one);
		return;
	}
	if (h->why)
		strbuf_addf(&sb, "%s; ", h->why);
	strbuf_addstr(&sb, one.buf);
	free(h->why);
	h->why = strbuf_detach(&sb, NULL);
	strbuf_release(&one);
}

/* A host's evidence is doubtful: why, each reason once, bounded. */
static void host_doubt(struct evidence_host_status *h, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void host_doubt(struct evidence_host_status *h, const char *fmt, ...)
{
	struct strbuf one = STRBUF_INIT, sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&one, fmt, ap);
	va_end(ap);
	if (h->doubt && (strstr(h->doubt, one.buf) || strlen(h->doubt) > 400)) {
		strbuf_release(&one);
		return;
	}
	if (h->doubt)
		strbuf_addf(&sb, "%s; ", h->doubt);
	strbuf_add(&sb, one.buf, one.len);
	free(h->doubt);
	h->doubt = strbuf_detach(&sb, NULL);
	strbuf_release(&one);
}

/* A rank's evidence made unknown: no samples, no stacks (a claimant we cannot tell apart). */
static void make_doubt(struct staged *s)
{
	s->r.doubt = true;
	s->r.samples = 0;
	memset(s->r.states, 0, sizeof(s->r.states));
	s->r.busy = s->r.cpu_s = 0;
	free(s->py_sig);
	free(s->py_top);
	free(s->nat_sig);
	free(s->nat_top);
	s->py_sig = s->py_top = s->nat_sig = s->nat_top = NULL;
}

static void read_host(struct work *w, struct evidence_host_status *h,
		      const struct evidence_host *in, struct evidence_host_status *all, size_t all_nr)
{
	struct strbuf err = STRBUF_INIT, q = STRBUF_INIT;
	struct json_value *v = NULL;
	if (!in->output) {
		host_status(h, false, "no output");
		return;
	}
	if (in->len > EVIDENCE_OUTPUT_MAX) {
		host_status(h, false, "an output of %zu bytes, over the limit of %u", in->len,
			    EVIDENCE_OUTPUT_MAX);
		return;
	}
	v = json_parse(in->output, in->len, &err);
	const struct json_value *ranks = v ? json_get(v, "ranks") : NULL;
	if (!v || v->type != JSON_OBJECT || !ranks || ranks->type != JSON_ARRAY) {
		strbuf_add_excerpt(&q, v ? "no \"ranks\" array" : err.buf, 120);
		host_status(h, false, "not the JSON of vigil stacks (%s)", q.buf);
		goto out;
	}
	host_status(h, true, NULL);
	/* what the ranks were checked against (vigil stacks; docs/SECURITY.md) */
	const struct json_value *ign = json_get(v, "ignored");
	const char *job = json_get_string(v, "job");
	if (!job || !*job)
		host_doubt(h, "its answer does not say which job its ranks were checked against");
	else if (!json_get_string(v, "step"))
		host_doubt(h, "the attempt's step was not known there: its ranks are not tied to it");
	if (ign && ign->type == JSON_ARRAY && ign->nr) {
		struct strbuf iq = STRBUF_INIT;
		if (ign->items[0]->type == JSON_STRING)
			strbuf_add_excerpt(&iq, ign->items[0]->string, 160);
		host_doubt(h, "%zu process%s that named the attempt %s not of the job (%s)",
			   ign->nr, ign->nr == 1 ? "" : "es", ign->nr == 1 ? "was" : "were", iq.buf);
		strbuf_release(&iq);
	}
	for (size_t i = 0; i < ranks->nr; i++) {
		const struct json_value *o = ranks->items[i];
		double d, x;
		if (o->type != JSON_OBJECT || !get_count(o, "rank", 1 << 24, &d) || d != floor(d)) {
			host_status(h, true, "an entry without a rank ignored");
			host_doubt(h, "an entry without a rank");
			continue;
		}
		struct evidence_rank *seen = find_rank(w, (long)d);
		if (seen) {
			/* a rank claimed twice: which one is it? Neither's evidence counts */
			host_status(h, true, "rank %ld reported twice", (long)d);
			host_doubt(h, "rank %ld is claimed twice: its evidence is unknown", (long)d);
			for (size_t x2 = 0; x2 < all_nr; x2++)
				if (all[x2].host && !strcmp(all[x2].host, seen->host))
					host_doubt(&all[x2], "rank %ld is claimed twice: its evidence "
						   "is unknown", (long)d);
			make_doubt((struct staged *)seen);
			continue;
		}
		if (w->nr >= EVIDENCE_RANKS_MAX) {
			host_status(h, true, "more than %u ranks: the rest ignored",
				    EVIDENCE_RANKS_MAX);
			break;
		}
		ALLOC_GROW(w->s, w->nr + 1, w->alloc);
		struct staged *s = &w->s[w->nr++];
		memset(s, 0, sizeof(*s));
		s->r.rank = (long)d;
		s->r.pid = get_count(o, "pid", 1 << 30, &x) ? (long)x : -1;
		s->r.host = xstrdup(h->host);
		s->r.py_group = s->r.native_group = -1;
		s->r.last_output = NAN;
		h->ranks++;
		const struct json_value *st = json_get(o, "states");
		static const char *const names[EVIDENCE_NSTATES] = { "R", "S", "D", "T" };
		unsigned sum = 0;
		for (size_t k = 0; k < EVIDENCE_NSTATES; k++)
			if (get_count(st, names[k], 1e6, &x)) {
				s->r.states[k] = (unsigned)x;
				sum += (unsigned)x;
			}
		if (get_count(st, "Z", 1e6, &x))
			sum += (unsigned)x;
		if (get_count(st, "other", 1e6, &x))
			sum += (unsigned)x;
		s->r.samples = get_count(o, "samples", 1e6, &x) && x >= sum ? (unsigned)x : sum;
		if (get_count(o, "cpu_s", 1e9, &x))
			s->r.cpu_s = x;
		const struct json_value *gv = json_get(o, "gpu");
		s->r.gpu = gv && gv->type == JSON_BOOL && gv->boolean;
		if (s->r.samples)
			s->r.busy = (double)(s->r.states[EVIDENCE_R] + s->r.states[EVIDENCE_D] +
					     s->r.states[EVIDENCE_T]) / s->r.samples;
		const char *py = json_get_string(o, "py_stack");
		const char *nat = json_get_string(o, "native_stack");
		if (py)
			evidence_normalise(py, false, w->lines, s->r.pid, &s->py_sig, &s->py_top);
		if (nat)
			evidence_normalise(nat, true, false, s->r.pid, &s->nat_sig, &s->nat_top);
		const char *dbt = json_get_string(o, "doubt");
		if (dbt) {
			struct strbuf dq = STRBUF_INIT;
			strbuf_add_excerpt(&dq, dbt, 160);
			host_doubt(h, "%s", dq.buf);
			strbuf_release(&dq);
			make_doubt(s);
		}
	}
out:
	json_free(v);
	strbuf_release(&err);
	strbuf_release(&q);
}

/* ---- groups ---- */

struct keyed {
	const char *sig;
	size_t idx; /* into work */
};

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->sig, y->sig);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_group(const void *a, const void *b)
{
	const struct evidence_group *x = a, *y = b;
	if (x->nr != y->nr)
		return x->nr < y->nr ? 1 : -1;
	return (x->ranks[0] > y->ranks[0]) - (x->ranks[0] < y->ranks[0]);
}

static const struct evidence_group *sort_base;

static int cmp_group_idx(const void *a, const void *b)
{
	return cmp_group(&sort_base[*(const size_t *)a], &sort_base[*(const size_t *)b]);
}

static void make_groups(struct work *w, bool native, struct evidence_group **out, size_t *out_nr,
			int *majority)
{
	struct keyed *k = xcalloc(w->nr ? w->nr : 1, sizeof(*k));
	size_t *of = xcalloc(w->nr ? w->nr : 1, sizeof(*of)); /* staged -> group, before sorting */
	struct evidence_group *g = NULL, *sorted;
	size_t n = 0, gn = 0, galloc = 0;
	for (size_t i = 0; i < w->nr; i++) {
		const char *sig = native ? w->s[i].nat_sig : w->s[i].py_sig;
		if (sig)
			k[n++] = (struct keyed){ sig, i };
	}
	/* ties broken by position, and work is in rank order: each group's ranks ascend */
	qsort(k, n, sizeof(*k), cmp_keyed);
	for (size_t i = 0; i < n; i++) {
		struct staged *s = &w->s[k[i].idx];
		if (!i || strcmp(k[i].sig, k[i - 1].sig)) {
			ALLOC_GROW(g, gn + 1, galloc);
			memset(&g[gn], 0, sizeof(g[0]));
			g[gn].signature = xstrdup(k[i].sig);
			g[gn].top = xstrdup(native ? s->nat_top : s->py_top);
			gn++;
		}
		struct evidence_group *cur = &g[gn - 1];
		ALLOC_GROW(cur->ranks, cur->nr + 1, cur->alloc);
		cur->ranks[cur->nr++] = s->r.rank;
		if (!strlist_has(&cur->hosts, s->r.host))
			strlist_add(&cur->hosts, s->r.host);
		of[k[i].idx] = gn - 1;
	}
	/* largest first; the place of each group after sorting, for the ranks' indexes */
	size_t *order = xcalloc(gn ? gn : 1, sizeof(*order)), *place = xcalloc(gn ? gn : 1,
									     sizeof(*place));
	for (size_t i = 0; i < gn; i++)
		order[i] = i;
	sort_base = g;
	qsort(order, gn, sizeof(*order), cmp_group_idx);
	sorted = xcalloc(gn ? gn : 1, sizeof(*sorted));
	for (size_t i = 0; i < gn; i++) {
		sorted[i] = g[order[i]];
		place[order[i]] = i;
	}
	for (size_t i = 0; i < n; i++) {
		struct evidence_rank *r = &w->s[k[i].idx].r;
		if (native)
			r->native_group = (int)place[of[k[i].idx]];
		else
			r->py_group = (int)place[of[k[i].idx]];
	}
	*majority = gn == 1 || (gn > 1 && sorted[0].nr > sorted[1].nr) ? 0 : -1;
	*out = sorted;
	*out_nr = gn;
	free(g);
	free(order);
	free(place);
	free(of);
	free(k);
}

static int cmp_staged(const void *a, const void *b)
{
	const struct staged *x = a, *y = b;
	return (x->r.rank > y->r.rank) - (x->r.rank < y->r.rank);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- suspects ---- */

static struct evidence_suspect *suspect(struct evidence *e, long rank, const char *host)
{
	for (size_t i = 0; i < e->suspects_nr; i++)
		if (e->suspects[i].rank == rank && !strcmp(e->suspects[i].host, host))
			return &e->suspects[i];
	ALLOC_GROW(e->suspects, e->suspects_nr + 1, e->suspects_alloc);
	struct evidence_suspect *s = &e->suspects[e->suspects_nr++];
	memset(s, 0, sizeof(*s));
	s->rank = rank;
	s->host = xstrdup(host);
	/* a rank whose host nobody knows is named, but there is no host to pass on */
	if (strcmp(host, "?") && !strlist_has(&e->suspect_hosts, host))
		strlist_add(&e->suspect_hosts, host);
	return s;
}

static void reason(struct evidence *e, long rank, const char *host, const char *fmt, ...)
	PRINTF_LIKE(4, 5);
static void reason(struct evidence *e, long rank, const char *host, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strlist_add_nodup(&suspect(e, rank, host)->reasons, strbuf_detach(&sb, NULL));
}

static const char *rank_host(const struct evidence_input *in, long rank)
{
	if (in->rank_hosts && rank >= 0 && (size_t)rank < in->rank_hosts_nr &&
	    in->rank_hosts[rank])
		return in->rank_hosts[rank];
	return NULL;
}

static void judge_ranks(struct evidence *e, const struct evidence_input *in)
{
	size_t with_py = 0, with_samples = 0;
	double margin = in->busy_margin > 0 ? in->busy_margin : 0.3;
	double *busy = xcalloc(e->ranks_nr ? e->ranks_nr : 1, sizeof(*busy));
	/* busy shares are compared among the ranks not on a GPU only: a CUDA rank waiting in
	 * NCCL spins on its CPU while the rank it waits for may sleep (evidence.h) */
	for (size_t i = 0; i < e->ranks_nr; i++) {
		with_py += e->ranks[i].py_group >= 0;
		if (e->ranks[i].samples && !e->ranks[i].gpu)
			busy[with_samples++] = e->ranks[i].busy;
	}
	double busy_med = with_samples ? median(busy, with_samples) : 0;
	e->busy_median = busy_med;
	bool by_python = with_py > 0;
	const struct evidence_group *groups = by_python ? e->py : e->native;
	int maj = by_python ? e->py_majority : e->native_majority;
	size_t groups_nr = by_python ? e->py_nr : e->native_nr;

	for (size_t i = 0; i < e->ranks_nr; i++) {
		const struct evidence_rank *k = &e->ranks[i];
		unsigned t = k->states[EVIDENCE_T];
		if (k->doubt)
			continue; /* unknown: never evidence for or against its host */
		bool stopped = k->samples && 2 * t > k->samples;
		if (stopped)
			reason(e, k->rank, k->host, "stopped (T) in %u of %u samples: frozen, as by "
			       "SIGSTOP", t, k->samples);
		int g = by_python ? k->py_group : k->native_group;
		if (maj >= 0 && g >= 0 && g != maj && groups_nr > 1)
			reason(e, k->rank, k->host, "its %s stack differs from the majority's (%zu "
			       "ranks in %s): it is in %s", by_python ? "Python" : "native",
			       groups[maj].nr, groups[maj].top, groups[g].top);
		if (by_python && k->py_group < 0 && !stopped)
			reason(e, k->rank, k->host, "no Python stack, while %zu other rank%s gave "
			       "one", with_py, with_py == 1 ? "" : "s");
		if (k->samples && !stopped && !k->gpu && with_samples > 1 && k->busy >= 0.5 &&
		    k->busy > busy_med + margin)
			reason(e, k->rank, k->host, "busy (R, D or T) in %.0f%% of samples, against "
			       "a median of %.0f%%", 100 * k->busy, 100 * busy_med);
	}
	free(busy);
}

static void judge_silence(struct evidence *e, const struct evidence_input *in)
{
	double margin = in->silent_margin_s > 0 ? in->silent_margin_s : 1.0;
	size_t n = 0;
	if (!in->last_output)
		return;
	double *t = xcalloc(in->last_output_nr ? in->last_output_nr : 1, sizeof(*t));
	for (size_t r = 0; r < in->last_output_nr; r++)
		if (isfinite(in->last_output[r]) && in->last_output[r] >= 0)
			t[n++] = in->last_output[r];
	if (n >= 2) {
		double m = median(t, n);
		for (size_t r = 0; r < in->last_output_nr; r++) {
			double x = in->last_output[r];
			if (!isfinite(x) || x < 0 || x >= m - margin)
				continue;
			const char *host = NULL;
			/* a doubtful rank's host is not known from the answers: where it was
			 * launched */
			for (size_t i = 0; i < e->ranks_nr && !host; i++)
				if (e->ranks[i].rank == (long)r && !e->ranks[i].doubt)
					host = e->ranks[i].host;
			char *hc = evidence_clean_dup(host ? host : rank_host(in, (long)r) ?
					     rank_host(in, (long)r) : "?", 255);
			host = hc;
			reason(e, (long)r, host, "went silent first: its last output was %.1f s "
			       "before the median rank's (%.1f s ago)", m - x, in->now - x);
			if (!strlist_has(&e->silent_first, host))
				strlist_add(&e->silent_first, host);
			free(hc);
		}
	}
	free(t);
}

void evidence_build(struct evidence *e, const struct evidence_input *in)
{
	struct work w = { NULL, 0, 0, in->hang };
	evidence_release(e);
	e->hosts = xcalloc(in->hosts_nr ? in->hosts_nr : 1, sizeof(*e->hosts));
	e->hosts_nr = in->hosts_nr;
	for (size_t i = 0; i < in->hosts_nr; i++) {
		e->hosts[i].host = evidence_clean_dup(in->hosts[i].host ? in->hosts[i].host : "?", 255);
		read_host(&w, &e->hosts[i], &in->hosts[i], e->hosts, i + 1);
	}
	for (size_t i = 0; i < e->hosts_nr; i++)
		if (e->hosts[i].doubt && !strlist_has(&e->doubtful_hosts, e->hosts[i].host))
			strlist_add(&e->doubtful_hosts, e->hosts[i].host);
	if (w.nr > 1)
		qsort(w.s, w.nr, sizeof(*w.s), cmp_staged);
	for (size_t i = 0; i < w.nr; i++) {
		struct evidence_rank *k = &w.s[i].r;
		if (in->last_output && (size_t)k->rank < in->last_output_nr &&
		    isfinite(in->last_output[k->rank]) && in->last_output[k->rank] >= 0)
			k->last_output = in->last_output[k->rank];
	}
	make_groups(&w, false, &e->py, &e->py_nr, &e->py_majority);
	make_groups(&w, true, &e->native, &e->native_nr, &e->native_majority);
	e->ranks = xcalloc(w.nr ? w.nr : 1, sizeof(*e->ranks));
	e->ranks_nr = e->ranks_alloc = w.nr;
	for (size_t i = 0; i < w.nr; i++) {
		e->ranks[i] = w.s[i].r;
		free(w.s[i].py_sig);
		free(w.s[i].py_top);
		free(w.s[i].nat_sig);
		free(w.s[i].nat_top);
	}
	free(w.s);

	for (size_t i = 0; i < e->hosts_nr; i++)
		if (!e->hosts[i].answered)
			reason(e, -1, e->hosts[i].host, "no answer from vigil stacks: %s",
			       e->hosts[i].why ? e->hosts[i].why : "no output");
	if (in->world_size > 0) {
		long limit = in->world_size < EVIDENCE_RANKS_MAX ? in->world_size
								 : EVIDENCE_RANKS_MAX;
		size_t j = 0, alloc = 0;
		for (long r = 0; r < limit; r++) {
			while (j < e->ranks_nr && e->ranks[j].rank < r)
				j++;
			if (j < e->ranks_nr && e->ranks[j].rank == r)
				continue;
			ALLOC_GROW(e->missing, e->missing_nr + 1, alloc);
			e->missing[e->missing_nr++] = r;
			const char *h = rank_host(in, r);
			bool silent_host = false;
			for (size_t x = 0; h && x < e->hosts_nr; x++)
				silent_host |= !e->hosts[x].answered && !strcmp(e->hosts[x].host, h);
			if (h && !silent_host) {
				char *hc = evidence_clean_dup(h, 255);
				reason(e, r, hc, "not found: no process of rank %ld on the host it "
				       "was launched on", r);
				free(hc);
			}
		}
	}
	judge_ranks(e, in);
	judge_silence(e, in);
	evidence_summarise(e, in);
	evidence_write_json(e, in);
}
