/*
 * test_fleet_step.c: the one-step check round's splitter and matcher (src/slurm/fleet_step.c)
 * on srun's real line shapes (tests/data/slurm-step/, seen on the testbed's Slurm 22.05; see
 * tests/data/realworld/slurm-step.md): lines of tasks interleaved and cut by chunks anywhere,
 * srun's 1024-byte cut of a long line, a truncated report, an overlong line, binary garbage,
 * a task that names another node, a launch failure, a usage exit; and the hostlist.
 * The same through the real srun is test_slurm_e2e_onestep.c.
 */
#include "../harness.h"
#include "../../src/core/report.h"
#include "../../src/lib/fileio.h"
#include "../../src/slurm/fleet_step.h"

/* A report as 'vigil check --json' writes it, for host; long pads a finding past 1 KiB. */
static char *report_for(const char *host, bool sick, size_t pad)
{
	struct report rep;
	struct strbuf js = STRBUF_INIT, msg = STRBUF_INIT;
	report_init(&rep, host, 1764800000.0);
	struct check_result *r = report_add(&rep, "kernel");
	strbuf_addstr(&msg, sick ? "Xid 79 on GPU 0000:9b:00.0: GPU has fallen off the bus"
				 : "no GPU errors in the kernel log");
	for (size_t i = 0; i < pad; i++)
		strbuf_addch(&msg, "abcdefgh"[i % 8]);
	result_add(r, sick ? STATUS_FAIL : STATUS_OK, sick ? ACTION_REBOOT : ACTION_NONE, "xid",
		   "GPU 0", "%s", msg.buf);
	result_finish(r);
	report_finish(&rep);
	report_json(&rep, &js, false);
	report_release(&rep);
	strbuf_release(&msg);
	return strbuf_detach(&js, NULL);
}

/* srun --label's stdout for task t printing text: cut at 1024 bytes, each piece its own
 * labelled line (as srun 22.05 did on the testbed: 1027-byte lines "0: " + 1024). */
static void labelled(struct strbuf *out, unsigned t, const char *text, unsigned width)
{
	size_t len = strlen(text);
	for (size_t at = 0; at < len;) {
		size_t n = len - at > 1024 ? 1024 : len - at;
		const char *nl = memchr(text + at, '\n', n);
		if (nl)
			n = (size_t)(nl - (text + at)) + 1;
		strbuf_addf(out, "%*u: ", (int)width, t);
		strbuf_add(out, text + at, n);
		if (text[at + n - 1] != '\n')
			strbuf_addch(out, '\n');
		at += n;
	}
}

/* Rows gpu11.. with the step's idx; the caller releases with fleet_release. */
static void rows_for(struct fleet *f, size_t n, size_t *idx)
{
	f->rows = xcalloc(n, sizeof(*f->rows));
	f->nr = n;
	for (size_t i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "gpu%zu", 11 + i);
		f->rows[i].node.name = xstrdup(name);
		f->rows[i].node.state = xstrdup("IDLE");
		f->rows[i].node.reason = xstrdup("");
		f->rows[i].node.partitions = xstrdup("");
		f->rows[i].node.addr = xstrdup("");
		f->rows[i].run = true;
		f->rows[i].exit_code = -1;
		idx[i] = i;
	}
}

static char *fixture(const char *name)
{
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT;
	strbuf_addf(&p, "%s/tests/data/slurm-step/%s", test_srcdir(), name);
	CHECK_MSG(read_file_bounded(p.buf, &sb, 1 << 20, NULL) == 0, "cannot read %s", p.buf);
	strbuf_release(&p);
	return strbuf_detach(&sb, NULL);
}

/* Feed out and err in chunks of step bytes, stdout and stderr alternating. */
static void feed(struct fleet_split *s, const struct strbuf *out, const char *err, size_t step)
{
	size_t eo = 0, ee = 0, elen = strlen(err);
	while (eo < out->len || ee < elen) {
		size_t n = out->len - eo < step ? out->len - eo : step;
		fleet_split_feed(s, 1, out->buf + eo, n, 100);
		eo += n;
		n = elen - ee < step ? elen - ee : step;
		fleet_split_feed(s, 2, err + ee, n, 100);
		ee += n;
	}
	fleet_split_finish(s, 200);
}

TEST(fleet_step_interleaved_and_cut_lines_go_to_their_tasks)
{
	char *r0 = report_for("gpu11", false, 0), *r1 = report_for("gpu12", true, 3000);
	char *r2 = report_for("gpu13", false, 0), *err = fixture("launch-ok.stderr");
	CHECK(strlen(r1) > 2048); /* cut by srun into three labelled lines */
	/* task 1's pieces between the others' lines, as srun writes them as they come */
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, out = STRBUF_INIT;
	labelled(&a, 1, r1, 1);
	labelled(&b, 0, r0, 1);
	const char *cut = strchr(a.buf, '\n') + 1;
	strbuf_add(&out, a.buf, (size_t)(cut - a.buf));
	strbuf_add(&out, b.buf, b.len);
	strbuf_addstr(&out, cut);
	labelled(&out, 2, r2, 1);
	/* the same bytes in chunks of 1, 7 and 4096 bytes: the same answers */
	const size_t steps[] = { 1, 7, 4096 };
	for (size_t k = 0; k < ARRAY_SIZE(steps); k++) {
		struct fleet_split s;
		struct fleet f = { 0 };
		size_t idx[3];
		bool done[3];
		rows_for(&f, 3, idx);
		fleet_split_init(&s, 3, 1 << 20);
		feed(&s, &out, err, steps[k]);
		CHECK_INT(s.garbled, 0);
		CHECK_STR(s.tasks[1].launched_on, "gpu12");
		fleet_split_assign(&s, f.rows, idx, 3, false, 60000, done);
		CHECK_INT(f.rows[0].verdict, FLEET_HEALTHY);
		CHECK_INT(f.rows[1].verdict, FLEET_UNHEALTHY);
		CHECK_CONTAINS(f.rows[1].reason, "Xid 79");
		/* srun's line breaks gone (the report's own last one too), the report whole */
		CHECK_MSG(!strncmp(f.rows[1].report_json, r1, strlen(r1) - 1) &&
				  strlen(f.rows[1].report_json) == strlen(r1) - 1,
			  "task 1's report is not its own");
		CHECK_INT(f.rows[1].exit_code, 1);
		CHECK_INT(f.rows[0].exit_code, 0);
		CHECK_INT(f.rows[2].verdict, FLEET_HEALTHY);
		CHECK(done[0] && done[1] && done[2]);
		fleet_split_release(&s);
		fleet_release(&f);
	}
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&out);
	free(r0);
	free(r1);
	free(r2);
	free(err);
}

TEST(fleet_step_truncated_report_usage_exit_and_overlong_lines)
{
	char *r0 = report_for("gpu11", false, 0), *err = fixture("launch-ok.stderr");
	struct strbuf out = STRBUF_INIT;
	/* task 0 cut off in the middle of its report; task 1 a line far past any srun line */
	strbuf_addf(&out, "0: %.*s\n", (int)strlen(r0) / 2, r0);
	strbuf_addstr(&out, "1: ");
	for (int i = 0; i < FLEET_SPLIT_LINE_MAX + 10; i++)
		strbuf_addch(&out, 'x');
	strbuf_addch(&out, '\n');
	struct fleet_split s;
	struct fleet f = { 0 };
	size_t idx[3];
	bool done[3];
	rows_for(&f, 3, idx);
	fleet_split_init(&s, 3, 1 << 20);
	feed(&s, &out, err, 512);
	CHECK_INT(s.garbled, 1);
	fleet_split_assign(&s, f.rows, idx, 3, false, 60000, done);
	for (int i = 0; i < 3; i++)
		CHECK_INT(f.rows[i].verdict, FLEET_UNREACHABLE);
	CHECK_CONTAINS(f.rows[0].reason, "no report (its vigil exited with code 0)");
	/* exit 2, the remote vigil's usage error: its own words, and the code for the caller */
	CHECK_INT(f.rows[2].exit_code, 2);
	CHECK_CONTAINS(f.rows[2].reason, "--cached reports what the agent ran");
	CHECK(done[0] && done[1] && done[2]); /* ran to their end: asking again says the same */
	fleet_split_release(&s);
	fleet_release(&f);

	/* a task past the cap: not kept, not believed */
	char *big = report_for("gpu11", false, 5000);
	strbuf_reset(&out);
	labelled(&out, 0, big, 1);
	rows_for(&f, 1, idx);
	fleet_split_init(&s, 1, 2048);
	feed(&s, &out, "srun: launching StepId=1.0 on host gpu11, 1 tasks: 0\n", 100);
	fleet_split_assign(&s, f.rows, idx, 1, false, 60000, done);
	CHECK_INT(f.rows[0].verdict, FLEET_UNREACHABLE);
	CHECK_CONTAINS(f.rows[0].reason, "answer over 2048 bytes");
	fleet_split_release(&s);
	fleet_release(&f);
	strbuf_release(&out);
	free(big);
	free(r0);
	free(err);
}

TEST(fleet_step_a_task_naming_another_node_is_not_believed)
{
	char *r0 = report_for("gpu11", false, 0), *forged = report_for("gpu13", true, 0);
	char *r2 = report_for("gpu13", false, 0), *err = fixture("launch-ok.stderr");
	struct strbuf out = STRBUF_INIT;
	labelled(&out, 0, r0, 1);
	labelled(&out, 1, forged, 1); /* srun started task 1 on gpu12; it says it is gpu13 */
	labelled(&out, 2, r2, 1);
	struct fleet_split s;
	struct fleet f = { 0 };
	size_t idx[3];
	bool done[3];
	rows_for(&f, 3, idx);
	fleet_split_init(&s, 3, 1 << 20);
	feed(&s, &out, err, 64);
	fleet_split_assign(&s, f.rows, idx, 3, false, 60000, done);
	CHECK_INT(f.rows[1].verdict, FLEET_UNREACHABLE);
	CHECK_CONTAINS(f.rows[1].reason, "its task answered as 'gpu13': not believed");
	CHECK_INT(f.rows[2].verdict, FLEET_HEALTHY); /* gpu13's own answer, not the forgery */
	fleet_split_release(&s);
	fleet_release(&f);

	/* without srun's launch lines (an srun that does not print them) two claims of one
	 * name: neither is believed; the silent node is asked again */
	rows_for(&f, 3, idx);
	fleet_split_init(&s, 3, 1 << 20);
	feed(&s, &out, "", 64);
	fleet_split_assign(&s, f.rows, idx, 3, false, 60000, done);
	CHECK_INT(f.rows[0].verdict, FLEET_HEALTHY);
	CHECK_INT(f.rows[2].verdict, FLEET_UNREACHABLE);
	CHECK_CONTAINS(f.rows[2].reason, "2 tasks answered as 'gpu13': none is believed");
	CHECK_INT(f.rows[1].verdict, FLEET_UNREACHABLE);
	CHECK(!done[1]);
	/* a label lying inside a line is the payload of the task srun labelled */
	fleet_split_release(&s);
	fleet_release(&f);
	strbuf_reset(&out);
	strbuf_addf(&out, "0: 1: %s\n", r0);
	rows_for(&f, 2, idx);
	fleet_split_init(&s, 2, 1 << 20);
	feed(&s, &out, "", 3);
	fleet_split_assign(&s, f.rows, idx, 2, false, 60000, done);
	CHECK_INT(f.rows[0].verdict, FLEET_UNREACHABLE);
	CHECK_INT(f.rows[1].verdict, FLEET_UNREACHABLE);
	fleet_split_release(&s);
	fleet_release(&f);
	strbuf_release(&out);
	free(r0);
	free(r2);
	free(forged);
	free(err);
}

TEST(fleet_step_dead_node_and_deadline)
{
	char *r1 = report_for("gpu12", false, 0), *err = fixture("dead-node.stderr");
	struct strbuf out = STRBUF_INIT;
	labelled(&out, 1, r1, 1); /* gpu12 answered before the step was aborted */
	struct fleet_split s;
	struct fleet f = { 0 };
	size_t idx[3];
	bool done[3];
	rows_for(&f, 3, idx);
	fleet_split_init(&s, 3, 1 << 20);
	feed(&s, &out, err, 33);
	CHECK_STR(s.step_id, "4712.0");
	fleet_split_assign(&s, f.rows, idx, 3, false, 60000, done);
	CHECK_INT(f.rows[1].verdict, FLEET_HEALTHY);
	CHECK_INT(f.rows[2].verdict, FLEET_UNREACHABLE);
	CHECK_STR(f.rows[2].reason, "srun could not start its task: Communication connection "
				    "failure");
	CHECK(done[2]);
	/* gpu11 was killed with the step: unreachable for now, asked again */
	CHECK_INT(f.rows[0].verdict, FLEET_UNREACHABLE);
	CHECK_CONTAINS(f.rows[0].reason, "no answer from its task");
	CHECK(!done[0]);
	fleet_split_release(&s);
	fleet_release(&f);

	/* the deadline passed: who answered stands, the others by name, not asked again */
	rows_for(&f, 3, idx);
	fleet_split_init(&s, 3, 1 << 20);
	feed(&s, &out, "srun: launching StepId=9.0 on host gpu11, 1 tasks: 0\n", 50);
	fleet_split_assign(&s, f.rows, idx, 3, true, 12000, done);
	CHECK_INT(f.rows[1].verdict, FLEET_HEALTHY);
	CHECK_STR(f.rows[0].reason, "no answer within 12 s");
	CHECK_STR(f.rows[2].reason, "no answer within 12 s");
	CHECK(done[0] && done[2]);
	fleet_split_release(&s);
	fleet_release(&f);
	strbuf_release(&out);
	free(r1);
	free(err);
}

TEST(fleet_step_binary_garbage_answers_nothing)
{
	struct strbuf junk = STRBUF_INIT;
	uint32_t x = 12345;
	for (int i = 0; i < 200000; i++) {
		x = x * 1103515245u + 12345u;
		strbuf_addch(&junk, (int)(x >> 24));
	}
	struct fleet_split s;
	struct fleet f = { 0 };
	size_t idx[4];
	bool done[4];
	rows_for(&f, 4, idx);
	fleet_split_init(&s, 4, 1 << 16);
	for (size_t at = 0; at < junk.len; at += 997) {
		size_t n = junk.len - at < 997 ? junk.len - at : 997;
		fleet_split_feed(&s, 1, junk.buf + at, n, 1);
		fleet_split_feed(&s, 2, junk.buf + (junk.len - at - n), n, 1);
	}
	fleet_split_finish(&s, 2);
	fleet_split_assign(&s, f.rows, idx, 4, false, 1000, done);
	for (int i = 0; i < 4; i++) {
		CHECK_INT(f.rows[i].verdict, FLEET_UNREACHABLE);
		CHECK(str_is_clean(f.rows[i].reason) || !strchr(f.rows[i].reason, '\n'));
	}
	fleet_split_release(&s);
	fleet_release(&f);
	strbuf_release(&junk);
}

TEST(fleet_step_hostlist_compresses_as_slurm_reads_it)
{
	const char *names[] = { "n2", "n10", "n1", "n3", "gpu007", "gpu008", "gpu010", "login",
				"n3", "a1b" };
	struct strbuf sb = STRBUF_INIT;
	fleet_hostlist(names, ARRAY_SIZE(names), &sb);
	CHECK_STR(sb.buf, "n[1-3,10],a1b,gpu[007-008,010],login");
	strbuf_release(&sb);
	fleet_hostlist(names, 0, &sb);
	CHECK_STR(sb.buf, "");
	strbuf_release(&sb);
}

TEST(fleet_step_remote_check_names_itself_from_slurmd)
{
	const char *dir = test_tmpdir();
	char root[600];
	snprintf(root, sizeof(root), "%s/root", dir);
	test_write(dir, "root/dev/kmsg", TEST_KMSG_CLEAN);
	const char *args[] = { "check", "--json", "--only", "kernel", "--root", root,
			       "--host-from-slurmd", NULL };
	const char *env_ok[] = { "SLURMD_NODENAME=gpu-a17", NULL };
	struct child c;
	test_run_vigil(&c, args, env_ok);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "host"), "gpu-a17");
	json_free(v);
	child_release(&c);
	/* a hostlist, a second word, nothing at all: usage errors, never a guessed name */
	const char *bad[] = { "SLURMD_NODENAME=n[1-2]", "SLURMD_NODENAME=n1 n2",
			      "SLURMD_NODENAME=" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *env[] = { bad[i], NULL };
		test_run_vigil(&c, args, env);
		CHECK_INT(c.exit_code, 2);
		CHECK_CONTAINS(c.err.buf, "--host-from-slurmd");
		child_release(&c);
	}
}
