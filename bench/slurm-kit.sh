#!/bin/sh
# slurm-kit.sh: Debian's Slurm (slurm-wlm) and munge as one tarball, for a GPU host that has
# neither and cannot install packages (the lent H200 machine): the commands and daemons that
# tests/e2e/slurm-cluster starts, their plugins, and the shared libraries they need beyond the
# C library, at the paths Debian puts them (slurmd runs /usr/sbin/slurmstepd by that path).
# Unpack there with 'tar --skip-old-files -C / -xzf KIT' so that nothing the host has is
# replaced. Run on a Debian host with slurm-wlm and munge installed.
#
#   sh bench/slurm-kit.sh build/slurm-kit.tar.gz
set -eu
out=$1
bins="/usr/bin/srun /usr/bin/salloc /usr/bin/sbatch /usr/bin/scontrol /usr/bin/sinfo
/usr/bin/squeue /usr/bin/scancel /usr/bin/time /usr/sbin/slurmctld /usr/sbin/slurmd
/usr/sbin/slurmstepd /usr/sbin/munged"
plugdir=/usr/lib/x86_64-linux-gnu/slurm-wlm
for b in $bins; do [ -x "$b" ] || { echo "slurm-kit: $b is missing (apt-get install slurm-wlm munge time)" >&2; exit 2; }; done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for b in $bins; do
	mkdir -p "$stage$(dirname "$b")"
	cp -p "$b" "$stage$b"
done
mkdir -p "$stage$plugdir" "$stage/usr/lib/x86_64-linux-gnu"
cp -pr "$plugdir/." "$stage$plugdir/"
# the libraries by their sonames, dereferenced, C library and loader left to the host
# shellcheck disable=SC2086
ldd $bins "$plugdir"/*.so 2>/dev/null | awk '/=>/ {print $3}' | sort -u |
	grep -v -E '/(libc|libm|libresolv|libpthread|libdl|librt|libutil)\.so|ld-linux' |
	while read -r lib; do
		case $lib in "$plugdir"/*) continue ;; esac
		cp -L "$lib" "$stage/usr/lib/x86_64-linux-gnu/$(basename "$lib")"
	done
tar -C "$stage" -czf "$out" usr
echo "slurm-kit: $out, $(du -h "$out" | cut -f1)"
