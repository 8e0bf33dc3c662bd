/*
 * logwalk.h: the walker of a dead run's log files, shared by 'vigil diagnose logs'
 * (src/cmd/diagnose_logs.c) and 'vigil diagnose hang' (src/cmd/diagnose_hanglogs.c), so that
 * both read the same files of the same directories and refuse the same things.
 *
 * logwalk_arg() takes one command-line argument:
 *   - a directory holding rank-N.out, rank-N.err or srun.log (vigil run's attempt): those
 *     files, by rank (.out before .err), srun.log last;
 *   - a directory holding attempt-N directories (vigil run's run directory): the last attempt,
 *     or every one with all;
 *   - with plain_dirs, any other directory: its regular files whose names end in .log, .out,
 *     .err or .txt (per-host logs), in name order; not recursive;
 *   - anything else: the file itself (a link is followed: it is the user's own argument).
 * Inside a directory, links are not followed and only regular files are opened (a FIFO or a
 * device is refused before it is opened, never waited on). One file is open at a time.
 *
 * For each file opened, file(ctx, fd, display) reads it (fd is borrowed: the walker closes it);
 * for each file or directory that could not be read, error(ctx, display, why) with why as
 * "cannot read '%s': ..." (the run goes on).
 */
#ifndef VIGIL_CMD_LOGWALK_H
#define VIGIL_CMD_LOGWALK_H

#include <stdbool.h>

struct logwalk {
	void *ctx;
	void (*file)(void *ctx, int fd, const char *display);
	void (*error)(void *ctx, const char *display, const char *why);
	bool all;        /* every attempt-N of a run directory, not only the last */
	bool plain_dirs; /* a directory of per-host log files is read too (else refused) */
};

void logwalk_arg(const struct logwalk *lw, const char *path);

#endif
