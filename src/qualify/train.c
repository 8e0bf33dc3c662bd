/*
 * train.c: the train stage's figures from diagnose steps' JSON (see train.h). Only a positive,
 * finite number counts: diagnose steps writes null for what it does not know, and a 0 or a
 * string from a changed or broken output must not become a figure.
 */
#include "train.h"
#include "../logs/gresconf.h"
#include "../slurm/slurm.h"

#include <math.h>

static bool positive(const struct json_value *v, const char *key, double *out)
{
	double d;
	if (!v || !json_get_number(v, key, &d) || !isfinite(d) || d <= 0)
		return false;
	*out = d;
	return true;
}

void q_train_read(const struct json_value *steps, struct q_train *t)
{
	memset(t, 0, sizeof(*t));
	if (!steps)
		return;
	const char *metric = json_get_string(steps, "metric");
	t->have_st = positive(steps, "median_step_time", &t->step_time_s);
	t->have_tok = positive(steps, "median_tokens_per_s", &t->tokens_per_s);
	/* the median level is a share of expected; with MFU as the metric and no expected value
	 * given, expected is the run's best level, so the level is MFU only when the rows had it
	 * (diagnose steps' "expected" is then in MFU): the MFU is expected * median_level */
	double lvl, exp;
	if (metric && !strcmp(metric, "mfu") && positive(steps, "median_level", &lvl) &&
	    positive(steps, "expected", &exp) && lvl * exp <= 1) {
		t->mfu = lvl * exp;
		t->have_mfu = true;
	}
}

static void num_or_null(struct strbuf *out, bool have, const char *fmt, double v)
{
	if (have)
		strbuf_addf(out, fmt, v);
	else
		strbuf_addstr(out, "null");
}

void q_train_json(const struct q_train *t, const char *outcome, struct strbuf *out)
{
	strbuf_addstr(out, "{\"step_time_s\":");
	num_or_null(out, t->have_st, "%.6g", t->step_time_s);
	strbuf_addstr(out, ",\"tokens_per_s\":");
	num_or_null(out, t->have_tok, "%.6g", t->tokens_per_s);
	strbuf_addstr(out, ",\"mfu\":");
	num_or_null(out, t->have_mfu, "%.4f", t->mfu);
	strbuf_addstr(out, ",\"outcome\":");
	const char *o = outcome ? outcome : "no report from vigil run";
	json_quote(out, o, strlen(o));
	strbuf_addch(out, '}');
}

void q_train_reason(const struct q_train *t, bool excluded, const char *why_not,
		    struct strbuf *out)
{
	if (!t->have_st && why_not && *why_not) {
		strbuf_addstr(out, "no step time: vigil diagnose steps: ");
		strbuf_add_excerpt(out, why_not, 300);
		return;
	}
	if (!t->have_st) {
		strbuf_addstr(out, "no training step was seen in the stage's time");
		return;
	}
	strbuf_addf(out, "median step %.3g s", t->step_time_s);
	if (t->have_tok)
		strbuf_addf(out, ", %.*f tokens/s", t->tokens_per_s >= 100 ? 0 : 2, t->tokens_per_s);
	if (t->have_mfu)
		strbuf_addf(out, ", MFU %.1f %%", 100 * t->mfu);
	if (excluded)
		strbuf_addstr(out, "; hosts excluded");
}

/* ---- node groups ---- */

static struct q_group *add_group(struct q_groups *g, const char *name, size_t len)
{
	g->items = xrealloc(g->items, (g->nr + 1) * sizeof(*g->items));
	struct q_group *x = &g->items[g->nr++];
	memset(x, 0, sizeof(*x));
	x->name = xstrndup(name, len);
	return x;
}

void q_groups_split(const char *const *nodes, size_t n, unsigned k, struct q_groups *out)
{
	memset(out, 0, sizeof(*out));
	if (!k || !n)
		return;
	if (k > n)
		k = (unsigned)n;
	size_t at = 0;
	for (unsigned i = 0; i < k; i++) {
		char name[16];
		int len = snprintf(name, sizeof(name), "%u", i + 1);
		struct q_group *x = add_group(out, name, (size_t)len);
		size_t size = n / k + (i < n % k);
		for (size_t j = 0; j < size; j++)
			strlist_add(&x->hosts, nodes[at++]);
	}
}

void q_groups_of_size(const char *const *nodes, size_t n, unsigned size, struct q_groups *out,
		      struct strlist *left)
{
	memset(out, 0, sizeof(*out));
	size_t at = 0;
	while (size && n - at >= size && out->nr < Q_TRAIN_GROUPS_MAX) {
		char name[16];
		int len = snprintf(name, sizeof(name), "%zu", out->nr + 1);
		struct q_group *x = add_group(out, name, (size_t)len);
		for (unsigned j = 0; j < size; j++)
			strlist_add(&x->hosts, nodes[at++]);
	}
	for (; at < n; at++)
		strlist_add(left, nodes[at]);
}

void q_groups_release(struct q_groups *g)
{
	for (size_t i = 0; i < g->nr; i++) {
		free(g->items[i].name);
		strlist_release(&g->items[i].hosts);
	}
	free(g->items);
	memset(g, 0, sizeof(*g));
}

/* The value of KEY= among a line's words (space separated), or NULL; *len its length. */
static const char *word_value(const char *line, size_t line_len, const char *key, size_t *len)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < line_len;) {
		while (i < line_len && line[i] == ' ')
			i++;
		size_t start = i;
		while (i < line_len && line[i] != ' ')
			i++;
		if (i - start > kl && !memcmp(line + start, key, kl)) {
			*len = i - start - kl;
			return line + start + kl;
		}
	}
	return NULL;
}

/* A switch's or block's name is a plain word, as a node's (slurm_node_name_ok). */
static bool plain_name(const char *s, size_t len)
{
	char name[80];
	if (len >= sizeof(name))
		return false;
	memcpy(name, s, len);
	name[len] = '\0';
	return slurm_node_name_ok(name);
}

int q_groups_topology(const char *text, const char *const *nodes, size_t n,
		      struct q_groups *out, struct strlist *left, struct strbuf *err)
{
	memset(out, 0, sizeof(*out));
	/* each node's leaf (an index into leaves), or -1 */
	long *at = xcalloc(n + 1, sizeof(*at));
	for (size_t i = 0; i < n; i++)
		at[i] = -1;
	struct q_groups leaves = { 0 };
	int ret = -1;
	size_t lines = 0;
	struct strbuf expr = STRBUF_INIT, e = STRBUF_INIT;
	for (const char *p = text ? text : ""; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *line = p;
		p += len + (nl != NULL);
		lines++;
		size_t nlen = 0, llen = 0, xlen = 0;
		const char *name = word_value(line, len, "SwitchName=", &nlen);
		if (name) {
			const char *level = word_value(line, len, "Level=", &llen);
			if (!level || llen != 1 || *level != '0')
				continue; /* a switch above the leaves */
		} else if (!(name = word_value(line, len, "BlockName=", &nlen))) {
			continue;
		}
		if (!plain_name(name, nlen)) {
			strbuf_addstr(err, "scontrol show topology: line ");
			strbuf_addf(err, "%zu names a switch or block that is not a plain word", lines);
			goto out;
		}
		const char *x = word_value(line, len, "Nodes=", &xlen);
		if (!x)
			continue; /* a leaf with no node */
		if (leaves.nr >= 4096) {
			strbuf_addstr(err, "scontrol show topology: more than 4096 leaf switches");
			goto out;
		}
		strbuf_reset(&expr);
		strbuf_add(&expr, x, xlen);
		size_t idx = leaves.nr;
		add_group(&leaves, name, nlen);
		for (size_t i = 0; i < n; i++) {
			if (at[i] >= 0)
				continue; /* a node under two leaves: the first */
			int m = hostlist_match(expr.buf, nodes[i], &e);
			if (m < 0) {
				strbuf_addf(err, "scontrol show topology: line %zu: Nodes=", lines);
				strbuf_add_clean(err, expr.buf);
				strbuf_addstr(err, ": ");
				strbuf_add_clean(err, e.buf);
				goto out;
			}
			if (m)
				at[i] = (long)idx;
		}
	}
	if (!leaves.nr) {
		strbuf_addstr(err, "scontrol show topology names no leaf switch and no block");
		goto out;
	}
	/* the groups in the order of their first node */
	long *map = xcalloc(leaves.nr + 1, sizeof(*map));
	for (size_t k = 0; k < leaves.nr; k++)
		map[k] = -1;
	for (size_t i = 0; i < n; i++) {
		if (at[i] < 0) {
			strlist_add(left, nodes[i]);
			continue;
		}
		if (map[at[i]] < 0) {
			if (out->nr >= Q_TRAIN_GROUPS_MAX) {
				strbuf_addf(err, "the nodes are under more than %d leaf switches or "
						 "blocks (--train-groups N instead)",
					    Q_TRAIN_GROUPS_MAX);
				free(map);
				goto out;
			}
			map[at[i]] = (long)out->nr;
			const char *nm = leaves.items[at[i]].name;
			add_group(out, nm, strlen(nm));
		}
		strlist_add(&out->items[map[at[i]]].hosts, nodes[i]);
	}
	free(map);
	if (!out->nr) {
		strbuf_addstr(err, "no leaf switch or block of scontrol show topology holds any of "
				   "the nodes");
		goto out;
	}
	ret = 0;
out:
	if (ret < 0)
		q_groups_release(out);
	q_groups_release(&leaves);
	free(at);
	strbuf_release(&expr);
	strbuf_release(&e);
	return ret;
}

void q_train_group_json(const struct q_group *g, const struct q_train *t, const char *outcome,
			struct strbuf *out)
{
	strbuf_addstr(out, "{\"name\":");
	json_quote(out, g->name, strlen(g->name));
	strbuf_addstr(out, ",\"hosts\":[");
	for (size_t i = 0; i < g->hosts.nr; i++) {
		if (i)
			strbuf_addch(out, ',');
		json_quote(out, g->hosts.items[i], strlen(g->hosts.items[i]));
	}
	strbuf_addstr(out, "],");
	struct strbuf fig = STRBUF_INIT;
	q_train_json(t, outcome, &fig);
	strbuf_add(out, fig.buf + 1, fig.len - 1); /* its fields, after its '{' */
	strbuf_release(&fig);
}
