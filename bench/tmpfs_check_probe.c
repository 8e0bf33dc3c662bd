/*
 * tmpfs_check_probe: what a check of every byte costs a reader of a memory file system, and
 * the ways of placing that check that docs/PERFORMANCE.md ("12-05 (stop 35)") measured.
 *
 *   build/bench/tmpfs_check_probe DIR PROCS MIB ROUNDS MODE...
 *
 * PROCS processes each write one file of MIB MiB in DIR (1 MiB blocks, the folded pattern of
 * vigil stress storage: 32 KiB of bytes, each 32 KiB of a block that pattern XOR a key of its
 * own), then each read it back in 1 MiB preads, all PROCS at once, once per MODE per round;
 * the modes rotate from round to round. Printed per mode: the median MiB/s over the rounds,
 * the slowest and fastest, and the median of the per-round ratios to the first MODE.
 *
 *   none      pread only (fio's read at iodepth 1)
 *   inline    pread, then the check of the block on the same CPU (vigil's way on tmpfs)
 *   inline512 the same check in 64-byte AVX-512 steps (where the CPU has AVX-512BW)
 *   ring      pread into a ring of four buffers, a thread on the next CPU checks them
 *   mapped    no pread: each 1 MiB window mapped (MAP_POPULATE), checked in place, unmapped
 *
 * A block that does not check stops the run with exit 1: every mode must see the data. The
 * files are removed at the end.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLK (1u << 20)
#define FOLD (32u << 10)
#define RING 4
#define MAXMODES 8
#define MAXROUNDS 64

typedef uint64_t v4 __attribute__((vector_size(32), aligned(32), may_alias));
typedef uint64_t v8 __attribute__((vector_size(64), aligned(64), may_alias));

static uint8_t *pat;

static uint64_t key_of(uint64_t blk, size_t fold)
{
	return blk * 0x9e3779b97f4a7c15ull + fold;
}

/* The block's check in vectors of type V with L 64-bit lanes: four accumulators, no early
 * exit, as vigil's (src/stress/ckpt_io.c); one body for the AVX2 and AVX-512 twins. */
#define CHECK_IMPL(V, L)                                                                   \
	{                                                                                  \
		V a0 = { 0 }, a1 = a0, a2 = a0, a3 = a0;                                   \
		for (size_t f = 0; f < BLK; f += FOLD) {                                   \
			V k;                                                               \
			for (int l = 0; l < (L); l++)                                      \
				k[l] = key_of(blk, f / FOLD);                              \
			const V *g = (const V *)(b + f), *p = (const V *)pat;              \
			for (size_t i = 0; i < FOLD / sizeof(V); i += 4) {                 \
				a0 |= g[i] ^ p[i] ^ k;                                     \
				a1 |= g[i + 1] ^ p[i + 1] ^ k;                             \
				a2 |= g[i + 2] ^ p[i + 2] ^ k;                             \
				a3 |= g[i + 3] ^ p[i + 3] ^ k;                             \
			}                                                                  \
		}                                                                          \
		a0 |= a1 | a2 | a3;                                                        \
		uint64_t r = 0;                                                            \
		for (int l = 0; l < (L); l++)                                              \
			r |= a0[l];                                                        \
		return r == 0;                                                             \
	}

__attribute__((target("avx2"))) static int check_avx2(const uint8_t *b, uint64_t blk)
CHECK_IMPL(v4, 4)

__attribute__((target("avx512f,avx512bw"))) static int check_avx512(const uint8_t *b, uint64_t blk)
CHECK_IMPL(v8, 8)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void keep_to_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

/* the ring: the reader posts block k into buf[k % RING], the checker marks it done */
static uint8_t *ring[RING];
static _Atomic uint64_t posted, checked;
static uint64_t nblocks;
static int ring_bad, checker_cpu;

static void wait_for(_Atomic uint64_t *a, uint64_t v)
{
	while (atomic_load_explicit(a, memory_order_acquire) < v)
		sched_yield();
}

static void *checker(void *arg)
{
	(void)arg;
	keep_to_cpu(checker_cpu);
	for (uint64_t k = 0; k < nblocks; k++) {
		wait_for(&posted, k + 1);
		ring_bad |= !check_avx2(ring[k % RING], k);
		atomic_store_explicit(&checked, k + 1, memory_order_release);
	}
	return NULL;
}

/* One reader: exit 0 when every block checked, 1 when one did not, 2 on an I/O error. */
static int reader(const char *path, size_t bytes, const char *mode, int cpu)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 2;
	nblocks = bytes / BLK;
	int bad = 0;
	if (!strcmp(mode, "mapped")) {
		for (uint64_t k = 0; k < nblocks; k++) {
			uint8_t *m = mmap(NULL, BLK, PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
					  (off_t)(k * BLK));
			if (m == MAP_FAILED)
				return 2;
			bad |= !check_avx2(m, k);
			munmap(m, BLK);
		}
		return bad;
	}
	for (int i = 0; i < RING; i++)
		if (posix_memalign((void **)&ring[i], 4096, BLK))
			return 2;
	if (!strcmp(mode, "ring")) {
		keep_to_cpu(cpu);
		checker_cpu = cpu + 1;
		pthread_t t;
		if (pthread_create(&t, NULL, checker, NULL))
			return 2;
		for (uint64_t k = 0; k < nblocks; k++) {
			if (k >= RING)
				wait_for(&checked, k - RING + 1);
			if (pread(fd, ring[k % RING], BLK, (off_t)(k * BLK)) != BLK)
				return 2;
			atomic_store_explicit(&posted, k + 1, memory_order_release);
		}
		pthread_join(t, NULL);
		return ring_bad;
	}
	int which = !strcmp(mode, "none") ? 0 : !strcmp(mode, "inline512") ? 2 : 1;
	for (uint64_t k = 0; k < nblocks; k++) {
		if (pread(fd, ring[0], BLK, (off_t)(k * BLK)) != BLK)
			return 2;
		if (which == 1)
			bad |= !check_avx2(ring[0], k);
		else if (which == 2)
			bad |= !check_avx512(ring[0], k);
	}
	return bad;
}

/* MiB/s of PROCS readers at once in mode, or -1 when one failed */
static double one_pass(char paths[][512], int procs, size_t bytes, const char *mode)
{
	double t0 = now_s();
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(reader(paths[p], bytes, mode, 2 * p));
		if (pid < 0)
			return -1;
	}
	int ok = 1, st;
	for (int p = 0; p < procs; p++)
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			ok = 0;
	double t = now_s() - t0;
	return ok ? (double)procs * (double)bytes / 1048576.0 / t : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: tmpfs_check_probe DIR PROCS MIB ROUNDS MODE...\n");
		return 2;
	}
	int procs = atoi(argv[2]), rounds = atoi(argv[4]), modes = argc - 5;
	size_t bytes = (size_t)atoi(argv[3]) << 20;
	if (procs < 1 || procs > 64 || rounds < 1 || rounds > MAXROUNDS || modes > MAXMODES ||
	    bytes < BLK) {
		fprintf(stderr, "tmpfs_check_probe: 1-64 procs, 1-%d rounds, at most %d modes, "
				"at least 1 MiB\n", MAXROUNDS, MAXMODES);
		return 2;
	}
	for (int m = 0; m < modes; m++)
		if (!strcmp(argv[5 + m], "inline512") && !__builtin_cpu_supports("avx512bw")) {
			fprintf(stderr, "tmpfs_check_probe: this CPU has no AVX-512BW\n");
			return 2;
		}
	if (posix_memalign((void **)&pat, 4096, FOLD))
		return 2;
	uint64_t s = 0x5eed;
	for (size_t i = 0; i < FOLD; i += 8) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		memcpy(pat + i, &s, 8);
	}
	static char paths[64][512];
	uint8_t *b;
	if (posix_memalign((void **)&b, 4096, BLK))
		return 2;
	int rc = 0;
	for (int p = 0; p < procs && !rc; p++) {
		snprintf(paths[p], sizeof(paths[p]), "%s/tmpfs-check-probe.%d.%d", argv[1],
			 (int)getpid(), p);
		int fd = open(paths[p], O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			perror(paths[p]);
			rc = 2;
			paths[p][0] = '\0';
			break;
		}
		for (uint64_t k = 0; k < bytes / BLK && !rc; k++) {
			for (size_t f = 0; f < BLK; f += FOLD)
				for (size_t i = 0; i < FOLD; i += 8) {
					uint64_t v;
					memcpy(&v, pat + i, 8);
					v ^= key_of(k, f / FOLD);
					memcpy(b + f + i, &v, 8);
				}
			if (pwrite(fd, b, BLK, (off_t)(k * BLK)) != BLK)
				rc = 2;
		}
		close(fd);
	}
	static double mib[MAXMODES][MAXROUNDS], ratio[MAXMODES][MAXROUNDS];
	for (int r = 0; r < rounds && !rc; r++)
		for (int i = 0; i < modes && !rc; i++) {
			int m = (i + r) % modes;
			mib[m][r] = one_pass(paths, procs, bytes, argv[5 + m]);
			if (mib[m][r] < 0) {
				fprintf(stderr, "tmpfs_check_probe: %s failed (a block did not check, "
						"or an I/O error)\n", argv[5 + m]);
				rc = 1;
			}
		}
	for (int p = 0; p < procs; p++)
		if (paths[p][0])
			unlink(paths[p]);
	if (rc)
		return rc;
	for (int m = 0; m < modes; m++) {
		for (int r = 0; r < rounds; r++)
			ratio[m][r] = mib[m][r] / mib[0][r];
		qsort(mib[m], (size_t)rounds, sizeof(double), cmp_double);
		qsort(ratio[m], (size_t)rounds, sizeof(double), cmp_double);
		printf("procs %d  %-10s median %7.0f MiB/s  (%.0f-%.0f)  paired / %s %.3f\n", procs,
		       argv[5 + m], mib[m][rounds / 2], mib[m][0], mib[m][rounds - 1], argv[5],
		       ratio[m][rounds / 2]);
	}
	return 0;
}
