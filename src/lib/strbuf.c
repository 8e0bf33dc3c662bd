/* strbuf.c: growable byte buffers with a size cap (see strbuf.h). */
#include "strbuf.h"

char strbuf_empty[1];

void strbuf_init(struct strbuf *sb, size_t cap)
{
	sb->buf = strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->cap = cap;
	sb->truncated = false;
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	size_t cap = sb->cap;
	strbuf_init(sb, cap);
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *r = sb->alloc ? sb->buf : xstrdup("");
	if (len)
		*len = sb->len;
	size_t cap = sb->cap;
	strbuf_init(sb, cap);
	return r;
}

void strbuf_reset(struct strbuf *sb)
{
	strbuf_setlen(sb, 0);
	sb->truncated = false;
}

void strbuf_setlen(struct strbuf *sb, size_t len)
{
	if (len > sb->len)
		len = sb->len;
	sb->len = len;
	if (sb->alloc)
		sb->buf[len] = '\0';
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	if (sb->len + extra + 1 <= sb->alloc)
		return;
	size_t want = sb->len + extra + 1;
	size_t n = sb->alloc ? sb->alloc : 64;
	while (n < want)
		n = n * 2;
	if (!sb->alloc) {
		sb->buf = xmalloc(n);
		sb->buf[0] = '\0';
	} else {
		sb->buf = xrealloc(sb->buf, n);
	}
	sb->alloc = n;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	int ret = 0;
	if (sb->cap && sb->len + len > sb->cap) {
		len = sb->cap > sb->len ? sb->cap - sb->len : 0;
		sb->truncated = true;
		ret = -1;
	}
	if (!len) {
		if (!sb->alloc)
			strbuf_grow(sb, 0);
		return ret;
	}
	strbuf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return ret;
}

int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;
	return strbuf_add(sb, &ch, 1);
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	char small[256];
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(small, sizeof(small), fmt, cp);
	va_end(cp);
	if (n < 0)
		return -1;
	if ((size_t)n < sizeof(small))
		return strbuf_add(sb, small, (size_t)n);
	char *big = xmalloc((size_t)n + 1);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	int r = strbuf_add(sb, big, (size_t)n);
	free(big);
	return r;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return r;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

void strbuf_rtrim(struct strbuf *sb)
{
	while (sb->len && is_space(sb->buf[sb->len - 1]))
		sb->len--;
	if (sb->alloc)
		sb->buf[sb->len] = '\0';
}

void strbuf_trim(struct strbuf *sb)
{
	strbuf_rtrim(sb);
	size_t i = 0;
	while (i < sb->len && is_space(sb->buf[i]))
		i++;
	if (i) {
		memmove(sb->buf, sb->buf + i, sb->len - i);
		sb->len -= i;
		sb->buf[sb->len] = '\0';
	}
}

/* Length of the valid, printable UTF-8 sequence at s (0 if it is not one). */
/*
 * Valid characters that still change what a reader sees without showing themselves: the bidi
 * embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069: a name shown reversed),
 * the marks U+200E/U+200F and U+061C, the zero-width U+200B..U+200D, U+2060..U+2064, U+FEFF,
 * U+00AD and U+180E (a name that looks like another), the line and paragraph separators
 * U+2028/U+2029 (a line that looks like two), the interlinear annotations U+FFF9..U+FFFB and
 * the tag characters U+E0000..U+E007F (invisible ASCII). They are spelled "<U+XXXX>" like a
 * control byte's "\xNN". Combining marks and other visible characters pass.
 */
bool unicode_invisible(unsigned cp)
{
	return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029 || cp == 0x061c ||
	       cp == 0xfeff || (cp >= 0x2060 && cp <= 0x2064) || cp == 0x00ad || cp == 0x180e ||
	       (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe007f);
}

static size_t utf8_len_cp(const unsigned char *s, unsigned *cpout)
{
	unsigned c = s[0];
	size_t n;
	unsigned cp;

	if (c >= 0x20 && c < 0x7f) {
		if (cpout)
			*cpout = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF, and the C1 controls (U+0080..U+009F) */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
		return 0;
	if (cpout)
		*cpout = cp;
	return n;
}

static size_t utf8_len(const unsigned char *s)
{
	unsigned cp = 0;
	size_t n = utf8_len_cp(s, &cp);
	return n && unicode_invisible(cp) ? 0 : n;
}

static void add_clean(struct strbuf *sb, const char *s, size_t max, bool mark)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t used = 0;

	while (*p) {
		unsigned cp = 0;
		size_t n = utf8_len_cp(p, &cp);
		bool invisible = n && unicode_invisible(cp);
		/* C0 80 is how the JSON parser keeps a "\u0000" without ending the C string */
		bool nul = !n && p[0] == 0xc0 && p[1] == 0x80;
		/* an escape is written whole or not at all, so a cut never leaves half of one */
		size_t width = invisible ? (cp > 0xffff ? 9 : 8) : n ? n : (*p == '\t' ? 1 : 4);
		if (used + width > max) {
			if (mark)
				strbuf_addstr(sb, "...");
			return;
		}
		if (nul) {
			strbuf_addstr(sb, "\\x00");
			used += width;
			p += 2;
			continue;
		}
		if (invisible)
			strbuf_addf(sb, "<U+%04X>", cp);
		else if (n)
			strbuf_add(sb, p, n);
		else if (*p == '\t')
			strbuf_addch(sb, ' ');
		else
			strbuf_addf(sb, "\\x%02x", *p);
		used += width;
		p += n ? n : 1;
	}
}

void strbuf_add_clean(struct strbuf *sb, const char *s)
{
	add_clean(sb, s ? s : "", SIZE_MAX, false);
}

void strbuf_add_excerpt(struct strbuf *sb, const char *s, size_t max)
{
	add_clean(sb, s ? s : "", max, true);
}

bool str_is_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		size_t n = utf8_len(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

int error_set(struct strbuf *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		strbuf_reset(err);
		va_start(ap, fmt);
		strbuf_vaddf(err, fmt, ap);
		va_end(ap);
	}
	return -1;
}
