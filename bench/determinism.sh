#!/bin/sh
# bench/determinism.sh: 'vigil stress gpu --determinism' on a real GPU, judged by vigil.
#   sh bench/determinism.sh [INJECT_RUNS] [HEALTHY_RUNS] [SECONDS] [OUTDIR]
# INJECT_RUNS runs of --repeats 8 --inject sdc (one bit of one repeat flipped at random): each
# must fail (exit 1) naming the repeat the helper flipped. HEALTHY_RUNS runs of --duration
# SECONDS: each must pass (exit 0) and match the shipped reference digest. Prints the misses,
# the false alarms and the digest's share of the GPU time (docs/PERFORMANCE.md).
set -u
ni=${1:-50}; nh=${2:-20}; secs=${3:-12}; out=${4:-${OUT:-/tmp/det-bench}}
mkdir -p "$out"
nvcc=$(ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
make -j16 NVCC="$nvcc" build/vigil build/vigil-gpu build/determinism-ref.tsv >"$out/build.log" 2>&1 ||
	{ tail -30 "$out/build.log"; exit 1; }
v=build/vigil
: >"$out/inject.json"; : >"$out/healthy.json"
i=0
while [ $i -lt "$ni" ]; do
	i=$((i + 1))
	$v stress gpu --determinism --repeats 8 --inject sdc --json >"$out/one.json" 2>>"$out/stderr.txt"
	echo "{\"run\":$i,\"exit\":$?,\"report\":$(cat "$out/one.json")}" >>"$out/inject.json"
done
i=0
while [ $i -lt "$nh" ]; do
	i=$((i + 1))
	$v stress gpu --determinism --duration "$secs" --json >"$out/one.json" 2>>"$out/stderr.txt"
	echo "{\"run\":$i,\"exit\":$?,\"report\":$(cat "$out/one.json")}" >>"$out/healthy.json"
done
rm -f "$out/one.json"
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, sys, statistics
d = sys.argv[1]
def records(path):
    # one {"run","exit","report"} object per run; vigil's --json report is pretty-printed
    s = open(path).read(); dec = json.JSONDecoder(); i = 0
    while True:
        while i < len(s) and s[i].isspace(): i += 1
        if i >= len(s): return
        o, i = dec.raw_decode(s, i)
        yield o
def findings(rep, check):
    for c in rep.get("checks", []):
        if c["name"] == check:
            return c["findings"]
    return []
miss = 0; n = 0
for j in records(f"{d}/inject.json"):
    n += 1
    fs = [f for f in findings(j["report"], "determinism") if f["code"] == "sdc_repeat"]
    det = fs[0]["details"] if fs else {}
    ok = j["exit"] == 1 and fs and det.get("first_differing_repeat") == det.get("injected_repeat")
    if not ok:
        miss += 1
        print("MISS run", j["run"], "exit", j["exit"], json.dumps(findings(j["report"], "determinism"))[:300])
print(f"injected: {n} runs, {miss} misses")
fa = 0; n = 0; shares = []; reps = []
for j in records(f"{d}/healthy.json"):
    n += 1
    fs = findings(j["report"], "determinism")
    ok = j["exit"] == 0 and fs and all(f["code"] == "determinism" and f["status"] == "ok" for f in fs)
    for f in fs:
        dt = f.get("details", {})
        if "digest_share" in dt: shares.append(dt["digest_share"])
        if "repeats" in dt: reps.append(dt["repeats"])
    if not ok:
        fa += 1
        print("FALSE ALARM run", j["run"], "exit", j["exit"], json.dumps(fs)[:300])
print(f"healthy: {n} runs, {fa} false alarms, repeats per run {min(reps) if reps else 0}-{max(reps) if reps else 0}")
if shares:
    print("digest share of GPU time: median %.3f%%, max %.3f%%" % (100 * statistics.median(shares), 100 * max(shares)))
PY
