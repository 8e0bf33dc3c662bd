/* net.c: parse and judge vigil-nccl and vigil-gpu pairs output (see net.h). */
#include "net.h"
#include "jsonget.h"

#include <math.h>

void nc_run_init(struct nc_run *r)
{
	memset(r, 0, sizeof(*r));
	r->rank = -1;
}

void nc_run_release(struct nc_run *r)
{
	for (size_t i = 0; i < r->nr_timeouts; i++) {
		free(r->timeouts[i].incomplete);
		free(r->timeouts[i].not_entered);
	}
	for (size_t i = 0; i < r->nr_errors; i++)
		free(r->errors[i]);
	free(r->rows);
	free(r->timeouts);
	free(r->exits);
	free(r->errors);
	memset(r, 0, sizeof(*r));
}

int nc_run_parse(struct nc_run *r, const struct json_value *const *lines, size_t nr,
		 struct strbuf *err)
{
	for (size_t i = 0; i < nr; i++) {
		const struct json_value *v = lines[i];
		const char *type = json_get_string(v, "type");
		if (!type)
			continue;
		const char *gn = json_get_string(v, "gpu_name");
		if (gn && !r->gpu_name[0] && (!strcmp(type, "start") || !strcmp(type, "rank_start")))
			strlcpy_v(r->gpu_name, gn, sizeof(r->gpu_name));
		if (!strcmp(type, "start") && !r->started) {
			r->started = true;
			const char *m = json_get_string(v, "mode");
			strlcpy_v(r->mode, m ? m : "", sizeof(r->mode));
			r->nranks = (int)jg_num(v, "nranks", 0);
			r->rank = (int)jg_num(v, "rank", -1);
			r->nccl_version = (int)jg_num(v, "nccl_version", 0);
		} else if (!strcmp(type, "nccl")) {
			const char *op = json_get_string(v, "op");
			double b;
			if (!op || !json_get_number(v, "bytes", &b))
				return error_set(err, "an NCCL result lacks op or bytes");
			ALLOC_GROW(r->rows, r->nr_rows + 1, r->alloc_rows);
			struct nc_row *w = &r->rows[r->nr_rows++];
			memset(w, 0, sizeof(*w));
			strlcpy_v(w->op, op, sizeof(w->op));
			w->rank = (int)jg_num(v, "rank", -1);
			w->nranks = (int)jg_num(v, "nranks", 0);
			w->gpu = (int)jg_num(v, "gpu", -1);
			w->bytes = jg_u64(v, "bytes");
			w->time_us = jg_num(v, "time_us", 0);
			w->algbw = jg_num(v, "algbw", 0);
			w->busbw = jg_num(v, "busbw", 0);
			w->wrong = jg_u64(v, "wrong");
		} else if (!strcmp(type, "nccl_timeout")) {
			ALLOC_GROW(r->timeouts, r->nr_timeouts + 1, r->alloc_timeouts);
			struct nc_timeout *t = &r->timeouts[r->nr_timeouts++];
			memset(t, 0, sizeof(*t));
			const char *op = json_get_string(v, "op");
			strlcpy_v(t->op, op ? op : "?", sizeof(t->op));
			t->bytes = jg_u64(v, "bytes");
			t->rank = (int)jg_num(v, "rank", -1);
			t->waited_s = jg_num(v, "waited_s", 0);
			t->nr_incomplete = jg_int_array(v, "incomplete_ranks", &t->incomplete);
			t->has_not_entered = json_get(v, "not_entered_ranks") != NULL;
			t->nr_not_entered = jg_int_array(v, "not_entered_ranks", &t->not_entered);
		} else if (!strcmp(type, "rank_exit")) {
			ALLOC_GROW(r->exits, r->nr_exits + 1, r->alloc_exits);
			struct nc_exit *x = &r->exits[r->nr_exits++];
			memset(x, 0, sizeof(*x));
			x->rank = (int)jg_num(v, "rank", -1);
			x->gpu = (int)jg_num(v, "gpu", -1);
			const char *s = json_get_string(v, "status");
			strlcpy_v(x->status, s ? s : "?", sizeof(x->status));
			x->code = (int)jg_num(v, "code", 0);
			x->signal = (int)jg_num(v, "signal", 0);
		} else if (!strcmp(type, "error")) {
			const char *code = json_get_string(v, "code");
			const char *msg = json_get_string(v, "message");
			if (code && !strcmp(code, "no_gpu"))
				r->no_gpu = true;
			struct strbuf sb = STRBUF_INIT;
			strbuf_addf(&sb, "%s: %s", code ? code : "error", msg ? msg : "");
			ALLOC_GROW(r->errors, r->nr_errors + 1, r->alloc_errors);
			r->errors[r->nr_errors++] = strbuf_detach(&sb, NULL);
		} else if (!strcmp(type, "end")) {
			r->ended = true;
		}
	}
	return 0;
}

size_t nc_sizes(const struct nc_run *r, struct nc_size **out)
{
	struct nc_size *s = NULL;
	size_t n = 0, alloc = 0;
	for (size_t i = 0; i < r->nr_rows; i++) {
		const struct nc_row *w = &r->rows[i];
		size_t k;
		for (k = 0; k < n; k++)
			if (s[k].bytes == w->bytes && !strcmp(s[k].op, w->op))
				break;
		if (k == n) {
			ALLOC_GROW(s, n + 1, alloc);
			memset(&s[n], 0, sizeof(s[n]));
			strlcpy_v(s[n].op, w->op, sizeof(s[n].op));
			s[n].bytes = w->bytes;
			n++;
		}
		s[k].ranks_reported++;
		s[k].wrong += w->wrong;
		if (w->time_us >= s[k].time_us) {
			s[k].time_us = w->time_us;
			s[k].algbw = w->algbw;
			s[k].busbw = w->busbw;
		}
	}
	*out = s;
	return n;
}

static void fmt_bytes(uint64_t b, char *buf, size_t n)
{
	if (b >= (1ULL << 30) && !(b % (1ULL << 30)))
		snprintf(buf, n, "%llu GiB", (unsigned long long)(b >> 30));
	else if (b >= (1ULL << 20) && !(b % (1ULL << 20)))
		snprintf(buf, n, "%llu MiB", (unsigned long long)(b >> 20));
	else if (b >= 1024 && !(b % 1024))
		snprintf(buf, n, "%llu KiB", (unsigned long long)(b >> 10));
	else
		snprintf(buf, n, "%llu B", (unsigned long long)b);
}

static void add_ranks(struct strbuf *sb, const int *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		strbuf_addf(sb, "%s%d", i ? "," : "", v[i]);
}

static int rank_gpu(const struct nc_run *r, int rank)
{
	for (size_t i = 0; i < r->nr_exits; i++)
		if (r->exits[i].rank == rank)
			return r->exits[i].gpu;
	for (size_t i = 0; i < r->nr_rows; i++)
		if (r->rows[i].rank == rank)
			return r->rows[i].gpu;
	return -1;
}

void nccl_evaluate(const struct nc_run *r, const struct gs_end *end, const struct stress_limits *lim,
		   bool floor_configured, struct report *rep)
{
	struct check_result res;
	struct strbuf sb = STRBUF_INIT, dev = STRBUF_INIT;
	check_result_init(&res, "nccl");
	res.duration_ms = end->duration_ms;
	if (!end->ran) {
		result_add(&res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_helper", "",
			   "the NCCL tests need CUDA and NCCL: %s",
			   end->why_not ? end->why_not : "vigil-nccl could not run");
		goto out;
	}
	if (!r->started && !r->no_gpu && end->timed_out) {
		result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE, "helper_hung", "",
			   "vigil-nccl %s before it could start: the driver or a GPU is not "
			   "answering",
			   end->describe ? end->describe : "hung");
		goto out;
	}
	if (r->nr_errors && (starts_with(r->errors[0], "no_driver: ") ||
			     starts_with(r->errors[0], "old_driver: "))) {
		/* stress_driver_fix_prefixed(): the gpu check's words and action, not CUDA's */
		const char *m = strchr(r->errors[0], ' ') + 1;
		if (r->errors[0][0] == 'n')
			result_add(&res, STATUS_UNKNOWN, ACTION_LOAD_MODULE, "no_driver", "", "%s", m);
		else
			result_add(&res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "old_driver", "", "%s", m);
		goto out;
	}
	if (r->no_gpu || !r->started) {
		result_add(&res, STATUS_UNKNOWN, ACTION_INVESTIGATE, r->no_gpu ? "no_gpu" : "helper",
			   "", "%s%s", r->no_gpu ? "no GPU to test: " : "vigil-nccl did not start: ",
			   r->nr_errors ? (starts_with(r->errors[0], "no_gpu: ") ? r->errors[0] + 8
									       : r->errors[0])
			   : end->describe ? end->describe : "no output");
		goto out;
	}
	if (r->nranks == 1) {
		/* a collective of one rank moves nothing between GPUs: its bus bandwidth is 0 by
		 * nccl-tests' formula (busbw = algbw * 2(n-1)/n), so no floor can judge it, on one
		 * host or across hosts. Wrong data is still wrong */
		struct nc_size *one = NULL;
		size_t n1 = nc_sizes(r, &one);
		uint64_t wrong = 0;
		for (size_t i = 0; i < n1; i++)
			wrong += one[i].wrong;
		free(one);
		if (wrong) {
			struct finding *f = result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE,
						       "nccl_wrong", "",
						       "%llu elements wrong after a one-rank "
						       "collective",
						       (unsigned long long)wrong);
			f->severity = SEV_CRITICAL;
		}
		result_add(&res, STATUS_SKIPPED, ACTION_NONE, "one_rank", "",
			   "a collective needs two ranks: this run had one (%s); its bus "
			   "bandwidth is 0 by definition, so nothing was measured",
			   !strcmp(r->mode, "rank") ? "--nranks 1" : "one GPU on this host");
		goto out;
	}
	bool one_host = !strcmp(r->mode, "local") || !strcmp(r->mode, "single-process");
	bool floor_on = lim->busbw_floor > 0 && (one_host || floor_configured);
	struct nc_size *sz = NULL;
	size_t nsz = nc_sizes(r, &sz);
	/* the ranks whose rows this process can see */
	int expect = one_host ? r->nranks : 1;
	for (size_t i = 0; i < nsz; i++) {
		const struct nc_size *s = &sz[i];
		char bs[32];
		fmt_bytes(s->bytes, bs, sizeof(bs));
		struct finding *f;
		if (s->wrong) {
			f = result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE, "nccl_wrong", "",
				       "%s %s: %llu elements wrong after the collective", s->op, bs,
				       (unsigned long long)s->wrong);
			f->severity = SEV_CRITICAL;
		} else if (s->ranks_reported < expect) {
			f = result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE, "nccl_incomplete", "",
				       "%s %s: only %d of %d ranks reported", s->op, bs,
				       s->ranks_reported, expect);
		} else if (floor_on && !strcmp(s->op, "all_reduce") &&
			   s->bytes >= lim->busbw_floor_min_bytes && s->busbw < lim->busbw_floor) {
			f = result_add(&res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "nccl_busbw", "",
				       "%s %s: busbw %.1f GB/s, below the floor %.0f%s%s", s->op, bs,
				       s->busbw, lim->busbw_floor, lim->model[0] ? " for " : "",
				       lim->model);
		} else {
			f = result_add(&res, STATUS_OK, ACTION_NONE, "nccl", "",
				       "%s %s: busbw %.1f GB/s, algbw %.1f GB/s, data exact", s->op,
				       bs, s->busbw, s->algbw);
		}
		finding_detail(f, "op", "%s", s->op);
		finding_detail_num(f, "bytes", (double)s->bytes);
		finding_detail_num(f, "time_us", s->time_us);
		finding_detail_num(f, "algbw", s->algbw);
		finding_detail_num(f, "busbw", s->busbw);
		finding_detail_num(f, "wrong", (double)s->wrong);
		finding_detail_num(f, "ranks", s->ranks_reported);
		if (floor_on && !strcmp(s->op, "all_reduce") && s->bytes >= lim->busbw_floor_min_bytes)
			finding_detail_num(f, "busbw_floor", lim->busbw_floor);
	}
	free(sz);
	/* a collective that did not finish: the ranks that never entered it are the suspects */
	for (size_t i = 0; i < r->nr_timeouts; i++) {
		const struct nc_timeout *t = &r->timeouts[i];
		char bs[32];
		fmt_bytes(t->bytes, bs, sizeof(bs));
		strbuf_reset(&sb);
		strbuf_reset(&dev);
		if (t->nr_not_entered) {
			strbuf_addstr(&sb, "; never entered: rank ");
			add_ranks(&sb, t->not_entered, t->nr_not_entered);
			strbuf_addstr(&dev, "rank ");
			add_ranks(&dev, t->not_entered, t->nr_not_entered);
			if (t->nr_not_entered == 1 && rank_gpu(r, t->not_entered[0]) >= 0)
				strbuf_addf(&dev, " (GPU %d)", rank_gpu(r, t->not_entered[0]));
		}
		struct strbuf inc = STRBUF_INIT;
		add_ranks(&inc, t->incomplete, t->nr_incomplete);
		struct finding *f = result_add(
			&res, STATUS_FAIL, ACTION_INVESTIGATE, "nccl_timeout", dev.buf,
			"%s%s%s did not finish in %.0f s (seen by rank %d): incomplete on rank%s %s%s",
			t->op, t->bytes ? " " : "", t->bytes ? bs : "", t->waited_s, t->rank,
			t->nr_incomplete == 1 ? "" : "s", t->nr_incomplete ? inc.buf : "?", sb.buf);
		f->severity = SEV_CRITICAL;
		finding_detail(f, "incomplete_ranks", "%s", inc.buf);
		if (t->has_not_entered) {
			strbuf_reset(&inc);
			add_ranks(&inc, t->not_entered, t->nr_not_entered);
			finding_detail(f, "not_entered_ranks", "%s", inc.buf);
		}
		strbuf_release(&inc);
	}
	/* ranks that died on their own (the launcher's kills after a timeout are expected) */
	for (size_t i = 0; i < r->nr_exits; i++) {
		const struct nc_exit *x = &r->exits[i];
		strbuf_reset(&dev);
		strbuf_addf(&dev, "rank %d (GPU %d)", x->rank, x->gpu);
		if (!strcmp(x->status, "signaled"))
			result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE, "rank_died", dev.buf,
				   "%s was killed by signal %d", dev.buf, x->signal);
		else if (!strcmp(x->status, "not started"))
			result_add(&res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "rank_not_started",
				   dev.buf, "%s could not be started", dev.buf);
		else if (!strcmp(x->status, "exited") && x->code && x->code != 4 && !r->nr_timeouts)
			result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE, "rank_failed", dev.buf,
				   "%s ended with exit code %d", dev.buf, x->code);
	}
	for (size_t i = 0; i < r->nr_errors; i++)
		result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE, "nccl_error", "", "%s",
			   r->errors[i]);
	if (!res.nr)
		result_add(&res, end->timed_out ? STATUS_FAIL : STATUS_UNKNOWN, ACTION_INVESTIGATE,
			   "helper", "", "vigil-nccl %s without a result",
			   end->describe ? end->describe : "ended");
	else if (end->timed_out && !r->nr_timeouts)
		result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE, "helper", "",
			   "vigil-nccl %s", end->describe ? end->describe : "timed out");
out:
	strbuf_release(&sb);
	strbuf_release(&dev);
	report_move_result(rep, &res);
}

/* ---- pairs ---- */

void np_run_init(struct np_run *r)
{
	memset(r, 0, sizeof(*r));
}

void np_run_release(struct np_run *r)
{
	for (size_t i = 0; i < r->nr_gpus; i++) {
		free(r->gpus[i].name);
		free(r->gpus[i].pci);
		free(r->gpus[i].uuid);
	}
	free(r->gpus);
	free(r->pairs);
	free(r->error_code);
	free(r->error);
	gs_procs_release(&r->procs);
	memset(r, 0, sizeof(*r));
}

int np_run_parse(struct np_run *r, const struct json_value *const *lines, size_t nr,
		 struct strbuf *err)
{
	for (size_t i = 0; i < nr; i++) {
		const struct json_value *v = lines[i];
		const char *type = json_get_string(v, "type");
		if (!type)
			continue;
		if (!strcmp(type, "start")) {
			r->started = true;
			free(r->procs.watch);
			r->procs.watch = jg_strdup(v, "processes_watch");
			gs_procs_parse(&r->procs, json_get(v, "other_processes"), -1, true, false);
		} else if (!strcmp(type, "processes")) {
			double g;
			if (json_get_number(v, "gpu", &g) && g >= 0 && g < 1e6)
				gs_procs_parse(&r->procs, json_get(v, "other_processes"), (int)g, false,
					       false);
		} else if (!strcmp(type, "gpu_info")) {
			ALLOC_GROW(r->gpus, r->nr_gpus + 1, r->alloc_gpus);
			struct gs_gpu *g = &r->gpus[r->nr_gpus++];
			memset(g, 0, sizeof(*g));
			g->index = (int)jg_num(v, "index", -1);
			g->name = jg_strdup(v, "name");
			g->pci = jg_strdup(v, "pci");
		} else if (!strcmp(type, "pair") || !strcmp(type, "pair_bidir")) {
			bool bi = !strcmp(type, "pair_bidir");
			double a, b;
			if (!json_get_number(v, bi ? "a" : "src", &a) ||
			    !json_get_number(v, bi ? "b" : "dst", &b))
				return error_set(err, "a pair result lacks its GPUs");
			ALLOC_GROW(r->pairs, r->nr + 1, r->alloc);
			struct np_pair *p = &r->pairs[r->nr++];
			memset(p, 0, sizeof(*p));
			p->src = (int)a;
			p->dst = (int)b;
			p->bidir = bi;
			p->p2p = jg_bool(v, "p2p", true);
			p->bytes = jg_u64(v, "bytes");
			p->gbps = jg_num(v, "gbps", 0);
			double m;
			p->miscompares = json_get_number(v, "miscompares", &m) ? (int64_t)m : -1;
		} else if (!strcmp(type, "error") && !r->error) {
			r->error_code = jg_strdup(v, "code");
			r->error = jg_strdup(v, "message");
		} else if (!strcmp(type, "end")) {
			r->ended = true;
		}
	}
	return 0;
}

static const char *pci_of(const struct np_run *r, int idx)
{
	for (size_t i = 0; i < r->nr_gpus; i++)
		if (r->gpus[i].index == idx && r->gpus[i].pci)
			return r->gpus[i].pci;
	return NULL;
}

void pairs_evaluate(const struct np_run *r, const struct gs_end *end,
		    const struct stress_limits *lim, struct report *rep)
{
	struct check_result res;
	struct strbuf dev = STRBUF_INIT;
	check_result_init(&res, "pairs");
	res.duration_ms = end->duration_ms;
	if (!end->ran) {
		result_add(&res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_helper", "",
			   "the GPU pair test needs CUDA: %s",
			   end->why_not ? end->why_not : "vigil-gpu could not run");
		goto out;
	}
	if (r->error_code && (!strcmp(r->error_code, "no_driver") ||
			      !strcmp(r->error_code, "old_driver"))) {
		const char *m = r->error ? r->error : r->error_code;
		if (r->error_code[0] == 'n')
			result_add(&res, STATUS_UNKNOWN, ACTION_LOAD_MODULE, "no_driver", "", "%s", m);
		else
			result_add(&res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "old_driver", "", "%s", m);
		goto out;
	}
	if (r->error_code && (!strcmp(r->error_code, "no_gpu") || !strcmp(r->error_code, "one_gpu"))) {
		result_add(&res, r->error_code[0] == 'o' ? STATUS_SKIPPED : STATUS_UNKNOWN,
			   ACTION_NONE, r->error_code, "", "%s", r->error ? r->error : "no GPU pairs");
		goto out;
	}
	size_t n = r->nr;
	double *v = xcalloc(n ? n : 1, sizeof(double)), *med = xcalloc(n ? n : 1, sizeof(double));
	int *slow_src = NULL, *slow_dst = NULL, maxg = 0;
	for (size_t i = 0; i < n; i++) {
		v[i] = r->pairs[i].bidir ? 0 : r->pairs[i].gbps;
		maxg = r->pairs[i].src > maxg ? r->pairs[i].src : maxg;
		maxg = r->pairs[i].dst > maxg ? r->pairs[i].dst : maxg;
	}
	stress_median_of_others(v, n, med);
	slow_src = xcalloc((size_t)maxg + 1, sizeof(int));
	slow_dst = xcalloc((size_t)maxg + 1, sizeof(int));
	int *pairs_of = xcalloc((size_t)maxg + 1, sizeof(int));
	/* which pairs are slow, first: a weak GPU leads the findings (and the reason) */
	for (size_t i = 0; i < n; i++) {
		const struct np_pair *p = &r->pairs[i];
		if (p->bidir)
			continue;
		pairs_of[p->src]++;
		pairs_of[p->dst]++;
		bool slow = p->miscompares == 0 &&
			    ((lim->pair_floor > 0 && p->gbps < lim->pair_floor) ||
			     (n > 2 && med[i] > 0 && p->gbps < (1 - lim->net_outlier_margin) * med[i]));
		if (slow) {
			slow_src[p->src]++;
			slow_dst[p->dst]++;
		}
	}
	/* every link of one GPU slow, while others are fine: the GPU, not a link */
	int slow_total = 0, uni = 0;
	for (int g = 0; g <= maxg; g++)
		slow_total += slow_src[g];
	for (size_t i = 0; i < n; i++)
		uni += !r->pairs[i].bidir;
	for (int g = 0; g <= maxg && uni > 2 && slow_total < uni; g++) {
		int s = slow_src[g] + slow_dst[g];
		if (pairs_of[g] && s == pairs_of[g]) {
			const char *pci = pci_of(r, g);
			strbuf_reset(&dev);
			strbuf_addf(&dev, pci ? "GPU %d (%s)" : "GPU %d", g, pci);
			result_add(&res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "weak_gpu", dev.buf,
				   "%s: every copy to and from it is slow (%d of %d): the GPU or its "
				   "NVLink ports, not one link",
				   dev.buf, s, pairs_of[g]);
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct np_pair *p = &r->pairs[i];
		strbuf_reset(&dev);
		strbuf_addf(&dev, "GPU %d %s GPU %d", p->src, p->bidir ? "<->" : "->", p->dst);
		struct finding *f;
		if (p->miscompares > 0) {
			f = result_add(&res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "pair_miscompare",
				       dev.buf, "%s: %lld words arrived wrong", dev.buf,
				       (long long)p->miscompares);
			f->severity = SEV_CRITICAL;
		} else if (p->miscompares < 0) {
			f = result_add(&res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "pair_unverified",
				       dev.buf, "%s: %.1f GB/s, but the copy could not be verified",
				       dev.buf, p->gbps);
		} else if (p->bidir) {
			f = result_add(&res, STATUS_OK, ACTION_NONE, "pair_bidir", dev.buf,
				       "%s: %.1f GB/s both ways at once", dev.buf, p->gbps);
		} else if (lim->pair_floor > 0 && p->gbps < lim->pair_floor) {
			f = result_add(&res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "pair_floor",
				       dev.buf, "%s: %.1f GB/s, below the floor %.0f%s%s%s", dev.buf,
				       p->gbps, lim->pair_floor, lim->model[0] ? " for " : "",
				       lim->model, p->p2p ? "" : " (no peer access: through the host)");
		} else if (n > 2 && med[i] > 0 && p->gbps < (1 - lim->net_outlier_margin) * med[i]) {
			f = result_add(&res, STATUS_FAIL, ACTION_INVESTIGATE, "pair_outlier", dev.buf,
				       "%s: %.1f GB/s, %.2fx the other pairs' %.1f (outlier beyond "
				       "%.0f%%)",
				       dev.buf, p->gbps, p->gbps / med[i], med[i],
				       lim->net_outlier_margin * 100);
		} else if (!p->p2p) {
			f = result_add(&res, STATUS_WARN, ACTION_INVESTIGATE, "pair_no_p2p", dev.buf,
				       "%s: %.1f GB/s without peer access (through the host)", dev.buf,
				       p->gbps);
		} else {
			f = result_add(&res, STATUS_OK, ACTION_NONE, "pair", dev.buf,
				       "%s: %.1f GB/s, data verified", dev.buf, p->gbps);
		}
		finding_detail_num(f, "src", p->src);
		finding_detail_num(f, "dst", p->dst);
		finding_detail_num(f, "gbps", p->gbps);
		finding_detail(f, "p2p", "%s", p->p2p ? "true" : "false");
		finding_detail_num(f, "miscompares", (double)p->miscompares);
		if (!p->bidir && lim->pair_floor > 0)
			finding_detail_num(f, "floor", lim->pair_floor);
	}
	free(v);
	free(med);
	free(slow_src);
	free(slow_dst);
	free(pairs_of);
	if (!res.nr)
		result_add(&res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "helper", "",
			   "vigil-gpu pairs %s without a result", end->describe ? end->describe : "ended");
	/* another process on a GPU shared its links and copy engines with the test */
	gs_procs_evaluate(&r->procs, "pair test", &res);
out:
	strbuf_release(&dev);
	report_move_result(rep, &res);
}
