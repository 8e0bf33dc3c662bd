/* test_cli.c: what a user sees from the command line: help, usage errors, exit codes, outputs. */
#include "../harness.h"
#include "../../src/lib/fileio.h"

#include <sys/stat.h>
#include <unistd.h>

static const char *const commands[] = { "check", "gather", "agent", "stress", "net",
					"fleet", "list",   "help",  "version" };

TEST(cli_help_for_every_command)
{
	struct child c;
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		const char *args[] = { commands[i], "--help", NULL };
		test_run_vigil(&c, args, NULL);
		CHECK_MSG(c.exited && c.exit_code == 0, "'vigil %s --help' exited %d", commands[i],
			  c.exit_code);
		struct strbuf want = STRBUF_INIT;
		strbuf_addf(&want, "usage: vigil %s", strcmp(commands[i], "help") ? commands[i] : "");
		CHECK_CONTAINS(c.out.buf, want.buf);
		strbuf_release(&want);
		child_release(&c);
		const char *args2[] = { "help", commands[i], NULL };
		test_run_vigil(&c, args2, NULL);
		CHECK_INT(c.exit_code, 0);
		CHECK_CONTAINS(c.out.buf, "usage: vigil");
		child_release(&c);
	}
	const char *top[] = { "--help", NULL };
	test_run_vigil(&c, top, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "Exit status");
	CHECK_CONTAINS(c.out.buf, "3  could not tell");
	child_release(&c);
}

TEST(cli_check_help_states_exit_codes)
{
	struct child c;
	const char *args[] = { "check", "--help", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_CONTAINS(c.out.buf, "0  healthy");
	CHECK_CONTAINS(c.out.buf, "1  unhealthy");
	CHECK_CONTAINS(c.out.buf, "2  usage error");
	CHECK_CONTAINS(c.out.buf, "3  could not tell");
	child_release(&c);
}

TEST(cli_version)
{
	struct child c;
	const char *args[] = { "--version", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "vigil ");
	child_release(&c);
}

static void expect_usage(const char *const *args, const char *msg)
{
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && c.exit_code == 2, "'%s %s' exited %d, expected 2", args[0],
		  args[1] ? args[1] : "", c.exit_code);
	CHECK_CONTAINS(c.err.buf, msg);
	CHECK_STR(c.out.buf, "");
	child_release(&c);
}

TEST(cli_usage_errors_exit_2)
{
	const char *a1[] = { "frobnicate", NULL };
	expect_usage(a1, "not a vigil command");
	const char *a2[] = { "check", "--bogus", NULL };
	expect_usage(a2, "unknown option '--bogus'");
	const char *a3[] = { "check", "--root", "/nonexistent/fixture", NULL };
	expect_usage(a3, "root '/nonexistent/fixture' is not a directory");
	const char *a4[] = { "check", "--only", "gpu,nope", NULL };
	expect_usage(a4, "no check named 'nope'");
	const char *a5[] = { "check", "--root", NULL };
	expect_usage(a5, "needs a value");
	const char *a6[] = { "check", "--json", "--reason", NULL };
	expect_usage(a6, "cannot be used together");
	const char *a7[] = { "check", "--timeout", "soon", NULL };
	expect_usage(a7, "--timeout wants seconds");
	const char *a8[] = { "check", "extra", NULL };
	expect_usage(a8, "unexpected argument 'extra'");
	const char *a9[] = { "check", "--kernel-log", "/nonexistent/kern.log", NULL };
	expect_usage(a9, "cannot read kernel log");
	const char *a10[] = { "gather", NULL };
	expect_usage(a10, "which directory");
}

TEST(cli_bad_config_is_a_usage_error)
{
	const char *dir = test_tmpdir();
	test_write(dir, "bad.conf", "[gpu]\ncount = 8\n[oops\n");
	test_write(dir, "typed.conf", "[gpu]\ncount = eight\n");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/bad.conf", dir);
	const char *a1[] = { "check", "--root", dir, "--config", p.buf, NULL };
	expect_usage(a1, "bad.conf:3");
	const char *a2[] = { "check", "--root", dir, "-c", "nodot", NULL };
	expect_usage(a2, "section.key=value");
	const char *a3[] = { "check", "--root", dir, "--config", "/nonexistent.conf", NULL };
	expect_usage(a3, "cannot read '/nonexistent.conf'");
	strbuf_release(&p);
}

/* Every output mode on an empty root: whatever the verdict, the shapes hold. */
TEST(cli_json_shape)
{
	const char *dir = test_tmpdir();
	test_write(dir, "root/etc/hostname", "node-7\n");
	struct strbuf root = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	const char *args[] = { "check", "--root", root.buf, "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "host"), "node-7");
	const char *verdict = json_get_string(v, "verdict");
	CHECK(verdict && (!strcmp(verdict, "healthy") || !strcmp(verdict, "unhealthy") ||
			  !strcmp(verdict, "unknown")));
	int want_exit = !strcmp(verdict, "healthy") ? 0 : !strcmp(verdict, "unhealthy") ? 1 : 3;
	CHECK_INT(c.exit_code, want_exit);
	const char *reason = json_get_string(v, "reason");
	CHECK(reason && strlen(reason) <= 80 && !strchr(reason, '\n'));
	CHECK(json_get_string(v, "time"));
	const struct json_value *checks = json_get(v, "checks");
	CHECK(checks && checks->type == JSON_ARRAY && checks->nr == 6);
	for (size_t i = 0; i < checks->nr; i++) {
		const struct json_value *ch = checks->items[i];
		double d;
		CHECK(json_get_string(ch, "name"));
		CHECK(json_get_string(ch, "status"));
		CHECK(json_get_number(ch, "duration_ms", &d));
		const struct json_value *fs = json_get(ch, "findings");
		CHECK(fs && fs->type == JSON_ARRAY);
		for (size_t j = 0; j < fs->nr; j++) {
			CHECK(json_get_string(fs->items[j], "status"));
			CHECK(json_get_string(fs->items[j], "severity"));
			CHECK(json_get_string(fs->items[j], "action"));
			CHECK(json_get_string(fs->items[j], "message"));
			CHECK(json_get_string(fs->items[j], "device"));
		}
	}
	json_free(v);
	child_release(&c);

	/* --reason prints that same reason alone */
	const char *args2[] = { "check", "--root", root.buf, "--reason", NULL };
	test_run_vigil(&c, args2, NULL);
	CHECK_INT(c.exit_code, want_exit);
	CHECK(c.out.len > 1 && c.out.len <= 81 && c.out.buf[c.out.len - 1] == '\n');
	CHECK(!memchr(c.out.buf, '\n', c.out.len - 1));
	child_release(&c);
	strbuf_release(&root);
}

TEST(cli_only_and_skip)
{
	const char *dir = test_tmpdir();
	const char *args[] = { "check", "--root", dir, "--json", "--only", "storage,system", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *checks = json_get(v, "checks");
	CHECK(checks && checks->nr == 2);
	CHECK_STR(json_path(v, "checks.0.name")->string, "storage");
	CHECK_STR(json_path(v, "checks.1.name")->string, "system");
	json_free(v);
	child_release(&c);

	const char *args2[] = { "check", "--root", dir, "--json", "--skip", "gpu", "-c",
				"check.skip=kernel", NULL };
	test_run_vigil(&c, args2, NULL);
	v = test_parse_json(&c);
	checks = json_get(v, "checks");
	CHECK(checks && checks->nr == 5);
	/* skipped by the configuration: still listed, as skipped */
	CHECK_STR(json_path(v, "checks.0.name")->string, "kernel");
	CHECK_STR(json_path(v, "checks.0.status")->string, "skipped");
	json_free(v);
	child_release(&c);
}

static bool have_program(const char *name)
{
	const char *argv[] = { "sh", "-c", "command -v \"$0\" >/dev/null", name, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 5000;
	bool ok = child_run(&c, NULL) == 0 && c.exited && c.exit_code == 0;
	child_release(&c);
	return ok;
}

TEST(cli_prom_file_is_valid_and_atomic)
{
	const char *dir = test_tmpdir();
	struct strbuf prom = STRBUF_INIT, data = STRBUF_INIT;
	strbuf_addf(&prom, "%s/vigil.prom", dir);
	const char *args[] = { "check", "--root", dir, "--prom", prom.buf, "--reason", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK(c.exit_code != 2);
	CHECK_INT(read_file_bounded(prom.buf, &data, 1 << 20, NULL), READ_OK);
	CHECK_CONTAINS(data.buf, "# TYPE vigil_verdict gauge\n");
	CHECK_CONTAINS(data.buf, "vigil_check_status{check=\"gpu\",status=");
	CHECK(data.buf[data.len - 1] == '\n');
	child_release(&c);
	/* no temporary file left behind */
	struct strbuf ls = STRBUF_INIT;
	const char *lsargs[] = { "ls", dir, NULL };
	child_init(&c);
	c.argv = lsargs;
	c.timeout_ms = 5000;
	CHECK_INT(child_run(&c, NULL), 0);
	CHECK_STR(c.out.buf, "vigil.prom\n");
	child_release(&c);
	if (!have_program("promtool"))
		SKIP("promtool not installed (Debian package prometheus)");
	const char *pt[] = { "promtool", "check", "metrics", NULL };
	child_init(&c);
	c.argv = pt;
	c.stdin_data = data.buf;
	c.stdin_len = data.len;
	c.timeout_ms = 20000;
	CHECK_INT(child_run(&c, NULL), 0);
	CHECK_MSG(c.exited && c.exit_code == 0, "promtool: %s%s", c.out.buf, c.err.buf);
	child_release(&c);
	strbuf_release(&ls);
	strbuf_release(&prom);
	strbuf_release(&data);
}

TEST(cli_prom_unwritable_is_not_silent)
{
	const char *dir = test_tmpdir();
	const char *args[] = { "check", "--root", dir, "--prom", "/nonexistent/dir/v.prom",
			       "--reason", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK(c.exit_code != 0);
	CHECK_CONTAINS(c.err.buf, "/nonexistent/dir/v.prom");
	child_release(&c);
}

TEST(cli_table_has_verdict_and_no_color_when_piped)
{
	const char *dir = test_tmpdir();
	const char *args[] = { "check", "--root", dir, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_CONTAINS(c.out.buf, "CHECK");
	CHECK_CONTAINS(c.out.buf, "verdict: ");
	CHECK(!strchr(c.out.buf, '\033'));
	child_release(&c);
	const char *args2[] = { "check", "--root", dir, "--color", "always", NULL };
	test_run_vigil(&c, args2, NULL);
	CHECK(strchr(c.out.buf, '\033'));
	child_release(&c);
}

TEST(cli_list_names_every_check)
{
	const char *args[] = { "list", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0);
	const char *names[] = { "gpu", "kernel", "pcie", "infiniband", "storage", "system" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		CHECK_CONTAINS(c.out.buf, names[i]);
	child_release(&c);
}

/* Bad input gets a clear error and loses nothing: binary garbage is not "clean", and a real log
 * behind a zero-filled block (a crash) is still read. */
TEST(cli_kernel_log_garbage_is_unknown_not_clean)
{
	const char *dir = test_tmpdir();
	struct strbuf junk = STRBUF_INIT, crash = STRBUF_INIT, p1 = STRBUF_INIT, p2 = STRBUF_INIT;
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 1 << 20; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		char c = (char)(x & 0xff);
		strbuf_add(&junk, &c, 1);
	}
	strbuf_addf(&p1, "%s/junk.log", dir);
	CHECK_INT(write_file(p1.buf, junk.buf, junk.len, false, NULL), 0);
	const char *a1[] = { "check", "--only", "kernel", "--kernel-log", p1.buf, "--json", NULL };
	struct child c;
	test_run_vigil(&c, a1, NULL);
	CHECK_INT(c.exit_code, 3);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_path(v, "checks.0.status")->string, "unknown");
	CHECK_CONTAINS(json_get_string(json_path(v, "checks.0"), "error"),
		       "does not look like a kernel log");
	json_free(v);
	child_release(&c);

	strbuf_addstr(&crash, "[    0.000000] Linux version 6.1.0-28-amd64\n"
			      "[    5.120000] nvidia: loading out-of-tree module taints kernel.\n");
	for (int i = 0; i < 8192; i++)
		strbuf_addch(&crash, 0);
	strbuf_addstr(&crash, "\n[ 1843.308145] NVRM: Xid (PCI:0000:9b:00): 79, pid=9962, "
			      "name=python, GPU has fallen off the bus.\n");
	strbuf_addf(&p2, "%s/crash.log", dir);
	CHECK_INT(write_file(p2.buf, crash.buf, crash.len, false, NULL), 0);
	const char *a2[] = { "check", "--only", "kernel", "--kernel-log", p2.buf, "--reason", NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "Xid 79");
	child_release(&c);
	strbuf_release(&junk);
	strbuf_release(&crash);
	strbuf_release(&p1);
	strbuf_release(&p2);
}
