#!/usr/bin/env python3
# device-summary.py: the short table that bench/device-stress.sh prints last, from its
# results.jsonl (vigil's --json reports and torch_ref.py's lines, each tagged with its run).
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]


def by(run, typ=None):
    return [r for r in rows if r.get("_run") == run and (typ is None or r.get("type") == typ)]


def report(run):
    for r in by(run):
        if "verdict" in r:
            return r
    return None


def rc(run):
    r = by(run, "run_exit")
    return r[0]["_rc"] if r else None


def findings(run, check):
    rep = report(run)
    for c in (rep or {}).get("checks", []):
        if c["name"] == check:
            return c["findings"]
    return []


out = []


def line(what, ours, ref, target=None, note=""):
    ratio = ours / ref if ours and ref else None
    ok = ""
    if target is not None and ratio is not None:
        ok = "ok" if ratio >= target else "BELOW"
    out.append("%-36s %9s %9s %7s %5s %s" % (
        what, "%.1f" % ours if ours else "-", "%.1f" % ref if ref else "-",
        "%.3f" % ratio if ratio else "-", ok, note))


out.append("%-36s %9s %9s %7s" % ("figure (GPU 0 alone unless said)", "vigil", "torch", "ratio"))
tg = {r["dtype"]: r["tflops"] for r in by("torch_gemm", "torch_gemm")}
for f in findings("v_gemm0", "gemm"):
    d = f["details"]
    if "tflops" in d:
        line("GEMM %s 8192^3 TFLOP/s" % d["dtype"], d["tflops"], tg.get(d["dtype"]), 0.97,
             "vigil says %s; miscompares %s, known-answer %s" % (f["status"], d.get("miscompares"),
                                                      d.get("kat_miscompares")))
tc = by("torch_copy", "torch_copy")
for f in findings("v_hbm0", "hbm")[:1]:
    d = f["details"]
    line("HBM copy GB/s (read+write)", d["copy_gbps"], tc[0]["copy_gbps"] if tc else None, 0.97,
         "%.3f of the 4800 spec" % (d["copy_gbps"] / 4800.0))
    line("HBM read GB/s", d["read_gbps"], None)
    line("HBM write GB/s", d["write_gbps"], None)
    line("HBM cudaMemcpy GB/s", d["memcpy_gbps"], tc[0]["copy_gbps"] if tc else None)
ta = {r["bytes"]: r["busbw"] for r in by("torch_allreduce", "torch_allreduce")}
for f in findings("v_nccl", "nccl"):
    d = f["details"]
    if "busbw" in d:
        line("all_reduce busbw %4d MiB, 2 procs" % (d["bytes"] / 2**20), d["busbw"],
             ta.get(d["bytes"]), 0.97)
for f in findings("v_nccl_single", "nccl"):
    d = f["details"]
    if "busbw" in d:
        line("all_reduce busbw %4d MiB, 1 proc" % (d["bytes"] / 2**20), d["busbw"],
             ta.get(d["bytes"]), 0.97)
for r in ("v_nccl_tcp0", "v_nccl_tcp1"):
    for f in findings(r, "nccl"):
        d = f["details"]
        if "busbw" in d:
            line("all_reduce %d MiB tcp rendezvous %s" % (d["bytes"] / 2**20, r[-1]), d["busbw"],
                 ta.get(d["bytes"]))
ops = {}
for f in findings("v_nccl_all", "nccl"):
    d = f["details"]
    if d.get("bytes") == 2**30:
        ops[d["op"]] = d["busbw"]
if ops:
    out.append("busbw at 1 GiB, 2 procs: " + ", ".join("%s %.1f" % kv for kv in ops.items()))
for f in findings("v_pairs", "pairs"):
    out.append("pairs: " + f["message"])
for f in findings("v_stress", "gemm") + findings("v_stress", "hbm") + \
        findings("v_stress", "memtest") + findings("v_stress", "stress-health"):
    if f["status"] != "ok" or f["code"] in ("memtest", "health", "hbm"):
        out.append("2-GPU stress: %s %s" % (f["device"], f["message"]))
for run in ("v_gemm0", "v_hbm0", "v_stress", "v_inject_gemm", "v_inject_hbm", "v_inject_mem",
            "v_pairs", "v_nccl", "v_nccl_all", "v_nccl_single", "v_nccl_tcp0", "v_nccl_tcp1",
            "v_nccl_hang", "v_slow", "v_deep"):
    rep = report(run)
    if rep:
        out.append("vigil %-14s exit %s: %s" % (run, rep.get("exit_code", rc(run)), rep.get("reason")))
    elif rc(run) is not None:
        out.append("vigil %-14s exit %s (no report)" % (run, rc(run)))
print("\n".join(out))
