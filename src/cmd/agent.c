/* agent.c: 'vigil agent', the per-host daemon (the core is src/agent/agent.c). */
#include "cmd.h"
#include "../lib/forkgate.h"
#include "common.h"
#include "../agent/agent.h"
#include "../agent/gpuworker.h"
#include "../agent/http.h"
#include "../agent/notify.h"
#include "agent_log.h"
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
	"than agent.escalate-after boots becomes INSPECT_HARDWARE. Stops on SIGTERM or SIGINT;\n"
	"SIGHUP reads the configuration again (interval, jitter, timeout, max-age, escalate-after,\n"
	"gpu-worker and every check's settings; the listen address, the socket, the textfile and\n"
	"the state directory take a restart). Under systemd the lines go to the journal with\n"
	"their priority and the fields VIGIL_CHECK, VIGIL_CODE and VIGIL_DEVICE.\n"
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
	"initialised; false: a fresh process each cycle, as the other checks), agent.gpu-telemetry\n"
	"(default true: per-GPU telemetry in /metrics, read by that process; docs/telemetry.md).\n"
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

static void worker_metrics(void *arg, struct strbuf *out)
{
	(void)arg;
	gpu_worker_metrics(out);
}

/* GET /gpu-reading (http.h): a worker of the socket's own, so that the cycle's worker and the
 * socket's callers never share one pipe; the first line says which root it read. */
struct reading_arg {
	struct gpu_worker w;
	const char *root;
};

static int gpu_reading(void *arg, bool skip_counters, struct strbuf *out, struct strbuf *err)
{
	struct reading_arg *r = arg;
	/* called inside the socket thread's fork gate, which a fork must not be made in */
	forkgate_leave();
	int ready = gpu_worker_ready(&r->w, err);
	forkgate_enter();
	if (ready < 0)
		return -1;
	strbuf_addf(out, "# vigil-agent-root %s\n", r->root);
	return gpu_worker_reading(&r->w, skip_counters, AGENT_READING_TIMEOUT_MS, out, err);
}

static double worker_cpu(void *arg)
{
	return gpu_worker_cpu(&((struct collect_arg *)arg)->gpu);
}

struct log_state {
	struct agent *ag;
	bool failing[AGENT_FILE__COUNT];
	bool ready; /* systemd was told READY=1 */
};

/* systemd's status line (systemctl status) after each cycle, READY=1 after the first. The
 * reason is escaped: a newline in it would start another notification field. */
static void notify_cycle(struct log_state *ls, const struct report *rep)
{
	struct strbuf st = STRBUF_INIT;
	if (!ls->ready)
		strbuf_addstr(&st, "READY=1\n");
	strbuf_addstr(&st, "STATUS=");
	const char *v = verdict_name(rep->verdict);
	if (!starts_with(rep->reason, v))
		strbuf_addf(&st, "%s: ", v);
	strbuf_add_excerpt(&st, rep->reason, 400);
	notify_send(st.buf);
	ls->ready = true;
	strbuf_release(&st);
}

static const char *const file_what[AGENT_FILE__COUNT] = { "cached report", "history",
							   "Prometheus" };

/* The result a verdict line is about: the worst one (fail, then unknown, then warn). */
static void worst_fields(const struct report *rep, struct agent_log_fields *f)
{
	const struct check_result *worst = NULL;
	for (size_t i = 0; i < rep->nr; i++)
		if (rep->results[i].status > STATUS_OK &&
		    (!worst || rep->results[i].status > worst->status))
			worst = &rep->results[i];
	memset(f, 0, sizeof(*f));
	if (!worst)
		return;
	const struct finding *w = result_worst(worst);
	f->check = worst->name;
	if (w && w->status > STATUS_OK) {
		f->code = w->code;
		f->device = w->device;
	}
}

/* The journal gets a line when the verdict or its reason changes, and when a file's writes start
 * failing (with the system's error) or work again. Its priority is the verdict's: err when
 * unhealthy, warning when unknown or healthy with warnings, info when all is well. */
static void log_cycle(void *arg, const struct report *rep, bool changed)
{
	struct log_state *ls = arg;
	struct agent *ag = ls->ag;
	if (changed) {
		struct agent_log_fields f;
		worst_fields(rep, &f);
		int prio = rep->verdict == VERDICT_UNHEALTHY ? ALOG_ERR
			   : rep->verdict == VERDICT_UNKNOWN || f.check ? ALOG_WARNING
									 : ALOG_INFO;
		/* the reason names the verdict itself ("healthy (1 warning)", "unknown: ...")
		 * except when unhealthy ("kernel: Xid 79 ...") */
		const char *v = verdict_name(rep->verdict);
		if (starts_with(rep->reason, v))
			agent_logf(prio, &f, "%s", rep->reason);
		else
			agent_logf(prio, &f, "%s: %s", v, rep->reason);
	}
	for (int i = 0; i < AGENT_FILE__COUNT; i++) {
		bool failing = !ag->write_ok[i];
		if (failing && !ls->failing[i])
			agent_logf(ALOG_WARNING, NULL, "cannot write its %s file: %s; going on",
				   file_what[i],
				   ag->write_error[i] ? ag->write_error[i] : "no reason given");
		else if (!failing && ls->failing[i])
			agent_logf(ALOG_INFO, NULL, "writes its %s file again", file_what[i]);
		ls->failing[i] = failing;
	}
	notify_cycle(ls, rep);
}

static void on_stop(int sig)
{
	UNUSED(sig);
	agent_stop_requested = 1;
}

static void on_hup(int sig)
{
	UNUSED(sig);
	agent_reload_requested = 1;
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

/* A number from the option, else the configuration, else def; -1 with *err on a bad value
 * (*bad_opt set when it is the option's). */
static int seconds(const struct config *cfg, const char *opt, const char *key, double def,
		   double min, double *out, bool *bad_opt, struct strbuf *err)
{
	if (opt) {
		if (!parse_double(opt, out) || *out < min || *out > 86400 * 7) {
			*bad_opt = true;
			return error_set(err, "--%s wants seconds (at least %g), not '%s'", key, min,
					 opt);
		}
		return 0;
	}
	if (config_get_double(cfg, "agent", key, def, out, err) < 0)
		return -1;
	if (*out < min || *out > 86400 * 7)
		return error_set(err, "agent.%s: %g is out of range (%g to %d)", key, *out, min,
				 86400 * 7);
	return 0;
}

/* What SIGHUP may change: read at start and again on each reload. */
struct agent_conf {
	struct agent_settings set; /* interval, jitter, max-age, escalate-after */
	double timeout_s;
	bool gpu_worker, gpu_telemetry;
};

static int read_conf(const struct config *cfg, const struct agent_args *a, struct agent_conf *c,
		     bool *bad_opt, struct strbuf *err)
{
	double escalate;
	memset(c, 0, sizeof(*c));
	if (seconds(cfg, a->interval, "interval", 60, 1, &c->set.interval_s, bad_opt, err) < 0 ||
	    seconds(cfg, a->jitter, "jitter", c->set.interval_s / 10, 0, &c->set.jitter_s, bad_opt,
		    err) < 0 ||
	    seconds(cfg, NULL, "max-age", 3 * c->set.interval_s, 1, &c->set.max_age_s, bad_opt,
		    err) < 0 ||
	    seconds(cfg, a->timeout, "timeout", 30, 1, &c->timeout_s, bad_opt, err) < 0 ||
	    seconds(cfg, NULL, "escalate-after", 2, 0, &escalate, bad_opt, err) < 0)
		return -1;
	c->set.escalate_after = (unsigned)escalate;
	/* An operator turns the worker off before 'nvidia-smi -r' or unloading the driver (it
	 * holds the GPUs open through NVML), or when this NVML misbehaves held open for days;
	 * the gpu check then forks each cycle as the others do. */
	c->gpu_worker = c->gpu_telemetry = true;
	if (config_get_bool(cfg, "agent", "gpu-worker", true, &c->gpu_worker, err) < 0)
		return -1;
	/* per-GPU telemetry in /metrics (docs/telemetry.md), read by the worker alone */
	return config_get_bool(cfg, "agent", "gpu-telemetry", true, &c->gpu_telemetry, err);
}

struct reload_arg {
	struct agent_args *a;
	struct agent *ag;
	struct collect_arg *carg;
	const struct check_ctx *gctx;
};

/* Set where the agent started: what it listens on and writes to is held open or made once. */
static const char *const restart_keys[][2] = {
	{ "agent", "listen" }, { "agent", "socket" }, { "agent", "prom" }, { "core", "state-dir" },
};

static bool same_value(const char *x, const char *y)
{
	return x == y || (x && y && !strcmp(x, y));
}

/*
 * SIGHUP: the configuration file read again, as at start (the same root, host, state directory
 * and -c settings, which win as they did), and validated whole before anything changes: a file
 * that does not parse, a key unknown or out of range, keeps the configuration loaded before and
 * says why (FILE:LINE). Applied: the timing settings and every check's settings (the checks read
 * the configuration each cycle; the gpu worker, which holds its copy, starts again).
 */
static void reload(void *arg)
{
	struct reload_arg *r = arg;
	struct agent_args *a = r->a;
	struct host_env nh;
	struct agent_conf conf;
	struct strbuf err = STRBUF_INIT, kept = STRBUF_INIT;
	bool bad_opt = false;
	notify_send("RELOADING=1");
	memset(&nh, 0, sizeof(nh));
	nh.root = a->he.root;
	nh.config_path = a->he.config_path;
	nh.host = a->he.host;
	nh.state_dir = a->he.state_dir;
	if (host_env_setup(&nh, (const char *const *)a->sets.items, a->sets.nr, &err) < 0 ||
	    read_conf(&nh.cfg, a, &conf, &bad_opt, &err) < 0) {
		agent_logf(ALOG_ERR, NULL, "SIGHUP: configuration not reloaded: %s; keeping the one "
			   "loaded before", err.buf);
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(restart_keys); i++)
		if (!same_value(config_get(&a->he.cfg, restart_keys[i][0], restart_keys[i][1]),
				config_get(&nh.cfg, restart_keys[i][0], restart_keys[i][1])))
			strbuf_addf(&kept, "%s%s.%s", kept.len ? ", " : "", restart_keys[i][0],
				    restart_keys[i][1]);
	/* the new configuration in the place of the old: check_ctx and the gpu worker's
	 * template point at a->he.cfg, which stays where it is */
	config_release(&a->he.cfg);
	a->he.cfg = nh.cfg;
	config_init(&nh.cfg, NULL);
	agent_apply(r->ag, &conf.set);
	r->carg->timeout_s = conf.timeout_s;
	gpu_worker_release(&r->carg->gpu);
	gpu_worker_init(&r->carg->gpu, conf.gpu_worker ? check_find("gpu") : NULL, r->gctx);
	r->carg->gpu.telemetry = conf.gpu_telemetry;
	agent_logf(ALOG_INFO, NULL, "SIGHUP: configuration reloaded: checks every %g s (+-%g s), "
		   "timeout %g s, max-age %g s, escalate-after %u, gpu-worker %s, and the checks' "
		   "settings from this cycle on (agent.listen, agent.socket, agent.prom and the "
		   "state directory take a restart)", conf.set.interval_s, conf.set.jitter_s,
		   conf.timeout_s, conf.set.max_age_s, conf.set.escalate_after,
		   conf.gpu_worker ? "on" : "off");
	if (kept.len)
		agent_logf(ALOG_WARNING, NULL, "SIGHUP: %s changed, which takes a restart: still "
			   "as started until then", kept.buf);
out:
	notify_send("READY=1");
	host_env_release(&nh);
	strbuf_release(&err);
	strbuf_release(&kept);
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
	bool have_agent = false, bad_opt = false;
	char *prom_path = NULL; /* a copy: a reload frees the configuration it came from */

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
	agent_log_setup();
	/* HUP is the agent's own from here on (cmd_dispatch()'s handler would end it, and a
	 * 'systemctl reload' right after the start must not): a flag the loop reads between
	 * cycles. SA_RESTART: a HUP amid a cycle does not fail the checks' reads and waits; the
	 * loop's ppoll() is woken all the same. */
	struct sigaction hup, was;
	memset(&hup, 0, sizeof(hup));
	hup.sa_handler = on_hup;
	hup.sa_flags = SA_RESTART;
	/* an agent started under nohup (HUP ignored by its caller) keeps ignoring it, as every
	 * command does (cmd_dispatch()): a closed terminal is no request to reload */
	if (sigaction(SIGHUP, NULL, &was) < 0 || was.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &hup, NULL);
	if (host_env_setup(&a.he, (const char *const *)a.sets.items, a.sets.nr, &err) < 0) {
		agent_logf(ALOG_ERR, NULL, "%s", err.buf);
		goto out_env; /* what setup allocated before it failed */
	}
	const struct config *cfg = &a.he.cfg;
	struct agent_conf conf;
	struct collect_arg carg = { .a = &a };
	if (read_conf(cfg, &a, &conf, &bad_opt, &err) < 0) {
		if (bad_opt)
			usage_error("agent", "%s", err.buf);
		else
			agent_logf(ALOG_ERR, NULL, "%s", err.buf);
		goto out_env;
	}
	set = conf.set;
	double interval = set.interval_s;
	carg.timeout_s = conf.timeout_s;
	set.state_dir = a.he.state_dir;
	const char *prom = a.prom ? a.prom : config_get(cfg, "agent", "prom");
	prom_path = prom ? xstrdup(prom) : NULL;
	set.prom_path = prom_path;
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
	gpu_worker_init(&carg.gpu, conf.gpu_worker ? check_find("gpu") : NULL, &gctx);
	carg.gpu.telemetry = conf.gpu_telemetry;
	ag.kept_cpu = worker_cpu;
	ag.kept_cpu_arg = &carg;
	ag.more_metrics = worker_metrics;
	struct reading_arg readarg = { .root = fsroot_dir(&a.he.fs) };
	gpu_worker_init(&readarg.w, check_find("gpu"), &gctx);
	ag.gpu_reading = gpu_reading;
	ag.gpu_reading_arg = &readarg;
	struct log_state ls = { &ag, { false }, false };
	ag.on_cycle = log_cycle;
	ag.on_cycle_arg = &ls;
	struct reload_arg rarg = { &a, &ag, &carg, &gctx };
	ag.reload = reload;
	ag.reload_arg = &rarg;
	agent_load_history(&ag);
	if (ag.history_error)
		agent_logf(ALOG_WARNING, NULL, "%s", ag.history_error);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

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
		sigaddset(&block, SIGHUP);
		pthread_sigmask(SIG_BLOCK, &block, &orig);
		http = agent_http_start(&ag, listen, &err);
		pthread_sigmask(SIG_SETMASK, &orig, NULL);
		if (!http) {
			agent_logf(ALOG_ERR, NULL, "%s", err.buf);
			goto out_agent;
		}
	}
	if (sock_path.len) {
		sigset_t block, orig;
		sigemptyset(&block);
		sigaddset(&block, SIGTERM);
		sigaddset(&block, SIGINT);
		sigaddset(&block, SIGHUP);
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
			agent_logf(ALOG_ERR, NULL, "%s", err.buf);
			goto out_agent;
		}
		if (!sock)
			agent_logf(ALOG_WARNING, NULL, "no /health socket: %s; going on", err.buf);
	}
	/* Under systemd's Type=notify: READY=1 after the first cycle, WATCHDOG=1 from this
	 * thread's loop only (notify.h) */
	if (notify_open(&err) < 0)
		agent_logf(ALOG_WARNING, NULL, "%s; going on", err.buf);
	uint64_t wd_ms = notify_watchdog_ms();
	if (wd_ms) {
		ag.alive = notify_alive;
		ag.alive_every_ms = wd_ms / 2 ? wd_ms / 2 : 1;
		if ((double)wd_ms / 1000 < carg.timeout_s + 10)
			agent_logf(ALOG_WARNING, NULL, "the systemd watchdog (%g s) is not well above "
				   "agent.timeout (%g s): a slow cycle gets the agent restarted; "
				   "raise WatchdogSec=", (double)wd_ms / 1000, carg.timeout_s);
	}
	agent_logf(ALOG_INFO, NULL, "%s: checks every %g s (+-%g s), state in %s%s%s%s%s%s%s",
		a.he.host, interval, set.jitter_s, set.state_dir ? set.state_dir : "(none)",
		http ? ", serving http://" : "", http ? listen : "", http ? "/metrics" : "",
		sock ? ", /health on " : "", sock ? sock_path.buf : "",
		set.boot_id ? "" : " (no boot id: no history)");
	agent_loop(&ag);
	notify_send("STOPPING=1");
	ret = EXIT_HEALTHY;
	if (a.once)
		ret = verdict_exit_code(ag.latest.verdict);
	agent_logf(ALOG_INFO, NULL, "stopping after %llu cycle%s: %s",
		   (unsigned long long)ag.cycles, ag.cycles == 1 ? "" : "s",
		   ag.have_latest ? ag.latest.reason : "no result");
out_agent:
	agent_sock_stop(sock);
	agent_http_stop(http);
	if (have_agent) {
		gpu_worker_release(&carg.gpu);
		gpu_worker_release(&readarg.w);
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
	free(prom_path);
	agent_log_close();
	return ret;
}
