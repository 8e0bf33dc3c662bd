/*
 * test_fabric_ufm.c: 'vigil fabric ufm' as a user sees it (exit codes, JSON fields, text, the
 * state across runs, the REST calls made to a local listener) on the recorded-looking fixture
 * in tests/data/fabric/ufm/ and on logs written here line by line (bursts at exactly 49 and
 * 50 events, group boundaries, rotation with gzip), and the line parser on both message
 * shapes. The fuzz target tests/fuzz/ufm.c runs from here too.
 */
#include "../harness.h"
#include "../../src/fabric/ufm.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* the file names the journal and the lock have (ufm.h) */
#ifndef UFM_INTENTS_FILE
#define UFM_INTENTS_FILE "ufm-intents.json"
#define UFM_LOCK_FILE "ufm.lock"
#endif

#define T0 1714550400000LL /* 2024-05-01 08:00:00.000 */

/* A 329 line of link SW-A:1/<a>/1 - SW-B:1/<a>/2 at t (ms). */
static void line_329(struct strbuf *sb, int64_t t, int a)
{
	ufm_format_time(t, sb);
	strbuf_addf(sb, " [%d] [329] WARNING [Hardware] Switch [site1 / Switch: SW-A / 1/%d/1] "
			"[dev_id: 9c0591030090e000]: Link went down: (Switch:SW-A:1/%d/1)"
			"9c0591030090e000:%d - (Switch:SW-B:1/%d/2)fc6a1c0300244e00:%d, cable S/N: "
			"MT23300%05d\n",
		    a, a, a, a, a, a + 100, a);
}

static struct json_value *run_json(struct child *c, const char *const *args, int want_exit)
{
	test_run_vigil(c, args, NULL);
	CHECK_MSG(c->exited && c->exit_code == want_exit, "exit %d (wanted %d):\n%s\n%s",
		  c->exit_code, want_exit, c->out.buf, c->err.buf);
	return test_parse_json(c);
}

static size_t arr_len(const struct json_value *v, const char *key)
{
	const struct json_value *a = json_get(v, key);
	CHECK(a && a->type == JSON_ARRAY);
	return a->nr;
}

static double num_at(const struct json_value *v, const char *path)
{
	const struct json_value *n = json_path(v, path);
	CHECK_MSG(n && n->type == JSON_NUMBER, "no number at %s", path);
	return n->number;
}

static const char *str_at(const struct json_value *v, const char *path)
{
	const struct json_value *s = json_path(v, path);
	CHECK_MSG(s && s->type == JSON_STRING, "no string at %s", path);
	return s->string;
}

static const char *log_path(struct strbuf *sb, const char *name)
{
	strbuf_reset(sb);
	strbuf_addf(sb, "%s/%s", test_tmpdir(), name);
	return sb->buf;
}

TEST(ufm_parse_both_message_shapes)
{
	struct ufm_event ev;
	const char *l1 = "2024-05-01 09:12:03.514 [5002] [329] WARNING [Hardware] Switch [site1 / "
			 "Switch: T3-E21-N-U47 / 1/17/1] [dev_id: 9c0591030090e000]: Link went down: "
			 "(Switch:T3-E21-N-U47:1/17/1)9c0591030090e000:33 - (Switch:T4-E45-L-U51:1/4/2)"
			 "fc6a1c0300244e00:8, cable S/N: MT2330FT09118\r";
	CHECK_INT(ufm_parse_line(l1, strlen(l1), &ev), UFM_LINE_EVENT);
	CHECK_INT(ev.code, 329);
	CHECK_INT(ev.kind, UFM_EV_LINK_DOWN);
	CHECK_STR(ev.self.name, "T3-E21-N-U47");
	CHECK_STR(ev.self.port, "1/17/1");
	CHECK_STR(ev.a.name, "T3-E21-N-U47");
	CHECK_STR(ev.a.guid, "9c0591030090e000");
	CHECK_INT(ev.a.num, 33);
	CHECK_STR(ev.b.name, "T4-E45-L-U51");
	CHECK_STR(ev.b.port, "1/4/2");
	CHECK_INT(ev.b.num, 8);
	CHECK_STR(ev.cable, "MT2330FT09118");
	const char *l2 = "2024-05-01 09:30:00.250 [5300] [702] WARNING [Hardware] Switch [site1 / "
			 "Switch: T2-E63-L-U36 / 1/19/1] [dev_id: 9c0591030090e200]: Peer Port "
			 "T2-E63-L-U37:1/19/2 is considered by SM as unhealthy due to FLAPPING.";
	CHECK_INT(ufm_parse_line(l2, strlen(l2), &ev), UFM_LINE_EVENT);
	CHECK_INT(ev.kind, UFM_EV_SM_UNHEALTHY);
	CHECK_STR(ev.a.name, "T2-E63-L-U37");
	CHECK_STR(ev.a.port, "1/19/2");
	CHECK_STR(ev.reason, "FLAPPING");
	CHECK_STR(ev.self.port, "1/19/1");
	const char *l3 = "2024-05-01 09:30:00.250 [5300] [702] INFO [Hardware] Switch [site1 / "
			 "Switch: S / 1/5/1]: Peer Port S:1/5/1 is considered by SM as unhealthy "
			 "due to MANUAL.";
	CHECK_INT(ufm_parse_line(l3, strlen(l3), &ev), UFM_LINE_EVENT);
	CHECK_INT(ev.kind, UFM_EV_MANUAL_OFF);
	const char *l4 = "2024-05-01 09:30:00.250 [1] [394] INFO [Hardware] Switch [site1 / Switch:"
			 " S / 1/5/1]: something else";
	CHECK_INT(ufm_parse_line(l4, strlen(l4), &ev), UFM_LINE_OTHER);
	CHECK_INT(ufm_parse_line("2024-05-01 garbage", 18, &ev), UFM_LINE_GARBAGE);
	CHECK_INT(ufm_parse_line("", 0, &ev), UFM_LINE_GARBAGE);
}

TEST(ufm_fixture_decisions_text_and_json)
{
	struct strbuf p = STRBUF_INIT;
	test_src_path(&p, "tests/data/fabric/ufm/event.log");
	struct child c;
	const char *args[] = { "fabric", "ufm", p.buf, "--json", NULL };
	struct json_value *v = run_json(&c, args, 1);
	CHECK_INT(arr_len(v, "disable"), 3);
	CHECK_INT(arr_len(v, "tickets"), 3);
	CHECK_INT(arr_len(v, "reenable"), 0);
	CHECK_INT(arr_len(v, "incidents"), 0);
	CHECK_STR(str_at(v, "disable.0.cause"), "flapping");
	CHECK_STR(str_at(v, "disable.0.port.switch"), "T3-E21-N-U47");
	CHECK_STR(str_at(v, "disable.0.port.port"), "1/17/1");
	CHECK_STR(str_at(v, "disable.0.peer.switch"), "T4-E45-L-U51");
	CHECK_STR(str_at(v, "disable.0.cable"), "MT2330FT09118");
	CHECK_INT(num_at(v, "disable.0.downs"), 4);
	CHECK_STR(str_at(v, "disable.0.first_seen"), "2024-05-01 09:12:03.514");
	CHECK_CONTAINS(str_at(v, "disable.0.rest.body"), "\"port_id\":\"9c0591030090e000_33\"");
	CHECK_STR(str_at(v, "disable.1.cause"), "sm_unhealthy");
	CHECK_STR(str_at(v, "disable.1.port.switch"), "T2-E63-L-U37");
	CHECK_STR(str_at(v, "disable.2.cause"), "errors");
	/* the port disabled by hand is listed apart, its link downs are no fault */
	CHECK_INT(arr_len(v, "manual"), 1);
	CHECK_STR(str_at(v, "manual.0.port.switch"), "T3-E30-N-U47");
	CHECK_INT(num_at(v, "manual.0.events_ignored"), 4);
	/* CRLF lines parse; one garbage line, two of other codes */
	CHECK_INT(num_at(v, "files.0.lines"), 21);
	CHECK_INT(num_at(v, "files.0.garbage"), 1);
	CHECK_INT(num_at(v, "files.0.skipped"), 2);
	CHECK_INT(num_at(v, "files.0.events"), 18);
	json_free(v);
	child_release(&c);
	const char *targs[] = { "fabric", "ufm", p.buf, NULL };
	test_run_vigil(&c, targs, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "DISABLE T3-E21-N-U47 port 1/17/1");
	CHECK_CONTAINS(c.out.buf, "cable S/N MT2330FT09118");
	CHECK_CONTAINS(c.out.buf, "to apply: POST /ufmRest/actions");
	CHECK_CONTAINS(c.out.buf, "disabled by hand (not a fault, nothing to do): T3-E30-N-U47");
	CHECK_NOT_CONTAINS(c.out.buf, "DISABLE T3-E30");
	child_release(&c);
	const char *cargs[] = { "fabric", "ufm", p.buf, "--csv", NULL };
	test_run_vigil(&c, cargs, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "action,ticket,switch,port,guid,port_num,peer_switch");
	CHECK_CONTAINS(c.out.buf, "\"disable\",\"UFM-");
	CHECK_CONTAINS(c.out.buf, "\"T3-E21-N-U47\",\"1/17/1\",\"9c0591030090e000\",\"33\"");
	child_release(&c);
	strbuf_release(&p);
}

TEST(ufm_one_ticket_for_many_events_on_one_link)
{
	struct strbuf log = STRBUF_INIT, p = STRBUF_INIT;
	for (int i = 0; i < 20; i++)
		line_329(&log, T0 + i * 60000LL, 7);
	test_write(test_tmpdir(), "event.log", log.buf);
	struct child c;
	const char *args[] = { "fabric", "ufm", log_path(&p, "event.log"), "--json", NULL };
	struct json_value *v = run_json(&c, args, 1);
	CHECK_INT(arr_len(v, "disable"), 1);
	CHECK_INT(arr_len(v, "tickets"), 1);
	CHECK_INT(num_at(v, "disable.0.downs"), 20);
	CHECK_INT(num_at(v, "tickets.0.events"), 20);
	json_free(v);
	child_release(&c);
	/* two downs are not flapping: nothing to act on */
	strbuf_reset(&log);
	line_329(&log, T0, 7);
	line_329(&log, T0 + 60000, 7);
	test_write(test_tmpdir(), "two.log", log.buf);
	const char *a2[] = { "fabric", "ufm", log_path(&p, "two.log"), "--json", NULL };
	v = run_json(&c, a2, 0);
	CHECK_INT(arr_len(v, "disable"), 0);
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
	strbuf_release(&p);
}

/* n events on n distinct links within 900 ms at t. */
static void burst(struct strbuf *log, int64_t t, int n, int first_link)
{
	for (int i = 0; i < n; i++)
		line_329(log, t + i * 900 / n, first_link + i);
}

TEST(ufm_burst_of_49_is_judged_and_50_is_an_incident)
{
	struct strbuf log = STRBUF_INIT, p = STRBUF_INIT;
	struct child c;
	burst(&log, T0, 49, 100);
	test_write(test_tmpdir(), "b49.log", log.buf);
	const char *a49[] = { "fabric", "ufm", log_path(&p, "b49.log"), "--json", NULL };
	struct json_value *v = run_json(&c, a49, 0);
	CHECK_INT(arr_len(v, "incidents"), 0);
	CHECK_INT(num_at(v, "burst_events"), 0);
	json_free(v);
	child_release(&c);

	strbuf_reset(&log);
	burst(&log, T0, 50, 100);
	test_write(test_tmpdir(), "b50.log", log.buf);
	const char *a50[] = { "fabric", "ufm", log_path(&p, "b50.log"), "--json", NULL };
	v = run_json(&c, a50, 0);
	CHECK_INT(arr_len(v, "incidents"), 1);
	/* the first event is not counted twice, the last group is not dropped */
	CHECK_INT(num_at(v, "incidents.0.events"), 50);
	CHECK_INT(num_at(v, "incidents.0.first_line"), 1);
	CHECK_INT(num_at(v, "incidents.0.last_line"), 50);
	CHECK_INT(num_at(v, "incidents.0.codes.329"), 50);
	CHECK_INT(arr_len(v, "disable"), 0);
	json_free(v);
	child_release(&c);

	/* 50 events spread over just 1 s or more are no burst */
	strbuf_reset(&log);
	for (int i = 0; i < 50; i++)
		line_329(&log, T0 + i * 1000 / 49, 100 + i);
	test_write(test_tmpdir(), "slow.log", log.buf);
	const char *as[] = { "fabric", "ufm", log_path(&p, "slow.log"), "--json", NULL };
	v = run_json(&c, as, 0);
	CHECK_INT(arr_len(v, "incidents"), 0);
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
	strbuf_release(&p);
}

TEST(ufm_burst_boundaries_keep_the_groups_around_it)
{
	/* link 7 goes down once before a 60-event burst and twice after it: three downs, flapping
	 * (a duplicated first event would say 4, a dropped last group 1) */
	struct strbuf log = STRBUF_INIT, p = STRBUF_INIT;
	struct child c;
	line_329(&log, T0, 7);
	burst(&log, T0 + 100000, 60, 200);
	line_329(&log, T0 + 200000, 7);
	line_329(&log, T0 + 300000, 7);
	/* and a second burst ends the log: the last group is an incident of its own */
	burst(&log, T0 + 400000, 55, 400);
	test_write(test_tmpdir(), "event.log", log.buf);
	const char *args[] = { "fabric", "ufm", log_path(&p, "event.log"), "--json", NULL };
	struct json_value *v = run_json(&c, args, 1);
	CHECK_INT(arr_len(v, "incidents"), 2);
	CHECK_INT(num_at(v, "incidents.0.events"), 60);
	CHECK_INT(num_at(v, "incidents.0.first_line"), 2);
	CHECK_INT(num_at(v, "incidents.0.last_line"), 61);
	CHECK_INT(num_at(v, "incidents.1.events"), 55);
	CHECK_INT(num_at(v, "incidents.1.last_line"), 118);
	CHECK_INT(num_at(v, "burst_events"), 115);
	CHECK_INT(arr_len(v, "disable"), 1);
	CHECK_INT(num_at(v, "disable.0.downs"), 3);
	CHECK_STR(str_at(v, "disable.0.port.port"), "1/7/1");
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
	strbuf_release(&p);
}

TEST(ufm_reenable_after_close_across_runs)
{
	struct strbuf log = STRBUF_INIT, p = STRBUF_INIT, st = STRBUF_INIT;
	struct child c;
	for (int i = 0; i < 3; i++)
		line_329(&log, T0 + i * 60000LL, 9);
	test_write(test_tmpdir(), "event.log", log.buf);
	test_mkdir(test_tmpdir(), "state");
	strbuf_addf(&st, "%s/state", test_tmpdir());
	log_path(&p, "event.log");
	const char *args[] = { "fabric", "ufm", p.buf, "--state", st.buf, "--json", NULL };
	struct json_value *v = run_json(&c, args, 1);
	CHECK_INT(arr_len(v, "tickets"), 1);
	CHECK(json_path(v, "tickets.0.new")->boolean);
	char *id = xstrdup(str_at(v, "tickets.0.id"));
	json_free(v);
	child_release(&c);
	/* the same log again: the same ticket, not a new one */
	v = run_json(&c, args, 1);
	CHECK_STR(str_at(v, "tickets.0.id"), id);
	CHECK(!json_path(v, "tickets.0.new")->boolean);
	json_free(v);
	child_release(&c);
	const char *close_args[] = { "fabric", "ufm", "close", id, "--state", st.buf, NULL };
	test_run_vigil(&c, close_args, NULL);
	CHECK_MSG(c.exit_code == 0, "%s", c.err.buf);
	CHECK_CONTAINS(c.out.buf, "closed");
	child_release(&c);
	/* closed: its port is to be re-enabled, the old events are not a new fault */
	v = run_json(&c, args, 1);
	CHECK_INT(arr_len(v, "disable"), 0);
	CHECK_INT(arr_len(v, "reenable"), 1);
	CHECK_STR(str_at(v, "reenable.0.ticket"), id);
	CHECK_STR(str_at(v, "reenable.0.port"), "SW-A:1/9/1");
	CHECK_CONTAINS(str_at(v, "reenable.0.rest.body"), "\"action\":\"enable\"");
	json_free(v);
	child_release(&c);
	/* the link flaps again after the close: a new ticket, no re-enable */
	for (int i = 0; i < 3; i++)
		line_329(&log, T0 + 3600000LL + i * 60000LL, 9);
	test_write(test_tmpdir(), "event.log", log.buf);
	v = run_json(&c, args, 1);
	CHECK_INT(arr_len(v, "reenable"), 0);
	CHECK_INT(arr_len(v, "disable"), 1);
	CHECK(strcmp(str_at(v, "tickets.0.id"), id) != 0);
	CHECK_INT(num_at(v, "disable.0.downs"), 3);
	json_free(v);
	child_release(&c);
	/* closing a ticket that is not there is a usage error naming it */
	const char *bad[] = { "fabric", "ufm", "close", "UFM-00000000", "--state", st.buf, NULL };
	test_run_vigil(&c, bad, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "no ticket 'UFM-00000000'");
	child_release(&c);
	free(id);
	strbuf_release(&log);
	strbuf_release(&p);
	strbuf_release(&st);
}

TEST(ufm_manual_disable_is_not_a_fault)
{
	struct strbuf log = STRBUF_INIT, p = STRBUF_INIT;
	struct child c;
	ufm_format_time(T0 - 1000, &log);
	strbuf_addstr(&log, " [1] [1401] INFO [Maintenance] Switch [site1 / Switch: SW-A / 1/4/1]: "
			    "Port SW-A:1/4/1 was disabled by user admin\n");
	for (int i = 0; i < 5; i++)
		line_329(&log, T0 + i * 60000LL, 4);
	test_write(test_tmpdir(), "event.log", log.buf);
	const char *args[] = { "fabric", "ufm", log_path(&p, "event.log"), "--json", NULL };
	struct json_value *v = run_json(&c, args, 0);
	CHECK_INT(arr_len(v, "disable"), 0);
	CHECK_INT(arr_len(v, "manual"), 1);
	CHECK_INT(num_at(v, "manual.0.events_ignored"), 5);
	json_free(v);
	child_release(&c);
	/* enabled again by hand: later downs count again */
	ufm_format_time(T0 + 3600000LL, &log);
	strbuf_addstr(&log, " [2] [1402] INFO [Maintenance] Switch [site1 / Switch: SW-A / 1/4/1]: "
			    "Port SW-A:1/4/1 was enabled by user admin\n");
	for (int i = 0; i < 3; i++)
		line_329(&log, T0 + 3700000LL + i * 60000LL, 4);
	test_write(test_tmpdir(), "event.log", log.buf);
	v = run_json(&c, args, 1);
	CHECK_INT(arr_len(v, "disable"), 1);
	CHECK_INT(arr_len(v, "manual"), 0);
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
	strbuf_release(&p);
}

/* path, gzip'd by Debian's gzip (vigil itself needs no zlib headers: src/lib/zlite.h) */
static void write_gz(const char *path, const char *data)
{
	const char *argv[] = { "gzip", "-c", NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.stdin_data = data;
	c.stdin_len = strlen(data);
	c.timeout_ms = 60000;
	c.out_cap = 64u << 20;
	CHECK_INT(child_run(&c, NULL), 0);
	CHECK(c.exited && c.exit_code == 0);
	CHECK_INT(write_file(path, c.out.buf, c.out.len, false, NULL), 0);
	child_release(&c);
}

TEST(ufm_rotated_and_gzip_files_in_time_order)
{
	/* one down per file: oldest in event.log.2.gz, then .1, then event.log; given newest
	 * first, they are merged by time: three downs within the window, in order */
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, g = STRBUF_INIT, p0 = STRBUF_INIT,
		      p1 = STRBUF_INIT, p2 = STRBUF_INIT;
	line_329(&g, T0, 3);
	line_329(&b, T0 + 600000, 3);
	line_329(&a, T0 + 1200000, 3);
	test_write(test_tmpdir(), "event.log", a.buf);
	test_write(test_tmpdir(), "event.log.1", b.buf);
	write_gz(log_path(&p2, "event.log.2.gz"), g.buf);
	log_path(&p0, "event.log");
	log_path(&p1, "event.log.1");
	struct child c;
	const char *args[] = { "fabric", "ufm", p0.buf, p1.buf, p2.buf, "--json", NULL };
	struct json_value *v = run_json(&c, args, 1);
	CHECK_INT(arr_len(v, "disable"), 1);
	CHECK_INT(num_at(v, "disable.0.downs"), 3);
	CHECK_STR(str_at(v, "disable.0.first_seen"), "2024-05-01 08:00:00.000");
	CHECK_STR(str_at(v, "disable.0.last_seen"), "2024-05-01 08:20:00.000");
	CHECK(json_path(v, "files.2.gzip")->boolean);
	for (int i = 0; i < 3; i++) {
		char k[32];
		snprintf(k, sizeof(k), "files.%d.out_of_order", i);
		CHECK_INT(num_at(v, k), 0);
		snprintf(k, sizeof(k), "files.%d.events", i);
		CHECK_INT(num_at(v, k), 1);
	}
	json_free(v);
	child_release(&c);
	/* a gzip file cut short is read as far as it goes and said so */
	struct strbuf big = STRBUF_INIT, gzdata = STRBUF_INIT;
	for (int i = 0; i < 2000; i++)
		line_329(&big, T0 + i * 13 * 3600000LL, 3);
	write_gz(log_path(&p2, "cut.gz"), big.buf);
	CHECK_INT(strbuf_add(&gzdata, "", 0), 0);
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(read_file_bounded(p2.buf, &gzdata, 1 << 20, &err), 0);
	test_write_bytes(test_tmpdir(), "cut2.gz", gzdata.buf, gzdata.len / 2);
	const char *cargs[] = { "fabric", "ufm", log_path(&p2, "cut2.gz"), "--json", NULL };
	v = run_json(&c, cargs, 0);
	CHECK(json_path(v, "files.0.gzip_truncated")->boolean);
	CHECK(num_at(v, "files.0.events") > 10);
	json_free(v);
	child_release(&c);
	strbuf_release(&err);
	strbuf_release(&big);
	strbuf_release(&gzdata);
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&g);
	strbuf_release(&p0);
	strbuf_release(&p1);
	strbuf_release(&p2);
}

TEST(ufm_empty_garbage_fifo_and_cut_lines)
{
	struct strbuf p = STRBUF_INIT, log = STRBUF_INIT;
	struct child c;
	test_write(test_tmpdir(), "empty.log", "");
	const char *a1[] = { "fabric", "ufm", log_path(&p, "empty.log"), NULL };
	test_run_vigil(&c, a1, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "cannot tell");
	child_release(&c);
	/* binary garbage with NULs, and a line of 100 KiB */
	char junk[70000];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)((i * 131 + 7) % 256);
	test_write_bytes(test_tmpdir(), "junk.log", junk, sizeof(junk));
	const char *a2[] = { "fabric", "ufm", log_path(&p, "junk.log"), "--json", NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 3);
	child_release(&c);
	/* FIFO: refused, never waited on */
	log_path(&p, "fifo.log");
	CHECK_INT(mkfifo(p.buf, 0600), 0);
	const char *a3[] = { "fabric", "ufm", p.buf, NULL };
	test_run_vigil(&c, a3, NULL);
	CHECK_INT(c.exit_code, 3); /* a log not read: could not tell (2 before vigil(1)'s rule) */
	CHECK_CONTAINS(c.err.buf, "FIFO");
	child_release(&c);
	/* a last line cut mid-write is not used; a line past 64 KiB is garbage, not a crash */
	for (int i = 0; i < 3; i++)
		line_329(&log, T0 + i * 60000LL, 5);
	strbuf_addstr(&log, "2024-05-01 09:00:00.000 [9] [");
	for (int i = 0; i < 70000; i++)
		strbuf_addch(&log, 'x');
	strbuf_addch(&log, '\n');
	line_329(&log, T0 + 3 * 60000LL, 6);
	strbuf_setlen(&log, log.len - 40); /* cut, no newline */
	test_write(test_tmpdir(), "cut.log", log.buf);
	const char *a4[] = { "fabric", "ufm", log_path(&p, "cut.log"), "--json", NULL };
	struct json_value *v = run_json(&c, a4, 1);
	CHECK(json_path(v, "files.0.last_line_cut")->boolean);
	CHECK_INT(num_at(v, "files.0.events"), 3);
	CHECK_INT(num_at(v, "files.0.garbage"), 2);
	CHECK_INT(num_at(v, "files.0.lines"), 5);
	json_free(v);
	child_release(&c);
	/* a missing file: exit 3 naming it (vigil(1): missing input is could not tell; was 2) */
	const char *a5[] = { "fabric", "ufm", "/nonexistent/event.log", NULL };
	test_run_vigil(&c, a5, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "cannot read '/nonexistent/event.log'");
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&log);
}

TEST(ufm_state_never_read_or_written_through_a_link)
{
	struct strbuf log = STRBUF_INIT, p = STRBUF_INIT, st = STRBUF_INIT, target = STRBUF_INIT,
		      link = STRBUF_INIT, after = STRBUF_INIT;
	struct child c;
	for (int i = 0; i < 3; i++)
		line_329(&log, T0 + i * 60000LL, 9);
	test_write(test_tmpdir(), "event.log", log.buf);
	test_mkdir(test_tmpdir(), "state");
	test_write(test_tmpdir(), "precious", "do not touch\n");
	strbuf_addf(&st, "%s/state", test_tmpdir());
	strbuf_addf(&target, "%s/precious", test_tmpdir());
	strbuf_addf(&link, "%s/state/" UFM_STATE_FILE, test_tmpdir());
	CHECK_INT(symlink(target.buf, link.buf), 0);
	const char *args[] = { "fabric", "ufm", log_path(&p, "event.log"), "--state", st.buf, NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	child_release(&c);
	const char *cl[] = { "fabric", "ufm", "close", "UFM-1", "--state", st.buf, NULL };
	test_run_vigil(&c, cl, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(read_file_bounded(target.buf, &after, 4096, &err), 0);
	CHECK_STR(after.buf, "do not touch\n");
	strbuf_release(&err);
	strbuf_release(&log);
	strbuf_release(&p);
	strbuf_release(&st);
	strbuf_release(&target);
	strbuf_release(&link);
	strbuf_release(&after);
}

static const char listener_py[] =
	"import http.server, json, os, sys, threading\n"
	"class H(http.server.BaseHTTPRequestHandler):\n"
	"    def do_POST(self):\n"
	"        n = int(self.headers.get('Content-Length', 0))\n"
	"        body = self.rfile.read(n).decode()\n"
	"        with open(sys.argv[1], 'a') as f:\n"
	"            f.write(json.dumps({'path': self.path, 'auth': self.headers.get("
	"'Authorization', ''), 'body': body}) + '\\n')\n"
	"        self.send_response(200)\n"
	"        self.send_header('Content-Length', '2')\n"
	"        self.end_headers()\n"
	"        self.wfile.write(b'{}')\n"
	"    def log_message(self, *a):\n"
	"        pass\n"
	"s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
	"open(sys.argv[2] + '.tmp', 'w').write(str(s.server_address[1]))\n"
	"os.rename(sys.argv[2] + '.tmp', sys.argv[2])\n"
	"threading.Timer(50, s.shutdown).start()\n"
	"s.serve_forever()\n";

TEST(ufm_apply_makes_the_rest_calls_with_credentials_off_the_command_line)
{
	if (access("/usr/bin/curl", X_OK) != 0)
		SKIP("curl is not installed");
	struct strbuf py = STRBUF_INIT, rec = STRBUF_INIT, portf = STRBUF_INIT, err = STRBUF_INIT,
		      url = STRBUF_INIT, st = STRBUF_INIT, cred = STRBUF_INIT, log = STRBUF_INIT,
		      p = STRBUF_INIT, text = STRBUF_INIT;
	test_write(test_tmpdir(), "listener.py", listener_py);
	strbuf_addf(&py, "%s/listener.py", test_tmpdir());
	strbuf_addf(&rec, "%s/requests.jsonl", test_tmpdir());
	strbuf_addf(&portf, "%s/port", test_tmpdir());
	const char *pargv[] = { "python3", py.buf, rec.buf, portf.buf, NULL };
	struct child srv;
	child_init(&srv);
	srv.argv = pargv;
	srv.timeout_ms = 55000;
	if (child_start(&srv, &err) < 0)
		SKIP("python3 cannot be started");
	for (int i = 0; i < 200 && access(portf.buf, R_OK) != 0; i++)
		usleep(50000);
	CHECK_MSG(read_file_bounded(portf.buf, &text, 64, &err) == 0, "listener did not start");
	strbuf_addf(&url, "http://127.0.0.1:%s", text.buf);

	for (int i = 0; i < 3; i++)
		line_329(&log, T0 + i * 60000LL, 9);
	test_write(test_tmpdir(), "event.log", log.buf);
	test_write(test_tmpdir(), "creds", "ufmadmin:s3cr\"et\\pw\n");
	chmod(log_path(&cred, "creds"), 0600);
	test_mkdir(test_tmpdir(), "state");
	strbuf_addf(&st, "%s/state", test_tmpdir());
	const char *args[] = { "fabric", "ufm", log_path(&p, "event.log"), "--state", st.buf,
			       "--apply", url.buf, "--credentials", cred.buf, "--json", NULL };
	struct child c;
	struct json_value *v = run_json(&c, args, 1);
	CHECK_CONTAINS(c.err.buf, "disabled SW-A:1/9/1: done");
	char *id = xstrdup(str_at(v, "tickets.0.id"));
	json_free(v);
	child_release(&c);
	const char *cl[] = { "fabric", "ufm", "close", id, "--state", st.buf, NULL };
	test_run_vigil(&c, cl, NULL);
	CHECK_INT(c.exit_code, 0);
	child_release(&c);
	v = run_json(&c, args, 1);
	CHECK_CONTAINS(c.err.buf, "enabled SW-A:1/9/1: done");
	json_free(v);
	child_release(&c);
	/* re-enabled through --apply: not asked again */
	const char *again[] = { "fabric", "ufm", p.buf, "--state", st.buf, "--json", NULL };
	v = run_json(&c, again, 0);
	CHECK_INT(arr_len(v, "reenable"), 0);
	json_free(v);
	child_release(&c);

	strbuf_reset(&text);
	CHECK_INT(read_file_bounded(rec.buf, &text, 1 << 20, &err), 0);
	/* two requests: the disable, then the enable, as UFM's Actions REST API wants them */
	CHECK_CONTAINS(text.buf, "\"path\": \"/ufmRest/actions\"");
	CHECK_CONTAINS(text.buf, "\\\"port_id\\\":\\\"9c0591030090e000_9\\\"");
	CHECK_CONTAINS(text.buf, "\\\"action\\\":\\\"disable\\\"");
	CHECK_CONTAINS(text.buf, "\\\"action\\\":\\\"enable\\\"");
	/* Basic ufmadmin:s3cr"et\pw */
	CHECK_CONTAINS(text.buf, "\"auth\": \"Basic dWZtYWRtaW46czNjciJldFxwdw==\"");
	child_kill(&srv, SIGKILL);
	child_finish(&srv);
	child_release(&srv);

	/* the password never on curl's command line: a curl that records what it was given */
	const char *dir = test_script("curl", "printf '%s\\n' \"$@\" > \"$0.argv\"; "
					      "cat > \"$0.stdin\"; printf 200\n");
	struct strbuf path_env = STRBUF_INIT, seen = STRBUF_INIT;
	strbuf_addf(&path_env, "PATH=%s:/usr/bin:/bin", dir);
	const char *env[] = { path_env.buf, NULL };
	test_mkdir(test_tmpdir(), "state2");
	struct strbuf st2 = STRBUF_INIT;
	strbuf_addf(&st2, "%s/state2", test_tmpdir());
	const char *fargs[] = { "fabric", "ufm", p.buf, "--apply", url.buf, "--credentials",
				cred.buf, "--state", st2.buf, NULL };
	test_run_vigil(&c, fargs, env);
	CHECK_MSG(c.exit_code == 1, "%s", c.err.buf);
	child_release(&c);
	strbuf_reset(&text);
	strbuf_addf(&seen, "%s/curl.argv", dir);
	CHECK_INT(read_file_bounded(seen.buf, &text, 1 << 20, &err), 0);
	CHECK_CONTAINS(text.buf, "/ufmRest/actions");
	CHECK_NOT_CONTAINS(text.buf, "s3cr");
	CHECK_MSG(starts_with(text.buf, "-q\n"), "curl would read ~/.curlrc: %s", text.buf);
	strbuf_reset(&text);
	strbuf_reset(&seen);
	strbuf_addf(&seen, "%s/curl.stdin", dir);
	CHECK_INT(read_file_bounded(seen.buf, &text, 1 << 20, &err), 0);
	CHECK_STR(text.buf, "user = \"ufmadmin:s3cr\\\"et\\\\pw\"\n");
	strbuf_release(&st2);
	free(id);
	strbuf_release(&path_env);
	strbuf_release(&seen);
	strbuf_release(&py);
	strbuf_release(&rec);
	strbuf_release(&portf);
	strbuf_release(&err);
	strbuf_release(&url);
	strbuf_release(&st);
	strbuf_release(&cred);
	strbuf_release(&log);
	strbuf_release(&p);
	strbuf_release(&text);
}

/*
 * A curl that records what it was given (argv, stdin, that it ran) and answers as UFM_FAKE
 * says: 200 (default), 400, 500, "hang" (past --rest-timeout), "crash" (answers, then vigil
 * dies before it can record the outcome: a power cut), "lose" (answers, then the state file
 * cannot be written: a directory took its name). A GET of resources/ports answers the
 * file curl.ports with 200.
 */
static const char fake_curl[] =
	"printf '%s\\n' \"$@\" >> \"$0.argv\"; cat > \"$0.stdin\"; echo x >> \"$0.ran\"\n"
	"case \"$*\" in *resources/ports*) cat \"$0.ports\"; printf '\\n200'; exit 0;; esac\n"
	"case \"$UFM_FAKE\" in\n"
	"400) printf 400;;\n"
	"500) printf 500;;\n"
	"hang) exec sleep 30;;\n"
	"crash) printf 200; kill -9 $PPID;;\n"
	"lose) rm -f \"$UFM_STATE/ufm-state.json\"; mkdir \"$UFM_STATE/ufm-state.json\"; printf 200;;\n"
	"*) printf 200;;\n"
	"esac\n";

struct fake {
	struct strbuf path_env, mode_env, state_env, ran, dir, cred, log, st;
};

/* The fake curl on PATH, credentials (0600), a log that makes SW-A:1/9/1 flap, a state dir. */
static void fake_setup(struct fake *f, const char *state_name)
{
	memset(f, 0, sizeof(*f));
	const char *dir = test_script("curl", fake_curl);
	strbuf_addf(&f->dir, "%s", dir);
	strbuf_addf(&f->path_env, "PATH=%s:/usr/bin:/bin", dir);
	strbuf_addf(&f->ran, "%s/curl.ran", dir);
	test_write(dir, "creds", "ufmadmin:pw\n");
	strbuf_addf(&f->cred, "%s/creds", dir);
	chmod(f->cred.buf, 0600);
	struct strbuf l = STRBUF_INIT;
	for (int i = 0; i < 3; i++)
		line_329(&l, T0 + i * 60000LL, 9);
	test_write(dir, "event.log", l.buf);
	strbuf_reset(&l);
	line_329(&l, T0 + 7200000LL, 4); /* later, another link, once: nothing to act on */
	test_write(dir, "event.log.new", l.buf);
	strbuf_release(&l);
	strbuf_addf(&f->log, "%s/event.log", dir);
	strbuf_addf(&f->st, "%s/%s", dir, state_name);
	strbuf_addf(&f->state_env, "UFM_STATE=%s", f->st.buf);
}

static void fake_release(struct fake *f)
{
	strbuf_release(&f->path_env);
	strbuf_release(&f->mode_env);
	strbuf_release(&f->state_env);
	strbuf_release(&f->ran);
	strbuf_release(&f->dir);
	strbuf_release(&f->cred);
	strbuf_release(&f->log);
	strbuf_release(&f->st);
}

static void fake_run(struct fake *f, struct child *c, const char *mode, const char *log,
		     bool apply, const char *extra)
{
	strbuf_reset(&f->mode_env);
	strbuf_addf(&f->mode_env, "UFM_FAKE=%s", mode);
	const char *env[] = { f->path_env.buf, f->mode_env.buf, f->state_env.buf, NULL };
	const char *args[16];
	int n = 0;
	args[n++] = "fabric";
	args[n++] = "ufm";
	args[n++] = log;
	args[n++] = "--state";
	args[n++] = f->st.buf;
	args[n++] = "--json";
	if (apply) {
		args[n++] = "--apply";
		args[n++] = "http://127.0.0.1:9";
		args[n++] = "--credentials";
		args[n++] = f->cred.buf;
	}
	if (extra) {
		args[n++] = "--rest-timeout";
		args[n++] = extra;
	}
	args[n] = NULL;
	test_run_vigil(c, args, env);
}

static bool curl_ran(const struct fake *f)
{
	return access(f->ran.buf, F_OK) == 0;
}

/* issue 17: a --state that did not exist let the disable through, then lost its ticket. Now
 * every state that cannot be written is refused before any REST call. Issue 22: a --state
 * that does not exist is made first (0700), so the ticket is kept in it. */
TEST(ufm_apply_refuses_a_state_it_cannot_write_before_any_call)
{
	struct fake f;
	struct child c;
	struct strbuf kept = STRBUF_INIT;
	fake_setup(&f, "no-such-dir");
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_MSG(curl_ran(&f), "curl did not run with a state made for it");
	strbuf_addf(&kept, "%s/ufm-state.json", f.st.buf);
	CHECK_MSG(access(kept.buf, F_OK) == 0, "the ticket was not kept in the new state dir");
	child_release(&c);
	unlink(f.ran.buf);
	{
		struct strbuf p = STRBUF_INIT;
		const char *names[] = { "ufm-state.json", "ufm-intents.json", "ufm.lock", NULL };
		for (size_t i = 0; names[i]; i++) {
			strbuf_reset(&p);
			strbuf_addf(&p, "%s/%s", f.st.buf, names[i]);
			unlink(p.buf);
		}
		strbuf_release(&p);
	}
	CHECK_MSG(rmdir(f.st.buf) == 0, "cannot remove the state dir: %s", strerror(errno));
	strbuf_release(&kept);
	/* a file, a link to a directory, a directory others can write to */
	test_write(f.dir.buf, "no-such-dir", "x\n");
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "not a directory");
	child_release(&c);
	unlink(f.st.buf);
	test_mkdir(f.dir.buf, "real");
	struct strbuf real = STRBUF_INIT;
	strbuf_addf(&real, "%s/real", f.dir.buf);
	CHECK_INT(symlink(real.buf, f.st.buf), 0);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	child_release(&c);
	unlink(f.st.buf);
	CHECK_INT(mkdir(f.st.buf, 0777), 0);
	chmod(f.st.buf, 0777);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "others can write in it");
	child_release(&c);
	CHECK_MSG(!curl_ran(&f), "curl ran");
	/* under ulimit -f the probe's write fails (EFBIG, said); SIGXFSZ used to kill vigil */
	unlink(f.st.buf);
	rmdir(f.st.buf);
	CHECK_INT(mkdir(f.st.buf, 0700), 0);
	{
		struct strbuf nv = STRBUF_INIT, err = STRBUF_INIT;
		strbuf_addf(&nv, "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
		const char *uenv[] = { f.path_env.buf, nv.buf, NULL };
		const char *uargv[] = { "/bin/sh", "-c", "ulimit -f 1; \"$@\"; echo \"status $?\"",
					"sh", test_vigil_bin(), "fabric", "ufm", f.log.buf, "--state",
					f.st.buf, "--apply", "http://127.0.0.1:9", "--credentials",
					f.cred.buf, NULL };
		child_init(&c);
		c.argv = uargv;
		c.env_add = uenv;
		c.timeout_ms = 30000;
		CHECK_INT(child_run(&c, &err), 0);
		CHECK_MSG(strstr(c.out.buf, "status 2") != NULL, "%s %s", c.out.buf, c.err.buf);
		CHECK_CONTAINS(c.err.buf, "File too large");
		child_release(&c);
		strbuf_release(&nv);
		strbuf_release(&err);
	}
	CHECK_MSG(!curl_ran(&f), "curl ran");
	/* --apply without --state: nowhere to record the call */
	const char *env[] = { f.path_env.buf, NULL };
	const char *a[] = { "fabric", "ufm", f.log.buf, "--apply", "http://127.0.0.1:9",
			    "--credentials", f.cred.buf, NULL };
	test_run_vigil(&c, a, env);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--apply wants --state DIR");
	child_release(&c);
	CHECK_MSG(!curl_ran(&f), "curl ran");
	strbuf_release(&real);
	fake_release(&f);
}

/* The call was made and UFM said 200, then vigil died before it could write the outcome: the
 * intent is on disk; the next run, with logs that no longer name the link, lists the port as
 * "state unknown", and the next --apply run asks UFM and settles it. */
TEST(ufm_apply_crash_after_the_call_keeps_the_intent_and_reconciles)
{
	struct fake f;
	struct child c;
	fake_setup(&f, "state");
	CHECK_INT(mkdir(f.st.buf, 0700), 0);
	/* vigil run under a shell, so that its SIGKILL is the shell's business, not a failure */
	struct strbuf nv = STRBUF_INIT;
	strbuf_addf(&nv, "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
	const char *cenv[] = { f.path_env.buf, "UFM_FAKE=crash", f.state_env.buf, nv.buf, NULL };
	const char *cargv[] = { "/bin/sh", "-c", "\"$@\"; echo \"status $?\"", "sh",
				test_vigil_bin(), "fabric", "ufm", f.log.buf, "--state", f.st.buf,
				"--apply", "http://127.0.0.1:9", "--credentials", f.cred.buf, NULL };
	child_init(&c);
	c.argv = cargv;
	c.env_add = cenv;
	c.timeout_ms = 30000;
	struct strbuf cerr = STRBUF_INIT;
	CHECK_INT(child_run(&c, &cerr), 0);
	CHECK_MSG(strstr(c.out.buf, "status 137") != NULL, "vigil was not killed: %s %s",
		  c.out.buf, c.err.buf);
	CHECK(curl_ran(&f));
	child_release(&c);
	strbuf_release(&cerr);
	strbuf_release(&nv);
	struct strbuf newlog = STRBUF_INIT;
	strbuf_addf(&newlog, "%s.new", f.log.buf);
	fake_run(&f, &c, "200", newlog.buf, false, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s\n%s", c.exit_code, c.out.buf, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 1);
	CHECK_STR(str_at(v, "unknown.0.action"), "disable");
	CHECK_STR(str_at(v, "unknown.0.port"), "SW-A:1/9/1");
	CHECK_STR(str_at(v, "unknown.0.outcome"), "none");
	CHECK(strncmp(str_at(v, "unknown.0.ticket"), "UFM-", 4) == 0);
	json_free(v);
	CHECK_CONTAINS(c.err.buf, "may or may not have been applied");
	child_release(&c);
	/* text says it in words */
	const char *env[] = { f.path_env.buf, NULL };
	const char *ta[] = { "fabric", "ufm", newlog.buf, "--state", f.st.buf, NULL };
	test_run_vigil(&c, ta, env);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "STATE UNKNOWN SW-A:1/9/1");
	CHECK_CONTAINS(c.out.buf, "a disable may have been applied at ");
	child_release(&c);
	/* with --apply, UFM is asked; a state it gives that is not an InfiniBand physical
	 * state (here with a bidi control inside) settles nothing */
	test_write(f.dir.buf, "curl.ports",
		   "[{\"name\": \"9c0591030090e000_9\", \"physical_state\": \"Dis\\u202eabled\"}]");
	fake_run(&f, &c, "200", newlog.buf, true, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "state still unknown (UFM gives a physical state vigil does not know");
	child_release(&c);
	/* it says the port is disabled: settled, the ticket stays */
	test_write(f.dir.buf, "curl.ports",
		   "[{\"name\": \"9c0591030090e000_9\", \"guid\": \"9c0591030090e000\", "
		   "\"number\": 9, \"physical_state\": \"Disabled\", \"logical_state\": \"Down\"}, "
		   "{\"name\": \"9c0591030090e000_10\", \"physical_state\": \"Link Up\"}]");
	fake_run(&f, &c, "200", newlog.buf, true, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "was applied");
	v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 0);
	json_free(v);
	child_release(&c);
	fake_run(&f, &c, "200", newlog.buf, false, NULL);
	CHECK_INT(c.exit_code, 0);
	v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 0);
	json_free(v);
	child_release(&c);
	strbuf_release(&newlog);
	fake_release(&f);
}

/* The call was made (200), then the state could not be written: the exit says so, the
 * outcome is in the intents, and the next run restores the ticket from them. */
TEST(ufm_apply_state_write_failing_after_the_call_loses_no_ticket)
{
	struct fake f;
	struct child c;
	struct strbuf sf = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT,
		      newlog = STRBUF_INIT;
	fake_setup(&f, "state");
	CHECK_INT(mkdir(f.st.buf, 0700), 0);
	fake_run(&f, &c, "lose", f.log.buf, true, NULL);
	/* the state not kept after the work: could not tell (2 before vigil(1)'s rule) */
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "disabled SW-A:1/9/1: done");
	CHECK_CONTAINS(c.err.buf, "the next run takes them in");
	child_release(&c);
	strbuf_addf(&sf, "%s/" UFM_STATE_FILE, f.st.buf);
	CHECK_INT(rmdir(sf.buf), 0);
	/* the ticket is known to the journal only: close finds it there */
	struct strbuf ip = STRBUF_INIT;
	strbuf_addf(&ip, "%s/" UFM_INTENTS_FILE, f.st.buf);
	CHECK_INT(read_file_bounded(ip.buf, &text, 1 << 20, &err), 0);
	struct json_value *j = json_parse(text.buf, text.len, &err);
	CHECK(j != NULL);
	CHECK_STR(str_at(j, "intents.0.outcome"), "done");
	char *id = xstrdup(str_at(j, "intents.0.ticket"));
	json_free(j);
	strbuf_release(&ip);
	strbuf_reset(&text);
	const char *cl[] = { "fabric", "ufm", "close", id, "--state", f.st.buf, NULL };
	test_run_vigil(&c, cl, NULL);
	CHECK_MSG(c.exit_code == 0, "%s", c.err.buf);
	child_release(&c);
	/* the state holds the ticket again, closed: its port is to be re-enabled */
	CHECK_INT(read_file_bounded(sf.buf, &text, 1 << 20, &err), 0);
	CHECK_CONTAINS(text.buf, id);
	CHECK_CONTAINS(text.buf, "\"port\": \"SW-A:1/9/1\"");
	strbuf_addf(&newlog, "%s.new", f.log.buf);
	fake_run(&f, &c, "200", newlog.buf, false, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 0);
	CHECK_STR(str_at(v, "reenable.0.ticket"), id);
	json_free(v);
	child_release(&c);
	free(id);
	strbuf_release(&sf);
	strbuf_release(&text);
	strbuf_release(&err);
	strbuf_release(&newlog);
	fake_release(&f);
}

/* The same as an unprivileged user in a jail (bubblewrap): the state directory made
 * read-only between the call and the record of its outcome, as chmod does. The intent
 * written before the call is what the next run finds. */
TEST(ufm_apply_state_made_read_only_after_the_call_in_a_jail)
{
	if (access("/usr/bin/bwrap", X_OK) != 0)
		SKIP("bubblewrap is not installed");
	struct fake f;
	struct child c;
	fake_setup(&f, "state");
	CHECK_INT(mkdir(f.st.buf, 0700), 0);
	test_script("curl", "echo x >> \"$0.ran\"; cat > /dev/null; chmod 500 \"$UFM_STATE\"; "
			    "printf 200");
	struct strbuf nv = STRBUF_INIT, cmd = STRBUF_INIT;
	strbuf_addf(&nv, "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
	const char *env[] = { f.path_env.buf, f.state_env.buf, nv.buf, NULL };
	const char *argv[] = { "/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc",
			       "/proc", "--bind", f.dir.buf, f.dir.buf, "--unshare-user", "--uid",
			       "65534", "--gid", "65534", "--", test_vigil_bin(), "fabric", "ufm",
			       f.log.buf, "--state", f.st.buf, "--apply", "http://127.0.0.1:9",
			       "--credentials", f.cred.buf, NULL };
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 30000;
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(child_run(&c, &err), 0);
	if (c.exited && c.exit_code != 2 && strstr(c.err.buf, "bwrap"))
		SKIP("bubblewrap cannot make a user namespace here");
	CHECK_MSG(c.exited && c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "disabled SW-A:1/9/1: done");
	CHECK_CONTAINS(c.err.buf, "its intent stays on disk");
	child_release(&c);
	CHECK_INT(chmod(f.st.buf, 0700), 0);
	struct strbuf newlog = STRBUF_INIT;
	strbuf_addf(&newlog, "%s.new", f.log.buf);
	fake_run(&f, &c, "200", newlog.buf, false, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 1);
	CHECK_STR(str_at(v, "unknown.0.port"), "SW-A:1/9/1");
	json_free(v);
	child_release(&c);
	strbuf_release(&nv);
	strbuf_release(&cmd);
	strbuf_release(&err);
	strbuf_release(&newlog);
	fake_release(&f);
}

/* HTTP 500 or a deadline after the request went out: it may have been applied (carried);
 * HTTP 400: UFM refused it (not applied, nothing carried). */
TEST(ufm_apply_500_and_a_hung_curl_are_unknown_400_is_not_applied)
{
	struct fake f;
	struct child c;
	fake_setup(&f, "state");
	CHECK_INT(mkdir(f.st.buf, 0700), 0);
	fake_run(&f, &c, "500", f.log.buf, true, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 1);
	CHECK_STR(str_at(v, "unknown.0.detail"), "HTTP 500");
	json_free(v);
	CHECK_CONTAINS(c.err.buf, "state unknown, it may have been applied: HTTP 500");
	child_release(&c);
	/* the log still says disable: the next --apply makes the call again, 200 settles both */
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 0);
	json_free(v);
	child_release(&c);
	fake_run(&f, &c, "hang", f.log.buf, true, "1");
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 1);
	CHECK_CONTAINS(str_at(v, "unknown.0.detail"), "--rest-timeout");
	json_free(v);
	child_release(&c);
	fake_run(&f, &c, "400", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "failed: HTTP 400");
	v = test_parse_json(&c);
	/* the hung call before is still unknown; the refused one is not */
	CHECK_INT(arr_len(v, "unknown"), 1);
	CHECK_STR(str_at(v, "calls.0.outcome"), "not_applied");
	char *id = xstrdup(str_at(v, "unknown.0.ticket"));
	json_free(v);
	child_release(&c);
	/* closing the ticket (a person saw to the port) settles the unknown disable; its port
	 * is to be re-enabled */
	const char *cl[] = { "fabric", "ufm", "close", id, "--state", f.st.buf, NULL };
	test_run_vigil(&c, cl, NULL);
	CHECK_MSG(c.exit_code == 0, "%s", c.err.buf);
	child_release(&c);
	struct strbuf newlog = STRBUF_INIT;
	strbuf_addf(&newlog, "%s.new", f.log.buf);
	fake_run(&f, &c, "200", newlog.buf, false, NULL);
	CHECK_INT(c.exit_code, 1);
	v = test_parse_json(&c);
	CHECK_INT(arr_len(v, "unknown"), 0);
	CHECK_STR(str_at(v, "reenable.0.ticket"), id);
	json_free(v);
	child_release(&c);
	strbuf_release(&newlog);
	free(id);
	fake_release(&f);
}

/* The credentials hold UFM's password: refused as ssh refuses a private key others can read. */
TEST(ufm_credentials_others_can_read_are_refused)
{
	struct fake f;
	struct child c;
	fake_setup(&f, "state");
	CHECK_INT(mkdir(f.st.buf, 0700), 0);
	chmod(f.cred.buf, 0644);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "permissions 0644 for '");
	CHECK_CONTAINS(c.err.buf, "are too open");
	CHECK_MSG(!curl_ran(&f), "curl ran with world-readable credentials");
	child_release(&c);
	chmod(f.cred.buf, 0620);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "permissions 0620");
	child_release(&c);
	/* over the size limit, said in a unit that is right */
	struct strbuf big = STRBUF_INIT;
	strbuf_addstr(&big, "ufmadmin:");
	for (int i = 0; i < 5000; i++)
		strbuf_addch(&big, 'p');
	test_write(f.dir.buf, "creds", big.buf);
	chmod(f.cred.buf, 0600);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "longer than 4 KiB");
	CHECK_NOT_CONTAINS(c.err.buf, "0 MiB");
	child_release(&c);
	/* a link (also /proc/self/fd/N), a FIFO */
	test_write(f.dir.buf, "creds.real", "ufmadmin:pw\n");
	struct strbuf real = STRBUF_INIT;
	strbuf_addf(&real, "%s/creds.real", f.dir.buf);
	chmod(real.buf, 0600);
	unlink(f.cred.buf);
	CHECK_INT(symlink(real.buf, f.cred.buf), 0);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	child_release(&c);
	unlink(f.cred.buf);
	CHECK_INT(mkfifo(f.cred.buf, 0600), 0);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "FIFO");
	child_release(&c);
	const char *env[] = { f.path_env.buf, NULL };
	const char *a[] = { "fabric", "ufm", f.log.buf, "--state", f.st.buf, "--apply",
			    "http://127.0.0.1:9", "--credentials", "/proc/self/fd/0", NULL };
	test_run_vigil(&c, a, env);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	CHECK_MSG(!curl_ran(&f), "curl ran");
	strbuf_release(&big);
	strbuf_release(&real);
	fake_release(&f);
}

/* Two runs at once would each write the state the other loses: the second is refused. The
 * intents file garbage, cut mid-record, too big or a link: refused, nothing called. A URL
 * with a newline, a space or user:password@: refused. */
TEST(ufm_state_lock_and_damaged_intents_are_refused)
{
	struct fake f;
	struct child c;
	struct strbuf lk = STRBUF_INIT, in = STRBUF_INIT;
	fake_setup(&f, "state");
	CHECK_INT(mkdir(f.st.buf, 0700), 0);
	strbuf_addf(&lk, "%s/" UFM_LOCK_FILE, f.st.buf);
	int fd = open(lk.buf, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_INT(flock(fd, LOCK_EX), 0);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "another 'vigil fabric ufm' is using");
	child_release(&c);
	const char *cl[] = { "fabric", "ufm", "close", "UFM-1", "--state", f.st.buf, NULL };
	test_run_vigil(&c, cl, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "another 'vigil fabric ufm' is using");
	child_release(&c);
	close(fd);
	CHECK_MSG(!curl_ran(&f), "curl ran");
	strbuf_addf(&in, "%s/" UFM_INTENTS_FILE, f.st.buf);
	const char *bad[] = {
		"garbage\n",
		"{\"version\": 1, \"intents\": [{\"ticket\": \"UFM-1\", \"action\": \"disa",
		"{\"version\": 1, \"intents\": [{\"ticket\": \"UFM-1\", \"action\": \"reboot\", "
		"\"port\": \"X:1\"}]}\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		test_write(f.st.buf, UFM_INTENTS_FILE, bad[i]);
		fake_run(&f, &c, "200", f.log.buf, true, NULL);
		CHECK_MSG(c.exit_code == 2, "case %zu: exit %d", i, c.exit_code);
		CHECK_CONTAINS(c.err.buf, UFM_INTENTS_FILE);
		CHECK_CONTAINS(c.err.buf, "nothing was done");
		child_release(&c);
	}
	int big = open(in.buf, O_WRONLY | O_TRUNC | O_CLOEXEC);
	CHECK(big >= 0);
	CHECK_INT(ftruncate(big, 9 << 20), 0);
	close(big);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "longer than 8 MiB");
	child_release(&c);
	unlink(in.buf);
	CHECK_INT(symlink("/etc/passwd", in.buf), 0);
	fake_run(&f, &c, "200", f.log.buf, true, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	child_release(&c);
	unlink(in.buf);
	CHECK_MSG(!curl_ran(&f), "curl ran");
	const char *urls[] = { "http://127.0.0.1:9/\nx", "http://127.0.0.1:9/ $(touch x)",
			       "https://admin:pw@ufm.example", "http://127.0.0.1:9/#",
			       "http://127.0.0.1:9/x?y=" };
	for (size_t i = 0; i < 5; i++) {
		const char *env[] = { f.path_env.buf, NULL };
		const char *a[] = { "fabric", "ufm", f.log.buf, "--state", f.st.buf, "--apply",
				    urls[i], "--credentials", f.cred.buf, NULL };
		test_run_vigil(&c, a, env);
		CHECK_MSG(c.exit_code == 2, "url %zu: exit %d", i, c.exit_code);
		child_release(&c);
	}
	CHECK_MSG(!curl_ran(&f), "curl ran");
	strbuf_release(&lk);
	strbuf_release(&in);
	fake_release(&f);
}

TEST(ufm_usage_errors)
{
	struct child c;
	const char *a1[] = { "fabric", "ufm", NULL };
	test_run_vigil(&c, a1, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a2[] = { "fabric", "ufm", "x.log", "--apply", "http://127.0.0.1:1", NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--credentials");
	child_release(&c);
	const char *a3[] = { "fabric", "ufm", "x.log", "--flap-downs", "1", NULL };
	test_run_vigil(&c, a3, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a4[] = { "fabric", "ufm", "close", "UFM-1", NULL };
	test_run_vigil(&c, a4, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a5[] = { "fabric", "ufm", "--help", NULL };
	test_run_vigil(&c, a5, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "--credentials FILE");
	child_release(&c);
}

/* zlib is loaded when a gzip'd file comes (vigil builds without its headers): where it cannot
 * be, the file is refused by name, saying why, and nothing is guessed. */
TEST(ufm_gzip_without_zlib_says_so)
{
	struct strbuf g = STRBUF_INIT, p = STRBUF_INIT;
	line_329(&g, T0, 3);
	write_gz(log_path(&p, "event.log.1.gz"), g.buf);
	const char *args[] = { "fabric", "ufm", p.buf, "--json", NULL };
	const char *env[] = { "VIGIL_ZLIB_LIBRARY=/nonexistent/libz.so.1", NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_INT(c.exit_code, 3); /* a log not read: could not tell (2 before vigil(1)'s rule) */
	CHECK_CONTAINS(c.err.buf, "event.log.1.gz");
	CHECK_CONTAINS(c.err.buf, "zlib (/nonexistent/libz.so.1, Debian's zlib1g) could not be loaded");
	child_release(&c);
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0); /* with zlib: read, one link down once, nothing to act on */
	CHECK_NOT_CONTAINS(c.err.buf, "could not be loaded");
	CHECK_CONTAINS(c.out.buf, "event.log.1.gz");
	child_release(&c);
	strbuf_release(&g);
	strbuf_release(&p);
}
