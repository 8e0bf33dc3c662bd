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

struct cmd_def {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};
extern const struct cmd_def cmd_table[];
extern const size_t cmd_table_nr;

/* Shared helpers for commands. */
void usage_error(const char *cmd, const char *fmt, ...) PRINTF_LIKE(2, 3);
bool is_help_arg(const char *a);

#endif
