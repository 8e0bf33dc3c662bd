#!/bin/sh
# kmsg_before_after.sh: the kernel-log parser before and after a change, in one run on one
# machine (docs/PERFORMANCE.md). BASE is a source tree of the older vigil (for example
# `git archive REV | tar -x -C BASE`); both benchmarks are built, then run in turns so that
# both see the same load: before, after, before, after, ...
#
#   sh bench/kmsg_before_after.sh BASE [MiB] [rounds]
#
# Each round prints both programs' full output; a table of the best figure of each input
# comes last. The first three inputs are the same bytes in both programs.
set -eu
BASE=${1:?usage: sh bench/kmsg_before_after.sh BASE [MiB] [rounds]}
MIB=${2:-128}
ROUNDS=${3:-3}
JOBS=$(nproc 2>/dev/null || echo 2)
make -s -j"$JOBS" NVCC=/none build/bench/kmsg_bench >/dev/null
(cd "$BASE" && make -s -j"$JOBS" NVCC=/none build/bench/kmsg_bench >/dev/null)
OUT=$(mktemp -d)
r=1
while [ "$r" -le "$ROUNDS" ]; do
	echo "== round $r: before"
	"$BASE/build/bench/kmsg_bench" "$MIB" 3 | tee -a "$OUT/before"
	echo "== round $r: after"
	build/bench/kmsg_bench "$MIB" 3 | tee -a "$OUT/after"
	r=$((r + 1))
done
# best kmsg_parse MB/s per input: the line after a label line names the input
best() {
	awk '/^[a-z]/ { label = substr($0, 1, 15); sub(/ +$/, "", label) }
	     /kmsg_parse/ { v = $2; if (!(label in b) || v > b[label]) b[label] = v }
	     END { for (l in b) printf "%s\t%s\n", l, b[l] }' "$1" | sort
}
echo
echo "best kmsg_parse MB/s of $ROUNDS rounds ($MIB MiB each):"
best "$OUT/before" > "$OUT/b"
best "$OUT/after" > "$OUT/a"
printf '%-22s %10s %10s\n' input before after
join -t "$(printf '\t')" -a 2 -e - -o 0,1.2,2.2 "$OUT/b" "$OUT/a" |
	awk -F '\t' '{ printf "%-22s %10s %10s\n", $1, $2, $3 }'
rm -rf "$OUT"
