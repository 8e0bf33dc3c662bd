/* check.c: 'vigil check', the passive host verdict. */
#include "cmd.h"
#include "common.h"
#include "active.h"
#include "../checks/select.h"
#include "../agent/cache.h"
#include "../slurm/slurm.h"
#include "../lib/prom.h"
#include "../lib/strlist.h"
#include "../sys/fsroot.h"

#include <errno.h>
#include <getopt.h>
#include <syslog.h>
#include <unistd.h>

static const char check_usage[] =
	"usage: vigil check [options]\n"
	"\n"
	"Run the passive checks (safe beside a training job) and give one verdict for this host.\n"
	"\n"
	"  --root DIR          read DIR/sys, DIR/proc, DIR/dev/kmsg, DIR/etc instead of the host's\n"
	"                      (also VIGIL_ROOT); a fixture from 'vigil gather'\n"
	"  --kernel-log FILE   read a saved kernel log (dmesg, dmesg -T, dmesg --time-format iso,\n"
	"                      journalctl -k or kmsg records) instead of /dev/kmsg\n"
	"  --only NAMES        run only these checks (comma-separated; see 'vigil list')\n"
	"  --skip NAMES        do not run these checks\n"
	"  --config FILE       configuration file (default /etc/vigil/vigil.conf under the root)\n"
	"  -c, --set SEC.KEY=VALUE  one configuration setting (repeatable; wins over the file)\n"
	"  --state-dir DIR     where readings are kept between runs (default /var/lib/vigil)\n"
	"  --host NAME         host name for per-host configuration sections and the report\n"
	"  --host-from-slurmd  the host name is SLURMD_NODENAME, as slurmd sets it for a task\n"
	"                      (vigil fleet check's one srun step names each answer so)\n"
	"  --timeout SECONDS   bound for the whole run (default 30)\n"
	"  --json              print one JSON object\n"
	"  --prom FILE         also write Prometheus text (node_exporter textfile), atomically\n"
	"  --reason            print only the one-line reason (at most 80 characters)\n"
	"  -v, --verbose       show every finding, not only problems\n"
	"  --color WHEN        auto (default: on a terminal), always or never\n"
	"  --cached            answer at once from the result 'vigil agent' keeps in the state\n"
	"                      directory; older than agent.max-age seconds (default three agent\n"
	"                      intervals) or missing is unknown, never healthy\n"
	"  --slurm             act as Slurm's HealthCheckProgram, prolog or epilog: drain this\n"
	"                      node (SLURMD_NODENAME, --host or the host name) when unhealthy with\n"
	"                      reason \"vigil: <reason>\", resume it when healthy only if vigil\n"
	"                      drained it; never touches a node someone else drained\n"
	"                      (slurm.on-unknown = nothing|drain, slurm.timeout = 10 seconds)\n"
	"  --npd               node-problem-detector custom plugin: print the reason (at most 80\n"
	"                      characters) and exit 0 OK, 1 NonOK, 2 Unknown\n"
	"  --deep              also run short active tests and fold them into the verdict: 'vigil\n"
	"                      stress gpu' for deep.duration seconds (default 20), then 'vigil net\n"
	"                      pairs' and an NCCL all_reduce on hosts of several GPUs. They take\n"
	"                      the GPUs: never beside training. Needs vigil's CUDA helpers.\n"
	"\n"
	"Exit status:\n"
	"  0  healthy (warnings alone leave the host healthy)\n"
	"  1  unhealthy: at least one check failed\n"
	"  2  usage error\n"
	"  3  could not tell: a check was unknown or timed out, and none failed\n"
	"     (with --slurm also: healthy, but a Slurm command failed)\n"
	"With --npd: 0 healthy, 1 unhealthy, 2 could not tell (or a usage error).\n";

enum { OPT_ROOT = 256, OPT_KLOG, OPT_ONLY, OPT_SKIP, OPT_CONFIG, OPT_STATE, OPT_HOST,
       OPT_TIMEOUT, OPT_JSON, OPT_PROM, OPT_REASON, OPT_COLOR, OPT_CACHED, OPT_SLURM, OPT_NPD,
       OPT_DEEP, OPT_HOST_SLURMD };

static const struct option check_opts[] = {
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "kernel-log", required_argument, NULL, OPT_KLOG },
	{ "only", required_argument, NULL, OPT_ONLY },
	{ "skip", required_argument, NULL, OPT_SKIP },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "set", required_argument, NULL, 'c' },
	{ "state-dir", required_argument, NULL, OPT_STATE },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "host-from-slurmd", no_argument, NULL, OPT_HOST_SLURMD },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "prom", required_argument, NULL, OPT_PROM },
	{ "reason", no_argument, NULL, OPT_REASON },
	{ "verbose", no_argument, NULL, 'v' },
	{ "color", required_argument, NULL, OPT_COLOR },
	{ "cached", no_argument, NULL, OPT_CACHED },
	{ "slurm", no_argument, NULL, OPT_SLURM },
	{ "npd", no_argument, NULL, OPT_NPD },
	{ "deep", no_argument, NULL, OPT_DEEP },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct check_args {
	struct host_env he;
	const char *kernel_log;
	struct strlist only, skip, sets;
	bool only_given; /* --only '' selects nothing: a usage error, not every check */
	double timeout_s;
	bool json, reason, verbose;
	const char *prom;
	int color; /* -1 auto */
	bool cached, slurm, npd;
	bool deep;
	const char *bad_nodename; /* SLURMD_NODENAME that is no host name: no Slurm action */
};

static int parse_names(struct strlist *l, const char *arg)
{
	strlist_split(l, arg, ",");
	for (size_t i = 0; i < l->nr; i++) {
		if (!check_find(l->items[i])) {
			usage_error("check", "no check named '%s' (see 'vigil list')", l->items[i]);
			return -1;
		}
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct check_args *a)
{
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:vh", check_opts, NULL)) != -1) {
		switch (c) {
		case OPT_ROOT: a->he.root = optarg; break;
		case OPT_KLOG: a->kernel_log = optarg; break;
		case OPT_ONLY:
			a->only_given = true;
			if (parse_names(&a->only, optarg))
				return -1;
			break;
		case OPT_SKIP:
			if (parse_names(&a->skip, optarg))
				return -1;
			break;
		case OPT_CONFIG: a->he.config_path = optarg; break;
		case 'c': strlist_add(&a->sets, optarg); break;
		case OPT_STATE: a->he.state_dir = optarg; break;
		case OPT_HOST: a->he.host = optarg; break;
		case OPT_HOST_SLURMD: {
			/* One srun step runs the same command line on every node, so the node
			 * cannot be an argument: slurmd's name for it is (docs/SLURM.md). A
			 * name that is no plain node name is a usage error, never guessed. */
			const char *n = getenv("SLURMD_NODENAME");
			if (!n || !slurm_node_name_ok(n)) {
				usage_error("check", "--host-from-slurmd: SLURMD_NODENAME is %s",
					    n ? "no node name" : "not set (not a Slurm task)");
				return -1;
			}
			a->he.host = n;
			break;
		}
		case OPT_TIMEOUT:
			if (opt_seconds("check", "--timeout", optarg, 1, 86400, &a->timeout_s) < 0)
				return -1;
			break;
		case OPT_JSON: a->json = true; break;
		case OPT_PROM: a->prom = optarg; break;
		case OPT_REASON: a->reason = true; break;
		case 'v': a->verbose = true; break;
		case OPT_COLOR:
			a->color = color_mode_parse(optarg);
			if (a->color == -2) {
				usage_error("check", "--color wants auto, always or never");
				return -1;
			}
			break;
		case OPT_CACHED: a->cached = true; break;
		case OPT_SLURM: a->slurm = true; break;
		case OPT_NPD: a->npd = true; break;
		case OPT_DEEP: a->deep = true; break;
		case 'h': return 1;
		case ':':
			usage_error("check", "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			usage_error("check", "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		usage_error("check", "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (a->json && a->reason) {
		usage_error("check", "--json and --reason cannot be used together");
		return -1;
	}
	if (a->npd && (a->json || a->reason)) {
		usage_error("check", "--npd prints its own message: not with --json or --reason");
		return -1;
	}
	if (a->cached && (a->only.nr || a->skip.nr || a->kernel_log)) {
		usage_error("check", "--cached reports what the agent ran: not with --only, --skip "
				     "or --kernel-log");
		return -1;
	}
	if (a->cached && a->deep) {
		usage_error("check", "--cached reports what the agent ran: not with --deep");
		return -1;
	}
	/* Under slurmd (HealthCheckProgram, prolog, epilog) the node is the one Slurm names. */
	if (a->slurm && !a->he.host) {
		const char *n = getenv("SLURMD_NODENAME");
		if (n && *n && !host_name_invalid(n))
			a->he.host = n;
		else if (n && *n)
			a->bad_nodename = n; /* the checks still run; apply_slurm() refuses */
	}
	return 0;
}

/* The cached verdict: agent.max-age seconds, by default three agent intervals. */
static int load_cached(struct check_args *a, struct report *rep, struct strbuf *err)
{
	double interval, max_age = 0;
	if (config_get_double(&a->he.cfg, "agent", "interval", 60, &interval, err) < 0)
		return -1;
	/* unset: three intervals of the agent that wrote the cache (it records its own) */
	if (config_get(&a->he.cfg, "agent", "max-age")) {
		if (config_get_double(&a->he.cfg, "agent", "max-age", 0, &max_age, err) < 0)
			return -1;
		if (max_age <= 0)
			return error_set(err, "agent.max-age wants a positive number of seconds");
	}
	agent_cache_load(a->he.state_dir, a->he.host, wall_seconds(), max_age, interval, rep);
	/* The cache's stand-in (no result, stale, damaged) says why twice, as the check's error
	 * and as its finding, and the table printed both lines. The finding keeps it, with its
	 * code and action; the copy in the error goes. */
	for (size_t i = 0; i < rep->nr; i++) {
		struct check_result *c = &rep->results[i];
		const struct finding *w = result_worst(c);
		if (c->error && w && !strcmp(w->message, c->error)) {
			free(c->error);
			c->error = NULL;
		}
	}
	return 0;
}

/* Everything under Slurm's 60 s limit: the checks, then at most two Slurm calls in what is left. */
#define SLURM_BUDGET_MS 55000

/* The drain/resume policy on this node. Returns the exit code to use. */
static int apply_slurm(struct check_args *a, const struct report *rep, int ret, uint64_t t0)
{
	struct slurm_cmds cmds;
	struct slurm_policy pol;
	struct slurm_node node;
	struct slurm_decision d;
	struct strbuf err = STRBUF_INIT;
	bool have_node = false;
	const char *name = a->he.host;

	memset(&node, 0, sizeof(node));
	if (a->bad_nodename) {
		/* as slurm_node_name_ok() refuses metacharacters: never act on another name */
		host_name_excerpt(&err, a->bad_nodename);
		fprintf(stderr, "vigil check: slurm: refusing node name '%s' from SLURMD_NODENAME "
				"(%s): nothing drained or resumed\n",
			err.buf, host_name_invalid(a->bad_nodename));
		syslog(LOG_ERR, "refusing node name '%s' from SLURMD_NODENAME (%s)", err.buf,
		       host_name_invalid(a->bad_nodename));
		if (ret == EXIT_HEALTHY)
			ret = EXIT_UNKNOWN;
		goto out;
	}
	if (slurm_cmds_from_config(&a->he.cfg, &cmds, &err) < 0 ||
	    slurm_policy_from_config(&a->he.cfg, &pol, &err) < 0) {
		fprintf(stderr, "vigil check: %s\n", err.buf);
		ret = EXIT_USAGE;
		goto out;
	}
	/* Slurm's calls fit in what is left of --timeout (and of Slurm's own 60 s limit). */
	char budget[48];
	double budget_ms = a->timeout_s * 1000 < SLURM_BUDGET_MS ? a->timeout_s * 1000
								 : SLURM_BUDGET_MS;
	snprintf(budget, sizeof(budget),
		 budget_ms < SLURM_BUDGET_MS ? "--timeout %g" : "%g s, under Slurm's 60 s limit",
		 budget_ms / 1000);
	cmds.deadline_ms = t0 + (uint64_t)budget_ms;
	cmds.budget_name = budget;
	if (slurm_node_get(&cmds, name, &node, &err) == 0)
		have_node = true;
	else
		fprintf(stderr, "vigil check: slurm: %s\n", err.buf);
	slurm_decide(rep->verdict, rep->reason, have_node ? &node : NULL, &pol, &d);
	fprintf(stderr, "vigil check: slurm: node '%s' (%s): %s: %s\n", name,
		have_node ? node.state : "state unknown", slurm_act_name(d.act), d.why);
	if (d.act != SLURM_ACT_NOTHING) {
		if (slurm_apply(&cmds, name, &d, &err) < 0) {
			fprintf(stderr, "vigil check: slurm: cannot %s node '%s': %s\n",
				slurm_act_name(d.act), name, err.buf);
			syslog(LOG_ERR, "cannot %s node '%s': %s", slurm_act_name(d.act), name,
			       err.buf);
			if (ret == EXIT_HEALTHY)
				ret = EXIT_UNKNOWN;
		} else if (d.act == SLURM_ACT_DRAIN) {
			syslog(LOG_WARNING, "drained node '%s': %s", name, d.reason);
		} else {
			syslog(LOG_NOTICE, "resumed node '%s' (was: %s)", name, node.reason);
		}
	} else if (!have_node && ret == EXIT_HEALTHY) {
		ret = EXIT_UNKNOWN;
	}
out:
	slurm_node_release(&node);
	strbuf_release(&err);
	return ret;
}

/* --deep: the active tests, short, folded into the same report after the passive checks. */
static void check_deep(struct check_args *a, struct report *rep)
{
	double s = 20;
	struct strbuf err = STRBUF_INIT;
	if (a->he.root) {
		struct check_result *r = report_add(rep, "stress");
		result_add(r, STATUS_SKIPPED, ACTION_NONE, "root", "",
			   "active tests skipped: --root is a fixture, not this host");
		result_finish(r);
		return;
	}
	if (config_get_double(&a->he.cfg, "deep", "duration", 20, &s, &err) < 0 || s <= 0)
		s = 20;
	uint64_t t0 = mono_ms();
	active_deep(&a->he.cfg, s, !a->json && !a->reason && !a->npd, rep);
	rep->duration_ms += mono_ms() - t0;
	strbuf_release(&err);
}

/*
 * A --root that holds no host (an empty directory, a scenario folder instead of its root/) is
 * unknown, never healthy: a "root" result first in the report, so that it is the reason given.
 */
static void check_root(const struct fsroot *fs, struct report *rep)
{
	struct strbuf why = STRBUF_INIT;
	if (!fsroot_looks_like_host(fs, &why)) {
		struct check_result *r = report_add(rep, "root");
		result_add(r, STATUS_UNKNOWN, ACTION_FIX_CONFIG, "not_a_host_root", "", "%s", why.buf);
		result_finish(r);
		struct check_result root = rep->results[rep->nr - 1];
		memmove(rep->results + 1, rep->results, (rep->nr - 1) * sizeof(*rep->results));
		rep->results[0] = root;
		report_finish(rep);
	}
	strbuf_release(&why);
}

int check_collect(const struct host_env *he, const struct strlist *only,
		  const struct strlist *skip, double timeout_s, struct report *rep,
		  struct strbuf *err)
{
	struct check_selection sel = { .only = only, .skip = skip };
	struct check_ctx ctx = {
		.root = &he->fs,
		.cfg = &he->cfg,
		.host = he->host,
		.state_dir = he->state_dir,
	};
	if (checks_collect(&ctx, &sel, timeout_s, rep, err) < 0)
		return -1;
	check_root(&he->fs, rep);
	return 0;
}

/*
 * With --slurm the checks leave Slurm room inside --timeout: a check that hangs to its deadline
 * must still let vigil drain the node (slurm.on-unknown = drain). Two scontrol calls (show, then
 * update) of slurm.timeout each, but never more than a third of the run.
 */
static double checks_budget(const struct check_args *a)
{
	double slurm_s = 10;
	if (!a->slurm)
		return a->timeout_s;
	if (config_get_double(&a->he.cfg, "slurm", "timeout", 10, &slurm_s, NULL) < 0)
		slurm_s = 10;
	double reserve = 2 * slurm_s;
	if (reserve > a->timeout_s / 3)
		reserve = a->timeout_s / 3;
	return a->timeout_s - reserve;
}

int cmd_check(int argc, char **argv)
{
	struct check_args a;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	struct report rep;
	int ret = EXIT_USAGE;

	memset(&a, 0, sizeof(a));
	a.timeout_s = 30;
	a.color = COLOR_AUTO;
	int pr = parse_args(argc, argv, &a);
	if (pr) {
		if (pr > 0) {
			fputs(check_usage, stdout);
			ret = EXIT_HEALTHY;
		}
		goto out_args;
	}
	if (host_env_setup(&a.he, (const char *const *)a.sets.items, a.sets.nr, &err) < 0) {
		fprintf(stderr, "vigil check: %s\n", err.buf);
		goto out_env;
	}
	if (a.kernel_log && access(a.kernel_log, R_OK) < 0) {
		fprintf(stderr, "vigil check: cannot read kernel log '%s'\n", a.kernel_log);
		goto out_env;
	}

	uint64_t t0 = mono_ms();
	if (a.cached) {
		if (load_cached(&a, &rep, &err) < 0) {
			fprintf(stderr, "vigil check: %s\n", err.buf);
			goto out_env;
		}
	} else {
		struct check_selection sel = { .only = &a.only, .only_given = a.only_given,
					       .skip = &a.skip };
		/* The agent's socket (agent.socket, default STATE/agent.sock, 'off': none): the gpu
		 * check takes its NVML reading from the agent's worker there when it can. */
		struct strbuf sock = STRBUF_INIT;
		const char *spath = config_get(&a.he.cfg, "agent", "socket");
		if (spath && strcmp(spath, "off"))
			strbuf_addstr(&sock, spath);
		else if (!spath && a.he.state_dir)
			strbuf_addf(&sock, "%s/agent.sock", a.he.state_dir);
		struct check_ctx ctx = {
			.root = &a.he.fs,
			.cfg = &a.he.cfg,
			.host = a.he.host,
			.state_dir = a.he.state_dir,
			.kernel_log = a.kernel_log,
			.agent_socket = sock.len ? sock.buf : NULL,
		};
		int cr = checks_collect(&ctx, &sel, checks_budget(&a), &rep, &err);
		strbuf_release(&sock);
		if (cr < 0) {
			fprintf(stderr, "vigil check: %s\n", err.buf);
			goto out_env;
		}
		check_root(&a.he.fs, &rep);
		if (a.he.state_problem) {
			/* checks ran; only their readings cannot be compared with the last run's */
			struct check_result *r = report_add(&rep, "state");
			result_add(r, STATUS_WARN, ACTION_FIX_CONFIG, "state_not_kept", "",
				   "no state directory: readings are not kept between runs (%s)",
				   a.he.state_problem);
			result_finish(r);
		}
		if (a.deep)
			check_deep(&a, &rep);
	}
	report_finish(&rep);
	if (a.prom) {
		/* Whoever reads the file cannot be told this verdict: an "output" result says so,
		 * and the verdict printed (and the exit status) become "could not tell" unless the
		 * host is unhealthy anyway (docs/vigil-check.1, EXIT STATUS). */
		struct strbuf prom = STRBUF_INIT;
		report_prom(&rep, &prom);
		if (prom_write_atomic(a.prom, &prom, &err) < 0) {
			fprintf(stderr, "vigil check: --prom: %s\n", err.buf);
			struct check_result *r = report_add(&rep, "output");
			result_add(r, STATUS_UNKNOWN, ACTION_INVESTIGATE, "prom_not_written", a.prom,
				   "--prom: %s", err.buf);
			result_finish(r);
			report_finish(&rep);
		}
		strbuf_release(&prom);
	}
	ret = verdict_exit_code(rep.verdict);

	if (a.npd) {
		/* node-problem-detector: 0 OK, 1 NonOK, 2 Unknown; stdout is the message. */
		strbuf_addf(&out, "%s\n", rep.reason);
		ret = rep.verdict == VERDICT_HEALTHY ? 0 : rep.verdict == VERDICT_UNHEALTHY ? 1 : 2;
	} else if (a.json) {
		report_json(&rep, &out, true);
	} else if (a.reason) {
		strbuf_addf(&out, "%s\n", rep.reason);
	} else {
		report_table(&rep, &out, color_enabled(a.color, 1), a.verbose);
	}
	errno = 0;
	fwrite(out.buf, 1, out.len, stdout);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		/* a full disk, ulimit -f, a closed pipe: whoever reads stdout has no verdict, so
		 * stderr says why and a healthy one is not claimed */
		fprintf(stderr, "vigil check: cannot write the report to standard output: %s "
				"(verdict: %s)\n",
			errno ? strerror(errno) : "write error", rep.reason);
		if (ret == EXIT_HEALTHY)
			ret = EXIT_UNKNOWN;
	}
	if (a.slurm)
		ret = apply_slurm(&a, &rep, ret, t0);
	report_release(&rep);
out_env:
	host_env_release(&a.he);
out_args:
	strlist_release(&a.only);
	strlist_release(&a.skip);
	strlist_release(&a.sets);
	strbuf_release(&err);
	strbuf_release(&out);
	return ret;
}
