/*
 * figures.c: the card's nodes and what their reports measured. A figure is read from the
 * findings' details of a node's own report (the names 'vigil stress gpu', 'vigil net' and
 * 'vigil stress storage' give them: docs/STRESS.md), so qualify adds no parser of its own for
 * another program's output. A node's figure is its weakest device's (a node is as fast as its
 * slowest GPU in a synchronous job). Then, per figure over the nodes: the distribution, the rank
 * of each node and the outliers (beyond the margin from the median, in the worse direction).
 */
#include "qualify.h"
#include "../lib/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const struct q_fig_def q_figs[QF_NR] = {
	[QF_GEMM_BF16] = { "gemm_bf16_tflops", "TFLOP/s", Q_HIGHER, Q_NODE },
	[QF_GEMM_FP16] = { "gemm_fp16_tflops", "TFLOP/s", Q_HIGHER, Q_NODE },
	[QF_GEMM_TF32] = { "gemm_tf32_tflops", "TFLOP/s", Q_HIGHER, Q_NODE },
	[QF_GEMM_FP8] = { "gemm_fp8_tflops", "TFLOP/s", Q_HIGHER, Q_NODE },
	[QF_HBM_COPY] = { "hbm_copy_gbps", "GB/s", Q_HIGHER, Q_NODE },
	[QF_NVLINK_MIN] = { "nvlink_pair_min_gbps", "GB/s", Q_HIGHER, Q_NODE },
	[QF_NCCL_LOCAL] = { "nccl_local_busbw_gbps", "GB/s", Q_HIGHER, Q_NODE },
	[QF_IB_PAIR] = { "ib_pair_gbps", "Gb/s", Q_HIGHER, Q_FABRIC },
	[QF_ST_WRITE] = { "storage_write_mib_s", "MiB/s", Q_HIGHER, Q_STORAGE },
	[QF_ST_READ] = { "storage_read_mib_s", "MiB/s", Q_HIGHER, Q_STORAGE },
	[QF_FSYNC_P50] = { "fsync_p50_ms", "ms", Q_LOWER, Q_STORAGE },
	[QF_FSYNC_P99] = { "fsync_p99_ms", "ms", Q_LOWER, Q_STORAGE },
	[QF_META] = { "meta_ops_s", "ops/s", Q_HIGHER, Q_STORAGE },
	[QF_TRAIN_STEP] = { "train_step_s", "s", Q_LOWER, Q_TRAIN },
};

static const char *const stage_names[Q_NR_STAGES] = { "passive", "node", "fabric", "storage",
						       "train" };
static const char *const status_names[] = { "not_run", "passed", "failed", "unknown",
					    "skipped" };

const char *q_stage_name(enum q_stage s)
{
	return s < Q_NR_STAGES ? stage_names[s] : "?";
}

int q_stage_from_name(const char *name)
{
	for (int i = 0; i < Q_NR_STAGES; i++)
		if (name && !strcmp(name, stage_names[i]))
			return i;
	return -1;
}

const char *q_status_name(enum q_status s)
{
	return (size_t)s < ARRAY_SIZE(status_names) ? status_names[s] : "?";
}

int q_status_from_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(status_names); i++)
		if (name && !strcmp(name, status_names[i]))
			return (int)i;
	return -1;
}

void q_card_init(struct q_card *c)
{
	memset(c, 0, sizeof(*c));
	c->outlier_margin = 0.10;
	c->complete = true;
}

void q_card_release(struct q_card *c)
{
	for (size_t i = 0; i < c->nr; i++) {
		struct q_node *n = &c->nodes[i];
		free(n->name);
		for (int s = 0; s < Q_NR_STAGES; s++) {
			free(n->reason[s]);
			json_free(n->report[s]);
		}
		free(n->drain_reason);
		free(n->drain_error);
	}
	free(c->nodes);
	for (size_t i = 0; i < c->nr_nccl; i++)
		free(c->nccl[i].reason);
	free(c->nccl);
	for (size_t i = 0; i < c->nr_ib; i++) {
		free(c->ib[i].a);
		free(c->ib[i].b);
		free(c->ib[i].reason);
	}
	free(c->ib);
	for (int s = 0; s < Q_NR_STAGES; s++) {
		free(c->stages[s].reason);
		free(c->not_run_why[s]);
	}
	free(c->job_id);
	free(c->cluster);
	free(c->storage_dir);
	json_free(c->train);
	json_free(c->burnin);
	memset(c, 0, sizeof(*c));
}

struct q_node *q_card_node(struct q_card *c, const char *name)
{
	for (size_t i = 0; i < c->nr; i++)
		if (!strcmp(c->nodes[i].name, name))
			return &c->nodes[i];
	return NULL;
}

struct q_node *q_card_add_node(struct q_card *c, const char *name)
{
	struct q_node *n = q_card_node(c, name);
	if (n)
		return n;
	c->nodes = xrealloc(c->nodes, (c->nr + 1) * sizeof(*c->nodes));
	n = &c->nodes[c->nr++];
	memset(n, 0, sizeof(*n));
	n->name = xstrdup(name);
	return n;
}

struct q_nccl_point *q_card_add_nccl(struct q_card *c)
{
	ALLOC_GROW(c->nccl, c->nr_nccl + 1, c->alloc_nccl);
	struct q_nccl_point *p = &c->nccl[c->nr_nccl++];
	memset(p, 0, sizeof(*p));
	return p;
}

struct q_ib_pair *q_card_add_ib(struct q_card *c, const char *a, const char *b)
{
	ALLOC_GROW(c->ib, c->nr_ib + 1, c->alloc_ib);
	struct q_ib_pair *p = &c->ib[c->nr_ib++];
	memset(p, 0, sizeof(*p));
	p->a = xstrdup(a);
	p->b = xstrdup(b);
	return p;
}

void q_node_set(struct q_node *n, enum q_stage s, enum q_status st, const char *reason,
		struct json_value *report)
{
	free(n->reason[s]);
	json_free(n->report[s]);
	n->st[s] = st;
	n->reason[s] = xstrdup(reason ? reason : "");
	n->report[s] = report;
}

/* ---- reading figures from reports ---- */

/* v into the node's figure f: the weakest device's value wins. */
static void take(struct q_node *n, int f, double v)
{
	if (!isfinite(v) || v < 0)
		return;
	if (!n->have[f] || (q_figs[f].better == Q_HIGHER ? v < n->fig[f] : v > n->fig[f]))
		n->fig[f] = v;
	n->have[f] = true;
}

static double detail(const struct json_value *d, const char *key, bool *ok)
{
	double v = 0;
	*ok = json_get_number(d, key, &v);
	return v;
}

/* The active tests' findings of a report ('vigil check --deep'): GEMM per dtype, HBM copy, the
 * weakest GPU pair, the local NCCL busbw at the largest size measured. A finding that is not ok
 * still carries its measurement (a GPU below its floor is measured, and slow). */
static void from_active(struct q_node *n, const struct json_value *rep)
{
	const struct json_value *checks = json_get(rep, "checks");
	double nccl_bytes = -1, nccl_bw = 0;
	for (size_t i = 0; checks && checks->type == JSON_ARRAY && i < checks->nr; i++) {
		const struct json_value *fs = json_get(checks->items[i], "findings");
		for (size_t j = 0; fs && fs->type == JSON_ARRAY && j < fs->nr; j++) {
			const struct json_value *d = json_get(fs->items[j], "details");
			if (!d || d->type != JSON_OBJECT)
				continue;
			bool ok, ok2, ok3;
			const char *dtype = json_get_string(d, "dtype");
			double v = detail(d, "tflops", &ok);
			if (dtype && ok) {
				static const struct { const char *name; int f; } dt[] = {
					{ "bf16", QF_GEMM_BF16 }, { "fp16", QF_GEMM_FP16 },
					{ "tf32", QF_GEMM_TF32 }, { "fp8", QF_GEMM_FP8 },
				};
				for (size_t k = 0; k < ARRAY_SIZE(dt); k++)
					if (!strcmp(dtype, dt[k].name))
						take(n, dt[k].f, v);
			}
			v = detail(d, "copy_gbps", &ok);
			if (ok)
				take(n, QF_HBM_COPY, v);
			detail(d, "src", &ok);
			detail(d, "dst", &ok2);
			v = detail(d, "gbps", &ok3);
			if (ok && ok2 && ok3)
				take(n, QF_NVLINK_MIN, v);
			double bytes = detail(d, "bytes", &ok);
			v = detail(d, "busbw", &ok2);
			if (ok && ok2 && bytes >= nccl_bytes) {
				/* the largest size: where busbw reaches its plateau */
				if (bytes > nccl_bytes || v < nccl_bw)
					nccl_bw = v;
				nccl_bytes = bytes;
			}
		}
	}
	if (nccl_bytes > 0)
		take(n, QF_NCCL_LOCAL, nccl_bw);
}

/* 'vigil stress storage --json': the top-level "figures" object. */
static void from_storage(struct q_node *n, const struct json_value *rep)
{
	const struct json_value *f = json_get(rep, "figures");
	static const struct { const char *key; int f; } keys[] = {
		{ "write_mib_s", QF_ST_WRITE },	  { "read_mib_s", QF_ST_READ },
		{ "fsync_p50_ms", QF_FSYNC_P50 }, { "fsync_p99_ms", QF_FSYNC_P99 },
		{ "meta_ops_s", QF_META },
	};
	for (size_t k = 0; f && k < ARRAY_SIZE(keys); k++) {
		double v;
		if (json_get_number(f, keys[k].key, &v))
			take(n, keys[k].f, v);
	}
}

/* The train stage's report of a node trained in a group (--train-groups): its group's median
 * step time, {"group": ..., "figures": {"step_time_s": ...}}. Only a positive time counts. */
static void from_train(struct q_node *n, const struct json_value *rep)
{
	double v;
	if (json_get_number(json_get(rep, "figures"), "step_time_s", &v) && v > 0)
		take(n, QF_TRAIN_STEP, v);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Worse first: ascending for higher-is-better figures, descending for lower-is-better. */
static double *sorted(const struct q_card *c, int f, size_t *n)
{
	double *v = xcalloc(c->nr + 1, sizeof(*v));
	*n = 0;
	for (size_t i = 0; i < c->nr; i++)
		if (c->nodes[i].have[f])
			v[(*n)++] = c->nodes[i].fig[f];
	qsort(v, *n, sizeof(*v), cmp_double);
	if (q_figs[f].better == Q_LOWER)
		for (size_t i = 0; i < *n / 2; i++) {
			double t = v[i];
			v[i] = v[*n - 1 - i];
			v[*n - 1 - i] = t;
		}
	return v;
}

/* Linear interpolation between closest ranks, q in [0, 1] over the worse-first order. */
static double quantile(const double *v, size_t n, double q)
{
	if (n == 1)
		return v[0];
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)pos;
	if (lo >= n - 1)
		return v[n - 1];
	return v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo);
}

bool q_fig_dist(const struct q_card *c, int f, struct q_dist *d)
{
	memset(d, 0, sizeof(*d));
	size_t n;
	double *v = sorted(c, f, &n);
	if (!n) {
		free(v);
		return false;
	}
	d->n = n;
	d->median = quantile(v, n, 0.5);
	d->p5 = quantile(v, n, 0.05);
	d->worst = v[0];
	d->best = v[n - 1];
	for (size_t i = 0; i < c->nr; i++) {
		const struct q_node *x = &c->nodes[i];
		if (!x->have[f])
			continue;
		if (!d->worst_node && x->fig[f] == d->worst)
			d->worst_node = x->name;
		if (!d->best_node && x->fig[f] == d->best)
			d->best_node = x->name;
	}
	free(v);
	return true;
}

void q_figures(struct q_card *c)
{
	for (size_t i = 0; i < c->nr; i++) {
		struct q_node *n = &c->nodes[i];
		memset(n->have, 0, sizeof(n->have));
		memset(n->rank, 0, sizeof(n->rank));
		memset(n->outlier, 0, sizeof(n->outlier));
		if (n->report[Q_NODE])
			from_active(n, n->report[Q_NODE]);
		if (n->report[Q_STORAGE])
			from_storage(n, n->report[Q_STORAGE]);
		if (n->report[Q_TRAIN])
			from_train(n, n->report[Q_TRAIN]);
	}
	/* an IB pair's bandwidth is both its nodes' (the weakest pair a node was in) */
	for (size_t k = 0; k < c->nr_ib; k++) {
		const struct q_ib_pair *p = &c->ib[k];
		struct q_node *a = q_card_node(c, p->a), *b = q_card_node(c, p->b);
		if (p->gbps > 0 && a)
			take(a, QF_IB_PAIR, p->gbps);
		if (p->gbps > 0 && b)
			take(b, QF_IB_PAIR, p->gbps);
	}
	for (int f = 0; f < QF_NR; f++) {
		struct q_dist d;
		if (!q_fig_dist(c, f, &d))
			continue;
		bool higher = q_figs[f].better == Q_HIGHER;
		for (size_t i = 0; i < c->nr; i++) {
			struct q_node *n = &c->nodes[i];
			if (!n->have[f])
				continue;
			unsigned better = 0;
			for (size_t k = 0; k < c->nr; k++)
				if (c->nodes[k].have[f] &&
				    (higher ? c->nodes[k].fig[f] > n->fig[f]
					    : c->nodes[k].fig[f] < n->fig[f]))
					better++;
			n->rank[f] = better + 1;
			/* an outlier needs peers: with fewer than three nodes the median is one of
			 * the two, and which is "slow" cannot be told */
			if (d.n >= 3 && d.median > 0) {
				double off = higher ? (d.median - n->fig[f]) / d.median
						    : (n->fig[f] - d.median) / d.median;
				n->outlier[f] = off > c->outlier_margin;
			}
		}
	}
}

enum q_status q_node_status(const struct q_card *c, const struct q_node *n)
{
	enum q_status worst = Q_PASSED;
	bool any = false;
	for (int s = 0; s < Q_NR_STAGES; s++) {
		if (!c->asked[s] || c->stages[s].st == Q_SKIPPED || c->stages[s].st == Q_NOT_RUN)
			continue;
		any = true;
		if (n->st[s] == Q_FAILED)
			return Q_FAILED;
		if (n->st[s] != Q_PASSED && n->st[s] != Q_SKIPPED)
			worst = Q_UNKNOWN;
	}
	return any ? worst : Q_UNKNOWN;
}

int q_card_verdict(const struct q_card *c, struct strbuf *reason)
{
	size_t failed = 0, unknown = 0;
	struct strbuf names = STRBUF_INIT;
	for (size_t i = 0; i < c->nr; i++) {
		enum q_status st = q_node_status(c, &c->nodes[i]);
		if (st == Q_FAILED) {
			if (failed++ < 4) {
				if (names.len)
					strbuf_addstr(&names, ", ");
				strbuf_addstr(&names, c->nodes[i].name);
				for (int s = 0; s < Q_NR_STAGES; s++)
					if (c->nodes[i].st[s] == Q_FAILED) {
						strbuf_addf(&names, ": %s", q_stage_name(s));
						break;
					}
			}
		} else if (st != Q_PASSED) {
			unknown++;
		}
	}
	int code;
	strbuf_reset(reason);
	if (failed) {
		strbuf_addf(reason, "%zu of %zu nodes failed a stage (%s%s)", failed, c->nr,
			    names.buf, failed > 4 ? ", ..." : "");
		code = 1;
	} else if (!c->nr) {
		strbuf_addstr(reason, "no nodes were qualified");
		code = 3;
	} else if (unknown) {
		strbuf_addf(reason, "%zu of %zu nodes could not be told", unknown, c->nr);
		code = 3;
	} else if (!c->complete) {
		strbuf_addstr(reason, "every node passed what ran, but not every stage ran");
		code = 3;
	} else {
		strbuf_addf(reason, "all %zu nodes passed every stage", c->nr);
		code = 0;
	}
	if (code != 3 && !c->complete)
		strbuf_addstr(reason, "; the run was cut short");
	strbuf_release(&names);
	return code;
}
