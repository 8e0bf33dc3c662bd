/*
 * test_steps.c: a trainer's progress read from its output and its step file (src/logs/steps.h):
 * the usual forms of a step line, loss and tokens beside it, a user's --step-pattern (and a bad
 * one named in the error), the JSON step file, megabyte lines and binary garbage at bounded
 * memory, and a counter that goes backwards or jumps reported as such.
 */
#include "../harness.h"
#include "../../src/logs/steps.h"

#include <math.h>

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

/* ---- the default rules, one trainer at a time (issue 18): lines in the real shapes recorded
 * in tests/data/realworld/steps.md, with values of our own ---- */

/* Feed text through a default parser that reads the lines' heads; the updates in g. */
static void rules(const char *text, struct got *g)
{
	struct step_parser p;
	CHECK_INT(step_parser_init_output(&p, NULL, NULL), 0);
	p.want_meta = true;
	g->nr = 0;
	feed_str(&p, text, g);
	step_parser_finish(&p, collect, g);
	step_parser_release(&p);
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * fabs(b) + 1e-6; /* stamps: to the millisecond */
}

#define CHECK_NEAR(a, b) CHECK_MSG(near((a), (b)), "%s == %.9g, expected %.9g", #a, (double)(a), \
				   (double)(b))

TEST(steps_rule_megatron)
{
	struct got g;
	rules("[2025-03-02 10:00:01] iteration      140/  300000 | consumed samples:       143360 |"
	      " elapsed time per iteration (ms): 2210.4 | learning rate: 1.050E-05 | global batch"
	      " size:  1024 | lm loss: 2.518300E+00 | loss scale: 1.0 | grad norm: 0.311 | number of"
	      " skipped iterations:   0 | number of nan iterations:   0 |\n"
	      " iteration      141/  300000 | consumed samples:       144384 | elapsed time per"
	      " iteration (ms): 2198.0 | learning rate: 1.057E-05 | lm loss: 2.497700E+00 | loss"
	      " scale: 1.0 |\n",
	      &g);
	CHECK_INT(g.nr, 2);
	CHECK_INT(g.u[0].r.step, 140);
	CHECK(g.u[0].r.has_total && g.u[0].r.total == 300000);
	CHECK(g.u[0].r.has_step_time);
	CHECK_NEAR(g.u[0].r.step_time, 2.2104);
	CHECK(g.u[0].r.has_loss);
	CHECK_NEAR(g.u[0].r.loss, 2.5183);
	CHECK(g.u[0].meta.has_time);
	CHECK_NEAR(g.u[0].meta.time, 1740909601.0); /* 2025-03-02T10:00:01Z */
	CHECK_INT(g.u[1].r.step, 141);
	CHECK_NEAR(g.u[1].r.step_time, 2.198);
	CHECK(!g.u[1].meta.has_time);
}

TEST(steps_rule_megatron_deepspeed)
{
	struct got g;
	/* its iteration line, DeepSpeed's own step and timer lines about the same step */
	rules("[2025-01-20 08:15:02,117] [INFO] [logging.py:96:log_dist] [Rank 0] step=52,"
	      " skipped=0, lr=[3.1e-06, 3.1e-06], mom=[[0.9, 0.95], [0.9, 0.95]]\n"
	      "[2025-01-20 08:15:02,301] [INFO] [timer.py:215:stop] epoch=0/micro_step=52/"
	      "global_step=52, RunningAvgSamplesPerSec=7.91, CurrSamplesPerSec=8.02,"
	      " MemAllocated=59.6GB, MaxMemAllocated=63.3GB\n"
	      "[2025-01-20 08:15:02,302] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) |"
	      " forward: 640.11 | backward: 2150.92 | step: 1160.07\n"
	      " samples/sec: 7.812 | iteration       52/   10000 | consumed tokens:    212992 |"
	      " elapsed time per iteration (ms): 4096.6 | learning rate: 3.100E-06 | lm_loss:"
	      " 1.0912E+01 | number of skipped iterations:   0 |\n",
	      &g);
	CHECK_INT(g.nr, 3); /* the time (ms) breakdown's `step: 1160.07` is no step */
	for (size_t i = 0; i < g.nr; i++)
		CHECK_INT(g.u[i].r.step, 52);
	CHECK(!g.u[0].r.has_step_time && !g.u[1].r.has_step_time);
	CHECK_NEAR(g.u[2].r.step_time, 4.0966);
	CHECK(g.u[2].r.has_tokens && g.u[2].r.tokens == 212992);
	CHECK_NEAR(g.u[2].r.loss, 10.912);
	CHECK(g.u[0].meta.has_time);
	CHECK_NEAR(g.u[1].meta.time - g.u[0].meta.time, 0.184);
}

TEST(steps_rule_nemo)
{
	struct got g;
	/* NeMo 1 (a Lightning bar; global_step is logged as a float), NeMo 2's progress lines */
	rules("Epoch 0:   1%|          | 812/76000 [9:20:01<864:10:40, 41.40s/it, loss=3.05, v_num=,"
	      " reduced_train_loss=3.040, global_step=811.0, consumed_samples=1.66e+6]\r"
	      "Epoch 0:   1%|          | 813/76000 [9:20:42<864:10:01, 41.38s/it, loss=3.05, v_num=,"
	      " reduced_train_loss=3.020, global_step=812.0, consumed_samples=1.66e+6]\n"
	      "Training epoch 0, iteration 130/149 | lr: 3e-05 | consumed_samples: 131 |"
	      " global_batch_size: 1 | global_step: 130 | reduced_train_loss: 1.241 |"
	      " train_step_timing in s: 0.03152 | val_loss: 4.1\n",
	      &g);
	CHECK_INT(g.nr, 3);
	CHECK_INT(g.u[0].r.step, 811);
	CHECK_NEAR(g.u[0].r.step_time, 41.40);
	CHECK_NEAR(g.u[0].r.loss, 3.05);
	CHECK_INT(g.u[1].r.step, 812);
	CHECK_INT(g.u[1].line_no, 1); /* the bar's redraws are one line of the file */
	CHECK_INT(g.u[2].r.step, 130);
	CHECK_INT(g.u[2].line_no, 2);
	CHECK_NEAR(g.u[2].r.step_time, 0.03152);
	CHECK_NEAR(g.u[2].r.loss, 1.241);
	/* a global_step in e-notation is not exact: the bar's count is the step */
	rules("Epoch 0:   6%|██   | 32040/500150 [6:28:43<94:39:17, 1.37it/s, loss=2.6, v_num=3,"
	      " reduced_train_loss=2.61, global_step=3.2e+4, consumed_samples=8.2e+6]\n",
	      &g);
	CHECK_INT(g.nr, 1);
	CHECK_INT(g.u[0].r.step, 32040);
	CHECK_NEAR(g.u[0].r.step_time, 1 / 1.37);
}

TEST(steps_rule_lightning)
{
	struct got g;
	/* a bar without a terminal (no bar glyphs), epochs counted on; the grad-norm keys that end
	 * in _step are no step; the validation bar between is no progress */
	rules("Epoch 3:  60% 9/15 [02:40<01:47, 17.80s/it, loss=0.431, v_num=k2_0,"
	      " grad_2.0_norm_model.stem.conv1.weight_step=2.410,"
	      " grad_2.0_norm_model.stem.bn1.bias_step=0.522]\r"
	      "Validation DataLoader 0:  40% 2/5 [00:01<00:02,  1.45it/s]\r"
	      "Epoch 3:  67% 10/15 [02:58<01:29, 17.81s/it, loss=0.428, v_num=k2_0]\n",
	      &g);
	CHECK_INT(g.nr, 2);
	CHECK_INT(g.u[0].r.step, 3 * 15 + 9);
	CHECK_NEAR(g.u[0].r.step_time, 17.80);
	CHECK_NEAR(g.u[0].r.loss, 0.431);
	CHECK_INT(g.u[1].r.step, 3 * 15 + 10);
	CHECK_INT(g.u[1].change, STEP_NEXT);
	struct step_reading r;
	CHECK(!dflt("train_loss=0.4, grad_2.0_norm_model.fc.weight_step=2.5, lr_step=3", &r));
}

TEST(steps_rule_hf_trainer_and_accelerate)
{
	struct got g;
	/* HF Trainer: the bar (no description) is the step; the loss dicts carry none; the eval
	 * bar (another total) is no progress; accelerate's no_trainer loops use the same bar */
	rules(" 10%|█         | 100/1000 [01:41<15:09,  1.01s/it]\r"
	      "{'loss': 2.3141, 'grad_norm': 1.18, 'learning_rate': 4.5e-05, 'epoch': 0.1}        \n"
	      "\r 10%|█         | 101/1000 [01:42<15:08,  1.02s/it]\r"
	      " 40%|████      | 20/50 [00:02<00:03,  9.10it/s]\r"
	      "{'eval_loss': 2.2, 'eval_runtime': 5.5, 'epoch': 0.1}\n"
	      " 10%|█         | 102/1000 [01:43<15:07,  1.25it/s]\n"
	      "Map: 100%|██████████| 1000/1000 [00:01<00:00, 900.00 examples/s]\n",
	      &g);
	CHECK_INT(g.nr, 3);
	CHECK_INT(g.u[0].r.step, 100);
	CHECK_NEAR(g.u[0].r.step_time, 1.01);
	CHECK(g.u[0].r.has_total && g.u[0].r.total == 1000);
	CHECK_INT(g.u[1].r.step, 101);
	CHECK_INT(g.u[2].r.step, 102);
	CHECK_NEAR(g.u[2].r.step_time, 0.8);
	CHECK_INT(g.u[2].line_no, 3);
	struct step_reading r;
	CHECK(!dflt("{'loss': 2.3141, 'learning_rate': 4.5e-05, 'epoch': 0.1}", &r));
}

TEST(steps_rule_deepspeed)
{
	struct got g;
	rules("[2024-11-02 03:06:58,985] [INFO] [logging.py:69:log_dist] [Rank 0] step=40,"
	      " skipped=2, lr=[5e-05], mom=[[0.9, 0.999]]\n"
	      "[2024-11-02 03:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.1,"
	      " MemAllocated=0.26GB, MaxMemAllocated=9.02GB\n"
	      "steps: 50 loss: 2.7731 iter time (s): 0.512 samples/sec: 250.034\n",
	      &g);
	CHECK_INT(g.nr, 2);
	CHECK_INT(g.u[0].r.step, 40);
	CHECK_INT(g.u[1].r.step, 50);
	CHECK_NEAR(g.u[1].r.step_time, 0.512);
	CHECK_NEAR(g.u[1].r.loss, 2.7731);
}

TEST(steps_rule_torchtitan)
{
	struct got g;
	rules("[rank0]:[titan] 2025-06-16 22:30:48,735 - root - INFO - [GC] Peforming periodical GC"
	      " collection. 0.06 seconds.\n"
	      "[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384 "
	      " memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%\n"
	      "[rank3]:[titan] 2025-06-16 22:31:04,970 - root - INFO - step: 210  loss:  6.0388 "
	      " grad_norm:  0.8319  memory: 49.66GiB(52.28%)  tps: 5,593  tflops: 323.92  mfu: 32.75%\n",
	      &g);
	CHECK_INT(g.nr, 2);
	CHECK_INT(g.u[0].r.step, 200);
	CHECK(g.u[0].r.has_mfu);
	CHECK_NEAR(g.u[0].r.mfu, 0.3429);
	CHECK_NEAR(g.u[0].r.loss, 6.1384);
	CHECK(!g.u[0].r.has_step_time);
	CHECK(g.u[0].meta.has_rank && g.u[0].meta.rank == 0);
	CHECK(g.u[1].meta.has_rank && g.u[1].meta.rank == 3);
	CHECK_NEAR(g.u[1].meta.time - g.u[0].meta.time, 14.648);
}

TEST(steps_rule_nanogpt)
{
	struct got g;
	rules("iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%\n"
	      "iter 10: loss 3.2202, time 893.76ms, mfu 16.68%\n"
	      "step 250: train loss 1.5440, val loss 1.7220\n"
	      "saving checkpoint to out\n"
	      "iter 250: loss 1.6113, time 35392.33ms, mfu 13.85%\n",
	      &g);
	CHECK_INT(g.nr, 4);
	CHECK_INT(g.u[0].r.step, 0);
	CHECK(!g.u[0].r.has_mfu); /* -100 % before its fifth iteration: no MFU */
	CHECK_NEAR(g.u[0].r.step_time, 9.37181);
	CHECK_INT(g.u[1].r.step, 10);
	CHECK_NEAR(g.u[1].r.step_time, 0.89376);
	CHECK_NEAR(g.u[1].r.mfu, 0.1668);
	CHECK_INT(g.u[2].r.step, 250); /* the eval line, before the iteration's own */
	CHECK(!g.u[2].r.has_step_time);
	CHECK_INT(g.u[3].r.step, 250);
	CHECK_INT(g.u[3].change, STEP_SAME);
	CHECK_NEAR(g.u[3].r.step_time, 35.39233);
}

TEST(steps_rule_litgpt)
{
	struct got g;
	rules("iter 76 step 38: loss 10.8259, iter time: 197.87ms\n"
	      "iter 77 step 39: loss 10.8259, iter time: 215.31ms (optimizer.step)\n"
	      "Epoch 1 | iter 120 step 30 | loss train: 1.162, val: n/a | iter time: 164.51 ms"
	      " (step) remaining time: 0:40:12\n",
	      &g);
	CHECK_INT(g.nr, 3);
	CHECK_INT(g.u[0].r.step, 76);
	CHECK_NEAR(g.u[0].r.step_time, 0.19787);
	CHECK_INT(g.u[1].r.step, 77);
	CHECK_NEAR(g.u[1].r.step_time, 0.21531);
	CHECK_INT(g.u[2].r.step, 120);
	CHECK_NEAR(g.u[2].r.step_time, 0.16451);
}

TEST(steps_rule_composer_and_llm_foundry)
{
	struct got g;
	/* composer's console logger (llm-foundry trains through it): the progress marker, its
	 * metrics on the lines below; the eval marker is no step */
	rules("[epoch=1][batch=16/1000]:\n"
	      "\t Train time/batch: 15\n"
	      "\t Train loss/train/total: 7.1020\n"
	      "[Eval batch=3/10] Eval on eval data\n"
	      "[batch=17/4800]:\n",
	      &g);
	CHECK_INT(g.nr, 2);
	CHECK_INT(g.u[0].r.step, 16);
	CHECK_INT(g.u[1].r.step, 17);
}

TEST(steps_rule_fairseq)
{
	struct got g;
	rules("2024-07-17 07:11:02 | INFO | train_inner | epoch 001:   2800 / 160368 loss=9.255,"
	      " ppl=611.12, wps=57.3, ups=0.04, wpb=1613, bsz=80, num_updates=2800, lr=2.8e-05,"
	      " gnorm=3.23, train_wall=13, wall=1236\n"
	      "| epoch 001:    450 / 1891 loss=11.521, nll_loss=10.881, ppl=1886.05, wps=52922,"
	      " ups=1.62, wpb=104928, bsz=5325, num_updates=445, lr=8.9e-05, gnorm=1.543, clip=0%,"
	      " oom=0, loss_scale=2.000, wall=882, train_wall=756\n"
	      "{\"epoch\": 25, \"loss\": \"3.097\", \"ups\": \"2.7\", \"num_updates\": \"53749\","
	      " \"loss_scale\": \"4.000\", \"wall\": 20721}\n",
	      &g);
	CHECK_INT(g.nr, 3);
	CHECK_INT(g.u[0].r.step, 2800);
	CHECK(!g.u[0].r.has_step_time); /* ups=0.04 is anything from 22 to 28 s */
	CHECK(g.u[0].meta.has_time);
	CHECK_NEAR(g.u[0].r.loss, 9.255);
	CHECK_INT(g.u[1].r.step, 445);
	CHECK_NEAR(g.u[1].r.step_time, 1 / 1.62);
	CHECK_INT(g.u[2].r.step, 53749);
	CHECK_NEAR(g.u[2].r.step_time, 1 / 2.7);
}

TEST(steps_rule_olmo)
{
	struct got g;
	rules("2024-02-09 12:00:00.123\tINFO\t[step=100/739328]\n"
	      "    train/CrossEntropyLoss=2.310\n"
	      "[step=101/739328,epoch=0,eta=2d3h]\n"
	      "[step=102/???,epoch=0]\n",
	      &g);
	CHECK_INT(g.nr, 3);
	CHECK_INT(g.u[0].r.step, 100);
	CHECK(g.u[0].r.has_total && g.u[0].r.total == 739328);
	CHECK_NEAR(g.u[0].meta.time, 1707480000.123);
	CHECK_INT(g.u[1].r.step, 101);
	CHECK_INT(g.u[2].r.step, 102);
	CHECK(!g.u[2].r.has_total);
}

TEST(steps_rule_metric_logger)
{
	struct got g;
	rules("Epoch: [2]  [1480/1504]  eta: 0:00:10  lr: 0.1  img/s: 612.3  loss: 2.3101 (2.4120)"
	      "  acc1: 41.0  time: 0.4123  data: 0.0012  max mem: 10210\n"
	      "Test:  [ 10/100]  eta: 0:00:09  loss: 1.9 (1.9)  time: 0.1000  data: 0.0010\n"
	      "Epoch: [3]  [   0/1504]  eta: 0:50:01  lr: 0.1  loss: 2.2 (2.2)  time: 1.9954  data:"
	      " 1.5001  max mem: 10210\n",
	      &g);
	CHECK_INT(g.nr, 2);
	CHECK_INT(g.u[0].r.step, 2 * 1504 + 1480);
	CHECK_NEAR(g.u[0].r.step_time, 0.4123);
	CHECK_NEAR(g.u[0].r.loss, 2.3101);
	CHECK_INT(g.u[1].r.step, 3 * 1504);
	CHECK_INT(g.u[1].change, STEP_NEXT);
}

TEST(steps_rule_false_step_keys)
{
	struct step_reading r;
	static const char *const no[] = {
		"loss_scale: 65536.0 | micro_step=12 | lr_warmup_step=2000",
		"grad_2.0_norm_model.layer1.0.conv1.weight_step=2.510",
		"rank=0 time (ms) | forward_microstep: 652.42 | step_microstep: 1172.13 | step: 1172.13",
		"max_steps: 5000, warmup_steps=100, steps_per_print=10",
		"global_step=3.2e+4",
		"Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]",
		"Validation DataLoader 0:  50%|█████     | 4/8 [00:01<00:01,  3.1it/s]",
		"[Eval batch=3/10] Eval on eval data",
		"steps 5000",
		"12:00:01 done",
	};
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		CHECK_MSG(!dflt(no[i], &r), "'%s' taken as step %llu", no[i],
			  (unsigned long long)r.step);
	/* remaining time, data time: no step time */
	CHECK(dflt("iter 5 | remaining time: 35780 days | data time: 0.5s", &r) &&
	      !r.has_step_time);
}

TEST(steps_line_meta_ranks_and_stamps)
{
	struct step_line_meta m;
	static const struct {
		const char *line;
		uint32_t rank;
		size_t head;
	} ranks[] = {
		{ "[rank3]:[titan] step: 1", 3, 8 },
		{ "[default12]:iter 5", 12, 12 },
		{ "3: step 7", 3, 3 },
		{ "  11: step 7", 11, 6 },
		{ "[1,5]<stdout>:step 7", 5, 14 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(ranks); i++) {
		size_t head = steps_line_meta(ranks[i].line, strlen(ranks[i].line), &m);
		CHECK_MSG(m.has_rank && m.rank == ranks[i].rank && head == ranks[i].head,
			  "'%s': rank %u head %zu", ranks[i].line, m.rank, head);
	}
	static const char *const norank[] = { "12:00:01 step 3", "2024-01-01 step 3",
					      "[2024-01-01 10:00:00] step 3", "[rank]: x" };
	for (size_t i = 0; i < ARRAY_SIZE(norank); i++) {
		steps_line_meta(norank[i], strlen(norank[i]), &m);
		CHECK_MSG(!m.has_rank, "'%s' gave rank %u", norank[i], m.rank);
	}
	static const struct {
		const char *line;
		double t;
	} stamps[] = {
		{ "2026-12-01T02:51:00.703Z step 1", 1796093460.703 },
		{ "[2026-12-01 02:51:00,500] step 1", 1796093460.5 },
		{ "[NeMo I 2026-12-01 02:51:00 train:12] step 1", 1796093460.0 },
		{ "0: 2026-12-01T04:51:00+02:00 step 1", 1796093460.0 },
		{ "2026-12-01 02:51:00 | INFO | train_inner | x", 1796093460.0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(stamps); i++) {
		steps_line_meta(stamps[i].line, strlen(stamps[i].line), &m);
		CHECK_MSG(m.has_time && near(m.time, stamps[i].t), "'%s' gave %.3f", stamps[i].line,
			  m.time);
	}
	static const char *const nostamp[] = { "2026-13-01 02:51:00", "2026-12-01 25:51:00",
					       "12026-12-01 02:51:00", "2026-12-01" };
	for (size_t i = 0; i < ARRAY_SIZE(nostamp); i++) {
		steps_line_meta(nostamp[i], strlen(nostamp[i]), &m);
		CHECK_MSG(!m.has_time, "'%s' read as a stamp", nostamp[i]);
	}
}
