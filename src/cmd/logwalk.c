/*
 * logwalk.c: the file walker that 'vigil diagnose logs' and 'vigil diagnose hang' share (see
 * logwalk.h): a FILE, a vigil run attempt directory (rank-N.out, rank-N.err, srun.log), a run
 * directory (its last attempt-N, or all of them), or with plain_dirs a directory of per-host
 * log files. One file is open at a time; a FIFO or device is refused before it is opened, and
 * links inside a directory are not followed.
 */
#include "logwalk.h"
#include "../lib/fileio.h"
#include "../lib/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A regular file at dirfd/name (through a link only when follow: the user's own arguments). */
static void read_file_at(const struct logwalk *lw, int dirfd, const char *name, const char *display,
			 bool follow)
{
	struct strbuf why = STRBUF_INIT;
	struct stat st;
	int fd = -1;
	/* a device is refused before it is opened: opening one can have effects of its own */
	if (fstatat(dirfd, name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode) && !(S_ISLNK(st.st_mode) && follow)) {
		strbuf_addf(&why, "cannot read '%s': it is %s, not a regular file", display,
			    file_kind(st.st_mode));
		goto out;
	}
	fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		if (errno == ELOOP && !follow)
			strbuf_addf(&why, "cannot read '%s': it is a symbolic link (not followed "
					  "inside a run directory)", display);
		else
			strbuf_addf(&why, "cannot read '%s': %s", display, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		strbuf_addf(&why, "cannot read '%s': %s", display, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		strbuf_addf(&why, "cannot read '%s': it is %s, not a regular file", display,
			    file_kind(st.st_mode));
		goto out;
	}
	lw->file(lw->ctx, fd, display);
out:
	if (fd >= 0)
		close(fd);
	if (why.len)
		lw->error(lw->ctx, display, why.buf);
	strbuf_release(&why);
}

struct entry {
	long num; /* rank or attempt number */
	int kind; /* rank file: 0 .out, 1 .err, 2 srun.log */
	char *name;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->kind == 2 || y->kind == 2)
		return x->kind - y->kind;
	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	return x->kind - y->kind;
}

/* "PREFIXN" + suffix exactly, N decimal without sign: N, else -1. */
static long numbered(const char *name, const char *prefix, const char *suffix)
{
	const char *p;
	uint64_t v;
	if (!skip_prefix(name, prefix, &p) || !ends_with(p, suffix))
		return -1;
	size_t n = strlen(p) - strlen(suffix);
	char num[24];
	if (!n || n >= sizeof(num) || p[0] == '+' || p[0] == '-')
		return -1;
	memcpy(num, p, n);
	num[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (num[i] < '0' || num[i] > '9')
			return -1;
	if (!parse_u64(num, &v) || v > 100000000)
		return -1;
	return (long)v;
}

static void free_entries(struct entry *e, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(e[i].name);
	free(e);
}

/*
 * The entries of the directory open on fd that are rank files and srun.log (attempts false) or
 * attempt-N directories (attempts true). fd is borrowed.
 */
static int list_dir(int fd, bool attempts, struct entry **out, size_t *nr, struct strbuf *err,
		    const char *display)
{
	size_t alloc = 0;
	int dup_fd = dup(fd);
	DIR *dir = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	struct dirent *de;
	*out = NULL;
	*nr = 0;
	if (!dir) {
		if (dup_fd >= 0)
			close(dup_fd);
		return error_set(err, "cannot read '%s': %s", display, strerror(errno));
	}
	rewinddir(dir);
	while ((errno = 0, de = readdir(dir))) {
		struct entry e = { -1, 0, NULL };
		if (attempts) {
			e.num = numbered(de->d_name, "attempt-", "");
		} else if (!strcmp(de->d_name, "srun.log")) {
			e.kind = 2;
			e.num = 0;
		} else if ((e.num = numbered(de->d_name, "rank-", ".out")) < 0) {
			e.kind = 1;
			e.num = numbered(de->d_name, "rank-", ".err");
		}
		if (e.num < 0)
			continue;
		e.name = xstrdup(de->d_name);
		ALLOC_GROW(*out, *nr + 1, alloc);
		(*out)[(*nr)++] = e;
	}
	int saved = errno;
	closedir(dir);
	if (saved)
		return error_set(err, "cannot read '%s': %s", display, strerror(saved));
	if (*nr)
		qsort(*out, *nr, sizeof(**out), cmp_entry);
	return 0;
}

static void join(struct strbuf *sb, const char *dir, const char *name)
{
	strbuf_reset(sb);
	strbuf_addstr(sb, dir);
	if (sb->len && sb->buf[sb->len - 1] != '/')
		strbuf_addch(sb, '/');
	strbuf_addstr(sb, name);
}

/* An attempt directory's rank files and srun.log; false when it holds none. */
static bool read_attempt(const struct logwalk *lw, int fd, const char *display)
{
	struct entry *e;
	size_t nr;
	struct strbuf err = STRBUF_INIT, path = STRBUF_INIT;
	if (list_dir(fd, false, &e, &nr, &err, display) < 0) {
		lw->error(lw->ctx, display, err.buf);
		strbuf_release(&err);
		return true;
	}
	for (size_t i = 0; i < nr; i++) {
		join(&path, display, e[i].name);
		read_file_at(lw, fd, e[i].name, path.buf, false);
	}
	free_entries(e, nr);
	strbuf_release(&path);
	strbuf_release(&err);
	return nr > 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* A directory of per-host log files: its *.log, *.out, *.err, *.txt in name order; false
 * when it holds none. */
static bool read_plain(const struct logwalk *lw, int fd, const char *display)
{
	struct entry *e = NULL;
	size_t nr = 0, alloc = 0;
	struct strbuf path = STRBUF_INIT;
	int dup_fd = dup(fd);
	DIR *dir = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	struct dirent *de;
	if (!dir) {
		struct strbuf err = STRBUF_INIT;
		if (dup_fd >= 0)
			close(dup_fd);
		strbuf_addf(&err, "cannot read '%s': %s", display, strerror(errno));
		lw->error(lw->ctx, display, err.buf);
		strbuf_release(&err);
		return true;
	}
	rewinddir(dir);
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.' ||
		    !(ends_with(de->d_name, ".log") || ends_with(de->d_name, ".out") ||
		      ends_with(de->d_name, ".err") || ends_with(de->d_name, ".txt")))
			continue;
		ALLOC_GROW(e, nr + 1, alloc);
		e[nr].num = 0;
		e[nr].kind = 0;
		e[nr++].name = xstrdup(de->d_name);
	}
	closedir(dir);
	if (nr)
		qsort(e, nr, sizeof(*e), cmp_name);
	for (size_t i = 0; i < nr; i++) {
		join(&path, display, e[i].name);
		read_file_at(lw, fd, e[i].name, path.buf, false);
	}
	free_entries(e, nr);
	strbuf_release(&path);
	return nr > 0;
}

static void read_dir(const struct logwalk *lw, const char *path)
{
	struct entry *att;
	size_t nr;
	struct strbuf err = STRBUF_INIT, sub = STRBUF_INIT;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		strbuf_addf(&err, "cannot read '%s': %s", path, strerror(errno));
		lw->error(lw->ctx, path, err.buf);
		goto out;
	}
	if (read_attempt(lw, fd, path))
		goto out;
	if (list_dir(fd, true, &att, &nr, &err, path) < 0) {
		lw->error(lw->ctx, path, err.buf);
		goto out;
	}
	if (!nr && lw->plain_dirs) {
		if (!read_plain(lw, fd, path)) {
			strbuf_addf(&err, "cannot read '%s': no log files in it (rank-N.out, "
					  "rank-N.err, srun.log, attempt-N, *.log, *.out, *.err, *.txt)",
				    path);
			lw->error(lw->ctx, path, err.buf);
		}
		goto out_att;
	}
	if (!nr) {
		strbuf_addf(&err, "cannot read '%s': neither a vigil run attempt (rank-N.out, "
				  "rank-N.err, srun.log) nor a run directory (attempt-N)", path);
		lw->error(lw->ctx, path, err.buf);
	}
	for (size_t i = lw->all ? 0 : (nr ? nr - 1 : 0); i < nr; i++) {
		join(&sub, path, att[i].name);
		int afd = openat(fd, att[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (afd < 0) {
			int e = errno;
			struct stat lst;
			strbuf_reset(&err);
			/* O_NOFOLLOW with O_DIRECTORY says ENOTDIR for a link: "Not a directory"
			 * for what may well point at one misleads; say what it is */
			if ((e == ENOTDIR || e == ELOOP) &&
			    fstatat(fd, att[i].name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(lst.st_mode))
				strbuf_addf(&err, "cannot read '%s': it is a symbolic link (not followed "
						  "inside a run directory)", sub.buf);
			else
				strbuf_addf(&err, "cannot read '%s': %s", sub.buf, strerror(e));
			lw->error(lw->ctx, sub.buf, err.buf);
			continue;
		}
		if (!read_attempt(lw, afd, sub.buf)) {
			strbuf_reset(&err);
			strbuf_addf(&err, "cannot read '%s': no rank files in it", sub.buf);
			lw->error(lw->ctx, sub.buf, err.buf);
		}
		close(afd);
	}
out_att:
	free_entries(att, nr);
out:
	if (fd >= 0)
		close(fd);
	strbuf_release(&err);
	strbuf_release(&sub);
}

void logwalk_arg(const struct logwalk *lw, const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		read_dir(lw, path);
	else
		read_file_at(lw, AT_FDCWD, path, path, true);
}

