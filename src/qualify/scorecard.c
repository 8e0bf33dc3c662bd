/*
 * scorecard.c: the card as JSON (docs/schema/qualify.json) and as text, and a stage's results
 * as the state directory keeps them (the --resume format). Every string from a node (names,
 * reasons, findings) goes through the JSON writer's escaping or strbuf_add_clean: a node name or
 * a reason can hold anything a node's vigil printed.
 */
#include "qualify.h"
#include "../lib/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void num_or_null(struct json_writer *w, const char *key, double v, bool have)
{
	json_key(w, key);
	if (have && isfinite(v))
		json_fixed(w, v, 3);
	else
		json_null(w);
}

static const char *node_action(enum q_status st)
{
	return st == Q_FAILED ? "drain" : st == Q_PASSED ? "keep" : "check";
}

/* The node's findings worth a line: every finding not ok of each stage's report. */
static void node_findings(struct json_writer *w, const struct q_card *c, const struct q_node *n)
{
	json_key(w, "findings");
	json_open_array(w);
	for (int s = 0; s < Q_NR_STAGES; s++) {
		const struct json_value *checks = n->report[s] ? json_get(n->report[s], "checks")
							       : NULL;
		for (size_t i = 0; checks && checks->type == JSON_ARRAY && i < checks->nr; i++) {
			const struct json_value *fs = json_get(checks->items[i], "findings");
			for (size_t j = 0; fs && fs->type == JSON_ARRAY && j < fs->nr; j++) {
				const struct json_value *f = fs->items[j];
				const char *st = json_get_string(f, "status");
				if (!st || !strcmp(st, "ok") || !strcmp(st, "skipped"))
					continue;
				json_open_object(w);
				json_key(w, "stage");
				json_string(w, q_stage_name(s));
				json_key(w, "check");
				json_string(w, str_or(json_get_string(checks->items[i], "name"), ""));
				json_key(w, "status");
				json_string(w, st);
				json_key(w, "action");
				json_string(w, str_or(json_get_string(f, "action"), "NONE"));
				json_key(w, "code");
				json_string(w, str_or(json_get_string(f, "code"), ""));
				json_key(w, "device");
				json_string(w, str_or(json_get_string(f, "device"), ""));
				json_key(w, "message");
				json_string(w, str_or(json_get_string(f, "message"), ""));
				json_close_object(w);
			}
		}
		if (!n->report[s] && (n->st[s] == Q_FAILED || n->st[s] == Q_UNKNOWN)) {
			/* no report: the reason is all there is (unreachable, no answer) */
			json_open_object(w);
			json_key(w, "stage");
			json_string(w, q_stage_name(s));
			json_key(w, "check");
			json_string(w, "");
			json_key(w, "status");
			json_string(w, n->st[s] == Q_FAILED ? "fail" : "unknown");
			json_key(w, "action");
			json_string(w, "INVESTIGATE");
			json_key(w, "code");
			json_string(w, "no_answer");
			json_key(w, "device");
			json_string(w, "");
			json_key(w, "message");
			json_string(w, n->reason[s] ? n->reason[s] : "");
			json_close_object(w);
		}
	}
	for (int f = 0; f < QF_NR; f++) {
		if (!n->outlier[f])
			continue;
		json_open_object(w);
		json_key(w, "stage");
		json_string(w, q_stage_name(q_figs[f].stage));
		json_key(w, "check");
		json_string(w, "outlier");
		json_key(w, "status");
		json_string(w, "warn");
		json_key(w, "action");
		json_string(w, "INVESTIGATE");
		json_key(w, "code");
		json_string(w, "outlier");
		json_key(w, "device");
		json_string(w, "");
		struct strbuf m = STRBUF_INIT;
		strbuf_addf(&m, "%s %.4g %s: slower than its peers by more than %.0f %%",
			    q_figs[f].name, n->fig[f], q_figs[f].unit, 100 * c->outlier_margin);
		json_key(w, "message");
		json_string(w, m.buf);
		strbuf_release(&m);
		json_close_object(w);
	}
	json_close_array(w);
}

/* The node's one-line reason: its first failed stage's, else an outlier, else passed. */
static void node_reason(const struct q_card *c, const struct q_node *n, struct strbuf *out)
{
	strbuf_reset(out);
	enum q_status st = q_node_status(c, n);
	for (int s = 0; s < Q_NR_STAGES && st != Q_PASSED; s++)
		if (n->st[s] == st && n->reason[s]) {
			strbuf_addf(out, "%s: %s", q_stage_name(s), n->reason[s]);
			return;
		}
	for (int f = 0; f < QF_NR; f++)
		if (n->outlier[f]) {
			strbuf_addf(out, "passed; slower than its peers in %s (%.4g %s)",
				    q_figs[f].name, n->fig[f], q_figs[f].unit);
			return;
		}
	strbuf_addstr(out, st == Q_PASSED ? "passed every stage" : "could not be told");
}

static void card_nodes(struct json_writer *w, const struct q_card *c)
{
	struct strbuf sb = STRBUF_INIT;
	json_key(w, "nodes");
	json_open_array(w);
	for (size_t i = 0; i < c->nr; i++) {
		const struct q_node *n = &c->nodes[i];
		enum q_status st = q_node_status(c, n);
		json_open_object(w);
		json_key(w, "node");
		json_string(w, n->name);
		json_key(w, "verdict");
		json_string(w, st == Q_PASSED ? "healthy" : st == Q_FAILED ? "unhealthy" : "unknown");
		json_key(w, "action");
		json_string(w, node_action(st));
		node_reason(c, n, &sb);
		json_key(w, "reason");
		json_string(w, sb.buf);
		json_key(w, "stages");
		json_open_object(w);
		for (int s = 0; s < Q_NR_STAGES; s++) {
			if (!c->asked[s])
				continue;
			json_key(w, q_stage_name(s));
			json_string(w, q_status_name(c->stages[s].st == Q_SKIPPED ? Q_SKIPPED
										 : n->st[s]));
		}
		json_close_object(w);
		node_findings(w, c, n);
		json_key(w, "figures");
		json_open_object(w);
		for (int f = 0; f < QF_NR; f++)
			if (n->have[f])
				num_or_null(w, q_figs[f].name, n->fig[f], true);
		json_close_object(w);
		json_key(w, "ranks");
		json_open_object(w);
		for (int f = 0; f < QF_NR; f++)
			if (n->rank[f]) {
				json_key(w, q_figs[f].name);
				json_uint(w, n->rank[f]);
			}
		json_close_object(w);
		json_key(w, "outliers");
		json_open_array(w);
		for (int f = 0; f < QF_NR; f++)
			if (n->outlier[f])
				json_string(w, q_figs[f].name);
		json_close_array(w);
		json_close_object(w);
	}
	json_close_array(w);
	strbuf_release(&sb);
}

static void card_figures(struct json_writer *w, const struct q_card *c)
{
	json_key(w, "figures");
	json_open_array(w);
	for (int f = 0; f < QF_NR; f++) {
		struct q_dist d;
		if (!q_fig_dist(c, f, &d))
			continue;
		json_open_object(w);
		json_key(w, "name");
		json_string(w, q_figs[f].name);
		json_key(w, "unit");
		json_string(w, q_figs[f].unit);
		json_key(w, "better");
		json_string(w, q_figs[f].better == Q_HIGHER ? "higher" : "lower");
		json_key(w, "n");
		json_uint(w, d.n);
		num_or_null(w, "median", d.median, true);
		num_or_null(w, "p5", d.p5, true);
		num_or_null(w, "worst", d.worst, true);
		json_key(w, "worst_node");
		json_string(w, d.worst_node ? d.worst_node : "");
		num_or_null(w, "best", d.best, true);
		json_key(w, "best_node");
		json_string(w, d.best_node ? d.best_node : "");
		json_close_object(w);
	}
	json_close_array(w);
}

static void nccl_points(struct json_writer *w, const struct q_card *c)
{
	json_key(w, "nccl");
	json_open_array(w);
	for (size_t i = 0; i < c->nr_nccl; i++) {
		const struct q_nccl_point *p = &c->nccl[i];
		json_open_object(w);
		json_key(w, "op");
		json_string(w, p->op);
		json_key(w, "nodes");
		json_uint(w, p->nodes);
		json_key(w, "gpus");
		json_uint(w, p->gpus);
		num_or_null(w, "bytes", p->bytes, p->bytes > 0);
		num_or_null(w, "busbw_gbps", p->busbw_gbps, p->st == Q_PASSED || p->busbw_gbps > 0);
		num_or_null(w, "expected_gbps", p->expected_gbps, p->expected_gbps > 0);
		num_or_null(w, "ratio", p->expected_gbps > 0 ? p->busbw_gbps / p->expected_gbps : 0,
			    p->expected_gbps > 0 && p->busbw_gbps > 0);
		json_key(w, "status");
		json_string(w, q_status_name(p->st));
		json_key(w, "reason");
		json_string(w, p->reason ? p->reason : "");
		json_close_object(w);
	}
	json_close_array(w);
	/* the fall-off: the first node count whose busbw is below 90 % of the smallest count's */
	json_key(w, "nccl_falloff_nodes");
	unsigned fall = 0;
	for (size_t i = 0; i < c->nr_nccl && !fall; i++) {
		const struct q_nccl_point *a = &c->nccl[i];
		double base = 0;
		unsigned base_nodes = 0;
		for (size_t k = 0; k < c->nr_nccl; k++)
			if (!strcmp(c->nccl[k].op, a->op) && c->nccl[k].busbw_gbps > 0 &&
			    (!base_nodes || c->nccl[k].nodes < base_nodes)) {
				base = c->nccl[k].busbw_gbps;
				base_nodes = c->nccl[k].nodes;
			}
		if (base > 0 && a->nodes > base_nodes && a->busbw_gbps < 0.9 * base)
			fall = a->nodes;
	}
	if (fall)
		json_uint(w, fall);
	else
		json_null(w);
}

static void ib_pairs_json(struct json_writer *w, const struct q_card *c)
{
	json_key(w, "ib_pairs");
	json_open_array(w);
	for (size_t i = 0; i < c->nr_ib; i++) {
		const struct q_ib_pair *p = &c->ib[i];
		json_open_object(w);
		json_key(w, "a");
		json_string(w, p->a);
		json_key(w, "b");
		json_string(w, p->b);
		json_key(w, "status");
		json_string(w, q_status_name(p->st));
		num_or_null(w, "gbps", p->gbps, p->gbps > 0);
		json_key(w, "reason");
		json_string(w, p->reason ? p->reason : "");
		json_close_object(w);
	}
	json_close_array(w);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The cluster's fsync latency: every node's quantiles pooled into one CDF (each node weighs
 * the same: each ran the same workload), from its report's figures.fsync_quantiles_ms. */
static void storage_block(struct json_writer *w, const struct q_card *c)
{
	json_key(w, "storage");
	if (!c->asked[Q_STORAGE] || c->stages[Q_STORAGE].st == Q_NOT_RUN ||
	    c->stages[Q_STORAGE].st == Q_SKIPPED) {
		json_null(w);
		return;
	}
	double wr = 0, rd = 0, meta = 0, fmax = 0;
	double stalls = 0, errors = 0;
	size_t nodes = 0;
	double *ms = xcalloc(c->nr * 16 + 1, sizeof(*ms));
	size_t nms = 0;
	for (size_t i = 0; i < c->nr; i++) {
		const struct q_node *n = &c->nodes[i];
		const struct json_value *f = n->report[Q_STORAGE] ? json_get(n->report[Q_STORAGE],
									     "figures")
								  : NULL;
		if (!f)
			continue;
		nodes++;
		double v;
		if (json_get_number(f, "write_mib_s", &v))
			wr += v;
		if (json_get_number(f, "read_mib_s", &v))
			rd += v;
		if (json_get_number(f, "meta_ops_s", &v))
			meta += v;
		if (json_get_number(f, "fsync_max_ms", &v) && v > fmax)
			fmax = v;
		if (json_get_number(f, "stalls", &v))
			stalls += v;
		if (json_get_number(f, "io_errors", &v))
			errors += v;
		const struct json_value *q = json_get(f, "fsync_quantiles_ms");
		for (size_t k = 0; q && q->type == JSON_ARRAY && k < q->nr && k < 16; k++) {
			const struct json_value *pt = q->items[k];
			if (pt->type == JSON_ARRAY && pt->nr == 2 &&
			    pt->items[1]->type == JSON_NUMBER)
				ms[nms++] = pt->items[1]->number;
		}
	}
	json_open_object(w);
	json_key(w, "dir");
	json_string(w, c->storage_dir ? c->storage_dir : "");
	json_key(w, "nodes");
	json_uint(w, nodes);
	num_or_null(w, "write_mib_s", wr, nodes > 0);
	num_or_null(w, "read_mib_s", rd, nodes > 0);
	num_or_null(w, "meta_ops_s", meta, nodes > 0);
	struct q_dist p50, p99;
	bool h50 = q_fig_dist(c, QF_FSYNC_P50, &p50), h99 = q_fig_dist(c, QF_FSYNC_P99, &p99);
	json_key(w, "fsync_ms");
	json_open_object(w);
	num_or_null(w, "p50", p50.median, h50);
	num_or_null(w, "p99", p99.worst, h99);
	num_or_null(w, "max", fmax, h99);
	json_close_object(w);
	/* pooled: each node's quantile points are samples of equal weight */
	qsort(ms, nms, sizeof(*ms), cmp_d);
	json_key(w, "fsync_cdf");
	json_open_array(w);
	for (size_t k = 0; k < nms; k++) {
		if (k + 1 < nms && ms[k + 1] == ms[k])
			continue;
		json_open_array(w);
		json_fixed(w, ms[k], 3);
		json_fixed(w, (double)(k + 1) / (double)nms, 4);
		json_close_array(w);
	}
	json_close_array(w);
	json_key(w, "stalls");
	json_uint(w, (uint64_t)stalls);
	json_key(w, "errors");
	json_uint(w, (uint64_t)errors);
	json_close_object(w);
	free(ms);
}

void q_card_json(const struct q_card *c, struct strbuf *out)
{
	struct json_writer w;
	struct strbuf reason = STRBUF_INIT;
	int code = q_card_verdict(c, &reason);
	json_writer_init(&w, out, true);
	json_open_top(&w);
	json_key(&w, "kind");
	json_string(&w, "qualify");
	json_key(&w, "vigil_version");
	json_string(&w, VIGIL_VERSION);
	json_key(&w, "job_id");
	json_string(&w, c->job_id ? c->job_id : "");
	json_key(&w, "cluster");
	json_string(&w, c->cluster ? c->cluster : "");
	char when[32] = "";
	struct tm tm;
	if (gmtime_r(&c->started, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_key(&w, "time");
	json_string(&w, when);
	json_key(&w, "timestamp");
	json_int(&w, (int64_t)c->started);
	json_key(&w, "verdict");
	json_string(&w, code == 0 ? "healthy" : code == 1 ? "unhealthy" : "unknown");
	json_key(&w, "exit_code");
	json_int(&w, code);
	json_key(&w, "reason");
	json_string(&w, reason.buf);
	json_key(&w, "complete");
	json_bool(&w, c->complete);
	num_or_null(&w, "budget_s", c->budget_s, true);
	num_or_null(&w, "wall_s", c->wall_s, true);
	json_key(&w, "drain");
	json_bool(&w, c->drain);
	json_key(&w, "stages");
	json_open_array(&w);
	for (int s = 0; s < Q_NR_STAGES; s++) {
		const struct q_stage_result *r = &c->stages[s];
		size_t np = 0, nf = 0, nu = 0;
		for (size_t i = 0; i < c->nr; i++) {
			enum q_status st = c->nodes[i].st[s];
			np += st == Q_PASSED;
			nf += st == Q_FAILED;
			nu += st == Q_UNKNOWN;
		}
		json_open_object(&w);
		json_key(&w, "name");
		json_string(&w, q_stage_name(s));
		json_key(&w, "status");
		json_string(&w, q_status_name(c->asked[s] ? r->st : Q_SKIPPED));
		num_or_null(&w, "budget_s", r->budget_s, true);
		num_or_null(&w, "wall_s", r->wall_s, true);
		json_key(&w, "nodes_passed");
		json_uint(&w, np);
		json_key(&w, "nodes_failed");
		json_uint(&w, nf);
		json_key(&w, "nodes_unknown");
		json_uint(&w, nu);
		json_key(&w, "reason");
		json_string(&w, r->reason ? r->reason : c->not_run_why[s] ? c->not_run_why[s] : "");
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "not_run");
	json_open_array(&w);
	for (int s = 0; s < Q_NR_STAGES; s++)
		if (c->asked[s] && c->stages[s].st == Q_NOT_RUN) {
			json_open_object(&w);
			json_key(&w, "stage");
			json_string(&w, q_stage_name(s));
			json_key(&w, "why");
			json_string(&w, c->not_run_why[s] ? c->not_run_why[s] : "not reached");
			json_close_object(&w);
		}
	json_close_array(&w);
	card_nodes(&w, c);
	card_figures(&w, c);
	nccl_points(&w, c);
	ib_pairs_json(&w, c);
	json_key(&w, "burnin");
	json_value_write(&w, c->burnin);
	storage_block(&w, c);
	json_key(&w, "train");
	json_value_write(&w, c->train);
	json_key(&w, "to_drain");
	json_open_array(&w);
	for (size_t i = 0; i < c->nr; i++) {
		const struct q_node *n = &c->nodes[i];
		if (q_node_status(c, n) != Q_FAILED)
			continue;
		json_open_object(&w);
		json_key(&w, "node");
		json_string(&w, n->name);
		json_key(&w, "reason");
		json_string(&w, n->drain_reason ? n->drain_reason : "");
		json_key(&w, "done");
		json_bool(&w, n->drained);
		if (n->drain_error) {
			json_key(&w, "error");
			json_string(&w, n->drain_error);
		}
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "to_return");
	json_open_array(&w);
	for (size_t i = 0; i < c->nr; i++)
		if (q_node_status(c, &c->nodes[i]) == Q_FAILED)
			json_string(&w, c->nodes[i].name);
	json_close_array(&w);
	json_close_object(&w);
	json_writer_finish(&w, NULL);
	strbuf_addch(out, '\n');
	strbuf_release(&reason);
}

void q_card_text(const struct q_card *c, struct strbuf *out)
{
	struct strbuf reason = STRBUF_INIT;
	int code = q_card_verdict(c, &reason);
	strbuf_addstr(out, "stages:\n");
	for (int s = 0; s < Q_NR_STAGES; s++) {
		if (!c->asked[s])
			continue;
		const struct q_stage_result *r = &c->stages[s];
		strbuf_addf(out, "  %-8s %-8s %6.0f s of %-6.0f ", q_stage_name(s),
			    q_status_name(r->st), r->wall_s, r->budget_s);
		strbuf_add_clean(out, r->reason ? r->reason
						: c->not_run_why[s] ? c->not_run_why[s] : "");
		strbuf_addch(out, '\n');
	}
	strbuf_addstr(out, "\nnodes:\n");
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < c->nr; i++) {
		const struct q_node *n = &c->nodes[i];
		enum q_status st = q_node_status(c, n);
		strbuf_addstr(out, "  ");
		strbuf_add_clean(out, n->name);
		strbuf_addf(out, "  %-7s %-5s ", st == Q_PASSED ? "passed" : q_status_name(st),
			    node_action(st));
		node_reason(c, n, &sb);
		strbuf_add_clean(out, sb.buf);
		strbuf_addch(out, '\n');
	}
	bool any = false;
	for (int f = 0; f < QF_NR; f++) {
		struct q_dist d;
		if (!q_fig_dist(c, f, &d))
			continue;
		if (!any)
			strbuf_addf(out, "\n%-24s %10s %10s %10s  %s\n", "figure", "median", "p5",
				    "worst", "(node)");
		any = true;
		strbuf_addf(out, "%-24s %10.4g %10.4g %10.4g  ", q_figs[f].name, d.median, d.p5,
			    d.worst);
		strbuf_add_clean(out, d.worst_node ? d.worst_node : "");
		strbuf_addf(out, " %s\n", q_figs[f].unit);
	}
	for (size_t i = 0; i < c->nr_nccl; i++) {
		const struct q_nccl_point *p = &c->nccl[i];
		if (!i)
			strbuf_addstr(out, "\nNCCL across nodes:\n");
		strbuf_addf(out, "  %-10s %3u nodes %5u GPUs  %8.1f GB/s busbw  %s\n", p->op,
			    p->nodes, p->gpus, p->busbw_gbps, q_status_name(p->st));
	}
	const char *bst = c->burnin ? json_get_string(c->burnin, "status") : NULL;
	if (bst) {
		strbuf_addstr(out, "\nInfiniBand burn-in: ");
		strbuf_add_clean(out, bst);
		strbuf_addstr(out, ": ");
		strbuf_add_clean(out, json_get_string(c->burnin, "reason")
					      ? json_get_string(c->burnin, "reason")
					      : "");
		strbuf_addch(out, '\n');
	}
	strbuf_addf(out, "\nverdict: %s: ", code == 0 ? "healthy" : code == 1 ? "unhealthy"
									      : "unknown");
	strbuf_add_clean(out, reason.buf);
	strbuf_addch(out, '\n');
	strbuf_release(&sb);
	strbuf_release(&reason);
}

/* ---- the state directory's stage documents ---- */

void q_stage_save(const struct q_card *c, enum q_stage s, struct strbuf *out)
{
	struct json_writer w;
	const struct q_stage_result *r = &c->stages[s];
	json_writer_init(&w, out, false);
	json_open_top(&w);
	json_key(&w, "kind");
	json_string(&w, "qualify-stage");
	json_key(&w, "stage");
	json_string(&w, q_stage_name(s));
	json_key(&w, "job_id");
	json_string(&w, c->job_id ? c->job_id : "");
	json_key(&w, "status");
	json_string(&w, q_status_name(r->st));
	json_key(&w, "budget_s");
	json_double(&w, r->budget_s);
	json_key(&w, "wall_s");
	json_double(&w, r->wall_s);
	json_key(&w, "reason");
	json_string(&w, r->reason ? r->reason : "");
	json_key(&w, "nodes");
	json_open_array(&w);
	for (size_t i = 0; i < c->nr; i++) {
		const struct q_node *n = &c->nodes[i];
		json_open_object(&w);
		json_key(&w, "node");
		json_string(&w, n->name);
		json_key(&w, "status");
		json_string(&w, q_status_name(n->st[s]));
		json_key(&w, "reason");
		json_string(&w, n->reason[s] ? n->reason[s] : "");
		json_key(&w, "report");
		json_value_write(&w, n->report[s]);
		json_close_object(&w);
	}
	json_close_array(&w);
	if (s == Q_FABRIC) {
		json_key(&w, "nccl");
		json_open_array(&w);
		for (size_t i = 0; i < c->nr_nccl; i++) {
			const struct q_nccl_point *p = &c->nccl[i];
			json_open_object(&w);
			json_key(&w, "op");
			json_string(&w, p->op);
			json_key(&w, "nodes");
			json_uint(&w, p->nodes);
			json_key(&w, "gpus");
			json_uint(&w, p->gpus);
			json_key(&w, "bytes");
			json_double(&w, p->bytes);
			json_key(&w, "busbw_gbps");
			json_double(&w, p->busbw_gbps);
			json_key(&w, "expected_gbps");
			json_double(&w, p->expected_gbps);
			json_key(&w, "status");
			json_string(&w, q_status_name(p->st));
			json_key(&w, "reason");
			json_string(&w, p->reason ? p->reason : "");
			json_close_object(&w);
		}
		json_close_array(&w);
		ib_pairs_json(&w, c);
		json_key(&w, "burnin");
		json_value_write(&w, c->burnin);
	}
	if (s == Q_STORAGE) {
		json_key(&w, "dir");
		json_string(&w, c->storage_dir ? c->storage_dir : "");
	}
	if (s == Q_TRAIN) {
		json_key(&w, "train");
		json_value_write(&w, c->train);
	}
	json_close_object(&w);
	json_writer_finish(&w, NULL);
	strbuf_addch(out, '\n');
}

static struct json_value *steal(struct json_value *parent, const char *key)
{
	for (size_t i = 0; parent && parent->type == JSON_OBJECT && i < parent->nr; i++)
		if (!strcmp(parent->keys[i], key)) {
			struct json_value *v = parent->items[i];
			struct json_value *null = xcalloc(1, sizeof(*null));
			null->type = JSON_NULL;
			parent->items[i] = null;
			return v->type == JSON_NULL ? (json_free(v), NULL) : v;
		}
	return NULL;
}

int q_stage_load(struct q_card *c, const char *text, size_t len, enum q_stage expect,
		 struct strbuf *err)
{
	struct json_value *v = json_parse(text, len, err);
	if (!v)
		return -1;
	int ret = -1;
	const char *kind = json_get_string(v, "kind"), *stage = json_get_string(v, "stage");
	const char *job = json_get_string(v, "job_id"), *status = json_get_string(v, "status");
	const struct json_value *nodes = json_get(v, "nodes");
	double sv = 0;
	if (!json_get_number(v, "schema_version", &sv) || sv != 1 || !kind ||
	    strcmp(kind, "qualify-stage") || !stage || q_stage_from_name(stage) != (int)expect ||
	    !status || q_status_from_name(status) < 0 || !nodes || nodes->type != JSON_ARRAY) {
		error_set(err, "not vigil qualify's record of the %s stage", q_stage_name(expect));
		goto out;
	}
	if (c->job_id && job && strcmp(job, c->job_id)) {
		/* a resumed run may be another allocation of the same nodes: said, not refused */
	}
	struct q_stage_result *r = &c->stages[expect];
	r->st = (enum q_status)q_status_from_name(status);
	json_get_number(v, "budget_s", &r->budget_s);
	json_get_number(v, "wall_s", &r->wall_s);
	free(r->reason);
	r->reason = xstrdup(str_or(json_get_string(v, "reason"), ""));
	for (size_t i = 0; i < nodes->nr; i++) {
		struct json_value *n = nodes->items[i];
		const char *name = json_get_string(n, "node"), *st = json_get_string(n, "status");
		if (!name || !st || q_status_from_name(st) < 0) {
			error_set(err, "the %s stage's record has a node without a name or status",
				  q_stage_name(expect));
			goto out;
		}
		struct q_node *qn = q_card_node(c, name);
		if (!qn)
			continue; /* not in this allocation */
		q_node_set(qn, expect, (enum q_status)q_status_from_name(st),
			   json_get_string(n, "reason"), steal(n, "report"));
	}
	const struct json_value *pts = json_get(v, "nccl");
	for (size_t i = 0; pts && pts->type == JSON_ARRAY && i < pts->nr; i++) {
		const struct json_value *p = pts->items[i];
		struct q_nccl_point *q = q_card_add_nccl(c);
		double x = 0;
		strlcpy_v(q->op, str_or(json_get_string(p, "op"), "?"), sizeof(q->op));
		if (json_get_number(p, "nodes", &x))
			q->nodes = (unsigned)x;
		if (json_get_number(p, "gpus", &x))
			q->gpus = (unsigned)x;
		json_get_number(p, "bytes", &q->bytes);
		json_get_number(p, "busbw_gbps", &q->busbw_gbps);
		json_get_number(p, "expected_gbps", &q->expected_gbps);
		int st = q_status_from_name(json_get_string(p, "status"));
		q->st = st < 0 ? Q_UNKNOWN : (enum q_status)st;
		q->reason = xstrdup(str_or(json_get_string(p, "reason"), ""));
	}
	const struct json_value *ib = json_get(v, "ib_pairs");
	for (size_t i = 0; ib && ib->type == JSON_ARRAY && i < ib->nr; i++) {
		const struct json_value *p = ib->items[i];
		const char *a = json_get_string(p, "a"), *b = json_get_string(p, "b");
		if (!a || !b)
			continue;
		struct q_ib_pair *q = q_card_add_ib(c, a, b);
		int st = q_status_from_name(json_get_string(p, "status"));
		q->st = st < 0 ? Q_UNKNOWN : (enum q_status)st;
		json_get_number(p, "gbps", &q->gbps);
		q->reason = xstrdup(str_or(json_get_string(p, "reason"), ""));
	}
	if (expect == Q_STORAGE && json_get_string(v, "dir")) {
		free(c->storage_dir);
		c->storage_dir = xstrdup(json_get_string(v, "dir"));
	}
	if (expect == Q_TRAIN) {
		json_free(c->train);
		c->train = steal(v, "train");
	}
	if (expect == Q_FABRIC) {
		json_free(c->burnin);
		c->burnin = steal(v, "burnin");
	}
	ret = 0;
out:
	json_free(v);
	return ret;
}
