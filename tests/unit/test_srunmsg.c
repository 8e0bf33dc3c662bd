/*
 * test_srunmsg.c: srun's lines about creating a step (src/slurm/srunmsg.h): a refusal and its
 * reason, the retry line that is not one, and the lines that are neither (a task's death, a
 * node failure, an allocation srun could not get). The shapes are srun's own (Slurm's
 * src/srun launch code; posted logs in tests/data/realworld/srun-refusal.md), with our values,
 * in tests/data/srun-refusal/srun-lines.txt.
 */
#include "../harness.h"
#include "../../src/slurm/srunmsg.h"
#include "../../src/lib/fileio.h"

#include <string.h>

static enum srun_msg parse(const char *line, struct strbuf *reason)
{
	strbuf_reset(reason);
	return srun_msg_parse(line, strlen(line), reason);
}

TEST(srunmsg_every_real_shape_in_the_fixture)
{
	static const struct {
		enum srun_msg kind;
		const char *reason;
	} want[] = {
		{ SRUN_MSG_REFUSED, "More processors requested than permitted" },
		{ SRUN_MSG_REFUSED, "Requested node configuration is not available" },
		{ SRUN_MSG_REFUSED, "Memory required by task is not available" },
		{ SRUN_MSG_REFUSED, "Invalid generic resource (gres) specification" },
		{ SRUN_MSG_REFUSED, "Job/step already completing or completed" },
		{ SRUN_MSG_REFUSED, "More processors requested than permitted" },
		{ SRUN_MSG_REFUSED, "Job/step already completing or completed" },
		{ SRUN_MSG_PENDING, "Requested nodes are busy" },
		{ SRUN_MSG_PENDING, "Requested nodes are busy" },
		{ SRUN_MSG_PENDING, "" },
		{ SRUN_MSG_OTHER, "" },
		{ SRUN_MSG_OTHER, "" },
		{ SRUN_MSG_OTHER, "" },
		{ SRUN_MSG_OTHER, "" }, /* srun outside an allocation: not a step of ours */
	};
	struct strbuf text = STRBUF_INIT, reason = STRBUF_INIT, path = STRBUF_INIT;
	strbuf_addf(&path, "%s/tests/data/srun-refusal/srun-lines.txt", test_srcdir());
	CHECK(read_file_bounded(path.buf, &text, 1 << 16, NULL) == 0);
	size_t i = 0;
	for (char *line = text.buf, *nl; *line; line = nl + 1, i++) {
		nl = strchr(line, '\n');
		CHECK(nl);
		*nl = '\0';
		CHECK(i < ARRAY_SIZE(want));
		enum srun_msg k = parse(line, &reason);
		CHECK_MSG(k == want[i].kind, "line %zu '%s': %d, want %d", i + 1, line, k,
			  want[i].kind);
		CHECK_STR(reason.buf, want[i].reason);
	}
	CHECK_INT(i, ARRAY_SIZE(want));
	strbuf_release(&text);
	strbuf_release(&reason);
	strbuf_release(&path);
}

TEST(srunmsg_near_misses_are_not_refusals)
{
	struct strbuf r = STRBUF_INIT;
	/* a rank that prints srun's words is labelled ("0: srun: ..."), never srun's own line */
	CHECK_INT(parse("0: srun: error: Unable to create step for job 1: x", &r), SRUN_MSG_OTHER);
	CHECK_INT(parse("srun: error: Unable to create step for job : x", &r), SRUN_MSG_OTHER);
	CHECK_INT(parse("srun: error: Unable to create step for job abc: x", &r), SRUN_MSG_OTHER);
	CHECK_INT(parse("srun: error: Unable to create step for job 1 x", &r), SRUN_MSG_OTHER);
	CHECK_INT(parse("srun: Job 12 step creation disabled", &r), SRUN_MSG_OTHER);
	CHECK_INT(parse("", &r), SRUN_MSG_OTHER);
	/* a heterogeneous job's id */
	CHECK_INT(parse("srun: error: Unable to create step for job 812+1: Requested node "
			"configuration is not available", &r),
		  SRUN_MSG_REFUSED);
	CHECK_STR(r.buf, "Requested node configuration is not available");
	strbuf_release(&r);
}

TEST(srunmsg_reason_is_bounded_and_clean)
{
	struct strbuf r = STRBUF_INIT, line = STRBUF_INIT;
	strbuf_addstr(&line, "srun: error: Unable to create step for job 3: \x1b[31mred\x07 ");
	for (int i = 0; i < 5000; i++)
		strbuf_addch(&line, 'x');
	CHECK_INT(srun_msg_parse(line.buf, line.len, &r), SRUN_MSG_REFUSED);
	CHECK(!strchr(r.buf, '\x1b') && !strchr(r.buf, '\x07'));
	CHECK_CONTAINS(r.buf, "\\x1b[31mred\\x07");
	CHECK(r.len <= 4 * SRUN_MSG_REASON_MAX);
	/* a NUL byte ends srun's text */
	const char nul[] = "srun: error: Unable to create step for job 3: ab\0cd";
	CHECK_INT(srun_msg_parse(nul, sizeof(nul) - 1, &r), SRUN_MSG_REFUSED);
	strbuf_release(&r);
	strbuf_release(&line);
}

TEST(srunmsg_action_says_what_to_ask_for)
{
	struct strbuf t = STRBUF_INIT;
	srun_refusal_describe("More processors requested than permitted", &t);
	CHECK_STR(t.buf, "srun refused to create the step: More processors requested than "
			 "permitted; the allocation cannot hold this step: ask for more CPUs, "
			 "memory or GPUs per node (e.g. salloc --ntasks-per-node=G, --gres=gpu:G, "
			 "--mem), or lower --tasks-per-node");
	CHECK_CONTAINS(srun_refusal_action("Memory required by task is not available"),
		       "cannot hold this step");
	CHECK_CONTAINS(srun_refusal_action("Invalid generic resource (gres) specification"),
		       "cannot hold this step");
	CHECK_CONTAINS(srun_refusal_action("Requested node configuration is not available"),
		       "cannot hold this step");
	CHECK_CONTAINS(srun_refusal_action("Job/step already completing or completed"),
		       "the job is ending");
	CHECK_CONTAINS(srun_refusal_action("Required node not available (down, drained or "
					   "reserved)"),
		       "not available to Slurm");
	CHECK_CONTAINS(srun_refusal_action("Access/permission denied"), "scontrol show job");
	strbuf_reset(&t);
	srun_refusal_describe("", &t);
	CHECK_CONTAINS(t.buf, "(no reason given)");
	strbuf_release(&t);
}
