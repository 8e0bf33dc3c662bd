/*
 * test_stress.c: 'vigil stress gpu' without a GPU: the verdict logic on recorded helper output
 * (tests/data/stress/), the limits and the outlier median, and the command against fake helpers
 * (VIGIL_CUDA_HELPER_DIR) that print, hang, crash or babble.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/stress/gpu_stress.h"
#include "../../src/stress/helper.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read a recorded output into out (a helper_out, as the command gets it). */
static void load(const char *name, struct helper_out *out)
{
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&p, "%s/tests/data/stress/%s", test_srcdir(), name);
	helper_out_init(out);
	CHECK_MSG(read_file_bounded(p.buf, &text, 1u << 24, &err) == 0, "%s", err.buf);
	helper_parse_lines(out, text.buf, text.len);
	CHECK_MSG(out->bad_lines == 0, "%s: bad line %s", name, out->first_bad);
	strbuf_release(&p);
	strbuf_release(&text);
	strbuf_release(&err);
}

/* Evaluate a recorded stress run as the command would, with the H200 table's limits. */
static void judge(const char *name, bool timed_out, struct report *rep)
{
	struct helper_out ho;
	struct gs_run run;
	struct gs_end end;
	struct stress_limits lim;
	struct strbuf err = STRBUF_INIT;
	load(name, &ho);
	gs_run_init(&run);
	CHECK_MSG(gs_run_parse(&run, (const struct json_value *const *)ho.lines, ho.nr, &err) == 0,
		  "%s", err.buf);
	memset(&end, 0, sizeof(end));
	end.ran = true;
	end.timed_out = timed_out;
	end.exit_code = timed_out ? 0 : 0;
	end.describe = timed_out ? "did not finish within its deadline (195 s)" : "exited with 0";
	end.duration_ms = 62000;
	CHECK(stress_limits_get(&lim, run.nr ? run.gpus[0].name : NULL, NULL, &err) == 0);
	report_init(rep, "node-7", 1796040000);
	gpu_stress_evaluate(&run, &end, &lim, rep);
	report_finish(rep);
	gs_run_release(&run);
	helper_out_release(&ho);
	strbuf_release(&err);
}

static const struct check_result *get(const struct report *rep, const char *check)
{
	for (size_t i = 0; i < rep->nr; i++)
		if (!strcmp(rep->results[i].name, check))
			return &rep->results[i];
	test_fail_(__FILE__, __LINE__, "no check '%s' in the report", check);
}

static const char *detail(const struct finding *f, const char *key)
{
	for (size_t i = 0; i < f->nr_details; i++)
		if (!strcmp(f->details[i].key, key))
			return f->details[i].value;
	return "";
}

static size_t count(const struct check_result *r, enum status st)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nr; i++)
		n += r->findings[i].status == st;
	return n;
}

TEST(stress_healthy_two_gpus)
{
	struct report rep;
	judge("stress-healthy-2gpu.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	CHECK_INT(verdict_exit_code(rep.verdict), 0);
	const struct check_result *g = get(&rep, "gemm");
	CHECK_INT(g->nr, 8); /* 2 GPUs x 4 dtypes */
	CHECK_INT(count(g, STATUS_OK), 8);
	const struct finding *f = result_find(g, "gemm_bf16", "GPU 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "bf16 647 TFLOP/s delivered (690 per product)");
	CHECK_CONTAINS(f->message, "verified");
	CHECK_INT(get(&rep, "hbm")->status, STATUS_OK);
	CHECK_INT(get(&rep, "memtest")->status, STATUS_OK);
	CHECK_INT(get(&rep, "stress-health")->status, STATUS_OK);
	CHECK_INT(get(&rep, "stress")->status, STATUS_OK);
	CHECK_CONTAINS(get(&rep, "stress-health")->findings[0].message, "57 C");
	report_release(&rep);
}

TEST(stress_miscompare_fails_the_gpu)
{
	struct report rep;
	judge("stress-miscompare.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct check_result *g = get(&rep, "gemm");
	const struct finding *f = result_find(g, "gemm_miscompare", NULL);
	CHECK(f);
	CHECK_CONTAINS(f->device, "GPU 1");
	CHECK_CONTAINS(f->message, "3 checksum and 1 known-answer miscompares");
	CHECK_CONTAINS(f->message, "column 4127");
	CHECK_INT(f->severity, SEV_CRITICAL);
	CHECK_INT(f->action, ACTION_INSPECT_HARDWARE);
	CHECK(!result_find(g, "gemm_miscompare", "GPU 0"));
	CHECK_CONTAINS(rep.reason, "gemm: GPU 1");
	report_release(&rep);
}

TEST(stress_slow_gpu_is_an_outlier)
{
	struct report rep;
	judge("stress-slow-gpu.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct check_result *g = get(&rep, "gemm");
	/* every dtype of GPU 1, none of GPU 0 (its sibling is slow, not it) */
	size_t n = 0;
	for (size_t i = 0; i < g->nr; i++)
		if (!strcmp(g->findings[i].code, "gemm_outlier")) {
			CHECK_CONTAINS(g->findings[i].device, "GPU 1");
			n++;
		}
	CHECK_INT(n, 4);
	const struct finding *f = result_find(g, "gemm_outlier", NULL);
	CHECK_CONTAINS(f->message, "bf16 delivered 322 TFLOP/s over 4.0 s, 0.50x its siblings' 647");
	/* the products themselves were slow: not time lost between them */
	CHECK_CONTAINS(f->message, "its products ran slower (344 TFLOP/s each, 0.50x)");
	const struct finding *h = result_find(get(&rep, "hbm"), "hbm_outlier", "GPU 1");
	CHECK(h);
	/* both causes, copy and read */
	CHECK_CONTAINS(h->message, "copy 2600 GB/s, 0.61x its siblings' 4270");
	CHECK_CONTAINS(h->message, "read 2900 GB/s, 0.63x its siblings' 4629");
	CHECK_INT(get(&rep, "hbm")->findings[0].status, STATUS_OK);
	report_release(&rep);
}

/* The case without a visible process: each product at full speed, 10 % fewer done. */
TEST(stress_ten_percent_less_work_is_flagged)
{
	struct report rep;
	judge("stress-throughput-10pct.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	CHECK_INT(verdict_exit_code(rep.verdict), 1);
	const struct check_result *g = get(&rep, "gemm");
	const struct finding *f = result_find(g, "gemm_outlier", "GPU 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "bf16 delivered 582 TFLOP/s");
	CHECK_CONTAINS(f->message, "0.90x its siblings' 647 (outlier beyond 5%)");
	CHECK_CONTAINS(f->message, "each product ran at full speed (690 TFLOP/s, 1.00x)");
	CHECK_CONTAINS(f->message, "between products");
	CHECK(!result_find(g, "gemm_outlier", "GPU 0"));
	CHECK_STR(detail(f, "tflops_wall"), "582.2");
	report_release(&rep);
}

/* Two healthy H200s differed by up to 2 %: no false alarm. */
TEST(stress_two_percent_apart_is_healthy)
{
	struct report rep;
	judge("stress-throughput-2pct.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	CHECK(!result_find(get(&rep, "gemm"), "gemm_outlier", NULL));
	CHECK_CONTAINS(result_find(get(&rep, "stress"), "run", NULL)->message,
		       "no other process on them");
	report_release(&rep);
}

/* A foreign process on GPU 1: named with pid and name; its figures not judged; never healthy. */
TEST(stress_foreign_process_is_named_and_not_judged)
{
	struct report rep;
	judge("stress-foreign-process.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unknown");
	CHECK_INT(verdict_exit_code(rep.verdict), 3);
	const struct finding *f = result_find(get(&rep, "stress"), "foreign_process", "GPU 1");
	CHECK(f);
	CHECK_INT(f->status, STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "pid 4242 (python3) at the start, during and at the end");
	CHECK_CONTAINS(f->message, "not judged");
	CHECK(!result_find(get(&rep, "stress"), "foreign_process", "GPU 0"));
	CHECK_CONTAINS(rep.reason, "4242");
	/* GPU 1's slow throughput is not blamed on it; GPU 0 is not measured against it */
	const struct check_result *g = get(&rep, "gemm");
	CHECK(!result_find(g, "gemm_outlier", NULL));
	const struct finding *b = result_find(g, "gemm_bf16", "GPU 1");
	CHECK_INT(b->status, STATUS_UNKNOWN);
	CHECK_CONTAINS(b->message, "shared with pid 4242 (python3)");
	CHECK_INT(result_find(g, "gemm_bf16", "GPU 0")->status, STATUS_OK);
	CHECK_INT(result_find(get(&rep, "hbm"), "hbm", "GPU 1")->status, STATUS_UNKNOWN);
	report_release(&rep);
}

/* Older helpers named the pids in the telemetry only: still a finding. */
TEST(stress_foreign_pid_from_old_telemetry)
{
	struct helper_out ho;
	struct gs_run run;
	struct strbuf err = STRBUF_INIT;
	const char *text =
		"{\"type\":\"start\",\"gpus\":[0]}\n"
		"{\"type\":\"gpu\",\"index\":0,\"telemetry\":{\"other_pids\":[77,\"x\",-1]}}\n"
		"{\"type\":\"end\"}\n";
	helper_out_init(&ho);
	helper_parse_lines(&ho, text, strlen(text));
	gs_run_init(&run);
	CHECK(gs_run_parse(&run, (const struct json_value *const *)ho.lines, ho.nr, &err) == 0);
	CHECK_INT(run.procs.nr, 1);
	CHECK_INT(run.procs.v[0].pid, 77);
	CHECK(run.procs.v[0].during && !run.procs.v[0].at_start);
	struct check_result res;
	check_result_init(&res, "stress");
	gs_procs_evaluate(&run.procs, "stress test", &res);
	CHECK_INT(res.nr, 1);
	CHECK_CONTAINS(res.findings[0].message, "GPU 0 was shared during the stress test: pid 77 during");
	check_result_release(&res);
	gs_run_release(&run);
	helper_out_release(&ho);
	strbuf_release(&err);
}

/* HBM write at 0.29x and copy low: both causes in the one finding, not the first alone. */
TEST(stress_hbm_names_every_cause)
{
	struct report rep;
	judge("stress-hbm-write-and-copy.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct finding *f = result_find(get(&rep, "hbm"), "hbm_outlier", "GPU 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "copy 2900 GB/s, 0.68x its siblings' 4270, below the floor 3630");
	CHECK_CONTAINS(f->message, "write 1250 GB/s, 0.29x its siblings' 4303, below the floor 3655");
	CHECK(!strstr(f->message, "read"));
	report_release(&rep);
}

TEST(stress_floor_catches_all_gpus_slow_alike)
{
	struct report rep;
	judge("stress-below-floor.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct check_result *g = get(&rep, "gemm");
	const struct finding *f = result_find(g, "gemm_bf16", "GPU 0");
	CHECK(f);
	CHECK_INT(f->status, STATUS_FAIL);
	CHECK_CONTAINS(f->message, "bf16 delivered 482 TFLOP/s over 4.0 s, below the floor 552 for "
				   "NVIDIA H200");
	CHECK(!result_find(g, "gemm_outlier", NULL));
	/* the slowdown reason is reported beside it */
	const struct finding *t = result_find(get(&rep, "stress-health"), "thermal", "GPU 1");
	CHECK(t);
	CHECK_INT(t->status, STATUS_WARN);
	CHECK_CONTAINS(t->message, "120 of 300 samples (up to 88 C)");
	report_release(&rep);
}

TEST(stress_new_ecc_remap_and_xid_fail)
{
	struct report rep;
	judge("stress-new-ecc.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct check_result *h = get(&rep, "stress-health");
	const struct finding *f = result_find(h, "ecc_uncorrected", "GPU 0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "2 new uncorrectable ECC errors");
	CHECK_INT(f->action, ACTION_RESET_GPU);
	CHECK(result_find(h, "ecc_corrected", "GPU 0"));
	CHECK_INT(result_find(h, "ecc_corrected", "GPU 0")->status, STATUS_WARN);
	CHECK(result_find(h, "remap_pending", "GPU 0"));
	CHECK(result_find(h, "remap_new", "GPU 0"));
	f = result_find(h, "xid", "GPU 0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "Xid 48 during the test");
	CHECK_INT(result_find(h, "health", "GPU 1")->status, STATUS_OK);
	report_release(&rep);
}

TEST(stress_hung_gpu_is_named)
{
	struct report rep;
	judge("stress-hung-gpu.jsonl", true, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct finding *f = result_find(get(&rep, "stress"), "gpu_hung", "GPU 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "GPU 1 did not finish its tests within the deadline");
	/* GPU 0's results still count */
	CHECK_INT(get(&rep, "gemm")->nr, 4);
	report_release(&rep);
	/* the same output from a helper that crashed rather than hung: cannot tell */
	judge("stress-hung-gpu.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unknown");
	CHECK(result_find(get(&rep, "stress"), "gpu_no_result", "GPU 1"));
	report_release(&rep);
}

TEST(stress_memtest_errors_fail)
{
	struct report rep;
	judge("stress-memtest-errors.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct finding *f = result_find(get(&rep, "memtest"), "memtest_miscompare", "GPU 0");
	CHECK(f);
	CHECK_CONTAINS(f->message, "5 words read back wrong (bits 0x0000000000000008");
	CHECK_CONTAINS(f->message, "offset 0x1f3a40008");
	report_release(&rep);
}

TEST(stress_without_nvml_cannot_tell_health)
{
	struct report rep;
	judge("stress-no-nvml.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unknown");
	const struct check_result *h = get(&rep, "stress-health");
	CHECK_INT(h->status, STATUS_UNKNOWN);
	CHECK_CONTAINS(h->findings[0].message, "cannot load NVML");
	CHECK_INT(get(&rep, "gemm")->status, STATUS_OK);
	report_release(&rep);
}

TEST(stress_no_gpu_and_no_cuda_are_unknown)
{
	struct report rep;
	judge("stress-no-gpu.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unknown");
	CHECK_INT(verdict_exit_code(rep.verdict), 3);
	CHECK_CONTAINS(rep.reason, "no GPU to test");
	report_release(&rep);

	struct gs_run run;
	struct gs_end end;
	struct stress_limits lim;
	gs_run_init(&run);
	memset(&end, 0, sizeof(end));
	end.why_not = "vigil's CUDA helper is not installed";
	stress_limits_get(&lim, NULL, NULL, NULL);
	report_init(&rep, "h", 0);
	gpu_stress_evaluate(&run, &end, &lim, &rep);
	report_finish(&rep);
	CHECK_STR(verdict_name(rep.verdict), "unknown");
	CHECK_INT(rep.nr, 1);
	CHECK_CONTAINS(rep.results[0].findings[0].message, "need CUDA");
	report_release(&rep);
}

TEST(stress_unsupported_dtype_skipped_and_cuda_error_fails)
{
	struct report rep;
	judge("stress-a100-error.jsonl", false, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct check_result *g = get(&rep, "gemm");
	const struct finding *f = result_find(g, "gemm_fp8", NULL);
	CHECK(f);
	CHECK_INT(f->status, STATUS_SKIPPED);
	CHECK_CONTAINS(f->message, "no fp8");
	f = result_find(g, "gemm_bf16", NULL);
	CHECK_INT(f->status, STATUS_FAIL);
	CHECK_CONTAINS(f->message, "uncorrectable ECC error");
	/* an A100 has no row in the table: no floors, and one GPU has no siblings */
	CHECK_INT(result_find(g, "gemm_fp16", NULL)->status, STATUS_OK);
	report_release(&rep);
}

TEST(stress_limits_table_config_and_median)
{
	struct stress_limits l;
	struct strbuf err = STRBUF_INIT;
	struct config cfg;
	CHECK(stress_limits_get(&l, "NVIDIA H200", NULL, &err) == 0);
	CHECK(fabs(l.gemm_floor[STRESS_BF16] - 0.85 * 650) < 1e-9);
	CHECK(l.hbm_copy_floor > 3600 && l.hbm_copy_floor < 3700);
	CHECK(fabs(l.outlier_margin - 0.05) < 1e-12);
	CHECK(stress_limits_get(&l, "NVIDIA H200 NVL", NULL, &err) == 0);
	CHECK(l.gemm_floor[STRESS_BF16] == 0 && !l.model[0]);

	config_init(&cfg, "node-7");
	CHECK(config_set(&cfg, "stress.floor-fraction=0.5", &err) == 0);
	CHECK(config_set(&cfg, "stress.floor-fp8=0", &err) == 0);
	CHECK(config_set(&cfg, "stress.outlier-margin=0.2", &err) == 0);
	CHECK(config_set(&cfg, "net.floor-busbw=300", &err) == 0);
	CHECK(stress_limits_get(&l, "NVIDIA H200", &cfg, &err) == 0);
	CHECK(fabs(l.gemm_floor[STRESS_BF16] - 325) < 1e-9);
	CHECK(l.gemm_floor[STRESS_FP8] == 0);
	CHECK(fabs(l.outlier_margin - 0.2) < 1e-12);
	CHECK(l.busbw_floor == 300);
	CHECK(config_set(&cfg, "stress.outlier-margin=1.5", &err) == 0);
	CHECK(stress_limits_get(&l, "NVIDIA H200", &cfg, &err) < 0);
	CHECK_CONTAINS(err.buf, "margin");
	config_release(&cfg);

	double v[] = { 690, 688, 344, 691 }, m[4];
	stress_median_of_others(v, 4, m);
	CHECK(m[2] == 690);
	CHECK(m[0] == 688);
	double two[] = { 690, 344 }, m2[2];
	stress_median_of_others(two, 2, m2);
	CHECK(m2[1] == 690 && m2[0] == 344);
	double one[] = { 500 }, m1[1];
	stress_median_of_others(one, 1, m1);
	CHECK(m1[0] == 500);
	double zeros[] = { 0, 700, 710 }, mz[3];
	stress_median_of_others(zeros, 3, mz);
	CHECK(mz[1] == 710 && mz[0] == 705);
	strbuf_release(&err);
}

/* ---- the command against fake helpers ---- */

/* A fake vigil-gpu in a fresh directory: a shell script with body. Returns the directory. */
static const char *fake_helper(const char *name, const char *body)
{
	return test_script(name, body);
}

static void run_with_helpers(struct child *c, const char *dir, const char *const *args)
{
	static char env[1024], conf[1024];
	/* an empty configuration (a regular file: vigil refuses /dev/null): the built-in limits */
	const char *cdir = test_tmpdir();
	test_write(cdir, "vigil.conf", "");
	snprintf(env, sizeof(env), "VIGIL_CUDA_HELPER_DIR=%s", dir);
	snprintf(conf, sizeof(conf), "VIGIL_CONFIG=%s/vigil.conf", cdir);
	const char *e[] = { env, conf, NULL };
	test_run_vigil(c, args, e);
}

static void cat_body(struct strbuf *b, const char *data)
{
	strbuf_addf(b, "cat '%s/tests/data/stress/%s'", test_srcdir(), data);
}

TEST(stress_cli_healthy_and_json)
{
	struct strbuf b = STRBUF_INIT;
	cat_body(&b, "stress-healthy-2gpu.jsonl");
	/* the fake also checks the arguments vigil passes */
	strbuf_addstr(&b, "\ncase \"$*\" in *'stress --duration 5 --gpus 0,1'*) ;; *) exit 9;; esac");
	const char *dir = fake_helper("vigil-gpu", b.buf);
	struct child c;
	const char *args[] = { "stress", "gpu", "--duration", "5", "--gpus", "0,1", NULL };
	run_with_helpers(&c, dir, args);
	CHECK_MSG(c.exit_code == 0, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "vigil stress gpu on");
	CHECK_CONTAINS(c.out.buf, "H200");
	CHECK_CONTAINS(c.out.buf, "   687    658    370   1280");
	CHECK_CONTAINS(c.out.buf, "verdict: healthy");
	child_release(&c);
	const char *args2[] = { "stress", "gpu", "--duration", "5", "--gpus", "0,1", "--json", NULL };
	run_with_helpers(&c, dir, args2);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "healthy");
	CHECK_STR(json_get_string(json_path(v, "checks.1"), "name"), "gemm");
	double tf = 0;
	CHECK(json_get_number(json_path(v, "checks.1.findings.0.details"), "tflops", &tf));
	CHECK(tf == 687.1);
	json_free(v);
	child_release(&c);
	strbuf_release(&b);
}

TEST(stress_cli_slow_gpu_exit_1_and_reason)
{
	struct strbuf b = STRBUF_INIT;
	cat_body(&b, "stress-slow-gpu.jsonl");
	const char *dir = fake_helper("vigil-gpu", b.buf);
	struct child c;
	const char *args[] = { "stress", "gpu", "--reason", NULL };
	run_with_helpers(&c, dir, args);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "gemm: GPU 1 (0000:00:07.0) bf16 delivered 322 TFLOP/s");
	CHECK(strlen(c.out.buf) <= 81);
	child_release(&c);
	strbuf_release(&b);
}

TEST(stress_cli_no_helpers_says_cuda_is_needed)
{
	const char *dir = test_tmpdir(); /* empty */
	struct child c;
	const char *args[] = { "stress", "gpu", NULL };
	run_with_helpers(&c, dir, args);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "the GPU stress tests need CUDA");
	CHECK_CONTAINS(c.out.buf, "vigil-gpu");
	CHECK_CONTAINS(c.out.buf, "verdict: unknown");
	child_release(&c);
}

TEST_TIMEOUT(stress_cli_hanging_helper_is_killed_at_the_deadline, 60)
{
	/* prints its start and GPU 0, then hangs (with a child of its own, which must die too) */
	struct strbuf b = STRBUF_INIT;
	strbuf_addf(&b, "head -2 '%s/tests/data/stress/stress-hung-gpu.jsonl'\nsleep 300 &\nsleep 300",
		    test_srcdir());
	const char *dir = fake_helper("vigil-gpu", b.buf);
	struct child c;
	const char *args[] = { "stress", "gpu", "--timeout", "2", NULL };
	uint64_t t0 = mono_ms();
	run_with_helpers(&c, dir, args);
	CHECK(mono_ms() - t0 < 15000);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "GPU 1 did not finish its tests within the deadline");
	child_release(&c);
	strbuf_release(&b);
}

TEST(stress_cli_crash_and_garbage_are_unknown)
{
	const char *dir = fake_helper("vigil-gpu", "echo '{\"type\":\"start\"'\nkill -SEGV $$");
	struct child c;
	const char *args[] = { "stress", "gpu", NULL };
	run_with_helpers(&c, dir, args);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "killed by signal 11");
	child_release(&c);
	dir = fake_helper("vigil-gpu", "echo 'CUDA error: all CUDA-capable devices are busy' >&2\n"
				       "echo 'not json'\nexit 1");
	run_with_helpers(&c, dir, args);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "exited with 1: CUDA error: all CUDA-capable devices are busy");
	child_release(&c);
}

TEST(stress_cli_usage_errors)
{
	struct child c;
	const char *a1[] = { "stress", NULL };
	test_run_vigil(&c, a1, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a2[] = { "stress", "cpu", NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "'cpu' is not a subcommand of 'vigil stress'");
	child_release(&c);
	const char *a3[] = { "stress", "gpu", "--dtypes", "int4", NULL };
	test_run_vigil(&c, a3, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--dtypes wants");
	child_release(&c);
	const char *a4[] = { "stress", "gpu", "--gpus", "a,b", NULL };
	test_run_vigil(&c, a4, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a5[] = { "stress", "gpu", "--no-gemm", "--no-hbm", "--no-memtest", NULL };
	test_run_vigil(&c, a5, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a6[] = { "stress", "gpu", "-c", "stress.outlier-margin=2", NULL };
	test_run_vigil(&c, a6, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "'stress.outlier-margin' wants a number at least 0 and below 1");
	child_release(&c);
	const char *a7[] = { "stress", "gpu", "--help", NULL };
	test_run_vigil(&c, a7, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "usage: vigil stress gpu");
	CHECK_CONTAINS(c.out.buf, "3  could not tell");
	child_release(&c);
	const char *a8[] = { "help", "stress", NULL };
	test_run_vigil(&c, a8, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "usage: vigil stress gpu");
	child_release(&c);
}

/* The real helpers, where the build made them (nvcc was found): without a GPU they must say so,
 * and vigil must turn that into 'could not tell'. */
TEST(stress_real_helper_without_gpu)
{
	const char *b = getenv("VIGIL_BUILD");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/vigil-gpu", b ? b : "");
	if (!b || access(p.buf, X_OK) != 0)
		SKIP("the CUDA helpers were not built (no nvcc)");
	struct child c;
	const char *args[] = { "stress", "gpu", "--duration", "1", "--no-memtest", "--json", NULL };
	run_with_helpers(&c, b, args);
	if (c.exit_code != 3)
		SKIP("this machine has a GPU: the device benchmark covers it");
	struct json_value *v = test_parse_json(&c);
	/* no driver at all is said as the gpu check says it; a driver with no GPU, as the helper */
	const char *why = json_get_string(v, "reason");
	CHECK_MSG(why && (strstr(why, "no NVIDIA driver loaded") || strstr(why, "no GPU to test")),
		  "reason: %s", why ? why : "(none)");
	json_free(v);
	child_release(&c);
	strbuf_release(&p);
}

/* vigil check --deep folds the active tests into the host's report. */
TEST(stress_check_deep_folds_active_tests_in)
{
	const char *dir = test_tmpdir();
	struct strbuf s = STRBUF_INIT, p = STRBUF_INIT;
	const char *d = test_srcdir();
	strbuf_addf(&s,
		    "#!/bin/sh\ncase \"$1\" in\n"
		    "stress) cat '%s/tests/data/stress/stress-healthy-2gpu.jsonl';;\n"
		    "pairs) cat '%s/tests/data/stress/pairs-healthy-2gpu.jsonl';;\n"
		    "*) exit 9;;\nesac\n",
		    d, d);
	test_write(dir, "vigil-gpu", s.buf);
	strbuf_reset(&s);
	strbuf_addf(&s, "#!/bin/sh\ncat '%s/tests/data/stress/nccl-healthy-2proc.jsonl'\n", d);
	test_write(dir, "vigil-nccl", s.buf);
	strbuf_addf(&p, "%s/vigil-gpu", dir);
	CHECK(chmod(p.buf, 0755) == 0);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/vigil-nccl", dir);
	CHECK(chmod(p.buf, 0755) == 0);
	struct child c;
	const char *args[] = { "check", "--deep", "--only", "storage", "--json", NULL };
	run_with_helpers(&c, dir, args);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *checks = json_get(v, "checks");
	CHECK(checks && checks->type == JSON_ARRAY);
	const char *want[] = { "storage", "stress", "gemm", "hbm", "memtest", "stress-health", "pairs",
			       "nccl" };
	CHECK_INT(checks->nr, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		CHECK_STR(json_get_string(checks->items[i], "name"), want[i]);
		if (i)
			CHECK_STR(json_get_string(checks->items[i], "status"), "ok");
	}
	json_free(v);
	child_release(&c);
	const char *a2[] = { "check", "--deep", "--cached", NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	strbuf_release(&s);
	strbuf_release(&p);
}

/* A host with no GPU: 'check' and 'check --deep' agree (healthy, exit 0), and --deep says
 * plainly that the active tests were not run, instead of "unknown: CUDA helper not installed". */
TEST(stress_check_deep_without_gpu_agrees_with_check)
{
	const char *dir = test_tmpdir(); /* no helpers either */
	struct child c;
	const char *plain[] = { "check", "--only", "gpu", "--json", NULL };
	run_with_helpers(&c, dir, plain);
	struct json_value *v = test_parse_json(&c);
	const char *gs = json_get_string(json_path(v, "checks.0"), "status");
	bool no_gpu = gs && !strcmp(gs, "skipped");
	json_free(v);
	child_release(&c);
	if (!no_gpu)
		SKIP("this machine has a GPU or a driver");
	const char *deep[] = { "check", "--deep", "--only", "gpu", "--json", NULL };
	run_with_helpers(&c, dir, deep);
	CHECK_INT(c.exit_code, 0);
	v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "healthy");
	const struct json_value *st = json_path(v, "checks.1");
	CHECK_STR(json_get_string(st, "name"), "stress");
	CHECK_STR(json_get_string(st, "status"), "skipped");
	CHECK_CONTAINS(json_get_string(json_path(st, "findings.0"), "message"),
		       "no NVIDIA GPU on this host: the active tests (stress gpu, net pairs, net "
		       "nccl) were not run");
	json_free(v);
	child_release(&c);
}

/* A foreign process names itself (/proc/PID/comm is its own choice) and so does a GPU: what
 * reaches the terminal is spelled out, never an escape sequence. */
TEST(stress_cli_escape_bytes_from_the_helper_never_reach_the_terminal)
{
	struct strbuf b = STRBUF_INIT;
	strbuf_addf(&b, "sed -e 's/\"python3\"/\"py\\\\u001b]0;pwned\\\\u0007\"/' "
			"-e 's/\"NVIDIA H200\"/\"NVIDIA \\\\u001b[2JH200\"/' "
			"'%s/tests/data/stress/stress-foreign-process.jsonl'",
		    test_srcdir());
	const char *dir = fake_helper("vigil-gpu", b.buf);
	struct child c;
	const char *args[] = { "stress", "gpu", "--duration", "5", "-v", NULL };
	run_with_helpers(&c, dir, args);
	CHECK_MSG(c.exit_code == 3, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "py\\x1b]0;pwned\\x07");
	CHECK(!strchr(c.out.buf, '\x1b'));
	CHECK(!strchr(c.out.buf, '\x07'));
	child_release(&c);
	strbuf_release(&b);
}
