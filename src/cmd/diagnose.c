/*
 * diagnose.c: 'vigil diagnose', why a training run is slow or dead, from the files it already
 * writes (docs/DIAGNOSE.md): 'steps' reads per-step throughput for the patterns of docs/DIAGNOSE.md,
 * 'stragglers' reads per-rank compute times for the slow host. The reading and judging are
 * src/diagnose/ (pure); this file parses options, prints and picks the exit code.
 */
#include "cmd.h"
#include "diagnose.h"
#include "../diagnose/html.h"
#include "../lib/fileio.h"

#include <getopt.h>
#include <math.h>

static const char diagnose_usage[] =
	"usage: vigil diagnose <steps|stragglers|logs|hang> FILE... [options]\n"
	"\n"
	"Why is a training run slow or dead? Read the files a run already writes and name the\n"
	"pattern, the likely cause and what to do next.\n"
	"\n"
	"  vigil diagnose steps FILE       per-step throughput: flat, drops, decline, step down, noise\n"
	"  vigil diagnose stragglers FILE  per-rank compute times: the hosts slower than their peers\n"
	"  vigil diagnose logs FILE|DIR... known error lines of a dead run, the first one as the root\n"
	"  vigil diagnose hang DIR...      the rank that stopped a hung collective (NCCL recorder, logs)\n"
	"\n"
	"'vigil diagnose SUBCOMMAND --help' tells more. docs/DIAGNOSE.md has the methods.\n"
	"\n"
	"Exit status:\n"
	"  0  healthy: no pattern, no straggler, no known error\n"
	"  1  a pattern, a straggler or a known error found\n"
	"  2  usage error\n"
	"  3  could not tell (too few rows, unreadable file, no usable column)\n";

static const char steps_usage[] =
	"usage: vigil diagnose steps FILE [--expected-mfu X | --expected-step-time S]\n"
	"                            [--flops-per-token F --peak-flops P] [--step-pattern REGEX]\n"
	"                            [--json] [--html FILE]\n"
	"\n"
	"Read one row per training step (JSON lines, or CSV with a header; columns by name:\n"
	"'step', and any of 'time' (Unix seconds at the step's end), 'step_time' (seconds), 'mfu'\n"
	"(0 to 1), 'tokens') and name the throughput patterns: healthy, flat-tenth, flat-third,\n"
	"flat-degraded, periodic-drops, random-drops, slow-decline, step-down, noisy; each with the\n"
	"step it started at, its evidence, the likely cause, the next action and the share of the\n"
	"throughput it cost, the most costly first. vigil run's journal (RUN_DIR/journal.jsonl) and\n"
	"an attempt's steps.jsonl are read as they are. A step counter going back (a resumed run)\n"
	"keeps the last run of each step; garbage rows are counted and skipped.\n"
	"\n"
	"A trainer's raw output (a first line that is neither a JSON object nor a CSV header:\n"
	"Megatron, NeMo, Lightning, HF Trainer, DeepSpeed, torchtitan, nanoGPT, litgpt, composer,\n"
	"fairseq, OLMo, ...) is read with the step rules of 'vigil run': each step line a row, with\n"
	"the step time and MFU the trainer printed and the line's time stamp; of several ranks'\n"
	"interleaved lines, the first reporter's (the same steps).\n"
	"\n"
	"  --expected-mfu X         the MFU the run should reach (0 to 1)\n"
	"  --expected-step-time S   the step time the run should reach, seconds\n"
	"                           (without either: the run's own best sustained level, and a\n"
	"                           run flat below its target cannot be told from a healthy one)\n"
	"  --flops-per-token F      model FLOPs per token; with --peak-flops, MFU from 'tokens'\n"
	"  --peak-flops P           the peak FLOP/s of all the GPUs of the run together\n"
	"  --step-pattern REGEX     read FILE as a trainer's output whose step is the first\n"
	"                           group of this POSIX extended regular expression\n"
	"  --json                   one JSON object instead of the text\n"
	"  --html FILE              also write a self-contained page with the curve to FILE\n"
	"\n"
	"Exit status:\n"
	"  0  healthy\n"
	"  1  a pattern found\n"
	"  2  usage error\n"
	"  3  could not tell (too few rows, unreadable file, no throughput column)\n";

static const char stragglers_usage[] =
	"usage: vigil diagnose stragglers FILE [--step-pattern REGEX] [--json] [--html FILE]\n"
	"\n"
	"Read per-rank rows (JSON lines or CSV with a header: 'step', 'rank', 'host', and\n"
	"'compute_time', the rank's time outside collectives, or a per-rank 'step_time') and name\n"
	"the hosts slower than their peers: per step, robust z-scores (median, MAD) of the ranks'\n"
	"times, the median per host, and a host is slow when the median of that over a window of\n"
	"steps stays above 3 and it is at least 3% slower. Says how much slower and since which\n"
	"step, and when a host recovered; says so when no host stands out. A trainer's raw output\n"
	"with rank prefixes ([rank3]:, srun --label's '3: ') is read as every rank's rows, each\n"
	"rank's step time as printed or from its own time stamps.\n"
	"\n"
	"  --step-pattern REGEX  read FILE as a trainer's output whose step is the first group\n"
	"  --json        one JSON object instead of the text\n"
	"  --html FILE   also write a self-contained page to FILE\n"
	"\n"
	"Exit status:\n"
	"  0  no straggler\n"
	"  1  a straggler found\n"
	"  2  usage error\n"
	"  3  could not tell (too few steps or ranks, unreadable file, no usable column)\n";

enum { OPT_JSON = 256, OPT_HTML, OPT_MFU, OPT_STEP_TIME, OPT_FLOPS, OPT_PEAK, OPT_PATTERN };

static const struct option diag_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "html", required_argument, NULL, OPT_HTML },
	{ "expected-mfu", required_argument, NULL, OPT_MFU },
	{ "expected-step-time", required_argument, NULL, OPT_STEP_TIME },
	{ "flops-per-token", required_argument, NULL, OPT_FLOPS },
	{ "peak-flops", required_argument, NULL, OPT_PEAK },
	{ "step-pattern", required_argument, NULL, OPT_PATTERN },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int opt_number(const char *cmd, const char *opt, const char *arg, double lo, double hi,
		      const char *want, double *out)
{
	double d;
	if (parse_double(arg, &d) && isfinite(d) && d > lo && d <= hi) {
		*out = d;
		return 0;
	}
	struct strbuf q = STRBUF_INIT;
	strbuf_add_excerpt(&q, arg, 64);
	usage_error(cmd, "%s wants %s, not '%s'", opt, want, q.buf);
	strbuf_release(&q);
	return -1;
}

static void say(const char *cmd, const char *what, const char *detail)
{
	struct strbuf q = STRBUF_INIT;
	strbuf_add_clean(&q, detail);
	fprintf(stderr, "vigil %s: %s%s\n", cmd, what, q.buf);
	strbuf_release(&q);
}

/* A raw log: whose lines were read, and what was merged or left (a line of the text). */
static void log_note(const struct diag_rows *r, struct strbuf *out)
{
	strbuf_addf(out, "Read as a trainer's output: %zu step lines", r->log_step_lines);
	if (!r->per_rank && r->log_has_rank)
		strbuf_addf(out, ", rank %u's read", r->log_rank);
	if (r->per_rank && r->log_ranks)
		strbuf_addf(out, " of %zu ranks", r->log_ranks);
	if (r->log_other_ranks)
		strbuf_addf(out, "; %zu of other ranks left out (the same steps)",
			    r->log_other_ranks);
	if (r->log_repeats)
		strbuf_addf(out, "; %zu repeating a step merged into its row", r->log_repeats);
	if (r->log_other_bars)
		strbuf_addf(out, "; %zu redraws of other progress bars (eval) left out",
			    r->log_other_bars);
	strbuf_addstr(out, ".\n");
}

static int diag_run(bool steps, int argc, char **argv)
{
	const char *cmd = steps ? "diagnose steps" : "diagnose stragglers";
	const char *html = NULL, *file = NULL, *pattern = NULL;
	bool json = false;
	struct diag_steps_opts o = { 0 };
	int c, ret = EXIT_USAGE;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	struct diag_rows rows;
	struct diag_steps *ds = NULL;
	struct diag_stragglers *dg = NULL;
	diag_rows_init(&rows);

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", diag_opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON: json = true; break;
		case OPT_HTML: html = optarg; break;
		case OPT_PATTERN: pattern = optarg; break;
		case OPT_MFU:
		case OPT_STEP_TIME:
		case OPT_FLOPS:
		case OPT_PEAK:
			if (!steps) {
				usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
				goto out;
			}
			if ((c == OPT_MFU && opt_number(cmd, "--expected-mfu", optarg, 0, 1,
							"a share above 0 and at most 1",
							&o.expected_mfu)) ||
			    (c == OPT_STEP_TIME &&
			     opt_number(cmd, "--expected-step-time", optarg, 0, 86400,
					"seconds above 0 and at most 86400", &o.expected_step_time)) ||
			    (c == OPT_FLOPS && opt_number(cmd, "--flops-per-token", optarg, 0, 1e30,
							  "a number above 0", &o.flops_per_token)) ||
			    (c == OPT_PEAK && opt_number(cmd, "--peak-flops", optarg, 0, 1e30,
							 "a number above 0", &o.peak_flops)))
				goto out;
			break;
		case 'h':
			fputs(steps ? steps_usage : stragglers_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		case ':':
			usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (o.expected_mfu > 0 && o.expected_step_time > 0) {
		usage_error(cmd, "--expected-mfu or --expected-step-time, not both");
		goto out;
	}
	if ((o.flops_per_token > 0) != (o.peak_flops > 0)) {
		usage_error(cmd, "--flops-per-token and --peak-flops go together");
		goto out;
	}
	if (optind >= argc) {
		usage_error(cmd, "which file? give the run's %s", steps ? "per-step rows (or its "
			    "journal.jsonl)" : "per-rank rows");
		goto out;
	}
	if (argc - optind > 1) {
		struct strbuf q = STRBUF_INIT;
		strbuf_add_excerpt(&q, argv[optind + 1], 64);
		usage_error(cmd, "one file at a time, not also '%s'", q.buf);
		strbuf_release(&q);
		goto out;
	}
	if (html && !*html) {
		usage_error(cmd, "--html wants a file name");
		goto out;
	}
	if (pattern && !*pattern) {
		usage_error(cmd, "--step-pattern wants a regular expression");
		goto out;
	}
	if (diag_rows_log(&rows, pattern, !steps, &err) < 0) {
		say(cmd, "", err.buf);
		goto out; /* EXIT_USAGE: the pattern is the user's */
	}
	file = argv[optind];
	ret = EXIT_UNKNOWN;
	if (diag_rows_read(file, &rows, &err) < 0) {
		say(cmd, "", err.buf);
		goto out;
	}
	if (rows.format == DIAG_FMT_LOG && !rows.nr) {
		/* not rows, and no line of it had a step: say what was tried */
		struct strbuf q = STRBUF_INIT;
		strbuf_add_clean(&q, file);
		fprintf(stderr, "vigil %s: cannot tell from '%s': no step found in its %zu lines (read "
			"as a trainer's output: its first line is neither a JSON object nor a CSV "
			"header; %s)\n", cmd, q.buf, rows.lines,
			pattern ? "no line matched --step-pattern" :
				  "no line matched the default step rules of docs/SUPERVISOR.md; "
				  "--step-pattern REGEX names the step");
		strbuf_release(&q);
		goto out;
	}
	if (rows.header_error[0]) {
		say(cmd, "cannot tell: ", rows.header_error);
		goto out;
	}
	if (rows.truncated) {
		/* a change after the rows read would be missed: a cut run is not a healthy one */
		char why[160];
		snprintf(why, sizeof(why), "more than %u rows: only the first %u were read, and what "
			 "happened after them cannot be told", DIAG_ROWS_MAX, DIAG_ROWS_MAX);
		struct strbuf q = STRBUF_INIT;
		strbuf_add_clean(&q, file);
		fprintf(stderr, "vigil %s: cannot tell from '%s': %s\n", cmd, q.buf, why);
		strbuf_release(&q);
		goto out;
	}
	if (!steps && rows.hosts_over) {
		/* a slow host among those not kept would go unseen: not "no straggler" */
		struct strbuf q = STRBUF_INIT;
		strbuf_add_clean(&q, file);
		fprintf(stderr, "vigil %s: cannot tell from '%s': more than %u host names (%zu rows of "
			"the others not read): a slow host among those would go unseen\n", cmd, q.buf,
			DIAG_HOSTS_MAX, rows.hosts_over);
		strbuf_release(&q);
		goto out;
	}
	if (steps) {
		ds = xmalloc(sizeof(*ds));
		if (diag_steps_analyse(&rows, &o, ds, &err) < 0)
			goto cannot;
		if (json)
			diag_steps_json(ds, &rows, file, &out);
		else
			diag_steps_text(ds, &rows, file, &out);
		ret = diag_steps_healthy(ds) ? EXIT_HEALTHY : EXIT_UNHEALTHY;
	} else {
		dg = xmalloc(sizeof(*dg));
		if (diag_stragglers_analyse(&rows, dg, &err) < 0)
			goto cannot;
		if (json)
			diag_stragglers_json(dg, &rows, file, &out);
		else
			diag_stragglers_text(dg, &rows, file, &out);
		ret = dg->nr ? EXIT_UNHEALTHY : EXIT_HEALTHY;
	}
	if (rows.format == DIAG_FMT_LOG && !json)
		log_note(&rows, &out);
	fwrite(out.buf, 1, out.len, stdout);
	if (html) {
		strbuf_reset(&out);
		diag_html(ds, dg, &rows, file, &out);
		if (write_file_atomic(html, out.buf, out.len, 0644, &err) < 0) {
			say(cmd, "", err.buf);
			ret = EXIT_UNKNOWN;
			goto out;
		}
		if (!json) {
			struct strbuf q = STRBUF_INIT;
			strbuf_add_clean(&q, html);
			printf("\nThe page: %s\n", q.buf);
			strbuf_release(&q);
		}
	}
	if (fflush(stdout) != 0)
		ret = EXIT_UNKNOWN;
	goto out;
cannot:
	{
		struct strbuf q = STRBUF_INIT;
		strbuf_add_clean(&q, file);
		fprintf(stderr, "vigil %s: cannot tell from '%s': ", cmd, q.buf);
		strbuf_reset(&q);
		strbuf_add_clean(&q, err.buf);
		fprintf(stderr, "%s", q.buf);
		if (rows.garbage) {
			strbuf_reset(&q);
			strbuf_add_clean(&q, rows.garbage_why);
			fprintf(stderr, " (%zu garbage rows; first: %s)", rows.garbage, q.buf);
		}
		if (rows.format == DIAG_FMT_LOG &&
		    !(rows.columns & (DROW_TIME | DROW_STEP_TIME | DROW_MFU)))
			fprintf(stderr, "; read as a trainer's output: its %zu step lines carry no time "
				"stamp, step time or MFU that the step rules know (docs/SUPERVISOR.md)",
				rows.log_step_lines);
		fputc('\n', stderr);
		strbuf_release(&q);
	}
out:
	free(ds);
	free(dg);
	diag_rows_release(&rows);
	strbuf_release(&err);
	strbuf_release(&out);
	return ret;
}

int cmd_diagnose(int argc, char **argv)
{
	if (argc < 2 || is_help_arg(argv[1])) {
		if (argc < 2) {
			usage_error("diagnose", "what? (steps, stragglers, logs or hang)");
			return EXIT_USAGE;
		}
		fputs(diagnose_usage, stdout);
		return EXIT_HEALTHY;
	}
	if (!strcmp(argv[1], "steps"))
		return diag_run(true, argc - 1, argv + 1);
	if (!strcmp(argv[1], "stragglers"))
		return diag_run(false, argc - 1, argv + 1);
	if (!strcmp(argv[1], "logs"))
		return diag_logs_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "hang"))
		return diag_hang_main(argc - 1, argv + 1);
	usage_error("diagnose", "no subcommand '%s' (there are: steps, stragglers, logs, hang)",
		    argv[1]);
	return EXIT_USAGE;
}
