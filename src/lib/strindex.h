/*
 * strindex.h: a hash index from strings to positions in the caller's own array (excluded hosts
 * by name): lookups in O(1) where a scan of the array made a journal of N distinct hosts cost
 * O(N^2) to read (19 s for 100,000 hosts, measured). The index holds positions, not strings;
 * the caller's name_at() gives position i's string, so a realloc of the array changes nothing.
 */
#ifndef VIGIL_LIB_STRINDEX_H
#define VIGIL_LIB_STRINDEX_H

#include <stddef.h>
#include <stdint.h>

struct strindex {
	uint32_t *slot; /* position + 1, 0 empty */
	size_t cap, nr; /* cap a power of two (or 0) */
};

typedef const char *(*strindex_name_fn)(const void *arr, size_t i);

/* The position of s, or (size_t)-1 when absent. */
size_t strindex_find(const struct strindex *x, const char *s, const void *arr,
		     strindex_name_fn name_at);
/* Record that arr's position pos holds s (absent before: the caller found it so). */
void strindex_add(struct strindex *x, const char *s, size_t pos, const void *arr,
		  strindex_name_fn name_at);
void strindex_release(struct strindex *x);

#endif
