/*
 * vigil.c: the entry point. The command table and its dispatch are in src/cmd/commands.c (like
 * git.c's table, kept in the library so that the tests can walk it).
 */
#include "cmd/cmd.h"

#include <signal.h>

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		char *h[] = { "help", NULL };
		cmd_help(1, h);
		return EXIT_USAGE;
	}
	if (is_help_arg(argv[1]))
		argv[1] = "help";
	else if (!strcmp(argv[1], "--version"))
		argv[1] = "version";
	return cmd_dispatch(argc - 1, argv + 1);
}
