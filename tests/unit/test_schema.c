/*
 * The JSON contract: every command's --json carries schema_version, the schemas under
 * docs/schema/ reject what they should (so json_outputs_match_schemas, run after all the tests
 * over every JSON they parsed, can fail), and docs/codes.md is the table the source gives.
 */
#include "../harness.h"
#include "../../src/lib/json.h"

#include <string.h>

/* python3 SCRIPT ARGS...: its exit code (77 when python3 or the module it needs is missing). */
static int python(struct child *c, const char *script, const char *a1, const char *a2)
{
	struct strbuf s = STRBUF_INIT;
	test_src_path(&s, script);
	const char *argv[] = { "python3", s.buf, a1, a2, NULL };
	child_init(c);
	c->argv = argv;
	c->timeout_ms = 120000;
	struct strbuf err = STRBUF_INIT;
	if (child_run(c, &err) || (c->exited && c->exit_code == 127))
		SKIP("python3 cannot be run");
	strbuf_release(&err);
	strbuf_release(&s);
	return c->exited ? c->exit_code : -1;
}

static void check_version(const char *const *args)
{
	struct child c;
	test_run_vigil(&c, args, NULL);
	struct json_value *v = test_parse_json(&c);
	double d = 0;
	CHECK_MSG(json_get_number(v, "schema_version", &d) && d == 1,
		  "vigil %s %s: no schema_version 1 in:\n%s", args[0], args[1], c.out.buf);
	json_free(v);
	child_release(&c);
}

TEST(json_every_command_says_its_schema_version)
{
	const char *dir = test_tmpdir();
	test_mkdir(dir, "empty");
	struct strbuf tl = STRBUF_INIT;
	for (int i = 1; i <= 40; i++) /* Megatron's line shape (tests/data/steps/megatron.log) */
		strbuf_addf(&tl, " [2026-01-01 00:%02d:%02d] iteration %8d/     100 | "
			    "elapsed time per iteration (ms): %.1f |\n", i / 60, i % 60, i,
			    1000.0 + i % 3);
	test_write(dir, "train.log", tl.buf);
	strbuf_release(&tl);
	struct strbuf root = STRBUF_INIT, log = STRBUF_INIT;
	strbuf_addf(&root, "%s/empty", dir);
	strbuf_addf(&log, "%s/train.log", dir);
	const char *check[] = { "check", "--root", root.buf, "--json", NULL };
	check_version(check);
	const char *steps[] = { "diagnose", "steps", log.buf, "--json", NULL };
	check_version(steps);
	const char *logs[] = { "diagnose", "logs", log.buf, "--json", NULL };
	check_version(logs);
	const char *hang[] = { "diagnose", "hang", log.buf, "--json", NULL };
	check_version(hang);
	const char *sim[] = { "sim", "--gpus", "8", "--days", "0.1", "--json", NULL };
	check_version(sim);
	strbuf_release(&root);
	strbuf_release(&log);
}

TEST(check_on_a_root_that_is_no_host_says_not_a_host_root)
{
	/* every other code is lower_snake_case: this one had dashes, which the schema's pattern
	 * for code (docs/schema/check.json) refused */
	const char *dir = test_tmpdir();
	test_mkdir(dir, "empty");
	struct strbuf root = STRBUF_INIT;
	strbuf_addf(&root, "%s/empty", dir);
	const char *args[] = { "check", "--root", root.buf, "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *checks = json_get(v, "checks");
	CHECK_MSG(checks && checks->nr > 0, "no checks:\n%s", c.out.buf);
	CHECK_STR(json_get_string(checks->items[0], "name"), "root");
	const struct json_value *fs = json_get(checks->items[0], "findings");
	CHECK_MSG(fs && fs->nr == 1, "no root finding:\n%s", c.out.buf);
	CHECK_STR(json_get_string(fs->items[0], "code"), "not_a_host_root");
	json_free(v);
	child_release(&c);
	strbuf_release(&root);
}

TEST(schemas_reject_json_that_breaks_the_contract)
{
	/* the validator itself, on JSON it must refuse: without this, json_outputs_match_schemas
	 * could pass on anything */
	const char *dir = test_tmpdir();
	static const struct {
		const char *args, *json;
	} bad[] = {
		{ "check\n--json\n", "{\"host\":\"h\"}" }, /* no schema_version, nothing required */
		{ "check\n--json\n",
		  "{\"schema_version\":1,\"host\":\"h\",\"time\":\"2026-01-01T00:00:00Z\","
		  "\"timestamp\":1,\"vigil_version\":\"1\",\"verdict\":\"fine\",\"exit_code\":0,"
		  "\"reason\":\"\",\"duration_ms\":0,\"checks\":[]}" }, /* a verdict not in the enum */
		{ "check\n--json\n",
		  "{\"schema_version\":1,\"host\":\"h\",\"time\":\"2026-01-01T00:00:00Z\","
		  "\"timestamp\":1,\"vigil_version\":\"1\",\"verdict\":\"unknown\",\"exit_code\":3,"
		  "\"reason\":\"\",\"duration_ms\":0,\"checks\":[{\"name\":\"root\",\"status\":"
		  "\"unknown\",\"duration_ms\":0,\"findings\":[{\"status\":\"unknown\",\"severity\":"
		  "\"error\",\"action\":\"FIX_CONFIG\",\"code\":\"not-a-host-root\",\"device\":\"\","
		  "\"message\":\"m\",\"details\":{}}]}]}" }, /* the old code with dashes */
		{ "fleet\n--json\n", "{\"schema_version\":2,\"verdict\":\"healthy\",\"exit_code\":0,"
				     "\"duration_ms\":0,\"counts\":{},\"nodes\":[]}" },
		{ "frobnicate\n", "{}" }, /* a command no schema names */
		/* stress storage: check.json's shape without its figures object */
		{ "stress\nstorage\n--dir\nd\n--json\n",
		  "{\"schema_version\":1,\"host\":\"h\",\"time\":\"2026-01-01T00:00:00Z\","
		  "\"timestamp\":1,\"vigil_version\":\"1\",\"verdict\":\"healthy\",\"exit_code\":0,"
		  "\"reason\":\"\",\"duration_ms\":0,\"checks\":[]}" },
		/* nested objects once described only as "array" (issue 23): their items are held */
		{ "stacks\n--json\n",
		  "{\"schema_version\":1,\"host\":\"h\",\"attempt_dir\":\"a\",\"job\":\"5\","
		  "\"uid\":0,\"cgroup_checked\":true,\"ranks\":[{\"rank\":\"zero\"}]}" },
		{ "diagnose\nstragglers\n--json\nx.csv\n",
		  "{\"schema_version\":1,\"file\":\"x.csv\",\"verdict\":\"stragglers\","
		  "\"format\":\"csv\",\"rows\":1,\"garbage\":0,\"steps\":1,\"hosts\":1,"
		  "\"ranks\":1,\"metric\":\"m\",\"window\":30,\"stragglers\":[{\"host\":\"h\"}]}" },
	};
	struct strbuf d = STRBUF_INIT, schemas = STRBUF_INIT;
	test_src_path(&schemas, "docs/schema");
	strbuf_addf(&d, "%s/bad", dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char n[32];
		snprintf(n, sizeof(n), "bad/x%zu.json", i);
		test_write(dir, n, bad[i].json);
		snprintf(n, sizeof(n), "bad/x%zu.args", i);
		test_write(dir, n, bad[i].args);
	}
	struct child c; /* one python3 run for all: each is named when it is not valid */
	int rc = python(&c, "tests/schema-check.py", schemas.buf, d.buf);
	if (rc == 77)
		SKIP("python3-jsonschema is not installed");
	CHECK_MSG(rc == 1, "exit %d, expected 1 (not valid):\n%s%s", rc, c.out.buf, c.err.buf);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char n[48];
		snprintf(n, sizeof(n), "not valid: x%zu.json", i);
		CHECK_CONTAINS(c.out.buf, n);
	}
	child_release(&c);
	strbuf_release(&d);
	strbuf_release(&schemas);
}

TEST(codes_table_is_current)
{
	struct strbuf src = STRBUF_INIT;
	test_src_path(&src, ".");
	struct child c;
	int rc = python(&c, "tests/gen-codes.py", "--check", src.buf);
	CHECK_MSG(rc == 0, "exit %d:\n%s%s", rc, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "docs/codes.md is current");
	child_release(&c);
	strbuf_release(&src);
}
