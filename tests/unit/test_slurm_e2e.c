/*
 * test_slurm_e2e.c: vigil against a real Slurm started on this machine (Debian slurm-wlm and
 * munge): munged, one slurmctld and four slurmd (n1..n4, tests/e2e/slurm-cluster), each node's
 * vigil pointed at its own fixture root. A guardian process stops the cluster when the test
 * ends, however it ends (pass, failure, timeout). Without Slurm or root the tests are skipped
 * with the reason.
 *
 * The fixtures use the kernel check only (a kmsg Xid 79 line fails it, an empty log passes), so
 * the verdicts do not depend on what the other checks make of an empty root.
 */
#include "../harness.h"
#include "../../src/slurm/slurm.h"
#include "../../src/agent/cache.h"
#include "../../src/lib/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#define NODES 4

static const char xid_kmsg[] =
	"3,100,1000000,-;NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=python, GPU has fallen off "
	"the bus.\n";

struct cluster {
	char dir[512];  /* .../slurm */
	char fx[512];   /* .../fx: one root per node */
	unsigned port;
};

static void node_write(struct cluster *c, const char *node, const char *kmsg)
{
	struct strbuf rel = STRBUF_INIT;
	strbuf_addf(&rel, "%s/dev/kmsg", node);
	test_write(c->fx, rel.buf, kmsg);
	strbuf_release(&rel);
}

/* Start n1..n4 with health = NULL (no HealthCheckProgram) or a wrapper run every interval s. */
static void cluster_start(struct cluster *c, bool health, unsigned interval)
{
	const char *tmp = test_tmpdir();
	struct strbuf err = STRBUF_INIT, wrapper = STRBUF_INIT, hp = STRBUF_INIT;
	snprintf(c->dir, sizeof(c->dir), "%s/slurm", tmp);
	snprintf(c->fx, sizeof(c->fx), "%s/fx", tmp);
	c->port = 21000 + (unsigned)(getpid() % 400) * 20;
	for (int i = 1; i <= NODES; i++) {
		char n[8];
		snprintf(n, sizeof(n), "n%d", i);
		node_write(c, n, TEST_KMSG_CLEAN);
	}
	/* The HealthCheckProgram: slurmd gives it SLURMD_NODENAME and little else. */
	strbuf_addf(&wrapper,
		    "#!/bin/sh\n"
		    "export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF=%s/slurm.conf\n"
		    "exec %s check --slurm --only kernel --root %s/$SLURMD_NODENAME "
		    "--state-dir %s/$SLURMD_NODENAME.state -c slurm.timeout=5 "
		    ">>%s/log/health-$SLURMD_NODENAME.log 2>&1\n",
		    c->dir, test_vigil_bin(), c->fx, c->fx, c->dir);
	test_write(tmp, "slurm/health", wrapper.buf);
	strbuf_addf(&hp, "%s/health", c->dir);
	chmod(hp.buf, 0755);
	test_mkdir(tmp, "slurm/log");
	/* The vigil that srun runs on each node: its own fixture root. */
	strbuf_reset(&wrapper);
	strbuf_addf(&wrapper,
		    "#!/bin/sh\n"
		    "[ -e %s/$SLURMD_NODENAME.hang ] && exec sleep 120\n"
		    "exec %s \"$@\" --only kernel --root %s/$SLURMD_NODENAME\n",
		    c->fx, test_vigil_bin(), c->fx);
	test_write(tmp, "slurm/remote-vigil", wrapper.buf);
	strbuf_reset(&wrapper);
	strbuf_addf(&wrapper, "%s/remote-vigil", c->dir);
	chmod(wrapper.buf, 0755);

	test_slurm_guardian(c->dir);
	char port[16], nodes[8], iv[16];
	snprintf(port, sizeof(port), "%u", c->port);
	snprintf(nodes, sizeof(nodes), "%d", NODES);
	snprintf(iv, sizeof(iv), "%u", interval);
	const char *args[] = { "start", c->dir, nodes, port, health ? hp.buf : "", iv, NULL };
	int rc = test_slurm_cluster(args, 150000, &err);
	if (rc != 0) {
		static char why[1024];
		snprintf(why, sizeof(why), "cannot start Slurm here (exit %d): %s", rc, err.buf);
		SKIP(why);
	}
	struct strbuf env = STRBUF_INIT;
	strbuf_addf(&env, "%s/slurm.conf", c->dir);
	setenv("SLURM_CONF", env.buf, 1);
	strbuf_release(&env);
	strbuf_release(&err);
	strbuf_release(&wrapper);
	strbuf_release(&hp);
}

/* Does the NUL-separated file at path hold an entry containing needle (or equal to it)? */
static bool proc_file_has(const char *path, const char *needle, bool whole)
{
	struct strbuf sb = STRBUF_INIT;
	bool yes = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[8192];
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0 && sb.len < (1u << 20))
			strbuf_add(&sb, buf, (size_t)n);
		close(fd);
	}
	for (size_t i = 0; i < sb.len && !yes; i += strlen(sb.buf + i) + 1)
		yes = whole ? !strcmp(sb.buf + i, needle) : strstr(sb.buf + i, needle) != NULL;
	strbuf_release(&sb);
	return yes;
}

/* Processes of this test's cluster still alive: a command line naming its directory, or its
 * SLURM_CONF in the environment (slurmstepd, the tasks it ran). Their pids and names in out. */
static size_t cluster_leftovers(const struct cluster *c, struct strbuf *out)
{
	char conf[600], path[64];
	size_t n = 0;
	snprintf(conf, sizeof(conf), "SLURM_CONF=%s/slurm.conf", c->dir);
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		long pid = strtol(e->d_name, NULL, 10);
		if (pid <= 1 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		bool mine = proc_file_has(path, c->dir, false);
		snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
		mine = mine || proc_file_has(path, conf, true);
		if (!mine)
			continue;
		struct strbuf comm = STRBUF_INIT;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		read_file_bounded(path, &comm, 64, NULL);
		strbuf_rtrim(&comm);
		strbuf_addf(out, " %ld (%s)", pid, comm.buf);
		strbuf_release(&comm);
		n++;
	}
	closedir(d);
	return n;
}

/* Stop the cluster; nothing of it may be left running (a slurmstepd was, after every run). */
static void cluster_stop(struct cluster *c)
{
	const char *stop[] = { "stop", c->dir, NULL };
	struct strbuf left = STRBUF_INIT;
	test_slurm_cluster(stop, 30000, NULL);
	for (int i = 0; i < 50; i++) {
		strbuf_reset(&left);
		if (!cluster_leftovers(c, &left))
			break;
		usleep(100000);
	}
	CHECK_MSG(!left.len, "processes of the test's cluster left running:%s", left.buf);
	strbuf_release(&left);
}

static const struct slurm_cmds cmds = { .scontrol = "scontrol", .sinfo = "sinfo", .srun = "srun",
					.timeout_ms = 10000 };

static void node_get(const char *name, struct slurm_node *n)
{
	struct strbuf err = STRBUF_INIT;
	memset(n, 0, sizeof(*n));
	CHECK_MSG(slurm_node_get(&cmds, name, n, &err) == 0, "scontrol on %s: %s", name, err.buf);
	strbuf_release(&err);
}

/* Wait up to secs for node to be drained (want true) or not; returns the node as last seen. */
static bool wait_drain(const char *name, bool want, unsigned secs, struct slurm_node *n)
{
	uint64_t end = mono_ms() + secs * 1000u;
	for (;;) {
		node_get(name, n);
		if (!!(n->flags & NODE_DRAIN) == want)
			return true;
		if (mono_ms() > end)
			return false;
		slurm_node_release(n);
		usleep(200000);
	}
}

static void scontrol(const char *const *args)
{
	const char *argv[12] = { "scontrol" };
	size_t n = 1;
	for (size_t i = 0; args[i] && n < 11; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 15000;
	CHECK(child_run(&c, NULL) == 0);
	CHECK_MSG(c.exited && c.exit_code == 0, "scontrol %s: %s", args[0], c.err.buf);
	child_release(&c);
}

static bool log_has(struct cluster *c, const char *node, const char *text)
{
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT;
	strbuf_addf(&p, "%s/log/health-%s.log", c->dir, node);
	read_file_bounded(p.buf, &sb, 16 << 20, NULL);
	bool yes = strstr(sb.buf, text) != NULL;
	strbuf_release(&p);
	strbuf_release(&sb);
	return yes;
}

static size_t log_count(struct cluster *c, const char *node, const char *text)
{
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT;
	size_t n = 0;
	strbuf_addf(&p, "%s/log/health-%s.log", c->dir, node);
	read_file_bounded(p.buf, &sb, 16 << 20, NULL);
	for (const char *s = sb.buf; (s = strstr(s, text)); s++)
		n++;
	strbuf_release(&p);
	strbuf_release(&sb);
	return n;
}

/* The kernel check must judge the fixtures, or these tests prove nothing. */
static void require_kernel_check(void)
{
	const char *dir = test_tmpdir();
	struct strbuf bad = STRBUF_INIT, good = STRBUF_INIT;
	strbuf_addf(&bad, "%s/probe-bad", dir);
	strbuf_addf(&good, "%s/probe-good", dir);
	test_write(dir, "probe-bad/dev/kmsg", xid_kmsg);
	test_write(dir, "probe-good/dev/kmsg", TEST_KMSG_CLEAN);
	struct child c1, c2;
	const char *a1[] = { "check", "--only", "kernel", "--root", bad.buf, "--reason", NULL };
	const char *a2[] = { "check", "--only", "kernel", "--root", good.buf, "--reason", NULL };
	test_run_vigil(&c1, a1, NULL);
	test_run_vigil(&c2, a2, NULL);
	CHECK_MSG(c1.exit_code == 1 && c2.exit_code == 0,
		  "the kernel check does not tell the fixtures apart: %d '%s', %d '%s'",
		  c1.exit_code, c1.out.buf, c2.exit_code, c2.out.buf);
	child_release(&c1);
	child_release(&c2);
	strbuf_release(&bad);
	strbuf_release(&good);
}

TEST_TIMEOUT(slurm_e2e_health_program_drains_and_resumes_and_respects_admins, 300)
{
	struct cluster c;
	struct slurm_node n;
	require_kernel_check();
	cluster_start(&c, true, 2);
	/* n3: drained by an administrator, and faulty too: vigil must leave it exactly so */
	const char *admin[] = { "update", "NodeName=n3", "State=DRAIN",
				"Reason=admin: fan swap, ticket \"42\"; don't resume", NULL };
	scontrol(admin);
	node_write(&c, "n3", xid_kmsg);
	node_write(&c, "n2", xid_kmsg);

	CHECK_MSG(wait_drain("n2", true, 40, &n), "n2 not drained: %s '%s'", n.state, n.reason);
	CHECK_MSG(starts_with(n.reason, "vigil: kernel: Xid 79 on GPU 0000:9b:00.0"),
		  "n2 reason '%s'", n.reason);
	slurm_node_release(&n);
	for (int i = 0; i < 40 && !log_has(&c, "n3", "drained by someone else"); i++)
		usleep(250000);
	CHECK_MSG(log_has(&c, "n3", "already drained by someone else: their reason is kept"),
		  "the health program never ran on n3");
	node_get("n3", &n);
	CHECK_STR(n.reason, "admin: fan swap, ticket \"42\"; don't resume");
	CHECK(n.flags & NODE_DRAIN);
	slurm_node_release(&n);
	const char *healthy[] = { "n1", "n4" };
	for (size_t i = 0; i < ARRAY_SIZE(healthy); i++) {
		node_get(healthy[i], &n);
		CHECK_MSG(!(n.flags & NODE_DRAIN), "%s drained: %s", healthy[i], n.reason);
		slurm_node_release(&n);
	}

	/* healed: n2 comes back; n3 stays the administrator's */
	node_write(&c, "n2", TEST_KMSG_CLEAN);
	node_write(&c, "n3", TEST_KMSG_CLEAN);
	CHECK_MSG(wait_drain("n2", false, 40, &n), "n2 not resumed: %s '%s'", n.state, n.reason);
	slurm_node_release(&n);
	size_t before = log_count(&c, "n3", "healthy, but drained by someone else");
	for (int i = 0; i < 60 && log_count(&c, "n3", "healthy, but drained by someone else") <
				       before + 2; i++)
		usleep(250000);
	CHECK(log_count(&c, "n3", "healthy, but drained by someone else") >= before + 2);
	node_get("n3", &n);
	CHECK(n.flags & NODE_DRAIN);
	CHECK_STR(n.reason, "admin: fan swap, ticket \"42\"; don't resume");
	slurm_node_release(&n);
	cluster_stop(&c);
}

static struct json_value *fleet_json(const char *const *extra, int *code, char **table)
{
	const char *args[24] = { "fleet", "check" };
	size_t n = 2;
	for (size_t i = 0; extra[i]; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	struct child c;
	test_run_vigil(&c, args, NULL);
	*code = c.exit_code;
	struct json_value *v = NULL;
	if (table)
		*table = xstrdup(c.out.buf);
	else
		v = test_parse_json(&c);
	child_release(&c);
	return v;
}

static const char *row(const struct json_value *v, const char *node, const char *key)
{
	const struct json_value *nodes = json_get(v, "nodes");
	for (size_t i = 0; nodes && i < nodes->nr; i++)
		if (!strcmp(json_get_string(nodes->items[i], "node"), node))
			return json_get_string(nodes->items[i], key);
	return NULL;
}

TEST_TIMEOUT(slurm_e2e_fleet_check_every_node_and_unreachable, 300)
{
	struct cluster c;
	struct slurm_node n;
	require_kernel_check();
	cluster_start(&c, false, 0);
	node_write(&c, "n2", xid_kmsg);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "fleet.command=%s/remote-vigil", c.dir);

	/* all four answer */
	const char *a1[] = { "--json", "-c", cmd, NULL };
	int code;
	struct json_value *v = fleet_json(a1, &code, NULL);
	CHECK_INT(code, 1);
	CHECK_STR(json_get_string(v, "verdict"), "unhealthy");
	CHECK_STR(row(v, "n1", "verdict"), "healthy");
	CHECK_STR(row(v, "n2", "verdict"), "unhealthy");
	CHECK_CONTAINS(row(v, "n2", "reason"), "kernel: Xid 79");
	CHECK_STR(row(v, "n3", "verdict"), "healthy");
	CHECK_STR(row(v, "n4", "verdict"), "healthy");
	json_free(v);

	/* n4's slurmd stopped, n3's vigil hangs: both unreachable, never healthy */
	const char *stop[] = { "stop-node", c.dir, "n4", NULL };
	CHECK_INT(test_slurm_cluster(stop, 30000, NULL), 0);
	test_write(c.fx, "n3.hang", "");
	/* one srun a node (fleet.one-step=false): each node its own deadline. In one step the
	 * dead n4 aborts the step and the hung n3 is asked again (test_slurm_e2e_onestep.c) */
	const char *a2[] = { "--timeout", "12", "-c", cmd, "-c", "fleet.one-step=false", NULL };
	char *table;
	uint64_t t0 = mono_ms();
	fleet_json(a2, &code, &table);
	uint64_t ms = mono_ms() - t0;
	CHECK_INT(code, 1);
	CHECK_CONTAINS(table, "NODE");
	CHECK_CONTAINS(table, "REASON");
	const char *want[][2] = { { "n1", "healthy" }, { "n2", "unhealthy" },
				  { "n3", "unreachable" }, { "n4", "unreachable" } };
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const char *line = strstr(table, want[i][0]);
		CHECK_MSG(line, "no row for %s:\n%s", want[i][0], table);
		const char *eol = strchr(line, '\n');
		char buf[400];
		snprintf(buf, sizeof(buf), "%.*s", (int)(eol ? eol - line : 300), line);
		CHECK_MSG(strstr(buf, want[i][1]), "%s: want %s in '%s'", want[i][0], want[i][1],
			  buf);
		CHECK_MSG(!strstr(want[i][1], "unreachable") || !strstr(buf, " healthy"),
			  "unreachable node called healthy: %s", buf);
	}
	CHECK_CONTAINS(table, "no answer within 12 s");
	CHECK_CONTAINS(table, "4 nodes: 1 healthy, 1 unhealthy, 0 unknown, 2 unreachable");
	CHECK_MSG(ms < 40000, "fleet took %llu ms", (unsigned long long)ms);
	free(table);
	char hang[600];
	snprintf(hang, sizeof(hang), "%s/n3.hang", c.fx);
	unlink(hang);

	/* --drain from the login node, on a partition: n2 drained by vigil, n1 and n3 left */
	const char *a3[] = { "--json", "--drain", "--nodes", "n[1-3]", "-c", cmd, NULL };
	v = fleet_json(a3, &code, NULL);
	CHECK_INT(code, 1);
	CHECK_STR(row(v, "n2", "slurm_action"), "drain");
	CHECK_STR(row(v, "n1", "slurm_action"), "nothing");
	CHECK(!row(v, "n4", "verdict"));
	json_free(v);
	node_get("n2", &n);
	CHECK(n.flags & NODE_DRAIN);
	CHECK(starts_with(n.reason, "vigil: kernel: Xid 79"));
	slurm_node_release(&n);
	node_get("n1", &n);
	CHECK(!(n.flags & NODE_DRAIN));
	slurm_node_release(&n);
	/* a drained node cannot run srun: reported as such, not as healthy */
	const char *a4[] = { "--json", "--partition", "debug", "-c", cmd, "--timeout", "12", NULL };
	v = fleet_json(a4, &code, NULL);
	CHECK_STR(row(v, "n2", "verdict"), "unreachable");
	CHECK_CONTAINS(row(v, "n2", "reason"), "not checked (drained): vigil: kernel");
	json_free(v);
	cluster_stop(&c);
}

TEST_TIMEOUT(slurm_e2e_metacharacters_in_names_and_reasons_are_harmless, 300)
{
	struct cluster c;
	struct slurm_node n;
	cluster_start(&c, false, 0);
	const char *dir = test_tmpdir();
	char state[600], pwn[600], cwd_pwn[64] = "PWNED";
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(pwn, sizeof(pwn), "%s/PWNED", dir);
	/* a reason built from a hostile process name: quotes, ;, $(), backticks, a newline */
	struct strbuf msg = STRBUF_INIT;
	strbuf_addf(&msg, "Xid 79, name=\"x\"; $(touch %s) `touch %s` 'q' && touch %s\nnext line",
		    pwn, pwn, cwd_pwn);
	struct report rep;
	struct strbuf js = STRBUF_INIT, p = STRBUF_INIT, err = STRBUF_INIT;
	report_init(&rep, "n1", wall_seconds());
	struct check_result *r = report_add(&rep, "kernel");
	result_add(r, STATUS_FAIL, ACTION_REBOOT, "xid", "GPU 1", "%s", msg.buf);
	result_finish(r);
	report_finish(&rep);
	report_json(&rep, &js, false);
	CHECK(mkdir_p(state, 0755, &err) == 0);
	agent_cache_path(&p, state);
	CHECK(write_file(p.buf, js.buf, js.len, true, &err) == 0);
	char want[160];
	snprintf(want, sizeof(want), "vigil: %s", rep.reason);
	report_release(&rep);

	const char *args[] = { "check", "--slurm", "--cached", "--state-dir", state, NULL };
	const char *env1[] = { "SLURMD_NODENAME=n1", NULL };
	struct child ch;
	test_run_vigil(&ch, args, env1);
	CHECK_INT(ch.exit_code, 1);
	child_release(&ch);
	node_get("n1", &n);
	CHECK(n.flags & NODE_DRAIN);
	CHECK_STR(n.reason, want); /* verbatim, the newline made a space */
	CHECK_NOT_CONTAINS(n.reason, "\n");
	slurm_node_release(&n);

	/* node names that would be a hostlist, a shell command or a second option */
	const char *names[] = { "SLURMD_NODENAME=n[2-4]", "SLURMD_NODENAME=n2;touch PWNED",
				"SLURMD_NODENAME=n2 State=DOWN", "SLURMD_NODENAME=$(touch PWNED)",
				"SLURMD_NODENAME=n2\nn3" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		const char *env[] = { names[i], NULL };
		test_run_vigil(&ch, args, env);
		CHECK_INT(ch.exit_code, 1);
		CHECK_CONTAINS(ch.err.buf, "refusing node name");
		child_release(&ch);
	}
	for (int i = 2; i <= NODES; i++) {
		char nn[8];
		snprintf(nn, sizeof(nn), "n%d", i);
		node_get(nn, &n);
		CHECK_MSG(!(n.flags & (NODE_DRAIN | NODE_DOWN)), "%s touched: %s", nn, n.state);
		slurm_node_release(&n);
	}
	struct stat st;
	CHECK(stat(pwn, &st) < 0);
	CHECK(stat(cwd_pwn, &st) < 0);

	/* healthy again: vigil resumes its own drain, reason and all */
	report_init(&rep, "n1", wall_seconds());
	result_add(report_add(&rep, "kernel"), STATUS_OK, ACTION_NONE, "summary", "", "clean");
	rep.results[0].status = STATUS_OK;
	report_finish(&rep);
	strbuf_reset(&js);
	report_json(&rep, &js, false);
	report_release(&rep);
	CHECK(write_file(p.buf, js.buf, js.len, true, &err) == 0);
	test_run_vigil(&ch, args, env1);
	CHECK_INT(ch.exit_code, 0);
	child_release(&ch);
	node_get("n1", &n);
	CHECK(!(n.flags & NODE_DRAIN));
	slurm_node_release(&n);
	strbuf_release(&msg);
	strbuf_release(&js);
	strbuf_release(&p);
	strbuf_release(&err);
	cluster_stop(&c);
}
