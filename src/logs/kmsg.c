/*
 * kmsg.c: the kernel log parser's driver (see kmsg.h): the fast scan that finds the few lines
 * worth parsing, kmsg_feed() for text that arrives in chunks, and the event store that folds
 * repeats and drops noise (never a fault) past KMSG_EVENTS_MAX. The timestamp
 * prefixes are in kmsg_time.c, the message parsers in kmsg_event.c, the readers in kmsg_read.c.
 */
#include "kmsg_internal.h"

#include <pthread.h>

#define X(a, b) b,
static const char *const kind_names[] = { KMSG_KIND_LIST(X) };
#undef X

const char *kmsg_kind_name(enum kmsg_kind k)
{
	return (unsigned)k < ARRAY_SIZE(kind_names) ? kind_names[k] : "unknown";
}

const char *kmsg_timebase_name(enum kmsg_timebase tb)
{
	switch (tb) {
	case KMSG_TB_MONO: return "monotonic";
	case KMSG_TB_WALL: return "wall";
	default: return "none";
	}
}

/* ---- the scan ---- */

struct trigger {
	const char *s;
	unsigned char len, at; /* anchors of the hash filter start at at, at+1, ... */
};

/*
 * Every interesting line holds one of these. The scan looks at every SCAN_STRIDE-th position only,
 * so each trigger has SCAN_STRIDE anchors (4-byte windows at consecutive offsets): one of them
 * falls on a scanned position. Anchors are picked to be rare in ordinary kernel text.
 */
#define SCAN_STRIDE 3
static const struct trigger triggers[] = {
	{ "NVRM: ", 6, 0 },
	{ "SXid (", 6, 0 },
	{ "oom-killer", 10, 0 },
	{ "of memory: Kill", 15, 8 },
	{ "PCIe bandwidth", 14, 5 },
	{ "blocked for more than", 21, 8 },
	{ "Linux version", 13, 2 },
	{ "Link down", 9, 2 },
	{ "Link DOWN", 9, 2 },
	{ "Link up", 7, 1 },
	{ "Link UP", 7, 1 },
	{ "Link ACTIVE", 11, 2 },
	{ "-- Boot ", 8, 0 },       /* journalctl's separator of boots */
	{ "-- Reboot --", 12, 0 },  /* its older form */
	/*
	 * Host hardware errors (kmsg_hwerr.c). Anchors away from "Hard" and "EDAC": on the
	 * benchmark's ordinary lines the hash of "Hard" collides with the frequent "iali"
	 * (initialized), which cost 6% of the parser's speed.
	 */
	{ "[Hardware Error]", 16, 7 }, /* mce, APEI GHES, BERT: "re E", "e Er", " Err" */
	{ "EDAC MC", 7, 1 },
	{ "Fatal)", 6, 0 },            /* AER "(Fatal)" and "(Non-Fatal)" */
};

#define NR_ANCHORS (ARRAY_SIZE(triggers) * SCAN_STRIDE)

#define HASH_BITS 16
static inline uint32_t quad_hash(uint32_t x)
{
	return (x * 0x9E3779B1u) >> (32 - HASH_BITS);
}

static uint32_t load32(const unsigned char *p)
{
	uint32_t x;
	memcpy(&x, p, 4);
	return x;
}

static void parse_one_line(struct kmsg_log *log, const unsigned char *s, size_t n, uint64_t line)
{
	char buf[KMSG_LINE_MAX + 1];
	struct kmsg_prefix px;
	if (n > KMSG_LINE_MAX) {
		n = KMSG_LINE_MAX;
		log->cut_lines++;
	}
	memcpy(buf, s, n);
	while (n && (buf[n - 1] == '\r' || buf[n - 1] == '\n'))
		n--;
	buf[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	kmsg_parse_prefix(log, buf, &px);
	if (px.continuation)
		return;
	if (px.yearless) {
		log->last_yearless = true;
		log->ylast_year = log->year;
		log->ylast_ts = px.ts;
	}
	kmsg_parse_message(log, &px, line);
}

/*
 * Line ends in [p, e): every newline, and every run of NULs once (a crash's zero padding is one
 * line end, however long; prev_nul says whether the byte before p was a NUL, so that a run cut
 * between two calls is still counted once). Eight bytes at a time.
 */
static uint64_t count_eol(const unsigned char *p, const unsigned char *e, bool prev_nul)
{
	const uint64_t ones = 0x0101010101010101ULL, nl = ones * '\n', low7 = ones * 0x7f;
	const uint64_t high = ones * 0x80;
	uint64_t n = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (e - p >= 8) {
		uint64_t w, x;
		memcpy(&w, p, 8);
		x = w ^ nl;
		/* high bit of each byte set iff that byte is a newline / a NUL */
		uint64_t is_nl = ~(((x & low7) + low7) | x) & high;
		uint64_t is_nul = ~(((w & low7) + low7) | w) & high;
		/* a NUL starts a run unless the byte before it (one byte lower) is a NUL; NULs
		 * are rare, and a multiply counts the marks faster than a portable popcount */
		if (is_nul) {
			uint64_t before = (is_nul << 8) | (prev_nul ? 0x80 : 0);
			is_nl |= is_nul & ~before;
			prev_nul = is_nul >> 63;
		} else {
			prev_nul = false;
		}
		n += ((is_nl >> 7) * ones) >> 56;
		p += 8;
	}
#endif
	while (p < e) {
		unsigned char c = *p++;
		n += c == '\n' || (c == '\0' && !prev_nul);
		prev_nul = c == '\0';
	}
	return n;
}

/* Find the timestamp of the last line that has one: the log's "now". */
/*
 * Line ends: a newline, or a NUL. A crash leaves a saved log with a run of zero bytes where the
 * page cache was never written, and the lines after the reboot follow the zeros without a
 * newline of their own: a NUL ends a line too, so a fault after the zeros is a line of its own.
 */
static inline bool is_eol(unsigned char c)
{
	return c == '\n' || c == '\0';
}

/* The first line end in [p, e), or NULL. */
static const unsigned char *eol_fwd(const unsigned char *p, const unsigned char *e)
{
	const unsigned char *nl = memchr(p, '\n', (size_t)(e - p));
	const unsigned char *z = memchr(p, '\0', (size_t)((nl ? nl : e) - p));
	return z ? z : nl;
}

/* The last line end in [b, e), or NULL. */
static const unsigned char *eol_rev(const unsigned char *b, const unsigned char *e)
{
	while (e > b) {
		if (is_eol(e[-1]))
			return e - 1;
		e--;
	}
	return NULL;
}

static void find_last_time(struct kmsg_log *log, const unsigned char *b, const unsigned char *end)
{
	const unsigned char *e = end;
	for (int tries = 0; tries < 256 && e > b; tries++) {
		while (e > b && (is_eol(e[-1]) || e[-1] == '\r'))
			e--;
		if (e == b)
			break;
		const unsigned char *ls = eol_rev(b, e);
		ls = ls ? ls + 1 : b;
		double ts;
		enum kmsg_timebase tb;
		bool yearless;
		if (kmsg_line_stamp(log, (const char *)ls, (size_t)(e - ls), &ts, &tb, &yearless)) {
			log->has_last = true;
			log->last_tb = tb;
			log->last_ts = ts;
			log->last_guessed = yearless;
			return;
		}
		e = ls;
	}
}

/* The hash filter: built once (pthread_once), read-only afterwards. */
static uint64_t scan_bits[(1u << HASH_BITS) / 64];
static uint32_t anchor[NR_ANCHORS];
static unsigned char anchor_trig[NR_ANCHORS], anchor_off[NR_ANCHORS];
static pthread_once_t scan_once = PTHREAD_ONCE_INIT;

static void scan_init(void)
{
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(triggers); i++) {
		for (unsigned k = 0; k < SCAN_STRIDE; k++) {
			unsigned off = triggers[i].at + k;
			uint32_t v = load32((const unsigned char *)triggers[i].s + off);
			uint32_t h = quad_hash(v);
			scan_bits[h / 64] |= 1ULL << (h % 64);
			anchor[n] = v;
			anchor_trig[n] = (unsigned char)i;
			anchor_off[n++] = (unsigned char)off;
		}
	}
}

/*
 * A long line is judged by its first KMSG_LINE_MAX bytes, so it counts only when a trigger lies
 * wholly within them: which trigger the stride scan meets first depends on where the buffer
 * starts, and the answer must not (kmsg_feed() hands a long line over in pieces).
 */
static bool trigger_within(const unsigned char *ls, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(triggers); i++)
		if (memmem(ls, n, triggers[i].s, triggers[i].len))
			return true;
	return false;
}

void kmsg_parse(struct kmsg_log *log, const char *buf, size_t len)
{
	const uint64_t *bits = scan_bits;
	const size_t nr_anchors = NR_ANCHORS;
	pthread_once(&scan_once, scan_init);

	const unsigned char *b = (const unsigned char *)buf, *end = b + len;
	const unsigned char *p = b, *floor = b, *counted = b;
	uint64_t line = log->lines;
	while (end - p >= 4) {
		uint32_t x = load32(p);
		uint32_t h = quad_hash(x);
		if (!((bits[h / 64] >> (h % 64)) & 1)) {
			p += SCAN_STRIDE;
			continue;
		}
		bool hit = false;
		for (size_t i = 0; i < nr_anchors && !hit; i++) {
			const struct trigger *t = &triggers[anchor_trig[i]];
			size_t off = anchor_off[i];
			hit = x == anchor[i] && (size_t)(p - b) >= off &&
			      (size_t)(end - (p - off)) >= t->len && !memcmp(p - off, t->s, t->len);
		}
		if (!hit) {
			p += SCAN_STRIDE;
			continue;
		}
		const unsigned char *ls = p > floor ? eol_rev(floor, p) : NULL;
		ls = ls ? ls + 1 : floor;
		const unsigned char *le = eol_fwd(p, end);
		if (!le)
			le = end;
		line += count_eol(counted, ls, counted > b ? counted[-1] == '\0' : log->prev_nul);
		counted = ls;
		if (le - ls <= KMSG_LINE_MAX || trigger_within(ls, KMSG_LINE_MAX))
			parse_one_line(log, ls, (size_t)(le - ls), line + 1);
		p = floor = le < end ? le + 1 : end;
	}
	line += count_eol(counted, end, counted > b ? counted[-1] == '\0' : log->prev_nul);
	if (len && !is_eol(b[len - 1]))
		line++;
	if (len)
		log->prev_nul = b[len - 1] == '\0';
	log->lines = line;
	log->bytes += len;
	find_last_time(log, b, end);
}

/* ---- text in chunks ---- */

/* More than a line's kept part, so that a trigger ending at KMSG_LINE_MAX is wholly inside. */
#define CARRY_MAX (KMSG_LINE_MAX + 64)

void kmsg_feed(struct kmsg_log *log, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	while (p < end) {
		const char *nl = (const char *)eol_fwd((const unsigned char *)p,
						       (const unsigned char *)end);
		if (log->carry_skip) {
			/* the rest of a long line whose first part was parsed: not a new line */
			const char *stop = nl ? nl + 1 : end;
			log->bytes += (uint64_t)(stop - p);
			log->carry_skip = !nl;
			log->prev_nul = nl && *nl == '\0'; /* a NUL run goes on past the skip */
			p = stop;
			continue;
		}
		if (!log->carry.len && nl) {
			/* whole lines straight from buf */
			const char *last = (const char *)eol_rev((const unsigned char *)nl,
							       (const unsigned char *)end);
			kmsg_parse(log, p, (size_t)(last + 1 - p));
			p = last + 1;
			continue;
		}
		/* a line that began before, or does not end in, this chunk */
		size_t want = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		size_t room = CARRY_MAX - log->carry.len;
		if (want <= room) {
			strbuf_add(&log->carry, p, want);
			p += want;
			if (!nl)
				continue;
		} else {
			/* a long line: parse its first part now (a line without newline), skip the rest */
			strbuf_add(&log->carry, p, room);
			p += room;
			log->carry_skip = true;
		}
		kmsg_parse(log, log->carry.buf, log->carry.len);
		strbuf_reset(&log->carry);
	}
}

void kmsg_feed_end(struct kmsg_log *log)
{
	if (log->carry.len)
		kmsg_parse(log, log->carry.buf, log->carry.len);
	strbuf_reset(&log->carry);
	log->carry_skip = false;
}

/* ---- the event store ---- */

bool kmsg_kind_is_noise(enum kmsg_kind k)
{
	switch (k) {
	case KMSG_OOM_INVOKED:
	case KMSG_OOM_KILL:
	case KMSG_OOM_CGROUP:
	case KMSG_HUNG_TASK:
	case KMSG_LINK_DOWN:
	case KMSG_LINK_UP:
	case KMSG_NVRM_UNKNOWN:
		return true;
	default:
		return false; /* faults (Xid, SXid, off the bus, PCIe width) and their reset markers */
	}
}

void kmsg_log_init(struct kmsg_log *log, const struct kmsg_opts *opts)
{
	memset(log, 0, sizeof(*log));
	strbuf_init(&log->carry, 0);
	log->limit = KMSG_EVENTS_MAX;
	log->ghes_source = -1;
	if (opts)
		log->opts = *opts;
	double hint = log->opts.year_hint > 0 ? log->opts.year_hint : wall_seconds();
	log->hint_ts = hint;
	log->hint_year = kmsg_year_of(hint);
	log->year = log->hint_year;
}

void kmsg_log_release(struct kmsg_log *log)
{
	free(log->ev);
	log->ev = NULL;
	log->nr = log->alloc = 0;
	strbuf_release(&log->carry);
}

static int key_cmp(const struct kmsg_event *a, const struct kmsg_event *b)
{
	int c;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->fatal != b->fatal)
		return a->fatal < b->fatal ? -1 : 1;
	if (a->recovery != b->recovery)
		return a->recovery < b->recovery ? -1 : 1;
	if (a->cause != b->cause)
		return a->cause < b->cause ? -1 : 1;
	if ((c = strcmp(a->bdf, b->bdf)))
		return c;
	switch (a->kind) {
	case KMSG_SXID:
	case KMSG_HUNG_TASK:
	case KMSG_LINK_DOWN:
	case KMSG_LINK_UP:
	case KMSG_GHES:
		return strcmp(a->name, b->name);
	case KMSG_EDAC:
		return (c = strcmp(a->name, b->name)) ? c : strcmp(a->text, b->text);
	case KMSG_GPU_INIT:
		return strcmp(a->uuid, b->uuid);
	case KMSG_NVRM_UNKNOWN:
		return strcmp(a->text, b->text);
	default:
		return 0;
	}
}

static const struct kmsg_event *sort_base;

static int idx_cmp(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	int c = key_cmp(&sort_base[i], &sort_base[j]);
	return c ? c : (i < j ? -1 : i > j);
}

/* Drop the oldest events (of the noise kinds only, or of any) until target are left; returns
 * how many occurrences they stood for. */
static uint64_t drop_oldest(struct kmsg_log *log, size_t target, bool noise_only)
{
	uint64_t dropped = 0;
	size_t excess = log->nr > target ? log->nr - target : 0, k = 0;
	for (size_t i = 0; i < log->nr; i++) {
		struct kmsg_event *ev = &log->ev[i];
		if (excess && (!noise_only || kmsg_kind_is_noise(ev->kind))) {
			excess--;
			dropped += ev->count;
			continue;
		}
		log->ev[k++] = *ev;
	}
	log->nr = k;
	return dropped;
}

/*
 * Make room: keep the first and the last occurrence of each distinct event (the last one counts
 * the ones in between), which keeps what the check judges: counts, first and last times, and
 * the order of faults and resets. If that is not enough, drop the oldest noise; if faults alone
 * fill the store, let it grow up to KMSG_EVENTS_HARD_MAX, and only there give up the oldest.
 */
static void compact(struct kmsg_log *log)
{
	size_t n = log->nr;
	size_t *idx = xmalloc(n * sizeof(*idx));
	bool *keep = xcalloc(n, sizeof(*keep));
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	sort_base = log->ev;
	qsort(idx, n, sizeof(*idx), idx_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint64_t total = 0;
		while (j < n && !key_cmp(&log->ev[idx[i]], &log->ev[idx[j]]))
			total += log->ev[idx[j++]].count;
		size_t first = idx[i], last = idx[j - 1];
		keep[first] = keep[last] = true;
		if (first != last) {
			uint64_t rest = total - log->ev[first].count;
			log->ev[last].count = rest > UINT32_MAX ? UINT32_MAX : (uint32_t)rest;
		}
		i = j;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (keep[i])
			log->ev[k++] = log->ev[i];
	log->nr = k;
	free(idx);
	free(keep);
	if (log->nr > log->limit / 4 * 3)
		log->dropped += drop_oldest(log, log->limit / 2, true);
	if (log->nr > log->limit / 4 * 3) {
		if (log->limit < KMSG_EVENTS_HARD_MAX)
			log->limit *= 2;
		else
			log->lost += drop_oldest(log, log->limit / 4 * 3, false);
	}
}

struct kmsg_event *kmsg_new_event(struct kmsg_log *log, enum kmsg_kind kind,
				  const struct kmsg_prefix *px, uint64_t line)
{
	if (!log->limit) /* a log set up by hand */
		log->limit = KMSG_EVENTS_MAX;
	if (log->nr >= log->limit)
		compact(log);
	ALLOC_GROW(log->ev, log->nr + 1, log->alloc);
	struct kmsg_event *ev = &log->ev[log->nr++];
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->tb = px->tb;
	ev->ts = px->tb == KMSG_TB_NONE ? 0 : px->ts;
	ev->year_guessed = px->yearless;
	ev->line = line;
	ev->boot = log->boots;
	ev->count = 1;
	ev->fatal = -1;
	ev->recovery = -1;
	ev->gi = ev->ci = -1;
	ev->pid = -1;
	return ev;
}
