/*
 * stage.c: running qualify's stages on the allocation's nodes. A per-node stage is one round of
 * the fleet engine (src/slurm/fleet.c: one srun step over the nodes, answers matched to nodes by
 * srun's launch lines and the report's host; an unreachable node is unknown by name, never
 * passed). The fabric stage runs NCCL across growing sets of nodes as one srun step each, one
 * task a GPU, and keeps rank 0's report. Nothing here prints: the caller gets each stage's
 * results in the card and its own progress from the callback.
 */
#include "stage.h"
#include "../lib/run.h"
#include "../lib/run_group.h"
#include "../lib/util.h"
#include "../slurm/fleet_step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static enum q_status from_fleet(enum fleet_verdict v)
{
	return v == FLEET_HEALTHY ? Q_PASSED : v == FLEET_UNHEALTHY ? Q_FAILED : Q_UNKNOWN;
}

/* The stage's status and one line, from its nodes. */
static void summarize(struct q_card *c, enum q_stage s)
{
	size_t np = 0, nf = 0, nu = 0, ran = 0;
	const struct q_node *first_bad = NULL;
	for (size_t i = 0; i < c->nr; i++) {
		const struct q_node *n = &c->nodes[i];
		if (n->st[s] == Q_NOT_RUN || n->st[s] == Q_SKIPPED)
			continue;
		ran++;
		np += n->st[s] == Q_PASSED;
		nf += n->st[s] == Q_FAILED;
		nu += n->st[s] == Q_UNKNOWN;
		if (n->st[s] == Q_FAILED && (!first_bad || first_bad->st[s] != Q_FAILED))
			first_bad = n;
		else if (n->st[s] == Q_UNKNOWN && !first_bad)
			first_bad = n;
	}
	struct q_stage_result *r = &c->stages[s];
	struct strbuf sb = STRBUF_INIT;
	r->st = nf ? Q_FAILED : nu || !ran ? Q_UNKNOWN : Q_PASSED;
	strbuf_addf(&sb, "%zu of %zu nodes passed", np, ran);
	if (first_bad)
		strbuf_addf(&sb, "; %s: %s", first_bad->name, first_bad->reason[s]);
	free(r->reason);
	r->reason = strbuf_detach(&sb, NULL);
}

/* rank of a status for "worse": failed > unknown > passed */
static int badness(enum q_status st)
{
	return st == Q_FAILED ? 2 : st == Q_PASSED || st == Q_SKIPPED ? 0 : 1;
}

/* A later round of the same stage (the node stage is three: stress gpu, net pairs, net nccl):
 * its checks join the node's report, and the worse status and its reason stay. */
void q_node_merge(struct q_node *n, enum q_stage s, enum q_status st, const char *reason,
		  struct json_value *rep)
{
	if (n->st[s] == Q_NOT_RUN) {
		q_node_set(n, s, st, reason, rep);
		return;
	}
	struct json_value *have = n->report[s];
	const struct json_value *more = rep ? json_get(rep, "checks") : NULL;
	struct json_value *into = NULL;
	for (size_t i = 0; have && have->type == JSON_OBJECT && i < have->nr; i++)
		if (!strcmp(have->keys[i], "checks") && have->items[i]->type == JSON_ARRAY)
			into = have->items[i];
	if (into && more && more->type == JSON_ARRAY) {
		/* move the new report's checks over; the new report keeps empty slots */
		struct json_value *m = (struct json_value *)more;
		into->items = xrealloc(into->items, (into->nr + m->nr + 1) * sizeof(*into->items));
		for (size_t i = 0; i < m->nr; i++)
			into->items[into->nr++] = m->items[i];
		into->alloc = into->nr;
		m->nr = 0;
	} else if (!have && rep) {
		n->report[s] = rep;
		rep = NULL;
	}
	if (badness(st) > badness(n->st[s])) {
		n->st[s] = st;
		free(n->reason[s]);
		n->reason[s] = xstrdup(reason ? reason : "");
	}
	json_free(rep);
}

int q_stage_fleet(struct q_card *c, enum q_stage s, const struct q_reach *reach,
		  const char *const *args, size_t nr_args, unsigned timeout_ms, struct strbuf *err)
{
	struct slurm_nodes list = { 0 };
	struct fleet f = { 0 };
	struct strlist names = STRLIST_INIT, remote = STRLIST_INIT;
	for (size_t i = 0; i < c->nr; i++)
		strlist_add(&names, c->nodes[i].name);
	struct strbuf hl = STRBUF_INIT;
	fleet_hostlist((const char *const *)names.items, names.nr, &hl);
	int ret = -1;
	if (slurm_nodes_list(reach->cmds, hl.buf, &list, err) < 0)
		goto out;
	if (reach->stop && *reach->stop) {
		error_set(err, "stopped by a signal");
		goto out;
	}
	fleet_rows(&f, &list, NULL);
	for (size_t i = 0; i < f.nr; i++) {
		/* A node of our allocation that was drained (by qualify itself, an earlier round or
		 * someone else) still runs our steps until the job ends: it is tested like the others.
		 * Down, not responding, rebooting or powered off: no step can run there. */
		struct fleet_row *r = &f.rows[i];
		unsigned other = r->node.flags & ~(unsigned)NODE_DRAIN;
		if (!r->run && slurm_node_name_ok(r->node.name) && (r->node.flags & NODE_DRAIN) &&
		    !(other & (NODE_DOWN | NODE_NOT_RESPONDING | NODE_MAINT | NODE_REBOOT |
			       NODE_POWER | NODE_FUTURE | NODE_FAIL | NODE_UNKNOWN)))
			r->run = true;
	}
	strlist_add(&remote, reach->vigil);
	for (size_t i = 0; i < nr_args; i++)
		strlist_add(&remote, args[i]);
	struct fleet_plan plan = {
		.srun_args = reach->srun_args,
		.nr_srun_args = reach->nr_srun_args,
		.remote = (const char *const *)remote.items,
		.nr_remote = remote.nr,
		.timeout_ms = timeout_ms,
		.parallel = 0,
		.one_step = reach->one_step,
		.stop = reach->stop,
	};
	fleet_run(&f, &plan);
	bool *seen = xcalloc(c->nr + 1, sizeof(*seen));
	for (size_t i = 0; i < f.nr; i++) {
		struct fleet_row *r = &f.rows[i];
		struct q_node *n = q_card_node(c, r->node.name);
		if (!n)
			continue;
		seen[n - c->nodes] = true;
		struct json_value *rep =
			r->report_json ? json_parse(r->report_json, strlen(r->report_json), NULL)
				       : NULL;
		q_node_merge(n, s, from_fleet(r->verdict), r->reason, rep);
	}
	/* a node of the card that Slurm did not list this round is not one to trust */
	for (size_t i = 0; i < c->nr; i++)
		if (!seen[i])
			q_node_merge(&c->nodes[i], s, Q_UNKNOWN, "Slurm does not list this node", NULL);
	free(seen);
	if (f.note)
		strbuf_addstr(err, f.note);
	summarize(c, s);
	ret = 0;
out:
	fleet_release(&f);
	slurm_nodes_release(&list);
	strlist_release(&names);
	strlist_release(&remote);
	strbuf_release(&hl);
	return ret;
}

/* ---- the fabric stage: NCCL across nodes ---- */

struct nccl_ctx {
	struct fleet_split split;
	uint64_t t0;
};

static void nccl_output(void *arg, int stream, const char *data, size_t len)
{
	struct nccl_ctx *x = arg;
	fleet_split_feed(&x->split, stream, data, len, mono_ms() - x->t0);
}

/* busbw at the largest size of a rank's report; false when it has none */
static bool largest_busbw(const struct json_value *rep, double *bytes, double *bw)
{
	const struct json_value *checks = json_get(rep, "checks");
	*bytes = -1;
	for (size_t i = 0; checks && checks->type == JSON_ARRAY && i < checks->nr; i++) {
		const struct json_value *fs = json_get(checks->items[i], "findings");
		for (size_t j = 0; fs && fs->type == JSON_ARRAY && j < fs->nr; j++) {
			const struct json_value *d = json_get(fs->items[j], "details");
			double b, v;
			if (d && json_get_number(d, "bytes", &b) && json_get_number(d, "busbw", &v) &&
			    b >= *bytes) {
				*bytes = b;
				*bw = v;
			}
		}
	}
	return *bytes > 0;
}

void q_fabric_point(struct q_card *c, const struct q_reach *reach, const char *op,
		    const char *const *nodes, size_t k, unsigned gpus_per_node,
		    const char *rendezvous, const char *const *args, size_t nr_args,
		    unsigned timeout_ms)
{
	struct q_nccl_point *p = q_card_add_nccl(c);
	struct strbuf a_nodes = STRBUF_INIT, a_tasks = STRBUF_INIT, a_list = STRBUF_INIT;
	struct strbuf hl = STRBUF_INIT, a_per = STRBUF_INIT, err = STRBUF_INIT;
	struct strbuf why = STRBUF_INIT;
	strlcpy_v(p->op, op, sizeof(p->op));
	p->nodes = (unsigned)k;
	p->gpus = (unsigned)k * gpus_per_node;
	p->expected_gbps = reach->expected_busbw_gbps;
	fleet_hostlist(nodes, k, &hl);
	strbuf_addf(&a_nodes, "--nodes=%zu", k);
	strbuf_addf(&a_tasks, "--ntasks=%u", p->gpus);
	strbuf_addf(&a_per, "--ntasks-per-node=%u", gpus_per_node);
	strbuf_addf(&a_list, "--nodelist=%s", hl.buf);
	size_t max = reach->nr_srun_args + nr_args + 16, n = 0;
	const char **argv = xcalloc(max, sizeof(*argv));
	argv[n++] = reach->srun_args[0];
	argv[n++] = a_nodes.buf;
	argv[n++] = a_tasks.buf;
	argv[n++] = a_per.buf;
	argv[n++] = a_list.buf;
	argv[n++] = "--label";
	argv[n++] = reach->vigil;
	argv[n++] = "net";
	argv[n++] = "nccl";
	argv[n++] = "--json";
	argv[n++] = "--op";
	argv[n++] = op;
	argv[n++] = "--rendezvous";
	argv[n++] = rendezvous;
	for (size_t i = 0; i < nr_args; i++)
		argv[n++] = args[i];
	argv[n] = NULL;

	struct nccl_ctx x;
	struct child ch;
	if (reach->stop && *reach->stop) {
		p->st = Q_NOT_RUN;
		strbuf_addstr(&why, "stopped by a signal");
		goto out;
	}
	fleet_split_init(&x.split, p->gpus, 4u << 20);
	x.t0 = mono_ms();
	child_init(&ch);
	ch.argv = argv;
	ch.timeout_ms = timeout_ms;
	ch.timeout_name = "the fabric stage's share of --budget";
	ch.on_output = nccl_output;
	ch.on_output_arg = &x;
	if (child_run(&ch, &err) < 0) {
		p->st = Q_UNKNOWN;
		strbuf_addf(&why, "cannot run srun: %s", err.buf);
		goto done;
	}
	fleet_split_finish(&x.split, mono_ms() - x.t0);
	struct json_value *rep = x.split.nr_tasks && x.split.tasks[0].out.len
					 ? json_parse(x.split.tasks[0].out.buf,
						      x.split.tasks[0].out.len, NULL)
					 : NULL;
	const char *verdict = rep ? json_get_string(rep, "verdict") : NULL;
	const char *reason = rep ? json_get_string(rep, "reason") : NULL;
	if (ch.timed_out) {
		p->st = Q_UNKNOWN;
		strbuf_addf(&why, "no result within %.0f s", timeout_ms / 1000.0);
	} else if (!verdict || !reason) {
		p->st = Q_UNKNOWN;
		strbuf_addstr(&why, "rank 0 gave no report");
		if (x.split.srun_error.len) {
			strbuf_addstr(&why, ": ");
			strbuf_add_excerpt(&why, x.split.srun_error.buf, 160);
		}
	} else {
		p->st = !strcmp(verdict, "healthy")     ? Q_PASSED
			: !strcmp(verdict, "unhealthy") ? Q_FAILED
							: Q_UNKNOWN;
		strbuf_add_excerpt(&why, reason, 200);
		double bytes = 0, bw = 0;
		if (largest_busbw(rep, &bytes, &bw)) {
			p->bytes = bytes;
			p->busbw_gbps = bw;
		}
		if (p->st == Q_PASSED && p->expected_gbps > 0 &&
		    p->busbw_gbps < reach->busbw_floor * p->expected_gbps) {
			p->st = Q_FAILED;
			strbuf_reset(&why);
			strbuf_addf(&why, "busbw %.1f GB/s is below %.0f %% of the %.1f GB/s expected",
				    p->busbw_gbps, 100 * reach->busbw_floor, p->expected_gbps);
		}
	}
	json_free(rep);
done:
	fleet_split_release(&x.split);
	child_release(&ch);
out:
	p->reason = strbuf_detach(&why, NULL);
	free(argv);
	strbuf_release(&a_nodes);
	strbuf_release(&a_tasks);
	strbuf_release(&a_list);
	strbuf_release(&a_per);
	strbuf_release(&hl);
	strbuf_release(&err);
}

void q_fabric_summarize(struct q_card *c)
{
	struct q_stage_result *r = &c->stages[Q_FABRIC];
	size_t bad = 0, unknown = 0, ib_bad = 0, ib_unknown = 0;
	const struct q_node *ib_first = NULL;
	for (size_t i = 0; i < c->nr; i++) {
		const struct q_node *n = &c->nodes[i];
		if (n->st[Q_FABRIC] == Q_FAILED || n->st[Q_FABRIC] == Q_UNKNOWN) {
			ib_bad += n->st[Q_FABRIC] == Q_FAILED;
			ib_unknown += n->st[Q_FABRIC] == Q_UNKNOWN;
			if (!ib_first || (n->st[Q_FABRIC] == Q_FAILED && ib_first->st[Q_FABRIC] != Q_FAILED))
				ib_first = n;
		}
	}
	const struct q_nccl_point *first = NULL, *largest = NULL;
	for (size_t i = 0; i < c->nr_nccl; i++) {
		const struct q_nccl_point *p = &c->nccl[i];
		bad += p->st == Q_FAILED;
		unknown += p->st != Q_FAILED && p->st != Q_PASSED;
		if (p->st != Q_PASSED && !first)
			first = p;
		if (p->st == Q_PASSED && (!largest || p->nodes >= largest->nodes))
			largest = p;
	}
	struct strbuf sb = STRBUF_INIT;
	r->st = bad || ib_bad		       ? Q_FAILED
		: unknown || ib_unknown || (!c->nr_nccl && !c->nr_ib) ? Q_UNKNOWN
								  : Q_PASSED;
	if (ib_first && (ib_bad || !bad))
		strbuf_addf(&sb, "%s: %s", ib_first->name, ib_first->reason[Q_FABRIC]);
	else if (first)
		strbuf_addf(&sb, "%s at %u nodes: %s", first->op, first->nodes, first->reason);
	else if (largest)
		strbuf_addf(&sb, "%s busbw %.1f GB/s at %u nodes%s", largest->op,
			    largest->busbw_gbps, largest->nodes, c->nr_ib ? "; IB pairs passed" : "");
	else if (c->nr_ib)
		strbuf_addstr(&sb, "IB pairs passed");
	else
		strbuf_addstr(&sb, "nothing measured");
	free(r->reason);
	r->reason = strbuf_detach(&sb, NULL);
	/* a failed point is the fabric's, not one node's: every node in it is told, none
	 * drained on this alone (which link is weak is the IB pairs' and burn-in's to say) */
	for (size_t i = 0; i < c->nr; i++) {
		struct q_node *n = &c->nodes[i];
		if (n->st[Q_FABRIC] == Q_NOT_RUN)
			q_node_set(n, Q_FABRIC, r->st == Q_FAILED ? Q_UNKNOWN : r->st, r->reason,
				   NULL);
	}
}

unsigned q_gpus_per_node(const struct q_card *c)
{
	unsigned least = 0;
	bool any = false;
	for (size_t i = 0; i < c->nr; i++) {
		const struct json_value *rep = c->nodes[i].report[Q_NODE];
		const struct json_value *checks = rep ? json_get(rep, "checks") : NULL;
		struct strlist devs = STRLIST_INIT;
		for (size_t k = 0; checks && checks->type == JSON_ARRAY && k < checks->nr; k++) {
			const struct json_value *fs = json_get(checks->items[k], "findings");
			for (size_t j = 0; fs && fs->type == JSON_ARRAY && j < fs->nr; j++) {
				const struct json_value *d = json_get(fs->items[j], "details");
				const char *dev = json_get_string(fs->items[j], "device");
				if (d && json_get_string(d, "dtype") && dev && *dev &&
				    !strlist_has(&devs, dev))
					strlist_add(&devs, dev);
			}
		}
		if (rep && (!any || devs.nr < least))
			least = (unsigned)devs.nr;
		any |= rep != NULL;
		strlist_release(&devs);
	}
	return least;
}

/* ---- the fabric stage: InfiniBand pairs ---- */

bool q_nodes_have_ib(const struct q_card *c, const char *const *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct q_node *x = q_card_node((struct q_card *)c, nodes[i]);
		const struct json_value *rep = x ? x->report[Q_PASSIVE] : NULL;
		const struct json_value *checks = rep ? json_get(rep, "checks") : NULL;
		double active = 0;
		for (size_t k = 0; checks && checks->type == JSON_ARRAY && k < checks->nr; k++) {
			const char *name = json_get_string(checks->items[k], "name");
			const struct json_value *fs = json_get(checks->items[k], "findings");
			for (size_t j = 0; name && !strcmp(name, "infiniband") && fs &&
					   fs->type == JSON_ARRAY && j < fs->nr;
			     j++) {
				const struct json_value *d = json_get(fs->items[j], "details");
				double a;
				if (d && json_get_number(d, "active", &a) && a > active)
					active = a;
			}
		}
		if (active < 1)
			return false;
	}
	return n >= 2;
}

struct ib_job {
	struct child c;
	struct fleet_split split;
	uint64_t t0;
	struct strbuf list;
	const char **argv;
	struct q_ib_pair *pair;
};

static void ib_output(void *arg, int stream, const char *data, size_t len)
{
	struct ib_job *j = arg;
	fleet_split_feed(&j->split, stream, data, len, mono_ms() - j->t0);
}

/* The client's report (the task that has ib_bw findings; srun orders the tasks by node, so
 * either may be it): the weakest HCA's bandwidth, the verdict. */
static void ib_judge(struct ib_job *j)
{
	struct q_ib_pair *p = j->pair;
	struct strbuf why = STRBUF_INIT;
	p->st = Q_UNKNOWN;
	for (size_t t = 0; t < j->split.nr_tasks; t++) {
		const struct fleet_task *k = &j->split.tasks[t];
		struct json_value *rep = k->out.len ? json_parse(k->out.buf, k->out.len, NULL) : NULL;
		const char *verdict = rep ? json_get_string(rep, "verdict") : NULL;
		const struct json_value *checks = rep ? json_get(rep, "checks") : NULL;
		double least = 0;
		bool bw = false;
		for (size_t i = 0; checks && checks->type == JSON_ARRAY && i < checks->nr; i++) {
			const struct json_value *fs = json_get(checks->items[i], "findings");
			for (size_t f = 0; fs && fs->type == JSON_ARRAY && f < fs->nr; f++) {
				const char *code = json_get_string(fs->items[f], "code");
				const struct json_value *d = json_get(fs->items[f], "details");
				double g;
				if (code && !strcmp(code, "ib_bw") && d &&
				    json_get_number(d, "bw_gbps", &g) && (!bw || g < least)) {
					least = g;
					bw = true;
				}
			}
		}
		if (verdict && (bw || p->st == Q_UNKNOWN)) {
			p->st = !strcmp(verdict, "healthy")     ? Q_PASSED
				: !strcmp(verdict, "unhealthy") ? Q_FAILED
								: Q_UNKNOWN;
			strbuf_reset(&why);
			strbuf_add_excerpt(&why, str_or(json_get_string(rep, "reason"), ""), 200);
			if (bw)
				p->gbps = least;
		}
		json_free(rep);
		if (bw)
			break;
	}
	if (j->c.timed_out) {
		p->st = Q_UNKNOWN;
		strbuf_reset(&why);
		strbuf_addstr(&why, "no result within the stage's share of the budget");
	} else if (!why.len) {
		strbuf_addstr(&why, "no report from either side");
		if (j->split.srun_error.len) {
			strbuf_addstr(&why, ": ");
			strbuf_add_excerpt(&why, j->split.srun_error.buf, 160);
		}
	}
	free(p->reason);
	p->reason = strbuf_detach(&why, NULL);
}

/* Run the pairs first..c->nr_ib - 1 at once (no node in two of them). */
static void ib_round(struct q_card *c, size_t first, const struct q_reach *reach,
		     const char *const *args, size_t nr_args, unsigned timeout_ms)
{
	size_t n = c->nr_ib - first;
	struct ib_job *jobs = xcalloc(n + 1, sizeof(*jobs));
	struct run_group g;
	run_group_init(&g, 0);
	for (size_t i = 0; i < n; i++) {
		struct ib_job *j = &jobs[i];
		j->pair = &c->ib[first + i];
		strbuf_init(&j->list, 0);
		strbuf_addf(&j->list, "--nodelist=%s,%s", j->pair->a, j->pair->b);
		size_t k = 0;
		j->argv = xcalloc(reach->nr_srun_args + nr_args + 16, sizeof(*j->argv));
		j->argv[k++] = reach->srun_args[0];
		j->argv[k++] = "--nodes=2";
		j->argv[k++] = "--ntasks=2";
		j->argv[k++] = "--ntasks-per-node=1";
		j->argv[k++] = j->list.buf;
		j->argv[k++] = "--label";
		j->argv[k++] = reach->vigil;
		j->argv[k++] = "net";
		j->argv[k++] = "ib";
		j->argv[k++] = "--srun";
		j->argv[k++] = "--json";
		for (size_t a = 0; a < nr_args; a++)
			j->argv[k++] = args[a];
		j->argv[k] = NULL;
		fleet_split_init(&j->split, 2, 1u << 20);
		child_init(&j->c);
		j->c.argv = j->argv;
		j->c.timeout_ms = timeout_ms;
		j->c.timeout_name = "the fabric stage's share of --budget";
		j->c.on_output = ib_output;
		j->c.on_output_arg = j;
		j->t0 = mono_ms();
		if (!(reach->stop && *reach->stop))
			run_group_add(&g, &j->c);
	}
	run_group_run(&g, NULL, NULL);
	run_group_release(&g);
	for (size_t i = 0; i < n; i++) {
		struct ib_job *j = &jobs[i];
		fleet_split_finish(&j->split, mono_ms() - j->t0);
		ib_judge(j);
		fleet_split_release(&j->split);
		child_release(&j->c);
		strbuf_release(&j->list);
		free(j->argv);
	}
	free(jobs);
}

/* How a node did in its pairs: passed in one, failed with two peers, else unknown. */
static void ib_node(struct q_card *c, struct q_node *n)
{
	size_t failed = 0, in = 0;
	const struct q_ib_pair *bad = NULL;
	for (size_t k = 0; k < c->nr_ib; k++) {
		const struct q_ib_pair *p = &c->ib[k];
		if (strcmp(p->a, n->name) && strcmp(p->b, n->name))
			continue;
		in++;
		if (p->st == Q_PASSED) {
			q_node_merge(n, Q_FABRIC, Q_PASSED, "its IB pairs passed", NULL);
			return;
		}
		failed += p->st == Q_FAILED;
		if (!bad || p->st == Q_FAILED)
			bad = p;
	}
	if (!in)
		return;
	struct strbuf sb = STRBUF_INIT;
	const char *peer = !strcmp(bad->a, n->name) ? bad->b : bad->a;
	if (failed >= 2)
		strbuf_addf(&sb, "InfiniBand failed with %zu peers; with %s: %s", failed, peer,
			    bad->reason);
	else
		strbuf_addf(&sb, "InfiniBand with %s: %s (which side cannot be told)", peer,
			    bad->reason);
	q_node_merge(n, Q_FABRIC, failed >= 2 ? Q_FAILED : Q_UNKNOWN, sb.buf, NULL);
	strbuf_release(&sb);
}

void q_ib_pairs(struct q_card *c, const struct q_reach *reach, const char *const *nodes,
		size_t n, const char *const *args, size_t nr_args, unsigned timeout_ms)
{
	/* round 1: neighbours in pairs; round 2: each node of a pair that did not pass (and an
	 * odd one out) against a node of a pair that did, so the weak side is the one that fails
	 * with both its peers */
	size_t first = c->nr_ib;
	for (size_t i = 0; i + 1 < n; i += 2)
		q_card_add_ib(c, nodes[i], nodes[i + 1]);
	ib_round(c, first, reach, args, nr_args, timeout_ms / 2);
	struct strlist good = STRLIST_INIT, again = STRLIST_INIT;
	for (size_t k = first; k < c->nr_ib; k++) {
		struct strlist *to = c->ib[k].st == Q_PASSED ? &good : &again;
		strlist_add(to, c->ib[k].a);
		strlist_add(to, c->ib[k].b);
	}
	if (n % 2)
		strlist_add(&again, nodes[n - 1]);
	size_t second = c->nr_ib;
	for (size_t i = 0; i < again.nr && i < good.nr; i++)
		q_card_add_ib(c, again.items[i], good.items[i]);
	if (c->nr_ib > second)
		ib_round(c, second, reach, args, nr_args, timeout_ms / 2);
	for (size_t i = 0; i < n; i++) {
		struct q_node *x = q_card_node(c, nodes[i]);
		if (x)
			ib_node(c, x);
	}
	strlist_release(&good);
	strlist_release(&again);
}
