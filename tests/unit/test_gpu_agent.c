/*
 * test_gpu_agent.c: `vigil check` takes its NVML reading from the agent's gpu worker (GET
 * /gpu-reading on the agent's socket) when an agent serves the same root, with the verdict it
 * would give alone; with no agent, a stale socket, a socket of another owner or a link planted at
 * the socket's path, it reads NVML itself and says why ("source" and "agent_not_used" in each gpu
 * finding's details). Real binary, fake NVML, a fixture root.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"
#include "../../src/lib/strlist.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* Slurm says 8 GPUs, NVML and the bus show 7: unhealthy either way the reading comes. */
#define AGENT_SCENARIO "tests/scenarios/gpu-slurm-gres-7-of-8/root"

static pid_t spawn_agent(const char *root, const char *state, const char *errpath)
{
	const char *argv[] = { test_vigil_bin(), "agent", "--only", "gpu", "--root", root,
			       "--state-dir", state, "--interval", "60", "--listen", "off", NULL };
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int devnull = open("/dev/null", O_RDWR);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static void stop_agent(pid_t pid)
{
	int st;
	kill(pid, SIGTERM);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

static bool wait_socket(const char *path, unsigned ms)
{
	struct stat st;
	for (unsigned t = 0; t < ms; t += 50) {
		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			return true;
		usleep(50000);
	}
	return false;
}

/*
 * Run vigil check --only gpu on root with state; out: "CODE STATUS ACTION" lines (sorted), the
 * verdict, and what every finding says of its source (all the same, or "mixed") and why the
 * agent was not used (the first finding's).
 */
static void check_gpu(const char *root, const char *state, struct strlist *lines,
		      struct strbuf *verdict, struct strbuf *source, struct strbuf *why)
{
	const char *args[] = { "check", "--json", "--only", "gpu", "--root", root, "--state-dir",
			       state, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	struct json_value *v = test_parse_json(&c);
	strbuf_addstr(verdict, json_get_string(v, "verdict"));
	const struct json_value *checks = json_get(v, "checks");
	for (size_t i = 0; checks && i < checks->nr; i++) {
		const struct json_value *fs = json_get(checks->items[i], "findings");
		for (size_t j = 0; fs && j < fs->nr; j++) {
			const struct json_value *f = fs->items[j], *d = json_get(f, "details");
			struct strbuf l = STRBUF_INIT;
			strbuf_addf(&l, "%s %s %s", json_get_string(f, "code"),
				    json_get_string(f, "status"), json_get_string(f, "action"));
			strlist_add_nodup(lines, strbuf_detach(&l, NULL));
			const char *s = d ? json_get_string(d, "source") : NULL;
			if (!source->len)
				strbuf_addstr(source, s ? s : "(none)");
			else if (!s || strcmp(source->buf, s))
				strbuf_addstr(source, " mixed");
			const char *w = d ? json_get_string(d, "agent_not_used") : NULL;
			if (w && !why->len)
				strbuf_addstr(why, w);
		}
	}
	strlist_sort(lines);
	json_free(v);
	child_release(&c);
}

TEST_TIMEOUT(gpu_check_reading_from_agent, 120)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, errf = STRBUF_INIT,
		      sock = STRBUF_INIT, alone = STRBUF_INIT;
	struct strbuf v1 = STRBUF_INIT, s1 = STRBUF_INIT, w1 = STRBUF_INIT;
	struct strbuf v2 = STRBUF_INIT, s2 = STRBUF_INIT, w2 = STRBUF_INIT;
	struct strlist l1 = STRLIST_INIT, l2 = STRLIST_INIT;
	test_src_path(&root, AGENT_SCENARIO);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&alone, "%s/alone", dir);
	strbuf_addf(&errf, "%s/agent.err", dir);
	strbuf_addf(&sock, "%s/agent.sock", state.buf);
	pid_t pid = spawn_agent(root.buf, state.buf, errf.buf);
	CHECK_MSG(wait_socket(sock.buf, 15000), "the agent made no socket");

	check_gpu(root.buf, state.buf, &l1, &v1, &s1, &w1);
	check_gpu(root.buf, alone.buf, &l2, &v2, &s2, &w2);
	stop_agent(pid);
	CHECK_STR(s1.buf, "agent");
	CHECK_STR(w1.buf, "");
	CHECK_STR(s2.buf, "nvml");
	CHECK_CONTAINS(w2.buf, "no agent socket at ");
	/* the same verdict and findings either way */
	CHECK_STR(v1.buf, "unhealthy");
	CHECK_STR(v1.buf, v2.buf);
	CHECK_INT((int)l1.nr, (int)l2.nr);
	for (size_t i = 0; i < l1.nr && i < l2.nr; i++)
		CHECK_STR(l1.items[i], l2.items[i]);

	/* the agent gone, its socket left behind: stale, read NVML here, same verdict */
	struct strlist l3 = STRLIST_INIT;
	struct strbuf v3 = STRBUF_INIT, s3 = STRBUF_INIT, w3 = STRBUF_INIT;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock.buf);
	unlink(sock.buf);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(fd); /* bound, never listened: a stale socket file */
	check_gpu(root.buf, state.buf, &l3, &v3, &s3, &w3);
	CHECK_STR(s3.buf, "nvml");
	CHECK_CONTAINS(w3.buf, "is stale: no agent listens there");
	CHECK_STR(v3.buf, v2.buf);

	strlist_release(&l1);
	strlist_release(&l2);
	strlist_release(&l3);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&errf);
	strbuf_release(&sock);
	strbuf_release(&alone);
	strbuf_release(&v1);
	strbuf_release(&s1);
	strbuf_release(&w1);
	strbuf_release(&v2);
	strbuf_release(&s2);
	strbuf_release(&w2);
	strbuf_release(&v3);
	strbuf_release(&s3);
	strbuf_release(&w3);
}

/*
 * A link planted at the socket's path, to a live agent's socket: not followed (lstat), so the
 * check reads NVML itself; a socket file of another owner: refused the same way.
 */
TEST_TIMEOUT(gpu_check_agent_socket_untrusted, 120)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, other = STRBUF_INIT,
		      errf = STRBUF_INIT, real = STRBUF_INIT, planted = STRBUF_INIT;
	struct strbuf v = STRBUF_INIT, s = STRBUF_INIT, w = STRBUF_INIT;
	struct strlist l = STRLIST_INIT;
	test_src_path(&root, AGENT_SCENARIO);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&other, "%s/other", dir);
	strbuf_addf(&errf, "%s/agent.err", dir);
	strbuf_addf(&real, "%s/agent.sock", state.buf);
	strbuf_addf(&planted, "%s/agent.sock", other.buf);
	pid_t pid = spawn_agent(root.buf, state.buf, errf.buf);
	CHECK_MSG(wait_socket(real.buf, 15000), "the agent made no socket");
	CHECK(mkdir(other.buf, 0755) == 0);
	CHECK(symlink(real.buf, planted.buf) == 0);
	check_gpu(root.buf, other.buf, &l, &v, &s, &w);
	CHECK_STR(s.buf, "nvml");
	CHECK_CONTAINS(w.buf, "is a symbolic link: not followed");
	CHECK_STR(v.buf, "unhealthy");

	if (geteuid() == 0) {
		/* root may hand the socket file to another uid: then it is not trusted */
		strlist_release(&l);
		strbuf_reset(&v);
		strbuf_reset(&s);
		strbuf_reset(&w);
		CHECK(lchown(real.buf, 4242, 4242) == 0);
		check_gpu(root.buf, state.buf, &l, &v, &s, &w);
		CHECK_STR(s.buf, "nvml");
		CHECK_CONTAINS(w.buf, "is owned by uid 4242, neither root nor this user");
		CHECK_STR(v.buf, "unhealthy");
	}
	stop_agent(pid);
	strlist_release(&l);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&other);
	strbuf_release(&errf);
	strbuf_release(&real);
	strbuf_release(&planted);
	strbuf_release(&v);
	strbuf_release(&s);
	strbuf_release(&w);
}
