/* test_lib.c: unit tests for the lib layer: strbuf caps, JSON round trips, config, children. */
#include "../harness.h"
#include "../../src/lib/config.h"
#include "../../src/lib/prom.h"

#include <fcntl.h>
#include <signal.h>
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
