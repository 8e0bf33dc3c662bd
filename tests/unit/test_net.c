/*
 * test_net.c: 'vigil net nccl' and 'vigil net pairs' without a GPU: the verdict logic on recorded
 * helper output (tests/data/stress/: busbw, wrong data, a rank that never entered, a crashed
 * rank, one rank of a multi-host job, weak links and GPUs) and the commands against fake helpers.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/stress/net.h"
#include "../../src/stress/helper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

static struct gs_end ended(void)
{
	struct gs_end e;
	memset(&e, 0, sizeof(e));
	e.ran = true;
	e.describe = "exited with 0";
	e.duration_ms = 4000;
	return e;
}

static void judge_nccl(const char *name, const struct config *cfg, struct report *rep)
{
	struct helper_out ho;
	struct nc_run run;
	struct stress_limits lim;
	struct strbuf err = STRBUF_INIT;
	struct gs_end end = ended();
	load(name, &ho);
	nc_run_init(&run);
	CHECK_MSG(nc_run_parse(&run, (const struct json_value *const *)ho.lines, ho.nr, &err) == 0,
		  "%s", err.buf);
	CHECK(stress_limits_get(&lim, run.gpu_name[0] ? run.gpu_name : NULL, cfg, &err) == 0);
	report_init(rep, "node-7", 0);
	nccl_evaluate(&run, &end, &lim, cfg && config_get(cfg, "net", "floor-busbw"), rep);
	report_finish(rep);
	nc_run_release(&run);
	helper_out_release(&ho);
	strbuf_release(&err);
}

static void judge_pairs(const char *name, struct report *rep)
{
	struct helper_out ho;
	struct np_run run;
	struct stress_limits lim;
	struct strbuf err = STRBUF_INIT;
	struct gs_end end = ended();
	load(name, &ho);
	np_run_init(&run);
	CHECK_MSG(np_run_parse(&run, (const struct json_value *const *)ho.lines, ho.nr, &err) == 0,
		  "%s", err.buf);
	CHECK(stress_limits_get(&lim, run.nr_gpus ? run.gpus[0].name : NULL, NULL, &err) == 0);
	report_init(rep, "node-7", 0);
	pairs_evaluate(&run, &end, &lim, rep);
	report_finish(rep);
	np_run_release(&run);
	helper_out_release(&ho);
	strbuf_release(&err);
}

static size_t count_code(const struct check_result *r, const char *code)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nr; i++)
		n += !strcmp(r->findings[i].code, code);
	return n;
}

TEST(nccl_healthy_two_processes)
{
	struct report rep;
	judge_nccl("nccl-healthy-2proc.jsonl", NULL, &rep);
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	CHECK_INT(rep.nr, 1);
	const struct check_result *r = &rep.results[0];
	CHECK_STR(r->name, "nccl");
	CHECK_INT(r->nr, 7);
	/* the slowest rank's figures stand for the size */
	const struct finding *f = &r->findings[6];
	CHECK_CONTAINS(f->message, "all_reduce 4 GiB: busbw 346.2 GB/s");
	CHECK_CONTAINS(f->message, "data exact");
	bool has_floor = false;
	for (size_t i = 0; i < f->nr_details; i++)
		has_floor |= !strcmp(f->details[i].key, "busbw_floor");
	CHECK(has_floor);
	report_release(&rep);
}

TEST(nccl_wrong_data_fails)
{
	struct report rep;
	judge_nccl("nccl-wrong-data.jsonl", NULL, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct finding *f = result_find(&rep.results[0], "nccl_wrong", NULL);
	CHECK(f);
	CHECK_CONTAINS(f->message, "all_reduce 256 MiB: 12 elements wrong");
	report_release(&rep);
}

TEST(nccl_busbw_floor)
{
	struct report rep;
	judge_nccl("nccl-low-busbw.jsonl", NULL, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	/* only sizes of 1 GiB and up are held to the floor */
	CHECK_INT(count_code(&rep.results[0], "nccl_busbw"), 3);
	CHECK_CONTAINS(result_find(&rep.results[0], "nccl_busbw", NULL)->message,
		       "below the floor 289 for NVIDIA H200");
	report_release(&rep);
	/* a configured floor and minimum size */
	struct config cfg;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "node-7");
	CHECK(config_set(&cfg, "net.floor-busbw=100", &err) == 0);
	CHECK(config_set(&cfg, "net.floor-min-bytes=67108864", &err) == 0);
	judge_nccl("nccl-low-busbw.jsonl", &cfg, &rep);
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	report_release(&rep);
	config_release(&cfg);
	strbuf_release(&err);
}

TEST(nccl_rank_that_never_entered_is_named)
{
	struct report rep;
	judge_nccl("nccl-hang.jsonl", NULL, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct finding *f = result_find(&rep.results[0], "nccl_timeout", NULL);
	CHECK(f);
	CHECK_STR(f->device, "rank 1 (GPU 1)");
	CHECK_CONTAINS(f->message, "all_reduce 16 MiB did not finish in 8 s (seen by rank 0)");
	CHECK_CONTAINS(f->message, "incomplete on ranks 0,1; never entered: rank 1");
	CHECK_INT(f->severity, SEV_CRITICAL);
	/* the launcher's kill of the hung rank is not a second problem */
	CHECK_INT(count_code(&rep.results[0], "rank_died"), 0);
	CHECK_CONTAINS(rep.reason, "nccl: all_reduce 16 MiB did not finish");
	report_release(&rep);
}

TEST(nccl_crashed_rank_fails)
{
	struct report rep;
	judge_nccl("nccl-crash.jsonl", NULL, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct finding *f = result_find(&rep.results[0], "rank_died", "rank 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "killed by signal 11");
	/* rank 1 reported nothing: each size is incomplete */
	CHECK(result_find(&rep.results[0], "nccl_incomplete", NULL));
	report_release(&rep);
}

TEST(nccl_one_rank_of_a_multi_host_job)
{
	struct report rep;
	judge_nccl("nccl-one-rank.jsonl", NULL, &rep);
	/* 46.5 GB/s over InfiniBand is fine: the NVLink floor is for one host only */
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	CHECK_INT(rep.results[0].nr, 2);
	report_release(&rep);
	struct config cfg;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "node-7");
	CHECK(config_set(&cfg, "net.floor-busbw=45", &err) == 0);
	judge_nccl("nccl-one-rank.jsonl", &cfg, &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	CHECK_CONTAINS(rep.reason, "busbw 41.0 GB/s, below the floor 45");
	report_release(&rep);
	config_release(&cfg);
	strbuf_release(&err);
}

TEST(pairs_healthy_two_gpus)
{
	struct report rep;
	judge_pairs("pairs-healthy-2gpu.jsonl", &rep);
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	CHECK_INT(rep.results[0].nr, 3);
	CHECK_CONTAINS(rep.results[0].findings[0].message, "GPU 0 -> GPU 1: 396.6 GB/s, data verified");
	CHECK_CONTAINS(rep.results[0].findings[2].message, "783.6 GB/s both ways");
	report_release(&rep);
}

TEST(pairs_weak_gpu_among_four)
{
	struct report rep;
	judge_pairs("pairs-weak-gpu-4.jsonl", &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct check_result *r = &rep.results[0];
	CHECK_INT(count_code(r, "pair_floor"), 6);
	const struct finding *f = result_find(r, "weak_gpu", NULL);
	CHECK(f);
	CHECK_STR(f->device, "GPU 2 (0000:00:08.0)");
	CHECK_CONTAINS(f->message, "every copy to and from it is slow (6 of 6)");
	CHECK_INT(count_code(r, "weak_gpu"), 1);
	report_release(&rep);
}

TEST(pairs_one_slow_link_among_eight)
{
	struct report rep;
	judge_pairs("pairs-8gpu-one-slow-link.jsonl", &rep);
	CHECK_STR(verdict_name(rep.verdict), "unhealthy");
	const struct check_result *r = &rep.results[0];
	CHECK(result_find(r, "pair_floor", "GPU 3 -> GPU 5"));
	CHECK_INT(count_code(r, "pair_floor"), 1);
	CHECK_INT(count_code(r, "weak_gpu"), 0);
	CHECK(result_find(r, "pair_miscompare", "GPU 0 -> GPU 1"));
	CHECK_CONTAINS(result_find(r, "pair_miscompare", NULL)->message, "7 words arrived wrong");
	CHECK_INT(result_find(r, "pair_no_p2p", "GPU 6 -> GPU 7")->status, STATUS_WARN);
	report_release(&rep);
}

TEST(pairs_one_gpu_is_skipped)
{
	struct report rep;
	judge_pairs("pairs-one-gpu.jsonl", &rep);
	CHECK_STR(verdict_name(rep.verdict), "healthy");
	CHECK_INT(rep.results[0].status, STATUS_SKIPPED);
	report_release(&rep);
}

/* ---- the commands against fake helpers ---- */

static const char *fake(const char *name, const char *data, const char *extra)
{
	struct strbuf s = STRBUF_INIT;
	strbuf_addf(&s, "%s\ncat '%s/tests/data/stress/%s'", extra ? extra : "", test_srcdir(),
		    data);
	const char *dir = test_script(name, s.buf);
	strbuf_release(&s);
	return dir;
}

static void run_net(struct child *c, const char *dir, const char *const *args)
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

TEST(net_cli_nccl_passes_options_and_prints_the_table)
{
	/* the fake fails unless vigil passed the options through */
	const char *dir = fake("vigil-nccl", "nccl-healthy-2proc.jsonl",
			       "case \"$*\" in '--op all_reduce --sizes 64M:4G --timeout 20') ;; "
			       "*) echo \"args: $*\" >&2; exit 9;; esac");
	struct child c;
	const char *args[] = { "net", "nccl", "--op", "all_reduce", "--sizes", "64M:4G",
			       "--timeout", "20", NULL };
	run_net(&c, dir, args);
	CHECK_MSG(c.exit_code == 0, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "2 ranks (local), NCCL 22809");
	CHECK_CONTAINS(c.out.buf, "all_reduce        4294967296");
	CHECK_CONTAINS(c.out.buf, "verdict: healthy");
	child_release(&c);
}

/*
 * One GPU: the helper runs a one-rank all_reduce, whose busbw is 0 by its formula (the shape is
 * vigil-nccl's own, as on the lent 1 x H200). It used to fail 1 GiB and up against the H200
 * floor ("busbw 0.0 GB/s, below the floor 289"): a healthy single-GPU host called unhealthy.
 */
TEST(net_cli_nccl_one_rank_is_skipped_not_below_the_floor)
{
	const char *dir = fake("vigil-nccl", "nccl-single-gpu.jsonl", NULL);
	struct child c;
	const char *args[] = { "net", "nccl", "--json", NULL };
	run_net(&c, dir, args);
	CHECK_MSG(c.exit_code == 0, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_NOT_CONTAINS(c.out.buf, "below the floor");
	CHECK_CONTAINS(c.out.buf, "\"one_rank\"");
	CHECK_CONTAINS(c.out.buf, "a collective needs two ranks");
	CHECK_CONTAINS(c.out.buf, "\"status\": \"skipped\"");
	child_release(&c);

	/* an injected hang of a rank the run does not have is a usage error, never healthy */
	const char *args2[] = { "net", "nccl", "--fault-hang-rank", "1", NULL };
	run_net(&c, dir, args2);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--fault-hang-rank 1 cannot happen: the run had 1 rank");
	child_release(&c);
	/* and where the ranks are known up front, before anything runs */
	const char *dir2 = fake("vigil-nccl", "nccl-single-gpu.jsonl", "touch \"$0.ran\"");
	struct strbuf marker = STRBUF_INIT;
	strbuf_addf(&marker, "%s/vigil-nccl.ran", dir2);
	const char *args3[] = { "net", "nccl", "--gpus", "0", "--fault-hang-rank", "1", NULL };
	run_net(&c, dir2, args3);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "cannot happen in a run of 1 rank (a collective needs two)");
	child_release(&c);
	const char *args4[] = { "net", "nccl", "--gpus", "0-3", "--fault-hang-rank", "4", NULL };
	run_net(&c, dir2, args4);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "cannot happen in a run of 4 ranks");
	child_release(&c);
	CHECK(access(marker.buf, F_OK) != 0);
	strbuf_release(&marker);
}

TEST(net_cli_nccl_hang_exit_1)
{
	const char *dir = fake("vigil-nccl", "nccl-hang.jsonl", NULL);
	struct child c;
	const char *args[] = { "net", "nccl", "--json", NULL };
	run_net(&c, dir, args);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_CONTAINS(json_get_string(v, "reason"), "did not finish");
	json_free(v);
	child_release(&c);
}

TEST(net_cli_pairs_matrix)
{
	const char *dir = fake("vigil-gpu", "pairs-weak-gpu-4.jsonl",
			       "case \"$*\" in 'pairs --bytes 256M --reps 3') ;; *) exit 9;; esac");
	struct child c;
	const char *args[] = { "net", "pairs", "--bytes", "256", "--reps", "3", NULL };
	run_net(&c, dir, args);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "from GPU 2         150.2     150.2         -     150.2");
	CHECK_CONTAINS(c.out.buf, "(pairs: GPU 2 (0000:00:08.0): every copy to and from it is slow");
	child_release(&c);
}

TEST(net_cli_no_helpers_and_usage)
{
	struct child c;
	const char *empty = test_tmpdir();
	const char *a1[] = { "net", "nccl", NULL };
	run_net(&c, empty, a1);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "need CUDA and NCCL");
	child_release(&c);
	const char *a2[] = { "net", "pairs", NULL };
	run_net(&c, empty, a2);
	CHECK_INT(c.exit_code, 3);
	child_release(&c);
	const char *a3[] = { "net", "nccl", "--op", "broadcast", NULL };
	test_run_vigil(&c, a3, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--op wants");
	child_release(&c);
	const char *a4[] = { "net", "nccl", "--sizes", "4G:1M", NULL };
	test_run_vigil(&c, a4, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a5[] = { "net", "pairs", "--op", "all_reduce", NULL };
	test_run_vigil(&c, a5, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "not an option of 'vigil net pairs'");
	child_release(&c);
	const char *a6[] = { "net", NULL };
	test_run_vigil(&c, a6, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	const char *a7[] = { "net", "--help", NULL };
	test_run_vigil(&c, a7, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "usage: vigil net nccl");
	child_release(&c);
}

TEST_TIMEOUT(net_cli_hanging_nccl_helper_deadline, 60)
{
	const char *dir = fake("vigil-nccl", "nccl-healthy-2proc.jsonl", "sleep 300");
	struct child c;
	const char *args[] = { "net", "nccl", "--deadline", "2", NULL };
	uint64_t t0 = mono_ms();
	run_net(&c, dir, args);
	CHECK(mono_ms() - t0 < 15000);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "did not finish within its deadline (2 s) before it could start");
	child_release(&c);
}

/* ---- vigil-nccl's files in a shared rendezvous directory (cuda/safe_file.cuh) ----
 * The helper runs as root and writes progress files, the NCCL id and the ranks' output in a
 * directory others may write to. Its writes need a GPU to be reached, so the one writer and
 * reader they all go through is compiled here, host-only, through cuda/safe_file_probe.cc, and
 * attacked with planted links and FIFOs. */

/* The probe, built in this test's directory with the system C++ compiler (skips without one). */
static const char *safe_file_probe(void)
{
	static char bin[4096];
	char want[4096];
	snprintf(want, sizeof(want), "%s/safe_file_probe", test_tmpdir());
	if (!strcmp(bin, want) && access(bin, X_OK) == 0)
		return bin; /* built already, for this test */
	struct strbuf src = STRBUF_INIT;
	test_src_path(&src, "cuda/safe_file_probe.cc");
	snprintf(bin, sizeof(bin), "%s", want);
	const char *cxx = getenv("CXX");
	const char *argv[] = {
		cxx && *cxx ? cxx : "c++", "-std=c++17", "-Wall", "-Wextra", "-Werror",
		"-DHX_SAFE_FILE_TEST",	   "-o",	 bin,	  src.buf,   NULL
	};
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 120000;
	c.merge_stderr = true;
	int r = child_run(&c, NULL);
	if (r < 0 || !c.exited || c.exit_code == 127)
		SKIP("no C++ compiler ('c++' or $CXX) to build cuda/safe_file_probe.cc");
	CHECK_MSG(c.exit_code == 0, "cuda/safe_file_probe.cc did not compile:\n%s", c.out.buf);
	child_release(&c);
	strbuf_release(&src);
	return bin;
}

/* Run the probe: op, path (under dir), text (NULL for read); names: its temporary names
 * ($HX_TEST_RANDOM); fsize: a file size cap, so a write fails midway. */
static void probe_run(struct child *c, const char *op, const char *dir, const char *rel,
		      const char *text, const char *names, const char *fsize)
{
	static char path[4096], env_names[256], env_fsize[64];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	snprintf(env_names, sizeof(env_names), "HX_TEST_RANDOM=%s", names ? names : "");
	snprintf(env_fsize, sizeof(env_fsize), "HX_PROBE_FSIZE=%s", fsize ? fsize : "");
	const char *argv[] = { safe_file_probe(), op, path, text, NULL };
	const char *env[] = { env_names, fsize ? env_fsize : NULL, NULL };
	child_init(c);
	c->argv = argv;
	c->env_add = env;
	c->timeout_ms = 20000; /* a FIFO that blocked the probe would end here, and fail */
	CHECK(child_run(c, NULL) == 0);
	CHECK_MSG(!c->timed_out, "the probe blocked: %s %s", op, path);
}

/* dir/rel's text ("(absent)" when there is none), read without following a link. */
static const char *text_of(const char *dir, const char *rel)
{
	static char buf[256];
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? "(absent)" : "(not readable)";
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* The names in dir, sorted, space-separated: nothing left behind, nothing made elsewhere. */
static const char *names_in(const char *dir)
{
	static char out[1024];
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
			if (out[0])
				strncat(out, " ", sizeof(out) - strlen(out) - 1);
			strncat(out, list[i]->d_name, sizeof(out) - strlen(out) - 1);
		}
		free(list[i]);
	}
	free(list);
	return out;
}

static void plant_link(const char *target, const char *dir, const char *rel)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	CHECK_MSG(symlink(target, path) == 0, "symlink %s: %s", path, strerror(errno));
}

TEST(net_nccl_rendezvous_write_never_follows_a_planted_link)
{
	const char *tmp = test_tmpdir();
	char share[2048], secret[2048], made[2048];
	struct child c;
	snprintf(share, sizeof(share), "%s/share", tmp);
	snprintf(secret, sizeof(secret), "%s/outside/secret", tmp);
	snprintf(made, sizeof(made), "%s/outside/made", tmp);
	test_mkdir(tmp, "share");
	test_write(tmp, "outside/secret", "keep\n");

	/* a link at the target itself: refused, said so, nothing written anywhere */
	plant_link(secret, share, "progress-0-1");
	probe_run(&c, "write", share, "progress-0-1", "1 0\n", NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf,
		       "/share/progress-0-1': it is a symbolic link, not a regular file");
	child_release(&c);
	CHECK_STR(text_of(tmp, "outside/secret"), "keep\n");
	CHECK_STR(names_in(share), "progress-0-1");

	/* links at the old fixed temporary name and at the next temporary name it will draw: the
	 * exclusive create skips the taken one and follows neither */
	char p[4096];
	snprintf(p, sizeof(p), "%s/progress-0-1", share);
	CHECK(unlink(p) == 0);
	plant_link(secret, share, "progress-0-1.tmp");
	plant_link(made, share, "progress-0-1.tmp.1111111111111111");
	probe_run(&c, "write", share, "progress-0-1", "1 0\n", "1111111111111111,2222222222222222",
		  NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	child_release(&c);
	struct stat st;
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0644);
	CHECK_STR(text_of(share, "progress-0-1"), "1 0\n");
	CHECK_STR(text_of(tmp, "outside/secret"), "keep\n");
	CHECK_STR(text_of(tmp, "outside/made"), "(absent)");
	CHECK_STR(names_in(share),
		  "progress-0-1 progress-0-1.tmp progress-0-1.tmp.1111111111111111");
	/* a regular file is replaced */
	probe_run(&c, "write", share, "progress-0-1", "2 2\n", NULL, NULL);
	CHECK_INT(c.exit_code, 0);
	child_release(&c);
	CHECK_STR(text_of(share, "progress-0-1"), "2 2\n");

	/* a FIFO or a directory at the target: refused, without blocking */
	snprintf(p, sizeof(p), "%s/nccl-id-0", share);
	CHECK(mkfifo(p, 0600) == 0);
	probe_run(&c, "write", share, "nccl-id-0", "id", NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "it is a FIFO, not a regular file");
	child_release(&c);
	test_mkdir(share, "dir");
	probe_run(&c, "write", share, "dir", "id", NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "it is a directory, not a regular file");
	child_release(&c);

	/* a write that fails midway (the file size cap): the old file stays, the temporary goes */
	test_write(share, "big", "old");
	probe_run(&c, "write", share, "big", "0123456789abcdef", "3333333333333333", "8");
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "cannot write '");
	child_release(&c);
	CHECK_STR(text_of(share, "big"), "old");
	CHECK_STR(text_of(share, "big.tmp.3333333333333333"), "(absent)");
	CHECK_STR(names_in(share), "big dir nccl-id-0 progress-0-1 progress-0-1.tmp "
				   "progress-0-1.tmp.1111111111111111");
}

TEST(net_nccl_rank_output_and_readers_refuse_links)
{
	const char *tmp = test_tmpdir();
	char share[2048], secret[2048], made[2048], p[4096];
	struct child c;
	snprintf(share, sizeof(share), "%s/share", tmp);
	snprintf(secret, sizeof(secret), "%s/outside/secret", tmp);
	snprintf(made, sizeof(made), "%s/outside/made", tmp);
	test_mkdir(tmp, "share");
	test_write(tmp, "outside/secret", "keep\n");

	/* a rank's output is created fresh: not through a link, live or dangling */
	plant_link(secret, share, "out-0.jsonl");
	probe_run(&c, "create", share, "out-0.jsonl", "{}\n", NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "out-0.jsonl': it exists already, as a symbolic link");
	child_release(&c);
	plant_link(made, share, "out-1.jsonl");
	probe_run(&c, "create", share, "out-1.jsonl", "{}\n", NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	child_release(&c);
	CHECK_STR(text_of(tmp, "outside/secret"), "keep\n");
	CHECK_STR(text_of(tmp, "outside/made"), "(absent)");
	probe_run(&c, "create", share, "out-2.jsonl", "{}\n", NULL, NULL);
	CHECK_INT(c.exit_code, 0);
	child_release(&c);
	CHECK_STR(text_of(share, "out-2.jsonl"), "{}\n");

	/* readers (the NCCL id, the other ranks' progress): a link is not read through, a FIFO
	 * does not block, an absent file is absent, a regular file is read */
	probe_run(&c, "read", share, "out-0.jsonl", NULL, NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "it is a symbolic link, not a regular file");
	CHECK_NOT_CONTAINS(c.out.buf, "keep");
	child_release(&c);
	snprintf(p, sizeof(p), "%s/progress-0-1", share);
	CHECK(mkfifo(p, 0600) == 0);
	probe_run(&c, "read", share, "progress-0-1", NULL, NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.err.buf, "it is a FIFO, not a regular file");
	child_release(&c);
	probe_run(&c, "read", share, "nccl-id-0", NULL, NULL, NULL);
	CHECK_INT(c.exit_code, 3);
	child_release(&c);
	probe_run(&c, "read", share, "out-2.jsonl", NULL, NULL, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_STR(c.out.buf, "{}\n");
	child_release(&c);
}

/* The run id is part of the rendezvous file names: the real helper (where nvcc built it) refuses
 * one that would put them elsewhere, from --run-id or from SLURM_JOB_ID, before any GPU work. */
TEST(net_nccl_helper_refuses_a_run_id_with_a_path)
{
	const char *b = getenv("VIGIL_BUILD");
	char bin[4096];
	snprintf(bin, sizeof(bin), "%s/vigil-nccl", b ? b : "");
	if (!b || access(bin, X_OK) != 0)
		SKIP("the CUDA helpers were not built (no nvcc)");
	const char *dir = test_tmpdir();
	const char *bad[] = { "../../etc/x", "a/b", ".hidden", "x\ny" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct child c;
		const char *argv[] = { bin, "--rank",	"0",	"--nranks", "2", "--rendezvous",
				       dir, "--run-id", bad[i], NULL };
		child_init(&c);
		c.argv = argv;
		c.timeout_ms = 30000;
		CHECK(child_run(&c, NULL) == 0 && c.exited);
		if (c.exit_code == 127)
			SKIP("vigil-nccl does not start here (its libraries are missing)");
		CHECK_MSG(c.exit_code == 2, "run id '%s': exit %d\n%s", bad[i], c.exit_code,
			  c.err.buf);
		CHECK_CONTAINS(c.err.buf, "the run id wants letters, digits");
		child_release(&c);
	}
	struct child c;
	const char *argv[] = { bin, "--rendezvous", dir, NULL };
	const char *env[] = { "SLURM_JOB_ID=../../../etc", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
			      "SLURM_NTASKS=2", NULL };
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 30000;
	CHECK(child_run(&c, NULL) == 0 && c.exited);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "not '../../../etc.0'");
	child_release(&c);
	CHECK_STR(names_in(dir), "");
}
