/* html.c: outside text into an HTML page (see html.h). */
#include "html.h"

void html_add_text(struct strbuf *out, const char *s, size_t max)
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
