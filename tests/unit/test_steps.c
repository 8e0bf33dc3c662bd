/*
 * test_steps.c: a trainer's progress read from its output and its step file (src/logs/steps.h):
 * the usual forms of a step line, loss and tokens beside it, a user's --step-pattern (and a bad
 * one named in the error), the JSON step file, megabyte lines and binary garbage at bounded
 * memory, and a counter that goes backwards or jumps reported as such.
 */
#include "../harness.h"
#include "../../src/logs/steps.h"

struct got {
	struct step_update u[64];
	size_t nr;
};

static void collect(void *arg, const struct step_update *u)
{
	struct got *g = arg;
	if (g->nr < ARRAY_SIZE(g->u))
		g->u[g->nr++] = *u;
}

static void feed_str(struct step_parser *p, const char *s, struct got *g)
{
	step_parser_feed(p, s, strlen(s), collect, g);
}

static bool dflt(const char *line, struct step_reading *r)
{
	return steps_match_default(line, strlen(line), r);
}

TEST(steps_default_pattern_usual_forms)
{
	struct step_reading r;
	static const struct {
		const char *line;
		uint64_t step;
	} yes[] = {
		{ "step 120", 120 },
		{ "step: 120 | lr 3e-4", 120 },
		{ "Step=120", 120 },
		{ "iter 120/5000", 120 },
		{ "Iteration 120", 120 },
		{ "{\"step\": 120, \"lr\": 0.1}", 120 },
		{ "{'step': 7}", 7 },
		{ "train global_step=44 loss=1.0", 44 },
		{ "Epoch 1 Step [120/5000]", 120 },
		{ " iteration      120/    5000 | consumed samples: 9", 120 },
		{ "[rank0] step 0 loss 9.1", 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		CHECK_MSG(dflt(yes[i].line, &r), "no step found in '%s'", yes[i].line);
		CHECK_MSG(r.step == yes[i].step, "'%s' gave step %llu", yes[i].line,
			  (unsigned long long)r.step);
	}
	CHECK(dflt("iter 120/5000", &r) && r.has_total && r.total == 5000);
	CHECK(dflt(" iteration      120/    5000 |", &r) && r.has_total && r.total == 5000);
	CHECK(dflt("step 3 of 10", &r) && r.has_total && r.total == 10);
	CHECK(dflt("step 120", &r) && !r.has_total && !r.has_loss && !r.has_tokens);
	/* words that only contain a keyword, and numbers that are not step counts */
	static const char *const no[] = {
		"max_steps: 5000", "steps 5000", "step_time=0.31", "timestep 9", "iters 5",
		"step 0.5", "step 12ms", "stepping 4", "step", "step: abc", "",
		"loss 2.31", "step 99999999999999999999",
	};
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		CHECK_MSG(!dflt(no[i], &r), "'%s' taken as step %llu", no[i],
			  (unsigned long long)r.step);
	/* max_steps first, the step later on the line */
	CHECK(dflt("max_steps=5000 step=12", &r) && r.step == 12);
}

TEST(steps_loss_and_tokens_beside_the_step)
{
	struct step_reading r;
	CHECK(dflt("step 5 loss 2.31", &r) && r.has_loss && r.loss == 2.31);
	CHECK(dflt("step=5 loss=2.31 tokens=4194304", &r) && r.has_loss && r.loss == 2.31 &&
	      r.has_tokens && r.tokens == 4194304);
	CHECK(dflt("{\"step\": 5, \"loss\": 2.31, \"tokens\": 8}", &r) && r.loss == 2.31 &&
	      r.tokens == 8);
	CHECK(dflt(" iteration 5/10 | loss scale: 1.0 | lm loss: 2.310E+00 |", &r) &&
	      r.has_loss && r.loss == 2.31);
	CHECK(dflt("step 5 train_loss: -0.5", &r) && r.has_loss && r.loss == -0.5);
	/* not numbers: no loss, the step still counts */
	CHECK(dflt("step 5 loss nan", &r) && !r.has_loss);
	CHECK(dflt("step 5 loss 1e999", &r) && !r.has_loss);
	CHECK(dflt("step 5 loss_scale 65536 tokens_seen 9", &r) && !r.has_loss && !r.has_tokens);
	CHECK(dflt("step 5 tokens 1.5", &r) && !r.has_tokens);
}

TEST(steps_user_pattern_first_group_is_the_step)
{
	struct step_parser p;
	struct strbuf err = STRBUF_INIT;
	struct got g = { .nr = 0 };
	CHECK_INT(step_parser_init_output(&p, "^it=([0-9]+) ", &err), 0);
	feed_str(&p, "it=3 loss=1.5\nstep 99\nit=x \nit=4 tokens=10\n", &g);
	CHECK_INT(g.nr, 2);
	CHECK_INT(g.u[0].r.step, 3);
	CHECK(g.u[0].r.has_loss && g.u[0].r.loss == 1.5);
	CHECK_INT(g.u[1].r.step, 4);
	CHECK(g.u[1].r.has_tokens && g.u[1].r.tokens == 10);
	step_parser_release(&p);

	/* a group that matched something other than digits is no step */
	CHECK_INT(step_parser_init_output(&p, "epoch ([0-9a-z]+)", &err), 0);
	g.nr = 0;
	feed_str(&p, "epoch 12\nepoch 1a\n", &g);
	CHECK_INT(g.nr, 1);
	CHECK_INT(g.u[0].r.step, 12);
	step_parser_release(&p);

	CHECK_INT(step_parser_init_output(&p, "step ([0-9]+", &err), -1);
	CHECK_CONTAINS(err.buf, "invalid --step-pattern 'step ([0-9]+': ");
	CHECK_INT(step_parser_init_output(&p, "step [0-9]+", &err), -1);
	CHECK_CONTAINS(err.buf, "no capture group");
	/* the pattern is quoted spelled out, never raw */
	CHECK_INT(step_parser_init_output(&p, "\x1b[31m(", &err), -1);
	CHECK_NOT_CONTAINS(err.buf, "\x1b");
	strbuf_release(&err);
}

TEST(steps_json_step_file)
{
	struct step_parser p;
	struct got g = { .nr = 0 };
	step_parser_init_json(&p);
	feed_str(&p,
		 "{\"step\": 120, \"loss\": 2.31, \"tokens\": 4194304}\n"
		 "not json\n"
		 "{\"loss\": 1}\n"
		 "{\"step\": -1}\n"
		 "{\"step\": 1.5}\n"
		 "{\"step\": \"121\"}\n"
		 "[121]\n"
		 "\n"
		 "  {\"step\": 121}  \n"
		 "{\"step\": 122, \"loss\": \"x\", \"tokens\": -4}\n"
		 "{\"step\": 123",
		 &g);
	CHECK_INT(g.nr, 3);
	CHECK_INT(g.u[0].r.step, 120);
	CHECK(g.u[0].r.has_loss && g.u[0].r.loss == 2.31);
	CHECK(g.u[0].r.has_tokens && g.u[0].r.tokens == 4194304);
	CHECK_INT(g.u[1].r.step, 121);
	CHECK(!g.u[1].r.has_loss);
	CHECK_INT(g.u[2].r.step, 122);
	CHECK(!g.u[2].r.has_loss && !g.u[2].r.has_tokens);
	CHECK_INT(p.bad_lines, 6);
	/* the unfinished last line is judged when more comes, or at the end */
	feed_str(&p, ", \"loss\": 0.5}\n", &g);
	CHECK_INT(g.nr, 4);
	CHECK_INT(g.u[3].r.step, 123);
	CHECK(g.u[3].r.has_loss && g.u[3].r.loss == 0.5);
	feed_str(&p, "{\"step\": 124}", &g);
	CHECK_INT(g.nr, 4);
	step_parser_finish(&p, collect, &g);
	CHECK_INT(g.nr, 5);
	step_parser_release(&p);
}

TEST(steps_backwards_and_jumps_are_events)
{
	struct step_parser p;
	struct got g = { .nr = 0 };
	CHECK_INT(step_parser_init_output(&p, NULL, NULL), 0);
	feed_str(&p, "step 10\nstep 20\nstep 20 eval\nstep 30\nstep 0\nstep 10\nstep 5000\n", &g);
	CHECK_INT(g.nr, 7);
	CHECK_INT(g.u[0].change, STEP_FIRST);
	CHECK_INT(g.u[1].change, STEP_NEXT);
	CHECK_INT(g.u[2].change, STEP_SAME);
	CHECK_INT(g.u[3].change, STEP_NEXT);
	CHECK_INT(g.u[4].change, STEP_BACKWARDS);
	CHECK_INT(g.u[4].prev, 30);
	CHECK_INT(g.u[5].change, STEP_NEXT);
	CHECK_INT(g.u[6].change, STEP_JUMP);
	CHECK_INT(g.u[6].prev, 10);
	CHECK_STR(step_change_name(g.u[6].change), "jump");
	CHECK_INT(p.backwards, 1);
	CHECK_INT(p.jumps, 1);
	step_parser_release(&p);
}

TEST(steps_huge_lines_and_garbage_bounded)
{
	struct step_parser p;
	struct got g = { .nr = 0 };
	CHECK_INT(step_parser_init_output(&p, NULL, NULL), 0);
	/* a megabyte line fed in pieces: its head is judged, the rest dropped, memory stays put */
	size_t big = 1 << 20;
	char *junk = xmalloc(big);
	memset(junk, 'x', big);
	feed_str(&p, "step 7 ", &g);
	for (int i = 0; i < 4; i++) {
		step_parser_feed(&p, junk, big, collect, &g);
		CHECK(p.line.len <= STEP_LINE_MAX);
		CHECK(p.line.alloc <= 2 * STEP_LINE_MAX + 64); /* one doubling past the cap at most */
	}
	feed_str(&p, " step 99\n", &g);
	CHECK_INT(g.nr, 1);
	CHECK_INT(g.u[0].r.step, 7);
	CHECK(g.u[0].truncated_line);
	CHECK_INT(p.overlong_lines, 1);
	/* binary garbage with NUL bytes, then ordinary lines again */
	for (size_t i = 0; i < big; i++)
		junk[i] = (char)(i * 131 + 7);
	step_parser_feed(&p, junk, big, collect, &g);
	CHECK(p.line.len <= STEP_LINE_MAX);
	const char nul_line[] = "\nstep\0 8\nstep 9\r";
	step_parser_feed(&p, nul_line, sizeof(nul_line) - 1, collect, &g);
	CHECK(g.nr >= 3);
	CHECK_INT(g.u[g.nr - 2].r.step, 8);
	CHECK_INT(g.u[g.nr - 1].r.step, 9);
	free(junk);
	step_parser_release(&p);
}

TEST(steps_chunks_and_carriage_returns)
{
	struct step_parser p;
	struct got g = { .nr = 0 };
	const char *text = "step 1 loss 3.0\r\nprogress 12%\rstep 2 loss 2.5\nstep 3\n";
	CHECK_INT(step_parser_init_output(&p, NULL, NULL), 0);
	for (const char *c = text; *c; c++)
		step_parser_feed(&p, c, 1, collect, &g);
	CHECK_INT(g.nr, 3);
	CHECK_INT(g.u[1].r.step, 2);
	CHECK(g.u[1].r.has_loss && g.u[1].r.loss == 2.5);
	CHECK_INT(g.u[2].r.step, 3);
	CHECK_INT(p.lines, 4);
	step_parser_release(&p);
}
