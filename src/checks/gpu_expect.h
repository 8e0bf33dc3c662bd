/*
 * gpu_expect.h: how many GPUs this node is meant to have when gpu.count does not say: what
 * Slurm's configuration gives the node (slurm.conf's Gres=gpu:..., else gres.conf's Name=gpu
 * lines), read under the root (no slurmctld RPC). The gpu check compares NVML and the PCI bus
 * against it; a node that Slurm does not know has no expectation from here (the bus still gives
 * one: every NVIDIA GPU on it must be seen by NVML).
 *
 * Files read, the first slurm.conf found wins: /etc/slurm/slurm.conf, /etc/slurm-llnl/slurm.conf
 * (Debian before Slurm 20.11), /run/slurm/conf/slurm.conf and /var/spool/slurmd/conf-cache/
 * slurm.conf (configless Slurm's copies); gres.conf beside it; Include lines one level deep.
 * The node is the host name (--host, else the root's /etc/hostname) without its domain.
 *
 * Plain data; nothing to free.
 */
#ifndef VIGIL_CHECK_GPU_EXPECT_H
#define VIGIL_CHECK_GPU_EXPECT_H

#include "check.h"

enum gpu_expect_state {
	GPU_EXPECT_NONE,    /* no Slurm configuration says (note may say what was seen) */
	GPU_EXPECT_SLURM,   /* count and source hold Slurm's word */
	GPU_EXPECT_UNKNOWN, /* a configuration is there but cannot be read or parsed: why */
};

struct gpu_expect {
	enum gpu_expect_state state;
	uint64_t count;
	char source[640]; /* "Slurm Gres gpu:h100:8 for node gpu017" */
	char where[160];  /* "/etc/slurm/slurm.conf line 12" */
	char why[1200];   /* UNKNOWN: why Slurm's configuration could not tell (cleaned) */
	char note[400];   /* NONE: what was seen ("node gpu017 not in /etc/slurm/slurm.conf") */
};

/* Fill e for node host (NULL or "": nothing can be said) from the configuration under root. */
void gpu_expect_gather(const struct fsroot *root, const char *host, struct gpu_expect *e);

/* The files gpu_expect_gather() would read under root (slurm.conf, its Includes, gres.conf), for
 * 'vigil gather' to copy: paths appended to out. */
void gpu_expect_files(const struct fsroot *root, struct strlist *out);

/*
 * The count a gpu check run holds the host to: gpu.count when set (from "gpu.count"), else
 * Slurm's (from e->source). False when neither says.
 */
bool gpu_expect_count(const struct gpu_expect *e, bool count_set, uint64_t count, uint64_t *out,
		      const char **from);

/*
 * After the other findings: say that Slurm's configuration could not tell, when it could not and
 * gpu.count did not replace it. A warning beside other evidence of the GPUs (seen is the number
 * NVML or the bus showed); unknown when nothing else shows whether this host has GPUs.
 */
void gpu_expect_report(const struct gpu_expect *e, bool count_set, size_t seen,
		       struct check_result *res);

#endif
