/*
 * test_diagnose_logs_launchers.c: 'vigil diagnose logs' on the error output of launchers and
 * trainers in the shapes their users posted in public issue threads (tests/data/trainer-errors/,
 * sources in tests/data/realworld/trainer-errors.md): torchrun's ChildFailedError block in its
 * versions (the root is the rank and host torchrun names, with its exit code and error file),
 * interleaved with other output and cut short; DeepSpeed, srun and slurmstepd, NCCL, PyTorch,
 * Megatron, NeMo, Lightning, accelerate and torchtitan lines. Through the binary: its text,
 * --json fields and exit code.
 */
#include "../harness.h"
#include "../../src/diagnose/logs.h"
#include "../../src/lib/json.h"

#include <limits.h>

static const char *fixture(const char *name)
{
	static char path[4][1024];
	static int next;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "tests/data/trainer-errors/%s", name);
	struct strbuf full = STRBUF_INIT;
	test_src_path(&full, sb.buf);
	char *p = path[next++ % 4];
	snprintf(p, sizeof(path[0]), "%s", full.buf);
	strbuf_release(&sb);
	strbuf_release(&full);
	return p;
}

static int run_logs(struct child *c, const char *const *args)
{
	const char *argv[16] = { "diagnose", "logs" };
	size_t n = 2;
	for (size_t i = 0; args[i] && n < ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	test_run_vigil(c, argv, NULL);
	CHECK_MSG(c->exited, "vigil diagnose logs did not exit: %s", c->err.buf);
	return c->exit_code;
}

static bool num_is(const struct json_value *o, const char *key, double want)
{
	double v;
	return json_get_number(o, key, &v) && v == want;
}

static bool is_null(const struct json_value *o, const char *key)
{
	const struct json_value *v = json_get(o, key);
	return v && v->type == JSON_NULL;
}

/*
 * The fixture's --json root: code, host (NULL: null), rank (-1: null), exitcode (INT_MIN:
 * null); exit status 1. Returns the parsed document (json_free it).
 */
static struct json_value *root_is(const char *name, const char *code, const char *host, long rank,
				  int exitcode)
{
	struct child c;
	const char *args[] = { "--json", fixture(name), NULL };
	CHECK_INT(run_logs(&c, args), 1);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *r = v ? json_get(v, "root") : NULL;
	CHECK_MSG(r && r->type == JSON_OBJECT, "%s: no root: %s", name, c.out.buf);
	if (r && r->type == JSON_OBJECT) {
		CHECK_STR(json_get_string(r, "code"), code);
		if (host)
			CHECK_STR(json_get_string(r, "host"), host);
		else
			CHECK_MSG(is_null(r, "host"), "%s: root host is %s, expected null", name,
				  json_get_string(r, "host"));
		if (rank >= 0)
			CHECK_MSG(num_is(r, "rank", (double)rank), "%s: root rank is not %ld", name,
				  rank);
		else
			CHECK_MSG(is_null(r, "rank"), "%s: root rank is not null", name);
		if (exitcode != INT_MIN)
			CHECK_MSG(num_is(r, "exitcode", exitcode), "%s: root exitcode is not %d",
				  name, exitcode);
		else
			CHECK_MSG(is_null(r, "exitcode"), "%s: root exitcode is not null", name);
		/* every finding says what to do */
		const struct json_value *fs = json_get(v, "findings");
		for (size_t i = 0; fs && i < fs->nr; i++) {
			const char *a = json_get_string(fs->items[i], "action");
			CHECK_MSG(a && *a, "%s: finding %zu has no action", name, i);
			CHECK(json_get_string(fs->items[i], "action_code") != NULL);
		}
	}
	child_release(&c);
	return v;
}

static const struct json_value *finding(const struct json_value *v, const char *code)
{
	const struct json_value *fs = json_get(v, "findings");
	for (size_t i = 0; fs && i < fs->nr; i++)
		if (!strcmp(json_get_string(fs->items[i], "code"), code))
			return fs->items[i];
	return NULL;
}

static bool ranks_are(const struct json_value *f, const long *want, size_t n)
{
	const struct json_value *r = f ? json_get(f, "ranks") : NULL;
	if (!r || r->type != JSON_ARRAY || r->nr != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (r->items[i]->type != JSON_NUMBER || r->items[i]->number != (double)want[i])
			return false;
	return true;
}

TEST(diag_logs_torchrun_root_cause_names_rank_and_host)
{
	/* torch 2.x on node-0's launcher log: the root cause is rank 5 on node-3, exit code 1,
	 * with its error file; two more failures listed (SIGTERM, cascades) */
	struct child c;
	const char *args[] = { fixture("node-0.log"), NULL };
	CHECK_INT(run_logs(&c, args), 1);
	CHECK_CONTAINS(c.out.buf, "likely root: a rank's process ended");
	CHECK_CONTAINS(c.out.buf, "where:  host node-3, rank 5 (torchrun's root cause)");
	CHECK_CONTAINS(c.out.buf, "exit:   exitcode 1, pid 31337, local_rank 1, error_file "
				  "/tmp/torchelastic_k2x8q/none_7c1s/attempt_0/1/error.json");
	CHECK_CONTAINS(c.out.buf, "torchrun root cause: host node-3 rank 5 exitcode 1");
	/* the file's name is no host of the failure, nor are the agent's lines the root */
	CHECK_NOT_CONTAINS(c.out.buf, "host node-0");
	CHECK_NOT_CONTAINS(c.out.buf, "closing signal");
	child_release(&c);

	struct json_value *v = root_is("node-0.log", "rank_exit", "node-3", 5, 1);
	const struct json_value *t = json_path(v, "root.torchrun");
	CHECK(t && t->type == JSON_OBJECT);
	CHECK(json_path(v, "root.torchrun.root_cause")->boolean);
	CHECK_STR(json_get_string(t, "error_file"),
		  "/tmp/torchelastic_k2x8q/none_7c1s/attempt_0/1/error.json");
	CHECK(num_is(t, "pid", 31337) && num_is(t, "local_rank", 1));
	CHECK_STR(json_get_string(t, "time"), "2026-12-01_02:51:02");
	CHECK(num_is(json_get(v, "root"), "line", 34));
	/* several failures: one finding, the root cause's rank first, every rank listed */
	const struct json_value *f = finding(v, "rank_exit");
	static const long want[] = { 5, 6, 7 };
	CHECK(ranks_are(f, want, 3));
	CHECK(num_is(f, "count", 3));
	CHECK_INT(json_get(f, "hosts")->nr, 1);
	CHECK_INT(json_get(v, "findings")->nr, 1);
	json_free(v);
}

TEST(diag_logs_torchrun_block_interleaved_with_other_output)
{
	/* srun --label'd lines of two nodes, the block's lines between other ranks' steps and an
	 * NCCL INFO line: the block is read whole; its root cause aborted (SIGABRT) */
	struct json_value *v = root_is("interleaved.log", "rank_abort", "node-3", 5, -6);
	CHECK_STR(json_path(v, "root.signal")->string, "SIGABRT");
	const struct json_value *f = finding(v, "rank_exit");
	static const long want[] = { 4 };
	CHECK(ranks_are(f, want, 1));
	CHECK_STR(json_get_string(f, "host"), "node-3");
	CHECK_INT(json_get(v, "findings")->nr, 2); /* no finding from the other output */
	json_free(v);
}

TEST(diag_logs_torchrun_block_cut_short)
{
	/* cut inside the root cause entry, after its host: what it said counts, and the exit code
	 * is the agent's line just before the block; nothing else is made up */
	struct json_value *v = root_is("cut-entry.log", "rank_killed", "node-3", 5, -9);
	CHECK(is_null(json_path(v, "root.torchrun"), "error_file"));
	CHECK(is_null(json_path(v, "root.torchrun"), "local_rank"));
	json_free(v);
	/* cut before the entry said anything: the ChildFailedError line, no host, no rank (the
	 * file's name, launcher.log, is no host) */
	v = root_is("launcher.log", "rank_exit", NULL, -1, INT_MIN);
	CHECK(num_is(json_get(v, "root"), "line", 1));
	CHECK(is_null(json_get(v, "root"), "torchrun"));
	json_free(v);
	struct child c;
	const char *args[] = { fixture("launcher.log"), NULL };
	CHECK_INT(run_logs(&c, args), 1);
	CHECK_CONTAINS(c.out.buf, "where:  host and rank unknown");
	child_release(&c);
}

TEST(diag_logs_torchrun_block_versions)
{
	/* torchelastic / torch 1.9: "Root Cause:" first, no host field, msg in quotes */
	struct json_value *v = root_is("torch19.log", "segfault", NULL, 10, -11);
	CHECK(num_is(json_path(v, "root.torchrun"), "local_rank", 2));
	CHECK_INT(json_get(v, "findings")->nr, 1); /* the agent's line said the same */
	json_free(v);
	/* torch 2.11: the signal's name after the pid */
	v = root_is("torch211-signal.log", "segfault", "node-3", 5, -11);
	CHECK_STR(json_path(v, "root.signal")->string, "SIGSEGV");
	json_free(v);
	/* an error file: the child's traceback in the block is the rank and host torchrun names */
	v = root_is("torch211-error-file.log", "illegal_memory_access", "gpu-b17.cluster.local", 12,
		    INT_MIN);
	const struct json_value *f = finding(v, "rank_exit");
	CHECK(f && num_is(f, "exitcode", 1));
	CHECK_STR(json_path(f, "torchrun.error_file")->string,
		  "/tmp/torchelastic_p0q1/abc_0/attempt_0/4/error.json");
	json_free(v);
}

TEST(diag_logs_deepspeed_launcher_exit_code)
{
	struct json_value *v = root_is("deepspeed.log", "rank_killed", NULL, -1, -9);
	CHECK_STR(json_path(v, "root.signal")->string, "SIGKILL");
	CHECK_STR(json_path(v, "root.action_code")->string, "INVESTIGATE");
	CHECK_CONTAINS(json_path(v, "root.action")->string, "OOM killer");
	json_free(v);
}

TEST(diag_logs_srun_and_slurmstepd_lines)
{
	/* the cgroup OOM kill first; "tasks 0-2: Exited with exit code 137" is a SIGKILL */
	struct json_value *v = root_is("srun.log", "host_oom", NULL, -1, INT_MIN);
	const struct json_value *k = finding(v, "rank_killed");
	CHECK(k && num_is(k, "exitcode", 137) && num_is(k, "rank", 0));
	static const long four[] = { 4 };
	CHECK(ranks_are(finding(v, "host_oom"), four, 1));
	json_free(v);
	/* a job cancelled at its time limit: that is the root, not the cancellation's cascade */
	v = root_is("slurm-81240.out", "slurm_time_limit", NULL, -1, INT_MIN);
	CHECK_STR(json_path(v, "root.action_code")->string, "FIX_CONFIG");
	CHECK(json_path(finding(v, "rank_exit"), "cascade")->boolean);
	json_free(v);
}

TEST(diag_logs_nccl_ib_error_before_the_watchdog)
{
	struct json_value *v = root_is("nccl.log", "nccl_network", NULL, -1, INT_MIN);
	static const long ten[] = { 10 }, eighteen[] = { 18 };
	CHECK(ranks_are(finding(v, "nccl_peer_lost"), ten, 1));
	CHECK(ranks_are(finding(v, "nccl_timeout"), eighteen, 1));
	CHECK_INT(json_get(v, "findings")->nr, 3); /* NCCL INFO lines are no errors */
	json_free(v);
}

TEST(diag_logs_pytorch_oom_ecc_and_watchdog)
{
	/* pytorch.log names no host (a generic name) */
	struct json_value *v = root_is("pytorch.log", "cuda_oom", NULL, 5, INT_MIN);
	const struct json_value *t = finding(v, "nccl_timeout");
	static const long want[] = { 1, 2 };
	CHECK(ranks_are(t, want, 2) && num_is(t, "count", 2)); /* got stuck; watchdog hang */
	json_free(v);
	v = root_is("node-6.log", "cuda_ecc", "node-6", 6, INT_MIN);
	CHECK_STR(json_path(v, "root.action_code")->string, "RESET_GPU");
	json_free(v);
}

TEST(diag_logs_megatron_nan_grad_names_its_rank)
{
	struct json_value *v = root_is("megatron.log", "nan_grad", NULL, 13, INT_MIN);
	CHECK(!json_path(v, "root.cascade")->boolean);
	json_free(v);
}

TEST(diag_logs_nemo_store_timeout)
{
	struct json_value *v = root_is("nemo.log", "rendezvous_timeout", NULL, -1, INT_MIN);
	CHECK_INT(json_get(v, "findings")->nr, 1); /* Hydra's and NeMo's own lines: none */
	json_free(v);
}

TEST(diag_logs_lightning_child_process_killed)
{
	struct json_value *v = root_is("lightning.log", "rank_killed", NULL, -1, -9);
	json_free(v);
}

TEST(diag_logs_accelerate_localhost_is_no_host)
{
	/* accelerate launch runs torchrun; a single host's block says "localhost" */
	struct json_value *v = root_is("accelerate.log", "rank_exit", NULL, 0, 1);
	CHECK(json_path(v, "root.torchrun.root_cause")->boolean);
	CHECK(num_is(json_path(v, "findings.0"), "count", 1)); /* the agent's lines dropped */
	json_free(v);
}

TEST(diag_logs_torchtitan_rank_prefixes)
{
	/* "[rank9]:[rank9]: torch.OutOfMemoryError" and NCCL's benign ibvwrap warning */
	struct json_value *v = root_is("titan-node1.log", "cuda_oom", "titan-node1", 9, INT_MIN);
	CHECK(finding(v, "nccl_error") == NULL);
	CHECK_INT(json_get(v, "findings")->nr, 1);
	json_free(v);
}

static const char *code_of(const char *line, struct dlog_match *m)
{
	return dlog_classify(line, strlen(line), m) ? m->code : NULL;
}

TEST(diag_logs_launcher_lines_map_to_causes)
{
	static const struct {
		const char *line, *code;
		int exitcode; /* INT_MIN: none */
		long rank;
	} cases[] = {
		{ "E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/"
		  "api.py:869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /usr/bin/py",
		  "rank_killed", -9, -1 },
		{ "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: "
		  "0 (pid: 17966) of binary: /usr/bin/python", "rank_exit", 1, -1 },
		{ "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: "
		  "0 (pid: 3311) of binary: /usr/bin/python", "bus_error", -7, -1 },
		{ "[2026-12-01 02:51:02,903] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', "
		  "'-u', 'main.py', '--local_rank=1'] exits with return code = -11", "segfault", -11, -1 },
		{ "[rank: 2] Child process with PID 13117 terminated with code -6. Forcefully "
		  "terminating all other processes to avoid zombies", "rank_abort", -6, -1 },
		{ "srun: error: node-2: tasks 0-19: Exited with exit code 1", "rank_exit", 1, 0 },
		{ "srun: error: node-2: task 3: Exited with exit code 134", "rank_abort", 134, 3 },
		{ "slurmstepd: error: *** JOB 41239 ON node-1 CANCELLED AT 2026-11-30T11:22:57 DUE TO "
		  "TIME LIMIT ***", "slurm_time_limit", INT_MIN, -1 },
		{ "slurmstepd: error: *** STEP 12.0 ON node-1 CANCELLED AT 2026-11-30T11:22:57 DUE TO "
		  "PREEMPTION ***", "slurm_preempted", INT_MIN, -1 },
		{ "slurmstepd: error: *** JOB 12 ON node-1 CANCELLED AT 2026-11-30T11:22:57 DUE TO NODE "
		  "FAILURE ***", "node_failure", INT_MIN, -1 },
		{ "slurmstepd: error: Exceeded job memory limit", "host_oom", INT_MIN, -1 },
		{ "slurmstepd: error: Detected 2 oom-kill event(s) in step 81.batch cgroup.", "host_oom",
		  INT_MIN, -1 },
		{ "  traceback : Signal 9 (SIGKILL) received by PID 14750", "rank_killed", INT_MIN, -1 },
		{ "  traceback : Signal 6 (SIGABRT) received by PID 14750", "rank_abort", INT_MIN, -1 },
		{ "W1201 02:51:03.104000 7711 torch/distributed/elastic/multiprocessing/api.py:897] "
		  "Sending process 31338 closing signal SIGTERM", "rank_exit", INT_MIN, -1 },
		{ "[rank1]:[F1229 20:37:13.156485650 ProcessGroupNCCL.cpp:1306] [PG ID 0 PG GUID "
		  "0(default_pg) Rank 1] Terminating the process after attempting to dump debug info, "
		  "due to ProcessGroupNCCL watchdog hang.", "nccl_timeout", INT_MIN, 1 },
		{ "18:11:06.680 [rank4]:[E205 18:11:06.375750231 ProcessGroupNCCL.cpp:1870] [PG ID 12 PG "
		  "GUID 99(EXPERT_MODEL_PARALLEL_GROUP) Rank 4] ProcessGroupNCCL's watchdog got stuck "
		  "for 480 seconds", "nccl_timeout", INT_MIN, 4 },
		{ "AssertionError: Rank 13: found NaN in local grad norm in backward pass before "
		  "data-parallel communication collective. Device: 5, node: node-15",
		  "nan_grad", INT_MIN, 13 },
		{ "RuntimeError: Rank 3: Unexpected result nan (message='found NaN in local grad norm "
		  "for bucket #0 in backward pass before data-parallel communication collective')",
		  "nan_grad", INT_MIN, 3 },
		{ "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
		  "1/3 clients joined.", "rendezvous_timeout", INT_MIN, -1 },
		{ "torch.distributed.DistStoreError: Timed out after 6 seconds waiting for workers. 1/2 "
		  "workers joined.", "rendezvous_timeout", INT_MIN, -1 },
		{ "torch.distributed.DistNetworkError: The client socket has timed out after 60s while "
		  "trying to connect to (10.0.0.1, 29500).", "rendezvous_timeout", INT_MIN, -1 },
		{ "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/"
		  "generic/THCStorage.cu:58", "cuda_oom", INT_MIN, -1 },
		{ "[default3]:RuntimeError: Expected all tensors to be on the same device",
		  "python_exception", INT_MIN, -1 },
		{ "node-4:5120:5301 [2] transport/net_ib.cc:1683 NCCL WARN NET/IB : Got completion from "
		  "peer 10.10.3.17<49152> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
		  "nccl_network", INT_MIN, -1 },
		{ "[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.", "nccl_error",
		  INT_MIN, 7 },
		{ "W0616 00:37:22.830000 4015698 torch/distributed/elastic/agent/server/api.py:719] "
		  "Received Signals.SIGTERM death signal, shutting down workers", "launcher_signal",
		  INT_MIN, -1 },
		{ "WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting "
		  "down workers", "launcher_signal", INT_MIN, -1 },
		{ "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4015698 got "
		  "signal: 15", "launcher_signal", INT_MIN, -1 },
	};
	struct dlog_match m;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *got = code_of(cases[i].line, &m);
		CHECK_MSG(got && !strcmp(got, cases[i].code), "'%s' gave %s, expected %s",
			  cases[i].line, got ? got : "nothing", cases[i].code);
		if (!got)
			continue;
		if (cases[i].exitcode == INT_MIN)
			CHECK_MSG(!m.has_exit, "'%s' has an exit code", cases[i].line);
		else
			CHECK_MSG(m.has_exit && m.exitcode == cases[i].exitcode,
				  "'%s' gave exit code %d", cases[i].line, m.exitcode);
		CHECK_MSG(m.rank == cases[i].rank, "'%s' gave rank %ld, expected %ld",
			  cases[i].line, m.rank, cases[i].rank);
	}
	static const char *const no[] = {
		"[rank8]:[2026-12-01 02:50:59] node-1:4101:4101 [0] misc/ibvwrap.cc:185 "
		"(wrap_ibv_alloc_pd) NCCL WARN lib wrapper not initialized.",
		"[2026-12-01 02:51:02,871] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1",
		"[NeMo I 2026-12-01 02:20:11 exp_manager:396] Experiments will be logged at /results",
		"  exitcode  : 1 (pid: 9120)",
		"  host      : node-3",
		"[1]:",
	};
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		CHECK_MSG(!code_of(no[i], &m), "'%s' gave %s", no[i], m.code);
}

TEST(diag_logs_torchrun_block_in_any_chunks)
{
	/* the block read through the library in chunks of 1 to 13 bytes: the same root */
	struct strbuf path = STRBUF_INIT, text = STRBUF_INIT;
	test_src_path(&path, "tests/data/trainer-errors/interleaved.log");
	FILE *fp = fopen(path.buf, "r");
	CHECK(fp != NULL);
	char buf[4096];
	size_t n;
	while (fp && (n = fread(buf, 1, sizeof(buf), fp)) > 0)
		strbuf_add(&text, buf, n);
	if (fp)
		fclose(fp);
	for (size_t chunk = 1; chunk <= 13; chunk += 3) {
		struct dlog d;
		dlog_init(&d);
		dlog_file_begin(&d, "logs/interleaved.log", "", -1);
		for (size_t off = 0; off < text.len; off += chunk)
			dlog_feed(&d, text.buf + off, text.len - off < chunk ? text.len - off : chunk);
		dlog_file_end(&d, NULL);
		dlog_finish(&d);
		CHECK_MSG(d.nr == 2, "chunk %zu: %zu findings", chunk, d.nr);
		if (d.nr) {
			CHECK_STR(d.f[0].code, "rank_abort");
			CHECK_STR(d.f[0].first.host, "node-3");
			CHECK_INT(d.f[0].first.rank, 5);
			CHECK_INT(d.f[0].first.launch.exitcode, -6);
		}
		dlog_release(&d);
	}
	strbuf_release(&path);
	strbuf_release(&text);
}

TEST(diag_logs_excerpts_of_issue_threads_name_their_root)
{
	/* tests/data/trainer-errors/threads/: short excerpts in the shapes of public issue threads
	 * (expect.tsv: file, root code, host, rank, source); every one's root as expected */
	struct strbuf path = STRBUF_INIT, dir = STRBUF_INIT;
	test_src_path(&dir, "tests/data/trainer-errors/threads");
	strbuf_addf(&path, "%s/expect.tsv", dir.buf);
	FILE *fp = fopen(path.buf, "r");
	CHECK(fp != NULL);
	char line[1024];
	int n = 0, right = 0;
	while (fp && fgets(line, sizeof(line), fp)) {
		char *f[5] = { NULL }, *save = NULL, *tok = strtok_r(line, "\t\n", &save);
		for (int i = 0; tok && i < 5; i++, tok = strtok_r(NULL, "\t\n", &save))
			f[i] = tok;
		if (!f[0] || f[0][0] == '#' || !f[3])
			continue;
		char file[1024];
		snprintf(file, sizeof(file), "%s/%s", dir.buf, f[0]);
		struct child c;
		const char *args[] = { "--json", file, NULL };
		n++;
		if (run_logs(&c, args) != 1) {
			CHECK_MSG(false, "%s: exit %d", f[0], c.exit_code);
			child_release(&c);
			continue;
		}
		struct json_value *v = test_parse_json(&c);
		const struct json_value *r = v ? json_get(v, "root") : NULL;
		const char *code = r ? json_get_string(r, "code") : NULL;
		const char *host = r ? json_get_string(r, "host") : NULL;
		bool ok = code && !strcmp(code, f[1]) &&
			  (!strcmp(f[2], "-") ? is_null(r, "host") : host && !strcmp(host, f[2])) &&
			  (!strcmp(f[3], "-") ? is_null(r, "rank") : num_is(r, "rank", atof(f[3])));
		CHECK_MSG(ok, "%s: root %s on %s, expected %s on %s rank %s", f[0],
			  code ? code : "none", host ? host : "no host", f[1], f[2], f[3]);
		right += ok;
		json_free(v);
		child_release(&c);
	}
	if (fp)
		fclose(fp);
	CHECK_MSG(n >= 20, "only %d excerpts", n);
	CHECK_MSG(right == n, "right on %d of %d", right, n);
	strbuf_release(&path);
	strbuf_release(&dir);
}
