#!/bin/bash
# check-agent.sh: 'vigil check' wall and CPU on a GPU host without an agent and with one (the
# gpu reading from the agent's worker over its socket, GET /gpu-reading), in one run, so the two
# rows share the machine's state. Run on the lent H200 machine:
#   bash bench/check-agent.sh            (RUNS=30 by default; everything lands in $OUT)
# Rows: the whole passive suite and --only gpu, each back to back (a burst: readings younger
# than AGENT_READING_FRESH_MS, 1000 ms, are served again) and, with the agent, spaced 1.2 s
# apart (every run a fresh NVML reading in the agent's worker). vigil check's own CPU only: the
# worker's CPU is the agent's (it keeps NVML started; bench/agent-gpu-worker.sh measures that).
set -u
O=${OUT:-/tmp/vigil-out}
R=${RUNS:-30}
mkdir -p "$O"
make -j16 DEVELOPER=0 NVCC="${VIGIL_NVCC:-nvcc-not-needed}" CFLAGS="-O2 -g ${VIGIL_CFLAGS:-}" \
	LDFLAGS="${VIGIL_LDFLAGS:-}" all bench-build >"$O/build.log" 2>&1 ||
	{ tail -40 "$O/build.log"; exit 1; }
S=$(mktemp -d /tmp/vigil-bench.XXXXXX)
mkdir -p "$S/alone" "$S/agent"
B=build/bench/check_bench
spaced() { # RUNS CMD...: one run every 1.2 s; the median, least and most of each column
	local n=$1 f
	shift
	f=$(mktemp)
	for _ in $(seq "$n"); do sleep 1.2; $B 1 -- "$@"; done >"$f"
	for col in 1 4; do
		cut -d' ' -f$col "$f" | sort -n |
			awk '{a[NR]=$1} END {printf "%s %s %s ", a[int((NR+1)/2)], a[1], a[NR]}'
	done
	echo
	rm -f "$f"
}
row() { printf '| %-34s | %s\n' "$1" "$2" | tee -a "$O/timing.txt"; }
: >"$O/timing.txt"
echo "== columns: wall p50 p10 p90, cpu p50 p10 p90 (ms); spaced rows: p50 min max"
row "no agent: check" "$($B "$R" -- ./vigil check --reason --state-dir "$S/alone")"
row "no agent: check --only gpu" "$($B "$R" -- ./vigil check --reason --only gpu --state-dir "$S/alone")"
./vigil agent --state-dir "$S/agent" --listen off --interval 600 >"$O/agent.log" 2>&1 &
A=$!
for _ in $(seq 100); do [ -S "$S/agent/agent.sock" ] && break; sleep 0.1; done
sleep 3 # the first cycle out of the way
./vigil check --json --only gpu --state-dir "$S/agent" >"$O/check-agent.json"
echo "sources: $(grep -o '"source": *"[a-z]*"' "$O/check-agent.json" | sort | uniq -c | tr -s ' ')" |
	tee -a "$O/timing.txt"
./vigil check --json --only gpu --state-dir "$S/alone" >"$O/check-alone.json"
row "agent: check (burst)" "$($B "$R" -- ./vigil check --reason --state-dir "$S/agent")"
row "agent: check --only gpu (burst)" "$($B "$R" -- ./vigil check --reason --only gpu --state-dir "$S/agent")"
kids_ticks() { # CPU clock ticks (user + system) of the agent's children: its gpu workers
	local t=0 p
	for p in $(pgrep -P "$A"); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
k0=$(kids_ticks)
row "agent: check (spaced 1.2 s)" "$(spaced 10 ./vigil check --reason --state-dir "$S/agent")"
row "agent: check --only gpu (spaced)" "$(spaced 10 ./vigil check --reason --only gpu --state-dir "$S/agent")"
k1=$(kids_ticks)
echo "agent's workers: $((k1 - k0)) ticks of $(getconf CLK_TCK)/s over 20 spaced checks (a fresh" \
	"reading each, and the cycle's worker idle)" | tee -a "$O/timing.txt"
row "no agent again: check" "$($B "$R" -- ./vigil check --reason --state-dir "$S/alone")"
kill "$A"
wait "$A" 2>/dev/null
./vigil check --reason --state-dir "$S/alone" | tee "$O/verdict.txt"
rm -rf "$S"
