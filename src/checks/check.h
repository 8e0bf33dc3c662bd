/*
 * check.h: the check interface (the finding model is core/finding.h).
 *
 * A check has two halves, as in NHC: gather() is the only step that touches the system and fills a
 * plain struct of readings; evaluate() is pure and turns readings into findings. Each check file
 * exposes both (see its header) and one run() entry that the registry table lists.
 */
#ifndef VIGIL_CHECK_H
#define VIGIL_CHECK_H

#include "../lib/strbuf.h"
#include "../lib/config.h"
#include "../core/finding.h"
#include "../sys/fsroot.h"

struct check_ctx {
	/* The host to read: fsroot_host, or the --root fixture the command layer opened (never
	 * NULL). Every read in a gather() goes through it. */
	const struct fsroot *root;
	const struct config *cfg;
	const char *host;
	const char *state_dir;  /* where checks keep readings between runs; may be NULL */
	const char *kernel_log; /* --kernel-log FILE, or NULL for /dev/kmsg under the root */
	double now;             /* wall-clock seconds at the start of the run */
	unsigned timeout_ms;    /* this check's deadline, set by the runner (0: none known) */
	/* `vigil check` only: the agent's socket, where the gpu check first asks for a fresh NVML
	 * reading (gpu_agent.h); NULL: read NVML here (the agent's own workers, tests). */
	const char *agent_socket;
};

struct check_def {
	const char *name;
	const char *summary;
	unsigned timeout_ms; /* default deadline; config "<name>.timeout" (seconds) overrides */
	/* Gather and evaluate; return 0, or -1 with *err when the check could not run at all. */
	int (*run)(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);
};

extern const struct check_def check_table[];
extern const size_t check_table_nr;
const struct check_def *check_find(const char *name);

#endif
