/*
 * test_run_e2e.c: `vigil run` end to end on the real local Slurm of tests/e2e/slurm-cluster
 * (munged, slurmctld, five slurmd: 4 hosts + 1 spare) with a real PyTorch DDP job
 * (tests/train/tiny_ddp.py, gloo on CPU). Each node's `vigil check` looks at its own fixture
 * root (fleet.command is a wrapper that adds --root FX/$SLURMD_NODENAME), so a test makes a
 * node sick by writing an Xid into its kernel log. One test per fault class on the real
 * components: a rank killed (a crash), a rank frozen (a hang: real stacks), a node turning sick,
 * a node lost (its slurmd stopped), a node whose agent keeps an unhealthy result (the preflight
 * takes the cached verdict), the NCCL recorder naming a rank (a smoke run confirms it), and
 * vigil run itself killed and started again. The combinations (a slowdown, group testing, two
 * faults in one poll, signals during each action, kill -9 after every record) run in virtual
 * time in test_supervisor.c. Each asserts what an on-call engineer would look at: the exit code, the final
 * loss against an undisturbed run's, the host excluded and drained (only that one), and the
 * journal's fault record. Skipped with the reason without Slurm, root or torch.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"
#include "../../src/lib/run.h"

#include <dirent.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#define PY "/usr/bin/python3"

struct bed {
	char dir[512];   /* the test's directory */
	char cdir[600];  /* the cluster */
	char conf[700];
	char job[32];
	char run_dir[700];
	char set_cmd[800];
};

static void need_torch(void)
{
	struct child c;
	child_init(&c);
	const char *argv[] = { PY, "-c", "import torch", NULL };
	c.argv = argv;
	c.timeout_ms = 60000;
	if (access(PY, X_OK) != 0 || child_run(&c, NULL) != 0 || !c.exited || c.exit_code != 0) {
		child_release(&c);
		SKIP("no torch for " PY " (Debian: python3-torch)");
	}
	child_release(&c);
}


static void bed_up(struct bed *b)
{
	need_torch();
	struct strbuf err = STRBUF_INIT, w = STRBUF_INIT;
	snprintf(b->dir, sizeof(b->dir), "%s", test_tmpdir());
	snprintf(b->cdir, sizeof(b->cdir), "%s/slurm", b->dir);
	char port[16];
	/*
	 * Ports of its own: 12000-15999 for Slurm, 16000-21000 for the trainers' MASTER_PORT
	 * (start_run), below the kernel's ephemeral range (32768 up, where any connection of
	 * another test may hold one) and apart from the other tests' bands. A start that fails
	 * (a port taken after all) is tried once more elsewhere in the band.
	 */
	snprintf(port, sizeof(port), "%u", 12000 + (unsigned)(getpid() % 200) * 20);
	test_slurm_guardian(b->cdir);
	const char *args[] = { "start", b->cdir, "5", port, "", "0", NULL };
	int rc = test_slurm_cluster(args, 150000, &err);
	if (rc != 0 && rc != 77) {
		const char *stop[] = { "stop", b->cdir, NULL };
		test_slurm_cluster(stop, 60000, NULL);
		snprintf(port, sizeof(port), "%u", 12000 + (unsigned)((getpid() + 97) % 200) * 20);
		strbuf_reset(&err);
		rc = test_slurm_cluster(args, 150000, &err);
	}
	if (rc != 0) {
		static char why[1024];
		snprintf(why, sizeof(why), "cannot start Slurm here (exit %d): %s", rc, err.buf);
		SKIP(why);
	}
	snprintf(b->conf, sizeof(b->conf), "%s/slurm.conf", b->cdir);
	setenv("SLURM_CONF", b->conf, 1);
	for (int i = 1; i <= 5; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "fx/n%d/dev/kmsg", i);
		test_write(b->dir, rel, TEST_KMSG_CLEAN);
	}
	strbuf_addf(&w,
		    "#!/bin/sh\n"
		    "case \"$1\" in\n"
		    "check) exec %s \"$@\" --only kernel --root %s/fx/$SLURMD_NODENAME ;;\n"
		    "*) exec %s \"$@\" ;;\n"
		    "esac\n",
		    test_vigil_bin(), b->dir, test_vigil_bin());
	test_write(b->dir, "bin/remote-vigil", w.buf);
	strbuf_reset(&w);
	strbuf_addf(&w, "%s/bin/remote-vigil", b->dir);
	chmod(w.buf, 0755);
	snprintf(b->set_cmd, sizeof(b->set_cmd), "fleet.command=%s", w.buf);
	/* the allocation: five whole nodes, not killed when one of them is lost */
	strbuf_reset(&w);
	const char *salloc[] = { "salloc", "--no-shell", "-N5", "--exclusive", "--no-kill",
				 "-J", "vigil-test", NULL };
	rc = test_run_argv(salloc, 60000, &w);
	const char *g = strstr(w.buf, "Granted job allocation ");
	CHECK_MSG(rc == 0 && g, "salloc: %s", w.buf);
	snprintf(b->job, sizeof(b->job), "%ld", strtol(g + 23, NULL, 10));
	snprintf(b->run_dir, sizeof(b->run_dir), "%s/run", b->dir);
	strbuf_release(&err);
	strbuf_release(&w);
}

/* vigil run in the allocation, in the background: --spares 1, 4 hosts x 1 rank. */
static void start_run(struct bed *b, struct child *c, const char *const *extra,
		      const char *const *train)
{
	static char env_job[64], env_nodes[64];
	snprintf(env_job, sizeof(env_job), "SLURM_JOB_ID=%s", b->job);
	snprintf(env_nodes, sizeof(env_nodes), "SLURM_JOB_NODELIST=n[1-5]");
	static const char *env[4];
	env[0] = env_job;
	env[1] = env_nodes;
	env[2] = NULL;
	static const char *argv[96];
	size_t n = 0;
	argv[n++] = test_vigil_bin();
	argv[n++] = "run";
	argv[n++] = "--spares";
	argv[n++] = "1";
	argv[n++] = "--run-dir";
	argv[n++] = b->run_dir;
	argv[n++] = "--json";
	argv[n++] = "-c";
	argv[n++] = b->set_cmd;
	argv[n++] = "-c";
	argv[n++] = "run.grace=3";
	argv[n++] = "-c";
	argv[n++] = "run.restart-delay=0.5";
	argv[n++] = "-c";
	argv[n++] = "run.node-poll=1";
	/* ports of its own: the tests of this file run beside each other on one machine */
	static char port[64];
	snprintf(port, sizeof(port), "run.master-port=%u", 16000 + (unsigned)(getpid() % 200) * 20);
	argv[n++] = "-c";
	argv[n++] = port;
	argv[n++] = "--check-interval";
	argv[n++] = "2";
	argv[n++] = "--hang-floor";
	argv[n++] = "4";
	argv[n++] = "--startup-timeout";
	argv[n++] = "90";
	for (size_t i = 0; extra && extra[i]; i++)
		argv[n++] = extra[i];
	argv[n++] = "--";
	argv[n++] = PY;
	static char script[600];
	snprintf(script, sizeof(script), "%s/tests/train/tiny_ddp.py", test_srcdir());
	argv[n++] = script;
	for (size_t i = 0; train && train[i]; i++)
		argv[n++] = train[i];
	argv[n] = NULL;
	child_init(c);
	c->argv = argv;
	c->env_add = env;
	c->timeout_ms = 400000;
	struct strbuf err = STRBUF_INIT;
	CHECK_MSG(child_start(c, &err) == 0, "%s", err.buf);
	strbuf_release(&err);
}

/* The pid of the trainer rank running on host in attempt k, or 0 (waits up to 60 s). */
static long rank_pid(struct bed *b, unsigned attempt, const char *host)
{
	char want_dir[800], want_host[80];
	snprintf(want_dir, sizeof(want_dir), "VIGIL_ATTEMPT_DIR=%s/attempt-%u", b->run_dir,
		 attempt);
	snprintf(want_host, sizeof(want_host), "SLURMD_NODENAME=%s", host);
	for (int tries = 0; tries < 600; tries++) {
		DIR *d = opendir("/proc");
		long found = 0;
		for (struct dirent *e; d && (e = readdir(d));) {
			long pid = strtol(e->d_name, NULL, 10);
			if (pid <= 1)
				continue;
			char path[64];
			snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
			struct strbuf sb = STRBUF_INIT, cmd = STRBUF_INIT;
			bool a = false, h = false;
			if (read_file_bounded(path, &sb, 1u << 20, NULL) == 0)
				for (size_t i = 0; i < sb.len; i += strlen(sb.buf + i) + 1) {
					a |= !strcmp(sb.buf + i, want_dir);
					h |= !strcmp(sb.buf + i, want_host);
				}
			snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
			/* the trainer itself, not srun's helpers */
			if (a && h && read_file_bounded(path, &cmd, 4096, NULL) == 0 &&
			    strstr(cmd.buf, "python"))
				found = pid;
			strbuf_release(&sb);
			strbuf_release(&cmd);
			if (found)
				break;
		}
		if (d)
			closedir(d);
		if (found)
			return found;
		usleep(100000);
	}
	return 0;
}

/* Pids left of attempt k's ranks, on any host, now. */
static long rank_pid_now(struct bed *b, unsigned attempt)
{
	char want_dir[800];
	snprintf(want_dir, sizeof(want_dir), "VIGIL_ATTEMPT_DIR=%s/attempt-%u", b->run_dir,
		 attempt);
	long n = 0;
	DIR *d = opendir("/proc");
	for (struct dirent *e; d && (e = readdir(d));) {
		long pid = strtol(e->d_name, NULL, 10);
		if (pid <= 1)
			continue;
		char path[64];
		snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
		struct strbuf sb = STRBUF_INIT;
		if (read_file_bounded(path, &sb, 1u << 20, NULL) == 0)
			for (size_t i = 0; i < sb.len; i += strlen(sb.buf + i) + 1)
				if (!strcmp(sb.buf + i, want_dir)) {
					n++;
					break;
				}
		strbuf_release(&sb);
	}
	if (d)
		closedir(d);
	return n;
}

/* Wait until the run's journal shows step >= n in attempt k (or 120 s). */
static void wait_step(struct bed *b, unsigned attempt, unsigned n)
{
	char path[800], want[64];
	snprintf(path, sizeof(path), "%s/attempt-%u/steps.jsonl", b->run_dir, attempt);
	snprintf(want, sizeof(want), "{\"step\": %u,", n);
	for (int i = 0; i < 1200; i++) {
		struct strbuf sb = STRBUF_INIT;
		bool ok = read_file_bounded(path, &sb, 1u << 20, NULL) == 0 && strstr(sb.buf, want);
		strbuf_release(&sb);
		if (ok)
			return;
		usleep(100000);
	}
	CHECK_MSG(0, "attempt %u never reached step %u", attempt, n);
}

static void finish_run(struct child *c, struct strbuf *out)
{
	while (child_poll(c, 1000) == 0)
		;
	strbuf_add(out, c->out.buf, c->out.len);
	if (c->err.len) {
		/* vigil run's log, shown when a check fails */
		fprintf(stderr, "---- vigil run's log ----\n%.*s\n", (int)c->err.len, c->err.buf);
	}
}

/* "final loss X" of rank 0 in the last attempt. */
static void final_loss(struct bed *b, unsigned attempts, struct strbuf *out)
{
	char path[800];
	snprintf(path, sizeof(path), "%s/attempt-%u/rank-0.out", b->run_dir, attempts - 1);
	struct strbuf sb = STRBUF_INIT;
	read_file_bounded(path, &sb, 4u << 20, NULL);
	const char *f = strstr(sb.buf, "final loss ");
	if (f) {
		f += 11;
		strbuf_add(out, f, strcspn(f, "\n"));
	}
	strbuf_release(&sb);
}

static const char *const TRAIN[] = { "--steps", "40", "--ckpt-every", "5", "--step-sleep",
				      "0.2", NULL };
/*
 * tiny_ddp.py's final loss for 4 ranks and TRAIN's arguments, undisturbed, outside vigil
 * (tests/train/launch_local.py): what every disturbed run must end with. Run once per test
 * run (~11 s of a loaded machine each time: torch's import, 40 steps) and kept in the runner's
 * directory for the next test; the tests of this file run one after another (the e2e lane).
 */
static void reference(struct bed *b, struct strbuf *loss)
{
	char kept[600];
	snprintf(kept, sizeof(kept), "%s/tiny-ddp-reference-loss", test_run_tmpdir());
	struct strbuf k = STRBUF_INIT;
	if (read_file_bounded(kept, &k, 4096, NULL) == 0 && k.len) {
		strbuf_add(loss, k.buf, k.len);
		strbuf_release(&k);
		return;
	}
	strbuf_release(&k);
	struct strbuf ref = STRBUF_INIT, script = STRBUF_INIT, launch = STRBUF_INIT;
	strbuf_addf(&script, "%s/tests/train/tiny_ddp.py", test_srcdir());
	strbuf_addf(&launch, "%s/tests/train/launch_local.py", test_srcdir());
	char ck[600];
	snprintf(ck, sizeof(ck), "%s/ref-ckpt", b->dir);
	const char *argv[] = { PY, launch.buf, "--nproc", "4", "--", PY, script.buf, "--steps", "40",
			       "--ckpt-every", "5", "--ckpt-dir", ck, NULL };
	CHECK_INT(test_run_argv(argv, 200000, &ref), 0);
	const char *f = strstr(ref.buf, "final loss ");
	CHECK_MSG(f != NULL, "the reference run printed: %s", ref.buf);
	if (f) {
		strbuf_add(loss, f + 11, strcspn(f + 11, "\n"));
		if (loss->len)
			write_file_atomic(kept, loss->buf, loss->len, 0644, NULL);
	}
	strbuf_release(&ref);
	strbuf_release(&script);
	strbuf_release(&launch);
}

/* The outcome JSON of vigil run --json. */
static struct json_value *outcome(const struct strbuf *out)
{
	struct json_value *v = json_parse(out->buf, out->len, NULL);
	CHECK_MSG(v != NULL, "vigil run --json printed: %s", out->buf);
	test_keep_json_as("run", out->buf, out->len); /* validated against docs/schema/run.json */
	return v;
}

/* The drain reason Slurm holds for a node ("" none). */
static void node_reason(const char *node, struct strbuf *out)
{
	struct strbuf sb = STRBUF_INIT;
	const char *argv[] = { "sinfo", "-h", "-N", "-n", node, "-o", "%E", NULL };
	test_run_argv(argv, 20000, &sb);
	strbuf_rtrim(&sb);
	if (strcmp(sb.buf, "none"))
		strbuf_addstr(out, sb.buf);
	strbuf_release(&sb);
}

/* The run ended done, with the reference loss, only `bad` (or nobody) excluded and drained. */
static void check_outcome(struct bed *b, const struct strbuf *out, const char *bad,
			  const char *reason_has)
{
	struct json_value *v = outcome(out);
	CHECK_STR(json_get_string(v, "outcome"), "done");
	const struct json_value *ex = json_get(v, "excluded");
	CHECK(ex && ex->type == JSON_ARRAY);
	if (bad) {
		CHECK_INT((long long)ex->nr, 1);
		CHECK_STR(json_get_string(ex->items[0], "host"), bad);
		if (reason_has)
			CHECK_CONTAINS(json_get_string(ex->items[0], "reason"), reason_has);
	} else {
		CHECK_INT((long long)ex->nr, 0);
	}
	const struct json_value *at = json_get(v, "attempts");
	unsigned attempts = at ? (unsigned)at->number : 0;
	struct strbuf loss = STRBUF_INIT, ref = STRBUF_INIT;
	final_loss(b, attempts, &loss);
	reference(b, &ref);
	CHECK_STR(loss.buf, ref.buf);
	strbuf_release(&ref);
	for (int i = 1; i <= 5; i++) {
		char node[8];
		snprintf(node, sizeof(node), "n%d", i);
		struct strbuf r = STRBUF_INIT;
		node_reason(node, &r);
		if (bad && !strcmp(node, bad))
			CHECK_MSG(starts_with(r.buf, "vigil:"), "%s not drained by vigil: '%s'", node,
				  r.buf);
		else
			CHECK_MSG(r.len == 0, "%s drained: '%s'", node, r.buf);
		strbuf_release(&r);
	}
	strbuf_release(&loss);
	json_free(v);
}

/* The journal's event of class cls: has it, with a latency when want_latency. */
static void check_journal_event(struct bed *b, const char *cls, const char *host)
{
	char path[800], want[96];
	snprintf(path, sizeof(path), "%s/journal.jsonl", b->run_dir);
	struct strbuf sb = STRBUF_INIT;
	CHECK(read_file_bounded(path, &sb, 16u << 20, NULL) == 0);
	snprintf(want, sizeof(want), "\"kind\":\"event\"");
	bool found = false;
	for (char *line = sb.buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		struct json_value *v = json_parse(line, strlen(line), NULL);
		const char *k = v ? json_get_string(v, "kind") : NULL;
		const char *c = v ? json_get_string(v, "class") : NULL;
		const char *h = v ? json_get_string(v, "host") : NULL;
		if (k && !strcmp(k, "event") && c && !strcmp(c, cls) &&
		    (!host || (h && !strcmp(h, host))) && json_get(v, "latency_s"))
			found = true;
		json_free(v);
		line = nl ? nl + 1 : NULL;
	}
	CHECK_MSG(found, "no '%s' event%s%s with a latency in the journal:\n%s", cls,
		  host ? " blaming " : "", host ? host : "", sb.buf);
	strbuf_release(&sb);
}

/* ---- the tests ---- */

/* A rank killed: seen at once (srun's word), the step stopped, checks healthy, relaunched on
 * the same hosts (one crash that no check explains blames nobody), resumed from the
 * checkpoint. */
TEST_TIMEOUT(run_e2e_rank_killed, 400)
{
	struct bed b;
	bed_up(&b);
	struct child c;
	struct strbuf out = STRBUF_INIT;
	start_run(&b, &c, NULL, TRAIN);
	wait_step(&b, 0, 12);
	long pid = rank_pid(&b, 0, "n2");
	CHECK(pid > 0);
	kill((pid_t)pid, SIGKILL);
	finish_run(&c, &out);
	CHECK_INT(c.exit_code, 0);
	check_outcome(&b, &out, NULL, NULL);
	check_journal_event(&b, "crash", "n2");
	/* the crash's first error, from the ranks' output (vigil diagnose logs), and the run's
	 * step times (vigil diagnose steps) at its end, each kept and said in the journal */
	char path[800];
	snprintf(path, sizeof(path), "%s/journal.jsonl", b.run_dir);
	struct strbuf j = STRBUF_INIT;
	CHECK(read_file_bounded(path, &j, 16u << 20, NULL) == 0);
	CHECK_CONTAINS(j.buf, "\"class\":\"diagnosis\",\"detail\":\"logs: first error: ");
	CHECK_CONTAINS(j.buf, "\"class\":\"diagnosis\",\"detail\":\"steps: ");
	/* every rank printed its parameters' digest each step (vigil_train, on the ranks'
	 * PYTHONPATH) and they agreed: nothing said, not even for the killed rank's last step */
	CHECK_NOT_CONTAINS(j.buf, "\"class\":\"replica_");
	snprintf(path, sizeof(path), "%s/attempt-1/rank-2.out", b.run_dir);
	struct strbuf r2 = STRBUF_INIT;
	CHECK(read_file_bounded(path, &r2, 1u << 20, NULL) == 0);
	CHECK_CONTAINS(r2.buf, "Z vigil-digest step=40 group=0 size=4 digest=");
	strbuf_release(&r2);
	snprintf(path, sizeof(path), "%s/attempt-0/diagnosis-logs.json", b.run_dir);
	CHECK_MSG(access(path, F_OK) == 0, "no %s", path);
	snprintf(path, sizeof(path), "%s/diagnosis-steps.json", b.run_dir);
	CHECK_MSG(access(path, F_OK) == 0, "no %s", path);
	/* each rank's lines in its own file, time-stamped */
	snprintf(path, sizeof(path), "%s/attempt-1/rank-3.out", b.run_dir);
	struct strbuf r3 = STRBUF_INIT;
	CHECK(read_file_bounded(path, &r3, 1u << 20, NULL) == 0);
	CHECK_MSG(r3.len > 25 && r3.buf[4] == '-' && r3.buf[10] == 'T' && r3.buf[23] == 'Z',
		  "%s", r3.buf);
	CHECK_CONTAINS(r3.buf, "Z step 40 loss ");
	strbuf_release(&r3);
	strbuf_release(&j);
	child_release(&c);
	strbuf_release(&out);
}

/*
 * Silent data corruption: the rank on n3 flips one bit of its parameters after step 12 (its
 * "GPU" computes wrong without crashing). The ranks' digests (vigil_train) differ at step 12:
 * vigil names rank 2 on n3, stops the step, has n3 run the determinism test alone (a CPU
 * stand-in that fails where the flip is), drains it, and relaunches on the spare with
 * VIGIL_RESUME_BEFORE=12: the trainer resumes from its checkpoint of step 10, not a later one
 * the corruption may have reached, and the run ends with the undisturbed run's loss.
 */
TEST_TIMEOUT(run_e2e_replica_diverges_and_resumes_before_it, 400)
{
	struct bed b;
	bed_up(&b);
	struct child c;
	struct strbuf out = STRBUF_INIT, w = STRBUF_INIT, set = STRBUF_INIT;
	char flip[700];
	snprintf(flip, sizeof(flip), "%s/flip-hosts", b.dir);
	test_write(b.dir, "flip-hosts", "n3\n");
	strbuf_addf(&w, "#!/bin/sh\n"
			"# a CPU stand-in of vigil stress gpu --determinism: fails where the flip is\n"
			"if grep -qx \"$SLURMD_NODENAME\" %s; then\n"
			"  echo \"determinism test: repeat 3 of 10 differed\"; exit 1\n"
			"fi\necho \"determinism test: 10 repeats agree\"\n", flip);
	test_write(b.dir, "bin/sdc-standin", w.buf);
	strbuf_reset(&w);
	strbuf_addf(&w, "%s/bin/sdc-standin", b.dir);
	chmod(w.buf, 0755);
	strbuf_addf(&set, "run.sdc-test=%s", w.buf);
	const char *train[] = { "--steps", "40", "--ckpt-every", "5", "--step-sleep", "0.2",
				"--keep-ckpts", "--flip-host-file", flip, "--flip-at-step", "12",
				NULL };
	const char *extra[] = { "-c", set.buf, NULL };
	start_run(&b, &c, extra, train);
	finish_run(&c, &out);
	CHECK_INT(c.exit_code, 0);
	check_outcome(&b, &out, "n3", "determinism test");
	char path[800];
	snprintf(path, sizeof(path), "%s/journal.jsonl", b.run_dir);
	struct strbuf j = STRBUF_INIT;
	CHECK(read_file_bounded(path, &j, 16u << 20, NULL) == 0);
	CHECK_CONTAINS(j.buf, "\"class\":\"replica_diverged\",\"host\":\"n3\",\"detail\":"
			      "\"step 12 group 0: rank 2 (n3) digest ");
	CHECK_CONTAINS(j.buf, "\"class\":\"sdc\"");
	CHECK_CONTAINS(j.buf, "[n3] determinism test failed");
	CHECK_CONTAINS(j.buf, "resumes from a checkpoint before step 12");
	/* the relaunch took step 10's checkpoint */
	snprintf(path, sizeof(path), "%s/attempt-1/rank-0.out", b.run_dir);
	struct strbuf r0 = STRBUF_INIT;
	CHECK(read_file_bounded(path, &r0, 1u << 20, NULL) == 0);
	CHECK_CONTAINS(r0.buf, "resume before step 12 (VIGIL_RESUME_BEFORE): from step 10");
	strbuf_release(&r0);
	strbuf_release(&j);
	strbuf_release(&w);
	strbuf_release(&set);
	child_release(&c);
	strbuf_release(&out);
}

/* A rank frozen (SIGSTOP): the others wait in the all_reduce; no step for the hang limit; the
 * stacks show the frozen rank stopped; its host is excluded at once, the spare takes its
 * place. */
TEST_TIMEOUT(run_e2e_rank_frozen_hang, 400)
{
	struct bed b;
	bed_up(&b);
	struct child c;
	struct strbuf out = STRBUF_INIT;
	start_run(&b, &c, NULL, TRAIN);
	wait_step(&b, 0, 12);
	long pid = rank_pid(&b, 0, "n3");
	CHECK(pid > 0);
	kill((pid_t)pid, SIGSTOP);
	finish_run(&c, &out);
	CHECK_INT(c.exit_code, 0);
	check_outcome(&b, &out, "n3", "stopped");
	check_journal_event(&b, "hang", NULL);
	char path[800];
	snprintf(path, sizeof(path), "%s/attempt-0/evidence.json", b.run_dir);
	CHECK_MSG(access(path, F_OK) == 0, "no %s", path);
	child_release(&c);
	strbuf_release(&out);
}

/* A node turning sick mid-run (Xid 79 in its kernel log): the periodic check sees it, the
 * step is stopped before the trainer trips on it, the node drained and replaced. */
TEST_TIMEOUT(run_e2e_node_turns_sick, 400)
{
	struct bed b;
	bed_up(&b);
	struct child c;
	struct strbuf out = STRBUF_INIT;
	start_run(&b, &c, NULL, TRAIN);
	wait_step(&b, 0, 12);
	test_write(b.dir, "fx/n2/dev/kmsg",
		   TEST_KMSG_CLEAN "3,200,12000000,-;NVRM: Xid (PCI:0000:17:00): 79, pid=1234, "
				   "GPU has fallen off the bus.\n");
	finish_run(&c, &out);
	CHECK_INT(c.exit_code, 0);
	check_outcome(&b, &out, "n2", "Xid 79");
	check_journal_event(&b, "sick", "n2");
	child_release(&c);
	strbuf_release(&out);
}

/* A node lost: its slurmd stopped. Its srun checks fail, Slurm stops answering for it: the
 * node is excluded and drained (so it does not return by itself), the spare takes its place. */
TEST_TIMEOUT(run_e2e_node_lost, 400)
{
	struct bed b;
	bed_up(&b);
	struct child c;
	struct strbuf out = STRBUF_INIT;
	/* long enough for Slurm to miss the node (its tasks run on without their slurmd) */
	const char *train[] = { "--steps", "200", "--ckpt-every", "5", "--step-sleep", "0.2", NULL };
	const char *extra[] = { "-c", "run.check-timeout=5", NULL };
	start_run(&b, &c, extra, train);
	wait_step(&b, 0, 12);
	const char *args[] = { "stop-node", b.cdir, "n4", NULL };
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(test_slurm_cluster(args, 30000, &err), 0);
	finish_run(&c, &out);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = outcome(&out);
	CHECK_STR(json_get_string(v, "outcome"), "done");
	const struct json_value *ex = json_get(v, "excluded");
	CHECK(ex && ex->nr == 1);
	if (ex && ex->nr == 1)
		CHECK_STR(json_get_string(ex->items[0], "host"), "n4");
	json_free(v);
	check_journal_event(&b, "lost", "n4");
	child_release(&c);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* vigil run itself killed (SIGKILL) in the middle of an attempt and started again with the
 * same command: it finds the attempt open in its journal, stops that step (never two at
 * once), and goes on to the end. */
TEST_TIMEOUT(run_e2e_supervisor_killed_resumes, 500)
{
	struct bed b;
	bed_up(&b);
	struct child c;
	struct strbuf out = STRBUF_INIT;
	start_run(&b, &c, NULL, TRAIN);
	wait_step(&b, 0, 12);
	kill(c.pid, SIGKILL);
	while (child_poll(&c, 1000) == 0)
		;
	child_release(&c);
	start_run(&b, &c, NULL, TRAIN);
	finish_run(&c, &out);
	CHECK_INT(c.exit_code, 0);
	check_outcome(&b, &out, NULL, NULL);
	char path[800];
	snprintf(path, sizeof(path), "%s/journal.jsonl", b.run_dir);
	struct strbuf j = STRBUF_INIT;
	CHECK(read_file_bounded(path, &j, 16u << 20, NULL) == 0);
	CHECK_CONTAINS(j.buf, "\"class\":\"supervisor_restart\"");
	/* attempt 0's step was stopped before attempt 1 started: no rank of attempt 0 is left */
	CHECK_INT(rank_pid_now(&b, 0), 0);
	child_release(&c);
	strbuf_release(&out);
	strbuf_release(&j);
}

/* A node whose vigil agent keeps an unhealthy result (an Xid it saw) while a fresh check of
 * the node would pass: the preflight takes the agent's cached verdict, drains that node and
 * runs on the others; nodes without an agent are checked afresh. */
TEST_TIMEOUT(run_e2e_agent_cached_verdict, 400)
{
	struct bed b;
	bed_up(&b);
	struct strbuf w = STRBUF_INIT, sick = STRBUF_INIT, state = STRBUF_INIT;
	/* n2's agent ran on a kernel log with an Xid 79 and keeps that result */
	test_write(b.dir, "agentfx/dev/kmsg",
		   TEST_KMSG_CLEAN "3,200,12000000,-;NVRM: Xid (PCI:0000:17:00): 79, pid=1234, "
				   "GPU has fallen off the bus.\n");
	test_mkdir(b.dir, "state-n2");
	test_mkdir(b.dir, "no-agent");
	strbuf_addf(&sick, "%s/agentfx", b.dir);
	strbuf_addf(&state, "%s/state-n2", b.dir);
	const char *agent[] = { "agent", "--once", "--root", sick.buf, "--state-dir", state.buf,
				"--only", "kernel", "--listen", "off", "--host", "n2", NULL };
	struct child a;
	test_run_vigil(&a, agent, NULL);
	CHECK_MSG(a.exited && a.exit_code == 1, "vigil agent --once: %d %s", a.exit_code,
		  a.err.buf);
	child_release(&a);
	strbuf_addf(&w,
		    "#!/bin/sh\n"
		    "case \"$1\" in\n"
		    "check)\n"
		    "  case \" $* \" in\n"
		    "  *' --cached '*)\n"
		    "    s=%s/state-$SLURMD_NODENAME\n"
		    "    [ -d \"$s\" ] || s=%s/no-agent\n"
		    "    exec %s \"$@\" -c core.state-dir=$s ;;\n"
		    "  esac\n"
		    "  exec %s \"$@\" --only kernel --root %s/fx/$SLURMD_NODENAME ;;\n"
		    "*) exec %s \"$@\" ;;\n"
		    "esac\n",
		    b.dir, b.dir, test_vigil_bin(), test_vigil_bin(), b.dir, test_vigil_bin());
	test_write(b.dir, "bin/remote-vigil", w.buf);
	struct child c;
	struct strbuf out = STRBUF_INIT;
	start_run(&b, &c, NULL, TRAIN);
	finish_run(&c, &out);
	CHECK_INT(c.exit_code, 0);
	check_outcome(&b, &out, "n2", "Xid 79");
	char path[800];
	snprintf(path, sizeof(path), "%s/journal.jsonl", b.run_dir);
	struct strbuf j = STRBUF_INIT;
	CHECK(read_file_bounded(path, &j, 16u << 20, NULL) == 0);
	CHECK_CONTAINS(j.buf, "\"attempt_started\",\"attempt\":0,\"restarts\":0,\"hosts\":"
			      "[\"n1\",\"n3\",\"n4\",\"n5\"]");
	child_release(&c);
	strbuf_release(&out);
	strbuf_release(&w);
	strbuf_release(&sick);
	strbuf_release(&state);
	strbuf_release(&j);
}

/*
 * vigil run --nccl-recorder: the rank on n3 stops before the all_reduce of step 8 (it never
 * enters it; the others wait in it). The trainer runs on gloo, so tests/train/nccl_shim.py
 * reports its all_reduce calls to the recorder the way NCCL would. On the hang, vigil stacks
 * copies every rank's ring into attempt-0/nccl, vigil diagnose hang names the rank that never
 * entered, its host is a suspect, a smoke run alone confirms it (it stops there too), it is
 * drained, and the run ends on the spare.
 */
TEST_TIMEOUT(run_e2e_nccl_recorder_names_the_rank_that_never_entered, 400)
{
	struct bed b;
	bed_up(&b);
	struct child c;
	struct strbuf out = STRBUF_INIT;
	char stop[700];
	snprintf(stop, sizeof(stop), "%s/stop-hosts", b.dir);
	test_write(b.dir, "stop-hosts", "n3\n");
	const char *train[] = { "--steps", "40", "--ckpt-every", "5", "--step-sleep", "0.2",
				"--stop-host-file", stop, "--stop-at-step", "8", NULL };
	const char *extra[] = { "--nccl-recorder", "-c", "run.smoke-timeout=20", NULL };
	start_run(&b, &c, extra, train);
	finish_run(&c, &out);
	CHECK_INT(c.exit_code, 0);
	check_outcome(&b, &out, "n3", NULL);
	check_journal_event(&b, "hang", NULL);

	/* every rank's ring copied by vigil stacks */
	char path[800];
	snprintf(path, sizeof(path), "%s/attempt-0/nccl", b.run_dir);
	DIR *d = opendir(path);
	CHECK_MSG(d != NULL, "no %s", path);
	int rings = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		rings += strstr(e->d_name, ".ring") != NULL;
	if (d)
		closedir(d);
	CHECK_MSG(rings >= 4, "%d rings in %s", rings, path);

	/* the verdict kept beside the attempt: rank 2 (n3: the run's hosts are n1..n4, one task
	 * each) never entered the all_reduce the three others wait in */
	snprintf(path, sizeof(path), "%s/attempt-0/diagnosis-hang.json", b.run_dir);
	struct strbuf js = STRBUF_INIT;
	CHECK_MSG(read_file_bounded(path, &js, 1 << 20, NULL) == 0, "no %s", path);
	struct json_value *v = json_parse(js.buf, js.len, NULL);
	CHECK(v != NULL);
	CHECK_STR(json_get_string(v, "source"), "recorder");
	CHECK_STR(json_get_string(json_get(v, "recorder"), "state"), "never_entered");
	double r;
	CHECK(json_get_number(json_path(v, "recorder.culprits.0"), "rank", &r) && r == 2);
	CHECK(json_path(v, "recorder.culprits.1") == NULL);
	CHECK_CONTAINS(json_get_string(v, "summary"), "never entered AllReduce #8");
	json_free(v);

	/* the journal says it in words, and the evidence names n3 */
	snprintf(path, sizeof(path), "%s/journal.jsonl", b.run_dir);
	strbuf_reset(&js);
	CHECK(read_file_bounded(path, &js, 16u << 20, NULL) == 0);
	CHECK_CONTAINS(js.buf, "hang (recorder): rank 2");
	CHECK_CONTAINS(js.buf, "vigil diagnose hang names n3");
	/* the smoke runs of n3 alone stopped at step 8 as well: judged hung by the run's hang
	 * limit (4 s here: --hang-floor), not after run.smoke-timeout (20 s), twice */
	CHECK_CONTAINS(js.buf, "[n3] failed (hung: its ranks wrote nothing for 4 s");
	strbuf_release(&js);
	child_release(&c);
	strbuf_release(&out);
}
