#!/usr/bin/env python3
"""bench/throughput-summary.py: the table of bench/device-throughput.sh from its results.jsonl:
per run, each dtype's delivered (wall-clock) and per-product TFLOP/s on each GPU, GPU 1 / GPU 0,
the verdict, and every problem vigil named."""
import json
import sys

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
worst = {}
for r in runs:
    name = r.get("_run")
    print(f"{name}: exit {r.get('_rc')}, verdict {r.get('verdict')}, reason: {r.get('reason')}")
    per = {}
    for c in r.get("checks", []):
        for f in c.get("findings", []):
            d = f.get("details", {})
            if c.get("name") == "gemm" and "tflops_wall" in d:
                per.setdefault(d.get("dtype"), {})[f.get("device", "")[:5]] = (
                    float(d["tflops_wall"]), float(d["tflops"]))
            if f.get("status") in ("fail", "unknown", "warn"):
                print(f"   {f['status']:7} {c['name']:8} {f['message']}")
    for dt, g in per.items():
        if "GPU 0" in g and "GPU 1" in g:
            w0, k0 = g["GPU 0"]
            w1, k1 = g["GPU 1"]
            ratio = w1 / w0 if w0 else 0
            print(f"   {dt:5} delivered {w0:7.1f} {w1:7.1f}  ratio {ratio:.3f}   per product "
                  f"{k0:7.1f} {k1:7.1f}  ratio {k1 / k0 if k0 else 0:.3f}")
            if name.startswith("healthy"):
                worst[dt] = max(worst.get(dt, 0), abs(1 - ratio))
if worst:
    print("healthy runs, largest |1 - GPU1/GPU0| delivered: " +
          ", ".join(f"{k} {v * 100:.2f}%" for k, v in worst.items()))
