#!/bin/sh
# bench/determinism-probe.sh: the raw helper on a real GPU (no vigil judging): builds
# vigil-gpu, runs 'vigil-gpu determinism' in separate processes and prints the digests, the
# digest's share of the time and the injected flips. How the reference digests in
# data/determinism-ref.tsv were made (docs/STRESS.md, "Determinism").
#   sh bench/determinism-probe.sh [OUTDIR]
set -u
out=${1:-${OUT:-/tmp/det-probe}}
mkdir -p "$out"
nvcc=$(ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
make -j16 NVCC="$nvcc" build/vigil-gpu >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
h=build/vigil-gpu
$h determinism --repeats 100 >"$out/ref-a.jsonl" || echo "run a: exit $?"
$h determinism --repeats 100 >"$out/ref-b.jsonl" || echo "run b: exit $?"
$h determinism --duration 12 >"$out/healthy-12s.jsonl" || echo "run 12s: exit $?"
: >"$out/inject.jsonl"
for i in 1 2 3 4 5; do $h determinism --repeats 8 --inject sdc >>"$out/inject.jsonl"; done
timeout 120 compute-sanitizer --tool memcheck $h determinism --repeats 2 --gemm-size 1024 \
	>"$out/memcheck.txt" 2>&1; echo "memcheck exit $?"; tail -3 "$out/memcheck.txt"
python3 - "$out" <<'PY'
import json, sys, collections
d = sys.argv[1]
for f in ("ref-a.jsonl", "ref-b.jsonl", "healthy-12s.jsonl", "inject.jsonl"):
    digs = collections.Counter(); done = []
    for l in open(f"{d}/{f}"):
        j = json.loads(l)
        if j["type"] == "det": digs[j["digest"]] += 1
        if j["type"] == "det_done": done.append(j)
        if j["type"] == "det" and "injected" in j: print(f, "injected repeat", j["repeat"], j["digest"], j["injected"])
        if j["type"] == "start": print(f, "start", l.strip()[:300])
    print(f, "digests", dict(digs))
    for j in done:
        w, g = j["work_ms"], j["digest_ms"]
        print(f, "gpu", j["gpu"], "repeats", j["repeats"], "seconds", j["seconds"], "setup", j["setup_s"],
              "work_ms", w, "digest_ms", g, "share %.3f%%" % (100 * g / (w + g)) if w + g else "",
              "of wall %.3f%%" % (100 * g / 1000 / j["seconds"]) if j["seconds"] else "", j["algo"], j["errors"])
PY
