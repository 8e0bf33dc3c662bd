/*
 * report.c: 'vigil report RUN_DIR', the timeline of a supervised run (docs/SUPERVISOR.md) read
 * from its journal: attempts, faults with their latencies, steps redone, ETTR; as text, JSON or
 * an HTML page. The reading and the writers are src/supervise/runreport.c.
 */
#include "cmd.h"
#include "../lib/fileio.h"
#include "../supervise/runreport.h"

#include <getopt.h>
#include <sys/stat.h>

static const char report_usage[] =
	"usage: vigil report RUN_DIR [--json] [--html FILE]\n"
	"\n"
	"Read the journal of a 'vigil run' (RUN_DIR/journal.jsonl, or a journal file given\n"
	"directly) and tell what happened: the run's outcome, wall time and ETTR (the share of\n"
	"the wall time spent on steps that were kept), each attempt (hosts, steps, outcome, steps\n"
	"redone), each fault (class, host blamed, when it happened, when it was detected, when\n"
	"training ran again, the evidence) and the hosts excluded, with their reasons. Damaged\n"
	"lines in the journal are skipped and counted.\n"
	"\n"
	"  --json        one JSON object instead of the text\n"
	"  --html FILE   also write one self-contained HTML page with a timeline plot to FILE\n"
	"                (replaced atomically; never written through a link)\n"
	"\n"
	"Exit status:\n"
	"  0  the report was written\n"
	"  2  usage error\n"
	"  3  could not tell: RUN_DIR is missing or has no readable journal, or FILE could not\n"
	"     be written\n";

enum { OPT_JSON = 256, OPT_HTML };

static const struct option report_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "html", required_argument, NULL, OPT_HTML },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_report(int argc, char **argv)
{
	const char *html = NULL, *dir = NULL;
	bool json = false;
	int c, ret = EXIT_USAGE;
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT, out = STRBUF_INIT, q = STRBUF_INIT;
	struct run_report r;
	struct stat st;
	memset(&r, 0, sizeof(r));

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", report_opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON: json = true; break;
		case OPT_HTML: html = optarg; break;
		case 'h':
			fputs(report_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		case ':':
			usage_error("report", "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			usage_error("report", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (optind >= argc) {
		usage_error("report", "which run? give its run directory (vigil run --run-dir)");
		goto out;
	}
	if (argc - optind > 1) {
		strbuf_add_excerpt(&q, argv[optind + 1], 64);
		usage_error("report", "one run directory at a time, not also '%s'", q.buf);
		goto out;
	}
	if (html && !*html) {
		usage_error("report", "--html wants a file name");
		goto out;
	}
	dir = argv[optind];
	/* the one exit contract (vigil(1)): input that is missing or unreadable is "could not
	 * tell", never a verdict on the run; report has no exit 1 */
	ret = EXIT_UNKNOWN;
	/* a journal file given directly; anything else is a run directory (lstat: a link named
	 * as the journal itself is then refused as "not a directory", never followed to a file) */
	if (lstat(dir, &st) == 0 && S_ISREG(st.st_mode))
		strbuf_addstr(&path, dir);
	else
		strbuf_addf(&path, "%s/journal.jsonl", dir);
	if (runreport_read(path.buf, 0, &r, &err) < 0) {
		strbuf_add_clean(&q, dir);
		fprintf(stderr, "vigil report: no readable journal in '%s': ", q.buf);
		strbuf_reset(&q);
		strbuf_add_clean(&q, err.buf);
		fprintf(stderr, "%s\n", q.buf);
		goto out;
	}
	if (!r.records) {
		strbuf_add_clean(&q, path.buf);
		fprintf(stderr, "vigil report: '%s' holds no journal record", q.buf);
		if (r.bad_lines || r.torn_tail)
			fprintf(stderr, " (%zu damaged line%s%s)", r.bad_lines,
				r.bad_lines == 1 ? "" : "s", r.torn_tail ? " and a torn last line" : "");
		fputc('\n', stderr);
		goto out;
	}
	if (html) {
		runreport_html(&r, dir, &out);
		if (write_file_atomic(html, out.buf, out.len, 0644, &err) < 0) {
			strbuf_add_clean(&q, err.buf);
			fprintf(stderr, "vigil report: %s\n", q.buf);
			goto out;
		}
		strbuf_reset(&out);
	}
	if (json)
		runreport_json(&r, dir, &out);
	else
		runreport_text(&r, dir, &out);
	fwrite(out.buf, 1, out.len, stdout);
	if (html && !json) {
		strbuf_reset(&q);
		strbuf_add_clean(&q, html);
		printf("\nThe page: %s\n", q.buf);
	}
	ret = fflush(stdout) == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
out:
	run_report_release(&r);
	strbuf_release(&path);
	strbuf_release(&err);
	strbuf_release(&out);
	strbuf_release(&q);
	return ret;
}
