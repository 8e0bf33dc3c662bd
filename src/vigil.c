/*
 * vigil.c: entry point and the command table (like git.c). A command is one row here and one
 * file under src/cmd/.
 */
#include "cmd/cmd.h"

#include <signal.h>
#include <stdarg.h>

const struct cmd_def cmd_table[] = {
	{ "check", cmd_check, "is this host fit to train? one verdict from the passive checks" },
	{ "gather", cmd_gather, "copy what vigil reads from this host into a fixture directory" },
	{ "agent", cmd_agent, "per-host daemon: checks on an interval, /metrics, /health, cache" },
	{ "stress", cmd_stress, "active GPU tests: verified GEMM, HBM, memory (takes the GPUs)" },
	{ "net", cmd_net, "active NVLink/NCCL tests: collectives, GPU pair bandwidth" },
	{ "fleet", cmd_fleet, "vigil check on every node of a Slurm cluster through srun" },
	{ "list", cmd_list, "list the checks and what each one looks at" },
	{ "help", cmd_help, "show help for vigil or a command" },
	{ "version", cmd_version, "print vigil's version" },
};
const size_t cmd_table_nr = ARRAY_SIZE(cmd_table);

void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "vigil %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'vigil %s --help'.\n", cmd);
}

bool is_help_arg(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h");
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		char *h[] = { "help", NULL };
		cmd_help(1, h);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (is_help_arg(name))
		name = "help";
	else if (!strcmp(name, "--version"))
		name = "version";
	for (size_t i = 0; i < cmd_table_nr; i++)
		if (!strcmp(cmd_table[i].name, name))
			return cmd_table[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "vigil: '%s' is not a vigil command. See 'vigil help'.\n", argv[1]);
	return EXIT_USAGE;
}
