/*
 * qualify_stages.c: what each stage of 'vigil qualify' runs on the allocation's nodes, as
 * rounds of existing vigil commands (src/qualify/stage.c runs a round), and --drain.
 */
#include "cmd.h"
#include "qualify_int.h"
#include "../lib/run.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void qualify_say(const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT, clean = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strbuf_add_clean(&clean, sb.buf);
	fprintf(stderr, "vigil qualify: %s\n", clean.buf);
	strbuf_release(&sb);
	strbuf_release(&clean);
}

double qualify_elapsed_s(const struct qrun *r)
{
	return (double)(mono_ms() - r->t0) / 1000.0;
}

static void add_num(struct strlist *l, const char *fmt, double v)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, fmt, v);
	strlist_add(l, sb.buf);
	strbuf_release(&sb);
}

/* One fleet round of a stage: 'vigil ARGS' on every node within share seconds. */
static void round_of(struct qrun *r, enum q_stage s, struct strlist *args, double share)
{
	struct strbuf err = STRBUF_INIT;
	if (q_stage_fleet(&r->card, s, &r->reach, (const char *const *)args->items, args->nr,
			  (unsigned)(share * 1000), &err) < 0) {
		/* Slurm could not list the nodes: every node unknown, by this reason */
		for (size_t i = 0; i < r->card.nr; i++)
			q_node_set(&r->card.nodes[i], s, Q_UNKNOWN, err.buf, NULL);
		r->card.stages[s].st = Q_UNKNOWN;
		free(r->card.stages[s].reason);
		r->card.stages[s].reason = xstrdup(err.buf);
	} else if (err.len) {
		qualify_say("%s: %s", q_stage_name(s), err.buf);
	}
	strbuf_release(&err);
}

static void stage_passive(struct qrun *r, double share)
{
	struct strlist args = STRLIST_INIT;
	strlist_add(&args, "check");
	strlist_add(&args, "--json");
	strlist_add(&args, "--timeout");
	add_num(&args, "%.0f", share > 40 ? 30 : share * 0.7);
	round_of(r, Q_PASSIVE, &args, share);
	strlist_release(&args);
}

/* The node stage: stress gpu (60 % of the share), then GPU pairs and NCCL inside the node. */
static void stage_node(struct qrun *r, double share)
{
	struct strlist args = STRLIST_INIT;
	double gpu = share * 0.6, rest = (share - gpu) / 2;
	strlist_add(&args, "stress");
	strlist_add(&args, "gpu");
	strlist_add(&args, "--json");
	strlist_add(&args, "--duration");
	add_num(&args, "%.0f", gpu * 0.6 > 5 ? gpu * 0.6 : 5);
	strlist_add(&args, "--timeout");
	add_num(&args, "%.0f", gpu - 2 > 5 ? gpu - 2 : 5);
	double t0 = qualify_elapsed_s(r);
	round_of(r, Q_NODE, &args, gpu);
	/* a line a round: the stage is minutes long on a real cluster */
	if (!qualify_stop)
		qualify_say("node: stress gpu in %.0f s: %s; GPU pairs and NCCL next, at most %.0f s",
			    qualify_elapsed_s(r) - t0, str_or(r->card.stages[Q_NODE].reason, "?"),
			    2 * rest);
	const char *net[] = { "pairs", "nccl" };
	for (size_t i = 0; i < 2 && !qualify_stop; i++) {
		strlist_release(&args);
		strlist_add(&args, "net");
		strlist_add(&args, net[i]);
		strlist_add(&args, "--json");
		if (i == 1) {
			strlist_add(&args, "--deadline");
			add_num(&args, "%.0f", rest - 2 > 5 ? rest - 2 : 5);
		}
		t0 = qualify_elapsed_s(r);
		round_of(r, Q_NODE, &args, rest);
		if (i == 0 && !qualify_stop)
			qualify_say("node: GPU pairs in %.0f s: %s", qualify_elapsed_s(r) - t0,
				    str_or(r->card.stages[Q_NODE].reason, "?"));
	}
	strlist_release(&args);
}

static void stage_storage(struct qrun *r, double share)
{
	struct strlist args = STRLIST_INIT;
	strlist_add(&args, "stress");
	strlist_add(&args, "storage");
	strlist_add(&args, "--dir");
	strlist_add(&args, r->a->storage);
	strlist_add(&args, "--json");
	strlist_add(&args, "--duration");
	add_num(&args, "%.0f", share - 5 > 5 ? share - 5 : 5);
	strlist_add(&args, "--size");
	add_num(&args, "%.0f", (double)r->storage_size);
	if (r->storage_size < (64u << 20)) {
		strlist_add(&args, "--file-size");
		add_num(&args, "%.0f", (double)r->storage_size);
	}
	strlist_add(&args, "--writers");
	add_num(&args, "%.0f", r->storage_writers);
	strlist_add(&args, "--stall-ms");
	add_num(&args, "%.0f", r->stall_ms);
	free(r->card.storage_dir);
	r->card.storage_dir = xstrdup(r->a->storage);
	round_of(r, Q_STORAGE, &args, share);
	strlist_release(&args);
}

/* The fabric stage: all_reduce then all_gather at 2, 4, 8 ... nodes and at all of them, on the
 * nodes that passed what ran before (a sick node would only measure itself). */
static void stage_fabric(struct qrun *r, double share)
{
	struct q_card *c = &r->card;
	struct strlist ok = STRLIST_INIT;
	for (size_t i = 0; i < c->nr; i++)
		if (q_node_status(c, &c->nodes[i]) != Q_FAILED)
			strlist_add(&ok, c->nodes[i].name);
	unsigned gpn = r->a->gpn ? r->a->gpn : q_gpus_per_node(c);
	bool ib = q_nodes_have_ib(c, (const char *const *)ok.items, ok.nr);
	struct q_stage_result *st = &c->stages[Q_FABRIC];
	if (ok.nr < 2 || (!gpn && !ib)) {
		st->st = Q_SKIPPED;
		free(st->reason);
		st->reason = xstrdup(ok.nr < 2 ? "fewer than two nodes left to measure between"
					       : "no GPU found by the node stage (--gpus-per-node to "
						 "say) and no InfiniBand port by the passive stage");
		goto out;
	}
	/* InfiniBand first (40 % of the stage when every node has a port: half for the pairs, half
	 * for the burn-in step), then NCCL */
	double ib_share = ib ? (gpn ? share * 0.4 : share) : 0;
	if (ib) {
		qualify_say("fabric: InfiniBand pairs over %zu nodes", ok.nr);
		const char *extra[] = { "--duration", "5" };
		q_ib_pairs(c, &r->reach, (const char *const *)ok.items, ok.nr, extra,
			   ARRAY_SIZE(extra), (unsigned)(ib_share * 500));
		/* then one stage of the burn-in plan of the nodes' share of the fabric */
		if (!qualify_stop)
			qualify_burnin(r, (const char *const *)ok.items, ok.nr, ib_share / 2);
	}
	if (!gpn)
		goto done;
	size_t counts[32], nc = 0;
	for (size_t k = 2; k < ok.nr && nc < 31; k *= 2)
		counts[nc++] = k;
	counts[nc++] = ok.nr;
	const char *ops[] = { "all_reduce", "all_gather" };
	double each = (share - ib_share) / (double)(nc * 2);
	struct strbuf rdv = STRBUF_INIT;
	for (size_t o = 0; o < 2 && !qualify_stop; o++)
		for (size_t i = 0; i < nc && !qualify_stop; i++) {
			strbuf_reset(&rdv);
			/* the first node serves the rendezvous: a port of the job's own */
			strbuf_addf(&rdv, "tcp://%s:%u", ok.items[0],
				    r->port + (unsigned)(o * nc + i));
			const char *extra[] = { "--sizes", "64M:1G", "--timeout", "60" };
			q_fabric_point(c, &r->reach, ops[o], (const char *const *)ok.items, counts[i],
				       gpn, rdv.buf, extra, ARRAY_SIZE(extra),
				       (unsigned)(each * 1000));
			const struct q_nccl_point *p = &c->nccl[c->nr_nccl - 1];
			qualify_say("fabric: %s on %zu nodes x %u GPUs: %s, busbw %.1f GB/s", ops[o],
				    counts[i], gpn, q_status_name(p->st), p->busbw_gbps);
		}
	strbuf_release(&rdv);
done:
	q_fabric_summarize(c);
out:
	strlist_release(&ok);
}

void qualify_stage_run(struct qrun *r, enum q_stage s, double share)
{
	switch (s) {
	case Q_PASSIVE: stage_passive(r, share); break;
	case Q_NODE: stage_node(r, share); break;
	case Q_FABRIC: stage_fabric(r, share); break;
	case Q_STORAGE: stage_storage(r, share); break;
	case Q_TRAIN: qualify_train(r, share); break;
	case Q_NR_STAGES: break;
	}
}

/* ---- drain ---- */

void qualify_drain(struct qrun *r)
{
	struct q_card *c = &r->card;
	struct strbuf err = STRBUF_INIT, reason = STRBUF_INIT;
	for (size_t i = 0; i < c->nr; i++) {
		struct q_node *n = &c->nodes[i];
		enum q_status st = q_node_status(c, n);
		if (st == Q_PASSED)
			continue; /* qualify never resumes a node: that is vigil check's to do */
		strbuf_reset(&reason);
		strbuf_addstr(&reason, "qualify: ");
		for (int s = 0; s < Q_NR_STAGES; s++)
			if (n->st[s] == st) {
				strbuf_addf(&reason, "%s: %s", q_stage_name(s),
					    n->reason[s] ? n->reason[s] : "");
				break;
			}
		struct slurm_node now;
		struct slurm_decision d;
		memset(&now, 0, sizeof(now));
		strbuf_reset(&err);
		bool have = slurm_node_get(&r->cmds, n->name, &now, &err) == 0;
		slurm_decide(st == Q_FAILED ? VERDICT_UNHEALTHY : VERDICT_UNKNOWN, reason.buf,
			     have ? &now : NULL, &r->pol, &d);
		if (d.act == SLURM_ACT_DRAIN) {
			free(n->drain_reason);
			n->drain_reason = xstrdup(d.reason);
			if (slurm_apply(&r->cmds, n->name, &d, &err) < 0) {
				n->drain_error = strbuf_detach(&err, NULL);
				qualify_say("%s: cannot drain: %s", n->name, n->drain_error);
			} else {
				n->drained = true;
				qualify_say("%s: drained: %s", n->name, d.reason);
			}
		} else if (st == Q_FAILED) {
			qualify_say("%s: not drained: %s%s%s", n->name, d.why, have ? "" : ": ",
			    have ? "" : err.buf);
		}
		slurm_node_release(&now);
	}
	strbuf_release(&err);
	strbuf_release(&reason);
}
