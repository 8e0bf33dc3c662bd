"""vigil_train: what a trainer tells `vigil run`, in three lines (docs/SUPERVISOR.md,
"Replica digests").

    import vigil_train
    ...
    optimizer.step()
    vigil_train.report(step, model, loss=loss)

Every `VIGIL_DIGEST_EVERY` steps (default 1) each rank prints one line on its standard output,

    vigil-digest step=N group=G size=M digest=HEX

a 64-bit digest of its parameters' bits after the optimizer step. The ranks of one group (the
same model shard in every data-parallel replica) must hold bit-identical parameters; `vigil run`
compares their digests as they arrive and names the rank that differs from its group's majority
(silent data corruption, or a step that is not deterministic). Rank 0 also appends
{"step": N, "loss": X} to $VIGIL_STEP_FILE.

Groups: plain data parallelism (DDP, FSDP's replicas of the whole model) is one group of every
rank, the default. With tensor or pipeline parallelism, pass group= the rank's model-parallel
coordinate (e.g. tp_rank + tp_size * pp_rank) and size= the data-parallel size.

Outside `vigil run` (no VIGIL_ATTEMPT_DIR in the environment) or with VIGIL_DIGESTS=0, report()
does nothing but return None. vigil run puts this module on the ranks' PYTHONPATH; the Debian
package installs it in /usr/share/vigil/python, for a trainer that imports it outside vigil run
(PYTHONPATH=/usr/share/vigil/python, or `try: import vigil_train` / `except ImportError`).

The digest: for each parameter in order, the sum of its bytes read as 64-bit integers (32, 16 or
8 where its size or address does not allow 64), wrapping, on the parameter's device; then the
per-tensor sums mixed on the host (FNV-1a over their 64-bit values). One read of the parameters
(at the memory's speed: bench/digest-cost.py) and one device-to-host copy; any single flipped bit
changes it, and integer sums do not depend on the reduction's order, so CPU and GPU agree. It is
a checksum, not a cryptographic hash: two flips that cancel exactly are possible, in principle.
"""
import json
import os
import sys

__all__ = ["digest", "report", "enabled", "resume_before"]

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


def enabled():
    """True under `vigil run` with digests on."""
    return bool(os.environ.get("VIGIL_ATTEMPT_DIR")) and os.environ.get("VIGIL_DIGESTS", "1") != "0"


def resume_before():
    """The step this attempt must resume before, or None. After the replicas' digests differed
    at step N, vigil run relaunches with VIGIL_RESUME_BEFORE=N: the checkpoints from step N on
    may hold the corruption, so load the newest one whose step is below N (and set the later
    ones aside: the next attempt, without the variable, would take the newest again)."""
    v = os.environ.get("VIGIL_RESUME_BEFORE", "")
    try:
        n = int(v)
    except ValueError:
        return None
    return n if n > 0 else None


def _every():
    try:
        k = int(os.environ.get("VIGIL_DIGEST_EVERY", "1"))
    except ValueError:
        return 1
    return k if k > 0 else 1


def _params(model):
    if hasattr(model, "parameters"):
        return list(model.parameters())
    return list(model)


def _words(flat):
    """The tensor's bytes as the widest integers that fit its size and address: int64 where
    it can (a sum of int64 words runs at the memory's speed on an H200; int16 words summed into
    an int64 ran 10 times slower, bench/digest-cost.py), else int32, int16, int8."""
    import torch

    raw = flat.view(torch.uint8) if flat.element_size() > 1 else flat
    nbytes = raw.numel()
    for width, kind in ((8, torch.int64), (4, torch.int32), (2, torch.int16)):
        if nbytes % width == 0 and raw.data_ptr() % width == 0:
            try:
                return raw.view(kind)
            except RuntimeError:
                pass
    return raw.view(torch.int8)


def digest(model):
    """The 64-bit digest of a module's parameters (or of an iterable of tensors), as an int."""
    import torch

    sums = []
    with torch.no_grad():
        for p in _params(model):
            t = p.detach()
            if t.numel() == 0:
                continue
            if not t.is_contiguous():
                t = t.contiguous()
            flat = t.reshape(-1)
            if flat.is_complex():
                flat = torch.view_as_real(flat).reshape(-1)
            words = _words(flat)
            # summed in their own width, wrapping: integer addition does not depend on the
            # order of the reduction, and a flipped bit k moves the sum by 2^k, never 0
            sums.append(words.sum(dtype=words.dtype).to(torch.int64))
        if not sums:
            return 0
        values = torch.stack([s.to(sums[0].device) for s in sums]).cpu().tolist()
    h = _FNV_OFFSET
    for v in values:
        v &= _MASK
        for shift in range(0, 64, 8):
            h ^= (v >> shift) & 0xFF
            h = (h * _FNV_PRIME) & _MASK
    return h


def report(step, model=None, loss=None, group=0, size=None, rank=None, tokens=None):
    """After the optimizer step: rank 0's step, loss and tokens seen for the step file, and
    every VIGIL_DIGEST_EVERY steps this rank's digest line. Returns the digest, or None."""
    if not enabled():
        return None
    step = int(step)
    if rank is None:
        rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")) or 0)
    if rank == 0 and os.environ.get("VIGIL_STEP_FILE"):
        rec = {"step": step}
        if loss is not None:
            rec["loss"] = float(loss.item() if hasattr(loss, "item") else loss)
        if tokens is not None:
            rec["tokens"] = int(tokens)
        try:
            with open(os.environ["VIGIL_STEP_FILE"], "a") as f:
                f.write(json.dumps(rec) + "\n")
        except OSError:
            pass
    if model is None or step % _every():
        return None
    if size is None:
        size = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")) or 1)
    h = digest(model)
    sys.stdout.write("vigil-digest step=%d group=%d size=%d digest=%016x\n"
                     % (step, int(group), int(size), h))
    sys.stdout.flush()
    return h
