/*
 * test_run.c: the process layer in steps (src/lib/run.h), the run group (run_group.h), faults
 * through the OS-ops table (osops.h), and what the check runner makes of a check's own output
 * and of a deadline: the result on its own pipe, the bound that fired named.
 */
#include "../harness.h"
#include "../../src/lib/run_group.h"
#include "../../src/lib/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

/* Two children driven by the caller's own poll loop: what a supervisor that also reads other
 * fds does. */
TEST(child_steps_multiplex_in_the_callers_poll_loop)
{
	const char *a1[] = { "sh", "-c", "echo one; sleep 0.2; echo two", NULL };
	const char *a2[] = { "sh", "-c", "echo other >&2; exit 4", NULL };
	struct child c1, c2;
	struct strbuf err = STRBUF_INIT;
	child_init(&c1);
	child_init(&c2);
	c1.argv = a1;
	c2.argv = a2;
	c1.timeout_ms = c2.timeout_ms = 10000;
	CHECK_INT(child_start(&c1, &err), 0);
	CHECK_INT(child_start(&c2, &err), 0);
	bool d1 = false, d2 = false;
	while (!d1 || !d2) {
		struct pollfd pfd[2 * CHILD_POLLFDS];
		size_t n1 = d1 ? 0 : child_pollfds(&c1, pfd);
		size_t n2 = d2 ? 0 : child_pollfds(&c2, pfd + n1);
		CHECK(poll(pfd, (nfds_t)(n1 + n2), 100) >= 0);
		if (!d1 && child_handle(&c1, pfd, n1 + n2))
			d1 = true;
		if (!d2 && child_handle(&c2, pfd, n1 + n2))
			d2 = true;
	}
	child_finish(&c1);
	child_finish(&c2);
	CHECK(c1.exited && c1.exit_code == 0);
	CHECK_STR(c1.out.buf, "one\ntwo\n");
	CHECK(c2.exited);
	CHECK_INT(c2.exit_code, 4);
	CHECK_STR(c2.err.buf, "other\n");
	child_release(&c1);
	child_release(&c2);
	strbuf_release(&err);
}

/* A leader that exits while a background child still holds its stdout is done when it exits:
 * the group goes with it, nobody waits for the deadline. */
TEST(child_done_when_leader_exits_though_a_helper_holds_the_pipe)
{
	const char *argv[] = { "sh", "-c", "sleep 100 & echo $!; echo bye", NULL };
	struct child c;
	struct strbuf err = STRBUF_INIT;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 20000;
	CHECK_INT(child_run(&c, &err), 0);
	CHECK_MSG(!c.timed_out && c.exited && c.exit_code == 0, "ended: timed out %d, exited %d",
		  c.timed_out, c.exited);
	CHECK_CONTAINS(c.out.buf, "bye");
	child_release(&c);
	strbuf_release(&err);
}

struct seen {
	size_t n, started_fail;
	char order[16];
};

static void on_done(struct child *c, const char *start_error, void *arg)
{
	struct seen *s = arg;
	if (start_error)
		s->started_fail++;
	if (s->n < sizeof(s->order) - 1)
		s->order[s->n] = c->out.len ? c->out.buf[0] : '-';
	s->n++;
}

TEST(run_group_each_child_has_its_own_deadline)
{
	const char *slow[] = { "sleep", "30", NULL };
	const char *fast[] = { "sh", "-c", "echo f", NULL };
	struct child c[3];
	struct run_group g;
	struct seen s = { 0 };
	run_group_init(&g, 0);
	for (int i = 0; i < 3; i++) {
		child_init(&c[i]);
		run_group_add(&g, &c[i]);
	}
	c[0].argv = slow;
	c[0].timeout_ms = 200;
	c[0].timeout_name = "first.timeout";
	c[1].argv = slow;
	c[1].timeout_ms = 400;
	c[2].argv = fast;
	run_group_run(&g, on_done, &s);
	CHECK_INT(s.n, 3);
	CHECK(c[0].timed_out && c[1].timed_out);
	CHECK_INT(c[0].timeout_fired_ms, 200);
	CHECK_INT(c[1].timeout_fired_ms, 400);
	CHECK(c[2].exited && !c[2].timed_out);
	CHECK_STR(c[2].out.buf, "f\n");
	struct strbuf d = STRBUF_INIT;
	child_describe(&c[0], &d);
	CHECK_CONTAINS(d.buf, "timed out after 0.2 s (first.timeout); it was sleeping");
	strbuf_reset(&d);
	child_describe(&c[1], &d);
	CHECK_CONTAINS(d.buf, "timed out after 0.4 s");
	strbuf_release(&d);
	for (int i = 0; i < 3; i++)
		child_release(&c[i]);
	run_group_release(&g);
}

/* Six children, two at a time: each logs its start and end; never more than two overlap. */
TEST(run_group_respects_its_concurrency_limit)
{
	const char *dir = test_tmpdir();
	char log[600];
	snprintf(log, sizeof(log), "%s/log", dir);
	const char *argv[] = { "sh", "-c", "echo s >>\"$1\"; sleep 0.15; echo e >>\"$1\"", "sh", log,
			       NULL };
	struct child c[6];
	struct run_group g;
	struct seen s = { 0 };
	run_group_init(&g, 2);
	for (int i = 0; i < 6; i++) {
		child_init(&c[i]);
		c[i].argv = argv;
		c[i].timeout_ms = 20000;
		run_group_add(&g, &c[i]);
	}
	run_group_run(&g, on_done, &s);
	CHECK_INT(s.n, 6);
	struct strbuf sb = STRBUF_INIT;
	CHECK(read_file_bounded(log, &sb, 4096, NULL) == 0);
	int now = 0, most = 0, starts = 0;
	for (const char *p = sb.buf; *p; p++) {
		if (*p == 's') {
			now++;
			starts++;
		} else if (*p == 'e') {
			now--;
		}
		if (now > most)
			most = now;
	}
	CHECK_INT(starts, 6);
	CHECK_MSG(most <= 2, "%d ran at once with a limit of 2:\n%s", most, sb.buf);
	CHECK_INT(now, 0);
	strbuf_release(&sb);
	for (int i = 0; i < 6; i++) {
		CHECK(c[i].exited && c[i].exit_code == 0);
		child_release(&c[i]);
	}
	run_group_release(&g);
}

/* Faults through the OS-ops table: a fork that fails as under a process limit. */
static int forks_left;
static pid_t flaky_spawn(void *ctx)
{
	UNUSED(ctx);
	if (forks_left-- <= 0) {
		errno = EAGAIN;
		return -1;
	}
	return fork();
}

TEST(fork_failure_is_reported_and_the_others_still_run)
{
	static const struct os_ops flaky = { .spawn = flaky_spawn };
	const char *argv[] = { "sh", "-c", "echo ok", NULL };
	struct child c[3];
	struct strbuf err = STRBUF_INIT;
	struct run_group g;
	struct seen s = { 0 };

	child_init(&c[0]);
	c[0].argv = argv;
	c[0].ops = &flaky;
	forks_left = 0;
	CHECK_INT(child_run(&c[0], &err), -1);
	CHECK_CONTAINS(err.buf, "cannot fork: Resource temporarily unavailable");
	child_release(&c[0]);

	forks_left = 2;
	run_group_init(&g, 0);
	for (int i = 0; i < 3; i++) {
		child_init(&c[i]);
		c[i].argv = argv;
		c[i].ops = &flaky;
		c[i].timeout_ms = 10000;
		run_group_add(&g, &c[i]);
	}
	run_group_run(&g, on_done, &s);
	CHECK_INT(s.n, 3);
	CHECK_INT(s.started_fail, 1);
	CHECK_STR(c[0].out.buf, "ok\n");
	CHECK_STR(c[1].out.buf, "ok\n");
	CHECK(!c[2].exited && !c[2].out.len);
	for (int i = 0; i < 3; i++)
		child_release(&c[i]);
	run_group_release(&g);
	strbuf_release(&err);
}

/* A clock that jumps an hour once the child has started: the deadline (a minute) is passed by the
 * clock of the ops table, not by waiting for it. */
static unsigned clock_calls;
static uint64_t jumpy_mono(void *ctx)
{
	UNUSED(ctx);
	return mono_ms() + (clock_calls++ ? 3600000u : 0);
}

TEST_TIMEOUT(deadline_follows_the_ops_clock, 30)
{
	static const struct os_ops jumpy = { .mono_ms = jumpy_mono };
	const char *argv[] = { "sleep", "100", NULL };
	struct child c;
	struct strbuf err = STRBUF_INIT;
	child_init(&c);
	c.argv = argv;
	c.ops = &jumpy;
	c.timeout_ms = 60000;
	clock_calls = 0;
	CHECK_INT(child_run(&c, &err), 0);
	CHECK(c.timed_out);
	CHECK_INT(c.timeout_fired_ms, 60000);
	child_release(&c);
	strbuf_release(&err);
}

/* A function child: what it (or a library it calls) prints on fds 1 and 2 is captured apart
 * from its result. */
static int noisy_fn(void *arg, int fd)
{
	UNUSED(arg);
	printf("chatter on stdout\n");
	if (write(1, "raw\n", 4) < 0 || write(2, "oops\n", 5) < 0)
		return 1;
	return write(fd, "{\"result\":1}", 12) == 12 ? 0 : 1;
}

TEST(result_pipe_keeps_a_childs_stdout_out_of_its_result)
{
	struct child c;
	struct strbuf err = STRBUF_INIT;
	child_init(&c);
	c.fn = noisy_fn;
	c.result_pipe = true;
	c.timeout_ms = 10000;
	CHECK_INT(child_run(&c, &err), 0);
	CHECK(c.exited && c.exit_code == 0);
	CHECK_STR(c.result.buf, "{\"result\":1}");
	CHECK_CONTAINS(c.out.buf, "raw\n");
	CHECK_CONTAINS(c.out.buf, "chatter on stdout\n");
	CHECK_STR(c.err.buf, "oops\n");
	child_release(&c);
	strbuf_release(&err);
}

/* An NVML library that prints on init: vigil's --json, --reason and --npd stay clean. */
TEST(check_output_is_vigils_own_when_nvml_prints)
{
	struct strbuf root = STRBUF_INIT;
	test_src_path(&root, "tests/scenarios/gpu-healthy-8xh200/root");
	const char *env[] = { "VIGIL_FAKE_NVML_NOISE=1", NULL };
	const char *aj[] = { "check", "--json", "--root", root.buf, NULL };
	const char *ar[] = { "check", "--reason", "--root", root.buf, NULL };
	const char *an[] = { "check", "--npd", "--root", root.buf, NULL };
	struct child c;

	test_run_vigil(&c, aj, env);
	CHECK_NOT_CONTAINS(c.out.buf, "fake-nvml");
	struct json_value *v = test_parse_json(&c);
	const char *reason = json_get_string(v, "reason");
	CHECK(reason && *reason);
	/* the noise did reach the fake library's init, or this test proves nothing */
	const struct json_value *checks = json_get(v, "checks");
	bool gpu_ran = false;
	for (size_t i = 0; checks && i < checks->nr; i++)
		gpu_ran |= !strcmp(json_get_string(checks->items[i], "name"), "gpu");
	CHECK(gpu_ran);
	child_release(&c);

	const char *const *other[] = { ar, an };
	for (size_t k = 0; k < ARRAY_SIZE(other); k++) {
		test_run_vigil(&c, other[k], env);
		CHECK_NOT_CONTAINS(c.out.buf, "fake-nvml");
		const char *nl = strchr(c.out.buf, '\n');
		CHECK_MSG(nl && !nl[1], "not one line: '%s'", c.out.buf);
		CHECK_MSG(!strncmp(c.out.buf, reason, strlen(reason)), "'%s' is not '%s'",
			  c.out.buf, reason);
		child_release(&c);
	}
	json_free(v);
	strbuf_release(&root);
}

/* Which bound fired, in the check's error: --timeout, or the check's own setting. */
TEST_TIMEOUT(check_timeout_names_the_bound_that_fired, 90)
{
	const char *root = test_tmpdir();
	struct strbuf fifo = STRBUF_INIT, state = STRBUF_INIT;
	test_write(root, "sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");
	test_write(root, "sys/class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
	test_write(root, "sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
	test_mkdir(root, "sys/class/infiniband/mlx5_0/ports/1/counters");
	strbuf_addf(&fifo, "%s/sys/class/infiniband/mlx5_0/ports/1/state", root);
	strbuf_addf(&state, "%s/state", root);
	CHECK_INT(mkfifo(fifo.buf, 0644), 0);
	/* a writer that never writes: a reader blocks as on a hung sysfs attribute */
	int fd = open(fifo.buf, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	const char *a1[] = { "check", "--json", "--only", "infiniband", "--root", root,
			     "--state-dir", state.buf, "--timeout", "1", NULL };
	const char *a2[] = { "check", "--json", "--only", "infiniband", "--root", root,
			     "--state-dir", state.buf, "--timeout", "20", "-c",
			     "infiniband.timeout=1", NULL };
	const char *const *args[] = { a1, a2 };
	const char *want[] = { "timed out after 1.0 s (--timeout 1)",
			       "timed out after 1.0 s (infiniband.timeout)" };
	for (size_t i = 0; i < ARRAY_SIZE(args); i++) {
		struct child c;
		test_run_vigil(&c, args[i], NULL);
		CHECK_MSG(c.exit_code == 3, "exit %d: %s %s", c.exit_code, c.out.buf, c.err.buf);
		struct json_value *v = test_parse_json(&c);
		const char *e = json_get_string(json_path(v, "checks.0"), "error");
		CHECK_CONTAINS(e, want[i]);
		/* what it was doing: blocked in a read, not busy */
		CHECK_CONTAINS(e, "it was sleeping");
		json_free(v);
		child_release(&c);
	}
	close(fd);
	strbuf_release(&fifo);
	strbuf_release(&state);
}
