/*
 * test_prometheus_rules.c: contrib/prometheus/vigil.rules.yml and contrib/grafana/vigil-fleet.json
 * as the tools that read them see them: 'promtool check rules' accepts the rules, 'promtool test
 * rules' runs tests/prometheus/vigil.rules.test.yml (every alert's for: timing, with a case in
 * which it fires), and the dashboard is a Grafana dashboard whose every panel has the
 * ${datasource} data source and a query, and whose every metric name is one vigil exports or a
 * recording rule of the rules file. test_prometheus_e2e.c runs the same queries against a real
 * Prometheus. The PromQL helpers here (prom_dash_queries, promql_metric_names) serve both files.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/strlist.h"

#include <ctype.h>
#include <dirent.h>
#include <sys/stat.h>

#define RULES_FILE "contrib/prometheus/vigil.rules.yml"
#define RULES_TEST "tests/prometheus/vigil.rules.test.yml"
#define DASHBOARD "contrib/grafana/vigil-fleet.json"

/* Shared with test_prometheus_e2e.c. */
void prom_read_src(const char *rel, struct strbuf *out);
void prom_dash_queries(const struct json_value *dash, struct strlist *titles,
		       struct strlist *exprs);
void promql_metric_names(const char *expr, struct strlist *names);
void prom_rule_names(const char *rules, const char *kind, struct strlist *names);
bool prom_have(const char *prog);

bool prom_have(const char *prog)
{
	const char *argv[] = { prog, "--version", NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 20000;
	bool ok = child_run(&c, NULL) == 0 && c.exited && c.exit_code == 0;
	child_release(&c);
	return ok;
}

void prom_read_src(const char *rel, struct strbuf *out)
{
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	test_src_path(&p, rel);
	CHECK_MSG(read_file_bounded(p.buf, out, 4 << 20, &err) == 0, "%s: %s", rel, err.buf);
	strbuf_release(&p);
	strbuf_release(&err);
}

/* Every (title, expr) of every panel, rows' nested panels included, in the file's order. */
static void walk_panels(const struct json_value *panels, struct strlist *titles,
			struct strlist *exprs)
{
	for (size_t i = 0; panels && panels->type == JSON_ARRAY && i < panels->nr; i++) {
		const struct json_value *p = panels->items[i];
		const char *type = json_get_string(p, "type");
		const char *title = json_get_string(p, "title");
		walk_panels(json_get(p, "panels"), titles, exprs);
		if (type && !strcmp(type, "row"))
			continue;
		const struct json_value *t = json_get(p, "targets");
		for (size_t j = 0; t && t->type == JSON_ARRAY && j < t->nr; j++) {
			const char *e = json_get_string(t->items[j], "expr");
			strlist_add(titles, title ? title : "(untitled)");
			strlist_add(exprs, e ? e : "");
		}
		if (!t || t->type != JSON_ARRAY || !t->nr) {
			strlist_add(titles, title ? title : "(untitled)");
			strlist_add(exprs, "");
		}
	}
}

void prom_dash_queries(const struct json_value *dash, struct strlist *titles,
		       struct strlist *exprs)
{
	walk_panels(json_get(dash, "panels"), titles, exprs);
}

static bool is_word(const char *w, size_t n, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strlen(list[i]) == n && !strncmp(list[i], w, n))
			return true;
	return false;
}

static const char *skip_quoted(const char *s)
{
	char q = *s++;
	while (*s && *s != q) {
		if (*s == '\\' && s[1])
			s++;
		s++;
	}
	return *s ? s + 1 : s;
}

/* Past the bracketed group at s ('(' '{' '['), strings inside included. */
static const char *skip_group(const char *s)
{
	char open = *s, close = open == '(' ? ')' : open == '{' ? '}' : ']';
	int depth = 0;
	while (*s) {
		if (*s == '"' || *s == '\'' || *s == '`') {
			s = skip_quoted(s);
			continue;
		}
		if (*s == open)
			depth++;
		else if (*s == close && --depth == 0)
			return s + 1;
		s++;
	}
	return s;
}

/*
 * The metric names an expression selects: identifiers outside strings, label matchers and range
 * brackets that are not functions, aggregations, keywords or their label lists (by (...),
 * on (...)). Enough PromQL for the dashboard's and the rules' own expressions.
 */
void promql_metric_names(const char *expr, struct strlist *names)
{
	static const char *const aggr[] = { "sum", "min", "max", "avg", "count", "stddev",
					    "stdvar", "topk", "bottomk", "quantile",
					    "count_values", "group", NULL };
	static const char *const lists[] = { "by", "without", "on", "ignoring", "group_left",
					     "group_right", NULL };
	static const char *const words[] = { "and", "or", "unless", "bool", "offset", "inf",
					     "nan", NULL };
	const char *s = expr;
	while (*s) {
		if (*s == '"' || *s == '\'' || *s == '`') {
			s = skip_quoted(s);
		} else if (*s == '{' || *s == '[') {
			s = skip_group(s);
		} else if (isdigit((unsigned char)*s) || *s == '.') {
			while (isalnum((unsigned char)*s) || *s == '.')
				s++; /* 1h, 1e3, 0.5 */
		} else if (isalpha((unsigned char)*s) || *s == '_' || *s == ':') {
			const char *w = s;
			while (isalnum((unsigned char)*s) || *s == '_' || *s == ':')
				s++;
			size_t n = (size_t)(s - w);
			const char *after = s;
			while (*after == ' ' || *after == '\n' || *after == '\t')
				after++;
			if (is_word(w, n, lists)) {
				if (*after == '(')
					s = skip_group(after);
			} else if (*after == '(' || is_word(w, n, aggr) || is_word(w, n, words)) {
				continue;
			} else {
				char name[128];
				snprintf(name, sizeof(name), "%.*s", (int)n, w);
				if (!strlist_has(names, name))
					strlist_add(names, name);
			}
		} else {
			s++;
		}
	}
}

/* The names of the rules file's "- alert: NAME" or "- record: NAME" lines. */
void prom_rule_names(const char *rules, const char *kind, struct strlist *names)
{
	char key[32];
	snprintf(key, sizeof(key), "- %s: ", kind);
	for (const char *p = strstr(rules, key); p; p = strstr(p, key)) {
		p += strlen(key);
		size_t n = strcspn(p, " \n#");
		char name[128];
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		strlist_add(names, name);
	}
}

/* Every "vigil_..." string literal in the .c files under dir: the names vigil can export. */
static void src_metric_names(const char *dir, struct strlist *names)
{
	DIR *d = opendir(dir);
	CHECK_MSG(d, "cannot list %s", dir);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct strbuf p = STRBUF_INIT, text = STRBUF_INIT;
		struct stat st;
		strbuf_addf(&p, "%s/%s", dir, e->d_name);
		if (stat(p.buf, &st) == 0 && S_ISDIR(st.st_mode)) {
			src_metric_names(p.buf, names);
		} else if (ends_with(e->d_name, ".c") &&
			   read_file_bounded(p.buf, &text, 4 << 20, NULL) == 0) {
			for (const char *q = strstr(text.buf, "\"vigil_"); q;
			     q = strstr(q + 1, "\"vigil_")) {
				size_t n = strspn(q + 1, "abcdefghijklmnopqrstuvwxyz0123456789_");
				char name[128];
				snprintf(name, sizeof(name), "%.*s", (int)n, q + 1);
				if (q[1 + n] == '"' && !strlist_has(names, name))
					strlist_add(names, name);
			}
		}
		strbuf_release(&p);
		strbuf_release(&text);
	}
	closedir(d);
}

static void run_promtool(const char *const *argv, struct strbuf *out)
{
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.dir = test_srcdir();
	c.merge_stderr = true;
	c.timeout_ms = 30000;
	CHECK(child_run(&c, NULL) == 0);
	strbuf_add(out, c.out.buf, c.out.len);
	CHECK_MSG(c.exited && c.exit_code == 0, "%s %s %s: exit %d\n%s", argv[0], argv[1],
		  argv[2], c.exit_code, c.out.buf);
	child_release(&c);
}

TEST(prometheus_rules_promtool_check)
{
	if (!prom_have("promtool"))
		SKIP("promtool is not installed (Debian: prometheus)");
	struct strbuf out = STRBUF_INIT, rules = STRBUF_INIT;
	struct strlist alerts = STRLIST_INIT, records = STRLIST_INIT;
	const char *argv[] = { "promtool", "check", "rules", RULES_FILE, NULL };
	run_promtool(argv, &out);
	prom_read_src(RULES_FILE, &rules);
	prom_rule_names(rules.buf, "alert", &alerts);
	prom_rule_names(rules.buf, "record", &records);
	char want[64];
	snprintf(want, sizeof(want), "SUCCESS: %zu rules found", alerts.nr + records.nr);
	CHECK_CONTAINS(out.buf, want);
	/* the issue's alerts, by name: docs/dashboard.md explains each */
	static const char *const named[] = { "VigilHostUnhealthy", "VigilHostUnknown",
					     "VigilAgentStale", "VigilAgentDown",
					     "VigilGpuCorrectedErrorsRising", "VigilGpuThrottling",
					     NULL };
	for (size_t i = 0; named[i]; i++)
		CHECK_MSG(strlist_has(&alerts, named[i]), "no alert %s in %s", named[i],
			  RULES_FILE);
	strbuf_release(&out);
	strbuf_release(&rules);
	strlist_release(&alerts);
	strlist_release(&records);
}

TEST(prometheus_rules_promtool_unit_tests_cover_every_alert)
{
	if (!prom_have("promtool"))
		SKIP("promtool is not installed (Debian: prometheus)");
	struct strbuf out = STRBUF_INIT, rules = STRBUF_INIT, cases = STRBUF_INIT;
	struct strlist alerts = STRLIST_INIT;
	const char *argv[] = { "promtool", "test", "rules", RULES_TEST, NULL };
	run_promtool(argv, &out);
	CHECK_CONTAINS(out.buf, "SUCCESS");
	prom_read_src(RULES_FILE, &rules);
	prom_read_src(RULES_TEST, &cases);
	prom_rule_names(rules.buf, "alert", &alerts);
	CHECK(alerts.nr >= 6);
	/* each alert has a case in which it fires (exp_alerts with an entry) and one before its
	 * for: has run out (exp_alerts: []) */
	for (size_t i = 0; i < alerts.nr; i++) {
		char key[160];
		bool fires = false, waits = false;
		snprintf(key, sizeof(key), "alertname: %s\n", alerts.items[i]);
		for (const char *p = strstr(cases.buf, key); p; p = strstr(p + 1, key)) {
			const char *e = p + strlen(key);
			e += strspn(e, " ");
			if (starts_with(e, "exp_alerts: []"))
				waits = true;
			else if (starts_with(e, "exp_alerts:\n"))
				fires = true;
		}
		CHECK_MSG(fires && waits, "%s: alert %s needs a case where it fires and one where "
			  "it does not yet (fires %d, waits %d)", RULES_TEST, alerts.items[i], fires,
			  waits);
	}
	strbuf_release(&out);
	strbuf_release(&rules);
	strbuf_release(&cases);
	strlist_release(&alerts);
}

TEST(prometheus_promql_metric_names_parser)
{
	struct strlist n = STRLIST_INIT;
	promql_metric_names("sum without (verdict) (vigil_verdict{verdict=\"un{k}\"}) + 2 * "
			    "max by (instance, job) (rate(vigil_agent_cpu_seconds_total[5m] offset "
			    "1h)) or on (instance) (up == bool 0) and vigil:x:rate5m > 1e3",
			    &n);
	CHECK_INT(n.nr, 4);
	CHECK_STR(n.items[0], "vigil_verdict");
	CHECK_STR(n.items[1], "vigil_agent_cpu_seconds_total");
	CHECK_STR(n.items[2], "up");
	CHECK_STR(n.items[3], "vigil:x:rate5m");
	strlist_release(&n);
}

static void check_datasource(const struct json_value *ds, const char *title)
{
	const char *uid = ds ? json_get_string(ds, "uid") : NULL;
	CHECK_MSG(uid && !strcmp(uid, "${datasource}"),
		  "%s: panel '%s' has no datasource {uid: ${datasource}}", DASHBOARD, title);
}

/* Names the dashboard's queries select, split by whether they are per-GPU telemetry. */
static void dashboard_names(struct strlist *names)
{
	struct strbuf text = STRBUF_INIT;
	struct strlist titles = STRLIST_INIT, exprs = STRLIST_INIT;
	prom_read_src(DASHBOARD, &text);
	struct json_value *d = json_parse(text.buf, text.len, NULL);
	CHECK(d);
	prom_dash_queries(d, &titles, &exprs);
	for (size_t i = 0; i < exprs.nr; i++)
		promql_metric_names(exprs.items[i], names);
	json_free(d);
	strbuf_release(&text);
	strlist_release(&titles);
	strlist_release(&exprs);
}

TEST(prometheus_dashboard_is_grafana_json_with_queries)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	struct strlist titles = STRLIST_INIT, exprs = STRLIST_INIT;
	prom_read_src(DASHBOARD, &text);
	struct json_value *d = json_parse(text.buf, text.len, &err);
	CHECK_MSG(d, "%s is not JSON: %s", DASHBOARD, err.buf);
	double schema = 0;
	CHECK(json_get_number(d, "schemaVersion", &schema) && schema >= 36 && schema <= 41);
	CHECK_STR(json_get_string(d, "uid"), "vigil-fleet");
	CHECK(json_get_string(d, "title"));
	const struct json_value *vars = json_path(d, "templating.list");
	bool ds_var = false, inst_var = false;
	for (size_t i = 0; vars && vars->type == JSON_ARRAY && i < vars->nr; i++) {
		const char *name = json_get_string(vars->items[i], "name");
		const char *type = json_get_string(vars->items[i], "type");
		if (name && !strcmp(name, "datasource"))
			ds_var = type && !strcmp(type, "datasource") &&
				 !strcmp(json_get_string(vars->items[i], "query"), "prometheus");
		if (name && !strcmp(name, "instance")) {
			inst_var = type && !strcmp(type, "query");
			check_datasource(json_get(vars->items[i], "datasource"), "$instance");
		}
	}
	CHECK_MSG(ds_var, "no ${datasource} variable of type datasource (prometheus)");
	CHECK_MSG(inst_var, "no $instance query variable");

	const struct json_value *panels = json_get(d, "panels");
	CHECK(panels && panels->type == JSON_ARRAY);
	size_t n = 0;
	for (size_t i = 0; i < panels->nr; i++) {
		const struct json_value *p = panels->items[i];
		const char *title = json_get_string(p, "title");
		const char *type = json_get_string(p, "type");
		CHECK_MSG(title && type, "panel %zu has no title or type", i);
		CHECK_MSG(json_get(p, "gridPos"), "panel '%s' has no gridPos", title);
		if (!strcmp(type, "row"))
			continue;
		n++;
		check_datasource(json_get(p, "datasource"), title);
		const struct json_value *t = json_get(p, "targets");
		CHECK_MSG(t && t->type == JSON_ARRAY && t->nr, "panel '%s' has no targets", title);
		for (size_t j = 0; j < t->nr; j++)
			check_datasource(json_get(t->items[j], "datasource"), title);
	}
	CHECK(n >= 12);
	prom_dash_queries(d, &titles, &exprs);
	for (size_t i = 0; i < exprs.nr; i++)
		CHECK_MSG(*exprs.items[i], "panel '%s' has a target without an expr",
			  titles.items[i]);
	/* the issue's panels, by what they show */
	static const char *const want[] = { "vigil:host_verdict:code", "vigil_problem",
					    "vigil_gpu_temperature_celsius", "vigil_gpu_power_watts",
					    "vigil_gpu_sm_clock_hertz", "vigil_gpu_throttle_active",
					    "vigil:gpu_ecc_errors:increase1h",
					    "vigil_gpu_remapped_rows_total",
					    "vigil:gpu_nvlink_errors:increase1h",
					    "vigil:gpu_xid_errors:increase1h", "up",
					    "vigil_agent_result_age_seconds",
					    "vigil_agent_cycle_seconds", "vigil:agent_cpu:rate5m",
					    NULL };
	struct strlist names = STRLIST_INIT;
	dashboard_names(&names);
	for (size_t i = 0; want[i]; i++)
		CHECK_MSG(strlist_has(&names, want[i]), "no panel queries %s", want[i]);
	json_free(d);
	strbuf_release(&text);
	strbuf_release(&err);
	strlist_release(&titles);
	strlist_release(&exprs);
	strlist_release(&names);
}

/* Every name is exported by vigil (a literal in src/), a recording rule, or Prometheus's up.
 * gpu: the per-GPU telemetry names (vigil_gpu_*) only, or every other name. */
static void check_names_known(bool gpu)
{
	struct strlist names = STRLIST_INIT, known = STRLIST_INIT;
	struct strbuf rules = STRBUF_INIT, src = STRBUF_INIT;
	test_src_path(&src, "src");
	src_metric_names(src.buf, &known);
	prom_read_src(RULES_FILE, &rules);
	prom_rule_names(rules.buf, "record", &known);
	strlist_add(&known, "up");
	dashboard_names(&names);
	size_t checked = 0;
	for (size_t i = 0; i < names.nr; i++) {
		if (starts_with(names.items[i], "vigil_gpu_") != gpu)
			continue;
		checked++;
		CHECK_MSG(strlist_has(&known, names.items[i]),
			  "%s queries %s, which vigil does not export (no \"%s\" in src/) and no "
			  "rule records", DASHBOARD, names.items[i], names.items[i]);
	}
	CHECK(checked > 0);
	strlist_release(&names);
	strlist_release(&known);
	strbuf_release(&rules);
	strbuf_release(&src);
}

TEST(prometheus_dashboard_metric_names_are_exported)
{
	check_names_known(false);
}

TEST(prometheus_dashboard_gpu_telemetry_names_are_exported)
{
	struct strlist known = STRLIST_INIT;
	struct strbuf src = STRBUF_INIT;
	test_src_path(&src, "src");
	src_metric_names(src.buf, &known);
	bool any = false;
	for (size_t i = 0; i < known.nr; i++)
		any |= starts_with(known.items[i], "vigil_gpu_");
	strlist_release(&known);
	strbuf_release(&src);
	if (!any)
		SKIP("src/ exports no vigil_gpu_* family yet: the per-GPU telemetry (issue 21, "
		     "branch h-telemetry) has not landed, so the GPU panels' names cannot be checked");
	check_names_known(true);
}
