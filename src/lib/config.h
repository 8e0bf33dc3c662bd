/*
 * config.h: git-config style configuration files.
 *
 *   # comment            ; comment
 *   [gpu]
 *       count = 8
 *   [gpu "node-a*"]      # applies only on hosts whose name matches the pattern (fnmatch)
 *       count = 4
 *   [storage]
 *       mount = /        # keys may repeat: config_get_all() returns every value
 *       mount = /data
 *
 * Section and key names are case-insensitive. A later applicable entry wins for single values.
 * Ownership: struct config owns every string in it; config_release() frees them.
 */
#ifndef VIGIL_CONFIG_H
#define VIGIL_CONFIG_H

#include "strbuf.h"

struct config_entry {
	char *section;
	char *subsection; /* host pattern, or NULL */
	char *key;
	char *value;
	char *origin; /* "file:line" for messages */
};

struct config {
	struct config_entry *e;
	size_t nr, alloc;
	char *host;
};

#define CONFIG_MAX_BYTES (1u << 20)

void config_init(struct config *cfg, const char *host);
void config_release(struct config *cfg);

/* Parse text (name is used in messages). Returns 0, or -1 with *err set; cfg keeps what parsed. */
int config_parse(struct config *cfg, const char *text, size_t len, const char *name,
		 struct strbuf *err);
/* Load a file. Returns 0, 1 if it does not exist (and missing_ok), -1 on error. */
int config_load_file(struct config *cfg, const char *path, bool missing_ok, struct strbuf *err);
/* Add one "section.key=value" setting (from the command line). */
int config_set(struct config *cfg, const char *assignment, struct strbuf *err);

const char *config_get(const struct config *cfg, const char *section, const char *key);
/* Every applicable value in file order; returns the count, *out is malloc'd (free it, not items). */
size_t config_get_all(const struct config *cfg, const char *section, const char *key,
		      const char ***out);
/* Typed getters: 0 with *out set (default if absent), -1 with *err set if the value is bad. */
int config_get_u64(const struct config *cfg, const char *section, const char *key, uint64_t def,
		   uint64_t *out, struct strbuf *err);
int config_get_double(const struct config *cfg, const char *section, const char *key, double def,
		      double *out, struct strbuf *err);
int config_get_bool(const struct config *cfg, const char *section, const char *key, bool def,
		    bool *out, struct strbuf *err);
/* Where an entry came from, for messages ("FILE:LINE"), or NULL if not set. */
const char *config_origin(const struct config *cfg, const char *section, const char *key);

#endif
