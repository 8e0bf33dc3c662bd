/* sup_step.c: see sup_int.h */
#include "sup_int.h"

/* ---- the step ---- */

void sup_progress(struct sup *s, const struct step_update *u, bool from_json);

static void on_step_out(void *arg, const struct step_update *u)
{
	sup_progress(arg, u, false);
}

static void on_step_json(void *arg, const struct step_update *u)
{
	sup_progress(arg, u, true);
}

/*
 * srun's lines about creating the step (srunmsg.h). A refusal ("srun: error: Unable to create
 * step for job 1: More processors requested than permitted") comes before srun exits 1 with no
 * task run: the allocation's answer, never a host's fault, so the machine ends the run instead
 * of taking srun's exit for a crash. The retry line is journaled once, not acted on (srun may
 * still get the step). true: the line was one of them.
 */
static bool srun_step_creation(struct sup *s, const char *line, size_t len)
{
	struct strbuf reason = STRBUF_INIT, t = STRBUF_INIT;
	enum srun_msg k = srun_msg_parse(line, len, &reason);
	if (k == SRUN_MSG_REFUSED) {
		srun_refusal_describe(reason.buf, &t);
		sup_say(s, "%s", t.buf);
		s->ev.detected = s->ev.happened = sup_wall(s);
		sup_post_simple(s, SUP_EV_LAUNCH_REFUSED, NULL, t.buf);
	} else if (k == SRUN_MSG_PENDING && !s->at.pending_said) {
		s->at.pending_said = true;
		strbuf_addstr(&t, "srun is waiting to create the step");
		if (reason.len)
			strbuf_addf(&t, " (%s)", reason.buf);
		strbuf_addstr(&t, "; its ranks start when Slurm allows it");
		sup_journal_event(s, "step_pending", NULL, t.buf);
		sup_say(s, "%s", t.buf);
	}
	strbuf_release(&reason);
	strbuf_release(&t);
	return k != SRUN_MSG_OTHER;
}

/* "srun: error: n2: task 3: Exited with exit code 1", "srun: error: n2: tasks 0-1: Killed",
 * "srun: error: Node failure on n3": the first word of a task's death, seconds before srun's
 * own exit. */
static void srun_line(struct sup *s, const char *line, size_t len)
{
	char buf[1024];
	size_t n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
	memcpy(buf, line, n);
	buf[n] = '\0';
	const char *rest;
	if (srun_step_creation(s, buf, n))
		return;
	if (!skip_prefix(buf, "srun: error: ", &rest))
		return;
	const char *nf;
	if (skip_prefix(rest, "Node failure on ", &nf)) {
		char host[72];
		size_t k = 0;
		while (nf[k] && nf[k] != ' ' && k < sizeof(host) - 1)
			host[k] = nf[k], k++;
		host[k] = '\0';
		if (slurm_node_name_ok(host))
			sup_fault(s, SUP_EV_NODE_LOST, host, "srun: node failure", sup_wall(s));
		return;
	}
	const char *colon = strchr(rest, ':');
	if (!colon || !strstr(colon, ": task"))
		return;
	char host[72];
	size_t hl = (size_t)(colon - rest);
	if (hl >= sizeof(host))
		return;
	memcpy(host, rest, hl);
	host[hl] = '\0';
	if (!slurm_node_name_ok(host))
		return;
	const char *what = strrchr(colon, ':');
	int code = 1;
	const char *c;
	if (what && (c = strstr(what, "exit code "))) {
		long v = strtol(c + 10, NULL, 10);
		code = v > 0 && v < 256 ? (int)v : 1;
	} else if (what && strstr(what, "Killed")) {
		code = 128 + SIGKILL;
	} else if (what && strstr(what, "Terminated")) {
		code = 128 + SIGTERM;
	} else if (what && strstr(what, "Segmentation")) {
		code = 128 + SIGSEGV;
	} else if (what && strstr(what, "Aborted")) {
		code = 128 + SIGABRT;
	}
	if (s->m.state == SUP_RUNNING || s->m.state == SUP_LAUNCHING ||
	    s->m.state == SUP_COLLECTING_EVIDENCE) {
		struct strbuf t = STRBUF_INIT;
		strbuf_add_clean(&t, colon + 2);
		s->ev.detected = sup_wall(s);
		s->ev.happened = s->ev.detected;
		struct sup_event e = { .kind = SUP_EV_TASK_EXIT, .host = host, .code = code,
				       .text = t.buf };
		sup_say(s, "task ended on %s: %s", host, t.buf);
		sup_post(s, &e);
		strbuf_release(&t);
	}
}

/* ---- the ranks' parameter digests (replicas.h, docs/SUPERVISOR.md "Replica digests") ---- */

/* REPLICAS_LATE_S: how long a step's digests wait for the rest of the group. The ranks of a
 * synchronous job end a step within a second of each other; a minute is slack, not a limit. */
#define REPLICAS_LATE_S 60
#define REPLICAS_SAY_MAX 16 /* ranks named in one journal record; the rest counted */

/* The host rank runs on in this attempt: hosts[rank / G] (step.h); NULL out of range. */
static const char *rank_host(const struct sup *s, unsigned rank)
{
	unsigned g = s->o->tasks_per_node ? s->o->tasks_per_node : 1;
	return rank / g < s->at.hosts.nr ? s->at.hosts.items[rank / g] : NULL;
}

static void add_rank(struct sup *s, struct strbuf *t, unsigned rank)
{
	const char *host = rank_host(s, rank);
	strbuf_addf(t, "rank %u", rank);
	if (host)
		strbuf_addf(t, " (%s)", host);
}

static void on_replicas(void *arg, const struct replica_verdict *v)
{
	struct sup *s = arg;
	struct strbuf t = STRBUF_INIT;
	const char *cls = v->kind == REPLICA_DIVERGED    ? "replica_diverged"
			  : v->kind == REPLICA_UNDECIDED ? "replica_undecided"
							 : "replica_missing";
	strbuf_addf(&t, "step %llu group %u: ", (unsigned long long)v->step, v->group);
	for (size_t i = 0; i < v->nr_ranks && i < REPLICAS_SAY_MAX; i++) {
		if (i)
			strbuf_addstr(&t, ", ");
		add_rank(s, &t, v->ranks[i]);
		if (v->digests)
			strbuf_addf(&t, " digest %016llx", (unsigned long long)v->digests[i]);
	}
	if (v->nr_ranks > REPLICAS_SAY_MAX)
		strbuf_addf(&t, " and %zu more", v->nr_ranks - REPLICAS_SAY_MAX);
	if (v->kind == REPLICA_DIVERGED)
		strbuf_addf(&t, "; %u of the %u ranks that reported hold %016llx: its parameters "
			    "differ from its replicas' (silent data corruption, or a non-deterministic "
			    "step)", v->agree, v->reported, (unsigned long long)v->majority);
	else if (v->kind == REPLICA_UNDECIDED)
		strbuf_addf(&t, "; no digest is held by more than half of the %u ranks that "
			    "reported: cannot tell which is wrong", v->reported);
	else {
		if (v->nr_ranks)
			strbuf_addf(&t, " sent no digest within %d s", REPLICAS_LATE_S);
		if (v->unseen)
			strbuf_addf(&t, "%s%u of the group's %u ranks never sent one",
				    v->nr_ranks ? "; " : "", v->unseen, v->size);
	}
	/* one host named when one rank is: the journal's host field is a suspect */
	const char *host =
		v->kind == REPLICA_DIVERGED && v->nr_ranks == 1 ? rank_host(s, v->ranks[0]) : NULL;
	sup_journal_event(s, cls, host, t.buf);
	sup_say(s, "%s: %s", cls, t.buf);
	if (v->kind != REPLICA_MISSING) {
		/* the machine stops the step, has the hosts tested, resumes before this step */
		struct strlist hosts = STRLIST_INIT;
		for (size_t i = 0; i < v->nr_ranks; i++) {
			const char *h = rank_host(s, v->ranks[i]);
			if (h && !strlist_has(&hosts, h))
				strlist_add(&hosts, h);
		}
		struct sup_event e = { .kind = SUP_EV_DIVERGED, .step = v->step, .text = t.buf,
				       .hosts = (const char *const *)hosts.items,
				       .nr_hosts = hosts.nr };
		s->ev.detected = s->ev.happened = sup_wall(s);
		sup_post(s, &e);
		strlist_release(&hosts);
	}
	strbuf_release(&t);
}

void sup_replicas_tick(struct sup *s)
{
	if (s->at.rep_on)
		replicas_tick(&s->at.rep, sup_mono(s));
}

/* A digest line of a rank: taken (true), or not one (false: the line is the trainer's). */
static bool digest_line(struct sup *s, int rank, const char *line, size_t len)
{
	uint64_t step, digest;
	unsigned group, size;
	int r = replicas_parse_line(line, len, &step, &group, &size, &digest);
	if (r == 0)
		return false;
	if (r < 0) {
		if (!s->at.rep_bad_lines++) {
			struct strbuf t = STRBUF_INIT;
			strbuf_addf(&t, "rank %d printed a vigil-digest line vigil cannot read "
				    "(want: vigil-digest step=N group=G size=M digest=HEX): ", rank);
			strbuf_add_clean(&t, line);
			sup_journal_event(s, "replica_line_unreadable", NULL, t.buf);
			strbuf_release(&t);
		}
		return true;
	}
	if (s->at.rep_on)
		replicas_add(&s->at.rep, (unsigned)rank, step, group, size, digest, sup_mono(s));
	return true;
}

static void on_rank_line(void *arg, int rank, int stream, const char *line, size_t len)
{
	struct sup *s = arg;
	if (rank < 0) {
		srun_line(s, line, len);
		return;
	}
	if (len > 12 && line[0] == 'v' && digest_line(s, rank, line, len))
		return;
	if (rank != 0 || !s->at.parsers)
		return;
	/* progress from rank 0's lines, both streams (loggers write to stderr) */
	step_parser_feed(&s->at.out_p, line, len, on_step_out, s);
	step_parser_feed(&s->at.out_p, "\n", 1, on_step_out, s);
}

void sup_world_output(struct sup *s, int stream, const char *data, size_t len)
{
	if (s->at.ro_open)
		rankout_feed(&s->at.ro, stream, data, len, sup_wall(s), sup_mono(s));
}

/* Every step is journaled (vigil diagnose steps reads the journal as it is); fsync'd at most
 * once a second, and with the next synced record: a kill -9 loses at most a second of them. */
static void journal_step(struct sup *s, const struct step_reading *sr)
{
	double now = sup_wall(s);
	bool sync = now - s->at.last_step_journaled >= STEP_JOURNAL_EVERY_S;
	if (sync)
		s->at.last_step_journaled = now;
	struct journal_record r = { .kind = JOURNAL_STEP, .attempt = s->m.attempt, .has_step = true,
				    .step = sr->step, .has_loss = sr->has_loss, .loss = sr->loss,
				    .has_tokens = sr->has_tokens, .tokens = sr->tokens,
				    .has_mfu = sr->has_mfu, .mfu = sr->mfu, .t = now };
	struct strbuf e = STRBUF_INIT;
	if (journal_append_sync(&s->j, &r, sync, &e) < 0)
		sup_say(s, "%s", e.buf);
	else if (s->W->journaled)
		s->W->journaled(s->W->ctx, ++s->journaled);
	strbuf_release(&e);
}

void sup_flush_step(struct sup *s)
{
	journal_sync(&s->j, NULL);
}

void sup_progress(struct sup *s, const struct step_update *u, bool from_json)
{
	if (from_json)
		s->at.json_steps = true;
	else if (s->at.json_steps)
		return; /* the step file is the source once it speaks */
	if (u->change == STEP_SAME || (s->at.has_step && u->r.step == s->at.last_step))
		return;
	if (u->change == STEP_BACKWARDS || u->change == STEP_JUMP) {
		struct strbuf t = STRBUF_INIT;
		strbuf_addf(&t, "step %llu after %llu", (unsigned long long)u->r.step,
			    (unsigned long long)u->prev);
		sup_journal_event(s, u->change == STEP_BACKWARDS ? "step_backwards" : "step_jump", NULL,
			      t.buf);
		strbuf_release(&t);
	}
	s->at.has_step = true;
	s->at.last_step = u->r.step;
	if (u->r.has_loss) {
		s->at.has_loss = true;
		s->at.last_loss = u->r.loss;
	}
	struct detect_result dr;
	enum detect_what w = detect_on_step(&s->o->detect, &s->at.det, u->r.step, u->change,
					    sup_mono(s), &dr);
	/* the machine journals a step record for every step; here they are thinned out */
	struct sup_event e = { .kind = SUP_EV_STEP, .step = u->r.step };
	enum sup_state st = s->m.state;
	if (st == SUP_LAUNCHING || st == SUP_RUNNING || st == SUP_COLLECTING_EVIDENCE) {
		sup_post(s, &e);
		journal_step(s, &u->r);
	}
	struct strbuf t = STRBUF_INIT;
	if (w == DETECT_SLOW_STEP || w == DETECT_SLOWDOWN) {
		strbuf_addf(&t, "step %llu took %.3f s per step, over %.1f x the median %.3f s",
			    (unsigned long long)u->r.step, dr.step_time, s->o->detect.slow_factor,
			    dr.median);
		if (w == DETECT_SLOWDOWN)
			strbuf_addf(&t, " (%u slow steps in a row)", dr.slow_run);
		if (w == DETECT_SLOW_STEP) {
			sup_post_simple(s, SUP_EV_SLOW_STEP, NULL, t.buf);
		} else {
			sup_say(s, "slowdown: %s", t.buf);
			/* it started with the first slow step of the run */
			sup_fault(s, SUP_EV_SLOW, NULL, t.buf,
			      sup_wall(s) - dr.step_time * dr.slow_run);
		}
	}
	strbuf_release(&t);
}

void sup_read_step_file(struct sup *s)
{
	if (s->W->no_step_file)
		return; /* one failed open a turn was a tenth of a vigil sim run */
	if (s->at.step_file_fd < 0) {
		s->at.step_file_fd = open(s->at.step_file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (s->at.step_file_fd < 0)
			return;
		struct stat st;
		if (fstat(s->at.step_file_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			/* a FIFO or device would block or never end: not a step file */
			close(s->at.step_file_fd);
			s->at.step_file_fd = -2;
			sup_journal_event(s, "step_file_refused", NULL, "not a regular file");
			return;
		}
	}
	if (s->at.step_file_fd < 0)
		return;
	char buf[65536];
	for (int i = 0; i < 64; i++) { /* at most 4 MiB a turn: the loop has other work */
		ssize_t n = read(s->at.step_file_fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		step_parser_feed(&s->at.json_p, buf, (size_t)n, on_step_json, s);
	}
}

void sup_close_attempt(struct sup *s)
{
	if (s->at.ro_open) {
		rankout_finish(&s->at.ro);
		rankout_close(&s->at.ro);
		s->at.ro_open = false;
	}
	if (s->at.rep_on) {
		replicas_flush(&s->at.rep);
		replicas_release(&s->at.rep);
		s->at.rep_on = false;
	}
	strlist_release(&s->at.hosts);
	if (s->at.parsers) {
		sup_read_step_file(s);
		step_parser_release(&s->at.out_p);
		step_parser_release(&s->at.json_p);
		s->at.parsers = false;
	}
	if (s->at.step_file_fd >= 0)
		close(s->at.step_file_fd);
	s->at.step_file_fd = -1;
	sup_flush_step(s);
}

/* A directory of the run, made if missing; never a link, never another user's. */
int sup_make_dir(const char *path, struct strbuf *err)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		strbuf_addf(err, "cannot create '%s': %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (lstat(path, &st) < 0) {
		strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		strbuf_addf(err, "cannot use '%s': it is %s, not a directory", path,
			    file_kind(st.st_mode));
		return -1;
	}
	if (st.st_uid != geteuid()) {
		strbuf_addf(err, "cannot use '%s': it belongs to uid %u", path, (unsigned)st.st_uid);
		return -1;
	}
	return 0;
}

unsigned sup_world_of(const struct sup *s, size_t hosts)
{
	return (unsigned)hosts * s->o->tasks_per_node;
}

/* The address of a host for MASTER_ADDR: its NodeAddr where Slurm knows one. */
const char *sup_addr_of(const struct sup *s, const char *host)
{
	for (size_t i = 0; i < s->alloc.nr; i++)
		if (!strcmp(s->alloc.items[i].name, host) && s->alloc.items[i].addr &&
		    *s->alloc.items[i].addr)
			return s->alloc.items[i].addr;
	return host;
}

/* The environment of every task beyond the step's own. */
void sup_task_env(struct sup *s, struct strlist *env, bool smoke)
{
	struct strbuf e = STRBUF_INIT;
	strlist_add(env, "PYTHONUNBUFFERED=1"); /* progress lines as they are printed */
	if (s->at.pyhook_dir[0]) {
		const char *pp = getenv("PYTHONPATH");
		strbuf_addf(&e, "PYTHONPATH=%s%s%s", s->at.pyhook_dir, pp && *pp ? ":" : "",
			    pp ? pp : "");
		strlist_add(env, e.buf);
	}
	if (smoke)
		strlist_add(env, "VIGIL_SMOKE=1");
	if (s->o->nccl_recorder && !smoke) {
		/* the NCCL flight recorder: a ring per rank in /dev/shm that vigil stacks copies on a
		 * hang, dumps into the attempt's nccl/ at exit (vigil diagnose hang reads both) */
		strbuf_reset(&e);
		strbuf_addf(&e, "NCCL_PROFILER_PLUGIN=%s", s->o->nccl_recorder);
		strlist_add(env, e.buf);
		strbuf_reset(&e);
		strbuf_addf(&e, "VIGIL_NCCL_JOB=vigil-%s", s->o->job_id ? s->o->job_id : "run");
		strlist_add(env, e.buf);
		strbuf_reset(&e);
		strbuf_addf(&e, "VIGIL_NCCL_DUMP_DIR=%s/nccl", s->at.attempt_dir);
		strlist_add(env, e.buf);
	}
	strbuf_release(&e);
}

void sup_do_launch(struct sup *s, const struct sup_action *x)
{
	const struct sup_options *o = s->o;
	struct strbuf e = STRBUF_INIT;
	snprintf(s->at.attempt_dir, sizeof(s->at.attempt_dir), "%s/attempt-%u", o->run_dir, x->attempt);
	snprintf(s->at.step_file, sizeof(s->at.step_file), "%s/steps.jsonl", s->at.attempt_dir);
	unsigned world = sup_world_of(s, x->hosts.nr);
	char port[16];
	(void)port;
	if (sup_make_dir(s->at.attempt_dir, &e) < 0)
		goto fail;
	if (o->nccl_recorder) {
		struct strbuf nd = STRBUF_INIT;
		strbuf_addf(&nd, "%s/nccl", s->at.attempt_dir);
		if (sup_make_dir(nd.buf, &e) < 0) {
			strbuf_release(&nd);
			goto fail;
		}
		strbuf_release(&nd);
	}
	if (rankout_open(&s->at.ro, s->at.attempt_dir, world, on_rank_line, s, &e) < 0)
		goto fail;
	s->at.ro.lazy = s->W->run_dir_private;
	s->at.ro_open = true;
	strlist_release(&s->at.hosts);
	for (size_t i = 0; i < x->hosts.nr; i++)
		strlist_add(&s->at.hosts, x->hosts.items[i]);
	replicas_init(&s->at.rep, world, REPLICAS_LATE_S, on_replicas, s);
	s->at.rep_on = true;
	s->at.rep_bad_lines = 0;
	if (step_parser_init_output(&s->at.out_p, o->step_pattern, &e) < 0)
		goto fail;
	step_parser_init_json(&s->at.json_p);
	s->at.parsers = true;
	s->at.json_steps = false;
	s->at.step_file_fd = -1;
	s->at.has_step = false;
	s->at.launched_said = false;
	s->at.pending_said = false;
	s->at.last_step_journaled = 0;

	struct strlist env = STRLIST_INIT;
	sup_task_env(s, &env, false);
	if (x->resume_before) {
		/* docs/SUPERVISOR.md, "Replica digests": for this attempt only */
		strbuf_reset(&e);
		strbuf_addf(&e, "VIGIL_RESUME_BEFORE=%llu", (unsigned long long)x->step);
		strlist_add(&env, e.buf);
		strbuf_reset(&e);
		strbuf_addf(&e, "attempt %u resumes from a checkpoint before step %llu, the first "
			    "whose replica digests differed (VIGIL_RESUME_BEFORE)", x->attempt,
			    (unsigned long long)x->step);
		sup_journal_event(s, "resume_before", NULL, e.buf);
		strbuf_reset(&e);
	}
	struct step_spec spec = {
		.hosts = (const char *const *)x->hosts.items,
		.nr_hosts = x->hosts.nr,
		.tasks_per_node = o->tasks_per_node,
		.master_addr = sup_addr_of(s, x->hosts.items[0]),
		.master_port = o->master_port + x->attempt % 1000,
		.attempt = x->attempt,
		.run_dir = o->run_dir,
		.attempt_dir = s->at.attempt_dir,
		.step_file = s->at.step_file,
		.label = "vigil-run",
		.labelled = true,
		.env = (const char *const *)env.items,
		.cmd = o->cmd,
	};
	/* the step is inside our allocation, whatever SLURM_JOB_ID the caller's environment has */
	int rc = s->W->launch(s->W->ctx, s, &spec, &e);
	strlist_release(&env);
	if (rc < 0)
		goto fail;
	s->at.step_live = true;
	s->at.launch_wall = sup_wall(s);
	detect_start(&s->at.det, sup_mono(s));
	sup_say(s, "attempt %u: %u ranks on %zu hosts (%s%s)", x->attempt, world, x->hosts.nr,
	    x->hosts.items[0], x->hosts.nr > 1 ? ", ..." : "");
	strbuf_release(&e);
	return;
fail:
	/* a launch that cannot happen is a crash of this attempt: the machine decides */
	sup_say(s, "attempt %u could not start: %s", x->attempt, e.buf);
	sup_close_attempt(s);
	s->ev.detected = s->ev.happened = sup_wall(s);
	struct sup_event ev = { .kind = SUP_EV_TASK_EXIT, .code = 127, .text = e.buf };
	/* launching -> stopping; the stop finds nothing to stop */
	sup_post(s, &ev);
	strbuf_release(&e);
}

void sup_do_stop(struct sup *s, const struct sup_action *x)
{
	struct strbuf e = STRBUF_INIT;
	int rc = 0;
	if (s->at.step_live) {
		sup_say(s, "stopping the step (TERM, %u ms, KILL)", s->o->grace_ms);
		rc = s->W->stop(s->W->ctx, s, s->o->grace_ms, &e);
		s->at.step_live = false;
	} else if (x->text && *x->text) {
		/* a step of the supervisor before this one (journal) */
		sup_say(s, "stopping step %s of attempt %u, left by an earlier vigil run", x->text,
		    x->attempt);
		rc = s->W->stop_id(s->W->ctx, s->o, x->text, &e);
	} else if (s->m.resumed && !s->at.launched_said) {
		/* resumed without a step id in the journal: the attempt directory may have it */
		struct strbuf p = STRBUF_INIT, id = STRBUF_INIT;
		strbuf_addf(&p, "%s/attempt-%u/step-id", s->o->run_dir, x->attempt);
		if (read_file_bounded(p.buf, &id, 64, NULL) == 0) {
			strbuf_rtrim(&id);
			if (step_id_ok(id.buf)) {
				sup_say(s, "stopping step %s of attempt %u (its step-id file)", id.buf,
				    x->attempt);
				rc = s->W->stop_id(s->W->ctx, s->o, id.buf, &e);
			}
		}
		strbuf_release(&p);
		strbuf_release(&id);
	}
	sup_close_attempt(s);
	if (rc < 0)
		sup_journal_event(s, "stop_incomplete", NULL, e.buf);
	if (s->m.fault == SUP_FAULT_CRASH && s->at.attempt_dir[0]) {
		/* the first error in the ranks' output, not the cascade after it */
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "%s/diagnosis-logs.json", s->at.attempt_dir);
		json_free(sup_diagnose(s, "logs", s->at.attempt_dir, p.buf));
		strbuf_release(&p);
	}
	strbuf_release(&e);
	sup_post_simple(s, SUP_EV_STOPPED, NULL, NULL);
}
