#!/bin/bash
# bench/device-trust.sh: issue 17's checks on a real GPU host (the lent H200), in one call:
#   1. vigil check on the real host (table, JSON): the verdict with the trust fixes in;
#   2. vigil net nccl on the host's GPUs: with one GPU the one-rank collective must be skipped
#      (busbw is 0 by definition), not failed against the floor; --fault-hang-rank naming a
#      rank the run lacks must be a usage error (exit 2);
#   3. vigil agent with its gpu worker for a few cycles: NVML's Xid event registration on real
#      NVML (supported or not, per GPU), the record STATE/nvml-xid.json, the cycle times.
# Outputs land in $OUT; a summary is printed last.
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/vigil-trust}
mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "== [$(($(date +%s) - T0))s] $*"; }
. bench/nccl-home.sh
B=build/dev
mk=(BUILD="$B" NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" DEVELOPER=0)
nccl_home
say "build"
make -j"$(nproc)" "${mk[@]}" "$B/vigil" "$B/vigil-nccl" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
V=$PWD/$B/vigil
export VIGIL_CUDA_HELPER_DIR=$PWD/$B
nvidia-smi -L | tee "$OUT/gpus.txt"
say "vigil check"
$V check -v >"$OUT/check.txt" 2>&1; echo "exit=$?" >>"$OUT/check.txt"
$V check --json >"$OUT/check.json" 2>"$OUT/check.err"; echo "json exit=$?" >>"$OUT/check.txt"
say "vigil net nccl"
$V net nccl --sizes 1M:1G --json >"$OUT/nccl.json" 2>"$OUT/nccl.err"; echo "exit=$?" >"$OUT/nccl.rc"
$V net nccl --sizes 1M:1G >"$OUT/nccl.txt" 2>&1; echo "exit=$?" >>"$OUT/nccl.txt"
NG=$(nvidia-smi -L | wc -l)
$V net nccl --sizes 1M:4M --fault-hang-rank "$NG" >"$OUT/nccl-fault.txt" 2>&1; echo "exit=$?" >>"$OUT/nccl-fault.txt"
say "vigil agent, gpu worker, 6 cycles"
S=/tmp/vigil-trust-state
rm -rf "$S"; mkdir -p "$S"
timeout 120 $V agent --state-dir "$S" --listen off --interval 3 --cycles 6 --only gpu,kernel >"$OUT/agent.txt" 2>&1
echo "exit=$?" >>"$OUT/agent.txt"
cp "$S"/nvml-xid.json "$OUT/" 2>/dev/null
ls -la "$S" >"$OUT/state-ls.txt" 2>&1
$V check --cached --state-dir "$S" --json >"$OUT/cached.json" 2>&1
say "summary"
echo "--- check:"; tail -12 "$OUT/check.txt"
echo "--- net nccl (json exit $(cat "$OUT/nccl.rc")):"; tail -8 "$OUT/nccl.txt"
echo "--- fault rank $NG:"; cat "$OUT/nccl-fault.txt" | tail -3
echo "--- agent:"; tail -5 "$OUT/agent.txt"
echo "--- nvml-xid.json:"; head -c 1500 "$OUT/nvml-xid.json" 2>/dev/null || echo "(none)"
echo; echo "--- cached kernel/gpu findings:"; grep -o '"message": "[^"]*"' "$OUT/cached.json" | head -8
