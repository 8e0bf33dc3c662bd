/*
 * snapshot.h: NVML snapshots, the plain-text file (docs/nvml-snapshot.md) that 'vigil gather'
 * saves as DIR/nvml.snapshot and that the fake NVML library (tests/fake-nvml/) serves back, so a
 * real host's NVML answers can be replayed on a laptop.
 */
#ifndef VIGIL_GPU_SNAPSHOT_H
#define VIGIL_GPU_SNAPSHOT_H

#include "nvml.h"

#define NVML_SNAPSHOT_HEADER "vigil-nvml-snapshot 1"

/* Append the snapshot of readings h to out (pure: no NVML calls). */
void nvml_snapshot_format(const struct nvml_host *h, struct strbuf *out);

/*
 * Read the host's NVML (root: fsroot_host, or a fixture root) through the shim and append its snapshot to out. Returns 0 when written
 * (also when nvmlInit failed: the snapshot then says "init !CODE", so a fixture of a host whose
 * driver is not loaded, or broken, replays as such), 1 when this host has no NVML library at all
 * (nothing written; *err says so), or -1 with *err when the library asked for cannot be loaded.
 */
int nvml_snapshot_write(const struct fsroot *root, struct strbuf *out, struct strbuf *err);

/*
 * The inverse of nvml_snapshot_format(): parse snapshot text (len bytes) into h (nvml_host_init'ed
 * by the caller; its readings are replaced), as if NVML had been read: how `vigil check` takes a
 * reading from the agent's gpu worker (GET /gpu-reading) instead of starting NVML itself. Bounded:
 * at most NVML_MAX_GPUS sections, lines of 4 KiB. 0, or -1 with *err naming the line (h is then
 * left empty: a half-read host is never judged).
 */
int nvml_snapshot_parse(const char *text, size_t len, struct nvml_host *h, struct strbuf *err);

#endif
