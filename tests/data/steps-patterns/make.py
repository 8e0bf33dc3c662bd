#!/usr/bin/env python3
# tests/data/steps-patterns/make.py: writes the fixtures of 'vigil diagnose steps' shaped like
# real runs (issue 18). The shapes (a settled step, the first steps' times, checkpoint and
# evaluation costs, GC pauses) are from posted logs, tests/data/realworld/steppatterns.md; the
# values are our own, seeded. Run it from anywhere: python3 make.py (the files are committed).
import math, os, random

HERE = os.path.dirname(os.path.abspath(__file__))

def write(name, header, rows):
    with open(os.path.join(HERE, name), "w") as f:
        if header:
            f.write(header + "\n")
        for r in rows:
            f.write(r + "\n")

def lognorm(R, s):
    return math.exp(s * R.gauss(0, 1))

# Megatron-LM: 'elapsed time per iteration (ms)' ~5.2 s, iteration 1 ~12x (allocation, NCCL
# set-up), iteration 2 ~3x; a synchronous checkpoint every 200 iterations of ~60 s, and a
# final one at the last iteration. 1 % jitter. Fault: none but the checkpoints (periodic).
R = random.Random(11)
rows = []
for i in range(1, 1201):
    d = 5.2 * lognorm(R, 0.01)
    d *= {1: 12.0, 2: 3.1}.get(i, 1.0)
    if i % 200 == 0:
        d += 60 * (0.9 + 0.2 * R.random())
    rows.append("%d,%.4f" % (i, d))
write("megatron-ckpt200.csv", "step,step_time", rows)

# nanoGPT with torch.compile: 'iter 0: ... time 7961.94ms' then ~249 ms, then ~22 ms steps,
# 2 % jitter; no fault: healthy with its warm-up. JSON lines with step_time in seconds.
R = random.Random(12)
rows = []
for i in range(0, 600):
    d = 0.022 * lognorm(R, 0.02)
    d *= {0: 360.0, 1: 11.0, 2: 1.1}.get(i, 1.0)
    rows.append('{"step": %d, "step_time": %.5f, "loss": %.4f}' % (i, d, 4.2 - i * 0.003))
write("nanogpt-compile.jsonl", None, rows)

# torchtitan: 'step: 22 ... tps: 7,094 ... mfu: 0.16%' ~1.17 s a step, the first ~4x, a
# periodical GC of 0.12 s every 50 steps (no drop), log-normal 5 % jitter, Python GC pauses
# now and then; time stamps (Unix seconds, ms). Healthy.
R = random.Random(13)
t = 1.79e9
rows = []
for i in range(1, 1501):
    d = 1.17 * lognorm(R, 0.05)
    d *= {1: 4.0, 2: 1.4}.get(i, 1.0)
    if i % 50 == 0:
        d += 0.12
    if R.random() < 0.002:
        d *= 1.3 + 1.2 * R.random()
    t += d
    rows.append("%d,%.3f" % (i, t))
write("torchtitan-jitter-gc.csv", "step,time", rows)

# an HF-Trainer-like run evaluating every 100 steps by the clock (100 +- 1), ~0.9 s steps, an
# evaluation of ~20 s, a checkpoint every 500 steps of ~45 s on top, requeued once (a 30 min
# pause, then warm-up again) and resumed once from a checkpoint (steps go back).
R = random.Random(14)
t = 1.79e9
rows = []
into = 0
nxt_eval = 100
i = 1
crashed = False
while i <= 2000:
    d = 0.9 * lognorm(R, 0.015)
    d *= {0: 15.0, 1: 2.5, 2: 1.2}.get(into, 1.0)
    into += 1
    if i == nxt_eval:
        d += 20 * (0.9 + 0.2 * R.random())
        nxt_eval += 100 + R.choice((-1, 0, 1))
    if i % 500 == 0:
        d += 45 * (0.9 + 0.2 * R.random())
    if i == 1301:
        t += 1800
        d = 0.9 * 15
        into = 1
    t += d
    rows.append("%d,%.3f" % (i, t))
    if i == 1130 and not crashed:  # dies; resumed from the checkpoint at 1000
        crashed = True
        t += 300
        i = 1001
        into = 0
        nxt_eval = 1100
        continue
    i += 1
write("trainer-eval-ckpt-restarts.csv", "step,time", rows)
