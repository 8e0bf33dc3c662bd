/*
 * test_kernel_check.c: the 'kernel' check's evaluate() on hand-built events (stickiness, fading,
 * the catalog's statuses, strict mode, ignore lists, dedupe), its configuration, its gather()
 * on files, and the whole binary on logs that must not read as clean (floods, a 1 GiB log, empty,
 * zero-filled and non-log files).
 */
#include "../harness.h"
#include <sys/stat.h>
#include "../../src/checks/kernel.h"
#include "../../src/logs/xid.h"
#include "../../src/lib/fileio.h"

#include <fcntl.h>
#include <unistd.h>

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
	/* an empty log is no evidence: unknown, naming the file, not "clean" */
	CHECK_INT(run_on_file("", NULL, &res, &err), -1);
	CHECK_CONTAINS(err.buf, "empty kernel log: '");
	CHECK_CONTAINS(err.buf, "/k.log' (a 'dmesg' without root privileges writes nothing)");
	check_result_release(&res);
	config_release(&cfg);
	strbuf_release(&err);
}

/* ---- no healthy without evidence: floods, huge logs, logs that are not logs ---- */

#define XID79_LINE "NVRM: Xid (PCI:0000:9b:00): 79, pid=9962, name=python, GPU has fallen off the bus."

TEST(kernel_every_fault_is_judged_past_600_noise_groups)
{
	struct fx x;
	fx_init(&x, 10000, NULL);
	/* 600 distinct hung tasks long ago (the old code kept 512 groups), then an Xid 79 */
	for (int i = 0; i < 600; i++) {
		struct kmsg_event *ev = ev_add(&x, KMSG_HUNG_TASK, 10 + i, NULL, 120);
		snprintf(ev->name, sizeof(ev->name), "task%d", i);
	}
	ev_add(&x, KMSG_XID, 9990, A, 79);
	eval(&x);
	expect(&x, "xid", A, STATUS_FAIL, ACTION_REBOOT);
	CHECK_INT(x.res.status, STATUS_FAIL);
	fx_release(&x);

	/* 30 recent distinct hung tasks: 10 findings and a count, not 30 */
	fx_init(&x, 10000, NULL);
	for (int i = 0; i < 30; i++) {
		struct kmsg_event *ev = ev_add(&x, KMSG_HUNG_TASK, 9000 + i, NULL, 120);
		snprintf(ev->name, sizeof(ev->name), "task%d", i);
	}
	eval(&x);
	size_t shown = 0;
	bool more = false;
	for (size_t i = 0; i < x.res.nr; i++) {
		if (strcmp(x.res.findings[i].code, "hung_task"))
			continue;
		if (strstr(x.res.findings[i].message, "20 more hung tasks not shown"))
			more = true;
		else
			shown++;
	}
	CHECK_INT(shown, 10);
	CHECK(more);
	fx_release(&x);
}

TEST(kernel_thousands_of_findings_fold_and_keep_the_worst)
{
	struct fx x;
	char bdf[20];
	fx_init(&x, 10000, NULL);
	/* 600 application Xids on distinct GPUs (ok), then one Xid 79: the result stays small
	 * enough for the runner's pipe, and the fault is among what is shown */
	for (int i = 0; i < 600; i++) {
		snprintf(bdf, sizeof(bdf), "%04x:%02x:00.0", i / 256, i % 256);
		ev_add(&x, KMSG_XID, 9000, bdf, 13);
	}
	ev_add(&x, KMSG_XID, 9990, A, 79);
	eval(&x);
	CHECK_INT(x.res.status, STATUS_FAIL);
	expect(&x, "xid", A, STATUS_FAIL, ACTION_REBOOT);
	CHECK_INT(x.res.nr, 500 + 2); /* the shown ones, the fold, the summary */
	const struct finding *f = find(&x, "more", NULL);
	CHECK(f && f->status == STATUS_OK);
	CHECK_CONTAINS(f->message, "101 more findings not shown; the worst: Xid 13 on GPU");
	fx_release(&x);
}

TEST(kernel_incomplete_read_and_lost_faults_are_unknown)
{
	struct fx x;
	fx_init(&x, 100, NULL);
	free(x.in.source);
	x.in.source = xstrdup("/var/log/kern\x1b[2J.log");
	x.in.incomplete = true;
	x.in.read_bytes = 4096;
	x.in.size = 1073741824;
	eval(&x);
	expect(&x, "incomplete", "kernel log", STATUS_UNKNOWN, ACTION_INVESTIGATE);
	const struct finding *f = find(&x, "incomplete", NULL);
	CHECK_STR(f->message, "read 4096 of 1073741824 bytes of '/var/log/kern\\x1b[2J.log' before "
			      "the deadline; the rest was not judged");
	CHECK_INT(x.res.status, STATUS_UNKNOWN);
	f = find(&x, "summary", NULL);
	CHECK_NOT_CONTAINS(f->message, "\x1b");
	fx_release(&x);

	/* a fault in the part read still fails the host */
	fx_init(&x, 100, NULL);
	x.in.incomplete = true;
	x.in.read_bytes = 4096;
	ev_add(&x, KMSG_XID, 50, A, 79);
	eval(&x);
	CHECK_INT(x.res.status, STATUS_FAIL);
	expect(&x, "incomplete", "kernel log", STATUS_UNKNOWN, ACTION_INVESTIGATE);
	CHECK_CONTAINS(find(&x, "incomplete", NULL)->message, "read 4096 bytes of 'test' before "
							       "the deadline, not to its end");
	fx_release(&x);

	/* faults given up past the hard cap, and noise dropped, are said */
	fx_init(&x, 100, NULL);
	x.in.log.lost = 7;
	x.in.log.dropped = 5000;
	eval(&x);
	expect(&x, "events_lost", "kernel log", STATUS_UNKNOWN, ACTION_INVESTIGATE);
	CHECK_CONTAINS(find(&x, "events_lost", NULL)->message, "7 older GPU fault or reset events");
	CHECK_CONTAINS(find(&x, "summary", NULL)->message,
		       "5000 older OOM, hung-task, link or NVRM messages past the event cap not judged");
	fx_release(&x);
}

TEST(kernel_unknown_nvrm_quotes_a_short_excerpt)
{
	struct fx x;
	fx_init(&x, 100, "[kernel]\nstrict = true\n");
	struct kmsg_event *ev = ev_add(&x, KMSG_NVRM_UNKNOWN, 90, NULL, 0);
	memset(ev->text, 'z', sizeof(ev->text) - 1);
	ev->text[sizeof(ev->text) - 1] = 0;
	eval(&x);
	const struct finding *f = find(&x, "unknown_nvrm", NULL);
	CHECK(f && strlen(f->message) < 120);
	CHECK(ends_with(f->message, "zzz..."));
	fx_release(&x);
}

/* vigil check --only kernel --kernel-log PATH --json: exit code and the parsed report. */
static struct json_value *check_log(const char *path, int exit_code)
{
	/* the verdict is what these tests judge, not the speed: a loaded machine (ASan, two lanes)
	 * must not turn a big log's verdict into the check's own timeout */
	const char *args[] = { "check",	 "--only", "kernel", "--kernel-log", path, "--json",
			       "-c",	 "kernel.timeout=120", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == exit_code, "exit %d, expected %d:\n%s%s", c.exit_code, exit_code,
		  c.out.buf, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	child_release(&c);
	return v;
}

static void write_big(const char *name, const struct strbuf *sb, struct strbuf *path)
{
	strbuf_reset(path);
	strbuf_addf(path, "%s/%s", test_tmpdir(), name);
	CHECK_INT(write_file(path->buf, sb->buf, sb->len, false, NULL), 0);
}

TEST(kernel_cli_fault_behind_noise_floods_fails)
{
	struct strbuf sb = STRBUF_INIT, path = STRBUF_INIT;
	/* 600 distinct old hung tasks, then a recent Xid 79 */
	for (int i = 0; i < 600; i++)
		strbuf_addf(&sb, "[ %d.0] INFO: task worker%d:%d blocked for more than 120 seconds.\n",
			    100 + i, i, 1000 + i);
	strbuf_addstr(&sb, "[ 90000.0] " XID79_LINE "\n");
	write_big("hung.log", &sb, &path);
	struct json_value *v = check_log(path.buf, 1);
	CHECK_CONTAINS(json_get_string(v, "reason"), "Xid 79");
	json_free(v);

	/* an Xid 79, then 20,000 distinct NVRM lines */
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "[ 10.0] " XID79_LINE "\n");
	for (int i = 0; i < 20000; i++)
		strbuf_addf(&sb, "[ %d.0] NVRM: nvAssertFailed at src/x.c:%d\n", 11 + i, i);
	write_big("nvrm.log", &sb, &path);
	v = check_log(path.buf, 1);
	CHECK_CONTAINS(json_get_string(v, "reason"), "Xid 79");
	json_free(v);

	/* 60,000 distinct faults (a forged log): still unhealthy, not a result too big to pass */
	strbuf_reset(&sb);
	for (int i = 0; i < 60000; i++)
		strbuf_addf(&sb, "[ %d.0] NVRM: Xid (PCI:%04x:%02x:00): 48, pid=1, name=x, DBE\n", i,
			    i / 256, i % 256);
	write_big("forged.log", &sb, &path);
	v = check_log(path.buf, 1);
	CHECK_CONTAINS(json_get_string(v, "reason"), "Xid 48");
	json_free(v);
	strbuf_release(&sb);
	strbuf_release(&path);
}

TEST(kernel_cli_reads_a_1gib_log_whole)
{
	struct strbuf sb = STRBUF_INIT, path = STRBUF_INIT;
	/* a 1 GiB file, sparse: the Xid in its first bytes, a zero-filled gigabyte, a clean tail */
	strbuf_addf(&path, "%s/huge.log", test_tmpdir());
	int fd = open(path.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	strbuf_addstr(&sb, "[   10.000000] " XID79_LINE "\n");
	CHECK_INT(write(fd, sb.buf, sb.len), (ssize_t)sb.len);
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "\n[ 5000.000000] usb 1-1: new high-speed USB device number 2\n");
	CHECK_INT(pwrite(fd, sb.buf, sb.len, (1LL << 30) - (off_t)sb.len), (ssize_t)sb.len);
	close(fd);
	struct json_value *v = check_log(path.buf, 1);
	CHECK_CONTAINS(json_get_string(v, "reason"), "Xid 79");
	json_free(v);

	/* 70 MiB of text with the Xid first (the old reader kept the newest 64 MiB) */
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "[ 1.0] " XID79_LINE "\n");
	while (sb.len < (70u << 20))
		strbuf_addf(&sb, "[ %zu.0] systemd[1]: Started Session %zu of User ubuntu.\n",
			    sb.len >> 10, sb.len);
	write_big("text.log", &sb, &path);
	v = check_log(path.buf, 1);
	CHECK_CONTAINS(json_get_string(v, "reason"), "Xid 79");
	json_free(v);
	strbuf_release(&sb);
	strbuf_release(&path);
}

TEST(kernel_cli_logs_without_evidence_are_unknown)
{
	struct strbuf sb = STRBUF_INIT, path = STRBUF_INIT;
	struct {
		const char *name;
		size_t zeros; /* bytes of zeros, else text */
		const char *text;
		const char *cause, *error;
	} cases[] = {
		{ "empty.log", 0, "", "empty kernel log: '",
		  "empty.log' (a 'dmesg' without root privileges writes nothing)" },
		{ "zero.log", 1 << 20, NULL, "only zero bytes, not a kernel log: '",
		  "zero.log' (1048576 bytes)" },
		{ "passwd", 0,
		  "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
		  "does not look like a kernel log: '",
		  "passwd' (no time stamps, no kernel messages; it starts "
		  "'root:x:0:0:root:/root:/bin/bash')" },
		{ "esc.txt", 0, "\x1b]0;owned\x07 hello, and a long line of plain words after it\n",
		  "does not look like a kernel log: '",
		  "it starts '\\x1b]0;owned\\x07 hello, and a long line" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		strbuf_reset(&sb);
		if (cases[i].text)
			strbuf_addstr(&sb, cases[i].text);
		else
			for (size_t k = 0; k < cases[i].zeros; k++)
				strbuf_addch(&sb, 0);
		write_big(cases[i].name, &sb, &path);
		struct json_value *v = check_log(path.buf, 3);
		CHECK_STR(json_path(v, "checks.0.status")->string, "unknown");
		const char *e = json_get_string(json_path(v, "checks.0"), "error");
		CHECK_CONTAINS(e, cases[i].error);
		CHECK_CONTAINS(e, test_tmpdir());
		CHECK_MSG(starts_with(e, cases[i].cause), "%s", e);
		CHECK_NOT_CONTAINS(e, "\x1b");
		json_free(v);
	}
	/* a 100 MiB sparse zero file: also unknown, and read whole */
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/sparse.log", test_tmpdir());
	int fd = open(path.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && ftruncate(fd, 100 << 20) == 0);
	close(fd);
	struct json_value *v = check_log(path.buf, 3);
	CHECK_CONTAINS(json_get_string(json_path(v, "checks.0"), "error"),
		       "only zero bytes, not a kernel log: '");
	CHECK_CONTAINS(json_get_string(json_path(v, "checks.0"), "error"), "(104857600 bytes)");
	json_free(v);
	strbuf_release(&sb);
	strbuf_release(&path);
}

/* A saved log after a crash: a run of zero bytes where the page cache never reached the disk,
 * and the next boot's lines right after it, with no newline between. The fault after the zeros
 * is judged, however long the run (within a read chunk or across chunks). */
TEST(kernel_cli_fault_after_a_crash_zero_run_fails)
{
	const char *tmp = test_tmpdir();
	static const char head[] = "6,1,1000000,-;Linux version 6.1.0\n";
	static const char xid[] = "3,100,2000000,-;NVRM: Xid (PCI:0000:9b:00): 79, pid=1, "
				  "name=python, GPU has fallen off the bus.\n";
	const size_t runs[] = { 5000, (3u << 20) + 7 };
	for (size_t i = 0; i < ARRAY_SIZE(runs); i++) {
		size_t n = strlen(head) + runs[i] + strlen(xid);
		char *buf = xcalloc(n, 1);
		memcpy(buf, head, strlen(head));
		memcpy(buf + strlen(head) + runs[i], xid, strlen(xid));
		char rel[32], path[600];
		snprintf(rel, sizeof(rel), "log%zu", i);
		test_write_bytes(tmp, rel, buf, n);
		free(buf);
		snprintf(path, sizeof(path), "%s/%s", tmp, rel);
		const char *args[] = { "check", "--only", "kernel", "--kernel-log", path, "--reason",
				       NULL };
		struct child c;
		test_run_vigil(&c, args, NULL);
		CHECK_MSG(c.exit_code == 1, "%zu zero bytes: exit %d: %s", runs[i], c.exit_code,
			  c.out.buf);
		CHECK_CONTAINS(c.out.buf, "Xid 79");
		child_release(&c);
	}
}

/* A FIFO given as the kernel log whose writer wrote nothing: unknown, and said as it is. */
TEST(kernel_cli_empty_pipe_is_unknown_and_said_so)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/klog", test_tmpdir());
	CHECK(mkfifo(path, 0600) == 0);
	/* the verdict is what these tests judge, not the speed: a loaded machine (ASan, two lanes)
	 * must not turn a big log's verdict into the check's own timeout */
	const char *args[] = { "check",	 "--only", "kernel", "--kernel-log", path, "--json",
			       "-c",	 "kernel.timeout=120", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "a pipe whose writer wrote nothing");
	CHECK_NOT_CONTAINS(c.out.buf, "dmesg");
	child_release(&c);
}
