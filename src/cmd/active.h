/*
 * active.h: what 'vigil stress', 'vigil net' and 'vigil check --deep' share: the output options,
 * progress on a terminal, and printing a report of active tests (a table of figures, the
 * problems, the verdict) the way 'vigil check' does. Running the helpers and the --deep sequence
 * are src/stress/engine.h's: these commands only parse, call and print.
 */
#ifndef VIGIL_CMD_ACTIVE_H
#define VIGIL_CMD_ACTIVE_H

#include "../core/report.h"
#include "../stress/engine.h"

struct active_out {
	bool json, reason, verbose;
	int color; /* -1 auto */
};

/* A descriptor for the helper's progress lines: a dup of stderr when it is a terminal (and
 * want is set), else -1. Close it with active_progress_close(). */
int active_progress_fd(bool want);
void active_progress_close(int fd);

/* Finish rep (verdict, reason), print it (JSON, the reason, or title + figures + problems +
 * verdict) and release it. Returns the exit code (the verdict's, or EXIT_UNKNOWN when stdout
 * could not be written). */
int active_finish(struct report *rep, const char *title, const char *figures,
		  const struct active_out *o);
/* The same; with --json, extra(w, arg) adds members to the top object (report_json_extra). */
int active_finish_extra(struct report *rep, const char *title, const char *figures,
			const struct active_out *o, void (*extra)(struct json_writer *, void *),
			void *arg);
/* 'vigil stress storage' (stress_storage.c). */
int cmd_stress_storage(int argc, char **argv);

/* 'vigil stress gpu --determinism' (stress_det.c): the options stress.c parsed. */
struct stress_det_opts {
	double duration, timeout;  /* timeout 0: derived from the duration or the repeats */
	unsigned repeats;          /* 0: as many as fit in the duration */
	const char *gpus, *inject, *reference;
};
struct host_env;
int stress_det_run(const struct stress_det_opts *o, struct host_env *he,
		   const struct active_out *out);

/* Output options every active command takes, for its getopt_long table. */
enum { AOPT_JSON = 1000, AOPT_REASON, AOPT_COLOR, AOPT_CONFIG, AOPT_HOST, AOPT_HOST_SLURMD };
#define ACTIVE_OUT_OPTIONS                                                                     \
	{ "json", no_argument, NULL, AOPT_JSON }, { "reason", no_argument, NULL, AOPT_REASON },  \
		{ "verbose", no_argument, NULL, 'v' },                                         \
		{ "color", required_argument, NULL, AOPT_COLOR },                              \
		{ "config", required_argument, NULL, AOPT_CONFIG },                            \
		{ "set", required_argument, NULL, 'c' },                                       \
		{ "host", required_argument, NULL, AOPT_HOST },                                \
		{ "host-from-slurmd", no_argument, NULL, AOPT_HOST_SLURMD },                   \
		{ "help", no_argument, NULL, 'h' }
#define ACTIVE_OUT_USAGE                                                                       \
	"  --config FILE       configuration file (default /etc/vigil/vigil.conf)\n"            \
	"  -c, --set SEC.KEY=VALUE  one configuration setting (repeatable)\n"                   \
	"  --host NAME         host name for per-host configuration sections and the report\n" \
	"  --host-from-slurmd  the host name is SLURMD_NODENAME (one srun step on many nodes)\n" \
	"  --json              print one JSON object (the same shape as 'vigil check --json')\n" \
	"  --reason            print only the one-line reason (at most 80 characters)\n"        \
	"  -v, --verbose       list every finding, not only problems\n"                         \
	"  --color WHEN        auto (default: on a terminal), always or never\n"                \
	"\n"                                                                                    \
	"Exit status:\n"                                                                        \
	"  0  healthy (warnings alone leave the host healthy)\n"                                \
	"  1  unhealthy: a test failed\n"                                                       \
	"  2  usage error\n"                                                                    \
	"  3  could not tell: no CUDA helpers, no GPU, or a test could not run\n"

/* 1 if a is an output option (and consumed it), 0 if not, -1 on a bad value (message printed). */
int active_out_option(const char *cmd, int c, const char *arg, struct active_out *o);

/* --host NAME or --host-from-slurmd (c AOPT_HOST or AOPT_HOST_SLURMD) into *host: 1, or -1
 * after a usage error (SLURMD_NODENAME unset or no node name); 0 for another option. */
int active_host_option(const char *cmd, int c, const char *arg, const char **host);

/* Validate a GPU list such as 0,1,4-7. */
bool active_gpu_list_ok(const char *s);
/* How many GPUs a list such as 0,1,4-7 names; 0 when it cannot be told. */
int active_gpu_list_count(const char *s);

/* 'vigil check --deep': engine_deep() with progress on a terminal if asked. */
void active_deep(const struct config *cfg, double seconds, bool progress, struct report *rep);

#endif
