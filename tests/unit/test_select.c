/* test_select.c: a run that selects no check is a usage error, never a verdict. */
#include "../harness.h"

static void expect_usage(const char *const *args, const char *needle)
{
	struct child c;
	struct strbuf root = STRBUF_INIT;
	test_src_path(&root, "tests/scenarios/kernel-clean/root");
	const char *argv[16];
	size_t n = 0;
	argv[n++] = "check";
	argv[n++] = "--root";
	argv[n++] = root.buf;
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	test_run_vigil(&c, argv, NULL);
	CHECK_MSG(c.exit_code == 2, "'%s': exit %d, wanted 2; out: %s", args[0], c.exit_code,
		  c.out.buf);
	CHECK_CONTAINS(c.err.buf, needle);
	CHECK(!strstr(c.out.buf, "healthy"));
	child_release(&c);
	strbuf_release(&root);
}

TEST(check_with_no_check_selected_is_a_usage_error)
{
	const char *skip_all[] = { "--skip", "gpu,kernel,pcie,infiniband,storage,system", NULL };
	expect_usage(skip_all, "no check selected");
	const char *only_skip[] = { "--only", "gpu", "--skip", "gpu", NULL };
	expect_usage(only_skip, "no check selected");
	const char *only_empty[] = { "--only", "", NULL };
	expect_usage(only_empty, "no check selected");
	const char *cfg_all[] = { "-c", "check.skip=gpu,kernel,pcie,infiniband,storage,system",
				  NULL };
	expect_usage(cfg_all, "disabled by the configuration");
}
