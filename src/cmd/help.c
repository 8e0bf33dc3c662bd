/* help.c: 'vigil help', 'vigil version' and 'vigil list'. */
#include "cmd.h"
#include "../checks/check.h"
#include "../lib/strbuf.h"
#include "config_keys.h"

static bool reads(const struct config_key *k, const char *cmd)
{
	size_t n = strlen(cmd);
	for (const char *p = k->commands; (p = strstr(p, cmd)); p += n)
		if ((p == k->commands || p[-1] == ' ') && (!p[n] || p[n] == ' '))
			return true;
	return false;
}

/* "vigil help config [COMMAND]": every key (of COMMAND), what it takes and what it means,
 * from the schema that validates them. */
static int help_config(const char *cmd)
{
	if (cmd && !cmd_find(cmd)) {
		fprintf(stderr, "vigil help: no command '%s'\n", cmd);
		return EXIT_USAGE;
	}
	printf("usage: vigil help config [<command>]\n\n"
	       "Configuration keys%s%s: /etc/vigil/vigil.conf (git-config style: [section], then\n"
	       "key = value; [section \"host-pattern\"] applies on matching hosts) or -c "
	       "section.key=value.\nAn unknown key or a value out of range is a usage error "
	       "(exit 2).\n\n",
	       cmd ? " read by vigil " : "", cmd ? cmd : "");
	const struct config_key *const tables[] = { config_keys_fixed, config_keys_per_check };
	const size_t sizes[] = { config_keys_fixed_nr, config_keys_per_check_nr };
	for (size_t t = 0; t < ARRAY_SIZE(tables); t++) {
		for (size_t i = 0; i < sizes[t]; i++) {
			const struct config_key *k = &tables[t][i];
			if (cmd && !reads(k, cmd))
				continue;
			struct strbuf what = STRBUF_INIT;
			if (!strcmp(k->name, "check.skip"))
				strbuf_addstr(&what, "a list of check names");
			else
				config_key_describe(k, &what);
			printf("%s (%s%s%s)\n    %s\n", k->name, what.buf,
			       k->flags & CONFIG_LIST ? "; repeatable" : "",
			       k->flags & CONFIG_HOST_ONLY ? "; not from a --root fixture" : "",
			       k->help);
			strbuf_release(&what);
		}
	}
	return EXIT_HEALTHY;
}

/* "vigil help CMD [SUB...]" is "vigil CMD [SUB...] --help", through the same dispatch, so
 * that both print the same page ("help fabric burnin plan" too). */
static int help_for(int argc, char **argv)
{
	char *h[8];
	int n = 0;
	for (int i = 1; i < argc && n < (int)ARRAY_SIZE(h) - 2; i++)
		if (!is_help_arg(argv[i]))
			h[n++] = argv[i];
	h[n++] = "--help";
	h[n] = NULL;
	if (!cmd_find(argv[1])) {
		const char *names[32];
		size_t nr = 0;
		for (size_t i = 0; i < cmd_table_nr && nr < ARRAY_SIZE(names); i++)
			names[nr++] = cmd_table[i].name;
		const char *near = cmd_suggest(argv[1], names, nr);
		fprintf(stderr, "vigil help: no command '%s'", argv[1]);
		if (near)
			fprintf(stderr, "; did you mean '%s'?", near);
		fputc('\n', stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help"))
		return cmd_help(1, h);
	return cmd_dispatch(n, h);
}

/* text from column col, its words wrapped before column 80 and continued at col */
static void print_wrapped(const char *text, size_t col)
{
	size_t at = col;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, " ");
		if (at > col && at + 1 + n > 79) {
			printf("\n%*s", (int)col, "");
			at = col;
		} else if (at > col) {
			putchar(' ');
			at++;
		}
		printf("%.*s", (int)n, p);
		at += n;
		p += n;
		p += strspn(p, " ");
	}
	putchar('\n');
}

/* Every command, its summary in one column; the subcommands on a line of their own below, so
 * that a long list of them does not push the column out. */
static void list_commands(void)
{
	size_t w = 0;
	for (size_t i = 0; i < cmd_table_nr; i++)
		w = strlen(cmd_table[i].name) > w ? strlen(cmd_table[i].name) : w;
	for (size_t i = 0; i < cmd_table_nr; i++) {
		const struct cmd_def *c = &cmd_table[i];
		printf("  %-*s  ", (int)w, c->name);
		print_wrapped(c->summary, w + 4);
		if (!c->subcommands)
			continue;
		struct strbuf subs = STRBUF_INIT;
		strbuf_addstr(&subs, "subcommands:");
		for (size_t j = 0; c->subcommands[j]; j++)
			strbuf_addf(&subs, "%s%s", j ? " | " : " ", c->subcommands[j]);
		printf("%*s", (int)w + 4, "");
		print_wrapped(subs.buf, w + 4);
		strbuf_release(&subs);
	}
}

int cmd_help(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "config"))
		return help_config(argc >= 3 && !is_help_arg(argv[2]) ? argv[2] : NULL);
	if (argc >= 2 && !is_help_arg(argv[1]))
		return help_for(argc, argv);
	printf("usage: vigil [--version] [--help] <command> [<args>]\n"
	       "       vigil help <command> [<subcommand>]\n"
	       "       vigil help config [<command>]   every configuration key\n\n"
	       "vigil keeps GPU training hosts honest: one verdict per host, findings with the\n"
	       "action to take, and outputs for Slurm, Prometheus and node-problem-detector.\n\n"
	       "Commands:\n");
	list_commands();
	/* what the flags say, in one sentence each */
	static const struct {
		unsigned flag;
		const char *what;
	} notes[] = {
		{ CMD_NEEDS_ROOT, "run as root for a whole answer (the kernel log, devices)" },
		{ CMD_TAKES_GPUS, "take the GPUs: never beside a training job" },
		{ CMD_TAKES_ROOT, "judge a fixture directory with --root DIR" },
	};
	putchar('\n');
	for (size_t k = 0; k < ARRAY_SIZE(notes); k++) {
		struct strbuf who = STRBUF_INIT;
		for (size_t i = 0; i < cmd_table_nr; i++)
			if (cmd_table[i].flags & notes[k].flag)
				strbuf_addf(&who, "%s%s", who.len ? ", " : "", cmd_table[i].name);
		strbuf_addf(&who, ": %s.", notes[k].what);
		if (who.len > strlen(notes[k].what) + 3)
			print_wrapped(who.buf, 0);
		strbuf_release(&who);
	}
	printf("\nExit status (every command):\n"
	       "  0  healthy\n"
	       "  1  unhealthy\n"
	       "  2  usage error\n"
	       "  3  could not tell (a check unknown or timed out, none failed)\n"
	       "\nSee 'vigil help <command>', 'man vigil' or 'man vigil-<command>'.\n");
	return EXIT_HEALTHY;
}

int cmd_version(int argc, char **argv)
{
	if (argc >= 2 && is_help_arg(argv[1])) {
		printf("usage: vigil version\n\nPrint vigil's version.\n");
		return EXIT_HEALTHY;
	}
	if (argc >= 2) {
		usage_error("version", "unexpected argument '%s'", argv[1]);
		return EXIT_USAGE;
	}
	printf("vigil %s\n", VIGIL_VERSION);
	return EXIT_HEALTHY;
}

int cmd_list(int argc, char **argv)
{
	if (argc >= 2 && is_help_arg(argv[1])) {
		printf("usage: vigil list\n\nList the checks 'vigil check' runs, with their default "
		       "deadline.\n");
		return EXIT_HEALTHY;
	}
	if (argc >= 2) {
		usage_error("list", "unexpected argument '%s'", argv[1]);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < check_table_nr; i++)
		printf("%-11s %3us  %s\n", check_table[i].name, check_table[i].timeout_ms / 1000,
		       check_table[i].summary);
	return EXIT_HEALTHY;
}
