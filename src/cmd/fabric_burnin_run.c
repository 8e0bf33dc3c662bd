/*
 * fabric_burnin_run.c: 'vigil fabric burnin run' (placeholder until its implementation lands: refuses with
 * exit 2 rather than pretending).
 */
#include "cmd.h"
#include "fabric.h"

int cmd_fabric_burnin_run(int argc, char **argv)
{
	(void)argc;
	usage_error("fabric", "'%s' is not built yet", argv[0]);
	return EXIT_USAGE;
}
