/*
 * test_machine_refused.c: the machine's launch_refused event (src/supervise/machine.h): srun
 * could not create a step (the attempt's, or a smoke or determinism test's), because the
 * allocation cannot hold it. In every state it can arrive in, the run ends launch_refused with
 * srun's reason: nothing checked, no group test, no drain, no relaunch. Found on a real Slurm:
 * `vigil run --tasks-per-node 2` in `salloc -N1` drained the healthy node.
 */
#include "../harness.h"
#include "../../src/supervise/machine.h"

#include <string.h>

/* The actions as one line: "journal(event:launch_refused) stop_step ..." */
static void describe(const struct sup_actions *a, size_t from, struct strbuf *out)
{
	strbuf_reset(out);
	for (size_t i = from; i < a->nr; i++) {
		const struct sup_action *x = &a->v[i];
		if (out->len)
			strbuf_addch(out, ' ');
		strbuf_addstr(out, sup_action_name(x->kind));
		if (x->kind == SUP_ACT_JOURNAL) {
			strbuf_addf(out, "(%s", journal_kind_name(x->record));
			if (x->name)
				strbuf_addf(out, ":%s", x->name);
			strbuf_addch(out, ')');
		} else if (x->kind == SUP_ACT_REPORT || x->kind == SUP_ACT_DRAIN_HOST) {
			strbuf_addf(out, "(%s)", x->kind == SUP_ACT_REPORT ? x->name : x->host);
		}
	}
}

struct run {
	struct sup_machine m;
	struct sup_actions a;
	struct strbuf d;
};

static enum sup_state feed(struct run *r, struct sup_event e)
{
	size_t from = r->a.nr;
	enum sup_state s = sup_machine_handle(&r->m, &e, &r->a);
	describe(&r->a, from, &r->d);
	return s;
}

static const char *const two[] = { "n1", "n2" };
#define WHY "srun refused to create the step: More processors requested than permitted; ..."

/* N = 1 of two healthy hosts, launched: srun asked for the step. */
static void launching(struct run *r)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->d, 0);
	sup_machine_init(&r->m, 1, 3);
	sup_machine_start(&r->m, &r->a);
	CHECK_INT(feed(r, (struct sup_event){ .kind = SUP_EV_PREFLIGHT_OK, .hosts = two,
					      .nr_hosts = 2 }),
		  SUP_LAUNCHING);
}

static void done(struct run *r)
{
	sup_machine_release(&r->m);
	sup_actions_release(&r->a);
	strbuf_release(&r->d);
}

/* The report action's text (the outcome's detail). */
static const char *report_text(const struct run *r)
{
	const struct sup_action *x = sup_actions_find(&r->a, SUP_ACT_REPORT, NULL);
	return x && x->text ? x->text : "";
}

TEST(machine_refused_launch_ends_the_run_without_blame)
{
	struct run r;
	launching(&r);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_LAUNCH_REFUSED, .text = WHY }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:launch_refused) stop_step");
	/* srun's exit 1 follows the refusal: the stop's own doing, not a crash */
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED }), SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(attempt_ended:launch_refused) journal(run_ended:launch_refused) "
			   "report(launch_refused)");
	CHECK_STR(report_text(&r), WHY);
	CHECK_INT(sup_machine_count(&r.m, SUP_HOST_EXCLUDED), 0);
	CHECK_INT(r.m.restarts, 0);
	done(&r);
}

/* A signal read before the refusal: the run is cancelled (said first), the refusal noted. */
TEST(machine_refused_while_stopping_for_a_signal_is_cancelled)
{
	struct run r;
	launching(&r);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CANCEL, .text = "signal 15" }),
		  SUP_STOPPING);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_LAUNCH_REFUSED, .text = WHY }),
		  SUP_STOPPING);
	CHECK_STR(r.d.buf, "journal(event:launch_refused)");
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED }), SUP_FAILED);
	CHECK_CONTAINS(r.d.buf, "report(cancelled)");
	done(&r);
}

/* Stopping for anything else (a startup timeout's stop, srun's death read with it): the stop
 * ends the run launch_refused, not in checks and a relaunch that srun would refuse again. */
TEST(machine_refused_while_stopping_for_a_crash_ends_the_run)
{
	struct run r;
	launching(&r);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 }),
		  SUP_STOPPING);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_LAUNCH_REFUSED, .text = WHY }),
		  SUP_STOPPING);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED }), SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(attempt_ended:crash) journal(run_ended:launch_refused) "
			   "report(launch_refused)");
	CHECK_NOT_CONTAINS(r.d.buf, "run_checks");
	done(&r);
}

/* Group testing after two unexplained failures: the smoke step refused is no host's failure. */
TEST(machine_refused_smoke_test_drains_nobody)
{
	struct run r;
	launching(&r);
	r.m.group_test_after = 1;
	feed(&r, (struct sup_event){ .kind = SUP_EV_TASK_EXIT, .code = 1 });
	feed(&r, (struct sup_event){ .kind = SUP_EV_STOPPED });
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_CHECK_DONE }), SUP_GROUP_TESTING);
	CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_LAUNCH_REFUSED, .text = WHY }),
		  SUP_FAILED);
	CHECK_STR(r.d.buf, "journal(event:launch_refused) journal(run_ended:launch_refused) "
			   "report(launch_refused)");
	CHECK_STR(report_text(&r), WHY);
	CHECK_INT(sup_machine_count(&r.m, SUP_HOST_EXCLUDED), 0);
	done(&r);
}

/* Where the loop never feeds it (no step of ours is being created), it changes nothing; done
 * and failed runs ignore it. */
TEST(machine_refused_elsewhere_moves_nothing)
{
	static const enum sup_state quiet[] = { SUP_PREFLIGHT, SUP_RUNNING,
						 SUP_COLLECTING_EVIDENCE, SUP_CHECKING,
						 SUP_RELAUNCHING, SUP_DONE, SUP_FAILED };
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++) {
		struct run r;
		launching(&r);
		r.m.state = quiet[i];
		CHECK_INT(feed(&r, (struct sup_event){ .kind = SUP_EV_LAUNCH_REFUSED, .text = WHY }),
			  quiet[i]);
		CHECK(!strstr(r.d.buf, "drain") && !strstr(r.d.buf, "report") &&
		      !strstr(r.d.buf, "stop_step"));
		CHECK(!sup_machine_cell_reachable(quiet[i], SUP_EV_LAUNCH_REFUSED));
		done(&r);
	}
	CHECK(sup_machine_cell_reachable(SUP_LAUNCHING, SUP_EV_LAUNCH_REFUSED));
	CHECK(sup_machine_cell_reachable(SUP_STOPPING, SUP_EV_LAUNCH_REFUSED));
	CHECK(sup_machine_cell_reachable(SUP_GROUP_TESTING, SUP_EV_LAUNCH_REFUSED));
	CHECK_STR(sup_event_name(SUP_EV_LAUNCH_REFUSED), "launch_refused");
	CHECK_STR(sup_fault_name(SUP_FAULT_LAUNCH_REFUSED), "launch_refused");
}

/* Run again after a refusal (the same run directory, the command now asking for what the
 * allocation holds): it goes on with a fresh preflight, as a cancelled run does. */
TEST(machine_refused_run_goes_on_when_run_again)
{
	const char *text = "{\"kind\":\"run_started\",\"attempt\":0}\n"
			   "{\"kind\":\"attempt_started\",\"attempt\":0,\"restarts\":0}\n"
			   "{\"kind\":\"event\",\"attempt\":0,\"class\":\"launch_refused\"}\n"
			   "{\"kind\":\"attempt_ended\",\"attempt\":0,\"outcome\":\"launch_refused\"}\n"
			   "{\"kind\":\"run_ended\",\"attempt\":0,\"outcome\":\"launch_refused\"}\n";
	struct journal_replay jr;
	journal_replay_text(text, strlen(text), &jr);
	struct run r;
	memset(&r, 0, sizeof(r));
	strbuf_init(&r.d, 0);
	sup_machine_init(&r.m, 1, 3);
	sup_machine_resume(&r.m, &jr, &r.a);
	describe(&r.a, 0, &r.d);
	CHECK_STR(r.d.buf, "journal(event:supervisor_restart) preflight");
	CHECK_INT(r.m.state, SUP_PREFLIGHT);
	CHECK_INT(r.m.restarts, 0);
	done(&r);
	journal_replay_release(&jr);
}
