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

/* A watchdog line that names no group joins the named group whose status line names the same
 * rank and work; what is left joins the named default group, if there is one. */
static void merge_unnamed(struct hlog *h)
{
	size_t un = SIZE_MAX, dflt = SIZE_MAX;
	for (size_t g = 0; g < h->nr_groups; g++) {
		if (!h->groups[g].name[0])
			un = g;
		else if (h->groups[g].dflt && dflt == SIZE_MAX)
			dflt = g;
	}
	if (un == SIZE_MAX)
		return;
	bool named = h->nr_groups > 1;
	for (size_t i = 0; i < h->nr_recs && named; i++) {
		struct hlog_rec *u = &h->recs[i];
		if (u->group != un || u->dead)
			continue;
		struct hlog_rec *best = NULL;
		for (size_t j = 0; j < h->nr_recs; j++) {
			struct hlog_rec *r = &h->recs[j];
			if (r->group == un || r->dead || r->stream != u->stream)
				continue;
			bool same = u->rank >= 0 && r->rank >= 0 ? u->rank == r->rank : u->grank == r->grank;
			if (same && r->seq == u->seq && u->seq != HLOG_UNSET) {
				best = r;
				break;
			}
			if (same && !best && h->groups[r->group].dflt)
				best = r;
		}
		if (!best && dflt != SIZE_MAX)
			continue; /* moved below, with its group relabelled */
		if (best) {
			merge_into(best, u);
			u->dead = true;
		}
	}
	if (dflt != SIZE_MAX)
		for (size_t i = 0; i < h->nr_recs; i++)
			if (h->recs[i].group == un && !h->recs[i].dead) {
				/* no rec of this rank in the default group: move it there */
				h->recs[i].group = dflt;
			}
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

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
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
		if (r->group != gi || r->dead || !r->timed_out || r->seq != g->seq)
			continue;
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
		qsort(g->victims, g->nr_victims, sizeof(long), cmp_long);

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
			fill_who(h, &w, r, -1, SIZE_MAX, HLOG_WHY_NO_TIMEOUT, ref);
			if (w.behind_s > HLOG_SILENT_S) {
				w.why = HLOG_WHY_SILENT;
				add_who(&g->culprits, &g->nr_culprits, &g->alloc_culprits, &w);
			} else {
				add_who(&g->suspects, &g->nr_suspects, &g->alloc_suspects, &w);
			}
		}
	}
	/* PyTorch's own desync report, after a watchdog line of this group */
	for (size_t i = 0; i < h->nr_desync; i++) {
		const struct hlog_desync *d = &h->desync[i];
		if (d->kind == 2 || d->rec == SIZE_MAX || d->rec >= h->nr_recs)
			continue;
		const struct hlog_rec *after = &h->recs[d->rec];
		if (after->group != gi && !(after->dead && g->dflt))
			continue;
		long rank = g->dflt ? d->grank : -1;
		fill_who(h, &w, NULL, rank, SIZE_MAX, HLOG_WHY_DESYNC, ref);
		w.grank = d->grank;
		for (size_t j = 0; j < h->nr_recs; j++)
			if (h->recs[j].group == gi && !h->recs[j].dead && h->recs[j].grank == d->grank) {
				w.last_enq = h->recs[j].last_enq;
				w.last_done = h->recs[j].last_done;
			}
		add_who(&g->culprits, &g->nr_culprits, &g->alloc_culprits, &w);
	}
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
		for (long r = 0; r <= maxr; r++) {
			if (seen[r])
				continue;
			size_t s = stream_of_rank(h, r);
			fill_who(h, &w, NULL, r, s, s == SIZE_MAX ? HLOG_WHY_NO_OUTPUT : HLOG_WHY_NO_TIMEOUT,
				 ref);
			if (s != SIZE_MAX && w.behind_s > HLOG_SILENT_S) {
				w.why = HLOG_WHY_SILENT;
				add_who(&g->culprits, &g->nr_culprits, &g->alloc_culprits, &w);
			} else {
				add_who(&g->suspects, &g->nr_suspects, &g->alloc_suspects, &w);
			}
		}
		free(seen);
	}
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
		if (h->latest.ts - l->ts <= HLOG_SILENT_S)
			continue;
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
