#!/bin/sh
# bench/diagnose-steps.sh: 'vigil diagnose steps' on a 1,000,000-step run (issue 11: under 1 s on
# one core), as CSV and as vigil run's journal, against references in the same command on the
# same file: 'wc -l' (reading it) and python3 parsing every row (csv.reader / json.loads).
# Figures in docs/PERFORMANCE.md ("vigil diagnose steps").
#   sh bench/diagnose-steps.sh [STEPS]      (BUILD=build; a non-sanitized build)
set -u
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build}
N=${1:-1000000}
REPS=${REPS:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
one=""
command -v taskset >/dev/null 2>&1 && one="taskset -c 0"

# a run with checkpoint drops every 100 steps on a step down to 70 % at the middle, 1 % noise
python3 - "$N" "$dir" <<'PY'
import random, sys
n, d = int(sys.argv[1]), sys.argv[2]
R = random.Random(1)
t = 1.7e9
with open(d + "/steps.csv", "w") as c, open(d + "/journal.jsonl", "w") as j:
    c.write("step,time,loss\n")
    j.write('{"t":%.3f,"kind":"run_started","attempt":0}\n' % t)
    for i in range(n):
        f = (0.7 if i >= n // 2 else 1.0) * (1 + R.gauss(0, 0.01))
        if i % 100 == 37:
            f /= 10
        t += 0.5 / f
        c.write("%d,%.4f,2.31\n" % (i, t))
        j.write('{"t":%.4f,"kind":"step","attempt":1,"step":%d,"loss":2.31}\n' % (t, i))
PY

# the best of REPS wall times of a command, in seconds
best() {
	b=""
	i=0
	while [ $i -lt "$REPS" ]; do
		s=$(date +%s.%N)
		"$@" >/dev/null 2>&1
		e=$(date +%s.%N)
		b=$(echo "$s $e ${b:-1e9}" | awk '{d=$2-$1; print (d<$3)?d:$3}')
		i=$((i + 1))
	done
	echo "$b"
}

echo "== vigil diagnose steps on $N steps, one core ($one), best of $REPS"
$one "$B/vigil" diagnose steps "$dir/steps.csv" | grep -E '^[a-z-]+ from'
for f in steps.csv journal.jsonl; do
	size=$(wc -c <"$dir/$f")
	v=$(best $one "$B/vigil" diagnose steps "$dir/$f")
	w=$(best $one wc -l "$dir/$f")
	if [ "$f" = steps.csv ]; then
		p=$(best $one python3 -c 'import csv,sys
n=0
for r in csv.reader(open(sys.argv[1])): n+=1' "$dir/$f")
	else
		p=$(best $one python3 -c 'import json,sys
n=0
for l in open(sys.argv[1]): json.loads(l); n+=1' "$dir/$f")
	fi
	echo "$f $size $v $w $p" | awk '{printf "%-14s %5.1f MB: vigil %.3f s (%.0f ns/row) | wc -l %.3f s (%.1fx) | python3 parse %.3f s (vigil %.2fx of it)\n", $1, $2/1e6, $3, $3/'"$N"'*1e9, $4, $3/$4, $5, $3/$5}'
done
