/*
 * stacks.c: 'vigil stacks', the stacks of one attempt's ranks on this host. The supervisor runs
 * it on every host of a hung or slow attempt through srun --overlap and reads the JSON; a
 * person can run it by hand on a node of a stuck job. Parse, call src/supervise/stacks.c, print.
 */
#include "cmd.h"
#include "common.h"
#include "../supervise/stacks.h"

#include <getopt.h>
#include <unistd.h>

static const char stacks_usage[] =
	"usage: vigil stacks --attempt-dir DIR [--host NAME] [--samples N] [--interval-ms MS]\n"
	"                    [--no-signal] [--json]\n"
	"\n"
	"The stacks of the ranks of one 'vigil run' attempt on this host, for a hang or a\n"
	"slowdown: the processes whose environment has VIGIL_ATTEMPT_DIR=DIR and a RANK.\n"
	"For each rank: the main thread's state in N samples (R running, S sleeping, D\n"
	"uninterruptible, T stopped, Z zombie), the CPU time used meanwhile, where it waits\n"
	"in the kernel (wchan), the Python stack (SIGURG to the rank; vigil run's Python hook\n"
	"writes every thread's stack to DIR/pystack/rank-N.txt) and the native stack (eu-stack,\n"
	"from Debian's elfutils, where installed). A rank without the hook is not signalled.\n"
	"\n"
	"  --attempt-dir DIR  the attempt (vigil run's RUN_DIR/attempt-N)\n"
	"  --host NAME        the host name written in the output (default: this host's)\n"
	"  --samples N        state samples, 1 to 1000 (default 20)\n"
	"  --interval-ms MS   between samples, 0 to 10000 (default 50)\n"
	"  --no-signal        no SIGURG, so no Python stack\n"
	"  --json             one JSON object (the supervisor reads it)\n"
	"\n"
	"Exit status: 0 it looked (also when no rank of DIR runs here: the output says so),\n"
	"2 usage error, 3 this host's processes could not be listed.\n";

static int opt_uint(const char *opt, const char *arg, unsigned max, unsigned *out)
{
	uint64_t v;
	if (parse_u64(arg, &v) && v <= max) {
		*out = (unsigned)v;
		return 0;
	}
	struct strbuf got = STRBUF_INIT;
	strbuf_add_excerpt(&got, arg, 64);
	usage_error("stacks", "%s wants a whole number from %s to %u, not '%s'", opt,
		    !strcmp(opt, "--samples") ? "1" : "0", max, got.buf);
	strbuf_release(&got);
	return -1;
}

int cmd_stacks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "attempt-dir", required_argument, NULL, 'a' },
		{ "host", required_argument, NULL, 'H' },
		{ "samples", required_argument, NULL, 's' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "no-signal", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct stacks_options o = { .samples = 20, .interval_ms = 50 };
	struct stacks_result r;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	char host[256] = "";
	bool json = false;
	int c, ret = EXIT_USAGE;

	stacks_result_init(&r);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'a': o.attempt_dir = optarg; break;
		case 'H': o.host = optarg; break;
		case 's':
			if (opt_uint("--samples", optarg, 1000, &o.samples) < 0)
				goto out;
			if (!o.samples) {
				usage_error("stacks", "--samples wants a whole number from 1 to 1000, "
					    "not '0'");
				goto out;
			}
			break;
		case 'i':
			if (opt_uint("--interval-ms", optarg, 10000, &o.interval_ms) < 0)
				goto out;
			break;
		case 'n': o.no_signal = true; break;
		case 'j': json = true; break;
		case 'h':
			fputs(stacks_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		case ':':
			usage_error("stacks", "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			usage_error("stacks", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (optind < argc) {
		usage_error("stacks", "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (!o.attempt_dir || !*o.attempt_dir) {
		usage_error("stacks", "which attempt? --attempt-dir DIR is needed");
		goto out;
	}
	if (o.host) {
		const char *why = host_name_invalid(o.host);
		if (why) {
			usage_error("stacks", "--host: not a host name (%s)", why);
			goto out;
		}
	} else {
		if (gethostname(host, sizeof(host) - 1) < 0 || host_name_invalid(host))
			strlcpy_v(host, "unknown", sizeof(host));
		o.host = host;
	}
	if (stacks_collect(&r, &o, &err) < 0) {
		fprintf(stderr, "vigil stacks: %s\n", err.buf);
		ret = EXIT_UNKNOWN;
		goto out;
	}
	if (json)
		stacks_write_json(&r, &out);
	else
		stacks_write_text(&r, &out);
	fwrite(out.buf, 1, out.len, stdout);
	ret = EXIT_HEALTHY;
out:
	stacks_result_release(&r);
	strbuf_release(&out);
	strbuf_release(&err);
	return ret;
}
