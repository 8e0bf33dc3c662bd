#!/bin/bash
# bench/nccl-recorder.sh: the NCCL flight recorder (libnccl-profiler-vigil.so) on a GPU machine
# with real NCCL, in one call:
#   1. a PyTorch DDP job on NCCL where rank 1 stops before its 50th all_reduce: 'vigil diagnose
#      hang' on the live rings while it hangs, on the dumps taken with the signal, and on the
#      logs alone once PyTorch's watchdog has fired;
#   2. the same with a plain NCCL program (vigil-nccl, rank 1 never enters at 16 MiB);
#   3. overhead: vigil-nccl all_reduce 1 MiB to 4 GiB and a DDP training step, without and with
#      the plugin, in the same run (order off, on, on, off: drift cancels).
# Two ranks share GPU 0 when the machine has one GPU: NCCL refuses two ranks of one host on one
# GPU, so each rank gets its own NCCL_HOSTID and NCCL joins them as two hosts (its network
# transport, not NVLink). Outputs and logs go to $OUT; a summary is printed last.
#
#   bash bench/nccl-recorder.sh          (on the device; SRC_TAR=.vigil-dev/head.tar: the
#                                         committed tree to build, from git archive)
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/vigil-nccl-rec}
mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "== [$(($(date +%s) - T0))s] $*"; }
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
SRC=$PWD
if [ -n "${SRC_TAR:-}" ] && [ -f "$SRC_TAR" ]; then
	SRC=/tmp/vigil-src
	rm -rf "$SRC" && mkdir -p "$SRC" && tar xf "$SRC_TAR" -C "$SRC"
fi
B=$SRC/build/dev
. bench/nccl-home.sh
say "torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())')"
nvidia-smi -L
mk=(BUILD="$B" NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" DEVELOPER=0)
nccl_home
say "build"
(cd "$SRC" && make -j"$(nproc)" "${mk[@]}" "$B/vigil" "$B/vigil-nccl" "$B/libnccl-profiler-vigil.so") \
	>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
V=$B/vigil
PLUGIN=$B/libnccl-profiler-vigil.so
NGPU=$(nvidia-smi -L | wc -l)
gpu_of() { if [ "$NGPU" -ge 2 ]; then echo "$1"; else echo 0; fi; }
W=/tmp/vigil-rec-work
rm -rf "$W" && mkdir -p "$W"

# ---- 1. PyTorch DDP, rank 1 stops before its 50th all_reduce ----
ddp_hang() {
	local d=$W/ddp a=$W/ddp/attempt-0
	mkdir -p "$d/shm" "$d/dump" "$a"
	for r in 0 1; do
		env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29611 \
			CUDA_DEVICE="$(gpu_of $r)" NCCL_HOSTID="vigil-host-$r" HANG_TIMEOUT=45 \
			NCCL_PROFILER_PLUGIN="$PLUGIN" VIGIL_NCCL_RING_DIR="$d/shm" \
			VIGIL_NCCL_DUMP_DIR="$d/dump" VIGIL_NCCL_DUMP_SIGNAL=USR2 \
			NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET \
			python3 bench/nccl_ddp.py hang 50 >"$a/rank-$r.out" 2>"$a/rank-$r.err" &
		eval "P$r=$!"
	done
	for _ in $(seq 1 120); do grep -q "step 49 done" "$a/rank-0.out" 2>/dev/null && break; sleep 1; done
	sleep 8
	say "ddp: rank 0 at step $(grep -c 'done' "$a/rank-0.out"), rank 1: $(tail -1 "$a/rank-1.out")"
	grep -h -i "profiler" "$a"/rank-*.err | head -5
	ls -la "$d/shm"
	say "ddp: vigil diagnose hang on the live rings"
	"$V" diagnose hang "$d/shm" | tee "$OUT/ddp-live.txt"
	"$V" diagnose hang "$d/shm" --json >"$OUT/ddp-live.json"
	echo "exit $?" >>"$OUT/ddp-live.txt"
	kill -USR2 "$P0" "$P1"
	sleep 2
	ls -la "$d/dump"
	say "ddp: on the dumps taken with SIGUSR2"
	"$V" diagnose hang "$d/dump" | tee "$OUT/ddp-dump.txt"
	say "ddp: waiting for PyTorch's watchdog (45 s)"
	for _ in $(seq 1 90); do grep -q -i "watchdog caught" "$a/rank-0.err" 2>/dev/null && break; sleep 1; done
	sleep 5
	kill -9 "$P0" "$P1" 2>/dev/null
	wait "$P0" "$P1" 2>/dev/null
	grep -h -i "watchdog\|timeout\|Timeout at\|last enqueued" "$a"/rank-*.err | head -20 >"$OUT/ddp-watchdog-lines.txt"
	cat "$OUT/ddp-watchdog-lines.txt" | cut -c1-300
	say "ddp: vigil diagnose hang on the logs alone"
	"$V" diagnose hang "$a" | tee "$OUT/ddp-logs.txt"
	"$V" diagnose hang "$a" --json >"$OUT/ddp-logs.json"
	say "ddp: on the rings the killed ranks left, and the logs"
	"$V" diagnose hang "$a" "$d/shm" | tee "$OUT/ddp-both.txt"
}

# ---- 2. plain NCCL: vigil-nccl, rank 1 never enters at 16 MiB ----
plain_hang() {
	local d=$W/plain
	mkdir -p "$d/shm" "$d/dump" "$d/rdv"
	for r in 0 1; do
		env NCCL_HOSTID="vigil-host-$r" NCCL_PROFILER_PLUGIN="$PLUGIN" \
			VIGIL_NCCL_RING_DIR="$d/shm" VIGIL_NCCL_DUMP_DIR="$d/dump" RANK=$r \
			"$B/vigil-nccl" --rank $r --nranks 2 --rendezvous "$d/rdv" --gpu "$(gpu_of $r)" \
			--sizes 1M:64M --iters 5 --warmup 1 --timeout 25 --run-id plain \
			--fault-hang-rank 1 --fault-bytes 16M >"$d/rank-$r.out" 2>"$d/rank-$r.err" &
		eval "Q$r=$!"
	done
	sleep 15
	say "plain: vigil diagnose hang on the live rings"
	"$V" diagnose hang "$d/shm" | tee "$OUT/plain-live.txt"
	"$V" diagnose hang "$d/shm" --json >"$OUT/plain-live.json"
	wait "$Q0"
	say "plain: vigil-nccl rank 0 exit $?: $(grep -h '"type":"timeout"\|never entered\|error' "$d/rank-0.out" | head -2 | cut -c1-300)"
	kill -9 "$Q1" 2>/dev/null
	wait "$Q1" 2>/dev/null
	"$V" diagnose hang "$d/shm" "$d/dump" | tee "$OUT/plain-after.txt"
	cp "$d"/rank-*.out "$d"/rank-*.err "$OUT/" 2>/dev/null
}

# ---- 3. overhead ----
nccl_bw() { # name plugin(0/1)
	local d=$W/bw-$1
	mkdir -p "$d/rdv" "$d/shm"
	local extra=()
	[ "$2" = 1 ] && extra=(NCCL_PROFILER_PLUGIN="$PLUGIN" VIGIL_NCCL_RING_DIR="$d/shm")
	for r in 0 1; do
		env NCCL_HOSTID="vigil-host-$r" "${extra[@]}" \
			"$B/vigil-nccl" --rank $r --nranks 2 --rendezvous "$d/rdv" --gpu "$(gpu_of $r)" \
			--sizes "${BW_SIZES:-1M:4G}" --iters "${BW_ITERS:-5}" --warmup 1 --timeout 120 --run-id bw \
			>"$d/rank-$r.out" 2>"$d/rank-$r.err" &
		eval "R$r=$!"
	done
	wait "$R0" "$R1"
	grep -h '"type":"nccl"' "$d/rank-0.out" >"$OUT/bw-$1.jsonl"
	echo "   $1: $(wc -l <"$OUT/bw-$1.jsonl") sizes"
}
ddp_steps() { # name plugin(0/1)
	local d=$W/steps-$1
	mkdir -p "$d/shm"
	local extra=()
	[ "$2" = 1 ] && extra=(NCCL_PROFILER_PLUGIN="$PLUGIN" VIGIL_NCCL_RING_DIR="$d/shm")
	for r in 0 1; do
		env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29612 \
			CUDA_DEVICE="$(gpu_of $r)" NCCL_HOSTID="vigil-host-$r" "${extra[@]}" \
			python3 bench/nccl_ddp.py steps 200 >"$d/rank-$r.out" 2>"$d/rank-$r.err" &
		eval "S$r=$!"
	done
	wait "$S0" "$S1"
	tail -1 "$d/rank-0.out" >"$OUT/steps-$1.json"
	echo "   $1: $(cat "$OUT/steps-$1.json") $(tail -2 "$d/rank-0.err" | cut -c1-200)"
}

STAGES=${STAGES:-ddp plain overhead}
case " $STAGES " in *" ddp "*) say "1. DDP hang"; ddp_hang ;; esac
case " $STAGES " in *" plain "*) say "2. plain NCCL hang"; plain_hang ;; esac
case " $STAGES " in *" overhead "*)
	ORDER=${ORDER:-off1 on1 on2 off2}
	say "3. overhead: vigil-nccl all_reduce ${BW_SIZES:-1M:4G}, $ORDER"
	for n in $ORDER; do nccl_bw "$n" "$(case $n in on*) echo 1 ;; *) echo 0 ;; esac)"; done
	if [ "${STEPS:-1}" = 1 ]; then
		say "3. overhead: DDP steps, $ORDER"
		for n in $ORDER; do ddp_steps "$n" "$(case $n in on*) echo 1 ;; *) echo 0 ;; esac)"; done
	fi
	ORDER=$ORDER python3 - "$OUT" <<'PY' | tee "$OUT/overhead.txt"
import json, sys, os
o = sys.argv[1]
def bw(name):
    rows = {}
    for line in open(os.path.join(o, f"bw-{name}.jsonl")):
        j = json.loads(line)
        rows[j["bytes"]] = j["time_us"]
    return rows
order = os.environ["ORDER"].split()
runs = {n: bw(n) for n in order}
ons = [n for n in order if n.startswith("on")]
offs = [n for n in order if n.startswith("off")]
print("all_reduce, 2 ranks: time per collective (us), without and with the recorder")
print(f"{'bytes':>12} " + " ".join(f"{n:>10}" for n in order) + f" {'on/off':>8}")
for b in sorted(runs[order[0]]):
    t = {n: runs[n].get(b) for n in order}
    if None in t.values():
        continue
    ratio = (sum(t[n] for n in ons) / len(ons)) / (sum(t[n] for n in offs) / len(offs))
    print(f"{b:>12} " + " ".join(f"{t[n]:>10.1f}" for n in order) + f" {ratio:>8.3f}")
if all(os.path.exists(os.path.join(o, f"steps-{n}.json")) for n in order):
    print("DDP step (4 x 4096^2 MLP, batch 256, 2 ranks): median ms")
    s = {n: json.load(open(os.path.join(o, f"steps-{n}.json")))["median_ms"] for n in order}
    ratio = (sum(s[n] for n in ons) / len(ons)) / (sum(s[n] for n in offs) / len(offs))
    print("  " + "  ".join(f"{n} {s[n]:.2f}" for n in order) + f"  on/off {ratio:.3f}")
PY
	;;
esac
say "summary"
for f in ddp-live ddp-dump ddp-logs plain-live; do
	[ -f "$OUT/$f.txt" ] && { echo "-- $f"; head -c 900 "$OUT/$f.txt"; echo; }
done
[ -f "$OUT/overhead.txt" ] && cat "$OUT/overhead.txt"
# few files come back from a device call: everything in one archive, the summaries beside it
[ -d "$W/ddp/attempt-0" ] && cp -r "$W/ddp/attempt-0" "$OUT/ddp-attempt"
tar czf /tmp/nccl-recorder-results.tar.gz -C "$OUT" . && mv /tmp/nccl-recorder-results.tar.gz "$OUT/results.tar.gz"
find "$OUT" -mindepth 1 -maxdepth 1 ! -name results.tar.gz ! -name overhead.txt ! -name 'ddp-live.txt' -exec rm -rf {} +
