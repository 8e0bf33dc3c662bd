/*
 * test_determinism.c: 'vigil stress gpu --determinism' without a GPU: the parser and the
 * reference file on made-up lines, and the real binary against fake vigil-gpu helpers that print
 * recorded (tests/data/stress/det-*.jsonl) or made-up determinism lines, die or hang.
 * det-injected-h200-real.jsonl is the helper's own output on the H200 with --inject sdc.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/stress/determinism.h"
#include "../../src/stress/helper.h"

/* ---- the parser and the references ---- */

static void parse_text(struct det_run *r, const char *text, int want, struct strbuf *err)
{
	struct helper_out ho;
	helper_out_init(&ho);
	helper_parse_lines(&ho, text, strlen(text));
	det_run_init(r);
	CHECK_INT(det_run_parse(r, (const struct json_value *const *)ho.lines, ho.nr, err), want);
	helper_out_release(&ho);
}

TEST(det_parse_majority_and_bounds)
{
	struct strbuf t = STRBUF_INIT, err = STRBUF_INIT;
	struct det_run r;
	strbuf_addstr(&t, "{\"type\":\"start\",\"mode\":\"determinism\",\"workload\":\"w1\","
			  "\"driver\":\"550.90.07\",\"gpus\":[3]}\n");
	/* 12 repeats: 10 distinct digests after the first two, more than DET_MAX_DIGESTS */
	for (int i = 1; i <= 12; i++)
		strbuf_addf(&t, "{\"type\":\"det\",\"gpu\":3,\"name\":\"NVIDIA A100-SXM4-80GB\",\"repeat\":%d,"
			    "\"digest\":\"%016x\"}\n", i, i <= 2 ? 7 : 100 + i);
	parse_text(&r, t.buf, 0, &err);
	CHECK_INT((int)r.nr, 1);
	CHECK_INT(r.gpus[0].index, 3);
	CHECK_INT((int)r.gpus[0].repeats, 12);
	CHECK_INT((int)r.gpus[0].nr_d, DET_MAX_DIGESTS);
	CHECK_INT((int)r.gpus[0].others, 3);
	CHECK(det_majority(&r.gpus[0]) == NULL);
	CHECK(!r.gpus[0].done);
	det_run_release(&r);

	/* 3 of 4 make a majority */
	parse_text(&r,
		   "{\"type\":\"det\",\"gpu\":0,\"repeat\":1,\"digest\":\"00000000000000aa\"}\n"
		   "{\"type\":\"det\",\"gpu\":0,\"repeat\":2,\"digest\":\"00000000000000AA\"}\n"
		   "{\"type\":\"det\",\"gpu\":0,\"repeat\":3,\"digest\":\"00000000000000ab\"}\n"
		   "{\"type\":\"det\",\"gpu\":0,\"repeat\":4,\"digest\":\"00000000000000aa\"}\n",
		   0, &err);
	CHECK(det_majority(&r.gpus[0]) && det_majority(&r.gpus[0])->digest == 0xaa);
	CHECK_INT((int)det_majority(&r.gpus[0])->count, 3);
	det_run_release(&r);

	/* wrong shapes: a short digest, no repeat */
	strbuf_reset(&err);
	parse_text(&r, "{\"type\":\"det\",\"gpu\":0,\"repeat\":1,\"digest\":\"abc\"}\n", -1, &err);
	CHECK_CONTAINS(err.buf, "not 16 hex digits");
	det_run_release(&r);
	strbuf_reset(&err);
	parse_text(&r, "{\"type\":\"det\",\"gpu\":0,\"digest\":\"00000000000000aa\"}\n", -1, &err);
	CHECK_CONTAINS(err.buf, "without a repeat number");
	det_run_release(&r);
	strbuf_release(&t);
	strbuf_release(&err);
}

TEST(det_reference_file_parses_and_rejects_bad_lines)
{
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
	struct det_refs refs;
	memset(&refs, 0, sizeof(refs));
	/* the file vigil ships */
	strbuf_addf(&p, "%s/cuda/determinism-ref.tsv", test_srcdir());
	CHECK_MSG(read_file_bounded(p.buf, &text, 1u << 20, &err) == 0, "%s", err.buf);
	CHECK_MSG(det_refs_parse(&refs, text.buf, text.len, &err) == 0, "%s", err.buf);
	CHECK(refs.nr >= 1);
	CHECK_STR(refs.v[0].model, "NVIDIA H200");
	CHECK_INT(refs.v[0].driver_major, 580);
	CHECK(refs.v[0].digest == 0xb8cbafa6658c6d78ULL);
	det_refs_release(&refs);
	const char *bad = "# comment\nNVIDIA H200\t132\t580\t130100\tw\ta\t0123\n";
	CHECK_INT(det_refs_parse(&refs, bad, strlen(bad), &err), -1);
	CHECK_CONTAINS(err.buf, "line 2");
	det_refs_release(&refs);
	CHECK_INT(det_driver_major("580.159.04"), 580);
	CHECK_INT(det_driver_major(""), -1);
	CHECK_INT(det_driver_major("v580"), -1);
	strbuf_release(&p);
	strbuf_release(&text);
	strbuf_release(&err);
}

/* ---- the command against fake helpers ---- */

static char refpath[1024];

/* Run vigil with a fake vigil-gpu whose body is given; ref: the shipped reference, else none. */
static void run_det(struct child *c, const char *body, bool ref, const char *const *extra)
{
	static char env[1024], conf[1024];
	const char *dir = test_script("vigil-gpu", body);
	const char *cdir = test_tmpdir();
	test_write(cdir, "vigil.conf", "");
	snprintf(env, sizeof(env), "VIGIL_CUDA_HELPER_DIR=%s", dir);
	snprintf(conf, sizeof(conf), "VIGIL_CONFIG=%s/vigil.conf", cdir);
	snprintf(refpath, sizeof(refpath), "%s/cuda/determinism-ref.tsv", test_srcdir());
	const char *args[24];
	size_t n = 0;
	args[n++] = "stress";
	args[n++] = "gpu";
	args[n++] = "--determinism";
	if (ref) {
		args[n++] = "--reference";
		args[n++] = refpath;
	}
	for (size_t i = 0; extra && extra[i] && n < 22; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	const char *e[] = { env, conf, NULL };
	test_run_vigil(c, args, e);
}

static const char *cat_of(struct strbuf *b, const char *data)
{
	strbuf_reset(b);
	strbuf_addf(b, "cat '%s/tests/data/stress/%s'", test_srcdir(), data);
	return b->buf;
}

/* The status and code of the first determinism finding of a --json report. */
static void first_det(struct child *c, const char *status, const char *code)
{
	struct json_value *v = test_parse_json(c);
	const struct json_value *f = json_path(v, "checks.1.findings.0");
	CHECK_STR(json_get_string(json_path(v, "checks.1"), "name"), "determinism");
	CHECK_STR(json_get_string(f, "status"), status);
	CHECK_STR(json_get_string(f, "code"), code);
	json_free(v);
}

TEST(det_cli_healthy_two_gpus_match_the_reference)
{
	struct strbuf b = STRBUF_INIT;
	struct child c;
	cat_of(&b, "det-healthy-2gpu.jsonl");
	/* the fake also checks the arguments vigil passes */
	strbuf_addstr(&b, "\ncase \"$*\" in 'determinism --repeats 6 --gpus 0,1') ;; *) exit 9;; esac");
	const char *x[] = { "--repeats", "6", "--gpus", "0,1", NULL };
	run_det(&c, b.buf, true, x);
	CHECK_MSG(c.exit_code == 0, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "b8cbafa6658c6d78 matches");
	CHECK_CONTAINS(c.out.buf, "verdict: healthy");
	child_release(&c);
	const char *xj[] = { "--repeats", "6", "--gpus", "0,1", "--json", NULL };
	run_det(&c, b.buf, true, xj);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *f = json_path(v, "checks.1.findings.1");
	CHECK_STR(json_get_string(f, "code"), "determinism");
	CHECK_STR(json_get_string(json_get(f, "details"), "digest"), "b8cbafa6658c6d78");
	double share = 0;
	CHECK(json_get_number(json_get(f, "details"), "digest_share", &share));
	CHECK(share > 0.01 && share < 0.02);
	json_free(v);
	child_release(&c);
	strbuf_release(&b);
}

TEST(det_cli_one_repeat_differing_fails_naming_it)
{
	struct strbuf b = STRBUF_INIT;
	struct child c;
	run_det(&c, cat_of(&b, "det-repeat-differs.jsonl"), true, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "silent data corruption suspected: GPU 1 (0000:00:07.0) repeat 4 "
				  "of 6 differed (digest b8cbafa6658c6d79, the others "
				  "b8cbafa6658c6d78)");
	CHECK_NOT_CONTAINS(c.out.buf, "GPU 0 (0000:00:06.0) repeat");
	child_release(&c);
	/* two digests, two repeats each: no majority, still a failure */
	run_det(&c, cat_of(&b, "det-no-majority.jsonl"), true, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "gave 2 different digests in 4 repeats");
	child_release(&c);
	strbuf_release(&b);
}

TEST(det_cli_one_gpu_of_two_differing)
{
	struct strbuf b = STRBUF_INIT;
	struct child c;
	/* the reference decides which of the two is wrong */
	run_det(&c, cat_of(&b, "det-gpu-of-two-differs.jsonl"), true, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "GPU 1 (0000:00:07.0) computed digest 5e1f04a7c9b2d613 in all 5 "
				  "repeats, the other NVIDIA H200 GPU b8cbafa6658c6d78, as the "
				  "reference does");
	CHECK_NOT_CONTAINS(c.out.buf, "GPU 0 (0000:00:06.0) computed");
	child_release(&c);
	/* without one nothing decides: both are suspects */
	run_det(&c, b.buf, false, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "GPU 0 (0000:00:06.0) computed digest b8cbafa6658c6d78, as many "
				  "other NVIDIA H200 GPUs 5e1f04a7c9b2d613, and no majority");
	CHECK_CONTAINS(c.out.buf, "GPU 1 (0000:00:07.0) computed digest 5e1f04a7c9b2d613");
	child_release(&c);
	/* of three, the majority decides, reference or not */
	run_det(&c, cat_of(&b, "det-gpu-of-three-differs.jsonl"), false, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "GPU 2 (0000:00:08.0) computed digest 5e1f04a7c9b2d613 in all 5 "
				  "repeats, the other NVIDIA H200 GPUs b8cbafa6658c6d78");
	CHECK_NOT_CONTAINS(c.out.buf, "GPU 0 (0000:00:06.0) computed");
	child_release(&c);
	strbuf_release(&b);
}

TEST(det_cli_reference_mismatch)
{
	struct strbuf b = STRBUF_INIT;
	struct child c;
	/* the same key with another digest, found beside the helper (the default place) */
	cat_of(&b, "det-healthy-1gpu.jsonl");
	const char *dir = test_script("vigil-gpu", b.buf);
	test_write(dir, "determinism-ref.tsv",
		   "NVIDIA H200\t132\t580\t130100\tdet-bf16-chain-v1\tid=66 tile=248 stages=35 "
		   "splitk=1 reduction=0 swizzle=0 custom=7\t00000000deadbeef\ttest\n");
	static char env[1024];
	snprintf(env, sizeof(env), "VIGIL_CUDA_HELPER_DIR=%s", dir);
	const char *e[] = { env, "VIGIL_CONFIG=/dev/null", NULL };
	const char *args[] = { "stress", "gpu", "--determinism", "--json", NULL };
	test_run_vigil(&c, args, e);
	CHECK_MSG(c.exit_code == 1, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	first_det(&c, "fail", "sdc_reference");
	CHECK_CONTAINS(c.out.buf, "the reference for NVIDIA H200 (132 SMs, driver 580, cuBLASLt "
				  "130100, det-bf16-chain-v1) is 00000000deadbeef");
	child_release(&c);
	/* two GPUs that agree with each other but not with it: a warning, not a GPU at fault */
	cat_of(&b, "det-healthy-2gpu.jsonl");
	dir = test_script("vigil-gpu", b.buf);
	test_write(dir, "determinism-ref.tsv",
		   "NVIDIA H200\t132\t580\t130100\tdet-bf16-chain-v1\tid=66 tile=248 stages=35 "
		   "splitk=1 reduction=0 swizzle=0 custom=7\t00000000deadbeef\ttest\n");
	snprintf(env, sizeof(env), "VIGIL_CUDA_HELPER_DIR=%s", dir);
	test_run_vigil(&c, args, e);
	CHECK_INT(c.exit_code, 0);
	first_det(&c, "warn", "det_ref_mismatch");
	child_release(&c);
	strbuf_release(&b);
}

TEST(det_cli_no_reference_is_unknown_alone)
{
	struct strbuf b = STRBUF_INIT;
	struct child c;
	const char *x[] = { "--json", NULL };
	run_det(&c, cat_of(&b, "det-healthy-1gpu.jsonl"), false, x);
	CHECK_MSG(c.exit_code == 3, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	first_det(&c, "unknown", "det_no_reference");
	CHECK_CONTAINS(c.out.buf, "no reference digest for NVIDIA H200");
	child_release(&c);
	/* beside a sibling that agrees, the missing reference is only skipped */
	run_det(&c, cat_of(&b, "det-healthy-2gpu.jsonl"), false, x);
	CHECK_INT(c.exit_code, 0);
	first_det(&c, "skipped", "det_no_reference");
	child_release(&c);
	strbuf_release(&b);
}

TEST(det_cli_injected_flip_on_the_h200_is_found)
{
	struct strbuf b = STRBUF_INIT;
	struct child c;
	const char *x[] = { "--json", NULL };
	run_det(&c, cat_of(&b, "det-injected-h200-real.jsonl"), true, x);
	CHECK_INT(c.exit_code, 1);
	first_det(&c, "fail", "sdc_repeat");
	struct json_value *v = test_parse_json(&c);
	const struct json_value *d = json_path(v, "checks.1.findings.0.details");
	double fr = 0, ir = 0;
	CHECK(json_get_number(d, "first_differing_repeat", &fr));
	CHECK(json_get_number(d, "injected_repeat", &ir));
	CHECK(fr == 4 && ir == 4);
	json_free(v);
	child_release(&c);
	/* vigil passes --inject sdc on */
	const char *xi[] = { "--repeats", "8", "--inject", "sdc", NULL };
	strbuf_addstr(&b, "\ncase \"$*\" in 'determinism --repeats 8 --inject sdc') ;; *) exit 9;; esac");
	run_det(&c, b.buf, true, xi);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "repeat 4 of 8 differed");
	child_release(&c);
	strbuf_release(&b);
}

TEST(det_cli_helper_dying_mid_test)
{
	struct strbuf b = STRBUF_INIT;
	struct child c;
	/* three repeats that agree, then SIGKILL: incomplete, never healthy */
	strbuf_addf(&b, "head -4 '%s/tests/data/stress/det-healthy-1gpu.jsonl'\nkill -9 $$",
		    test_srcdir());
	run_det(&c, b.buf, true, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "killed by signal 9");
	CHECK_CONTAINS(c.out.buf, "before GPU 0 finished (after 3 repeats): the test is incomplete");
	CHECK_NOT_CONTAINS(c.out.buf, "no reference digest"); /* no det_done: no key to look up */
	child_release(&c);
	/* a repeat that differed before the death still fails the GPU */
	strbuf_reset(&b);
	strbuf_addf(&b, "head -10 '%s/tests/data/stress/det-repeat-differs.jsonl'\nkill -9 $$",
		    test_srcdir());
	run_det(&c, b.buf, true, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "GPU 1 repeat 4 of 4 differed");
	child_release(&c);
	/* a line vigil cannot read: unknown, with what came before */
	run_det(&c, "head -3 \"$0\" >/dev/null; echo '{\"type\":\"start\",\"gpus\":[0]}';"
		    "echo '{\"type\":\"det\",\"gpu\":0,\"repeat\":1,\"digest\":\"xyz\"}'",
		true, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "the digest is not 16 hex digits");
	child_release(&c);
	strbuf_release(&b);
}

TEST_TIMEOUT(det_cli_hanging_gpu_is_named_at_the_deadline, 60)
{
	struct strbuf b = STRBUF_INIT;
	struct child c;
	strbuf_addf(&b, "head -3 '%s/tests/data/stress/det-healthy-2gpu.jsonl'\nsleep 300 &\nsleep 300",
		    test_srcdir());
	const char *x[] = { "--timeout", "2", NULL };
	uint64_t t0 = mono_ms();
	run_det(&c, b.buf, true, x);
	CHECK(mono_ms() - t0 < 15000);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "GPU 0 did not finish the determinism test within the deadline "
				  "(after 1 repeats)");
	child_release(&c);
	strbuf_release(&b);
}

TEST(det_cli_usage_and_no_helper)
{
	struct child c;
	const char *a1[] = { "stress", "gpu", "--repeats", "5", NULL };
	test_run_vigil(&c, a1, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--repeats and --reference belong to --determinism");
	child_release(&c);
	const char *a2[] = { "stress", "gpu", "--inject", "sdc", NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--inject sdc belongs to --determinism");
	child_release(&c);
	const char *a3[] = { "stress", "gpu", "--determinism", "--inject", "gemm", NULL };
	test_run_vigil(&c, a3, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a4[] = { "stress", "gpu", "--determinism", "--repeats", "2", NULL };
	test_run_vigil(&c, a4, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "at least 3");
	child_release(&c);
	const char *a5[] = { "stress", "gpu", "--determinism", "--no-memtest", NULL };
	test_run_vigil(&c, a5, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a6[] = { "stress", "gpu", "--help", NULL };
	test_run_vigil(&c, a6, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "--determinism");
	child_release(&c);
	/* no helper: unknown, the same words as the other tests */
	static char env[1024];
	snprintf(env, sizeof(env), "VIGIL_CUDA_HELPER_DIR=%s", test_tmpdir());
	const char *e[] = { env, "VIGIL_CONFIG=/dev/null", NULL };
	const char *a7[] = { "stress", "gpu", "--determinism", NULL };
	test_run_vigil(&c, a7, e);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "the GPU stress tests need CUDA");
	child_release(&c);
}
