/* runner.c: one forked child per check, with deadlines (see runner.h). */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_OUTPUT_CAP (8u << 20)

void check_run_inline(const struct check_ctx *ctx, const struct check_def *def,
		      struct check_result *res)
{
	struct strbuf err = STRBUF_INIT;
	uint64_t t0 = mono_ms();
	if (def->run(ctx, res, &err) < 0) {
		free(res->error);
		res->error = xstrdup(err.len ? err.buf : "the check could not run");
		result_finish(res);
		if (res->status < STATUS_UNKNOWN)
			res->status = STATUS_UNKNOWN;
	} else {
		result_finish(res);
	}
	res->duration_ms = mono_ms() - t0;
	strbuf_release(&err);
}

struct slot {
	pid_t pid;
	int fd;
	uint64_t deadline;
	struct strbuf out;
	bool done;
};

static void child_main(const struct check_ctx *ctx, const struct check_def *def, int fd)
{
	struct check_result res;
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;
	check_result_init(&res, def->name);
	check_run_inline(ctx, def, &res);
	json_writer_init(&w, &out, false);
	result_to_json(&w, &res);
	const char *p = out.buf;
	size_t len = out.len;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1);
		p += n;
		len -= (size_t)n;
	}
	_exit(0);
}

static void set_unknown(struct check_result *res, const char *fmt, const char *arg, unsigned ms)
{
	struct strbuf sb = STRBUF_INIT;
	if (arg)
		strbuf_addf(&sb, fmt, arg);
	else
		strbuf_addf(&sb, fmt, ms / 1000.0);
	free(res->error);
	res->error = strbuf_detach(&sb, NULL);
	res->status = STATUS_UNKNOWN;
}

/* Reap without blocking for long: a child in D state cannot be waited for. */
static int reap(pid_t pid, int *status)
{
	for (int i = 0; i < 50; i++) {
		pid_t w = waitpid(pid, status, WNOHANG);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
		usleep(2000);
	}
	return -1;
}

static void finish_slot(struct slot *s, struct check_result *res, const struct run_item *it,
			bool timed_out, uint64_t started)
{
	int status = 0;
	if (timed_out) {
		kill(-s->pid, SIGKILL);
		kill(s->pid, SIGKILL);
		reap(s->pid, &status);
		set_unknown(res, "timed out after %.1f s (a read may be stuck in the kernel)", NULL,
			    it->timeout_ms);
		res->duration_ms = mono_ms() - started;
		goto out;
	}
	if (reap(s->pid, &status) < 0) {
		kill(-s->pid, SIGKILL);
		kill(s->pid, SIGKILL);
		reap(s->pid, &status);
	}
	kill(-s->pid, SIGKILL); /* helpers the check left behind */
	if (WIFSIGNALED(status)) {
		set_unknown(res, "the check crashed (%s)", strsignal(WTERMSIG(status)), 0);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !s->out.len) {
		set_unknown(res, "the check ended without a result%s", "", 0);
	} else {
		struct strbuf err = STRBUF_INIT;
		struct json_value *v = json_parse(s->out.buf, s->out.len, &err);
		if (!v || result_from_json(v, res, &err) < 0)
			set_unknown(res, "the check returned a bad result: %s", err.buf, 0);
		json_free(v);
		strbuf_release(&err);
	}
	if (!res->duration_ms)
		res->duration_ms = mono_ms() - started;
out:
	close(s->fd);
	s->fd = -1;
	s->done = true;
}

void checks_run(const struct check_ctx *ctx, const struct run_item *items, size_t n,
		unsigned total_timeout_ms, struct report *rep)
{
	struct slot *slots = xcalloc(n ? n : 1, sizeof(*slots));
	size_t first = rep->nr;
	uint64_t start = mono_ms();
	for (size_t i = 0; i < n; i++)
		report_add(rep, items[i].def->name);
	fflush(NULL);
	for (size_t i = 0; i < n; i++) {
		struct slot *s = &slots[i];
		int p[2];
		strbuf_init(&s->out, CHILD_OUTPUT_CAP);
		unsigned t = items[i].timeout_ms;
		if (total_timeout_ms && t > total_timeout_ms)
			t = total_timeout_ms;
		s->deadline = start + t;
		if (pipe2(p, O_CLOEXEC) < 0) {
			set_unknown(&rep->results[first + i], "cannot create a pipe: %s",
				    strerror(errno), 0);
			s->done = true;
			s->fd = -1;
			continue;
		}
		s->pid = fork();
		if (s->pid < 0) {
			set_unknown(&rep->results[first + i], "cannot fork: %s", strerror(errno), 0);
			close(p[0]);
			close(p[1]);
			s->done = true;
			s->fd = -1;
			continue;
		}
		if (s->pid == 0) {
			struct check_ctx mine = *ctx;
			mine.timeout_ms = t;
			setpgid(0, 0);
			close(p[0]);
			child_main(&mine, items[i].def, p[1]);
		}
		setpgid(s->pid, s->pid);
		close(p[1]);
		s->fd = p[0];
	}
	struct pollfd *pfd = xcalloc(n ? n : 1, sizeof(*pfd));
	size_t *map = xcalloc(n ? n : 1, sizeof(*map));
	for (;;) {
		size_t m = 0;
		uint64_t now = mono_ms(), next = UINT64_MAX;
		for (size_t i = 0; i < n; i++) {
			struct slot *s = &slots[i];
			if (s->done)
				continue;
			if (now >= s->deadline) {
				finish_slot(s, &rep->results[first + i], &items[i], true, start);
				continue;
			}
			if (s->deadline < next)
				next = s->deadline;
			pfd[m] = (struct pollfd){ s->fd, POLLIN, 0 };
			map[m++] = i;
		}
		if (!m)
			break;
		int r = poll(pfd, (nfds_t)m, (int)(next - now));
		if (r <= 0)
			continue;
		char buf[16384];
		for (size_t k = 0; k < m; k++) {
			if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct slot *s = &slots[map[k]];
			ssize_t got = read(s->fd, buf, sizeof(buf));
			if (got > 0)
				strbuf_add(&s->out, buf, (size_t)got);
			else if (got == 0 || (errno != EINTR && errno != EAGAIN))
				finish_slot(s, &rep->results[first + map[k]], &items[map[k]], false,
					    start);
		}
	}
	for (size_t i = 0; i < n; i++)
		strbuf_release(&slots[i].out);
	free(pfd);
	free(map);
	free(slots);
}
