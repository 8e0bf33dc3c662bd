/*
 * html.c: the --html page of 'vigil diagnose' (see html.h). Everything from the input (the file
 * name, host names) is HTML-escaped after its control bytes are made visible, so a hostile file
 * cannot add markup or script to the page.
 */
#include "html.h"
#include "../lib/html.h"

#include <math.h>

/* Everything from the input through the one escaping helper (src/lib/html.h). */
static void esc(struct strbuf *out, const char *s)
{
	html_add_text(out, s, SIZE_MAX);
}

enum { W = 1000, H = 340, L = 60, R = 20, T = 20, B = 40 };

struct axes {
	double x0, x1, ymax;
};

static double px(const struct axes *a, double step)
{
	double span = a->x1 > a->x0 ? a->x1 - a->x0 : 1;
	return L + (step - a->x0) / span * (W - L - R);
}

static double py(const struct axes *a, double v)
{
	if (v < 0)
		v = 0;
	if (v > a->ymax)
		v = a->ymax;
	return T + (1 - v / a->ymax) * (H - T - B);
}

/*
 * Every drop, counted by where it falls along the run (DIAG_DROP_BINS bars on the curve's x
 * scale), under the curve: the dots are the deepest DIAG_DROPS_KEPT, and the page says so.
 */
static void drop_strip(const struct diag_steps *s, const struct axes *a, struct strbuf *o)
{
	if (!s->drop_total)
		return;
	if (s->drop_total > s->drop_nr)
		strbuf_addf(o, "<p id=\"drops-note\">%zu drops: the %zu deepest are the red dots, "
			       "at their steps; all %zu are counted along the run in the strip below "
			       "(%d bars, each %.3g%% of the steps).</p>\n",
			    s->drop_total, s->drop_nr, s->drop_total, DIAG_DROP_BINS,
			    100.0 / DIAG_DROP_BINS);
	else
		strbuf_addf(o, "<p id=\"drops-note\">%zu drop%s, every one a red dot at its step; "
			       "the strip below counts them along the run.</p>\n",
			    s->drop_total, s->drop_total == 1 ? "" : "s");
	enum { SH = 44 };
	uint32_t mx = 1;
	for (size_t i = 0; i < DIAG_DROP_BINS; i++)
		if (s->drop_bin[i] > mx)
			mx = s->drop_bin[i];
	strbuf_addf(o, "<svg id=\"drop-strip\" xmlns=\"http://www.w3.org/2000/svg\" "
		       "viewBox=\"0 0 %d %d\" role=\"img\">\n"
		       "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"end\">drops</text>\n",
		    W, SH, L - 6, SH / 2 + 4);
	double span = a->x1 - a->x0;
	for (size_t i = 0; i < DIAG_DROP_BINS; i++) {
		if (!s->drop_bin[i])
			continue;
		double st0 = a->x0 + span * (double)i / DIAG_DROP_BINS;
		double x0 = px(a, st0), x1 = px(a, a->x0 + span * (double)(i + 1) / DIAG_DROP_BINS);
		double h = (SH - 8) * (double)s->drop_bin[i] / mx;
		strbuf_addf(o, "<rect class=\"drop-bin\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			       "height=\"%.1f\"><title>%u drop%s from step %.0f</title></rect>\n",
			    x0, SH - 4 - h, x1 - x0 > 1.5 ? x1 - x0 - 0.5 : 1, h, s->drop_bin[i],
			    s->drop_bin[i] == 1 ? "" : "s", st0);
	}
	strbuf_addf(o, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
		       "</svg>\n",
		    L, SH - 4, W - R, SH - 4);
}

static void curve(const struct diag_steps *s, struct strbuf *o)
{
	struct axes a = { (double)s->first_step, (double)s->last_step, 1.2 };
	for (size_t i = 0; i < s->plot_nr; i++)
		if (s->plot_med[i] * 1.1 > a.ymax && isfinite(s->plot_med[i]))
			a.ymax = s->plot_med[i] * 1.1;
	if (a.ymax > 10)
		a.ymax = 10;
	/* no width or height: the viewBox scales to the page's width (CSS svg{width:100%}) */
	strbuf_addf(o, "<svg id=\"curve\" xmlns=\"http://www.w3.org/2000/svg\" "
		       "viewBox=\"0 0 %d %d\" role=\"img\">\n",
		    W, H);
	/* the patterns' spans under the curve */
	for (size_t i = 0; i < s->pat_nr; i++) {
		const struct diag_pattern *p = &s->pat[i];
		if (p->kind == DP_PERIODIC_DROPS || p->kind == DP_RANDOM_DROPS)
			continue;
		double x0 = px(&a, (double)p->start_step), x1 = px(&a, (double)p->end_step);
		strbuf_addf(o, "<rect class=\"pattern\" data-pattern=\"%s\" x=\"%.1f\" y=\"%d\" "
			       "width=\"%.1f\" height=\"%d\"><title>%s from step %llu</title></rect>\n",
			    diag_pattern_name(p->kind), x0, T, x1 - x0 > 1 ? x1 - x0 : 1, H - T - B,
			    diag_pattern_name(p->kind), (unsigned long long)p->start_step);
	}
	/* warm-up and pauses: expected, shaded apart from the patterns */
	for (size_t i = 0; i < s->event_nr; i++) {
		const struct diag_event *e = &s->event[i];
		if (e->kind != DE_WARMUP && e->kind != DE_PAUSE)
			continue;
		double x0 = px(&a, (double)e->start_step), x1 = px(&a, (double)e->end_step);
		strbuf_addf(o, "<rect class=\"expected-event\" data-event=\"%s\" x=\"%.1f\" "
			       "y=\"%d\" width=\"%.1f\" height=\"%d\"><title>%s from step %llu"
			       "</title></rect>\n",
			    diag_event_name(e->kind), x0, T, x1 - x0 > 2 ? x1 - x0 : 2, H - T - B,
			    diag_event_name(e->kind), (unsigned long long)e->start_step);
	}
	/* axes, ticks and the expected level */
	strbuf_addf(o, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", L, H - B,
		    W - R, H - B);
	strbuf_addf(o, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", L, T, L,
		    H - B);
	for (int k = 0; k <= 4; k++) {
		double v = a.ymax * k / 4;
		strbuf_addf(o, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f%%"
			       "</text>\n",
			    L - 6, py(&a, v) + 4, 100 * v);
		double st = a.x0 + (a.x1 - a.x0) * k / 4;
		/* the last label ends at the axis' end: centred it would reach past the edge */
		strbuf_addf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%.0f"
			       "</text>\n",
			    px(&a, st), H - B + 16, k == 4 ? "end" : "middle", st);
	}
	strbuf_addf(o, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
		    (W + L) / 2, H - 6);
	strbuf_addf(o, "<line class=\"expected\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", L,
		    py(&a, 1), W - R, py(&a, 1));
	strbuf_addstr(o, "<polyline class=\"lowest\" points=\"");
	for (size_t i = 0; i < s->plot_nr; i++)
		strbuf_addf(o, "%s%.1f,%.1f", i ? " " : "", px(&a, (double)s->plot_step[i]),
			    py(&a, s->plot_min[i]));
	strbuf_addstr(o, "\"/>\n<polyline class=\"throughput\" points=\"");
	for (size_t i = 0; i < s->plot_nr; i++)
		strbuf_addf(o, "%s%.1f,%.1f", i ? " " : "", px(&a, (double)s->plot_step[i]),
			    py(&a, s->plot_med[i]));
	strbuf_addstr(o, "\"/>\n");
	for (size_t i = 0; i < s->drop_nr; i++)
		strbuf_addf(o, "<circle class=\"drop\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>drop "
			       "at step %llu</title></circle>\n",
			    px(&a, (double)s->drop_step[i]), py(&a, s->drop_level[i]),
			    (unsigned long long)s->drop_step[i]);
	for (size_t i = 0; i < s->change_nr; i++) {
		double x = px(&a, (double)s->change[i].step);
		strbuf_addf(o, "<line class=\"change\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\">"
			       "<title>change at step %llu: %.0f%% to %.0f%%</title></line>\n",
			    x, T, x, H - B, (unsigned long long)s->change[i].step,
			    100 * s->change[i].before, 100 * s->change[i].after);
	}
	strbuf_addstr(o, "</svg>\n");
	drop_strip(s, &a, o);
}

static void patterns_table(const struct diag_steps *s, struct strbuf *o)
{
	strbuf_addstr(o, "<div class=\"scroll\"><table id=\"patterns\">\n<tr><th>pattern</th><th>from step</th>"
			 "<th>costs</th><th>likely cause</th><th>next</th></tr>\n");
	if (!s->pat_nr)
		strbuf_addstr(o, "<tr><td class=\"name\">healthy</td><td></td><td>0.0%</td><td>"
				 "</td><td>nothing to do</td></tr>\n");
	for (size_t i = 0; i < s->pat_nr; i++) {
		const struct diag_pattern *p = &s->pat[i];
		strbuf_addf(o, "<tr><td class=\"name\">%s</td><td>%llu</td><td>%.1f%%</td><td>",
			    diag_pattern_name(p->kind), (unsigned long long)p->start_step,
			    100 * p->cost);
		esc(o, diag_pattern_cause(p->kind));
		strbuf_addstr(o, "</td><td>");
		esc(o, diag_pattern_action(p->kind));
		strbuf_addstr(o, "</td></tr>\n");
	}
	strbuf_addstr(o, "</table></div>\n");
	if (!s->event_nr)
		return;
	/* what every run does: named so that nobody takes it for a fault */
	strbuf_addstr(o, "<div class=\"scroll\"><table id=\"expected\">\n<tr><th>expected, not a fault</th><th>from "
			 "step</th><th>to step</th></tr>\n");
	for (size_t i = 0; i < s->event_nr; i++)
		strbuf_addf(o, "<tr><td class=\"event\">%s</td><td>%llu</td><td>%llu</td></tr>\n",
			    diag_event_name(s->event[i].kind),
			    (unsigned long long)s->event[i].start_step,
			    (unsigned long long)s->event[i].end_step);
	strbuf_addstr(o, "</table></div>\n");
}

/* A host's name for the chart, cut to fit its label column (the whole name is its title). */
static void short_name(const char *name, struct strbuf *o)
{
	size_t n = strlen(name);
	if (n <= 24) {
		esc(o, name);
		return;
	}
	struct strbuf c = STRBUF_INIT;
	strbuf_add(&c, name, 11);
	strbuf_addstr(&c, "...");
	strbuf_addstr(&c, name + n - 10);
	esc(o, c.buf);
	strbuf_release(&c);
}

/*
 * Per host (or rank) its step times against each step's median rank: a box for the middle
 * half of its steps, whiskers from the 10th to the 90th percentile, a tick at its median; the
 * stragglers red, their peers grey; 0 % is the step's median rank.
 */
static void spread_chart(const struct diag_stragglers *g, const struct diag_rows *rows,
			 struct strbuf *o)
{
	enum { LX = 200, RX = W - 30, TOP = 34, RH = 22 };
	struct strbuf name = STRBUF_INIT;
	double lo = -0.05, hi = 0.05;
	for (size_t i = 0; i < g->dist_nr; i++) {
		const double *q = g->dist[i].q;
		if (isfinite(q[0]) && q[0] < lo)
			lo = q[0];
		if (isfinite(q[4]) && q[4] > hi)
			hi = q[4];
	}
	lo = lo < -0.5 ? -0.5 : lo;
	hi = hi > 2 ? 2 : hi;
	double pad = (hi - lo) * 0.05;
	lo -= pad;
	hi += pad;
#define SX(v) (LX + ((v) < lo ? 0 : (v) > hi ? 1 : ((v) - lo) / (hi - lo)) * (RX - LX))
	int h = TOP + (int)g->dist_nr * RH + 10;
	strbuf_addf(o, "<svg id=\"stragglers\" xmlns=\"http://www.w3.org/2000/svg\" "
		       "viewBox=\"0 0 %d %d\" role=\"img\">\n",
		    W, h);
	for (int k = 0; k <= 4; k++) {
		double v = lo + (hi - lo) * k / 4;
		double pct = fabs(100 * v) < 0.5 ? 0 : 100 * v; /* "+0%", never "-0%" */
		strbuf_addf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
			       "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%+.0f%%"
			       "</text>\n",
			    SX(v), TOP - 6, SX(v), h - 10, SX(v), TOP - 12,
			    k == 0 ? "start" : k == 4 ? "end" : "middle", pct);
	}
	strbuf_addf(o, "<line class=\"median-rank\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
		       "y2=\"%d\"/>\n",
		    SX(0.0), TOP - 6, SX(0.0), h - 10);
	for (size_t i = 0; i < g->dist_nr; i++) {
		const struct diag_group_dist *d = &g->dist[i];
		struct diag_straggler as = { .host = d->host, .by_rank = d->by_rank };
		const char *cls = d->straggler ? "straggler" : "peer";
		strbuf_reset(&name);
		diag_straggler_name(&as, rows, &name);
		double y = TOP + (double)i * RH;
		strbuf_addf(o, "<g class=\"row %s\"><title>", cls);
		esc(o, name.buf);
		strbuf_addf(o, ": median %+.1f%%, middle half %+.1f%% to %+.1f%%, 10th to 90th "
			       "percentile %+.1f%% to %+.1f%% (%zu steps)</title>\n",
			    100 * d->q[2], 100 * d->q[1], 100 * d->q[3], 100 * d->q[0], 100 * d->q[4],
			    d->n);
		strbuf_addf(o, "<text class=\"host\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">",
			    LX - 8, y + 15);
		short_name(name.buf, o);
		strbuf_addf(o, "</text><line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" "
			       "x2=\"%.1f\" y2=\"%.1f\"/>"
			       "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			       "height=\"%d\"/>"
			       "<line class=\"median\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			       "y2=\"%.1f\"/></g>\n",
			    SX(d->q[0]), y + 11, SX(d->q[4]), y + 11, cls, SX(d->q[1]), y + 4,
			    SX(d->q[3]) - SX(d->q[1]) > 2 ? SX(d->q[3]) - SX(d->q[1]) : 2, RH - 8,
			    SX(d->q[2]), y + 2, SX(d->q[2]), y + 20);
	}
#undef SX
	strbuf_addstr(o, "</svg>\n");
	strbuf_addstr(o, "<p class=\"legend\" id=\"legend\"><span><i class=\"sw straggler\">"
			 "</i>straggler</span> <span><i class=\"sw peer\"></i>its peers</span> "
			 "<span>box: the middle half of its steps; whiskers: 10th to 90th "
			 "percentile; tick: its median; dashed line: each step's median rank "
			 "(0 %)</span></p>\n");
	if (g->dist_total > g->dist_nr)
		strbuf_addf(o, "<p id=\"spread-note\">%zu of %zu %s shown: every straggler and the "
			       "slowest of the rest by median.</p>\n",
			    g->dist_nr, g->dist_total, g->dist[0].by_rank ? "ranks" : "hosts");
	strbuf_release(&name);
}

static void stragglers(const struct diag_stragglers *g, const struct diag_rows *rows,
		       struct strbuf *o)
{
	struct strbuf name = STRBUF_INIT;
	strbuf_addstr(o, "<h2>Stragglers</h2>\n");
	if (!g->nr)
		strbuf_addf(o, "<p id=\"no-stragglers\">No host is slower than its peers (%zu hosts, "
			       "%zu steps).</p>\n",
			    g->hosts, g->used_steps);
	else
		strbuf_addf(o, "<p>%zu of %zu hosts slower than their peers (%zu steps, %s against "
			       "each step's median rank).</p>\n",
			    g->nr, g->hosts, g->used_steps, g->compute ? "compute time" : "step time");
	strbuf_addstr(o, "<h3>Step time per host, against each step's median rank</h3>\n");
	spread_chart(g, rows, o);
	if (!g->nr)
		goto out;
	strbuf_addstr(o, "<div class=\"scroll\"><table id=\"straggler-table\">\n<tr><th>host</th>"
			 "<th>slower</th><th>since step</th><th>until step</th><th>slow windows"
			 "</th></tr>\n");
	for (size_t i = 0; i < g->nr; i++) {
		const struct diag_straggler *s = &g->s[i];
		strbuf_reset(&name);
		diag_straggler_name(s, rows, &name);
		strbuf_addstr(o, "<tr><td class=\"host\">");
		esc(o, name.buf);
		strbuf_addf(o, "</td><td>+%.1f%%</td><td>%llu</td><td>%llu%s</td><td>%zu of %zu"
			       "</td></tr>\n",
			    100 * s->slower, (unsigned long long)s->since_step,
			    (unsigned long long)s->until_step, s->recovered ? " (recovered)" : "",
			    s->slow_windows, s->windows);
	}
	strbuf_addstr(o, "</table></div>\n");
out:
	strbuf_release(&name);
}

void diag_html(const struct diag_steps *steps, const struct diag_stragglers *strag,
	       const struct diag_rows *rows, const char *file, struct strbuf *o)
{
	strbuf_addstr(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
			 "<title>vigil diagnose: ");
	esc(o, file);
	strbuf_addstr(o,
		      "</title>\n<style>\n"
		      /* one page from a phone (360 px) to a wide screen: the charts scale with
		       * their viewBox, long names wrap, a wide table scrolls in its own box */
		      "*{box-sizing:border-box}\n"
		      "body{font:14px/1.4 sans-serif;margin:0 auto;padding:12px;max-width:1280px;"
		      "color:#222}\n"
		      "h1{font-size:1.4em}h1,p{overflow-wrap:anywhere}\n"
		      "svg{display:block;width:100%;height:auto}\n"
		      ".scroll{max-width:100%;overflow-x:auto}\n"
		      "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;"
		      "padding:4px 8px;text-align:left;vertical-align:top}\n"
		      ".drop-bin{fill:#d22;opacity:0.7}.grid{stroke:#ddd}\n"
		      ".median-rank{stroke:#2a2;stroke-dasharray:5 4}.whisker{stroke:#555}\n"
		      ".median{stroke:#111;stroke-width:2}.peer{fill:#bbb}\n"
		      ".legend span{margin-right:14px}.sw{display:inline-block;width:12px;"
		      "height:12px;margin-right:4px;vertical-align:-1px}\n"
		      ".sw.straggler{background:#d55}.sw.peer{background:#bbb}\n"
		      ".axis{stroke:#444}.tick,.label,.host{font-size:12px;fill:#444}\n"
		      ".expected{stroke:#2a2;stroke-dasharray:6 4}\n"
		      ".throughput{fill:none;stroke:#1f5fbf;stroke-width:1.6}\n"
		      ".lowest{fill:none;stroke:#9bb7e0;stroke-width:0.8}\n"
		      ".drop{fill:#d22}.change{stroke:#e80;stroke-width:2;stroke-dasharray:4 3}\n"
		      ".pattern{fill:#fd8;opacity:0.25}.straggler{fill:#d55}\n"
		      ".expected-event{fill:#8c8;opacity:0.25}\n"
		      "</style>\n</head>\n<body>\n<h1>vigil diagnose: ");
	esc(o, file);
	strbuf_addstr(o, "</h1>\n");
	if (steps) {
		strbuf_addf(o, "<p>%zu steps (%llu to %llu); throughput as %s, expected %.4g (%s); "
			       "verdict <b id=\"verdict\">%s</b>.</p>\n",
			    steps->used, (unsigned long long)steps->first_step,
			    (unsigned long long)steps->last_step,
			    steps->metric_mfu ? "MFU" : "steps per second", steps->expected,
			    steps->expected_given ? "given" : "the run's best sustained level",
			    steps->pat_nr ? diag_pattern_name(steps->pat[0].kind) : "healthy");
		/* the run's pace in seconds and tokens, where the rows say them */
		if (steps->median_step_time > 0) {
			strbuf_addf(o, "<p id=\"pace\">Median step %.3g s", steps->median_step_time);
			if (steps->median_tokens_per_s > 0)
				strbuf_addf(o, ", median <span id=\"tokens-per-s\">%.*f</span> "
					       "tokens/s", steps->median_tokens_per_s >= 100 ? 0 : 2,
					    steps->median_tokens_per_s);
			strbuf_addstr(o, ".</p>\n");
		}
		strbuf_addstr(o, "<p>Throughput, share of expected (blue: median per column; light: "
				 "lowest; red dots: drops; orange lines: change points; shaded: "
				 "patterns; green: warm-up and pauses, expected).</p>\n");
		curve(steps, o);
		patterns_table(steps, o);
	}
	if (strag)
		stragglers(strag, rows, o);
	strbuf_addstr(o, "</body>\n</html>\n");
}
