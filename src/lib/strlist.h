/*
 * strlist.h: a growable list of owned strings.
 * Once anything is added, items[nr] is NULL (an argv or environment as it is).
 * Ownership: the list owns its strings; strlist_release() frees them and the array.
 */
#ifndef VIGIL_STRLIST_H
#define VIGIL_STRLIST_H

#include "util.h"

struct strlist {
	char **items;
	size_t nr, alloc;
};

#define STRLIST_INIT { NULL, 0, 0 }

void strlist_add(struct strlist *l, const char *s);
void strlist_add_nodup(struct strlist *l, char *s);
void strlist_sort(struct strlist *l);
bool strlist_has(const struct strlist *l, const char *s);
/* Split s on any of seps, skipping empty parts, appending to l. */
void strlist_split(struct strlist *l, const char *s, const char *seps);
void strlist_release(struct strlist *l);

#endif
