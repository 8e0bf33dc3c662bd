/*
 * telemetry.h: per-GPU telemetry in the agent's /metrics (docs/telemetry.md), beside the verdicts,
 * so a site needs no dcgm-exporter to see its GPUs.
 *
 * Where it comes from: the gpu check's own NVML read in the gpu worker (nvml_on_read()), so
 * there is no NVML call of its own but four (nvml_want_telemetry()). The worker sends what it
 * read as the plain struct nvml_gpu array (telemetry_encode(); the worker is a fork of the
 * agent, one binary, one layout); the agent checks the size, keeps it (telemetry_take()) and
 * writes it on each scrape (telemetry_prom()) with the Xids NVML reported (its xidwatch record).
 *
 * Never a 0 for a value not read: a series whose NVML call failed (NOT_SUPPORTED, an error, a
 * GPU that cannot be opened) is left out, and vigil_gpu_telemetry_field_ok{field} says 0 for it.
 * NVLink error counters are read only every gpu.nvlink-counter-interval seconds: in between the
 * last values read are kept (the counters only rise; a GPU whose UUID changed starts anew).
 *
 * Ownership: struct gpu_telemetry owns its arrays; telemetry_release() frees them. Plain data:
 * the caller locks (the HTTP thread reads it while the loop replaces it).
 */
#ifndef VIGIL_AGENT_TELEMETRY_H
#define VIGIL_AGENT_TELEMETRY_H

#include "../gpu/nvml.h"

#define TELEMETRY_MAX_GPUS 256
#define TELEMETRY_MAX_XIDS 256

struct telemetry_xid {
	char bdf[32];
	unsigned xid;
	uint64_t count;
};

struct gpu_telemetry {
	bool have;             /* a read arrived */
	double at;             /* wall seconds of the read (the worker's request) */
	struct nvml_str driver_version;
	struct nvml_gpu *gpus;
	size_t nr;
	/* NVML's Xid record (xidwatch), copied after each drain */
	bool xid_watch;        /* the record exists (NVML's event API answered) */
	struct telemetry_xid xids[TELEMETRY_MAX_XIDS];
	size_t nr_xids;
	char watched[TELEMETRY_MAX_GPUS][32]; /* BDFs NVML watches for Xids */
	size_t nr_watched;
};

void telemetry_init(struct gpu_telemetry *t);
void telemetry_release(struct gpu_telemetry *t);

/* The worker's message body for readings h taken at wall time at (appended to out). */
void telemetry_encode(const struct nvml_host *h, double at, struct strbuf *out);
/* Replace t's readings by a message body; 0, or -1 (not such a body: t is left as it was). */
int telemetry_take(struct gpu_telemetry *t, const char *buf, size_t len);

/* The telemetry families (docs/telemetry.md), in Prometheus text; nothing before a first read. */
void telemetry_prom(const struct gpu_telemetry *t, struct strbuf *out);

#endif
