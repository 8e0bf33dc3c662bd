/*
 * scenarios.c: data-driven fixture scenarios. Each directory under tests/scenarios/ is one test:
 *
 *   root/      the fixture root given to --root (sys/, proc/, dev/kmsg, etc/, nvml.snapshot)
 *   before/    optional: a first run on this root with the same state directory (counters
 *              that must rise between two runs)
 *   args       optional: extra arguments, one per line; a leading "@/" means this directory
 *   expect     what a user must see, one assertion a line:
 *                exit N
 *                verdict healthy|unhealthy|unknown
 *                check NAME STATUS
 *                finding CHECK STATUS ACTION [CODE [DEVICE-SUBSTRING]]
 *                no-finding CHECK STATUS [CODE]
 *                reason-contains TEXT
 *                message-contains CHECK TEXT
 *                check-action CHECK ACTION   (a check that could not run: what to do)
 *
 * In every scenario, whatever is unknown (a check or a finding) must carry an action: an
 * unknown is the page that needs one most (issue 18).
 *
 * vigil runs with --json, a fresh state directory, and the fake NVML library serving
 * root/nvml.snapshot (no snapshot: the library reports that no driver is loaded).
 */
#include "harness.h"
#include "../src/lib/fileio.h"
#include "../src/lib/strlist.h"

#include <unistd.h>

static void read_lines(const char *path, struct strlist *lines, bool required)
{
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT;
	int r = read_file_bounded(path, &sb, 1 << 20, &err);
	if (r == READ_MISSING && !required)
		goto out;
	CHECK_MSG(r == READ_OK, "cannot read '%s' %s", path, err.buf);
	strlist_split(lines, sb.buf, "\n");
out:
	strbuf_release(&sb);
	strbuf_release(&err);
}

static void run_scenario_vigil(const char *dir, const char *root, const char *state,
			       struct child *c)
{
	struct strlist extra = STRLIST_INIT;
	struct strbuf p = STRBUF_INIT;
	const char *args[48];
	size_t n = 0;
	args[n++] = "check";
	args[n++] = "--json";
	args[n++] = "--root";
	args[n++] = root;
	args[n++] = "--state-dir";
	args[n++] = state;
	strbuf_addf(&p, "%s/args", dir);
	read_lines(p.buf, &extra, false);
	for (size_t i = 0; i < extra.nr && n < ARRAY_SIZE(args) - 1; i++) {
		char *a = extra.items[i];
		if (a[0] == '#' || !a[0])
			continue;
		if (starts_with(a, "@/")) {
			struct strbuf full = STRBUF_INIT;
			strbuf_addf(&full, "%s/%s", dir, a + 2);
			free(extra.items[i]);
			extra.items[i] = strbuf_detach(&full, NULL);
			a = extra.items[i];
		}
		args[n++] = a;
	}
	args[n] = NULL;
	test_run_vigil(c, args, NULL);
	strlist_release(&extra);
	strbuf_release(&p);
}

static const struct json_value *find_check(const struct json_value *rep, const char *name)
{
	const struct json_value *checks = json_get(rep, "checks");
	for (size_t i = 0; checks && i < checks->nr; i++) {
		const char *n = json_get_string(checks->items[i], "name");
		if (n && !strcmp(n, name))
			return checks->items[i];
	}
	return NULL;
}

static bool finding_matches(const struct json_value *f, char **w, size_t nw, size_t from)
{
	/* w[from]: STATUS, then ACTION, CODE, DEVICE-SUBSTRING (each optional) */
	const char *fields[] = { "status", "action", "code", "device" };
	for (size_t k = 0; k < 4 && from + k < nw; k++) {
		const char *v = json_get_string(f, fields[k]);
		if (!v)
			return false;
		if (k == 3 ? !strstr(v, w[from + k]) : strcmp(v, w[from + k]) != 0)
			return false;
	}
	return true;
}

static void assert_line(const char *line, const struct child *c, const struct json_value *rep)
{
	struct strlist w = STRLIST_INIT;
	strlist_split(&w, line, " ");
	const char *rest = strchr(line, ' ');
	rest = rest ? rest + 1 : "";
	const char *what = w.items[0];
	if (!strcmp(what, "exit")) {
		CHECK_MSG(w.nr == 2 && c->exit_code == atoi(w.items[1]),
			  "'%s': exit code was %d; reason: %s", line, c->exit_code,
			  json_get_string(rep, "reason"));
	} else if (!strcmp(what, "verdict")) {
		const char *v = json_get_string(rep, "verdict");
		CHECK_MSG(v && !strcmp(v, rest), "'%s': verdict was '%s' (%s)", line, v,
			  json_get_string(rep, "reason"));
	} else if (!strcmp(what, "check")) {
		const struct json_value *ch = find_check(rep, w.items[1]);
		CHECK_MSG(ch, "'%s': no check '%s' in the output", line, w.items[1]);
		const char *st = json_get_string(ch, "status");
		CHECK_MSG(st && w.nr >= 3 && !strcmp(st, w.items[2]),
			  "'%s': check status was '%s' (%s)", line, st,
			  json_get_string(ch, "error") ? json_get_string(ch, "error") : "");
	} else if (!strcmp(what, "finding") || !strcmp(what, "no-finding")) {
		bool want = !strcmp(what, "finding");
		const struct json_value *ch = find_check(rep, w.items[1]);
		CHECK_MSG(ch, "'%s': no check '%s' in the output", line, w.items[1]);
		const struct json_value *fs = json_get(ch, "findings");
		bool found = false;
		if (want) {
			for (size_t i = 0; fs && i < fs->nr && !found; i++)
				found = finding_matches(fs->items[i], w.items, w.nr, 2);
		} else {
			/* no-finding CHECK STATUS [CODE] */
			for (size_t i = 0; fs && i < fs->nr && !found; i++) {
				const char *st = json_get_string(fs->items[i], "status");
				const char *code = json_get_string(fs->items[i], "code");
				found = st && !strcmp(st, w.items[2]) &&
					(w.nr < 4 || (code && !strcmp(code, w.items[3])));
			}
		}
		CHECK_MSG(found == want, "'%s' does not hold; output:\n%s", line, c->out.buf);
	} else if (!strcmp(what, "check-action")) {
		const struct json_value *ch = find_check(rep, w.items[1]);
		CHECK_MSG(ch, "'%s': no check '%s' in the output", line, w.items[1]);
		const char *a = json_get_string(ch, "action");
		CHECK_MSG(a && w.nr >= 3 && !strcmp(a, w.items[2]), "'%s': the check's action was '%s'",
			  line, a ? a : "(none)");
	} else if (!strcmp(what, "reason-contains")) {
		const char *r = json_get_string(rep, "reason");
		CHECK_MSG(r && strstr(r, rest), "'%s': reason was '%s'", line, r);
		CHECK_MSG(strlen(r) <= 80, "reason longer than 80 characters: '%s'", r);
	} else if (!strcmp(what, "message-contains")) {
		const struct json_value *ch = find_check(rep, w.items[1]);
		CHECK_MSG(ch, "'%s': no check '%s' in the output", line, w.items[1]);
		const char *text = strchr(rest, ' ');
		text = text ? text + 1 : "";
		const struct json_value *fs = json_get(ch, "findings");
		bool found = false;
		for (size_t i = 0; fs && i < fs->nr && !found; i++) {
			const char *m = json_get_string(fs->items[i], "message");
			found = m && strstr(m, text);
		}
		CHECK_MSG(found, "'%s': no such message; output:\n%s", line, c->out.buf);
	} else {
		CHECK_MSG(0, "unknown assertion '%s'", line);
	}
	strlist_release(&w);
}

/* No unknown without an action, in any scenario's output. */
static void assert_unknowns_have_actions(const struct json_value *rep)
{
	const struct json_value *checks = json_get(rep, "checks");
	for (size_t i = 0; checks && i < checks->nr; i++) {
		const struct json_value *ch = checks->items[i];
		const char *name = json_get_string(ch, "name");
		if (json_get_string(ch, "error")) {
			const char *a = json_get_string(ch, "action");
			CHECK_MSG(a && strcmp(a, "NONE"), "check '%s' is unknown (%s) with no action",
				  name, json_get_string(ch, "error"));
		}
		const struct json_value *fs = json_get(ch, "findings");
		for (size_t j = 0; fs && j < fs->nr; j++) {
			const char *st = json_get_string(fs->items[j], "status");
			const char *a = json_get_string(fs->items[j], "action");
			CHECK_MSG(!st || strcmp(st, "unknown") || (a && strcmp(a, "NONE")),
				  "check '%s': unknown finding '%s' has no action", name,
				  json_get_string(fs->items[j], "message"));
		}
	}
}

static void run_scenario(void *arg)
{
	const char *dir = arg;
	struct strbuf root = STRBUF_INIT, before = STRBUF_INIT, state = STRBUF_INIT,
		      exp = STRBUF_INIT;
	struct strlist lines = STRLIST_INIT;
	struct child c;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&before, "%s/before", dir);
	strbuf_addf(&state, "%s/state", test_tmpdir());
	strbuf_addf(&exp, "%s/expect", dir);
	read_lines(exp.buf, &lines, true);
	CHECK_MSG(lines.nr > 0, "'%s' asserts nothing", exp.buf);
	if (access(before.buf, F_OK) == 0) {
		run_scenario_vigil(dir, before.buf, state.buf, &c);
		child_release(&c);
	}
	run_scenario_vigil(dir, root.buf, state.buf, &c);
	CHECK_MSG(c.exit_code != 2, "usage error: %s", c.err.buf);
	struct json_value *rep = test_parse_json(&c);
	for (size_t i = 0; i < lines.nr; i++)
		if (lines.items[i][0] && lines.items[i][0] != '#')
			assert_line(lines.items[i], &c, rep);
	assert_unknowns_have_actions(rep);
	json_free(rep);
	child_release(&c);
	strlist_release(&lines);
	strbuf_release(&root);
	strbuf_release(&before);
	strbuf_release(&state);
	strbuf_release(&exp);
}

TEST_HOOK(register_scenarios)
{
	test_register_per_scenario("scenario", run_scenario, 60);
}
