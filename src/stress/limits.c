/* limits.c: the per-model table, floors, margins and the leave-one-out median (see limits.h). */
#include "limits.h"

#include <math.h>

static const char *const dtype_names[STRESS_NR_DTYPES] = { "bf16", "fp16", "tf32", "fp8" };

const char *stress_dtype_name(int d)
{
	return d >= 0 && d < STRESS_NR_DTYPES ? dtype_names[d] : "?";
}

int stress_dtype_from_name(const char *s)
{
	for (int i = 0; s && i < STRESS_NR_DTYPES; i++)
		if (!strcmp(s, dtype_names[i]))
			return i;
	return -1;
}

/*
 * Sustained figures. GEMM figures are what a GPU delivers over vigil-gpu's sustained window by
 * the wall clock (products x FLOPs / time, every product verified, so the checks' share of the
 * time is in them): about 0.94x the per-product rate for bf16, fp16 and tf32 and 0.89x for fp8
 * on the H200 (docs/PERFORMANCE.md). The H200 row was measured by vigil-gpu on the lent 2 x H200
 * machines at the 700 W power cap, below the short bursts of docs/PERFORMANCE.md (790 TFLOP/s bf16 over
 * ten products). The H100 SXM row has the H200's compute (same chip, same power) and its memory
 * scaled by the datasheets (3.35 / 4.8 TB/s): derived, not measured; check it on your hosts and
 * set the floors in the configuration.
 */
static const struct stress_model models[] = {
	{ "NVIDIA H200", { 650, 615, 350, 1135 }, 4630, 4300, 4270, 396, 340,
	  "measured by vigil on H200 SXM (docs/PERFORMANCE.md)" },
	{ "NVIDIA H100 80GB HBM3", { 650, 615, 350, 1135 }, 3230, 3000, 2980, 396, 340,
	  "derived from the H200 figures by datasheet ratios, not measured" },
};

const struct stress_model *stress_model_find(const char *gpu_name)
{
	for (size_t i = 0; gpu_name && i < ARRAY_SIZE(models); i++)
		if (!strcmp(models[i].name, gpu_name))
			return &models[i];
	return NULL;
}

static int get_floor(const struct config *cfg, const char *sec, const char *key, double def,
		     double *out, struct strbuf *err)
{
	if (!cfg) {
		*out = def;
		return 0;
	}
	if (config_get_double(cfg, sec, key, def, out, err) < 0)
		return -1;
	if (*out < 0 || !isfinite(*out))
		return error_set(err, "%s.%s must be a number of at least 0", sec, key);
	return 0;
}

int stress_limits_get(struct stress_limits *l, const char *gpu_name, const struct config *cfg,
		      struct strbuf *err)
{
	memset(l, 0, sizeof(*l));
	const struct stress_model *m = stress_model_find(gpu_name);
	double f = 0.85;
	if (get_floor(cfg, "stress", "floor-fraction", 0.85, &f, err) < 0)
		return -1;
	if (f > 1)
		return error_set(err, "stress.floor-fraction must be between 0 and 1");
	l->floor_fraction = f;
	if (m) {
		strlcpy_v(l->model, m->name, sizeof(l->model));
		l->source = m->source;
	}
	static const char *const gk[STRESS_NR_DTYPES] = { "floor-bf16", "floor-fp16", "floor-tf32",
							  "floor-fp8" };
	for (int d = 0; d < STRESS_NR_DTYPES; d++)
		if (get_floor(cfg, "stress", gk[d], m ? f * m->gemm[d] : 0, &l->gemm_floor[d],
			      err) < 0)
			return -1;
	if (get_floor(cfg, "stress", "floor-hbm-read", m ? f * m->hbm_read : 0, &l->hbm_read_floor,
		      err) < 0 ||
	    get_floor(cfg, "stress", "floor-hbm-write", m ? f * m->hbm_write : 0,
		      &l->hbm_write_floor, err) < 0 ||
	    get_floor(cfg, "stress", "floor-hbm-copy", m ? f * m->hbm_copy : 0, &l->hbm_copy_floor,
		      err) < 0 ||
	    get_floor(cfg, "stress", "outlier-margin", 0.05, &l->outlier_margin, err) < 0 ||
	    get_floor(cfg, "stress", "memtest-min-fraction", 0.5, &l->memtest_min_fraction, err) < 0 ||
	    get_floor(cfg, "net", "floor-busbw", m ? f * m->busbw : 0, &l->busbw_floor, err) < 0 ||
	    get_floor(cfg, "net", "floor-pair", m ? f * m->pair : 0, &l->pair_floor, err) < 0 ||
	    get_floor(cfg, "net", "outlier-margin", 0.15, &l->net_outlier_margin, err) < 0)
		return -1;
	if (l->outlier_margin >= 1 || l->net_outlier_margin >= 1)
		return error_set(err, "an outlier margin must be below 1");
	uint64_t mb = 1ULL << 30;
	if (cfg && config_get_u64(cfg, "net", "floor-min-bytes", mb, &mb, err) < 0)
		return -1;
	l->busbw_floor_min_bytes = mb;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void stress_median_of_others(const double *v, size_t n, double *out)
{
	double *tmp = xcalloc(n ? n : 1, sizeof(*tmp));
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		for (size_t j = 0; j < n; j++)
			if (j != i && v[j] > 0 && isfinite(v[j]))
				tmp[k++] = v[j];
		if (!k) {
			out[i] = v[i];
			continue;
		}
		qsort(tmp, k, sizeof(*tmp), cmp_double);
		out[i] = k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2;
	}
	free(tmp);
}
