/*
 * stacks.c: 'vigil stacks', the stacks of one attempt's ranks on this host. The supervisor runs
 * it on every host of a hung or slow attempt through srun --overlap and reads the JSON; a
 * person can run it by hand on a node of a stuck job. Parse, call src/supervise/stacks.c, print.
 */
#include "cmd.h"
#include "common.h"
#include "../supervise/stacks.h"

#include "../lib/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

static const char stacks_usage[] =
	"usage: vigil stacks --attempt-dir DIR [--job JOB] [--step STEP] [--uid UID]\n"
	"                    [--host NAME] [--samples N] [--interval-ms MS] [--no-signal] [--json]\n"
	"\n"
	"The stacks of the ranks of one 'vigil run' attempt on this host, for a hang or a\n"
	"slowdown: the processes of Slurm job JOB, step STEP, uid UID (their environment's\n"
	"SLURM_JOB_ID and SLURM_STEP_ID, their cgroup where Slurm keeps steps in cgroups)\n"
	"whose environment has VIGIL_ATTEMPT_DIR=DIR and a RANK; any other process that names\n"
	"DIR is ignored and named. Two processes of one rank: doubt, its evidence unknown.\n"
	"For each rank: the main thread's state in N samples (R running, S sleeping, D\n"
	"uninterruptible, T stopped, Z zombie), the CPU time used meanwhile, where it waits\n"
	"in the kernel (wchan), the Python stack (SIGURG to the rank; vigil run's Python hook\n"
	"writes every thread's stack to DIR/pystack/rank-N.txt) and the native stack (eu-stack,\n"
	"from Debian's elfutils, where installed). A rank without the hook is not signalled.\n"
	"\n"
	"  --attempt-dir DIR  the attempt (vigil run's RUN_DIR/attempt-N)\n"
	"  --job JOB          the Slurm job (default: SLURM_JOB_ID, else DIR/step-id)\n"
	"  --step STEP        the attempt's step (default: DIR/step-id; unknown: every rank\n"
	"                     is doubt)\n"
	"  --uid UID          the job's uid (default: this uid when not root, else\n"
	"                     SLURM_JOB_UID in the job's step, else the owner of DIR)\n"
	"  --host NAME        the host name written in the output (default: this host's)\n"
	"  --samples N        state samples, 1 to 1000 (default 20)\n"
	"  --interval-ms MS   between samples, 0 to 10000 (default 50)\n"
	"  --no-signal        no SIGURG, so no Python stack\n"
	"  --json             one JSON object (the supervisor reads it)\n"
	"\n"
	"Exit status: 0 it looked (also when no rank of DIR runs here: the output says so),\n"
	"2 usage error (also: no job to tie the ranks to), 3 this host's processes could\n"
	"not be listed.\n";

/* A whole number of digits without a leading zero, at most 19 of them. */
static bool slurm_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 19 || (s[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/*
 * DIR/step-id ("JOB.STEP\n", written by rank 0 of the attempt): a regular file, not followed,
 * owned by uid (when known) or root, 64 bytes at most. 0 and job/step filled, or -1.
 */
static int read_step_id(const char *dir, long uid, char *job, char *step, size_t size)
{
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT;
	struct stat st;
	int rc = -1, fd;
	strbuf_addf(&p, "%s/step-id", dir);
	fd = open(p.buf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	strbuf_release(&p);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_uid == 0 || uid < 0 || (long)st.st_uid == uid) &&
	    read_fd_bounded(fd, "step-id", &sb, 64, NULL) == READ_OK && sb.len &&
	    sb.buf[sb.len - 1] == '\n') {
		strbuf_rtrim(&sb);
		char *dot = strchr(sb.buf, '.');
		if (dot) {
			*dot = '\0';
			if (slurm_id_ok(sb.buf) && slurm_id_ok(dot + 1) && strlen(sb.buf) < size &&
			    strlen(dot + 1) < size) {
				strlcpy_v(job, sb.buf, size);
				strlcpy_v(step, dot + 1, size);
				rc = 0;
			}
		}
	}
	close(fd);
	strbuf_release(&sb);
	return rc;
}

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
		{ "job", required_argument, NULL, 'J' },
		{ "step", required_argument, NULL, 'S' },
		{ "uid", required_argument, NULL, 'U' },
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
	char host[256] = "", fjob[24] = "", fstep[24] = "";
	long uid = -1;
	bool json = false;
	int c, ret = EXIT_USAGE;

	stacks_result_init(&r);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'a': o.attempt_dir = optarg; break;
		case 'H': o.host = optarg; break;
		case 'J':
		case 'S':
			if (!slurm_id_ok(optarg)) {
				struct strbuf got = STRBUF_INIT;
				strbuf_add_excerpt(&got, optarg, 64);
				usage_error("stacks", "%s wants a Slurm %s id (digits), not '%s'",
					    c == 'J' ? "--job" : "--step", c == 'J' ? "job" : "step",
					    got.buf);
				strbuf_release(&got);
				goto out;
			}
			if (c == 'J')
				o.job = optarg;
			else
				o.step = optarg;
			break;
		case 'U': {
			unsigned v;
			if (opt_uint("--uid", optarg, 4294967294u, &v) < 0)
				goto out;
			uid = (long)v;
			break;
		}
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
	/*
	 * Whose ranks: the supervisor says (--job, --step, --uid); by hand, the job's own step
	 * (srun --overlap) says the job and uid, and the attempt's step-id file the step.
	 */
	const char *env_job = getenv("SLURM_JOB_ID");
	if (env_job && !slurm_id_ok(env_job))
		env_job = NULL;
	if (uid < 0) {
		const char *eu = getenv("SLURM_JOB_UID");
		uint64_t v;
		struct stat st;
		if (getuid() != 0)
			uid = (long)getuid(); /* a step's tasks run as the job's user */
		else if (env_job && (!o.job || !strcmp(o.job, env_job)) && eu &&
			 parse_u64(eu, &v) && v < 4294967295u)
			uid = (long)v;
		else if (lstat(o.attempt_dir, &st) == 0 && S_ISDIR(st.st_mode))
			uid = (long)st.st_uid; /* vigil run made it, as the job's user */
	}
	if (!o.job)
		o.job = env_job;
	if ((!o.job || !o.step) && read_step_id(o.attempt_dir, uid, fjob, fstep, 24) == 0 &&
	    (!o.job || !strcmp(o.job, fjob))) {
		if (!o.job)
			o.job = fjob;
		if (!o.step)
			o.step = fstep;
	}
	if (!o.job) {
		usage_error("stacks", "which job? --job JOB is needed (no SLURM_JOB_ID, no "
			    "step-id file in the attempt directory)");
		goto out;
	}
	if (uid < 0) {
		usage_error("stacks", "whose ranks? --uid UID is needed");
		goto out;
	}
	/* The attempt directory is the input (its pystack/ and step-id files): one that is
	 * missing or is no directory is the contract's "could not tell" (3), said by name, never
	 * an empty "no rank here" report. After the usage errors (2), which come first. */
	struct stat ast;
	int arc = stat(o.attempt_dir, &ast), aerr = errno;
	if (arc < 0 || !S_ISDIR(ast.st_mode)) {
		struct strbuf shown = STRBUF_INIT;
		strbuf_add_clean(&shown, o.attempt_dir);
		fprintf(stderr, "vigil stacks: cannot read attempt directory '%s': %s\n", shown.buf,
			arc < 0 ? strerror(aerr) : "it is not a directory");
		strbuf_release(&shown);
		ret = EXIT_UNKNOWN;
		goto out;
	}
	o.uid = (uid_t)uid;
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
