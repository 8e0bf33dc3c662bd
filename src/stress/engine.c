/* engine.c: run the active tests' helpers and the 'check --deep' sequence (see engine.h). */
#include "engine.h"
#include "../lib/fileio.h"

void engine_end(struct gs_end *e, const struct helper_out *ho, struct strbuf *desc)
{
	memset(e, 0, sizeof(*e));
	e->ran = true;
	e->timed_out = ho->c.timed_out;
	e->signaled = ho->c.signaled;
	e->exit_code = ho->c.exit_code;
	e->duration_ms = ho->c.duration_ms;
	strbuf_reset(desc);
	helper_describe_end(&ho->c, desc);
	e->describe = desc->buf;
}

int engine_run_helper(const char *name, const char *const *args, unsigned timeout_ms,
		      int progress_fd, struct helper_out *ho, struct gs_end *end,
		      struct strbuf *desc, struct strbuf *why)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	int ret = -1;
	memset(end, 0, sizeof(*end));
	if (helper_find(name, &path, &err) < 0) {
		strbuf_addf(why, "vigil's CUDA helper is not installed (%s); build it with 'make' "
			    "on a host with nvcc",
			    err.buf);
		end->why_not = why->buf;
		goto out;
	}
	if (helper_run(path.buf, args, timeout_ms, progress_fd, ho, &err) < 0) {
		strbuf_addstr(why, err.buf);
		end->why_not = why->buf;
		goto out;
	}
	engine_end(end, ho, desc);
	ret = 0;
out:
	strbuf_release(&path);
	strbuf_release(&err);
	return ret;
}

void engine_stress(const char *const *args, unsigned timeout_ms, int progress_fd,
		   struct gs_run *run, struct gs_end *end, struct strbuf *desc, struct strbuf *why)
{
	struct strbuf err = STRBUF_INIT;
	struct helper_out ho;
	helper_out_init(&ho);
	if (engine_run_helper("vigil-gpu", args, timeout_ms, progress_fd, &ho, end, desc, why) ==
		    0 &&
	    gs_run_parse(run, (const struct json_value *const *)ho.lines, ho.nr, &err) < 0) {
		/* a malformed line: what came before still counts, the run is suspect */
		free(run->error);
		run->error = xstrdup(err.buf);
	}
	gs_procs_fill_names(&run->procs);
	helper_out_release(&ho);
	strbuf_release(&err);
}

void engine_determinism(const char *const *args, unsigned timeout_ms, int progress_fd,
			struct det_run *run, struct gs_end *end, struct strbuf *desc,
			struct strbuf *why)
{
	struct strbuf err = STRBUF_INIT;
	struct helper_out ho;
	helper_out_init(&ho);
	if (engine_run_helper("vigil-gpu", args, timeout_ms, progress_fd, &ho, end, desc, why) ==
		    0 &&
	    det_run_parse(run, (const struct json_value *const *)ho.lines, ho.nr, &err) < 0) {
		/* a malformed line: what came before still counts, the run is suspect */
		free(run->error);
		run->error = xstrdup(err.buf);
		if (!run->error_code)
			run->error_code = xstrdup("bad_output");
	}
	helper_out_release(&ho);
	strbuf_release(&err);
}

void engine_det_refs(const char *path, struct det_refs *refs)
{
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
	if (path)
		strbuf_addstr(&p, path);
	else if (helper_find_file(DET_REF_FILE, &p, &err) < 0) {
		refs->why_none = strbuf_detach(&err, NULL);
		goto out;
	}
	refs->source = xstrdup(p.buf);
	/* a table of a few lines: 1 MiB is far more than it will ever hold */
	if (read_file_bounded(p.buf, &text, 1u << 20, &err) < 0 ||
	    det_refs_parse(refs, text.buf, text.len, &err) < 0) {
		struct strbuf w = STRBUF_INIT;
		strbuf_addf(&w, "%s: %s", p.buf, err.buf);
		det_refs_release(refs);
		refs->why_none = strbuf_detach(&w, NULL);
	}
out:
	strbuf_release(&p);
	strbuf_release(&text);
	strbuf_release(&err);
}

void engine_pairs(unsigned mib, unsigned reps, const char *gpus, int progress_fd,
		  struct np_run *run, struct gs_end *end, struct strbuf *desc, struct strbuf *why)
{
	struct strbuf err = STRBUF_INIT;
	struct helper_out ho;
	char b[32], r[16];
	helper_out_init(&ho);
	snprintf(b, sizeof(b), "%uM", mib);
	snprintf(r, sizeof(r), "%u", reps);
	const char *args[] = { "pairs", "--bytes", b, "--reps", r, gpus ? "--gpus" : NULL, gpus,
			       NULL };
	if (engine_run_helper("vigil-gpu", args, 600000, progress_fd, &ho, end, desc, why) == 0 &&
	    np_run_parse(run, (const struct json_value *const *)ho.lines, ho.nr, &err) < 0 &&
	    !run->error) {
		run->error_code = xstrdup("bad_output");
		run->error = xstrdup(err.buf);
	}
	gs_procs_fill_names(&run->procs);
	helper_out_release(&ho);
	strbuf_release(&err);
}

/* 'vigil-gpu procs': the other compute processes on the GPUs now, into procs (marked at_start
 * or at_end). Silent when it cannot tell: procs->watch then says why. */
static void procs_now(bool at_end, struct gs_procs *procs)
{
	struct strbuf desc = STRBUF_INIT, why = STRBUF_INIT;
	struct helper_out ho;
	struct gs_end end;
	helper_out_init(&ho);
	const char *args[] = { "procs", NULL };
	const char *watch = NULL;
	if (engine_run_helper("vigil-gpu", args, 60000, -1, &ho, &end, &desc, &why) == 0) {
		const struct json_value *s = helper_first(&ho, "start");
		if (s) {
			watch = json_get_string(s, "processes_watch");
			struct gs_procs tmp;
			memset(&tmp, 0, sizeof(tmp));
			gs_procs_parse(&tmp, json_get(s, "other_processes"), -1, false, false);
			for (size_t i = 0; i < tmp.nr; i++) {
				tmp.v[i].at_start = !at_end;
				tmp.v[i].at_end = at_end;
			}
			/* merge: the same pid before and after is one process seen twice */
			for (size_t i = 0; i < tmp.nr; i++) {
				struct gs_proc *x = NULL;
				for (size_t j = 0; j < procs->nr; j++)
					if (procs->v[j].gpu == tmp.v[i].gpu &&
					    procs->v[j].pid == tmp.v[i].pid)
						x = &procs->v[j];
				if (x) {
					x->at_end |= tmp.v[i].at_end;
					continue;
				}
				ALLOC_GROW(procs->v, procs->nr + 1, procs->alloc);
				procs->v[procs->nr++] = tmp.v[i];
				tmp.v[i].name = NULL; /* moved */
			}
			gs_procs_release(&tmp);
		}
	}
	if (!procs->watch || !strcmp(procs->watch, "ok")) {
		free(procs->watch);
		procs->watch = xstrdup(watch ? watch
				       : end.why_not ? end.why_not
						     : "vigil-gpu procs said nothing");
	}
	helper_out_release(&ho);
	strbuf_release(&desc);
	strbuf_release(&why);
}

void engine_nccl(const char *const *args, unsigned timeout_ms, int progress_fd,
		 struct nc_run *run, struct gs_procs *procs, struct gs_end *end,
		 struct strbuf *desc, struct strbuf *why)
{
	struct strbuf err = STRBUF_INIT;
	struct helper_out ho;
	helper_out_init(&ho);
	procs_now(false, procs);
	if (engine_run_helper("vigil-nccl", args, timeout_ms, progress_fd, &ho, end, desc, why) ==
		    0 &&
	    nc_run_parse(run, (const struct json_value *const *)ho.lines, ho.nr, &err) < 0) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "bad_output: %s", err.buf);
		ALLOC_GROW(run->errors, run->nr_errors + 1, run->alloc_errors);
		run->errors[run->nr_errors++] = strbuf_detach(&sb, NULL);
	}
	if (end->ran)
		procs_now(true, procs);
	gs_procs_fill_names(procs);
	helper_out_release(&ho);
	strbuf_release(&err);
}

const char *engine_model(const struct gs_run *r)
{
	for (size_t i = 0; i < r->nr; i++)
		if (r->gpus[i].name)
			return r->gpus[i].name;
	return NULL;
}

/* The passive gpu check in rep found no GPU and no driver (codes of src/checks/gpu.c). */
static bool no_gpu_here(const struct report *rep)
{
	for (size_t i = 0; i < rep->nr; i++) {
		const struct check_result *c = &rep->results[i];
		if (strcmp(c->name, "gpu") || !c->nr)
			continue;
		for (size_t j = 0; j < c->nr; j++) {
			const struct finding *f = &c->findings[j];
			if (f->status != STATUS_SKIPPED ||
			    (strcmp(f->code, "nvml") && strcmp(f->code, "count")))
				return false;
		}
		return true;
	}
	return false;
}

void engine_deep(const struct config *cfg, double seconds, int progress_fd, struct report *rep)
{
	struct strbuf desc = STRBUF_INIT, why = STRBUF_INIT, err = STRBUF_INIT;
	struct stress_limits lim;
	struct gs_run run;
	struct gs_end end;
	char dur[32];
	if (no_gpu_here(rep)) {
		/* what 'vigil check' says, and plainly what was not done */
		struct check_result *r = report_add(rep, "stress");
		result_add(r, STATUS_SKIPPED, ACTION_NONE, "no_gpu", "",
			   "no NVIDIA GPU on this host: the active tests (stress gpu, net pairs, "
			   "net nccl) were not run");
		result_finish(r);
		return;
	}
	gs_run_init(&run);
	snprintf(dur, sizeof(dur), "%g", seconds);
	const char *args[] = { "stress", "--duration", dur, "--reps", "10", NULL };
	engine_stress(args, (unsigned)((seconds * 1.25 + 120) * 1000), progress_fd, &run, &end,
		      &desc, &why);
	if (stress_limits_get(&lim, engine_model(&run), cfg, &err) < 0) {
		/* check has validated the configuration already; fall back to the table */
		stress_limits_get(&lim, engine_model(&run), NULL, NULL);
	}
	gpu_stress_evaluate(&run, &end, &lim, rep);
	size_t ngpus = run.nr;
	gs_run_release(&run);
	if (ngpus >= 2) {
		struct np_run pr;
		np_run_init(&pr);
		engine_pairs(256, 5, NULL, progress_fd, &pr, &end, &desc, &why);
		pairs_evaluate(&pr, &end, &lim, rep);
		np_run_release(&pr);
		struct nc_run nr;
		struct gs_procs procs;
		nc_run_init(&nr);
		memset(&procs, 0, sizeof(procs));
		const char *nargs[] = { "--op", "all_reduce", "--sizes", "64M:1G", "--timeout", "30",
					NULL };
		engine_nccl(nargs, 180000, progress_fd, &nr, &procs, &end, &desc, &why);
		nccl_evaluate(&nr, &end, &lim, false, rep);
		gs_procs_report(&procs, "nccl", "NCCL test", rep);
		nc_run_release(&nr);
		gs_procs_release(&procs);
	}
	strbuf_release(&desc);
	strbuf_release(&why);
	strbuf_release(&err);
}
