/*
 * prom.h: Prometheus text exposition format writer (node_exporter textfile collector style).
 *
 * Each metric family is declared once with prom_family() (HELP and TYPE lines), then its samples
 * follow with prom_sample(). Label values are escaped (backslash, quote, newline).
 * prom_write_atomic() replaces PATH through write_file_atomic() (fileio.h), so a collector never
 * reads half a file; PATH must be a regular file or absent (not /dev/null, not a link).
 */
#ifndef VIGIL_PROM_H
#define VIGIL_PROM_H

#include "strbuf.h"

void prom_family(struct strbuf *out, const char *name, const char *type, const char *help);
/* labels: NULL-terminated list of name, value pairs (may be NULL). */
void prom_sample(struct strbuf *out, const char *name, const char *const *labels, double value);
int prom_write_atomic(const char *path, const struct strbuf *content, struct strbuf *err);

#endif
