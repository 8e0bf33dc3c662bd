/* prom.c: Prometheus text format writer and atomic textfile writes (see prom.h). */
#include "prom.h"
#include "fileio.h"

#include <math.h>

static void add_escaped(struct strbuf *out, const char *text, bool label)
{
	/* cleaned first: a label must be valid UTF-8 (one bad byte fails the whole scrape), and an
	 * escape sequence or bidi control must not reach whoever curls /metrics (strbuf.h) */
	struct strbuf c = STRBUF_INIT;
	for (const char *seg = text;;) {
		/* a newline keeps the format's own "\n"; the rest is cleaned a line at a time */
		const char *nl = strchr(seg, '\n');
		char *piece = xstrndup(seg, nl ? (size_t)(nl - seg) : strlen(seg));
		strbuf_add_clean(&c, piece);
		free(piece);
		if (!nl)
			break;
		strbuf_addch(&c, '\n');
		seg = nl + 1;
	}
	for (const char *s = c.buf; *s; s++) {
		if (*s == '\\')
			strbuf_addstr(out, "\\\\");
		else if (*s == '\n')
			strbuf_addstr(out, "\\n");
		else if (*s == '"' && label)
			strbuf_addstr(out, "\\\"");
		else
			strbuf_addch(out, *s);
	}
	strbuf_release(&c);
}

void prom_family(struct strbuf *out, const char *name, const char *type, const char *help)
{
	strbuf_addf(out, "# HELP %s ", name);
	add_escaped(out, help, false);
	strbuf_addf(out, "\n# TYPE %s %s\n", name, type);
}

void prom_sample(struct strbuf *out, const char *name, const char *const *labels, double value)
{
	strbuf_addstr(out, name);
	if (labels && labels[0]) {
		strbuf_addch(out, '{');
		for (size_t i = 0; labels[i] && labels[i + 1]; i += 2) {
			if (i)
				strbuf_addch(out, ',');
			strbuf_addf(out, "%s=\"", labels[i]);
			add_escaped(out, labels[i + 1], true);
			strbuf_addch(out, '"');
		}
		strbuf_addch(out, '}');
	}
	if (isnan(value))
		strbuf_addstr(out, " NaN\n");
	else if (value == floor(value) && fabs(value) < 1e15)
		strbuf_addf(out, " %.0f\n", value);
	else
		strbuf_addf(out, " %.9g\n", value);
}

int prom_write_atomic(const char *path, const struct strbuf *content, struct strbuf *err)
{
	/* The collector reads whole files only: the one atomic, durable writer (fileio.h). */
	return write_file_atomic(path, content->buf, content->len, 0644, err);
}
