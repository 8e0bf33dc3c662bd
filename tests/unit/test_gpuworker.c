/*
 * test_gpuworker.c: the agent's gpu worker against the fake NVML: NVML is initialised once over
 * many runs, a run stuck in NVML is killed at its deadline and reported unknown "timed out", the
 * next run gets a new worker that works, a worker killed between runs is replaced; and the
 * 'vigil agent' binary runs its gpu check through the worker (one NVML start over its cycles),
 * or, with agent.gpu-worker = false, afresh each cycle.
 */
#include "../harness.h"
#include "../../src/agent/gpuworker.h"
#include "../../src/lib/fileio.h"
#include "../../src/sys/fsroot.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t count_lines(const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0;
	read_file_bounded(path, &sb, 1 << 20, NULL);
	for (size_t i = 0; i < sb.len; i++)
		n += sb.buf[i] == '\n';
	strbuf_release(&sb);
	return n;
}

struct fixture {
	struct strbuf root, init_log, hang;
	struct config cfg;
	struct fsroot fs;
	struct gpu_worker w;
};

static void fixture_setup(struct fixture *f)
{
	const char *dir = test_tmpdir();
	strbuf_init(&f->root, 0);
	strbuf_init(&f->init_log, 0);
	strbuf_init(&f->hang, 0);
	test_src_path(&f->root, "tests/scenarios/gpu-healthy-8xh200/root");
	strbuf_addf(&f->init_log, "%s/init.log", dir);
	strbuf_addf(&f->hang, "%s/hang", dir);
	struct strbuf snap = STRBUF_INIT;
	strbuf_addf(&snap, "%s/nvml.snapshot", f->root.buf);
	setenv("VIGIL_NVML_LIBRARY", test_fake_nvml(), 1);
	setenv("VIGIL_NVML_SNAPSHOT", snap.buf, 1);
	setenv("VIGIL_FAKE_NVML_INIT_LOG", f->init_log.buf, 1);
	setenv("VIGIL_FAKE_NVML_HANG", f->hang.buf, 1);
	strbuf_release(&snap);
	CHECK_INT(fsroot_init(&f->fs, f->root.buf, NULL), 0);
	config_init(&f->cfg, "h");
	/* the worker keeps a copy of ctx: the root it points to lives in the fixture */
	struct check_ctx ctx = { .root = &f->fs, .cfg = &f->cfg, .host = "h" };
	gpu_worker_init(&f->w, check_find("gpu"), &ctx);
}

static void fixture_release(struct fixture *f)
{
	gpu_worker_release(&f->w);
	config_release(&f->cfg);
	fsroot_release(&f->fs);
	strbuf_release(&f->root);
	strbuf_release(&f->init_log);
	strbuf_release(&f->hang);
}

/* One request and its answer; the result's status. */
static enum status run_once(struct fixture *f, unsigned timeout_ms, struct strbuf *error)
{
	struct check_result res;
	struct strbuf err = STRBUF_INIT;
	check_result_init(&res, "gpu");
	CHECK_MSG(gpu_worker_send(&f->w, wall_seconds(), timeout_ms, &err) == 0, "send: %s",
		  err.buf);
	gpu_worker_wait(&f->w, &res);
	enum status st = res.status;
	strbuf_reset(error);
	strbuf_addstr(error, res.error ? res.error : "");
	bool summary = false;
	for (size_t i = 0; i < res.nr; i++)
		summary |= strstr(res.findings[i].message, "8 GPUs healthy") != NULL;
	if (st == STATUS_OK)
		CHECK_MSG(summary, "no '8 GPUs healthy' among %zu findings", res.nr);
	check_result_release(&res);
	strbuf_release(&err);
	return st;
}

TEST(gpu_worker_keeps_nvml_initialised_and_survives_a_hang)
{
	struct fixture f;
	struct strbuf why = STRBUF_INIT;
	fixture_setup(&f);
	for (int i = 0; i < 3; i++)
		CHECK_STR(status_name(run_once(&f, 20000, &why)), "ok");
	/* three runs, one NVML start, one worker */
	CHECK_INT(count_lines(f.init_log.buf), 1);
	CHECK_INT(f.w.starts, 1);
	pid_t first = f.w.pid;
	CHECK(first > 0);
	CHECK(gpu_worker_cpu(&f.w) > 0);

	/* NVML stops answering: the run is unknown "timed out", the worker's group is killed */
	test_write(test_tmpdir(), "hang", "");
	CHECK_STR(status_name(run_once(&f, 500, &why)), "unknown");
	CHECK_CONTAINS(why.buf, "timed out after 0.5 s");
	CHECK_INT(f.w.timeouts, 1);
	CHECK_INT(f.w.pid, 0);
	CHECK(kill(first, 0) < 0); /* gone (and reaped) */

	/* NVML answers again: a new worker, a new NVML start, a healthy result */
	unlink(f.hang.buf);
	CHECK_STR(status_name(run_once(&f, 20000, &why)), "ok");
	CHECK_INT(f.w.starts, 2);
	CHECK_INT(count_lines(f.init_log.buf), 2);
	CHECK(f.w.pid != first);
	strbuf_release(&why);
	fixture_release(&f);
}

TEST(gpu_worker_killed_between_runs_is_replaced)
{
	struct fixture f;
	struct strbuf why = STRBUF_INIT;
	fixture_setup(&f);
	CHECK_STR(status_name(run_once(&f, 20000, &why)), "ok");
	pid_t first = f.w.pid;
	/* the OOM killer, say */
	CHECK(kill(first, SIGKILL) == 0);
	usleep(100000);
	CHECK_STR(status_name(run_once(&f, 20000, &why)), "ok");
	CHECK_INT(f.w.starts, 2);
	/* killed while it runs: unknown with how it ended, then replaced again */
	test_write(test_tmpdir(), "hang", "");
	struct check_result res;
	struct strbuf err = STRBUF_INIT;
	check_result_init(&res, "gpu");
	CHECK(gpu_worker_send(&f.w, wall_seconds(), 20000, &err) == 0);
	usleep(200000);
	kill(f.w.pid, SIGKILL);
	gpu_worker_wait(&f.w, &res);
	CHECK_STR(status_name(res.status), "unknown");
	CHECK_CONTAINS(res.error, "the gpu worker crashed (Killed)");
	check_result_release(&res);
	unlink(f.hang.buf);
	CHECK_STR(status_name(run_once(&f, 20000, &why)), "ok");
	CHECK_INT(f.w.starts, 3);
	strbuf_release(&err);
	strbuf_release(&why);
	fixture_release(&f);
}

/* The daemon: four cycles of the gpu check, one NVML start; a hang is a counted timeout. */
TEST_TIMEOUT(agent_runs_the_gpu_check_in_one_worker, 120)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, prom = STRBUF_INIT,
		      log = STRBUF_INIT, hang = STRBUF_INIT, e1 = STRBUF_INIT, e2 = STRBUF_INIT,
		      e3 = STRBUF_INIT;
	test_src_path(&root, "tests/scenarios/gpu-healthy-8xh200/root");
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&prom, "%s/vigil.prom", dir);
	strbuf_addf(&log, "%s/init.log", dir);
	strbuf_addf(&hang, "%s/hang", dir);
	strbuf_addf(&e1, "VIGIL_FAKE_NVML_INIT_LOG=%s", log.buf);
	strbuf_addf(&e2, "VIGIL_FAKE_NVML_HANG=%s", hang.buf);
	const char *env[] = { e1.buf, e2.buf, NULL };
	const char *args[] = { "agent", "--only", "gpu,pcie,storage", "--root", root.buf, "--state-dir",
			       state.buf, "--prom", prom.buf, "--listen", "off", "--cycles", "4",
			       "--interval", "1", "--jitter", "0", NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	child_release(&c);
	CHECK_INT(count_lines(log.buf), 1);
	struct strbuf p = STRBUF_INIT;
	read_file_bounded(prom.buf, &p, 1 << 20, NULL);
	CHECK_CONTAINS(p.buf, "vigil_agent_cycles_total 4\n");
	CHECK_CONTAINS(p.buf, "vigil_check_status{check=\"gpu\",status=\"ok\"} 1\n");
	CHECK_CONTAINS(p.buf, "vigil_check_status{check=\"storage\",status=\"ok\"} 1\n");
	CHECK_CONTAINS(p.buf, "vigil_healthy 1\n");
	/* in table order, as 'vigil check' gives them */
	const char *g = strstr(p.buf, "vigil_check_status{check=\"gpu\""),
		   *pc = strstr(p.buf, "vigil_check_status{check=\"pcie\"");
	CHECK(g && pc && g < pc);

	/* NVML hangs in every cycle: each is killed at gpu.timeout, counted, and a new worker
	 * (a new NVML start) comes for the next */
	test_write(dir, "hang", "");
	unlink(log.buf);
	const char *hung[] = { "agent", "--only", "gpu,pcie,storage", "--root", root.buf, "--state-dir",
			       state.buf, "--prom", prom.buf, "--listen", "off", "--cycles", "2",
			       "--interval", "1", "--jitter", "0", "-c", "gpu.timeout=1", NULL };
	test_run_vigil(&c, hung, env);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	child_release(&c);
	CHECK_INT(count_lines(log.buf), 2);
	strbuf_reset(&p);
	read_file_bounded(prom.buf, &p, 1 << 20, NULL);
	CHECK_CONTAINS(p.buf, "vigil_agent_check_timeouts_total{check=\"gpu\"} 2\n");
	CHECK_CONTAINS(p.buf, "vigil_agent_check_unknown{check=\"gpu\",error=\"timed out after 1.0 s");
	CHECK_CONTAINS(p.buf, "vigil_check_status{check=\"storage\",status=\"ok\"} 1\n");
	CHECK_CONTAINS(p.buf, "vigil_verdict{verdict=\"unknown\"} 1\n");
	strbuf_release(&p);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&prom);
	strbuf_release(&log);
	strbuf_release(&hang);
	strbuf_release(&e1);
	strbuf_release(&e2);
	strbuf_release(&e3);
}

/* agent.gpu-worker = false: no worker is kept; the gpu check forks afresh each cycle like the
 * others, so N cycles are N NVML starts, and the result is the same healthy one. */
TEST_TIMEOUT(agent_gpu_worker_off_runs_a_fresh_gpu_check_each_cycle, 120)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, prom = STRBUF_INIT,
		      log = STRBUF_INIT, e1 = STRBUF_INIT;
	test_src_path(&root, "tests/scenarios/gpu-healthy-8xh200/root");
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&prom, "%s/vigil.prom", dir);
	strbuf_addf(&log, "%s/init.log", dir);
	strbuf_addf(&e1, "VIGIL_FAKE_NVML_INIT_LOG=%s", log.buf);
	const char *env[] = { e1.buf, NULL };
	const char *args[] = { "agent", "--only", "gpu,pcie", "--root", root.buf, "--state-dir",
			       state.buf, "--prom", prom.buf, "--listen", "off", "--cycles", "3",
			       "--interval", "1", "--jitter", "0", "-c", "agent.gpu-worker=false",
			       NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	child_release(&c);
	CHECK_INT(count_lines(log.buf), 3);
	struct strbuf p = STRBUF_INIT;
	read_file_bounded(prom.buf, &p, 1 << 20, NULL);
	CHECK_CONTAINS(p.buf, "vigil_agent_cycles_total 3\n");
	CHECK_CONTAINS(p.buf, "vigil_check_status{check=\"gpu\",status=\"ok\"} 1\n");
	CHECK_CONTAINS(p.buf, "vigil_healthy 1\n");

	/* and a value that is no boolean stops the agent at once, naming the key */
	const char *bad[] = { "agent", "--root", root.buf, "--listen", "off", "--once", "-c",
			      "agent.gpu-worker=sometimes", NULL };
	test_run_vigil(&c, bad, env);
	CHECK_MSG(c.exited && c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "agent.gpu-worker");
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&prom);
	strbuf_release(&log);
	strbuf_release(&e1);
}
