/*
 * html.h: `vigil sim --html` (docs/SIM.md, "The page"): one self-contained HTML page (inline
 * CSS and SVG; no script, no external resource) drawn from the run's own JSON
 * (docs/schema/sim.json), so that whatever the JSON holds the page can show: ETTR against the
 * GPUs (the rows of a gpus sweep, with their 95 % intervals), ETTR against the checkpoint
 * interval (a checkpoint-every sweep, Young/Daly's interval and the recommended one marked;
 * with several policies one curve each, from each entry of "policies" with its own sweep),
 * the time lost by cause as one stacked bar per policy (each entry of "policies" that has its
 * own lost_seconds_by_cause; else one bar from the top level), the interruptions by class and
 * the sweep's rows. Every string from the JSON or the model (class and policy names, the
 * model's source) goes through html_add_text().
 */
#ifndef VIGIL_SIM_HTML_H
#define VIGIL_SIM_HTML_H

#include "../lib/strbuf.h"

#include <stddef.h>

/* The page for json (vigil sim --json's text) into *out: 0, or -1 with *err when json is
 * not an object. model_source: the failure model's "source" (may be NULL). */
int sim_html(const char *json, size_t len, const char *model_source, struct strbuf *out,
	     struct strbuf *err);

#endif
