/* machine_life.c: the machine's start, its resume from the journal, and the names of its
 * states, events, actions and faults (see machine.h). */
#include "machine_int.h"

#include <string.h>

/* ---- life cycle ---- */

void sup_machine_init(struct sup_machine *m, unsigned nodes, unsigned max_restarts)
{
	memset(m, 0, sizeof(*m));
	m->state = SUP_PREFLIGHT;
	m->nodes = nodes;
	m->max_restarts = max_restarts;
	m->group_test_after = 2;
}

void sup_machine_release(struct sup_machine *m)
{
	for (size_t i = 0; i < m->nr_hosts; i++) {
		free(m->hosts[i].name);
		free(m->hosts[i].reason);
	}
	free(m->hosts);
	strindex_release(&m->host_index);
	strlist_release(&m->suspects);
	free(m->cancel_text);
	memset(m, 0, sizeof(*m));
}

void sup_machine_start(struct sup_machine *m, struct sup_actions *a)
{
	machine_record(m, a, JOURNAL_RUN_STARTED, NULL);
	machine_act(a, SUP_ACT_PREFLIGHT);
}

void sup_machine_resume(struct sup_machine *m, const struct journal_replay *r,
			struct sup_actions *a)
{
	if (!r->found || r->records == 0) {
		sup_machine_start(m, a);
		return;
	}
	m->resumed = true;
	m->attempt = r->attempt;
	m->launched_any = r->started_any;
	m->restarts = r->restarts;
	m->has_step = r->has_step;
	m->last_step = r->last_step;
	for (size_t i = 0; i < r->nr_excluded; i++) {
		struct sup_host *h = machine_add_host(m, r->excluded[i].host, SUP_HOST_EXCLUDED);
		h->role = SUP_HOST_EXCLUDED;
		free(h->reason);
		h->reason = xstrdup(r->excluded[i].reason ? r->excluded[i].reason : "vigil: excluded");
	}
	/* a run cancelled by a signal (a requeue, a preemption, the time limit, a person's
	 * Ctrl-C) goes on when its command is run again; a run that ended on its own does not */
	bool cancelled = r->finished && r->outcome && !strcmp(r->outcome, "cancelled");
	if (r->finished && !cancelled) {
		m->state = !strcmp(r->outcome ? r->outcome : "", "done") ? SUP_DONE : SUP_FAILED;
		struct sup_action *x = machine_act(a, SUP_ACT_REPORT);
		x->name = m->state == SUP_DONE ? "done" : "failed";
		x->text = xstrdup("the run had already ended");
		return;
	}
	struct strbuf t = STRBUF_INIT;
	strbuf_addf(&t, "resumed from the journal after attempt %u", r->attempt);
	machine_record_event(m, a, sup_fault_name(SUP_FAULT_RESTART), NULL, t.buf);
	strbuf_release(&t);
	if (r->attempt_open) {
		/* its step may still run: stop it before anything is launched again */
		m->fault = SUP_FAULT_RESTART;
		m->step_running = true;
		struct sup_action *x = machine_act(a, SUP_ACT_STOP_STEP);
		x->attempt = r->attempt;
		x->text = machine_dup_or_null(r->step_id);
		m->state = SUP_STOPPING;
		return;
	}
	m->state = SUP_PREFLIGHT;
	machine_act(a, SUP_ACT_PREFLIGHT);
}

/* ---- names ---- */

const char *sup_state_name(enum sup_state s)
{
	static const char *const n[] = { "preflight", "launching", "running", "collecting_evidence",
					 "stopping", "checking", "relaunching", "group_testing",
					 "done", "failed" };
	return s < ARRAY_SIZE(n) ? n[s] : "?";
}

const char *sup_event_name(enum sup_event_kind e)
{
	static const char *const n[] = { "preflight_ok", "preflight_short", "launched", "step",
					 "task_exit", "node_lost", "hang", "slow_step", "slow",
					 "host_sick", "evidence_done", "stopped", "check_done",
					 "ready", "smoke_result", "restart_budget_spent", "cancel" };
	return e < ARRAY_SIZE(n) ? n[e] : "?";
}

const char *sup_action_name(enum sup_action_kind k)
{
	static const char *const n[] = { "preflight", "launch", "stop_step", "collect_stacks",
					 "run_checks", "drain_host", "replace_host", "group_test",
					 "wait", "journal", "report" };
	return k < ARRAY_SIZE(n) ? n[k] : "?";
}

const char *sup_fault_name(enum sup_fault f)
{
	static const char *const n[] = { "none", "crash", "hang", "startup_timeout", "slow",
					 "sick", "lost", "cancel", "supervisor_restart" };
	return f < ARRAY_SIZE(n) ? n[f] : "?";
}
