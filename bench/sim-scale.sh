#!/bin/sh
# bench/sim-scale.sh: vigil sim at the issue's two scales, one replica each: wall time, CPU
# (user + system) and peak RSS of the whole command (GNU time), with the figures the run gave.
# The goals (docs/SIM.md): 16,384 GPUs x 54 days under 2 s, 100,000 GPUs x 30 days under 10 s,
# under 1 GiB. Not asserted anywhere: the machines are noisy.
#   sh bench/sim-scale.sh [BUILD]     (default build: an optimised, unsanitised vigil)
set -u
cd "$(dirname "$0")/.." || exit 2
B=${1:-build}
T=/usr/bin/time
[ -x "$T" ] || { echo "bench/sim-scale.sh: needs GNU time ($T)"; exit 2; }
one() {
	out=$(mktemp)
	"$T" -f '%e %U %S %M' -o "$out.t" "$B/vigil" sim "$@" --json >"$out" || { rm -f "$out" "$out.t"; return 1; }
	read -r wall user sys rss <"$out.t"
	python3 - "$out" "$wall" "$user" "$sys" "$rss" "$*" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
wall, user, sysc, rss = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
print("vigil sim %s" % sys.argv[6])
print("  wall %.2f s, cpu %.2f s (user %.2f, sys %.2f), peak RSS %.1f MiB" % (wall, user + sysc, user, sysc, rss / 1024))
print("  ettr %.4f, interruptions %d, restarts %d, requeues %d, check rounds %d" % (
    j["ettr"], j["interruptions"], j["restarts"], j["requeues"], j["check_rounds"]))
PY
	rm -f "$out" "$out.t"
}
one --gpus 16384 --days 54
one --gpus 100000 --days 30
