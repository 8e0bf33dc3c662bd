/*
 * test_agent.c: the agent in virtual time (interval, jitter, staleness, a full disk), a hanging
 * check through the real runner, the history across reboots, HTTP through libmicrohttpd, and the
 * 'vigil agent' / 'vigil check --cached' / '--npd' binaries. Prometheus itself is in
 * test_agent_e2e.c.
 */
#include "../harness.h"
#include "../../src/agent/agent.h"
#include "../../src/agent/cache.h"
#include "../../src/agent/http.h"
#include "../../src/agent/xidwatch.h"
#include "../../src/checks/runner.h"
#include "../../src/lib/fileio.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char *read_all(const char *path);

/* ---- virtual time ---- */

struct vclock {
	double wall;
	uint64_t mono;
	uint32_t seed;
	double cycle_cost_s; /* how long a collect takes in virtual time */
	bool fail_writes;
	size_t writes, failed_writes;
	double starts[256];
	size_t nr_starts;
	enum status next; /* what the fake collect reports */
};

static double v_wall(void *c) { return ((struct vclock *)c)->wall; }
static uint64_t v_mono(void *c) { return ((struct vclock *)c)->mono; }
static bool v_sleep(void *c, uint64_t ms)
{
	struct vclock *v = c;
	v->mono += ms;
	v->wall += (double)ms / 1000.0;
	return true;
}
static uint32_t v_random(void *c)
{
	struct vclock *v = c;
	v->seed = v->seed * 1664525u + 1013904223u;
	return v->seed;
}
static double v_cpu(void *c) { UNUSED(c); return 0; }
static int v_write(void *c, const char *path, const void *data, size_t len, struct strbuf *err)
{
	struct vclock *v = c;
	UNUSED(data);
	UNUSED(len);
	v->writes++;
	if (v->fail_writes) {
		v->failed_writes++;
		return error_set(err, "cannot write '%s': %s", path, strerror(ENOSPC));
	}
	return 0;
}
static const struct agent_ops vops = { v_wall, v_mono, v_sleep, v_random, v_cpu, v_write,
					NULL, NULL, NULL };

static int v_collect(void *arg, struct report *rep, struct strbuf *err)
{
	struct vclock *v = arg;
	UNUSED(err);
	if (v->nr_starts < ARRAY_SIZE(v->starts))
		v->starts[v->nr_starts++] = v->wall;
	report_init(rep, "vhost", v->wall);
	struct check_result *r = report_add(rep, "kernel");
	if (v->next == STATUS_FAIL)
		result_add(r, STATUS_FAIL, ACTION_REBOOT, "xid", "GPU 0000:9b:00.0",
			   "Xid 79 on GPU 0000:9b:00.0: GPU has fallen off the bus");
	else
		result_add(r, STATUS_OK, ACTION_NONE, "summary", "", "no Xid");
	result_finish(r);
	report_finish(rep);
	v->mono += (uint64_t)(v->cycle_cost_s * 1000);
	v->wall += v->cycle_cost_s;
	return 0;
}

static void vagent(struct agent *a, struct vclock *v, const char *state, unsigned cycles)
{
	struct agent_settings s = { .interval_s = 30, .jitter_s = 3, .state_dir = state,
				    .host = "vhost", .max_cycles = cycles };
	memset(v, 0, sizeof(*v));
	v->wall = 1.8e9;
	v->seed = 42;
	agent_init(a, &s, &vops, v);
	a->collect = v_collect;
	a->collect_arg = v;
}

TEST(agent_cycles_on_interval_with_jitter_in_virtual_time)
{
	struct agent a;
	struct vclock v;
	vagent(&a, &v, "/nonexistent-state", 200);
	v.cycle_cost_s = 2; /* a slow cycle eats into the interval, not onto it */
	agent_loop(&a);
	CHECK_INT(a.cycles, 200);
	CHECK_INT(v.nr_starts, 200);
	double min = 1e9, max = 0, sum = 0;
	for (size_t i = 1; i < v.nr_starts; i++) {
		double d = v.starts[i] - v.starts[i - 1];
		min = d < min ? d : min;
		max = d > max ? d : max;
		sum += d;
	}
	double mean = sum / (double)(v.nr_starts - 1);
	CHECK_MSG(min >= 27 - 1e-6 && max <= 33 + 1e-6, "gaps %.3f..%.3f outside 30+-3", min, max);
	CHECK_MSG(max - min > 3, "jitter too small: %.3f..%.3f", min, max);
	CHECK_MSG(mean > 29 && mean < 31, "mean gap %.3f", mean);
	/* two files a cycle (report; no history without a boot id) */
	CHECK_INT(v.writes, 200);
	agent_release(&a);
}

TEST(agent_result_grows_stale_and_is_then_unknown)
{
	struct agent a;
	struct vclock v;
	struct strbuf m = STRBUF_INIT, h = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	agent_metrics(&a, &m); /* before any cycle: unknown, never healthy */
	CHECK_CONTAINS(m.buf, "vigil_healthy 0\n");
	CHECK_CONTAINS(m.buf, "vigil_agent_result_stale 1\n");
	strbuf_reset(&m);
	agent_loop(&a);
	agent_metrics(&a, &m);
	CHECK_CONTAINS(m.buf, "vigil_healthy 1\n");
	CHECK_CONTAINS(m.buf, "vigil_agent_result_stale 0\n");
	agent_health(&a, &h);
	CHECK_CONTAINS(h.buf, "\"verdict\":\"healthy\"");
	test_keep_json_as("agent-health", h.buf, h.len);
	v.wall += 91; /* past 3 intervals */
	strbuf_reset(&m);
	strbuf_reset(&h);
	agent_metrics(&a, &m);
	agent_health(&a, &h);
	CHECK_CONTAINS(m.buf, "vigil_healthy 0\n");
	CHECK_CONTAINS(m.buf, "vigil_verdict{verdict=\"unknown\"} 1\n");
	CHECK_CONTAINS(m.buf, "vigil_agent_result_stale 1\n");
	CHECK_CONTAINS(h.buf, "\"verdict\":\"unknown\"");
	CHECK_CONTAINS(h.buf, "\"stale\":true");
	test_keep_json_as("agent-health", h.buf, h.len);
	CHECK_CONTAINS(h.buf, "91 s old (limit 90 s)");
	struct strbuf err = STRBUF_INIT;
	struct json_value *j = json_parse(h.buf, h.len, &err);
	CHECK_MSG(j, "/health is not JSON: %s", err.buf);
	CHECK_STR(json_get_string(json_get(j, "report"), "verdict"), "unknown");
	json_free(j);
	strbuf_release(&err);
	strbuf_release(&m);
	strbuf_release(&h);
	agent_release(&a);
}

TEST(agent_full_disk_is_counted_and_survived)
{
	struct agent a;
	struct vclock v;
	struct strbuf m = STRBUF_INIT;
	vagent(&a, &v, "/state", 3);
	a.set.prom_path = "/textfile/vigil.prom";
	a.set.boot_id = "boot-1";
	v.fail_writes = true;
	agent_loop(&a);
	CHECK_INT(a.cycles, 3);
	agent_metrics(&a, &m);
	CHECK_CONTAINS(m.buf, "vigil_agent_write_errors_total{file=\"report\"} 3\n");
	CHECK_CONTAINS(m.buf, "vigil_agent_write_errors_total{file=\"history\"} 3\n");
	CHECK_CONTAINS(m.buf, "vigil_agent_write_ok{file=\"report\"} 0\n");
	CHECK_CONTAINS(m.buf, "vigil_healthy 1\n"); /* the verdict is still served over HTTP */
	v.fail_writes = false;
	a.set.max_cycles = 1;
	agent_loop(&a);
	strbuf_reset(&m);
	agent_metrics(&a, &m);
	CHECK_CONTAINS(m.buf, "vigil_agent_write_ok{file=\"report\"} 1\n");
	CHECK_CONTAINS(m.buf, "vigil_agent_write_errors_total{file=\"report\"} 3\n");
	strbuf_release(&m);
	agent_release(&a);
}

/* rm -r of a directory of plain files (the agent's state directory) */
static void remove_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct strbuf f = STRBUF_INIT;
		strbuf_addf(&f, "%s/%s", path, e->d_name);
		unlink(f.buf);
		strbuf_release(&f);
	}
	if (d)
		closedir(d);
	CHECK_MSG(rmdir(path) == 0, "cannot remove '%s': %s", path, strerror(errno));
}

/* Someone deletes the state directory (and the textfile directory) under the running agent: the
 * next cycle makes them again and writes its files there. */
TEST(agent_recreates_a_deleted_state_directory)
{
	const char *dir = test_tmpdir();
	struct strbuf state = STRBUF_INIT, textdir = STRBUF_INIT, prom = STRBUF_INIT,
		      report = STRBUF_INIT, m = STRBUF_INIT;
	struct stat st;
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&textdir, "%s/textfile", dir);
	strbuf_addf(&prom, "%s/vigil.prom", textdir.buf);
	test_mkdir(dir, "state");
	test_mkdir(dir, "textfile");
	agent_cache_path(&report, state.buf);
	struct agent a;
	struct vclock v;
	struct agent_settings s = { .interval_s = 30, .state_dir = state.buf, .host = "vhost",
				    .prom_path = prom.buf, .boot_id = "boot-1", .max_cycles = 1 };
	memset(&v, 0, sizeof(v));
	agent_init(&a, &s, &agent_real_ops, NULL);
	a.collect = v_collect;
	a.collect_arg = &v;
	v.wall = wall_seconds();
	agent_loop(&a);
	CHECK(stat(report.buf, &st) == 0);
	remove_dir(state.buf);
	remove_dir(textdir.buf);
	v.next = STATUS_FAIL;
	agent_loop(&a);
	CHECK_MSG(stat(report.buf, &st) == 0, "'%s' was not written again", report.buf);
	char *r = read_all(report.buf);
	CHECK_CONTAINS(r, "\"unhealthy\"");
	free(r);
	char *p = read_all(prom.buf);
	CHECK_CONTAINS(p, "vigil_agent_write_errors_total{file=\"report\"} 0\n");
	CHECK_CONTAINS(p, "vigil_agent_write_errors_total{file=\"history\"} 0\n");
	CHECK_CONTAINS(p, "vigil_healthy 0\n");
	free(p);
	agent_metrics(&a, &m);
	CHECK_CONTAINS(m.buf, "vigil_agent_write_ok{file=\"prom\"} 1\n");
	CHECK_NOT_CONTAINS(m.buf, "vigil_agent_write_error{");
	agent_release(&a);
	strbuf_release(&state);
	strbuf_release(&textdir);
	strbuf_release(&prom);
	strbuf_release(&report);
	strbuf_release(&m);
}

/* A write that cannot be fixed says the system's own reason, not a guess. */
TEST(agent_write_error_is_the_systems_not_a_guess)
{
	const char *dir = test_tmpdir();
	struct strbuf state = STRBUF_INIT, m = STRBUF_INIT;
	test_write(dir, "a-file", "x");
	strbuf_addf(&state, "%s/a-file/state", dir); /* under a plain file: ENOTDIR */
	struct agent a;
	struct vclock v;
	struct agent_settings s = { .interval_s = 30, .state_dir = state.buf, .host = "vhost",
				    .max_cycles = 1 };
	memset(&v, 0, sizeof(v));
	agent_init(&a, &s, &agent_real_ops, NULL);
	a.collect = v_collect;
	a.collect_arg = &v;
	v.wall = wall_seconds();
	agent_loop(&a);
	agent_metrics(&a, &m);
	CHECK_CONTAINS(m.buf, "vigil_agent_write_ok{file=\"report\"} 0\n");
	CHECK_CONTAINS(m.buf, "vigil_agent_write_error{file=\"report\",error=\"cannot ");
	CHECK_CONTAINS(m.buf, "Not a directory\"} 1\n");
	CHECK_NOT_CONTAINS(m.buf, "disk full");
	CHECK_MSG(access(state.buf, F_OK) < 0, "'%s' exists", state.buf);
	agent_release(&a);
	strbuf_release(&state);
	strbuf_release(&m);
}

/* A check that hangs, run through the real runner as the agent runs its checks. */
static int hang_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	UNUSED(ctx);
	UNUSED(res);
	UNUSED(err);
	for (;;)
		pause();
	return 0;
}
static int fine_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	UNUSED(ctx);
	UNUSED(err);
	result_add(res, STATUS_OK, ACTION_NONE, "fine", "", "fine");
	return 0;
}
static const struct check_def hang_table[] = {
	{ "hang", "hangs", 300, hang_run },
	{ "fine", "fine", 300, fine_run },
};
static int runner_collect(void *arg, struct report *rep, struct strbuf *err)
{
	struct run_item items[2] = { { &hang_table[0], 300 }, { &hang_table[1], 300 } };
	struct config cfg;
	UNUSED(arg);
	UNUSED(err);
	config_init(&cfg, "h");
	struct check_ctx ctx = { .cfg = &cfg, .host = "h", .now = wall_seconds() };
	report_init(rep, "h", wall_seconds());
	checks_run(&ctx, items, 2, 5000, rep);
	report_finish(rep);
	config_release(&cfg);
	return 0;
}

TEST(agent_survives_a_hanging_check_and_says_so)
{
	struct agent a;
	struct agent_settings s = { .interval_s = 1, .host = "h", .max_cycles = 2 };
	struct strbuf m = STRBUF_INIT;
	agent_init(&a, &s, &agent_real_ops, NULL);
	a.collect = runner_collect;
	uint64_t t0 = mono_ms();
	agent_loop(&a);
	CHECK_MSG(mono_ms() - t0 < 5000, "two cycles took %llu ms",
		  (unsigned long long)(mono_ms() - t0));
	agent_metrics(&a, &m);
	CHECK_CONTAINS(m.buf, "vigil_agent_check_timeouts_total{check=\"hang\"} 2\n");
	CHECK_CONTAINS(m.buf, "vigil_agent_check_unknown{check=\"hang\",error=\"timed out");
	CHECK_CONTAINS(m.buf, "vigil_check_status{check=\"fine\",status=\"ok\"} 1\n");
	CHECK_CONTAINS(m.buf, "vigil_verdict{verdict=\"unknown\"} 1\n");
	strbuf_release(&m);
	agent_release(&a);
}

/* ---- history ---- */

TEST(agent_history_escalates_a_fault_that_survives_reboots)
{
	struct agent a;
	struct vclock v;
	vagent(&a, &v, NULL, 1);
	a.set.escalate_after = 2;
	v.next = STATUS_FAIL;
	const char *boots[] = { "boot-a", "boot-a", "boot-b", "boot-c" };
	for (size_t i = 0; i < ARRAY_SIZE(boots); i++) {
		a.set.boot_id = boots[i];
		agent_loop(&a);
		const struct finding *f = &a.latest.results[0].findings[0];
		if (i < 3) {
			CHECK_MSG(f->action == ACTION_REBOOT, "boot %zu: %s", i,
				  action_name(f->action));
		} else {
			CHECK_INT(f->action, ACTION_INSPECT_HARDWARE);
			CHECK_CONTAINS(f->message, "seen in 3 boots, inspect hardware: Xid 79");
			CHECK_CONTAINS(a.latest.reason, "kernel: seen in 3 boots, inspect hardware");
		}
	}
	/* kept across a restart of the agent: serialise, parse, and the next boot escalates */
	struct strbuf s = STRBUF_INIT, err = STRBUF_INIT;
	history_serialize(&a.hist, &s);
	struct history h2 = { 0 };
	CHECK_INT(history_parse(&h2, s.buf, s.len, &err), 0);
	CHECK_INT(h2.nr, 1);
	CHECK_INT(h2.e[0].nr_boots, 3);
	CHECK_STR(h2.e[0].key, "kernel|xid|GPU 0000:9b:00.0");
	history_release(&h2);
	CHECK_INT(history_parse(&h2, "{\"entries\": 3", 13, &err), -1);
	history_release(&h2);
	strbuf_release(&s);
	strbuf_release(&err);
	agent_release(&a);
}

TEST(agent_history_is_bounded_and_keys_on_code_device_and_xid)
{
	struct history h = { 0 };
	struct report rep;
	char dev[32];
	report_init(&rep, "h", 0);
	struct check_result *r = report_add(&rep, "kernel");
	for (int i = 0; i < HISTORY_MAX_ENTRIES + 50; i++) {
		snprintf(dev, sizeof(dev), "GPU %d", i);
		struct finding *f = result_add(r, STATUS_FAIL, ACTION_RESET_GPU, "xid", dev, "x");
		finding_detail_num(f, "xid", 48);
	}
	result_add(r, STATUS_FAIL, ACTION_FREE_DISK, "space", "/", "full"); /* not hardware */
	result_add(r, STATUS_WARN, ACTION_REBOOT, "xid", "GPU 0", "a warning"); /* not failing */
	history_note(&h, &rep, "b1", 1);
	CHECK_INT(h.nr, HISTORY_MAX_ENTRIES);
	struct strbuf key = STRBUF_INIT;
	CHECK(history_key(r, &r->findings[0], &key));
	CHECK_STR(key.buf, "kernel|xid|GPU 0|xid=48");
	CHECK(!history_key(r, &r->findings[HISTORY_MAX_ENTRIES + 50], &key));
	CHECK(!history_key(r, &r->findings[HISTORY_MAX_ENTRIES + 51], &key));
	/* boot ids per key are bounded too */
	char b[16];
	for (int i = 0; i < 40; i++) {
		snprintf(b, sizeof(b), "boot-%d", i);
		history_note(&h, &rep, b, 2 + i);
	}
	for (size_t i = 0; i < h.nr; i++)
		CHECK(h.e[i].nr_boots <= HISTORY_MAX_BOOTS);
	strbuf_release(&key);
	history_release(&h);
	report_release(&rep);
}

/* ---- HTTP ---- */

TEST(agent_http_serves_metrics_and_health)
{
	struct agent a;
	struct vclock v;
	struct strbuf err = STRBUF_INIT, body = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	v.wall = wall_seconds();
	agent_loop(&a);
	struct agent_http *h = agent_http_start(&a, "127.0.0.1:0", &err);
	CHECK_MSG(h, "cannot start: %s", err.buf);
	unsigned port = agent_http_port(h);
	CHECK(port > 0);
	CHECK_INT(test_http(port, "GET", "/metrics", &body), 200);
	CHECK_CONTAINS(body.buf, "# TYPE vigil_healthy gauge\nvigil_healthy 1\n");
	CHECK_CONTAINS(body.buf, "vigil_agent_cycles_total 1\n");
	CHECK_INT(test_http(port, "GET", "/health", &body), 200);
	struct json_value *j = json_parse(body.buf, body.len, &err);
	CHECK_MSG(j, "/health is not JSON: %s\n%s", err.buf, body.buf);
	CHECK_STR(json_get_string(j, "verdict"), "healthy");
	CHECK_STR(json_get_string(j, "host"), "vhost");
	json_free(j);
	CHECK_INT(test_http(port, "GET", "/nope", &body), 404);
	CHECK_INT(test_http(port, "DELETE", "/metrics", &body), 405);
	/* the verdict inside changes, the status code stays 200 */
	v.next = STATUS_FAIL;
	agent_loop(&a);
	CHECK_INT(test_http(port, "GET", "/health", &body), 200);
	CHECK_CONTAINS(body.buf, "\"verdict\":\"unhealthy\"");
	agent_http_stop(h);
	CHECK_INT(test_http(port, "GET", "/metrics", &body), -1);
	strbuf_release(&err);
	strbuf_release(&body);
	agent_release(&a);
}

/* ---- denial of service: tricklers and floods ---- */

/* One request on a Unix socket; the status, the body in *body; -1 when no answer came. */
static int unix_http(const char *path, const char *req, struct strbuf *body)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	strbuf_reset(body);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size_t n = strlen(req);
	if (write(fd, req, n) != (ssize_t)n) {
		close(fd);
		return -1;
	}
	struct strbuf all = STRBUF_INIT;
	char buf[4096];
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t got = read(fd, buf, sizeof(buf));
		if (got <= 0)
			break;
		strbuf_add(&all, buf, (size_t)got);
	}
	close(fd);
	int code = -1;
	if (sscanf(all.buf, "HTTP/1.%*d %d", &code) != 1)
		code = -1;
	const char *sep = strstr(all.buf, "\r\n\r\n");
	if (sep)
		strbuf_addstr(body, sep + 4);
	strbuf_release(&all);
	return code;
}

#define HEALTH_REQ "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"

static int flood_connect(unsigned port, const char *upath)
{
	int fd;
	if (upath) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", upath);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
			close(fd);
			return -1;
		}
	} else {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(fd);
			return -1;
		}
	}
	static const char partial[] = "GET /health HTTP/1.1\r\nHost: localhost\r\n";
	if (fd >= 0 && send(fd, partial, sizeof(partial) - 1, MSG_NOSIGNAL) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A hostile local process, as uid (when not 0): holds n connections to the TCP port or the
 * Unix socket, each sending a header line now and then so that it is never idle, and opens a
 * new one for each the server cuts, until killed. Says 'r' on ready once the first n are open.
 */
static pid_t flooder(uid_t uid, unsigned port, const char *upath, unsigned n, int ready)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	if (uid && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0))
		_exit(126);
	int *fds = calloc(n, sizeof(int));
	for (unsigned i = 0; i < n; i++)
		fds[i] = flood_connect(port, upath);
	if (write(ready, "r", 1) != 1)
		_exit(125);
	for (;;) {
		usleep(200000);
		for (unsigned i = 0; i < n; i++) {
			char c;
			if (fds[i] >= 0 && recv(fds[i], &c, 1, MSG_DONTWAIT) == 0) {
				close(fds[i]);
				fds[i] = -1;
			}
			if (fds[i] < 0)
				fds[i] = flood_connect(port, upath);
			else if (send(fds[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) < 0) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
	}
}

static void stop_flooder(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/* Whether the server cut fd (EOF or reset) while we kept sending a header line on it. */
static bool cut_while_trickling(int fd, unsigned max_lines)
{
	for (unsigned i = 0; i < max_lines; i++) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 50) == 1) {
			char c;
			ssize_t n = recv(fd, &c, 1, 0);
			if (n <= 0)
				return true;
		}
		if (send(fd, "X-Trickle: 1\r\n", 14, MSG_NOSIGNAL) < 0)
			return true;
	}
	return false;
}

/* A header line every 50 ms never lets MHD's idle timeout fire; the deadline from accept does. */
TEST(agent_http_cuts_a_trickler_at_the_deadline)
{
	struct agent a;
	struct vclock v;
	struct strbuf err = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	v.wall = wall_seconds();
	agent_loop(&a);
	struct agent_http_limits lim = { .connections = 64, .per_client = 0, .deadline_ms = 300 };
	struct agent_http *h = agent_http_start_limits(&a, "127.0.0.1:0", &lim, &err);
	CHECK_MSG(h, "cannot start: %s", err.buf);
	int fd = flood_connect(agent_http_port(h), NULL);
	CHECK(fd >= 0);
	/* 400 lines at 50 ms: 20 s, 66 deadlines */
	CHECK_MSG(cut_while_trickling(fd, 400), "a trickling connection was never cut");
	uint64_t cut, refused;
	agent_http_counts(h, &cut, &refused);
	CHECK_INT(cut, 1);
	close(fd);
	agent_http_stop(h);
	strbuf_release(&err);
	agent_release(&a);
}

static void need_root(void)
{
	if (geteuid() != 0)
		SKIP("needs root, to flood as another uid");
}

/*
 * Another local user (uid 65534) holds three times the pool's connections, trickling, and opens
 * a new one for each cut: every one of root's probes over TCP is still answered, because one
 * uid (found through the kernel's socket table, all of them come from 127.0.0.1) holds at most
 * its share of the pool.
 */
TEST_TIMEOUT(agent_http_answers_every_probe_while_another_user_floods, 90)
{
	need_root();
	struct agent a;
	struct vclock v;
	struct strbuf err = STRBUF_INIT, body = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	v.wall = wall_seconds();
	agent_loop(&a);
	struct agent_http_limits lim = { .connections = 64, .per_client = 16, .deadline_ms = 0 };
	struct agent_http *h = agent_http_start_limits(&a, "127.0.0.1:0", &lim, &err);
	CHECK_MSG(h, "cannot start: %s", err.buf);
	int pp[2];
	CHECK(pipe(pp) == 0);
	pid_t fl = flooder(65534, agent_http_port(h), NULL, 192, pp[1]);
	char c;
	CHECK(read(pp[0], &c, 1) == 1);
	int answered = 0;
	for (int i = 0; i < 18; i++)
		if (test_http(agent_http_port(h), "GET", "/health", &body) == 200 &&
		    strstr(body.buf, "\"verdict\":\"healthy\""))
			answered++;
	uint64_t cut, refused;
	agent_http_counts(h, &cut, &refused);
	stop_flooder(fl);
	CHECK_INT(answered, 18);
	CHECK_MSG(refused > 0, "the flood was never held to its share");
	close(pp[0]);
	close(pp[1]);
	agent_http_stop(h);
	strbuf_release(&err);
	strbuf_release(&body);
	agent_release(&a);
}

/* Other uids reach a socket under dir only through directories they may search: the harness's
 * root is mkdtemp's 0700, so it gets search (not read, not write) for others. */
static void searchable(const char *dir)
{
	char *up = xstrdup(dir);
	char *slash = strrchr(up, '/');
	if (slash && slash != up) {
		*slash = '\0';
		chmod(up, 0711);
	}
	free(up);
}

static char *sock_path_in(const char *dir)
{
	searchable(dir);
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/s/agent.sock", dir);
	struct strbuf d = STRBUF_INIT;
	strbuf_addf(&d, "%s/s", dir);
	mkdir(d.buf, 0755);
	strbuf_release(&d);
	return strbuf_detach(&p, NULL);
}

TEST(agent_sock_answers_health_and_nothing_else)
{
	struct agent a;
	struct vclock v;
	struct strbuf err = STRBUF_INIT, body = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	v.wall = wall_seconds();
	agent_loop(&a);
	char *path = sock_path_in(test_tmpdir());
	struct agent_sock *s = agent_sock_start(&a, path, NULL, &err);
	CHECK_MSG(s, "cannot start: %s", err.buf);
	struct stat st;
	CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode));
	CHECK_INT(st.st_mode & 07777, 0600);
	CHECK_INT(st.st_uid, geteuid());
	CHECK_INT(unix_http(path, HEALTH_REQ, &body), 200);
	struct json_value *j = json_parse(body.buf, body.len, &err);
	CHECK_MSG(j, "/health is not JSON: %s\n%s", err.buf, body.buf);
	CHECK_STR(json_get_string(j, "verdict"), "healthy");
	json_free(j);
	CHECK_INT(unix_http(path, "GET /metrics HTTP/1.0\r\n\r\n", &body), 404);
	CHECK_INT(unix_http(path, "POST /health HTTP/1.0\r\n\r\n", &body), 405);
	CHECK_INT(unix_http(path, "GET /health?x=1 HTTP/1.0\n\n", &body), 200);
	/* huge headers: a clear refusal, never more memory */
	struct strbuf huge = STRBUF_INIT;
	strbuf_addstr(&huge, "GET /health HTTP/1.1\r\n");
	for (int i = 0; i < 200; i++)
		strbuf_addstr(&huge, "X-Big: 0123456789012345678901234567890123456789\r\n");
	CHECK_INT(unix_http(path, huge.buf, &body), 431);
	strbuf_release(&huge);
	v.next = STATUS_FAIL;
	agent_loop(&a);
	CHECK_INT(unix_http(path, HEALTH_REQ, &body), 200);
	CHECK_CONTAINS(body.buf, "\"verdict\":\"unhealthy\"");
	agent_sock_stop(s);
	CHECK_MSG(lstat(path, &st) < 0 && errno == ENOENT, "the socket's name is left behind");
	free(path);
	strbuf_release(&err);
	strbuf_release(&body);
	agent_release(&a);
}

TEST(agent_sock_cuts_a_trickler_and_a_client_that_never_reads)
{
	struct agent a;
	struct vclock v;
	struct strbuf err = STRBUF_INIT, body = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	v.wall = wall_seconds();
	agent_loop(&a);
	char *path = sock_path_in(test_tmpdir());
	struct agent_sock_limits lim = agent_sock_default_limits;
	lim.deadline_ms = 300;
	/* this process holds four connections below and probes beside them: the share of one
	 * process (4 by default) is not what this test is about */
	lim.per_client = 16;
	struct agent_sock *s = agent_sock_start(&a, path, &lim, &err);
	CHECK_MSG(s, "cannot start: %s", err.buf);
	int fd = flood_connect(0, path);
	CHECK(fd >= 0);
	CHECK_MSG(cut_while_trickling(fd, 400), "a trickling connection was never cut");
	close(fd);
	/* asks, never reads, never closes; with a tiny receive buffer the answer stays queued */
	int quiet[3];
	for (int i = 0; i < 3; i++) {
		quiet[i] = flood_connect(0, path);
		CHECK(quiet[i] >= 0);
		CHECK(send(quiet[i], "\r\n", 2, MSG_NOSIGNAL) == 2);
	}
	/* half-open: the request, then our side's write shut */
	int half = flood_connect(0, path);
	CHECK(half >= 0);
	CHECK(send(half, "\r\n", 2, MSG_NOSIGNAL) == 2);
	shutdown(half, SHUT_WR);
	for (int i = 0; i < 10; i++)
		CHECK_INT(unix_http(path, HEALTH_REQ, &body), 200);
	char buf[256];
	struct pollfd p = { half, POLLIN, 0 };
	CHECK(poll(&p, 1, 5000) == 1 && read(half, buf, sizeof(buf)) > 0);
	CHECK(!strncmp(buf, "HTTP/1.0 200", 12));
	for (int i = 0; i < 3; i++)
		close(quiet[i]);
	close(half);
	uint64_t answered, refused, cut;
	agent_sock_counts(s, &answered, &refused, &cut);
	CHECK(cut >= 1);
	agent_sock_stop(s);
	free(path);
	strbuf_release(&err);
	strbuf_release(&body);
	agent_release(&a);
}

/* Floods on the socket, from another uid and from another root process: root's probe is
 * answered every time (per-uid shares, root's reserve, per process for root). */
TEST_TIMEOUT(agent_sock_answers_every_probe_while_others_flood, 90)
{
	need_root();
	struct agent a;
	struct vclock v;
	struct strbuf err = STRBUF_INIT, body = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	v.wall = wall_seconds();
	agent_loop(&a);
	const char *dir = test_tmpdir();
	char *path = sock_path_in(dir);
	/* root's alone by default: another uid cannot even connect (nor queue connects) */
	struct agent_sock *s = agent_sock_start(&a, path, NULL, &err);
	CHECK_MSG(s, "cannot start: %s", err.buf);
	pid_t kid = fork();
	if (kid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(126);
		int fd = flood_connect(0, path);
		_exit(fd < 0 && errno == EACCES ? 0 : 1);
	}
	int kst;
	waitpid(kid, &kst, 0);
	CHECK_MSG(WIFEXITED(kst) && WEXITSTATUS(kst) == 0, "uid 65534 could connect: %d", kst);
	agent_sock_stop(s);
	/* widened to everyone, the shares hold: per uid, per process for root, root's reserve */
	struct agent_sock_limits wide = agent_sock_default_limits;
	wide.mode = 0666;
	s = agent_sock_start(&a, path, &wide, &err);
	CHECK_MSG(s, "cannot start: %s", err.buf);
	int pp[2];
	CHECK(pipe(pp) == 0);
	pid_t fl[3];
	char c;
	uint64_t ans, refused, cut;
	/* the other uid's flood reaches the server (and is held to its share) */
	fl[0] = flooder(65534, 0, path, 200, pp[1]);
	CHECK(read(pp[0], &c, 1) == 1);
	for (int i = 0; i < 100; i++) {
		agent_sock_counts(s, &ans, &refused, &cut);
		if (refused > 0)
			break;
		usleep(20000);
	}
	CHECK_MSG(refused > 0, "uid 65534's flood never reached the socket");
	fl[1] = flooder(65533, 0, path, 200, pp[1]);
	fl[2] = flooder(0, 0, path, 200, pp[1]);
	for (int i = 0; i < 2; i++)
		CHECK(read(pp[0], &c, 1) == 1);
	int answered = 0;
	for (int i = 0; i < 18; i++)
		if (unix_http(path, HEALTH_REQ, &body) == 200 &&
		    strstr(body.buf, "\"verdict\":\"healthy\""))
			answered++;
	agent_sock_counts(s, &ans, &refused, &cut);
	for (int i = 0; i < 3; i++)
		stop_flooder(fl[i]);
	CHECK_INT(answered, 18);
	CHECK_MSG(refused > 0, "the floods were never held to their shares");
	close(pp[0]);
	close(pp[1]);
	agent_sock_stop(s);
	free(path);
	strbuf_release(&err);
	strbuf_release(&body);
	agent_release(&a);
}

/* What sits at the socket's path before the agent starts decides nothing. */
TEST(agent_sock_refuses_a_planted_name_and_an_open_directory)
{
	struct agent a;
	struct vclock v;
	struct strbuf err = STRBUF_INIT, body = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	const char *dir = test_tmpdir();
	char *path = sock_path_in(dir);
	struct strbuf victim = STRBUF_INIT;
	strbuf_addf(&victim, "%s/victim", dir);
	test_write(dir, "victim", "keep\n");
	/* a link to a file elsewhere */
	CHECK(symlink(victim.buf, path) == 0);
	CHECK(!agent_sock_start(&a, path, NULL, &err));
	CHECK_CONTAINS(err.buf, "is not a socket of this agent's user");
	char *kept = read_all(victim.buf);
	CHECK_STR(kept, "keep\n");
	free(kept);
	unlink(path);
	/* a dangling link, a plain file, a directory */
	CHECK(symlink("/nonexistent/x", path) == 0);
	CHECK(!agent_sock_start(&a, path, NULL, &err));
	CHECK_CONTAINS(err.buf, "not replaced");
	unlink(path);
	test_write(dir, "s/agent.sock", "x");
	CHECK(!agent_sock_start(&a, path, NULL, &err));
	unlink(path);
	CHECK(mkdir(path, 0755) == 0);
	CHECK(!agent_sock_start(&a, path, NULL, &err));
	rmdir(path);
	/* a directory anyone may write: someone could plant the name between our steps */
	struct strbuf open_dir = STRBUF_INIT;
	strbuf_addf(&open_dir, "%s/s", dir);
	CHECK(chmod(open_dir.buf, 01777) == 0);
	CHECK(!agent_sock_start(&a, path, NULL, &err));
	CHECK_CONTAINS(err.buf, "writable by others");
	CHECK(chmod(open_dir.buf, 0755) == 0);
	/* a stale socket of ours (an agent that died) is replaced; a live one is refused */
	struct agent_sock *s1 = agent_sock_start(&a, path, NULL, &err);
	CHECK_MSG(s1, "cannot start: %s", err.buf);
	CHECK(!agent_sock_start(&a, path, NULL, &err));
	CHECK_CONTAINS(err.buf, "another agent serves");
	agent_sock_stop(s1);
	int stale = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	CHECK(bind(stale, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	close(stale);
	struct agent_sock *s2 = agent_sock_start(&a, path, NULL, &err);
	CHECK_MSG(s2, "a stale socket was not replaced: %s", err.buf);
	CHECK_INT(unix_http(path, HEALTH_REQ, &body), 200);
	agent_sock_stop(s2);
	free(path);
	strbuf_release(&victim);
	strbuf_release(&open_dir);
	strbuf_release(&err);
	strbuf_release(&body);
	agent_release(&a);
}

TEST(agent_listen_addresses)
{
	struct sockaddr_storage ss;
	unsigned len;
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(agent_listen_parse("127.0.0.1:9847", &ss, &len, &err), 0);
	CHECK_INT(ss.ss_family, AF_INET);
	CHECK_INT(agent_listen_parse("[::1]:9847", &ss, &len, &err), 0);
	CHECK_INT(ss.ss_family, AF_INET6);
	CHECK_INT(agent_listen_parse(":9847", &ss, &len, &err), 0);
	CHECK_INT(agent_listen_parse("localhost:9847", &ss, &len, &err), -1);
	CHECK_CONTAINS(err.buf, "not a numeric");
	CHECK_INT(agent_listen_parse("127.0.0.1:99999", &ss, &len, &err), -1);
	CHECK_INT(agent_listen_parse("127.0.0.1", &ss, &len, &err), -1);
	CHECK_INT(agent_listen_parse("[::1:80", &ss, &len, &err), -1);
	strbuf_release(&err);
	/* a port in use is a clear error */
	struct agent a;
	struct vclock v;
	vagent(&a, &v, NULL, 1);
	struct agent_http *h1 = agent_http_start(&a, "127.0.0.1:0", &err);
	CHECK(h1);
	char spec[64];
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", agent_http_port(h1));
	struct agent_http *h2 = agent_http_start(&a, spec, &err);
	CHECK(!h2);
	CHECK_CONTAINS(err.buf, "cannot listen");
	agent_http_stop(h1);
	agent_release(&a);
	strbuf_release(&err);
}

/* ---- the binaries ---- */

static const char xid_kmsg[] =
	"3,100,1000000,-;NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=python, GPU has fallen off "
	"the bus.\n";

static char *read_all(const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	read_file_bounded(path, &sb, 16 << 20, NULL);
	return strbuf_detach(&sb, NULL);
}

TEST(agent_once_writes_cache_prom_and_history_and_check_cached_reads_it)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, prom = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&prom, "%s/textfile/vigil.prom", dir);
	test_write(dir, "root/dev/kmsg", xid_kmsg);
	test_mkdir(dir, "textfile");
	/* three boots with the same Xid: the third escalates */
	const char *boots[] = { "11111111-aaaa\n", "22222222-bbbb\n", "33333333-cccc\n" };
	struct child c;
	for (size_t i = 0; i < ARRAY_SIZE(boots); i++) {
		test_write(dir, "root/proc/sys/kernel/random/boot_id", boots[i]);
		const char *args[] = { "agent", "--once", "--only", "kernel", "--root", root.buf,
				       "--state-dir", state.buf, "--prom", prom.buf, "--listen",
				       "off", NULL };
		test_run_vigil(&c, args, NULL);
		CHECK_INT(c.exit_code, 1);
		CHECK_CONTAINS(c.err.buf, "vigil agent: unhealthy: kernel: ");
		child_release(&c);
	}
	const char *cached[] = { "check", "--cached", "--state-dir", state.buf, "--json", NULL };
	test_run_vigil(&c, cached, NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "unhealthy");
	CHECK_STR(json_get_string(json_path(v, "checks.0.findings.0"), "action"),
		  "INSPECT_HARDWARE");
	CHECK_CONTAINS(json_get_string(v, "reason"), "seen in 3 boots");
	json_free(v);
	child_release(&c);
	char *p = read_all(prom.buf);
	CHECK_CONTAINS(p, "vigil_healthy 0\n");
	CHECK_CONTAINS(p, "vigil_agent_escalated_findings 1\n");
	CHECK_CONTAINS(p, "action=\"INSPECT_HARDWARE\"");
	free(p);
	/* promtool, when installed, agrees it is valid exposition text */
	const char *pt[] = { "promtool", "check", "metrics", NULL };
	struct child t;
	child_init(&t);
	t.argv = pt;
	t.timeout_ms = 30000;
	char *text = read_all(prom.buf);
	t.stdin_data = text;
	t.stdin_len = strlen(text);
	if (child_run(&t, NULL) == 0)
		CHECK_MSG(t.exited && t.exit_code == 0, "promtool: %s%s", t.out.buf, t.err.buf);
	child_release(&t);
	free(text);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&prom);
}

TEST(agent_check_cached_stale_missing_and_damaged_are_unknown)
{
	const char *dir = test_tmpdir();
	struct strbuf state = STRBUF_INIT, path = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", dir);
	struct child c;
	const char *args[] = { "check", "--cached", "--state-dir", state.buf, "--reason", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "unknown: agent: no cached result");
	child_release(&c);
	/* a healthy result, fresh then old */
	struct report rep;
	struct strbuf js = STRBUF_INIT;
	report_init(&rep, "h", wall_seconds() - 500);
	result_add(report_add(&rep, "kernel"), STATUS_OK, ACTION_NONE, "summary", "", "clean");
	rep.results[0].status = STATUS_OK;
	report_finish(&rep);
	report_json(&rep, &js, false);
	report_release(&rep);
	CHECK(mkdir_p(state.buf, 0755, &err) == 0);
	agent_cache_path(&path, state.buf);
	CHECK(write_file(path.buf, js.buf, js.len, true, &err) == 0);
	test_run_vigil(&c, args, NULL); /* default max-age: 3 x 60 s */
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "unknown: agent: cached result 50");
	child_release(&c);
	const char *longer[] = { "check", "--cached", "--state-dir", state.buf, "--reason", "-c",
				 "agent.max-age=600", NULL };
	test_run_vigil(&c, longer, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_STR(c.out.buf, "healthy\n");
	child_release(&c);
	const char *npd[] = { "check", "--cached", "--state-dir", state.buf, "--npd", NULL };
	test_run_vigil(&c, npd, NULL);
	CHECK_INT(c.exit_code, 2); /* NPD's Unknown */
	CHECK(strlen(c.out.buf) <= 81);
	child_release(&c);
	CHECK(write_file(path.buf, "{\"host\":", 8, true, &err) == 0);
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "damaged");
	child_release(&c);
	const char *bad[] = { "check", "--cached", "--only", "kernel", NULL };
	test_run_vigil(&c, bad, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	strbuf_release(&js);
	strbuf_release(&state);
	strbuf_release(&path);
	strbuf_release(&err);
}

TEST(agent_npd_exit_codes_and_message)
{
	const char *dir = test_tmpdir();
	struct strbuf bad = STRBUF_INIT, good = STRBUF_INIT;
	strbuf_addf(&bad, "%s/bad", dir);
	strbuf_addf(&good, "%s/good", dir);
	test_write(dir, "bad/dev/kmsg", xid_kmsg);
	test_write(dir, "good/dev/kmsg", TEST_KMSG_CLEAN);
	struct child c;
	const char *a1[] = { "check", "--npd", "--only", "kernel", "--root", good.buf, NULL };
	test_run_vigil(&c, a1, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_STR(c.out.buf, "healthy\n");
	child_release(&c);
	const char *a2[] = { "check", "--npd", "--only", "kernel", "--root", bad.buf, NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "kernel: Xid 79");
	CHECK(strlen(c.out.buf) <= 81);
	CHECK(!strchr(c.out.buf, '\n') || strchr(c.out.buf, '\n') == c.out.buf + c.out.len - 1);
	child_release(&c);
	const char *a3[] = { "check", "--npd", "--json", NULL };
	test_run_vigil(&c, a3, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	strbuf_release(&bad);
	strbuf_release(&good);
}

TEST(agent_missing_nvml_is_unknown_in_metrics)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, prom = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&prom, "%s/vigil.prom", dir);
	test_write(dir, "root/etc/hostname", "gpu-7\n");
	const char *args[] = { "agent", "--once", "--only", "gpu", "--root", root.buf, "--prom",
			       prom.buf, "--listen", "off", NULL };
	const char *env[] = { "VIGIL_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1", NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_INT(c.exit_code, 3);
	child_release(&c);
	char *p = read_all(prom.buf);
	CHECK_CONTAINS(p, "vigil_check_status{check=\"gpu\",status=\"unknown\"} 1\n");
	CHECK_CONTAINS(p, "vigil_agent_check_unknown{check=\"gpu\",error=\"cannot load NVML");
	CHECK_CONTAINS(p, "vigil_healthy 0\n");
	free(p);
	strbuf_release(&root);
	strbuf_release(&prom);
}

/* A real full disk: the state directory on a tiny tmpfs, filled up. Needs root and mount. */
TEST(agent_real_full_disk)
{
	const char *dir = test_tmpdir();
	struct strbuf state = STRBUF_INIT, prom = STRBUF_INIT, root = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&prom, "%s/vigil.prom", dir);
	strbuf_addf(&root, "%s/root", dir);
	test_write(dir, "root/dev/kmsg", TEST_KMSG_CLEAN);
	test_mkdir(dir, "state");
	if (mount("tmpfs", state.buf, "tmpfs", 0, "size=8k") < 0)
		SKIP("cannot mount a tmpfs here (needs root)");
	test_write(state.buf, "filler", ""); /* then fill it */
	struct strbuf fill = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&fill, "%s/filler", state.buf);
	char *big = xcalloc(1, 64 << 10);
	write_file(fill.buf, big, 64 << 10, false, &err); /* fails part way: the disk is full */
	free(big);
	const char *args[] = { "agent", "--once", "--only", "kernel", "--root", root.buf,
			       "--state-dir", state.buf, "--prom", prom.buf, "--listen", "off",
			       NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	umount2(state.buf, MNT_DETACH);
	CHECK_INT(c.exit_code, 0); /* the verdict is the host's; the disk is the agent's problem */
	/* the system's reason, not a guess */
	CHECK_CONTAINS(c.err.buf, "cannot write its cached report file: cannot ");
	CHECK_CONTAINS(c.err.buf, "No space left on device; going on\n");
	char *p = read_all(prom.buf);
	CHECK_CONTAINS(p, "vigil_agent_write_errors_total{file=\"report\"} 1\n");
	CHECK_CONTAINS(p, "vigil_agent_write_ok{file=\"report\"} 0\n");
	free(p);
	child_release(&c);
	strbuf_release(&fill);
	strbuf_release(&err);
	strbuf_release(&state);
	strbuf_release(&prom);
	strbuf_release(&root);
}

/* The daemon itself: serves while it runs, stops promptly on SIGTERM. */
TEST(agent_daemon_serves_and_stops_on_sigterm)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, listen = STRBUF_INIT,
		      body = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	test_write(dir, "root/dev/kmsg", TEST_KMSG_CLEAN);
	/* 34000-39999: a range no other test's fixed ports use (the Slurm testbeds sit at
	 * 20000-29000, the agent e2e at 30000-34000, Prometheus at 40000-48000) */
	unsigned port = 34000 + (unsigned)(getpid() % 6000);
	strbuf_addf(&listen, "127.0.0.1:%u", port);
	pid_t pid = fork();
	if (pid == 0) {
		const char *argv[] = { test_vigil_bin(), "agent", "--only", "kernel", "--root",
				       root.buf, "--state-dir", state.buf, "--listen", listen.buf,
				       "--interval", "1", NULL };
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	int code = -1;
	for (int i = 0; i < 100 && code != 200; i++) {
		usleep(50000);
		code = test_http(port, "GET", "/metrics", &body);
	}
	CHECK_INT(code, 200);
	for (int i = 0; i < 60 && !strstr(body.buf, "vigil_agent_cycles_total 2"); i++) {
		usleep(100000);
		test_http(port, "GET", "/metrics", &body);
	}
	CHECK_CONTAINS(body.buf, "vigil_agent_cycles_total 2\n");
	CHECK_CONTAINS(body.buf, "vigil_healthy 1\n");
	uint64_t t0 = mono_ms();
	kill(pid, SIGTERM);
	int st;
	waitpid(pid, &st, 0);
	CHECK_MSG(mono_ms() - t0 < 3000, "took %llu ms to stop",
		  (unsigned long long)(mono_ms() - t0));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&listen);
	strbuf_release(&body);
}

/* Through the binary: /health on STATE/agent.sock while another user holds the HTTP pool's
 * worth of trickling connections; a name planted at the socket's path stops the agent. */
TEST_TIMEOUT(agent_daemon_answers_health_on_its_socket, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, sock = STRBUF_INIT,
		      body = STRBUF_INIT, log = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&sock, "%s/agent.sock", state.buf);
	strbuf_addf(&log, "%s/agent.log", dir);
	test_write(dir, "root/dev/kmsg", TEST_KMSG_CLEAN);
	searchable(dir);
	pid_t pid = fork();
	if (pid == 0) {
		const char *argv[] = { test_vigil_bin(), "agent", "--only", "kernel", "--root",
				       root.buf, "--state-dir", state.buf, "--listen", "off",
				       "--interval", "1", NULL };
		int fd = open(log.buf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	int code = -1;
	for (int i = 0; i < 100 && code != 200; i++) {
		usleep(50000);
		code = unix_http(sock.buf, HEALTH_REQ, &body);
	}
	CHECK_INT(code, 200);
	for (int i = 0; i < 100 && !strstr(body.buf, "\"verdict\":\"healthy\""); i++) {
		usleep(50000);
		unix_http(sock.buf, HEALTH_REQ, &body);
	}
	CHECK_CONTAINS(body.buf, "\"verdict\":\"healthy\"");
	if (geteuid() == 0) {
		int pp[2];
		CHECK(pipe(pp) == 0);
		/* another root process trickling on 300 connections, and two storming
		 * connect-and-close as fast as they can: the accept loop takes a bounded batch
		 * between answers, so the queue moving never starves the ones accepted */
		pid_t fl = flooder(0, 0, sock.buf, 300, pp[1]);
		char c;
		CHECK(read(pp[0], &c, 1) == 1);
		pid_t storm[2];
		for (int k = 0; k < 2; k++) {
			storm[k] = fork();
			if (storm[k] == 0)
				for (;;) {
					int fd = flood_connect(0, sock.buf);
					if (fd >= 0)
						close(fd);
				}
		}
		usleep(100000);
		int answered = 0;
		for (int i = 0; i < 18; i++)
			answered += unix_http(sock.buf, HEALTH_REQ, &body) == 200;
		stop_flooder(fl);
		for (int k = 0; k < 2; k++)
			stop_flooder(storm[k]);
		CHECK_INT(answered, 18);
		close(pp[0]);
		close(pp[1]);
	}
	kill(pid, SIGTERM);
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct stat sst;
	CHECK_MSG(lstat(sock.buf, &sst) < 0, "the socket's name is left after the agent stopped");
	/* a link planted where the socket goes: never followed; asked for by name, the agent
	 * refuses to start; at the default place, it runs without the socket and says why */
	test_write(dir, "target", "keep\n");
	struct strbuf target = STRBUF_INIT;
	strbuf_addf(&target, "%s/target", dir);
	CHECK(symlink(target.buf, sock.buf) == 0);
	const char *args[] = { "agent", "--only", "kernel", "--root", root.buf, "--state-dir",
			       state.buf, "--listen", "off", "--once", "--socket", sock.buf, NULL };
	struct child ch;
	test_run_vigil(&ch, args, NULL);
	CHECK_INT(ch.exit_code, 2);
	CHECK_CONTAINS(ch.err.buf, "is not a socket of this agent's user: not replaced");
	child_release(&ch);
	args[10] = NULL;
	test_run_vigil(&ch, args, NULL);
	CHECK_INT(ch.exit_code, 0);
	CHECK_CONTAINS(ch.err.buf, "vigil agent: no /health socket: '");
	CHECK(lstat(sock.buf, &sst) == 0 && S_ISLNK(sst.st_mode));
	char *kept = read_all(target.buf);
	CHECK_STR(kept, "keep\n");
	free(kept);
	child_release(&ch);
	strbuf_release(&target);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&sock);
	strbuf_release(&body);
	strbuf_release(&log);
}

/* The journal line names the verdict once: "healthy (...)", "unknown: ...", never twice. */
TEST(agent_journal_line_says_the_verdict_once)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	test_write(dir, "root/dev/kmsg", TEST_KMSG_CLEAN);
	test_mkdir(dir, "root/sys");
	const char *args[] = { "agent", "--once", "--only", "kernel", "--root", root.buf,
			       "--state-dir", state.buf, "--listen", "off", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "vigil agent: healthy");
	CHECK_NOT_CONTAINS(c.err.buf, "healthy: healthy");
	child_release(&c);
	test_write(dir, "root/dev/kmsg", "");
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "vigil agent: unknown: kernel: ");
	CHECK_NOT_CONTAINS(c.err.buf, "unknown: unknown");
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&state);
}

/* check --cached: three of the intervals the agent that wrote the cache recorded, so that an
 * agent run with --interval 5 that died is stale after 15 s, not 180. */
TEST(agent_cached_age_limit_follows_the_agents_own_interval)
{
	const char *dir = test_tmpdir();
	struct strbuf state = STRBUF_INIT, path = STRBUF_INIT, js = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", dir);
	CHECK(mkdir_p(state.buf, 0755, &err) == 0);
	agent_cache_path(&path, state.buf);
	const char *args[] = { "check", "--cached", "--state-dir", state.buf, "--reason", NULL };
	for (int with_interval = 1; with_interval >= 0; with_interval--) {
		struct report rep;
		report_init(&rep, "h", wall_seconds() - 20);
		result_add(report_add(&rep, "kernel"), STATUS_OK, ACTION_NONE, "summary", "", "ok");
		rep.results[0].status = STATUS_OK;
		rep.interval_s = with_interval ? 5 : 0;
		report_finish(&rep);
		strbuf_reset(&js);
		report_json(&rep, &js, false);
		report_release(&rep);
		CHECK(write_file(path.buf, js.buf, js.len, true, &err) == 0);
		struct child c;
		test_run_vigil(&c, args, NULL);
		if (with_interval) {
			CHECK_INT(c.exit_code, 3);
			CHECK_CONTAINS(c.out.buf, "(limit 15 s)");
		} else {
			CHECK_INT(c.exit_code, 0); /* 20 s is within 3 x the default 60 s */
		}
		child_release(&c);
	}
	strbuf_release(&state);
	strbuf_release(&path);
	strbuf_release(&js);
	strbuf_release(&err);
}

/*
 * ---- NVML's Xid record and the judgement of kernel Xid lines (xidwatch.c), in virtual time:
 * every moment is given, as CLOCK_MONOTONIC seconds of one boot ----
 */

static struct nvml_xid_drain *xw_drain(double since, double at)
{
	struct nvml_xid_drain *d = xcalloc(1, sizeof(*d));
	d->since = since;
	d->at = at;
	d->nr_gpus = 2;
	strlcpy_v(d->gpus[0].bdf, "0000:18:00.0", sizeof(d->gpus[0].bdf));
	strlcpy_v(d->gpus[1].bdf, "0000:2a:00.0", sizeof(d->gpus[1].bdf));
	return d;
}

/* A report whose kernel result has Xid xid on bdf, its lines first..last s after boot. */
static void xw_report(struct report *rep, const char *bdf, unsigned xid, double first, double last)
{
	report_init(rep, "h", 1000);
	struct check_result *g = report_add(rep, "gpu");
	result_add(g, STATUS_OK, ACTION_NONE, "gpu", "GPU 0 (0000:18:00.0)", "GPU 0 healthy");
	struct check_result *k = report_add(rep, "kernel");
	char dev[64];
	snprintf(dev, sizeof(dev), "GPU %s (GPU-0000)", bdf);
	struct finding *f = result_add(k, STATUS_FAIL, ACTION_REBOOT, "xid", dev,
				       "Xid %u on GPU %s: GPU has fallen off the bus", xid, bdf);
	finding_detail_num(f, "xid", xid);
	finding_detail(f, "first", "%.3f s after boot (line 3)", first);
	finding_detail(f, "last", "%.3f s after boot (line 9)", last);
	report_finish(rep);
}

TEST(xidwatch_doubt_needs_a_whole_watch_and_the_same_xid)
{
	struct xid_watch w;
	struct report rep;
	xidwatch_init(&w, "boot");
	struct nvml_xid_drain *d = xw_drain(100, 500);
	/* NVML reported Xid 13 on that GPU: no word about a 79 */
	d->nr_ev = 1;
	strlcpy_v(d->ev[0].bdf, "0000:18:00.0", sizeof(d->ev[0].bdf));
	d->ev[0].xid = 13;
	d->ev[0].count = 1;
	xidwatch_merge(&w, d);

	xw_report(&rep, "0000:18:00.0", 79, 200, 300);
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 1);
	report_finish(&rep);
	CHECK_STR(verdict_name(rep.verdict), "unknown");
	CHECK_CONTAINS(rep.results[1].findings[0].message, "doubtful");
	report_release(&rep);

	/* NVML's own readings find that GPU lost, or could not be taken: no doubt this cycle */
	xw_report(&rep, "0000:18:00.0", 79, 200, 300);
	rep.results[0].findings[0].status = STATUS_FAIL;
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 0);
	report_release(&rep);
	xw_report(&rep, "0000:18:00.0", 79, 200, 300);
	rep.results[0].status = STATUS_UNKNOWN;
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 0);
	report_release(&rep);

	/* the lines reach past the last drain (less the margin): not judged by NVML */
	xw_report(&rep, "0000:18:00.0", 79, 200, 499);
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 0);
	report_finish(&rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	report_release(&rep);

	/* a first line before the watch began: the group may hold a real one */
	xw_report(&rep, "0000:18:00.0", 79, 50, 300);
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 0);
	report_release(&rep);

	/* 100 s into a watch that began 11.6 days after boot: within the clocks' drift, stands */
	struct xid_watch wd;
	struct nvml_xid_drain *dd = xw_drain(1e6, 1e6 + 5000);
	xidwatch_init(&wd, "boot");
	xidwatch_merge(&wd, dd);
	xw_report(&rep, "0000:18:00.0", 79, 1e6 + 100, 1e6 + 100);
	CHECK_INT(xidwatch_judge(&wd, &rep, 1e6 + 6000, 3600), 0);
	report_release(&rep);
	xw_report(&rep, "0000:18:00.0", 79, 1e6 + 300, 1e6 + 300);
	CHECK_INT(xidwatch_judge(&wd, &rep, 1e6 + 6000, 3600), 1);
	report_release(&rep);
	xidwatch_release(&wd);
	free(dd);

	/* a line after "now" (a clock that is not this one): stands */
	xw_report(&rep, "0000:18:00.0", 79, 200, 300);
	CHECK_INT(xidwatch_judge(&w, &rep, 250, 3600), 0);
	report_release(&rep);

	/* "fallen off the bus" with no Xid, on a GPU NVML reads healthy and never saw a 79 */
	xw_report(&rep, "0000:18:00.0", 79, 200, 300);
	free(rep.results[1].findings[0].code);
	rep.results[1].findings[0].code = xstrdup("gpu_off_bus");
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 1);
	CHECK_CONTAINS(rep.results[1].findings[0].message, "GPU 0000:18:00.0 fallen off the bus "
							    "appears in the kernel log");
	report_release(&rep);

	/* a GPU NVML does not know, while it watched all it knows: doubtful too */
	xw_report(&rep, "0000:99:00.0", 79, 200, 300);
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 1);
	CHECK_CONTAINS(rep.results[1].findings[0].message, "knows no GPU at that address: doubtful");
	report_release(&rep);
	/* ... but not when one of the GPUs it knows was not watched then */
	struct nvml_xid_drain *d2 = xw_drain(100, 500);
	d2->gpus[1].rc = NVML_ERROR_NOT_SUPPORTED;
	struct xid_watch w2;
	xidwatch_init(&w2, "boot");
	xidwatch_merge(&w2, d2);
	xw_report(&rep, "0000:99:00.0", 79, 200, 300);
	CHECK_INT(xidwatch_judge(&w2, &rep, 600, 3600), 0);
	report_release(&rep);
	xidwatch_release(&w2);
	free(d2);
	free(d);
	xidwatch_release(&w);
}

TEST(xidwatch_drain_that_stopped_short_claims_no_watch)
{
	struct xid_watch w;
	struct report rep;
	xidwatch_init(&w, "boot");
	/* flooded: events up to some moment unknown; the window must not be claimed */
	struct nvml_xid_drain *d = xw_drain(100, 500);
	d->flooded = true;
	xidwatch_merge(&w, d);
	CHECK_INT(w.gpus[0].nr_win, 0);
	d->flooded = false;
	d->wait_rc = NVML_ERROR_GPU_IS_LOST;
	xidwatch_merge(&w, d);
	CHECK_INT(w.gpus[0].nr_win, 0);
	xw_report(&rep, "0000:18:00.0", 79, 200, 300);
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 0);
	report_finish(&rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	report_release(&rep);

	/* many worker restarts: at most XIDWATCH_MAX_WINDOWS, the oldest dropped */
	for (int i = 0; i < 40; i++) {
		struct nvml_xid_drain *r = xw_drain(1000 + 10 * i, 1005 + 10 * i);
		xidwatch_merge(&w, r);
		free(r);
	}
	CHECK_INT(w.gpus[0].nr_win, XIDWATCH_MAX_WINDOWS);
	for (size_t i = 0; i < w.gpus[0].nr_win; i++)
		CHECK(w.gpus[0].win[i].from >= 1000 + 10 * (40 - XIDWATCH_MAX_WINDOWS));
	/* a gap between two workers is not watched time */
	xw_report(&rep, "0000:18:00.0", 79, 1387, 1388);
	CHECK_INT(xidwatch_judge(&w, &rep, 2000, 3600), 0);
	report_release(&rep);

	/* distinct Xids beyond the bound are counted, the record stays bounded */
	for (unsigned i = 0; i < XIDWATCH_MAX_EVENTS + 50; i++) {
		struct nvml_xid_drain *r = xw_drain(3000, 3001);
		r->nr_ev = 1;
		snprintf(r->ev[0].bdf, sizeof(r->ev[0].bdf), "0000:18:00.0");
		r->ev[0].xid = 1000 + i;
		r->ev[0].count = 2;
		xidwatch_merge(&w, r);
		free(r);
	}
	CHECK_INT(w.nr_ev, XIDWATCH_MAX_EVENTS);
	CHECK_INT(w.dropped, 100);
	/* and the file it makes parses back, whole */
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	xidwatch_serialize(&w, &text);
	struct xid_watch back;
	xidwatch_init(&back, "boot");
	CHECK_MSG(xidwatch_parse(&back, text.buf, text.len, 4000, &err) == 0, "%s", err.buf);
	CHECK_INT(back.nr_ev, XIDWATCH_MAX_EVENTS);
	CHECK_INT(back.gpus[0].nr_win, XIDWATCH_MAX_WINDOWS);
	/* read by a boot whose clock is younger than the record: set aside */
	struct xid_watch young;
	xidwatch_init(&young, "boot");
	CHECK(xidwatch_parse(&young, text.buf, text.len, 500, &err) < 0);
	CHECK_INT(young.nr_ev, 0);
	strbuf_release(&text);
	strbuf_release(&err);
	xidwatch_release(&back);
	xidwatch_release(&young);
	free(d);
	xidwatch_release(&w);
}

/* What the worker sends is checked before it reaches a message: an address with a terminal
 * escape or bidi control is refused, a count of 0 or a negative time too. */
TEST(xidwatch_drain_json_refuses_what_is_no_address)
{
	static const char *const bad[] = {
		"{\"rc\":0,\"since\":1,\"at\":2,\"gpus\":[{\"bdf\":\"0000:18:00.0\\u001b[31m\",\"rc\":0}],\"events\":[]}",
		"{\"rc\":0,\"since\":1,\"at\":2,\"gpus\":[],\"events\":[{\"bdf\":\"0000:18:00.0\\u202e\",\"xid\":79,\"count\":1}]}",
		"{\"rc\":0,\"since\":1,\"at\":2,\"gpus\":[],\"events\":[{\"bdf\":\"0000:18:00.0\",\"xid\":79,\"count\":0}]}",
		"{\"rc\":0,\"since\":-1,\"at\":2,\"gpus\":[],\"events\":[]}",
		"[1,2]",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strbuf err = STRBUF_INIT;
		struct nvml_xid_drain *d = xcalloc(1, sizeof(*d));
		struct json_value *v = json_parse(bad[i], strlen(bad[i]), &err);
		CHECK_MSG(v, "%zu: %s", i, err.buf);
		CHECK_MSG(xidwatch_drain_from_json(v, d, &err) < 0, "%zu accepted", i);
		json_free(v);
		free(d);
		strbuf_release(&err);
	}
}

/* The log says a GPU reset cleared a sticky Xid 79 (a line anyone can forge); NVML reported the
 * 79 and has watched that GPU without a break since (its worker holds the GPU: no reset can
 * happen): the 79 stands. After a break in the watch (the worker was replaced, a reset was
 * possible) the log's reset is believed. */
TEST(xidwatch_reset_marker_does_not_clear_what_nvml_watched_since)
{
	struct xid_watch w;
	struct report rep;
	xidwatch_init(&w, "boot");
	struct nvml_xid_drain *d = xw_drain(100, 300);
	d->nr_ev = 1;
	strlcpy_v(d->ev[0].bdf, "0000:18:00.0", sizeof(d->ev[0].bdf));
	d->ev[0].xid = 79;
	d->ev[0].count = 1;
	xidwatch_merge(&w, d);
	d->nr_ev = 0;
	d->at = 500;
	xidwatch_merge(&w, d);

	xw_report(&rep, "0000:18:00.0", 79, 250, 250);
	struct finding *f = &rep.results[1].findings[0];
	f->status = STATUS_OK;
	f->action = ACTION_NONE;
	finding_detail(f, "state", "cleared by a GPU reset or re-initialisation");
	report_finish(&rep);
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	CHECK_INT(xidwatch_judge(&w, &rep, 600, 3600), 1);
	report_finish(&rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	CHECK_CONTAINS(rep.results[1].findings[0].message, "the GPU reset the kernel log shows after "
							    "it is doubtful");
	report_release(&rep);

	/* a new worker since (a new watch from 700): a reset could have happened in between */
	struct nvml_xid_drain *n = xw_drain(700, 800);
	xidwatch_merge(&w, n);
	xw_report(&rep, "0000:18:00.0", 79, 250, 250);
	f = &rep.results[1].findings[0];
	f->status = STATUS_OK;
	f->action = ACTION_NONE;
	finding_detail(f, "state", "cleared by a GPU reset or re-initialisation");
	report_finish(&rep);
	CHECK_INT(xidwatch_judge(&w, &rep, 900, 3600), 0);
	report_finish(&rep);
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	report_release(&rep);
	free(d);
	free(n);
	xidwatch_release(&w);
}

/* A child that allocates in every size class, as the gpu worker and forked checks do. */
static void allocate_everything(void)
{
	for (int round = 0; round < 4; round++)
		for (size_t n = 1; n < 70000; n += n / 8 + 1) {
			void *p = malloc(n);
			if (p)
				((volatile char *)p)[0] = 1;
			free(p);
		}
}

/*
 * The agent forks its gpu worker right after it starts the socket's thread. A fork while that
 * thread was still starting (allocating its poll set) copied the allocator's lock it held, and
 * the worker hung in its next malloc or free: the intermittent "gpu: timed out" cycles of the
 * agent's NVML tests. Forked at once after agent_sock_start, every child must finish.
 */
TEST_TIMEOUT(agent_sock_start_then_fork_never_hangs_the_child, 120)
{
	struct agent a;
	struct vclock v;
	struct strbuf err = STRBUF_INIT;
	vagent(&a, &v, NULL, 1);
	v.wall = wall_seconds();
	agent_loop(&a);
	char *path = sock_path_in(test_tmpdir());
	unsigned hung = 0, runs = 200;
	for (unsigned i = 0; i < runs; i++) {
		struct agent_sock *s = agent_sock_start(&a, path, NULL, &err);
		CHECK_MSG(s, "cannot start: %s", err.buf);
		pid_t pid = fork();
		if (pid == 0) {
			allocate_everything();
			_exit(0);
		}
		CHECK(pid > 0);
		int st = 0, k = 0;
		while (waitpid(pid, &st, WNOHANG) == 0 && k++ < 300)
			usleep(10000);
		if (k > 300) {
			hung++;
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
		agent_sock_stop(s);
	}
	CHECK_MSG(hung == 0, "%u of %u children forked after the socket's start hung", hung, runs);
	free(path);
	strbuf_release(&err);
	agent_release(&a);
}

/* ---- SIGHUP's reload in the loop (virtual time) ---- */

struct vreload {
	struct agent *a;
	unsigned calls;
};

static void v_reload(void *arg)
{
	struct vreload *r = arg;
	struct agent_settings s = { .interval_s = 5, .jitter_s = 0, .escalate_after = 7 };
	r->calls++;
	agent_apply(r->a, &s);
}

/* The flag a HUP sets is read by the loop between cycles, once: the reload's new interval (and
 * the max-age that follows it) rules the very next gaps; the paths and host stay. */
TEST(agent_loop_reloads_between_cycles_when_asked)
{
	struct agent a;
	struct vclock v;
	struct vreload r = { &a, 0 };
	vagent(&a, &v, "/nonexistent-state", 3);
	a.set.jitter_s = 0;
	a.reload = v_reload;
	a.reload_arg = &r;
	agent_reload_requested = 0;
	agent_loop(&a);
	CHECK_INT(r.calls, 0);
	CHECK(v.starts[2] - v.starts[1] > 29.9 && v.starts[2] - v.starts[1] < 30.1);
	agent_reload_requested = 1;
	a.set.max_cycles = 3;
	agent_loop(&a);
	CHECK_INT(r.calls, 1);
	CHECK_INT(agent_reload_requested, 0);
	CHECK_INT(v.nr_starts, 6);
	CHECK_MSG(v.starts[5] - v.starts[4] > 4.9 && v.starts[5] - v.starts[4] < 5.1, "gap %.3f",
		  v.starts[5] - v.starts[4]);
	CHECK(a.set.max_age_s > 14.9 && a.set.max_age_s < 15.1);
	CHECK_INT(a.set.escalate_after, 7);
	CHECK_STR(a.set.state_dir, "/nonexistent-state");
	CHECK_STR(a.set.host, "vhost");
	struct strbuf m = STRBUF_INIT;
	agent_metrics(&a, &m);
	CHECK_CONTAINS(m.buf, "vigil_agent_interval_seconds 5\n");
	strbuf_release(&m);
	agent_release(&a);
}
