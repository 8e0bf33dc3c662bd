/*
 * system.h: the 'system' check: the host around the GPUs: GPUDirect RDMA module, NVSwitch fabric
 * manager, CPU frequency governor, swap, available memory (see system.c, docs/checks-host.md).
 */
#ifndef VIGIL_CHECK_SYSTEM_H
#define VIGIL_CHECK_SYSTEM_H

#include "check.h"

#define SYSTEM_FM_COMM "nv-fabricmanage" /* "nv-fabricmanager" cut to the kernel's 15 chars */

struct system_governor {
	char name[32];
	size_t cpus;
};

/*
 * What gather() saw. Each *_error is "" when its value could be read, else why not (naming the
 * file): evaluate() makes that unknown, never "no swap" or "no NVSwitches".
 */
struct system_readings {
	bool peermem;            /* nvidia_peermem (or the older nv_peer_mem) is loaded */
	char peermem_module[32]; /* which one */
	char peermem_error[192]; /* /sys/module/... could not be looked at */
	size_t nvswitches;       /* NVIDIA PCI devices of class 0x0680 */
	char nvswitch_error[192]; /* the bus or a device's identity unreadable: count unsure */
	bool proc_listed;        /* /proc could be listed */
	bool fabricmanager;      /* a process named nv-fabricmanager runs */
	size_t proc_unreadable;  /* processes whose comm existed but could not be read */
	char cpu_error[192];     /* the CPU directory could not be listed */
	size_t cpus;             /* cpuN directories */
	size_t cpufreq;          /* of which with a readable scaling_governor */
	struct system_governor *governors; /* distinct scaling_governor values (grows) */
	size_t nr_governors, alloc_governors;
	size_t governor_unreadable; /* CPUs whose scaling_governor exists but is unreadable */
	char governor_error[192];   /* the first of those */
	double *freq_ratio;      /* scaling_cur_freq / cpuinfo_max_freq per CPU that has both */
	size_t nr_freq, alloc_freq;
	size_t freq_unreadable;  /* CPUs whose frequency files exist but are unreadable or junk */
	char freq_error[192];
	bool swaps_read;         /* /proc/swaps read and understood */
	char swaps_error[192];   /* it exists but could not be read or understood */
	size_t swap_devices;
	uint64_t swap_kb;
	char swap_first[128];    /* the first swap device, for the message (raw: quote it) */
	bool meminfo_read;       /* /proc/meminfo read, MemTotal and MemAvailable understood */
	char meminfo_error[192];
	uint64_t mem_total_kb, mem_avail_kb;
};

enum swap_policy { SWAP_ALLOWED, SWAP_WARN, SWAP_FAIL };

struct system_options {
	bool peermem_required;
	char governor[32];     /* expected governor; "" when any will do */
	double min_freq_ratio; /* 0: frequencies are only reported */
	enum swap_policy swap;
	double min_available;  /* percent of MemTotal; 0: not checked */
};

int system_options_load(const struct config *cfg, struct system_options *opt, struct strbuf *err);
/* Read everything; what cannot be read is said in r. 0 (err is for the interface). */
int system_gather(const struct fsroot *root, struct system_readings *r, struct strbuf *err);
/* Parse /proc/meminfo and /proc/swaps text into r: *_read, or *_error saying what is wrong. */
void system_parse_meminfo(struct system_readings *r, const char *text);
void system_parse_swaps(struct system_readings *r, const char *text);
/* Pure: findings for the readings. */
void system_evaluate(const struct system_readings *r, const struct system_options *opt,
		     struct check_result *res);
void system_readings_release(struct system_readings *r);

int check_system_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
