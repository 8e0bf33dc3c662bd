/* agent.c: 'vigil agent', the per-host daemon (the core is src/agent/agent.c). */
#include "cmd.h"
#include "common.h"
#include "../agent/agent.h"
#include "../agent/gpuworker.h"
#include "../agent/http.h"
#include "../checks/check.h"
#include "../checks/select.h"
#include "../lib/fileio.h"
#include "../lib/strlist.h"
#include "../sys/fsroot.h"

#include <getopt.h>
#include <signal.h>
#include <sys/resource.h>

static const char agent_usage[] =
	"usage: vigil agent [options]\n"
	"\n"
	"Run the passive checks on an interval (with jitter), keep the latest result for\n"
	"'vigil check --cached', write the Prometheus textfile, serve /metrics and /health over\n"
	"HTTP, and remember findings across reboots: the same REBOOT/RESET_GPU fault seen in more\n"
	"than agent.escalate-after boots becomes INSPECT_HARDWARE. Stops on SIGTERM or SIGINT.\n"
	"\n"
	"  --root DIR          judge a fixture directory instead of this host (also VIGIL_ROOT)\n"
	"  --config FILE       configuration file (default /etc/vigil/vigil.conf under the root)\n"
	"  -c, --set SEC.KEY=VALUE  one configuration setting (repeatable)\n"
	"  --state-dir DIR     cached result and history (default /var/lib/vigil)\n"
	"  --host NAME         host name for per-host configuration sections and the report\n"
	"  --only NAMES        run only these checks      --skip NAMES   do not run these\n"
	"  --interval S        seconds between cycles (agent.interval, default 60)\n"
	"  --jitter S          random +- seconds on each interval (agent.jitter, default interval/10)\n"
	"  --listen ADDR:PORT  HTTP address (agent.listen, default 127.0.0.1:9847; 'off': none)\n"
	"  --socket PATH       /health on a Unix socket, apart from the HTTP connections\n"
	"                      (agent.socket, default STATE/agent.sock; 'off': none)\n"
	"  --prom FILE         Prometheus textfile, written atomically each cycle (agent.prom)\n"
	"  --timeout S         bound for one cycle of checks (agent.timeout, default 30)\n"
	"  --once              one cycle, then exit with its verdict's status\n"
	"  --cycles N          stop after N cycles\n"
	"\n"
	"Configuration: agent.max-age (seconds after which a result is served as unknown, default\n"
	"three intervals), agent.escalate-after (reboots, default 2; 0 never escalates),\n"
	"agent.gpu-worker (default true: the gpu check runs in one process that keeps NVML\n"
	"initialised; false: a fresh process each cycle, as the other checks).\n"
	"\n"
	"Exit status: 0 stopped by a signal or after --cycles; with --once the verdict's:\n"
	"  0 healthy, 1 unhealthy, 3 could not tell; 2 usage error (bad option, cannot listen).\n";

enum { OPT_ROOT = 256, OPT_CONFIG, OPT_STATE, OPT_HOST, OPT_ONLY, OPT_SKIP, OPT_INTERVAL,
       OPT_JITTER, OPT_LISTEN, OPT_SOCKET, OPT_PROM, OPT_TIMEOUT, OPT_ONCE, OPT_CYCLES };

static const struct option agent_opts[] = {
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "set", required_argument, NULL, 'c' },
	{ "state-dir", required_argument, NULL, OPT_STATE },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "only", required_argument, NULL, OPT_ONLY },
	{ "skip", required_argument, NULL, OPT_SKIP },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "jitter", required_argument, NULL, OPT_JITTER },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "prom", required_argument, NULL, OPT_PROM },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "cycles", required_argument, NULL, OPT_CYCLES },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct agent_args {
	struct host_env he;
	struct strlist only, skip, sets;
	const char *interval, *jitter, *listen, *socket, *prom, *timeout;
	bool once;
	uint64_t cycles;
};

struct collect_arg {
	struct agent_args *a;
	double timeout_s;
	struct gpu_worker gpu; /* runs the gpu check with NVML kept initialised */
};

/* Whether this cycle runs the gpu check, and its deadline (as the runner would give it). */
static bool gpu_selected(struct collect_arg *c, unsigned *timeout_ms)
{
	struct check_selection sel = { .only = &c->a->only, .skip = &c->a->skip };
	struct run_item *items = xcalloc(check_table_nr, sizeof(*items));
	struct report scratch;
	bool found = false;
	report_init(&scratch, "", 0);
	int n = checks_select(&c->a->he.cfg, &sel, items, &scratch, NULL);
	for (int i = 0; i < n; i++)
		if (items[i].def == c->gpu.def) {
			found = true;
			*timeout_ms = items[i].timeout_ms;
		}
	unsigned total = (unsigned)(c->timeout_s * 1000);
	if (found && total && *timeout_ms > total)
		*timeout_ms = total;
	report_release(&scratch);
	free(items);
	return found;
}

/* The gpu result in its place in table order (before any later check, after "root"). */
static void put_gpu_result(struct report *rep, const struct check_def *gpu,
			   struct check_result *res)
{
	size_t at = rep->nr;
	for (size_t i = 0; i < rep->nr && at == rep->nr; i++) {
		const struct check_def *d = check_find(rep->results[i].name);
		if (d && d > gpu)
			at = i;
	}
	report_add(rep, gpu->name); /* room at the end */
	check_result_release(&rep->results[rep->nr - 1]);
	memmove(rep->results + at + 1, rep->results + at,
		(rep->nr - 1 - at) * sizeof(*rep->results));
	rep->results[at] = *res;
}

/*
 * One cycle: the gpu check goes to the long-lived worker (asked first, so that it runs while the
 * other checks run), the rest fork as in 'vigil check'.
 */
static int collect(void *arg, struct report *rep, struct strbuf *err)
{
	struct collect_arg *c = arg;
	struct agent_args *a = c->a;
	unsigned gpu_ms = 0;
	/* A state directory deleted since the last cycle is made again before the checks (the
	 * gpu check keeps its counters there); when that fails, the writes say why. */
	if (a->he.state_dir)
		mkdir_p(a->he.state_dir, 0755, NULL);
	if (!c->gpu.def || !gpu_selected(c, &gpu_ms))
		return check_collect(&a->he, &a->only, &a->skip, c->timeout_s, rep, err);

	uint64_t t0 = mono_ms();
	double now = wall_seconds();
	struct check_result res;
	struct strbuf werr = STRBUF_INIT;
	check_result_init(&res, c->gpu.def->name);
	bool asked = gpu_worker_send(&c->gpu, now, gpu_ms, &werr) == 0;
	struct strlist skip = STRLIST_INIT;
	for (size_t i = 0; i < a->skip.nr; i++)
		strlist_add(&skip, a->skip.items[i]);
	strlist_add(&skip, c->gpu.def->name);
	bool only_gpu = a->only.nr == 1 && !strcmp(a->only.items[0], c->gpu.def->name);
	int ret = 0;
	if (only_gpu) {
		report_init(rep, a->he.host, now);
	} else if (check_collect(&a->he, &a->only, &skip, c->timeout_s, rep, err) < 0) {
		/* nothing else could run: the gpu answer is not waited for */
		ret = -1;
		if (asked)
			gpu_worker_wait(&c->gpu, &res);
		check_result_release(&res);
		goto out;
	}
	if (asked) {
		gpu_worker_wait(&c->gpu, &res);
	} else {
		free(res.error);
		res.error = xstrdup(werr.buf);
		res.status = STATUS_UNKNOWN;
	}
	put_gpu_result(rep, c->gpu.def, &res);
	/* the kernel log's Xids against the driver's own events (NVML), now that it was read */
	gpu_worker_xid_judge(&c->gpu, rep);
	rep->duration_ms = mono_ms() - t0;
	report_finish(rep);
out:
	strlist_release(&skip);
	strbuf_release(&werr);
	return ret;
}

static double worker_cpu(void *arg)
{
	return gpu_worker_cpu(&((struct collect_arg *)arg)->gpu);
}

struct log_state {
	struct agent *ag;
	bool failing[AGENT_FILE__COUNT];
};

static const char *const file_what[AGENT_FILE__COUNT] = { "cached report", "history",
							   "Prometheus" };

/* The journal gets a line when the verdict or its reason changes, and when a file's writes start
 * failing (with the system's error) or work again. */
static void log_cycle(void *arg, const struct report *rep, bool changed)
{
	struct log_state *ls = arg;
	struct agent *ag = ls->ag;
	if (changed) {
		/* the reason names the verdict itself ("healthy (1 warning)", "unknown: ...")
		 * except when unhealthy ("kernel: Xid 79 ...") */
		const char *v = verdict_name(rep->verdict);
		if (starts_with(rep->reason, v))
			fprintf(stderr, "vigil agent: %s\n", rep->reason);
		else
			fprintf(stderr, "vigil agent: %s: %s\n", v, rep->reason);
	}
	for (int i = 0; i < AGENT_FILE__COUNT; i++) {
		bool failing = !ag->write_ok[i];
		if (failing && !ls->failing[i])
			fprintf(stderr, "vigil agent: cannot write its %s file: %s; going on\n",
				file_what[i], ag->write_error[i] ? ag->write_error[i] : "no reason given");
		else if (!failing && ls->failing[i])
			fprintf(stderr, "vigil agent: writes its %s file again\n", file_what[i]);
		ls->failing[i] = failing;
	}
}

static void on_stop(int sig)
{
	UNUSED(sig);
	agent_stop_requested = 1;
}

static int check_names(struct strlist *l, const char *arg)
{
	strlist_split(l, arg, ",");
	for (size_t i = 0; i < l->nr; i++)
		if (!check_find(l->items[i])) {
			usage_error("agent", "no check named '%s' (see 'vigil list')", l->items[i]);
			return -1;
		}
	return 0;
}

static int parse_args(int argc, char **argv, struct agent_args *a)
{
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:h", agent_opts, NULL)) != -1) {
		switch (c) {
		case OPT_ROOT: a->he.root = optarg; break;
		case OPT_CONFIG: a->he.config_path = optarg; break;
		case 'c': strlist_add(&a->sets, optarg); break;
		case OPT_STATE: a->he.state_dir = optarg; break;
		case OPT_HOST: a->he.host = optarg; break;
		case OPT_ONLY:
			if (check_names(&a->only, optarg))
				return -1;
			break;
		case OPT_SKIP:
			if (check_names(&a->skip, optarg))
				return -1;
			break;
		case OPT_INTERVAL: a->interval = optarg; break;
		case OPT_JITTER: a->jitter = optarg; break;
		case OPT_LISTEN: a->listen = optarg; break;
		case OPT_SOCKET: a->socket = optarg; break;
		case OPT_PROM: a->prom = optarg; break;
		case OPT_TIMEOUT: a->timeout = optarg; break;
		case OPT_ONCE: a->once = true; break;
		case OPT_CYCLES:
			if (!parse_u64(optarg, &a->cycles) || !a->cycles || a->cycles > 1000000000) {
				usage_error("agent", "--cycles wants a positive count, not '%s'", optarg);
				return -1;
			}
			break;
		case 'h': return 1;
		case ':':
			usage_error("agent", "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			usage_error("agent", "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		usage_error("agent", "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return 0;
}

/* A number from the option, else the configuration, else def; -1 on a bad value. */
static int seconds(const struct config *cfg, const char *opt, const char *key, double def,
		   double min, double *out)
{
	struct strbuf err = STRBUF_INIT;
	int ret = 0;
	if (opt) {
		if (!parse_double(opt, out) || *out < min || *out > 86400 * 7) {
			usage_error("agent", "--%s wants seconds (at least %g), not '%s'", key, min,
				    opt);
			ret = -1;
		}
	} else if (config_get_double(cfg, "agent", key, def, out, &err) < 0 || *out < min ||
		   *out > 86400 * 7) {
		fprintf(stderr, "vigil agent: %s\n",
			err.len ? err.buf : "agent setting out of range");
		ret = -1;
	}
	strbuf_release(&err);
	return ret;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_args a;
	struct agent ag;
	struct agent_settings set;
	struct agent_http *http = NULL;
	struct agent_sock *sock = NULL;
	struct strbuf err = STRBUF_INIT, boot = STRBUF_INIT, sock_path = STRBUF_INIT;
	int ret = EXIT_USAGE;
	bool have_agent = false;

	memset(&a, 0, sizeof(a));
	memset(&set, 0, sizeof(set));
	int pr = parse_args(argc, argv, &a);
	if (pr) {
		if (pr > 0) {
			fputs(agent_usage, stdout);
			ret = EXIT_HEALTHY;
		}
		goto out;
	}
	if (host_env_setup(&a.he, (const char *const *)a.sets.items, a.sets.nr, &err) < 0) {
		fprintf(stderr, "vigil agent: %s\n", err.buf);
		goto out_env; /* what setup allocated before it failed */
	}
	const struct config *cfg = &a.he.cfg;
	double timeout_s, escalate, interval;
	struct collect_arg carg = { .a = &a };
	if (seconds(cfg, a.interval, "interval", 60, 1, &interval) < 0 ||
	    seconds(cfg, a.jitter, "jitter", interval / 10, 0, &set.jitter_s) < 0 ||
	    seconds(cfg, NULL, "max-age", 3 * interval, 1, &set.max_age_s) < 0 ||
	    seconds(cfg, a.timeout, "timeout", 30, 1, &timeout_s) < 0 ||
	    seconds(cfg, NULL, "escalate-after", 2, 0, &escalate) < 0)
		goto out_env;
	/* An operator turns the worker off before 'nvidia-smi -r' or unloading the driver (it
	 * holds the GPUs open through NVML), or when this NVML misbehaves held open for days;
	 * the gpu check then forks each cycle as the others do. */
	bool gpu_worker = true;
	if (config_get_bool(cfg, "agent", "gpu-worker", true, &gpu_worker, &err) < 0) {
		fprintf(stderr, "vigil agent: %s\n", err.buf);
		goto out_env;
	}
	set.interval_s = interval;
	carg.timeout_s = timeout_s;
	set.escalate_after = (unsigned)escalate;
	set.state_dir = a.he.state_dir;
	set.prom_path = a.prom ? a.prom : config_get(cfg, "agent", "prom");
	set.host = a.he.host;
	set.max_cycles = a.once ? 1 : (unsigned)a.cycles;
	if (fsroot_read_attr(&a.he.fs, "/proc/sys/kernel/random/boot_id", &boot, NULL) == READ_OK &&
	    boot.len)
		set.boot_id = boot.buf;
	const char *listen = a.listen ? a.listen : config_get(cfg, "agent", "listen");
	if (!listen)
		listen = "127.0.0.1:9847";
	/* The socket lives beside the state (a directory only root writes): Slurm's and NPD's
	 * callers reach /health there whatever holds the HTTP connections. */
	const char *spath = a.socket ? a.socket : config_get(cfg, "agent", "socket");
	if (spath)
		strbuf_addstr(&sock_path, spath);
	else if (a.he.state_dir)
		strbuf_addf(&sock_path, "%s/agent.sock", a.he.state_dir);
	if (!sock_path.len || !strcmp(sock_path.buf, "off"))
		strbuf_reset(&sock_path);

	agent_init(&ag, &set, &agent_real_ops, NULL);
	have_agent = true;
	ag.collect = collect;
	ag.collect_arg = &carg;
	struct check_ctx gctx = {
		.root = &a.he.fs, .cfg = cfg, .host = a.he.host, .state_dir = a.he.state_dir
	};
	/* no def: collect() runs every check through the runner */
	gpu_worker_init(&carg.gpu, gpu_worker ? check_find("gpu") : NULL, &gctx);
	ag.kept_cpu = worker_cpu;
	ag.kept_cpu_arg = &carg;
	struct log_state ls = { &ag, { false } };
	ag.on_cycle = log_cycle;
	ag.on_cycle_arg = &ls;
	agent_load_history(&ag);
	if (ag.history_error)
		fprintf(stderr, "vigil agent: %s\n", ag.history_error);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);

	if (strcmp(listen, "off")) {
		/* Room for AGENT_HTTP_CONNECTIONS (systemd's default soft limit is 1024). */
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < AGENT_HTTP_NOFILE) {
			rl.rlim_cur = rl.rlim_max < AGENT_HTTP_NOFILE ? rl.rlim_max
								     : AGENT_HTTP_NOFILE;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		/* The server's thread inherits a mask without SIGTERM/SIGINT, so that they reach
		 * the loop's sleep. */
		sigset_t block, orig;
		sigemptyset(&block);
		sigaddset(&block, SIGTERM);
		sigaddset(&block, SIGINT);
		pthread_sigmask(SIG_BLOCK, &block, &orig);
		http = agent_http_start(&ag, listen, &err);
		pthread_sigmask(SIG_SETMASK, &orig, NULL);
		if (!http) {
			fprintf(stderr, "vigil agent: %s\n", err.buf);
			goto out_agent;
		}
	}
	if (sock_path.len) {
		sigset_t block, orig;
		sigemptyset(&block);
		sigaddset(&block, SIGTERM);
		sigaddset(&block, SIGINT);
		pthread_sigmask(SIG_BLOCK, &block, &orig);
		/* the state directory first: the socket's name goes in it */
		if (a.he.state_dir && !a.socket && !config_get(cfg, "agent", "socket"))
			mkdir_p(a.he.state_dir, 0755, NULL);
		sock = agent_sock_start(&ag, sock_path.buf, NULL, &err);
		pthread_sigmask(SIG_SETMASK, &orig, NULL);
		/* A socket asked for by name that cannot be had is a usage error; the default one
		 * (beside the state, which may be a full or odd disk) only costs its /health,
		 * never the checks, the cache or HTTP. */
		if (!sock && (a.socket || config_get(cfg, "agent", "socket"))) {
			fprintf(stderr, "vigil agent: %s\n", err.buf);
			goto out_agent;
		}
		if (!sock)
			fprintf(stderr, "vigil agent: no /health socket: %s; going on\n", err.buf);
	}
	fprintf(stderr, "vigil agent: %s: checks every %g s (+-%g s), state in %s%s%s%s%s%s%s\n",
		a.he.host, interval, set.jitter_s, set.state_dir ? set.state_dir : "(none)",
		http ? ", serving http://" : "", http ? listen : "", http ? "/metrics" : "",
		sock ? ", /health on " : "", sock ? sock_path.buf : "",
		set.boot_id ? "" : " (no boot id: no history)");
	agent_loop(&ag);
	ret = EXIT_HEALTHY;
	if (a.once)
		ret = verdict_exit_code(ag.latest.verdict);
	fprintf(stderr, "vigil agent: stopping after %llu cycles: %s\n",
		(unsigned long long)ag.cycles, ag.have_latest ? ag.latest.reason : "no result");
out_agent:
	agent_sock_stop(sock);
	agent_http_stop(http);
	if (have_agent) {
		gpu_worker_release(&carg.gpu);
		agent_release(&ag);
	}
out_env:
	host_env_release(&a.he);
out:
	strlist_release(&a.only);
	strlist_release(&a.skip);
	strlist_release(&a.sets);
	strbuf_release(&err);
	strbuf_release(&boot);
	strbuf_release(&sock_path);
	return ret;
}
