/* help.c: 'vigil help', 'vigil version' and 'vigil list'. */
#include "cmd.h"
#include "../checks/check.h"

int cmd_help(int argc, char **argv)
{
	if (argc >= 2 && !is_help_arg(argv[1])) {
		for (size_t i = 0; i < cmd_table_nr; i++) {
			if (!strcmp(cmd_table[i].name, argv[1])) {
				char *h[] = { argv[1], "--help", NULL };
				return cmd_table[i].fn(2, h);
			}
		}
		fprintf(stderr, "vigil help: no command '%s'\n", argv[1]);
		return EXIT_USAGE;
	}
	printf("usage: vigil [--version] [--help] <command> [<args>]\n\n"
	       "vigil keeps GPU training hosts honest: one verdict per host, findings with the\n"
	       "action to take, and outputs for Slurm, Prometheus and node-problem-detector.\n\n"
	       "Commands:\n");
	for (size_t i = 0; i < cmd_table_nr; i++)
		printf("  %-10s %s\n", cmd_table[i].name, cmd_table[i].summary);
	printf("\nExit status (every command):\n"
	       "  0  healthy        1  unhealthy\n"
	       "  2  usage error    3  could not tell (a check unknown or timed out, none failed)\n"
	       "\nSee 'vigil <command> --help' or 'man vigil-check'.\n");
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
