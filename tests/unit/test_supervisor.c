/*
 * test_supervisor.c: `vigil run`'s supervisor (supervise_in) in virtual time, in a fake world
 * (src/sim/world.h): no srun, no Slurm, no process, a run of minutes in milliseconds. Every
 * fault class of the real-Slurm end-to-end tests (test_run_e2e.c), and the races that real
 * time cannot reach reliably: a node lost during a stop, a signal during a stop, two faults
 * in one poll, a fault during group testing, a kill -9 after every journal record and the
 * resume. Each run asserts what a user sees: the outcome line, the exit code, the journal's
 * records, the hosts excluded and drained with their reason.
 *
 * The last test runs every scenario again and checks that together they feed the machine
 * every (state, event) cell its table marks reachable (machine.h: not "unexpected").
 */
#include "../harness.h"
#include "../../src/sim/world.h"
#include "../../src/lib/fileio.h"
#include "../../src/supervise/machine.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct sc {
	struct fakeworld fw;
	struct sup_options o;
	char run_dir[700];
	int rc;
	struct strbuf err, journal;
};

static unsigned cover[SUP_STATE_NR][SUP_EVENT_NR];

static void sc_init(struct sc *r, const char *name, size_t hosts, unsigned spares)
{
	memset(r, 0, sizeof(*r));
	fw_init(&r->fw, hosts, 2);
	snprintf(r->run_dir, sizeof(r->run_dir), "%s/run-%s", test_memory_tmpdir(), name);
	fw_options(&r->fw, &r->o, r->run_dir, spares);
	strbuf_init(&r->err, 0);
	strbuf_init(&r->journal, 0);
}

static void read_journal(struct sc *r)
{
	char p[800];
	snprintf(p, sizeof(p), "%s/journal.jsonl", r->run_dir);
	strbuf_reset(&r->journal);
	(void)read_file_bounded(p, &r->journal, 64u << 20, NULL);
}

static int sc_run(struct sc *r)
{
	strbuf_reset(&r->err);
	r->rc = supervise_in(&r->o, &r->fw.w, &r->err);
	read_journal(r);
	for (int s = 0; s < SUP_STATE_NR; s++)
		for (int e = 0; e < SUP_EVENT_NR; e++)
			cover[s][e] += r->fw.hit[s][e];
	return r->rc;
}

static void sc_release(struct sc *r)
{
	fw_release(&r->fw);
	strbuf_release(&r->err);
	strbuf_release(&r->journal);
}

/* The journal holds a record with every one of these fragments, in one line. */
static bool journal_line(const struct sc *r, const char *a, const char *b)
{
	for (const char *p = r->journal.buf; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = xstrndup(p, len);
		bool ok = strstr(line, a) && (!b || strstr(line, b));
		free(line);
		if (ok)
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

#define CHECK_JOURNAL(r, a, b) CHECK_MSG(journal_line(r, a, b), "no journal line with %s %s:\n%s", \
					 a, b ? b : "", (r)->journal.buf)

/* ---- the scenarios ---- */

static void sc_undisturbed(struct sc *r)
{
	sc_init(r, "undisturbed", 4, 1);
	sc_run(r);
}

static void sc_crash(struct sc *r)
{
	sc_init(r, "crash", 4, 1);
	fw_fault(&r->fw, 40, FW_CRASH, "n2")->code = 1;
	sc_run(r);
}

static void sc_hang(struct sc *r)
{
	sc_init(r, "hang", 4, 1);
	fw_fault(&r->fw, 50, FW_HANG, NULL);
	snprintf(r->fw.evidence_sick, sizeof(r->fw.evidence_sick), "n3");
	r->fw.diagnose_hang = "{\"summary\":\"rank 4 never entered all_reduce #812\","
			      "\"source\":\"recorder\",\"recorder\":{\"culprits\":[{\"rank\":4}]}}";
	sc_run(r);
}

static void sc_startup_hang(struct sc *r)
{
	sc_init(r, "startup", 3, 1);
	r->o.detect.startup_timeout_s = 60;
	r->fw.startup_s = 1000; /* the first attempt never prints a step */
	fw_fault(&r->fw, 0, FW_HANG, NULL);
	sc_run(r);
}

static void sc_sick(struct sc *r)
{
	sc_init(r, "sick", 4, 1);
	fw_fault(&r->fw, 45, FW_SICK, "n2");
	sc_run(r);
}

static void sc_lost(struct sc *r)
{
	sc_init(r, "lost", 4, 1);
	fw_fault(&r->fw, 45, FW_LOST, "n3");
	sc_run(r);
}

static void sc_silent(struct sc *r)
{
	sc_init(r, "silent", 4, 1);
	r->fw.total_steps = 200;
	fw_fault(&r->fw, 45, FW_SILENT, "n1");
	sc_run(r);
}

static void sc_slow(struct sc *r)
{
	sc_init(r, "slow", 4, 1);
	r->o.detect.slow_factor = 2;
	r->o.detect.slow_steps = 3;
	r->fw.total_steps = 100;
	fw_fault(&r->fw, 40, FW_SLOW, "n3")->factor = 5;
	snprintf(r->fw.evidence_sick, sizeof(r->fw.evidence_sick), "n3");
	sc_run(r);
}

/* Two crashes no check explains: group testing finds the host that fails the smoke test. */
static void sc_group(struct sc *r)
{
	sc_init(r, "group", 4, 1);
	fw_host(&r->fw, "n2")->bad_smoke = true;
	fw_fault(&r->fw, 40, FW_CRASH, "n1");
	fw_fault(&r->fw, 100, FW_CRASH, "n1");
	sc_run(r);
}

static void sc_preflight_short(struct sc *r)
{
	sc_init(r, "short", 3, 0);
	fw_fault(&r->fw, 0, FW_SICK, "n2");
	sc_run(r);
}

static void sc_budget(struct sc *r)
{
	sc_init(r, "budget", 3, 0);
	r->o.max_restarts = 1;
	fw_fault(&r->fw, 40, FW_CRASH, "n1");
	fw_fault(&r->fw, 100, FW_CRASH, "n1");
	sc_run(r);
}

static void sc_cancel(struct sc *r)
{
	sc_init(r, "cancel", 3, 0);
	fw_fault(&r->fw, 50, FW_SIGNAL, NULL)->code = SIGTERM;
	sc_run(r);
}

/* SIGUSR1: the attempt that runs finishes; a crash after it is not restarted. */
static void sc_no_restart(struct sc *r)
{
	sc_init(r, "usr1", 3, 0);
	fw_fault(&r->fw, 30, FW_SIGNAL, NULL)->code = SIGUSR1;
	fw_fault(&r->fw, 60, FW_CRASH, "n2");
	sc_run(r);
}

/* SIGUSR1 while the next attempt waits: no relaunch. */
static void sc_no_restart_waiting(struct sc *r)
{
	sc_init(r, "usr1-wait", 3, 0);
	r->o.restart_delay_s = 30;
	fw_fault(&r->fw, 40, FW_CRASH, "n2");
	fw_fault(&r->fw, 50, FW_SIGNAL, NULL)->code = SIGUSR1;
	sc_run(r);
}

/* SIGTERM during the stop of a crashed attempt: the run ends there, no checks first. */
static void sc_signal_in_stop(struct sc *r)
{
	sc_init(r, "sigstop", 4, 1);
	r->fw.raise_in[FW_IN_STOP].sig = SIGTERM;
	r->fw.raise_in[FW_IN_STOP].nth = 1;
	fw_fault(&r->fw, 40, FW_CRASH, "n2");
	sc_run(r);
}

/* Two tasks die and a node fails, all in one poll: one recovery, the lost node excluded. */
static void sc_two_in_one_poll(struct sc *r)
{
	sc_init(r, "two", 4, 1);
	snprintf(fw_fault(&r->fw, 40, FW_LINES, NULL)->text, 512,
		 "srun: error: n3: task 4: Killed\nsrun: error: n3: task 5: Killed\n"
		 "srun: error: Node failure on n3\n");
	fw_fault(&r->fw, 40, FW_LOST, "n3");
	sc_run(r);
}

/* A node lost while the step of a hang is being stopped (seen by the checks after it). */
static void sc_lost_during_stop(struct sc *r)
{
	sc_init(r, "lost-stop", 4, 1);
	fw_fault(&r->fw, 50, FW_HANG, NULL);
	/* the hang is seen at 50 + 30 s; stacks take 5 s, the stop 3 s */
	fw_fault(&r->fw, 86.5, FW_LOST, "n2");
	sc_run(r);
}

/* A host turns sick while the evidence of a hang is being collected, and a late step comes. */
static void sc_sick_in_evidence(struct sc *r)
{
	sc_init(r, "sick-evidence", 4, 1);
	fw_fault(&r->fw, 50, FW_HANG, NULL);
	snprintf(fw_fault(&r->fw, 79.5, FW_LINES, NULL)->text, 512,
		 "srun: error: n4: task 6: Exited with exit code 1\n");
	sc_run(r);
}

/* A fault during group testing: a host turns sick while the smoke runs go on. */
static void sc_fault_in_group(struct sc *r)
{
	sc_init(r, "group-fault", 5, 2);
	fw_host(&r->fw, "n2")->bad_smoke = true;
	fw_fault(&r->fw, 40, FW_CRASH, "n1");
	fw_fault(&r->fw, 100, FW_CRASH, "n1");
	fw_fault(&r->fw, 150, FW_SICK, "n4");
	sc_run(r);
}

/* ---- the races: events that meet the machine in a state other than the one they were
 * seen in (several in one poll, a signal during an action, the first step before srun's
 * step id) ---- */

/* A signal during the nth call of an action of a run built by base. */
static void with_signal(struct sc *r, void (*base)(struct sc *, const char *), const char *name,
			int where, unsigned nth, int sig)
{
	base(r, name);
	r->fw.raise_in[where].sig = sig;
	r->fw.raise_in[where].nth = nth;
	sc_run(r);
}

static void base_plain(struct sc *r, const char *name)
{
	sc_init(r, name, 4, 1);
}

static void base_crash(struct sc *r, const char *name)
{
	sc_init(r, name, 4, 1);
	fw_fault(&r->fw, 40, FW_CRASH, "n2");
}

static void base_group(struct sc *r, const char *name)
{
	sc_init(r, name, 4, 1);
	fw_host(&r->fw, "n2")->bad_smoke = true;
	fw_fault(&r->fw, 40, FW_CRASH, "n1");
	fw_fault(&r->fw, 100, FW_CRASH, "n1");
}

static void base_budget(struct sc *r, const char *name)
{
	sc_init(r, name, 3, 0);
	r->o.max_restarts = 0;
	fw_fault(&r->fw, 40, FW_CRASH, "n1");
}

static void base_hang(struct sc *r, const char *name)
{
	sc_init(r, name, 4, 1);
	fw_fault(&r->fw, 50, FW_HANG, NULL);
}

/* A step id that comes late: the launch is still "launching" for a minute. */
static void base_late_id(struct sc *r, const char *name)
{
	sc_init(r, name, 4, 1);
	r->fw.id_delay = 60;
	r->fw.startup_s = 1000;
}

static void sc_sig_preflight(struct sc *r)
{
	with_signal(r, base_plain, "sig-preflight", FW_IN_CHECK, 1, SIGTERM);
}
static void sc_usr1_preflight(struct sc *r)
{
	with_signal(r, base_plain, "usr1-preflight", FW_IN_CHECK, 1, SIGUSR1);
}
static void sc_sig_checks(struct sc *r)
{
	with_signal(r, base_crash, "sig-checks", FW_IN_CHECK, 2, SIGTERM);
}
static void sc_usr1_checks(struct sc *r)
{
	with_signal(r, base_crash, "usr1-checks", FW_IN_CHECK, 2, SIGUSR1);
}
static void sc_usr1_stop(struct sc *r)
{
	with_signal(r, base_crash, "usr1-stop", FW_IN_STOP, 1, SIGUSR1);
}
static void sc_sig_smoke(struct sc *r)
{
	with_signal(r, base_group, "sig-smoke", FW_IN_SMOKE, 1, SIGTERM);
}
static void sc_usr1_smoke(struct sc *r)
{
	with_signal(r, base_group, "usr1-smoke", FW_IN_SMOKE, 1, SIGUSR1);
}
static void sc_sig_evidence(struct sc *r)
{
	with_signal(r, base_hang, "sig-evidence", FW_IN_EVIDENCE, 1, SIGTERM);
}
static void sc_usr1_evidence(struct sc *r)
{
	with_signal(r, base_hang, "usr1-evidence", FW_IN_EVIDENCE, 1, SIGUSR1);
}
static void sc_sig_report_done(struct sc *r)
{
	with_signal(r, base_plain, "sig-report-done", FW_IN_REPORT, 1, SIGTERM);
}
static void sc_usr1_report_done(struct sc *r)
{
	with_signal(r, base_plain, "usr1-report-done", FW_IN_REPORT, 1, SIGUSR1);
}
static void sc_sig_report_failed(struct sc *r)
{
	with_signal(r, base_budget, "sig-report-failed", FW_IN_REPORT, 1, SIGTERM);
}
static void sc_usr1_report_failed(struct sc *r)
{
	with_signal(r, base_budget, "usr1-report-failed", FW_IN_REPORT, 1, SIGUSR1);
}

static void sc_sig_waiting(struct sc *r)
{
	sc_init(r, "sig-wait", 3, 0);
	r->o.restart_delay_s = 30;
	fw_fault(&r->fw, 40, FW_CRASH, "n2");
	fw_fault(&r->fw, 50, FW_SIGNAL, NULL)->code = SIGTERM;
	sc_run(r);
}

/* The first step before srun's step id: launching -> running by the step, then launched. */
static void sc_step_before_id(struct sc *r)
{
	base_late_id(r, "step-before-id");
	r->fw.startup_s = 5;
	sc_run(r);
}

static void sc_lost_launching(struct sc *r)
{
	base_late_id(r, "lost-launching");
	fw_fault(&r->fw, 10, FW_LOST, "n2");
	sc_run(r);
}

static void sc_crash_launching(struct sc *r)
{
	base_late_id(r, "crash-launching");
	fw_fault(&r->fw, 10, FW_CRASH, "n2");
	sc_run(r);
}

static void sc_sick_launching(struct sc *r)
{
	base_late_id(r, "sick-launching");
	r->o.detect.startup_timeout_s = 600;
	fw_fault(&r->fw, 5, FW_SICK, "n2");
	sc_run(r);
}

static void sc_hang_launching(struct sc *r)
{
	base_late_id(r, "hang-launching");
	r->fw.id_delay = 1000;
	r->o.detect.startup_timeout_s = 40;
	sc_run(r);
}

static void sc_sig_launching(struct sc *r)
{
	base_late_id(r, "sig-launching");
	fw_fault(&r->fw, 5, FW_SIGNAL, NULL)->code = SIGTERM;
	sc_run(r);
}

static void sc_usr1_launching(struct sc *r)
{
	base_late_id(r, "usr1-launching");
	r->fw.startup_s = 5;
	fw_fault(&r->fw, 4, FW_SIGNAL, NULL)->code = SIGUSR1;
	sc_run(r);
}

/* The slowdown's scenario (sc_slow: step 22 completes it) with lines in the same poll. */
static void base_slow(struct sc *r, const char *name)
{
	sc_init(r, name, 4, 1);
	r->o.detect.slow_factor = 2;
	r->o.detect.slow_steps = 3;
	fw_fault(&r->fw, 40, FW_SLOW, "n3")->factor = 5;
}

static void slow_with_lines(struct sc *r, const char *name, const char *text)
{
	base_slow(r, name);
	struct fw_fault *f = fw_fault(&r->fw, 0, FW_LINES, NULL);
	f->at_step = 22;
	snprintf(f->text, sizeof(f->text), "%s", text);
	sc_run(r);
}

static void sc_step_in_evidence(struct sc *r)
{
	slow_with_lines(r, "step-evidence", "0: step 23 loss 0.5\n");
}
static void sc_exit_in_evidence(struct sc *r)
{
	slow_with_lines(r, "exit-evidence", "srun: error: n1: task 0: Exited with exit code 1\n");
}
static void sc_lost_in_evidence(struct sc *r)
{
	slow_with_lines(r, "lost-evidence", "srun: error: Node failure on n2\n");
}

/* The slowdown and a periodic check that finds a host sick, in one poll. */
static void sc_sick_with_slow(struct sc *r)
{
	base_slow(r, "sick-with-slow");
	r->o.check_interval_s = r->o.node_poll_s = 10;
	r->fw.hold_watch_step = 22;
	fw_fault(&r->fw, 0, FW_SICK, "n2")->at_step = 22;
	sc_run(r);
}

/* A task's death and a periodic check that finds a host sick, in one poll. */
static void sc_sick_with_exit(struct sc *r)
{
	sc_init(r, "sick-with-exit", 4, 1);
	r->o.check_interval_s = r->o.node_poll_s = 10;
	r->fw.hold_watch_step = 15;
	fw_fault(&r->fw, 0, FW_SICK, "n2")->at_step = 15;
	struct fw_fault *f = fw_fault(&r->fw, 0, FW_LINES, NULL);
	f->at_step = 15;
	snprintf(f->text, sizeof(f->text), "srun: error: n1: task 1: Killed\n");
	sc_run(r);
}

/* A task's death, then a late step line that is slow, in one poll (slow_steps 1: a slowdown). */
static void slow_after_exit(struct sc *r, const char *name, unsigned slow_steps)
{
	sc_init(r, name, 4, 1);
	r->o.detect.slow_steps = slow_steps;
	fw_fault(&r->fw, 30.5, FW_HANG, NULL); /* step 9 at 30 s is the last on time */
	snprintf(fw_fault(&r->fw, 34, FW_LINES, NULL)->text, 512,
		 "srun: error: n1: task 1: Killed\n0: step 10 loss 0.4\n");
	sc_run(r);
}
static void sc_slow_step_in_stop(struct sc *r)
{
	slow_after_exit(r, "slowstep-stop", 5);
}
static void sc_slow_in_stop(struct sc *r)
{
	slow_after_exit(r, "slow-stop", 1);
}

/* The whole run slower (no host named by the stacks): it goes on, not restarted. */
static void sc_slow_everywhere(struct sc *r)
{
	sc_init(r, "slow-everywhere", 4, 1);
	r->o.detect.slow_factor = 2;
	r->o.detect.slow_steps = 3;
	fw_fault(&r->fw, 40, FW_SLOW, NULL)->factor = 3;
	sc_run(r);
}

/* The 6 ranks' digest lines of step (3 hosts in the run, 2 ranks each), rank odd differing. */
static void digest_lines(char *out, size_t size, unsigned step, int odd, const char *prefix)
{
	size_t n = (size_t)snprintf(out, size, "%s", prefix);
	for (int k = 0; k < 6 && n < size; k++)
		n += (size_t)snprintf(out + n, size - n, "%d: vigil-digest step=%u group=0 size=6 "
				      "digest=%s\n", k, step, k == odd ? "bad" : "a1");
}

static struct fw_fault *digests_at(struct sc *r, double at, uint64_t at_step, unsigned step,
				   int odd, const char *prefix)
{
	struct fw_fault *f = fw_fault(&r->fw, at, FW_LINES, NULL);
	f->at_step = at_step;
	digest_lines(f->text, sizeof(f->text), step, odd, prefix);
	return f;
}

/* Rank 5 (n3) holds other parameters than its 5 replicas after step 30; n3 fails its
 * determinism test alone (the fake's bad smoke stands in for it). */
static void sc_sdc(struct sc *r)
{
	sc_init(r, "sdc", 4, 1);
	fw_host(&r->fw, "n3")->bad_smoke = true;
	digests_at(r, 0, 30, 30, 5, "");
	sc_run(r);
}

/* The same divergence, and the host passes its test: the step is to blame, not the host. */
static void sc_sdc_not_confirmed(struct sc *r)
{
	sc_init(r, "sdc-pass", 4, 1);
	digests_at(r, 0, 30, 30, 5, "");
	sc_run(r);
}

/* Digests before the first step, while srun's step id is not known yet. */
static void sc_sdc_launching(struct sc *r)
{
	base_late_id(r, "sdc-launching");
	digests_at(r, 10, 0, 1, 2, "");
	sc_run(r);
}

/* Digests that differ, read in the poll that completes a slowdown (stacks being taken). */
static void sc_sdc_in_evidence(struct sc *r)
{
	base_slow(r, "sdc-evidence");
	digests_at(r, 0, 22, 22, 1, "");
	sc_run(r);
}

/* Digests that differ, read right after a task died (the step being stopped). */
static void sc_sdc_in_stop(struct sc *r)
{
	sc_init(r, "sdc-stop", 4, 1);
	digests_at(r, 0, 12, 12, 4, "srun: error: n1: task 1: Killed\n");
	sc_run(r);
}

/* srun refuses the attempt's step (the allocation holds fewer tasks a node than asked), after
 * its retry line; with a signal read in the same poll; and a smoke step refused. */
#define REFUSAL "srun: error: Unable to create step for job 4127: More processors requested than permitted\n"
static void refused_at(struct sc *r, const char *name, bool signal)
{
	sc_init(r, name, 2, 1);
	snprintf(fw_fault(&r->fw, 2.5, FW_LINES, NULL)->text, 512, "srun: Job 4127 step creation "
		 "temporarily disabled, retrying (Requested nodes are busy)\n" REFUSAL);
	if (signal)
		fw_fault(&r->fw, 2.5, FW_SIGNAL, NULL)->code = SIGTERM; /* launched at 2 s */
	sc_run(r);
}
static void sc_refused(struct sc *r)
{
	refused_at(r, "refused", false);
}
static void sc_refused_in_stop(struct sc *r)
{
	refused_at(r, "refused-stop", true);
}
static void sc_refused_smoke(struct sc *r)
{
	sc_init(r, "refused-smoke", 4, 1);
	snprintf(r->fw.smoke_refused, sizeof(r->fw.smoke_refused),
		 "Memory required by task is not available");
	fw_fault(&r->fw, 40, FW_CRASH, "n1");
	fw_fault(&r->fw, 100, FW_CRASH, "n1");
	sc_run(r);
}

static void (*const scenarios[])(struct sc *) = {
	sc_undisturbed, sc_crash, sc_hang, sc_startup_hang, sc_sick, sc_lost, sc_silent, sc_slow,
	sc_group, sc_preflight_short, sc_budget, sc_cancel, sc_no_restart, sc_no_restart_waiting,
	sc_signal_in_stop, sc_two_in_one_poll, sc_lost_during_stop, sc_sick_in_evidence,
	sc_fault_in_group, sc_sig_preflight, sc_usr1_preflight, sc_sig_checks, sc_usr1_checks,
	sc_usr1_stop, sc_sig_smoke, sc_usr1_smoke, sc_sig_evidence, sc_usr1_evidence,
	sc_sig_report_done, sc_usr1_report_done, sc_sig_report_failed, sc_usr1_report_failed,
	sc_sig_waiting, sc_step_before_id, sc_lost_launching, sc_sick_launching,
	sc_hang_launching, sc_sig_launching, sc_usr1_launching, sc_step_in_evidence,
	sc_exit_in_evidence, sc_lost_in_evidence, sc_sick_with_slow, sc_sick_with_exit,
	sc_slow_step_in_stop, sc_slow_in_stop, sc_crash_launching, sc_slow_everywhere,
	sc_sdc, sc_sdc_not_confirmed, sc_sdc_launching, sc_sdc_in_evidence, sc_sdc_in_stop,
	sc_refused, sc_refused_in_stop, sc_refused_smoke,
};

/* ---- what the user sees ---- */

TEST(supervisor_vt_undisturbed)
{
	struct sc r;
	sc_undisturbed(&r);
	CHECK_INT(r.rc, 0);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: done: every task ended with status 0 (1 attempt, 0 restarts, 0 hosts excluded;");
	CHECK_JOURNAL(&r, "\"kind\":\"run_ended\"", "\"outcome\":\"done\"");
	CHECK_INT(r.fw.launches, 1);
	CHECK_INT(r.fw.drains, 0);
	sc_release(&r);
}

/* --hosts: the run keeps to the hosts named (the others of the allocation are left alone:
 * qualify's train groups run side by side in one allocation), its spares among them; a host
 * named that the allocation lacks is refused before anything starts. */
TEST(supervisor_vt_hosts_narrow_the_allocation)
{
	struct sc r;
	sc_init(&r, "hosts", 6, 0);
	r.o.hosts = "n[4-6]";
	r.o.nodes = 2;
	r.o.spares = 1;
	fw_fault(&r.fw, 45, FW_SICK, "n4");
	sc_run(&r);
	CHECK_MSG(r.rc == 0, "exit %d: %s\n%s", r.rc, r.err.buf, r.fw.out.buf);
	CHECK_INT(r.fw.launches, 2);
	CHECK_INT((int)r.fw.nr_step_hosts, 2);
	for (size_t i = 0; i < r.fw.nr_step_hosts; i++)
		CHECK_MSG(strcmp(r.fw.step_hosts[i], "n4") > 0, "step on %s", r.fw.step_hosts[i]);
	CHECK_JOURNAL(&r, "\"kind\":\"run_ended\"", "\"outcome\":\"done\"");
	CHECK_CONTAINS(r.journal.buf, "\"n5\""); /* hosts are named so in the journal */
	CHECK_NOT_CONTAINS(r.journal.buf, "\"n1\"");
	CHECK_NOT_CONTAINS(r.journal.buf, "\"n3\"");
	sc_release(&r);

	sc_init(&r, "hosts-out", 4, 0);
	r.o.hosts = "n[3-5]";
	r.o.nodes = 2;
	sc_run(&r);
	CHECK_INT(r.rc, 2);
	CHECK_CONTAINS(r.err.buf, "--hosts 'n[3-5]' names 3 hosts, 2 of them in the allocation (n[1-4])");
	CHECK_INT(r.fw.launches, 0);
	sc_release(&r);
}

/* A check round that fell back to one srun a node says so in the journal, from the preflight
 * and from the periodic watch (which may run in another process) alike. */
TEST(supervisor_vt_check_round_fallback_is_journaled)
{
	struct sc r;
	sc_init(&r, "note", 3, 0);
	r.fw.check_note = "the step failed; asked again one srun a node";
	sc_run(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"check_round\"", "asked again one srun a node");
	unsigned n = 0;
	for (const char *p = r.journal.buf; (p = strstr(p, "\"class\":\"check_round\"")); p++)
		n++;
	CHECK_MSG(n >= 2, "%u check_round records", n); /* the preflight's and a watch's */
	sc_release(&r);
}

TEST(supervisor_vt_crash_relaunches_from_the_checkpoint)
{
	struct sc r;
	sc_crash(&r);
	CHECK_INT(r.rc, 0);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: done: every task ended with status 0 (2 attempts, 1 restart, 0 hosts excluded;");
	CHECK_JOURNAL(&r, "\"class\":\"crash\"", "\"host\":\"n2\"");
	CHECK_JOURNAL(&r, "\"class\":\"checks\"", "n2 healthy");
	CHECK_INT(r.fw.launches, 2);
	CHECK_INT(r.fw.drains, 0); /* one crash no check explains blames nobody */
	sc_release(&r);
}

TEST(supervisor_vt_hang_excludes_the_stopped_host)
{
	struct sc r;
	sc_hang(&r);
	CHECK_INT(r.rc, 0);
	CHECK_CONTAINS(r.fw.out.buf, "1 host excluded");
	CHECK_JOURNAL(&r, "\"class\":\"hang\"", NULL);
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n3\"");
	CHECK_JOURNAL(&r, "\"class\":\"diagnosis\"", "hang (recorder): rank 4 never entered");
	CHECK_INT(r.fw.evidences, 1);
	CHECK_INT(r.fw.drains, 1);
	CHECK(fw_host(&r.fw, "n3")->drained);
	CHECK_CONTAINS(fw_host(&r.fw, "n3")->drain_reason, "vigil");
	sc_release(&r);
}

/* A replica whose parameters differ: the step stopped, the host tested alone and drained, the
 * spare in its place, the relaunch told to resume from before the first differing step. */
TEST(supervisor_vt_diverged_replica_is_tested_drained_and_resumed_before)
{
	struct sc r;
	sc_sdc(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"replica_diverged\"",
		      "step 30 group 0: rank 5 (n3) digest 0000000000000bad; 5 of the 6 ranks");
	CHECK_JOURNAL(&r, "\"class\":\"sdc\"", "\"host\":\"n3\"");
	CHECK_JOURNAL(&r, "\"class\":\"group_test\"", "[n3] determinism test failed");
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "failed the determinism test alone");
	CHECK_JOURNAL(&r, "\"class\":\"resume_before\"", "before step 30");
	CHECK(fw_host(&r.fw, "n3")->drained);
	CHECK_INT(r.fw.launches, 2);
	CHECK_INT(r.fw.smokes, 1);
	sc_release(&r);

	/* the host passes: it stays, and the relaunch still resumes before step 30 */
	sc_sdc_not_confirmed(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"sdc_not_confirmed\"", "n3 passed the determinism test");
	CHECK_JOURNAL(&r, "\"class\":\"resume_before\"", "before step 30");
	CHECK(!fw_host(&r.fw, "n3")->drained);
	CHECK_INT(r.fw.drains, 0);
	sc_release(&r);

	/* the test cannot tell (exit 3: a lone GPU with no reference digest): the host stays */
	sc_init(&r, "sdc-unknown", 4, 1);
	fw_host(&r.fw, "n3")->smoke_code = 3;
	digests_at(&r, 0, 30, 30, 5, "");
	sc_run(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"group_test\"", "[n3] determinism test could not tell");
	CHECK_JOURNAL(&r, "\"class\":\"sdc_not_confirmed\"", "could not tell whether n3");
	CHECK_INT(r.fw.drains, 0);
	sc_release(&r);
}

TEST(supervisor_vt_startup_timeout)
{
	struct sc r;
	sc_startup_hang(&r);
	CHECK_INT(r.rc, 1);
	CHECK_JOURNAL(&r, "\"class\":\"startup_timeout\"", NULL);
	CHECK_CONTAINS(r.fw.err.buf, "startup timeout: no step 60.");
	sc_release(&r);
}

TEST(supervisor_vt_sick_host_drained_and_replaced)
{
	struct sc r;
	sc_sick(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"sick\"", "\"host\":\"n2\"");
	CHECK_JOURNAL(&r, "\"class\":\"replaced\"", "n2 replaced by the spare n4");
	CHECK(fw_host(&r.fw, "n2")->drained);
	CHECK_CONTAINS(fw_host(&r.fw, "n2")->drain_reason, "Xid 79");
	sc_release(&r);
}

TEST(supervisor_vt_lost_node)
{
	struct sc r;
	sc_lost(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"lost\"", "\"host\":\"n3\"");
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n3\"");
	sc_release(&r);
}

TEST(supervisor_vt_unreachable_twice_is_lost)
{
	struct sc r;
	sc_silent(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"unreachable\"", "\"host\":\"n1\"");
	CHECK_JOURNAL(&r, "\"class\":\"lost\"", "unreachable in 2 checks in a row");
	/* it stopped answering at the first check that got no answer, not when it was judged */
	CHECK_JOURNAL(&r, "\"class\":\"lost\"", "\"happened\"");
	sc_release(&r);
}

/* A check that gets an answer again ends the streak: two unreachable checks with a healthy
 * one between are not "unreachable in 2 checks in a row" (the watch writes a healthy host's
 * line only then, sup_watch.c: without it the streak would run on and the node be lost). */
TEST(supervisor_vt_unreachable_streak_ends_when_the_host_answers)
{
	struct sc r;
	sc_init(&r, "silent-twice", 4, 1);
	r.fw.total_steps = 200;
	fw_fault(&r.fw, 45, FW_SILENT, "n1");
	fw_fault(&r.fw, 70, FW_HEAL, "n1");
	fw_fault(&r.fw, 105, FW_SILENT, "n1");
	fw_fault(&r.fw, 130, FW_HEAL, "n1");
	sc_run(&r);
	CHECK_INT(r.rc, 0);
	size_t n = 0;
	for (const char *p = r.journal.buf; (p = strstr(p, "\"class\":\"unreachable\"")); p++)
		n++;
	CHECK_MSG(n == 2, "%zu unreachable checks, want 2:\n%s", n, r.journal.buf);
	CHECK_MSG(!strstr(r.journal.buf, "\"class\":\"lost\""), "n1 was called lost:\n%s",
		  r.journal.buf);
	sc_release(&r);
}

TEST(supervisor_vt_slowdown)
{
	struct sc r;
	sc_slow(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"slow\"", "slow steps in a row");
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n3\"");
	sc_release(&r);
}

TEST(supervisor_vt_slowdown_nobody_explains_goes_on)
{
	struct sc r;
	sc_slow_everywhere(&r);
	CHECK_INT(r.rc, 0);
	CHECK_INT(r.fw.launches, 1);
	CHECK_INT(r.fw.stops, 0);
	CHECK_INT(r.fw.evidences, 1);
	CHECK_JOURNAL(&r, "\"class\":\"slow_unexplained\"", "the run goes on");
	/* the next slowdowns of the same run are noted, not investigated again */
	CHECK_JOURNAL(&r, "\"class\":\"slow_again\"", NULL);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: done: every task ended with status 0 (1 attempt");
	sc_release(&r);
}

TEST(supervisor_vt_group_testing_finds_the_bad_host)
{
	struct sc r;
	sc_group(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"group_test\"", "\"host\":\"n2\"");
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n2\"");
	CHECK(r.fw.smokes >= 2);
	sc_release(&r);
}

TEST(supervisor_vt_preflight_short)
{
	struct sc r;
	sc_preflight_short(&r);
	CHECK_INT(r.rc, 1);
	CHECK_INT(r.fw.launches, 0);
	CHECK_JOURNAL(&r, "\"class\":\"preflight\"", "n2 unhealthy");
	sc_release(&r);
}

TEST(supervisor_vt_restart_budget)
{
	struct sc r;
	sc_budget(&r);
	CHECK_INT(r.rc, 1);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: restart_budget_spent");
	sc_release(&r);
}

TEST(supervisor_vt_sigterm_cancels)
{
	struct sc r;
	sc_cancel(&r);
	CHECK_INT(r.rc, 1);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: cancelled: signal 15");
	CHECK_INT(r.fw.stops, 1); /* the step was stopped, nothing left running */
	CHECK_JOURNAL(&r, "\"class\":\"cancel\"", "\"detected\"");
	sc_release(&r);
}

TEST(supervisor_vt_sigusr1_finishes_without_restart)
{
	struct sc r;
	sc_no_restart(&r);
	CHECK_INT(r.rc, 1);
	CHECK_JOURNAL(&r, "\"class\":\"restart_budget_spent\"", "no more restarts");
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: restart_budget_spent");
	CHECK_INT(r.fw.launches, 1);
	sc_release(&r);

	sc_no_restart_waiting(&r);
	CHECK_INT(r.rc, 1);
	CHECK_INT(r.fw.launches, 1);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: restart_budget_spent: signal 10");
	sc_release(&r);
}

TEST(supervisor_vt_sigterm_during_a_stop_ends_the_run_there)
{
	struct sc r;
	sc_signal_in_stop(&r);
	CHECK_INT(r.rc, 1);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: cancelled");
	CHECK_NOT_CONTAINS(r.fw.err.buf, "vigil check on the attempt's"); /* no checks first */
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: cancelled: signal 15");
	CHECK_INT(r.fw.launches, 1);
	sc_release(&r);
}

TEST(supervisor_vt_two_faults_in_one_poll)
{
	struct sc r;
	sc_two_in_one_poll(&r);
	CHECK_INT(r.rc, 0);
	CHECK_INT(r.fw.stops, 1); /* one recovery for all three lines */
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n3\"");
	CHECK_CONTAINS(r.fw.out.buf, "2 attempts, 1 restart, 1 host excluded");
	sc_release(&r);
}

TEST(supervisor_vt_node_lost_during_a_stop)
{
	struct sc r;
	sc_lost_during_stop(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n2\"");
	sc_release(&r);
}

TEST(supervisor_vt_fault_during_group_testing)
{
	struct sc r;
	sc_fault_in_group(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n2\"");
	/* the spare that took n2's place had turned sick meanwhile: seen, replaced in turn */
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n4\"");
	CHECK_CONTAINS(r.fw.out.buf, "2 hosts excluded");
	sc_release(&r);
}

TEST(supervisor_vt_task_death_and_sick_host_in_one_poll)
{
	struct sc r;
	sc_sick_with_exit(&r);
	CHECK_INT(r.rc, 0);
	CHECK_INT(r.fw.stops, 1);
	CHECK_JOURNAL(&r, "\"kind\":\"host_excluded\"", "\"host\":\"n2\"");
	CHECK(fw_host(&r.fw, "n2")->drained);
	sc_release(&r);
}

TEST(supervisor_vt_slowdown_and_task_death_in_one_poll)
{
	struct sc r;
	sc_exit_in_evidence(&r);
	CHECK_INT(r.rc, 0);
	CHECK_INT(r.fw.stops, 1); /* the stacks were taken, then one stop */
	CHECK_INT(r.fw.evidences, 1);
	CHECK_JOURNAL(&r, "\"class\":\"task_exit\"", "while stacks were collected");
	sc_release(&r);
}

TEST(supervisor_vt_signal_during_each_action)
{
	struct sc r;
	void (*const cancels[])(struct sc *) = { sc_sig_preflight, sc_sig_checks, sc_sig_smoke,
						 sc_sig_evidence, sc_sig_waiting, sc_sig_launching };
	for (size_t i = 0; i < sizeof(cancels) / sizeof(cancels[0]); i++) {
		cancels[i](&r);
		CHECK_MSG(r.rc == 1 && strstr(r.fw.out.buf, "vigil run: cancelled: signal 15"),
			  "case %zu: exit %d: %s", i, r.rc, r.fw.out.buf);
		/* nothing started after the signal: the last thing said is the cancel's */
		const char *sig = strstr(r.fw.err.buf, "signal 15 (Terminated)");
		CHECK_MSG(sig && !strstr(sig, ": attempt "), "case %zu: %s", i, r.fw.err.buf);
		sc_release(&r);
	}
	/* after the end: the outcome stays what it was */
	sc_sig_report_done(&r);
	CHECK_INT(r.rc, 0);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: done");
	sc_release(&r);
}

/* ---- kill -9 after every journal record, then the resume ---- */

TEST_TIMEOUT(supervisor_vt_kill9_at_every_journal_record_resumes, 300)
{
	/* how many records (steps included) a short run with one crash writes */
	struct sc r;
	sc_init(&r, "kill9-count", 4, 1);
	r.fw.total_steps = 30;
	r.fw.ckpt_every = 5;
	fw_fault(&r.fw, 30, FW_CRASH, "n2")->code = 1;
	sc_run(&r);
	CHECK_INT(r.rc, 0);
	unsigned total = r.fw.journal_records;
	CHECK(total > 5);
	sc_release(&r);
	for (unsigned k = 1; k <= total; k++) {
		char name[64];
		snprintf(name, sizeof(name), "kill9-%u", k);
		sc_init(&r, name, 4, 1);
		r.fw.total_steps = 30;
		r.fw.ckpt_every = 5;
		fw_fault(&r.fw, 30, FW_CRASH, "n2")->code = 1;
		r.fw.die_after_journal = k;
		r.fw.quiet = true;
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			supervise_in(&r.o, &r.fw.w, &r.err);
			_exit(0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 137, "record %u: status %d", k, st);
		/* the resume: a new supervisor, the same world, the journal as the kill left it */
		r.fw.die_after_journal = 0;
		r.fw.quiet = false;
		r.fw.now += 60;
		sc_run(&r);
		CHECK_MSG(r.rc == 0, "killed after record %u of %u: exit %d: %s", k, total, r.rc,
			  r.fw.out.buf);
		CHECK_MSG(journal_line(&r, "\"kind\":\"run_ended\"", "\"outcome\":\"done\""),
			  "killed after record %u: no done in\n%s", k, r.journal.buf);
		/* the resume says so, and the next attempt has the next number */
		CHECK_MSG(k >= total - 1 || strstr(r.fw.err.buf, "resuming the run in"),
			  "killed after record %u: %s", k, r.fw.err.buf);
		sc_release(&r);
	}
}

/* vigil run killed right after it journaled a divergence: the resumed supervisor still has
 * the next attempt resume before the first differing step. */
TEST(supervisor_vt_divergence_survives_a_kill_9)
{
	struct sc r;
	sc_init(&r, "sdc-kill9", 4, 1);
	digests_at(&r, 0, 30, 30, 5, "");
	/* find the record number of the sdc event in an undisturbed run of the same world */
	sc_run(&r);
	unsigned k = 0, n = 0;
	for (const char *p = r.journal.buf; p && *p && !k;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
		n++;
		if (strstr(line, "\"class\":\"sdc\""))
			k = n; /* one record a line */
		free(line);
		p = nl ? nl + 1 : NULL;
	}
	sc_release(&r);
	CHECK_MSG(k > 0, "no sdc record");
	sc_init(&r, "sdc-kill9b", 4, 1);
	struct fw_fault *lines = digests_at(&r, 0, 30, 30, 5, "");
	r.fw.die_after_journal = k;
	r.fw.quiet = true;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		supervise_in(&r.o, &r.fw.w, &r.err);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 137, "status %d", st);
	read_journal(&r);
	CHECK_JOURNAL(&r, "\"class\":\"sdc\"", "\"step\":30");
	CHECK_MSG(!journal_line(&r, "\"class\":\"resume_before\"", NULL), "resumed already:\n%s",
		  r.journal.buf);
	r.fw.die_after_journal = 0;
	r.fw.quiet = false;
	r.fw.now += 60;
	lines->fired = true; /* the killed run read those lines: only its journal knows now */
	sc_run(&r);
	CHECK_INT(r.rc, 0);
	CHECK_JOURNAL(&r, "\"class\":\"resume_before\"", "before step 30");
	sc_release(&r);
}

/* A step srun refuses is the allocation's fault: the run ends at once, nothing checked after
 * it, nothing drained, no relaunch; the retry line before it is journaled once. */
TEST(supervisor_vt_refused_step_ends_the_run_blaming_nobody)
{
	struct sc r;
	sc_refused(&r);
	CHECK_INT(r.rc, 1);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: launch_refused: srun refused to create the step: "
		       "More processors requested than permitted; the allocation cannot hold this "
		       "step: ask for more CPUs");
	CHECK_JOURNAL(&r, "\"class\":\"launch_refused\"", "More processors requested");
	CHECK_JOURNAL(&r, "\"class\":\"step_pending\"", "(Requested nodes are busy)");
	CHECK_JOURNAL(&r, "\"kind\":\"attempt_ended\"", "\"outcome\":\"launch_refused\"");
	CHECK_JOURNAL(&r, "\"kind\":\"run_ended\"", "\"outcome\":\"launch_refused\"");
	CHECK_MSG(!journal_line(&r, "\"class\":\"crash\"", NULL), "%s", r.journal.buf);
	CHECK_INT(r.fw.launches, 1);
	CHECK_INT(r.fw.drains, 0);
	CHECK_INT(r.fw.smokes, 0);
	CHECK_INT(r.fw.check_rounds, 1); /* the preflight's only */
	sc_release(&r);
	sc_refused_in_stop(&r);
	CHECK_INT(r.rc, 1);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: cancelled");
	CHECK_JOURNAL(&r, "\"class\":\"launch_refused\"", NULL);
	CHECK_INT(r.fw.drains, 0);
	sc_release(&r);
}

/* Group testing whose smoke step srun refuses: the test says nothing of its hosts (unknown),
 * nobody is drained (before: "made the smoke test fail, alone and in every group"). */
TEST(supervisor_vt_refused_smoke_drains_nobody)
{
	struct sc r;
	sc_refused_smoke(&r);
	CHECK_INT(r.rc, 1);
	CHECK_CONTAINS(r.fw.out.buf, "vigil run: launch_refused: srun refused to create the step: "
		       "Memory required by task is not available");
	CHECK_JOURNAL(&r, "\"class\":\"group_test\"", "could not tell (srun refused to create "
		      "its step: Memory required by task is not available)");
	CHECK_JOURNAL(&r, "\"kind\":\"run_ended\"", "\"outcome\":\"launch_refused\"");
	CHECK_MSG(!journal_line(&r, "\"kind\":\"host_excluded\"", NULL), "%s", r.journal.buf);
	CHECK_INT(r.fw.drains, 0);
	CHECK_INT(r.fw.smokes, 1);
	CHECK_INT(r.fw.launches, 2);
	sc_release(&r);
}

/* ---- every reachable cell ---- */

TEST_TIMEOUT(supervisor_vt_every_reachable_cell, 300)
{
	memset(cover, 0, sizeof(cover));
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		struct sc r;
		scenarios[i](&r);
		sc_release(&r);
	}
	unsigned missed = 0, reachable = 0;
	struct strbuf miss = STRBUF_INIT;
	for (int s = 0; s < SUP_STATE_NR; s++)
		for (int e = 0; e < SUP_EVENT_NR; e++) {
			if (!sup_machine_cell_reachable((enum sup_state)s, (enum sup_event_kind)e))
				continue;
			reachable++;
			if (!cover[s][e]) {
				missed++;
				strbuf_addf(&miss, " %s/%s", sup_state_name((enum sup_state)s),
					    sup_event_name((enum sup_event_kind)e));
			}
		}
	CHECK_MSG(!missed, "%u of %u reachable cells never fed:%s", missed, reachable, miss.buf);
	strbuf_release(&miss);
}
