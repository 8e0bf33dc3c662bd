/*
 * test_system.c: the 'system' check: evaluate() rules for peermem, fabric manager, CPU governor and
 * frequency, swap and memory; /proc parsing; gather() on a fixture tree.
 */
#include "../harness.h"
#include "../../src/checks/system.h"
#include "../../src/sys/fsroot.h"

/* Room for hand-built governor tables (the readings' own table grows in gather). */
static struct system_governor govs[4];

/* A healthy bare-metal host: peermem loaded, 4 CPUs on performance, no swap, 90 % free. */
static void healthy(struct system_readings *r)
{
	memset(r, 0, sizeof(*r));
	memset(govs, 0, sizeof(govs));
	r->peermem = true;
	strlcpy_v(r->peermem_module, "nvidia_peermem", sizeof(r->peermem_module));
	r->proc_listed = true;
	r->cpus = r->cpufreq = 4;
	r->governors = govs;
	strlcpy_v(r->governors[0].name, "performance", sizeof(r->governors[0].name));
	r->governors[0].cpus = 4;
	r->nr_governors = 1;
	r->swaps_read = true;
	r->meminfo_read = true;
	r->mem_total_kb = 2048ull * 1024 * 1024;
	r->mem_avail_kb = r->mem_total_kb * 9 / 10;
}

/* Release readings that may point at govs. */
static void release(struct system_readings *r)
{
	if (r->governors == govs)
		r->governors = NULL;
	system_readings_release(r);
}

static void eval(const struct system_readings *r, const char *const *sets,
		 struct check_result *res)
{
	struct config cfg;
	struct system_options opt;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "h");
	for (size_t i = 0; sets && sets[i]; i++)
		CHECK_INT(config_set(&cfg, sets[i], &err), 0);
	CHECK_MSG(system_options_load(&cfg, &opt, &err) == 0, "options: %s", err.buf);
	check_result_init(res, "system");
	system_evaluate(r, &opt, res);
	result_finish(res);
	config_release(&cfg);
	strbuf_release(&err);
}

TEST(system_healthy_host_one_ok_summary)
{
	struct system_readings r;
	struct check_result res;
	healthy(&r);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_INT(res.nr, 1);
	CHECK_STR(res.findings[0].message, "nvidia_peermem loaded; 4 CPUs on the performance "
					   "governor; no swap; 90 % of 2048 GiB memory available");
	check_result_release(&res);
	release(&r);
}

TEST(system_peermem_required_or_optional)
{
	struct system_readings r;
	struct check_result res;
	healthy(&r);
	r.peermem = false;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "nvidia_peermem not loaded (optional)");
	check_result_release(&res);
	const char *req[] = { "system.peermem=required", NULL };
	eval(&r, req, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "peermem", "nvidia_peermem");
	CHECK(f && f->action == ACTION_LOAD_MODULE);
	CHECK_CONTAINS(f->message, "GPUDirect RDMA is off");
	check_result_release(&res);
	/* the older Mellanox module counts */
	r.peermem = true;
	strlcpy_v(r.peermem_module, "nv_peer_mem", sizeof(r.peermem_module));
	eval(&r, req, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "nv_peer_mem loaded");
	check_result_release(&res);
	release(&r);
}

TEST(system_fabricmanager_on_nvswitch_hosts)
{
	struct system_readings r;
	struct check_result res;
	healthy(&r);
	r.nvswitches = 4;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "fabricmanager", NULL);
	CHECK(f && f->action == ACTION_START_SERVICE);
	CHECK_CONTAINS(f->message, "not running (4 NVSwitches)");
	check_result_release(&res);
	r.fabricmanager = true;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "fabric manager running for 4 NVSwitches");
	check_result_release(&res);
	r.proc_listed = false;
	r.fabricmanager = false;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	check_result_release(&res);
	/* no NVSwitch: nothing to say about the fabric manager */
	r.nvswitches = 0;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_NOT_CONTAINS(res.findings[0].message, "fabric");
	check_result_release(&res);
	release(&r);
}

TEST(system_cpu_governor_and_frequency)
{
	struct system_readings r;
	struct check_result res;
	healthy(&r);
	r.governors[0].cpus = 1;
	strlcpy_v(r.governors[1].name, "powersave", sizeof(r.governors[1].name));
	r.governors[1].cpus = 3;
	r.nr_governors = 2;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_WARN);
	const struct finding *f = result_find(&res, "governor", "CPU");
	CHECK(f && f->action == ACTION_FIX_CONFIG);
	CHECK_CONTAINS(f->message, "3 of 4 CPUs use the 'powersave' frequency governor");
	check_result_release(&res);
	const char *any[] = { "system.governor=any", NULL };
	eval(&r, any, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	const char *ps[] = { "system.governor=powersave", NULL };
	eval(&r, ps, &res);
	CHECK_INT(res.status, STATUS_WARN);
	CHECK_CONTAINS(result_find(&res, "governor", NULL)->message, "1 of 4");
	check_result_release(&res);

	/* idle CPUs clock down: only a detail unless a floor is configured */
	healthy(&r);
	double ratios[] = { 0.3, 0.3, 0.35, 1.0 };
	r.freq_ratio = ratios;
	r.nr_freq = 4;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	bool detail = false;
	for (size_t i = 0; i < res.findings[0].nr_details; i++)
		detail |= !strcmp(res.findings[0].details[i].key, "median_cpu_freq_ratio");
	CHECK(detail);
	check_result_release(&res);
	const char *floor5[] = { "system.min-freq-ratio=0.5", NULL };
	eval(&r, floor5, &res);
	CHECK_INT(res.status, STATUS_WARN);
	CHECK_CONTAINS(result_find(&res, "cpu_freq", "CPU")->message, "3 of 4 CPUs below 0.5");
	check_result_release(&res);
	const char *floor3[] = { "system.min-freq-ratio=0.32", NULL };
	eval(&r, floor3, &res); /* only 2 of 4 below: not most */
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	r.freq_ratio = NULL;
	r.nr_freq = 0;

	/* a VM: no cpufreq at all */
	r.cpufreq = 0;
	r.nr_governors = 0;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "no cpufreq (VM?)");
	check_result_release(&res);
	release(&r);
}

TEST(system_swap_policy_and_memory)
{
	struct system_readings r;
	struct check_result res;
	healthy(&r);
	system_parse_swaps(&r, "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
			       "/dev/nvme0n1p3                          partition\t8388604\t\t0\t\t-2\n"
			       "/swapfile                               file\t\t1048576\t\t0\t\t-3\n");
	CHECK_INT(r.swap_devices, 2);
	CHECK_INT(r.swap_kb, 8388604 + 1048576);
	CHECK_STR(r.swap_first, "/dev/nvme0n1p3");
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_WARN);
	const struct finding *f = result_find(&res, "swap", "swap");
	CHECK(f && f->action == ACTION_FIX_CONFIG);
	CHECK_CONTAINS(f->message, "swap is on (/dev/nvme0n1p3 and more, 9.0 GiB)");
	check_result_release(&res);
	const char *fail[] = { "system.swap=fail", NULL };
	eval(&r, fail, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	check_result_release(&res);
	const char *allowed[] = { "system.swap=allowed", NULL };
	eval(&r, allowed, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "swap on (allowed)");
	check_result_release(&res);

	healthy(&r);
	system_parse_meminfo(&r, "MemTotal:       2113459316 kB\nMemFree:        100 kB\n"
				 "MemAvailable:   84538372 kB\n"); /* 4 % */
	CHECK_INT(r.mem_total_kb, 2113459316ull);
	CHECK_INT(r.mem_avail_kb, 84538372ull);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_WARN);
	f = result_find(&res, "memory", "memory");
	CHECK(f);
	CHECK_CONTAINS(f->message, "only 4.0 % of memory available");
	check_result_release(&res);
	r.mem_avail_kb = r.mem_total_kb / 50; /* 2 %: below half the floor */
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	check_result_release(&res);
	const char *two[] = { "system.min-available=2%", NULL };
	r.mem_avail_kb = r.mem_total_kb / 40; /* 2.5 % */
	eval(&r, two, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);

	/* a fixture without /proc files: left unjudged, and said so */
	r.meminfo_read = r.swaps_read = false;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	bool said = false;
	for (size_t i = 0; i < res.findings[0].nr_details; i++)
		said |= !strcmp(res.findings[0].details[i].key, "not_read") &&
			strstr(res.findings[0].details[i].value, "/proc/meminfo");
	CHECK(said);
	check_result_release(&res);
	release(&r);
}

TEST(system_bad_config_is_an_error)
{
	const char *bad[] = { "system.peermem=yes",	   "system.swap=never",
			      "system.min-available=lots", "system.min-available=150",
			      "system.min-freq-ratio=2",   "system.governor=" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct config cfg;
		struct system_options opt;
		struct strbuf err = STRBUF_INIT;
		config_init(&cfg, "h");
		CHECK_INT(config_set(&cfg, bad[i], &err), 0);
		CHECK_MSG(system_options_load(&cfg, &opt, &err) < 0, "accepted '%s'", bad[i]);
		CHECK(err.len > 0);
		config_release(&cfg);
		strbuf_release(&err);
	}
}

TEST(system_gather_on_a_fixture)
{
	const char *root = test_tmpdir();
	struct strbuf err = STRBUF_INIT;
	test_mkdir(root, "sys/module/nvidia_peermem");
	test_write(root, "sys/bus/pci/devices/0000:05:00.0/vendor", "0x10de\n");
	test_write(root, "sys/bus/pci/devices/0000:05:00.0/class", "0x068000\n");
	test_write(root, "sys/bus/pci/devices/0000:06:00.0/vendor", "0x10de\n");
	test_write(root, "sys/bus/pci/devices/0000:06:00.0/class", "0x068000\n");
	test_write(root, "sys/bus/pci/devices/0000:1b:00.0/vendor", "0x10de\n");
	test_write(root, "sys/bus/pci/devices/0000:1b:00.0/class", "0x030200\n");
	test_write(root, "proc/1/comm", "systemd\n");
	test_write(root, "proc/4242/comm", "nv-fabricmanage\n");
	test_write(root, "proc/self/comm", "nv-fabricmanage\n"); /* not a pid: ignored */
	for (int i = 0; i < 3; i++) {
		char p[128];
		snprintf(p, sizeof(p), "sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", i);
		test_write(root, p, i == 2 ? "powersave\n" : "performance\n");
		snprintf(p, sizeof(p), "sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", i);
		test_write(root, p, "1500000\n");
		snprintf(p, sizeof(p), "sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", i);
		test_write(root, p, "3000000\n");
	}
	test_mkdir(root, "sys/devices/system/cpu/cpu3"); /* no cpufreq */
	test_mkdir(root, "sys/devices/system/cpu/cpufreq");
	test_write(root, "proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n");
	test_write(root, "proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 500 kB\n");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct system_readings r;
	memset(&r, 0, sizeof(r));
	CHECK_INT(system_gather(&fr, &r, &err), 0);
	CHECK(r.peermem);
	CHECK_INT(r.nvswitches, 2);
	CHECK(r.fabricmanager);
	CHECK_INT(r.cpus, 4);
	CHECK_INT(r.cpufreq, 3);
	CHECK_INT(r.nr_governors, 2);
	CHECK_INT(r.nr_freq, 3);
	CHECK(r.freq_ratio[0] == 0.5);
	CHECK(r.swaps_read && r.swap_devices == 0);
	CHECK(r.meminfo_read && r.mem_avail_kb == 500);
	system_readings_release(&r);

	/* the fabric manager gone: the check run fails with START_SERVICE */
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/proc/4242/comm", root);
	test_write(root, "proc/4242/comm", "python3\n");
	struct config cfg;
	config_init(&cfg, "h");
	CHECK_INT(config_set(&cfg, "system.governor=any", &err), 0);
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h" };
	struct check_result res;
	check_result_init(&res, "system");
	CHECK_INT(check_system_run(&ctx, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "fabricmanager", NULL)->action == ACTION_START_SERVICE);
	check_result_release(&res);
	CHECK_INT(config_set(&cfg, "system.swap=sometimes", &err), 0);
	check_result_init(&res, "system");
	CHECK_INT(check_system_run(&ctx, &res, &err), -1);
	CHECK_CONTAINS(err.buf, "system.swap");
	check_result_release(&res);
	config_release(&cfg);
	strbuf_release(&p);
	strbuf_release(&err);
	fsroot_release(&fr);
}

static void run_system(const char *root, const char *const *sets, struct check_result *res)
{
	struct strbuf err = STRBUF_INIT;
	struct config cfg;
	config_init(&cfg, "h");
	for (size_t i = 0; sets && sets[i]; i++)
		CHECK_INT(config_set(&cfg, sets[i], &err), 0);
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h" };
	check_result_init(res, "system");
	CHECK_MSG(check_system_run(&ctx, res, &err) == 0, "run: %s", err.buf);
	result_finish(res);
	config_release(&cfg);
	strbuf_release(&err);
	fsroot_release(&fr);
}

TEST(system_unreadable_proc_and_cpufreq_are_unknown)
{
	const char *root = test_tmpdir();
	test_mkdir(root, "sys/module/nvidia_peermem");
	/* a NUL-filled /proc/swaps is not "no swap" */
	test_write_bytes(root, "proc/swaps", "\0\0\0\0\0\0\0\0", 8);
	/* no MemAvailable line is not "0 % available" */
	test_write(root, "proc/meminfo", "MemTotal: 1000 kB\nMemFree: 500 kB\n");
	/* an empty governor is not a governor named '' */
	test_write(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
	test_write(root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "\n");
	struct check_result res;
	run_system(root, NULL, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	const struct finding *f = result_find(&res, "swap", "swap");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "'/proc/swaps' holds NUL bytes");
	f = result_find(&res, "memory", "memory");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "no MemAvailable");
	f = result_find(&res, "governor", "CPU");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "governor of 1 CPU: ");
	CHECK_CONTAINS(f->message, "cpu1/cpufreq/scaling_governor' is empty");
	f = result_find(&res, "summary", NULL);
	CHECK_NOT_CONTAINS(f->message, "no swap");
	check_result_release(&res);

	/* swap allowed, memory unchecked, any governor: nothing left to be unsure of */
	const char *relaxed[] = { "system.swap=allowed", "system.min-available=0",
				  "system.governor=any", NULL };
	run_system(root, relaxed, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);

	/* a /proc/swaps without its header, and a frequency of junk when a floor is set */
	test_write(root, "proc/swaps", "/dev/sda2 partition 100 0 -2\n");
	test_write(root, "proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 900 kB\n");
	test_write(root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
	test_write(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "1500000\n");
	test_write(root, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3000000\n");
	test_write(root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "fast\n");
	test_write(root, "sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq", "3000000\n");
	const char *floor[] = { "system.min-freq-ratio=0.4", NULL };
	run_system(root, floor, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	f = result_find(&res, "swap", "swap");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "does not start with its header line");
	f = result_find(&res, "cpu_freq", "CPU");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "scaling_cur_freq' holds 'fast', not a number");
	CHECK(!result_find(&res, "memory", NULL));
	check_result_release(&res);
}

TEST(system_unreadable_pci_identity_leaves_the_nvswitch_count_unknown)
{
	const char *root = test_tmpdir();
	test_write(root, "sys/bus/pci/devices/0000:1b:00.0/vendor", "0x10de\n");
	test_write(root, "sys/bus/pci/devices/0000:1b:00.0/class", "0x030200\n");
	test_write(root, "sys/bus/pci/devices/0000:05:00.0/vendor", "0x10de\n");
	test_write_bytes(root, "sys/bus/pci/devices/0000:05:00.0/class", "\0\0\0\0", 4);
	test_write(root, "proc/1/comm", "systemd\n");
	const char *any[] = { "system.governor=any", NULL };
	struct check_result res;
	run_system(root, any, &res);
	/* 0000:05:00.0 may be an NVSwitch: whether the fabric manager must run is unknown */
	CHECK_INT(res.status, STATUS_UNKNOWN);
	const struct finding *f = result_find(&res, "nvswitches", NULL);
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "0000:05:00.0/class' holds NUL bytes");
	check_result_release(&res);

	/* the fabric manager running settles it */
	test_write(root, "proc/77/comm", "nv-fabricmanage\n");
	run_system(root, any, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "fabric manager running");
	check_result_release(&res);

	/* one readable NVSwitch and no fabric manager fails, however many others are unsure */
	test_write(root, "proc/77/comm", "python3\n");
	test_write(root, "sys/bus/pci/devices/0000:06:00.0/vendor", "0x10de\n");
	test_write(root, "sys/bus/pci/devices/0000:06:00.0/class", "0x068000\n");
	run_system(root, any, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "fabricmanager", NULL));
	check_result_release(&res);
}

TEST(system_every_governor_is_counted)
{
	const char *root = test_tmpdir();
	/* ten CPUs on ten different governors: a fixed table of 8 lost two CPUs unsaid */
	for (int i = 0; i < 10; i++) {
		char p[128], g[32];
		snprintf(p, sizeof(p), "sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", i);
		snprintf(g, sizeof(g), "gov%d\n", i);
		test_write(root, p, g);
	}
	struct check_result res;
	run_system(root, NULL, &res);
	const struct finding *f = result_find(&res, "governor", "CPU");
	CHECK(f);
	CHECK_CONTAINS(f->message, "10 of 10 CPUs use");
	check_result_release(&res);

	/* a governor name with an escape sequence is quoted, not echoed */
	test_write(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
		   "\x1b[31mred\n");
	for (int i = 1; i < 10; i++) {
		char p[128];
		snprintf(p, sizeof(p), "sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", i);
		test_write(root, p, "\x1b[31mred\n");
	}
	run_system(root, NULL, &res);
	f = result_find(&res, "governor", "CPU");
	CHECK(f);
	CHECK_CONTAINS(f->message, "'\\x1b[31mred'");
	CHECK_NOT_CONTAINS(f->message, "\x1b");
	check_result_release(&res);
}
