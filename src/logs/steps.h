/*
 * steps.h: a training run's progress read from what the trainer already writes, for the
 * supervisor (issue 9: `vigil run`), with no change to the trainer.
 *
 * Two sources, one parser each:
 * - output lines (a rank's stdout/stderr): the default pattern finds `step 120`, `step: 120`,
 *   `step=120`, `iter 120/5000`, `Iteration 120`, `"step": 120`, `global_step=120` and, on the
 *   same line, `loss 2.31` / `loss=2.31` / `"loss": 2.31` and `tokens 4194304`; or a user's
 *   --step-pattern, a POSIX extended regular expression whose first capture group is the step
 *   (loss and tokens are still read by the default rules);
 * - the step file ($VIGIL_STEP_FILE): one JSON object a line that the trainer appends,
 *   {"step": 120, "loss": 2.31, "tokens": 4194304}; "step" is required, the rest optional.
 *
 * The caller feeds whatever chunks it read (step_parser_feed); the parser splits lines and keeps
 * at most STEP_LINE_MAX bytes of an unfinished one: a longer line is judged on its first
 * STEP_LINE_MAX bytes and the rest is dropped, so megabyte lines or binary garbage cost a fixed
 * amount of memory. NUL bytes are read as spaces.
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
	/* counters for the supervisor's journal */
	uint64_t lines, steps, overlong_lines, bad_lines, backwards, jumps;
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
bool steps_parse_json(const char *line, size_t len, struct step_reading *out);

const char *step_change_name(enum step_change c);

#endif
