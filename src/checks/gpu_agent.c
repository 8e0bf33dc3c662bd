/* gpu_agent.c: the gpu reading from the agent's socket (see gpu_agent.h). */
#include "gpu_agent.h"
#include "../gpu/snapshot.h"
#include "../sys/fsroot.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define ROOT_LINE "# vigil-agent-root "

static bool trusted_uid(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* Connect to path after checking what it is; the fd, or -1 with *why. */
static int agent_connect(const char *path, struct strbuf *why)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	if (strlen(path) >= sizeof(sa.sun_path))
		return error_set(why, "socket path '%s' is too long", path);
	if (lstat(path, &st) < 0)
		return error_set(why, errno == ENOENT ? "no agent socket at '%s'"
						       : "cannot stat '%s': %s", path, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return error_set(why, "'%s' is a symbolic link: not followed", path);
	if (!S_ISSOCK(st.st_mode))
		return error_set(why, "'%s' is not a socket", path);
	if (!trusted_uid(st.st_uid))
		return error_set(why, "'%s' is owned by uid %u, neither root nor this user", path,
				 (unsigned)st.st_uid);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return error_set(why, "cannot make a socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return error_set(why, e == ECONNREFUSED ? "'%s' is stale: no agent listens there"
							: "cannot connect to '%s': %s",
				 path, strerror(e));
	}
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !trusted_uid(cred.uid)) {
		close(fd);
		return error_set(why, "the agent at '%s' runs as uid %u, neither root nor this user",
				 path, (unsigned)cred.uid);
	}
	return fd;
}

/* Send the request and read the whole answer (HTTP/1.0: until EOF) by the deadline. */
static int agent_ask(int fd, bool skip_counters, struct strbuf *in, struct strbuf *why)
{
	const char *req = skip_counters ? "GET /gpu-reading?counters=0 HTTP/1.0\r\n\r\n"
					: "GET /gpu-reading HTTP/1.0\r\n\r\n";
	uint64_t deadline = mono_ms() + GPU_AGENT_DEADLINE_MS;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		return error_set(why, "cannot send to the agent: %s", strerror(errno));
	for (;;) {
		uint64_t now = mono_ms();
		if (now >= deadline)
			return error_set(why, "the agent gave no answer within %u ms",
					 GPU_AGENT_DEADLINE_MS);
		struct pollfd p = { fd, POLLIN, 0 };
		int r = poll(&p, 1, (int)(deadline - now));
		if (r < 0 && errno != EINTR)
			return error_set(why, "poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		char buf[16384];
		ssize_t got = read(fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return error_set(why, "cannot read the agent's answer: %s", strerror(errno));
		if (!got)
			return 0;
		if (in->len + (size_t)got > GPU_AGENT_ANSWER_CAP)
			return error_set(why, "the agent's answer is larger than %u bytes",
					 GPU_AGENT_ANSWER_CAP);
		strbuf_add(in, buf, (size_t)got);
	}
}

int gpu_agent_reading(const struct check_ctx *ctx, bool skip_counters, struct nvml_host *h,
		      struct strbuf *why)
{
	struct strbuf in = STRBUF_INIT, say = STRBUF_INIT;
	int ret = -1;
	if (!ctx->agent_socket || !*ctx->agent_socket)
		return error_set(why, "no agent socket configured");
	int fd = agent_connect(ctx->agent_socket, why);
	if (fd < 0)
		return -1;
	if (agent_ask(fd, skip_counters, &in, why) < 0)
		goto out;
	const char *body = strstr(in.buf, "\r\n\r\n");
	if (!body || !starts_with(in.buf, "HTTP/1.")) {
		error_set(why, "the agent answered something else than HTTP");
		goto out;
	}
	body += 4;
	if (strncmp(in.buf + 8, " 200 ", 5)) {
		strbuf_add_excerpt(&say, body, 160);
		strbuf_rtrim(&say);
		error_set(why, "the agent has no reading: %s", say.buf);
		goto out;
	}
	/* "# vigil-agent-root DIR\n": the agent must have read what this check reads */
	const char *nl = strchr(body, '\n');
	size_t rl = strlen(ROOT_LINE);
	if (!nl || strncmp(body, ROOT_LINE, rl) ||
	    (size_t)(nl - body) - rl != strlen(fsroot_dir(ctx->root)) ||
	    strncmp(body + rl, fsroot_dir(ctx->root), (size_t)(nl - body) - rl)) {
		error_set(why, "the agent reads another root than this check");
		goto out;
	}
	if (nvml_snapshot_parse(nl + 1, in.len - (size_t)(nl + 1 - in.buf), h, &say) < 0) {
		error_set(why, "the agent's reading does not parse: %s", say.buf);
		goto out;
	}
	free(h->library);
	h->library = xstrdup("the agent's gpu worker");
	ret = 0;
out:
	close(fd);
	strbuf_release(&in);
	strbuf_release(&say);
	return ret;
}
