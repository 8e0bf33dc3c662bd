#!/bin/sh
# bench/fleet-lemons.sh: what pulling the lemons is worth, in vigil sim. A history of 1000
# nodes over 90 days with 2 % lemons at 10 times the rate (tests/fleetgen.c, seeded) is fitted
# twice by vigil fleet model, as it is and --without-lemons (the lemons' nodes and faults left
# out), and each model drives vigil sim (JOB GPUs, 30 days, 3 seeds); the table gives the
# lemon list's precision and recall, each model's rate and vigil sim's ETTR and interruptions.
#   sh bench/fleet-lemons.sh [BUILD] [RATE] [GPUS]   (default build/san, 0.02, 1024)
set -u
cd "$(dirname "$0")/.." || exit 2
B=${1:-build/san}
RATE=${2:-0.02}
GPUS=${3:-1024}
[ -x "$B/bench/fleet_gen" ] ||
	{ echo "bench/fleet-lemons.sh: build $B/bench/fleet_gen first (make $B/bench/fleet_gen)"; exit 2; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
"$B/bench/fleet_gen" "$D/h" 1000 90 "$RATE" 0.02 10 7 >"$D/planted" || exit 1
IN="--slurm-events $D/h/slurm-events.txt --journal $D/h/runs --agent-history $D/h/agent
    --since 2026-01-01 --until 2026-04-01"
# shellcheck disable=SC2086
"$B/vigil" fleet lemons $IN --json --top 1000 >"$D/lemons.json"
# shellcheck disable=SC2086
"$B/vigil" fleet model $IN -o "$D/with.json" --json >"$D/with-report.json"
# shellcheck disable=SC2086
"$B/vigil" fleet model $IN --without-lemons -o "$D/without.json" --json >"$D/without-report.json"
for m in with without; do
	for seed in 1 2 3; do
		TMPDIR= "$B/vigil" sim --failures "$D/$m.json" --gpus "$GPUS" --days 30 --seed "$seed" \
			--json >"$D/sim-$m-$seed.json" || exit 1
	done
done
python3 - "$D" "$RATE" "$GPUS" <<'PY'
import json, sys
d, rate, gpus = sys.argv[1], sys.argv[2], sys.argv[3]
planted = set(open(d + "/planted").read().split())
pull = set(json.load(open(d + "/lemons.json"))["pull"])
tp = len(planted & pull)
print("history: 1000 nodes, 90 days, %s host faults a node-day, %d lemons planted at 10x" % (rate, len(planted)))
print("lemons: %d flagged, precision %.2f, recall %.2f" % (len(pull), tp / len(pull) if pull else 0, tp / len(planted)))
print("%-16s %12s %8s %8s %14s" % ("model", "per GPU-day", "nodes", "ettr", "interruptions"))
for m in ("with", "without"):
    rep = json.load(open("%s/%s-report.json" % (d, m)))
    total = sum(c["rate"] for c in rep["model"]["classes"])
    sims = [json.load(open("%s/sim-%s-%d.json" % (d, m, s))) for s in (1, 2, 3)]
    ettr = sum(s["ettr"] for s in sims) / 3
    intr = sum(s["interruptions"] for s in sims) / 3
    print("%-16s %12.4g %8d %8.4f %14.1f" % (m + " lemons", total, rep["nodes"], ettr, intr))
print("(vigil sim: %s GPUs, 30 days, seeds 1-3, defaults otherwise)" % gpus)
PY
