#!/bin/bash
# bench/device-storage.sh: bench/storage-vs-fio.sh on the lent GPU host (16 CPUs: vigil's
# read-back check overlapped), in one call. The host has no fio: fio 3.33's source (the version
# Debian 12 ships) is carried in build/fio-src and built there without its optional engines.
# FILE (default 512M), RUNS from the environment; WRITERS_LIST (default "4"): one pass a writer
# count, each moving WRITERS x FILE
# ("4 1" adds the single-writer pass, where the read-back check's cost on one CPU shows whole:
# on the development VM a single reader's checked tmpfs read was 0.85-0.87 of its unchecked one
# in a micro run, 2026-12-05). SIDES as bench/storage-vs-fio.sh takes them (its default: vigil,
# vigil-nocheck, fio and fio-pattern, fio comparing every byte it reads). Outputs in $OUT.
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
# the CPU and whether huge pages are there for the tmpfs buffers: both decide the tmpfs read
grep -m1 'model name' /proc/cpuinfo; lscpu 2>/dev/null | grep -E 'L1d|L2|L3' || true
cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
for w in ${WRITERS_LIST:-4}; do
	say "storage vs fio, $w writers"
	f="$OUT/storage-vs-fio.txt"
	[ "$w" = 4 ] || f="$OUT/storage-vs-fio-w$w.txt"
	mb=$(echo "${FILE:-512M}" | sed 's/[Mm]$//')
	WRITERS=$w SIZE=$((w * mb))M FILE=${mb}M sh bench/storage-vs-fio.sh build/vigil /var/tmp \
		"${RUNS:-5}" 2>&1 | tee "$f"
done
say "done"
