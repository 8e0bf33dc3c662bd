/* replicas.c: see replicas.h */
#include "replicas.h"

#include "../lib/util.h"

#include <stdlib.h>
#include <string.h>

void replicas_init(struct replicas *r, unsigned world, double late_s, replicas_fn fn, void *arg)
{
	memset(r, 0, sizeof(*r));
	if (world < 1)
		world = 1;
	if (world > REPLICAS_WORLD_MAX)
		world = REPLICAS_WORLD_MAX;
	r->world = world;
	r->late_s = late_s > 0 ? late_s : 60;
	r->fn = fn;
	r->arg = arg;
	r->group_of = xcalloc(world, sizeof(*r->group_of));
	for (unsigned i = 0; i < world; i++)
		r->group_of[i] = -1;
	r->slot_of = xcalloc(world, sizeof(*r->slot_of));
	r->diverged = xcalloc(world, sizeof(*r->diverged));
	r->missing = xcalloc(world, sizeof(*r->missing));
	r->groups = xcalloc(world, sizeof(*r->groups));
	r->active = xcalloc(world, sizeof(*r->active));
}

static void drop_pending(struct replica_pending *p)
{
	free(p->digest);
	free(p->have);
	memset(p, 0, sizeof(*p));
}

static void release_groups(struct replicas *r, bool keep_members)
{
	for (size_t a = 0; a < r->nr_active; a++) {
		struct replica_group *G = r->groups[r->active[a]];
		for (unsigned i = 0; i < G->nr_pending; i++)
			drop_pending(&G->pending[i]);
		G->nr_pending = 0;
		G->judged_any = G->unseen_said = false;
		G->last_judged = 0;
		if (!keep_members) {
			free(G->members);
			free(G);
			r->groups[r->active[a]] = NULL;
		}
	}
	if (!keep_members)
		r->nr_active = 0;
}

void replicas_release(struct replicas *r)
{
	if (!r->groups)
		return;
	release_groups(r, false);
	free(r->groups);
	free(r->active);
	free(r->group_of);
	free(r->slot_of);
	free(r->diverged);
	free(r->missing);
	memset(r, 0, sizeof(*r));
}

void replicas_reset(struct replicas *r)
{
	/* the groups' members stay known (the same job, relaunched): a rank that does not
	 * report in the new attempt is missing there too */
	release_groups(r, true);
	memset(r->diverged, 0, r->world * sizeof(*r->diverged));
	memset(r->missing, 0, r->world * sizeof(*r->missing));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Judge pending step i of group g and remove it. */
static void judge(struct replicas *r, unsigned g, unsigned i, bool say_missing)
{
	struct replica_group *G = r->groups[g];
	struct replica_pending p = G->pending[i];
	memmove(&G->pending[i], &G->pending[i + 1], (G->nr_pending - i - 1) * sizeof(*G->pending));
	G->nr_pending--;
	memset(&G->pending[G->nr_pending], 0, sizeof(*G->pending));
	if (!G->judged_any || p.step > G->last_judged)
		G->last_judged = p.step;
	G->judged_any = true;
	r->judged++;

	size_t m = G->nr_members;
	unsigned *ranks = xcalloc(m ? m : 1, sizeof(*ranks));
	uint64_t *digests = xcalloc(m ? m : 1, sizeof(*digests));
	struct replica_verdict v = { .step = p.step, .group = g, .ranks = ranks,
				     .digests = digests, .reported = p.count,
				     .members = (unsigned)m, .size = G->size,
				     .unseen = G->size > m ? G->size - (unsigned)m : 0 };
	/* the missing: said when a rank stops reporting, once */
	size_t n = 0;
	for (size_t k = 0; k < m; k++) {
		unsigned rank = G->members[k];
		if (p.have[k]) {
			r->missing[rank] = false;
		} else if (!r->missing[rank]) {
			r->missing[rank] = true;
			ranks[n++] = rank;
		}
	}
	if (say_missing && (n || (v.unseen && !G->unseen_said)) && r->fn) {
		G->unseen_said |= v.unseen > 0;
		v.kind = REPLICA_MISSING;
		v.nr_ranks = n;
		v.digests = NULL;
		r->fn(r->arg, &v);
		v.digests = digests;
	}
	if (p.count >= 2) {
		/* the most common digest, by sorting a copy */
		uint64_t *sorted = xcalloc(p.count, sizeof(*sorted));
		size_t c = 0;
		for (size_t k = 0; k < m; k++)
			if (p.have[k])
				sorted[c++] = p.digest[k];
		qsort(sorted, c, sizeof(*sorted), cmp_u64);
		uint64_t mode = sorted[0];
		size_t best = 0;
		for (size_t a = 0; a < c;) {
			size_t b = a;
			while (b < c && sorted[b] == sorted[a])
				b++;
			if (b - a > best) {
				best = b - a;
				mode = sorted[a];
			}
			a = b;
		}
		free(sorted);
		n = 0;
		if (best * 2 > c) {
			v.kind = REPLICA_DIVERGED;
			v.has_majority = true;
			v.majority = mode;
			v.agree = (unsigned)best;
			for (size_t k = 0; k < m; k++) {
				unsigned rank = G->members[k];
				if (p.have[k] && p.digest[k] != mode && !r->diverged[rank]) {
					r->diverged[rank] = true;
					digests[n] = p.digest[k];
					ranks[n++] = rank;
				}
			}
		} else {
			/* nothing tells which is wrong: every reporter is a suspect */
			v.kind = REPLICA_UNDECIDED;
			v.agree = (unsigned)best;
			bool fresh = false;
			for (size_t k = 0; k < m; k++) {
				unsigned rank = G->members[k];
				if (!p.have[k])
					continue;
				fresh |= !r->diverged[rank];
				r->diverged[rank] = true;
				digests[n] = p.digest[k];
				ranks[n++] = rank;
			}
			if (!fresh)
				n = 0; /* the same ranks, said already */
		}
		if (n) {
			if (!r->has_bad || p.step < r->first_bad_step)
				r->first_bad_step = p.step;
			r->has_bad = true;
			v.nr_ranks = n;
			if (r->fn)
				r->fn(r->arg, &v);
		}
	}
	free(ranks);
	free(digests);
	free(p.digest);
	free(p.have);
}

static void add_member(struct replicas *r, unsigned g, unsigned rank)
{
	struct replica_group *G = r->groups[g];
	if (G->nr_members == G->alloc_members) {
		size_t na = G->alloc_members ? 2 * G->alloc_members : 4;
		G->members = xrealloc(G->members, na * sizeof(*G->members));
		for (unsigned i = 0; i < G->nr_pending; i++) {
			struct replica_pending *p = &G->pending[i];
			p->digest = xrealloc(p->digest, na * sizeof(*p->digest));
			p->have = xrealloc(p->have, na * sizeof(*p->have));
			memset(p->have + G->alloc_members, 0,
			       (na - G->alloc_members) * sizeof(*p->have));
		}
		G->alloc_members = na;
	}
	r->group_of[rank] = (int)g;
	r->slot_of[rank] = (unsigned)G->nr_members;
	G->members[G->nr_members++] = rank;
}

void replicas_add(struct replicas *r, unsigned rank, uint64_t step, unsigned group,
		  unsigned size, uint64_t digest, double now)
{
	if (rank >= r->world || group >= r->world || !size || size > r->world ||
	    (r->group_of[rank] >= 0 && (unsigned)r->group_of[rank] != group)) {
		r->refused++;
		return;
	}
	if (!r->groups[group]) {
		r->groups[group] = xcalloc(1, sizeof(*r->groups[group]));
		r->active[r->nr_active++] = group;
	}
	struct replica_group *G = r->groups[group];
	if ((G->size && G->size != size) ||
	    (r->group_of[rank] < 0 && G->nr_members >= size)) {
		r->refused++;
		return;
	}
	G->size = size;
	if (G->judged_any && step <= G->last_judged) {
		r->late++;
		return;
	}
	r->reports++;
	if (r->group_of[rank] < 0)
		add_member(r, group, rank);
	unsigned slot = r->slot_of[rank];
	unsigned i = 0;
	while (i < G->nr_pending && G->pending[i].step != step)
		i++;
	if (i == G->nr_pending) {
		if (G->nr_pending == REPLICAS_PENDING_MAX) {
			/* the oldest waits no longer; a step older than every waiting one is late */
			unsigned old = 0;
			for (unsigned k = 1; k < G->nr_pending; k++)
				if (G->pending[k].step < G->pending[old].step)
					old = k;
			if (step < G->pending[old].step) {
				r->late++;
				r->reports--;
				return;
			}
			judge(r, group, old, true);
			i = G->nr_pending;
		}
		struct replica_pending *p = &G->pending[G->nr_pending++];
		p->step = step;
		p->first_at = now;
		p->digest = xcalloc(G->alloc_members, sizeof(*p->digest));
		p->have = xcalloc(G->alloc_members, sizeof(*p->have));
		p->count = 0;
	}
	struct replica_pending *p = &G->pending[i];
	if (p->have[slot]) {
		r->refused++; /* the same step twice: the first report stands */
		return;
	}
	p->have[slot] = true;
	p->digest[slot] = digest;
	p->count++;
	if (p->count == G->size)
		judge(r, group, i, true);
}

void replicas_tick(struct replicas *r, double now)
{
	for (size_t a = 0; a < r->nr_active; a++) {
		unsigned g = r->active[a];
		struct replica_group *G = r->groups[g];
		for (unsigned i = 0; i < G->nr_pending;) {
			if (now - G->pending[i].first_at >= r->late_s)
				judge(r, g, i, true);
			else
				i++;
		}
	}
}

void replicas_flush(struct replicas *r)
{
	for (size_t a = 0; a < r->nr_active; a++)
		while (r->groups[r->active[a]]->nr_pending)
			judge(r, r->active[a], 0, false);
}

/* "key=" then digits in base (10 or 16) up to max_digits; *p moved past them. */
static bool field(const char **p, const char *end, const char *key, int base,
		  unsigned max_digits, uint64_t *out)
{
	size_t kl = strlen(key);
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
	if ((size_t)(end - *p) < kl || memcmp(*p, key, kl))
		return false;
	*p += kl;
	uint64_t v = 0;
	unsigned n = 0;
	for (; *p < end; (*p)++, n++) {
		char c = **p;
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (n == max_digits)
			return false;
		if (base == 10 && v > (UINT64_MAX - d) / 10)
			return false;
		v = v * (uint64_t)base + d;
	}
	if (!n || (*p < end && **p != ' ' && **p != '\t' && **p != '\r'))
		return false;
	*out = v;
	return true;
}

int replicas_parse_line(const char *line, size_t len, uint64_t *step, unsigned *group,
			unsigned *size, uint64_t *digest)
{
	static const char tag[] = "vigil-digest";
	const char *p = line, *end = line + len;
	if (len < sizeof(tag) - 1 || memcmp(line, tag, sizeof(tag) - 1))
		return 0;
	p += sizeof(tag) - 1;
	if (p < end && *p != ' ' && *p != '\t')
		return 0; /* "vigil-digestX": another word */
	uint64_t s, g, m, d;
	if (!field(&p, end, "step=", 10, 20, &s) || !field(&p, end, "group=", 10, 10, &g) ||
	    !field(&p, end, "size=", 10, 10, &m) || !field(&p, end, "digest=", 16, 16, &d) ||
	    g >= REPLICAS_WORLD_MAX || !m || m > REPLICAS_WORLD_MAX)
		return -1;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	if (p != end)
		return -1;
	*step = s;
	*group = (unsigned)g;
	*size = (unsigned)m;
	*digest = d;
	return 1;
}
