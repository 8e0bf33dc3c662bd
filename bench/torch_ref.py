#!/usr/bin/env python3
# torch_ref.py: the torch side of bench/device-stress.sh, measured the way vigil's helpers measure
# (same shapes, dtypes, sizes, CUDA events, medians), printed as JSON lines.
#   python3 bench/torch_ref.py gemm [--size 8192] [--gpu 0]
#   python3 bench/torch_ref.py copy [--bytes 4G] [--gpu 0]
#   torchrun --nproc_per_node=2 bench/torch_ref.py allreduce [--sizes 64M:4G]
import argparse
import json
import os
import sys

import torch


def parse_size(s):
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B").rstrip("I")
    if s[-1] in mul:
        return int(float(s[:-1]) * mul[s[-1]])
    return int(s)


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def gemm(args):
    dev = torch.device("cuda", args.gpu)
    torch.cuda.set_device(dev)
    torch.backends.cuda.matmul.allow_tf32 = True
    n = args.size
    flops = 2.0 * n * n * n
    ring = 4
    for name in args.dtypes.split(","):
        g = torch.Generator(device=dev).manual_seed(1)
        if name == "fp8":
            if not hasattr(torch, "float8_e4m3fn"):
                continue
            a = (torch.rand(n, n, device=dev, generator=g) * 2 - 1).to(torch.float8_e4m3fn)
            b = (torch.rand(n, n, device=dev, generator=g) * 2 - 1).to(torch.float8_e4m3fn)
            bt = b.t()  # column-major K x N, as _scaled_mm wants
            one = torch.ones((), device=dev, dtype=torch.float32)

            def op(out):
                return torch._scaled_mm(a, bt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            outs = [None] * ring
        else:
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[name]
            a = (torch.rand(n, n, device=dev, generator=g) * 2 - 1).to(dt)
            b = (torch.rand(n, n, device=dev, generator=g) * 2 - 1).to(dt)
            outs = [torch.empty(n, n, device=dev, dtype=dt) for _ in range(ring)]

            def op(out):
                return torch.matmul(a, b, out=out)
        for _ in range(3):
            op(outs[0])
        torch.cuda.synchronize()
        times = []
        import time
        t_end = time.monotonic() + args.seconds
        while len(times) < args.windows or time.monotonic() < t_end:
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            for i in range(ring):
                op(outs[i])
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1) * 1e-3)
        tf = [flops * ring / t / 1e12 for t in times]
        print(json.dumps({"type": "torch_gemm", "gpu": args.gpu, "dtype": name, "m": n, "n": n,
                          "k": n, "tflops": round(median(tf), 1), "windows": len(tf),
                          "torch": torch.__version__}), flush=True)


def copy(args):
    dev = torch.device("cuda", args.gpu)
    torch.cuda.set_device(dev)
    nbytes = parse_size(args.bytes)
    a = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    t = []
    for _ in range(args.reps):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        b.copy_(a)
        e1.record()
        e1.synchronize()
        t.append(e0.elapsed_time(e1) * 1e-3)
    assert torch.equal(a, b)
    print(json.dumps({"type": "torch_copy", "gpu": args.gpu, "bytes": nbytes,
                      "copy_gbps": round(2 * nbytes / median(t) / 1e9)}), flush=True)


def allreduce(args):
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    lo, hi = [parse_size(x) for x in args.sizes.split(":")]
    sz = lo
    while sz <= hi:
        n = sz // 4
        x = torch.ones(n, dtype=torch.float32, device="cuda")
        for _ in range(args.warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(args.iters):
            dist.all_reduce(x)
        e1.record()
        e1.synchronize()
        t = torch.tensor([e0.elapsed_time(e1) * 1e-3 / args.iters], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        t = t.item()
        algbw = n * 4 / t / 1e9
        if rank == 0:
            print(json.dumps({"type": "torch_allreduce", "nranks": world, "bytes": n * 4,
                              "time_us": round(t * 1e6, 1), "algbw": round(algbw, 2),
                              "busbw": round(algbw * 2 * (world - 1) / world, 2),
                              "nccl": ".".join(map(str, torch.cuda.nccl.version()))}),
                  flush=True)
        del x
        sz *= 2
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["gemm", "copy", "allreduce"])
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--dtypes", default="bf16,fp16,tf32,fp8")
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--seconds", type=float, default=0, help="sustain each dtype this long")
    p.add_argument("--bytes", default="4G")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--sizes", default="64M:4G")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    {"gemm": gemm, "copy": copy, "allreduce": allreduce}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
