/*
 * test_gpuworker.c: the agent's gpu worker against the fake NVML: NVML is initialised once over
 * many runs, a run stuck in NVML is killed at its deadline and reported unknown "timed out", the
 * next run gets a new worker that works, a worker killed between runs is replaced; and the
 * 'vigil agent' binary runs its gpu check through the worker (one NVML start over its cycles),
 * or, with agent.gpu-worker = false, afresh each cycle.
 */
#include "../harness.h"
#include "../../src/agent/gpuworker.h"
#include "../../src/agent/xidwatch.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/forkgate.h"
#include "../../src/sys/fsroot.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
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

/*
 * ---- NVML's own Xid events against the kernel log (issue 17) ----
 * A root made here: the healthy 8xH200 snapshot with Xid events supported (or not) and the
 * events the driver "raises", a /dev/kmsg of the test's choosing, a boot id. The kernel lines
 * carry stamps of this machine's CLOCK_MONOTONIC, so that they compare with the agent's watch,
 * as /dev/kmsg's do on a host.
 */
#define XW_BOOT "0a1b2c3d-0000-4000-8000-00000000b007"

static double test_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* events: "supported" (every GPU says 0x8f) or not; extra: lines for the snapshot's top. */
static void xw_root(const char *dir, bool supported, const char *extra, const char *kmsg)
{
	struct strbuf src = STRBUF_INIT, snap = STRBUF_INIT, p = STRBUF_INIT;
	test_src_path(&p, "tests/scenarios/gpu-healthy-8xh200/root");
	strbuf_addstr(&p, "/nvml.snapshot");
	CHECK_INT(read_file_bounded(p.buf, &src, 1 << 20, NULL), READ_OK);
	for (const char *s = src.buf; *s;) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) + 1 : strlen(s);
		strbuf_add(&snap, s, n);
		if (!strncmp(s, "device_count", 12) && extra)
			strbuf_addstr(&snap, extra);
		if (!strncmp(s, "[gpu ", 5) && supported)
			strbuf_addstr(&snap, "supported_event_types 0x8f\n");
		s += n;
	}
	test_write(dir, "root/nvml.snapshot", snap.buf);
	test_write(dir, "root/proc/sys/kernel/random/boot_id", XW_BOOT "\n");
	test_write(dir, "root/dev/kmsg", kmsg);
	test_mkdir(dir, "state");
	strbuf_release(&src);
	strbuf_release(&snap);
	strbuf_release(&p);
}

/* A /dev/kmsg: the boot banner, the driver loading, and (at stamp xid_at, if > 0) Xid 79 on the
 * GPU at 0000:18:00.0, as the driver prints it (tests/scenarios/kernel-xid79). */
static void xw_kmsg(struct strbuf *out, double xid_at)
{
	strbuf_addstr(out, "6,0,0,-;Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) "
			   "#45-Ubuntu SMP PREEMPT_DYNAMIC\n"
			   "6,1,9900000,-;NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  "
			   "550.90.07  Release Build\n");
	if (xid_at > 0)
		strbuf_addf(out, "4,2,%.0f,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', "
			    "name=<unknown>, GPU has fallen off the bus.\n", xid_at * 1e6);
}

/* 'vigil agent --once' over the root; its exit code, the cached report in *rep. */
static int xw_agent(const char *dir, const char *const *extra_env, const char *cycles,
		    struct strbuf *rep, struct strbuf *err)
{
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, p = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	const char *args[] = { "agent", "--only", "gpu,kernel", "--root", root.buf, "--state-dir",
			       state.buf, "--listen", "off", "--interval", "1", "--jitter", "0",
			       /* a short bound only where a test makes NVML hang: on a loaded
				* machine (the suite runs two lanes) an ASan build's gpu check can
				* take more than 2 s, and a timeout reads as unknown */
			       "-c", extra_env ? "gpu.timeout=2" : "gpu.timeout=20",
			       cycles ? "--cycles" : "--once", cycles, NULL };
	struct child c;
	test_run_vigil(&c, args, extra_env);
	int code = c.exited ? c.exit_code : -1;
	strbuf_reset(err);
	strbuf_addstr(err, c.err.buf);
	child_release(&c);
	strbuf_addf(&p, "%s/agent-report.json", state.buf);
	strbuf_reset(rep);
	read_file_bounded(p.buf, rep, 8 << 20, NULL);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&p);
	return code;
}

/* NVML reported Xid 79; the kernel log no longer shows it (rotated, cleared, flooded away): the
 * verdict is still unhealthy, from NVML's record, and stays so after the agent restarts (the
 * record is the agent's, durably). Before: "kernel log clean", healthy. */
TEST_TIMEOUT(agent_nvml_xid79_stands_when_the_log_lost_it, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf kmsg = STRBUF_INIT, rep = STRBUF_INIT, err = STRBUF_INIT;
	xw_kmsg(&kmsg, 0);
	xw_root(dir, true, "xid_event 0 79\n", kmsg.buf);
	int code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 1, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "\"verdict\": \"unhealthy\"");
	CHECK_CONTAINS(rep.buf, "Xid 79 on GPU 0000:18:00.0: GPU has fallen off the bus (reported by "
				"NVML; not in the kernel log)");
	CHECK_CONTAINS(rep.buf, "\"action\": \"REBOOT\"");
	struct strbuf p = STRBUF_INIT, rec = STRBUF_INIT;
	strbuf_addf(&p, "%s/state/nvml-xid.json", dir);
	CHECK_INT(read_file_bounded(p.buf, &rec, 1 << 20, NULL), READ_OK);
	CHECK_CONTAINS(rec.buf, "\"boot_id\": \"" XW_BOOT "\"");
	CHECK_CONTAINS(rec.buf, "\"xid\": 79");

	/* restarted, and NVML (a new worker) says nothing more: the record still holds */
	xw_root(dir, true, NULL, kmsg.buf);
	code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 1, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "(reported by NVML; not in the kernel log)");

	/* another boot: the record was that boot's, the node is healthy again */
	test_write(dir, "root/proc/sys/kernel/random/boot_id", "0a1b2c3d-0000-4000-8000-0000000b0008\n");
	code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 0, "exit %d: %s", code, err.buf);
	CHECK_NOT_CONTAINS(rep.buf, "reported by NVML");
	strbuf_release(&p);
	strbuf_release(&rec);
	strbuf_release(&kmsg);
	strbuf_release(&rep);
	strbuf_release(&err);
}

/* The record of an agent that watched GPU 0000:18:00.0 from..to in this boot. The tests watch
 * from a tenth of the uptime, so that the slack at a window's start (XIDWATCH_DRIFT_PPM of it)
 * fits on a host up for months, and put the line 5 s before now. */
static void xw_plant_record(const char *dir, double from, double to)
{
	struct strbuf r = STRBUF_INIT;
	strbuf_addf(&r, "{\"version\": 1, \"boot_id\": \"%s\", \"rc\": 0, \"gpus\": [{\"bdf\": "
		    "\"0000:18:00.0\", \"rc\": 0, \"windows\": [[%.3f, %.3f]]}], \"events\": []}\n",
		    XW_BOOT, from, to);
	test_write(dir, "state/nvml-xid.json", r.buf);
	strbuf_release(&r);
}

/* The kernel log shows Xid 79 at a moment NVML was watching that GPU, and NVML never reported
 * it: doubtful (unknown, no drain), saying why. Before: unhealthy, REBOOT (and with --slurm, a
 * drain) from a line any local user can make the kernel print. */
TEST_TIMEOUT(agent_kernel_xid79_nvml_never_reported_is_doubtful, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf kmsg = STRBUF_INIT, rep = STRBUF_INIT, err = STRBUF_INIT;
	double now = test_mono();
	xw_kmsg(&kmsg, now - 5);
	xw_root(dir, true, NULL, kmsg.buf);
	xw_plant_record(dir, now * 0.1, now - 1);
	int code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 3, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "\"verdict\": \"unknown\"");
	CHECK_CONTAINS(rep.buf, "Xid 79 on GPU 0000:18:00.0 appears in the kernel log but NVML, "
				"watching it since ");
	CHECK_CONTAINS(rep.buf, "never reported it and reads the GPU healthy: doubtful (another process may have printed it)");
	CHECK_NOT_CONTAINS(rep.buf, "\"action\": \"REBOOT\"");

	/* the same line before the watch began: NVML cannot tell, the line stands as before */
	xw_plant_record(dir, now - 3, now - 1);
	code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 1, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "\"nvml\": \"not watched by NVML when it was logged\"");

	/* and NVML did report it: it stands, saying so */
	xw_plant_record(dir, now * 0.1, now - 1);
	xw_root(dir, true, "xid_event 0 79\n", kmsg.buf);
	code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 1, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "\"nvml\": \"reported by NVML (1 times");
	CHECK_NOT_CONTAINS(rep.buf, "doubtful");
	strbuf_release(&kmsg);
	strbuf_release(&rep);
	strbuf_release(&err);
}

/* GPUs (or a VM) without Xid events: today's verdict from the log, and the finding says why NVML
 * did not weigh in. */
TEST_TIMEOUT(agent_xid_events_unsupported_keeps_the_log_verdict, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf kmsg = STRBUF_INIT, rep = STRBUF_INIT, err = STRBUF_INIT;
	double now = test_mono();
	xw_kmsg(&kmsg, now - 5);
	xw_root(dir, false, NULL, kmsg.buf);
	xw_plant_record(dir, now * 0.1, now - 1);
	int code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 1, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "\"nvml\": \"NVML has no Xid events for this GPU\"");
	CHECK_NOT_CONTAINS(rep.buf, "doubtful");
	strbuf_release(&kmsg);
	strbuf_release(&rep);
	strbuf_release(&err);
}

/* Attacks on the record: a link planted in its place (to a file the attacker wants clobbered or
 * read), garbage, a huge file, windows from the future. Each is set aside and the record starts
 * anew: nothing is doubted on its word (the log's Xid 79 stands), the link's target is untouched. */
TEST_TIMEOUT(agent_nvml_xid_record_planted_or_damaged_is_set_aside, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf kmsg = STRBUF_INIT, rep = STRBUF_INIT, err = STRBUF_INIT, p = STRBUF_INIT,
		      t = STRBUF_INIT, got = STRBUF_INIT;
	double now = test_mono();
	xw_kmsg(&kmsg, now - 5);
	xw_root(dir, true, NULL, kmsg.buf);
	strbuf_addf(&p, "%s/state/nvml-xid.json", dir);
	strbuf_addf(&t, "%s/elsewhere.json", dir);
	for (int round = 0; round < 4; round++) {
		unlink(p.buf);
		strbuf_reset(&got);
		strbuf_addf(&got, "%s.damaged", p.buf);
		unlink(got.buf);
		if (round == 0) {
			/* a link to a record that would make the line doubtful */
			xw_plant_record(dir, now * 0.1, now - 1);
			CHECK(rename(p.buf, t.buf) == 0);
			CHECK(symlink(t.buf, p.buf) == 0);
		} else if (round == 1) {
			test_write(dir, "state/nvml-xid.json", "{\"version\": 1, \"boot_id\": \x01\x02");
		} else if (round == 2) {
			struct strbuf big = STRBUF_INIT;
			strbuf_addf(&big, "{\"version\": 1, \"boot_id\": \"%s\", \"pad\": \"", XW_BOOT);
			while (big.len < XIDWATCH_FILE_MAX + 10)
				strbuf_addstr(&big, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
			strbuf_addstr(&big, "\"}");
			test_write(dir, "state/nvml-xid.json", big.buf);
			strbuf_release(&big);
		} else {
			/* a window that ends where this boot's clock has not been yet */
			xw_plant_record(dir, now * 0.1, now + 100000);
		}
		int code = xw_agent(dir, NULL, NULL, &rep, &err);
		CHECK_MSG(code == 1, "round %d: exit %d: %s", round, code, err.buf);
		CHECK_MSG(strstr(err.buf, "set aside"), "round %d: %s", round, err.buf);
		CHECK_NOT_CONTAINS(rep.buf, "doubtful");
		struct stat st;
		CHECK(lstat(p.buf, &st) == 0 && S_ISREG(st.st_mode)); /* written anew, a file */
	}
	/* the link's target was read by nobody and written by nobody */
	strbuf_reset(&got);
	CHECK_INT(read_file_bounded(t.buf, &got, 1 << 20, NULL), READ_OK);
	CHECK_CONTAINS(got.buf, "\"windows\": [[");
	strbuf_release(&kmsg);
	strbuf_release(&rep);
	strbuf_release(&err);
	strbuf_release(&p);
	strbuf_release(&t);
	strbuf_release(&got);
}

/* A library that reports Xids for a GPU nobody registered (index 12 of 8), a flood of 150,000
 * application Xids ahead of one Xid 79: the stray events are counted, not findings; the flood
 * is taken over two drains (each bounded) and the 79 behind it still comes through. */
TEST_TIMEOUT(agent_nvml_xid_flood_and_stray_gpu, 90)
{
	const char *dir = test_tmpdir();
	struct strbuf kmsg = STRBUF_INIT, rep = STRBUF_INIT, err = STRBUF_INIT, p = STRBUF_INIT,
		      rec = STRBUF_INIT;
	xw_kmsg(&kmsg, 0);
	xw_root(dir, true, "xid_event 12 79\n", kmsg.buf);
	int code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 0, "exit %d: %s", code, err.buf);
	CHECK_NOT_CONTAINS(rep.buf, "reported by NVML");
	strbuf_addf(&p, "%s/state/nvml-xid.json", dir);
	CHECK_INT(read_file_bounded(p.buf, &rec, 1 << 20, NULL), READ_OK);
	CHECK_CONTAINS(rec.buf, "\"foreign\": 1");

	unlink(p.buf);
	xw_root(dir, true, "xid_event 1 13 repeat=150000\nxid_event 0 79\n", kmsg.buf);
	code = xw_agent(dir, NULL, "2", &rep, &err);
	CHECK_MSG(code == 0, "exit %d: %s", code, err.buf); /* --cycles: 0 unless it failed */
	CHECK_CONTAINS(rep.buf, "\"verdict\": \"unhealthy\"");
	CHECK_CONTAINS(rep.buf, "Xid 79 on GPU 0000:18:00.0: GPU has fallen off the bus (reported by NVML");
	strbuf_reset(&rec);
	CHECK_INT(read_file_bounded(p.buf, &rec, 1 << 20, NULL), READ_OK);
	CHECK_CONTAINS(rec.buf, "\"count\": 150000");
	strbuf_release(&kmsg);
	strbuf_release(&rep);
	strbuf_release(&err);
	strbuf_release(&p);
	strbuf_release(&rec);
}

/* NVML's event wait hangs (in the driver): the worker is killed at the deadline and the record
 * NVML already gave stands; the agent finishes its cycle. */
TEST_TIMEOUT(agent_nvml_event_wait_hangs_the_record_survives, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf kmsg = STRBUF_INIT, rep = STRBUF_INIT, err = STRBUF_INIT, e = STRBUF_INIT;
	xw_kmsg(&kmsg, 0);
	xw_root(dir, true, "xid_event 0 79\n", kmsg.buf);
	int code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 1, "exit %d: %s", code, err.buf);
	xw_root(dir, true, NULL, kmsg.buf);
	test_write(dir, "event-hang", "");
	strbuf_addf(&e, "VIGIL_FAKE_NVML_EVENT_HANG=%s/event-hang", dir);
	const char *env[] = { e.buf, NULL };
	code = xw_agent(dir, env, NULL, &rep, &err);
	CHECK_MSG(code == 1, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "Xid 79 on GPU 0000:18:00.0: GPU has fallen off the bus (reported by NVML");
	strbuf_release(&kmsg);
	strbuf_release(&rep);
	strbuf_release(&err);
	strbuf_release(&e);
}

/* A forged Xid 79 on an address no GPU of this host has, while NVML watched all eight: doubtful.
 * Before: unhealthy, REBOOT, for a GPU that does not exist. */
TEST_TIMEOUT(agent_kernel_xid_on_an_address_nvml_does_not_know_is_doubtful, 60)
{
	static const char *const bdfs[] = { "18", "2a", "3a", "5d", "9a", "ab", "ba", "db" };
	const char *dir = test_tmpdir();
	struct strbuf kmsg = STRBUF_INIT, rep = STRBUF_INIT, err = STRBUF_INIT, r = STRBUF_INIT;
	double now = test_mono();
	strbuf_addf(&kmsg, "6,0,0,-;Linux version 6.8.0-45-generic (buildd@x) #45-Ubuntu SMP\n"
			   "4,1,%.0f,-;NVRM: Xid (PCI:0000:ee:00): 79, pid='<unknown>', "
			   "name=<unknown>, GPU has fallen off the bus.\n", (now - 5) * 1e6);
	xw_root(dir, true, NULL, kmsg.buf);
	strbuf_addf(&r, "{\"version\": 1, \"boot_id\": \"%s\", \"rc\": 0, \"gpus\": [", XW_BOOT);
	for (size_t i = 0; i < ARRAY_SIZE(bdfs); i++)
		strbuf_addf(&r, "%s{\"bdf\": \"0000:%s:00.0\", \"rc\": 0, \"windows\": [[%.3f, %.3f]]}",
			    i ? ", " : "", bdfs[i], now * 0.1, now - 1);
	strbuf_addstr(&r, "], \"events\": []}\n");
	test_write(dir, "state/nvml-xid.json", r.buf);
	int code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 3, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "knows no GPU at that address: doubtful");
	strbuf_release(&kmsg);
	strbuf_release(&rep);
	strbuf_release(&err);
	strbuf_release(&r);
}

/* The driver's three-line "fallen off the bus" (no Xid), forged for a GPU that NVML watched,
 * never saw an Xid 79 on, and reads healthy: doubtful. Before: unhealthy, REBOOT. */
TEST_TIMEOUT(agent_kernel_off_bus_nvml_reads_healthy_is_doubtful, 60)
{
	const char *dir = test_tmpdir();
	struct strbuf kmsg = STRBUF_INIT, rep = STRBUF_INIT, err = STRBUF_INIT;
	double now = test_mono();
	xw_kmsg(&kmsg, 0);
	/* the shape of tests/scenarios/kernel-off-bus */
	strbuf_addf(&kmsg, "3,3,%1$.0f,-;NVRM: The NVIDIA GPU 0000:18:00.0\n"
			   "3,4,%1$.0f,-;NVRM: (PCI ID: 10de:2335) installed in this system has\n"
			   "3,5,%1$.0f,-;NVRM: fallen off the bus and is not responding to commands.\n",
		    (now - 5) * 1e6);
	xw_root(dir, true, NULL, kmsg.buf);
	xw_plant_record(dir, now * 0.1, now - 1);
	int code = xw_agent(dir, NULL, NULL, &rep, &err);
	CHECK_MSG(code == 3, "exit %d: %s", code, err.buf);
	CHECK_CONTAINS(rep.buf, "GPU 0000:18:00.0 fallen off the bus appears in the kernel log");
	strbuf_release(&kmsg);
	strbuf_release(&rep);
	strbuf_release(&err);
}

/* ---- fork and the agent's threads (forkgate.h) ---- */

struct gate_holder {
	volatile int inside, left;
};

static void *hold_gate(void *arg)
{
	struct gate_holder *g = arg;
	forkgate_enter();
	g->inside = 1;
	usleep(300000);
	g->left = 1;
	forkgate_leave();
	return NULL;
}

/* A fork waits for a thread inside the gate to leave it; the child starts with it open. */
TEST(forkgate_fork_waits_for_a_thread_inside)
{
	struct gate_holder g = { 0, 0 };
	pthread_t t;
	forkgate_setup();
	unsigned long w0 = forkgate_waits();
	CHECK(pthread_create(&t, NULL, hold_gate, &g) == 0);
	while (!g.inside)
		usleep(1000);
	pid_t pid = fork();
	if (pid == 0) {
		/* the holder's copy is not here: the gate must be open, or this never returns */
		forkgate_enter();
		forkgate_leave();
		_exit(g.left ? 0 : 3);
	}
	CHECK(pid > 0);
	CHECK_MSG(g.left == 1, "fork() returned while another thread was inside the gate");
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	CHECK(forkgate_waits() == w0 + 1);
	pthread_join(t, NULL);
}
