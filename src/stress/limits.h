/*
 * limits.h: what the active tests compare against: a per-model table of expected figures, floors
 * derived from it (a fraction, configurable), per-figure overrides from the configuration, the
 * outlier margins, and the leave-one-out median that finds the GPU or link slower than its
 * siblings.
 *
 * Configuration ([stress] and [net] sections, docs/STRESS.md):
 *   stress.floor-fraction = 0.85       floor = fraction x the model's expected figure
 *   stress.floor-bf16 / -fp16 / -tf32 / -fp8 = TFLOP/s delivered over the wall clock (0: off)
 *   stress.floor-hbm-read / -hbm-write / -hbm-copy = GB/s
 *   stress.outlier-margin = 0.05      a GPU below (1 - margin) x its siblings' median fails
 *   stress.memtest-min-fraction = 0.5 tested less of the memory than this: warning
 *   net.floor-busbw = GB/s             all_reduce busbw floor at sizes >= net.floor-min-bytes
 *   net.floor-min-bytes = 1073741824
 *   net.floor-pair = GB/s              peer copy floor, one direction
 *   net.outlier-margin = 0.15          a pair below (1 - margin) x the other pairs' median fails
 *
 * Ownership: plain data.
 */
#ifndef VIGIL_STRESS_LIMITS_H
#define VIGIL_STRESS_LIMITS_H

#include "../lib/config.h"

enum { STRESS_BF16, STRESS_FP16, STRESS_TF32, STRESS_FP8, STRESS_NR_DTYPES };

/* Expected figures of one GPU model, sustained (minutes, at the power cap), one GPU. */
struct stress_model {
	const char *name;   /* NVML/CUDA name, exactly */
	double gemm[STRESS_NR_DTYPES]; /* TFLOP/s at 8192^3, delivered over the wall clock */
	double hbm_read, hbm_write, hbm_copy; /* GB/s; copy counts read + write */
	double pair;        /* peer copy GB/s, one direction, NVLink */
	double busbw;       /* all_reduce busbw GB/s within one host, >= 1 GiB, NVLink SHARP off */
	const char *source;
};

struct stress_limits {
	char model[96];     /* the model the floors came from, "" if none */
	const char *source;
	double gemm_floor[STRESS_NR_DTYPES];
	double hbm_read_floor, hbm_write_floor, hbm_copy_floor;
	double outlier_margin;
	double memtest_min_fraction;
	double busbw_floor;
	uint64_t busbw_floor_min_bytes;
	double pair_floor;
	double net_outlier_margin;
	double floor_fraction;
};

const char *stress_dtype_name(int d);
int stress_dtype_from_name(const char *s); /* -1 if unknown */

/* The table row for a GPU name, or NULL. */
const struct stress_model *stress_model_find(const char *gpu_name);

/* Limits for gpu_name (NULL or "" when not known) from the table and cfg (may be NULL).
 * Returns 0, or -1 with *err on a bad configuration value. */
int stress_limits_get(struct stress_limits *l, const char *gpu_name, const struct config *cfg,
		      struct strbuf *err);

/* For each v[i], the median of the other values (v[i] itself for n < 2). Values <= 0 are
 * ignored as siblings. */
void stress_median_of_others(const double *v, size_t n, double *out);

#endif
