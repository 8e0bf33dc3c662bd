/* det_eval.c: the verdicts of the determinism test (determinism.h says what is judged). */
#include "determinism.h"

static void result_move(struct report *rep, struct check_result *local, bool keep_empty)
{
	if (!local->nr && !keep_empty) {
		check_result_release(local);
		return;
	}
	report_move_result(rep, local);
}

static void dev_name(const struct det_gpu *g, struct strbuf *out)
{
	strbuf_reset(out);
	if (g->pci && *g->pci)
		strbuf_addf(out, "GPU %d (%s)", g->index, g->pci);
	else
		strbuf_addf(out, "GPU %d", g->index);
}

/* "NVIDIA H200 (132 SMs, driver 580, cuBLASLt 130100, det-bf16-chain-v1)" */
static void key_name(const struct det_gpu *g, struct strbuf *out)
{
	strbuf_addf(out, "%s (%d SMs, driver %d, cuBLASLt %llu, %s)", g->name ? g->name : "?",
		    g->sm_count, det_driver_major(g->driver), (unsigned long long)g->cublaslt,
		    g->workload ? g->workload : "?");
}

static bool same_model(const struct det_gpu *a, const struct det_gpu *b)
{
	return a->name && b->name && !strcmp(a->name, b->name) && a->sm_count == b->sm_count;
}

/* The run itself: could the helper run, did each GPU finish. False: nothing more to judge. */
static bool eval_run(const struct det_run *r, const struct gs_end *end, struct check_result *st)
{
	if (!end->ran) {
		result_add(st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_helper", "",
			   "the GPU stress tests need CUDA: %s",
			   end->why_not ? end->why_not : "vigil-gpu could not run");
		return false;
	}
	if (r->error_code && !strcmp(r->error_code, "no_driver")) {
		result_add(st, STATUS_UNKNOWN, ACTION_LOAD_MODULE, "no_driver", "", "%s",
			   r->error ? r->error : r->error_code);
		return false;
	}
	if (r->error_code && !strcmp(r->error_code, "old_driver")) {
		result_add(st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "old_driver", "", "%s",
			   r->error ? r->error : r->error_code);
		return false;
	}
	if (r->error_code && !strcmp(r->error_code, "no_gpu")) {
		result_add(st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_gpu", "",
			   "no GPU to test: %s", r->error ? r->error : "no CUDA device");
		return false;
	}
	if (!r->started) {
		bool hung = end->timed_out;
		result_add(st, hung ? STATUS_FAIL : STATUS_UNKNOWN, ACTION_INVESTIGATE,
			   hung ? "helper_hung" : "helper", "", "vigil-gpu %s before it started%s%s",
			   end->describe ? end->describe : "ended", r->error ? ": " : "",
			   r->error ? r->error : "");
		return false;
	}
	if (r->error)
		/* a malformed line or an error line: what came before still counts */
		/* one code of vigil's own (docs/codes.md); the helper's word goes in the message */
		result_add(st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "helper_error", "",
			   "vigil-gpu%s%s%s: %s", r->error_code ? " (" : "",
			   r->error_code ? r->error_code : "", r->error_code ? ")" : "", r->error);
	struct strbuf dev = STRBUF_INIT;
	for (size_t k = 0; k < r->nr_expected; k++) {
		bool seen = false;
		for (size_t i = 0; i < r->nr; i++)
			seen |= r->gpus[i].index == r->gpus_expected[k];
		if (seen)
			continue;
		strbuf_reset(&dev);
		strbuf_addf(&dev, "GPU %d", r->gpus_expected[k]);
		if (end->timed_out)
			result_add(st, STATUS_FAIL, ACTION_RESET_GPU, "gpu_hung", dev.buf,
				   "%s did not finish one repeat of the determinism test within the "
				   "deadline: hung or far too slow",
				   dev.buf)->severity = SEV_CRITICAL;
		else
			result_add(st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "gpu_no_result", dev.buf,
				   "no result for %s: vigil-gpu %s", dev.buf,
				   end->describe ? end->describe : "stopped early");
	}
	unsigned most = 0;
	for (size_t i = 0; i < r->nr; i++) {
		const struct det_gpu *g = &r->gpus[i];
		dev_name(g, &dev);
		most = g->repeats > most ? g->repeats : most;
		if (g->error)
			result_add(st, STATUS_FAIL, ACTION_RESET_GPU, "gpu_error", dev.buf,
				   "%s: %s (after %u repeats)", dev.buf, g->error, g->repeats);
		else if (!g->done && end->timed_out)
			result_add(st, STATUS_FAIL, ACTION_RESET_GPU, "gpu_hung", dev.buf,
				   "%s did not finish the determinism test within the deadline "
				   "(after %u repeats): hung or far too slow",
				   dev.buf, g->repeats)->severity = SEV_CRITICAL;
		else if (!g->done)
			result_add(st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "gpu_no_result", dev.buf,
				   "vigil-gpu %s before %s finished (after %u repeats): the test is "
				   "incomplete",
				   end->describe ? end->describe : "stopped", dev.buf, g->repeats);
	}
	if (!st->nr && !r->ended)
		result_add(st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "helper", "",
			   "vigil-gpu %s before the end of its output",
			   end->describe ? end->describe : "stopped");
	if (!st->nr)
		result_add(st, STATUS_OK, ACTION_NONE, "run", "",
			   "%zu GPU%s, up to %u repeats of %s in %.0f s", r->nr, r->nr == 1 ? "" : "s",
			   most, r->workload ? r->workload : "the workload",
			   (double)end->duration_ms / 1000);
	strbuf_release(&dev);
	return true;
}

static void add_figures(struct finding *f, const struct det_gpu *g, const struct det_digest *m)
{
	finding_detail_num(f, "repeats", g->repeats);
	finding_detail_num(f, "distinct_digests", (double)(g->nr_d + (g->others ? 1 : 0)));
	if (m)
		finding_detail(f, "digest", "%016llx", (unsigned long long)m->digest);
	if (g->algo)
		finding_detail(f, "algo", "%s", g->algo);
	if (g->work_ms + g->digest_ms > 0)
		finding_detail_num(f, "digest_share", g->digest_ms / (g->work_ms + g->digest_ms));
	if (g->injected_repeat)
		finding_detail_num(f, "injected_repeat", g->injected_repeat);
}

/* A GPU's repeats against each other. True when they agree (a majority digest and no other). */
static bool eval_repeats(const struct det_gpu *g, const char *dev, struct check_result *res)
{
	const struct det_digest *m = det_majority(g);
	struct finding *f;
	if (!g->repeats)
		return false;
	if (m && g->nr_d == 1 && !g->others)
		return true;
	if (m) {
		/* the earliest repeat that differed, and how many did */
		const struct det_digest *x = NULL;
		for (size_t k = 0; k < g->nr_d; k++)
			if (&g->d[k] != m && (!x || g->d[k].first_repeat < x->first_repeat))
				x = &g->d[k];
		unsigned bad = g->repeats - m->count;
		struct strbuf more = STRBUF_INIT;
		if (bad > 1)
			strbuf_addf(&more, "; %u of the repeats differed", bad);
		if (x)
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "sdc_repeat", dev,
				       "silent data corruption suspected: %s repeat %u of %u "
				       "differed (digest %016llx, the others %016llx)%s",
				       dev, x->first_repeat, g->repeats,
				       (unsigned long long)x->digest, (unsigned long long)m->digest,
				       more.buf);
		else
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "sdc_repeat", dev,
				       "silent data corruption suspected: %s: %u of %u repeats "
				       "differed from digest %016llx",
				       dev, bad, g->repeats, (unsigned long long)m->digest);
		strbuf_release(&more);
		if (x)
			finding_detail_num(f, "first_differing_repeat", x->first_repeat);
		finding_detail_num(f, "differing_repeats", bad);
	} else {
		struct strbuf l = STRBUF_INIT;
		for (size_t k = 0; k < g->nr_d && k < 4; k++)
			strbuf_addf(&l, "%s%016llx in %u", k ? ", " : "",
				    (unsigned long long)g->d[k].digest, g->d[k].count);
		if (g->nr_d > 4 || g->others)
			strbuf_addstr(&l, ", ...");
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "sdc_repeats", dev,
			       "silent data corruption suspected: %s gave %zu different digests in "
			       "%u repeats and none in most of them (%s)",
			       dev, g->nr_d + (g->others ? 1 : 0), g->repeats, l.buf);
		strbuf_release(&l);
	}
	f->severity = SEV_CRITICAL;
	add_figures(f, g, m);
	return false;
}

/* Siblings of g's model with a majority digest (voters), and how many of them give digest d. */
static void votes(const struct det_run *r, const struct det_gpu *g, uint64_t d, size_t *voters,
		  size_t *agree)
{
	*voters = *agree = 0;
	for (size_t i = 0; i < r->nr; i++) {
		const struct det_digest *m = det_majority(&r->gpus[i]);
		if (!m || !same_model(g, &r->gpus[i]))
			continue;
		(*voters)++;
		*agree += m->digest == d;
	}
}

/* g (consistent with itself) against the other GPUs of its model and against the reference. */
static void eval_cross(const struct det_run *r, const struct det_gpu *g, const char *dev,
		       const struct det_refs *refs, struct check_result *res)
{
	const struct det_digest *m = det_majority(g);
	const struct det_ref *ref = det_ref_find(refs, g);
	size_t voters, agree;
	struct strbuf k = STRBUF_INIT;
	struct finding *f = NULL;
	votes(r, g, m->digest, &voters, &agree);
	key_name(g, &k);
	if (voters >= 2 && agree < voters) {
		/* the others: their most common digest */
		uint64_t od = 0;
		size_t best = 0;
		for (size_t i = 0; i < r->nr; i++) {
			const struct det_digest *x = det_majority(&r->gpus[i]);
			size_t v, a;
			if (!x || x->digest == m->digest || !same_model(g, &r->gpus[i]))
				continue;
			votes(r, g, x->digest, &v, &a);
			if (a > best) {
				best = a;
				od = x->digest;
			}
		}
		bool minority = 2 * agree < voters, tie = 2 * agree == voters;
		bool ref_decides = tie && ref && (ref->digest == m->digest || ref->digest == od);
		if (minority || (ref_decides && ref->digest != m->digest)) {
			struct strbuf who = STRBUF_INIT;
			if (best == voters - 1)
				strbuf_addf(&who, "the other %s GPU%s", g->name,
					    best == 1 ? "" : "s");
			else
				strbuf_addf(&who, "%zu of the other %zu %s GPUs", best, voters - 1,
					    g->name);
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "sdc_gpu", dev,
				       "silent data corruption suspected: %s computed digest %016llx "
				       "in all %u repeats, %s %016llx%s",
				       dev, (unsigned long long)m->digest, g->repeats, who.buf,
				       (unsigned long long)od,
				       ref_decides ? ", as the reference does" : "");
			strbuf_release(&who);
			f->severity = SEV_CRITICAL;
		} else if (tie && !ref_decides) {
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "sdc_undecided",
				       dev,
				       "silent data corruption suspected: %s computed digest %016llx, "
				       "as many other %s GPUs %016llx, and no majority or reference "
				       "decides which is wrong: test them beside another GPU of the "
				       "model",
				       dev, (unsigned long long)m->digest, g->name,
				       (unsigned long long)od);
		}
		if (f) {
			add_figures(f, g, m);
			strbuf_release(&k);
			return;
		}
	}
	/* consistent, and with its siblings where it has any: the reference */
	if (ref && ref->digest == m->digest) {
		f = result_add(res, STATUS_OK, ACTION_NONE, "determinism", dev,
			       "%s: %u repeats, every digest %016llx%s, as the reference for %s",
			       dev, g->repeats, (unsigned long long)m->digest,
			       voters >= 2 ? " as its siblings'" : "", k.buf);
	} else if (ref && voters >= 2) {
		f = result_add(res, STATUS_WARN, ACTION_INVESTIGATE, "det_ref_mismatch", dev,
			       "%s and its %zu siblings agree on digest %016llx in every repeat, but "
			       "the reference for %s is %016llx: a software difference is likelier "
			       "than %zu GPUs wrong alike",
			       dev, voters - 1, (unsigned long long)m->digest, k.buf,
			       (unsigned long long)ref->digest, voters);
	} else if (ref) {
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "sdc_reference", dev,
			       "silent data corruption suspected: %s computed digest %016llx in all "
			       "%u repeats, the reference for %s is %016llx",
			       dev, (unsigned long long)m->digest, g->repeats, k.buf,
			       (unsigned long long)ref->digest);
		f->severity = SEV_CRITICAL;
		finding_detail(f, "reference", "%016llx", (unsigned long long)ref->digest);
	} else {
		struct strbuf why = STRBUF_INIT;
		if (refs->why_none)
			strbuf_addf(&why, " (%s)", refs->why_none);
		else if (refs->source)
			strbuf_addf(&why, " in %s", refs->source);
		/* beside siblings that agree the cross-check adds little; alone it is all there is */
		f = result_add(res, voters >= 2 ? STATUS_SKIPPED : STATUS_UNKNOWN,
			       voters >= 2 ? ACTION_NONE : ACTION_INVESTIGATE, "det_no_reference", dev,
			       "%s: %u repeats, every digest %016llx%s; no reference digest for "
			       "%s%s, so the cross-check with other hosts is unknown",
			       dev, g->repeats, (unsigned long long)m->digest,
			       voters >= 2 ? " as its siblings'" : "", k.buf, why.buf);
		strbuf_release(&why);
	}
	add_figures(f, g, m);
	strbuf_release(&k);
}

void det_evaluate(const struct det_run *r, const struct gs_end *end, const struct det_refs *refs,
		  struct report *rep)
{
	struct check_result st, det;
	struct strbuf dev = STRBUF_INIT;
	check_result_init(&st, "stress");
	check_result_init(&det, "determinism");
	st.duration_ms = det.duration_ms = end->duration_ms;
	if (eval_run(r, end, &st)) {
		for (size_t i = 0; i < r->nr; i++) {
			const struct det_gpu *g = &r->gpus[i];
			dev_name(g, &dev);
			/* a GPU without its det_done line (died, hung) has no algorithm or SM
			 * count to compare with others: its repeats are still judged */
			if (!eval_repeats(g, dev.buf, &det) || !g->done)
				continue;
			if (g->repeats < 2) {
				result_add(&det, STATUS_UNKNOWN, ACTION_INVESTIGATE, "det_one_repeat",
					   dev.buf,
					   "%s ran one repeat: nothing to compare it with", dev.buf);
				continue;
			}
			eval_cross(r, g, dev.buf, refs, &det);
		}
	}
	strbuf_release(&dev);
	result_move(rep, &st, true);
	result_move(rep, &det, false);
}
