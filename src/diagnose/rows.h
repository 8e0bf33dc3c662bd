/*
 * rows.h: the row reader of 'vigil diagnose steps' and 'vigil diagnose stragglers'. A training
 * run's per-step (or per-rank, per-step) numbers arrive as JSON lines or as CSV with a header,
 * columns by name; vigil run's own journal (only its kind=step records, "t" as the time) and an
 * attempt's steps.jsonl are read as they are. The input is outside text: a row that cannot be
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

enum diag_format { DIAG_FMT_NONE, DIAG_FMT_JSONL, DIAG_FMT_JOURNAL, DIAG_FMT_CSV };

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

#endif
