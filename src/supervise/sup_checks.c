/* sup_checks.c: see sup_int.h */
#include "sup_int.h"
#include "../lib/strindex.h"

/* ---- fleet fan-out: vigil check on hosts (preflight, after a stop, periodically) ---- */


void sup_check_rows_release(struct check_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(rows[i].host);
		free(rows[i].reason);
	}
	free(rows);
}

/*
 * What a node's report says beyond its verdict, from one parse: its non-ok findings (the
 * preflight's preference), and whether it is only the "agent" check of a --cached answer (the
 * agent keeps no fresh result: the node has no agent running, ask it afresh).
 */
static void report_facts(const char *report_json, unsigned *findings, bool *agent_only)
{
	*findings = 0;
	*agent_only = false;
	if (!report_json)
		return;
	struct json_value *v = json_parse(report_json, strlen(report_json), NULL);
	const struct json_value *checks = v ? json_get(v, "checks") : NULL;
	for (size_t i = 0; checks && checks->type == JSON_ARRAY && i < checks->nr; i++) {
		const struct json_value *f = json_get(checks->items[i], "findings");
		for (size_t k = 0; f && f->type == JSON_ARRAY && k < f->nr; k++) {
			const char *st = json_get_string(f->items[k], "status");
			*findings += st && strcmp(st, "ok") != 0 && strcmp(st, "skipped") != 0;
		}
	}
	if (checks && checks->type == JSON_ARRAY && checks->nr == 1) {
		const char *name = json_get_string(checks->items[0], "name");
		*agent_only = name && !strcmp(name, "agent");
	}
	json_free(v);
}

static struct check_row *fleet_once(const struct sup_options *o, const char *const *hosts,
				    size_t n, const struct slurm_nodes *alloc, bool cached,
				    struct strbuf *note);

struct check_row *sup_fleet_check(void *ctx, const struct sup_options *o,
				  const char *const *hosts, size_t n,
				  const struct slurm_nodes *alloc, bool cached, struct strbuf *note)
{
	(void)ctx;
	return fleet_once(o, hosts, n, alloc, cached, note);
}

/*
 * vigil check on hosts: the agent's cached result where an agent runs (run.agent-cache),
 * a fresh check elsewhere. Hosts found without an agent are added to no_agent (may be NULL)
 * and asked afresh from then on. Rows in the order of hosts. O(n) but for the sort of
 * no_agent's lookups: hosts are found by an index, never by a scan per host.
 */
struct check_row *sup_check_hosts(struct sup *s, const char *const *hosts, size_t n,
				  const struct slurm_nodes *alloc, struct strlist *no_agent,
				  struct strbuf *note)
{
	const struct sup_world *W = s->W;
	if (!s->o->agent_cache)
		return W->check(W->ctx, s->o, hosts, n, alloc, false, note);
	const char **ask = xcalloc(n + 1, sizeof(*ask)), **fresh = xcalloc(n + 1, sizeof(*fresh));
	size_t na = 0, nf = 0;
	struct strindex known = { 0 };
	if (no_agent)
		for (size_t i = 0; i < no_agent->nr; i++)
			if (strindex_find(&known, no_agent->items[i], no_agent->items, sup_name_at) ==
			    (size_t)-1)
				strindex_add(&known, no_agent->items[i], i, no_agent->items,
					     sup_name_at);
	for (size_t i = 0; i < n; i++) {
		if (no_agent && strindex_find(&known, hosts[i], no_agent->items, sup_name_at) !=
					(size_t)-1)
			fresh[nf++] = hosts[i];
		else
			ask[na++] = hosts[i];
	}
	strindex_release(&known);
	struct check_row *rows = xcalloc(n ? n : 1, sizeof(*rows));
	struct check_row *c = na ? W->check(W->ctx, s->o, ask, na, alloc, true, note) : NULL;
	/* where each host's answer is: 1 + its row in c (cached) or -(1 + its row in f) */
	struct strindex at = { 0 };
	long *from = xcalloc(n + 1, sizeof(*from));
	for (size_t i = 0; i < n; i++)
		if (strindex_find(&at, hosts[i], hosts, sup_name_at) == (size_t)-1)
			strindex_add(&at, hosts[i], i, hosts, sup_name_at);
	for (size_t i = 0; i < na; i++) {
		size_t h = strindex_find(&at, ask[i], hosts, sup_name_at);
		if (c[i].no_cache) {
			fresh[nf++] = ask[i];
			if (no_agent)
				strlist_add(no_agent, ask[i]);
		} else if (h != (size_t)-1) {
			from[h] = (long)i + 1;
		}
	}
	struct check_row *f = nf ? W->check(W->ctx, s->o, fresh, nf, alloc, false, note) : NULL;
	for (size_t i = 0; i < nf; i++) {
		size_t h = strindex_find(&at, fresh[i], hosts, sup_name_at);
		if (h != (size_t)-1)
			from[h] = -(long)i - 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!from[i]) { /* a host named twice: answered once, in its first row */
			rows[i].host = xstrdup(hosts[i]);
			rows[i].verdict = FLEET_UNREACHABLE;
			rows[i].reason = xstrdup("no answer");
			continue;
		}
		struct check_row *src = from[i] > 0 ? &c[from[i] - 1] : &f[-from[i] - 1];
		rows[i] = *src;
		src->host = src->reason = NULL; /* moved */
	}
	strindex_release(&at);
	free(from);
	sup_check_rows_release(c, na);
	sup_check_rows_release(f, nf);
	free(ask);
	free(fresh);
	return rows;
}

/* vigil check --json on each host through srun --overlap (inside the allocation), in
 * parallel, each with its deadline. Returns rows in the order of hosts. */
static struct check_row *fleet_once(const struct sup_options *o, const char *const *hosts,
				    size_t n, const struct slurm_nodes *alloc, bool cached,
				    struct strbuf *note)
{
	struct check_row *rows = xcalloc(n ? n : 1, sizeof(*rows));
	struct slurm_nodes list = { 0 };
	/* names to positions: lookups by index, not a scan of every row for every host
	 * (O(n^2): 4,096 nodes made 16 million string compares a round) */
	struct strindex by_alloc = { 0 }, by_row = { 0 };
	for (size_t k = 0; alloc && k < alloc->nr; k++)
		if (alloc->items[k].name &&
		    strindex_find(&by_alloc, alloc->items[k].name, alloc, fleet_node_name) == (size_t)-1)
			strindex_add(&by_alloc, alloc->items[k].name, k, alloc, fleet_node_name);
	for (size_t i = 0; i < n; i++) {
		/* the state as known at the start; the fleet decides what is runnable */
		size_t at = alloc ? strindex_find(&by_alloc, hosts[i], alloc, fleet_node_name)
				  : (size_t)-1;
		const struct slurm_node *known = at != (size_t)-1 ? &alloc->items[at] : NULL;
		ALLOC_GROW(list.items, list.nr + 1, list.alloc);
		struct slurm_node *nd = &list.items[list.nr++];
		memset(nd, 0, sizeof(*nd));
		nd->name = xstrdup(hosts[i]);
		/* inside our own allocation a node we were given is runnable whatever its drain
		 * flag says (a node drained while we hold it still runs our steps) */
		nd->state = xstrdup("ALLOCATED");
		nd->flags = NODE_ALLOCATED;
		nd->reason = xstrdup("");
		nd->partitions = xstrdup("");
		nd->addr = xstrdup(known && known->addr ? known->addr : "");
	}
	struct fleet f = { 0 };
	fleet_rows(&f, &list, NULL);
	struct strlist base = STRLIST_INIT, remote = STRLIST_INIT;
	struct strbuf tmp = STRBUF_INIT;
	strlist_add(&base, o->cmds.srun ? o->cmds.srun : "srun");
	strlist_add(&base, "--nodes=1");
	strlist_add(&base, "--ntasks=1");
	strlist_add(&base, "--overlap"); /* beside the trainer's step, which holds the CPUs */
	strbuf_addf(&tmp, "--jobid=%s", o->job_id);
	strlist_add(&base, tmp.buf);
	strlist_add(&base, "--job-name=vigil-check");
	strlist_add(&base, "--quiet");
	for (size_t i = 0; i < o->nr_srun_extra; i++)
		strlist_add(&base, o->srun_extra[i]);
	strlist_add(&remote, o->vigil_remote);
	strlist_add(&remote, "check");
	strlist_add(&remote, "--json");
	if (cached)
		strlist_add(&remote, "--cached");
	for (size_t i = 0; i < o->nr_check_args; i++)
		strlist_add(&remote, o->check_args[i]);
	struct fleet_plan plan = {
		.srun_args = (const char *const *)base.items,
		.nr_srun_args = base.nr,
		.remote = (const char *const *)remote.items,
		.nr_remote = remote.nr,
		.timeout_ms = (unsigned)(o->check_timeout_s * 1000),
		.parallel = 64,
		/* one step over the hosts (src/slurm/fleet_step.h); inside the allocation a
		 * step that a dead node aborts leaves the job, and the hosts that did not
		 * answer are asked again one step each at once */
		.one_step = o->fleet_one_step,
	};
	fleet_run(&f, &plan);
	if (f.note && note)
		strbuf_addf(note, "%s%s", note->len ? "; " : "", f.note);
	for (size_t k = 0; k < f.nr; k++)
		if (strindex_find(&by_row, f.rows[k].node.name, &f, fleet_row_name) == (size_t)-1)
			strindex_add(&by_row, f.rows[k].node.name, k, &f, fleet_row_name);
	for (size_t i = 0; i < n; i++) {
		rows[i].host = xstrdup(hosts[i]);
		rows[i].verdict = FLEET_UNREACHABLE;
		size_t k = strindex_find(&by_row, hosts[i], &f, fleet_row_name);
		if (k == (size_t)-1) {
			rows[i].reason = xstrdup("no answer");
			continue;
		}
		rows[i].verdict = f.rows[k].verdict;
		rows[i].reason = xstrdup(f.rows[k].reason ? f.rows[k].reason : "");
		bool agent_only;
		report_facts(f.rows[k].report_json, &rows[i].findings, &agent_only);
		/* no fresh cached result; or the node's vigil refused --cached (exit 2, usage:
		 * fleet.command adds --only or --root, which an agent's cache cannot answer) */
		rows[i].no_cache = cached && ((f.rows[k].verdict == FLEET_UNKNOWN && agent_only) ||
					      (f.rows[k].verdict == FLEET_UNREACHABLE &&
					       f.rows[k].exit_code == EXIT_CODE_USAGE));
	}
	strindex_release(&by_alloc);
	strindex_release(&by_row);
	fleet_release(&f);
	slurm_nodes_release(&list);
	strlist_release(&base);
	strlist_release(&remote);
	strbuf_release(&tmp);
	return rows;
}

const char *sup_verdict_word(enum fleet_verdict v)
{
	static const char *const w[] = { "healthy", "unhealthy", "unknown", "unreachable" };
	return v <= FLEET_UNREACHABLE ? w[v] : "?";
}

/*
 * A round's verdicts in words, for the journal and the user: every host by name while the
 * round is small; past ROUND_NAMED_MAX hosts, the healthy ones counted and only the others
 * named ("12499 of 12500 healthy; n17 unhealthy (...)"): a line naming each of 12,500 hosts
 * was 200 KB to write, clean and journal after every stop (vigil sim at 100k GPUs: 40 % of
 * its run), and no one reads it. extra(c) adds what follows a host's verdict (or nothing).
 */
#define ROUND_NAMED_MAX 64
static void round_detail(const struct check_row *rows, size_t n, struct strbuf *detail,
			 void (*extra)(const struct check_row *c, struct strbuf *out))
{
	bool all = n <= ROUND_NAMED_MAX;
	size_t healthy = 0;
	for (size_t i = 0; i < n; i++)
		healthy += rows[i].verdict == FLEET_HEALTHY;
	if (!all)
		strbuf_addf(detail, "%zu of %zu healthy", healthy, n);
	for (size_t i = 0; i < n; i++) {
		const struct check_row *c = &rows[i];
		if (!all && c->verdict == FLEET_HEALTHY)
			continue;
		strbuf_addf(detail, "%s%s %s", detail->len ? "; " : "", c->host,
			    sup_verdict_word(c->verdict));
		extra(c, detail);
	}
}

static void preflight_extra(const struct check_row *c, struct strbuf *out)
{
	if (c->verdict == FLEET_UNHEALTHY)
		strbuf_addf(out, " (%s)", c->reason);
	else if (c->verdict != FLEET_HEALTHY)
		/* unknown or unreachable: not used this time, not drained without evidence */
		strbuf_addf(out, " (%s: not used)", c->reason);
}

static void checks_extra(const struct check_row *c, struct strbuf *out)
{
	if (c->verdict != FLEET_HEALTHY)
		strbuf_addf(out, " (%s)", c->reason);
}

/* ---- preflight ---- */

static int cmp_findings(const void *a, const void *b)
{
	const struct check_row *x = *(const struct check_row *const *)a;
	const struct check_row *y = *(const struct check_row *const *)b;
	return (x->findings > y->findings) - (x->findings < y->findings);
}

void sup_do_preflight(struct sup *s)
{
	struct strlist hosts = STRLIST_INIT;
	for (size_t i = 0; i < s->alloc.nr; i++) {
		const struct sup_host *h = sup_machine_host(&s->m, s->alloc.items[i].name);
		if (h && h->role == SUP_HOST_EXCLUDED)
			continue; /* excluded by an attempt before a restart of vigil */
		strlist_add(&hosts, s->alloc.items[i].name);
	}
	sup_say(s, "preflight: vigil check on %zu nodes", hosts.nr);
	struct strbuf note = STRBUF_INIT;
	struct check_row *rows = sup_check_hosts(s, (const char *const *)hosts.items, hosts.nr,
					     &s->alloc, &s->w.no_agent, &note);
	if (note.len)
		sup_journal_event(s, "check_round", NULL, note.buf);
	strbuf_release(&note);
	struct check_row **ok = xcalloc(hosts.nr + 1, sizeof(*ok));
	size_t nr_ok = 0, nr_sick = 0;
	const char **sick = xcalloc(hosts.nr + 1, sizeof(*sick));
	const char **why = xcalloc(hosts.nr + 1, sizeof(*why));
	struct strbuf detail = STRBUF_INIT, r = STRBUF_INIT;
	struct strlist reasons = STRLIST_INIT;
	for (size_t i = 0; i < hosts.nr; i++) {
		struct check_row *c = &rows[i];
		if (c->verdict == FLEET_HEALTHY) {
			ok[nr_ok++] = c;
		} else if (c->verdict == FLEET_UNHEALTHY) {
			strbuf_reset(&r);
			strbuf_addf(&r, "preflight: %s", c->reason);
			strlist_add(&reasons, r.buf);
			sick[nr_sick] = c->host;
			why[nr_sick++] = reasons.items[reasons.nr - 1];
		}
	}
	round_detail(rows, hosts.nr, &detail, preflight_extra);
	qsort(ok, nr_ok, sizeof(*ok), cmp_findings);
	const char **best = xcalloc(nr_ok + 1, sizeof(*best));
	for (size_t i = 0; i < nr_ok; i++)
		best[i] = ok[i]->host;
	sup_journal_event(s, "preflight", NULL, detail.buf);
	sup_say(s, "preflight: %s", detail.buf);
	unsigned need = s->m.nodes;
	struct sup_event e = {
		.kind = nr_ok >= need ? SUP_EV_PREFLIGHT_OK : SUP_EV_PREFLIGHT_SHORT,
		.hosts = best,
		.nr_hosts = nr_ok,
		.sick = sick,
		.sick_reasons = why,
		.nr_sick = nr_sick,
	};
	sup_post(s, &e);
	free(best);
	free(ok);
	free(sick);
	free(why);
	strlist_release(&reasons);
	strbuf_release(&detail);
	strbuf_release(&r);
	sup_check_rows_release(rows, hosts.nr);
	strlist_release(&hosts);
}

/* ---- checks after a stop ---- */

void sup_do_checks(struct sup *s, const struct strlist *hosts)
{
	sup_say(s, "vigil check on the attempt's %zu nodes", hosts->nr);
	struct strbuf note = STRBUF_INIT;
	struct check_row *rows = sup_check_hosts(s, (const char *const *)hosts->items, hosts->nr,
					     &s->alloc, &s->w.no_agent, &note);
	if (note.len)
		sup_journal_event(s, "check_round", NULL, note.buf);
	strbuf_release(&note);
	const char **sick = xcalloc(hosts->nr + 1, sizeof(*sick));
	const char **why = xcalloc(hosts->nr + 1, sizeof(*why));
	struct strlist reasons = STRLIST_INIT;
	struct strbuf detail = STRBUF_INIT, r = STRBUF_INIT;
	size_t n = 0;
	for (size_t i = 0; i < hosts->nr; i++) {
		struct check_row *c = &rows[i];
		if (c->verdict == FLEET_HEALTHY)
			continue;
		if (c->verdict != FLEET_UNHEALTHY && c->verdict != FLEET_UNREACHABLE)
			continue; /* could not tell: not blamed without evidence */
		strbuf_reset(&r);
		strbuf_addf(&r, "%s after a failed attempt: %s", sup_verdict_word(c->verdict), c->reason);
		strlist_add(&reasons, r.buf);
		sick[n] = c->host;
		why[n++] = reasons.items[reasons.nr - 1];
	}
	round_detail(rows, hosts->nr, &detail, checks_extra);
	sup_journal_event(s, "checks", NULL, detail.buf);
	sup_say(s, "checks: %s", detail.buf);
	struct sup_event e = { .kind = SUP_EV_CHECK_DONE, .sick = sick, .sick_reasons = why,
			       .nr_sick = n };
	sup_post(s, &e);
	free(sick);
	free(why);
	strlist_release(&reasons);
	strbuf_release(&detail);
	strbuf_release(&r);
	sup_check_rows_release(rows, hosts->nr);
}
