/* runreport_html.c: a run report as one self-contained HTML page, its timeline inline SVG (no
 * script, no external resource; see runreport.h). */
#include "runreport_int.h"
#include "journal.h"
#include "../lib/fileio.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


/* ---- HTML ---- */

/* Outside text into HTML: cleaned (no control bytes, valid UTF-8), then escaped. */
static void h_text(struct strbuf *out, const char *s, size_t max)
{
	struct strbuf c = STRBUF_INIT;
	strbuf_add_excerpt(&c, s ? s : "", max);
	for (const char *p = c.buf; *p; p++) {
		switch (*p) {
		case '&': strbuf_addstr(out, "&amp;"); break;
		case '<': strbuf_addstr(out, "&lt;"); break;
		case '>': strbuf_addstr(out, "&gt;"); break;
		case '"': strbuf_addstr(out, "&quot;"); break;
		case '\'': strbuf_addstr(out, "&#39;"); break;
		default: strbuf_addch(out, *p);
		}
	}
	strbuf_release(&c);
}

void runreport_html_text(struct strbuf *out, const char *s, size_t max)
{
	h_text(out, s, max);
}

static const struct {
	const char *name, *colour;
} palette[] = {
	{ "done", "#2e7d32" },    { "crash", "#c62828" },   { "hang", "#ef6c00" },
	{ "startup_timeout", "#f9a825" }, { "slow", "#6a1b9a" }, { "sick", "#ad1457" },
	{ "lost", "#5d4037" },    { "cancel", "#546e7a" },  { "supervisor_restart", "#1565c0" },
};
#define OTHER_COLOUR "#90a4ae"

static const char *colour_of(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(palette); i++)
		if (!strcmp(name, palette[i].name))
			return palette[i].colour;
	return OTHER_COLOUR;
}

/* The plot's geometry. */
#define SVG_W 1000.0
#define SVG_LEFT 100.0
#define SVG_RIGHT 30.0
#define LANE_H 26.0
#define LANES_TOP 10.0
#define PLOT_H 170.0
#define MAX_LANES 200
#define MAX_POINTS 600

struct geom {
	double t0, span, plot_w;
	double lanes_bottom, plot_top, plot_bottom;
	uint64_t max_step;
	size_t lanes;
};

static double gx(const struct geom *g, double t)
{
	double x = SVG_LEFT + (t - g->t0) / g->span * g->plot_w;
	return x < SVG_LEFT ? SVG_LEFT : x > SVG_LEFT + g->plot_w ? SVG_LEFT + g->plot_w : x;
}

static double lane_y(size_t lane)
{
	return LANES_TOP + (double)lane * LANE_H;
}

/* The lane of attempt number n (the last entry with that number), or -1. */
static long lane_of(const struct run_report *r, const struct geom *g, unsigned n)
{
	for (size_t i = g->lanes; i-- > 0;)
		if (r->attempts[i].number == n)
			return (long)i;
	return -1;
}

static void svg_marker(struct strbuf *out, const char *shape, double x, double y,
		       const char *colour, const struct rr_fault *f, const char *what)
{
	if (!strcmp(shape, "circle"))
		strbuf_addf(out,
			    "<circle class=\"happened\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#fff\" "
			    "stroke=\"#111\" stroke-width=\"2\" data-class=\"%s\">",
			    x, y, f->cls);
	else
		strbuf_addf(out,
			    "<polygon class=\"detected\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f "
			    "%.1f,%.1f\" fill=\"#111\" stroke=\"%s\" stroke-width=\"2\">",
			    x, y - 7, x + 6, y, x, y + 7, x - 6, y, colour);
	strbuf_addf(out, "<title>%s %s", f->cls, what);
	if (f->host) {
		strbuf_addstr(out, " on ");
		h_text(out, f->host, 64);
	}
	strbuf_addf(out, " (attempt %u)</title></%s>\n", f->attempt,
		    strcmp(shape, "circle") ? "polygon" : "circle");
}

static void svg(const struct run_report *r, struct strbuf *out)
{
	struct geom g = { 0 };
	g.t0 = r->start;
	g.span = r->wall_s > 0 ? r->wall_s : 1;
	g.plot_w = SVG_W - SVG_LEFT - SVG_RIGHT;
	g.lanes = r->nr_attempts < MAX_LANES ? r->nr_attempts : MAX_LANES;
	g.lanes_bottom = lane_y(g.lanes ? g.lanes : 1);
	g.plot_top = g.lanes_bottom + 20;
	g.plot_bottom = g.plot_top + PLOT_H;
	g.max_step = 1;
	for (size_t i = 0; i < g.lanes; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		if (a->has_steps && a->last_step > g.max_step)
			g.max_step = a->last_step;
		for (size_t s = 0; s < a->nr_samples; s++)
			if (a->samples[s].step > g.max_step)
				g.max_step = a->samples[s].step;
	}
	double height = g.plot_bottom + 40;
	strbuf_addf(out,
		    "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		    "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		    "aria-label=\"timeline of the run\">\n",
		    SVG_W, height, SVG_W, height);
	strbuf_addf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n",
		    SVG_W, height);

	/* recovery spans first, behind everything */
	for (size_t i = 0; i < r->nr_faults; i++) {
		const struct rr_fault *f = &r->faults[i];
		double from = isnan(f->detected) ? f->t : f->detected;
		if (isnan(f->recovered))
			continue;
		double x0 = gx(&g, from), x1 = gx(&g, f->recovered);
		strbuf_addf(out,
			    "<rect class=\"recovery\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			    "height=\"%.1f\" fill=\"#9e9e9e\" fill-opacity=\"0.25\"><title>recovery "
			    "from %s: ",
			    x0, LANES_TOP - 4, x1 > x0 ? x1 - x0 : 1, g.plot_bottom - LANES_TOP + 4,
			    f->cls);
		runreport_duration(out, f->time_to_recover_s);
		strbuf_addstr(out, "</title></rect>\n");
	}

	/* lanes */
	for (size_t i = 0; i < g.lanes; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		const char *outcome = rr_attempt_outcome(r, a);
		double y = lane_y(i);
		double x0 = gx(&g, a->start), x1 = gx(&g, a->end);
		strbuf_addf(out,
			    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">attempt "
			    "%u</text>\n",
			    SVG_LEFT - 8, y + 13, a->number);
		strbuf_addf(out,
			    "<rect class=\"attempt\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			    "height=\"16\" rx=\"3\" fill=\"%s\"><title>attempt %u: ",
			    x0, y + 2, x1 - x0 > 2 ? x1 - x0 : 2, colour_of(outcome), a->number);
		h_text(out, outcome, 64);
		strbuf_addstr(out, ", ");
		runreport_duration(out, a->end - a->start);
		strbuf_addstr(out, "</title></rect>\n");
	}
	if (r->nr_attempts > g.lanes)
		strbuf_addf(out,
			    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">(%zu more attempts not "
			    "drawn)</text>\n",
			    SVG_LEFT, g.lanes_bottom + 12, r->nr_attempts - g.lanes);

	/* fault markers: happened (hollow circle) and detected (diamond), joined by the latency */
	for (size_t i = 0; i < r->nr_faults; i++) {
		const struct rr_fault *f = &r->faults[i];
		long lane = lane_of(r, &g, f->attempt);
		double y = lane < 0 ? LANES_TOP + 10 : lane_y((size_t)lane) + 10;
		double det = isnan(f->detected) ? f->t : f->detected;
		const char *colour = colour_of(f->cls);
		if (!isnan(f->happened))
			strbuf_addf(out,
				    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				    "stroke=\"#000\" stroke-width=\"1.5\"/>\n",
				    gx(&g, f->happened), y, gx(&g, det), y);
		if (!isnan(f->happened))
			svg_marker(out, "circle", gx(&g, f->happened), y, colour, f, "happened");
		svg_marker(out, "polygon", gx(&g, det), y, colour, f, "detected");
	}

	/* progress: step against time, one polyline an attempt */
	strbuf_addf(out,
		    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		    "stroke=\"#bbb\"/>\n",
		    SVG_LEFT, g.plot_top, g.plot_w, PLOT_H);
	strbuf_addf(out,
		    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">step "
		    "%llu</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
		    "text-anchor=\"end\">0</text>\n",
		    SVG_LEFT - 6, g.plot_top + 10, (unsigned long long)g.max_step, SVG_LEFT - 6,
		    g.plot_bottom);
	for (size_t i = 0; i < g.lanes; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		if (!a->has_steps)
			continue;
		size_t every = a->nr_samples / MAX_POINTS + 1;
		strbuf_addf(out,
			    "<polyline class=\"progress\" fill=\"none\" stroke=\"%s\" "
			    "stroke-width=\"2\" points=\"",
			    i % 2 ? "#1565c0" : "#283593");
		for (size_t s = 0; s < a->nr_samples; s += every)
			strbuf_addf(out, "%.1f,%.1f ", gx(&g, a->samples[s].t),
				    g.plot_bottom - (double)a->samples[s].step /
							    (double)g.max_step * PLOT_H);
		strbuf_addf(out, "%.1f,%.1f", gx(&g, a->last_step_t),
			    g.plot_bottom - (double)a->last_step / (double)g.max_step * PLOT_H);
		strbuf_addf(out, "\"><title>attempt %u: steps %llu..%llu</title></polyline>\n",
			    a->number, (unsigned long long)a->first_step,
			    (unsigned long long)a->last_step);
	}

	/* the time axis */
	double axis_y = g.plot_bottom + 16;
	for (int i = 0; i <= 5; i++) {
		double t = g.t0 + g.span * i / 5;
		double x = gx(&g, t);
		strbuf_addf(out,
			    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n",
			    x, LANES_TOP - 4, x, g.plot_bottom + 4);
		strbuf_addf(out,
			    "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
			    "text-anchor=\"middle\">",
			    x, axis_y);
		if (isfinite(t))
			rr_add_at(out, r, t);
		strbuf_addstr(out, "</text>\n");
	}
	strbuf_addstr(out, "</svg>\n");
}

static void legend(struct strbuf *out)
{
	strbuf_addstr(out, "<div class=\"legend\" id=\"legend\">");
	for (size_t i = 0; i < ARRAY_SIZE(palette); i++)
		strbuf_addf(out,
			    "<span><svg width=\"14\" height=\"12\"><rect width=\"14\" height=\"12\" "
			    "rx=\"2\" fill=\"%s\"/></svg> %s</span>",
			    palette[i].colour, palette[i].name);
	strbuf_addf(out,
		    "<span><svg width=\"14\" height=\"12\"><rect width=\"14\" height=\"12\" rx=\"2\" "
		    "fill=\"%s\"/></svg> running or not ended</span>",
		    OTHER_COLOUR);
	strbuf_addstr(out,
		      "<br><span><svg width=\"14\" height=\"14\"><circle cx=\"7\" cy=\"7\" r=\"5\" "
		      "fill=\"#fff\" stroke=\"#111\" stroke-width=\"2\"/></svg> fault happened</span>"
		      "<span><svg width=\"14\" height=\"14\"><polygon points=\"7,0 14,7 7,14 0,7\" "
		      "fill=\"#111\"/></svg> fault detected (outlined in its class's colour)</span>"
		      "<span><svg width=\"14\" height=\"12\"><rect width=\"14\" height=\"12\" "
		      "fill=\"#9e9e9e\" fill-opacity=\"0.25\"/></svg> recovery (detected to a step "
		      "again)</span>"
		      "<span><svg width=\"18\" height=\"12\"><line x1=\"0\" y1=\"10\" x2=\"18\" y2=\"2\" "
		      "stroke=\"#283593\" stroke-width=\"2\"/></svg> step reached (lower plot)</span>"
		      "</div>\n");
}

static void h_cell_at(struct strbuf *out, const struct run_report *r, double t)
{
	strbuf_addstr(out, "<td>");
	rr_add_at(out, r, t);
	strbuf_addstr(out, "</td>");
}

static void h_cell_dur(struct strbuf *out, double s)
{
	strbuf_addstr(out, "<td>");
	runreport_duration(out, s);
	strbuf_addstr(out, "</td>");
}

static void h_cell(struct strbuf *out, const char *s, size_t max)
{
	strbuf_addstr(out, "<td>");
	h_text(out, s ? s : "-", max);
	strbuf_addstr(out, "</td>");
}

void runreport_html(const struct run_report *r, const char *title, struct strbuf *out)
{
	struct strbuf tmp = STRBUF_INIT;
	strbuf_addstr(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			   "<meta name=\"viewport\" content=\"width=device-width, "
			   "initial-scale=1\">\n<title>vigil report");
	if (title) {
		strbuf_addstr(out, ": ");
		h_text(out, title, 200);
	}
	strbuf_addstr(
		out,
		"</title>\n<style>\n"
		/* one page from a phone (360 px) to a wide screen: the timeline scales with its
		 * viewBox, long text wraps, each table scrolls in its own box */
		"*{box-sizing:border-box}\n"
		"body{font-family:sans-serif;margin:0 auto;padding:12px;max-width:1400px;color:#222;"
		"background:#fff}\n"
		"p{overflow-wrap:anywhere}#timeline{display:block;width:100%;height:auto}\n"
		".scroll{max-width:100%;overflow-x:auto}\n"
		"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}\n"
		"table{border-collapse:collapse;font-size:13px}\n"
		"td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}\n"
		"th{background:#f3f3f3}.summary{font-size:15px}.legend{font-size:12px;margin:6px 0}\n"
		".legend span{margin-right:14px;white-space:nowrap}.note{color:#a00}\n"
		"</style>\n</head>\n<body>\n<h1>vigil report</h1>\n");
	if (title) {
		strbuf_addstr(out, "<p class=\"run\">");
		h_text(out, title, 1024);
		strbuf_addstr(out, "</p>\n");
	}
	strbuf_addstr(out, "<p class=\"summary\" id=\"summary\">Outcome <b id=\"outcome\">");
	h_text(out, rr_run_outcome(r), 64);
	strbuf_addstr(out, "</b> &middot; wall <b id=\"wall\">");
	runreport_duration(out, r->wall_s);
	strbuf_addstr(out, "</b> &middot; ETTR <b id=\"ettr\">");
	rr_add_percent(out, r->ettr);
	strbuf_addstr(out, "</b> (productive ");
	runreport_duration(out, r->productive_s);
	strbuf_addf(out, ") &middot; %zu attempts &middot; %zu faults &middot; %llu steps redone",
		    r->nr_attempts, r->nr_faults, (unsigned long long)r->steps_redone);
	strbuf_addstr(out, " &middot; started ");
	rr_add_utc(out, r->start);
	if (r->finished && r->detail) {
		strbuf_addstr(out, "<br>ended: ");
		h_text(out, r->detail, 300);
	}
	strbuf_addstr(out, "</p>\n");
	if (r->bad_lines || r->torn_tail)
		strbuf_addf(out,
			    "<p class=\"note\">The journal had %zu damaged line%s%s; they were "
			    "skipped.</p>\n",
			    r->bad_lines, r->bad_lines == 1 ? "" : "s",
			    r->torn_tail ? " and a torn last line" : "");

	strbuf_addstr(out, "<h2>Timeline</h2>\n");
	svg(r, out);
	legend(out);

	strbuf_addstr(out, "<h2>Attempts</h2>\n<div class=\"scroll\"><table id=\"attempts\">\n<tr><th>attempt</th>"
			   "<th>start</th><th>end</th><th>outcome</th><th>steps</th>"
			   "<th>redone</th><th>lasted</th><th>productive</th><th>hosts</th></tr>\n");
	for (size_t i = 0; i < r->nr_attempts; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		strbuf_addf(out, "<tr><td>%u</td>", a->number);
		h_cell_at(out, r, a->start);
		h_cell_at(out, r, a->end);
		strbuf_reset(&tmp);
		strbuf_addstr(&tmp, rr_attempt_outcome(r, a));
		if (a->has_code)
			strbuf_addf(&tmp, " (%d)", a->code);
		h_cell(out, tmp.buf, 80);
		strbuf_reset(&tmp);
		rr_add_steps(&tmp, a);
		h_cell(out, tmp.buf, 80);
		strbuf_addf(out, "<td>%llu</td>", (unsigned long long)a->steps_redone);
		h_cell_dur(out, a->end - a->start);
		h_cell_dur(out, a->productive_s);
		strbuf_reset(&tmp);
		rr_add_hosts(&tmp, a, 16);
		h_cell(out, tmp.buf, 2000);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");

	strbuf_addstr(out, "<h2>Faults</h2>\n<div class=\"scroll\"><table id=\"faults\">\n<tr><th>#</th><th>class</th>"
			   "<th>attempt</th><th>host</th><th>happened</th><th>detected</th>"
			   "<th>latency</th><th>recovered</th><th>to recover</th><th>detail</th>"
			   "<th>evidence</th><th>excluded</th></tr>\n");
	for (size_t i = 0; i < r->nr_faults; i++) {
		const struct rr_fault *f = &r->faults[i];
		strbuf_addf(out, "<tr><td>%zu</td>", i + 1);
		h_cell(out, f->cls, 64);
		strbuf_addf(out, "<td>%u</td>", f->attempt);
		h_cell(out, f->host, 64);
		h_cell_at(out, r, f->happened);
		h_cell_at(out, r, isnan(f->detected) ? f->t : f->detected);
		h_cell_dur(out, f->latency_s);
		h_cell_at(out, r, f->recovered);
		h_cell_dur(out, f->time_to_recover_s);
		h_cell(out, f->detail, 300);
		strbuf_reset(&tmp);
		if (f->evidence_host)
			strbuf_addf(&tmp, "suspect %s: ", f->evidence_host);
		if (f->evidence)
			strbuf_addstr(&tmp, f->evidence);
		h_cell(out, tmp.len ? tmp.buf : NULL, 600);
		strbuf_reset(&tmp);
		for (size_t j = 0; j < f->nr_excluded; j++)
			strbuf_addf(&tmp, "%s%s: %s", j ? "; " : "", f->excluded[j].host,
				    f->excluded[j].reason ? f->excluded[j].reason : "-");
		h_cell(out, tmp.len ? tmp.buf : NULL, 1200);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");

	strbuf_addstr(out, "<h2>Excluded hosts</h2>\n<div class=\"scroll\"><table id=\"excluded\">\n<tr><th>host</th>"
			   "<th>attempt</th><th>when</th><th>reason</th></tr>\n");
	for (size_t i = 0; i < r->nr_excluded; i++) {
		const struct rr_excluded *x = &r->excluded[i];
		strbuf_addstr(out, "<tr>");
		h_cell(out, x->host, 64);
		strbuf_addf(out, "<td>%u</td>", x->attempt);
		h_cell_at(out, r, x->t);
		h_cell(out, x->reason, 600);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");

	strbuf_addstr(out, "<h2>Other events</h2>\n<div class=\"scroll\"><table id=\"events\">\n<tr><th>when</th>"
			   "<th>attempt</th><th>event</th><th>host</th><th>detail</th></tr>\n");
	for (size_t i = 0; i < r->nr_events && i < 2000; i++) {
		const struct rr_event *e = &r->events[i];
		strbuf_addstr(out, "<tr>");
		h_cell_at(out, r, e->t);
		strbuf_addf(out, "<td>%u</td>", e->attempt);
		h_cell(out, e->cls, 64);
		h_cell(out, e->host, 64);
		h_cell(out, e->detail, 300);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");
	if (r->nr_events > 2000 || r->events_omitted)
		strbuf_addf(out, "<p>(%zu more events not shown)</p>\n",
			    r->nr_events - (r->nr_events > 2000 ? 2000 : r->nr_events) +
				    r->events_omitted);
	strbuf_addstr(out, "</body>\n</html>\n");
	strbuf_release(&tmp);
}
