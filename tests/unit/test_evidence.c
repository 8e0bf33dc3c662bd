/*
 * test_evidence.c: the judging of a hung attempt's stacks (src/supervise/evidence.h) on hand-made
 * 'vigil stacks --json' outputs of several hosts: who differs, who is frozen, who is busy, who
 * went silent first, who did not answer; and that garbage or huge input costs nothing but an
 * "no answer".
 */
#include "../harness.h"
#include "../../src/supervise/collect.h"
#include "../../src/supervise/evidence.h"

#include <math.h>

/* A faulthandler dump: the rank sits in FUNC (line numbers and thread ids vary per rank). */
static void py_dump(struct strbuf *sb, const char *func, int salt)
{
	strbuf_addf(sb, "Thread 0x00007f00000%04d (most recent call first):\n"
			"  File \"/usr/lib/python3.11/threading.py\", line %d in wait\n"
			"  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n\n"
			"Current thread 0x00007f11111%04d (most recent call first):\n",
		    salt, 320 + salt, salt);
	if (!strcmp(func, "all_reduce"))
		strbuf_addf(sb, "  File \"/opt/torch/distributed/distributed_c10d.py\", line %d "
				"in all_reduce\n", 2050 + salt);
	else
		strbuf_addf(sb, "  File \"/job/train.py\", line %d in %s\n", 40 + salt, func);
	strbuf_addf(sb, "  File \"/job/train.py\", line %d in train_step\n"
			"  File \"/job/train.py\", line 120 in <module>\n",
		    88 + salt);
}

struct fake_rank {
	long rank;
	unsigned R, S, D, T;
	const char *py_func; /* NULL: no Python stack */
	const char *native;  /* eu-stack text or NULL */
};

/* every rank written says "gpu": true (vigil stacks: it maps libcuda) */
static bool fake_on_gpu;

/* checked: 1 what vigil stacks says it checked the ranks against (job, step, nothing ignored),
 * 0 none of it (an older vigil), 2 the step unknown */
static void host_json_as(struct strbuf *out, const char *host, const struct fake_rank *r,
			 size_t n, int checked)
{
	struct json_writer w;
	struct strbuf py = STRBUF_INIT;
	json_writer_init(&w, out, false);
	json_open_object(&w);
	json_key(&w, "host");
	json_string(&w, host);
	if (checked) {
		json_key(&w, "job");
		json_string(&w, "77");
		json_key(&w, "step");
		if (checked == 1)
			json_string(&w, "3");
		else
			json_null(&w);
		json_key(&w, "ignored");
		json_open_array(&w);
		json_close_array(&w);
	}
	json_key(&w, "ranks");
	json_open_array(&w);
	for (size_t i = 0; i < n; i++) {
		json_open_object(&w);
		json_key(&w, "rank");
		json_int(&w, r[i].rank);
		json_key(&w, "pid");
		json_int(&w, 1000 + r[i].rank);
		json_key(&w, "samples");
		json_uint(&w, r[i].R + r[i].S + r[i].D + r[i].T);
		json_key(&w, "states");
		json_open_object(&w);
		json_key(&w, "R");
		json_uint(&w, r[i].R);
		json_key(&w, "S");
		json_uint(&w, r[i].S);
		json_key(&w, "D");
		json_uint(&w, r[i].D);
		json_key(&w, "T");
		json_uint(&w, r[i].T);
		json_close_object(&w);
		json_key(&w, "py_stack");
		if (r[i].py_func) {
			strbuf_reset(&py);
			py_dump(&py, r[i].py_func, (int)r[i].rank);
			json_string(&w, py.buf);
		} else {
			json_null(&w);
		}
		json_key(&w, "native_stack");
		if (r[i].native)
			json_string(&w, r[i].native);
		else
			json_null(&w);
		if (fake_on_gpu) {
			json_key(&w, "gpu");
			json_bool(&w, true);
		}
		json_close_object(&w);
	}
	json_close_array(&w);
	json_close_object(&w);
	CHECK_INT(json_writer_finish(&w, NULL), 0);
	strbuf_release(&py);
}

static void host_json(struct strbuf *out, const char *host, const struct fake_rank *r, size_t n)
{
	host_json_as(out, host, r, n, 1);
}

static const struct evidence_suspect *suspect_of(const struct evidence *e, long rank)
{
	for (size_t i = 0; i < e->suspects_nr; i++)
		if (e->suspects[i].rank == rank)
			return &e->suspects[i];
	return NULL;
}

static bool reasons_contain(const struct evidence_suspect *s, const char *needle)
{
	for (size_t i = 0; s && i < s->reasons.nr; i++)
		if (strstr(s->reasons.items[i], needle))
			return true;
	return false;
}

static struct json_value *parse_json(const struct strbuf *sb)
{
	struct strbuf err = STRBUF_INIT;
	struct json_value *v = json_parse(sb->buf, sb->len, &err);
	CHECK_MSG(v, "evidence.json does not parse: %s\n%s", err.buf, sb->buf);
	strbuf_release(&err);
	return v;
}

TEST(evidence_identical_stacks_name_no_suspect)
{
	const struct fake_rank a[] = { { 0, 0, 20, 0, 0, "all_reduce", NULL },
				       { 1, 1, 19, 0, 0, "all_reduce", NULL } };
	const struct fake_rank b[] = { { 2, 0, 20, 0, 0, "all_reduce", NULL },
				       { 3, 0, 20, 0, 0, "all_reduce", NULL } };
	struct strbuf ja = STRBUF_INIT, jb = STRBUF_INIT;
	host_json(&ja, "n1", a, 2);
	host_json(&jb, "n2", b, 2);
	const struct evidence_host hosts[] = { { "n1", ja.buf, ja.len }, { "n2", jb.buf, jb.len } };
	const double last[] = { 100, 100.2, 100.1, 100 };
	struct evidence_input in = { .hosts = hosts, .hosts_nr = 2, .last_output = last,
				     .last_output_nr = 4, .now = 160, .world_size = 4 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);
	/* line numbers and thread ids differ per rank: still one group */
	CHECK_INT(e.ranks_nr, 4);
	CHECK_INT(e.py_nr, 1);
	CHECK_INT(e.py_majority, 0);
	CHECK_INT(e.py[0].nr, 4);
	CHECK_STR(e.py[0].top, "all_reduce (distributed_c10d.py)");
	CHECK_INT(e.suspects_nr, 0);
	CHECK_INT(e.suspect_hosts.nr, 0);
	CHECK_INT(e.silent_first.nr, 0);
	CHECK_INT(e.missing_nr, 0);
	CHECK_CONTAINS(e.summary.buf, "2 of 2 hosts answered; 4 ranks found of 4");
	CHECK_CONTAINS(e.summary.buf, "majority 4 ranks in all_reduce (distributed_c10d.py)");
	CHECK_CONTAINS(e.summary.buf, "No suspect");
	struct json_value *v = parse_json(&e.json);
	CHECK_INT(json_get(v, "suspect_hosts")->nr, 0);
	CHECK_INT(json_path(v, "python_groups.0.ranks")->nr, 4);
	json_free(v);
	evidence_release(&e);
	strbuf_release(&ja);
	strbuf_release(&jb);
}

/* One host each: a rank in another frame, a stopped rank that went silent first, a busy rank,
 * a host that does not answer (its two ranks missing). */
TEST(evidence_names_the_odd_ranks_and_hosts)
{
	const struct fake_rank n1[] = { { 0, 0, 20, 0, 0, "all_reduce", NULL },
					{ 1, 0, 20, 0, 0, "all_reduce", NULL } };
	const struct fake_rank n2[] = { { 2, 0, 20, 0, 0, "all_reduce", NULL },
					{ 3, 0, 20, 0, 0, "save_checkpoint", NULL } };
	const struct fake_rank n3[] = { { 4, 0, 0, 0, 20, NULL, NULL },
					{ 5, 0, 20, 0, 0, "all_reduce", NULL } };
	const struct fake_rank n4[] = { { 6, 0, 20, 0, 0, "all_reduce", NULL },
					{ 7, 19, 1, 0, 0, "all_reduce", NULL } };
	struct strbuf j1 = STRBUF_INIT, j2 = STRBUF_INIT, j3 = STRBUF_INIT, j4 = STRBUF_INIT;
	host_json(&j1, "n1", n1, 2);
	host_json(&j2, "n2", n2, 2);
	host_json(&j3, "n3", n3, 2);
	host_json(&j4, "n4", n4, 2);
	const struct evidence_host hosts[] = { { "n1", j1.buf, j1.len }, { "n2", j2.buf, j2.len },
					       { "n3", j3.buf, j3.len }, { "n4", j4.buf, j4.len },
					       { "n5", NULL, 0 } };
	const double last[] = { 100, 100, 100.3, 100, 91.5, 100.1, 100, 100, -1, NAN };
	const char *rank_hosts[] = { "n1", "n1", "n2", "n2", "n3", "n3", "n4", "n4", "n5", "n5" };
	struct evidence_input in = { .hosts = hosts, .hosts_nr = 5, .last_output = last,
				     .last_output_nr = 10, .rank_hosts = rank_hosts,
				     .rank_hosts_nr = 10, .now = 170, .world_size = 10 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);

	CHECK_INT(e.ranks_nr, 8);
	CHECK_INT(e.py_nr, 2);
	CHECK_INT(e.py_majority, 0);
	CHECK_INT(e.py[0].nr, 6);
	CHECK_STR(e.py[1].top, "save_checkpoint (train.py)");

	const struct evidence_suspect *s3 = suspect_of(&e, 3), *s4 = suspect_of(&e, 4),
				      *s7 = suspect_of(&e, 7);
	CHECK(s3 && !strcmp(s3->host, "n2"));
	CHECK(reasons_contain(s3, "its Python stack differs from the majority's (6 ranks in "
				  "all_reduce (distributed_c10d.py)): it is in save_checkpoint "
				  "(train.py)"));
	CHECK(s4 && !strcmp(s4->host, "n3"));
	CHECK(reasons_contain(s4, "stopped (T) in 20 of 20 samples: frozen, as by SIGSTOP"));
	CHECK(reasons_contain(s4, "went silent first: its last output was 8.5 s before"));
	/* stopped explains the missing Python stack: not said twice */
	CHECK(!reasons_contain(s4, "no Python stack"));
	CHECK(s7 && !strcmp(s7->host, "n4"));
	CHECK(reasons_contain(s7, "busy (R, D or T) in 95% of samples, against a median of 0%"));
	for (long r = 0; r <= 7; r++)
		if (r != 3 && r != 4 && r != 7)
			CHECK_MSG(!suspect_of(&e, r), "rank %ld named a suspect", r);

	CHECK_INT(e.missing_nr, 2);
	CHECK_INT(e.missing[0], 8);
	CHECK_INT(e.missing[1], 9);
	const struct evidence_suspect *h5 = suspect_of(&e, -1);
	CHECK(h5 && !strcmp(h5->host, "n5"));
	CHECK(reasons_contain(h5, "no answer from vigil stacks: no output"));

	CHECK_INT(e.suspect_hosts.nr, 4);
	CHECK(strlist_has(&e.suspect_hosts, "n2") && strlist_has(&e.suspect_hosts, "n3") &&
	      strlist_has(&e.suspect_hosts, "n4") && strlist_has(&e.suspect_hosts, "n5"));
	CHECK(!strlist_has(&e.suspect_hosts, "n1"));
	CHECK_INT(e.silent_first.nr, 1);
	CHECK_STR(e.silent_first.items[0], "n3");

	CHECK(e.summary.len < 1024);
	CHECK_CONTAINS(e.summary.buf, "4 of 5 hosts answered (n5: no output)");
	CHECK_CONTAINS(e.summary.buf, "8 ranks found of 10 (missing: 8,9)");
	CHECK_CONTAINS(e.summary.buf, "rank 4 on n3: stopped (T)");

	struct json_value *v = parse_json(&e.json);
	CHECK_INT(json_get(v, "suspect_hosts")->nr, 4);
	CHECK_INT(json_get(v, "ranks_missing")->nr, 2);
	CHECK_STR(json_path(v, "silent_first.0")->string, "n3");
	CHECK(json_path(v, "hosts.4.answered")->type == JSON_BOOL &&
	      !json_path(v, "hosts.4.answered")->boolean);
	CHECK_INT(json_path(v, "ranks.4.states.T")->number, 20);
	json_free(v);
	evidence_release(&e);
	strbuf_release(&j1);
	strbuf_release(&j2);
	strbuf_release(&j3);
	strbuf_release(&j4);
}

/* A rank launched on a host that answered but did not report it: that host is named. */
TEST(evidence_rank_not_found_on_its_host_names_the_host)
{
	const struct fake_rank a[] = { { 0, 0, 20, 0, 0, "all_reduce", NULL } };
	struct strbuf ja = STRBUF_INIT, jb = STRBUF_INIT;
	host_json(&ja, "n1", a, 1);
	host_json(&jb, "n2", NULL, 0);
	const struct evidence_host hosts[] = { { "n1", ja.buf, ja.len }, { "n2", jb.buf, jb.len } };
	const char *rank_hosts[] = { "n1", "n2" };
	struct evidence_input in = { .hosts = hosts, .hosts_nr = 2, .rank_hosts = rank_hosts,
				     .rank_hosts_nr = 2, .world_size = 2 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);
	CHECK_INT(e.missing_nr, 1);
	CHECK(reasons_contain(suspect_of(&e, 1), "not found: no process of rank 1 on the host"));
	CHECK_INT(e.suspect_hosts.nr, 1);
	CHECK_STR(e.suspect_hosts.items[0], "n2");
	evidence_release(&e);
	strbuf_release(&ja);
	strbuf_release(&jb);
}

/* Two ranks, two stacks: no majority, so nobody "differs". */
TEST(evidence_a_tie_has_no_majority)
{
	const struct fake_rank a[] = { { 0, 0, 20, 0, 0, "all_reduce", NULL },
				       { 1, 0, 20, 0, 0, "save_checkpoint", NULL } };
	struct strbuf ja = STRBUF_INIT;
	host_json(&ja, "n1", a, 2);
	const struct evidence_host hosts[] = { { "n1", ja.buf, ja.len } };
	struct evidence_input in = { .hosts = hosts, .hosts_nr = 1, .world_size = 2 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);
	CHECK_INT(e.py_nr, 2);
	CHECK_INT(e.py_majority, -1);
	CHECK_INT(e.suspects_nr, 0);
	CHECK_CONTAINS(e.summary.buf, "2 groups, no majority");
	/* a tie is not agreement */
	CHECK_CONTAINS(e.summary.buf, "No suspect: no rank stands out");
	CHECK(!strstr(e.summary.buf, "agree"));
	evidence_release(&e);
	strbuf_release(&ja);
}

/* Without Python stacks (a native trainer), the native stacks are grouped by function names;
 * addresses, symbol versions and thread order do not matter, the pid's own thread does. */
TEST(evidence_groups_native_stacks_by_function_names)
{
	const char *wait1 = "PID 1000 - process\nTID 1007:\n#0  0x00007f1 epoll_wait\n"
			    "TID 1000:\n#0  0x00007f2 __futex_abstimed_wait_common\n"
			    "#1  0x00007f3 pthread_cond_wait@@GLIBC_2.3.2\n#2  0x0000004\n"
			    "#3  0x00007f5 ncclAllReduce\n";
	const char *wait2 = "PID 1001 - process\nTID 1001:\n#0  0x00007a2 __futex_abstimed_wait_common\n"
			    "#1  0x00007a3 pthread_cond_wait@GLIBC_2.3.2\n#2  0x0000009\n"
			    "#3  0x00007a5 ncclAllReduce\n";
	const char *other = "PID 1002 - process\nTID 1002:\n#0  0x00007b2 write\n"
			    "#1  0x00007b3 save_to_disk\n";
	const char *wait3 = "PID 1003 - process\nTID 1003:\n#0  0x00007c2 __futex_abstimed_wait_common\n"
			    "#1  0x00007c3 pthread_cond_wait\n#2  0x000000a\n#3  0x00007c5 ncclAllReduce\n";
	const struct fake_rank a[] = { { 0, 0, 20, 0, 0, NULL, wait1 }, { 1, 0, 20, 0, 0, NULL, wait2 },
				       { 2, 0, 20, 0, 0, NULL, other }, { 3, 0, 20, 0, 0, NULL, wait3 } };
	struct strbuf ja = STRBUF_INIT;
	host_json(&ja, "n1", a, 4);
	const struct evidence_host hosts[] = { { "n1", ja.buf, ja.len } };
	struct evidence_input in = { .hosts = hosts, .hosts_nr = 1, .world_size = 4 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);
	CHECK_INT(e.py_nr, 0);
	CHECK_INT(e.native_nr, 2);
	CHECK_INT(e.native[0].nr, 3);
	CHECK_STR(e.native[0].top, "__futex_abstimed_wait_common");
	CHECK(reasons_contain(suspect_of(&e, 2), "its native stack differs from the majority's "
						  "(3 ranks in __futex_abstimed_wait_common): it "
						  "is in write"));
	CHECK_INT(e.suspects_nr, 1);
	CHECK_CONTAINS(e.summary.buf, "Native stacks: 2 groups");
	evidence_release(&e);
	strbuf_release(&ja);
}

/* Anything that is not vigil stacks' JSON is "no answer" by name; bad entries are skipped. */
TEST(evidence_garbage_outputs_are_no_answer)
{
	static const char nul[] = { '{', 0, '}', 0 };
	const char *bad_ranks = "{\"ranks\":[{\"rank\":-1},{\"rank\":1.5},{\"rank\":\"x\"},"
				"{\"rank\":1e30},7,{\"rank\":2,\"states\":{\"T\":-5,\"R\":1e99},"
				"\"py_stack\":17,\"native_stack\":[]},{\"rank\":2}]}";
	const struct fake_rank good[] = { { 0, 0, 20, 0, 0, "all_reduce", NULL } };
	struct strbuf jg = STRBUF_INIT;
	host_json(&jg, "good", good, 1);
	struct evidence_host hosts[] = {
		{ "empty", "", 0 },
		{ "text", "vigil: command not found\n", 25 },
		{ "notarray", "{\"ranks\":5}", 11 },
		{ "array", "[1,2]", 5 },
		{ "nul", nul, sizeof(nul) },
		{ "deep", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
		  0 },
		{ "badranks", bad_ranks, strlen(bad_ranks) },
		{ "good", jg.buf, jg.len },
		{ "esc\x1b[31mhost", NULL, 0 },
	};
	for (size_t i = 1; i < ARRAY_SIZE(hosts); i++)
		if (hosts[i].output && !hosts[i].len)
			hosts[i].len = strlen(hosts[i].output);
	struct evidence_input in = { .hosts = hosts, .hosts_nr = ARRAY_SIZE(hosts),
				     .world_size = 3 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);
	for (size_t i = 0; i < 6; i++) {
		CHECK_MSG(!e.hosts[i].answered, "host %s answered", hosts[i].host);
		CHECK(strlist_has(&e.suspect_hosts, hosts[i].host));
	}
	CHECK_CONTAINS(e.hosts[1].why, "not the JSON of vigil stacks");
	CHECK_CONTAINS(e.hosts[2].why, "no \"ranks\" array");
	CHECK(e.hosts[6].answered);
	CHECK_CONTAINS(e.hosts[6].why, "rank 2 reported twice");
	CHECK_INT(e.ranks_nr, 2); /* rank 2 of badranks, rank 0 of good */
	CHECK_INT(e.ranks[1].rank, 2);
	CHECK_INT(e.ranks[1].samples, 0);
	CHECK_INT(e.missing_nr, 1);
	CHECK_INT(e.missing[0], 1);
	/* the terminal escape in a host name never reaches the summary or the JSON raw */
	CHECK_NOT_CONTAINS(e.summary.buf, "\x1b");
	CHECK_NOT_CONTAINS(e.json.buf, "\x1b");
	CHECK(e.summary.len < 1024);
	json_free(parse_json(&e.json));
	evidence_release(&e);
	strbuf_release(&jg);
}

/* Huge input: an output over the limit is refused by size, a 4 MiB stack and a thousand
 * distinct stacks cost bounded output, and the summary stays under 1 KiB. */
TEST(evidence_huge_input_is_bounded)
{
	struct strbuf big = STRBUF_INIT, stack = STRBUF_INIT, many = STRBUF_INIT;
	strbuf_addstr(&big, "{\"ranks\":[],\"pad\":\"");
	while (big.len < EVIDENCE_OUTPUT_MAX + 16)
		strbuf_addstr(&big, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	strbuf_addstr(&big, "\"}");
	strbuf_addstr(&stack, "Current thread 0x1 (most recent call first):\n");
	while (stack.len < (4u << 20))
		strbuf_addstr(&stack, "  File \"/job/deep.py\", line 1 in recurse\n");
	struct json_writer w;
	json_writer_init(&w, &many, false);
	json_open_object(&w);
	json_key(&w, "ranks");
	json_open_array(&w);
	for (int r = 0; r < 1000; r++) {
		char fn[64];
		struct strbuf py = STRBUF_INIT;
		snprintf(fn, sizeof(fn), "func_%d_%s", r, r % 7 ? "x" : "\x1b]0;title\a");
		py_dump(&py, fn, r);
		json_open_object(&w);
		json_key(&w, "rank");
		json_int(&w, r);
		json_key(&w, "py_stack");
		json_string(&w, r == 999 ? stack.buf : py.buf);
		json_close_object(&w);
		strbuf_release(&py);
	}
	json_close_array(&w);
	json_close_object(&w);
	const struct evidence_host hosts[] = { { "big", big.buf, big.len },
					       { "many", many.buf, many.len } };
	struct evidence_input in = { .hosts = hosts, .hosts_nr = 2, .world_size = 1000000000 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);
	CHECK(!e.hosts[0].answered);
	CHECK_CONTAINS(e.hosts[0].why, "over the limit");
	CHECK(e.hosts[1].answered);
	CHECK_INT(e.ranks_nr, 1000);
	CHECK_INT(e.py_nr, 1000);
	CHECK_INT(e.py_majority, -1);
	CHECK(e.summary.len <= 1023);
	CHECK_CONTAINS(e.summary.buf, "missing: 1000,1001,");
	CHECK(e.json.len < (4u << 20));
	CHECK_NOT_CONTAINS(e.json.buf, "\x1b");
	json_free(parse_json(&e.json));
	evidence_release(&e);
	strbuf_release(&big);
	strbuf_release(&stack);
	strbuf_release(&many);
}

/*
 * Doubt (issue 17): one rank reported by two hosts (which one is it?) is unknown on both, so
 * the "frozen" claimant blames nobody; an answer that does not say what its ranks were checked
 * against (an older vigil) or could not tie them to the step is doubtful too. Hosts with
 * doubtful evidence are listed; the supervisor confirms them by a smoke test before a drain.
 */
TEST(evidence_duplicate_and_unverified_answers_are_doubt)
{
	const struct fake_rank a[] = { { 0, 0, 0, 0, 20, NULL, NULL } };	/* "frozen" */
	const struct fake_rank b[] = { { 0, 0, 20, 0, 0, "all_reduce", NULL },
				       { 1, 0, 20, 0, 0, "all_reduce", NULL } };
	const struct fake_rank c[] = { { 2, 0, 20, 0, 0, "all_reduce", NULL } };
	const struct fake_rank d[] = { { 3, 0, 20, 0, 0, "all_reduce", NULL } };
	const struct fake_rank f[] = { { 4, 0, 20, 0, 0, "all_reduce", NULL } };
	struct strbuf ja = STRBUF_INIT, jb = STRBUF_INIT, jc = STRBUF_INIT, jd = STRBUF_INIT,
		      jf = STRBUF_INIT;
	host_json(&ja, "n1", a, 1);
	host_json(&jb, "n2", b, 2);
	host_json_as(&jc, "n3", c, 1, 0);
	host_json_as(&jd, "n4", d, 1, 2);
	host_json(&jf, "n5", f, 1);
	const struct evidence_host hosts[] = { { "n1", ja.buf, ja.len }, { "n2", jb.buf, jb.len },
					       { "n3", jc.buf, jc.len }, { "n4", jd.buf, jd.len },
					       { "n5", jf.buf, jf.len } };
	struct evidence_input in = { .hosts = hosts, .hosts_nr = 5, .world_size = 5 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);
	CHECK_MSG(!suspect_of(&e, 0), "rank 0 blamed: %s", e.summary.buf);
	CHECK_INT(e.missing_nr, 0);
	CHECK_INT(e.doubtful_hosts.nr, 4);
	CHECK(strlist_has(&e.doubtful_hosts, "n1") && strlist_has(&e.doubtful_hosts, "n2") &&
	      strlist_has(&e.doubtful_hosts, "n3") && strlist_has(&e.doubtful_hosts, "n4"));
	CHECK(!strlist_has(&e.doubtful_hosts, "n5"));
	CHECK_CONTAINS(e.summary.buf, "rank 0 is claimed twice: its evidence is unknown");
	CHECK_CONTAINS(e.summary.buf, "does not say which job");
	CHECK_CONTAINS(e.summary.buf, "step was not known there");
	struct json_value *v = parse_json(&e.json);
	CHECK_INT(json_get(v, "doubtful_hosts")->nr, 4);
	CHECK(json_path(v, "ranks.0.doubt")->boolean);
	CHECK(json_path(v, "hosts.4.doubt")->type == JSON_NULL);
	json_free(v);
	evidence_release(&e);
	strbuf_release(&ja);
	strbuf_release(&jb);
	strbuf_release(&jc);
	strbuf_release(&jd);
	strbuf_release(&jf);
}

/*
 * NCCL on GPUs (seen on an H200 under vigil run, bench/device-run-nccl.sh): rank 1 never entered
 * the all_reduce and sleeps; rank 0 waits in it, spinning in CUDA's synchronize: R in 20 of 20
 * samples. A gloo rank would sleep there, and "busy while the median sleeps" named rank 0, the
 * victim. On GPUs busy shares are not compared; the same states without "gpu" still are.
 */
TEST(evidence_gpu_ranks_spinning_in_nccl_are_not_busy_suspects)
{
	const struct fake_rank a[] = { { 0, 20, 0, 0, 0, "main", NULL },
				       { 1, 0, 20, 0, 0, "main", NULL } };
	for (int on_gpu = 1; on_gpu >= 0; on_gpu--) {
		struct strbuf ja = STRBUF_INIT;
		fake_on_gpu = on_gpu;
		host_json(&ja, "n1", a, 2);
		fake_on_gpu = false;
		const struct evidence_host hosts[] = { { "n1", ja.buf, ja.len } };
		struct evidence_input in = { .hosts = hosts, .hosts_nr = 1, .world_size = 2 };
		struct evidence e;
		evidence_init(&e);
		evidence_build(&e, &in);
		if (on_gpu) {
			CHECK_INT(e.suspects_nr, 0);
			CHECK_CONTAINS(e.summary.buf, "Busy shares of the 2 ranks on GPUs not compared");
			CHECK_CONTAINS(e.json.buf, "\"gpu\":true");
		} else {
			CHECK_INT(e.suspects_nr, 1);
			CHECK_CONTAINS(e.summary.buf, "rank 0 on n1: busy (R, D or T) in 100% of samples");
			CHECK(!strstr(e.summary.buf, "Busy shares"));
		}
		evidence_release(&e);
		strbuf_release(&ja);
	}
}

/* What vigil run drains at once from the evidence (collect.c): a frozen rank's host; a busy
 * rank's host while the others sleep, unless the ranks are on GPUs (a rank waiting in NCCL
 * spins; the sleeper may be the one that never entered). */
TEST(evidence_drains_a_busy_straggler_only_off_the_gpu)
{
	const struct fake_rank a[] = { { 0, 20, 0, 0, 0, "main", NULL },
				       { 1, 0, 20, 0, 0, "main", NULL },
				       { 2, 0, 20, 0, 0, "main", NULL } };
	const struct fake_rank frozen[] = { { 0, 20, 0, 0, 0, "main", NULL },
					    { 1, 0, 0, 0, 20, NULL, NULL },
					    { 2, 20, 0, 0, 0, "main", NULL } };
	for (int k = 0; k < 3; k++) {
		struct strbuf j1 = STRBUF_INIT, j2 = STRBUF_INIT, j3 = STRBUF_INIT;
		const struct fake_rank *r = k == 2 ? frozen : a;
		fake_on_gpu = k >= 1;
		host_json(&j1, "n1", &r[0], 1);
		host_json(&j2, "n2", &r[1], 1);
		host_json(&j3, "n3", &r[2], 1);
		fake_on_gpu = false;
		const struct evidence_host hosts[] = { { "n1", j1.buf, j1.len },
						       { "n2", j2.buf, j2.len },
						       { "n3", j3.buf, j3.len } };
		struct evidence_input in = { .hosts = hosts, .hosts_nr = 3, .world_size = 3 };
		struct evidence e;
		evidence_init(&e);
		evidence_build(&e, &in);
		struct strlist suspects = STRLIST_INIT, sick = STRLIST_INIT, why = STRLIST_INIT;
		sup_judge_evidence(&e, &suspects, &sick, &why);
		if (k == 0) { /* gloo: rank 0 computes while the others wait asleep */
			CHECK_INT(sick.nr, 1);
			CHECK_STR(sick.items[0], "n1");
			CHECK_CONTAINS(why.items[0], "rank 0 busy in 100 % of samples while the "
						     "median rank was busy in 0 %");
		} else if (k == 1) { /* the same states on GPUs: nobody drained */
			CHECK_INT(sick.nr, 0);
		} else { /* on GPUs, rank 1 frozen: its host drained, the spinning ones not */
			CHECK_INT(sick.nr, 1);
			CHECK_STR(sick.items[0], "n2");
			CHECK_CONTAINS(why.items[0], "rank 1 stopped (T) in 20 of 20 samples");
		}
		CHECK_INT(suspects.nr, 0);
		strlist_release(&suspects);
		strlist_release(&sick);
		strlist_release(&why);
		evidence_release(&e);
		strbuf_release(&j1);
		strbuf_release(&j2);
		strbuf_release(&j3);
	}
}

/*
 * A hang (in.hang): the innermost Python frame keeps its line. Three ranks wait in main at the
 * line of their loss.item(), one sleeps in main at another line (as on the H200 under NCCL):
 * with lines it differs from the majority; as a slowdown (no lines) all four are one group.
 */
TEST(evidence_hang_tells_lines_of_one_function_apart)
{
	static const char wait_py[] = "Current thread 0x00007f0000000001 (most recent call first):\n"
				      "  File \"/srv/train.py\", line 290 in main\n"
				      "  File \"/srv/train.py\", line 307 in <module>\n";
	static const char sleep_py[] = "Current thread 0x00007f0000000002 (most recent call first):\n"
				       "  File \"/srv/train.py\", line 270 in main\n"
				       "  File \"/srv/train.py\", line 307 in <module>\n";
	struct strbuf j = STRBUF_INIT;
	strbuf_addstr(&j, "{\"host\":\"n1\",\"ranks\":[");
	for (int r = 0; r < 4; r++) {
		struct strbuf q = STRBUF_INIT;
		struct json_writer w;
		json_writer_init(&w, &q, false);
		json_string(&w, r == 2 ? sleep_py : wait_py);
		CHECK_INT(json_writer_finish(&w, NULL), 0);
		strbuf_addf(&j, "%s{\"rank\":%d,\"pid\":%d,\"samples\":20,\"states\":{\"R\":20,"
			    "\"S\":0,\"D\":0,\"T\":0},\"gpu\":true,\"py_stack\":%s}",
			    r ? "," : "", r, 100 + r, q.buf);
		strbuf_release(&q);
	}
	strbuf_addstr(&j, "]}");
	for (int hang = 1; hang >= 0; hang--) {
		const struct evidence_host hosts[] = { { "n1", j.buf, j.len } };
		struct evidence_input in = { .hosts = hosts, .hosts_nr = 1, .world_size = 4,
					     .hang = hang };
		struct evidence e;
		evidence_init(&e);
		evidence_build(&e, &in);
		if (hang) {
			CHECK_INT(e.py_nr, 2);
			CHECK_INT(e.suspects_nr, 1);
			CHECK_CONTAINS(e.summary.buf, "majority 3 ranks in main (train.py:290)");
			CHECK_CONTAINS(e.summary.buf, "rank 2 on n1: its Python stack differs from the "
						      "majority's");
			CHECK_CONTAINS(e.summary.buf, "it is in main (train.py:270)");
		} else {
			CHECK_INT(e.py_nr, 1);
			CHECK_INT(e.suspects_nr, 0);
		}
		evidence_release(&e);
	}
	strbuf_release(&j);
}
