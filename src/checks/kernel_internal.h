/*
 * kernel_internal.h: what the kernel check's files share (not an API: see kernel.h).
 * kernel_gather.c holds the configuration, reads the log and runs the check; kernel.c groups the
 * events and judges GPU faults and the rest; kernel_hw.c judges host hardware errors from the
 * log (EDAC, machine checks, GHES, AER); edac.c reads and judges the EDAC counters in sysfs.
 */
#ifndef VIGIL_CHECK_KERNEL_INTERNAL_H
#define VIGIL_CHECK_KERNEL_INTERNAL_H

#include "kernel.h"

struct group {
	const struct kmsg_event *first, *last;
	size_t last_idx;
	uint64_t count;  /* occurrences */
	uint64_t recent; /* occurrences within the window, in this boot */
	int merged;      /* OFF_BUS folded into an Xid 79 group: its index; else -1 */
	size_t finding;  /* index of the finding made for it, SIZE_MAX if none */
};

struct gpu_mark {
	const char *bdf;
	const char *uuid;
	long clear_idx; /* last reset marker for this GPU, -1 if none */
};

struct eval {
	const struct kernel_input *in;
	const struct kernel_config *kc;
	struct check_result *res;
	struct group *g;
	size_t nr_g, alloc_g;
	uint32_t *slots; /* hash table of groups: index + 1, 0 empty */
	size_t nr_slots; /* a power of two, at least twice the events */
	struct gpu_mark *gpus;
	size_t nr_gpus, alloc_gpus;
	long last_boot_idx;
	uint64_t ignored, unknown_nvrm, app_xids;
};

enum age { AGE_KNOWN, AGE_UNKNOWN, AGE_OLD_BOOT };

/* kernel_gather.c */
void add_name(struct strbuf *sb, const char *s);

/* kernel.c */
enum age event_age(const struct eval *e, const struct kmsg_event *ev, double *age);
bool is_recent(const struct eval *e, const struct kmsg_event *ev);
void add_duration(struct strbuf *sb, double s);
void detail_time(struct finding *f, const char *key, const struct kmsg_event *ev);
void gpu_device(struct strbuf *sb, struct eval *e, const char *bdf);
void group_details(struct eval *e, struct finding *f, const struct group *g, const char *state);
const char *fault_state(struct eval *e, const struct group *g, bool sticky, struct strbuf *why);
void message_tail(struct strbuf *msg, uint64_t count, const char *state, enum action act,
		  enum status st);

/* kernel_hw.c: one group of EDAC, MCE, GHES or AER events into a finding */
void kernel_eval_hw(struct eval *e, struct group *g);

#endif
