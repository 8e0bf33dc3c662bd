/*
 * test_telemetry.c: the agent's per-GPU telemetry in its metrics (docs/telemetry.md), through
 * the real binary and the fake NVML: every family with the fixture's values and the labels
 * gpu, uuid, pci_bus_id and model; a field NVML does not give is left out with field_ok 0;
 * label values with a quote or backslash are escaped; NVLink counters stay between their
 * reads; Xids NVML reported are counted by code; promtool accepts the text; and
 * agent.gpu-telemetry = false leaves it all out.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/strlist.h"
#include "../../src/agent/telemetry.h"

#include <unistd.h>

#define TEL_BOOT "0a1b2c3d-0000-4000-8000-0000000c0de1"

/* GPU 0 reports everything; GPU 1 (a name with a quote and a backslash) no HBM temperature,
 * no power draw and no NVLink; Xid 79 is raised on GPU 0. */
static const char tel_snapshot[] =
	"vigil-nvml-snapshot 1\n"
	"driver_version 580.159.04\n"
	"nvml_version 13.580.159.04\n"
	"cuda_driver_version 13000\n"
	"device_count 2\n"
	"xid_event 0 79\n"
	"\n[gpu 0]\n"
	"name NVIDIA H200\n"
	"uuid GPU-11111111-2222-4333-8444-555555555555\n"
	"serial 1650000000001\n"
	"pci_bus_id 00000000:18:00.0\n"
	"vbios_version 96.00.A5.00.1A\n"
	"pci_device_id 0x233510de\n"
	"persistence_mode 1\n"
	"ecc_mode_current 1\necc_mode_pending 1\n"
	"ecc_volatile_corrected 2\necc_volatile_uncorrected 0\n"
	"ecc_aggregate_corrected 12\necc_aggregate_uncorrected 0\n"
	"remapped_rows_correctable 3\nremapped_rows_uncorrectable 0\n"
	"remapped_rows_pending 1\nremapped_rows_failure 0\n"
	"clocks_event_reasons 0x44\n"
	"pcie_gen_current 5\npcie_gen_max 5\npcie_width_current 16\npcie_width_max 16\n"
	"pcie_replay_counter 7\n"
	"temperature_gpu 41\n"
	"temperature_memory 47\n"
	"power_usage_mw 312500\n"
	"power_limit_mw 700000\n"
	"sm_clock_mhz 1980\nsm_clock_max_mhz 1980\n"
	"mem_clock_mhz 3201\n"
	"utilization_gpu 37\n"
	"memory_used_bytes 81604378624\n"
	"recovery_action 0\n"
	"supported_event_types 0x8f\n"
	"nvlink 0 active=1 replay=5 recovery=1 crc_flit=2 crc_data=3 ecc_data=0\n"
	"nvlink 1 active=1 replay=0 recovery=0 crc_flit=0 crc_data=0 ecc_data=0\n"
	"\n[gpu 1]\n"
	"name NVIDIA \"H200\" \\x\n"
	"uuid GPU-66666666-7777-4888-8999-aaaaaaaaaaaa\n"
	"serial 1650000000002\n"
	"pci_bus_id 00000000:2A:00.0\n"
	"pci_device_id 0x233510de\n"
	"persistence_mode 1\n"
	"ecc_mode_current 1\necc_mode_pending 1\n"
	"ecc_aggregate_corrected 0\necc_aggregate_uncorrected 0\n"
	"remapped_rows_correctable 0\nremapped_rows_uncorrectable 0\n"
	"remapped_rows_pending 0\nremapped_rows_failure 0\n"
	"clocks_event_reasons 0x1\n"
	"pcie_replay_counter 0\n"
	"temperature_gpu 33\n"
	"temperature_memory !3\n"
	"power_usage_mw !3\n"
	"power_limit_mw 700000\n"
	"sm_clock_mhz 345\n"
	"mem_clock_mhz 3201\n"
	"utilization_gpu 0\n"
	"memory_used_bytes 0\n"
	"supported_event_types 0x8f\n";

#define G0 "gpu=\"0\",uuid=\"GPU-11111111-2222-4333-8444-555555555555\",pci_bus_id=\"00000000:18:00.0\",model=\"NVIDIA H200\""
#define G1 "gpu=\"1\",uuid=\"GPU-66666666-7777-4888-8999-aaaaaaaaaaaa\",pci_bus_id=\"00000000:2A:00.0\",model=\"NVIDIA \\\"H200\\\" \\\\x\""

static void tel_root(const char *dir)
{
	test_write(dir, "root/nvml.snapshot", tel_snapshot);
	test_write(dir, "root/proc/sys/kernel/random/boot_id", TEL_BOOT "\n");
	test_write(dir, "root/dev/kmsg", "6,0,0,-;Linux version 6.8.0-45-generic\n");
	test_mkdir(dir, "state");
}

/* 'vigil agent' over the root for cycles cycles (extra: one -c setting or NULL); the textfile. */
static int tel_agent(const char *dir, const char *cycles, const char *extra, struct strbuf *prom)
{
	struct strbuf root = STRBUF_INIT, state = STRBUF_INIT, p = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&state, "%s/state", dir);
	strbuf_addf(&p, "%s/vigil.prom", dir);
	const char *args[] = { "agent", "--only", "gpu", "--root", root.buf, "--state-dir",
			       state.buf, "--prom", p.buf, "--listen", "off", "--interval", "1",
			       "--jitter", "0", "-c", "gpu.timeout=20", "--cycles", cycles,
			       extra ? "-c" : NULL, extra, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	int code = c.exited ? c.exit_code : -1;
	CHECK_MSG(code == 0, "exit %d: %s", code, c.err.buf);
	child_release(&c);
	strbuf_reset(prom);
	CHECK_INT(read_file_bounded(p.buf, prom, 8 << 20, NULL), READ_OK);
	strbuf_release(&root);
	strbuf_release(&state);
	strbuf_release(&p);
	return code;
}

static void promtool_accepts(const struct strbuf *text)
{
	const char *pt[] = { "promtool", "check", "metrics", NULL };
	struct child t;
	if (access("/usr/bin/promtool", X_OK) != 0 && access("/usr/local/bin/promtool", X_OK) != 0)
		return;
	child_init(&t);
	t.argv = pt;
	t.timeout_ms = 30000;
	t.stdin_data = text->buf;
	t.stdin_len = text->len;
	CHECK_INT(child_run(&t, NULL), 0);
	CHECK_MSG(t.exited && t.exit_code == 0, "promtool: %s%s", t.out.buf, t.err.buf);
	child_release(&t);
}

/* Two cycles: the second leaves the NVLink counters unread (gpu.nvlink-counter-interval), so
 * their series must be the first cycle's, kept. Before: no vigil_gpu_ family at all. */
TEST_TIMEOUT(agent_telemetry_families_labels_and_values_from_the_fixture, 120)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT;
	tel_root(dir);
	tel_agent(dir, "2", NULL, &p);
	const char *want[] = {
		"# TYPE vigil_gpu_info gauge\n",
		"vigil_gpu_info{" G0 ",serial=\"1650000000001\",driver_version=\"580.159.04\"} 1\n",
		"vigil_gpu_temperature_celsius{" G0 "} 41\n",
		"vigil_gpu_temperature_celsius{" G1 "} 33\n",
		"vigil_gpu_memory_temperature_celsius{" G0 "} 47\n",
		"vigil_gpu_power_watts{" G0 "} 312.5\n",
		"vigil_gpu_power_limit_watts{" G1 "} 700\n",
		"vigil_gpu_sm_clock_hertz{" G0 "} 1980000000\n",
		"vigil_gpu_memory_clock_hertz{" G0 "} 3201000000\n",
		"vigil_gpu_utilization_ratio{" G0 "} 0.37\n",
		"vigil_gpu_memory_used_bytes{" G0 "} 81604378624\n",
		"vigil_gpu_throttle_active{" G0 ",reason=\"gpu_idle\"} 0\n",
		"vigil_gpu_throttle_active{" G0 ",reason=\"sw_power_cap\"} 1\n",
		"vigil_gpu_throttle_active{" G0 ",reason=\"hw_thermal\"} 1\n",
		"vigil_gpu_throttle_active{" G1 ",reason=\"gpu_idle\"} 1\n",
		"# TYPE vigil_gpu_ecc_errors_total counter\n",
		"vigil_gpu_ecc_errors_total{" G0 ",type=\"corrected\"} 12\n",
		"vigil_gpu_ecc_errors_total{" G0 ",type=\"uncorrected\"} 0\n",
		"vigil_gpu_remapped_rows_total{" G0 ",type=\"correctable\"} 3\n",
		"vigil_gpu_remapped_rows_total{" G0 ",type=\"uncorrectable\"} 0\n",
		"vigil_gpu_remap_pending{" G0 "} 1\n",
		"vigil_gpu_remap_failed{" G0 "} 0\n",
		"vigil_gpu_nvlink_errors_total{" G0 ",link=\"0\",type=\"crc_flit\"} 2\n",
		"vigil_gpu_nvlink_errors_total{" G0 ",link=\"0\",type=\"crc_data\"} 3\n",
		"vigil_gpu_nvlink_errors_total{" G0 ",link=\"0\",type=\"replay\"} 5\n",
		"vigil_gpu_nvlink_errors_total{" G0 ",link=\"0\",type=\"recovery\"} 1\n",
		"vigil_gpu_nvlink_errors_total{" G0 ",link=\"1\",type=\"replay\"} 0\n",
		"vigil_gpu_pcie_replays_total{" G0 "} 7\n",
		"vigil_gpu_xid_errors_total{" G0 ",xid=\"79\"} 1\n",
		"vigil_gpu_telemetry_field_ok{" G0 ",field=\"memory_temperature\"} 1\n",
		"vigil_gpu_telemetry_field_ok{" G0 ",field=\"nvlink_errors\"} 1\n",
		"vigil_gpu_telemetry_field_ok{" G0 ",field=\"xid_errors\"} 1\n",
		/* what GPU 1 does not give: field_ok 0, and no series */
		"vigil_gpu_telemetry_field_ok{" G1 ",field=\"memory_temperature\"} 0\n",
		"vigil_gpu_telemetry_field_ok{" G1 ",field=\"power\"} 0\n",
		"vigil_gpu_telemetry_field_ok{" G1 ",field=\"nvlink_errors\"} 0\n",
		"vigil_gpu_telemetry_field_ok{" G1 ",field=\"temperature\"} 1\n",
		"vigil_gpu_telemetry_timestamp_seconds{" G0 "} ",
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		CHECK_CONTAINS(p.buf, want[i]);
	CHECK_NOT_CONTAINS(p.buf, "vigil_gpu_memory_temperature_celsius{gpu=\"1\"");
	CHECK_NOT_CONTAINS(p.buf, "vigil_gpu_power_watts{gpu=\"1\"");
	CHECK_NOT_CONTAINS(p.buf, "vigil_gpu_nvlink_errors_total{gpu=\"1\"");
	CHECK_NOT_CONTAINS(p.buf, "vigil_gpu_xid_errors_total{gpu=\"1\"");
	/* the read's time, whole seconds, within the test's run */
	const char *ts = strstr(p.buf, "vigil_gpu_telemetry_timestamp_seconds{" G0 "} ");
	if (ts) {
		double at = strtod(strchr(ts, '}') + 2, NULL);
		CHECK_MSG(at > wall_seconds() - 120 && at <= wall_seconds(), "timestamp %f", at);
	}
	promtool_accepts(&p);
	strbuf_release(&p);
}

/* agent.gpu-telemetry = false: the verdicts as before, no telemetry family. */
TEST_TIMEOUT(agent_telemetry_off_leaves_the_families_out, 120)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT;
	tel_root(dir);
	tel_agent(dir, "1", "agent.gpu-telemetry=false", &p);
	CHECK_CONTAINS(p.buf, "vigil_check_status{check=\"gpu\"");
	CHECK_NOT_CONTAINS(p.buf, "vigil_gpu_");
	strbuf_release(&p);
}

/* The vigil_gpu_ series of a text (names and labels, values left out), sorted, one a line;
 * skip: a substring whose series are left out. */
static void series_of(const char *text, const char *skip, struct strbuf *out)
{
	struct strlist l = STRLIST_INIT;
	for (const char *s = text; *s;) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		if (n > 10 && !strncmp(s, "vigil_gpu_", 10)) {
			char line[1024];
			snprintf(line, sizeof(line), "%.*s", (int)n, s);
			char *sp = strrchr(line, ' ');
			if (sp)
				*sp = '\0';
			if (!strstr(line, skip))
				strlist_add(&l, line);
		}
		s += n + (nl != NULL);
	}
	strlist_sort(&l);
	for (size_t i = 0; i < l.nr; i++)
		strbuf_addf(out, "%s\n", l.items[i]);
	strlist_release(&l);
}

/*
 * The real 1 x H200 VM (tests/data/telemetry/h200-vm: its 'vigil gather' NVML snapshot and the
 * agent's metrics, both taken through the real NVML, bench/agent-gpu-worker.sh): its snapshot
 * replayed through the fake gives the same series the real agent wrote, every family but the
 * NVLink counters (the VM has no NVLink: field_ok 0), and promtool accepts the real text.
 * (Xid events are not in a snapshot: the xid_errors field is compared apart.)
 */
TEST_TIMEOUT(agent_telemetry_replays_the_real_h200_vm, 120)
{
	const char *dir = test_tmpdir();
	struct strbuf src = STRBUF_INIT, snap = STRBUF_INIT, real = STRBUF_INIT, p = STRBUF_INIT,
		      a = STRBUF_INIT, b = STRBUF_INIT;
	test_src_path(&src, "tests/data/telemetry/h200-vm/nvml.snapshot");
	CHECK_INT(read_file_bounded(src.buf, &snap, 1 << 20, NULL), READ_OK);
	strbuf_reset(&src);
	test_src_path(&src, "tests/data/telemetry/h200-vm/metrics.prom");
	CHECK_INT(read_file_bounded(src.buf, &real, 1 << 20, NULL), READ_OK);
	test_write(dir, "root/nvml.snapshot", snap.buf);
	test_write(dir, "root/proc/sys/kernel/random/boot_id", TEL_BOOT "\n");
	test_write(dir, "root/dev/kmsg", "6,0,0,-;Linux version 6.8.0-45-generic\n");
	test_mkdir(dir, "state");
	tel_agent(dir, "1", NULL, &p);
	series_of(p.buf, "field=\"xid_errors\"", &a);
	series_of(real.buf, "field=\"xid_errors\"", &b);
	CHECK_STR(a.buf, b.buf);
	const char *real_has[] = {
		"vigil_gpu_memory_temperature_celsius{gpu=\"0\"",
		"vigil_gpu_memory_clock_hertz{gpu=\"0\"",
		"vigil_gpu_utilization_ratio{gpu=\"0\"",
		"vigil_gpu_memory_used_bytes{gpu=\"0\"",
		"vigil_gpu_pcie_replays_total{gpu=\"0\"",
		"field=\"nvlink_errors\"} 0\n",
		"field=\"xid_errors\"} 1\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(real_has); i++)
		CHECK_CONTAINS(real.buf, real_has[i]);
	CHECK_NOT_CONTAINS(real.buf, "vigil_gpu_nvlink_errors_total");
	promtool_accepts(&real);
	strbuf_release(&src);
	strbuf_release(&snap);
	strbuf_release(&real);
	strbuf_release(&p);
	strbuf_release(&a);
	strbuf_release(&b);
}

/*
 * The writer on hand-built readings (the shim writes control characters of NVML's strings as
 * '?', so a newline cannot come from the fake): a model name with a newline, a quote and a
 * backslash is escaped as the exposition format says; a body of the wrong size or magic is
 * refused and the last readings kept; NVLink counters left unread take the last read values.
 */
TEST(telemetry_writer_escapes_and_take_refuses_bad_bodies)
{
	struct nvml_host h;
	struct gpu_telemetry t;
	struct strbuf body = STRBUF_INIT, out = STRBUF_INIT;
	nvml_host_init(&h);
	telemetry_init(&t);
	struct nvml_gpu *g = nvml_host_add_gpu(&h, 0);
	g->handle_rc = 0;
	g->name.rc = g->uuid.rc = g->pci_bus_id.rc = 0;
	strlcpy_v(g->name.s, "H200\n\"x\\", sizeof(g->name.s));
	strlcpy_v(g->uuid.s, "GPU-1", sizeof(g->uuid.s));
	strlcpy_v(g->pci_bus_id.s, "00000000:18:00.0", sizeof(g->pci_bus_id.s));
	g->temperature.rc = 0;
	g->temperature.v = 50;
	g->nvlink[0].active.rc = 0;
	g->nvlink[0].errors[NVML_NVLINK_ERROR_DL_REPLAY].rc = 0;
	g->nvlink[0].errors[NVML_NVLINK_ERROR_DL_REPLAY].v = 9;
	telemetry_encode(&h, 1796000000.5, &body);
	CHECK_INT(telemetry_take(&t, body.buf, body.len), 0);
	telemetry_prom(&t, &out);
	CHECK_CONTAINS(out.buf, "vigil_gpu_temperature_celsius{gpu=\"0\",uuid=\"GPU-1\","
				"pci_bus_id=\"00000000:18:00.0\",model=\"H200\\n\\\"x\\\\\"} 50\n");
	CHECK_CONTAINS(out.buf, "vigil_gpu_telemetry_timestamp_seconds{gpu=\"0\",uuid=\"GPU-1\","
				"pci_bus_id=\"00000000:18:00.0\",model=\"H200\\n\\\"x\\\\\"} 1796000000\n");
	CHECK_CONTAINS(out.buf, "field=\"power\"} 0\n");
	CHECK_NOT_CONTAINS(out.buf, "vigil_gpu_power_watts");

	/* the next read leaves the NVLink counters unread: the last values stay */
	g->nvlink[0].errors[NVML_NVLINK_ERROR_DL_REPLAY].rc = NVML_NOT_READ;
	g->temperature.v = 51;
	strbuf_reset(&body);
	telemetry_encode(&h, 1796000060, &body);
	CHECK_INT(telemetry_take(&t, body.buf, body.len), 0);
	strbuf_reset(&out);
	telemetry_prom(&t, &out);
	CHECK_CONTAINS(out.buf, "link=\"0\",type=\"replay\"} 9\n");
	CHECK_CONTAINS(out.buf, "} 51\n");

	/* short, long, or not such a body: refused, the last readings kept */
	CHECK_INT(telemetry_take(&t, body.buf, body.len - 1), -1);
	strbuf_addch(&body, 'x');
	CHECK_INT(telemetry_take(&t, body.buf, body.len), -1);
	body.buf[0] ^= 1;
	CHECK_INT(telemetry_take(&t, body.buf, body.len - 1), -1);
	CHECK_INT(telemetry_take(&t, "T", 1), -1);
	CHECK(t.have && t.nr == 1 && t.gpus[0].temperature.v == 51);
	telemetry_release(&t);
	nvml_host_release(&h);
	strbuf_release(&body);
	strbuf_release(&out);
}
