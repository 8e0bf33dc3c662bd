/*
 * html.c: the --html page of 'vigil diagnose' (see html.h). Everything from the input (the file
 * name, host names) is HTML-escaped after its control bytes are made visible, so a hostile file
 * cannot add markup or script to the page.
 */
#include "html.h"

#include <math.h>

static void esc(struct strbuf *out, const char *s)
{
	struct strbuf c = STRBUF_INIT;
	strbuf_add_clean(&c, s);
	for (const char *p = c.buf; *p; p++) {
		switch (*p) {
		case '<': strbuf_addstr(out, "&lt;"); break;
		case '>': strbuf_addstr(out, "&gt;"); break;
		case '&': strbuf_addstr(out, "&amp;"); break;
		case '"': strbuf_addstr(out, "&quot;"); break;
		case '\'': strbuf_addstr(out, "&#39;"); break;
		default: strbuf_addch(out, *p);
		}
	}
	strbuf_release(&c);
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

static void curve(const struct diag_steps *s, struct strbuf *o)
{
	struct axes a = { (double)s->first_step, (double)s->last_step, 1.2 };
	for (size_t i = 0; i < s->plot_nr; i++)
		if (s->plot_med[i] * 1.1 > a.ymax && isfinite(s->plot_med[i]))
			a.ymax = s->plot_med[i] * 1.1;
	if (a.ymax > 10)
		a.ymax = 10;
	strbuf_addf(o, "<svg id=\"curve\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		       "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
		    W, H, W, H);
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
		strbuf_addf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f"
			       "</text>\n",
			    px(&a, st), H - B + 16, st);
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
}

static void patterns_table(const struct diag_steps *s, struct strbuf *o)
{
	strbuf_addstr(o, "<table id=\"patterns\">\n<tr><th>pattern</th><th>from step</th>"
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
	strbuf_addstr(o, "</table>\n");
	if (!s->event_nr)
		return;
	/* what every run does: named so that nobody takes it for a fault */
	strbuf_addstr(o, "<table id=\"expected\">\n<tr><th>expected, not a fault</th><th>from "
			 "step</th><th>to step</th></tr>\n");
	for (size_t i = 0; i < s->event_nr; i++)
		strbuf_addf(o, "<tr><td class=\"event\">%s</td><td>%llu</td><td>%llu</td></tr>\n",
			    diag_event_name(s->event[i].kind),
			    (unsigned long long)s->event[i].start_step,
			    (unsigned long long)s->event[i].end_step);
	strbuf_addstr(o, "</table>\n");
}

static void stragglers(const struct diag_stragglers *g, const struct diag_rows *rows,
		       struct strbuf *o)
{
	struct strbuf name = STRBUF_INIT;
	strbuf_addstr(o, "<h2>Stragglers</h2>\n");
	if (!g->nr) {
		strbuf_addf(o, "<p id=\"no-stragglers\">No host is slower than its peers (%zu hosts, "
			       "%zu steps).</p>\n",
			    g->hosts, g->used_steps);
		return;
	}
	double mx = 0.05;
	for (size_t i = 0; i < g->nr; i++)
		if (g->s[i].slower > mx)
			mx = g->s[i].slower;
	int bh = 24, h = (int)g->nr * (bh + 6) + 10;
	strbuf_addf(o, "<svg id=\"stragglers\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		       "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		    W, h, W, h);
	for (size_t i = 0; i < g->nr; i++) {
		const struct diag_straggler *s = &g->s[i];
		strbuf_reset(&name);
		diag_straggler_name(s, rows, &name);
		int y = 5 + (int)i * (bh + 6);
		double w = s->slower / mx * (W - 360);
		strbuf_addf(o, "<text class=\"host\" x=\"190\" y=\"%d\" text-anchor=\"end\">", y + 17);
		esc(o, name.buf);
		strbuf_addf(o, "</text><rect class=\"straggler\" x=\"200\" y=\"%d\" width=\"%.1f\" "
			       "height=\"%d\"/><text class=\"tick\" x=\"%.1f\" y=\"%d\">+%.1f%% since "
			       "step %llu%s</text>\n",
			    y, w > 1 ? w : 1, bh, 206 + w, y + 17, 100 * s->slower,
			    (unsigned long long)s->since_step, s->recovered ? " (recovered)" : "");
	}
	strbuf_addstr(o, "</svg>\n");
	strbuf_release(&name);
}

void diag_html(const struct diag_steps *steps, const struct diag_stragglers *strag,
	       const struct diag_rows *rows, const char *file, struct strbuf *o)
{
	strbuf_addstr(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			 "<title>vigil diagnose: ");
	esc(o, file);
	strbuf_addstr(o,
		      "</title>\n<style>\n"
		      "body{font:14px/1.4 sans-serif;margin:24px;color:#222}\n"
		      "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;"
		      "padding:4px 8px;text-align:left;vertical-align:top}\n"
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
