/*
 * logtorchrun.c: torchrun's ChildFailedError summary for 'vigil diagnose logs' (see logs.h),
 * read as a block over its lines, since the fields that say who failed (host, rank, exitcode,
 * error_file) are each on a line of their own, which the line classifier (logcat.c) cannot
 * join. The shapes, from torch.distributed.elastic.multiprocessing.errors:
 *
 *   torch >= 1.10:                                  torchelastic / torch 1.9:
 *   ...ChildFailedError:                            ...ChildFailedError:
 *   ====================                            ******************
 *   train.py FAILED                                 train.py FAILED
 *   --------------------                            ==================
 *   Failures:                                       Root Cause:
 *   [1]:                                            [0]:
 *     time      : 2026-12-01_02:51:01                 time: 2026-12-01_02:51:00
 *     host      : node-3                              rank: 5 (local_rank: 1)
 *     rank      : 6 (local_rank: 2)                   exitcode: -9 (pid: 4242)
 *     exitcode  : -15 (pid: 4243)                     error_file: <N/A>
 *     error_file: <N/A>                               msg: "Signal 9 (SIGKILL) received by PID 4242"
 *     traceback : Signal 15 (SIGTERM) received ...  ==================
 *   --------------------                            Other Failures:
 *   Root Cause (first observed failure):              <NO_OTHER_FAILURES>
 *   [0]:                                            ******************
 *     ... (the same fields; torch 2.11 adds " (SIGKILL)" after the pid)
 *   ====================
 *
 * Each entry becomes one occurrence with the rank and host torchrun names (the launcher's
 * word: it started the process there), the root cause entry first and as its exit code says
 * (SIGKILL, SIGSEGV, ...), the other failures as cascades (torchrun saw them later). A traceback
 * field's further lines (the child's traceback, when it wrote an error file) are classified as
 * usual but lent the entry's rank and host. Lines of other output between the block's lines
 * (several processes writing to one file) are left alone. A block cut short counts with what
 * it said: no field, no value. Bounded: at most DLOG_TR_ENTRIES_MAX entries per block (the rest
 * are counted as lost), each field's first DLOG_FIELD_MAX - 1 bytes.
 */
#include "logs.h"

#include <ctype.h>

enum { SEC_NONE, SEC_FAIL, SEC_ROOT };

/* A block that has gone this many lines without a line of its own is over. */
#define TR_STALE_LINES 1000
/* The launcher's lines this close before a block are about the failure it names. */
#define TR_HEAD_LINES 400

void dlog_tr_release(struct dlog *d)
{
	free(d->tr.ent);
	memset(&d->tr, 0, sizeof(d->tr));
}

/* s[0..n) past the prefixes a launcher or collector puts before torchrun's own text (a
 * stamp, "[rank3]:", "[default3]:", "3: ", "stderr: "), and without spaces at either end. */
static void trim(const char **sp, size_t *np)
{
	const char *s = *sp;
	size_t n = *np, i = dlog_skip_stamp(s, n);
	/* the stamp reader takes an entry's "[1]" for dmesg's "[  1.0]": give it back */
	if (i < n && s[i] == ':') {
		size_t b = i;
		while (b > 0 && s[b - 1] != '[')
			b--;
		if (b > 0)
			i = b - 1;
	}
	for (int round = 0; round < 2; round++) {
		size_t j = i;
		if (j < n && s[j] == '[') { /* [rank3]: [default3]: */
			size_t a = j + 1, k;
			while (a < n && isalpha((unsigned char)s[a]))
				a++;
			k = a;
			while (k < n && isdigit((unsigned char)s[k]))
				k++;
			/* a word, then digits: an entry's own "[1]:" is no prefix */
			if (a > j + 1 && k + 1 < n && s[k] == ']' && s[k + 1] == ':')
				i = k + 2;
		} else if (j < n && isdigit((unsigned char)s[j])) { /* srun --label's "3: " */
			size_t k = j;
			while (k < n && k - j < 7 && isdigit((unsigned char)s[k]))
				k++;
			if (k + 1 < n && s[k] == ':' && s[k + 1] == ' ')
				i = k + 2;
		} else if (n - j >= 8 && !memcmp(s + j, "stderr: ", 8)) {
			i = j + 8;
		} else if (n - j >= 8 && !memcmp(s + j, "stdout: ", 8)) {
			i = j + 8;
		}
	}
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	*sp = s + i;
	*np = n - i;
}

static bool is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && !memcmp(s, word, n);
}

/* "-----", "=====", "*****": torchrun's rules (at least 10 of one kind). */
static int rule(const char *s, size_t n)
{
	if (n < 10 || (s[0] != '-' && s[0] != '=' && s[0] != '*'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (s[i] != s[0])
			return 0;
	return s[0];
}

/* A whole number (optional '-') at *p, at most 9 digits: true with *v, *p moved past it. */
static bool number(const char **p, const char *e, long *v)
{
	const char *s = *p;
	bool neg = s < e && *s == '-';
	s += neg;
	const char *d = s;
	long x = 0;
	while (s < e && isdigit((unsigned char)*s) && s - d < 9)
		x = x * 10 + (*s++ - '0');
	if (s == d)
		return false;
	*v = neg ? -x : x;
	*p = s;
	return true;
}

static void copy_field(char *out, size_t size, const char *s, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(out, s, n);
	out[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (!out[i])
			out[i] = ' ';
}

/* "(SIGKILL)" anywhere in s: the name into sig. */
static void signal_in(const char *s, size_t n, char sig[12])
{
	const char *p = memmem(s, n, "(SIG", 4);
	if (!p)
		return;
	const char *q = p + 1, *e = s + n;
	while (q < e && q - p < 11 && isupper((unsigned char)*q))
		q++;
	if (q < e && *q == ')' && q - p > 4)
		copy_field(sig, 12, p + 1, (size_t)(q - p - 1));
}

/* "key : value" of an entry: true when it is one of torchrun's fields. */
static bool field(struct dlog_tr_entry *e, const char *s, size_t n)
{
	size_t k = 0;
	while (k < n && (isalpha((unsigned char)s[k]) || s[k] == '_'))
		k++;
	size_t c = k;
	while (c < n && s[c] == ' ')
		c++;
	if (!k || c >= n || s[c] != ':')
		return false;
	const char *v = s + c + 1, *end = s + n;
	while (v < end && *v == ' ')
		v++;
	size_t vn = (size_t)(end - v);
	long x;
	const char *p = v;
	if (is(s, k, "time")) {
		copy_field(e->l.when, sizeof(e->l.when), v, vn);
	} else if (is(s, k, "host")) {
		/* a host name as it is written, else none: never a guess */
		size_t h = 0;
		while (h < vn && (isalnum((unsigned char)v[h]) || v[h] == '.' || v[h] == '-' ||
				  v[h] == '_'))
			h++;
		if (h == vn && h && h < DLOG_HOST_MAX && isalnum((unsigned char)v[0]) &&
		    !is(v, vn, "localhost")) /* a single-host run's: names no host to drain */
			copy_field(e->host, sizeof(e->host), v, h);
	} else if (is(s, k, "rank")) {
		/* "5 (local_rank: 1)" */
		if (number(&p, end, &x) && x >= 0) {
			e->rank = x;
			e->has_rank = true;
			const char *lr = memmem(p, (size_t)(end - p), "local_rank: ", 12);
			if (lr && (lr += 12, number(&lr, end, &x)) && x >= 0)
				e->l.local_rank = x;
		}
	} else if (is(s, k, "exitcode")) {
		/* "-9 (pid: 4242)", torch 2.11: "-9 (pid: 4242) (SIGKILL)" */
		if (number(&p, end, &x) && x > -1000 && x < 100000) {
			e->l.has_exit = true;
			e->l.exitcode = (int)x;
			const char *pid = memmem(p, (size_t)(end - p), "pid: ", 5);
			if (pid && (pid += 5, number(&pid, end, &x)) && x >= 0)
				e->l.pid = x;
			signal_in(p, (size_t)(end - p), e->l.signal);
		}
	} else if (is(s, k, "error_file")) {
		copy_field(e->l.error_file, sizeof(e->l.error_file), v, vn);
	} else if (is(s, k, "traceback") || is(s, k, "msg")) {
		if (vn >= 2 && v[0] == '"' && v[vn - 1] == '"') { /* 1.9's msg: "..." */
			v++;
			vn -= 2;
		}
		copy_field(e->msg, sizeof(e->msg), v, vn);
		signal_in(v, vn, e->l.signal);
		e->seen_tb = true;
	} else {
		return false;
	}
	return true;
}

static void end_entry(struct dlog *d)
{
	struct dlog_tr *t = &d->tr;
	if (!t->in_entry)
		return;
	t->in_entry = false;
	struct dlog_tr_entry *e = &t->cur;
	if (!e->has_rank && !e->host[0] && !e->l.has_exit)
		return; /* cut before it said anything */
	if (t->nr >= DLOG_TR_ENTRIES_MAX) {
		d->lost++;
		return;
	}
	ALLOC_GROW(t->ent, t->nr + 1, t->alloc);
	t->ent[t->nr++] = *e;
}

/* One entry as an occurrence: the cause its exit code says for the root cause, a rank's exit
 * (cascade) for the others, which torchrun saw after it. */
static void record_entry(struct dlog *d, const struct dlog_tr_entry *e)
{
	struct dlog_match m;
	struct dlog_occ o;
	memset(&m, 0, sizeof(m));
	memset(&o, 0, sizeof(o));
	m.num = -1;
	m.rank = e->has_rank ? e->rank : -1;
	if (e->l.has_exit && e->root) {
		dlog_match_exit(&m, e->l.exitcode);
	} else {
		dlog_match_exit(&m, 1);
		m.has_exit = e->l.has_exit;
		m.exitcode = e->l.exitcode;
	}
	o.tb = e->tb;
	o.ts = e->ts;
	o.file = d->nr_files - 1;
	o.line = e->line;
	o.seq = e->seq;
	strlcpy_v(o.host, e->host, sizeof(o.host));
	o.rank = m.rank;
	o.launch = e->l;
	o.launch.torchrun = true;
	o.launch.root_cause = e->root;
	if (!o.launch.signal[0] && e->l.has_exit) {
		int c = e->l.exitcode, sig = c < 0 ? -c : c > 128 && c < 160 ? c - 128 : 0;
		strlcpy_v(o.launch.signal, dlog_signal_name(sig), sizeof(o.launch.signal));
	}
	struct strbuf ex = STRBUF_INIT;
	strbuf_addstr(&ex, e->root ? "torchrun root cause:" : "torchrun failure:");
	if (e->host[0])
		strbuf_addf(&ex, " host %s", e->host);
	if (e->has_rank)
		strbuf_addf(&ex, " rank %ld", e->rank);
	if (e->l.has_exit)
		strbuf_addf(&ex, " exitcode %d", e->l.exitcode);
	if (e->l.error_file[0])
		strbuf_addf(&ex, " error_file %s", e->l.error_file);
	if (e->msg[0])
		strbuf_addf(&ex, " traceback %s", e->msg);
	copy_field(o.example, sizeof(o.example), ex.buf, ex.len);
	strbuf_release(&ex);
	d->files[d->nr_files - 1].found++;
	dlog_record(d, &m, &o);
}

static void record_head(struct dlog *d, size_t i)
{
	struct dlog_tr *t = &d->tr;
	dlog_record(d, &t->heads[i].m, &t->heads[i].o);
	memmove(t->heads + i, t->heads + i + 1, (t->nr_heads - i - 1) * sizeof(*t->heads));
	t->nr_heads--;
}

/* The block is over (its closing rule, a stale block, the file's end): its entries counted,
 * the root cause first, and the launcher's lines just before it dropped (it said more). */
static void flush_block(struct dlog *d)
{
	struct dlog_tr *t = &d->tr;
	end_entry(d);
	/* a root cause cut before its exit code: the agent's "failed (exitcode: N)" just before
	 * the block is about the same process (it is logged for the first failure) */
	for (size_t i = 0; i < t->nr; i++) {
		struct dlog_tr_entry *e = &t->ent[i];
		for (size_t h = 0; e->root && !e->l.has_exit && h < t->nr_heads; h++)
			if (t->heads[h].m.has_exit &&
			    t->heads[h].o.line + TR_HEAD_LINES >= t->block_line) {
				e->l.has_exit = true;
				e->l.exitcode = t->heads[h].m.exitcode;
			}
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < t->nr; i++)
			if (t->ent[i].root == (pass == 0))
				record_entry(d, &t->ent[i]);
	if (t->nr) {
		for (size_t i = 0; i < t->nr_heads;)
			if (t->heads[i].o.line + TR_HEAD_LINES >= t->block_line)
				memmove(t->heads + i, t->heads + i + 1,
					(--t->nr_heads - i) * sizeof(*t->heads));
			else
				record_head(d, i);
	}
	t->nr = 0;
	t->section = SEC_NONE;
}

void dlog_tr_hold(struct dlog *d, const struct dlog_match *m, const struct dlog_occ *o)
{
	struct dlog_tr *t = &d->tr;
	if (t->nr_heads == DLOG_TR_HEADS_MAX)
		record_head(d, 0);
	t->heads[t->nr_heads].m = *m;
	t->heads[t->nr_heads].o = *o;
	t->nr_heads++;
}

void dlog_tr_end(struct dlog *d)
{
	flush_block(d);
	while (d->tr.nr_heads)
		record_head(d, 0);
	dlog_tr_release(d);
}

static void begin_block(struct dlog *d, const struct dlog_line_ctx *c)
{
	struct dlog_tr *t = &d->tr;
	if (t->section != SEC_NONE)
		return;
	t->block_line = c->line;
	t->block_seq = d->seq++; /* the root cause's place in the order seen: the block's start */
}

bool dlog_tr_line(struct dlog *d, const char *s, size_t n, const struct dlog_line_ctx *c,
		  long *lend_rank, const char **lend_host)
{
	struct dlog_tr *t = &d->tr;
	const char *u = s;
	size_t un = n;
	*lend_rank = -1;
	*lend_host = "";
	if (t->section != SEC_NONE && c->line > t->last_line + TR_STALE_LINES)
		flush_block(d);
	/* the common line, outside a block: only a heading opens one, and it ends in ':' (the
	 * check costs next to nothing on the lines of a gigabyte log) */
	if (t->section == SEC_NONE) {
		size_t e = n;
		while (e && (s[e - 1] == ' ' || s[e - 1] == '\r' || s[e - 1] == '\t'))
			e--;
		if (e < 9 || s[e - 1] != ':')
			return false;
	}
	if (un > 400)
		goto other;
	trim(&u, &un);
	if (is(u, un, "Failures:") || is(u, un, "Other Failures:") || is(u, un, "Root Cause:") ||
	    is(u, un, "Root Cause (first observed failure):")) {
		end_entry(d);
		begin_block(d, c);
		t->section = u[0] == 'R' ? SEC_ROOT : SEC_FAIL;
		t->last_line = c->line;
		return true;
	}
	if (t->section == SEC_NONE)
		goto other;
	if (un >= 4 && u[0] == '[' && u[un - 2] == ']' && u[un - 1] == ':') {
		const char *p = u + 1;
		long idx;
		if (number(&p, u + un, &idx) && idx >= 0 && p == u + un - 2) {
			end_entry(d);
			memset(&t->cur, 0, sizeof(t->cur));
			t->cur.root = t->section == SEC_ROOT;
			t->cur.rank = -1;
			t->cur.l.pid = t->cur.l.local_rank = -1;
			t->cur.line = c->line;
			t->cur.tb = c->tb;
			t->cur.ts = c->ts;
			t->cur.seq = t->cur.root ? t->block_seq : d->seq++;
			t->in_entry = true;
			t->last_line = c->line;
			return true;
		}
	}
	if (is(u, un, "<NO_OTHER_FAILURES>")) {
		t->last_line = c->line;
		return true;
	}
	int r = rule(u, un);
	if (r) {
		end_entry(d);
		if (r != '-' && t->nr)
			flush_block(d);
		t->last_line = c->line;
		return true;
	}
	if (t->in_entry && !t->cur.seen_tb && field(&t->cur, u, un)) {
		t->last_line = c->line;
		return true;
	}
other:
	/* the rest of a traceback field: the child's own traceback, of the rank torchrun names */
	if (t->section != SEC_NONE && t->in_entry && t->cur.seen_tb) {
		*lend_rank = t->cur.has_rank ? t->cur.rank : -1;
		*lend_host = t->cur.host;
	}
	return false;
}
