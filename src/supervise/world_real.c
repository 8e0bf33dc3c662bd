/*
 * world_real.c: the real world of `vigil run` (world.h): srun steps, scontrol, the fleet
 * fan-out, poll over the step's pipes and the watch child, signals through a self-pipe.
 * Its state lives in the run's parts (struct sup's at.step and w.watch).
 */
#include "sup_int.h"
#include "world.h"

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	sup_sig_seen = sig;
	if (sig_pipe[1] >= 0) {
		char c = (char)sig;
		(void)!write(sig_pipe[1], &c, 1);
	}
	errno = saved;
}

static int real_signals(void *ctx, bool on, struct strbuf *err)
{
	(void)ctx;
	if (!on) {
		if (sig_pipe[0] >= 0) {
			signal(SIGTERM, SIG_DFL);
			signal(SIGINT, SIG_DFL);
			signal(SIGHUP, SIG_DFL);
			signal(SIGUSR1, SIG_DFL);
			close(sig_pipe[0]);
			close(sig_pipe[1]);
			sig_pipe[0] = sig_pipe[1] = -1;
		}
		return 0;
	}
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		strbuf_addf(err, "cannot make a pipe: %s", strerror(errno));
		return -1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL); /* no more restarts */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* ---- Slurm ---- */

static int real_nodes(void *ctx, const struct sup_options *o, const char *hostlist,
		      struct slurm_nodes *out, struct strbuf *err)
{
	(void)ctx;
	return slurm_nodes_list(&o->cmds, hostlist, out, err);
}

static int real_node_get(void *ctx, const struct sup_options *o, const char *host,
			 struct slurm_node *out, struct strbuf *err)
{
	(void)ctx;
	return slurm_node_get(&o->cmds, host, out, err);
}

static int real_drain(void *ctx, const struct sup_options *o, const char *host,
		      const struct slurm_decision *d, struct strbuf *err)
{
	(void)ctx;
	return slurm_apply(&o->cmds, host, d, err);
}

/* ---- the step ---- */

static void on_output(void *arg, int stream, const char *data, size_t len)
{
	sup_world_output(arg, stream, data, len);
}

static int real_launch(void *ctx, struct sup *s, const struct step_spec *spec,
		       struct strbuf *err)
{
	(void)ctx;
	step_init(&s->at.step);
	s->at.step.scancel = s->o->scancel;
	s->at.step.on_output = on_output;
	s->at.step.on_output_arg = s;
	return step_start(&s->at.step, &s->o->cmds, spec, err);
}

static void real_wait(void *ctx, struct sup *s, int ms, struct sup_wake *wk)
{
	(void)ctx;
	struct pollfd pfd[2 * CHILD_POLLFDS + 1];
	size_t n = 0;
	if (sig_pipe[0] >= 0) {
		pfd[n].fd = sig_pipe[0];
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		n++;
	}
	size_t step_at = n;
	if (s->at.step_live)
		n += step_pollfds(&s->at.step, pfd + n);
	size_t watch_at = n;
	if (s->w.watch_live) {
		n += child_pollfds(&s->w.watch, pfd + n);
		int w = child_wait_ms(&s->w.watch);
		if (w >= 0 && w < ms)
			ms = w;
	}
	if (poll(pfd, n, ms) < 0)
		return; /* EINTR: a signal, seen by the caller */
	if (step_at > 0 && pfd[0].revents) {
		char b[16];
		(void)!read(sig_pipe[0], b, sizeof(b));
	}
	if (s->at.step_live && step_handle(&s->at.step, pfd + step_at, watch_at - step_at)) {
		const struct child *c = &s->at.step.child;
		wk->step_ended = true;
		wk->code = c->exited ? c->exit_code : c->signaled ? 128 + c->term_signal : 1;
		child_describe(c, &wk->desc);
	}
	if (s->w.watch_live && child_handle(&s->w.watch, pfd + watch_at, n - watch_at)) {
		wk->watch_done = true;
		wk->watch_text = s->w.watch.result.buf ? s->w.watch.result.buf : "";
	}
}

static const char *real_step_id(void *ctx, struct sup *s)
{
	(void)ctx;
	return step_id(&s->at.step);
}

static int real_stop(void *ctx, struct sup *s, unsigned grace_ms, struct strbuf *err)
{
	(void)ctx;
	int rc = step_stop(&s->at.step, &s->o->cmds, grace_ms, err);
	/* what srun still had to say */
	while (!s->at.step.child.done && child_poll(&s->at.step.child, 0) == 0)
		;
	step_release(&s->at.step);
	return rc;
}

static void real_release(void *ctx, struct sup *s)
{
	(void)ctx;
	step_release(&s->at.step);
}

static int real_stop_id(void *ctx, const struct sup_options *o, const char *id,
			struct strbuf *err)
{
	(void)ctx;
	return step_stop_id(&o->cmds, o->scancel, NULL, id, err);
}

/* ---- the periodic watch: a forked child, so a slow srun never stops the loop ---- */

struct watch_arg {
	struct sup *s;
	bool checks;
};
static struct watch_arg watch_arg;

static int watch_fn(void *arg, int out_fd)
{
	struct watch_arg *w = arg;
	struct strbuf out = STRBUF_INIT;
	sup_watch_text(w->s, w->checks, &out);
	(void)!write(out_fd, out.buf, out.len);
	strbuf_release(&out);
	return 0;
}

static int real_watch_start(void *ctx, struct sup *s, bool checks, struct strbuf *err)
{
	(void)ctx;
	child_init(&s->w.watch);
	watch_arg.s = s;
	watch_arg.checks = checks;
	s->w.watch.fn = watch_fn;
	s->w.watch.fn_arg = &watch_arg;
	s->w.watch.result_pipe = true;
	s->w.watch.result_cap = 1u << 20;
	s->w.watch.out_cap = 64 * 1024;
	s->w.watch.timeout_ms = (unsigned)(s->o->check_timeout_s * 1000) + 30000;
	return child_start(&s->w.watch, err);
}

static void real_watch_stop(void *ctx, struct sup *s)
{
	(void)ctx;
	child_finish(&s->w.watch);
	child_release(&s->w.watch);
}

/* ---- smoke runs, evidence, diagnosis ---- */

/*
 * What the smoke's ranks have written so far: the sizes of its rank files and its step file
 * (a smoke step's only sign of progress; srun writes rank-T.out for T < hosts x G). fstatat
 * without following a link; a file not there yet counts 0.
 */
static uint64_t smoke_output_bytes(const struct step_spec *spec)
{
	int dfd = open(spec->attempt_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	uint64_t sum = 0;
	size_t ranks = spec->nr_hosts * spec->tasks_per_node;
	struct stat st;
	char name[48];
	for (size_t t = 0; t <= ranks; t++) {
		if (t < ranks)
			snprintf(name, sizeof(name), "rank-%zu.out", t);
		else
			snprintf(name, sizeof(name), "steps.jsonl");
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	close(dfd);
	return sum;
}

/* srun's own lines of a smoke step (its stderr: the ranks write to their files): a refusal
 * to create the step puts srun's reason alone in *why. */
static bool smoke_refused(const struct strbuf *err, struct strbuf *why)
{
	const char *p = err->buf, *end = err->buf + err->len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct strbuf r = STRBUF_INIT;
		if (srun_msg_parse(p, n, &r) == SRUN_MSG_REFUSED) {
			strbuf_reset(why);
			strbuf_add(why, r.buf, r.len);
			strbuf_release(&r);
			return true;
		}
		strbuf_release(&r);
		p += n + 1;
	}
	return false;
}

static int real_smoke(void *ctx, struct sup *s, const struct step_spec *spec, double timeout_s,
		      double quiet_s, struct strbuf *why)
{
	(void)ctx;
	const struct sup_options *o = s->o;
	struct step st;
	step_init(&st);
	st.scancel = o->scancel;
	if (step_start(&st, &o->cmds, spec, why) < 0)
		return -1;
	uint64_t now = mono_ms(), end = now + (uint64_t)(timeout_s * 1000), last_growth = 0;
	uint64_t bytes = 0;
	bool quiet = false;
	while (!st.child.done && (now = mono_ms()) < end && !sup_sig_seen) {
		child_poll(&st.child, 200);
		if (quiet_s <= 0)
			continue;
		uint64_t b = smoke_output_bytes(spec);
		now = mono_ms();
		if (b != bytes) {
			bytes = b;
			last_growth = now;
		} else if (last_growth && now - last_growth >= (uint64_t)(quiet_s * 1000) &&
			   !st.child.done) {
			quiet = true;
			break;
		}
	}
	bool timed_out = !st.child.done;
	if (timed_out)
		step_stop(&st, &o->cmds, o->grace_ms, why);
	else
		child_finish(&st.child);
	int rc = timed_out || !st.child.exited ? -1 : st.child.exit_code;
	if (rc > 0 && smoke_refused(&st.child.err, why)) {
		step_release(&st);
		return SUP_SMOKE_REFUSED;
	}
	if (quiet)
		strbuf_addf(why, "hung: its ranks wrote nothing for %.0f s (the run's hang limit) "
			    "after they had started", quiet_s);
	else if (timed_out)
		strbuf_addf(why, "did not finish in %.0f s", timeout_s);
	else
		child_describe(&st.child, why);
	step_release(&st);
	return rc;
}

static void real_evidence(void *ctx, struct sup *s, const char *step_id, char *const *hosts,
			  size_t nr_hosts, unsigned world, struct sup_evidence_found *out)
{
	(void)ctx;
	bool hang = s->m.fault == SUP_FAULT_HANG || s->m.fault == SUP_FAULT_STARTUP;
	sup_collect_evidence(s->o, s->at.attempt_dir, step_id, hosts, nr_hosts,
			     s->at.ro_open ? &s->at.ro : NULL, world, hang, &out->summary,
			     &out->suspects, &out->sick, &out->why);
}

/* This very vigil, a child with a deadline: a diagnosis that fails or hangs costs the run
 * nothing. Run as /proc/self/exe, not the path it names: a package upgraded during a long run
 * leaves the name to the new binary and "(deleted)" in the link, and the running one is the
 * one whose journal this is. */
static int real_diagnose(void *ctx, const char *kind, const char *arg, struct strbuf *out)
{
	(void)ctx;
	const char *self = "/proc/self/exe";
	const char *argv[] = { self, "diagnose", kind, "--json", arg, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 60000;
	c.out_cap = 16u << 20;
	int rc = -1;
	if (child_run(&c, NULL) == 0 && c.exited && c.exit_code != 2 && c.out.len) {
		strbuf_add(out, c.out.buf, c.out.len);
		rc = 0;
	}
	child_release(&c);
	return rc;
}

static void real_print(void *ctx, int fd, const char *text, size_t len)
{
	(void)ctx;
	FILE *f = fd == 1 ? stdout : stderr;
	fwrite(text, 1, len, f);
	fflush(f);
}

static const struct sup_world real_world = {
	.nodes = real_nodes,
	.node_get = real_node_get,
	.drain = real_drain,
	.check = sup_fleet_check,
	.launch = real_launch,
	.wait = real_wait,
	.step_id = real_step_id,
	.stop = real_stop,
	.release = real_release,
	.stop_id = real_stop_id,
	.watch_start = real_watch_start,
	.watch_stop = real_watch_stop,
	.smoke = real_smoke,
	.evidence = real_evidence,
	.diagnose = real_diagnose,
	.signals = real_signals,
	.print = real_print,
};

const struct sup_world *sup_real_world(void)
{
	return &real_world;
}
