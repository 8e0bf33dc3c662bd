/* determinism.c: parse 'vigil-gpu determinism' lines and the reference file (determinism.h). */
#include "determinism.h"
#include "jsonget.h"

#include <errno.h>

void det_run_init(struct det_run *r)
{
	memset(r, 0, sizeof(*r));
}

static void gpu_release(struct det_gpu *g)
{
	free(g->name);
	free(g->uuid);
	free(g->pci);
	free(g->driver);
	free(g->workload);
	free(g->algo);
	free(g->error);
}

void det_run_release(struct det_run *r)
{
	for (size_t i = 0; i < r->nr; i++)
		gpu_release(&r->gpus[i]);
	free(r->gpus);
	free(r->gpus_expected);
	free(r->workload);
	free(r->driver);
	free(r->error_code);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

/* 16 hex digits (the helper prints %016llx); anything else is not a digest. */
static bool parse_digest(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!s || strlen(s) != 16)
		return false;
	for (const char *p = s; *p; p++) {
		int d = *p >= '0' && *p <= '9'   ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
						 : -1;
		if (d < 0)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return true;
}

/* The GPU of index idx, added (with what the line says about it) when new; NULL past the cap. */
static struct det_gpu *gpu_of(struct det_run *r, int idx, const struct json_value *v)
{
	struct det_gpu *g = NULL;
	for (size_t i = 0; i < r->nr; i++)
		if (r->gpus[i].index == idx)
			g = &r->gpus[i];
	if (!g) {
		if (r->nr >= DET_MAX_GPUS)
			return NULL;
		ALLOC_GROW(r->gpus, r->nr + 1, r->alloc);
		g = &r->gpus[r->nr++];
		memset(g, 0, sizeof(*g));
		g->index = idx;
	}
	/* identity: the first line that says it wins */
	if (!g->name)
		g->name = jg_strdup(v, "name");
	if (!g->uuid)
		g->uuid = jg_strdup(v, "uuid");
	if (!g->driver)
		g->driver = jg_strdup(v, "driver");
	if (!g->workload)
		g->workload = jg_strdup(v, "workload");
	if (!g->cublaslt)
		g->cublaslt = jg_u64(v, "cublaslt");
	return g;
}

static int parse_det(struct det_run *r, const struct json_value *v, struct strbuf *err)
{
	double gi = jg_num(v, "gpu", -1), rep = jg_num(v, "repeat", -1);
	uint64_t d;
	if (gi < 0 || gi > 1e6 || gi != (int)gi) {
		error_set(err, "a 'det' line without a GPU index");
		return -1;
	}
	if (rep < 1 || rep > 4e9 || rep != (double)(unsigned)rep) {
		error_set(err, "GPU %d: a 'det' line without a repeat number", (int)gi);
		return -1;
	}
	if (!parse_digest(json_get_string(v, "digest"), &d)) {
		error_set(err, "GPU %d repeat %u: the digest is not 16 hex digits", (int)gi,
			  (unsigned)rep);
		return -1;
	}
	struct det_gpu *g = gpu_of(r, (int)gi, v);
	if (!g)
		return 0;
	g->repeats++;
	g->last_repeat = (unsigned)rep;
	if (json_get(v, "injected"))
		g->injected_repeat = (unsigned)rep;
	for (size_t k = 0; k < g->nr_d; k++)
		if (g->d[k].digest == d) {
			g->d[k].count++;
			g->d[k].last_repeat = (unsigned)rep;
			return 0;
		}
	if (g->nr_d == DET_MAX_DIGESTS) {
		g->others++;
		return 0;
	}
	g->d[g->nr_d++] = (struct det_digest){ d, 1, (unsigned)rep, (unsigned)rep };
	return 0;
}

static void parse_done(struct det_run *r, const struct json_value *v)
{
	double gi = jg_num(v, "gpu", -1);
	if (gi < 0 || gi > 1e6 || gi != (int)gi)
		return;
	struct det_gpu *g = gpu_of(r, (int)gi, v);
	if (!g)
		return;
	g->done = true;
	if (!g->pci)
		g->pci = jg_strdup(v, "pci");
	if (!g->algo)
		g->algo = jg_strdup(v, "algo");
	g->sm_count = (int)jg_num(v, "sm_count", 0);
	g->seconds = jg_num(v, "seconds", 0);
	g->setup_s = jg_num(v, "setup_s", 0);
	g->work_ms = jg_num(v, "work_ms", 0);
	g->digest_ms = jg_num(v, "digest_ms", 0);
	if (!g->error)
		g->error = jg_first_string(v, "errors");
}

int det_run_parse(struct det_run *r, const struct json_value *const *lines, size_t nr,
		  struct strbuf *err)
{
	for (size_t i = 0; i < nr; i++) {
		const struct json_value *v = lines[i];
		const char *type = json_get_string(v, "type");
		if (!type)
			continue;
		if (!strcmp(type, "start") && !r->started) {
			r->started = true;
			r->workload = jg_strdup(v, "workload");
			r->driver = jg_strdup(v, "driver");
			r->cuda_driver = (int)jg_num(v, "cuda_driver", 0);
			r->cuda_runtime = (int)jg_num(v, "cuda_runtime", 0);
			r->cublaslt = jg_u64(v, "cublaslt");
			r->nr_expected = jg_int_array(v, "gpus", &r->gpus_expected);
		} else if (!strcmp(type, "det")) {
			if (parse_det(r, v, err) < 0)
				return -1;
		} else if (!strcmp(type, "det_done")) {
			parse_done(r, v);
		} else if (!strcmp(type, "end")) {
			r->ended = true;
		} else if (!strcmp(type, "error") && !r->error) {
			r->error_code = jg_strdup(v, "code");
			r->error = jg_strdup(v, "message");
		}
	}
	return 0;
}

const struct det_digest *det_majority(const struct det_gpu *g)
{
	for (size_t k = 0; k < g->nr_d; k++)
		if (2 * (uint64_t)g->d[k].count > g->repeats)
			return &g->d[k];
	return NULL;
}

/* ---- references ---- */

void det_refs_release(struct det_refs *r)
{
	for (size_t i = 0; i < r->nr; i++) {
		free(r->v[i].model);
		free(r->v[i].workload);
		free(r->v[i].algo);
		free(r->v[i].note);
	}
	free(r->v);
	free(r->source);
	free(r->why_none);
	memset(r, 0, sizeof(*r));
}

int det_driver_major(const char *v)
{
	if (!v || *v < '0' || *v > '9')
		return -1;
	long m = strtol(v, NULL, 10);
	return m > 0 && m < 100000 ? (int)m : -1;
}

static bool parse_uint_field(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	if (!*s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || errno || v > max)
		return false;
	*out = v;
	return true;
}

int det_refs_parse(struct det_refs *r, const char *text, size_t len, struct strbuf *err)
{
	const char *p = text, *end = text + len;
	for (unsigned lineno = 1; p < end; lineno++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = xstrndup(p, n);
		p += n + (nl ? 1 : 0);
		if (n && line[n - 1] == '\r')
			line[--n] = 0;
		if (!n || line[0] == '#') {
			free(line);
			continue;
		}
		char *f[8] = { 0 };
		size_t nf = 0;
		for (char *s = line; nf < 8;) {
			f[nf++] = s;
			char *t = strchr(s, '\t');
			if (!t)
				break;
			*t = 0;
			s = t + 1;
		}
		uint64_t sm, drv, lt, dg;
		if (nf < 7 || !*f[0] || !parse_uint_field(f[1], 100000, &sm) ||
		    !parse_uint_field(f[2], 100000, &drv) || !parse_uint_field(f[3], UINT64_MAX, &lt) ||
		    !*f[4] || !*f[5] || !parse_digest(f[6], &dg)) {
			error_set(err, "line %u: want model, SM count, driver major, cuBLASLt version, "
				  "workload, algorithm and a 16-hex-digit digest, separated by tabs",
				  lineno);
			free(line);
			return -1;
		}
		ALLOC_GROW(r->v, r->nr + 1, r->alloc);
		struct det_ref *x = &r->v[r->nr++];
		x->model = xstrdup(f[0]);
		x->sm_count = (int)sm;
		x->driver_major = (int)drv;
		x->cublaslt = lt;
		x->workload = xstrdup(f[4]);
		x->algo = xstrdup(f[5]);
		x->digest = dg;
		x->note = nf > 7 ? xstrdup(f[7]) : NULL;
		free(line);
	}
	return 0;
}

const struct det_ref *det_ref_find(const struct det_refs *r, const struct det_gpu *g)
{
	int major = det_driver_major(g->driver);
	if (!g->name || !g->workload || !g->algo || major < 0)
		return NULL;
	for (size_t i = 0; i < r->nr; i++) {
		const struct det_ref *x = &r->v[i];
		if (!strcmp(x->model, g->name) && x->sm_count == g->sm_count &&
		    x->driver_major == major && x->cublaslt == g->cublaslt &&
		    !strcmp(x->workload, g->workload) && !strcmp(x->algo, g->algo))
			return x;
	}
	return NULL;
}
