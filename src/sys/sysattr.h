/*
 * sysattr.h: reading one sysfs or procfs value that a check judges. A value that is missing,
 * cannot be read, is empty, holds NUL bytes or holds junk where a number belongs is said so in
 * *err (naming the file, quoting at most a short clean excerpt of what it held), never turned into
 * "" or 0: the caller makes it `unknown` for its device. Reads go through the root given (fsroot.h), so --root works.
 *
 * Every function returns READ_OK (0), READ_MISSING, or -1; *err (may be NULL) is set whenever the
 * result is not READ_OK, READ_MISSING included, so a caller for whom "missing" is also unreadable
 * can quote it as it is.
 */
#ifndef VIGIL_SYS_SYSATTR_H
#define VIGIL_SYS_SYSATTR_H

#include "../lib/strbuf.h"
#include "../lib/fileio.h"
#include "fsroot.h"

/* How much of a bad value a message quotes. */
#define SYSATTR_EXCERPT 40

/* A one-line attribute (4 KiB at most), trimmed; not empty, no NUL bytes. */
int sysattr_read(const struct fsroot *root, const char *path, struct strbuf *out,
		 struct strbuf *err);
/* An attribute holding one number (decimal or 0x hex). */
int sysattr_read_u64(const struct fsroot *root, const char *path, uint64_t *out,
		     struct strbuf *err);
/* A whole /proc or sysfs file of up to cap bytes (longer is an error), without NUL bytes. */
int sysattr_read_file(const struct fsroot *root, const char *path, struct strbuf *out, size_t cap,
		      struct strbuf *err);
/* Is path a directory? 1, 0 (no such directory), or -1 when that cannot be told (EACCES, EIO). */
int sysattr_dir_exists(const struct fsroot *root, const char *path, struct strbuf *err);

#endif
