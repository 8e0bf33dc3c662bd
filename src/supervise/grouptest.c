/* grouptest.c: the adaptive splitting planner for finding bad hosts (see grouptest.h). */
#include "grouptest.h"

void grouptest_init(struct grouptest *g, size_t n, unsigned first_groups)
{
	memset(g, 0, sizeof(*g));
	g->n = n;
	g->first_groups = first_groups < 2 ? 2 : first_groups;
	g->host = xcalloc(n ? n : 1, 1);
}

static void clear_groups(struct gt_group *v, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(v[i].hosts);
}

void grouptest_release(struct grouptest *g)
{
	clear_groups(g->groups, g->nr_groups);
	free(g->groups);
	free(g->host);
	memset(g, 0, sizeof(*g));
}

static void add_group(struct gt_group **v, size_t *nr, size_t *alloc, const size_t *hosts,
		      size_t n, bool confirm)
{
	ALLOC_GROW(*v, *nr + 1, *alloc);
	struct gt_group *x = &(*v)[(*nr)++];
	memset(x, 0, sizeof(*x));
	x->hosts = xmalloc(n * sizeof(size_t));
	memcpy(x->hosts, hosts, n * sizeof(size_t));
	x->nr = n;
	x->confirm = confirm;
}

size_t grouptest_next_round(struct grouptest *g)
{
	struct gt_group *next = NULL;
	size_t nr = 0, alloc = 0;
	if (!g->started) {
		g->started = true;
		size_t k = g->first_groups < g->n ? g->first_groups : g->n;
		size_t *all = xmalloc((g->n ? g->n : 1) * sizeof(size_t));
		for (size_t i = 0; i < g->n; i++)
			all[i] = i;
		for (size_t i = 0, at = 0; i < k; i++) {
			size_t len = g->n / k + (i < g->n % k);
			add_group(&next, &nr, &alloc, all + at, len, false);
			at += len;
		}
		free(all);
	} else {
		for (size_t i = 0; i < g->nr_groups; i++) {
			struct gt_group *x = &g->groups[i];
			if (!x->reported)
				continue; /* no result: nothing learned from it */
			if (!x->failed) {
				for (size_t k = 0; k < x->nr; k++)
					g->host[x->hosts[k]] =
						x->confirm ? GT_INCONCLUSIVE : GT_CLEARED;
			} else if (x->confirm) {
				g->host[x->hosts[0]] = GT_BAD;
			} else if (x->nr == 1) {
				g->host[x->hosts[0]] = GT_SUSPECT;
				add_group(&next, &nr, &alloc, x->hosts, 1, true);
			} else {
				for (size_t k = 0; k < x->nr; k++)
					g->host[x->hosts[k]] = GT_SUSPECT;
				size_t half = (x->nr + 1) / 2;
				add_group(&next, &nr, &alloc, x->hosts, half, false);
				add_group(&next, &nr, &alloc, x->hosts + half, x->nr - half, false);
			}
		}
	}
	clear_groups(g->groups, g->nr_groups);
	free(g->groups);
	g->groups = next;
	g->nr_groups = nr;
	g->alloc_groups = alloc;
	if (nr) {
		g->rounds++;
		g->tests += (unsigned)nr;
	}
	return nr;
}

void grouptest_result(struct grouptest *g, size_t i, bool failed)
{
	if (i >= g->nr_groups)
		return;
	g->groups[i].failed = failed;
	g->groups[i].reported = true;
}

enum gt_host grouptest_host(const struct grouptest *g, size_t host)
{
	return host < g->n ? (enum gt_host)g->host[host] : GT_UNKNOWN;
}
