/*
 * ckpt.c: the parent side of 'vigil stress storage' (ckpt.h): the directory and its
 * refusals, the free-space check, the O_DIRECT probe, the three phases (write, read back,
 * metadata) as rounds of forked workers under one deadline, the figures gathered from the
 * workers' slots, and the removal of everything the test made.
 */
#include "ckpt_io.h"
#include "../lib/fileio.h"
#include "../lib/run.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <dirent.h>
#include <unistd.h>

/* what ckpt_sweep_signal() removes: the test running now (one per process) */
static volatile int sweep_dirfd = -1, sweep_subfd = -1;
static volatile unsigned sweep_files, sweep_meta;
static char sweep_subname[48];

void ckpt_result_init(struct ckpt_result *r)
{
	memset(r, 0, sizeof(*r));
}

void ckpt_result_release(struct ckpt_result *r)
{
	free(r->per_writer);
	memset(r, 0, sizeof(*r));
}

uint64_t ckpt_margin(const struct ckpt_opts *o)
{
	/* a tenth more, and at least 64 MiB: the file system's own metadata, the metadata
	 * burst, and room left for whoever else writes there */
	uint64_t m = o->size / 10;
	return m > (64u << 20) ? m : (64u << 20);
}

static void fs_type_name(const struct statfs *sf, char *out, size_t size)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} names[] = {
		{ 0xEF53, "ext4" },	 { 0x58465342, "xfs" },	      { 0x01021994, "tmpfs" },
		{ 0x9123683E, "btrfs" }, { 0x6969, "nfs" },	      { 0x0BD00BD0, "lustre" },
		{ 0x47504653, "gpfs" },	 { 0xFE534D42, "smb2" },      { 0xFF534D42, "cifs" },
		{ 0x65735546, "fuse" },	 { 0x794C7630, "overlayfs" }, { 0x00C36400, "ceph" },
		{ 0x4d44, "vfat" },	 { 0xF2F52010, "f2fs" },      { 0x19830326, "beegfs" },
		{ 0x858458f6, "ramfs" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if ((unsigned long)sf->f_type == names[i].magic) {
			strlcpy_v(out, names[i].name, size);
			return;
		}
	snprintf(out, size, "0x%lx", (unsigned long)sf->f_type);
}

/* Try O_DIRECT with one block in the subdirectory: tmpfs before Linux 6.6 refuses it at open
 * (EINVAL), some file systems only at the first write. */
static void probe_direct(struct ckpt_dir *d, const struct ckpt_opts *o)
{
	d->direct = false;
	if (o->buffered) {
		strlcpy_v(d->direct_note, "--buffered: O_DIRECT not tried", sizeof(d->direct_note));
		return;
	}
	const char *name = "direct-probe";
	int fd = openat(d->subfd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_DIRECT, 0600);
	if (fd < 0) {
		snprintf(
			d->direct_note, sizeof(d->direct_note),
			"%s refuses O_DIRECT (%s): buffered writes, the page cache dropped for the "
			"read-back",
			d->fs_type, strerror(errno));
		unlinkat(d->subfd, name, 0);
		return;
	}
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, o->block) == 0) {
		memset(buf, 0, o->block);
		ssize_t n = pwrite(fd, buf, o->block, 0);
		if (n == (ssize_t)o->block)
			d->direct = true;
		else
			snprintf(d->direct_note, sizeof(d->direct_note),
				 "%s refused an O_DIRECT write of %u bytes (%s): buffered "
				 "writes, the page cache dropped for the read-back",
				 d->fs_type, o->block, n < 0 ? strerror(errno) : "short write");
	}
	free(buf);
	close(fd);
	unlinkat(d->subfd, name, 0);
}

enum ckpt_refusal ckpt_open(struct ckpt_dir *d, const char *path, const struct ckpt_opts *o,
			    struct strbuf *err)
{
	memset(d, 0, sizeof(*d));
	d->dirfd = d->subfd = -1;
	struct stat st;
	d->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dirfd < 0) {
		int e = errno;
		if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
			strbuf_addf(err, "'%s' is a symbolic link, which is never followed", path);
			return CKPT_LINK;
		}
		if (e == ENOTDIR && lstat(path, &st) == 0) {
			strbuf_addf(err, "'%s' is %s, not a directory", path,
				    file_kind(st.st_mode));
			return CKPT_NOT_DIR;
		}
		strbuf_addf(err, "cannot open '%s': %s", path, strerror(e));
		return e == ENOENT || e == ENOTDIR ? CKPT_MISSING
		       : e == EACCES		   ? CKPT_UNWRITABLE
						   : CKPT_ERROR;
	}
	struct statvfs sv;
	struct statfs sf;
	if (fstatvfs(d->dirfd, &sv) < 0 || fstatfs(d->dirfd, &sf) < 0) {
		strbuf_addf(err, "cannot tell the free space of '%s': %s", path, strerror(errno));
		goto refused_error;
	}
	fs_type_name(&sf, d->fs_type, sizeof(d->fs_type));
	if (sv.f_flag & ST_RDONLY) {
		strbuf_addf(err, "'%s' is on a read-only %s file system", path, d->fs_type);
		close(d->dirfd);
		d->dirfd = -1;
		return CKPT_UNWRITABLE;
	}
	d->avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	uint64_t need = o->size + ckpt_margin(o);
	if (need > d->avail) {
		strbuf_addf(err,
			    "'%s' has %.1f MiB free (%s); the test needs %.1f MiB and keeps "
			    "%.1f MiB more free: refused before writing anything",
			    path, (double)d->avail / 1048576, d->fs_type, (double)o->size / 1048576,
			    (double)ckpt_margin(o) / 1048576);
		close(d->dirfd);
		d->dirfd = -1;
		return CKPT_NO_SPACE;
	}
	char hex[17];
	random_hex16(hex);
	snprintf(d->subname, sizeof(d->subname), "vigil-storage.%s", hex);
	if (mkdirat(d->dirfd, d->subname, 0700) < 0) {
		int e = errno;
		strbuf_addf(err, "cannot create a directory in '%s': %s", path, strerror(e));
		close(d->dirfd);
		d->dirfd = -1;
		return e == EACCES || e == EPERM || e == EROFS ? CKPT_UNWRITABLE
		       : e == ENOSPC || e == EDQUOT	       ? CKPT_NO_SPACE
							       : CKPT_ERROR;
	}
	d->subfd = openat(d->dirfd, d->subname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->subfd < 0) {
		strbuf_addf(err, "cannot open '%s/%s': %s", path, d->subname, strerror(errno));
		unlinkat(d->dirfd, d->subname, AT_REMOVEDIR);
		goto refused_error;
	}
	strlcpy_v(sweep_subname, d->subname, sizeof(sweep_subname));
	sweep_dirfd = d->dirfd;
	sweep_subfd = d->subfd;
	probe_direct(d, o);
	return CKPT_OK;
refused_error:
	close(d->dirfd);
	d->dirfd = -1;
	return CKPT_ERROR;
}

void ckpt_sweep_signal(void)
{
	int sub = sweep_subfd, dir = sweep_dirfd;
	char name[48];
	if (sub < 0)
		return;
	for (unsigned i = 0; i < sweep_files; i++) {
		ckpt_name(name, sizeof(name), i, true);
		unlinkat(sub, name, 0);
		ckpt_name(name, sizeof(name), i, false);
		unlinkat(sub, name, 0);
	}
	int mfd = openat(sub, "meta", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	for (unsigned i = 0; mfd >= 0 && i < sweep_meta; i++) {
		ckpt_meta_name(name, sizeof(name), i, false);
		unlinkat(mfd, name, 0);
		ckpt_meta_name(name, sizeof(name), i, true);
		unlinkat(mfd, name, 0);
	}
	if (mfd >= 0)
		close(mfd);
	unlinkat(sub, "meta", AT_REMOVEDIR);
	unlinkat(sub, "direct-probe", 0);
	unlinkat(dir, sweep_subname, AT_REMOVEDIR);
}

/* Everything in the subdirectory (one level: the shards, meta/ and its files), then it. */
static int remove_tree(int dirfd, const char *name, int depth, struct strbuf *err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		strbuf_addf(err, "cannot open '%s' to remove it: %s", name, strerror(errno));
		return -1;
	}
	DIR *dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return -1;
	}
	int ret = 0;
	for (struct dirent *e; (e = readdir(dp));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(fd, e->d_name, 0) == 0)
			continue;
		if ((errno == EISDIR || errno == EPERM) && depth < 1 &&
		    remove_tree(fd, e->d_name, depth + 1, err) == 0)
			continue;
		if (!err->len)
			strbuf_addf(err, "cannot remove '%s': %s", e->d_name, strerror(errno));
		ret = -1;
	}
	closedir(dp);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0) {
		if (!err->len)
			strbuf_addf(err, "cannot remove '%s': %s", name, strerror(errno));
		ret = -1;
	}
	return ret;
}

int ckpt_close(struct ckpt_dir *d, struct strbuf *err)
{
	int ret = 0;
	if (d->subfd >= 0) {
		close(d->subfd);
		d->subfd = -1;
		ret = remove_tree(d->dirfd, d->subname, 0, err);
	}
	sweep_subfd = -1;
	sweep_dirfd = -1;
	if (d->dirfd >= 0)
		close(d->dirfd);
	d->dirfd = -1;
	return ret;
}

/* ---- the phases ---- */

static void file_label(unsigned file, unsigned op, char *out, size_t size);

struct phase {
	struct child *kids;
	struct ckpt_job *jobs;
	unsigned n;
};

/*
 * One round of workers: start them, wait for all under the test's deadline (the run.h child
 * kills a worker's group at it), then name what a killed worker was doing. false when the
 * deadline ended the round.
 */
static bool run_phase(struct phase *p, uint64_t deadline_ms, struct ckpt_result *r)
{
	struct strbuf err = STRBUF_INIT;
	struct pollfd *pfd = xcalloc((size_t)p->n * CHILD_POLLFDS, sizeof(*pfd));
	size_t *off = xcalloc(p->n, sizeof(*off)), *cnt = xcalloc(p->n, sizeof(*cnt));
	bool *live = xcalloc(p->n, sizeof(*live)), ok = true;
	for (unsigned i = 0; i < p->n; i++) {
		struct child *c = &p->kids[i];
		child_init(c);
		c->fn = ckpt_worker;
		c->fn_arg = &p->jobs[i];
		c->deadline_ms = deadline_ms;
		c->timeout_name = "--duration";
		c->out_cap = 64 << 10;
		strbuf_reset(&err);
		if (child_start(c, &err) < 0) {
			if (!r->not_run[0])
				snprintf(r->not_run, sizeof(r->not_run),
					 "worker %u not started: %s", i, err.buf);
			ok = false;
			continue;
		}
		live[i] = true;
	}
	for (;;) {
		size_t n = 0, alive = 0;
		for (unsigned i = 0; i < p->n; i++) {
			if (!live[i])
				continue;
			alive++;
			off[i] = n;
			cnt[i] = child_pollfds(&p->kids[i], pfd + n);
			n += cnt[i];
		}
		if (!alive)
			break;
		int wait = -1;
		for (unsigned i = 0; i < p->n; i++) {
			int w = live[i] ? child_wait_ms(&p->kids[i]) : -1;
			if (w >= 0 && (wait < 0 || w < wait))
				wait = w;
		}
		if (poll(pfd, (nfds_t)n, wait) <= 0)
			for (size_t k = 0; k < n; k++)
				pfd[k].revents = 0;
		for (unsigned i = 0; i < p->n; i++)
			if (live[i] && child_handle(&p->kids[i], pfd + off[i], cnt[i])) {
				child_finish(&p->kids[i]);
				live[i] = false;
			}
	}
	uint64_t now = ckpt_now_ns();
	for (unsigned i = 0; i < p->n; i++) {
		struct child *c = &p->kids[i];
		struct ckpt_slot *sl = p->jobs[i].slot;
		if (c->timed_out) {
			r->deadline_hit = true;
			ok = false;
		} else if (c->pid && !sl->done && !r->not_run[0]) {
			struct strbuf how = STRBUF_INIT;
			child_describe(c, &how);
			snprintf(r->not_run, sizeof(r->not_run), "worker %u %s", i, how.buf);
			strbuf_release(&how);
			ok = false;
		}
		uint64_t t0 = __atomic_load_n(&sl->op_start_ns, __ATOMIC_ACQUIRE);
		if (t0 && now - t0 > p->jobs[i].stall_ns && r->nr_stalls < CKPT_MAX_FINDS) {
			/* killed in the middle of an operation past the bound: it never returned
			 * (one still within the bound is the deadline's, not a stall) */
			struct ckpt_stall *s = &r->stalls[r->nr_stalls++];
			s->worker = i;
			s->file = sl->file;
			strlcpy_v(s->op, ckpt_op_name(sl->op), sizeof(s->op));
			file_label(s->file, sl->op, s->name, sizeof(s->name));
			s->ms = (double)(now - t0) / 1e6;
			s->unfinished = true;
			r->stalls_total++;
		}
		child_release(c);
	}
	free(pfd);
	free(off);
	free(cnt);
	free(live);
	strbuf_release(&err);
	return ok;
}

static void file_label(unsigned file, unsigned op, char *out, size_t size)
{
	if (file >= CKPT_META_FILE) {
		char n[24];
		if (file == CKPT_META_FILE && (op == SOP_MKDIR || op == SOP_UNLINK)) {
			strlcpy_v(out, "meta", size);
			return;
		}
		ckpt_meta_name(n, sizeof(n), file - CKPT_META_FILE, op == SOP_UNLINK);
		snprintf(out, size, "meta/%s", n);
		return;
	}
	ckpt_name(out, size, file, op == SOP_CREATE || op == SOP_WRITE || op == SOP_FSYNC);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

/* Slots of one phase into r: stalls, errors, mismatches; the phase's span. */
static void gather(struct ckpt_result *r, struct ckpt_slot *slots, unsigned n, double *span_s,
		   uint64_t *bytes)
{
	uint64_t t0 = 0, t1 = 0;
	*bytes = 0;
	for (unsigned i = 0; i < n; i++) {
		struct ckpt_slot *sl = &slots[i];
		if (sl->t0_ns && (!t0 || sl->t0_ns < t0))
			t0 = sl->t0_ns;
		if (sl->t1_ns > t1)
			t1 = sl->t1_ns;
		*bytes += sl->bytes;
		r->stalls_total += sl->stalls_total;
		for (uint32_t k = 0; k < sl->nr_stall && r->nr_stalls < CKPT_MAX_FINDS; k++) {
			struct ckpt_stall *s = &r->stalls[r->nr_stalls++];
			s->worker = i;
			s->file = sl->stall[k].file;
			strlcpy_v(s->op, ckpt_op_name(sl->stall[k].op), sizeof(s->op));
			file_label(s->file, sl->stall[k].op, s->name, sizeof(s->name));
			s->ms = (double)sl->stall[k].ns / 1e6;
		}
		r->errors_total += sl->errors_total;
		for (uint32_t k = 0; k < sl->nr_err && r->nr_errors < CKPT_MAX_FINDS; k++) {
			struct ckpt_error *e = &r->errors[r->nr_errors++];
			strlcpy_v(e->op, ckpt_op_name(sl->err[k].op), sizeof(e->op));
			file_label(sl->err[k].file, sl->err[k].op, e->name, sizeof(e->name));
			e->err_no = sl->err[k].err_no;
		}
		r->mismatched_sectors += sl->bad_sectors;
		for (uint32_t k = 0; k < sl->nr_mm && r->nr_mismatch < CKPT_MAX_FINDS; k++) {
			r->mismatch[r->nr_mismatch].file = sl->mm[k].file;
			r->mismatch[r->nr_mismatch].offset = sl->mm[k].off;
			r->nr_mismatch++;
		}
	}
	*span_s = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
}

const double ckpt_fsync_q[CKPT_FSYNC_QS] = { 0, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99,
					       0.999, 1 };

static void fsync_figures(struct ckpt_result *r, struct ckpt_slot *slots, unsigned n)
{
	size_t kept = 0;
	for (unsigned i = 0; i < n; i++) {
		kept += slots[i].kept;
		r->fsyncs += slots[i].fsyncs;
		double d = (double)slots[i].dirsync_max_ns / 1e6;
		if (d > r->dirsync_max_ms)
			r->dirsync_max_ms = d;
	}
	r->fsyncs_kept = kept;
	if (!kept)
		return;
	float *all = xcalloc(kept, sizeof(*all));
	size_t k = 0;
	for (unsigned i = 0; i < n; i++)
		for (uint32_t j = 0; j < slots[i].kept; j++)
			all[k++] = slots[i].fsync_ms[j];
	qsort(all, kept, sizeof(*all), cmp_float);
	/* nearest rank */
	r->fsync_p50_ms = all[(kept * 50 + 99) / 100 - 1];
	r->fsync_p99_ms = all[(kept * 99 + 99) / 100 - 1];
	r->fsync_max_ms = all[kept - 1];
	for (size_t i = 0; i < CKPT_FSYNC_QS; i++) {
		size_t at = (size_t)(ckpt_fsync_q[i] * (double)kept + 0.999999);
		r->fsync_q_ms[i] = all[at ? at - 1 : 0];
	}
	free(all);
}

static const char *const verify_names[] = {
	[CKPT_VERIFY_AUTO] = "auto",
	[CKPT_VERIFY_INLINE] = "inline",
	[CKPT_VERIFY_OVERLAPPED] = "overlapped",
	[CKPT_VERIFY_NONE] = "none",
};

const char *ckpt_verify_name(enum ckpt_verify v)
{
	return (unsigned)v < sizeof(verify_names) / sizeof(verify_names[0]) ? verify_names[v] : "?";
}

bool ckpt_verify_parse(const char *s, enum ckpt_verify *out)
{
	for (unsigned i = 0; i < sizeof(verify_names) / sizeof(verify_names[0]); i++)
		if (!strcmp(s, verify_names[i])) {
			*out = (enum ckpt_verify)i;
			return true;
		}
	return false;
}

/* CPUs this process may run on (its affinity: a Slurm step or a container may hold fewer than
 * the host has); 1 when it cannot be read */
static unsigned usable_cpus(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

void ckpt_run(struct ckpt_dir *d, const struct ckpt_opts *o, struct ckpt_result *r)
{
	uint64_t deadline = mono_ms() + o->deadline_ms;
	unsigned files = (unsigned)((o->size + o->file_size - 1) / o->file_size);
	unsigned n = o->writers < files ? o->writers : files;
	r->bytes = o->size;
	r->file_size = o->file_size;
	r->files = files;
	r->writers = n;
	r->block = o->block;
	r->direct = d->direct;
	r->injected = o->inject != CKPT_INJECT_NONE;
	strlcpy_v(r->fs_type, d->fs_type, sizeof(r->fs_type));
	strlcpy_v(r->direct_note, d->direct_note, sizeof(r->direct_note));
	sweep_files = files;
	sweep_meta = o->meta_files;
	size_t map_len = sizeof(struct ckpt_slot) * (n + 1);
	struct ckpt_slot *slots =
		mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED) {
		snprintf(r->not_run, sizeof(r->not_run),
			 "cannot map the workers' shared memory: %s", strerror(errno));
		return;
	}
	struct phase p = { xcalloc(n, sizeof(struct child)), xcalloc(n, sizeof(struct ckpt_job)),
			   n };
	uint64_t seed;
	char hex[17];
	random_hex16(hex);
	seed = strtoull(hex, NULL, 16);
	bool memory_fs = !strcmp(d->fs_type, "tmpfs") || !strcmp(d->fs_type, "ramfs");
	/*
	 * The read-back's check beside the read, in a thread, only where every reader and its
	 * checker can have a CPU each. On fewer, the two threads of each of n readers take turns
	 * on the same CPUs and the hand-off costs more than the overlap gives back: on 2 CPUs
	 * with 4 writers the overlapped read-back was 0.92x fio's and the inline one 1.00x
	 * (docs/PERFORMANCE.md, "vigil stress storage against fio").
	 */
	r->verify = o->verify;
	if (r->verify == CKPT_VERIFY_AUTO)
		r->verify = !memory_fs && usable_cpus() >= 2 * n ? CKPT_VERIFY_OVERLAPPED
								 : CKPT_VERIFY_INLINE;
	for (unsigned i = 0; i < n; i++) {
		struct ckpt_job *j = &p.jobs[i];
		j->worker = i;
		j->nworkers = n;
		j->files = files;
		j->size = o->size;
		j->file_size = o->file_size;
		j->block = o->block;
		j->direct = d->direct;
		j->huge_buf = memory_fs;
		j->verify = r->verify;
		j->subfd = d->subfd;
		j->seed = seed;
		j->stall_ns = (uint64_t)o->stall_ms * 1000000u;
		j->meta_files = o->meta_files;
		j->inject = o->inject;
		j->slot = &slots[i];
		j->all = slots;
	}
	r->per_writer = xcalloc(n, sizeof(*r->per_writer));

	/* write: every writer its shards, fsync, rename, directory sync */
	bool ok = run_phase(&p, deadline, r);
	uint64_t bytes;
	gather(r, slots, n, &r->write_s, &bytes);
	fsync_figures(r, slots, n);
	r->written = bytes;
	r->write_mib_s = r->write_s > 0 ? (double)bytes / 1048576 / r->write_s : 0;
	for (unsigned i = 0; i < n; i++) {
		double s = (double)(slots[i].t1_ns - slots[i].t0_ns) / 1e9;
		r->per_writer[i].bytes = slots[i].bytes;
		r->per_writer[i].write_mib_s = s > 0 ? (double)slots[i].bytes / 1048576 / s : 0;
	}
	r->write_done = ok && !r->errors_total;

	/* read back: the same writer reads its own shards (its pattern), verifying every byte */
	if (!r->deadline_hit && !r->not_run[0]) {
		memset(slots, 0, map_len);
		for (unsigned i = 0; i < n; i++)
			p.jobs[i].phase = SPHASE_READ;
		uint64_t total_before = r->errors_total;
		ok = run_phase(&p, deadline, r);
		gather(r, slots, n, &r->read_s, &bytes);
		r->read = bytes;
		r->read_mib_s = r->read_s > 0 ? (double)bytes / 1048576 / r->read_s : 0;
		for (unsigned i = 0; i < n; i++) {
			double s = (double)(slots[i].t1_ns - slots[i].t0_ns) / 1e9;
			r->per_writer[i].read_mib_s =
				s > 0 ? (double)slots[i].bytes / 1048576 / s : 0;
			r->verified += slots[i].verified;
			r->cache_resident += slots[i].cache_resident;
			r->cache_pages += slots[i].cache_pages;
		}
		r->read_done = ok && r->errors_total == total_before;
	}

	/* metadata: one process, many small files */
	if (o->meta_files && !r->deadline_hit && !r->not_run[0]) {
		memset(slots, 0, map_len);
		struct phase m = { xcalloc(1, sizeof(struct child)), p.jobs, 1 };
		p.jobs[0].phase = SPHASE_META;
		uint64_t total_before = r->errors_total;
		ok = run_phase(&m, deadline, r);
		double s;
		gather(r, slots, 1, &s, &bytes);
		r->meta_ops = slots[0].meta_ops;
		r->meta_s = s;
		r->meta_ops_s = s > 0 ? (double)r->meta_ops / s : 0;
		r->meta_done = ok && r->errors_total == total_before;
		free(m.kids);
	}
	free(p.kids);
	free(p.jobs);
	munmap(slots, map_len);
}
