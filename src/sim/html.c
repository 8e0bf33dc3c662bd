/* html.c: vigil sim's page, drawn from its own JSON (html.h). No script: the browser has
 * nothing to run, only markup and inline SVG to draw. */
#include "html.h"

#include "../lib/html.h"
#include "../lib/json.h"
#include "../lib/util.h"
#include "../supervise/runreport.h"

#include <math.h>
#include <string.h>

#define W 800.0
#define H 300.0
#define LEFT 70.0
#define RIGHT 20.0
#define TOP 16.0
#define BOTTOM 48.0
#define MAX_POINTS 64

static void text(struct strbuf *out, const char *s, size_t max)
{
	html_add_text(out, s, max);
}

static double number(const struct json_value *o, const char *key, double dflt)
{
	double v;
	return json_get_number(o, key, &v) && isfinite(v) ? v : dflt;
}

/* ---- a line of points with intervals ---- */

struct point {
	double x, y, lo, hi;
};

#define MAX_LINES 4 /* the other policies' curves (sim has three policies) */

/* Another policy's points over the same sweep (its own entry of "policies"). */
struct line {
	const char *name;
	struct point p[MAX_POINTS];
	size_t nr;
};

struct chart {
	const char *id, *xlabel;
	bool logx;
	struct point p[MAX_POINTS];
	size_t nr;
	const char *name;           /* the first policy's (with other lines) */
	struct line more[MAX_LINES];
	size_t nmore;
	double x0, x1, y0, y1;
};

static double cx(const struct chart *c, double x)
{
	double f = c->logx ? (log(x) - log(c->x0)) / (log(c->x1) - log(c->x0))
			   : (x - c->x0) / (c->x1 - c->x0);
	if (!isfinite(f))
		f = 0.5;
	return LEFT + f * (W - LEFT - RIGHT);
}

static double cy(const struct chart *c, double y)
{
	return TOP + (c->y1 - y) / (c->y1 - c->y0) * (H - TOP - BOTTOM);
}

static void bounds(struct chart *c, const double *marks, size_t nmarks)
{
	c->x0 = c->x1 = c->p[0].x;
	c->y0 = c->p[0].lo;
	c->y1 = c->p[0].hi;
	for (size_t i = 0; i < c->nr; i++) {
		c->x0 = fmin(c->x0, c->p[i].x);
		c->x1 = fmax(c->x1, c->p[i].x);
		c->y0 = fmin(c->y0, c->p[i].lo);
		c->y1 = fmax(c->y1, c->p[i].hi);
	}
	for (size_t l = 0; l < c->nmore; l++)
		for (size_t i = 0; i < c->more[l].nr; i++) {
			const struct point *q = &c->more[l].p[i];
			c->x0 = fmin(c->x0, q->x);
			c->x1 = fmax(c->x1, q->x);
			c->y0 = fmin(c->y0, q->lo);
			c->y1 = fmax(c->y1, q->hi);
		}
	for (size_t i = 0; i < nmarks; i++)
		if (isfinite(marks[i]) && marks[i] > 0) {
			c->x0 = fmin(c->x0, marks[i]);
			c->x1 = fmax(c->x1, marks[i]);
		}
	if (c->x1 <= c->x0) { /* one point: a span around it */
		c->x0 = c->logx ? c->x0 / 2 : c->x0 - 1;
		c->x1 = c->logx ? c->x1 * 2 : c->x1 + 1;
	} else if (c->logx) {
		double pad = pow(c->x1 / c->x0, 0.04);
		c->x0 /= pad;
		c->x1 *= pad;
	}
	double pad = (c->y1 - c->y0) * 0.1;
	if (pad < 0.002)
		pad = 0.002;
	c->y0 = fmax(0, c->y0 - pad);
	c->y1 = fmin(1, c->y1 + pad);
	if (c->y1 <= c->y0)
		c->y1 = c->y0 + 0.01;
}

static void axes(struct strbuf *out, const struct chart *c)
{
	double bottom = H - BOTTOM;
	strbuf_addf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		    "stroke=\"#333\"/>\n", LEFT, bottom, W - RIGHT, bottom);
	strbuf_addf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		    "stroke=\"#333\"/>\n", LEFT, TOP, LEFT, bottom);
	for (int i = 0; i <= 4; i++) {
		double v = c->y0 + (c->y1 - c->y0) * i / 4, y = cy(c, v);
		strbuf_addf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			    "stroke=\"#eee\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
			    "text-anchor=\"end\">%.3f</text>\n",
			    LEFT, y, W - RIGHT, y, LEFT - 6, y + 4, v);
	}
	for (size_t i = 0; i < c->nr; i++)
		strbuf_addf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
			    "text-anchor=\"middle\">%g</text>\n",
			    cx(c, c->p[i].x), bottom + 15, c->p[i].x);
	strbuf_addf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">",
		    (LEFT + W - RIGHT) / 2, H - 8);
	text(out, c->xlabel, 80);
	strbuf_addf(out, "</text>\n<text x=\"14\" y=\"%.1f\" font-size=\"12\" "
		    "transform=\"rotate(-90 14 %.1f)\" text-anchor=\"middle\">ETTR</text>\n",
		    (TOP + bottom) / 2, (TOP + bottom) / 2);
}

/* A vertical line at x, its label on the right (row 0) or the left (row 1) of it: two marks
 * close together do not write over each other. */
static void mark(struct strbuf *out, const struct chart *c, double x, const char *cls,
		 const char *colour, const char *label, int row)
{
	if (!isfinite(x) || x <= 0)
		return;
	double px = cx(c, x);
	strbuf_addf(out, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		    "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"6 4\"><title>%s %.0f s"
		    "</title></line>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\" "
		    "text-anchor=\"%s\">%s %.0f s</text>\n",
		    cls, px, TOP, px, H - BOTTOM, colour, label, x, row ? px - 4 : px + 4,
		    TOP + 12 + 14 * row, colour, row ? "end" : "start", label, x);
}

static const char *const line_colours[1 + MAX_LINES] = { "#1565c0", "#ef6c00", "#6a1b9a",
							   "#2e7d32", "#5d4037" };

/* One policy's curve: the line, its intervals, its points; with several, its name at the
 * line's right end. */
static void curve(struct strbuf *out, const struct chart *c, const struct point *pts, size_t nr,
		  const char *name, const char *colour)
{
	strbuf_addf(out, "<polyline class=\"ettr\" fill=\"none\" stroke=\"%s\" "
		    "stroke-width=\"2\" points=\"", colour);
	for (size_t i = 0; i < nr; i++)
		strbuf_addf(out, "%s%.1f,%.1f", i ? " " : "", cx(c, pts[i].x), cy(c, pts[i].y));
	strbuf_addstr(out, "\"/>\n");
	for (size_t i = 0; i < nr; i++) {
		const struct point *p = &pts[i];
		double x = cx(c, p->x);
		if (p->hi > p->lo)
			strbuf_addf(out, "<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				    "y2=\"%.1f\" stroke=\"%s\"/>\n",
				    x, cy(c, p->lo), x, cy(c, p->hi), colour);
		strbuf_addf(out, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
			    "fill=\"%s\"><title>", x, cy(c, p->y), colour);
		if (name) {
			text(out, name, 64);
			strbuf_addstr(out, " ");
		}
		strbuf_addf(out, "%g: ETTR %.4f [%.4f, %.4f]</title></circle>\n", p->x, p->y,
			    p->lo, p->hi);
	}
	if (name && nr) {
		const struct point *e = &pts[nr - 1];
		strbuf_addf(out, "<text class=\"line-name\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
			    "fill=\"%s\" text-anchor=\"end\">", cx(c, e->x) - 6, cy(c, e->y) - 8,
			    colour);
		text(out, name, 64);
		strbuf_addstr(out, "</text>\n");
	}
}

static void chart_svg(struct strbuf *out, struct chart *c, const double *marks, size_t nmarks)
{
	bounds(c, marks, nmarks);
	strbuf_addf(out, "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
		    "viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n", c->id, W, H);
	axes(out, c);
	curve(out, c, c->p, c->nr, c->nmore ? c->name : NULL, line_colours[0]);
	for (size_t l = 0; l < c->nmore; l++)
		curve(out, c, c->more[l].p, c->more[l].nr, c->more[l].name, line_colours[1 + l]);
}

/* The rows of the sweep over key, as points; 0 when there are none. */
static size_t sweep_points(const struct json_value *v, const char *key, struct chart *c)
{
	const struct json_value *rows = json_get(v, "sweep");
	c->nr = 0;
	for (size_t i = 0; rows && rows->type == JSON_ARRAY && i < rows->nr; i++) {
		const struct json_value *r = rows->items[i];
		const char *k = json_get_string(r, "parameter");
		double x = number(r, "value", NAN), y = number(r, "ettr", NAN);
		if (!k || strcmp(k, key) || !(x > 0) || !isfinite(y) || c->nr == MAX_POINTS)
			continue;
		struct point *p = &c->p[c->nr++];
		p->x = x;
		p->y = p->lo = p->hi = y;
		const struct json_value *ci = json_get(r, "ettr_ci95");
		if (ci && ci->type == JSON_ARRAY && ci->nr == 2 && ci->items[0]->type == JSON_NUMBER &&
		    ci->items[1]->type == JSON_NUMBER) {
			p->lo = ci->items[0]->number;
			p->hi = ci->items[1]->number;
		}
	}
	return c->nr;
}

/* The other policies' rows over key (each entry of "policies" with its own sweep, the
 * first policy's, at the top level, left out), as more lines of c. */
static void policy_lines(const struct json_value *v, const char *key, struct chart *c)
{
	const struct json_value *pol = json_get(v, "policies");
	const char *first = json_get_string(json_get(v, "params"), "policy");
	struct chart one;
	c->nmore = 0;
	c->name = first ? first : "first policy";
	for (size_t i = 0; pol && pol->type == JSON_OBJECT && i < pol->nr; i++) {
		if ((first && !strcmp(pol->keys[i], first)) || c->nmore == MAX_LINES)
			continue;
		memset(&one, 0, sizeof(one));
		if (!sweep_points(pol->items[i], key, &one))
			continue;
		struct line *l = &c->more[c->nmore++];
		l->name = pol->keys[i];
		l->nr = one.nr;
		memcpy(l->p, one.p, one.nr * sizeof(one.p[0]));
	}
}

/* ---- the time lost, one stacked bar per policy ---- */

static const struct {
	const char *name, *colour;
} causes[] = {
	{ "detection", "#ef6c00" },        { "restart", "#c62828" },
	{ "recomputation", "#6a1b9a" },    { "waiting_for_nodes", "#5d4037" },
	{ "checkpoint", "#1565c0" },       { "slowdown", "#f9a825" },
};
#define OTHER_COLOUR "#90a4ae"

static const char *cause_colour(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
		if (!strcmp(name, causes[i].name))
			return causes[i].colour;
	return OTHER_COLOUR;
}

struct bar {
	const char *name;
	const struct json_value *lost;
};

static void lost_svg(struct strbuf *out, const struct json_value *v)
{
	struct bar bars[16];
	size_t nb = 0;
	const struct json_value *pol = json_get(v, "policies");
	for (size_t i = 0; pol && pol->type == JSON_OBJECT && i < pol->nr && nb < 16; i++) {
		const struct json_value *l = json_get(pol->items[i], "lost_seconds_by_cause");
		if (l && l->type == JSON_OBJECT)
			bars[nb++] = (struct bar){ pol->keys[i], l };
	}
	if (!nb) { /* the policies carry no breakdown: the top level's, the run's policy */
		const char *name = pol && pol->type == JSON_OBJECT && pol->nr ? pol->keys[0] : "vigil";
		const struct json_value *l = json_get(v, "lost_seconds_by_cause");
		if (!l || l->type != JSON_OBJECT) {
			strbuf_addstr(out, "<p class=\"none\">No time lost by cause in the output.</p>\n");
			return;
		}
		bars[nb++] = (struct bar){ name, l };
	}
	double most = 0;
	for (size_t b = 0; b < nb; b++) {
		double sum = 0;
		for (size_t i = 0; i < bars[b].lost->nr; i++)
			if (bars[b].lost->items[i]->type == JSON_NUMBER)
				sum += fmax(0, bars[b].lost->items[i]->number);
		most = fmax(most, sum);
	}
	double hmax = most > 0 ? most / 3600 * 1.1 : 1, plot = H - TOP - BOTTOM,
	       step = (W - LEFT - RIGHT - 30) / (double)nb, bw = step - 40 < 90 ? step - 40 : 90;
	if (bw < 8)
		bw = 8;
	strbuf_addf(out, "<svg id=\"lost\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
		    "viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n", W, H);
	for (int i = 0; i <= 4; i++) {
		double h = hmax * i / 4, y = H - BOTTOM - plot * i / 4;
		strbuf_addf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			    "stroke=\"#eee\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
			    "text-anchor=\"end\">%.1f h</text>\n",
			    LEFT, y, W - RIGHT, y, LEFT - 6, y + 4, h);
	}
	for (size_t b = 0; b < nb; b++) {
		double x = LEFT + 30 + b * step, y = H - BOTTOM;
		for (size_t i = 0; i < bars[b].lost->nr; i++) {
			const struct json_value *s = bars[b].lost->items[i];
			if (s->type != JSON_NUMBER || !(s->number > 0))
				continue;
			double h = s->number / 3600 / hmax * plot;
			y -= h;
			const char *cause = bars[b].lost->keys[i];
			strbuf_addf(out, "<rect class=\"cause\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				    "height=\"%.1f\" fill=\"%s\"><title>",
				    x, y, bw, h, cause_colour(cause));
			text(out, bars[b].name, 48);
			strbuf_addstr(out, ": ");
			text(out, cause, 48);
			strbuf_addf(out, " %.2f h</title></rect>\n", s->number / 3600);
		}
		strbuf_addf(out, "<text class=\"policy\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
			    "text-anchor=\"middle\">", x + bw / 2, H - BOTTOM + 16);
		text(out, bars[b].name, 48);
		strbuf_addstr(out, "</text>\n");
	}
	strbuf_addstr(out, "</svg>\n<p class=\"legend\" id=\"legend\">");
	for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
		strbuf_addf(out, "<span><svg width=\"12\" height=\"12\" "
			    "xmlns=\"http://www.w3.org/2000/svg\"><rect width=\"12\" height=\"12\" "
			    "fill=\"%s\"/></svg> %s</span>", causes[i].colour, causes[i].name);
	strbuf_addstr(out, "</p>\n");
}

/* ---- tables ---- */

static void by_class_table(struct strbuf *out, const struct json_value *v)
{
	const struct json_value *o = json_get(v, "interruptions_by_class");
	if (!o || o->type != JSON_OBJECT)
		return;
	strbuf_addstr(out, "<h2>Interruptions by class</h2>\n<div class=\"scroll\"><table "
		      "id=\"by-class\"><tr><th>class</th><th>interruptions</th></tr>\n");
	for (size_t i = 0; i < o->nr; i++) {
		strbuf_addstr(out, "<tr><td>");
		text(out, o->keys[i], 64);
		strbuf_addf(out, "</td><td>%.0f</td></tr>\n",
			    o->items[i]->type == JSON_NUMBER ? o->items[i]->number : 0);
	}
	strbuf_addstr(out, "</table></div>\n");
}

static void sweep_table(struct strbuf *out, const struct json_value *v)
{
	const struct json_value *rows = json_get(v, "sweep");
	if (!rows || rows->type != JSON_ARRAY || !rows->nr)
		return;
	strbuf_addstr(out, "<h2>The sweep</h2>\n<div class=\"scroll\"><table id=\"sweep\"><tr>"
		      "<th>parameter</th><th>value</th><th>ETTR</th><th>95 % interval</th>"
		      "<th>goodput</th><th>interruptions</th><th>spares used</th>"
		      "<th>ran short</th></tr>\n");
	for (size_t i = 0; i < rows->nr; i++) {
		const struct json_value *r = rows->items[i], *ci = json_get(r, "ettr_ci95");
		strbuf_addstr(out, "<tr><td>");
		text(out, json_get_string(r, "parameter"), 48);
		strbuf_addf(out, "</td><td>%g</td><td>%.4f</td><td>", number(r, "value", 0),
			    number(r, "ettr", 0));
		if (ci && ci->type == JSON_ARRAY && ci->nr == 2 && ci->items[0]->type == JSON_NUMBER &&
		    ci->items[1]->type == JSON_NUMBER)
			strbuf_addf(out, "%.4f to %.4f", ci->items[0]->number, ci->items[1]->number);
		else
			strbuf_addstr(out, "-");
		strbuf_addf(out, "</td><td>%.4f</td><td>%.1f</td><td>%.0f</td><td>%.0f %%</td></tr>\n",
			    number(r, "goodput", 0), number(r, "interruptions", 0),
			    number(r, "spares_used_max", 0),
			    100 * number(r, "spares_exhausted_share", 0));
	}
	strbuf_addstr(out, "</table></div>\n");
}

/* ---- the page ---- */

static void summary(struct strbuf *out, const struct json_value *v, const char *source)
{
	const struct json_value *p = json_get(v, "params"), *ci = json_get(v, "ettr_ci95");
	double days = number(p, "days", 0);
	strbuf_addf(out, "<p class=\"run\">%.0f GPUs (nodes of %.0f, %.0f spares), %g day%s, "
		    "step %g s, checkpoint every %g s costing %g s, restart %g s, seed %.0f",
		    number(p, "gpus", 0), number(p, "gpus_per_node", 0), number(p, "spares", 0),
		    days, days == 1 ? "" : "s", number(p, "step_time_s", 0),
		    number(p, "checkpoint_every_s", 0), number(p, "checkpoint_cost_s", 0),
		    number(p, "restart_cost_s", 0), number(p, "seed", 0));
	double reps = number(v, "replicas", 1);
	if (reps > 1)
		strbuf_addf(out, "; %.0f replicas (means, 95 %% intervals)", reps);
	strbuf_addstr(out, "</p>\n");
	if (source && *source) {
		strbuf_addstr(out, "<p class=\"model\">Failure model: <span id=\"source\">");
		text(out, source, 256);
		strbuf_addstr(out, "</span></p>\n");
	}
	strbuf_addf(out, "<p class=\"summary\" id=\"summary\">ETTR <b id=\"ettr\">%.4f</b>",
		    number(v, "ettr", 0));
	if (ci && ci->type == JSON_ARRAY && ci->nr == 2 && ci->items[0]->type == JSON_NUMBER &&
	    ci->items[1]->type == JSON_NUMBER)
		strbuf_addf(out, " [%.4f, %.4f]", ci->items[0]->number, ci->items[1]->number);
	strbuf_addf(out, " &middot; goodput <b id=\"goodput\">%.4f</b> &middot; "
		    "<b id=\"interruptions\">%.0f</b> interruptions &middot; Young/Daly "
		    "<b id=\"young-daly\">%.0f s</b> &middot; recommended <b id=\"recommended\">",
		    number(v, "goodput", 0), number(v, "interruptions", 0),
		    number(v, "young_daly_checkpoint_every_s", 0));
	double rec = number(v, "recommended_checkpoint_every_s", NAN);
	if (isfinite(rec))
		strbuf_addf(out, "%.0f s", rec);
	else
		strbuf_addstr(out, "- (no checkpoint-every sweep)");
	strbuf_addstr(out, "</b>");
	double spares = number(v, "recommended_spares", NAN);
	if (isfinite(spares))
		strbuf_addf(out, " &middot; spares for a risk of %g %%: <b id=\"spares\">%.0f</b>",
			    100 * number(v, "spares_risk", 0), spares);
	strbuf_addstr(out, "</p>\n");
}

int sim_html(const char *json, size_t len, const char *model_source, struct strbuf *out,
	     struct strbuf *err)
{
	struct json_value *v = json_parse(json, len, err);
	if (!v)
		return -1;
	if (v->type != JSON_OBJECT) {
		strbuf_addstr(err, "the page wants vigil sim's JSON object");
		json_free(v);
		return -1;
	}
	const struct json_value *p = json_get(v, "params");
	strbuf_addf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		    "<title>vigil sim: %.0f GPUs, %g days</title>\n<style>\n"
		    "*{box-sizing:border-box}\n"
		    "body{font-family:sans-serif;margin:0 auto;padding:12px;max-width:1100px;"
		    "color:#222;background:#fff}\n"
		    "p{overflow-wrap:anywhere}.chart{display:block;width:100%%;height:auto;"
		    "max-width:900px}\n.scroll{max-width:100%%;overflow-x:auto}\n"
		    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}\n"
		    "table{border-collapse:collapse;font-size:13px}\n"
		    "td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}\n"
		    "th{background:#f3f3f3}.summary{font-size:15px}.legend{font-size:12px}\n"
		    ".legend span{margin-right:14px;white-space:nowrap}.none{color:#666}\n"
		    "</style>\n</head>\n<body>\n<h1>vigil sim</h1>\n",
		    number(p, "gpus", 0), number(p, "days", 0));
	summary(out, v, model_source);

	struct chart c;
	memset(&c, 0, sizeof(c));
	strbuf_addstr(out, "<h2>ETTR against scale</h2>\n");
	c.id = "ettr-gpus";
	c.xlabel = "GPUs (log scale)";
	c.logx = true;
	if (sweep_points(v, "gpus", &c)) {
		policy_lines(v, "gpus", &c);
		chart_svg(out, &c, NULL, 0);
		strbuf_addstr(out, "</svg>\n");
	} else {
		strbuf_addstr(out, "<p class=\"none\">No gpus sweep: --sweep gpus=LIST draws it."
			      "</p>\n");
	}
	strbuf_addstr(out, "<h2>ETTR against the checkpoint interval</h2>\n");
	c.id = "ettr-checkpoint";
	c.xlabel = "checkpoint every, s (log scale)";
	double marks[2] = { number(v, "young_daly_checkpoint_every_s", NAN),
			    number(v, "recommended_checkpoint_every_s", NAN) };
	if (sweep_points(v, "checkpoint_every_s", &c)) {
		policy_lines(v, "checkpoint_every_s", &c);
		chart_svg(out, &c, marks, 2);
		mark(out, &c, marks[0], "young-daly", "#2e7d32", "Young/Daly", 0);
		mark(out, &c, marks[1], "recommended", "#c62828", "recommended", 1);
		strbuf_addstr(out, "</svg>\n");
		if (c.nmore) { /* whose the marks are, said */
			strbuf_addstr(out, "<p class=\"legend\">One curve per policy; the marks, the "
				      "summary and the sweep's table are the first policy's (");
			text(out, c.name, 64);
			strbuf_addstr(out, "); each policy's own recommendation is under "
				      "\"policies\" in --json.</p>\n");
		}
	} else {
		strbuf_addstr(out, "<p class=\"none\">No checkpoint-every sweep: --sweep "
			      "checkpoint-every draws it.</p>\n");
	}
	strbuf_addstr(out, "<h2>Time lost by cause, per policy</h2>\n");
	lost_svg(out, v);
	by_class_table(out, v);
	sweep_table(out, v);
	strbuf_addstr(out, "</body>\n</html>\n");
	json_free(v);
	return 0;
}
