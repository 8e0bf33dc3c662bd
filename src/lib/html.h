/*
 * html.h: text from outside (host names, file names, reasons read from a journal or a scorecard)
 * into an HTML page. The one escaping helper of every page vigil writes (vigil report --html,
 * vigil diagnose --html, the qualify scorecard), so a fix to it reaches them all.
 */
#ifndef VIGIL_HTML_H
#define VIGIL_HTML_H

#include "strbuf.h"

/*
 * Append s (NULL reads as "") to out cleaned as strbuf_add_excerpt() cleans it (control bytes
 * and invalid UTF-8 made visible, at most max bytes, a cut marked; SIZE_MAX for no limit), then
 * with & < > " ' escaped, so it is safe both as element text and inside a quoted attribute.
 */
void html_add_text(struct strbuf *out, const char *s, size_t max);

#endif
