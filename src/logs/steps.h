/*
 * steps.h: a training run's progress read from what the trainer already writes, for the
 * supervisor (docs/SUPERVISOR.md) and for `vigil diagnose steps` on a raw log (docs/DIAGNOSE.md), with
 * no change to the trainer.
 *
 * Two sources, one parser each:
 * - output lines (a rank's stdout/stderr): the default step rules (steps_rules.c; one per
 *   trainer's line shape: Megatron, NeMo, Lightning and tqdm bars, HF Trainer, DeepSpeed,
 *   torchtitan, nanoGPT, litgpt, composer, fairseq, OLMo, MetricLogger, and the generic
 *   `step 120` / `iter 120/5000` / `"step": 120` / `global_step=120`; docs/SUPERVISOR.md lists
 *   them with an example line each) find the step and, on the same line, the loss, tokens, the
 *   step time the trainer reports and the MFU; or a user's --step-pattern, a POSIX extended
 *   regular expression whose first capture group is the step (the rest is still read by the
 *   default rules);
 * - the step file ($VIGIL_STEP_FILE): one JSON object a line that the trainer appends,
 *   {"step": 120, "loss": 2.31, "tokens": 4194304}; "step" is required, the rest optional.
 *
 * The caller feeds whatever chunks it read (step_parser_feed); the parser splits lines at '\n'
 * and '\r' (a progress bar redraws itself after '\r') and keeps at most STEP_LINE_MAX bytes of
 * an unfinished one: a longer line is judged on its first STEP_LINE_MAX bytes and the rest is
 * dropped, so megabyte lines or binary garbage cost a fixed amount of memory. NUL bytes are read
 * as spaces.
 *
 * Each step found is classified against the previous one: the first, the next (forward within
 * STEP_JUMP_FACTOR times the usual stride), the same again, backwards (a resumed trainer) or a
 * jump. Backwards and jumps are events to log, never errors.
 *
 * Ownership: the parser owns its compiled pattern and line buffer; step_parser_release() frees
 * them. Updates handed to the callback live only during the call.
 */
#ifndef VIGIL_STEPS_H
#define VIGIL_STEPS_H

#include "../lib/strbuf.h"

#include <regex.h>

/* Bytes of one line kept for matching; the rest of a longer line is dropped. */
#define STEP_LINE_MAX 16384
/* A forward move of more than this many times the usual stride is a jump. */
#define STEP_JUMP_FACTOR 10
/* Steps are whole numbers below 2^53 (what a JSON number carries exactly). */
#define STEP_MAX 9007199254740991ull

/* What one line said. */
struct step_reading {
	uint64_t step;
	bool has_total; /* iter 120/5000 */
	uint64_t total;
	bool has_loss;
	double loss;
	bool has_tokens;
	uint64_t tokens;
	bool has_step_time; /* what the trainer says one step took, seconds */
	double step_time;
	bool has_mfu; /* 0..1 */
	double mfu;
	uint64_t bar_total; /* a progress bar's count: the bar's total (which bar); else 0 */
};

/* What a line's head says: whose it is (a launcher's rank prefix) and when (a time stamp). */
struct step_line_meta {
	bool has_rank;
	uint32_t rank;
	bool has_time;
	double time; /* Unix seconds (a stamp without a zone is read as UTC) */
};

enum step_change {
	STEP_FIRST,     /* no step before it */
	STEP_NEXT,      /* forward, within the jump limit */
	STEP_SAME,      /* the step already seen (a second line about it): no progress */
	STEP_BACKWARDS, /* lower than the last: a trainer that resumed from a checkpoint */
	STEP_JUMP,      /* forward by more than STEP_JUMP_FACTOR strides */
};

struct step_update {
	struct step_reading r;
	enum step_change change;
	uint64_t prev; /* the step before (0 for STEP_FIRST) */
	bool truncated_line; /* found in the kept head of an overlong line */
	uint64_t line_no;    /* 1-based, counting '\n' only (the '\r' of a bar is not a line) */
	struct step_line_meta meta; /* filled when the parser was asked to (want_meta) */
};

enum step_source { STEP_SOURCE_OUTPUT, STEP_SOURCE_JSON };

struct step_parser {
	enum step_source source;
	bool have_re;
	regex_t re;
	struct strbuf line; /* the unfinished line, at most STEP_LINE_MAX bytes */
	bool overlong;      /* the current line passed STEP_LINE_MAX */
	bool have_last;
	uint64_t last;
	uint64_t stride; /* smallest forward move seen; 0 until one is */
	uint64_t bar_total; /* the training bar's total (the first bar with a step), 0: none yet */
	uint64_t newlines;  /* '\n' seen: the line number of the unfinished line, less one */
	bool mid_line;      /* bytes (a '\r' too) since the last '\n' */
	bool want_meta;     /* read each line's rank prefix and time stamp into the update */
	/* counters for the supervisor's journal */
	uint64_t lines, steps, overlong_lines, bad_lines, backwards, jumps, other_bars;
};

typedef void (*step_fn)(void *arg, const struct step_update *u);

/*
 * An output parser: pattern NULL or "" is the default; otherwise a POSIX ERE with at least one
 * capture group. 0, or -1 with *err ("invalid --step-pattern '(': ..."), and then nothing to
 * release.
 */
int step_parser_init_output(struct step_parser *p, const char *pattern, struct strbuf *err);
/* A parser of the step file's JSON lines. */
void step_parser_init_json(struct step_parser *p);
void step_parser_release(struct step_parser *p);

/* Feed len bytes (any bytes); fn is called for each step found in a finished line. */
void step_parser_feed(struct step_parser *p, const char *data, size_t len, step_fn fn, void *arg);
/* The input ended: judge the unfinished line, if any, as a whole one. */
void step_parser_finish(struct step_parser *p, step_fn fn, void *arg);

/* One line, without classification (tests, the fuzz target). true when a step was found. */
bool steps_match_default(const char *line, size_t len, struct step_reading *out);
/* The rules after the step (loss, tokens, step time, MFU) on a line whose step was found. */
void steps_read_values(const char *line, size_t len, struct step_reading *out);
/* A line's rank prefix ([rank3]:, [default3]:, srun --label's "3: ", mpirun's [1,3]<stdout>:)
 * and its time stamp (2024-05-01 12:00:01[,.]123, ...T12:00:01.123Z, +02:00); the bytes of the
 * prefix are returned (0: none). */
size_t steps_line_meta(const char *line, size_t len, struct step_line_meta *out);
bool steps_parse_json(const char *line, size_t len, struct step_reading *out);

const char *step_change_name(enum step_change c);

#endif
