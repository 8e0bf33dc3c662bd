/*
 * test_journal.c: the supervisor's run journal (src/supervise/journal.h): one fsync'd JSON line
 * per record, created 0644 exclusively and never through a planted link, FIFO, hard link or
 * another user's file; bounded lines whatever the text; and replay after every kind of record,
 * after a kill -9 tore the last line, and over damaged lines.
 */
#include "../harness.h"
#include "../../src/supervise/journal.h"
#include "../../src/supervise/machine.h"
#include "../../src/lib/fileio.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static void path_in_tmp(struct strbuf *p, const char *name)
{
	strbuf_reset(p);
	strbuf_addf(p, "%s/%s", test_tmpdir(), name);
}

static void replay_ok(const char *path, struct journal_replay *r)
{
	struct strbuf err = STRBUF_INIT;
	CHECK_MSG(journal_replay(path, r, &err) == 0, "replay: %s", err.buf);
	strbuf_release(&err);
}

static void append_ok(struct journal *j, const struct journal_record *rec)
{
	struct strbuf err = STRBUF_INIT;
	CHECK_MSG(journal_append(j, rec, &err) == 0, "append: %s", err.buf);
	strbuf_release(&err);
}

TEST(journal_replay_after_every_kind_of_record)
{
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT, text = STRBUF_INIT;
	struct journal j;
	struct journal_replay r;
	struct stat st;
	path_in_tmp(&p, "journal.jsonl");
	replay_ok(p.buf, &r);
	CHECK(!r.found); /* no journal: a fresh run */
	umask(077);
	CHECK_INT(journal_open(&j, p.buf, &err), 0);
	CHECK(stat(p.buf, &st) == 0 && (st.st_mode & 0777) == 0644);

	const char *const hosts[] = { "n1", "n2" };
	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_RUN_STARTED, .t = 100.5 });
	replay_ok(p.buf, &r);
	CHECK(r.found && r.records == 1 && !r.started_any && !r.attempt_open && !r.finished);
	journal_replay_release(&r);

	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_ATTEMPT_STARTED, .t = 101,
						.attempt = 0, .step_id = "812.0", .hosts = hosts,
						.nr_hosts = 2 });
	replay_ok(p.buf, &r);
	CHECK(r.started_any && r.attempt_open && r.attempt == 0);
	CHECK_STR(r.step_id, "812.0");
	journal_replay_release(&r);

	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_STEP, .t = 102, .has_step = true,
						.step = 120, .has_loss = true, .loss = 2.31 });
	replay_ok(p.buf, &r);
	CHECK(r.has_step && r.last_step == 120 && r.attempt_open);
	journal_replay_release(&r);

	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_EVENT, .t = 130, .name = "hang",
						.host = "n2", .text = "no step for 31 s",
						.has_latency = true, .happened = 102,
						.detected = 133.5 });
	replay_ok(p.buf, &r);
	CHECK(r.attempt_open && r.records == 4 && !r.unknown_kinds);
	journal_replay_release(&r);

	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_HOST_EXCLUDED, .t = 131,
						.host = "n2", .text = "vigil: Xid 79" });
	replay_ok(p.buf, &r);
	CHECK_INT(r.nr_excluded, 1);
	CHECK_STR(r.excluded[0].host, "n2");
	CHECK_STR(r.excluded[0].reason, "vigil: Xid 79");
	journal_replay_release(&r);

	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_ATTEMPT_ENDED, .t = 140,
						.name = "hang", .has_code = true, .code = 137 });
	replay_ok(p.buf, &r);
	CHECK(!r.attempt_open && !r.step_id && r.started_any);
	journal_replay_release(&r);

	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_ATTEMPT_STARTED, .t = 150,
						.attempt = 1, .restarts = 1, .step_id = "812.1" });
	replay_ok(p.buf, &r);
	CHECK(r.attempt_open && r.attempt == 1 && r.restarts == 1);
	CHECK_STR(r.step_id, "812.1");
	CHECK(r.last_step == 120 && r.last_step_attempt == 0);
	journal_replay_release(&r);

	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_RUN_ENDED, .t = 160, .attempt = 1,
						.name = "done" });
	replay_ok(p.buf, &r);
	CHECK(r.finished && r.records == 8 && !r.bad_lines && !r.torn_tail);
	CHECK_STR(r.outcome, "done");
	journal_replay_release(&r);
	journal_close(&j);

	/* what a reader sees: one JSON object a line, the fields named in journal.h */
	CHECK_INT(read_file_bounded(p.buf, &text, 1 << 20, &err), READ_OK);
	CHECK_CONTAINS(text.buf, "{\"t\":100.500,\"kind\":\"run_started\",\"attempt\":0}\n");
	CHECK_CONTAINS(text.buf, "\"kind\":\"event\",\"attempt\":0,\"class\":\"hang\",\"host\":\"n2\","
				 "\"detail\":\"no step for 31 s\",\"happened\":102.000,"
				 "\"detected\":133.500,\"latency_s\":31.500}\n");
	CHECK_CONTAINS(text.buf, "\"step_id\":\"812.0\",\"hosts\":[\"n1\",\"n2\"]}\n");
	CHECK_CONTAINS(text.buf, "\"outcome\":\"hang\",\"code\":137}\n");
	CHECK_CONTAINS(text.buf, "\"step\":120,\"loss\":2.31}\n");
	/* reopened: appended to, never truncated or created again */
	CHECK_INT(journal_open(&j, p.buf, &err), 0);
	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_EVENT, .name = "x" });
	journal_close(&j);
	replay_ok(p.buf, &r);
	CHECK_INT(r.records, 9);
	journal_replay_release(&r);
	strbuf_release(&p);
	strbuf_release(&err);
	strbuf_release(&text);
}

TEST(journal_torn_last_line_from_a_kill)
{
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	struct journal j;
	struct journal_replay r;
	path_in_tmp(&p, "journal.jsonl");
	CHECK_INT(journal_open(&j, p.buf, &err), 0);
	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_ATTEMPT_STARTED, .attempt = 0,
						.step_id = "5.0" });
	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_STEP, .has_step = true,
						.step = 40 });
	journal_close(&j);
	/* kill -9 in the middle of the next write */
	FILE *f = fopen(p.buf, "a");
	fputs("{\"t\":3,\"kind\":\"attempt_ended\",\"att", f);
	fclose(f);
	replay_ok(p.buf, &r);
	CHECK(r.torn_tail && r.records == 2 && !r.bad_lines);
	/* the torn record is not believed: the step may still run */
	CHECK(r.attempt_open && r.last_step == 40);
	CHECK_STR(r.step_id, "5.0");
	journal_replay_release(&r);
	/* the next supervisor appends on a fresh line; the torn one stays a counted bad line */
	CHECK_INT(journal_open(&j, p.buf, &err), 0);
	CHECK(j.need_newline);
	append_ok(&j, &(struct journal_record){ .kind = JOURNAL_ATTEMPT_ENDED, .attempt = 0,
						.name = "supervisor_restart" });
	journal_close(&j);
	replay_ok(p.buf, &r);
	CHECK(!r.torn_tail && r.bad_lines == 1 && r.records == 3 && !r.attempt_open);
	journal_replay_release(&r);
	strbuf_release(&p);
	strbuf_release(&err);
}

TEST(journal_damaged_lines_and_garbage)
{
	struct journal_replay r;
	struct strbuf t = STRBUF_INIT;
	strbuf_addstr(&t, "{\"kind\":\"attempt_started\",\"attempt\":3,\"restarts\":2}\n");
	strbuf_addstr(&t, "\xff\xfe garbage\n[1,2]\n{\"no\":\"kind\"}\n\n   \n");
	strbuf_add(&t, "{\"kind\":\0\"step\"}\n", 17);
	strbuf_addstr(&t, "{\"kind\":\"from_the_future\"}\n");
	strbuf_addstr(&t, "{\"kind\":\"step\",\"step\":-5}\n{\"kind\":\"step\",\"step\":7}\n");
	strbuf_addstr(&t, "{\"kind\":\"host_excluded\",\"host\":\"n9\"}\n");
	strbuf_addstr(&t, "{\"kind\":\"host_excluded\",\"host\":\"n9\",\"reason\":\"again\"}\n");
	strbuf_addstr(&t, "{\"kind\":\"host_excluded\",\"host\":\"\"}\n");
	/* a line past JOURNAL_LINE_MAX is damage, not memory */
	strbuf_addstr(&t, "{\"kind\":\"event\",\"detail\":\"");
	for (int i = 0; i < JOURNAL_LINE_MAX; i++)
		strbuf_addch(&t, 'x');
	strbuf_addstr(&t, "\"}\n");
	journal_replay_text(t.buf, t.len, &r);
	CHECK_INT(r.bad_lines, 5);
	CHECK_INT(r.unknown_kinds, 1);
	CHECK(r.attempt == 3 && r.restarts == 2 && r.attempt_open && !r.torn_tail);
	CHECK(r.has_step && r.last_step == 7 && r.last_step_attempt == 3);
	CHECK_INT(r.nr_excluded, 1);
	CHECK(r.excluded[0].reason == NULL);
	journal_replay_release(&r);
	strbuf_release(&t);
}

TEST(journal_lines_are_bounded)
{
	struct strbuf big = STRBUF_INIT, line = STRBUF_INIT, err = STRBUF_INIT;
	char **names = xcalloc(10000, sizeof(char *));
	for (int i = 0; i < 1 << 20; i++)
		strbuf_addch(&big, i % 7 ? 'a' : '\x1b');
	strbuf_addstr(&big, "\xc3\xa9");
	for (int i = 0; i < 10000; i++) {
		names[i] = xmalloc(300);
		snprintf(names[i], 300, "node-%0280d", i);
	}
	journal_format(&(struct journal_record){ .kind = JOURNAL_ATTEMPT_STARTED,
						 .text = big.buf, .host = big.buf, .name = big.buf,
						 .step_id = big.buf,
						 .hosts = (const char *const *)names,
						 .nr_hosts = 10000 },
		       &line);
	CHECK(line.len <= JOURNAL_LINE_MAX);
	struct json_value *v = json_parse(line.buf, line.len, &err);
	CHECK_MSG(v != NULL, "the bounded line does not parse: %s", err.buf);
	double omitted = 0;
	CHECK(json_get_number(v, "hosts_omitted", &omitted) && omitted > 9000);
	const char *d = json_get_string(v, "detail");
	CHECK(d && strlen(d) == JOURNAL_TEXT_MAX + 3 && ends_with(d, "..."));
	json_free(v);
	for (int i = 0; i < 10000; i++)
		free(names[i]);
	free(names);
	strbuf_release(&big);
	strbuf_release(&line);
	strbuf_release(&err);
}

/* A step record keeps the trainer's tokens and MFU (0 to 1); an MFU out of range or not a
 * number is left out, never written as a figure diagnose steps would read. */
TEST(journal_step_keeps_tokens_and_only_a_real_mfu)
{
	struct strbuf line = STRBUF_INIT;
	journal_format(&(struct journal_record){ .kind = JOURNAL_STEP, .has_step = true,
						 .step = 12, .has_tokens = true, .tokens = 4096,
						 .has_mfu = true, .mfu = 0.3429 },
		       &line);
	CHECK_CONTAINS(line.buf, "\"step\":12,\"tokens\":4096,\"mfu\":0.3429");
	const double bad[] = { -0.1, 1.5, NAN, INFINITY };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		strbuf_reset(&line);
		journal_format(&(struct journal_record){ .kind = JOURNAL_STEP, .has_step = true,
							 .step = 12, .has_mfu = true,
							 .mfu = bad[i] },
			       &line);
		CHECK_NOT_CONTAINS(line.buf, "mfu");
	}
	strbuf_release(&line);
}

TEST(journal_refuses_planted_files)
{
	struct strbuf p = STRBUF_INIT, target = STRBUF_INIT, err = STRBUF_INIT;
	struct journal j;
	struct journal_replay r;
	const char *tmp = test_tmpdir();
	test_write(tmp, "victim", "keep me\n");
	strbuf_addf(&target, "%s/victim", tmp);

	path_in_tmp(&p, "link.jsonl");
	CHECK(symlink(target.buf, p.buf) == 0);
	CHECK_INT(journal_open(&j, p.buf, &err), -1);
	CHECK_CONTAINS(err.buf, "it is a symbolic link");
	CHECK_INT(journal_replay(p.buf, &r, &err), -1);
	CHECK_CONTAINS(err.buf, "it is a symbolic link");

	path_in_tmp(&p, "fifo.jsonl");
	CHECK(mkfifo(p.buf, 0600) == 0);
	CHECK_INT(journal_open(&j, p.buf, &err), -1);
	CHECK_CONTAINS(err.buf, "FIFO");
	CHECK_INT(journal_replay(p.buf, &r, &err), -1);
	CHECK_CONTAINS(err.buf, "not a regular file");

	path_in_tmp(&p, "hard.jsonl");
	CHECK(link(target.buf, p.buf) == 0);
	CHECK_INT(journal_open(&j, p.buf, &err), -1);
	CHECK_CONTAINS(err.buf, "hard links");

	path_in_tmp(&p, "dir.jsonl");
	test_mkdir(tmp, "dir.jsonl");
	CHECK_INT(journal_open(&j, p.buf, &err), -1);
	CHECK_CONTAINS(err.buf, "cannot open '");

	if (geteuid() == 0) {
		path_in_tmp(&p, "other.jsonl");
		test_write(tmp, "other.jsonl", "");
		CHECK(chown(p.buf, 65534, 65534) == 0);
		CHECK_INT(journal_open(&j, p.buf, &err), -1);
		CHECK_CONTAINS(err.buf, "belongs to uid 65534");
	}
	struct strbuf text = STRBUF_INIT;
	CHECK_INT(read_file_bounded(target.buf, &text, 4096, &err), READ_OK);
	CHECK_STR(text.buf, "keep me\n");
	strbuf_release(&text);
	strbuf_release(&p);
	strbuf_release(&target);
	strbuf_release(&err);
}

/* A journal of many distinct excluded hosts: replayed and resumed from in time linear in the
 * hosts (issue 17: each host was looked up in a list of all before it, twice, 19 s for 100,000
 * before vigil run did anything). 50,000 hosts: well under a second here under ASan; the old
 * code ran past this test's 8 s alarm (measured) */
TEST_TIMEOUT(journal_resume_with_50000_excluded_hosts_is_linear, 8)
{
	struct strbuf p = STRBUF_INIT, f = STRBUF_INIT;
	enum { HOSTS = 50000 };
	strbuf_addstr(&f, "{\"t\":1.0,\"kind\":\"run_started\",\"nodes\":4}\n"
			  "{\"t\":2.0,\"kind\":\"attempt_started\",\"attempt\":1,\"restarts\":0}\n");
	for (int i = 0; i < HOSTS; i++)
		strbuf_addf(&f, "{\"t\":3.0,\"kind\":\"host_excluded\",\"attempt\":1,\"host\":"
			       "\"n%06d\",\"reason\":\"vigil: Xid 79\"}\n", i);
	/* and each once more (a resumed run repeats its exclusions): still one each */
	for (int i = 0; i < HOSTS; i += 7)
		strbuf_addf(&f, "{\"t\":4.0,\"kind\":\"host_excluded\",\"attempt\":1,\"host\":"
			       "\"n%06d\",\"reason\":\"again\"}\n", i);
	test_write_bytes(test_tmpdir(), "big.jsonl", f.buf, f.len);
	path_in_tmp(&p, "big.jsonl");
	struct journal_replay r;
	replay_ok(p.buf, &r);
	CHECK_INT(r.nr_excluded, HOSTS);
	CHECK_STR(r.excluded[0].reason, "vigil: Xid 79");
	struct sup_machine m;
	struct sup_actions a = { 0 };
	sup_machine_init(&m, 4, 3);
	sup_machine_resume(&m, &r, &a);
	CHECK_INT(sup_machine_count(&m, SUP_HOST_EXCLUDED), HOSTS);
	const struct sup_host *h = sup_machine_host(&m, "n049999");
	CHECK(h && h->role == SUP_HOST_EXCLUDED);
	CHECK(!sup_machine_host(&m, "n050000"));
	sup_actions_release(&a);
	sup_machine_release(&m);
	journal_replay_release(&r);
	strbuf_release(&p);
	strbuf_release(&f);
}
