/* supervisor.c: the loop of `vigil run`: events from the world, actions into it (supervisor.h). */
#include "supervisor.h"
#include "grouptest.h"
#include "journal.h"
#include "machine.h"
#include "rankout.h"
#include "collect.h"
#include "../lib/fileio.h"
#include "../lib/json.h"
#include "../lib/run.h"
#include "../lib/run_group.h"
#include "../lib/strlist.h"
#include "../lib/util.h"
#include "../logs/steps.h"
#include "../slurm/fleet.h"
#include "../slurm/step.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Step records are fsync'd at most this often. */
#define STEP_JOURNAL_EVERY_S 1.0
/* vigil's exit code for a usage error (src/cmd/cmd.h's EXIT_USAGE). */
#define EXIT_CODE_USAGE 2
/* Unreachable in this many periodic checks in a row: the node is lost. */
#define UNREACHABLE_LOST 2

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t sig_seen;

static void on_signal(int sig)
{
	int saved = errno;
	sig_seen = sig;
	if (sig_pipe[1] >= 0) {
		char c = (char)sig;
		(void)!write(sig_pipe[1], &c, 1);
	}
	errno = saved;
}

static double mono_s(void)
{
	return (double)mono_us() / 1e6;
}

/* What the periodic watch found about one host. */
struct watch_host {
	char *name;
	unsigned unreachable; /* in a row */
	double first_unreachable; /* wall clock of the first of them */
};

/* The attempt that runs: its step, its output and what the output said. */
struct sup_attempt {
	struct step step;
	bool step_live;
	char attempt_dir[4096];
	struct rankout ro;
	bool ro_open;
	struct step_parser out_p, json_p;
	bool parsers;
	int step_file_fd;
	char step_file[4200];
	bool json_steps; /* the step file spoke: output lines are no longer the source */
	struct detect_state det;
	bool has_step;
	uint64_t last_step;
	double last_step_journaled; /* wall */
	double last_loss;
	bool has_loss;
	double launch_wall;
	bool launched_said;
	char pyhook_dir[4200];
};

/* The periodic watch: a forked child asking Slurm and vigil check about the run's nodes. */
struct sup_watch {
	struct child watch;
	bool watch_live;
	double watch_started; /* wall clock */
	double next_check, next_poll;
	struct watch_host *wh;
	size_t nr_wh, alloc_wh;
	struct strlist no_agent; /* hosts whose agent keeps no fresh result: asked afresh */
};

/* Events waiting to be fed to the machine, and the machine's actions waiting their turn. */
struct sup_events {
	/* the fault being handled: when it happened and when it was seen (wall clock) */
	double happened, detected;
	bool in_io;
	struct deferred *deferred;
	size_t nr_deferred, alloc_deferred;
	/* actions waiting their turn (queue_actions) */
	struct sup_actions queue;
	size_t queue_head;
	bool draining;
};

struct sup {
	const struct sup_options *o;
	struct sup_machine m;
	struct journal j;
	struct strbuf err;
	int exit_code;
	const char *outcome;
	char *outcome_text;
	struct slurm_nodes alloc; /* the allocation */
	struct sup_attempt at;
	struct sup_watch w;
	struct sup_events ev;
};

/* ---- small helpers ---- */

static void say(struct sup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct sup *s, const char *fmt, ...)
{
	if (s->o->json)
		return;
	struct strbuf line = STRBUF_INIT, clean = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&line, fmt, ap);
	va_end(ap);
	char ts[40];
	rankout_timestamp(wall_seconds(), ts, sizeof(ts));
	strbuf_add_clean(&clean, line.buf);
	fprintf(stderr, "vigil run: %s %s\n", ts + 11, clean.buf);
	strbuf_release(&line);
	strbuf_release(&clean);
}

static void journal_rec(struct sup *s, struct journal_record *r)
{
	r->t = wall_seconds();
	struct strbuf e = STRBUF_INIT;
	if (journal_append(&s->j, r, &e) < 0)
		say(s, "%s", e.buf); /* the run goes on; the record is lost and that is said */
	strbuf_release(&e);
}

static void journal_event(struct sup *s, const char *cls, const char *host, const char *detail)
{
	struct journal_record r = { .kind = JOURNAL_EVENT, .attempt = s->m.attempt, .name = cls,
				    .host = host, .text = detail };
	journal_rec(s, &r);
}

static struct watch_host *wh_get(struct sup *s, const char *name)
{
	for (size_t i = 0; i < s->w.nr_wh; i++)
		if (!strcmp(s->w.wh[i].name, name))
			return &s->w.wh[i];
	ALLOC_GROW(s->w.wh, s->w.nr_wh + 1, s->w.alloc_wh);
	struct watch_host *w = &s->w.wh[s->w.nr_wh++];
	memset(w, 0, sizeof(*w));
	w->name = xstrdup(name);
	return w;
}

static void active_list(const struct sup_machine *m, struct strlist *out)
{
	for (size_t i = 0; i < m->nr_hosts; i++)
		if (m->hosts[i].role == SUP_HOST_ACTIVE)
			strlist_add(out, m->hosts[i].name);
}

/* ---- events in, actions out ---- */

static void run_actions(struct sup *s, struct sup_actions *a);

/*
 * Actions are carried out in the order the machine gave them, one at a time: an action's own
 * events (a stop that ends in "stopped") queue their actions behind the ones still waiting,
 * never before them (the drain of a host excluded with the stop comes before the next launch).
 */
static void queue_actions(struct sup *s, struct sup_actions *a)
{
	for (size_t i = 0; i < a->nr; i++) {
		ALLOC_GROW(s->ev.queue.v, s->ev.queue.nr + 1, s->ev.queue.alloc);
		s->ev.queue.v[s->ev.queue.nr++] = a->v[i]; /* the queue owns its strings now */
	}
	free(a->v);
	memset(a, 0, sizeof(*a));
	if (s->ev.draining)
		return;
	s->ev.draining = true;
	while (s->ev.queue_head < s->ev.queue.nr) {
		struct sup_actions one = { 0 };
		ALLOC_GROW(one.v, 1, one.alloc);
		one.v[0] = s->ev.queue.v[s->ev.queue_head++];
		one.nr = 1;
		run_actions(s, &one);
		sup_actions_release(&one);
	}
	free(s->ev.queue.v);
	memset(&s->ev.queue, 0, sizeof(s->ev.queue));
	s->ev.queue_head = 0;
	s->ev.draining = false;
}

/* An event seen while the step's output is being read: handled once the read is over (its
 * handling may stop and free that very step). */
struct deferred {
	enum sup_event_kind kind;
	char *host, *text;
	int code;
	uint64_t step;
	bool startup;
	double happened, detected;
};

static void feed(struct sup *s, const struct sup_event *e)
{
	if (s->ev.in_io) {
		/* only single-host events come from output (lists come from blocking work) */
		ALLOC_GROW(s->ev.deferred, s->ev.nr_deferred + 1, s->ev.alloc_deferred);
		struct deferred *d = &s->ev.deferred[s->ev.nr_deferred++];
		d->kind = e->kind;
		d->host = e->host ? xstrdup(e->host) : NULL;
		d->text = e->text ? xstrdup(e->text) : NULL;
		d->code = e->code;
		d->step = e->step;
		d->startup = e->startup;
		d->happened = s->ev.happened;
		d->detected = s->ev.detected;
		return;
	}
	struct sup_actions a = { 0 };
	enum sup_state before = s->m.state;
	sup_machine_handle(&s->m, e, &a);
	if (s->m.state != before)
		say(s, "%s -> %s (%s)", sup_state_name(before), sup_state_name(s->m.state),
		    sup_event_name(e->kind));
	queue_actions(s, &a);
}

static void feed_simple(struct sup *s, enum sup_event_kind k, const char *host, const char *text)
{
	struct sup_event e = { .kind = k, .host = host, .text = text };
	feed(s, &e);
}

/* A fault event: remember when it happened and when it was seen, for its journal record. */
static void fault(struct sup *s, enum sup_event_kind k, const char *host, const char *text,
		  double happened)
{
	s->ev.detected = wall_seconds();
	s->ev.happened = happened > 0 && happened <= s->ev.detected ? happened : s->ev.detected;
	struct sup_event e = { .kind = k, .host = host, .text = text };
	if (k == SUP_EV_HANG && !s->at.has_step)
		e.startup = true;
	feed(s, &e);
}

/* ---- fleet fan-out: vigil check on hosts (preflight, after a stop, periodically) ---- */

struct check_row {
	char *host;
	enum fleet_verdict verdict;
	char *reason;
	unsigned findings; /* not-ok findings in its report (the preflight's preference) */
	bool no_cache;     /* asked for the agent's cached result, there was none fresh */
};

static void check_rows_release(struct check_row *rows, size_t n)
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
				    size_t n, const struct slurm_nodes *alloc, bool cached);

/*
 * vigil check on hosts: the agent's cached result where an agent runs (run.agent-cache),
 * a fresh check elsewhere. Hosts found without an agent are added to no_agent (may be NULL)
 * and asked afresh from then on. Rows in the order of hosts.
 */
static struct check_row *check_hosts(const struct sup_options *o, const char *const *hosts,
				     size_t n, const struct slurm_nodes *alloc,
				     struct strlist *no_agent)
{
	if (!o->agent_cache)
		return fleet_once(o, hosts, n, alloc, false);
	const char **ask = xcalloc(n + 1, sizeof(*ask)), **fresh = xcalloc(n + 1, sizeof(*fresh));
	size_t na = 0, nf = 0;
	for (size_t i = 0; i < n; i++) {
		if (no_agent && strlist_has(no_agent, hosts[i]))
			fresh[nf++] = hosts[i];
		else
			ask[na++] = hosts[i];
	}
	struct check_row *rows = xcalloc(n ? n : 1, sizeof(*rows));
	struct check_row *c = na ? fleet_once(o, ask, na, alloc, true) : NULL;
	for (size_t i = 0; i < na; i++)
		if (c[i].no_cache) {
			fresh[nf++] = ask[i];
			if (no_agent && !strlist_has(no_agent, ask[i]))
				strlist_add(no_agent, ask[i]);
		}
	struct check_row *f = nf ? fleet_once(o, fresh, nf, alloc, false) : NULL;
	/* back in the order of hosts: each from the fresh answer if there is one */
	for (size_t i = 0; i < n; i++) {
		struct check_row *from = NULL;
		for (size_t k = 0; k < nf && !from; k++)
			if (!strcmp(fresh[k], hosts[i]))
				from = &f[k];
		for (size_t k = 0; k < na && !from; k++)
			if (!strcmp(ask[k], hosts[i]))
				from = &c[k];
		rows[i] = *from;
		from->host = from->reason = NULL; /* moved */
	}
	check_rows_release(c, na);
	check_rows_release(f, nf);
	free(ask);
	free(fresh);
	return rows;
}

/* vigil check --json on each host through srun --overlap (inside the allocation), in
 * parallel, each with its deadline. Returns rows in the order of hosts. */
static struct check_row *fleet_once(const struct sup_options *o, const char *const *hosts,
				    size_t n, const struct slurm_nodes *alloc, bool cached)
{
	struct check_row *rows = xcalloc(n ? n : 1, sizeof(*rows));
	struct slurm_nodes list = { 0 };
	for (size_t i = 0; i < n; i++) {
		/* the state as known at the start; the fleet decides what is runnable */
		const struct slurm_node *known = NULL;
		for (size_t k = 0; alloc && k < alloc->nr; k++)
			if (alloc->items[k].name && !strcmp(alloc->items[k].name, hosts[i]))
				known = &alloc->items[k];
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
	};
	fleet_run(&f, &plan);
	for (size_t i = 0; i < n; i++) {
		rows[i].host = xstrdup(hosts[i]);
		rows[i].verdict = FLEET_UNREACHABLE;
		rows[i].reason = xstrdup("no answer");
		for (size_t k = 0; k < f.nr; k++) {
			if (strcmp(f.rows[k].node.name, hosts[i]))
				continue;
			rows[i].verdict = f.rows[k].verdict;
			free(rows[i].reason);
			rows[i].reason = xstrdup(f.rows[k].reason ? f.rows[k].reason : "");
			bool agent_only;
			report_facts(f.rows[k].report_json, &rows[i].findings, &agent_only);
			/* no fresh cached result; or the node's vigil refused --cached (exit 2,
			 * usage: fleet.command adds --only or --root, which an agent's cache
			 * cannot answer) */
			rows[i].no_cache =
				cached && ((f.rows[k].verdict == FLEET_UNKNOWN && agent_only) ||
					   (f.rows[k].verdict == FLEET_UNREACHABLE &&
					    f.rows[k].exit_code == EXIT_CODE_USAGE));
		}
	}
	fleet_release(&f);
	slurm_nodes_release(&list);
	strlist_release(&base);
	strlist_release(&remote);
	strbuf_release(&tmp);
	return rows;
}

static const char *verdict_word(enum fleet_verdict v)
{
	static const char *const w[] = { "healthy", "unhealthy", "unknown", "unreachable" };
	return v <= FLEET_UNREACHABLE ? w[v] : "?";
}

/* ---- preflight ---- */

static int cmp_findings(const void *a, const void *b)
{
	const struct check_row *x = *(const struct check_row *const *)a;
	const struct check_row *y = *(const struct check_row *const *)b;
	return (x->findings > y->findings) - (x->findings < y->findings);
}

static void do_preflight(struct sup *s)
{
	const struct sup_options *o = s->o;
	struct strlist hosts = STRLIST_INIT;
	for (size_t i = 0; i < s->alloc.nr; i++) {
		const struct sup_host *h = sup_machine_host(&s->m, s->alloc.items[i].name);
		if (h && h->role == SUP_HOST_EXCLUDED)
			continue; /* excluded by an attempt before a restart of vigil */
		strlist_add(&hosts, s->alloc.items[i].name);
	}
	say(s, "preflight: vigil check on %zu nodes", hosts.nr);
	struct check_row *rows = check_hosts(o, (const char *const *)hosts.items, hosts.nr,
					     &s->alloc, &s->w.no_agent);
	struct check_row **ok = xcalloc(hosts.nr + 1, sizeof(*ok));
	size_t nr_ok = 0, nr_sick = 0;
	const char **sick = xcalloc(hosts.nr + 1, sizeof(*sick));
	const char **why = xcalloc(hosts.nr + 1, sizeof(*why));
	struct strbuf detail = STRBUF_INIT, r = STRBUF_INIT;
	struct strlist reasons = STRLIST_INIT;
	for (size_t i = 0; i < hosts.nr; i++) {
		struct check_row *c = &rows[i];
		strbuf_addf(&detail, "%s%s %s", i ? "; " : "", c->host, verdict_word(c->verdict));
		if (c->verdict == FLEET_HEALTHY) {
			ok[nr_ok++] = c;
		} else if (c->verdict == FLEET_UNHEALTHY) {
			strbuf_reset(&r);
			strbuf_addf(&r, "preflight: %s", c->reason);
			strlist_add(&reasons, r.buf);
			sick[nr_sick] = c->host;
			why[nr_sick++] = reasons.items[reasons.nr - 1];
			strbuf_addf(&detail, " (%s)", c->reason);
		} else {
			/* unknown or unreachable: not used this time, and not drained without
			 * evidence */
			strbuf_addf(&detail, " (%s: not used)", c->reason);
		}
	}
	qsort(ok, nr_ok, sizeof(*ok), cmp_findings);
	const char **best = xcalloc(nr_ok + 1, sizeof(*best));
	for (size_t i = 0; i < nr_ok; i++)
		best[i] = ok[i]->host;
	journal_event(s, "preflight", NULL, detail.buf);
	say(s, "preflight: %s", detail.buf);
	unsigned need = s->m.nodes;
	struct sup_event e = {
		.kind = nr_ok >= need ? SUP_EV_PREFLIGHT_OK : SUP_EV_PREFLIGHT_SHORT,
		.hosts = best,
		.nr_hosts = nr_ok,
		.sick = sick,
		.sick_reasons = why,
		.nr_sick = nr_sick,
	};
	feed(s, &e);
	free(best);
	free(ok);
	free(sick);
	free(why);
	strlist_release(&reasons);
	strbuf_release(&detail);
	strbuf_release(&r);
	check_rows_release(rows, hosts.nr);
	strlist_release(&hosts);
}

/* ---- checks after a stop ---- */

static void do_checks(struct sup *s, const struct strlist *hosts)
{
	say(s, "vigil check on the attempt's %zu nodes", hosts->nr);
	struct check_row *rows = check_hosts(s->o, (const char *const *)hosts->items, hosts->nr,
					     &s->alloc, &s->w.no_agent);
	const char **sick = xcalloc(hosts->nr + 1, sizeof(*sick));
	const char **why = xcalloc(hosts->nr + 1, sizeof(*why));
	struct strlist reasons = STRLIST_INIT;
	struct strbuf detail = STRBUF_INIT, r = STRBUF_INIT;
	size_t n = 0;
	for (size_t i = 0; i < hosts->nr; i++) {
		struct check_row *c = &rows[i];
		strbuf_addf(&detail, "%s%s %s", i ? "; " : "", c->host, verdict_word(c->verdict));
		if (c->verdict == FLEET_HEALTHY)
			continue;
		strbuf_addf(&detail, " (%s)", c->reason);
		if (c->verdict != FLEET_UNHEALTHY && c->verdict != FLEET_UNREACHABLE)
			continue; /* could not tell: not blamed without evidence */
		strbuf_reset(&r);
		strbuf_addf(&r, "%s after a failed attempt: %s", verdict_word(c->verdict), c->reason);
		strlist_add(&reasons, r.buf);
		sick[n] = c->host;
		why[n++] = reasons.items[reasons.nr - 1];
	}
	journal_event(s, "checks", NULL, detail.buf);
	say(s, "checks: %s", detail.buf);
	struct sup_event e = { .kind = SUP_EV_CHECK_DONE, .sick = sick, .sick_reasons = why,
			       .nr_sick = n };
	feed(s, &e);
	free(sick);
	free(why);
	strlist_release(&reasons);
	strbuf_release(&detail);
	strbuf_release(&r);
	check_rows_release(rows, hosts->nr);
}

/* ---- the step ---- */

static void progress(struct sup *s, const struct step_update *u, bool from_json);

static void on_step_out(void *arg, const struct step_update *u)
{
	progress(arg, u, false);
}

static void on_step_json(void *arg, const struct step_update *u)
{
	progress(arg, u, true);
}

/* "srun: error: n2: task 3: Exited with exit code 1", "srun: error: n2: tasks 0-1: Killed",
 * "srun: error: Node failure on n3": the first word of a task's death, seconds before srun's
 * own exit. */
static void srun_line(struct sup *s, const char *line, size_t len)
{
	char buf[1024];
	size_t n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
	memcpy(buf, line, n);
	buf[n] = '\0';
	const char *rest;
	if (!skip_prefix(buf, "srun: error: ", &rest))
		return;
	const char *nf;
	if (skip_prefix(rest, "Node failure on ", &nf)) {
		char host[72];
		size_t k = 0;
		while (nf[k] && nf[k] != ' ' && k < sizeof(host) - 1)
			host[k] = nf[k], k++;
		host[k] = '\0';
		if (slurm_node_name_ok(host))
			fault(s, SUP_EV_NODE_LOST, host, "srun: node failure", wall_seconds());
		return;
	}
	const char *colon = strchr(rest, ':');
	if (!colon || !strstr(colon, ": task"))
		return;
	char host[72];
	size_t hl = (size_t)(colon - rest);
	if (hl >= sizeof(host))
		return;
	memcpy(host, rest, hl);
	host[hl] = '\0';
	if (!slurm_node_name_ok(host))
		return;
	const char *what = strrchr(colon, ':');
	int code = 1;
	const char *c;
	if (what && (c = strstr(what, "exit code "))) {
		long v = strtol(c + 10, NULL, 10);
		code = v > 0 && v < 256 ? (int)v : 1;
	} else if (what && strstr(what, "Killed")) {
		code = 128 + SIGKILL;
	} else if (what && strstr(what, "Terminated")) {
		code = 128 + SIGTERM;
	} else if (what && strstr(what, "Segmentation")) {
		code = 128 + SIGSEGV;
	} else if (what && strstr(what, "Aborted")) {
		code = 128 + SIGABRT;
	}
	if (s->m.state == SUP_RUNNING || s->m.state == SUP_LAUNCHING ||
	    s->m.state == SUP_COLLECTING_EVIDENCE) {
		struct strbuf t = STRBUF_INIT;
		strbuf_add_clean(&t, colon + 2);
		s->ev.detected = wall_seconds();
		s->ev.happened = s->ev.detected;
		struct sup_event e = { .kind = SUP_EV_TASK_EXIT, .host = host, .code = code,
				       .text = t.buf };
		say(s, "task ended on %s: %s", host, t.buf);
		feed(s, &e);
		strbuf_release(&t);
	}
}

static void on_rank_line(void *arg, int rank, int stream, const char *line, size_t len)
{
	struct sup *s = arg;
	if (rank < 0) {
		srun_line(s, line, len);
		return;
	}
	if (rank != 0 || !s->at.parsers)
		return;
	/* progress from rank 0's lines, both streams (loggers write to stderr) */
	step_parser_feed(&s->at.out_p, line, len, on_step_out, s);
	step_parser_feed(&s->at.out_p, "\n", 1, on_step_out, s);
}

static void on_output(void *arg, int stream, const char *data, size_t len)
{
	struct sup *s = arg;
	if (s->at.ro_open)
		rankout_feed(&s->at.ro, stream, data, len, wall_seconds(), mono_s());
}

/* Every step is journaled (vigil diagnose steps reads the journal as it is); fsync'd at most
 * once a second, and with the next synced record: a kill -9 loses at most a second of them. */
static void journal_step(struct sup *s, uint64_t step, bool has_loss, double loss)
{
	double now = wall_seconds();
	bool sync = now - s->at.last_step_journaled >= STEP_JOURNAL_EVERY_S;
	if (sync)
		s->at.last_step_journaled = now;
	struct journal_record r = { .kind = JOURNAL_STEP, .attempt = s->m.attempt, .has_step = true,
				    .step = step, .has_loss = has_loss, .loss = loss, .t = now };
	struct strbuf e = STRBUF_INIT;
	if (journal_append_sync(&s->j, &r, sync, &e) < 0)
		say(s, "%s", e.buf);
	strbuf_release(&e);
}

static void flush_step(struct sup *s)
{
	journal_sync(&s->j, NULL);
}

static void progress(struct sup *s, const struct step_update *u, bool from_json)
{
	if (from_json)
		s->at.json_steps = true;
	else if (s->at.json_steps)
		return; /* the step file is the source once it speaks */
	if (u->change == STEP_SAME || (s->at.has_step && u->r.step == s->at.last_step))
		return;
	if (u->change == STEP_BACKWARDS || u->change == STEP_JUMP) {
		struct strbuf t = STRBUF_INIT;
		strbuf_addf(&t, "step %llu after %llu", (unsigned long long)u->r.step,
			    (unsigned long long)u->prev);
		journal_event(s, u->change == STEP_BACKWARDS ? "step_backwards" : "step_jump", NULL,
			      t.buf);
		strbuf_release(&t);
	}
	s->at.has_step = true;
	s->at.last_step = u->r.step;
	if (u->r.has_loss) {
		s->at.has_loss = true;
		s->at.last_loss = u->r.loss;
	}
	struct detect_result dr;
	enum detect_what w = detect_on_step(&s->o->detect, &s->at.det, u->r.step, u->change,
					    mono_s(), &dr);
	/* the machine journals a step record for every step; here they are thinned out */
	struct sup_event e = { .kind = SUP_EV_STEP, .step = u->r.step };
	enum sup_state st = s->m.state;
	if (st == SUP_LAUNCHING || st == SUP_RUNNING || st == SUP_COLLECTING_EVIDENCE) {
		feed(s, &e);
		journal_step(s, u->r.step, u->r.has_loss, u->r.loss);
	}
	struct strbuf t = STRBUF_INIT;
	if (w == DETECT_SLOW_STEP || w == DETECT_SLOWDOWN) {
		strbuf_addf(&t, "step %llu took %.3f s per step, over %.1f x the median %.3f s",
			    (unsigned long long)u->r.step, dr.step_time, s->o->detect.slow_factor,
			    dr.median);
		if (w == DETECT_SLOWDOWN)
			strbuf_addf(&t, " (%u slow steps in a row)", dr.slow_run);
		if (w == DETECT_SLOW_STEP) {
			feed_simple(s, SUP_EV_SLOW_STEP, NULL, t.buf);
		} else {
			say(s, "slowdown: %s", t.buf);
			/* it started with the first slow step of the run */
			fault(s, SUP_EV_SLOW, NULL, t.buf,
			      wall_seconds() - dr.step_time * dr.slow_run);
		}
	}
	strbuf_release(&t);
}

static void read_step_file(struct sup *s)
{
	if (s->at.step_file_fd < 0) {
		s->at.step_file_fd = open(s->at.step_file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (s->at.step_file_fd < 0)
			return;
		struct stat st;
		if (fstat(s->at.step_file_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			/* a FIFO or device would block or never end: not a step file */
			close(s->at.step_file_fd);
			s->at.step_file_fd = -2;
			journal_event(s, "step_file_refused", NULL, "not a regular file");
			return;
		}
	}
	if (s->at.step_file_fd < 0)
		return;
	char buf[65536];
	for (int i = 0; i < 64; i++) { /* at most 4 MiB a turn: the loop has other work */
		ssize_t n = read(s->at.step_file_fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		step_parser_feed(&s->at.json_p, buf, (size_t)n, on_step_json, s);
	}
}

static void close_attempt(struct sup *s)
{
	if (s->at.ro_open) {
		rankout_finish(&s->at.ro);
		rankout_close(&s->at.ro);
		s->at.ro_open = false;
	}
	if (s->at.parsers) {
		read_step_file(s);
		step_parser_release(&s->at.out_p);
		step_parser_release(&s->at.json_p);
		s->at.parsers = false;
	}
	if (s->at.step_file_fd >= 0)
		close(s->at.step_file_fd);
	s->at.step_file_fd = -1;
	flush_step(s);
}

/* A directory of the run, made if missing; never a link, never another user's. */
static int make_dir(const char *path, struct strbuf *err)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		strbuf_addf(err, "cannot create '%s': %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (lstat(path, &st) < 0) {
		strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		strbuf_addf(err, "cannot use '%s': it is %s, not a directory", path,
			    file_kind(st.st_mode));
		return -1;
	}
	if (st.st_uid != geteuid()) {
		strbuf_addf(err, "cannot use '%s': it belongs to uid %u", path, (unsigned)st.st_uid);
		return -1;
	}
	return 0;
}

static unsigned world_of(const struct sup *s, size_t hosts)
{
	return (unsigned)hosts * s->o->tasks_per_node;
}

/* The address of a host for MASTER_ADDR: its NodeAddr where Slurm knows one. */
static const char *addr_of(const struct sup *s, const char *host)
{
	for (size_t i = 0; i < s->alloc.nr; i++)
		if (!strcmp(s->alloc.items[i].name, host) && s->alloc.items[i].addr &&
		    *s->alloc.items[i].addr)
			return s->alloc.items[i].addr;
	return host;
}

/* The environment of every task beyond the step's own. */
static void task_env(struct sup *s, struct strlist *env, bool smoke)
{
	struct strbuf e = STRBUF_INIT;
	strlist_add(env, "PYTHONUNBUFFERED=1"); /* progress lines as they are printed */
	if (s->at.pyhook_dir[0]) {
		const char *pp = getenv("PYTHONPATH");
		strbuf_addf(&e, "PYTHONPATH=%s%s%s", s->at.pyhook_dir, pp && *pp ? ":" : "",
			    pp ? pp : "");
		strlist_add(env, e.buf);
	}
	if (smoke)
		strlist_add(env, "VIGIL_SMOKE=1");
	if (s->o->nccl_recorder && !smoke) {
		/* the NCCL flight recorder: a ring per rank in /dev/shm that vigil stacks copies on a
		 * hang, dumps into the attempt's nccl/ at exit (vigil diagnose hang reads both) */
		strbuf_reset(&e);
		strbuf_addf(&e, "NCCL_PROFILER_PLUGIN=%s", s->o->nccl_recorder);
		strlist_add(env, e.buf);
		strbuf_reset(&e);
		strbuf_addf(&e, "VIGIL_NCCL_JOB=vigil-%s", s->o->job_id ? s->o->job_id : "run");
		strlist_add(env, e.buf);
		strbuf_reset(&e);
		strbuf_addf(&e, "VIGIL_NCCL_DUMP_DIR=%s/nccl", s->at.attempt_dir);
		strlist_add(env, e.buf);
	}
	strbuf_release(&e);
}

static void do_launch(struct sup *s, const struct sup_action *x)
{
	const struct sup_options *o = s->o;
	struct strbuf e = STRBUF_INIT;
	snprintf(s->at.attempt_dir, sizeof(s->at.attempt_dir), "%s/attempt-%u", o->run_dir, x->attempt);
	snprintf(s->at.step_file, sizeof(s->at.step_file), "%s/steps.jsonl", s->at.attempt_dir);
	unsigned world = world_of(s, x->hosts.nr);
	char port[16];
	(void)port;
	if (make_dir(s->at.attempt_dir, &e) < 0)
		goto fail;
	if (o->nccl_recorder) {
		struct strbuf nd = STRBUF_INIT;
		strbuf_addf(&nd, "%s/nccl", s->at.attempt_dir);
		if (make_dir(nd.buf, &e) < 0) {
			strbuf_release(&nd);
			goto fail;
		}
		strbuf_release(&nd);
	}
	if (rankout_open(&s->at.ro, s->at.attempt_dir, world, on_rank_line, s, &e) < 0)
		goto fail;
	s->at.ro_open = true;
	if (step_parser_init_output(&s->at.out_p, o->step_pattern, &e) < 0)
		goto fail;
	step_parser_init_json(&s->at.json_p);
	s->at.parsers = true;
	s->at.json_steps = false;
	s->at.step_file_fd = -1;
	s->at.has_step = false;
	s->at.launched_said = false;
	s->at.last_step_journaled = 0;

	struct strlist env = STRLIST_INIT;
	task_env(s, &env, false);
	struct step_spec spec = {
		.hosts = (const char *const *)x->hosts.items,
		.nr_hosts = x->hosts.nr,
		.tasks_per_node = o->tasks_per_node,
		.master_addr = addr_of(s, x->hosts.items[0]),
		.master_port = o->master_port + x->attempt % 1000,
		.attempt = x->attempt,
		.run_dir = o->run_dir,
		.attempt_dir = s->at.attempt_dir,
		.step_file = s->at.step_file,
		.label = "vigil-run",
		.labelled = true,
		.env = (const char *const *)env.items,
		.cmd = o->cmd,
	};
	step_init(&s->at.step);
	s->at.step.scancel = o->scancel;
	s->at.step.on_output = on_output;
	s->at.step.on_output_arg = s;
	/* the step is inside our allocation, whatever SLURM_JOB_ID the caller's environment has */
	int rc = step_start(&s->at.step, &o->cmds, &spec, &e);
	strlist_release(&env);
	if (rc < 0)
		goto fail;
	s->at.step_live = true;
	s->at.launch_wall = wall_seconds();
	detect_start(&s->at.det, mono_s());
	say(s, "attempt %u: %u ranks on %zu hosts (%s%s)", x->attempt, world, x->hosts.nr,
	    x->hosts.items[0], x->hosts.nr > 1 ? ", ..." : "");
	strbuf_release(&e);
	return;
fail:
	/* a launch that cannot happen is a crash of this attempt: the machine decides */
	say(s, "attempt %u could not start: %s", x->attempt, e.buf);
	close_attempt(s);
	s->ev.detected = s->ev.happened = wall_seconds();
	struct sup_event ev = { .kind = SUP_EV_TASK_EXIT, .code = 127, .text = e.buf };
	/* launching -> stopping; the stop finds nothing to stop */
	feed(s, &ev);
	strbuf_release(&e);
}

/* ---- diagnosis (vigil diagnose, issue 11): what the run's own files say ---- */

/*
 * Run `vigil diagnose KIND --json ARG` (this very vigil, a child with a deadline: a diagnosis
 * that fails or hangs costs the run nothing), keep its JSON in out_path and journal one
 * "diagnosis" event with its verdict in words.
 */
static struct json_value *diagnose(struct sup *s, const char *kind, const char *arg,
				   const char *out_path)
{
	struct json_value *v = NULL;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = '\0';
	const char *argv[] = { self, "diagnose", kind, "--json", arg, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 60000;
	c.out_cap = 16u << 20;
	struct strbuf d = STRBUF_INIT;
	if (child_run(&c, NULL) == 0 && c.exited && c.exit_code != 2 && c.out.len) {
		write_file_atomic(out_path, c.out.buf, c.out.len, 0644, NULL);
		v = json_parse(c.out.buf, c.out.len, NULL);
		if (v && !strcmp(kind, "hang")) {
			const char *sum = json_get_string(v, "summary");
			const char *src = json_get_string(v, "source");
			strbuf_addf(&d, "hang (%s): %s", src ? src : "?",
				    sum && *sum ? sum : "could not tell");
		} else if (v && !strcmp(kind, "logs")) {
			const struct json_value *root = json_get(v, "root");
			const char *cause = root ? json_get_string(root, "cause") : NULL;
			if (cause) {
				const char *host = json_get_string(root, "host");
				const char *ex = json_get_string(root, "example");
				const struct json_value *rk = json_get(root, "rank");
				strbuf_addf(&d, "logs: first error: %s", cause);
				if (host && *host)
					strbuf_addf(&d, " on %s", host);
				if (rk && rk->type == JSON_NUMBER)
					strbuf_addf(&d, " rank %.0f", rk->number);
				if (ex)
					strbuf_addf(&d, ": %s", ex);
			} else {
				strbuf_addstr(&d, "logs: no known error line");
			}
		} else if (v) {
			const struct json_value *pats = json_get(v, "patterns");
			for (size_t i = 0; pats && pats->type == JSON_ARRAY && i < pats->nr && i < 3;
			     i++) {
				const char *name = json_get_string(pats->items[i], "pattern");
				const char *cause = json_get_string(pats->items[i], "cause");
				strbuf_addf(&d, "%s%s", i ? "; " : "steps: ", name ? name : "?");
				if (cause && name && strcmp(name, "healthy"))
					strbuf_addf(&d, " (%s)", cause);
			}
		}
	} else {
		/* too few steps, nothing readable: said, not guessed */
		strbuf_addf(&d, "%s: could not tell", kind);
	}
	if (d.len) {
		journal_event(s, "diagnosis", NULL, d.buf);
		say(s, "diagnosis: %s", d.buf);
	}
	strbuf_release(&d);
	child_release(&c);
	return v;
}

static void do_stop(struct sup *s, const struct sup_action *x)
{
	struct strbuf e = STRBUF_INIT;
	int rc = 0;
	if (s->at.step_live) {
		say(s, "stopping the step (TERM, %u ms, KILL)", s->o->grace_ms);
		rc = step_stop(&s->at.step, &s->o->cmds, s->o->grace_ms, &e);
		/* what srun still had to say */
		while (!s->at.step.child.done && child_poll(&s->at.step.child, 0) == 0)
			;
		step_release(&s->at.step);
		s->at.step_live = false;
	} else if (x->text && *x->text) {
		/* a step of the supervisor before this one (journal) */
		say(s, "stopping step %s of attempt %u, left by an earlier vigil run", x->text,
		    x->attempt);
		rc = step_stop_id(&s->o->cmds, s->o->scancel, NULL, x->text, &e);
	} else if (s->m.resumed && !s->at.launched_said) {
		/* resumed without a step id in the journal: the attempt directory may have it */
		struct strbuf p = STRBUF_INIT, id = STRBUF_INIT;
		strbuf_addf(&p, "%s/attempt-%u/step-id", s->o->run_dir, x->attempt);
		if (read_file_bounded(p.buf, &id, 64, NULL) == 0) {
			strbuf_rtrim(&id);
			if (step_id_ok(id.buf)) {
				say(s, "stopping step %s of attempt %u (its step-id file)", id.buf,
				    x->attempt);
				rc = step_stop_id(&s->o->cmds, s->o->scancel, NULL, id.buf, &e);
			}
		}
		strbuf_release(&p);
		strbuf_release(&id);
	}
	close_attempt(s);
	if (rc < 0)
		journal_event(s, "stop_incomplete", NULL, e.buf);
	if (s->m.fault == SUP_FAULT_CRASH && s->at.attempt_dir[0]) {
		/* the first error in the ranks' output, not the cascade after it */
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "%s/diagnosis-logs.json", s->at.attempt_dir);
		json_free(diagnose(s, "logs", s->at.attempt_dir, p.buf));
		strbuf_release(&p);
	}
	strbuf_release(&e);
	feed_simple(s, SUP_EV_STOPPED, NULL, NULL);
}

/* ---- evidence ---- */

static struct json_value *diagnose(struct sup *s, const char *kind, const char *arg,
				   const char *out_path);

/*
 * The ranks 'vigil diagnose hang' names (the recorder's culprits, else the logs'), as the hosts
 * they ran on: rank r runs on hosts[r / G] (step.h). Suspects, not verdicts: a rank that never
 * entered a collective may be a software bug as well as a sick host, so they are confirmed by
 * a smoke run alone like the stacks' weaker suspects.
 */
/* Rank r's host in the run: hosts[r / G] (step.h), added to out once. */
static void add_rank_host(struct sup *s, double r, char *const *hosts, size_t nr_hosts,
			  struct strlist *out)
{
	if (r < 0 || !s->o->tasks_per_node)
		return;
	size_t h = (size_t)r / s->o->tasks_per_node;
	if (h < nr_hosts && !strlist_has(out, hosts[h]))
		strlist_add(out, hosts[h]);
}

/* The hosts of a non-empty array of culprits ({"rank": R, ...}); false when there is none. */
static bool add_culprit_hosts(struct sup *s, const struct json_value *list, char *const *hosts,
			      size_t nr_hosts, struct strlist *out)
{
	if (!list || list->type != JSON_ARRAY || !list->nr)
		return false;
	for (size_t i = 0; i < list->nr; i++) {
		double r;
		if (json_get_number(list->items[i], "rank", &r))
			add_rank_host(s, r, hosts, nr_hosts, out);
	}
	return true;
}

static void hang_suspects(struct sup *s, const struct json_value *v, char *const *hosts,
			  size_t nr_hosts, struct strlist *out)
{
	/* the recorder's culprits, else the first process group's culprits in the logs */
	if (add_culprit_hosts(s, json_path(v, "recorder.culprits"), hosts, nr_hosts, out))
		return;
	const struct json_value *groups = json_path(v, "logs.groups");
	for (size_t g = 0; groups && groups->type == JSON_ARRAY && g < groups->nr; g++)
		if (add_culprit_hosts(s, json_get(groups->items[g], "culprits"), hosts, nr_hosts,
				      out))
			return;
	/* else the ranks that left no ring while every other waits: the likeliest culprits */
	const char *state = json_get_string(json_get(v, "recorder"), "state");
	const struct json_value *comms = json_path(v, "recorder.communicators");
	if (!state || strcmp(state, "incomplete") || !comms || comms->type != JSON_ARRAY)
		return;
	for (size_t c = 0; c < comms->nr; c++) {
		const char *cs = json_get_string(comms->items[c], "state");
		const struct json_value *m = json_get(comms->items[c], "missing_ranks");
		if (!cs || strcmp(cs, "incomplete") || !m || m->type != JSON_ARRAY)
			continue;
		for (size_t i = 0; i < m->nr; i++)
			if (m->items[i]->type == JSON_NUMBER)
				add_rank_host(s, m->items[i]->number, hosts, nr_hosts, out);
	}
}

static void do_evidence(struct sup *s, const struct sup_action *x)
{
	if (s->m.fault == SUP_FAULT_SLOW) {
		/* what the step times say of the slowdown, before the stop */
		struct strbuf j = STRBUF_INIT, p = STRBUF_INIT;
		strbuf_addf(&j, "%s/journal.jsonl", s->o->run_dir);
		strbuf_addf(&p, "%s/diagnosis-steps.json", s->at.attempt_dir);
		journal_sync(&s->j, NULL);
		json_free(diagnose(s, "steps", j.buf, p.buf));
		strbuf_release(&j);
		strbuf_release(&p);
	}
	/* stacks of every rank, before anything is killed: see evidence.c */
	struct strbuf summary = STRBUF_INIT;
	struct strlist suspects = STRLIST_INIT, sick = STRLIST_INIT, why = STRLIST_INIT;
	sup_collect_evidence(s->o, s->at.attempt_dir, step_id(&s->at.step), x->hosts.items, x->hosts.nr,
			     s->at.ro_open ? &s->at.ro : NULL, world_of(s, x->hosts.nr), &summary,
			     &suspects, &sick, &why);
	if (s->m.fault == SUP_FAULT_HANG) {
		/* which rank stopped the collective: the NCCL recorder's rings (copied by vigil
		 * stacks just now) or the watchdog lines, before anything is stopped */
		struct strbuf p = STRBUF_INIT;
		struct strlist named = STRLIST_INIT;
		strbuf_addf(&p, "%s/diagnosis-hang.json", s->at.attempt_dir);
		struct json_value *v = diagnose(s, "hang", s->at.attempt_dir, p.buf);
		if (v)
			hang_suspects(s, v, x->hosts.items, x->hosts.nr, &named);
		for (size_t i = 0; i < named.nr; i++)
			if (!strlist_has(&sick, named.items[i]) &&
			    !strlist_has(&suspects, named.items[i]))
				strlist_add(&suspects, named.items[i]);
		if (named.nr) {
			strbuf_addstr(&summary, "; vigil diagnose hang names ");
			for (size_t i = 0; i < named.nr; i++)
				strbuf_addf(&summary, "%s%s", i ? ", " : "", named.items[i]);
		}
		json_free(v);
		strlist_release(&named);
		strbuf_release(&p);
	}
	say(s, "evidence: %s", summary.buf);
	struct sup_event e = { .kind = SUP_EV_EVIDENCE_DONE, .text = summary.buf,
			       .hosts = (const char *const *)suspects.items,
			       .nr_hosts = suspects.nr,
			       .sick = (const char *const *)sick.items,
			       .sick_reasons = (const char *const *)why.items,
			       .nr_sick = sick.nr };
	feed(s, &e);
	strbuf_release(&summary);
	strlist_release(&suspects);
	strlist_release(&sick);
	strlist_release(&why);
}

/* ---- group testing ---- */

/* One smoke run on a group of hosts: the trainer (or --smoke) as a step with VIGIL_SMOKE=1.
 * true when it failed. */
static bool smoke_run(struct sup *s, const char *const *hosts, size_t n, unsigned round,
		      size_t index, struct strbuf *detail)
{
	const struct sup_options *o = s->o;
	struct strbuf dir = STRBUF_INIT, e = STRBUF_INIT, sf = STRBUF_INIT;
	strbuf_addf(&dir, "%s/smoke", o->run_dir);
	bool failed = true;
	if (make_dir(dir.buf, &e) < 0)
		goto out;
	strbuf_addf(&dir, "/attempt-%u-round-%u-group-%zu", s->m.attempt, round, index);
	if (make_dir(dir.buf, &e) < 0)
		goto out;
	strbuf_addf(&sf, "%s/steps.jsonl", dir.buf);
	struct strlist env = STRLIST_INIT;
	task_env(s, &env, true);
	struct step_spec spec = {
		.hosts = hosts,
		.nr_hosts = n,
		.tasks_per_node = o->tasks_per_node,
		.master_addr = addr_of(s, hosts[0]),
		.master_port = o->master_port + 1000 + (round * 16 + (unsigned)index) % 1000,
		.attempt = s->m.attempt,
		.run_dir = o->run_dir,
		.attempt_dir = dir.buf,
		.step_file = sf.buf,
		.label = "vigil-smoke",
		.env = (const char *const *)env.items,
		.cmd = o->smoke ? o->smoke : o->cmd,
	};
	struct step st;
	step_init(&st);
	st.scancel = o->scancel;
	if (step_start(&st, &o->cmds, &spec, &e) == 0) {
		uint64_t end = mono_ms() + (uint64_t)(o->smoke_timeout_s * 1000);
		while (!st.child.done && mono_ms() < end && !sig_seen)
			child_poll(&st.child, 200);
		bool timed_out = !st.child.done;
		if (timed_out)
			step_stop(&st, &o->cmds, o->grace_ms, &e);
		else
			child_finish(&st.child);
		failed = timed_out || !st.child.exited || st.child.exit_code != 0;
		if (timed_out)
			strbuf_addf(&e, "did not finish in %.0f s", o->smoke_timeout_s);
		else
			child_describe(&st.child, &e);
		step_release(&st);
	}
	strlist_release(&env);
out:
	strbuf_addf(detail, "%s[", detail->len ? "; " : "");
	for (size_t i = 0; i < n; i++)
		strbuf_addf(detail, "%s%s", i ? " " : "", hosts[i]);
	strbuf_addf(detail, "] %s", failed ? "failed" : "passed");
	if (failed && e.len) {
		strbuf_addstr(detail, " (");
		strbuf_add_clean(detail, e.buf);
		strbuf_addch(detail, ')');
	}
	strbuf_release(&dir);
	strbuf_release(&e);
	strbuf_release(&sf);
	return failed;
}

/*
 * Find the hosts that make the run fail when no check explains it: rounds of smoke runs on
 * groups (grouptest.h), the groups of a round one after the other here (a group's step takes
 * its hosts whole, and the groups of a round are disjoint, so they could run at once; run
 * one by one they cannot disturb each other's timing). confirm: each suspect alone.
 */
static void do_group_test(struct sup *s, const struct sup_action *x)
{
	size_t n = x->hosts.nr;
	struct grouptest g;
	struct strbuf detail = STRBUF_INIT;
	struct strlist bad = STRLIST_INIT, why = STRLIST_INIT;
	bool everywhere = false;
	say(s, "group testing %zu hosts%s", n, x->confirm ? " (each suspect alone)" : "");
	if (x->confirm) {
		/* a suspect named by evidence is tested alone, twice for a failure to count */
		for (size_t i = 0; i < n && !sig_seen; i++) {
			const char *h[] = { x->hosts.items[i] };
			if (smoke_run(s, h, 1, 1, i, &detail) &&
			    smoke_run(s, h, 1, 2, i, &detail)) {
				strlist_add(&bad, x->hosts.items[i]);
				strlist_add(&why, "failed the smoke test alone, twice");
			}
		}
	} else {
		grouptest_init(&g, n, 2);
		unsigned round = 0;
		size_t k;
		while (!sig_seen && (k = grouptest_next_round(&g)) > 0) {
			round++;
			for (size_t i = 0; i < k; i++) {
				const char **h = xcalloc(g.groups[i].nr + 1, sizeof(*h));
				for (size_t j = 0; j < g.groups[i].nr; j++)
					h[j] = x->hosts.items[g.groups[i].hosts[j]];
				bool failed = smoke_run(s, h, g.groups[i].nr, round, i, &detail);
				grouptest_result(&g, i, failed);
				free(h);
			}
		}
		for (size_t i = 0; i < n; i++)
			if (grouptest_host(&g, i) == GT_BAD) {
				strlist_add(&bad, x->hosts.items[i]);
				strlist_add(&why, "group testing: made the smoke test fail, alone "
						  "and in every group it was in");
			}
		/* More than half the hosts failing alone is no fault of theirs: the command, its
		 * environment or the allocation fails anywhere. Nobody is drained for it. */
		if (n > 1 && bad.nr * 2 > n) {
			strbuf_addf(&detail, "; %zu of %zu hosts failed alone: the fault is not in a "
				    "host (the command or its environment), none excluded", bad.nr, n);
			strlist_release(&bad);
			strlist_release(&why);
			everywhere = true;
		}
		strbuf_addf(&detail, " (%u rounds, %u smoke runs)", g.rounds, g.tests);
		grouptest_release(&g);
	}
	journal_event(s, "group_test", bad.nr == 1 ? bad.items[0] : NULL, detail.buf);
	say(s, "group test: %s", detail.buf);
	struct sup_event e = { .kind = SUP_EV_SMOKE_RESULT, .sick = (const char *const *)bad.items,
			       .sick_reasons = (const char *const *)why.items, .nr_sick = bad.nr,
			       .code = everywhere, .text = everywhere ? detail.buf : NULL };
	feed(s, &e);
	strbuf_release(&detail);
	strlist_release(&bad);
	strlist_release(&why);
}

/* ---- Slurm ---- */

static void do_drain(struct sup *s, const struct sup_action *x)
{
	if (!s->o->drain) {
		journal_event(s, "drain_skipped", x->host, "run.drain is false");
		return;
	}
	struct slurm_node node = { 0 };
	struct strbuf e = STRBUF_INIT;
	struct slurm_decision d;
	bool have = slurm_node_get(&s->o->cmds, x->host, &node, &e) == 0;
	slurm_decide_exclude(x->text, have ? &node : NULL, &d);
	if (d.act == SLURM_ACT_DRAIN && slurm_apply(&s->o->cmds, x->host, &d, &e) < 0) {
		journal_event(s, "drain_failed", x->host, e.buf);
		say(s, "cannot drain %s: %s", x->host, e.buf);
	} else {
		journal_event(s, d.act == SLURM_ACT_DRAIN ? "drained" : "not_drained", x->host,
			      d.act == SLURM_ACT_DRAIN ? d.reason : d.why);
		say(s, "%s %s: %s", d.act == SLURM_ACT_DRAIN ? "drained" : "did not drain",
		    x->host, d.act == SLURM_ACT_DRAIN ? d.reason : d.why);
	}
	slurm_node_release(&node);
	strbuf_release(&e);
}

/* ---- the end ---- */

static void do_report(struct sup *s, const struct sup_action *x)
{
	if (s->m.launched_any && !(s->m.resumed && !strcmp(x->text ? x->text : "",
							 "the run had already ended"))) {
		/* the run's step times as a whole: checkpoints, throttling, decline */
		struct strbuf j = STRBUF_INIT, p = STRBUF_INIT;
		strbuf_addf(&j, "%s/journal.jsonl", s->o->run_dir);
		strbuf_addf(&p, "%s/diagnosis-steps.json", s->o->run_dir);
		journal_sync(&s->j, NULL);
		json_free(diagnose(s, "steps", j.buf, p.buf));
		strbuf_release(&j);
		strbuf_release(&p);
	}
	s->outcome = x->name;
	free(s->outcome_text);
	s->outcome_text = x->text ? xstrdup(x->text) : NULL;
	s->exit_code = !strcmp(x->name, "done") ? 0 : 1;
}

/* ---- carrying out actions ---- */

static void run_actions(struct sup *s, struct sup_actions *a)
{
	for (size_t i = 0; i < a->nr; i++) {
		const struct sup_action *x = &a->v[i];
		switch (x->kind) {
		case SUP_ACT_JOURNAL: {
			if (x->record == JOURNAL_STEP)
				break; /* thinned out by progress() */
			if (x->record == JOURNAL_ATTEMPT_ENDED)
				flush_step(s);
			struct journal_record r = {
				.kind = x->record, .attempt = x->attempt, .name = x->name,
				.host = x->host, .text = x->text, .has_code = x->has_code,
				.code = x->code, .restarts = s->m.restarts,
				.hosts = (const char *const *)x->hosts.items,
				.nr_hosts = x->hosts.nr,
			};
			bool is_fault = x->record == JOURNAL_EVENT && x->name &&
					(!strcmp(x->name, "crash") || !strcmp(x->name, "hang") ||
					 !strcmp(x->name, "startup_timeout") ||
					 !strcmp(x->name, "slow") || !strcmp(x->name, "sick") ||
					 !strcmp(x->name, "lost") || !strcmp(x->name, "cancel"));
			if (is_fault && s->ev.detected > 0) {
				r.has_latency = true;
				r.happened = s->ev.happened;
				r.detected = s->ev.detected;
			}
			if (x->record == JOURNAL_ATTEMPT_ENDED && s->at.has_step) {
				r.has_step = true;
				r.step = s->at.last_step;
			}
			journal_rec(s, &r);
			break;
		}
		case SUP_ACT_PREFLIGHT:
			do_preflight(s);
			break;
		case SUP_ACT_LAUNCH:
			do_launch(s, x);
			break;
		case SUP_ACT_STOP_STEP:
			do_stop(s, x);
			break;
		case SUP_ACT_COLLECT_STACKS:
			do_evidence(s, x);
			break;
		case SUP_ACT_RUN_CHECKS:
			do_checks(s, &x->hosts);
			break;
		case SUP_ACT_DRAIN_HOST:
			do_drain(s, x);
			break;
		case SUP_ACT_REPLACE_HOST: {
			struct strbuf t = STRBUF_INIT;
			strbuf_addf(&t, "%s replaced by the spare %s", x->host, x->other);
			journal_event(s, "replaced", x->host, t.buf);
			say(s, "%s", t.buf);
			strbuf_release(&t);
			break;
		}
		case SUP_ACT_GROUP_TEST:
			do_group_test(s, x);
			break;
		case SUP_ACT_WAIT: {
			uint64_t end = mono_ms() + (uint64_t)(s->o->restart_delay_s * 1000);
			while (mono_ms() < end && !sig_seen)
				usleep(20000);
			if (sig_seen)
				feed_simple(s, SUP_EV_CANCEL, NULL, "signal before the relaunch");
			else
				feed_simple(s, SUP_EV_READY, NULL, NULL);
			break;
		}
		case SUP_ACT_REPORT:
			do_report(s, x);
			break;
		}
	}
}

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
	active_list(&s->m, &hosts);
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
		struct check_row *rows = check_hosts(s->o, (const char *const *)hosts.items,
						     hosts.nr, &s->alloc, &s->w.no_agent);
		/* what this (forked) watcher learnt, for the loop to remember */
		for (size_t i = 0; i < s->w.no_agent.nr; i++)
			if (!strlist_has(&before, s->w.no_agent.items[i]))
				strbuf_addf(&out, "%s\tnoagent\t\n", s->w.no_agent.items[i]);
		strlist_release(&before);
		for (size_t i = 0; i < hosts.nr; i++) {
			strbuf_addf(&out, "%s\t%s\t", rows[i].host, verdict_word(rows[i].verdict));
			for (const char *p = rows[i].reason; *p; p++)
				strbuf_addch(&out, *p == '\n' || *p == '\t' ? ' ' : *p);
			strbuf_addch(&out, '\n');
		}
		check_rows_release(rows, hosts.nr);
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

static void watch_start(struct sup *s, bool checks)
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
		journal_event(s, "watch_failed", NULL, e.buf);
	strbuf_release(&e);
}

static void watch_done(struct sup *s)
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
				struct watch_host *w = wh_get(s, host);
				struct strbuf r = STRBUF_INIT;
				if (!strcmp(what, "lost")) {
					strbuf_addf(&r, "node lost: %s", detail);
					say(s, "%s: %s", host, r.buf);
					fault(s, SUP_EV_NODE_LOST, host, r.buf,
					      w->unreachable ? w->first_unreachable : 0);
				} else if (!strcmp(what, "unhealthy")) {
					strbuf_addf(&r, "turned sick during the run: %s", detail);
					say(s, "%s: %s", host, r.buf);
					fault(s, SUP_EV_HOST_SICK, host, r.buf, 0);
				} else if (!strcmp(what, "unreachable")) {
					if (!w->unreachable++)
						w->first_unreachable = s->w.watch_started;
					if (w->unreachable >= UNREACHABLE_LOST) {
						strbuf_addf(&r, "node lost: unreachable in %u checks "
							    "in a row: %s", w->unreachable, detail);
						say(s, "%s: %s", host, r.buf);
						/* it stopped answering at the first check that
						 * got no answer */
						fault(s, SUP_EV_NODE_LOST, host, r.buf,
						      w->first_unreachable);
					} else {
						journal_event(s, "unreachable", host, detail);
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

static void watch_stop(struct sup *s)
{
	if (!s->w.watch_live)
		return;
	child_finish(&s->w.watch);
	child_release(&s->w.watch);
	s->w.watch_live = false;
}

/* The events the output gave, in order; stops after one that ends the attempt's running. */
static void flush_deferred(struct sup *s)
{
	for (size_t i = 0; i < s->ev.nr_deferred; i++) {
		struct deferred *d = &s->ev.deferred[i];
		s->ev.happened = d->happened;
		s->ev.detected = d->detected;
		struct sup_event e = { .kind = d->kind, .host = d->host, .text = d->text,
				       .code = d->code, .step = d->step, .startup = d->startup };
		feed(s, &e);
		free(d->host);
		free(d->text);
	}
	s->ev.nr_deferred = 0;
}

/* Read the step's output (and maybe see it end) with every event it gives deferred. */
static bool step_io(struct sup *s, const struct pollfd *pfd, size_t n)
{
	s->ev.in_io = true;
	bool ended = step_handle(&s->at.step, pfd, n);
	if (ended)
		rankout_finish(&s->at.ro);
	s->ev.in_io = false;
	return ended;
}

/* ---- the loop while a step runs ---- */

static void run_loop(struct sup *s)
{
	const struct sup_options *o = s->o;
	double now = mono_s();
	s->w.next_poll = now + o->node_poll_s;
	s->w.next_check = o->check_interval_s > 0 ? now + o->check_interval_s : INFINITY;
	while (s->at.step_live && (s->m.state == SUP_LAUNCHING || s->m.state == SUP_RUNNING)) {
		struct pollfd pfd[2 * CHILD_POLLFDS + 1];
		size_t n = 0;
		pfd[n].fd = sig_pipe[0];
		pfd[n].events = POLLIN;
		n++;
		size_t step_at = n;
		n += step_pollfds(&s->at.step, pfd + n);
		size_t watch_at = n;
		if (s->w.watch_live)
			n += child_pollfds(&s->w.watch, pfd + n);
		now = mono_s();
		double next = detect_deadline(&o->detect, &s->at.det);
		if (!s->w.watch_live) {
			if (s->w.next_poll < next)
				next = s->w.next_poll;
			if (s->w.next_check < next)
				next = s->w.next_check;
		}
		double wait = next - now;
		int ms = wait > 0.25 ? 250 : wait <= 0 ? 0 : (int)(wait * 1000) + 1;
		int w = s->w.watch_live ? child_wait_ms(&s->w.watch) : -1;
		if (w >= 0 && w < ms)
			ms = w;
		if (poll(pfd, n, ms) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents) {
			char b[16];
			(void)!read(sig_pipe[0], b, sizeof(b));
		}
		if (sig_seen) {
			char t[64];
			snprintf(t, sizeof(t), "signal %d (%s)", (int)sig_seen,
				 strsignal((int)sig_seen));
			sig_seen = 0;
			fault(s, SUP_EV_CANCEL, NULL, t, 0);
			break;
		}
		unsigned attempt = s->m.attempt;
		if (s->w.watch_live && child_handle(&s->w.watch, pfd + watch_at, n - watch_at))
			watch_done(s);
		if (s->m.attempt != attempt)
			continue; /* a new attempt runs: its fds are not in this poll's set */
		if (!s->at.step_live || (s->m.state != SUP_LAUNCHING && s->m.state != SUP_RUNNING))
			break;
		bool ended = step_io(s, pfd + step_at, watch_at - step_at);
		if (s->at.parsers) {
			s->ev.in_io = true;
			read_step_file(s);
			s->ev.in_io = false;
		}
		if (s->ev.nr_deferred) {
			flush_deferred(s);
			if (s->m.attempt != attempt || !s->at.step_live ||
			    (s->m.state != SUP_LAUNCHING && s->m.state != SUP_RUNNING))
				continue; /* the attempt ended (and maybe the next began) */
		}
		if (!s->at.launched_said) {
			const char *id = step_id(&s->at.step);
			if (id) {
				s->at.launched_said = true;
				feed_simple(s, SUP_EV_LAUNCHED, NULL, id);
			}
		}
		if (ended) {
			if (s->m.state != SUP_LAUNCHING && s->m.state != SUP_RUNNING)
				break;
			int code = s->at.step.child.exited ? s->at.step.child.exit_code
				   : s->at.step.child.signaled ? 128 + s->at.step.child.term_signal
							    : 1;
			struct strbuf t = STRBUF_INIT;
			child_describe(&s->at.step.child, &t);
			if (code != 0)
				say(s, "srun %s", t.buf);
			s->ev.detected = s->ev.happened = wall_seconds();
			struct sup_event e = { .kind = SUP_EV_TASK_EXIT, .code = code,
					       .text = t.buf };
			step_release(&s->at.step);
			s->at.step_live = false;
			if (code == 0)
				close_attempt(s);
			feed(s, &e);
			strbuf_release(&t);
			break;
		}
		now = mono_s();
		struct detect_result dr;
		enum detect_what dw = detect_on_tick(&o->detect, &s->at.det, now, &dr);
		if (dw == DETECT_HANG || dw == DETECT_STARTUP_TIMEOUT) {
			struct strbuf t = STRBUF_INIT;
			if (dw == DETECT_HANG)
				strbuf_addf(&t, "no new step for %.1f s after step %llu (limit %.1f s)",
					    dr.silent_s, (unsigned long long)s->at.last_step,
					    dr.limit_s);
			else
				strbuf_addf(&t, "no step %.1f s after the launch (startup timeout "
					    "%.1f s)", dr.silent_s, dr.limit_s);
			say(s, "%s: %s", dw == DETECT_HANG ? "hang" : "startup timeout", t.buf);
			fault(s, SUP_EV_HANG, NULL, t.buf, wall_seconds() - dr.silent_s);
			strbuf_release(&t);
			continue;
		}
		if (!s->w.watch_live && (now >= s->w.next_poll || now >= s->w.next_check)) {
			bool checks = now >= s->w.next_check;
			watch_start(s, checks);
			s->w.next_poll = now + o->node_poll_s;
			if (checks)
				s->w.next_check = now + o->check_interval_s;
		}
	}
	watch_stop(s);
}

/* ---- setup and the whole run ---- */

static int allocation(struct sup *s, struct strbuf *err)
{
	struct strbuf e = STRBUF_INIT;
	if (slurm_nodes_list(&s->o->cmds, s->o->nodelist, &s->alloc, &e) < 0) {
		strbuf_addf(err, "cannot read the allocation's nodes (%s): %s", s->o->nodelist,
			    e.buf);
		strbuf_release(&e);
		return -1;
	}
	strbuf_release(&e);
	for (size_t i = 0; i < s->alloc.nr; i++)
		if (!slurm_node_name_ok(s->alloc.items[i].name)) {
			strbuf_addstr(err, "the allocation holds a node name vigil will not use: '");
			strbuf_add_clean(err, s->alloc.items[i].name);
			strbuf_addch(err, '\'');
			return -1;
		}
	if (!s->alloc.nr) {
		strbuf_addstr(err, "the allocation has no nodes");
		return -1;
	}
	return 0;
}

static void final_report(struct sup *s)
{
	struct strbuf out = STRBUF_INIT;
	size_t excluded = sup_machine_count(&s->m, SUP_HOST_EXCLUDED);
	if (s->o->json) {
		struct json_writer w;
		json_writer_init(&w, &out, false);
		json_open_top(&w);
		json_key(&w, "outcome");
		json_string(&w, s->outcome ? s->outcome : "unknown");
		json_key(&w, "detail");
		json_string(&w, s->outcome_text ? s->outcome_text : "");
		json_key(&w, "exit_code");
		json_int(&w, s->exit_code);
		json_key(&w, "run_dir");
		json_string(&w, s->o->run_dir);
		json_key(&w, "attempts");
		json_int(&w, s->m.launched_any ? (long long)s->m.attempt + 1 : 0);
		json_key(&w, "restarts");
		json_int(&w, s->m.restarts);
		json_key(&w, "last_step");
		if (s->m.has_step)
			json_int(&w, (long long)s->m.last_step);
		else
			json_null(&w);
		json_key(&w, "excluded");
		json_open_array(&w);
		for (size_t i = 0; i < s->m.nr_hosts; i++) {
			if (s->m.hosts[i].role != SUP_HOST_EXCLUDED)
				continue;
			json_open_object(&w);
			json_key(&w, "host");
			json_string(&w, s->m.hosts[i].name);
			json_key(&w, "reason");
			json_string(&w, s->m.hosts[i].reason ? s->m.hosts[i].reason : "");
			json_close_object(&w);
		}
		json_close_array(&w);
		json_close_object(&w);
		json_writer_finish(&w, NULL);
		strbuf_addch(&out, '\n');
		fwrite(out.buf, 1, out.len, stdout);
	} else {
		strbuf_addf(&out, "vigil run: %s", s->outcome ? s->outcome : "unknown");
		if (s->outcome_text) {
			strbuf_addstr(&out, ": ");
			strbuf_add_clean(&out, s->outcome_text);
		}
		strbuf_addf(&out, " (%u attempt%s, %u restart%s, %zu host%s excluded; "
			    "vigil report %s)\n",
			    s->m.launched_any ? s->m.attempt + 1 : 0,
			    s->m.attempt ? "s" : "", s->m.restarts, s->m.restarts == 1 ? "" : "s",
			    excluded, excluded == 1 ? "" : "s", s->o->run_dir);
		fwrite(out.buf, 1, out.len, stdout);
	}
	fflush(stdout);
	strbuf_release(&out);
}

int supervise(const struct sup_options *o, struct strbuf *err)
{
	struct sup s;
	memset(&s, 0, sizeof(s));
	s.o = o;
	s.at.step_file_fd = -1;
	s.exit_code = 1;
	s.j.fd = -1;
	int ret = 2;
	struct journal_replay rp;
	memset(&rp, 0, sizeof(rp));

	if (make_dir(o->run_dir, err) < 0)
		return 2;
	struct strbuf jp = STRBUF_INIT;
	strbuf_addf(&jp, "%s/journal.jsonl", o->run_dir);
	if (journal_replay(jp.buf, &rp, err) < 0 || journal_open(&s.j, jp.buf, err) < 0) {
		strbuf_release(&jp);
		journal_replay_release(&rp);
		return 2;
	}
	strbuf_release(&jp);
	if (allocation(&s, err) < 0)
		goto out;
	unsigned nodes = o->nodes;
	if (!nodes) {
		if (s.alloc.nr <= o->spares) {
			strbuf_addf(err, "the allocation has %zu nodes: no room for %u spares and a "
				    "run", s.alloc.nr, o->spares);
			goto out;
		}
		nodes = (unsigned)s.alloc.nr - o->spares;
	}
	if (nodes > s.alloc.nr) {
		strbuf_addf(err, "--nodes %u is more than the allocation's %zu nodes", nodes,
			    s.alloc.nr);
		goto out;
	}
	if (o->python_stacks) {
		struct strbuf e = STRBUF_INIT;
		if (sup_pyhook_install(o->run_dir, s.at.pyhook_dir, sizeof(s.at.pyhook_dir), &e) < 0) {
			/* stacks are evidence, not the run: it goes on without the hook */
			journal_event(&s, "pyhook_failed", NULL, e.buf);
			s.at.pyhook_dir[0] = '\0';
		}
		strbuf_release(&e);
	}

	/* signals: a cancel is an event like any other */
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		strbuf_addf(err, "cannot make a pipe: %s", strerror(errno));
		goto out;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	ret = 1;
	sup_machine_init(&s.m, nodes, o->max_restarts);
	struct sup_actions a = { 0 };
	if (rp.found && rp.records) {
		say(&s, "resuming the run in %s (attempt %u, %u restarts, %zu hosts excluded)",
		    o->run_dir, rp.attempt, rp.restarts, rp.nr_excluded);
		sup_machine_resume(&s.m, &rp, &a);
	} else {
		sup_machine_start(&s.m, &a);
	}
	queue_actions(&s, &a);
	while (s.m.state != SUP_DONE && s.m.state != SUP_FAILED) {
		if (s.at.step_live && (s.m.state == SUP_LAUNCHING || s.m.state == SUP_RUNNING)) {
			run_loop(&s);
			continue;
		}
		if (sig_seen) {
			sig_seen = 0;
			fault(&s, SUP_EV_CANCEL, NULL, "signal", 0);
			continue;
		}
		/* no step and no action pending: nothing can move the machine */
		struct strbuf t = STRBUF_INIT;
		strbuf_addf(&t, "stuck in state %s with no step running", sup_state_name(s.m.state));
		journal_event(&s, "unexpected", NULL, t.buf);
		strbuf_release(&t);
		s.outcome = "failed";
		break;
	}
	ret = s.exit_code;
	final_report(&s);
out:
	if (s.at.step_live) {
		struct strbuf e = STRBUF_INIT;
		step_stop(&s.at.step, &o->cmds, o->grace_ms, &e);
		step_release(&s.at.step);
		strbuf_release(&e);
	}
	close_attempt(&s);
	watch_stop(&s);
	journal_close(&s.j);
	journal_replay_release(&rp);
	sup_machine_release(&s.m);
	slurm_nodes_release(&s.alloc);
	for (size_t i = 0; i < s.w.nr_wh; i++)
		free(s.w.wh[i].name);
	free(s.w.wh);
	free(s.ev.deferred);
	strlist_release(&s.w.no_agent);
	free(s.outcome_text);
	if (sig_pipe[0] >= 0) {
		close(sig_pipe[0]);
		close(sig_pipe[1]);
		sig_pipe[0] = sig_pipe[1] = -1;
	}
	return ret;
}
