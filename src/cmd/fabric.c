/*
 * fabric.c: 'vigil fabric', keeping the InfiniBand fabric honest: the fabric manager's event
 * log (ufm), the link survey (links) and the burn-in of every link (burnin plan|run). This
 * file only dispatches; each subcommand parses, prints and picks its exit code in its own file
 * (fabric_ufm.c, fabric_links.c, fabric_burnin.c, fabric_burnin_run.c) and its parsers and
 * decisions live, pure, under src/fabric/.
 */
#include "cmd.h"
#include "fabric.h"

static const char fabric_usage[] =
	"usage: vigil fabric <ufm|links|burnin> ... [options]\n"
	"\n"
	"  vigil fabric ufm FILE... [--state DIR]     the fabric manager's event log: ports to\n"
	"                                             disable, tickets, ports to re-enable, incidents\n"
	"  vigil fabric ufm close TICKET --state DIR  close a ticket (its ports may be re-enabled)\n"
	"  vigil fabric links FILE                    iblinkinfo / ibnetdiscover: ports down, links\n"
	"                                             narrower or slower than the fabric, odd ends\n"
	"  vigil fabric burnin plan FILE              stages of host pairs covering every switch link\n"
	"  vigil fabric burnin run PLAN               run a plan's stages through srun, judge each link\n"
	"\n"
	"'vigil fabric SUBCOMMAND --help' tells more. Exit: 0 nothing to act on, 1 something to act\n"
	"on, 2 usage error, 3 could not tell (input missing, unreadable or not understood).\n";

int cmd_fabric(int argc, char **argv)
{
	if (argc < 2 || is_help_arg(argv[1])) {
		if (argc < 2) {
			usage_error("fabric", "what? (ufm, links or burnin)");
			return EXIT_USAGE;
		}
		fputs(fabric_usage, stdout);
		return EXIT_HEALTHY;
	}
	if (!strcmp(argv[1], "ufm"))
		return cmd_fabric_ufm(argc - 1, argv + 1);
	if (!strcmp(argv[1], "links"))
		return cmd_fabric_links(argc - 1, argv + 1);
	if (!strcmp(argv[1], "burnin")) {
		if (argc < 3) {
			usage_error("fabric burnin", "what? (plan or run)");
			return EXIT_USAGE;
		}
		if (is_help_arg(argv[2])) {
			fputs(fabric_usage, stdout);
			return EXIT_HEALTHY;
		}
		if (!strcmp(argv[2], "plan"))
			return cmd_fabric_burnin_plan(argc - 2, argv + 2);
		if (!strcmp(argv[2], "run"))
			return cmd_fabric_burnin_run(argc - 2, argv + 2);
		usage_error("fabric burnin", "no subcommand '%s' (there are: plan, run)", argv[2]);
		return EXIT_USAGE;
	}
	usage_error("fabric", "no subcommand '%s' (there are: ufm, links, burnin)", argv[1]);
	return EXIT_USAGE;
}
