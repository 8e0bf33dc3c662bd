/* machine_life.c: the machine's start, its resume from the journal, its actions and hosts
 * (what the cells in machine.c build on), and the names of its states, events, actions and
 * faults (see machine.h). */
#include "machine_int.h"

#include <string.h>

/* ---- actions ---- */

struct sup_action *machine_act(struct sup_actions *a, enum sup_action_kind kind)
{
	ALLOC_GROW(a->v, a->nr + 1, a->alloc);
	struct sup_action *x = &a->v[a->nr++];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	return x;
}

char *machine_dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

struct sup_action *machine_record(struct sup_machine *m, struct sup_actions *a,
				 enum journal_kind kind, const char *name)
{
	struct sup_action *x = machine_act(a, SUP_ACT_JOURNAL);
	x->record = kind;
	x->name = name;
	x->attempt = m->attempt;
	return x;
}

void machine_record_event(struct sup_machine *m, struct sup_actions *a, const char *name,
			 const char *host, const char *text)
{
	struct sup_action *x = machine_record(m, a, JOURNAL_EVENT, name);
	x->host = machine_dup_or_null(host);
	x->text = machine_dup_or_null(text);
}

void sup_actions_release(struct sup_actions *a)
{
	for (size_t i = 0; i < a->nr; i++) {
		free(a->v[i].host);
		free(a->v[i].other);
		free(a->v[i].text);
		strlist_release(&a->v[i].hosts);
		strlist_release(&a->v[i].sdc_hosts);
	}
	free(a->v);
	memset(a, 0, sizeof(*a));
}

const struct sup_action *sup_actions_find(const struct sup_actions *a, enum sup_action_kind kind,
					  size_t *from)
{
	for (size_t i = from ? *from : 0; i < a->nr; i++)
		if (a->v[i].kind == kind) {
			if (from)
				*from = i + 1;
			return &a->v[i];
		}
	return NULL;
}

/* ---- the run's end ---- */

enum sup_state machine_finish(struct sup_machine *m, struct sup_actions *a, enum sup_state to,
			      const char *outcome, const char *why)
{
	struct sup_action *x = machine_record(m, a, JOURNAL_RUN_ENDED, outcome);
	x->text = xstrdup(why);
	x = machine_act(a, SUP_ACT_REPORT);
	x->name = outcome;
	x->text = xstrdup(why);
	return to;
}

/* ---- hosts ---- */

static const char *host_name_at(const void *arr, size_t i)
{
	return ((const struct sup_host *)arr)[i].name;
}

struct sup_host *machine_find_host(struct sup_machine *m, const char *name)
{
	size_t i = strindex_find(&m->host_index, name, m->hosts, host_name_at);
	return i == (size_t)-1 ? NULL : &m->hosts[i];
}

const struct sup_host *sup_machine_host(const struct sup_machine *m, const char *name)
{
	return machine_find_host((struct sup_machine *)m, name);
}

struct sup_host *machine_add_host(struct sup_machine *m, const char *name, enum sup_role role)
{
	struct sup_host *h = machine_find_host(m, name);
	if (h)
		return h;
	ALLOC_GROW(m->hosts, m->nr_hosts + 1, m->alloc_hosts);
	h = &m->hosts[m->nr_hosts];
	memset(h, 0, sizeof(*h));
	h->name = xstrdup(name);
	strindex_add(&m->host_index, h->name, m->nr_hosts, m->hosts, host_name_at);
	m->nr_hosts++;
	h->role = role;
	return h;
}

size_t sup_machine_count(const struct sup_machine *m, enum sup_role role)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nr_hosts; i++)
		n += m->hosts[i].role == role;
	return n;
}

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
	strlist_release(&m->sdc_suspects);
	free(m->cancel_text);
	free(m->refused_text);
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
	if (r->sdc_pending) {
		/* the divergence's suspects are not tested again (a fresh preflight checks every
		 * host), but the next attempt still resumes before the first differing step */
		m->has_sdc = m->resume_before_next = true;
		m->sdc_step = r->sdc_step;
	}
	for (size_t i = 0; i < r->nr_excluded; i++) {
		struct sup_host *h = machine_add_host(m, r->excluded[i].host, SUP_HOST_EXCLUDED);
		h->role = SUP_HOST_EXCLUDED;
		free(h->reason);
		h->reason = xstrdup(r->excluded[i].reason ? r->excluded[i].reason : "vigil: excluded");
	}
	/* a run cancelled by a signal (a requeue, a preemption, the time limit, a person's
	 * Ctrl-C) goes on when its command is run again, and so does one whose step srun refused
	 * (nothing ran; the command may now ask for what the allocation holds); a run that ended
	 * on its own does not */
	bool goes_on = r->finished && r->outcome &&
		       (!strcmp(r->outcome, "cancelled") || !strcmp(r->outcome, "launch_refused"));
	if (r->finished && !goes_on) {
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
					 "ready", "smoke_result", "diverged", "restart_budget_spent",
					 "cancel", "launch_refused" };
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
					 "sick", "lost", "cancel", "supervisor_restart", "sdc",
					 "launch_refused" };
	return f < ARRAY_SIZE(n) ? n[f] : "?";
}
