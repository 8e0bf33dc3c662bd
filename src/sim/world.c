/* world.c: the simulated world (see world.h) */
#include "world.h"

#include "../lib/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *host_name_at(const void *arr, size_t i)
{
	return ((const struct fw_host *)arr)[i].name;
}

struct fw_host *fw_host(struct fakeworld *fw, const char *name)
{
	size_t i = strindex_find(&fw->index, name, fw->hosts, host_name_at);
	return i == (size_t)-1 ? NULL : &fw->hosts[i];
}

void fw_mark(struct fakeworld *fw, struct fw_host *h)
{
	if (!h || h->marked)
		return;
	h->marked = true;
	ALLOC_GROW(fw->marked, fw->nr_marked + 1, fw->alloc_marked);
	fw->marked[fw->nr_marked++] = (size_t)(h - fw->hosts);
}

struct fw_fault *fw_fault(struct fakeworld *fw, double at, enum fw_fault_kind kind,
			  const char *host)
{
	ALLOC_GROW(fw->faults, fw->nr_faults + 1, fw->alloc_faults);
	struct fw_fault *f = &fw->faults[fw->nr_faults++];
	memset(f, 0, sizeof(*f));
	f->at = at;
	f->kind = kind;
	f->factor = 1;
	if (host)
		snprintf(f->host, sizeof(f->host), "%s", host);
	return f;
}

/* ---- the clock ---- */

static double fw_wall(void *ctx)
{
	struct fakeworld *fw = ctx;
	return fw->wall0 + fw->now;
}

static uint64_t fw_mono_ms(void *ctx)
{
	struct fakeworld *fw = ctx;
	return (uint64_t)((fw->now + 1000) * 1000 + 0.5);
}

static void apply_state_faults(struct fakeworld *fw);
static void watch_result(struct fakeworld *fw, struct sup *s);
static void find_pace(struct fakeworld *fw);

static bool fw_sleep_ms(void *ctx, uint64_t ms)
{
	struct fakeworld *fw = ctx;
	fw->now += (double)ms / 1000;
	apply_state_faults(fw);
	return true;
}

static uint32_t fw_random(void *ctx)
{
	(void)ctx;
	return 4;
}

/* A signal during the nth call of an action, if asked for. */
static void raise_in(struct fakeworld *fw, int where)
{
	if (fw->raise_in[where].sig && ++fw->raise_in[where].calls == fw->raise_in[where].nth)
		sup_sig_seen = fw->raise_in[where].sig;
}

/* Move the clock by dt (something that takes time) and apply what happened meanwhile. */
static void advance(struct fakeworld *fw, double dt)
{
	fw->now += dt;
	apply_state_faults(fw);
}

/* ---- faults ---- */

static bool in_step(const struct fakeworld *fw, const char *host, size_t *at)
{
	for (size_t i = 0; i < fw->nr_step_hosts; i++)
		if (!strcmp(fw->step_hosts[i], host)) {
			if (at)
				*at = i;
			return true;
		}
	return false;
}

/* Faults that change the cluster, not the step's output: they happen whatever runs. */
static void apply_state_faults(struct fakeworld *fw)
{
	if (fw->tick)
		fw->tick(fw, fw->tick_arg);
	for (size_t i = 0; i < fw->nr_faults; i++) {
		struct fw_fault *f = &fw->faults[i];
		if (f->fired || f->at_step || f->at > fw->now)
			continue;
		struct fw_host *h = f->host[0] ? fw_host(fw, f->host) : NULL;
		switch (f->kind) {
		case FW_SICK:
			if (h) {
				h->sick = true;
				fw_mark(fw, h);
				snprintf(h->reason, sizeof(h->reason), "%s",
					 f->text[0] ? f->text : "gpu: Xid 79 (fallen off the bus)");
			}
			break;
		case FW_HEAL:
			if (h)
				h->sick = h->lost = h->silent = false, h->slow = 0;
			find_pace(fw);
			break;
		case FW_SILENT:
			if (h)
				h->silent = true;
			fw_mark(fw, h);
			break;
		case FW_SLOW:
			if (h)
				h->slow = f->factor;
			else
				fw->slow = f->factor;
			find_pace(fw);
			break;
		case FW_SIGNAL:
			sup_sig_seen = f->code;
			break;
		case FW_LOST:
			if (h)
				h->lost = true;
			fw_mark(fw, h);
			if (!fw->live || !h || !in_step(fw, h->name, NULL))
				break; /* the step's side comes with the next wait */
			continue;
		default:
			continue; /* the step's own: at the next wait while a step runs */
		}
		f->fired = true;
	}
}

/* The slowest host of the step sets its pace (found again when a host's pace changes). */
static void find_pace(struct fakeworld *fw)
{
	fw->pace = 1;
	for (size_t i = 0; i < fw->nr_step_hosts; i++) {
		const struct fw_host *h = fw_host(fw, fw->step_hosts[i]);
		if (h && h->slow > fw->pace)
			fw->pace = h->slow;
	}
}

static double step_interval(const struct fakeworld *fw)
{
	double k = fw->slow > fw->pace ? fw->slow : fw->pace;
	return fw->step_s * k;
}

static void end_step(struct fakeworld *fw, double at, int code, const char *desc)
{
	if (fw->ends_at > 0 && fw->ends_at <= at)
		return; /* already ending sooner */
	fw->ends_at = at;
	fw->end_code = code;
	snprintf(fw->end_desc, sizeof(fw->end_desc), "%s", desc);
}

/* The step's faults due now, while a step runs; srun's lines into out. */
static void apply_step_faults(struct fakeworld *fw, struct strbuf *out)
{
	for (size_t i = 0; i < fw->nr_faults; i++) {
		struct fw_fault *f = &fw->faults[i];
		if (f->fired || (f->at_step ? fw->step < f->at_step : f->at > fw->now))
			continue;
		size_t at = 0;
		switch (f->kind) {
		case FW_CRASH:
			if (in_step(fw, f->host, &at)) {
				strbuf_addf(out, "srun: error: %s: task %zu: Exited with exit code %d\n",
					    f->host, at * fw->tasks_per_node, f->code ? f->code : 1);
				end_step(fw, fw->now + 0.5, 1, "exited with 1");
				if (fw->struck)
					fw->struck(fw, f, fw->tick_arg);
			}
			break;
		case FW_HANG:
			if (!fw->hung && fw->struck)
				fw->struck(fw, f, fw->tick_arg);
			fw->hung = true;
			break;
		case FW_LOST:
			if (in_step(fw, f->host, NULL)) {
				strbuf_addf(out, "srun: error: Node failure on %s\n", f->host);
				end_step(fw, fw->now + 1, 1, "exited with 1");
				if (fw->struck)
					fw->struck(fw, f, fw->tick_arg);
			}
			break;
		case FW_LINES:
			strbuf_addstr(out, f->text);
			break;
		case FW_FINISH:
			fw->finish = true;
			break;
		case FW_SICK: /* at a step: seen by a watch that ends in this poll */
			if (fw_host(fw, f->host)) {
				fw_host(fw, f->host)->sick = true;
				fw_mark(fw, fw_host(fw, f->host));
				snprintf(fw_host(fw, f->host)->reason, sizeof(fw->hosts->reason),
					 "gpu: Xid 79 (fallen off the bus)");
			}
			break;
		default:
			continue;
		}
		f->fired = true;
	}
}

/* ---- Slurm ---- */

static void fill_node(const struct fw_host *h, struct slurm_node *n)
{
	memset(n, 0, sizeof(*n));
	n->name = xstrdup(h->name);
	n->state = xstrdup(h->lost ? "ALLOCATED*+DRAIN" : h->drained ? "ALLOCATED+DRAIN"
								     : "ALLOCATED");
	n->flags = NODE_ALLOCATED | (h->lost ? NODE_NOT_RESPONDING : 0) |
		   (h->drained ? NODE_DRAIN : 0);
	n->reason = xstrdup(h->drained ? h->drain_reason : "");
	n->partitions = xstrdup("gpu");
	n->addr = xstrdup("");
}

static int fw_nodes(void *ctx, const struct sup_options *o, const char *hostlist,
		    struct slurm_nodes *out, struct strbuf *err)
{
	struct fakeworld *fw = ctx;
	(void)err;
	memset(out, 0, sizeof(*out));
	if (!strcmp(hostlist, o->nodelist)) {
		out->items = xcalloc(fw->nr_hosts + 1, sizeof(*out->items));
		for (size_t i = 0; i < fw->nr_hosts; i++)
			fill_node(&fw->hosts[i], &out->items[out->nr++]);
		out->alloc = fw->nr_hosts + 1;
		return 0;
	}
	for (const char *t = hostlist; *t;) {
		size_t len = strcspn(t, ",");
		char name[sizeof(fw->hosts->name)];
		const struct fw_host *h = NULL;
		if (len && len < sizeof(name)) {
			memcpy(name, t, len);
			name[len] = '\0';
			h = fw_host(fw, name);
		}
		t += len + (t[len] == ',');
		/* vigil sim: only the nodes that are not plainly allocated (world.h) */
		if (!h || (fw->slurm_unusual_only && !h->lost && !h->drained))
			continue;
		ALLOC_GROW(out->items, out->nr + 1, out->alloc);
		fill_node(h, &out->items[out->nr++]);
	}
	return 0;
}

static int fw_node_get(void *ctx, const struct sup_options *o, const char *host,
		       struct slurm_node *out, struct strbuf *err)
{
	struct fakeworld *fw = ctx;
	(void)o;
	const struct fw_host *h = fw_host(fw, host);
	if (!h) {
		strbuf_addf(err, "Node %s not found", host);
		return -1;
	}
	fill_node(h, out);
	return 0;
}

static int fw_drain(void *ctx, const struct sup_options *o, const char *host,
		    const struct slurm_decision *d, struct strbuf *err)
{
	struct fakeworld *fw = ctx;
	(void)o;
	(void)err;
	struct fw_host *h = fw_host(fw, host);
	fw->drains++;
	if (h) {
		h->drained = true;
		snprintf(h->drain_reason, sizeof(h->drain_reason), "%s", d->reason);
	}
	return 0;
}

static struct check_row *fw_check(void *ctx, const struct sup_options *o,
				  const char *const *hosts, size_t n,
				  const struct slurm_nodes *alloc, bool cached, struct strbuf *note)
{
	struct fakeworld *fw = ctx;
	(void)alloc;
	if (fw->check_note)
		strbuf_addstr(note, fw->check_note);
	fw->check_rounds++;
	fw->checked_hosts += (unsigned)n;
	apply_state_faults(fw);
	struct check_row *rows = xcalloc(n ? n : 1, sizeof(*rows));
	for (size_t i = 0; i < n; i++) {
		const struct fw_host *h = fw_host(fw, hosts[i]);
		struct check_row *r = &rows[i];
		r->host = xstrdup(hosts[i]);
		if (!h || h->lost || h->silent) {
			r->verdict = FLEET_UNREACHABLE;
			r->reason = xstrdup(h && h->lost ? "srun: error: Unable to create step: "
							    "Required node not available (down, "
							    "drained or reserved)"
							  : "no answer in 10 s");
		} else if (cached && h->noagent) {
			r->verdict = FLEET_UNKNOWN;
			r->reason = xstrdup("agent: no fresh result");
			r->no_cache = true;
		} else if (h->sick) {
			r->verdict = FLEET_UNHEALTHY;
			r->reason = xstrdup(h->reason);
			r->findings = 1;
		} else {
			r->verdict = FLEET_HEALTHY;
			r->reason = xstrdup("");
		}
	}
	if (!fw->in_watch)
		raise_in(fw, FW_IN_CHECK);
	if (!fw->in_watch)
		advance(fw, fw->check_s > o->check_timeout_s ? o->check_timeout_s : fw->check_s);
	return rows;
}

/* ---- the step ---- */

static void free_step_hosts(struct fakeworld *fw)
{
	for (size_t i = 0; i < fw->nr_step_hosts; i++)
		free(fw->step_hosts[i]);
	free(fw->step_hosts);
	fw->step_hosts = NULL;
	fw->nr_step_hosts = 0;
}

static int fw_launch(void *ctx, struct sup *s, const struct step_spec *spec, struct strbuf *err)
{
	struct fakeworld *fw = ctx;
	(void)s;
	for (size_t i = 0; i < spec->nr_hosts; i++) {
		const struct fw_host *h = fw_host(fw, spec->hosts[i]);
		if (!h) {
			strbuf_addf(err, "srun: error: invalid node name specified: %s",
				    spec->hosts[i]);
			return -1;
		}
	}
	free_step_hosts(fw);
	fw->step_hosts = xcalloc(spec->nr_hosts + 1, sizeof(*fw->step_hosts));
	for (size_t i = 0; i < spec->nr_hosts; i++)
		fw->step_hosts[fw->nr_step_hosts++] = xstrdup(spec->hosts[i]);
	fw->launches++;
	find_pace(fw);
	fw->live = true;
	fw->hung = fw->finish = false;
	fw->started = fw->now;
	if (fw->launches > 1 && fw->step > fw->ckpt)
		fw->recomputed_steps += fw->step - fw->ckpt;
	fw->step = fw->ckpt;
	fw->next_line = fw->now + fw->startup_s;
	fw->ends_at = 0;
	snprintf(fw->step_id, sizeof(fw->step_id), "100.%u", fw->launches - 1);
	for (size_t i = 0; i < spec->nr_hosts; i++) {
		const struct fw_host *h = fw_host(fw, spec->hosts[i]);
		if (h->lost) /* srun cannot start a task there */
			end_step(fw, fw->now + 1, 1, "exited with 1");
	}
	return 0;
}

static void fw_wait(void *ctx, struct sup *s, int ms, struct sup_wake *wk)
{
	struct fakeworld *fw = ctx;
	double until = fw->now + (double)ms / 1000;
	/* the next thing that happens, if before until */
	double next = until;
	if (fw->live && !fw->hung && fw->next_line < next)
		next = fw->next_line;
	if (fw->live && fw->ends_at > 0 && fw->ends_at < next)
		next = fw->ends_at;
	if (fw->watch_live && fw->watch_at < next && fw->step >= fw->hold_watch_step)
		next = fw->watch_at;
	for (size_t i = 0; i < fw->nr_faults; i++)
		if (!fw->faults[i].fired && !fw->faults[i].at_step && fw->faults[i].at < next)
			next = fw->faults[i].at;
	if (fw->wake_at > fw->now && fw->wake_at < next)
		next = fw->wake_at;
	if (next > fw->now)
		fw->now = next;
	apply_state_faults(fw);
	struct strbuf srun = STRBUF_INIT, lines = STRBUF_INIT;
	while (fw->live && !fw->hung && fw->ends_at <= 0 && fw->next_line <= fw->now) {
		fw->step++;
		bool last = fw->finish || (!fw->train_forever && fw->step >= fw->total_steps);
		/* thinned (vigil sim): the step numbers stay true, the lines come less often */
		if (fw->line_every <= 1 || fw->step % fw->line_every == 0 || last)
			strbuf_addf(&lines, "0: step %llu loss %.3f\n",
				    (unsigned long long)fw->step, 4.0 / (double)(fw->step + 1));
		double dt = step_interval(fw);
		fw->slow_lost_s += dt - fw->step_s;
		if (fw->ckpt_every && fw->step % fw->ckpt_every == 0) {
			fw->ckpt = fw->step;
			fw->ckpts++;
			dt += fw->ckpt_cost_s; /* the save stalls the trainer */
		}
		if (last)
			end_step(fw, fw->now + 0.1, 0, "exited with 0");
		fw->next_line += dt;
	}
	if (fw->live)
		apply_step_faults(fw, &srun);
	if (lines.len)
		sup_world_output(s, 1, lines.buf, lines.len);
	if (srun.len)
		sup_world_output(s, 2, srun.buf, srun.len);
	strbuf_release(&srun);
	strbuf_release(&lines);
	if (fw->live && fw->ends_at > 0 && fw->ends_at <= fw->now) {
		wk->step_ended = true;
		wk->code = fw->end_code;
		strbuf_addstr(&wk->desc, fw->end_desc);
	}
	if (fw->watch_live && fw->watch_at <= fw->now && fw->step >= fw->hold_watch_step) {
		watch_result(fw, s);
		wk->watch_done = true;
		wk->watch_text = fw->watch_text.buf;
	}
}

static const char *fw_step_id(void *ctx, struct sup *s)
{
	struct fakeworld *fw = ctx;
	(void)s;
	return fw->live && fw->now >= fw->started + fw->id_delay ? fw->step_id : NULL;
}

static int fw_stop(void *ctx, struct sup *s, unsigned grace_ms, struct strbuf *err)
{
	struct fakeworld *fw = ctx;
	(void)s;
	(void)err;
	fw->stops++;
	raise_in(fw, FW_IN_STOP);
	advance(fw, fw->stop_s < grace_ms / 1000.0 ? fw->stop_s : grace_ms / 1000.0);
	fw->live = false;
	return 0;
}

static void fw_release_step(void *ctx, struct sup *s)
{
	struct fakeworld *fw = ctx;
	(void)s;
	fw->live = false;
}

static int fw_stop_id(void *ctx, const struct sup_options *o, const char *id, struct strbuf *err)
{
	struct fakeworld *fw = ctx;
	(void)o;
	(void)id;
	(void)err;
	fw->stop_ids++;
	return 0;
}

/* The hosts marked that are not plainly fine now; the rest leave the list (O(marked)). */
static int fw_watch_hosts(void *ctx, struct strlist *out)
{
	struct fakeworld *fw = ctx;
	if (!fw->watch_changed_only)
		return -1;
	size_t keep = 0;
	for (size_t i = 0; i < fw->nr_marked; i++) {
		struct fw_host *h = &fw->hosts[fw->marked[i]];
		if (!h->sick && !h->lost && !h->silent && !h->noagent) {
			h->marked = false;
			continue;
		}
		fw->marked[keep++] = fw->marked[i];
		strlist_add(out, h->name);
	}
	fw->nr_marked = keep;
	return 0;
}

/* What the watch found, as at its end (the real one's checks run during the watch). */
static void watch_result(struct fakeworld *fw, struct sup *s)
{
	strbuf_reset(&fw->watch_text);
	fw->in_watch = true;
	sup_watch_text(s, fw->watch_checks, &fw->watch_text);
	fw->in_watch = false;
}

static int fw_watch_start(void *ctx, struct sup *s, bool checks, struct strbuf *err)
{
	struct fakeworld *fw = ctx;
	(void)err;
	fw->watch_checks = checks;
	fw->watch_live = true;
	fw->watch_at = fw->now + fw->watch_s + (checks ? fw->check_s : 0);
	return 0;
}

static void fw_watch_stop(void *ctx, struct sup *s)
{
	struct fakeworld *fw = ctx;
	(void)s;
	fw->watch_live = false;
}

static int fw_smoke(void *ctx, struct sup *s, const struct step_spec *spec, double timeout_s,
		    double quiet_s, struct strbuf *why)
{
	(void)quiet_s;
	struct fakeworld *fw = ctx;
	(void)s;
	fw->smokes++;
	raise_in(fw, FW_IN_SMOKE);
	int code = 0;
	for (size_t i = 0; i < spec->nr_hosts; i++) {
		const struct fw_host *h = fw_host(fw, spec->hosts[i]);
		if (!h || h->bad_smoke || h->lost)
			code = 1;
		else if (h->smoke_code && !code)
			code = h->smoke_code;
	}
	if (fw->smoke_refused[0]) {
		/* srun refuses the test's step at once: no task runs (world.h) */
		strbuf_addstr(why, fw->smoke_refused);
		return SUP_SMOKE_REFUSED;
	}
	advance(fw, fw->smoke_s < timeout_s ? fw->smoke_s : timeout_s);
	strbuf_addf(why, "exited with %d", code);
	return code;
}

static void fw_evidence(void *ctx, struct sup *s, const char *step_id, char *const *hosts,
			size_t nr_hosts, unsigned world, struct sup_evidence_found *out)
{
	struct fakeworld *fw = ctx;
	(void)s;
	(void)step_id;
	fw->evidences++;
	raise_in(fw, FW_IN_EVIDENCE);
	advance(fw, fw->evidence_s);
	strbuf_addf(&out->summary, "stacks of %u ranks on %zu hosts", world, nr_hosts);
	for (size_t i = 0; i < nr_hosts; i++) {
		if (fw->evidence_sick[0] && !strcmp(hosts[i], fw->evidence_sick)) {
			strlist_add(&out->sick, hosts[i]);
			strlist_add(&out->why, "stacks: a rank stopped in every sample");
			strbuf_addf(&out->summary, "; %s stopped", hosts[i]);
		}
		if (fw->evidence_suspect[0] && !strcmp(hosts[i], fw->evidence_suspect)) {
			strlist_add(&out->suspects, hosts[i]);
			strbuf_addf(&out->summary, "; %s unlike the others", hosts[i]);
		}
	}
}

static int fw_diagnose(void *ctx, const char *kind, const char *arg, struct strbuf *out)
{
	struct fakeworld *fw = ctx;
	(void)arg;
	fw->diagnoses++;
	if (!strcmp(kind, "steps"))
		raise_in(fw, FW_IN_REPORT); /* the run's steps: in its report (or a slowdown's) */
	const char *j = !strcmp(kind, "hang") ? fw->diagnose_hang
			: !strcmp(kind, "logs") ? fw->diagnose_logs
						: fw->diagnose_steps;
	if (!j)
		return -1;
	strbuf_addstr(out, j);
	return 0;
}

static void fw_print(void *ctx, int fd, const char *text, size_t len)
{
	struct fakeworld *fw = ctx;
	if (fw->quiet)
		return;
	strbuf_add(fd == 1 ? &fw->out : &fw->err, text, len);
	if (getenv("VIGIL_FAKEWORLD_VERBOSE"))
		fprintf(stderr, "[%9.3f] %.*s", fw->now, (int)len, text);
}

static void fw_journaled(void *ctx, unsigned nth)
{
	struct fakeworld *fw = ctx;
	fw->journal_records = nth;
	if (fw->die_after_journal && nth == fw->die_after_journal)
		_exit(137); /* kill -9: nothing flushed, nothing released */
}

static void fw_fed(void *ctx, enum sup_state st, enum sup_event_kind ev)
{
	struct fakeworld *fw = ctx;
	if (st < SUP_STATE_NR && ev < SUP_EVENT_NR)
		fw->hit[st][ev]++;
}

void fw_init(struct fakeworld *fw, size_t n, unsigned tasks_per_node)
{
	memset(fw, 0, sizeof(*fw));
	fw->hosts = xcalloc(n + 1, sizeof(*fw->hosts));
	for (size_t i = 0; i < n; i++) {
		snprintf(fw->hosts[i].name, sizeof(fw->hosts[i].name), "n%zu", i + 1);
		strindex_add(&fw->index, fw->hosts[i].name, i, fw->hosts, host_name_at);
	}
	fw->nr_hosts = n;
	snprintf(fw->nodelist, sizeof(fw->nodelist), "n[1-%zu]", n);
	fw->tasks_per_node = tasks_per_node;
	fw->wall0 = 1796000000.0; /* 2026-11-30 */
	fw->startup_s = 20;
	fw->step_s = 1;
	fw->total_steps = 100;
	fw->ckpt_every = 10;
	fw->check_s = 2;
	fw->stop_s = 3;
	fw->smoke_s = 30;
	fw->evidence_s = 5;
	fw->watch_s = 0.5;
	fw->id_delay = 1;
	strbuf_init(&fw->watch_text, 0);
	strbuf_init(&fw->out, 0);
	strbuf_init(&fw->err, 0);
	fw->os = (struct os_ops){ .wall = fw_wall, .mono_ms = fw_mono_ms, .sleep_ms = fw_sleep_ms,
				  .random = fw_random };
	fw->w = (struct sup_world){
		.os = &fw->os, .os_ctx = fw, .ctx = fw,
		.nodes = fw_nodes, .node_get = fw_node_get, .drain = fw_drain, .check = fw_check,
		.launch = fw_launch, .wait = fw_wait, .step_id = fw_step_id, .stop = fw_stop,
		.release = fw_release_step, .stop_id = fw_stop_id,
		.watch_start = fw_watch_start, .watch_stop = fw_watch_stop,
		.watch_hosts = fw_watch_hosts, .smoke = fw_smoke,
		.evidence = fw_evidence, .diagnose = fw_diagnose, .print = fw_print,
		.journaled = fw_journaled, .fed = fw_fed,
	};
	sup_sig_seen = 0;
}

void fw_release(struct fakeworld *fw)
{
	free_step_hosts(fw);
	free(fw->hosts);
	free(fw->faults);
	free(fw->marked);
	strindex_release(&fw->index);
	strbuf_release(&fw->watch_text);
	strbuf_release(&fw->out);
	strbuf_release(&fw->err);
	sup_sig_seen = 0;
}

void fw_options(struct fakeworld *fw, struct sup_options *o, const char *run_dir,
		unsigned spares)
{
	static const char *const cmd[] = { "train", NULL };
	memset(o, 0, sizeof(*o));
	o->job_id = "100";
	o->nodelist = fw->nodelist;
	o->nodes = (unsigned)fw->nr_hosts - spares;
	o->spares = spares;
	o->tasks_per_node = fw->tasks_per_node;
	o->run_dir = run_dir;
	o->max_restarts = 5;
	detect_config_default(&o->detect);
	o->detect.hang_floor_s = 30;
	o->detect.startup_timeout_s = 120;
	o->check_interval_s = 30;
	o->node_poll_s = 10;
	o->check_timeout_s = 10;
	o->stacks_timeout_s = 10;
	o->smoke_timeout_s = 60;
	o->restart_delay_s = 2;
	o->grace_ms = 5000;
	o->master_port = 29500;
	o->drain = true;
	o->cmd = cmd;
	o->vigil_remote = "vigil";
}
