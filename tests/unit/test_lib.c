/* test_lib.c: unit tests for the lib layer: strbuf caps, JSON round trips, config, children. */
#include "../harness.h"
#include "../../src/lib/config.h"
#include "../../src/lib/prom.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(strbuf_cap_truncates)
{
	struct strbuf sb;
	strbuf_init(&sb, 8);
	CHECK_INT(strbuf_addstr(&sb, "12345"), 0);
	CHECK_INT(strbuf_addstr(&sb, "67890"), -1);
	CHECK_STR(sb.buf, "12345678");
	CHECK(sb.truncated);
	strbuf_release(&sb);
}

TEST(json_roundtrip_escapes)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct json_writer w;
	json_writer_init(&w, &out, false);
	json_open_object(&w);
	json_key(&w, "s");
	json_string(&w, "a\"b\\c\nd\x01\xff");
	json_key(&w, "n");
	json_int(&w, -42);
	json_key(&w, "a");
	json_open_array(&w);
	json_bool(&w, true);
	json_null(&w);
	json_close_array(&w);
	json_close_object(&w);
	struct json_value *v = json_parse(out.buf, out.len, &err);
	CHECK_MSG(v, "parse failed: %s (%s)", err.buf, out.buf);
	CHECK_STR(json_get_string(v, "s"), "a\"b\\c\nd\x01\xef\xbf\xbd");
	const struct json_value *a = json_path(v, "a.0");
	CHECK(a && a->type == JSON_BOOL && a->boolean);
	double d;
	CHECK(json_get_number(v, "n", &d) && d == -42);
	json_free(v);
	strbuf_release(&out);
	strbuf_release(&err);
}

TEST(json_rejects_garbage)
{
	const char *bad[] = { "", "{", "[1,]", "{\"a\":}", "nul", "\"\\x\"", "[1] x", "{1:2}" };
	struct strbuf err = STRBUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct json_value *v = json_parse(bad[i], strlen(bad[i]), &err);
		CHECK_MSG(!v, "accepted '%s'", bad[i]);
		CHECK(err.len > 0);
	}
	/* deep nesting is refused, not a stack overflow */
	struct strbuf deep = STRBUF_INIT;
	for (int i = 0; i < 100000; i++)
		strbuf_addch(&deep, '[');
	CHECK(!json_parse(deep.buf, deep.len, &err));
	CHECK_CONTAINS(err.buf, "deep");
	strbuf_release(&deep);
	strbuf_release(&err);
}

TEST(config_sections_hosts_and_lists)
{
	struct config cfg;
	struct strbuf err = STRBUF_INIT;
	const char *text = "# comment\n[gpu]\n\tcount = 8\n[gpu \"node-a*\"]\n count = 4 ; why\n"
			   "[storage]\nmount = /\nmount = \"/data x\"\n[Check]\nSkip = system\n";
	config_init(&cfg, "node-a7");
	CHECK_INT(config_parse(&cfg, text, strlen(text), "t.conf", &err), 0);
	CHECK_STR(config_get(&cfg, "gpu", "count"), "4");
	CHECK_STR(config_get(&cfg, "check", "skip"), "system");
	const char **vals;
	size_t n = config_get_all(&cfg, "storage", "mount", &vals);
	CHECK_INT(n, 2);
	CHECK_STR(vals[1], "/data x");
	free(vals);
	config_release(&cfg);

	config_init(&cfg, "node-b1");
	CHECK_INT(config_parse(&cfg, text, strlen(text), "t.conf", &err), 0);
	uint64_t c;
	CHECK_INT(config_get_u64(&cfg, "gpu", "count", 0, &c, &err), 0);
	CHECK_INT(c, 8);
	CHECK_INT(config_set(&cfg, "gpu.count=x", &err), 0);
	CHECK_INT(config_get_u64(&cfg, "gpu", "count", 0, &c, &err), -1);
	CHECK_CONTAINS(err.buf, "whole number");
	config_release(&cfg);
	strbuf_release(&err);
}

TEST(config_errors_name_the_line)
{
	struct config cfg;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "h");
	CHECK_INT(config_parse(&cfg, "[gpu]\nok = 1\n[bad\n", 17, "x.conf", &err), -1);
	CHECK_CONTAINS(err.buf, "x.conf:3");
	CHECK_INT(config_parse(&cfg, "key = 1\n", 8, "y.conf", &err), -1);
	CHECK_CONTAINS(err.buf, "outside");
	config_release(&cfg);
	strbuf_release(&err);
}

/* A small schema for the validator's own tests (the real one is tested in test_cli.c). */
static const char *const test_modes[] = { "nothing", "drain", NULL };
static const char *const test_names[] = { "gpu", "kernel", NULL };
static const struct config_key test_keys[] = {
	{ "gpu.count", CONFIG_COUNT, 0, 1024, 0, NULL, "check", "" },
	{ "gpu.enabled", CONFIG_BOOL, 0, 0, 0, NULL, "check", "" },
	{ "check.timeout", CONFIG_SECONDS, 1, 3600, CONFIG_WHOLE, NULL, "check", "" },
	{ "check.skip", CONFIG_NAMES, 0, 0, 0, test_names, "check", "" },
	{ "kernel.window", CONFIG_SECONDS, 0, 86400, CONFIG_MIN_EXCL, NULL, "check", "" },
	{ "slurm.on-unknown", CONFIG_ENUM, 0, 0, 0, test_modes, "check", "" },
	{ "stress.margin", CONFIG_NUMBER, 0, 1, CONFIG_MAX_EXCL, NULL, "stress", "" },
	{ "stress.floor-*", CONFIG_NUMBER, 0, 1e6, 0, NULL, "stress", "" },
	{ "storage.usage", CONFIG_PERCENT, 5, 100, CONFIG_MIN_EXCL, NULL, "check", "" },
	{ "storage.mount", CONFIG_PATH, 0, 0, CONFIG_LIST, NULL, "check", "" },
};

/* Parse text (and one -c setting, if set), validate it; returns what validation said. */
static int validate(const char *host, const char *text, const char *set, struct strbuf *err)
{
	struct config cfg;
	config_init(&cfg, host);
	strbuf_reset(err);
	int r = config_parse(&cfg, text, strlen(text), "t.conf", err);
	if (!r && set)
		r = config_set(&cfg, set, err);
	if (!r)
		r = config_validate(&cfg, test_keys, ARRAY_SIZE(test_keys), err);
	config_release(&cfg);
	return r;
}

TEST(config_validate_unknown_keys_and_sections)
{
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(validate("h", "[gpu]\ncount = 8\n[check]\nskip = gpu, kernel\n", NULL, &err), 0);
	/* a slip of the keyboard: where, what, and the nearest real key */
	CHECK_INT(validate("h", "[gpu]\ncount = 8\n\n cuont = 8\n", NULL, &err), -1);
	CHECK_STR(err.buf, "t.conf:4: unknown key 'gpu.cuont' (did you mean 'gpu.count'?)");
	CHECK_INT(validate("h", "[gpu]\n", "gpu.cuont=8", &err), -1);
	CHECK_STR(err.buf, "-c: unknown key 'gpu.cuont' (did you mean 'gpu.count'?)");
	/* a word nothing like a key gets no suggestion */
	CHECK_INT(validate("h", "[gpu]\nfrobnication = 1\n", NULL, &err), -1);
	CHECK_STR(err.buf, "t.conf:2: unknown key 'gpu.frobnication'");
	/* an unknown section, even an empty one, and even under a host pattern */
	CHECK_INT(validate("h", "[gpu]\ncount = 1\n[gppu]\n", NULL, &err), -1);
	CHECK_STR(err.buf, "t.conf:3: unknown section 'gppu' (did you mean 'gpu'?)");
	CHECK_INT(validate("h", "[kernle \"node-*\"]\nwindow = 5\n", NULL, &err), -1);
	CHECK_STR(err.buf, "t.conf:1: unknown section 'kernle' (did you mean 'kernel'?)");
	CHECK_INT(validate("h", "[gpu]\n", "gppu.count=8", &err), -1);
	CHECK_STR(err.buf, "-c: unknown section 'gppu' (did you mean 'gpu.count'?)");
	/* a host section is validated on every host, not only where it applies */
	CHECK_INT(validate("h", "[gpu \"debug-*\"]\ncount = 4\n", NULL, &err), 0);
	CHECK_INT(validate("h", "[gpu \"debug-*\"]\ncuont = 4\n", NULL, &err), -1);
	CHECK_CONTAINS(err.buf, "t.conf:2: unknown key 'gpu.cuont'");
	/* the first problem in file order is the one reported */
	CHECK_INT(validate("h", "[gpu]\ncount = x\n[nope]\n", NULL, &err), -1);
	CHECK_CONTAINS(err.buf, "t.conf:2:");
	/* patterns in the schema */
	CHECK_INT(validate("h", "[stress]\nfloor-bf16 = 600\nfloor-hbm-read = 4000\n", NULL, &err),
		  0);
	CHECK_INT(validate("h", "[stress]\nfloor-bf16 = -1\n", NULL, &err), -1);
	CHECK_CONTAINS(err.buf, "'stress.floor-bf16' wants a number from 0 to 1000000, not '-1'");
	/* outside text is quoted safely and briefly */
	CHECK_INT(validate("h", "[gpu]\ncount = \"\x1b[31m\"\n", NULL, &err), -1);
	CHECK(!strchr(err.buf, '\x1b'));
	strbuf_release(&err);
}

TEST(config_validate_types_and_ranges)
{
	static const struct {
		const char *set, *want;
	} bad[] = {
		{ "check.timeout=0", "'check.timeout' wants whole seconds from 1 to 3600, not '0'" },
		{ "check.timeout=1.5", "'check.timeout' wants whole seconds from 1 to 3600" },
		{ "check.timeout=3601", "from 1 to 3600, not '3601'" },
		{ "gpu.count=-1", "'gpu.count' wants a whole number from 0 to 1024, not '-1'" },
		{ "gpu.count=", "'gpu.count' wants a whole number from 0 to 1024, not ''" },
		{ "gpu.count=8x", "not '8x'" },
		{ "gpu.enabled=maybe", "'gpu.enabled' wants true or false, not 'maybe'" },
		{ "kernel.window=0", "'kernel.window' wants seconds above 0 and at most 86400" },
		{ "kernel.window=nan", "wants seconds" },
		{ "kernel.window=inf", "wants seconds" },
		{ "slurm.on-unknown=maybe", "'slurm.on-unknown' wants nothing or drain, not 'maybe'" },
		{ "stress.margin=1", "'stress.margin' wants a number at least 0 and below 1" },
		{ "storage.usage=5%", "'storage.usage' wants a percentage above 5 and at most 100" },
		{ "storage.mount=data", "'storage.mount' wants an absolute path, not 'data'" },
		{ "check.skip=gpu,nope", "'check.skip' wants a list of gpu or kernel, not 'gpu,nope'" },
	};
	struct strbuf err = STRBUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		CHECK_MSG(validate("h", "", bad[i].set, &err) == -1, "accepted %s", bad[i].set);
		CHECK_CONTAINS(err.buf, bad[i].want);
		CHECK_CONTAINS(err.buf, "-c: ");
	}
	static const char *const good[] = {
		"check.timeout=1",     "check.timeout=3600", "gpu.count=0",     "gpu.enabled=off",
		"kernel.window=0.5",   "stress.margin=0",    "storage.usage=95%", "storage.mount=/",
		"slurm.on-unknown=drain", "check.skip=kernel gpu",
	};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		CHECK_MSG(validate("h", "", good[i], &err) == 0, "refused %s: %s", good[i], err.buf);
	strbuf_release(&err);
}

TEST(config_edit_distance_counts_swaps_as_one)
{
	CHECK_INT(config_edit_distance("count", "count"), 0);
	CHECK_INT(config_edit_distance("cuont", "count"), 1);
	CHECK_INT(config_edit_distance("cont", "count"), 1);
	CHECK_INT(config_edit_distance("", "gpu"), 3);
	CHECK_INT(config_edit_distance("kernel", "pcie"), 5);
}

/* A configuration that is not a regular file is refused at once, never read: a FIFO whose writer
 * stays would otherwise hold vigil for as long as the writer likes. */
TEST_TIMEOUT(config_load_refuses_fifo_dir_and_huge, 20)
{
	const char *dir = test_tmpdir();
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	struct config cfg;
	config_init(&cfg, "h");
	strbuf_addf(&path, "%s/fifo.conf", dir);
	CHECK_INT(mkfifo(path.buf, 0600), 0);
	/* a writer that never writes and never closes */
	int w = open(path.buf, O_RDWR | O_NONBLOCK);
	CHECK(w >= 0);
	CHECK_INT(config_load_file(&cfg, path.buf, false, &err), -1);
	CHECK_CONTAINS(err.buf, "is not a regular file");
	CHECK_INT(config_load_file(&cfg, path.buf, true, &err), -1);
	close(w);
	CHECK_INT(config_load_file(&cfg, dir, true, &err), -1);
	CHECK_CONTAINS(err.buf, "is not a regular file");
	/* larger than the cap: refused whole, not parsed in part */
	struct strbuf big = STRBUF_INIT;
	strbuf_addstr(&big, "[gpu]\n");
	while (big.len <= CONFIG_MAX_BYTES)
		strbuf_addstr(&big, "# padding padding padding padding padding padding padding\n");
	test_write(dir, "big.conf", big.buf);
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/big.conf", dir);
	CHECK_INT(config_load_file(&cfg, path.buf, false, &err), -1);
	CHECK_CONTAINS(err.buf, "is larger than");
	/* missing: 1 when that is fine, an error naming it when not */
	CHECK_INT(config_load_file(&cfg, "/nonexistent/vigil.conf", true, &err), 1);
	CHECK_INT(config_load_file(&cfg, "/nonexistent/vigil.conf", false, &err), -1);
	CHECK_CONTAINS(err.buf, "cannot read '/nonexistent/vigil.conf'");
	/* a plain file still loads */
	test_write(dir, "ok.conf", "[gpu]\ncount = 8\n");
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/ok.conf", dir);
	CHECK_INT(config_load_file(&cfg, path.buf, false, &err), 0);
	CHECK_STR(config_get(&cfg, "gpu", "count"), "8");
	config_release(&cfg);
	strbuf_release(&big);
	strbuf_release(&path);
	strbuf_release(&err);
}

/* Is pid gone (or a zombie waiting for its new parent to reap it)? */
static bool pid_dead(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

TEST(child_deadline_kills_group)
{
	/* the grandchild's pid comes out first; then the shell waits on it past the deadline */
	const char *argv[] = { "sh", "-c", "sleep 100 & echo $!; wait", NULL };
	struct child c;
	struct strbuf err = STRBUF_INIT;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 300;
	CHECK_INT(child_run(&c, &err), 0);
	CHECK(c.timed_out);
	long grandchild = strtol(c.out.buf, NULL, 10);
	CHECK_MSG(grandchild > 1, "no pid printed: '%s'", c.out.buf);
	bool dead = false;
	for (int i = 0; i < 200 && !(dead = pid_dead((pid_t)grandchild)); i++)
		usleep(10000);
	if (!dead)
		kill((pid_t)grandchild, SIGKILL);
	CHECK_MSG(dead, "grandchild %ld outlived the deadline of its group", grandchild);
	child_release(&c);
	strbuf_release(&err);
}

TEST(child_captures_and_reports_missing_program)
{
	const char *ok[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	const char *missing[] = { "/nonexistent/program", NULL };
	struct child c;
	struct strbuf err = STRBUF_INIT;
	child_init(&c);
	c.argv = ok;
	c.timeout_ms = 5000;
	CHECK_INT(child_run(&c, &err), 0);
	CHECK(c.exited);
	CHECK_INT(c.exit_code, 3);
	CHECK_STR(c.out.buf, "out\n");
	CHECK_STR(c.err.buf, "err\n");
	child_release(&c);
	child_init(&c);
	c.argv = missing;
	CHECK_INT(child_run(&c, &err), -1);
	CHECK_CONTAINS(err.buf, "No such file");
	child_release(&c);
	strbuf_release(&err);
}

TEST(prom_escapes_labels)
{
	struct strbuf out = STRBUF_INIT;
	const char *l[] = { "device", "a\"b\\c\nd", NULL };
	prom_family(&out, "x_total", "gauge", "help \\ text");
	prom_sample(&out, "x_total", l, 1.5);
	CHECK_CONTAINS(out.buf, "x_total{device=\"a\\\"b\\\\c\\nd\"} 1.5\n");
	CHECK_CONTAINS(out.buf, "# HELP x_total help \\\\ text\n");
	strbuf_release(&out);
}

TEST(strbuf_clean_neutralises_control_bytes)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_clean(&sb, "a\x1b]0;pwned\x07 b\tc\xc3\xa9\xc2\x9b\xff");
	CHECK_STR(sb.buf, "a\\x1b]0;pwned\\x07 b c\xc3\xa9\\xc2\\x9b\\xff");
	CHECK(!str_is_clean("x\x1b[2J"));
	CHECK(str_is_clean("H200 \xc3\xa9"));
	strbuf_reset(&sb);
	strbuf_add_excerpt(&sb, "root:$6$abcdefghijklmnop:19000:0:99999:7:::", 10);
	CHECK_STR(sb.buf, "root:$6$ab...");
	strbuf_reset(&sb);
	strbuf_add_excerpt(&sb, "\xc3\xa9\xc3\xa9", 3);
	CHECK_STR(sb.buf, "\xc3\xa9...");
	strbuf_release(&sb);
}

TEST(json_writer_stops_past_its_depth_instead_of_writing_broken_json)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct json_writer w;
	json_writer_init(&w, &out, false);
	for (int i = 0; i < 100; i++)
		json_open_array(&w);
	for (int i = 0; i < 100; i++)
		json_close_array(&w);
	CHECK(json_writer_finish(&w, &err) < 0);
	CHECK_CONTAINS(err.buf, "deeper");
	/* what was written is a prefix of a valid document, not an unbalanced one */
	CHECK(!strchr(out.buf, ']'));
	strbuf_reset(&out);
	json_writer_init(&w, &out, false);
	json_open_object(&w);
	json_key(&w, "a");
	json_int(&w, 1);
	json_close_object(&w);
	CHECK(json_writer_finish(&w, &err) == 0);
	CHECK_STR(out.buf, "{\"a\":1}");
	json_close_object(&w);
	CHECK(json_writer_finish(&w, &err) < 0);
	CHECK_STR(out.buf, "{\"a\":1}");
	strbuf_release(&out);
	strbuf_release(&err);
}
