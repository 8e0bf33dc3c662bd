/*
 * recorder.c: vigil's NCCL flight recorder, built as libnccl-profiler-vigil.so. NCCL (2.23 and
 * later) loads it when NCCL_PROFILER_PLUGIN names it, and calls it for every collective and
 * point-to-point operation it enqueues and for the GPU channels that run them. It keeps the
 * latest of them in a ring in a file under /dev/shm (src/nccl/ring.h) that vigil reads from
 * another process without stopping the trainer; `vigil diagnose hang` turns the rings of every
 * rank into the rank that never entered, or never finished, the collective the others wait in.
 *
 * Why a file in /dev/shm: a hung process cannot be asked for anything, and a process killed
 * with SIGKILL runs no exit handler; memory another process can map or read survives both.
 * Nothing is written to a disk unless VIGIL_NCCL_DUMP_DIR asks for dumps (at finalize, at
 * exit, on VIGIL_NCCL_DUMP_SIGNAL).
 *
 * Hot path (startEvent/stopEvent, several per operation): one atomic increment to claim a
 * record, a few stores, clock_gettime through the vDSO; no allocation, no lock, no system call.
 * Completion: NCCL's stopEvent of a collective only means "enqueued"; the GPU side comes as
 * KernelCh child events (API v3 and later) whose parent is the collective's handle. The
 * collective is done when as many channels as it was given have stopped. Without KernelCh
 * events (v1, v2) the proxy operations stand in; without either (intra-node, v1/v2) done times
 * stay 0 and the reader says completion is not reported.
 *
 * The NCCL API structures are declared here from NCCL's ext-profiler documentation (the
 * project declares NVML's and libmicrohttpd's the same way): versions 1 to 5, the ones NCCL
 * 2.23 to 2.28 look for. A newer NCCL that looks for a version this file does not export falls
 * back to the newest one it does, or runs without the plugin.
 *
 * Environment (all optional):
 *   VIGIL_NCCL_RING_DIR     where the ring file lives (default /dev/shm)
 *   VIGIL_NCCL_RING_MIB     its size, 1 to 1024 MiB (default 4: 32,000 operations)
 *   VIGIL_NCCL_DUMP_DIR     write dumps there at finalize, at exit and on the signal
 *   VIGIL_NCCL_DUMP_SIGNAL  a signal number or name (USR1, USR2) that dumps; only installed
 *                           where the process left that signal at its default
 *   VIGIL_NCCL_JOB          the job's name in file names (default SLURM_JOB_ID, else "job")
 */
#define _GNU_SOURCE
#include "ring.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#include "profiler_api.h"

/* ---- the process's state ---- */

/*
 * A handle NCCL holds for one of our operations: one per ring slot, in private memory, so the
 * hot path allocates nothing. A child event (a GPU channel, a proxy operation) gets its
 * parent's handle with a tag in the low bits (handles are 64-byte aligned), so it needs no
 * memory of its own either.
 */
struct handle {
	_Atomic uint32_t ch_started, ch_stopped;
	_Atomic uint32_t px_started, px_stopped;
	uint64_t index;  /* the ring index it was claimed for */
	uint32_t nchannels;
	uint16_t comm;
	uint8_t kind;
	_Atomic uint8_t done;
} __attribute__((aligned(64)));

enum { TAG_KERNEL = 1, TAG_PROXY = 2, TAG_MASK = 3 };

struct comm_ctx {
	uint16_t slot;
	bool used;
};

static struct {
	_Atomic int state; /* 0 not set up, 1 setting up, 2 ready, -1 failed */
	struct nrec_header *hdr;
	struct nrec_record *rec;
	struct handle *handles;
	size_t map_size;
	uint32_t capacity;
	char path[PATH_MAX];
	char dump_dir[PATH_MAX];
	int api;
	_Atomic int live_comms;
	_Atomic uint64_t v123_last_hash; /* v1 to v3: the slot of the last hash seen */
	_Atomic uint32_t v123_last_slot;
	struct comm_ctx ctx[NREC_COMMS_MAX];
	_Atomic int dumping;
} R;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void copy_name(char *dst, size_t size, const char *src)
{
	size_t i = 0;
	if (src)
		for (; src[i] && i + 1 < size; i++)
			dst[i] = src[i];
	for (; i < size; i++)
		dst[i] = 0;
}

static long env_long(const char *name, long dflt, long min, long max)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || n < min || n > max)
		return dflt;
	return n;
}

static int env_rank(void)
{
	static const char *const names[] = { "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
					     "PMI_RANK" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		long r = env_long(names[i], -1, 0, INT32_MAX);
		if (r >= 0)
			return (int)r;
	}
	return -1;
}

/* A name safe in a file name: letters, digits, '.', '_', '-'; anything else becomes '_'. */
static void safe_part(char *dst, size_t size, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < size; i++) {
		char c = src[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '.' || c == '_' || c == '-';
		dst[i] = ok && !(i == 0 && c == '.') ? c : '_';
	}
	dst[i] = 0;
	if (!i && size > 1) {
		dst[0] = '_';
		dst[1] = 0;
	}
}

/* ".ring" or ".N.ring", what follows the pid in our names */
static bool ends_with_ring(const char *p)
{
	if (!strcmp(p, ".ring"))
		return true;
	if (*p != '.' || !(p[1] >= '0' && p[1] <= '9'))
		return false;
	p++;
	while (*p >= '0' && *p <= '9')
		p++;
	return !strcmp(p, ".ring");
}

/* Field 22 of /proc/PID/stat (after the comm's last ')'), the start time in clock ticks since
 * boot; 0 when it cannot be read. "self" for this process. */
static uint64_t start_ticks(const char *pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* ") S ppid ...": p is at the space before field 3; each step moves to the next
	 * field's space, so 19 steps reach the space before field 22 */
	p++;
	for (int f = 2; f < 21 && p; f++)
		p = strchr(p + 1, ' ');
	if (!p)
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p + 1, &end, 10);
	return errno || end == p + 1 ? 0 : (uint64_t)v;
}

static bool read_boot_id(uint8_t id[16])
{
	char buf[64];
	memset(id, 0, 16);
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	int k = 0;
	for (char *p = buf; *p && k < 32; p++) {
		int v = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
		if (v < 0)
			continue;
		id[k / 2] = (uint8_t)(id[k / 2] << 4 | v);
		k++;
	}
	return k == 32;
}

/* Who this process is, beyond its pid: its pid namespace, start time and boot. */
struct ident {
	uint64_t ns_dev, ns_ino, start;
	uint8_t boot[16];
	bool ok; /* all of it read, and /proc is this pid namespace's */
};

static void self_ident(struct ident *id)
{
	memset(id, 0, sizeof(*id));
	struct stat st;
	char link[32] = "";
	/* /proc mounted from another pid namespace (unshare -p without a new /proc) would show
	 * other processes under our pids: then nothing read there is about us */
	ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = 0;
	if (strtol(link, NULL, 10) != (long)getpid() || stat("/proc/self/ns/pid", &st) != 0)
		return;
	id->ns_dev = (uint64_t)st.st_dev;
	id->ns_ino = (uint64_t)st.st_ino;
	id->start = start_ticks("self");
	id->ok = id->start && read_boot_id(id->boot);
}

/*
 * Whether the ring whose header is h is provably its owner's no longer: written on another
 * boot, or in our own pid namespace by a pid that is gone or now another process (another
 * start time). A ring of another pid namespace (a container sharing /dev/shm), of an older
 * format, or whose owner cannot be told is kept: a recorder never removes a live rank's ring.
 */
static bool owner_gone(const struct nrec_header *h, const struct ident *me)
{
	static const uint8_t zero[16];
	if (!me->ok || h->version != NREC_VERSION || h->pid <= 0 || !h->start_ticks ||
	    !memcmp(h->boot_id, zero, 16))
		return false;
	if (memcmp(h->boot_id, me->boot, 16))
		return true; /* a configured ring dir survived a reboot */
	if (h->pidns_dev != me->ns_dev || h->pidns_ino != me->ns_ino)
		return false;
	char pid[24];
	snprintf(pid, sizeof(pid), "%d", (int)h->pid);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s", pid);
	struct stat st;
	if (stat(path, &st) != 0)
		return errno == ENOENT;
	uint64_t t = start_ticks(pid);
	return t && t != h->start_ticks;
}

/*
 * Remove the rings of this host's processes that died without cleaning up (SIGKILL): they
 * would fill /dev/shm, which is memory. Only files named like ours, for this host and job,
 * regular (not followed), owned by us, whose header names the pid in the name and an owner
 * that is provably gone (owner_gone).
 */
static void sweep_dead(const char *dir, const char *prefix, const struct ident *me)
{
	if (!me->ok)
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	size_t plen = strlen(prefix);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, plen))
			continue;
		char *end;
		long pid = strtol(e->d_name + plen, &end, 10);
		if (end == e->d_name + plen || !ends_with_ring(end) ||
		    pid == (long)getpid())
			continue;
		int fd = openat(dirfd(d), e->d_name,
				O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			continue;
		struct stat st, lst;
		static struct nrec_header h; /* 16 KiB: not on a trainer thread's stack */
		bool gone = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
			    pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
			    !memcmp(h.magic, NREC_MAGIC, 8) && h.pid == pid && owner_gone(&h, me);
		close(fd);
		/* the name still the file read (not swapped since): then remove it */
		if (gone && fstatat(dirfd(d), e->d_name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
		    lst.st_ino == st.st_ino && lst.st_dev == st.st_dev)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

static void dump(uint32_t reason);

static void on_exit_dump(void)
{
	/* a forked child (a data loader worker that calls exit()) inherits this handler: the
	 * ring and its dump are its parent's, not its to write or remove */
	if (!R.hdr || R.hdr->pid != (int32_t)getpid())
		return;
	if (R.dump_dir[0])
		dump(NREC_EXIT);
	/* the live ring goes with the process that wrote it; a dump (if asked) stays */
	if (R.path[0])
		unlink(R.path);
}

static void on_signal(int sig)
{
	(void)sig;
	int e = errno;
	if (R.hdr && R.hdr->pid == (int32_t)getpid())
		dump(NREC_SIGNAL);
	errno = e;
}

static int parse_signal(const char *v)
{
	if (!v || !*v)
		return 0;
	if (!strcmp(v, "USR1") || !strcmp(v, "SIGUSR1"))
		return SIGUSR1;
	if (!strcmp(v, "USR2") || !strcmp(v, "SIGUSR2"))
		return SIGUSR2;
	char *end;
	long n = strtol(v, &end, 10);
	return *end || n <= 0 || n >= NSIG || n == SIGKILL || n == SIGSTOP ? 0 : (int)n;
}

/*
 * The recorder declines (init fails and NCCL runs on without it): one line on stderr with the
 * reason, so that a trainer's log says why no ring exists. Never more than that: a recorder
 * never stops a trainer.
 */
static void decline(const char *dir, const char *what, int err)
{
	char clean[256];
	size_t i = 0;
	for (; dir[i] && i + 1 < sizeof(clean); i++)
		clean[i] = (unsigned char)dir[i] < 0x20 || dir[i] == 0x7f ? '?' : dir[i];
	clean[i] = 0;
	fprintf(stderr, "vigil nccl recorder: not recording: %s in '%s': %s\n", what, clean,
		strerror(err));
}

static int setup_once(void)
{
	char host[64] = "", job[64], jraw[128], dir[PATH_MAX];
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	const char *j = getenv("VIGIL_NCCL_JOB");
	if (!j || !*j)
		j = getenv("SLURM_JOB_ID");
	snprintf(jraw, sizeof(jraw), "%s", j && *j ? j : "job");
	safe_part(job, sizeof(job), jraw);
	char shost[64];
	safe_part(shost, sizeof(shost), host);
	const char *d = getenv("VIGIL_NCCL_RING_DIR");
	snprintf(dir, sizeof(dir), "%s", d && *d ? d : "/dev/shm");

	long mib = env_long("VIGIL_NCCL_RING_MIB", 4, 1, 1024);
	size_t records = ((size_t)mib << 20) / sizeof(struct nrec_record);
	size_t size = sizeof(struct nrec_header) + records * sizeof(struct nrec_record);

	char prefix[256];
	snprintf(prefix, sizeof(prefix), "vigil-nccl-%s-%s-", job, shost);
	struct ident me;
	self_ident(&me);
	sweep_dead(dir, prefix, &me);

	int fd = -1;
	for (int i = 0; i < 8 && fd < 0; i++) {
		int w = i ? snprintf(R.path, sizeof(R.path), "%s/%s%ld.%d.ring", dir, prefix,
				     (long)getpid(), i)
			  : snprintf(R.path, sizeof(R.path), "%s/%s%ld.ring", dir, prefix,
				     (long)getpid());
		if (w < 0 || (size_t)w >= sizeof(R.path)) {
			errno = ENAMETOOLONG;
			break;
		}
		/* O_EXCL and O_NOFOLLOW: a name planted in a shared directory is never followed
		 * or reused; another name is tried */
		fd = open(R.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		decline(dir, "cannot make its ring there", errno);
		R.path[0] = 0;
		return -1;
	}
	/* the pages reserved now, not at the first store: ftruncate alone makes a sparse file,
	 * and a store into a page tmpfs cannot supply (a nearly full /dev/shm) is SIGBUS in the
	 * trainer. posix_fallocate fails instead (ENOSPC), and the recorder declines */
	int fe = posix_fallocate(fd, 0, (off_t)size);
	if (fe != 0) {
		close(fd);
		unlink(R.path);
		R.path[0] = 0;
		decline(dir, "cannot reserve its ring", fe);
		return -1;
	}
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		decline(dir, "cannot map its ring", errno);
		unlink(R.path);
		R.path[0] = 0;
		return -1;
	}
	/* private: NCCL's handles (one per ring slot), allocated once, here, not per event */
	R.handles = calloc(records, sizeof(struct handle));
	if (!R.handles) {
		decline(dir, "no memory for its handles", ENOMEM);
		munmap(m, size);
		unlink(R.path);
		R.path[0] = 0;
		return -1;
	}
	R.hdr = m;
	R.rec = (struct nrec_record *)((char *)m + sizeof(struct nrec_header));
	R.map_size = size;
	R.capacity = (uint32_t)records;

	struct nrec_header *h = R.hdr;
	h->version = NREC_VERSION;
	h->header_size = sizeof(struct nrec_header);
	h->record_size = sizeof(struct nrec_record);
	h->capacity = R.capacity;
	h->pid = (int32_t)getpid();
	h->global_rank = env_rank();
	h->api_version = R.api;
	h->created_ns = now_ns();
	h->pidns_dev = me.ns_dev;
	h->pidns_ino = me.ns_ino;
	h->start_ticks = me.start;
	memcpy(h->boot_id, me.boot, sizeof(h->boot_id));
	copy_name(h->host, sizeof(h->host), host);
	copy_name(h->job, sizeof(h->job), jraw);

	const char *dd = getenv("VIGIL_NCCL_DUMP_DIR");
	if (dd && *dd && strlen(dd) < sizeof(R.dump_dir) - 1)
		snprintf(R.dump_dir, sizeof(R.dump_dir), "%s", dd);
	int sig = parse_signal(getenv("VIGIL_NCCL_DUMP_SIGNAL"));
	if (sig) {
		struct sigaction old, sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		/* never take a signal the trainer handles itself */
		if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
		    !(old.sa_flags & SA_SIGINFO) && sigaction(sig, &sa, NULL) == 0)
			h->dump_signal = sig;
	}
	atexit(on_exit_dump);
	/* the magic last: a reader never takes a half-made header for a ring */
	atomic_thread_fence(memory_order_release);
	memcpy(h->magic, NREC_MAGIC, 8);
	return 0;
}

static int setup(void)
{
	int expect = 0;
	if (atomic_compare_exchange_strong(&R.state, &expect, 1)) {
		int r = setup_once();
		atomic_store(&R.state, r == 0 ? 2 : -1);
		return r;
	}
	while ((expect = atomic_load(&R.state)) == 1)
		sched_yield();
	return expect == 2 ? 0 : -1;
}

/* A communicator's slot: a new one, or the shared last one when the table is full. */
static uint16_t comm_slot(uint64_t hash, const char *name, int nranks, int rank, int nnodes)
{
	struct nrec_header *h = R.hdr;
	uint32_t n = atomic_fetch_add((_Atomic uint32_t *)&h->ncomms, 1);
	uint16_t slot;
	if (n >= NREC_COMMS_MAX) {
		atomic_store((_Atomic uint32_t *)&h->ncomms, NREC_COMMS_MAX);
		slot = NREC_COMMS_MAX - 1;
		h->comms[slot].flags |= NREC_COMM_SHARED;
		return slot;
	}
	slot = (uint16_t)n;
	struct nrec_comm *c = &h->comms[slot];
	c->hash = hash;
	copy_name(c->name, sizeof(c->name), name);
	c->nranks = nranks;
	c->rank = rank;
	c->nnodes = nnodes;
	c->created_ns = now_ns();
	return slot;
}

static struct comm_ctx *new_ctx(uint16_t slot)
{
	for (size_t i = 0; i < NREC_COMMS_MAX; i++) {
		bool f = false;
		if (atomic_compare_exchange_strong((_Atomic bool *)&R.ctx[i].used, &f, true)) {
			R.ctx[i].slot = slot;
			atomic_fetch_add(&R.live_comms, 1);
			return &R.ctx[i];
		}
	}
	return NULL;
}

/* v1 to v3 name the communicator in each descriptor, not at init: the slot for a hash. */
static uint16_t slot_for_hash(uint64_t hash, int rank)
{
	if (atomic_load(&R.v123_last_hash) == hash && atomic_load(&R.v123_last_slot) < NREC_COMMS_MAX)
		return (uint16_t)atomic_load(&R.v123_last_slot);
	struct nrec_header *h = R.hdr;
	uint32_t n = atomic_load((_Atomic uint32_t *)&h->ncomms);
	for (uint32_t i = 0; i < n && i < NREC_COMMS_MAX; i++)
		if (h->comms[i].hash == hash) {
			atomic_store(&R.v123_last_slot, i);
			atomic_store(&R.v123_last_hash, hash);
			return (uint16_t)i;
		}
	uint16_t s = comm_slot(hash, "", -1, rank, -1);
	atomic_store(&R.v123_last_slot, s);
	atomic_store(&R.v123_last_hash, hash);
	return s;
}

static size_t dtype_size(const char *t)
{
	if (!t)
		return 0;
	if (!strncmp(t, "nccl", 4))
		t += 4;
	if (!strcmp(t, "Int8") || !strcmp(t, "Uint8") || !strncmp(t, "Float8", 6))
		return 1;
	if (!strcmp(t, "Float16") || !strcmp(t, "Bfloat16"))
		return 2;
	if (!strcmp(t, "Int32") || !strcmp(t, "Uint32") || !strcmp(t, "Float32"))
		return 4;
	if (!strcmp(t, "Int64") || !strcmp(t, "Uint64") || !strcmp(t, "Float64"))
		return 8;
	return 0;
}

static const char *v1_func(uint8_t f)
{
	static const char *const n[] = { "Broadcast", "Reduce", "AllGather", "ReduceScatter",
					 "AllReduce", "SendRecv", "Send", "Recv" };
	return f < sizeof(n) / sizeof(n[0]) ? n[f] : "Unknown";
}

static const char *v1_dtype(uint8_t t)
{
	static const char *const n[] = { "ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32",
					 "ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32",
					 "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
					 "ncclFloat8e5m2" };
	return t < sizeof(n) / sizeof(n[0]) ? n[t] : "Unknown";
}

/* What every version's collective or p2p descriptor boils down to. */
struct op {
	uint8_t kind;
	uint16_t comm;
	uint64_t nccl_seq;
	const char *func, *dtype;
	size_t count;
	int peer;
	unsigned nchannels;
};

static void *record_op(const struct op *o)
{
	struct nrec_header *h = R.hdr;
	struct nrec_comm *c = &h->comms[o->comm];
	uint64_t t = now_ns();
	uint64_t idx = atomic_fetch_add((_Atomic uint64_t *)&h->written, 1);
	struct nrec_record *r = &R.rec[idx % R.capacity];
	struct handle *hd = &R.handles[idx % R.capacity];
	_Atomic uint64_t *stamp = (_Atomic uint64_t *)&r->stamp;

	atomic_store_explicit(stamp, 2 * idx + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	uint64_t opi = o->kind == NREC_COLL
			       ? atomic_fetch_add((_Atomic uint64_t *)&c->coll_enqueued, 1) + 1
			       : atomic_fetch_add((_Atomic uint64_t *)&c->p2p_enqueued, 1) + 1;
	size_t es = dtype_size(o->dtype);
	r->op_index = opi;
	r->nccl_seq = o->nccl_seq;
	r->count = o->count;
	r->bytes = es ? (uint64_t)o->count * es : 0;
	r->enqueued_ns = t;
	atomic_store_explicit((_Atomic uint64_t *)&r->started_ns, 0, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&r->done_ns, 0, memory_order_relaxed);
	r->peer = o->peer;
	r->comm = o->comm;
	r->kind = o->kind;
	r->nchannels = (uint8_t)(o->nchannels > 255 ? 255 : o->nchannels);
	copy_name(r->func, sizeof(r->func), o->func);
	copy_name(r->dtype, sizeof(r->dtype), o->dtype && !strncmp(o->dtype, "nccl", 4) ? o->dtype + 4 : o->dtype);
	if (o->kind == NREC_COLL) {
		c->last_bytes = r->bytes;
		copy_name(c->last_func, sizeof(c->last_func), o->func);
		atomic_store_explicit((_Atomic uint64_t *)&c->last_enqueued_ns, t, memory_order_relaxed);
	}
	atomic_store_explicit(&hd->ch_started, 0, memory_order_relaxed);
	atomic_store_explicit(&hd->ch_stopped, 0, memory_order_relaxed);
	atomic_store_explicit(&hd->px_started, 0, memory_order_relaxed);
	atomic_store_explicit(&hd->px_stopped, 0, memory_order_relaxed);
	atomic_store_explicit(&hd->done, 0, memory_order_relaxed);
	hd->index = idx;
	hd->nchannels = o->nchannels;
	hd->comm = o->comm;
	hd->kind = o->kind;
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(stamp, 2 * idx + 2, memory_order_release);
	return hd;
}

static void store_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
	while (cur < v && !atomic_compare_exchange_weak(p, &cur, v))
		;
}

static void op_started(struct handle *hd)
{
	struct nrec_record *r = &R.rec[hd->index % R.capacity];
	if (r->stamp != 2 * hd->index + 2)
		return; /* the slot was reused: this operation left the ring */
	/* the first channel's start is the collective's: the others pay one load, no clock */
	if (atomic_load_explicit((_Atomic uint64_t *)&r->started_ns, memory_order_relaxed))
		return;
	uint64_t zero = 0;
	atomic_compare_exchange_strong((_Atomic uint64_t *)&r->started_ns, &zero, now_ns());
	if (hd->kind == NREC_COLL)
		store_max((_Atomic uint64_t *)&R.hdr->comms[hd->comm].coll_started, r->op_index);
}

static void op_done(struct handle *hd)
{
	uint8_t f = 0;
	if (!atomic_compare_exchange_strong(&hd->done, &f, 1))
		return;
	struct nrec_record *r = &R.rec[hd->index % R.capacity];
	if (r->stamp != 2 * hd->index + 2)
		return;
	uint64_t t = now_ns();
	atomic_store_explicit((_Atomic uint64_t *)&r->done_ns, t, memory_order_relaxed);
	struct nrec_comm *c = &R.hdr->comms[hd->comm];
	if (hd->kind == NREC_COLL)
		store_max((_Atomic uint64_t *)&c->coll_done, r->op_index);
	else
		store_max((_Atomic uint64_t *)&c->p2p_done, r->op_index);
	store_max((_Atomic uint64_t *)&c->last_done_ns, t);
}

/* A child of one of our operations: its handle, tagged. NULL for anything else. */
static void *child(void *parent, int tag)
{
	uintptr_t p = (uintptr_t)parent;
	uintptr_t lo = (uintptr_t)R.handles, hi = lo + (uintptr_t)R.capacity * sizeof(struct handle);
	if (!parent || p < lo || p >= hi || (p - lo) % sizeof(struct handle))
		return NULL;
	return (void *)(p | (uintptr_t)tag);
}

static void child_started(void *parent, int tag)
{
	struct handle *hd = (struct handle *)parent;
	if (tag == TAG_KERNEL) {
		atomic_fetch_add(&hd->ch_started, 1);
		_Atomic uint32_t *flags = (_Atomic uint32_t *)&R.hdr->comms[hd->comm].flags;
		if (!(atomic_load_explicit(flags, memory_order_relaxed) & NREC_COMM_KERNEL_EVENTS))
			atomic_fetch_or(flags, NREC_COMM_KERNEL_EVENTS);
		op_started(hd);
	} else {
		atomic_fetch_add(&hd->px_started, 1);
	}
}

static ncclResult_t stop_event(void *eHandle)
{
	uintptr_t p = (uintptr_t)eHandle;
	int tag = (int)(p & TAG_MASK);
	if (!eHandle || !tag)
		return ncclSuccess; /* our operation's own stop: "enqueued", nothing to note */
	struct handle *hd = (struct handle *)(p & ~(uintptr_t)TAG_MASK);
	if (tag == TAG_KERNEL) {
		uint32_t n = atomic_fetch_add(&hd->ch_stopped, 1) + 1;
		uint32_t want = hd->nchannels ? hd->nchannels : atomic_load(&hd->ch_started);
		if (n >= want)
			op_done(hd);
	} else {
		uint32_t n = atomic_fetch_add(&hd->px_stopped, 1) + 1;
		/* proxy operations stand in only where the API has no GPU channel events */
		if (R.api < 3 && n >= atomic_load(&hd->px_started))
			op_done(hd);
	}
	return ncclSuccess;
}

static ncclResult_t record_state(void *eHandle, event_state s, void *args)
{
	(void)eHandle;
	(void)s;
	(void)args;
	return ncclSuccess;
}

static int activation(void)
{
	int m = ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp;
	if (R.api >= 3)
		m |= ncclProfileKernelCh;
	return m;
}

static ncclResult_t finalize(void *context)
{
	struct comm_ctx *cx = context;
	if (cx && cx->slot < NREC_COMMS_MAX && R.hdr)
		R.hdr->comms[cx->slot].flags |= NREC_COMM_FINALIZED;
	if (cx && atomic_fetch_sub(&R.live_comms, 1) == 1 && R.dump_dir[0])
		dump(NREC_FINALIZE);
	if (cx)
		atomic_store((_Atomic bool *)&cx->used, false);
	return ncclSuccess;
}

/* ---- versions 4 and 5: the communicator at init ---- */

static ncclResult_t init_comm(int api, void **context, int *mask, uint64_t hash, const char *name,
			      int nnodes, int nranks, int rank)
{
	if (!R.api)
		R.api = api;
	if (setup() != 0)
		return ncclInternalError; /* NCCL runs on without the recorder */
	struct comm_ctx *cx = new_ctx(comm_slot(hash, name, nranks, rank, nnodes));
	if (!cx)
		return ncclInternalError;
	*context = cx;
	*mask = activation();
	return ncclSuccess;
}

static ncclResult_t init_v5(void **context, uint64_t commId, int *mask, const char *commName,
			    int nNodes, int nranks, int rank, ncclDebugLogger_t logfn)
{
	(void)logfn;
	return init_comm(5, context, mask, commId, commName, nNodes, nranks, rank);
}

static ncclResult_t init_v4(void **context, int *mask, const char *commName, uint64_t commHash,
			    int nNodes, int nranks, int rank, ncclDebugLogger_t logfn)
{
	(void)logfn;
	return init_comm(4, context, mask, commHash, commName, nNodes, nranks, rank);
}

static ncclResult_t start_v45(void *context, void **eHandle, uint64_t type, void *parent,
			      const void *coll_or_p2p, bool v5)
{
	*eHandle = NULL;
	struct comm_ctx *cx = context;
	if (!cx || R.state != 2)
		return ncclSuccess;
	struct op o = { .comm = cx->slot, .peer = -1 };
	if (type == ncclProfileColl) {
		const descr_v4 *d4 = coll_or_p2p;
		const descr_v5 *d5 = coll_or_p2p;
		o.kind = NREC_COLL;
		o.nccl_seq = v5 ? d5->coll.seqNumber : d4->coll.seqNumber;
		o.func = v5 ? d5->coll.func : d4->coll.func;
		o.dtype = v5 ? d5->coll.datatype : d4->coll.datatype;
		o.count = v5 ? d5->coll.count : d4->coll.count;
		o.peer = v5 ? d5->coll.root : d4->coll.root;
		o.nchannels = v5 ? d5->coll.nChannels : d4->coll.nChannels;
	} else if (type == ncclProfileP2p) {
		const descr_v4 *d4 = coll_or_p2p;
		const descr_v5 *d5 = coll_or_p2p;
		o.kind = NREC_P2P;
		o.func = v5 ? d5->p2p.func : d4->p2p.func;
		o.dtype = v5 ? d5->p2p.datatype : d4->p2p.datatype;
		o.count = v5 ? d5->p2p.count : d4->p2p.count;
		o.peer = v5 ? d5->p2p.peer : d4->p2p.peer;
		o.nchannels = v5 ? d5->p2p.nChannels : d4->p2p.nChannels;
	} else if (type == ncclProfileKernelCh || type == ncclProfileProxyOp) {
		int tag = type == ncclProfileKernelCh ? TAG_KERNEL : TAG_PROXY;
		void *c = child(parent, tag);
		if (c) {
			child_started(parent, tag);
			*eHandle = c;
		}
		return ncclSuccess;
	} else {
		return ncclSuccess;
	}
	*eHandle = record_op(&o);
	return ncclSuccess;
}

static ncclResult_t start_v5(void *context, void **eHandle, descr_v5 *d)
{
	return start_v45(context, eHandle, d->type, d->parentObj, d, true);
}

static ncclResult_t start_v4(void *context, void **eHandle, descr_v4 *d)
{
	return start_v45(context, eHandle, d->type, d->parentObj, d, false);
}

/* ---- versions 1 to 3: one context, the communicator in each descriptor ---- */

static ncclResult_t init_v123(int api, void **context, int *mask)
{
	if (!R.api)
		R.api = api;
	if (setup() != 0)
		return ncclInternalError;
	struct comm_ctx *cx = new_ctx(UINT16_MAX); /* a context, not a communicator */
	if (!cx)
		return ncclInternalError;
	*context = cx;
	*mask = activation();
	return ncclSuccess;
}

static ncclResult_t init_v3(void **context, int *mask)
{
	return init_v123(3, context, mask);
}

static ncclResult_t init_v2(void **context, int *mask)
{
	return init_v123(2, context, mask);
}

static ncclResult_t init_v1(void **context, int *mask)
{
	return init_v123(1, context, mask);
}

static ncclResult_t start_child(void **eHandle, uint8_t type, void *parent)
{
	int tag = type == ncclProfileKernelCh ? TAG_KERNEL : TAG_PROXY;
	void *c = child(parent, tag);
	if (c) {
		child_started(parent, tag);
		*eHandle = c;
	}
	return ncclSuccess;
}

static ncclResult_t start_v3(void *context, void **eHandle, descr_v3 *d)
{
	*eHandle = NULL;
	if (!context || R.state != 2)
		return ncclSuccess;
	struct op o = { .peer = -1 };
	if (d->type == ncclProfileColl) {
		o = (struct op){ NREC_COLL, slot_for_hash(d->coll.commHash, d->rank), d->coll.seqNumber,
				 d->coll.func, d->coll.datatype, d->coll.count, d->coll.root,
				 d->coll.nMaxChannels };
	} else if (d->type == ncclProfileP2p) {
		o = (struct op){ NREC_P2P, slot_for_hash(d->p2p.commHash, d->rank), 0, d->p2p.func,
				 d->p2p.datatype, d->p2p.count, d->p2p.peer, 0 };
	} else if (d->type == ncclProfileKernelCh || d->type == ncclProfileProxyOp) {
		return start_child(eHandle, d->type, d->parentObj);
	} else {
		return ncclSuccess;
	}
	*eHandle = record_op(&o);
	return ncclSuccess;
}

static ncclResult_t start_v2(void *context, void **eHandle, descr_v2 *d)
{
	*eHandle = NULL;
	if (!context || R.state != 2)
		return ncclSuccess;
	struct op o = { .peer = -1 };
	if (d->type == ncclProfileColl) {
		o = (struct op){ NREC_COLL, slot_for_hash(d->coll.commHash, d->rank), d->coll.seqNumber,
				 d->coll.func, d->coll.datatype, d->coll.count, d->coll.root, 0 };
	} else if (d->type == ncclProfileP2p) {
		o = (struct op){ NREC_P2P, slot_for_hash(d->p2p.commHash, d->rank), 0, d->p2p.func,
				 d->p2p.datatype, d->p2p.count, d->p2p.peer, 0 };
	} else if (d->type == ncclProfileProxyOp) {
		return start_child(eHandle, d->type, d->parentObj);
	} else {
		return ncclSuccess;
	}
	*eHandle = record_op(&o);
	return ncclSuccess;
}

static ncclResult_t start_v1(void *context, void **eHandle, descr_v1 *d)
{
	*eHandle = NULL;
	if (!context || R.state != 2)
		return ncclSuccess;
	struct op o = { .peer = -1 };
	if (d->type == ncclProfileColl) {
		o = (struct op){ NREC_COLL, slot_for_hash(d->coll.commHash, d->rank), d->coll.seqNumber,
				 v1_func(d->coll.func), v1_dtype(d->coll.datatype), d->coll.count,
				 d->coll.root, 0 };
	} else if (d->type == ncclProfileP2p) {
		o = (struct op){ NREC_P2P, slot_for_hash(d->p2p.commHash, d->rank), 0,
				 v1_func(d->p2p.func), v1_dtype(d->p2p.datatype), d->p2p.count,
				 d->p2p.peer, 0 };
	} else if (d->type == ncclProfileProxyOp) {
		return start_child(eHandle, d->type, d->parentObj);
	} else {
		return ncclSuccess;
	}
	*eHandle = record_op(&o);
	return ncclSuccess;
}

/* ---- dumps ---- */

static bool write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static void add_str(char *buf, size_t size, size_t *len, const char *s)
{
	while (*s && *len + 1 < size)
		buf[(*len)++] = *s++;
	buf[*len] = 0;
}

static void add_num(char *buf, size_t size, size_t *len, unsigned long long v)
{
	char d[24];
	int n = 0;
	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 23);
	while (n && *len + 1 < size)
		buf[(*len)++] = d[--n];
	buf[*len] = 0;
}

/*
 * Copy the ring to VIGIL_NCCL_DUMP_DIR/nccl-HOST-rRANK-pPID.ring: a temporary name made with
 * O_EXCL | O_NOFOLLOW, then rename, so a reader never sees half a dump and a planted link is
 * never written through. Async-signal-safe (open, write, rename, close; no stdio, no malloc):
 * it runs from the signal handler too. One at a time.
 */
static void dump(uint32_t reason)
{
	if (!R.hdr || !R.dump_dir[0] || R.state != 2)
		return;
	int busy = 0;
	if (!atomic_compare_exchange_strong(&R.dumping, &busy, 1))
		return;
	char shost[64], final[PATH_MAX], tmp[PATH_MAX];
	safe_part(shost, sizeof(shost), R.hdr->host);
	size_t n = 0;
	final[0] = 0;
	add_str(final, sizeof(final), &n, R.dump_dir);
	add_str(final, sizeof(final), &n, "/nccl-");
	add_str(final, sizeof(final), &n, shost);
	add_str(final, sizeof(final), &n, "-r");
	if (R.hdr->global_rank >= 0)
		add_num(final, sizeof(final), &n, (unsigned long long)R.hdr->global_rank);
	else
		add_str(final, sizeof(final), &n, "x");
	add_str(final, sizeof(final), &n, "-p");
	add_num(final, sizeof(final), &n, (unsigned long long)R.hdr->pid);
	add_str(final, sizeof(final), &n, ".ring");
	memcpy(tmp, final, n + 1);
	size_t t = n;
	add_str(tmp, sizeof(tmp), &t, ".tmp");
	if (t == n || n + 1 >= sizeof(final)) {
		atomic_store(&R.dumping, 0);
		return;
	}
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0) {
		static struct nrec_header copy; /* static: no 16 KiB on a signal stack */
		memcpy(&copy, R.hdr, sizeof(copy));
		copy.reason = reason;
		copy.dumped_ns = now_ns();
		bool ok = write_all(fd, &copy, sizeof(copy)) &&
			  write_all(fd, R.rec, (size_t)R.capacity * sizeof(struct nrec_record));
		close(fd);
		if (ok && rename(tmp, final) == 0) {
			atomic_store(&R.dumping, 0);
			return;
		}
		unlink(tmp);
	}
	atomic_store(&R.dumping, 0);
}

/* ---- the exported tables ---- */

EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = { "vigil", init_v5, start_v5, stop_event,
						    record_state, finalize };
EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = { "vigil", init_v4, start_v4, stop_event,
						    record_state, finalize };
EXPORT const ncclProfiler_v3_t ncclProfiler_v3 = { "vigil", init_v3, start_v3, stop_event,
						    record_state, finalize };
EXPORT const ncclProfiler_v2_t ncclProfiler_v2 = { "vigil", init_v2, start_v2, stop_event,
						    record_state, finalize };
EXPORT const ncclProfiler_v1_t ncclProfiler_v1 = { "vigil", init_v1, start_v1, stop_event,
						    record_state, finalize };
