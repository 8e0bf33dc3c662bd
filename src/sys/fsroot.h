/*
 * fsroot.h: every read of the host's /sys, /proc, /dev and /etc goes through here (hwloc's
 * HWLOC_FSROOT idea). With a root set (--root DIR or VIGIL_ROOT), "/sys/x" reads "DIR/sys/x", so
 * a fixture directory stands in for a whole host.
 *
 * Paths passed in are absolute host paths ("/sys/class/infiniband"). Reads are bounded.
 *
 * Under a root, every function here resolves the path inside the root, as openat2() with
 * RESOLVE_IN_ROOT does: an absolute link target means root + target, ".." stops at the root, magic
 * links are not followed, more than 40 links is ELOOP. Relative sysfs links
 * (../../devices/pci0000:00/...) work as on the host; nothing outside the root is ever read. On
 * the host (no root) the calls are the plain ones.
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

/* open(path, flags) resolved inside the root (plain open() on the host): an fd or -1 with errno. */
int fsroot_open(const char *path, int flags);
/*
 * For readers that want a path (the kernel log reader): out = the host path of path with every
 * link resolved inside the root, so opening it cannot leave the root (short of the fixture being
 * changed between the two steps). 0, READ_MISSING (out = root + path), or -1 with *err (ELOOP).
 * On the host out is path unchanged.
 */
int fsroot_resolve(const char *path, struct strbuf *out, struct strbuf *err);
/*
 * Does the root hold something of a host: a sys/ or proc/ directory, a dev/kmsg log, or the
 * GATHERED file of 'vigil gather'? An empty directory, or a scenario folder given instead of its
 * root/, does not: false with *why saying so ("'DIR' holds no sys/, proc/ or dev/kmsg: not a
 * host root"). Always true on the host.
 */
bool fsroot_looks_like_host(struct strbuf *why);

/* Tests: which resolver a root uses (AUTO: openat2 where the kernel has it, else the userspace
 * walker). VIGIL_FSROOT_RESOLVER=userspace in the environment forces the walker too. */
enum fsroot_resolver { FSROOT_RESOLVER_AUTO, FSROOT_RESOLVER_USERSPACE };
void fsroot_set_resolver(enum fsroot_resolver r);

#endif
