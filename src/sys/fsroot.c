/*
 * fsroot.c: rerootable reads of /sys, /proc, /dev and /etc (see fsroot.h).
 *
 * Under a root every path is resolved inside it, never out of it: a fixture is data from
 * somewhere else (a gathered host, a bug report), and vigil runs as root, so a planted link such
 * as etc/hostname -> /etc/shadow must not make vigil read, and print, this host's files. The
 * kernel does it race-free with openat2(RESOLVE_IN_ROOT); where the kernel lacks openat2 a
 * userspace walker does the same one component at a time on directory fds.
 */
#include "fsroot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

/* <linux/openat2.h> is missing on older build hosts: its struct and the two flags used. */
struct fsroot_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};
#define FSROOT_RESOLVE_NO_MAGICLINKS 0x02
#define FSROOT_RESOLVE_IN_ROOT	     0x10

/* openat2's own limit, and the one the userspace walker keeps. */
#define FSROOT_MAX_LINKS 40

/* How read_file_bounded() opens: O_NONBLOCK so a FIFO without a writer does not hang. */
#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* Whether this kernel has openat2: a property of the kernel, not of a root. -1 not yet known. */
static int have_openat2 = -1;

static const struct fsroot host_value = { NULL, -1, FSROOT_RESOLVER_AUTO };
const struct fsroot *const fsroot_host = &host_value;

int fsroot_init(struct fsroot *r, const char *dir, struct strbuf *err)
{
	r->dir = NULL;
	r->fd = -1;
	r->resolver = FSROOT_RESOLVER_AUTO;
	/* A test (or a person chasing a resolver bug) can run everything through the walker. */
	const char *env = getenv("VIGIL_FSROOT_RESOLVER");
	if (env && !strcmp(env, "userspace"))
		r->resolver = FSROOT_RESOLVER_USERSPACE;
	if (!dir || !*dir || !strcmp(dir, "/"))
		return 0;
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	char *d = xstrndup(dir, n);
	int fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		struct strbuf q = STRBUF_INIT;
		strbuf_add_excerpt(&q, d, 200);
		if (e == ENOTDIR || e == ENOENT)
			error_set(err, "root '%s' is not a directory", q.buf);
		else
			error_set(err, "cannot open root '%s': %s", q.buf, strerror(e));
		strbuf_release(&q);
		free(d);
		return -1;
	}
	r->dir = d;
	r->fd = fd;
	return 0;
}

void fsroot_release(struct fsroot *r)
{
	/* only a root has a descriptor: a zeroed struct (never initialised) releases as the host */
	if (r->dir && r->fd >= 0)
		close(r->fd);
	free(r->dir);
	r->dir = NULL;
	r->fd = -1;
}

const char *fsroot_dir(const struct fsroot *r)
{
	return r->dir ? r->dir : "";
}

bool fsroot_is_host(const struct fsroot *r)
{
	return !r->dir;
}

void fsroot_path(const struct fsroot *r, struct strbuf *out, const char *path)
{
	strbuf_reset(out);
	if (r->dir)
		strbuf_addstr(out, r->dir);
	strbuf_addstr(out, path);
}

/* ---- resolving inside the root ---- */

static int try_openat2(int rootfd, const char *rel, int flags)
{
	struct fsroot_open_how how = {
		.flags = (uint64_t)(unsigned)flags,
		.resolve = FSROOT_RESOLVE_IN_ROOT | FSROOT_RESOLVE_NO_MAGICLINKS,
	};
	for (int tries = 0;; tries++) {
		long fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		/* EAGAIN: a rename raced the walk; the kernel asks to try again. */
		if (fd < 0 && errno == EAGAIN && tries < 8)
			continue;
		return (int)fd;
	}
}

/* A stack of directory fds from the root down: ".." pops, so it can never climb above [0]. */
struct walk {
	int *fd;
	size_t nr, alloc;
};

static void walk_pop_to(struct walk *w, size_t nr)
{
	while (w->nr > nr)
		close(w->fd[--w->nr]);
}

/*
 * The userspace walker: what openat2(RESOLVE_IN_ROOT) does, one component at a time. Every
 * component is opened O_PATH|O_NOFOLLOW relative to the directory fd above it; a link is read
 * and its target spliced in front of what is left (an absolute target restarts at the root).
 * Returns an fd opened with flags, or -1 with errno.
 */
static int walk_open(int rootfd, const char *path, int flags, bool follow_last)
{
	struct walk w = { NULL, 0, 0 };
	struct strbuf rest = STRBUF_INIT;
	char target[PATH_MAX];
	int links = 0, ret = -1, saved = 0;
	size_t pos = 0;

	ALLOC_GROW(w.fd, 1, w.alloc);
	w.fd[w.nr++] = rootfd; /* borrowed: never closed here */
	strbuf_addstr(&rest, path);
	for (;;) {
		while (rest.buf[pos] == '/')
			pos++;
		size_t end = pos;
		while (rest.buf[end] && rest.buf[end] != '/')
			end++;
		size_t next = end;
		while (rest.buf[next] == '/')
			next++;
		bool last = !rest.buf[next];
		int dir = w.fd[w.nr - 1];
		if (end == pos) {
			/* nothing left: the directory reached is the answer */
			ret = openat(dir, ".", flags);
			saved = errno;
			break;
		}
		char name[NAME_MAX + 1];
		if (end - pos > NAME_MAX) {
			saved = ENAMETOOLONG;
			break;
		}
		memcpy(name, rest.buf + pos, end - pos);
		name[end - pos] = '\0';
		if (!strcmp(name, ".") || !strcmp(name, "..")) {
			if (name[1] && w.nr > 1)
				walk_pop_to(&w, w.nr - 1);
			pos = end;
			continue;
		}
		int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			saved = errno;
			break;
		}
		struct stat st;
		if (fstat(fd, &st) < 0) {
			saved = errno;
			close(fd);
			break;
		}
		if (S_ISLNK(st.st_mode) && (follow_last || !last)) {
			ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
			saved = errno;
			close(fd);
			if (n < 0)
				break;
			if (++links > FSROOT_MAX_LINKS) {
				saved = ELOOP;
				break;
			}
			if (n == 0) {
				saved = ENOENT;
				break;
			}
			target[n] = '\0';
			if (target[0] == '/')
				walk_pop_to(&w, 1);
			/* what is left becomes target + "/" + the rest after this component */
			struct strbuf nb = STRBUF_INIT;
			strbuf_add(&nb, target, (size_t)n);
			if (!last) {
				strbuf_addch(&nb, '/');
				strbuf_addstr(&nb, rest.buf + next);
			}
			strbuf_release(&rest);
			rest = nb;
			pos = 0;
			continue;
		}
		if (last) {
			if (flags & O_PATH) {
				/* already the thing itself (a link when not following) */
				if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode)) {
					close(fd);
					saved = ENOTDIR;
					break;
				}
				ret = fd;
				break;
			}
			close(fd);
			/* O_NOFOLLOW: a link swapped in since the check fails (ELOOP), never escapes */
			ret = openat(dir, name, flags | O_NOFOLLOW);
			saved = errno;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			saved = ENOTDIR;
			break;
		}
		ALLOC_GROW(w.fd, w.nr + 1, w.alloc);
		w.fd[w.nr++] = fd;
		pos = end;
	}
	walk_pop_to(&w, 1);
	free(w.fd);
	strbuf_release(&rest);
	if (ret < 0)
		errno = saved;
	return ret;
}

/*
 * Open a host path: on the host as open() does, under a root resolved inside it (links and ".."
 * never leave it, and magic links are not followed). follow_last false opens a final link itself
 * (flags then hold O_PATH). Returns an fd or -1 with errno.
 */
static int root_open(const struct fsroot *r, const char *path, int flags, bool follow_last)
{
	if (!r->dir)
		return open(path, follow_last ? flags : flags | O_NOFOLLOW);
	const char *rel = path;
	while (*rel == '/')
		rel++;
	if (!*rel)
		rel = ".";
	int fd = -1;
	bool walk = r->resolver == FSROOT_RESOLVER_USERSPACE || have_openat2 == 0;
	if (!walk) {
		fd = try_openat2(r->fd, rel, follow_last ? flags : flags | O_NOFOLLOW);
		if (fd < 0 && (errno == ENOSYS || (errno == EPERM && have_openat2 < 0))) {
			/* no openat2 here (an old kernel, or a seccomp filter that denies it) */
			have_openat2 = 0;
			walk = true;
		} else {
			have_openat2 = 1;
		}
	}
	if (walk)
		fd = walk_open(r->fd, rel, flags, follow_last);
	return fd;
}

int fsroot_open(const struct fsroot *r, const char *path, int flags)
{
	return root_open(r, path, flags, true);
}

int fsroot_resolve(const struct fsroot *r, const char *path, struct strbuf *out, struct strbuf *err)
{
	fsroot_path(r, out, path);
	if (!r->dir)
		return 0;
	int fd = root_open(r, path, O_PATH | O_CLOEXEC, true);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return READ_MISSING;
		return error_set(err, "cannot open '%s': %s", out->buf, strerror(errno));
	}
	/* the fd's own name: the path with every link already resolved inside the root */
	char self[64], buf[PATH_MAX];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(self, buf, sizeof(buf) - 1);
	int saved = errno;
	close(fd);
	if (n <= 0 || buf[0] != '/')
		return error_set(err, "cannot resolve '%s': %s", out->buf,
				 n < 0 ? strerror(saved) : "no name");
	buf[n] = '\0';
	strbuf_reset(out);
	strbuf_addstr(out, buf);
	return 0;
}

/* ---- the reads ---- */

int fsroot_read(const struct fsroot *r, const char *path, struct strbuf *sb, size_t cap,
		struct strbuf *err)
{
	if (!r->dir) {
		/* the host: exactly the plain read */
		return read_file_bounded(path, sb, cap, err);
	}
	struct strbuf p = STRBUF_INIT;
	fsroot_path(r, &p, path);
	int ret, fd = root_open(r, path, READ_FLAGS, true);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			ret = READ_MISSING;
		else
			ret = error_set(err, "cannot open '%s': %s", p.buf, strerror(errno));
	} else {
		ret = read_fd_bounded(fd, p.buf, sb, cap, err);
	}
	strbuf_release(&p);
	return ret;
}

int fsroot_read_attr(const struct fsroot *r, const char *path, struct strbuf *out,
		     struct strbuf *err)
{
	strbuf_reset(out);
	int ret = fsroot_read(r, path, out, 4096, err);
	if (ret == READ_TRUNCATED)
		ret = READ_OK;
	if (ret == READ_OK)
		strbuf_trim(out);
	return ret;
}

int fsroot_read_u64(const struct fsroot *root, const char *path, uint64_t *out, struct strbuf *err)
{
	struct strbuf v = STRBUF_INIT;
	int r = fsroot_read_attr(root, path, &v, err);
	if (r == READ_OK && !parse_u64(v.buf, out)) {
		/* quote what the file held, but only a short, harmless excerpt of it */
		struct strbuf ex = STRBUF_INIT;
		strbuf_add_excerpt(&ex, v.buf, 40);
		r = error_set(err, "'%s' holds '%s', not a number", path, ex.buf);
		strbuf_release(&ex);
	}
	strbuf_release(&v);
	return r;
}

bool fsroot_exists(const struct fsroot *r, const char *path)
{
	if (!r->dir)
		return access(path, F_OK) == 0;
	int fd = root_open(r, path, O_PATH | O_CLOEXEC, true);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int fsroot_list(const struct fsroot *root, const char *path, struct strlist *out,
		struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT;
	fsroot_path(root, &p, path);
	DIR *d = NULL;
	int r = 0;
	if (!root->dir) {
		d = opendir(p.buf);
	} else {
		int fd = root_open(root, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK,
				   true);
		if (fd >= 0 && !(d = fdopendir(fd))) {
			int saved = errno;
			close(fd);
			errno = saved;
		}
	}
	if (!d) {
		if (errno == ENOENT || errno == ENOTDIR)
			r = READ_MISSING;
		else
			r = error_set(err, "cannot list '%s': %s", p.buf, strerror(errno));
		goto out;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		strlist_add(out, de->d_name);
	}
	closedir(d);
	strlist_sort(out);
out:
	strbuf_release(&p);
	return r;
}

int fsroot_readlink(const struct fsroot *r, const char *path, struct strbuf *out, bool basename)
{
	char buf[4096];
	ssize_t n;
	strbuf_reset(out);
	if (!r->dir) {
		n = readlink(path, buf, sizeof(buf) - 1);
	} else {
		/* the link itself (its parents resolved inside the root), then its text */
		int fd = root_open(r, path, O_PATH | O_CLOEXEC, false);
		if (fd < 0)
			return errno == ENOENT ? READ_MISSING : -1;
		struct stat st;
		if (fstat(fd, &st) == 0 && !S_ISLNK(st.st_mode)) {
			close(fd);
			return -1; /* not a link: readlink()'s EINVAL */
		}
		n = readlinkat(fd, "", buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n < 0)
		return errno == ENOENT ? READ_MISSING : -1;
	buf[n] = '\0';
	const char *s = buf;
	if (basename) {
		const char *slash = strrchr(buf, '/');
		if (slash)
			s = slash + 1;
	}
	strbuf_addstr(out, s);
	return 0;
}

int fsroot_statvfs(const struct fsroot *root, const char *path, struct statvfs *st,
		   struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT;
	fsroot_path(root, &p, path);
	int r = 0, rc;
	if (!root->dir) {
		rc = statvfs(p.buf, st);
	} else {
		int fd = root_open(root, path, O_PATH | O_CLOEXEC, true);
		rc = fd < 0 ? -1 : fstatvfs(fd, st);
		if (fd >= 0) {
			int saved = errno;
			close(fd);
			errno = saved;
		}
	}
	if (rc < 0) {
		if (errno == ENOENT)
			r = READ_MISSING;
		else
			r = error_set(err, "cannot stat '%s': %s", p.buf, strerror(errno));
	}
	strbuf_release(&p);
	return r;
}

bool fsroot_looks_like_host(const struct fsroot *r, struct strbuf *why)
{
	static const char *const marks[] = { "/sys", "/proc" };
	if (!r->dir)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(marks); i++) {
		int fd = root_open(r, marks[i], O_PATH | O_DIRECTORY | O_CLOEXEC, true);
		if (fd >= 0) {
			close(fd);
			return true;
		}
	}
	/*
	 * dev/kmsg alone is a kernel-log fixture, judged by the kernel check; GATHERED is what
	 * 'vigil gather' writes, even from a host where it found nothing under sys/ to keep.
	 */
	if (fsroot_exists(r, "/dev/kmsg") || fsroot_exists(r, "/GATHERED"))
		return true;
	if (why) {
		strbuf_reset(why);
		strbuf_addch(why, '\'');
		strbuf_add_excerpt(why, r->dir, 200);
		strbuf_addstr(why, "' holds no sys/, proc/ or dev/kmsg: not a host root");
	}
	return false;
}
