/*
 * test_net_ib.c: 'vigil net ib' and its perftest parsers (src/fabric/perftest.c, ibrun.c).
 * The parsers read the recorded-looking outputs under tests/data/fabric/perftest/; the command
 * runs against fake ib_write_bw / ib_read_lat scripts on PATH that print those outputs (with
 * and without CUDA, slow, failing, hanging, garbage) and a fake host root with HCAs and GPUs;
 * one test runs Debian's real ib_write_bw on this machine.
 */
#include "../harness.h"
#include "../../src/fabric/perftest.h"
#include "../../src/fabric/ibrun.h"
#include "../../src/lib/fileio.h"

#include <unistd.h>

static void fixture(const char *name, struct strbuf *out)
{
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&p, "%s/tests/data/fabric/perftest/%s", test_srcdir(), name);
	strbuf_reset(out);
	CHECK_MSG(read_file_bounded(p.buf, out, 1 << 20, &err) == READ_OK, "%s: %s", p.buf,
		  err.buf);
	strbuf_release(&p);
	strbuf_release(&err);
}

TEST(perftest_parse_json_bw_and_lat)
{
	struct strbuf t = STRBUF_INIT, err = STRBUF_INIT;
	struct pt_result r;
	fixture("bw-cuda.json", &t);
	CHECK_INT(pt_parse_json(t.buf, t.len, PT_BW, &r, &err), 0);
	CHECK(r.have && r.bw_avg == 392.51 && r.bytes == 1048576 && r.iters == 468043);
	CHECK_INT(r.cuda_device, 0);
	CHECK_STR(r.device, "mlx5_0");
	fixture("lat.json", &t);
	CHECK_INT(pt_parse_json(t.buf, t.len, PT_LAT, &r, &err), 0);
	CHECK(r.have_p99 && r.p99 == 3.35 && r.t_avg == 2.98 && r.cuda_device == -1);
	/* a bandwidth file read as latency has no t_avg: refused, not zero */
	fixture("bw-cuda.json", &t);
	CHECK_INT(pt_parse_json(t.buf, t.len, PT_LAT, &r, &err), -1);
	CHECK_CONTAINS(err.buf, "avg_lat");
	strbuf_reset(&err);
	const char *bad[] = { "", "{}", "{\"results\": 3}", "{\"results\": {\"BW_average\": -1}}",
			      "{\"results\": {\"BW_average\": \"392\"}}",
			      "{\"results\": {\"BW_average\": 1e300}}", "{\"results\": {\"x\"" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_MSG(pt_parse_json(bad[i], strlen(bad[i]), PT_BW, &r, &err) == -1, "%s",
			  bad[i]);
		CHECK(!r.have);
	}
	strbuf_release(&t);
	strbuf_release(&err);
}

TEST(perftest_parse_text_tables)
{
	struct strbuf t = STRBUF_INIT, err = STRBUF_INIT;
	struct pt_result r;
	fixture("bw-cuda.txt", &t);
	CHECK_INT(pt_parse_text(t.buf, t.len, PT_BW, &r, &err), 0);
	CHECK(r.bw_avg == 392.51 && r.bw_peak == 0 && r.bytes == 1048576);
	fixture("bw-host.txt", &t);
	CHECK_INT(pt_parse_text(t.buf, t.len, PT_BW, &r, &err), 0);
	CHECK(r.bw_avg == 371.20);
	fixture("lat.txt", &t);
	CHECK_INT(pt_parse_text(t.buf, t.len, PT_LAT, &r, &err), 0);
	CHECK(r.have_p99 && r.p99 == 3.35 && r.p999 == 6.95 && r.t_min == 2.88);
	/* MiB/sec: the unit is not guessed */
	fixture("bw-mib.txt", &t);
	CHECK_INT(pt_parse_text(t.buf, t.len, PT_BW, &r, &err), -1);
	CHECK_CONTAINS(err.buf, "MiB/sec");
	/* a header with the failure under it is no result */
	fixture("error-transport.txt", &t);
	strbuf_reset(&err);
	CHECK_INT(pt_parse_text(t.buf, t.len, PT_BW, &r, &err), -1);
	CHECK_CONTAINS(err.buf, "no 'BW average[Gb/sec]' table");
	/* a truncated row (the run died mid-line) is not a result */
	const char *cut = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
			  "MsgRate[Mpps]\n 1048576    468043           0.00               39";
	CHECK_INT(pt_parse_text(cut, strlen(cut), PT_BW, &r, &err), -1);
	strbuf_release(&t);
	strbuf_release(&err);
}

TEST(perftest_failure_causes)
{
	struct strbuf t = STRBUF_INIT;
	fixture("error-transport.txt", &t);
	CHECK_INT(pt_failure_cause(t.buf, t.len), PT_CAUSE_TRANSPORT);
	fixture("noconnect.txt", &t);
	CHECK_INT(pt_failure_cause(t.buf, t.len), PT_CAUSE_NO_PEER);
	fixture("nodevice.txt", &t);
	CHECK_INT(pt_failure_cause(t.buf, t.len), PT_CAUSE_NO_DEVICE);
	const char *nc = "ib_write_bw: unrecognized option '--use_cuda=0'\n";
	CHECK_INT(pt_failure_cause(nc, strlen(nc)), PT_CAUSE_NO_CUDA);
	CHECK_INT(pt_failure_cause("", 0), PT_CAUSE_OTHER);
	strbuf_release(&t);
}

/* ---- the command against fake perftest programs ---- */

/*
 * Fake ib_write_bw and ib_read_lat: --help prints FAKE_HELP; a run logs its argv to
 * FAKE_DIR/log, copies FAKE_<BW|LAT>_JSON to the --out_json_file it was given, prints
 * FAKE_<BW|LAT>_TXT and exits FAKE_RC (FAKE_HANG: sleeps instead).
 */
static const char fake_body[] =
	"prog=$(basename \"$0\")\n"
	"case $prog in ib_write_bw) J=$FAKE_BW_JSON; T=$FAKE_BW_TXT;; "
	"*) J=$FAKE_LAT_JSON; T=$FAKE_LAT_TXT;; esac\n"
	"for a in \"$@\"; do case \"$a\" in --help) printf '%s\\n' \"$FAKE_HELP\"; exit 0;; "
	"--out_json_file=*) OUT=${a#--out_json_file=};; esac; done\n"
	"echo \"$prog $*\" >> \"$FAKE_DIR/log\"\n"
	"[ -n \"$FAKE_HANG\" ] && exec sleep 60\n"
	"[ -n \"$OUT\" ] && [ -n \"$J\" ] && cp \"$J\" \"$OUT\"\n"
	"[ -n \"$T\" ] && cat \"$T\"\n"
	"exit ${FAKE_RC:-0}\n";

#define HELP_FULL "--use_cuda=<cuda device id> --out_json --out_json_file=<file>"
#define HELP_PLAIN "--out_json --out_json_file=<file>"

struct fake {
	char env[16][4400];
	const char *envp[17];
	size_t n;
	char root[4200];
};

static void fake_env(struct fake *f, const char *fmt, const char *v)
{
	snprintf(f->env[f->n], sizeof(f->env[0]), fmt, v);
	f->envp[f->n] = f->env[f->n];
	f->n++;
	f->envp[f->n] = NULL;
}

static void data_path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/tests/data/fabric/perftest/%s", test_srcdir(), name);
}

/* A host root with HCAs mlx5_0 and mlx5_1, and gpus GPUs. */
static void fake_setup(struct fake *f, int gpus, const char *help)
{
	memset(f, 0, sizeof(*f));
	const char *dir = test_script("ib_write_bw", fake_body);
	test_script("ib_read_lat", fake_body);
	snprintf(f->root, sizeof(f->root), "%s/root", test_tmpdir());
	test_mkdir(f->root, "sys/class/infiniband/mlx5_0/ports/1");
	test_mkdir(f->root, "sys/class/infiniband/mlx5_1/ports/1");
	for (int g = 0; g < gpus; g++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/0000:%02x:00.0", 0x18 + g);
		test_mkdir(f->root, rel);
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s:/usr/bin:/bin", dir);
	fake_env(f, "PATH=%s", path);
	fake_env(f, "FAKE_DIR=%s", test_tmpdir());
	fake_env(f, "FAKE_HELP=%s", help);
	fake_env(f, "TMPDIR=%s", test_tmpdir());
}

static void fake_out(struct fake *f, const char *var, const char *fixture_name)
{
	char p[4200], fmt[64];
	data_path(p, sizeof(p), fixture_name);
	snprintf(fmt, sizeof(fmt), "%s=%%s", var);
	fake_env(f, fmt, p);
}

static void fake_log(struct strbuf *out)
{
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&p, "%s/log", test_tmpdir());
	strbuf_reset(out);
	read_file_bounded(p.buf, out, 1 << 20, &err);
	strbuf_release(&p);
	strbuf_release(&err);
}

/* vigil net ib ARGS... --root ROOT --json; the parsed report (free with json_free). */
static struct json_value *run_ib(struct fake *f, struct child *c, const char *const *extra)
{
	const char *args[32] = { "net", "ib" };
	size_t n = 2;
	for (size_t i = 0; extra[i] && n < 26; i++)
		args[n++] = extra[i];
	args[n++] = "--root";
	args[n++] = f->root;
	args[n++] = "--json";
	args[n] = NULL;
	test_run_vigil(c, args, f->envp);
	return test_parse_json(c);
}

/* The finding of code for device, or NULL. */
static const struct json_value *finding(const struct json_value *v, const char *code,
					const char *device)
{
	const struct json_value *fs = json_path(v, "checks.0.findings");
	for (size_t i = 0; fs && i < fs->nr; i++) {
		const char *c = json_get_string(fs->items[i], "code");
		const char *d = json_get_string(fs->items[i], "device");
		if (c && !strcmp(c, code) && (!device || (d && !strcmp(d, device))))
			return fs->items[i];
	}
	return NULL;
}

static double detail_num(const struct json_value *f, const char *key)
{
	const struct json_value *d = f ? json_get(f, "details") : NULL;
	double v = -1;
	if (!d || !json_get_number(d, key, &v))
		return -1;
	return v;
}

TEST(net_ib_gpudirect_json_ok)
{
	struct fake f;
	struct child c;
	struct strbuf log = STRBUF_INIT;
	fake_setup(&f, 2, HELP_FULL);
	fake_out(&f, "FAKE_BW_JSON", "bw-cuda.json");
	fake_out(&f, "FAKE_BW_TXT", "bw-cuda.txt");
	fake_out(&f, "FAKE_LAT_JSON", "lat.json");
	fake_out(&f, "FAKE_LAT_TXT", "lat.txt");
	const char *a[] = { "--peer", "node-b17", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 0);
	CHECK_STR(json_get_string(v, "verdict"), "healthy");
	const struct json_value *b0 = finding(v, "ib_bw", "mlx5_0");
	const struct json_value *b1 = finding(v, "ib_bw", "mlx5_1");
	CHECK(b0 && b1);
	CHECK(detail_num(b0, "bw_gbps") == 392.51);
	CHECK(detail_num(b0, "cuda_gpu") == 0 && detail_num(b1, "cuda_gpu") == 1);
	CHECK_CONTAINS(json_get_string(b0, "message"), "with GPUDirect (GPU 0)");
	CHECK(detail_num(finding(v, "ib_lat", "mlx5_0"), "lat_us") == 3.35);
	fake_log(&log);
	CHECK_CONTAINS(log.buf, "ib_write_bw -d mlx5_0 -p 18515 -F --report_gbits -D 10 -s 1048576 "
				"--use_cuda=0 --out_json --out_json_file=");
	CHECK_CONTAINS(log.buf, "ib_write_bw -d mlx5_1 -p 18517 -F --report_gbits -D 10 -s 1048576 "
				"--use_cuda=1 --out_json");
	CHECK_CONTAINS(log.buf, "ib_read_lat -d mlx5_1 -p 18518 -F --out_json");
	CHECK_CONTAINS(log.buf, " node-b17\n");
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
}

TEST(net_ib_text_table_when_no_out_json)
{
	struct fake f;
	struct child c;
	struct strbuf log = STRBUF_INIT;
	fake_setup(&f, 0, "--use_cuda=<cuda device id>");
	fake_out(&f, "FAKE_BW_TXT", "bw-host.txt");
	fake_out(&f, "FAKE_LAT_TXT", "lat.txt");
	const char *a[] = { "--peer", "node-b17", "--hca", "mlx5_1", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 0);
	const struct json_value *b = finding(v, "ib_bw", "mlx5_1");
	CHECK(detail_num(b, "bw_gbps") == 371.2);
	CHECK_CONTAINS(json_get_string(b, "message"), "from host memory");
	CHECK(!finding(v, "ib_bw", "mlx5_0")); /* --hca: only that one */
	fake_log(&log);
	CHECK_NOT_CONTAINS(log.buf, "--out_json");
	CHECK_NOT_CONTAINS(log.buf, "--use_cuda"); /* no GPU on this host */
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
}

TEST(net_ib_gpu_but_perftest_without_cuda_warns)
{
	struct fake f;
	struct child c;
	struct strbuf log = STRBUF_INIT;
	fake_setup(&f, 1, HELP_PLAIN);
	fake_out(&f, "FAKE_BW_JSON", "bw-cuda.json");
	const char *a[] = { "--peer", "node-b17", "--no-latency", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 0);
	const struct json_value *w = finding(v, "no_gpudirect", "mlx5_0");
	CHECK(w);
	CHECK_STR(json_get_string(w, "status"), "warn");
	CHECK_CONTAINS(json_get_string(w, "message"), "not GPUDirect");
	CHECK(!finding(v, "ib_lat", NULL));
	fake_log(&log);
	CHECK_NOT_CONTAINS(log.buf, "--use_cuda");
	CHECK_NOT_CONTAINS(log.buf, "ib_read_lat");
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
}

TEST(net_ib_no_cuda_option)
{
	struct fake f;
	struct child c;
	struct strbuf log = STRBUF_INIT;
	fake_setup(&f, 2, HELP_FULL);
	fake_out(&f, "FAKE_BW_JSON", "bw-cuda.json");
	fake_out(&f, "FAKE_LAT_JSON", "lat.json");
	const char *a[] = { "--peer", "node-b17", "--no-cuda", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 0);
	CHECK(!finding(v, "no_gpudirect", NULL));
	fake_log(&log);
	CHECK_NOT_CONTAINS(log.buf, "--use_cuda");
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
}

TEST(net_ib_slow_fails_and_floor_is_configurable)
{
	struct fake f;
	struct child c;
	fake_setup(&f, 1, HELP_FULL);
	fake_out(&f, "FAKE_BW_JSON", "bw-slow.json");
	fake_out(&f, "FAKE_LAT_JSON", "lat.json");
	const char *a[] = { "--peer", "node-b17", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 1);
	const struct json_value *b = finding(v, "ib_bw", "mlx5_0");
	CHECK_STR(json_get_string(b, "status"), "fail");
	CHECK_CONTAINS(json_get_string(b, "message"), "281.1 Gb/s with GPUDirect (GPU 0), below "
						      "the floor of 360 Gb/s");
	json_free(v);
	child_release(&c);
	const char *a2[] = { "--peer", "node-b17", "-c", "net.ib-floor-gbps=250", NULL };
	v = run_ib(&f, &c, a2);
	CHECK_INT(c.exit_code, 0);
	json_free(v);
	child_release(&c);
}

TEST(net_ib_latency_over_ceiling_fails)
{
	struct fake f;
	struct child c;
	fake_setup(&f, 0, "");
	fake_out(&f, "FAKE_BW_TXT", "bw-host.txt");
	fake_out(&f, "FAKE_LAT_TXT", "lat-slow.txt");
	const char *a[] = { "--peer", "node-b17", "--hca", "mlx5_0", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 1);
	const struct json_value *l = finding(v, "ib_lat", "mlx5_0");
	CHECK_STR(json_get_string(l, "status"), "fail");
	CHECK_CONTAINS(json_get_string(l, "message"), "p99 5.91 us, over the ceiling of 4.20 us");
	json_free(v);
	child_release(&c);
	const char *a2[] = { "--peer", "node-b17", "--hca", "mlx5_0", "-c", "net.ib-lat-p99-us=0",
			     NULL };
	v = run_ib(&f, &c, a2);
	CHECK_INT(c.exit_code, 0);
	json_free(v);
	child_release(&c);
}

TEST(net_ib_transport_error_fails)
{
	struct fake f;
	struct child c;
	fake_setup(&f, 0, "");
	fake_out(&f, "FAKE_BW_TXT", "error-transport.txt");
	fake_env(&f, "FAKE_RC=%s", "1");
	const char *a[] = { "--peer", "node-b17", "--hca", "mlx5_0", "--no-latency", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 1);
	const struct json_value *e = finding(v, "ib_error", "mlx5_0");
	CHECK_STR(json_get_string(e, "status"), "fail");
	CHECK_CONTAINS(json_get_string(e, "message"), "transport retry counter exceeded");
	json_free(v);
	child_release(&c);
}

TEST(net_ib_hang_is_killed_at_the_deadline)
{
	struct fake f;
	struct child c;
	fake_setup(&f, 0, "");
	fake_env(&f, "FAKE_HANG=%s", "1");
	const char *a[] = { "--peer", "node-b17", "--hca", "mlx5_0", "--no-latency",
			    "--timeout", "1", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 3);
	const struct json_value *t = finding(v, "timed_out", "mlx5_0");
	CHECK_STR(json_get_string(t, "status"), "unknown");
	CHECK_CONTAINS(json_get_string(t, "message"), "ib_write_bw on mlx5_0 timed out");
	CHECK_CONTAINS(json_get_string(t, "message"), "--timeout");
	CHECK_CONTAINS(json_get_string(t, "message"), "the peer never answered");
	CHECK(!finding(v, "ib_bw", NULL));
	json_free(v);
	child_release(&c);
}

TEST(net_ib_garbage_and_mib_are_not_understood)
{
	struct fake f;
	struct child c;
	fake_setup(&f, 0, HELP_PLAIN);
	test_write_bytes(test_tmpdir(), "garbage.txt", "\x01\xff #bytes BW\x00\x1b[31m 1 2\n", 24);
	char g[4200];
	snprintf(g, sizeof(g), "%s/garbage.txt", test_tmpdir());
	fake_env(&f, "FAKE_BW_TXT=%s", g);
	test_write(test_tmpdir(), "bad.json", "{\"results\": {\"BW_average\": \"fast\"}}");
	snprintf(g, sizeof(g), "%s/bad.json", test_tmpdir());
	fake_env(&f, "FAKE_BW_JSON=%s", g);
	const char *a[] = { "--peer", "node-b17", "--hca", "mlx5_0", "--no-latency", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 3);
	const struct json_value *n = finding(v, "not_understood", "mlx5_0");
	CHECK_STR(json_get_string(n, "status"), "unknown");
	const char *m = json_get_string(n, "message");
	CHECK_CONTAINS(m, "'BW_average' is not a number");
	CHECK_NOT_CONTAINS(m, "\x1b");
	json_free(v);
	child_release(&c);

	fake_setup(&f, 0, "");
	fake_out(&f, "FAKE_BW_TXT", "bw-mib.txt");
	v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(json_get_string(finding(v, "not_understood", "mlx5_0"), "message"),
		       "MiB/sec");
	json_free(v);
	child_release(&c);
}

TEST(net_ib_peer_never_answers)
{
	struct fake f;
	struct child c;
	fake_setup(&f, 0, "");
	fake_out(&f, "FAKE_BW_TXT", "noconnect.txt");
	fake_env(&f, "FAKE_RC=%s", "1");
	const char *a[] = { "--peer", "node-b17", "--hca", "mlx5_0", "--no-latency",
			    "--connect-wait", "0", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 3);
	const struct json_value *n = finding(v, "no_peer", "mlx5_0");
	CHECK_CONTAINS(json_get_string(n, "message"), "the peer never answered");
	CHECK_CONTAINS(json_get_string(n, "message"), "Couldn't connect to node-b17:18515");
	json_free(v);
	child_release(&c);
}

TEST(net_ib_perftest_missing_or_no_hca_is_unknown)
{
	struct fake f;
	struct child c;
	fake_setup(&f, 0, "");
	snprintf(f.env[0], sizeof(f.env[0]), "PATH=/nonexistent");
	const char *a[] = { "--peer", "node-b17", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 3);
	const struct json_value *m = finding(v, "perftest_missing", NULL);
	CHECK_CONTAINS(json_get_string(m, "message"), "ib_write_bw cannot be run (Debian package "
						      "perftest)");
	json_free(v);
	child_release(&c);

	fake_setup(&f, 0, "");
	snprintf(f.root, sizeof(f.root), "%s/empty", test_tmpdir());
	test_mkdir(f.root, "sys/class");
	v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 3);
	m = finding(v, "no_hca", NULL);
	CHECK_CONTAINS(json_get_string(m, "message"), "no RDMA device");
	CHECK_CONTAINS(json_get_string(m, "message"), "/sys/class/infiniband' is missing");
	json_free(v);
	child_release(&c);
}

/* Debian's own ib_write_bw on this machine: without an RDMA device it must say so by name. */
TEST(net_ib_real_perftest_without_rdma_device)
{
	if (access("/usr/bin/ib_write_bw", X_OK) != 0)
		SKIP("Debian's perftest is not installed (tests/setup-deps installs it)");
	if (access("/sys/class/infiniband", F_OK) == 0)
		SKIP("this machine has an RDMA device: a real pair test needs a second host");
	struct child c;
	const char *args[] = { "net", "ib", "--peer", "localhost", "--hca", "mlx5_0",
			       "--no-latency", "--connect-wait", "0", "--json", NULL };
	const char *env[] = { "PATH=/usr/bin:/bin", NULL };
	test_run_vigil(&c, args, env);
	CHECK_INT(c.exit_code, 3);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *n = finding(v, "no_device", "mlx5_0");
	CHECK(n);
	CHECK_STR(json_get_string(n, "status"), "unknown");
	CHECK_CONTAINS(json_get_string(n, "message"), "does not see the RDMA device mlx5_0");
	json_free(v);
	child_release(&c);
}

TEST(net_ib_server_serves_every_hca)
{
	struct fake f;
	struct child c;
	struct strbuf log = STRBUF_INIT;
	fake_setup(&f, 1, HELP_FULL);
	const char *a[] = { "--server", "--port", "20000", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 0);
	CHECK(finding(v, "ib_served", "mlx5_0") && finding(v, "ib_served", "mlx5_1"));
	fake_log(&log);
	CHECK_CONTAINS(log.buf, "ib_write_bw -d mlx5_0 -p 20000 -F --report_gbits -D 10 -s 1048576 "
				"--use_cuda=0\n");
	CHECK_CONTAINS(log.buf, "ib_read_lat -d mlx5_1 -p 20003 -F\n");
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
}

TEST(net_ib_usage_errors)
{
	struct child c;
	const char *const bad[][6] = {
		{ "net", "ib", NULL },
		{ "net", "ib", "--server", "--peer", "x", NULL },
		{ "net", "ib", "--peer", "-rf", NULL },
		{ "net", "ib", "--server", "--hca", "mlx5_0;reboot", NULL },
		{ "net", "ib", "--nodes", "a", NULL },
		{ "net", "ib", "--server", "--port", "80", NULL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		test_run_vigil(&c, bad[i], NULL);
		CHECK_MSG(c.exit_code == 2, "case %zu: exit %d", i, c.exit_code);
		child_release(&c);
	}
	const char *h[] = { "net", "ib", "--help", NULL };
	test_run_vigil(&c, h, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "vigil net ib");
	CHECK_CONTAINS(c.out.buf, "net.ib-floor-gbps");
	child_release(&c);
}

TEST(net_ib_counters_json)
{
	struct fake f;
	struct child c;
	fake_setup(&f, 0, "");
	test_write(f.root, "sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	test_write(f.root, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "3\n");
	test_write(f.root, "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error", "17\n");
	const char *a[] = { "--counters", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 0);
	const struct json_value *p = json_path(v, "ports.0");
	CHECK_STR(json_get_string(p, "hca"), "mlx5_0");
	double d = -1;
	CHECK(json_get_number(json_get(p, "counters"), "link_downed", &d) && d == 3);
	CHECK(json_get_number(json_get(p, "counters"), "symbol_error", &d) && d == 17);
	json_free(v);
	child_release(&c);
}

/* In a 2-task srun step, task 1 connects to the step's first host (scontrol expands it). */
TEST(net_ib_srun_task_one_connects_to_task_zero)
{
	struct fake f;
	struct child c;
	struct strbuf log = STRBUF_INIT;
	fake_setup(&f, 0, "");
	test_script("scontrol", "[ \"$1 $2 $3\" = 'show hostnames gpu[07-08]' ] || exit 9\n"
				"printf 'gpu07\\ngpu08\\n'\n");
	fake_out(&f, "FAKE_BW_TXT", "bw-host.txt");
	fake_env(&f, "SLURM_PROCID=%s", "1");
	fake_env(&f, "SLURM_STEP_NODELIST=%s", "gpu[07-08]");
	const char *a[] = { "--srun", "--hca", "mlx5_0", "--no-latency", NULL };
	struct json_value *v = run_ib(&f, &c, a);
	CHECK_INT(c.exit_code, 0);
	fake_log(&log);
	CHECK_CONTAINS(log.buf, " gpu07\n");
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
}
