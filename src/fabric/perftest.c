/*
 * perftest.c: perftest's outputs read and judged (see perftest.h). perftest writes its
 * --out_json file with dprintf() (linux-rdma/perftest, perftest_parameters.c, since 2021): an
 * object with "test_info" and "results"; bandwidth results carry MsgSize, n_iterations,
 * BW_peak, BW_average, MsgRate in the unit of the table (Gb/s under --report_gbits), latency
 * results t_min ... t_stdev, percentile_99, percentile_99.9 in µs. Builds older than that (and
 * a file that is not written because the run died) leave the text table, read here too.
 */
#include "perftest.h"
#include "../lib/json.h"

#include <math.h>

#define PT_MAX_GBPS 100000.0 /* far above any link: more is a misreading */
#define PT_MAX_US 1000000.0  /* a second of latency is not a latency test */

static void pt_result_clear(struct pt_result *r)
{
	memset(r, 0, sizeof(*r));
	r->cuda_device = -1;
}

static bool sane(double v, double max)
{
	return isfinite(v) && v >= 0 && v <= max;
}

/* A number of results; absent is allowed only when optional. */
static int json_num(const struct json_value *res, const char *key, bool required, double max,
		    double *out, struct strbuf *err)
{
	const struct json_value *v = json_get(res, key);
	if (!v) {
		if (required)
			return error_set(err, "no '%s' in its results", key);
		return 0;
	}
	if (v->type != JSON_NUMBER)
		return error_set(err, "'%s' is not a number", key);
	if (!sane(v->number, max))
		return error_set(err, "'%s' is %g, not a measurement", key, v->number);
	*out = v->number;
	return 1;
}

int pt_parse_json(const char *text, size_t len, enum pt_kind kind, struct pt_result *r,
		  struct strbuf *err)
{
	struct strbuf perr = STRBUF_INIT;
	int ret = -1;
	pt_result_clear(r);
	struct json_value *root = json_parse(text, len, &perr);
	if (!root) {
		error_set(err, "not JSON (%s)", perr.buf);
		goto out;
	}
	const struct json_value *res = json_get(root, "results");
	if (!res || res->type != JSON_OBJECT) {
		error_set(err, "no 'results' object");
		goto out;
	}
	const struct json_value *info = json_get(root, "test_info");
	if (info && info->type == JSON_OBJECT) {
		const char *dev = json_get_string(info, "Device");
		if (dev) {
			struct strbuf d = STRBUF_INIT;
			strbuf_add_excerpt(&d, dev, sizeof(r->device) - 8);
			strlcpy_v(r->device, d.buf, sizeof(r->device));
			strbuf_release(&d);
		}
		double cd;
		if (json_get_number(info, "cuda_device", &cd) && cd >= 0 && cd < 4096)
			r->cuda_device = (int)cd;
	}
	double v = 0;
	if (json_num(res, "MsgSize", false, 1e15, &v, err) < 0)
		goto out;
	r->bytes = (uint64_t)v;
	v = 0;
	if (json_num(res, "n_iterations", false, 1e15, &v, err) < 0)
		goto out;
	r->iters = (uint64_t)v;
	if (kind == PT_BW) {
		/* --output=bandwidth writes bw_avg alone */
		int h = json_num(res, "BW_average", false, PT_MAX_GBPS, &r->bw_avg, err);
		if (h == 0)
			h = json_num(res, "bw_avg", true, PT_MAX_GBPS, &r->bw_avg, err);
		if (h < 0 || json_num(res, "BW_peak", false, PT_MAX_GBPS, &r->bw_peak, err) < 0 ||
		    json_num(res, "MsgRate", false, 1e6, &r->msg_rate, err) < 0)
			goto out;
	} else {
		int h = json_num(res, "t_avg", false, PT_MAX_US, &r->t_avg, err);
		if (h == 0)
			h = json_num(res, "avg_lat", true, PT_MAX_US, &r->t_avg, err);
		if (h < 0)
			goto out;
		int p = json_num(res, "percentile_99", false, PT_MAX_US, &r->p99, err);
		if (p < 0 || json_num(res, "percentile_99.9", false, PT_MAX_US, &r->p999, err) < 0 ||
		    json_num(res, "t_min", false, PT_MAX_US, &r->t_min, err) < 0 ||
		    json_num(res, "t_max", false, PT_MAX_US, &r->t_max, err) < 0 ||
		    json_num(res, "t_typical", false, PT_MAX_US, &r->t_typical, err) < 0 ||
		    json_num(res, "t_stdev", false, PT_MAX_US, &r->t_stdev, err) < 0)
			goto out;
		r->have_p99 = p > 0;
	}
	r->have = true;
	ret = 0;
out:
	json_free(root);
	strbuf_release(&perr);
	return ret;
}

/* Up to max numbers from a line; how many, or -1 when something else is on it. */
static int line_numbers(const char *s, const char *end, double *out, int max)
{
	int n = 0;
	char buf[64];
	while (s < end) {
		while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		if (s == end)
			break;
		const char *t = s;
		while (t < end && *t != ' ' && *t != '\t' && *t != '\r')
			t++;
		if (n == max || (size_t)(t - s) >= sizeof(buf))
			return -1;
		memcpy(buf, s, (size_t)(t - s));
		buf[t - s] = '\0';
		char *e;
		double v = strtod(buf, &e);
		if (e == buf || *e || !isfinite(v))
			return -1;
		out[n++] = v;
		s = t;
	}
	return n;
}

static bool has(const char *s, const char *end, const char *needle)
{
	size_t nl = strlen(needle);
	for (const char *p = s; p + nl <= end; p++)
		if (!memcmp(p, needle, nl))
			return true;
	return false;
}

int pt_parse_text(const char *text, size_t len, enum pt_kind kind, struct pt_result *r,
		  struct strbuf *err)
{
	const char *p = text, *end = text + len;
	bool header = false, full = false, mib = false;
	double best[9];
	int nbest = 0;
	pt_result_clear(r);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if (has(p, le, "#bytes")) {
			header = false;
			if (kind == PT_BW && has(p, le, "BW average[")) {
				mib = !has(p, le, "BW average[Gb/sec]");
				header = !mib;
			} else if (kind == PT_LAT && has(p, le, "t_avg[usec]")) {
				header = true;
				full = has(p, le, "99% percentile[usec]");
			}
		} else if (header) {
			double v[9];
			int want = kind == PT_BW ? 5 : (full ? 9 : 4);
			int n = line_numbers(p, le, v, 9);
			/* the last row wins (-a prints one per size, the largest last) */
			if (n == want) {
				memcpy(best, v, sizeof(v));
				nbest = n;
			} else if (n != 0) {
				header = false; /* the table ended */
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!nbest) {
		if (mib)
			return error_set(err, "the bandwidth table is in MiB/sec, not Gb/sec "
					      "(--report_gbits was not taken)");
		return error_set(err, "no %s table with a result row",
				 kind == PT_BW ? "'BW average[Gb/sec]'" : "'t_avg[usec]'");
	}
	for (int i = 0; i < nbest; i++)
		if (!sane(best[i], i < 2 ? 1e15 : (kind == PT_BW ? PT_MAX_GBPS : PT_MAX_US)))
			return error_set(err, "a figure in the result row is %g, not a measurement",
					 best[i]);
	r->bytes = (uint64_t)best[0];
	r->iters = (uint64_t)best[1];
	if (kind == PT_BW) {
		r->bw_peak = best[2];
		r->bw_avg = best[3];
		r->msg_rate = best[4];
	} else if (full) {
		r->t_min = best[2];
		r->t_max = best[3];
		r->t_typical = best[4];
		r->t_avg = best[5];
		r->t_stdev = best[6];
		r->p99 = best[7];
		r->p999 = best[8];
		r->have_p99 = true;
	} else {
		r->t_avg = best[2];
	}
	r->have = true;
	return 0;
}

enum pt_cause pt_failure_cause(const char *out, size_t len)
{
	const char *end = out + len;
	if ((has(out, end, "unrecognized option") || has(out, end, "invalid option")) &&
	    has(out, end, "use_cuda"))
		return PT_CAUSE_NO_CUDA;
	if (has(out, end, "cuInit") || (has(out, end, "CUDA device") && has(out, end, "fail")) ||
	    has(out, end, "No CUDA"))
		return PT_CAUSE_NO_CUDA;
	if (has(out, end, "unrecognized option") || has(out, end, "invalid option") ||
	    has(out, end, "Invalid Command or flag"))
		return PT_CAUSE_USAGE;
	if (has(out, end, "Did not detect devices") ||
	    has(out, end, "Unable to find the Infiniband/RoCE device") ||
	    (has(out, end, "not found") && has(out, end, "IB device")) ||
	    has(out, end, "Couldn't get context for the device") ||
	    has(out, end, "No IB devices found"))
		return PT_CAUSE_NO_DEVICE;
	if (has(out, end, "Couldn't connect to") || has(out, end, "Unable to init the socket") ||
	    has(out, end, "Unable to open file descriptor for socket connection") ||
	    has(out, end, "Couldn't resolve") || has(out, end, "Name or service not known"))
		return PT_CAUSE_NO_PEER;
	if (has(out, end, "Completion with error") || has(out, end, "Failed status") ||
	    has(out, end, "Failed to modify QP") || has(out, end, "Couldn't post send") ||
	    has(out, end, "Error in run_iter") || has(out, end, "poll CQ failed") ||
	    has(out, end, "Problems with warm up"))
		return PT_CAUSE_TRANSPORT;
	return PT_CAUSE_OTHER;
}

const char *pt_cause_name(enum pt_cause c)
{
	switch (c) {
	case PT_CAUSE_NO_DEVICE: return "no_device";
	case PT_CAUSE_NO_PEER: return "no_peer";
	case PT_CAUSE_TRANSPORT: return "transport_error";
	case PT_CAUSE_NO_CUDA: return "no_cuda";
	case PT_CAUSE_USAGE: return "usage";
	case PT_CAUSE_OTHER: break;
	}
	return "other";
}

static void gpu_word(const struct pt_hca *h, char *buf, size_t n)
{
	if (h->cuda >= 0)
		snprintf(buf, n, "with GPUDirect (GPU %d)", h->cuda);
	else
		snprintf(buf, n, "from host memory");
}

/* A test that gave no figures: the finding that says why, by name. */
static void not_measured(const struct pt_hca *h, const struct pt_test *t, const char *what,
			 struct check_result *res)
{
	struct finding *f;
	const char *prog = t->program ? t->program : "perftest";
	switch (t->outcome) {
	case PT_MISSING:
		f = result_add(res, STATUS_UNKNOWN, ACTION_FIX_CONFIG, "perftest_missing", h->hca,
			       "%s is not installed (Debian package perftest): no %s measured",
			       prog, what);
		break;
	case PT_TIMED_OUT:
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "timed_out", h->hca,
			       "%s on %s %s: the peer never answered or the test hung", prog,
			       h->hca, t->why);
		break;
	case PT_NOT_UNDERSTOOD:
		f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "not_understood", h->hca,
			       "%s on %s: its output was not understood: %s", prog, h->hca, t->why);
		break;
	default:
		switch (t->cause) {
		case PT_CAUSE_NO_DEVICE:
			f = result_add(res, STATUS_UNKNOWN, ACTION_INSPECT_HARDWARE, "no_device",
				       h->hca, "%s does not see the RDMA device %s: %s", prog,
				       h->hca, t->why);
			break;
		case PT_CAUSE_NO_PEER:
			f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "no_peer", h->hca,
				       "%s on %s: the peer never answered: %s", prog, h->hca,
				       t->why);
			break;
		case PT_CAUSE_TRANSPORT:
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "ib_error",
				       h->hca, "%s on %s failed under load: %s", prog, h->hca,
				       t->why);
			break;
		case PT_CAUSE_NO_CUDA:
			f = result_add(res, STATUS_UNKNOWN, ACTION_FIX_CONFIG, "no_gpudirect",
				       h->hca, "%s could not use GPU %d (--use_cuda): %s; "
				       "'--no-cuda' measures host memory", prog, h->cuda, t->why);
			break;
		default:
			f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "perftest_failed",
				       h->hca, "%s on %s failed: %s", prog, h->hca, t->why);
			break;
		}
		finding_detail(f, "cause", "%s", pt_cause_name(t->cause));
	}
	finding_detail(f, "test", "%s", what);
}

void pt_evaluate(const struct pt_hca *h, const struct pt_floors *fl, struct check_result *res)
{
	char gw[48];
	gpu_word(h, gw, sizeof(gw));
	if (h->cuda_wanted) {
		struct finding *f = result_add(
			res, STATUS_WARN, ACTION_FIX_CONFIG, "no_gpudirect", h->hca,
			"this perftest has no --use_cuda: %s measured from host memory, not "
			"GPUDirect (a CUDA build of perftest measures what training uses)",
			h->hca);
		(void)f;
	}
	const struct pt_test *b = &h->bw;
	if (h->server) {
		const struct pt_test *t[2] = { b, &h->lat };
		for (int i = 0; i < 2; i++) {
			if (t[i]->outcome == PT_RAN)
				result_add(res, STATUS_OK, ACTION_NONE, "ib_served", h->hca,
					   "%s: served %s for the peer", h->hca, t[i]->program);
			else if (t[i]->outcome != PT_NOT_RUN)
				not_measured(h, t[i], i ? "latency" : "bandwidth", res);
		}
		return;
	}
	if (b->outcome == PT_RAN && b->r.have) {
		bool slow = b->r.bw_avg < fl->bw_gbps;
		struct finding *f;
		if (slow)
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "ib_bw", h->hca,
				       "%s: %.1f Gb/s %s, below the floor of %.0f Gb/s", h->hca,
				       b->r.bw_avg, gw, fl->bw_gbps);
		else
			f = result_add(res, STATUS_OK, ACTION_NONE, "ib_bw", h->hca,
				       "%s: %.1f Gb/s %s (floor %.0f)", h->hca, b->r.bw_avg, gw,
				       fl->bw_gbps);
		finding_detail_num(f, "bw_gbps", b->r.bw_avg);
		finding_detail_num(f, "bw_peak_gbps", b->r.bw_peak);
		finding_detail_num(f, "floor_gbps", fl->bw_gbps);
		finding_detail_num(f, "bytes", (double)b->r.bytes);
		finding_detail_num(f, "cuda_gpu", h->cuda);
		finding_detail(f, "verdict", "%s", slow ? "slow" : "ok");
	} else if (b->outcome != PT_NOT_RUN) {
		not_measured(h, b, "bandwidth", res);
	}
	const struct pt_test *l = &h->lat;
	if (l->outcome == PT_RAN && l->r.have) {
		double v = l->r.have_p99 ? l->r.p99 : l->r.t_avg;
		const char *which = l->r.have_p99 ? "p99" : "average";
		bool judged = fl->lat_p99_us > 0;
		bool slow = judged && v > fl->lat_p99_us;
		struct finding *f;
		if (slow)
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "ib_lat", h->hca,
				       "%s: read latency %s %.2f us, over the ceiling of %.2f us",
				       h->hca, which, v, fl->lat_p99_us);
		else
			f = result_add(res, STATUS_OK, ACTION_NONE, "ib_lat", h->hca,
				       "%s: read latency %s %.2f us%s", h->hca, which, v,
				       judged ? "" : " (not judged)");
		finding_detail_num(f, "lat_us", v);
		finding_detail(f, "lat_stat", "%s", which);
		finding_detail_num(f, "lat_avg_us", l->r.t_avg);
		if (judged)
			finding_detail_num(f, "ceiling_us", fl->lat_p99_us);
		finding_detail(f, "verdict", "%s", slow ? "slow" : "ok");
	} else if (l->outcome != PT_NOT_RUN) {
		not_measured(h, l, "latency", res);
	}
}
