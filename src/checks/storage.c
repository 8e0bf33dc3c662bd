/*
 * storage.c: the 'storage' check. A training job dies when its checkpoint directory fills up,
 * and hangs when a network filesystem stops answering; this check looks for both before the job
 * starts:
 *
 *   - space and inodes of "/" (or storage.mount), of every probe directory's mount and of every
 *     required mount: fail at storage.usage-threshold (95 %), warn 5 points below;
 *   - storage.require: mount points that must be in /proc/mounts;
 *   - storage.probe: write, fsync, drop from the page cache, read back and compare a file in each
 *     directory, in a child process under storage.probe-timeout, so a hung filesystem is reported
 *     by name ("probe of /data timed out after 5 s") instead of hanging the check.
 *
 * statvfs() also runs in a child under the same deadline: on a hung NFS mount it blocks too.
 */
#include "storage.h"
#include "../lib/fileio.h"
#include "../lib/run.h"
#include "../sys/fsroot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#define PROBE_PREFIX ".vigil-probe"

/* ---- paths, /proc/mounts and fs.snapshot ---- */

void storage_unescape(char *s)
{
	char *w = s;
	for (const char *p = s; *p;) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*w++ = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
			p += 4;
		} else {
			*w++ = *p++;
		}
	}
	*w = '\0';
}

static void escape_path(struct strbuf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\')
			strbuf_addf(out, "\\%03o", (unsigned char)*s);
		else
			strbuf_addch(out, *s);
	}
}

void storage_parse_mounts(struct storage_readings *r, const char *text)
{
	struct strlist lines = STRLIST_INIT;
	strlist_split(&lines, text, "\n");
	for (size_t i = 0; i < lines.nr; i++) {
		struct strlist f = STRLIST_INIT;
		strlist_split(&f, lines.items[i], " \t");
		if (f.nr >= 3 && f.items[1][0] == '/') {
			ALLOC_GROW(r->mounts, r->nr_mounts + 1, r->alloc_mounts);
			struct mount_entry *m = &r->mounts[r->nr_mounts++];
			for (int k = 0; k < 3; k++)
				storage_unescape(f.items[k]);
			m->source = xstrdup(f.items[0]);
			m->target = xstrdup(f.items[1]);
			m->fstype = xstrdup(f.items[2]);
		}
		strlist_release(&f);
	}
	strlist_release(&lines);
}

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (!strcmp(dir, "/"))
		return path[0] == '/';
	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

const char *storage_mount_of(const struct storage_readings *r, const char *path)
{
	const char *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i < r->nr_mounts; i++) {
		const char *t = r->mounts[i].target;
		size_t n = strlen(t);
		if (path_under(path, t) && (!best || n >= best_len)) {
			best = t;
			best_len = n;
		}
	}
	return best ? best : path;
}

static bool mounted(const struct storage_readings *r, const char *path)
{
	for (size_t i = 0; i < r->nr_mounts; i++)
		if (!strcmp(r->mounts[i].target, path))
			return true;
	return false;
}

/* One line of numbers: "PATH total free avail itotal ifree" or (from the child) "PATH error TEXT"
 * or "PATH missing". Returns true when the line is about path. */
static bool parse_numbers_line(const char *line, const char *path, struct fs_numbers *n)
{
	struct strlist f = STRLIST_INIT;
	bool found = false;
	strlist_split(&f, line, " \t");
	if (!f.nr || f.items[0][0] == '#')
		goto out;
	storage_unescape(f.items[0]);
	if (strcmp(f.items[0], path))
		goto out;
	memset(n, 0, sizeof(*n));
	found = true;
	if (f.nr >= 2 && !strcmp(f.items[1], "missing")) {
		n->missing = true;
	} else if (f.nr >= 2 && !strcmp(f.items[1], "error")) {
		const char *rest = strstr(line, " error ");
		snprintf(n->error, sizeof(n->error), "%s", rest ? rest + 7 : "unknown error");
	} else if (f.nr >= 6 && parse_u64(f.items[1], &n->total) && parse_u64(f.items[2], &n->free) &&
		   parse_u64(f.items[3], &n->avail) && parse_u64(f.items[4], &n->itotal) &&
		   parse_u64(f.items[5], &n->ifree)) {
		n->ok = true;
	} else {
		snprintf(n->error, sizeof(n->error), "bad numbers line '%.100s'", line);
	}
out:
	strlist_release(&f);
	return found;
}

bool storage_snapshot_lookup(const char *text, const char *path, struct fs_numbers *n)
{
	struct strlist lines = STRLIST_INIT;
	bool found = false;
	strlist_split(&lines, text, "\n");
	for (size_t i = 0; i < lines.nr && !found; i++)
		found = parse_numbers_line(lines.items[i], path, n);
	strlist_release(&lines);
	return found;
}

/* ---- child processes: statvfs and the probe ---- */

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* In the child: one numbers line per path, written as soon as it is known, so that when a
 * statvfs hangs the parent knows which one. */
struct statvfs_job {
	const struct fsroot *root;
	const struct strlist *paths;
};

static int statvfs_child(void *arg, int fd)
{
	const struct statvfs_job *job = arg;
	const struct strlist *paths = job->paths;
	struct strbuf line = STRBUF_INIT, err = STRBUF_INIT;
	for (size_t i = 0; i < paths->nr; i++) {
		struct statvfs st;
		strbuf_reset(&line);
		escape_path(&line, paths->items[i]);
		int r = fsroot_statvfs(job->root, paths->items[i], &st, &err);
		if (r == READ_MISSING)
			strbuf_addstr(&line, " missing\n");
		else if (r < 0)
			strbuf_addf(&line, " error %s\n", err.buf);
		else
			strbuf_addf(&line, " %llu %llu %llu %llu %llu\n",
				    (unsigned long long)st.f_blocks * st.f_frsize,
				    (unsigned long long)st.f_bfree * st.f_frsize,
				    (unsigned long long)st.f_bavail * st.f_frsize,
				    (unsigned long long)st.f_files, (unsigned long long)st.f_ffree);
		if (write_all(fd, line.buf, line.len) < 0)
			return 1;
	}
	return 0;
}

/* statvfs every path in a child under timeout_ms. Fills n[i]. */
static void statvfs_run(const struct fsroot *root, const struct strlist *paths,
			struct fs_numbers *n, unsigned timeout_ms)
{
	struct statvfs_job job = { root, paths };
	struct child c;
	struct strbuf err = STRBUF_INIT;
	struct strlist lines = STRLIST_INIT;
	child_init(&c);
	c.fn = statvfs_child;
	c.fn_arg = &job;
	c.timeout_ms = timeout_ms;
	if (child_run(&c, &err) < 0) {
		for (size_t i = 0; i < paths->nr; i++)
			snprintf(n[i].error, sizeof(n[i].error), "%s", err.buf);
		goto out;
	}
	strlist_split(&lines, c.out.buf, "\n");
	bool hung_seen = false;
	for (size_t i = 0; i < paths->nr; i++) {
		bool found = false;
		for (size_t k = 0; k < lines.nr && !found; k++)
			found = parse_numbers_line(lines.items[k], paths->items[i], &n[i]);
		if (found)
			continue;
		memset(&n[i], 0, sizeof(n[i]));
		if (c.timed_out && !hung_seen) {
			n[i].timed_out = true;
			hung_seen = true;
		} else if (c.timed_out) {
			n[i].not_reached = true;
		} else {
			struct strbuf how = STRBUF_INIT;
			child_describe(&c, &how);
			snprintf(n[i].error, sizeof(n[i].error), "statvfs helper %s", how.buf);
			strbuf_release(&how);
		}
	}
out:
	strlist_release(&lines);
	child_release(&c);
	strbuf_release(&err);
}

struct probe_job {
	const char *dir;  /* the real directory (root applied) */
	const char *file; /* fixed file name, or NULL for a fresh one */
	uint64_t size;
};

static int probe_report(int fd, const char *fmt, ...) PRINTF_LIKE(2, 3);
static int probe_report(int fd, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	int r = write_all(fd, sb.buf, sb.len);
	strbuf_release(&sb);
	return r < 0 ? 1 : 0;
}

/*
 * In the child: write, fsync, drop the cached pages, read back, compare, unlink. Its one line of
 * output says how it went ("ok BYTES WRITE_US FSYNC_US READ_US", "error STEP ERRNO",
 * "mismatch OFFSET"). The file is ours alone: a fresh name no one can guess, created with
 * O_EXCL | O_NOFOLLOW in a directory others may write to, and read back through the same fd, so
 * a link or file planted there is never written, read or truncated; it is removed after.
 */
static int probe_child(void *arg, int out)
{
	const struct probe_job *job = arg;
	struct strbuf path = STRBUF_INIT;
	uint64_t seed = ((uint64_t)getpid() << 32) ^ mono_us(), t0, t1, t2, t3;
	size_t size = (size_t)job->size;
	unsigned char *buf = xmalloc(size), *back = xmalloc(size);
	const char *step = "open";
	int fd = -1, e = 0, ret;
	bool created = false;
	char rnd[17];
	for (size_t i = 0; i < size; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		buf[i] = (unsigned char)seed;
	}
	t0 = mono_us();
	if (job->file) {
		/* The test seam: open what the test made (a FIFO, so that the open blocks as on a
		 * hung filesystem), never create, truncate or follow; if it opens, it is not ours. */
		strbuf_addf(&path, "%s/%s", job->dir, job->file);
		fd = open(path.buf, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			errno = EEXIST;
		goto fail;
	}
	random_hex16(rnd);
	strbuf_addf(&path, "%s/" PROBE_PREFIX ".%s", job->dir, rnd);
	fd = open(path.buf, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	created = true;
	step = "write";
	for (size_t off = 0; off < size;) {
		ssize_t w = write(fd, buf + off, size - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			goto fail;
		}
		off += (size_t)w;
	}
	t1 = mono_us();
	step = "fsync";
	if (fsync(fd) < 0)
		goto fail;
	t2 = mono_us();
	/* read from the device, not from the page cache we just filled */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	step = "read";
	size_t got = 0;
	while (got < size) {
		ssize_t n = pread(fd, back + got, size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	t3 = mono_us();
	step = "close";
	int c = close(fd);
	fd = -1;
	if (c < 0)
		goto fail;
	step = "unlink";
	if (unlink(path.buf) < 0)
		goto fail;
	created = false;
	for (size_t i = 0; i < size; i++) {
		if (i >= got || back[i] != buf[i]) {
			ret = probe_report(out, "mismatch %zu\n", i);
			goto out;
		}
	}
	ret = probe_report(out, "ok %zu %llu %llu %llu\n", size, (unsigned long long)(t1 - t0),
			   (unsigned long long)(t2 - t1), (unsigned long long)(t3 - t2));
	goto out;
fail:
	e = errno;
	ret = probe_report(out, "error %s %d\n", step, e);
out:
	if (fd >= 0)
		close(fd);
	if (created)
		unlink(path.buf);
	free(buf);
	free(back);
	strbuf_release(&path);
	return ret;
}

static void probe_run(const struct fsroot *root, struct storage_probe *p,
		      const struct storage_options *opt, unsigned timeout_ms)
{
	struct strbuf dir = STRBUF_INIT, err = STRBUF_INIT;
	struct child c;
	struct probe_job job;
	/*
	 * The probe writes and unlinks a file there: under a root the directory is resolved inside
	 * it, so a planted data -> /etc never makes vigil write in this host's /etc. Missing there
	 * is what the probe would say (ENOENT): ROOT + path may itself lead out through the link.
	 * On the host the path is as given.
	 */
	int rr = fsroot_resolve(root, p->path, &dir, &err);
	if (rr != READ_OK) {
		p->outcome = rr == READ_MISSING ? PROBE_ERROR : PROBE_NOT_RUN;
		strlcpy_v(p->step, "open", sizeof(p->step));
		p->err_no = ENOENT;
		snprintf(p->error, sizeof(p->error), "%s", err.buf);
		strbuf_release(&dir);
		strbuf_release(&err);
		return;
	}
	job.dir = dir.buf;
	job.file = opt->probe_file;
	job.size = opt->probe_size;
	child_init(&c);
	c.fn = probe_child;
	c.fn_arg = &job;
	c.timeout_ms = timeout_ms;
	p->timeout_ms = timeout_ms;
	if (child_run(&c, &err) < 0) {
		p->outcome = PROBE_NOT_RUN;
		snprintf(p->error, sizeof(p->error), "%s", err.buf);
		goto out;
	}
	p->total_ms = (double)c.duration_ms;
	char step[16];
	unsigned long long a, b, d, e;
	int en;
	if (c.timed_out) {
		p->outcome = PROBE_TIMEOUT;
	} else if (sscanf(c.out.buf, "ok %llu %llu %llu %llu", &a, &b, &d, &e) == 4) {
		p->outcome = PROBE_OK;
		p->bytes = a;
		p->write_ms = (double)b / 1000;
		p->fsync_ms = (double)d / 1000;
		p->read_ms = (double)e / 1000;
	} else if (sscanf(c.out.buf, "error %15s %d", step, &en) == 2) {
		p->outcome = PROBE_ERROR;
		strlcpy_v(p->step, step, sizeof(p->step));
		p->err_no = en;
	} else if (sscanf(c.out.buf, "mismatch %llu", &a) == 1) {
		p->outcome = PROBE_MISMATCH;
		p->bytes = a; /* the first offset that differs */
	} else {
		struct strbuf how = STRBUF_INIT;
		child_describe(&c, &how);
		p->outcome = PROBE_NOT_RUN;
		snprintf(p->error, sizeof(p->error), "the probe %s without a result", how.buf);
		strbuf_release(&how);
	}
out:
	child_release(&c);
	strbuf_release(&dir);
	strbuf_release(&err);
}

/* ---- gather ---- */

static void add_fs(struct storage_readings *r, const char *path)
{
	for (size_t i = 0; i < r->nr_fs; i++)
		if (!strcmp(r->fs[i].path, path))
			return;
	ALLOC_GROW(r->fs, r->nr_fs + 1, r->alloc_fs);
	memset(&r->fs[r->nr_fs], 0, sizeof(r->fs[0]));
	r->fs[r->nr_fs++].path = xstrdup(path);
}

/* The paths whose numbers matter, in a stable order. */
static void choose_fs(struct storage_readings *r, const struct storage_options *opt)
{
	if (!opt->mounts.nr)
		add_fs(r, "/");
	for (size_t i = 0; i < opt->mounts.nr; i++)
		add_fs(r, opt->mounts.items[i]);
	for (size_t i = 0; i < opt->probes.nr; i++)
		add_fs(r, storage_mount_of(r, opt->probes.items[i]));
	for (size_t i = 0; i < opt->require.nr; i++)
		if (mounted(r, opt->require.items[i]))
			add_fs(r, opt->require.items[i]);
}

static unsigned time_left(uint64_t deadline)
{
	uint64_t now = mono_ms();
	return now >= deadline ? 0 : (unsigned)(deadline - now);
}

int storage_gather(const struct check_ctx *ctx, const struct storage_options *opt,
		   struct storage_readings *r, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, snap = STRBUF_INIT;
	uint64_t deadline = mono_ms() + opt->budget_ms;
	int mr = fsroot_read(ctx->root, "/proc/mounts", &text, 4u << 20, err);
	if (mr < 0) {
		strbuf_release(&text);
		return -1;
	}
	if (mr == READ_OK || mr == READ_TRUNCATED) {
		r->mounts_read = true;
		storage_parse_mounts(r, text.buf);
	}
	choose_fs(r, opt);

	if (!fsroot_is_host(ctx->root)) {
		/* inside the root: a planted fs.snapshot -> /etc/shadow reads DIR/etc/shadow */
		strbuf_reset(&text);
		int sr = fsroot_read(ctx->root, "/" STORAGE_SNAPSHOT_FILE, &text, 4u << 20, err);
		if (sr < 0)
			goto fail;
		r->from_snapshot = sr == READ_OK || sr == READ_TRUNCATED;
		/* Nothing of a host's disks under the root (a fixture of other parts): statvfs
		 * there would measure the disk the directory lies on, which is no evidence. */
		r->no_numbers = !r->from_snapshot && !r->mounts_read;
	}
	if (r->no_numbers) {
		/* not measured: storage_evaluate() says so */
	} else if (r->from_snapshot) {
		for (size_t i = 0; i < r->nr_fs; i++)
			if (!storage_snapshot_lookup(text.buf, r->fs[i].path, &r->fs[i].n))
				r->fs[i].n.not_in_snapshot = true;
	} else if (r->nr_fs) {
		struct strlist paths = STRLIST_INIT;
		struct fs_numbers *n = xcalloc(r->nr_fs, sizeof(*n));
		for (size_t i = 0; i < r->nr_fs; i++)
			strlist_add(&paths, r->fs[i].path);
		unsigned t = time_left(deadline);
		if (!t)
			t = 1; /* 0 would mean no deadline */
		statvfs_run(ctx->root, &paths, n,
			    t < opt->probe_timeout_ms ? t : opt->probe_timeout_ms);
		for (size_t i = 0; i < r->nr_fs; i++)
			r->fs[i].n = n[i];
		free(n);
		strlist_release(&paths);
	}

	for (size_t i = 0; i < opt->probes.nr; i++) {
		ALLOC_GROW(r->probes, r->nr_probes + 1, r->alloc_probes);
		struct storage_probe *p = &r->probes[r->nr_probes++];
		memset(p, 0, sizeof(*p));
		p->path = xstrdup(opt->probes.items[i]);
		unsigned t = time_left(deadline);
		if (t < 200) {
			p->outcome = PROBE_NOT_RUN;
			snprintf(p->error, sizeof(p->error),
				 "not run: the check's time ran out (raise storage.timeout)");
			continue;
		}
		probe_run(ctx->root, p, opt, t < opt->probe_timeout_ms ? t : opt->probe_timeout_ms);
	}
	strbuf_release(&text);
	strbuf_release(&snap);
	return 0;
fail:
	strbuf_release(&text);
	strbuf_release(&snap);
	return -1;
}

/* ---- evaluate ---- */

static void fmt_bytes(char *buf, size_t n, uint64_t v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double d = (double)v;
	size_t u = 0;
	while (d >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		d /= 1024;
		u++;
	}
	if (u == 0 || d >= 10)
		snprintf(buf, n, "%.0f %s", d, units[u]);
	else
		snprintf(buf, n, "%.1f %s", d, units[u]);
}

static enum action errno_action(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
		return ACTION_FREE_DISK;
	case EACCES:
	case EPERM:
		return ACTION_FIX_CONFIG;
	case ENOENT:
	case ENOTDIR:
	case ESTALE:
		return ACTION_INVESTIGATE;
	default: /* EIO, EROFS (remounted read-only after errors), ... */
		return ACTION_INSPECT_HARDWARE;
	}
}

/* Space and inodes of one filesystem. Returns true when something was reported. */
static bool eval_fs(const struct storage_fs *fs, const struct storage_options *opt,
		    const char *hung, struct check_result *res)
{
	const struct fs_numbers *n = &fs->n;
	const char *p = fs->path;
	struct finding *f;
	if (n->timed_out) {
		result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "statfs", p,
			   "statfs of %s timed out after %g s: the filesystem hangs", p,
			   opt->probe_timeout_ms / 1000.0);
		return true;
	}
	if (n->not_reached) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "statfs", p,
			   "%s not looked at: statfs of %s hung first", p, hung ? hung : "a mount");
		return true;
	}
	if (n->not_in_snapshot) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "statfs", p,
			   "no numbers for %s in " STORAGE_SNAPSHOT_FILE, p);
		return true;
	}
	if (n->missing) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "statfs", p, "%s does not exist", p);
		return true;
	}
	if (!n->ok) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "statfs", p, "cannot statfs %s: %s", p,
			   n->error);
		return true;
	}
	if (!n->total || n->free > n->total || n->avail > n->total || n->avail > n->free ||
	    (n->itotal && n->ifree > n->itotal)) {
		/* a dead FUSE daemon or a stale network mount answers statfs with zeros or with
		 * numbers no filesystem has: nothing about its space can be told from them */
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "statfs", p,
			       "statfs of %s gives numbers no filesystem has (%s): its space "
			       "cannot be told (a dead FUSE or network mount?)",
			       p,
			       !n->total		 ? "a size of 0 blocks"
			       : n->free > n->total	 ? "more free than its size"
			       : n->avail > n->total	 ? "more available than its size"
			       : n->avail > n->free	 ? "more available than free"
						 : "more free inodes than inodes");
		finding_detail_num(f, "total_bytes", (double)n->total);
		finding_detail_num(f, "free_bytes", (double)n->free);
		finding_detail_num(f, "avail_bytes", (double)n->avail);
		finding_detail_num(f, "inodes", (double)n->itotal);
		finding_detail_num(f, "inodes_free", (double)n->ifree);
		return true;
	}
	bool bad = false;
	uint64_t used = n->total - n->free;
	if (n->total && used + n->avail) {
		double pct = 100.0 * (double)used / (double)(used + n->avail);
		if (pct >= opt->threshold - 5) {
			char fr[32], tot[32];
			fmt_bytes(fr, sizeof(fr), n->avail);
			fmt_bytes(tot, sizeof(tot), n->total);
			f = result_add(res, pct >= opt->threshold ? STATUS_FAIL : STATUS_WARN,
				       ACTION_FREE_DISK, "usage", p, "%s is %.1f %% full (%s free of %s)",
				       p, floor(pct * 10) / 10, fr, tot);
			finding_detail_num(f, "used_percent", floor(pct * 10) / 10);
			finding_detail_num(f, "avail_bytes", (double)n->avail);
			finding_detail_num(f, "total_bytes", (double)n->total);
			finding_detail_num(f, "threshold_percent", opt->threshold);
			bad = true;
		}
	}
	if (n->itotal) {
		uint64_t iused = n->itotal >= n->ifree ? n->itotal - n->ifree : 0;
		double pct = 100.0 * (double)iused / (double)n->itotal;
		if (pct >= opt->threshold - 5) {
			f = result_add(res, pct >= opt->threshold ? STATUS_FAIL : STATUS_WARN,
				       ACTION_FREE_DISK, "inodes", p,
				       "%s has used %.1f %% of its inodes (%llu free)", p,
				       floor(pct * 10) / 10, (unsigned long long)n->ifree);
			finding_detail_num(f, "inodes_used_percent", floor(pct * 10) / 10);
			finding_detail_num(f, "inodes_free", (double)n->ifree);
			bad = true;
		}
	}
	return bad;
}

static void eval_probe(const struct storage_probe *p, const struct storage_options *opt,
		       struct check_result *res)
{
	struct finding *f;
	char sz[32];
	switch (p->outcome) {
	case PROBE_OK:
		fmt_bytes(sz, sizeof(sz), p->bytes);
		f = result_add(res, STATUS_OK, ACTION_NONE, "probe", p->path,
			       "probe of %s: %s written, synced and read back in %.0f ms", p->path,
			       sz, p->write_ms + p->fsync_ms + p->read_ms);
		finding_detail_num(f, "write_ms", p->write_ms);
		finding_detail_num(f, "fsync_ms", p->fsync_ms);
		finding_detail_num(f, "read_ms", p->read_ms);
		finding_detail_num(f, "total_ms", p->total_ms);
		finding_detail_num(f, "bytes", (double)p->bytes);
		break;
	case PROBE_TIMEOUT:
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "probe", p->path,
			       "probe of %s timed out after %g s: the filesystem hangs", p->path,
			       p->timeout_ms / 1000.0);
		finding_detail_num(f, "timeout_ms", p->timeout_ms);
		break;
	case PROBE_ERROR:
		f = result_add(res, STATUS_FAIL, errno_action(p->err_no), "probe", p->path,
			       "probe of %s failed at %s: %s", p->path, p->step,
			       strerror(p->err_no));
		finding_detail(f, "step", "%s", p->step);
		finding_detail_num(f, "errno", p->err_no);
		break;
	case PROBE_MISMATCH:
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "probe", p->path,
			       "probe of %s read back other data than it wrote (from byte %llu)",
			       p->path, (unsigned long long)p->bytes);
		break;
	case PROBE_NOT_RUN:
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "probe", p->path, "probe of %s: %s",
			   p->path, p->error);
		break;
	}
	UNUSED(opt);
}

void storage_evaluate(const struct storage_readings *r, const struct storage_options *opt,
		      struct check_result *res)
{
	size_t bad = 0;
	const char *hung = NULL;
	struct strbuf good = STRBUF_INIT;
	for (size_t i = 0; i < opt->require.nr; i++) {
		const char *p = opt->require.items[i];
		if (!r->mounts_read) {
			result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "mount_missing", p,
				   "cannot tell whether %s is mounted: no /proc/mounts", p);
		} else if (!mounted(r, p)) {
			struct finding *f = result_add(res, STATUS_FAIL, ACTION_INVESTIGATE,
						       "mount_missing", p, "mount %s missing", p);
			finding_detail_num(f, "mounts", (double)r->nr_mounts);
		}
	}
	if (r->no_numbers) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_numbers", "",
			   "no /proc/mounts or " STORAGE_SNAPSHOT_FILE " under the root: its disks "
			   "cannot be judged (statvfs there measures the disk the directory lies on)");
		goto probes;
	}
	for (size_t i = 0; i < r->nr_fs; i++)
		if (r->fs[i].n.timed_out)
			hung = r->fs[i].path;
	for (size_t i = 0; i < r->nr_fs; i++) {
		if (eval_fs(&r->fs[i], opt, hung, res)) {
			bad++;
		} else {
			if (good.len)
				strbuf_addstr(&good, ", ");
			strbuf_addstr(&good, r->fs[i].path);
		}
	}
	struct finding *f;
	if (!bad)
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu mount%s below %g %% full: %s", r->nr_fs, r->nr_fs == 1 ? "" : "s",
			       opt->threshold - 5, good.buf);
	else if (bad < r->nr_fs)
		f = result_add(res, STATUS_OK, ACTION_NONE, "summary", "",
			       "%zu of %zu mounts without problems: %s", r->nr_fs - bad, r->nr_fs,
			       good.buf);
	else
		f = NULL;
	if (f)
		finding_detail(f, "numbers_from", "%s",
		       r->from_snapshot ? STORAGE_SNAPSHOT_FILE : "statvfs");
	if (f && opt->require.nr)
		finding_detail_num(f, "required_mounts", (double)opt->require.nr);
probes:
	for (size_t i = 0; i < r->nr_probes; i++)
		eval_probe(&r->probes[i], opt, res);
	strbuf_release(&good);
}

void storage_readings_release(struct storage_readings *r)
{
	for (size_t i = 0; i < r->nr_mounts; i++) {
		free(r->mounts[i].source);
		free(r->mounts[i].target);
		free(r->mounts[i].fstype);
	}
	for (size_t i = 0; i < r->nr_fs; i++)
		free(r->fs[i].path);
	for (size_t i = 0; i < r->nr_probes; i++)
		free(r->probes[i].path);
	free(r->mounts);
	free(r->fs);
	free(r->probes);
	memset(r, 0, sizeof(*r));
}

/* ---- options ---- */

static int load_paths(const struct config *cfg, const char *key, struct strlist *out,
		      struct strbuf *err)
{
	const char **vals;
	size_t n = config_get_all(cfg, "storage", key, &vals);
	int ret = 0;
	for (size_t i = 0; i < n && !ret; i++) {
		char *p = xstrdup(vals[i]);
		size_t len = strlen(p);
		while (len > 1 && p[len - 1] == '/')
			p[--len] = '\0';
		if (p[0] != '/')
			ret = error_set(err, "storage.%s: '%s' is not an absolute path", key, vals[i]);
		if (!ret && !strlist_has(out, p))
			strlist_add(out, p);
		free(p);
	}
	free(vals);
	return ret;
}

static int get_seconds(const struct config *cfg, const char *sec, const char *key, double def,
		       double *out, struct strbuf *err)
{
	if (config_get_double(cfg, sec, key, def, out, err) < 0)
		return -1;
	if (!(*out > 0) || *out > 3600)
		return error_set(err, "%s.%s wants seconds, not '%s'", sec, key,
				 config_get(cfg, sec, key));
	return 0;
}

int storage_options_load(const struct config *cfg, struct storage_options *opt,
			 struct strbuf *err)
{
	double t, check_t;
	memset(opt, 0, sizeof(*opt));
	if (load_paths(cfg, "mount", &opt->mounts, err) < 0 ||
	    load_paths(cfg, "require", &opt->require, err) < 0 ||
	    load_paths(cfg, "probe", &opt->probes, err) < 0)
		return -1;
	const char *thr = config_get(cfg, "storage", "usage-threshold");
	if (thr) {
		char *s = xstrdup(thr);
		size_t n = strlen(s);
		while (n && (s[n - 1] == '%' || s[n - 1] == ' '))
			s[--n] = '\0';
		bool ok = parse_double(s, &opt->threshold) && opt->threshold > 5 &&
			  opt->threshold <= 100;
		free(s);
		if (!ok)
			return error_set(err, "storage.usage-threshold wants a percentage above 5, "
					      "not '%s'", thr);
	} else {
		opt->threshold = 95;
	}
	if (get_seconds(cfg, "storage", "probe-timeout", 5, &t, err) < 0)
		return -1;
	opt->probe_timeout_ms = (unsigned)(t * 1000);
	if (config_get_u64(cfg, "storage", "probe-size", 1u << 20, &opt->probe_size, err) < 0)
		return -1;
	if (!opt->probe_size || opt->probe_size > (64u << 20))
		return error_set(err, "storage.probe-size wants 1 to 67108864 bytes, not '%s'",
				 config_get(cfg, "storage", "probe-size"));
	const char *pf = config_get(cfg, "storage", "probe-file");
	if (pf) {
		if (!*pf || strchr(pf, '/') || !strcmp(pf, ".") || !strcmp(pf, ".."))
			return error_set(err, "storage.probe-file wants a file name, not '%s'", pf);
		opt->probe_file = xstrdup(pf);
	}
	/* Everything must end before the runner's deadline for this check, with a margin so that
	 * the findings still get out: the same setting the runner reads. */
	const struct check_def *def = check_find("storage");
	double def_s = def ? def->timeout_ms / 1000.0 : 15;
	if (config_get(cfg, "check", "timeout") &&
	    get_seconds(cfg, "check", "timeout", def_s, &def_s, err) < 0)
		return -1;
	if (get_seconds(cfg, "storage", "timeout", def_s, &check_t, err) < 0)
		return -1;
	opt->budget_ms = check_t > 1.5 ? (unsigned)((check_t - 1) * 1000)
					: (unsigned)(check_t * 600);
	return 0;
}

void storage_options_release(struct storage_options *opt)
{
	strlist_release(&opt->mounts);
	strlist_release(&opt->require);
	strlist_release(&opt->probes);
	free(opt->probe_file);
	opt->probe_file = NULL;
}

/* ---- the snapshot for 'vigil gather' ---- */

static bool pseudo_fs(const char *type)
{
	static const char *const skip[] = {
		"proc",	      "sysfs",	   "devtmpfs", "devpts",    "cgroup",	  "cgroup2",
		"securityfs", "pstore",	   "bpf",      "tracefs",   "debugfs",	  "mqueue",
		"hugetlbfs",  "configfs",  "fusectl",  "binfmt_misc", "autofs",	  "rpc_pipefs",
		"nsfs",	      "efivarfs",  "selinuxfs", "ramfs",    "nfsd",	  "fuse.gvfsd-fuse",
		"squashfs",
	};
	for (size_t i = 0; i < ARRAY_SIZE(skip); i++)
		if (!strcmp(type, skip[i]))
			return true;
	return false;
}

int storage_snapshot_write(const struct fsroot *root, const struct config *cfg, struct strbuf *out,
			   struct strbuf *err)
{
	struct storage_options opt;
	struct storage_readings r;
	struct strbuf text = STRBUF_INIT;
	struct strlist paths = STRLIST_INIT;
	struct fs_numbers *n = NULL;
	int ret = -1;
	memset(&r, 0, sizeof(r));
	if (storage_options_load(cfg, &opt, err) < 0)
		goto out;
	int mr = fsroot_read(root, "/proc/mounts", &text, 4u << 20, err);
	if (mr < 0)
		goto out;
	if (mr == READ_MISSING) {
		error_set(err, "no /proc/mounts");
		goto out;
	}
	storage_parse_mounts(&r, text.buf);
	for (size_t i = 0; i < r.nr_mounts; i++)
		if (!pseudo_fs(r.mounts[i].fstype) && !strlist_has(&paths, r.mounts[i].target))
			strlist_add(&paths, r.mounts[i].target);
	choose_fs(&r, &opt);
	for (size_t i = 0; i < r.nr_fs; i++)
		if (!strlist_has(&paths, r.fs[i].path))
			strlist_add(&paths, r.fs[i].path);
	n = xcalloc(paths.nr ? paths.nr : 1, sizeof(*n));
	strbuf_addstr(out, "# vigil fs.snapshot: PATH TOTAL_BYTES FREE_BYTES AVAIL_BYTES "
			   "TOTAL_INODES FREE_INODES\n");
	statvfs_run(root, &paths, n, opt.probe_timeout_ms);
	/* only numbers go into the file; a hung mount is the caller's to report */
	ret = 0;
	for (size_t i = 0; i < paths.nr; i++) {
		if (n[i].ok) {
			escape_path(out, paths.items[i]);
			strbuf_addf(out, " %llu %llu %llu %llu %llu\n",
				    (unsigned long long)n[i].total, (unsigned long long)n[i].free,
				    (unsigned long long)n[i].avail, (unsigned long long)n[i].itotal,
				    (unsigned long long)n[i].ifree);
		} else if (n[i].timed_out && !ret) {
			ret = error_set(err, "statfs of '%s' timed out after %g s", paths.items[i],
					opt.probe_timeout_ms / 1000.0);
		}
	}
out:
	free(n);
	strlist_release(&paths);
	strbuf_release(&text);
	storage_readings_release(&r);
	storage_options_release(&opt);
	return ret;
}

/* ---- the check ---- */

int check_storage_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	struct storage_options opt;
	struct storage_readings r;
	int ret = -1;
	memset(&r, 0, sizeof(r));
	if (storage_options_load(ctx->cfg, &opt, err) < 0)
		goto out;
	/* The runner's deadline for this check is the real one (it includes a lower --timeout). */
	if (ctx->timeout_ms) {
		unsigned t = ctx->timeout_ms;
		unsigned b = t > 1500 ? t - 1000 : t * 6 / 10;
		if (b < opt.budget_ms)
			opt.budget_ms = b;
	}
	if (storage_gather(ctx, &opt, &r, err) < 0)
		goto out;
	storage_evaluate(&r, &opt, res);
	ret = 0;
out:
	storage_readings_release(&r);
	storage_options_release(&opt);
	return ret;
}
