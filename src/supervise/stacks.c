/*
 * stacks.c: the stacks of one attempt's ranks on this host (see stacks.h): find them in /proc by
 * their environment, sample their state, take the Python stack through the hook's SIGURG and
 * the native one through eu-stack. Order matters: states first (the signal and eu-stack's ptrace
 * attach would disturb them), then SIGURG to every rank at once (the dumps run in parallel),
 * then eu-stack (it stops the process while it walks it, which would hold back a dump).
 */
#include "stacks.h"
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

#define STAT_CAP 4096
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

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Trailing slashes do not make another directory. */
static size_t dir_len(const char *s)
{
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		n--;
	return n;
}

/* The value of NAME in a NUL-separated environment block, or NULL. */
static const char *env_value(const struct strbuf *env, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < env->len;) {
		const char *e = env->buf + i;
		size_t n = strnlen(e, env->len - i);
		if (n > nl && !memcmp(e, name, nl) && e[nl] == '=')
			return i + n < env->len ? e + nl + 1 : NULL; /* a cut last entry is no value */
		i += n + 1;
	}
	return NULL;
}

static bool parse_long(const char *s, long max, long *out)
{
	uint64_t v;
	/* digits only: Slurm writes SLURM_PROCID so; "+0", " 0" are not rank 0 */
	if (!s || !*s || strspn(s, "0123456789") != strlen(s))
		return false;
	if (!parse_u64(s, &v) || v > (uint64_t)max || (s[0] == '0' && s[1]))
		return false;
	*out = (long)v;
	return true;
}

struct proc_stat {
	char state;
	long ppid;
	unsigned long long utime, stime, start;
};

/* /proc/PID/stat: the fields after the command name (which may hold ')' and spaces). */
static int read_stat(pid_t pid, struct proc_stat *st)
{
	char path[64];
	struct strbuf sb = STRBUF_INIT;
	int ret = -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (fsroot_read(fsroot_host, path, &sb, STAT_CAP, NULL) != READ_OK)
		goto out;
	const char *p = strrchr(sb.buf, ')');
	if (!p)
		goto out;
	unsigned long long f[20];
	char state;
	long ppid;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
	 * cutime cstime priority nice threads itreal starttime */
	if (sscanf(p + 1, " %c %ld %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
			  "%llu %llu %llu %llu %llu",
		   &state, &ppid, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8],
		   &f[9], &f[10], &f[11], &f[12], &f[13], &f[14], &f[15], &f[16], &f[17]) != 20)
		goto out;
	st->state = state;
	st->ppid = ppid;
	st->utime = f[9];
	st->stime = f[10];
	st->start = f[17];
	ret = 0;
out:
	strbuf_release(&sb);
	return ret;
}

struct candidate {
	pid_t pid;
	long ppid, rank, local_rank;
	unsigned long long start;
	char *ring_dir;
};

/* Is pid this very program (vigil itself, another vigil stacks)? */
static bool is_vigil(pid_t pid, const char *self_exe)
{
	char path[64];
	struct strbuf target = STRBUF_INIT;
	bool same;
	if (pid == getpid())
		return true;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	same = *self_exe && fsroot_readlink(fsroot_host, path, &target, false) == 0 &&
	       !strcmp(target.buf, self_exe);
	strbuf_release(&target);
	return same;
}

/*
 * The uids of /proc/PID/status ("Uid:\treal\teffective\tsaved\tfs"); false when unreadable.
 * The owner of /proc/PID is not used: a process that is not dumpable shows as root's there.
 */
static bool read_uids(pid_t pid, long uids[4])
{
	char path[64];
	struct strbuf sb = STRBUF_INIT;
	bool ok = false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (fsroot_read(fsroot_host, path, &sb, 16384, NULL) == READ_OK) {
		const char *u = strstr(sb.buf, "\nUid:");
		ok = u && sscanf(u + 5, "%ld %ld %ld %ld", &uids[0], &uids[1], &uids[2],
				 &uids[3]) == 4;
	}
	strbuf_release(&sb);
	return ok;
}

/*
 * Slurm's cgroup of a job step, in a /proc/PID/cgroup line's path. cgroup v2 (Slurm's
 * cgroup/v2 plugin, doc/html/cgroup_v2.shtml): /system.slice/slurmstepd.scope/job_N/step_M/
 * user/task_T (a multiple-slurmd host: NODE_slurmstepd.scope); cgroup v1 (task/cgroup and
 * proctrack/cgroup, src/plugins/task/cgroup/task_cgroup_*.c: "%s/job_%u" then "%s/step_%u"
 * under "slurm/uid_%u", or step_batch, step_extern): /slurm/uid_U/job_N/step_M/task_T, one
 * line per hierarchy. Finds the first component pair "job_N/step_X"; *prefix_len is the
 * length of the path up to and including "job_N". False when there is none.
 */
static bool slurm_cg(const char *path, size_t len, const char **job, size_t *job_len,
		     const char **step, size_t *step_len, size_t *prefix_len)
{
	for (size_t i = 0; i + 5 <= len; i++) {
		if (path[i] != '/' || memcmp(path + i + 1, "job_", 4))
			continue;
		size_t j = i + 5, k;
		while (j < len && path[j] >= '0' && path[j] <= '9')
			j++;
		if (j == i + 5 || j + 6 > len || memcmp(path + j, "/step_", 6))
			continue;
		k = j + 6;
		while (k < len && path[k] != '/')
			k++;
		if (k == j + 6)
			continue;
		*job = path + i + 5;
		*job_len = j - (i + 5);
		*step = path + j + 6;
		*step_len = k - (j + 6);
		*prefix_len = j;
		return true;
	}
	return false;
}

/* A line of /proc/PID/cgroup: "ID:CONTROLLERS:PATH"; the path and the "ID:CONTROLLERS:" head. */
static bool cg_line(const char *l, size_t n, size_t *head, const char **path, size_t *plen)
{
	const char *c1 = memchr(l, ':', n);
	const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - l)) : NULL;
	if (!c2)
		return false;
	*head = (size_t)(c2 + 1 - l);
	*path = c2 + 1;
	*plen = n - *head;
	return true;
}

/*
 * A value another user chose (an environment entry, a cgroup name), quoted in plain ASCII:
 * every byte outside printable ASCII, and '\\', as \xNN, so no control byte and no Unicode bidi
 * control (U+202E...) reaches a terminal; at most max bytes of it, a cut marked "...". What it
 * should hold (digits, a cgroup path) is ASCII: nothing is lost.
 */
static void add_ascii_n(struct strbuf *sb, const char *s, size_t n, size_t max)
{
	for (size_t i = 0; i < n && i < max; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			strbuf_addch(sb, (char)c);
		else
			strbuf_addf(sb, "\\x%02x", c);
	}
	if (n > max)
		strbuf_addstr(sb, "...");
}

static void add_ascii(struct strbuf *sb, const char *s, size_t max)
{
	add_ascii_n(sb, s, strlen(s), max);
}

static void add_excerpt_n(struct strbuf *sb, const char *s, size_t n, size_t max)
{
	add_ascii_n(sb, s, n, max);
}

static bool str_is(const char *s, size_t n, const char *want)
{
	return strlen(want) == n && !memcmp(s, want, n);
}

/*
 * Is a process (its /proc/PID/cgroup in cg) in the job's step? own is vigil stacks' own
 * /proc/self/cgroup: it runs in a step of the same job (srun --overlap), so where Slurm keeps
 * steps in cgroups on this host its own lines name job_JOB, and the rank's line of each such
 * hierarchy must lie under the same job's step_STEP. Where vigil's own cgroup names no step of
 * the job (run by hand, or no cgroup plugin) a rank whose cgroup names another job or step is
 * still refused. NULL when it is in the step (or nothing can be checked), else why not.
 * *checked: a Slurm step cgroup was compared.
 */
const char *stacks_cgroup_why(const struct strbuf *own, const struct strbuf *cg, const char *job,
			      const char *step, bool *checked, struct strbuf *why)
{
	bool own_has = false;
	for (size_t i = 0; i < own->len;) {
		const char *l = own->buf + i, *nl = memchr(l, '\n', own->len - i);
		size_t n = nl ? (size_t)(nl - l) : own->len - i, head, plen, jl, sl, pl;
		const char *path, *j, *st;
		i += n + 1;
		if (!cg_line(l, n, &head, &path, &plen) ||
		    !slurm_cg(path, plen, &j, &jl, &st, &sl, &pl) || !str_is(j, jl, job))
			continue;
		own_has = true;
		*checked = true;
		/* the rank's line of this hierarchy */
		bool found = false, under = false;
		for (size_t x = 0; x < cg->len && !found;) {
			const char *m = cg->buf + x, *mnl = memchr(m, '\n', cg->len - x);
			size_t mn = mnl ? (size_t)(mnl - m) : cg->len - x, mh, mpl;
			const char *mp;
			x += mn + 1;
			if (!cg_line(m, mn, &mh, &mp, &mpl) || mh != head || memcmp(m, l, head))
				continue;
			found = true;
			/* PREFIX/step_STEP, then the end or a '/' */
			size_t sn = strlen(step);
			under = mpl >= pl + 6 + sn && !memcmp(mp, path, pl) &&
				!memcmp(mp + pl, "/step_", 6) && !memcmp(mp + pl + 6, step, sn) &&
				(mpl == pl + 6 + sn || mp[pl + 6 + sn] == '/');
			if (!under) {
				strbuf_addstr(why, "its cgroup '");
				add_excerpt_n(why, mp, mpl, 120);
				strbuf_addstr(why, "' is not under the step's '");
				add_excerpt_n(why, path, pl, 100);
				strbuf_addf(why, "/step_%s'", step);
			}
		}
		if (!found)
			strbuf_addstr(why, "it is in no cgroup of the step's hierarchy");
		if (why->len)
			return why->buf;
	}
	if (own_has)
		return NULL;
	/* no step cgroup of our own to compare with: a rank in another job's or step's is out */
	for (size_t i = 0; i < cg->len;) {
		const char *l = cg->buf + i, *nl = memchr(l, '\n', cg->len - i);
		size_t n = nl ? (size_t)(nl - l) : cg->len - i, head, plen, jl, sl, pl;
		const char *path, *j, *st;
		i += n + 1;
		if (!cg_line(l, n, &head, &path, &plen) ||
		    !slurm_cg(path, plen, &j, &jl, &st, &sl, &pl))
			continue;
		*checked = true;
		if (!str_is(j, jl, job) || !str_is(st, sl, step)) {
			strbuf_addstr(why, "its cgroup '");
			add_excerpt_n(why, path, plen, 120);
			strbuf_addstr(why, "' is another job's or step's");
			return why->buf;
		}
	}
	return NULL;
}

/* Name a process that claims the attempt but is not one of its ranks. */
static void ignore_proc(struct stacks_result *r, const struct stacks_options *o, long pid,
			long uid, const char *fmt, ...) PRINTF_LIKE(5, 6);
static void ignore_proc(struct stacks_result *r, const struct stacks_options *o, long pid,
			long uid, const char *fmt, ...)
{
	struct strbuf m = STRBUF_INIT;
	va_list ap;
	strbuf_addf(&m, "ignored pid %ld (uid ", pid);
	if (uid >= 0)
		strbuf_addf(&m, "%ld", uid);
	else
		strbuf_addstr(&m, "unknown");
	if (strncmp(fmt, "its RANK", 8))
		strbuf_addf(&m, "): not of job %s step %s: ", o->job,
			    o->step ? o->step : "(unknown)");
	else
		strbuf_addstr(&m, "): ");
	va_start(ap, fmt);
	strbuf_vaddf(&m, fmt, ap);
	va_end(ap);
	if (r->ignored.nr < 256)
		strlist_add_nodup(&r->ignored, strbuf_detach(&m, NULL));
	strbuf_release(&m);
}

static int find_ranks(struct stacks_result *r, const struct stacks_options *o,
		      struct strbuf *err)
{
	struct strlist procs = STRLIST_INIT;
	struct strbuf env = STRBUF_INIT, self = STRBUF_INIT, own_cg = STRBUF_INIT,
		      cg = STRBUF_INIT, why = STRBUF_INIT;
	struct candidate *c = NULL;
	size_t nc = 0, alloc = 0, want = dir_len(o->attempt_dir);
	if (fsroot_list(fsroot_host, "/proc", &procs, err) != 0)
		return -1;
	fsroot_readlink(fsroot_host, "/proc/self/exe", &self, false);
	fsroot_read(fsroot_host, "/proc/self/cgroup", &own_cg, 65536, NULL);
	for (size_t i = 0; i < procs.nr; i++) {
		long pid;
		char path[64];
		struct proc_stat st0, st;
		if (!parse_long(procs.items[i], 1L << 30, &pid) || pid < 1)
			continue;
		/* its start time before and after: a pid reused meanwhile is not the one read */
		if (read_stat((pid_t)pid, &st0) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
		strbuf_reset(&env);
		/* a process that ended, or one we may not read: not ours to report */
		if (fsroot_read(fsroot_host, path, &env, STACKS_ENVIRON_MAX, NULL) < 0)
			continue;
		const char *dir = env_value(&env, "VIGIL_ATTEMPT_DIR");
		if (!dir || dir_len(dir) != want || memcmp(dir, o->attempt_dir, want))
			continue;
		long rank, local = -1;
		const char *rs = env_value(&env, "RANK");
		if (!rs)
			continue; /* srun, the task's shell before its exec: no rank yet */
		if (is_vigil((pid_t)pid, self.buf))
			continue;
		/*
		 * A process of the job (issue 17): any user can put VIGIL_ATTEMPT_DIR and RANK in
		 * an environment. The job's uid (all four ids), its job and step by the
		 * environment Slurm gave it, and its step's cgroup where Slurm keeps one.
		 */
		long uids[4];
		if (!read_uids((pid_t)pid, uids)) {
			ignore_proc(r, o, pid, -1, "its uid cannot be read");
			continue;
		}
		if (uids[0] != (long)o->uid || uids[1] != (long)o->uid || uids[2] != (long)o->uid ||
		    uids[3] != (long)o->uid) {
			ignore_proc(r, o, pid, uids[0] != (long)o->uid ? uids[0] : uids[1],
				    "not the job's uid %ld", (long)o->uid);
			continue;
		}
		const char *ej = env_value(&env, "SLURM_JOB_ID");
		const char *es = env_value(&env, "SLURM_STEP_ID");
		if (!ej || strcmp(ej, o->job)) {
			strbuf_reset(&why);
			add_ascii(&why, ej ? ej : "", 24);
			ignore_proc(r, o, pid, uids[0], ej ? "its SLURM_JOB_ID is '%s'" :
				    "it has no SLURM_JOB_ID%s", why.buf);
			continue;
		}
		if (o->step && (!es || strcmp(es, o->step))) {
			strbuf_reset(&why);
			add_ascii(&why, es ? es : "", 24);
			ignore_proc(r, o, pid, uids[0], es ? "its SLURM_STEP_ID is '%s'" :
				    "it has no SLURM_STEP_ID%s", why.buf);
			continue;
		}
		/* a task that slurmd started for another node name is that node's rank (several
		 * node names on one machine: slurmd's multiple-slurmd set-up, a test bed); asked
		 * of the job's uid, job and step, so that another user's claimant is still named,
		 * and before the cgroup (another node's step cgroup is not this one's) */
		const char *node = env_value(&env, "SLURMD_NODENAME");
		if (o->host && *o->host && node && strcmp(node, o->host))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cgroup", pid);
		strbuf_reset(&cg);
		strbuf_reset(&why);
		/* unreadable reads as in no cgroup: where Slurm keeps steps in cgroups, not a rank */
		if (fsroot_read(fsroot_host, path, &cg, 65536, NULL) != READ_OK)
			strbuf_reset(&cg);
		if (o->step) {
			bool checked = false;
			const char *no = stacks_cgroup_why(&own_cg, &cg, o->job, o->step, &checked, &why);
			if (no) {
				ignore_proc(r, o, pid, uids[0], "%s", no);
				continue;
			}
			r->cgroup_checked |= checked;
		}
		if (read_stat((pid_t)pid, &st) < 0 || st.start != st0.start)
			continue; /* it ended, or its pid is another process's now */
		if (!parse_long(rs, 1L << 24, &rank)) {
			struct strbuf q = STRBUF_INIT;
			add_ascii(&q, rs, 32);
			struct strbuf m = STRBUF_INIT;
			strbuf_addf(&m, "process %ld has RANK '%s', not a rank: ignored", pid, q.buf);
			strlist_add_nodup(&r->errors, strbuf_detach(&m, NULL));
			ignore_proc(r, o, pid, uids[0], "its RANK '%s' is not a rank", q.buf);
			strbuf_release(&q);
			continue;
		}
		if (!parse_long(env_value(&env, "LOCAL_RANK"), 1L << 24, &local))
			local = -1;
		/* the NCCL flight recorder's ring, where it loads the plugin */
		const char *plugin = env_value(&env, "NCCL_PROFILER_PLUGIN");
		const char *rdir = env_value(&env, "VIGIL_NCCL_RING_DIR");
		char *ring_dir = plugin && *plugin ? xstrdup(rdir && *rdir ? rdir : "/dev/shm") : NULL;
		ALLOC_GROW(c, nc + 1, alloc);
		c[nc++] = (struct candidate){ (pid_t)pid, st.ppid, rank, local, st.start, ring_dir };
	}
	/*
	 * A rank's own children (DataLoader workers, forked or spawned) carry its environment too:
	 * the rank is the topmost process of that rank, the one whose parent is not of it.
	 */
	for (size_t i = 0; i < nc; i++) {
		bool child = false;
		for (size_t j = 0; j < nc && !child; j++)
			child = j != i && c[j].pid == c[i].ppid && c[j].rank == c[i].rank;
		if (child)
			continue;
		if (r->nr >= STACKS_RANKS_MAX) {
			strlist_add(&r->errors, "more than 1024 ranks on this host: the rest ignored");
			break;
		}
		ALLOC_GROW(r->ranks, r->nr + 1, r->alloc);
		struct stacks_rank *k = &r->ranks[r->nr++];
		memset(k, 0, sizeof(*k));
		k->rank = c[i].rank;
		k->local_rank = c[i].local_rank;
		k->pid = c[i].pid;
		k->start_time = c[i].start;
		k->ring_dir = c[i].ring_dir;
		c[i].ring_dir = NULL;
	}
	for (size_t i = 0; i < nc; i++)
		free(c[i].ring_dir);
	/* sorted by rank, then pid */
	for (size_t i = 1; i < r->nr; i++)
		for (size_t j = i; j > 0 && (r->ranks[j - 1].rank > r->ranks[j].rank ||
					     (r->ranks[j - 1].rank == r->ranks[j].rank &&
					      r->ranks[j - 1].pid > r->ranks[j].pid));
		     j--) {
			struct stacks_rank t = r->ranks[j];
			r->ranks[j] = r->ranks[j - 1];
			r->ranks[j - 1] = t;
		}
	/*
	 * Two topmost processes of the job claiming one rank: which one is the rank cannot be
	 * told, so neither's evidence counts (doubt, never evidence).
	 */
	for (size_t i = 0; i < r->nr;) {
		size_t j = i + 1;
		while (j < r->nr && r->ranks[j].rank == r->ranks[i].rank)
			j++;
		if (j - i > 1) {
			struct strbuf d = STRBUF_INIT;
			strbuf_addf(&d, "rank %ld is claimed by %zu processes of the job (pids ",
				    r->ranks[i].rank, j - i);
			for (size_t x = i; x < j && x < i + 8; x++)
				strbuf_addf(&d, "%s%d", x > i ? ", " : "", (int)r->ranks[x].pid);
			strbuf_addstr(&d, j - i > 8 ? ", ...)" : ")");
			strbuf_addstr(&d, ": its evidence is unknown");
			for (size_t x = i; x < j; x++)
				r->ranks[x].doubt = xstrdup(d.buf);
			strbuf_release(&d);
		}
		i = j;
	}
	free(c);
	strlist_release(&procs);
	strbuf_release(&env);
	strbuf_release(&self);
	strbuf_release(&own_cg);
	strbuf_release(&cg);
	strbuf_release(&why);
	return 0;
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
	if (read_stat(k->pid, st) < 0 || st->start != k->start_time) {
		k->gone = true;
		rank_error(k, "the process ended while vigil looked");
		return false;
	}
	return true;
}

static void sample(struct stacks_result *r, const struct stacks_options *o)
{
	long tick = sysconf(_SC_CLK_TCK);
	for (unsigned s = 0; s < o->samples; s++) {
		if (s)
			sleep_ms(o->interval_ms);
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
		sleep_ms(POLL_MS);
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
	if (find_ranks(r, &opt, err) < 0)
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

static void json_strlist(struct json_writer *w, const char *key, const struct strlist *l)
{
	json_key(w, key);
	json_open_array(w);
	for (size_t i = 0; i < l->nr; i++)
		json_string(w, l->items[i]);
	json_close_array(w);
}

static void json_str_or_null(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	if (s)
		json_string(w, s);
	else
		json_null(w);
}

void stacks_write_json(const struct stacks_result *r, struct strbuf *out)
{
	static const char *const names[] = { "R", "S", "D", "T", "Z", "other" };
	struct json_writer w;
	json_writer_init(&w, out, false);
	json_open_top(&w);
	json_key(&w, "host");
	json_string(&w, r->host ? r->host : "");
	json_key(&w, "attempt_dir");
	json_string(&w, r->attempt_dir ? r->attempt_dir : "");
	json_str_or_null(&w, "eu_stack", r->eu_stack);
	json_key(&w, "job");
	json_string(&w, r->job ? r->job : "");
	json_str_or_null(&w, "step", r->step);
	json_key(&w, "uid");
	json_int(&w, r->uid);
	json_key(&w, "cgroup_checked");
	json_bool(&w, r->cgroup_checked);
	json_strlist(&w, "ignored", &r->ignored);
	json_key(&w, "ranks");
	json_open_array(&w);
	for (size_t i = 0; i < r->nr; i++) {
		const struct stacks_rank *k = &r->ranks[i];
		json_open_object(&w);
		json_key(&w, "rank");
		json_int(&w, k->rank);
		json_key(&w, "local_rank");
		if (k->local_rank >= 0)
			json_int(&w, k->local_rank);
		else
			json_null(&w);
		json_key(&w, "pid");
		json_int(&w, k->pid);
		json_key(&w, "samples");
		json_uint(&w, k->samples);
		json_key(&w, "states");
		json_open_object(&w);
		for (size_t s = 0; s < STACKS_NSTATES; s++) {
			json_key(&w, names[s]);
			json_uint(&w, k->states[s]);
		}
		json_close_object(&w);
		json_key(&w, "cpu_s");
		json_double(&w, k->cpu_s);
		json_str_or_null(&w, "wchan", k->wchan);
		json_str_or_null(&w, "py_stack", k->py_stack);
		json_str_or_null(&w, "native_stack", k->native_stack);
		json_str_or_null(&w, "nccl_ring", k->nccl_ring);
		json_str_or_null(&w, "doubt", k->doubt);
		json_strlist(&w, "errors", &k->errors);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_strlist(&w, "errors", &r->errors);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

static void indent(struct strbuf *out, const char *text)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		strbuf_addstr(out, "    ");
		strbuf_add(out, p, n);
		strbuf_addch(out, '\n');
		p += n + (nl ? 1 : 0);
	}
}

void stacks_write_text(const struct stacks_result *r, struct strbuf *out)
{
	strbuf_addstr(out, "host ");
	strbuf_add_clean(out, r->host ? r->host : "");
	strbuf_addstr(out, ", attempt ");
	strbuf_add_clean(out, r->attempt_dir ? r->attempt_dir : "");
	strbuf_addch(out, '\n');
	if (!r->nr)
		strbuf_addstr(out, "no rank of this attempt runs on this host\n");
	for (size_t i = 0; i < r->nr; i++) {
		const struct stacks_rank *k = &r->ranks[i];
		strbuf_addf(out, "\nrank %ld", k->rank);
		if (k->local_rank >= 0)
			strbuf_addf(out, " (local %ld)", k->local_rank);
		strbuf_addf(out, ", pid %d: %u samples R %u S %u D %u T %u Z %u, cpu %.2f s",
			    (int)k->pid, k->samples, k->states[STACKS_R], k->states[STACKS_S],
			    k->states[STACKS_D], k->states[STACKS_T], k->states[STACKS_Z], k->cpu_s);
		if (k->wchan)
			strbuf_addf(out, ", waiting in %s", k->wchan);
		strbuf_addch(out, '\n');
		if (k->doubt)
			strbuf_addf(out, "  doubt: %s\n", k->doubt);
		for (size_t e = 0; e < k->errors.nr; e++)
			strbuf_addf(out, "  %s\n", k->errors.items[e]);
		if (k->py_stack) {
			strbuf_addstr(out, "  Python stack:\n");
			indent(out, k->py_stack);
		}
		if (k->native_stack) {
			strbuf_addstr(out, "  native stack:\n");
			indent(out, k->native_stack);
		}
	}
	if (!r->step)
		strbuf_addstr(out, "the attempt's step is not known: its ranks are doubt\n");
	for (size_t e = 0; e < r->ignored.nr; e++)
		strbuf_addf(out, "%s\n", r->ignored.items[e]);
	for (size_t e = 0; e < r->errors.nr; e++)
		strbuf_addf(out, "%s\n", r->errors.items[e]);
}
