/*
 * nccl_recorder_cost.c: what the NCCL flight recorder costs NCCL per collective, on the CPU: the
 * plugin (libnccl-profiler-vigil.so) loaded with dlopen and driven as NCCL drives it for one
 * collective (Coll start and stop, then per GPU channel a KernelCh start, the stop state and
 * stopEvent), against a reference in the same run: the same calls through a table of empty
 * functions (what NCCL pays to call any plugin). Prints ns per collective for both and the
 * difference, for 1 and 4 threads (communicators on threads of one process share the ring).
 *
 *   build/bench/nccl_recorder_cost build/libnccl-profiler-vigil.so [collectives] [channels]
 */
#include "../src/nccl/profiler_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the reference: a plugin that does nothing */
static ncclResult_t e_init(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r,
			   ncclDebugLogger_t l)
{
	(void)id, (void)n, (void)nn, (void)nr, (void)r, (void)l;
	static int x;
	*c = &x;
	*m = 0x46;
	return ncclSuccess;
}
static int dummy;
static ncclResult_t e_start(void *c, void **h, descr_v5 *d)
{
	(void)c, (void)d;
	*h = &dummy;
	return ncclSuccess;
}
static ncclResult_t e_stop(void *h)
{
	(void)h;
	return ncclSuccess;
}
static ncclResult_t e_rec(void *h, event_state s, void *a)
{
	(void)h, (void)s, (void)a;
	return ncclSuccess;
}
static ncclResult_t e_fin(void *c)
{
	(void)c;
	return ncclSuccess;
}
static const ncclProfiler_v5_t empty = { "empty", e_init, e_start, e_stop, e_rec, e_fin };

struct job {
	const ncclProfiler_v5_t *t;
	long colls;
	int channels, id;
	double seconds;
};

static void *drive(void *arg)
{
	struct job *j = arg;
	void *ctx = NULL;
	int mask = 0;
	if (j->t->init(&ctx, 0x1000 + (uint64_t)j->id, &mask, "bench", 1, 8, j->id, NULL) != 0) {
		fprintf(stderr, "init failed\n");
		exit(1);
	}
	double t0 = now();
	for (long i = 0; i < j->colls; i++) {
		descr_v5 d;
		memset(&d, 0, sizeof(d));
		d.type = 1 << 1;
		d.coll.seqNumber = (uint64_t)i;
		d.coll.func = "AllReduce";
		d.coll.count = 1 << 20;
		d.coll.datatype = "ncclBfloat16";
		d.coll.nChannels = (uint8_t)j->channels;
		void *h = NULL, *ch[64];
		j->t->startEvent(ctx, &h, &d);
		j->t->stopEvent(h);
		for (int c = 0; c < j->channels; c++) {
			descr_v5 k;
			memset(&k, 0, sizeof(k));
			k.type = 1 << 6;
			k.parentObj = h;
			j->t->startEvent(ctx, &ch[c], &k);
		}
		for (int c = 0; c < j->channels; c++) {
			j->t->recordEventState(ch[c], ncclProfilerKernelChStop, NULL);
			j->t->stopEvent(ch[c]);
		}
	}
	j->seconds = now() - t0;
	j->t->finalize(ctx);
	return NULL;
}

static double run(const ncclProfiler_v5_t *t, int threads, long colls, int channels)
{
	pthread_t th[8];
	struct job j[8];
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){ t, colls, channels, i, 0 };
		pthread_create(&th[i], NULL, drive, &j[i]);
	}
	double worst = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		worst = j[i].seconds > worst ? j[i].seconds : worst;
	}
	return worst / (double)colls * 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBNCCL_PROFILER_VIGIL.so [collectives] [channels]\n",
			argv[0]);
		return 2;
	}
	long colls = argc > 2 ? atol(argv[2]) : 2000000;
	int channels = argc > 3 ? atoi(argv[3]) : 8;
	if (colls < 1 || channels < 1 || channels > 64)
		return 2;
	setenv("VIGIL_NCCL_RING_DIR", "/tmp", 0);
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	const ncclProfiler_v5_t *rec = dlsym(lib, "ncclProfiler_v5");
	if (!rec)
		return 1;
	printf("per collective with %d GPU channels (%d events), ns: median of 5\n", channels,
	       2 + 3 * channels);
	printf("%8s %12s %12s %12s\n", "threads", "empty", "recorder", "recorder-empty");
	for (int threads = 1; threads <= 4; threads *= 4) {
		double e[5], r[5];
		for (int k = 0; k < 5; k++) {
			e[k] = run(&empty, threads, colls, channels);
			r[k] = run(rec, threads, colls, channels);
		}
		for (int a = 0; a < 5; a++)
			for (int b = a + 1; b < 5; b++) {
				if (e[b] < e[a]) { double t = e[a]; e[a] = e[b]; e[b] = t; }
				if (r[b] < r[a]) { double t = r[a]; r[a] = r[b]; r[b] = t; }
			}
		printf("%8d %12.1f %12.1f %12.1f\n", threads, e[2], r[2], r[2] - e[2]);
	}
	return 0;
}
