/*
 * runreport.h: what `vigil report RUN_DIR` tells about a supervised run (docs/SUPERVISOR.md),
 * built from the run's journal alone (journal.h) and written as text, JSON or one HTML page.
 *
 * Pure: journal text in, struct run_report out, writers into a strbuf; no clock, no printing.
 * The reading is as forgiving as journal_replay's: a torn last line, damaged lines, lines over
 * JOURNAL_LINE_MAX and records without a usable time are counted and skipped, never fatal.
 * Everything the journal says is outside text: the text writer quotes it with strbuf_add_clean,
 * the HTML writer escapes it, the JSON writer escapes it as JSON.
 *
 * Definitions (docs/SUPERVISOR.md, "vigil report", says the same for users):
 *   - wall time: from the first record to run_ended (the last one), else to the latest record.
 *   - a step record of attempt i is kept when no later attempt resumed at or below it: with
 *     K(i) = min over later attempts j that recorded steps of (first step of j) - 1, the steps
 *     of i above K(i) are redone (done again later); none are redone when no later attempt
 *     recorded a step.
 *   - productive time of attempt i: from its first step record to the moment it reached
 *     min(K(i), its last step) (interpolated between the two records around it), plus one median
 *     step interval (the first record marks the end of the first step, which was training too);
 *     0 when every step of i was redone; never more than the attempt lasted.
 *   - ETTR = the sum of productive times / wall time (null when the wall time is 0).
 *   - a fault is recovered at the first step record of the first later attempt that recorded
 *     one (training runs again); a hang followed by hang_cleared in the same attempt (a long
 *     step, not a fault), or a slowdown followed by slow_unexplained (no host named: the run
 *     went on), is recovered at the attempt's next step record.
 *
 * Bounds: at most RR_MAX_ITEMS attempts, faults, excluded hosts and events each (more are
 * counted as omitted); an attempt keeps at most RR_MAX_SAMPLES step records for the plot and the
 * interpolation (thinned by half when full: the first and last are always exact).
 *
 * Ownership: a run_report owns everything in it (run_report_release).
 */
#ifndef VIGIL_RUNREPORT_H
#define VIGIL_RUNREPORT_H

#include "../lib/strbuf.h"
#include "../lib/strindex.h"
#include "../lib/strlist.h"

#define RR_MAX_ITEMS 10000
#define RR_MAX_SAMPLES 8192

struct rr_sample {
	double t;
	uint64_t step;
};

struct rr_attempt {
	unsigned number;         /* VIGIL_ATTEMPT */
	bool started;            /* attempt_started seen (else known only from its records) */
	bool ended;              /* attempt_ended seen */
	double start, end;       /* end: attempt_ended, else its last record (NAN: unknown) */
	char *outcome;           /* attempt_ended's outcome; NULL when it did not end */
	bool has_code;
	int code;
	unsigned restarts;
	char *step_id;
	struct strlist hosts;
	uint64_t hosts_omitted;
	/* progress */
	size_t step_records;
	bool has_steps;
	uint64_t first_step, last_step;
	double first_step_t, last_step_t;
	struct rr_sample *samples;
	size_t nr_samples, alloc_samples;
	double *intervals; /* seconds per step between consecutive records (for the median) */
	size_t nr_intervals, alloc_intervals;
	unsigned thin_samples, thin_intervals; /* keep 1 in 2^thin of what comes next */
	size_t skip_samples, skip_intervals;
	/* derived */
	bool has_kept_limit;
	uint64_t kept_limit;     /* K(i): its steps above this were redone */
	uint64_t steps_redone;
	double median_step_s;    /* NAN: unknown */
	double productive_s;
};

struct rr_excluded {
	char *host, *reason;
	unsigned attempt;
	double t;
};

struct rr_fault {
	char *cls; /* crash, hang, startup_timeout, slow, sick, lost, cancel, supervisor_restart */
	unsigned attempt;
	char *host, *detail;
	double t, happened, detected, latency_s; /* NAN: unknown */
	double recovered, time_to_recover_s;      /* NAN: not recovered */
	bool cleared; /* a hang that cleared by itself, a slowdown no host explained: no restart */
	char *evidence, *evidence_host;           /* the evidence event of its attempt */
	struct rr_excluded *excluded;             /* hosts excluded for it (borrowed views) */
	size_t nr_excluded, alloc_excluded;
};

struct rr_event {
	char *cls, *host, *detail;
	unsigned attempt;
	double t;
};

struct run_report {
	/* the journal as read */
	size_t records, bad_lines, unknown_kinds;
	bool torn_tail;
	/* the run */
	double start, end, wall_s; /* NAN when there was no record */
	bool finished;
	char *outcome, *detail;    /* run_ended's */
	struct rr_attempt *attempts;
	size_t nr_attempts, alloc_attempts, attempts_omitted;
	struct rr_fault *faults;
	size_t nr_faults, alloc_faults, faults_omitted;
	struct rr_excluded *excluded;
	size_t nr_excluded, alloc_excluded, excluded_omitted;
	struct strindex excluded_index; /* by host: N records read in O(N) */
	struct rr_event *events; /* informational events (launched, evidence, preflight, ...) */
	size_t nr_events, alloc_events, events_omitted;
	uint64_t steps_redone;
	double productive_s;
	double ettr; /* NAN when the wall time is 0 */
};

/* Is cls one of the fault classes (as opposed to an informational event)? */
bool runreport_is_fault(const char *cls);

/* Build the report from journal text (any bytes). Never fails. */
void runreport_build(const char *text, size_t len, struct run_report *out);
/*
 * Read the journal at path (never through a link, never a FIFO or device; bounded by
 * max_bytes, 0 = 1 GiB) and build the report. 0, or -1 with *err: missing ("cannot read 'P':
 * No such file or directory"), unreadable, not a regular file, or longer than max_bytes.
 */
int runreport_read(const char *path, size_t max_bytes, struct run_report *out,
		   struct strbuf *err);
void run_report_release(struct run_report *r);

/* For a person: a header line, the attempts, the faults, the excluded hosts. title names the
 * run (the run directory; may be NULL); it is quoted like the journal's text. */
void runreport_text(const struct run_report *r, const char *title, struct strbuf *out);
/* One JSON object (field names: docs/SUPERVISOR.md, "vigil report"). */
void runreport_json(const struct run_report *r, const char *title, struct strbuf *out);
/* One self-contained HTML page: inline CSS and SVG, no script, no external resource. */
void runreport_html(const struct run_report *r, const char *title, struct strbuf *out);
/* Outside text into HTML (also vigil sim's page): at most max bytes, control bytes and invalid
 * UTF-8 cleaned, & < > " ' escaped. */
void runreport_html_text(struct strbuf *out, const char *s, size_t max);

/* "1h02m03s", "4m05s", "12.3s", "-" for NAN: durations as the text and HTML show them. */
void runreport_duration(struct strbuf *out, double s);

#endif
