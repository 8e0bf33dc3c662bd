/*
 * test_sim_policy.c: 'vigil sim --policy' and '--schedule' through the real binary: every
 * policy gets the same faults (the schedule is fixed before any policy runs), torchrun loses
 * more than vigil where hangs and a broken host that is never excluded recur, a hang costs
 * torchrun NCCL's timeout, manual's detection includes the operator, per-policy JSON has every
 * figure and keeps to docs/schema/sim.json, the same seed gives the same bytes with several
 * policies, a bad schedule file is refused naming the entry, and the default model's faults
 * grow with the GPUs at Llama 3's rate (the full-scale check is bench/sim-llama3.sh).
 */
#include "../harness.h"
#include "../../src/lib/json.h"

#include <math.h>
#include <string.h>

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
	return x ? x->number : NAN;
}

/* A software crash, a software hang, a GPU that breaks (a check sees it, 24 h of repair) and
 * an SDC host no check sees; rates per GPU-day. */
static const char model[] =
	"{\"source\": \"test\", \"rate_unit\": \"per_gpu_day\", \"classes\": [\n"
	" {\"name\": \"bug\", \"rate\": 0.01, \"seen_as\": \"crash\", \"host_fault\": false,"
	"  \"check_sees\": false, \"repair_hours\": 0, \"check_says\": \"\"},\n"
	" {\"name\": \"nccl\", \"rate\": 0.02, \"seen_as\": \"hang\", \"host_fault\": false,"
	"  \"check_sees\": false, \"repair_hours\": 0, \"check_says\": \"\"},\n"
	" {\"name\": \"gpu\", \"rate\": 0.02, \"seen_as\": \"crash\", \"host_fault\": true,"
	"  \"check_sees\": true, \"repair_hours\": 24, \"check_says\": \"gpu: Xid 79\"},\n"
	" {\"name\": \"node\", \"rate\": 0.005, \"seen_as\": \"lost\", \"host_fault\": true,"
	"  \"check_sees\": true, \"repair_hours\": 24, \"check_says\": \"\"}\n"
	"]}\n";

static const char *model_file(void)
{
	static char path[512];
	test_write(test_tmpdir(), "model.json", model);
	snprintf(path, sizeof(path), "%s/model.json", test_tmpdir());
	return path;
}

static const char *schedule_file(const char *name, const char *text)
{
	static char path[512];
	test_write(test_tmpdir(), name, text);
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

/* The same seed: the same faults whatever the policy. With software crashes only, far apart
 * (a scripted schedule), no policy can change which strike: interruptions equal. Drawn from a
 * seed, vigil's figures are the same alone or beside other policies. */
TEST(sim_policy_every_policy_gets_the_same_faults)
{
	const char *m = model_file();
	const char *sc = schedule_file("s.json", "[{\"at_s\": 3600, \"class\": \"bug\", \"node\": 0},"
						 " {\"at_s\": 20000, \"class\": \"bug\", \"node\": 7},"
						 " {\"at_s\": 9000, \"class\": \"bug\", \"node\": 3}]");
	const char *a[] = { "sim", "--failures", m, "--gpus", "64", "--days", "1", "--step-time",
			    "30", "--schedule", sc, "--policy", "vigil,torchrun,manual", "--json",
			    NULL };
	struct child c;
	sim(&c, a);
	struct json_value *v = test_parse_json(&c);
	CHECK(num(v, "faults") == 3);
	const char *pol[] = { "vigil", "torchrun", "manual" };
	for (int i = 0; i < 3; i++) {
		char p[64];
		snprintf(p, sizeof(p), "policies.%s.interruptions", pol[i]);
		CHECK_MSG(num(v, p) == 3, "%s: %g interruptions of 3 faults", pol[i], num(v, p));
		snprintf(p, sizeof(p), "policies.%s.interruptions_by_class.bug", pol[i]);
		CHECK(num(v, p) == 3);
	}
	json_free(v);
	child_release(&c);
	/* the text: the first policy's table, then one line a policy */
	a[12] = "torchrun,vigil,manual";
	a[13] = NULL;
	sim(&c, a);
	CHECK_CONTAINS(c.out.buf, "  policy          torchrun (a model of it, not vigil's supervisor");
	CHECK_CONTAINS(c.out.buf, "  policies (the same 3 faults)\n");
	CHECK_CONTAINS(c.out.buf, "\n    torchrun ");
	CHECK_CONTAINS(c.out.buf, "\n    vigil ");
	CHECK_CONTAINS(c.out.buf, "\n    manual ");
	child_release(&c);

	/* drawn: vigil alone and vigil after manual and torchrun give the same figures */
	const char *b[] = { "sim", "--failures", m, "--gpus", "64", "--days", "2", "--step-time",
			    "30", "--spares", "2", "--seed", "5", "--policy", "vigil", "--json", NULL };
	struct child c1, c2;
	sim(&c1, b);
	b[14] = "manual,torchrun";
	const char *b2[20];
	memcpy(b2, b, sizeof(b));
	b2[16] = "--policy";
	b2[17] = "vigil";
	b2[18] = NULL;
	sim(&c2, b2);
	struct json_value *v1 = test_parse_json(&c1), *v2 = test_parse_json(&c2);
	CHECK(num(v1, "faults") == num(v2, "faults") && num(v1, "faults") > 5);
	CHECK(num(v1, "ettr") == num(v2, "policies.vigil.ettr"));
	CHECK(num(v1, "interruptions") == num(v2, "policies.vigil.interruptions"));
	CHECK(num(v1, "lost_seconds_by_cause.detection") ==
	      num(v2, "policies.vigil.lost_seconds_by_cause.detection"));
	/* the first --policy is at the top */
	CHECK(num(v2, "ettr") == num(v2, "policies.manual.ettr"));
	json_free(v1);
	json_free(v2);
	child_release(&c1);
	child_release(&c2);
}

/* Hangs (NCCL's 600 s for torchrun) and GPUs that break and are never excluded (they fail
 * each attempt until repaired): torchrun's ETTR is below vigil's on the same faults. */
TEST(sim_policy_torchrun_loses_more_than_vigil)
{
	const char *m = model_file();
	const char *a[] = { "sim", "--failures", m, "--gpus", "64", "--days", "3", "--step-time",
			    "30", "--spares", "4", "--restart-cost", "60", "--seed", "3",
			    "--policy", "vigil,torchrun", "--json", NULL };
	struct child c;
	sim(&c, a);
	struct json_value *v = test_parse_json(&c);
	double ve = num(v, "policies.vigil.ettr"), te = num(v, "policies.torchrun.ettr");
	CHECK_MSG(te < ve - 0.05, "torchrun %.4f, vigil %.4f", te, ve);
	/* the broken GPU failed torchrun's attempts again: more interruptions of its class */
	CHECK(num(v, "policies.torchrun.interruptions_by_class.gpu") >
	      num(v, "policies.vigil.interruptions_by_class.gpu"));
	CHECK(num(v, "policies.torchrun.lost_seconds_by_cause.detection") >
	      num(v, "policies.vigil.lost_seconds_by_cause.detection"));
	json_free(v);
	child_release(&c);
}

/* One hang: torchrun sees it at NCCL's timeout (600 s, or --nccl-timeout), vigil at its hang
 * limit; one crash: manual's detection is the operator's response. */
TEST(sim_policy_hang_costs_torchrun_the_nccl_timeout)
{
	const char *m = model_file();
	const char *sc = schedule_file("h.json", "[{\"at_s\": 7200, \"class\": \"nccl\", \"node\": 2}]");
	const char *a[] = { "sim", "--failures", m, "--gpus", "64", "--days", "1", "--step-time",
			    "30", "--schedule", sc, "--policy", "torchrun,vigil,manual", "--json",
			    NULL, NULL, NULL };
	struct child c;
	sim(&c, a);
	struct json_value *v = test_parse_json(&c);
	double t = num(v, "policies.torchrun.lost_seconds_by_cause.detection");
	CHECK_MSG(fabs(t - 600) < 1, "torchrun's detection of a hang: %.1f s", t);
	double g = num(v, "policies.vigil.lost_seconds_by_cause.detection");
	CHECK_MSG(g > 0 && g < 300, "vigil's detection of a hang: %.1f s", g);
	/* manual: the NCCL timeout, then the operator's 30 minutes */
	double o = num(v, "policies.manual.lost_seconds_by_cause.detection");
	CHECK_MSG(fabs(o - 2400) < 1, "manual's detection of a hang: %.1f s", o);
	json_free(v);
	child_release(&c);

	a[14] = "--nccl-timeout";
	a[15] = "120";
	sim(&c, a);
	v = test_parse_json(&c);
	t = num(v, "policies.torchrun.lost_seconds_by_cause.detection");
	CHECK_MSG(fabs(t - 120) < 1, "--nccl-timeout 120: %.1f s", t);
	json_free(v);
	child_release(&c);
}

TEST(sim_policy_manual_detection_includes_the_operator)
{
	const char *m = model_file();
	const char *sc = schedule_file("c.json", "[{\"at_s\": 5000, \"class\": \"bug\", \"node\": 1}]");
	const char *a[] = { "sim", "--failures", m, "--gpus", "64", "--days", "1", "--step-time",
			    "30", "--schedule", sc, "--policy", "manual,torchrun", "--json",
			    NULL, NULL, NULL };
	struct child c;
	sim(&c, a);
	struct json_value *v = test_parse_json(&c);
	double o = num(v, "policies.manual.lost_seconds_by_cause.detection");
	CHECK_MSG(fabs(o - 1800) < 1, "manual, a crash, 30 min operator: %.1f s", o);
	double t = num(v, "policies.torchrun.lost_seconds_by_cause.detection");
	CHECK_MSG(t < 1, "torchrun, a crash: %.2f s", t);
	CHECK(num(v, "ettr") < num(v, "policies.torchrun.ettr"));
	json_free(v);
	child_release(&c);

	a[14] = "--operator-minutes";
	a[15] = "5";
	sim(&c, a);
	v = test_parse_json(&c);
	o = num(v, "policies.manual.lost_seconds_by_cause.detection");
	CHECK_MSG(fabs(o - 300) < 1, "--operator-minutes 5: %.1f s", o);
	json_free(v);
	child_release(&c);
}

/* Every policy under policies, with every figure; the lost seconds and the productive ones
 * add up to the wall time; the JSON is kept for the schema test. The same seed gives the same
 * bytes with several policies. */
TEST(sim_policy_json_per_policy_is_whole_and_deterministic)
{
	const char *m = model_file();
	const char *a[] = { "sim", "--failures", m, "--gpus", "64", "--days", "2", "--step-time",
			    "30", "--spares", "2", "--seed", "9", "--policy", "torchrun",
			    "--policy", "manual,vigil", "--json", NULL };
	struct child c1, c2;
	sim(&c1, a);
	sim(&c2, a);
	CHECK_STR(c1.out.buf, c2.out.buf);
	test_keep_json_as("sim", c1.out.buf, c1.out.len);
	struct json_value *v = test_parse_json(&c1);
	const struct json_value *pol = json_get(v, "policies");
	CHECK(pol && pol->type == JSON_OBJECT && pol->nr == 3);
	CHECK_STR(json_path(v, "params.policy")->string, "torchrun");
	const char *names[] = { "torchrun", "manual", "vigil" };
	for (size_t i = 0; pol && i < pol->nr && i < 3; i++) {
		CHECK_STR(pol->keys[i], names[i]);
		const struct json_value *p = pol->items[i];
		const char *fields[] = { "ettr", "goodput", "interruptions", "restarts", "steps",
					 "productive_s", "spares_used_max", "requeues" };
		for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
			CHECK_MSG(json_get(p, fields[f]), "%s: no %s", names[i], fields[f]);
		double sum = num(p, "productive_s");
		const struct json_value *lost = json_get(p, "lost_seconds_by_cause");
		CHECK(lost && lost->nr == 6);
		for (size_t k = 0; lost && k < lost->nr; k++)
			sum += lost->items[k]->number;
		CHECK_MSG(fabs(sum - 172800) < 2, "%s: productive + lost = %.1f of 172800",
			  names[i], sum);
	}
	json_free(v);
	child_release(&c1);
	child_release(&c2);
}

/* Validation 1: bench/run-faults.sh's 600 s schedule replayed with the testbed's step time,
 * checkpoints and measured latencies (tests/data/sim/, bench/sim-run-faults.sh): vigil's ETTR
 * within 0.02 of the 12-04 runs' (0.889, 0.913: the trainer's start ~5.5 s), torchrun's within
 * 0.02 of 12-01's 0.685 (its start ~3 s), by the testbed's rule (time on kept steps, slow
 * ones too). torchrun's schedule is what the testbed did to it: sick and lost only killed the
 * rank (20 s after the Xid for sick). */
TEST(sim_policy_replay_of_run_faults_is_near_the_testbed)
{
	const char *pol[] = { "vigil", "torchrun" }, *restart[] = { "5.5", "3" };
	const double measured[] = { 0.901, 0.685 };
	for (int i = 0; i < 2; i++) {
		struct strbuf mp = STRBUF_INIT, sc = STRBUF_INIT;
		test_src_path(&mp, "tests/data/sim/run-faults-model.json");
		test_src_path(&sc, "tests/data/sim/run-faults-600-");
		strbuf_addf(&sc, "%s.json", pol[i]);
		const char *a[] = { "sim", "--failures", mp.buf, "--schedule", sc.buf, "--policy",
				    pol[i], "--gpus", "4", "--gpus-per-node", "1", "--spares", "4",
				    "--days", "0.0069444444", "--step-time", "0.212",
				    "--checkpoint-every", "2.12", "--checkpoint-cost", "0",
				    "--restart-cost", restart[i], "--check-interval", "2",
				    "--hang-floor", "4", "--monitor-interval", "5", "--nccl-timeout",
				    "1800", "--latencies",
				    "check=0.2,stop=0.2,stacks=3,restart-delay=0.5,smoke=1", "--json",
				    NULL };
		struct child c;
		sim(&c, a);
		struct json_value *v = test_parse_json(&c);
		double rule = (num(v, "productive_s") + num(v, "lost_seconds_by_cause.slowdown")) /
			      num(v, "wall_s");
		CHECK_MSG(fabs(rule - measured[i]) <= 0.02, "%s: %.3f simulated, %.3f measured",
			  pol[i], rule, measured[i]);
		CHECK(num(v, "interruptions") == 5);
		json_free(v);
		child_release(&c);
		strbuf_release(&mp);
		strbuf_release(&sc);
	}
}

TEST(sim_policy_bad_options_and_schedules_exit_2)
{
	const char *m = model_file();
	struct {
		const char *file, *text, *says;
	} bad[] = {
		{ "b1.json", "{\"at_s\": 1}", "a schedule is a JSON list" },
		{ "b2.json", "[{\"at_s\": 1, \"class\": \"cosmic\", \"node\": 0}]",
		  "schedule entry 0: class 'cosmic' is not in the model" },
		{ "b3.json", "[{\"at_s\": 1, \"class\": \"bug\", \"node\": 8}]",
		  "schedule entry 0: 'node' wants the job's node slot, a whole number from 0 to 7" },
		{ "b4.json", "[{\"at_s\": -1, \"class\": \"bug\", \"node\": 0}]",
		  "schedule entry 0: 'at_s' wants a number of seconds from 0" },
		{ "b5.json", "[{\"at_s\": 1, \"class\": \"bug\", \"node\": 0, \"why\": 1}]",
		  "schedule entry 0: unknown key 'why'" },
		{ "b6.json", "[{\"at_s\": 1, \"class\": \"bug\", \"node\": 0.5}]", "'node' wants" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *sc = schedule_file(bad[i].file, bad[i].text);
		const char *a[] = { "sim", "--failures", m, "--gpus", "64", "--schedule", sc,
				    "--policy", "torchrun", NULL };
		struct child c;
		test_run_vigil(&c, a, sim_env);
		CHECK_MSG(c.exited && c.exit_code == 2, "%s: exit %d", bad[i].file, c.exit_code);
		CHECK_CONTAINS(c.err.buf, bad[i].says);
		child_release(&c);
	}
	const char *opts[][3] = {
		{ "--policy", "slurm", NULL }, { "--policy", "vigil,", NULL },
		{ "--nccl-timeout", "0", NULL }, { "--operator-minutes", "x", NULL },
	};
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		const char *a[] = { "sim", opts[i][0], opts[i][1], NULL };
		struct child c;
		test_run_vigil(&c, a, sim_env);
		CHECK_MSG(c.exited && c.exit_code == 2, "%s %s: exit %d", opts[i][0], opts[i][1],
			  c.exit_code);
		CHECK_CONTAINS(c.err.buf, opts[i][0]);
		child_release(&c);
	}
}

/* Llama 3's rate, scaled down: the default model's faults on 4 x 4,096 GPUs over 54 days (4
 * seeds) add up to within 10 % of the 419 unexpected interruptions of 16,384 GPUs; one seed
 * at 1,024 GPUs has about a sixteenth. The policies' loops are cheap: manual runs them. */
TEST(sim_policy_llama3_rate_scales_with_the_gpus)
{
	double sum = 0;
	const char *seeds[] = { "1", "2", "3", "4" };
	for (int i = 0; i < 4; i++) {
		const char *a[] = { "sim", "--gpus", "4096", "--days", "54", "--policy", "manual",
				    "--seed", seeds[i], "--json", NULL };
		struct child c;
		sim(&c, a);
		struct json_value *v = test_parse_json(&c);
		sum += num(v, "faults");
		json_free(v);
		child_release(&c);
	}
	CHECK_MSG(fabs(sum - 419) < 41.9, "4 x 4,096 GPUs x 54 days: %.0f faults (419 expected)",
		  sum);
	const char *a[] = { "sim", "--gpus", "1024", "--days", "54", "--policy", "torchrun",
			    "--json", NULL };
	struct child c;
	sim(&c, a);
	struct json_value *v = test_parse_json(&c);
	double f = num(v, "faults");
	CHECK_MSG(f > 10 && f < 45, "1,024 GPUs x 54 days: %.0f faults (26.2 expected)", f);
	json_free(v);
	child_release(&c);
}
