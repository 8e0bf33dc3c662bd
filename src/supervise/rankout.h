/*
 * rankout.h: a labelled srun step's output (srun --label: "RANK: line" on srun's stdout and
 * stderr) split back into one file per rank and stream, each line time-stamped, while the
 * supervisor watches it live (docs/SUPERVISOR.md).
 *
 * Files: ATTEMPT_DIR/rank-N.out and rank-N.err, and srun.log for srun's own lines (those
 * without a label: "srun: error: n3: task 5: Killed"). Each line is written as
 * "2026-12-01T02:43:13.123Z <the line>". Files are created in the attempt directory's fd with
 * O_NOFOLLOW (never through a planted link) and appended to; bytes are written as the trainer
 * wrote them (a file is not a terminal), NULs included.
 *
 * Bounds: one unfinished line per stream is kept, at most ROUT_LINE_MAX bytes; past that, the
 * head is written and the rest of the line is passed straight to the file, so a megabyte line
 * costs a fixed amount of memory and loses nothing. The callback sees each line's head only.
 * At most ROUT_OPEN_MAX rank files are open at once (more ranks: files are closed and reopened
 * for appending as needed).
 *
 * Ownership: struct rankout owns its fds, buffers and per-rank table (rankout_close).
 */
#ifndef VIGIL_RANKOUT_H
#define VIGIL_RANKOUT_H

#include "../lib/strbuf.h"

#define ROUT_LINE_MAX 16384
#define ROUT_OPEN_MAX 256

struct rankout_rank {
	int fd[2];          /* rank-N.out, rank-N.err; -1 until written */
	double last_output; /* wall clock of its last line; 0 none */
	double last_mono;   /* the same on the monotonic clock (seconds) */
	uint64_t lines;
};

struct rankout_stream {
	struct strbuf head; /* the line so far (at most ROUT_LINE_MAX) */
	bool in_line, passthrough;
	int rank;           /* the label of the line in progress; -1 srun's own */
};

/* A finished line: rank (-1: srun's own line), stream 1 or 2, its text without the label. */
typedef void (*rankout_fn)(void *arg, int rank, int stream, const char *line, size_t len);

struct rankout {
	int dirfd, srun_fd;
	unsigned world;
	struct rankout_rank *ranks;
	struct rankout_stream s[2];
	unsigned nr_open;
	rankout_fn fn;
	void *arg;
	uint64_t bytes, lines, write_errors, unlabelled;
	double now_wall, now_mono; /* the time stamp of what is fed now */
	/* A private, temporary attempt directory (vigil sim's; false in a real run: each line
	 * is written as it comes, for `tail -f`): what goes to one file is gathered in pending
	 * and written 64 KiB at a time, when another file is written, and before any close. */
	bool lazy;
	int pending_fd;
	struct strbuf pending;
};

/* Open for an attempt directory (an existing directory, not a link) and world ranks. 0 or -1. */
int rankout_open(struct rankout *ro, const char *attempt_dir, unsigned world, rankout_fn fn,
		 void *arg, struct strbuf *err);
/* Bytes from srun's stdout (stream 1) or stderr (2), read at wall / mono seconds. */
void rankout_feed(struct rankout *ro, int stream, const char *data, size_t len, double wall,
		  double mono);
/* The step ended: finish unfinished lines. */
void rankout_finish(struct rankout *ro);
void rankout_close(struct rankout *ro);
/* "2026-12-01T02:43:13.123Z" for wall seconds (out: at least 32 bytes). */
void rankout_timestamp(double wall, char *out, size_t size);
/* The rank of a labelled line ("  3: text" -> 3, *text after ": "), or -1. */
int rankout_label(const char *line, size_t len, size_t *text_off);

#endif
