/*
 * test_hang_h200.c: 'vigil diagnose hang' on an attempt recorded on the lent H200 under vigil run
 * (bench/device-run-nccl.sh, 2026-12-05): PyTorch 2.11 DDP on NCCL 2.28.9, two ranks sharing
 * the GPU as two NCCL hosts, vigil's flight recorder loaded by NCCL, vigil stacks' answer kept
 * as vigil run keeps it. tests/data/hang/h200-nccl-ddp/:
 *   stopped/        rank 1 stopped itself with SIGSTOP before its loss all_reduce, while DDP's
 *                   gradient all_reduce (#134) was in flight: every rank inside #134, none
 *                   finishing (a stopped process's NCCL proxy makes no progress); vigil stacks
 *                   saw rank 1 in T in 20 of 20 samples
 *   never-entered/  rank 1 slept before its loss all_reduce (#135), which rank 0 entered
 * The rings are gzip'd (4 MiB each, nearly all zero); the paths in the stacks answers and the
 * logs were rewritten, nothing else.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"
#include "../../src/lib/run.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

/* gunzip src (in the source tree) to dst through Debian's gzip */
static void gunzip_to(const char *src, const char *dst)
{
	const char *argv[] = { "gzip", "-dc", src, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 60000;
	c.out_cap = 16u << 20;
	CHECK_INT(child_run(&c, NULL), 0);
	CHECK(c.exited && c.exit_code == 0);
	CHECK_INT(write_file(dst, c.out.buf, c.out.len, false, NULL), 0);
	child_release(&c);
}

/* The recorded attempt `name` as vigil run leaves it: RUN/attempt-0/{nccl/RING, stacks-n1.json
 * (when stacks), rank-*.out}; the run directory into run. */
static void lay_out(const char *name, bool stacks, struct strbuf *run)
{
	struct strbuf src = STRBUF_INIT, dst = STRBUF_INIT, raw = STRBUF_INIT;
	strbuf_addf(run, "%s/run-%s-%d", test_tmpdir(), name, stacks);
	strbuf_addf(&dst, "run-%s-%d/attempt-0/nccl", name, stacks);
	test_mkdir(test_tmpdir(), dst.buf);
	test_src_path(&src, "tests/data/hang/h200-nccl-ddp/");
	strbuf_addstr(&src, name);
	DIR *d = opendir(src.buf);
	CHECK_MSG(d != NULL, "no %s", src.buf);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		struct strbuf from = STRBUF_INIT, to = STRBUF_INIT;
		strbuf_addf(&from, "%s/%s", src.buf, e->d_name);
		size_t n = strlen(e->d_name);
		if (n > 8 && !strcmp(e->d_name + n - 8, ".ring.gz")) {
			strbuf_addf(&to, "%s/attempt-0/nccl/%.*s", run->buf, (int)(n - 3), e->d_name);
			gunzip_to(from.buf, to.buf);
		} else if (stacks || strncmp(e->d_name, "stacks-", 7)) {
			strbuf_addf(&to, "%s/attempt-0/%s", run->buf, e->d_name);
			strbuf_reset(&raw);
			CHECK(read_file_bounded(from.buf, &raw, 1 << 20, NULL) == READ_OK);
			CHECK_INT(write_file(to.buf, raw.buf, raw.len, false, NULL), 0);
		}
		strbuf_release(&from);
		strbuf_release(&to);
	}
	if (d)
		closedir(d);
	strbuf_release(&src);
	strbuf_release(&dst);
	strbuf_release(&raw);
}

static struct json_value *diagnose(const char *run, int want_exit)
{
	const char *args[] = { "diagnose", "hang", run, "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, want_exit);
	struct json_value *v = test_parse_json(&c);
	child_release(&c);
	return v;
}

/* Every rank inside #134 and none finishing: with the stacks kept beside the attempt, the
 * stopped rank 1 is the culprit and the fabric is not blamed; without them the recorder
 * alone says "stuck inside NCCL", as it did live. */
TEST(hang_h200_a_stopped_rank_inside_the_collective_is_the_culprit)
{
	struct strbuf run = STRBUF_INIT;
	lay_out("stopped", true, &run);
	struct json_value *v = diagnose(run.buf, 1);
	CHECK_STR(json_get_string(v, "source"), "recorder");
	const struct json_value *r = json_get(v, "recorder");
	CHECK_STR(json_get_string(r, "state"), "stuck_inside");
	double d;
	CHECK(json_get_number(json_path(r, "culprits.0"), "rank", &d) && d == 1);
	CHECK(json_get_number(json_path(r, "culprits.0"), "pid", &d) && d == 2059);
	CHECK_STR(json_get_string(json_path(r, "culprits.0"), "role"), "stopped");
	CHECK(json_path(r, "culprits.1") == NULL);
	const char *s = json_get_string(v, "summary");
	CHECK_CONTAINS(s, "rank 1 (host vm, pid 2059) is stopped (T in most of vigil stacks' "
			  "samples) inside AllReduce #134");
	CHECK_CONTAINS(s, "every rank entered it and none finished it");
	CHECK_CONTAINS(s, "the fabric is not implicated");
	CHECK(!strstr(s, "Check the fabric"));
	json_free(v);

	strbuf_reset(&run);
	lay_out("stopped", false, &run);
	v = diagnose(run.buf, 1);
	r = json_get(v, "recorder");
	CHECK_STR(json_get_string(r, "state"), "stuck_inside");
	CHECK(json_path(r, "culprits.0") == NULL);
	CHECK_CONTAINS(json_get_string(v, "summary"), "stuck inside NCCL");
	json_free(v);
	strbuf_release(&run);
}

/* A stacks answer vigil did not write (owned by another user than the directory's and ours)
 * is passed over: the recorder's verdict stands alone. */
TEST(hang_h200_a_planted_stacks_answer_is_passed_over)
{
	if (geteuid() != 0)
		SKIP("needs root to give the file to another user");
	struct strbuf run = STRBUF_INIT, f = STRBUF_INIT;
	lay_out("stopped", true, &run);
	strbuf_addf(&f, "%s/attempt-0/stacks-n1.json", run.buf);
	CHECK_INT(chown(f.buf, 65534, 65534), 0);
	struct json_value *v = diagnose(run.buf, 1);
	CHECK(json_path(v, "recorder.culprits.0") == NULL);
	CHECK_CONTAINS(json_get_string(v, "summary"), "stuck inside NCCL");
	json_free(v);
	strbuf_release(&run);
	strbuf_release(&f);
}

/* The rank that slept before its loss all_reduce: the recorder names it (never entered #135,
 * which rank 0 entered), and the stacks (both ranks alive, rank 1 asleep) change nothing. */
TEST(hang_h200_the_rank_that_never_entered_is_named)
{
	struct strbuf run = STRBUF_INIT;
	lay_out("never-entered", true, &run);
	struct json_value *v = diagnose(run.buf, 1);
	const struct json_value *r = json_get(v, "recorder");
	CHECK_STR(json_get_string(r, "state"), "never_entered");
	double d;
	CHECK(json_get_number(json_path(r, "culprits.0"), "rank", &d) && d == 1);
	CHECK_STR(json_get_string(json_path(r, "culprits.0"), "role"), "never_entered");
	CHECK(json_path(r, "culprits.1") == NULL);
	CHECK_CONTAINS(json_get_string(v, "summary"), "never entered AllReduce #135");
	json_free(v);
	strbuf_release(&run);
}
