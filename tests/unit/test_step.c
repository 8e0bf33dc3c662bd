/*
 * test_step.c: the srun step of `vigil run` as a plan (pure: argv and environment, refusals) and
 * the per-task script run by the local /bin/sh with the variables srun would set, so the rank
 * arithmetic and the handling of hostile trainer arguments are tested without Slurm.
 */
#include "../harness.h"
#include "../../src/slurm/step.h"
#include "../../src/lib/fileio.h"

#include <sys/stat.h>
#include <unistd.h>

static const struct slurm_cmds cmds = { .scontrol = "scontrol", .sinfo = "sinfo",
					.srun = "/opt/slurm/bin/srun", .timeout_ms = 1000 };

static const char *hosts2[] = { "n3", "n1" };
static const char *train[] = { "python3", "train.py", "--lr", "3e-4", NULL };

static void spec_default(struct step_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->hosts = hosts2;
	s->nr_hosts = 2;
	s->tasks_per_node = 2;
	s->master_port = 29500;
	s->attempt = 3;
	s->run_dir = "/runs/r1";
	s->attempt_dir = "/runs/r1/attempt-3";
	s->step_file = "/runs/r1/attempt-3/steps.jsonl";
	s->cmd = train;
}

static bool argv_has(const struct step_plan *p, const char *a)
{
	for (size_t i = 0; i < p->argc; i++)
		if (!strcmp(p->argv[i], a))
			return true;
	return false;
}

TEST(step_plan_argv_lays_ranks_on_hosts_in_the_given_order)
{
	struct step_spec s;
	struct step_plan p;
	struct strbuf err = STRBUF_INIT;
	spec_default(&s);
	CHECK_MSG(step_plan(&cmds, &s, &p, &err) == 0, "%s", err.buf);
	CHECK_STR(p.argv[0], "/opt/slurm/bin/srun"); /* slurm.srun, not a second srun setting */
	CHECK(argv_has(&p, "--nodes=2"));
	CHECK(argv_has(&p, "--ntasks=4"));
	CHECK(argv_has(&p, "--ntasks-per-node=2"));
	CHECK(argv_has(&p, "--nodelist=n3,n3,n1,n1"));
	CHECK(argv_has(&p, "--distribution=arbitrary"));
	CHECK(argv_has(&p, "--kill-on-bad-exit=0"));
	CHECK(argv_has(&p, "--job-name=vigil-run"));
	CHECK(argv_has(&p, "--export=ALL"));
	CHECK(argv_has(&p, "--output=/runs/r1/attempt-3/rank-%t.out"));
	CHECK(argv_has(&p, "--error=/runs/r1/attempt-3/rank-%t.err"));
	CHECK(!argv_has(&p, "--wait=0"));
	/* the trainer's argv comes last, unchanged, after the fixed script */
	CHECK(p.argc >= 8);
	size_t k = p.argc - 4;
	CHECK_STR(p.argv[k - 4], "/bin/sh");
	CHECK_STR(p.argv[k - 3], "-c");
	CHECK_STR(p.argv[k - 2], STEP_TASK_SCRIPT);
	CHECK_STR(p.argv[k], "python3");
	CHECK_STR(p.argv[k + 1], "train.py");
	CHECK_STR(p.argv[k + 3], "3e-4");
	CHECK(p.argv[p.argc] == NULL);

	CHECK_STR(step_plan_env(&p, "MASTER_ADDR"), "n3");
	CHECK_STR(step_plan_env(&p, "MASTER_PORT"), "29500");
	CHECK_STR(step_plan_env(&p, "WORLD_SIZE"), "4");
	CHECK_STR(step_plan_env(&p, "LOCAL_WORLD_SIZE"), "2");
	CHECK_STR(step_plan_env(&p, "VIGIL_ATTEMPT"), "3");
	CHECK_STR(step_plan_env(&p, "VIGIL_RUN_DIR"), "/runs/r1");
	CHECK_STR(step_plan_env(&p, "VIGIL_STEP_FILE"), "/runs/r1/attempt-3/steps.jsonl");
	CHECK_STR(step_plan_env(&p, "VIGIL_STEP_ID_FILE"), "/runs/r1/attempt-3/step-id");
	/* per-task values are not fixed for the whole step */
	CHECK(step_plan_env(&p, "RANK") == NULL);
	CHECK(step_plan_env(&p, "LOCAL_RANK") == NULL);
	step_plan_release(&p);

	s.master_addr = "10.0.0.7";
	s.label = "vigil-812-a3";
	s.wait_s = 30;
	s.tasks_per_node = 1;
	CHECK(step_plan(NULL, &s, &p, &err) == 0);
	CHECK_STR(p.argv[0], "srun");
	CHECK(argv_has(&p, "--nodelist=n3,n1"));
	CHECK(argv_has(&p, "--ntasks=2"));
	CHECK(argv_has(&p, "--wait=30"));
	CHECK(argv_has(&p, "--job-name=vigil-812-a3"));
	CHECK_STR(step_plan_env(&p, "MASTER_ADDR"), "10.0.0.7");
	CHECK_STR(step_plan_env(&p, "WORLD_SIZE"), "2");
	step_plan_release(&p);
	strbuf_release(&err);
}

static void refused(struct step_spec *s, const char *want)
{
	struct step_plan p;
	struct strbuf err = STRBUF_INIT;
	CHECK_MSG(step_plan(&cmds, s, &p, &err) == -1, "accepted, expected '%s'", want);
	CHECK_CONTAINS(err.buf, want);
	CHECK(p.argv == NULL && p.env == NULL);
	strbuf_release(&err);
}

TEST(step_plan_refuses_what_srun_would_misread)
{
	struct step_spec s;
	const char *list[] = { "n[1-4]" }, *comma[] = { "n1,n2" }, *dup[] = { "n1", "n1" };
	const char *empty_cmd[] = { NULL }, *blank_cmd[] = { "", NULL };
	spec_default(&s); s.hosts = list; s.nr_hosts = 1; refused(&s, "not a Slurm node name");
	spec_default(&s); s.hosts = comma; s.nr_hosts = 1; refused(&s, "not a Slurm node name");
	spec_default(&s); s.hosts = dup; refused(&s, "named twice");
	spec_default(&s); s.nr_hosts = 0; refused(&s, "1 to");
	spec_default(&s); s.tasks_per_node = 0; refused(&s, "tasks per node");
	spec_default(&s); s.tasks_per_node = 5000; refused(&s, "tasks per node");
	spec_default(&s); s.master_port = 0; refused(&s, "master port");
	spec_default(&s); s.master_port = 70000; refused(&s, "master port");
	spec_default(&s); s.attempt_dir = "/runs/100%/a"; refused(&s, "pattern");
	spec_default(&s); s.attempt_dir = "/runs/a\\t"; refused(&s, "pattern");
	spec_default(&s); s.attempt_dir = NULL; refused(&s, "pattern");
	spec_default(&s); s.run_dir = "/r\n1"; refused(&s, "run directory");
	spec_default(&s); s.step_file = NULL; refused(&s, "step file");
	spec_default(&s); s.label = "a,b"; refused(&s, "label");
	spec_default(&s); s.cmd = empty_cmd; refused(&s, "no command");
	spec_default(&s); s.cmd = blank_cmd; refused(&s, "no command");
}

/* The task script under the local /bin/sh, with what srun gives task 5 of 2-task nodes. */
TEST(step_task_script_derives_ranks_and_passes_arguments_untouched)
{
	const char *tmp = test_tmpdir();
	struct strbuf idf = STRBUF_INIT, e1 = STRBUF_INIT, e2 = STRBUF_INIT, canary = STRBUF_INIT;
	strbuf_addf(&idf, "VIGIL_STEP_ID_FILE=%s/step-id", tmp);
	strbuf_addf(&canary, "%s/pwned", tmp);
	strbuf_addf(&e2, "$(touch %s)", canary.buf);
	const char *env[] = { "SLURM_PROCID=5", "LOCAL_WORLD_SIZE=2", "SLURM_JOB_ID=812",
			      "SLURM_STEP_ID=4", idf.buf, NULL };
	const char *argv[] = { "/bin/sh", "-c", STEP_TASK_SCRIPT, "vigil-task", "/bin/sh", "-c",
			       "printf '%s|%s|%s|%s|%s\\n' \"$RANK\" \"$LOCAL_RANK\" \"$NODE_RANK\" "
			       "\"$1\" \"$2\"",
			       "x", "a b;'\"", e2.buf, NULL };
	struct child ch;
	child_init(&ch);
	ch.argv = argv;
	ch.env_add = env;
	ch.timeout_ms = 10000;
	CHECK(child_run(&ch, NULL) == 0);
	CHECK_MSG(ch.exited && ch.exit_code == 0, "%s", ch.err.buf);
	strbuf_addf(&e1, "5|1|2|a b;'\"|%s\n", e2.buf);
	CHECK_STR(ch.out.buf, e1.buf);
	CHECK(access(canary.buf, F_OK) != 0);
	/* only rank 0 records the step id */
	CHECK(access(idf.buf + strlen("VIGIL_STEP_ID_FILE="), F_OK) != 0);
	child_release(&ch);

	const char *env0[] = { "SLURM_PROCID=0", "LOCAL_WORLD_SIZE=8", "SLURM_JOB_ID=812",
			       "SLURM_STEP_ID=4", idf.buf, NULL };
	const char *argv0[] = { "/bin/sh", "-c", STEP_TASK_SCRIPT, "vigil-task", "/bin/sh", "-c",
				"echo $RANK $LOCAL_RANK $NODE_RANK", NULL };
	child_init(&ch);
	ch.argv = argv0;
	ch.env_add = env0;
	ch.timeout_ms = 10000;
	CHECK(child_run(&ch, NULL) == 0);
	CHECK_STR(ch.out.buf, "0 0 0\n");
	child_release(&ch);

	/* step_id() reads it back; a torn or odd file is not an id */
	struct step st;
	step_init(&st);
	snprintf(st.attempt_dir, sizeof(st.attempt_dir), "%s", tmp);
	CHECK_STR(step_id(&st), "812.4");
	step_release(&st);
	const char *bad[] = { "812.4", "812\n", "8a2.4\n", ".4\n", "812.4.1\n", "812..4\n", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		test_write(tmp, "step-id", bad[i]);
		step_init(&st);
		snprintf(st.attempt_dir, sizeof(st.attempt_dir), "%s", tmp);
		CHECK_MSG(step_id(&st) == NULL, "'%s' read as an id", bad[i]);
		step_release(&st);
	}
	strbuf_release(&idf);
	strbuf_release(&e1);
	strbuf_release(&e2);
	strbuf_release(&canary);
}

/* Starting without Slurm: a bad spec or a missing srun is an error, nothing left to stop. */
TEST(step_start_errors_leave_nothing_running)
{
	struct step_spec s;
	struct step st;
	struct strbuf err = STRBUF_INIT;
	struct slurm_cmds c = cmds;
	spec_default(&s);
	s.attempt_dir = test_tmpdir();
	c.srun = "/nonexistent/srun";
	step_init(&st);
	CHECK(step_start(&st, &c, &s, &err) == -1);
	CHECK(err.len > 0);
	CHECK(step_stop(&st, &c, 100, &err) == 0);
	step_release(&st);
	strbuf_reset(&err);
	s.tasks_per_node = 0;
	step_init(&st);
	CHECK(step_start(&st, &c, &s, &err) == -1);
	CHECK_CONTAINS(err.buf, "tasks per node");
	step_release(&st);
	strbuf_release(&err);
}
