/*
 * cmd.h: the commands. Files under src/cmd/ are the only code that prints to the user and
 * decides exit codes. Every command takes (argc, argv) with argv[0] the command name.
 */
#ifndef VIGIL_CMD_H
#define VIGIL_CMD_H

#include "../lib/util.h"

/* Exit codes, the same for every command (said in --help and the man page). */
enum {
	EXIT_HEALTHY = 0,
	EXIT_UNHEALTHY = 1,
	EXIT_USAGE = 2,
	EXIT_UNKNOWN = 3,
};

int cmd_check(int argc, char **argv);
int cmd_gather(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_stress(int argc, char **argv);
int cmd_net(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_fabric(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_qualify(int argc, char **argv);

/* One run of the checks selected as 'vigil check' selects them (configuration, only, skip),
 * finished into rep (report_init'ed here), for 'vigil agent'. 0, or -1 with *err on a bad
 * setting. The host_env and lists are borrowed. */
struct host_env;
struct report;
struct strlist;
struct strbuf;
int check_collect(const struct host_env *he, const struct strlist *only,
		  const struct strlist *skip, double timeout_s, struct report *rep,
		  struct strbuf *err);

/* What a command is, for 'vigil help', the man pages and the tests that walk the table. */
enum {
	CMD_TAKES_ROOT = 1 << 0,   /* --root DIR: a fixture directory instead of this host */
	CMD_TAKES_CONFIG = 1 << 1, /* --config FILE and -c SECTION.KEY=VALUE */
	CMD_NEEDS_ROOT = 1 << 2,   /* run as root for a whole answer (kernel log, devices) */
	CMD_TAKES_GPUS = 1 << 3,   /* takes the GPUs: never beside a training job */
};

struct cmd_def {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	unsigned flags;
	/* the words that may follow the command, NULL-terminated; NULL for a command without */
	const char *const *subcommands;
};
/* The table (src/cmd/commands.c), in the order 'vigil help' lists it. */
extern const struct cmd_def cmd_table[];
extern const size_t cmd_table_nr;
const struct cmd_def *cmd_find(const char *name);
/* The nearest of names[] to want, if near enough to be a typing slip; else NULL. */
const char *cmd_suggest(const char *want, const char *const *names, size_t nr);
/* Run argv[0] of the table: an unknown command, or an unknown subcommand of one that has
 * them, is a usage error (exit 2) with the nearest name. */
int cmd_dispatch(int argc, char **argv);
/*
 * What every command gets from cmd_dispatch() (docs/vigil.1, SIGNALS): on TERM, INT or HUP,
 * every child's process group (and their orphans) killed and reaped, temporary files removed,
 * "vigil NAME: interrupted by SIGTERM" on stderr, exit 128 + the signal; SIGXFSZ and SIGPIPE
 * ignored, so a write past RLIMIT_FSIZE or to a closed pipe fails with an error the command
 * reports. A command with its own handling (agent, run) installs its handlers over these.
 */
void cmd_signals_setup(const char *name);

/* Shared helpers for commands. */
void usage_error(const char *cmd, const char *fmt, ...) PRINTF_LIKE(2, 3);
bool is_help_arg(const char *a);
/* An option's value in seconds within [min, max], by the configuration schema's one rule: 0, or
 * -1 after a usage error naming the option and the range ("--timeout wants seconds from 1 to
 * 86400, not '0.0001'"). */
int opt_seconds(const char *cmd, const char *opt, const char *arg, double min, double max,
		double *out);

#endif
