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
 * Error helper for library code: sets *err (if non-NULL) to the message and returns -1.
 * The message replaces what was there: the innermost cause, said once.
 */
int error_set(struct strbuf *err, const char *fmt, ...) PRINTF_LIKE(2, 3);

#endif
