#!/bin/sh
# bench/sim-run-faults.sh: validation 1 of vigil sim (docs/SIM.md, "Checked against the
# testbed"): bench/run-faults.sh's 600 s schedule (a fault every 120 s from 60 s: crash, hang,
# sick, slow, lost) replayed in the simulator with the testbed's step time (0.212 s), its
# checkpoint every 10 steps, 4 one-GPU hosts and 4 spares, and its measured latencies
# (docs/PERFORMANCE.md: stop 0.2 s, checks 0.2 s, stacks ~3 s, restart delay 0.5 s, the
# trainer's start 3 s on 12-01 and ~5.5 s on 12-04), against the measured ETTR: vigil 0.945
# (12-01), 0.913 and 0.889 (12-04), torchrun 0.685 (12-01). Both the simulator's ETTR (steps
# x nominal step time) and the testbed's rule (time on kept steps, slow ones too) are printed.
#   sh bench/sim-run-faults.sh [BUILD]     (default build/bench, else build)
set -u
cd "$(dirname "$0")/.." || exit 2
B=${1:-}
if [ -z "$B" ]; then
	for b in build/bench build; do [ -x "$b/vigil" ] && B=$b && break; done
fi
[ -n "$B" ] && [ -x "$B/vigil" ] || { echo "bench/sim-run-faults.sh: no vigil binary" >&2; exit 2; }
D=tests/data/sim
one() { # POLICY RESTART_COST MEASURED
	"$B/vigil" sim --failures $D/run-faults-model.json --schedule "$D/run-faults-600-$1.json" \
		--policy "$1" --gpus 4 --gpus-per-node 1 --spares 4 --days 0.0069444444 \
		--step-time 0.212 --checkpoint-every 2.12 --checkpoint-cost 0 --restart-cost "$2" \
		--check-interval 2 --hang-floor 4 --monitor-interval 5 --nccl-timeout 1800 \
		--latencies check=0.2,stop=0.2,stacks=3,restart-delay=0.5,smoke=1 --json |
	python3 -c '
import json, sys
d = json.load(sys.stdin)
l = d["lost_seconds_by_cause"]
rule = (d["productive_s"] + l["slowdown"]) / d["wall_s"]
print("%-8s restart %-4s  sim ETTR %.3f  testbed rule %.3f  measured %s  (diff %+.3f)" % (
    sys.argv[1], sys.argv[2], d["ettr"], rule, sys.argv[3], rule - float(sys.argv[3].split("-")[0])))
print("         lost s: " + ", ".join("%s %.1f" % (k, v) for k, v in l.items() if v))
' "$1" "$2" "$3"
}
one vigil 3 0.945
one vigil 5.5 0.901
one torchrun 3 0.685
one torchrun 5.5 0.685
