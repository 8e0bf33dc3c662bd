#!/bin/sh
# storage-vs-fio.sh: 'vigil stress storage' against fio on the same pattern, in one command.
#
# usage: bench/storage-vs-fio.sh [VIGIL] [DISK_DIR] [RUNS]
#   VIGIL     the vigil binary (default ./vigil)
#   DISK_DIR  a directory on a disk (default /var/tmp); tmpfs is /dev/shm
#   RUNS      runs of each, medians reported (default 3); SIZE, FILE, WRITERS, BLOCK from the
#             environment (default 1G in all, 256M files, 4 writers, 1M blocks)
#
# The pattern, the same for both: WRITERS jobs, each writing one file of FILE bytes
# sequentially in BLOCK writes (psync, iodepth 1: one write at a time, as a simple writer),
# O_DIRECT when vigil found the file system takes it (its figures say "direct"), an fsync
# at the end of each file (fio's fsync_on_close=1), files not preallocated (fio's
# fallocate=none: a checkpoint writes fresh files); then the same files read back
# sequentially (fio: invalidate=1 drops their pages first, as vigil does when not O_DIRECT).
# vigil also verifies every byte it reads and renames and syncs the directory; fio does
# neither. Figures are MiB/s (2^20 bytes) over all jobs: fio's io_bytes over its group
# runtime, vigil's write_mib_s and read_mib_s. fio is Debian's (apt-get install fio).
set -eu
vigil=${1:-./vigil}
disk=${2:-/var/tmp}
runs=${3:-3}
size=${SIZE:-1G}
file=${FILE:-256M}
writers=${WRITERS:-4}
block=${BLOCK:-1M}
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed to read the JSON" >&2; exit 2; }

median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

one_fs() { # label dir
	label=$1 dir=$2
	: > "$tmp/v.w"; : > "$tmp/v.r"; : > "$tmp/f.w"; : > "$tmp/f.r"
	i=0
	while [ "$i" -lt "$runs" ]; do
		i=$((i + 1))
		"$vigil" stress storage --dir "$dir" --size "$size" --file-size "$file" \
			--writers "$writers" --block "$block" --meta-files 0 --json > "$tmp/v.json" || true
		python3 - "$tmp/v.json" "$tmp" <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))["figures"]
t = sys.argv[2]
open(t + "/v.w", "a").write("%s\n" % f["write_mib_s"])
open(t + "/v.r", "a").write("%s\n" % f["read_mib_s"])
open(t + "/direct", "w").write("1" if f["direct"] else "0")
EOF
		direct=$(cat "$tmp/direct")
		fdir="$dir/vigil-bench-fio.$$"
		mkdir "$fdir"
		for rw in write read; do
			extra=""
			[ "$rw" = write ] && extra="--fsync_on_close=1 --fallocate=none"
			# shellcheck disable=SC2086
			fio --name=ck --directory="$fdir" --rw=$rw --bs="$block" --size="$file" \
				--numjobs="$writers" --ioengine=psync --iodepth=1 --direct="$direct" \
				--invalidate=1 --group_reporting --output-format=json $extra \
				> "$tmp/f.json"
			python3 - "$tmp/f.json" "$rw" >> "$tmp/f.$(echo $rw | cut -c1)" <<'EOF'
import json, sys
rw = sys.argv[2]
j = json.load(open(sys.argv[1]))["jobs"][0][rw]
print(j["io_bytes"] / 1048576 / (j["runtime"] / 1000.0))
EOF
		done
		rm -rf "$fdir"
	done
	vw=$(median < "$tmp/v.w"); vr=$(median < "$tmp/v.r")
	fw=$(median < "$tmp/f.w"); fr=$(median < "$tmp/f.r")
	awk -v l="$label" -v d="$direct" -v vw="$vw" -v fw="$fw" -v vr="$vr" -v fr="$fr" 'BEGIN {
		printf "%-6s %-7s %9.0f %9.0f %6.2f   %9.0f %9.0f %6.2f\n", l, d ? "direct" : "buffered",
			vw, fw, vw / fw, vr, fr, vr / fr }' >> "$tmp/table"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/table"
one_fs disk "$disk"
one_fs tmpfs /dev/shm
echo "vigil stress storage vs fio $(fio --version): $size in $writers files of $file, $block blocks, medians of $runs runs, $(date -u +%Y-%m-%dT%H:%MZ)"
printf "%-6s %-7s %9s %9s %6s   %9s %9s %6s\n" fs io "vigil w" "fio w" ratio "vigil r" "fio r" ratio
printf "%-6s %-7s %9s %9s %6s   %9s %9s %6s\n" "" "" MiB/s MiB/s "" MiB/s MiB/s ""
cat "$tmp/table"
