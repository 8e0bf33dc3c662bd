/* test_gpu_check.c: the 'gpu' check's evaluate() on hand-built readings, one rule at a time. */
#include "../harness.h"
#include "../../src/checks/gpu.h"
#include "../../src/lib/fileio.h"
#include "../../src/sys/fsroot.h"

#include <stdlib.h>

/* An H200 as the real 2xH200 machine reads at idle (tests/scenarios/gpu-real-h200-vm). */
static struct nvml_gpu *add_h200(struct gpu_readings *r, bool nvlink)
{
	struct nvml_host *h = &r->nvml;
	unsigned i = (unsigned)h->nr;
	struct nvml_gpu *g = nvml_host_add_gpu(h, i);
	static const unsigned buses[] = { 0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb };
	unsigned bus = i < ARRAY_SIZE(buses) ? buses[i] : 0xe0 + i;
#define S(field, val) (snprintf(g->field.s, sizeof(g->field.s), "%s", val), g->field.rc = 0)
#define V(field, val) (g->field.v = (val), g->field.rc = 0)
	S(name, "NVIDIA H200");
	snprintf(g->uuid.s, sizeof(g->uuid.s), "GPU-5b8cd186-d413-98f2-8865-fb6807b09f%02x", i);
	g->uuid.rc = 0;
	S(serial, "1653724058039");
	S(vbios, "96.00.A5.00.1A");
	snprintf(g->pci_bus_id.s, sizeof(g->pci_bus_id.s), "00000000:%02X:00.0", bus);
	g->pci_bus_id.rc = 0;
	snprintf(g->bdf, sizeof(g->bdf), "0000:%02x:00.0", bus);
	V(pci_device_id, 0x233510de);
	V(persistence_mode, 1);
	V(ecc_current, 1);
	V(ecc_pending, 1);
	V(ecc_volatile_corrected, 0);
	V(ecc_volatile_uncorrected, 0);
	V(ecc_aggregate_corrected, 0);
	V(ecc_aggregate_uncorrected, 0);
	V(remap_correctable, 0);
	V(remap_uncorrectable, 0);
	V(remap_pending, 0);
	V(remap_failure, 0);
	V(clock_events, NVML_CLOCKS_EVENT_GPU_IDLE);
	V(pcie_gen, 5);
	V(pcie_gen_max, 5);
	V(pcie_width, 16);
	V(pcie_width_max, 16);
	V(pcie_replay, 1);
	V(temperature, 39);
	V(power_usage, 80290);
	V(power_limit, 700000);
	V(sm_clock, 345);
	V(sm_clock_max, 1980);
	V(recovery_action, 0);
#undef S
#undef V
	for (unsigned l = 0; nvlink && l < NVML_NVLINK_MAX_LINKS; l++) {
		g->nvlink[l].active = (struct nvml_val){ 1, 0 };
		for (int c = 0; c < NVML_NVLINK_ERROR_COUNT; c++)
			g->nvlink[l].errors[c] = (struct nvml_val){ 0, 0 };
	}
	if (r->bus_rc == 0)
		strlist_add(&r->bus_gpus, g->bdf);
	return g;
}

/* n healthy H200s, driver 580.159.04, on a PCI bus that shows all of them. */
static void host(struct gpu_readings *r, unsigned n, bool nvlink)
{
	gpu_readings_init(r);
	r->bus_rc = 0;
	struct nvml_host *h = &r->nvml;
	snprintf(h->driver_version.s, sizeof(h->driver_version.s), "580.159.04");
	h->driver_version.rc = 0;
	snprintf(h->nvml_version.s, sizeof(h->nvml_version.s), "13.580.159.04");
	h->nvml_version.rc = 0;
	h->cuda_driver_version = (struct nvml_val){ 13000, 0 };
	for (unsigned i = 0; i < n; i++)
		add_h200(r, nvlink);
	h->count = (struct nvml_val){ n, 0 };
}

static int eval(const struct gpu_readings *r, const struct gpu_policy *p, struct check_result *res)
{
	struct strbuf err = STRBUF_INIT;
	check_result_init(res, "gpu");
	int ret = gpu_evaluate(r, p, res, &err);
	if (ret < 0) {
		free(res->error);
		res->error = strbuf_detach(&err, NULL);
	}
	result_finish(res);
	strbuf_release(&err);
	return ret;
}

static void done(struct gpu_readings *r, struct gpu_policy *p, struct check_result *res)
{
	gpu_readings_release(r);
	gpu_policy_release(p);
	check_result_release(res);
}

/* The one finding of code (on device, if given); fails the test when there is none. */
static const struct finding *need(const struct check_result *res, const char *code,
				  const char *device, enum status st, enum action act)
{
	const struct finding *f = result_find(res, code, device);
	CHECK_MSG(f, "no '%s' finding%s%s", code, device ? " on " : "", device ? device : "");
	CHECK_MSG(f->status == st, "'%s' is %s, expected %s (%s)", code, status_name(f->status),
		  status_name(st), f->message);
	CHECK_MSG(f->action == act, "'%s' action %s, expected %s", code, action_name(f->action),
		  action_name(act));
	return f;
}

static const char *detail(const struct finding *f, const char *key)
{
	for (size_t i = 0; i < f->nr_details; i++)
		if (!strcmp(f->details[i].key, key))
			return f->details[i].value;
	return NULL;
}

/* Run one GPU change on a healthy 8-GPU host and return the result (caller releases). */
#define ONE_GPU_CASE(res, nvlink, stmt)                                                        \
	struct gpu_readings r;                                                                 \
	struct gpu_policy p;                                                                   \
	struct check_result res;                                                               \
	host(&r, 8, nvlink);                                                                   \
	gpu_policy_init(&p);                                                                   \
	do {                                                                                   \
		struct nvml_gpu *g = &r.nvml.gpus[3];                                          \
		(void)g;                                                                       \
		stmt;                                                                          \
	} while (0);                                                                           \
	CHECK_INT(eval(&r, &p, &res), 0)

TEST(gpu_healthy_8_h200)
{
	ONE_GPU_CASE(res, true, (void)g);
	CHECK_INT(res.status, STATUS_OK);
	const struct finding *f = need(&res, "summary", NULL, STATUS_OK, ACTION_NONE);
	CHECK_STR(f->message, "8 GPUs healthy: NVIDIA H200, driver 580.159.04");
	CHECK_STR(detail(f, "cuda_driver_version"), "13.0");
	f = need(&res, "gpu", "GPU 3 (0000:5d:00.0)", STATUS_OK, ACTION_NONE);
	CHECK_CONTAINS(f->message, "39 C, 80 W of 700 W, SM 345 of 1980 MHz, PCIe gen 5 x16");
	CHECK_STR(detail(f, "temperature_c"), "39");
	CHECK_STR(detail(f, "nvlink"), "18 of 18 active");
	CHECK_STR(detail(f, "clocks_event_reasons"), "0x1 (idle)");
	CHECK_INT(res.nr, 9);
	done(&r, &p, &res);
}

TEST(gpu_no_driver_no_gpu_is_skipped)
{
	struct gpu_readings r;
	struct gpu_policy p;
	struct check_result res;
	gpu_readings_init(&r);
	gpu_policy_init(&p);
	r.bus_rc = 0; /* a PCI bus with no NVIDIA GPU */
	r.nvml.avail = NVML_NO_LIBRARY;
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_SKIPPED);
	CHECK_STR(res.findings[0].message, "no NVIDIA GPU and no driver on this host");
	check_result_release(&res);
	/* the driver's library is there but the module is not loaded: the same */
	r.nvml.avail = NVML_INIT_FAILED;
	r.nvml.init_rc = NVML_ERROR_DRIVER_NOT_LOADED;
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_SKIPPED);
	check_result_release(&res);
	/* a driver, no GPU, nothing expected: skipped too */
	r.nvml.avail = NVML_AVAILABLE;
	r.nvml.count = (struct nvml_val){ 0, 0 };
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_SKIPPED);
	CHECK_STR(res.findings[0].message, "no NVIDIA GPU on this host");
	done(&r, &p, &res);
}

TEST(gpu_no_driver_with_gpus_fails)
{
	struct gpu_readings r;
	struct gpu_policy p;
	struct check_result res;
	host(&r, 8, false);
	gpu_policy_init(&p);
	nvml_host_release(&r.nvml);
	r.nvml.avail = NVML_INIT_FAILED;
	r.nvml.init_rc = NVML_ERROR_DRIVER_NOT_LOADED;
	CHECK_INT(eval(&r, &p, &res), 0);
	/* a driver problem, never a configuration one: what to look at, and which GPUs */
	const struct finding *f = need(&res, "nvml", NULL, STATUS_FAIL, ACTION_INVESTIGATE);
	CHECK_CONTAINS(f->message, "NVIDIA driver not loaded (check `lsmod | grep nvidia`, "
				   "`dkms status`, dmesg), 8 GPUs on the PCI bus: ");
	check_result_release(&res);
	/* nothing on the bus (no sysfs in the fixture) but gpu.count says 8 */
	strlist_release(&r.bus_gpus);
	r.bus_rc = READ_MISSING;
	r.nvml.avail = NVML_NO_LIBRARY;
	p.count_set = true;
	p.count = 8;
	CHECK_INT(eval(&r, &p, &res), 0);
	f = need(&res, "nvml", NULL, STATUS_FAIL, ACTION_INVESTIGATE);
	CHECK_CONTAINS(f->message, "gpu.count is 8");
	check_result_release(&res);
	/* gpu.count = 0: a host meant to have none */
	p.count = 0;
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_SKIPPED);
	done(&r, &p, &res);
}

TEST(gpu_init_errors)
{
	struct gpu_readings r;
	struct gpu_policy p;
	struct check_result res;
	gpu_readings_init(&r);
	gpu_policy_init(&p);
	r.nvml.avail = NVML_INIT_FAILED;
	r.nvml.init_rc = NVML_ERROR_UNKNOWN;
	CHECK_INT(eval(&r, &p, &res), -1);
	CHECK_CONTAINS(res.error, "nvmlInit failed: Unknown Error");
	check_result_release(&res);
	r.nvml.init_rc = NVML_ERROR_NO_PERMISSION;
	CHECK_INT(eval(&r, &p, &res), -1);
	CHECK_CONTAINS(res.error, "Insufficient Permissions");
	check_result_release(&res);
	r.nvml.init_rc = NVML_ERROR_LIB_RM_VERSION_MISMATCH;
	CHECK_INT(eval(&r, &p, &res), 0);
	need(&res, "driver_version", NULL, STATUS_FAIL, ACTION_REBOOT);
	check_result_release(&res);
	r.nvml.init_rc = NVML_ERROR_GPU_IS_LOST;
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(need(&res, "lost", NULL, STATUS_FAIL, ACTION_REBOOT)->severity, SEV_CRITICAL);
	check_result_release(&res);
	/* the count call failing: could not tell */
	r.nvml.avail = NVML_AVAILABLE;
	r.nvml.count.rc = NVML_ERROR_UNKNOWN;
	CHECK_INT(eval(&r, &p, &res), -1);
	CHECK_CONTAINS(res.error, "nvmlDeviceGetCount");
	done(&r, &p, &res);
}

TEST(gpu_count_against_config_and_bus)
{
	struct gpu_readings r;
	struct gpu_policy p;
	struct check_result res;
	host(&r, 7, true);
	gpu_policy_init(&p);
	p.count_set = true;
	p.count = 8;
	/* 7 on the bus too: a GPU is physically gone */
	CHECK_INT(eval(&r, &p, &res), 0);
	const struct finding *f = need(&res, "count", NULL, STATUS_FAIL, ACTION_INSPECT_HARDWARE);
	CHECK_STR(f->message, "7 of 8 GPUs visible to NVML, 7 on the PCI bus");
	CHECK(!result_find(&res, "summary", NULL));
	check_result_release(&res);
	/* 8 on the bus, 7 in NVML: the driver lost one; name it */
	strlist_add(&r.bus_gpus, "0000:e7:00.0");
	CHECK_INT(eval(&r, &p, &res), 0);
	f = need(&res, "count", NULL, STATUS_FAIL, ACTION_REBOOT);
	CHECK_STR(f->message, "7 of 8 GPUs visible to NVML, 8 on the PCI bus");
	CHECK_STR(detail(f, "not_in_nvml"), "0000:e7:00.0");
	check_result_release(&res);
	/* without gpu.count the bus is the expectation */
	p.count_set = false;
	CHECK_INT(eval(&r, &p, &res), 0);
	f = need(&res, "count", NULL, STATUS_FAIL, ACTION_REBOOT);
	CHECK_STR(f->message, "7 GPUs visible to NVML, 8 on the PCI bus");
	check_result_release(&res);
	/* ...unless this is a container that sees only its own GPUs */
	r.bus_restricted = true;
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK(!result_find(&res, "count", NULL));
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	/* no sysfs at all, no config: what is present is expected */
	r.bus_restricted = false;
	r.bus_rc = READ_MISSING;
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	/* more than configured: a configuration to fix, not a sick host */
	p.count_set = true;
	p.count = 4;
	CHECK_INT(eval(&r, &p, &res), 0);
	need(&res, "count", NULL, STATUS_WARN, ACTION_FIX_CONFIG);
	CHECK_INT(res.status, STATUS_WARN);
	check_result_release(&res);
	p.count = 7;
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_OK);
	done(&r, &p, &res);
}

/* A GPU NVML cannot open: nothing of NVML's (no address, no UUID), as nvml.c leaves it. */
static void unopened(struct nvml_gpu *g, int rc)
{
	g->handle_rc = rc;
	g->bdf[0] = '\0';
	g->pci_bus_id.rc = g->uuid.rc = g->serial.rc = NVML_ERROR_GPU_IS_LOST;
}

TEST(gpu_lost_gpu_fails_critical)
{
	ONE_GPU_CASE(res, true, unopened(g, NVML_ERROR_GPU_IS_LOST));
	const struct finding *f = need(&res, "lost", "GPU 3", STATUS_FAIL, ACTION_REBOOT);
	CHECK_INT(f->severity, SEV_CRITICAL);
	/* the bus shows one NVIDIA GPU no other GPU claims: by elimination, the lost one */
	CHECK_STR(f->message, "GPU 3 (0000:5d:00.0) has fallen off the bus (NVML: GPU is lost)");
	CHECK_STR(f->device, "GPU 3 (0000:5d:00.0)");
	CHECK_STR(detail(f, "index"), "3");
	CHECK_STR(detail(f, "pci_bus_id"), "0000:5d:00.0");
	CHECK(detail(f, "pci_bus_id_from") != NULL);
	CHECK(!detail(f, "uuid")); /* a lost GPU says none: never another GPU's */
	CHECK(!detail(f, "serial"));
	CHECK(!result_find(&res, "summary", NULL));
	CHECK(result_find(&res, "gpu", "GPU 2")); /* the others are still judged */
	done(&r, &p, &res);
}

TEST(gpu_lost_in_a_query_fails)
{
	ONE_GPU_CASE(res, true, {
		g->ecc_volatile_uncorrected.rc = NVML_ERROR_GPU_IS_LOST;
		g->lost = true;
	});
	need(&res, "lost", "GPU 3 (0000:5d:00.0)", STATUS_FAIL, ACTION_REBOOT);
	CHECK(!result_find(&res, "nvml", NULL)); /* lost is said once, not as a read error */
	done(&r, &p, &res);
}

TEST(gpu_handle_errors)
{
	static const struct {
		int rc;
		enum status st;
		enum action act;
		const char *code;
	} cases[] = {
		{ NVML_ERROR_INSUFFICIENT_POWER, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "handle" },
		{ NVML_ERROR_IRQ_ISSUE, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "handle" },
		{ NVML_ERROR_UNKNOWN, STATUS_FAIL, ACTION_REBOOT, "handle" },
		{ NVML_ERROR_RESET_REQUIRED, STATUS_FAIL, ACTION_RESET_GPU, "reset_required" },
		{ NVML_ERROR_NO_PERMISSION, STATUS_UNKNOWN, ACTION_FIX_CONFIG, "nvml" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ONE_GPU_CASE(res, false, g->handle_rc = cases[i].rc);
		need(&res, cases[i].code, "GPU 3", cases[i].st, cases[i].act);
		done(&r, &p, &res);
	}
}

TEST(gpu_ecc_mode)
{
	{
		ONE_GPU_CASE(res, false, g->ecc_current.v = 0);
		const struct finding *f = need(&res, "ecc_mode", "GPU 3", STATUS_FAIL,
					       ACTION_RESET_GPU);
		CHECK_CONTAINS(f->message, "ECC off until its next reset");
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, g->ecc_current.v = g->ecc_pending.v = 0);
		need(&res, "ecc_mode", "GPU 3", STATUS_FAIL, ACTION_FIX_CONFIG);
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, g->ecc_pending.v = 0);
		const struct finding *f = need(&res, "ecc_mode", "GPU 3", STATUS_FAIL,
					       ACTION_FIX_CONFIG);
		CHECK_CONTAINS(f->message, "turns ECC off at its next reset");
		done(&r, &p, &res);
	}
	{
		/* a GPU without ECC reporting is not a fault */
		ONE_GPU_CASE(res, false, g->ecc_current.rc = g->ecc_pending.rc =
						 NVML_ERROR_NOT_SUPPORTED);
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
}

TEST(gpu_ecc_uncorrected)
{
	{
		ONE_GPU_CASE(res, false, g->ecc_volatile_uncorrected.v = 2);
		const struct finding *f = need(&res, "ecc_uncorrected", "GPU 3", STATUS_FAIL,
					       ACTION_RESET_GPU);
		CHECK_CONTAINS(f->message, "2 uncorrectable ECC errors");
		CHECK_STR(detail(f, "volatile_uncorrected"), "2");
		done(&r, &p, &res);
	}
	{
		/* errors before the last reset, corrected ones: history, not a fault now */
		ONE_GPU_CASE(res, false, {
			g->ecc_aggregate_uncorrected.v = 5;
			g->ecc_volatile_corrected.v = 1000;
		});
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false,
			     g->ecc_volatile_uncorrected.rc = NVML_ERROR_NOT_SUPPORTED);
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
}

TEST(gpu_row_remapping)
{
	{
		/* by default it fails, so that --slurm drains the node until the reset (issue 23):
		 * the message leads with what to do and names the bus id */
		ONE_GPU_CASE(res, false, g->remap_pending.v = 1);
		const struct finding *f = need(&res, "row_remap_pending", "GPU 3", STATUS_FAIL,
					       ACTION_RESET_GPU);
		CHECK_STR(f->message, "GPU 3 (0000:5d:00.0): reset GPU: pending row remap");
		CHECK_STR(detail(f, "remap_pending"), "drain");
		done(&r, &p, &res);
	}
	{
		/* gpu.remap-pending = warn: the same finding, a warning; the host stays in service */
		ONE_GPU_CASE(res, false, {
			g->remap_pending.v = 1;
			p.remap_pending_warn = true;
		});
		const struct finding *f = need(&res, "row_remap_pending", "GPU 3", STATUS_WARN,
					       ACTION_RESET_GPU);
		CHECK_CONTAINS(f->message, "reset GPU: pending row remap");
		CHECK_CONTAINS(f->message, "not drained");
		CHECK_INT(res.status, STATUS_WARN);
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, g->remap_failure.v = 1);
		const struct finding *f = need(&res, "row_remap_failure", "GPU 3", STATUS_FAIL,
					       ACTION_INSPECT_HARDWARE);
		CHECK_INT(f->severity, SEV_CRITICAL);
		CHECK_CONTAINS(f->message, "replace the GPU");
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, g->remap_uncorrectable.v = 513);
		need(&res, "row_remap_uncorrectable", "GPU 3", STATUS_FAIL,
		     ACTION_INSPECT_HARDWARE);
		done(&r, &p, &res);
	}
	{
		/* at the limit, and rows remapped for correctable errors: fine */
		ONE_GPU_CASE(res, false, {
			g->remap_uncorrectable.v = 512;
			g->remap_correctable.v = 40;
		});
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false,
			     g->remap_pending.rc = g->remap_failure.rc = g->remap_correctable.rc =
				     g->remap_uncorrectable.rc = NVML_ERROR_FUNCTION_NOT_FOUND);
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
}

TEST(gpu_nvlink_inactive)
{
	{
		ONE_GPU_CASE(res, true, g->nvlink[5].active.v = g->nvlink[7].active.v = 0);
		const struct finding *f = need(&res, "nvlink_inactive", "GPU 3", STATUS_FAIL,
					       ACTION_RESET_GPU);
		CHECK_STR(f->message, "GPU 3 (0000:5d:00.0) NVLink 5, 7 inactive (16 of 18 active)");
		done(&r, &p, &res);
	}
	{
		/* a GPU whose links are all down while the others' are up */
		ONE_GPU_CASE(res, true, {
			for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
				g->nvlink[l].active.v = 0;
		});
		need(&res, "nvlink_inactive", "GPU 3", STATUS_FAIL, ACTION_RESET_GPU);
		done(&r, &p, &res);
	}
	{
		/* no NVLink on this host (the 2xH200 VM): every link "not supported" */
		ONE_GPU_CASE(res, false, (void)g);
		CHECK_INT(res.status, STATUS_OK);
		CHECK_STR(detail(result_find(&res, "gpu", "GPU 3"), "nvlink"), "none");
		done(&r, &p, &res);
	}
	{
		/* links that report a state but none active anywhere: PCIe cards without bridges */
		struct gpu_readings r;
		struct gpu_policy p;
		struct check_result res;
		host(&r, 2, true);
		gpu_policy_init(&p);
		for (size_t i = 0; i < r.nvml.nr; i++)
			for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
				r.nvml.gpus[i].nvlink[l].active.v = 0;
		CHECK_INT(eval(&r, &p, &res), 0);
		CHECK_INT(res.status, STATUS_OK);
		check_result_release(&res);
		/* ...unless the configuration says how many must be up */
		p.nvlink_links = 18;
		CHECK_INT(eval(&r, &p, &res), 0);
		const struct finding *f = need(&res, "nvlink_inactive", "GPU 1", STATUS_FAIL,
					       ACTION_RESET_GPU);
		CHECK_STR(f->message, "GPU 1 (0000:2a:00.0) has 0 of 18 NVLinks active");
		done(&r, &p, &res);
	}
	{
		/* INVALID_ARGUMENT for a link number the GPU does not have: absent, not an error */
		ONE_GPU_CASE(res, true, {
			g->nvlink[17].active.rc = NVML_ERROR_INVALID_ARGUMENT;
			for (int c = 0; c < NVML_NVLINK_ERROR_COUNT; c++)
				g->nvlink[17].errors[c].rc = NVML_ERROR_INVALID_ARGUMENT;
		});
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
}

TEST(gpu_nvlink_errors_warn)
{
	{
		ONE_GPU_CASE(res, true, {
			g->nvlink[2].errors[NVML_NVLINK_ERROR_DL_CRC_FLIT].v = 250;
			g->nvlink[9].errors[NVML_NVLINK_ERROR_DL_REPLAY].v = 101;
			g->nvlink[4].errors[NVML_NVLINK_ERROR_DL_RECOVERY].v = 100; /* at, not over */
			/* corrected by ECC: the link doing its job, never judged */
			g->nvlink[6].errors[NVML_NVLINK_ERROR_DL_ECC_DATA].v = 100000;
		});
		const struct finding *f = need(&res, "nvlink_errors", "GPU 3", STATUS_WARN,
					       ACTION_INVESTIGATE);
		CHECK_STR(f->message, "GPU 3 (0000:5d:00.0) NVLink errors over 100 since the driver loaded (the "
				      "first reading: later runs warn only when they rise): "
				      "link 2 crc_flit 250, link 9 replay 101");
		CHECK_INT(res.status, STATUS_WARN);
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, true, {
			g->nvlink[2].errors[NVML_NVLINK_ERROR_DL_CRC_DATA].v = 250;
			p.nvlink_error_threshold = 1000;
		});
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
}

TEST(gpu_nvlink_errors_rising_since_last_run)
{
	struct gpu_readings r;
	struct gpu_policy p;
	struct check_result res;
	struct strbuf st = STRBUF_INIT;
	host(&r, 2, true);
	gpu_policy_init(&p);
	struct nvml_gpu *g = &r.nvml.gpus[1];
	snprintf(g->uuid.s, sizeof(g->uuid.s), "GPU-2dd0e810-d0df-95c4-ccdb-e73c0d137a0e");
	g->nvlink[2].errors[NVML_NVLINK_ERROR_DL_CRC_DATA].v = 400;
	g->nvlink[3].errors[NVML_NVLINK_ERROR_DL_REPLAY].v = 250;
	g->nvlink[4].errors[NVML_NVLINK_ERROR_DL_RECOVERY].v = 30;
	/* the last run's reading, as the state file keeps it */
	gpu_state_format(&r, &st);
	CHECK_CONTAINS(st.buf, "GPU-2dd0e810-d0df-95c4-ccdb-e73c0d137a0e 2 crc_data 400\n");
	r.have_state = r.state_dir = true;
	r.state_age_s = 300; /* the last run read them five minutes ago */
	gpu_state_apply(&r, st.buf);
	CHECK_INT(r.nr_prev, 2 * NVML_NVLINK_MAX_LINKS * NVML_NVLINK_ERROR_COUNT);
	/* no change since: high totals but steady, no warning */
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	/* +150 replays on link 3: rising; link 2 +50 is under the threshold; link 4 was reset */
	g->nvlink[3].errors[NVML_NVLINK_ERROR_DL_REPLAY].v = 400;
	g->nvlink[2].errors[NVML_NVLINK_ERROR_DL_CRC_DATA].v = 450;
	g->nvlink[4].errors[NVML_NVLINK_ERROR_DL_RECOVERY].v = 3;
	CHECK_INT(eval(&r, &p, &res), 0);
	const struct finding *f = need(&res, "nvlink_errors", "GPU 1", STATUS_WARN,
				       ACTION_INVESTIGATE);
	/* the rise worded as IB and AER word theirs (issue 23), with the same JSON */
	CHECK_STR(f->message, "GPU 1 (0000:2a:00.0) NVLink errors rising by over 100 since the last run: "
			      "link 3 replay +150 in 5 min (1,800/h)");
	CHECK_STR(detail(f, "delta"), "150");
	CHECK_STR(detail(f, "seconds"), "300");
	CHECK_STR(detail(f, "rate_per_hour"), "1800");
	check_result_release(&res);
	/* a reset counter that climbs past the threshold again counts from zero */
	g->nvlink[4].errors[NVML_NVLINK_ERROR_DL_RECOVERY].v = 29;
	g->nvlink[3].errors[NVML_NVLINK_ERROR_DL_REPLAY].v = 250;
	g->nvlink[4].errors[NVML_NVLINK_ERROR_DL_CRC_FLIT].v = 101;
	CHECK_INT(eval(&r, &p, &res), 0);
	f = need(&res, "nvlink_errors", "GPU 1", STATUS_WARN, ACTION_INVESTIGATE);
	CHECK_CONTAINS(f->message, "link 4 crc_flit +101");
	CHECK_NOT_CONTAINS(f->message, "link 3");
	strbuf_release(&st);
	done(&r, &p, &res);
}

TEST(gpu_clock_event_reasons)
{
	static const uint64_t normal[] = { 0, 0x1, 0x2, 0x4, 0x10, 0x100, 0x1 | 0x4 | 0x10 };
	for (size_t i = 0; i < ARRAY_SIZE(normal); i++) {
		ONE_GPU_CASE(res, false, g->clock_events.v = normal[i]);
		CHECK_MSG(res.status == STATUS_OK, "0x%llx judged %s",
			  (unsigned long long)normal[i], status_name(res.status));
		done(&r, &p, &res);
	}
	static const struct {
		uint64_t mask;
		const char *name;
	} bad[] = {
		{ 0x8, "HW slowdown" },
		{ 0x20, "SW thermal slowdown" },
		{ 0x40 | 0x1, "HW thermal slowdown" },
		{ 0x80, "HW power brake" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		ONE_GPU_CASE(res, false, g->clock_events.v = bad[i].mask);
		const struct finding *f = need(&res, "clock_events", "GPU 3", STATUS_FAIL,
					       ACTION_INSPECT_HARDWARE);
		CHECK_CONTAINS(f->message, bad[i].name);
		CHECK_NOT_CONTAINS(f->message, "idle");
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, g->clock_events.v = 0x8 | 0x40);
		const struct finding *f = result_find(&res, "clock_events", NULL);
		CHECK_CONTAINS(f->message, "HW slowdown, HW thermal slowdown");
		CHECK_STR(detail(f, "clocks_event_reasons"), "0x48");
		done(&r, &p, &res);
	}
}

TEST(gpu_pcie_width_and_gen)
{
	{
		ONE_GPU_CASE(res, false, g->pcie_width.v = 8);
		const struct finding *f = need(&res, "pcie_link", "GPU 3", STATUS_FAIL,
					       ACTION_INSPECT_HARDWARE);
		CHECK_STR(f->message, "GPU 3 (0000:5d:00.0) PCIe link is x8 of x16 (reseat the GPU)");
		done(&r, &p, &res);
	}
	{
		/* gen 1 at idle is power saving: ok, and said in a detail */
		ONE_GPU_CASE(res, false, g->pcie_gen.v = 1);
		CHECK_INT(res.status, STATUS_OK);
		const struct finding *f = need(&res, "gpu", "GPU 3", STATUS_OK, ACTION_NONE);
		CHECK_CONTAINS(detail(f, "pcie_note"), "gen 1 of 5");
		done(&r, &p, &res);
	}
}

TEST(gpu_version_pins)
{
	{
		ONE_GPU_CASE(res, false, strlist_add(&p.driver_versions, "570.133.20"));
		const struct finding *f = need(&res, "driver_version", NULL, STATUS_FAIL,
					       ACTION_FIX_CONFIG);
		CHECK_STR(f->message, "NVIDIA driver 580.159.04, expected 570.133.20");
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, {
			strlist_add(&p.driver_versions, "570.133.20");
			strlist_add(&p.driver_versions, "580.159.04");
			strlist_add(&p.vbios_versions, "96.00.A5.*");
		});
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, {
			strlist_add(&p.vbios_versions, "96.00.A5.00.1A");
			snprintf(g->vbios.s, sizeof(g->vbios.s), "96.00.99.00.01");
		});
		const struct finding *f = need(&res, "vbios_version", "GPU 3", STATUS_FAIL,
					       ACTION_FIX_CONFIG);
		CHECK_CONTAINS(f->message, "96.00.99.00.01, expected 96.00.A5.00.1A");
		CHECK_INT(res.nr, 8); /* 7 ok GPUs + this one; no summary */
		done(&r, &p, &res);
	}
	{
		/* pinned but unreadable: could not tell */
		ONE_GPU_CASE(res, false, {
			strlist_add(&p.driver_versions, "580.159.04");
			r.nvml.driver_version.rc = NVML_ERROR_UNKNOWN;
		});
		need(&res, "driver_version", NULL, STATUS_UNKNOWN, ACTION_INVESTIGATE);
		done(&r, &p, &res);
	}
}

TEST(gpu_recovery_action)
{
	static const struct {
		uint64_t v;
		enum status st;
		enum action act;
	} cases[] = {
		{ 1, STATUS_FAIL, ACTION_RESET_GPU },
		{ 2, STATUS_FAIL, ACTION_REBOOT },
		{ 3, STATUS_FAIL, ACTION_REBOOT },
		{ 4, STATUS_FAIL, ACTION_RESET_GPU },
		{ 9, STATUS_WARN, ACTION_INVESTIGATE },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ONE_GPU_CASE(res, false, g->recovery_action.v = cases[i].v);
		const struct finding *f = need(&res, "recovery_action", "GPU 3", cases[i].st,
					       cases[i].act);
		CHECK_INT(atoi(detail(f, "recovery_action")), cases[i].v);
		done(&r, &p, &res);
	}
	static const int silent[] = { NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_NOT_SUPPORTED };
	for (size_t i = 0; i < ARRAY_SIZE(silent); i++) {
		ONE_GPU_CASE(res, false, {
			g->recovery_action.v = 0;
			g->recovery_action.rc = silent[i];
		});
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, g->recovery_action.v = 0);
		CHECK_INT(res.status, STATUS_OK);
		done(&r, &p, &res);
	}
}

TEST(gpu_read_errors_are_unknown_not_faults)
{
	{
		ONE_GPU_CASE(res, false, {
			g->ecc_current.rc = g->ecc_pending.rc = NVML_ERROR_NO_PERMISSION;
			g->clock_events.rc = NVML_ERROR_UNKNOWN;
			g->temperature.rc = NVML_ERROR_UNKNOWN; /* only shown, never judged */
		});
		const struct finding *f = need(&res, "nvml", "GPU 3", STATUS_UNKNOWN, ACTION_INVESTIGATE);
		CHECK_STR(f->message, "GPU 3 (0000:5d:00.0): cannot read ECC mode: Insufficient "
				      "Permissions, clock event reasons: Unknown Error");
		CHECK_INT(res.status, STATUS_UNKNOWN);
		done(&r, &p, &res);
	}
	{
		ONE_GPU_CASE(res, false, g->pcie_width.rc = NVML_ERROR_RESET_REQUIRED);
		need(&res, "reset_required", "GPU 3", STATUS_FAIL, ACTION_RESET_GPU);
		CHECK(!result_find(&res, "nvml", NULL));
		done(&r, &p, &res);
	}
	{
		/* the temperature alone unreadable: still healthy, just not shown */
		ONE_GPU_CASE(res, false, g->temperature.rc = NVML_ERROR_UNKNOWN);
		CHECK_INT(res.status, STATUS_OK);
		CHECK_NOT_CONTAINS(result_find(&res, "gpu", "GPU 3")->message, " C,");
		done(&r, &p, &res);
	}
}

TEST(gpu_policy_from_config)
{
	struct config cfg;
	struct gpu_policy p;
	struct strbuf err = STRBUF_INIT;
	const char *text = "[gpu]\n\tcount = 8\n\tnvlink-error-threshold = 5\n"
			   "\tdriver-version = 580.159.04, 570.133.20\n\tdriver-version = 575.*\n"
			   "\tvbios-version = 96.00.A5.00.1A\n";
	config_init(&cfg, "node1");
	CHECK_INT(config_parse(&cfg, text, strlen(text), "t.conf", &err), 0);
	gpu_policy_init(&p);
	CHECK_INT(gpu_policy_load(&p, &cfg, &err), 0);
	CHECK(p.count_set);
	CHECK_INT(p.count, 8);
	CHECK_INT(p.nvlink_error_threshold, 5);
	CHECK_INT(p.remapped_rows_max, 512);
	CHECK_INT(p.driver_versions.nr, 3);
	CHECK_STR(p.driver_versions.items[2], "575.*");
	CHECK_INT(p.vbios_versions.nr, 1);
	gpu_policy_release(&p);
	config_release(&cfg);

	config_init(&cfg, "node1");
	text = "[gpu]\n\tcount = eight\n";
	CHECK_INT(config_parse(&cfg, text, strlen(text), "t.conf", &err), 0);
	gpu_policy_init(&p);
	CHECK_INT(gpu_policy_load(&p, &cfg, &err), -1);
	CHECK_CONTAINS(err.buf, "count");
	gpu_policy_release(&p);
	config_release(&cfg);

	config_init(&cfg, "node1");
	text = "[gpu]\n\tnvlink-links = 19\n";
	CHECK_INT(config_parse(&cfg, text, strlen(text), "t.conf", &err), 0);
	gpu_policy_init(&p);
	CHECK_INT(gpu_policy_load(&p, &cfg, &err), -1);
	CHECK_CONTAINS(err.buf, "nvlink-links");
	gpu_policy_release(&p);
	config_release(&cfg);
	strbuf_release(&err);
}

/*
 * A device on the bus whose vendor or class cannot be read may be a GPU: gather keeps it apart
 * (the one PCI walk, pci_find) and evaluate says unknown for it by name, with no "healthy"
 * summary beside it, where the old walk left it out of the count without a word.
 */
TEST(gpu_bus_device_with_unreadable_id_is_unknown)
{
	const char *root = test_tmpdir();
	struct strbuf err = STRBUF_INIT;
	test_write(root, "sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de\n");
	test_write(root, "sys/bus/pci/devices/0000:18:00.0/class", "0x030200\n");
	/* a directory where the vendor file belongs: it exists and cannot be read */
	test_mkdir(root, "sys/bus/pci/devices/0000:2a:00.0/vendor");
	test_write(root, "sys/bus/pci/devices/0000:2a:00.0/class", "0x030200\n");
	/* NVIDIA, class unreadable (NUL bytes) */
	test_write(root, "sys/bus/pci/devices/0000:3a:00.0/vendor", "0x10de\n");
	test_write(root, "sys/bus/pci/devices/0000:3a:00.0/class", "\0\0\0");
	/* not NVIDIA, class unreadable: cannot be a GPU, not asked about */
	test_write(root, "sys/bus/pci/devices/0000:4a:00.0/vendor", "0x8086\n");
	test_write(root, "sys/bus/pci/devices/0000:4a:00.0/class", "");
	unsetenv("VIGIL_NVML_LIBRARY");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct gpu_readings r;
	gpu_readings_init(&r);
	CHECK_MSG(gpu_gather(&fr, &r, NULL, &err) == 0, "%s", err.buf);
	fsroot_release(&fr);
	CHECK_INT(r.bus_rc, 0);
	CHECK_INT(r.bus_gpus.nr, 1);
	CHECK_STR(r.bus_gpus.items[0], "0000:18:00.0");
	CHECK_INT(r.bus_unknown.nr, 2);
	CHECK_STR(r.bus_unknown.items[0], "0000:2a:00.0");
	CHECK_STR(r.bus_unknown.items[1], "0000:3a:00.0");
	gpu_readings_release(&r);

	/* evaluate: one healthy GPU in NVML and on the bus, plus an unreadable device */
	struct gpu_policy p;
	struct check_result res;
	host(&r, 1, false);
	gpu_policy_init(&p);
	strlist_add(&r.bus_unknown, "0000:2a:00.0");
	strlist_add(&r.bus_unknown_why, "'/sys/bus/pci/devices/0000:2a:00.0/vendor' is empty");
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	const struct finding *f = need(&res, "pci_id", "0000:2a:00.0", STATUS_UNKNOWN, ACTION_INVESTIGATE);
	CHECK_STR(f->message, "cannot tell whether PCI device 0000:2a:00.0 is a GPU: "
			      "'/sys/bus/pci/devices/0000:2a:00.0/vendor' is empty");
	CHECK(!result_find(&res, "summary", NULL));
	check_result_release(&res);
	/* no driver and no GPU read on the bus: not "skipped" while a device is in doubt */
	gpu_readings_release(&r);
	gpu_readings_init(&r);
	r.bus_rc = 0;
	r.nvml.avail = NVML_NO_LIBRARY;
	strlist_add(&r.bus_unknown, "0000:2a:00.0");
	strlist_add(&r.bus_unknown_why, "unreadable");
	CHECK_INT(eval(&r, &p, &res), 0);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	done(&r, &p, &res);
	strbuf_release(&err);
}

/* Issue 23: a finding names the part fully, so that a ticket can name the GPU to replace. */
TEST(gpu_finding_names_index_bus_uuid_serial)
{
	ONE_GPU_CASE(res, true, g->ecc_volatile_uncorrected.v = 2);
	const struct finding *f = need(&res, "ecc_uncorrected", "GPU 3", STATUS_FAIL,
				       ACTION_RESET_GPU);
	CHECK_STR(f->device, "GPU 3 (0000:5d:00.0)");
	CHECK(!strncmp(f->message, "GPU 3 (0000:5d:00.0) had 2 uncorrectable", 40));
	CHECK_STR(detail(f, "index"), "3");
	CHECK_STR(detail(f, "pci_bus_id"), "0000:5d:00.0");
	CHECK_STR(detail(f, "uuid"), "GPU-5b8cd186-d413-98f2-8865-fb6807b09f03");
	CHECK_STR(detail(f, "serial"), "1653724058039");
	CHECK(!detail(f, "pci_bus_id_from"));
	/* the healthy ones say it too */
	f = need(&res, "gpu", "GPU 2", STATUS_OK, ACTION_NONE);
	CHECK(!strncmp(f->message, "GPU 2 (0000:3a:00.0) healthy: NVIDIA H200", 41));
	CHECK_STR(detail(f, "uuid"), "GPU-5b8cd186-d413-98f2-8865-fb6807b09f02");
	CHECK_STR(detail(f, "index"), "2");
	done(&r, &p, &res);
}

/* Two GPUs without an address and two unclaimed on the bus: which is which is not told. */
TEST(gpu_unopened_bus_id_never_guessed)
{
	ONE_GPU_CASE(res, true, (unopened(g, NVML_ERROR_GPU_IS_LOST),
				 unopened(&r.nvml.gpus[5], NVML_ERROR_GPU_IS_LOST)));
	const struct finding *f = need(&res, "lost", "GPU 3", STATUS_FAIL, ACTION_REBOOT);
	CHECK_STR(f->device, "GPU 3");
	CHECK_STR(f->message, "GPU 3 has fallen off the bus (NVML: GPU is lost)");
	CHECK(!detail(f, "pci_bus_id"));
	CHECK_STR(detail(f, "index"), "3");
	done(&r, &p, &res);
}

/* The finding with this code in the gpu check of a 'vigil check --json' report, or NULL. */
static const struct json_value *json_finding(const struct json_value *rep, const char *code,
					     const char *device)
{
	const struct json_value *checks = json_get(rep, "checks");
	for (size_t i = 0; checks && i < checks->nr; i++) {
		const char *n = json_get_string(checks->items[i], "name");
		const struct json_value *fs = json_get(checks->items[i], "findings");
		for (size_t j = 0; n && !strcmp(n, "gpu") && fs && j < fs->nr; j++) {
			const char *c = json_get_string(fs->items[j], "code");
			const char *d = json_get_string(fs->items[j], "device");
			if (c && !strcmp(c, code) && d && !strcmp(d, device))
				return fs->items[j];
		}
	}
	return NULL;
}

static struct json_value *check_scenario(const char *scenario, struct child *c)
{
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT;
	strbuf_addf(&root, "tests/scenarios/%s/root", scenario);
	struct strbuf full = STRBUF_INIT;
	test_src_path(&full, root.buf);
	strbuf_addf(&state, "%s/state-%s", test_tmpdir(), scenario);
	const char *args[] = { "check", "--json", "--only", "gpu", "--root", full.buf,
			       "--state-dir", state.buf, NULL };
	test_run_vigil(c, args, NULL);
	strbuf_release(&root);
	strbuf_release(&full);
	strbuf_release(&state);
	return test_parse_json(c);
}

/* Through the binary: the lost GPU of tests/scenarios/gpu-lost and a sick one with NVML data. */
TEST(gpu_findings_name_the_part_through_the_binary)
{
	struct child c;
	struct json_value *rep = check_scenario("gpu-lost", &c);
	CHECK_INT(c.exit_code, 1);
	const struct json_value *f = json_finding(rep, "lost", "GPU 3 (0000:5d:00.0)");
	CHECK_MSG(f, "no lost finding on GPU 3 (0000:5d:00.0):\n%s", c.out.buf);
	const struct json_value *d = json_get(f, "details");
	double v = -1;
	CHECK(json_get_number(d, "index", &v) && v == 3);
	CHECK_STR(json_get_string(d, "pci_bus_id"), "0000:5d:00.0");
	CHECK_STR(json_get_string(f, "message"),
		  "GPU 3 (0000:5d:00.0) has fallen off the bus (NVML: GPU is lost)");
	json_free(rep);
	child_release(&c);

	/* GPU 2 of gpu-ecc-uncorrected: every name NVML gives, from its nvml.snapshot */
	rep = check_scenario("gpu-ecc-uncorrected", &c);
	CHECK_INT(c.exit_code, 1);
	f = json_finding(rep, "ecc_uncorrected", "GPU 2 (0000:3a:00.0)");
	CHECK_MSG(f, "no ecc_uncorrected finding on GPU 2 (0000:3a:00.0):\n%s", c.out.buf);
	d = json_get(f, "details");
	CHECK(json_get_number(d, "index", &v) && v == 2);
	CHECK_STR(json_get_string(d, "pci_bus_id"), "0000:3a:00.0");
	CHECK_STR(json_get_string(d, "uuid"), "GPU-270e2ac2-2a5b-19e5-e9ac-0daf455c913f");
	CHECK_STR(json_get_string(d, "serial"), "1653724073877");
	json_free(rep);
	child_release(&c);
}
