/*
 * html_cmp.c: the scorecard page's comparison with an older card (--html with --compare): the
 * rows of qualify_compare() side by side, the better value of each marked, the rows beyond noise
 * highlighted, unknown rows said as such. The rows come from the comparison's own JSON
 * (docs/schema/qualify-compare.json), so the page and --compare-json never disagree. Every
 * string goes through html_add_text(); a winner picks a CSS class only from a fixed list.
 */
#include "html_int.h"
#include "../lib/html.h"

#define CMP_ROWS   2000 /* rows shown; the comparison has a few dozen */
#define NAME_BYTES 80

static void h(struct strbuf *o, const char *s)
{
	html_add_text(o, s ? s : "-", NAME_BYTES);
}

/* "provider-a, job 4242, 2026-12-04T10:00:00Z" of a compare head */
static void who(struct strbuf *o, const struct json_value *head)
{
	h(o, json_get_string(head, "cluster"));
	strbuf_addstr(o, ", job ");
	h(o, json_get_string(head, "job_id"));
	strbuf_addstr(o, ", ");
	h(o, json_get_string(head, "time"));
	const struct json_value *c = json_get(head, "complete");
	if (!c || c->type != JSON_BOOL || !c->boolean)
		strbuf_addstr(o, " (partial)");
}

static void value_cell(struct strbuf *o, const struct json_value *row, const char *key, bool win,
		       bool beyond)
{
	double v;
	char b[32];
	if (!card_num(row, key, &v)) {
		strbuf_addstr(o, "<td class=\"n missing\">-</td>");
		return;
	}
	strbuf_addf(o, "<td class=\"n%s%s\">%s%s</td>", win ? " win" : "",
		    win && beyond ? " clear" : "", card_fmt(b, v), win ? " &#10003;" : "");
}

static const char *const winners[] = { "old", "new", "same", "unknown", NULL };

static const char *winner_class(const char *w)
{
	for (size_t i = 0; w && winners[i]; i++)
		if (!strcmp(w, winners[i]))
			return winners[i];
	return "unknown";
}

void qhtml_compare(const struct json_value *old_card, const struct json_value *card,
		   struct strbuf *o)
{
	struct strbuf js = STRBUF_INIT, err = STRBUF_INIT;
	struct json_value *cmp = NULL;
	if (qualify_compare(old_card, card, true, &js, &err) < 0 ||
	    !(cmp = json_parse(js.buf, js.len, NULL))) {
		strbuf_addstr(o, "<h2 id=\"compare-head\">Compared with an older card</h2>\n"
				 "<p class=\"none\" id=\"compare-none\">The comparison cannot be "
				 "made: ");
		h(o, err.len ? err.buf : "its result is not JSON");
		strbuf_addstr(o, ".</p>\n");
		goto out;
	}
	const struct json_value *rows = json_get(cmp, "rows"), *sum = json_get(cmp, "summary");
	double n;
	strbuf_addstr(o, "<h2 id=\"compare-head\">Compared with ");
	who(o, json_get(cmp, "old"));
	strbuf_addstr(o, "</h2>\n<p id=\"compare-summary\">This card (");
	who(o, json_get(cmp, "new"));
	strbuf_addstr(o, ") is better in ");
	static const char *const keys[] = { "better_in", "worse_in", "same", "unknown" };
	static const char *const after[] = { ", worse in ", ", the same within noise in ",
					     "; not comparable in ", "." };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		char b[32];
		strbuf_addstr(o, card_num(sum, keys[i], &n) ? card_fmt(b, n) : "-");
		strbuf_addstr(o, after[i]);
	}
	strbuf_addstr(o, "</p>\n<p class=\"key\"><span class=\"win\">&#10003; the better value"
			 "</span><span class=\"win clear\">&#10003; better beyond noise</span>"
			 "<span class=\"beyond\">row beyond noise</span>; ? a card lacks the "
			 "figure (not a win for either).</p>\n<div class=\"wrap\">"
			 "<table id=\"compare\">\n<tr><th>figure</th><th>stat</th><th>unit</th>"
			 "<th>old</th><th>new</th><th>change</th><th>better</th><th>noise</th>"
			 "</tr>\n");
	for (size_t i = 0; rows && rows->type == JSON_ARRAY && i < rows->nr && i < CMP_ROWS; i++) {
		const struct json_value *r = rows->items[i], *bn = json_get(r, "beyond_noise");
		const char *w = winner_class(json_get_string(r, "winner"));
		bool beyond = bn && bn->type == JSON_BOOL && bn->boolean;
		double v;
		char b[32];
		strbuf_addf(o, "<tr class=\"w-%s%s\"><td>", w, beyond ? " beyond" : "");
		h(o, json_get_string(r, "figure"));
		strbuf_addstr(o, "</td><td>");
		h(o, json_get_string(r, "stat"));
		strbuf_addstr(o, "</td><td>");
		h(o, json_get_string(r, "unit"));
		strbuf_addstr(o, "</td>");
		value_cell(o, r, "old", !strcmp(w, "old"), beyond);
		value_cell(o, r, "new", !strcmp(w, "new"), beyond);
		if (card_num(r, "change_pct", &v))
			strbuf_addf(o, "<td class=\"n\">%+.1f %%</td>", v);
		else
			strbuf_addstr(o, "<td class=\"n\">-</td>");
		strbuf_addf(o, "<td class=\"winner\">%s%s</td>", !strcmp(w, "unknown") ? "?" : w,
			    beyond ? " *" : "");
		if (card_num(r, "noise_pct", &v))
			strbuf_addf(o, "<td class=\"n\">%s %%</td>", card_fmt(b, v));
		else
			strbuf_addstr(o, "<td class=\"n\">a node</td>");
		strbuf_addstr(o, "</tr>\n");
	}
	strbuf_addstr(o, "</table></div>\n");
	if (rows && rows->type == JSON_ARRAY && rows->nr > CMP_ROWS)
		strbuf_addf(o, "<p class=\"note\">%zu more rows not shown.</p>\n",
			    rows->nr - CMP_ROWS);
out:
	json_free(cmp);
	strbuf_release(&js);
	strbuf_release(&err);
}
