#!/bin/bash
# device-capture.sh: run on a GPU host (the lent H200 machines): build vigil, capture a fixture
# of the host with 'vigil gather', run 'vigil check' (table and JSON) on the real host and on the
# capture, and time 'vigil check' there. Everything lands in $OUT (or /tmp/vigil-out).
#   bash bench/device-capture.sh
# Extra build flags (an include/lib dir for libmicrohttpd on a host without it) come from
# VIGIL_CFLAGS / VIGIL_LDFLAGS.
set -u
O=${OUT:-/tmp/vigil-out}
mkdir -p "$O"
make -j8 DEVELOPER=0 NVCC="${VIGIL_NVCC:-nvcc-not-needed}" CFLAGS="-O2 -g ${VIGIL_CFLAGS:-}" \
	LDFLAGS="${VIGIL_LDFLAGS:-}" \
	all bench-build >"$O/build.log" 2>&1 || { tail -40 "$O/build.log"; exit 1; }
fx=/tmp/h200-capture
rm -rf "$fx"
echo "== vigil gather"
./vigil gather "$fx" | tee "$O/gather.txt"
tar czf "$O/fixture.tar.gz" -C /tmp h200-capture
echo "== vigil check (real host)"
./vigil check -v | tee "$O/check.txt"
echo "exit=${PIPESTATUS[0]}" | tee -a "$O/check.txt"
./vigil check --json >"$O/check.json"
echo "json exit=$?"
echo "== vigil check --root capture"
./vigil check --root "$fx" | tee "$O/check-capture.txt"
echo "== timing: vigil check on the real host, 30 runs (wall p50 p10 p90, cpu p50 p10 p90 ms)"
build/bench/check_bench 30 -- ./vigil check --reason | tee "$O/timing.txt"
build/bench/check_bench 30 -- ./vigil check --reason --only gpu | tee -a "$O/timing.txt"
nvidia-smi -q >"$O/nvidia-smi-q.txt" 2>&1
nvidia-smi topo -m >"$O/nvidia-smi-topo.txt" 2>&1
uname -a >"$O/uname.txt"
