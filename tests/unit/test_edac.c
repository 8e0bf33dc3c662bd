/*
 * test_edac.c: the EDAC counters in sysfs (src/checks/edac.c) and the kernel check's verdicts on
 * host hardware errors (src/checks/kernel_hw.c): the rise of corrected errors against the kept
 * reading, a reboot between runs, counters that cannot be read, the CE rate of log lines, the
 * Xid 45 cascade on hand-built events, and `vigil gather` keeping the EDAC files.
 */
#include "../harness.h"
#include "../../src/checks/edac.h"
#include "../../src/checks/kernel.h"
#include "../../src/logs/xid.h"

#include <unistd.h>

static struct edac_mc *add_mc(struct edac_readings *r, const char *name, uint64_t ce, uint64_t ue,
			      uint64_t since)
{
	ALLOC_GROW(r->mc, r->nr + 1, r->alloc);
	struct edac_mc *m = &r->mc[r->nr++];
	memset(m, 0, sizeof(*m));
	strlcpy_v(m->name, name, sizeof(m->name));
	m->ce = ce;
	m->ue = ue;
	m->since = since;
	m->have_ce = m->have_ue = m->have_since = true;
	return m;
}

static void readings(struct edac_readings *r)
{
	memset(r, 0, sizeof(*r));
	r->present = true;
	r->state_dir = true;
	r->state_age = -1;
}

static const struct finding *by_code(const struct check_result *res, const char *code)
{
	return result_find(res, code, NULL);
}

static void judge(const struct edac_readings *r, uint64_t rate, struct check_result *res)
{
	check_result_init(res, "kernel");
	edac_evaluate(r, rate, res);
	result_finish(res);
}

TEST(edac_ce_rise_since_last_run_warns_and_the_boot_average_does_not)
{
	struct edac_readings r;
	struct check_result res;
	readings(&r);
	add_mc(&r, "mc0", 412, 0, 86460);
	/* first run: 412 in a day is 17 an hour, below 60 */
	judge(&r, 60, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK(!by_code(&res, "edac_ce_rate"));
	check_result_release(&res);
	/* with the last run's reading a minute ago at 12: +400 within an hour */
	edac_state_apply(&r, "# vigil edac counters\nmc0 ce_count 12\nmc0 seconds_since_reset 86400\n");
	judge(&r, 60, &res);
	const struct finding *f = by_code(&res, "edac_ce_rate");
	CHECK(f);
	CHECK_INT(f->status, STATUS_WARN);
	CHECK_INT(f->action, ACTION_INSPECT_HARDWARE);
	/* worded as IB and AER word a rise (issue 23): "+N in T (R/h)", and the same JSON */
	CHECK_CONTAINS(f->message, "corrected memory errors +400 in 60 s (24,000/h) since the last run");
	double delta = -1, secs = -1, rate = -1;
	for (size_t i = 0; i < f->nr_details; i++) {
		double *to = !strcmp(f->details[i].key, "delta")	   ? &delta
			     : !strcmp(f->details[i].key, "seconds")	   ? &secs
			     : !strcmp(f->details[i].key, "rate_per_hour") ? &rate
									   : NULL;
		if (to)
			*to = strtod(f->details[i].value, NULL);
	}
	CHECK(delta == 400 && secs == 60 && rate == 24000);
	check_result_release(&res);
	/* a higher threshold: no warning */
	judge(&r, 500, &res);
	CHECK(!by_code(&res, "edac_ce_rate"));
	check_result_release(&res);
	edac_readings_release(&r);
}

TEST(edac_reboot_between_runs_starts_the_counters_again)
{
	struct edac_readings r;
	struct check_result res;
	readings(&r);
	/* the last run saw 5000 after ten days; now 3 after two minutes: a reboot, not a fall of
	 * 4997 (which as an unsigned rise would be a storm) */
	add_mc(&r, "mc0", 3, 0, 120);
	edac_state_apply(&r, "# vigil edac counters\nmc0 ce_count 5000\n"
			     "mc0 seconds_since_reset 864000\n");
	judge(&r, 60, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK(!by_code(&res, "edac_ce_rate"));
	check_result_release(&res);
	/* after the reboot, 90 in two minutes is a storm again, measured from the reset */
	r.mc[0].ce = 90;
	judge(&r, 60, &res);
	const struct finding *f = by_code(&res, "edac_ce_rate");
	CHECK(f);
	CHECK_CONTAINS(f->message, "since the counters were reset (a reboot or a reset");
	check_result_release(&res);
	/* no seconds_since_reset, the count went down: a reset, judged from zero */
	r.mc[0].have_since = false;
	r.mc[0].have_prev_since = false;
	r.mc[0].ce = 3;
	judge(&r, 60, &res);
	CHECK(!by_code(&res, "edac_ce_rate"));
	check_result_release(&res);
	edac_readings_release(&r);
}

TEST(edac_ue_fails_and_unreadable_is_unknown_with_an_action)
{
	struct edac_readings r;
	struct check_result res;
	readings(&r);
	struct edac_mc *m = add_mc(&r, "mc1", 0, 2, 500);
	m->dimms = xcalloc(1, sizeof(*m->dimms));
	m->nr_dimms = 1;
	strlcpy_v(m->dimms[0].label, "CPU_SrcID#1_MC#0_Chan#1_DIMM#0", sizeof(m->dimms[0].label));
	m->dimms[0].ue = 2;
	m->dimms[0].have = true;
	m = add_mc(&r, "mc2", 0, 0, 500);
	m->have_ue = false;
	strlcpy_v(m->error, "cannot read '/sys/devices/system/edac/mc/mc2/ue_count': Input/output "
		  "error", sizeof(m->error));
	judge(&r, 60, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = by_code(&res, "edac_ue");
	CHECK(f);
	CHECK_INT(f->action, ACTION_INSPECT_HARDWARE);
	CHECK_CONTAINS(f->message, "on CPU_SrcID#1_MC#0_Chan#1_DIMM#0: 2");
	f = by_code(&res, "edac_unreadable");
	CHECK(f);
	CHECK_INT(f->status, STATUS_UNKNOWN);
	CHECK_INT(f->action, ACTION_INVESTIGATE);
	CHECK_CONTAINS(f->message, "mc2/ue_count");
	check_result_release(&res);
	edac_readings_release(&r);
}

TEST(edac_state_file_round_trips)
{
	struct edac_readings r, r2;
	struct strbuf sb = STRBUF_INIT;
	readings(&r);
	readings(&r2);
	add_mc(&r, "mc0", 7, 1, 99);
	add_mc(&r2, "mc0", 0, 0, 0);
	edac_state_format(&r, &sb);
	edac_state_apply(&r2, sb.buf);
	CHECK(r2.mc[0].have_prev_ce);
	CHECK_INT(r2.mc[0].prev_ce, 7);
	CHECK_INT(r2.mc[0].prev_since, 99);
	strbuf_release(&sb);
	edac_readings_release(&r);
	edac_readings_release(&r2);
}

/* ---- the log's hardware errors, judged ---- */

struct fx {
	struct kernel_input in;
	struct kernel_config kc;
	struct config cfg;
	struct check_result res;
};

static void fx_init(struct fx *x, const char *log, const char *settings)
{
	struct strbuf err = STRBUF_INIT;
	struct kmsg_opts o = { .year_hint = 1772366400.0 };
	memset(x, 0, sizeof(*x));
	kmsg_log_init(&x->in.log, &o);
	kmsg_parse(&x->in.log, log, strlen(log));
	kmsg_log_finish(&x->in.log);
	x->in.source = xstrdup("test");
	x->in.have_now = x->in.log.has_last;
	x->in.now_tb = x->in.log.last_tb;
	x->in.now = x->in.log.last_ts;
	config_init(&x->cfg, "node-a");
	if (settings)
		CHECK_MSG(config_parse(&x->cfg, settings, strlen(settings), "t.conf", &err) == 0,
			  "%s", err.buf);
	CHECK_MSG(kernel_config_load(&x->cfg, &x->kc, &err) == 0, "%s", err.buf);
	check_result_init(&x->res, "kernel");
	kernel_evaluate(&x->in, &x->kc, &x->res);
	result_finish(&x->res);
	strbuf_release(&err);
}

static void fx_release(struct fx *x)
{
	kernel_input_release(&x->in);
	kernel_config_release(&x->kc);
	config_release(&x->cfg);
	check_result_release(&x->res);
}

static void ce_lines(struct strbuf *sb, int n, double t0)
{
	for (int i = 0; i < n; i++)
		strbuf_addf(sb, "[%.6f] EDAC MC0: 1 CE memory read error on DIMM_A1 (channel:0 "
			    "slot:0 page:0x%x offset:0x0 grain:32 syndrome:0x0)\n", t0 + i, 0x1000 + i);
}

TEST(kernel_edac_ce_lines_warn_at_the_rate_only)
{
	struct strbuf sb = STRBUF_INIT;
	struct fx x;
	ce_lines(&sb, 59, 5000);
	fx_init(&x, sb.buf, NULL);
	const struct finding *f = result_find(&x.res, "edac", NULL);
	CHECK(f);
	CHECK_INT(f->status, STATUS_OK); /* 59 in the hour: below 60 */
	CHECK_INT(x.res.status, STATUS_OK);
	fx_release(&x);
	ce_lines(&sb, 1, 5059);
	fx_init(&x, sb.buf, NULL);
	f = result_find(&x.res, "edac", NULL);
	CHECK_INT(f->status, STATUS_WARN);
	CHECK_INT(f->action, ACTION_INSPECT_HARDWARE);
	CHECK_CONTAINS(f->message, "60 corrected memory errors (EDAC CE) in the last 1 h, 60 an hour");
	fx_release(&x);
	/* the same lines, a day before "now": faded */
	strbuf_addstr(&sb, "[95000.000000] clocksource: tsc: mask: 0xffffffffffffffff\n");
	fx_init(&x, sb.buf, NULL);
	CHECK(!result_find(&x.res, "edac", NULL));
	fx_release(&x);
	/* the key moves the threshold */
	strbuf_reset(&sb);
	ce_lines(&sb, 10, 5000);
	fx_init(&x, sb.buf, "[kernel]\nce-rate = 10\n");
	CHECK_INT(result_find(&x.res, "edac", NULL)->status, STATUS_WARN);
	fx_release(&x);
	strbuf_release(&sb);
}

TEST(kernel_hwerr_faults_clear_at_reboot_only)
{
	const char *faults =
		"6,10,5000000000,-;EDAC MC3: 1 UE memory read error on DIMM_B1 (page:0x1 offset:0x0 "
		"grain:32)\n"
		"0,11,5000000100,-;mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 5: "
		"b200000000070f0f\n"
		"3,12,5000000200,-;pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: "
		"0000:18:00.0\n"
		"3,13,5000000300,-;{2}[Hardware Error]: event severity: recoverable\n";
	struct strbuf sb = STRBUF_INIT;
	struct fx x;
	/* a day later, still this boot: all four stand */
	strbuf_addf(&sb, "%s6,14,95000000000,-;clocksource: tsc: mask: 0xffffffffffffffff\n", faults);
	fx_init(&x, sb.buf, NULL);
	CHECK_INT(x.res.status, STATUS_FAIL);
	static const char *const codes[] = { "edac", "mce", "aer", "ghes" };
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++) {
		const struct finding *f = result_find(&x.res, codes[i], NULL);
		CHECK_MSG(f && f->status == STATUS_FAIL && f->action == ACTION_INSPECT_HARDWARE,
			  "%s: %s", codes[i], f ? f->message : "missing");
	}
	fx_release(&x);
	/* after a real boot: cleared */
	strbuf_reset(&sb);
	strbuf_addf(&sb, "%s6,0,0,-;Linux version 6.8.0-45-generic (buildd@lcy02) #45\n"
		    "6,1,1000000,-;clocksource: tsc: mask: 0xffffffffffffffff\n", faults);
	fx_init(&x, sb.buf, NULL);
	CHECK_INT(x.res.status, STATUS_OK);
	fx_release(&x);
	strbuf_release(&sb);
}

TEST(kernel_xid45_cascade_takes_its_causes_policy)
{
	struct fx x;
	fx_init(&x,
		"[100.0] NVRM: Xid (PCI:0000:9b:00): 45, pid=1, name=a, Ch 00000001 caused by "
		"previous Xid 149\n"
		"[100.1] NVRM: Xid (PCI:0000:1b:00): 45, pid=2, name=b, Ch 00000002 caused by "
		"previous Xid 79\n"
		"[100.2] NVRM: Xid (PCI:0000:2b:00): 45, pid=3, name=c, Ch 00000003 caused by "
		"previous Xid 13\n"
		"[100.3] NVRM: Xid (PCI:0000:3b:00): 45, pid=4, name=d, Ch 00000004 caused by "
		"previous Xid 999\n"
		"[100.4] NVRM: Xid (PCI:0000:4b:00): 45, pid=5, name=e, Ch 00000005\n",
		NULL);
	const struct finding *f = result_find(&x.res, "xid", "0000:9b:00.0");
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_RESET_GPU);
	f = result_find(&x.res, "xid", "0000:1b:00.0");
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_REBOOT);
	f = result_find(&x.res, "xid", "0000:2b:00.0");
	CHECK(f && f->status == STATUS_OK); /* an application's fault: still no host fault */
	f = result_find(&x.res, "xid", "0000:3b:00.0");
	CHECK(f && f->status == STATUS_WARN && f->action == ACTION_INVESTIGATE);
	f = result_find(&x.res, "xid", "0000:4b:00.0");
	CHECK(f && f->status == STATUS_OK);
	fx_release(&x);
	/* a GPU reset clears the cascade as it clears its cause */
	fx_init(&x,
		"[100.0] NVRM: Xid (PCI:0000:9b:00): 45, pid=1, name=a, Ch 00000001 caused by "
		"previous Xid 149\n"
		"[200.0] NVRM: GPU at PCI:0000:9b:00: GPU-7d3ba1cb-f7d3-7a8b-8c2f-3a4c7e8b3c8d\n",
		NULL);
	CHECK_INT(x.res.status, STATUS_OK);
	fx_release(&x);
}

/* `vigil gather` keeps the EDAC files, and the check on the copy sees the same UE */
TEST(gather_keeps_the_edac_counters)
{
	struct strbuf src = STRBUF_INIT, dir = STRBUF_INIT;
	struct child c;
	strbuf_addf(&src, "%s/tests/scenarios/kernel-edac-sysfs-ue/root", test_srcdir());
	strbuf_addf(&dir, "%s/gathered", test_tmpdir());
	const char *gargs[] = { "gather", "--root", src.buf, dir.buf, NULL };
	test_run_vigil(&c, gargs, NULL);
	child_release(&c);
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/sys/devices/system/edac/mc/mc1/dimm3/dimm_ue_count", dir.buf);
	CHECK_MSG(access(p.buf, F_OK) == 0, "gather did not keep '%s'", p.buf);
	const char *cargs[] = { "check", "--root", dir.buf, "--only", "kernel", "--json", NULL };
	test_run_vigil(&c, cargs, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d:\n%s", c.exit_code, c.out.buf);
	CHECK_CONTAINS(c.out.buf, "\"edac_ue\"");
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&src);
	strbuf_release(&dir);
}

/* The SXid catalog against NVIDIA's tables (Fabric Manager User Guide DU-09883-001 v1.3): the
 * class of each table, and the codes whose Impact/Recovery columns say more than their class. */
TEST(kernel_sxid_catalog_follows_nvidias_table)
{
	static const struct {
		int sxid;
		enum status st;
		enum action act;
		bool sticky;
	} want[] = {
		{ 12028, STATUS_FAIL, ACTION_REBOOT, true },  /* non-fatal table, traffic stalls */
		{ 11004, STATUS_FAIL, ACTION_REBOOT, true },
		{ 19084, STATUS_FAIL, ACTION_REBOOT, true },
		{ 12030, STATUS_FAIL, ACTION_REBOOT, true },  /* fatal table */
		{ 24007, STATUS_FAIL, ACTION_REBOOT, true },
		{ 23017, STATUS_FAIL, ACTION_REBOOT, true },  /* always fatal */
		{ 10003, STATUS_FAIL, ACTION_REBOOT, true },
		{ 11012, STATUS_OK, ACTION_NONE, false },     /* corrected single-bit ECC */
		{ 24002, STATUS_OK, ACTION_NONE, false },
		{ 22013, STATUS_OK, ACTION_NONE, false },     /* "can be safely ignored" */
		{ 20009, STATUS_WARN, ACTION_INVESTIGATE, false },
		{ 20001, STATUS_WARN, ACTION_INVESTIGATE, false },
		{ 20012, STATUS_WARN, ACTION_INSPECT_HARDWARE, false },
		{ 10004, STATUS_WARN, ACTION_INSPECT_HARDWARE, false },
		{ 10005, STATUS_OK, ACTION_NONE, false },
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		struct xid_policy p;
		sxid_classify(want[i].sxid, -1, &p);
		CHECK_MSG(p.known && p.status == want[i].st && p.action == want[i].act &&
				  p.sticky == want[i].sticky,
			  "SXid %d: %s %s%s (%s)", want[i].sxid, status_name(p.status),
			  action_name(p.action), p.sticky ? " sticky" : "", p.meaning);
	}
}

/* Runs a minute apart (the agent) still see 60 errors an hour: the kept reading stays the
 * baseline until it is an hour old, then moves on. */
TEST(edac_baseline_holds_for_an_hour_so_slow_storms_add_up)
{
	struct edac_readings r;
	struct check_result res;
	struct strbuf state = STRBUF_INIT;
	uint64_t since = 100000, ce = 10;
	bool warned = false;
	strbuf_addstr(&state, "# vigil edac counters\nmc0 ce_count 10\nmc0 seconds_since_reset 100000\n");
	for (int minute = 1; minute <= 70 && !warned; minute++) {
		readings(&r);
		add_mc(&r, "mc0", ce += 1, 0, since += 60); /* one a minute: 60 an hour */
		edac_state_apply(&r, state.buf);
		judge(&r, 60, &res);
		warned = by_code(&res, "edac_ce_rate") != NULL;
		check_result_release(&res);
		strbuf_reset(&state);
		edac_state_format(&r, &state);
		edac_readings_release(&r);
		CHECK_MSG(warned == (minute >= 60), "minute %d: %s", minute, warned ? "warned" : "quiet");
	}
	CHECK(warned);
	/* past the hour the baseline moves to the latest reading */
	readings(&r);
	add_mc(&r, "mc0", 5000, 0, 200000);
	edac_state_apply(&r, "# vigil edac counters\nmc0 ce_count 10\nmc0 seconds_since_reset 100000\n");
	strbuf_reset(&state);
	edac_state_format(&r, &state);
	CHECK_CONTAINS(state.buf, "mc0 ce_count 5000");
	edac_readings_release(&r);
	strbuf_release(&state);
}

/* A UE in the counters fails the host even when the log says nothing (an empty dev/kmsg) */
TEST(edac_ue_fails_even_when_the_log_cannot_be_judged)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT;
	struct child c;
	strbuf_addf(&root, "%s/root", dir);
	test_write(dir, "root/sys/devices/system/edac/mc/mc0/ce_count", "0\n");
	test_write(dir, "root/sys/devices/system/edac/mc/mc0/ue_count", "1\n");
	test_write(dir, "root/proc/uptime", "100.0 50.0\n");
	test_write(dir, "root/dev/kmsg", "");
	const char *args[] = { "check", "--root", root.buf, "--only", "kernel", "--json", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d:\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "\"edac_ue\"");
	CHECK_CONTAINS(c.out.buf, "empty kernel log");
	child_release(&c);
	strbuf_release(&root);
}
