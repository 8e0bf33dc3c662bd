/*
 * fsroot.h: every read of the host's /sys, /proc, /dev and /etc goes through here (hwloc's
 * HWLOC_FSROOT idea). With a root set (--root DIR or VIGIL_ROOT), "/sys/x" reads "DIR/sys/x", so
 * a fixture directory stands in for a whole host.
 *
 * Paths passed in are absolute host paths ("/sys/class/infiniband"). Reads are bounded.
 */
#ifndef VIGIL_FSROOT_H
#define VIGIL_FSROOT_H

#include "../lib/strbuf.h"
#include "../lib/strlist.h"
#include "../lib/fileio.h"

#include <sys/statvfs.h>

/* Set the root ("" or NULL or "/" means the real host). The string is copied. */
void fsroot_set(const char *root);
/* The root directory, "" for the host. */
const char *fsroot_get(void);
bool fsroot_is_host(void);
/* out = root + path (replaces the content of out). */
void fsroot_path(struct strbuf *out, const char *path);

/* Read a whole file (up to cap bytes) into sb: READ_OK, READ_MISSING, READ_TRUNCATED or -1. */
int fsroot_read(const char *path, struct strbuf *sb, size_t cap, struct strbuf *err);
/* Read a small attribute file (4 KiB cap), trimmed of surrounding whitespace. */
int fsroot_read_attr(const char *path, struct strbuf *out, struct strbuf *err);
/* Read an attribute holding one number (decimal or 0x hex): 0, READ_MISSING, or -1 (bad). */
int fsroot_read_u64(const char *path, uint64_t *out, struct strbuf *err);
bool fsroot_exists(const char *path);
/* Sorted directory entries without "." and "..": 0, READ_MISSING or -1. */
int fsroot_list(const char *path, struct strlist *out, struct strbuf *err);
/* Target of a symlink (its last component when basename is true). */
int fsroot_readlink(const char *path, struct strbuf *out, bool basename);
int fsroot_statvfs(const char *path, struct statvfs *st, struct strbuf *err);

#endif
