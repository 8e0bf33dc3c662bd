/* test_cli.c: what a user sees from the command line: help, usage errors, exit codes, outputs. */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/strlist.h"
#include "../../src/cmd/cmd.h"
#include "../../src/cmd/config_keys.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

/* 'vigil CMD [SUB] --help' and 'vigil help CMD [SUB]': exit 0, a usage naming what was asked. */
static void expect_help(const char *cmd, const char *sub)
{
	struct child c;
	struct strbuf want = STRBUF_INIT;
	strbuf_addf(&want, "vigil %s%s%s", cmd, sub ? " " : "", sub ? sub : "");
	const char *direct[] = { cmd, sub ? sub : "--help", sub ? "--help" : NULL, NULL };
	const char *via_help[] = { "help", cmd, sub, NULL };
	const char *const *runs[] = { direct, via_help };
	for (size_t r = 0; r < ARRAY_SIZE(runs); r++) {
		test_run_vigil(&c, runs[r], NULL);
		CHECK_MSG(c.exited && c.exit_code == 0, "'%s --help' (%s) exited %d: %s", want.buf,
			  r ? "through help" : "direct", c.exit_code, c.err.buf);
		CHECK_MSG(starts_with(c.out.buf, "usage: vigil"), "'%s --help': %s", want.buf,
			  c.out.buf);
		if (strcmp(cmd, "help"))
			CHECK_CONTAINS(c.out.buf, want.buf);
		CHECK_STR(c.err.buf, "");
		child_release(&c);
	}
	strbuf_release(&want);
}

/* The table is walked, so a new command or subcommand is covered the day it is added. */
TEST(cli_help_for_every_command_and_subcommand)
{
	CHECK(cmd_table_nr >= 9);
	for (size_t i = 0; i < cmd_table_nr; i++) {
		const struct cmd_def *d = &cmd_table[i];
		expect_help(d->name, NULL);
		for (size_t j = 0; d->subcommands && d->subcommands[j]; j++)
			expect_help(d->name, d->subcommands[j]);
	}
	struct child c;
	const char *top[] = { "--help", NULL };
	test_run_vigil(&c, top, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "Exit status");
	CHECK_CONTAINS(c.out.buf, "3  could not tell");
	/* every command and subcommand is listed */
	for (size_t i = 0; i < cmd_table_nr; i++) {
		CHECK_CONTAINS(c.out.buf, cmd_table[i].name);
		for (size_t j = 0; cmd_table[i].subcommands && cmd_table[i].subcommands[j]; j++)
			CHECK_CONTAINS(c.out.buf, cmd_table[i].subcommands[j]);
	}
	child_release(&c);
}

/* A help text says what was built in, not the Makefile's variable ('$(LIBDIR)'). */
TEST(cli_help_texts_have_no_make_variables)
{
	for (size_t i = 0; i < cmd_table_nr; i++) {
		const struct cmd_def *d = &cmd_table[i];
		for (size_t j = 0; j == 0 || (d->subcommands && d->subcommands[j - 1]); j++) {
			const char *sub = j && d->subcommands ? d->subcommands[j - 1] : NULL;
			const char *args[] = { d->name, sub ? sub : "--help", sub ? "--help" : NULL,
					       NULL };
			struct child c;
			test_run_vigil(&c, args, NULL);
			CHECK_MSG(!strstr(c.out.buf, "$("), "'vigil %s %s --help' says:\n%s", d->name,
				  sub ? sub : "", c.out.buf);
			child_release(&c);
		}
	}
}

/* An unknown command or subcommand: exit 2, nothing on stdout, the nearest name on stderr. */
TEST(cli_unknown_command_or_subcommand_suggests)
{
	static const struct {
		const char *args[4];
		const char *msg;
	} cases[] = {
		{ { "chekc" }, "'chekc' is not a vigil command; did you mean 'check'?" },
		{ { "frobnicate" }, "'frobnicate' is not a vigil command\n" },
		{ { "fleet", "chekc" }, "'chekc' is not a subcommand of 'vigil fleet'; did you mean "
					"'check'?" },
		{ { "net", "nccll" }, "did you mean 'nccl'?" },
		{ { "net", "pair" }, "did you mean 'pairs'?" },
		{ { "stress", "gpus" }, "did you mean 'gpu'?" },
		{ { "stress", "cpu" }, "'cpu' is not a subcommand of 'vigil stress'" },
		{ { "help", "chek" }, "no command 'chek'; did you mean 'check'?" },
		{ { "help", "fleet", "chekc" }, "did you mean 'check'?" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct child c;
		test_run_vigil(&c, cases[i].args, NULL);
		CHECK_MSG(c.exited && c.exit_code == 2, "'vigil %s %s' exited %d", cases[i].args[0],
			  cases[i].args[1] ? cases[i].args[1] : "", c.exit_code);
		CHECK_CONTAINS(c.err.buf, cases[i].msg);
		CHECK_STR(c.out.buf, "");
		child_release(&c);
	}
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
	expect_usage(a7, "--timeout wants seconds from 1 to 86400, not 'soon'");
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

/* The arguments that run d (its first subcommand, if it has them) on an empty fixture. */
static size_t command_args(const struct cmd_def *d, const char *root, const char **args)
{
	size_t n = 0;
	args[n++] = d->name;
	if (d->subcommands)
		args[n++] = d->subcommands[0];
	if (d->flags & CMD_TAKES_ROOT) {
		args[n++] = "--root";
		args[n++] = root;
	}
	return n;
}

/* Every command that reads the configuration refuses a misspelt key before doing anything. */
TEST(cli_unknown_config_key_is_a_usage_error_in_every_command)
{
	const char *dir = test_tmpdir();
	size_t tested = 0;
	for (size_t i = 0; i < cmd_table_nr; i++) {
		const struct cmd_def *d = &cmd_table[i];
		if (!(d->flags & CMD_TAKES_CONFIG))
			continue;
		const char *args[12];
		size_t n = command_args(d, dir, args);
		args[n++] = "-c";
		args[n++] = "gpu.cuont=8";
		args[n] = NULL;
		struct child c;
		test_run_vigil(&c, args, NULL);
		CHECK_MSG(c.exited && c.exit_code == 2, "'vigil %s -c gpu.cuont=8' exited %d: %s",
			  d->name, c.exit_code, c.err.buf);
		CHECK_CONTAINS(c.err.buf, "-c: unknown key 'gpu.cuont' (did you mean 'gpu.count'?)");
		CHECK_STR(c.out.buf, "");
		child_release(&c);
		tested++;
	}
	CHECK(tested >= 5);
}

TEST(cli_config_values_out_of_range_are_usage_errors)
{
	const char *dir = test_tmpdir();
	static const struct {
		const char *set, *msg;
	} bad[] = {
		{ "check.timeout=0", "-c: 'check.timeout' wants whole seconds from 1 to 3600, not '0'" },
		{ "kernel.timeout=0", "-c: 'kernel.timeout' wants whole seconds from 1 to 3600" },
		{ "gpu.count=-1", "-c: 'gpu.count' wants a whole number from 0 to 1024, not '-1'" },
		{ "gpu.enabled=perhaps", "'gpu.enabled' wants true or false, not 'perhaps'" },
		{ "check.skip=gpu,nope", "'check.skip' wants a list of gpu, kernel," },
		{ "kernel.window=0", "'kernel.window' wants seconds above 0" },
		{ "deep.duration=-3", "'deep.duration' wants seconds above 0" },
		{ "system.swap=sometimes", "'system.swap' wants allowed, warn or fail" },
		{ "storage.mount=data", "'storage.mount' wants an absolute path, not 'data'" },
		{ "kernle.window=5", "-c: unknown section 'kernle' (did you mean 'kernel.window'?)" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *args[] = { "check", "--root", dir, "-c", bad[i].set, "--reason", NULL };
		expect_usage(args, bad[i].msg);
	}
	const char *t[] = { "check", "--root", dir, "--timeout", "0.0001", NULL };
	expect_usage(t, "--timeout wants seconds from 1 to 86400, not '0.0001'");
	/* what the ranges let through still runs */
	const char *ok[] = { "check", "--root", dir, "-c", "kernel.timeout=1", "-c",
			     "check.skip=gpu kernel", "-c", "gpu.enabled=no", "--reason", NULL };
	struct child c;
	test_run_vigil(&c, ok, NULL);
	CHECK_MSG(c.exit_code != 2, "exited 2: %s", c.err.buf);
	child_release(&c);
}

TEST(cli_config_file_errors_name_file_and_line)
{
	const char *dir = test_tmpdir();
	test_write(dir, "typo.conf", "[gpu]\ncount = 8\n# why\ncuont = 8\n");
	test_write(dir, "section.conf", "[gpu]\ncount = 8\n[infinband]\n");
	test_write(dir, "range.conf", "[check]\ntimeout = 0\n");
	/* a host section is checked on every host: the typo is caught on node-1 too */
	test_write(dir, "host.conf", "[gpu \"debug-*\"]\ncuont = 4\n");
	test_write(dir, "hostok.conf", "[gpu]\ncount = 8\n[gpu \"debug-*\"]\ncount = 4\n");
	static const struct {
		const char *file, *msg;
	} cases[] = {
		{ "typo.conf", "typo.conf:4: unknown key 'gpu.cuont' (did you mean 'gpu.count'?)" },
		{ "section.conf", "section.conf:3: unknown section 'infinband' (did you mean "
				  "'infiniband'?)" },
		{ "range.conf", "range.conf:2: 'check.timeout' wants whole seconds from 1 to 3600" },
		{ "host.conf", "host.conf:2: unknown key 'gpu.cuont'" },
	};
	struct strbuf p = STRBUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "%s/%s", dir, cases[i].file);
		const char *args[] = { "check", "--root", dir, "--host", "node-1", "--config", p.buf,
				       NULL };
		expect_usage(args, cases[i].msg);
	}
	/* host sections still work: count = 4 applies on debug-1 only */
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/hostok.conf", dir);
	const char *args[] = { "check", "--root", dir, "--host", "debug-1", "--config", p.buf,
			       "--only", "gpu", "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code != 2, "exited 2: %s", c.err.buf);
	child_release(&c);
	strbuf_release(&p);
}

/* A FIFO as the configuration (given, or planted at /etc/vigil/vigil.conf under the root) is
 * refused at once, however long its writer keeps it open; /dev/null still means "empty". */
TEST_TIMEOUT(cli_config_fifo_is_refused_not_waited_on, 30)
{
	const char *dir = test_tmpdir();
	struct strbuf fifo = STRBUF_INIT, root = STRBUF_INIT, planted = STRBUF_INIT;
	strbuf_addf(&fifo, "%s/vigil.fifo", dir);
	CHECK_INT(mkfifo(fifo.buf, 0600), 0);
	int w = open(fifo.buf, O_RDWR | O_NONBLOCK); /* a writer that never writes */
	CHECK(w >= 0);
	const char *a1[] = { "check", "--root", dir, "--config", fifo.buf, NULL };
	expect_usage(a1, "is not a regular file");
	const char *a2[] = { "fleet", "check", "--config", fifo.buf, NULL };
	expect_usage(a2, "is not a regular file");

	strbuf_addf(&root, "%s/root", dir);
	test_mkdir(root.buf, "etc/vigil");
	strbuf_addf(&planted, "%s/etc/vigil/vigil.conf", root.buf);
	CHECK_INT(mkfifo(planted.buf, 0600), 0);
	int w2 = open(planted.buf, O_RDWR | O_NONBLOCK);
	CHECK(w2 >= 0);
	const char *a3[] = { "check", "--root", root.buf, NULL };
	expect_usage(a3, "vigil.conf' is not a regular file");
	close(w);
	close(w2);

	const char *a4[] = { "check", "--root", dir, "--config", "/dev/null", "--reason", NULL };
	struct child c;
	test_run_vigil(&c, a4, NULL);
	CHECK_MSG(c.exit_code != 2, "exited 2: %s", c.err.buf);
	child_release(&c);
	strbuf_release(&fifo);
	strbuf_release(&root);
	strbuf_release(&planted);
}

/* 'vigil help config [CMD]' lists the keys (of CMD) with what each accepts, from the schema. */
TEST(cli_help_config_lists_keys_with_their_ranges)
{
	struct child c;
	const char *all[] = { "help", "config", NULL };
	test_run_vigil(&c, all, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "gpu.count (a whole number from 0 to 1024)");
	CHECK_CONTAINS(c.out.buf, "<check>.timeout (whole seconds from 1 to 3600)");
	CHECK_CONTAINS(c.out.buf, "system.swap (allowed, warn or fail)");
	child_release(&c);
	const char *fleet[] = { "help", "config", "fleet", NULL };
	test_run_vigil(&c, fleet, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "fleet.parallel (a whole number from 1 to 1024)");
	CHECK_NOT_CONTAINS(c.out.buf, "gpu.count");
	child_release(&c);
	const char *nope[] = { "help", "config", "nope", NULL };
	test_run_vigil(&c, nope, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "no command 'nope'");
	child_release(&c);
}

/* ---- the schema against the code and the man pages ---- */

/* A man page's text with troff's font changes and escaped hyphens undone. */
static void read_man_page(const char *name, struct strbuf *out)
{
	struct strbuf path = STRBUF_INIT, raw = STRBUF_INIT;
	strbuf_reset(out);
	test_src_path(&path, "docs/");
	strbuf_addf(&path, "%s.1", name);
	CHECK_MSG(read_file_bounded(path.buf, &raw, 1 << 20, NULL) == READ_OK, "no man page %s",
		  path.buf);
	for (const char *s = raw.buf; *s; s++) {
		if (s[0] == '\\' && s[1] == 'f' && s[2]) {
			s += 2;
			continue;
		}
		if (s[0] == '\\' && (s[1] == '-' || s[1] == '&')) {
			if (s[1] == '-')
				strbuf_addch(out, '-');
			s++;
			continue;
		}
		strbuf_addch(out, *s);
	}
	strbuf_release(&path);
	strbuf_release(&raw);
}

/* Every command has a man page naming it and its subcommands, and vigil.1 names them all. */
TEST(cli_every_command_has_a_man_page)
{
	struct strbuf page = STRBUF_INIT, name = STRBUF_INIT;
	read_man_page("vigil", &page);
	CHECK_CONTAINS(page.buf, ".TH VIGIL 1");
	for (size_t i = 0; i < cmd_table_nr; i++) {
		strbuf_reset(&name);
		strbuf_addf(&name, "vigil %s", cmd_table[i].name);
		CHECK_CONTAINS(page.buf, name.buf);
	}
	for (size_t i = 0; i < cmd_table_nr; i++) {
		const struct cmd_def *d = &cmd_table[i];
		if (!strcmp(d->name, "help") || !strcmp(d->name, "version") ||
		    !strcmp(d->name, "list"))
			continue; /* described in vigil.1 */
		strbuf_reset(&name);
		strbuf_addf(&name, "vigil-%s", d->name);
		read_man_page(name.buf, &page);
		CHECK_CONTAINS(page.buf, ".SH NAME");
		CHECK_CONTAINS(page.buf, ".SH EXIT STATUS");
		for (size_t j = 0; d->subcommands && d->subcommands[j]; j++) {
			strbuf_reset(&name);
			strbuf_addf(&name, "vigil %s %s", d->name, d->subcommands[j]);
			CHECK_CONTAINS(page.buf, name.buf);
		}
	}
	strbuf_release(&page);
	strbuf_release(&name);
}

/* Every configuration key is in the man page of every command that reads it. */
TEST(cli_every_config_key_is_in_its_commands_man_pages)
{
	struct strbuf page = STRBUF_INIT, name = STRBUF_INIT;
	const struct config_key *const tables[] = { config_keys_fixed, config_keys_per_check };
	const size_t sizes[] = { config_keys_fixed_nr, config_keys_per_check_nr };
	for (size_t t = 0; t < ARRAY_SIZE(tables); t++) {
		for (size_t i = 0; i < sizes[t]; i++) {
			const struct config_key *k = &tables[t][i];
			struct strlist cmds = STRLIST_INIT;
			strlist_split(&cmds, k->commands, " ");
			CHECK_MSG(cmds.nr > 0, "%s: no command reads it", k->name);
			for (size_t c = 0; c < cmds.nr; c++) {
				CHECK_MSG(cmd_find(cmds.items[c]), "%s: no command '%s'", k->name,
					  cmds.items[c]);
				strbuf_reset(&name);
				strbuf_addf(&name, "vigil-%s", cmds.items[c]);
				read_man_page(name.buf, &page);
				CHECK_MSG(strstr(page.buf, k->name), "%s.1 does not name '%s'",
					  name.buf, k->name);
			}
			strlist_release(&cmds);
		}
	}
	strbuf_release(&page);
	strbuf_release(&name);
}

/* Every key src/ reads by its literal name (config_get*(cfg, "sec", "key"), config_origin())
 * is in the schema: a setting cannot be added without its type and range. */
static void scan_source(const char *path, size_t *found)
{
	struct strbuf text = STRBUF_INIT;
	size_t nr;
	const struct config_key *keys = config_schema(&nr);
	CHECK_INT(read_file_bounded(path, &text, 4 << 20, NULL), READ_OK);
	for (const char *s = text.buf; (s = strstr(s, "config_")); s++) {
		const char *p = s + 7;
		if (!starts_with(p, "get") && !starts_with(p, "origin"))
			continue;
		p = strchr(p, '(');
		const char *semi = strchr(s, ';');
		if (!p || (semi && semi < p))
			continue;
		const char *q1 = strchr(p, '"');
		if (!q1 || (semi && q1 > semi))
			continue;
		const char *e1 = strchr(q1 + 1, '"');
		const char *q2 = e1 ? strchr(e1 + 1, '"') : NULL;
		if (!q2 || (semi && q2 > semi))
			continue;
		/* only "sec", "key" next to each other */
		const char *between = e1 + 1;
		while (*between == ',' || *between == ' ' || *between == '\t' || *between == '\n')
			between++;
		if (between != q2)
			continue;
		const char *e2 = strchr(q2 + 1, '"');
		if (!e2)
			continue;
		char *sec = xstrndup(q1 + 1, (size_t)(e1 - q1 - 1));
		char *key = xstrndup(q2 + 1, (size_t)(e2 - q2 - 1));
		CHECK_MSG(config_key_find(keys, nr, sec, key),
			  "%s reads '%s.%s', which is not in the schema (src/cmd/config_keys.c)",
			  path, sec, key);
		free(sec);
		free(key);
		(*found)++;
	}
	strbuf_release(&text);
}

static void scan_dir(const char *dir, size_t *found)
{
	DIR *d = opendir(dir);
	CHECK_MSG(d, "cannot open '%s'", dir);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "%s/%s", dir, de->d_name);
		struct stat st;
		if (stat(p.buf, &st) == 0 && S_ISDIR(st.st_mode))
			scan_dir(p.buf, found);
		else if (ends_with(de->d_name, ".c") && strcmp(de->d_name, "config.c"))
			scan_source(p.buf, found);
		strbuf_release(&p);
	}
	closedir(d);
}

TEST(cli_every_config_key_read_in_src_is_in_the_schema)
{
	struct strbuf src = STRBUF_INIT;
	size_t found = 0;
	test_src_path(&src, "src");
	scan_dir(src.buf, &found);
	/* the scan does find the literal reads (gpu.count, slurm.on-unknown, ...) */
	CHECK_MSG(found >= 40, "found only %zu reads", found);
	strbuf_release(&src);
}

/* Every output mode on an empty root: whatever the verdict, the shapes hold. */
TEST(cli_json_shape)
{
	const char *dir = test_tmpdir();
	test_write(dir, "root/etc/hostname", "node-7\n");
	test_mkdir(dir, "root/sys"); /* a host root, if a bare one: no "root" result */
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
	test_mkdir(dir, "sys"); /* a host root, if a bare one: no "root" result */
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

/*
 * Every text or path key says who may set it (issue 17): a fixture's vigil.conf under --root
 * must never choose a program vigil runs or a place it writes, so a new key of those types
 * cannot be added without deciding. The keys known to name programs, their words, or places
 * written to or listened on are HOST_ONLY; numbers, booleans and choices name neither.
 */
TEST(cli_every_text_and_path_key_is_classed_for_fixtures)
{
	static const char *const host_only[] = {
		"core.state-dir", "slurm.scontrol", "slurm.sinfo", "slurm.srun", "slurm.scancel",
		"fleet.command", "fleet.srun-arg", "agent.prom", "agent.listen", "run.run-dir",
		"run.smoke", "run.check-arg", "storage.probe", "storage.probe-file",
	};
	size_t nr;
	const struct config_key *keys = config_schema(&nr);
	for (size_t i = 0; i < nr; i++) {
		const struct config_key *k = &keys[i];
		unsigned cls = k->flags & (CONFIG_HOST_ONLY | CONFIG_FIXTURE_OK);
		if (k->type == CONFIG_STRING || k->type == CONFIG_PATH)
			CHECK_MSG(cls == CONFIG_HOST_ONLY || cls == CONFIG_FIXTURE_OK,
				  "'%s' is text or a path: it needs exactly one of "
				  "CONFIG_HOST_ONLY and CONFIG_FIXTURE_OK", k->name);
		else
			CHECK_MSG(!cls, "'%s' is not text or a path: no fixture class", k->name);
		/* words that name a program or a place: never fixture-settable */
		const char *const words[] = { "program", "command", "directory", "file", "listen",
					      "argument" };
		for (size_t w = 0; w < ARRAY_SIZE(words); w++)
			CHECK_MSG(!strstr(k->help, words[w]) || cls != CONFIG_FIXTURE_OK,
				  "'%s' (\"%s\") looks like a program or a place, yet a "
				  "fixture may set it", k->name, k->help);
	}
	for (size_t i = 0; i < ARRAY_SIZE(host_only); i++) {
		const char *dot = strchr(host_only[i], '.');
		char *sec = xstrndup(host_only[i], (size_t)(dot - host_only[i]));
		const struct config_key *k = config_key_find(keys, nr, sec, dot + 1);
		CHECK_MSG(k && (k->flags & CONFIG_HOST_ONLY), "'%s' is not CONFIG_HOST_ONLY",
			  host_only[i]);
		free(sec);
	}
}

/* ---- signals (issue 17): TERM, INT and HUP stop every child, then vigil, promptly ---- */

/* vigil started, not waited for (its own process group, as test_run_vigil's). */
static void start_vigil(struct child *c, const char **argv, const char *const *args,
			const char **envv, const char *const *env)
{
	static char nvml_env[1024];
	size_t n = 0, e = 0;
	argv[n++] = test_vigil_bin();
	for (size_t i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	snprintf(nvml_env, sizeof(nvml_env), "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
	envv[e++] = nvml_env;
	for (size_t i = 0; env && env[i]; i++)
		envv[e++] = env[i];
	envv[e] = NULL;
	child_init(c);
	c->argv = argv;
	c->env_add = envv;
	c->timeout_ms = 30000;
	struct strbuf err = STRBUF_INIT;
	if (child_start(c, &err) < 0)
		test_fail_(__FILE__, __LINE__, "cannot start vigil: %s", err.buf);
	strbuf_release(&err);
}

/* The first number in file, once something (a child of vigil) has written one there. */
static long wait_for_pid_in(const char *file, const struct child *c)
{
	for (int i = 0; i < 2000; i++) {
		struct strbuf sb = STRBUF_INIT;
		long pid = 0;
		if (read_file_bounded(file, &sb, 4096, NULL) == READ_OK)
			pid = strtol(sb.buf + strcspn(sb.buf, "0123456789"), NULL, 10);
		strbuf_release(&sb);
		if (pid > 0)
			return pid;
		CHECK_MSG(kill(c->pid, 0) == 0, "vigil ended before its child wrote '%s'", file);
		usleep(10000);
	}
	test_fail_(__FILE__, __LINE__, "nothing wrote '%s'", file);
}

/* Gone, or a zombie that only waits for init: not running, not able to write anything. */
static bool process_gone(long pid)
{
	char path[64];
	struct strbuf sb = STRBUF_INIT;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	int r = read_file_bounded(path, &sb, 4096, NULL);
	const char *p = r == READ_OK ? strrchr(sb.buf, ')') : NULL;
	bool gone = r != READ_OK || (p && (p[2] == 'Z' || p[2] == 'X'));
	strbuf_release(&sb);
	return gone;
}

static void wait_vigil(struct child *c)
{
	while (!child_poll(c, -1))
		;
	child_finish(c);
}

TEST(check_on_term_int_hup_kills_its_checks_and_exits_128_plus_signal)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, log = STRBUF_INIT, hang = STRBUF_INIT, e1 = STRBUF_INIT,
		      e2 = STRBUF_INIT, state = STRBUF_INIT;
	test_src_path(&root, "tests/scenarios/gpu-healthy-8xh200/root");
	strbuf_addf(&hang, "%s/hang", tmp);
	strbuf_addf(&state, "%s/state", tmp);
	strbuf_addf(&e2, "VIGIL_FAKE_NVML_HANG=%s", hang.buf);
	test_write(tmp, "hang", "");
	const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	const char *names[] = { "SIGTERM", "SIGINT", "SIGHUP" };
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		strbuf_reset(&log);
		strbuf_addf(&log, "%s/init-%zu.log", tmp, i);
		strbuf_reset(&e1);
		strbuf_addf(&e1, "VIGIL_FAKE_NVML_INIT_LOG=%s", log.buf);
		const char *env[] = { e1.buf, e2.buf, NULL };
		/* the gpu check hangs in NVML for the whole --timeout 25 */
		const char *args[] = { "check", "--root", root.buf, "--only", "gpu", "--state-dir",
				       state.buf, "--timeout", "25", NULL };
		const char *argv[32], *envv[8];
		struct child c;
		start_vigil(&c, argv, args, envv, env);
		long check_pid = wait_for_pid_in(log.buf, &c); /* NVML is started in the check */
		CHECK_INT(kill(c.pid, sigs[i]), 0);
		wait_vigil(&c);
		CHECK_MSG(c.exited && c.exit_code == 128 + sigs[i], "%s: exited %d code %d: %s",
			  names[i], c.exited, c.exit_code, c.err.buf);
		CHECK_CONTAINS(c.err.buf, "vigil check: interrupted by ");
		CHECK_CONTAINS(c.err.buf, names[i]);
		CHECK_MSG(process_gone(check_pid), "%s: the check %ld still runs", names[i],
			  check_pid);
		child_release(&c);
	}
	DIR *d = opendir(state.buf);
	for (struct dirent *de; d && (de = readdir(d));)
		CHECK_MSG(!strstr(de->d_name, ".tmp."), "left behind: %s", de->d_name);
	if (d)
		closedir(d);
	strbuf_release(&root);
	strbuf_release(&log);
	strbuf_release(&hang);
	strbuf_release(&e1);
	strbuf_release(&e2);
	strbuf_release(&state);
}

/* SIGKILL reaches no handler: a forked check still dies with vigil, not at no deadline at all. */
TEST(check_killed_with_sigkill_takes_its_checks_with_it)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, log = STRBUF_INIT, e1 = STRBUF_INIT, e2 = STRBUF_INIT;
	test_src_path(&root, "tests/scenarios/gpu-healthy-8xh200/root");
	strbuf_addf(&log, "%s/init.log", tmp);
	strbuf_addf(&e1, "VIGIL_FAKE_NVML_INIT_LOG=%s", log.buf);
	strbuf_addf(&e2, "VIGIL_FAKE_NVML_HANG=%s/hang", tmp);
	test_write(tmp, "hang", "");
	const char *env[] = { e1.buf, e2.buf, NULL };
	const char *args[] = { "check", "--root", root.buf, "--only", "gpu", "--timeout", "25",
			       NULL };
	const char *argv[32], *envv[8];
	struct child c;
	start_vigil(&c, argv, args, envv, env);
	long check_pid = wait_for_pid_in(log.buf, &c);
	CHECK_INT(kill(c.pid, SIGKILL), 0);
	wait_vigil(&c);
	/* the kernel sends the check its SIGKILL as vigil dies; let it be delivered */
	for (int i = 0; i < 500 && !process_gone(check_pid); i++)
		usleep(10000);
	CHECK_MSG(process_gone(check_pid), "the check %ld outlived vigil", check_pid);
	if (!process_gone(check_pid))
		kill((pid_t)check_pid, SIGKILL);
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&log);
	strbuf_release(&e1);
	strbuf_release(&e2);
}

/* A child's own children die too, even one in a session of its own (setsid). */
TEST(check_on_term_kills_a_helpers_own_children_in_other_sessions)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, set = STRBUF_INIT, body = STRBUF_INIT, gc = STRBUF_INIT,
		      ch = STRBUF_INIT;
	test_src_path(&root, "tests/scenarios/kernel-clean/root");
	strbuf_addf(&gc, "%s/grandchild.pid", tmp);
	strbuf_addf(&ch, "%s/child.pid", tmp);
	strbuf_addf(&body, "setsid sleep 60 &\necho $! > '%s.new'\nmv '%s.new' '%s'\n"
			   "echo $$ > '%s.new'\nmv '%s.new' '%s'\nsleep 60\n",
		    gc.buf, gc.buf, gc.buf, ch.buf, ch.buf, ch.buf);
	const char *dir = test_script("slow-scontrol", body.buf);
	strbuf_addf(&set, "slurm.scontrol=%s/slow-scontrol", dir);
	const char *args[] = { "check", "--root", root.buf, "--only", "kernel", "--slurm", "-c",
			       set.buf, "-c", "slurm.timeout=20", "--host", "n1", NULL };
	const char *argv[32], *envv[8];
	struct child c;
	start_vigil(&c, argv, args, envv, NULL);
	long child = wait_for_pid_in(ch.buf, &c), grandchild = wait_for_pid_in(gc.buf, &c);
	CHECK_INT(kill(c.pid, SIGTERM), 0);
	wait_vigil(&c);
	CHECK_MSG(c.exited && c.exit_code == 143, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "vigil check: interrupted by SIGTERM");
	CHECK_MSG(process_gone(child), "scontrol %ld still runs", child);
	CHECK_MSG(process_gone(grandchild), "scontrol's setsid child %ld still runs", grandchild);
	if (!process_gone(grandchild))
		kill((pid_t)grandchild, SIGKILL);
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&set);
	strbuf_release(&body);
	strbuf_release(&gc);
	strbuf_release(&ch);
}

/* A child is asked first (TERM, so a forked check removes the state file it is writing and a
 * program may tidy up), then killed. */
TEST(check_on_term_asks_its_children_to_stop_before_killing_them)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, set = STRBUF_INIT, body = STRBUF_INIT, ch = STRBUF_INIT,
		      got = STRBUF_INIT;
	test_src_path(&root, "tests/scenarios/kernel-clean/root");
	strbuf_addf(&ch, "%s/child.pid", tmp);
	strbuf_addf(&got, "%s/got-term", tmp);
	strbuf_addf(&body, "trap 'echo term > \"%s\"; exit 0' TERM\necho $$ > '%s.new'\n"
			   "mv '%s.new' '%s'\nsleep 60 &\nwait\n",
		    got.buf, ch.buf, ch.buf, ch.buf);
	const char *dir = test_script("polite-scontrol", body.buf);
	strbuf_addf(&set, "slurm.scontrol=%s/polite-scontrol", dir);
	const char *args[] = { "check", "--root", root.buf, "--only", "kernel", "--slurm", "-c",
			       set.buf, "-c", "slurm.timeout=20", "--host", "n1", NULL };
	const char *argv[32], *envv[8];
	struct child c;
	start_vigil(&c, argv, args, envv, NULL);
	long child = wait_for_pid_in(ch.buf, &c);
	CHECK_INT(kill(c.pid, SIGTERM), 0);
	wait_vigil(&c);
	CHECK_MSG(c.exited && c.exit_code == 143, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_MSG(process_gone(child), "scontrol %ld still runs", child);
	struct strbuf sb = STRBUF_INIT;
	CHECK_MSG(read_file_bounded(got.buf, &sb, 64, NULL) == READ_OK, "scontrol was killed "
		  "without being asked (no '%s')", got.buf);
	CHECK_STR(sb.buf, "term\n");
	strbuf_release(&sb);
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&set);
	strbuf_release(&body);
	strbuf_release(&ch);
	strbuf_release(&got);
}

/*
 * Non-root on a read-only system with no usable home (bubblewrap, uid 65534): the checks run
 * without a state directory, a warning says so by name, and the exit is the verdict's, not 2.
 */
TEST(check_without_a_writable_state_dir_warns_and_exits_by_the_verdict)
{
	struct strbuf klog = STRBUF_INIT;
	test_src_path(&klog, "tests/scenarios/kernel-clean/root");
	strbuf_addstr(&klog, "/dev/kmsg");
	if (access("/usr/bin/bwrap", X_OK) != 0)
		SKIP("no /usr/bin/bwrap");
	const char *args[] = { "/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc",
			       "/proc", "--unshare-user", "--uid", "65534", "--setenv", "HOME",
			       "/nonexistent", "--", test_vigil_bin(), "check", "--only", "kernel",
			       "--kernel-log", klog.buf, "--json", NULL };
	char nvml_env[1024];
	snprintf(nvml_env, sizeof(nvml_env), "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
	const char *env[] = { nvml_env, "VIGIL_STATE_DIR=", "VIGIL_CONFIG=/dev/null", NULL };
	struct child c;
	child_init(&c);
	c.argv = args;
	c.env_add = env;
	c.timeout_ms = 30000;
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(child_run(&c, &err), 0);
	if (c.exited && c.exit_code != 0 && strstr(c.err.buf, "bwrap:"))
		SKIP("bubblewrap cannot make a user namespace here");
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "\"state_not_kept\"");
	CHECK_CONTAINS(c.out.buf, "no state directory: readings are not kept between runs");
	CHECK_CONTAINS(c.out.buf, "/var/lib/vigil");
	CHECK_CONTAINS(c.out.buf, "cannot create directory '/nonexistent");
	child_release(&c);
	strbuf_release(&err);
	strbuf_release(&klog);
}

/* A chosen state directory someone else controls (theirs, through a link, or writable by all
 * without the sticky bit) could feed vigil forged readings: refused before any check. */
TEST(check_refuses_a_state_dir_another_user_controls)
{
	if (geteuid() != 0)
		SKIP("needs root to make a directory of another user");
	const char *tmp = test_tmpdir();
	struct strbuf klog = STRBUF_INIT, theirs = STRBUF_INIT, link = STRBUF_INIT,
		      open_dir = STRBUF_INIT, sticky = STRBUF_INIT;
	test_src_path(&klog, "tests/scenarios/kernel-clean/root");
	strbuf_addstr(&klog, "/dev/kmsg");
	strbuf_addf(&theirs, "%s/theirs", tmp);
	strbuf_addf(&link, "%s/link", tmp);
	strbuf_addf(&open_dir, "%s/open", tmp);
	strbuf_addf(&sticky, "%s/sticky", tmp);
	CHECK_INT(mkdir(theirs.buf, 0755), 0);
	CHECK_INT(chown(theirs.buf, 65534, 65534), 0);
	CHECK_INT(symlink(theirs.buf, link.buf), 0);
	CHECK_INT(mkdir(open_dir.buf, 0755), 0);
	CHECK_INT(chmod(open_dir.buf, 0777), 0);
	CHECK_INT(mkdir(sticky.buf, 0755), 0);
	CHECK_INT(chmod(sticky.buf, 01777), 0);
	const struct {
		const char *dir, *want;
	} cases[] = {
		{ theirs.buf, "it belongs to uid 65534, not to uid 0 or root" },
		{ link.buf, "it belongs to uid 65534" },
		{ open_dir.buf, "others may write to it (mode 777)" },
		{ sticky.buf, NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *args[] = { "check", "--only", "kernel", "--kernel-log", klog.buf,
				       "--state-dir", cases[i].dir, "--reason", NULL };
		struct child c;
		test_run_vigil(&c, args, NULL);
		if (cases[i].want) {
			CHECK_MSG(c.exit_code == 2, "%s: exit %d", cases[i].dir, c.exit_code);
			CHECK_CONTAINS(c.err.buf, "refusing state directory '");
			CHECK_CONTAINS(c.err.buf, cases[i].want);
		} else {
			CHECK_MSG(c.exit_code == 0, "%s: exit %d: %s", cases[i].dir, c.exit_code,
				  c.err.buf);
		}
		child_release(&c);
	}
	strbuf_release(&klog);
	strbuf_release(&theirs);
	strbuf_release(&link);
	strbuf_release(&open_dir);
	strbuf_release(&sticky);
}

#include "../../src/cmd/completion.h" /* comp_table: every command path, for the help tests */

/* Terminal columns of a line: one a character (UTF-8 lead bytes), none for colour escapes. */
static size_t line_cols(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\033') {
			while (i < n && s[i] != 'm')
				i++;
			continue;
		}
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	}
	return c;
}

static size_t widest_line(const char *text)
{
	size_t w = 0;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		size_t c = line_cols(p, n);
		w = c > w ? c : w;
		p += n;
		p += *p == '\n';
	}
	return w;
}

/* 'vigil help': every summary starts in one column, subcommands and all, within 80 columns
 * (it broke at 'diagnose steps|stragglers|...' and 'fabric ufm|links|burnin'). */
TEST(cli_help_columns_line_up)
{
	const char *args[] = { "help", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0);
	const char *p = strstr(c.out.buf, "Commands:\n");
	CHECK(p != NULL);
	size_t col = 0, rows = 0;
	for (p = p ? p + 10 : ""; *p && *p != '\n';) {
		size_t n = strcspn(p, "\n");
		size_t at = strspn(p, " ");
		if (at == 2) {
			/* a command row: the name, then the summary's column */
			at += strcspn(p + at, " ");
			at += strspn(p + at, " ");
			rows++;
		}
		if (!col)
			col = at;
		CHECK_MSG(at == col, "column %zu, not %zu, in: %.*s", at, col, (int)n, p);
		p += n;
		p += *p == '\n';
	}
	CHECK_INT((int)rows, (int)cmd_table_nr);
	CHECK_CONTAINS(c.out.buf, "steps | stragglers | logs | hang");
	CHECK_MSG(widest_line(c.out.buf) <= 80, "a line of %zu columns:\n%s",
		  widest_line(c.out.buf), c.out.buf);
	child_release(&c);
}

/* 'vigil help A B C' is the page of 'vigil A B C --help', to every depth ('help fabric burnin
 * plan' printed the generic fabric page). */
TEST(cli_help_of_a_sub_subcommand_is_its_own_page)
{
	size_t deep = 0;
	for (size_t i = 0; i < comp_table_nr; i++) {
		const char *path = comp_table[i].path;
		const char *sp = strchr(path, ' ');
		if (!sp || !strchr(sp + 1, ' '))
			continue;
		deep++;
		char buf[128];
		const char *words[8];
		size_t n = 0;
		strlcpy_v(buf, path, sizeof(buf));
		words[n++] = "help";
		for (char *w = buf; *w && n < 6;) {
			words[n++] = w;
			w += strcspn(w, " ");
			if (*w)
				*w++ = '\0';
		}
		words[n] = NULL;
		struct child via, direct;
		test_run_vigil(&via, words, NULL);
		words[n++] = "--help";
		words[n] = NULL;
		test_run_vigil(&direct, words + 1, NULL);
		CHECK_INT(via.exit_code, 0);
		CHECK_INT(direct.exit_code, 0);
		CHECK_MSG(!strcmp(via.out.buf, direct.out.buf), "'vigil help %s' is not 'vigil %s "
			  "--help':\n%s\n---\n%s", path, path, via.out.buf, direct.out.buf);
		child_release(&via);
		child_release(&direct);
	}
	CHECK(deep >= 3);
	const char *plan[] = { "help", "fabric", "burnin", "plan", NULL };
	struct child c;
	test_run_vigil(&c, plan, NULL);
	CHECK(starts_with(c.out.buf, "usage: vigil fabric burnin plan"));
	child_release(&c);
}

/* 'config' is a help topic, not a command: asking it for help says where help is. */
TEST(cli_config_is_a_help_topic_not_a_command)
{
	const char *args[] = { "config", "--help", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "'config' is not a command");
	CHECK_CONTAINS(c.err.buf, "-c SECTION.KEY=VALUE");
	CHECK_CONTAINS(c.err.buf, "'vigil help config'");
	child_release(&c);
	const char *help[] = { "help", "config", NULL };
	test_run_vigil(&c, help, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "kernel.window");
	child_release(&c);
}

/* The table fits COLUMNS, cutting summaries with an ellipsis but keeping the action; without
 * a terminal and without COLUMNS nothing is cut (a script reads every word). */
TEST(cli_check_table_fits_columns)
{
	const char *dir = test_tmpdir();
	const char *args[] = { "check", "--root", dir, "--verbose", NULL };
	const char *wide[] = { "COLUMNS=", NULL };
	struct child c;
	test_run_vigil(&c, args, wide);
	size_t full = widest_line(c.out.buf);
	CHECK_MSG(full > 80, "no line over 80 columns to cut:\n%s", c.out.buf);
	CHECK_NOT_CONTAINS(c.out.buf, "\xe2\x80\xa6");
	struct strbuf uncut = STRBUF_INIT;
	strbuf_add(&uncut, c.out.buf, c.out.len);
	int code = c.exit_code;
	child_release(&c);
	const char *cols[][2] = { { "COLUMNS=80", NULL }, { "COLUMNS=120", NULL } };
	const size_t limit[] = { 80, 120 };
	for (size_t i = 0; i < ARRAY_SIZE(cols); i++) {
		test_run_vigil(&c, args, cols[i]);
		CHECK_INT(c.exit_code, code);
		CHECK_MSG(widest_line(c.out.buf) <= limit[i], "%s: a line of %zu columns:\n%s",
			  cols[i][0], widest_line(c.out.buf), c.out.buf);
		if (full > limit[i])
			CHECK_CONTAINS(c.out.buf, "\xe2\x80\xa6");
		CHECK_CONTAINS(c.out.buf, "verdict: ");
		/* the actions stay whole */
		CHECK_INT((int)(strstr(c.out.buf, "-> ") ? 1 : 0),
			  (int)(strstr(uncut.buf, "-> ") ? 1 : 0));
		child_release(&c);
	}
	/* colour escapes take no columns */
	const char *color[] = { "check", "--root", dir, "--verbose", "--color", "always", NULL };
	const char *c80[] = { "COLUMNS=80", NULL };
	test_run_vigil(&c, color, c80);
	CHECK(strchr(c.out.buf, '\033'));
	CHECK(widest_line(c.out.buf) <= 80);
	child_release(&c);
	strbuf_release(&uncut);
}
