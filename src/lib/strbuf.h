/*
 * strbuf.h: growable, always NUL-terminated byte buffers with an optional size cap.
 *
 * Ownership: a strbuf owns buf. strbuf_release() frees it and leaves an empty, reusable buffer;
 * strbuf_detach() hands buf to the caller (free() it). STRBUF_INIT needs no release if never grown.
 *
 * The cap (curl's dynbuf idea): once set, an append that would pass it appends what fits, sets
 * sb->truncated and returns -1, so a runaway file or log cannot eat memory. cap 0 means no cap.
 */
#ifndef VIGIL_STRBUF_H
#define VIGIL_STRBUF_H

#include "util.h"
#include <stdarg.h>

struct strbuf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t cap;
	bool truncated;
};

extern char strbuf_empty[];
#define STRBUF_INIT { strbuf_empty, 0, 0, 0, false }

void strbuf_init(struct strbuf *sb, size_t cap);
void strbuf_release(struct strbuf *sb);
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_reset(struct strbuf *sb);
void strbuf_setlen(struct strbuf *sb, size_t len);
/* Make room for extra more bytes (ignores the cap; callers of add check it). */
void strbuf_grow(struct strbuf *sb, size_t extra);

int strbuf_add(struct strbuf *sb, const void *data, size_t len);
int strbuf_addstr(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, int c);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) PRINTF_LIKE(2, 3);
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);

/* Remove trailing whitespace. */
void strbuf_rtrim(struct strbuf *sb);
void strbuf_trim(struct strbuf *sb);

/*
 * Text from outside (file contents, host and device names, log lines) on its way to a person:
 * strbuf_add_clean() appends s with every control byte, DEL and invalid UTF-8 byte written as
 * "\xNN" (a tab as one space), so no escape sequence reaches a terminal; valid UTF-8 passes.
 * strbuf_add_excerpt() does the same to at most max bytes of s (cut on a character boundary) and
 * marks a cut with "...": the way to quote what a file held without echoing the file.
 */
void strbuf_add_clean(struct strbuf *sb, const char *s);
void strbuf_add_excerpt(struct strbuf *sb, const char *s, size_t max);
/*
 * Is cp a valid character that changes what a reader sees without showing itself (bidi controls
 * U+202A..U+202E and U+2066..U+2069, marks U+200E/U+200F/U+061C, zero-width and invisible
 * U+200B..U+200D, U+2060..U+2064, U+FEFF, U+00AD, U+180E, separators U+2028/U+2029, U+FFF9..
 * U+FFFB, tags U+E0000..U+E007F; the list in strbuf.c)? The cleaners spell these "<U+XXXX>"; the JSON writer "\uXXXX".
 * A "\u0000" parsed from JSON is held as the bytes C0 80 (never valid UTF-8, so a C string is not
 * cut there); the cleaners spell it "\x00" and the JSON writer "\u0000" again.
 */
bool unicode_invisible(unsigned cp);
/* Is every byte of s printable (ASCII, or valid UTF-8 without C1 controls)? */
bool str_is_clean(const char *s);

/*
 * Error helper for library code: sets *err (if non-NULL) to the message and returns -1.
 * The message replaces what was there: the innermost cause, said once.
 */
int error_set(struct strbuf *err, const char *fmt, ...) PRINTF_LIKE(2, 3);

#endif
