# bench/nccl-home.sh: sourced by the device benches (bash). nccl_home: the NCCL that the host's
# PyTorch ships (its nvidia/ wheels) as an NCCL_HOME vigil's Makefile takes, so that vigil's
# NCCL programs and its recorder build and run against the same library as torch does: the
# header and the library linked under /tmp/nccl-home, NCCL_HOME=... appended to the caller's
# array mk. SITE is set to torch's site-packages. Returns 1 (mk unchanged) when torch or its
# NCCL is not there.
nccl_home() {
	SITE=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)
	[ -n "$SITE" ] || return 1
	local lib inc
	lib=$(find "$SITE/nvidia" -name 'libnccl.so*' 2>/dev/null | head -1)
	inc=$(find "$SITE/nvidia" -name nccl.h 2>/dev/null | head -1)
	[ -n "$lib" ] && [ -n "$inc" ] || return 1
	mkdir -p /tmp/nccl-home/lib /tmp/nccl-home/include
	ln -sf "$lib" /tmp/nccl-home/lib/libnccl.so
	ln -sf "$lib" /tmp/nccl-home/lib/libnccl.so.2
	ln -sf "$inc" /tmp/nccl-home/include/nccl.h
	mk+=(NCCL_HOME=/tmp/nccl-home)
	echo "NCCL from torch: $lib"
}
