/*
 * fileio.h: the one low-level file reader (bounded reads into a strbuf) and the one writer
 * (atomic, durable, never through a link; below the reads).
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

enum {
	READ_STREAM_NOFOLLOW = 1 << 0,   /* a link at path is refused ("it is a symbolic link") */
	READ_STREAM_MISSING_OK = 1 << 1, /* no file (ENOENT) is READ_MISSING, not an error */
};
/*
 * Stream a regular file of any length through fn, 64 KiB at a time, for the readers that parse
 * as they go (the run journal, its report, vigil diagnose's rows): a FIFO, device or directory
 * is refused, never waited on ("it is a FIFO, not a regular file"); more than max bytes (0: no
 * bound) is an error ("it is longer than N MiB") after fn saw the first max. fn returns false
 * to stop early (not an error). READ_OK, READ_MISSING (READ_STREAM_MISSING_OK), or -1 with
 * *err ("cannot read 'P': ..."; fn may have seen part of the file).
 */
int read_file_stream(const char *path, unsigned flags, size_t max,
		     bool (*fn)(void *arg, const char *data, size_t len), void *arg,
		     struct strbuf *err);

/*
 * Writes (fileio_write.c). vigil runs as root in directories others may write to: no write
 * follows a link it did not make or writes into a file it did not create.
 *
 * write_file_atomic(): THE way to replace a file vigil keeps (state files, the agent's cache,
 * history and .prom, check --prom). path must be a regular file or absent: a link, device, FIFO
 * or directory there is refused ("cannot write 'P': it is a FIFO, not a regular file"). data
 * goes to a fresh temporary file in path's directory, "NAME.tmp.<16 random hex digits>", created
 * with O_EXCL | O_NOFOLLOW | O_CLOEXEC and mode (less the umask); then fsync, rename over path,
 * fsync of the directory. On any failure the temporary file is removed and path is as it was
 * (but for the last step: "'P' written, but its directory could not be synced"). 0 or -1, *err.
 */
int write_file_atomic(const char *path, const void *data, size_t len, unsigned mode,
		      struct strbuf *err);
/* For a signal handler (async-signal-safe): remove the temporary files write_file_atomic() is
 * writing now (the writers are one thread at a time); the files they would replace stay as
 * they were. */
void fileio_remove_temporaries(void);
/*
 * atomic: write_file_atomic(path, .., 0644, err). Not atomic: in place, for files nothing keeps
 * (test trees): O_NOFOLLOW, only into a regular file, truncated once that is known. 0 or -1.
 */
int write_file(const char *path, const void *data, size_t len, bool atomic, struct strbuf *err);
/* mkdir -p; 0, or -1 with *err (also when path exists but is not a directory). */
int mkdir_p(const char *path, unsigned mode, struct strbuf *err);
/*
 * A state directory on first use: when path does not exist, its missing parents are made
 * (0755, as mkdir -p) and path itself with mode (0700 or 0750), never through a link: mkdir()
 * does not follow one in the last name, and what was made is opened O_NOFOLLOW | O_DIRECTORY
 * and must be a directory of ours. A path that exists is left as it is (0): the caller's own
 * checks judge it (a file, a link, a directory others can write to). 0 or -1 with *err.
 */
int mkdir_state_dir(const char *path, unsigned mode, struct strbuf *err);

/*
 * Beneath a directory fd, for trees vigil fills (vigil gather): each component of rel is made
 * (mode) if missing and opened with O_DIRECTORY | O_NOFOLLOW; a link, a non-directory, ".." or
 * a directory owned by another user is refused. open_dir_beneath() returns an O_CLOEXEC fd of
 * the last one (the caller closes it), or -1 with *err. create_file_beneath() creates rel's last
 * name with O_EXCL | O_NOFOLLOW (so never through a planted link, never over anything) and
 * writes data; a failed write removes the file. Not synced: fixtures are not state. 0 or -1.
 */
int open_dir_beneath(int dirfd, const char *rel, unsigned mode, struct strbuf *err);
int create_file_beneath(int dirfd, const char *rel, const void *data, size_t len, unsigned mode,
			struct strbuf *err);

/* 16 hex digits from getrandom(): names others cannot guess (temporary and probe files). */
void random_hex16(char out[17]);
/* "a symbolic link", "a FIFO", "a character device", ... for a st_mode, in messages. */
const char *file_kind(unsigned mode);
/*
 * Test seam: hook(step, fd) runs before each "write", "fsync", "rename" and "dirsync" of the
 * writers above; a non-zero return is taken as that step failing with that errno (a full disk:
 * ENOSPC; a dying disk: EIO). NULL removes it. Not thread-safe; tests only.
 */
void fileio_set_fault_hook(int (*hook)(const char *step, int fd));

#endif
