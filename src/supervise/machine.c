/* machine.c: the supervisor's state × event table and its handlers (see machine.h). */
#include "machine_int.h"

typedef enum sup_state (*sup_handler)(struct sup_machine *m, const struct sup_event *e,
				      struct sup_actions *a);

static void active_hosts(const struct sup_machine *m, struct strlist *out)
{
	for (size_t i = 0; i < m->nr_hosts; i++)
		if (m->hosts[i].role == SUP_HOST_ACTIVE)
			strlist_add(out, m->hosts[i].name);
}

/* Out of the run for good: journaled and drained with a "vigil: " reason. */
static void exclude(struct sup_machine *m, struct sup_actions *a, const char *name,
		    const char *reason, const char *fallback)
{
	if (!name || !*name)
		return;
	struct sup_host *h = machine_add_host(m, name, SUP_HOST_EXCLUDED);
	if (h->reason)
		return; /* excluded already */
	struct strbuf r = STRBUF_INIT;
	if (!reason || !*reason)
		reason = fallback;
	if (!starts_with(reason, "vigil"))
		strbuf_addstr(&r, "vigil: ");
	strbuf_addstr(&r, reason);
	h->role = SUP_HOST_EXCLUDED;
	h->reason = strbuf_detach(&r, NULL);
	m->explained = true;
	struct sup_action *x = machine_record(m, a, JOURNAL_HOST_EXCLUDED, NULL);
	x->host = xstrdup(name);
	x->text = xstrdup(h->reason);
	x = machine_act(a, SUP_ACT_DRAIN_HOST);
	x->host = xstrdup(name);
	x->text = xstrdup(h->reason);
}

static void exclude_sick(struct sup_machine *m, const struct sup_event *e, struct sup_actions *a,
			 const char *fallback)
{
	for (size_t i = 0; i < e->nr_sick; i++)
		exclude(m, a, e->sick[i], e->sick_reasons ? e->sick_reasons[i] : NULL, fallback);
}

/* ---- transitions shared by several cells ---- */

static enum sup_state launch(struct sup_machine *m, struct sup_actions *a)
{
	if (m->launched_any)
		m->attempt++;
	m->launched_any = true;
	m->step_running = true;
	m->fault = SUP_FAULT_NONE;
	m->has_exit_code = false;
	m->explained = false;
	strlist_release(&m->suspects);
	strlist_release(&m->sdc_suspects);
	for (size_t i = 0; i < m->nr_hosts; i++)
		if (m->hosts[i].role == SUP_HOST_ACTIVE)
			m->hosts[i].was_active = m->hosts[i].ran = true;
	struct sup_action *x = machine_record(m, a, JOURNAL_ATTEMPT_STARTED, NULL);
	active_hosts(m, &x->hosts);
	x = machine_act(a, SUP_ACT_LAUNCH);
	x->attempt = m->attempt;
	active_hosts(m, &x->hosts);
	if (m->resume_before_next) {
		/* the checkpoints from the first differing digest on may hold the corruption */
		x->resume_before = true;
		x->step = m->sdc_step;
		m->resume_before_next = false;
	}
	return SUP_LAUNCHING;
}

/* Spares take the places of active hosts that left; the run needs N. One pass over the hosts
 * and one over the spares: O(hosts), however many left at once. */
static void refill(struct sup_machine *m, struct sup_actions *a)
{
	size_t active = sup_machine_count(m, SUP_HOST_ACTIVE), j = 0;
	for (size_t i = 0; i < m->nr_hosts; i++) {
		struct sup_host *gone = &m->hosts[i];
		if (gone->role != SUP_HOST_EXCLUDED || !gone->was_active)
			continue;
		gone->was_active = false; /* replaced once */
		if (active >= m->nodes)
			continue;
		while (j < m->nr_hosts && m->hosts[j].role != SUP_HOST_SPARE)
			j++;
		if (j == m->nr_hosts)
			continue; /* no spare left */
		m->hosts[j].role = SUP_HOST_ACTIVE;
		active++;
		struct sup_action *x = machine_act(a, SUP_ACT_REPLACE_HOST);
		x->host = xstrdup(gone->name);
		x->other = xstrdup(m->hosts[j].name);
	}
}

static enum sup_state relaunch_or_fail(struct sup_machine *m, struct sup_actions *a)
{
	struct strbuf why = STRBUF_INIT;
	enum sup_state to;
	if (m->budget_spent || m->restarts >= m->max_restarts) {
		strbuf_addf(&why, "the restart budget is spent (%u restarts)", m->restarts);
		to = machine_finish(m, a, SUP_FAILED, "restart_budget_spent", why.buf);
		goto out;
	}
	refill(m, a);
	size_t have = sup_machine_count(m, SUP_HOST_ACTIVE);
	if (have < m->nodes) {
		strbuf_addf(&why, "fewer than %u healthy hosts remain (%zu)", m->nodes, have);
		to = machine_finish(m, a, SUP_FAILED, "too_few_hosts", why.buf);
		goto out;
	}
	m->restarts++;
	machine_act(a, SUP_ACT_WAIT);
	to = SUP_RELAUNCHING;
out:
	strbuf_release(&why);
	return to;
}

static enum sup_state stop_for(struct sup_machine *m, struct sup_actions *a, enum sup_fault f,
			       const char *host, const char *text)
{
	m->fault = f;
	machine_record_event(m, a, sup_fault_name(f), host, text);
	machine_act(a, SUP_ACT_STOP_STEP);
	return SUP_STOPPING;
}

/* ---- cells ---- */

static enum sup_state ignore(struct sup_machine *m, const struct sup_event *e,
			     struct sup_actions *a)
{
	return m->state;
}

/* The run is over: what is left in the queue moves nothing and is not journaled. Only a
 * signal can still come after the end (during the report); nothing else is left behind, as
 * every action posts its event at the end of the queue. */
static enum sup_state over(struct sup_machine *m, const struct sup_event *e,
			   struct sup_actions *a)
{
	return m->state;
}

static enum sup_state unexpected(struct sup_machine *m, const struct sup_event *e,
				 struct sup_actions *a)
{
	struct strbuf t = STRBUF_INIT;
	strbuf_addf(&t, "%s while %s", sup_event_name(e->kind), sup_state_name(m->state));
	machine_record_event(m, a, "unexpected", e->host, t.buf);
	strbuf_release(&t);
	return m->state;
}

static enum sup_state preflight_ok(struct sup_machine *m, const struct sup_event *e,
				   struct sup_actions *a)
{
	exclude_sick(m, e, a, "failed the preflight check");
	size_t active = sup_machine_count(m, SUP_HOST_ACTIVE);
	for (size_t i = 0; i < e->nr_hosts; i++) {
		struct sup_host *h = machine_find_host(m, e->hosts[i]);
		if (h && h->role == SUP_HOST_EXCLUDED)
			continue; /* excluded by an earlier attempt (journal) or just now */
		if (!h)
			h = machine_add_host(m, e->hosts[i], SUP_HOST_SPARE);
		if (h->role == SUP_HOST_ACTIVE)
			active--; /* counted already: its place is decided again here */
		h->role = active < m->nodes ? SUP_HOST_ACTIVE : SUP_HOST_SPARE;
		active += h->role == SUP_HOST_ACTIVE;
	}
	if (sup_machine_count(m, SUP_HOST_ACTIVE) < m->nodes) {
		struct strbuf why = STRBUF_INIT;
		strbuf_addf(&why, "fewer than %u healthy hosts (%zu)", m->nodes,
			    sup_machine_count(m, SUP_HOST_ACTIVE));
		enum sup_state to = machine_finish(m, a, SUP_FAILED, "too_few_hosts", why.buf);
		strbuf_release(&why);
		return to;
	}
	return launch(m, a);
}

static enum sup_state preflight_short(struct sup_machine *m, const struct sup_event *e,
				      struct sup_actions *a)
{
	struct strbuf why = STRBUF_INIT;
	exclude_sick(m, e, a, "failed the preflight check");
	strbuf_addf(&why, "fewer than %u healthy hosts", m->nodes);
	enum sup_state to = machine_finish(m, a, SUP_FAILED, "too_few_hosts", why.buf);
	strbuf_release(&why);
	return to;
}

static enum sup_state cancel_idle(struct sup_machine *m, const struct sup_event *e,
				  struct sup_actions *a)
{
	m->cancelled = true;
	return machine_finish(m, a, SUP_FAILED, "cancelled", e->text ? e->text : "cancelled");
}

static enum sup_state launched(struct sup_machine *m, const struct sup_event *e,
			       struct sup_actions *a)
{
	if (e->text)
		machine_record_event(m, a, "launched", NULL, e->text);
	return SUP_RUNNING;
}

static enum sup_state step(struct sup_machine *m, const struct sup_event *e,
			   struct sup_actions *a)
{
	m->has_step = true;
	m->last_step = e->step;
	struct sup_action *x = machine_record(m, a, JOURNAL_STEP, NULL);
	x->step = e->step;
	return SUP_RUNNING;
}

static enum sup_state task_exit(struct sup_machine *m, const struct sup_event *e,
				struct sup_actions *a)
{
	if (e->code == 0) {
		m->step_running = false;
		struct sup_action *x = machine_record(m, a, JOURNAL_ATTEMPT_ENDED, "done");
		x->has_code = true;
		return machine_finish(m, a, SUP_DONE, "done", "every task ended with status 0");
	}
	struct strbuf t = STRBUF_INIT;
	strbuf_addf(&t, "a task exited with status %d", e->code);
	m->has_exit_code = true;
	m->exit_code = e->code;
	enum sup_state to = stop_for(m, a, SUP_FAULT_CRASH, e->host, t.buf);
	strbuf_release(&t);
	return to;
}

static enum sup_state node_lost(struct sup_machine *m, const struct sup_event *e,
				struct sup_actions *a)
{
	enum sup_state to = stop_for(m, a, SUP_FAULT_LOST, e->host, e->text);
	exclude(m, a, e->host, e->text, "node lost during the run");
	return to;
}

static enum sup_state host_sick(struct sup_machine *m, const struct sup_event *e,
				struct sup_actions *a)
{
	enum sup_state to = stop_for(m, a, SUP_FAULT_SICK, e->host, e->text);
	exclude(m, a, e->host, e->text, "turned sick during the run");
	return to;
}

static enum sup_state evidence_for(struct sup_machine *m, const struct sup_event *e,
				   struct sup_actions *a, enum sup_fault f)
{
	m->fault = f;
	machine_record_event(m, a, sup_fault_name(f), e->host, e->text);
	struct sup_action *x = machine_act(a, SUP_ACT_COLLECT_STACKS);
	active_hosts(m, &x->hosts);
	return SUP_COLLECTING_EVIDENCE;
}

static enum sup_state hang(struct sup_machine *m, const struct sup_event *e,
			   struct sup_actions *a)
{
	return evidence_for(m, e, a, e->startup && !m->has_step ? SUP_FAULT_STARTUP
								: SUP_FAULT_HANG);
}

/* Steps after an unexplained slowdown during which another one is noted, not investigated:
 * the stacks said nothing the first time, and lines read in one burst after the stacks would
 * start the count again at once. */
#define SLOW_QUIET_STEPS 100

static enum sup_state slow(struct sup_machine *m, const struct sup_event *e,
			   struct sup_actions *a)
{
	if (m->slow_quiet && m->has_step && m->last_step < m->slow_quiet_until) {
		machine_record_event(m, a, "slow_again", NULL, e->text);
		return m->state;
	}
	m->slow_quiet = false;
	return evidence_for(m, e, a, SUP_FAULT_SLOW);
}

static enum sup_state slow_step(struct sup_machine *m, const struct sup_event *e,
				struct sup_actions *a)
{
	machine_record_event(m, a, "slow_step", e->host, e->text);
	return m->state;
}

static enum sup_state cancel_running(struct sup_machine *m, const struct sup_event *e,
				     struct sup_actions *a)
{
	m->cancelled = true;
	free(m->cancel_text);
	m->cancel_text = e->text ? xstrdup(e->text) : NULL;
	return stop_for(m, a, SUP_FAULT_CANCEL, NULL, e->text);
}

/* The replicas' digests differed: the hosts to test, the step to resume before. */
static void note_sdc(struct sup_machine *m, const struct sup_event *e)
{
	for (size_t i = 0; i < e->nr_hosts; i++) {
		const struct sup_host *h = machine_find_host(m, e->hosts[i]);
		if ((!h || h->role != SUP_HOST_EXCLUDED) &&
		    !strlist_has(&m->sdc_suspects, e->hosts[i]))
			strlist_add(&m->sdc_suspects, e->hosts[i]);
	}
	if (!m->has_sdc || e->step < m->sdc_step)
		m->sdc_step = e->step;
	m->has_sdc = m->resume_before_next = true;
}

/* The sdc event, with the step a resumed supervisor must still resume before. */
static void record_sdc(struct sup_machine *m, const struct sup_event *e, struct sup_actions *a)
{
	machine_record_event(m, a, sup_fault_name(SUP_FAULT_SDC),
			     e->nr_hosts == 1 ? e->hosts[0] : NULL, e->text);
	a->v[a->nr - 1].has_step = true;
	a->v[a->nr - 1].step = e->step;
}

static enum sup_state diverged(struct sup_machine *m, const struct sup_event *e,
			       struct sup_actions *a)
{
	note_sdc(m, e);
	m->fault = SUP_FAULT_SDC;
	record_sdc(m, e, a);
	machine_act(a, SUP_ACT_STOP_STEP);
	return SUP_STOPPING;
}

static enum sup_state diverged_meanwhile(struct sup_machine *m, const struct sup_event *e,
					 struct sup_actions *a)
{
	/* already on the way to a stop for something else: tested before the relaunch too */
	note_sdc(m, e);
	record_sdc(m, e, a);
	return m->state;
}

static enum sup_state budget(struct sup_machine *m, const struct sup_event *e,
			     struct sup_actions *a)
{
	/* the attempt that runs may finish; no new one will start */
	m->budget_spent = true;
	machine_record_event(m, a, "restart_budget_spent", NULL, e->text);
	return m->state;
}

static enum sup_state budget_now(struct sup_machine *m, const struct sup_event *e,
				 struct sup_actions *a)
{
	m->budget_spent = true;
	return machine_finish(m, a, SUP_FAILED, "restart_budget_spent",
		      e->text ? e->text : "the restart budget is spent");
}

static enum sup_state evidence_done(struct sup_machine *m, const struct sup_event *e,
				    struct sup_actions *a)
{
	/* named beyond doubt by the evidence (a rank frozen, stopped): out now; named only by
	 * stacks unlike the others: confirmed by a smoke test alone first */
	machine_record_event(m, a, "evidence", e->nr_sick == 1 ? e->sick[0] : NULL, e->text);
	if (m->fault == SUP_FAULT_SLOW && !e->nr_sick && !e->nr_hosts) {
		/* a slowdown no host explains (the stacks agree): a restart would lose the steps
		 * since the checkpoint and come back just as slow (the network, the storage, a
		 * neighbour's job); the run goes on, and says so */
		machine_record_event(m, a, "slow_unexplained", NULL,
				     "no host named by the evidence: the run goes on");
		m->fault = SUP_FAULT_NONE;
		m->slow_quiet = true;
		m->slow_quiet_until = (m->has_step ? m->last_step : 0) + SLOW_QUIET_STEPS;
		return SUP_RUNNING;
	}
	exclude_sick(m, e, a, "named by the evidence of a hang");
	for (size_t i = 0; i < e->nr_hosts; i++) {
		const struct sup_host *h = machine_find_host(m, e->hosts[i]);
		if ((!h || h->role != SUP_HOST_EXCLUDED) && !strlist_has(&m->suspects, e->hosts[i]))
			strlist_add(&m->suspects, e->hosts[i]);
	}
	machine_act(a, SUP_ACT_STOP_STEP);
	return SUP_STOPPING;
}

static enum sup_state step_in_evidence(struct sup_machine *m, const struct sup_event *e,
				       struct sup_actions *a)
{
	m->has_step = true;
	m->last_step = e->step;
	if (m->fault != SUP_FAULT_HANG && m->fault != SUP_FAULT_STARTUP)
		return m->state; /* a slow run still steps: it is still slow */
	/* it moved again: the hang was a long step (a checkpoint), not a fault */
	machine_record_event(m, a, "hang_cleared", NULL, NULL);
	m->fault = SUP_FAULT_NONE;
	return step(m, e, a);
}

static enum sup_state exit_in_evidence(struct sup_machine *m, const struct sup_event *e,
				       struct sup_actions *a)
{
	/* a hung rank's neighbours often die of the watchdog: the fault stays what it was */
	struct strbuf t = STRBUF_INIT;
	strbuf_addf(&t, "a task exited with status %d while stacks were collected", e->code);
	machine_record_event(m, a, "task_exit", e->host, t.buf);
	strbuf_release(&t);
	m->has_exit_code = true;
	m->exit_code = e->code;
	machine_act(a, SUP_ACT_STOP_STEP);
	return SUP_STOPPING;
}

static enum sup_state lost_or_sick_then_stop(struct sup_machine *m, const struct sup_event *e,
					     struct sup_actions *a)
{
	bool lost = e->kind == SUP_EV_NODE_LOST;
	machine_record_event(m, a, lost ? "lost" : "sick", e->host, e->text);
	exclude(m, a, e->host, e->text,
		lost ? "node lost during the run" : "turned sick during the run");
	machine_act(a, SUP_ACT_STOP_STEP);
	return SUP_STOPPING;
}

static enum sup_state lost_or_sick_meanwhile(struct sup_machine *m, const struct sup_event *e,
					     struct sup_actions *a)
{
	bool lost = e->kind == SUP_EV_NODE_LOST;
	machine_record_event(m, a, lost ? "lost" : "sick", e->host, e->text);
	exclude(m, a, e->host, e->text,
		lost ? "node lost during the run" : "turned sick during the run");
	if (m->state == SUP_RELAUNCHING && sup_machine_count(m, SUP_HOST_ACTIVE) < m->nodes) {
		refill(m, a);
		if (sup_machine_count(m, SUP_HOST_ACTIVE) < m->nodes) {
			struct strbuf why = STRBUF_INIT;
			strbuf_addf(&why, "fewer than %u healthy hosts remain (%zu)", m->nodes,
				    sup_machine_count(m, SUP_HOST_ACTIVE));
			enum sup_state to = machine_finish(m, a, SUP_FAILED, "too_few_hosts", why.buf);
			strbuf_release(&why);
			return to;
		}
	}
	return m->state;
}

static enum sup_state cancel_stopping(struct sup_machine *m, const struct sup_event *e,
				      struct sup_actions *a)
{
	m->cancelled = true;
	free(m->cancel_text);
	m->cancel_text = e->text ? xstrdup(e->text) : NULL;
	return m->state;
}

static enum sup_state stopped(struct sup_machine *m, const struct sup_event *e,
			      struct sup_actions *a)
{
	m->step_running = false;
	struct sup_action *x = machine_record(m, a, JOURNAL_ATTEMPT_ENDED, sup_fault_name(m->fault));
	x->has_code = m->has_exit_code;
	x->code = m->exit_code;
	if (m->cancelled) /* with what cancelled it (a signal, said by its name) */
		return machine_finish(m, a, SUP_FAILED, "cancelled",
			      m->cancel_text ? m->cancel_text : e->text ? e->text : "cancelled");
	if (m->refused_text)
		return machine_finish(m, a, SUP_FAILED, "launch_refused", m->refused_text);
	if (m->resumed && m->fault == SUP_FAULT_RESTART) {
		/* the step of the supervisor before is gone: start over from the preflight */
		m->fault = SUP_FAULT_NONE;
		machine_act(a, SUP_ACT_PREFLIGHT);
		return SUP_PREFLIGHT;
	}
	x = machine_act(a, SUP_ACT_RUN_CHECKS);
	active_hosts(m, &x->hosts);
	return SUP_CHECKING;
}

static enum sup_state check_done(struct sup_machine *m, const struct sup_event *e,
				 struct sup_actions *a)
{
	exclude_sick(m, e, a, "failed a check after the attempt");
	/* a suspect of the digests that a check excluded needs no other test */
	struct strlist sdc = STRLIST_INIT;
	for (size_t i = 0; i < m->sdc_suspects.nr; i++) {
		const struct sup_host *h = machine_find_host(m, m->sdc_suspects.items[i]);
		if (!h || h->role != SUP_HOST_EXCLUDED)
			strlist_add(&sdc, m->sdc_suspects.items[i]);
	}
	bool group = false;
	if (m->explained) {
		m->unexplained = 0;
	} else {
		m->unexplained++;
		group = m->suspects.nr || m->unexplained >= m->group_test_after;
	}
	if (!m->budget_spent && m->restarts < m->max_restarts && (group || sdc.nr)) {
		struct sup_action *x = machine_act(a, SUP_ACT_GROUP_TEST);
		x->confirm = !group || m->suspects.nr > 0;
		if (group && m->suspects.nr)
			for (size_t i = 0; i < m->suspects.nr; i++)
				strlist_add(&x->hosts, m->suspects.items[i]);
		else if (group)
			active_hosts(m, &x->hosts);
		x->sdc_hosts = sdc;
		return SUP_GROUP_TESTING;
	}
	strlist_release(&sdc);
	return relaunch_or_fail(m, a);
}

static enum sup_state smoke_result(struct sup_machine *m, const struct sup_event *e,
				   struct sup_actions *a)
{
	/* code 1: the smoke test fails on most hosts alone: the command or its environment is at
	 * fault, not a host; relaunching would only fail again */
	if (e->code == 1)
		return machine_finish(m, a, SUP_FAILED, "fails_everywhere",
			      e->text ? e->text : "the smoke test fails on most hosts alone");
	exclude_sick(m, e, a, "failed the smoke test alone");
	if (!e->nr_sick)
		machine_record_event(m, a, "group_test", NULL, "no host failed the smoke test alone");
	else
		m->unexplained = 0;
	return relaunch_or_fail(m, a);
}

static enum sup_state ready(struct sup_machine *m, const struct sup_event *e,
			    struct sup_actions *a)
{
	return launch(m, a);
}

/* ---- the table ---- */

/* The run is over (done, failed): only a signal can still come, during the report. */
#define OVER_ROW { \
		[SUP_EV_PREFLIGHT_OK] = over, \
		[SUP_EV_PREFLIGHT_SHORT] = over, \
		[SUP_EV_LAUNCHED] = over, \
		[SUP_EV_STEP] = over, \
		[SUP_EV_TASK_EXIT] = over, \
		[SUP_EV_NODE_LOST] = over, \
		[SUP_EV_HANG] = over, \
		[SUP_EV_SLOW_STEP] = over, \
		[SUP_EV_SLOW] = over, \
		[SUP_EV_HOST_SICK] = over, \
		[SUP_EV_EVIDENCE_DONE] = over, \
		[SUP_EV_STOPPED] = over, \
		[SUP_EV_CHECK_DONE] = over, \
		[SUP_EV_READY] = over, \
		[SUP_EV_SMOKE_RESULT] = over, \
		[SUP_EV_DIVERGED] = over, \
		[SUP_EV_RESTART_BUDGET_SPENT] = ignore, \
		[SUP_EV_CANCEL] = ignore, \
		[SUP_EV_LAUNCH_REFUSED] = over, \
	}

/* Every row names every event: a cell left out would be NULL and fail the totality test. */
static const sup_handler table[SUP_STATE_NR][SUP_EVENT_NR] = {
	[SUP_PREFLIGHT] = {
		[SUP_EV_PREFLIGHT_OK] = preflight_ok,
		[SUP_EV_PREFLIGHT_SHORT] = preflight_short,
		[SUP_EV_LAUNCHED] = unexpected,
		[SUP_EV_STEP] = unexpected,
		[SUP_EV_TASK_EXIT] = unexpected,
		[SUP_EV_NODE_LOST] = unexpected,
		[SUP_EV_HANG] = unexpected,
		[SUP_EV_SLOW_STEP] = unexpected,
		[SUP_EV_SLOW] = unexpected,
		[SUP_EV_HOST_SICK] = unexpected,
		[SUP_EV_EVIDENCE_DONE] = unexpected,
		[SUP_EV_STOPPED] = unexpected,
		[SUP_EV_CHECK_DONE] = unexpected,
		[SUP_EV_READY] = unexpected,
		[SUP_EV_SMOKE_RESULT] = unexpected,
		[SUP_EV_DIVERGED] = unexpected,
		[SUP_EV_RESTART_BUDGET_SPENT] = budget,
		[SUP_EV_CANCEL] = cancel_idle,
		[SUP_EV_LAUNCH_REFUSED] = unexpected,
	},
	[SUP_LAUNCHING] = {
		[SUP_EV_PREFLIGHT_OK] = unexpected,
		[SUP_EV_PREFLIGHT_SHORT] = unexpected,
		[SUP_EV_LAUNCHED] = launched,
		[SUP_EV_STEP] = step,
		[SUP_EV_TASK_EXIT] = task_exit,
		[SUP_EV_NODE_LOST] = node_lost,
		[SUP_EV_HANG] = hang,
		[SUP_EV_SLOW_STEP] = unexpected,
		[SUP_EV_SLOW] = unexpected,
		[SUP_EV_HOST_SICK] = host_sick,
		[SUP_EV_EVIDENCE_DONE] = unexpected,
		[SUP_EV_STOPPED] = unexpected,
		[SUP_EV_CHECK_DONE] = unexpected,
		[SUP_EV_READY] = unexpected,
		[SUP_EV_SMOKE_RESULT] = unexpected,
		[SUP_EV_DIVERGED] = diverged,
		[SUP_EV_RESTART_BUDGET_SPENT] = budget,
		[SUP_EV_CANCEL] = cancel_running,
		[SUP_EV_LAUNCH_REFUSED] = machine_launch_refused,
	},
	[SUP_RUNNING] = {
		[SUP_EV_PREFLIGHT_OK] = unexpected,
		[SUP_EV_PREFLIGHT_SHORT] = unexpected,
		[SUP_EV_LAUNCHED] = ignore,
		[SUP_EV_STEP] = step,
		[SUP_EV_TASK_EXIT] = task_exit,
		[SUP_EV_NODE_LOST] = node_lost,
		[SUP_EV_HANG] = hang,
		[SUP_EV_SLOW_STEP] = slow_step,
		[SUP_EV_SLOW] = slow,
		[SUP_EV_HOST_SICK] = host_sick,
		[SUP_EV_EVIDENCE_DONE] = unexpected,
		[SUP_EV_STOPPED] = unexpected,
		[SUP_EV_CHECK_DONE] = unexpected,
		[SUP_EV_READY] = unexpected,
		[SUP_EV_SMOKE_RESULT] = unexpected,
		[SUP_EV_DIVERGED] = diverged,
		[SUP_EV_RESTART_BUDGET_SPENT] = budget,
		[SUP_EV_CANCEL] = cancel_running,
		[SUP_EV_LAUNCH_REFUSED] = unexpected,
	},
	[SUP_COLLECTING_EVIDENCE] = {
		[SUP_EV_PREFLIGHT_OK] = unexpected,
		[SUP_EV_PREFLIGHT_SHORT] = unexpected,
		[SUP_EV_LAUNCHED] = unexpected,
		[SUP_EV_STEP] = step_in_evidence,
		[SUP_EV_TASK_EXIT] = exit_in_evidence,
		[SUP_EV_NODE_LOST] = lost_or_sick_then_stop,
		[SUP_EV_HANG] = unexpected,
		[SUP_EV_SLOW_STEP] = unexpected,
		[SUP_EV_SLOW] = unexpected,
		[SUP_EV_HOST_SICK] = lost_or_sick_then_stop,
		[SUP_EV_EVIDENCE_DONE] = evidence_done,
		[SUP_EV_STOPPED] = unexpected,
		[SUP_EV_CHECK_DONE] = unexpected,
		[SUP_EV_READY] = unexpected,
		[SUP_EV_SMOKE_RESULT] = unexpected,
		[SUP_EV_DIVERGED] = diverged_meanwhile,
		[SUP_EV_RESTART_BUDGET_SPENT] = budget,
		[SUP_EV_CANCEL] = cancel_running,
		[SUP_EV_LAUNCH_REFUSED] = unexpected,
	},
	[SUP_STOPPING] = {
		[SUP_EV_PREFLIGHT_OK] = unexpected,
		[SUP_EV_PREFLIGHT_SHORT] = unexpected,
		[SUP_EV_LAUNCHED] = unexpected,
		[SUP_EV_STEP] = ignore,
		[SUP_EV_TASK_EXIT] = ignore, /* the stop's own doing */
		[SUP_EV_NODE_LOST] = lost_or_sick_meanwhile,
		[SUP_EV_HANG] = unexpected,
		[SUP_EV_SLOW_STEP] = ignore,
		[SUP_EV_SLOW] = ignore,
		[SUP_EV_HOST_SICK] = lost_or_sick_meanwhile,
		[SUP_EV_EVIDENCE_DONE] = ignore,
		[SUP_EV_STOPPED] = stopped,
		[SUP_EV_CHECK_DONE] = unexpected,
		[SUP_EV_READY] = unexpected,
		[SUP_EV_SMOKE_RESULT] = unexpected,
		[SUP_EV_DIVERGED] = diverged_meanwhile,
		[SUP_EV_RESTART_BUDGET_SPENT] = budget,
		[SUP_EV_CANCEL] = cancel_stopping,
		[SUP_EV_LAUNCH_REFUSED] = machine_refused_meanwhile,
	},
	[SUP_CHECKING] = {
		[SUP_EV_PREFLIGHT_OK] = unexpected,
		[SUP_EV_PREFLIGHT_SHORT] = unexpected,
		[SUP_EV_LAUNCHED] = unexpected,
		[SUP_EV_STEP] = unexpected,
		[SUP_EV_TASK_EXIT] = unexpected,
		[SUP_EV_NODE_LOST] = unexpected,
		[SUP_EV_HANG] = unexpected,
		[SUP_EV_SLOW_STEP] = unexpected,
		[SUP_EV_SLOW] = unexpected,
		[SUP_EV_HOST_SICK] = unexpected,
		[SUP_EV_EVIDENCE_DONE] = unexpected,
		[SUP_EV_STOPPED] = unexpected,
		[SUP_EV_CHECK_DONE] = check_done,
		[SUP_EV_READY] = unexpected,
		[SUP_EV_SMOKE_RESULT] = unexpected,
		[SUP_EV_DIVERGED] = unexpected,
		[SUP_EV_RESTART_BUDGET_SPENT] = budget,
		[SUP_EV_CANCEL] = cancel_idle,
		[SUP_EV_LAUNCH_REFUSED] = unexpected,
	},
	[SUP_RELAUNCHING] = {
		[SUP_EV_PREFLIGHT_OK] = unexpected,
		[SUP_EV_PREFLIGHT_SHORT] = unexpected,
		[SUP_EV_LAUNCHED] = unexpected,
		[SUP_EV_STEP] = unexpected,
		[SUP_EV_TASK_EXIT] = unexpected,
		[SUP_EV_NODE_LOST] = unexpected,
		[SUP_EV_HANG] = unexpected,
		[SUP_EV_SLOW_STEP] = unexpected,
		[SUP_EV_SLOW] = unexpected,
		[SUP_EV_HOST_SICK] = unexpected,
		[SUP_EV_EVIDENCE_DONE] = unexpected,
		[SUP_EV_STOPPED] = unexpected,
		[SUP_EV_CHECK_DONE] = unexpected,
		[SUP_EV_READY] = ready,
		[SUP_EV_SMOKE_RESULT] = unexpected,
		[SUP_EV_DIVERGED] = unexpected,
		[SUP_EV_RESTART_BUDGET_SPENT] = budget_now,
		[SUP_EV_CANCEL] = cancel_idle,
		[SUP_EV_LAUNCH_REFUSED] = unexpected,
	},
	[SUP_GROUP_TESTING] = {
		[SUP_EV_PREFLIGHT_OK] = unexpected,
		[SUP_EV_PREFLIGHT_SHORT] = unexpected,
		[SUP_EV_LAUNCHED] = unexpected,
		[SUP_EV_STEP] = unexpected,
		[SUP_EV_TASK_EXIT] = unexpected,
		[SUP_EV_NODE_LOST] = unexpected,
		[SUP_EV_HANG] = unexpected,
		[SUP_EV_SLOW_STEP] = unexpected,
		[SUP_EV_SLOW] = unexpected,
		[SUP_EV_HOST_SICK] = unexpected,
		[SUP_EV_EVIDENCE_DONE] = unexpected,
		[SUP_EV_STOPPED] = unexpected,
		[SUP_EV_CHECK_DONE] = unexpected,
		[SUP_EV_READY] = unexpected,
		[SUP_EV_SMOKE_RESULT] = smoke_result,
		[SUP_EV_DIVERGED] = unexpected,
		[SUP_EV_RESTART_BUDGET_SPENT] = budget,
		[SUP_EV_CANCEL] = cancel_idle,
		[SUP_EV_LAUNCH_REFUSED] = machine_refused_smoke,
	},
	[SUP_DONE] = OVER_ROW,
	[SUP_FAILED] = OVER_ROW,
};

bool sup_machine_cell_defined(enum sup_state s, enum sup_event_kind e)
{
	return s < SUP_STATE_NR && e < SUP_EVENT_NR && table[s][e];
}

bool sup_machine_cell_reachable(enum sup_state s, enum sup_event_kind e)
{
	return sup_machine_cell_defined(s, e) && table[s][e] != unexpected && table[s][e] != over;
}

bool sup_machine_cell_is_noop(enum sup_state s, enum sup_event_kind e)
{
	return sup_machine_cell_defined(s, e) && (table[s][e] == ignore || table[s][e] == unexpected ||
						     table[s][e] == over);
}

enum sup_state sup_machine_handle(struct sup_machine *m, const struct sup_event *e,
				  struct sup_actions *a)
{
	sup_handler h = sup_machine_cell_defined(m->state, e->kind) ? table[m->state][e->kind]
								    : unexpected;
	m->state = h(m, e, a);
	return m->state;
}
