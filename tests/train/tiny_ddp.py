#!/usr/bin/python3
"""tiny_ddp.py: the real training job that vigil's end-to-end tests supervise (issue 9).

A small deterministic model trained with torch.distributed (gloo, CPU only, env:// init) and
DDP, following the resume contract of docs/SUPERVISOR.md: VIGIL_ATTEMPT > 0 (or --resume) resumes
from the latest checkpoint, and the loss after a resume equals an undisturbed run's bit for bit.
That holds because nothing carries over between steps except what the checkpoint holds (model,
optimizer, step, RNG state): the batch of step N is a pure function of (seed, N, rank).

Output, one line per step on every rank (flushed): `step N loss X`, X the loss averaged over the
ranks, so every rank prints the same line; at the end `final loss X`. X is printed with repr()
(17 significant digits: equal strings mean equal doubles). Rank 0 also appends
{"step": N, "loss": X, "tokens": T} to $VIGIL_STEP_FILE when it is set, and writes the
checkpoints (tmp file + fsync + os.replace, so a kill never leaves a torn one).

Under vigil run (vigil_train importable: vigil puts it on PYTHONPATH) every rank also prints its
parameters' digest after each optimizer step (`vigil-digest step=N group=0 size=W digest=H`,
contrib/python/vigil_train.py), and rank 0's step file line goes through vigil_train.report().
VIGIL_TEST_FLIP=RANK:STEP (tests only) flips one bit of one parameter on rank RANK right after
the optimizer step STEP, and --flip-host-file/--flip-at-step on the rank of a named host: a
silent data corruption the digests must catch. With --keep-ckpts every checkpoint is kept
(ckpt-STEP.pt), and VIGIL_RESUME_BEFORE=N (vigil run after a divergence) resumes from the
newest below N, setting the later ones aside.

--backend nccl (bench/device-run-nccl.sh, on a GPU host): the model and the batches on GPU
LOCAL_RANK mod the GPUs seen, NCCL for the collectives, vigil's NCCL flight recorder loaded by
NCCL itself (no shim). --stop-rank R with --stop-at-step N: rank R stops (sleeps) before the
all_reduce of step N, in the first attempt only and never in a smoke run: a rank that froze
once, which a relaunch from the checkpoint gets past.
"""
import argparse
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

try:
    import vigil_train
except ImportError:
    vigil_train = None

IN, HIDDEN, BATCH = 16, 32, 32
CKPT_NAME = "ckpt.pt"


def say(line):
    # One write per line: ranks that share a pipe never interleave within a line.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def parse_args():
    p = argparse.ArgumentParser(description="tiny deterministic DDP trainer (vigil tests)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--ckpt-every", type=int, default=10)
    p.add_argument("--ckpt-dir", default=None,
                   help="default: $VIGIL_RUN_DIR/ckpt, else ./ckpt")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds to sleep after each step (to be interrupted)")
    p.add_argument("--stop-host-file", default=None,
                   help="the rank on a host named in this file stops (sleeps) before the "
                        "all_reduce of --stop-at-step (in a smoke run: of step 2): a rank "
                        "that never enters a collective")
    p.add_argument("--stop-at-step", type=int, default=0)
    p.add_argument("--stop-rank", type=int, default=-1,
                   help="this rank stops (sleeps) before the all_reduce of --stop-at-step, "
                        "in attempt 0 only and not in a smoke run (a transient freeze)")
    p.add_argument("--stop-how", choices=("sleep", "sigstop"), default="sleep",
                   help="how a stopping rank stops: sleeps in Python, or stops itself with "
                        "SIGSTOP (frozen: state T)")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                   help="nccl: the model on a GPU and NCCL's collectives (default gloo, CPU)")
    p.add_argument("--bad-host-file", default=None,
                   help="a file naming hosts (Slurm node names, one a line) where every "
                        "rank fails after its first step: a host that passes every check "
                        "but makes the trainer fail (group testing)")
    p.add_argument("--flip-host-file", default=None,
                   help="the rank on a host named in this file flips one bit of its "
                        "parameters after the optimizer step --flip-at-step: a GPU that "
                        "computes wrong without crashing (silent data corruption)")
    p.add_argument("--flip-at-step", type=int, default=0)
    p.add_argument("--keep-ckpts", action="store_true",
                   help="keep every checkpoint (ckpt-STEP.pt beside ckpt.pt): a resume with "
                        "VIGIL_RESUME_BEFORE=N takes the newest below N")
    p.add_argument("--resume", action="store_true",
                   help="resume from the latest checkpoint (implied by VIGIL_ATTEMPT > 0)")
    return p.parse_args()


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, 1))


def batch(seed, step, rank):
    # Why a fresh generator per (seed, step, rank): the data of a step must not depend on how
    # many steps this process ran before, or a resumed run would see other data.
    g = torch.Generator()
    g.manual_seed((seed * 1000003 + step * 8191 + rank) % (2**63))
    tg = torch.Generator()
    tg.manual_seed(seed)
    w_true = torch.randn(IN, 1, generator=tg)
    x = torch.randn(BATCH, IN, generator=g)
    y = torch.tanh(x @ w_true) + 0.01 * torch.randn(BATCH, 1, generator=g)
    return x, y


def _write(path, state):
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save_checkpoint(ckpt_dir, model, opt, step, keep=False):
    os.makedirs(ckpt_dir, exist_ok=True)
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
             "rng": torch.get_rng_state()}
    if keep:
        _write(os.path.join(ckpt_dir, "ckpt-%d.pt" % step), state)
    _write(os.path.join(ckpt_dir, CKPT_NAME), state)


def checkpoint_before(ckpt_dir, before):
    """VIGIL_RESUME_BEFORE: the newest kept checkpoint below step `before`; the later ones
    (the corruption may be in them) set aside as .set-aside, and ckpt.pt made that one again,
    so that a later attempt without the variable does not take a poisoned one."""
    steps = []
    for name in os.listdir(ckpt_dir) if os.path.isdir(ckpt_dir) else []:
        if name.startswith("ckpt-") and name.endswith(".pt"):
            try:
                steps.append(int(name[5:-3]))
            except ValueError:
                pass
    good = [s for s in steps if s < before]
    for s in steps:
        if s >= before:
            p = os.path.join(ckpt_dir, "ckpt-%d.pt" % s)
            os.replace(p, p + ".set-aside")
    if not good:
        latest = os.path.join(ckpt_dir, CKPT_NAME)
        if os.path.exists(latest):
            os.replace(latest, latest + ".set-aside")
        return None
    path = os.path.join(ckpt_dir, "ckpt-%d.pt" % max(good))
    state = torch.load(path, map_location="cpu")
    _write(os.path.join(ckpt_dir, CKPT_NAME), state)
    return state
    dfd = os.open(ckpt_dir, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def main():
    args = parse_args()
    torch.set_num_threads(1)  # deterministic and polite on shared CPUs
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    attempt = int(os.environ.get("VIGIL_ATTEMPT", "0") or "0")
    ckpt_dir = args.ckpt_dir
    if not ckpt_dir:
        run_dir = os.environ.get("VIGIL_RUN_DIR")
        ckpt_dir = os.path.join(run_dir, "ckpt") if run_dir else "ckpt"
    resume = args.resume or attempt > 0
    # VIGIL_SMOKE=1: vigil's group testing; a few steps, no checkpoint read or written
    smoke = os.environ.get("VIGIL_SMOKE") == "1"
    if smoke:
        resume = False
        args.steps = min(args.steps, 3)
        args.ckpt_every = 0
    bad = False
    if args.bad_host_file and os.path.exists(args.bad_host_file):
        with open(args.bad_host_file) as f:
            bad = os.environ.get("SLURMD_NODENAME", "") in f.read().split()

    stop_at = 0
    if args.stop_host_file and args.stop_at_step and os.path.exists(args.stop_host_file):
        with open(args.stop_host_file) as f:
            if os.environ.get("SLURMD_NODENAME", "") in f.read().split():
                stop_at = min(args.stop_at_step, 2) if smoke else args.stop_at_step
    if args.stop_rank == rank and args.stop_at_step and attempt == 0 and not smoke:
        stop_at = args.stop_at_step

    dev = torch.device("cpu")
    if args.backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        dev = torch.device("cuda", local % max(torch.cuda.device_count(), 1))
        torch.cuda.set_device(dev)
    dist.init_process_group(backend=args.backend, init_method="env://", rank=rank,
                            world_size=world)
    # vigil's NCCL flight recorder, where vigil run loads it (gloo has no profiler plugin:
    # the shim reports this trainer's own all_reduce calls the way NCCL would; on NCCL the
    # plugin sees the real calls)
    rec = None
    if args.backend == "gloo":
        from nccl_shim import Recorder
        rec = Recorder.from_env(rank, world)

    model = make_model(args.seed).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    start = 0
    # Rank 0 reads the checkpoint and hands it to the others, so only rank 0's host needs it
    # (the checkpoint directory need not be shared between nodes).
    box = [None]
    before = vigil_train.resume_before() if vigil_train else None
    if resume and rank == 0 and before:
        box[0] = checkpoint_before(ckpt_dir, before)
        say("resume before step %d (VIGIL_RESUME_BEFORE): %s" % (
            before, "from step %d" % box[0]["step"] if box[0] else "no checkpoint below it, "
            "starting at step 0"))
    elif resume and rank == 0:
        path = os.path.join(ckpt_dir, CKPT_NAME)
        if os.path.exists(path):
            box[0] = torch.load(path, map_location="cpu")
            say("resume from %s at step %d" % (path, box[0]["step"]))
        else:
            say("resume: no checkpoint at %s, starting at step 0" % path)
    if resume and world > 1:
        dist.broadcast_object_list(box, src=0)
    if box[0] is not None:
        model.load_state_dict(box[0]["model"])
        opt.load_state_dict(box[0]["optimizer"])
        torch.set_rng_state(box[0]["rng"])
        start = box[0]["step"]
        if rank != 0:
            say("resume at step %d" % start)

    ddp = DDP(model)
    step_file = os.environ.get("VIGIL_STEP_FILE") if rank == 0 else None
    flip_rank, flip_step = -1, 0
    if os.environ.get("VIGIL_TEST_FLIP"):
        fr, fs = os.environ["VIGIL_TEST_FLIP"].split(":")
        flip_rank, flip_step = int(fr), int(fs)
    if args.flip_host_file and args.flip_at_step and os.path.exists(args.flip_host_file):
        with open(args.flip_host_file) as f:
            if os.environ.get("SLURMD_NODENAME", "") in f.read().split():
                flip_rank, flip_step = rank, args.flip_at_step
    loss_f = torch.nn.MSELoss()
    loss_val = float("nan")
    for step in range(start + 1, args.steps + 1):
        x, y = batch(args.seed, step, rank)
        x, y = x.to(dev), y.to(dev)
        opt.zero_grad()
        loss = loss_f(ddp(x), y)
        loss.backward()
        opt.step()
        if rank == flip_rank and step == flip_step:
            with torch.no_grad():
                w = next(model.parameters()).view(-1)
                w[:1].view(torch.int32).bitwise_xor_(1 << 3)
            say("flipped one bit of rank %d's parameters after step %d (VIGIL_TEST_FLIP)"
                % (rank, step))
        avg = loss.detach().clone()
        if step == stop_at:
            say("stopping before the all_reduce of step %d (%s)" % (
                step, "SIGSTOP" if args.stop_how == "sigstop" else "--stop-host-file"))
            if args.stop_how == "sigstop":
                os.kill(os.getpid(), signal.SIGSTOP)
            while True:
                time.sleep(3600)
        h = rec.begin(avg.numel()) if rec else None
        dist.all_reduce(avg, op=dist.ReduceOp.SUM)
        if rec:
            rec.end(h)
        loss_val = avg.item() / world
        say("step %d loss %r" % (step, loss_val))
        if bad:
            say("failing on purpose: this host is in %s" % args.bad_host_file)
            sys.exit(3)
        if vigil_train and vigil_train.enabled():
            vigil_train.report(step, model, loss=loss_val, size=world, rank=rank,
                               tokens=step * BATCH * world)
        elif step_file:
            with open(step_file, "a") as f:
                f.write(json.dumps({"step": step, "loss": loss_val,
                                    "tokens": step * BATCH * world}) + "\n")
        if args.ckpt_every > 0 and step % args.ckpt_every == 0:
            if rank == 0:
                save_checkpoint(ckpt_dir, model, opt, step, keep=args.keep_ckpts)
            # A fresh DDP after each checkpoint, as a resumed run has: DDP lays out its
            # gradient bucket anew after its first iteration, and gloo's ring sums an element
            # in an order that depends on where it sits in the bucket, so without this the
            # first steps after a resume would differ from the undisturbed run's in the last
            # bit (found by the end-to-end tests: a resume at step 15 ended 1 ulp away).
            ddp = DDP(model)
        if args.step_sleep > 0:
            time.sleep(args.step_sleep)
    dist.barrier()
    say("final loss %r" % loss_val)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
