/*
 * rows.h: the row reader of 'vigil diagnose steps' and 'vigil diagnose stragglers'. A training
 * run's per-step (or per-rank, per-step) numbers arrive as JSON lines or as CSV with a header,
 * columns by name; vigil run's own journal (only its kind=step records, "t" as the time) and an
 * attempt's steps.jsonl are read as they are; and a trainer's raw output (a file whose first line
 * is neither a JSON object nor a CSV header, or any file with --step-pattern) is read with the
 * step rules of 'vigil run' (src/logs/steps.h) by rows_raw.c. The input is outside text: a row that cannot be
 * understood is counted and named by its line, never fatal; memory is bounded (DIAG_ROWS_MAX rows,
 * DIAG_LINE_MAX bytes a line, DIAG_HOSTS_MAX host names). Pure but for diag_rows_read().
 */
#ifndef VIGIL_DIAGNOSE_ROWS_H
#define VIGIL_DIAGNOSE_ROWS_H

#include "../lib/strbuf.h"

#define DIAG_ROWS_MAX 4000000u
#define DIAG_LINE_MAX 4096u
#define DIAG_HOSTS_MAX 4096u
#define DIAG_STEP_MAX 1e15 /* a step number above this is not a step */
#define DIAG_GARBAGE_KEPT 5u

/* which fields a row has */
enum {
	DROW_TIME = 1 << 0,
	DROW_STEP_TIME = 1 << 1,
	DROW_MFU = 1 << 2,
	DROW_TOKENS = 1 << 3,
	DROW_COMPUTE = 1 << 4,
	DROW_RANK = 1 << 5,
	DROW_HOST = 1 << 6,
};

enum diag_format { DIAG_FMT_NONE, DIAG_FMT_JSONL, DIAG_FMT_JOURNAL, DIAG_FMT_CSV, DIAG_FMT_LOG };

#define DIAG_RAW_RANKS_MAX 65536u /* ranks of a raw log told apart (stragglers) */

struct diag_raw; /* rows_raw.c's state */

struct diag_row {
	uint64_t step;
	double time;      /* Unix seconds at the end of the step */
	double step_time; /* seconds (the rank's, for per-rank rows) */
	double mfu;       /* 0..1 */
	double tokens;
	double compute;   /* a rank's time outside collectives, seconds */
	uint32_t line;    /* 1-based line of the input */
	uint32_t rank;
	uint32_t host;    /* index into hosts[] */
	uint32_t attempt; /* the journal's attempt, else 0 */
	uint8_t has;      /* DROW_* */
};

struct diag_rows {
	struct diag_row *v;
	size_t nr, alloc;
	enum diag_format format;
	unsigned columns;   /* OR of every row's has */
	size_t lines;       /* lines seen (blank ones included) */
	size_t garbage;     /* rows that could not be understood */
	size_t skipped;     /* journal records of other kinds: not garbage */
	uint32_t garbage_line[DIAG_GARBAGE_KEPT];
	size_t garbage_line_nr;
	char garbage_why[160]; /* the first garbage row's reason, "line 7: ..." */
	bool truncated;     /* more than DIAG_ROWS_MAX rows: the rest was not read */
	size_t hosts_over;  /* rows of hosts past DIAG_HOSTS_MAX (garbage: their hosts unseen) */
	char header_error[160]; /* CSV: the header could not be used (no 'step' column) */
	char **hosts;
	size_t hosts_nr, hosts_alloc;
	/* the reader's state between feeds */
	struct strbuf part;
	bool part_overlong;
	int col[64];  /* CSV: field index -> column id, -1 ignored (fields past 64 too) */
	size_t ncol;
	uint32_t host_slot[2 * DIAG_HOSTS_MAX]; /* 1-based host index by hash, 0 empty */
	/* a raw log (DIAG_FMT_LOG) */
	struct diag_raw *raw;
	bool per_rank;           /* stragglers: every rank's rows; else one reporter's */
	bool log_has_rank;       /* steps: the reporter read is a rank of a prefix */
	uint32_t log_rank;       /* ... which one */
	size_t log_step_lines;   /* lines with a step (all ranks) */
	size_t log_other_ranks;  /* steps: step lines of other ranks, not read (the same steps) */
	size_t log_repeats;      /* a step's further lines (eval line, other logger) merged */
	size_t log_ranks;        /* distinct rank prefixes seen on step lines */
	size_t log_other_bars;   /* bar redraws of other bars (eval) */
};

void diag_rows_init(struct diag_rows *r);
void diag_rows_release(struct diag_rows *r);
/* Feed bytes in any chunks, then finish once; the rows do not depend on the cut. */
void diag_rows_feed(struct diag_rows *r, const char *data, size_t len);
void diag_rows_finish(struct diag_rows *r);
/* Read path (a regular file, followed through links; a FIFO or device is refused) into r,
 * which diag_rows_init() prepared. 0, or -1 with *err ("cannot read 'P': ..."). */
int diag_rows_read(const char *path, struct diag_rows *r, struct strbuf *err);
const char *diag_format_name(enum diag_format f);

/*
 * Before feeding: read the input as a trainer's raw output with pattern (a POSIX ERE whose
 * first group is the step; NULL: the default step rules, and then only when the first line is
 * neither a JSON object nor a CSV header), keeping every rank's rows (per_rank, for stragglers)
 * or one reporter's. 0, or -1 with *err (an invalid pattern).
 */
int diag_rows_log(struct diag_rows *r, const char *pattern, bool per_rank, struct strbuf *err);

/* for rows_raw.c: keep a row (its line is r->lines), count a garbage row */
void diag_rows_keep(struct diag_rows *r, struct diag_row *row);
void diag_rows_garbage(struct diag_rows *r, const char *why);
/* rows_raw.c: start reading r as a raw log with the bytes s, len of its current line: the whole
 * line, counted in r->lines, its newline not in s (counted); or its head, not counted yet (the
 * rest comes with the next feed). Then feed the rest; the end; free. */
void diag_raw_start(struct diag_rows *r, const char *s, size_t len, bool counted);
void diag_raw_feed(struct diag_rows *r, const char *data, size_t len);
void diag_raw_finish(struct diag_rows *r);
void diag_raw_free(struct diag_rows *r);
bool diag_raw_forced(const struct diag_rows *r);

#endif
