/*
 * procs.c: other processes computing on a GPU while an active test ran (see gpu_stress.h). The
 * helpers list them through NVML at the start, every second and at the end; a test whose GPU
 * was shared measured the other process as much as the GPU, so vigil names it and does not
 * judge that GPU's figures (unknown: "could not tell", never healthy).
 */
#include "gpu_stress.h"
#include "jsonget.h"
#include "../lib/fileio.h"

void gs_procs_release(struct gs_procs *p)
{
	for (size_t i = 0; i < p->nr; i++)
		free(p->v[i].name);
	free(p->v);
	free(p->watch);
	memset(p, 0, sizeof(*p));
}

static struct gs_proc *find(struct gs_procs *p, int gpu, unsigned pid)
{
	for (size_t i = 0; i < p->nr; i++)
		if (p->v[i].gpu == gpu && p->v[i].pid == pid)
			return &p->v[i];
	return NULL;
}

void gs_procs_add_pid(struct gs_procs *p, int gpu, unsigned pid)
{
	if (find(p, gpu, pid) || p->nr >= 256)
		return;
	ALLOC_GROW(p->v, p->nr + 1, p->alloc);
	memset(&p->v[p->nr], 0, sizeof(p->v[0]));
	p->v[p->nr].gpu = gpu;
	p->v[p->nr].pid = pid;
	p->v[p->nr].during = true;
	p->nr++;
}

void gs_procs_parse(struct gs_procs *p, const struct json_value *arr, int gpu,
		    bool at_start_default, bool at_end_default)
{
	if (!arr || arr->type != JSON_ARRAY)
		return;
	/* bounded: a babbling helper must not grow this without end */
	for (size_t i = 0; i < arr->nr && p->nr < 256; i++) {
		const struct json_value *o = arr->items[i];
		double d;
		if (o->type != JSON_OBJECT || !json_get_number(o, "pid", &d) || d < 0 || d > 4e9)
			continue;
		int g = gpu;
		if (g < 0) {
			double gd;
			if (!json_get_number(o, "gpu", &gd) || gd < 0 || gd > 1e6)
				continue;
			g = (int)gd;
		}
		struct gs_proc *x = find(p, g, (unsigned)d);
		if (!x) {
			ALLOC_GROW(p->v, p->nr + 1, p->alloc);
			x = &p->v[p->nr++];
			memset(x, 0, sizeof(*x));
			x->gpu = g;
			x->pid = (unsigned)d;
		}
		if (!x->name)
			x->name = jg_strdup(o, "name");
		if (x->name && !*x->name) {
			free(x->name);
			x->name = NULL;
		}
		uint64_t u = jg_u64(o, "used_bytes");
		if (u > x->used_bytes)
			x->used_bytes = u;
		x->at_start |= jg_bool(o, "at_start", at_start_default);
		x->during |= jg_bool(o, "during", false);
		x->at_end |= jg_bool(o, "at_end", at_end_default);
	}
}

void gs_procs_fill_names(struct gs_procs *p)
{
	struct strbuf path = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
	for (size_t i = 0; i < p->nr; i++) {
		if (p->v[i].name)
			continue;
		strbuf_reset(&path);
		strbuf_reset(&text);
		strbuf_addf(&path, "/proc/%u/comm", p->v[i].pid);
		if (read_file_bounded(path.buf, &text, 256, &err) < 0)
			continue; /* gone, or in another pid namespace: the pid alone is named */
		strbuf_rtrim(&text);
		if (text.len)
			p->v[i].name = xstrdup(text.buf);
	}
	strbuf_release(&path);
	strbuf_release(&text);
	strbuf_release(&err);
}

size_t gs_procs_on(const struct gs_procs *p, int gpu, struct strbuf *out)
{
	size_t n = 0;
	for (size_t i = 0; i < p->nr; i++) {
		const struct gs_proc *x = &p->v[i];
		if (x->gpu != gpu)
			continue;
		if (n++ >= 4) {
			continue;
		}
		if (n > 1)
			strbuf_addstr(out, ", ");
		strbuf_addf(out, "pid %u", x->pid);
		if (x->name) {
			strbuf_addstr(out, " (");
			strbuf_add_excerpt(out, x->name, 32);
			strbuf_addch(out, ')');
		}
		const char *ph[3];
		size_t k = 0;
		if (x->at_start)
			ph[k++] = "at the start";
		if (x->during)
			ph[k++] = "during";
		if (x->at_end)
			ph[k++] = "at the end";
		for (size_t j = 0; j < k; j++)
			strbuf_addf(out, "%s%s", j == 0 ? " " : j == k - 1 ? " and " : ", ", ph[j]);
	}
	if (n > 4)
		strbuf_addf(out, " and %zu more", n - 4);
	return n;
}

void gs_procs_evaluate(const struct gs_procs *p, const char *what, struct check_result *res)
{
	struct strbuf list = STRBUF_INIT, pids = STRBUF_INIT;
	for (size_t i = 0; i < p->nr; i++) {
		int gpu = p->v[i].gpu;
		bool first = true;
		for (size_t j = 0; j < i; j++)
			first &= p->v[j].gpu != gpu;
		if (!first)
			continue;
		strbuf_reset(&list);
		strbuf_reset(&pids);
		size_t n = gs_procs_on(p, gpu, &list);
		for (size_t j = 0; j < p->nr; j++)
			if (p->v[j].gpu == gpu)
				strbuf_addf(&pids, "%s%u", pids.len ? "," : "", p->v[j].pid);
		char dev[32];
		snprintf(dev, sizeof(dev), "GPU %d", gpu);
		struct finding *f = result_add(
			res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "foreign_process", dev,
			"%s was shared during the %s: %s; its figures measure the other process "
			"as much as the GPU and are not judged: stop %s and test again",
			dev, what, list.buf, n == 1 ? "it" : "them");
		finding_detail(f, "pids", "%s", pids.buf);
		finding_detail_num(f, "processes", (double)n);
	}
	strbuf_release(&list);
	strbuf_release(&pids);
}

void gs_procs_report(const struct gs_procs *p, const char *check, const char *what,
		     struct report *rep)
{
	if (!p->nr)
		return;
	struct check_result *res = NULL;
	for (size_t i = rep->nr; i-- > 0 && !res;)
		if (!strcmp(rep->results[i].name, check))
			res = &rep->results[i];
	if (!res)
		res = report_add(rep, check);
	gs_procs_evaluate(p, what, res);
	result_finish(res);
}
