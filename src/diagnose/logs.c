/*
 * logs.c: 'vigil diagnose logs' as a pure function (see logs.h): bytes of many files in, lines
 * split and stamped, known error lines (logcat.c) grouped into one finding per cause with the
 * hosts and ranks it was seen on, and the root chosen. torchrun's multi-line summary is read by
 * logtorchrun.c, the output written by logsout.c.
 */
#include "logs.h"

#include <ctype.h>

void dlog_init(struct dlog *d)
{
	memset(d, 0, sizeof(*d));
	d->root = -1;
}

void dlog_release(struct dlog *d)
{
	for (size_t i = 0; i < d->nr; i++) {
		free(d->f[i].hosts);
		free(d->f[i].ranks);
	}
	free(d->f);
	for (size_t i = 0; i < d->nr_files; i++) {
		free(d->files[i].name);
		free(d->files[i].error);
	}
	free(d->files);
	free(d->rh);
	dlog_tr_release(d);
	if (d->in_file)
		kmsg_log_release(&d->clock);
	memset(d, 0, sizeof(*d));
	d->root = -1;
}

static struct dlog_file *new_file(struct dlog *d, const char *name)
{
	ALLOC_GROW(d->files, d->nr_files + 1, d->alloc_files);
	struct dlog_file *f = &d->files[d->nr_files++];
	memset(f, 0, sizeof(*f));
	f->name = xstrdup(name);
	f->rank = -1;
	return f;
}

/* ".../attempt-N/srun.log": vigil run's own file of srun's unlabelled lines (rankout.h); a
 * srun.log anywhere else may be the job's */
static bool attempt_srun_log(const char *name)
{
	size_t n = strlen(name);
	if (n < 9 || strcmp(name + n - 9, "/srun.log"))
		return false;
	const char *end = name + n - 9, *p = end;
	while (p > name && p[-1] != '/')
		p--;
	if (end - p < 9 || strncmp(p, "attempt-", 8))
		return false;
	for (const char *q = p + 8; q < end; q++)
		if (*q < '0' || *q > '9')
			return false;
	return true;
}

void dlog_file_begin(struct dlog *d, const char *name, const char *host, long rank)
{
	if (d->in_file)
		dlog_file_end(d, NULL);
	struct dlog_file *f = new_file(d, name);
	if (host)
		strlcpy_v(f->host, host, sizeof(f->host));
	f->rank = rank;
	f->srun_own = attempt_srun_log(name);
	kmsg_log_init(&d->clock, NULL);
	d->in_file = true;
	d->line_len = 0;
	d->skipping = false;
	d->last_tb = DLOG_TB_NONE;
	d->last_ts = 0;
	d->day_ok = false;
	dlog_tr_release(d);
}

void dlog_file_error(struct dlog *d, const char *name, const char *error)
{
	if (d->in_file)
		dlog_file_end(d, NULL);
	struct dlog_file *f = new_file(d, name);
	f->error = xstrdup(error);
}

size_t dlog_unreadable(const struct dlog *d)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nr_files; i++)
		n += d->files[i].error != NULL;
	return n;
}

static struct dlog_finding *finding_for(struct dlog *d, const struct dlog_match *m)
{
	for (size_t i = 0; i < d->nr; i++)
		if (d->f[i].code == m->code && d->f[i].num == m->num)
			return &d->f[i];
	if (d->nr >= DLOG_FINDINGS_MAX)
		return NULL;
	ALLOC_GROW(d->f, d->nr + 1, d->alloc);
	struct dlog_finding *f = &d->f[d->nr++];
	memset(f, 0, sizeof(*f));
	f->code = m->code;
	f->cause = m->cause;
	f->action = m->action;
	f->act = m->act;
	f->tier = m->tier;
	f->num = m->num;
	return f;
}

static void add_host(struct dlog_finding *f, const char *host)
{
	if (!host[0])
		return;
	for (size_t i = 0; i < f->nr_hosts; i++)
		if (!strcmp(f->hosts[i], host))
			return;
	if (f->nr_hosts >= DLOG_HOSTS_MAX) {
		f->more_hosts++;
		return;
	}
	ALLOC_GROW(f->hosts, f->nr_hosts + 1, f->alloc_hosts);
	strlcpy_v(f->hosts[f->nr_hosts++], host, DLOG_HOST_MAX);
}

static void add_rank(struct dlog_finding *f, long rank)
{
	if (rank < 0)
		return;
	size_t lo = 0, hi = f->nr_ranks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (f->ranks[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < f->nr_ranks && f->ranks[lo] == rank)
		return;
	if (f->nr_ranks >= DLOG_RANKS_MAX) {
		f->more_ranks++;
		return;
	}
	ALLOC_GROW(f->ranks, f->nr_ranks + 1, f->alloc_ranks);
	memmove(f->ranks + lo + 1, f->ranks + lo, (f->nr_ranks - lo) * sizeof(*f->ranks));
	f->ranks[lo] = rank;
	f->nr_ranks++;
}

static size_t rh_find(const struct dlog *d, long rank)
{
	size_t lo = 0, hi = d->nr_rh;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->rh[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void learn_host(struct dlog *d, long rank, const char *host)
{
	size_t i = rh_find(d, rank);
	if ((i < d->nr_rh && d->rh[i].rank == rank) || d->nr_rh >= DLOG_RANK_HOSTS_MAX)
		return; /* the first host said wins (a rank moves only between attempts) */
	ALLOC_GROW(d->rh, d->nr_rh + 1, d->alloc_rh);
	memmove(d->rh + i + 1, d->rh + i, (d->nr_rh - i) * sizeof(*d->rh));
	d->rh[i].rank = rank;
	strlcpy_v(d->rh[i].host, host, sizeof(d->rh[i].host));
	d->nr_rh++;
}

static const char *host_of(const struct dlog *d, long rank)
{
	size_t i = rh_find(d, rank);
	return i < d->nr_rh && d->rh[i].rank == rank ? d->rh[i].host : NULL;
}

/* Is a earlier than b? Wall clocks compare everywhere, boot times within one file, and
 * without either the order seen decides. */
static bool occ_before(const struct dlog_occ *a, const struct dlog_occ *b)
{
	if (a->tb == DLOG_TB_WALL && b->tb == DLOG_TB_WALL)
		return a->ts < b->ts;
	if (a->tb == DLOG_TB_WALL || b->tb == DLOG_TB_WALL)
		return a->tb == DLOG_TB_WALL; /* a timed one stands for its finding */
	return a->seq < b->seq;
}

static inline int dig2(const char *s)
{
	return (s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9') ? (s[0] - '0') * 10 + s[1] - '0'
									   : -1;
}

/*
 * vigil run's own stamp, "2026-12-01T02:51:00.703Z ", on every line of a rank file: read here
 * with the day's start kept from the last line, since the kernel log parser's general reader
 * of every stamp form would take 40% of the time of a large rank file. Anything else, or a
 * new day: false, and the general reader decides.
 */
static bool vigil_stamp(struct dlog *d, const char *s, size_t n, double *ts)
{
	if (n < 25 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
	    s[19] != '.' || s[23] != 'Z' || s[24] != ' ' || !d->day_ok || memcmp(s, d->day, 10))
		return false;
	int h = dig2(s + 11), mi = dig2(s + 14), sec = dig2(s + 17), ms1 = dig2(s + 20),
	    ms2 = s[22] >= '0' && s[22] <= '9' ? s[22] - '0' : -1;
	if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60 || ms1 < 0 || ms2 < 0)
		return false;
	*ts = d->day_ts + h * 3600 + mi * 60 + sec + (ms1 * 10 + ms2) / 1000.0;
	return true;
}

/* After the general reader read a vigil stamp: keep its day for vigil_stamp(). */
static void keep_day(struct dlog *d, const char *s, size_t n, double ts)
{
	d->day_ok = false;
	if (n < 25 || s[10] != 'T' || s[19] != '.' || s[23] != 'Z')
		return;
	int h = dig2(s + 11), mi = dig2(s + 14), sec = dig2(s + 17), ms1 = dig2(s + 20);
	if (h < 0 || mi < 0 || sec < 0 || ms1 < 0 || s[22] < '0' || s[22] > '9')
		return;
	memcpy(d->day, s, 10);
	d->day_ts = ts - (h * 3600 + mi * 60 + sec + (ms1 * 10 + (s[22] - '0')) / 1000.0);
	d->day_ok = true;
}

/* torchrun's own "2026-12-01_02:51:03" (fixed width: compared as text). */
static bool torchrun_time(const struct dlog_occ *o)
{
	const char *w = o->launch.when;
	return o->launch.root_cause && strlen(w) >= 19 && w[4] == '-' && w[10] == '_' &&
	       w[13] == ':';
}

/* Which occurrence stands for its finding: the earlier (occ_before), but two root causes of
 * torchrun without comparable stamps (the blocks of several nodes in one log) by torchrun's
 * own times, which are the failures' times. */
static bool occ_first(const struct dlog_occ *a, const struct dlog_occ *b)
{
	if (a->tb != DLOG_TB_WALL && b->tb != DLOG_TB_WALL && torchrun_time(a) && torchrun_time(b)) {
		int c = strcmp(a->launch.when, b->launch.when);
		if (c)
			return c < 0;
	}
	return occ_before(a, b);
}

void dlog_record(struct dlog *d, const struct dlog_match *m, struct dlog_occ *o)
{
	struct dlog_finding *f = finding_for(d, m);
	if (!f) {
		d->lost++;
		return;
	}
	if (!f->count++ || occ_first(o, &f->first))
		f->first = *o;
	add_host(f, o->host);
	add_rank(f, o->rank);
	if (o->host[0] && o->rank >= 0)
		learn_host(d, o->rank, o->host);
}

/* "[1]:" alone (after spaces): an entry of torchrun's block. */
static bool entry_index(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	if (i >= n || s[i++] != '[' || i >= n || !isdigit((unsigned char)s[i]))
		return false;
	while (i < n && isdigit((unsigned char)s[i]))
		i++;
	if (n - i < 2 || s[i] != ']' || s[i + 1] != ':')
		return false;
	for (i += 2; i < n; i++)
		if (s[i] != ' ' && s[i] != '\r')
			return false;
	return true;
}

static void judge_line(struct dlog *d, const char *s, size_t n, bool cut)
{
	struct dlog_file *file = &d->files[d->nr_files - 1];
	struct dlog_match m;
	double ts;
	enum kmsg_timebase tb;
	file->lines++;
	if (cut)
		file->cut_lines++;
	else if (n && s[n - 1] == '\r')
		n--; /* CRLF: the CR is no part of the text */
	/* every line's stamp, so that an unstamped line (a traceback's) takes the last one; a
	 * torchrun entry's "[1]:" is no dmesg stamp of one second since boot */
	if (vigil_stamp(d, s, n, &ts)) {
		d->last_tb = DLOG_TB_WALL;
		d->last_ts = ts;
		file->wall = true;
	} else if (n && !entry_index(s, n) && kmsg_line_time(&d->clock, s, n, &ts, &tb)) {
		if (tb == KMSG_TB_WALL)
			keep_day(d, s, n, ts);
		d->last_tb = tb == KMSG_TB_WALL ? DLOG_TB_WALL : DLOG_TB_BOOT;
		d->last_ts = ts;
		if (tb == KMSG_TB_WALL)
			file->wall = true;
		else
			file->boot = true;
	}
	/* torchrun's failure summary is read as a block, over its lines (logtorchrun.c) */
	struct dlog_line_ctx c = { d->last_tb, d->last_ts, file->lines };
	long lend_rank = -1;
	const char *lend_host = "";
	if (dlog_tr_line(d, s, n, &c, &lend_rank, &lend_host))
		return;
	if (!dlog_classify(s, n, &m))
		return;
	file->found++;
	struct dlog_occ o;
	memset(&o, 0, sizeof(o));
	o.tb = d->last_tb;
	o.ts = d->last_ts;
	o.file = d->nr_files - 1;
	o.line = file->lines;
	o.seq = d->seq++;
	/* the host is where the file is (its path), never what the line says: a rank prints
	 * what it likes ("host evil-node", a date before a colon), and a finding's host is one
	 * a person drains */
	strlcpy_v(o.host, file->host, sizeof(o.host));
	/* but srun's own line in an attempt's srun.log, which holds only the lines srun wrote
	 * without a rank's label (a rank's every line is labelled), is Slurm's word; and a line
	 * of a child's traceback inside torchrun's block is the rank and host torchrun named */
	if (!o.host[0] && m.srun && file->srun_own)
		strlcpy_v(o.host, m.host, sizeof(o.host));
	if (lend_host[0])
		strlcpy_v(o.host, lend_host, sizeof(o.host));
	o.rank = m.rank >= 0 ? m.rank : lend_rank >= 0 ? lend_rank : file->rank;
	o.launch.pid = o.launch.local_rank = -1;
	o.launch.has_exit = m.has_exit;
	o.launch.exitcode = m.exitcode;
	if (m.has_exit) {
		int sig = m.exitcode < 0 ? -m.exitcode : m.exitcode > 128 ? m.exitcode - 128 : 0;
		strlcpy_v(o.launch.signal, dlog_signal_name(sig), sizeof(o.launch.signal));
	}
	size_t ex = n < DLOG_EXAMPLE_MAX ? n : DLOG_EXAMPLE_MAX;
	memcpy(o.example, s, ex);
	o.example[ex] = 0;
	for (size_t i = 0; i < ex; i++)
		if (!o.example[i])
			o.example[i] = ' ';
	if (m.head)
		dlog_tr_hold(d, &m, &o);
	else
		dlog_record(d, &m, &o);
}

void dlog_feed(struct dlog *d, const char *buf, size_t len)
{
	const char *p = buf, *e = buf + len;
	if (!d->in_file)
		return;
	struct dlog_file *file = &d->files[d->nr_files - 1];
	file->bytes += len;
	for (size_t i = 0; i < len; i++) {
		unsigned char b = (unsigned char)buf[i];
		file->binary += (b < 0x20 && b != '\n' && b != '\t' && b != '\r' && b != '\f' &&
				 b != '\v' && b != 0x1b) ||
				b == 0x7f;
	}
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t n = (size_t)((nl ? nl : e) - p);
		if (d->skipping) {
			/* the head of this line was judged when it reached the bound */
			if (nl)
				d->skipping = false;
		} else if (!d->line_len && nl && n <= DLOG_LINE_MAX) {
			judge_line(d, p, n, false); /* the common case: no copy */
		} else {
			size_t room = DLOG_LINE_MAX - d->line_len, take = n < room ? n : room;
			memcpy(d->line + d->line_len, p, take);
			d->line_len += take;
			if (n > room) {
				judge_line(d, d->line, d->line_len, true);
				d->line_len = 0;
				d->skipping = !nl;
			} else if (nl) {
				judge_line(d, d->line, d->line_len, false);
				d->line_len = 0;
			}
		}
		p = nl ? nl + 1 : e;
	}
}

void dlog_file_end(struct dlog *d, const char *error)
{
	if (!d->in_file)
		return;
	if (d->line_len)
		judge_line(d, d->line, d->line_len, false);
	dlog_tr_end(d);
	d->line_len = 0;
	d->skipping = false;
	struct dlog_file *f = &d->files[d->nr_files - 1];
	if (error) {
		free(f->error);
		f->error = xstrdup(error);
	} else if (!f->found && f->binary && f->binary * 100 >= f->bytes * DLOG_BINARY_PCT) {
		/*
		 * Not text (NULs, random bytes, a core file): no known line in it says nothing
		 * about the job, so it is "could not tell" by name, never "no errors". A log
		 * whose tail a crash filled with NULs but whose lines matched keeps its findings.
		 */
		struct strbuf why = STRBUF_INIT;
		strbuf_addf(&why, "'%s' is not text: %llu of its %llu bytes are NUL or control "
				  "bytes; could not tell",
			    f->name, (unsigned long long)f->binary, (unsigned long long)f->bytes);
		f->error = strbuf_detach(&why, NULL);
	}
	kmsg_log_release(&d->clock);
	d->in_file = false;
}

/* Order of the findings in the output: the root first, then by their first occurrence. */
static int cmp_findings(const void *a, const void *b)
{
	const struct dlog_finding *x = a, *y = b;
	if (occ_before(&x->first, &y->first))
		return -1;
	if (occ_before(&y->first, &x->first))
		return 1;
	return x->first.seq < y->first.seq ? -1 : x->first.seq > y->first.seq;
}

void dlog_finish(struct dlog *d)
{
	if (d->in_file)
		dlog_file_end(d, NULL);
	d->root = -1;
	d->root_why = NULL;
	d->unknown_times = false;
	if (!d->nr)
		return;
	for (size_t i = 0; i < d->nr && d->nr_rh; i++) {
		struct dlog_finding *f = &d->f[i];
		const char *h;
		if (!f->first.host[0] && f->first.rank >= 0 && (h = host_of(d, f->first.rank)))
			strlcpy_v(f->first.host, h, sizeof(f->first.host));
		for (size_t r = 0; r < f->nr_ranks; r++)
			if ((h = host_of(d, f->ranks[r])))
				add_host(f, h);
	}
	qsort(d->f, d->nr, sizeof(*d->f), cmp_findings);
	long earliest = -1, best = -1, untimed = -1;
	for (size_t i = 0; i < d->nr; i++) {
		if (d->f[i].first.tb != DLOG_TB_WALL) {
			d->unknown_times = true;
			/* the best tier without a comparable time, first seen within it */
			if (untimed < 0 || d->f[i].tier < d->f[untimed].tier ||
			    (d->f[i].tier == d->f[untimed].tier &&
			     d->f[i].first.seq < d->f[untimed].first.seq))
				untimed = (long)i;
			continue;
		}
		if (earliest < 0)
			earliest = (long)i; /* sorted: the first timed one is the earliest */
	}
	if (earliest >= 0) {
		double limit = d->f[earliest].first.ts + DLOG_SKEW_S;
		best = earliest;
		for (size_t i = 0; i < d->nr; i++)
			if (d->f[i].first.tb == DLOG_TB_WALL && d->f[i].first.ts <= limit &&
			    d->f[i].tier < d->f[best].tier)
				best = (long)i;
		d->root_why = best == earliest ? "the earliest error in time"
					       : "the first specific error, within seconds of the "
						 "earliest";
		if (untimed >= 0 && d->f[untimed].tier < d->f[best].tier) {
			best = untimed;
			d->root_why = "a more specific error than the earliest timed one, in a file "
				      "whose times cannot be compared with the others";
		}
	} else {
		best = untimed;
		d->root_why = "no comparable time stamps: the most specific error, first in the "
			      "order the files were given";
	}
	/* the root first, the others in time order */
	if (best > 0) {
		struct dlog_finding r = d->f[best];
		memmove(d->f + 1, d->f, (size_t)best * sizeof(*d->f));
		d->f[0] = r;
	}
	d->root = 0;
}

/* Generic names that are not hosts: "srun.log", "kern.log", "train.log", ... */
static const char *const not_hosts[] = {
	"srun", "kern", "kernel", "dmesg", "syslog", "messages", "train", "training", "trainer",
	"output", "out", "err", "error", "errors", "stdout", "stderr", "log", "logs", "nccl", "job",
	"run", "console", "debug", "main", "torch", "slurm", "localhost", "torchrun", "launcher", "pytorch",
	"launch", "deepspeed", "accelerate", "lightning", "megatron", "nemo", "titan", "torchtitan",
};

void dlog_name_origin(const char *path, char host[DLOG_HOST_MAX], long *rank)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	host[0] = 0;
	*rank = -1;
	const char *p = base;
	if (!strncmp(p, "rank", 4)) {
		p += 4;
		if (*p == '-' || *p == '_' || *p == '.')
			p++;
		if (isdigit((unsigned char)*p)) {
			long v = 0;
			int k = 0;
			while (isdigit((unsigned char)*p) && k++ < 7)
				v = v * 10 + (*p++ - '0');
			if (!isdigit((unsigned char)*p) && (*p == '.' || *p == 0 || *p == '-' || *p == '_'))
				*rank = v;
		}
		return;
	}
	size_t n = strlen(base);
	if (n <= 4 || n - 4 >= DLOG_HOST_MAX || strcmp(base + n - 4, ".log"))
		return;
	n -= 4;
	if (!isalnum((unsigned char)base[0]))
		return;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)base[i]) && base[i] != '-' && base[i] != '.' &&
		    base[i] != '_')
			return;
	for (size_t i = 0; i < ARRAY_SIZE(not_hosts); i++)
		if (strlen(not_hosts[i]) == n && !strncmp(base, not_hosts[i], n))
			return;
	if (!strncmp(base, "slurm-", 6))
		return;
	memcpy(host, base, n);
	host[n] = 0;
}
