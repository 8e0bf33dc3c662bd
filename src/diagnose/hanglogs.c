/*
 * hanglogs.c: 'vigil diagnose hang' from logs alone, as a pure function (see hanglogs.h):
 * bytes of many files in, PyTorch watchdog and status lines, desync reports and NCCL lines
 * parsed per rank and process group, each output stream's last stamp kept, and at the end the
 * rank that stopped the collective named (or said to be unknown), in text and JSON.
 */
#include "hanglogs.h"
#include "logs.h"
#include "../lib/json.h"
#include "../lib/util.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *find(const char *s, size_t n, const char *needle)
{
	return memmem(s, n, needle, strlen(needle));
}

void hlog_init(struct hlog *h)
{
	memset(h, 0, sizeof(*h));
	h->last_rec = SIZE_MAX;
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
	h->last_rec = SIZE_MAX;
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

static size_t group_for(struct hlog *h, const char *name)
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

static int rec_cmp_key(const struct hlog_rec *r, size_t group, long rank, long grank)
{
	if (r->group != group)
		return r->group < group ? -1 : 1;
	if (r->rank != rank)
		return r->rank < rank ? -1 : 1;
	if (r->grank != grank)
		return r->grank < grank ? -1 : 1;
	return 0;
}

static size_t rec_for(struct hlog *h, size_t group, long rank, long grank, size_t stream)
{
	size_t lo = 0, hi = h->nr_recs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rec_cmp_key(&h->recs[h->rec_idx[mid]], group, rank, grank) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->nr_recs && !rec_cmp_key(&h->recs[h->rec_idx[lo]], group, rank, grank))
		return h->rec_idx[lo];
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

static size_t rec_of_line(struct hlog *h, const struct line_ctx *lc, const char *s, size_t n)
{
	char name[HLOG_GROUP_MAX];
	long grank, rank;
	pg_prefix(s, n, name, &grank);
	if (grank < 0)
		grank = bracket_rank(s, n);
	rank = lc->label >= 0 ? lc->label : lc->brank >= 0 ? lc->brank
							    : h->files[h->nr_files - 1].rank;
	size_t g = group_for(h, name);
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
	size_t r = rec_for(h, g, rank, grank, lc->stream);
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
	size_t ri = rec_of_line(h, lc, s, (size_t)(wd - s));
	if (ri == SIZE_MAX)
		return;
	struct hlog_rec *r = &h->recs[ri];
	const char *w = wd;
	size_t wn = (size_t)(s + n - wd);
	int64_t seq = num_after(w, wn, "SeqNum=");
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
}

static void status_line(struct hlog *h, const struct line_ctx *lc, const char *s, size_t n)
{
	size_t ri = rec_of_line(h, lc, s, n);
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

static void add_desync(struct hlog *h, long grank, int64_t seq, int kind)
{
	if (h->nr_desync >= HLOG_DESYNC_MAX) {
		h->lost++;
		return;
	}
	ALLOC_GROW(h->desync, h->nr_desync + 1, h->alloc_desync);
	struct hlog_desync *d = &h->desync[h->nr_desync++];
	d->rec = h->last_rec;
	d->grank = grank;
	d->seq = seq;
	d->kind = kind;
}

/* "[0, 1, 5]" ending at close (exclusive): each rank as a desync statement. */
static void desync_list(struct hlog *h, const char *s, const char *close, int64_t seq, int kind)
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
			add_desync(h, (long)v, seq, kind);
		p += used ? used : 1;
	}
}

static void desync_line(struct hlog *h, const char *s, size_t n)
{
	const char *p;
	if ((p = find(s, n, "] are the lagging ranks that caused this timeout")))
		desync_list(h, s, p, HLOG_UNSET, 0);
	else if ((p = find(s, n, "] finished collective #")))
		desync_list(h, s, p, num_after(p, (size_t)(s + n - p), "collective #"), 1);
	else if ((p = find(s, n, "] joined but didn't finish collective #")))
		desync_list(h, s, p, num_after(p, (size_t)(s + n - p), "collective #"), 2);
}

static bool before(const struct hlog_time *a, uint64_t ao, const struct hlog_time *b, uint64_t bo)
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
	if (!h->has_nccl || before(&l.t, l.order, &h->nccl_first.t, h->nccl_first.order))
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
	if (!nccl && !coll && !wdog && !lag)
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
	if (find(t, tn, "NCCL operations have failed or timed out")) {
		size_t ri = rec_of_line(h, &lc, s, n);
		if (ri != SIZE_MAX)
			h->recs[ri].failed = true;
		return;
	}
	if (coll || lag) {
		desync_line(h, t, tn);
		if (!nccl)
			return;
	}
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
		if (!have_first || before(&r->at, o, &g->first, first_order)) {
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

/* ---- output ---- */

const char *hlog_verdict_name(enum hlog_verdict v)
{
	switch (v) {
	case HLOG_CULPRIT: return "culprit";
	case HLOG_SUSPECTS: return "suspects";
	case HLOG_INSIDE: return "inside_collective";
	case HLOG_SILENT: return "silent";
	default: return "unknown";
	}
}

const char *hlog_why_name(enum hlog_why w)
{
	switch (w) {
	case HLOG_WHY_NEVER_ENTERED: return "never_entered";
	case HLOG_WHY_BEHIND: return "behind";
	case HLOG_WHY_DESYNC: return "desync_report";
	case HLOG_WHY_SILENT: return "silent";
	case HLOG_WHY_NO_TIMEOUT: return "no_timeout";
	default: return "no_output";
	}
}

static void time_str(const struct hlog_time *t, char *out, size_t size)
{
	static const char *const mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	static const int before_m[13] = { 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365 };
	out[0] = 0;
	if (!isfinite(t->ts) || t->ts < -1e12 || t->ts > 1e12)
		return;
	long long all = llround(t->ts * 1000.0);
	long long sec = all >= 0 ? all / 1000 : -((-all + 999) / 1000);
	int ms = (int)(all - sec * 1000);
	if (t->tb == HLOG_TB_WALL) {
		time_t tt = (time_t)sec;
		struct tm tm;
		if (gmtime_r(&tt, &tm))
			snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
				 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
	} else if (t->tb == HLOG_TB_GLOG && sec >= 0) {
		int day = (int)(sec / 86400), m = 0;
		while (m < 11 && day >= before_m[m + 1])
			m++;
		int s = (int)(sec % 86400);
		snprintf(out, size, "%s %02d %02d:%02d:%02d.%03d", mon[m], day - before_m[m] + 1,
			 s / 3600, s / 60 % 60, s % 60, ms);
	}
}

static void who_name(const struct hlog_who *w, const struct hlog_group *g, struct strbuf *sb)
{
	if (w->rank >= 0)
		strbuf_addf(sb, "rank %ld", w->rank);
	else
		strbuf_addf(sb, "rank %ld of group %s", w->grank, g->name);
	if (w->host[0]) {
		strbuf_addstr(sb, " (host ");
		strbuf_add_clean(sb, w->host);
		strbuf_addch(sb, ')');
	}
}

static void who_why(const struct hlog_who *w, const struct hlog_group *g, struct strbuf *sb)
{
	char t[48];
	time_str(&w->last, t, sizeof(t));
	switch (w->why) {
	case HLOG_WHY_NEVER_ENTERED:
		strbuf_addf(sb, "never entered it (last enqueued work %lld", (long long)w->last_enq);
		if (w->last_done != HLOG_UNSET)
			strbuf_addf(sb, ", last completed %lld", (long long)w->last_done);
		strbuf_addch(sb, ')');
		break;
	case HLOG_WHY_BEHIND:
		strbuf_addf(sb, "is behind: it timed out at an earlier work, #%lld", (long long)w->seq);
		break;
	case HLOG_WHY_DESYNC:
		strbuf_addstr(sb, "is named by PyTorch's desync report as the rank that did not join");
		break;
	case HLOG_WHY_SILENT:
		strbuf_addf(sb, "printed no timeout and its output stopped at %s", t[0] ? t : "?");
		if (w->behind_s >= 0)
			strbuf_addf(sb, ", %.0f s before the first timeout", w->behind_s);
		break;
	case HLOG_WHY_NO_TIMEOUT:
		strbuf_addstr(sb, "printed no timeout");
		if (t[0])
			strbuf_addf(sb, " (its output goes on until %s)", t);
		break;
	default:
		strbuf_addstr(sb, "has no output in any of the logs");
		break;
	}
	(void)g;
}

static void ranks_str(const long *r, size_t nr, uint64_t more, struct strbuf *sb)
{
	size_t start = sb->len;
	for (size_t i = 0; i < nr;) {
		size_t j = i;
		while (j + 1 < nr && r[j + 1] == r[j] + 1)
			j++;
		if (sb->len > start)
			strbuf_addch(sb, ',');
		if (sb->len - start > 60) {
			strbuf_addstr(sb, "...");
			break;
		}
		if (j == i)
			strbuf_addf(sb, "%ld", r[i]);
		else
			strbuf_addf(sb, "%ld-%ld", r[i], r[j]);
		i = j + 1;
	}
	if (more)
		strbuf_addf(sb, " and %llu more", (unsigned long long)more);
}

static void group_label(const struct hlog_group *g, struct strbuf *sb)
{
	if (g->name[0]) {
		strbuf_addstr(sb, "process group ");
		strbuf_add_clean(sb, g->name);
	} else {
		strbuf_addstr(sb, "the default process group");
	}
}

void hlog_summary(const struct hlog *h, struct strbuf *out)
{
	char t[48];
	if (!h->nr_order) {
		if (h->verdict == HLOG_SILENT) {
			const struct hlog_who *w = &h->silent[0];
			strbuf_addstr(out, "no watchdog timeout in the logs; the output that stopped first is ");
			if (w->rank >= 0)
				strbuf_addf(out, "rank %ld's", w->rank);
			else
				strbuf_addstr(out, "that");
			if (w->host[0]) {
				strbuf_addstr(out, " on host ");
				strbuf_add_clean(out, w->host);
			}
			time_str(&w->last, t, sizeof(t));
			strbuf_addf(out, ", at %s, %.0f s before the latest line of the others", t, w->behind_s);
			if (h->nr_silent > 1)
				strbuf_addf(out, " (%zu outputs stopped early)", h->nr_silent);
			strbuf_addstr(out, ": a hung rank stops logging, so look there first (vigil stacks, "
					   "its host's kernel log).");
		} else {
			strbuf_addstr(out, "unknown: no watchdog timeout line in the logs");
			if (h->silent_inconclusive)
				strbuf_addstr(out, ", and most outputs stop early (the trainer prints "
						   "rarely on most ranks), so silence names no one");
			else
				strbuf_addstr(out, " and no output that stopped well before the others");
			strbuf_addstr(out, "; the logs cannot tell which rank hung, or whether one did.");
		}
	} else {
		const struct hlog_group *g = &h->groups[h->order_groups[0]];
		strbuf_addstr(out, "in ");
		group_label(g, out);
		strbuf_addf(out, ", %zu rank%s (", g->nr_victims + (size_t)g->more_victims,
			    g->nr_victims + g->more_victims == 1 ? "" : "s");
		ranks_str(g->victims, g->nr_victims, g->more_victims, out);
		strbuf_addf(out, ") timed out waiting in %s", g->op[0] ? g->op : "a collective");
		if (g->seq != HLOG_UNSET)
			strbuf_addf(out, " #%lld", (long long)g->seq);
		if (g->numel_in != HLOG_UNSET)
			strbuf_addf(out, " (%lld elements in)", (long long)g->numel_in);
		if (g->waited_ms != HLOG_UNSET)
			strbuf_addf(out, " after %lld ms", (long long)g->waited_ms);
		time_str(&g->first, t, sizeof(t));
		if (t[0])
			strbuf_addf(out, ", the first at %s", t);
		if (g->nr_culprits) {
			strbuf_addstr(out, "; ");
			for (size_t i = 0; i < g->nr_culprits && i < 3; i++) {
				if (i)
					strbuf_addstr(out, "; ");
				who_name(&g->culprits[i], g, out);
				strbuf_addch(out, ' ');
				who_why(&g->culprits[i], g, out);
			}
			if (g->nr_culprits > 3)
				strbuf_addf(out, "; and %zu more", g->nr_culprits - 3);
			strbuf_addstr(out, ". The ranks that print the timeout are victims: look at ");
			who_name(&g->culprits[0], g, out);
			strbuf_addstr(out, " first (vigil stacks, its host's kernel log).");
		} else if (g->nr_suspects) {
			strbuf_addstr(out, "; no rank is shown to have stayed out of it, but ");
			for (size_t i = 0; i < g->nr_suspects && i < 3; i++) {
				if (i)
					strbuf_addstr(out, "; ");
				who_name(&g->suspects[i], g, out);
				strbuf_addch(out, ' ');
				who_why(&g->suspects[i], g, out);
			}
			if (g->nr_suspects > 3)
				strbuf_addf(out, "; and %zu more", g->nr_suspects - 3);
			strbuf_addstr(out, ": suspects, not proven culprits.");
		} else {
			strbuf_addstr(out, "; every rank the logs show timed out in it and none is missing: "
					   "they all entered it and none finished, so the hang is inside the "
					   "collective (network, NCCL, a GPU), or the logs lack the rank that "
					   "stayed out.");
		}
	}
	if (h->has_nccl) {
		const struct hlog_nccl_line *l = &h->nccl_first;
		strbuf_addf(out, " NCCL: %llu WARN and %llu error line%s; the first", (unsigned long long)h->nccl_warns,
			    (unsigned long long)h->nccl_errors, h->nccl_warns + h->nccl_errors == 1 ? "" : "s");
		if (l->host[0]) {
			strbuf_addstr(out, " on ");
			strbuf_add_clean(out, l->host);
		}
		if (l->rank >= 0)
			strbuf_addf(out, " rank %ld", l->rank);
		time_str(&l->t, t, sizeof(t));
		if (t[0])
			strbuf_addf(out, " at %s", t);
		strbuf_addstr(out, ": ");
		strbuf_add_excerpt(out, l->example, 120);
		strbuf_addch(out, '.');
	}
}

void hlog_write_text(const struct hlog *h, struct strbuf *out)
{
	char t[48];
	strbuf_addf(out, "hang from logs: %s\n", hlog_verdict_name(h->verdict));
	hlog_summary(h, out);
	strbuf_addstr(out, "\n");
	for (size_t k = 0; k < h->nr_order; k++) {
		const struct hlog_group *g = &h->groups[h->order_groups[k]];
		strbuf_addstr(out, "\n");
		group_label(g, out);
		strbuf_addf(out, ": %s", g->op[0] ? g->op : "collective");
		if (g->seq != HLOG_UNSET)
			strbuf_addf(out, " #%lld", (long long)g->seq);
		strbuf_addf(out, ", %zu victim%s ", g->nr_victims, g->nr_victims == 1 ? "" : "s");
		ranks_str(g->victims, g->nr_victims, g->more_victims, out);
		strbuf_addstr(out, "\n");
		for (size_t i = 0; i < g->nr_culprits && i < 16; i++) {
			strbuf_addstr(out, "  culprit  ");
			who_name(&g->culprits[i], g, out);
			strbuf_addch(out, ' ');
			who_why(&g->culprits[i], g, out);
			strbuf_addstr(out, "\n");
		}
		for (size_t i = 0; i < g->nr_suspects && i < 16; i++) {
			strbuf_addstr(out, "  suspect  ");
			who_name(&g->suspects[i], g, out);
			strbuf_addch(out, ' ');
			who_why(&g->suspects[i], g, out);
			strbuf_addstr(out, "\n");
		}
	}
	if (h->nr_silent) {
		strbuf_addf(out, "\nstopped first%s:\n", h->silent_inconclusive ? " (most outputs, so "
									 "it names no one)" : "");
		for (size_t i = 0; i < h->nr_silent && i < 8; i++) {
			const struct hlog_who *w = &h->silent[i];
			time_str(&w->last, t, sizeof(t));
			strbuf_addstr(out, "  ");
			if (w->rank >= 0)
				strbuf_addf(out, "rank %ld ", w->rank);
			if (w->host[0]) {
				strbuf_addstr(out, "host ");
				strbuf_add_clean(out, w->host);
				strbuf_addch(out, ' ');
			}
			strbuf_addf(out, "last line %s, %.0f s before the latest\n", t, w->behind_s);
		}
	}
	for (size_t i = 0; i < h->nr_files; i++) {
		if (!h->files[i].error)
			continue;
		strbuf_addstr(out, "note: ");
		strbuf_add_clean(out, h->files[i].name);
		strbuf_addstr(out, ": unknown: ");
		strbuf_add_clean(out, h->files[i].error);
		strbuf_addstr(out, "\n");
	}
	if (h->lost)
		strbuf_addf(out, "note: %llu records past the bounds were not kept\n",
			    (unsigned long long)h->lost);
}

static void json_i64(struct json_writer *w, const char *key, int64_t v)
{
	json_key(w, key);
	if (v == HLOG_UNSET)
		json_null(w);
	else
		json_int(w, v);
}

static void json_rank(struct json_writer *w, const char *key, long v)
{
	json_key(w, key);
	if (v < 0)
		json_null(w);
	else
		json_int(w, v);
}

static void json_str_or_null(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	if (s && s[0])
		json_string(w, s);
	else
		json_null(w);
}

static void json_time(struct json_writer *w, const char *key, const struct hlog_time *t)
{
	char s[48];
	time_str(t, s, sizeof(s));
	json_str_or_null(w, key, s);
}

static void json_who(struct json_writer *w, const struct hlog_who *x)
{
	json_open_object(w);
	json_rank(w, "rank", x->rank);
	json_rank(w, "group_rank", x->grank);
	json_str_or_null(w, "host", x->host);
	json_key(w, "why");
	json_string(w, hlog_why_name(x->why));
	json_i64(w, "last_enqueued", x->last_enq);
	json_i64(w, "last_completed", x->last_done);
	json_i64(w, "timed_out_seq", x->seq);
	json_time(w, "last_time", &x->last);
	json_key(w, "behind_s");
	if (x->behind_s >= 0)
		json_fixed(w, x->behind_s, 3);
	else
		json_null(w);
	json_close_object(w);
}

void hlog_write_json(const struct hlog *h, struct strbuf *out)
{
	struct json_writer w;
	struct strbuf sum = STRBUF_INIT;
	json_writer_init(&w, out, false);
	json_open_object(&w);
	json_key(&w, "verdict");
	json_string(&w, hlog_verdict_name(h->verdict));
	hlog_summary(h, &sum);
	json_key(&w, "summary");
	json_string(&w, sum.buf);
	strbuf_release(&sum);
	json_key(&w, "groups");
	json_open_array(&w);
	for (size_t k = 0; k < h->nr_order; k++) {
		const struct hlog_group *g = &h->groups[h->order_groups[k]];
		json_open_object(&w);
		json_str_or_null(&w, "group", g->name);
		json_key(&w, "default");
		json_bool(&w, g->dflt);
		json_i64(&w, "seq", g->seq);
		json_str_or_null(&w, "op", g->op);
		json_i64(&w, "numel_in", g->numel_in);
		json_i64(&w, "numel_out", g->numel_out);
		json_i64(&w, "timeout_ms", g->timeout_ms);
		json_i64(&w, "waited_ms", g->waited_ms);
		json_key(&w, "first_timeout");
		json_open_object(&w);
		json_time(&w, "time", &g->first);
		json_key(&w, "timebase");
		json_string(&w, g->first.tb == HLOG_TB_WALL ? "wall" : g->first.tb == HLOG_TB_GLOG ? "glog" : "none");
		json_key(&w, "file");
		json_string(&w, g->first_file < h->nr_files ? h->files[g->first_file].name : "");
		json_key(&w, "line");
		json_uint(&w, g->first_line);
		json_rank(&w, "rank", g->first_rank);
		json_close_object(&w);
		json_key(&w, "victims");
		json_open_array(&w);
		for (size_t i = 0; i < g->nr_victims; i++)
			json_int(&w, g->victims[i]);
		json_close_array(&w);
		json_key(&w, "more_victims");
		json_uint(&w, g->more_victims);
		json_key(&w, "culprits");
		json_open_array(&w);
		for (size_t i = 0; i < g->nr_culprits; i++)
			json_who(&w, &g->culprits[i]);
		json_close_array(&w);
		json_key(&w, "suspects");
		json_open_array(&w);
		for (size_t i = 0; i < g->nr_suspects; i++)
			json_who(&w, &g->suspects[i]);
		json_close_array(&w);
		json_key(&w, "inside_collective");
		json_bool(&w, g->inside);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "silent");
	json_open_array(&w);
	for (size_t i = 0; i < h->nr_silent; i++) {
		const struct hlog_who *x = &h->silent[i];
		json_open_object(&w);
		json_rank(&w, "rank", x->rank);
		json_str_or_null(&w, "host", x->host);
		json_time(&w, "last_time", &x->last);
		json_key(&w, "behind_s");
		json_fixed(&w, x->behind_s, 3);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "silent_inconclusive");
	json_bool(&w, h->silent_inconclusive);
	json_time(&w, "latest_time", &h->latest);
	json_key(&w, "nccl");
	json_open_object(&w);
	json_key(&w, "warnings");
	json_uint(&w, h->nccl_warns);
	json_key(&w, "errors");
	json_uint(&w, h->nccl_errors);
	json_key(&w, "first");
	if (h->has_nccl) {
		const struct hlog_nccl_line *l = &h->nccl_first;
		json_open_object(&w);
		json_key(&w, "kind");
		json_string(&w, l->warn ? "warn" : "error");
		json_str_or_null(&w, "host", l->host);
		json_rank(&w, "rank", l->rank);
		json_key(&w, "file");
		json_string(&w, h->files[l->file].name);
		json_key(&w, "line");
		json_uint(&w, l->line);
		json_time(&w, "time", &l->t);
		json_key(&w, "example");
		json_string(&w, l->example);
		json_close_object(&w);
	} else {
		json_null(&w);
	}
	json_key(&w, "hosts");
	json_open_array(&w);
	for (size_t i = 0; i < h->nr_nccl_hosts; i++)
		json_string(&w, h->nccl_hosts[i]);
	json_close_array(&w);
	json_close_object(&w);
	json_key(&w, "files");
	json_open_array(&w);
	for (size_t i = 0; i < h->nr_files; i++) {
		const struct hlog_file *f = &h->files[i];
		json_open_object(&w);
		json_key(&w, "file");
		json_string(&w, f->name);
		json_str_or_null(&w, "host", f->host);
		json_rank(&w, "rank", f->rank);
		json_key(&w, "lines");
		json_uint(&w, f->lines);
		json_key(&w, "bytes");
		json_uint(&w, f->bytes);
		json_key(&w, "cut_lines");
		json_uint(&w, f->cut_lines);
		json_time(&w, "last_time", &f->last);
		json_key(&w, "status");
		json_string(&w, f->error ? "unknown" : "read");
		json_str_or_null(&w, "error", f->error);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "unreadable");
	json_uint(&w, hlog_unreadable(h));
	json_key(&w, "lost");
	json_uint(&w, h->lost);
	json_close_object(&w);
}
