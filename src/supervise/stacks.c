/*
 * stacks.c: the stacks of one attempt's ranks on this host (see stacks.h): find them in /proc by
 * their environment, sample their state, take the Python stack through the hook's SIGURG and
 * the native one through eu-stack. Order matters: states first (the signal and eu-stack's ptrace
 * attach would disturb them), then SIGURG to every rank at once (the dumps run in parallel),
 * then eu-stack (it stops the process while it walks it, which would hold back a dump).
 */
#include "stacks_int.h"
#include "../lib/fileio.h"
#include "../lib/json.h"
#include "../lib/run_group.h"
#include "../sys/fsroot.h"
#include "../diagnose/ncclring.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 50

void stacks_result_init(struct stacks_result *r)
{
	memset(r, 0, sizeof(*r));
}

void stacks_result_release(struct stacks_result *r)
{
	for (size_t i = 0; i < r->nr; i++) {
		free(r->ranks[i].wchan);
		free(r->ranks[i].py_stack);
		free(r->ranks[i].native_stack);
		free(r->ranks[i].ring_dir);
		free(r->ranks[i].nccl_ring);
		strlist_release(&r->ranks[i].errors);
		free(r->ranks[i].doubt);
	}
	free(r->ranks);
	free(r->job);
	free(r->step);
	strlist_release(&r->ignored);
	free(r->host);
	free(r->attempt_dir);
	free(r->eu_stack);
	strlist_release(&r->errors);
	memset(r, 0, sizeof(*r));
}

void stacks_add_clean_lines(struct strbuf *out, const char *text, size_t len, size_t max)
{
	bool cut = len > max;
	if (cut)
		len = max;
	struct strbuf line = STRBUF_INIT;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
		strbuf_reset(&line);
		strbuf_add(&line, text + i, n);
		/* a NUL inside a line ends C strings: show it as the byte it is */
		for (size_t j = 0; j < line.len; j++)
			if (!line.buf[j])
				line.buf[j] = '\x01';
		strbuf_add_clean(out, line.buf);
		if (nl)
			strbuf_addch(out, '\n');
		i += n + (nl ? 1 : 0);
	}
	strbuf_release(&line);
	if (cut)
		strbuf_addf(out, "%s... (cut at %zu bytes)\n",
			    out->len && out->buf[out->len - 1] != '\n' ? "\n" : "", max);
}

static void rank_error(struct stacks_rank *k, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void rank_error(struct stacks_rank *k, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strlist_add_nodup(&k->errors, strbuf_detach(&sb, NULL));
}

static int state_index(char s)
{
	switch (s) {
	case 'R': return STACKS_R;
	case 'S': case 'I': return STACKS_S;
	case 'D': return STACKS_D;
	case 'T': case 't': return STACKS_T;
	case 'Z': case 'X': return STACKS_Z;
	default: return STACKS_OTHER;
	}
}

/* The same process as found (not a new one under a reused pid), and its stat now. */
static bool still_there(struct stacks_rank *k, struct proc_stat *st)
{
	if (k->gone)
		return false;
	if (stacks_read_stat(k->pid, st) < 0 || st->start != k->start_time) {
		k->gone = true;
		rank_error(k, "the process ended while vigil looked");
		return false;
	}
	return true;
}

/*
 * Whether the process maps NVIDIA's driver library (libcuda.so, which every CUDA program loads:
 * PyTorch on a GPU, NCCL): 1, 0, or -1 when its maps could not be read whole. It matters for
 * the evidence: a CUDA rank waiting for the GPU, in NCCL's all_reduce or a synchronize, spins
 * on its CPU (R in every sample) where a gloo rank sleeps, so its busy share says nothing
 * of who holds the others up (seen on an H200: the rank waiting in NCCL busy in 20 of 20
 * samples, the rank that never entered asleep).
 */
#define STACKS_MAPS_MAX (32u << 20)

static int maps_cuda(pid_t pid)
{
	static const char needle[] = "/libcuda.so";
	const size_t nl = sizeof(needle) - 1;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	int fd = fsroot_open(fsroot_host, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	/* a window: the needle may straddle two reads */
	char buf[65536 + sizeof(needle)];
	size_t keep = 0, total = 0;
	int found = 0;
	for (;;) {
		ssize_t n = read(fd, buf + keep, sizeof(buf) - keep);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			found = -1;
			break;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		size_t have = keep + (size_t)n;
		if (memmem(buf, have, needle, nl)) {
			found = 1;
			break;
		}
		if (total > STACKS_MAPS_MAX) {
			found = -1;
			break;
		}
		keep = have < nl - 1 ? have : nl - 1;
		memmove(buf, buf + have - keep, keep);
	}
	close(fd);
	return found;
}

static void sample(struct stacks_result *r, const struct stacks_options *o)
{
	long tick = sysconf(_SC_CLK_TCK);
	for (unsigned s = 0; s < o->samples; s++) {
		if (s)
			stacks_sleep_ms(o->interval_ms);
		for (size_t i = 0; i < r->nr; i++) {
			struct stacks_rank *k = &r->ranks[i];
			struct proc_stat st;
			if (!still_there(k, &st))
				continue;
			k->states[state_index(st.state)]++;
			if (!k->samples)
				k->cpu0 = st.utime + st.stime;
			k->cpu1 = st.utime + st.stime;
			k->samples++;
		}
	}
	for (size_t i = 0; i < r->nr; i++) {
		struct stacks_rank *k = &r->ranks[i];
		char path[64];
		struct strbuf w = STRBUF_INIT;
		if (k->samples && tick > 0)
			k->cpu_s = (double)(k->cpu1 - k->cpu0) / (double)tick;
		snprintf(path, sizeof(path), "/proc/%d/wchan", (int)k->pid);
		if (!k->gone && fsroot_read(fsroot_host, path, &w, 256, NULL) == READ_OK) {
			strbuf_trim(&w);
			if (w.len && strcmp(w.buf, "0")) {
				struct strbuf c = STRBUF_INIT;
				strbuf_add_excerpt(&c, w.buf, 96);
				k->wchan = strbuf_detach(&c, NULL);
			}
		}
		strbuf_release(&w);
		k->gpu = k->gone ? -1 : maps_cuda(k->pid);
	}
}

/* The rank's pystack file, opened without following a link: an fd of a regular file, or -1
 * with the reason in why. */
static int open_pystack(const char *attempt_dir, long rank, const char **why)
{
	struct strbuf p = STRBUF_INIT;
	struct stat st;
	char name[64];
	int dfd, fd = -1;
	strbuf_addf(&p, "%s/pystack", attempt_dir);
	dfd = open(p.buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	strbuf_release(&p);
	if (dfd < 0) {
		*why = errno == ENOENT ? "no pystack directory" : "pystack is not a directory";
		return -1;
	}
	snprintf(name, sizeof(name), "rank-%ld.txt", rank);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	close(dfd);
	if (fd < 0) {
		*why = errno == ENOENT	? "no pystack file"
		       : errno == ELOOP ? "its pystack file is a symbolic link: not read"
					: "its pystack file cannot be opened";
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		*why = "its pystack file is not a regular file: not read";
		return -1;
	}
	return fd;
}

static off_t fd_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) < 0 ? -1 : st.st_size;
}

static void python_stacks(struct stacks_result *r, const struct stacks_options *o)
{
	size_t n = r->nr;
	int *fd = xcalloc(n ? n : 1, sizeof(*fd));
	off_t *from = xcalloc(n ? n : 1, sizeof(*from)), *last = xcalloc(n ? n : 1, sizeof(*last));
	size_t pending = 0;
	unsigned wait_ms = o->py_wait_ms ? o->py_wait_ms : 2000;

	for (size_t i = 0; i < n; i++) {
		struct stacks_rank *k = &r->ranks[i];
		struct proc_stat st;
		const char *why = NULL;
		fd[i] = -1;
		if (!still_there(k, &st))
			continue;
		/*
		 * Stopped (T) in every sample and still: it cannot run a handler until someone
		 * continues it, so waiting py_wait_ms for its dump only delays the evidence (on a
		 * hang, 2 s of every recovery). Not signalled either: a SIGURG left pending would
		 * dump into the attempt long after this look.
		 */
		if (k->samples && k->states[STACKS_T] == k->samples &&
		    state_index(st.state) == STACKS_T) {
			rank_error(k, "no Python stack: it is stopped: T in all %u samples, so it "
				   "cannot run a signal handler (not signalled)", k->samples);
			continue;
		}
		fd[i] = open_pystack(r->attempt_dir, k->rank, &why);
		if (fd[i] < 0) {
			/* no hook, nothing to signal: a process that is not Python is left alone */
			rank_error(k, "no Python stack: %s (not Python, or the hook is off)", why);
			continue;
		}
		from[i] = last[i] = fd_size(fd[i]);
		if (kill(k->pid, SIGURG) < 0) {
			rank_error(k, "no Python stack: cannot signal pid %d: %s", (int)k->pid,
				   strerror(errno));
			close(fd[i]);
			fd[i] = -1;
			continue;
		}
		pending++;
	}
	/* A dump is many writes: done when the file grew and then stayed the same for a poll. */
	for (unsigned waited = 0; pending && waited < wait_ms; waited += POLL_MS) {
		stacks_sleep_ms(POLL_MS);
		for (size_t i = 0; i < n; i++) {
			if (fd[i] < 0 || r->ranks[i].py_stack)
				continue;
			off_t now = fd_size(fd[i]);
			if (now > from[i] && now == last[i]) {
				struct strbuf c = STRBUF_INIT;
				size_t want = (size_t)(now - from[i]);
				if (want > STACKS_TEXT_MAX + 1)
					want = STACKS_TEXT_MAX + 1;
				char *t = xmalloc(want);
				ssize_t got = pread(fd[i], t, want, from[i]);
				if (got > 0) {
					stacks_add_clean_lines(&c, t, (size_t)got, STACKS_TEXT_MAX);
					r->ranks[i].py_stack = strbuf_detach(&c, NULL);
				} else {
					rank_error(&r->ranks[i], "no Python stack: cannot read its "
						   "pystack file: %s", got < 0 ? strerror(errno) : "empty");
				}
				free(t);
				strbuf_release(&c);
				close(fd[i]);
				fd[i] = -1;
				pending--;
				continue;
			}
			if (now >= 0)
				last[i] = now;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct stacks_rank *k = &r->ranks[i];
		if (fd[i] < 0)
			continue;
		struct proc_stat st;
		bool there = still_there(k, &st);
		if (last[i] > from[i])
			rank_error(k, "no Python stack: its dump was still being written after %u ms",
				   wait_ms);
		else
			rank_error(k, "no Python stack within %u ms of SIGURG%s", wait_ms,
				   !there ? ""
				   : state_index(st.state) == STACKS_T
					   ? " (it is stopped: T)"
				   : state_index(st.state) == STACKS_D
					   ? " (it is in uninterruptible sleep: D)"
					   : "");
		close(fd[i]);
	}
	free(fd);
	free(from);
	free(last);
}

/* eu-stack in PATH (an absolute, executable regular file), or NULL. */
static char *find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	struct strlist dirs = STRLIST_INIT;
	char *found = NULL;
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? xstrdup(prog) : NULL;
	strlist_split(&dirs, path ? path : "/usr/bin:/bin", ":");
	for (size_t i = 0; i < dirs.nr && !found; i++) {
		struct strbuf p = STRBUF_INIT;
		struct stat st;
		if (dirs.items[i][0] != '/')
			continue; /* a relative PATH entry is the working directory's: not trusted */
		strbuf_addf(&p, "%s/%s", dirs.items[i], prog);
		if (stat(p.buf, &st) == 0 && S_ISREG(st.st_mode) && access(p.buf, X_OK) == 0)
			found = strbuf_detach(&p, NULL);
		strbuf_release(&p);
	}
	strlist_release(&dirs);
	return found;
}

struct native_run {
	struct child c;
	char pid[24];
	const char *argv[5];
	struct stacks_rank *k;
};

static void native_done(struct child *c, const char *start_error, void *arg)
{
	struct native_run *n = (struct native_run *)c;
	struct stacks_rank *k = n->k;
	(void)arg;
	if (start_error) {
		rank_error(k, "no native stack: cannot run eu-stack: %s", start_error);
		return;
	}
	if (c->out.len && (c->exited || c->timed_out)) {
		struct strbuf t = STRBUF_INIT;
		stacks_add_clean_lines(&t, c->out.buf, c->out.len, STACKS_TEXT_MAX);
		if (c->out.truncated)
			strbuf_addf(&t, "... (cut at %zu bytes)\n", (size_t)STACKS_TEXT_MAX);
		k->native_stack = strbuf_detach(&t, NULL);
	}
	if (!c->exited || c->exit_code) {
		struct strbuf how = STRBUF_INIT, why = STRBUF_INIT;
		child_describe(c, &how);
		strbuf_trim(&c->err);
		strbuf_add_excerpt(&why, c->err.buf, 200);
		rank_error(k, "%s: eu-stack %s%s%s", k->native_stack ? "native stack incomplete"
			   : "no native stack", how.buf, why.len ? ": " : "", why.buf);
		strbuf_release(&how);
		strbuf_release(&why);
	}
}

static void native_stacks(struct stacks_result *r, const struct stacks_options *o)
{
	struct run_group g;
	struct native_run *runs;
	r->eu_stack = find_in_path(o->eu_stack ? o->eu_stack : "eu-stack");
	if (!r->eu_stack) {
		strlist_add(&r->errors, "no native stacks: eu-stack (Debian package elfutils) is not "
			    "installed or not in PATH");
		return;
	}
	runs = xcalloc(r->nr ? r->nr : 1, sizeof(*runs));
	run_group_init(&g, 4);
	for (size_t i = 0; i < r->nr; i++) {
		struct stacks_rank *k = &r->ranks[i];
		struct proc_stat st;
		struct native_run *n = &runs[i];
		child_init(&n->c);
		if (!still_there(k, &st))
			continue;
		n->k = k;
		snprintf(n->pid, sizeof(n->pid), "%d", (int)k->pid);
		n->argv[0] = r->eu_stack;
		n->argv[1] = "-p";
		n->argv[2] = n->pid;
		n->argv[3] = NULL;
		n->c.argv = n->argv;
		n->c.timeout_ms = o->native_timeout_ms ? o->native_timeout_ms : 10000;
		n->c.timeout_name = "eu-stack's deadline";
		n->c.out_cap = STACKS_TEXT_MAX;
		run_group_add(&g, &n->c);
	}
	run_group_run(&g, native_done, NULL);
	run_group_release(&g);
	/*
	 * eu-stack was given a pid: a rank that ended meanwhile may have left its pid to another
	 * process, whose stack is not this rank's. Kept only when the rank is still the process
	 * found (its start time) and alive.
	 */
	for (size_t i = 0; i < r->nr; i++) {
		struct stacks_rank *k = &r->ranks[i];
		struct proc_stat st;
		/* a zombie has no stack either: whatever eu-stack printed is not a live one */
		if (k->native_stack && (!still_there(k, &st) || state_index(st.state) == STACKS_Z)) {
			free(k->native_stack);
			k->native_stack = NULL;
			rank_error(k, "no native stack: the process ended while eu-stack ran (its pid "
				   "may be another process's now)");
		}
	}
	for (size_t i = 0; i < r->nr; i++)
		child_release(&runs[i].c);
	free(runs);
}

/* ---- the NCCL flight recorder's rings ---- */

/*
 * Copy each rank's recorder ring (src/nccl/ring.h, in /dev/shm or its VIGIL_NCCL_RING_DIR) into
 * ATTEMPT_DIR/nccl/HOST-rRANK-pPID.ring, for 'vigil diagnose hang' (the supervisor runs it on
 * the attempt). The ring directory is shared and writable by anyone: a name there is believed
 * only when it is a regular file (not followed), owned by the rank's own user, and says in its
 * header that it is that pid's ring; nothing else is ever read or copied as root.
 */
static int ring_name_pid(const char *name, long pid)
{
	if (strncmp(name, "vigil-nccl-", 11))
		return 0;
	char tail[40];
	snprintf(tail, sizeof(tail), "-%ld.ring", pid);
	size_t n = strlen(name), t = strlen(tail);
	if (n > t && !strcmp(name + n - t, tail))
		return 1;
	/* the plugin's fallback names: -PID.N.ring */
	snprintf(tail, sizeof(tail), "-%ld.", pid);
	const char *p = strstr(name + 11, tail);
	return p && ends_with(p, ".ring") ? 1 : 0;
}

static void copy_ring(struct stacks_result *r, struct stacks_rank *k, int ncfd)
{
	struct stat pst, st;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/%d", (int)k->pid);
	if (stat(proc, &pst) != 0)
		return;
	DIR *d = opendir(k->ring_dir);
	if (!d) {
		rank_error(k, "no NCCL recorder ring: cannot read '%s': %s", k->ring_dir,
			   strerror(errno));
		return;
	}
	struct dirent *e;
	bool found = false;
	while (!found && (e = readdir(d))) {
		if (!ring_name_pid(e->d_name, (long)k->pid))
			continue;
		int fd = openat(dirfd(d), e->d_name,
				O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			continue;
		struct strbuf buf = STRBUF_INIT, err = STRBUF_INIT;
		struct nrec_header h;
		/* the header first: a file that is not this pid's ring is not read whole */
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != pst.st_uid ||
		    pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
		    !nring_looks_like(&h, sizeof(h)) || h.pid != (int32_t)k->pid ||
		    read_fd_bounded(fd, e->d_name, &buf, (size_t)1025 << 20, &err) != READ_OK ||
		    buf.len < sizeof(h)) {
			close(fd);
			strbuf_release(&buf);
			strbuf_release(&err);
			continue;
		}
		close(fd);
		memcpy(&h, buf.buf, sizeof(h));
		if (nring_looks_like(buf.buf, buf.len) && h.pid == (int32_t)k->pid) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			h.reason = NREC_COPY;
			h.dumped_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
			memcpy(buf.buf, &h, sizeof(h));
			char name[200];
			snprintf(name, sizeof(name), "%s-r%ld-p%d.ring",
				 r->host && *r->host ? r->host : "host", k->rank, (int)k->pid);
			for (char *q = name; *q; q++)
				if (*q == '/')
					*q = '_';
			unlinkat(ncfd, name, 0); /* an earlier copy of this attempt (or a planted name) */
			if (create_file_beneath(ncfd, name, buf.buf, buf.len, 0644, &err) == 0) {
				struct strbuf rel = STRBUF_INIT;
				strbuf_addf(&rel, "nccl/%s", name);
				k->nccl_ring = strbuf_detach(&rel, NULL);
			} else {
				rank_error(k, "NCCL recorder ring not copied: %s", err.buf);
			}
			found = true;
		}
		strbuf_release(&buf);
		strbuf_release(&err);
	}
	closedir(d);
	if (!found)
		rank_error(k, "no NCCL recorder ring for pid %d in '%s' (the plugin declined, or "
			      "NCCL was not initialised yet)", (int)k->pid, k->ring_dir);
}

static void nccl_rings(struct stacks_result *r, const struct stacks_options *o)
{
	bool any = false;
	for (size_t i = 0; i < r->nr; i++)
		any |= r->ranks[i].ring_dir != NULL;
	if (!any)
		return;
	struct strbuf err = STRBUF_INIT;
	int afd = open(o->attempt_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ncfd = afd >= 0 ? open_dir_beneath(afd, "nccl", 0755, &err) : -1;
	if (ncfd < 0) {
		if (afd < 0)
			strbuf_addstr(&err, strerror(errno));
		struct strbuf m = STRBUF_INIT;
		strbuf_addf(&m, "NCCL recorder rings not copied: cannot make '%s/nccl': %s",
			    o->attempt_dir, err.buf);
		strlist_add(&r->errors, m.buf);
		strbuf_release(&m);
	} else {
		for (size_t i = 0; i < r->nr; i++)
			if (r->ranks[i].ring_dir)
				copy_ring(r, &r->ranks[i], ncfd);
		close(ncfd);
	}
	if (afd >= 0)
		close(afd);
	strbuf_release(&err);
}

int stacks_collect(struct stacks_result *r, const struct stacks_options *o, struct strbuf *err)
{
	struct stacks_options opt = *o;
	if (!opt.samples)
		opt.samples = 1;
	free(r->host);
	free(r->attempt_dir);
	r->host = xstrdup(o->host ? o->host : "");
	r->attempt_dir = xstrdup(o->attempt_dir);
	free(r->job);
	free(r->step);
	r->job = xstrdup(o->job ? o->job : "");
	r->step = o->step ? xstrdup(o->step) : NULL;
	r->uid = (long)o->uid;
	if (!o->job || !*o->job) {
		strbuf_addstr(err, "which job? no Slurm job id to tie the ranks to");
		return -1;
	}
	if (stacks_find_ranks(r, &opt, err) < 0)
		return -1;
	nccl_rings(r, &opt); /* first: the rings as the hang left them */
	sample(r, &opt);
	if (opt.no_signal) {
		for (size_t i = 0; i < r->nr; i++)
			rank_error(&r->ranks[i], "no Python stack: --no-signal");
	} else {
		python_stacks(r, &opt);
	}
	native_stacks(r, &opt);
	return 0;
}
