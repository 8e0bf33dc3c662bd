/*
 * test_stacks.c: 'vigil stacks' on real processes: Python children started as 'vigil run' starts
 * a rank (the hook of src/supervise/pyhook.c on PYTHONPATH, VIGIL_ATTEMPT_DIR and RANK), one
 * frozen with SIGSTOP; and the hook itself (a planted link, VIGIL_PYSTACKS=0, the chained
 * sitecustomize). Skipped where /usr/bin/python3 is missing.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/supervise/pyhook.h"
#include "../../src/supervise/evidence.h"
#include "../../src/supervise/stacks.h"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"

static const char child_py[] =
	"import mmap, os, sys, time\n"
	"# VIGIL_TEST_MAP: a file this rank maps, as a CUDA program maps libcuda.so.1\n"
	"if os.environ.get('VIGIL_TEST_MAP'):\n"
	"    f = open(os.environ['VIGIL_TEST_MAP'], 'rb')\n"
	"    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\n"
	"def vigil_test_sits_here():\n"
	"    open(sys.argv[1], 'w').close()\n"
	"    while True:\n"
	"        time.sleep(0.05)\n"
	"vigil_test_sits_here()\n";

struct rank_proc {
	struct child c;
	const char *argv[8];
	char env[7][4200];
	const char *envp[8];
	char ready[4200];
};

/* The job and step the fake ranks belong to (Slurm gives every task SLURM_JOB_ID and
 * SLURM_STEP_ID); vigil stacks is told the same with --job and --step. */
#define JOB "77"
#define STEP "3"

/* Drops to uid/gid 65534 then execs argv[1:]: another local user's process. */
static const char drop_py[] =
	"import os, sys\n"
	"os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
	"os.execv(sys.argv[1], sys.argv[1:])\n";

static void need_python(void)
{
	if (access(PYTHON, X_OK) != 0)
		SKIP(PYTHON " is missing");
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* The hook installed under DIR/run; returns the PYTHONPATH directory (static). */
static const char *install_hook(void)
{
	static char hook[4200];
	struct strbuf run = STRBUF_INIT, dir = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&run, "%s/run", test_tmpdir());
	test_mkdir(test_tmpdir(), "run");
	CHECK_MSG(pyhook_install(run.buf, &dir, &err) == 0, "pyhook_install: %s", err.buf);
	snprintf(hook, sizeof(hook), "%s", dir.buf);
	test_write(test_tmpdir(), "child.py", child_py);
	strbuf_release(&run);
	strbuf_release(&dir);
	strbuf_release(&err);
	return hook;
}

/* Start a rank of attempt dir adir; waits until it sits in vigil_test_sits_here(). */
static unsigned ready_seq;

/* A process as a rank of JOB step STEP; extra_env replaces RANK=, SLURM_STEP_ID= or
 * SLURM_JOB_ID= when it names one, else is added; as_nobody: run as uid 65534. */
static void start_rank_as(struct rank_proc *p, const char *hook, const char *adir, int rank,
			  const char *extra_env, bool as_nobody)
{
	struct strbuf err = STRBUF_INIT;
	size_t e = 0;
	memset(p, 0, sizeof(*p));
	test_mkdir(test_tmpdir(), "ready");
	chmod(test_tmpdir(), 0755);
	snprintf(p->ready, sizeof(p->ready), "%s/ready", test_tmpdir());
	chmod(p->ready, 01777);
	snprintf(p->ready, sizeof(p->ready), "%s/ready/%d-%d-%u", test_tmpdir(), rank,
		 (int)getpid(), ready_seq++);
	snprintf(p->env[0], sizeof(p->env[0]), "PYTHONPATH=%s", hook);
	snprintf(p->env[1], sizeof(p->env[1]), "VIGIL_ATTEMPT_DIR=%s", adir);
	snprintf(p->env[2], sizeof(p->env[2]), "RANK=%d", rank);
	snprintf(p->env[3], sizeof(p->env[3]), "LOCAL_RANK=%d", rank % 2);
	snprintf(p->env[4], sizeof(p->env[4]), "SLURM_JOB_ID=" JOB);
	snprintf(p->env[5], sizeof(p->env[5]), "SLURM_STEP_ID=" STEP);
	snprintf(p->env[6], sizeof(p->env[6]), "VIGIL_TEST=1");
	if (extra_env) {
		size_t slot = !strncmp(extra_env, "RANK=", 5)	       ? 2
			      : !strncmp(extra_env, "SLURM_JOB_ID=", 13)  ? 4
			      : !strncmp(extra_env, "SLURM_STEP_ID=", 14) ? 5
									  : 6;
		snprintf(p->env[slot], sizeof(p->env[slot]), "%s", extra_env);
	}
	for (e = 0; e < 7; e++)
		p->envp[e] = p->env[e];
	p->envp[e] = NULL;
	unlink(p->ready);
	static char script[4200], drop[4200];
	snprintf(script, sizeof(script), "%s/child.py", test_tmpdir());
	snprintf(drop, sizeof(drop), "%s/drop.py", test_tmpdir());
	size_t a = 0;
	if (as_nobody) {
		/* uid 65534 must reach child.py and the ready directory: the runner's private
		 * root (mkdtemp, 0700) is made traversable */
		char root[4200];
		snprintf(root, sizeof(root), "%s", test_tmpdir());
		char *slash = strrchr(root, '/');
		if (slash)
			*slash = '\0';
		chmod(root, 0711);
		test_write(test_tmpdir(), "drop.py", drop_py);
		p->argv[a++] = PYTHON;
		p->argv[a++] = drop;
	}
	p->argv[a++] = PYTHON;
	p->argv[a++] = script;
	p->argv[a++] = p->ready;
	p->argv[a] = NULL;
	child_init(&p->c);
	p->c.argv = p->argv;
	p->c.env_add = p->envp;
	p->c.timeout_ms = 120000;
	CHECK_MSG(child_start(&p->c, &err) == 0, "cannot start python: %s", err.buf);
	for (int i = 0; i < 400 && access(p->ready, F_OK) != 0; i++)
		sleep_ms(25);
	CHECK_MSG(access(p->ready, F_OK) == 0, "the Python rank %d never got ready", rank);
	strbuf_release(&err);
}

static void start_rank(struct rank_proc *p, const char *hook, const char *adir, int rank,
		       const char *extra_env)
{
	start_rank_as(p, hook, adir, rank, extra_env, false);
}

static void stop_rank(struct rank_proc *p)
{
	kill(p->c.pid, SIGCONT);
	child_kill(&p->c, SIGKILL);
	child_finish(&p->c);
	child_release(&p->c);
}

static char proc_state(pid_t pid)
{
	char path[64];
	struct strbuf sb = STRBUF_INIT;
	char st = '?';
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file_bounded(path, &sb, 4096, NULL) == READ_OK) {
		const char *p = strrchr(sb.buf, ')');
		if (p && p[1] == ' ')
			st = p[2];
	}
	strbuf_release(&sb);
	return st;
}

static const struct json_value *rank_entry(const struct json_value *v, long rank)
{
	const struct json_value *ranks = json_get(v, "ranks");
	for (size_t i = 0; ranks && i < ranks->nr; i++) {
		double d;
		if (json_get_number(ranks->items[i], "rank", &d) && (long)d == rank)
			return ranks->items[i];
	}
	return NULL;
}

static bool errors_contain(const struct json_value *o, const char *needle)
{
	const struct json_value *e = json_get(o, "errors");
	for (size_t i = 0; e && i < e->nr; i++)
		if (e->items[i]->type == JSON_STRING && strstr(e->items[i]->string, needle))
			return true;
	return false;
}

/* Two ranks of an attempt (one frozen with SIGSTOP) and a rank of another attempt. */
TEST_TIMEOUT(stacks_finds_the_ranks_of_its_attempt, 120)
{
	need_python();
	const char *hook = install_hook();
	struct strbuf a1 = STRBUF_INIT, a2 = STRBUF_INIT, json_ = STRBUF_INIT;
	strbuf_addf(&a1, "%s/run/attempt-1", test_tmpdir());
	strbuf_addf(&a2, "%s/run/attempt-2", test_tmpdir());
	test_mkdir(test_tmpdir(), "run/attempt-1");
	test_mkdir(test_tmpdir(), "run/attempt-2");
	struct rank_proc r0, r1, other;
	start_rank(&r0, hook, a1.buf, 0, NULL);
	start_rank(&r1, hook, a1.buf, 1, NULL);
	start_rank(&other, hook, a2.buf, 5, NULL);
	kill(r1.c.pid, SIGSTOP);
	for (int i = 0; i < 200 && proc_state(r1.c.pid) != 'T'; i++)
		sleep_ms(10);
	CHECK_INT(proc_state(r1.c.pid), 'T');

	const char *args[] = { "stacks", "--attempt-dir", a1.buf, "--json", "--samples", "5",
			       "--interval-ms", "20", "--host", "testhost", "--job", JOB,
			       "--step", STEP, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "vigil stacks exited %d: %s", c.exit_code,
		  c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "host"), "testhost");
	CHECK_STR(json_get_string(v, "attempt_dir"), a1.buf);
	CHECK_INT(json_get(v, "ranks")->nr, 2); /* not rank 5 of attempt-2 */
	const struct json_value *k0 = rank_entry(v, 0), *k1 = rank_entry(v, 1);
	CHECK(k0 && k1);
	double d;
	CHECK(json_get_number(k0, "pid", &d) && (pid_t)d == r0.c.pid);
	CHECK(json_get_number(k1, "pid", &d) && (pid_t)d == r1.c.pid);
	CHECK(json_get_number(k1, "local_rank", &d) && d == 1);
	/* the frozen one: T in every sample, no Python stack (it cannot run its handler) */
	CHECK(json_get_number(json_get(k1, "states"), "T", &d) && d == 5);
	CHECK(json_get(k1, "py_stack")->type == JSON_NULL);
	CHECK(errors_contain(k1, "it is stopped: T"));
	/* not waited for: a rank frozen in every sample cannot answer SIGURG (on a hang that
	 * wait was 2 s of every recovery) */
	CHECK(errors_contain(k1, "not signalled"));
	/* the other sits where the script put it */
	CHECK(json_get_number(json_get(k0, "states"), "T", &d) && d == 0);
	const char *py = json_get_string(k0, "py_stack");
	CHECK_MSG(py, "no Python stack for rank 0: %s", c.out.buf);
	CHECK_CONTAINS(py, "in vigil_test_sits_here");
	CHECK_CONTAINS(py, "in <module>");
	if (access("/usr/bin/eu-stack", X_OK) == 0) {
		char tid[32];
		snprintf(tid, sizeof(tid), "TID %d:", (int)r0.c.pid);
		const char *nat = json_get_string(k0, "native_stack");
		CHECK_MSG(nat, "no native stack with eu-stack installed: %s", c.out.buf);
		CHECK_CONTAINS(nat, tid);
		CHECK_CONTAINS(json_get_string(v, "eu_stack"), "eu-stack");
	} else {
		fprintf(stderr, "# /usr/bin/eu-stack missing: native stack not asserted\n");
	}
	/* the text form says the same for a person */
	json_free(v);
	child_release(&c);
	const char *targs[] = { "stacks", "--attempt-dir", a1.buf, "--samples", "2", "--job", JOB,
				"--step", STEP, NULL };
	test_run_vigil(&c, targs, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "rank 1 (local 1)");
	CHECK_CONTAINS(c.out.buf, "T 2");
	CHECK_CONTAINS(c.out.buf, "Python stack:");
	child_release(&c);
	stop_rank(&r0);
	stop_rank(&r1);
	stop_rank(&other);
	strbuf_release(&a1);
	strbuf_release(&a2);
	strbuf_release(&json_);
}

/* Without eu-stack in PATH the output says so; without the hook's file, no signal is sent. */
TEST_TIMEOUT(stacks_without_eu_stack_or_hook_says_so, 120)
{
	need_python();
	struct strbuf a = STRBUF_INIT;
	strbuf_addf(&a, "%s/attempt-1", test_tmpdir());
	test_mkdir(test_tmpdir(), "attempt-1");
	test_write(test_tmpdir(), "child.py", child_py);
	struct rank_proc r;
	/* no hook on PYTHONPATH: no pystack file */
	start_rank(&r, "/nonexistent", a.buf, 0, NULL);
	const char *args[] = { "stacks", "--attempt-dir", a.buf, "--json", "--samples", "1",
			       "--job", JOB, "--step", STEP, NULL };
	const char *env[] = { "PATH=/nonexistent", NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	CHECK(json_get(v, "eu_stack")->type == JSON_NULL);
	CHECK(errors_contain(v, "eu-stack (Debian package elfutils) is not installed"));
	const struct json_value *k = rank_entry(v, 0);
	CHECK(k && json_get(k, "native_stack")->type == JSON_NULL);
	CHECK(errors_contain(k, "no Python stack: no pystack directory"));
	json_free(v);
	child_release(&c);
	stop_rank(&r);
	strbuf_release(&a);
}

TEST(stacks_no_rank_here_is_said_and_exits_0)
{
	/* the attempt directory is there (a missing one is exit 3: test_exit_contract.c) */
	struct strbuf dir = STRBUF_INIT;
	test_mkdir(test_tmpdir(), "attempt-7");
	strbuf_addf(&dir, "%s/attempt-7", test_tmpdir());
	const char *json[] = { "stacks", "--attempt-dir", dir.buf, "--json", "--samples", "1",
			       "--job", JOB, "--step", STEP, "--uid", "0", NULL };
	const char *text[] = { "stacks", "--attempt-dir", dir.buf, "--samples", "1", "--job", JOB,
			       "--step", STEP, "--uid", "0", NULL };
	struct child c;
	test_run_vigil(&c, json, NULL);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(json_get(v, "ranks")->nr, 0);
	json_free(v);
	child_release(&c);
	test_run_vigil(&c, text, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "no rank of this attempt runs on this host");
	child_release(&c);
	strbuf_release(&dir);
}

TEST(stacks_usage_errors)
{
	static const struct {
		const char *args[8];
		const char *msg;
	} cases[] = {
		/* no job to tie the ranks to (no SLURM_JOB_ID, no step-id file) */
		{ { "stacks", "--attempt-dir", "/x", "--uid", "0" }, "which job?" },
		{ { "stacks", "--attempt-dir", "/x", "--job", "0x1" }, "--job wants a Slurm job id" },
		{ { "stacks", "--attempt-dir", "/x", "--job", "7", "--step", "-1" },
		  "--step wants a Slurm step id" },
		{ { "stacks" }, "--attempt-dir DIR is needed" },
		{ { "stacks", "--attempt-dir", "/x", "--samples", "0" }, "--samples wants" },
		{ { "stacks", "--attempt-dir", "/x", "--interval-ms", "-1" }, "--interval-ms wants" },
		{ { "stacks", "--attempt-dir", "/x", "extra" }, "unexpected argument 'extra'" },
		{ { "stacks", "--attempt-dir", "/x", "--job", "7", "--host", "a\x1b" "b" },
		  "--host: not a host" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct child c;
		test_run_vigil(&c, cases[i].args, NULL);
		CHECK_MSG(c.exited && c.exit_code == 2, "case %zu exited %d", i, c.exit_code);
		CHECK_CONTAINS(c.err.buf, cases[i].msg);
		CHECK_STR(c.out.buf, "");
		child_release(&c);
	}
}

/* A link planted at pystack/rank-0.txt: the hook does not write through it, vigil stacks does
 * not read through it. */
TEST_TIMEOUT(stacks_hook_never_follows_a_planted_link, 120)
{
	need_python();
	const char *hook = install_hook();
	struct strbuf a = STRBUF_INIT, target = STRBUF_INIT, link_ = STRBUF_INIT, got = STRBUF_INIT;
	strbuf_addf(&a, "%s/run/attempt-3", test_tmpdir());
	test_mkdir(test_tmpdir(), "run/attempt-3/pystack");
	test_write(test_tmpdir(), "precious", "precious\n");
	strbuf_addf(&target, "%s/precious", test_tmpdir());
	strbuf_addf(&link_, "%s/pystack/rank-0.txt", a.buf);
	CHECK_INT(symlink(target.buf, link_.buf), 0);
	struct rank_proc r;
	start_rank(&r, hook, a.buf, 0, NULL);
	CHECK_INT(read_file_bounded(target.buf, &got, 4096, NULL), READ_OK);
	CHECK_STR(got.buf, "precious\n");
	struct stat st;
	CHECK(lstat(link_.buf, &st) == 0 && S_ISLNK(st.st_mode));
	const char *args[] = { "stacks", "--attempt-dir", a.buf, "--json", "--samples", "1",
			       "--job", JOB, "--step", STEP, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *k = rank_entry(v, 0);
	CHECK(k && json_get(k, "py_stack")->type == JSON_NULL);
	CHECK(errors_contain(k, "symbolic link"));
	/* the rank was not signalled through the link either: the target is as it was */
	strbuf_reset(&got);
	CHECK_INT(read_file_bounded(target.buf, &got, 4096, NULL), READ_OK);
	CHECK_STR(got.buf, "precious\n");
	json_free(v);
	child_release(&c);
	stop_rank(&r);
	strbuf_release(&a);
	strbuf_release(&target);
	strbuf_release(&link_);
	strbuf_release(&got);
}

/* Run python -c CODE with env; its exit code. */
static int run_python(const char *code, const char *const *env, struct strbuf *out)
{
	const char *argv[] = { PYTHON, "-c", code, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 30000;
	c.merge_stderr = true;
	CHECK_INT(child_run(&c, NULL), 0);
	int rc = c.exited ? c.exit_code : -1;
	if (out)
		strbuf_addstr(out, c.out.buf);
	child_release(&c);
	return rc;
}

/* VIGIL_PYSTACKS=0 turns the hook off; another sitecustomize later on the path still runs;
 * a hook that cannot write (attempt dir missing) is silent. */
TEST_TIMEOUT(stacks_hook_off_switch_chain_and_silence, 60)
{
	need_python();
	const char *hook = install_hook();
	char pp[8600], adir[4200], on[4200], off[4200];
	struct strbuf out = STRBUF_INIT;
	test_write(test_tmpdir(), "user/sitecustomize.py", "print('user sitecustomize ran')\n");
	snprintf(pp, sizeof(pp), "PYTHONPATH=%s:%s/user", hook, test_tmpdir());
	snprintf(adir, sizeof(adir), "VIGIL_ATTEMPT_DIR=%s/run/attempt-9", test_tmpdir());
	test_mkdir(test_tmpdir(), "run/attempt-9");
	snprintf(on, sizeof(on), "%s/run/attempt-9/pystack/rank-2.txt", test_tmpdir());
	snprintf(off, sizeof(off), "%s/run/attempt-9/pystack/rank-3.txt", test_tmpdir());

	const char *env_on[] = { pp, adir, "RANK=2", NULL };
	CHECK_INT(run_python("print('trainer ran')", env_on, &out), 0);
	CHECK_CONTAINS(out.buf, "user sitecustomize ran");
	CHECK_CONTAINS(out.buf, "trainer ran");
	CHECK(access(on, F_OK) == 0);

	const char *env_off[] = { pp, adir, "RANK=3", "VIGIL_PYSTACKS=0", NULL };
	strbuf_reset(&out);
	CHECK_INT(run_python("print('trainer ran')", env_off, &out), 0);
	CHECK_CONTAINS(out.buf, "user sitecustomize ran");
	CHECK(access(off, F_OK) != 0);

	const char *env_bad[] = { pp, "VIGIL_ATTEMPT_DIR=/nonexistent/attempt-1", "RANK=0", NULL };
	strbuf_reset(&out);
	CHECK_INT(run_python("print('trainer ran')", env_bad, &out), 0);
	CHECK_STR(out.buf, "user sitecustomize ran\ntrainer ran\n");
	strbuf_release(&out);
}

/* pyhook_install refuses a link where its directory goes. */
TEST(stacks_hook_install_refuses_a_planted_link)
{
	struct strbuf run = STRBUF_INIT, dir = STRBUF_INIT, err = STRBUF_INIT, l = STRBUF_INIT;
	test_mkdir(test_tmpdir(), "run/elsewhere");
	strbuf_addf(&run, "%s/run", test_tmpdir());
	strbuf_addf(&l, "%s/run/pyhook", test_tmpdir());
	CHECK_INT(symlink("elsewhere", l.buf), 0);
	CHECK_INT(pyhook_install(run.buf, &dir, &err), -1);
	CHECK_CONTAINS(err.buf, "cannot make the Python hook's directory");
	CHECK_STR(dir.buf, "");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/run/elsewhere/sitecustomize.py", test_tmpdir());
	CHECK(access(p.buf, F_OK) != 0);
	pyhook_pythonpath("/r/pyhook", "/a:/b", &p);
	CHECK_STR(p.buf, "/r/pyhook:/a:/b");
	pyhook_pythonpath("/r/pyhook", "", &p);
	CHECK_STR(p.buf, "/r/pyhook");
	strbuf_release(&run);
	strbuf_release(&dir);
	strbuf_release(&err);
	strbuf_release(&l);
	strbuf_release(&p);
}

static bool list_contains(const struct json_value *l, const char *needle)
{
	for (size_t i = 0; l && i < l->nr; i++)
		if (l->items[i]->type == JSON_STRING && strstr(l->items[i]->string, needle))
			return true;
	return false;
}

static void wait_stopped(pid_t pid)
{
	kill(pid, SIGSTOP);
	for (int i = 0; i < 200 && proc_state(pid) != 'T'; i++)
		sleep_ms(10);
	CHECK_INT(proc_state(pid), 'T');
}

/* What the supervisor makes of one host's answer (evidence.h). */
static void judge_one(const struct child *c, struct evidence *ev)
{
	struct evidence_host h = { "testhost", c->out.buf, c->out.len };
	struct evidence_input in = { .hosts = &h, .hosts_nr = 1 };
	evidence_init(ev);
	evidence_build(ev, &in);
}

/*
 * Issue 17: a stopped process of another user (uid 65534) whose environment names the attempt,
 * RANK=0 and even the job's SLURM_JOB_ID and SLURM_STEP_ID was "rank 0, frozen", and the real
 * rank 0 a duplicate. Now it is ignored and named, the real rank 0 kept; so are a process of
 * the job's uid in another step, one without the job's id, and RANKs that are not ranks.
 */
TEST_TIMEOUT(stacks_ignores_claimants_not_of_the_job_and_names_them, 120)
{
	need_python();
	if (getuid() != 0)
		SKIP("needs root to start a process of another uid");
	const char *hook = install_hook();
	struct strbuf a = STRBUF_INIT;
	strbuf_addf(&a, "%s/run/attempt-1", test_tmpdir());
	test_mkdir(test_tmpdir(), "run/attempt-1");
	chmod(test_tmpdir(), 0755);
	struct rank_proc real, nobody, nobody2, step4, nojob, hex, neg, huge, esc, plus;
	start_rank(&real, hook, a.buf, 0, NULL);
	start_rank_as(&nobody, "/nonexistent", a.buf, 0, NULL, true);
	/* another user's, saying it is another node's rank: still named */
	start_rank_as(&nobody2, "/nonexistent", a.buf, 0, "SLURMD_NODENAME=elsewhere", true);
	start_rank(&step4, "/nonexistent", a.buf, 1, "SLURM_STEP_ID=4");
	start_rank(&nojob, "/nonexistent", a.buf, 1, "SLURM_JOB_ID=");
	start_rank(&hex, "/nonexistent", a.buf, 0, "RANK=0x1");
	start_rank(&neg, "/nonexistent", a.buf, 0, "RANK=-1");
	start_rank(&huge, "/nonexistent", a.buf, 0, "RANK=99999999999999999999");
	start_rank(&plus, "/nonexistent", a.buf, 0, "RANK=+0"); /* strtoull's 0, not Slurm's */
	/* a terminal escape and a right-to-left override (U+202E) in the value */
	start_rank(&esc, "/nonexistent", a.buf, 0, "RANK=\x1b[31m\xe2\x80\xae" "1");
	wait_stopped(nobody.c.pid);
	wait_stopped(step4.c.pid);

	const char *args[] = { "stacks", "--attempt-dir", a.buf, "--json", "--samples", "5",
			       "--interval-ms", "10", "--host", "testhost", "--job", JOB,
			       "--step", STEP, "--uid", "0", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "vigil stacks exited %d: %s", c.exit_code,
		  c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_MSG(json_get(v, "ranks")->nr == 1, "not one rank: %s", c.out.buf);
	const struct json_value *k0 = rank_entry(v, 0);
	double d;
	CHECK(k0 && json_get_number(k0, "pid", &d) && (pid_t)d == real.c.pid);
	CHECK(json_get_number(json_get(k0, "states"), "T", &d) && d == 0);
	CHECK(json_get(k0, "doubt")->type == JSON_NULL);
	CHECK_STR(json_get_string(v, "job"), JOB);
	CHECK_STR(json_get_string(v, "step"), STEP);
	const struct json_value *ign = json_get(v, "ignored");
	char want[200];
	snprintf(want, sizeof(want), "ignored pid %d (uid 65534): not of job " JOB " step " STEP
		 ": not the job's uid 0", (int)nobody.c.pid);
	CHECK_MSG(list_contains(ign, want), "'%s' not in: %s", want, c.out.buf);
	snprintf(want, sizeof(want), "ignored pid %d (uid 0): not of job " JOB " step " STEP
		 ": its SLURM_STEP_ID is '4'", (int)step4.c.pid);
	CHECK_MSG(list_contains(ign, want), "'%s' not in: %s", want, c.out.buf);
	snprintf(want, sizeof(want), "ignored pid %d (uid 65534)", (int)nobody2.c.pid);
	CHECK_MSG(list_contains(ign, want), "'%s' not in: %s", want, c.out.buf);
	snprintf(want, sizeof(want), "ignored pid %d (uid 0)", (int)nojob.c.pid);
	CHECK(list_contains(ign, want));
	CHECK(list_contains(ign, "its RANK '0x1' is not a rank"));
	CHECK(list_contains(ign, "its RANK '-1' is not a rank"));
	CHECK(list_contains(ign, "its RANK '99999999999999999999' is not a rank"));
	CHECK(list_contains(ign, "its RANK '+0' is not a rank"));

	/* the supervisor: no rank is frozen, and the host's evidence is doubtful */
	struct evidence ev;
	judge_one(&c, &ev);
	CHECK_INT(ev.suspects_nr, 0);
	CHECK_INT(ev.doubtful_hosts.nr, 1);
	CHECK_CONTAINS(ev.summary.buf, "not of the job");
	evidence_release(&ev);
	json_free(v);
	child_release(&c);

	/* the text form names them too */
	const char *targs[] = { "stacks", "--attempt-dir", a.buf, "--samples", "1", "--job", JOB,
				"--step", STEP, "--no-signal", NULL };
	test_run_vigil(&c, targs, NULL);
	CHECK_INT(c.exit_code, 0);
	snprintf(want, sizeof(want), "ignored pid %d (uid 65534)", (int)nobody.c.pid);
	CHECK_CONTAINS(c.out.buf, want);
	CHECK_CONTAINS(c.out.buf, "its RANK '\\x1b[31m\\xe2\\x80\\xae1' is not a rank");
	CHECK(!strchr(c.out.buf, '\x1b') && !strstr(c.out.buf, "\xe2\x80\xae"));
	child_release(&c);
	stop_rank(&real);
	stop_rank(&nobody);
	stop_rank(&nobody2);
	stop_rank(&step4);
	stop_rank(&nojob);
	stop_rank(&hex);
	stop_rank(&neg);
	stop_rank(&huge);
	stop_rank(&esc);
	stop_rank(&plus);
	strbuf_release(&a);
}

/* Two processes of the job claiming one rank (not parent and child): which is the rank cannot
 * be told, so the rank is doubt, its evidence unknown; the stopped one blames nobody. */
TEST_TIMEOUT(stacks_two_claimants_of_one_rank_are_doubt, 120)
{
	need_python();
	struct strbuf a = STRBUF_INIT;
	strbuf_addf(&a, "%s/attempt-1", test_tmpdir());
	test_mkdir(test_tmpdir(), "attempt-1");
	test_write(test_tmpdir(), "child.py", child_py);
	struct rank_proc r1, r2, other;
	start_rank(&r1, "/nonexistent", a.buf, 2, NULL);
	start_rank(&r2, "/nonexistent", a.buf, 2, NULL);
	start_rank(&other, "/nonexistent", a.buf, 3, NULL);
	wait_stopped(r2.c.pid);
	const char *args[] = { "stacks", "--attempt-dir", a.buf, "--json", "--samples", "4",
			       "--interval-ms", "10", "--host", "testhost", "--job", JOB,
			       "--step", STEP, "--no-signal", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *ranks = json_get(v, "ranks");
	size_t doubts = 0;
	for (size_t i = 0; i < ranks->nr; i++) {
		const char *dbt = json_get_string(ranks->items[i], "doubt");
		if (dbt) {
			CHECK_CONTAINS(dbt, "rank 2 is claimed by 2 processes of the job");
			doubts++;
		}
	}
	CHECK_INT(doubts, 2);
	const struct json_value *k3 = rank_entry(v, 3);
	CHECK(k3 && json_get(k3, "doubt")->type == JSON_NULL);
	struct evidence ev;
	judge_one(&c, &ev);
	/* rank 2 (one claimant stopped in every sample) is no suspect: its evidence is unknown */
	for (size_t i = 0; i < ev.suspects_nr; i++)
		CHECK_MSG(ev.suspects[i].rank != 2, "rank 2 blamed: %s", ev.summary.buf);
	CHECK_INT(ev.doubtful_hosts.nr, 1);
	CHECK_CONTAINS(ev.summary.buf, "rank 2 is claimed by 2 processes");
	evidence_release(&ev);
	json_free(v);
	child_release(&c);
	stop_rank(&r1);
	stop_rank(&r2);
	stop_rank(&other);
	strbuf_release(&a);
}

/* One stacks_cgroup_why() case: own and the rank's /proc/PID/cgroup; expected: NULL (in the
 * step) or a piece of the reason. */
static void cg_case(const char *own, const char *cg, const char *expect, bool checked_want)
{
	struct strbuf o = STRBUF_INIT, c = STRBUF_INIT, why = STRBUF_INIT;
	strbuf_addstr(&o, own);
	strbuf_addstr(&c, cg);
	bool checked = false;
	const char *no = stacks_cgroup_why(&o, &c, "77", "3", &checked, &why);
	if (!expect)
		CHECK_MSG(!no, "'%s' refused (own '%s'): %s", cg, own, no);
	else
		CHECK_MSG(no && strstr(no, expect), "'%s' (own '%s'): got '%s', want '%s'", cg, own,
			  no ? no : "(accepted)", expect);
	CHECK_MSG(checked == checked_want, "'%s': checked %d", cg, checked);
	strbuf_release(&o);
	strbuf_release(&c);
	strbuf_release(&why);
}

/*
 * The step's cgroup, in Slurm's layouts. cgroup v2 (Slurm's doc/html/cgroup_v2.shtml; the
 * plugin src/plugins/cgroup/v2): /system.slice/slurmstepd.scope/job_N/step_M/user/task_T, on a
 * multiple-slurmd host NODE_slurmstepd.scope; cgroup v1 (src/plugins/task/cgroup and
 * proctrack/cgroup build "%s/job_%u", then "%s/step_%u" under slurm/uid_%u): one line per
 * hierarchy, /slurm/uid_U/job_N/step_M/task_T. vigil stacks runs in step 5 of job 77.
 */
TEST(stacks_rank_must_lie_in_the_steps_cgroup)
{
	const char *v2 = "0::/system.slice/slurmstepd.scope/job_77/step_5/user/task_0\n";
	cg_case(v2, "0::/system.slice/slurmstepd.scope/job_77/step_3/user/task_0\n", NULL, true);
	cg_case(v2, "0::/system.slice/slurmstepd.scope/job_77/step_3\n", NULL, true);
	/* the same uid, the right environment, but outside the step: another step, the batch
	 * script's, another job's, a user's own cgroup named like Slurm's, none of Slurm's */
	cg_case(v2, "0::/system.slice/slurmstepd.scope/job_77/step_4/user/task_0\n",
		"is not under the step's", true);
	cg_case(v2, "0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n",
		"is not under the step's", true);
	cg_case(v2, "0::/system.slice/slurmstepd.scope/job_78/step_3/user/task_0\n",
		"is not under the step's", true);
	cg_case(v2, "0::/system.slice/slurmstepd.scope/job_77/step_30/user/task_0\n",
		"is not under the step's", true);
	cg_case(v2, "0::/user.slice/user-0.slice/job_77/step_3\n", "is not under the step's", true);
	cg_case(v2, "0::/user.slice/user-0.slice/session-4.scope\n", "is not under the step's",
		true);
	cg_case(v2, "", "in no cgroup of the step's hierarchy", true);
	/* control bytes and bidi controls in a cgroup name a user made: spelled out in ASCII */
	cg_case(v2, "0::/user.slice/\x1b[2J\xe2\x80\xae\n", "\\x1b[2J\\xe2\\x80\\xae", true);
	/* multiple slurmd on one machine */
	cg_case("0::/system.slice/n1_slurmstepd.scope/job_77/step_5/user/task_0\n",
		"0::/system.slice/n1_slurmstepd.scope/job_77/step_3/user/task_0\n", NULL, true);
	cg_case("0::/system.slice/n1_slurmstepd.scope/job_77/step_5/user/task_0\n",
		"0::/system.slice/n2_slurmstepd.scope/job_77/step_3/user/task_0\n",
		"is not under the step's", true);
	/* cgroup v1: every hierarchy that holds Slurm's steps is compared */
	const char *v1 = "7:freezer:/slurm/uid_0/job_77/step_5\n"
			 "4:memory:/slurm/uid_0/job_77/step_5/task_0\n"
			 "1:name=systemd:/system.slice/slurmd.service\n";
	cg_case(v1, "7:freezer:/slurm/uid_0/job_77/step_3\n4:memory:/slurm/uid_0/job_77/step_3/"
		"task_1\n1:name=systemd:/system.slice/slurmd.service\n", NULL, true);
	cg_case(v1, "7:freezer:/slurm/uid_0/job_77/step_3\n4:memory:/user.slice\n",
		"is not under the step's", true);
	cg_case(v1, "7:freezer:/slurm/uid_0/job_77/step_3\n", "in no cgroup of the step's", true);
	/* vigil stacks in no step cgroup of the job (by hand, or no cgroup plugin): a rank in
	 * another job's or step's cgroup is still refused, one in none cannot be checked */
	cg_case("0::/\n", "0::/system.slice/slurmstepd.scope/job_77/step_3/user/task_0\n", NULL,
		true);
	cg_case("0::/\n", "0::/system.slice/slurmstepd.scope/job_77/step_4/user/task_0\n",
		"another job's or step's", true);
	cg_case("0::/\n", "0::/user.slice\n", NULL, false);
}

/* A rank that ends while eu-stack runs (its pid free for another process): the stack eu-stack
 * printed is not kept as the rank's. The fake eu-stack kills the rank, then prints a stack. */
TEST_TIMEOUT(stacks_native_stack_of_a_rank_that_ended_meanwhile_is_dropped, 60)
{
	need_python();
	struct strbuf a = STRBUF_INIT, path = STRBUF_INIT;
	strbuf_addf(&a, "%s/attempt-1", test_tmpdir());
	test_mkdir(test_tmpdir(), "attempt-1");
	test_write(test_tmpdir(), "child.py", child_py);
	const char *dir = test_script("eu-stack", "kill -9 \"$2\"; sleep 0.2\n"
						  "echo \"PID $2 - process\"; echo \"TID $2:\"\n"
						  "echo '#0  0x0000000000000001 someone_elses_frame'");
	strbuf_addf(&path, "PATH=%s:/usr/bin:/bin", dir);
	struct rank_proc r;
	start_rank(&r, "/nonexistent", a.buf, 0, NULL);
	const char *args[] = { "stacks", "--attempt-dir", a.buf, "--json", "--samples", "1",
			       "--job", JOB, "--step", STEP, "--no-signal", NULL };
	const char *env[] = { path.buf, NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *k = rank_entry(v, 0);
	CHECK_MSG(k && json_get(k, "native_stack")->type == JSON_NULL, "kept: %s", c.out.buf);
	CHECK(errors_contain(k, "the process ended while eu-stack ran"));
	json_free(v);
	child_release(&c);
	stop_rank(&r);
	strbuf_release(&a);
	strbuf_release(&path);
}

/* A rank that maps libcuda.so.1 (every CUDA program does: PyTorch on a GPU, NCCL) is "gpu":
 * true, the other false; the supervisor then reads no busy share of it as evidence, since a
 * CUDA rank waiting for its GPU spins (test_evidence.c). */
TEST_TIMEOUT(stacks_says_which_ranks_map_libcuda, 120)
{
	need_python();
	const char *hook = install_hook();
	struct strbuf a = STRBUF_INIT, lib = STRBUF_INIT, env = STRBUF_INIT;
	strbuf_addf(&a, "%s/attempt-1", test_tmpdir());
	test_mkdir(test_tmpdir(), "attempt-1");
	test_mkdir(test_tmpdir(), "drv");
	test_write(test_tmpdir(), "drv/libcuda.so.1", "not really NVIDIA's driver library\n");
	strbuf_addf(&env, "VIGIL_TEST_MAP=%s/drv/libcuda.so.1", test_tmpdir());
	struct rank_proc r0, r1;
	start_rank(&r0, hook, a.buf, 0, env.buf);
	start_rank(&r1, hook, a.buf, 1, NULL);
	const char *args[] = { "stacks", "--attempt-dir", a.buf, "--json", "--samples", "2",
			       "--job", JOB, "--step", STEP, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *k0 = rank_entry(v, 0), *k1 = rank_entry(v, 1);
	CHECK(k0 && json_get(k0, "gpu") && json_get(k0, "gpu")->type == JSON_BOOL &&
	      json_get(k0, "gpu")->boolean);
	CHECK(k1 && json_get(k1, "gpu") && json_get(k1, "gpu")->type == JSON_BOOL &&
	      !json_get(k1, "gpu")->boolean);
	json_free(v);
	child_release(&c);
	const char *targs[] = { "stacks", "--attempt-dir", a.buf, "--samples", "1",
				"--job", JOB, "--step", STEP, NULL };
	test_run_vigil(&c, targs, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "on a GPU (maps libcuda)");
	child_release(&c);
	stop_rank(&r0);
	stop_rank(&r1);
	strbuf_release(&a);
	strbuf_release(&lib);
	strbuf_release(&env);
}
