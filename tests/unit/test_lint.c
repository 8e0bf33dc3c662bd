/* test_lint.c: the house rules of tests/lint hold for the whole tree. */
#include "../harness.h"
#include "../../src/lib/fileio.h"

TEST(lint_house_rules)
{
	struct strbuf script = STRBUF_INIT;
	test_src_path(&script, "tests/lint");
	const char *argv[] = { "sh", script.buf, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 30000;
	c.merge_stderr = true;
	CHECK_INT(child_run(&c, NULL), 0);
	CHECK_MSG(c.exited && c.exit_code == 0, "tests/lint failed:\n%s", c.out.buf);
	child_release(&c);
	strbuf_release(&script);
}

/* Every unknown a check makes says what to do (issue 18): none is written as ACTION_NONE in the
 * checks (report_finish() fills INVESTIGATE for any left over, but a check should choose). */
TEST(lint_checks_choose_an_action_for_every_unknown)
{
	const char *const files[] = { "src/checks/gpu.c", "src/checks/kernel.c",
				      "src/checks/kernel_hw.c", "src/checks/edac.c",
				      "src/checks/pcie.c", "src/checks/infiniband.c",
				      "src/checks/storage.c", "src/checks/system.c", "src/cmd/check.c" };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct strbuf path = STRBUF_INIT, text = STRBUF_INIT;
		test_src_path(&path, files[i]);
		CHECK_MSG(read_file_bounded(path.buf, &text, 4u << 20, NULL) == 0, "cannot read %s",
			  files[i]);
		CHECK_MSG(!strstr(text.buf, "STATUS_UNKNOWN, ACTION_NONE"),
			  "%s makes an unknown finding with no action", files[i]);
		strbuf_release(&path);
		strbuf_release(&text);
	}
}
