/*
 * test_slurm.c: the Slurm layer without a Slurm: the drain/resume policy cell by cell, the
 * parser of 'scontrol -o show node', node-name refusal, and 'vigil check --slurm' against a fake
 * scontrol that records its argv (metacharacters, a hanging scontrol, ownership). The real Slurm
 * is in test_slurm_e2e.c.
 */
#include "../harness.h"
#include "../../src/slurm/slurm.h"
#include "../../src/agent/cache.h"
#include "../../src/lib/fileio.h"

#include <sys/stat.h>
#include <unistd.h>

static struct slurm_node mknode(const char *state, const char *reason)
{
	struct slurm_node n = { (char *)"n1", (char *)state, slurm_state_flags(state),
				(char *)reason, (char *)"debug", (char *)"" };
	return n;
}

static enum slurm_act act_for(enum verdict v, const char *state, const char *reason,
			      enum slurm_on_unknown ou, struct slurm_decision *d)
{
	struct slurm_policy p = { ou };
	struct slurm_node n = mknode(state, reason);
	slurm_decide(v, "kernel: Xid 79 on GPU 3: fallen off the bus", &n, &p, d);
	CHECK(d->why && *d->why);
	return d->act;
}

TEST(slurm_policy_drains_a_sick_node_with_a_vigil_reason)
{
	struct slurm_decision d;
	CHECK_INT(act_for(VERDICT_UNHEALTHY, "IDLE", "", 0, &d), SLURM_ACT_DRAIN);
	CHECK_STR(d.reason, "vigil: kernel: Xid 79 on GPU 3: fallen off the bus");
	CHECK_INT(act_for(VERDICT_UNHEALTHY, "MIXED", "", 0, &d), SLURM_ACT_DRAIN);
	CHECK_INT(act_for(VERDICT_UNHEALTHY, "ALLOCATED", "", 0, &d), SLURM_ACT_DRAIN);
	/* its own, older reason is brought up to date; the same reason is left alone */
	CHECK_INT(act_for(VERDICT_UNHEALTHY, "IDLE+DRAIN", "vigil: storage: / full", 0, &d),
		  SLURM_ACT_DRAIN);
	CHECK_INT(act_for(VERDICT_UNHEALTHY, "IDLE+DRAIN",
			  "vigil: kernel: Xid 79 on GPU 3: fallen off the bus", 0, &d),
		  SLURM_ACT_NOTHING);
}

TEST(slurm_policy_never_touches_a_node_someone_else_drained)
{
	struct slurm_decision d;
	const char *states[] = { "IDLE+DRAIN", "MIXED+DRAIN", "ALLOCATED+DRAIN" };
	const char *reasons[] = { "admin: bad fan", "", "NHC: check_hw_ib failed", "VIGIL: x",
				  " vigil: leading space", "vigil" };
	for (size_t i = 0; i < ARRAY_SIZE(states); i++)
		for (size_t j = 0; j < ARRAY_SIZE(reasons); j++)
			for (int v = VERDICT_HEALTHY; v <= VERDICT_UNKNOWN; v++)
				for (int ou = 0; ou < 2; ou++) {
					enum slurm_act a = act_for((enum verdict)v, states[i],
								   reasons[j],
								   (enum slurm_on_unknown)ou, &d);
					CHECK_MSG(a == SLURM_ACT_NOTHING,
						  "verdict %d on %s '%s': %s", v, states[i],
						  reasons[j], slurm_act_name(a));
					CHECK_STR(d.reason, "");
				}
}

TEST(slurm_policy_resumes_only_what_vigil_drained)
{
	struct slurm_decision d;
	CHECK_INT(act_for(VERDICT_HEALTHY, "IDLE+DRAIN", "vigil: kernel: Xid 79", 0, &d),
		  SLURM_ACT_RESUME);
	CHECK_INT(act_for(VERDICT_HEALTHY, "MIXED+DRAIN", "vigil: x", 0, &d), SLURM_ACT_RESUME);
	CHECK_INT(act_for(VERDICT_HEALTHY, "IDLE+DRAIN", "admin: vigil: x", 0, &d),
		  SLURM_ACT_NOTHING);
	CHECK_INT(act_for(VERDICT_HEALTHY, "IDLE", "", 0, &d), SLURM_ACT_NOTHING);
	CHECK_INT(act_for(VERDICT_HEALTHY, "IDLE", "vigil: stale reason, not drained", 0, &d),
		  SLURM_ACT_NOTHING);
}

/* The report of a host whose GPU 3 has a row remap pending (gpu.remap-pending: drain fails it,
 * warn warns), or of the same host after the GPU reset applied the remap. */
static void remap_report(struct report *rep, enum status st)
{
	report_init(rep, "n1", 0);
	struct check_result *c = report_add(rep, "gpu");
	if (st == STATUS_OK)
		result_add(c, STATUS_OK, ACTION_NONE, "healthy", "GPU 3 (0000:5d:00.0)",
			   "GPU 3 (0000:5d:00.0) healthy: NVIDIA H200");
	else
		result_add(c, st, ACTION_RESET_GPU, "row_remap_pending", "GPU 3 (0000:5d:00.0)",
			   "GPU 3 (0000:5d:00.0): reset GPU: pending row remap%s",
			   st == STATUS_WARN ? " (gpu.remap-pending = warn: not drained)" : "");
	report_finish(rep);
}

/* Issue 23: a pending row remap drains the node (Slurm lets its job finish) until the reset,
 * under the same ownership rules as every other drain. */
TEST(slurm_policy_pending_row_remap_drains_until_reset)
{
	static const char want[] = "vigil: gpu: GPU 3 (0000:5d:00.0): reset GPU: pending row remap";
	struct slurm_policy p = { SLURM_UNKNOWN_NOTHING };
	struct slurm_decision d;
	struct report rep;
	remap_report(&rep, STATUS_FAIL);
	CHECK_INT(rep.verdict, VERDICT_UNHEALTHY);
	/* idle, or running a job: DRAIN either way (never DOWN: the job runs to its end) */
	static const char *const busy[] = { "IDLE", "MIXED", "ALLOCATED", "ALLOCATED+COMPLETING" };
	for (size_t i = 0; i < ARRAY_SIZE(busy); i++) {
		struct slurm_node n = mknode(busy[i], "");
		slurm_decide(rep.verdict, rep.reason, &n, &p, &d);
		CHECK_MSG(d.act == SLURM_ACT_DRAIN, "%s: %s", busy[i], d.why);
		CHECK_STR(d.reason, want);
	}
	/* already drained for it: left alone; drained by vigil for something else: relabelled */
	struct slurm_node n = mknode("MIXED+DRAIN", want);
	slurm_decide(rep.verdict, rep.reason, &n, &p, &d);
	CHECK_INT(d.act, SLURM_ACT_NOTHING);
	n = mknode("IDLE+DRAIN", "vigil: kernel: Xid 63 on GPU 0000:5d:00.0");
	slurm_decide(rep.verdict, rep.reason, &n, &p, &d);
	CHECK_INT(d.act, SLURM_ACT_DRAIN);
	CHECK_STR(d.reason, want);
	/* an administrator's drain, and a node Slurm is in charge of: untouched */
	static const char *const theirs[][2] = { { "IDLE+DRAIN", "admin: reseat GPU 3" },
						 { "DOWN", "" },
						 { "IDLE+MAINT", "" },
						 { "IDLE+REBOOT_REQUESTED", "" } };
	for (size_t i = 0; i < ARRAY_SIZE(theirs); i++) {
		n = mknode(theirs[i][0], theirs[i][1]);
		slurm_decide(rep.verdict, rep.reason, &n, &p, &d);
		CHECK_MSG(d.act == SLURM_ACT_NOTHING, "%s '%s': %s", theirs[i][0], theirs[i][1],
			  d.why);
	}
	report_release(&rep);

	/* the reset applied it: vigil resumes its own drain, never the administrator's */
	remap_report(&rep, STATUS_OK);
	CHECK_INT(rep.verdict, VERDICT_HEALTHY);
	n = mknode("IDLE+DRAIN", want);
	slurm_decide(rep.verdict, rep.reason, &n, &p, &d);
	CHECK_INT(d.act, SLURM_ACT_RESUME);
	n = mknode("IDLE+DRAIN", "admin: reseat GPU 3");
	slurm_decide(rep.verdict, rep.reason, &n, &p, &d);
	CHECK_INT(d.act, SLURM_ACT_NOTHING);
	report_release(&rep);

	/* gpu.remap-pending = warn: a healthy host with a warning; nothing is drained, and a node
	 * vigil drained for it before the site chose warn is given back */
	remap_report(&rep, STATUS_WARN);
	CHECK_INT(rep.verdict, VERDICT_HEALTHY);
	n = mknode("MIXED", "");
	slurm_decide(rep.verdict, rep.reason, &n, &p, &d);
	CHECK_INT(d.act, SLURM_ACT_NOTHING);
	n = mknode("IDLE+DRAIN", want);
	slurm_decide(rep.verdict, rep.reason, &n, &p, &d);
	CHECK_INT(d.act, SLURM_ACT_RESUME);
	report_release(&rep);
}

TEST(slurm_policy_unknown_changes_nothing_by_default)
{
	struct slurm_decision d;
	CHECK_INT(act_for(VERDICT_UNKNOWN, "IDLE", "", SLURM_UNKNOWN_NOTHING, &d),
		  SLURM_ACT_NOTHING);
	CHECK_INT(act_for(VERDICT_UNKNOWN, "IDLE+DRAIN", "vigil: x", SLURM_UNKNOWN_NOTHING, &d),
		  SLURM_ACT_NOTHING);
	CHECK_INT(act_for(VERDICT_UNKNOWN, "IDLE", "", SLURM_UNKNOWN_DRAIN, &d), SLURM_ACT_DRAIN);
	CHECK_CONTAINS(d.why, "on-unknown");
	/* unknown never replaces vigil's own, more precise reason, and never resumes */
	CHECK_INT(act_for(VERDICT_UNKNOWN, "IDLE+DRAIN", "vigil: x", SLURM_UNKNOWN_DRAIN, &d),
		  SLURM_ACT_NOTHING);
}

TEST(slurm_policy_leaves_down_rebooting_maint_and_powered_off_alone)
{
	struct slurm_decision d;
	const char *states[] = { "DOWN", "DOWN+NOT_RESPONDING", "IDLE*", "DOWN*+DRAIN",
				 "IDLE+NOT_RESPONDING", "IDLE+MAINTENANCE", "IDLE+DRAIN+MAINTENANCE",
				 "IDLE+REBOOT_REQUESTED", "DOWN+REBOOT_ISSUED", "IDLE+POWERED_DOWN",
				 "IDLE+POWERING_DOWN", "IDLE+POWERING_UP", "FUTURE", "UNKNOWN",
				 "IDLE+FAIL", "idle~", "drained@" };
	for (size_t i = 0; i < ARRAY_SIZE(states); i++)
		for (int v = VERDICT_HEALTHY; v <= VERDICT_UNKNOWN; v++) {
			enum slurm_act a = act_for((enum verdict)v, states[i], "vigil: x",
						   SLURM_UNKNOWN_DRAIN, &d);
			CHECK_MSG(a == SLURM_ACT_NOTHING, "verdict %d on %s: %s", v, states[i],
				  slurm_act_name(a));
		}
	/* a node whose state could not be read is not touched either */
	struct slurm_policy p = { SLURM_UNKNOWN_DRAIN };
	slurm_decide(VERDICT_UNHEALTHY, "x", NULL, &p, &d);
	CHECK_INT(d.act, SLURM_ACT_NOTHING);
}

TEST(slurm_policy_reason_is_one_line)
{
	struct slurm_policy p = { 0 };
	struct slurm_node n = mknode("IDLE", "");
	struct slurm_decision d;
	slurm_decide(VERDICT_UNHEALTHY, "a\nb\r\"c\"; $(d)\t", &n, &p, &d);
	CHECK_INT(d.act, SLURM_ACT_DRAIN);
	CHECK_STR(d.reason, "vigil: a b \"c\"; $(d) ");
	slurm_decide(VERDICT_UNHEALTHY, "", &n, &p, &d);
	CHECK_STR(d.reason, "vigil: unhealthy");
}

TEST(slurm_state_flags_parse)
{
	CHECK_INT(slurm_state_flags("IDLE"), NODE_IDLE);
	CHECK_INT(slurm_state_flags("IDLE+DRAIN"), NODE_IDLE | NODE_DRAIN);
	CHECK_INT(slurm_state_flags("MIXED+DRAIN+COMPLETING"),
		  NODE_MIXED | NODE_DRAIN | NODE_COMPLETING);
	CHECK_INT(slurm_state_flags("DOWN+NOT_RESPONDING"), NODE_DOWN | NODE_NOT_RESPONDING);
	CHECK_INT(slurm_state_flags("IDLE*"), NODE_IDLE | NODE_NOT_RESPONDING);
	CHECK_INT(slurm_state_flags("idle~"), NODE_IDLE | NODE_POWER);
	CHECK_INT(slurm_state_flags("IDLE+PLANNED"), NODE_IDLE);
	CHECK(slurm_state_flags("IDLE+SOMETHING_NEW") & NODE_OTHER);
	CHECK_STR(slurm_state_short(slurm_state_flags("IDLE+DRAIN")), "drained");
	CHECK_STR(slurm_state_short(slurm_state_flags("MIXED+DRAIN")), "draining");
	CHECK_STR(slurm_state_short(slurm_state_flags("DOWN+NOT_RESPONDING")), "down*");
	CHECK_STR(slurm_state_short(slurm_state_flags("IDLE")), "idle");
}

/* As Slurm 22.05 prints it, including a reason with brackets and a comment after it. */
static const char show_nodes[] =
	"NodeName=n1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 State=IDLE ThreadsPerCore=1 "
	"Partitions=debug  BootTime=2026-11-30T11:34:47 CurrentWatts=0 AveWatts=0 "
	"ExtSensorsTemp=n/s\n"
	"NodeName=n2 Arch=x86_64 State=IDLE+DRAIN Partitions=debug,gpu  "
	"Reason=admin: bad fan [see ticket 7] [root@2026-11-30T11:49:53] Comment=my comment\n"
	"NodeName=n3 State=MIXED+DRAIN Partitions=gpu Reason=vigil: kernel: Xid 79 "
	"[slurm@2026-11-30T11:50:00]\n"
	"NodeName=n4 State=DOWN+NOT_RESPONDING Partitions=debug Reason=Not responding "
	"[slurm@2026-11-30T11:50:01]        second line of it\n";

TEST(slurm_parse_scontrol_show_node)
{
	struct slurm_nodes l = { 0 };
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(slurm_parse_nodes(show_nodes, &l, &err), 0);
	CHECK_INT(l.nr, 4);
	CHECK_STR(l.items[0].name, "n1");
	CHECK_STR(l.items[0].reason, "");
	CHECK_INT(l.items[0].flags, NODE_IDLE);
	CHECK_STR(l.items[1].state, "IDLE+DRAIN");
	CHECK_STR(l.items[1].reason, "admin: bad fan [see ticket 7]");
	CHECK_STR(l.items[1].partitions, "debug,gpu");
	CHECK_STR(l.items[2].reason, "vigil: kernel: Xid 79");
	CHECK_STR(l.items[3].reason, "Not responding");
	CHECK(l.items[3].flags & NODE_NOT_RESPONDING);
	slurm_nodes_release(&l);
	CHECK_INT(slurm_parse_nodes("", &l, &err), 0);
	CHECK_INT(l.nr, 0);
	CHECK_INT(slurm_parse_nodes("Node nX not found\n", &l, &err), -1);
	CHECK_CONTAINS(err.buf, "unexpected scontrol output");
	slurm_nodes_release(&l);
	strbuf_release(&err);
}

TEST(slurm_node_names_that_could_name_other_nodes_are_refused)
{
	CHECK(slurm_node_name_ok("n1"));
	CHECK(slurm_node_name_ok("gpu-a100_07.rack3"));
	const char *bad[] = { "", "n[1-4]", "n1,n2", "n1 n2", "n1;reboot", "$(reboot)", "`x`",
			      "n1\nn2", "\"n1\"", "'n1'", "-n1", "n1*", "ALL" /* fine, but: */ };
	for (size_t i = 0; i + 1 < ARRAY_SIZE(bad); i++)
		CHECK_MSG(!slurm_node_name_ok(bad[i]), "accepted '%s'", bad[i]);
}

/* ---- vigil check --slurm against a fake scontrol ---- */

/* A fake scontrol: records every argument on its own line, answers 'show node' from node.txt
 * with the exit code in node.rc, hangs when the file 'hang' exists. */
static void fake_scontrol(const char *dir)
{
	struct strbuf p = STRBUF_INIT;
	test_write(dir, "bin/scontrol",
		   "#!/bin/sh\n"
		   "d=$(dirname \"$0\")/..\n"
		   "for a in \"$@\"; do printf '[%s]\\n' \"$a\"; done >>\"$d/scontrol.log\"\n"
		   "echo --- >>\"$d/scontrol.log\"\n"
		   "[ -e \"$d/hang\" ] && exec sleep 60\n"
		   "if [ \"$3\" = node ]; then cat \"$d/node.txt\"; exit $(cat \"$d/node.rc\" "
		   "2>/dev/null || echo 0); fi\n"
		   "exit 0\n");
	strbuf_addf(&p, "%s/bin/scontrol", dir);
	chmod(p.buf, 0755);
	strbuf_release(&p);
}

/* Write STATE/agent-report.json: one check with one finding (status fail/ok), at time t. */
static void write_cache(const char *state, const char *host, enum status st, const char *msg,
			double t)
{
	struct report rep;
	struct strbuf out = STRBUF_INIT, p = STRBUF_INIT, err = STRBUF_INIT;
	report_init(&rep, host, t);
	struct check_result *r = report_add(&rep, "kernel");
	result_add(r, st, st == STATUS_FAIL ? ACTION_REBOOT : ACTION_NONE, "xid", "GPU 3", "%s",
		   msg);
	result_finish(r);
	report_finish(&rep);
	report_json(&rep, &out, false);
	CHECK(mkdir_p(state, 0755, &err) == 0);
	agent_cache_path(&p, state);
	CHECK(write_file(p.buf, out.buf, out.len, true, &err) == 0);
	report_release(&rep);
	strbuf_release(&out);
	strbuf_release(&p);
	strbuf_release(&err);
}

struct fake {
	char dir[512];
	char state[600];
	char scontrol[600];
	char setting[700];
};

static void fake_setup(struct fake *f, const char *node_txt)
{
	snprintf(f->dir, sizeof(f->dir), "%s", test_tmpdir());
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	snprintf(f->scontrol, sizeof(f->scontrol), "%s/bin/scontrol", f->dir);
	snprintf(f->setting, sizeof(f->setting), "slurm.scontrol=%s", f->scontrol);
	fake_scontrol(f->dir);
	test_write(f->dir, "node.txt", node_txt);
}

static void run_slurm(struct fake *f, struct child *c, const char *nodename,
		      const char *const *extra)
{
	const char *args[24] = { "check", "--slurm", "--cached", "--state-dir", f->state, "-c",
				 f->setting };
	size_t n = 7;
	for (size_t i = 0; extra && extra[i]; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	char envn[256];
	snprintf(envn, sizeof(envn), "SLURMD_NODENAME=%s", nodename);
	const char *env[] = { envn, NULL };
	test_run_vigil(c, args, env);
}

static char *scontrol_log(struct fake *f)
{
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT;
	strbuf_addf(&p, "%s/scontrol.log", f->dir);
	read_file_bounded(p.buf, &sb, 1 << 20, NULL);
	strbuf_release(&p);
	return strbuf_detach(&sb, NULL);
}

TEST(slurm_check_drains_with_argv_not_a_shell)
{
	struct fake f;
	fake_setup(&f, "NodeName=n7 State=IDLE Partitions=debug\n");
	const char *evil = "GPU 3: name=\"x\"; $(touch PWNED) `touch PWNED2` 'q' & rm -rf / #";
	write_cache(f.state, "n7", STATUS_FAIL, evil, wall_seconds());
	struct child c;
	run_slurm(&f, &c, "n7", NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "drain: unhealthy: draining");
	char *log = scontrol_log(&f);
	CHECK_CONTAINS(log, "[-o]\n[show]\n[node]\n[n7]\n---\n");
	/* one argv element each, the reason verbatim: nothing was interpreted */
	struct strbuf want = STRBUF_INIT;
	strbuf_addf(&want, "[update]\n[NodeName=n7]\n[State=DRAIN]\n[Reason=vigil: kernel: %s]\n---",
		    evil);
	CHECK_CONTAINS(log, want.buf);
	struct stat st;
	CHECK(stat("PWNED", &st) < 0 && stat("PWNED2", &st) < 0);
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/PWNED", f.dir);
	CHECK(stat(p.buf, &st) < 0);
	free(log);
	strbuf_release(&want);
	strbuf_release(&p);
	child_release(&c);
}

TEST(slurm_check_refuses_a_node_name_with_metacharacters)
{
	struct fake f;
	fake_setup(&f, "NodeName=n7 State=IDLE Partitions=debug\n");
	write_cache(f.state, "x", STATUS_FAIL, "Xid 79", wall_seconds());
	const char *names[] = { "n[1-4]", "n1;touch PWNED", "$(touch PWNED)", "n1\nn2",
				"n1\" State=RESUME \"" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct child c;
		run_slurm(&f, &c, names[i], NULL);
		CHECK_INT(c.exit_code, 1);
		CHECK_CONTAINS(c.err.buf, "refusing node name");
		CHECK_CONTAINS(c.err.buf, "nothing");
		child_release(&c);
	}
	char *log = scontrol_log(&f);
	CHECK_STR(log, ""); /* scontrol never ran */
	free(log);
}

TEST(slurm_check_resumes_its_own_drain_only)
{
	struct fake f;
	fake_setup(&f, "NodeName=n7 State=IDLE+DRAIN Reason=vigil: kernel: Xid 79 "
		       "[root@2026-11-30T11:49:53]\n");
	write_cache(f.state, "n7", STATUS_OK, "no Xid", wall_seconds());
	struct child c;
	run_slurm(&f, &c, "n7", NULL);
	CHECK_INT(c.exit_code, 0);
	char *log = scontrol_log(&f);
	CHECK_CONTAINS(log, "[update]\n[NodeName=n7]\n[State=RESUME]\n---");
	free(log);
	child_release(&c);

	/* drained by an administrator: healthy or not, nothing is updated */
	fake_setup(&f, "NodeName=n7 State=IDLE+DRAIN Reason=admin: bad fan "
		       "[root@2026-11-30T11:49:53]\n");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/scontrol.log", f.dir);
	unlink(p.buf);
	run_slurm(&f, &c, "n7", NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.err.buf, "drained by someone else");
	child_release(&c);
	write_cache(f.state, "n7", STATUS_FAIL, "Xid 79", wall_seconds());
	run_slurm(&f, &c, "n7", NULL);
	CHECK_INT(c.exit_code, 1);
	child_release(&c);
	log = scontrol_log(&f);
	CHECK_NOT_CONTAINS(log, "[update]");
	free(log);
	strbuf_release(&p);
}

TEST(slurm_check_hanging_scontrol_is_bounded)
{
	struct fake f;
	fake_setup(&f, "NodeName=n7 State=IDLE\n");
	test_write(f.dir, "hang", "");
	write_cache(f.state, "n7", STATUS_FAIL, "Xid 79", wall_seconds());
	struct child c;
	const char *extra[] = { "-c", "slurm.timeout=1", NULL };
	uint64_t t0 = mono_ms();
	run_slurm(&f, &c, "n7", extra);
	uint64_t ms = mono_ms() - t0;
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "timed out");
	CHECK_CONTAINS(c.err.buf, "state unknown): nothing");
	CHECK_MSG(ms < 10000, "took %llu ms", (unsigned long long)ms);
	child_release(&c);
	/* healthy, but Slurm could not be asked: exit 3 so that slurmd logs it */
	write_cache(f.state, "n7", STATUS_OK, "fine", wall_seconds());
	run_slurm(&f, &c, "n7", extra);
	CHECK_INT(c.exit_code, 3);
	child_release(&c);
}

TEST(slurm_check_unknown_and_bad_settings)
{
	struct fake f;
	fake_setup(&f, "NodeName=n7 State=IDLE\n");
	/* no cache at all: unknown, and by default no change */
	struct child c;
	run_slurm(&f, &c, "n7", NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "nothing: could not tell");
	child_release(&c);
	const char *drain[] = { "-c", "slurm.on-unknown=drain", NULL };
	run_slurm(&f, &c, "n7", drain);
	CHECK_INT(c.exit_code, 3);
	char *log = scontrol_log(&f);
	CHECK_CONTAINS(log, "[State=DRAIN]\n[Reason=vigil: unknown: agent: no cached result");
	free(log);
	child_release(&c);
	const char *bad[] = { "-c", "slurm.on-unknown=maybe", NULL };
	run_slurm(&f, &c, "n7", bad);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "on-unknown");
	child_release(&c);
}

/*
 * Issue 17: what scontrol printed reached vigil's stderr raw. A reason and state carrying an
 * escape sequence, a bidi override and a line separator (a reason is anyone's with scontrol
 * update rights), and a failing scontrol whose stderr says the same: spelled out, never raw.
 */
TEST(slurm_check_spells_out_what_scontrol_printed)
{
	struct fake f;
	fake_setup(&f, "NodeName=n7 State=IDLE\x1b[2J\xe2\x80\xae Partitions=debug "
		       "Reason=admin\xe2\x80\xa8" "fake line\x1b]0;t\x07 [root@2026-01-01T00:00:00]\n");
	write_cache(f.state, "n7", STATUS_OK, "all good", wall_seconds());
	struct child c;
	run_slurm(&f, &c, "n7", NULL);
	CHECK_MSG(!memchr(c.err.buf, '\x1b', c.err.len), "raw ESC:\n%s", c.err.buf);
	CHECK_NOT_CONTAINS(c.err.buf, "\xe2\x80\xae");
	CHECK_CONTAINS(c.err.buf, "IDLE\\x1b[2J<U+202E>");
	child_release(&c);
	/* a failing scontrol: its stderr is quoted cleaned */
	test_write(f.dir, "bin/scontrol",
		   "#!/bin/sh\nprintf 'error: \\033[31mred\\342\\200\\256 \\342\\201\\246x\\n' >&2\n"
		   "printf 'NodeName=n7 \\033[2J\\n'\nexit 1\n");
	chmod(f.scontrol, 0755);
	run_slurm(&f, &c, "n7", NULL);
	CHECK_MSG(!memchr(c.err.buf, '\x1b', c.err.len), "raw ESC:\n%s", c.err.buf);
	CHECK_NOT_CONTAINS(c.err.buf, "\xe2\x80\xae");
	CHECK_NOT_CONTAINS(c.err.buf, "\xe2\x81\xa6");
	CHECK_CONTAINS(c.err.buf, "error: \\x1b[31mred<U+202E> <U+2066>x");
	child_release(&c);
}

TEST(slurm_parse_unexpected_output_is_quoted_clean)
{
	struct slurm_nodes l = { 0 };
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(slurm_parse_nodes("Nodename=\x1b[2J\xe2\x80\xae" "abcdefghijklmnopqrstuvwxyz0123456789"
				    "abcdefghijklmnopqrstuvwxyz\n", &l, &err), -1);
	CHECK(!strchr(err.buf, '\x1b'));
	CHECK_CONTAINS(err.buf, "unexpected scontrol output: 'Nodename=\\x1b[2J<U+202E>abc");
	CHECK(str_is_clean(err.buf));
	slurm_nodes_release(&l);
	strbuf_release(&err);
}
