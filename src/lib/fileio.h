/*
 * fileio.h: the one low-level file reader: bounded reads into a strbuf.
 * Paths given here are used as they are; code that reads the host's /sys, /proc, /dev or /etc goes
 * through sys/fsroot.h, which maps them under --root first.
 */
#ifndef VIGIL_FILEIO_H
#define VIGIL_FILEIO_H

#include "strbuf.h"

enum { READ_OK = 0, READ_MISSING = 1, READ_TRUNCATED = 2 };

/*
 * Read up to cap bytes of path into sb (appending). Returns READ_OK, READ_MISSING (ENOENT/ENOTDIR),
 * READ_TRUNCATED (file longer than cap: sb holds the first cap bytes), or -1 with *err set.
 * Non-blocking open so a FIFO with no writer does not hang; reads may still block on a device.
 */
int read_file_bounded(const char *path, struct strbuf *sb, size_t cap, struct strbuf *err);
/*
 * The same read from an fd the caller opened as read_file_bounded() does (O_RDONLY | O_CLOEXEC |
 * O_NONBLOCK | O_NOCTTY): fsroot opens inside a root itself. The fd is closed, whatever happens;
 * path only names the file in messages.
 */
int read_fd_bounded(int fd, const char *path, struct strbuf *sb, size_t cap, struct strbuf *err);
/* Write all of data to path (create/truncate); 0 or -1 with *err. Atomic via rename if atomic. */
int write_file(const char *path, const void *data, size_t len, bool atomic, struct strbuf *err);
/* mkdir -p; 0 or -1 with *err. */
int mkdir_p(const char *path, unsigned mode, struct strbuf *err);

#endif
