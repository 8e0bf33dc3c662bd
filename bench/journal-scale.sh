#!/bin/sh
# bench/journal-scale.sh: 'vigil report' over journals with many distinct excluded hosts
# (issue 17: quadratic, 19 s for 100,000 hosts, 39 s for 1 M records), against 'wc -l' on the
# same file in the same run. Figures in docs/PERFORMANCE.md ("Reading at scale").
#   sh bench/journal-scale.sh        (BUILD=build; a non-sanitized build)
set -u
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" <<'PY'
import os, sys
d = sys.argv[1]
def journal(name, hosts, records):
    os.makedirs(d + "/" + name)
    with open(d + "/" + name + "/journal.jsonl", "w") as f:
        f.write('{"t":1700000000.0,"kind":"run_started","nodes":4}\n')
        f.write('{"t":1700000001.0,"kind":"attempt_started","attempt":1,"restarts":0}\n')
        for i in range(records):
            f.write('{"t":1700000002.0,"kind":"host_excluded","attempt":1,"host":"n%07d",'
                    '"reason":"vigil: Xid 79"}\n' % (i % hosts))
journal("hosts100k", 100000, 100000)
journal("records1m", 1000000, 1000000)
PY
t() { s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$s $e" | awk '{printf "%.3f", $2 - $1}'; }
for r in hosts100k records1m; do
	f=$dir/$r/journal.jsonl
	printf '%-10s %9s lines  vigil report %6s s   wc -l %6s s\n' "$r" "$(wc -l <"$f")" \
		"$(t "$B/vigil" report "$dir/$r")" "$(t wc -l "$f")"
done
