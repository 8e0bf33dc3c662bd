/* test_options.c: every command's --timeout follows the one rule for seconds (exit 2, the range). */
#include "../harness.h"

TEST(every_timeout_option_refuses_a_tiny_or_zero_deadline)
{
	const char *tmp = test_tmpdir();
	struct strbuf dest = STRBUF_INIT;
	strbuf_addf(&dest, "%s/fixture", tmp);
	const char *const cases[][8] = {
		{ "check", "--timeout", "0.0001", NULL },
		{ "stress", "gpu", "--timeout", "0.0001", NULL },
		{ "net", "nccl", "--timeout", "0", NULL },
		{ "net", "nccl", "--deadline", "0.0001", NULL },
		{ "gather", dest.buf, "--timeout", "0.0001", NULL },
		{ "fleet", "check", "--nodes", "n1", "--timeout", "0", NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct child c;
		test_run_vigil(&c, cases[i], NULL);
		CHECK_MSG(c.exit_code == 2, "vigil %s %s: exit %d, wanted 2: %s", cases[i][0],
			  cases[i][1], c.exit_code, c.err.buf);
		CHECK_CONTAINS(c.err.buf, "wants seconds from 1");
		child_release(&c);
	}
	strbuf_release(&dest);
}
