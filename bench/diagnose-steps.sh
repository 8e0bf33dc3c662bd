#!/bin/sh
# bench/diagnose-steps.sh: 'vigil diagnose steps' on a 1,000,000-step run (issue 11: under 1 s on
# one core), as CSV and as vigil run's journal, and as a trainer's raw output (issue 18: 1M raw
# lines under 2 s): Megatron's iteration lines with stamps, and a torchtitan log of 4 ranks'
# interleaved lines (250,000 steps, 1M lines); against references in the same command on the
# same file: 'wc -l' (reading it) and python3 parsing every row (csv.reader / json.loads / one
# regular expression a line for the logs).
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
# the raw logs: the same run's step times, as Megatron and (every 4th step) torchtitan print them
import time
R = random.Random(1)
t = 1.7e9
with open(d + "/megatron.log", "w") as m, open(d + "/torchtitan.log", "w") as tt:
    for i in range(n):
        f = (0.7 if i >= n // 2 else 1.0) * (1 + R.gauss(0, 0.01))
        if i % 100 == 37:
            f /= 10
        st = 0.5 / f
        t += st
        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
        m.write("[%s] iteration %8d/ %8d | consumed samples: %12d | elapsed time per iteration "
                "(ms): %.1f | learning rate: 1.000E-05 | global batch size:  1024 | lm loss: "
                "2.310000E+00 | loss scale: 1.0 | grad norm: 0.300 | number of skipped "
                "iterations:   0 | number of nan iterations:   0 |\n" % (ts, i + 1, n, (i + 1) * 1024,
                                                                          st * 1000))
        if i % 4 == 0:
            for r in range(4):
                tt.write("[rank%d]:[titan] %s,%03d - root - INFO - step: %d  loss:  2.3100  "
                         "memory: 49.66GiB(52.28%%)  tps: 5,856  tflops: 339.16  mfu: %.2f%%\n"
                         % (r, ts, int(t % 1 * 1000), i + 1, 34.3 * f))
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
for f in steps.csv megatron.log torchtitan.log; do
	$one "$B/vigil" diagnose steps "$dir/$f" | grep -E '^[a-z-]+ from|from [0-9]+ rows'
done
for f in steps.csv journal.jsonl megatron.log torchtitan.log; do
	size=$(wc -c <"$dir/$f")
	v=$(best $one "$B/vigil" diagnose steps "$dir/$f")
	w=$(best $one wc -l "$dir/$f")
	if [ "$f" = steps.csv ]; then
		p=$(best $one python3 -c 'import csv,sys
n=0
for r in csv.reader(open(sys.argv[1])): n+=1' "$dir/$f")
	elif [ "$f" = journal.jsonl ]; then
		p=$(best $one python3 -c 'import json,sys
n=0
for l in open(sys.argv[1]): json.loads(l); n+=1' "$dir/$f")
	else
		p=$(best $one python3 -c 'import re,sys
r=re.compile(r"(?:iteration|step:)\s+(\d+)")
n=0
for l in open(sys.argv[1]):
    if r.search(l): n+=1' "$dir/$f")
	fi
	lines=$(wc -l <"$dir/$f")
	echo "$f $size $v $w $p $lines" | awk '{printf "%-14s %6.1f MB %8d lines: vigil %.3f s (%.0f ns/line) | wc -l %.3f s (%.1fx) | python3 parse %.3f s (vigil %.2fx of it)\n", $1, $2/1e6, $6, $3, $3/$6*1e9, $4, $3/$4, $5, $3/$5}'
done
