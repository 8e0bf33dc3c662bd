#!/usr/bin/env python3
# gen.py: writes the raw trainer logs of tests/data/steps/ (issue 18), each in the real line
# shape of its trainer (sources: tests/data/realworld/steps.md) with values of our own, seeded:
#   python3 tests/data/steps/gen.py tests/data/steps
# The tests (tests/unit/test_steps_raw.c) run 'vigil diagnose steps|stragglers' on them.
import random
import sys
import time

out = sys.argv[1] if len(sys.argv) > 1 else "."
R = random.Random(18)
T0 = 1764583200.0  # 2025-12-01 10:00:00 UTC


def stamp(t, sep=" ", ms=None):
    s = time.strftime("%Y-%m-%d" + sep + "%H:%M:%S", time.gmtime(t))
    if ms == ",":
        s += ",%03d" % int((t % 1) * 1000)
    elif ms == ".":
        s += ".%03d" % int((t % 1) * 1000)
    return s


def jitter(x, sd=0.01):
    return x * (1 + R.gauss(0, sd))


# Megatron-LM: 300 iterations of 2.2 s, a checkpoint every 50 (6x the step), start-up lines.
def megatron():
    t = T0
    with open(out + "/megatron.log", "w") as f:
        f.write("using world size: 64, data-parallel size: 8, context-parallel size: 1, "
                "tensor-model-parallel size: 8, pipeline-model-parallel size: 1\n")
        f.write("[after dataloaders are built] datetime: %s\n" % stamp(t))
        f.write("training ...\n")
        for i in range(1, 301):
            st = jitter(2.2)
            if i % 50 == 0:
                st *= 6
                f.write("saving checkpoint at iteration %7d to /ckpt in torch_dist format\n" % i)
            t += st
            f.write("[%s] iteration %8d/  300000 | consumed samples: %12d | elapsed time per "
                    "iteration (ms): %.1f | learning rate: %.6E | global batch size:  1024 | "
                    "lm loss: %.6E | loss scale: 1.0 | grad norm: %.3f | number of skipped "
                    "iterations:   0 | number of nan iterations:   0 |\n"
                    % (stamp(t), i, i * 1024, st * 1000, 1e-5 + i * 1e-9, 2.6 - i * 0.001,
                       abs(R.gauss(0.3, 0.05))))


# torchtitan: 4 ranks, every rank logs every 10 steps through torchrun's [rankN]: prefix; the
# lines of one step arrive in any rank order; healthy at 34 % MFU.
def torchtitan():
    t = T0
    lines = []
    for r in range(4):
        lines.append((t, r, "[rank%d]:[titan] %s - root - INFO - Training starts at step 1\n"
                      % (r, stamp(t, ms=","))))
    for step in range(10, 801, 10):
        t += jitter(14.0, 0.005)
        mfu = jitter(34.3, 0.005)
        loss = 6.5 - step * 0.001
        for r in range(4):
            tr = t + R.random() * 0.02
            lines.append((tr, r, "[rank%d]:[titan] %s - root - INFO - step: %3d  loss: %7.4f  "
                          "grad_norm: %7.4f  memory: 49.66GiB(52.28%%)  tps: %s  tflops: %.2f  "
                          "mfu: %.2f%%\n" % (r, stamp(tr, ms=","), step, loss,
                                              abs(R.gauss(0.8, 0.1)),
                                              "{:,}".format(int(5860 * mfu / 34.3)),
                                              339.2 * mfu / 34.3, mfu)))
        if step % 100 == 0:
            for r in range(4):
                lines.append((t + 0.03, r, "[rank%d]:[titan] %s - root - INFO - [GC] Peforming "
                              "periodical GC collection. 0.06 seconds.\n"
                              % (r, stamp(t + 0.03, ms=","))))
    lines.sort(key=lambda x: x[0])
    with open(out + "/torchtitan.log", "w") as f:
        for _, _, s in lines:
            f.write(s)


# nanoGPT: iter lines every iteration (mfu -100% until the fifth), an eval line at 0 and 100.
def nanogpt():
    with open(out + "/nanogpt.log", "w") as f:
        f.write("tokens per iteration will be: 491,520\n")
        f.write("step 0: train loss 10.9876, val loss 10.9881\n")
        mfu = -1.0
        for i in range(0, 201):
            dt = 9.37 if i == 0 else jitter(0.894, 0.005)
            if i == 100:
                f.write("step 100: train loss 4.1021, val loss 4.1207\n")
                f.write("saving checkpoint to out\n")
            if i >= 5:
                m = 16.68 * 0.894 / dt
                mfu = m if mfu == -1.0 else 0.9 * mfu + 0.1 * m
            f.write("iter %d: loss %.4f, time %.2fms, mfu %.2f%%\n"
                    % (i, 4.3 - i * 0.005, dt * 1000, mfu * (100 if mfu == -1.0 else 1)))


# HF Trainer: the training bar (no description) redrawn after '\r', loss dicts, an eval bar; the
# step time goes from 1.0 s to 1.5 s at step 120 (a step down).
def hf():
    with open(out + "/hf-trainer.log", "w") as f:
        f.write("***** Running training *****\n  Num examples = 48,000\n"
                "  Total optimization steps = 240\n")
        el = 0.0
        for i in range(1, 241):
            st = jitter(1.0 if i < 120 else 1.5)
            el += st
            left = (240 - i) * st
            rate = ("%.2fs/it" % st) if st >= 1 else ("%.2fit/s" % (1 / st))
            pct = 100 * i // 240
            bar = ("█" * (pct // 10)).ljust(10)
            f.write("\r%3d%%|%s| %d/240 [%02d:%02d<%02d:%02d, %s]"
                    % (pct, bar, i, el // 60, el % 60, left // 60, left % 60, rate))
            if i % 20 == 0:
                f.write("\n{'loss': %.4f, 'grad_norm': %.4f, 'learning_rate': %.3e, "
                        "'epoch': %.2f}\n" % (2.3 - i * 0.002, abs(R.gauss(1.1, 0.1)),
                                              5e-5 * (1 - i / 240), i / 240))
            if i == 200:
                for j in range(1, 31, 7):
                    f.write("\r%3d%%|%s| %d/30 [00:0%d<00:03,  9.10it/s]"
                            % (100 * j // 30, ("█" * (10 * j // 30)).ljust(10), j, j // 10))
                f.write("\n{'eval_loss': 2.01, 'eval_runtime': 3.3, 'epoch': 0.83}\n")
        f.write("\n{'train_runtime': %.1f, 'train_samples_per_second': 40.1, "
                "'train_steps_per_second': 0.8, 'train_loss': 2.1, 'epoch': 1.0}\n" % el)


# NeMo 2: its progress lines with train_step_timing; healthy.
def nemo2():
    with open(out + "/nemo2.log", "w") as f:
        f.write("[NeMo I %s nemo_logging:393] Setting up optimizer\n" % stamp(T0))
        for i in range(0, 150):
            f.write("Training epoch 0, iteration %d/149 | lr: 3e-05 | consumed_samples: %d | "
                    "global_batch_size: 8 | global_step: %d | reduced_train_loss: %.3f | "
                    "train_step_timing in s: %.5f\n"
                    % (i, (i + 1) * 8, i, 2.4 - i * 0.004, jitter(0.4512, 0.005)))


# NeMo 1: a Lightning bar (global_step as a float) of 41 s steps where 4.1 s was expected.
def nemo1():
    el = 0
    with open(out + "/nemo1.log", "w") as f:
        for i in range(795, 860):
            st = jitter(41.4)
            el += st
            f.write("Epoch 0:   1%%|          | %d/77225 [%d:%02d:%02d<878:01:48, %.2fs/it, "
                    "loss=3.1, v_num=, reduced_train_loss=%.3f, global_step=%d.0, "
                    "consumed_samples=1.63e+6]\r" % (i, el // 3600, el % 3600 // 60, el % 60,
                                                   st, 3.09 - (i - 795) * 0.001, i - 1))
        f.write("\n")


# srun --label: 8 ranks each printing their own iteration time; rank 5 is 12 % slower.
def stragglers():
    with open(out + "/srun-label.log", "w") as f:
        for i in range(1, 121):
            for r in range(8):
                dt = jitter(0.51, 0.004) * (1.12 if r == 5 else 1.0)
                f.write("%d: iter %d: loss %.4f, time %.2fms\n" % (r, i, 3.2 - i * 0.002,
                                                                   dt * 1000))



# Megatron-DeepSpeed's training_log (microsoft/Megatron-DeepSpeed megatron/training.py): consumed
# tokens as a running total; 120 iterations of 2.0 s, 128 samples of 2048 tokens each. Its own
# generator, so that the logs above keep their values.
def megatron_deepspeed():
    r = random.Random(32)
    with open(out + "/megatron-deepspeed.log", "w") as f:
        f.write("training ...\n")
        for i in range(1, 121):
            st = 2.0 * (1 + r.gauss(0, 0.01))
            f.write(" iteration %8d/%8d | consumed samples: %12d | consumed tokens: %12d | "
                    "elapsed time per iteration (ms): %.1f | learning rate: %.3E | global batch "
                    "size:   128 | lm loss: %.6E | loss scale: 1.0 | grad norm: %.3f | actual "
                    "seqlen:  2048 | number of skipped iterations:   0 | number of nan "
                    "iterations:   0 | samples per second: %.3f | TFLOPs: %.2f |\n"
                    % (i, 50000, i * 128, i * 128 * 2048, st * 1000, 3e-4 * min(1, i / 100),
                       7.2 - i * 0.01, abs(r.gauss(0.9, 0.1)), 128 / st, 360 / st))
megatron()
torchtitan()
nanogpt()
hf()
nemo2()
nemo1()
stragglers()
megatron_deepspeed()
