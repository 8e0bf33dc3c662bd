#!/bin/sh
# bench/ufm-parse.sh: 'vigil fabric ufm' parsing throughput on a generated UFM event.log of
# about SIZE_MB (500) MB, against the same file read by 'wc -l' and 'grep -c' in the same run
# (the floor any line reader pays), and its peak memory (bounded: the file is streamed).
#   BUILD=build sh bench/ufm-parse.sh          (an optimised build: make BUILD=build)
# The log: 20 events a second (no burst), 40% of them of kept codes (329 both-ends messages,
# 702 FLAPPING, 110/112/918 counter alarms) over 20,000 links, the rest other codes.
set -eu
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build}
SIZE_MB=${SIZE_MB:-500}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log="$dir/event.log"
python3 - "$log" "$SIZE_MB" <<'PY'
import sys, random, datetime
path, mb = sys.argv[1], int(sys.argv[2])
rnd = random.Random(12)
t = datetime.datetime(2024, 5, 1)
step = datetime.timedelta(milliseconds=50)
out = open(path, "w")
size, n = 0, 0
while size < mb * 1000000:
    lines = []
    for _ in range(10000):
        t += step
        n += 1
        ts = t.strftime("%Y-%m-%d %H:%M:%S.") + "%03d" % (t.microsecond // 1000)
        l = rnd.randrange(20000)
        sw, p = "T3-E%d-N-U47" % (l // 64), "1/%d/%d" % (l % 64 // 2 + 1, l % 2 + 1)
        g = "9c0591030090%04x" % (l // 64)
        env = "%s [%d] [%%d] WARNING [Hardware] Switch [site1 / Switch: %s / %s] [dev_id: %s]: " % (ts, n, sw, p, g)
        r = rnd.random()
        if r < 0.20:
            lines.append(env % 329 + "Link went down: (Switch:%s:%s)%s:%d - (Switch:T4-E%d-L-U51:1/%d/2)fc6a1c03002%05x:%d, cable S/N: MT2330FT%05d" % (sw, p, g, l % 64 + 1, l // 97, l % 32 + 1, l, l % 40 + 1, l))
        elif r < 0.25:
            lines.append(env % 702 + "Peer Port T4-E%d-L-U51:1/%d/2 is considered by SM as unhealthy due to FLAPPING." % (l // 97, l % 32 + 1))
        elif r < 0.40:
            lines.append(env % rnd.choice((110, 112, 918)) + "Symbol error counter rate is 152.0 (threshold 100.0)")
        else:
            lines.append(env % rnd.choice((64, 65, 331, 394, 907)) + "GID Address In Service: fe80::9c05:9103:90:%04x" % l)
    s = "\n".join(lines) + "\n"
    out.write(s)
    size += len(s)
out.close()
PY
bytes=$(stat -c %s "$log")
# warm the page cache so every reader reads from memory
cat "$log" >/dev/null
now() { date +%s.%N; }
t0=$(now); wc -l <"$log" >"$dir/wc.out"; t1=$(now)
grep -c 'Link went down' "$log" >"$dir/grep.out" || true; t2=$(now)  # not to /dev/null: GNU grep stops at the first match then
/usr/bin/time -f '%M' -o "$dir/rss" "$B/vigil" fabric ufm "$log" --json >"$dir/out.json" 2>"$dir/err" || true
t3=$(now)
awk -v b="$bytes" -v w0="$t0" -v w1="$t1" -v g="$t2" -v v="$t3" -v rss="$(tail -n 1 "$dir/rss")" 'BEGIN {
	wc = w1 - w0; gr = g - w1; vg = v - g; mb = b / 1e6
	printf "file: %.0f MB\n", mb
	printf "wc -l                 %6.2f s  %7.0f MB/s\n", wc, mb / wc
	printf "grep -c               %6.2f s  %7.0f MB/s\n", gr, mb / gr
	printf "vigil fabric ufm      %6.2f s  %7.0f MB/s  peak RSS %.1f MiB\n", vg, mb / vg, rss / 1024
	printf "ratio vigil/wc: %.2fx the time; vigil/grep: %.2fx\n", vg / wc, vg / gr
}'
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["files"][0]; print("lines %d events %d skipped %d garbage %d; disable %d, incidents %d" % (f["lines"], f["events"], f["skipped"], f["garbage"], len(d["disable"]), len(d["incidents"])))' "$dir/out.json"
