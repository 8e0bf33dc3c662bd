#!/bin/bash
# bench/device-run-nccl.sh: 'vigil run' supervising a real NCCL DDP job on the lent GPU host,
# one rank frozen (issue 24, part 2), in one call:
#   - Debian's Slurm and munge from build/slurm-kit.tar.gz (bench/slurm-kit.sh), the host made
#     a one-node Slurm cluster (tests/e2e/slurm-cluster), one allocation;
#   - vigil and its NCCL flight recorder built against the NCCL PyTorch ships;
#   - vigil run --tasks-per-node 2 --nccl-recorder over tests/train/tiny_ddp.py --backend nccl:
#     rank 1 stops (sleeps) before the all_reduce of step STOP in the first attempt only; rank 0
#     waits in NCCL's all_reduce (its CPU spinning in the CUDA synchronize, not asleep as a gloo
#     rank is). What vigil must do: see the hang within its limit, name rank 1 from the
#     recorder and the stacks, blame nothing else, confirm the host by a smoke run (it passes:
#     the freeze was once), relaunch from the checkpoint and finish.
# With one GPU the two ranks share it: each gets its own NCCL_HOSTID, so NCCL joins them as two
# hosts (its socket transport); with two GPUs each rank has its own (NVLink).
# Outputs in $OUT (few files: the run directory as one tarball); a summary last.
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/vigil-run-nccl}
STOP=${STOP:-60}
STEPS=${STEPS:-300}
FLOOR=${FLOOR:-10}
mkdir -p "$OUT"
SRC=$PWD
T0=$(date +%s)
say() { echo "== [$(($(date +%s) - T0))s] $*"; }
if ! command -v slurmctld >/dev/null 2>&1 && [ -f build/slurm-kit.tar.gz ]; then
	tar --skip-old-files -C / -xzf build/slurm-kit.tar.gz && ldconfig 2>/dev/null
fi
export PATH="$PATH:/usr/sbin" NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
. bench/nccl-home.sh
say "torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())')"
mk=(NVCC=/none DEVELOPER=0)
nccl_home
say "build"
make -j"$(nproc)" "${mk[@]}" build/vigil build/libnccl-profiler-vigil.so >"$OUT/build.log" 2>&1 ||
	{ tail -30 "$OUT/build.log"; exit 1; }
V=$SRC/build/vigil
NGPU=$(nvidia-smi -L | wc -l)
nvidia-smi -L
echo "eu-stack: $(command -v eu-stack || echo absent)"
dir=$(mktemp -d /tmp/vigil-run-nccl.XXXXXX)
trap 'sh "$SRC/tests/e2e/slurm-cluster" stop "$dir/slurm" >/dev/null 2>&1' EXIT
say "one-node Slurm"
sh tests/e2e/slurm-cluster start "$dir/slurm" 1 53200 "" 0 >"$dir/slurm.log" 2>&1 ||
	{ tail -20 "$dir/slurm.log"; exit 1; }
export SLURM_CONF="$dir/slurm/slurm.conf"
job=$(salloc --no-shell -N1 --ntasks-per-node=2 -J vigil-run-nccl 2>&1 | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
[ -n "$job" ] || { echo "salloc failed"; exit 1; }
# one GPU: two NCCL "hosts" on it; two: one rank a GPU
hostid='export NCCL_HOSTID=vigil-host-$RANK;'
[ "$NGPU" -ge 2 ] && hostid=''
# one scenario: $1 how rank 1 stops (sleep: in Python, never entering the all_reduce; sigstop:
# frozen, state T), $2 the run directory's name; everything kept under $OUT/$2.*
scenario() {
	local how=$1 name=$2 RUN=$dir/$2
	say "vigil run ($name): $NGPU GPU(s), rank 1 stops ($how) before step $STOP of $STEPS, hang floor $FLOOR s"
	SLURM_JOB_ID=$job SLURM_JOB_NODELIST=n1 /usr/bin/time -f '%e s wall, %M KiB' \
		"$V" run --tasks-per-node 2 --nccl-recorder --hang-floor "$FLOOR" --run-dir "$RUN" \
		--json -c run.smoke-timeout=120 -- \
		sh -c "$hostid"' exec python3 "$0" "$@"' "$SRC/tests/train/tiny_ddp.py" --backend nccl \
		--steps "$STEPS" --ckpt-every 20 --step-sleep 0.05 --stop-rank 1 --stop-how "$how" \
		--stop-at-step "$STOP" >"$OUT/$name.json" 2>"$dir/$name.err"
	echo "exit=$?" >>"$OUT/$name.json"
	tail -3 "$dir/$name.err"
	cat "$OUT/$name.json"
	"$V" report "$RUN" 2>&1 | head -40
	grep -E '"(hang|evidence|diagnosis|group_test|smoke|host_sick|drained)"' "$RUN/journal.jsonl" | cut -c1-1500
	python3 - "$RUN/attempt-0/evidence.json" <<'PY'
import json, sys
try:
    e = json.load(open(sys.argv[1]))
except Exception as x:
    sys.exit("no evidence: %s" % x)
print("suspects:", json.dumps(e.get("suspects"))[:800])
for r in e.get("ranks", []):
    print("rank", r.get("rank"), "pid", r.get("pid"), "states", json.dumps(r.get("states")),
          "cpu_s", r.get("cpu_s"), "busy", r.get("busy"), "gpu", r.get("gpu"))
PY
	cp "$dir/$name.err" "$RUN/run.err"
	tar -C "$dir" --exclude="$name/ckpt" -czf "$OUT/$name-dir.tar.gz" "$name"
}
scenario sleep never-entered
scenario sigstop frozen
say "done"
