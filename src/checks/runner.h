/*
 * runner.h: runs checks, each in its own forked child under its own deadline, all at once.
 *
 * A check that hangs (a sysfs read stuck in the kernel, an NVML call that never returns) is
 * killed with its process group at its deadline and reported by name as unknown "timed out";
 * a child stuck in uninterruptible sleep is left to init rather than waited for, so the whole
 * run ends within its bound. A child that crashes is unknown too, never healthy.
 */
#ifndef VIGIL_RUNNER_H
#define VIGIL_RUNNER_H

#include "check.h"
#include "../core/report.h"

struct run_item {
	const struct check_def *def;
	unsigned timeout_ms;
};

/* Run items and append one result per item to rep, in item order. */
void checks_run(const struct check_ctx *ctx, const struct run_item *items, size_t n,
		unsigned total_timeout_ms, struct report *rep);
/* Run one check in this process (tests, fuzzing, 'vigil check --no-fork'). */
void check_run_inline(const struct check_ctx *ctx, const struct check_def *def,
		      struct check_result *res);

#endif
