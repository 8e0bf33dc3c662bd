/*
 * test_completion.c: 'vigil completion bash|zsh|fish'. bash's completion is run on real
 * prefixes (the script sourced in 'bash --norc', COMP_WORDS set, the function called); the
 * scripts in contrib/completion/ must be what vigil prints; and the options the scripts offer
 * must be the options each command's getopt table accepts (read from src/cmd/), both ways.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/run.h"
#include "../../src/checks/check.h"
#include "../../src/cmd/cmd.h"
#include "../../src/cmd/completion.h"
#include "../../src/cmd/config_keys.h"

#include <dirent.h>

/* The script of shell, as the binary prints it. */
static void script_of(const char *shell, struct strbuf *out)
{
	const char *args[] = { "completion", shell, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "completion %s exited %d: %s", shell, c.exit_code,
		  c.err.buf);
	CHECK_STR(c.err.buf, "");
	strbuf_add(out, c.out.buf, c.out.len);
	child_release(&c);
}

/* COMPREPLY, one a line, for the words (the last one is the word being completed). */
static void bash_complete(const char *script, const char *words, struct strbuf *out)
{
	struct strbuf cmd = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&cmd,
		    "source '%s' || exit 9\nCOMP_WORDS=(%s)\n"
		    "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
		    "_vigil vigil\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n",
		    script, words);
	const char *argv[] = { "bash", "--norc", "--noprofile", "-c", cmd.buf, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 10000;
	if (child_run(&c, &err) < 0)
		test_skip("no bash to run");
	CHECK_MSG(c.exited && c.exit_code == 0, "bash on '%s' exited %d: %s", words, c.exit_code,
		  c.err.buf);
	CHECK_STR(c.err.buf, "");
	strbuf_add(out, c.out.buf, c.out.len);
	child_release(&c);
	strbuf_release(&cmd);
	strbuf_release(&err);
}

static void expect_bash(const char *script, const char *words, const char *want)
{
	struct strbuf got = STRBUF_INIT;
	bash_complete(script, words, &got);
	CHECK_MSG(!strcmp(got.buf, want), "completing '%s': got '%s', want '%s'", words, got.buf,
		  want);
	strbuf_release(&got);
}

TEST(completion_bash_completes_commands_options_checks_and_keys)
{
	struct strbuf s = STRBUF_INIT, path = STRBUF_INIT, got = STRBUF_INIT, want = STRBUF_INIT;
	script_of("bash", &s);
	strbuf_addf(&path, "%s/vigil.bash", test_tmpdir());
	test_write(test_tmpdir(), "vigil.bash", s.buf);

	expect_bash(path.buf, "vigil ch", "check\n");
	expect_bash(path.buf, "vigil check --on", "--only\n");
	expect_bash(path.buf, "vigil check --only g", "gpu\n");
	expect_bash(path.buf, "vigil diagnose s", "steps\nstragglers\n");
	/* a comma list goes on after its last comma; an option's value is not a subcommand */
	expect_bash(path.buf, "vigil check --skip gpu,ker", "gpu,kernel\n");
	expect_bash(path.buf, "vigil check --only = g", "gpu\n");
	expect_bash(path.buf, "vigil agent --root /tmp --sk", "--skip\n");
	expect_bash(path.buf, "vigil check --color ''", "auto\nalways\nnever\n");
	expect_bash(path.buf, "vigil fabric burnin ''", "plan\nrun\n");
	expect_bash(path.buf, "vigil fabric burnin plan --h", "--hosts-per-stage\n--hosts\n--help\n");
	expect_bash(path.buf, "vigil help fa", "fabric\n");
	expect_bash(path.buf, "vigil help co", "completion\nconfig\n");
	expect_bash(path.buf, "vigil completion ''", "bash\nzsh\nfish\n");
	expect_bash(path.buf, "vigil net ib --no-", "--no-cuda\n--no-latency\n");

	/* -c and --set: every kernel.* key of the schema, ready for its value */
	size_t nr;
	const struct config_key *k = config_schema(&nr);
	for (size_t i = 0; i < nr; i++)
		if (starts_with(k[i].name, "kernel.") && !strpbrk(k[i].name, "*?["))
			strbuf_addf(&want, "%s=\n", k[i].name);
	CHECK(want.len > 0);
	CHECK_CONTAINS(want.buf, "kernel.window=\n");
	bash_complete(path.buf, "vigil check -c kernel.", &got);
	CHECK_STR(got.buf, want.buf);
	strbuf_reset(&got);
	bash_complete(path.buf, "vigil fleet check --set kernel.", &got);
	CHECK_STR(got.buf, want.buf);

	/* every check is offered after --only */
	strbuf_reset(&got);
	strbuf_reset(&want);
	for (size_t i = 0; i < check_table_nr; i++)
		strbuf_addf(&want, "%s\n", check_table[i].name);
	bash_complete(path.buf, "vigil check --only ''", &got);
	CHECK_STR(got.buf, want.buf);
	strbuf_release(&s);
	strbuf_release(&path);
	strbuf_release(&got);
	strbuf_release(&want);
}

/* contrib/completion/ is what 'vigil completion' prints: regenerate with
 * 'vigil completion bash > contrib/completion/vigil.bash' (_vigil for zsh, vigil.fish). */
TEST(completion_scripts_in_contrib_are_up_to_date)
{
	static const struct {
		const char *shell, *file;
	} files[] = {
		{ "bash", "contrib/completion/vigil.bash" },
		{ "zsh", "contrib/completion/_vigil" },
		{ "fish", "contrib/completion/vigil.fish" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct strbuf want = STRBUF_INIT, have = STRBUF_INIT, p = STRBUF_INIT;
		script_of(files[i].shell, &want);
		test_src_path(&p, files[i].file);
		CHECK_MSG(read_file_bounded(p.buf, &have, 1u << 20, NULL) == 0, "cannot read %s",
			  files[i].file);
		CHECK_MSG(!strcmp(have.buf, want.buf),
			  "%s differs from 'vigil completion %s': regenerate it with 'vigil "
			  "completion %s > %s'",
			  files[i].file, files[i].shell, files[i].shell, files[i].file);
		strbuf_release(&want);
		strbuf_release(&have);
		strbuf_release(&p);
	}
}

TEST(completion_usage_and_unknown_shell)
{
	struct child c;
	const char *none[] = { "completion", NULL };
	test_run_vigil(&c, none, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "bash, zsh or fish");
	child_release(&c);
	const char *tcsh[] = { "completion", "tcsh", NULL };
	test_run_vigil(&c, tcsh, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "'tcsh' is not a subcommand");
	CHECK_STR(c.out.buf, "");
	child_release(&c);
}

static const struct comp_def *comp_find(const char *path)
{
	for (size_t i = 0; i < comp_table_nr; i++)
		if (!strcmp(comp_table[i].path, path))
			return &comp_table[i];
	return NULL;
}

/* Every command and subcommand of the command table has a row, with the same subcommands. */
TEST(completion_table_follows_the_command_table)
{
	struct strbuf w = STRBUF_INIT, want = STRBUF_INIT;
	for (size_t i = 0; i < cmd_table_nr; i++) {
		const struct cmd_def *d = &cmd_table[i];
		CHECK_MSG(comp_find(d->name) != NULL, "no completion row for '%s'", d->name);
		strbuf_reset(&w);
		strbuf_reset(&want);
		comp_children(d->name, &w);
		for (size_t j = 0; d->subcommands && d->subcommands[j]; j++)
			strbuf_addf(&want, "%s%s", j ? " " : "", d->subcommands[j]);
		CHECK_MSG(!strcmp(w.buf, want.buf), "'%s': completion offers '%s', the table '%s'",
			  d->name, w.buf, want.buf);
	}
	strbuf_reset(&w);
	comp_children("", &w);
	CHECK_CONTAINS(w.buf, "check gather agent");
	strbuf_release(&w);
	strbuf_release(&want);
}

/* The long options of a getopt table from its source: "--name" or "--name=" (a value). */
static void scan_entries(const char *p, const char *end, const char *active_h, struct strbuf *out)
{
	while (p < end) {
		const char *q = strstr(p, "{ \"");
		const char *m = strstr(p, "ACTIVE_OUT_OPTIONS");
		if (m && m < end && (!q || m < q)) {
			const char *d = strstr(active_h, "#define ACTIVE_OUT_OPTIONS");
			const char *de = d ? strstr(d, "#define ACTIVE_OUT_USAGE") : NULL;
			CHECK(d && de);
			if (d && de)
				scan_entries(d + 26, de, active_h, out);
			p = m + 18;
			continue;
		}
		if (!q || q >= end)
			break;
		q += 3;
		size_t n = strcspn(q, "\"");
		const char *arg = q + n + 2;
		while (*arg == ' ')
			arg++;
		strbuf_addf(out, " --%.*s%s", (int)n, q,
			    starts_with(arg, "required_argument") ? "=" : "");
		p = q + n;
	}
}

/* The same from a completion row: its options without the value kinds, "-c=" for "-c=key". */
static void row_options(const char *opts, struct strbuf *longs, struct strbuf *shorts)
{
	for (const char *t = opts; *t;) {
		size_t n = strcspn(t, " ");
		const char *eq = memchr(t, '=', n);
		size_t nl = eq ? (size_t)(eq - t) : n;
		if (n > 2 && t[0] == '-' && t[1] == '-')
			strbuf_addf(longs, " %.*s%s", (int)nl, t, eq ? "=" : "");
		else if (t[0] == '-')
			strbuf_addf(shorts, " %.*s%s", (int)nl, t, eq ? "=" : "");
		t += n;
		t += *t == ' ';
	}
}

/* words of a space-separated list, sorted, so that two lists compare as sets */
static void sorted(struct strbuf *sb)
{
	char *w[128];
	size_t n = 0;
	for (char *p = sb->buf; *p && n < ARRAY_SIZE(w);) {
		p += strspn(p, " ");
		if (!*p)
			break;
		w[n++] = p;
		p += strcspn(p, " ");
		if (*p)
			*p++ = '\0';
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(w[j - 1], w[j]) > 0; j--) {
			char *t = w[j];
			w[j] = w[j - 1];
			w[j - 1] = t;
		}
	struct strbuf o = STRBUF_INIT;
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&o, " %s", w[i]);
	strbuf_reset(sb);
	strbuf_add(sb, o.buf, o.len);
	strbuf_release(&o);
}

/*
 * Each getopt_long() call in src/cmd/ and the completion rows of the paths it parses: the same
 * long options (and which take a value), the same short ones. A new getopt table, or a new
 * option in one, fails here until comp_table says it.
 */
TEST(completion_options_are_every_getopt_tables_options)
{
	static const struct {
		const char *file;
		const char *paths[3];
	} calls[] = {
		{ "agent.c", { "agent" } },
		{ "check.c", { "check" } },
		{ "diagnose.c", { "diagnose steps", "diagnose stragglers" } },
		{ "diagnose_logs.c", { "diagnose logs" } },
		{ "fabric_burnin.c", { "fabric burnin plan" } },
		{ "fabric_burnin_run.c", { "fabric burnin run" } },
		{ "fabric_links.c", { "fabric links" } },
		{ "fabric_ufm.c", { "fabric ufm close" } }, /* in file order */
		{ "fabric_ufm.c", { "fabric ufm" } },
		{ "fleet.c", { "fleet check" } },
		{ "fleet_model.c", { "fleet model" } },
		{ "fleet_model.c", { "fleet lemons" } },
		{ "gather.c", { "gather" } },
		{ "net.c", { "net nccl", "net pairs" } },
		{ "net.c", { "net ib" } },
		{ "report.c", { "report" } },
		{ "sim.c", { "sim" } },
		{ "qualify.c", { "qualify" } },
		{ "run.c", { "run" } },
		{ "stacks.c", { "stacks" } },
		{ "stress.c", { "stress gpu" } },
		{ "stress_storage.c", { "stress storage" } },
	};
	struct strbuf p = STRBUF_INIT, src = STRBUF_INIT, active = STRBUF_INIT;
	test_src_path(&p, "src/cmd/active.h");
	CHECK(read_file_bounded(p.buf, &active, 1u << 20, NULL) == 0);
	size_t covered = 0, seen = 0;
	DIR *d;
	strbuf_reset(&p);
	test_src_path(&p, "src/cmd");
	CHECK((d = opendir(p.buf)) != NULL);
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t nl = strlen(e->d_name);
		if (nl < 3 || strcmp(e->d_name + nl - 2, ".c"))
			continue;
		strbuf_reset(&p);
		strbuf_reset(&src);
		strbuf_addf(&p, "src/cmd/%s", e->d_name);
		struct strbuf full = STRBUF_INIT;
		test_src_path(&full, p.buf);
		CHECK(read_file_bounded(full.buf, &src, 4u << 20, NULL) == 0);
		strbuf_release(&full);
		size_t nth = 0;
		for (const char *g = src.buf; (g = strstr(g, "getopt_long(argc, argv, \""));
		     nth++) {
			seen++;
			g += 25;
			size_t ol = strcspn(g, "\"");
			const char *tn = g + ol + 3;
			size_t tl = strcspn(tn, ",");
			size_t k = 0, idx = 0;
			for (; k < ARRAY_SIZE(calls); k++)
				if (!strcmp(calls[k].file, e->d_name) && idx++ == nth)
					break;
			CHECK_MSG(
				k < ARRAY_SIZE(calls),
				"src/cmd/%s: getopt_long call %zu is not in this test's list (and "
				"its options not in comp_table, src/cmd/completion.c)",
				e->d_name, nth + 1);
			if (k == ARRAY_SIZE(calls))
				continue;
			covered++;
			/* the table: the last definition of that name before the call */
			struct strbuf def = STRBUF_INIT, gl = STRBUF_INIT, gs = STRBUF_INIT;
			strbuf_addf(&def, "struct option %.*s[] = {", (int)tl, tn);
			const char *t = NULL;
			for (const char *x = src.buf; (x = strstr(x, def.buf)) && x < g; x++)
				t = x;
			CHECK_MSG(t != NULL, "src/cmd/%s: no '%s'", e->d_name, def.buf);
			if (t)
				scan_entries(t, strstr(t, "};"), active.buf, &gl);
			for (size_t i = 0; i < ol; i++) {
				if (g[i] == '+' || g[i] == ':')
					continue;
				strbuf_addf(&gs, " -%c%s", g[i], g[i + 1] == ':' ? "=" : "");
			}
			sorted(&gl);
			sorted(&gs);
			for (size_t j = 0; j < 3 && calls[k].paths[j]; j++) {
				const struct comp_def *r = comp_find(calls[k].paths[j]);
				CHECK_MSG(r != NULL, "no completion row '%s'", calls[k].paths[j]);
				if (!r)
					continue;
				struct strbuf cl = STRBUF_INIT, cs = STRBUF_INIT;
				row_options(r->opts, &cl, &cs);
				sorted(&cl);
				sorted(&cs);
				CHECK_MSG(!strcmp(cl.buf, gl.buf),
					  "'%s': completion has%s\n  getopt (src/cmd/%s) has%s",
					  r->path, cl.buf, e->d_name, gl.buf);
				CHECK_MSG(!strcmp(cs.buf, gs.buf),
					  "'%s': completion has short%s, getopt '%.*s'", r->path,
					  cs.buf, (int)ol, g);
				strbuf_release(&cl);
				strbuf_release(&cs);
			}
			strbuf_release(&def);
			strbuf_release(&gl);
			strbuf_release(&gs);
		}
	}
	if (d)
		closedir(d);
	CHECK_INT((int)covered, (int)ARRAY_SIZE(calls));
	CHECK_INT((int)seen, (int)ARRAY_SIZE(calls));

	/* diagnose hang reads its arguments by hand: its strcmp()s are its options */
	strbuf_reset(&p);
	strbuf_reset(&src);
	test_src_path(&p, "src/cmd/diagnose_hang.c");
	CHECK(read_file_bounded(p.buf, &src, 4u << 20, NULL) == 0);
	struct strbuf gl = STRBUF_INIT, cl = STRBUF_INIT, cs = STRBUF_INIT;
	for (const char *g = src.buf; (g = strstr(g, "strcmp(argv[i], \"--")); g++) {
		size_t n = strcspn(g + 17, "\"");
		if (n > 2)
			strbuf_addf(&gl, " %.*s", (int)n, g + 17);
	}
	strbuf_addstr(&gl, " --help");
	row_options(comp_find("diagnose hang")->opts, &cl, &cs);
	sorted(&gl);
	sorted(&cl);
	CHECK_STR(cl.buf, gl.buf);
	strbuf_release(&gl);
	strbuf_release(&cl);
	strbuf_release(&cs);
	strbuf_release(&p);
	strbuf_release(&src);
	strbuf_release(&active);
}

/* The zsh and fish scripts parse, where those shells are installed (bash's runs above). */
TEST(completion_zsh_and_fish_scripts_parse)
{
	static const char *const shells[][2] = { { "zsh", "-n" }, { "fish", "--no-execute" } };
	size_t ran = 0;
	for (size_t i = 0; i < ARRAY_SIZE(shells); i++) {
		struct strbuf s = STRBUF_INIT, err = STRBUF_INIT, name = STRBUF_INIT;
		script_of(shells[i][0], &s);
		strbuf_addf(&name, "vigil.%s", shells[i][0]);
		test_write(test_tmpdir(), name.buf, s.buf);
		strbuf_reset(&name);
		strbuf_addf(&name, "%s/vigil.%s", test_tmpdir(), shells[i][0]);
		const char *argv[] = { shells[i][0], shells[i][1], name.buf, NULL };
		struct child c;
		child_init(&c);
		c.argv = argv;
		c.timeout_ms = 10000;
		if (child_run(&c, &err) == 0 && !(c.exited && c.exit_code == 127)) {
			ran++;
			CHECK_MSG(c.exited && c.exit_code == 0, "%s: %s", shells[i][0], c.err.buf);
		}
		child_release(&c);
		strbuf_release(&s);
		strbuf_release(&err);
		strbuf_release(&name);
	}
	if (!ran)
		test_skip("neither zsh nor fish is installed");
}

/* fish's own completion engine on the fish script (complete -C), where fish is installed. */
TEST(completion_fish_completes_prefixes)
{
	struct strbuf s = STRBUF_INIT, cmd = STRBUF_INIT, err = STRBUF_INIT;
	script_of("fish", &s);
	test_write(test_tmpdir(), "vigil.fish", s.buf);
	static const char *const cases[][2] = {
		{ "vigil ch", "check\t" },
		{ "vigil check --on", "--only\n" },
		{ "vigil check --only g", "gpu\n" },
		{ "vigil check --skip gpu,ke", "gpu,kernel\n" },
		{ "vigil diagnose s", "steps\nstragglers\n" },
		{ "vigil check -c kernel.w", "kernel.window=\n" },
		{ "vigil fabric burnin ", "plan\nrun\n" },
		/* after 'help': the commands (issue 23), as bash offers them */
		{ "vigil help fa", "fabric\n" },
		{ "vigil help co", "completion\nconfig\n" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		strbuf_reset(&cmd);
		strbuf_addf(&cmd, "source '%s/vigil.fish'; complete -C '%s'", test_tmpdir(),
			    cases[i][0]);
		const char *argv[] = { "fish", "--no-config", "-c", cmd.buf, NULL };
		struct child c;
		child_init(&c);
		c.argv = argv;
		c.timeout_ms = 10000;
		if (child_run(&c, &err) < 0 || (c.exited && c.exit_code == 127))
			test_skip("fish is not installed");
		CHECK_MSG(starts_with(c.out.buf, cases[i][1]), "fish on '%s': '%s', want '%s'",
			  cases[i][0], c.out.buf, cases[i][1]);
		child_release(&c);
	}
	strbuf_release(&s);
	strbuf_release(&cmd);
	strbuf_release(&err);
}

/*
 * zsh's driver on the zsh script: compadd, compset and _files stand in for zsh's completion
 * widgets (they only run inside a key press) and print what would be offered, filtered by the
 * word typed as zsh filters it; where zsh is installed.
 */
TEST(completion_zsh_completes_prefixes)
{
	static const char stub[] =
		"compdef() { :; }\n"
		"compadd() {\n"
		"\tlocal suf=\"\"\n"
		"\twhile [[ $1 == -* && $1 != -- ]]; do\n"
		"\t\tcase $1 in (-S) suf=$2; shift 2;; (*) shift;; esac\n"
		"\tdone\n"
		"\t[[ $1 == -- ]] && shift\n"
		"\tlocal w\n"
		"\tfor w in \"$@\"; do [[ $w == ${PREFIX}* ]] && print -r -- \"$IPREFIX$w$suf\"; done\n"
		"}\n"
		"compset() {\n"
		"\tcase $2 in\n"
		"\t('*,') [[ $PREFIX == *,* ]] && { IPREFIX+=${PREFIX%,*},; PREFIX=${PREFIX##*,}; } ;;\n"
		"\t('*=') IPREFIX+=${PREFIX%%=*}=; PREFIX=${PREFIX#*=} ;;\n"
		"\tesac\n"
		"}\n"
		"_files() { print -r -- \"FILES $*\"; }\n"
		"_message() { :; }\n"
		"source \"$1\"\n"
		"t() { words=(\"$@\"); CURRENT=$#; PREFIX=${words[-1]}; IPREFIX=\"\"; _vigil; print -- \"--\"; }\n"
		"t vigil ch\n"
		"t vigil check --on\n"
		"t vigil check --only g\n"
		"t vigil check --only=g\n"
		"t vigil check --skip gpu,ke\n"
		"t vigil diagnose s\n"
		"t vigil check -c kernel.w\n"
		"t vigil fabric burnin ''\n"
		"t vigil diagnose logs ''\n"
		"t vigil help fa\n"
		"t vigil help co\n";
	struct strbuf s = STRBUF_INIT, p = STRBUF_INIT, err = STRBUF_INIT;
	script_of("zsh", &s);
	test_write(test_tmpdir(), "_vigil", s.buf);
	test_write(test_tmpdir(), "stub.zsh", stub);
	strbuf_addf(&p, "%s/stub.zsh", test_tmpdir());
	struct strbuf zp = STRBUF_INIT;
	strbuf_addf(&zp, "%s/_vigil", test_tmpdir());
	const char *argv[] = { "zsh", "-f", p.buf, zp.buf, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 10000;
	if (child_run(&c, &err) < 0 || (c.exited && c.exit_code == 127))
		test_skip("zsh is not installed");
	CHECK_STR(c.err.buf, "");
	CHECK_STR(c.out.buf,
		  "check\n--\n--only\n--\ngpu\n--\n--only=gpu\n--\ngpu,kernel\n--\n"
		  "steps\nstragglers\n--\nkernel.window=\n--\nplan\nrun\n--\nFILES \n--\n"
		  "fabric\n--\ncompletion\nconfig\n--\n");
	child_release(&c);
	strbuf_release(&s);
	strbuf_release(&p);
	strbuf_release(&zp);
	strbuf_release(&err);
}
