/*
 * logcat.c: the catalog of known error lines for 'vigil diagnose logs' (see logs.h) and the one
 * function that judges a line, dlog_classify(). Each known line is a cause (what it means, what
 * to do, and whether it names a cause, is a generic error, or is the cascade of another rank's
 * failure) and the fixed strings that give it away, in priority order: a line that holds
 * several ("NCCL WARN Cuda failure 'out of memory'") is the cause of the first in the table.
 * Xid and SXid lines are judged by the kernel log parser and the Xid catalog (src/logs/), not
 * copied here.
 *
 * Speed: a log of a gigabyte is mostly lines that match nothing. Instead of one memmem() per
 * string per line, each line is scanned once: the first four bytes of every string are hashed
 * into a table, and only where a window of the line hashes to a used bucket are the strings of
 * that bucket compared.
 */
#include "logs.h"
#include "../logs/xid.h"

#include <ctype.h>
#include <limits.h>

enum {
	C_HOST_OOM,
	C_CUDA_OOM,
	C_ILLEGAL,
	C_ASSERT,
	C_ECC,
	C_LAUNCH,
	C_DISK_FULL,
	C_QUOTA,
	C_STALE,
	C_EIO,
	C_ROFS,
	C_CKPT,
	C_CKPT_READ,
	C_FSDP,
	C_SEGV,
	C_SIGBUS,
	C_NODE,
	C_NCCL_NET,
	C_NCCL_REMOTE,
	C_NCCL_TIMEOUT,
	C_NCCL_ERROR,
	C_CUDA_ERROR,
	C_RANK_EXIT,
	C_PYEXC,
	C_GPU_OFF_BUS,
	C_KILLED,
	C_ABORT,
	C_TIME_LIMIT,
	C_PREEMPTED,
	C_NAN,
	C_RDZV,
	C_LAUNCHER_SIG,
	/* not causes of their own: routes to the kernel parser and srun's lines */
	C_KERNEL,
	C_SRUN,
	C_KILLWORD, /* a shell's "Killed" (job control's word for SIGKILL) */
	C_EXIT,   /* a launcher's line with the exit code: its cause is the code's (dlog_match_exit) */
	C_PYCAND, /* a line that may be a Python exception's last line */
};

struct cause {
	const char *code, *cause, *action;
	enum action act;
	enum dlog_tier tier;
};

#define T0 DLOG_TIER_SPECIFIC
#define T1 DLOG_TIER_GENERIC
#define T2 DLOG_TIER_CASCADE

static const struct cause causes[] = {
	[C_HOST_OOM] = { "host_oom",
			 "the host ran out of memory: the kernel's OOM killer killed a process",
			 "lower host memory use (dataloader workers, pinned buffers, CPU offload) or "
			 "the batch; look for other tenants of the host",
			 ACTION_FIX_CONFIG, T0 },
	[C_CUDA_OOM] = { "cuda_oom", "a GPU ran out of memory (CUDA out of memory)",
			 "lower the micro-batch or sequence length, or checkpoint activations; "
			 "where one rank alone runs out, look for imbalance (uneven data, extra work)",
			 ACTION_FIX_CONFIG, T0 },
	[C_ILLEGAL] = { "illegal_memory_access",
			"a CUDA kernel accessed memory it does not own (illegal memory access)",
			"rerun with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer to find the kernel; "
			"where it recurs on one GPU only, look for an Xid in that host's kernel log",
			ACTION_INVESTIGATE, T0 },
	[C_ASSERT] = { "cuda_assert",
		       "a device-side assert fired (usually an index out of range: a label past "
		       "the vocabulary, an embedding index)",
		       "fix the data or code the assert names (CUDA_LAUNCH_BLOCKING=1 gives the "
		       "right stack)",
		       ACTION_INVESTIGATE, T0 },
	[C_ECC] = { "cuda_ecc", "an uncorrectable ECC error on a GPU",
		    "reset the GPU and run vigil check on the host; drain it if it recurs",
		    ACTION_RESET_GPU, T0 },
	[C_LAUNCH] = { "cuda_launch_failure", "a CUDA kernel failed (unspecified launch failure)",
		       "look for an Xid at the same time in the host's kernel log; rerun with "
		       "CUDA_LAUNCH_BLOCKING=1",
		       ACTION_INVESTIGATE, T0 },
	[C_DISK_FULL] = { "disk_full", "a filesystem is full (No space left on device)",
			  "free space where the run writes (checkpoints, logs, /tmp, /dev/shm); "
			  "vigil check's storage check names the filesystem",
			  ACTION_FREE_DISK, T0 },
	[C_QUOTA] = { "disk_quota", "a disk quota is exceeded",
		      "free space or raise the quota of the filesystem the run writes to",
		      ACTION_FREE_DISK, T0 },
	[C_STALE] = { "stale_file_handle",
		      "a stale file handle: a file or export changed under a network mount",
		      "remount the filesystem on that host; do not replace files that running "
		      "ranks hold open",
		      ACTION_INVESTIGATE, T0 },
	[C_EIO] = { "storage_io_error", "a storage I/O error (Input/output error)",
		    "check the filesystem the line names (its server, the host's kernel log); "
		    "drain the host if its local disk is failing",
		    ACTION_INVESTIGATE, T0 },
	[C_ROFS] = { "read_only_fs", "a filesystem is read-only (often remounted after errors)",
		     "look for filesystem errors in the host's kernel log; remount or drain it",
		     ACTION_INVESTIGATE, T0 },
	[C_CKPT] = { "checkpoint_write", "a checkpoint could not be written",
		     "check space, permissions and health of the checkpoint storage; the run "
		     "resumes from the last good checkpoint",
		     ACTION_INVESTIGATE, T0 },
	[C_CKPT_READ] = { "checkpoint_read",
			  "a checkpoint could not be read (truncated or corrupt: often a write that "
			  "did not finish)",
			  "resume from the checkpoint before it; find why its write did not finish "
			  "(space, a killed rank, storage errors)",
			  ACTION_INVESTIGATE, T0 },
	[C_FSDP] = { "forward_order_differs",
		     "FSDP saw modules run in another order than in the first iteration: a rank "
		     "took another code path",
		     "make every rank run the same modules in the same order (data-dependent "
		     "branches, skipped layers); mismatched collectives hang",
		     ACTION_INVESTIGATE, T0 },
	[C_SEGV] = { "segfault", "a process crashed with a segmentation fault (SIGSEGV)",
		     "after another error it is part of the teardown; alone, get a native stack "
		     "(python -X faulthandler, a core dump) and check native extensions",
		     ACTION_INVESTIGATE, T0 },
	[C_SIGBUS] = { "bus_error",
		       "a process died of a bus error (SIGBUS): usually /dev/shm too small for "
		       "dataloader workers, or a memory-mapped file that went away",
		       "raise /dev/shm (docker --shm-size) or lower the dataloader's workers; check "
		       "the storage of memory-mapped data",
		       ACTION_FIX_CONFIG, T0 },
	[C_NODE] = { "node_failure", "Slurm lost a node (node failure)",
		     "check the node (power, network, kernel log); vigil run excludes it",
		     ACTION_INSPECT_HARDWARE, T0 },
	[C_NCCL_NET] = { "nccl_network",
			 "an NCCL network transfer failed (InfiniBand/RoCE completion error)",
			 "where its peer died first it is a victim; otherwise check the link between "
			 "the hosts (vigil check's infiniband check, cables)",
			 ACTION_INVESTIGATE, T1 },
	[C_NCCL_REMOTE] = { "nccl_peer_lost",
			    "NCCL lost a peer (remote process exited, communicator aborted)",
			    "a victim: look for the first error on the other ranks",
			    ACTION_RESTART_APP, T2 },
	[C_NCCL_TIMEOUT] = { "nccl_timeout", "a collective timed out (the NCCL watchdog)",
			     "a victim of a rank that stopped or died: look for the first error on "
			     "the other ranks; with none, a rank hung (vigil stacks, its host's "
			     "kernel log)",
			     ACTION_INVESTIGATE, T2 },
	[C_NCCL_ERROR] = { "nccl_error", "NCCL reported an error",
			   "read the NCCL WARN lines before it; run vigil check on the hosts named",
			   ACTION_INVESTIGATE, T1 },
	[C_CUDA_ERROR] = { "cuda_error", "a CUDA call failed",
			   "read the CUDA error the line names; run vigil check on the host",
			   ACTION_INVESTIGATE, T1 },
	[C_RANK_EXIT] = { "rank_exit",
			  "a rank's process ended (killed, cancelled, or exited with an error)",
			  "a consequence: look for the first error before it", ACTION_RESTART_APP,
			  T2 },
	[C_PYEXC] = { "python_exception", "an uncaught Python exception",
		      "read the traceback before the line; fix what it names", ACTION_INVESTIGATE,
		      T1 },
	[C_GPU_OFF_BUS] = { "gpu_off_bus", "a GPU has fallen off the bus",
			    "reboot the node; inspect the hardware if it recurs", ACTION_REBOOT, T0 },
	[C_KILLED] = { "rank_killed",
		       "a rank was killed with SIGKILL (exit code -9 or 137): most often the host's "
		       "out-of-memory killer, else the scheduler or a launcher tearing the job down",
		       "look for the OOM killer in that host's kernel log (dmesg; vigil diagnose logs "
		       "on it) and at host memory use (dataloader workers, CPU offload); if none, at "
		       "what killed it (a time or memory limit, a launcher after another rank's "
		       "failure)",
		       ACTION_INVESTIGATE, T1 },
	[C_ABORT] = { "rank_abort",
		      "a rank aborted (SIGABRT): a C++ exception or failed check, often PyTorch's "
		      "NCCL watchdog ending the process after a timeout or an NCCL error",
		      "read that rank's last lines before the abort ('terminate called after', the "
		      "watchdog's message) and the first error on the other ranks",
		      ACTION_INVESTIGATE, T2 },
	[C_TIME_LIMIT] = { "slurm_time_limit", "Slurm cancelled the job at its time limit",
			   "resume from the last checkpoint with a longer --time, or checkpoint "
			   "more often; a run that slowed down reaches the limit early (vigil "
			   "diagnose steps)",
			   ACTION_FIX_CONFIG, T0 },
	[C_PREEMPTED] = { "slurm_preempted", "Slurm preempted the job (another job took its nodes)",
			  "resume from the last checkpoint; use a partition or QOS that is not "
			  "preempted for long runs",
			  ACTION_RESTART_APP, T0 },
	[C_NAN] = { "nan_grad",
		    "a NaN in the gradients (Megatron's check of the local grad norm): numerics "
		    "(learning rate, loss scale), a bad batch, or a faulty GPU",
		    "look at the loss and grad norm before it and the batch it ran on; where the "
		    "same GPU repeats it after a restart, test that GPU (vigil check, a burn-in)",
		    ACTION_INVESTIGATE, T0 },
	[C_RDZV] = { "rendezvous_timeout",
		     "the ranks did not all join (rendezvous or store timeout): a host did not "
		     "start, started late, or cannot reach the master",
		     "find the host that never joined (its launcher log, its route to MASTER_ADDR "
		     "and port); a slow start needs a longer timeout",
		     ACTION_INVESTIGATE, T1 },
	[C_LAUNCHER_SIG] = { "launcher_signal",
			     "the launcher (torchrun) was sent a signal from outside and stopped its "
			     "ranks: SIGTERM from the scheduler or a person, SIGHUP from a closed "
			     "terminal",
			     "find who sent it: the scheduler (a time limit, preemption, scancel), or "
			     "a closed ssh session (run under sbatch, tmux or nohup)",
			     ACTION_INVESTIGATE, T1 },
};

enum { NOT_DIGIT_AFTER = 1 };

struct needle {
	const char *s;
	unsigned char cause;
	unsigned char flags;
};

/* Priority order: the first string of the table found in a line decides its cause. */
static const struct needle needles[] = {
	{ "NVRM", C_KERNEL, 0 },
	{ "SXid", C_KERNEL, 0 },
	{ "fallen off the bus", C_KERNEL, 0 },
	{ "srun: error: ", C_SRUN, 0 },
	{ "Out of memory: Kill", C_HOST_OOM, 0 },
	{ "oom-kill", C_HOST_OOM, 0 },
	{ "oom_kill", C_HOST_OOM, 0 },
	{ "Memory cgroup out of memory", C_HOST_OOM, 0 },
	{ "CUDA out of memory", C_CUDA_OOM, 0 },
	{ "CUDA error: out of memory", C_CUDA_OOM, 0 },
	{ "runtime error (2) : out of memory", C_CUDA_OOM, 0 }, /* torch < 1.0, THCudaCheck */
	{ "OutOfMemoryError", C_CUDA_OOM, 0 },
	{ "cudaErrorMemoryAllocation", C_CUDA_OOM, 0 },
	{ "CUDA_ERROR_OUT_OF_MEMORY", C_CUDA_OOM, 0 },
	{ "CUBLAS_STATUS_ALLOC_FAILED", C_CUDA_OOM, 0 },
	{ "'out of memory'", C_CUDA_OOM, 0 }, /* NCCL WARN Cuda failure 'out of memory' */
	{ "illegal memory access", C_ILLEGAL, 0 },
	{ "cudaErrorIllegalAddress", C_ILLEGAL, 0 },
	{ "CUDA_ERROR_ILLEGAL_ADDRESS", C_ILLEGAL, 0 },
	{ "misaligned address", C_ILLEGAL, 0 },
	{ "device-side assert", C_ASSERT, 0 },
	{ "uncorrectable ECC error", C_ECC, 0 },
	{ "unspecified launch failure", C_LAUNCH, 0 },
	{ "No space left on device", C_DISK_FULL, 0 },
	{ "Disk quota exceeded", C_QUOTA, 0 },
	{ "Stale file handle", C_STALE, 0 },
	{ "Stale NFS file handle", C_STALE, 0 },
	{ "Input/output error", C_EIO, 0 },
	{ "Read-only file system", C_ROFS, 0 },
	{ "ailed to save checkpoint", C_CKPT, 0 },
	{ "ailed to write checkpoint", C_CKPT, 0 },
	{ "rror saving checkpoint", C_CKPT, 0 },
	{ "heckpoint save failed", C_CKPT, 0 },
	{ "PytorchStreamReader failed", C_CKPT_READ, 0 },
	{ "PytorchStreamWriter failed", C_CKPT, 0 },
	{ "inline_container.cc", C_CKPT, 0 }, /* torch.save's writer: "unexpected pos" */
	{ "Forward order differs", C_FSDP, 0 },
	{ "Segmentation fault", C_SEGV, 0 },
	{ "SIGSEGV", C_SEGV, 0 },
	{ "segfault at ", C_SEGV, 0 },
	{ "ignal 11", C_SEGV, NOT_DIGIT_AFTER },
	{ "Bus error", C_SIGBUS, 0 },
	{ "nexpected bus error", C_SIGBUS, 0 }, /* torch DataLoader: /dev/shm too small */
	{ "SIGBUS", C_SIGBUS, 0 },
	{ "Node failure on", C_NODE, 0 },
	{ "DUE TO NODE FAILURE", C_NODE, 0 },
	{ "DUE TO TIME LIMIT", C_TIME_LIMIT, 0 },
	{ "DUE TO PREEMPTION", C_PREEMPTED, 0 },
	{ "Exceeded job memory limit", C_HOST_OOM, 0 },
	{ "exceeded memory limit", C_HOST_OOM, 0 }, /* slurmstepd: "Job 41176 exceeded memory limit (N > M), being killed" */
	{ "found NaN in local grad norm", C_NAN, 0 },
	{ "clients joined", C_RDZV, 0 }, /* DistStoreError: "... waiting for clients. 1/2 clients joined." */
	{ "workers joined", C_RDZV, 0 }, /* the same, torch >= 2.2's TCPStore wording */
	{ "client socket has timed out", C_RDZV, 0 }, /* DistNetworkError: cannot reach the master */
	{ "RendezvousTimeoutError", C_RDZV, 0 },
	{ "Got completion from peer", C_NCCL_NET, 0 },
	{ "IBV_WC_RETRY_EXC_ERR", C_NCCL_NET, 0 },
	{ "retry counter exceeded", C_NCCL_NET, 0 },
	{ "remote process exited", C_NCCL_REMOTE, 0 },
	{ "ncclRemoteError", C_NCCL_REMOTE, 0 },
	{ "communicator was aborted", C_NCCL_REMOTE, 0 },
	{ "collective operation timeout", C_NCCL_TIMEOUT, 0 },
	{ "detected by watchdog", C_NCCL_TIMEOUT, 0 },
	{ "watchdog thread terminated", C_NCCL_TIMEOUT, 0 },
	{ "Heartbeat monitor timed out", C_NCCL_TIMEOUT, 0 },
	{ "watchdog got stuck", C_NCCL_TIMEOUT, 0 },
	{ "watchdog hang", C_NCCL_TIMEOUT, 0 }, /* "Terminating the process ... due to ProcessGroupNCCL watchdog hang" */
	{ "NCCL operations have failed or timed out", C_NCCL_TIMEOUT, 0 },
	{ "Timeout at NCCL work", C_NCCL_TIMEOUT, 0 },
	{ "NCCL timeout", C_NCCL_TIMEOUT, 0 },
	{ "ncclSystemError", C_NCCL_ERROR, 0 },
	{ "ncclInternalError", C_NCCL_ERROR, 0 },
	{ "ncclUnhandledCudaError", C_NCCL_ERROR, 0 },
	{ "ncclInvalidUsage", C_NCCL_ERROR, 0 },
	{ "ncclInvalidArgument", C_NCCL_ERROR, 0 },
	{ "NCCL error", C_NCCL_ERROR, 0 },
	{ "NCCL WARN", C_NCCL_ERROR, 0 },
	{ "CUDA error", C_CUDA_ERROR, 0 },
	{ "cudaError", C_CUDA_ERROR, 0 },
	{ "failed (exitcode: ", C_EXIT, 0 },     /* torchrun's agent */
	{ "exits with return code = ", C_EXIT, 0 }, /* DeepSpeed's launch.py */
	{ "terminated with code ", C_EXIT, 0 },  /* Lightning's "Child process with PID N ..." */
	{ "(SIGKILL)", C_KILLED, 0 },
	{ "(SIGABRT)", C_ABORT, 0 },
	{ "ChildFailedError", C_RANK_EXIT, 0 },
	{ "closing signal SIG", C_RANK_EXIT, 0 }, /* torchrun's agent stopping the others */
	{ "death signal, shutting down workers", C_LAUNCHER_SIG, 0 },
	{ "SignalException: Process ", C_LAUNCHER_SIG, 0 }, /* "... got signal: 15" */
	{ "CANCELLED AT", C_RANK_EXIT, 0 },
	{ "SIGTERM", C_RANK_EXIT, 0 },
	{ "terminate called after throwing", C_RANK_EXIT, 0 },
	{ "Killed", C_KILLWORD, 0 },
	{ "Error", C_PYCAND, 0 },
	{ "Exception", C_PYCAND, 0 },
};

/* NCCL WARN lines that every healthy run prints (no network plugin, a NIC without a path). */
static const char *const nccl_benign[] = {
	"NET/Plugin", "Could not find real path", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA",
	"lib wrapper not initialized", /* ibvwrap on a host without InfiniBand: sockets are used */
};

#define HASH_BITS 12
#define NR_NEEDLES ARRAY_SIZE(needles)

static unsigned char bucket_head[1u << HASH_BITS]; /* needle index + 1, 0 empty */
static unsigned char needle_next[NR_NEEDLES];      /* the same, chained */
static unsigned char needle_len[NR_NEEDLES];
static uint32_t needle_quad[NR_NEEDLES]; /* the first four bytes, compared before the rest */
static bool table_built;

static inline uint32_t load32(const unsigned char *p)
{
	uint32_t x;
	memcpy(&x, p, 4);
	return x;
}

static inline uint32_t quad_hash(uint32_t x)
{
	return (x * 0x9E3779B1u) >> (32 - HASH_BITS);
}

static void build_table(void)
{
	_Static_assert(ARRAY_SIZE(needles) < 128, "needle indices fit the hit bits and a byte");
	for (size_t i = NR_NEEDLES; i-- > 0;) {
		needle_len[i] = (unsigned char)strlen(needles[i].s);
		needle_quad[i] = load32((const unsigned char *)needles[i].s);
		uint32_t h = quad_hash(needle_quad[i]);
		needle_next[i] = bucket_head[h];
		bucket_head[h] = (unsigned char)(i + 1);
	}
	table_built = true;
}

/* The set of needles found in s[0..n), as bits (index < 128). */
static void find_needles(const unsigned char *s, size_t n, uint64_t hit[2])
{
	hit[0] = hit[1] = 0;
	if (!table_built)
		build_table();
	if (n < 4)
		return;
	for (size_t i = 0; i + 4 <= n; i++) {
		uint32_t q = load32(s + i);
		unsigned b = bucket_head[quad_hash(q)];
		while (b) {
			size_t k = b - 1u, l = needle_len[k];
			if (q == needle_quad[k] && i + l <= n && !memcmp(s + i + 4, needles[k].s + 4, l - 4) &&
			    (!(needles[k].flags & NOT_DIGIT_AFTER) || i + l == n ||
			     !isdigit(s[i + l])))
				hit[k / 64] |= 1ull << (k % 64);
			b = needle_next[k];
		}
	}
}

static bool host_char(int c)
{
	return isalnum(c) || c == '.' || c == '-' || c == '_';
}

/* s[0..n) as a host name into out, when it looks like one. */
static bool take_host(const char *s, size_t n, char out[DLOG_HOST_MAX])
{
	if (!n || n >= DLOG_HOST_MAX || !isalnum((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!host_char((unsigned char)s[i]))
			return false;
	memcpy(out, s, n);
	out[n] = 0;
	return true;
}

/* Digits at s[0..n) (at most 7): the number, else -1; *used how many. */
static long number_at(const char *s, size_t n, size_t *used)
{
	long v = 0;
	size_t i = 0;
	while (i < n && i < 7 && isdigit((unsigned char)s[i]))
		v = v * 10 + (s[i++] - '0');
	*used = i;
	return i ? v : -1;
}

size_t dlog_skip_stamp(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && s[i] == ' ')
		i++;
	if (n - i > 19 && isdigit((unsigned char)s[i]) && s[i + 4] == '-' && s[i + 7] == '-' &&
	    (s[i + 10] == 'T' || s[i + 10] == ' ') && s[i + 13] == ':') {
		i += 11;
		while (i < n && s[i] != ' ')
			i++;
		while (i < n && s[i] == ' ')
			i++;
	}
	if (i < n && s[i] == '[' && n - i > 3 && (s[i + 1] == ' ' || isdigit((unsigned char)s[i + 1]))) {
		size_t j = i + 1;
		while (j < n && (s[j] == ' ' || s[j] == '.' || isdigit((unsigned char)s[j])))
			j++;
		if (j < n && s[j] == ']') {
			i = j + 1;
			while (i < n && s[i] == ' ')
				i++;
		}
	}
	return i;
}

/*
 * Past the line's time stamp (dlog_skip_stamp), then the prefixes that name a rank: torch's
 * "[rank3]:", srun --label's "3: ". Sets *rank when one names it.
 */
static size_t text_start(const char *s, size_t n, long *rank)
{
	size_t i = dlog_skip_stamp(s, n), used;
	/* a time of day alone, "18:11:06.680 " (a log collector's) */
	if (n - i > 9 && isdigit((unsigned char)s[i]) && isdigit((unsigned char)s[i + 1]) &&
	    s[i + 2] == ':' && isdigit((unsigned char)s[i + 3]) && s[i + 5] == ':') {
		size_t j = i + 6;
		while (j < n && (isdigit((unsigned char)s[j]) || s[j] == '.' || s[j] == ','))
			j++;
		if (j < n && s[j] == ' ')
			i = j + 1;
	}
	/* torchrun --tee's "[default3]:" (role and LOCAL rank: not the rank) */
	if (n - i > 4 && s[i] == '[' && memcmp(s + i, "[rank", 5)) {
		size_t j = i + 1;
		while (j < n && isalpha((unsigned char)s[j]))
			j++;
		size_t k = j;
		while (k < n && isdigit((unsigned char)s[k]))
			k++;
		if (j > i + 1 && k > j && k + 1 < n && s[k] == ']' && s[k + 1] == ':')
			i = k + 2;
	}
	if (n - i > 6 && !memcmp(s + i, "[rank", 5)) {
		long r = number_at(s + i + 5, n - i - 5, &used);
		if (r >= 0 && i + 5 + used + 1 < n && s[i + 5 + used] == ']' &&
		    s[i + 5 + used + 1] == ':') {
			*rank = r;
			i += 5 + used + 2;
		}
	} else {
		long r = number_at(s + i, n - i, &used);
		if (r >= 0 && i + used + 1 < n && s[i + used] == ':' && s[i + used + 1] == ' ') {
			*rank = r;
			i += used + 2;
		}
	}
	while (i < n && s[i] == ' ')
		i++;
	return i;
}

static const char *find(const char *s, size_t n, const char *needle)
{
	return memmem(s, n, needle, strlen(needle));
}

/* Where the line itself says it comes from (host, rank). */
static void line_origin(const char *s, size_t n, struct dlog_match *m)
{
	size_t t = text_start(s, n, &m->rank), used;
	const char *p;
	/* torch: "[Rank 3]", "[PG 0 Rank 3]", "[PG ID 0 PG GUID 0(default_pg) Rank 3]" */
	if (m->rank < 0 && (p = find(s, n, "Rank "))) {
		long r = number_at(p + 5, n - (size_t)(p + 5 - s), &used);
		/* and Megatron's "Rank 13: found NaN ..." */
		if (r >= 0 && p + 5 + used < s + n &&
		    (p[5 + used] == ']' ||
		     (p[5 + used] == ':' && p + 6 + used < s + n && p[6 + used] == ' ')))
			m->rank = r;
	}
	/* NCCL: "host:pid:tid [cudaDev] NCCL WARN"; the bracket is the GPU, not the rank */
	if (!m->host[0] && (p = find(s + t, n - t, " NCCL "))) {
		const char *h = s + t, *c = memchr(h, ':', (size_t)(p - h));
		if (c)
			take_host(h, (size_t)(c - h), m->host);
	}
	/* syslog: "Feb 14 05:03:41 HOST kernel: ...", rsyslog "2025-...+00:00 HOST kernel: ..." */
	if (!m->host[0] && (p = find(s, n < 128 ? n : 128, " kernel: "))) {
		const char *b = p;
		while (b > s && b[-1] != ' ')
			b--;
		if (b > s)
			take_host(b, (size_t)(p - b), m->host);
	}
	/* slurmstepd: "*** STEP 12.0 ON HOST CANCELLED AT ..."; srun: "Node failure on HOST" */
	if (!m->host[0] && (p = find(s, n, " ON ")) && find(s, n, " CANCELLED")) {
		const char *h = p + 4, *e = h;
		while (e < s + n && *e != ' ')
			e++;
		take_host(h, (size_t)(e - h), m->host);
	}
	if (!m->host[0] && (p = find(s, n, "Node failure on "))) {
		const char *h = p + 16, *e = h;
		while (e < s + n && host_char((unsigned char)*e))
			e++;
		take_host(h, (size_t)(e - h), m->host);
	}
}

static void set_cause(struct dlog_match *m, int c)
{
	m->code = causes[c].code;
	m->cause = causes[c].cause;
	m->action = causes[c].action;
	m->act = causes[c].act;
	m->tier = causes[c].tier;
}

/* Xid, SXid, "fallen off the bus": the kernel log parser reads the line, the Xid catalog
 * judges it. */
static bool kernel_line(const char *s, size_t n, struct dlog_match *m)
{
	struct kmsg_log k;
	struct xid_policy pol;
	bool ok = false;
	kmsg_log_init(&k, NULL);
	kmsg_parse(&k, s, n);
	for (size_t i = 0; i < k.nr && !ok; i++) {
		const struct kmsg_event *ev = &k.ev[i];
		if (ev->kind == KMSG_XID)
			xid_classify(ev->num, ev->fatal, ev->recovery, &pol);
		else if (ev->kind == KMSG_SXID)
			sxid_classify(ev->num, ev->fatal, &pol);
		else if (ev->kind == KMSG_GPU_OFF_BUS)
			xid_classify(79, -1, -1, &pol);
		else
			continue;
		ok = true;
		m->code = ev->kind == KMSG_SXID ? "sxid" : ev->kind == KMSG_XID ? "xid" : "gpu_off_bus";
		m->num = ev->kind == KMSG_GPU_OFF_BUS ? -1 : ev->num;
		m->cause = pol.meaning;
		m->act = pol.action;
		m->action = *xid_action_text(pol.action) ? xid_action_text(pol.action)
							  : "none for the host; see the application's "
							    "own error at that time";
		/* Xid 45 is the driver cleaning up after another error: never the root */
		m->tier = ev->kind == KMSG_XID && ev->num == 45 ? T2 : T0;
	}
	kmsg_log_release(&k);
	return ok;
}

/* "-9", "1", "137" at s: the number, else INT_MIN. */
static int exit_code_at(const char *s, size_t n)
{
	size_t i = 0, used;
	bool neg = n && s[0] == '-';
	i += neg;
	long v = number_at(s + i, n - i, &used);
	if (v < 0 || used > 5)
		return INT_MIN;
	return neg ? -(int)v : (int)v;
}

const char *dlog_signal_name(int sig)
{
	static const char *const names[] = {
		[1] = "SIGHUP",  [2] = "SIGINT",  [3] = "SIGQUIT", [4] = "SIGILL",
		[6] = "SIGABRT", [7] = "SIGBUS",  [8] = "SIGFPE",  [9] = "SIGKILL",
		[11] = "SIGSEGV", [13] = "SIGPIPE", [15] = "SIGTERM",
	};
	return sig > 0 && sig < (int)ARRAY_SIZE(names) && names[sig] ? names[sig] : "";
}

void dlog_match_exit(struct dlog_match *m, int exitcode)
{
	/* Popen's returncode is -N for signal N; a shell (srun's task, a wrapper) says 128+N */
	int sig = exitcode < 0 ? -exitcode : exitcode > 128 && exitcode < 160 ? exitcode - 128 : 0;
	m->has_exit = true;
	m->exitcode = exitcode;
	set_cause(m, sig == 9    ? C_KILLED
		     : sig == 6  ? C_ABORT
		     : sig == 11 ? C_SEGV
		     : sig == 7  ? C_SIGBUS
				 : C_RANK_EXIT);
}

/* A launcher's line with an exit code after key: its cause is the code's. */
static bool exit_line(const char *s, size_t n, struct dlog_match *m)
{
	static const char *const keys[] = {
		"failed (exitcode: ",        /* torchrun's agent: the ChildFailedError block follows */
		"exits with return code = ", /* DeepSpeed */
		"terminated with code ",     /* Lightning */
	};
	for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
		const char *p = find(s, n, keys[k]);
		if (!p)
			continue;
		size_t off = (size_t)(p - s) + strlen(keys[k]);
		int code = exit_code_at(s + off, n - off);
		if (code == INT_MIN)
			continue;
		dlog_match_exit(m, code);
		m->head = k == 0;
		return true;
	}
	return false;
}

/* A shell's word for a child it lost to SIGKILL: "Killed" alone on its line, or job control's
 * "script: line 9: 4242 Killed   python train.py"; "Killed" in other text is not. */
static bool killed_line(const char *s, size_t n)
{
	long r = -1;
	size_t t = text_start(s, n, &r), e = n;
	while (e > t && (s[e - 1] == ' ' || s[e - 1] == '\r'))
		e--;
	if (e - t == 6 && !memcmp(s + t, "Killed", 6))
		return true;
	const char *p = find(s, n, ": line ");
	size_t used;
	if (!p)
		return false;
	p += 7;
	if (number_at(p, (size_t)(s + n - p), &used) < 0 || p + used >= s + n || p[used] != ':')
		return false;
	p += used + 1;
	while (p < s + n && *p == ' ')
		p++;
	if (number_at(p, (size_t)(s + n - p), &used) < 0)
		return false;
	p += used;
	while (p < s + n && *p == ' ')
		p++;
	return s + n - p >= 6 && !memcmp(p, "Killed", 6);
}

/* "srun: error: HOST: task 5: Killed | Exited with exit code 1 | Out Of Memory" */
static bool srun_line(const char *s, size_t n, struct dlog_match *m)
{
	const char *p = find(s, n, "srun: error: "), *e = s + n, *h, *c;
	size_t used;
	if (!p)
		return false;
	h = p + 13;
	c = memchr(h, ':', (size_t)(e - h));
	/* ": task 5: ..." or, for several, ": tasks 0-7: ..." (the first of them is named) */
	size_t skip = c && e - c >= 8 && !memcmp(c, ": task ", 7) ? 7
		      : c && e - c >= 9 && !memcmp(c, ": tasks ", 8) ? 8 : 0;
	if (!skip)
		return false;
	long r = number_at(c + skip, (size_t)(e - c - skip), &used);
	if (r < 0)
		return false;
	take_host(h, (size_t)(c - h), m->host);
	m->rank = r;
	m->srun = true;
	const char *what = c + skip + used, *x;
	if (find(what, (size_t)(e - what), "Out Of Memory")) {
		set_cause(m, C_HOST_OOM);
	} else if ((x = find(what, (size_t)(e - what), "Exited with exit code "))) {
		int code = exit_code_at(x + 22, (size_t)(e - x - 22));
		if (code != INT_MIN)
			dlog_match_exit(m, code);
		else
			set_cause(m, C_RANK_EXIT);
	} else {
		set_cause(m, C_RANK_EXIT);
	}
	return true;
}

/* "ValueError: ...", "torch.distributed.DistBackendError: ..." at the start of the text. */
static bool python_exception(const char *s, size_t n)
{
	size_t i = 0;
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.'))
		i++;
	if (i < n && s[i] != ':')
		return false;
	return (i >= 5 && !memcmp(s + i - 5, "Error", 5)) ||
	       (i >= 9 && !memcmp(s + i - 9, "Exception", 9));
}

bool dlog_classify(const char *line, size_t len, struct dlog_match *m)
{
	const unsigned char *s = (const unsigned char *)line;
	uint64_t hit[2];
	memset(m, 0, sizeof(*m));
	m->rank = -1;
	m->num = -1;
	if (len > DLOG_LINE_MAX)
		len = DLOG_LINE_MAX;
	find_needles(s, len, hit);
	bool found = false, pycand = false;
	for (size_t k = 0; k < NR_NEEDLES && !found; k++) {
		if (!(hit[k / 64] & (1ull << (k % 64))))
			continue;
		int c = needles[k].cause;
		if (c == C_PYCAND) {
			pycand = true;
		} else if (c == C_KERNEL) {
			found = kernel_line(line, len, m);
		} else if (c == C_SRUN) {
			found = srun_line(line, len, m);
		} else if (c == C_EXIT) {
			found = exit_line(line, len, m);
		} else if (c == C_KILLWORD) {
			found = killed_line(line, len);
			if (found) {
				set_cause(m, C_KILLED);
				m->has_exit = true;
				m->exitcode = -9;
			}
		} else if (c == C_NCCL_ERROR) {
			bool benign = false;
			for (size_t b = 0; b < ARRAY_SIZE(nccl_benign); b++)
				benign |= find(line, len, nccl_benign[b]) != NULL;
			if (!benign) {
				set_cause(m, c);
				found = true;
			}
		} else {
			set_cause(m, c);
			/* the line before torchrun's block: the block will say more */
			m->head = !strcmp(needles[k].s, "ChildFailedError") ||
				  !strcmp(needles[k].s, "closing signal SIG");
			found = true;
		}
	}
	if (!found) {
		long r = -1;
		if (!pycand)
			return false;
		size_t t = text_start(line, len, &r);
		if (!python_exception(line + t, len - t))
			return false;
		set_cause(m, C_PYEXC);
	}
	line_origin(line, len, m);
	return true;
}
