/*
 * test_agent_notify.c: the agent under systemd's Type=notify, through the binary, with a fake
 * NOTIFY_SOCKET (a datagram socket the test binds; libsystemd's sd_notify() sends to it): READY=1
 * after the first cycle with the verdict as STATUS=, WATCHDOG=1 every half WATCHDOG_USEC while the
 * loop sleeps and none while a cycle hangs (a storage probe on a FIFO that nobody opens),
 * RELOADING=1 and READY=1 around SIGHUP, STOPPING=1 last.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/agent/agent.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct note {
	uint64_t at_ms;
	char *text;
};

struct notes {
	int fd;
	struct note items[256];
	size_t nr;
};

static void need_libsystemd(void)
{
	void *dl = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		SKIP("no libsystemd.so.0 here (Debian libsystemd0): sd_notify cannot be loaded");
	dlclose(dl);
}

static void notes_bind(struct notes *n, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	CHECK(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	n->nr = 0;
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(n->fd >= 0);
	CHECK(bind(n->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
}

/* Take what arrives within ms; returns the number taken. */
static size_t notes_take(struct notes *n, unsigned ms)
{
	size_t got = 0;
	struct pollfd p = { .fd = n->fd, .events = POLLIN };
	while (poll(&p, 1, (int)ms) == 1) {
		char buf[4096];
		ssize_t r = recv(n->fd, buf, sizeof(buf) - 1, 0);
		if (r < 0)
			break;
		buf[r] = 0;
		if (n->nr < ARRAY_SIZE(n->items)) {
			n->items[n->nr].at_ms = mono_ms();
			n->items[n->nr++].text = xstrdup(buf);
			got++;
		}
		ms = 0;
	}
	return got;
}

static pid_t spawn(const char *const *args, const char *sock, const char *watchdog_usec,
		   const char *errpath)
{
	const char *argv[40];
	size_t k = 0;
	argv[k++] = test_vigil_bin();
	for (size_t i = 0; args[i] && k < ARRAY_SIZE(argv) - 1; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		setenv("NOTIFY_SOCKET", sock, 1);
		unsetenv("WATCHDOG_PID");
		unsetenv("JOURNAL_STREAM");
		if (watchdog_usec)
			setenv("WATCHDOG_USEC", watchdog_usec, 1);
		else
			unsetenv("WATCHDOG_USEC");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Collect until the agent exits (or secs pass); its exit status. */
static int notes_until_exit(struct notes *n, pid_t pid, unsigned secs)
{
	int st = 0;
	uint64_t end = mono_ms() + secs * 1000ull;
	while (mono_ms() < end) {
		notes_take(n, 50);
		if (waitpid(pid, &st, WNOHANG) == pid) {
			notes_take(n, 200);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static ssize_t notes_find(const struct notes *n, size_t from, const char *prefix)
{
	for (size_t i = from; i < n->nr; i++)
		if (starts_with(n->items[i].text, prefix))
			return (ssize_t)i;
	return -1;
}

static void notes_release(struct notes *n)
{
	for (size_t i = 0; i < n->nr; i++)
		free(n->items[i].text);
	n->nr = 0;
	close(n->fd);
}

static char *notes_dump(const struct notes *n)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < n->nr; i++) {
		strbuf_addf(&sb, "+%llu ms: ",
			    (unsigned long long)(n->items[i].at_ms - n->items[0].at_ms));
		strbuf_add_clean(&sb, n->items[i].text);
		strbuf_addch(&sb, '\n');
	}
	return strbuf_detach(&sb, NULL);
}

TEST_TIMEOUT(agent_notify_ready_watchdog_and_a_hung_cycle_stops_the_pings, 60)
{
	need_libsystemd();
	const char *root = test_tmpdir();
	struct strbuf fifo = STRBUF_INIT, state = STRBUF_INIT, sock = STRBUF_INIT,
		      errf = STRBUF_INIT;
	struct notes n;
	test_write(root, "proc/mounts", "/dev/sda1 / ext4 rw 0 0\nsrv:/e /data nfs rw 0 0\n");
	test_write(root, "fs.snapshot", "/ 1000 500 500 0 0\n/data 1000 500 500 0 0\n");
	test_mkdir(root, "data");
	/* a probe that blocks (nobody opens the FIFO's other end) holds each cycle 2 s */
	strbuf_addf(&fifo, "%s/data/probe.fifo", root);
	CHECK_INT(mkfifo(fifo.buf, 0644), 0);
	strbuf_addf(&state, "%s/state", root);
	strbuf_addf(&sock, "%s/notify.sock", root);
	strbuf_addf(&errf, "%s/stderr", root);
	notes_bind(&n, sock.buf);
	const char *args[] = { "agent", "--only", "storage", "--root", root, "--state-dir",
			       state.buf, "--listen", "off", "--socket", "off", "--interval", "4",
			       "--jitter", "0", "--cycles", "2", "-c", "storage.probe=/data", "-c",
			       "storage.probe-file=probe.fifo", "-c", "storage.probe-timeout=2",
			       NULL };
	/* pings every 200 ms */
	pid_t pid = spawn(args, sock.buf, "400000", errf.buf);
	int code = notes_until_exit(&n, pid, 40);
	char *dump = notes_dump(&n);
	CHECK_MSG(code == 0, "exit %d; notifications:\n%s", code, dump);

	/* READY=1 comes with the first verdict, before any ping */
	CHECK_MSG(n.nr > 3, "notifications:\n%s", dump);
	CHECK_MSG(starts_with(n.items[0].text, "READY=1\nSTATUS=unhealthy: storage: "),
		  "first: %s", dump);
	CHECK_CONTAINS(n.items[0].text, "timed out after 2 s");
	CHECK_STR(n.items[n.nr - 1].text, "STOPPING=1");

	/* the pings while the loop sleeps 2 s: every 200 ms (and one as the sleep ends, just
	 * before the next cycle), no more */
	size_t pings = 0, regular = 0;
	ssize_t last = -1;
	for (size_t i = 0; i < n.nr; i++) {
		if (strcmp(n.items[i].text, "WATCHDOG=1"))
			continue;
		pings++;
		if (last >= 0) {
			uint64_t gap = n.items[i].at_ms - n.items[last].at_ms;
			regular += gap >= 150 && gap <= 400;
		}
		last = (ssize_t)i;
	}
	CHECK_MSG(pings >= 6 && pings <= 14, "%zu pings:\n%s", pings, dump);
	CHECK_MSG(regular >= 5, "%zu regular gaps:\n%s", regular, dump);
	/* the second cycle hung 2 s: no ping in it, so systemd's watchdog would have fired */
	ssize_t second = notes_find(&n, 1, "STATUS=");
	CHECK_MSG(second > 0, "no second status:\n%s", dump);
	CHECK_STR(n.items[second - 1].text, "WATCHDOG=1");
	uint64_t hung = n.items[second].at_ms - n.items[second - 1].at_ms;
	CHECK_MSG(hung >= 1800, "pinged %llu ms before the hung cycle ended:\n%s",
		  (unsigned long long)hung, dump);
	/* and the agent said its watchdog is shorter than a cycle may take */
	struct strbuf log = STRBUF_INIT;
	CHECK(read_file_bounded(errf.buf, &log, 1 << 20, NULL) >= 0);
	CHECK_CONTAINS(log.buf, "the systemd watchdog (0.4 s) is not well above agent.timeout");
	free(dump);
	notes_release(&n);
	strbuf_release(&log);
	strbuf_release(&fifo);
	strbuf_release(&state);
	strbuf_release(&sock);
	strbuf_release(&errf);
}

TEST_TIMEOUT(agent_notify_reloading_ready_and_stopping, 60)
{
	need_libsystemd();
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, sock = STRBUF_INIT,
		      errf = STRBUF_INIT;
	struct notes n;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&sock, "%s/notify.sock", dir);
	strbuf_addf(&errf, "%s/stderr", dir);
	test_write(dir, "root/dev/kmsg", TEST_KMSG_CLEAN);
	notes_bind(&n, sock.buf);
	const char *args[] = { "agent", "--only", "kernel", "--root", root.buf, "--state-dir",
			       state.buf, "--listen", "off", "--socket", "off", "--interval", "60",
			       NULL };
	pid_t pid = spawn(args, sock.buf, NULL, errf.buf);
	for (int i = 0; i < 100 && notes_find(&n, 0, "READY=1") < 0; i++)
		notes_take(&n, 100);
	char *dump = notes_dump(&n);
	CHECK_MSG(n.nr == 1 && starts_with(n.items[0].text, "READY=1\nSTATUS=healthy"),
		  "notifications:\n%s", dump);
	free(dump);
	kill(pid, SIGHUP);
	/* the reload, then the cycle it runs at once */
	for (int i = 0; i < 100 && notes_find(&n, 1, "STATUS=") < 0; i++)
		notes_take(&n, 100);
	kill(pid, SIGTERM);
	int code = notes_until_exit(&n, pid, 20);
	dump = notes_dump(&n);
	CHECK_MSG(code == 0, "exit %d; notifications:\n%s", code, dump);
	CHECK_MSG(n.nr == 5, "notifications:\n%s", dump);
	CHECK_STR(n.items[1].text, "RELOADING=1");
	CHECK_STR(n.items[2].text, "READY=1");
	CHECK_MSG(starts_with(n.items[3].text, "STATUS=healthy"), "%s", dump);
	CHECK_STR(n.items[4].text, "STOPPING=1");
	/* no WATCHDOG_USEC: no pings */
	CHECK_MSG(notes_find(&n, 0, "WATCHDOG=1") < 0, "%s", dump);
	free(dump);
	notes_release(&n);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&sock);
	strbuf_release(&errf);
}

/* The loop itself, in virtual time: agent.alive runs after each cycle and every alive_every_ms
 * of the sleep, and never while a cycle runs however long it takes. */
struct vtime {
	uint64_t mono;
	double wall;
	uint64_t cycle_ms[4];
	unsigned cycles;
	uint64_t pings[64];
	size_t nr_pings;
};

static double vt_wall(void *c) { return ((struct vtime *)c)->wall; }
static uint64_t vt_mono(void *c) { return ((struct vtime *)c)->mono; }
static bool vt_sleep(void *c, uint64_t ms)
{
	struct vtime *v = c;
	v->mono += ms;
	v->wall += (double)ms / 1000.0;
	return true;
}
static uint32_t vt_random(void *c) { UNUSED(c); return 1u << 31; }
static double vt_cpu(void *c) { UNUSED(c); return 0; }
static const struct agent_ops vt_ops = { vt_wall, vt_mono, vt_sleep, vt_random, vt_cpu, NULL,
					  NULL, NULL, NULL };

static int vt_collect(void *arg, struct report *rep, struct strbuf *err)
{
	struct vtime *v = arg;
	UNUSED(err);
	report_init(rep, "vhost", v->wall);
	struct check_result *r = report_add(rep, "kernel");
	result_add(r, STATUS_OK, ACTION_NONE, "summary", "", "no Xid");
	result_finish(r);
	report_finish(rep);
	uint64_t ms = v->cycle_ms[v->cycles++ % ARRAY_SIZE(v->cycle_ms)];
	v->mono += ms;
	v->wall += (double)ms / 1000.0;
	return 0;
}

static void vt_alive(void *arg)
{
	struct vtime *v = arg;
	if (v->nr_pings < ARRAY_SIZE(v->pings))
		v->pings[v->nr_pings++] = v->mono;
}

TEST(agent_alive_pings_between_cycles_only_in_virtual_time)
{
	struct vtime v = { .mono = 1000, .wall = 1.8e9, .cycle_ms = { 100, 25000, 100, 100 } };
	struct agent_settings set = { .interval_s = 10, .jitter_s = 0, .host = "vhost",
				      .max_cycles = 3 };
	struct agent a;
	agent_init(&a, &set, &vt_ops, &v);
	a.collect = vt_collect;
	a.collect_arg = &v;
	a.alive = vt_alive;
	a.alive_arg = &v;
	a.alive_every_ms = 3000;
	agent_loop(&a);
	/* cycle 1 (0.1 s), then 9.9 s of sleep pinged every 3 s: 1.1, 4.1, 7.1, 10.1 s (and as it
	 * ends, 11.0 s); cycle 2 takes 25 s: nothing until it ends at 36.0 s, then no sleep left
	 * (the interval is spent) but one ping; cycle 3, the last, is not followed by a sleep */
	const uint64_t want[] = { 1100, 4100, 7100, 10100, 11000, 36000 };
	CHECK_INT(v.nr_pings, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		CHECK_MSG(v.pings[i] == want[i], "ping %zu at %llu ms, expected %llu", i,
			  (unsigned long long)v.pings[i], (unsigned long long)want[i]);
	CHECK_INT(v.cycles, 3);
	agent_release(&a);
}
