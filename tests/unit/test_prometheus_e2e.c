/*
 * test_prometheus_e2e.c: the shipped rules and dashboard against a real fleet. Seven real agents
 * (vigil agent on roots from tests/scenarios, with the fake NVML) and a real Prometheus (Debian's,
 * loading contrib/prometheus/vigil.rules.yml, scraping every second, storage in the test's
 * directory): a healthy 8xH200 host (gpu-healthy-8xh200 with the snapshot keys of the telemetry
 * fields it predates), one whose NVML raises Xid 79 and whose kernel log is kernel-xid79's, one
 * whose NVML cannot initialise (unknown), one whose result goes stale (agent.max-age 1 s,
 * interval an hour), one whose GPU 1 is held by HW thermal slowdown, one whose agent is
 * stopped once Prometheus has seen it, and the lent H200 VM replayed from its own NVML snapshot
 * (every GPU panel shows its GPU unless the agent says NVML did not give that field there). Then every query of every panel of contrib/grafana/vigil-fleet.json (parsed out of
 * the file, so a panel added later is queried too) and every alert's expression (as Prometheus
 * loaded it, /api/v1/rules) goes through /api/v1/query, and the series must be the expected
 * ones: which hosts each alert selects, the fleet map's code per host, the problems' labels.
 * The alerts' for: timing is promtool's (tests/prometheus/vigil.rules.test.yml). Skipped with
 * the reason when prometheus is not installed; the per-GPU telemetry parts are skipped, naming
 * the missing vigil_gpu_* family, until the agent exports it.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/strlist.h"

#include <ctype.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void prom_read_src(const char *rel, struct strbuf *out);
void prom_dash_queries(const struct json_value *dash, struct strlist *titles,
		       struct strlist *exprs);
void promql_metric_names(const char *expr, struct strlist *names);
bool prom_have(const char *prog);

enum { H_HEALTHY, H_XID79, H_UNKNOWN, H_STALE, H_THROTTLED, H_STOPPED, H_REAL, NR_HOSTS };

/* scenario: the root under tests/scenarios, or "+NAME": the root built_root() makes. */
static const struct host {
	const char *name, *scenario, *only, *interval, *extra;
} hosts[NR_HOSTS] = {
	[H_HEALTHY] = { "healthy", "+healthy", "gpu", "5", NULL },
	[H_XID79] = { "xid79", "+xid79", "gpu,kernel", "5", NULL },
	[H_UNKNOWN] = { "unknown", "gpu-nvml-init-unknown", "gpu", "5", NULL },
	/* one cycle at the start, then older than its max-age: served as unknown, flagged */
	[H_STALE] = { "stale", "gpu-healthy-8xh200", "gpu", "3600", "agent.max-age=1" },
	[H_THROTTLED] = { "throttled", "gpu-hw-thermal-slowdown", "gpu", "5", NULL },
	[H_STOPPED] = { "stopped", "gpu-healthy-8xh200", "gpu", "5", NULL },
	/* the lent H200 VM's own NVML snapshot (tests/data/telemetry/h200-vm): a real machine's
	 * fields, NVLink absent as on that VM */
	[H_REAL] = { "real-h200-vm", "+real-h200-vm", "gpu", "5", NULL },
};

struct fleet {
	unsigned port[NR_HOSTS], prom_port;
	char instance[NR_HOSTS][32];
	pid_t pid[NR_HOSTS], prom;
	bool telemetry; /* the agents export vigil_gpu_* */
};

static pid_t spawn_env(const char *const *argv, const char *log, const char *env)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (env)
			putenv((char *)env);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static void url_escape(struct strbuf *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
			strbuf_addch(out, (char)c);
		else
			strbuf_addf(out, "%%%02X", c);
	}
}

/* GET path on Prometheus, the JSON answer (status "success") or NULL. */
static struct json_value *prom_get(const struct fleet *f, const char *path)
{
	struct strbuf body = STRBUF_INIT;
	struct json_value *v = NULL;
	if (test_http(f->prom_port, "GET", path, &body) == 200) {
		v = json_parse(body.buf, body.len, NULL);
		const char *st = v ? json_get_string(v, "status") : NULL;
		if (!st || strcmp(st, "success")) {
			json_free(v);
			v = NULL;
		}
	}
	strbuf_release(&body);
	return v;
}

/* An instant query's result array (kept in *root), or NULL with the answer in *why. */
static const struct json_value *query(const struct fleet *f, const char *expr,
				      struct json_value **root, struct strbuf *why)
{
	struct strbuf path = STRBUF_INIT, body = STRBUF_INIT;
	strbuf_addstr(&path, "/api/v1/query?query=");
	url_escape(&path, expr);
	int code = test_http(f->prom_port, "GET", path.buf, &body);
	*root = code == 200 ? json_parse(body.buf, body.len, NULL) : NULL;
	const struct json_value *r = *root ? json_path(*root, "data.result") : NULL;
	if (!r || r->type != JSON_ARRAY) {
		r = NULL;
		if (why)
			strbuf_addf(why, "HTTP %d: %s", code, body.buf);
	}
	strbuf_release(&path);
	strbuf_release(&body);
	return r;
}

static int host_of(const struct fleet *f, const struct json_value *series)
{
	const char *inst = json_path(series, "metric.instance")
				   ? json_path(series, "metric.instance")->string
				   : NULL;
	for (int h = 0; inst && h < NR_HOSTS; h++)
		if (!strcmp(inst, f->instance[h]))
			return h;
	return -1;
}

static double value_of(const struct json_value *series)
{
	const struct json_value *v = json_path(series, "value.1");
	return v && v->type == JSON_STRING ? strtod(v->string, NULL) : -1;
}

/* The hosts an expression selects, as a bit set (series of other instances: bit NR_HOSTS). */
static unsigned hosts_selected(const struct fleet *f, const char *expr)
{
	struct json_value *root;
	struct strbuf why = STRBUF_INIT;
	const struct json_value *r = query(f, expr, &root, &why);
	CHECK_MSG(r, "query %s: %s", expr, why.buf);
	unsigned set = 0;
	for (size_t i = 0; i < r->nr; i++) {
		int h = host_of(f, r->items[i]);
		set |= 1u << (h < 0 ? NR_HOSTS : h);
	}
	json_free(root);
	strbuf_release(&why);
	return set;
}

static void describe(struct strbuf *out, unsigned set)
{
	for (int h = 0; h <= NR_HOSTS; h++)
		if (set & (1u << h))
			strbuf_addf(out, " %s", h < NR_HOSTS ? hosts[h].name : "(another instance)");
	if (!set)
		strbuf_addstr(out, " (none)");
}

/* Poll until expr's value per host is want[host] (-1: no series) or secs pass. */
static bool wait_codes(const struct fleet *f, const char *expr, const double *want,
		       unsigned secs, struct strbuf *got)
{
	uint64_t end = mono_ms() + secs * 1000u;
	for (;;) {
		double have[NR_HOSTS];
		struct json_value *root;
		for (int h = 0; h < NR_HOSTS; h++)
			have[h] = -1;
		const struct json_value *r = query(f, expr, &root, NULL);
		for (size_t i = 0; r && i < r->nr; i++) {
			int h = host_of(f, r->items[i]);
			if (h >= 0)
				have[h] = value_of(r->items[i]);
		}
		json_free(root);
		bool ok = true;
		for (int h = 0; h < NR_HOSTS; h++)
			ok &= have[h] == want[h];
		if (ok || mono_ms() >= end) {
			strbuf_reset(got);
			for (int h = 0; h < NR_HOSTS; h++)
				strbuf_addf(got, " %s=%g (want %g)", hosts[h].name, have[h], want[h]);
			return ok;
		}
		usleep(250000);
	}
}

/*
 * Wait until Prometheus holds at least n scrapes of every live agent (all but skip), and the
 * rules were evaluated on them: a recording rule over increase() or rate() has a series only
 * from a host's second sample on, and on a loaded machine the panels were checked once with
 * one sample of the real H200 VM's agent (CI of 2026-12-04: no series of 'ECC errors per
 * hour' for it).
 */
static bool wait_samples(const struct fleet *f, unsigned n, int skip, unsigned secs)
{
	char expr[96];
	snprintf(expr, sizeof(expr), "count_over_time(vigil_agent_up[1d])");
	uint64_t end = mono_ms() + secs * 1000u;
	for (;;) {
		double have[NR_HOSTS] = { 0 };
		struct json_value *root;
		const struct json_value *r = query(f, expr, &root, NULL);
		for (size_t i = 0; r && i < r->nr; i++) {
			int h = host_of(f, r->items[i]);
			if (h >= 0)
				have[h] = value_of(r->items[i]);
		}
		json_free(root);
		bool ok = true;
		for (int h = 0; h < NR_HOSTS; h++)
			ok &= h == skip || have[h] >= n;
		if (ok) {
			usleep(2 * 1000000); /* two rule evaluations (evaluation_interval: 1s) */
			return true;
		}
		if (mono_ms() >= end)
			return false;
		usleep(250000);
	}
}

static void copy_tree(const char *src, const char *dst)
{
	DIR *d = opendir(src);
	CHECK_MSG(d, "cannot list %s", src);
	struct dirent *e;
	test_mkdir(dst, ".");
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct strbuf from = STRBUF_INIT, to = STRBUF_INIT, text = STRBUF_INIT;
		struct stat st;
		strbuf_addf(&from, "%s/%s", src, e->d_name);
		strbuf_addf(&to, "%s/%s", dst, e->d_name);
		CHECK(stat(from.buf, &st) == 0);
		if (S_ISDIR(st.st_mode)) {
			copy_tree(from.buf, to.buf);
		} else {
			CHECK(read_file_bounded(from.buf, &text, 1 << 20, NULL) == 0);
			test_write_bytes(dst, e->d_name, text.buf, text.len);
		}
		strbuf_release(&from);
		strbuf_release(&to);
		strbuf_release(&text);
	}
	closedir(d);
}

/*
 * The healthy H200 scenario with the telemetry fields its snapshot predates (HBM temperature,
 * memory clock, utilisation, memory used: the keys of docs/nvml-snapshot.md, values of an idle
 * H200), so every GPU panel has series. "xid79": the same host whose NVML raises Xid 79 on GPU 3
 * and whose kernel log is kernel-xid79's (the GPU fell off the bus).
 */
static void built_root(const char *name, const char *dir, struct strbuf *root)
{
	struct strbuf src = STRBUF_INIT, snap = STRBUF_INIT, out = STRBUF_INIT;
	bool xid = !strcmp(name, "xid79");
	strbuf_reset(root);
	strbuf_addf(root, "%s/root-%s", dir, name);
	if (!strcmp(name, "real-h200-vm")) {
		test_src_path(&src, "tests/scenarios/gpu-real-h200-vm/root");
		copy_tree(src.buf, root->buf);
		test_src_path(&src, "tests/data/telemetry/h200-vm/nvml.snapshot");
		CHECK(read_file_bounded(src.buf, &snap, 1 << 20, NULL) == 0);
		test_write_bytes(root->buf, "nvml.snapshot", snap.buf, snap.len);
		test_write(root->buf, "proc/sys/kernel/random/boot_id",
			   "3e9a7c1b-5d2f-4b8e-a6c4-9f0e1d2c3b4a\n");
		strbuf_release(&src);
		strbuf_release(&snap);
		return;
	}
	test_src_path(&src, "tests/scenarios/gpu-healthy-8xh200/root");
	copy_tree(src.buf, root->buf);
	strbuf_addstr(&src, "/nvml.snapshot");
	CHECK(read_file_bounded(src.buf, &snap, 1 << 20, NULL) == 0);
	bool global = true;
	for (const char *l = snap.buf; *l;) {
		size_t n = strcspn(l, "\n");
		if (global && starts_with(l, "[gpu ")) {
			global = false;
			if (xid)
				strbuf_addstr(&out, "xid_event 3 79\n\n");
		}
		strbuf_add(&out, l, n);
		strbuf_addch(&out, '\n');
		if (starts_with(l, "[gpu ")) {
			strbuf_addstr(&out, "temperature_memory 36\nmem_clock_mhz 3201\n"
					    "utilization_gpu 0\nmemory_used_bytes 553648128\n");
			if (xid && starts_with(l, "[gpu 3]"))
				strbuf_addstr(&out, "supported_event_types 0x8\n");
		}
		l += n + (l[n] == '\n');
	}
	test_write_bytes(root->buf, "nvml.snapshot", out.buf, out.len);
	/* a boot id: the agent keeps the Xids NVML reported per boot (nvml-xid.json) */
	test_write(root->buf, "proc/sys/kernel/random/boot_id",
		   xid ? "0d6f2b8e-3c41-4e7a-9b5d-7a1e2c3f4b60\n"
		       : "8a4c1e2f-6b3d-4f5a-8c7e-1d2b3a4c5e6f\n");
	if (xid) {
		strbuf_reset(&snap);
		test_src_path(&src, "tests/scenarios/kernel-xid79/root");
		strbuf_addstr(&src, "/dev/kmsg");
		CHECK(read_file_bounded(src.buf, &snap, 1 << 20, NULL) == 0);
		test_write_bytes(root->buf, "dev/kmsg", snap.buf, snap.len);
	}
	strbuf_release(&src);
	strbuf_release(&snap);
	strbuf_release(&out);
}

static void start_fleet(struct fleet *f, const char *dir)
{
	static char nvml_env[1024];
	snprintf(nvml_env, sizeof(nvml_env), "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
	unsigned base = 40000 + (unsigned)(getpid() % 1000) * 8;
	struct strbuf cfg = STRBUF_INIT, rules = STRBUF_INIT;
	test_src_path(&rules, "contrib/prometheus/vigil.rules.yml");
	strbuf_addf(&cfg,
		    "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
		    "  evaluation_interval: 1s\nrule_files: ['%s']\n"
		    "scrape_configs:\n  - job_name: vigil\n    static_configs:\n      - targets:\n",
		    rules.buf);
	for (int h = 0; h < NR_HOSTS; h++) {
		const struct host *ho = &hosts[h];
		char root[700], state[700], listen[64], log[700];
		struct strbuf r = STRBUF_INIT;
		f->port[h] = base + (unsigned)h;
		snprintf(f->instance[h], sizeof(f->instance[h]), "127.0.0.1:%u", f->port[h]);
		if (ho->scenario[0] == '+') {
			built_root(ho->scenario + 1, dir, &r);
			snprintf(root, sizeof(root), "%s", r.buf);
		} else {
			test_src_path(&r, "tests/scenarios/");
			snprintf(root, sizeof(root), "%s%s/root", r.buf, ho->scenario);
		}
		snprintf(state, sizeof(state), "%s/state-%s", dir, ho->name);
		snprintf(listen, sizeof(listen), "%s", f->instance[h]);
		snprintf(log, sizeof(log), "%s/agent-%s.log", dir, ho->name);
		const char *argv[] = { test_vigil_bin(), "agent",     "--root",     root,
				       "--only",	 ho->only,    "--host",     ho->name,
				       "--state-dir",	 state,	      "--listen",   listen,
				       "--interval",	 ho->interval, "--jitter",  "0",
				       ho->extra ? "-c" : NULL, ho->extra, NULL };
		f->pid[h] = spawn_env(argv, log, nvml_env);
		strbuf_addf(&cfg, "        - '%s'\n", f->instance[h]);
		strbuf_release(&r);
	}
	test_write(dir, "prometheus.yml", cfg.buf);
	char cfgarg[700], data[700], web[64], log[700];
	snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s/prometheus.yml", dir);
	snprintf(data, sizeof(data), "--storage.tsdb.path=%s/prom-data", dir);
	f->prom_port = base + NR_HOSTS;
	snprintf(web, sizeof(web), "--web.listen-address=127.0.0.1:%u", f->prom_port);
	snprintf(log, sizeof(log), "%s/prometheus.log", dir);
	const char *prom[] = { "prometheus", cfgarg, data, web, "--log.level=warn", NULL };
	f->prom = spawn_env(prom, log, NULL);
	strbuf_release(&cfg);
	strbuf_release(&rules);
}

static void fail_with_logs(const char *dir, const char *what)
{
	struct strbuf l = STRBUF_INIT, p = STRBUF_INIT;
	strbuf_addf(&p, "%s/prometheus.log", dir);
	read_file_bounded(p.buf, &l, 1 << 14, NULL);
	for (int h = 0; h < NR_HOSTS; h++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "%s/agent-%s.log", dir, hosts[h].name);
		strbuf_addf(&l, "\n--- agent %s:\n", hosts[h].name);
		read_file_bounded(p.buf, &l, 1 << 12, NULL);
	}
	CHECK_MSG(0, "%s; the logs:\n%s", what, l.buf);
}

/* The panel's query as Grafana sends it with "All" hosts chosen. */
static void expand(struct strbuf *out, const char *expr)
{
	strbuf_reset(out);
	for (const char *p = expr; *p;) {
		if (starts_with(p, "${instance}")) {
			strbuf_addstr(out, ".*");
			p += strlen("${instance}");
		} else if (starts_with(p, "$instance")) {
			strbuf_addstr(out, ".*");
			p += strlen("$instance");
		} else {
			strbuf_addch(out, *p++);
		}
	}
}

static const char *label(const struct json_value *series, const char *name)
{
	const struct json_value *m = json_get(series, "metric");
	return m ? json_get_string(m, name) : NULL;
}

/* Does some series of host h carry every label=value pair of kv (NULL-terminated)? */
static bool has_series(const struct fleet *f, const struct json_value *r, int h,
		       const char *const *kv)
{
	for (size_t i = 0; i < r->nr; i++) {
		if (host_of(f, r->items[i]) != h)
			continue;
		bool all = true;
		for (size_t k = 0; kv[k]; k += 2) {
			const char *v = label(r->items[i], kv[k]);
			all &= v && !strcmp(v, kv[k + 1]);
		}
		if (all)
			return true;
	}
	return false;
}

/* What the panels that name a host's trouble must show, beyond "some series". */
static void check_panel(const struct fleet *f, const char *title, const char *expr,
			const struct json_value *r)
{
	if (strstr(expr, "vigil_problem")) {
		const char *xid[] = { "check", "kernel", "action", "REBOOT", "status", "fail", NULL };
		const char *thermal[] = { "check", "gpu", "code", "clock_events", "action",
					  "INSPECT_HARDWARE", NULL };
		const char *none[] = { NULL };
		CHECK_MSG(has_series(f, r, H_XID79, xid), "'%s': no kernel REBOOT problem on the "
			  "Xid 79 host", title);
		CHECK_MSG(has_series(f, r, H_THROTTLED, thermal), "'%s': no gpu clock_events "
			  "problem on the throttled host", title);
		CHECK_MSG(!has_series(f, r, H_HEALTHY, none), "'%s': a problem on the healthy host",
			  title);
	}
	if (strstr(expr, "vigil_agent_check_unknown")) {
		const char *gpu[] = { "check", "gpu", NULL };
		const char *none[] = { NULL };
		CHECK_MSG(has_series(f, r, H_UNKNOWN, gpu), "'%s': the unknown host's gpu check is "
			  "not listed", title);
		CHECK_MSG(!has_series(f, r, H_HEALTHY, none), "'%s': the healthy host is listed",
			  title);
	}
	if (strstr(expr, "vigil_agent_result_stale")) {
		for (size_t i = 0; i < r->nr; i++) {
			int h = host_of(f, r->items[i]);
			if (h == H_STALE || h == H_HEALTHY)
				CHECK_MSG(value_of(r->items[i]) == (h == H_STALE),
					  "'%s': %s has vigil_agent_result_stale %g", title,
					  hosts[h].name, value_of(r->items[i]));
		}
	}
	if (strstr(expr, "vigil_gpu_xid_errors_total")) {
		const char *xid[] = { "gpu", "3", "xid", "79", NULL };
		CHECK_MSG(has_series(f, r, H_XID79, xid), "'%s': no Xid 79 on GPU 3 of the Xid 79 "
			  "host", title);
	}
	if (strstr(expr, "vigil_gpu_temperature_celsius")) {
		const char *g7[] = { "gpu", "7", "model", "NVIDIA H200", NULL };
		CHECK_MSG(has_series(f, r, H_HEALTHY, g7), "'%s': no GPU 7 on the healthy host",
			  title);
	}
	if (strstr(expr, "vigil_gpu_throttle_active") && r->nr) {
		const char *hw[] = { "gpu", "1", "reason", "hw_thermal", NULL };
		bool on = false;
		for (size_t i = 0; i < r->nr; i++)
			if (host_of(f, r->items[i]) == H_THROTTLED && value_of(r->items[i]) == 1) {
				const char *g = label(r->items[i], "gpu"),
					   *why = label(r->items[i], "reason");
				on |= g && why && !strcmp(g, hw[1]) && !strcmp(why, hw[3]);
			}
		CHECK_MSG(on, "'%s': GPU 1 of the throttled host is not hw_thermal 1", title);
	}
}

/* Which hosts each alert's expression selects; gpu: it needs the per-GPU telemetry. */
static const struct {
	const char *alert;
	unsigned hosts;
	bool gpu;
} alert_want[] = {
	{ "VigilHostUnhealthy", 1u << H_XID79 | 1u << H_THROTTLED, false },
	{ "VigilHostUnknown", 1u << H_UNKNOWN, false },
	{ "VigilAgentStale", 1u << H_STALE, false },
	{ "VigilAgentDown", 1u << H_STOPPED, false },
	/* the counters of a fixture stand still: nothing rises */
	{ "VigilGpuCorrectedErrorsRising", 0, true },
	{ "VigilGpuThrottling", 1u << H_THROTTLED, true },
};

static size_t check_alerts(const struct fleet *f, struct strbuf *skipped)
{
	struct json_value *rules = prom_get(f, "/api/v1/rules");
	CHECK_MSG(rules, "GET /api/v1/rules failed");
	const struct json_value *groups = json_path(rules, "data.groups");
	size_t n = 0;
	for (size_t g = 0; groups && g < groups->nr; g++) {
		const struct json_value *rs = json_get(groups->items[g], "rules");
		for (size_t i = 0; rs && i < rs->nr; i++) {
			const struct json_value *rule = rs->items[i];
			const char *name = json_get_string(rule, "name");
			const char *type = json_get_string(rule, "type");
			const char *health = json_get_string(rule, "health");
			const char *q = json_get_string(rule, "query");
			CHECK_MSG(health && !strcmp(health, "ok"), "rule %s: health %s, %s", name,
				  health, json_get_string(rule, "lastError"));
			if (strcmp(type, "alerting"))
				continue;
			size_t k = 0;
			while (k < ARRAY_SIZE(alert_want) && strcmp(alert_want[k].alert, name))
				k++;
			CHECK_MSG(k < ARRAY_SIZE(alert_want), "alert %s has no expectation here", name);
			if (alert_want[k].gpu && !f->telemetry) {
				strbuf_addf(skipped, " alert %s;", name);
				continue;
			}
			unsigned got = hosts_selected(f, q);
			struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
			describe(&a, got);
			describe(&b, alert_want[k].hosts);
			CHECK_MSG(got == alert_want[k].hosts, "alert %s selects%s, expected%s (%s)",
				  name, a.buf, b.buf, q);
			strbuf_release(&a);
			strbuf_release(&b);
			n++;
		}
	}
	json_free(rules);
	return n;
}

/* The vigil_gpu_telemetry_field_ok field each GPU family (or recording rule) comes from. */
static const char *field_of(const char *name)
{
	static const char *const map[][2] = {
		{ "temperature_celsius", "temperature" },
		{ "memory_temperature_celsius", "memory_temperature" },
		{ "power_watts", "power" },
		{ "power_limit_watts", "power_limit" },
		{ "sm_clock_hertz", "sm_clock" },
		{ "memory_clock_hertz", "memory_clock" },
		{ "utilization_ratio", "utilization" },
		{ "memory_used_bytes", "memory_used" },
		{ "throttle_active", "throttle" },
		{ "ecc_errors", "ecc_errors" },
		{ "remap", "remapped_rows" },
		{ "nvlink_errors", "nvlink_errors" },
		{ "pcie_replays", "pcie_replays" },
		{ "xid_errors", "xid_errors" },
	};
	const char *suffix = starts_with(name, "vigil_gpu_") ? name + strlen("vigil_gpu_")
			     : starts_with(name, "vigil:gpu_") ? name + strlen("vigil:gpu_")
							      : NULL;
	const char *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; suffix && i < ARRAY_SIZE(map); i++)
		if (starts_with(suffix, map[i][0]) && strlen(map[i][0]) > best_len) {
			best = map[i][1];
			best_len = strlen(map[i][0]);
		}
	return best; /* NULL: info, field_ok, timestamp: every GPU has them */
}

/*
 * On the real H200 VM every GPU query shows its GPU, unless the agent says NVML did not give
 * that field there (field_ok 0: NVLink on that VM), or the field is the Xid counters, which
 * exist per code once an Xid is seen (none was on that VM).
 */
static void check_real_host(const struct fleet *f, const char *title, const char *expr,
			    const struct json_value *r)
{
	for (size_t i = 0; i < r->nr; i++)
		if (host_of(f, r->items[i]) == H_REAL)
			return;
	struct strlist names = STRLIST_INIT;
	promql_metric_names(expr, &names);
	for (size_t i = 0; i < names.nr; i++) {
		const char *field = field_of(names.items[i]);
		CHECK_MSG(field, "'%s': no series of the real H200 VM for %s", title, expr);
		if (!strcmp(field, "xid_errors"))
			continue;
		char q[256];
		snprintf(q, sizeof(q), "vigil_gpu_telemetry_field_ok{instance=\"%s\",field=\"%s\"} == 0",
			 f->instance[H_REAL], field);
		CHECK_MSG(hosts_selected(f, q) == 1u << H_REAL,
			  "'%s': no series of the real H200 VM, which reads its %s: %s", title, field,
			  expr);
	}
	strlist_release(&names);
}

static bool needs_gpu(const char *expr)
{
	struct strlist names = STRLIST_INIT;
	bool gpu = false;
	promql_metric_names(expr, &names);
	for (size_t i = 0; i < names.nr; i++)
		gpu |= starts_with(names.items[i], "vigil_gpu_") ||
		       starts_with(names.items[i], "vigil:gpu_");
	strlist_release(&names);
	return gpu;
}

static size_t check_panels(const struct fleet *f, struct strbuf *skipped)
{
	struct strbuf text = STRBUF_INIT, e = STRBUF_INIT;
	struct strlist titles = STRLIST_INIT, exprs = STRLIST_INIT;
	prom_read_src("contrib/grafana/vigil-fleet.json", &text);
	struct json_value *d = json_parse(text.buf, text.len, NULL);
	CHECK(d);
	prom_dash_queries(d, &titles, &exprs);
	CHECK(exprs.nr >= 12);
	size_t n = 0;
	for (size_t i = 0; i < exprs.nr; i++) {
		const char *title = titles.items[i];
		struct json_value *root;
		struct strbuf why = STRBUF_INIT;
		expand(&e, exprs.items[i]);
		CHECK_MSG(!strchr(e.buf, '$'), "'%s': a variable the test does not know: %s", title,
			  e.buf);
		const struct json_value *r = query(f, e.buf, &root, &why);
		CHECK_MSG(r, "panel '%s': %s: %s", title, e.buf, why.buf);
		if (needs_gpu(e.buf) && !f->telemetry) {
			char t[160];
			snprintf(t, sizeof(t), " '%s';", title);
			if (!strstr(skipped->buf, t))
				strbuf_addstr(skipped, t);
		} else {
			CHECK_MSG(r->nr, "panel '%s' shows no series: %s", title, e.buf);
			check_panel(f, title, e.buf, r);
			if (needs_gpu(e.buf))
				check_real_host(f, title, e.buf, r);
			n++;
		}
		json_free(root);
		strbuf_release(&why);
	}
	json_free(d);
	strbuf_release(&text);
	strbuf_release(&e);
	strlist_release(&titles);
	strlist_release(&exprs);
	return n;
}

/* The $instance variable's label_values(METRIC, LABEL), as Grafana asks Prometheus for it:
 * every host's instance is offered. */
static void check_instance_variable(const struct fleet *f)
{
	struct strbuf text = STRBUF_INIT, path = STRBUF_INIT;
	prom_read_src("contrib/grafana/vigil-fleet.json", &text);
	struct json_value *d = json_parse(text.buf, text.len, NULL);
	const struct json_value *vars = d ? json_path(d, "templating.list") : NULL;
	const char *q = NULL;
	for (size_t i = 0; vars && i < vars->nr; i++)
		if (!strcmp(json_get_string(vars->items[i], "name"), "instance"))
			q = json_get_string(vars->items[i], "query");
	char metric[128], lab[64];
	CHECK_MSG(q && sscanf(q, "label_values(%127[a-z_:], %63[a-z_])", metric, lab) == 2,
		  "$instance: not label_values(METRIC, LABEL): %s", q ? q : "(none)");
	strbuf_addf(&path, "/api/v1/label/%s/values?match%%5B%%5D=%s", lab, metric);
	struct json_value *v = prom_get(f, path.buf);
	const struct json_value *list = v ? json_get(v, "data") : NULL;
	CHECK_MSG(list && list->type == JSON_ARRAY, "GET %s failed", path.buf);
	for (int h = 0; h < NR_HOSTS; h++) {
		bool found = false;
		for (size_t i = 0; i < list->nr; i++)
			found |= list->items[i]->type == JSON_STRING &&
				 !strcmp(list->items[i]->string, f->instance[h]);
		CHECK_MSG(found, "$instance does not offer %s (%s)", hosts[h].name, q);
	}
	json_free(v);
	json_free(d);
	strbuf_release(&text);
	strbuf_release(&path);
}

TEST_TIMEOUT(prometheus_e2e_fleet_panels_and_alerts, 120)
{
	if (!prom_have("prometheus"))
		SKIP("prometheus is not installed (Debian: prometheus)");
	const char *dir = test_tmpdir();
	struct fleet f;
	struct strbuf got = STRBUF_INIT, skipped = STRBUF_INIT;
	memset(&f, 0, sizeof(f));
	uint64_t t0 = mono_ms();
	start_fleet(&f, dir);

	const double all_up[NR_HOSTS] = { 1, 1, 1, 1, 1, 1, 1 };
	if (!wait_codes(&f, "up", all_up, 30, &got))
		fail_with_logs(dir, "Prometheus never saw every agent up");
	/* Prometheus has seen this agent: now it stops answering */
	kill(f.pid[H_STOPPED], SIGTERM);
	int st;
	waitpid(f.pid[H_STOPPED], &st, 0);

	/* healthy 0, unhealthy 1, unknown (and stale) 2, agent down 3 */
	const double codes[NR_HOSTS] = { [H_HEALTHY] = 0, [H_XID79] = 1, [H_UNKNOWN] = 2,
					 [H_STALE] = 2,	  [H_THROTTLED] = 1, [H_STOPPED] = 3,
					 [H_REAL] = 0 };
	if (!wait_codes(&f, "vigil:host_verdict:code", codes, 30, &got)) {
		struct strbuf m = STRBUF_INIT;
		strbuf_addf(&m, "vigil:host_verdict:code:%s", got.buf);
		fail_with_logs(dir, m.buf);
	}
	/* the stopped agent's up is 0 on the "Agent up" panel's query */
	const double up[NR_HOSTS] = { 1, 1, 1, 1, 1, 0, 1 };
	CHECK_MSG(wait_codes(&f, "up and on (instance, job) max_over_time(vigil_agent_up[1d])", up,
			     5, &got),
		  "agent up:%s", got.buf);
	f.telemetry = hosts_selected(&f, "count by (instance) ({__name__=~\"vigil_gpu_.+\"})") &
		      (1u << H_HEALTHY);

	CHECK_MSG(wait_samples(&f, 3, H_STOPPED, 30),
		  "Prometheus did not scrape every live agent 3 times in 30 s");
	check_instance_variable(&f);
	size_t panels = check_panels(&f, &skipped);
	size_t alerts = check_alerts(&f, &skipped);
	double secs = (double)(mono_ms() - t0) / 1000.0;

	kill(f.prom, SIGTERM);
	for (int h = 0; h < NR_HOSTS; h++)
		if (h != H_STOPPED) {
			kill(f.pid[h], SIGTERM);
			waitpid(f.pid[h], &st, 0);
			CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent %s ended with %d",
				  hosts[h].name, st);
		}
	waitpid(f.prom, &st, 0);
	fprintf(stderr, "prometheus e2e: %zu panel queries and %zu alerts checked in %.1f s\n",
		panels, alerts, secs);
	strbuf_release(&got);
	if (skipped.len) {
		static char why[2048];
		snprintf(why, sizeof(why),
			 "the agents export no vigil_gpu_* family (per-GPU telemetry, issue 21, not "
			 "merged yet): the fleet's %zu panel queries and %zu alerts passed; not "
			 "checked:%s", panels, alerts, skipped.buf);
		SKIP(why);
	}
	strbuf_release(&skipped);
}
