/*
 * test_diagnose_hanglogs.c: 'vigil diagnose hang' from logs alone (src/diagnose/hanglogs.c,
 * src/cmd/diagnose_hanglogs.c): the rank that never entered the collective named from the
 * watchdog lines of the others and its silence, every PyTorch shape of those lines, srun
 * --label files, truncated, CRLF and binary input, a 200 MB stream in bounded memory, NCCL WARN
 * lines, and "unknown" when the logs cannot tell. Asserted through the JSON and text the
 * command prints (hlog_write_json / hlog_write_text).
 */
#include "../harness.h"
#include "../../src/cmd/diagnose_hanglogs.h"

#include <sys/stat.h>
#include <unistd.h>

/* The JSON of paths, parsed (and the text in *text when given). */
static struct json_value *hang_json(char **paths, int n, struct strbuf *text, int *ret)
{
	struct hlog h;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	int r = hang_logs_from_paths(paths, n, false, &h, &err);
	if (ret)
		*ret = r;
	hlog_write_json(&h, &out);
	if (text)
		hlog_write_text(&h, text);
	struct json_value *v = json_parse(out.buf, out.len, &err);
	CHECK_MSG(v, "bad JSON: %s\n%s", err.buf, out.buf);
	hlog_release(&h);
	strbuf_release(&out);
	strbuf_release(&err);
	return v;
}

/* The same from bytes fed directly, chunk bytes at a time (0: whole). */
static struct json_value *feed_json(const char *name, const char *data, size_t len, size_t chunk,
				    struct strbuf *text)
{
	struct hlog h;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	hlog_init(&h);
	hlog_file_begin(&h, name, "", -1);
	if (!chunk)
		chunk = len ? len : 1;
	for (size_t off = 0; off < len; off += chunk)
		hlog_feed(&h, data + off, len - off < chunk ? len - off : chunk);
	hlog_file_end(&h, NULL);
	hlog_finish(&h);
	hlog_write_json(&h, &out);
	if (text)
		hlog_write_text(&h, text);
	struct json_value *v = json_parse(out.buf, out.len, &err);
	CHECK_MSG(v, "bad JSON: %s\n%s", err.buf, out.buf);
	hlog_release(&h);
	strbuf_release(&out);
	strbuf_release(&err);
	return v;
}

static const struct json_value *group0(const struct json_value *v)
{
	const struct json_value *g = json_get(v, "groups");
	CHECK(g && g->type == JSON_ARRAY && g->nr > 0);
	return g->items[0];
}

static long long num(const struct json_value *o, const char *key)
{
	double d = -12345;
	CHECK_MSG(json_get_number(o, key, &d), "no number '%s'", key);
	return (long long)d;
}

static const char *str(const struct json_value *o, const char *key)
{
	const struct json_value *s = json_get(o, key);
	return s && s->type == JSON_STRING ? s->string : NULL;
}

TEST(hang_logs_eight_ranks_rank5_never_entered_and_stopped_first)
{
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT;
	test_src_path(&p, "tests/data/hang/ddp8-rank5-stopped");
	char *paths[] = { p.buf };
	int ret;
	struct json_value *v = hang_json(paths, 1, &text, &ret);
	CHECK_INT(ret, 0);
	CHECK_STR(str(v, "verdict"), "culprit");
	const struct json_value *g = group0(v);
	CHECK_STR(str(g, "group"), "0(default_pg)");
	CHECK_INT(num(g, "seq"), 49);
	CHECK_STR(str(g, "op"), "ALLREDUCE");
	CHECK_INT(num(g, "numel_in"), 26214400);
	CHECK_INT(num(g, "waited_ms"), 600081);
	const struct json_value *vic = json_get(g, "victims");
	CHECK_INT(vic->nr, 7);
	for (size_t i = 0; i < vic->nr; i++)
		CHECK(vic->items[i]->number != 5);
	const struct json_value *c = json_get(g, "culprits");
	CHECK_INT(c->nr, 1);
	CHECK_INT(num(c->items[0], "rank"), 5);
	CHECK_STR(str(c->items[0], "why"), "silent");
	CHECK(num(c->items[0], "behind_s") > 500);
	/* its file is the output that stopped first */
	const struct json_value *s = json_get(v, "silent");
	CHECK(s->nr >= 1);
	CHECK_INT(num(s->items[0], "rank"), 5);
	CHECK_MSG(strstr(text.buf, "rank 5 printed no timeout and its output stopped at "
				   "2026-12-01T04:59:36.900Z"), "%s", text.buf);
	CHECK_MSG(strstr(text.buf, "look at rank 5 first"), "%s", text.buf);
	json_free(v);
	strbuf_release(&p);
	strbuf_release(&text);
}

/* The same run where rank 5 answered the dump signal: its "last enqueued" names it. */
TEST(hang_logs_lowest_last_enqueued_is_the_culprit)
{
	const char *dir = test_tmpdir();
	struct strbuf d = STRBUF_INIT, line = STRBUF_INIT;
	strbuf_addf(&d, "%s/a/attempt-1", dir);
	for (int r = 0; r < 4; r++) {
		strbuf_reset(&line);
		if (r != 2)
			strbuf_addf(&line, "2026-12-01T05:09:37.200Z [rank%d]:[E1201 05:09:37.1 1 x.cpp:1] "
					   "[Rank %d] Watchdog caught collective operation timeout: "
					   "WorkNCCL(SeqNum=12, OpType=ALLGATHER, NumelIn=8, NumelOut=32, "
					   "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n",
				    r, r);
		else
			strbuf_addf(&line, "2026-12-01T05:09:38.000Z [rank2]:[E1201 05:09:38.0 1 x.cpp:1] "
					   "[PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal due "
					   "to a collective timeout from rank 0 and we will try our best to "
					   "dump the debug info. Last enqueued NCCL work: 11, last completed "
					   "NCCL work: 11.\n");
		char rel[64];
		snprintf(rel, sizeof(rel), "a/attempt-1/rank-%d.err", r);
		test_write(dir, rel, line.buf);
	}
	strbuf_reset(&d);
	strbuf_addf(&d, "%s/a", dir);
	char *paths[] = { d.buf };
	struct strbuf text = STRBUF_INIT;
	struct json_value *v = hang_json(paths, 1, &text, NULL);
	CHECK_STR(str(v, "verdict"), "culprit");
	const struct json_value *c = json_get(group0(v), "culprits");
	CHECK_INT(c->nr, 1);
	CHECK_INT(num(c->items[0], "rank"), 2);
	CHECK_STR(str(c->items[0], "why"), "never_entered");
	CHECK_INT(num(c->items[0], "last_enqueued"), 11);
	CHECK_MSG(strstr(text.buf, "rank 2 never entered it (last enqueued work 11"), "%s", text.buf);
	json_free(v);
	strbuf_release(&d);
	strbuf_release(&line);
	strbuf_release(&text);
}

TEST(hang_logs_each_pytorch_shape_is_read)
{
	static const struct {
		const char *file, *group;
	} shapes[] = {
		{ "torch113.log", NULL },
		{ "torch22.log", "0" },
		{ "torch23.log", "0(default_pg)" },
		{ "torch24.log", "0(default_pg)" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(shapes); i++) {
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "tests/data/hang/shapes/%s", shapes[i].file);
		struct strbuf full = STRBUF_INIT;
		test_src_path(&full, p.buf);
		char *paths[] = { full.buf };
		struct json_value *v = hang_json(paths, 1, NULL, NULL);
		const struct json_value *g = group0(v);
		CHECK_MSG(json_get(v, "groups")->nr == 1, "%s: one group", shapes[i].file);
		CHECK_MSG(num(g, "seq") == 7, "%s", shapes[i].file);
		CHECK_STR(str(g, "op"), "BROADCAST");
		CHECK_INT(num(g, "waited_ms"), 1800529);
		CHECK_INT(num(g, "timeout_ms"), 1800000);
		if (shapes[i].group)
			CHECK_STR(str(g, "group"), shapes[i].group);
		else
			CHECK(json_get(g, "group")->type == JSON_NULL);
		const struct json_value *vic = json_get(g, "victims");
		CHECK_MSG(vic->nr == 1 && vic->items[0]->number == 2, "%s: victim rank 2", shapes[i].file);
		/* ranks 0 and 1 have no output at all: suspects, not proven culprits */
		CHECK_STR(str(v, "verdict"), "suspects");
		const struct json_value *su = json_get(g, "suspects");
		CHECK_INT(su->nr, 2);
		CHECK_STR(str(su->items[0], "why"), "no_output");
		CHECK_INT(num(su->items[1], "rank"), 1);
		json_free(v);
		strbuf_release(&p);
		strbuf_release(&full);
	}
}

/* srun --label output of 4 ranks in one file, rank 3 stops 5 minutes before the others. */
TEST(hang_logs_interleaved_srun_label_file)
{
	struct strbuf in = STRBUF_INIT, text = STRBUF_INIT;
	for (int m = 0; m < 10; m++)
		for (int r = 0; r < 4; r++)
			if (r != 3 || m < 5)
				strbuf_addf(&in, "2026-12-01T05:%02d:00.000Z %d: step %d\n", m, r, m);
	for (int r = 0; r < 3; r++)
		strbuf_addf(&in, "2026-12-01T05:10:00.%03dZ %d: [rank%d]:[E1201 05:10:00.1 9 P.cpp:1] "
				 "[Rank %d] Watchdog caught collective operation timeout: "
				 "WorkNCCL(SeqNum=300, OpType=REDUCE_SCATTER, NumelIn=64, NumelOut=16, "
				 "Timeout(ms)=300000) ran for 300050 milliseconds before timing out.\n",
			    r, r, r, r);
	struct json_value *v = feed_json("train.log", in.buf, in.len, 0, &text);
	CHECK_STR(str(v, "verdict"), "culprit");
	const struct json_value *g = group0(v);
	CHECK_INT(json_get(g, "victims")->nr, 3);
	const struct json_value *c = json_get(g, "culprits");
	CHECK_INT(c->nr, 1);
	CHECK_INT(num(c->items[0], "rank"), 3);
	CHECK_STR(str(c->items[0], "why"), "silent");
	CHECK_STR(str(c->items[0], "last_time"), "2026-12-01T05:04:00.000Z");
	json_free(v);
	/* the same bytes in chunks of 7 give the same verdict */
	v = feed_json("train.log", in.buf, in.len, 7, NULL);
	CHECK_INT(num(json_get(group0(v), "culprits")->items[0], "rank"), 3);
	json_free(v);
	strbuf_release(&in);
	strbuf_release(&text);
}

/* CRLF, NULs and binary garbage, a 20 KiB line, and a watchdog line cut off at the end. */
TEST(hang_logs_crlf_binary_long_lines_and_a_truncated_file)
{
	struct strbuf in = STRBUF_INIT;
	strbuf_addstr(&in, "2026-12-01T05:00:00.000Z 1: hello\r\n");
	for (int i = 0; i < 300; i++)
		strbuf_addch(&in, (char)(i * 37 % 256));
	strbuf_addch(&in, '\n');
	/* a stamp-like prefix that runs past the NCCL WARN (found by the fuzzer: read overflow) */
	strbuf_addstr(&in, "2026-12-01T04:50226- NCCL WARN ed w[rank2]\n");
	strbuf_add(&in, "\0\0\0\xff\xfe", 5);
	strbuf_addch(&in, '\n');
	for (int i = 0; i < 20000; i++)
		strbuf_addch(&in, 'x');
	strbuf_addstr(&in, " Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)\n");
	strbuf_addstr(&in, "2026-12-01T05:10:00.000Z 0: [Rank 0] Watchdog caught collective operation "
			   "timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=5, NumelOut=5, "
			   "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.\r\n");
	/* the file ends inside rank 1's line: what is there is still read */
	strbuf_addstr(&in, "2026-12-01T05:10:00.500Z 1: [Rank 1] Watchdog caught collective operation "
			   "timeout: WorkNCCL(SeqNum=77, OpType=ALLRED");
	for (size_t chunk = 0; chunk < 5; chunk += 4) {
		struct json_value *v = feed_json("x.log", in.buf, in.len, chunk, NULL);
		const struct json_value *g = group0(v);
		CHECK_INT(num(g, "seq"), 77);
		CHECK_STR(str(g, "op"), "ALLREDUCE");
		CHECK_INT(json_get(g, "victims")->nr, 2);
		const struct json_value *f = json_get(v, "files")->items[0];
		CHECK_INT(num(f, "cut_lines"), 1);
		json_free(v);
	}
	strbuf_release(&in);
}

TEST_TIMEOUT(hang_logs_200_megabytes_in_bounded_memory, 300)
{
	struct hlog h;
	char chunk[1 << 16];
	size_t fill = 0;
	uint64_t total = 0;
	hlog_init(&h);
	hlog_file_begin(&h, "attempt-1/rank-4.err", "", 4);
	for (long i = 0; total < 200ull << 20; i++) {
		char l[160];
		int n = snprintf(l, sizeof(l),
				 "2026-12-01T%02ld:%02ld:%02ld.000Z step %ld loss 1.234 lr 3e-4 "
				 "tokens/s 123456 [rank4] nothing to see\n",
				 (i / 3600) % 24, (i / 60) % 60, i % 60, i);
		if (fill + (size_t)n > sizeof(chunk)) {
			hlog_feed(&h, chunk, fill);
			total += fill;
			fill = 0;
		}
		memcpy(chunk + fill, l, (size_t)n);
		fill += (size_t)n;
	}
	hlog_feed(&h, chunk, fill);
	const char *wd = "2026-12-01T23:59:59.000Z [rank4]:[E1201 23:59:59.0 1 P.cpp:1] [Rank 4] "
			 "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=999, "
			 "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600000 "
			 "milliseconds before timing out.\n";
	hlog_feed(&h, wd, strlen(wd));
	hlog_file_end(&h, NULL);
	hlog_finish(&h);
	/* what is held does not grow with the bytes: one file, one stream, one record */
	CHECK(h.files[0].bytes >= 200ull << 20);
	CHECK_INT(h.nr_streams, 1);
	CHECK_INT(h.nr_recs, 1);
	CHECK(h.alloc_streams < 64 && h.alloc_recs < 64 && h.alloc_smap < 64);
	CHECK_INT(h.groups[h.order_groups[0]].seq, 999);
	hlog_release(&h);
}

TEST(hang_logs_nothing_found_is_unknown_never_no_hang)
{
	const char *dir = test_tmpdir();
	test_write(dir, "plain/n1.log", "2026-12-01T05:00:00.000Z step 1\n2026-12-01T05:00:10.000Z step 2\n");
	test_write(dir, "plain/n2.log", "2026-12-01T05:00:00.000Z step 1\n2026-12-01T05:00:10.000Z step 2\n");
	test_write(dir, "plain/empty.log", "");
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT;
	strbuf_addf(&p, "%s/plain", dir);
	char *paths[] = { p.buf };
	int ret;
	struct json_value *v = hang_json(paths, 1, &text, &ret);
	CHECK_INT(ret, 0);
	CHECK_STR(str(v, "verdict"), "unknown");
	CHECK_INT(json_get(v, "groups")->nr, 0);
	CHECK_MSG(strstr(str(v, "summary"), "cannot tell"), "%s", str(v, "summary"));
	/* an unknown carries an action */
	CHECK_CONTAINS(str(v, "action"), "vigil stacks");
	CHECK_CONTAINS(text.buf, "next: take every rank's stacks");
	CHECK_INT(json_get(v, "files")->nr, 3);
	json_free(v);
	/* nothing readable at all: an error, and still unknown */
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/missing", dir);
	struct strbuf err = STRBUF_INIT;
	struct hlog h;
	CHECK_INT(hang_logs_from_paths(paths, 1, false, &h, &err), -1);
	CHECK_MSG(strstr(err.buf, "cannot read '"), "%s", err.buf);
	CHECK(h.verdict == HLOG_UNKNOWN);
	hlog_release(&h);
	strbuf_release(&err);
	strbuf_release(&p);
	strbuf_release(&text);
}

/* No watchdog line: the host whose output stopped 10 minutes before the others is named. */
TEST(hang_logs_silent_host_without_a_watchdog)
{
	const char *dir = test_tmpdir();
	test_write(dir, "hosts/gpu-a.log", "2026-12-01T05:00:00.000Z step 1\n2026-12-01T05:20:00.000Z step 9\n");
	test_write(dir, "hosts/gpu-b.log", "2026-12-01T05:00:00.000Z step 1\n2026-12-01T05:20:01.000Z step 9\n");
	test_write(dir, "hosts/gpu-c.log", "2026-12-01T05:00:00.000Z step 1\n2026-12-01T05:10:00.000Z step 5\n");
	test_write(dir, "hosts/gpu-d.log", "2026-12-01T05:00:00.000Z step 1\n2026-12-01T05:20:02.000Z step 9\n");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/hosts", dir);
	char *paths[] = { p.buf };
	struct json_value *v = hang_json(paths, 1, NULL, NULL);
	CHECK_STR(str(v, "verdict"), "silent");
	const struct json_value *s = json_get(v, "silent");
	CHECK_INT(s->nr, 1);
	CHECK_STR(str(s->items[0], "host"), "gpu-c");
	CHECK_MSG(strstr(str(v, "summary"), "host gpu-c"), "%s", str(v, "summary"));
	json_free(v);
	/* when most outputs stop early (only rank 0 logs steps), silence names no one */
	test_write(dir, "quiet/gpu-b.log", "2026-12-01T05:00:00.000Z up\n");
	test_write(dir, "quiet/gpu-c.log", "2026-12-01T05:00:00.000Z up\n");
	test_write(dir, "quiet/gpu-a.log", "2026-12-01T05:00:00.000Z up\n2026-12-01T05:20:00.000Z step 9\n");
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/quiet", dir);
	v = hang_json(paths, 1, NULL, NULL);
	CHECK_STR(str(v, "verdict"), "unknown");
	CHECK(json_get(v, "silent_inconclusive")->boolean);
	json_free(v);
	strbuf_release(&p);
}

TEST(hang_logs_nccl_warn_lines_first_in_time_named)
{
	const char *in =
		"2026-12-01T05:00:05.000Z n7:1234:1300 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.9<58620> with error 12, opcode 0, len 0, vendor err 129\n"
		"2026-12-01T05:00:01.000Z n2:99:100 [0] NCCL WARN NET/Plugin : No plugin found (libnccl-net.so)\n"
		"2026-12-01T05:00:09.000Z [rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.21.5\n";
	struct json_value *v = feed_json("n7.log", in, strlen(in), 0, NULL);
	const struct json_value *n = json_get(v, "nccl");
	CHECK_INT(num(n, "warnings"), 1); /* the plugin warning every healthy run prints is not one */
	CHECK_INT(num(n, "errors"), 1);
	const struct json_value *f = json_get(n, "first");
	CHECK_STR(str(f, "kind"), "warn");
	CHECK_STR(str(f, "host"), "n7");
	CHECK_STR(str(f, "time"), "2026-12-01T05:00:05.000Z");
	CHECK_STR(str(v, "verdict"), "unknown");
	CHECK_MSG(strstr(str(v, "summary"), "NCCL: 1 WARN and 1 error lines; the first on n7"), "%s",
		  str(v, "summary"));
	json_free(v);
}

/* A sub-group's timeout with TORCH_NCCL_DESYNC_DEBUG's report naming the lagging rank. */
TEST(hang_logs_desync_report_and_subgroups)
{
	struct strbuf in = STRBUF_INIT;
	for (int r = 0; r < 2; r++)
		strbuf_addf(&in, "[rank%d]:[E1201 05:10:00.0 9 P.cpp:1] [PG ID 3 PG GUID 7(TP) Rank %d] "
				 "Process group watchdog thread terminated with exception: [Rank %d] "
				 "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=40, "
				 "OpType=_ALLGATHER_BASE, NumelIn=10, NumelOut=20, Timeout(ms)=600000) ran for "
				 "600002 milliseconds before timing out.\n"
				 "\t - [%d] Timeout at collective: _ALLGATHER_BASE, #40\n"
				 "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused "
				 "the desync are:\n"
				 "\t   - [0, 1] joined but didn't finish collective #40 (count from 1)\n"
				 "\t     [2] finished collective #39, but didn't join collective #40 (count from 1)\n",
			    r * 4, r, r, r);
	struct strbuf text = STRBUF_INIT;
	struct json_value *v = feed_json("train.log", in.buf, in.len, 3, &text);
	CHECK_STR(str(v, "verdict"), "culprit");
	const struct json_value *g = group0(v);
	CHECK_STR(str(g, "group"), "7(TP)");
	CHECK_INT(num(g, "seq"), 40);
	const struct json_value *vic = json_get(g, "victims");
	CHECK_INT(vic->nr, 2); /* global ranks 0 and 4 */
	CHECK_INT(vic->items[1]->number, 4);
	const struct json_value *c = json_get(g, "culprits");
	CHECK_INT(c->nr, 1);
	CHECK_STR(str(c->items[0], "why"), "desync_report");
	CHECK_INT(num(c->items[0], "group_rank"), 2);
	CHECK_MSG(strstr(text.buf, "rank 2 of process group 7(TP)"), "%s", text.buf);
	json_free(v);
	strbuf_release(&in);
	strbuf_release(&text);
}

/* A FIFO and a link planted in a run directory are refused, not waited on or followed. */
TEST(hang_logs_refuses_fifos_and_planted_links)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT, t = STRBUF_INIT;
	test_write(dir, "secret", "[Rank 9] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)\n");
	test_write(dir, "run/attempt-1/rank-0.err",
		   "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)\n");
	strbuf_addf(&p, "%s/run/attempt-1/rank-1.err", dir);
	CHECK(mkfifo(p.buf, 0600) == 0);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/run/attempt-1/rank-2.err", dir);
	strbuf_addf(&t, "%s/secret", dir);
	CHECK(symlink(t.buf, p.buf) == 0);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/run", dir);
	char *paths[] = { p.buf };
	struct strbuf text = STRBUF_INIT;
	struct json_value *v = hang_json(paths, 1, &text, NULL);
	CHECK_INT(num(v, "unreadable"), 2);
	const struct json_value *vic = json_get(group0(v), "victims");
	CHECK_INT(vic->nr, 1);
	CHECK_INT(vic->items[0]->number, 0);
	CHECK_MSG(strstr(text.buf, "not a regular file"), "%s", text.buf);
	CHECK_CONTAINS(text.buf, "its ranks are not judged");
	CHECK_MSG(strstr(text.buf, "symbolic link"), "%s", text.buf);
	json_free(v);
	strbuf_release(&p);
	strbuf_release(&t);
	strbuf_release(&text);
}

/* "[PG Rank 3]": the " Rank " of the prefix begins inside "[PG " itself (found by the fuzzer:
 * a negative length into memmem); the line is read, the group without a name, rank 3 kept. */
TEST(hang_logs_pg_prefix_without_a_name)
{
	static const char line[] =
		"[rank3]:[E1201 05:10:12.345678 123 ProcessGroupNCCL.cpp:2303] [PG Rank 3]  failure "
		"detected by watchdog at work sequence id: 55 PG status: last enqueued work: 55, "
		"last completed work: 54\n";
	struct json_value *v = feed_json("rank-3.err", line, sizeof(line) - 1, 7, NULL);
	CHECK(v != NULL);
	json_free(v);
}

/* ---- through the binary: 'vigil diagnose hang --json DIR|FILE' (issue 18) ---- */

/* Run the binary on a fixture; its JSON (the "logs" half in *logs) and the text in *text. */
static struct json_value *hang_cli(const char *fixture, const struct json_value **logs,
				   struct strbuf *text)
{
	struct strbuf p = STRBUF_INIT;
	test_src_path(&p, fixture);
	const char *jargs[] = { "diagnose", "hang", "--json", p.buf, NULL };
	const char *targs[] = { "diagnose", "hang", p.buf, NULL };
	struct child c;
	test_run_vigil(&c, jargs, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d; stdout:\n%s\nstderr:\n%s", c.exit_code, c.out.buf,
		  c.err.buf);
	struct json_value *v = test_parse_json(&c);
	child_release(&c);
	CHECK_STR(json_get_string(v, "source"), "logs");
	*logs = json_get(v, "logs");
	CHECK(*logs && (*logs)->type == JSON_OBJECT);
	test_run_vigil(&c, targs, NULL);
	CHECK_INT(c.exit_code, 1);
	strbuf_add(text, c.out.buf, c.out.len);
	child_release(&c);
	strbuf_release(&p);
	return v;
}

static bool has_rank(const struct json_value *arr, long r)
{
	for (size_t i = 0; arr && i < arr->nr; i++)
		if (arr->items[i]->type == JSON_NUMBER && (long)arr->items[i]->number == r)
			return true;
	return false;
}

/*
 * PyTorch 2.5+ with TORCH_NCCL_DESYNC_DEBUG: ranks 0-2 time out at the watchdog's SeqNum 315,
 * and the report, counting its own way, says rank 3 "finished collective #182, but didn't join
 * collective #183". The group is "PG ID 1 PG GUID 1". The old code tied the report to the
 * watchdog line's record only, lost it when that record merged into the named group, and said
 * "inside the collective"; PyTorch's named rank is the culprit, in the report's numbering.
 */
TEST(hang_cli_desync_report_names_the_rank_in_its_own_count)
{
	struct strbuf text = STRBUF_INIT;
	const struct json_value *logs;
	struct json_value *v = hang_cli("tests/data/hang/desync-own-count", &logs, &text);
	CHECK_STR(json_get_string(logs, "verdict"), "culprit");
	const struct json_value *g = json_path(logs, "groups.0");
	CHECK(g);
	CHECK_STR(json_get_string(g, "group"), "1");
	CHECK_INT(num(g, "seq"), 315);
	CHECK(!json_get(g, "inside_collective")->boolean);
	const struct json_value *c = json_get(g, "culprits");
	CHECK(c && c->nr >= 1);
	CHECK_INT(num(c->items[0], "rank"), 3);
	CHECK_STR(json_get_string(c->items[0], "why"), "desync_report");
	CHECK_INT(num(c->items[0], "report_seq"), 182);
	CHECK_INT(num(c->items[0], "report_next"), 183);
	CHECK_STR(json_get_string(c->items[0], "report"), "finished_not_joined");
	CHECK_CONTAINS(text.buf, "rank 3");
	CHECK_CONTAINS(text.buf, "finished collective #182 but did not join #183");
	CHECK_CONTAINS(text.buf, "look at rank 3 first");
	CHECK_MSG(!strstr(text.buf, "inside the collective"), "%s", text.buf);
	json_free(v);
	strbuf_release(&text);
}

/*
 * PyTorch 2.3, one file: eight ranks time out in one collective of "PG 1" (same SeqNum, OpType
 * and element counts); only ranks 0, 3 and 4 printed their "[PG 1 Rank R]" status line. The
 * old code made two groups and listed 0, 3 and 4 as suspects of the unnamed one ("no output").
 * One collective is one group, all eight its victims, and no rank that printed is a suspect.
 */
TEST(hang_cli_one_collective_is_one_group)
{
	struct strbuf text = STRBUF_INIT;
	const struct json_value *logs;
	struct json_value *v = hang_cli("tests/data/hang/one-collective-split/train.log", &logs, &text);
	const struct json_value *gs = json_get(logs, "groups");
	CHECK_MSG(gs && gs->nr == 1, "%zu groups:\n%s", gs ? gs->nr : 0, text.buf);
	const struct json_value *g = gs->items[0];
	CHECK_STR(json_get_string(g, "group"), "1");
	CHECK_INT(num(g, "seq"), 4420);
	CHECK_INT(json_get(g, "victims")->nr, 8);
	for (long r = 0; r < 8; r++)
		CHECK_MSG(has_rank(json_get(g, "victims"), r), "rank %ld not a victim", r);
	CHECK_INT(json_get(g, "suspects")->nr, 0);
	CHECK_INT(json_get(g, "culprits")->nr, 0);
	CHECK_STR(json_get_string(logs, "verdict"), "inside_collective");
	CHECK_MSG(!strstr(text.buf, "printed no timeout") && !strstr(text.buf, "silent") &&
		  !strstr(text.buf, "no output"), "%s", text.buf);
	json_free(v);
	strbuf_release(&text);
}

/*
 * PyTorch 1.13, one file, no group names and no rank labels: the data-parallel group times out
 * at SeqNum 3307 (its ranks 0, 1, 3), the tensor-parallel group at 84120 (its rank 0). The old
 * code merged them into one group, overwrote one "[Rank 0]" with the other and dropped it. Two
 * groups, each with its own victims; rank 2 of the first, which printed nothing, a suspect.
 */
TEST(hang_cli_torch1x_groups_far_apart_stay_apart)
{
	struct strbuf text = STRBUF_INIT;
	const struct json_value *logs;
	struct json_value *v = hang_cli("tests/data/hang/torch1x-two-groups/train.log", &logs, &text);
	const struct json_value *gs = json_get(logs, "groups");
	CHECK_MSG(gs && gs->nr == 2, "%zu groups:\n%s", gs ? gs->nr : 0, text.buf);
	const struct json_value *dp = NULL, *tp = NULL;
	for (size_t i = 0; i < gs->nr; i++) {
		long long s = num(gs->items[i], "seq");
		if (s == 3307)
			dp = gs->items[i];
		else if (s == 84120)
			tp = gs->items[i];
	}
	CHECK_MSG(dp && tp, "%s", text.buf);
	const struct json_value *dv = json_get(dp, "victims"), *tv = json_get(tp, "victims");
	CHECK_INT(dv->nr, 3);
	CHECK(has_rank(dv, 0) && has_rank(dv, 1) && has_rank(dv, 3));
	CHECK_INT(tv->nr, 1);
	CHECK(has_rank(tv, 0));
	CHECK_STR(json_get_string(dp, "op"), "ALLREDUCE");
	CHECK_STR(json_get_string(tp, "op"), "_ALLGATHER_BASE");
	/* nobody is "behind" across groups: their counters have nothing to do with each other */
	for (size_t i = 0; i < gs->nr; i++) {
		const struct json_value *c = json_get(gs->items[i], "culprits");
		for (size_t k = 0; c && k < c->nr; k++)
			CHECK_MSG(strcmp(json_get_string(c->items[k], "why"), "behind"), "%s", text.buf);
	}
	const struct json_value *su = json_get(dp, "suspects");
	CHECK_MSG(su && su->nr == 1, "%s", text.buf);
	CHECK_INT(num(su->items[0], "group_rank"), 2);
	CHECK_CONTAINS(text.buf, "SeqNum 84120");
	json_free(v);
	strbuf_release(&text);
}

/*
 * The desync report as PyTorch 2.5+ prints it into one interleaved file: "Rank R" then lines
 * with no "[rankR]:" prefix. When it says every rank "joined but didn't finish collective
 * #730" (and its snapshot shows nobody later), the hang is inside the collective; when some
 * joined and the snapshot shows the others at a later #, PyTorch names those, and so does vigil.
 */
static void desync_file(struct strbuf *in, const char *joined, const char *snapshot)
{
	for (int r = 0; r < 4; r++) {
		strbuf_addf(in, "[rank%d]:[E1115 16:42:37.7%d6242859 ProcessGroupNCCL.cpp:629] [Rank %d] "
				"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=730, "
				"OpType=ALLREDUCE, NumelIn=5120, NumelOut=5120, Timeout(ms)=600000) ran for "
				"60002%d milliseconds before timing out.\n", r, r, r, r);
		strbuf_addf(in, "[rank%d]:[E1115 16:42:37.7%d8057301 ProcessGroupNCCL.cpp:1936] Rank %d\n"
				"\t - [%d] Timeout at collective: ALLREDUCE, #730\n"
				"\t - To our best knowledge, the lagging/dead/mismatched ranks that caused "
				"the desync are:\n"
				"\t   - [%s] joined but didn't finish collective #730 (count from 1)\n"
				"\t - Snapshot of ranks' latest states:\n%s", r, r, r, r, joined, snapshot);
		strbuf_addf(in, "[rank%d]:[E1115 16:42:37.7%d8084521 ProcessGroupNCCL.cpp:2168] [PG ID 1 "
				"PG GUID 1 Rank %d]  failure detected by watchdog at work sequence id: 730 "
				"PG status: last enqueued work: 730, last completed work: 729\n", r, r, r);
	}
}

TEST(hang_logs_desync_joined_but_not_finished_all_or_some)
{
	struct strbuf in = STRBUF_INIT, text = STRBUF_INIT;
	desync_file(&in, "0, 1, 2, 3",
		    "\t   #730 started ranks:\n\t     [0, 1, 2, 3] started ALLREDUCE\n");
	struct json_value *v = feed_json("train.log", in.buf, in.len, 5, &text);
	CHECK_STR(str(v, "verdict"), "inside_collective");
	CHECK_INT(json_get(group0(v), "culprits")->nr, 0);
	CHECK_INT(json_get(group0(v), "victims")->nr, 4);
	json_free(v);
	strbuf_reset(&in);
	desync_file(&in, "1, 2",
		    "\t   #730 started ranks:\n\t     [1, 2] started ALLREDUCE\n"
		    "\t   #731 started ranks:\n\t     [0, 3] started ALLREDUCE\n");
	v = feed_json("train.log", in.buf, in.len, 0, &text);
	CHECK_STR(str(v, "verdict"), "culprit");
	const struct json_value *c = json_get(group0(v), "culprits");
	CHECK_INT(c->nr, 2);
	CHECK_INT(num(c->items[0], "group_rank"), 1);
	CHECK_STR(str(c->items[0], "report"), "joined_not_finished");
	CHECK_INT(num(c->items[0], "report_seq"), 730);
	CHECK_INT(num(c->items[1], "group_rank"), 2);
	CHECK_CONTAINS(text.buf, "joined collective #730 but did not finish it");
	json_free(v);
	strbuf_release(&in);
	strbuf_release(&text);
}

/* "Work WorkNCCL(...) timed out in blocking wait." (2.4+ with TORCH_NCCL_BLOCKING_WAIT) is a
 * timeout too; WorkNCCL's "[PG GUID 2 Rank 0]" names group 2. */
TEST(hang_logs_blocking_wait_and_pg_guid_prefix)
{
	static const char in[] =
		"[rank1]:[E1002 18:16:40.662691402 ProcessGroupNCCL.cpp:756] [Rank 1] Work WorkNCCL("
		"SeqNum=961, OpType=ALLREDUCE, NumelIn=2048, NumelOut=2048, Timeout(ms)=600000) timed "
		"out in blocking wait.\n"
		"[rank0]:[E1002 18:16:41.000000000 ProcessGroupNCCL.cpp:689] [PG GUID 2 Rank 0] Watchdog "
		"caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=BROADCAST, NumelIn=8, "
		"NumelOut=8, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n";
	struct json_value *v = feed_json("train.log", in, sizeof(in) - 1, 0, NULL);
	const struct json_value *gs = json_get(v, "groups");
	CHECK_INT(gs->nr, 2);
	bool seen_961 = false, seen_2 = false;
	for (size_t i = 0; i < gs->nr; i++) {
		const char *name = str(gs->items[i], "group");
		if (num(gs->items[i], "seq") == 961)
			seen_961 = has_rank(json_get(gs->items[i], "victims"), 1);
		if (name && !strcmp(name, "2"))
			seen_2 = num(gs->items[i], "seq") == 12;
	}
	CHECK(seen_961 && seen_2);
	json_free(v);
}

/*
 * Rank 3 timed out in process group 5(TP), not in the default group where ranks 0-2 wait;
 * its .out stopped ten minutes before. It printed a timeout: never "silent", never "printed
 * no timeout" (the old code listed it among the outputs that stopped first).
 */
TEST(hang_logs_rank_that_timed_out_elsewhere_is_not_silent)
{
	const char *dir = test_tmpdir();
	struct strbuf line = STRBUF_INIT;
	for (int r = 0; r < 4; r++) {
		char rel[64];
		strbuf_reset(&line);
		strbuf_addf(&line, "2026-12-01T05:0%d:00.000Z step 1\n", r == 3 ? 0 : 9);
		snprintf(rel, sizeof(rel), "run/attempt-1/rank-%d.out", r);
		test_write(dir, rel, line.buf);
		strbuf_reset(&line);
		if (r < 3)
			strbuf_addf(&line, "2026-12-01T05:10:00.%d00Z [rank%d]:[E1201 05:10:00.1 1 P.cpp:1] "
					   "[PG ID 0 PG GUID 0(default_pg) Rank %d] Watchdog caught collective "
					   "operation timeout: WorkNCCL(SeqNum=50, OpType=ALLREDUCE, NumelIn=9, "
					   "NumelOut=9, Timeout(ms)=600000) ran for 600000 milliseconds before "
					   "timing out.\n", r, r, r);
		else
			strbuf_addf(&line, "[rank3]:[E1201 05:09:58.1 1 P.cpp:1] [PG ID 1 PG GUID 5(TP) "
					   "Rank 1] Watchdog caught collective operation timeout: WorkNCCL("
					   "SeqNum=900, OpType=_ALLGATHER_BASE, NumelIn=4, NumelOut=8, "
					   "Timeout(ms)=600000) ran for 600000 milliseconds before timing out.\n");
		snprintf(rel, sizeof(rel), "run/attempt-1/rank-%d.err", r);
		test_write(dir, rel, line.buf);
	}
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT;
	strbuf_addf(&p, "%s/run", dir);
	char *paths[] = { p.buf };
	struct json_value *v = hang_json(paths, 1, &text, NULL);
	const struct json_value *gs = json_get(v, "groups"), *dg = NULL;
	for (size_t i = 0; i < gs->nr; i++)
		if (json_get(gs->items[i], "default")->boolean)
			dg = gs->items[i];
	CHECK_MSG(dg, "%s", text.buf);
	const struct json_value *su = json_get(dg, "suspects"), *cu = json_get(dg, "culprits");
	CHECK_INT(cu->nr, 0);
	CHECK_INT(su->nr, 1);
	CHECK_INT(num(su->items[0], "rank"), 3);
	CHECK_STR(str(su->items[0], "why"), "timed_out_in_other_group");
	const struct json_value *sl = json_get(v, "silent");
	for (size_t i = 0; i < sl->nr; i++)
		CHECK_MSG(num(sl->items[i], "rank") != 3, "%s", text.buf);
	CHECK_CONTAINS(text.buf, "rank 3 timed out in process group 5(TP) instead");
	json_free(v);
	strbuf_release(&p);
	strbuf_release(&line);
	strbuf_release(&text);
}

/* Another launcher's prefix before torch's "[rankN]:" ("[80746] " from a pid-tagging launcher,
 * "node-3 [stderr] " from milabench): the global rank is still torch's (the old code read
 * only "[Rank R]", the rank in the group, and split the collective in two). */
TEST(hang_logs_launcher_prefix_before_torch_rank)
{
	static const char in[] =
		"[80746] [rank4]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog "
		"caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=46, "
		"NumelOut=46, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n"
		"[80748] [rank4]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] "
		"Exception (either an error or timeout) detected by watchdog at work: 1580, last "
		"enqueued NCCL work: 1582, last completed NCCL work: 1579.\n"
		"node-3 [stderr] [rank5]:[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] [Rank 1] "
		"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, "
		"NumelIn=46, NumelOut=46, Timeout(ms)=600000) ran for 600034 milliseconds before timing "
		"out.\n";
	struct json_value *v = feed_json("train.log", in, sizeof(in) - 1, 9, NULL);
	CHECK_INT(json_get(v, "groups")->nr, 1);
	const struct json_value *vic = json_get(group0(v), "victims");
	CHECK_INT(vic->nr, 2);
	CHECK(has_rank(vic, 4) && has_rank(vic, 5));
	json_free(v);
}

/* Two tensor-parallel groups time out in collectives of one signature (same SeqNum, OpType and
 * sizes: symmetric groups); rank 4's bare watchdog line could be either's. It stays in a group
 * the logs do not name, which is not the default: the ranks seen elsewhere are not its
 * suspects (the old code listed every other rank there as one that printed no timeout). */
TEST(hang_logs_ambiguous_bare_line_is_not_the_default_group)
{
	struct strbuf in = STRBUF_INIT;
	for (int r = 0; r < 5; r++) {
		strbuf_addf(&in, "[rank%d]:[E1206 18:44:12.31%d000000 ProcessGroupNCCL.cpp:607] [Rank %d] "
				 "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=500, "
				 "OpType=_ALLGATHER_BASE, NumelIn=64, NumelOut=128, Timeout(ms)=600000) ran "
				 "for 600010 milliseconds before timing out.\n", r, r, r % 2);
		if (r < 4)
			strbuf_addf(&in, "[rank%d]:[E1206 18:44:12.32%d000000 ProcessGroupNCCL.cpp:1664] "
					 "[PG %d Rank %d] Exception (either an error or timeout) detected by "
					 "watchdog at work: 500, last enqueued NCCL work: 500, last completed "
					 "NCCL work: 499.\n", r, r, 5 + r / 2, r % 2);
	}
	struct strbuf text = STRBUF_INIT;
	struct json_value *v = feed_json("train.log", in.buf, in.len, 0, &text);
	const struct json_value *gs = json_get(v, "groups");
	CHECK_MSG(gs->nr == 3, "%s", text.buf);
	for (size_t i = 0; i < gs->nr; i++) {
		CHECK(!json_get(gs->items[i], "default")->boolean);
		CHECK_MSG(json_get(gs->items[i], "suspects")->nr == 0, "%s", text.buf);
	}
	CHECK_STR(str(v, "verdict"), "inside_collective");
	json_free(v);
	strbuf_release(&in);
	strbuf_release(&text);
}
