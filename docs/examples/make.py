#!/usr/bin/env python3
# make.py: writes the sample inputs of docs/examples/ (issue 22), seeded, so that a newcomer can
# try 'vigil diagnose steps|stragglers|logs' and 'vigil report' on day one:
#   python3 docs/examples/make.py docs/examples
# The trainer lines keep the real shapes of tests/data/steps/gen.py (sources:
# tests/data/realworld/steps.md); the run directory keeps the layout 'vigil run' writes
# (journal.jsonl, attempt-K/ with rank-R.out/.err, srun.log, step-id, steps.jsonl; the journal
# records as docs/SUPERVISOR.md gives them). Values are our own.
import json
import os
import random
import sys
import time

out = sys.argv[1] if len(sys.argv) > 1 else "."
R = random.Random(22)
T0 = 1795435200.0  # 2026-11-21 10:00:00 UTC


def stamp(t, sep=" "):
    return time.strftime("%Y-%m-%d" + sep + "%H:%M:%S", time.gmtime(t))


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)


def jitter(x, sd=0.01):
    return x * (1 + R.gauss(0, sd))


def write(rel, text):
    p = os.path.join(out, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)


# Megatron-LM, 160 iterations of 2.2 s; a few single slow iterations at irregular steps (a data
# loader stall, a host busy with something else): diagnose steps says random-drops.
def megatron():
    t = T0
    slow = {23, 58, 71, 104, 139}
    s = ["using world size: 64, data-parallel size: 8, context-parallel size: 1, "
         "tensor-model-parallel size: 8, pipeline-model-parallel size: 1\n",
         "[after dataloaders are built] datetime: %s\n" % stamp(t), "training ...\n"]
    for i in range(1, 161):
        st = jitter(2.2, 0.005) * (3.5 if i in slow else 1)
        t += st
        s.append("[%s] iteration %8d/  300000 | consumed samples: %12d | elapsed time per "
                 "iteration (ms): %.1f | learning rate: %.6E | global batch size:  1024 | "
                 "lm loss: %.6E | loss scale: 1.0 | grad norm: %.3f | number of skipped "
                 "iterations:   0 | number of nan iterations:   0 |\n"
                 % (stamp(t), i, i * 1024, st * 1000, 1e-5 + i * 1e-9, 2.6 - i * 0.001,
                    abs(R.gauss(0.3, 0.05))))
    write("steps/megatron.log", "".join(s))


# nanoGPT, 120 iterations, steady: healthy.
def nanogpt():
    s = ["tokens per iteration will be: 491,520\n", "step 0: train loss 10.9876, val loss 10.9881\n"]
    mfu = -1.0
    for i in range(0, 121):
        dt = 9.37 if i == 0 else jitter(0.894, 0.004)
        if i >= 5:
            m = 16.68 * 0.894 / dt
            mfu = m if mfu == -1.0 else 0.9 * mfu + 0.1 * m
        s.append("iter %d: loss %.4f, time %.2fms, mfu %.2f%%\n"
                 % (i, 4.3 - i * 0.005, dt * 1000, mfu * (100 if mfu == -1.0 else 1)))
    write("steps/nanogpt.log", "".join(s))


# srun --label: 8 ranks, each printing its own iteration time; rank 5 is 12 % slower.
def srun_label():
    s = []
    for i in range(1, 61):
        for r in range(8):
            dt = jitter(0.51, 0.004) * (1.12 if r == 5 else 1.0)
            s.append("%d: iter %d: loss %.4f, time %.2fms\n" % (r, i, 3.2 - i * 0.002, dt * 1000))
    write("steps/srun-label.log", "".join(s))


# A 'vigil run' of 4 hosts and a spare: attempt 0 dies at step 64 when gpu-a03's GPU falls off
# the bus (CUDA error on rank 2, the others' NCCL watchdog); the checks find Xid 79 on gpu-a03,
# it is excluded and drained, and attempt 1 resumes from the step-50 checkpoint on gpu-a05.
def run():
    hosts = ["gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04"]
    j = []

    def rec(t, kind, attempt, **kw):
        d = {"t": round(t, 3), "kind": kind, "attempt": attempt}
        d.update(kw)
        j.append(json.dumps(d, separators=(",", ":")).replace('"t":%s,' % d["t"],
                                                              '"t":%.3f,' % d["t"]))

    t = T0
    rec(t, "run_started", 0)
    t += 3.1
    rec(t, "event", 0, **{"class": "preflight", "detail": "gpu-a01 healthy; gpu-a02 healthy; "
                          "gpu-a03 healthy; gpu-a04 healthy; gpu-a05 healthy"})
    rec(t + 0.01, "attempt_started", 0, restarts=0, hosts=hosts)
    rec(t + 0.7, "event", 0, **{"class": "launched", "detail": "4117.0"})
    t += 12.0  # start-up
    outs = {r: [] for r in range(4)}
    steps = []
    for step in range(1, 65):
        t += jitter(1.0, 0.01)
        loss = 2.9 - step * 0.004
        rec(t, "step", 0, step=step, loss=round(loss, 6))
        steps.append(json.dumps({"step": step, "loss": loss, "tokens": step * 4096}))
        for r in range(4):
            outs[r].append("%s step %d loss %.6f\n" % (iso(t), step, loss))
    crash = t + 0.4
    err2 = ["%s [rank2]: RuntimeError: CUDA error: unspecified launch failure\n" % iso(crash),
            "%s [rank2]: CUDA kernel errors might be asynchronously reported at some other API "
            "call, so the stacktrace below might be incorrect.\n" % iso(crash)]
    err0 = ["%s [rank%d]:[E1121 %s 5120 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID "
            "0(default_pg) Rank %d] Process group watchdog thread terminated with exception: "
            "NCCL error: remote process exited or there was a network error, NCCL version "
            "2.21.5\n" % (iso(crash + 2.0), r, time.strftime("%H:%M:%S", time.gmtime(crash + 2)),
                          r) for r in (0,)]
    srun = ["%s E srun: error: gpu-a03: task 2: Exited with exit code 1\n" % iso(crash + 0.6),
            "%s E srun: forcing job termination\n" % iso(crash + 0.7),
            "%s E srun: error: gpu-a01: task 0: Killed\n" % iso(crash + 2.3),
            "%s E srun: error: gpu-a02: task 1: Killed\n" % iso(crash + 2.3),
            "%s E srun: error: gpu-a04: task 3: Killed\n" % iso(crash + 2.4)]
    for r in range(4):
        write("run/attempt-0/rank-%d.out" % r, "".join(outs[r]))
    write("run/attempt-0/rank-2.err", "".join(err2))
    write("run/attempt-0/rank-0.err", "".join(err0))
    write("run/attempt-0/srun.log", "".join(srun))
    write("run/attempt-0/step-id", "4117.0\n")
    write("run/attempt-0/steps.jsonl", "\n".join(steps) + "\n")
    rec(crash + 0.6, "event", 0, **{"class": "crash", "host": "gpu-a03",
                                    "detail": "a task exited with status 1",
                                    "happened": round(crash + 0.6, 3),
                                    "detected": round(crash + 0.6, 3), "latency_s": 0.0})
    rec(crash + 1.9, "event", 0, **{"class": "diagnosis", "detail": "logs: first error: a CUDA "
                                    "error on gpu-a03 rank 2: %s [rank2]: RuntimeError: CUDA "
                                    "error: unspecified launch failure" % iso(crash)})
    rec(crash + 2.6, "attempt_ended", 0, outcome="crash", code=1, step=64)
    why = ("kernel: Xid 79 on GPU 0000:17:00.0: GPU has fallen off the bus; reboot the node")
    t = crash + 9.0
    rec(t, "event", 0, **{"class": "checks", "detail": "gpu-a01 healthy; gpu-a02 healthy; "
                          "gpu-a03 unhealthy (%s); gpu-a04 healthy" % why})
    rec(t + 0.01, "host_excluded", 0, host="gpu-a03", reason="vigil: " + why)
    rec(t + 0.05, "event", 0, **{"class": "drained", "host": "gpu-a03", "detail": "vigil: " + why})
    hosts1 = ["gpu-a01", "gpu-a02", "gpu-a04", "gpu-a05"]
    t += 1.0
    rec(t, "attempt_started", 1, restarts=1, hosts=hosts1)
    rec(t + 0.8, "event", 1, **{"class": "launched", "detail": "4117.1"})
    t += 15.0  # start-up and the checkpoint load
    outs = {r: [] for r in range(4)}
    steps = []
    for step in range(51, 181):
        t += jitter(1.0, 0.01)
        loss = 2.9 - step * 0.004
        rec(t, "step", 1, step=step, loss=round(loss, 6))
        steps.append(json.dumps({"step": step, "loss": loss, "tokens": step * 4096}))
        for r in range(4):
            outs[r].append("%s step %d loss %.6f\n" % (iso(t), step, loss))
    for r in range(4):
        write("run/attempt-1/rank-%d.out" % r, "".join(outs[r]))
    write("run/attempt-1/srun.log", "")
    write("run/attempt-1/step-id", "4117.1\n")
    write("run/attempt-1/steps.jsonl", "\n".join(steps) + "\n")
    rec(t + 1.2, "attempt_ended", 1, outcome="done", code=0, step=180)
    rec(t + 1.3, "run_ended", 1, outcome="done")
    write("run/journal.jsonl", "\n".join(j) + "\n")


megatron()
nanogpt()
srun_label()
run()
