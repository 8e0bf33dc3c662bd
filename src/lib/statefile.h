/*
 * statefile.h: counter readings kept between runs in the state directory (the InfiniBand error
 * counters, the GPU NVLink error counters, the PCIe non-fatal AER totals), so that a check
 * judges the rise since the last run rather than a total since the driver loaded. One small
 * text file per kind:
 *
 *   # vigil infiniband counters (NAME VALUE: the name is all before the last space)
 *   mlx5_0 1 symbol_error 12
 *
 * Read with a bound (STATEFILE_MAX_BYTES) and replaced through write_file_atomic() (fileio.h).
 * A file that is not such a file (a header of another kind, a line that is not NAME VALUE, NUL
 * bytes, too large, not a regular file) is "no previous reading", and statefile_load() says why,
 * so that the check can say so: a damaged or planted state file never stops a check and never
 * feeds it made-up readings. Files without the header line (vigil before this module) load.
 *
 * Ownership: a counter_set owns its names; counter_set_release() frees them.
 */
#ifndef VIGIL_STATEFILE_H
#define VIGIL_STATEFILE_H

#include "strbuf.h"

#define STATEFILE_MAX_BYTES (1u << 20)

struct counter {
	char *name; /* printable, no newline, no leading or trailing space */
	uint64_t value;
};

struct counter_set {
	struct counter *items;
	size_t nr, alloc;
};
#define COUNTER_SET_INIT { NULL, 0, 0 }

/* Add one reading (the name is copied). A name that cannot be stored (empty, control bytes,
 * leading or trailing space, over 255 bytes) is left out: false. */
bool counter_set_add(struct counter_set *s, const char *name, uint64_t value);
/* The first reading of that name: true and *value, or false. */
bool counter_set_get(const struct counter_set *s, const char *name, uint64_t *value);
void counter_set_release(struct counter_set *s);

/* The file's text for kind ("infiniband", "gpu-nvlink"), appended to out. */
void statefile_format(const char *kind, const struct counter_set *s, struct strbuf *out);
/* Parse text (len bytes) into out: 0, or -1 with *why (out then holds nothing). */
int statefile_parse(const char *kind, const char *text, size_t len, struct counter_set *out,
		    struct strbuf *why);

enum { STATEFILE_LOADED = 0, STATEFILE_NONE = 1, STATEFILE_UNUSABLE = 2 };
/*
 * Load path: STATEFILE_LOADED (out filled; *mtime, if not NULL, the file's modification time),
 * STATEFILE_NONE (no file), or STATEFILE_UNUSABLE with *why ("'P' is not usable: line 3 is not
 * NAME VALUE"; out empty). Never -1.
 */
int statefile_load(const char *path, const char *kind, struct counter_set *out, double *mtime,
		   struct strbuf *why);
/* Replace path with the set (write_file_atomic, mode 0644): 0 or -1 with *err. */
int statefile_save(const char *path, const char *kind, const struct counter_set *s,
		   struct strbuf *err);

/*
 * The time base of a kept reading, so that a rise can be said as a rate ("+4000 in 5 min
 * (48,000/h)"). Two entries beside the counters, named so that no check's counter name can be
 * them: "@time", when the reading was taken (epoch seconds), and "@boot", the host's boot time
 * then (/proc/stat btime; absent when unknown). A file without "@time" (vigil before rates) is
 * dated by its modification time.
 */
#define STATEFILE_TIME "@time"
#define STATEFILE_BOOT "@boot"
/* A reading older than this is a new baseline, not compared: a day-old total says nothing of
 * the rate now. */
#define STATEFILE_MAX_AGE_S (24.0 * 3600)
/* btime moves by a second or so as the clock is adjusted; another boot moves it by far more. */
#define STATEFILE_BOOT_SLACK_S 60.0
/* The baseline is kept (not replaced by each run's reading) until it is this old, as edac.c
 * does: the agent runs every 30 s, and slow rates add up only over a longer span. */
#define STATEFILE_BASELINE_S 3600.0

/* The "btime N" line of /proc/stat's text: true and *boot, or false. */
bool statefile_parse_btime(const char *stat_text, double *boot);
/* Add "@time" (and "@boot" when boot > 0) to s. */
void statefile_stamp(struct counter_set *s, double time, double boot);

enum statefile_base {
	BASE_OK,         /* a kept reading of this boot, at most STATEFILE_MAX_AGE_S old */
	BASE_FIRST,      /* no kept reading: the first run */
	BASE_STALE,      /* older than that, or dated after now: a new baseline */
	BASE_OTHER_BOOT, /* taken in another boot: a new baseline */
};
/*
 * Judge a loaded set (loaded false: none) as a baseline at now; boot: this boot's btime (<= 0:
 * unknown, then not compared); mtime: the file's time, used when the set has no "@time" (< 0:
 * unknown). *age: seconds since the kept reading (-1 unknown, then BASE_OK with no rate).
 */
enum statefile_base statefile_base(const struct counter_set *prev, bool loaded, double mtime,
				   double now, double boot, double *age);
/* What a baseline that is not compared means, for a summary: "first reading; the next run
 * compares", "new baseline: the last reading is 30 h old", "... from another boot"; nothing
 * for BASE_OK. age: as statefile_base() gave it. */
void statefile_base_describe(enum statefile_base b, double age, struct strbuf *out);

/* "45 s", "5 min", "2.5 h", "3 days": a span as a person says it. */
void statefile_span(struct strbuf *out, double secs);
/* delta over secs as a rate per hour (secs <= 0: -1, no rate). */
double rate_per_hour(uint64_t delta, double secs);
/* "+4000 in 5 min (48,000/h)"; "+4000 since the last run (its time unknown)" when secs < 0. */
void rate_format(struct strbuf *out, uint64_t delta, double secs);
/*
 * Whether a rise alarms: at least min_rise, and per_hour within an hour or that rate over a
 * longer span (a rise of 1 in 30 s is not 120/h of anything; secs < 0: per_hour as a count).
 */
bool rate_alarms(uint64_t delta, double secs, double per_hour, uint64_t min_rise);

#endif
