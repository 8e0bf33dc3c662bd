/*
 * test_machine.c: the supervisor's state × event table (src/supervise/machine.h). The table is
 * total (every cell walked, with a plausible event, from a machine with hosts), ignore cells
 * change nothing, and replays of the fault classes (rank killed, hang, node sick
 * mid-run, node lost, slow rank, a host found only by group testing, the restart budget spent,
 * a supervisor resumed from its journal) give the actions a user would see carried out.
 */
#include "../harness.h"
#include "../../src/supervise/machine.h"
#include "../../src/supervise/collect.h"
#include "../../src/lib/fileio.h"

#include <unistd.h>

/* The actions as one line: "journal(event:crash@n2) stop_step ..." */
static void describe(const struct sup_actions *a, size_t from, struct strbuf *out)
{
	strbuf_reset(out);
	for (size_t i = from; i < a->nr; i++) {
		const struct sup_action *x = &a->v[i];
		if (out->len)
			strbuf_addch(out, ' ');
		strbuf_addstr(out, sup_action_name(x->kind));
		switch (x->kind) {
		case SUP_ACT_JOURNAL:
			strbuf_addf(out, "(%s", journal_kind_name(x->record));
			if (x->name)
				strbuf_addf(out, ":%s", x->name);
			if (x->host)
				strbuf_addf(out, "@%s", x->host);
			strbuf_addch(out, ')');
			break;
		case SUP_ACT_DRAIN_HOST:
			strbuf_addf(out, "(%s)", x->host);
			break;
		case SUP_ACT_REPLACE_HOST:
			strbuf_addf(out, "(%s>%s)", x->host, x->other);
			break;
		case SUP_ACT_LAUNCH:
		case SUP_ACT_RUN_CHECKS:
		case SUP_ACT_GROUP_TEST:
		case SUP_ACT_COLLECT_STACKS:
			strbuf_addch(out, '(');
			if (x->kind == SUP_ACT_LAUNCH)
				strbuf_addf(out, "%u:", x->attempt);
			if (x->confirm)
				strbuf_addstr(out, "confirm:");
			for (size_t k = 0; k < x->hosts.nr; k++)
				strbuf_addf(out, "%s%s", k ? "," : "", x->hosts.items[k]);
			strbuf_addch(out, ')');
			break;
		case SUP_ACT_REPORT:
			strbuf_addf(out, "(%s)", x->name);
			break;
		default:
			break;
		}
	}
}

struct run {
	struct sup_machine m;
	struct sup_actions a;
	struct strbuf d;
};

/* Feed e; the actions it produced, described, in r->d. */
static enum sup_state feed(struct run *r, struct sup_event e)
{
	size_t from = r->a.nr;
	enum sup_state s = sup_machine_handle(&r->m, &e, &r->a);
	describe(&r->a, from, &r->d);
	return s;
}

static const char *const five[] = { "n1", "n2", "n3", "n4", "n5" };

/* N = 4 of five healthy hosts (n5 the spare), launched and running. */
static void running(struct run *r, unsigned max_restarts)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->d, 0);
	sup_machine_init(&r->m, 4, max_restarts);
	sup_machine_start(&r->m, &r->a);
	describe(&r->a, 0, &r->d);
	CHECK_STR(r->d.buf, "journal(run_started) preflight");
	CHECK_INT(feed(r, (struct sup_event){ .kind = SUP_EV_PREFLIGHT_OK, .hosts = five,
					      .nr_hosts = 5 }),
		  SUP_LAUNCHING);
	CHECK_STR(r->d.buf, "journal(attempt_started) launch(0:n1,n2,n3,n4)");
	CHECK_INT(feed(r, (struct sup_event){ .kind = SUP_EV_LAUNCHED }), SUP_RUNNING);
	CHECK_INT(feed(r, (struct sup_event){ .kind = SUP_EV_STEP, .step = 10 }), SUP_RUNNING);
	CHECK_STR(r->d.buf, "journal(step)");
}

static void done(struct run *r)
{
	sup_machine_release(&r->m);
	sup_actions_release(&r->a);
	strbuf_release(&r->d);
}

static const char *const none[] = { NULL };

TEST(machine_table_is_total)
{
	const char *const sick[] = { "n2" }, *const why[] = { "Xid 79" };
	for (int s = 0; s < SUP_STATE_NR; s++) {
		CHECK(strcmp(sup_state_name((enum sup_state)s), "?"));
		for (int e = 0; e < SUP_EVENT_NR; e++) {
			CHECK(strcmp(sup_event_name((enum sup_event_kind)e), "?"));
			CHECK_MSG(sup_machine_cell_defined((enum sup_state)s, (enum sup_event_kind)e),
				  "no handler for %s in %s", sup_event_name((enum sup_event_kind)e),
				  sup_state_name((enum sup_state)s));
			struct run r;
			running(&r, 3);
			r.m.state = (enum sup_state)s;
			size_t before = r.a.nr;
			size_t active = sup_machine_count(&r.m, SUP_HOST_ACTIVE);
			struct sup_event ev = { .kind = (enum sup_event_kind)e, .host = "n2",
						.text = "x", .code = 1, .step = 11, .hosts = five,
						.nr_hosts = 5, .sick = sick, .sick_reasons = why,
						.nr_sick = 1 };
			enum sup_state to = feed(&r, ev);
			CHECK(to < SUP_STATE_NR);
			if (sup_machine_cell_is_noop((enum sup_state)s, (enum sup_event_kind)e)) {
				CHECK_MSG((int)to == s, "no-op cell %s/%s moved to %s",
					  sup_state_name((enum sup_state)s),
					  sup_event_name((enum sup_event_kind)e), sup_state_name(to));
				CHECK_MSG(r.a.nr - before <= 1 && !strstr(r.d.buf, "drain") &&
						  !strstr(r.d.buf, "launch"),
					  "no-op cell acted: %s", r.d.buf);
				CHECK_INT(sup_machine_count(&r.m, SUP_HOST_ACTIVE), active);
			}
			if (s == SUP_DONE || s == SUP_FAILED)
				CHECK((int)to == s && r.a.nr == before);
			done(&r);
		}
	}
	CHECK(!sup_machine_cell_defined(SUP_STATE_NR, SUP_EV_STEP));
	for (int k = 0; k <= SUP_ACT_REPORT; k++)
		CHECK(strcmp(sup_action_name((enum sup_action_kind)k), "?"));
	UNUSED(none);
}

TEST(machine_clean_run_ends_done)
{
	struct run r;
	running(&r, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 0 }), SUP_DONE);
	CHECK_STR(r.d.buf, "journal(attempt_ended:done) journal(run_ended:done) report(done)");
	CHECK(!r.m.step_running);
	CHECK_INT(sup_machine_count(&r.m, SUP_HOST_SPARE), 1);
	done(&r);
}

TEST(machine_rank_killed_relaunches_on_the_same_hosts)
{
	struct run r;
	running(&r, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 137,
					       .host = "n2" }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:crash@n2) stop_step");
	/* the other ranks die of it while the stop runs: nothing more */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED }), SUP_CHECKING);
	CHECK_STR(r.d.buf, "journal(attempt_ended:crash) run_checks(n1,n2,n3,n4)");
	CHECK(r.a.v[r.a.nr - 2].has_code && r.a.v[r.a.nr - 2].code == 137);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_RELAUNCHING);
	CHECK_STR(r.d.buf, "wait");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_READY }), SUP_LAUNCHING);
	CHECK_STR(r.d.buf, "journal(attempt_started) launch(1:n1,n2,n3,n4)");
	CHECK_INT(r.m.restarts, 1);
	CHECK_INT(r.m.unexplained, 1);
	done(&r);
}

TEST(machine_hang_collects_stacks_then_confirms_the_suspect)
{
	struct run r;
	const char *const suspect[] = { "n3" };
	running(&r, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_HANG, .text = "no step for 31 s" }),
		  SUP_COLLECTING_EVIDENCE);
	CHECK_STR(r.d.buf, "journal(event:hang) collect_stacks(n1,n2,n3,n4)");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_EVIDENCE_DONE, .hosts = suspect,
					       .nr_hosts = 1, .text = "n3 silent first" }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:evidence) stop_step");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED }), SUP_CHECKING);
	CHECK_STR(r.d.buf, "journal(attempt_ended:hang) run_checks(n1,n2,n3,n4)");
	/* no check explains it: the suspect is tried alone before anything is drained */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_GROUP_TESTING);
	CHECK_STR(r.d.buf, "group_test(confirm:n3)");
	const char *const bad[] = { "n3" };
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_SMOKE_RESULT, .sick = bad,
					       .nr_sick = 1 }),
		  SUP_RELAUNCHING);
	CHECK_STR(r.d.buf, "journal(host_excluded@n3) drain_host(n3) replace_host(n3>n5) wait");
	CHECK_STR(sup_machine_host(&r.m, "n3")->reason, "vigil: failed the smoke test alone");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_READY }), SUP_LAUNCHING);
	CHECK_STR(r.d.buf, "journal(attempt_started) launch(1:n1,n2,n4,n5)");
	done(&r);
}

/* A rank frozen in every sample names its host beyond doubt: excluded with the evidence, no
 * smoke test; a host only unlike the others is still confirmed alone. */
TEST(machine_hang_evidence_beyond_doubt_excludes_at_once)
{
	struct run r;
	const char *const frozen[] = { "n2" };
	const char *const why[] = { "rank 1 stopped (T) in 20 of 20 samples" };
	running(&r, 3);
	feed(&r, (struct sup_event){ .kind = SUP_EV_HANG, .text = "no step for 9 s" });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_EVIDENCE_DONE, .sick = frozen,
					       .sick_reasons = why, .nr_sick = 1,
					       .text = "rank 1 frozen" }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:evidence@n2) journal(host_excluded@n2) drain_host(n2) "
			   "stop_step");
	CHECK_STR(sup_machine_host(&r.m, "n2")->reason,
		  "vigil: rank 1 stopped (T) in 20 of 20 samples");
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_RELAUNCHING);
	CHECK_STR(r.d.buf, "replace_host(n2>n5) wait");
	done(&r);
}

/* Group testing where most hosts fail alone: the command is at fault, not a host. The run
 * stops and says so; nobody is drained. */
TEST(machine_smoke_failing_everywhere_ends_the_run)
{
	struct run r;
	running(&r, 5);
	r.m.group_test_after = 1;
	feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 });
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_GROUP_TESTING);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_SMOKE_RESULT, .code = 1,
					       .text = "4 of 4 hosts failed alone" }),
		  SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(run_ended:fails_everywhere) report(fails_everywhere)");
	CHECK_INT((long long)sup_machine_count(&r.m, SUP_HOST_EXCLUDED), 0);
	done(&r);
}

TEST(machine_hang_that_clears_goes_back_to_running)
{
	struct run r;
	running(&r, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_HANG }), SUP_COLLECTING_EVIDENCE);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STEP, .step = 11 }), SUP_RUNNING);
	CHECK_STR(r.d.buf, "journal(event:hang_cleared) journal(step)");
	/* the stacks arrive late: the loop cannot do that (its evidence action posts its result
	 * before any step is read), so it is journaled as unexpected and changes nothing */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_EVIDENCE_DONE }), SUP_RUNNING);
	CHECK_STR(r.d.buf, "journal(event:unexpected)");
	/* a startup hang (before any step) is its own class */
	struct run s;
	memset(&s, 0, sizeof(s));
	sup_machine_init(&s.m, 1, 0);
	const char *const one[] = { "n1" };
	feed(&s, (struct sup_event){ .kind = SUP_EV_PREFLIGHT_OK, .hosts = one, .nr_hosts = 1 });
	CHECK_INT(feed(&s, (struct sup_event){ .kind = SUP_EV_HANG, .startup = true }),
		  SUP_COLLECTING_EVIDENCE);
	CHECK_STR(s.d.buf, "journal(event:startup_timeout) collect_stacks(n1)");
	done(&s);
	done(&r);
}

TEST(machine_node_sick_mid_run_is_drained_and_replaced)
{
	struct run r;
	running(&r, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_HOST_SICK, .host = "n2",
					       .text = "Xid 79: GPU fallen off the bus" }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:sick@n2) stop_step journal(host_excluded@n2) "
			   "drain_host(n2)");
	CHECK_STR(sup_machine_host(&r.m, "n2")->reason, "vigil: Xid 79: GPU fallen off the bus");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED }), SUP_CHECKING);
	CHECK_STR(r.d.buf, "journal(attempt_ended:sick) run_checks(n1,n3,n4)");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_RELAUNCHING);
	CHECK_STR(r.d.buf, "replace_host(n2>n5) wait");
	CHECK_INT(r.m.unexplained, 0);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_READY }), SUP_LAUNCHING);
	CHECK_STR(r.d.buf, "journal(attempt_started) launch(1:n1,n3,n4,n5)");
	done(&r);
}

TEST(machine_node_lost_and_then_too_few_hosts)
{
	struct run r;
	running(&r, 5);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_NODE_LOST, .host = "n4" }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:lost@n4) stop_step journal(host_excluded@n4) "
			   "drain_host(n4)");
	CHECK_STR(sup_machine_host(&r.m, "n4")->reason, "vigil: node lost during the run");
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_RELAUNCHING);
	CHECK_STR(r.d.buf, "replace_host(n4>n5) wait");
	feed(&r, (struct sup_event){ .kind = SUP_EV_READY });
	/* no spare left: a second loss ends the run with the reason */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_NODE_LOST, .host = "n1" }),
		  SUP_STOPPING);
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(run_ended:too_few_hosts) report(too_few_hosts)");
	CHECK_CONTAINS(r.a.v[r.a.nr - 1].text, "fewer than 4 healthy hosts remain (3)");
	done(&r);
}

/* A slowdown the stacks do not explain: no restart (it would come back as slow), said so. */
TEST(machine_slow_without_a_suspect_goes_on)
{
	struct run r;
	running(&r, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_SLOW, .text = "3 slow steps" }),
		  SUP_COLLECTING_EVIDENCE);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_EVIDENCE_DONE,
					       .text = "the stacks agree" }),
		  SUP_RUNNING);
	CHECK_STR(r.d.buf, "journal(event:evidence) journal(event:slow_unexplained)");
	/* a later crash is its own fault, not the slowdown's */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 }),
		  SUP_STOPPING);
	CHECK_INT(r.m.fault, SUP_FAULT_CRASH);
	done(&r);
}

TEST(machine_slow_rank_named_by_evidence)
{
	struct run r;
	const char *const slowhost[] = { "n1" };
	running(&r, 3);
	/* one slow step is logged only */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_SLOW_STEP }), SUP_RUNNING);
	CHECK_STR(r.d.buf, "journal(event:slow_step)");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_SLOW }), SUP_COLLECTING_EVIDENCE);
	CHECK_STR(r.d.buf, "journal(event:slow) collect_stacks(n1,n2,n3,n4)");
	/* a slow run still steps: still slow */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STEP, .step = 12 }),
		  SUP_COLLECTING_EVIDENCE);
	feed(&r, (struct sup_event){ .kind = SUP_EV_EVIDENCE_DONE, .hosts = slowhost,
				     .nr_hosts = 1 });
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_GROUP_TESTING);
	CHECK_STR(r.d.buf, "group_test(confirm:n1)");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_SMOKE_RESULT, .sick = slowhost,
					       .nr_sick = 1, .sick_reasons = (const char *const[]){
								     "smoke test 3x slower alone" } }),
		  SUP_RELAUNCHING);
	CHECK_STR(r.d.buf, "journal(host_excluded@n1) drain_host(n1) replace_host(n1>n5) wait");
	CHECK_STR(sup_machine_host(&r.m, "n1")->reason, "vigil: smoke test 3x slower alone");
	done(&r);
}

TEST(machine_host_found_only_by_group_testing)
{
	struct run r;
	running(&r, 5);
	/* the first unexplained crash: relaunch as it was */
	feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 });
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_RELAUNCHING);
	feed(&r, (struct sup_event){ .kind = SUP_EV_READY });
	/* again, and no check explains it: group testing over the attempt's hosts */
	feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 });
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_GROUP_TESTING);
	CHECK_STR(r.d.buf, "group_test(n1,n2,n3,n4)");
	/* news the loop cannot give during the tests changes nothing (journaled as unexpected) */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 }),
		  SUP_GROUP_TESTING);
	CHECK_STR(r.d.buf, "journal(event:unexpected)");
	const char *const bad[] = { "n3" };
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_SMOKE_RESULT, .sick = bad,
					       .nr_sick = 1 }),
		  SUP_RELAUNCHING);
	CHECK_STR(r.d.buf, "journal(host_excluded@n3) drain_host(n3) replace_host(n3>n5) wait");
	CHECK_INT(r.m.unexplained, 0);
	/* group testing that finds nobody: journaled, relaunched anyway within the budget */
	struct run s;
	running(&s, 5);
	s.m.group_test_after = 1;
	feed(&s, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 });
	feed(&s, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&s, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_GROUP_TESTING);
	CHECK_INT(feed(&s, (struct sup_event){ .kind = SUP_EV_SMOKE_RESULT }), SUP_RELAUNCHING);
	CHECK_STR(s.d.buf, "journal(event:group_test) wait");
	done(&s);
	done(&r);
}

TEST(machine_restart_budget_spent)
{
	struct run r;
	running(&r, 1);
	feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 });
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_RELAUNCHING);
	feed(&r, (struct sup_event){ .kind = SUP_EV_READY });
	feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 });
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	/* no group testing either: nothing could be relaunched after it */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(run_ended:restart_budget_spent) report(restart_budget_spent)");
	CHECK_CONTAINS(r.a.v[r.a.nr - 1].text, "restart budget is spent (1 restarts)");
	done(&r);

	/* the event itself: noted while running (the attempt may finish), final while waiting */
	running(&r, 9);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_RESTART_BUDGET_SPENT }),
		  SUP_RUNNING);
	CHECK_STR(r.d.buf, "journal(event:restart_budget_spent)");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 0 }), SUP_DONE);
	done(&r);
	running(&r, 9);
	feed(&r, (struct sup_event){ .kind = SUP_EV_HOST_SICK, .host = "n1" });
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE });
	CHECK_INT(r.m.state, SUP_RELAUNCHING);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_RESTART_BUDGET_SPENT }), SUP_FAILED);
	done(&r);
}

TEST(machine_preflight_short_and_sick_hosts_drained)
{
	struct run r;
	const char *const healthy[] = { "n1", "n2", "n3" }, *const sick[] = { "n4", "n5" },
			  *const why[] = { "vigil: Xid 79", NULL };
	memset(&r, 0, sizeof(r));
	sup_machine_init(&r.m, 4, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_PREFLIGHT_OK, .hosts = healthy,
					       .nr_hosts = 3, .sick = sick, .sick_reasons = why,
					       .nr_sick = 2 }),
		  SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(host_excluded@n4) drain_host(n4) journal(host_excluded@n5) "
			   "drain_host(n5) journal(run_ended:too_few_hosts) report(too_few_hosts)");
	CHECK_STR(sup_machine_host(&r.m, "n4")->reason, "vigil: Xid 79");
	CHECK_STR(sup_machine_host(&r.m, "n5")->reason, "vigil: failed the preflight check");
	CHECK(!r.m.launched_any);
	done(&r);
	memset(&r, 0, sizeof(r));
	sup_machine_init(&r.m, 4, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_PREFLIGHT_SHORT }), SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(run_ended:too_few_hosts) report(too_few_hosts)");
	done(&r);
}

TEST(machine_cancel_stops_the_step_then_fails)
{
	struct run r;
	running(&r, 3);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CANCEL, .text = "SIGTERM" }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:cancel) stop_step");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED }), SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(attempt_ended:cancel) journal(run_ended:cancelled) "
			   "report(cancelled)");
	done(&r);
}

TEST(machine_resume_stops_the_old_step_never_launches_twice)
{
	struct journal_replay jr;
	const char *text =
		"{\"t\":1,\"kind\":\"run_started\",\"attempt\":0}\n"
		"{\"t\":2,\"kind\":\"attempt_started\",\"attempt\":0,\"restarts\":0,\"step_id\":\"7.0\"}\n"
		"{\"t\":3,\"kind\":\"host_excluded\",\"attempt\":0,\"host\":\"n2\",\"reason\":\"vigil: Xid 79\"}\n"
		"{\"t\":4,\"kind\":\"attempt_ended\",\"attempt\":0,\"outcome\":\"sick\"}\n"
		"{\"t\":5,\"kind\":\"attempt_started\",\"attempt\":1,\"restarts\":1,\"step_id\":\"7.1\"}\n"
		"{\"t\":6,\"kind\":\"step\",\"attempt\":1,\"step\":300}\n"
		"{\"t\":7,\"kind\":\"ev";
	journal_replay_text(text, strlen(text), &jr);
	struct run r;
	memset(&r, 0, sizeof(r));
	sup_machine_init(&r.m, 4, 3);
	sup_machine_resume(&r.m, &jr, &r.a);
	describe(&r.a, 0, &r.d);
	CHECK_STR(r.d.buf, "journal(event:supervisor_restart) stop_step");
	CHECK_STR(r.a.v[1].text, "7.1");
	CHECK_INT(r.m.state, SUP_STOPPING);
	CHECK_INT(r.m.restarts, 1);
	CHECK(r.m.has_step && r.m.last_step == 300);
	/* a step line from the old step while stopping launches nothing */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STEP, .step = 301 }), SUP_STOPPING);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED }), SUP_PREFLIGHT);
	CHECK_STR(r.d.buf, "journal(attempt_ended:supervisor_restart) preflight");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_PREFLIGHT_OK, .hosts = five,
					       .nr_hosts = 5 }),
		  SUP_LAUNCHING);
	/* n2 stays out; the attempt is the next number (VIGIL_ATTEMPT > 0: resume) */
	CHECK_STR(r.d.buf, "journal(attempt_started) launch(2:n1,n3,n4,n5)");
	CHECK_INT(r.m.restarts, 1);
	done(&r);

	/* the old attempt had ended: no stop, a preflight */
	journal_replay_release(&jr);
	const char *ended = "{\"kind\":\"attempt_started\",\"attempt\":0}\n"
			    "{\"kind\":\"attempt_ended\",\"attempt\":0}\n";
	journal_replay_text(ended, strlen(ended), &jr);
	memset(&r, 0, sizeof(r));
	sup_machine_init(&r.m, 4, 3);
	sup_machine_resume(&r.m, &jr, &r.a);
	describe(&r.a, 0, &r.d);
	CHECK_STR(r.d.buf, "journal(event:supervisor_restart) preflight");
	CHECK_INT(r.m.state, SUP_PREFLIGHT);
	done(&r);
	journal_replay_release(&jr);

	/* a finished run only reports */
	const char *fin = "{\"kind\":\"run_ended\",\"outcome\":\"done\"}\n";
	journal_replay_text(fin, strlen(fin), &jr);
	memset(&r, 0, sizeof(r));
	sup_machine_init(&r.m, 4, 3);
	sup_machine_resume(&r.m, &jr, &r.a);
	describe(&r.a, 0, &r.d);
	CHECK_STR(r.d.buf, "report(done)");
	CHECK_INT(r.m.state, SUP_DONE);
	done(&r);
	journal_replay_release(&jr);

	/* a run cancelled by a signal (a requeue, the time limit) goes on when run again */
	const char *cancelled = "{\"kind\":\"attempt_started\",\"attempt\":2,\"restarts\":2}\n"
				"{\"kind\":\"attempt_ended\",\"attempt\":2,\"outcome\":\"cancel\"}\n"
				"{\"kind\":\"run_ended\",\"attempt\":2,\"outcome\":\"cancelled\"}\n";
	journal_replay_text(cancelled, strlen(cancelled), &jr);
	memset(&r, 0, sizeof(r));
	sup_machine_init(&r.m, 4, 3);
	sup_machine_resume(&r.m, &jr, &r.a);
	describe(&r.a, 0, &r.d);
	CHECK_STR(r.d.buf, "journal(event:supervisor_restart) preflight");
	CHECK_INT(r.m.state, SUP_PREFLIGHT);
	CHECK_INT(r.m.restarts, 2);
	done(&r);
	journal_replay_release(&jr);
}

/*
 * Issue 17: a frozen "rank" on a host where vigil stacks ignored a process that was not of the
 * job (another user's claimant) is doubtful evidence: the supervisor (collect.c: srun, vigil
 * stacks' JSON, evidence.c) names the host a suspect, never sick, and the machine confirms it
 * by a smoke test alone before any drain. The same answer without the claimant drains at once
 * (the control: this test can tell the two apart). The fake srun keeps its arguments: vigil
 * stacks is told the job, the attempt's step and the uid.
 */
static void stacks_answer(const char *dir, const char *host, long rank, unsigned T,
			  const char *ignored)
{
	struct strbuf j = STRBUF_INIT, name = STRBUF_INIT;
	strbuf_addf(&j, "{\"host\":\"%s\",\"attempt_dir\":\"/a\",\"eu_stack\":null,\"job\":\"77\","
		    "\"step\":\"3\",\"uid\":0,\"cgroup_checked\":false,\"ignored\":[%s],"
		    "\"ranks\":[{\"rank\":%ld,\"local_rank\":0,\"pid\":%ld,\"samples\":10,"
		    "\"states\":{\"R\":0,\"S\":%u,\"D\":0,\"T\":%u,\"Z\":0,\"other\":0},"
		    "\"cpu_s\":0,\"wchan\":null,\"py_stack\":null,\"native_stack\":null,"
		    "\"nccl_ring\":null,\"doubt\":null,\"errors\":[]}],\"errors\":[]}\n",
		    host, ignored ? ignored : "", rank, 1000 + rank, 10 - T, T);
	strbuf_addf(&name, "out-%s.json", host);
	test_write(dir, name.buf, j.buf);
	strbuf_release(&j);
	strbuf_release(&name);
}

static void collect_two(const char *ignored, struct strlist *suspects, struct strlist *sick,
			struct strbuf *args)
{
	const char *dir = test_tmpdir();
	struct strbuf body = STRBUF_INIT, srun = STRBUF_INIT, adir = STRBUF_INIT;
	stacks_answer(dir, "n1", 0, 10, ignored); /* "rank 0" stopped in every sample */
	stacks_answer(dir, "n2", 1, 0, NULL);
	strbuf_addf(&body, "for a; do h=$a; done\necho \"$*\" >>'%s/args'\ncat '%s/out-'\"$h\".json",
		    dir, dir);
	test_script("srun", body.buf);
	strbuf_addf(&srun, "%s/srun", dir);
	strbuf_addf(&adir, "%s/attempt-0", dir);
	test_mkdir(dir, "attempt-0");
	struct sup_options o = { .job_id = "77", .tasks_per_node = 1, .stacks_timeout_s = 20,
				 .vigil_remote = "vigil" };
	o.cmds.srun = srun.buf;
	char *hosts[] = { "n1", "n2" };
	struct strlist why = STRLIST_INIT;
	struct strbuf summary = STRBUF_INIT, p = STRBUF_INIT;
	sup_collect_evidence(&o, adir.buf, "77.3", hosts, 2, NULL, 2, true, &summary, suspects, sick,
			     &why);
	strbuf_addf(&p, "%s/args", dir);
	strbuf_reset(args);
	CHECK_INT(read_file_bounded(p.buf, args, 65536, NULL), READ_OK);
	unlink(p.buf);
	strlist_release(&why);
	strbuf_release(&summary);
	strbuf_release(&p);
	strbuf_release(&body);
	strbuf_release(&srun);
	strbuf_release(&adir);
}

TEST(machine_doubtful_evidence_is_confirmed_by_a_smoke_test_not_drained)
{
	struct strlist suspects = STRLIST_INIT, sick = STRLIST_INIT;
	struct strbuf args = STRBUF_INIT;
	char uid[64];
	/* the control: a real frozen rank 0, nothing ignored: n1 out at once */
	collect_two(NULL, &suspects, &sick, &args);
	CHECK_INT(sick.nr, 1);
	CHECK_STR(sick.items[0], "n1");
	snprintf(uid, sizeof(uid), "--job 77 --step 3 --uid %ld", (long)getuid());
	CHECK_CONTAINS(args.buf, uid);
	strlist_release(&suspects);
	strlist_release(&sick);
	/* the attack: the frozen "rank 0" beside a claimant that was not of the job */
	collect_two("\"ignored pid 4242 (uid 65534): not of job 77 step 3: not the job's uid 0\"",
		    &suspects, &sick, &args);
	CHECK_INT(sick.nr, 0);
	CHECK_INT(suspects.nr, 1);
	CHECK_STR(suspects.items[0], "n1");

	/* the machine: no drain with the evidence; the suspect tried alone first */
	struct run r;
	running(&r, 3);
	feed(&r, (struct sup_event){ .kind = SUP_EV_HANG, .text = "no step for 9 s" });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_EVIDENCE_DONE,
					       .hosts = (const char *const *)suspects.items,
					       .nr_hosts = suspects.nr,
					       .sick = (const char *const *)sick.items,
					       .nr_sick = sick.nr, .text = "doubtful" }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:evidence) stop_step");
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_GROUP_TESTING);
	CHECK_STR(r.d.buf, "group_test(confirm:n1)");
	/* the smoke test passes alone: n1 is not drained */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_SMOKE_RESULT }), SUP_RELAUNCHING);
	CHECK(!strstr(r.d.buf, "drain_host"));
	CHECK(sup_machine_host(&r.m, "n1")->role != SUP_HOST_EXCLUDED);
	done(&r);
	strlist_release(&suspects);
	strlist_release(&sick);
	strbuf_release(&args);
}
