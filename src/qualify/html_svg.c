/*
 * html_svg.c: the scorecard page's two plots as inline SVG (see html_int.h): NCCL busbw against
 * node count, one line per collective with what the fabric should give dashed beside it, and
 * the CDF of fsync latencies on a log axis. Whatever the card holds, every coordinate written
 * is a finite number (a NaN in an SVG attribute is a console error in the browser), and every
 * name from the card goes through html_add_text().
 */
#include "html_int.h"
#include "../lib/html.h"

#include <math.h>
#include <stdlib.h>

/* Geometry of both plots (user units; the SVG scales to the page's width). */
enum { W = 760, H = 320, L = 70, R = 170, T = 20, B = 45 };
#define PLOT_W ((double)(W - L - R))
#define PLOT_H ((double)(H - T - B))

#define MAX_OPS	       8
#define MAX_OP_POINTS  64
#define MAX_CDF_POINTS 4096
/* Past this a node count, a bandwidth or a latency in ms is no measurement, and drawing it
 * would take the axes to infinity. */
#define MAX_VALUE 1e9

static const char *const palette[MAX_OPS] = { "#1565c0", "#c62828", "#2e7d32", "#6a1b9a",
					      "#ef6c00", "#00838f", "#5d4037", "#ad1457" };

struct pt {
	double x, y, e; /* node count, busbw, expected */
	bool has_y, has_e;
};

struct op {
	const char *name;
	size_t n;
	struct pt pts[MAX_OP_POINTS];
};

static int pt_cmp(const void *a, const void *b)
{
	double x = ((const struct pt *)a)->x, y = ((const struct pt *)b)->x;
	return x < y ? -1 : x > y;
}

/* A round step for about n ticks up to max (1, 2 or 5 times a power of ten). */
static double nice_step(double max, int n)
{
	double raw = max / n, p = pow(10, floor(log10(raw))), f = raw / p;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

static void svg_open(struct strbuf *o, const char *id, const char *label)
{
	strbuf_addf(o,
		    "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
		    "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"%s\">\n",
		    id, W, H, W, H, label);
	strbuf_addf(o,
		    "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
		    "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n",
		    L, T, L, H - B, L, H - B, W - R, H - B);
}

/* ---- busbw against node count ---- */

static struct op *op_of(struct op *ops, size_t *nr, const char *name, size_t *dropped)
{
	for (size_t i = 0; i < *nr; i++)
		if (!strcmp(ops[i].name, name))
			return &ops[i];
	if (*nr == MAX_OPS) {
		(*dropped)++;
		return NULL;
	}
	ops[*nr].name = name;
	ops[*nr].n = 0;
	return &ops[(*nr)++];
}

/* The card's nccl[] into ops; false when there is nothing to draw. */
static bool read_ops(const struct json_value *nccl, struct op *ops, size_t *nr, size_t *skipped,
		     double *xmin, double *xmax, double *ymax)
{
	*nr = 0;
	*skipped = 0;
	*xmin = INFINITY;
	*xmax = 0;
	*ymax = 0;
	for (size_t i = 0; i < nccl->nr; i++) {
		const struct json_value *e = nccl->items[i];
		const char *name = json_get_string(e, "op");
		struct pt p = { 0 };
		if (!name || !card_num(e, "nodes", &p.x) || p.x < 1 || p.x > MAX_VALUE) {
			(*skipped)++;
			continue;
		}
		p.has_y = card_num(e, "busbw_gbps", &p.y) && p.y >= 0 && p.y <= MAX_VALUE;
		p.has_e = card_num(e, "expected_gbps", &p.e) && p.e >= 0 && p.e <= MAX_VALUE;
		struct op *op = op_of(ops, nr, name, skipped);
		if (!op)
			continue;
		if (op->n == MAX_OP_POINTS || (!p.has_y && !p.has_e)) {
			(*skipped)++;
			continue;
		}
		op->pts[op->n++] = p;
		*xmin = fmin(*xmin, p.x);
		*xmax = fmax(*xmax, p.x);
		*ymax = fmax(*ymax, fmax(p.has_y ? p.y : 0, p.has_e ? p.e : 0));
	}
	return *xmax > 0;
}

struct bx {
	double lo, hi, ymax;
};

static double bx_x(const struct bx *s, double nodes)
{
	return L + (log2(nodes) - s->lo) / (s->hi - s->lo) * PLOT_W;
}

static double bx_y(const struct bx *s, double v)
{
	return T + (1 - fmin(v, s->ymax) / s->ymax) * PLOT_H;
}

static void busbw_axes(const struct bx *s, const struct op *ops, size_t nr, struct strbuf *o)
{
	double step = nice_step(s->ymax, 5);
	for (double v = 0; v <= s->ymax + step * 1e-9; v += step)
		strbuf_addf(o,
			    "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
			    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			    L, bx_y(s, v), W - R, bx_y(s, v), L - 6, bx_y(s, v) + 4, v);
	/* a tick at every node count some op was measured at */
	double done[MAX_OPS * MAX_OP_POINTS];
	size_t nd = 0;
	for (size_t i = 0; i < nr; i++)
		for (size_t j = 0; j < ops[i].n; j++) {
			double x = ops[i].pts[j].x;
			bool seen = false;
			for (size_t k = 0; k < nd && !seen; k++)
				seen = done[k] == x;
			if (seen)
				continue;
			done[nd++] = x;
			strbuf_addf(o,
				    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
				    bx_x(s, x), H - B + 16, x);
		}
	strbuf_addf(o,
		    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">nodes</text>\n"
		    "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
		    "transform=\"rotate(-90 14 %.1f)\">busbw (GB/s)</text>\n",
		    L + PLOT_W / 2, H - 6, T + PLOT_H / 2, T + PLOT_H / 2);
}

static void busbw_line(const struct bx *s, const struct op *op, bool expected, const char *colour,
		       struct strbuf *o)
{
	size_t drawn = 0;
	for (size_t j = 0; j < op->n; j++) {
		const struct pt *p = &op->pts[j];
		if (expected ? !p->has_e : !p->has_y)
			continue;
		if (!drawn++)
			strbuf_addf(o, "<polyline class=\"%s\" stroke=\"%s\"%s points=\"",
				    expected ? "expected" : "busbw", colour,
				    expected ? " stroke-dasharray=\"6 4\"" : "");
		strbuf_addf(o, "%s%.1f,%.1f", drawn > 1 ? " " : "", bx_x(s, p->x),
			    bx_y(s, expected ? p->e : p->y));
	}
	if (drawn)
		strbuf_addstr(o, "\"/>\n");
	if (expected)
		return;
	for (size_t j = 0; j < op->n; j++) {
		const struct pt *p = &op->pts[j];
		char a[32], b[32];
		if (!p->has_y)
			continue;
		strbuf_addf(o,
			    "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\">"
			    "<title>",
			    bx_x(s, p->x), bx_y(s, p->y), colour);
		html_add_text(o, op->name, 64);
		strbuf_addf(o, " at %s nodes: %s GB/s", card_fmt(a, p->x), card_fmt(b, p->y));
		if (p->has_e)
			strbuf_addf(o, " (expected %s)", card_fmt(a, p->e));
		strbuf_addstr(o, "</title></circle>\n");
	}
}

void qhtml_busbw(const struct json_value *nccl, const struct json_value *falloff, struct strbuf *o)
{
	struct op *ops = NULL;
	size_t nr, skipped;
	struct bx s;
	double xmin, xmax;
	if (!nccl || nccl->type != JSON_ARRAY) {
		strbuf_addstr(o,
			      "<p class=\"none\" id=\"busbw-none\">No NCCL results between nodes "
			      "(the card's nccl is not a list).</p>\n");
		return;
	}
	ops = xcalloc(MAX_OPS, sizeof(*ops));
	if (!read_ops(nccl, ops, &nr, &skipped, &xmin, &xmax, &s.ymax)) {
		strbuf_addf(o,
			    "<p class=\"none\" id=\"busbw-none\">No NCCL results between "
			    "nodes%s.</p>\n",
			    skipped ? " that could be read" : "");
		free(ops);
		return;
	}
	s.lo = log2(xmin);
	s.hi = log2(xmax);
	if (s.hi - s.lo < 1e-9) {
		s.lo -= 0.5;
		s.hi += 0.5;
	}
	/* a margin so the end points are not on the frame */
	double pad = (s.hi - s.lo) * 0.06;
	s.lo -= pad;
	s.hi += pad;
	s.ymax = s.ymax > 0 ? s.ymax * 1.1 : 1;
	for (size_t i = 0; i < nr; i++)
		qsort(ops[i].pts, ops[i].n, sizeof(ops[i].pts[0]), pt_cmp);

	svg_open(o, "busbw", "NCCL busbw against node count");
	busbw_axes(&s, ops, nr, o);
	double f;
	if (falloff && falloff->type == JSON_NUMBER && isfinite(f = falloff->number) && f >= xmin &&
	    f <= xmax)
		strbuf_addf(o,
			    "<line class=\"falloff\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
			    "<text class=\"falloff\" x=\"%.1f\" y=\"%d\">falls off at %g</text>\n",
			    bx_x(&s, f), T, bx_x(&s, f), H - B, bx_x(&s, f) + 4, T + 12, f);
	for (size_t i = 0; i < nr; i++) {
		busbw_line(&s, &ops[i], true, palette[i], o);
		busbw_line(&s, &ops[i], false, palette[i], o);
		/* the legend, right of the plot */
		double y = T + 10 + 18.0 * (double)i;
		strbuf_addf(o,
			    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
			    "stroke-width=\"2\"/><text class=\"legend\" x=\"%d\" y=\"%.1f\">",
			    W - R + 10, y, W - R + 30, y, palette[i], W - R + 36, y + 4);
		html_add_text(o, ops[i].name, 24);
		strbuf_addstr(o, "</text>\n");
	}
	double y = T + 10 + 18.0 * (double)nr;
	strbuf_addf(o,
		    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#555\" "
		    "stroke-width=\"2\" stroke-dasharray=\"6 4\"/>"
		    "<text class=\"legend\" x=\"%d\" y=\"%.1f\">expected</text>\n</svg>\n",
		    W - R + 10, y, W - R + 30, y, W - R + 36, y + 4);
	if (skipped)
		strbuf_addf(o,
			    "<p class=\"note\">%zu NCCL entries could not be read or drawn "
			    "(no op, no node count, more than %d ops or %d points per op).</p>\n",
			    skipped, MAX_OPS, MAX_OP_POINTS);
	free(ops);
}

/* ---- fsync latency CDF ---- */

struct cp {
	double ms, frac;
};

static int cp_cmp(const void *a, const void *b)
{
	double x = ((const struct cp *)a)->ms, y = ((const struct cp *)b)->ms;
	return x < y ? -1 : x > y;
}

struct cx {
	double lo, hi; /* log10 of the axis's ends, in ms */
};

static double cx_x(const struct cx *s, double ms)
{
	return L + (log10(ms) - s->lo) / (s->hi - s->lo) * PLOT_W;
}

static double cx_y(double frac)
{
	return T + (1 - frac) * PLOT_H;
}

/* The smallest latency drawn: a 0 ms point has no place on a log axis. */
#define CDF_FLOOR_MS 0.001

static void cdf_axes(const struct cx *s, struct strbuf *o)
{
	for (double d = s->lo; d <= s->hi + 1e-9; d += 1) {
		double ms = pow(10, d);
		strbuf_addf(o,
			    "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
			    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
			    cx_x(s, ms), T, cx_x(s, ms), H - B, cx_x(s, ms), H - B + 16, ms);
		for (int m = 2; m <= 5 && d + 1 <= s->hi + 1e-9; m += 3)
			strbuf_addf(o,
				    "<line class=\"grid minor\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
				    "y2=\"%d\"/>\n",
				    cx_x(s, ms * m), T, cx_x(s, ms * m), H - B);
	}
	for (int q = 0; q <= 4; q++)
		strbuf_addf(o, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6,
			    cx_y(q / 4.0) + 4, q / 4.0);
	static const struct {
		double frac;
		const char *name;
	} guides[] = { { 0.5, "p50" }, { 0.99, "p99" } };
	for (size_t i = 0; i < ARRAY_SIZE(guides); i++)
		strbuf_addf(o,
			    "<line class=\"guide\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			    "stroke-dasharray=\"3 3\"/><text x=\"%d\" y=\"%.1f\">%s</text>\n",
			    L, cx_y(guides[i].frac), W - R, cx_y(guides[i].frac), W - R + 6,
			    cx_y(guides[i].frac) + 4, guides[i].name);
	strbuf_addf(o,
		    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">fsync latency (ms, log "
		    "scale)</text>\n<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
		    "transform=\"rotate(-90 14 %.1f)\">fraction of fsyncs</text>\n",
		    L + PLOT_W / 2, H - 6, T + PLOT_H / 2, T + PLOT_H / 2);
}

void qhtml_fsync_cdf(const struct json_value *cdf, struct strbuf *o)
{
	struct cp *pts;
	size_t n = 0, skipped = 0;
	if (!cdf || cdf->type != JSON_ARRAY) {
		strbuf_addstr(o, "<p class=\"none\" id=\"fsync-cdf-none\">No fsync latency "
				 "distribution (fsync_cdf is not a list).</p>\n");
		return;
	}
	pts = xcalloc(cdf->nr < MAX_CDF_POINTS ? cdf->nr + 1 : MAX_CDF_POINTS, sizeof(*pts));
	for (size_t i = 0; i < cdf->nr; i++) {
		const struct json_value *e = cdf->items[i];
		if (n == MAX_CDF_POINTS || e->type != JSON_ARRAY || e->nr < 2 ||
		    e->items[0]->type != JSON_NUMBER || e->items[1]->type != JSON_NUMBER ||
		    !isfinite(e->items[0]->number) || !isfinite(e->items[1]->number) ||
		    e->items[0]->number < 0 || e->items[0]->number > MAX_VALUE) {
			skipped++;
			continue;
		}
		pts[n].ms = fmax(e->items[0]->number, CDF_FLOOR_MS);
		pts[n++].frac = fmin(fmax(e->items[1]->number, 0), 1);
	}
	if (!n) {
		strbuf_addstr(o, "<p class=\"none\" id=\"fsync-cdf-none\">No fsync latencies that "
				 "could be read.</p>\n");
		free(pts);
		return;
	}
	qsort(pts, n, sizeof(pts[0]), cp_cmp);
	struct cx s = { floor(log10(pts[0].ms)), ceil(log10(pts[n - 1].ms)) };
	if (s.hi <= s.lo)
		s.hi = s.lo + 1;

	svg_open(o, "fsync-cdf", "CDF of fsync latencies");
	cdf_axes(&s, o);
	/* a step function: flat until the next latency, then up to its fraction */
	strbuf_addf(o, "<polyline class=\"cdf\" points=\"%.1f,%.1f", cx_x(&s, pts[0].ms), cx_y(0));
	double prev = 0;
	for (size_t i = 0; i < n; i++) {
		double x = cx_x(&s, pts[i].ms);
		if (i)
			strbuf_addf(o, " %.1f,%.1f", x, cx_y(prev));
		strbuf_addf(o, " %.1f,%.1f", x, cx_y(pts[i].frac));
		prev = pts[i].frac;
	}
	strbuf_addstr(o, "\"/>\n");
	for (size_t i = 0; i < n; i++) {
		char a[32];
		strbuf_addf(o,
			    "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>%s ms: "
			    "%.1f %%</title></circle>\n",
			    cx_x(&s, pts[i].ms), cx_y(pts[i].frac), card_fmt(a, pts[i].ms),
			    pts[i].frac * 100);
	}
	strbuf_addstr(o, "</svg>\n");
	if (skipped)
		strbuf_addf(o,
			    "<p class=\"note\">%zu fsync_cdf points could not be read (not "
			    "[ms, fraction] numbers, or past %d).</p>\n",
			    skipped, MAX_CDF_POINTS);
	free(pts);
}
