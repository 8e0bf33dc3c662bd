/*
 * diagnose_logs.c: 'vigil diagnose logs FILE|DIR...', the logs of a dead or sick run read for
 * known error lines and their first cause (src/diagnose/logs.h does the judging). This file
 * finds and opens the files (vigil run's attempt and run directories included), streams them
 * through in chunks, and prints. One file is open at a time, so thousands of rank files need
 * no more descriptors than one; a FIFO or device is refused, never waited on.
 */
#include "cmd.h"
#include "diagnose.h"
#include "../diagnose/logs.h"
#include "logwalk.h"
#include "../lib/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)

static const char logs_usage[] =
	"usage: vigil diagnose logs [--json] [--all] FILE|DIR...\n"
	"\n"
	"The logs of a dead or sick run (trainer stderr of every rank, kernel logs, NCCL and\n"
	"Slurm lines) read for known error lines: CUDA and host out of memory, NCCL errors and\n"
	"timeouts, Xid/SXid, illegal memory access, segfaults, FSDP's 'Forward order differs',\n"
	"storage errors and failed checkpoint writes, Slurm time limits, and the exit codes that\n"
	"launchers report (torchrun's ChildFailedError block is read whole: its root cause is\n"
	"the rank and host torchrun names, with exitcode and error_file). They are grouped by\n"
	"cause with the hosts and ranks they came from, and the first error in time is named as\n"
	"the likely root, not the cascade after it (a rank's NCCL timeout after another rank's\n"
	"CUDA OOM is a victim).\n"
	"\n"
	"A DIR is a 'vigil run' attempt (its rank-N.out, rank-N.err and srun.log) or a run\n"
	"directory (its last attempt-N). Files are read as streams of any size.\n"
	"\n"
	"  --all    every attempt of a run directory, not only the last\n"
	"  --json   one JSON object: root, findings, files, unknown_times\n"
	"\n"
	"Exit status: 0 no known error line, 1 errors found, 2 usage error, 3 a file could not\n"
	"be read or is not text (NULs, binary), and nothing was found in the others.\n";

struct logs_run {
	struct dlog d;
	char *buf;
	bool all;
};

static void read_open_fd(struct logs_run *lr, int fd, const char *display)
{
	char host[DLOG_HOST_MAX];
	long rank;
	struct strbuf why = STRBUF_INIT;
	dlog_name_origin(display, host, &rank);
	dlog_file_begin(&lr->d, display, host, rank);
	for (;;) {
		ssize_t n = read(fd, lr->buf, READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			strbuf_addf(&why, "cannot read '%s': %s", display, strerror(errno));
			break;
		}
		if (!n)
			break;
		dlog_feed(&lr->d, lr->buf, (size_t)n);
	}
	dlog_file_end(&lr->d, why.len ? why.buf : NULL);
	strbuf_release(&why);
}

static void walk_file(void *ctx, int fd, const char *display)
{
	read_open_fd(ctx, fd, display);
}

static void walk_error(void *ctx, const char *display, const char *why)
{
	dlog_file_error(&((struct logs_run *)ctx)->d, display, why);
}

/* The walker (logwalk.c, shared with 'diagnose hang') finds and opens the files. */
static void read_arg(struct logs_run *lr, const char *path)
{
	struct logwalk lw = { lr, walk_file, walk_error, lr->all, false };
	logwalk_arg(&lw, path);
}

int diag_logs_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct logs_run lr = { .all = false };
	struct strbuf out = STRBUF_INIT;
	bool json = false;
	int c, ret = EXIT_USAGE;

	dlog_init(&lr.d);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'a': lr.all = true; break;
		case 'h':
			fputs(logs_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		default:
			usage_error("diagnose logs", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (optind >= argc) {
		usage_error("diagnose logs", "which logs? name at least one FILE or DIR");
		goto out;
	}
	lr.buf = xmalloc(READ_CHUNK);
	for (int i = optind; i < argc; i++)
		read_arg(&lr, argv[i]);
	dlog_finish(&lr.d);
	if (json)
		dlog_write_json(&lr.d, &out);
	else
		dlog_write_text(&lr.d, &out);
	fwrite(out.buf, 1, out.len, stdout);
	if (lr.d.nr)
		ret = EXIT_UNHEALTHY;
	else if (dlog_unreadable(&lr.d))
		ret = EXIT_UNKNOWN;
	else
		ret = EXIT_HEALTHY;
out:
	free(lr.buf);
	dlog_release(&lr.d);
	strbuf_release(&out);
	return ret;
}
