#!/bin/bash
# bench/device-qualify.sh: issue 20's one real node's scorecard, on the lent GPU host, in one
# call: Debian's Slurm and munge unpacked from build/slurm-kit.tar.gz (bench/slurm-kit.sh; the
# host has no Slurm and cannot install one; nothing it has is replaced), vigil and its CUDA
# helpers built there, 'vigil check' on the host, then bench/qualify-one-node.sh: the host as a
# one-node Slurm cluster and every stage of 'vigil qualify' real on it (stress gpu, the node's
# NCCL, storage on /var/tmp, a tiny_ddp job through vigil run with the host's PyTorch).
# Outputs in $OUT; a summary last. BUDGET (minutes, default 4).
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/vigil-qualify-dev}
mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "== [$(($(date +%s) - T0))s] $*"; }
say "slurm kit"
if ! command -v slurmctld >/dev/null 2>&1 && [ -f build/slurm-kit.tar.gz ]; then
	tar --skip-old-files -C / -xzf build/slurm-kit.tar.gz && ldconfig 2>/dev/null
fi
for c in munged slurmctld slurmd slurmstepd srun salloc; do
	p=$(PATH="$PATH:/usr/sbin" command -v $c) || { echo "no $c"; continue; }
	ldd "$p" 2>&1 | grep -q "not found" && { echo "$c lacks:"; ldd "$p" | grep "not found"; }
done
. bench/nccl-home.sh
mk=(NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" DEVELOPER=0)
nccl_home && export LD_LIBRARY_PATH="/tmp/nccl-home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "build"
make -j"$(nproc)" "${mk[@]}" build/vigil build/vigil-gpu build/vigil-nccl >"$OUT/build.log" 2>&1 ||
	{ tail -30 "$OUT/build.log"; exit 1; }
nvidia-smi -L | tee "$OUT/gpus.txt"
say "vigil check"
build/vigil check -v >"$OUT/check.txt" 2>&1; echo "exit=$?" >>"$OUT/check.txt"
tail -3 "$OUT/check.txt"
say "qualify (budget ${BUDGET:-4} min)"
export PATH="$PATH:/usr/sbin"
sh bench/qualify-one-node.sh build/vigil /var/tmp "$OUT/card" "${BUDGET:-4}" >"$OUT/qualify.out" 2>"$OUT/qualify.err"
echo "exit=$?" >>"$OUT/qualify.out"
tail -25 "$OUT/qualify.err"
tail -30 "$OUT/qualify.out"
say "train stage's files"
T="$OUT/card/state/train"
if [ -d "$T" ]; then
	find "$T" -maxdepth 3 | head -30
	cp "$T/journal.jsonl" "$OUT/train-journal.jsonl" 2>/dev/null
	cp "$T/diagnosis-steps.json" "$OUT/train-diagnosis.json" 2>/dev/null
	for f in "$T"/attempt-0/*; do [ -f "$f" ] && cp "$f" "$OUT/train-attempt0-$(basename "$f")"; done
	head -c 1500 "$OUT/train-journal.jsonl"; echo
	build/vigil diagnose steps "$T/journal.jsonl" 2>&1 | tail -8
fi
rm -rf "$OUT/card/state"
say "done"
python3 - "$OUT/card/card.json" <<'PY' 2>&1 | tail -40
import json, sys
c = json.load(open(sys.argv[1]))
print("verdict", c["verdict"], c["exit_code"], c["reason"])
for s in c["stages"]:
    print("stage", s["name"], s["status"], round(s.get("wall_s", 0), 1), s.get("reason", "")[:150])
for n in c["nodes"]:
    print("node", n["node"], n["action"], json.dumps(n.get("figures", {}))[:900])
print("storage", json.dumps(c.get("storage"))[:400])
print("train", json.dumps(c.get("train")))
print("nccl", json.dumps(c.get("nccl"))[:300])
PY
