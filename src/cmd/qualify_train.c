/*
 * qualify_train.c: the train stage of 'vigil qualify' (docs/QUALIFY.md). 'vigil run -- CMD'
 * over the allocation for its share, SIGTERM at the end (a run cancelled is how the stage
 * ends), then the step rows of its journal read by 'vigil diagnose steps'. With
 * --train-groups, half of the share goes to the same command on each group of nodes at once
 * ('vigil run --hosts GROUP'), so that a slow group (a leaf switch, a rack) shows in its own
 * step time: each node's train_step_s is its group's, ranked and judged for outliers like any
 * figure. A host that vigil run excluded fails the stage, with vigil run's reason.
 */
#include "cmd.h"
#include "qualify_int.h"
#include "../lib/run.h"
#include "../qualify/train.h"
#include "../slurm/fleet_step.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One 'vigil run' of the stage: the allocation's (g NULL) or a group's. */
struct trun {
	const struct q_group *g;
	struct child ch;
	struct strlist argv, words;
	struct strbuf dir, err, why_not;
	bool live;
	struct json_value *out;   /* vigil run --json's object, NULL when it gave none */
	struct q_train tr;
};

static void trun_start(struct qrun *r, struct trun *t, const struct q_group *g, size_t k)
{
	memset(t, 0, sizeof(*t));
	t->g = g;
	child_init(&t->ch);
	if (g)
		strbuf_addf(&t->dir, "%s/train-group-%zu", r->dir.buf, k + 1);
	else
		strbuf_addf(&t->dir, "%s/train", r->dir.buf);
	/* a run directory of an earlier try (a stage cut short, then --resume): set aside, so
	 * that this run starts afresh rather than vigil run resuming (or only reporting) that
	 * one, and the steps and hosts it tells are this run's */
	struct stat st;
	if (lstat(t->dir.buf, &st) == 0) {
		struct strbuf old = STRBUF_INIT;
		for (unsigned i = 1; i < 1000; i++) {
			strbuf_reset(&old);
			strbuf_addf(&old, "%s.%u", t->dir.buf, i);
			if (lstat(old.buf, &st) != 0 && errno == ENOENT) {
				if (rename(t->dir.buf, old.buf) == 0)
					qualify_say("train: an earlier run's directory kept as %s",
						    old.buf);
				break;
			}
		}
		strbuf_release(&old);
	}
	strlist_add(&t->argv, r->self);
	strlist_add(&t->argv, "run");
	strlist_add(&t->argv, "--run-dir");
	strlist_add(&t->argv, t->dir.buf);
	strlist_add(&t->argv, "--json");
	for (size_t i = 0; i < r->a->sets.nr; i++) {
		strlist_add(&t->argv, "-c");
		strlist_add(&t->argv, r->a->sets.items[i]);
	}
	if (r->a->config) {
		strlist_add(&t->argv, "--config");
		strlist_add(&t->argv, r->a->config);
	}
	if (g) {
		/* the group's hosts, all of them (no spares), and a rendezvous port of its own
		 * (groups may share a host's network namespace: containers, a test bed) */
		struct strbuf arg = STRBUF_INIT;
		fleet_hostlist((const char *const *)g->hosts.items, g->hosts.nr, &arg);
		strlist_add(&t->argv, "--hosts");
		strlist_add(&t->argv, arg.buf);
		strbuf_reset(&arg);
		strbuf_addf(&arg, "%zu", g->hosts.nr);
		strlist_add(&t->argv, "--nodes");
		strlist_add(&t->argv, arg.buf);
		strlist_add(&t->argv, "--spares");
		strlist_add(&t->argv, "0");
		/* 16 apart: vigil run's attempt a uses its port + a, so the groups' ports meet only
		 * after 16 restarts; kept within run.master-port's range */
		unsigned p = r->master_port + 16 * (unsigned)(k + 1);
		if (p > 63535)
			p -= 63535 - 1024 + 1;
		strbuf_reset(&arg);
		strbuf_addf(&arg, "run.master-port=%u", p);
		strlist_add(&t->argv, "-c");
		strlist_add(&t->argv, arg.buf);
		strbuf_release(&arg);
	}
	strlist_add(&t->argv, "--");
	strlist_split(&t->words, r->a->train, " \t");
	for (size_t i = 0; i < t->words.nr; i++)
		strlist_add(&t->argv, t->words.items[i]);
	t->ch.argv = (const char *const *)t->argv.items;
	t->ch.out_cap = 1u << 20;
	t->live = child_start(&t->ch, &t->err) == 0;
}

/* Every run to its end: SIGTERM to all at the share's 85 % (or on a stop), SIGKILL at its end. */
static void trun_wait(struct trun *t, size_t n, double share)
{
	uint64_t end = mono_ms() + (uint64_t)(share * 1000 * 0.85), hard = 0;
	for (;;) {
		size_t alive = 0;
		for (size_t i = 0; i < n; i++) {
			if (!t[i].live)
				continue;
			if (child_poll(&t[i].ch, alive ? 0 : 200)) {
				child_finish(&t[i].ch);
				t[i].live = false;
			} else {
				alive++;
			}
		}
		if (!alive)
			return;
		uint64_t now = mono_ms();
		int sig = 0;
		if (!hard && (now >= end || qualify_stop)) {
			sig = SIGTERM; /* vigil run stops its job and writes its end */
			hard = now + (uint64_t)(share * 1000 * 0.15);
		} else if (hard && now >= hard) {
			sig = SIGKILL;
		}
		for (size_t i = 0; sig && i < n; i++)
			if (t[i].live)
				child_kill(&t[i].ch, sig);
	}
}

/* Its outcome (vigil run's JSON) and figures (vigil diagnose steps on its journal). */
static void trun_read(struct qrun *r, struct trun *t)
{
	if (t->ch.out.len)
		t->out = json_parse(t->ch.out.buf, t->ch.out.len, NULL);
	struct strbuf jr = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&jr, "%s/journal.jsonl", t->dir.buf);
	const char *dargv[] = { r->self, "diagnose", "steps", jr.buf, "--json", NULL };
	struct child d;
	child_init(&d);
	d.argv = dargv;
	d.timeout_ms = 60000;
	d.out_cap = 8u << 20;
	struct json_value *steps = NULL;
	if (child_run(&d, &err) == 0)
		steps = json_parse(d.out.buf, d.out.len, NULL);
	/* what diagnose steps said when it could not tell: "cannot tell from 'FILE': WHY" */
	const char *said = strstr(d.err.buf ? d.err.buf : "", "': ");
	if (d.err.len) {
		strbuf_addstr(&t->why_not, said ? said + 3 : d.err.buf);
		strbuf_rtrim(&t->why_not);
	}
	q_train_read(steps, &t->tr);
	json_free(steps);
	child_release(&d);
	strbuf_release(&jr);
	strbuf_release(&err);
}

static void trun_release(struct trun *t)
{
	if (t->live) {
		child_kill(&t->ch, SIGKILL);
		child_finish(&t->ch);
	}
	child_release(&t->ch);
	strlist_release(&t->argv);
	strlist_release(&t->words);
	strbuf_release(&t->dir);
	strbuf_release(&t->err);
	strbuf_release(&t->why_not);
	json_free(t->out);
}

static const char *outcome_of(const struct trun *t)
{
	return t->out ? json_get_string(t->out, "outcome") : NULL;
}

/* The hosts vigil run excluded fail the stage, with its reason (prefix: the group's). */
static void fail_excluded(struct q_card *c, const struct trun *t, const char *prefix)
{
	const struct json_value *ex = t->out ? json_get(t->out, "excluded") : NULL;
	struct strbuf why = STRBUF_INIT;
	for (size_t i = 0; ex && ex->type == JSON_ARRAY && i < ex->nr; i++) {
		struct q_node *n = q_card_node(c, str_or(json_get_string(ex->items[i], "host"), ""));
		if (!n || n->st[Q_TRAIN] == Q_FAILED)
			continue;
		strbuf_reset(&why);
		strbuf_addf(&why, "%s%s", prefix,
			    str_or(json_get_string(ex->items[i], "reason"), "excluded by vigil run"));
		q_node_set(n, Q_TRAIN, Q_FAILED, why.buf, NULL);
	}
	strbuf_release(&why);
}

static bool ran_on(const struct trun *t, const char *host)
{
	const struct json_value *a = t->out ? json_get(t->out, "ran_on") : NULL;
	for (size_t i = 0; a && a->type == JSON_ARRAY && i < a->nr; i++)
		if (a->items[i]->type == JSON_STRING && !strcmp(a->items[i]->string, host))
			return true;
	return false;
}

/* Why a run trained nobody, into *out (empty when it launched an attempt): it could not be
 * started; it ended before its report (a usage or set-up error, exit 2: its own last words);
 * it launched no attempt (stopped in the preflight, too few healthy hosts: nobody was left out
 * of a run, there was none). */
static void trained_nobody(const struct trun *t, struct strbuf *out)
{
	double attempts = 0;
	if (t->err.len) {
		strbuf_addstr(out, t->err.buf);
	} else if (!t->out || !json_get(t->out, "ran_on")) {
		strbuf_addstr(out, "vigil run gave no report");
		struct strbuf said = STRBUF_INIT;
		strbuf_add(&said, t->ch.err.buf ? t->ch.err.buf : "", t->ch.err.len);
		strbuf_trim(&said);
		const char *last = strrchr(said.buf ? said.buf : "", '\n');
		if (said.len) {
			strbuf_addstr(out, ": ");
			strbuf_add_excerpt(out, last ? last + 1 : said.buf, 300);
		}
		strbuf_release(&said);
	} else if (!json_get_number(t->out, "attempts", &attempts) || attempts < 1) {
		strbuf_addstr(out, "vigil run launched no attempt: ");
		strbuf_add_excerpt(out, str_or(json_get_string(t->out, "detail"),
					       str_or(outcome_of(t), "no outcome")), 300);
	}
}

/* The allocation's run: a node it ran on passed (steps timed) or is unknown; a node it never
 * ran on (beyond run.nodes, a spare never used) was not trained, and says so. */
static void apply_whole(struct q_card *c, const struct trun *t)
{
	fail_excluded(c, t, "");
	struct strbuf none = STRBUF_INIT;
	trained_nobody(t, &none);
	for (size_t i = 0; i < c->nr; i++) {
		struct q_node *n = &c->nodes[i];
		if (n->st[Q_TRAIN] != Q_NOT_RUN)
			continue;
		if (none.len)
			q_node_set(n, Q_TRAIN, Q_UNKNOWN, none.buf, NULL);
		else if (!ran_on(t, n->name))
			q_node_set(n, Q_TRAIN, Q_SKIPPED, "not in the run (run.nodes, or a spare)",
				   NULL);
		else
			q_node_set(n, Q_TRAIN, t->tr.have_st ? Q_PASSED : Q_UNKNOWN,
				   t->tr.have_st ? "trained"
				   : t->why_not.len ? "no step time told" : "no step seen",
				   NULL);
	}
	strbuf_release(&none);
}

/* A group's run: its step time becomes its nodes' train_step_s (their train report's
 * figures); a group that told none leaves its nodes unknown, with why. */
static void apply_group(struct q_card *c, const struct trun *t)
{
	struct strbuf pre = STRBUF_INIT, why = STRBUF_INIT, rep = STRBUF_INIT;
	strbuf_addf(&pre, "group %s: ", t->g->name);
	fail_excluded(c, t, pre.buf);
	for (size_t i = 0; i < t->g->hosts.nr; i++) {
		struct q_node *n = q_card_node(c, t->g->hosts.items[i]);
		if (!n || n->st[Q_TRAIN] == Q_FAILED)
			continue;
		if (!t->tr.have_st || !ran_on(t, n->name)) {
			strbuf_reset(&why);
			strbuf_addstr(&why, pre.buf);
			size_t at = why.len;
			trained_nobody(t, &why);
			if (why.len == at)
				strbuf_addstr(&why, !ran_on(t, n->name) ? "the node did not run in it"
						    : t->why_not.len ? t->why_not.buf : "no step seen");
			q_node_set(n, Q_TRAIN, Q_UNKNOWN, why.buf, NULL);
			continue;
		}
		strbuf_reset(&rep);
		strbuf_addstr(&rep, "{\"group\":");
		json_quote(&rep, t->g->name, strlen(t->g->name));
		strbuf_addf(&rep, ",\"figures\":{\"step_time_s\":%.6g", t->tr.step_time_s);
		if (t->tr.have_tok)
			strbuf_addf(&rep, ",\"tokens_per_s\":%.6g", t->tr.tokens_per_s);
		strbuf_addstr(&rep, "}}");
		char *reason = xstrdup(n->reason[Q_TRAIN] ? n->reason[Q_TRAIN] : "trained");
		q_node_set(n, Q_TRAIN, n->st[Q_TRAIN] == Q_SKIPPED ? Q_PASSED : n->st[Q_TRAIN],
			   n->st[Q_TRAIN] == Q_SKIPPED ? "trained in its group" : reason,
			   json_parse(rep.buf, rep.len, NULL));
		free(reason);
	}
	strbuf_release(&pre);
	strbuf_release(&why);
	strbuf_release(&rep);
}

/* The groups of the nodes left (not failed so far): --train-groups N or switch. -1 with *err
 * when they cannot be told. */
static int form_groups(struct qrun *r, struct q_groups *g, struct strbuf *err)
{
	struct q_card *c = &r->card;
	struct strlist ok = STRLIST_INIT, left = STRLIST_INIT;
	struct strbuf text = STRBUF_INIT;
	int ret = -1;
	for (size_t i = 0; i < c->nr; i++)
		if (q_node_status(c, &c->nodes[i]) != Q_FAILED && c->nodes[i].st[Q_TRAIN] != Q_FAILED)
			strlist_add(&ok, c->nodes[i].name);
	memset(g, 0, sizeof(*g));
	if (starts_with(r->a->train_groups, "size=")) {
		q_groups_of_size((const char *const *)ok.items, ok.nr,
				 (unsigned)strtoul(r->a->train_groups + 5, NULL, 10), g, &left);
	} else if (strcmp(r->a->train_groups, "switch")) {
		q_groups_split((const char *const *)ok.items, ok.nr,
			       (unsigned)strtoul(r->a->train_groups, NULL, 10), g);
	} else {
		/* Slurm cuts each line to SLURM_TOPO_LEN bytes, Nodes= first */
		unsetenv("SLURM_TOPO_LEN");
		if (slurm_topology(&r->cmds, &text, err) < 0)
			goto out;
		if (!text.len) {
			strbuf_addstr(err, "Slurm has no topology (scontrol show topology printed "
					   "nothing; TopologyPlugin in slurm.conf)");
			goto out;
		}
		if (q_groups_topology(text.buf, (const char *const *)ok.items, ok.nr, g, &left,
				      err) < 0)
			goto out;
	}
	if (left.nr)
		qualify_say("train: %zu node%s in no group (%s: %s%s)", left.nr,
			    left.nr == 1 ? "" : "s",
			    starts_with(r->a->train_groups, "size=") ? "left over"
								   : "under no leaf switch",
			    left.items[0], left.nr > 1 ? ", ..." : "");
	if (g->nr < 2) {
		strbuf_addf(err, "%s", g->nr ? "the nodes left make one group only"
				       : ok.nr ? "too few nodes left for a group"
					       : "no node left to group");
		q_groups_release(g);
		goto out;
	}
	ret = 0;
out:
	strlist_release(&ok);
	strlist_release(&left);
	strbuf_release(&text);
	return ret;
}

void qualify_train(struct qrun *r, double share)
{
	struct q_card *c = &r->card;
	bool grouped = r->a->train_groups != NULL;
	struct trun whole, *gr = NULL;
	struct q_groups groups = { 0 };
	struct strbuf t = STRBUF_INIT, err = STRBUF_INIT, gwhy = STRBUF_INIT;
	size_t ng = 0;

	trun_start(r, &whole, NULL, 0);
	if (!whole.live) {
		c->stages[Q_TRAIN].st = Q_UNKNOWN;
		free(c->stages[Q_TRAIN].reason);
		c->stages[Q_TRAIN].reason = strbuf_detach(&whole.err, NULL);
		goto out;
	}
	uint64_t t0 = mono_ms();
	trun_wait(&whole, 1, grouped ? share / 2 : share);
	trun_read(r, &whole);
	apply_whole(c, &whole);

	if (grouped && !qualify_stop) {
		double left = share - (double)(mono_ms() - t0) / 1000.0;
		if (form_groups(r, &groups, &gwhy) == 0) {
			ng = groups.nr;
			gr = xcalloc(ng, sizeof(*gr));
			qualify_say("train: the same job on %zu groups at once, %.0f s", ng, left);
			for (size_t k = 0; k < ng; k++)
				trun_start(r, &gr[k], &groups.items[k], k);
			trun_wait(gr, ng, left > 10 ? left : 10);
			for (size_t k = 0; k < ng; k++)
				if (!gr[k].err.len) /* else it never started: that is its reason */
					trun_read(r, &gr[k]);
			for (size_t k = 0; k < ng; k++) {
				apply_group(c, &gr[k]);
				struct strbuf line = STRBUF_INIT;
				q_train_reason(&gr[k].tr, false, gr[k].why_not.buf, &line);
				qualify_say("train: group %s (%zu node%s, %s%s): %s", groups.items[k].name,
					    groups.items[k].hosts.nr,
					    groups.items[k].hosts.nr == 1 ? "" : "s",
					    groups.items[k].hosts.items[0],
					    groups.items[k].hosts.nr > 1 ? ", ..." : "", line.buf);
				strbuf_release(&line);
			}
		} else {
			qualify_say("train: no groups: %s", gwhy.buf);
		}
	} else if (grouped) {
		strbuf_addstr(&gwhy, "stopped before the groups ran");
	}

	/* the card's train object: the allocation's figures, then the groups' */
	q_train_json(&whole.tr, outcome_of(&whole), &t);
	if (grouped) {
		strbuf_setlen(&t, t.len - 1);
		if (ng) {
			strbuf_addstr(&t, ",\"groups\":[");
			for (size_t k = 0; k < ng; k++) {
				if (k)
					strbuf_addch(&t, ',');
				q_train_group_json(&groups.items[k], &gr[k].tr,
						   gr[k].out ? outcome_of(&gr[k])
							     : gr[k].err.len ? gr[k].err.buf : NULL,
						   &t);
			}
			strbuf_addstr(&t, "]}");
		} else {
			strbuf_addstr(&t, ",\"groups_not_run\":");
			json_quote(&t, gwhy.buf, gwhy.len);
			strbuf_addch(&t, '}');
		}
	}
	json_free(c->train);
	c->train = json_parse(t.buf, t.len, NULL);

	size_t bad = 0, unknown = 0;
	for (size_t i = 0; i < c->nr; i++) {
		bad += c->nodes[i].st[Q_TRAIN] == Q_FAILED;
		unknown += c->nodes[i].st[Q_TRAIN] == Q_UNKNOWN;
	}
	c->stages[Q_TRAIN].st = bad ? Q_FAILED : whole.tr.have_st && !unknown ? Q_PASSED : Q_UNKNOWN;
	q_train_reason(&whole.tr, bad, whole.why_not.buf, &err);
	if (ng) {
		strbuf_addstr(&err, "; groups:");
		for (size_t k = 0; k < ng && k < 8; k++) {
			strbuf_addf(&err, " %s ", groups.items[k].name);
			if (gr[k].tr.have_st)
				strbuf_addf(&err, "%.3g s", gr[k].tr.step_time_s);
			else
				strbuf_addstr(&err, "no step time");
			if (k + 1 < ng && k < 7)
				strbuf_addch(&err, ',');
		}
		if (ng > 8)
			strbuf_addstr(&err, ", ...");
	} else if (grouped) {
		strbuf_addf(&err, "; no groups: %s", gwhy.buf);
	}
	free(c->stages[Q_TRAIN].reason);
	c->stages[Q_TRAIN].reason = strbuf_detach(&err, NULL);
out:
	trun_release(&whole);
	for (size_t k = 0; k < ng; k++)
		trun_release(&gr[k]);
	free(gr);
	q_groups_release(&groups);
	strbuf_release(&t);
	strbuf_release(&err);
	strbuf_release(&gwhy);
}
