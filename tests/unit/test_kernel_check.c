/*
 * test_kernel_check.c: the 'kernel' check's evaluate() on hand-built events (stickiness, fading,
 * the catalog's statuses, strict mode, ignore lists, dedupe), its configuration, and its gather()
 * on files.
 */
#include "../harness.h"
#include "../../src/checks/kernel.h"
#include "../../src/logs/xid.h"

struct fx {
	struct kernel_input in;
	struct kernel_config kc;
	struct config cfg;
	struct check_result res;
};

static void fx_init(struct fx *x, double now, const char *settings)
{
	struct strbuf err = STRBUF_INIT;
	memset(x, 0, sizeof(*x));
	kmsg_log_init(&x->in.log, NULL);
	x->in.source = xstrdup("test");
	x->in.have_now = true;
	x->in.now_tb = KMSG_TB_MONO;
	x->in.now = now;
	config_init(&x->cfg, "node-a");
	if (settings)
		CHECK_MSG(config_parse(&x->cfg, settings, strlen(settings), "t.conf", &err) == 0,
			  "%s", err.buf);
	CHECK_MSG(kernel_config_load(&x->cfg, &x->kc, &err) == 0, "%s", err.buf);
	check_result_init(&x->res, "kernel");
	strbuf_release(&err);
}

static void fx_release(struct fx *x)
{
	kernel_input_release(&x->in);
	kernel_config_release(&x->kc);
	config_release(&x->cfg);
	check_result_release(&x->res);
}

/* Add an event at monotonic time ts in the current boot. */
static struct kmsg_event *ev_add(struct fx *x, enum kmsg_kind kind, double ts, const char *bdf,
				 int num)
{
	struct kmsg_log *log = &x->in.log;
	ALLOC_GROW(log->ev, log->nr + 1, log->alloc);
	struct kmsg_event *ev = &log->ev[log->nr++];
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->tb = KMSG_TB_MONO;
	ev->ts = ts;
	ev->line = log->nr;
	ev->count = 1;
	ev->num = num;
	ev->fatal = ev->recovery = ev->gi = ev->ci = -1;
	ev->pid = -1;
	if (kind == KMSG_BOOT)
		log->boots++;
	ev->boot = log->boots;
	strlcpy_v(ev->bdf, bdf ? bdf : "", sizeof(ev->bdf));
	log->lines = log->nr;
	return ev;
}

static void eval(struct fx *x)
{
	kernel_evaluate(&x->in, &x->kc, &x->res);
	result_finish(&x->res);
}

static const struct finding *find(const struct fx *x, const char *code, const char *dev)
{
	return result_find(&x->res, code, dev);
}

static void expect(const struct fx *x, const char *code, const char *dev, enum status st,
		   enum action act)
{
	const struct finding *f = find(x, code, dev);
	CHECK_MSG(f, "no '%s' finding for '%s'", code, dev ? dev : "");
	CHECK_MSG(f->status == st, "'%s' is %s, expected %s: %s", code, status_name(f->status),
		  status_name(st), f->message);
	CHECK_MSG(f->action == act, "'%s' action is %s, expected %s: %s", code,
		  action_name(f->action), action_name(act), f->message);
}

static const char *detail(const struct finding *f, const char *key)
{
	for (size_t i = 0; i < f->nr_details; i++)
		if (!strcmp(f->details[i].key, key))
			return f->details[i].value;
	return NULL;
}

#define A "0000:9b:00.0"
#define B "0000:1b:00.0"

TEST(kernel_sticky_until_gpu_reset)
{
	struct fx x;
	fx_init(&x, 100000, NULL);
	ev_add(&x, KMSG_XID, 100, A, 48);
	eval(&x);
	expect(&x, "xid", A, STATUS_FAIL, ACTION_RESET_GPU);
	CHECK_CONTAINS(find(&x, "xid", A)->message, "Xid 48 on GPU 0000:9b:00.0: double-bit ECC");
	CHECK_INT(x.res.status, STATUS_FAIL);
	fx_release(&x);

	/* the GPU is initialised again afterwards: cleared */
	fx_init(&x, 100000, NULL);
	ev_add(&x, KMSG_XID, 100, A, 48);
	strlcpy_v(ev_add(&x, KMSG_GPU_INIT, 200, A, 0)->uuid, "GPU-1234", 48);
	eval(&x);
	expect(&x, "xid", A, STATUS_OK, ACTION_NONE);
	CHECK_CONTAINS(find(&x, "xid", A)->message, "cleared");
	CHECK_STR(find(&x, "xid", A)->device, "GPU 0000:9b:00.0 (GPU-1234)");
	CHECK_INT(x.res.status, STATUS_OK);
	fx_release(&x);

	/* a reset of another GPU clears nothing; a fault after the reset counts again */
	fx_init(&x, 100000, NULL);
	ev_add(&x, KMSG_XID, 100, A, 95);
	ev_add(&x, KMSG_GPU_INIT, 200, B, 0);
	ev_add(&x, KMSG_GPU_INIT, 300, A, 0);
	ev_add(&x, KMSG_XID, 400, A, 95);
	eval(&x);
	expect(&x, "xid", A, STATUS_FAIL, ACTION_RESET_GPU);
	CHECK_STR(detail(find(&x, "xid", A), "count"), "2");
	fx_release(&x);

	/* Xid 154 back to 0x0: the driver needs nothing any more */
	fx_init(&x, 100000, NULL);
	ev_add(&x, KMSG_XID, 100, A, 154)->recovery = XID_RECOVERY_GPU_RESET;
	eval(&x);
	expect(&x, "xid", A, STATUS_FAIL, ACTION_RESET_GPU);
	fx_release(&x);
	fx_init(&x, 100000, NULL);
	ev_add(&x, KMSG_XID, 100, A, 154)->recovery = XID_RECOVERY_GPU_RESET;
	ev_add(&x, KMSG_XID, 200, A, 154)->recovery = XID_RECOVERY_NONE;
	eval(&x);
	expect(&x, "xid", A, STATUS_OK, ACTION_NONE);
	fx_release(&x);
}

TEST(kernel_sticky_until_reboot)
{
	struct fx x;
	fx_init(&x, 50, NULL);
	ev_add(&x, KMSG_XID, 90000, A, 79);
	ev_add(&x, KMSG_BOOT, 0, NULL, 0);
	eval(&x);
	expect(&x, "xid", A, STATUS_OK, ACTION_NONE);
	CHECK_CONTAINS(find(&x, "xid", A)->message, "cleared by a reboot");
	fx_release(&x);

	/* no reset, no reboot: days later it still fails, critical, reboot then inspect */
	fx_init(&x, 900000, NULL);
	ev_add(&x, KMSG_XID, 100, A, 79);
	eval(&x);
	expect(&x, "xid", A, STATUS_FAIL, ACTION_REBOOT);
	CHECK_INT(find(&x, "xid", A)->severity, SEV_CRITICAL);
	CHECK_STR(detail(find(&x, "xid", A), "then"), "INSPECT_HARDWARE");
	fx_release(&x);
}

TEST(kernel_app_level_fades_after_window)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_XID, 100, A, 94);
	eval(&x);
	expect(&x, "xid", A, STATUS_WARN, ACTION_RESTART_APP);
	fx_release(&x);

	fx_init(&x, 100 + 3601, NULL);
	ev_add(&x, KMSG_XID, 100, A, 94);
	eval(&x);
	expect(&x, "xid", A, STATUS_OK, ACTION_NONE);
	CHECK_CONTAINS(find(&x, "xid", A)->message, "last seen 1 h ago");
	CHECK_INT(x.res.status, STATUS_OK);
	fx_release(&x);

	/* kernel.window shortens it */
	fx_init(&x, 200, "[kernel]\nwindow = 60\n");
	ev_add(&x, KMSG_XID, 100, A, 94);
	eval(&x);
	expect(&x, "xid", A, STATUS_OK, ACTION_NONE);
	fx_release(&x);

	/* before the last boot: not recent, whatever the clock says */
	fx_init(&x, 10, NULL);
	ev_add(&x, KMSG_XID, 5, A, 94);
	ev_add(&x, KMSG_BOOT, 0, NULL, 0);
	eval(&x);
	expect(&x, "xid", A, STATUS_OK, ACTION_NONE);
	CHECK_CONTAINS(find(&x, "xid", A)->message, "before the last boot");
	fx_release(&x);

	/* an event whose age cannot be told counts as recent */
	fx_init(&x, 1e6, NULL);
	ev_add(&x, KMSG_XID, 0, A, 94)->tb = KMSG_TB_NONE;
	eval(&x);
	expect(&x, "xid", A, STATUS_WARN, ACTION_RESTART_APP);
	fx_release(&x);
}

TEST(kernel_63_warns_64_fails)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_XID, 100, A, 63);
	ev_add(&x, KMSG_XID, 100, B, 64);
	eval(&x);
	expect(&x, "xid", A, STATUS_WARN, ACTION_RESET_GPU);
	expect(&x, "xid", B, STATUS_FAIL, ACTION_RESET_GPU);
	fx_release(&x);

	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_XID, 100, A, 63);
	eval(&x);
	CHECK_INT(x.res.status, STATUS_WARN);
	fx_release(&x);
}

TEST(kernel_94_restart_app_95_reset_gpu)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_XID, 100, A, 94);
	ev_add(&x, KMSG_XID, 150, B, 95);
	eval(&x);
	expect(&x, "xid", A, STATUS_WARN, ACTION_RESTART_APP);
	expect(&x, "xid", B, STATUS_FAIL, ACTION_RESET_GPU);
	CHECK_INT(x.res.status, STATUS_FAIL);
	fx_release(&x);
}

TEST(kernel_13_alone_is_no_host_fault)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_XID, 100, A, 13);
	ev_add(&x, KMSG_XID, 110, A, 13);
	ev_add(&x, KMSG_XID, 120, A, 45);
	eval(&x);
	expect(&x, "xid", A, STATUS_OK, ACTION_NONE);
	CHECK_STR(detail(find(&x, "xid", A), "app_action"), "RESTART_APP");
	CHECK_INT(x.res.status, STATUS_OK);
	const struct finding *s = find(&x, "summary", NULL);
	CHECK(s);
	CHECK_CONTAINS(s->message, "kernel log clean");
	CHECK_CONTAINS(s->message, "3 application-level Xid events");
	fx_release(&x);
}

TEST(kernel_clean_log_says_so)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	x.in.log.lines = 1234;
	eval(&x);
	CHECK_INT(x.res.nr, 1);
	expect(&x, "summary", NULL, STATUS_OK, ACTION_NONE);
	CHECK_STR(x.res.findings[0].message, "kernel log clean: 1234 lines, no GPU faults");
	fx_release(&x);
}

TEST(kernel_dedupe_one_finding_per_gpu_and_xid)
{
	struct fx x;
	fx_init(&x, 1000, NULL);
	ev_add(&x, KMSG_XID, 100, A, 48)->pid = 11;
	ev_add(&x, KMSG_XID, 200, A, 48);
	struct kmsg_event *ev = ev_add(&x, KMSG_XID, 300, A, 48);
	ev->pid = 33;
	ev->count = 2; /* folded by the parser */
	ev_add(&x, KMSG_XID, 400, B, 48);
	eval(&x);
	size_t n = 0;
	for (size_t i = 0; i < x.res.nr; i++)
		n += !strcmp(x.res.findings[i].code, "xid");
	CHECK_INT(n, 2);
	const struct finding *f = find(&x, "xid", A);
	CHECK_STR(detail(f, "count"), "4");
	CHECK_STR(detail(f, "pid"), "33");
	CHECK_CONTAINS(detail(f, "first"), "100.000 s after boot");
	CHECK_CONTAINS(detail(f, "last"), "300.000 s after boot");
	CHECK_CONTAINS(f->message, "(4 times)");
	fx_release(&x);
}

TEST(kernel_strict_mode_and_allow)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	strlcpy_v(ev_add(&x, KMSG_NVRM_UNKNOWN, 100, NULL, 0)->text, "GPU is confused", 160);
	eval(&x);
	CHECK(!find(&x, "unknown_nvrm", NULL));
	CHECK_INT(x.res.status, STATUS_OK);
	CHECK_STR(detail(find(&x, "summary", NULL), "unknown_nvrm_lines"), "1");
	fx_release(&x);

	fx_init(&x, 200, "[kernel]\nstrict = true\n");
	strlcpy_v(ev_add(&x, KMSG_NVRM_UNKNOWN, 100, NULL, 0)->text, "GPU is confused", 160);
	eval(&x);
	expect(&x, "unknown_nvrm", NULL, STATUS_WARN, ACTION_INVESTIGATE);
	CHECK_CONTAINS(find(&x, "unknown_nvrm", NULL)->message, "GPU is confused");
	fx_release(&x);

	fx_init(&x, 200, "[kernel]\nstrict = true\nallow = is confused\nallow = other\n");
	strlcpy_v(ev_add(&x, KMSG_NVRM_UNKNOWN, 100, NULL, 0)->text, "GPU is confused", 160);
	eval(&x);
	CHECK(!find(&x, "unknown_nvrm", NULL));
	fx_release(&x);
}

TEST(kernel_ignore_xid_list)
{
	struct fx x;
	fx_init(&x, 200, "[kernel]\nignore-xid = 79, 48\nignore-xid = 95\n");
	ev_add(&x, KMSG_XID, 100, A, 79);
	ev_add(&x, KMSG_XID, 100, A, 48);
	ev_add(&x, KMSG_XID, 100, A, 95);
	ev_add(&x, KMSG_XID, 100, B, 64);
	eval(&x);
	CHECK(!find(&x, "xid", A));
	expect(&x, "xid", B, STATUS_FAIL, ACTION_RESET_GPU);
	CHECK_STR(detail(find(&x, "summary", NULL), "ignored_xid_events"), "3");
	fx_release(&x);
}

TEST(kernel_unknown_xid_and_nvlink_words)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_XID, 100, A, 999);
	ev_add(&x, KMSG_XID, 100, B, 145)->fatal = 1;
	ev_add(&x, KMSG_XID, 100, "0000:2b:00.0", 145)->fatal = 0;
	ev_add(&x, KMSG_XID, 100, "0000:3b:00.0", 154)->recovery = XID_RECOVERY_NODE_REBOOT;
	ev_add(&x, KMSG_XID, 100, "0000:4b:00.0", 154)->recovery = XID_RECOVERY_DRAIN_RESET;
	eval(&x);
	expect(&x, "xid", A, STATUS_WARN, ACTION_INVESTIGATE);
	expect(&x, "xid", B, STATUS_FAIL, ACTION_RESET_GPU);
	expect(&x, "xid", "0000:2b:00.0", STATUS_WARN, ACTION_NONE);
	expect(&x, "xid", "0000:3b:00.0", STATUS_FAIL, ACTION_REBOOT);
	expect(&x, "xid", "0000:4b:00.0", STATUS_FAIL, ACTION_RESET_GPU);
	fx_release(&x);
}

TEST(kernel_sxid_lists_and_words)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_SXID, 100, "0000:c3:00.0", 20009)->fatal = 1; /* listed: non-fatal wins */
	ev_add(&x, KMSG_SXID, 100, "0000:c4:00.0", 23005);            /* always fatal */
	ev_add(&x, KMSG_SXID, 100, "0000:c5:00.0", 30001)->fatal = 1; /* unlisted, says Fatal */
	ev_add(&x, KMSG_SXID, 100, "0000:c6:00.0", 30002)->fatal = 0;
	ev_add(&x, KMSG_SXID, 100, "0000:c7:00.0", 30003);
	eval(&x);
	expect(&x, "sxid", "0000:c3:00.0", STATUS_WARN, ACTION_INVESTIGATE);
	expect(&x, "sxid", "0000:c4:00.0", STATUS_FAIL, ACTION_REBOOT);
	CHECK_INT(find(&x, "sxid", "0000:c4:00.0")->severity, SEV_CRITICAL);
	expect(&x, "sxid", "0000:c5:00.0", STATUS_FAIL, ACTION_REBOOT);
	expect(&x, "sxid", "0000:c6:00.0", STATUS_WARN, ACTION_INVESTIGATE);
	expect(&x, "sxid", "0000:c7:00.0", STATUS_WARN, ACTION_INVESTIGATE);
	fx_release(&x);

	/* a fatal SXid stays until a reboot; a GPU re-init does not clear a switch */
	fx_init(&x, 900000, NULL);
	ev_add(&x, KMSG_SXID, 100, "0000:c4:00.0", 12020);
	ev_add(&x, KMSG_GPU_INIT, 200, "0000:c4:00.0", 0);
	eval(&x);
	expect(&x, "sxid", "0000:c4:00.0", STATUS_FAIL, ACTION_REBOOT);
	fx_release(&x);
}

TEST(kernel_off_the_bus)
{
	struct fx x;
	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_GPU_OFF_BUS, 100, "0000:b3:00.0", 0);
	eval(&x);
	expect(&x, "gpu_off_bus", "0000:b3:00.0", STATUS_FAIL, ACTION_REBOOT);
	fx_release(&x);

	/* with its Xid 79: one finding */
	fx_init(&x, 200, NULL);
	ev_add(&x, KMSG_XID, 100, "0000:b3:00.0", 79);
	ev_add(&x, KMSG_GPU_OFF_BUS, 100, "0000:b3:00.0", 0);
	eval(&x);
	expect(&x, "xid", "0000:b3:00.0", STATUS_FAIL, ACTION_REBOOT);
	CHECK(!find(&x, "gpu_off_bus", NULL));
	CHECK_STR(detail(find(&x, "xid", NULL), "off_bus_messages"), "1");
	fx_release(&x);
}

TEST(kernel_oom_hung_task_window)
{
	struct fx x;
	fx_init(&x, 5000, NULL);
	strlcpy_v(ev_add(&x, KMSG_OOM_KILL, 100, NULL, 0)->name, "old", 48);
	struct kmsg_event *ev = ev_add(&x, KMSG_OOM_KILL, 4000, NULL, 0);
	strlcpy_v(ev->name, "python3", 48);
	ev->pid = 4321;
	ev_add(&x, KMSG_OOM_CGROUP, 4000, NULL, 0);
	strlcpy_v(ev_add(&x, KMSG_HUNG_TASK, 4500, NULL, 120)->name, "jbd2/nvme0n1", 48);
	eval(&x);
	expect(&x, "oom", "host", STATUS_WARN, ACTION_RESTART_APP);
	CHECK_CONTAINS(find(&x, "oom", NULL)->message, "killed 1 process in the last 1 h");
	CHECK_CONTAINS(find(&x, "oom", NULL)->message, "python3, pid 4321");
	expect(&x, "oom_cgroup", NULL, STATUS_OK, ACTION_NONE);
	expect(&x, "hung_task", "jbd2/nvme0n1", STATUS_WARN, ACTION_INVESTIGATE);
	CHECK_INT(x.res.status, STATUS_WARN);
	fx_release(&x);

	fx_init(&x, 50000, NULL);
	ev_add(&x, KMSG_OOM_KILL, 100, NULL, 0);
	ev_add(&x, KMSG_HUNG_TASK, 100, NULL, 120);
	eval(&x);
	CHECK(!find(&x, "oom", NULL));
	CHECK(!find(&x, "hung_task", NULL));
	CHECK_INT(x.res.status, STATUS_OK);
	fx_release(&x);
}

TEST(kernel_pcie_downgrades)
{
	static const char nic[] = "63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 "
				  "link at 0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s "
				  "PCIe x16 link)";
	static const char slow[] = "32.000 Gb/s available PCIe bandwidth, limited by 2.5 GT/s PCIe "
				   "x16 link at 0000:3a:00.0 (capable of 504.1 Gb/s with 32.0 GT/s "
				   "PCIe x16 link)";
	struct fx x;
	fx_init(&x, 5000, NULL);
	struct kmsg_event *ev = ev_add(&x, KMSG_PCIE_LIMITED, 7, "0000:3b:00.0", 8);
	strlcpy_v(ev->name, "mlx5_core", 48);
	strlcpy_v(ev->text, nic, 160);
	ev = ev_add(&x, KMSG_PCIE_LIMITED, 7, "0000:9b:00.0", 16);
	strlcpy_v(ev->name, "nvidia", 48);
	strlcpy_v(ev->text, slow, 160);
	ev = ev_add(&x, KMSG_PCIE_LIMITED, 7, "0000:1b:00.0", 8);
	strlcpy_v(ev->name, "nvidia", 48);
	strlcpy_v(ev->text, nic, 160);
	eval(&x);
	expect(&x, "pcie_downgrade", "0000:3b:00.0", STATUS_FAIL, ACTION_INSPECT_HARDWARE);
	CHECK_CONTAINS(find(&x, "pcie_downgrade", "0000:3b:00.0")->message,
		       "limited to 8.0 GT/s x8, capable of 16.0 GT/s x16");
	/* only slower, full width: an idle GPU saving power, perhaps */
	expect(&x, "pcie_downgrade", "0000:9b:00.0", STATUS_WARN, ACTION_INSPECT_HARDWARE);
	expect(&x, "pcie_downgrade", "0000:1b:00.0", STATUS_FAIL, ACTION_INSPECT_HARDWARE);
	fx_release(&x);

	/* from an earlier boot: the links have trained again since */
	fx_init(&x, 5000, NULL);
	ev = ev_add(&x, KMSG_PCIE_LIMITED, 7, "0000:3b:00.0", 8);
	strlcpy_v(ev->name, "mlx5_core", 48);
	strlcpy_v(ev->text, nic, 160);
	ev_add(&x, KMSG_BOOT, 0, NULL, 0);
	eval(&x);
	CHECK(!find(&x, "pcie_downgrade", NULL));
	fx_release(&x);
}

TEST(kernel_link_flaps_threshold)
{
	struct fx x;
	fx_init(&x, 1000, NULL);
	for (int i = 0; i < 3; i++) {
		struct kmsg_event *ev = ev_add(&x, KMSG_LINK_DOWN, 100 + i, "0000:0c:00.0", 0);
		strlcpy_v(ev->name, "ibp12s0", 48);
		ev_add(&x, KMSG_LINK_UP, 100.5 + i, "0000:0c:00.0", 0);
	}
	strlcpy_v(ev_add(&x, KMSG_LINK_DOWN, 100, "0000:0d:00.0", 0)->name, "ibp13s0", 48);
	eval(&x);
	expect(&x, "link_flap", "0000:0c:00.0 ibp12s0", STATUS_WARN, ACTION_REPLACE_CABLE);
	CHECK(!find(&x, "link_flap", "0000:0d:00.0"));
	fx_release(&x);

	fx_init(&x, 1000, "[kernel]\nlink-flaps = 5\n");
	for (int i = 0; i < 3; i++)
		ev_add(&x, KMSG_LINK_DOWN, 100 + i, "0000:0c:00.0", 0);
	eval(&x);
	CHECK(!find(&x, "link_flap", NULL));
	fx_release(&x);
}

TEST(kernel_config_errors)
{
	static const char *const bad[] = {
		"[kernel]\nwindow = soon\n",
		"[kernel]\nwindow = -5\n",
		"[kernel]\nstrict = maybe\n",
		"[kernel]\nignore-xid = 79, abc\n",
		"[kernel]\nlink-flaps = 0\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct config cfg;
		struct kernel_config kc;
		struct strbuf err = STRBUF_INIT;
		config_init(&cfg, "h");
		CHECK(config_parse(&cfg, bad[i], strlen(bad[i]), "t.conf", &err) == 0);
		CHECK_MSG(kernel_config_load(&cfg, &kc, &err) < 0, "accepted '%s'", bad[i]);
		CHECK_CONTAINS(err.buf, "t.conf:");
		CHECK_CONTAINS(err.buf, "kernel.");
		kernel_config_release(&kc);
		config_release(&cfg);
		strbuf_release(&err);
	}
}

static int run_on_file(const char *content, const char *settings, struct check_result *res,
		       struct strbuf *err)
{
	struct config cfg;
	struct strbuf path = STRBUF_INIT;
	config_init(&cfg, "h");
	if (settings)
		config_parse(&cfg, settings, strlen(settings), "t.conf", err);
	strbuf_addf(&path, "%s/k.log", test_tmpdir());
	if (content)
		test_write(test_tmpdir(), "k.log", content);
	struct check_ctx ctx = { .cfg = &cfg, .host = "h", .kernel_log = path.buf, .now = 1.8e9 };
	check_result_init(res, "kernel");
	int r = check_kernel_run(&ctx, res, err);
	result_finish(res);
	config_release(&cfg);
	strbuf_release(&path);
	return r;
}

TEST(kernel_run_on_saved_log)
{
	struct check_result res;
	struct strbuf err = STRBUF_INIT;
	/* "now" is the last line: the Xid 94 two hours before it has faded, the 48 is sticky */
	CHECK_INT(run_on_file("[Mon Nov 30 08:00:00 2026] NVRM: Xid (PCI:0000:0f:00): 94, pid=1, "
			      "Contained: CE User Channel (0x9). RST: No, D-RST: No\n"
			      "[Mon Nov 30 09:00:00 2026] NVRM: Xid (PCI:0000:9b:00): 48, pid=1, "
			      "name=python, DBE\n"
			      "[Mon Nov 30 10:00:00 2026] usb 1-1: something\n",
			      NULL, &res, &err),
		  0);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "xid", "0000:0f:00.0");
	CHECK(f && f->status == STATUS_OK);
	CHECK_CONTAINS(f->message, "last seen 2 h ago");
	f = result_find(&res, "xid", "0000:9b:00.0");
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_RESET_GPU);
	check_result_release(&res);

	/* configuration errors make the check fail to run, with the reason */
	CHECK_INT(run_on_file("", "[kernel]\nwindow = x\n", &res, &err), -1);
	CHECK_CONTAINS(err.buf, "kernel.window");
	check_result_release(&res);
	strbuf_release(&err);
}

TEST(kernel_run_unreadable_log_is_unknown)
{
	struct check_result res;
	struct strbuf err = STRBUF_INIT;
	struct config cfg;
	config_init(&cfg, "h");
	struct check_ctx ctx = { .cfg = &cfg, .kernel_log = "/nonexistent/kern.log", .now = 1.8e9 };
	check_result_init(&res, "kernel");
	CHECK_INT(check_kernel_run(&ctx, &res, &err), -1);
	CHECK_CONTAINS(err.buf, "cannot read '/nonexistent/kern.log'");
	check_result_release(&res);
	/* an empty log is fine */
	CHECK_INT(run_on_file("", NULL, &res, &err), 0);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "kernel log clean: 0 lines");
	check_result_release(&res);
	config_release(&cfg);
	strbuf_release(&err);
}

TEST(kernel_read_tail_keeps_the_newest)
{
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT, path = STRBUF_INIT;
	bool trunc;
	for (int i = 0; i < 1000; i++)
		strbuf_addf(&sb, "[ %d.0] line %d\n", i, i);
	test_write(test_tmpdir(), "big.log", sb.buf);
	strbuf_addf(&path, "%s/big.log", test_tmpdir());
	strbuf_reset(&sb);
	CHECK_INT(kmsg_read_tail(path.buf, &sb, 1000, &trunc, &err), 0);
	CHECK(trunc);
	CHECK(sb.len <= 1000);
	CHECK(starts_with(sb.buf, "[ ")); /* from a line start */
	CHECK(ends_with(sb.buf, "[ 999.0] line 999\n"));
	strbuf_release(&sb);
	strbuf_release(&err);
	strbuf_release(&path);
}
