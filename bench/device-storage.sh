#!/bin/bash
# bench/device-storage.sh: bench/storage-vs-fio.sh on the lent GPU host (16 CPUs: vigil's
# read-back check overlapped), in one call. The host has no fio: fio 3.33's source (the version
# Debian 12 ships) is carried in build/fio-src and built there without its optional engines.
# SIZE, FILE, RUNS from the environment. Outputs in $OUT.
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/vigil-storage-dev}
mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "== [$(($(date +%s) - T0))s] $*"; }
say "build vigil and fio"
make -j"$(nproc)" NVCC=/none DEVELOPER=0 build/vigil >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
(cd build/fio-src && ./configure >"$OUT/fio-configure.log" 2>&1 && make -j"$(nproc)" >"$OUT/fio-build.log" 2>&1) ||
	{ tail -20 "$OUT/fio-build.log"; exit 1; }
export PATH="$PWD/build/fio-src:$PATH"
fio --version; nproc; df -hT /var/tmp /dev/shm | tail -2; uname -r
say "storage vs fio"
SIZE=${SIZE:-2G} FILE=${FILE:-512M} sh bench/storage-vs-fio.sh build/vigil /var/tmp "${RUNS:-5}" 2>&1 | tee "$OUT/storage-vs-fio.txt"
say "done"
