/*
 * ckpt_io.c: the workers of 'vigil stress storage' (ckpt_io.h): each one a forked process
 * writing, reading back and verifying its own shard files, or running the metadata burst, and
 * reporting through its slot in the shared mapping.
 *
 * The data pattern: one block of pseudo-random bytes is the body of every block; the first 16
 * bytes of each 4 KiB sector are replaced by a stamp of the file and the byte offset. So a
 * worker writes at memory speed (the stamps cost 16 bytes in 4096, as fio's buffer scrambling
 * does), the read-back is verified without a stored copy, and a sector that lands at the wrong
 * offset or in the wrong file, or comes back stale, zeroed or flipped, fails its stamp or its
 * body. Blocks differ from each other, so deduplicating storage cannot skip them.
 *
 * The body block is folded: 32 KiB of pseudo-random bytes (splitmix64 from the run's seed), the
 * n-th 32 KiB of the block that pattern XOR a 64-bit key of its own. Written, it is as random
 * as a whole block of splitmix64: no byte string repeats within the block, so a compressing
 * file system saves nothing (LZ4, zstd, gzip), as before. Checked, the expected body comes
 * from 32 KiB that stay in the L1 cache and one key, instead of a second 1 MiB block beside
 * the one just read. On a memory file system, where the read is a copy on the reader's CPU
 * and the check a second pass over the block, that pass is the cost: over 1 MiB blocks just
 * read from tmpfs, 40 GB/s against the whole block with memcmp, 57 GB/s folded with AVX2
 * (46 GB/s with SSE2), on the 2-CPU development VM (docs/PERFORMANCE.md).
 */
#include "ckpt_io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SECTOR 4096u
#define STAMP  16u

static const char *const op_names[SOP__COUNT] = {
	[SOP_NONE] = "none",	 [SOP_CREATE] = "create", [SOP_WRITE] = "write",
	[SOP_FSYNC] = "fsync",	 [SOP_RENAME] = "rename", [SOP_DIRSYNC] = "dirsync",
	[SOP_OPEN] = "open",	 [SOP_READ] = "read",	  [SOP_STAT] = "stat",
	[SOP_UNLINK] = "unlink", [SOP_MKDIR] = "mkdir",	  [SOP_ALLOC] = "alloc",
};

const char *ckpt_op_name(unsigned op)
{
	return op < SOP__COUNT ? op_names[op] : "?";
}

uint64_t ckpt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* decimal digits into p, at least width of them; returns the end (async-signal-safe) */
static char *put_num(char *p, char *end, unsigned v, int width)
{
	char d[12];
	int n = 0;
	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < 12);
	while (n < width && n < 12)
		d[n++] = '0';
	while (n && p < end)
		*p++ = d[--n];
	return p;
}

static void put_name(char *buf, size_t size, const char *pre, unsigned v, int width,
		     const char *suf)
{
	char *p = buf, *end = buf + size - 1;
	for (; *pre && p < end; pre++)
		*p++ = *pre;
	p = put_num(p, end, v, width);
	for (; *suf && p < end; suf++)
		*p++ = *suf;
	*p = '\0';
}

void ckpt_name(char *buf, size_t size, unsigned file, bool part)
{
	put_name(buf, size, "shard-", file, 5, part ? ".part" : "");
}

void ckpt_meta_name(char *buf, size_t size, unsigned i, bool renamed)
{
	put_name(buf, size, "m-", i, 6, renamed ? ".r" : "");
}

uint64_t ckpt_file_len(const struct ckpt_job *j, unsigned f)
{
	uint64_t start = (uint64_t)f * j->file_size;
	uint64_t left = j->size > start ? j->size - start : 0;
	return left < j->file_size ? left : j->file_size;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The folded body (above): pat holds FOLD bytes, key one word per FOLD bytes of the block. */
#define FOLD (32u << 10)

struct body {
	uint8_t *pat;	/* FOLD bytes, SECTOR-aligned */
	uint64_t *key;	/* a key per fold: block / FOLD rounded up (at least 1) */
	uint8_t *block; /* the whole body block, as written */
};

static uint32_t fold_len(uint32_t block)
{
	return block < FOLD ? block : FOLD;
}

static int body_init(struct body *b, uint32_t block, uint64_t seed)
{
	uint32_t p = fold_len(block), nk = (block + p - 1) / p; /* a last fold may be short */
	memset(b, 0, sizeof(*b));
	if (posix_memalign((void **)&b->pat, SECTOR, p) ||
	    posix_memalign((void **)&b->block, SECTOR, block) ||
	    !(b->key = malloc(nk * sizeof(*b->key)))) {
		free(b->pat);
		free(b->block);
		memset(b, 0, sizeof(*b));
		return -1;
	}
	uint64_t s = seed;
	for (uint32_t i = 0; i + 8 <= p; i += 8) {
		uint64_t v = splitmix(&s);
		memcpy(b->pat + i, &v, 8);
	}
	for (uint32_t k = 0; k < nk; k++)
		b->key[k] = splitmix(&s);
	for (uint32_t i = 0; i + 8 <= block; i += 8) {
		uint64_t v;
		memcpy(&v, b->pat + i % p, 8);
		v ^= b->key[i / p];
		memcpy(b->block + i, &v, 8);
	}
	return 0;
}

static void body_release(struct body *b)
{
	free(b->pat);
	free(b->key);
	free(b->block);
}

/*
 * Whether the body of one sector (bytes STAMP..SECTOR of got) is pat's XOR key: 32-byte
 * vectors (GCC's vector extension; two SSE2 halves where AVX2 is absent, one AVX2 register
 * where the CPU has it: the AVX2 twin is picked once at run time), four accumulators, no early
 * exit (a sector is 4 KiB: the branch would cost more than the rest of it). got and pat are
 * SECTOR-aligned; STAMP is 16, so the first 16 body bytes are one 16-byte step.
 */
typedef uint64_t v4u64 __attribute__((vector_size(32), aligned(16), may_alias));
typedef uint64_t v2u64 __attribute__((vector_size(16), aligned(16), may_alias));

#define BODY_CHECK_IMPL                                                                        \
	{                                                                                      \
		const v2u64 *g2 = (const v2u64 *)(got + STAMP), *p2 = (const v2u64 *)(pat + STAMP); \
		v2u64 k2 = { key, key };                                                       \
		v2u64 d2 = *g2 ^ *p2 ^ k2;                                                     \
		const v4u64 *g = (const v4u64 *)(got + 32), *p = (const v4u64 *)(pat + 32);    \
		v4u64 k = { key, key, key, key };                                              \
		v4u64 a0 = { 0, 0, 0, 0 }, a1 = a0, a2 = a0, a3 = a0;                          \
		size_t n = (SECTOR - 32) / 32;                                                 \
		size_t i = 0;                                                                  \
		for (; i + 4 <= n; i += 4) {                                                   \
			a0 |= g[i] ^ p[i] ^ k;                                                 \
			a1 |= g[i + 1] ^ p[i + 1] ^ k;                                         \
			a2 |= g[i + 2] ^ p[i + 2] ^ k;                                         \
			a3 |= g[i + 3] ^ p[i + 3] ^ k;                                         \
		}                                                                              \
		for (; i < n; i++)                                                             \
			a0 |= g[i] ^ p[i] ^ k;                                                 \
		a0 |= a1 | a2 | a3;                                                            \
		return ((a0[0] | a0[1] | a0[2] | a0[3]) | (d2[0] | d2[1])) == 0;               \
	}

static bool body_ok_plain(const uint8_t *got, const uint8_t *pat, uint64_t key)
BODY_CHECK_IMPL

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static bool body_ok_avx2(const uint8_t *got, const uint8_t *pat,
							  uint64_t key)
BODY_CHECK_IMPL
#endif

typedef bool (*body_check_fn)(const uint8_t *, const uint8_t *, uint64_t);

static body_check_fn body_check(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	/* VIGIL_TEST_PLAIN_CHECK (tests only): the portable twin on an AVX2 machine too */
	if (__builtin_cpu_supports("avx2") && !getenv("VIGIL_TEST_PLAIN_CHECK"))
		return body_ok_avx2;
#endif
	return body_ok_plain;
}

static void stamp_of(const struct ckpt_job *j, unsigned file, uint64_t off, uint64_t st[2])
{
	uint64_t s = j->seed ^ ((uint64_t)file << 40) ^ off;
	st[0] = splitmix(&s);
	st[1] = off ^ ((uint64_t)file << 48) ^ j->seed;
}

/*
 * An I/O buffer of len bytes. With huge (a memory file system): in transparent huge pages where
 * the kernel gives them (2 MiB aligned, MADV_HUGEPAGE): a read or write there is a copy
 * between the page cache and this buffer, and on 4 KiB pages that copy walks 256 of them a MiB
 * (+2 % for a read from tmpfs on the development VM, 15 rounds of 512 MiB, medians). Not on a
 * device: there the buffer's pages decide how the kernel splits a direct request (one
 * contiguous 1 MiB segment against 256 of 4 KiB), and on the development VM's virtio disk a
 * huge-page buffer wrote 2x and read 2.3x faster than a 4 KiB-page one: a figure no
 * application with ordinary buffers (torch.save, fio's defaults) would see. vigil measures the
 * storage as they use it. Blocks under 512 KiB: a plain SECTOR-aligned buffer; a kernel that
 * refuses the advice: the same mapping in 4 KiB pages. Freed by io_buf_free with the same len
 * and huge.
 */
#define HUGE_SZ (2u << 20)

static size_t io_buf_span(size_t len)
{
	return (len + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ;
}

static bool io_buf_huge(size_t len, bool huge)
{
	return huge && len >= HUGE_SZ / 4;
}

static uint8_t *io_buf_alloc(size_t len, bool huge)
{
	if (!io_buf_huge(len, huge)) {
		void *p = NULL;
		return posix_memalign(&p, SECTOR, len) ? NULL : p;
	}
	size_t span = io_buf_span(len);
	uint8_t *m = mmap(NULL, span + HUGE_SZ, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)m + HUGE_SZ - 1) & ~(uintptr_t)(HUGE_SZ - 1);
	size_t head = a - (uintptr_t)m, tail = HUGE_SZ - head;
	if (head)
		munmap(m, head);
	if (tail)
		munmap((uint8_t *)a + span, tail);
#ifdef MADV_HUGEPAGE
	madvise((void *)a, span, MADV_HUGEPAGE); /* a hint: refused, the pages are 4 KiB */
#endif
	return (uint8_t *)a;
}

static void io_buf_free(uint8_t *p, size_t len, bool huge)
{
	if (p && io_buf_huge(len, huge))
		munmap(p, io_buf_span(len));
	else
		free(p);
}

/* ---- the operation watch ---- */

static void op_begin(struct ckpt_slot *sl, unsigned op, unsigned file)
{
	__atomic_store_n(&sl->op, op, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->file, file, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->op_start_ns, ckpt_now_ns(), __ATOMIC_RELEASE);
}

/* End the operation; a stall past the bound is kept. Returns its length in ns. */
static uint64_t op_end(const struct ckpt_job *j, unsigned op, unsigned file)
{
	struct ckpt_slot *sl = j->slot;
	uint64_t t = ckpt_now_ns() - sl->op_start_ns;
	__atomic_store_n(&sl->op_start_ns, 0, __ATOMIC_RELEASE);
	if (t > j->stall_ns) {
		sl->stalls_total++;
		if (sl->nr_stall < CKPT_MAX_FINDS) {
			sl->stall[sl->nr_stall].op = op;
			sl->stall[sl->nr_stall].file = file;
			sl->stall[sl->nr_stall].ns = t;
			sl->nr_stall++;
		}
	}
	return t;
}

static void fail(const struct ckpt_job *j, unsigned op, unsigned file, int e)
{
	struct ckpt_slot *sl = j->slot;
	sl->errors_total++;
	if (sl->nr_err < CKPT_MAX_FINDS) {
		sl->err[sl->nr_err].op = op;
		sl->err[sl->nr_err].file = file;
		sl->err[sl->nr_err].err_no = e;
		sl->nr_err++;
	}
}

/* write or read all of len at off; 0, or -1 with errno (EIO for a file that ended early) */
static int full_io(int fd, uint8_t *buf, size_t len, uint64_t off, bool rd)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = rd ? pread(fd, buf + done, len - done, (off_t)(off + done))
			       : pwrite(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/* ---- write ---- */

static void inject_corrupt(const struct ckpt_job *j, unsigned f)
{
	/* bytes of the body flipped in place, behind the workload's back, as a device that
	 * returns other data than it was given: the read-back must fail the shard. Four sectors
	 * from the middle of the file on, one byte each where the check's loop has its edges:
	 * inside, the first body byte (the 16-byte step), the last byte of the sector, and one
	 * in the next 32 KiB fold (its own key) */
	static const uint64_t at[] = { 100, SECTOR + STAMP, 3 * SECTOR + SECTOR - 1,
				       FOLD + 2 * SECTOR + 31 };
	char name[48];
	ckpt_name(name, sizeof(name), f, false);
	int fd = openat(j->subfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	uint64_t len = ckpt_file_len(j, f);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		uint64_t off = len / 2 + at[i];
		uint8_t b;
		if (off < len && pread(fd, &b, 1, (off_t)off) == 1) {
			b ^= 0x20;
			if (pwrite(fd, &b, 1, (off_t)off) != 1)
				break;
		}
	}
	if (fsync(fd) == 0)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

static int write_one(const struct ckpt_job *j, unsigned f, uint8_t *buf, bool first)
{
	struct ckpt_slot *sl = j->slot;
	char part[48], name[48];
	ckpt_name(part, sizeof(part), f, true);
	ckpt_name(name, sizeof(name), f, false);
	uint64_t len = ckpt_file_len(j, f);
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	op_begin(sl, SOP_CREATE, f);
	int fd = openat(j->subfd, part, flags | (j->direct ? O_DIRECT : 0), 0600);
	op_end(j, SOP_CREATE, f);
	if (fd < 0) {
		fail(j, SOP_CREATE, f, errno);
		return -1;
	}
	for (uint64_t off = 0; off < len; off += j->block) {
		size_t n = len - off < j->block ? (size_t)(len - off) : j->block;
		for (size_t s = 0; s < n; s += SECTOR) {
			uint64_t st[2];
			stamp_of(j, f, off + s, st);
			memcpy(buf + s, st, STAMP);
		}
		op_begin(sl, SOP_WRITE, f);
		int r = full_io(fd, buf, n, off, false);
		op_end(j, SOP_WRITE, f);
		if (r < 0) {
			fail(j, SOP_WRITE, f, errno);
			close(fd);
			return -1;
		}
		sl->bytes += n;
	}
	op_begin(sl, SOP_FSYNC, f);
	if (first && j->inject == CKPT_INJECT_STALL) {
		/* a sync that takes longer than the stall bound, to check the watch */
		uint64_t ms = j->stall_ns / 1000000 + 300;
		struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	int r = fsync(fd);
	int e = errno;
	uint64_t t = op_end(j, SOP_FSYNC, f);
	if (r < 0) {
		fail(j, SOP_FSYNC, f, e);
		close(fd);
		return -1;
	}
	sl->fsyncs++;
	if (sl->kept < SLOT_FSYNC_CAP)
		sl->fsync_ms[sl->kept++] = (float)((double)t / 1e6);
	if (!j->direct) /* clean after fsync, so the pages can go: the read-back is the disk's */
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (close(fd) < 0) {
		fail(j, SOP_WRITE, f, errno);
		return -1;
	}
	op_begin(sl, SOP_RENAME, f);
	r = renameat(j->subfd, part, j->subfd, name);
	e = errno;
	op_end(j, SOP_RENAME, f);
	if (r < 0) {
		fail(j, SOP_RENAME, f, e);
		return -1;
	}
	op_begin(sl, SOP_DIRSYNC, f);
	r = fsync(j->subfd);
	e = errno;
	t = op_end(j, SOP_DIRSYNC, f);
	if (t > sl->dirsync_max_ns)
		sl->dirsync_max_ns = t;
	if (r < 0) {
		fail(j, SOP_DIRSYNC, f, e);
		return -1;
	}
	if (first && j->inject == CKPT_INJECT_CORRUPT)
		inject_corrupt(j, f);
	return 0;
}

/* ---- read back and verify ---- */

static void mismatch(const struct ckpt_job *j, unsigned f, uint64_t off, bool *in_run)
{
	struct ckpt_slot *sl = j->slot;
	sl->bad_sectors++;
	if (!*in_run && sl->nr_mm < CKPT_MAX_FINDS) {
		sl->mm[sl->nr_mm].file = f;
		sl->mm[sl->nr_mm].off = off;
		sl->nr_mm++;
	}
	*in_run = true;
}

/* got: n bytes read at off of file f, n a whole number of sectors from the start of a block
 * (the sizes are multiples of the block, the block of SECTOR: ckpt.c) */
static void verify(const struct ckpt_job *j, unsigned f, uint64_t off, const uint8_t *got,
		   const struct body *b, body_check_fn ok, size_t n, bool *in_run)
{
	uint32_t p = fold_len(j->block);
	for (size_t s = 0; s < n; s += SECTOR) {
		uint64_t st[2];
		size_t len = n - s < SECTOR ? n - s : SECTOR;
		stamp_of(j, f, off + s, st);
		bool good = !memcmp(got + s, st, STAMP) &&
			    (len == SECTOR ? ok(got + s, b->pat + s % p, b->key[s / p])
					   : !memcmp(got + s + STAMP, b->block + s + STAMP, len - STAMP));
		if (!good)
			mismatch(j, f, off + s, in_run);
		else
			*in_run = false;
	}
	j->slot->verified += n;
}

/* pages of fd resident in the page cache (mincore of a mapping; nothing is read) */
static void count_resident(const struct ckpt_job *j, int fd, uint64_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	if (pg <= 0 || !len)
		return;
	void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return;
	size_t pages = (size_t)((len + (uint64_t)pg - 1) / (uint64_t)pg);
	unsigned char *vec = malloc(pages);
	if (vec && mincore(m, len, vec) == 0) {
		for (size_t i = 0; i < pages; i++)
			j->slot->cache_resident += vec[i] & 1;
		j->slot->cache_pages += pages;
	}
	free(vec);
	munmap(m, len);
}

/*
 * The verifier: a thread of the worker that checks block k while the worker reads block k+1
 * into the other buffer. At one read in flight (a simple reader, fio's psync at iodepth 1)
 * the check would otherwise sit between two reads and the device would idle through it. Used
 * where each reader and its checker can have a CPU (ckpt.c), or when --verify overlapped asks.
 */
struct verifier {
	const struct ckpt_job *j;
	const struct body *body;
	body_check_fn ok;
	uint8_t *buf[2];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* a posted block: buffer index, file, offset, length; full[i]: posted, not yet checked */
	bool full[2], stop;
	unsigned file[2];
	uint64_t off[2];
	size_t len[2];
	unsigned cur_file;
	bool in_run;
	bool overlap; /* the thread runs; false: read_one checks each block itself */
};

static void *verifier_main(void *arg)
{
	struct verifier *v = arg;
	for (unsigned k = 0;; k ^= 1) {
		pthread_mutex_lock(&v->mu);
		while (!v->full[k] && !v->stop)
			pthread_cond_wait(&v->cv, &v->mu);
		bool have = v->full[k];
		pthread_mutex_unlock(&v->mu);
		if (!have)
			return NULL;
		if (v->file[k] != v->cur_file)
			v->in_run = false;
		v->cur_file = v->file[k];
		verify(v->j, v->file[k], v->off[k], v->buf[k], v->body, v->ok, v->len[k], &v->in_run);
		pthread_mutex_lock(&v->mu);
		v->full[k] = false;
		pthread_cond_broadcast(&v->cv);
		pthread_mutex_unlock(&v->mu);
	}
}

/* The buffer k once the verifier is done with it. */
static uint8_t *verifier_take(struct verifier *v, unsigned k)
{
	pthread_mutex_lock(&v->mu);
	while (v->full[k])
		pthread_cond_wait(&v->cv, &v->mu);
	pthread_mutex_unlock(&v->mu);
	return v->buf[k];
}

static void verifier_post(struct verifier *v, unsigned k, unsigned f, uint64_t off, size_t n)
{
	pthread_mutex_lock(&v->mu);
	v->file[k] = f;
	v->off[k] = off;
	v->len[k] = n;
	v->full[k] = true;
	pthread_cond_broadcast(&v->cv);
	pthread_mutex_unlock(&v->mu);
}

static int read_one(const struct ckpt_job *j, unsigned f, struct verifier *v, unsigned *k)
{
	struct ckpt_slot *sl = j->slot;
	char name[48];
	ckpt_name(name, sizeof(name), f, false);
	uint64_t len = ckpt_file_len(j, f);
	op_begin(sl, SOP_OPEN, f);
	int fd = openat(j->subfd, name,
			O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (j->direct ? O_DIRECT : 0));
	op_end(j, SOP_OPEN, f);
	if (fd < 0) {
		fail(j, SOP_OPEN, f, errno);
		return -1;
	}
	if (!j->direct)
		count_resident(j, fd, len);
	for (uint64_t off = 0; off < len; off += j->block) {
		size_t n = len - off < j->block ? (size_t)(len - off) : j->block;
		uint8_t *buf = v->overlap ? verifier_take(v, *k) : v->buf[0];
		op_begin(sl, SOP_READ, f);
		int r = full_io(fd, buf, n, off, true);
		op_end(j, SOP_READ, f);
		if (r < 0) {
			fail(j, SOP_READ, f, errno);
			close(fd);
			return -1;
		}
		sl->bytes += n;
		if (!v->overlap) {
			/* checked here, between two reads: on a memory file system the read was
			 * a copy on this CPU, and with no CPU to spare for a checker a hand-off
			 * costs a wake-up per block and buys nothing (ckpt.c) */
			if (f != v->cur_file)
				v->in_run = false;
			v->cur_file = f;
			if (j->verify != CKPT_VERIFY_NONE)
				verify(j, f, off, buf, v->body, v->ok, n, &v->in_run);
			continue;
		}
		verifier_post(v, *k, f, off, n);
		*k ^= 1;
	}
	close(fd);
	return 0;
}

static void read_all(const struct ckpt_job *j, uint8_t *buf, const struct body *body)
{
	struct ckpt_slot *sl = j->slot;
	struct verifier v;
	memset(&v, 0, sizeof(v));
	v.j = j;
	v.body = body;
	v.ok = body_check();
	v.buf[0] = buf;
	v.cur_file = ~0u;
	v.overlap = j->verify == CKPT_VERIFY_OVERLAPPED;
	if (v.overlap && !(v.buf[1] = io_buf_alloc(j->block, j->huge_buf)))
		v.overlap = false;
	pthread_mutex_init(&v.mu, NULL);
	pthread_cond_init(&v.cv, NULL);
	pthread_t t;
	/* no second buffer or no thread (EAGAIN): checked inline, never read unchecked */
	if (v.overlap && pthread_create(&t, NULL, verifier_main, &v) != 0)
		v.overlap = false;
	unsigned k = 0;
	for (unsigned f = j->worker; f < j->files; f += j->nworkers)
		if (read_one(j, f, &v, &k) < 0)
			break;
	if (v.overlap) {
		pthread_mutex_lock(&v.mu);
		while (v.full[0] || v.full[1])
			pthread_cond_wait(&v.cv, &v.mu);
		v.stop = true;
		pthread_cond_broadcast(&v.cv);
		pthread_mutex_unlock(&v.mu);
		pthread_join(t, NULL);
	}
	sl->t1_ns = ckpt_now_ns();
	pthread_cond_destroy(&v.cv);
	pthread_mutex_destroy(&v.mu);
	io_buf_free(v.buf[1], j->block, j->huge_buf);
}

/* ---- metadata burst ---- */

/* Create name in dir with len bytes of data: 0, or the errno of the call that failed. */
static int create_small(int dir, const char *name, const uint8_t *data, size_t len)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	errno = 0;
	int e = write(fd, data, len) == (ssize_t)len ? 0 : errno ? errno : EIO;
	if (close(fd) < 0 && !e)
		e = errno;
	return e;
}

static int meta_burst(const struct ckpt_job *j)
{
	struct ckpt_slot *sl = j->slot;
	char a[32], b[32];
	uint8_t small[512];
	unsigned n = j->meta_files;
	memset(small, 0x5a, sizeof(small));
	op_begin(sl, SOP_MKDIR, CKPT_META_FILE);
	int r = mkdirat(j->subfd, "meta", 0700);
	op_end(j, SOP_MKDIR, CKPT_META_FILE);
	int mfd = r < 0 ? -1
			: openat(j->subfd, "meta", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mfd < 0) {
		fail(j, SOP_MKDIR, CKPT_META_FILE, errno);
		return -1;
	}
	sl->t0_ns = ckpt_now_ns();
	int ret = 0;
	/* four bursts, each over every file: what a checkpoint's index, a dataloader's cache or
	 * a shared home directory asks of the metadata server */
	for (unsigned i = 0; i < n && !ret; i++) {
		ckpt_meta_name(a, sizeof(a), i, false);
		op_begin(sl, SOP_CREATE, CKPT_META_FILE + i);
		int e = create_small(mfd, a, small, sizeof(small));
		op_end(j, SOP_CREATE, CKPT_META_FILE + i);
		if (e) {
			fail(j, SOP_CREATE, CKPT_META_FILE + i, e);
			ret = -1;
		}
		sl->meta_ops++;
	}
	for (unsigned i = 0; i < n && !ret; i++) {
		struct stat st;
		ckpt_meta_name(a, sizeof(a), i, false);
		op_begin(sl, SOP_STAT, CKPT_META_FILE + i);
		r = fstatat(mfd, a, &st, AT_SYMLINK_NOFOLLOW);
		int e = r < 0 ? errno : (st.st_size != (off_t)sizeof(small) ? EIO : 0);
		op_end(j, SOP_STAT, CKPT_META_FILE + i);
		if (e) {
			fail(j, SOP_STAT, CKPT_META_FILE + i, e);
			ret = -1;
		}
		sl->meta_ops++;
	}
	for (unsigned i = 0; i < n && !ret; i++) {
		ckpt_meta_name(a, sizeof(a), i, false);
		ckpt_meta_name(b, sizeof(b), i, true);
		op_begin(sl, SOP_RENAME, CKPT_META_FILE + i);
		r = renameat(mfd, a, mfd, b);
		int e = errno;
		op_end(j, SOP_RENAME, CKPT_META_FILE + i);
		if (r < 0) {
			fail(j, SOP_RENAME, CKPT_META_FILE + i, e);
			ret = -1;
		}
		sl->meta_ops++;
	}
	for (unsigned i = 0; i < n && !ret; i++) {
		ckpt_meta_name(b, sizeof(b), i, true);
		op_begin(sl, SOP_UNLINK, CKPT_META_FILE + i);
		r = unlinkat(mfd, b, 0);
		int e = errno;
		op_end(j, SOP_UNLINK, CKPT_META_FILE + i);
		if (r < 0) {
			fail(j, SOP_UNLINK, CKPT_META_FILE + i, e);
			ret = -1;
		}
		sl->meta_ops++;
	}
	sl->t1_ns = ckpt_now_ns();
	close(mfd);
	if (!ret && unlinkat(j->subfd, "meta", AT_REMOVEDIR) < 0) {
		fail(j, SOP_UNLINK, CKPT_META_FILE, errno);
		ret = -1;
	}
	return ret;
}

/* ---- the worker ---- */

/*
 * Wait until every worker of the phase is set up (bounded: 5 s, then go anyway), so they start
 * together: the phase's span is then the work and not the forks (fio starts its jobs together
 * too).
 */
static void start_line(const struct ckpt_job *j)
{
	__atomic_store_n(&j->slot->ready, 1, __ATOMIC_RELEASE);
	uint64_t until = ckpt_now_ns() + 5000000000ull;
	for (;;) {
		unsigned n = 0;
		for (unsigned i = 0; i < j->nworkers; i++)
			n += __atomic_load_n(&j->all[i].ready, __ATOMIC_ACQUIRE) != 0;
		if (n == j->nworkers || ckpt_now_ns() > until)
			return;
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
}

int ckpt_worker(void *arg, int out_fd)
{
	const struct ckpt_job *j = arg;
	struct ckpt_slot *sl = j->slot;
	(void)out_fd;
	/* the parent sweeps up on a signal; a worker just ends (its group gets SIGTERM) */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (j->phase == SPHASE_META) {
		meta_burst(j);
		sl->done = 1;
		return 0;
	}
	/* block-aligned buffers, as O_DIRECT needs: the body pattern and the I/O buffer */
	struct body body;
	uint8_t *buf = NULL;
	if (body_init(&body, j->block, j->seed) < 0) {
		fail(j, SOP_ALLOC, 0, ENOMEM);
		return 0;
	}
	if (!(buf = io_buf_alloc(j->block, j->huge_buf))) {
		fail(j, SOP_ALLOC, 0, ENOMEM);
		body_release(&body);
		return 0;
	}
	memcpy(buf, body.block, j->block);
	start_line(j);
	sl->t0_ns = ckpt_now_ns();
	if (j->phase == SPHASE_READ) {
		read_all(j, buf, &body);
	} else {
		bool first = j->worker == 0;
		for (unsigned f = j->worker; f < j->files; f += j->nworkers) {
			int r = write_one(j, f, buf, first);
			first = false;
			if (r < 0)
				break;
		}
		sl->t1_ns = ckpt_now_ns();
	}
	sl->done = 1;
	body_release(&body);
	io_buf_free(buf, j->block, j->huge_buf);
	return 0;
}
