/*
 * fileio_write.c: the write half of fileio.h. vigil runs as root in directories others may write
 * to (a state directory, a textfile collector directory, a fixture directory), so no write here
 * follows a link it did not make or writes into a file it did not create: every file vigil keeps
 * is replaced through write_file_atomic() (a fresh, unguessable temporary file, fsync, rename,
 * fsync of the directory), and fixtures are created beneath a directory fd, exclusively.
 */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int (*fault_hook)(const char *step, int fd);

/*
 * The temporaries being written now (a directory fd and a name in it), so that a signal handler
 * removes them (fileio_remove_temporaries()) and an interrupted run leaves no NAME.tmp.* behind.
 * A slot's name is complete before it is marked used, and unmarked before the name changes.
 */
#define TEMP_SLOTS 16
static struct temp_slot {
	volatile sig_atomic_t used;
	int dfd;
	char name[NAME_MAX + 1];
} temps[TEMP_SLOTS];

static struct temp_slot *temp_note(int dfd, const char *name)
{
	size_t len = strlen(name);
	if (len > NAME_MAX)
		return NULL;
	for (size_t i = 0; i < TEMP_SLOTS; i++) {
		if (temps[i].used)
			continue;
		temps[i].dfd = dfd;
		memcpy(temps[i].name, name, len + 1);
		temps[i].used = 1;
		return &temps[i];
	}
	return NULL; /* more at once than expected: such a temporary is only removed on errors */
}

static void temp_forget(struct temp_slot *t)
{
	if (t)
		t->used = 0;
}

void fileio_remove_temporaries(void)
{
	for (size_t i = 0; i < TEMP_SLOTS; i++)
		if (temps[i].used) {
			unlinkat(temps[i].dfd, temps[i].name, 0);
			temps[i].used = 0;
		}
}

void fileio_set_fault_hook(int (*hook)(const char *step, int fd))
{
	fault_hook = hook;
}

/* The error a test injects at this step (errno set), or 0: go on. */
static int fault(const char *step, int fd)
{
	int e = fault_hook ? fault_hook(step, fd) : 0;
	if (e)
		errno = e;
	return e;
}

void random_hex16(char out[17])
{
	static uint64_t counter;
	uint64_t v;
	/* Early in boot the pool may not be ready: a weaker name then only lets someone who guesses
	 * it make the exclusive create fail, never redirect the write. */
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (mono_us() ^ ((uint64_t)getpid() << 40) ^ ++counter) * 0x9e3779b97f4a7c15ull;
	snprintf(out, 17, "%016llx", (unsigned long long)v);
}

const char *file_kind(unsigned mode)
{
	if (S_ISREG(mode))
		return "a regular file";
	if (S_ISLNK(mode))
		return "a symbolic link";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

/* All of data to fd: 0, or -1 with errno. */
static int write_all_fd(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		if (fault("write", fd))
			return -1;
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Split path into its directory (dir, "." or "/") and last name (returned, inside path). */
static const char *split_path(const char *path, struct strbuf *dir)
{
	const char *slash = strrchr(path, '/');
	strbuf_reset(dir);
	if (!slash) {
		strbuf_addch(dir, '.');
		return path;
	}
	if (slash == path)
		strbuf_addch(dir, '/');
	else
		strbuf_add(dir, path, (size_t)(slash - path));
	return slash + 1;
}

int write_file_atomic(const char *path, const void *data, size_t len, unsigned mode,
		      struct strbuf *err)
{
	struct strbuf dir = STRBUF_INIT, tmp = STRBUF_INIT;
	const char *base = split_path(path, &dir);
	int dfd = -1, fd = -1, ret = -1;
	bool created = false;
	struct stat st;
	char rnd[17];
	struct temp_slot *slot = NULL;

	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		error_set(err, "cannot write '%s': not a file name", path);
		goto out;
	}
	dfd = open(dir.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		error_set(err, "cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	/* Replace a regular file or nothing: renaming over /dev/null or a FIFO someone reads would
	 * swap their node for ours. (rename itself never follows a link at the target.) */
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode)) {
			error_set(err, "cannot write '%s': it is %s, not a regular file", path,
				  file_kind(st.st_mode));
			goto out;
		}
	} else if (errno != ENOENT) {
		error_set(err, "cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	for (int tries = 0;; tries++) {
		random_hex16(rnd);
		strbuf_reset(&tmp);
		strbuf_addf(&tmp, "%s.tmp.%s", base, rnd);
		/* noted before it exists: a signal between the create and the note would leave it;
		 * one before the create removes nothing (the name is unguessable and still free) */
		slot = temp_note(dfd, tmp.buf);
		fd = openat(dfd, tmp.buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST || tries == 8)
			break;
		temp_forget(slot); /* someone else's file of that name: never ours to remove */
		slot = NULL;
	}
	if (fd < 0) {
		error_set(err, "cannot write '%s': %s", path, strerror(errno));
		temp_forget(slot);
		slot = NULL;
		goto out;
	}
	created = true;
	if (write_all_fd(fd, data, len) < 0 || fault("fsync", fd) || fsync(fd) < 0) {
		error_set(err, "cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	int c = close(fd);
	fd = -1;
	if (c < 0) {
		error_set(err, "cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	if (fault("rename", dfd) || renameat(dfd, tmp.buf, dfd, base) < 0) {
		error_set(err, "cannot write '%s': %s", path, strerror(errno));
		goto out;
	}
	/* renamed: the name is the kept file's now, never to be removed by a handler */
	temp_forget(slot);
	slot = NULL;
	created = false;
	/* The rename is durable only once the directory is; some filesystems cannot sync one. */
	if ((fault("dirsync", dfd) || fsync(dfd) < 0) && errno != EINVAL) {
		error_set(err, "'%s' written, but its directory could not be synced: %s", path,
			  strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	if (created)
		unlinkat(dfd, tmp.buf, 0);
	temp_forget(slot);
	if (dfd >= 0)
		close(dfd);
	strbuf_release(&dir);
	strbuf_release(&tmp);
	return ret;
}

/* In place, for files that are not kept (test trees, a file that fills a disk): still never
 * through a link and never into a device or FIFO; truncated only once it is known to be ours. */
static int write_in_place(const char *path, const void *data, size_t len, struct strbuf *err)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0) {
		if (errno == ELOOP)
			return error_set(err, "cannot write '%s': it is a symbolic link", path);
		return error_set(err, "cannot write '%s': %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = errno;
		close(fd);
		if (S_ISREG(st.st_mode))
			return error_set(err, "cannot write '%s': %s", path, strerror(e));
		return error_set(err, "cannot write '%s': it is %s, not a regular file", path,
				 file_kind(st.st_mode));
	}
	if (ftruncate(fd, 0) < 0 || write_all_fd(fd, data, len) < 0) {
		int e = errno;
		close(fd);
		return error_set(err, "cannot write '%s': %s", path, strerror(e));
	}
	if (close(fd) < 0)
		return error_set(err, "cannot write '%s': %s", path, strerror(errno));
	return 0;
}

int write_file(const char *path, const void *data, size_t len, bool atomic, struct strbuf *err)
{
	if (atomic)
		return write_file_atomic(path, data, len, 0644, err);
	return write_in_place(path, data, len, err);
}

int mkdir_p(const char *path, unsigned mode, struct strbuf *err)
{
	char *p = xstrdup(path);
	int ret = 0;
	struct stat st;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, mode) < 0 && errno != EEXIST) {
				ret = error_set(err, "cannot create directory '%s': %s", p,
						strerror(errno));
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	/* EEXIST also means a file of that name: the caller wants a directory. */
	if (!ret && stat(path, &st) < 0)
		ret = error_set(err, "cannot create directory '%s': %s", path, strerror(errno));
	else if (!ret && !S_ISDIR(st.st_mode))
		ret = error_set(err, "cannot create directory '%s': it is %s", path,
				file_kind(st.st_mode));
	free(p);
	return ret;
}

int mkdir_state_dir(const char *path, unsigned mode, struct strbuf *err)
{
	struct stat st;
	if (!*path)
		return error_set(err, "a state directory wants a name");
	if (lstat(path, &st) == 0) {
		struct stat target;
		/* a dangling link: making its target would be making it through the link */
		if (S_ISLNK(st.st_mode) && stat(path, &target) < 0)
			return error_set(err, "cannot use state directory '%s': it is a symbolic "
					      "link to nothing (%s)", path, strerror(errno));
		return 0;
	}
	if (errno != ENOENT)
		return error_set(err, "cannot use state directory '%s': %s", path, strerror(errno));
	struct strbuf parent = STRBUF_INIT;
	const char *base = split_path(path, &parent);
	int ret = -1;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		error_set(err, "cannot make state directory '%s': not a directory name", path);
		goto out;
	}
	if (parent.len && mkdir_p(parent.buf, 0755, err) < 0)
		goto out;
	if (mkdir(path, mode) < 0 && errno != EEXIST) {
		error_set(err, "cannot make state directory '%s': %s", path, strerror(errno));
		goto out;
	}
	/* EEXIST: made by another run meanwhile, or planted: the open below says which */
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
			error_set(err, "cannot use state directory '%s': it is %s, not a directory",
				  path, file_kind(st.st_mode));
		else
			error_set(err, "cannot use state directory '%s': %s", path, strerror(e));
		goto out;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid())
		error_set(err, "cannot use state directory '%s': it belongs to uid %u, not to us",
			  path, (unsigned)st.st_uid);
	else
		ret = 0;
	close(fd);
out:
	strbuf_release(&parent);
	return ret;
}

/* ---- beneath a directory fd (fixtures) ---- */

/* Open the directory name (one component) in dfd, making it first if missing. */
static int open_subdir(int dfd, const char *name, const char *shown, unsigned mode,
		       struct strbuf *err)
{
	struct stat st;
	if (!strcmp(name, ".."))
		return error_set(err, "cannot create '%s': '..' leads out of the directory", shown);
	if (mkdirat(dfd, name, mode) < 0 && errno != EEXIST)
		return error_set(err, "cannot create directory '%s': %s", shown, strerror(errno));
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if ((e == ELOOP || e == ENOTDIR) && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return error_set(err, "cannot create directory '%s': %s is there", shown,
					 file_kind(st.st_mode));
		return error_set(err, "cannot open directory '%s': %s", shown, strerror(e));
	}
	/* A directory someone else made in our place could get links planted in it. */
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		close(fd);
		return error_set(err, "cannot use directory '%s': it belongs to uid %u, not to us",
				 shown, (unsigned)st.st_uid);
	}
	return fd;
}

int open_dir_beneath(int dirfd, const char *rel, unsigned mode, struct strbuf *err)
{
	struct strbuf shown = STRBUF_INIT;
	char *copy = xstrdup(rel), *save = NULL;
	int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0) {
		error_set(err, "cannot open directory: %s", strerror(errno));
		goto out;
	}
	for (char *name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		if (!strcmp(name, "."))
			continue;
		if (shown.len)
			strbuf_addch(&shown, '/');
		strbuf_addstr(&shown, name);
		int next = open_subdir(cur, name, shown.buf, mode, err);
		close(cur);
		cur = next;
		if (cur < 0)
			break;
	}
out:
	free(copy);
	strbuf_release(&shown);
	return cur;
}

int create_file_beneath(int dirfd, const char *rel, const void *data, size_t len, unsigned mode,
			struct strbuf *err)
{
	struct strbuf dir = STRBUF_INIT;
	const char *base = split_path(rel, &dir);
	int dfd = -1, fd, ret = -1;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		error_set(err, "cannot create '%s': not a file name", rel);
		goto out;
	}
	dfd = open_dir_beneath(dirfd, dir.buf, 0755, err);
	if (dfd < 0)
		goto out;
	fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		error_set(err, "cannot create '%s': %s", rel,
			  errno == EEXIST ? "something is already there" : strerror(errno));
		goto out;
	}
	int w = write_all_fd(fd, data, len), e = errno;
	if (close(fd) < 0 && !w) {
		w = -1;
		e = errno;
	}
	if (w < 0) {
		error_set(err, "cannot write '%s': %s", rel, strerror(e));
		unlinkat(dfd, base, 0); /* ours: leave no half file */
		goto out;
	}
	ret = 0;
out:
	if (dfd >= 0)
		close(dfd);
	strbuf_release(&dir);
	return ret;
}
