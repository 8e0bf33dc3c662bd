/*
 * diagnose_hanglogs.h: the files of a hung run read for 'vigil diagnose hang' when no flight
 * recorder dump exists (src/diagnose/hanglogs.h judges them). The lead's command
 * (src/cmd/diagnose_hang.c) calls this and composes the result under its JSON's "logs" key.
 */
#ifndef VIGIL_CMD_DIAGNOSE_HANGLOGS_H
#define VIGIL_CMD_DIAGNOSE_HANGLOGS_H

#include "../diagnose/hanglogs.h"

/*
 * Read every path (a file; a vigil run attempt or run directory, its last attempt-N or every
 * one with all; a
 * directory of per-host logs: *.log, *.out, *.err, *.txt) into *out, which this initialises
 * (hlog_init) and finishes (hlog_finish); the caller calls hlog_release(out) in every case.
 * Host and rank come from the file names as 'vigil diagnose logs' guesses them. Links inside
 * directories are not followed, FIFOs and devices are refused, one file is open at a time.
 * A file that cannot be read is recorded in out (hlog_unreadable(), its error in the output)
 * and the others are read. Returns 0, or -1 with *err when nothing at all could be read.
 */
int hang_logs_from_paths(char **paths, int n, bool all, struct hlog *out, struct strbuf *err);

#endif
