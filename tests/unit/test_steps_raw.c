/*
 * test_steps_raw.c: 'vigil diagnose steps LOG' and 'vigil diagnose stragglers LOG' on the raw
 * output of a run vigil did not supervise (issue 18), through the binary: the logs of
 * tests/data/steps/ (gen.py: each trainer's real line shape, our values) give the right steps,
 * step times and patterns; several ranks' interleaved lines are one run; --step-pattern; a log
 * with no step says so. And the reader itself: rows by line, merged repeats, any chunking.
 */
#include "../harness.h"
#include "../../src/diagnose/rows.h"

#include <math.h>

/* vigil diagnose SUB tests/data/steps/NAME [more args]; c must be released */
static void diag(struct child *c, const char *sub, const char *name, const char *a1,
		 const char *a2)
{
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "tests/data/steps/%s", name);
	struct strbuf full = STRBUF_INIT;
	test_src_path(&full, path.buf);
	const char *args[] = { "diagnose", sub, full.buf, a1, a2, NULL };
	test_run_vigil(c, args, NULL);
	strbuf_release(&path);
	strbuf_release(&full);
}

static double num(const struct json_value *v, const char *path)
{
	double d = NAN;
	const struct json_value *n = json_path(v, path);
	if (n && n->type == JSON_NUMBER)
		d = n->number;
	return d;
}

TEST(diag_raw_megatron_checkpoint_drops)
{
	struct child c;
	diag(&c, "steps", "megatron.log", "--json", NULL);
	CHECK_MSG(c.exited && c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "format"), "log");
	CHECK_INT(num(v, "rows"), 300);
	CHECK_INT(num(v, "first_step"), 1);
	CHECK_INT(num(v, "last_step"), 300);
	CHECK_INT(num(v, "garbage.count"), 0);
	CHECK_STR(json_get_string(v, "metric"), "steps_per_s");
	/* the step time is Megatron's own (2.2 s), not its stamps' whole seconds */
	CHECK(fabs(num(v, "median_step_time") - 2.2) < 0.05);
	CHECK_STR(json_path(v, "patterns.0.pattern")->string, "periodic-drops");
	CHECK_INT(num(v, "patterns.0.period"), 50);
	json_free(v);
	child_release(&c);
	diag(&c, "steps", "megatron.log", NULL, NULL);
	CHECK_CONTAINS(c.out.buf, "300 steps (1 to 300) from 300 rows (log)");
	CHECK_CONTAINS(c.out.buf, "Read as a trainer's output: 306 step lines");
	child_release(&c);
}

TEST(diag_raw_torchtitan_four_ranks_interleaved)
{
	struct child c;
	diag(&c, "steps", "torchtitan.log", NULL, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s\n%s", c.exit_code, c.err.buf,
		  c.out.buf);
	/* a step reported by four ranks is one step; the MFU is torchtitan's */
	CHECK_CONTAINS(c.out.buf, "80 steps (10 to 800)");
	CHECK_CONTAINS(c.out.buf, "throughput: MFU");
	CHECK_CONTAINS(c.out.buf, "median step 1.4 s"); /* 14 s between lines 10 steps apart */
	CHECK_CONTAINS(c.out.buf, "rank 0's read; 243 of other ranks left out (the same steps)");
	CHECK_CONTAINS(c.out.buf, "healthy: no pattern found");
	child_release(&c);
}

TEST(diag_raw_nanogpt_mfu_and_eval_lines)
{
	struct child c;
	diag(&c, "steps", "nanogpt.log", "--json", NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "metric"), "mfu");
	/* iterations 0-4 print mfu -100%: no MFU, so the series starts at 5 */
	CHECK_INT(num(v, "first_step"), 5);
	CHECK_INT(num(v, "last_step"), 200);
	CHECK_INT(num(v, "rows"), 201); /* the eval lines of steps 0 and 100 merged */
	CHECK(fabs(num(v, "expected") - 0.167) < 0.003);
	CHECK(fabs(num(v, "median_step_time") - 0.894) < 0.01);
	json_free(v);
	child_release(&c);
}

TEST(diag_raw_hf_trainer_bar_step_down)
{
	struct child c;
	diag(&c, "steps", "hf-trainer.log", "--json", NULL);
	CHECK_MSG(c.exited && c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	/* the bar's count and rate; the eval bar (of 30) is no step */
	CHECK_INT(num(v, "rows"), 240);
	CHECK_INT(num(v, "last_step"), 240);
	CHECK_INT(num(v, "restarts"), 0);
	CHECK_STR(json_path(v, "patterns.0.pattern")->string, "step-down");
	double at = num(v, "patterns.0.changed_at");
	CHECK_MSG(at >= 115 && at <= 125, "changed at %g", at);
	json_free(v);
	child_release(&c);
	diag(&c, "steps", "hf-trainer.log", NULL, NULL);
	CHECK_CONTAINS(c.out.buf, "5 redraws of other progress bars (eval) left out");
	child_release(&c);
}

TEST(diag_raw_nemo_progress_lines_and_bar)
{
	struct child c;
	diag(&c, "steps", "nemo2.log", "--json", NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(num(v, "rows"), 150);
	CHECK(fabs(num(v, "median_step_time") - 0.4512) < 0.005);
	json_free(v);
	child_release(&c);
	/* NeMo 1's bar: one line of '\r' redraws, 41 s steps where 4.1 s was expected */
	diag(&c, "steps", "nemo1.log", "--expected-step-time", "4.1");
	CHECK_MSG(c.exited && c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "65 steps (794 to 858) from 65 rows (log)");
	CHECK_CONTAINS(c.out.buf, "flat-tenth from step 794");
	child_release(&c);
}

TEST(diag_raw_stragglers_from_srun_label_ranks)
{
	struct child c;
	diag(&c, "stragglers", "srun-label.log", "--json", NULL);
	CHECK_MSG(c.exited && c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(num(v, "ranks"), 8);
	CHECK_INT(num(v, "stragglers.0.rank"), 5);
	json_free(v);
	child_release(&c);
	/* the same file for steps: rank 0's lines are the run */
	diag(&c, "steps", "srun-label.log", NULL, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "120 steps (1 to 120) from 120 rows (log)");
	CHECK_CONTAINS(c.out.buf, "rank 0's read; 840 of other ranks left out");
	child_release(&c);
}

TEST(diag_raw_step_pattern_and_no_steps)
{
	struct child c;
	struct strbuf log = STRBUF_INIT;
	for (int i = 1; i <= 60; i++)
		strbuf_addf(&log, "2025-12-01T10:%02d:%02d.000Z it=%d took_ms=%d\n", i / 60, i % 60,
			    i, 1000);
	test_write(test_tmpdir(), "custom.log", log.buf);
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/custom.log", test_tmpdir());
	/* no default rule matches it: cannot tell, and why */
	const char *none[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, none, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "no step found in its 60 lines");
	CHECK_CONTAINS(c.err.buf, "--step-pattern REGEX");
	child_release(&c);
	/* with the pattern: steps from it, step times from the stamps (one a second) */
	const char *pat[] = { "diagnose", "steps", path.buf, "--step-pattern", "it=([0-9]+)",
			      "--json", NULL };
	test_run_vigil(&c, pat, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(num(v, "rows"), 60);
	CHECK(fabs(num(v, "median_step_time") - 1.0) < 0.01);
	json_free(v);
	child_release(&c);
	/* steps without a stamp or a step time: cannot tell, and why */
	strbuf_reset(&log);
	for (int i = 1; i <= 40; i++)
		strbuf_addf(&log, "step %d loss 2.5\n", i);
	test_write(test_tmpdir(), "bare.log", log.buf);
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/bare.log", test_tmpdir());
	const char *bare[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, bare, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "its 40 step lines carry no time stamp, step time or MFU");
	child_release(&c);
	/* a bad pattern is the user's mistake: usage, named */
	const char *bad[] = { "diagnose", "stragglers", path.buf, "--step-pattern", "it=(", NULL };
	test_run_vigil(&c, bad, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "invalid --step-pattern 'it=('");
	child_release(&c);
	strbuf_release(&log);
	strbuf_release(&path);
}

/* The reader: a log's rows by line number, merged repeats, whatever the chunking; the CSV and
 * JSON lines it read before are still rows. */
TEST(diag_raw_reader_lines_merges_and_chunks)
{
	static const char text[] =
		"\n"
		"booting\n"
		"step 0: train loss 10.98, val loss 10.99\n"
		"iter 0: loss 10.9, time 9371.81ms, mfu -100.00%\n"
		"iter 1: loss 10.1, time 894.10ms, mfu -100.00%\r\n"
		"[rank1]: iter 1: loss 10.1, time 899.00ms\n"
		"iter 2: loss 9.9, time 893.90ms, mfu 16.61%";
	struct diag_rows a, b;
	diag_rows_init(&a);
	diag_rows_feed(&a, text, sizeof(text) - 1);
	diag_rows_finish(&a);
	CHECK_INT(a.format, DIAG_FMT_LOG);
	CHECK_INT(a.nr, 3);
	CHECK_INT(a.lines, 7);
	CHECK_INT(a.v[0].step, 0);
	CHECK_INT(a.v[0].line, 3); /* the iteration line merged into the eval line's row */
	CHECK((a.v[0].has & DROW_STEP_TIME) && fabs(a.v[0].step_time - 9.37181) < 1e-9);
	CHECK(!(a.v[0].has & DROW_MFU));
	CHECK_INT(a.v[2].line, 7);
	CHECK((a.v[2].has & DROW_MFU) && fabs(a.v[2].mfu - 0.1661) < 1e-9);
	CHECK_INT(a.log_repeats, 1);
	CHECK_INT(a.log_other_ranks, 1);
	for (size_t chunk = 1; chunk < 24; chunk++) {
		diag_rows_init(&b);
		for (size_t off = 0; off < sizeof(text) - 1; off += chunk)
			diag_rows_feed(&b, text + off,
				       sizeof(text) - 1 - off < chunk ? sizeof(text) - 1 - off : chunk);
		diag_rows_finish(&b);
		CHECK_INT(b.nr, a.nr);
		CHECK_INT(b.lines, a.lines);
		CHECK(!memcmp(a.v, b.v, a.nr * sizeof(*a.v)));
		diag_rows_release(&b);
	}
	diag_rows_release(&a);
	/* rows stay rows: a CSV header, a JSON object, a known column alone */
	static const char *const rows[] = { "step,step_time\n1,0.5\n",
					    "{\"step\": 1, \"step_time\": 0.5}\n", "step\n1\n",
					    " Step , Time \n1,2\n" };
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		diag_rows_init(&a);
		diag_rows_feed(&a, rows[i], strlen(rows[i]));
		diag_rows_finish(&a);
		CHECK_MSG(a.format != DIAG_FMT_LOG && a.nr == 1, "'%s': format %d, %zu rows", rows[i],
			  (int)a.format, a.nr);
		diag_rows_release(&a);
	}
}
