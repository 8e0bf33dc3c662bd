/*
 * test_diagnose_tokens.c: tokens per second in 'vigil diagnose steps' (median_tokens_per_s),
 * through the binary: vigil run's own journal with the tokens its step records keep (per step
 * and as a running total), a CSV with a tokens column and a warm-up that must not count, a real
 * trainer's log (Megatron-DeepSpeed's running `consumed tokens:`, tests/data/steps/gen.py), and
 * rows without tokens: null, never 0. And the journal's step record itself.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/logs/steps.h"
#include "../../src/supervise/journal.h"

#include <math.h>

static uint64_t rng = 88172645463325252ull;
static double jitter(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((double)(rng >> 11) / 9007199254740992.0 - 0.5) * 0.02; /* +-1 % */
}

/* vigil diagnose steps FILE --json on the text written under the test's directory */
static struct json_value *steps_json(const char *name, const struct strbuf *text,
				     struct child *c)
{
	test_write(test_tmpdir(), name, text->buf);
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/%s", test_tmpdir(), name);
	const char *args[] = { "diagnose", "steps", p.buf, "--json", NULL };
	test_run_vigil(c, args, NULL);
	strbuf_release(&p);
	return test_parse_json(c);
}

static const struct json_value *member(const struct json_value *v, const char *key)
{
	const struct json_value *m = json_get(v, key);
	CHECK_MSG(m != NULL, "no %s", key);
	return m;
}

/* A journal as vigil run writes it (journal_format): 0.5 s steps, 4096 tokens a step, either
 * per step or as the running total; a restart in the middle starts the total again. */
static void gen_journal(bool running_total, struct strbuf *out)
{
	double t = 1.7e9;
	uint64_t total = 0;
	struct journal_record r = { .kind = JOURNAL_RUN_STARTED, .t = t };
	journal_format(&r, out);
	strbuf_addch(out, '\n');
	for (unsigned a = 1; a <= 2; a++) {
		r = (struct journal_record){ .kind = JOURNAL_ATTEMPT_STARTED, .attempt = a, .t = t };
		journal_format(&r, out);
		strbuf_addch(out, '\n');
		total = 0;
		for (uint64_t s = a == 1 ? 1 : 41; s <= (a == 1 ? 60 : 120); s++) {
			t += 0.5 * (1 + jitter());
			total += 4096;
			r = (struct journal_record){ .kind = JOURNAL_STEP, .attempt = a, .t = t,
						     .has_step = true, .step = s, .has_loss = true,
						     .loss = 2.5, .has_tokens = true,
						     .tokens = running_total ? total : 4096 };
			journal_format(&r, out);
			strbuf_addch(out, '\n');
		}
		t += 30;
	}
}

TEST(diag_tokens_per_s_from_vigil_runs_journal)
{
	struct strbuf j = STRBUF_INIT;
	struct child c;
	for (int total = 0; total <= 1; total++) {
		strbuf_reset(&j);
		gen_journal(total, &j);
		struct json_value *v = steps_json(total ? "total.jsonl" : "per-step.jsonl", &j, &c);
		CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
		CHECK_STR(json_get_string(v, "format"), "journal");
		const struct json_value *m = member(v, "median_tokens_per_s");
		/* 4096 tokens in 0.5 s: 8192 a second, within the 1 % jitter of the stamps */
		CHECK_MSG(m && m->type == JSON_NUMBER && fabs(m->number - 8192) < 8192 * 0.03,
			  "%s: median_tokens_per_s %g\n%s", total ? "running total" : "per step",
			  m && m->type == JSON_NUMBER ? m->number : -1, c.out.buf);
		json_free(v);
		child_release(&c);
	}
	/* the text says it beside the step time */
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/total.jsonl", test_tmpdir());
	const char *args[] = { "diagnose", "steps", p.buf, NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_CONTAINS(c.out.buf, "tokens/s");
	CHECK_CONTAINS(c.out.buf, "median 8");
	child_release(&c);
	/* and the page under its title */
	struct strbuf page = STRBUF_INIT, html = STRBUF_INIT;
	strbuf_addf(&page, "%s/steps.html", test_tmpdir());
	const char *h[] = { "diagnose", "steps", p.buf, "--html", page.buf, NULL };
	test_run_vigil(&c, h, NULL);
	CHECK(read_file_bounded(page.buf, &html, 1 << 24, NULL) == 0);
	CHECK_CONTAINS(html.buf, "tokens/s.</p>");
	CHECK_CONTAINS(html.buf, "<span id=\"tokens-per-s\">8");
	child_release(&c);
	strbuf_release(&page);
	strbuf_release(&html);
	strbuf_release(&p);
	strbuf_release(&j);
}

/* A CSV with each step's own tokens (packed sequences: the count varies, the time with it):
 * each step's tokens over its own time, 8000 a second; the warm-up's slow steps are left out
 * as from the median step time. */
TEST(diag_tokens_per_s_from_a_csv_with_varying_tokens)
{
	struct strbuf csv = STRBUF_INIT;
	struct child c;
	strbuf_addstr(&csv, "step,step_time,tokens\n");
	for (int i = 1; i <= 100; i++) {
		int tok = 2000 + (i * 1237) % 4000; /* up and down: not a running total */
		double stt = i <= 3 ? 5.0 : tok / 8000.0 * (1 + jitter() * 0.1);
		strbuf_addf(&csv, "%d,%.5f,%d\n", i, stt, tok);
	}
	struct json_value *v = steps_json("tok.csv", &csv, &c);
	const struct json_value *m = member(v, "median_tokens_per_s");
	CHECK_MSG(m && m->type == JSON_NUMBER && fabs(m->number - 8000) < 40,
		  "median_tokens_per_s %g\n%s", m && m->type == JSON_NUMBER ? m->number : -1,
		  c.out.buf);
	json_free(v);
	child_release(&c);
	strbuf_release(&csv);
}

/* Megatron-DeepSpeed's training_log, its real line shape (tests/data/realworld/qtok.md): the
 * running `consumed tokens:` of 128 x 2048 a step over `elapsed time per iteration (ms)` of
 * about 2000: 131072 tokens/s. */
TEST(diag_tokens_per_s_from_megatron_deepspeed_log)
{
	struct strbuf path = STRBUF_INIT;
	test_src_path(&path, "tests/data/steps/megatron-deepspeed.log");
	struct child c;
	const char *args[] = { "diagnose", "steps", path.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "format"), "log");
	const struct json_value *m = member(v, "median_tokens_per_s");
	CHECK_MSG(m && m->type == JSON_NUMBER && fabs(m->number - 131072) < 131072 * 0.01,
		  "median_tokens_per_s %g", m && m->type == JSON_NUMBER ? m->number : -1);
	json_free(v);
	child_release(&c);
	strbuf_release(&path);
}

/* No tokens: null in JSON (never 0), nothing in the text; a log without tokens likewise. */
TEST(diag_tokens_per_s_is_null_without_tokens)
{
	struct strbuf csv = STRBUF_INIT, path = STRBUF_INIT;
	struct child c;
	strbuf_addstr(&csv, "step,step_time\n");
	for (int i = 1; i <= 60; i++)
		strbuf_addf(&csv, "%d,%.4f\n", i, 0.5 * (1 + jitter()));
	struct json_value *v = steps_json("notok.csv", &csv, &c);
	const struct json_value *m = member(v, "median_tokens_per_s");
	CHECK_MSG(m && m->type == JSON_NULL, "median_tokens_per_s is not null:\n%s", c.out.buf);
	json_free(v);
	child_release(&c);
	test_src_path(&path, "tests/data/steps/megatron.log");
	const char *args[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_NOT_CONTAINS(c.out.buf, "tokens/s");
	child_release(&c);
	strbuf_release(&csv);
	strbuf_release(&path);
}

/* The journal keeps the trainer's tokens with the step, and only when it said them. */
TEST(journal_step_record_keeps_tokens)
{
	struct strbuf out = STRBUF_INIT;
	journal_format(&(struct journal_record){ .kind = JOURNAL_STEP, .attempt = 1, .t = 5,
						 .has_step = true, .step = 7, .has_loss = true,
						 .loss = 2.5, .has_tokens = true,
						 .tokens = 4194304 },
		       &out);
	CHECK_STR(out.buf, "{\"t\":5.000,\"kind\":\"step\",\"attempt\":1,\"step\":7,\"loss\":2.5,"
			   "\"tokens\":4194304}");
	strbuf_reset(&out);
	journal_format(&(struct journal_record){ .kind = JOURNAL_STEP, .attempt = 1, .t = 5,
						 .has_step = true, .step = 7 },
		       &out);
	CHECK_NOT_CONTAINS(out.buf, "tokens");
	strbuf_release(&out);
}

/* Counts that are not a step's tokens are not read as one (tests/data/realworld/qtok.md):
 * nanotron's `consumed_tokens: 634K` (rounded to three digits), its `tokens_per_sec:` and
 * torchtitan's `tps:` (rates), MaxText's `Tokens/s/device:` (a rate). Megatron-DeepSpeed's
 * `consumed tokens:` and a plain `tokens=` are. */
TEST(diag_tokens_only_counts_are_tokens)
{
	static const struct {
		const char *line;
		bool tokens;
		uint64_t n;
	} cases[] = {
		{ "01/17/2024 14:02:16 [INFO|DP=0|PP=0|TP=0|node-7]: iteration: 991 / 1000 | "
		  "consumed_tokens: 634K | elapsed_time_per_iteration_ms: 272 | tokens_per_sec: 2.35K | "
		  "tokens_per_sec_per_gpu: 294 | global_batch_size: 20 | lm_loss: 9.63",
		  false, 0 },
		{ "[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384  "
		  "memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%",
		  false, 0 },
		{ "completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device: "
		  "8672.758, total_weights: 196608, loss: 10.374",
		  false, 0 },
		{ " iteration       12/   50000 | consumed samples:         1536 | consumed tokens:"
		  "      3145728 | elapsed time per iteration (ms): 2001.7 |",
		  true, 3145728 },
		{ "step=12 loss=2.5 tokens=4096", true, 4096 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct step_reading r;
		memset(&r, 0, sizeof(r));
		CHECK_MSG(steps_match_default(cases[i].line, strlen(cases[i].line), &r),
			  "no step in: %s", cases[i].line);
		CHECK_MSG(r.has_tokens == cases[i].tokens && (!r.has_tokens || r.tokens == cases[i].n),
			  "tokens %d %llu in: %s", r.has_tokens, (unsigned long long)r.tokens,
			  cases[i].line);
	}
	/* and a whole torchtitan log: tokens/s null, not its tps */
	struct strbuf path = STRBUF_INIT;
	test_src_path(&path, "tests/data/steps/torchtitan.log");
	struct child c;
	const char *args[] = { "diagnose", "steps", path.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *m = member(v, "median_tokens_per_s");
	CHECK_MSG(m && m->type == JSON_NULL, "torchtitan: median_tokens_per_s not null:\n%s",
		  c.out.buf);
	json_free(v);
	child_release(&c);
	strbuf_release(&path);
}
