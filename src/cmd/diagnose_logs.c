/*
 * diagnose_logs.c: 'vigil diagnose logs FILE|DIR...', the logs of a dead or sick run read for
 * known error lines and their first cause (src/diagnose/logs.h does the judging). This file
 * finds and opens the files (vigil run's attempt and run directories included), streams them
 * through in chunks, and prints. One file is open at a time, so thousands of rank files need
 * no more descriptors than one; a FIFO or device is refused, never waited on.
 */
#include "cmd.h"
#include "diagnose.h"
#include "../diagnose/logs.h"
#include "../lib/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)

static const char logs_usage[] =
	"usage: vigil diagnose logs [--json] [--all] FILE|DIR...\n"
	"\n"
	"The logs of a dead or sick run (trainer stderr of every rank, kernel logs, NCCL and\n"
	"Slurm lines) read for known error lines: CUDA and host out of memory, NCCL errors and\n"
	"timeouts, Xid/SXid, illegal memory access, segfaults, FSDP's 'Forward order differs',\n"
	"storage errors and failed checkpoint writes. They are grouped by cause with the hosts\n"
	"and ranks they came from, and the first error in time is named as the likely root, not\n"
	"the cascade after it (a rank's NCCL timeout after another rank's CUDA OOM is a victim).\n"
	"\n"
	"A DIR is a 'vigil run' attempt (its rank-N.out, rank-N.err and srun.log) or a run\n"
	"directory (its last attempt-N). Files are read as streams of any size.\n"
	"\n"
	"  --all    every attempt of a run directory, not only the last\n"
	"  --json   one JSON object: root, findings, files, unknown_times\n"
	"\n"
	"Exit status: 0 no known error line, 1 errors found, 2 usage error, 3 a file could not\n"
	"be read (and nothing was found in the others).\n";

struct logs_run {
	struct dlog d;
	char *buf;
	bool all;
};

static void read_open_fd(struct logs_run *lr, int fd, const char *display)
{
	char host[DLOG_HOST_MAX];
	long rank;
	struct strbuf why = STRBUF_INIT;
	dlog_name_origin(display, host, &rank);
	dlog_file_begin(&lr->d, display, host, rank);
	for (;;) {
		ssize_t n = read(fd, lr->buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			strbuf_addf(&why, "cannot read '%s': %s", display, strerror(errno));
			break;
		}
		if (!n)
			break;
		dlog_feed(&lr->d, lr->buf, (size_t)n);
	}
	dlog_file_end(&lr->d, why.len ? why.buf : NULL);
	strbuf_release(&why);
}

/* A regular file at dirfd/name (through a link only when follow: the user's own arguments). */
static void read_file_at(struct logs_run *lr, int dirfd, const char *name, const char *display,
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
	read_open_fd(lr, fd, display);
out:
	if (fd >= 0)
		close(fd);
	if (why.len)
		dlog_file_error(&lr->d, display, why.buf);
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
static bool read_attempt(struct logs_run *lr, int fd, const char *display)
{
	struct entry *e;
	size_t nr;
	struct strbuf err = STRBUF_INIT, path = STRBUF_INIT;
	if (list_dir(fd, false, &e, &nr, &err, display) < 0) {
		dlog_file_error(&lr->d, display, err.buf);
		strbuf_release(&err);
		return true;
	}
	for (size_t i = 0; i < nr; i++) {
		join(&path, display, e[i].name);
		read_file_at(lr, fd, e[i].name, path.buf, false);
	}
	free_entries(e, nr);
	strbuf_release(&path);
	strbuf_release(&err);
	return nr > 0;
}

static void read_dir(struct logs_run *lr, const char *path)
{
	struct entry *att;
	size_t nr;
	struct strbuf err = STRBUF_INIT, sub = STRBUF_INIT;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		strbuf_addf(&err, "cannot read '%s': %s", path, strerror(errno));
		dlog_file_error(&lr->d, path, err.buf);
		goto out;
	}
	if (read_attempt(lr, fd, path))
		goto out;
	if (list_dir(fd, true, &att, &nr, &err, path) < 0) {
		dlog_file_error(&lr->d, path, err.buf);
		goto out;
	}
	if (!nr) {
		strbuf_addf(&err, "cannot read '%s': neither a vigil run attempt (rank-N.out, "
				  "rank-N.err, srun.log) nor a run directory (attempt-N)", path);
		dlog_file_error(&lr->d, path, err.buf);
	}
	for (size_t i = lr->all ? 0 : (nr ? nr - 1 : 0); i < nr; i++) {
		join(&sub, path, att[i].name);
		int afd = openat(fd, att[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (afd < 0) {
			strbuf_reset(&err);
			strbuf_addf(&err, "cannot read '%s': %s", sub.buf, strerror(errno));
			dlog_file_error(&lr->d, sub.buf, err.buf);
			continue;
		}
		if (!read_attempt(lr, afd, sub.buf)) {
			strbuf_reset(&err);
			strbuf_addf(&err, "cannot read '%s': no rank files in it", sub.buf);
			dlog_file_error(&lr->d, sub.buf, err.buf);
		}
		close(afd);
	}
	free_entries(att, nr);
out:
	if (fd >= 0)
		close(fd);
	strbuf_release(&err);
	strbuf_release(&sub);
}

static void read_arg(struct logs_run *lr, const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		read_dir(lr, path);
	else
		read_file_at(lr, AT_FDCWD, path, path, true);
}

int diag_logs_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct logs_run lr = { .all = false };
	struct strbuf out = STRBUF_INIT;
	bool json = false;
	int c, ret = EXIT_USAGE;

	dlog_init(&lr.d);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'a': lr.all = true; break;
		case 'h':
			fputs(logs_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		default:
			usage_error("diagnose logs", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (optind >= argc) {
		usage_error("diagnose logs", "which logs? name at least one FILE or DIR");
		goto out;
	}
	lr.buf = xmalloc(READ_CHUNK);
	for (int i = optind; i < argc; i++)
		read_arg(&lr, argv[i]);
	dlog_finish(&lr.d);
	if (json)
		dlog_write_json(&lr.d, &out);
	else
		dlog_write_text(&lr.d, &out);
	fwrite(out.buf, 1, out.len, stdout);
	if (lr.d.nr)
		ret = EXIT_UNHEALTHY;
	else if (dlog_unreadable(&lr.d))
		ret = EXIT_UNKNOWN;
	else
		ret = EXIT_HEALTHY;
out:
	free(lr.buf);
	dlog_release(&lr.d);
	strbuf_release(&out);
	return ret;
}
