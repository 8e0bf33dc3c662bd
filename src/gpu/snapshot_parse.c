/*
 * snapshot_parse.c: NVML readings from snapshot text (see snapshot.h, docs/nvml-snapshot.md), the
 * format the agent's gpu worker answers GET /gpu-reading in. Strict where the fake library is
 * strict (unknown keys and bad numbers refuse the whole text): a reading that cannot be
 * understood must not be judged as a healthy one.
 */
#include "snapshot.h"
#include "../lib/util.h"

#include <ctype.h>
#include <errno.h>

#define LINE_MAX_BYTES 4096
#define SNAPSHOT_MAX_GPUS 256 /* as nvml.c: more than any host has */

/* "123", "0x1f" or "!CODE" into v. False on junk. */
static bool parse_val(const char *s, struct nvml_val *v)
{
	if (s[0] == '!') {
		char *end;
		errno = 0;
		long code = strtol(s + 1, &end, 10);
		if (end == s + 1 || *end || errno || code < -1 || code > 100000)
			return false;
		v->rc = (int)code;
		v->v = 0;
		return true;
	}
	v->rc = 0;
	return s[0] != '-' && parse_u64(s, &v->v);
}

static bool parse_str(const char *s, struct nvml_str *v)
{
	struct nvml_val code;
	if (s[0] == '!') {
		if (!parse_val(s, &code))
			return false;
		v->rc = code.rc;
		v->s[0] = '\0';
		return true;
	}
	if (strlen(s) >= sizeof(v->s))
		return false;
	v->rc = 0;
	strlcpy_v(v->s, s, sizeof(v->s));
	return true;
}

/* "nvlink 3 active=1 replay=0 ..." */
static bool parse_nvlink(char *rest, struct nvml_gpu *g)
{
	char *save = NULL, *w = strtok_r(rest, " \t", &save);
	uint64_t l;
	if (!w || !parse_u64(w, &l) || l >= NVML_NVLINK_MAX_LINKS)
		return false;
	struct nvml_link *k = &g->nvlink[l];
	while ((w = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(w, '=');
		bool known = false;
		if (!eq)
			return false;
		*eq = '\0';
		if (!strcmp(w, "active")) {
			known = parse_val(eq + 1, &k->active);
		} else {
			for (size_t c = 0; c < NVML_NVLINK_ERROR_COUNT && !known; c++)
				if (!strcmp(w, nvml_nvlink_counter_keys[c]))
					known = parse_val(eq + 1, &k->errors[c]);
		}
		if (!known)
			return false;
	}
	return true;
}

static bool gpu_key(struct nvml_gpu *g, const char *key, char *val)
{
	if (!strcmp(key, "handle")) {
		struct nvml_val v;
		if (!parse_val(val, &v) || !v.rc)
			return false;
		g->handle_rc = v.rc;
		return true;
	}
	if (!strcmp(key, "nvlink"))
		return parse_nvlink(val, g);
#define X(field, k)                                                                            \
	if (!strcmp(key, k))                                                                   \
		return parse_str(val, &g->field);
	NVML_GPU_STRINGS(X)
#undef X
#define X(field, k, hex)                                                                       \
	if (!strcmp(key, k))                                                                   \
		return parse_val(val, &g->field);
	NVML_GPU_VALUES(X)
#undef X
	return false;
}

static bool host_key(struct nvml_host *h, const char *key, const char *val)
{
	if (!strcmp(key, "init")) {
		struct nvml_val v;
		if (!parse_val(val, &v) || !v.rc)
			return false;
		h->avail = NVML_INIT_FAILED;
		h->init_rc = v.rc;
		return true;
	}
	if (!strcmp(key, "driver_version"))
		return parse_str(val, &h->driver_version);
	if (!strcmp(key, "nvml_version"))
		return parse_str(val, &h->nvml_version);
	if (!strcmp(key, "cuda_driver_version"))
		return parse_val(val, &h->cuda_driver_version);
	if (!strcmp(key, "device_count"))
		return parse_val(val, &h->count);
	return false;
}

/* What the reader derives from the values (nvml.c does the same after reading a GPU). */
static void finish_gpu(struct nvml_gpu *g)
{
	bool lost = g->handle_rc == NVML_ERROR_GPU_IS_LOST;
#define X(field, key) lost |= g->field.rc == NVML_ERROR_GPU_IS_LOST;
	NVML_GPU_STRINGS(X)
#undef X
#define X(field, key, hex) lost |= g->field.rc == NVML_ERROR_GPU_IS_LOST;
	NVML_GPU_VALUES(X)
#undef X
	g->lost = lost;
	if (!g->pci_bus_id.rc && !nvml_bus_id_to_bdf(g->pci_bus_id.s, g->bdf, sizeof(g->bdf)))
		g->bdf[0] = '\0';
}

int nvml_snapshot_parse(const char *text, size_t len, struct nvml_host *h, struct strbuf *err)
{
	struct strbuf line = STRBUF_INIT;
	struct nvml_gpu *cur = NULL;
	bool header = false;
	unsigned lineno = 0;
	size_t i = 0;
	int ret = -1;
	nvml_host_release(h);
	h->avail = NVML_AVAILABLE;
	h->count.rc = NVML_ERROR_NOT_SUPPORTED;
	h->driver_version.rc = h->nvml_version.rc = NVML_ERROR_NOT_SUPPORTED;
	h->cuda_driver_version.rc = NVML_ERROR_NOT_SUPPORTED;
	if (memchr(text, '\0', len)) {
		error_set(err, "the snapshot holds NUL bytes");
		goto out;
	}
	while (i < len) {
		size_t end = i;
		while (end < len && text[end] != '\n')
			end++;
		lineno++;
		if (end - i > LINE_MAX_BYTES) {
			error_set(err, "snapshot line %u: longer than %d bytes", lineno, LINE_MAX_BYTES);
			goto out;
		}
		strbuf_reset(&line);
		strbuf_add(&line, text + i, end - i);
		i = end + 1;
		strbuf_trim(&line);
		if (!line.len || line.buf[0] == '#')
			continue;
		if (!header) {
			if (strcmp(line.buf, NVML_SNAPSHOT_HEADER)) {
				error_set(err, "not an NVML snapshot: want '%s' first", NVML_SNAPSHOT_HEADER);
				goto out;
			}
			header = true;
			continue;
		}
		unsigned idx;
		char close;
		if (line.buf[0] == '[') {
			if (sscanf(line.buf, "[gpu %u%c", &idx, &close) != 2 || close != ']' ||
			    idx >= SNAPSHOT_MAX_GPUS || h->nr >= SNAPSHOT_MAX_GPUS) {
				error_set(err, "snapshot line %u: bad section", lineno);
				goto out;
			}
			for (size_t k = 0; k < h->nr; k++)
				if (h->gpus[k].index == idx) {
					error_set(err, "snapshot line %u: [gpu %u] twice", lineno, idx);
					goto out;
				}
			if (cur)
				finish_gpu(cur);
			cur = nvml_host_add_gpu(h, idx);
			continue;
		}
		size_t kl = strcspn(line.buf, " \t");
		char *val = line.buf + kl;
		if (*val) {
			*val++ = '\0';
			while (isspace((unsigned char)*val))
				val++;
		}
		if (cur ? !gpu_key(cur, line.buf, val) : !host_key(h, line.buf, val)) {
			struct strbuf k = STRBUF_INIT;
			strbuf_add_excerpt(&k, line.buf, 40);
			error_set(err, "snapshot line %u: bad or unknown '%s'", lineno, k.buf);
			strbuf_release(&k);
			goto out;
		}
	}
	if (!header) {
		error_set(err, "empty NVML snapshot");
		goto out;
	}
	if (cur)
		finish_gpu(cur);
	ret = 0;
out:
	if (ret < 0)
		nvml_host_release(h);
	strbuf_release(&line);
	return ret;
}
