/*
 * test_sim.c: 'vigil sim' through the real binary: the same seed gives the same JSON byte for
 * byte (another seed another), a bad model file is refused with the key named, --print-model
 * reads back through --failures, and interruptions grow with the GPUs (replicas, sweeps and
 * Young/Daly: test_sim_sweep.c). Every run is the real supervisor
 * in virtual time (src/sim/); each takes a second or two under ASan.
 */
#include "../harness.h"
#include "../../src/lib/json.h"

#include <dirent.h>
#include <math.h>
#include <string.h>

/* One class: a software crash (no host at fault, a restart fixes it), rate per GPU-day. */
static const char *one_class_model(const char *name, double rate)
{
	static char buf[512];
	snprintf(buf, sizeof(buf),
		 "{\"rate_unit\": \"per_gpu_day\", \"classes\": [{\"name\": \"%s\", \"rate\": %g, "
		 "\"seen_as\": \"crash\", \"host_fault\": false, \"check_sees\": false, "
		 "\"repair_hours\": 0, \"check_says\": \"\"}]}\n",
		 name, rate);
	return buf;
}

/* Host faults a check sees, a node lost, an SDC host no check sees, a software hang: at 64
 * GPUs about one fault every 2 h, repairs of 2 h, one spare: requeues happen. */
static const char mixed_model[] =
	"{\"source\": \"test\", \"rate_unit\": \"per_gpu_day\", \"classes\": [\n"
	" {\"name\": \"gpu\", \"rate\": 0.08, \"seen_as\": \"crash\", \"host_fault\": true,"
	"  \"check_sees\": true, \"repair_hours\": 2, \"check_says\": \"gpu: Xid 79\"},\n"
	" {\"name\": \"node\", \"rate\": 0.04, \"seen_as\": \"lost\", \"host_fault\": true,"
	"  \"check_sees\": true, \"repair_hours\": 2, \"check_says\": \"\"},\n"
	" {\"name\": \"sdc\", \"rate\": 0.02, \"seen_as\": \"crash\", \"host_fault\": true,"
	"  \"check_sees\": false, \"repair_hours\": 2, \"check_says\": \"\"},\n"
	" {\"name\": \"nccl\", \"rate\": 0.03, \"seen_as\": \"hang\", \"host_fault\": false,"
	"  \"check_sees\": false, \"repair_hours\": 0, \"check_says\": \"\"},\n"
	" {\"name\": \"sick\", \"rate\": 0.02, \"seen_as\": \"sick\", \"host_fault\": true,"
	"  \"check_sees\": true, \"repair_hours\": 2, \"check_says\": \"gpu: row remap pending\"}\n"
	"]}\n";

/* TMPDIR empty: vigil sim's run directory goes on /dev/shm where there is one (a TMPDIR on a
 * disk makes every step record's fsync a flush: minutes instead of seconds) */
static const char *const sim_env[] = { "TMPDIR=", NULL };

static void sim(struct child *c, const char *const *args)
{
	test_run_vigil(c, args, sim_env);
	CHECK_MSG(c->exited && c->exit_code == 0, "vigil sim exited %d: %s", c->exit_code,
		  c->err.buf);
}

static double num(const struct json_value *v, const char *path)
{
	const struct json_value *x = json_path(v, path);
	CHECK_MSG(x && x->type == JSON_NUMBER, "no number at '%s'", path);
	return x->number;
}

TEST(sim_same_seed_same_json_another_seed_another)
{
	test_write(test_tmpdir(), "mixed.json", mixed_model);
	struct strbuf model = STRBUF_INIT;
	strbuf_addf(&model, "%s/mixed.json", test_tmpdir());
	const char *a[] = { "sim", "--failures", model.buf, "--gpus", "64", "--spares", "1",
			    "--days", "3", "--step-time", "30", "--seed", "7", "--json", NULL };
	struct child c1, c2, c3;
	sim(&c1, a);
	sim(&c2, a);
	CHECK_STR(c1.out.buf, c2.out.buf);
	a[12] = "8";
	sim(&c3, a);
	CHECK_MSG(strcmp(c1.out.buf, c3.out.buf), "seeds 7 and 8 gave the same JSON");
	test_keep_json_as("sim", c1.out.buf, c1.out.len);
	struct json_value *v = test_parse_json(&c1);
	/* every class struck, and the paths beyond a crash were taken */
	CHECK(num(v, "interruptions") >= 20);
	CHECK(num(v, "interruptions_by_class.node") > 0);
	CHECK(num(v, "interruptions_by_class.sdc") > 0);
	CHECK(num(v, "interruptions_by_class.nccl") > 0);
	CHECK(num(v, "interruptions_by_class.sick") > 0);
	CHECK(num(v, "lost_seconds_by_cause.detection") > 0); /* hangs take the hang limit */
	CHECK(num(v, "requeues") > 0 && num(v, "lost_seconds_by_cause.waiting_for_nodes") > 0);
	CHECK(num(v, "spares_used_max") == 1);
	double ettr = num(v, "ettr");
	CHECK(ettr > 0.3 && ettr < 1);
	/* the wall time is accounted for: productive plus every cause */
	double sum = num(v, "productive_s");
	const char *causes[] = { "detection", "restart", "recomputation", "waiting_for_nodes",
				 "checkpoint", "slowdown" };
	for (size_t i = 0; i < 6; i++) {
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "lost_seconds_by_cause.%s", causes[i]);
		sum += num(v, p.buf);
		strbuf_release(&p);
	}
	CHECK_MSG(fabs(sum - num(v, "wall_s")) < 1, "productive + lost = %.1f, wall %.1f", sum,
		  num(v, "wall_s"));
	json_free(v);
	child_release(&c1);
	child_release(&c2);
	child_release(&c3);
	strbuf_release(&model);
}

/* Young/Daly (the validation 2) is tests/unit/test_sim_sweep.c's: the recommended
 * interval of an automatic checkpoint-every sweep against sqrt(2 M C). */

static void expect_refused(const char *text, const char *want)
{
	test_write(test_tmpdir(), "bad.json", text);
	struct strbuf model = STRBUF_INIT;
	strbuf_addf(&model, "%s/bad.json", test_tmpdir());
	const char *a[] = { "sim", "--failures", model.buf, "--days", "1", NULL };
	struct child c;
	test_run_vigil(&c, a, sim_env);
	CHECK_MSG(c.exited && c.exit_code == 2, "exit %d for %s", c.exit_code, want);
	CHECK_CONTAINS(c.err.buf, want);
	CHECK_STR(c.out.buf, "");
	child_release(&c);
	strbuf_release(&model);
}

TEST(sim_bad_model_is_refused_with_the_key_named)
{
	struct strbuf t = STRBUF_INIT;
	strbuf_addstr(&t, one_class_model("x", 1));
	/* a misspelt key */
	char *p = strstr(t.buf, "\"rate\":");
	memcpy(p, "\"rite\"", 6);
	expect_refused(t.buf, "unknown key 'classes[0].rite'");
	expect_refused("{\"rate_unit\": \"per_gpu_day\", \"classes\": [], \"extra\": 1}",
		       "unknown key 'extra'");
	/* a missing field, a negative rate, a bad kind, a unit that is not ours, not JSON */
	strbuf_reset(&t);
	strbuf_addstr(&t, one_class_model("x", 1));
	p = strstr(t.buf, "\"seen_as\": \"crash\", ");
	memmove(p, p + 20, strlen(p + 20) + 1);
	expect_refused(t.buf, "'classes[0].seen_as': missing");
	expect_refused(one_class_model("x", -0.5), "'classes[0].rate': wants a number from 0");
	strbuf_reset(&t);
	strbuf_addstr(&t, one_class_model("x", 1));
	p = strstr(t.buf, "crash");
	memcpy(p, "crush", 5);
	expect_refused(t.buf, "'classes[0].seen_as': wants crash, hang, slow, lost or sick");
	expect_refused("{\"rate_unit\": \"per_node_day\", \"classes\": []}", "'rate_unit'");
	/* a check text with a control byte: it would reach a drain reason and a terminal */
	expect_refused("{\"rate_unit\": \"per_gpu_day\", \"classes\": [{\"name\": \"x\", \"rate\": 1, "
		       "\"seen_as\": \"crash\", \"host_fault\": true, \"check_sees\": true, "
		       "\"repair_hours\": 1, \"check_says\": \"a\\u001b[31m\"}]}",
		       "'classes[0].check_says': wants printable text");
	expect_refused("{\"rate_unit\": ", "bad.json");
	/* a model that gives the job a fault every few seconds: no run, said (exit 3) */
	test_write(test_tmpdir(), "fast.json", one_class_model("x", 1000));
	struct strbuf fast = STRBUF_INIT;
	strbuf_addf(&fast, "%s/fast.json", test_tmpdir());
	const char *a[] = { "sim", "--failures", fast.buf, "--gpus", "64", NULL };
	struct child c;
	test_run_vigil(&c, a, sim_env);
	CHECK_MSG(c.exited && c.exit_code == 3, "exit %d", c.exit_code);
	CHECK_CONTAINS(c.err.buf, "a fault every 1.35 s: no job runs at that rate");
	child_release(&c);
	strbuf_release(&fast);
	strbuf_release(&t);
}

TEST(sim_print_model_reads_back_through_failures)
{
	const char *a[] = { "sim", "--print-model", NULL };
	struct child c1, c2;
	sim(&c1, a);
	CHECK_CONTAINS(c1.out.buf, "\"gpu_fell_off_bus\"");
	CHECK_CONTAINS(c1.out.buf, "\"sdc\"");
	test_write(test_tmpdir(), "model.json", c1.out.buf);
	struct strbuf model = STRBUF_INIT;
	strbuf_addf(&model, "%s/model.json", test_tmpdir());
	const char *b[] = { "sim", "--failures", model.buf, "--print-model", NULL };
	sim(&c2, b);
	CHECK_STR(c2.out.buf, c1.out.buf);
	/* the default's rates sum to Llama 3's 419 interruptions in 16,384 x 54 GPU-days */
	struct json_value *v = test_parse_json(&c1);
	const struct json_value *cl = json_get(v, "classes");
	double sum = 0;
	for (size_t i = 0; cl && i < cl->nr; i++)
		sum += num(cl->items[i], "rate");
	CHECK_MSG(fabs(sum * 16384 * 54 - 419) < 0.5, "the rates make %.2f interruptions",
		  sum * 16384 * 54);
	json_free(v);
	child_release(&c1);
	child_release(&c2);
	strbuf_release(&model);
}

TEST(sim_interruptions_scale_with_the_gpus)
{
	test_write(test_tmpdir(), "one.json", one_class_model("software_bug", 1.125));
	struct strbuf model = STRBUF_INIT;
	strbuf_addf(&model, "%s/one.json", test_tmpdir());
	double n[2];
	const char *gpus[2] = { "64", "128" };
	for (int i = 0; i < 2; i++) {
		const char *a[] = { "sim", "--failures", model.buf, "--gpus", gpus[i], "--spares",
				    "0", "--days", "2", "--step-time", "30", "--restart-cost", "10",
				    "--json", NULL };
		struct child c;
		sim(&c, a);
		struct json_value *v = test_parse_json(&c);
		n[i] = num(v, "interruptions");
		json_free(v);
		child_release(&c);
	}
	/* expected 144 and 288 (M = 1,200 s and 600 s over 2 days) */
	CHECK_MSG(n[0] > 100 && n[0] < 190, "64 GPUs: %.0f interruptions", n[0]);
	CHECK_MSG(n[1] / n[0] > 1.7 && n[1] / n[0] < 2.3, "64 GPUs: %.0f, 128 GPUs: %.0f", n[0],
		  n[1]);
	strbuf_release(&model);
}

TEST(sim_usage_errors_exit_2)
{
	const char *bad[][4] = {
		{ "sim", "--gpus", "12", NULL },          /* not whole nodes of 8 */
		{ "sim", "--gpus", "0", NULL },
		{ "sim", "--checkpoint-every", "1", NULL }, /* shorter than a step */
		{ "sim", "--days", "x", NULL },
		{ "sim", "extra", NULL, NULL },
		{ "sim", "--step-time", "0.01", NULL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct child c;
		test_run_vigil(&c, bad[i], NULL);
		CHECK_MSG(c.exited && c.exit_code == 2, "vigil %s %s: exit %d", bad[i][1],
			  bad[i][2] ? bad[i][2] : "", c.exit_code);
		CHECK_CONTAINS(c.err.buf, "vigil sim: ");
		child_release(&c);
	}
}

/* The supervisor's run directory is private and temporary: under TMPDIR, gone afterwards; a
 * TMPDIR that cannot hold it is "could not run" (3), said. The text is a table a person reads. */
TEST(sim_run_directory_is_removed_and_the_text_is_a_table)
{
	test_mkdir(test_tmpdir(), "tmp");
	struct strbuf env = STRBUF_INIT, dir = STRBUF_INIT;
	strbuf_addf(&dir, "%s/tmp", test_tmpdir());
	strbuf_addf(&env, "TMPDIR=%s", dir.buf);
	const char *e[] = { env.buf, NULL };
	/* steps of 2 min: the test's TMPDIR may be a disk, where each step record's fsync is a
	 * flush (docs/SIM.md) */
	const char *a[] = { "sim", "--gpus", "64", "--days", "1", "--step-time", "120", NULL };
	struct child c;
	test_run_vigil(&c, a, e);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "vigil sim: 64 GPUs (8 nodes of 8, 16 spares), 1 day, seed 1");
	CHECK_CONTAINS(c.out.buf, "  ETTR            0.");
	CHECK_CONTAINS(c.out.buf, "    gpu_fell_off_bus ");
	CHECK_CONTAINS(c.out.buf, "    waiting_for_nodes ");
	DIR *d = opendir(dir.buf);
	CHECK(d != NULL);
	for (struct dirent *de; d && (de = readdir(d));)
		CHECK_MSG(de->d_name[0] == '.', "left behind in TMPDIR: %s", de->d_name);
	if (d)
		closedir(d);
	child_release(&c);
	strbuf_reset(&env);
	strbuf_addf(&env, "TMPDIR=%s/missing", test_tmpdir());
	test_run_vigil(&c, a, e);
	CHECK_MSG(c.exited && c.exit_code == 3, "exit %d with no TMPDIR", c.exit_code);
	CHECK_CONTAINS(c.err.buf, "vigil sim: cannot make a directory in '");
	child_release(&c);
	strbuf_release(&env);
	strbuf_release(&dir);
}
