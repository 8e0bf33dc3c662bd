/* strindex.c: open addressing, linear probing, FNV-1a (see strindex.h). */
#include "strindex.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)(h ^ (h >> 29));
}

size_t strindex_find(const struct strindex *x, const char *s, const void *arr,
		     strindex_name_fn name_at)
{
	if (!x->cap)
		return (size_t)-1;
	size_t mask = x->cap - 1;
	for (size_t i = hash(s) & mask;; i = (i + 1) & mask) {
		uint32_t v = x->slot[i];
		if (!v)
			return (size_t)-1;
		if (!strcmp(name_at(arr, v - 1), s))
			return v - 1;
	}
}

static void put(uint32_t *slot, size_t cap, size_t h, uint32_t v)
{
	size_t mask = cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask)
		if (!slot[i]) {
			slot[i] = v;
			return;
		}
}

void strindex_add(struct strindex *x, const char *s, size_t pos, const void *arr,
		  strindex_name_fn name_at)
{
	if (pos >= UINT32_MAX - 1) { /* four billion names do not fit in memory first */
		fprintf(stderr, "vigil: too many names for an index\n");
		abort();
	}
	if ((x->nr + 1) * 2 > x->cap) { /* at most half full: probes stay short */
		size_t cap = x->cap ? x->cap * 2 : 64;
		uint32_t *slot = xcalloc(cap, sizeof(*slot));
		for (size_t i = 0; i < x->cap; i++)
			if (x->slot[i])
				put(slot, cap, hash(name_at(arr, x->slot[i] - 1)), x->slot[i]);
		free(x->slot);
		x->slot = slot;
		x->cap = cap;
	}
	put(x->slot, x->cap, hash(s), (uint32_t)pos + 1);
	x->nr++;
}

void strindex_release(struct strindex *x)
{
	free(x->slot);
	memset(x, 0, sizeof(*x));
}
