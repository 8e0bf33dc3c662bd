/*
 * machine.h: the supervisor of `vigil run` (docs/SUPERVISOR.md) as a state × event table, as s6's
 * supervisor is: every (state, event) cell is a handler that returns the next state and appends
 * the actions the caller must carry out (launch, stop the step, collect stacks, run checks,
 * drain a host, replace it from the spares, group testing, journal records, the report).
 *
 * Pure: no clock, no I/O, no Slurm. The loop that will drive it (next: the `vigil run` command)
 * turns the world into events (srun exits, detect.h's verdicts, agent and check results) and
 * the actions into work through the OS-ops table. Cells that cannot happen are explicit
 * "unexpected" entries that only journal the oddity; cells where an event is stale (a step
 * line after the stop was sent) are explicit "ignore" entries. The table is total: the unit
 * test walks every cell.
 *
 * Ownership: the machine owns its hosts and strings (sup_machine_release). Actions own their
 * strings (sup_actions_release). Events are only read during sup_machine_handle().
 */
#ifndef VIGIL_MACHINE_H
#define VIGIL_MACHINE_H

#include "journal.h"
#include "../lib/strlist.h"

enum sup_state {
	SUP_PREFLIGHT,           /* vigil check on the allocation's nodes */
	SUP_LAUNCHING,           /* the srun step was started, no sign of it yet */
	SUP_RUNNING,             /* it runs */
	SUP_COLLECTING_EVIDENCE, /* hang or slowdown: stacks of every rank before anything dies */
	SUP_STOPPING,            /* TERM, grace, KILL of the step */
	SUP_CHECKING,            /* vigil check on the attempt's nodes */
	SUP_RELAUNCHING,         /* hosts replaced; waiting before the next attempt */
	SUP_GROUP_TESTING,       /* smoke runs on groups to find a host no check explains */
	SUP_DONE,
	SUP_FAILED,
	SUP_STATE_NR
};

enum sup_event_kind {
	SUP_EV_PREFLIGHT_OK,    /* hosts: healthy, best first; sick/sick_reasons: the others */
	SUP_EV_PREFLIGHT_SHORT, /* sick/sick_reasons */
	SUP_EV_LAUNCHED,        /* the step runs (text: its id) */
	SUP_EV_STEP,            /* step */
	SUP_EV_TASK_EXIT,       /* code: 0 = the whole step ended well; host: whose task, if known */
	SUP_EV_NODE_LOST,       /* host */
	SUP_EV_HANG,            /* text: detail; startup: before the first step */
	SUP_EV_SLOW_STEP,       /* one slow step: logged */
	SUP_EV_SLOW,            /* a sustained slowdown */
	SUP_EV_HOST_SICK,       /* host, text: the check's reason */
	SUP_EV_EVIDENCE_DONE,   /* hosts: suspects (stacks unlike the majority, silent first), to
				 * confirm alone; sick/sick_reasons: named beyond doubt (a rank
				 * stopped in every sample), excluded at once */
	SUP_EV_STOPPED,         /* no task of the step is left anywhere */
	SUP_EV_CHECK_DONE,      /* sick/sick_reasons: the hosts the checks found sick */
	SUP_EV_READY,           /* the wait before the next attempt is over */
	SUP_EV_SMOKE_RESULT,    /* sick/sick_reasons: hosts confirmed bad alone (may be none);
				 * code 1: most hosts fail alone, the fault is not in a host */
	SUP_EV_DIVERGED,        /* hosts: those of the ranks whose parameters differ from their
				 * replicas' (every reporter's when no digest has a majority);
				 * step: the step whose digests differed; text (replicas.h) */
	SUP_EV_RESTART_BUDGET_SPENT,
	SUP_EV_CANCEL,          /* SIGTERM, the allocation's end */
	SUP_EV_LAUNCH_REFUSED,  /* srun could not create the step (the attempt's, or a smoke or
				 * determinism test's): the allocation cannot hold it; text: srun's
				 * reason and what to do (srunmsg.h). No host is at fault. */
	SUP_EVENT_NR
};

struct sup_event {
	enum sup_event_kind kind;
	const char *host;
	const char *text;
	int code;
	uint64_t step;
	bool startup;
	const char *const *hosts;
	size_t nr_hosts;
	const char *const *sick;
	const char *const *sick_reasons; /* parallel to sick, entries may be NULL */
	size_t nr_sick;
};

enum sup_action_kind {
	SUP_ACT_PREFLIGHT,      /* check every allocated node */
	SUP_ACT_LAUNCH,         /* attempt: start the step on the active hosts */
	SUP_ACT_STOP_STEP,      /* text: the step id when resuming, else the current step */
	SUP_ACT_COLLECT_STACKS, /* on the active hosts */
	SUP_ACT_RUN_CHECKS,     /* hosts: the attempt's hosts still in the run */
	SUP_ACT_DRAIN_HOST,     /* host, text: the reason ("vigil: ...") */
	SUP_ACT_REPLACE_HOST,   /* host leaves, other (a spare) takes its place */
	SUP_ACT_GROUP_TEST,     /* hosts: candidates; confirm: each alone (suspects from evidence) */
	SUP_ACT_WAIT,           /* before the next attempt */
	SUP_ACT_JOURNAL,        /* record, name, host, text, code, step */
	SUP_ACT_REPORT,         /* the run is over: name is the outcome, text the reason */
};

enum sup_fault {
	SUP_FAULT_NONE,
	SUP_FAULT_CRASH,
	SUP_FAULT_HANG,
	SUP_FAULT_STARTUP,
	SUP_FAULT_SLOW,
	SUP_FAULT_SICK,
	SUP_FAULT_LOST,
	SUP_FAULT_CANCEL,
	SUP_FAULT_RESTART, /* the supervisor itself was restarted (journal replay) */
	SUP_FAULT_SDC,     /* the data-parallel replicas' parameters differ (replicas.h) */
	SUP_FAULT_LAUNCH_REFUSED, /* srun refused to create the step: the run ends, nobody blamed */
};

struct sup_action {
	enum sup_action_kind kind;
	enum journal_kind record;
	const char *name; /* static: a fault class or an outcome */
	char *host, *other, *text;
	struct strlist hosts;
	bool confirm;
	struct strlist sdc_hosts; /* GROUP_TEST: each to pass the determinism test alone */
	bool resume_before;       /* LAUNCH: resume from a checkpoint before step (the first
				   * step whose digests differed): VIGIL_RESUME_BEFORE */
	unsigned attempt;
	bool has_code;
	int code;
	bool has_step; /* JOURNAL: the record carries step (an sdc event: the first bad step) */
	uint64_t step;
};

struct sup_actions {
	struct sup_action *v;
	size_t nr, alloc;
};

void sup_actions_release(struct sup_actions *a);
/* The first action of kind at or after *from (updated past it), or NULL. */
const struct sup_action *sup_actions_find(const struct sup_actions *a, enum sup_action_kind kind,
					  size_t *from);

enum sup_role { SUP_HOST_ACTIVE, SUP_HOST_SPARE, SUP_HOST_EXCLUDED };

struct sup_host {
	char *name;
	enum sup_role role;
	char *reason;     /* why excluded */
	bool was_active;  /* ran in an attempt: a spare takes its place when it leaves */
	bool ran;         /* ran in an attempt this process launched (never reset) */
};

struct sup_machine {
	enum sup_state state;
	unsigned nodes;        /* N: hosts an attempt runs on */
	unsigned max_restarts; /* relaunches allowed */
	unsigned group_test_after; /* unexplained failures in a row before group testing (2) */
	unsigned attempt;      /* the current or last attempt; VIGIL_ATTEMPT */
	bool launched_any;
	unsigned restarts;
	unsigned unexplained;
	bool step_running; /* a step was launched and not seen stopped */
	bool has_step;
	uint64_t last_step;
	enum sup_fault fault; /* what the current recovery is about */
	bool has_exit_code;
	int exit_code;
	bool explained;       /* a host was excluded since the attempt started */
	bool budget_spent, cancelled, resumed;
	char *cancel_text; /* what cancelled the run, for its report */
	char *refused_text; /* srun refused a step: why (the run ends launch_refused) */
	bool slow_quiet;   /* an unexplained slowdown: the next ones are noted until the step */
	uint64_t slow_quiet_until;
	struct strlist suspects;
	struct strlist sdc_suspects; /* to pass the determinism test before a relaunch */
	bool has_sdc, resume_before_next;
	uint64_t sdc_step;           /* the first step whose digests differed */
	struct sup_host *hosts;
	size_t nr_hosts, alloc_hosts;
	struct strindex host_index; /* by name: a resume with N excluded hosts is O(N) */
};

void sup_machine_init(struct sup_machine *m, unsigned nodes, unsigned max_restarts);
void sup_machine_release(struct sup_machine *m);
/* A fresh run: journal run_started, run the preflight. */
void sup_machine_start(struct sup_machine *m, struct sup_actions *a);
/*
 * A run found in its journal: its attempts, restarts and excluded hosts are taken over; a step
 * that may still run is stopped first (STOPPING, then a new preflight); a finished run only
 * reports. The next attempt gets the next number.
 */
void sup_machine_resume(struct sup_machine *m, const struct journal_replay *r,
			struct sup_actions *a);
/* Feed one event: runs its cell, appends actions, returns the new state. */
enum sup_state sup_machine_handle(struct sup_machine *m, const struct sup_event *e,
				  struct sup_actions *a);
/* Is the (state, event) cell one that only ignores or logs the event? (tests) */
bool sup_machine_cell_is_noop(enum sup_state s, enum sup_event_kind e);
/* Can the loop feed the cell's event in its state? Every cell but the "unexpected" ones
 * (test_supervisor.c feeds each of them in virtual time). */
bool sup_machine_cell_reachable(enum sup_state s, enum sup_event_kind e);
/* Is there a handler at all for the cell? (the totality test) */
bool sup_machine_cell_defined(enum sup_state s, enum sup_event_kind e);

size_t sup_machine_count(const struct sup_machine *m, enum sup_role role);
const struct sup_host *sup_machine_host(const struct sup_machine *m, const char *name);

const char *sup_state_name(enum sup_state s);
const char *sup_event_name(enum sup_event_kind e);
const char *sup_action_name(enum sup_action_kind k);
const char *sup_fault_name(enum sup_fault f);

#endif
