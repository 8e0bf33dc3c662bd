/*
 * test_agent_e2e.c: the agent's /metrics as Prometheus sees it: 'promtool check metrics' passes,
 * and a real Prometheus (Debian 'prometheus', on a loopback port with its own config and storage
 * in the test's directory) scrapes it: up{job="vigil"} is 1, and vigil_healthy follows the host
 * from healthy to unhealthy. Skipped with the reason when promtool or prometheus is missing.
 * The agent and Prometheus stay in the test's process group, which the harness kills at the end.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char xid_kmsg[] =
	"3,100,1000000,-;NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=python, GPU has fallen off "
	"the bus.\n";

static bool have(const char *prog)
{
	const char *argv[] = { prog, "--version", NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 20000;
	bool ok = child_run(&c, NULL) == 0 && c.exited && c.exit_code == 0;
	child_release(&c);
	return ok;
}

static pid_t spawn(const char *const *argv, const char *log)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Value of the first sample of an instant query, or NULL. */
static char *prom_query(unsigned port, const char *query_escaped)
{
	struct strbuf body = STRBUF_INIT, path = STRBUF_INIT;
	char *val = NULL;
	strbuf_addf(&path, "/api/v1/query?query=%s", query_escaped);
	if (test_http(port, "GET", path.buf, &body) == 200) {
		struct json_value *v = json_parse(body.buf, body.len, NULL);
		const struct json_value *s = v ? json_path(v, "data.result.0.value.1") : NULL;
		if (s && s->type == JSON_STRING)
			val = xstrdup(s->string);
		json_free(v);
	}
	strbuf_release(&body);
	strbuf_release(&path);
	return val;
}

static bool wait_query(unsigned port, const char *q, const char *want, unsigned secs)
{
	uint64_t end = mono_ms() + secs * 1000u;
	while (mono_ms() < end) {
		char *v = prom_query(port, q);
		bool ok = v && !strcmp(v, want);
		free(v);
		if (ok)
			return true;
		usleep(250000);
	}
	return false;
}

TEST_TIMEOUT(agent_e2e_promtool_and_a_real_prometheus_scrape, 120)
{
	if (!have("promtool"))
		SKIP("promtool is not installed (Debian: prometheus)");
	if (!have("prometheus"))
		SKIP("prometheus is not installed (Debian: prometheus)");
	const char *dir = test_tmpdir();
	unsigned base = 30000 + (unsigned)(getpid() % 1000) * 4;
	unsigned agent_port = base, prom_port = base + 1;
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, listen = STRBUF_INIT,
		      body = STRBUF_INIT, p = STRBUF_INIT, cfg = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&listen, "127.0.0.1:%u", agent_port);
	test_write(dir, "root/dev/kmsg", TEST_KMSG_CLEAN);
	test_write(dir, "root/etc/hostname", "gpu-node-7\n");

	strbuf_addf(&p, "%s/agent.log", dir);
	const char *agent[] = { test_vigil_bin(), "agent", "--only", "kernel", "--root", root.buf,
				"--state-dir", state.buf, "--listen", listen.buf, "--interval", "1",
				"--jitter", "0", NULL };
	pid_t apid = spawn(agent, p.buf);
	int code = -1;
	for (int i = 0; i < 100 && code != 200; i++) {
		usleep(50000);
		code = test_http(agent_port, "GET", "/metrics", &body);
	}
	CHECK_MSG(code == 200, "agent did not serve /metrics on %s", listen.buf);

	/* promtool reads the exposition from stdin */
	const char *pt[] = { "promtool", "check", "metrics", NULL };
	struct child c;
	child_init(&c);
	c.argv = pt;
	c.stdin_data = body.buf;
	c.stdin_len = body.len;
	c.timeout_ms = 30000;
	CHECK(child_run(&c, NULL) == 0);
	CHECK_MSG(c.exited && c.exit_code == 0, "promtool check metrics:\n%s%s\n---\n%s",
		  c.out.buf, c.err.buf, body.buf);
	child_release(&c);

	strbuf_addf(&cfg,
		    "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		    "scrape_configs:\n  - job_name: vigil\n    static_configs:\n"
		    "      - targets: ['127.0.0.1:%u']\n",
		    agent_port);
	test_write(dir, "prometheus.yml", cfg.buf);
	char cfgarg[700], data[700], web[64], log[700];
	snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s/prometheus.yml", dir);
	snprintf(data, sizeof(data), "--storage.tsdb.path=%s/prom-data", dir);
	snprintf(web, sizeof(web), "--web.listen-address=127.0.0.1:%u", prom_port);
	snprintf(log, sizeof(log), "%s/prometheus.log", dir);
	const char *prom[] = { "prometheus", cfgarg, data, web, "--log.level=warn", NULL };
	pid_t ppid = spawn(prom, log);

	bool up = wait_query(prom_port, "up%7Bjob%3D%22vigil%22%7D", "1", 60);
	if (!up) {
		struct strbuf l = STRBUF_INIT;
		read_file_bounded(log, &l, 1 << 16, NULL);
		CHECK_MSG(up, "Prometheus never saw up{job=\"vigil\"} = 1; its log:\n%s", l.buf);
	}
	CHECK(wait_query(prom_port, "vigil_healthy%7Bjob%3D%22vigil%22%7D", "1", 30));
	CHECK(wait_query(prom_port, "vigil_agent_up", "1", 10));
	/* the host goes bad: the next cycles say so, and Prometheus sees it */
	test_write(dir, "root/dev/kmsg", xid_kmsg);
	CHECK_MSG(wait_query(prom_port, "vigil_healthy%7Bjob%3D%22vigil%22%7D", "0", 30),
		  "Prometheus never saw vigil_healthy 0");
	CHECK(wait_query(prom_port,
			 "vigil_problem%7Bcheck%3D%22kernel%22%2Caction%3D%22REBOOT%22%7D", "1",
			 10));

	kill(ppid, SIGTERM);
	kill(apid, SIGTERM);
	int st;
	waitpid(apid, &st, 0);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent ended with status %d", st);
	waitpid(ppid, &st, 0);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&listen);
	strbuf_release(&body);
	strbuf_release(&p);
	strbuf_release(&cfg);
}
