/*
 * hanglogs.c: the reading half of 'vigil diagnose hang' from logs (see hanglogs.h): bytes of
 * many files in, PyTorch watchdog and status lines, desync reports and NCCL lines parsed into
 * records per rank and process group, each output stream's last stamp kept. The verdict is
 * hanglogs_judge.c's, the output hanglogs_out.c's.
 */
#include "hanglogs.h"
#include "hanglogs_int.h"
#include "logs.h"
#include "../lib/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *find(const char *s, size_t n, const char *needle)
{
	return memmem(s, n, needle, strlen(needle));
}

void hlog_init(struct hlog *h)
{
	memset(h, 0, sizeof(*h));
	h->last_rec = h->report_rec = SIZE_MAX;
	h->snap = HLOG_REPORT_NONE;
}

void hlog_release(struct hlog *h)
{
	for (size_t i = 0; i < h->nr_files; i++) {
		free(h->files[i].name);
		free(h->files[i].error);
	}
	for (size_t i = 0; i < h->nr_groups; i++) {
		free(h->groups[i].victims);
		free(h->groups[i].culprits);
		free(h->groups[i].suspects);
	}
	free(h->files);
	free(h->streams);
	free(h->groups);
	free(h->recs);
	free(h->rec_idx);
	free(h->desync);
	free(h->nccl_hosts);
	free(h->silent);
	free(h->order_groups);
	free(h->smap);
	free(h->timed_ranks);
	free(h->timed_groups);
	if (h->in_file)
		kmsg_log_release(&h->clock);
	hlog_init(h);
}

static struct hlog_file *new_file(struct hlog *h, const char *name)
{
	ALLOC_GROW(h->files, h->nr_files + 1, h->alloc_files);
	struct hlog_file *f = &h->files[h->nr_files++];
	memset(f, 0, sizeof(*f));
	f->name = xstrdup(name);
	f->rank = -1;
	return f;
}

void hlog_file_begin(struct hlog *h, const char *name, const char *host, long rank)
{
	if (h->in_file)
		hlog_file_end(h, NULL);
	struct hlog_file *f = new_file(h, name);
	if (host)
		strlcpy_v(f->host, host, sizeof(f->host));
	f->rank = rank < 0 ? -1 : rank;
	kmsg_log_init(&h->clock, NULL);
	h->in_file = true;
	h->line_len = 0;
	h->skipping = false;
	h->day_ok = false;
	h->last_rec = h->report_rec = SIZE_MAX;
	h->snap = HLOG_REPORT_NONE;
	h->nr_smap = 0;
}

void hlog_file_error(struct hlog *h, const char *name, const char *error)
{
	if (h->in_file)
		hlog_file_end(h, NULL);
	new_file(h, name)->error = xstrdup(error);
}

size_t hlog_unreadable(const struct hlog *h)
{
	size_t n = 0;
	for (size_t i = 0; i < h->nr_files; i++)
		n += h->files[i].error != NULL;
	return n;
}

/* ---- numbers and stamps ---- */

static inline int dig2(const char *s)
{
	return (s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9') ? (s[0] - '0') * 10 + s[1] - '0'
									   : -1;
}

/* vigil run's stamp with the day kept from the last one (as logs.c reads it, for speed). */
static bool vigil_stamp(struct hlog *h, const char *s, size_t n, double *ts)
{
	if (n < 25 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
	    s[19] != '.' || s[23] != 'Z' || s[24] != ' ' || !h->day_ok || memcmp(s, h->day, 10))
		return false;
	int hh = dig2(s + 11), mi = dig2(s + 14), sec = dig2(s + 17), ms1 = dig2(s + 20),
	    ms2 = s[22] >= '0' && s[22] <= '9' ? s[22] - '0' : -1;
	if (hh < 0 || hh > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60 || ms1 < 0 || ms2 < 0)
		return false;
	*ts = h->day_ts + hh * 3600 + mi * 60 + sec + (ms1 * 10 + ms2) / 1000.0;
	return true;
}

static void keep_day(struct hlog *h, const char *s, size_t n, double ts)
{
	h->day_ok = false;
	if (n < 25 || s[10] != 'T' || s[19] != '.' || s[23] != 'Z')
		return;
	int hh = dig2(s + 11), mi = dig2(s + 14), sec = dig2(s + 17), ms1 = dig2(s + 20);
	if (hh < 0 || mi < 0 || sec < 0 || ms1 < 0 || s[22] < '0' || s[22] > '9')
		return;
	memcpy(h->day, s, 10);
	h->day_ts = ts - (hh * 3600 + mi * 60 + sec + (ms1 * 10 + (s[22] - '0')) / 1000.0);
	h->day_ok = true;
}

/* Digits at s[0..n) (at most 18): the number, else -1; *used how many. */
static int64_t num_at(const char *s, size_t n, size_t *used)
{
	int64_t v = 0;
	size_t i = 0;
	while (i < n && i < 18 && isdigit((unsigned char)s[i]))
		v = v * 10 + (s[i++] - '0');
	*used = i;
	return i ? v : -1;
}

/* The number after key in s[0..n) ("-1" allowed), else HLOG_UNSET. */
static int64_t num_after(const char *s, size_t n, const char *key)
{
	const char *p = find(s, n, key);
	size_t used, k = strlen(key);
	if (!p)
		return HLOG_UNSET;
	p += k;
	size_t left = (size_t)(s + n - p);
	bool neg = left && *p == '-';
	int64_t v = num_at(p + neg, left - neg, &used);
	return v < 0 ? HLOG_UNSET : neg ? -v : v;
}

/* torch's glog stamp "E1201 05:10:12.345678" or "E709 17:05:38.162555850" (the month is not
 * padded) at s: seconds since Jan 1 of its (unknown) year. */
static bool glog_stamp(const char *s, size_t n, double *ts)
{
	static const int before[12] = { 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334 };
	size_t k = 1;
	while (k < n && k < 6 && isdigit((unsigned char)s[k]))
		k++;
	if (n < k + 9 || !strchr("IWEF", s[0]) || (k != 4 && k != 5) || s[k] != ' ' ||
	    s[k + 3] != ':' || s[k + 6] != ':')
		return false;
	int mo = k == 5 ? dig2(s + 1) : s[1] - '0', d = dig2(s + k - 2), hh = dig2(s + k + 1),
	    mi = dig2(s + k + 4), sec = dig2(s + k + 7);
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || hh < 0 || hh > 23 || mi < 0 || mi > 59 ||
	    sec < 0 || sec > 60)
		return false;
	double frac = 0, scale = 0.1;
	for (size_t i = k + 10; i < n && i < k + 19 && s[k + 9] == '.' && isdigit((unsigned char)s[i]); i++) {
		frac += (s[i] - '0') * scale;
		scale /= 10;
	}
	*ts = (before[mo - 1] + d - 1) * 86400.0 + hh * 3600 + mi * 60 + sec + frac;
	return true;
}

/* ---- streams ---- */

static size_t stream_for(struct hlog *h, long rank)
{
	size_t lo = 0, hi = h->nr_smap;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->smap[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->nr_smap && h->smap[lo].rank == rank)
		return h->smap[lo].stream;
	if (h->nr_streams >= HLOG_STREAMS_MAX) {
		h->lost++;
		return SIZE_MAX;
	}
	const struct hlog_file *f = &h->files[h->nr_files - 1];
	ALLOC_GROW(h->streams, h->nr_streams + 1, h->alloc_streams);
	struct hlog_stream *st = &h->streams[h->nr_streams];
	memset(st, 0, sizeof(*st));
	st->file = h->nr_files - 1;
	st->rank = rank;
	strlcpy_v(st->host, f->host, sizeof(st->host));
	ALLOC_GROW(h->smap, h->nr_smap + 1, h->alloc_smap);
	memmove(h->smap + lo + 1, h->smap + lo, (h->nr_smap - lo) * sizeof(*h->smap));
	h->smap[lo].rank = rank;
	h->smap[lo].stream = h->nr_streams;
	h->nr_smap++;
	return h->nr_streams++;
}

/* ---- groups and rank records ---- */

static bool default_name(const char *name)
{
	return !name[0] || !strcmp(name, "0") || !strncmp(name, "0(", 2);
}

size_t hlog_group_for(struct hlog *h, const char *name)
{
	for (size_t i = 0; i < h->nr_groups; i++)
		if (!strcmp(h->groups[i].name, name))
			return i;
	if (h->nr_groups >= HLOG_GROUPS_MAX) {
		h->lost++;
		return SIZE_MAX;
	}
	ALLOC_GROW(h->groups, h->nr_groups + 1, h->alloc_groups);
	struct hlog_group *g = &h->groups[h->nr_groups];
	memset(g, 0, sizeof(*g));
	strlcpy_v(g->name, name, sizeof(g->name));
	g->dflt = default_name(name);
	return h->nr_groups++;
}

static int rec_cmp_key(const struct hlog_rec *r, size_t group, long rank, long grank, int64_t kseq)
{
	if (r->group != group)
		return r->group < group ? -1 : 1;
	if (r->rank != rank)
		return r->rank < rank ? -1 : 1;
	if (r->grank != grank)
		return r->grank < grank ? -1 : 1;
	if (r->key_seq != kseq)
		return r->key_seq < kseq ? -1 : 1;
	return 0;
}

/* The record of (group, rank, grank, kseq), made when new unless find_only. */
static size_t rec_for(struct hlog *h, size_t group, long rank, long grank, int64_t kseq,
		      size_t stream, bool find_only)
{
	size_t lo = 0, hi = h->nr_recs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rec_cmp_key(&h->recs[h->rec_idx[mid]], group, rank, grank, kseq) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->nr_recs && !rec_cmp_key(&h->recs[h->rec_idx[lo]], group, rank, grank, kseq))
		return h->rec_idx[lo];
	if (find_only)
		return SIZE_MAX;
	if (h->nr_recs >= HLOG_RECS_MAX) {
		h->lost++;
		return SIZE_MAX;
	}
	ALLOC_GROW(h->recs, h->nr_recs + 1, h->alloc_recs);
	ALLOC_GROW(h->rec_idx, h->nr_recs + 1, h->alloc_rec_idx);
	struct hlog_rec *r = &h->recs[h->nr_recs];
	memset(r, 0, sizeof(*r));
	r->group = group;
	r->rank = rank;
	r->grank = grank;
	r->stream = stream;
	r->seq = r->numel_in = r->numel_out = r->timeout_ms = r->ran_ms = HLOG_UNSET;
	r->last_enq = r->last_started = r->last_done = HLOG_UNSET;
	r->key_seq = kseq;
	r->into = SIZE_MAX;
	memmove(h->rec_idx + lo + 1, h->rec_idx + lo, (h->nr_recs - lo) * sizeof(*h->rec_idx));
	h->rec_idx[lo] = h->nr_recs;
	return h->nr_recs++;
}

/* ---- one line ---- */

struct line_ctx {
	long label, brank; /* srun's "3: ", torch's "[rank3]:" */
	struct hlog_time t;
	size_t stream;
};

/*
 * "[PG ID 0 PG GUID 0(default_pg) Rank 3]", "[PG 0 (default_pg) Rank 3]", "[PG 0 Rank 3]"
 * before end: the group's name into name ("" none) and the rank in it (-1).
 */
static void pg_prefix(const char *s, size_t n, char name[HLOG_GROUP_MAX], long *grank)
{
	const char *p = find(s, n, "[PG "), *e = s + n;
	size_t used;
	name[0] = 0;
	*grank = -1;
	if (!p)
		return;
	const char *close = memchr(p, ']', (size_t)(e - p));
	const char *rk = close ? find(p, (size_t)(close - p), " Rank ") : NULL;
	if (!rk)
		return;
	int64_t r = num_at(rk + 6, (size_t)(close - rk - 6), &used);
	if (r >= 0 && rk + 6 + used == close)
		*grank = (long)r;
	/* "[PG Rank 3]": the " Rank " found begins inside "[PG " itself, so no name between */
	const char *a = p + 4, *z = rk < p + 4 ? p + 4 : rk;
	const char *guid = find(a, (size_t)(z - a), "PG GUID ");
	if (guid)
		a = guid + 8;
	else if (z - a > 3 && !memcmp(a, "ID ", 3))
		a += 3;
	else if (z - a > 5 && !memcmp(a, "GUID ", 5))
		a += 5; /* WorkNCCL's own "[PG GUID 1 Rank 0]" (after pytorch#191440) */
	size_t k = 0;
	for (const char *c = a; c < z && k + 1 < HLOG_GROUP_MAX; c++) {
		if (*c == ' ' && c + 1 < z && c[1] == '(')
			continue; /* 2.3's "0 (default_pg)" as 2.4's "0(default_pg)" */
		if ((unsigned char)*c < ' ' || (unsigned char)*c >= 0x7f)
			continue;
		name[k++] = *c;
	}
	name[k] = 0;
}

/* The last "[Rank N]" before end, else -1. */
static long bracket_rank(const char *s, size_t n)
{
	long r = -1;
	const char *p = s, *e = s + n;
	size_t used;
	while ((p = find(p, (size_t)(e - p), "[Rank "))) {
		int64_t v = num_at(p + 6, (size_t)(e - p - 6), &used);
		if (v >= 0 && p + 6 + used < e && p[6 + used] == ']')
			r = (long)v;
		p += 6;
	}
	return r;
}

/*
 * The record a line speaks for. seq: the SeqNum of a watchdog line, which in the unnamed group
 * is part of the key (PyTorch 1.x names no group: "[Rank 0]" of two groups are two records).
 * find_only: a line that adds to a record ("Some NCCL operations have failed") makes none.
 */
static size_t rec_of_line(struct hlog *h, const struct line_ctx *lc, const char *s, size_t n,
			  int64_t seq, bool find_only)
{
	char name[HLOG_GROUP_MAX];
	long grank, rank;
	pg_prefix(s, n, name, &grank);
	if (grank < 0)
		grank = bracket_rank(s, n);
	rank = lc->label >= 0 ? lc->label : lc->brank >= 0 ? lc->brank
							    : h->files[h->nr_files - 1].rank;
	size_t g = hlog_group_for(h, name);
	if (g == SIZE_MAX)
		return SIZE_MAX;
	if (h->groups[g].dflt) {
		if (rank < 0)
			rank = grank;
		if (grank < 0)
			grank = rank;
	}
	if (rank < 0 && grank < 0)
		return SIZE_MAX; /* nobody to pin it on */
	size_t r = rec_for(h, g, rank, grank, h->groups[g].name[0] ? HLOG_UNSET : seq, lc->stream,
			   find_only);
	if (r != SIZE_MAX && h->recs[r].stream == SIZE_MAX)
		h->recs[r].stream = lc->stream;
	return r;
}

static void status_numbers(struct hlog_rec *r, const char *s, size_t n)
{
	int64_t v;
	if ((v = num_after(s, n, "ast enqueued NCCL work: ")) != HLOG_UNSET ||
	    (v = num_after(s, n, "ast enqueued work: ")) != HLOG_UNSET)
		r->last_enq = v;
	if ((v = num_after(s, n, "ast started NCCL work: ")) != HLOG_UNSET ||
	    (v = num_after(s, n, "ast started work: ")) != HLOG_UNSET)
		r->last_started = v;
	if ((v = num_after(s, n, "ast completed NCCL work: ")) != HLOG_UNSET ||
	    (v = num_after(s, n, "ast completed work: ")) != HLOG_UNSET)
		r->last_done = v;
}

static void watchdog_line(struct hlog *h, const struct line_ctx *lc, const char *s, size_t n,
			  const char *wd)
{
	const char *w = wd;
	size_t wn = (size_t)(s + n - wd);
	int64_t seq = num_after(w, wn, "SeqNum=");
	size_t ri = rec_of_line(h, lc, s, (size_t)(wd - s), seq, false);
	if (ri == SIZE_MAX)
		return;
	struct hlog_rec *r = &h->recs[ri];
	bool again = r->timed_out && seq == r->seq;
	r->timed_out = true;
	if (seq != HLOG_UNSET)
		r->seq = seq;
	const char *op = find(w, wn, "OpType=");
	if (op) {
		size_t k = 0;
		op += 7;
		while (op < s + n && k + 1 < HLOG_OP_MAX && (isalnum((unsigned char)*op) || *op == '_'))
			r->op[k++] = *op++;
		r->op[k] = 0;
	}
	int64_t v;
	if ((v = num_after(w, wn, "NumelIn=")) != HLOG_UNSET)
		r->numel_in = v;
	if ((v = num_after(w, wn, "NumelOut=")) != HLOG_UNSET)
		r->numel_out = v;
	if ((v = num_after(w, wn, "Timeout(ms)=")) != HLOG_UNSET)
		r->timeout_ms = v;
	if ((v = num_after(w, wn, " ran for ")) != HLOG_UNSET)
		r->ran_ms = v;
	if (!again || r->at.tb == HLOG_TB_NONE) {
		r->at = lc->t;
		r->file = h->nr_files - 1;
		r->line = h->files[h->nr_files - 1].lines;
	}
	h->last_rec = ri;
	h->report_rec = SIZE_MAX; /* a report of this rank opens after it */
	h->snap = HLOG_REPORT_NONE;
}

static void status_line(struct hlog *h, const struct line_ctx *lc, const char *s, size_t n)
{
	size_t ri = rec_of_line(h, lc, s, n, HLOG_UNSET, false);
	if (ri == SIZE_MAX)
		return;
	struct hlog_rec *r = &h->recs[ri];
	int64_t at = num_after(s, n, "Timeout at NCCL work: ");
	if (at == HLOG_UNSET)
		at = num_after(s, n, "detected by watchdog at work: ");
	if (at == HLOG_UNSET)
		at = num_after(s, n, "at work sequence id: ");
	if (at != HLOG_UNSET && r->seq == HLOG_UNSET)
		r->seq = at;
	if (find(s, n, "Timeout at NCCL work: "))
		r->timed_out = true;
	status_numbers(r, s, n);
	if (r->file == 0 && r->line == 0) {
		r->file = h->nr_files - 1;
		r->line = h->files[h->nr_files - 1].lines;
	}
}

static void add_desync(struct hlog *h, long grank, int64_t seq, int64_t next,
		       enum hlog_report kind)
{
	if (h->nr_desync >= HLOG_DESYNC_MAX) {
		h->lost++;
		return;
	}
	ALLOC_GROW(h->desync, h->nr_desync + 1, h->alloc_desync);
	struct hlog_desync *d = &h->desync[h->nr_desync++];
	d->rec = h->report_rec != SIZE_MAX ? h->report_rec : h->last_rec;
	d->grank = grank;
	d->seq = seq;
	d->next = next;
	d->kind = kind;
}

/* "[0, 1, 5]" ending at close (exclusive): each rank as a desync statement. */
static void desync_list(struct hlog *h, const char *s, const char *close, int64_t seq,
			int64_t next, enum hlog_report kind)
{
	const char *open = close;
	while (open > s && open[-1] != '[')
		open--;
	if (open == s)
		return;
	for (const char *p = open; p < close;) {
		size_t used;
		int64_t v = num_at(p, (size_t)(close - p), &used);
		if (v >= 0)
			add_desync(h, (long)v, seq, next, kind);
		p += used ? used : 1;
	}
}

/*
 * "\t - [3] Timeout at collective: ALLREDUCE, #183" opens a report: its lines speak for the
 * rank that printed it (the latest watchdog record of rank 3 in this file), not for whichever
 * rank's watchdog line came last in an interleaved file.
 */
static void report_opens(struct hlog *h, const char *s, size_t n, const char *at)
{
	const char *open = at;
	size_t used;
	while (open > s && open[-1] != '[')
		open--;
	int64_t r = open > s ? num_at(open, (size_t)(at - open), &used) : -1;
	h->report_rec = SIZE_MAX;
	h->snap = HLOG_REPORT_NONE;
	(void)n;
	/* bounded: a file of report lines cannot make this quadratic */
	for (size_t i = h->nr_recs, k = 0; r >= 0 && i-- > 0 && k++ < 4096;) {
		const struct hlog_rec *x = &h->recs[i];
		if (x->file == h->nr_files - 1 && x->timed_out && x->grank == r) {
			h->report_rec = i;
			break;
		}
	}
}

/* The lines of the desync report (TraceUtils.h), numbers in the report's own count. */
static bool desync_line(struct hlog *h, const char *s, size_t n)
{
	const char *p, *e = s + n;
	if ((p = find(s, n, "] Timeout at collective: "))) {
		report_opens(h, s, n, p);
	} else if ((p = find(s, n, "] are the lagging ranks that caused this timeout"))) {
		desync_list(h, s, p, HLOG_UNSET, HLOG_UNSET, HLOG_REPORT_NEVER_JOINED);
	} else if ((p = find(s, n, "] finished collective #"))) {
		const char *q = find(p, (size_t)(e - p), "join collective #");
		desync_list(h, s, p, num_after(p, (size_t)(e - p), "collective #"),
			    q ? num_after(q, (size_t)(e - q), "collective #") : HLOG_UNSET,
			    HLOG_REPORT_NOT_JOINED);
	} else if ((p = find(s, n, "] joined but didn't finish collective #"))) {
		desync_list(h, s, p, num_after(p, (size_t)(e - p), "collective #"), HLOG_UNSET,
			    HLOG_REPORT_NOT_FINISHED);
	} else if ((p = find(s, n, "#")) && (find(s, n, " started ranks:") ||
					     find(s, n, " finished ranks:"))) {
		h->snap = find(s, n, " started ranks:") ? HLOG_REPORT_SNAP_STARTED
							: HLOG_REPORT_SNAP_FINISHED;
		h->snap_seq = num_after(p, (size_t)(e - p), "#");
	} else if (h->snap != HLOG_REPORT_NONE &&
		   (p = find(s, n, h->snap == HLOG_REPORT_SNAP_STARTED ? "] started " : "] finished "))) {
		desync_list(h, s, p, h->snap_seq, HLOG_UNSET, h->snap);
	} else {
		return false;
	}
	return true;
}

bool hlog_time_before(const struct hlog_time *a, uint64_t ao, const struct hlog_time *b,
		      uint64_t bo)
{
	if (a->tb != HLOG_TB_NONE && a->tb == b->tb)
		return a->ts < b->ts;
	if (a->tb != b->tb)
		return a->tb == HLOG_TB_WALL || (a->tb == HLOG_TB_GLOG && b->tb == HLOG_TB_NONE);
	return ao < bo;
}

/* NCCL warnings every healthy run prints (no network plugin, a NIC without a path). */
static const char *const nccl_benign[] = {
	"NET/Plugin", "Could not find real path", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA",
};

static const char *const nccl_errors[] = {
	"NCCL error", "ncclSystemError", "ncclInternalError", "ncclRemoteError",
	"ncclUnhandledCudaError", "ncclInvalidUsage",
};

static void nccl_line(struct hlog *h, const struct line_ctx *lc, const char *s, size_t n,
		      size_t text)
{
	const char *w = find(s, n, " NCCL WARN ");
	bool err = false;
	if (w) {
		for (size_t i = 0; i < ARRAY_SIZE(nccl_benign); i++)
			if (find(s, n, nccl_benign[i]))
				return;
	} else {
		for (size_t i = 0; i < ARRAY_SIZE(nccl_errors) && !err; i++)
			err = find(s, n, nccl_errors[i]) != NULL;
		if (!err)
			return;
	}
	struct hlog_nccl_line l;
	memset(&l, 0, sizeof(l));
	l.warn = w != NULL;
	l.t = lc->t;
	l.order = h->order++;
	l.file = h->nr_files - 1;
	l.line = h->files[l.file].lines;
	l.rank = lc->label >= 0 ? lc->label : lc->brank >= 0 ? lc->brank : h->files[l.file].rank;
	/* "host:pid:tid [dev] NCCL WARN": the host, taught to this stream too */
	if (w) {
		const char *a = s + text <= w ? s + text : s; /* a stamp-like prefix ran past it */
		const char *c = memchr(a, ':', (size_t)(w - a));
		size_t k = c ? (size_t)(c - a) : 0;
		bool ok = k && k < HLOG_HOST_MAX && isalnum((unsigned char)a[0]);
		for (size_t i = 0; ok && i < k; i++)
			ok = isalnum((unsigned char)a[i]) || a[i] == '.' || a[i] == '-' || a[i] == '_';
		if (ok) {
			memcpy(l.host, a, k);
			l.host[k] = 0;
			if (lc->stream != SIZE_MAX && !h->streams[lc->stream].host[0])
				strlcpy_v(h->streams[lc->stream].host, l.host, HLOG_HOST_MAX);
		}
	}
	if (!l.host[0])
		strlcpy_v(l.host, h->files[l.file].host, sizeof(l.host));
	size_t ex = n < HLOG_EXAMPLE_MAX ? n : HLOG_EXAMPLE_MAX;
	memcpy(l.example, s, ex);
	l.example[ex] = 0;
	for (size_t i = 0; i < ex; i++)
		if (!l.example[i])
			l.example[i] = ' ';
	if (l.warn)
		h->nccl_warns++;
	else
		h->nccl_errors++;
	if (!h->has_nccl || hlog_time_before(&l.t, l.order, &h->nccl_first.t, h->nccl_first.order))
		h->nccl_first = l;
	h->has_nccl = true;
	if (l.host[0]) {
		for (size_t i = 0; i < h->nr_nccl_hosts; i++)
			if (!strcmp(h->nccl_hosts[i], l.host))
				return;
		if (h->nr_nccl_hosts < HLOG_NCCL_HOSTS_MAX) {
			ALLOC_GROW(h->nccl_hosts, h->nr_nccl_hosts + 1, h->alloc_nccl_hosts);
			strlcpy_v(h->nccl_hosts[h->nr_nccl_hosts++], l.host, HLOG_HOST_MAX);
		}
	}
}

static void judge_line(struct hlog *h, const char *s, size_t n, bool cut)
{
	struct hlog_file *file = &h->files[h->nr_files - 1];
	struct line_ctx lc = { -1, -1, { HLOG_TB_NONE, 0 }, SIZE_MAX };
	double ts;
	enum kmsg_timebase tb;
	size_t i = 0, used;
	file->lines++;
	if (cut)
		file->cut_lines++;
	else if (n && s[n - 1] == '\r')
		n--;
	if (vigil_stamp(h, s, n, &ts)) {
		lc.t.tb = HLOG_TB_WALL;
		lc.t.ts = ts;
	} else if (n && (isdigit((unsigned char)s[0]) || s[0] == '[' || isupper((unsigned char)s[0])) &&
		   kmsg_line_time(&h->clock, s, n, &ts, &tb) && tb == KMSG_TB_WALL) {
		keep_day(h, s, n, ts);
		lc.t.tb = HLOG_TB_WALL;
		lc.t.ts = ts;
	}
	/* past the stamp ("2026-...Z ", ISO, "[  12.3]"), then srun's "3: " and torch's "[rank3]:" */
	i = dlog_skip_stamp(s, n);
	int64_t v = num_at(s + i, n - i, &used);
	if (v >= 0 && used <= 7 && i + used + 1 < n && s[i + used] == ':' && s[i + used + 1] == ' ') {
		lc.label = (long)v;
		for (i += used + 2; i < n && s[i] == ' '; i++)
			;
	}
	/* another launcher's prefix before torch's: "[80746] [rank0]:[E321 ...", "host [stderr]
	 * [rank14]:[E909 ..." (the rank is torch's, a few words in) */
	if (n - i > 6 && memcmp(s + i, "[rank", 5) && memchr(s + i, '[', n - i)) {
		const char *rk = find(s + i, n - i < 96 ? n - i : 96, "[rank");
		if (rk && (size_t)(rk - s) + 6 < n && isdigit((unsigned char)rk[5]))
			i = (size_t)(rk - s);
	}
	if (n - i > 6 && !memcmp(s + i, "[rank", 5)) {
		v = num_at(s + i + 5, n - i - 5, &used);
		if (v >= 0 && used <= 7 && i + 5 + used + 1 < n && s[i + 5 + used] == ']' &&
		    s[i + 5 + used + 1] == ':') {
			lc.brank = (long)v;
			i += 5 + used + 2;
		}
	}
	if (lc.t.tb == HLOG_TB_NONE && i + 1 < n && s[i] == '[' && glog_stamp(s + i + 1, n - i - 1, &ts)) {
		lc.t.tb = HLOG_TB_GLOG;
		lc.t.ts = ts;
	}
	lc.stream = stream_for(h, lc.label);
	if (lc.stream != SIZE_MAX) {
		struct hlog_stream *st = &h->streams[lc.stream];
		st->lines++;
		if (lc.t.tb == HLOG_TB_WALL)
			st->last_wall = lc.t;
		else if (lc.t.tb == HLOG_TB_GLOG)
			st->last_glog = lc.t;
	}
	if (lc.t.tb == HLOG_TB_WALL || (lc.t.tb == HLOG_TB_GLOG && file->last.tb != HLOG_TB_WALL))
		file->last = lc.t;

	/* the lines that matter hold one of these; most lines hold none */
	const char *t = s + i;
	size_t tn = n - i;
	bool nccl = find(t, tn, "NCCL") || find(t, tn, "nccl");
	bool coll = find(t, tn, "ollective") != NULL;
	bool wdog = find(t, tn, "atchdog") != NULL;
	bool lag = find(t, tn, "lagging") != NULL;
	/* the desync report's snapshot: "#183 started ranks:", "[0, 1, 2] started ALLREDUCE" */
	bool snap = memchr(t, '#', tn) || (h->snap != HLOG_REPORT_NONE && memchr(t, ']', tn));
	if (!nccl && !coll && !wdog && !lag && !snap)
		return;
	const char *p;
	if ((p = find(t, tn, "Watchdog caught collective operation timeout: "))) {
		watchdog_line(h, &lc, s, n, p);
		/* "[PG ...] Process group watchdog thread terminated with exception: [Rank 1] Watchdog
		 * caught ...": the group's prefix comes first; watchdog_line() read the rank before */
		return;
	}
	if (find(t, tn, "ast enqueued") || find(t, tn, "Timeout at NCCL work: ") ||
	    find(t, tn, "detected by watchdog at work")) {
		status_line(h, &lc, s, n);
		return;
	}
	if ((p = find(t, tn, "WorkNCCL(")) &&
	    find(p, (size_t)(t + tn - p), " timed out in blocking wait")) {
		/* "[Rank 1] Work WorkNCCL(SeqNum=2521, ...) timed out in blocking wait." */
		watchdog_line(h, &lc, s, n, p);
		return;
	}
	if (find(t, tn, "NCCL operations have failed or timed out")) {
		size_t ri = rec_of_line(h, &lc, s, n, HLOG_UNSET, true);
		if (ri == SIZE_MAX && h->last_rec != SIZE_MAX)
			ri = h->last_rec; /* 1.x: "[E ...] Some NCCL operations have failed", no rank */
		if (ri != SIZE_MAX)
			h->recs[ri].failed = true;
		return;
	}
	if ((coll || lag || snap) && desync_line(h, t, tn))
		return;
	if (nccl)
		nccl_line(h, &lc, s, n, i);
}

void hlog_feed(struct hlog *h, const char *buf, size_t len)
{
	const char *p = buf, *e = buf + len;
	if (!h->in_file)
		return;
	h->files[h->nr_files - 1].bytes += len;
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t n = (size_t)((nl ? nl : e) - p);
		if (h->skipping) {
			if (nl)
				h->skipping = false;
		} else if (!h->line_len && nl && n <= HLOG_LINE_MAX) {
			judge_line(h, p, n, false);
		} else {
			size_t room = HLOG_LINE_MAX - h->line_len, take = n < room ? n : room;
			memcpy(h->line + h->line_len, p, take);
			h->line_len += take;
			if (n > room) {
				judge_line(h, h->line, h->line_len, true);
				h->line_len = 0;
				h->skipping = !nl;
			} else if (nl) {
				judge_line(h, h->line, h->line_len, false);
				h->line_len = 0;
			}
		}
		p = nl ? nl + 1 : e;
	}
}

void hlog_file_end(struct hlog *h, const char *error)
{
	if (!h->in_file)
		return;
	if (h->line_len)
		judge_line(h, h->line, h->line_len, false);
	h->line_len = 0;
	h->skipping = false;
	if (error) {
		struct hlog_file *f = &h->files[h->nr_files - 1];
		free(f->error);
		f->error = xstrdup(error);
	}
	kmsg_log_release(&h->clock);
	h->in_file = false;
}
