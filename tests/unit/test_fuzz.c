/*
 * test_fuzz.c: each libFuzzer target (tests/fuzz/) runs for VIGIL_FUZZ_SECONDS (default 15)
 * from its seed corpus; any crash, leak, undefined behaviour or broken invariant fails the test.
 * 'make fuzz' runs them longer. Skipped where clang/libFuzzer could not build them.
 */
#include "../harness.h"

#include <unistd.h>

static void run_target(const char *name)
{
	const char *dir = getenv("VIGIL_FUZZ_DIR");
	const char *secs = getenv("VIGIL_FUZZ_SECONDS");
	struct strbuf bin = STRBUF_INIT, corpus = STRBUF_INIT, work = STRBUF_INIT,
		      t = STRBUF_INIT, art = STRBUF_INIT;
	if (!dir || !*dir)
		SKIP("VIGIL_FUZZ_DIR not set (run through make test)");
	strbuf_addf(&bin, "%s/%s", dir, name);
	if (access(bin.buf, X_OK) != 0)
		SKIP("fuzz target not built (needs clang and libclang-rt-14-dev)");
	strbuf_addf(&corpus, "%s/tests/fuzz/corpus/%s", test_srcdir(), name);
	strbuf_addf(&work, "%s/corpus", test_tmpdir());
	test_mkdir(test_tmpdir(), "corpus");
	strbuf_addf(&t, "-max_total_time=%s", secs && *secs ? secs : "15");
	strbuf_addf(&art, "-artifact_prefix=%s/", test_tmpdir());
	const char *argv[] = { bin.buf, t.buf, "-max_len=65536", "-rss_limit_mb=2048", art.buf,
			       work.buf, corpus.buf, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 600000;
	c.merge_stderr = true;
	c.out_cap = 64 << 10;
	CHECK_INT(child_run(&c, NULL), 0);
	CHECK_MSG(c.exited && c.exit_code == 0, "fuzzing '%s' found a problem:\n%s", name,
		  c.out.buf);
	child_release(&c);
	strbuf_release(&bin);
	strbuf_release(&corpus);
	strbuf_release(&work);
	strbuf_release(&t);
	strbuf_release(&art);
}

TEST_TIMEOUT(fuzz_kernel_log_parser, 300) { run_target("kmsg"); }
TEST_TIMEOUT(fuzz_json_parser, 300) { run_target("json"); }
TEST_TIMEOUT(fuzz_config_parser, 300) { run_target("config"); }
TEST_TIMEOUT(fuzz_statefile_parser, 300) { run_target("statefile"); }
TEST_TIMEOUT(fuzz_nvml_xid_record, 300) { run_target("xidwatch"); }
TEST_TIMEOUT(fuzz_steps_parser, 300) { run_target("steps"); }
TEST_TIMEOUT(fuzz_evidence_judge, 300) { run_target("evidence"); }
TEST_TIMEOUT(fuzz_rank_output_splitter, 300) { run_target("rankout"); }
TEST_TIMEOUT(fuzz_run_report, 300) { run_target("runreport"); }
TEST_TIMEOUT(fuzz_diagnose_rows, 300) { run_target("diag_rows"); }
TEST_TIMEOUT(fuzz_diagnose_logs, 300) { run_target("diag_logs"); }
TEST_TIMEOUT(fuzz_iblinkinfo_parser, 300) { run_target("iblinkinfo"); }
TEST_TIMEOUT(fuzz_ibnetdiscover_parser, 300) { run_target("ibnetdiscover"); }
TEST_TIMEOUT(fuzz_nccl_ring_and_hang, 300) { run_target("nccl_ring"); }
TEST_TIMEOUT(fuzz_hang_logs, 300) { run_target("hang_logs"); }
TEST_TIMEOUT(fuzz_fleet_step_splitter, 300) { run_target("fleet_split"); }
TEST_TIMEOUT(fuzz_replica_digests, 300) { run_target("replicas"); }
TEST_TIMEOUT(fuzz_srun_step_lines, 300) { run_target("srunmsg"); }
TEST_TIMEOUT(fuzz_sim_model, 300) { run_target("sim_model"); }
TEST_TIMEOUT(fuzz_sim_schedule, 300) { run_target("sim_schedule"); }
TEST_TIMEOUT(fuzz_perftest_parser, 300) { run_target("perftest"); }
TEST_TIMEOUT(fuzz_ufm_parser, 300) { run_target("ufm"); }
TEST_TIMEOUT(fuzz_scontrol_parser, 300) { run_target("scontrol"); }
TEST_TIMEOUT(fuzz_gresconf_parser, 300) { run_target("gresconf"); }
TEST_TIMEOUT(fuzz_fleet_history, 300) { run_target("fleet_history"); }
TEST_TIMEOUT(fuzz_nvml_snapshot_parser, 300) { run_target("nvml_snapshot"); }
TEST_TIMEOUT(fuzz_qualify_card, 300) { run_target("qualify_card"); }
