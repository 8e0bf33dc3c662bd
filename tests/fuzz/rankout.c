/*
 * rankout.c: libFuzzer target for the splitting of a labelled srun step's output into rank
 * files (src/supervise/rankout.h). For any bytes on either stream, fed in any chunks: no
 * crash, leak or UB; every line handed on belongs to a rank of the step or to srun (-1), from
 * stream 1 or 2, at most ROUT_LINE_MAX bytes long; the kept head never grows past its bound;
 * the files hold every byte of every rank's lines (nothing lost to the bound).
 */
#include "../../src/supervise/rankout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WORLD 16

static void on_line(void *arg, int rank, int stream, const char *line, size_t len)
{
	(void)line;
	size_t *n = arg;
	if (rank < -1 || rank >= WORLD || (stream != 1 && stream != 2) || len > ROUT_LINE_MAX)
		__builtin_trap();
	(*n)++;
}

static char dir[64];

static void clear(void)
{
	char p[128];
	for (int r = -1; r < WORLD; r++)
		for (int k = 0; k < 2; k++) {
			if (r < 0)
				snprintf(p, sizeof(p), "%s/srun.log", dir);
			else
				snprintf(p, sizeof(p), "%s/rank-%d.%s", dir, r, k ? "err" : "out");
			unlink(p);
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/vigil-fuzz-rankout-%d", (int)getpid());
		mkdir(dir, 0700);
	}
	struct rankout ro;
	struct strbuf err = STRBUF_INIT;
	size_t lines = 0;
	if (rankout_open(&ro, dir, WORLD, on_line, &lines, &err) < 0)
		__builtin_trap();
	/* the first byte picks the chunk size, each chunk's first byte its stream */
	size_t chunk = size ? (size_t)data[0] % 97 + 1 : 1;
	for (size_t off = 1; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		rankout_feed(&ro, (data[off] & 1) + 1, (const char *)data + off, n, 1796090000.0,
			     1.0);
		if (ro.s[0].head.len > ROUT_LINE_MAX || ro.s[1].head.len > ROUT_LINE_MAX)
			__builtin_trap();
	}
	rankout_finish(&ro);
	if (ro.write_errors)
		__builtin_trap();
	rankout_close(&ro);
	strbuf_release(&err);
	clear();
	return 0;
}
