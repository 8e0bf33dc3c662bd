/*
 * ckpt.h: 'vigil stress storage', the checkpoint workload. Each writer (a forked process of
 * its own) writes its shard files sequentially in blocks, fsyncs them, renames them into place
 * and syncs the directory, as a trainer saving a checkpoint does; then every shard is read back
 * (O_DIRECT, or after dropping its pages from the page cache) and every byte verified; then a
 * metadata burst creates, stats, renames and unlinks many small files. Every write, fsync,
 * rename and read is watched against a stall bound; the whole test has a deadline.
 *
 * Why processes and not threads: a write to a sick file system blocks in uninterruptible sleep.
 * A worker in its own process (src/lib/run.h: own group, killed whole at the deadline) leaves
 * the parent free to keep the deadline, name the stalled file and operation, and answer; a
 * thread stuck in D would hold the whole process. The workers report through one shared
 * anonymous mapping (struct ckpt_slot, internal to ckpt.c/ckpt_io.c), not pipes: the
 * parent reads a worker's current operation while that worker is blocked.
 *
 * Safety: nothing is written outside DIR. DIR is opened O_DIRECTORY | O_NOFOLLOW (a link there
 * is refused); everything is made under a fresh subdirectory "vigil-storage.<16 random hex>"
 * (mkdirat 0700) with openat(O_CREAT | O_EXCL | O_NOFOLLOW) and names vigil makes itself, and
 * removed at the end, on an error, and (ckpt_sweep_signal) from a signal handler.
 *
 * Ownership: struct ckpt_result owns its arrays; ckpt_result_release() frees them.
 * struct ckpt_dir holds two descriptors; ckpt_close() removes what was made and closes.
 */
#ifndef VIGIL_STRESS_STORAGE_H
#define VIGIL_STRESS_STORAGE_H

#include "../core/report.h"
#include "../lib/json.h"

enum ckpt_inject { CKPT_INJECT_NONE, CKPT_INJECT_STALL, CKPT_INJECT_CORRUPT };

/* How the read-back is checked (--verify). */
enum ckpt_verify {
	CKPT_VERIFY_AUTO,	/* overlapped where each reader and its checker have a CPU */
	CKPT_VERIFY_INLINE,	/* by the reader, between two reads */
	CKPT_VERIFY_OVERLAPPED, /* by a thread beside each reader, while it reads the next block */
	CKPT_VERIFY_NONE,	/* not at all: bandwidth only, the data not judged */
};

/* "auto", "inline", "overlapped", "none"; and back (false: not one of them) */
const char *ckpt_verify_name(enum ckpt_verify v);
bool ckpt_verify_parse(const char *s, enum ckpt_verify *out);

struct ckpt_opts {
	uint64_t size;	    /* bytes in all, over every writer */
	uint64_t file_size; /* bytes per shard file (the last may be shorter) */
	unsigned writers;
	uint32_t block;	      /* bytes per write and read, a multiple of 4096 */
	unsigned meta_files;  /* small files in the metadata burst (0: none) */
	unsigned stall_ms;    /* one operation longer than this is a stall */
	unsigned deadline_ms; /* the whole test */
	bool buffered;	      /* never O_DIRECT (page cache dropped for the read-back instead) */
	enum ckpt_inject inject;
	enum ckpt_verify verify;
};

/* Why a DIR was refused before anything was written. */
enum ckpt_refusal {
	CKPT_OK,
	CKPT_MISSING,	 /* no such directory */
	CKPT_LINK,	 /* DIR is a symbolic link */
	CKPT_NOT_DIR,	 /* DIR is a file, FIFO, device... */
	CKPT_UNWRITABLE, /* read-only file system, permission denied */
	CKPT_NO_SPACE,	 /* the test's size and margin do not fit */
	CKPT_ERROR,	 /* anything else (an I/O error opening it) */
};

struct ckpt_dir {
	int dirfd, subfd;
	char subname[48];      /* "vigil-storage.<hex>" */
	char fs_type[24];      /* "ext4", "tmpfs", "nfs", ... or "0x<magic>" */
	uint64_t avail;	       /* bytes free to us when checked */
	bool direct;	       /* O_DIRECT accepted (tried with one block) */
	char direct_note[160]; /* why not, when not */
};

#define CKPT_MAX_FINDS 8

struct ckpt_mismatch {
	unsigned file;
	uint64_t offset; /* of the first wrong 4 KiB sector found in that stretch */
};

struct ckpt_stall {
	unsigned worker, file;
	char op[12];	 /* write, fsync, rename, dirsync, read, open, create, ... */
	char name[48];	 /* the file's name under the test's subdirectory */
	double ms;	 /* how long it took, or had taken when the deadline came */
	bool unfinished; /* still blocked when the test ended */
};

struct ckpt_error {
	char op[12];
	char name[48];
	int err_no;
};

struct ckpt_writer_fig {
	uint64_t bytes;
	double write_mib_s, read_mib_s;
};

/* The fractions at which the fsync latency is given (figures.fsync_quantiles_ms). */
#define CKPT_FSYNC_QS 11
extern const double ckpt_fsync_q[CKPT_FSYNC_QS];

struct ckpt_result {
	/* what was run */
	uint64_t bytes, file_size;
	unsigned files, writers;
	uint32_t block;
	bool direct;
	enum ckpt_verify verify; /* how the read-back was checked: never AUTO here */
	char fs_type[24];
	char direct_note[160];
	/* the page cache before the read-back, when not O_DIRECT: pages of the shards still
	 * resident after posix_fadvise(DONTNEED) (mincore), out of pages checked */
	uint64_t cache_resident, cache_pages;
	/* figures */
	uint64_t written, read, verified;
	double write_s, read_s, write_mib_s, read_mib_s;
	double fsync_p50_ms, fsync_p99_ms, fsync_max_ms;
	/* the latency at each of ckpt_fsync_q[] (nearest rank), for a CDF across nodes */
	double fsync_q_ms[CKPT_FSYNC_QS];
	uint64_t fsyncs;    /* every fsync of a shard */
	size_t fsyncs_kept; /* how many latencies the percentiles come from (capped) */
	double dirsync_max_ms;
	uint64_t meta_ops;
	double meta_s, meta_ops_s;
	struct ckpt_writer_fig *per_writer;
	/* findings */
	uint64_t mismatched_sectors;
	struct ckpt_mismatch mismatch[CKPT_MAX_FINDS];
	size_t nr_mismatch;
	struct ckpt_stall stalls[CKPT_MAX_FINDS];
	size_t nr_stalls;
	uint64_t stalls_total;
	struct ckpt_error errors[CKPT_MAX_FINDS];
	size_t nr_errors;
	uint64_t errors_total;
	bool write_done, read_done, meta_done; /* each phase ran to its end */
	bool deadline_hit;
	char not_run[160]; /* a worker that could not be started, the mapping... */
	bool injected;
};

void ckpt_result_init(struct ckpt_result *r);
void ckpt_result_release(struct ckpt_result *r);

/*
 * Open DIR (O_DIRECTORY | O_NOFOLLOW), check free space for o (size + a margin), make the test's
 * subdirectory and probe O_DIRECT there. CKPT_OK, or the refusal with *err saying why
 * ("'DIR' is a symbolic link, which is never followed"). Nothing is left on a refusal.
 */
enum ckpt_refusal ckpt_open(struct ckpt_dir *d, const char *path, const struct ckpt_opts *o,
			    struct strbuf *err);
/* The margin of free space kept beyond the test's size (bytes). */
uint64_t ckpt_margin(const struct ckpt_opts *o);
/* Run the workload in d's subdirectory (workers forked; returns when all ended or at the
 * deadline). Never fails: what could not be done is in r. */
void ckpt_run(struct ckpt_dir *d, const struct ckpt_opts *o, struct ckpt_result *r);
/* Remove everything under the subdirectory, the subdirectory, and close. 0, or -1 with *err
 * naming what could not be removed. */
int ckpt_close(struct ckpt_dir *d, struct strbuf *err);
/* For a signal handler (async-signal-safe): remove the files of the test running now (their
 * names are known) and its subdirectory. */
void ckpt_sweep_signal(void);

/* Pure: findings for r into rep (checks "storage-write", "storage-read", "storage-meta"). */
void ckpt_evaluate(const struct ckpt_result *r, const struct ckpt_opts *o, struct report *rep);
/* A refused DIR (ckpt_open's answer and message) as an unknown storage-run check. */
void ckpt_refused(enum ckpt_refusal why, const char *msg, struct report *rep);
/* The figures object's members (write_mib_s, read_mib_s, fsync_p50_ms, ...) into an open
 * object of w. */
void ckpt_figures_json(const struct ckpt_result *r, struct json_writer *w);

#endif
