/*
 * stress_det.c: 'vigil stress gpu --determinism', the silent-data-corruption test
 * (docs/STRESS.md, "Determinism").
 * stress.c parses the options; src/stress/engine.c runs 'vigil-gpu determinism' and loads the
 * reference digests; src/stress/det_eval.c judges; this file prints the figures.
 */
#include "cmd.h"
#include "active.h"
#include "common.h"
#include "../stress/driver.h"

/* One line per GPU: repeats, digests, the majority digest, the digest's share of the time. */
static void det_figures(const struct det_run *r, const struct det_refs *refs, struct strbuf *out)
{
	if (!r->nr)
		return;
	strbuf_addf(out, "%-4s %-14s %8s %8s  %-16s %-9s %7s\n", "GPU", "model", "repeats",
		    "digests", "digest", "reference", "digest");
	strbuf_addf(out, "%-4s %-14s %8s %8s  %-16s %-9s %7s\n", "", "", "", "distinct",
		    "(most repeats)", "", "time");
	for (size_t i = 0; i < r->nr; i++) {
		const struct det_gpu *g = &r->gpus[i];
		const char *name = g->name ? g->name : "?";
		const struct det_digest *m = det_majority(g);
		const struct det_ref *ref = det_ref_find(refs, g);
		char dg[24] = "-", share[16] = "-";
		if (starts_with(name, "NVIDIA "))
			name += 7;
		if (m)
			snprintf(dg, sizeof(dg), "%016llx", (unsigned long long)m->digest);
		if (g->work_ms + g->digest_ms > 0)
			snprintf(share, sizeof(share), "%.2f%%",
				 100 * g->digest_ms / (g->work_ms + g->digest_ms));
		strbuf_addf(out, "%-4d %-14.14s %8u %8zu  %-16s %-9s %7s\n", g->index, name,
			    g->repeats, g->nr_d + (g->others ? 1 : 0), dg,
			    !ref ? "none" : !m ? "-" : ref->digest == m->digest ? "matches" : "DIFFERS",
			    share);
	}
}

int stress_det_run(const struct stress_det_opts *o, struct host_env *he,
		   const struct active_out *out)
{
	struct strbuf desc = STRBUF_INIT, why = STRBUF_INIT, fig = STRBUF_INIT;
	struct det_run run;
	struct det_refs refs;
	struct gs_end end;
	struct report rep;
	char dur[32], reps[16];
	const char *args[16];
	size_t n = 0;

	det_run_init(&run);
	memset(&refs, 0, sizeof(refs));
	snprintf(dur, sizeof(dur), "%g", o->duration);
	snprintf(reps, sizeof(reps), "%u", o->repeats);
	args[n++] = "determinism";
	if (o->repeats) {
		args[n++] = "--repeats";
		args[n++] = reps;
	} else {
		args[n++] = "--duration";
		args[n++] = dur;
	}
	if (o->gpus) {
		args[n++] = "--gpus";
		args[n++] = o->gpus;
	}
	if (o->inject) {
		args[n++] = "--inject";
		args[n++] = o->inject;
	}
	args[n] = NULL;
	/* a repeat is 7 ms on an H200; half a second leaves room for GPUs 70 times slower */
	double t_s = o->timeout > 0 ? o->timeout
		     : o->repeats   ? o->repeats * 0.5 + 120
				    : o->duration * 1.25 + 120;
	report_init(&rep, he->host, wall_seconds());
	uint64_t t0 = mono_ms();
	int fd = active_progress_fd(!out->json);
	engine_determinism(args, (unsigned)(t_s * 1000), fd, &run, &end, &desc, &why);
	stress_driver_fix(&he->fs, &run.error_code, &run.error);
	active_progress_close(fd);
	rep.duration_ms = mono_ms() - t0;
	end.duration_ms = rep.duration_ms;
	engine_det_refs(o->reference, &refs);
	det_evaluate(&run, &end, &refs, &rep);
	det_figures(&run, &refs, &fig);
	int ret = active_finish(&rep, "vigil stress gpu --determinism", fig.buf, out);
	det_run_release(&run);
	det_refs_release(&refs);
	strbuf_release(&desc);
	strbuf_release(&why);
	strbuf_release(&fig);
	return ret;
}
