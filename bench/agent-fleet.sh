#!/bin/sh
# bench/agent-fleet.sh: the figures of docs/PERFORMANCE.md, "Agent and fleet".
#
#   make BUILD=build bench-build && sh bench/agent-fleet.sh        (BUILD=build by default)
#
# 1. Agent cost: 'vigil agent' runs CYCLES cycles (1 s apart) on the 8-GPU fixture; CPU per cycle
#    (agent and its check processes, from its own vigil_agent_cpu_seconds_total) and the whole
#    process's CPU (from wait4) including the idle time between cycles, as a share of one core
#    at a 30 s interval. Reference in the same command: one 'vigil check' process (check_bench).
# 2. Fleet: a private 4-node Slurm (tests/e2e/slurm-cluster); 'vigil fleet check' wall time, one
#    node at a time and all at once, and bare 'srun true' waves of 4, 8 and 16 at once, to see how
#    srun's cost grows with the fan-out; an estimate for 512 nodes from that.
set -u
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build}
CYCLES=${CYCLES:-20}
RUNS=${RUNS:-5}
fx=tests/scenarios/host-healthy-8gpu/root
export VIGIL_NVML_LIBRARY="$PWD/$B/libvigil-fakenvml.so"
tmp=$(mktemp -d)
cleanup() {
	[ -e "$tmp/slurm/slurm.conf" ] && sh tests/e2e/slurm-cluster stop "$tmp/slurm" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

echo "== agent: $CYCLES cycles, 1 s apart, on $fx"
agent() { # $1 cycles, $2 tag: whole-process CPU (wait4) in $tmp/whole.$2, metrics in $tmp/$2.prom
	"$B/bench/check_bench" 1 -- "$B/vigil" agent --root "$fx" --state-dir "$tmp/state" \
		--prom "$tmp/$2.prom" --listen off --interval 1 --jitter 0 --cycles "$1" \
		>"$tmp/whole.$2" 2>/dev/null
}
agent 1 one
agent "$CYCLES" many
# asleep: an agent with an interval of an hour, its CPU time (ns, /proc/PID/schedstat) read
# 2 s and 12 s after its start, after its one cycle
"$B/vigil" agent --root "$fx" --state-dir "$tmp/state" --listen off --interval 3600 \
	2>/dev/null &
apid=$!
sleep 2
i0=$(awk '{print $1}' /proc/$apid/schedstat)
sleep 10
i1=$(awk '{print $1}' /proc/$apid/schedstat)
kill $apid
wait $apid 2>/dev/null
m() { awk -v k="$1" '$1 == k {print $2}' "$tmp/$2.prom"; }
ref=$("$B/bench/check_bench" 20 -- "$B/vigil" check --root "$fx" --state-dir "$tmp/state2" --reason)
base=$("$B/bench/check_bench" 20 -- "$B/vigil" version)
checks=""
for c in gpu kernel pcie infiniband storage system; do
	checks="$checks $("$B/bench/check_bench" 20 -- "$B/vigil" check --root "$fx" --only "$c" \
		--state-dir "$tmp/state3" --reason | awk '{print $4}')"
done
awk -v n="$CYCLES" -v c1="$(m vigil_agent_cpu_seconds_total one)" \
	-v cn="$(m vigil_agent_cpu_seconds_total many)" -v w1="$(awk '{print $4}' "$tmp/whole.one")" \
	-v wn="$(awk '{print $4}' "$tmp/whole.many")" -v i0="$i0" -v i1="$i1" -v ref="$ref" -v base="$base" -v checks="$checks" 'BEGIN {
	split(ref, R, " "); split(base, V, " "); k = split(checks, C, " ");
	idle = (i1 - i0) / 1e6 / 10;            # ms of CPU per second asleep
	per = (wn - w1) / (n - 1) - idle;       # ms per cycle, all in: checks, files, metrics
	inner = cn / n * 1000;                  # the part the agent measures itself
	sum = 0; for (i = 1; i <= k; i++) sum += C[i] - V[4];
	printf "CPU per cycle, all in (process wait4)   %.2f ms\n", per;
	printf "  of which checks run (agent metric)    %.2f ms (vigil_agent_cpu_seconds_total / cycles)\n", inner;
	printf "  of which the six checks themselves    %.2f ms (vigil check --only X minus vigil version, summed)\n", sum;
	printf "reference: one vigil check process      %.2f ms CPU (median of 20; vigil version: %.2f ms)\n", R[4], V[4];
	printf "ratio agent cycle / vigil check         %.2fx\n", per / R[4];
	printf "asleep between cycles                   %.4f ms CPU per second\n", idle;
	printf "share of one core at a 30 s interval    %.4f %% (cycle) + %.4f %% (idle) = %.4f %%\n", \
		per / 30000 * 100, idle / 10, per / 30000 * 100 + idle / 10;
	printf "target                                  0.05 %% (15 ms per 30 s)\n";
}'

echo
echo "== fleet: 4-node Slurm on this machine"
if ! sh tests/e2e/slurm-cluster start "$tmp/slurm" 4 "${PORT:-24700}" >"$tmp/start.log" 2>&1; then
	echo "cannot start Slurm here: $(cat "$tmp/start.log")"
	exit 0
fi
export SLURM_CONF="$tmp/slurm/slurm.conf"
mkdir -p "$tmp/empty/dev" && : >"$tmp/empty/dev/kmsg"
printf '#!/bin/sh\nexec %s "$@" --only kernel --root %s\n' "$PWD/$B/vigil" "$tmp/empty" >"$tmp/remote"
chmod +x "$tmp/remote"
fl() { "$B/bench/check_bench" "$RUNS" -- "$B/vigil" fleet check -c fleet.command="$tmp/remote" "$@"; }
one=$(fl --parallel 1)
all=$(fl --parallel 32)
wave() {
	n=$1
	"$B/bench/check_bench" "$RUNS" -- sh -c "i=0; while [ \$i -lt $n ]; do srun -Q -w n\$((i % 4 + 1)) -N1 -n1 true & i=\$((i+1)); done; wait"
}
w4=$(wave 4)
w8=$(wave 8)
w16=$(wave 16)
awk -v one="$one" -v all="$all" -v w4="$w4" -v w8="$w8" -v w16="$w16" 'BEGIN {
	split(one, O, " "); split(all, A, " "); split(w4, a, " "); split(w8, b, " "); split(w16, c, " ");
	printf "vigil fleet check, 4 nodes, --parallel 1   %7.0f ms wall (p10 %.0f, p90 %.0f)\n", O[1], O[2], O[3];
	printf "vigil fleet check, 4 nodes, --parallel 32  %7.0f ms wall (p10 %.0f, p90 %.0f)\n", A[1], A[2], A[3];
	printf "fan-out speed-up                           %7.2fx\n", O[1] / A[1];
	printf "srun true waves: 4 at once %.0f ms, 8 at once %.0f ms, 16 at once %.0f ms\n", a[1], b[1], c[1];
	slope = (c[1] - a[1]) / 12;          # ms per extra concurrent srun, on this controller
	wave32 = c[1] + slope * 16;          # one wave of 32 (the default --parallel)
	per_node = A[1] - a[1];              # vigil check itself, beyond srun, per node
	est = 16 * (wave32 + per_node);      # 512 nodes = 16 waves of 32
	printf "growth per extra concurrent srun           %7.1f ms\n", slope;
	printf "estimate, 512 nodes at --parallel 32       %7.1f s (16 waves of %.0f ms; upper bound:\n", est / 1000, wave32 + per_node;
	printf "  here every slurmd and task shares this machine'"'"'s cores)\n";
	printf "lower bound (node work on the nodes)       %7.1f s (16 waves of the 4-node run)\n", 16 * A[1] / 1000;
}'
