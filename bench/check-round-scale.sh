#!/bin/sh
# bench/check-round-scale.sh: the figures of docs/PERFORMANCE.md, "Check round at scale".
#
#   sh bench/check-round-scale.sh [N ...]        (default: 16 64 128; needs root and slurm-wlm)
#
# For each N: a private Slurm with N slurmd node names on this host (tests/e2e/slurm-cluster),
# then 'vigil fleet check' over all N nodes, ONE srun step (fleet.one-step=true) and one srun a
# node (fleet.one-step=false, --parallel 32), RUNS times each, alternating, in the same run.
# Printed: the round's wall time, its srun calls, and slurmctld's CPU time over the round
# (utime+stime of /proc/PID/stat, before and after). The remote vigil is 'vigil check --json
# --only kernel' on a clean fixture root per node. VIGIL=path picks the vigil (default
# build/san/vigil, the test build; BUILD=build for the release build's build/vigil).
set -u
cd "$(dirname "$0")/.." || exit 2
VIGIL=${VIGIL:-$PWD/${BUILD:-build/san}/vigil}
RUNS=${RUNS:-3}
SIZES=${*:-16 64 128}
PORT=${PORT:-49800} # above test_slurm_e2e_onestep.c's ports (48000-49784)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
tmp=$(mktemp -d)
cleanup() {
	[ -e "$tmp/slurm/slurm.conf" ] && sh tests/e2e/slurm-cluster stop "$tmp/slurm" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
[ -x "$VIGIL" ] || { echo "no vigil at $VIGIL (make first)" >&2; exit 2; }
tck=$(getconf CLK_TCK)

cpu_of() { # utime+stime of pid $1, in clock ticks
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

printf '%-6s %-9s %5s %9s %9s %10s %s\n' nodes mode run wall_s sruns ctld_cpu_s answers
for n in $SIZES; do
	sh tests/e2e/slurm-cluster stop "$tmp/slurm" >/dev/null 2>&1
	rm -rf "$tmp/slurm" "$tmp/fx"
	i=1
	while [ "$i" -le "$n" ]; do
		mkdir -p "$tmp/fx/n$i/dev"
		echo '6,1,1000000,-;Linux version 6.1.0 (bench fixture)' >"$tmp/fx/n$i/dev/kmsg"
		i=$((i + 1))
	done
	cat >"$tmp/remote" <<EOF
#!/bin/sh
exec "$VIGIL" "\$@" --only kernel --root "$tmp/fx/\$SLURMD_NODENAME"
EOF
	cat >"$tmp/srun" <<EOF
#!/bin/sh
echo x >>"$tmp/srun.count"
exec srun "\$@"
EOF
	chmod +x "$tmp/remote" "$tmp/srun"
	t0=$(date +%s.%N)
	export SLURM_CONF="$tmp/slurm/slurm.conf"
	if ! sh tests/e2e/slurm-cluster start "$tmp/slurm" "$n" "$PORT" "" 0 >"$tmp/start.log" 2>&1; then
		# slurm-cluster waits 90 s for every node to register; on two cores 128 slurmd
		# may need longer: wait up to 5 more minutes while the daemons run
		w=0
		while [ -s "$tmp/slurm/run/slurmctld.pid" ] && [ $w -lt 120 ] &&
			[ "$(sinfo -h -N -o %T 2>/dev/null | grep -cx idle)" -lt "$n" ]; do
			sleep 2
			w=$((w + 2))
		done
		# a few slurmd that never registered are left out of both modes alike (not
		# responding: not checked); fewer than 9 in 10 up is no measurement
		up=$(sinfo -h -N -o %T 2>/dev/null | grep -cx idle)
		echo "# $up of $n slurmd registered" >&2
		if [ "$up" -lt $((n * 9 / 10)) ]; then
			echo "$n slurmd did not start on this machine: $(tail -3 "$tmp/start.log" | tr '\n' ' ')"
			sinfo -h -N -o '%T' 2>/dev/null | sort | uniq -c | tr '\n' ' '
			echo
			continue
		fi
	fi
	echo "# $n slurmd up in $(echo "$(date +%s.%N) - $t0" | bc) s" >&2
	ctld=$(cat "$tmp/slurm/run/slurmctld.pid")
	r=1
	while [ "$r" -le "$RUNS" ]; do
		for mode in one-step per-node; do
			[ "$mode" = one-step ] && os=true || os=false
			rm -f "$tmp/srun.count"
			c0=$(cpu_of "$ctld")
			t0=$(date +%s.%N)
			"$VIGIL" fleet check --json --timeout 120 --parallel 32 \
				-c "fleet.command=$tmp/remote" -c "slurm.srun=$tmp/srun" \
				-c "fleet.one-step=$os" >"$tmp/out.json" 2>"$tmp/err.log"
			t1=$(date +%s.%N)
			c1=$(cpu_of "$ctld")
			ok=$(grep -o '"counts":{"healthy":[0-9]*' "$tmp/out.json" | grep -o '[0-9]*$')
			printf '%-6s %-9s %5s %9.2f %9s %10.2f %s\n' "$n" "$mode" "$r" \
				"$(echo "$t1 - $t0" | bc)" "$(wc -l <"$tmp/srun.count")" \
				"$(echo "($c1 - $c0) / $tck" | bc -l)" "${ok:-0}/$n healthy"
		done
		r=$((r + 1))
	done
	sh tests/e2e/slurm-cluster stop "$tmp/slurm" >/dev/null 2>&1
done
