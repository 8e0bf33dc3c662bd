/*
 * plan.c: the burn-in planner (plan.h). Stage by stage, each link not yet covered (the top
 * tier's first: they are the scarcest) gets a pair through it if two free HCAs can be found:
 * one below its lower end, the other below its upper end but outside the lower end's group
 * (so the route is minimal), each found by a walk down that takes uncovered links first. A
 * walk that finds nothing free marks the switch exhausted for the stage, so a stage costs
 * about one visit per link. Each pair covers at least the link it was made for, so the loop
 * ends; a link no pair can cross (down, miswired, a cross-link between switches of one tier,
 * no HCA below) is listed uncovered, never silently dropped.
 *
 * The lower bound: in one stage a switch's uplinks can only be crossed by pairs with an HCA
 * below it, one uplink per such HCA, so stages >= ceil(uplinks / HCAs below) for every switch;
 * an HCA with k cabled ports needs k stages; hosts / --hosts-per-stage stages at least.
 */
#include "plan.h"
#include "../lib/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* deeper switches are not planned (their links are uncovered): fat trees have 2 to 5 tiers */
#define PLAN_MAX_TIERS 16

struct edge {
	int pl;    /* plan link */
	int child; /* the lower node (down edges) or the upper one (up edges) */
};

struct planner {
	const struct fabric *f;
	struct plan *p;
	unsigned limit;
	int *tier;          /* per node; -1 none */
	size_t *down_at, *up_at; /* CSR per node */
	struct edge *down, *up;
	int **comp;         /* comp[t][node] for t in 2..tiers: the group joined below tier t */
	int *host;          /* per HCA node: host index; -1 */
	int *ca_stage, *host_stage, *exh_stage;
	size_t hosts_in_stage;
	int stage;
	int *path;          /* scratch */
	size_t npath, cap_path;
};

static void push(struct planner *pl, int li)
{
	pl->path = grow_array(pl->path, sizeof(int), pl->npath + 1, &pl->cap_path);
	pl->path[pl->npath++] = li;
}

static bool host_ok(struct planner *pl, int h)
{
	return !pl->limit || pl->host_stage[h] == pl->stage || pl->hosts_in_stage < pl->limit;
}

static void take(struct planner *pl, int ca)
{
	pl->ca_stage[ca] = pl->stage;
	int h = pl->host[ca];
	if (pl->host_stage[h] != pl->stage) {
		pl->host_stage[h] = pl->stage;
		pl->hosts_in_stage++;
	}
}

/*
 * Walk down from s to a free HCA, uncovered links first; the links walked are pushed. excl_host:
 * an HCA of that host is not taken (a pair is between two hosts). first: at this level a child
 * in group cv (comp[ct]) is not taken (the route would not be minimal). *blocked is set when a
 * free HCA was passed over for an exclusion: then s is not marked exhausted.
 */
static int descend(struct planner *pl, int s, int excl_host, bool first, int ct, int cv,
		   bool *blocked)
{
	const struct fabric *f = pl->f;
	if (pl->exh_stage[s] == pl->stage)
		return -1;
	bool blk = false;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t e = pl->down_at[s]; e < pl->down_at[s + 1]; e++) {
			int li = pl->down[e].pl, c = pl->down[e].child;
			if (pl->p->links[li].covered != (pass == 1))
				continue;
			if (!f->nodes[c].is_switch) {
				if (pl->ca_stage[c] == pl->stage)
					continue;
				if (pl->host[c] == excl_host || !host_ok(pl, pl->host[c])) {
					blk = true;
					continue;
				}
				push(pl, li);
				return li;
			}
			if (first && pl->comp[ct][c] == cv) {
				blk = true;
				continue;
			}
			push(pl, li);
			bool b2 = false;
			int r = descend(pl, c, excl_host, false, 0, 0, &b2);
			if (r >= 0)
				return r;
			blk |= b2;
			pl->npath--;
		}
	}
	if (!blk)
		pl->exh_stage[s] = pl->stage;
	*blocked |= blk;
	return -1;
}

static int end_ca(const struct plan *p, int li)
{
	return p->links[li].lo; /* a host link's lower end is its HCA */
}

static void add_pair(struct planner *pl, int a, int b, const int *route, size_t n)
{
	struct plan *p = pl->p;
	p->pairs = grow_array(p->pairs, sizeof(*p->pairs), p->nr_pairs + 1, &p->alloc_pairs);
	p->route = grow_array(p->route, sizeof(int), p->nr_route + n, &p->alloc_route);
	p->pairs[p->nr_pairs++] = (struct plan_pair){ a, b, p->nr_route, n };
	for (size_t i = 0; i < n; i++) {
		p->route[p->nr_route++] = route[i];
		p->links[route[i]].covered = true;
	}
	p->stages[p->nr_stages - 1].nr++;
}

/* Undo take() of an HCA that found no partner. */
static void untake(struct planner *pl, int ca, bool host_was_new)
{
	pl->ca_stage[ca] = 0;
	if (host_was_new) {
		pl->host_stage[pl->host[ca]] = 0;
		pl->hosts_in_stage--;
	}
}

/* A pair through switch link li (lower end x, upper y), or false. */
static bool pair_switch_link(struct planner *pl, int li)
{
	const struct plan_link *l = &pl->p->links[li];
	int x = l->lo, y = l->hi, t = l->tier;
	bool blocked = false;
	pl->npath = 0;
	int ea = descend(pl, x, -1, false, 0, 0, &blocked);
	if (ea < 0)
		return false;
	int a = end_ca(pl->p, ea);
	bool newh = pl->host_stage[pl->host[a]] != pl->stage;
	take(pl, a);
	size_t na = pl->npath;
	push(pl, li);
	int eb = descend(pl, y, pl->host[a], true, t, pl->comp[t][x], &blocked);
	if (eb < 0) {
		untake(pl, a, newh);
		return false;
	}
	int b = end_ca(pl->p, eb);
	take(pl, b);
	/* a's walk was top-down: reverse it so the route runs a -> b */
	for (size_t i = 0, j = na - 1; i < j; i++, j--) {
		int tmp = pl->path[i];
		pl->path[i] = pl->path[j];
		pl->path[j] = tmp;
	}
	add_pair(pl, a, b, pl->path, pl->npath);
	return true;
}

/* A pair through HCA link li (HCA a, leaf x): up an uncovered uplink first (it covers more),
 * else a partner under the same leaf, else up a covered uplink. */
static bool pair_host_link(struct planner *pl, int li)
{
	const struct plan_link *l = &pl->p->links[li];
	int a = l->lo, x = l->hi;
	if (pl->ca_stage[a] == pl->stage || !host_ok(pl, pl->host[a]))
		return false;
	bool newh = pl->host_stage[pl->host[a]] != pl->stage;
	take(pl, a);
	bool blocked = false;
	for (int mode = 0; mode < 3; mode++) {
		if (mode == 1) {
			pl->npath = 0;
			push(pl, li);
			/* the leaf itself is not marked exhausted by a walk that skipped a's host */
			int eb = descend(pl, x, pl->host[a], false, 0, 0, &blocked);
			if (eb >= 0) {
				int b = end_ca(pl->p, eb);
				take(pl, b);
				add_pair(pl, a, b, pl->path, pl->npath);
				return true;
			}
			continue;
		}
		for (size_t e = pl->up_at[x]; e < pl->up_at[x + 1]; e++) {
			int ul = pl->up[e].pl, y = pl->up[e].child;
			if (pl->p->links[ul].covered != (mode == 2))
				continue;
			pl->npath = 0;
			push(pl, li);
			push(pl, ul);
			int t = pl->p->links[ul].tier;
			int eb = descend(pl, y, pl->host[a], true, t, pl->comp[t][x], &blocked);
			if (eb >= 0) {
				int b = end_ca(pl->p, eb);
				take(pl, b);
				add_pair(pl, a, b, pl->path, pl->npath);
				return true;
			}
		}
	}
	untake(pl, a, newh);
	return false;
}

static int find(int *uf, int x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

/* qsort has no context argument in C11: the planner is not re-entrant across threads */
static const struct fabric *sort_f;

static int host_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	int c = strcmp(sort_f->nodes[x].host, sort_f->nodes[y].host);
	return c ? c : (x > y) - (x < y);
}

static const int *sort_rank;

static int target_cmp_tier(const struct plan *p, int a, int b)
{
	/* the top tier first (the scarcest links); within a tier each lower switch's first
	 * uplink, then each one's second, ...: a stage spreads over all switches instead of
	 * spending one switch's HCAs on its own uplinks first */
	if (p->links[a].tier != p->links[b].tier)
		return p->links[b].tier - p->links[a].tier;
	if (sort_rank[a] != sort_rank[b])
		return sort_rank[a] - sort_rank[b];
	return a - b;
}

static const struct plan *sort_p;
static int target_cmp(const void *a, const void *b)
{
	return target_cmp_tier(sort_p, *(const int *)a, *(const int *)b);
}

static int link_order_cmp(const void *a, const void *b)
{
	const struct plan_link *x = a, *y = b;
	int tx = x->usable ? x->tier : 1000, ty = y->usable ? y->tier : 1000;
	if (tx != ty)
		return tx - ty;
	return x->link - y->link;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Per node: an HCA whose host is not in o->hosts (NULL when there is no such list). */
static bool *excluded_cas(const struct fabric *f, const struct plan_opts *o)
{
	if (!o || !o->nr_hosts)
		return NULL;
	const char **sorted = xmalloc(o->nr_hosts * sizeof(*sorted));
	memcpy(sorted, o->hosts, o->nr_hosts * sizeof(*sorted));
	qsort(sorted, o->nr_hosts, sizeof(*sorted), str_cmp);
	bool *ex = xcalloc(f->nr_nodes + 1, sizeof(bool));
	for (size_t n = 0; n < f->nr_nodes; n++) {
		const char *h = f->nodes[n].host;
		ex[n] = !f->nodes[n].is_switch &&
			!bsearch(&h, sorted, o->nr_hosts, sizeof(*sorted), str_cmp);
	}
	free(sorted);
	return ex;
}

/* The names of o->hosts that no planned HCA belongs to (in o's order). */
static void find_missing(const struct fabric *f, const struct plan_opts *o, const int *host,
			 struct plan *p)
{
	for (size_t i = 0; o && i < o->nr_hosts; i++) {
		bool found = false;
		for (size_t n = 0; n < f->nr_nodes && !found; n++)
			found = host[n] >= 0 && !strcmp(f->nodes[n].host, o->hosts[i]);
		if (!found) {
			p->missing = xrealloc(p->missing, (p->nr_missing + 1) * sizeof(char *));
			p->missing[p->nr_missing++] = xstrdup(o->hosts[i]);
		}
	}
}

/*
 * With a host list: which sound links (ok[]) a pair of the listed hosts' HCAs could cross.
 * The fabric's own tiers (a breadth-first walk up from every HCA) say which switch is above
 * which; a switch is reached when a listed HCA lies below it, and a link from a reached switch
 * up to one with at least two reached ones below (a route between them turns there) is in
 * scope, as is a listed HCA's own link. Every other sound link is out of scope: oos[] set,
 * ok[] cleared so the planner never counts on it.
 */
static void scope_links(const struct fabric *f, const bool *excl, bool *ok, bool *oos)
{
	size_t nn = f->nr_nodes;
	int *tier = xmalloc((nn + 1) * sizeof(int)), *queue = xmalloc((nn + 1) * sizeof(int));
	size_t *at = xcalloc(nn + 2, sizeof(size_t)), *fill = xmalloc((nn + 1) * sizeof(size_t));
	unsigned *below = xcalloc(nn + 1, sizeof(unsigned));
	for (size_t i = 0; i < f->nr_links; i++)
		if (ok[i] || oos[i])
			at[f->links[i].a + 1]++, at[f->links[i].b + 1]++;
	for (size_t n = 0; n < nn; n++)
		at[n + 1] += at[n];
	int *adj = xmalloc((at[nn] + 1) * sizeof(int));
	memcpy(fill, at, (nn + 1) * sizeof(size_t));
	for (size_t i = 0; i < f->nr_links; i++)
		if (ok[i] || oos[i]) {
			adj[fill[f->links[i].a]++] = f->links[i].b;
			adj[fill[f->links[i].b]++] = f->links[i].a;
		}
	size_t qh = 0, qt = 0;
	for (size_t n = 0; n < nn; n++) {
		tier[n] = f->nodes[n].is_switch ? -1 : 0;
		if (!f->nodes[n].is_switch)
			queue[qt++] = (int)n;
	}
	/* tiers up from every HCA (the listed or not), in the walk's order: each node's lower
	 * neighbours are settled before it is left, so "reached" flows up in the same pass */
	while (qh < qt) {
		int n = queue[qh++];
		for (size_t e = at[n]; e < at[n + 1]; e++) {
			int m = adj[e];
			if (tier[m] < 0 && f->nodes[m].is_switch && tier[n] < PLAN_MAX_TIERS) {
				tier[m] = tier[n] + 1;
				queue[qt++] = m;
			}
		}
	}
	for (size_t k = 0; k < qt; k++) {
		int n = queue[k];
		bool reached = f->nodes[n].is_switch ? below[n] > 0 : !excl[n];
		if (!reached)
			continue;
		for (size_t e = at[n]; e < at[n + 1]; e++)
			if (tier[adj[e]] == tier[n] + 1)
				below[adj[e]]++;
	}
	for (size_t i = 0; i < f->nr_links; i++) {
		if (!ok[i])
			continue;
		int a = f->links[i].a, b = f->links[i].b;
		int lo = tier[a] <= tier[b] ? a : b, hi = lo == a ? b : a;
		bool in = tier[lo] >= 0 && tier[hi] == tier[lo] + 1 &&
			  (f->nodes[lo].is_switch ? below[lo] > 0 && below[hi] >= 2 : !excl[lo]);
		if (!in) {
			ok[i] = false;
			oos[i] = true;
		}
	}
	free(tier);
	free(queue);
	free(at);
	free(fill);
	free(below);
	free(adj);
}

int plan_build(const struct fabric *f, const struct plan_opts *o, struct plan *p,
	       struct strbuf *err)
{
	memset(p, 0, sizeof(*p));
	size_t nn = f->nr_nodes;
	bool *excl = excluded_cas(f, o);
	bool *oos = xcalloc(f->nr_links + 1, sizeof(bool));
	struct planner pl = { .f = f, .p = p, .limit = o ? o->hosts_per_stage : 0 };
	pl.tier = xmalloc((nn + 1) * sizeof(int));
	for (size_t i = 0; i < nn; i++)
		pl.tier[i] = f->nodes[i].is_switch ? -1 : 0;

	/* which links can carry a pair's traffic: both reports (where there are two) agree and
	 * neither end is down; the link joins an HCA to a switch or two switches */
	bool *ok = xcalloc(f->nr_links + 1, sizeof(bool));
	for (size_t i = 0; i < f->nr_links; i++) {
		const struct flink *l = &f->links[i];
		const struct fport *ra = l->pa >= 0 ? &f->ports[l->pa] : NULL;
		const struct fport *rb = l->pb >= 0 ? &f->ports[l->pb] : NULL;
		bool good = true;
		if (ra && (ra->peer != l->b || ra->peer_port != l->b_port))
			good = false;
		if (rb && (rb->peer != l->a || rb->peer_port != l->a_port))
			good = false;
		if ((ra && ra->state != IBS_ACTIVE && ra->state != IBS_UNKNOWN) ||
		    (rb && rb->state != IBS_ACTIVE && rb->state != IBS_UNKNOWN))
			good = false;
		if (!f->nodes[l->a].is_switch && !f->nodes[l->b].is_switch)
			good = false;
		if (excl && (excl[l->a] || excl[l->b])) {
			oos[i] = good; /* a sound link, only not ours: out of scope */
			good = false;
		}
		ok[i] = good;
	}
	if (excl)
		scope_links(f, excl, ok, oos);
	/* tiers: leaves are the switches an HCA is cabled to, then one more per hop up; a
	 * breadth-first walk over the usable links (linear, whatever the input's shape), stopped
	 * at PLAN_MAX_TIERS: no fat tree is that deep, and the walks down recurse once per tier */
	int maxtier = 0;
	{
		size_t *at = xcalloc(nn + 2, sizeof(size_t));
		for (size_t i = 0; i < f->nr_links; i++)
			if (ok[i])
				at[f->links[i].a + 1]++, at[f->links[i].b + 1]++;
		for (size_t n = 0; n < nn; n++)
			at[n + 1] += at[n];
		int *adj = xmalloc((at[nn] + 1) * sizeof(int));
		size_t *fill = xmalloc((nn + 1) * sizeof(size_t));
		memcpy(fill, at, (nn + 1) * sizeof(size_t));
		for (size_t i = 0; i < f->nr_links; i++)
			if (ok[i]) {
				adj[fill[f->links[i].a]++] = f->links[i].b;
				adj[fill[f->links[i].b]++] = f->links[i].a;
			}
		free(fill);
		int *queue = xmalloc((nn + 1) * sizeof(int));
		size_t qh = 0, qt = 0;
		for (size_t n = 0; n < nn; n++)
			if (!f->nodes[n].is_switch)
				queue[qt++] = (int)n;
		while (qh < qt) {
			int n = queue[qh++];
			if (pl.tier[n] >= PLAN_MAX_TIERS)
				continue;
			for (size_t e = at[n]; e < at[n + 1]; e++) {
				int m = adj[e];
				if (pl.tier[m] < 0 && f->nodes[m].is_switch) {
					pl.tier[m] = pl.tier[n] + 1;
					if (pl.tier[m] > maxtier)
						maxtier = pl.tier[m];
					queue[qt++] = m;
				}
			}
		}
		free(queue);
		free(adj);
		free(at);
	}
	p->tiers = (unsigned)maxtier;

	/* the plan's links: usable ones ordered by tier (HCA links first), the rest after */
	p->nr_links = f->nr_links;
	p->links = xcalloc(f->nr_links + 1, sizeof(*p->links));
	for (size_t i = 0; i < f->nr_links; i++) {
		const struct flink *l = &f->links[i];
		struct plan_link *q = &p->links[i];
		q->link = (int)i;
		int ta = pl.tier[l->a], tb = pl.tier[l->b];
		bool lo_a = ta <= tb;
		q->lo = lo_a ? l->a : l->b;
		q->lo_port = lo_a ? l->a_port : l->b_port;
		q->hi = lo_a ? l->b : l->a;
		q->hi_port = lo_a ? l->b_port : l->a_port;
		q->usable = ok[i] && ta >= 0 && tb >= 0 && (ta - tb == 1 || tb - ta == 1);
		q->tier = q->usable ? (ta > tb ? ta : tb) : 0;
		q->out_of_scope = oos[i];
		p->nr_out_of_scope += q->out_of_scope;
	}
	free(ok);
	free(oos);
	free(excl);
	qsort(p->links, p->nr_links, sizeof(*p->links), link_order_cmp);

	/* adjacency (CSR) */
	pl.down_at = xcalloc(nn + 2, sizeof(size_t));
	pl.up_at = xcalloc(nn + 2, sizeof(size_t));
	for (size_t i = 0; i < p->nr_links; i++) {
		if (!p->links[i].usable)
			continue;
		pl.down_at[p->links[i].hi + 1]++;
		pl.up_at[p->links[i].lo + 1]++;
	}
	for (size_t n = 0; n < nn; n++) {
		pl.down_at[n + 1] += pl.down_at[n];
		pl.up_at[n + 1] += pl.up_at[n];
	}
	pl.down = xmalloc((pl.down_at[nn] + 1) * sizeof(struct edge));
	pl.up = xmalloc((pl.up_at[nn] + 1) * sizeof(struct edge));
	{
		size_t *fd = xmalloc((nn + 1) * sizeof(size_t)), *fu = xmalloc((nn + 1) * sizeof(size_t));
		memcpy(fd, pl.down_at, (nn + 1) * sizeof(size_t));
		memcpy(fu, pl.up_at, (nn + 1) * sizeof(size_t));
		for (size_t i = 0; i < p->nr_links; i++) {
			const struct plan_link *q = &p->links[i];
			if (!q->usable)
				continue;
			pl.down[fd[q->hi]++] = (struct edge){ (int)i, q->lo };
			pl.up[fu[q->lo]++] = (struct edge){ (int)i, q->hi };
		}
		free(fd);
		free(fu);
	}

	/* groups: comp[t] joins the switches below tier t through the links among them */
	pl.comp = xcalloc((size_t)maxtier + 2, sizeof(int *));
	int *uf = xmalloc((nn + 1) * sizeof(int));
	for (int t = 2; t <= maxtier; t++) {
		for (size_t n = 0; n < nn; n++)
			uf[n] = (int)n;
		for (size_t i = 0; i < p->nr_links; i++) {
			const struct plan_link *q = &p->links[i];
			if (!q->usable || q->tier >= t || !f->nodes[q->lo].is_switch)
				continue;
			int ra = find(uf, q->lo), rb = find(uf, q->hi);
			if (ra != rb)
				uf[ra] = rb;
		}
		pl.comp[t] = xmalloc((nn + 1) * sizeof(int));
		for (size_t n = 0; n < nn; n++)
			pl.comp[t][n] = find(uf, (int)n);
	}
	free(uf);

	/* hosts: HCAs with a usable link, grouped by host name */
	pl.host = xmalloc((nn + 1) * sizeof(int));
	int *cas = xmalloc((nn + 1) * sizeof(int));
	size_t ncas = 0;
	unsigned max_ports = 0;
	for (size_t n = 0; n < nn; n++) {
		pl.host[n] = -1;
		size_t k = pl.up_at[n + 1] - pl.up_at[n];
		if (!f->nodes[n].is_switch && k) {
			cas[ncas++] = (int)n;
			if (k > max_ports)
				max_ports = (unsigned)k;
		}
	}
	sort_f = f;
	qsort(cas, ncas, sizeof(int), host_cmp);
	size_t nhosts = 0;
	for (size_t i = 0; i < ncas; i++) {
		if (i && strcmp(f->nodes[cas[i]].host, f->nodes[cas[i - 1]].host))
			nhosts++;
		pl.host[cas[i]] = (int)nhosts;
	}
	if (ncas)
		nhosts++;
	free(cas);
	p->hosts = nhosts;
	p->hcas = ncas;

	int rc = 0;
	if (!ncas) {
		rc = error_set(err, "no HCA with a working link to a switch: nothing to plan");
		goto out;
	}

	/* the lower bound */
	{
		size_t *below = xcalloc(nn + 1, sizeof(size_t));
		int *seen = xmalloc((nn + 1) * sizeof(int));
		for (size_t n = 0; n < nn; n++)
			seen[n] = -1;
		p->lower_bound = 1;
		snprintf(p->bound_why, sizeof(p->bound_why), "every HCA's link needs one stage");
		if (max_ports > p->lower_bound) {
			p->lower_bound = max_ports;
			snprintf(p->bound_why, sizeof(p->bound_why),
				 "an HCA has %u cabled ports, one pair per stage", max_ports);
		}
		if (pl.limit) {
			unsigned b = (unsigned)((nhosts + pl.limit - 1) / pl.limit);
			if (b > p->lower_bound) {
				p->lower_bound = b;
				snprintf(p->bound_why, sizeof(p->bound_why),
					 "%zu hosts, at most %u per stage", nhosts, pl.limit);
			}
		}
		for (int t = 1; t <= maxtier; t++) {
			for (size_t n = 0; n < nn; n++) {
				if (pl.tier[n] != t)
					continue;
				size_t hc = 0, up = pl.up_at[n + 1] - pl.up_at[n];
				for (size_t e = pl.down_at[n]; e < pl.down_at[n + 1]; e++) {
					int c = pl.down[e].child;
					if (seen[c] == (int)n)
						continue; /* parallel cables: the child counted once */
					seen[c] = (int)n;
					hc += f->nodes[c].is_switch ? below[c] : 1;
				}
				below[n] = hc;
				if (hc && up) {
					unsigned b = (unsigned)((up + hc - 1) / hc);
					if (b > p->lower_bound) {
						p->lower_bound = b;
						snprintf(p->bound_why, sizeof(p->bound_why),
							 "%.60s has %zu uplinks over %zu HCAs",
							 f->nodes[n].name, up, hc);
					}
				}
			}
		}
		/* a group joined below tier t (a pod) shares its HCAs among all its uplinks */
		size_t *gup = xcalloc(nn + 1, sizeof(size_t)), *ghca = xcalloc(nn + 1, sizeof(size_t));
		for (int t = 2; t <= maxtier; t++) {
			memset(gup, 0, (nn + 1) * sizeof(size_t));
			memset(ghca, 0, (nn + 1) * sizeof(size_t));
			for (size_t i = 0; i < p->nr_links; i++) {
				const struct plan_link *q = &p->links[i];
				if (!q->usable)
					continue;
				if (q->tier == t)
					gup[pl.comp[t][q->lo]]++;
				else if (q->tier == 1)
					ghca[pl.comp[t][q->hi]]++;
			}
			for (size_t g = 0; g < nn; g++) {
				if (!gup[g] || !ghca[g])
					continue;
				unsigned b = (unsigned)((gup[g] + ghca[g] - 1) / ghca[g]);
				if (b > p->lower_bound) {
					p->lower_bound = b;
					snprintf(p->bound_why, sizeof(p->bound_why),
						 "the group under %.60s has %zu uplinks to tier %d over %zu HCAs",
						 f->nodes[g].name, gup[g], t, ghca[g]);
				}
			}
		}
		free(gup);
		free(ghca);
		free(below);
		free(seen);
	}

	/* the stages */
	{
		int *targets = xmalloc((p->nr_links + 1) * sizeof(int));
		size_t nt = 0;
		for (size_t i = 0; i < p->nr_links; i++)
			if (p->links[i].usable)
				targets[nt++] = (int)i;
		int *rank = xcalloc(p->nr_links + 1, sizeof(int));
		for (size_t n = 0; n < nn; n++)
			for (size_t e = pl.up_at[n]; e < pl.up_at[n + 1]; e++)
				rank[pl.up[e].pl] = (int)(e - pl.up_at[n]);
		sort_p = p;
		sort_rank = rank;
		qsort(targets, nt, sizeof(int), target_cmp);
		free(rank);
		pl.ca_stage = xcalloc(nn + 1, sizeof(int));
		pl.exh_stage = xcalloc(nn + 1, sizeof(int));
		pl.host_stage = xcalloc(nhosts + 1, sizeof(int));
		size_t left = nt;
		for (int stage = 1; left; stage++) {
			pl.stage = stage;
			pl.hosts_in_stage = 0;
			p->stages = grow_array(p->stages, sizeof(*p->stages), p->nr_stages + 1,
					       &p->alloc_stages);
			p->stages[p->nr_stages++] = (struct plan_stage){ p->nr_pairs, 0, 0 };
			for (size_t i = 0; i < nt; i++) {
				int li = targets[i];
				if (p->links[li].covered)
					continue;
				if (f->nodes[p->links[li].lo].is_switch)
					pair_switch_link(&pl, li);
				else
					pair_host_link(&pl, li);
			}
			p->stages[p->nr_stages - 1].hosts = pl.hosts_in_stage;
			if (!p->stages[p->nr_stages - 1].nr) {
				p->nr_stages--;
				break;
			}
			/* keep only the uncovered targets for the next stage */
			size_t k = 0;
			for (size_t i = 0; i < nt; i++)
				if (!p->links[targets[i]].covered)
					targets[k++] = targets[i];
			nt = k;
			left = nt;
		}
		free(targets);
	}
	p->uncovered = xmalloc((p->nr_links + 1) * sizeof(int));
	for (size_t i = 0; i < p->nr_links; i++)
		if (!p->links[i].covered && !p->links[i].out_of_scope)
			p->uncovered[p->nr_uncovered++] = (int)i;
	find_missing(f, o, pl.host, p);
out:
	free(pl.tier);
	free(pl.down_at);
	free(pl.up_at);
	free(pl.down);
	free(pl.up);
	if (pl.comp)
		for (int t = 0; t <= maxtier + 1; t++)
			free(pl.comp[t]);
	free(pl.comp);
	free(pl.host);
	free(pl.ca_stage);
	free(pl.exh_stage);
	free(pl.host_stage);
	free(pl.path);
	if (rc)
		plan_release(p); /* a failed build leaves nothing to free */
	return rc;
}

void plan_release(struct plan *p)
{
	free(p->links);
	free(p->pairs);
	free(p->route);
	free(p->stages);
	free(p->uncovered);
	for (size_t i = 0; i < p->nr_missing; i++)
		free(p->missing[i]);
	free(p->missing);
	memset(p, 0, sizeof(*p));
}

int plan_verify(const struct fabric *f, const struct plan_opts *o, const struct plan *p,
		struct strbuf *err)
{
	int rc = 0;
	int *seen = xcalloc(f->nr_nodes + 1, sizeof(int));
	bool *cov = xcalloc(p->nr_links + 1, sizeof(bool));
	for (size_t s = 0; s < p->nr_stages && !rc; s++) {
		const struct plan_stage *st = &p->stages[s];
		size_t hosts = 0;
		/* hosts in this stage: distinct host names over the stage's HCAs */
		for (size_t i = st->first; i < st->first + st->nr && !rc; i++) {
			const struct plan_pair *pp = &p->pairs[i];
			int ends[2] = { pp->a, pp->b };
			for (int e = 0; e < 2; e++) {
				if (f->nodes[ends[e]].is_switch) {
					rc = error_set(err, "stage %zu: a pair end is a switch", s + 1);
					break;
				}
				if (seen[ends[e]] == (int)s + 1) {
					rc = error_set(err, "stage %zu: HCA '%s' in two pairs", s + 1,
						       f->nodes[ends[e]].name);
					break;
				}
				seen[ends[e]] = (int)s + 1;
			}
			if (rc)
				break;
			if (!strcmp(f->nodes[pp->a].host, f->nodes[pp->b].host)) {
				rc = error_set(err, "stage %zu: a pair within host '%s'", s + 1,
					       f->nodes[pp->a].host);
				break;
			}
			/* the route: a, then each link sharing a node with the one before, to b */
			if (!pp->route_len) {
				rc = error_set(err, "stage %zu: a pair with no route", s + 1);
				break;
			}
			int at = pp->a;
			for (size_t r = 0; r < pp->route_len; r++) {
				const struct plan_link *l = &p->links[p->route[pp->route + r]];
				if (!l->usable) {
					rc = error_set(err, "stage %zu: a route over an unusable link", s + 1);
					break;
				}
				int next = l->lo == at ? l->hi : l->hi == at ? l->lo : -1;
				if (next < 0) {
					rc = error_set(err, "stage %zu: a route that is not a path", s + 1);
					break;
				}
				at = next;
				cov[p->route[pp->route + r]] = true;
			}
			if (!rc && at != pp->b)
				rc = error_set(err, "stage %zu: a route that does not end at its pair's b",
					       s + 1);
		}
		if (rc)
			break;
		/* distinct hosts (names compared pairwise: small stages in tests; the fuzzers) */
		if (o && o->hosts_per_stage) {
			for (size_t i = st->first; i < st->first + st->nr; i++) {
				const struct plan_pair *pp = &p->pairs[i];
				int ends[2] = { pp->a, pp->b };
				for (int e = 0; e < 2; e++) {
					bool dup = false;
					for (size_t j = st->first; j <= i && !dup; j++) {
						const struct plan_pair *q = &p->pairs[j];
						int qe[2] = { q->a, q->b };
						for (int k = 0; k < 2 && !dup; k++) {
							if (j == i && k >= e)
								break;
							dup = !strcmp(f->nodes[qe[k]].host,
								      f->nodes[ends[e]].host);
						}
					}
					hosts += !dup;
				}
			}
			if (hosts > o->hosts_per_stage) {
				rc = error_set(err, "stage %zu: %zu hosts, more than %u", s + 1, hosts,
					       o->hosts_per_stage);
				break;
			}
		}
	}
	for (size_t i = 0; i < p->nr_links && !rc; i++) {
		if (cov[i] != p->links[i].covered)
			rc = error_set(err, "link %zu: covered says %d, the routes %d", i + 1,
				       p->links[i].covered, cov[i]);
	}
	size_t nunc = 0;
	for (size_t i = 0; i < p->nr_links && !rc; i++) {
		if (p->links[i].out_of_scope && (cov[i] || p->links[i].usable))
			rc = error_set(err, "link %zu: out of scope, yet usable or covered", i + 1);
		nunc += !cov[i] && !p->links[i].out_of_scope;
	}
	if (!rc && nunc != p->nr_uncovered)
		rc = error_set(err, "%zu links uncovered, the plan lists %zu", nunc,
			       p->nr_uncovered);
	free(seen);
	free(cov);
	return rc;
}

static void json_end(struct json_writer *w, const struct fabric *f, int n, int port,
		     const char *pre)
{
	char key[16];
	const struct fnode *nd = &f->nodes[n];
	json_key(w, pre);
	json_string(w, nd->is_switch ? nd->name : nd->host);
	if (!nd->is_switch) {
		snprintf(key, sizeof(key), "%s_hca", pre);
		json_key(w, key);
		json_string(w, nd->hca);
	}
	snprintf(key, sizeof(key), "%s_port", pre);
	json_key(w, key);
	json_int(w, port);
	snprintf(key, sizeof(key), "%s_lid", pre);
	json_key(w, key);
	json_int(w, nd->lid);
	snprintf(key, sizeof(key), "%s_guid", pre);
	json_key(w, key);
	char g[24];
	snprintf(g, sizeof(g), "0x%016llx", (unsigned long long)nd->guid);
	json_string(w, g);
}

void plan_write_json(const struct fabric *f, const struct plan *p, struct strbuf *out)
{
	struct json_writer w;
	char id[24];
	json_writer_init(&w, out, false);
	json_open_top(&w);
	json_key(&w, "version");
	json_int(&w, 1);
	json_key(&w, "hosts");
	json_uint(&w, p->hosts);
	json_key(&w, "hcas");
	json_uint(&w, p->hcas);
	json_key(&w, "tiers");
	json_uint(&w, p->tiers);
	json_key(&w, "routing");
	json_string(&w, "up-down, minimal, one route per pair chosen by the planner");
	json_key(&w, "links");
	json_open_array(&w);
	for (size_t i = 0; i < p->nr_links; i++) {
		const struct plan_link *l = &p->links[i];
		if (l->out_of_scope)
			continue; /* counted in out_of_scope; the ids of the rest stay */
		json_open_object(&w);
		snprintf(id, sizeof(id), "L%zu", i + 1);
		json_key(&w, "id");
		json_string(&w, id);
		json_end(&w, f, l->lo, l->lo_port, "a");
		json_end(&w, f, l->hi, l->hi_port, "b");
		json_key(&w, "tier");
		json_int(&w, l->tier);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "lower_bound");
	json_uint(&w, p->lower_bound);
	json_key(&w, "lower_bound_why");
	json_string(&w, p->bound_why);
	json_key(&w, "stages");
	json_open_array(&w);
	for (size_t s = 0; s < p->nr_stages; s++) {
		const struct plan_stage *st = &p->stages[s];
		json_open_object(&w);
		json_key(&w, "stage");
		json_uint(&w, s + 1);
		json_key(&w, "pairs");
		json_open_array(&w);
		for (size_t i = st->first; i < st->first + st->nr; i++) {
			const struct plan_pair *pp = &p->pairs[i];
			json_open_object(&w);
			json_key(&w, "a");
			json_string(&w, f->nodes[pp->a].host);
			json_key(&w, "a_hca");
			json_string(&w, f->nodes[pp->a].hca);
			json_key(&w, "b");
			json_string(&w, f->nodes[pp->b].host);
			json_key(&w, "b_hca");
			json_string(&w, f->nodes[pp->b].hca);
			json_key(&w, "links");
			json_open_array(&w);
			for (size_t r = 0; r < pp->route_len; r++) {
				snprintf(id, sizeof(id), "L%d", p->route[pp->route + r] + 1);
				json_string(&w, id);
			}
			json_close_array(&w);
			json_close_object(&w);
		}
		json_close_array(&w);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "uncovered");
	json_open_array(&w);
	for (size_t i = 0; i < p->nr_uncovered; i++) {
		snprintf(id, sizeof(id), "L%d", p->uncovered[i] + 1);
		json_string(&w, id);
	}
	json_close_array(&w);
	json_key(&w, "out_of_scope");
	json_uint(&w, p->nr_out_of_scope);
	json_key(&w, "missing_hosts");
	json_open_array(&w);
	for (size_t i = 0; i < p->nr_missing; i++)
		json_string(&w, p->missing[i]);
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

static void text_end(struct strbuf *out, const struct fabric *f, int n)
{
	const struct fnode *nd = &f->nodes[n];
	strbuf_add_excerpt(out, nd->is_switch ? nd->name : nd->host, 60);
	if (!nd->is_switch && nd->hca[0]) {
		strbuf_addch(out, '/');
		strbuf_add_excerpt(out, nd->hca, 40);
	}
}

void plan_write_text(const struct fabric *f, const struct plan *p, struct strbuf *out)
{
	size_t usable = 0;
	for (size_t i = 0; i < p->nr_links; i++)
		usable += p->links[i].usable;
	strbuf_addf(out, "%zu hosts, %zu HCAs, %zu links (%zu usable) in %u tier%s\n", p->hosts,
		    p->hcas, p->nr_links, usable, p->tiers, p->tiers == 1 ? "" : "s");
	if (p->nr_out_of_scope)
		strbuf_addf(out, "%zu links out of reach of --hosts' HCAs: not planned\n",
			    p->nr_out_of_scope);
	for (size_t i = 0; i < p->nr_missing; i++) {
		strbuf_addstr(out, "not in the topology (no HCA on a usable link): ");
		strbuf_add_excerpt(out, p->missing[i], 60);
		strbuf_addch(out, '\n');
	}
	strbuf_addf(out, "%zu stage%s; lower bound %u (", p->nr_stages,
		    p->nr_stages == 1 ? "" : "s", p->lower_bound);
	strbuf_add_clean(out, p->bound_why);
	strbuf_addstr(out, ")\n");
	for (size_t s = 0; s < p->nr_stages; s++) {
		const struct plan_stage *st = &p->stages[s];
		strbuf_addf(out, "stage %zu: %zu pairs, %zu hosts\n", s + 1, st->nr, st->hosts);
		for (size_t i = st->first; i < st->first + st->nr; i++) {
			const struct plan_pair *pp = &p->pairs[i];
			strbuf_addstr(out, "  ");
			text_end(out, f, pp->a);
			strbuf_addstr(out, " <-> ");
			text_end(out, f, pp->b);
			strbuf_addf(out, "  (%zu links)\n", pp->route_len);
		}
	}
	for (size_t i = 0; i < p->nr_uncovered; i++) {
		const struct plan_link *l = &p->links[p->uncovered[i]];
		strbuf_addf(out, "uncovered L%d: ", p->uncovered[i] + 1);
		text_end(out, f, l->lo);
		strbuf_addf(out, " port %d - ", l->lo_port);
		text_end(out, f, l->hi);
		strbuf_addf(out, " port %d (%s)\n", l->hi_port,
			    l->usable ? "no free pair could cross it" :
					"down, miswired or off the up/down tree");
	}
}
