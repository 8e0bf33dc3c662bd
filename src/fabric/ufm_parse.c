/*
 * ufm_parse.c: one line of UFM's event.log into a struct ufm_event (docs/FABRIC.md), and the
 * reader of event.log files, plain or gzip'd (zlib in-process, loaded by src/lib/zlite.c: a rotated
 * event.log.2.gz is read as a stream, never unpacked to disk). The parser runs on every line of logs of gigabytes, so
 * it walks the line once, by hand, and copies only the few fields it keeps.
 */
#include "ufm.h"
#include "../lib/fileio.h"
#include "../lib/zlite.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const int ufm_codes[UFM_NCODES] = { 110, 112, 113, 115, 116, 329, 702, 917, 918 };

int ufm_code_index(int code)
{
	switch (code) {
	case 110: return 0;
	case 112: return 1;
	case 113: return 2;
	case 115: return 3;
	case 116: return 4;
	case 329: return 5;
	case 702: return 6;
	case 917: return 7;
	case 918: return 8;
	}
	return -1;
}

const char *ufm_code_name(int code)
{
	switch (code) {
	case 110: return "symbol error rate";
	case 112: return "link downed";
	case 113: return "port receive errors";
	case 115: return "switch relay errors";
	case 116: return "transmit discards";
	case 329: return "link went down";
	case 702: return "marked unhealthy by the subnet manager";
	case 917: return "symbol bit error rate (warning)";
	case 918: return "symbol bit error rate (error)";
	}
	return "other";
}

static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';
		if (d > 9)
			return -1;
		v = v * 10 + (int)d;
	}
	return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DD HH:MM:SS[.fff]" at s: the length used, or 0. */
static size_t parse_stamp(const char *s, size_t len, int64_t *t_ms)
{
	if (len < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
	    s[13] != ':' || s[16] != ':')
		return 0;
	int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
	int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
	    mi > 59 || se < 0 || se > 60)
		return 0;
	size_t p = 19;
	int ms = 0;
	if (p < len && (s[p] == '.' || s[p] == ',')) {
		size_t q = p + 1;
		int scale = 100;
		while (q < len && s[q] >= '0' && s[q] <= '9' && q - p <= 9) {
			if (scale) {
				ms += (s[q] - '0') * scale;
				scale /= 10;
			}
			q++;
		}
		if (q == p + 1)
			return 0;
		p = q;
	}
	*t_ms = (days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se) * 1000 + ms;
	return p;
}

void ufm_format_time(int64_t t_ms, struct strbuf *out)
{
	int64_t secs = t_ms / 1000, ms = t_ms % 1000;
	int64_t z = secs / 86400, sod = secs % 86400;
	/* civil_from_days */
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1;
	int64_t m = mp < 10 ? mp + 3 : mp - 9;
	y += m <= 2;
	strbuf_addf(out, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld.%03lld", (long long)y,
		    (long long)m, (long long)d, (long long)(sod / 3600), (long long)(sod / 60 % 60),
		    (long long)(sod % 60), (long long)ms);
}

/* Copy [s, s+n) into dst (size cap) if every byte is a visible one: names are tokens. */
static bool copy_token(char *dst, size_t cap, const char *s, size_t n)
{
	if (!n || n >= cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return false;
	memcpy(dst, s, n);
	dst[n] = 0;
	return true;
}

static const char *find(const char *s, const char *end, const char *needle)
{
	size_t n = strlen(needle);
	if ((size_t)(end - s) < n)
		return NULL;
	return memmem(s, (size_t)(end - s), needle, n);
}

/* "[site / Switch: NAME / 1/17/1]" (inside the brackets): name and port of ev->self. */
static void parse_location(const char *s, const char *end, struct ufm_end *e)
{
	const char *colon = find(s, end, ": ");
	if (!colon)
		return;
	const char *name = colon + 2;
	const char *sep = find(name, end, " / ");
	const char *name_end = sep ? sep : end;
	if (!copy_token(e->name, sizeof(e->name), name, (size_t)(name_end - name))) {
		e->name[0] = 0;
		return;
	}
	if (sep && !copy_token(e->port, sizeof(e->port), sep + 3, (size_t)(end - sep - 3)))
		e->port[0] = 0;
}

static bool parse_hex_guid(const char *s, const char *end, struct ufm_end *e)
{
	const char *p = s;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	size_t n = (size_t)(end - p);
	if (!n || n > 16)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f') ||
		      (p[i] >= 'A' && p[i] <= 'F')))
			return false;
	for (size_t i = 0; i < n; i++)
		e->guid[i] = (char)(p[i] >= 'A' && p[i] <= 'F' ? p[i] + 32 : p[i]);
	e->guid[n] = 0;
	return true;
}

/* "(Switch:NAME:1/17/1)9c0591030090e000:33" at s; returns the end of it or NULL. */
static const char *parse_paren_end(const char *s, const char *end, struct ufm_end *e)
{
	if (s >= end || *s != '(')
		return NULL;
	const char *close = memchr(s, ')', (size_t)(end - s));
	if (!close)
		return NULL;
	const char *in = s + 1;
	const char *c1 = memchr(in, ':', (size_t)(close - in));
	if (!c1)
		return NULL;
	const char *c2 = close;
	while (c2 > c1 && *c2 != ':')
		c2--;
	if (c2 == c1) {
		/* "(Switch:NAME)": no port label */
		if (!copy_token(e->name, sizeof(e->name), c1 + 1, (size_t)(close - c1 - 1)))
			return NULL;
	} else if (!copy_token(e->name, sizeof(e->name), c1 + 1, (size_t)(c2 - c1 - 1)) ||
		   !copy_token(e->port, sizeof(e->port), c2 + 1, (size_t)(close - c2 - 1))) {
		e->name[0] = e->port[0] = 0;
		return NULL;
	}
	const char *p = close + 1, *q = p;
	while (q < end && *q != ':' && *q != ' ' && *q != ',')
		q++;
	if (q > p && !parse_hex_guid(p, q, e))
		e->guid[0] = 0;
	if (q < end && *q == ':') {
		unsigned v = 0;
		const char *r = q + 1;
		while (r < end && *r >= '0' && *r <= '9' && v < 100000)
			v = v * 10 + (unsigned)(*r++ - '0');
		if (r > q + 1 && v < 100000)
			e->num = v;
		q = r;
	}
	return q;
}

/* "NAME:PORT" token (split at the last ':'). */
static bool parse_name_port(const char *s, const char *end, struct ufm_end *e)
{
	if (end <= s)
		return false;
	const char *c = end - 1; /* *end is past the token */
	while (c > s && *c != ':')
		c--;
	if (c == s || *c != ':')
		return false;
	if (!copy_token(e->name, sizeof(e->name), s, (size_t)(c - s)) ||
	    !copy_token(e->port, sizeof(e->port), c + 1, (size_t)(end - c - 1))) {
		e->name[0] = e->port[0] = 0;
		return false;
	}
	return true;
}

static bool has_ci(const char *s, const char *end, const char *needle)
{
	size_t n = strlen(needle);
	for (const char *p = s; p + n <= end; p++) {
		p = memchr(p, needle[0], (size_t)(end - p));
		if (!p || p + n > end)
			return false;
		if (!strncasecmp(p, needle, n))
			return true;
	}
	return false;
}

/*
 * A port disabled or enabled by hand, in the shapes UFM writes for an operator's action:
 * "... disabled by user admin", "... disabled by administrator", "Port ... was disabled by
 * admin" (and "enabled by"). The port is the message's "NAME:PORT" or "(Switch:NAME:PORT)"
 * when it names one, else the envelope's.
 */
static int manual_shape(const char *m, const char *end)
{
	const char *p = find(m, end, "abled by ");
	if (!p || p - m < 2)
		return 0;
	const char *w = p + 9;
	if (!(has_ci(w, end < w + 6 ? end : w + 6, "user") ||
	      has_ci(w, end < w + 6 ? end : w + 6, "admin") ||
	      has_ci(w, end < w + 9 ? end : w + 9, "operator")))
		return 0;
	if (p - m >= 3 && (p[-3] == 'd' || p[-3] == 'D') && p[-2] == 'i' && p[-1] == 's')
		return -1; /* "disabled by" */
	if (p[-1] == 'n' || p[-1] == 'N')
		return 1; /* "enabled by" */
	return 0;
}

static void manual_port(const char *m, const char *end, struct ufm_event *ev)
{
	const char *p = memchr(m, '(', (size_t)(end - m));
	if (p && parse_paren_end(p, end, &ev->a))
		return;
	memset(&ev->a, 0, sizeof(ev->a));
	const char *q = find(m, end, "Port ");
	if (q) {
		q += 5;
		const char *t = q;
		while (t < end && *t != ' ')
			t++;
		if (parse_name_port(q, t, &ev->a))
			return;
	}
	memset(&ev->a, 0, sizeof(ev->a));
}

int ufm_parse_line(const char *s, size_t len, struct ufm_event *ev)
{
	const char *end = s + len, *p;
	if (len && s[len - 1] == '\r')
		end--;
	size_t n = parse_stamp(s, (size_t)(end - s), &ev->t_ms);
	if (!n)
		return UFM_LINE_GARBAGE;
	p = s + n;
	/* [id] [code] */
	while (p < end && *p == ' ')
		p++;
	if (p >= end || *p != '[')
		return UFM_LINE_GARBAGE;
	p++;
	const char *q = p;
	while (q < end && *q >= '0' && *q <= '9')
		q++;
	if (q == p || q >= end || *q != ']' || q - p > 19)
		return UFM_LINE_GARBAGE;
	p = q + 1;
	while (p < end && *p == ' ')
		p++;
	if (p >= end || *p != '[')
		return UFM_LINE_GARBAGE;
	p++;
	int code = 0;
	q = p;
	while (q < end && *q >= '0' && *q <= '9' && q - p < 6)
		code = code * 10 + (*q++ - '0');
	if (q == p || q >= end || *q != ']')
		return UFM_LINE_GARBAGE;
	p = q + 1;
	ev->code = code;
	/* LEVEL, then the envelope's brackets up to "]: " (the message) */
	const char *msg = find(p, end, "]: ");
	const char *env_end;
	if (msg) {
		env_end = msg + 1;
		msg += 3;
	} else if (end - p >= 2 && end[-1] == ':' && end[-2] == ']') {
		env_end = end - 1;
		msg = end;
	} else {
		return UFM_LINE_GARBAGE;
	}
	int ci = ufm_code_index(code);
	/* the manual shapes may come under any code (an operator's action is logged as such) */
	int manual = 0;
	if (ci < 0 || code == 702) {
		if (ci < 0 && !memchr(msg, 'b', (size_t)(end - msg)))
			return UFM_LINE_OTHER;
		manual = manual_shape(msg, end);
		if (ci < 0 && !manual)
			return UFM_LINE_OTHER;
	}
	memset(&ev->self, 0, sizeof(ev->self));
	memset(&ev->a, 0, sizeof(ev->a));
	memset(&ev->b, 0, sizeof(ev->b));
	ev->cable[0] = ev->reason[0] = 0;
	/* the envelope's brackets: location and dev_id */
	for (const char *b = memchr(p, '[', (size_t)(env_end - p)); b;
	     b = b + 1 < env_end ? memchr(b + 1, '[', (size_t)(env_end - b - 1)) : NULL) {
		const char *c = memchr(b, ']', (size_t)(env_end - b + 1 > 0 ? env_end - b + 1 : 0));
		if (!c)
			break;
		const char *in = b + 1;
		const char *v;
		if ((size_t)(c - in) > 7 && !memcmp(in, "dev_id:", 7)) {
			v = in + 7;
			while (v < c && *v == ' ')
				v++;
			if (!parse_hex_guid(v, c, &ev->self))
				ev->self.guid[0] = 0;
		} else if (find(in, c, " / ")) {
			parse_location(in, c, &ev->self);
		}
		b = c;
	}
	if (manual) {
		ev->kind = manual < 0 ? UFM_EV_MANUAL_OFF : UFM_EV_MANUAL_ON;
		manual_port(msg, end, ev);
		return UFM_LINE_EVENT;
	}
	switch (code) {
	case 329: {
		ev->kind = UFM_EV_LINK_DOWN;
		const char *m = find(msg, end, "(");
		const char *r = m ? parse_paren_end(m, end, &ev->a) : NULL;
		if (r) {
			const char *dash = find(r, end < r + 8 ? end : r + 8, "- ");
			if (dash && !parse_paren_end(dash + 2, end, &ev->b))
				memset(&ev->b, 0, sizeof(ev->b));
		} else {
			memset(&ev->a, 0, sizeof(ev->a));
		}
		const char *sn = find(msg, end, "S/N:");
		if (sn) {
			sn += 4;
			while (sn < end && *sn == ' ')
				sn++;
			const char *t = sn;
			while (t < end && *t != ' ' && *t != ',' && *t != ';')
				t++;
			if (!copy_token(ev->cable, sizeof(ev->cable), sn, (size_t)(t - sn)))
				ev->cable[0] = 0;
		}
		break;
	}
	case 702: {
		ev->kind = UFM_EV_SM_UNHEALTHY;
		const char *pp = find(msg, end, "Port ");
		if (pp) {
			pp += 5;
			const char *t = pp;
			while (t < end && *t != ' ')
				t++;
			parse_name_port(pp, t, &ev->a);
		}
		const char *due = find(msg, end, "due to ");
		if (due) {
			due += 7;
			const char *t = due;
			while (t < end && *t != '.' && *t != ' ' && *t != ',')
				t++;
			if (!copy_token(ev->reason, sizeof(ev->reason), due, (size_t)(t - due)))
				ev->reason[0] = 0;
		}
		if (!strcasecmp(ev->reason, "MANUAL")) {
			ev->kind = UFM_EV_MANUAL_OFF;
			if (!ev->a.name[0])
				ev->a = ev->self;
		}
		break;
	}
	case 112:
		ev->kind = UFM_EV_DOWNED;
		break;
	default:
		ev->kind = UFM_EV_ERRORS;
		break;
	}
	return UFM_LINE_EVENT;
}

/* The reader. */

#define SRC_BUF (512u << 10)
#define SRC_LINE_MAX (64u << 10)

int ufm_src_open(struct ufm_src *s, const char *path, struct strbuf *err)
{
	struct stat st;
	memset(s, 0, sizeof(*s));
	s->path = path;
	s->fd = -1;
	/* a FIFO or device is refused before it is opened: opening one can block or act */
	if (stat(path, &st) < 0)
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return error_set(err, "cannot read '%s': it is %s, not a regular file", path,
				 file_kind(st.st_mode));
	s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (s->fd < 0)
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(s->fd);
		s->fd = -1;
		return error_set(err, "cannot read '%s': it is not a regular file", path);
	}
	s->buf = xmalloc(SRC_BUF);
	/* gzip's magic, whatever the name says */
	unsigned char magic[2];
	ssize_t m = pread(s->fd, magic, 2, 0);
	if (m == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		struct strbuf why = STRBUF_INIT;
		if (zlite_load(&why) < 0) {
			ufm_src_close(s);
			error_set(err, "cannot read '%s': gzip'd, and %s", path, why.buf);
			strbuf_release(&why);
			return -1;
		}
		z_stream *z = xcalloc(1, sizeof(*z));
		if (zlite_inflate_init2(z, 15 + 32) != Z_OK) {
			free(z);
			ufm_src_close(s);
			return error_set(err, "cannot read '%s': zlib could not start", path);
		}
		s->z = z;
		s->gz = true;
		s->zbuf = xmalloc(SRC_BUF / 2);
	}
	return 0;
}

void ufm_src_close(struct ufm_src *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->z) {
		zlite_inflate_end(s->z);
		free(s->z);
		s->z = NULL;
	}
	free(s->buf);
	free(s->zbuf);
	s->buf = s->zbuf = NULL;
}

static ssize_t raw_read(struct ufm_src *s, char *dst, size_t n, struct strbuf *err)
{
	for (;;) {
		ssize_t r = read(s->fd, dst, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			error_set(err, "cannot read '%s': %s", s->path, strerror(errno));
		return r;
	}
}

/* Append at most room bytes of file content at dst: the count, 0 at the end, -1 on error. */
static ssize_t fill(struct ufm_src *s, char *dst, size_t room, struct strbuf *err)
{
	if (!s->gz)
		return raw_read(s, dst, room, err);
	z_stream *z = s->z;
	if (s->gz_done)
		return 0;
	for (;;) {
		if (s->zpos == s->zend) {
			ssize_t r = raw_read(s, s->zbuf, SRC_BUF / 2, err);
			if (r < 0)
				return -1;
			if (r == 0) {
				/* input ended inside a member: a rotation caught mid-write */
				s->gz_truncated = s->in_member;
				return 0;
			}
			s->zpos = 0;
			s->zend = (size_t)r;
		}
		z->next_in = (const Bytef *)s->zbuf + s->zpos;
		z->avail_in = (uInt)(s->zend - s->zpos);
		z->next_out = (Bytef *)dst;
		z->avail_out = (uInt)room;
		s->in_member = true;
		int rc = zlite_inflate(z, Z_NO_FLUSH);
		s->zpos = s->zend - z->avail_in;
		size_t got = room - z->avail_out;
		if (rc == Z_STREAM_END) {
			s->in_member = false;
			/* concatenated members (cat a.gz b.gz) go on; anything else after the
			 * last member (padding) ends the file */
			unsigned char *nx = (unsigned char *)s->zbuf + s->zpos;
			if (s->zend - s->zpos >= 1 && (nx[0] != 0x1f ||
							 (s->zend - s->zpos >= 2 && nx[1] != 0x8b))) {
				s->zpos = s->zend;
				s->gz_done = true;
			}
			zlite_inflate_reset(z);
			if (s->gz_done)
				return (ssize_t)got;
			if (got)
				return (ssize_t)got;
			continue;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			error_set(err, "cannot read '%s': the gzip data is damaged (%s)", s->path,
				  z->msg ? z->msg : "inflate failed");
			return -1;
		}
		if (got)
			return (ssize_t)got;
	}
}

int ufm_src_next(struct ufm_src *s, const char **line, size_t *len, struct strbuf *err)
{
	for (;;) {
		char *nl = s->pos < s->end ? memchr(s->buf + s->pos, '\n', s->end - s->pos) : NULL;
		if (nl) {
			size_t start = s->pos;
			s->pos = (size_t)(nl - s->buf) + 1;
			if (s->skipping_long) {
				s->skipping_long = false;
				continue;
			}
			s->lines++;
			*line = s->buf + start;
			*len = (size_t)(nl - s->buf) - start;
			return 1;
		}
		if (s->eof) {
			if (s->pos < s->end && !s->skipping_long) {
				/* a last line without its newline: a log being written */
				s->cut_last = true;
				s->lines++;
			}
			s->pos = s->end;
			return 0;
		}
		/* keep the partial line, read more */
		if (s->pos) {
			memmove(s->buf, s->buf + s->pos, s->end - s->pos);
			s->end -= s->pos;
			s->pos = 0;
		}
		if (s->end >= SRC_LINE_MAX) {
			/* a line longer than any event: one garbage line, the rest skipped */
			s->lines++;
			*line = s->buf;
			*len = s->end;
			s->skipping_long = true;
			s->end = s->pos = 0;
			return 2;
		}
		ssize_t r = fill(s, s->buf + s->end, SRC_BUF - s->end, err);
		if (r < 0)
			return -1;
		if (r == 0)
			s->eof = true;
		s->end += (size_t)r;
	}
}
