/*
 * test_qualify.c: 'vigil qualify' without Slurm: its refusals (outside an allocation, a budget
 * too small for the stages, an unusable --storage, an unknown stage), the plan's shares of the
 * budget, a stage kept for --resume read back whole (and a truncated one refused), and the
 * saved scorecards through the real binary: --from prints the verdict, --compare the table,
 * --html the page (the page itself is tests/unit/test_qualify_card.c's).
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/qualify/qualify.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static void qualify_in_job(struct child *c, const char *const *args)
{
	static const char *env[] = { "SLURM_JOB_ID=77", "SLURM_JOB_NODELIST=n[1-2]", NULL };
	test_run_vigil(c, args, env);
}

TEST(qualify_refuses_outside_an_allocation_and_what_cannot_run)
{
	struct child c;
	const char *plain[] = { "qualify", NULL };
	test_run_vigil(&c, plain, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "not inside a Slurm allocation");
	child_release(&c);

	const char *small[] = { "qualify", "--budget", "1", NULL };
	qualify_in_job(&c, small);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "a budget of 1.0 min is less than the 1.8 min the stages "
				  "passive,node,fabric need at the least");
	child_release(&c);

	/* --storage: missing, a link, a file: refused before anything runs */
	const char *dir = test_tmpdir();
	test_write(dir, "afile", "x");
	test_mkdir(dir, "real");
	struct strbuf p = STRBUF_INIT, l = STRBUF_INIT;
	strbuf_addf(&p, "%s/real", dir);
	strbuf_addf(&l, "%s/link", dir);
	CHECK(symlink(p.buf, l.buf) == 0);
	const struct {
		const char *rel, *why;
	} bad[] = {
		{ "nowhere", "it does not exist" },
		{ "link", "it is a symbolic link" },
		{ "afile", "it is not a directory" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "%s/%s", dir, bad[i].rel);
		const char *args[] = { "qualify", "--storage", p.buf, NULL };
		qualify_in_job(&c, args);
		CHECK_INT(c.exit_code, 2);
		CHECK_CONTAINS(c.err.buf, bad[i].why);
		child_release(&c);
	}
	/* a state directory others can write to, or a link, is not believed by --resume */
	test_mkdir(dir, "open");
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/open", dir);
	chmod(p.buf, 0777);
	const char *open_dir[] = { "qualify", "--resume", p.buf, NULL };
	qualify_in_job(&c, open_dir);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "others can write to it");
	child_release(&c);
	const char *link_dir[] = { "qualify", "--dir", l.buf, NULL };
	qualify_in_job(&c, link_dir);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "it is a symbolic link");
	child_release(&c);

	const char *stage[] = { "qualify", "--stages", "passive,burn", NULL };
	qualify_in_job(&c, stage);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "no stage 'burn'");
	child_release(&c);
	const char *nostore[] = { "qualify", "--stages", "storage", NULL };
	qualify_in_job(&c, nostore);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "the storage stage needs --storage DIR");
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&l);
}

TEST(qualify_plan_shares_the_budget_and_leaves_later_stages_their_minimum)
{
	bool asked[Q_NR_STAGES] = { true, true, true, true, false };
	/* 30 min: passive 1/11 of it capped at 120 s; node 5/10 of what is left */
	double left = 1800;
	double sp = q_stage_share(Q_PASSIVE, asked, left);
	CHECK(sp > 119.9 && sp < 120.1);
	left -= sp;
	double sn = q_stage_share(Q_NODE, asked, left);
	CHECK(fabs(sn - left * 5 / 10) < 0.01);
	/* little left: the stage keeps its minimum and leaves the later ones theirs */
	double s = q_stage_share(Q_NODE, asked, 115);
	CHECK(s >= q_stage_min_s[Q_NODE] && 115 - s >= q_stage_min_s[Q_FABRIC] +
							     q_stage_min_s[Q_STORAGE] - 0.01);
	/* below the minimum: not run */
	CHECK(q_stage_share(Q_STORAGE, asked, 19) == 0);
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(q_plan_check(asked, 124, &err), -1);
	CHECK_INT(q_plan_check(asked, 125, &err), 0);
	strbuf_release(&err);
}

/* A stage as --resume reads it: the same nodes, statuses, reasons and reports; a truncated or
 * foreign document is refused by name. */
TEST(qualify_kept_stage_reads_back_whole_and_a_torn_one_is_refused)
{
	struct q_card a, b;
	q_card_init(&a);
	q_card_init(&b);
	a.job_id = xstrdup("77");
	const char *rep = "{\"verdict\":\"unhealthy\",\"reason\":\"x\",\"checks\":[{\"name\":"
			  "\"gemm\",\"findings\":[{\"status\":\"fail\",\"details\":{\"dtype\":"
			  "\"bf16\",\"tflops\":412.5}}]}]}";
	q_node_set(q_card_add_node(&a, "n1"), Q_NODE, Q_FAILED, "GPU 3 below its floor",
		   json_parse(rep, strlen(rep), NULL));
	q_node_set(q_card_add_node(&a, "n2"), Q_NODE, Q_UNKNOWN, "no answer within 60 s", NULL);
	a.stages[Q_NODE].st = Q_FAILED;
	a.stages[Q_NODE].wall_s = 12.5;
	struct strbuf doc = STRBUF_INIT, err = STRBUF_INIT;
	q_stage_save(&a, Q_NODE, &doc);
	q_card_add_node(&b, "n1");
	q_card_add_node(&b, "n2");
	CHECK_MSG(q_stage_load(&b, doc.buf, doc.len, Q_NODE, &err) == 0, "%s", err.buf);
	CHECK_INT(b.nodes[0].st[Q_NODE], Q_FAILED);
	CHECK_STR(b.nodes[0].reason[Q_NODE], "GPU 3 below its floor");
	CHECK_INT(b.nodes[1].st[Q_NODE], Q_UNKNOWN);
	CHECK(b.nodes[1].report[Q_NODE] == NULL);
	CHECK(b.stages[Q_NODE].wall_s == 12.5);
	q_figures(&b);
	CHECK(b.nodes[0].have[QF_GEMM_BF16] && b.nodes[0].fig[QF_GEMM_BF16] == 412.5);
	/* torn in the middle, or the record of another stage */
	CHECK_INT(q_stage_load(&b, doc.buf, doc.len / 2, Q_NODE, &err), -1);
	CHECK_INT(q_stage_load(&b, doc.buf, doc.len, Q_STORAGE, &err), -1);
	CHECK_CONTAINS(err.buf, "not vigil qualify's record of the storage stage");
	q_card_release(&a);
	q_card_release(&b);
	strbuf_release(&doc);
	strbuf_release(&err);
}

TEST(qualify_from_a_card_prints_compares_and_renders)
{
	char a[512], b[512], page[600];
	snprintf(a, sizeof(a), "%s/tests/data/qualify/card-a.json", test_srcdir());
	snprintf(b, sizeof(b), "%s/tests/data/qualify/card-b.json", test_srcdir());
	snprintf(page, sizeof(page), "%s/card.html", test_tmpdir());
	struct child c;
	const char *verdict[] = { "qualify", "--from", a, NULL };
	test_run_vigil(&c, verdict, NULL);
	CHECK_INT(c.exit_code, 1); /* card-a: n2 failed */
	CHECK_CONTAINS(c.out.buf, "verdict: unhealthy: 1 of 4 nodes failed a stage (n2: gpu)");
	child_release(&c);

	const char *cmp[] = { "qualify", "--from", b, "--compare", a, "--html", page, NULL };
	test_run_vigil(&c, cmp, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "old: provider-a, job 4242");
	CHECK_CONTAINS(c.out.buf, "storage_write_mib_s");
	struct strbuf html = STRBUF_INIT;
	CHECK(read_file_bounded(page, &html, 1 << 22, NULL) == 0);
	CHECK_CONTAINS(html.buf, "<svg");
	CHECK_CONTAINS(html.buf, "provider-b");
	child_release(&c);

	/* what is not a scorecard: refused, nothing written */
	test_write(test_tmpdir(), "check.json", "{\"schema_version\":1,\"verdict\":\"healthy\"}");
	char notcard[600];
	snprintf(notcard, sizeof(notcard), "%s/check.json", test_tmpdir());
	const char *bad[] = { "qualify", "--from", notcard, NULL };
	test_run_vigil(&c, bad, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "is not a vigil qualify scorecard");
	child_release(&c);
	strbuf_release(&html);
}
