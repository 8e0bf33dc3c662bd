/*
 * html.c: a qualify scorecard as one self-contained HTML page (see card.h): the title with the
 * verdict, a banner when the card is partial, the stages, the per-node heat table, the cluster's
 * distribution of every figure, the two plots (html_svg.c), storage, training, the comparison
 * with an older card (html_cmp.c) and the nodes to drain or return. No script and nothing
 * fetched. Every string from the card goes through html_add_text() (a node may be called
 * "<script>"), and a status or action from the card picks a CSS class only from a fixed list.
 */
#include "html_int.h"
#include "../lib/html.h"

#include <math.h>
#include <stdlib.h>

#define MAX_COLS   64	 /* figure columns of the heat table */
#define MAX_STAGES 32	 /* stage columns */
#define MAX_ROWS   20000 /* nodes, drains and the like; past it the page says how many it left */
#define TEXT_BYTES 300	 /* bytes of one reason or message shown */
#define NAME_BYTES 80	 /* bytes of one name shown */

static void h(struct strbuf *o, const char *s, size_t max)
{
	html_add_text(o, s ? s : "-", max);
}

/* A number cell: the card's number, or "-" when it has none there. */
static void td_num(struct strbuf *o, const struct json_value *obj, const char *key)
{
	double v;
	char b[32];
	strbuf_addf(o, "<td class=\"n\">%s</td>", card_num(obj, key, &v) ? card_fmt(b, v) : "-");
}

static void td_text(struct strbuf *o, const struct json_value *obj, const char *key, size_t max)
{
	strbuf_addstr(o, "<td>");
	h(o, json_get_string(obj, key), max);
	strbuf_addstr(o, "</td>");
}

/* The CSS class of a word from the card, from a fixed list ("other" for anything else), so the
 * card never writes into an attribute. */
static const char *word_class(const char *w, const char *const *known)
{
	for (size_t i = 0; w && known[i]; i++)
		if (!strcmp(w, known[i]))
			return known[i];
	return "other";
}

static const char *const statuses[] = { "passed", "failed", "unknown", "skipped", "not_run", NULL };
static const char *const verdicts[] = { "healthy", "unhealthy", "unknown", NULL };
/* "check": a node the command could not tell about (docs/schema/qualify.json) */
static const char *const actions[] = { "keep", "drain", "return", "check", NULL };

static const struct json_value *array_of(const struct json_value *card, const char *key)
{
	const struct json_value *v = json_get(card, key);
	return v && v->type == JSON_ARRAY ? v : NULL;
}

static void cut_note(struct strbuf *o, size_t total, size_t shown, const char *what)
{
	if (total > shown)
		strbuf_addf(o, "<p class=\"note\">%zu more %s not shown.</p>\n", total - shown,
			    what);
}

static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1500px}\n"
	"h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.15em;margin:1.5em 0 .4em}\n"
	"table{border-collapse:collapse;margin:.3em 0}th,td{border:1px solid #ccc;"
	"padding:2px 6px;text-align:left;vertical-align:top}th{background:#f5f5f5}\n"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}.wrap{overflow-x:auto}\n"
	".v-healthy{color:#1b5e20}.v-unhealthy{color:#b71c1c}.v-unknown,.v-other{color:#e65100}\n"
	".banner{background:#fff3e0;border:2px solid #e65100;padding:.6em 1em;margin:1em 0}\n"
	".s-passed{background:#c8e6c9}.s-failed{background:#ef9a9a;font-weight:bold}"
	".s-unknown,.s-other{background:#ffe0b2}.s-skipped,.s-not_run{background:#eceff1;"
	"color:#607d8b}\n"
	".h4{background:#66bb6a}.h3{background:#c8e6c9}.h2{background:#fff59d}"
	".h1{background:#ffb74d}.h0{background:#e57373}.hn{background:#eceff1}\n"
	"td.outlier{outline:2px solid #b71c1c;outline-offset:-2px;font-weight:bold}\n"
	"td.heat sup{color:#555;font-size:.75em;margin-left:2px}\n"
	"#heat th,#heat td{white-space:nowrap}#heat td.reason{white-space:normal;min-width:24em}\n"
	".a-keep{color:#1b5e20}.a-drain{color:#b71c1c;font-weight:bold}"
	".a-return{color:#6a1b9a;font-weight:bold}.a-check,.a-other{color:#e65100}\n"
	".bar{display:inline-block;height:.7em;background:#90caf9;vertical-align:middle;"
	"max-width:120px}.bar.over{background:#e57373}\n"
	".key span{display:inline-block;padding:0 .5em;margin-right:.3em;border:1px solid #ccc}\n"
	"svg{max-width:100%;height:auto;background:#fafafa;border:1px solid #ddd;display:block;"
	"margin:.5em 0}svg text{font:12px sans-serif;fill:#333}\n"
	"svg .axis{stroke:#333}svg .grid{stroke:#e0e0e0}svg .minor{stroke:#f0f0f0}"
	"svg .guide{stroke:#999}svg polyline{fill:none;stroke-width:2}svg .cdf{stroke:#1565c0}"
	"svg circle.point{fill-opacity:.85}svg .falloff{stroke:#b71c1c;fill:#b71c1c;"
	"stroke-dasharray:2 3}\n"
	".none,.note{color:#607d8b}\n"
	"#compare tr.beyond td{background:#fff3e0}#compare tr td.win{background:#c8e6c9}"
	"#compare tr td.win.clear{background:#66bb6a;font-weight:bold}"
	"#compare tr.w-unknown td.winner{color:#e65100}.key span.win{background:#c8e6c9}"
	".key span.win.clear{background:#66bb6a}.key span.beyond{background:#fff3e0}\n";

/* ---- title and banner ---- */

static void head(const struct json_value *c, struct strbuf *o)
{
	const char *cluster = json_get_string(c, "cluster"), *job = json_get_string(c, "job_id");
	const char *verdict = json_get_string(c, "verdict");
	char a[32], b[32];
	double wall, budget;
	strbuf_addstr(o,
		      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		      "<title>vigil qualify: ");
	h(o, cluster, NAME_BYTES);
	strbuf_addstr(o, " (job ");
	h(o, job, NAME_BYTES);
	strbuf_addf(o, ")</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>vigil qualify: ", css);
	h(o, cluster, NAME_BYTES);
	strbuf_addf(o, " <span id=\"verdict\" class=\"v-%s\">", word_class(verdict, verdicts));
	h(o, verdict, NAME_BYTES);
	strbuf_addstr(o, "</span></h1>\n<p id=\"summary\">job <b id=\"job\">");
	h(o, job, NAME_BYTES);
	strbuf_addstr(o, "</b>, <span id=\"time\">");
	h(o, json_get_string(c, "time"), NAME_BYTES);
	strbuf_addf(o, "</span>, wall %s s of a budget of %s s",
		    card_num(c, "wall_s", &wall) ? card_fmt(a, wall) : "-",
		    card_num(c, "budget_s", &budget) ? card_fmt(b, budget) : "-");
	const struct json_value *drain = json_get(c, "drain");
	if (drain && drain->type == JSON_BOOL)
		strbuf_addstr(o,
			      drain->boolean ? ", nodes drained (--drain)" : ", nothing drained");
	strbuf_addstr(o, ", vigil ");
	h(o, json_get_string(c, "vigil_version"), NAME_BYTES);
	strbuf_addstr(o, "<br>\n<span id=\"reason\">");
	h(o, json_get_string(c, "reason"), TEXT_BYTES);
	strbuf_addstr(o, "</span></p>\n");
}

/* A card that does not say it is complete is read as partial: never a whole verdict without
 * the evidence that every stage ran. */
static void partial(const struct json_value *c, struct strbuf *o)
{
	const struct json_value *complete = json_get(c, "complete");
	if (complete && complete->type == JSON_BOOL && complete->boolean)
		return;
	strbuf_addstr(o, "<div class=\"banner\" id=\"partial\"><b>Partial scorecard.</b> ");
	if (complete && complete->type == JSON_BOOL)
		strbuf_addstr(o, "The run stopped before every stage ran (the budget ran out or it "
				 "was interrupted): what was not run is not judged.");
	else
		strbuf_addstr(o, "The card does not say that it is complete, so it is read as "
				 "partial.");
	const struct json_value *nr = array_of(c, "not_run");
	if (nr && nr->nr) {
		strbuf_addstr(o, "\n<ul id=\"not-run\">\n");
		for (size_t i = 0; i < nr->nr && i < MAX_STAGES; i++) {
			const struct json_value *e = nr->items[i];
			strbuf_addstr(o, "<li><b>");
			h(o, e->type == JSON_STRING ? e->string : json_get_string(e, "stage"),
			  NAME_BYTES);
			strbuf_addstr(o, "</b>: ");
			h(o, json_get_string(e, "why"), TEXT_BYTES);
			strbuf_addstr(o, "</li>\n");
		}
		strbuf_addstr(o, "</ul>");
		cut_note(o, nr->nr, MAX_STAGES, "stages not run");
	} else {
		strbuf_addstr(o, " The card does not list what was not run.");
	}
	strbuf_addstr(o, "</div>\n");
}

/* ---- stages ---- */

static void stages(const struct json_value *c, struct strbuf *o)
{
	const struct json_value *st = array_of(c, "stages");
	strbuf_addstr(o, "<h2>Stages</h2>\n");
	if (!st) {
		strbuf_addstr(o,
			      "<p class=\"none\" id=\"stages-none\">The card has no stages.</p>\n");
		return;
	}
	strbuf_addstr(o, "<table id=\"stages\">\n<tr><th>stage</th><th>status</th><th>wall (s)</th>"
			 "<th>budget (s)</th><th>of budget</th><th>nodes passed</th>"
			 "<th>failed</th><th>unknown</th><th>reason</th></tr>\n");
	for (size_t i = 0; i < st->nr && i < MAX_STAGES; i++) {
		const struct json_value *s = st->items[i];
		const char *status = json_get_string(s, "status");
		double wall, budget;
		strbuf_addstr(o, "<tr>");
		td_text(o, s, "name", NAME_BYTES);
		strbuf_addf(o, "<td class=\"s-%s\">", word_class(status, statuses));
		h(o, status, NAME_BYTES);
		strbuf_addstr(o, "</td>");
		td_num(o, s, "wall_s");
		td_num(o, s, "budget_s");
		if (card_num(s, "wall_s", &wall) && card_num(s, "budget_s", &budget) &&
		    budget > 0 && wall >= 0 && isfinite(wall / budget * 100)) {
			double pct = wall / budget * 100;
			strbuf_addf(o,
				    "<td class=\"n\"><span class=\"bar%s\" style=\"width:%.0fpx\">"
				    "</span> %.0f %%</td>",
				    pct > 100 ? " over" : "", fmin(pct, 100) * 1.2, pct);
		} else {
			strbuf_addstr(o, "<td class=\"n\">-</td>");
		}
		td_num(o, s, "nodes_passed");
		td_num(o, s, "nodes_failed");
		td_num(o, s, "nodes_unknown");
		td_text(o, s, "reason", TEXT_BYTES);
		strbuf_addstr(o, "</tr>\n");
	}
	strbuf_addstr(o, "</table>\n");
	cut_note(o, st->nr, MAX_STAGES, "stages");
}

/* ---- the heat table ---- */

struct col {
	const char *name, *unit;
	int better; /* +1 higher is better, -1 lower, 0 the card does not say */
	double median;
	bool has_median;
	double *vals; /* the nodes' values, ascending (for ranks the card lacks) */
	size_t n;
};

struct heat {
	struct col cols[MAX_COLS];
	size_t ncols;
	const char *stages[MAX_STAGES];
	size_t nstages;
	size_t left_out; /* figure or stage names past the limits */
};

static struct col *col_of(struct heat *t, const char *name)
{
	for (size_t i = 0; i < t->ncols; i++)
		if (!strcmp(t->cols[i].name, name))
			return &t->cols[i];
	if (t->ncols == MAX_COLS) {
		t->left_out++;
		return NULL;
	}
	struct col *k = &t->cols[t->ncols++];
	memset(k, 0, sizeof(*k));
	k->name = name;
	return k;
}

static void add_stage(struct heat *t, const char *name)
{
	for (size_t i = 0; i < t->nstages; i++)
		if (!strcmp(t->stages[i], name))
			return;
	if (t->nstages == MAX_STAGES)
		t->left_out++;
	else
		t->stages[t->nstages++] = name;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Columns: the cluster's figures[] in its order, then any figure only some node has; stages
 * likewise from stages[] and the nodes. Each column's node values sorted, and its median the
 * card's (or the nodes' when the card has none). */
static void heat_columns(const struct json_value *c, const struct json_value *nodes, struct heat *t)
{
	const struct json_value *figs = array_of(c, "figures"), *st = array_of(c, "stages");
	for (size_t i = 0; figs && i < figs->nr; i++) {
		const char *name = json_get_string(figs->items[i], "name");
		struct col *k = name ? col_of(t, name) : NULL;
		if (!k || k->unit || k->better)
			continue;
		const char *better = json_get_string(figs->items[i], "better");
		k->unit = json_get_string(figs->items[i], "unit");
		k->better = !better			? 0
			    : !strcmp(better, "higher") ? 1
			    : !strcmp(better, "lower")	? -1
							: 0;
		k->has_median = card_num(figs->items[i], "median", &k->median);
	}
	for (size_t i = 0; st && i < st->nr; i++) {
		const char *name = json_get_string(st->items[i], "name");
		if (name)
			add_stage(t, name);
	}
	size_t rows = nodes->nr < MAX_ROWS ? nodes->nr : MAX_ROWS;
	for (size_t i = 0; i < rows; i++) {
		const struct json_value *f = json_get(nodes->items[i], "figures");
		const struct json_value *s = json_get(nodes->items[i], "stages");
		for (size_t j = 0; f && f->type == JSON_OBJECT && j < f->nr; j++)
			col_of(t, f->keys[j]);
		for (size_t j = 0; s && s->type == JSON_OBJECT && j < s->nr; j++)
			add_stage(t, s->keys[j]);
	}
	for (size_t k = 0; k < t->ncols; k++) {
		struct col *col = &t->cols[k];
		col->vals = xcalloc(rows + 1, sizeof(double));
		for (size_t i = 0; i < rows; i++)
			if (card_num(json_get(nodes->items[i], "figures"), col->name,
				     &col->vals[col->n]))
				col->n++;
		qsort(col->vals, col->n, sizeof(double), dbl_cmp);
		if (!col->has_median && col->n) {
			col->median =
				col->n % 2
					? col->vals[col->n / 2]
					: (col->vals[col->n / 2 - 1] + col->vals[col->n / 2]) / 2;
			col->has_median = true;
		}
	}
}

/* 1 + how many nodes are strictly better than v. */
static size_t rank_of(const struct col *k, double v)
{
	size_t lo = 0, hi = k->n;
	if (k->better > 0) { /* count of values > v: n - (first index with value > v) */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (k->vals[mid] <= v)
				lo = mid + 1;
			else
				hi = mid;
		}
		return 1 + (k->n - lo);
	}
	while (lo < hi) { /* count of values < v */
		size_t mid = (lo + hi) / 2;
		if (k->vals[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 1 + lo;
}

/*
 * How a node sits against the cluster's median in the figure's better direction, as one of five
 * classes (docs/QUALIFY.md): h4 more than 1 % better, h3 within 1 %, h2 1-3 % worse, h1 3-10 %
 * worse, h0 more than 10 % worse; hn when the card does not say which way is better. Relative
 * to the median, not to the range: four nodes within 1 % of each other are all green, where a
 * min-max scale would paint the slowest of them red.
 */
static int heat_level(const struct col *k, double v, double *dev)
{
	if (!k->better || !k->has_median || k->median == 0)
		return -1;
	*dev = (v - k->median) / fabs(k->median) * k->better;
	return *dev >= 0.01 ? 4 : *dev > -0.01 ? 3 : *dev > -0.03 ? 2 : *dev > -0.10 ? 1 : 0;
}

static bool in_list(const struct json_value *list, const char *name)
{
	for (size_t i = 0; list && list->type == JSON_ARRAY && i < list->nr; i++)
		if (list->items[i]->type == JSON_STRING && !strcmp(list->items[i]->string, name))
			return true;
	return false;
}

static void heat_cell(const struct col *k, const struct json_value *node, struct strbuf *o)
{
	double v, dev = 0, r;
	char a[32], b[32];
	if (!card_num(json_get(node, "figures"), k->name, &v)) {
		strbuf_addstr(o, "<td class=\"n missing\">-</td>");
		return;
	}
	int level = heat_level(k, v, &dev);
	bool outlier = in_list(json_get(node, "outliers"), k->name);
	size_t rank = card_num(json_get(node, "ranks"), k->name, &r) && r >= 1 && r < 1e9
			      ? (size_t)r
		      : k->better ? rank_of(k, v)
				  : 0;
	strbuf_addf(o, "<td class=\"n heat h%c%s\" title=\"", level < 0 ? 'n' : '0' + level,
		    outlier ? " outlier" : "");
	h(o, k->name, NAME_BYTES);
	strbuf_addf(o, " %s ", card_fmt(a, v));
	h(o, k->unit ? k->unit : "", NAME_BYTES);
	if (level >= 0)
		strbuf_addf(o, ": %.1f %% %s than the median %s", fabs(dev) * 100,
			    dev < 0 ? "worse" : "better", card_fmt(b, k->median));
	if (rank)
		strbuf_addf(o, "; rank %zu of %zu", rank, k->n);
	strbuf_addf(o, "%s\">%s%s", outlier ? "; an outlier" : "", card_fmt(a, v),
		    outlier ? " &#9888;" : "");
	if (rank)
		strbuf_addf(o, "<sup>#%zu</sup>", rank);
	strbuf_addstr(o, "</td>");
}

static void heat_row(const struct heat *t, const struct json_value *node, struct strbuf *o)
{
	const struct json_value *st = json_get(node, "stages");
	const char *action = json_get_string(node, "action");
	bool failed = false;
	for (size_t j = 0; j < t->nstages; j++) {
		const char *s = json_get_string(st, t->stages[j]);
		failed |= s && !strcmp(s, "failed");
	}
	strbuf_addf(o, "<tr class=\"node%s\"><th class=\"node\">", failed ? " failed" : "");
	h(o, json_get_string(node, "node"), NAME_BYTES);
	/* the action next to the name: the table scrolls sideways past the figures */
	strbuf_addf(o, "</th><td class=\"action a-%s\">", word_class(action, actions));
	h(o, action, NAME_BYTES);
	strbuf_addstr(o, "</td>");
	for (size_t j = 0; j < t->nstages; j++) {
		const char *s = json_get_string(st, t->stages[j]);
		strbuf_addf(o, "<td class=\"stage s-%s\">",
			    s ? word_class(s, statuses) : "not_run");
		if (!s)
			strbuf_addstr(o, "-");
		else if (!strcmp(s, "passed"))
			strbuf_addstr(o, "pass");
		else if (!strcmp(s, "failed"))
			strbuf_addstr(o, "FAIL");
		else
			h(o, s, NAME_BYTES);
		strbuf_addstr(o, "</td>");
	}
	for (size_t k = 0; k < t->ncols; k++)
		heat_cell(&t->cols[k], node, o);
	strbuf_addstr(o, "<td class=\"reason\">");
	h(o, json_get_string(node, "reason"), TEXT_BYTES);
	strbuf_addstr(o, "</td></tr>\n");
}

static void heat(const struct json_value *c, struct strbuf *o)
{
	const struct json_value *nodes = array_of(c, "nodes");
	strbuf_addstr(o, "<h2>Nodes</h2>\n");
	if (!nodes || !nodes->nr) {
		strbuf_addstr(o,
			      "<p class=\"none\" id=\"nodes-none\">The card has no nodes.</p>\n");
		return;
	}
	struct heat *t = xcalloc(1, sizeof(*t));
	heat_columns(c, nodes, t);
	strbuf_addstr(o, "<p class=\"key\">Each figure's cell against the cluster's median, in the "
			 "direction that is better: <span class=\"h4\">&gt;1 % better</span>"
			 "<span class=\"h3\">within 1 %</span><span class=\"h2\">1-3 % worse</span>"
			 "<span class=\"h1\">3-10 % worse</span><span class=\"h0\">&gt;10 % worse"
			 "</span><span class=\"hn\">direction unknown</span>; #rank among the "
			 "nodes (1 is best); &#9888; an outlier.</p>\n<div class=\"wrap\">"
			 "<table id=\"heat\">\n<tr><th>node</th><th>action</th>");
	for (size_t j = 0; j < t->nstages; j++) {
		strbuf_addstr(o, "<th class=\"stage\">");
		h(o, t->stages[j], NAME_BYTES);
		strbuf_addstr(o, "</th>");
	}
	for (size_t k = 0; k < t->ncols; k++) {
		const struct col *col = &t->cols[k];
		strbuf_addstr(o, "<th class=\"figure\">");
		h(o, col->name, NAME_BYTES);
		if (col->unit) {
			strbuf_addstr(o, "<br>");
			h(o, col->unit, NAME_BYTES);
		}
		strbuf_addstr(o, col->better > 0 ? " &#8593;" : col->better < 0 ? " &#8595;" : "");
		strbuf_addstr(o, "</th>");
	}
	strbuf_addstr(o, "<th>reason</th></tr>\n");
	for (size_t i = 0; i < nodes->nr && i < MAX_ROWS; i++)
		heat_row(t, nodes->items[i], o);
	strbuf_addstr(o, "</table></div>\n");
	cut_note(o, nodes->nr, MAX_ROWS, "nodes");
	if (t->left_out)
		strbuf_addf(o,
			    "<p class=\"note\">%zu figure or stage names past the first %d "
			    "figures and %d stages are not shown.</p>\n",
			    t->left_out, MAX_COLS, MAX_STAGES);
	for (size_t k = 0; k < t->ncols; k++)
		free(t->cols[k].vals);
	free(t);
}

/* ---- the cluster's figures, storage, training, drains ---- */

static void distribution(const struct json_value *c, struct strbuf *o)
{
	const struct json_value *figs = array_of(c, "figures");
	strbuf_addstr(o, "<h2>Cluster distribution</h2>\n");
	if (!figs || !figs->nr) {
		strbuf_addstr(o, "<p class=\"none\" id=\"figures-none\">The card has no cluster "
				 "figures.</p>\n");
		return;
	}
	strbuf_addstr(o, "<table id=\"figures\">\n<tr><th>figure</th><th>unit</th><th>better</th>"
			 "<th>nodes</th><th>median</th><th>p5</th><th>worst</th><th>on</th>"
			 "<th>best</th><th>on</th></tr>\n");
	for (size_t i = 0; i < figs->nr && i < MAX_ROWS; i++) {
		const struct json_value *f = figs->items[i];
		strbuf_addstr(o, "<tr>");
		td_text(o, f, "name", NAME_BYTES);
		td_text(o, f, "unit", NAME_BYTES);
		td_text(o, f, "better", NAME_BYTES);
		td_num(o, f, "n");
		td_num(o, f, "median");
		td_num(o, f, "p5");
		td_num(o, f, "worst");
		td_text(o, f, "worst_node", NAME_BYTES);
		td_num(o, f, "best");
		td_text(o, f, "best_node", NAME_BYTES);
		strbuf_addstr(o, "</tr>\n");
	}
	strbuf_addstr(o, "</table>\n");
	cut_note(o, figs->nr, MAX_ROWS, "figures");
}

static void nccl_table(const struct json_value *nccl, struct strbuf *o)
{
	if (!nccl || nccl->type != JSON_ARRAY || !nccl->nr)
		return;
	strbuf_addstr(o, "<table id=\"nccl\">\n<tr><th>op</th><th>nodes</th><th>GPUs</th>"
			 "<th>busbw (GB/s)</th><th>expected</th><th>ratio</th><th>status</th>"
			 "</tr>\n");
	for (size_t i = 0; i < nccl->nr && i < MAX_ROWS; i++) {
		const struct json_value *e = nccl->items[i];
		const char *status = json_get_string(e, "status");
		strbuf_addstr(o, "<tr>");
		td_text(o, e, "op", NAME_BYTES);
		td_num(o, e, "nodes");
		td_num(o, e, "gpus");
		td_num(o, e, "busbw_gbps");
		td_num(o, e, "expected_gbps");
		td_num(o, e, "ratio");
		strbuf_addf(o, "<td class=\"s-%s\">", word_class(status, statuses));
		h(o, status, NAME_BYTES);
		strbuf_addstr(o, "</td></tr>\n");
	}
	strbuf_addstr(o, "</table>\n");
	cut_note(o, nccl->nr, MAX_ROWS, "NCCL results");
}

/* The IB pairs and the burn-in step (only when the fabric stage got to InfiniBand). */
static void infiniband(const struct json_value *c, struct strbuf *o)
{
	const struct json_value *pairs = array_of(c, "ib_pairs"), *b = json_get(c, "burnin");
	bool have_b = b && b->type == JSON_OBJECT;
	if ((!pairs || !pairs->nr) && !have_b)
		return;
	strbuf_addstr(o, "<h2>InfiniBand</h2>\n");
	if (pairs && pairs->nr) {
		strbuf_addstr(o, "<table id=\"ib-pairs\">\n<tr><th>node</th><th>with</th>"
				 "<th>Gb/s</th><th>status</th><th>reason</th></tr>\n");
		for (size_t i = 0; i < pairs->nr && i < MAX_ROWS; i++) {
			const struct json_value *e = pairs->items[i];
			const char *status = json_get_string(e, "status");
			strbuf_addstr(o, "<tr>");
			td_text(o, e, "a", NAME_BYTES);
			td_text(o, e, "b", NAME_BYTES);
			td_num(o, e, "gbps");
			strbuf_addf(o, "<td class=\"s-%s\">", word_class(status, statuses));
			h(o, status, NAME_BYTES);
			strbuf_addstr(o, "</td>");
			td_text(o, e, "reason", TEXT_BYTES);
			strbuf_addstr(o, "</tr>\n");
		}
		strbuf_addstr(o, "</table>\n");
		cut_note(o, pairs->nr, MAX_ROWS, "IB pairs");
	}
	if (have_b) {
		const char *status = json_get_string(b, "status");
		strbuf_addf(o, "<p id=\"burnin\">Burn-in: <span class=\"s-%s\">",
			    word_class(status, statuses));
		h(o, status, NAME_BYTES);
		strbuf_addstr(o, "</span>: ");
		h(o, json_get_string(b, "reason"), TEXT_BYTES);
		strbuf_addstr(o, "</p>\n");
	}
}

static void storage(const struct json_value *c, struct strbuf *o)
{
	const struct json_value *s = json_get(c, "storage");
	strbuf_addstr(o, "<h2>Storage</h2>\n");
	if (!s || s->type != JSON_OBJECT) {
		strbuf_addf(o, "<p class=\"none\" id=\"storage-none\">%s</p>\n",
			    !s || s->type == JSON_NULL ? "The storage stage was not run."
						       : "The card's storage cannot be read.");
		return;
	}
	const struct json_value *fs = json_get(s, "fsync_ms");
	strbuf_addstr(o, "<table id=\"storage\">\n<tr><th>directory</th><th>writers per node</th>"
			 "<th>write (MiB/s)</th><th>read (MiB/s)</th><th>metadata (ops/s)</th>"
			 "<th>fsync p50 (ms)</th><th>p99</th><th>max</th><th>stalls</th>"
			 "<th>errors</th></tr>\n<tr>");
	td_text(o, s, "dir", TEXT_BYTES);
	td_num(o, s, "writers_per_node");
	td_num(o, s, "write_mib_s");
	td_num(o, s, "read_mib_s");
	td_num(o, s, "meta_ops_s");
	td_num(o, fs, "p50");
	td_num(o, fs, "p99");
	td_num(o, fs, "max");
	td_num(o, s, "stalls");
	td_num(o, s, "errors");
	strbuf_addstr(o, "</tr>\n</table>\n<h3>fsync latency, cumulative</h3>\n");
	qhtml_fsync_cdf(json_get(s, "fsync_cdf"), o);
}

static void train(const struct json_value *c, struct strbuf *o)
{
	static const char *const named[] = { "step_time_s", "tokens_per_s", "mfu" };
	const struct json_value *t = json_get(c, "train");
	strbuf_addstr(o, "<h2>Training</h2>\n");
	if (!t || t->type != JSON_OBJECT) {
		strbuf_addf(o, "<p class=\"none\" id=\"train-none\">%s</p>\n",
			    !t || t->type == JSON_NULL ? "No training run (no --train)."
						       : "The card's train cannot be read.");
		return;
	}
	strbuf_addstr(o, "<table id=\"train\">\n");
	for (size_t i = 0; i < ARRAY_SIZE(named); i++) {
		strbuf_addf(o, "<tr><th>%s</th>", named[i]);
		td_num(o, t, named[i]);
		strbuf_addstr(o, "</tr>\n");
	}
	/* whatever else the command reports about the run, numbers and words only */
	for (size_t i = 0; i < t->nr && i < MAX_STAGES; i++) {
		const struct json_value *v = t->items[i];
		bool is_named = false;
		for (size_t j = 0; j < ARRAY_SIZE(named); j++)
			is_named |= !strcmp(t->keys[i], named[j]);
		if (is_named || (v->type != JSON_NUMBER && v->type != JSON_STRING))
			continue;
		strbuf_addstr(o, "<tr><th>");
		h(o, t->keys[i], NAME_BYTES);
		strbuf_addstr(o, "</th>");
		if (v->type == JSON_NUMBER)
			td_num(o, t, t->keys[i]);
		else
			td_text(o, t, t->keys[i], TEXT_BYTES);
		strbuf_addstr(o, "</tr>\n");
	}
	strbuf_addstr(o, "</table>\n");
	/* --train-groups: the same job on each group at once */
	const struct json_value *g = array_of(t, "groups");
	if (!g)
		return;
	strbuf_addstr(o, "<h3>By node group</h3>\n<table id=\"train-groups\">\n<tr><th>group</th>"
			 "<th>nodes</th><th>step_time_s</th><th>tokens_per_s</th><th>mfu</th>"
			 "<th>outcome</th></tr>\n");
	for (size_t i = 0; i < g->nr && i < MAX_ROWS; i++) {
		const struct json_value *e = g->items[i], *hs = json_get(e, "hosts");
		strbuf_addstr(o, "<tr>");
		td_text(o, e, "name", NAME_BYTES);
		strbuf_addstr(o, "<td>");
		for (size_t k = 0; hs && hs->type == JSON_ARRAY && k < hs->nr && k < 16; k++) {
			if (k)
				strbuf_addstr(o, ", ");
			h(o, hs->items[k]->type == JSON_STRING ? hs->items[k]->string : "?",
			  NAME_BYTES);
		}
		if (hs && hs->type == JSON_ARRAY && hs->nr > 16)
			strbuf_addf(o, " and %zu more", hs->nr - 16);
		strbuf_addstr(o, "</td>");
		td_num(o, e, "step_time_s");
		td_num(o, e, "tokens_per_s");
		td_num(o, e, "mfu");
		td_text(o, e, "outcome", TEXT_BYTES);
		strbuf_addstr(o, "</tr>\n");
	}
	strbuf_addstr(o, "</table>\n");
	cut_note(o, g->nr, MAX_ROWS, "groups");
}

static void to_drain(const struct json_value *c, struct strbuf *o)
{
	const struct json_value *d = array_of(c, "to_drain"), *r = array_of(c, "to_return");
	strbuf_addstr(o, "<h2>Nodes to drain and to return</h2>\n");
	if (!d || !d->nr) {
		strbuf_addf(o, "<p id=\"drain-none\">%s</p>\n",
			    d ? "No node to drain." : "The card does not list nodes to drain.");
	} else {
		strbuf_addstr(o, "<table id=\"to-drain\">\n<tr><th>node</th><th>reason</th>"
				 "<th>drained</th></tr>\n");
		for (size_t i = 0; i < d->nr && i < MAX_ROWS; i++) {
			const struct json_value *e = d->items[i], *done = json_get(e, "done");
			strbuf_addstr(o, "<tr>");
			td_text(o, e, "node", NAME_BYTES);
			td_text(o, e, "reason", TEXT_BYTES);
			strbuf_addf(o, "<td>%s</td></tr>\n",
				    !done || done->type != JSON_BOOL ? "-"
				    : done->boolean		     ? "yes"
								     : "no");
		}
		strbuf_addstr(o, "</table>\n");
		cut_note(o, d->nr, MAX_ROWS, "nodes to drain");
	}
	strbuf_addstr(o, "<p id=\"to-return\">To hand back to the provider: ");
	if (!r)
		strbuf_addstr(o, "- (not listed)");
	else if (!r->nr)
		strbuf_addstr(o, "none");
	for (size_t i = 0; r && i < r->nr && i < MAX_ROWS; i++) {
		strbuf_addstr(o, i ? ", <b>" : "<b>");
		h(o, r->items[i]->type == JSON_STRING ? r->items[i]->string : NULL, NAME_BYTES);
		strbuf_addstr(o, "</b>");
	}
	strbuf_addstr(o, ".</p>\n");
}

int qualify_html(const struct json_value *card, const struct json_value *old_card,
		 struct strbuf *out, struct strbuf *err)
{
	if (qualify_card_check(card, err))
		return -1;
	head(card, out);
	partial(card, out);
	stages(card, out);
	heat(card, out);
	distribution(card, out);
	strbuf_addstr(out, "<h2>NCCL between nodes</h2>\n");
	qhtml_busbw(json_get(card, "nccl"), json_get(card, "nccl_falloff_nodes"), out);
	nccl_table(json_get(card, "nccl"), out);
	infiniband(card, out);
	storage(card, out);
	train(card, out);
	if (old_card)
		qhtml_compare(old_card, card, out);
	to_drain(card, out);
	strbuf_addstr(out, "<footer class=\"note\">Written by vigil from the qualify scorecard; "
			   "the page reads nothing from elsewhere.</footer>\n</body>\n</html>\n");
	return 0;
}
