"""nccl_ddp.py: a PyTorch DDP job on NCCL for the flight recorder's device runs
(bench/nccl-recorder.sh). One process per rank, started by the script with RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT and CUDA_DEVICE set.

  python3 nccl_ddp.py hang  STOP_AT   rank 1 stops before its STOP_AT-th all_reduce (sleeps);
                                      the others wait in it until the watchdog fires
  python3 nccl_ddp.py steps N         N timed training steps; prints {"median_ms": ...} (rank 0)

One gradient bucket per step (bucket_cap_mb above the model's size), so step k of DDP is the
k-th all_reduce of the job.
"""
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    mode, arg = sys.argv[1], int(sys.argv[2])
    rank = int(os.environ["RANK"])
    dev = torch.device("cuda", int(os.environ.get("CUDA_DEVICE", "0")))
    torch.cuda.set_device(dev)
    timeout = datetime.timedelta(seconds=int(os.environ.get("HANG_TIMEOUT", "120")))
    dist.init_process_group("nccl", timeout=timeout, device_id=dev)
    torch.manual_seed(1)
    if mode == "hang":
        model = torch.nn.Linear(1024, 1024).to(dev)
        batch = 64
    else:
        width = 4096
        model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(4)]).to(dev)
        batch = 256
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1024)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(batch, model[0].in_features if mode != "hang" else 1024, device=dev)
    times = []
    steps = arg if mode == "hang" else arg + 20
    for step in range(1, steps + 1):
        if mode == "hang" and rank == 1 and step == arg:
            print(f"rank 1: stopping before all_reduce {step}", flush=True)
            time.sleep(100000)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = ddp(x).float().pow(2).mean()
        loss.backward()  # the step's all_reduce
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        if mode == "hang":
            print(f"rank {rank}: step {step} done", flush=True)
    if mode == "steps" and rank == 0:
        t = times[20:]
        print(json.dumps({"median_ms": statistics.median(t) * 1e3, "steps": len(t),
                          "p10_ms": sorted(t)[len(t) // 10] * 1e3,
                          "p90_ms": sorted(t)[len(t) * 9 // 10] * 1e3}), flush=True)
    if mode == "hang":
        # ranks other than 1 never get here: their 50th all_reduce waits for rank 1
        print(f"rank {rank}: finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
