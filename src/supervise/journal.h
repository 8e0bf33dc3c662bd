/*
 * journal.h: the durable record of a supervised run (docs/SUPERVISOR.md), and its replay.
 *
 * The journal is RUN_DIR/journal.jsonl: one JSON object a line, appended and fsync'd one record
 * at a time, so a kill -9 of the supervisor loses at most the line being written. A line is at
 * most JOURNAL_LINE_MAX bytes: each text field is cut to JOURNAL_TEXT_MAX bytes (on a character
 * boundary, marked "...") and a host list to JOURNAL_HOSTS_MAX names ("hosts_omitted" says how
 * many more). Format (docs/SUPERVISOR.md):
 *
 *   {"t":1712345678.25,"kind":"attempt_started","attempt":1,"restarts":1,"step_id":"812.1","hosts":[..]}
 *   {"t":..,"kind":"event","attempt":1,"class":"hang","host":"n3","happened":..,"detected":..,
 *    "latency_s":12.5,"detail":".."}
 *   {"t":..,"kind":"step","attempt":1,"step":1200,"loss":2.31,"tokens":4194304}
 *   (loss and tokens when the trainer's step line says them: diagnose steps reads tokens/s)
 *   {"t":..,"kind":"host_excluded","attempt":1,"host":"n3","reason":"vigil: Xid 79 ..."}
 *   {"t":..,"kind":"attempt_ended","attempt":1,"outcome":"hang","code":137}
 *   {"t":..,"kind":"run_started"} / {"t":..,"kind":"run_ended","outcome":"done"}
 *
 * Replay reads a journal back into what the supervisor must know to go on: the last attempt,
 * whether its step may still be running (started, never ended: it must be stopped or adopted,
 * never launched again), the restarts spent, the last step, the hosts excluded and why, and
 * whether the run already ended. A torn last line (kill -9 mid-write) and damaged lines are
 * counted and skipped, never fatal; records of kinds it does not know are skipped too.
 *
 * Ownership: struct journal owns its fd and path (journal_close). A replay owns its strings
 * (journal_replay_release). Records passed to journal_append are only read.
 */
#ifndef VIGIL_JOURNAL_H
#define VIGIL_JOURNAL_H

#include "../lib/strindex.h"
#include "../lib/strbuf.h"

#define JOURNAL_LINE_MAX 65536
#define JOURNAL_TEXT_MAX 1024
#define JOURNAL_HOSTS_MAX 256

enum journal_kind {
	JOURNAL_RUN_STARTED,
	JOURNAL_ATTEMPT_STARTED,
	JOURNAL_ATTEMPT_ENDED,
	JOURNAL_EVENT,
	JOURNAL_STEP,
	JOURNAL_HOST_EXCLUDED,
	JOURNAL_RUN_ENDED,
	JOURNAL_KIND_NR
};

struct journal_record {
	enum journal_kind kind;
	double t; /* wall clock, seconds since the epoch */
	unsigned attempt;
	unsigned restarts;   /* ATTEMPT_STARTED: restarts spent when it started */
	const char *name;    /* EVENT: its class; ATTEMPT_ENDED, RUN_ENDED: the outcome */
	const char *host;    /* EVENT: the host blamed, if any; HOST_EXCLUDED: the host */
	const char *text;    /* EVENT: detail; HOST_EXCLUDED: the reason */
	const char *step_id; /* ATTEMPT_STARTED: the Slurm step, JOBID.STEPID */
	const char *const *hosts;
	size_t nr_hosts;
	bool has_code;
	int code;
	bool has_step;
	uint64_t step;
	bool has_loss;
	double loss;
	bool has_tokens; /* STEP: the trainer's count, per step or a running total as it said */
	uint64_t tokens;
	bool has_mfu;    /* STEP: the MFU the trainer printed, 0..1 (nanoGPT's, torchtitan's) */
	double mfu;
	bool has_latency; /* EVENT: when the fault happened (best known) and when it was seen */
	double happened, detected;
};

struct journal {
	int fd;
	char *path;
	bool need_newline; /* the file ended in a torn line: start on a fresh one */
	bool unsynced;     /* written since the last fsync */
	/* Private and temporary (vigil sim's run directory, removed when the run ends): records
	 * are gathered in pending and written 64 KiB at a time and at journal_sync and
	 * journal_close, and never fsync'd: a crash loses them, which nothing there would read.
	 * A real run's journal is never lazy (false: every record written at once). */
	bool lazy;
	struct strbuf pending;
};

/*
 * Open path for appending: created exclusively (0644) the first time, with its directory synced;
 * reopened after that. Never through a link (O_NOFOLLOW), never a FIFO, device, a file with
 * other hard links or one owned by another user. 0, or -1 with *err.
 */
int journal_open(struct journal *j, const char *path, struct strbuf *err);
/* Append one record as one line, then fsync. 0, or -1 with *err ("cannot write 'P': ..."). */
int journal_append(struct journal *j, const struct journal_record *r, struct strbuf *err);
/* The same, the fsync only when sync: progress records, many a second, are synced in batches
 * (journal_sync, or the next synced record), so a crash loses at most the latest of them. */
int journal_append_sync(struct journal *j, const struct journal_record *r, bool sync,
			struct strbuf *err);
int journal_sync(struct journal *j, struct strbuf *err);
void journal_close(struct journal *j);
/* The line journal_append writes, without its newline (tests, the report). */
void journal_format(const struct journal_record *r, struct strbuf *out);
const char *journal_kind_name(enum journal_kind k);

struct journal_excluded {
	char *host;
	char *reason;
	unsigned attempt;
};

struct journal_replay {
	bool found; /* there was a journal */
	size_t records, bad_lines, unknown_kinds;
	bool torn_tail;
	bool started_any; /* an attempt was started */
	unsigned attempt; /* the last attempt started */
	unsigned restarts;
	bool attempt_open; /* started and not ended: its step may still run */
	char *step_id;     /* the open attempt's step, if it said */
	bool has_step;
	uint64_t last_step;
	unsigned last_step_attempt;
	struct journal_excluded *excluded;
	size_t nr_excluded, alloc_excluded;
	struct strindex excluded_index; /* by host: a journal of N hosts reads in O(N) */
	bool finished; /* run_ended seen */
	char *outcome;
	/* a divergence (event sdc, its step) after which no attempt started yet: the next one
	 * must still resume before that step */
	bool sdc_pending;
	uint64_t sdc_step;
};

/*
 * Read the journal at path into *out (which it initialises). A missing journal is a fresh run:
 * 0 with out->found false. 0, or -1 with *err when it cannot be read at all (a link, a FIFO,
 * unreadable).
 */
int journal_replay(const char *path, struct journal_replay *out, struct strbuf *err);
/* Replay from text already in memory (tests). */
void journal_replay_text(const char *text, size_t len, struct journal_replay *out);
void journal_replay_release(struct journal_replay *r);

#endif
