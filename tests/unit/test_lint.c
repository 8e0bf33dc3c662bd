/* test_lint.c: the house rules of tests/lint hold for the whole tree. */
#include "../harness.h"

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
