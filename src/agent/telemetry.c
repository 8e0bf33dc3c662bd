/* telemetry.c: per-GPU telemetry in the agent's metrics (see telemetry.h, docs/telemetry.md). */
#include "telemetry.h"
#include "../lib/prom.h"

/* The message body: this header, then nr struct nvml_gpu. The magic carries the struct's size,
 * so a body from another build (there is none: the worker is a fork) can never be misread. */
struct wire_head {
	char magic[8];
	uint32_t nr, gpu_size;
	double at;
	struct nvml_str driver_version;
};
static const char wire_magic[8] = "vgtel1";

void telemetry_init(struct gpu_telemetry *t)
{
	memset(t, 0, sizeof(*t));
}

void telemetry_release(struct gpu_telemetry *t)
{
	free(t->gpus);
	telemetry_init(t);
}

void telemetry_encode(const struct nvml_host *h, double at, struct strbuf *out)
{
	struct wire_head w;
	size_t nr = h->nr < TELEMETRY_MAX_GPUS ? h->nr : TELEMETRY_MAX_GPUS;
	memset(&w, 0, sizeof(w));
	memcpy(w.magic, wire_magic, sizeof(w.magic));
	w.nr = (uint32_t)nr;
	w.gpu_size = (uint32_t)sizeof(struct nvml_gpu);
	w.at = at;
	w.driver_version = h->driver_version;
	strbuf_add(out, &w, sizeof(w));
	strbuf_add(out, h->gpus, nr * sizeof(struct nvml_gpu));
}

static bool same_gpu(const struct nvml_gpu *a, const struct nvml_gpu *b)
{
	return a->index == b->index && a->uuid.rc == b->uuid.rc && !strcmp(a->uuid.s, b->uuid.s);
}

/* NVLink counters this read left unread (NVML_NOT_READ): the last values read of that GPU. */
static void keep_links(struct nvml_gpu *g, const struct gpu_telemetry *old)
{
	const struct nvml_gpu *o = NULL;
	for (size_t i = 0; i < old->nr && !o; i++)
		if (same_gpu(&old->gpus[i], g))
			o = &old->gpus[i];
	for (size_t l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
		for (size_t c = 0; c < NVML_NVLINK_ERROR_COUNT; c++) {
			struct nvml_val *v = &g->nvlink[l].errors[c];
			if (v->rc == NVML_NOT_READ && o && o->nvlink[l].active.rc == 0)
				*v = o->nvlink[l].errors[c];
		}
}

int telemetry_take(struct gpu_telemetry *t, const char *buf, size_t len)
{
	struct wire_head w;
	if (len < sizeof(w))
		return -1;
	memcpy(&w, buf, sizeof(w));
	if (memcmp(w.magic, wire_magic, sizeof(w.magic)) || w.gpu_size != sizeof(struct nvml_gpu) ||
	    w.nr > TELEMETRY_MAX_GPUS || len != sizeof(w) + (size_t)w.nr * sizeof(struct nvml_gpu))
		return -1;
	struct nvml_gpu *gpus = w.nr ? xcalloc(w.nr, sizeof(*gpus)) : NULL;
	if (w.nr)
		memcpy(gpus, buf + sizeof(w), w.nr * sizeof(*gpus));
	for (size_t i = 0; i < w.nr; i++) {
		struct nvml_gpu *g = &gpus[i];
		/* strings end inside their buffers whatever came through the pipe */
#define X(field, key) g->field.s[sizeof(g->field.s) - 1] = '\0';
		NVML_GPU_STRINGS(X)
#undef X
		keep_links(g, t);
	}
	w.driver_version.s[sizeof(w.driver_version.s) - 1] = '\0';
	free(t->gpus);
	t->gpus = gpus;
	t->nr = w.nr;
	t->at = w.at;
	t->driver_version = w.driver_version;
	t->have = true;
	return 0;
}

/* ---- the Prometheus text ---- */

#define MAX_LABELS 16 /* name/value slots: four per GPU, two extra pairs, the end */

struct emit {
	struct strbuf *out;
	const struct gpu_telemetry *t;
	const struct nvml_gpu *g;
	char index[16];
	const char *labels[MAX_LABELS];
	size_t nl;      /* slots used by the GPU's own labels */
	bool declared;  /* the current family's HELP and TYPE are written */
	const char *name, *type, *help;
};

static const char *str_of(const struct nvml_str *s)
{
	return s->rc ? "" : s->s;
}

static void gpu_labels(struct emit *e, const struct nvml_gpu *g)
{
	e->g = g;
	snprintf(e->index, sizeof(e->index), "%u", g->index);
	const char *base[] = { "gpu", e->index, "uuid", str_of(&g->uuid), "pci_bus_id",
			       str_of(&g->pci_bus_id), "model", str_of(&g->name) };
	memcpy(e->labels, base, sizeof(base));
	e->nl = ARRAY_SIZE(base);
	e->labels[e->nl] = NULL;
}

static void family(struct emit *e, const char *name, const char *type, const char *help)
{
	e->name = name;
	e->type = type;
	e->help = help;
	e->declared = false;
}

/* One sample with the GPU's labels and up to two more pairs (NULL ends them). */
static void sample(struct emit *e, double v, const char *k1, const char *v1, const char *k2,
		   const char *v2)
{
	size_t n = e->nl;
	if (k1) {
		e->labels[n++] = k1;
		e->labels[n++] = v1;
	}
	if (k2) {
		e->labels[n++] = k2;
		e->labels[n++] = v2;
	}
	e->labels[n] = NULL;
	if (!e->declared) {
		prom_family(e->out, e->name, e->type, e->help);
		e->declared = true;
	}
	prom_sample(e->out, e->name, e->labels, v);
	e->labels[e->nl] = NULL;
}

static bool ok(const struct nvml_val *v)
{
	return v->rc == NVML_SUCCESS;
}

/* A gauge or counter of one reading, times mul over div (exact: 76000 mW is 76 W, not
 * 76.00000000000001); left out when it was not read. */
static void one(struct emit *e, const struct nvml_val *v, double mul, double div)
{
	if (ok(v))
		sample(e, (double)v->v * mul / div, NULL, NULL, NULL, NULL);
}

static const struct {
	uint64_t bit;
	const char *reason;
} throttle_reasons[] = {
	{ NVML_CLOCKS_EVENT_GPU_IDLE, "gpu_idle" },
	{ NVML_CLOCKS_EVENT_APP_CLOCKS, "applications_clocks" },
	{ NVML_CLOCKS_EVENT_SW_POWER_CAP, "sw_power_cap" },
	{ NVML_CLOCKS_EVENT_HW_SLOWDOWN, "hw_slowdown" },
	{ NVML_CLOCKS_EVENT_SYNC_BOOST, "sync_boost" },
	{ NVML_CLOCKS_EVENT_SW_THERMAL, "sw_thermal" },
	{ NVML_CLOCKS_EVENT_HW_THERMAL, "hw_thermal" },
	{ NVML_CLOCKS_EVENT_HW_POWER_BRAKE, "hw_power_brake" },
	{ NVML_CLOCKS_EVENT_DISPLAY_CLOCK, "display_clocks" },
};

/* The NVLink counters exported, by NVML_NVLINK_ERROR_DL_* (ecc_data is not: no dcgm peer). */
static const struct {
	int counter;
	const char *type;
} nvlink_types[] = {
	{ NVML_NVLINK_ERROR_DL_CRC_FLIT, "crc_flit" },
	{ NVML_NVLINK_ERROR_DL_CRC_DATA, "crc_data" },
	{ NVML_NVLINK_ERROR_DL_REPLAY, "replay" },
	{ NVML_NVLINK_ERROR_DL_RECOVERY, "recovery" },
};

static bool nvlink_any(const struct nvml_gpu *g)
{
	for (size_t l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
		for (size_t c = 0; c < ARRAY_SIZE(nvlink_types); c++)
			if (ok(&g->nvlink[l].errors[nvlink_types[c].counter]))
				return true;
	return false;
}

static void nvlink_samples(struct emit *e)
{
	char link[8];
	for (size_t l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		snprintf(link, sizeof(link), "%zu", l);
		for (size_t c = 0; c < ARRAY_SIZE(nvlink_types); c++) {
			const struct nvml_val *v = &e->g->nvlink[l].errors[nvlink_types[c].counter];
			if (ok(v))
				sample(e, (double)v->v, "link", link, "type", nvlink_types[c].type);
		}
	}
}

static bool xid_watched(const struct gpu_telemetry *t, const struct nvml_gpu *g)
{
	for (size_t i = 0; i < t->nr_watched && g->bdf[0]; i++)
		if (!strcmp(t->watched[i], g->bdf))
			return true;
	return false;
}

static void xid_samples(struct emit *e)
{
	char xid[16];
	if (!xid_watched(e->t, e->g))
		return;
	for (size_t i = 0; i < e->t->nr_xids; i++) {
		const struct telemetry_xid *x = &e->t->xids[i];
		if (strcmp(x->bdf, e->g->bdf))
			continue;
		snprintf(xid, sizeof(xid), "%u", x->xid);
		sample(e, (double)x->count, "xid", xid, NULL, NULL);
	}
}

/* Whether each field was read, by the name vigil_gpu_telemetry_field_ok says. */
static void field_ok_samples(struct emit *e)
{
	const struct nvml_gpu *g = e->g;
	bool h = g->handle_rc == 0;
	const struct {
		const char *field;
		bool ok;
	} f[] = {
		{ "temperature", h && ok(&g->temperature) },
		{ "memory_temperature", h && ok(&g->memory_temperature) },
		{ "power", h && ok(&g->power_usage) },
		{ "power_limit", h && ok(&g->power_limit) },
		{ "sm_clock", h && ok(&g->sm_clock) },
		{ "memory_clock", h && ok(&g->mem_clock) },
		{ "utilization", h && ok(&g->utilization_gpu) },
		{ "memory_used", h && ok(&g->memory_used) },
		{ "throttle", h && ok(&g->clock_events) },
		{ "ecc_errors",
		  h && ok(&g->ecc_aggregate_corrected) && ok(&g->ecc_aggregate_uncorrected) },
		{ "remapped_rows", h && ok(&g->remap_correctable) },
		{ "nvlink_errors", h && nvlink_any(g) },
		{ "pcie_replays", h && ok(&g->pcie_replay) },
		{ "xid_errors", h && xid_watched(e->t, g) },
	};
	for (size_t i = 0; i < ARRAY_SIZE(f); i++)
		sample(e, f[i].ok, "field", f[i].field, NULL, NULL);
}

static void gpu_family(struct emit *e, int which)
{
	const struct nvml_gpu *g = e->g;
	char dv[NVML_STR_MAX];
	switch (which) {
	case 0: {
		strlcpy_v(dv, str_of(&e->t->driver_version), sizeof(dv));
		sample(e, 1, "serial", str_of(&g->serial), "driver_version", dv);
		return;
	}
	case 1: field_ok_samples(e); return;
	case 2: sample(e, (double)(int64_t)e->t->at, NULL, NULL, NULL, NULL); return;
	}
	if (g->handle_rc)
		return; /* nothing of it was read */
	switch (which) {
	case 3: one(e, &g->temperature, 1, 1); break;
	case 4: one(e, &g->memory_temperature, 1, 1); break;
	case 5: one(e, &g->power_usage, 1, 1000); break;
	case 6: one(e, &g->power_limit, 1, 1000); break;
	case 7: one(e, &g->sm_clock, 1e6, 1); break;
	case 8: one(e, &g->mem_clock, 1e6, 1); break;
	case 9: one(e, &g->utilization_gpu, 1, 100); break;
	case 10: one(e, &g->memory_used, 1, 1); break;
	case 11:
		if (ok(&g->clock_events))
			for (size_t i = 0; i < ARRAY_SIZE(throttle_reasons); i++)
				sample(e, (g->clock_events.v & throttle_reasons[i].bit) != 0,
				       "reason", throttle_reasons[i].reason, NULL, NULL);
		break;
	case 12:
		if (ok(&g->ecc_aggregate_corrected))
			sample(e, (double)g->ecc_aggregate_corrected.v, "type", "corrected", NULL,
			       NULL);
		if (ok(&g->ecc_aggregate_uncorrected))
			sample(e, (double)g->ecc_aggregate_uncorrected.v, "type", "uncorrected",
			       NULL, NULL);
		break;
	case 13:
		if (ok(&g->remap_correctable))
			sample(e, (double)g->remap_correctable.v, "type", "correctable", NULL, NULL);
		if (ok(&g->remap_uncorrectable))
			sample(e, (double)g->remap_uncorrectable.v, "type", "uncorrectable", NULL,
			       NULL);
		break;
	case 14: one(e, &g->remap_pending, 1, 1); break;
	case 15: one(e, &g->remap_failure, 1, 1); break;
	case 16: nvlink_samples(e); break;
	case 17: one(e, &g->pcie_replay, 1, 1); break;
	case 18: xid_samples(e); break;
	}
}

static const struct {
	const char *name, *type, *help;
} families[] = {
	{ "vigil_gpu_info", "gauge", "1 for each GPU NVML reports, with its identity." },
	{ "vigil_gpu_telemetry_field_ok", "gauge",
	  "1 when NVML gave the field for this GPU, 0 when it did not (its series is left out)." },
	{ "vigil_gpu_telemetry_timestamp_seconds", "gauge",
	  "When the gpu worker read these values (unix time)." },
	{ "vigil_gpu_temperature_celsius", "gauge", "GPU core temperature." },
	{ "vigil_gpu_memory_temperature_celsius", "gauge", "GPU memory (HBM) temperature." },
	{ "vigil_gpu_power_watts", "gauge", "Power draw." },
	{ "vigil_gpu_power_limit_watts", "gauge", "Enforced power limit." },
	{ "vigil_gpu_sm_clock_hertz", "gauge", "Current SM clock." },
	{ "vigil_gpu_memory_clock_hertz", "gauge", "Current memory clock." },
	{ "vigil_gpu_utilization_ratio", "gauge",
	  "Fraction of the last sample period a kernel ran on the GPU (0..1)." },
	{ "vigil_gpu_memory_used_bytes", "gauge", "Framebuffer memory used." },
	{ "vigil_gpu_throttle_active", "gauge",
	  "1 while this clock event reason (throttle reason) holds the clocks down." },
	{ "vigil_gpu_ecc_errors_total", "counter",
	  "Aggregate ECC errors over the GPU's recorded life, by type." },
	{ "vigil_gpu_remapped_rows_total", "counter", "Memory rows remapped, by type." },
	{ "vigil_gpu_remap_pending", "gauge", "1 while a row remap waits for a GPU reset." },
	{ "vigil_gpu_remap_failed", "gauge", "1 if a row remap failed." },
	{ "vigil_gpu_nvlink_errors_total", "counter",
	  "NVLink error counters by link and type (read every gpu.nvlink-counter-interval)." },
	{ "vigil_gpu_pcie_replays_total", "counter", "PCIe replay counter." },
	{ "vigil_gpu_xid_errors_total", "counter",
	  "Xids NVML reported to the agent in this boot, by code." },
};

void telemetry_prom(const struct gpu_telemetry *t, struct strbuf *out)
{
	struct emit e;
	if (!t->have)
		return;
	memset(&e, 0, sizeof(e));
	e.out = out;
	e.t = t;
	for (size_t f = 0; f < ARRAY_SIZE(families); f++) {
		family(&e, families[f].name, families[f].type, families[f].help);
		for (size_t i = 0; i < t->nr; i++) {
			gpu_labels(&e, &t->gpus[i]);
			gpu_family(&e, (int)f);
		}
	}
}
