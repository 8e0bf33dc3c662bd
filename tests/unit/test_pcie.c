/* test_pcie.c: the 'pcie' check: sysfs parsing, evaluate() rules, gather() on fixture trees,
 * the AER state file (a statefile counter file). */
#include "../harness.h"
#include "../../src/checks/pcie.h"
#include "../../src/sys/fsroot.h"

#include <sys/stat.h>
#include <unistd.h>

static struct pci_dev mkdev(const char *bdf, uint32_t vendor, uint32_t cls, unsigned cw,
			    unsigned mw, double cs, double ms)
{
	struct pci_dev d;
	memset(&d, 0, sizeof(d));
	strlcpy_v(d.bdf, bdf, sizeof(d.bdf));
	d.vendor = vendor;
	d.class_code = cls;
	d.has_link = true;
	d.cur_width = cw;
	d.max_width = mw;
	d.cur_gts = cs;
	d.max_gts = ms;
	snprintf(d.cur_speed, sizeof(d.cur_speed), "%.1f GT/s PCIe", cs);
	snprintf(d.max_speed, sizeof(d.max_speed), "%.1f GT/s PCIe", ms);
	return d;
}

static void add(struct pcie_readings *r, struct pci_dev d)
{
	ALLOC_GROW(r->devs, r->nr + 1, r->alloc);
	r->devs[r->nr++] = d;
}

static void eval(const struct pcie_readings *r, const char *ignore, struct check_result *res)
{
	struct pcie_options opt;
	struct config cfg;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "h");
	if (ignore) {
		struct strbuf set = STRBUF_INIT;
		strbuf_addf(&set, "pcie.ignore=%s", ignore);
		CHECK_INT(config_set(&cfg, set.buf, &err), 0);
		strbuf_release(&set);
	}
	CHECK_INT(pcie_options_load(&cfg, &opt, &err), 0);
	check_result_init(res, "pcie");
	pcie_evaluate(r, &opt, res);
	result_finish(res);
	pcie_options_release(&opt);
	config_release(&cfg);
	strbuf_release(&err);
}

TEST(pci_parse_speed_width_and_aer)
{
	double g;
	unsigned w;
	CHECK(pci_parse_speed("32.0 GT/s PCIe", &g) && g == 32.0);
	CHECK(pci_parse_speed("8 GT/s", &g) && g == 8.0);
	CHECK(pci_parse_speed("2.5 GT/s PCIe", &g) && g == 2.5);
	CHECK(!pci_parse_speed("Unknown", &g));
	CHECK(!pci_parse_speed("", &g));
	CHECK(!pci_parse_speed("16.0 GB/s", &g));
	CHECK(pci_parse_width("16", &w) && w == 16);
	CHECK(pci_parse_width("x8", &w) && w == 8);
	CHECK(!pci_parse_width("sixteen", &w));
	CHECK_INT(pci_classify(0x10de, 0x030200), PCI_KIND_GPU);
	CHECK_INT(pci_classify(0x10de, 0x030000), PCI_KIND_GPU);
	CHECK_INT(pci_classify(0x10de, 0x068000), PCI_KIND_NVSWITCH);
	CHECK_INT(pci_classify(0x15b3, 0x020700), PCI_KIND_NIC);
	CHECK_INT(pci_classify(0x10de, 0x020000), PCI_KIND_NIC);
	CHECK_INT(pci_classify(0x10de, 0x040300), PCI_KIND_OTHER); /* GPU audio function */
	CHECK_INT(pci_classify(0x8086, 0x030000), PCI_KIND_OTHER);
	CHECK_INT(pci_classify(0x15b3, 0x060400), PCI_KIND_OTHER);

	struct pci_aer a;
	CHECK(pci_parse_aer("Undefined 0\nDLP 2\nSDES 0\nMalfTLP 1\nTOTAL_ERR_FATAL 3\n", &a));
	CHECK(a.present);
	CHECK_INT(a.total, 3);
	CHECK_STR(a.nonzero, "DLP 2, MalfTLP 1");
	/* older kernels have no TOTAL line: the sum stands in */
	CHECK(pci_parse_aer("RxErr 4\nBadTLP 1\n", &a));
	CHECK_INT(a.total, 5);
	CHECK(!pci_parse_aer("", &a));
	CHECK(!a.present);

	char bdf[32];
	pci_normalize_bdf("1B:00.0", bdf, sizeof(bdf));
	CHECK_STR(bdf, "0000:1b:00.0");
	pci_normalize_bdf("0000:1b:00.0", bdf, sizeof(bdf));
	CHECK_STR(bdf, "0000:1b:00.0");
}

TEST(pcie_healthy_links_give_one_ok_summary)
{
	struct pcie_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 8; i++) {
		char bdf[32];
		snprintf(bdf, sizeof(bdf), "0000:%02x:00.0", 0x18 + i);
		add(&r, mkdev(bdf, 0x10de, 0x030200, 16, 16, 32, 32));
	}
	add(&r, mkdev("0000:05:00.0", 0x10de, 0x068000, 2, 2, 16, 16));
	add(&r, mkdev("0000:1a:00.0", 0x15b3, 0x020700, 16, 16, 32, 32));
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_INT(res.nr, 1);
	CHECK_STR(res.findings[0].code, "summary");
	CHECK_CONTAINS(res.findings[0].message, "10 links at full speed and width");
	CHECK_CONTAINS(res.findings[0].message, "8 GPUs, 1 NVSwitch, 1 NIC");
	check_result_release(&res);
	pcie_readings_release(&r);
}

TEST(pcie_narrow_link_fails_and_ignore_hides_it)
{
	struct pcie_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	add(&r, mkdev("0000:1b:00.0", 0x10de, 0x030200, 8, 16, 32, 32));
	add(&r, mkdev("0000:1c:00.0", 0x10de, 0x030200, 16, 16, 32, 32));
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "link_width", "GPU 0000:1b:00.0");
	CHECK(f);
	CHECK_INT(f->action, ACTION_INSPECT_HARDWARE);
	CHECK_CONTAINS(f->message, "x8 of x16");
	CHECK_CONTAINS(f->message, "reseat or replace");
	CHECK(!result_find(&res, "link_width", "0000:1c:00.0"));
	check_result_release(&res);

	eval(&r, "1b:00.0", &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK(!result_find(&res, "link_width", NULL));
	check_result_release(&res);

	/* a width of 0 (link down) is the same failure */
	r.devs[1].cur_width = 0;
	eval(&r, "0000:1b:00.0", &res);
	CHECK(result_find(&res, "link_width", "0000:1c:00.0"));
	check_result_release(&res);
	pcie_readings_release(&r);
}

TEST(pcie_slow_idle_gpu_is_ok_slow_nic_fails_slow_nvswitch_warns)
{
	struct pcie_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	add(&r, mkdev("0000:1b:00.0", 0x10de, 0x030200, 16, 16, 2.5, 32));
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "1 idle GPU below top speed");
	bool detail = false;
	for (size_t i = 0; i < res.findings[0].nr_details; i++)
		if (!strcmp(res.findings[0].details[i].key, "gpus_below_top_speed"))
			detail = strstr(res.findings[0].details[i].value, "0000:1b:00.0") != NULL;
	CHECK(detail);
	check_result_release(&res);

	/* a NIC below its top speed caps the job's cross-node bandwidth: a failure */
	add(&r, mkdev("0000:1a:00.0", 0x15b3, 0x020700, 16, 16, 16, 32));
	add(&r, mkdev("0000:05:00.0", 0x10de, 0x068000, 2, 2, 8, 16));
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "link_speed", "NIC 0000:1a:00.0");
	CHECK(f);
	CHECK_INT(f->status, STATUS_FAIL);
	CHECK_INT(f->action, ACTION_INSPECT_HARDWARE);
	CHECK_CONTAINS(f->message, "16 of 32 GT/s");
	CHECK_CONTAINS(f->message, "cross-node bandwidth");
	f = result_find(&res, "link_speed", "NVSwitch 0000:05:00.0");
	CHECK(f && f->status == STATUS_WARN);
	CHECK(!result_find(&res, "link_speed", "GPU"));
	check_result_release(&res);

	/* an Ethernet-class NIC (BlueField, ConnectX in Ethernet mode) too; narrow NICs fail as
	 * narrow GPUs do */
	pcie_readings_release(&r);
	memset(&r, 0, sizeof(r));
	add(&r, mkdev("0000:2a:00.0", 0x10de, 0x020000, 16, 16, 8, 16));
	add(&r, mkdev("0000:2b:00.0", 0x15b3, 0x020000, 8, 16, 32, 32));
	eval(&r, NULL, &res);
	f = result_find(&res, "link_speed", "NIC 0000:2a:00.0");
	CHECK(f && f->status == STATUS_FAIL);
	f = result_find(&res, "link_width", "NIC 0000:2b:00.0");
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_INSPECT_HARDWARE);
	check_result_release(&res);
	pcie_readings_release(&r);
}

TEST(pcie_unreadable_link_and_vfs)
{
	struct pcie_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	/* config space reading all-ones: width 63, speed Unknown */
	struct pci_dev d = mkdev("0000:1b:00.0", 0x10de, 0x030200, 63, 16, 0, 32);
	strlcpy_v(d.cur_speed, "Unknown", sizeof(d.cur_speed));
	add(&r, d);
	/* a virtual function has no link of its own */
	d = mkdev("0000:1a:00.2", 0x15b3, 0x020700, 0, 16, 0, 32);
	d.is_vf = true;
	add(&r, d);
	eval(&r, NULL, &res);
	/* cannot read is unknown, not a warning that leaves the host healthy */
	CHECK_INT(res.status, STATUS_UNKNOWN);
	const struct finding *f = result_find(&res, "link_unreadable", "GPU 0000:1b:00.0");
	CHECK(f);
	CHECK_INT(f->status, STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "off the bus");
	CHECK(!result_find(&res, NULL, "0000:1a:00.2"));
	check_result_release(&res);

	/* all-ones on both sides: x63 of x63 and "Unknown" speeds is no healthy link */
	d = mkdev("0000:1b:00.0", 0x10de, 0x030200, 63, 63, 0, 0);
	strlcpy_v(d.cur_speed, "Unknown", sizeof(d.cur_speed));
	strlcpy_v(d.max_speed, "Unknown", sizeof(d.max_speed));
	r.devs[0] = d;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	CHECK(result_find(&res, "link_unreadable", "GPU 0000:1b:00.0"));
	check_result_release(&res);

	/* full width but the kernel cannot tell the current speed */
	d = mkdev("0000:1b:00.0", 0x10de, 0x030200, 16, 16, 0, 32);
	strlcpy_v(d.cur_speed, "Unknown", sizeof(d.cur_speed));
	r.devs[0] = d;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	f = result_find(&res, "link_unreadable", "GPU 0000:1b:00.0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "cannot tell the link speed");
	check_result_release(&res);

	/* a link attribute sysfs would not give: unknown naming device and file */
	d = mkdev("0000:1b:00.0", 0x10de, 0x030200, 0, 16, 32, 32);
	strlcpy_v(d.link_error, "'/sys/bus/pci/devices/0000:1b:00.0/current_link_width' is empty",
		  sizeof(d.link_error));
	r.devs[0] = d;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	f = result_find(&res, "link_unreadable", "GPU 0000:1b:00.0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "current_link_width' is empty");
	CHECK(!result_find(&res, "link_width", NULL));
	check_result_release(&res);

	/* a device whose class cannot be read might be a GPU: unknown by its address */
	d = mkdev("0000:1c:00.0", 0x10de, 0, 0, 0, 0, 0);
	d.has_link = false;
	strlcpy_v(d.id_error, "'/sys/bus/pci/devices/0000:1c:00.0/class' holds NUL bytes",
		  sizeof(d.id_error));
	r.devs[0] = d;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	f = result_find(&res, "unreadable", "PCI device 0000:1c:00.0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "class' holds NUL bytes");
	check_result_release(&res);
	pcie_readings_release(&r);
}

TEST(pcie_aer_fatal_fails_nonfatal_rise_warns)
{
	struct pcie_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	struct pci_dev d = mkdev("0000:1b:00.0", 0x10de, 0x030200, 16, 16, 32, 32);
	pci_parse_aer("DLP 0\nTOTAL_ERR_FATAL 0\n", &d.aer_fatal);
	pci_parse_aer("MalfTLP 7\nTOTAL_ERR_NONFATAL 7\n", &d.aer_nonfatal);
	add(&r, d);
	/* no state: nothing compared, the fatal counter is zero */
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);

	/* a previous reading of 5: 2 new non-fatal errors warn */
	r.state_dir = r.have_prev = true;
	CHECK_INT(pcie_state_parse(&r, "# comment\n0000:1b:00.0 5\n0000:99:00.0 1\n", NULL), 0);
	CHECK_INT(r.prev.nr, 2);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_WARN);
	const struct finding *f = result_find(&res, "aer_nonfatal", "0000:1b:00.0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "non-fatal PCIe errors +2 in under a second");
	check_result_release(&res);

	/* with its time base: over how long and per hour (issue 23) */
	r.age = 300;
	eval(&r, NULL, &res);
	f = result_find(&res, "aer_nonfatal", "0000:1b:00.0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "0000:1b:00.0: non-fatal PCIe errors +2 in 5 min (24/h); total ");
	bool delta = false, secs = false, rate = false;
	for (size_t i = 0; f && i < f->nr_details; i++) {
		delta |= !strcmp(f->details[i].key, "delta") && !strcmp(f->details[i].value, "2");
		secs |= !strcmp(f->details[i].key, "seconds") && !strcmp(f->details[i].value, "300");
		rate |= !strcmp(f->details[i].key, "rate_per_hour") &&
			!strcmp(f->details[i].value, "24");
	}
	CHECK(delta && secs && rate);
	check_result_release(&res);
	r.age = 0;

	/* unchanged, or lower (a reboot reset it): nothing */
	CHECK_INT(pcie_state_parse(&r, "0000:1b:00.0 7\n", NULL), 0);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	CHECK_INT(pcie_state_parse(&r, "0000:1b:00.0 70\n", NULL), 0);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);

	/* any fatal error fails */
	pci_parse_aer("DLP 1\nTOTAL_ERR_FATAL 1\n", &r.devs[0].aer_fatal);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	f = result_find(&res, "aer_fatal", "GPU 0000:1b:00.0");
	CHECK(f);
	CHECK_INT(f->action, ACTION_INSPECT_HARDWARE);
	CHECK_CONTAINS(f->message, "1 fatal PCIe error since boot (DLP 1)");

	struct strbuf st = STRBUF_INIT;
	pcie_state_format(&r, &st);
	CHECK_CONTAINS(st.buf, "\n0000:1b:00.0 7\n");
	strbuf_release(&st);
	check_result_release(&res);
	pcie_readings_release(&r);
}

TEST(pcie_nothing_to_look_at_is_skipped)
{
	struct pcie_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_SKIPPED);
	CHECK_CONTAINS(res.findings[0].message, "no NVIDIA GPUs");
	check_result_release(&res);
	pcie_readings_release(&r);
}

TEST(pcie_bad_ignore_value_is_an_error)
{
	struct config cfg;
	struct pcie_options opt;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "h");
	CHECK_INT(config_set(&cfg, "pcie.ignore=gpu0", &err), 0);
	CHECK_INT(pcie_options_load(&cfg, &opt, &err), -1);
	CHECK_CONTAINS(err.buf, "'gpu0'");
	pcie_options_release(&opt);
	config_release(&cfg);
	strbuf_release(&err);
}

static void write_dev(const char *root, const char *bdf, const char *vendor, const char *cls,
		      const char *speed, const char *width, const char *max_width)
{
	struct strbuf p = STRBUF_INIT;
	const char *attrs[][2] = {
		{ "vendor", vendor },	   { "device", "0x2335" },
		{ "class", cls },	   { "current_link_speed", speed },
		{ "max_link_speed", "32.0 GT/s PCIe" }, { "current_link_width", width },
		{ "max_link_width", max_width },
	};
	for (size_t i = 0; i < ARRAY_SIZE(attrs); i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "sys/bus/pci/devices/%s/%s", bdf, attrs[i][0]);
		struct strbuf v = STRBUF_INIT;
		strbuf_addf(&v, "%s\n", attrs[i][1]);
		test_write(root, p.buf, v.buf);
		strbuf_release(&v);
	}
	strbuf_release(&p);
}

TEST(pcie_gather_reads_sysfs_and_keeps_aer_state)
{
	const char *root = test_tmpdir();
	struct strbuf state = STRBUF_INIT, err = STRBUF_INIT;
	/* the real H200 attributes (docs: REFERENCE.md, data/h200-gpu-pci-sysfs.txt) */
	write_dev(root, "0000:00:06.0", "0x10de", "0x030200", "32.0 GT/s PCIe", "16", "16");
	write_dev(root, "0000:00:07.0", "0x10de", "0x030200", "32.0 GT/s PCIe", "8", "16");
	write_dev(root, "0000:00:01.0", "0x8086", "0x060000", "Unknown", "0", "0");
	test_write(root, "sys/bus/pci/devices/0000:00:07.0/aer_dev_nonfatal",
		   "DLP 0\nMalfTLP 3\nTOTAL_ERR_NONFATAL 3\n");
	test_write(root, "sys/bus/pci/devices/0000:00:07.0/aer_dev_fatal", "TOTAL_ERR_FATAL 0\n");
	strbuf_addf(&state, "%s/state", root);
	test_mkdir(root, "state");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct config cfg;
	config_init(&cfg, "h");
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h", .state_dir = state.buf };

	struct check_result res;
	check_result_init(&res, "pcie");
	CHECK_INT(check_pcie_run(&ctx, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "link_width", "GPU 0000:00:07.0"));
	CHECK(!result_find(&res, NULL, "0000:00:01.0"));
	CHECK(!result_find(&res, "aer_nonfatal", NULL));
	check_result_release(&res);

	/* the next run sees 2 more non-fatal errors */
	test_write(root, "sys/bus/pci/devices/0000:00:07.0/aer_dev_nonfatal",
		   "MalfTLP 5\nTOTAL_ERR_NONFATAL 5\n");
	check_result_init(&res, "pcie");
	CHECK_INT(check_pcie_run(&ctx, &res, &err), 0);
	const struct finding *f = result_find(&res, "aer_nonfatal", "0000:00:07.0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "non-fatal PCIe errors +2 ");
	check_result_release(&res);

	/* gather alone: two interesting devices, link attributes parsed */
	struct pcie_readings r;
	memset(&r, 0, sizeof(r));
	CHECK_INT(pcie_gather(&ctx, &r, &err), 0);
	CHECK_INT(r.nr, 2);
	CHECK_STR(r.devs[0].bdf, "0000:00:06.0");
	CHECK_STR(r.devs[0].cur_speed, "32.0 GT/s PCIe");
	CHECK(r.devs[0].cur_gts == 32.0 && r.devs[0].max_width == 16);
	CHECK(!r.devs[0].aer_fatal.present);
	CHECK(r.devs[1].aer_nonfatal.present && r.devs[1].aer_nonfatal.total == 5);
	CHECK(r.have_prev);
	pcie_readings_release(&r);

	config_release(&cfg);
	strbuf_release(&state);
	strbuf_release(&err);
	fsroot_release(&fr);
}

TEST(pcie_gather_unreadable_values_are_unknown_by_device)
{
	const char *root = test_tmpdir();
	struct strbuf err = STRBUF_INIT, p = STRBUF_INIT;
	write_dev(root, "0000:00:06.0", "0x10de", "0x030200", "32.0 GT/s PCIe", "16", "16");
	/* a NUL-filled width is no "x0: reseat or replace" */
	write_dev(root, "0000:00:07.0", "0x10de", "0x030200", "32.0 GT/s PCIe", "16", "16");
	test_write_bytes(root, "sys/bus/pci/devices/0000:00:07.0/current_link_width", "\0\0\0\0", 4);
	/* a speed that cannot be read (EISDIR stands in for EIO) */
	write_dev(root, "0000:00:08.0", "0x15b3", "0x020700", "32.0 GT/s PCIe", "16", "16");
	strbuf_addf(&p, "%s/sys/bus/pci/devices/0000:00:08.0/current_link_speed", root);
	CHECK_INT(unlink(p.buf), 0);
	test_mkdir(root, "sys/bus/pci/devices/0000:00:08.0/current_link_speed");
	/* an AER file of junk with an escape sequence in it */
	write_dev(root, "0000:00:09.0", "0x10de", "0x030200", "32.0 GT/s PCIe", "16", "16");
	test_write(root, "sys/bus/pci/devices/0000:00:09.0/aer_dev_fatal", "\x1b[31mgarbage\n");
	/* an empty max width */
	write_dev(root, "0000:00:0a.0", "0x10de", "0x068000", "16.0 GT/s PCIe", "2", "");
	/* a vendor of NUL bytes: might be a GPU */
	write_dev(root, "0000:00:0b.0", "0x10de", "0x030200", "32.0 GT/s PCIe", "16", "16");
	test_write_bytes(root, "sys/bus/pci/devices/0000:00:0b.0/vendor", "\0\0\0\0\0\0\0", 7);
	/* an Intel device with an unreadable class cannot be a GPU or NIC of ours: left alone */
	write_dev(root, "0000:00:0c.0", "0x8086", "0x060000", "Unknown", "0", "0");
	test_write_bytes(root, "sys/bus/pci/devices/0000:00:0c.0/class", "\0", 1);
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct config cfg;
	config_init(&cfg, "h");
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h" };
	struct check_result res;
	check_result_init(&res, "pcie");
	CHECK_MSG(check_pcie_run(&ctx, &res, &err) == 0, "run: %s", err.buf);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	CHECK(!result_find(&res, "link_width", NULL));
	CHECK(!result_find(&res, NULL, "0000:00:06.0"));
	CHECK(!result_find(&res, NULL, "0000:00:0c.0"));
	const struct finding *f = result_find(&res, "link_unreadable", "GPU 0000:00:07.0");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "/sys/bus/pci/devices/0000:00:07.0/current_link_width' holds "
				   "NUL bytes");
	f = result_find(&res, "link_unreadable", "NIC 0000:00:08.0");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "current_link_speed");
	f = result_find(&res, "aer_unreadable", "GPU 0000:00:09.0");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "aer_dev_fatal' holds no error counters ('\\x1b[31mgarbage')");
	CHECK_NOT_CONTAINS(f->message, "\x1b");
	f = result_find(&res, "link_unreadable", "NVSwitch 0000:00:0a.0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "max_link_width' is empty");
	f = result_find(&res, "unreadable", "PCI device 0000:00:0b.0");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "vendor' holds NUL bytes");
	/* the healthy GPU still counts: a summary says what was fine */
	f = result_find(&res, "summary", NULL);
	CHECK(f);
	CHECK_CONTAINS(f->message, "1 of 6 devices without PCIe problems");
	check_result_release(&res);
	config_release(&cfg);
	strbuf_release(&err);
	strbuf_release(&p);
	fsroot_release(&fr);
}

TEST(pcie_aer_names_past_the_buffer_are_marked_not_dropped)
{
	struct pci_aer a;
	struct strbuf text = STRBUF_INIT;
	for (int i = 0; i < 30; i++)
		strbuf_addf(&text, "ErrorKind%02d %d\n", i, i + 1);
	CHECK(pci_parse_aer(text.buf, &a));
	CHECK_INT(a.total, 465);
	CHECK_CONTAINS(a.nonzero, "ErrorKind00 1, ErrorKind01 2");
	CHECK_MSG(ends_with(a.nonzero, "..."), "names cut without a mark: '%s'", a.nonzero);
	strbuf_release(&text);
}

TEST(pcie_no_pci_bus_is_skipped_and_bad_config_is_an_error)
{
	const char *root = test_tmpdir();
	struct strbuf err = STRBUF_INIT;
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct config cfg;
	config_init(&cfg, "h");
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h" };
	struct check_result res;
	check_result_init(&res, "pcie");
	CHECK_INT(check_pcie_run(&ctx, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_SKIPPED);
	check_result_release(&res);

	CHECK_INT(config_set(&cfg, "pcie.ignore=nonsense", &err), 0);
	check_result_init(&res, "pcie");
	CHECK_INT(check_pcie_run(&ctx, &res, &err), -1);
	CHECK_CONTAINS(err.buf, "pcie.ignore");
	check_result_release(&res);
	config_release(&cfg);
	strbuf_release(&err);
	fsroot_release(&fr);
}

/* One run of the check on root with the state directory; the state finding's message (or ""),
 * and whether an aer_nonfatal finding said "N new". */
static void run_with_state(struct check_ctx *ctx, struct strbuf *state_msg, struct strbuf *aer)
{
	struct check_result res;
	struct strbuf err = STRBUF_INIT;
	check_result_init(&res, "pcie");
	CHECK_INT(check_pcie_run(ctx, &res, &err), 0);
	strbuf_reset(state_msg);
	strbuf_reset(aer);
	for (size_t i = 0; i < res.nr; i++) {
		if (!strcmp(res.findings[i].code, "state"))
			strbuf_addf(state_msg, "%s\n", res.findings[i].message);
		if (!strcmp(res.findings[i].code, "aer_nonfatal"))
			strbuf_addf(aer, "%s\n", res.findings[i].message);
	}
	check_result_release(&res);
	strbuf_release(&err);
}

/*
 * pcie-aer.state is a statefile counter file: the file vigil wrote before (its own header, the
 * same BDF COUNT lines) loads and is compared; a damaged, foreign or planted one is "no previous
 * reading", said in a state warning, never made-up readings, and replaced by a good one.
 */
TEST(pcie_aer_state_is_a_counter_file_old_loads_damaged_is_said)
{
	const char *root = test_tmpdir();
	struct strbuf state = STRBUF_INIT, p = STRBUF_INIT, msg = STRBUF_INIT, aer = STRBUF_INIT,
		      text = STRBUF_INIT;
	write_dev(root, "0000:00:07.0", "0x10de", "0x030200", "32.0 GT/s PCIe", "16", "16");
	test_write(root, "sys/bus/pci/devices/0000:00:07.0/aer_dev_nonfatal",
		   "MalfTLP 5\nTOTAL_ERR_NONFATAL 5\n");
	test_write(root, "sys/bus/pci/devices/0000:00:07.0/aer_dev_fatal", "TOTAL_ERR_FATAL 0\n");
	strbuf_addf(&state, "%s/state", root);
	strbuf_addf(&p, "%s/" PCIE_STATE_FILE, state.buf);
	test_mkdir(root, "state");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct config cfg;
	config_init(&cfg, "h");
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h", .state_dir = state.buf };

	/* the old file: read as it is, the rise judged, then rewritten in the statefile format */
	test_write(root, "state/" PCIE_STATE_FILE,
		   "# vigil pcie: non-fatal AER totals at the last run (BDF COUNT)\n"
		   "0000:00:07.0 3\n");
	run_with_state(&ctx, &msg, &aer);
	CHECK_STR(msg.buf, "");
	CHECK_CONTAINS(aer.buf, "non-fatal PCIe errors +2 since the last run (its time unknown)");
	CHECK_INT(read_file_bounded(p.buf, &text, 1 << 20, NULL), READ_OK);
	CHECK_CONTAINS(text.buf, "# vigil pcie counters");
	CHECK_CONTAINS(text.buf, "\n0000:00:07.0 5\n");

	/* damaged after a good line: nothing of it is believed (the old parser took the line) */
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "0000:00:07.0 1\n\x7f" "ELF garbage\n", "line 2 is not NAME VALUE" },
		{ "0000:00:07.0 -4\n", "line 1 is not NAME VALUE" },
		{ "0000:00:07.0 1 2 3 x\n", "line 1 is not NAME VALUE" },
		{ "# vigil infiniband counters\n0000:00:07.0 1\n",
		  "it is not a vigil pcie counter file" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		test_write(root, "state/" PCIE_STATE_FILE, bad[i].text);
		run_with_state(&ctx, &msg, &aer);
		CHECK_CONTAINS(msg.buf, "no previous AER reading: '");
		CHECK_CONTAINS(msg.buf, PCIE_STATE_FILE "' is not usable: ");
		CHECK_CONTAINS(msg.buf, bad[i].why);
		CHECK_CONTAINS(msg.buf, "(a new one is kept)");
		CHECK_STR(aer.buf, "");
		strbuf_reset(&text);
		CHECK_INT(read_file_bounded(p.buf, &text, 1 << 20, NULL), READ_OK);
		CHECK_CONTAINS(text.buf, "# vigil pcie counters");
		CHECK_CONTAINS(text.buf, "\n0000:00:07.0 5\n");
	}
	/* the replaced file is compared with next time: steady, nothing said */
	run_with_state(&ctx, &msg, &aer);
	CHECK_STR(msg.buf, "");
	CHECK_STR(aer.buf, "");

	/* a FIFO planted there: no hang, not read, not replaced, said twice */
	CHECK_INT(unlink(p.buf), 0);
	CHECK_INT(mkfifo(p.buf, 0644), 0);
	run_with_state(&ctx, &msg, &aer);
	CHECK_CONTAINS(msg.buf, PCIE_STATE_FILE "' is a FIFO, not a regular file");
	CHECK_CONTAINS(msg.buf, "cannot keep the AER reading: cannot write '");
	CHECK_STR(aer.buf, "");
	struct stat st;
	CHECK(lstat(p.buf, &st) == 0 && S_ISFIFO(st.st_mode));

	config_release(&cfg);
	fsroot_release(&fr);
	strbuf_release(&state);
	strbuf_release(&p);
	strbuf_release(&msg);
	strbuf_release(&aer);
	strbuf_release(&text);
}
