/*
 * html.h: the --html page of 'vigil diagnose': one self-contained file (inline SVG and CSS, no
 * script, nothing fetched) with the throughput curve, its drops, change points and patterns
 * marked, and the straggler hosts. Pure: the caller writes the page with write_file_atomic().
 */
#ifndef VIGIL_DIAGNOSE_HTML_H
#define VIGIL_DIAGNOSE_HTML_H

#include "steps.h"
#include "stragglers.h"

/* steps or stragglers may be NULL (the page shows what was diagnosed); file is the input's
 * name, shown escaped. */
void diag_html(const struct diag_steps *steps, const struct diag_stragglers *strag,
	       const struct diag_rows *rows, const char *file, struct strbuf *out);

#endif
