/* strlist.c: growable list of owned strings (see strlist.h). */
#include "strlist.h"

void strlist_add_nodup(struct strlist *l, char *s)
{
	/* one more slot: items stays NULL-terminated, usable as an argv or environment */
	ALLOC_GROW(l->items, l->nr + 2, l->alloc);
	l->items[l->nr++] = s;
	l->items[l->nr] = NULL;
}

void strlist_add(struct strlist *l, const char *s)
{
	strlist_add_nodup(l, xstrdup(s));
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void strlist_sort(struct strlist *l)
{
	if (l->nr > 1)
		qsort(l->items, l->nr, sizeof(char *), cmp);
}

bool strlist_has(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->nr; i++)
		if (!strcmp(l->items[i], s))
			return true;
	return false;
}

void strlist_split(struct strlist *l, const char *s, const char *seps)
{
	while (*s) {
		size_t n = strcspn(s, seps);
		if (n)
			strlist_add_nodup(l, xstrndup(s, n));
		s += n;
		if (*s)
			s++;
	}
}

void strlist_release(struct strlist *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->nr = l->alloc = 0;
}
