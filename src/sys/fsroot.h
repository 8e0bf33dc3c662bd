/*
 * fsroot.h: every read of the host's /sys, /proc, /dev and /etc goes through here (hwloc's
 * HWLOC_FSROOT idea). Under a root (--root DIR or VIGIL_ROOT, a struct fsroot value), "/sys/x"
 * reads "DIR/sys/x", so a fixture directory stands in for a whole host.
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

/*
 * A root: a value the command layer makes once (fsroot_init()) and passes down, in struct
 * check_ctx to the checks and as the first argument of every function here; nothing about it is
 * process-global. The host is the constant fsroot_host. Under a root, dir is pinned by an O_PATH
 * descriptor opened once, so every read resolves beneath the same directory even if DIR's path
 * is renamed or replaced meanwhile. A forked child (a check, a gather part) inherits it.
 */
enum fsroot_resolver {
	FSROOT_RESOLVER_AUTO,	  /* openat2 where the kernel has it, else the userspace walker */
	FSROOT_RESOLVER_USERSPACE /* the walker always (tests; VIGIL_FSROOT_RESOLVER=userspace) */
};

struct fsroot {
	char *dir;		       /* the root directory without trailing '/'; NULL: host */
	int fd;			       /* O_PATH|O_DIRECTORY descriptor of dir; -1 on the host */
	enum fsroot_resolver resolver; /* tests may set it after fsroot_init() */
};

/* The real host: plain reads of the paths as given. */
extern const struct fsroot *const fsroot_host;

/*
 * Make r the root dir ("", NULL or "/" mean the host: r then reads as fsroot_host does). The
 * string is copied and the directory opened once. VIGIL_FSROOT_RESOLVER=userspace in the
 * environment chooses the walker. 0, or -1 with *err (dir missing or not a directory); r is
 * then the host, safe to release.
 */
int fsroot_init(struct fsroot *r, const char *dir, struct strbuf *err);
/* Close the descriptor and free the copy; r becomes the host. */
void fsroot_release(struct fsroot *r);
/* The root directory, "" for the host. */
const char *fsroot_dir(const struct fsroot *r);
bool fsroot_is_host(const struct fsroot *r);
/* out = root + path (replaces the content of out): for messages only, never to open. */
void fsroot_path(const struct fsroot *r, struct strbuf *out, const char *path);

/* Read a whole file (up to cap bytes) into sb: READ_OK, READ_MISSING, READ_TRUNCATED or -1. */
int fsroot_read(const struct fsroot *r, const char *path, struct strbuf *sb, size_t cap,
		struct strbuf *err);
/* Read a small attribute file (4 KiB cap), trimmed of surrounding whitespace. */
int fsroot_read_attr(const struct fsroot *r, const char *path, struct strbuf *out,
		     struct strbuf *err);
/* Read an attribute holding one number (decimal or 0x hex): 0, READ_MISSING, or -1 (bad). */
int fsroot_read_u64(const struct fsroot *r, const char *path, uint64_t *out, struct strbuf *err);
bool fsroot_exists(const struct fsroot *r, const char *path);
/* Sorted directory entries without "." and "..": 0, READ_MISSING or -1. */
int fsroot_list(const struct fsroot *r, const char *path, struct strlist *out, struct strbuf *err);
/* Target of a symlink (its last component when basename is true). */
int fsroot_readlink(const struct fsroot *r, const char *path, struct strbuf *out, bool basename);
int fsroot_statvfs(const struct fsroot *r, const char *path, struct statvfs *st,
		   struct strbuf *err);

/* open(path, flags) resolved inside the root (plain open() on the host): an fd or -1 with errno. */
int fsroot_open(const struct fsroot *r, const char *path, int flags);
/*
 * For readers that want a path (vigil.conf, the NVML snapshot that the test library opens; a
 * reader that can take a descriptor uses fsroot_open(), as the kernel log does): out = the host
 * path of path with every link resolved inside the root, so opening it cannot leave the root
 * (short of the fixture being changed between the two steps).
 * 0, READ_MISSING (out = root + path: a name for messages, never to open, since a link on the
 * way may lead out), or -1 with *err (ELOOP). On the host out is path unchanged.
 */
int fsroot_resolve(const struct fsroot *r, const char *path, struct strbuf *out,
		   struct strbuf *err);
/*
 * Does the root hold something of a host: a sys/ or proc/ directory, a dev/kmsg log, or the
 * GATHERED file of 'vigil gather'? An empty directory, or a scenario folder given instead of its
 * root/, does not: false with *why saying so ("'DIR' holds no sys/, proc/ or dev/kmsg: not a
 * host root"). Always true on the host.
 */
bool fsroot_looks_like_host(const struct fsroot *r, struct strbuf *why);

#endif
