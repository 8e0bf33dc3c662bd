/* sup_watch.c: see sup_int.h */
#include "sup_int.h"
#include "../lib/strindex.h"

/* ---- the periodic watch: Slurm's view of the nodes, and vigil check on them ---- */

static const char *wh_name_at(const void *arr, size_t i)
{
	return ((const struct watch_host *)arr)[i].name;
}

/* Is host in a streak of checks that got no answer? (read only: a forked watcher's copy) */
static bool unreachable_streak(const struct sup *s, const char *host)
{
	size_t i = strindex_find(&s->w.wh_index, host, s->w.wh, wh_name_at);
	return i != (size_t)-1 && s->w.wh[i].unreachable > 0;
}

/* One line per host, "HOST\tWHAT\tDETAIL" (WHAT: lost, healthy, unhealthy, unknown,
 * unreachable; noagent: its agent keeps no fresh result; healthy only for a host in a streak of
 * unreachable checks, the one it ends). It reads the run but changes nothing
 * of it: the real world runs it in a forked child, and the loop learns what it found from the
 * lines alone (sup_watch_done). */
static int by_machine_order(const void *a, const void *b)
{
	const size_t *x = a, *y = b;
	return (*x > *y) - (*x < *y);
}

/*
 * The hosts a round asks about, in the machine's order (the order of sup_active_list, so
 * that a round's lines come in the same order whichever way they were chosen): every active
 * host; or, where the world names the hosts that may not be plainly fine (watch_hosts), those
 * of them that are active, with the active hosts the run tracks itself (a streak of
 * unreachable checks, which a healthy answer ends; no agent, asked afresh). Returns whether
 * the world named them (*cached_round: some host is asked for its agent's cached result).
 */
static bool watch_hosts(struct sup *s, struct strlist *hosts, bool *cached_round)
{
	struct strlist named = STRLIST_INIT;
	*cached_round = true;
	if (!s->W->watch_hosts || s->W->watch_hosts(s->W->ctx, &named) < 0) {
		strlist_release(&named);
		sup_active_list(&s->m, hosts);
		return false;
	}
	for (size_t i = 0; i < s->w.nr_wh; i++)
		if (s->w.wh[i].unreachable)
			strlist_add(&named, s->w.wh[i].name);
	size_t from_agent = named.nr;
	for (size_t i = 0; i < s->w.no_agent.nr; i++)
		strlist_add(&named, s->w.no_agent.items[i]);
	size_t *at = xcalloc(named.nr + 1, sizeof(*at)), nr = 0;
	struct strindex fresh = { 0 }; /* the no_agent hosts: asked afresh, not cached */
	for (size_t i = from_agent; i < named.nr; i++)
		if (strindex_find(&fresh, named.items[i], named.items, sup_name_at) == (size_t)-1)
			strindex_add(&fresh, named.items[i], i, named.items, sup_name_at);
	for (size_t i = 0; i < named.nr; i++) {
		const struct sup_host *h = sup_machine_host(&s->m, named.items[i]);
		if (h && h->role == SUP_HOST_ACTIVE)
			at[nr++] = (size_t)(h - s->m.hosts);
	}
	qsort(at, nr, sizeof(*at), by_machine_order);
	*cached_round = false;
	for (size_t i = 0; i < nr; i++) {
		if (i && at[i] == at[i - 1])
			continue;
		const char *name = s->m.hosts[at[i]].name;
		strlist_add(hosts, name);
		if (strindex_find(&fresh, name, named.items, sup_name_at) == (size_t)-1)
			*cached_round = true;
	}
	strindex_release(&fresh);
	free(at);
	strlist_release(&named);
	return true;
}

void sup_watch_text(struct sup *s, bool checks, struct strbuf *out)
{
	struct strlist hosts = STRLIST_INIT;
	bool cached_round;
	bool named = watch_hosts(s, &hosts, &cached_round);
	struct strbuf e = STRBUF_INIT, hl = STRBUF_INIT;
	for (size_t i = 0; i < hosts.nr; i++)
		strbuf_addf(&hl, "%s%s", i ? "," : "", hosts.items[i]);
	struct slurm_nodes nodes = { 0 };
	if (hosts.nr && s->W->nodes(s->W->ctx, s->o, hl.buf, &nodes, &e) == 0) {
		for (size_t i = 0; i < nodes.nr; i++)
			if (nodes.items[i].flags & (NODE_NOT_RESPONDING | NODE_DOWN | NODE_FAIL))
				strbuf_addf(out, "%s\tlost\tSlurm: %s\n", nodes.items[i].name,
					    nodes.items[i].state);
	}
	if (checks && named && !cached_round && s->o->agent_cache && s->m.nr_hosts) {
		/* a round over every active host asks most of them for their agents' cached
		 * results; asking none here, the world is still told of that round (its count of
		 * rounds stays the same), with no host in it */
		struct strbuf note = STRBUF_INIT;
		sup_check_rows_release(s->W->check(s->W->ctx, s->o, NULL, 0, &s->alloc, true,
						   &note), 0);
		strbuf_release(&note);
	}
	if (checks && (hosts.nr || named)) {
		struct strlist no_agent = STRLIST_INIT;
		for (size_t i = 0; i < s->w.no_agent.nr; i++)
			strlist_add(&no_agent, s->w.no_agent.items[i]);
		struct strbuf note = STRBUF_INIT;
		struct check_row *rows = sup_check_hosts(s, (const char *const *)hosts.items,
							 hosts.nr, &s->alloc, &no_agent, &note);
		if (note.len) { /* for the loop's journal: the watcher may be another process */
			strbuf_addstr(out, "-\tnote\t");
			for (const char *p = note.buf; *p; p++)
				strbuf_addch(out, *p == '\n' || *p == '\t' ? ' ' : *p);
			strbuf_addch(out, '\n');
		}
		strbuf_release(&note);
		/* what this watcher learnt, for the loop to remember */
		for (size_t i = s->w.no_agent.nr; i < no_agent.nr; i++)
			strbuf_addf(out, "%s\tnoagent\t\n", no_agent.items[i]);
		strlist_release(&no_agent);
		for (size_t i = 0; i < hosts.nr; i++) {
			/* a healthy answer only ends a host's streak of unreachable checks
			 * (sup_watch_done): for a host with none it says nothing, and is not
			 * written, so a round over N healthy hosts is not N lines to write, pass
			 * through the watcher's pipe and parse back (vigil sim: 30 % of a run) */
			if (rows[i].verdict == FLEET_HEALTHY && !unreachable_streak(s, rows[i].host))
				continue;
			strbuf_addf(out, "%s\t%s\t", rows[i].host, sup_verdict_word(rows[i].verdict));
			for (const char *p = rows[i].reason; *p; p++)
				strbuf_addch(out, *p == '\n' || *p == '\t' ? ' ' : *p);
			strbuf_addch(out, '\n');
		}
		sup_check_rows_release(rows, hosts.nr);
	}
	slurm_nodes_release(&nodes);
	strlist_release(&hosts);
	strbuf_release(&e);
	strbuf_release(&hl);
}

void sup_watch_start(struct sup *s, bool checks)
{
	struct strbuf e = STRBUF_INIT;
	s->w.watch_started = sup_wall(s);
	if (s->W->watch_start(s->W->ctx, s, checks, &e) == 0)
		s->w.watch_live = true;
	else
		sup_journal_event(s, "watch_failed", NULL, e.buf);
	strbuf_release(&e);
}

void sup_watch_done(struct sup *s, const char *result)
{
	s->w.watch_live = false;
	bool running = s->m.state == SUP_RUNNING || s->m.state == SUP_LAUNCHING;
	char *text = xstrdup(result ? result : "");
	struct strindex known = { 0 }; /* s->w.no_agent by name: a watch is O(hosts) */
	for (size_t i = 0; i < s->w.no_agent.nr; i++)
		if (strindex_find(&known, s->w.no_agent.items[i], s->w.no_agent.items,
				  sup_name_at) == (size_t)-1)
			strindex_add(&known, s->w.no_agent.items[i], i, s->w.no_agent.items,
				     sup_name_at);
	for (char *line = text; running && line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		if (t1 && t2) {
			*t1 = *t2 = '\0';
			const char *host = line, *what = t1 + 1, *detail = t2 + 1;
			if (!strcmp(what, "note"))
				sup_journal_event(s, "check_round", NULL, detail);
			if (!strcmp(what, "noagent") &&
			    strindex_find(&known, host, s->w.no_agent.items, sup_name_at) ==
				    (size_t)-1) {
				strlist_add(&s->w.no_agent, host);
				strindex_add(&known, host, s->w.no_agent.nr - 1,
					     s->w.no_agent.items, sup_name_at);
			}
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
	free(text);
	strindex_release(&known);
	s->W->watch_stop(s->W->ctx, s);
}

void sup_watch_stop(struct sup *s)
{
	if (!s->w.watch_live)
		return;
	s->W->watch_stop(s->W->ctx, s);
	s->w.watch_live = false;
}
