/*
 * util.h: allocation wrappers and small helpers shared by every layer.
 *
 * The x* allocators abort the program on out-of-memory (the one place library code may end the
 * process: there is nothing sensible left to do). Everything else returns errors to the caller.
 */
#ifndef VIGIL_UTIL_H
#define VIGIL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UNUSED(x) ((void)(x))

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Grow *arr (of *alloc elements of size elem) so that it can hold at least nr elements. */
void *grow_array(void *arr, size_t elem, size_t nr, size_t *alloc);
#define ALLOC_GROW(arr, nr, alloc) ((arr) = grow_array((arr), sizeof(*(arr)), (nr), &(alloc)))

/* Copy src into dst of size n, always terminated; returns strlen(src). */
size_t strlcpy_v(char *dst, const char *src, size_t n);

/* s, or dflt where s is NULL (a JSON member that is not there). */
const char *str_or(const char *s, const char *dflt);
bool starts_with(const char *s, const char *prefix);
bool skip_prefix(const char *s, const char *prefix, const char **rest);
bool ends_with(const char *s, const char *suffix);

/* Parse a whole decimal/0x number; false on junk, overflow or empty. */
bool parse_u64(const char *s, uint64_t *out);
bool parse_i64(const char *s, int64_t *out);
bool parse_double(const char *s, double *out); /* decimal only: no hex float, inf or nan */
/* Parse "true/false/yes/no/on/off/1/0"; -1 if not a boolean. */
int parse_bool(const char *s);

/*
 * The directory of the running program (/proc/self/exe without its last name) into buf[size]:
 * true, or false when the link cannot be read or has no '/'. The program itself, not a host
 * file: no fsroot mapping applies.
 */
bool exe_dir(char *buf, size_t size);

/* Monotonic and wall clocks in milliseconds / microseconds. */
uint64_t mono_ms(void);
uint64_t mono_us(void);
double wall_seconds(void);

#include "banned.h"

#endif
