/*
 * test_nvml.c: the NVML shim against the fake library, through the real dlopen/dlsym path:
 * values read, error codes, lost GPUs, missing libraries and symbols, the fake found under a
 * root, and snapshots that survive a round trip.
 */
#include "../harness.h"
#include "../../src/agent/xidwatch.h"
#include "../../src/gpu/snapshot.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/strlist.h"
#include "../../src/sys/fsroot.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

/* Two H200s: GPU 0 as the real 2xH200 VM reads (no NVLink), GPU 1 with NVLink and faults. */
static const char two_gpus[] =
	"vigil-nvml-snapshot 1\n"
	"# a comment\n"
	"driver_version 580.159.04\n"
	"nvml_version 13.580.159.04\n"
	"cuda_driver_version 13000\n"
	"device_count 2\n"
	"\n"
	"[gpu 0]\n"
	"name NVIDIA H200\n"
	"uuid GPU-5b8cd186-d413-98f2-8865-fb6807b09f01\n"
	"serial 1653724058039\n"
	"pci_bus_id 00000000:00:06.0\n"
	"vbios_version 96.00.A5.00.1A\n"
	"pci_device_id 0x233510de\n"
	"persistence_mode 1\n"
	"ecc_mode_current 1\n"
	"ecc_mode_pending 1\n"
	"ecc_volatile_corrected 0\n"
	"ecc_volatile_uncorrected 0\n"
	"ecc_aggregate_corrected 0\n"
	"ecc_aggregate_uncorrected 0\n"
	"remapped_rows_correctable 0\n"
	"remapped_rows_uncorrectable 0\n"
	"remapped_rows_pending 0\n"
	"remapped_rows_failure 0\n"
	"clocks_event_reasons 0x1\n"
	"pcie_gen_current 5\n"
	"pcie_gen_max 5\n"
	"pcie_width_current 16\n"
	"pcie_width_max 16\n"
	"pcie_replay_counter 1\n"
	"temperature_gpu 39\n"
	"power_usage_mw 80290\n"
	"power_limit_mw 700000\n"
	"sm_clock_mhz 345\n"
	"sm_clock_max_mhz 1980\n"
	"recovery_action 0\n"
	"\n"
	"[gpu 1]\n"
	"name NVIDIA H200\n"
	"pci_bus_id 00000000:1B:00.0\n"
	"pci_device_id 0x233510de\n"
	"ecc_mode_current 1\n"
	"ecc_mode_pending 0\n"
	"ecc_volatile_uncorrected 12345678901\n"
	"remapped_rows_correctable 2\n"
	"remapped_rows_uncorrectable 600\n"
	"remapped_rows_pending 1\n"
	"remapped_rows_failure 1\n"
	"clocks_event_reasons 0x48\n"
	"temperature_gpu !3\n"
	"power_usage_mw !999\n"
	"recovery_action 2\n"
	"nvlink 0 active=1 replay=0 recovery=0 crc_flit=7 crc_data=0 ecc_data=!3\n"
	"nvlink 17 active=0 replay=5 recovery=!4 crc_flit=0 crc_data=0 ecc_data=0\n";

static void use_snapshot(const char *text)
{
	struct strbuf p = STRBUF_INIT;
	test_write(test_tmpdir(), "nvml.snapshot", text);
	strbuf_addf(&p, "%s/nvml.snapshot", test_tmpdir());
	setenv("VIGIL_NVML_SNAPSHOT", p.buf, 1);
	setenv("VIGIL_NVML_LIBRARY", test_fake_nvml(), 1);
	unsetenv("VIGIL_ROOT");
	strbuf_release(&p);
}

static void read_ok_in(const struct fsroot *root, struct nvml_host *h)
{
	struct strbuf err = STRBUF_INIT;
	nvml_host_init(h);
	CHECK_MSG(nvml_read_host(root, h, &err) == 0, "nvml_read_host: %s", err.buf);
	strbuf_release(&err);
}

/* This host (the library named by VIGIL_NVML_LIBRARY, or none). */
static void read_ok(struct nvml_host *h)
{
	read_ok_in(fsroot_host, h);
}

TEST(nvml_reads_snapshot_values)
{
	struct nvml_host h;
	use_snapshot(two_gpus);
	read_ok(&h);
	CHECK_INT(h.avail, NVML_AVAILABLE);
	CHECK(ends_with(h.library, "libvigil-fakenvml.so"));
	CHECK_STR(h.driver_version.s, "580.159.04");
	CHECK_STR(h.nvml_version.s, "13.580.159.04");
	CHECK_INT(h.cuda_driver_version.v, 13000);
	CHECK_INT(h.count.v, 2);
	CHECK_INT(h.nr, 2);
	const struct nvml_gpu *g = &h.gpus[0];
	CHECK_INT(g->handle_rc, 0);
	CHECK(!g->lost);
	CHECK_STR(g->name.s, "NVIDIA H200");
	CHECK_STR(g->uuid.s, "GPU-5b8cd186-d413-98f2-8865-fb6807b09f01");
	CHECK_STR(g->serial.s, "1653724058039");
	CHECK_STR(g->vbios.s, "96.00.A5.00.1A");
	CHECK_STR(g->pci_bus_id.s, "00000000:00:06.0");
	CHECK_STR(g->bdf, "0000:00:06.0");
	CHECK_INT(g->pci_device_id.v, 0x233510de);
	CHECK_INT(g->persistence_mode.v, 1);
	CHECK(g->ecc_current.rc == 0 && g->ecc_current.v == 1 && g->ecc_pending.v == 1);
	CHECK(g->clock_events.rc == 0 && g->clock_events.v == NVML_CLOCKS_EVENT_GPU_IDLE);
	CHECK(g->pcie_gen.v == 5 && g->pcie_gen_max.v == 5);
	CHECK(g->pcie_width.v == 16 && g->pcie_width_max.v == 16);
	CHECK_INT(g->pcie_replay.v, 1);
	CHECK_INT(g->temperature.v, 39);
	CHECK_INT(g->power_usage.v, 80290);
	CHECK_INT(g->power_limit.v, 700000);
	CHECK(g->sm_clock.v == 345 && g->sm_clock_max.v == 1980);
	CHECK(g->recovery_action.rc == 0 && g->recovery_action.v == 0);
	/* no NVLink lines: every link "not supported" */
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
		CHECK_INT(g->nvlink[l].active.rc, NVML_ERROR_NOT_SUPPORTED);

	g = &h.gpus[1];
	CHECK_STR(g->bdf, "0000:1b:00.0");
	CHECK(g->ecc_current.v == 1 && g->ecc_pending.v == 0);
	CHECK(g->ecc_volatile_uncorrected.v == 12345678901ULL); /* no 32-bit truncation */
	CHECK(g->remap_correctable.v == 2 && g->remap_uncorrectable.v == 600);
	CHECK(g->remap_pending.v == 1 && g->remap_failure.v == 1);
	CHECK_INT(g->clock_events.v, 0x48);
	CHECK_INT(g->recovery_action.v, NVML_GPU_RECOVERY_ACTION_NODE_REBOOT);
	CHECK_INT(g->temperature.rc, NVML_ERROR_NOT_SUPPORTED);
	CHECK_INT(g->power_usage.rc, NVML_ERROR_UNKNOWN);
	CHECK_INT(g->uuid.rc, NVML_ERROR_NOT_SUPPORTED); /* absent key */
	CHECK_STR(g->uuid.s, "");
	CHECK(g->nvlink[0].active.rc == 0 && g->nvlink[0].active.v == 1);
	CHECK_INT(g->nvlink[0].errors[NVML_NVLINK_ERROR_DL_CRC_FLIT].v, 7);
	CHECK_INT(g->nvlink[0].errors[NVML_NVLINK_ERROR_DL_ECC_DATA].rc,
		  NVML_ERROR_NOT_SUPPORTED);
	CHECK(g->nvlink[17].active.rc == 0 && g->nvlink[17].active.v == 0);
	CHECK_INT(g->nvlink[17].errors[NVML_NVLINK_ERROR_DL_REPLAY].v, 5);
	CHECK_INT(g->nvlink[17].errors[NVML_NVLINK_ERROR_DL_RECOVERY].rc,
		  NVML_ERROR_NO_PERMISSION);
	CHECK_INT(g->nvlink[5].active.rc, NVML_ERROR_NOT_SUPPORTED);
	CHECK(!g->lost);
	nvml_host_release(&h);
}

TEST(nvml_not_supported_and_lost)
{
	struct nvml_host h;
	use_snapshot("vigil-nvml-snapshot 1\n"
		     "[gpu 0]\nname NVIDIA H200\ntemperature_gpu !3\n"
		     "[gpu 1]\nname NVIDIA H200\necc_volatile_uncorrected !15\n"
		     "[gpu 2]\nhandle !15\n"
		     "[gpu 3]\nhandle !999\n");
	read_ok(&h);
	CHECK_INT(h.nr, 4); /* no device_count: one per section */
	CHECK_INT(h.gpus[0].temperature.rc, NVML_ERROR_NOT_SUPPORTED);
	CHECK(!h.gpus[0].lost);
	CHECK_INT(h.gpus[1].ecc_volatile_uncorrected.rc, NVML_ERROR_GPU_IS_LOST);
	CHECK(h.gpus[1].lost);
	CHECK_STR(h.gpus[1].name.s, "NVIDIA H200");
	CHECK_INT(h.gpus[2].handle_rc, NVML_ERROR_GPU_IS_LOST);
	CHECK(h.gpus[2].lost);
	CHECK_INT(h.gpus[3].handle_rc, NVML_ERROR_UNKNOWN);
	CHECK(!h.gpus[3].lost);
	/* global values the snapshot leaves out read as not supported */
	CHECK_INT(h.driver_version.rc, NVML_ERROR_NOT_SUPPORTED);
	nvml_host_release(&h);
}

TEST(nvml_missing_library_is_a_clear_error)
{
	struct nvml_host h;
	struct strbuf err = STRBUF_INIT, lib = STRBUF_INIT;
	strbuf_addf(&lib, "%s/no-such-libnvidia-ml.so", test_tmpdir());
	setenv("VIGIL_NVML_LIBRARY", lib.buf, 1);
	nvml_host_init(&h);
	CHECK_INT(nvml_read_host(fsroot_host, &h, &err), -1);
	CHECK_CONTAINS(err.buf, "cannot load NVML library");
	CHECK_CONTAINS(err.buf, lib.buf);
	CHECK_CONTAINS(err.buf, "VIGIL_NVML_LIBRARY");
	/* a library that is not NVML: says which required symbol it lacks */
	setenv("VIGIL_NVML_LIBRARY", "libm.so.6", 1);
	strbuf_reset(&err);
	CHECK_INT(nvml_read_host(fsroot_host, &h, &err), -1);
	CHECK_CONTAINS(err.buf, "has no 'nvmlInit_v2'");
	nvml_host_release(&h);
	strbuf_release(&err);
	strbuf_release(&lib);
}

TEST(nvml_no_snapshot_is_no_driver)
{
	struct nvml_host h;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	setenv("VIGIL_NVML_LIBRARY", test_fake_nvml(), 1);
	unsetenv("VIGIL_NVML_SNAPSHOT");
	unsetenv("VIGIL_ROOT");
	read_ok(&h);
	CHECK_INT(h.avail, NVML_INIT_FAILED);
	CHECK_INT(h.init_rc, NVML_ERROR_DRIVER_NOT_LOADED);
	CHECK_INT(h.nr, 0);
	/* the snapshot keeps "installed but not loaded" apart from "no NVML at all" */
	CHECK_INT(nvml_snapshot_write(fsroot_host, &out, &err), 0);
	CHECK_CONTAINS(out.buf, "\ninit !9\n");
	nvml_host_release(&h);
	strbuf_release(&out);
	strbuf_release(&err);
}

TEST(nvml_init_errors_from_snapshot)
{
	struct nvml_host h;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	use_snapshot("vigil-nvml-snapshot 1\ninit !18\n");
	read_ok(&h);
	CHECK_INT(h.avail, NVML_INIT_FAILED);
	CHECK_INT(h.init_rc, NVML_ERROR_LIB_RM_VERSION_MISMATCH);
	/* a broken host is worth a fixture: the snapshot says how init failed */
	CHECK_INT(nvml_snapshot_write(fsroot_host, &out, &err), 0);
	CHECK_CONTAINS(out.buf, "vigil-nvml-snapshot 1\n");
	CHECK_CONTAINS(out.buf, "\ninit !18\n");
	nvml_host_release(&h);
	strbuf_release(&out);
	strbuf_release(&err);
}

TEST(nvml_malformed_snapshot_fails_init)
{
	static const char *const bad[] = {
		"vigil-nvml-snapshot 1\n[gpu 0]\ntemprature_gpu 30\n",  /* unknown key */
		"vigil-nvml-snapshot 2\n",                                /* unknown version */
		"driver_version 1\n",                                     /* no header */
		"vigil-nvml-snapshot 1\n[gpu x]\n",                       /* bad section */
		"vigil-nvml-snapshot 1\n[gpu 0]\nnvlink 18 active=1\n",   /* no such link */
		"vigil-nvml-snapshot 1\nnvlink 0 active=1\n",             /* outside a GPU */
		"vigil-nvml-snapshot 1\n[gpu 0]\nnvlink 0 active\n",      /* not key=value */
		"vigil-nvml-snapshot 1\n[gpu 0]\n[gpu 0]\n",              /* twice */
		"vigil-nvml-snapshot 1\n[gpu 0]\ntemperature_gpu !x\n",   /* not a code */
		"vigil-nvml-snapshot 1\n[gpu 0]\nnvlink 1 active=!\n",    /* not a code */
	};
	/* the fake says why on stderr: catch it */
	struct strbuf log = STRBUF_INIT, said = STRBUF_INIT;
	strbuf_addf(&log, "%s/stderr", test_tmpdir());
	fflush(stderr);
	int saved = dup(2), fd = open(log.buf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
	close(fd);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct nvml_host h;
		use_snapshot(bad[i]);
		read_ok(&h);
		CHECK_MSG(h.avail == NVML_INIT_FAILED && h.init_rc == NVML_ERROR_UNKNOWN,
			  "snapshot %zu accepted", i);
		nvml_host_release(&h);
	}
	/* a value that is not a number fails the one call that reads it */
	struct nvml_host h;
	use_snapshot("vigil-nvml-snapshot 1\n[gpu 0]\ntemperature_gpu warm\n");
	read_ok(&h);
	CHECK_INT(h.gpus[0].temperature.rc, NVML_ERROR_UNKNOWN);
	nvml_host_release(&h);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	CHECK_INT(read_file_bounded(log.buf, &said, 1 << 16, NULL), READ_OK);
	CHECK_CONTAINS(said.buf, "nvml.snapshot:3: unknown key 'temprature_gpu'");
	CHECK_CONTAINS(said.buf, "not a snapshot: want 'vigil-nvml-snapshot 1' first");
	CHECK_CONTAINS(said.buf, "'temperature_gpu' is 'warm', not a number");
	strbuf_release(&log);
	strbuf_release(&said);
}

TEST(nvml_recovery_action_not_found_or_not_supported)
{
	struct nvml_host h;
	use_snapshot("vigil-nvml-snapshot 1\n"
		     "[gpu 0]\nrecovery_action !13\n"
		     "[gpu 1]\nrecovery_action !3\n"
		     "[gpu 2]\nrecovery_action 4\n");
	read_ok(&h);
	CHECK_INT(h.gpus[0].recovery_action.rc, NVML_ERROR_FUNCTION_NOT_FOUND);
	CHECK_INT(h.gpus[1].recovery_action.rc, NVML_ERROR_NOT_SUPPORTED);
	CHECK(h.gpus[2].recovery_action.rc == 0 && h.gpus[2].recovery_action.v == 4);
	nvml_host_release(&h);
}

/* The old-NVML variant of the fake: prebuilt next to the fake, else compiled here. */
static const char *legacy_library(void)
{
	static char path[4096];
	const char *fake = test_fake_nvml();
	const char *slash = strrchr(fake, '/');
	snprintf(path, sizeof(path), "%.*s/libvigil-fakenvml-legacy.so",
		 slash ? (int)(slash - fake) : 1, slash ? fake : ".");
	if (access(path, R_OK) == 0)
		return path;
	struct strbuf src = STRBUF_INIT;
	test_src_path(&src, "tests/fake-nvml/fake_nvml.c");
	snprintf(path, sizeof(path), "%s/libfakenvml-legacy.so", test_tmpdir());
	const char *cc = getenv("CC");
	const char *argv[] = { cc && *cc ? cc : "cc", "-std=gnu11", "-D_GNU_SOURCE",
			       "-DFAKE_NVML_LEGACY", "-fPIC", "-shared", "-o", path, src.buf, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 60000;
	c.merge_stderr = true;
	bool built = child_run(&c, NULL) == 0 && c.exited && c.exit_code == 0;
	child_release(&c);
	strbuf_release(&src);
	if (!built)
		SKIP("no libvigil-fakenvml-legacy.so and no C compiler to build it");
	return path;
}

TEST(nvml_old_library_uses_fallback_symbols)
{
	struct nvml_host h;
	use_snapshot(two_gpus);
	const char *lib = legacy_library();
	void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	CHECK_MSG(dl, "%s", dlerror());
	/* it is an old NVML indeed */
	CHECK(!dlsym(dl, "nvmlInit_v2") && !dlsym(dl, "nvmlDeviceGetPciInfo_v3") &&
	      !dlsym(dl, "nvmlDeviceGetFieldValues") && dlsym(dl, "nvmlInit"));
	dlclose(dl);
	setenv("VIGIL_NVML_LIBRARY", lib, 1);
	read_ok(&h);
	CHECK_INT(h.avail, NVML_AVAILABLE);
	CHECK_INT(h.nr, 2);
	CHECK_INT(h.cuda_driver_version.v, 13000);
	const struct nvml_gpu *g = &h.gpus[1];
	/* v1 nvmlPciInfo_t: the bus id is the short one, and the rest of the struct is not read */
	CHECK_STR(g->pci_bus_id.s, "0000:1B:00.0");
	CHECK_STR(g->bdf, "0000:1b:00.0");
	CHECK_INT(g->pci_device_id.v, 0x233510de);
	CHECK_INT(g->clock_events.v, 0x48); /* through ...ClocksThrottleReasons */
	/* missing optional symbols: "not reported", never a fault */
	CHECK_INT(g->recovery_action.rc, NVML_ERROR_FUNCTION_NOT_FOUND);
	CHECK_INT(g->remap_pending.rc, NVML_ERROR_FUNCTION_NOT_FOUND);
	CHECK_INT(g->remap_uncorrectable.rc, NVML_ERROR_FUNCTION_NOT_FOUND);
	CHECK(!g->lost);
	CHECK_INT(g->nvlink[0].active.v, 1);
	nvml_host_release(&h);
}

/* The test runner sits next to the fake library in a build directory; else this cannot run. */
static void need_fake_next_to_exe(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/libvigil-fakenvml.so", exe);
	bool there = access(p.buf, R_OK) == 0;
	strbuf_release(&p);
	if (!there)
		SKIP("libvigil-fakenvml.so is not next to the test runner");
}

TEST(nvml_under_root_serves_root_snapshot_never_host)
{
	struct nvml_host h;
	struct strbuf err = STRBUF_INIT;
	need_fake_next_to_exe();
	unsetenv("VIGIL_NVML_LIBRARY");
	setenv("VIGIL_NVML_SNAPSHOT", "/nonexistent/nvml.snapshot", 1); /* the root's wins */
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, test_tmpdir(), NULL), 0);
	/* no snapshot under the root: no NVML, whatever the host has */
	nvml_host_init(&h);
	CHECK_INT(nvml_read_host(&fr, &h, &err), 0);
	CHECK_INT(h.avail, NVML_NO_LIBRARY);
	CHECK_CONTAINS(h.note, "no NVML under --root");
	CHECK(!h.library);
	test_write(test_tmpdir(), "nvml.snapshot", two_gpus);
	nvml_host_release(&h);
	read_ok_in(&fr, &h);
	CHECK_INT(h.avail, NVML_AVAILABLE);
	CHECK(ends_with(h.library, "/libvigil-fakenvml.so"));
	CHECK_INT(h.nr, 2);
	CHECK_STR(h.gpus[0].name.s, "NVIDIA H200");
	fsroot_release(&fr);
	nvml_host_release(&h);
	strbuf_release(&err);
}

/*
 * The root reaches the test library as a value, not through the environment: with the library
 * named by VIGIL_NVML_LIBRARY (as every test run of vigil has it), VIGIL_ROOT unset and
 * VIGIL_NVML_SNAPSHOT naming nothing, the shim tells the library the root's snapshot.
 */
TEST(nvml_root_snapshot_is_told_to_the_library_not_exported)
{
	struct nvml_host h;
	struct strbuf root = STRBUF_INIT;
	setenv("VIGIL_NVML_LIBRARY", test_fake_nvml(), 1);
	setenv("VIGIL_NVML_SNAPSHOT", "/nonexistent/nvml.snapshot", 1);
	unsetenv("VIGIL_ROOT");
	strbuf_addf(&root, "%s/root", test_tmpdir());
	test_write(root.buf, "nvml.snapshot", two_gpus);
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root.buf, NULL), 0);
	read_ok_in(&fr, &h);
	CHECK_INT(h.avail, NVML_AVAILABLE);
	CHECK_INT(h.nr, 2);
	CHECK(!getenv("VIGIL_ROOT"));
	nvml_host_release(&h);
	/* a root without one: no driver, never the snapshot the environment names */
	fsroot_release(&fr);
	test_mkdir(test_tmpdir(), "bare");
	test_write(test_tmpdir(), "elsewhere/nvml.snapshot", two_gpus);
	strbuf_reset(&root);
	strbuf_addf(&root, "%s/elsewhere/nvml.snapshot", test_tmpdir());
	setenv("VIGIL_NVML_SNAPSHOT", root.buf, 1);
	strbuf_reset(&root);
	strbuf_addf(&root, "%s/bare", test_tmpdir());
	CHECK_INT(fsroot_init(&fr, root.buf, NULL), 0);
	read_ok_in(&fr, &h);
	CHECK_INT(h.avail, NVML_INIT_FAILED);
	CHECK_INT(h.init_rc, NVML_ERROR_DRIVER_NOT_LOADED);
	nvml_host_release(&h);
	fsroot_release(&fr);
	strbuf_release(&root);
}

/*
 * ROOT/nvml.snapshot is found inside the root: a planted link to a snapshot outside it serves no
 * GPU (the link means ROOT + target), and the same link whose target exists inside the root
 * serves that file.
 */
TEST(nvml_snapshot_link_stays_inside_the_root)
{
	struct nvml_host h;
	struct strbuf err = STRBUF_INIT, root = STRBUF_INIT, out = STRBUF_INIT, link = STRBUF_INIT;
	need_fake_next_to_exe();
	unsetenv("VIGIL_NVML_LIBRARY");
	unsetenv("VIGIL_NVML_SNAPSHOT");
	strbuf_addf(&root, "%s/root", test_tmpdir());
	strbuf_addf(&out, "%s/outside/nvml.snapshot", test_tmpdir());
	test_write(test_tmpdir(), "outside/nvml.snapshot", two_gpus);
	test_mkdir(root.buf, "sys");
	strbuf_addf(&link, "%s/nvml.snapshot", root.buf);
	CHECK_INT(symlink(out.buf, link.buf), 0);
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root.buf, NULL), 0);
	nvml_host_init(&h);
	CHECK_INT(nvml_read_host(&fr, &h, &err), 0);
	CHECK_INT(h.avail, NVML_NO_LIBRARY);
	CHECK_INT(h.nr, 0);
	CHECK_CONTAINS(h.note, "no nvml.snapshot there");
	nvml_host_release(&h);
	/* the target made inside the root: served from there */
	test_write(root.buf, out.buf + 1, two_gpus);
	read_ok_in(&fr, &h);
	CHECK_INT(h.avail, NVML_AVAILABLE);
	CHECK_INT(h.nr, 2);
	fsroot_release(&fr);
	nvml_host_release(&h);
	strbuf_release(&err);
	strbuf_release(&root);
	strbuf_release(&out);
	strbuf_release(&link);
}

TEST(nvml_host_without_driver)
{
	void *real = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (real) {
		dlclose(real);
		SKIP("this host has an NVIDIA driver");
	}
	struct nvml_host h;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	unsetenv("VIGIL_NVML_LIBRARY");
	read_ok(&h);
	CHECK_INT(h.avail, NVML_NO_LIBRARY);
	CHECK_CONTAINS(h.note, "libnvidia-ml.so.1 not found");
	CHECK_INT(nvml_snapshot_write(fsroot_host, &out, &err), 1);
	CHECK_CONTAINS(err.buf, "libnvidia-ml.so.1 not found");
	nvml_host_release(&h);
	strbuf_release(&out);
	strbuf_release(&err);
}

/*
 * A snapshot's meaning as sorted "section key value" lines: comments and blank lines dropped,
 * nvlink lines split into one entry per word, and "!3" entries dropped (absent reads the same).
 */
static void meaning(const char *text, struct strlist *out)
{
	struct strlist lines = STRLIST_INIT;
	char section[64] = "";
	strlist_split(&lines, text, "\n");
	for (size_t i = 0; i < lines.nr; i++) {
		char *s = lines.items[i];
		if (!*s || *s == '#')
			continue;
		if (*s == '[') {
			snprintf(section, sizeof(section), "%s", s);
			continue;
		}
		struct strlist w = STRLIST_INIT;
		strlist_split(&w, s, " ");
		struct strbuf e = STRBUF_INIT;
		if (!strcmp(w.items[0], "nvlink")) {
			for (size_t k = 2; k < w.nr; k++) {
				if (ends_with(w.items[k], "=!3"))
					continue;
				strbuf_reset(&e);
				strbuf_addf(&e, "%s nvlink%s.%s", section, w.items[1], w.items[k]);
				strlist_add(out, e.buf);
			}
		} else if (!ends_with(s, " !3")) {
			strbuf_addf(&e, "%s %s", section, s);
			strlist_add(out, e.buf);
		}
		strbuf_release(&e);
		strlist_release(&w);
	}
	strlist_sort(out);
	strlist_release(&lines);
}

static void round_trip(const char *text)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct strlist a = STRLIST_INIT, b = STRLIST_INIT;
	use_snapshot(text);
	CHECK_MSG(nvml_snapshot_write(fsroot_host, &out, &err) == 0, "%s", err.buf);
	CHECK(starts_with(out.buf, NVML_SNAPSHOT_HEADER "\n"));
	meaning(text, &a);
	meaning(out.buf, &b);
	for (size_t i = 0; i < a.nr || i < b.nr; i++)
		CHECK_MSG(i < a.nr && i < b.nr && !strcmp(a.items[i], b.items[i]),
			  "snapshots differ at '%s' / '%s'; written:\n%s",
			  i < a.nr ? a.items[i] : "(end)", i < b.nr ? b.items[i] : "(end)", out.buf);
	strlist_release(&a);
	strlist_release(&b);
	strbuf_release(&out);
	strbuf_release(&err);
}

TEST(nvml_snapshot_round_trip)
{
	round_trip(two_gpus);
	round_trip("vigil-nvml-snapshot 1\ndevice_count 3\n"
		   "[gpu 0]\nhandle !15\n[gpu 1]\nname NVIDIA H200\nrecovery_action !13\n"
		   "[gpu 2]\nname\nserial !4\n");
}

TEST(nvml_snapshot_round_trip_real_h200)
{
	/* written through the real NVML of the lent 1xH200 and 2xH200 (NVLink) machines */
	static const char *const scenarios[] = { "gpu-real-h200-vm", "gpu-real-h200x2-vm" };
	for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++) {
		struct strbuf p = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
		test_src_path(&p, "tests/scenarios/");
		strbuf_addf(&p, "%s/root", scenarios[i]);
		strbuf_addstr(&p, "/nvml.snapshot");
		CHECK_MSG(read_file_bounded(p.buf, &text, 1 << 20, &err) == READ_OK, "%s",
			  err.buf);
		round_trip(text.buf);
		strbuf_release(&p);
		strbuf_release(&text);
		strbuf_release(&err);
	}
}

TEST(nvml_bus_id_spelling)
{
	char b[32];
	CHECK(nvml_bus_id_to_bdf("00000000:1B:00.0", b, sizeof(b)));
	CHECK_STR(b, "0000:1b:00.0");
	CHECK(nvml_bus_id_to_bdf("0000:DB:00.0", b, sizeof(b)));
	CHECK_STR(b, "0000:db:00.0");
	CHECK(nvml_bus_id_to_bdf("00010000:01:02.3", b, sizeof(b)));
	CHECK_STR(b, "00010000:01:02.3");
	CHECK(!nvml_bus_id_to_bdf("", b, sizeof(b)));
	CHECK(!nvml_bus_id_to_bdf("0000:1b:00", b, sizeof(b)));
	CHECK(!nvml_bus_id_to_bdf("0000:1b:00.0 junk", b, sizeof(b)));
	CHECK(!nvml_bus_id_to_bdf("0000:100:00.0", b, sizeof(b)));
	CHECK_STR(nvml_error_name(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
	CHECK_STR(nvml_error_name(12345), "error 12345");
}

TEST(nvml_cli_root_finds_fake_next_to_vigil)
{
	/* what a user gets from 'vigil check --root FIXTURE' with nothing else set */
	struct child c;
	struct strbuf root = STRBUF_INIT;
	const char *bin = test_vigil_bin(), *slash = strrchr(bin, '/');
	strbuf_addf(&root, "%.*s/libvigil-fakenvml.so", slash ? (int)(slash - bin) : 1,
		    slash ? bin : ".");
	if (access(root.buf, R_OK) != 0)
		SKIP("libvigil-fakenvml.so is not next to vigil");
	strbuf_reset(&root);
	strbuf_addf(&root, "%s/root", test_tmpdir());
	test_write(root.buf, "nvml.snapshot", two_gpus);
	const char *args[] = { "check", "--json", "--only", "gpu", "--root", root.buf, NULL };
	const char *env[] = { "VIGIL_NVML_LIBRARY=", "VIGIL_NVML_SNAPSHOT=", NULL };
	test_run_vigil(&c, args, env);
	struct json_value *rep = test_parse_json(&c);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.out.buf);
	CHECK_CONTAINS(c.out.buf, "\"row_remap_failure\"");
	CHECK_CONTAINS(c.out.buf, "GPU 1 (0000:1b:00.0)");
	json_free(rep);
	child_release(&c);
	strbuf_release(&root);
}

/*
 * NVML's Xid events through the shim (nvml_xid_drain()), new NVML and old (nvmlEventSetWait
 * without _v2): GPUs that support the Xid event type are registered, one that does not is named
 * NOT_SUPPORTED and never watched, what the driver raised comes back once, counted, for the
 * address NVML gives the GPU; a wait error leaves the drain incomplete.
 */
static void xid_drain_case(const char *lib)
{
	static const char snap[] =
		"vigil-nvml-snapshot 1\n"
		"device_count 2\n"
		"xid_event 0 79\n"
		"xid_event 0 79\n"
		"xid_event 1 48\n" /* GPU 1 is not registered: never served */
		"[gpu 0]\n"
		"pci_bus_id 00000000:18:00.0\n"
		"pci_device_id 0x233510de\n"
		"supported_event_types 0x8f\n"
		"[gpu 1]\n"
		"pci_bus_id 00000000:2A:00.0\n"
		"pci_device_id 0x233510de\n";
	struct nvml_host h;
	use_snapshot(snap);
	if (lib)
		setenv("VIGIL_NVML_LIBRARY", lib, 1);
	nvml_keep_open(true);
	read_ok(&h);
	CHECK(nvml_xid_ready());
	struct nvml_xid_drain *d = xcalloc(1, sizeof(*d));
	nvml_xid_drain(d);
	CHECK_INT(d->rc, 0);
	CHECK_INT(d->wait_rc, 0);
	CHECK(!d->flooded && d->at >= d->since && d->since > 0);
	CHECK_INT(d->nr_gpus, 2);
	CHECK_STR(d->gpus[0].bdf, "0000:18:00.0");
	CHECK_INT(d->gpus[0].rc, 0);
	CHECK_STR(d->gpus[1].bdf, "0000:2a:00.0");
	CHECK_INT(d->gpus[1].rc, NVML_ERROR_NOT_SUPPORTED);
	CHECK_INT(d->nr_ev, 1);
	CHECK_STR(d->ev[0].bdf, "0000:18:00.0");
	CHECK_INT(d->ev[0].xid, 79);
	CHECK_INT(d->ev[0].count, 2);
	/* taken once: the next drain is empty, its window later */
	double since = d->since;
	nvml_xid_drain(d);
	CHECK_INT(d->nr_ev, 0);
	CHECK(d->since == since && d->at >= since);
	free(d);
	nvml_host_release(&h);
}

TEST(nvml_xid_events_are_drained_once_per_registered_gpu)
{
	xid_drain_case(NULL);
}

TEST(nvml_xid_events_through_an_old_nvml)
{
	xid_drain_case(legacy_library());
}

/* No NVML kept open (vigil check), or an NVML whose waits fail: no watch is claimed. */
TEST(nvml_xid_drain_without_a_watch_claims_none)
{
	struct nvml_xid_drain *d = xcalloc(1, sizeof(*d));
	nvml_xid_drain(d);
	CHECK_INT(d->rc, NVML_ERROR_UNINITIALIZED);
	CHECK(!nvml_xid_ready());
	struct nvml_host h;
	use_snapshot("vigil-nvml-snapshot 1\ndevice_count 1\nevent_wait !999\n[gpu 0]\n"
		     "pci_bus_id 00000000:18:00.0\npci_device_id 0x233510de\nsupported_event_types 0x8\n");
	nvml_keep_open(true);
	read_ok(&h);
	nvml_xid_drain(d);
	CHECK_INT(d->rc, 0);
	CHECK_INT(d->wait_rc, NVML_ERROR_UNKNOWN);
	struct xid_watch w;
	xidwatch_init(&w, "b");
	xidwatch_merge(&w, d);
	CHECK_INT(w.nr_gpus, 1);
	CHECK_INT(w.gpus[0].nr_win, 0);
	xidwatch_release(&w);
	free(d);
	nvml_host_release(&h);
}
