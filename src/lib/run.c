/* run.c: child processes from an argv or a function, with a deadline (see run.h). */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

void child_init(struct child *c)
{
	memset(c, 0, sizeof(*c));
	strbuf_init(&c->out, 0);
	strbuf_init(&c->err, 0);
}

void child_release(struct child *c)
{
	strbuf_release(&c->out);
	strbuf_release(&c->err);
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

static void child_side(struct child *c, int in[2], int out[2], int err[2], int report)
{
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 ||
	    dup2(c->merge_stderr ? out[1] : err[1], 2) < 0)
		_exit(127);
	close_pair(in);
	close_pair(out);
	close_pair(err);
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
		int code = c->fn(c->fn_arg, 1);
		fflush(NULL);
		_exit(code & 0xff);
	}
	execvp(c->argv[0], (char *const *)c->argv);
	int e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/*
 * Reap a killed child, but not forever: one stuck in uninterruptible sleep (a hung NFS mount, a
 * sysfs read in the kernel) cannot die until the kernel lets go. Leave it to init rather than
 * hang the caller; the deadline promise matters more than a zombie.
 */
static void reap_bounded(pid_t pid, int *status)
{
	for (int i = 0; i < 100; i++) {
		pid_t w = waitpid(pid, status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return;
		usleep(1000);
	}
}

int child_run(struct child *c, struct strbuf *errmsg)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, rep[2] = { -1, -1 };
	size_t cap = c->out_cap ? c->out_cap : (1u << 20);
	uint64_t start = mono_ms();
	int ret = -1;
	pid_t pid;

	c->exited = c->signaled = c->timed_out = false;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
	    pipe2(rep, O_CLOEXEC)) {
		error_set(errmsg, "cannot create pipe: %s", strerror(errno));
		goto out;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		error_set(errmsg, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		close(rep[0]);
		child_side(c, in, out, err, rep[1]);
	}
	setpgid(pid, pid); /* also here, so the group exists before any kill */
	close(in[0]);
	in[0] = -1;
	close(out[1]);
	out[1] = -1;
	close(err[1]);
	err[1] = -1;
	close(rep[1]);
	rep[1] = -1;

	/* An exec failure arrives as an errno on the report pipe, which closes on exec. */
	int child_errno = 0;
	ssize_t got;
	do
		got = read(rep[0], &child_errno, sizeof(child_errno));
	while (got < 0 && errno == EINTR);
	if (got == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		error_set(errmsg, "cannot run '%s': %s", c->argv ? c->argv[0] : "(function)",
			  strerror(child_errno));
		goto out;
	}

	size_t in_off = 0;
	if (!c->stdin_data || !c->stdin_len) {
		close(in[1]);
		in[1] = -1;
	} else {
		fcntl(in[1], F_SETFL, O_NONBLOCK);
	}
	for (;;) {
		struct pollfd pfd[3];
		int n = 0, idx_out = -1, idx_err = -1, idx_in = -1;
		if (out[0] >= 0) {
			idx_out = n;
			pfd[n++] = (struct pollfd){ out[0], POLLIN, 0 };
		}
		if (err[0] >= 0) {
			idx_err = n;
			pfd[n++] = (struct pollfd){ err[0], POLLIN, 0 };
		}
		if (in[1] >= 0) {
			idx_in = n;
			pfd[n++] = (struct pollfd){ in[1], POLLOUT, 0 };
		}
		if (!n)
			break;
		int wait_ms = -1;
		if (c->timeout_ms) {
			uint64_t el = mono_ms() - start;
			if (el >= c->timeout_ms) {
				c->timed_out = true;
				break;
			}
			wait_ms = (int)(c->timeout_ms - el);
		}
		int r = poll(pfd, (nfds_t)n, wait_ms);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		char buf[8192];
		int *fds[2] = { &out[0], &err[0] };
		struct strbuf *sbs[2] = { &c->out, &c->err };
		int idx[2] = { idx_out, idx_err };
		for (int k = 0; k < 2; k++) {
			if (idx[k] < 0 || !(pfd[idx[k]].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t m = read(*fds[k], buf, sizeof(buf));
			if (m > 0) {
				size_t room = sbs[k]->len < cap ? cap - sbs[k]->len : 0;
				strbuf_add(sbs[k], buf, (size_t)m < room ? (size_t)m : room);
				if ((size_t)m > room)
					sbs[k]->truncated = true;
			} else if (m == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(*fds[k]);
				*fds[k] = -1;
			}
		}
		if (idx_in >= 0 && (pfd[idx_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t m = write(in[1], c->stdin_data + in_off, c->stdin_len - in_off);
			if (m > 0)
				in_off += (size_t)m;
			if (m < 0 && errno != EAGAIN && errno != EINTR)
				in_off = c->stdin_len;
			if (in_off >= c->stdin_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
	}

	int status = 0;
	if (c->timed_out) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		reap_bounded(pid, &status);
	} else {
		/* Pipes closed: the child is exiting, or has handed its pipes away. Wait out the
		 * deadline for it, then kill. */
		for (;;) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid)
				break;
			if (w < 0 && errno != EINTR)
				break;
			if (c->timeout_ms && mono_ms() - start >= c->timeout_ms) {
				c->timed_out = true;
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				reap_bounded(pid, &status);
				break;
			}
			usleep(1000);
		}
	}
	/* Whatever the child left in its group (daemons aside) goes with it. */
	kill(-pid, SIGKILL);
	if (!c->timed_out) {
		if (WIFEXITED(status)) {
			c->exited = true;
			c->exit_code = WEXITSTATUS(status);
		} else if (WIFSIGNALED(status)) {
			c->signaled = true;
			c->term_signal = WTERMSIG(status);
		}
	}
	ret = 0;
out:
	c->duration_ms = mono_ms() - start;
	close_pair(in);
	close_pair(out);
	close_pair(err);
	close_pair(rep);
	return ret;
}

void child_describe(const struct child *c, struct strbuf *out)
{
	if (c->timed_out)
		strbuf_addf(out, "timed out after %u ms", c->timeout_ms);
	else if (c->signaled)
		strbuf_addf(out, "killed by signal %d (%s)", c->term_signal,
			    strsignal(c->term_signal));
	else if (c->exited)
		strbuf_addf(out, "exited with %d", c->exit_code);
	else
		strbuf_addstr(out, "ended in an unknown way");
}
