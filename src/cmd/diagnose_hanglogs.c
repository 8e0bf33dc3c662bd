/*
 * diagnose_hanglogs.c: the files of a hung run for 'vigil diagnose hang' from logs alone
 * (see diagnose_hanglogs.h). The walker is the one 'vigil diagnose logs' uses (logwalk.c), so
 * both read the same files and refuse the same things; each file is streamed through
 * src/diagnose/hanglogs.c in chunks, so its size costs no memory.
 */
#include "diagnose_hanglogs.h"
#include "logwalk.h"
#include "../diagnose/logs.h"
#include "../lib/util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)

struct hang_walk {
	struct hlog *h;
	char *buf;
	size_t files;
};

static void walk_file(void *ctx, int fd, const char *display)
{
	struct hang_walk *hw = ctx;
	char host[DLOG_HOST_MAX];
	long rank;
	struct strbuf why = STRBUF_INIT;
	_Static_assert(DLOG_HOST_MAX <= HLOG_HOST_MAX, "a name's host fits");
	dlog_name_origin(display, host, &rank);
	hlog_file_begin(hw->h, display, host, rank);
	for (;;) {
		ssize_t n = read(fd, hw->buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			strbuf_addf(&why, "cannot read '%s': %s", display, strerror(errno));
			break;
		}
		if (!n)
			break;
		hlog_feed(hw->h, hw->buf, (size_t)n);
	}
	hlog_file_end(hw->h, why.len ? why.buf : NULL);
	if (!why.len)
		hw->files++;
	strbuf_release(&why);
}

static void walk_error(void *ctx, const char *display, const char *why)
{
	hlog_file_error(((struct hang_walk *)ctx)->h, display, why);
}

int hang_logs_from_paths(char **paths, int n, bool all, struct hlog *out, struct strbuf *err)
{
	struct hang_walk hw = { out, NULL, 0 };
	/* a run directory's last attempt (the hang is there), every attempt with all: ranks of
	 * different attempts are not told apart by name, so all mixes their silences */
	struct logwalk lw = { &hw, walk_file, walk_error, all, true };
	hlog_init(out);
	hw.buf = xmalloc(READ_CHUNK);
	for (int i = 0; i < n; i++)
		logwalk_arg(&lw, paths[i]);
	free(hw.buf);
	hlog_finish(out);
	if (!hw.files && n > 0) {
		const char *first = NULL;
		for (size_t i = 0; i < out->nr_files && !first; i++)
			first = out->files[i].error;
		return error_set(err, "%s", first ? first : "cannot read any log file");
	}
	return 0;
}
