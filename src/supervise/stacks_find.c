/*
 * stacks_find.c: the ranks of one attempt on this host, found in /proc (see stacks.h: a rank is
 * a process of the job, never merely one whose environment names the attempt): their
 * environment, their uids and their Slurm cgroup.
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

#define STAT_CAP 4096

void stacks_sleep_ms(unsigned ms)
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


/* /proc/PID/stat: the fields after the command name (which may hold ')' and spaces). */
int stacks_read_stat(pid_t pid, struct proc_stat *st)
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

int stacks_find_ranks(struct stacks_result *r, const struct stacks_options *o,
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
		if (stacks_read_stat((pid_t)pid, &st0) < 0)
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
		 * A process of the job (docs/SECURITY.md): any user can put VIGIL_ATTEMPT_DIR and RANK in
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
		if (stacks_read_stat((pid_t)pid, &st) < 0 || st.start != st0.start)
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
		k->gpu = -1;
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
