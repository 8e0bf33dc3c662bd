/*
 * logs.h: 'vigil diagnose logs' without the files: the logs of a dead or sick run (trainer stderr
 * of many ranks, kernel logs, NCCL and Slurm lines) in, known error lines out, grouped by cause,
 * host and rank, and the first error in time named as the likely root rather than the cascade
 * that follows it (a rank's NCCL timeout after another rank's CUDA OOM is a victim).
 *
 * Pure: the command (src/cmd/diagnose_logs.c) opens the files and feeds their bytes here in
 * chunks of any size; nothing here reads, prints or exits.
 *
 *   dlog_init(&d);
 *   for each file: dlog_file_begin(&d, name, host, rank); dlog_feed(&d, buf, n)...; dlog_file_end(&d);
 *                  (or dlog_file_error(&d, name, why) for one that could not be read)
 *   dlog_finish(&d);           chooses the root
 *   dlog_write_text/json(&d, &out);
 *   dlog_release(&d);
 *
 * Lines: split on '\n'; a line is judged by its first DLOG_LINE_MAX bytes (a megabyte line
 * costs a fixed amount of memory, and the rest of it is skipped); NULs and invalid UTF-8 are
 * plain bytes. The catalog of known lines (src/diagnose/logcat.c) is matched in its table
 * order; Xid and SXid lines go through the kernel log parser and the Xid catalog (src/logs/).
 *
 * Times: each line's stamp as the kernel log parser reads it (vigil run's
 * "2026-12-01T02:51:00.703Z ", ISO, syslog, dmesg -T: wall clock; "[  123.456]": seconds since
 * boot); a line without one takes the last stamp seen before it in its file (the lines of a
 * traceback). Wall-clock times are compared across files; boot times only within their file; a
 * file without times is ordered within itself only (unknown_times says so).
 *
 * The root: the earliest occurrence (by wall clock) of any finding; within DLOG_SKEW_S after it
 * (buffered stderr, clocks of different hosts), a specific cause (tier 0) wins over a generic
 * one (tier 1) and either over a cascade (tier 2: timeouts, aborted communicators, killed
 * tasks). Where the root so chosen is a cascade or generic and a finding of a better tier has
 * no comparable time, that one is named instead, with why.
 *
 * Hosts: a line that names both its host and its rank (srun's "error: n2: task 3", an NCCL
 * line "n2:pid:tid" in rank-3.err) teaches the rank's host; dlog_finish() lends it to that
 * rank's other lines (vigil run's rank files name no host themselves).
 *
 * Launchers: torchrun's ChildFailedError summary ("Failures:" / "Root Cause (first observed
 * failure):" and their "[N]:" entries of host, rank, exitcode, error_file, traceback fields over
 * several lines; logtorchrun.c) is read as a block: each entry is a failure of the rank and host
 * torchrun names, the root cause entry first. The agent's one-line "failed (exitcode: N)" and the
 * "ChildFailedError" line before the block are held back and dropped once the block names the
 * failure (they say less about the same thing); without a block (a log cut short) they count.
 *
 * Bounds: findings are one per cause (Xid/SXid: per number), at most DLOG_FINDINGS_MAX; each
 * lists at most DLOG_HOSTS_MAX hosts and DLOG_RANKS_MAX ranks (more_hosts/more_ranks say how
 * many were left out). Memory grows with the number of files (one small record each), never
 * with their size.
 *
 * Ownership: struct dlog owns everything in it; dlog_release() frees it. Cause, action and code
 * strings point to static catalog data.
 */
#ifndef VIGIL_DIAGNOSE_LOGS_H
#define VIGIL_DIAGNOSE_LOGS_H

#include "../core/finding.h"
#include "../logs/kmsg.h"

#define DLOG_LINE_MAX 8192
/* A file at least this percent of whose bytes are NUL or control bytes, with no known line, is
 * not text: could not tell (random bytes have about 13%, text logs well under 1%). */
#define DLOG_BINARY_PCT 5
#define DLOG_HOSTS_MAX 64
#define DLOG_RANKS_MAX 4096
#define DLOG_FINDINGS_MAX 512
#define DLOG_EXAMPLE_MAX 240
#define DLOG_HOST_MAX 64
#define DLOG_SKEW_S 2.0

enum dlog_tier {
	DLOG_TIER_SPECIFIC = 0, /* names a cause: OOM, Xid, illegal access, disk full, ... */
	DLOG_TIER_GENERIC = 1,  /* an error without its cause: NCCL WARN, a Python exception */
	DLOG_TIER_CASCADE = 2,  /* what follows another rank's failure: timeouts, aborts, kills */
};

enum dlog_tb { DLOG_TB_NONE, DLOG_TB_BOOT, DLOG_TB_WALL };

/* What the catalog says about one line. All strings static. */
struct dlog_match {
	const char *code;   /* stable: "cuda_oom", "xid", "nccl_timeout", ... */
	const char *cause;  /* for a person: "the GPU ran out of memory (CUDA out of memory)" */
	const char *action; /* for a person: what to do next */
	enum action act;
	enum dlog_tier tier;
	int num;            /* Xid / SXid number, else -1 */
	/* where the line itself says it comes from: NCCL's "host:pid:tid", srun's "error: host:",
	 * syslog's host; "[rank3]:", "[Rank 3]", srun's "task 3", a "3: " label; "" / -1 if not */
	char host[DLOG_HOST_MAX];
	long rank;
	bool srun;          /* srun's own "srun: error: HOST: task N" line */
	bool head;          /* a launcher's line that a torchrun block after it supersedes */
	bool has_exit;      /* exitcode: the process's exit code a launcher names */
	int exitcode;       /* negative: killed by signal -exitcode (Popen's returncode) */
};

/* A launcher's word on one failed process (torchrun's block entry, or a one-line launcher's
 * exit code): what the output prints besides the cause. Strings are raw input bytes. */
#define DLOG_FIELD_MAX 160
struct dlog_launch {
	bool has_exit, root_cause, torchrun;
	int exitcode;
	long pid, local_rank;       /* -1 unknown */
	char signal[12];            /* "SIGKILL", from the exit code or the traceback field */
	char error_file[DLOG_FIELD_MAX];
	char when[24];              /* torchrun's "time" field (local time, not compared) */
};

/*
 * Classify one line (len bytes, need not be NUL-terminated, may hold NULs; at most
 * DLOG_LINE_MAX are looked at): true with *m filled when a known error line, else false.
 */
bool dlog_classify(const char *line, size_t len, struct dlog_match *m);

/* A launcher's exit code as a cause: signals 9 (SIGKILL), 6 (SIGABRT), 11 (SIGSEGV), 7 (SIGBUS)
 * as Popen's negative returncode or a shell's 128+N; anything else a rank's exit (cascade). */
void dlog_match_exit(struct dlog_match *m, int exitcode);
/* "SIGKILL" for 9 ("" unknown). */
const char *dlog_signal_name(int sig);

/* Where a line's text begins past its time stamp (vigil run's "2026-12-01T02:51:00.703Z ", ISO
 * "2026-12-01 02:51:00", dmesg's "[  123.456]") and the spaces after it; 0 when it has none.
 * Shared by the logs and hang classifiers. */
size_t dlog_skip_stamp(const char *s, size_t n);

struct dlog_occ {
	enum dlog_tb tb;
	double ts;          /* seconds in tb; 0 for NONE */
	size_t file;        /* index into files */
	uint64_t line;      /* 1-based */
	uint64_t seq;       /* order seen (files in the order given, lines in file order) */
	char host[DLOG_HOST_MAX];
	long rank;
	char example[DLOG_EXAMPLE_MAX + 1]; /* the line's head, raw bytes (quote it when printing) */
	struct dlog_launch launch;
};

struct dlog_finding {
	const char *code, *cause, *action;
	enum action act;
	enum dlog_tier tier;
	int num;
	uint64_t count;
	struct dlog_occ first; /* the earliest by wall clock; without one, the first seen */
	char (*hosts)[DLOG_HOST_MAX];
	size_t nr_hosts, alloc_hosts;
	uint64_t more_hosts;
	long *ranks; /* sorted, distinct */
	size_t nr_ranks, alloc_ranks;
	uint64_t more_ranks;
};

struct dlog_file {
	char *name;
	char *error;    /* why it could not be read (in full or at all), else NULL */
	char host[DLOG_HOST_MAX]; /* from the name ("" unknown) */
	long rank;      /* from the name (-1 unknown) */
	uint64_t lines, bytes, cut_lines, found;
	uint64_t binary; /* NUL and control bytes other than text's own (\t \r \f \v ESC) */
	bool wall, boot; /* it had wall-clock / boot-time stamps */
	bool srun_own;   /* a vigil run attempt's srun.log: srun's own lines only (rankout.h) */
};

/* A rank's host, learned from a line that names both (srun's "n2: task 3", an NCCL line in
 * rank-3.err), lent to the lines of that rank that name no host. */
struct dlog_rank_host {
	long rank;
	char host[DLOG_HOST_MAX];
};
#define DLOG_RANK_HOSTS_MAX 65536

/* torchrun's ChildFailedError block being read (logtorchrun.c; private). */
struct dlog_tr_entry {
	bool root, seen_tb, has_rank;
	long rank;
	char host[DLOG_HOST_MAX];
	struct dlog_launch l;
	char msg[DLOG_FIELD_MAX]; /* the traceback / msg field's first line */
	uint64_t line, seq;
	enum dlog_tb tb;
	double ts;
};
struct dlog_tr_head {
	struct dlog_match m;
	struct dlog_occ o;
};
#define DLOG_TR_ENTRIES_MAX 256
#define DLOG_TR_HEADS_MAX 16
struct dlog_tr {
	int section;              /* 0 none, 1 "Failures:", 2 "Root Cause" */
	bool in_entry;
	struct dlog_tr_entry cur;
	struct dlog_tr_entry *ent;
	size_t nr, alloc;
	uint64_t block_line, block_seq, last_line;
	struct dlog_tr_head heads[DLOG_TR_HEADS_MAX];
	size_t nr_heads;
};

struct dlog {
	struct dlog_finding *f;
	size_t nr, alloc;
	uint64_t lost;  /* matches of causes past DLOG_FINDINGS_MAX */
	struct dlog_file *files;
	size_t nr_files, alloc_files;
	uint64_t seq;
	struct dlog_rank_host *rh; /* sorted by rank */
	size_t nr_rh, alloc_rh;

	/* the root, after dlog_finish(): index into f, or -1 when nothing was found */
	long root;
	const char *root_why; /* static */
	bool unknown_times;   /* some finding could not be placed in time against the others */

	/* the file being read (private) */
	bool in_file;
	struct kmsg_log clock;
	char line[DLOG_LINE_MAX + 1];
	size_t line_len;
	bool skipping;        /* past DLOG_LINE_MAX of the current line */
	enum dlog_tb last_tb;
	double last_ts;
	bool day_ok;          /* day/day_ts: the date of the last vigil run stamp read */
	char day[10];
	double day_ts;
	struct dlog_tr tr;
};

void dlog_init(struct dlog *d);
void dlog_release(struct dlog *d);

/* A file's bytes follow: name for messages; the host and rank its name says ("" / -1). */
void dlog_file_begin(struct dlog *d, const char *name, const char *host, long rank);
void dlog_feed(struct dlog *d, const char *buf, size_t len);
/* The file ended (a last line without '\n' is judged). error: it could not be read to its end
 * (what was read counts), or NULL. */
void dlog_file_end(struct dlog *d, const char *error);
/* A file that could not be read at all (named as unknown in the output). */
void dlog_file_error(struct dlog *d, const char *name, const char *error);

/* After the last file: choose the root and order the findings (the root first, then by time). */
void dlog_finish(struct dlog *d);

/* Files that could not be read (in full or at all). */
size_t dlog_unreadable(const struct dlog *d);

/*
 * The host and rank a file's name says: vigil run's "rank-R.out|err" (and "rankR...") give the
 * rank, "HOST.log" the host unless HOST is a generic name ("srun", "kern", "train", ...).
 * path may hold directories. host gets "" and *rank -1 when the name says nothing.
 */
void dlog_name_origin(const char *path, char host[DLOG_HOST_MAX], long *rank);

/* "2026-12-01T02:51:00.703Z" / "boot+123.456s" / "" for an occurrence's time (out >= 40). */
void dlog_time_str(enum dlog_tb tb, double ts, char *out, size_t size);

/* The block reader (logtorchrun.c), called by logs.c for each line of the file being read:
 * true when the line is part of a block and judged there (not classified again). A line
 * that is not gets *lend_rank / lend_host: the rank and host of the entry whose traceback it
 * continues, else -1 / "". */
struct dlog_line_ctx {
	enum dlog_tb tb;
	double ts;
	uint64_t line;
};
bool dlog_tr_line(struct dlog *d, const char *s, size_t n, const struct dlog_line_ctx *c,
		  long *lend_rank, const char **lend_host);
/* A head line (m->head) held back until the block after it, with its occurrence. */
void dlog_tr_hold(struct dlog *d, const struct dlog_match *m, const struct dlog_occ *o);
/* The file ended: what the block reader holds is recorded. */
void dlog_tr_end(struct dlog *d);
void dlog_tr_release(struct dlog *d);
/* Record one occurrence of a cause (logs.c): grouping, hosts, ranks. */
void dlog_record(struct dlog *d, const struct dlog_match *m, struct dlog_occ *o);

void dlog_write_text(const struct dlog *d, struct strbuf *out);
void dlog_write_json(const struct dlog *d, struct strbuf *out);

#endif
