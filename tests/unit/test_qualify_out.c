/*
 * test_qualify_out.c: what 'vigil qualify' writes besides the card (issue qtok): the train
 * stage's figures from diagnose steps' JSON (src/qualify/train.c: tokens_per_s null without
 * tokens, MFU as expected x level), and --compare-json through the binary with the sample cards
 * tests/data/qualify/card-a.json and card-b.json (file, stdout, refusals, the page's section).
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/qualify/train.h"

#include <unistd.h>

/* The train stage's figures from diagnose steps' JSON: tokens_per_s null when the journal's
 * rows had no tokens (never 0), a number when they had; MFU is expected x median_level (the
 * level is a share of the run's best, not an MFU); nothing from no output at all. */
TEST(qualify_train_figures_tokens_null_without_tokens)
{
	static const struct {
		const char *steps, *card, *reason;
	} cases[] = {
		{ "{\"metric\":\"steps_per_s\",\"median_step_time\":0.5,\"median_tokens_per_s\":null,"
		  "\"median_level\":0.98,\"expected\":2.0}",
		  "{\"step_time_s\":0.5,\"tokens_per_s\":null,\"mfu\":null,\"outcome\":\"done\"}",
		  "median step 0.5 s" },
		{ "{\"metric\":\"steps_per_s\",\"median_step_time\":0.5}",
		  "{\"step_time_s\":0.5,\"tokens_per_s\":null,\"mfu\":null,\"outcome\":\"done\"}",
		  "median step 0.5 s" },
		{ "{\"metric\":\"steps_per_s\",\"median_step_time\":0.5,\"median_tokens_per_s\":0}",
		  "{\"step_time_s\":0.5,\"tokens_per_s\":null,\"mfu\":null,\"outcome\":\"done\"}",
		  "median step 0.5 s" },
		{ "{\"metric\":\"steps_per_s\",\"median_step_time\":0.5,\"median_tokens_per_s\":\"8192\"}",
		  "{\"step_time_s\":0.5,\"tokens_per_s\":null,\"mfu\":null,\"outcome\":\"done\"}",
		  "median step 0.5 s" },
		{ "{\"metric\":\"mfu\",\"median_step_time\":0.5,\"median_tokens_per_s\":8192,"
		  "\"median_level\":0.9,\"expected\":0.45}",
		  "{\"step_time_s\":0.5,\"tokens_per_s\":8192,\"mfu\":0.4050,\"outcome\":\"done\"}",
		  "median step 0.5 s, 8192 tokens/s, MFU 40.5 %" },
		{ NULL, "{\"step_time_s\":null,\"tokens_per_s\":null,\"mfu\":null,\"outcome\":\"done\"}",
		  "no training step was seen in the stage's time" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct json_value *v =
			cases[i].steps ? json_parse(cases[i].steps, strlen(cases[i].steps), NULL)
				       : NULL;
		CHECK(!cases[i].steps || v);
		struct q_train t;
		struct strbuf card = STRBUF_INIT, reason = STRBUF_INIT;
		q_train_read(v, &t);
		q_train_json(&t, "done", &card);
		q_train_reason(&t, false, NULL, &reason);
		CHECK_STR(card.buf, cases[i].card);
		CHECK_STR(reason.buf, cases[i].reason);
		json_free(v);
		strbuf_release(&card);
		strbuf_release(&reason);
	}
	/* no report from vigil run, hosts excluded */
	struct q_train t = { .have_st = true, .step_time_s = 2 };
	struct strbuf card = STRBUF_INIT, reason = STRBUF_INIT;
	q_train_json(&t, NULL, &card);
	CHECK_CONTAINS(card.buf, "\"outcome\":\"no report from vigil run\"");
	q_train_reason(&t, true, NULL, &reason);
	CHECK_STR(reason.buf, "median step 2 s; hosts excluded");
	/* steps seen, their times not told apart: diagnose steps' reason, not "no step seen" */
	struct q_train none = { 0 };
	strbuf_reset(&reason);
	q_train_reason(&none, false, "the times are written to 0.001 s, 70% of a row's time",
		       &reason);
	CHECK_STR(reason.buf, "no step time: vigil diagnose steps: the times are written to 0.001 "
			      "s, 70% of a row's time");
	strbuf_release(&card);
	strbuf_release(&reason);
}

/* --compare-json FILE: the comparison's JSON (docs/schema/qualify-compare.json) beside the text
 * table, or alone on stdout with '-'; refused without --compare, or with --json - (one stdout);
 * --html with --compare: the page has the comparison. Through the binary, with --from. */
TEST(qualify_compare_json_file_stdout_and_page)
{
	char a[512], b[512], out[600], page[600];
	snprintf(a, sizeof(a), "%s/tests/data/qualify/card-a.json", test_srcdir());
	snprintf(b, sizeof(b), "%s/tests/data/qualify/card-b.json", test_srcdir());
	snprintf(out, sizeof(out), "%s/cmp.json", test_tmpdir());
	snprintf(page, sizeof(page), "%s/cmp.html", test_tmpdir());
	struct child c;
	const char *file[] = { "qualify", "--from", b, "--compare", a, "--compare-json", out,
			       "--html", page, NULL };
	test_run_vigil(&c, file, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "vigil qualify compare"); /* the table still on stdout */
	struct strbuf text = STRBUF_INIT;
	CHECK(read_file_bounded(out, &text, 1 << 22, NULL) == 0);
	test_keep_json_as("qualify-compare", text.buf, text.len);
	struct json_value *v = json_parse(text.buf, text.len, NULL);
	CHECK_MSG(v != NULL, "cmp.json is not JSON:\n%s", text.buf);
	CHECK_STR(json_get_string(v, "kind"), "qualify-compare");
	CHECK_STR(json_path(v, "old.cluster")->string, "provider-a");
	CHECK_STR(json_path(v, "new.cluster")->string, "provider-b");
	/* the better card per row: provider-a's bf16 median, provider-b's storage */
	const struct json_value *rows = json_get(v, "rows");
	size_t named = 0;
	for (size_t i = 0; rows && i < rows->nr; i++) {
		const struct json_value *r = rows->items[i];
		const char *f = json_get_string(r, "figure"), *s = json_get_string(r, "stat");
		if (!strcmp(f, "gemm_bf16_tflops") && !strcmp(s, "median"))
			named += !strcmp(json_get_string(r, "winner"), "old");
		if (!strcmp(f, "storage") && !strcmp(s, "write_mib_s"))
			named += !strcmp(json_get_string(r, "winner"), "new");
		if (!strcmp(f, "train") && !strcmp(s, "tokens_per_s"))
			named += !strcmp(json_get_string(r, "winner"), "unknown");
	}
	CHECK_INT(named, 3);
	json_free(v);
	strbuf_reset(&text);
	CHECK(read_file_bounded(page, &text, 1 << 22, NULL) == 0);
	CHECK_CONTAINS(text.buf, "<h2 id=\"compare-head\">Compared with provider-a, job 4242, "
				 "2026-12-04T10:00:00Z</h2>");
	CHECK_CONTAINS(text.buf, "<table id=\"compare\">");
	child_release(&c);

	/* '-': the JSON alone on stdout, no table, no verdict line */
	const char *dash[] = { "qualify", "--from", b, "--compare", a, "--compare-json", "-",
			       NULL };
	test_run_vigil(&c, dash, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "kind"), "qualify-compare");
	CHECK_NOT_CONTAINS(c.out.buf, "vigil qualify compare");
	json_free(v);
	child_release(&c);

	/* --json - with --compare: stdout is the card's JSON alone, the table is not mixed in */
	const char *card_out[] = { "qualify", "--from", b, "--compare", a, "--json", "-", NULL };
	test_run_vigil(&c, card_out, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "kind"), "qualify");
	CHECK_CONTAINS(c.err.buf, "--compare-json FILE writes the comparison");
	json_free(v);
	child_release(&c);

	/* refused: without --compare, and two things on stdout; nothing written */
	char none[600];
	snprintf(none, sizeof(none), "%s/none.json", test_tmpdir());
	const char *alone[] = { "qualify", "--from", b, "--compare-json", none, NULL };
	test_run_vigil(&c, alone, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--compare-json FILE needs --compare OLD.json");
	CHECK(access(none, F_OK) != 0);
	child_release(&c);
	const char *two[] = { "qualify", "--from", b, "--compare", a, "--json", "-",
			      "--compare-json", "-", NULL };
	test_run_vigil(&c, two, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "cannot both have stdout");
	child_release(&c);

	/* an old card that is not one: said, exit 3, the new card's page still written */
	test_write(test_tmpdir(), "check2.json", "{\"schema_version\":1,\"kind\":\"check\"}");
	char notcard[600];
	snprintf(notcard, sizeof(notcard), "%s/check2.json", test_tmpdir());
	unlink(page);
	const char *bad[] = { "qualify", "--from", b, "--compare", notcard, "--compare-json", out,
			      "--html", page, NULL };
	unlink(out);
	test_run_vigil(&c, bad, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "is not a qualify scorecard: its kind is \"check\"");
	CHECK(access(page, F_OK) == 0);
	CHECK(access(out, F_OK) != 0);
	child_release(&c);
	strbuf_release(&text);
}
