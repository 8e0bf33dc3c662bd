/*
 * kernel.h: the 'kernel' check: GPU faults (Xid, SXid, off the bus), host OOM kills, PCIe links
 * that trained down, hung tasks and flapping mlx5 links, from the kernel log.
 *
 * gather (kernel_gather) reads the log whole, streaming it through the parser: --kernel-log FILE,
 * else /dev/kmsg through the root (on the host: the kmsg device, "now" = CLOCK_MONOTONIC; under
 * --root: a plain file of kmsg records, "now" = its last record). It stops at three quarters of
 * the check's deadline, and says so. A log that gives no evidence (empty, only zero bytes, not a
 * kernel log's text) fails gather with the reason naming the file, so the check is unknown, not
 * clean. evaluate (kernel_evaluate) is pure: events + now + configuration in, findings out; every
 * fault gets its finding, whatever the noise around it.
 *
 * Configuration ([kernel] section):
 *   window = 3600        seconds an application-level fault, OOM kill, hung task stays reported
 *   strict = false       report NVRM lines that are neither known faults nor known harmless
 *   allow = TEXT         (repeatable) NVRM lines containing TEXT are harmless
 *   ignore-xid = 13, 31  (list, repeatable) Xid numbers to ignore
 *   link-flaps = 3       link-down events of one mlx5 link in the window that make it flapping
 *   ce-rate = 60         corrected memory errors an hour (EDAC lines and counters) that warn
 *
 * Ownership: kernel_config and kernel_input own what they hold; release them with their
 * *_release().
 */
#ifndef VIGIL_CHECK_KERNEL_H
#define VIGIL_CHECK_KERNEL_H

#include "check.h"
#include "../lib/strlist.h"
#include "../logs/kmsg.h"

#define KERNEL_CE_RATE 60 /* corrected memory errors an hour: see docs/kernel-log.md */

struct kernel_config {
	double window;
	bool strict;
	uint64_t link_flaps;
	uint64_t ce_rate;    /* corrected memory errors an hour that warn */
	struct strlist allow;
	int *ignore_xid;
	size_t nr_ignore_xid, alloc_ignore_xid;
};

struct kernel_input {
	struct kmsg_log log;
	char *source;        /* "/dev/kmsg" or the file's path */
	bool have_now;
	enum kmsg_timebase now_tb;
	double now;          /* in now_tb */
	bool missing;        /* under --root, the fixture has no dev/kmsg */
	bool incomplete;     /* the read stopped at the deadline: only read_bytes were judged */
	uint64_t read_bytes; /* bytes read */
	uint64_t size;       /* the file's size, 0 if unknown (a device, a FIFO) */
};

/* Defaults, then the [kernel] settings of cfg (may be NULL). 0, or -1 with *err set. */
int kernel_config_load(const struct config *cfg, struct kernel_config *kc, struct strbuf *err);
void kernel_config_release(struct kernel_config *kc);

/* Read and parse the log. 0, or -1 with *err set (the check is then unknown). */
int kernel_gather(const struct check_ctx *ctx, struct kernel_input *in, struct strbuf *err);
void kernel_input_release(struct kernel_input *in);

/* Turn the events into findings (pure). */
void kernel_evaluate(const struct kernel_input *in, const struct kernel_config *kc,
		     struct check_result *res);

int check_kernel_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
