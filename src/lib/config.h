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
 *
 * What keys exist and what values they take is a schema (struct config_key rows, given by the
 * caller: the commands own theirs, src/cmd/config_keys.c). config_validate() checks every entry
 * and section once, at load, whether or not its host pattern applies here, so a typo in a
 * [gpu "debug-*"] section is caught on every host, not only on the one it was meant for.
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

/* A [section] header as written, so that an unknown section is caught even with no keys. */
struct config_section {
	char *name;
	char *origin;
	size_t first; /* the index in e[] of its first entry (== nr if none followed yet) */
};

struct config {
	struct config_entry *e;
	size_t nr, alloc;
	char *host;
	struct config_section *sec;
	size_t nr_sec, alloc_sec;
};

#define CONFIG_MAX_BYTES (1u << 20)
/* Where a "section.key=value" given with -c came from, in messages. */
#define CONFIG_ORIGIN_SET "-c"

void config_init(struct config *cfg, const char *host);
void config_release(struct config *cfg);

/* Parse text (name is used in messages). Returns 0, or -1 with *err set; cfg keeps what parsed. */
int config_parse(struct config *cfg, const char *text, size_t len, const char *name,
		 struct strbuf *err);
/*
 * Load a file. Returns 0, 1 if it does not exist (and missing_ok), -1 on error. Only a regular
 * file of at most CONFIG_MAX_BYTES is read: a FIFO, device or directory is refused before any
 * read (opened non-blocking, so that not even the open waits on a FIFO's writer).
 */
int config_load_file(struct config *cfg, const char *path, bool missing_ok, struct strbuf *err);
/* The same from an open descriptor (closed here; path names it in messages): the reader that
 * opened it inside a root (fsroot_open) knows no swap between resolving and opening happened. */
int config_load_fd(struct config *cfg, int fd, const char *path, struct strbuf *err);
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
/* Remove entry i (0 <= i < cfg->nr), keeping the order of the others and of the sections. */
void config_remove_entry(struct config *cfg, size_t i);
/* Where an entry came from, for messages ("FILE:LINE"), or NULL if not set. */
const char *config_origin(const struct config *cfg, const char *section, const char *key);

/* ---- the schema ---- */

enum config_type {
	CONFIG_BOOL,    /* true/false, yes/no, on/off, 1/0 */
	CONFIG_SECONDS, /* a duration in seconds in [min, max] (CONFIG_WHOLE: whole seconds) */
	CONFIG_COUNT,   /* a whole number in [min, max] */
	CONFIG_SIZE,    /* a whole number of bytes in [min, max] */
	CONFIG_NUMBER,  /* a real number in [min, max] */
	CONFIG_PERCENT, /* a number with an optional '%' in [min, max] */
	CONFIG_STRING,  /* any text */
	CONFIG_PATH,    /* an absolute path */
	CONFIG_ENUM,    /* one of choices */
	CONFIG_NAMES,   /* a list of choices, separated by commas or spaces */
};

enum {
	CONFIG_MIN_EXCL = 1 << 0, /* the range excludes min ("above 0") */
	CONFIG_MAX_EXCL = 1 << 1, /* the range excludes max ("below 1") */
	CONFIG_WHOLE = 1 << 2,    /* CONFIG_SECONDS read as a whole number */
	CONFIG_LIST = 1 << 3,     /* may repeat; every value counts (documentation only) */
	/*
	 * Who may set a text or path key (every CONFIG_STRING and CONFIG_PATH row carries exactly
	 * one; tests/unit/test_cli.c fails on a row without). HOST_ONLY: it names a program vigil
	 * runs (or words given to one), or a place vigil writes to or listens on; only the
	 * host's own configuration (--config, -c, /etc/vigil/vigil.conf) may set it, never a
	 * --root fixture's etc/vigil/vigil.conf, which vigil runs as root over. FIXTURE_OK:
	 * a value judged or read inside the root; a fixture may set it.
	 */
	CONFIG_HOST_ONLY = 1 << 4,
	CONFIG_FIXTURE_OK = 1 << 5,
};

struct config_key {
	const char *name;           /* "section.key"; may be an fnmatch pattern ("stress.floor-*") */
	enum config_type type;
	double min, max;            /* numbers: the accepted range */
	unsigned flags;
	const char *const *choices; /* CONFIG_ENUM, CONFIG_NAMES: NULL-terminated */
	const char *commands;       /* the commands that read it, space-separated (man pages) */
	const char *help;           /* one line: what it means, its default */
};

/* Check value against k. 0, or -1 with *err: "'gpu.count' wants a whole number from 0 to 1024,
 * not '-1'" (name: what to call the key or option in the message; k->name if NULL). */
int config_key_check(const struct config_key *k, const char *name, const char *value,
		     struct strbuf *err);
/* What k accepts, in words ("whole seconds from 1 to 3600"), appended to sb. */
void config_key_describe(const struct config_key *k, struct strbuf *sb);
/* The row of keys[nr] that names "section.key" (exactly or by pattern), or NULL. */
const struct config_key *config_key_find(const struct config_key *keys, size_t nr,
					 const char *section, const char *key);
/*
 * Every section and entry of cfg against keys[nr], in file order; stops at the first problem:
 * -1 with *err naming where it came from and what is wrong, with the nearest known name for a
 * misspelt one ("t.conf:3: unknown key 'gpu.cuont' (did you mean 'gpu.count'?)").
 */
int config_validate(const struct config *cfg, const struct config_key *keys, size_t nr,
		    struct strbuf *err);
/* Edit distance (insertions, deletions, substitutions, swaps of neighbours) of a and b. */
size_t config_edit_distance(const char *a, const char *b);

#endif
