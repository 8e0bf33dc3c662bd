/*
 * test_train.c: the real training job that `vigil run`'s end-to-end tests supervise
 * (tests/train/tiny_ddp.py, issue 9) keeps the resume contract of docs/SUPERVISOR.md: two gloo
 * ranks killed with SIGKILL after a checkpoint and relaunched with VIGIL_ATTEMPT=1 end with the
 * same loss, bit for bit, as an undisturbed run, and the step file they leave is one that the
 * supervisor's steps parser (src/logs/steps.h) reads, the resume showing as a backwards step.
 * Skipped where /usr/bin/python3 has no torch.
 */
#include "../harness.h"
#include "../../src/logs/steps.h"
#include "../../src/lib/fileio.h"
#include "../../src/supervise/replicas.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define PY "/usr/bin/python3"
#define STEPS "30"
#define CKPT_EVERY 10

/* A port nobody listens on now (the kernel's pick; a tiny race with other tests is accepted). */
static unsigned free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(sa);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static void need_torch(void)
{
	const char *argv[] = { PY, "-c", "import torch", NULL };
	struct child c;
	struct strbuf err = STRBUF_INIT;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 30000;
	c.merge_stderr = true;
	bool ok = child_run(&c, &err) == 0 && c.exited && c.exit_code == 0;
	child_release(&c);
	strbuf_release(&err);
	if (!ok)
		SKIP("/usr/bin/python3 cannot import torch (install python3-torch to run the trainer)");
}

/* The value of the last "final loss X" line in out, copied into buf. */
static bool final_loss(const char *out, char *buf, size_t size)
{
	const char *p = out, *last = NULL;
	while ((p = strstr(p, "final loss ")) != NULL) {
		last = p + strlen("final loss ");
		p = last;
	}
	if (!last)
		return false;
	size_t n = strcspn(last, "\n");
	if (n == 0 || n >= size)
		return false;
	memcpy(buf, last, n);
	buf[n] = '\0';
	return true;
}

/* Each rank started as a child of the test (not through the launcher), so one can be killed. */
struct rank {
	struct child c;
	char env[8][256];
	const char *envp[9];
	const char *argv[12];
};

static void rank_start(struct rank *r, int rank, unsigned port, const char *run_dir, int attempt,
		       const char *script, const char *step_sleep)
{
	struct strbuf err = STRBUF_INIT;
	child_init(&r->c);
	snprintf(r->env[0], sizeof(r->env[0]), "MASTER_ADDR=127.0.0.1");
	snprintf(r->env[1], sizeof(r->env[1]), "MASTER_PORT=%u", port);
	snprintf(r->env[2], sizeof(r->env[2]), "WORLD_SIZE=2");
	snprintf(r->env[3], sizeof(r->env[3]), "RANK=%d", rank);
	snprintf(r->env[4], sizeof(r->env[4]), "LOCAL_RANK=%d", rank);
	snprintf(r->env[5], sizeof(r->env[5]), "VIGIL_ATTEMPT=%d", attempt);
	snprintf(r->env[6], sizeof(r->env[6]), "VIGIL_RUN_DIR=%s", run_dir);
	snprintf(r->env[7], sizeof(r->env[7]), "VIGIL_STEP_FILE=%s/steps.jsonl", run_dir);
	for (int i = 0; i < 8; i++)
		r->envp[i] = r->env[i];
	r->envp[8] = NULL;
	size_t a = 0;
	r->argv[a++] = PY;
	r->argv[a++] = script;
	r->argv[a++] = "--steps";
	r->argv[a++] = STEPS;
	r->argv[a++] = "--ckpt-every";
	r->argv[a++] = "10";
	if (step_sleep) {
		r->argv[a++] = "--step-sleep";
		r->argv[a++] = step_sleep;
	}
	r->argv[a] = NULL;
	r->c.argv = r->argv;
	r->c.env_add = r->envp;
	r->c.timeout_ms = 40000;
	r->c.merge_stderr = true;
	CHECK_MSG(child_start(&r->c, &err) == 0, "cannot start rank %d: %s", rank, err.buf);
	strbuf_release(&err);
}

/* Poll both ranks once (up to wait_ms); true when both are done. */
static bool ranks_poll(struct rank *r, bool *done, int wait_ms)
{
	struct pollfd pfd[2 * CHILD_POLLFDS];
	size_t n = 0;
	for (int i = 0; i < 2; i++)
		if (!done[i])
			n += child_pollfds(&r[i].c, pfd + n);
	if (n)
		poll(pfd, (nfds_t)n, wait_ms);
	for (int i = 0; i < 2; i++)
		if (!done[i] && child_handle(&r[i].c, pfd, n))
			done[i] = true;
	return done[0] && done[1];
}

struct step_log {
	uint64_t n, backwards, last, resumed_to;
	bool all_have_loss;
	double last_loss;
};

static void on_step(void *arg, const struct step_update *u)
{
	struct step_log *l = arg;
	l->n++;
	if (u->change == STEP_BACKWARDS) {
		l->backwards++;
		l->resumed_to = u->r.step;
	}
	if (!u->r.has_loss)
		l->all_have_loss = false;
	l->last = u->r.step;
	l->last_loss = u->r.loss;
}

static void read_step_file(const char *path, struct step_log *l, uint64_t *bad_lines)
{
	struct strbuf data = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_MSG(read_file_bounded(path, &data, 1 << 20, &err) == 0, "%s", err.buf);
	struct step_parser p;
	step_parser_init_json(&p);
	memset(l, 0, sizeof(*l));
	l->all_have_loss = true;
	step_parser_feed(&p, data.buf, data.len, on_step, l);
	step_parser_finish(&p, on_step, l);
	*bad_lines = p.bad_lines;
	step_parser_release(&p);
	strbuf_release(&data);
	strbuf_release(&err);
}

TEST_TIMEOUT(train_ddp_resume_after_sigkill_matches_undisturbed_run, 120)
{
	need_torch();
	const char *tmp = test_tmpdir();
	struct strbuf script = STRBUF_INIT, launcher = STRBUF_INIT, path = STRBUF_INIT;
	struct strbuf err = STRBUF_INIT;
	test_src_path(&script, "tests/train/tiny_ddp.py");
	test_src_path(&launcher, "tests/train/launch_local.py");

	/* 1. Undisturbed, through the local launcher. */
	char ckpt_a[512], steps_a[512], steps_env[600];
	snprintf(ckpt_a, sizeof(ckpt_a), "%s/a-ckpt", tmp);
	snprintf(steps_a, sizeof(steps_a), "%s/a-steps.jsonl", tmp);
	snprintf(steps_env, sizeof(steps_env), "VIGIL_STEP_FILE=%s", steps_a);
	const char *argv_a[] = { PY, launcher.buf, "--nproc", "2", "--", PY, script.buf, "--steps",
				 STEPS, "--ckpt-every", "10", "--ckpt-dir", ckpt_a, NULL };
	const char *env_a[] = { steps_env, NULL };
	struct child a;
	child_init(&a);
	a.argv = argv_a;
	a.env_add = env_a;
	a.timeout_ms = 40000;
	a.merge_stderr = true;
	CHECK_MSG(child_run(&a, &err) == 0, "%s", err.buf);
	CHECK_MSG(a.exited && a.exit_code == 0, "undisturbed run failed:\n%s", a.out.buf);
	char loss_a[64];
	CHECK_MSG(final_loss(a.out.buf, loss_a, sizeof(loss_a)), "no final loss:\n%s", a.out.buf);
	CHECK_CONTAINS(a.out.buf, "step " STEPS " loss ");
	CHECK_NOT_CONTAINS(a.out.buf, "resume");
	struct step_log la;
	uint64_t bad = 0;
	read_step_file(steps_a, &la, &bad);
	CHECK_INT(la.n, 30);
	CHECK_INT(bad, 0);
	CHECK_INT(la.backwards, 0);
	CHECK_INT(la.last, 30);
	CHECK(la.all_have_loss);
	CHECK(la.last_loss == strtod(loss_a, NULL));

	/* 2. The same run, both ranks killed with SIGKILL after the first checkpoint. */
	char run_dir[512];
	snprintf(run_dir, sizeof(run_dir), "%s/b", tmp);
	CHECK(mkdir(run_dir, 0755) == 0);
	struct rank r[2];
	bool done[2] = { false, false };
	unsigned port = free_port();
	rank_start(&r[0], 0, port, run_dir, 0, script.buf, "0.3");
	rank_start(&r[1], 1, port, run_dir, 0, script.buf, "0.3");
	/* Rank 0 writes checkpoint 10 before it starts step 11; step 13 is a few steps past it, so
	 * the step file has steps the resumed attempt will repeat. */
	while (!strstr(r[0].c.out.buf ? r[0].c.out.buf : "", "step 13 loss ")) {
		CHECK_MSG(!ranks_poll(r, done, 100) && !done[0],
			  "the trainer ended before step 13:\n%s", r[0].c.out.buf);
	}
	child_kill(&r[1].c, SIGKILL);
	child_finish(&r[1].c);
	child_kill(&r[0].c, SIGKILL);
	child_finish(&r[0].c);
	CHECK(r[0].c.signaled && r[0].c.term_signal == SIGKILL);
	CHECK(r[1].c.signaled && r[1].c.term_signal == SIGKILL);
	CHECK_NOT_CONTAINS(r[0].c.out.buf, "final loss");
	struct stat st;
	strbuf_addf(&path, "%s/ckpt/ckpt.pt", run_dir);
	CHECK_MSG(stat(path.buf, &st) == 0 && S_ISREG(st.st_mode), "no checkpoint at %s", path.buf);
	child_release(&r[0].c);
	child_release(&r[1].c);
	/* The last step the killed attempt logged. */
	struct step_log lk;
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/steps.jsonl", run_dir);
	read_step_file(path.buf, &lk, &bad);
	CHECK(lk.last >= 12 && lk.last < 30);

	/* 3. The next attempt resumes from the latest checkpoint and runs to the end. */
	port = free_port();
	done[0] = done[1] = false;
	rank_start(&r[0], 0, port, run_dir, 1, script.buf, NULL);
	rank_start(&r[1], 1, port, run_dir, 1, script.buf, NULL);
	while (!ranks_poll(r, done, 200))
		;
	child_finish(&r[0].c);
	child_finish(&r[1].c);
	for (int i = 0; i < 2; i++)
		CHECK_MSG(r[i].c.exited && r[i].c.exit_code == 0, "resumed rank %d failed:\n%s", i,
			  r[i].c.out.buf);
	const char *out0 = r[0].c.out.buf;
	const char *res = strstr(out0, "resume from ");
	CHECK_MSG(res != NULL, "rank 0 did not resume:\n%s", out0);
	const char *at = strstr(res, " at step ");
	CHECK(at != NULL);
	long k = strtol(at + strlen(" at step "), NULL, 10);
	CHECK_MSG(k >= CKPT_EVERY && k % CKPT_EVERY == 0 && (uint64_t)k <= lk.last,
		  "resumed at step %ld, the killed attempt logged step %llu", k,
		  (unsigned long long)lk.last);
	/* The first step it trains is the one after the checkpoint's. */
	const char *first = strstr(out0, "\nstep ");
	CHECK(first != NULL);
	CHECK_INT(strtol(first + strlen("\nstep "), NULL, 10), k + 1);
	CHECK_NOT_CONTAINS(out0, "\nstep 1 loss ");
	char loss_c[64], loss_c1[64];
	CHECK_MSG(final_loss(out0, loss_c, sizeof(loss_c)), "no final loss:\n%s", out0);
	CHECK(final_loss(r[1].c.out.buf, loss_c1, sizeof(loss_c1)));
	CHECK_STR(loss_c, loss_a);
	CHECK_STR(loss_c1, loss_a);

	/* The step file of both attempts: the resume is one backwards step to k + 1. */
	struct step_log lb;
	read_step_file(path.buf, &lb, &bad);
	CHECK_INT(bad, 0);
	/* (Only a kill that came late, after checkpoint 20, could leave no step to repeat.) */
	if (lk.last >= (uint64_t)k + 2) {
		CHECK_INT(lb.backwards, 1);
		CHECK_INT(lb.resumed_to, k + 1);
	}
	CHECK_INT(lb.n, lk.n + 30 - (uint64_t)k);
	CHECK_INT(lb.last, 30);
	CHECK(lb.all_have_loss);
	CHECK(lb.last_loss == la.last_loss);

	child_release(&r[0].c);
	child_release(&r[1].c);
	child_release(&a);
	strbuf_release(&script);
	strbuf_release(&launcher);
	strbuf_release(&path);
	strbuf_release(&err);
}

/*
 * The replica digests (contrib/python/vigil_train.py, src/supervise/replicas.h) on the real
 * trainer: three gloo ranks print their parameters' digest after every optimizer step; one bit
 * of rank 1's parameters is flipped after step 4 (VIGIL_TEST_FLIP). Each rank's own lines (its
 * own pipe, as srun's labels give them to vigil run) go through the supervisor's parser and
 * comparison: steps 1-3 agree, step 4 names rank 1 against the other two, once.
 */
struct digest_seen {
	unsigned n, rank, agree;
	uint64_t step;
	enum replica_kind kind;
};

static void on_digest_verdict(void *arg, const struct replica_verdict *v)
{
	struct digest_seen *d = arg;
	if (d->n++ == 0) {
		d->kind = v->kind;
		d->step = v->step;
		d->rank = v->nr_ranks ? v->ranks[0] : 99;
		d->agree = v->agree;
	}
}

TEST_TIMEOUT(train_ddp_digests_name_the_rank_whose_bit_flipped, 120)
{
	need_torch();
	const char *tmp = test_tmpdir();
	struct strbuf script = STRBUF_INIT, pypath = STRBUF_INIT, err = STRBUF_INIT;
	test_src_path(&script, "tests/train/tiny_ddp.py");
	strbuf_addf(&pypath, "PYTHONPATH=%s/contrib/python:%s/tests/train", test_srcdir(),
		    test_srcdir());
	unsigned port = free_port();
	enum { N = 3 };
	struct child c[N];
	char env[N][8][600];
	const char *envp[N][9];
	for (int k = 0; k < N; k++) {
		snprintf(env[k][0], sizeof(env[k][0]), "MASTER_ADDR=127.0.0.1");
		snprintf(env[k][1], sizeof(env[k][1]), "MASTER_PORT=%u", port);
		snprintf(env[k][2], sizeof(env[k][2]), "WORLD_SIZE=%d", N);
		snprintf(env[k][3], sizeof(env[k][3]), "RANK=%d", k);
		snprintf(env[k][4], sizeof(env[k][4]), "VIGIL_ATTEMPT_DIR=%s", tmp);
		snprintf(env[k][5], sizeof(env[k][5]), "VIGIL_TEST_FLIP=1:4");
		snprintf(env[k][6], sizeof(env[k][6]), "%s", pypath.buf);
		snprintf(env[k][7], sizeof(env[k][7]), "VIGIL_STEP_FILE=%s/steps.jsonl", tmp);
		for (int i = 0; i < 8; i++)
			envp[k][i] = env[k][i];
		envp[k][8] = NULL;
		const char *argv[] = { PY, script.buf, "--steps", "6", "--ckpt-every", "0", NULL };
		child_init(&c[k]);
		c[k].argv = argv;
		c[k].env_add = envp[k];
		c[k].timeout_ms = 60000;
		CHECK_MSG(child_start(&c[k], &err) == 0, "rank %d: %s", k, err.buf);
	}
	for (int k = 0; k < N; k++) {
		/* one after the other: each prints a few hundred bytes, far from a pipe's size */
		while (child_poll(&c[k], 200) == 0)
			;
		child_finish(&c[k]);
		CHECK_MSG(c[k].exited && c[k].exit_code == 0, "rank %d: exit %d %s %s", k, c[k].exit_code, c[k].out.buf, c[k].err.buf);
	}
	struct digest_seen seen = { 0 };
	struct replicas r;
	replicas_init(&r, N, 60, on_digest_verdict, &seen);
	unsigned lines = 0;
	for (int k = 0; k < N; k++) {
		for (char *line = c[k].out.buf; line && *line;) {
			char *nl = strchr(line, '\n');
			size_t len = nl ? (size_t)(nl - line) : strlen(line);
			uint64_t step, digest;
			unsigned group, size;
			if (replicas_parse_line(line, len, &step, &group, &size, &digest) == 1) {
				lines++;
				CHECK_INT(group, 0);
				CHECK_INT(size, N);
				replicas_add(&r, (unsigned)k, step, group, size, digest, 0);
			}
			line = nl ? nl + 1 : NULL;
		}
	}
	replicas_flush(&r);
	CHECK_INT(lines, N * 6);
	CHECK_INT((long long)r.judged, 6);
	CHECK_INT(seen.n, 1);
	CHECK_INT(seen.kind, REPLICA_DIVERGED);
	CHECK_INT((long long)seen.step, 4);
	CHECK_INT(seen.rank, 1);
	CHECK_INT(seen.agree, 2);
	/* rank 0 wrote the step file through vigil_train.report(), tokens and all */
	struct strbuf sf = STRBUF_INIT;
	char p[700];
	snprintf(p, sizeof(p), "%s/steps.jsonl", tmp);
	CHECK(read_file_bounded(p, &sf, 1 << 20, NULL) == 0);
	CHECK_CONTAINS(sf.buf, "{\"step\": 6, \"loss\": ");
	CHECK_CONTAINS(sf.buf, "\"tokens\": ");
	strbuf_release(&sf);
	replicas_release(&r);
	for (int k = 0; k < N; k++)
		child_release(&c[k]);
	strbuf_release(&script);
	strbuf_release(&pypath);
	strbuf_release(&err);
}
