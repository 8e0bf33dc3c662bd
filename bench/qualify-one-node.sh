#!/bin/sh
# qualify-one-node.sh: 'vigil qualify' on THIS machine as a one-node Slurm cluster (the private
# Slurm of tests/e2e/slurm-cluster), every stage real: vigil check, stress gpu / net pairs / net
# nccl with the CUDA helpers built next to vigil (a GPU host; without one the node stage is
# unknown, by name), storage on DIR, a short tiny_ddp job through vigil run when python3-torch
# is there. The scorecard (JSON and HTML) goes to OUT. Run as root (Slurm's daemons).
#
#   sh bench/qualify-one-node.sh ./build/vigil /var/tmp OUT [BUDGET_MIN]
#
# docs/PERFORMANCE.md, "vigil qualify on one node", has the figures and the dates.
set -eu
vigil=$(readlink -f "$1")
storage=$2
out=$3
budget=${4:-10}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(readlink -f "$out")
dir=$(mktemp -d /tmp/vigil-qualify-bench.XXXXXX)
trap 'sh "$src/tests/e2e/slurm-cluster" stop "$dir/slurm" >/dev/null 2>&1; rm -rf "$dir"' EXIT
sh "$src/tests/e2e/slurm-cluster" start "$dir/slurm" 1 53100 "" 0
export SLURM_CONF="$dir/slurm/slurm.conf"
job=$(salloc --no-shell -N1 -J vigil-qualify-bench 2>&1 | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
[ -n "$job" ] || { echo "salloc failed" >&2; exit 1; }
train=""
if python3 -c 'import torch' 2>/dev/null; then
	# a step of 50 ms or more (the sleep stands in for compute): the CPU model alone steps
	# faster than the journal's 1 ms clock can tell apart
	train="python3 $src/tests/train/tiny_ddp.py --steps 100000 --step-sleep 0.05"
fi
cd "$out"
# the node's vigil has no fixture: the real host, under the real Slurm
SLURM_JOB_ID=$job SLURM_JOB_NODELIST=n1 /usr/bin/time -f '%e s wall, %M KiB' \
	"$vigil" qualify --budget "$budget" --storage "$storage" ${train:+--train "$train"} \
	--json card.json --html card.html --dir state \
	-c qualify.storage-size=1073741824 -c qualify.storage-writers=4 || true
echo "scorecard: $out/card.json, $out/card.html"
