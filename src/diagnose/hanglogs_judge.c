/*
 * hanglogs_judge.c: the verdict of 'vigil diagnose hang' from logs (see hanglogs.h): the
 * records the lines left (src/diagnose/hanglogs.c) put into groups, one group per collective
 * (a watchdog line that names no group joins the group timed out in the same collective), the
 * desync report tied to the group of the rank that printed it, PyTorch 1.x's unnamed groups
 * kept apart by their SeqNums, and per group the victims, culprits and suspects.
 */
#include "hanglogs.h"
#include "hanglogs_int.h"
#include "../lib/util.h"

#include <stdlib.h>
#include <string.h>

/* ---- the verdict ---- */

static int cmp_long_asc(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

static void merge_into(struct hlog_rec *to, const struct hlog_rec *from)
{
	if (from->timed_out && !to->timed_out) {
		to->timed_out = true;
		to->at = from->at;
		to->file = from->file;
		to->line = from->line;
	}
	if (from->timed_out && to->at.tb == HLOG_TB_NONE && from->at.tb != HLOG_TB_NONE) {
		to->at = from->at;
		to->file = from->file;
		to->line = from->line;
	}
	to->failed |= from->failed;
#define TAKE(f) if (to->f == HLOG_UNSET) to->f = from->f
	TAKE(seq);
	TAKE(numel_in);
	TAKE(numel_out);
	TAKE(timeout_ms);
	TAKE(ran_ms);
	TAKE(last_enq);
	TAKE(last_started);
	TAKE(last_done);
#undef TAKE
	if (!to->op[0])
		memcpy(to->op, from->op, sizeof(to->op));
	if (to->rank < 0)
		to->rank = from->rank;
	if (to->grank < 0)
		to->grank = from->grank;
	if (to->stream == SIZE_MAX)
		to->stream = from->stream;
}

static void merge_rec(struct hlog *h, size_t into, size_t from)
{
	merge_into(&h->recs[into], &h->recs[from]);
	h->recs[from].dead = true;
	h->recs[from].into = into;
}

/* One collective: the same SeqNum, and OpType and element counts equal where both say them. */
static bool same_collective(const struct hlog_rec *a, const struct hlog_rec *b)
{
	if (a->seq == HLOG_UNSET || a->seq != b->seq)
		return false;
	if (a->op[0] && b->op[0] && strcmp(a->op, b->op))
		return false;
	if (a->numel_in != HLOG_UNSET && b->numel_in != HLOG_UNSET && a->numel_in != b->numel_in)
		return false;
	return a->numel_out == HLOG_UNSET || b->numel_out == HLOG_UNSET ||
	       a->numel_out == b->numel_out;
}

static bool same_rank(const struct hlog_rec *u, const struct hlog_rec *r)
{
	return u->rank >= 0 && r->rank >= 0 ? u->rank == r->rank : u->grank == r->grank;
}

/*
 * A watchdog line that names no group (2.x prints "[Rank N] Watchdog caught" without one)
 * joins, first, the named group whose status line its own output printed for the same work;
 * then, when that line is missing (killed first, cut off), the named group that timed out in
 * the same collective: one collective, one group. What is left stays unnamed (split_unnamed).
 */
static void merge_unnamed(struct hlog *h)
{
	size_t un = SIZE_MAX;
	for (size_t g = 0; g < h->nr_groups; g++)
		if (!h->groups[g].name[0])
			un = g;
	if (un == SIZE_MAX || h->nr_groups < 2)
		return;
	/* beside named groups, what stays unnamed is of a group the logs do not say: not the
	 * default, whose members (every rank seen) would all be listed as suspects */
	h->groups[un].dflt = false;
	/* the named records, once: most logs have few next to many unnamed lines */
	size_t *named = xmalloc((h->nr_recs + 1) * sizeof(*named)), nr_named = 0;
	for (size_t j = 0; j < h->nr_recs; j++)
		if (h->recs[j].group != un && !h->recs[j].dead)
			named[nr_named++] = j;
	for (size_t i = 0; i < h->nr_recs; i++) {
		struct hlog_rec *u = &h->recs[i];
		if (u->group != un || u->dead)
			continue;
		size_t best = SIZE_MAX;
		for (size_t k = 0; k < nr_named; k++) {
			size_t j = named[k];
			const struct hlog_rec *r = &h->recs[j];
			if (r->dead || r->stream != u->stream || !same_rank(u, r))
				continue;
			if (u->seq != HLOG_UNSET && r->seq == u->seq) {
				best = j;
				break;
			}
			if (best == SIZE_MAX && h->groups[r->group].dflt &&
			    (u->seq == HLOG_UNSET || r->seq == HLOG_UNSET))
				best = j;
		}
		if (best != SIZE_MAX)
			merge_rec(h, best, i);
	}
	for (size_t i = 0; i < h->nr_recs; i++) {
		struct hlog_rec *u = &h->recs[i];
		if (u->group != un || u->dead || !u->timed_out)
			continue;
		size_t g = SIZE_MAX;
		bool two = false;
		for (size_t k = 0; k < nr_named && !two; k++) {
			const struct hlog_rec *r = &h->recs[named[k]];
			if (r->dead || !r->timed_out || !same_collective(r, u))
				continue;
			two = g != SIZE_MAX && g != r->group; /* two groups, one signature: say neither */
			g = r->group;
		}
		if (g == SIZE_MAX || two)
			continue;
		size_t into = SIZE_MAX;
		for (size_t k = 0; k < nr_named && into == SIZE_MAX && u->rank >= 0; k++)
			if (h->recs[named[k]].group == g && !h->recs[named[k]].dead &&
			    h->recs[named[k]].rank == u->rank)
				into = named[k];
		if (into != SIZE_MAX) {
			merge_rec(h, into, i);
		} else {
			u->group = g;
			u->key_seq = HLOG_UNSET;
		}
	}
	free(named);
	/* the rest joins a named default group that timed out in nothing (its ranks printed only
	 * a dump signal's "Last enqueued NCCL work"): the same ranks, the same run */
	size_t dflt = SIZE_MAX;
	for (size_t g = 0; g < h->nr_groups && dflt == SIZE_MAX; g++)
		if (h->groups[g].name[0] && h->groups[g].dflt)
			dflt = g;
	for (size_t i = 0; i < h->nr_recs && dflt != SIZE_MAX; i++)
		if (h->recs[i].group == dflt && !h->recs[i].dead && h->recs[i].timed_out)
			dflt = SIZE_MAX;
	for (size_t i = 0; i < h->nr_recs && dflt != SIZE_MAX; i++) {
		struct hlog_rec *u = &h->recs[i];
		if (u->group == un && !u->dead) {
			u->group = dflt;
			u->key_seq = HLOG_UNSET;
		}
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * PyTorch 1.x names no group, so the unnamed group may hold several: their SeqNums count
 * separately and sit far apart, one group's ranks time out within a few works of each other.
 * Runs of SeqNums more than HLOG_SEQ_GAP apart become groups of their own, none of them taken
 * for the default (which one is cannot be told).
 */
static void split_unnamed(struct hlog *h)
{
	size_t un = SIZE_MAX;
	for (size_t g = 0; g < h->nr_groups; g++)
		if (!h->groups[g].name[0])
			un = g;
	if (un == SIZE_MAX)
		return;
	int64_t *seqs = NULL;
	size_t nr = 0, alloc = 0;
	for (size_t i = 0; i < h->nr_recs; i++) {
		const struct hlog_rec *r = &h->recs[i];
		if (r->group == un && !r->dead && r->timed_out && r->seq != HLOG_UNSET) {
			ALLOC_GROW(seqs, nr + 1, alloc);
			seqs[nr++] = r->seq;
		}
	}
	if (nr)
		qsort(seqs, nr, sizeof(*seqs), cmp_i64);
	/* starts[k]: the lowest SeqNum of run k */
	int64_t *starts = NULL;
	size_t nr_runs = 0, alloc_runs = 0;
	for (size_t i = 0; i < nr; i++)
		if (!i || seqs[i] - seqs[i - 1] > HLOG_SEQ_GAP) {
			ALLOC_GROW(starts, nr_runs + 1, alloc_runs);
			starts[nr_runs++] = seqs[i];
		}
	free(seqs);
	if (nr_runs < 2) {
		free(starts);
		return;
	}
	size_t first_new = h->nr_groups;
	h->groups[un].dflt = false;
	h->groups[un].cluster = 1;
	for (size_t k = 1; k < nr_runs; k++) {
		if (h->nr_groups >= HLOG_GROUPS_MAX) {
			h->lost++;
			break;
		}
		ALLOC_GROW(h->groups, h->nr_groups + 1, h->alloc_groups);
		struct hlog_group *g = &h->groups[h->nr_groups++];
		memset(g, 0, sizeof(*g));
		g->cluster = (unsigned)k + 1;
	}
	for (size_t i = 0; i < h->nr_recs; i++) {
		struct hlog_rec *r = &h->recs[i];
		if (r->group != un || r->dead || r->seq == HLOG_UNSET)
			continue;
		size_t k = 0;
		while (k + 1 < nr_runs && r->seq >= starts[k + 1])
			k++;
		if (k && first_new + k - 1 < h->nr_groups)
			r->group = first_new + k - 1;
	}
	free(starts);
}

struct timed {
	long rank;
	size_t group;
};

static int cmp_timed(const void *a, const void *b)
{
	const struct timed *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->group < y->group ? -1 : x->group > y->group;
}

/* The global ranks that printed a watchdog timeout, in any group: never "silent". */
static void collect_timed_ranks(struct hlog *h)
{
	struct timed *t = NULL;
	size_t nr = 0, alloc = 0;
	free(h->timed_ranks);
	free(h->timed_groups);
	for (size_t i = 0; i < h->nr_recs; i++) {
		const struct hlog_rec *r = &h->recs[i];
		long rank = r->rank >= 0 ? r->rank : h->groups[r->group].dflt ? r->grank : -1;
		if (r->dead || !r->timed_out || rank < 0)
			continue;
		ALLOC_GROW(t, nr + 1, alloc);
		t[nr].rank = rank;
		t[nr++].group = r->group;
	}
	if (nr)
		qsort(t, nr, sizeof(*t), cmp_timed);
	h->timed_ranks = xmalloc((nr + 1) * sizeof(long));
	h->timed_groups = xmalloc((nr + 1) * sizeof(size_t));
	for (size_t i = 0; i < nr; i++) {
		h->timed_ranks[i] = t[i].rank;
		h->timed_groups[i] = t[i].group;
	}
	h->nr_timed_ranks = nr;
	free(t);
}

/* The first index of rank in timed_ranks, else SIZE_MAX. */
static size_t timed_index(const struct hlog *h, long rank)
{
	size_t lo = 0, hi = h->nr_timed_ranks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->timed_ranks[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return rank >= 0 && lo < h->nr_timed_ranks && h->timed_ranks[lo] == rank ? lo : SIZE_MAX;
}

static bool printed_timeout(const struct hlog *h, long rank)
{
	return timed_index(h, rank) != SIZE_MAX;
}

/* The group where global rank timed out (not gi), else SIZE_MAX. */
static size_t timed_out_in(const struct hlog *h, long rank, size_t gi)
{
	for (size_t i = timed_index(h, rank); i < h->nr_timed_ranks && h->timed_ranks[i] == rank; i++)
		if (h->timed_groups[i] != gi)
			return h->timed_groups[i];
	return SIZE_MAX;
}

static void add_long(long **arr, size_t *nr, size_t *alloc, uint64_t *more, long v)
{
	for (size_t i = 0; i < *nr; i++)
		if ((*arr)[i] == v)
			return;
	if (*nr >= HLOG_LIST_MAX) {
		(*more)++;
		return;
	}
	ALLOC_GROW(*arr, *nr + 1, *alloc);
	(*arr)[(*nr)++] = v;
}


static const struct hlog_time *stream_last(const struct hlog *h, size_t s)
{
	if (s == SIZE_MAX || s >= h->nr_streams)
		return NULL;
	const struct hlog_stream *st = &h->streams[s];
	return st->last_wall.tb != HLOG_TB_NONE ? &st->last_wall
	       : st->last_glog.tb != HLOG_TB_NONE ? &st->last_glog
						  : NULL;
}

/* The stream that speaks for global rank r (its own file or label): the latest one. */
static size_t stream_of_rank(const struct hlog *h, long r)
{
	size_t best = SIZE_MAX;
	for (size_t i = 0; i < h->nr_streams; i++) {
		const struct hlog_stream *st = &h->streams[i];
		long sr = st->rank >= 0 ? st->rank : h->files[st->file].rank;
		if (sr != r)
			continue;
		if (best == SIZE_MAX || (stream_last(h, i) && !stream_last(h, best)) ||
		    (stream_last(h, i) && stream_last(h, best) &&
		     stream_last(h, i)->tb == stream_last(h, best)->tb &&
		     stream_last(h, i)->ts > stream_last(h, best)->ts))
			best = i;
	}
	return best;
}

static void add_who(struct hlog_who **arr, size_t *nr, size_t *alloc, const struct hlog_who *w)
{
	for (size_t i = 0; i < *nr; i++)
		if ((*arr)[i].rank == w->rank && (*arr)[i].grank == w->grank)
			return;
	if (*nr >= HLOG_LIST_MAX)
		return;
	ALLOC_GROW(*arr, *nr + 1, *alloc);
	(*arr)[(*nr)++] = *w;
}

static void fill_who(const struct hlog *h, struct hlog_who *w, const struct hlog_rec *r, long rank,
		     size_t stream, enum hlog_why why, const struct hlog_time *ref)
{
	memset(w, 0, sizeof(*w));
	w->rank = r ? r->rank : rank;
	w->grank = r ? r->grank : -1;
	w->why = why;
	w->last_enq = r ? r->last_enq : HLOG_UNSET;
	w->last_done = r ? r->last_done : HLOG_UNSET;
	w->seq = r && r->timed_out ? r->seq : HLOG_UNSET;
	w->behind_s = -1;
	w->report = HLOG_REPORT_NONE;
	w->report_seq = w->report_next = HLOG_UNSET;
	w->other_group = SIZE_MAX;
	if (stream == SIZE_MAX && r)
		stream = r->stream;
	if (stream == SIZE_MAX && w->rank >= 0)
		stream = stream_of_rank(h, w->rank);
	if (stream != SIZE_MAX) {
		const struct hlog_stream *st = &h->streams[stream];
		strlcpy_v(w->host, st->host[0] ? st->host : h->files[st->file].host, sizeof(w->host));
		const struct hlog_time *l = stream_last(h, stream);
		if (l)
			w->last = *l;
		if (l && ref && ref->tb == l->tb)
			w->behind_s = ref->ts - l->ts;
	}
	/* a host learned on another stream of the same rank (an NCCL line in rank-3.err) */
	for (size_t i = 0; !w->host[0] && w->rank >= 0 && i < h->nr_streams; i++) {
		const struct hlog_stream *st = &h->streams[i];
		long sr = st->rank >= 0 ? st->rank : h->files[st->file].rank;
		if (sr == w->rank && st->host[0])
			strlcpy_v(w->host, st->host, sizeof(w->host));
	}
}

static int cmp_who(const void *a, const void *b)
{
	const struct hlog_who *x = a, *y = b;
	if (x->why != y->why)
		return x->why < y->why ? -1 : 1;
	int64_t ex = x->last_enq == HLOG_UNSET ? INT64_MAX : x->last_enq,
		ey = y->last_enq == HLOG_UNSET ? INT64_MAX : y->last_enq;
	if (ex != ey)
		return ex < ey ? -1 : 1;
	if (x->behind_s != y->behind_s)
		return x->behind_s > y->behind_s ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/*
 * A member that printed no timeout in this group: a rank that printed one in another group is
 * stuck there (never "silent": it printed); one whose output stopped well before the first
 * timeout is silent (a culprit); the rest are suspects.
 */
static void member_without_timeout(struct hlog *h, struct hlog_group *g, size_t gi,
				   const struct hlog_rec *r, long rank, size_t stream,
				   const struct hlog_time *ref)
{
	struct hlog_who w;
	bool no_output = !r && stream == SIZE_MAX;
	fill_who(h, &w, r, rank, stream, no_output ? HLOG_WHY_NO_OUTPUT : HLOG_WHY_NO_TIMEOUT, ref);
	if (printed_timeout(h, w.rank)) {
		w.why = HLOG_WHY_OTHER_GROUP;
		w.other_group = timed_out_in(h, w.rank, gi);
		add_who(&g->suspects, &g->nr_suspects, &g->alloc_suspects, &w);
	} else if (!no_output && w.behind_s > HLOG_SILENT_S) {
		w.why = HLOG_WHY_SILENT;
		add_who(&g->culprits, &g->nr_culprits, &g->alloc_culprits, &w);
	} else {
		add_who(&g->suspects, &g->nr_suspects, &g->alloc_suspects, &w);
	}
}

/* The global rank of rank grank in group gi: a record that says both, the identity in the
 * default group, or the identity every member seen shows (at least two); else -1. */
static long global_rank_of(const struct hlog *h, size_t gi, long grank)
{
	size_t same = 0, differ = 0;
	for (size_t i = 0; i < h->nr_recs; i++) {
		const struct hlog_rec *r = &h->recs[i];
		if (r->group != gi || r->dead || r->rank < 0 || r->grank < 0)
			continue;
		if (r->grank == grank)
			return r->rank;
		if (r->rank == r->grank)
			same++;
		else
			differ++;
	}
	return h->groups[gi].dflt || (same >= 2 && !differ) ? grank : -1;
}

/*
 * PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG), tied to the group of the rank that printed
 * it (through the merges its record went through). Its "#N" counts the store's traces, not the
 * watchdog's SeqNum, so it is only compared with itself: the ranks that "finished #L, but
 * didn't join #L+1" or "never joined any" are culprits as PyTorch says; the ranks that "joined
 * but didn't finish #L" are culprits only when its snapshot shows others at a later #, else
 * every rank is inside the collective.
 */
static void desync_culprits(struct hlog *h, struct hlog_group *g, size_t gi,
			    const struct hlog_time *ref)
{
	int64_t snap_max = HLOG_UNSET;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < h->nr_desync; i++) {
			const struct hlog_desync *d = &h->desync[i];
			size_t ri = d->rec;
			for (size_t hops = 0; ri < h->nr_recs && h->recs[ri].into != SIZE_MAX &&
					      hops < 8; hops++)
				ri = h->recs[ri].into;
			if (ri >= h->nr_recs || h->recs[ri].group != gi)
				continue;
			if (!pass) {
				if ((d->kind == HLOG_REPORT_SNAP_STARTED ||
				     d->kind == HLOG_REPORT_SNAP_FINISHED) &&
				    d->seq != HLOG_UNSET && (snap_max == HLOG_UNSET || d->seq > snap_max))
					snap_max = d->seq;
				continue;
			}
			if (d->kind == HLOG_REPORT_SNAP_STARTED || d->kind == HLOG_REPORT_SNAP_FINISHED)
				continue;
			if (d->kind == HLOG_REPORT_NOT_FINISHED &&
			    (snap_max == HLOG_UNSET || d->seq == HLOG_UNSET || d->seq >= snap_max))
				continue;
			struct hlog_who w;
			long rank = global_rank_of(h, gi, d->grank);
			fill_who(h, &w, NULL, rank, SIZE_MAX, HLOG_WHY_DESYNC, ref);
			w.grank = d->grank;
			w.report = d->kind;
			w.report_seq = d->seq;
			w.report_next = d->next;
			for (size_t j = 0; j < h->nr_recs; j++)
				if (h->recs[j].group == gi && !h->recs[j].dead &&
				    h->recs[j].grank == d->grank) {
					w.last_enq = h->recs[j].last_enq;
					w.last_done = h->recs[j].last_done;
				}
			add_who(&g->culprits, &g->nr_culprits, &g->alloc_culprits, &w);
		}
}

/* A rank named a culprit is not a suspect too. */
static void drop_named_suspects(struct hlog_group *g)
{
	size_t k = 0;
	for (size_t i = 0; i < g->nr_suspects; i++) {
		const struct hlog_who *s = &g->suspects[i];
		bool named = false;
		for (size_t j = 0; j < g->nr_culprits && !named; j++) {
			const struct hlog_who *c = &g->culprits[j];
			named = s->rank >= 0 && c->rank >= 0 ? s->rank == c->rank
							     : s->grank >= 0 && s->grank == c->grank;
		}
		if (!named)
			g->suspects[k++] = *s;
	}
	g->nr_suspects = k;
}

static void judge_group(struct hlog *h, size_t gi)
{
	struct hlog_group *g = &h->groups[gi];
	/* the collective waited in: the most common timed-out work, the lowest on a tie */
	int64_t *seqs = NULL;
	size_t nr = 0, alloc = 0;
	for (size_t i = 0; i < h->nr_recs; i++) {
		const struct hlog_rec *r = &h->recs[i];
		if (r->group == gi && !r->dead && r->timed_out && r->seq != HLOG_UNSET) {
			ALLOC_GROW(seqs, nr + 1, alloc);
			seqs[nr++] = r->seq;
		}
	}
	bool any_timeout = false;
	for (size_t i = 0; i < h->nr_recs; i++)
		any_timeout |= h->recs[i].group == gi && !h->recs[i].dead && h->recs[i].timed_out;
	if (!any_timeout) {
		free(seqs);
		return;
	}
	g->has_timeout = true;
	g->seq = HLOG_UNSET;
	size_t best_count = 0;
	for (size_t i = 0; i < nr; i++) {
		size_t c = 0;
		for (size_t j = 0; j < nr; j++)
			c += seqs[j] == seqs[i];
		if (c > best_count || (c == best_count && seqs[i] < g->seq))
			best_count = c, g->seq = seqs[i];
	}
	free(seqs);
	g->numel_in = g->numel_out = g->timeout_ms = g->waited_ms = HLOG_UNSET;
	g->first_rank = -1;
	bool have_first = false;
	uint64_t first_order = 0;
	for (size_t i = 0; i < h->nr_recs; i++) {
		const struct hlog_rec *r = &h->recs[i];
		if (r->group != gi || r->dead || !r->timed_out)
			continue;
		if (r->seq != g->seq) {
			/* timed out at a later work of this group: waited too, not to be dropped */
			if (r->seq != HLOG_UNSET && g->seq != HLOG_UNSET && r->seq > g->seq)
				add_long(&g->victims, &g->nr_victims, &g->alloc_victims,
					 &g->more_victims, r->rank >= 0 ? r->rank : r->grank);
			continue;
		}
		if (!g->op[0] && r->op[0])
			memcpy(g->op, r->op, sizeof(g->op));
		if (g->numel_in == HLOG_UNSET)
			g->numel_in = r->numel_in;
		if (g->numel_out == HLOG_UNSET)
			g->numel_out = r->numel_out;
		if (g->timeout_ms == HLOG_UNSET)
			g->timeout_ms = r->timeout_ms;
		if (r->ran_ms != HLOG_UNSET && (g->waited_ms == HLOG_UNSET || r->ran_ms > g->waited_ms))
			g->waited_ms = r->ran_ms;
		uint64_t o = ((uint64_t)r->file << 32) | (r->line & 0xffffffffu);
		if (!have_first || hlog_time_before(&r->at, o, &g->first, first_order)) {
			g->first = r->at;
			g->first_file = r->file;
			g->first_line = r->line;
			g->first_rank = r->rank >= 0 ? r->rank : r->grank;
			first_order = o;
			have_first = true;
		}
		add_long(&g->victims, &g->nr_victims, &g->alloc_victims, &g->more_victims,
			 r->rank >= 0 ? r->rank : r->grank);
	}
	if (g->nr_victims)
		qsort(g->victims, g->nr_victims, sizeof(long), cmp_long_asc);

	/* the members that did not time out at seq, or are behind it */
	struct hlog_who w;
	const struct hlog_time *ref = g->first.tb != HLOG_TB_NONE ? &g->first : NULL;
	for (size_t i = 0; i < h->nr_recs; i++) {
		const struct hlog_rec *r = &h->recs[i];
		if (r->group != gi || r->dead)
			continue;
		if (r->timed_out && r->seq != HLOG_UNSET && g->seq != HLOG_UNSET && r->seq < g->seq) {
			fill_who(h, &w, r, -1, SIZE_MAX, HLOG_WHY_BEHIND, ref);
			add_who(&g->culprits, &g->nr_culprits, &g->alloc_culprits, &w);
		} else if (r->last_enq != HLOG_UNSET && g->seq != HLOG_UNSET && r->last_enq < g->seq) {
			fill_who(h, &w, r, -1, SIZE_MAX, HLOG_WHY_NEVER_ENTERED, ref);
			add_who(&g->culprits, &g->nr_culprits, &g->alloc_culprits, &w);
		} else if (!r->timed_out) {
			member_without_timeout(h, g, gi, r, r->rank, SIZE_MAX, ref);
		}
	}
	desync_culprits(h, g, gi, ref);
	/* the default group's members with no record here: every rank seen, and the gaps */
	if (g->dflt) {
		long maxr = -1;
		for (size_t i = 0; i < h->nr_streams; i++) {
			const struct hlog_stream *st = &h->streams[i];
			long r = st->rank >= 0 ? st->rank : h->files[st->file].rank;
			if (r > maxr)
				maxr = r;
		}
		for (size_t i = 0; i < h->nr_recs; i++)
			if (h->recs[i].group == gi && !h->recs[i].dead && h->recs[i].rank > maxr)
				maxr = h->recs[i].rank;
		if (maxr >= HLOG_RECS_MAX)
			maxr = HLOG_RECS_MAX - 1;
		unsigned char *seen = xcalloc((size_t)maxr + 2, 1);
		for (size_t i = 0; i < h->nr_recs; i++)
			if (h->recs[i].group == gi && !h->recs[i].dead && h->recs[i].rank >= 0 &&
			    h->recs[i].rank <= maxr)
				seen[h->recs[i].rank] = 1;
		for (size_t i = 0; i < g->nr_culprits; i++)
			if (g->culprits[i].rank >= 0 && g->culprits[i].rank <= maxr)
				seen[g->culprits[i].rank] = 1;
		for (long r = 0; r <= maxr; r++)
			if (!seen[r])
				member_without_timeout(h, g, gi, NULL, r, stream_of_rank(h, r), ref);
		free(seen);
	} else if (g->cluster) {
		/* a 1.x group: its ranks are 0..N-1 of its own; one below the highest that printed
		 * nothing here is a member that did not time out (which process it is, is unknown) */
		long maxg = -1;
		for (size_t i = 0; i < h->nr_recs; i++)
			if (h->recs[i].group == gi && !h->recs[i].dead && h->recs[i].grank > maxg)
				maxg = h->recs[i].grank;
		if (maxg >= HLOG_RECS_MAX)
			maxg = HLOG_RECS_MAX - 1;
		unsigned char *seen = xcalloc((size_t)maxg + 2, 1);
		for (size_t i = 0; i < h->nr_recs; i++)
			if (h->recs[i].group == gi && !h->recs[i].dead && h->recs[i].grank >= 0 &&
			    h->recs[i].grank <= maxg)
				seen[h->recs[i].grank] = 1;
		for (long r = 0; r <= maxg; r++) {
			if (seen[r])
				continue;
			fill_who(h, &w, NULL, -1, SIZE_MAX, HLOG_WHY_NO_TIMEOUT, ref);
			w.grank = r;
			add_who(&g->suspects, &g->nr_suspects, &g->alloc_suspects, &w);
		}
		free(seen);
	}
	drop_named_suspects(g);
	if (g->nr_culprits)
		qsort(g->culprits, g->nr_culprits, sizeof(*g->culprits), cmp_who);
	if (g->nr_suspects)
		qsort(g->suspects, g->nr_suspects, sizeof(*g->suspects), cmp_who);
	g->inside = !g->nr_culprits && !g->nr_suspects && g->nr_victims;
}

static int cmp_silent(const void *a, const void *b)
{
	const struct hlog_who *x = a, *y = b;
	return x->behind_s > y->behind_s ? -1 : x->behind_s < y->behind_s;
}

/* Streams by rank (no rank last, by index), the latest first within a rank. */
static const struct hlog *sort_ctx;

static int cmp_stream_rank(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct hlog *h = sort_ctx;
	const struct hlog_stream *sx = &h->streams[x], *sy = &h->streams[y];
	long rx = sx->rank >= 0 ? sx->rank : h->files[sx->file].rank,
	     ry = sy->rank >= 0 ? sy->rank : h->files[sy->file].rank;
	if (rx < 0 || ry < 0 || rx != ry) {
		if (rx != ry)
			return rx < 0 ? 1 : ry < 0 ? -1 : rx < ry ? -1 : 1;
		return x < y ? -1 : x > y;
	}
	const struct hlog_time *lx = stream_last(h, x), *ly = stream_last(h, y);
	if (lx && ly && lx->tb == ly->tb && lx->ts != ly->ts)
		return lx->ts > ly->ts ? -1 : 1;
	if (!lx != !ly)
		return lx ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void find_silent(struct hlog *h)
{
	/* wall clock when any stream has it, else glog stamps */
	enum hlog_tb tb = HLOG_TB_GLOG;
	for (size_t i = 0; i < h->nr_streams; i++)
		if (h->streams[i].last_wall.tb == HLOG_TB_WALL)
			tb = HLOG_TB_WALL;
	size_t timed = 0;
	h->latest.tb = HLOG_TB_NONE;
	for (size_t i = 0; i < h->nr_streams; i++) {
		const struct hlog_stream *st = &h->streams[i];
		const struct hlog_time *l = tb == HLOG_TB_WALL ? &st->last_wall : &st->last_glog;
		if (l->tb != tb)
			continue;
		if (h->latest.tb == HLOG_TB_NONE || l->ts > h->latest.ts)
			h->latest = *l;
	}
	if (h->latest.tb == HLOG_TB_NONE)
		return;
	/* one process per rank: rank-3.out and rank-3.err (or a label's lines) are its outputs,
	 * and it fell silent when the last of them did */
	size_t *by_rank = xcalloc(h->nr_streams + 1, sizeof(*by_rank));
	for (size_t i = 0; i < h->nr_streams; i++)
		by_rank[i] = i;
	sort_ctx = h;
	if (h->nr_streams)
		qsort(by_rank, h->nr_streams, sizeof(*by_rank), cmp_stream_rank);
	for (size_t k = 0; k < h->nr_streams; k++) {
		size_t i = by_rank[k];
		const struct hlog_stream *st = &h->streams[i];
		const struct hlog_time *l = tb == HLOG_TB_WALL ? &st->last_wall : &st->last_glog;
		long r = st->rank >= 0 ? st->rank : h->files[st->file].rank;
		if (l->tb != tb || (r < 0 && !st->host[0] && !h->files[st->file].host[0]))
			continue; /* srun.log and the like speak for no process */
		if (r >= 0) {
			/* the latest stream of this rank stands for it (sorted by rank, then latest) */
			if (k > 0) {
				const struct hlog_stream *pv = &h->streams[by_rank[k - 1]];
				long pr = pv->rank >= 0 ? pv->rank : h->files[pv->file].rank;
				const struct hlog_time *pl = tb == HLOG_TB_WALL ? &pv->last_wall : &pv->last_glog;
				if (pr == r && pl->tb == tb)
					continue;
			}
		}
		timed++;
		if (h->latest.ts - l->ts <= HLOG_SILENT_S || printed_timeout(h, r))
			continue; /* a rank that printed a timeout was not silent, whatever its .out */
		struct hlog_who w;
		fill_who(h, &w, NULL, r, i, HLOG_WHY_SILENT, &h->latest);
		w.last = *l;
		w.behind_s = h->latest.ts - l->ts;
		ALLOC_GROW(h->silent, h->nr_silent + 1, h->alloc_silent);
		h->silent[h->nr_silent++] = w;
	}
	free(by_rank);
	if (h->nr_silent)
		qsort(h->silent, h->nr_silent, sizeof(*h->silent), cmp_silent);
	h->silent_inconclusive = h->nr_silent * 2 > timed;
}

void hlog_finish(struct hlog *h)
{
	if (h->in_file)
		hlog_file_end(h, NULL);
	merge_unnamed(h);
	split_unnamed(h);
	collect_timed_ranks(h);
	find_silent(h);
	for (size_t g = 0; g < h->nr_groups; g++)
		judge_group(h, g);
	/* the groups to look at: one with a culprit first, then one with suspects */
	size_t alloc_order = 0;
	for (int pass = 0; pass < 3; pass++)
		for (size_t g = 0; g < h->nr_groups; g++) {
			const struct hlog_group *gr = &h->groups[g];
			if (!gr->has_timeout)
				continue;
			int p = gr->nr_culprits ? 0 : gr->nr_suspects ? 1 : 2;
			if (p != pass)
				continue;
			ALLOC_GROW(h->order_groups, h->nr_order + 1, alloc_order);
			h->order_groups[h->nr_order++] = g;
		}
	h->verdict = HLOG_UNKNOWN;
	if (h->nr_order) {
		const struct hlog_group *g = &h->groups[h->order_groups[0]];
		h->verdict = g->nr_culprits ? HLOG_CULPRIT : g->nr_suspects ? HLOG_SUSPECTS : HLOG_INSIDE;
	} else if (h->nr_silent && !h->silent_inconclusive) {
		h->verdict = HLOG_SILENT;
	}
}
