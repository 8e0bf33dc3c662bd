/*
 * kmsg.c: the kernel log parser (see kmsg.h). Three parts: timestamp prefixes (every format,
 * detected per line), the message parsers (Xid, SXid, ...), and the fast scan that finds the few
 * lines worth parsing. The readers for /dev/kmsg and saved files are at the end.
 */
#include "kmsg.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- calendar (proleptic Gregorian, no time zones: see kmsg.h) ---- */

static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static double civil_seconds(int64_t y, int mon, int mday, int h, int mi, double s)
{
	return (double)days_from_civil(y, mon, mday) * 86400.0 + h * 3600 + mi * 60 + s;
}

/* Move a wall-clock time by whole years, keeping month, day and time of day. */
static double shift_years(double ts, int years)
{
	double days = floor(ts / 86400.0);
	double sod = ts - days * 86400.0;
	int64_t y;
	int m, d;
	civil_from_days((int64_t)days, &y, &m, &d);
	y += years;
	if (m == 2 && d == 29 && !is_leap(y))
		d = 28;
	return (double)days_from_civil(y, m, d) * 86400.0 + sod;
}

static int month_index(const char *s)
{
	static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	/* byte by byte: s may end (NUL) before three bytes */
	for (int i = 0; i < 12; i++)
		if (s[0] == names[3 * i] && s[1] == names[3 * i + 1] && s[2] == names[3 * i + 2])
			return i + 1;
	return 0;
}

/* ---- small scanners over a NUL-terminated line ---- */

static bool dig(char c)
{
	return c >= '0' && c <= '9';
}

/* Exactly n digits at s. */
static bool digits_n(const char *s, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!dig(s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* Up to max digits; returns how many were read. */
static int digits_upto(const char *s, int max, long long *out)
{
	long long v = 0;
	int i = 0;
	while (i < max && dig(s[i])) {
		int d = s[i++] - '0';
		v = v > (LLONG_MAX - 9) / 10 ? LLONG_MAX : v * 10 + d; /* saturate */
	}
	*out = v;
	return i;
}

/* "ss[.fff]" seconds with an optional fraction: returns the end or NULL. */
static const char *seconds_frac(const char *s, double *out)
{
	int sec;
	if (!digits_n(s, 2, &sec) || sec > 60)
		return NULL;
	s += 2;
	double v = sec;
	if ((*s == '.' || *s == ',') && dig(s[1])) {
		double scale = 0.1;
		for (s++; dig(*s); s++) {
			v += (*s - '0') * scale;
			scale /= 10;
		}
	}
	*out = v;
	return s;
}

/* "hh:mm:ss[.frac]" */
static const char *clock_time(const char *s, int *h, int *mi, double *sec)
{
	if (!digits_n(s, 2, h) || *h > 23 || s[2] != ':' || !digits_n(s + 3, 2, mi) || *mi > 59 ||
	    s[5] != ':')
		return NULL;
	return seconds_frac(s + 6, sec);
}

static const char *skip_spaces(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* ---- timestamp prefixes ---- */

struct prefix {
	enum kmsg_timebase tb;
	double ts;
	bool yearless;
	bool continuation;
	const char *msg;
};

/* /dev/kmsg record: "PRI,SEQ,TS_USEC,FLAGS[,more];message" */
static const char *kmsg_record(const char *s, double *ts)
{
	long long v;
	int n = digits_upto(s, 4, &v);
	if (!n || s[n] != ',')
		return NULL;
	s += n + 1;
	n = digits_upto(s, 20, &v);
	if (!n || s[n] != ',')
		return NULL;
	s += n + 1;
	n = digits_upto(s, 18, &v);
	if (!n || s[n] != ',')
		return NULL;
	s += n + 1;
	const char *semi = NULL;
	for (int i = 0; i < 64 && s[i] && s[i] != ' '; i++)
		if (s[i] == ';') {
			semi = s + i;
			break;
		}
	if (!semi)
		return NULL;
	*ts = (double)v / 1e6;
	return semi + 1;
}

/* "[  1843.308145]" */
static const char *mono_bracket(const char *s, double *ts)
{
	if (*s != '[')
		return NULL;
	s = skip_spaces(s + 1);
	long long whole;
	int n = digits_upto(s, 12, &whole);
	if (!n)
		return NULL;
	s += n;
	double v = (double)whole;
	if (*s == '.') {
		double scale = 0.1;
		for (s++; dig(*s); s++) {
			v += (*s - '0') * scale;
			scale /= 10;
		}
	}
	if (*s != ']')
		return NULL;
	*ts = v;
	return s + 1;
}

/* dmesg -T: "[Mon Nov 30 10:00:00 2026]" (day of month space-padded) */
static const char *ctime_bracket(const char *s, double *ts)
{
	if (s[0] != '[' || !isalpha((unsigned char)s[1]) || !isalpha((unsigned char)s[2]) ||
	    !isalpha((unsigned char)s[3]) || s[4] != ' ')
		return NULL;
	int mon = month_index(s + 5), mday, h, mi, y;
	if (!mon || s[8] != ' ')
		return NULL;
	s += 9;
	if (*s == ' ')
		s++;
	if (dig(s[0]) && dig(s[1])) {
		mday = (s[0] - '0') * 10 + s[1] - '0';
		s += 2;
	} else if (dig(s[0])) {
		mday = s[0] - '0';
		s++;
	} else {
		return NULL;
	}
	double sec;
	if (*s != ' ' || mday < 1 || mday > 31 || !(s = clock_time(s + 1, &h, &mi, &sec)) ||
	    *s != ' ' || !digits_n(s + 1, 4, &y) || s[5] != ']')
		return NULL;
	*ts = civil_seconds(y, mon, mday, h, mi, sec);
	return s + 6;
}

/* "2025-01-25T10:34:54,859532+00:00" (or '.', ' ' for 'T', Z, +0000; the offset is skipped) */
static const char *iso_stamp(const char *s, double *ts)
{
	int y, mon, mday, h, mi;
	double sec;
	if (!digits_n(s, 4, &y) || s[4] != '-' || !digits_n(s + 5, 2, &mon) || s[7] != '-' ||
	    !digits_n(s + 8, 2, &mday) || (s[10] != 'T' && s[10] != ' ') || mon < 1 || mon > 12 ||
	    mday < 1 || mday > 31 || !(s = clock_time(s + 11, &h, &mi, &sec)))
		return NULL;
	if (*s == 'Z') {
		s++;
	} else if ((*s == '+' || *s == '-') && dig(s[1]) && dig(s[2])) {
		s += 3;
		if (*s == ':')
			s++;
		if (dig(s[0]) && dig(s[1]))
			s += 2;
	}
	*ts = civil_seconds(y, mon, mday, h, mi, sec);
	return s;
}

/* BSD syslog / journalctl: "Feb 14 05:03:41[.123456]" (no year) */
static const char *syslog_stamp(struct kmsg_log *log, const char *s, double *ts)
{
	int mon = month_index(s), mday, h, mi;
	if (!mon || s[3] != ' ')
		return NULL;
	s += 4;
	if (*s == ' ' && dig(s[1])) {
		mday = s[1] - '0';
		s += 2;
	} else if (dig(s[0]) && dig(s[1])) {
		mday = (s[0] - '0') * 10 + s[1] - '0';
		s += 2;
	} else if (dig(s[0])) {
		mday = s[0] - '0';
		s++;
	} else {
		return NULL;
	}
	double sec;
	if (*s != ' ' || mday < 1 || mday > 31 || !(s = clock_time(s + 1, &h, &mi, &sec)))
		return NULL;
	/* time must not run backwards: a month well before the last one is a new year */
	if (log->last_mon > 0 && mon + 6 <= log->last_mon)
		log->year++;
	log->last_mon = mon;
	*ts = civil_seconds(log->year, mon, mday, h, mi, sec);
	return s;
}

/* dmesg -x: "kern  :err   : " */
static const char *facility_level(const char *s)
{
	const char *p = s;
	int n = 0;
	while (islower((unsigned char)*p) && n < 8)
		p++, n++;
	if (!n)
		return s;
	p = skip_spaces(p);
	if (*p != ':')
		return s;
	p++;
	n = 0;
	while (islower((unsigned char)*p) && n < 8)
		p++, n++;
	if (!n)
		return s;
	p = skip_spaces(p);
	if (*p != ':')
		return s;
	return skip_spaces(p + 1);
}

/*
 * "host ident[pid]: " after a syslog stamp. any_ident: strip whatever ident there is (a syslog
 * line always has one); else only "kernel" (an ISO stamp might be dmesg's own, followed by the
 * message itself).
 */
static const char *host_ident(const char *s, bool any_ident)
{
	const char *p = s;
	int n = 0;
	while (*p && *p != ' ' && *p != ':' && n < 128)
		p++, n++;
	if (!n || *p != ' ')
		return s;
	const char *id = p + 1;
	const char *q = id;
	n = 0;
	while (*q && *q != ' ' && *q != ':' && *q != '[' && n < 64)
		q++, n++;
	if (!n)
		return s;
	if (!any_ident && (q - id != 6 || memcmp(id, "kernel", 6)))
		return s;
	if (*q == '[') {
		while (*q && *q != ']' && *q != ' ')
			q++;
		if (*q != ']')
			return s;
		q++;
	}
	if (q[0] != ':' || (q[1] != ' ' && q[1] != 0))
		return s;
	return skip_spaces(q + 1);
}

/* RFC 5424 after the stamp: "HOST APP PROCID MSGID SD MSG", SD "-" or "[...]..." */
static const char *rfc5424_header(const char *s)
{
	for (int field = 0; field < 4; field++) {
		while (*s && *s != ' ')
			s++;
		if (*s != ' ')
			return s;
		s++;
	}
	if (*s == '-') {
		s++;
	} else {
		while (*s == '[') {
			const char *close = strchr(s, ']');
			if (!close)
				return s;
			s = close + 1;
		}
	}
	return skip_spaces(s);
}

/* A /dev/kmsg continuation line: " SUBSYSTEM=pci", " DEVICE=+pci:0000:00:01.0". */
static bool kv_continuation(const char *s)
{
	if (*s != ' ')
		return false;
	s++;
	int n = 0;
	while (isupper((unsigned char)*s) || *s == '_' || dig(*s))
		s++, n++;
	return n > 0 && *s == '=';
}

static void parse_prefix(struct kmsg_log *log, const char *s, struct prefix *px)
{
	const char *q;
	double ts;
	memset(px, 0, sizeof(*px));
	px->msg = s;
	if (kv_continuation(s)) {
		px->continuation = true;
		return;
	}
	s = skip_spaces(s);
	bool rfc5424 = false;
	if (*s == '<') { /* dmesg -r, syslog priority; "<6>1 " starts an RFC 5424 line */
		long long v;
		int n = digits_upto(s + 1, 3, &v);
		if (n && s[n + 1] == '>') {
			s += n + 2;
			if (s[0] == '1' && s[1] == ' ' && dig(s[2])) {
				s += 2;
				rfc5424 = true;
			}
		}
	}
	s = facility_level(s);
	if (dig(*s)) {
		if ((q = kmsg_record(s, &ts))) {
			px->tb = KMSG_TB_MONO;
			px->ts = ts;
			px->msg = q;
			return;
		}
		if ((q = iso_stamp(s, &ts))) {
			px->tb = KMSG_TB_WALL;
			px->ts = ts;
			s = rfc5424 ? rfc5424_header(skip_spaces(q)) : host_ident(skip_spaces(q), false);
		}
	} else if (*s == '[') {
		if ((q = mono_bracket(s, &ts))) {
			px->tb = KMSG_TB_MONO;
			px->ts = ts;
			s = host_ident(skip_spaces(q), false);
		} else if ((q = ctime_bracket(s, &ts))) {
			px->tb = KMSG_TB_WALL;
			px->ts = ts;
			s = skip_spaces(q);
		}
	} else if (isupper((unsigned char)*s) && (q = syslog_stamp(log, s, &ts))) {
		px->tb = KMSG_TB_WALL;
		px->ts = ts;
		px->yearless = true;
		s = host_ident(skip_spaces(q), true);
	}
	s = skip_spaces(s);
	/* kern.log and journalctl keep dmesg's own stamp after theirs: the outer one wins */
	if (*s == '[' && (q = mono_bracket(s, &ts))) {
		if (px->tb == KMSG_TB_NONE) {
			px->tb = KMSG_TB_MONO;
			px->ts = ts;
		}
		s = skip_spaces(q);
	}
	/* caller id (CONFIG_PRINTK_CALLER): "[    T1] " or "[  C3] " */
	if (*s == '[' && (s[1] == ' ' || s[1] == 'T' || s[1] == 'C')) {
		const char *p = skip_spaces(s + 1);
		if (*p == 'T' || *p == 'C') {
			long long v;
			int n = digits_upto(p + 1, 10, &v);
			if (n && p[n + 1] == ']')
				s = skip_spaces(p + n + 2);
		}
	}
	px->msg = s;
}

static bool line_time(struct kmsg_log *log, const char *line, size_t len, double *ts,
		      enum kmsg_timebase *tb, bool *yearless)
{
	char buf[256];
	struct prefix px;
	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = 0;
	for (size_t i = 0; i < len; i++)
		if (!buf[i])
			buf[i] = ' ';
	parse_prefix(log, buf, &px);
	if (px.tb == KMSG_TB_NONE)
		return false;
	*ts = px.ts;
	*tb = px.tb;
	*yearless = px.yearless;
	if (px.yearless) {
		log->last_yearless = true;
		log->ylast_year = log->year;
		log->ylast_ts = px.ts;
	}
	return true;
}

bool kmsg_line_time(struct kmsg_log *log, const char *line, size_t len, double *ts,
		    enum kmsg_timebase *tb)
{
	bool yearless;
	return line_time(log, line, len, ts, tb, &yearless);
}

/* ---- fields ---- */

/* Copy at most n bytes of src into dst[size] as printable ASCII, trimmed. */
static void copy_field(char *dst, size_t size, const char *src, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n && src[i] && k + 1 < size; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[k++] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	while (k && dst[k - 1] == ' ')
		k--;
	dst[k] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int hex_run(const char *s, int max, unsigned long *out)
{
	unsigned long v = 0;
	int i = 0;
	while (i < max && hexval(s[i]) >= 0)
		v = v * 16 + (unsigned long)hexval(s[i++]);
	*out = v;
	return i;
}

/*
 * A PCI address at s: "dddd:bb:dd.f", "dddd:bb:dd" (Xid's form) or "bb:dd.f". Writes the canonical
 * lowercase "dddd:bb:dd.f" (function 0 when absent); returns the end or NULL.
 */
static const char *parse_bdf(const char *s, char out[20])
{
	unsigned long a, b, c, f = 0;
	int na = hex_run(s, 8, &a);
	if (!na || s[na] != ':')
		return NULL;
	const char *p = s + na + 1;
	int nb = hex_run(p, 2, &b);
	if (nb != 2)
		return NULL;
	p += 2;
	if (*p == '.' && na == 2) { /* bus:dev.fn */
		if (hexval(p[1]) < 0 || hexval(p[1]) > 7)
			return NULL;
		snprintf(out, 20, "0000:%02lx:%02lx.%x", a, b, hexval(p[1]));
		return p + 2;
	}
	if (*p != ':' || hex_run(p + 1, 2, &c) != 2 || na < 4)
		return NULL;
	p += 3;
	if (*p == '.' && hexval(p[1]) >= 0 && hexval(p[1]) <= 7) {
		f = (unsigned long)hexval(p[1]);
		p += 2;
	}
	snprintf(out, 20, "%04lx:%02lx:%02lx.%lx", a, b, c, f);
	return p;
}

/* The first PCI address anywhere in s, or false. */
static bool find_bdf(const char *s, char out[20])
{
	for (const char *p = strchr(s, ':'); p; p = strchr(p + 1, ':')) {
		const char *st = p;
		while (st > s && hexval(st[-1]) >= 0 && p - st < 8)
			st--;
		if (p - st >= 2 && (st == s || !isalnum((unsigned char)st[-1])) && parse_bdf(st, out))
			return true;
	}
	return false;
}

/* 1 "Fatal", 0 "Nonfatal"/"Non-fatal", -1 neither (anywhere in s) */
static int fatal_word(const char *s)
{
	if (strcasestr(s, "nonfatal") || strcasestr(s, "non-fatal") || strcasestr(s, "non fatal"))
		return 0;
	if (strcasestr(s, "fatal"))
		return 1;
	return -1;
}

/* ---- events ---- */

static struct kmsg_event *new_event(struct kmsg_log *log, enum kmsg_kind kind,
				    const struct prefix *px, uint64_t line);

/* "Xid (PCI:0000:9b:00 GPU-I:05 GPU-CI:01): 79, pid=9962, name=python, text" */
static bool parse_xid(const char *s, struct kmsg_event *ev)
{
	s = skip_spaces(s);
	if (*s == '(') {
		const char *close = memchr(s, ')', strnlen(s, 96));
		if (!close)
			return false;
		const char *p = s + 1;
		if (!strncmp(p, "PCI:", 4))
			p += 4;
		const char *q = parse_bdf(p, ev->bdf);
		if (q && q <= close) {
			for (p = q; p < close;) {
				long long v;
				p = skip_spaces(p);
				if (!strncmp(p, "GPU-I:", 6) && digits_upto(p + 6, 4, &v)) {
					ev->gi = (int)v;
					p += 6 + digits_upto(p + 6, 4, &v);
				} else if (!strncmp(p, "GPU-CI:", 7) && digits_upto(p + 7, 4, &v)) {
					ev->ci = (int)v;
					p += 7 + digits_upto(p + 7, 4, &v);
				} else {
					break;
				}
			}
		} else {
			ev->bdf[0] = 0;
		}
		s = close + 1;
	}
	if (*s == ':')
		s++;
	s = skip_spaces(s);
	long long num;
	int n = digits_upto(s, 9, &num);
	if (!n || dig(s[n]))
		return false;
	ev->num = (int)num;
	s += n;
	if (*s == ',')
		s++;
	s = skip_spaces(s);
	if (!strncmp(s, "pid=", 4)) {
		s += 4;
		const char *end = strstr(s, ", ");
		long long v;
		if (dig(*s) && digits_upto(s, 12, &v))
			ev->pid = v;
		s = end ? end + 2 : s + strlen(s);
	}
	if (!strncmp(s, "name=", 5)) {
		s += 5;
		const char *end = strstr(s, ", ");
		size_t len = end ? (size_t)(end - s) : strlen(s);
		if (strncmp(s, "<unknown>", 9))
			copy_field(ev->name, sizeof(ev->name), s, len);
		s = end ? end + 2 : s + len;
	}
	copy_field(ev->text, sizeof(ev->text), s, strlen(s));
	ev->fatal = fatal_word(s);
	if (ev->num == 154) {
		const char *to = strstr(s, "to 0x");
		unsigned long code;
		if (to && hex_run(to + 5, 7, &code))
			ev->recovery = (int)code;
	}
	return true;
}

/* "nvidia-nvswitch3: SXid (PCI:0000:c3:00.0): 20009, Non-fatal, Link 28 RX Short Error Rate" */
static bool parse_sxid(const char *msg, const char *s, struct kmsg_event *ev)
{
	const char *dev = strstr(msg, "nvidia-nvswitch");
	if (dev && dev < s) {
		size_t len = strcspn(dev, ": ");
		copy_field(ev->name, sizeof(ev->name), dev, len);
	}
	s = skip_spaces(s + 4);
	if (*s == '(') {
		const char *close = memchr(s, ')', strnlen(s, 64));
		if (!close)
			return false;
		const char *p = s + 1;
		if (!strncmp(p, "PCI:", 4))
			p += 4;
		if (!parse_bdf(p, ev->bdf))
			ev->bdf[0] = 0;
		s = close + 1;
	}
	if (*s == ':')
		s++;
	s = skip_spaces(s);
	long long num;
	int n = digits_upto(s, 9, &num);
	if (!n || dig(s[n]))
		return false;
	ev->num = (int)num;
	s += n;
	if (*s == ',')
		s++;
	s = skip_spaces(s);
	if (!strncasecmp(s, "non-fatal", 9) || !strncasecmp(s, "nonfatal", 8))
		ev->fatal = 0;
	else if (!strncasecmp(s, "fatal", 5))
		ev->fatal = 1;
	copy_field(ev->text, sizeof(ev->text), s, strlen(s));
	return true;
}

/* Substrings of NVRM lines that are known to be harmless. */
static const char *const nvrm_benign[] = {
	"loading NVIDIA UNIX",
	"FBHUB Interrupt detected",
	"Persistence mode is deprecated",
	"(PCI ID: ",
	"installed in this system has",
	"GPU Board Serial Number",
	"nvidia-peermem",
};

static void parse_nvrm(struct kmsg_log *log, const struct prefix *px, const char *nv,
		       uint64_t line)
{
	const char *t = skip_spaces(nv + 5); /* after "NVRM:" */
	struct kmsg_event *ev;
	char bdf[20] = "";

	if (!strncmp(t, "Xid", 3) && !isalnum((unsigned char)t[3])) {
		struct kmsg_event tmp;
		memset(&tmp, 0, sizeof(tmp));
		tmp.gi = tmp.ci = -1;
		tmp.pid = -1;
		tmp.fatal = -1;
		tmp.recovery = -1;
		if (parse_xid(t + 3, &tmp)) {
			ev = new_event(log, KMSG_XID, px, line);
			tmp.kind = ev->kind;
			tmp.tb = ev->tb;
			tmp.ts = ev->ts;
			tmp.year_guessed = ev->year_guessed;
			tmp.line = ev->line;
			tmp.boot = ev->boot;
			tmp.count = 1;
			*ev = tmp;
			return;
		}
	} else if (!strncmp(t, "GPU at ", 7)) {
		const char *p = t + 7;
		if (!strncmp(p, "PCI:", 4))
			p += 4;
		const char *q = parse_bdf(p, bdf);
		if (q) {
			q = skip_spaces(*q == ':' ? q + 1 : q);
			if (!strncmp(q, "GPU-", 4)) {
				ev = new_event(log, KMSG_GPU_INIT, px, line);
				memcpy(ev->bdf, bdf, sizeof(bdf));
				copy_field(ev->uuid, sizeof(ev->uuid), q, strcspn(q, " ,"));
				return;
			}
		}
	} else if (!strncmp(t, "The NVIDIA GPU ", 15)) {
		/* first line of the multi-line "fallen off the bus" message */
		if (parse_bdf(t + 15, log->pending_bdf))
			log->pending_line = line;
		if (!strstr(t, "fallen off the bus")) {
			log->nvrm_benign++;
			return;
		}
	}
	if (strstr(t, "fallen off the bus")) {
		ev = new_event(log, KMSG_GPU_OFF_BUS, px, line);
		if (!find_bdf(t, ev->bdf) && log->pending_bdf[0] && line - log->pending_line <= 4)
			memcpy(ev->bdf, log->pending_bdf, sizeof(ev->bdf));
		log->pending_bdf[0] = 0;
		copy_field(ev->text, sizeof(ev->text), t, strlen(t));
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(nvrm_benign); i++) {
		if (strstr(t, nvrm_benign[i])) {
			log->nvrm_benign++;
			return;
		}
	}
	ev = new_event(log, KMSG_NVRM_UNKNOWN, px, line);
	if (!strncmp(t, "GPU ", 4))
		parse_bdf(t + 4, ev->bdf);
	copy_field(ev->text, sizeof(ev->text), t, strlen(t));
}

/* "Out of memory: Killed process 1234 (python3) ..." and the memory cgroup form */
static void parse_oom_kill(struct kmsg_log *log, const struct prefix *px, const char *msg,
			   const char *hit, uint64_t line)
{
	bool cgroup = strstr(msg, "cgroup out of memory") != NULL;
	const char *p = strstr(hit, "process ");
	struct kmsg_event *ev = new_event(log, cgroup ? KMSG_OOM_CGROUP : KMSG_OOM_KILL, px, line);
	if (p) {
		long long v;
		p += 8;
		int n = digits_upto(p, 12, &v);
		if (n) {
			ev->pid = v;
			p = skip_spaces(p + n);
			if (*p == '(') {
				const char *close = strchr(p, ')');
				if (close)
					copy_field(ev->name, sizeof(ev->name), p + 1,
						   (size_t)(close - p - 1));
			}
		}
	}
	copy_field(ev->text, sizeof(ev->text), msg, strlen(msg));
}

/* "NAME invoked oom-killer: gfp_mask=..." */
static void parse_oom_invoked(struct kmsg_log *log, const struct prefix *px, const char *msg,
			      const char *hit, uint64_t line)
{
	struct kmsg_event *ev = new_event(log, KMSG_OOM_INVOKED, px, line);
	const char *st = hit;
	while (st > msg && st[-1] != ' ')
		st--;
	copy_field(ev->name, sizeof(ev->name), st, (size_t)(hit - st));
	copy_field(ev->text, sizeof(ev->text), msg, strlen(msg));
}

/* "DRIVER 0000:3b:00.0[ IFACE]: rest": driver into name (or iface), bdf; returns rest. */
static const char *device_prefix(const char *msg, struct kmsg_event *ev, bool want_iface)
{
	size_t dl = strcspn(msg, " :");
	if (!dl || msg[dl] != ' ')
		return msg;
	const char *q = parse_bdf(msg + dl + 1, ev->bdf);
	if (!q)
		return msg;
	copy_field(ev->name, sizeof(ev->name), msg, dl);
	if (*q == ' ' && want_iface) {
		size_t il = strcspn(q + 1, " :");
		if (il && q[1 + il] == ':') {
			copy_field(ev->name, sizeof(ev->name), q + 1, il);
			q += 1 + il;
		}
	}
	if (*q == ':')
		q++;
	return skip_spaces(q);
}

static void parse_pcie(struct kmsg_log *log, const struct prefix *px, const char *msg,
		       uint64_t line)
{
	if (!strstr(msg, "available PCIe bandwidth") || !strstr(msg, "limited by"))
		return;
	struct kmsg_event *ev = new_event(log, KMSG_PCIE_LIMITED, px, line);
	const char *rest = device_prefix(msg, ev, false);
	const char *w = strstr(rest, "limited by");
	w = w ? strstr(w, " x") : NULL;
	long long v;
	if (w && digits_upto(w + 2, 3, &v))
		ev->num = (int)v;
	copy_field(ev->text, sizeof(ev->text), rest, strlen(rest));
}

/* "INFO: task kworker/u16:2:123 blocked for more than 120 seconds." */
static void parse_hung(struct kmsg_log *log, const struct prefix *px, const char *msg,
		       const char *hit, uint64_t line)
{
	const char *t = strstr(msg, "task ");
	if (!t || t > hit)
		return;
	t += 5;
	const char *end = hit;
	while (end > t && end[-1] == ' ')
		end--;
	const char *colon = NULL;
	for (const char *p = t; p < end; p++)
		if (*p == ':')
			colon = p;
	struct kmsg_event *ev = new_event(log, KMSG_HUNG_TASK, px, line);
	long long v;
	if (colon && digits_upto(colon + 1, 12, &v) == end - colon - 1) {
		ev->pid = v;
		copy_field(ev->name, sizeof(ev->name), t, (size_t)(colon - t));
	} else {
		copy_field(ev->name, sizeof(ev->name), t, (size_t)(end - t));
	}
	const char *secs = skip_spaces(hit + strlen("blocked for more than"));
	if (digits_upto(secs, 9, &v))
		ev->num = (int)v;
	copy_field(ev->text, sizeof(ev->text), msg, strlen(msg));
}

static void parse_link(struct kmsg_log *log, const struct prefix *px, const char *msg,
		       const char *hit, uint64_t line)
{
	if (!strstr(msg, "mlx5"))
		return;
	const char *w = hit + 5; /* after "Link " */
	bool down = !strncasecmp(w, "down", 4);
	struct kmsg_event *ev = new_event(log, down ? KMSG_LINK_DOWN : KMSG_LINK_UP, px, line);
	const char *rest = device_prefix(msg, ev, true);
	copy_field(ev->text, sizeof(ev->text), rest, strlen(rest));
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

static void parse_message(struct kmsg_log *log, const struct prefix *px, uint64_t line)
{
	const char *msg = px->msg, *hit;
	if ((hit = strstr(msg, "SXid"))) {
		struct kmsg_event tmp;
		memset(&tmp, 0, sizeof(tmp));
		tmp.fatal = -1;
		if (parse_sxid(msg, hit, &tmp)) {
			/* "Severity N ..." and "Data {...}" lines continue the SXid just logged */
			const struct kmsg_event *prev = log->nr ? &log->ev[log->nr - 1] : NULL;
			if (prev && prev->kind == KMSG_SXID && prev->num == tmp.num &&
			    !strcmp(prev->bdf, tmp.bdf) && line - prev->line <= 3 &&
			    (starts_with(tmp.text, "Severity") || starts_with(tmp.text, "Data {")))
				return;
			struct kmsg_event *ev = new_event(log, KMSG_SXID, px, line);
			ev->num = tmp.num;
			ev->fatal = tmp.fatal;
			memcpy(ev->bdf, tmp.bdf, sizeof(ev->bdf));
			memcpy(ev->name, tmp.name, sizeof(ev->name));
			memcpy(ev->text, tmp.text, sizeof(ev->text));
		}
		return;
	}
	if ((hit = strstr(msg, "NVRM:"))) {
		parse_nvrm(log, px, hit, line);
		return;
	}
	if ((hit = strstr(msg, "of memory: Kill"))) {
		parse_oom_kill(log, px, msg, hit, line);
		return;
	}
	if ((hit = strstr(msg, " invoked oom-killer"))) {
		parse_oom_invoked(log, px, msg, hit, line);
		return;
	}
	if (strstr(msg, "PCIe bandwidth")) {
		parse_pcie(log, px, msg, line);
		return;
	}
	if ((hit = strstr(msg, "blocked for more than"))) {
		parse_hung(log, px, msg, hit, line);
		return;
	}
	if (!strncmp(msg, "Linux version ", 14)) {
		log->boots++;
		struct kmsg_event *ev = new_event(log, KMSG_BOOT, px, line);
		copy_field(ev->text, sizeof(ev->text), msg + 14, strlen(msg + 14));
		return;
	}
	if ((hit = strstr(msg, "Link ")) &&
	    (!strncasecmp(hit + 5, "down", 4) || !strncasecmp(hit + 5, "up", 2) ||
	     !strncmp(hit + 5, "ACTIVE", 6))) {
		parse_link(log, px, msg, hit, line);
		return;
	}
}

static void parse_one_line(struct kmsg_log *log, const unsigned char *s, size_t n, uint64_t line)
{
	char buf[KMSG_LINE_MAX + 1];
	struct prefix px;
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
	parse_prefix(log, buf, &px);
	if (px.continuation)
		return;
	if (px.yearless) {
		log->last_yearless = true;
		log->ylast_year = log->year;
		log->ylast_ts = px.ts;
	}
	parse_message(log, &px, line);
}

/* Newlines in [p, e): eight bytes at a time. */
static uint64_t count_nl(const unsigned char *p, const unsigned char *e)
{
	const uint64_t ones = 0x0101010101010101ULL, nl = ones * '\n', low7 = ones * 0x7f;
	uint64_t n = 0;
	while (e - p >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= nl;
		/* high bit of each byte of t is set iff that byte of w is non-zero */
		uint64_t t = ((w & low7) + low7) | w;
		n += (((~t >> 7) & ones) * ones) >> 56;
		p += 8;
	}
	while (p < e)
		n += *p++ == '\n';
	return n;
}

/* Find the timestamp of the last line that has one: the log's "now". */
static void find_last_time(struct kmsg_log *log, const unsigned char *b, const unsigned char *end)
{
	const unsigned char *e = end;
	for (int tries = 0; tries < 256 && e > b; tries++) {
		while (e > b && (e[-1] == '\n' || e[-1] == '\r'))
			e--;
		if (e == b)
			break;
		const unsigned char *ls = memrchr(b, '\n', (size_t)(e - b));
		ls = ls ? ls + 1 : b;
		double ts;
		enum kmsg_timebase tb;
		bool yearless;
		if (line_time(log, (const char *)ls, (size_t)(e - ls), &ts, &tb, &yearless)) {
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
		const unsigned char *ls = p > floor ? memrchr(floor, '\n', (size_t)(p - floor)) : NULL;
		ls = ls ? ls + 1 : floor;
		const unsigned char *le = memchr(p, '\n', (size_t)(end - p));
		if (!le)
			le = end;
		line += count_nl(counted, ls);
		counted = ls;
		parse_one_line(log, ls, (size_t)(le - ls), line + 1);
		p = floor = le < end ? le + 1 : end;
	}
	line += count_nl(counted, end);
	if (len && b[len - 1] != '\n')
		line++;
	log->lines = line;
	log->bytes += len;
	find_last_time(log, b, end);
}

/* ---- the event store ---- */

void kmsg_log_init(struct kmsg_log *log, const struct kmsg_opts *opts)
{
	memset(log, 0, sizeof(*log));
	if (opts)
		log->opts = *opts;
	double hint = log->opts.year_hint > 0 ? log->opts.year_hint : wall_seconds();
	int64_t y;
	int m, d;
	civil_from_days((int64_t)floor(hint / 86400.0), &y, &m, &d);
	log->hint_ts = hint;
	log->hint_year = (int)y;
	log->year = (int)y;
}

void kmsg_log_release(struct kmsg_log *log)
{
	free(log->ev);
	log->ev = NULL;
	log->nr = log->alloc = 0;
}

void kmsg_log_finish(struct kmsg_log *log)
{
	if (!log->last_yearless)
		return;
	/* the last yearless stamp is in the hint's year, unless that puts it in the future */
	int target = log->hint_year;
	if (shift_years(log->ylast_ts, log->hint_year - log->ylast_year) > log->hint_ts + 86400.0)
		target--;
	int shift = target - log->ylast_year;
	log->last_yearless = false;
	if (!shift)
		return;
	for (size_t i = 0; i < log->nr; i++)
		if (log->ev[i].year_guessed)
			log->ev[i].ts = shift_years(log->ev[i].ts, shift);
	if (log->has_last && log->last_guessed)
		log->last_ts = shift_years(log->last_ts, shift);
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
	if ((c = strcmp(a->bdf, b->bdf)))
		return c;
	switch (a->kind) {
	case KMSG_SXID:
	case KMSG_HUNG_TASK:
	case KMSG_LINK_DOWN:
	case KMSG_LINK_UP:
		return strcmp(a->name, b->name);
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

/*
 * Make room: keep the first and the last occurrence of each distinct event (the last one counts
 * the ones in between), which keeps what the check judges: counts, first and last times, and
 * the order of faults and resets. If that is not enough, drop the oldest.
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
	if (log->nr > KMSG_EVENTS_MAX / 4 * 3) {
		size_t drop = log->nr - KMSG_EVENTS_MAX / 2;
		for (size_t i = 0; i < drop; i++)
			log->dropped += log->ev[i].count;
		memmove(log->ev, log->ev + drop, (log->nr - drop) * sizeof(*log->ev));
		log->nr -= drop;
	}
}

static struct kmsg_event *new_event(struct kmsg_log *log, enum kmsg_kind kind,
				    const struct prefix *px, uint64_t line)
{
	if (log->nr >= KMSG_EVENTS_MAX)
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

/* ---- readers ---- */

/* Keep the newest: past cap, drop the oldest half (from a line start). */
static void keep_tail(struct strbuf *out, size_t start, size_t cap, bool *truncated)
{
	if (out->len - start <= cap)
		return;
	size_t cut = start + (out->len - start) / 2;
	const char *nl = memchr(out->buf + cut, '\n', out->len - cut);
	cut = nl ? (size_t)(nl + 1 - out->buf) : out->len;
	memmove(out->buf + start, out->buf + cut, out->len - cut);
	strbuf_setlen(out, start + out->len - cut);
	*truncated = true;
}

int kmsg_read_device(const char *path, struct strbuf *out, size_t cap, bool *truncated,
		     struct strbuf *err)
{
	enum { REC_MAX = 16384 }; /* a record is at most 8 KiB; a smaller buffer gets EINVAL */
	*truncated = false;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	char *rec = xmalloc(REC_MAX);
	size_t start = out->len;
	int ret = 0;
	for (;;) {
		ssize_t n = read(fd, rec, REC_MAX);
		if (n < 0) {
			if (errno == EINTR || errno == EPIPE) /* EPIPE: records overwritten */
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			ret = error_set(err, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		strbuf_add(out, rec, (size_t)n);
		if (rec[n - 1] != '\n')
			strbuf_addch(out, '\n');
		keep_tail(out, start, cap, truncated);
	}
	free(rec);
	close(fd);
	return ret;
}

int kmsg_read_tail(const char *path, struct strbuf *out, size_t cap, bool *truncated,
		   struct strbuf *err)
{
	*truncated = false;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	struct stat st;
	size_t start = out->len;
	bool skip_partial = false;
	if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode)) {
		/* a kmsg device after all (a link to /dev/kmsg in a fixture, --kernel-log /dev/kmsg) */
		close(fd);
		return kmsg_read_device(path, out, cap, truncated, err);
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > cap) {
		if (lseek(fd, st.st_size - (off_t)cap, SEEK_SET) >= 0) {
			*truncated = true;
			skip_partial = true;
		}
	}
	int ret = 0;
	for (;;) {
		strbuf_grow(out, 65536);
		ssize_t n = read(fd, out->buf + out->len, 65536);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = error_set(err, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		out->len += (size_t)n; /* strbuf_setlen() only shortens */
		out->buf[out->len] = 0;
		keep_tail(out, start, cap, truncated);
	}
	close(fd);
	if (!ret && skip_partial) {
		const char *nl = memchr(out->buf + start, '\n', out->len - start);
		size_t cut = nl ? (size_t)(nl + 1 - out->buf) : out->len;
		memmove(out->buf + start, out->buf + cut, out->len - cut);
		strbuf_setlen(out, start + out->len - cut);
	}
	return ret;
}
