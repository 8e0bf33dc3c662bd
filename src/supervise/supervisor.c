/* supervisor.c: the loop of `vigil run`: events from the world, actions into it (supervisor.h). */
#include "supervisor.h"
#include "sup_int.h"
#include "../logs/gresconf.h"

volatile sig_atomic_t sup_sig_seen;

/* ---- small helpers ---- */

double sup_wall(const struct sup *s)
{
	return os_wall(s->W->os, s->W->os_ctx);
}

double sup_mono(const struct sup *s)
{
	return (double)os_mono_ms(s->W->os, s->W->os_ctx) / 1e3;
}

const char *sup_name_at(const void *arr, size_t i)
{
	return ((const char *const *)arr)[i];
}

void sup_print(struct sup *s, int fd, const char *text, size_t len)
{
	s->W->print(s->W->ctx, fd, text, len);
}

void sup_say(struct sup *s, const char *fmt, ...)
{
	if (s->o->json)
		return;
	struct strbuf line = STRBUF_INIT, clean = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&line, fmt, ap);
	va_end(ap);
	char ts[40];
	rankout_timestamp(sup_wall(s), ts, sizeof(ts));
	strbuf_addf(&clean, "vigil run: %s ", ts + 11);
	strbuf_add_clean(&clean, line.buf);
	strbuf_addch(&clean, '\n');
	sup_print(s, 2, clean.buf, clean.len);
	strbuf_release(&line);
	strbuf_release(&clean);
}

static void journal_rec(struct sup *s, struct journal_record *r)
{
	r->t = sup_wall(s);
	struct strbuf e = STRBUF_INIT;
	if (journal_append(&s->j, r, &e) < 0)
		sup_say(s, "%s", e.buf); /* the run goes on; the record is lost and that is said */
	else if (s->W->journaled)
		s->W->journaled(s->W->ctx, ++s->journaled);
	strbuf_release(&e);
}

void sup_journal_event(struct sup *s, const char *cls, const char *host, const char *detail)
{
	struct journal_record r = { .kind = JOURNAL_EVENT, .attempt = s->m.attempt, .name = cls,
				    .host = host, .text = detail };
	journal_rec(s, &r);
}

static const char *wh_name(const void *arr, size_t i)
{
	return ((const struct watch_host *)arr)[i].name;
}

struct watch_host *sup_wh_get(struct sup *s, const char *name)
{
	size_t i = strindex_find(&s->w.wh_index, name, s->w.wh, wh_name);
	if (i != (size_t)-1)
		return &s->w.wh[i];
	ALLOC_GROW(s->w.wh, s->w.nr_wh + 1, s->w.alloc_wh);
	struct watch_host *w = &s->w.wh[s->w.nr_wh++];
	memset(w, 0, sizeof(*w));
	w->name = xstrdup(name);
	strindex_add(&s->w.wh_index, name, s->w.nr_wh - 1, s->w.wh, wh_name);
	return w;
}

void sup_active_list(const struct sup_machine *m, struct strlist *out)
{
	for (size_t i = 0; i < m->nr_hosts; i++)
		if (m->hosts[i].role == SUP_HOST_ACTIVE)
			strlist_add(out, m->hosts[i].name);
}

/* ---- events in, actions out ---- */

static void run_action(struct sup *s, const struct sup_action *x);
static bool queue_signal(struct sup *s);
static bool signal_event(struct sup *s);

static void event_release(struct queued_event *q)
{
	free(q->host);
	free(q->text);
	if (q->sick_reasons)
		for (size_t i = 0; i < q->sick.nr; i++)
			free(q->sick_reasons[i]);
	free(q->sick_reasons);
	strlist_release(&q->hosts);
	strlist_release(&q->sick);
	memset(q, 0, sizeof(*q));
}

/*
 * The dispatcher, s6's supervise is the model: one queue of events, one of actions; an
 * action's handler only posts events (sup_post), it never calls the machine. The machine is
 * asked about the next event only when every action of the one before is done, so actions run
 * in the order the machine gave them and an action's own events (a stop that ends in
 * "stopped") come after the ones still waiting (the drain of a host excluded with the stop
 * comes before the next launch). Not re-entered: an event posted from a handler or from the
 * step's output waits for the pump already running or the loop's next call.
 */
void sup_pump(struct sup *s)
{
	struct sup_events *ev = &s->ev;
	if (ev->pumping || ev->in_io)
		return;
	ev->pumping = true;
	for (;;) {
		if (ev->actions_head < ev->actions.nr) {
			run_action(s, &ev->actions.v[ev->actions_head++]);
			queue_signal(s); /* a signal during the action: its event goes first */
			continue;
		}
		sup_actions_release(&ev->actions);
		ev->actions_head = 0;
		if (ev->q_head == ev->nr_q)
			break;
		struct queued_event q = ev->q[ev->q_head++];
		ev->happened = q.happened;
		ev->detected = q.detected;
		if (s->W->fed)
			s->W->fed(s->W->ctx, s->m.state, q.kind);
		struct sup_event e = {
			.kind = q.kind, .host = q.host, .text = q.text, .code = q.code,
			.step = q.step, .startup = q.startup,
			.hosts = (const char *const *)q.hosts.items, .nr_hosts = q.hosts.nr,
			.sick = (const char *const *)q.sick.items,
			.sick_reasons = (const char *const *)q.sick_reasons, .nr_sick = q.sick.nr,
		};
		enum sup_state before = s->m.state;
		sup_machine_handle(&s->m, &e, &ev->actions);
		if (s->m.state != before)
			sup_say(s, "%s -> %s (%s)", sup_state_name(before),
				sup_state_name(s->m.state), sup_event_name(e.kind));
		event_release(&q);
	}
	ev->q_head = ev->nr_q = 0;
	ev->pumping = false;
}

/* Queue a copy of e (its strings may be gone before it is fed), with when the fault it reports
 * happened and was seen; the machine sees it when the pump gets to it. */
static void post(struct sup *s, const struct sup_event *e, double happened, double detected)
{
	struct sup_events *ev = &s->ev;
	if (ev->q_head == ev->nr_q)
		ev->q_head = ev->nr_q = 0;
	ALLOC_GROW(ev->q, ev->nr_q + 1, ev->alloc_q);
	struct queued_event *q = &ev->q[ev->nr_q++];
	memset(q, 0, sizeof(*q));
	q->kind = e->kind;
	q->host = e->host ? xstrdup(e->host) : NULL;
	q->text = e->text ? xstrdup(e->text) : NULL;
	q->code = e->code;
	q->step = e->step;
	q->startup = e->startup;
	q->happened = happened;
	q->detected = detected;
	for (size_t i = 0; i < e->nr_hosts; i++)
		strlist_add(&q->hosts, e->hosts[i]);
	if (e->nr_sick) {
		q->sick_reasons = xcalloc(e->nr_sick, sizeof(*q->sick_reasons));
		for (size_t i = 0; i < e->nr_sick; i++) {
			strlist_add(&q->sick, e->sick[i]);
			if (e->sick_reasons && e->sick_reasons[i])
				q->sick_reasons[i] = xstrdup(e->sick_reasons[i]);
		}
	}
	sup_pump(s);
}

/*
 * A signal seen, as the machine's event: SIGUSR1 asks for no more restarts (the attempt that
 * runs may finish), any other (SIGTERM, SIGINT, SIGHUP) cancels the run. It goes before the
 * events that wait: a SIGTERM during a stop is handled before the stop's own "stopped", so the
 * run ends there instead of checking hosts first. false when no signal was seen.
 */
static bool queue_signal(struct sup *s)
{
	int sig = (int)sup_sig_seen;
	if (!sig)
		return false;
	sup_sig_seen = 0;
	char t[80];
	snprintf(t, sizeof(t), "signal %d (%s)%s", sig, strsignal(sig),
		 sig == SIGUSR1 ? ": no more restarts" : "");
	double now = sup_wall(s);
	struct sup_events *ev = &s->ev;
	/* at the head of the queue */
	if (ev->q_head == 0) {
		ALLOC_GROW(ev->q, ev->nr_q + 1, ev->alloc_q);
		memmove(ev->q + 1, ev->q, ev->nr_q * sizeof(*ev->q));
		ev->nr_q++;
	} else {
		ev->q_head--;
	}
	struct queued_event *q = &ev->q[ev->q_head];
	memset(q, 0, sizeof(*q));
	q->kind = sig == SIGUSR1 ? SUP_EV_RESTART_BUDGET_SPENT : SUP_EV_CANCEL;
	q->text = xstrdup(t);
	q->happened = q->detected = now;
	sup_say(s, "%s", t);
	return true;
}

/* A signal seen, queued first and fed now (outside the pump; inside it, queue_signal). */
static bool signal_event(struct sup *s)
{
	if (!queue_signal(s))
		return false;
	sup_pump(s);
	return true;
}

void sup_post(struct sup *s, const struct sup_event *e)
{
	post(s, e, s->ev.happened, s->ev.detected);
}

void sup_post_simple(struct sup *s, enum sup_event_kind k, const char *host, const char *text)
{
	struct sup_event e = { .kind = k, .host = host, .text = text };
	sup_post(s, &e);
}

/* A fault event: remember when it happened and when it was seen, for its journal record. */
void sup_fault(struct sup *s, enum sup_event_kind k, const char *host, const char *text,
		  double happened)
{
	double detected = sup_wall(s);
	struct sup_event e = { .kind = k, .host = host, .text = text };
	if (k == SUP_EV_HANG && !s->at.has_step)
		e.startup = true;
	post(s, &e, happened > 0 && happened <= detected ? happened : detected, detected);
}

/* ---- Slurm ---- */

static void do_drain(struct sup *s, const struct sup_action *x)
{
	if (!s->o->drain) {
		sup_journal_event(s, "drain_skipped", x->host, "run.drain is false");
		return;
	}
	struct slurm_node node = { 0 };
	struct strbuf e = STRBUF_INIT;
	struct slurm_decision d;
	bool have = s->W->node_get(s->W->ctx, s->o, x->host, &node, &e) == 0;
	slurm_decide_exclude(x->text, have ? &node : NULL, &d);
	if (d.act == SLURM_ACT_DRAIN && s->W->drain(s->W->ctx, s->o, x->host, &d, &e) < 0) {
		sup_journal_event(s, "drain_failed", x->host, e.buf);
		sup_say(s, "cannot drain %s: %s", x->host, e.buf);
	} else {
		sup_journal_event(s, d.act == SLURM_ACT_DRAIN ? "drained" : "not_drained", x->host,
			      d.act == SLURM_ACT_DRAIN ? d.reason : d.why);
		sup_say(s, "%s %s: %s", d.act == SLURM_ACT_DRAIN ? "drained" : "did not drain",
		    x->host, d.act == SLURM_ACT_DRAIN ? d.reason : d.why);
	}
	slurm_node_release(&node);
	strbuf_release(&e);
}

/* ---- the end ---- */

static void do_report(struct sup *s, const struct sup_action *x)
{
	if (s->m.launched_any && !(s->m.resumed && !strcmp(x->text ? x->text : "",
							 "the run had already ended"))) {
		/* the run's step times as a whole: checkpoints, throttling, decline */
		struct strbuf j = STRBUF_INIT, p = STRBUF_INIT;
		strbuf_addf(&j, "%s/journal.jsonl", s->o->run_dir);
		strbuf_addf(&p, "%s/diagnosis-steps.json", s->o->run_dir);
		journal_sync(&s->j, NULL);
		json_free(sup_diagnose(s, "steps", j.buf, p.buf));
		strbuf_release(&j);
		strbuf_release(&p);
	}
	s->outcome = x->name;
	free(s->outcome_text);
	s->outcome_text = x->text ? xstrdup(x->text) : NULL;
	s->exit_code = !strcmp(x->name, "done") ? 0 : 1;
}

/* ---- carrying out actions ---- */

static void run_action(struct sup *s, const struct sup_action *x)
{
	{
		switch (x->kind) {
		case SUP_ACT_JOURNAL: {
			if (x->record == JOURNAL_STEP)
				break; /* thinned out by progress() */
			if (x->record == JOURNAL_ATTEMPT_ENDED)
				sup_flush_step(s);
			struct journal_record r = {
				.kind = x->record, .attempt = x->attempt, .name = x->name,
				.host = x->host, .text = x->text, .has_code = x->has_code,
				.code = x->code, .restarts = s->m.restarts,
				.hosts = (const char *const *)x->hosts.items,
				.nr_hosts = x->hosts.nr,
			};
			bool is_fault = x->record == JOURNAL_EVENT && x->name &&
					(!strcmp(x->name, "crash") || !strcmp(x->name, "hang") ||
					 !strcmp(x->name, "startup_timeout") ||
					 !strcmp(x->name, "slow") || !strcmp(x->name, "sick") ||
					 !strcmp(x->name, "lost") || !strcmp(x->name, "cancel") ||
					 !strcmp(x->name, "sdc"));
			if (is_fault && s->ev.detected > 0) {
				r.has_latency = true;
				r.happened = s->ev.happened;
				r.detected = s->ev.detected;
			}
			if (x->record == JOURNAL_ATTEMPT_ENDED && s->at.has_step) {
				r.has_step = true;
				r.step = s->at.last_step;
			}
			if (x->has_step) {
				r.has_step = true;
				r.step = x->step;
			}
			journal_rec(s, &r);
			break;
		}
		case SUP_ACT_PREFLIGHT:
			sup_do_preflight(s);
			break;
		case SUP_ACT_LAUNCH:
			sup_do_launch(s, x);
			break;
		case SUP_ACT_STOP_STEP:
			sup_do_stop(s, x);
			break;
		case SUP_ACT_COLLECT_STACKS:
			sup_do_evidence(s, x);
			break;
		case SUP_ACT_RUN_CHECKS:
			sup_do_checks(s, &x->hosts);
			break;
		case SUP_ACT_DRAIN_HOST:
			do_drain(s, x);
			break;
		case SUP_ACT_REPLACE_HOST: {
			struct strbuf t = STRBUF_INIT;
			strbuf_addf(&t, "%s replaced by the spare %s", x->host, x->other);
			sup_journal_event(s, "replaced", x->host, t.buf);
			sup_say(s, "%s", t.buf);
			strbuf_release(&t);
			break;
		}
		case SUP_ACT_GROUP_TEST:
			sup_do_group_test(s, x);
			break;
		case SUP_ACT_WAIT: {
			const struct sup_world *W = s->W;
			uint64_t end = os_mono_ms(W->os, W->os_ctx) +
				       (uint64_t)(s->o->restart_delay_s * 1000);
			for (uint64_t now; (now = os_mono_ms(W->os, W->os_ctx)) < end && !sup_sig_seen;)
				os_sleep_ms(W->os, W->os_ctx, end - now < 20 ? end - now : 20);
			if (!sup_sig_seen) /* else the signal's event comes first (sup_pump) */
				sup_post_simple(s, SUP_EV_READY, NULL, NULL);
			break;
		}
		case SUP_ACT_REPORT:
			do_report(s, x);
			break;
		}
	}
}

/* ---- the loop while a step runs ---- */

/*
 * One turn: wait (the world gives the step's output as it comes, while events wait for the
 * pump: their handling may stop and free that very step), then a signal, the watch's end,
 * the step file, the events, the step's end, the detector's deadlines, the next watch.
 */
static void run_loop(struct sup *s)
{
	const struct sup_options *o = s->o;
	const struct sup_world *W = s->W;
	double now = sup_mono(s);
	s->w.next_poll = now + o->node_poll_s;
	s->w.next_check = o->check_interval_s > 0 ? now + o->check_interval_s : INFINITY;
	struct sup_wake wk;
	memset(&wk, 0, sizeof(wk));
	while (s->at.step_live && (s->m.state == SUP_LAUNCHING || s->m.state == SUP_RUNNING)) {
		now = sup_mono(s);
		double next = detect_deadline(&o->detect, &s->at.det);
		if (!s->w.watch_live) {
			if (s->w.next_poll < next)
				next = s->w.next_poll;
			if (s->w.next_check < next)
				next = s->w.next_check;
		}
		double wait = next - now;
		int cap = W->turn_ms ? (int)W->turn_ms : 250;
		int ms = wait > cap / 1000.0 ? cap : wait <= 0 ? 0 : (int)(wait * 1000) + 1;
		strbuf_release(&wk.desc);
		memset(&wk, 0, sizeof(wk));
		unsigned attempt = s->m.attempt;
		s->ev.in_io = true;
		W->wait(W->ctx, s, ms, &wk);
		if (wk.step_ended)
			rankout_finish(&s->at.ro);
		s->ev.in_io = false;
		signal_event(s); /* a cancel stops the step; SIGUSR1 lets it run on */
		if (wk.watch_done)
			sup_watch_done(s, wk.watch_text);
		if (s->m.attempt != attempt)
			continue; /* a new attempt runs: what woke us was the old one's */
		if (!s->at.step_live || (s->m.state != SUP_LAUNCHING && s->m.state != SUP_RUNNING))
			break;
		if (s->at.parsers) {
			s->ev.in_io = true;
			sup_read_step_file(s);
			s->ev.in_io = false;
		}
		if (s->ev.q_head < s->ev.nr_q) {
			sup_pump(s);
			if (s->m.attempt != attempt || !s->at.step_live ||
			    (s->m.state != SUP_LAUNCHING && s->m.state != SUP_RUNNING))
				continue; /* the attempt ended (and maybe the next began) */
		}
		if (!s->at.launched_said) {
			const char *id = W->step_id(W->ctx, s);
			if (id) {
				s->at.launched_said = true;
				sup_post_simple(s, SUP_EV_LAUNCHED, NULL, id);
			}
		}
		if (wk.step_ended) {
			if (s->m.state != SUP_LAUNCHING && s->m.state != SUP_RUNNING)
				break;
			if (wk.code != 0)
				sup_say(s, "srun %s", wk.desc.buf);
			s->ev.detected = s->ev.happened = sup_wall(s);
			struct sup_event e = { .kind = SUP_EV_TASK_EXIT, .code = wk.code,
					       .text = wk.desc.buf };
			W->release(W->ctx, s);
			s->at.step_live = false;
			if (wk.code == 0)
				sup_close_attempt(s);
			sup_post(s, &e);
			break;
		}
		now = sup_mono(s);
		sup_replicas_tick(s);
		struct detect_result dr;
		enum detect_what dw = detect_on_tick(&o->detect, &s->at.det, now, &dr);
		if (dw == DETECT_HANG || dw == DETECT_STARTUP_TIMEOUT) {
			struct strbuf t = STRBUF_INIT;
			if (dw == DETECT_HANG)
				strbuf_addf(&t, "no new step for %.1f s after step %llu (limit %.1f s)",
					    dr.silent_s, (unsigned long long)s->at.last_step,
					    dr.limit_s);
			else
				strbuf_addf(&t, "no step %.1f s after the launch (startup timeout "
					    "%.1f s)", dr.silent_s, dr.limit_s);
			sup_say(s, "%s: %s", dw == DETECT_HANG ? "hang" : "startup timeout", t.buf);
			sup_fault(s, SUP_EV_HANG, NULL, t.buf, sup_wall(s) - dr.silent_s);
			strbuf_release(&t);
			continue;
		}
		if (!s->w.watch_live && (now >= s->w.next_poll || now >= s->w.next_check)) {
			bool checks = now >= s->w.next_check;
			sup_watch_start(s, checks);
			s->w.next_poll = now + o->node_poll_s;
			if (checks)
				s->w.next_check = now + o->check_interval_s;
		}
	}
	strbuf_release(&wk.desc);
	sup_watch_stop(s);
}

/* ---- setup and the whole run ---- */

/* --hosts: the allocation narrowed to the nodes the hostlist names, every one of which must be
 * in it (a host outside it could not be given a step: said now, not at the launch). */
static int only_hosts(struct sup *s, struct strbuf *err)
{
	struct strbuf e = STRBUF_INIT;
	uint64_t want = 0;
	size_t kept = 0;
	if (hostlist_count(s->o->hosts, &want, &e) < 0)
		goto bad;
	for (size_t i = 0; i < s->alloc.nr; i++) {
		int m = hostlist_match(s->o->hosts, s->alloc.items[i].name, &e);
		if (m < 0)
			goto bad;
		if (m) {
			struct slurm_node t = s->alloc.items[kept];
			s->alloc.items[kept++] = s->alloc.items[i];
			s->alloc.items[i] = t;
		}
	}
	for (size_t i = kept; i < s->alloc.nr; i++)
		slurm_node_release(&s->alloc.items[i]);
	s->alloc.nr = kept;
	if (kept != want) {
		strbuf_addstr(err, "--hosts '");
		strbuf_add_clean(err, s->o->hosts);
		strbuf_addf(err, "' names %llu hosts, %zu of them in the allocation (",
			    (unsigned long long)want, kept);
		strbuf_add_clean(err, s->o->nodelist);
		strbuf_addch(err, ')');
		strbuf_release(&e);
		return -1;
	}
	strbuf_release(&e);
	return 0;
bad:
	strbuf_addstr(err, "--hosts: ");
	strbuf_add(err, e.buf, e.len);
	strbuf_release(&e);
	return -1;
}

int sup_allocation(struct sup *s, struct strbuf *err)
{
	struct strbuf e = STRBUF_INIT;
	if (s->W->nodes(s->W->ctx, s->o, s->o->nodelist, &s->alloc, &e) < 0) {
		strbuf_addf(err, "cannot read the allocation's nodes (%s): %s", s->o->nodelist,
			    e.buf);
		strbuf_release(&e);
		return -1;
	}
	strbuf_release(&e);
	for (size_t i = 0; i < s->alloc.nr; i++)
		if (!slurm_node_name_ok(s->alloc.items[i].name)) {
			strbuf_addstr(err, "the allocation holds a node name vigil will not use: '");
			strbuf_add_clean(err, s->alloc.items[i].name);
			strbuf_addch(err, '\'');
			return -1;
		}
	if (!s->alloc.nr) {
		strbuf_addstr(err, "the allocation has no nodes");
		return -1;
	}
	return s->o->hosts ? only_hosts(s, err) : 0;
}

static void final_report(struct sup *s)
{
	struct strbuf out = STRBUF_INIT;
	size_t excluded = sup_machine_count(&s->m, SUP_HOST_EXCLUDED);
	if (s->o->json) {
		struct json_writer w;
		json_writer_init(&w, &out, false);
		json_open_top(&w);
		json_key(&w, "outcome");
		json_string(&w, s->outcome ? s->outcome : "unknown");
		json_key(&w, "detail");
		json_string(&w, s->outcome_text ? s->outcome_text : "");
		json_key(&w, "exit_code");
		json_int(&w, s->exit_code);
		json_key(&w, "run_dir");
		json_string(&w, s->o->run_dir);
		json_key(&w, "attempts");
		json_int(&w, s->m.launched_any ? (long long)s->m.attempt + 1 : 0);
		json_key(&w, "restarts");
		json_int(&w, s->m.restarts);
		json_key(&w, "last_step");
		if (s->m.has_step)
			json_int(&w, (long long)s->m.last_step);
		else
			json_null(&w);
		json_key(&w, "excluded");
		json_open_array(&w);
		for (size_t i = 0; i < s->m.nr_hosts; i++) {
			if (s->m.hosts[i].role != SUP_HOST_EXCLUDED)
				continue;
			json_open_object(&w);
			json_key(&w, "host");
			json_string(&w, s->m.hosts[i].name);
			json_key(&w, "reason");
			json_string(&w, s->m.hosts[i].reason ? s->m.hosts[i].reason : "");
			json_close_object(&w);
		}
		json_close_array(&w);
		json_key(&w, "ran_on");
		json_open_array(&w);
		for (size_t i = 0; i < s->m.nr_hosts; i++)
			if (s->m.hosts[i].ran)
				json_string(&w, s->m.hosts[i].name);
		json_close_array(&w);
		json_close_object(&w);
		json_writer_finish(&w, NULL);
		strbuf_addch(&out, '\n');
	} else {
		strbuf_addf(&out, "vigil run: %s", s->outcome ? s->outcome : "unknown");
		if (s->outcome_text) {
			strbuf_addstr(&out, ": ");
			strbuf_add_clean(&out, s->outcome_text);
		}
		strbuf_addf(&out, " (%u attempt%s, %u restart%s, %zu host%s excluded; "
			    "vigil report %s)\n",
			    s->m.launched_any ? s->m.attempt + 1 : 0,
			    s->m.attempt ? "s" : "", s->m.restarts, s->m.restarts == 1 ? "" : "s",
			    excluded, excluded == 1 ? "" : "s", s->o->run_dir);
	}
	sup_print(s, 1, out.buf, out.len);
	strbuf_release(&out);
}

int supervise(const struct sup_options *o, struct strbuf *err)
{
	return supervise_in(o, NULL, err);
}

int supervise_in(const struct sup_options *o, const struct sup_world *world, struct strbuf *err)
{
	struct sup s;
	memset(&s, 0, sizeof(s));
	s.o = o;
	s.W = world ? world : sup_real_world();
	s.at.step_file_fd = -1;
	s.exit_code = 1;
	s.j.fd = -1;
	int ret = 2;
	bool signals_on = false;
	struct journal_replay rp;
	memset(&rp, 0, sizeof(rp));

	if (sup_make_dir(o->run_dir, err) < 0)
		return 2;
	struct strbuf jp = STRBUF_INIT;
	strbuf_addf(&jp, "%s/journal.jsonl", o->run_dir);
	if (journal_replay(jp.buf, &rp, err) < 0 || journal_open(&s.j, jp.buf, err) < 0) {
		strbuf_release(&jp);
		journal_replay_release(&rp);
		return 2;
	}
	strbuf_release(&jp);
	s.j.lazy = s.W->run_dir_private;
	if (sup_allocation(&s, err) < 0)
		goto out;
	unsigned nodes = o->nodes;
	if (!nodes) {
		if (s.alloc.nr <= o->spares) {
			strbuf_addf(err, "the allocation has %zu nodes: no room for %u spares and a "
				    "run", s.alloc.nr, o->spares);
			goto out;
		}
		nodes = (unsigned)s.alloc.nr - o->spares;
	}
	if (nodes > s.alloc.nr) {
		strbuf_addf(err, "--nodes %u is more than the allocation's %zu nodes", nodes,
			    s.alloc.nr);
		goto out;
	}
	if (o->python_stacks) {
		struct strbuf e = STRBUF_INIT;
		if (sup_pyhook_install(o->run_dir, s.at.pyhook_dir, sizeof(s.at.pyhook_dir), &e) < 0) {
			/* stacks are evidence, not the run: it goes on without the hook */
			sup_journal_event(&s, "pyhook_failed", NULL, e.buf);
			s.at.pyhook_dir[0] = '\0';
		}
		strbuf_release(&e);
	}

	/* signals: a cancel is an event like any other */
	if (s.W->signals && s.W->signals(s.W->ctx, true, err) < 0)
		goto out;
	signals_on = s.W->signals != NULL;

	ret = 1;
	sup_machine_init(&s.m, nodes, o->max_restarts);
	/* the machine's first actions, carried out by the pump like any event's */
	if (rp.found && rp.records) {
		sup_say(&s, "resuming the run in %s (attempt %u, %u restarts, %zu hosts excluded)",
		    o->run_dir, rp.attempt, rp.restarts, rp.nr_excluded);
		sup_machine_resume(&s.m, &rp, &s.ev.actions);
	} else {
		sup_machine_start(&s.m, &s.ev.actions);
	}
	sup_pump(&s);
	while (s.m.state != SUP_DONE && s.m.state != SUP_FAILED) {
		if (s.at.step_live && (s.m.state == SUP_LAUNCHING || s.m.state == SUP_RUNNING)) {
			run_loop(&s);
			continue;
		}
		if (signal_event(&s))
			continue;
		/* no step and no action pending: nothing can move the machine */
		struct strbuf t = STRBUF_INIT;
		strbuf_addf(&t, "stuck in state %s with no step running", sup_state_name(s.m.state));
		sup_journal_event(&s, "unexpected", NULL, t.buf);
		strbuf_release(&t);
		s.outcome = "failed";
		break;
	}
	ret = s.exit_code;
	final_report(&s);
out:
	if (s.at.step_live) {
		struct strbuf e = STRBUF_INIT;
		s.W->stop(s.W->ctx, &s, o->grace_ms, &e);
		strbuf_release(&e);
	}
	sup_close_attempt(&s);
	sup_watch_stop(&s);
	journal_close(&s.j);
	journal_replay_release(&rp);
	sup_machine_release(&s.m);
	slurm_nodes_release(&s.alloc);
	for (size_t i = 0; i < s.w.nr_wh; i++)
		free(s.w.wh[i].name);
	free(s.w.wh);
	strindex_release(&s.w.wh_index);
	for (size_t i = s.ev.q_head; i < s.ev.nr_q; i++)
		event_release(&s.ev.q[i]);
	free(s.ev.q);
	sup_actions_release(&s.ev.actions);
	strlist_release(&s.w.no_agent);
	free(s.outcome_text);
	if (signals_on)
		s.W->signals(s.W->ctx, false, NULL);
	return ret;
}
