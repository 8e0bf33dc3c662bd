/* html_int.h: the parts of the scorecard page split across html.c (the page and its tables) and
 * html_svg.c (the two plots) and html_cmp.c (the comparison). Not for outside src/qualify. */
#ifndef VIGIL_QUALIFY_HTML_INT_H
#define VIGIL_QUALIFY_HTML_INT_H

#include "card.h"

/* The plots, each one <svg> element, or a paragraph saying why there is none. nccl is the
 * card's "nccl" member (anything, NULL included), falloff its "nccl_falloff_nodes"; cdf is
 * storage's "fsync_cdf". */
void qhtml_busbw(const struct json_value *nccl, const struct json_value *falloff,
		 struct strbuf *out);
void qhtml_fsync_cdf(const struct json_value *cdf, struct strbuf *out);
/* The comparison with an older card (html_cmp.c): a heading "Compared with <old cluster, job,
 * time>", a summary and the rows of qualify_compare() side by side. */
void qhtml_compare(const struct json_value *old_card, const struct json_value *card,
		   struct strbuf *out);

#endif
