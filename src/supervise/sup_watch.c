/* sup_watch.c: see sup_int.h */
#include "sup_int.h"

/* ---- the periodic watch: Slurm's view of the nodes, and vigil check on them ---- */

struct watch_arg {
	struct sup *s;
	bool checks;
};

/* In a forked child: one line per host, "HOST\tWHAT\tDETAIL" (WHAT: lost, healthy,
 * unhealthy, unknown, unreachable). */
static int watch_fn(void *arg, int out_fd)
{
	struct watch_arg *w = arg;
	struct sup *s = w->s;
	struct strlist hosts = STRLIST_INIT;
	sup_active_list(&s->m, &hosts);
	struct strbuf out = STRBUF_INIT, e = STRBUF_INIT, hl = STRBUF_INIT;
	for (size_t i = 0; i < hosts.nr; i++)
		strbuf_addf(&hl, "%s%s", i ? "," : "", hosts.items[i]);
	struct slurm_nodes nodes = { 0 };
	if (hosts.nr && slurm_nodes_list(&s->o->cmds, hl.buf, &nodes, &e) == 0) {
		for (size_t i = 0; i < nodes.nr; i++)
			if (nodes.items[i].flags & (NODE_NOT_RESPONDING | NODE_DOWN | NODE_FAIL))
				strbuf_addf(&out, "%s\tlost\tSlurm: %s\n", nodes.items[i].name,
					    nodes.items[i].state);
	}
	if (w->checks && hosts.nr) {
		struct strlist before = STRLIST_INIT;
		for (size_t i = 0; i < s->w.no_agent.nr; i++)
			strlist_add(&before, s->w.no_agent.items[i]);
		struct check_row *rows = sup_check_hosts(s->o, (const char *const *)hosts.items,
						     hosts.nr, &s->alloc, &s->w.no_agent);
		/* what this (forked) watcher learnt, for the loop to remember */
		for (size_t i = 0; i < s->w.no_agent.nr; i++)
			if (!strlist_has(&before, s->w.no_agent.items[i]))
				strbuf_addf(&out, "%s\tnoagent\t\n", s->w.no_agent.items[i]);
		strlist_release(&before);
		for (size_t i = 0; i < hosts.nr; i++) {
			strbuf_addf(&out, "%s\t%s\t", rows[i].host, sup_verdict_word(rows[i].verdict));
			for (const char *p = rows[i].reason; *p; p++)
				strbuf_addch(&out, *p == '\n' || *p == '\t' ? ' ' : *p);
			strbuf_addch(&out, '\n');
		}
		sup_check_rows_release(rows, hosts.nr);
	}
	(void)!write(out_fd, out.buf, out.len);
	slurm_nodes_release(&nodes);
	strlist_release(&hosts);
	strbuf_release(&out);
	strbuf_release(&e);
	strbuf_release(&hl);
	return 0;
}

static struct watch_arg watch_arg;

void sup_watch_start(struct sup *s, bool checks)
{
	child_init(&s->w.watch);
	watch_arg.s = s;
	watch_arg.checks = checks;
	s->w.watch.fn = watch_fn;
	s->w.watch.fn_arg = &watch_arg;
	s->w.watch.result_pipe = true;
	s->w.watch.result_cap = 1u << 20;
	s->w.watch.out_cap = 64 * 1024;
	s->w.watch.timeout_ms = (unsigned)(s->o->check_timeout_s * 1000) + 30000;
	struct strbuf e = STRBUF_INIT;
	s->w.watch_started = wall_seconds();
	if (child_start(&s->w.watch, &e) == 0)
		s->w.watch_live = true;
	else
		sup_journal_event(s, "watch_failed", NULL, e.buf);
	strbuf_release(&e);
}

void sup_watch_done(struct sup *s)
{
	s->w.watch_live = false;
	bool running = s->m.state == SUP_RUNNING || s->m.state == SUP_LAUNCHING;
	char *text = s->w.watch.result.buf;
	for (char *line = text; running && line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		if (t1 && t2) {
			*t1 = *t2 = '\0';
			const char *host = line, *what = t1 + 1, *detail = t2 + 1;
			if (!strcmp(what, "noagent") && !strlist_has(&s->w.no_agent, host))
				strlist_add(&s->w.no_agent, host);
			const struct sup_host *h = sup_machine_host(&s->m, host);
			if (h && h->role == SUP_HOST_ACTIVE) {
				struct watch_host *w = sup_wh_get(s, host);
				struct strbuf r = STRBUF_INIT;
				if (!strcmp(what, "lost")) {
					strbuf_addf(&r, "node lost: %s", detail);
					sup_say(s, "%s: %s", host, r.buf);
					sup_fault(s, SUP_EV_NODE_LOST, host, r.buf,
					      w->unreachable ? w->first_unreachable : 0);
				} else if (!strcmp(what, "unhealthy")) {
					strbuf_addf(&r, "turned sick during the run: %s", detail);
					sup_say(s, "%s: %s", host, r.buf);
					sup_fault(s, SUP_EV_HOST_SICK, host, r.buf, 0);
				} else if (!strcmp(what, "unreachable")) {
					if (!w->unreachable++)
						w->first_unreachable = s->w.watch_started;
					if (w->unreachable >= UNREACHABLE_LOST) {
						strbuf_addf(&r, "node lost: unreachable in %u checks "
							    "in a row: %s", w->unreachable, detail);
						sup_say(s, "%s: %s", host, r.buf);
						/* it stopped answering at the first check that
						 * got no answer */
						sup_fault(s, SUP_EV_NODE_LOST, host, r.buf,
						      w->first_unreachable);
					} else {
						sup_journal_event(s, "unreachable", host, detail);
					}
				} else {
					w->unreachable = 0;
				}
				strbuf_release(&r);
			}
		}
		running = s->m.state == SUP_RUNNING || s->m.state == SUP_LAUNCHING;
		line = nl ? nl + 1 : NULL;
	}
	child_finish(&s->w.watch);
	child_release(&s->w.watch);
}

void sup_watch_stop(struct sup *s)
{
	if (!s->w.watch_live)
		return;
	child_finish(&s->w.watch);
	child_release(&s->w.watch);
	s->w.watch_live = false;
}
