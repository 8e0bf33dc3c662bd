/*
 * nvml_cost.c: where the gpu check's NVML time goes on a real host. Loads libnvidia-ml with
 * dlopen and times, in one process: nvmlInit_v2, the device count and handles, the cheap
 * per-GPU queries (name, ECC, clocks, PCIe, power, temperature), and the NVLink loops (state and
 * four error counters on links 0-17), then nvmlShutdown. Run on a GPU host:
 *   make bench-build && build/bench/nvml_cost
 * Prints CPU and wall milliseconds per phase; docs/PERFORMANCE.md keeps the figures.
 */
#include "../src/lib/util.h"

#include <dlfcn.h>
#include <time.h>

typedef int (*fn0)(void);
typedef int (*fn_count)(unsigned *);
typedef int (*fn_handle)(unsigned, void **);
typedef int (*fn_name)(void *, char *, unsigned);
typedef int (*fn_u)(void *, unsigned *);
typedef int (*fn_uu)(void *, unsigned, unsigned *);
typedef int (*fn_ull)(void *, unsigned long long *);
typedef int (*fn_ecc)(void *, int, int, unsigned long long *);
typedef int (*fn_link_err)(void *, unsigned, int, unsigned long long *);

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void phase(const char *name, double *c0, uint64_t *w0)
{
	double c = cpu_ms();
	uint64_t w = mono_us();
	printf("%-34s %8.2f ms CPU %8.2f ms wall\n", name, c - *c0, (double)(w - *w0) / 1e3);
	*c0 = c;
	*w0 = w;
}

int main(void)
{
	void *dl = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!dl) {
		fprintf(stderr, "no NVML: %s\n", dlerror());
		return 3;
	}
	double c0 = cpu_ms();
	uint64_t w0 = mono_us();
	fn0 init = (fn0)dlsym(dl, "nvmlInit_v2"), shut = (fn0)dlsym(dl, "nvmlShutdown");
	fn_count count = (fn_count)dlsym(dl, "nvmlDeviceGetCount_v2");
	fn_handle handle = (fn_handle)dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
	fn_name name = (fn_name)dlsym(dl, "nvmlDeviceGetName");
	fn_uu clock = (fn_uu)dlsym(dl, "nvmlDeviceGetClockInfo");
	fn_uu temp = (fn_uu)dlsym(dl, "nvmlDeviceGetTemperature");
	fn_u power = (fn_u)dlsym(dl, "nvmlDeviceGetPowerUsage");
	fn_ull reasons = (fn_ull)dlsym(dl, "nvmlDeviceGetCurrentClocksEventReasons");
	fn_ecc ecc = (fn_ecc)dlsym(dl, "nvmlDeviceGetTotalEccErrors");
	fn_uu link_state = (fn_uu)dlsym(dl, "nvmlDeviceGetNvLinkState");
	fn_link_err link_err = (fn_link_err)dlsym(dl, "nvmlDeviceGetNvLinkErrorCounter");
	phase("dlopen + dlsym", &c0, &w0);
	if (!init || init()) {
		fprintf(stderr, "nvmlInit_v2 failed\n");
		return 3;
	}
	phase("nvmlInit_v2", &c0, &w0);
	unsigned n = 0;
	count(&n);
	void *h[64];
	for (unsigned i = 0; i < n && i < 64; i++)
		handle(i, &h[i]);
	phase("count + handles", &c0, &w0);
	for (int round = 0; round < 2; round++) {
		if (round)
			printf("-- again, NVML still initialised (what a persistent worker would pay)\n");
		for (unsigned i = 0; i < n && i < 64; i++) {
			char nm[96];
			unsigned v;
			unsigned long long u;
			name(h[i], nm, sizeof(nm));
			clock(h[i], 1, &v);
			temp(h[i], 0, &v);
			power(h[i], &v);
			if (reasons)
				reasons(h[i], &u);
			ecc(h[i], 1, 0, &u);
			ecc(h[i], 1, 1, &u);
		}
		phase("basic queries, all GPUs", &c0, &w0);
		unsigned calls = 0;
		for (unsigned i = 0; i < n && i < 64; i++)
			for (unsigned l = 0; l < 18; l++) {
				unsigned active;
				calls++;
				if (link_state(h[i], l, &active))
					continue;
				for (int k = 0; k < 4; k++) {
					unsigned long long u;
					link_err(h[i], l, k, &u);
					calls++;
				}
			}
		char buf[64];
		snprintf(buf, sizeof(buf), "NVLink, all GPUs (%u calls)", calls);
		phase(buf, &c0, &w0);
	}
	shut();
	phase("nvmlShutdown", &c0, &w0);
	printf("%u GPUs\n", n);
	return 0;
}
