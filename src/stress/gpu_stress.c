/* gpu_stress.c: parse vigil-gpu's stress output and judge it (see gpu_stress.h). */
#include "gpu_stress.h"
#include "jsonget.h"

#include <math.h>

void gs_run_init(struct gs_run *r)
{
	memset(r, 0, sizeof(*r));
}

static void gemm_release(struct gs_gemm *g)
{
	free(g->note);
	free(g->first_error);
	free(g->error);
}

void gs_run_release(struct gs_run *r)
{
	for (size_t i = 0; i < r->nr; i++) {
		struct gs_gpu *g = &r->gpus[i];
		for (size_t j = 0; j < g->nr_gemm; j++)
			gemm_release(&g->gemm[j]);
		free(g->gemm);
		free(g->name);
		free(g->pci);
		free(g->uuid);
		free(g->hbm_error);
		free(g->mt_first_error);
		free(g->mt_flipped);
		free(g->mt_error);
		free(g->error);
	}
	free(r->gpus);
	free(r->gpus_expected);
	free(r->nvml);
	free(r->xid_watch);
	free(r->error_code);
	free(r->error);
	gs_procs_release(&r->procs);
	memset(r, 0, sizeof(*r));
}

static void parse_health(const struct json_value *h, struct gs_health *o)
{
	memset(o, 0, sizeof(*o));
	if (!h || h->type != JSON_OBJECT)
		return;
	o->read = jg_bool(h, "read", false);
	double d;
	o->ecc = json_get_number(h, "ecc_volatile_uncorrected", &d);
	o->ecc_uncorrected = jg_u64(h, "ecc_volatile_uncorrected");
	o->ecc_corrected = jg_u64(h, "ecc_volatile_corrected");
	o->remap = json_get_number(h, "remap_uncorrectable", &d);
	o->remap_uncorrectable = jg_u64(h, "remap_uncorrectable");
	o->remap_correctable = jg_u64(h, "remap_correctable");
	o->remap_pending = jg_bool(h, "remap_pending", false);
	o->remap_failure = jg_bool(h, "remap_failure", false);
}

static int parse_gemm(const struct json_value *v, struct gs_gemm *g, struct strbuf *err)
{
	memset(g, 0, sizeof(*g));
	const char *dt = json_get_string(v, "dtype");
	if (!dt)
		return error_set(err, "a GEMM result has no dtype");
	strlcpy_v(g->name, dt, sizeof(g->name));
	g->dtype = stress_dtype_from_name(dt);
	g->supported = jg_bool(v, "supported", true);
	g->note = jg_strdup(v, "note");
	g->tflops = jg_num(v, "tflops", 0);
	g->tflops_first = jg_num(v, "tflops_first", 0);
	g->tflops_last = jg_num(v, "tflops_last", 0);
	g->seconds = jg_num(v, "seconds", 0);
	/* delivered over the window; older helpers did not say, but gave what it is made of */
	double m = jg_num(v, "m", 0), n = jg_num(v, "n", 0), k = jg_num(v, "k", 0);
	double gemms = (double)jg_u64(v, "gemms");
	g->tflops_wall = jg_num(v, "tflops_wall", -1);
	if (g->tflops_wall < 0)
		g->tflops_wall = g->seconds > 0 && m > 0 && gemms > 0
					 ? 2 * m * n * k * gemms / g->seconds / 1e12
					 : g->tflops;
	g->gemms = jg_u64(v, "gemms");
	g->verified = jg_u64(v, "verified_gemms");
	g->checksums = jg_u64(v, "checksums");
	g->miscompares = jg_u64(v, "miscompares");
	g->kat_runs = jg_u64(v, "kat_runs");
	g->kat_elements = jg_u64(v, "kat_elements");
	g->kat_miscompares = jg_u64(v, "kat_miscompares");
	g->max_err_ratio = jg_num(v, "max_err_ratio", 0);
	g->detect_rms = jg_num(v, "detect_rms", 0);
	g->first_error = jg_strdup(v, "first_error");
	g->error = jg_first_string(v, "errors");
	return 0;
}

static int parse_gpu(const struct json_value *v, struct gs_gpu *g, struct strbuf *err)
{
	double d;
	memset(g, 0, sizeof(*g));
	if (!json_get_number(v, "index", &d))
		return error_set(err, "a GPU result has no index");
	g->index = (int)d;
	g->name = jg_strdup(v, "name");
	g->pci = jg_strdup(v, "pci");
	g->uuid = jg_strdup(v, "uuid");
	g->mem_total = jg_u64(v, "mem_total_bytes");
	g->seconds = jg_num(v, "seconds", 0);
	g->error = jg_first_string(v, "errors");
	const struct json_value *gm = json_get(v, "gemm");
	if (gm && gm->type == JSON_ARRAY && gm->nr) {
		g->gemm = xcalloc(gm->nr, sizeof(*g->gemm));
		for (size_t i = 0; i < gm->nr; i++) {
			if (parse_gemm(gm->items[i], &g->gemm[i], err) < 0)
				return -1;
			g->nr_gemm++;
		}
	}
	const struct json_value *h = json_get(v, "hbm");
	if (h && h->type == JSON_OBJECT) {
		g->has_hbm = true;
		g->hbm_read = jg_num(h, "read_gbps", 0);
		g->hbm_write = jg_num(h, "write_gbps", 0);
		g->hbm_copy = jg_num(h, "copy_gbps", 0);
		g->hbm_memcpy = jg_num(h, "memcpy_gbps", 0);
		g->hbm_miscompares = jg_u64(h, "miscompares");
		g->hbm_error = jg_first_string(h, "errors");
	}
	const struct json_value *m = json_get(v, "memtest");
	if (m && m->type == JSON_OBJECT) {
		g->has_memtest = true;
		g->mt_bytes = jg_u64(m, "bytes");
		g->mt_free = jg_u64(m, "free_bytes_before");
		g->mt_words = jg_u64(m, "words_checked");
		g->mt_miscompares = jg_u64(m, "miscompares");
		g->mt_rounds = (int)jg_num(m, "rounds", 0);
		const struct json_value *p = json_get(m, "patterns");
		g->mt_patterns = p && p->type == JSON_ARRAY ? p->nr : 0;
		g->mt_first_error = jg_strdup(m, "first_error");
		g->mt_flipped = jg_strdup(m, "flipped_bits");
		g->mt_error = jg_first_string(m, "errors");
	}
	const struct json_value *t = json_get(v, "telemetry");
	if (t && t->type == JSON_OBJECT) {
		g->has_telemetry = true;
		g->samples = (unsigned)jg_num(t, "samples", 0);
		g->temp_max = jg_num(t, "temp_max_c", NAN);
		g->power_max = jg_num(t, "power_max_w", NAN);
		g->power_avg = jg_num(t, "power_avg_w", NAN);
		g->clock_min = jg_num(t, "sm_clock_min_mhz", NAN);
		g->clock_avg = jg_num(t, "sm_clock_avg_mhz", NAN);
		const char *rs = json_get_string(t, "clock_event_reasons");
		uint64_t u;
		if (rs && parse_u64(rs, &u))
			g->reasons = u;
		g->thermal_samples = (unsigned)jg_num(t, "thermal_slowdown_samples", 0);
		g->power_brake_samples = (unsigned)jg_num(t, "power_brake_samples", 0);
		g->hw_slowdown_samples = (unsigned)jg_num(t, "hw_slowdown_samples", 0);
		g->other_processes = (unsigned)jg_num(t, "other_processes_max", 0);
	}
	const struct json_value *hb = json_get(v, "health_before"), *ha = json_get(v, "health_after");
	if (hb && ha) {
		g->has_health = true;
		parse_health(hb, &g->before);
		parse_health(ha, &g->after);
	}
	const struct json_value *x = json_get(v, "xids");
	for (size_t i = 0; x && x->type == JSON_ARRAY && i < x->nr && g->nr_xids < 16; i++) {
		double xv;
		if (json_get_number(x->items[i], "xid", &xv))
			g->xids[g->nr_xids++] = (uint64_t)xv;
	}
	return 0;
}

int gs_run_parse(struct gs_run *r, const struct json_value *const *lines, size_t nr,
		 struct strbuf *err)
{
	for (size_t i = 0; i < nr; i++) {
		const struct json_value *v = lines[i];
		const char *type = json_get_string(v, "type");
		if (!type)
			continue;
		if (!strcmp(type, "start") && !r->started) {
			r->started = true;
			r->nvml = jg_strdup(v, "nvml");
			r->xid_watch = jg_strdup(v, "xid_watch");
			r->duration = jg_num(v, "duration_s", 0);
			r->procs.watch = jg_strdup(v, "processes_watch");
			gs_procs_parse(&r->procs, json_get(v, "other_processes"), -1, true, false);
			const struct json_value *gl = json_get(v, "gpus");
			if (gl && gl->type == JSON_ARRAY && gl->nr) {
				r->gpus_expected = xcalloc(gl->nr, sizeof(int));
				for (size_t k = 0; k < gl->nr; k++)
					if (gl->items[k]->type == JSON_NUMBER)
						r->gpus_expected[r->nr_expected++] =
							(int)gl->items[k]->number;
			}
		} else if (!strcmp(type, "gpu")) {
			ALLOC_GROW(r->gpus, r->nr + 1, r->alloc);
			if (parse_gpu(v, &r->gpus[r->nr], err) < 0)
				return -1;
			int gi = r->gpus[r->nr].index;
			gs_procs_parse(&r->procs, json_get(v, "other_processes"), gi, false, false);
			/* older helpers said only the pids, in the telemetry */
			const struct json_value *op = json_path(v, "telemetry.other_pids");
			for (size_t k = 0; op && op->type == JSON_ARRAY && k < op->nr; k++) {
				const struct json_value *pv = op->items[k];
				if (pv->type != JSON_NUMBER)
					continue;
				if (pv->number >= 0 && pv->number <= 4e9)
					gs_procs_add_pid(&r->procs, gi, (unsigned)pv->number);
			}
			r->nr++;
		} else if (!strcmp(type, "end")) {
			r->ended = true;
			const char *w = json_get_string(v, "processes_watch");
			if (w && strcmp(w, "ok")) {
				free(r->procs.watch);
				r->procs.watch = xstrdup(w);
			}
		} else if (!strcmp(type, "error") && !r->error) {
			r->error_code = jg_strdup(v, "code");
			r->error = jg_strdup(v, "message");
		}
	}
	return 0;
}

void gs_device_name(const struct gs_gpu *g, struct strbuf *out)
{
	strbuf_reset(out);
	if (g->pci && *g->pci)
		strbuf_addf(out, "GPU %d (%s)", g->index, g->pci);
	else
		strbuf_addf(out, "GPU %d", g->index);
}

/* ---- evaluation ---- */

/* Move a locally built result into the report (ownership moves too); empty ones are dropped. */
static void result_move(struct report *rep, struct check_result *local, bool keep_empty)
{
	if (!local->nr && !keep_empty) {
		check_result_release(local);
		return;
	}
	report_move_result(rep, local);
}

static bool is_oom(const char *e)
{
	return e && (strstr(e, "out of memory") || strstr(e, "cudaErrorMemoryAllocation"));
}

/* A GPU the helper was asked to test but did not report on. */
static void missing_gpu(const struct gs_run *r, const struct gs_end *end, int idx,
			struct check_result *res)
{
	char dev[32];
	snprintf(dev, sizeof(dev), "GPU %d", idx);
	if (end->timed_out) {
		struct finding *f = result_add(res, STATUS_FAIL, ACTION_RESET_GPU, "gpu_hung", dev,
					       "%s did not finish its tests within the deadline "
					       "(%u s): hung or far too slow", dev,
					       (unsigned)(end->duration_ms / 1000));
		f->severity = SEV_CRITICAL;
	} else {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "gpu_no_result", dev,
			   "no result for %s: vigil-gpu %s", dev,
			   end->describe ? end->describe : "stopped early");
	}
	(void)r;
}

/* True when another process was seen computing on GPU index gpu: its figures are not judged. */
static bool shared(const struct gs_run *r, int gpu)
{
	for (size_t i = 0; i < r->procs.nr; i++)
		if (r->procs.v[i].gpu == gpu)
			return true;
	return false;
}

/* "; pid 4242 (python3) was computing on it" for a person, or "" */
static void shared_note(const struct gs_run *r, int gpu, struct strbuf *out)
{
	strbuf_reset(out);
	if (!shared(r, gpu))
		return;
	strbuf_addstr(out, "; not judged, shared with ");
	gs_procs_on(&r->procs, gpu, out);
}

/*
 * Throughput is judged on what the GPU delivered over the sustained window by the wall clock
 * (products x FLOPs / time): what a job would get. A GPU that another process takes turns on
 * runs each product at full speed and still does less work, which only the wall clock shows.
 * The per-product rate (events, median window) then says where the time went.
 */
static void eval_gemm(const struct gs_run *r, const struct stress_limits *lim,
		      struct check_result *res)
{
	struct strbuf dev = STRBUF_INIT, why = STRBUF_INIT, note = STRBUF_INIT;
	size_t n = r->nr ? r->nr : 1;
	double *wall = xcalloc(n, sizeof(double)), *kern = xcalloc(n, sizeof(double));
	double *mw = xcalloc(n, sizeof(double)), *mk = xcalloc(n, sizeof(double));
	for (int d = -1; d < STRESS_NR_DTYPES; d++) {
		/* d == -1: dtypes vigil does not know (judged on correctness only) */
		for (size_t i = 0; i < r->nr; i++) {
			wall[i] = kern[i] = 0;
			if (shared(r, r->gpus[i].index))
				continue; /* not a sibling to measure others by */
			for (size_t j = 0; j < r->gpus[i].nr_gemm; j++) {
				const struct gs_gemm *g = &r->gpus[i].gemm[j];
				if (g->dtype == d && d >= 0 && g->supported && !g->error) {
					wall[i] = g->tflops_wall;
					kern[i] = g->tflops;
				}
			}
		}
		stress_median_of_others(wall, r->nr, mw);
		stress_median_of_others(kern, r->nr, mk);
		for (size_t i = 0; i < r->nr; i++) {
			const struct gs_gpu *gpu = &r->gpus[i];
			bool is_shared = shared(r, gpu->index);
			/* a shared GPU's own value stands in for a median it was left out of */
			bool has_sib = false;
			for (size_t k = 0; k < r->nr; k++)
				has_sib |= k != i && wall[k] > 0;
			gs_device_name(gpu, &dev);
			shared_note(r, gpu->index, &note);
			for (size_t j = 0; j < gpu->nr_gemm; j++) {
				const struct gs_gemm *g = &gpu->gemm[j];
				if (g->dtype != d)
					continue;
				char code[32];
				snprintf(code, sizeof(code), "gemm_%s", g->name);
				struct finding *f;
				uint64_t bad = g->miscompares + g->kat_miscompares;
				double w = g->tflops_wall;
				double floor = d >= 0 ? lim->gemm_floor[d] : 0;
				bool outlier = d >= 0 && has_sib && mw[i] > 0 &&
					       w < (1 - lim->outlier_margin) * mw[i];
				bool low = floor > 0 && w < floor;
				if (!g->supported) {
					f = result_add(res, STATUS_SKIPPED, ACTION_NONE, code, dev.buf,
						       "%s: %s", g->name, g->note ? g->note : "not supported");
					continue;
				}
				if (g->error) {
					bool oom = is_oom(g->error);
					f = result_add(res, oom ? STATUS_UNKNOWN : STATUS_FAIL,
						       oom ? ACTION_INVESTIGATE : ACTION_RESET_GPU,
						       code, dev.buf, "%s %s GEMM %s: %s", dev.buf,
						       g->name, oom ? "could not start" : "failed",
						       g->error);
					continue;
				}
				if (bad) {
					/* wrong answers are wrong whoever else was on the GPU */
					f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE,
						       "gemm_miscompare", dev.buf,
						       "%s computed wrong %s products: %llu checksum and "
						       "%llu known-answer miscompares (%s)",
						       dev.buf, g->name,
						       (unsigned long long)g->miscompares,
						       (unsigned long long)g->kat_miscompares,
						       g->first_error ? g->first_error : "");
					f->severity = SEV_CRITICAL;
				} else if ((outlier || low) && is_shared) {
					f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, code,
						       dev.buf, "%s %s delivered %.0f TFLOP/s%s",
						       dev.buf, g->name, w, note.buf);
				} else if (outlier || low) {
					strbuf_reset(&why);
					if (outlier)
						strbuf_addf(&why, ", %.2fx its siblings' %.0f (outlier "
							    "beyond %.0f%%)", w / mw[i], mw[i],
							    lim->outlier_margin * 100);
					if (low)
						strbuf_addf(&why, ", below the floor %.0f%s%s", floor,
							    lim->model[0] ? " for " : "", lim->model);
					/* where the time went: the products, or between them */
					if (mk[i] > 0 && has_sib && g->tflops > 0) {
						double kr = g->tflops / mk[i];
						if (kr >= 1 - lim->outlier_margin / 2)
							strbuf_addf(&why, "; each product ran at full "
								    "speed (%.0f TFLOP/s, %.2fx): the "
								    "time went between products (another "
								    "process taking turns, or the host)",
								    g->tflops, kr);
						else
							strbuf_addf(&why, "; its products ran slower "
								    "(%.0f TFLOP/s each, %.2fx)",
								    g->tflops, kr);
					}
					f = result_add(res, STATUS_FAIL,
						       outlier ? ACTION_INVESTIGATE : ACTION_INSPECT_HARDWARE,
						       outlier ? "gemm_outlier" : code, dev.buf,
						       "%s %s delivered %.0f TFLOP/s over %.1f s%s", dev.buf,
						       g->name, w, g->seconds, why.buf);
				} else {
					f = result_add(res, STATUS_OK, ACTION_NONE, code, dev.buf,
						       "%s %.0f TFLOP/s delivered (%.0f per product), "
						       "%llu products verified, %llu known-answer runs "
						       "exact",
						       g->name, w, g->tflops,
						       (unsigned long long)g->verified,
						       (unsigned long long)g->kat_runs);
				}
				finding_detail(f, "dtype", "%s", g->name);
				finding_detail_num(f, "tflops", g->tflops);
				finding_detail_num(f, "tflops_wall", w);
				finding_detail_num(f, "seconds", g->seconds);
				finding_detail_num(f, "tflops_first", g->tflops_first);
				finding_detail_num(f, "tflops_last", g->tflops_last);
				finding_detail_num(f, "gemms", (double)g->gemms);
				finding_detail_num(f, "verified_gemms", (double)g->verified);
				finding_detail_num(f, "miscompares", (double)g->miscompares);
				finding_detail_num(f, "kat_miscompares", (double)g->kat_miscompares);
				finding_detail_num(f, "max_err_ratio", g->max_err_ratio);
				finding_detail_num(f, "detect_rms", g->detect_rms);
				if (floor > 0)
					finding_detail_num(f, "floor", floor);
				if (d >= 0 && has_sib) {
					finding_detail_num(f, "siblings_median", mw[i]);
					finding_detail_num(f, "siblings_median_per_product", mk[i]);
				}
			}
		}
	}
	free(wall);
	free(kern);
	free(mw);
	free(mk);
	strbuf_release(&dev);
	strbuf_release(&why);
	strbuf_release(&note);
}

/* One HBM figure against its siblings and its floor; every cause goes into why. */
static bool hbm_cause(const char *what, double v, double med, bool has_sib, double floor,
		      double margin, struct strbuf *why, bool *outlier)
{
	bool o = has_sib && med > 0 && v < (1 - margin) * med;
	bool low = floor > 0 && v < floor;
	if (!o && !low)
		return false;
	strbuf_addf(why, "%s%s %.0f GB/s", why->len ? "; " : "", what, v);
	if (o)
		strbuf_addf(why, ", %.2fx its siblings' %.0f", v / med, med);
	if (low)
		strbuf_addf(why, ", below the floor %.0f", floor);
	*outlier |= o;
	return true;
}

static void eval_hbm(const struct gs_run *r, const struct stress_limits *lim,
		     struct check_result *res)
{
	struct strbuf dev = STRBUF_INIT, why = STRBUF_INIT, note = STRBUF_INIT;
	size_t n = r->nr ? r->nr : 1;
	double *copy = xcalloc(n, sizeof(double)), *read = xcalloc(n, sizeof(double));
	double *write = xcalloc(n, sizeof(double));
	double *mc = xcalloc(n, sizeof(double)), *mr = xcalloc(n, sizeof(double));
	double *mw = xcalloc(n, sizeof(double));
	for (size_t i = 0; i < r->nr; i++) {
		const struct gs_gpu *g = &r->gpus[i];
		bool ok = g->has_hbm && !g->hbm_error && !shared(r, g->index);
		copy[i] = ok ? g->hbm_copy : 0;
		read[i] = ok ? g->hbm_read : 0;
		write[i] = ok ? g->hbm_write : 0;
	}
	stress_median_of_others(copy, r->nr, mc);
	stress_median_of_others(read, r->nr, mr);
	stress_median_of_others(write, r->nr, mw);
	for (size_t i = 0; i < r->nr; i++) {
		const struct gs_gpu *g = &r->gpus[i];
		if (!g->has_hbm)
			continue;
		gs_device_name(g, &dev);
		shared_note(r, g->index, &note);
		bool has_sib = false;
		for (size_t k = 0; k < r->nr; k++)
			has_sib |= k != i && copy[k] > 0;
		struct finding *f;
		double m = lim->outlier_margin;
		if (g->hbm_error) {
			bool oom = is_oom(g->hbm_error);
			f = result_add(res, oom ? STATUS_UNKNOWN : STATUS_FAIL,
				       oom ? ACTION_INVESTIGATE : ACTION_RESET_GPU, "hbm", dev.buf,
				       "%s HBM test %s: %s", dev.buf,
				       oom ? "could not start" : "failed", g->hbm_error);
			continue;
		}
		strbuf_reset(&why);
		bool outlier = false;
		/* every cause, not the first: a slow write beside a slow copy is two facts */
		hbm_cause("copy", g->hbm_copy, mc[i], has_sib, lim->hbm_copy_floor, m, &why, &outlier);
		hbm_cause("read", g->hbm_read, mr[i], has_sib, lim->hbm_read_floor, m, &why, &outlier);
		hbm_cause("write", g->hbm_write, mw[i], has_sib, lim->hbm_write_floor, m, &why,
			  &outlier);
		if (g->hbm_miscompares) {
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "hbm_miscompare",
				       dev.buf, "%s HBM read back wrong data: %llu miscompares",
				       dev.buf, (unsigned long long)g->hbm_miscompares);
			f->severity = SEV_CRITICAL;
		} else if (why.len && note.len) {
			f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "hbm", dev.buf,
				       "%s HBM %s%s", dev.buf, why.buf, note.buf);
		} else if (why.len) {
			if (outlier)
				strbuf_addf(&why, " (outlier beyond %.0f%%)", m * 100);
			f = result_add(res, STATUS_FAIL,
				       outlier ? ACTION_INVESTIGATE : ACTION_INSPECT_HARDWARE,
				       outlier ? "hbm_outlier" : "hbm_floor", dev.buf, "%s HBM %s",
				       dev.buf, why.buf);
		} else {
			f = result_add(res, STATUS_OK, ACTION_NONE, "hbm", dev.buf,
				       "HBM read %.0f, write %.0f, copy %.0f GB/s, data verified",
				       g->hbm_read, g->hbm_write, g->hbm_copy);
		}
		finding_detail_num(f, "read_gbps", g->hbm_read);
		finding_detail_num(f, "write_gbps", g->hbm_write);
		finding_detail_num(f, "copy_gbps", g->hbm_copy);
		finding_detail_num(f, "memcpy_gbps", g->hbm_memcpy);
		finding_detail_num(f, "miscompares", (double)g->hbm_miscompares);
		if (lim->hbm_copy_floor > 0)
			finding_detail_num(f, "copy_floor", lim->hbm_copy_floor);
	}
	free(copy);
	free(read);
	free(write);
	free(mc);
	free(mr);
	free(mw);
	strbuf_release(&dev);
	strbuf_release(&why);
	strbuf_release(&note);
}

static void eval_memtest(const struct gs_run *r, const struct stress_limits *lim,
			 struct check_result *res)
{
	struct strbuf dev = STRBUF_INIT;
	for (size_t i = 0; i < r->nr; i++) {
		const struct gs_gpu *g = &r->gpus[i];
		if (!g->has_memtest)
			continue;
		gs_device_name(g, &dev);
		double gib = (double)g->mt_bytes / (1u << 30);
		double tot = (double)g->mem_total / (1u << 30);
		struct finding *f;
		if (g->mt_miscompares) {
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "memtest_miscompare",
				       dev.buf,
				       "%s memory patterns: %llu words read back wrong (bits 0x%s; %s)",
				       dev.buf, (unsigned long long)g->mt_miscompares,
				       g->mt_flipped && !strncmp(g->mt_flipped, "0x", 2)
					       ? g->mt_flipped + 2
					       : "?",
				       g->mt_first_error ? g->mt_first_error : "");
			f->severity = SEV_CRITICAL;
		} else if (g->mt_error) {
			bool oom = is_oom(g->mt_error) || strstr(g->mt_error, "could not allocate");
			f = result_add(res, oom ? STATUS_UNKNOWN : STATUS_FAIL,
				       oom ? ACTION_INVESTIGATE : ACTION_RESET_GPU, "memtest", dev.buf,
				       "%s memory patterns %s: %s", dev.buf,
				       oom ? "could not run" : "failed", g->mt_error);
		} else if (g->mem_total && gib < lim->memtest_min_fraction * tot) {
			f = result_add(res, STATUS_WARN, ACTION_INVESTIGATE, "memtest_partial",
				       dev.buf,
				       "%s memory patterns covered only %.1f of %.1f GiB (the rest "
				       "was in use), no errors",
				       dev.buf, gib, tot);
		} else {
			f = result_add(res, STATUS_OK, ACTION_NONE, "memtest", dev.buf,
				       "%.1f GiB, %zu patterns x %d rounds, no errors", gib,
				       g->mt_patterns, g->mt_rounds);
		}
		finding_detail_num(f, "bytes", (double)g->mt_bytes);
		finding_detail_num(f, "words_checked", (double)g->mt_words);
		finding_detail_num(f, "rounds", g->mt_rounds);
		finding_detail_num(f, "miscompares", (double)g->mt_miscompares);
	}
	strbuf_release(&dev);
}

static void eval_health(const struct gs_run *r, struct check_result *res)
{
	struct strbuf dev = STRBUF_INIT, msg = STRBUF_INIT;
	bool any_health = false;
	for (size_t i = 0; i < r->nr; i++)
		any_health |= r->gpus[i].has_health;
	if (!any_health && r->nr) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "nvml", "",
			   "ECC, row remapping and Xid were not read before and after: %s",
			   r->nvml ? r->nvml : "NVML unavailable");
	} else if (r->xid_watch && strcmp(r->xid_watch, "ok")) {
		result_add(res, STATUS_WARN, ACTION_NONE, "xid_watch", "",
			   "Xid events were not watched during the test (%s); 'vigil check' reads "
			   "them from the kernel log",
			   r->xid_watch);
	}
	for (size_t i = 0; i < r->nr; i++) {
		const struct gs_gpu *g = &r->gpus[i];
		gs_device_name(g, &dev);
		const struct gs_health *b = &g->before, *a = &g->after;
		size_t before_nr = res->nr;
		struct finding *f;
		if (g->has_health && a->read && b->read) {
			if (a->ecc && b->ecc && a->ecc_uncorrected > b->ecc_uncorrected) {
				f = result_add(res, STATUS_FAIL, ACTION_RESET_GPU, "ecc_uncorrected",
					       dev.buf,
					       "%s: %llu new uncorrectable ECC errors during the test",
					       dev.buf,
					       (unsigned long long)(a->ecc_uncorrected -
								    b->ecc_uncorrected));
				f->severity = SEV_CRITICAL;
			}
			if (a->ecc && b->ecc && a->ecc_corrected > b->ecc_corrected)
				result_add(res, STATUS_WARN, ACTION_NONE, "ecc_corrected", dev.buf,
					   "%s: %llu new correctable ECC errors during the test",
					   dev.buf,
					   (unsigned long long)(a->ecc_corrected - b->ecc_corrected));
			if (a->remap && a->remap_failure)
				result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "remap_failure",
					   dev.buf, "%s: row remapping failed", dev.buf);
			else if (a->remap && a->remap_pending)
				result_add(res, STATUS_FAIL, ACTION_RESET_GPU, "remap_pending",
					   dev.buf,
					   "%s: a row remapping is pending: reset the GPU to apply it",
					   dev.buf);
			if (a->remap && b->remap && a->remap_uncorrectable > b->remap_uncorrectable)
				result_add(res, STATUS_FAIL, ACTION_RESET_GPU, "remap_new", dev.buf,
					   "%s: %llu rows remapped for uncorrectable errors during "
					   "the test",
					   dev.buf,
					   (unsigned long long)(a->remap_uncorrectable -
								b->remap_uncorrectable));
		}
		if (g->nr_xids) {
			strbuf_reset(&msg);
			for (size_t k = 0; k < g->nr_xids; k++)
				strbuf_addf(&msg, "%s%llu", k ? ", " : "",
					    (unsigned long long)g->xids[k]);
			f = result_add(res, STATUS_FAIL, ACTION_RESET_GPU, "xid", dev.buf,
				       "%s: Xid %s during the test", dev.buf, msg.buf);
			f->severity = SEV_CRITICAL;
		}
		if (g->has_telemetry) {
			if (g->thermal_samples)
				result_add(res, STATUS_WARN, ACTION_INSPECT_HARDWARE, "thermal",
					   dev.buf,
					   "%s: thermal slowdown in %u of %u samples (up to %.0f C)",
					   dev.buf, g->thermal_samples, g->samples, g->temp_max);
			if (g->power_brake_samples || g->hw_slowdown_samples)
				result_add(res, STATUS_WARN, ACTION_INSPECT_HARDWARE, "hw_slowdown",
					   dev.buf,
					   "%s: hardware slowdown in %u and power brake in %u of %u "
					   "samples",
					   dev.buf, g->hw_slowdown_samples, g->power_brake_samples,
					   g->samples);
		}
		if (res->nr == before_nr) {
			strbuf_reset(&msg);
			if (g->has_telemetry && isfinite(g->temp_max))
				strbuf_addf(&msg, "up to %.0f C, %.0f W, SM clock %.0f-%.0f MHz; ",
					    g->temp_max, g->power_max, g->clock_min, g->clock_avg);
			strbuf_addstr(&msg, g->has_health ? "no new ECC errors, remaps or Xid"
							  : "no Xid seen");
			f = result_add(res, STATUS_OK, ACTION_NONE, "health", dev.buf, "%s", msg.buf);
		} else {
			f = &res->findings[res->nr - 1];
		}
		if (g->has_telemetry) {
			finding_detail_num(f, "temp_max_c", g->temp_max);
			finding_detail_num(f, "power_max_w", g->power_max);
			finding_detail_num(f, "power_avg_w", g->power_avg);
			finding_detail_num(f, "sm_clock_min_mhz", g->clock_min);
			finding_detail_num(f, "sm_clock_avg_mhz", g->clock_avg);
			finding_detail(f, "clock_event_reasons", "0x%llx",
				       (unsigned long long)g->reasons);
		}
	}
	strbuf_release(&dev);
	strbuf_release(&msg);
}

void gpu_stress_evaluate(const struct gs_run *r, const struct gs_end *end,
			 const struct stress_limits *lim, struct report *rep)
{
	struct check_result st, gemm, hbm, mt, health;
	check_result_init(&st, "stress");
	st.duration_ms = end->duration_ms;
	if (!end->ran) {
		result_add(&st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_helper", "",
			   "the GPU stress tests need CUDA: %s",
			   end->why_not ? end->why_not : "vigil-gpu could not run");
		result_move(rep, &st, true);
		return;
	}
	if (r->error_code && (!strcmp(r->error_code, "no_driver") ||
			      !strcmp(r->error_code, "old_driver"))) {
		/* stress_driver_fix(): the gpu check's words and action, not CUDA's */
		const char *m = r->error ? r->error : r->error_code;
		if (r->error_code[0] == 'n')
			result_add(&st, STATUS_UNKNOWN, ACTION_LOAD_MODULE, "no_driver", "", "%s", m);
		else
			result_add(&st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "old_driver", "", "%s", m);
		result_move(rep, &st, true);
		return;
	}
	if (r->error_code && !strcmp(r->error_code, "no_gpu")) {
		result_add(&st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_gpu", "",
			   "no GPU to test: %s", r->error ? r->error : "no CUDA device");
		result_move(rep, &st, true);
		return;
	}
	if (!r->started && end->timed_out) {
		/* CUDA never came up within a generous deadline: the driver or a GPU hangs */
		result_add(&st, STATUS_FAIL, ACTION_INVESTIGATE, "helper_hung", "",
			   "vigil-gpu %s before it could start: the driver or a GPU is not "
			   "answering",
			   end->describe ? end->describe : "hung");
		result_move(rep, &st, true);
		return;
	}
	if (!r->started) {
		result_add(&st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "helper", "",
			   "vigil-gpu %s before it started%s%s",
			   end->describe ? end->describe : "ended", r->error ? ": " : "",
			   r->error ? r->error : "");
		result_move(rep, &st, true);
		return;
	}
	for (size_t k = 0; k < r->nr_expected; k++) {
		bool seen = false;
		for (size_t i = 0; i < r->nr; i++)
			seen |= r->gpus[i].index == r->gpus_expected[k];
		if (!seen)
			missing_gpu(r, end, r->gpus_expected[k], &st);
	}
	struct strbuf dev = STRBUF_INIT;
	for (size_t i = 0; i < r->nr; i++) {
		const struct gs_gpu *g = &r->gpus[i];
		if (g->error) {
			gs_device_name(g, &dev);
			result_add(&st, STATUS_FAIL, ACTION_RESET_GPU, "gpu_error", dev.buf,
				   "%s: %s", dev.buf, g->error);
		}
	}
	strbuf_release(&dev);
	size_t problems = st.nr;
	gs_procs_evaluate(&r->procs, "stress test", &st);
	if (!problems) {
		if (!r->ended && !end->timed_out)
			result_add(&st, STATUS_UNKNOWN, ACTION_INVESTIGATE, "helper", "",
				   "vigil-gpu %s before the end of its output",
				   end->describe ? end->describe : "stopped");
		else if (st.nr == problems) {
			struct strbuf m = STRBUF_INIT;
			strbuf_addf(&m, "%zu GPU%s tested in %.0f s", r->nr, r->nr == 1 ? "" : "s",
				    (double)end->duration_ms / 1000);
			if (r->procs.watch && !strcmp(r->procs.watch, "ok")) {
				strbuf_addstr(&m, ", no other process on them");
			} else if (r->procs.watch) {
				strbuf_addstr(&m, ", other processes not watched (");
				strbuf_add_excerpt(&m, r->procs.watch, 120);
				strbuf_addch(&m, ')');
			}
			result_add(&st, STATUS_OK, ACTION_NONE, "run", "", "%s", m.buf);
			strbuf_release(&m);
		}
	}
	check_result_init(&gemm, "gemm");
	check_result_init(&hbm, "hbm");
	check_result_init(&mt, "memtest");
	check_result_init(&health, "stress-health");
	gemm.duration_ms = hbm.duration_ms = mt.duration_ms = health.duration_ms = end->duration_ms;
	eval_gemm(r, lim, &gemm);
	eval_hbm(r, lim, &hbm);
	eval_memtest(r, lim, &mt);
	eval_health(r, &health);
	result_move(rep, &st, true);
	result_move(rep, &gemm, false);
	result_move(rep, &hbm, false);
	result_move(rep, &mt, false);
	result_move(rep, &health, false);
}
