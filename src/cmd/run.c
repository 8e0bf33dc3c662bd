/*
 * run.c: 'vigil run', the supervisor of a training run inside a Slurm allocation: options,
 * configuration ([run] in vigil.conf) and the allocation; the loop is src/supervise/.
 */
#include "cmd.h"
#include "common.h"
#include "config_keys.h"
#include "../lib/strlist.h"
#include "../logs/gresconf.h"
#include "../logs/steps.h"
#include "../supervise/supervisor.h"

#include <getopt.h>
#include <unistd.h>

static const char run_usage[] =
	"usage: vigil run [--nodes N] [--spares S] [--hosts LIST] [--tasks-per-node G]\n"
	"                 [--run-dir DIR] [--max-restarts R] [--step-pattern REGEX]\n"
	"                 [--hang-after K] [--hang-floor SEC] [--startup-timeout SEC]\n"
	"                 [--slow-factor F] [--check-interval SEC] [--smoke CMD] [--json]\n"
	"                 [options] -- CMD [ARGS...]\n"
	"\n"
	"Keep a training run alive inside a Slurm allocation (sbatch or salloc; allocate with\n"
	"--no-kill, so that a lost node does not end the whole job). vigil checks every node,\n"
	"launches CMD as one srun step on N healthy nodes (G ranks each, with the environment of\n"
	"torch.distributed's env:// init), follows its progress from rank 0's output or\n"
	"$VIGIL_STEP_FILE, and on a crash, a hang, a slowdown, a lost or a sick node: takes the\n"
	"ranks' stacks, stops the step, checks the nodes, drains the guilty one, replaces it from\n"
	"the spares and relaunches. The trainer resumes from its latest checkpoint when\n"
	"VIGIL_ATTEMPT > 0. Everything is kept in the run directory's journal; run the same\n"
	"command again (after a kill or a requeue) and it resumes. See 'vigil report RUN_DIR'.\n"
	"\n"
	"  --nodes N             hosts the run uses (default: the allocation minus the spares)\n"
	"  --spares S            hosts kept aside to replace sick ones (default 0)\n"
	"  --hosts LIST          use only these hosts of the allocation (a Slurm hostlist:\n"
	"                        n[1-4],gpu7); the others are left alone\n"
	"  --tasks-per-node G    ranks on each host (default 1)\n"
	"  --run-dir DIR         the run's directory (default ./vigil-run-$SLURM_JOB_ID)\n"
	"  --max-restarts R      relaunches allowed (default 10)\n"
	"  --step-pattern REGEX  POSIX extended regex, its first group the step (default: 'step\n"
	"                        120', 'iter 120/5000', '\"step\": 120' and the like)\n"
	"  --hang-after K        hang: no new step for K median step times (default 3) ...\n"
	"  --hang-floor SEC      ... and at least SEC seconds (default 60)\n"
	"  --startup-timeout SEC from the launch to the first step (default 300)\n"
	"  --slow-factor F       a step over F x the running median is slow (default 2)\n"
	"  --check-interval SEC  vigil check of the run's nodes while it runs (default 30; 0 off)\n"
	"  --smoke CMD           the group-testing command, words split on spaces (default: CMD\n"
	"                        with VIGIL_SMOKE=1: a trainer should then run a few steps only)\n"
	"  --nccl-recorder       load vigil's NCCL flight recorder into the ranks: on a hang,\n"
	"                        vigil diagnose hang names the rank that stopped the collective\n"
	"  --json                the final outcome as one JSON object on stdout\n"
	"  --config FILE         configuration file      -c, --set SEC.KEY=VALUE  one setting\n"
	"\n"
	"More settings in [run] (vigil help config run): check-timeout, node-poll, grace,\n"
	"restart-delay, master-port, python-stacks, drain, stacks-timeout, smoke-timeout,\n"
	"slow-steps, check-arg, nccl-recorder; fleet.command (the vigil the nodes run), fleet.srun-arg.\n"
	"\n"
	"Exit status:\n"
	"  0  the trainer finished (every task ended with status 0)\n"
	"  1  the run failed: too few healthy hosts, the restart budget spent, or cancelled\n"
	"  2  usage error, or the run could not start (outside an allocation, run dir unusable)\n";

enum { OPT_NODES = 256, OPT_SPARES, OPT_TPN, OPT_RUN_DIR, OPT_MAX_RESTARTS, OPT_STEP_PATTERN,
       OPT_HANG_AFTER, OPT_HANG_FLOOR, OPT_STARTUP, OPT_SLOW, OPT_CHECK_INTERVAL, OPT_SMOKE,
       OPT_JSON, OPT_CONFIG, OPT_NCCL_RECORDER, OPT_HOSTS };

static const struct option run_opts[] = {
	{ "nodes", required_argument, NULL, OPT_NODES },
	{ "spares", required_argument, NULL, OPT_SPARES },
	{ "hosts", required_argument, NULL, OPT_HOSTS },
	{ "tasks-per-node", required_argument, NULL, OPT_TPN },
	{ "run-dir", required_argument, NULL, OPT_RUN_DIR },
	{ "max-restarts", required_argument, NULL, OPT_MAX_RESTARTS },
	{ "step-pattern", required_argument, NULL, OPT_STEP_PATTERN },
	{ "hang-after", required_argument, NULL, OPT_HANG_AFTER },
	{ "hang-floor", required_argument, NULL, OPT_HANG_FLOOR },
	{ "startup-timeout", required_argument, NULL, OPT_STARTUP },
	{ "slow-factor", required_argument, NULL, OPT_SLOW },
	{ "check-interval", required_argument, NULL, OPT_CHECK_INTERVAL },
	{ "smoke", required_argument, NULL, OPT_SMOKE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "nccl-recorder", no_argument, NULL, OPT_NCCL_RECORDER },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "set", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* An option given on the command line goes into the configuration as [run] KEY, so that one
 * rule (the schema's) checks both, and the command line wins. */
static void set_opt(struct strlist *sets, const char *key, const char *value)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "run.%s=%s", key, value);
	strlist_add(sets, sb.buf);
	strbuf_release(&sb);
}

static int get_count(const struct config *cfg, const char *key, uint64_t def, unsigned *out,
		     struct strbuf *err)
{
	uint64_t v;
	if (config_get_u64(cfg, "run", key, def, &v, err) < 0)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int get_secs(const struct config *cfg, const char *key, double def, double *out,
		    struct strbuf *err)
{
	return config_get_double(cfg, "run", key, def, out, err);
}

/* CMD is an executable file here (the nodes are expected to share it: a command missing on
 * the node vigil runs on would fail every attempt on every host). */
static bool command_found(const char *cmd)
{
	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0;
	const char *path = getenv("PATH");
	struct strlist dirs = STRLIST_INIT;
	strlist_split(&dirs, path && *path ? path : "/usr/bin:/bin", ":");
	bool found = false;
	struct strbuf p = STRBUF_INIT;
	for (size_t i = 0; i < dirs.nr && !found; i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "%s/%s", dirs.items[i], cmd);
		found = access(p.buf, X_OK) == 0;
	}
	strbuf_release(&p);
	strlist_release(&dirs);
	return found;
}

/* run.KEY split on spaces into words, *argv pointing at them; unset: *argv stays NULL. -1
 * (said) when it is set but empty. */
static int command_words(const struct config *cfg, const char *key, const char *what,
			 struct strlist *words, const char *const **argv)
{
	const char *v = config_get(cfg, "run", key);
	if (!v)
		return 0;
	strlist_split(words, v, " \t");
	if (!words->nr) {
		usage_error("run", "%s is empty", what);
		return -1;
	}
	*argv = (const char *const *)words->items;
	return 0;
}

int cmd_run(int argc, char **argv)
{
	const char *config_path = NULL;
	struct strlist sets = STRLIST_INIT, opts = STRLIST_INIT, smoke = STRLIST_INIT;
	struct strlist sdc_test = STRLIST_INIT;
	struct strbuf err = STRBUF_INIT, dir = STRBUF_INIT, recorder_path = STRBUF_INIT;
	struct config cfg;
	int ret = EXIT_USAGE, c;
	char self[4096];
	bool json = false;
	config_init(&cfg, "");

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:c:h", run_opts, NULL)) != -1) {
		switch (c) {
		case OPT_NODES: set_opt(&opts, "nodes", optarg); break;
		case OPT_SPARES: set_opt(&opts, "spares", optarg); break;
		case OPT_HOSTS: set_opt(&opts, "hosts", optarg); break;
		case OPT_TPN: set_opt(&opts, "tasks-per-node", optarg); break;
		case OPT_RUN_DIR: set_opt(&opts, "run-dir", optarg); break;
		case OPT_MAX_RESTARTS: set_opt(&opts, "max-restarts", optarg); break;
		case OPT_STEP_PATTERN: set_opt(&opts, "step-pattern", optarg); break;
		case OPT_HANG_AFTER: set_opt(&opts, "hang-after", optarg); break;
		case OPT_HANG_FLOOR: set_opt(&opts, "hang-floor", optarg); break;
		case OPT_STARTUP: set_opt(&opts, "startup-timeout", optarg); break;
		case OPT_SLOW: set_opt(&opts, "slow-factor", optarg); break;
		case OPT_CHECK_INTERVAL: set_opt(&opts, "check-interval", optarg); break;
		case OPT_SMOKE: set_opt(&opts, "smoke", optarg); break;
		case OPT_JSON: json = true; break;
		case OPT_NCCL_RECORDER: set_opt(&opts, "nccl-recorder", "true"); break;
		case OPT_CONFIG: config_path = optarg; break;
		case 'c': strlist_add(&sets, optarg); break;
		case 'h':
			fputs(run_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		case ':':
			usage_error("run", "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			usage_error("run", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	/* configuration: the file, then -c, then the options */
	if (!config_path)
		config_path = getenv("VIGIL_CONFIG");
	if (config_load_file(&cfg, config_path && *config_path ? config_path
							      : "/etc/vigil/vigil.conf",
			     !(config_path && *config_path), &err) < 0)
		goto bad;
	for (size_t i = 0; i < sets.nr; i++)
		if (config_set(&cfg, sets.items[i], &err) < 0)
			goto bad;
	for (size_t i = 0; i < opts.nr; i++)
		if (config_set(&cfg, opts.items[i], &err) < 0)
			goto bad;
	if (config_keys_validate(&cfg, &err) < 0)
		goto bad;

	if (optind >= argc) {
		usage_error("run", "no command to run: vigil run [options] -- CMD [ARGS...]");
		goto out;
	}
	if (!*argv[optind]) {
		usage_error("run", "the command to run is empty");
		goto out;
	}
	if (!command_found(argv[optind])) {
		strbuf_add_clean(&err, argv[optind]);
		fprintf(stderr, "vigil run: command not found: '%s' (not an executable file%s)\n",
			err.buf, strchr(argv[optind], '/') ? "" : " on PATH");
		goto out;
	}

	struct sup_options o;
	memset(&o, 0, sizeof(o));
	detect_config_default(&o.detect);
	unsigned slow_steps;
	double grace;
	bool pystacks, drain, agent_cache, recorder, one_step;
	if (get_count(&cfg, "nodes", 0, &o.nodes, &err) < 0 ||
	    get_count(&cfg, "spares", 0, &o.spares, &err) < 0 ||
	    get_count(&cfg, "tasks-per-node", 1, &o.tasks_per_node, &err) < 0 ||
	    get_count(&cfg, "max-restarts", 10, &o.max_restarts, &err) < 0 ||
	    get_count(&cfg, "slow-steps", 5, &slow_steps, &err) < 0 ||
	    get_count(&cfg, "master-port", 29500, &o.master_port, &err) < 0 ||
	    config_get_double(&cfg, "run", "hang-after", 3, &o.detect.hang_factor, &err) < 0 ||
	    get_secs(&cfg, "hang-floor", 60, &o.detect.hang_floor_s, &err) < 0 ||
	    get_secs(&cfg, "startup-timeout", 300, &o.detect.startup_timeout_s, &err) < 0 ||
	    config_get_double(&cfg, "run", "slow-factor", 2, &o.detect.slow_factor, &err) < 0 ||
	    get_secs(&cfg, "check-interval", 30, &o.check_interval_s, &err) < 0 ||
	    get_secs(&cfg, "check-timeout", 60, &o.check_timeout_s, &err) < 0 ||
	    get_secs(&cfg, "node-poll", 5, &o.node_poll_s, &err) < 0 ||
	    get_secs(&cfg, "stacks-timeout", 30, &o.stacks_timeout_s, &err) < 0 ||
	    get_secs(&cfg, "smoke-timeout", 300, &o.smoke_timeout_s, &err) < 0 ||
	    get_secs(&cfg, "restart-delay", 2, &o.restart_delay_s, &err) < 0 ||
	    get_secs(&cfg, "grace", 10, &grace, &err) < 0 ||
	    config_get_bool(&cfg, "run", "python-stacks", true, &pystacks, &err) < 0 ||
	    config_get_bool(&cfg, "run", "drain", true, &drain, &err) < 0 ||
	    config_get_bool(&cfg, "run", "agent-cache", true, &agent_cache, &err) < 0 ||
	    config_get_bool(&cfg, "fleet", "one-step", true, &one_step, &err) < 0 ||
	    config_get_bool(&cfg, "run", "nccl-recorder", false, &recorder, &err) < 0 ||
	    slurm_cmds_from_config(&cfg, &o.cmds, &err) < 0)
		goto bad;
	o.detect.slow_steps = slow_steps;
	o.grace_ms = (unsigned)(grace * 1000);
	o.python_stacks = pystacks;
	o.drain = drain;
	o.agent_cache = agent_cache;
	o.fleet_one_step = one_step;
	o.json = json;
	if (recorder) {
		/* beside this vigil (a build tree), else where 'make install' puts it; the nodes
		 * are expected to have it at the same path, as they have vigil */
		char d[4096];
		if (exe_dir(d, sizeof(d)))
			strbuf_addf(&recorder_path, "%s/libnccl-profiler-vigil.so", d);
		if (!recorder_path.len || access(recorder_path.buf, R_OK) != 0) {
			strbuf_reset(&recorder_path);
			strbuf_addf(&recorder_path, "%s/vigil/libnccl-profiler-vigil.so", VIGIL_LIBDIR);
		}
		if (access(recorder_path.buf, R_OK) != 0) {
			usage_error("run", "--nccl-recorder: no libnccl-profiler-vigil.so beside vigil "
					   "or in %s/vigil ('make' builds it, 'make install' installs it)",
				    VIGIL_LIBDIR);
			goto out;
		}
		o.nccl_recorder = recorder_path.buf;
	}
	o.scancel = config_get(&cfg, "slurm", "scancel");
	o.hosts = config_get(&cfg, "run", "hosts");
	uint64_t nr_hosts;
	if (o.hosts && (hostlist_count(o.hosts, &nr_hosts, &err) < 0 || !nr_hosts)) {
		struct strbuf q = STRBUF_INIT;
		strbuf_add_clean(&q, o.hosts);
		usage_error("run", "--hosts wants a Slurm hostlist (n[1-4],gpu7), not '%s'%s%s", q.buf,
			    err.len ? ": " : "", err.buf);
		strbuf_release(&q);
		goto out;
	}
	o.step_pattern = config_get(&cfg, "run", "step-pattern");
	if (o.step_pattern) {
		/* a bad pattern is a usage error now, not a failed attempt later */
		struct step_parser p;
		if (step_parser_init_output(&p, o.step_pattern, &err) < 0) {
			usage_error("run", "%s", err.buf);
			goto out;
		}
		step_parser_release(&p);
	}
	/* the commands given as text, split on spaces: --smoke (run.smoke), run.sdc-test */
	if (command_words(&cfg, "smoke", "--smoke", &smoke, &o.smoke) < 0 ||
	    command_words(&cfg, "sdc-test", "run.sdc-test", &sdc_test, &o.sdc_test) < 0)
		goto out;
	o.cmd = (const char *const *)(argv + optind);

	/* the allocation */
	o.job_id = getenv("SLURM_JOB_ID");
	o.nodelist = getenv("SLURM_JOB_NODELIST");
	if (!o.nodelist || !*o.nodelist)
		o.nodelist = getenv("SLURM_NODELIST");
	if (!o.job_id || !*o.job_id || !o.nodelist || !*o.nodelist) {
		fprintf(stderr, "vigil run: not inside a Slurm allocation (SLURM_JOB_ID and "
				"SLURM_JOB_NODELIST are not set): run it from an sbatch script or "
				"under salloc\n");
		goto out;
	}
	for (const char *p = o.job_id; *p; p++)
		if (*p < '0' || *p > '9') {
			fprintf(stderr, "vigil run: SLURM_JOB_ID is not a job id\n");
			goto out;
		}
	const char *rd = config_get(&cfg, "run", "run-dir");
	if (rd && *rd)
		strbuf_addstr(&dir, rd);
	else
		strbuf_addf(&dir, "vigil-run-%s", o.job_id);
	if (dir.buf[0] != '/') {
		/* absolute: the nodes and the tasks see the same path */
		char cwd[4096];
		if (!getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr, "vigil run: cannot tell the current directory\n");
			goto out;
		}
		struct strbuf abs = STRBUF_INIT;
		strbuf_addf(&abs, "%s/%s", cwd, dir.buf);
		strbuf_reset(&dir);
		strbuf_add(&dir, abs.buf, abs.len);
		strbuf_release(&abs);
	}
	o.run_dir = dir.buf;
	const char *cmd = config_get(&cfg, "fleet", "command");
	if (!cmd) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[n > 0 ? n : 0] = '\0';
		cmd = n > 0 ? self : "vigil";
	}
	o.vigil_remote = cmd;
	const char **extra, **cargs;
	o.nr_srun_extra = config_get_all(&cfg, "fleet", "srun-arg", &extra);
	o.srun_extra = extra;
	o.nr_check_args = config_get_all(&cfg, "run", "check-arg", &cargs);
	o.check_args = cargs;

	ret = supervise(&o, &err);
	if (ret == 2 && err.len) {
		struct strbuf clean = STRBUF_INIT;
		strbuf_add_clean(&clean, err.buf);
		fprintf(stderr, "vigil run: %s\n", clean.buf);
		strbuf_release(&clean);
	}
	free(extra);
	free(cargs);
	goto out;
bad:
	fprintf(stderr, "vigil run: %s\n", err.buf);
	ret = EXIT_USAGE;
out:
	config_release(&cfg);
	strlist_release(&sets);
	strlist_release(&opts);
	strlist_release(&smoke);
	strlist_release(&sdc_test);
	strbuf_release(&err);
	strbuf_release(&dir);
	strbuf_release(&recorder_path);
	return ret;
}
