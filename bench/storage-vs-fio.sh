#!/bin/sh
# storage-vs-fio.sh: 'vigil stress storage' against fio on the same pattern, in one command.
#
# usage: bench/storage-vs-fio.sh [VIGIL] [DISK_DIR] [RUNS]
#   VIGIL     the vigil binary (default ./vigil)
#   DISK_DIR  a directory on a disk (default /var/tmp); tmpfs is /dev/shm
#   RUNS      runs of each, medians reported (default 3); SIZE, FILE, WRITERS, BLOCK from the
#             environment (default 1G in all, 256M files, 4 writers, 1M blocks)
#
# The pattern, the same for all: WRITERS jobs, each writing one file of FILE bytes
# sequentially in BLOCK writes (psync, iodepth 1: one write at a time, as a simple writer),
# O_DIRECT when vigil found the file system takes it (its figures say "direct"), an fsync
# at the end of each file (fio's fsync_on_close=1), files not preallocated (fio's
# fallocate=none: a checkpoint writes fresh files); then the same files read back
# sequentially (fio: invalidate=1 drops their pages first, as vigil does when not O_DIRECT).
# vigil also renames and syncs the directory.
#
# The sides (SIDES from the environment; default vigil, vigil-nocheck, fio and fio-pattern), each
# run in a rotating order (so that none always follows another's writes):
#   vigil          vigil stress storage as users run it: every byte read back is compared
#                  (figures.verify says whether inline or overlapped)
#   vigil-nocheck  the same with --verify none: the I/O alone, fio's like
#   vigil-overlap  vigil with --verify overlapped (the check on a thread of its own), and
#   vigil-inline   with --verify inline: the two ways of checking side by side
#   fio            fio, no check of what it reads
#   fio-crc32c     fio checking what it reads (--verify=crc32c, written with its headers):
#                  a verified read, vigil's like
#   fio-pattern    fio writing a known pattern and comparing every byte it reads with it
#                  (--verify=pattern, 512 bytes of splitmix64, no header): vigil's check is
#                  the same kind (a comparison with known bytes, not a checksum)
# Figures are MiB/s (2^20 bytes) over all jobs: fio's io_bytes over its group runtime,
# vigil's write_mib_s and read_mib_s. fio is Debian's (apt-get install fio).
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
# fio moves WRITERS x FILE (one file a job), vigil SIZE: they must be the same work
python3 - "$size" "$file" "$writers" <<'PY' || exit 2
import sys
def b(v):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(v[:-1]) * m[v[-1].upper()] if v[-1].upper() in m else int(v)
size, file, w = b(sys.argv[1]), b(sys.argv[2]), int(sys.argv[3])
if size != file * w:
    sys.exit("SIZE (%s) must be WRITERS x FILE (%d x %s): fio writes one FILE a job" % (sys.argv[1], w, sys.argv[2]))
PY

median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

run_vigil() { # side dir [options]
	side=$1 dir=$2
	shift 2
	"$vigil" stress storage --dir "$dir" --size "$size" --file-size "$file" \
		--writers "$writers" --block "$block" --meta-files 0 --json "$@" > "$tmp/v.json" || true
	python3 - "$tmp/v.json" "$tmp" "$side" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["figures"]
t, side = sys.argv[2], sys.argv[3]
open("%s/%s.w" % (t, side), "a").write("%s\n" % f["write_mib_s"])
open("%s/%s.r" % (t, side), "a").write("%s\n" % f["read_mib_s"])
open(t + "/direct", "w").write("1" if f["direct"] else "0")
if side in ("vigil", "probe"):  # what --verify auto picked
    open(t + "/verify", "w").write(f.get("verify", "?"))
PY
}

run_fio() { # side dir [options for both jobs]
	side=$1 fdir="$2/vigil-bench-fio.$$"
	shift 2
	direct=$(cat "$tmp/direct")
	mkdir "$fdir"
	for rw in write read; do
		extra=""
		[ "$rw" = write ] && extra="--fsync_on_close=1 --fallocate=none"
		[ "$rw" = write ] && [ $# -gt 0 ] && extra="$extra --do_verify=0 --verify_state_save=0"
		# shellcheck disable=SC2086
		fio --name=ck --directory="$fdir" --rw=$rw --bs="$block" --size="$file" \
			--numjobs="$writers" --ioengine=psync --iodepth=1 --direct="$direct" \
			--invalidate=1 --group_reporting --output-format=json $extra "$@" \
			> "$tmp/f.json"
		python3 - "$tmp/f.json" "$rw" >> "$tmp/$side.$(echo $rw | cut -c1)" <<'PY'
import json, sys
rw = sys.argv[2]
j = json.load(open(sys.argv[1]))["jobs"][0]
if j.get("error"):
    sys.exit("fio failed: error %s" % j["error"])
j = j[rw]
print(j["io_bytes"] / 1048576 / (j["runtime"] / 1000.0))
PY
	done
	rm -rf "$fdir"
}

one_side() { # side dir
	case $1 in
	vigil) run_vigil vigil "$2" ;;
	vigil-nocheck) run_vigil vigil-nocheck "$2" --verify none ;;
	vigil-overlap) run_vigil vigil-overlap "$2" --verify overlapped ;;
	vigil-inline) run_vigil vigil-inline "$2" --verify inline ;;
	fio) run_fio fio "$2" ;;
	fio-crc32c) run_fio fio-crc32c "$2" --verify=crc32c ;;
	fio-pattern) run_fio fio-pattern "$2" --verify=pattern --verify_pattern="$fio_pattern" ;;
	esac
}

sides=${SIDES:-vigil vigil-nocheck fio fio-pattern}
# fio's longest pattern (512 bytes), not a short one repeated: 1,024 hex digits of splitmix64
fio_pattern=0x$(python3 -c '
m = (1 << 64) - 1
s, out = 0x5eed, []
for _ in range(64):
    s = (s + 0x9E3779B97F4A7C15) & m
    z = s
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    out.append("%016x" % (z ^ (z >> 31)))
print("".join(out))')
nsides=$(echo $sides | wc -w)

one_fs() { # label dir
	label=$1 dir=$2
	for s in $sides; do : > "$tmp/$s.w"; : > "$tmp/$s.r"; done
	# a probe: whether the file system takes O_DIRECT, so that fio is run the same way
	run_vigil probe "$dir"
	i=0
	while [ "$i" -lt "$runs" ]; do
		# run i starts at side i mod N and goes round
		order=$(echo $sides $sides | awk -v k=$((i % nsides)) -v m="$nsides" \
			'{for (n = 1; n <= m; n++) printf "%s ", $(k + n)}')
		for s in $order; do
			one_side "$s" "$dir"
		done
		i=$((i + 1))
	done
	direct=$(cat "$tmp/direct"); verify=$(cat "$tmp/verify")
	for s in $sides; do
		printf "%s %s %s %s %s %s\n" "$label" "$s" "$direct" "$verify" \
			"$(median < "$tmp/$s.w")" "$(median < "$tmp/$s.r")" >> "$tmp/rows"
		# every run's figures, in run order, for the record
		printf "%-6s %-14s write %s  read %s\n" "$label" "$s" \
			"$(awk '{printf "%.0f ", $1}' "$tmp/$s.w")" "$(awk '{printf "%.0f ", $1}' "$tmp/$s.r")" \
			>> "$tmp/runs"
		# paired: each run's side / that run's fio (the same round, minutes apart at
		# most), the median of those: drift between rounds cancels
		# vigil is also paired with each fio side that checks what it reads
		for ref in fio fio-pattern fio-crc32c; do
			case $s in fio*) continue ;; esac
			[ "$ref" = fio ] || [ "$s" = vigil ] || continue
			[ -s "$tmp/$ref.r" ] || continue
			printf "%s %s %s %s\n" "$label" "$s / $ref" \
				"$(paste "$tmp/$s.w" "$tmp/$ref.w" | awk '$2 > 0 {print $1 / $2}' | median)" \
				"$(paste "$tmp/$s.r" "$tmp/$ref.r" | awk '$2 > 0 {print $1 / $2}' | median)" \
				>> "$tmp/paired"
		done
	done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/rows"
: > "$tmp/paired"
: > "$tmp/runs"
one_fs disk "$disk"
one_fs tmpfs /dev/shm
echo "vigil stress storage vs fio $(fio --version): $size in $writers files of $file, $block blocks, medians of $runs runs, $(date -u +%Y-%m-%dT%H:%MZ)"
awk '
{ fs[NR] = $1; side[NR] = $2; d[$1] = $3; ver[$1] = $4; w[$1, $2] = $5; r[$1, $2] = $6 }
END {
	printf "%-6s %-14s %9s %9s   (MiB/s)\n", "fs", "side", "write", "read"
	for (n = 1; n <= NR; n++)
		printf "%-6s %-14s %9.0f %9.0f\n", fs[n], side[n], w[fs[n], side[n]], r[fs[n], side[n]]
	print ""
	printf "%-6s %-8s %-10s %-36s %6s %6s\n", "fs", "io", "verify", "ratio", "write", "read"
	split("disk tmpfs", F, " ")
	for (k = 1; k <= 2; k++) {
		f = F[k]
		io = d[f] ? "direct" : "buffered"
		for (n = 1; n <= NR; n++) {
			if (fs[n] != f || side[n] ~ /^fio/ || !w[f, "fio"] || !r[f, "fio"])
				continue
			what = side[n] == "vigil" ? "vigil / fio (fio checks nothing)" : side[n] == "vigil-nocheck" ? "vigil-nocheck / fio (I/O alone)" : side[n] " / fio"
			printf "%-6s %-8s %-10s %-36s %6.2f %6.2f\n", f, io, ver[f], what, w[f, side[n]] / w[f, "fio"], r[f, side[n]] / r[f, "fio"]
		}
		split("fio-pattern fio-crc32c", C, " ")
		for (c = 1; c <= 2; c++)
			if (w[f, "vigil"] && w[f, C[c]] && r[f, C[c]])
				printf "%-6s %-8s %-10s %-36s %6.2f %6.2f\n", f, io, ver[f], "vigil / " C[c] " (both check all)", w[f, "vigil"] / w[f, C[c]], r[f, "vigil"] / r[f, C[c]]
	}
}' "$tmp/rows"
echo ""
echo "each run, in order (MiB/s):"
cat "$tmp/runs"
if [ -s "$tmp/paired" ]; then
	echo ""
	echo "paired: the median over the runs of (side / a fio side in the same round)"
	awk '{ printf "%-6s %-34s %6.2f %6.2f\n", $1, $2 " " $3 " " $4, $5, $6 }' "$tmp/paired"
fi
