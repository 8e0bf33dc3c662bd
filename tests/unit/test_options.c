/* test_options.c: every command's --timeout follows the one rule for seconds (exit 2, the range). */
#include "../harness.h"
#include "../../src/slurm/fleet.h"
#include <sys/stat.h>
#include <unistd.h>

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

/* Node names, admins' drain reasons and the nodes' answers reach the fleet table spelled out. */
TEST(fleet_table_neutralises_escapes_from_slurm_and_nodes)
{
	struct fleet_row row;
	memset(&row, 0, sizeof(row));
	row.node.name = xstrdup("gpu\x1b[2J01");
	row.verdict = FLEET_UNHEALTHY;
	row.reason = xstrdup("admin: \x1b]0;pwned\x07 bad PSU");
	row.slurm_error = xstrdup("scontrol said \x1b[31mno");
	struct fleet f = { .rows = &row, .nr = 1 };
	struct strbuf out = STRBUF_INIT;
	fleet_table(&f, true, 1.0, &out);
	CHECK(!strchr(out.buf, '\x1b'));
	CHECK(!strchr(out.buf, '\x07'));
	CHECK_CONTAINS(out.buf, "gpu\\x1b[2J01");
	CHECK_CONTAINS(out.buf, "admin: \\x1b]0;pwned\\x07 bad PSU");
	strbuf_release(&out);
	free(row.node.name);
	free(row.reason);
	free(row.slurm_error);
}

/* Seconds, floors and percentages are decimal: a hex float, inf or nan is refused. */
TEST(numbers_are_decimal_only)
{
	double d;
	CHECK(parse_double("1.5", &d) && d == 1.5);
	CHECK(parse_double("2e1", &d) && d == 20);
	CHECK(!parse_double("0x10", &d));
	CHECK(!parse_double("inf", &d));
	CHECK(!parse_double("nan", &d));
	const char *args[] = { "check", "--timeout", "0x10", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
}

/* A fixture without /proc/swaps and /proc/meminfo: the system check's summary says so. */
TEST(system_summary_names_what_was_absent)
{
	const char *tmp = test_tmpdir();
	test_mkdir(tmp, "r/sys");
	test_mkdir(tmp, "r/proc");
	char root[600];
	snprintf(root, sizeof(root), "%s/r", tmp);
	const char *args[] = { "check", "--root", root, "--only", "system", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_CONTAINS(c.out.buf, "not read (absent): /proc/swaps, /proc/meminfo");
	child_release(&c);
}

/* A fixture without dev/kmsg: the kernel check examined nothing, so it is unknown, never a
 * healthy "skipped". */
TEST(kernel_on_a_root_without_kmsg_is_unknown)
{
	const char *tmp = test_tmpdir();
	test_mkdir(tmp, "r/sys");
	char root[600];
	snprintf(root, sizeof(root), "%s/r", tmp);
	const char *args[] = { "check", "--root", root, "--only", "kernel", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "the kernel log was not examined");
	CHECK_CONTAINS(c.out.buf, "verdict: unknown");
	child_release(&c);
}

/* vigil.conf under the root: read through the file found inside the root; a link out of it
 * reads nothing of this host, a FIFO is refused, a file there is read. */
TEST(root_config_is_read_inside_the_root)
{
	const char *tmp = test_tmpdir();
	char root[600], conf[700];
	snprintf(root, sizeof(root), "%s/r", tmp);
	snprintf(conf, sizeof(conf), "%s/etc/vigil/vigil.conf", root);
	test_write(root, "dev/kmsg", TEST_KMSG_CLEAN);
	test_write(tmp, "outside.conf", "[gpu]\n\tcuont = 8\n");
	test_mkdir(root, "etc/vigil");
	char outside[700];
	snprintf(outside, sizeof(outside), "%s/outside.conf", tmp);
	CHECK(symlink(outside, conf) == 0);
	const char *args[] = { "check", "--root", root, "--only", "kernel", "--reason", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf); /* not loaded */
	child_release(&c);
	unlink(conf);
	CHECK(mkfifo(conf, 0600) == 0);
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "is not a regular file");
	child_release(&c);
	unlink(conf);
	test_write(root, "etc/vigil/vigil.conf", "[gpu]\n\tcuont = 8\n");
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "unknown key 'gpu.cuont'");
	child_release(&c);
}

/*
 * A fixture's vigil.conf chooses no program and no place to write (issue 17): vigil judges
 * fixtures as root. Its slurm.scontrol (plain, in a host-pattern section, in odd case) never
 * runs and its core.state-dir is never made; each is named by FILE:LINE on stderr. The same
 * settings given with -c, the caller's choice, are obeyed (so the marker test can fail).
 */
TEST(root_config_chooses_no_program_and_no_state_dir)
{
	const char *tmp = test_tmpdir();
	char root[600], marker[700], outside[700], body[1600], conf[2600], set[800];
	snprintf(root, sizeof(root), "%s/r", tmp);
	snprintf(marker, sizeof(marker), "%s/scontrol-ran", tmp);
	snprintf(outside, sizeof(outside), "%s/outside-state", tmp);
	test_write(root, "dev/kmsg", TEST_KMSG_CLEAN);
	test_write(root, "etc/hostname", "n1\n");
	snprintf(body, sizeof(body), "echo \"$@\" >> '%s'\nexit 1\n", marker);
	const char *dir = test_script("evil-scontrol", body);
	const char *const confs[] = {
		"[slurm]\n\tscontrol = %s/evil-scontrol\n[core]\n\tstate-dir = %s\n",
		"[slurm \"n*\"]\n\tscontrol = %s/evil-scontrol\n[core \"*\"]\n\tstate-dir = %s\n",
		"[SLURM]\n  SControl=\"%s/evil-scontrol\"   # odd case\n[Core]\n\tSTATE-DIR = %s\n",
	};
	const char *env[] = { "PATH=/nonexistent-vigil-test", NULL };
	for (size_t i = 0; i < ARRAY_SIZE(confs); i++) {
		snprintf(conf, sizeof(conf), confs[i], dir, outside);
		test_write(root, "etc/vigil/vigil.conf", conf);
		const char *args[] = { "check", "--root", root, "--only", "kernel", "--slurm",
				       "-c", "slurm.timeout=2", NULL };
		struct child c;
		test_run_vigil(&c, args, env);
		CHECK_MSG(access(marker, F_OK) != 0, "case %zu: the fixture's scontrol ran", i);
		CHECK_MSG(access(outside, F_OK) != 0, "case %zu: the fixture's state-dir was made",
			  i);
		CHECK_CONTAINS(c.err.buf, "/etc/vigil/vigil.conf:2: 'slurm.scontrol' ignored: a "
					  "fixture's configuration under --root does not choose");
		CHECK_CONTAINS(c.err.buf, "'core.state-dir' ignored");
		/* the checks ran and Slurm was asked through the default, which is missing here */
		CHECK_CONTAINS(c.out.buf, "kernel log clean");
		CHECK_MSG(c.exit_code == 3, "case %zu: exit %d\n%s", i, c.exit_code, c.err.buf);
		child_release(&c);
	}
	/* the caller's own -c is obeyed: the same script runs */
	snprintf(set, sizeof(set), "slurm.scontrol=%s/evil-scontrol", dir);
	const char *args[] = { "check", "--root", root, "--only", "kernel", "--slurm", "-c", set,
			       "-c", "slurm.timeout=2", NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_MSG(access(marker, F_OK) == 0, "-c slurm.scontrol did not run: %s", c.err.buf);
	child_release(&c);
}

/* An empty text value is no value: 'gpu.driver-version =' would drop the pin unseen. */
TEST(empty_text_value_is_a_usage_error_naming_the_line)
{
	const char *tmp = test_tmpdir();
	char root[600], conf[700];
	snprintf(root, sizeof(root), "%s/r", tmp);
	snprintf(conf, sizeof(conf), "%s/v.conf", tmp);
	test_write(root, "dev/kmsg", TEST_KMSG_CLEAN);
	test_write(tmp, "v.conf", "[gpu]\n\tdriver-version = 550.*\n\tdriver-version =\n");
	const char *args[] = { "check", "--root", root, "--only", "kernel", "--config", conf,
			       NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "v.conf:3: 'gpu.driver-version' is empty: give it a value");
	child_release(&c);
	const char *set[] = { "check", "--root", root, "--only", "kernel", "-c",
			      "gpu.driver-version=", NULL };
	test_run_vigil(&c, set, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "-c: 'gpu.driver-version' is empty");
	child_release(&c);
	/* quoted empty text is empty too */
	test_write(tmp, "v.conf", "[kernel]\n\tallow = \"\"\n");
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "v.conf:2: 'kernel.allow' is empty");
	child_release(&c);
	/* and so is quoted white space: it would ignore every kernel line with a space */
	test_write(tmp, "v.conf", "[kernel]\n\tallow = \" \"\n");
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "v.conf:2: 'kernel.allow' is empty");
	child_release(&c);
}
