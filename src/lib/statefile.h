/*
 * statefile.h: counter readings kept between runs in the state directory (the InfiniBand error
 * counters, the GPU NVLink error counters, the PCIe non-fatal AER totals), so that a check
 * judges the rise since the last run rather than a total since the driver loaded. One small
 * text file per kind:
 *
 *   # vigil infiniband counters (NAME VALUE: the name is all before the last space)
 *   mlx5_0 1 symbol_error 12
 *
 * Read with a bound (STATEFILE_MAX_BYTES) and replaced through write_file_atomic() (fileio.h).
 * A file that is not such a file (a header of another kind, a line that is not NAME VALUE, NUL
 * bytes, too large, not a regular file) is "no previous reading", and statefile_load() says why,
 * so that the check can say so: a damaged or planted state file never stops a check and never
 * feeds it made-up readings. Files without the header line (vigil before this module) load.
 *
 * Ownership: a counter_set owns its names; counter_set_release() frees them.
 */
#ifndef VIGIL_STATEFILE_H
#define VIGIL_STATEFILE_H

#include "strbuf.h"

#define STATEFILE_MAX_BYTES (1u << 20)

struct counter {
	char *name; /* printable, no newline, no leading or trailing space */
	uint64_t value;
};

struct counter_set {
	struct counter *items;
	size_t nr, alloc;
};
#define COUNTER_SET_INIT { NULL, 0, 0 }

/* Add one reading (the name is copied). A name that cannot be stored (empty, control bytes,
 * leading or trailing space, over 255 bytes) is left out: false. */
bool counter_set_add(struct counter_set *s, const char *name, uint64_t value);
/* The first reading of that name: true and *value, or false. */
bool counter_set_get(const struct counter_set *s, const char *name, uint64_t *value);
void counter_set_release(struct counter_set *s);

/* The file's text for kind ("infiniband", "gpu-nvlink"), appended to out. */
void statefile_format(const char *kind, const struct counter_set *s, struct strbuf *out);
/* Parse text (len bytes) into out: 0, or -1 with *why (out then holds nothing). */
int statefile_parse(const char *kind, const char *text, size_t len, struct counter_set *out,
		    struct strbuf *why);

enum { STATEFILE_LOADED = 0, STATEFILE_NONE = 1, STATEFILE_UNUSABLE = 2 };
/*
 * Load path: STATEFILE_LOADED (out filled; *mtime, if not NULL, the file's modification time),
 * STATEFILE_NONE (no file), or STATEFILE_UNUSABLE with *why ("'P' is not usable: line 3 is not
 * NAME VALUE"; out empty). Never -1.
 */
int statefile_load(const char *path, const char *kind, struct counter_set *out, double *mtime,
		   struct strbuf *why);
/* Replace path with the set (write_file_atomic, mode 0644): 0 or -1 with *err. */
int statefile_save(const char *path, const char *kind, const struct counter_set *s,
		   struct strbuf *err);

#endif
