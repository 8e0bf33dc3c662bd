/*
 * hanglogs.h: the half of 'vigil diagnose hang' that works from logs alone, when no flight
 * recorder dump exists. A hung run's trainer output (vigil run's rank-N.out|err, srun --label
 * files, per-host logs) in; out, per process group: the collective the ranks wait in, the ranks
 * that printed PyTorch's watchdog timeout (victims), and the ranks that did not: the culprit is
 * the rank that never entered that collective (the lowest "last enqueued" work), or failing
 * that the rank whose output stopped well before the others' (hung ranks stop logging;
 * docs/DIAGNOSE.md). Also NCCL WARN and error lines (the first in time named) and the
 * "silent" outputs: those whose last stamped line is well before the latest one.
 *
 * Pure, in the style of logs.h: the command (src/cmd/diagnose_hanglogs.c) opens the files and
 * feeds their bytes in chunks of any size; nothing here reads, prints or exits. Three files:
 * hanglogs.c reads lines into records, hanglogs_judge.c groups them and judges,
 * hanglogs_out.c writes text and JSON.
 *
 *   hlog_init(&h);
 *   for each file: hlog_file_begin(&h, name, host, rank); hlog_feed(&h, buf, n)...;
 *                  hlog_file_end(&h, error_or_NULL);
 *                  (or hlog_file_error(&h, name, why) for one that could not be read)
 *   hlog_finish(&h);            the verdict
 *   hlog_write_text/json(&h, &out);
 *   hlog_release(&h);
 *
 * Lines it reads (exact wordings from PyTorch's ProcessGroupNCCL.cpp and TraceUtils.h):
 *   watchdog   "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=49,
 *              OpType=ALLREDUCE, NumelIn=.., NumelOut=.., Timeout(ms)=600000) ran for 600123
 *              milliseconds before timing out." behind any of "[E ProcessGroupNCCL.cpp:475] "
 *              (1.13, 2.0), "[rank3]:[E ProcessGroupNCCL.cpp:563] " (2.2), "[rank3]:[E1201
 *              05:10:12.345678 123 ProcessGroupNCCL.cpp:616] " (2.3+), and again inside
 *              "[PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated
 *              with exception: ..." (counted once);
 *   status     "[PG 0 Rank 3] Timeout at NCCL work: 49, last enqueued NCCL work: 49, last
 *              completed NCCL work: 48." (2.2), "[PG 0 (default_pg) Rank 3] Exception (either an
 *              error or timeout) detected by watchdog at work: 49, last enqueued NCCL work: ..."
 *              (2.3), "[PG ID 0 PG GUID 0(default_pg) Rank 3]  failure detected by watchdog at
 *              work sequence id: 49 PG status: last enqueued work: 49, last completed work: 48"
 *              (2.4+), and any line with "last enqueued [NCCL ]work: N" (a dump signal's
 *              "Last enqueued NCCL work: 48" on a rank that did not time out, "last started
 *              work: N" read too);
 *   failed     "Some NCCL operations have failed or timed out";
 *   blocking   "[Rank 1] Work WorkNCCL(SeqNum=..., ...) timed out in blocking wait." (a timeout);
 *   desync     TORCH_NCCL_DESYNC_DEBUG's report, opened by "[3] Timeout at collective: OP, #N"
 *              (2.5+ prints "Rank 3" first and the lines without "[rank3]:"): "ranks [5] are the
 *              lagging ranks that caused this timeout", "[0, 1] joined but didn't finish
 *              collective #49", "[5] finished collective #48, but didn't join collective #49",
 *              the snapshot "#49 started ranks:" / "[0, 1] started ALLREDUCE". Its #N counts
 *              each rank's latest started trace, not the watchdog's SeqNum: never compared;
 *   NCCL       "host:pid:tid [dev] NCCL WARN ..." (less the warnings every healthy run prints)
 *              and NCCL error lines ("NCCL error", ncclSystemError, ncclInternalError,
 *              ncclRemoteError, ncclUnhandledCudaError, ncclInvalidUsage).
 *
 * Groups: the "[PG ...]" prefix names the group: its GUID (else its id) and "(description)";
 * a watchdog line that names none ("[Rank N]" only) joins the group whose status line the same
 * output printed for the same work, else the named group timed out in the same collective
 * (SeqNum, OpType, NumelIn, NumelOut), else a named default group with no timeout of its own;
 * the rest form the unnamed group, the default when no named one is ("0", "0(default_pg)"
 * are default). The unnamed group keeps one record per rank and SeqNum; runs of its SeqNums
 * more than HLOG_SEQ_GAP apart are groups of their own (PyTorch 1.x names none; "cluster").
 *
 * Ranks: a line's rank is srun --label's "3: ", else torch's "[rank3]:", else the file's (from
 * its name); "[Rank N]" is the rank in the group, the same as the global rank in the default
 * group only. The default group's members are every rank seen anywhere, and the ranks missing
 * between 0 and the highest seen (a rank with no output at all).
 *
 * Times: a line's stamp as src/diagnose/logs.h reads it (vigil run's "2026-12-01T02:51:00.703Z
 * " prefix fast, the kernel log reader's forms otherwise: wall clock), else torch's glog stamp
 * "[E1201 05:10:12.345678" (month, day and time without a year: compared only with other glog
 * stamps). Each output stream (a file, or one srun label's lines in it) keeps its last stamp.
 *
 * Silent: among the streams that name a rank or host and have a stamp, those whose last stamp
 * is more than HLOG_SILENT_S before the latest of all. When more than half are silent, the
 * trainer just prints rarely on most ranks and silence names nobody (silent_inconclusive).
 *
 * Bounds: lines judged by their first HLOG_LINE_MAX bytes; memory grows with the number of
 * files, streams (labels) and ranks (at most HLOG_RECS_MAX rank records, HLOG_STREAMS_MAX
 * streams, HLOG_GROUPS_MAX groups: what is past them is counted in lost), never with the size
 * of a file.
 *
 * The verdict (after hlog_finish()), per group that had a watchdog timeout: the collective
 * waited in (the most common timed-out SeqNum, its OpType, numel, timeout, the longest "ran
 * for"), the victims, the culprits and the suspects (struct hlog_who, each with why).
 * "Could not tell" is said as such: verdict HLOG_UNKNOWN, never "no hang".
 *
 * JSON (hlog_write_json(), the lead's `vigil diagnose hang --json` puts it under "logs"):
 *   verdict       "culprit" | "suspects" | "inside_collective" | "silent" | "unknown"
 *   summary       the one paragraph the text output starts with
 *   action        what to do next (every verdict has one, unknown too; "next: " in the text)
 *   groups[]      per group with a timeout, the culprit group first:
 *     group         its name ("0(default_pg)", "3", ...) or null (unnamed); default: bool
 *     seq, op, numel_in, numel_out, timeout_ms, waited_ms   the collective (null unknown)
 *     first_timeout {time, timebase, file, line, rank, host}: the earliest watchdog line
 *     victims[]     ranks that printed the timeout at seq or later (global ranks where known, else
 *                   ranks in the group); more_victims: how many past the first 4096
 *     index, seq_run  the group's index (other_group refers to it), its run of SeqNums when
 *                   an unnamed group was split (1, 2, ...; 0 not split)
 *     culprits[], suspects[]: {rank, group_rank, host, why, last_enqueued, last_completed,
 *                   timed_out_seq, last_time, behind_s, report, report_seq, report_next,
 *                   other_group} (null where unknown); why is one of "desync_report"
 *                   (PyTorch's own analysis named it: report "never_joined",
 *                   "finished_not_joined" (#report_seq, not #report_next) or
 *                   "joined_not_finished", in the report's numbering), "never_entered" (last
 *                   enqueued below seq), "behind" (timed out at an earlier work), "silent"
 *                   (printed no timeout; its output stopped before the timeouts),
 *                   "timed_out_in_other_group" (it waits in group other_group), "no_timeout"
 *                   (printed no timeout, still logging), "no_output" (missing from every log)
 *     inside_collective: every member printed the timeout at seq, none is missing
 *   silent[]      {file, host, rank, last_time, behind_s}: streams stopped first, earliest first
 *   silent_inconclusive, latest_time
 *   nccl          {warnings, errors, first: {kind, host, rank, file, line, time, example} | null,
 *                 hosts[]}
 *   files[]       {file, host, rank, lines, bytes, cut_lines, last_time, status, error,
 *                 action (with an error)}
 *   unreadable, lost
 */
#ifndef VIGIL_DIAGNOSE_HANGLOGS_H
#define VIGIL_DIAGNOSE_HANGLOGS_H

#include "../lib/strbuf.h"
#include "../logs/kmsg.h"

#include <stdbool.h>
#include <stdint.h>

#define HLOG_LINE_MAX 8192
#define HLOG_HOST_MAX 64
#define HLOG_GROUP_MAX 96
#define HLOG_OP_MAX 40
#define HLOG_EXAMPLE_MAX 240
#define HLOG_GROUPS_MAX 256
#define HLOG_RECS_MAX 65536
#define HLOG_STREAMS_MAX 65536
#define HLOG_DESYNC_MAX 4096
#define HLOG_LIST_MAX 4096 /* ranks listed per victim/culprit/suspect list */
#define HLOG_NCCL_HOSTS_MAX 64
#define HLOG_SILENT_S 60.0
/* Unnamed timeouts (PyTorch 1.x prints no group) whose SeqNums are further apart than this
 * are different groups: one group's ranks time out within a few works of each other. */
#define HLOG_SEQ_GAP 1000
#define HLOG_UNSET INT64_MIN /* a number the logs did not say */

enum hlog_tb { HLOG_TB_NONE, HLOG_TB_WALL, HLOG_TB_GLOG };

struct hlog_time {
	enum hlog_tb tb;
	double ts; /* WALL: seconds since the epoch; GLOG: seconds since Jan 1 of an unknown year */
};

enum hlog_verdict { HLOG_UNKNOWN, HLOG_CULPRIT, HLOG_SUSPECTS, HLOG_INSIDE, HLOG_SILENT };

/* In the order culprits are listed: PyTorch's own analysis first. */
enum hlog_why {
	HLOG_WHY_DESYNC,
	HLOG_WHY_NEVER_ENTERED,
	HLOG_WHY_BEHIND,
	HLOG_WHY_SILENT,
	HLOG_WHY_OTHER_GROUP,
	HLOG_WHY_NO_TIMEOUT,
	HLOG_WHY_NO_OUTPUT,
};

/* What a desync report line says of the ranks it lists (TraceUtils.h's retrieveDesyncReport). */
enum hlog_report {
	HLOG_REPORT_NONE = -1,
	HLOG_REPORT_NEVER_JOINED,   /* "ranks [..] are the lagging ranks ... never joined any" */
	HLOG_REPORT_NOT_JOINED,     /* "[..] finished collective #L, but didn't join collective #L+1" */
	HLOG_REPORT_NOT_FINISHED,   /* "[..] joined but didn't finish collective #L" */
	HLOG_REPORT_SNAP_STARTED,   /* the snapshot: "#N started ranks:" then "[..] started OP" */
	HLOG_REPORT_SNAP_FINISHED,  /* "#N finished ranks:" then "[..] finished OP" */
};

struct hlog_file {
	char *name;
	char *error; /* why it could not be read (in full or at all), else NULL */
	char host[HLOG_HOST_MAX];
	long rank;
	uint64_t lines, bytes, cut_lines;
	struct hlog_time last; /* its last stamped line (wall if it had one, else glog) */
};

/* The output of one process: a file, or one srun label's lines within a file. */
struct hlog_stream {
	size_t file;
	long rank; /* -1: the file's lines that name no rank of their own */
	char host[HLOG_HOST_MAX];
	struct hlog_time last_wall, last_glog; /* tb NONE: none seen */
	uint64_t lines;
};

/* One rank in one group, as its lines told it. */
struct hlog_rec {
	size_t group;
	long rank, grank; /* global rank, rank in the group; -1 unknown */
	size_t stream;
	bool timed_out, failed, dead;
	int64_t seq;          /* the work it timed out at (or failed at), else HLOG_UNSET */
	char op[HLOG_OP_MAX];
	int64_t numel_in, numel_out, timeout_ms, ran_ms;
	int64_t last_enq, last_started, last_done; /* PyTorch's -1 is "none yet" */
	struct hlog_time at;  /* the watchdog line */
	size_t file;
	uint64_t line;
	int64_t key_seq; /* the unnamed group keeps one record per rank and SeqNum (1.x groups) */
	size_t into;     /* dead: the record it was merged into, else SIZE_MAX */
};

struct hlog_who {
	long rank, grank;
	char host[HLOG_HOST_MAX];
	enum hlog_why why;
	int64_t last_enq, last_done, seq;
	struct hlog_time last; /* its output's last stamp */
	double behind_s;       /* how long before the first timeout / the latest line; <0 unknown */
	enum hlog_report report; /* why DESYNC: what the report said, in its own numbering: */
	int64_t report_seq, report_next; /* #L and (NOT_JOINED) the #L+1 it did not join */
	size_t other_group;    /* why OTHER_GROUP: the group it timed out in */
};

struct hlog_group {
	char name[HLOG_GROUP_MAX]; /* "" unnamed */
	bool dflt;
	unsigned cluster; /* unnamed groups told apart by SeqNum (PyTorch 1.x): 1, 2, ...; else 0 */
	/* the verdict, after hlog_finish() (has_timeout false: no watchdog line in this group) */
	bool has_timeout, inside;
	int64_t seq, numel_in, numel_out, timeout_ms, waited_ms;
	char op[HLOG_OP_MAX];
	struct hlog_time first;
	size_t first_file;
	uint64_t first_line;
	long first_rank;
	long *victims;
	size_t nr_victims, alloc_victims;
	uint64_t more_victims;
	struct hlog_who *culprits, *suspects;
	size_t nr_culprits, alloc_culprits, nr_suspects, alloc_suspects;
};

struct hlog_desync {
	size_t rec;    /* the watchdog record of the rank that printed it, or SIZE_MAX */
	long grank;    /* a rank the report names */
	int64_t seq;   /* the collective it names (#N, its own count), or HLOG_UNSET */
	int64_t next;  /* NOT_JOINED: the "#N+1" it printed */
	enum hlog_report kind;
};

struct hlog_nccl_line {
	bool warn; /* NCCL WARN, else an NCCL error line */
	struct hlog_time t;
	uint64_t order;
	size_t file;
	uint64_t line;
	long rank;
	char host[HLOG_HOST_MAX];
	char example[HLOG_EXAMPLE_MAX + 1];
};

struct hlog {
	struct hlog_file *files;
	size_t nr_files, alloc_files;
	struct hlog_stream *streams;
	size_t nr_streams, alloc_streams;
	struct hlog_group *groups;
	size_t nr_groups, alloc_groups;
	struct hlog_rec *recs;
	size_t nr_recs, alloc_recs;
	size_t *rec_idx; /* recs sorted by (group, rank, grank) */
	size_t alloc_rec_idx;
	struct hlog_desync *desync;
	size_t nr_desync, alloc_desync;
	uint64_t lost; /* records, streams, groups or desync lines past their bounds */
	long *timed_ranks; /* after hlog_finish(): global ranks that printed a timeout, sorted */
	size_t *timed_groups; /* the group each of them timed out in */
	size_t nr_timed_ranks;

	uint64_t nccl_warns, nccl_errors, order;
	bool has_nccl;
	struct hlog_nccl_line nccl_first;
	char (*nccl_hosts)[HLOG_HOST_MAX];
	size_t nr_nccl_hosts, alloc_nccl_hosts;

	/* after hlog_finish() */
	enum hlog_verdict verdict;
	struct hlog_who *silent; /* earliest first */
	size_t nr_silent, alloc_silent;
	bool silent_inconclusive;
	struct hlog_time latest;
	size_t *order_groups; /* groups with a timeout, the one to look at first */
	size_t nr_order;

	/* the file being read (private) */
	bool in_file;
	struct kmsg_log clock;
	char line[HLOG_LINE_MAX + 1];
	size_t line_len;
	bool skipping;
	bool day_ok;
	char day[10];
	double day_ts;
	size_t last_rec; /* the last watchdog record of this file (desync lines follow it) */
	size_t report_rec; /* the rank whose desync report is being read ("[R] Timeout at ...") */
	enum hlog_report snap; /* the snapshot heading last read, or NONE */
	int64_t snap_seq;
	struct { long rank; size_t stream; } *smap; /* this file's streams by rank, sorted */
	size_t nr_smap, alloc_smap;
};

void hlog_init(struct hlog *h);
void hlog_release(struct hlog *h);

/* A file's bytes follow: name for messages; the host and rank its name says ("" / -1). */
void hlog_file_begin(struct hlog *h, const char *name, const char *host, long rank);
void hlog_feed(struct hlog *h, const char *buf, size_t len);
/* The file ended (a last line without '\n' is judged); error: why it was cut short, or NULL. */
void hlog_file_end(struct hlog *h, const char *error);
void hlog_file_error(struct hlog *h, const char *name, const char *error);

void hlog_finish(struct hlog *h);
size_t hlog_unreadable(const struct hlog *h);

const char *hlog_verdict_name(enum hlog_verdict v);
/* What to do next, for the verdict (a static string; "unknown" has one too). */
const char *hlog_action(const struct hlog *h);
const char *hlog_why_name(enum hlog_why w);

/* The paragraph alone (what the text output starts with, and the JSON's summary). */
void hlog_summary(const struct hlog *h, struct strbuf *out);
void hlog_write_text(const struct hlog *h, struct strbuf *out);
/* One JSON object (no trailing newline), to be embedded or printed. */
void hlog_write_json(const struct hlog *h, struct strbuf *out);

#endif
