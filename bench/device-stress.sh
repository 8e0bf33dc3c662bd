#!/bin/bash
# bench/device-stress.sh: vigil stress / vigil net on a lent 2-GPU H200 machine, in one call:
# build vigil and its CUDA helpers there, check them, and time them side by side with torch
# (same GPU, dtype, shape, sizes, CUDA events, medians). JSON and logs go to $OUT (results.jsonl,
# logs.tar.gz, build.log, summary.txt); the human tables and a short summary are printed last.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0), as the machine asks.
#
#   bash bench/device-stress.sh               (on the device: STAGES="build torch vigil")
#
# Headers the device image lacks can travel in .vigil-dev/include (ignored by git; name it in the
# device call's carry): the build adds it to CFLAGS when present. The 2026-11-30 runs carried
# microhttpd.h there; vigil now builds without it.
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/vigil-device-out}
W=$(mktemp -d /tmp/vigil-bench-XXXXXX)
mkdir -p "$OUT"
STAGES=${STAGES:-build torch vigil}
B=${B:-build/dev}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=$OUT/results.jsonl
: >"$R"
has() { case " $STAGES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
say() { echo "== [$(($(date +%s) - T0))s] $*"; }
# run NAME CMD...: stdout to $W/NAME.out, stderr to $W/NAME.err; JSON (one document or lines)
# goes to results.jsonl tagged with the run's name and exit code
run() {
	local name=$1
	shift
	say "$name: $*"
	"$@" >"$W/$name.out" 2>"$W/$name.err"
	local rc=$?
	echo "   exit $rc; stderr: $(tail -c 240 "$W/$name.err" | tr '\n' ' ')"
	python3 - "$W/$name.out" "$name" "$rc" >>"$R" <<'PY'
import json, sys
path, name, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(path, errors="replace").read()
docs = []
try:
    docs = [json.loads(text)]
except Exception:
    for l in text.splitlines():
        try:
            docs.append(json.loads(l))
        except Exception:
            pass
for o in docs:
    if isinstance(o, dict):
        o["_run"] = name; o["_rc"] = rc
        print(json.dumps(o))
print(json.dumps({"type": "run_exit", "_run": name, "_rc": rc}))
PY
	return $rc
}

say "machine: $(nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader | tr '\n' ';')"
nvidia-smi topo -m >"$W/topo.txt" 2>&1
. bench/nccl-home.sh
say "torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())')"

if has build; then
	NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
	mk=(BUILD="$B" NVCC="$NVCC" DEVELOPER=0)
	# NCCL: torch's own, so that vigil-nccl and torch.distributed run the same library
	nccl_home
	[ -d .vigil-dev/include ] && mk+=(CFLAGS="-O2 -g -I$PWD/.vigil-dev/include")
	say "build: make -k -j ${mk[*]} all"
	# the references run meanwhile (CPU work beside GPU work)
	(make -k -j"$(nproc)" "${mk[@]}" all >"$OUT/build.log" 2>&1; echo $? >"$W/build.rc") &
	BUILD_PID=$!
fi

if has torch; then
	run torch_gemm python3 bench/torch_ref.py gemm --gpu 0 --seconds 4
	run torch_copy python3 bench/torch_ref.py copy --gpu 0 --bytes 4G
	run torch_allreduce python3 -m torch.distributed.run --nproc_per_node=2 \
		bench/torch_ref.py allreduce --sizes 64M:4G
fi

if has build; then
	wait "$BUILD_PID"
	say "build exit $(cat "$W/build.rc"): $(grep -E 'error|Error' "$OUT/build.log" | head -5 | tr '\n' ' ')"
	ls -la "$B"/vigil "$B"/vigil-gpu "$B"/vigil-nccl 2>&1
fi

if has vigil; then
	V=$B/vigil
	export VIGIL_CUDA_HELPER_DIR=$PWD/$B VIGIL_CONFIG=/dev/null
	# figures on GPU 0 alone, as torch ran them (about 4 s sustained per dtype)
	run v_gemm0 "$V" stress gpu --gpus 0 --no-memtest --no-hbm --duration 17 --json
	run v_hbm0 "$V" stress gpu --gpus 0 --no-gemm --no-memtest --json
	# both GPUs at once, everything, then the table a person sees
	run v_stress "$V" stress gpu --duration 40 --json
	run v_stress_table "$V" stress gpu --duration 12 --color never
	# every checker must catch a planted fault, and vigil must fail the GPU for it
	run v_inject_gemm "$V" stress gpu --gpus 0 --dtypes bf16 --no-memtest --no-hbm --duration 4 --inject gemm --json
	run v_inject_hbm "$V" stress gpu --gpus 0 --no-gemm --no-memtest --inject hbm --json
	run v_inject_mem "$V" stress gpu --gpus 0 --no-gemm --no-hbm --duration 2 --inject memtest --json
	run v_pairs "$V" net pairs --json
	run v_pairs_table "$V" net pairs --bytes 512 --color never
	run v_nccl "$V" net nccl --sizes 64M:4G --json
	run v_nccl_all "$V" net nccl --op all_reduce,all_gather,reduce_scatter,alltoall,sendrecv --sizes 1M:1G --json
	run v_nccl_single "$V" net nccl --single-process --sizes 64M:1G --json
	# two ranks meeting at a TCP address, each its own vigil, as two hosts would
	for r in 0 1; do
		"$V" net nccl --rank $r --nranks 2 --gpu $r --rendezvous tcp://127.0.0.1:29517 \
			--sizes 64M:256M --json >"$W/v_nccl_tcp$r.out" 2>"$W/v_nccl_tcp$r.err" &
	done
	wait
	for r in 0 1; do
		python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); o["_run"]=sys.argv[2]; o["_rc"]=0; print(json.dumps(o))' \
			"$W/v_nccl_tcp$r.out" "v_nccl_tcp$r" >>"$R" 2>/dev/null || echo "   tcp rank $r: no JSON"
	done
	# rank 1 never enters the 16 MiB collective: vigil must name it within the deadline
	run v_nccl_hang "$V" net nccl --sizes 1M:64M --fault-hang-rank 1 --fault-bytes 16M --timeout 8 --json
	run v_nccl_hang_table "$V" net nccl --sizes 4M:32M --fault-hang-rank 1 --fault-bytes 16M --timeout 5 --color never
	# a GPU slowed by a background load must be flagged as an outlier
	"$B/vigil-gpu" burn --gpus 1 --duration 45 --dtypes bf16 >"$W/burn.out" 2>&1 &
	BURN=$!
	sleep 4
	run v_slow "$V" stress gpu --duration 20 --no-memtest --json
	kill "$BURN" 2>/dev/null
	wait "$BURN" 2>/dev/null
	run v_deep "$V" check --deep --json
fi

say "done in $(($(date +%s) - T0)) s"
cp "$W/topo.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/logs.tar.gz" -C "$W" . 2>/dev/null
for t in v_stress_table v_pairs_table v_nccl_hang_table; do
	[ -e "$W/$t.out" ] && { echo "---- $t"; cat "$W/$t.out"; }
done
python3 bench/device-summary.py "$R" | tee "$OUT/summary.txt"
