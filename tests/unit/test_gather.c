/*
 * test_gather.c: 'vigil gather' makes fixtures that judge like their source. For every scenario,
 * gather --root SCENARIO/root into a new directory, then check both with the scenario's own
 * arguments: verdict, exit code, every check's status and every finding (check, code, status,
 * action, device) must agree.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/strlist.h"

#include <unistd.h>

static void scenario_args(const char *dir, struct strlist *out)
{
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT;
	strbuf_addf(&p, "%s/args", dir);
	if (read_file_bounded(p.buf, &text, 1 << 16, NULL) == READ_OK) {
		struct strlist lines = STRLIST_INIT;
		strlist_split(&lines, text.buf, "\n");
		for (size_t i = 0; i < lines.nr; i++) {
			if (lines.items[i][0] == '#')
				continue;
			if (starts_with(lines.items[i], "@/")) {
				struct strbuf full = STRBUF_INIT;
				strbuf_addf(&full, "%s/%s", dir, lines.items[i] + 2);
				strlist_add_nodup(out, strbuf_detach(&full, NULL));
			} else {
				strlist_add(out, lines.items[i]);
			}
		}
		strlist_release(&lines);
	}
	strbuf_release(&p);
	strbuf_release(&text);
}

static struct json_value *check_root(const char *root, const struct strlist *extra,
				     const char *state, int *exit_code)
{
	const char *args[64];
	size_t n = 0;
	args[n++] = "check";
	args[n++] = "--json";
	args[n++] = "--root";
	args[n++] = root;
	args[n++] = "--state-dir";
	args[n++] = state;
	for (size_t i = 0; i < extra->nr && n < ARRAY_SIZE(args) - 1; i++)
		args[n++] = extra->items[i];
	args[n] = NULL;
	struct child c;
	test_run_vigil(&c, args, NULL);
	*exit_code = c.exit_code;
	struct json_value *v = test_parse_json(&c);
	child_release(&c);
	return v;
}

/* One line per finding, sorted: what must agree between the source and the copy. */
static void fingerprint(const struct json_value *rep, struct strlist *out)
{
	const struct json_value *checks = json_get(rep, "checks");
	for (size_t i = 0; checks && i < checks->nr; i++) {
		const struct json_value *ch = checks->items[i];
		struct strbuf line = STRBUF_INIT;
		strbuf_addf(&line, "%s %s", json_get_string(ch, "name"),
			    json_get_string(ch, "status"));
		strlist_add_nodup(out, strbuf_detach(&line, NULL));
		const struct json_value *fs = json_get(ch, "findings");
		for (size_t j = 0; fs && j < fs->nr; j++) {
			const struct json_value *f = fs->items[j];
			strbuf_addf(&line, "%s %s %s %s %s", json_get_string(ch, "name"),
				    json_get_string(f, "code"), json_get_string(f, "status"),
				    json_get_string(f, "action"), json_get_string(f, "device"));
			strlist_add_nodup(out, strbuf_detach(&line, NULL));
		}
	}
	strlist_sort(out);
}

static void roundtrip(void *arg)
{
	const char *dir = arg;
	const char *tmp = test_tmpdir();
	struct strbuf src = STRBUF_INIT, copy = STRBUF_INIT, s1 = STRBUF_INIT, s2 = STRBUF_INIT;
	struct strlist extra = STRLIST_INIT, f1 = STRLIST_INIT, f2 = STRLIST_INIT;
	strbuf_addf(&src, "%s/root", dir);
	strbuf_addf(&copy, "%s/copy", tmp);
	strbuf_addf(&s1, "%s/state1", tmp);
	strbuf_addf(&s2, "%s/state2", tmp);
	scenario_args(dir, &extra);

	const char *gargs[] = { "gather", "--root", src.buf, copy.buf, NULL };
	struct child c;
	test_run_vigil(&c, gargs, NULL);
	CHECK_MSG(c.exit_code == 0, "gather exited %d:\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	child_release(&c);

	int e1, e2;
	struct json_value *a = check_root(src.buf, &extra, s1.buf, &e1);
	struct json_value *b = check_root(copy.buf, &extra, s2.buf, &e2);
	CHECK_STR(json_get_string(b, "verdict"), json_get_string(a, "verdict"));
	CHECK_INT(e2, e1);
	fingerprint(a, &f1);
	fingerprint(b, &f2);
	for (size_t i = 0; i < f1.nr || i < f2.nr; i++)
		CHECK_MSG(i < f1.nr && i < f2.nr && !strcmp(f1.items[i], f2.items[i]),
			  "source and copy differ: '%s' vs '%s'", i < f1.nr ? f1.items[i] : "-",
			  i < f2.nr ? f2.items[i] : "-");
	json_free(a);
	json_free(b);
	strlist_release(&extra);
	strlist_release(&f1);
	strlist_release(&f2);
	strbuf_release(&src);
	strbuf_release(&copy);
	strbuf_release(&s1);
	strbuf_release(&s2);
}

TEST_HOOK(register_gather_roundtrips)
{
	test_register_per_scenario("gather-roundtrip", roundtrip, 60);
}

TEST(gather_this_host_judges_like_the_host)
{
	const char *tmp = test_tmpdir();
	struct strbuf out = STRBUF_INIT, gathered = STRBUF_INIT;
	strbuf_addf(&out, "%s/fx", tmp);
	/* this host's NVML, whatever it is (none on CI) */
	const char *env[] = { "VIGIL_NVML_LIBRARY=", NULL };
	const char *gargs[] = { "gather", out.buf, NULL };
	struct child c;
	test_run_vigil(&c, gargs, env);
	CHECK_MSG(c.exit_code == 0 || c.exit_code == 3, "gather exited %d: %s", c.exit_code,
		  c.err.buf);
	CHECK_CONTAINS(c.out.buf, "fixture written to");
	child_release(&c);
	strbuf_addf(&gathered, "%s/GATHERED", out.buf);
	CHECK(access(gathered.buf, F_OK) == 0);
	const char *cargs[] = { "check", "--root", out.buf, "--json", "--only",
				"kernel,pcie,infiniband,system", NULL };
	test_run_vigil(&c, cargs, NULL);
	struct json_value *v = test_parse_json(&c);
	CHECK(json_get_string(v, "verdict"));
	json_free(v);
	child_release(&c);
	strbuf_release(&out);
	strbuf_release(&gathered);
}
