/* test_report.c: the verdict and the writers of src/core/report.c, as a user reads them. */
#include "../harness.h"
#include "../../src/core/report.h"

/* A result with no findings examined nothing: unknown by name, never ok. */
TEST(report_result_without_findings_is_unknown)
{
	struct report rep;
	report_init(&rep, "h", 0);
	report_add(&rep, "kernel")->status = STATUS_OK;
	result_add(report_add(&rep, "pcie"), STATUS_OK, ACTION_NONE, "summary", "", "fine");
	rep.results[1].status = STATUS_OK;
	report_finish(&rep);
	CHECK_INT(rep.verdict, VERDICT_UNKNOWN);
	CHECK_INT(rep.results[0].status, STATUS_UNKNOWN);
	CHECK_STR(rep.reason, "unknown: kernel: the check reported nothing");
	report_release(&rep);
}

/* Text from outside never reaches a terminal raw; the verdict line does not repeat itself. */
TEST(report_table_neutralises_escapes_and_says_verdict_once)
{
	struct report rep;
	struct strbuf out = STRBUF_INIT;
	report_init(&rep, "evil\x1b]0;owned\x07host", 0);
	struct check_result *r = report_add(&rep, "system");
	result_add(r, STATUS_OK, ACTION_NONE, "summary", "", "fine");
	result_add(r, STATUS_WARN, ACTION_NONE, "x", "", "device says \x1b[2J\x1b[31mhi");
	result_add(r, STATUS_WARN, ACTION_NONE, "y", "", "second");
	result_finish(r);
	report_finish(&rep);
	report_table(&rep, &out, false, true);
	CHECK(!strchr(out.buf, '\x1b'));
	CHECK(!strchr(out.buf, '\x07'));
	CHECK_CONTAINS(out.buf, "evil\\x1b]0;owned\\x07host");
	CHECK_CONTAINS(out.buf, "device says \\x1b[2J");
	CHECK_CONTAINS(out.buf, "verdict: healthy  (2 warnings)\n");
	CHECK(!strstr(out.buf, "healthy (healthy"));
	report_release(&rep);
	strbuf_release(&out);
}

/* A healthy verdict says plainly what was not examined (a host with no GPU, no IB). */
TEST(report_healthy_reason_names_what_was_skipped)
{
	struct report rep;
	report_init(&rep, "h", 0);
	struct check_result *r = report_add(&rep, "gpu");
	result_add(r, STATUS_SKIPPED, ACTION_NONE, "no_gpu", "", "no NVIDIA GPU");
	result_finish(r);
	r = report_add(&rep, "kernel");
	result_add(r, STATUS_WARN, ACTION_NONE, "oom", "", "an OOM kill");
	result_finish(r);
	r = report_add(&rep, "infiniband");
	result_add(r, STATUS_SKIPPED, ACTION_NONE, "none", "", "no InfiniBand devices");
	result_finish(r);
	report_finish(&rep);
	CHECK_INT(rep.verdict, VERDICT_HEALTHY);
	CHECK_STR(rep.reason, "healthy (1 warning; skipped: gpu, infiniband)");
	report_release(&rep);
}

TEST(report_color_modes)
{
	CHECK_INT(color_mode_parse("always"), COLOR_ALWAYS);
	CHECK_INT(color_mode_parse("never"), COLOR_NEVER);
	CHECK_INT(color_mode_parse("auto"), COLOR_AUTO);
	CHECK_INT(color_mode_parse("sometimes"), -2);
	CHECK(color_enabled(COLOR_ALWAYS, -1));
	CHECK(!color_enabled(COLOR_NEVER, 1));
	CHECK(!color_enabled(COLOR_AUTO, -1)); /* not a terminal */
}

/*
 * A result is at least as bad as its worst finding, however it arrived: a cached result whose
 * check says "ok" over an unknown finding is unknown; a result with no checks at all examined
 * nothing. Both were healthy (exit 0) through 'vigil check --cached'.
 */
TEST(report_check_status_follows_its_findings_and_no_check_is_unknown)
{
	struct report rep;
	report_init(&rep, "h", 0);
	struct check_result *r = report_add(&rep, "gpu");
	result_add(r, STATUS_OK, ACTION_NONE, "summary", "", "8 GPUs healthy");
	result_add(r, STATUS_UNKNOWN, ACTION_NONE, "nvml", "GPU 3", "cannot read GPU 3");
	r->status = STATUS_OK;
	report_finish(&rep);
	CHECK_INT(rep.results[0].status, STATUS_UNKNOWN);
	CHECK_INT(rep.verdict, VERDICT_UNKNOWN);
	CHECK_STR(rep.reason, "unknown: gpu: cannot read GPU 3");
	report_release(&rep);

	report_init(&rep, "h", 0);
	report_finish(&rep);
	CHECK_INT(rep.verdict, VERDICT_UNKNOWN);
	CHECK_STR(rep.reason, "unknown: no check ran");
	report_release(&rep);

	/* what a user of 'vigil check --cached' sees */
	const char *dir = test_tmpdir();
	struct strbuf state = STRBUF_INIT, js = STRBUF_INIT;
	strbuf_addf(&state, "%s/state", dir);
	static const char *const fmt[] = {
		"{\"host\":\"h\",\"timestamp\":%.0f,\"verdict\":\"healthy\",\"exit_code\":0,"
		"\"reason\":\"healthy\",\"checks\":[{\"name\":\"gpu\",\"status\":\"ok\",\"findings\":"
		"[{\"status\":\"unknown\",\"severity\":\"info\",\"action\":\"NONE\",\"code\":\"x\","
		"\"device\":\"GPU 3\",\"message\":\"cannot read GPU 3\",\"details\":{}}]}]}",
		"{\"host\":\"h\",\"timestamp\":%.0f,\"verdict\":\"healthy\",\"exit_code\":0,"
		"\"reason\":\"healthy\",\"checks\":[]}",
	};
	static const char *const want[] = { "unknown: gpu: cannot read GPU 3\n",
					     "unknown: no check ran\n" };
	for (size_t i = 0; i < ARRAY_SIZE(fmt); i++) {
		strbuf_reset(&js);
		strbuf_addf(&js, fmt[i], wall_seconds());
		test_write(state.buf, "agent-report.json", js.buf);
		struct child c;
		const char *args[] = { "check", "--cached", "--state-dir", state.buf, "--reason",
				       NULL };
		test_run_vigil(&c, args, NULL);
		CHECK_INT(c.exit_code, 3);
		CHECK_STR(c.out.buf, want[i]);
		child_release(&c);
	}
	strbuf_release(&state);
	strbuf_release(&js);
}
