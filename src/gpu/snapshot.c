/* snapshot.c: write NVML readings as a snapshot file (see snapshot.h, docs/nvml-snapshot.md). */
#include "snapshot.h"

static void put_str(struct strbuf *out, const char *key, const struct nvml_str *s)
{
	if (s->rc)
		strbuf_addf(out, "%s !%d\n", key, s->rc);
	else if (s->s[0])
		strbuf_addf(out, "%s %s\n", key, s->s);
	else
		strbuf_addf(out, "%s\n", key);
}

static void put_val(struct strbuf *out, const char *key, const struct nvml_val *v, bool hex)
{
	if (v->rc)
		strbuf_addf(out, "%s !%d\n", key, v->rc);
	else if (hex)
		strbuf_addf(out, "%s 0x%llx\n", key, (unsigned long long)v->v);
	else
		strbuf_addf(out, "%s %llu\n", key, (unsigned long long)v->v);
}

static void put_word(struct strbuf *out, const char *key, const struct nvml_val *v)
{
	if (v->rc)
		strbuf_addf(out, " %s=!%d", key, v->rc);
	else
		strbuf_addf(out, " %s=%llu", key, (unsigned long long)v->v);
}

static void put_gpu(struct strbuf *out, const struct nvml_gpu *g)
{
	strbuf_addf(out, "\n[gpu %u]\n", g->index);
	if (g->handle_rc) {
		strbuf_addf(out, "handle !%d\n", g->handle_rc);
		return;
	}
#define X(field, key) put_str(out, key, &g->field);
	NVML_GPU_STRINGS(X)
#undef X
#define X(field, key, hex) put_val(out, key, &g->field, hex);
	NVML_GPU_VALUES(X)
#undef X
	/* absent reads as not supported; a value not read is no fact about the GPU */
#define X(field, key, hex)                                                                     \
	if (g->field.rc != NVML_ERROR_NOT_SUPPORTED && g->field.rc != NVML_NOT_READ)           \
		put_val(out, key, &g->field, hex);
	NVML_GPU_TELEMETRY(X)
#undef X
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		const struct nvml_link *k = &g->nvlink[l];
		/* A link the GPU does not have is left out: absent reads as "not supported". */
		if (k->active.rc == NVML_ERROR_NOT_SUPPORTED)
			continue;
		strbuf_addf(out, "nvlink %u", l);
		put_word(out, "active", &k->active);
		for (size_t c = 0; c < NVML_NVLINK_ERROR_COUNT; c++)
			put_word(out, nvml_nvlink_counter_keys[c], &k->errors[c]);
		strbuf_addch(out, '\n');
	}
}

void nvml_snapshot_format(const struct nvml_host *h, struct strbuf *out)
{
	strbuf_addstr(out, NVML_SNAPSHOT_HEADER "\n");
	if (h->library) {
		const char *slash = strrchr(h->library, '/');
		strbuf_addf(out, "# read through %s\n", slash ? slash + 1 : h->library);
	}
	if (h->avail == NVML_INIT_FAILED) {
		strbuf_addf(out, "init !%d\n", h->init_rc);
		return;
	}
	put_str(out, "driver_version", &h->driver_version);
	put_str(out, "nvml_version", &h->nvml_version);
	put_val(out, "cuda_driver_version", &h->cuda_driver_version, false);
	put_val(out, "device_count", &h->count, false);
	for (size_t i = 0; i < h->nr; i++)
		put_gpu(out, &h->gpus[i]);
}

int nvml_snapshot_write(const struct fsroot *root, struct strbuf *out, struct strbuf *err)
{
	struct nvml_host h;
	int ret = 1;
	nvml_host_init(&h);
	/* a fixture of this host should replay its telemetry too (the agent's /metrics) */
	nvml_want_telemetry(true);
	int r = nvml_read_host(root, &h, err);
	nvml_want_telemetry(false);
	if (r < 0) {
		ret = -1;
		goto out;
	}
	if (h.avail == NVML_NO_LIBRARY) {
		error_set(err, "%s", h.note ? h.note : "no NVML on this host");
		goto out;
	}
	nvml_snapshot_format(&h, out);
	ret = 0;
out:
	nvml_host_release(&h);
	return ret;
}
