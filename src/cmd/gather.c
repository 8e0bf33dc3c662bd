/* gather.c: 'vigil gather DIR', a fixture of this host (filled in by the gather issue work). */
#include "cmd.h"

int cmd_gather(int argc, char **argv)
{
	if (argc >= 2 && is_help_arg(argv[1])) {
		printf("usage: vigil gather DIR\n\nCopy what vigil reads from this host into DIR.\n");
		return EXIT_HEALTHY;
	}
	fprintf(stderr, "vigil gather: not implemented yet\n");
	return EXIT_UNKNOWN;
}
