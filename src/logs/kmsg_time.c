/*
 * kmsg_time.c: the kernel log's timestamp prefixes (every format kmsg.h lists, detected per line)
 * and the calendar that turns them into seconds, including placing yearless syslog stamps in
 * their years once the whole log is read.
 */
#include "kmsg_internal.h"

#include <ctype.h>
#include <math.h>

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

int kmsg_year_of(double ts)
{
	int64_t y;
	int m, d;
	civil_from_days((int64_t)floor(ts / 86400.0), &y, &m, &d);
	return (int)y;
}

/* ---- scanners of stamp fields ---- */

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

/* ---- timestamp prefixes ---- */

/*
 * /dev/kmsg record: "PRI,SEQ,TS_USEC,FLAGS[,more];message". PRI is facility * 8 + level
 * (Documentation/ABI/testing/dev-kmsg): the kernel's own messages have facility 0; a record
 * written into /dev/kmsg by userspace has facility 1 (user) unless its writer chose another.
 */
static const char *kmsg_record(const char *s, double *ts, struct kmsg_prefix *px)
{
	long long v;
	int n = digits_upto(s, 4, &v);
	if (!n || s[n] != ',')
		return NULL;
	bool user = (v >> 3) != 0;
	s += n + 1;
	n = digits_upto(s, 20, &v);
	if (!n || s[n] != ',')
		return NULL;
	uint64_t seq = (uint64_t)v;
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
	px->user = user;
	px->has_seq = true;
	px->seq = seq;
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

/* dmesg -x: "kern  :err   : "; *user when the facility is not kern */
static const char *facility_level(const char *s, bool *user)
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
	*user = !starts_with(s, "kern ") && !starts_with(s, "kern:");
	return skip_spaces(p + 1);
}

/*
 * "host ident[pid]: " after a syslog stamp. any_ident: strip whatever ident there is (a syslog
 * line always has one; *user when it is not "kernel": a program's own line, which any user can
 * write with logger(1)); else only "kernel" (an ISO stamp might be dmesg's own, followed by the
 * message itself).
 */
static const char *host_ident(const char *s, bool any_ident, bool *user)
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
	bool kernel = q - id == 6 && !memcmp(id, "kernel", 6);
	if (!any_ident && !kernel)
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
	if (!kernel)
		*user = true;
	return skip_spaces(q + 1);
}

/* RFC 5424 after the stamp: "HOST APP PROCID MSGID SD MSG", SD "-" or "[...]..."; *user
 * when APP is not "kernel" */
static const char *rfc5424_header(const char *s, bool *user)
{
	for (int field = 0; field < 4; field++) {
		if (field == 1 && (strncmp(s, "kernel", 6) || s[6] != ' '))
			*user = true;
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

void kmsg_parse_prefix(struct kmsg_log *log, const char *s, struct kmsg_prefix *px)
{
	const char *q, *line = s;
	double ts;
	memset(px, 0, sizeof(*px));
	px->msg = s;
	if (kv_continuation(s)) {
		px->continuation = true;
		return;
	}
	bool indented = *s == ' ' || *s == '\t';
	s = skip_spaces(s);
	bool rfc5424 = false;
	if (*s == '<') { /* dmesg -r, syslog priority; "<6>1 " starts an RFC 5424 line */
		long long v;
		int n = digits_upto(s + 1, 3, &v);
		if (n && s[n + 1] == '>') {
			if (v >> 3) /* facility * 8 + level, as in a kmsg record */
				px->user = true;
			s += n + 2;
			if (s[0] == '1' && s[1] == ' ' && dig(s[2])) {
				s += 2;
				rfc5424 = true;
			}
		}
	}
	s = facility_level(s, &px->user);
	if (dig(*s)) {
		if ((q = kmsg_record(s, &ts, px))) {
			px->tb = KMSG_TB_MONO;
			px->ts = ts;
			px->has_mono = true;
			px->mono = ts;
			px->msg = q;
			return;
		}
		if ((q = iso_stamp(s, &ts))) {
			px->tb = KMSG_TB_WALL;
			px->ts = ts;
			s = rfc5424 ? rfc5424_header(skip_spaces(q), &px->user)
				    : host_ident(skip_spaces(q), false, &px->user);
		}
	} else if (*s == '[') {
		if ((q = mono_bracket(s, &ts))) {
			px->tb = KMSG_TB_MONO;
			px->ts = ts;
			px->has_mono = true;
			px->mono = ts;
			s = host_ident(skip_spaces(q), false, &px->user);
		} else if ((q = ctime_bracket(s, &ts))) {
			px->tb = KMSG_TB_WALL;
			px->ts = ts;
			s = skip_spaces(q);
		}
	} else if (isupper((unsigned char)*s) && (q = syslog_stamp(log, s, &ts))) {
		px->tb = KMSG_TB_WALL;
		px->ts = ts;
		px->yearless = true;
		s = host_ident(skip_spaces(q), true, &px->user);
	}
	s = skip_spaces(s);
	/* kern.log and journalctl keep dmesg's own stamp after theirs: the outer one wins (the
	 * inner one still tells how long after boot the line is: has_mono) */
	if (*s == '[' && (q = mono_bracket(s, &ts))) {
		if (px->tb == KMSG_TB_NONE) {
			px->tb = KMSG_TB_MONO;
			px->ts = ts;
		}
		px->has_mono = true;
		px->mono = ts;
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
	/*
	 * An indented line without a stamp continues the message above it: dmesg and journalctl
	 * print a message's further lines (a newline in a path or a process name the kernel
	 * echoed) indented under its first, without a stamp. Text there is never a message of its
	 * own, whatever it says.
	 */
	if (indented && px->tb == KMSG_TB_NONE && !px->user && s != line) {
		px->continuation = true;
		return;
	}
	px->bare = s == line;
}

bool kmsg_line_stamp(struct kmsg_log *log, const char *line, size_t len, double *ts,
		     enum kmsg_timebase *tb, bool *yearless)
{
	char buf[256];
	struct kmsg_prefix px;
	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = 0;
	for (size_t i = 0; i < len; i++)
		if (!buf[i])
			buf[i] = ' ';
	kmsg_parse_prefix(log, buf, &px);
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
	return kmsg_line_stamp(log, line, len, ts, tb, &yearless);
}

void kmsg_log_finish(struct kmsg_log *log)
{
	kmsg_feed_end(log);
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
