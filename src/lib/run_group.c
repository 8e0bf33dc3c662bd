/* run_group.c: several children in one poll loop under a concurrency limit (see run_group.h). */
#include "run_group.h"

#include <errno.h>

void run_group_init(struct run_group *g, unsigned parallel)
{
	memset(g, 0, sizeof(*g));
	g->parallel = parallel;
}

void run_group_release(struct run_group *g)
{
	free(g->items);
	memset(g, 0, sizeof(*g));
}

void run_group_add(struct run_group *g, struct child *c)
{
	ALLOC_GROW(g->items, g->nr + 1, g->alloc);
	g->items[g->nr++] = c;
}

void run_group_run(struct run_group *g,
		   void (*on_done)(struct child *c, const char *start_error, void *arg), void *arg)
{
	size_t limit = g->parallel && g->parallel < g->nr ? g->parallel : g->nr;
	struct child **act = xcalloc(limit ? limit : 1, sizeof(*act));
	struct pollfd *pfd = xcalloc((limit ? limit : 1) * CHILD_POLLFDS, sizeof(*pfd));
	size_t *off = xcalloc(limit ? limit : 1, sizeof(*off));
	size_t *cnt = xcalloc(limit ? limit : 1, sizeof(*cnt));
	struct strbuf err = STRBUF_INIT;
	size_t next = 0, active = 0;

	for (;;) {
		while (next < g->nr && active < limit) {
			struct child *c = g->items[next++];
			strbuf_reset(&err);
			if (child_start(c, &err) < 0) {
				if (on_done)
					on_done(c, err.len ? err.buf : "cannot start", arg);
				continue;
			}
			act[active++] = c;
		}
		if (!active)
			break;
		size_t n = 0;
		int wait = -1;
		for (size_t j = 0; j < active; j++) {
			off[j] = n;
			cnt[j] = child_pollfds(act[j], pfd + n);
			n += cnt[j];
			int w = child_wait_ms(act[j]);
			if (w >= 0 && (wait < 0 || w < wait))
				wait = w;
		}
		int r = poll(pfd, (nfds_t)n, wait);
		if (r <= 0)
			for (size_t k = 0; k < n; k++)
				pfd[k].revents = 0;
		/* Handle every child (a deadline may have passed without any fd ready), then drop
		 * the finished ones, keeping the others in start order. */
		size_t kept = 0;
		for (size_t j = 0; j < active; j++) {
			struct child *c = act[j];
			if (child_handle(c, pfd + off[j], cnt[j])) {
				child_finish(c);
				if (on_done)
					on_done(c, NULL, arg);
			} else {
				act[kept++] = c;
			}
		}
		active = kept;
	}
	strbuf_release(&err);
	free(act);
	free(pfd);
	free(off);
	free(cnt);
}
