/* run.c: child processes from an argv or a function, with a deadline, in steps (see run.h). */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RESULT_CAP_DEFAULT (8u << 20)

extern char **environ;

/*
 * Every running child of this process, by pid (its process group has the same number), so that a
 * signal handler can kill them all (run_kill_all()). Slots change only with TERM, INT and HUP
 * blocked (child_start(), try_reap()), so a handler of those never sees a half-made entry; a
 * slot holds a pid only until that child is reaped, so its number cannot have been reused.
 */
#define RUN_REGISTRY 4096
static volatile pid_t registry[RUN_REGISTRY];
static volatile sig_atomic_t registry_lost; /* children past RUN_REGISTRY (not killed by name) */

static void block_stops(sigset_t *old)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGHUP);
	sigprocmask(SIG_BLOCK, &s, old);
}

static void registry_add(pid_t pid)
{
	for (size_t i = 0; i < RUN_REGISTRY; i++)
		if (!registry[i]) {
			registry[i] = pid;
			return;
		}
	registry_lost = 1;
}

static void registry_del(pid_t pid)
{
	for (size_t i = 0; i < RUN_REGISTRY; i++)
		if (registry[i] == pid)
			registry[i] = 0;
}

static uint64_t raw_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The pids in /proc/self/task/TID/children (async-signal-safe: no allocation, no stdio). */
static size_t read_children(pid_t *out, size_t max)
{
	char path[64] = "/proc/self/task/", buf[4096];
	size_t n = 0, len = strlen(path);
	char num[16];
	size_t k = 0;
	for (long v = (long)getpid(); v; v /= 10)
		num[k++] = (char)('0' + v % 10);
	while (k)
		path[len++] = num[--k];
	memcpy(path + len, "/children", sizeof("/children"));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return 0;
	long v = 0;
	for (ssize_t i = 0; i <= got && n < max; i++) {
		if (i < got && buf[i] >= '0' && buf[i] <= '9') {
			v = v * 10 + (buf[i] - '0');
		} else if (v) {
			out[n++] = (pid_t)v;
			v = 0;
		}
	}
	return n;
}

static void kill_group_and_pid(pid_t pid)
{
	pid_t pg = getpgid(pid);
	if (pg > 0 && pg != getpgrp())
		kill(-pg, SIGKILL);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

void run_signal_all(int sig)
{
	for (size_t i = 0; i < RUN_REGISTRY; i++) {
		pid_t p = registry[i];
		if (p > 0) {
			kill(-p, sig);
			kill(p, sig);
		}
	}
}

void run_kill_all(unsigned wait_ms)
{
	/* Orphans of the children killed here (a helper's own helper, in a group or session of
	 * its own) come to us rather than to init, so they are found and killed too. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/*
	 * TERM first, for a short grace: a forked check that is writing its state file removes
	 * its temporary (the handler it inherited), a program may tidy up. Then KILL, for all.
	 */
	uint64_t grace_end = raw_mono_ms() + wait_ms / 5;
	bool any = false;
	for (size_t i = 0; i < RUN_REGISTRY; i++) {
		pid_t p = registry[i];
		if (p > 0) {
			kill(-p, SIGTERM);
			kill(p, SIGTERM);
			any = true;
		}
	}
	while (any && raw_mono_ms() < grace_end) {
		any = false;
		for (size_t i = 0; i < RUN_REGISTRY; i++) {
			pid_t p = registry[i];
			if (p <= 0)
				continue;
			if (waitpid(p, NULL, WNOHANG) == p)
				registry[i] = 0; /* reaped: its number is free, never to be killed */
			else
				any = true;
		}
		struct timespec ts = { 0, 2 * 1000000L };
		if (any)
			nanosleep(&ts, NULL);
	}
	for (size_t i = 0; i < RUN_REGISTRY; i++) {
		pid_t p = registry[i];
		if (p > 0)
			kill_group_and_pid(p);
	}
	uint64_t end = raw_mono_ms() + wait_ms;
	for (;;) {
		pid_t kids[256];
		size_t n = read_children(kids, ARRAY_SIZE(kids));
		for (size_t i = 0; i < n; i++)
			kill_group_and_pid(kids[i]);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		errno = 0;
		if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			return; /* none left: every one reaped */
		if (raw_mono_ms() >= end)
			return; /* one held by the kernel (D) dies when it is let go; we do not wait */
		struct timespec ts = { 0, 5 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

void child_init(struct child *c)
{
	memset(c, 0, sizeof(*c));
	strbuf_init(&c->out, 0);
	strbuf_init(&c->err, 0);
	strbuf_init(&c->result, 0);
	c->fd_in = c->fd_out = c->fd_err = c->fd_res = c->fd_pid = -1;
	c->pid = -1;
}

void child_release(struct child *c)
{
	if (c->running)
		child_finish(c);
	strbuf_release(&c->out);
	strbuf_release(&c->err);
	strbuf_release(&c->result);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void close_pair(int p[2])
{
	close_fd(&p[0]);
	close_fd(&p[1]);
}

static uint64_t now_ms(const struct child *c)
{
	return os_mono_ms(c->ops, c->ops_ctx);
}

static void child_side(struct child *c, int in[2], int out[2], int err[2], int res[2], int report,
		       const sigset_t *mask, pid_t parent)
{
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	/* a forked check or gather part outliving a vigil killed with SIGKILL (which no handler
	 * sees) would run on with no deadline: it dies with its parent. Programs (a supervised
	 * training step) are left their own lifetime. */
	if (c->fn) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127); /* the parent died before the line above */
	}
	/* the parent's children are not this child's to kill: its registry starts empty */
	for (size_t i = 0; i < RUN_REGISTRY; i++)
		registry[i] = 0;
	sigprocmask(SIG_SETMASK, mask, NULL);
	if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 ||
	    dup2(c->merge_stderr ? out[1] : err[1], 2) < 0)
		_exit(127);
	close_pair(in);
	close_pair(out);
	close_pair(err);
	close_fd(&res[0]);
	if (c->dir && chdir(c->dir) < 0) {
		int e = errno;
		if (write(report, &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	for (size_t i = 0; c->env_add && c->env_add[i]; i++)
		putenv((char *)c->env_add[i]);
	if (c->fn) {
		close(report);
		int code = c->fn(c->fn_arg, res[1] >= 0 ? res[1] : 1);
		fflush(NULL);
		_exit(code & 0xff);
	}
	/* a program gets the dispositions a program expects (vigil ignores SIGXFSZ to fail a
	 * write cleanly; an ignored signal would stay ignored across exec) */
	signal(SIGXFSZ, SIG_DFL);
	execvp(c->argv[0], (char *const *)c->argv);
	int e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0) {
		fcntl((int)fd, F_SETFD, FD_CLOEXEC);
		return (int)fd;
	}
#endif
	return -1; /* an old kernel: the exit is noticed by polling (child_wait_ms) */
}

int child_start(struct child *c, struct strbuf *errmsg)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, res[2] = { -1, -1 },
	    rep[2] = { -1, -1 };
	pid_t pid;

	c->exited = c->signaled = c->timed_out = c->done = c->reaped = c->status_lost = false;
	c->hung[0] = '\0';
	c->timeout_fired_ms = 0;
	c->in_off = 0;
	c->started = now_ms(c);
	if (!c->argv && !c->fn)
		return error_set(errmsg, "nothing to run");
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
	    pipe2(rep, O_CLOEXEC) || (c->fn && c->result_pipe && pipe2(res, O_CLOEXEC))) {
		error_set(errmsg, "cannot create a pipe: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL);
	/* TERM, INT and HUP wait until the child is in the registry (a handler kills it there) */
	sigset_t mask;
	pid_t self = getpid();
	block_stops(&mask);
	pid = os_spawn(c->ops, c->ops_ctx);
	if (pid < 0) {
		int e = errno;
		sigprocmask(SIG_SETMASK, &mask, NULL);
		error_set(errmsg, "cannot fork: %s", strerror(e));
		goto fail;
	}
	if (pid == 0) {
		close(rep[0]);
		child_side(c, in, out, err, res, rep[1], &mask, self);
	}
	setpgid(pid, pid); /* also here, so the group exists before any kill */
	registry_add(pid);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&err[1]);
	close_fd(&res[1]);
	close_fd(&rep[1]);

	/* An exec failure arrives as an errno on the report pipe, which closes on exec. */
	int child_errno = 0;
	ssize_t got;
	do
		got = read(rep[0], &child_errno, sizeof(child_errno));
	while (got < 0 && errno == EINTR);
	close_fd(&rep[0]);
	if (got == (ssize_t)sizeof(child_errno)) {
		block_stops(&mask);
		os_wait(c->ops, c->ops_ctx, pid, NULL, 0);
		registry_del(pid);
		sigprocmask(SIG_SETMASK, &mask, NULL);
		error_set(errmsg, "cannot run '%s': %s", c->argv ? c->argv[0] : "(function)",
			  strerror(child_errno));
		goto fail;
	}

	c->pid = pid;
	c->fd_out = out[0];
	c->fd_err = err[0];
	c->fd_res = res[0];
	c->fd_pid = pidfd_of(pid);
	fcntl(c->fd_out, F_SETFL, O_NONBLOCK);
	fcntl(c->fd_err, F_SETFL, O_NONBLOCK);
	if (c->fd_res >= 0)
		fcntl(c->fd_res, F_SETFL, O_NONBLOCK);
	if (!c->stdin_data || !c->stdin_len) {
		close_fd(&in[1]);
	} else {
		c->fd_in = in[1];
		fcntl(c->fd_in, F_SETFL, O_NONBLOCK);
	}
	c->deadline = c->timeout_ms ? c->started + c->timeout_ms : 0;
	if (c->deadline_ms && (!c->deadline || c->deadline_ms < c->deadline))
		c->deadline = c->deadline_ms;
	c->running = true;
	return 0;
fail:
	close_pair(in);
	close_pair(out);
	close_pair(err);
	close_pair(res);
	close_pair(rep);
	c->duration_ms = now_ms(c) - c->started;
	return -1;
}

size_t child_pollfds(const struct child *c, struct pollfd *pfd)
{
	size_t n = 0;
	if (!c->running || c->done)
		return 0;
	if (c->fd_in >= 0)
		pfd[n++] = (struct pollfd){ c->fd_in, POLLOUT, 0 };
	const int fds[] = { c->fd_out, c->fd_err, c->fd_res };
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			pfd[n++] = (struct pollfd){ fds[i], POLLIN, 0 };
	if (c->fd_pid >= 0 && !c->reaped)
		pfd[n++] = (struct pollfd){ c->fd_pid, POLLIN, 0 };
	return n;
}

static bool pipes_open(const struct child *c)
{
	return c->fd_out >= 0 || c->fd_err >= 0 || c->fd_res >= 0;
}

int child_wait_ms(const struct child *c)
{
	if (!c->running || c->done)
		return 0;
	int wait = -1;
	if (c->deadline) {
		uint64_t now = now_ms(c);
		uint64_t left = c->deadline > now ? c->deadline - now : 0;
		wait = left > INT32_MAX ? INT32_MAX : (int)left;
	}
	/* Without a pidfd an exit is only seen by asking; once the pipes are closed there is
	 * nothing else to wake us, so ask every few milliseconds. */
	if (c->fd_pid < 0 && !pipes_open(c) && (wait < 0 || wait > 5))
		wait = 5;
	return wait;
}

/* Read what one pipe has (once, or until it is empty when drain): into sb up to cap, or to the
 * child's on_output when it streams (stream 1 or 2; 0 for the result pipe, never streamed). */
static void pump_to(struct child *c, int stream, int *fd, struct strbuf *sb, size_t cap,
		    bool drain)
{
	char buf[16384];
	for (;;) {
		ssize_t m = read(*fd, buf, sizeof(buf));
		if (m > 0 && stream && c->on_output) {
			c->on_output(c->on_output_arg, stream, buf, (size_t)m);
			if (drain)
				continue;
			return;
		}
		if (m > 0) {
			size_t room = sb->len < cap ? cap - sb->len : 0;
			strbuf_add(sb, buf, (size_t)m < room ? (size_t)m : room);
			if ((size_t)m > room)
				sb->truncated = true;
			if (drain)
				continue;
			return;
		}
		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0 && errno == EAGAIN)
			return;
		close_fd(fd); /* end of file, or an error that will not go away */
		return;
	}
}

static size_t out_cap(const struct child *c)
{
	return c->out_cap ? c->out_cap : (1u << 20);
}

static void pump_all(struct child *c, bool drain)
{
	if (c->fd_out >= 0)
		pump_to(c, 1, &c->fd_out, &c->out, out_cap(c), drain);
	if (c->fd_err >= 0)
		pump_to(c, 2, &c->fd_err, &c->err, out_cap(c), drain);
	if (c->fd_res >= 0)
		pump_to(c, 0, &c->fd_res, &c->result,
			c->result_cap ? c->result_cap : RESULT_CAP_DEFAULT, drain);
}

static bool try_reap(struct child *c)
{
	if (c->reaped)
		return true;
	pid_t w;
	sigset_t mask;
	block_stops(&mask);
	do
		w = os_wait(c->ops, c->ops_ctx, c->pid, &c->status, WNOHANG);
	while (w < 0 && errno == EINTR);
	if (w == c->pid) {
		c->reaped = true;
	} else if (w < 0 && errno == ECHILD) {
		/* reaped elsewhere (SIGCHLD ignored): gone, but how it ended is not known */
		c->reaped = c->status_lost = true;
	}
	if (c->reaped)
		registry_del(c->pid);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	return c->reaped;
}

/* "uninterruptible sleep (D) in 'nfs_wait_bit_killable'": the child's state from /proc, read
 * at its deadline, so a timeout says whether the kernel held it or it was simply slow. These are
 * vigil's own children, so the real /proc, never a --root fixture. */
static void note_hung(struct child *c)
{
	char path[64], buf[512], wchan[96] = "";
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)c->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return;
	char st = p[2];
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)c->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, wchan, sizeof(wchan) - 1);
		close(fd);
		wchan[n > 0 ? n : 0] = '\0';
		for (char *q = wchan; *q; q++)
			if (!(*q == '_' || *q == '.' || (*q >= 'a' && *q <= 'z') ||
			      (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')))
				*q = '\0';
		if (!strcmp(wchan, "0"))
			wchan[0] = '\0';
	}
	const char *what = st == 'D'   ? "in uninterruptible sleep (D: held by the kernel)"
			   : st == 'R' ? "running"
			   : st == 'S' ? "sleeping"
			   : st == 'T' || st == 't' ? "stopped"
			   : st == 'Z' ? "a zombie"
				       : NULL;
	if (!what)
		return;
	snprintf(c->hung, sizeof(c->hung), "it was %s%s%s%s", what, *wchan ? " in '" : "", wchan,
		 *wchan ? "'" : "");
}

bool child_handle(struct child *c, const struct pollfd *pfd, size_t n)
{
	if (!c->running || c->done)
		return true;
	for (size_t i = 0; i < n; i++) {
		if (!pfd[i].revents || pfd[i].fd < 0)
			continue;
		if (pfd[i].fd == c->fd_in) {
			ssize_t m = write(c->fd_in, c->stdin_data + c->in_off,
					  c->stdin_len - c->in_off);
			if (m > 0)
				c->in_off += (size_t)m;
			if (m < 0 && errno != EAGAIN && errno != EINTR)
				c->in_off = c->stdin_len;
			if (c->in_off >= c->stdin_len)
				close_fd(&c->fd_in);
		} else if (pfd[i].fd == c->fd_out) {
			pump_to(c, 1, &c->fd_out, &c->out, out_cap(c), false);
		} else if (pfd[i].fd == c->fd_err) {
			pump_to(c, 2, &c->fd_err, &c->err, out_cap(c), false);
		} else if (pfd[i].fd == c->fd_res) {
			pump_to(c, 0, &c->fd_res, &c->result,
				c->result_cap ? c->result_cap : RESULT_CAP_DEFAULT, false);
		}
	}
	/* The pidfd says the child exited; without one, closed pipes are the hint. */
	bool ask = c->fd_pid < 0 || !pipes_open(c);
	for (size_t i = 0; i < n && !ask; i++)
		ask = pfd[i].fd == c->fd_pid && pfd[i].revents;
	if (ask && try_reap(c)) {
		/* What it wrote before exiting is in the pipes; what its group left behind goes
		 * with it, so a background helper holding a pipe cannot keep us waiting. */
		child_kill(c, SIGKILL);
		pump_all(c, true);
		c->done = true;
		return true;
	}
	if (c->deadline && now_ms(c) >= c->deadline) {
		c->timed_out = true;
		c->timeout_fired_ms = (unsigned)(c->deadline - c->started);
		note_hung(c);
		child_kill(c, SIGKILL);
		c->done = true;
		return true;
	}
	return false;
}

int child_poll(struct child *c, int wait_ms)
{
	struct pollfd pfd[CHILD_POLLFDS];
	if (!c->running || c->done)
		return 1;
	size_t n = child_pollfds(c, pfd);
	int w = child_wait_ms(c);
	if (w < 0 || (wait_ms >= 0 && wait_ms < w))
		w = wait_ms;
	int r = poll(pfd, (nfds_t)n, w);
	if (r < 0 && errno != EINTR)
		n = 0; /* nothing is ready; the deadline still counts */
	if (r <= 0)
		for (size_t i = 0; i < n; i++)
			pfd[i].revents = 0;
	return child_handle(c, pfd, n) ? 1 : 0;
}

void child_kill(struct child *c, int sig)
{
	if (c->pid <= 0)
		return;
	os_kill(c->ops, c->ops_ctx, -c->pid, sig);
	if (!c->reaped)
		os_kill(c->ops, c->ops_ctx, c->pid, sig);
}

/*
 * Reap a killed child, but not forever: one stuck in uninterruptible sleep (a hung NFS mount, a
 * sysfs read in the kernel) cannot die until the kernel lets go. Leave it rather than hang the
 * caller; the deadline promise matters more than a zombie.
 */
static void reap_bounded(struct child *c)
{
	for (int i = 0; i < 100 && !try_reap(c); i++)
		usleep(1000);
}

void child_finish(struct child *c)
{
	if (!c->running)
		return;
	if (!c->done || c->timed_out) {
		child_kill(c, SIGKILL);
		reap_bounded(c);
	}
	/* Whatever the child left in its group (daemons aside) goes with it. */
	child_kill(c, SIGKILL);
	if (c->reaped && !c->timed_out && !c->status_lost) {
		if (WIFEXITED(c->status)) {
			c->exited = true;
			c->exit_code = WEXITSTATUS(c->status);
		} else if (WIFSIGNALED(c->status)) {
			c->signaled = true;
			c->term_signal = WTERMSIG(c->status);
		}
	}
	close_fd(&c->fd_in);
	close_fd(&c->fd_out);
	close_fd(&c->fd_err);
	close_fd(&c->fd_res);
	close_fd(&c->fd_pid);
	c->duration_ms = now_ms(c) - c->started;
	c->running = false;
	c->done = true;
}

int child_run(struct child *c, struct strbuf *err)
{
	if (child_start(c, err) < 0)
		return -1;
	while (!child_poll(c, -1))
		;
	child_finish(c);
	return 0;
}

void child_describe(const struct child *c, struct strbuf *out)
{
	if (c->timed_out) {
		strbuf_addf(out, "timed out after %.1f s", c->timeout_fired_ms / 1000.0);
		if (c->timeout_name)
			strbuf_addf(out, " (%s)", c->timeout_name);
		if (c->hung[0])
			strbuf_addf(out, "; %s", c->hung);
	} else if (c->signaled) {
		strbuf_addf(out, "killed by signal %d (%s)", c->term_signal,
			    strsignal(c->term_signal));
	} else if (c->exited) {
		strbuf_addf(out, "exited with %d", c->exit_code);
	} else {
		strbuf_addstr(out, "ended in an unknown way");
	}
}
