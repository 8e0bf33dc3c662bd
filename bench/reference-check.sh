#!/bin/sh
# reference-check.sh: the hand-written health check vigil replaces, as a yardstick. It reads the
# same fixture files a typical site script reads (PCI link files, IB port files, meminfo, mounts,
# the kernel log scanned for Xid/SXid) and judges nothing clever. bench/run times vigil check
# against it in the same command and reports the ratio.
root=${1:?usage: reference-check.sh ROOT}
bad=0
for d in "$root"/sys/bus/pci/devices/*; do
	[ -f "$d/vendor" ] || continue
	cw=$(cat "$d/current_link_width" 2>/dev/null); mw=$(cat "$d/max_link_width" 2>/dev/null)
	[ "$cw" = "$mw" ] || bad=1
done
for p in "$root"/sys/class/infiniband/*/ports/*; do
	[ -d "$p" ] || continue
	grep -q ACTIVE "$p/state" 2>/dev/null || bad=1
	cat "$p"/counters/* >/dev/null 2>&1
done
grep -q MemAvailable "$root/proc/meminfo" 2>/dev/null
cat "$root/proc/mounts" >/dev/null 2>&1
if grep -E 'Xid|SXid' "$root/dev/kmsg" >/dev/null 2>&1; then bad=1; fi
exit $bad
