#!/bin/bash
# bench/device-throughput.sh: does 'vigil stress gpu' judge what a job would get? On a lent
# 2-GPU H200 machine, in one call: build vigil and its helpers there, run 'vigil stress gpu
# --duration 12' RUNS times on the healthy GPUs (how far apart are two healthy GPUs' delivered
# TFLOP/s?), then again with a foreign process taking turns on GPU 1 (vigil-gpu burn --duty 0.4:
# 16 ms of bf16 products in every 40 ms), which vigil must name, and 'vigil net pairs' beside it.
# Full JSON under $OUT (results.jsonl), a table printed last (bench/throughput-summary.py).
#
#   bash bench/device-throughput.sh        (device tool, kind nvidia-h200-x2)
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/vigil-device-out}
mkdir -p "$OUT"
B=${B:-build/dev}
RUNS=${RUNS:-6}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
R=$OUT/results.jsonl
: >"$R"
say() { echo "== [$(($(date +%s) - T0))s] $*"; }
# run NAME CMD...: the JSON document it prints goes to results.jsonl tagged with name and exit
run() {
	local name=$1
	shift
	say "$name: $*"
	"$@" >"$OUT/$name.json" 2>"$OUT/$name.err"
	local rc=$?
	echo "   exit $rc"
	python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); o["_run"]=sys.argv[2]; o["_rc"]=int(sys.argv[3]); print(json.dumps(o))' \
		"$OUT/$name.json" "$name" "$rc" >>"$R" 2>/dev/null || echo "   (no JSON)"
	rm -f "$OUT/$name.json" "$OUT/$name.err"
}

say "machine: $(nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader | tr '\n' ';')"
say "build: make -j cuda vigil"
make -s -j"$(nproc)" BUILD="$B" DEVELOPER=0 "$B/vigil" cuda >"$OUT/build.log" 2>&1 ||
	{ tail -30 "$OUT/build.log"; exit 1; }
V=$B/vigil
: >/tmp/vigil-empty.conf # an empty configuration: the built-in limits
export VIGIL_CUDA_HELPER_DIR=$PWD/$B VIGIL_CONFIG=/tmp/vigil-empty.conf

for i in $(seq 1 "$RUNS"); do
	run "healthy$i" "$V" stress gpu --duration 12 --json
done

# a foreign process on GPU 1: 16 ms of every 40 ms
"$B/vigil-gpu" burn --gpus 1 --duration 60 --dtypes bf16 --duty 0.4 >"$OUT/burn.out" 2>&1 &
BURN=$!
sleep 5
say "burn pid $BURN; vigil-gpu procs sees: $("$B/vigil-gpu" procs | head -1)"
run foreign "$V" stress gpu --duration 12 --json
"$V" stress gpu --duration 12 --color never >"$OUT/foreign.txt" 2>&1
echo "   table run exit $?"
run foreign_pairs "$V" net pairs --bytes 256 --reps 5 --json
kill "$BURN" 2>/dev/null
wait "$BURN" 2>/dev/null
say "done"
python3 bench/throughput-summary.py "$R" | tee "$OUT/summary.txt"
echo "---- foreign.txt"
cat "$OUT/foreign.txt"
