/*
 * nvml_fields.c: is one nvmlDeviceGetFieldValues call for the NVLink error totals cheaper than
 * the per-link counter loop the gpu check makes (bench/nvml_cost showed ~0.75 ms a call)?
 * Needs NVML's own header, so it builds only where nvml.h is (a GPU host):
 *   cc -O2 -I/usr/local/cuda/include bench/nvml_fields.c -o /tmp/nvml_fields -ldl
 * and is a stub elsewhere (the Makefile's bench rule builds every C file in bench/).
 */
#include "../src/lib/util.h"

#if __has_include(<nvml.h>)
#include <dlfcn.h>
#include <nvml.h>
#include <time.h>

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(void)
{
	unsigned n = 0;
	if (nvmlInit_v2() || nvmlDeviceGetCount_v2(&n))
		return 3;
	printf("field ids: CRC_FLIT_TOTAL %d CRC_DATA_TOTAL %d REPLAY_TOTAL %d RECOVERY_TOTAL %d\n",
	       NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
	       NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
	       NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL,
	       NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL);
	for (unsigned i = 0; i < n; i++) {
		nvmlDevice_t d;
		nvmlDeviceGetHandleByIndex_v2(i, &d);
		double t0 = cpu_ms();
		unsigned active = 0;
		for (unsigned l = 0; l < 18; l++) {
			nvmlEnableState_t st;
			if (!nvmlDeviceGetNvLinkState(d, l, &st) && st == NVML_FEATURE_ENABLED)
				active++;
		}
		double t1 = cpu_ms();
		nvmlFieldValue_t fv[4] = { 0 };
		fv[0].fieldId = NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL;
		fv[1].fieldId = NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL;
		fv[2].fieldId = NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL;
		fv[3].fieldId = NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL;
		int rc = nvmlDeviceGetFieldValues(d, 4, fv);
		double t2 = cpu_ms();
		unsigned long long sum[4] = { 0 };
		for (unsigned l = 0; l < 18; l++)
			for (int k = 0; k < 4; k++) {
				unsigned long long u = 0;
				static const nvmlNvLinkErrorCounter_t c[4] = {
					NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_DATA,
					NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_RECOVERY
				};
				if (!nvmlDeviceGetNvLinkErrorCounter(d, l, c[k], &u))
					sum[k] += u;
			}
		double t3 = cpu_ms();
		printf("GPU %u: %u active links; state loop %.2f ms CPU; field values rc %d %.2f ms "
		       "CPU; per-link counters %.2f ms CPU\n", i, active, t1 - t0, rc, t2 - t1,
		       t3 - t2);
		for (int k = 0; k < 4; k++)
			printf("  total %d: field rc %d value %llu; sum of links %llu\n", k,
			       fv[k].nvmlReturn, fv[k].value.ullVal, sum[k]);
	}
	nvmlShutdown();
	return 0;
}
#else
int main(void)
{
	fprintf(stderr, "nvml_fields: built without nvml.h; build it on a GPU host (see the top)\n");
	return 3;
}
#endif
