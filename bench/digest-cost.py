#!/usr/bin/env python3
"""bench/digest-cost.py: what contrib/python/vigil_train.py's parameter digest costs on a GPU,
against the memory's own ceiling measured in the same run (docs/PERFORMANCE.md).

    PYTHONPATH=contrib/python python3 bench/digest-cost.py [--gib 10] [--reps 30]

Parameters: --gib GiB of bf16 tensors on cuda:0 in a model's shapes (a few large matrices per
layer and small vectors), random values. Printed, each the median of --reps timed runs (CUDA
events, after a warm-up):
  copy      a device-to-device copy of one 1 GiB buffer: bytes read + written over time, the
            HBM ceiling the digest is judged against
  floor     the parameters' bytes over that ceiling: no digest reads them faster
  torch-sum torch.sum of every tensor (the framework's own reduction, one pass, as reference)
  digest    vigil_train.digest(params) (one pass, int64 sums, one copy to the host)
Checked: the digest is the same in every repeat; one bit flipped at a random place (any bit of
a random element of a random tensor) changes it, every time, and flipping it back restores it.
"""
import argparse
import random
import statistics
import sys
import time

import torch

import vigil_train


def timed(fn, reps):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for i in range(reps):
        start[i].record()
        fn()
        end[i].record()
        torch.cuda.synchronize()
        out.append(start[i].elapsed_time(end[i]))
    return statistics.median(out), min(out), max(out)


def model_params(gib, hidden=8192):
    """bf16 tensors in a transformer's shapes: per layer qkv (3h x h), out (h x h), two MLP
    matrices (4h x h), two norms (h); until gib GiB."""
    params, total, want = [], 0, int(gib * (1 << 30))
    g = torch.Generator(device="cuda").manual_seed(7)
    shapes = [(3 * hidden, hidden), (hidden, hidden), (4 * hidden, hidden), (hidden, 4 * hidden),
              (hidden,), (hidden,)]
    while total < want:
        for s in shapes:
            t = torch.randn(*s, device="cuda", dtype=torch.bfloat16, generator=g)
            params.append(t)
            total += t.numel() * t.element_size()
            if total >= want:
                break
    return params, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=10)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--flips", type=int, default=50)
    ap.add_argument("--variants", action="store_true",
                    help="also time integer sums of other widths (view, accumulator)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("digest-cost: no CUDA device", file=sys.stderr)
        return 77
    dev = torch.cuda.get_device_name(0)
    buf = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    buf.random_(0, 255)
    dst = torch.empty_like(buf)
    copy_ms, _, _ = timed(lambda: dst.copy_(buf), a.reps)
    hbm = 2 * (1 << 30) / (copy_ms / 1e3)  # bytes/s, read + write
    del buf, dst
    params, total = model_params(a.gib)
    floor_ms = total / hbm * 1e3
    sum_ms, _, _ = timed(lambda: [p.sum() for p in params], a.reps)
    dig_ms, dig_min, dig_max = timed(lambda: vigil_train.digest(params), a.reps)
    if a.variants:
        kinds = {"i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64}
        for view, acc in [("i16", "i64"), ("i16", "i32"), ("i32", "i32"), ("i32", "i64"),
                          ("i64", "i64")]:
            v = [p.reshape(-1).view(kinds[view]) for p in params]
            ms, _, _ = timed(lambda: [x.sum(dtype=kinds[acc]) for x in v], a.reps)
            print("variant view %-3s sum %-3s %8.3f ms" % (view, acc, ms))

    ref = vigil_train.digest(params)
    same = all(vigil_train.digest(params) == ref for _ in range(20))
    rng = random.Random(11)
    caught = restored = 0
    for _ in range(a.flips):
        t = rng.choice(params)
        flat = t.view(-1).view(torch.int16)
        i = rng.randrange(flat.numel())
        bit = rng.randrange(16)
        mask = torch.tensor(-(1 << 15) if bit == 15 else 1 << bit, dtype=torch.int16,
                            device="cuda")
        flat[i:i + 1].bitwise_xor_(mask)
        caught += vigil_train.digest(params) != ref
        flat[i:i + 1].bitwise_xor_(mask)
        restored += vigil_train.digest(params) == ref

    gib = total / (1 << 30)
    print("device: %s; %d tensors, %.2f GiB bf16" % (dev, len(params), gib))
    print("%-10s %10s %12s" % ("what", "ms", "ms per 10 GiB"))
    print("%-10s %10.3f %12s   (%.0f GB/s read+write)" % ("copy 1 GiB", copy_ms, "-", hbm / 1e9))
    print("%-10s %10.3f %12.3f" % ("floor", floor_ms, floor_ms * 10 / gib))
    print("%-10s %10.3f %12.3f" % ("torch-sum", sum_ms, sum_ms * 10 / gib))
    print("%-10s %10.3f %12.3f   (min %.3f, max %.3f; %.2f x floor, %.2f x torch-sum)"
          % ("digest", dig_ms, dig_ms * 10 / gib, dig_min, dig_max, dig_ms / floor_ms,
             dig_ms / sum_ms))
    print("same digest in 20 repeats: %s; one-bit flips caught: %d of %d; restored: %d of %d"
          % ("yes" if same else "NO", caught, a.flips, restored, a.flips))
    return 0 if same and caught == a.flips and restored == a.flips else 1


if __name__ == "__main__":
    sys.exit(main())
