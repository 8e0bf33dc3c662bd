/* test_report.c: the verdict and the writers of src/core/report.c, as a user reads them. */
#include "../harness.h"
#include "../../src/core/report.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"

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
	/* an unknown that said no action gets one: it is the page that needs one most */
	CHECK_STR(action_name(rep.results[0].findings[1].action), "INVESTIGATE");
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

/*
 * Issue 17: bidi controls (U+202E shows a name reversed) and other invisible format characters in
 * a host or device name reach the terminal spelled "<U+202E>", like a control byte's "\x1b". The
 * fixture's GPU name and the reason's 80-byte cap: an escape is whole or absent, never cut.
 */
TEST(bidi_controls_in_host_and_gpu_names_are_spelled_out_in_check_table)
{
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, snap = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", test_tmpdir());
	strbuf_addf(&state, "%s/state", test_tmpdir());
	struct strbuf src = STRBUF_INIT;
	strbuf_addf(&src, "%s/tests/scenarios/gpu-count-7-of-8/root", getenv("VIGIL_SRCDIR"));
	struct strbuf err = STRBUF_INIT, path = STRBUF_INIT, file = STRBUF_INIT;
	strbuf_addf(&path, "%s/nvml.snapshot", src.buf);
	CHECK_INT(read_file_bounded(path.buf, &file, 1 << 20, &err), 0);
	const char *text = file.buf;
	/* every GPU named with an override, an isolate, a zero-width space and a line separator */
	for (const char *p = text; *p;) {
		const char *hit = strstr(p, "name NVIDIA H200\n");
		if (!hit) {
			strbuf_addstr(&snap, p);
			break;
		}
		strbuf_add(&snap, p, (size_t)(hit - p));
		strbuf_addstr(&snap, "name NVIDIA \xe2\x80\xae" "002H\xe2\x81\xa6x\xe2\x80\x8b"
				     "y\xe2\x80\xa8z\n");
		p = hit + strlen("name NVIDIA H200\n");
	}
	test_write(root.buf, "nvml.snapshot", snap.buf);
	test_write(root.buf, "etc/hostname", "node\xe2\x80\xae" "10-ten\n");
	test_mkdir(root.buf, "sys");
	test_write(root.buf, "proc/swaps", "Filename Type Size Used Priority\n");
	const char *args[] = { "check", "--root", root.buf, "--state-dir", state.buf, "--only",
			       "gpu", "-v", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_NOT_CONTAINS(c.out.buf, "\xe2\x80\xae");
	CHECK_NOT_CONTAINS(c.out.buf, "\xe2\x81\xa6");
	CHECK_NOT_CONTAINS(c.out.buf, "\xe2\x80\x8b");
	CHECK_NOT_CONTAINS(c.out.buf, "\xe2\x80\xa8");
	CHECK_NOT_CONTAINS(c.err.buf, "\xe2\x80\xae");
	CHECK_CONTAINS(c.err.buf, "<U+202E>");
	CHECK_CONTAINS(c.out.buf, "<U+202E>");
	child_release(&c);
	/* --reason: one line, the escape whole */
	const char *rargs[] = { "check", "--root", root.buf, "--state-dir", state.buf, "--only",
				"gpu", "--reason", NULL };
	test_run_vigil(&c, rargs, NULL);
	CHECK_NOT_CONTAINS(c.out.buf, "\xe2\x80\xae");
	const char *u = strstr(c.out.buf, "<U+");
	if (u)
		CHECK(strlen(u) >= 8 && u[7] == '>');
	child_release(&c);
	strbuf_release(&file);
	strbuf_release(&err);
	strbuf_release(&path);
	strbuf_release(&src);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&snap);
}

TEST(excerpt_never_cuts_an_escape_in_half)
{
	for (size_t max = 0; max < 24; max++) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_add_excerpt(&sb, "ab\xe2\x80\xae" "cd\x1b" "ef\xe2\x80\x8f", max);
		const char *lt = strrchr(sb.buf, '<'), *bs = strrchr(sb.buf, '\\');
		if (lt)
			CHECK_MSG(strchr(lt, '>'), "max %zu: %s", max, sb.buf);
		if (bs)
			CHECK_MSG(strlen(bs) >= 4, "max %zu: %s", max, sb.buf);
		CHECK_MSG(str_is_clean(sb.buf), "max %zu", max);
		strbuf_release(&sb);
	}
	CHECK(!str_is_clean("a\xe2\x80\xae"));
	CHECK(!str_is_clean("\xef\xbb\xbf" "x"));
	CHECK(str_is_clean("caf\xc3\xa9 e\xcc\x81"));
	/* an overlong form of U+202E is invalid UTF-8: its bytes are spelled one by one */
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_clean(&sb, "\xf0\x82\x80\xae|\xd8\x9c|\xef\xbb\xbf|\xe2\x80\xa9");
	CHECK_STR(sb.buf, "\\xf0\\x82\\x80\\xae|<U+061C>|<U+FEFF>|<U+2029>");
	strbuf_reset(&sb);
	/* tag characters (invisible ASCII), word joiner, soft hyphen; a combining mark passes */
	strbuf_add_clean(&sb, "a\xf3\xa0\x80\x81\xe2\x81\xa0\xc2\xad" "e\xcc\x81");
	CHECK_STR(sb.buf, "a<U+E0001><U+2060><U+00AD>e\xcc\x81");
	strbuf_reset(&sb);
	for (size_t max = 0; max < 12; max++) {
		strbuf_reset(&sb);
		strbuf_add_excerpt(&sb, "\xf3\xa0\x80\x81\xf3\xa0\x80\x81", max);
		CHECK_MSG(!strstr(sb.buf, "<U") || strchr(sb.buf, '>'), "%zu: %s", max, sb.buf);
	}
	/* the JSON writer: a tag character as a surrogate pair, parsed back the same */
	struct strbuf js = STRBUF_INIT;
	json_quote(&js, "\xf3\xa0\x80\x81", 4);
	CHECK_STR(js.buf, "\"\\udb40\\udc01\"");
	struct json_value *v = json_parse(js.buf, js.len, NULL);
	CHECK(v && !strcmp(v->string, "\xf3\xa0\x80\x81"));
	json_free(v);
	strbuf_release(&js);
	strbuf_release(&sb);
}

/* Issue 17 attack: a device label with an escape, a bidi override and invalid UTF-8 went raw into
 * the --prom file and /metrics (one invalid byte fails the whole scrape). */
TEST(prom_label_values_are_clean_utf8_with_escapes_spelled)
{
	struct report r;
	report_init(&r, "n1", 1000);
	struct check_result *c = report_add(&r, "storage");
	result_add(c, STATUS_FAIL, ACTION_FREE_DISK, "full", "/mnt/\x1b[2J\xe2\x80\xae" "x\xff\"q",
		   "full");
	result_finish(c);
	report_finish(&r);
	struct strbuf out = STRBUF_INIT;
	report_prom(&r, &out);
	CHECK(!memchr(out.buf, '\x1b', out.len));
	CHECK_NOT_CONTAINS(out.buf, "\xe2\x80\xae");
	CHECK_NOT_CONTAINS(out.buf, "\xff");
	CHECK_CONTAINS(out.buf, "device=\"/mnt/\\\\x1b[2J<U+202E>x\\\\xff\\\"q\"");
	strbuf_release(&out);
	report_release(&r);
}

/* A check that could not run or finish says what to do, in the table and in JSON (issue 18):
 * a gpu check that NVML failed or that hung is a GPU reset, the rest is to investigate. */
TEST(report_unknown_check_carries_an_action)
{
	struct report rep;
	struct strbuf t = STRBUF_INIT, js = STRBUF_INIT;
	report_init(&rep, "h", 0);
	struct check_result *g = report_add(&rep, "gpu");
	g->status = STATUS_UNKNOWN;
	g->error = xstrdup("timed out after 15.0 s (a read may be stuck in the kernel)");
	struct check_result *s = report_add(&rep, "storage");
	s->status = STATUS_UNKNOWN;
	s->error = xstrdup("timed out after 15.0 s; it was in uninterruptible sleep");
	report_finish(&rep);
	CHECK_STR(action_name(rep.results[0].action), "RESET_GPU");
	CHECK_STR(action_name(rep.results[1].action), "INVESTIGATE");
	report_table(&rep, &t, false, false);
	CHECK_CONTAINS(t.buf, "stuck in the kernel)  -> RESET_GPU\n");
	CHECK_CONTAINS(t.buf, "uninterruptible sleep  -> INVESTIGATE\n");
	report_json(&rep, &js, false);
	CHECK_CONTAINS(js.buf, "\"error\":\"timed out after 15.0 s (a read may be stuck in the "
			       "kernel)\",\"action\":\"RESET_GPU\"");
	/* and back: a cached report keeps what the check said to do */
	struct strbuf err = STRBUF_INIT;
	struct json_value *v = json_parse(js.buf, js.len, &err);
	CHECK(v != NULL);
	const struct json_value *checks = json_get(v, "checks");
	struct check_result back;
	check_result_init(&back, "gpu");
	CHECK(result_from_json(checks->items[0], &back, &err) == 0);
	CHECK_STR(action_name(back.action), "RESET_GPU");
	check_result_release(&back);
	json_free(v);
	strbuf_release(&err);
	strbuf_release(&t);
	strbuf_release(&js);
	report_release(&rep);
}
