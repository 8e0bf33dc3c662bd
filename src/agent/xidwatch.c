/* xidwatch.c: the record of NVML's Xid events and the judgement of kernel Xid lines (xidwatch.h). */
#include "xidwatch.h"
#include "../lib/fileio.h"
#include "../logs/xid.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

double xidwatch_mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void xidwatch_init(struct xid_watch *w, const char *boot_id)
{
	memset(w, 0, sizeof(*w));
	strlcpy_v(w->boot_id, boot_id ? boot_id : "", sizeof(w->boot_id));
	w->rc = NVML_ERROR_UNINITIALIZED;
}

void xidwatch_release(struct xid_watch *w)
{
	free(w->error);
	w->error = NULL;
}

static struct xidwatch_gpu *gpu_get(struct xid_watch *w, const char *bdf, bool add)
{
	for (size_t i = 0; i < w->nr_gpus; i++)
		if (!strcmp(w->gpus[i].bdf, bdf))
			return &w->gpus[i];
	if (!add || !bdf[0] || w->nr_gpus == XIDWATCH_MAX_GPUS)
		return NULL;
	struct xidwatch_gpu *g = &w->gpus[w->nr_gpus++];
	memset(g, 0, sizeof(*g));
	strlcpy_v(g->bdf, bdf, sizeof(g->bdf));
	return g;
}

static const struct xidwatch_gpu *gpu_find(const struct xid_watch *w, const char *bdf)
{
	return gpu_get((struct xid_watch *)w, bdf, false);
}

/* A window from..to; one that starts where this worker's watch began is extended. When full,
 * the oldest goes: the record then claims less watched time, never more. */
static void window_note(struct xidwatch_gpu *g, double from, double to)
{
	if (!(to >= from))
		return;
	for (size_t i = 0; i < g->nr_win; i++)
		if (g->win[i].from == from) {
			if (to > g->win[i].to)
				g->win[i].to = to;
			return;
		}
	if (g->nr_win == XIDWATCH_MAX_WINDOWS) {
		size_t old = 0;
		for (size_t i = 1; i < g->nr_win; i++)
			if (g->win[i].from < g->win[old].from)
				old = i;
		g->win[old] = g->win[--g->nr_win];
	}
	g->win[g->nr_win].from = from;
	g->win[g->nr_win++].to = to;
}

static void event_note(struct xid_watch *w, const char *bdf, unsigned xid, uint64_t count,
		       double first, double last)
{
	for (size_t i = 0; i < w->nr_ev; i++) {
		struct xidwatch_event *e = &w->ev[i];
		if (e->xid != xid || strcmp(e->bdf, bdf))
			continue;
		e->count = e->count + count < e->count ? UINT64_MAX : e->count + count;
		if (first < e->first)
			e->first = first;
		if (last > e->last)
			e->last = last;
		return;
	}
	if (w->nr_ev == XIDWATCH_MAX_EVENTS) {
		w->dropped += count;
		return;
	}
	struct xidwatch_event *e = &w->ev[w->nr_ev++];
	memset(e, 0, sizeof(*e));
	strlcpy_v(e->bdf, bdf, sizeof(e->bdf));
	e->xid = xid;
	e->count = count;
	e->first = first;
	e->last = last;
}

void xidwatch_merge(struct xid_watch *w, const struct nvml_xid_drain *d)
{
	w->rc = d->rc;
	w->drained = true;
	w->dropped += d->dropped;
	w->foreign += d->foreign;
	if (d->rc)
		return;
	/* the moment the drain took events up to: unknown when it stopped short */
	bool complete = !d->wait_rc && !d->flooded && d->at >= d->since;
	double when = complete ? d->at : d->since;
	for (size_t i = 0; i < d->nr_ev && i < NVML_XID_DISTINCT_MAX; i++)
		if (d->ev[i].bdf[0])
			event_note(w, d->ev[i].bdf, d->ev[i].xid, d->ev[i].count, when, when);
	for (size_t i = 0; i < d->nr_gpus && i < NVML_MAX_GPUS_WATCHED; i++) {
		struct xidwatch_gpu *g = gpu_get(w, d->gpus[i].bdf, true);
		if (!g)
			continue;
		g->rc = d->gpus[i].rc;
		if (!g->rc && complete)
			window_note(g, d->since, d->at);
	}
}

/* ---- the worker's answer ---- */

void xidwatch_drain_json(const struct nvml_xid_drain *d, struct strbuf *out)
{
	struct json_writer jw;
	json_writer_init(&jw, out, false);
	json_open_object(&jw);
	json_key(&jw, "rc");
	json_int(&jw, d->rc);
	json_key(&jw, "wait_rc");
	json_int(&jw, d->wait_rc);
	json_key(&jw, "since");
	json_fixed(&jw, d->since, 3);
	json_key(&jw, "at");
	json_fixed(&jw, d->at, 3);
	json_key(&jw, "flooded");
	json_bool(&jw, d->flooded);
	json_key(&jw, "dropped");
	json_uint(&jw, d->dropped);
	json_key(&jw, "foreign");
	json_uint(&jw, d->foreign);
	json_key(&jw, "gpus");
	json_open_array(&jw);
	for (size_t i = 0; i < d->nr_gpus; i++) {
		json_open_object(&jw);
		json_key(&jw, "bdf");
		json_string(&jw, d->gpus[i].bdf);
		json_key(&jw, "rc");
		json_int(&jw, d->gpus[i].rc);
		json_close_object(&jw);
	}
	json_close_array(&jw);
	json_key(&jw, "events");
	json_open_array(&jw);
	for (size_t i = 0; i < d->nr_ev; i++) {
		json_open_object(&jw);
		json_key(&jw, "bdf");
		json_string(&jw, d->ev[i].bdf);
		json_key(&jw, "xid");
		json_uint(&jw, d->ev[i].xid);
		json_key(&jw, "count");
		json_uint(&jw, d->ev[i].count);
		json_close_object(&jw);
	}
	json_close_array(&jw);
	json_close_object(&jw);
}

static bool get_num(const struct json_value *o, const char *key, double lo, double hi, double *out)
{
	double v;
	if (!json_get_number(o, key, &v) || !isfinite(v) || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool get_bdf(const struct json_value *o, char out[32])
{
	const char *s = json_get_string(o, "bdf");
	if (!s || strlen(s) >= 32)
		return false;
	/* only what a PCI address is made of: it ends up in messages */
	for (const char *p = s; *p; p++)
		if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
			return false;
	strlcpy_v(out, s, 32);
	return true;
}

int xidwatch_drain_from_json(const struct json_value *v, struct nvml_xid_drain *d,
			     struct strbuf *err)
{
	double n;
	memset(d, 0, sizeof(*d));
	if (!v || v->type != JSON_OBJECT)
		return error_set(err, "the drain is not an object");
	if (!get_num(v, "rc", -1, 1e6, &n))
		return error_set(err, "the drain has no rc");
	d->rc = (int)n;
	if (get_num(v, "wait_rc", -1, 1e6, &n))
		d->wait_rc = (int)n;
	if (!get_num(v, "since", 0, 1e12, &d->since) || !get_num(v, "at", 0, 1e12, &d->at))
		return error_set(err, "the drain has no times");
	const struct json_value *b = json_get(v, "flooded");
	d->flooded = b && b->type == JSON_BOOL && b->boolean;
	if (get_num(v, "dropped", 0, 1.8e19, &n))
		d->dropped = (uint64_t)n;
	if (get_num(v, "foreign", 0, 1.8e19, &n))
		d->foreign = (uint64_t)n;
	const struct json_value *g = json_get(v, "gpus"), *e = json_get(v, "events");
	if (!g || g->type != JSON_ARRAY || !e || e->type != JSON_ARRAY)
		return error_set(err, "the drain has no gpus or events");
	for (size_t i = 0; i < g->nr && d->nr_gpus < NVML_MAX_GPUS_WATCHED; i++) {
		struct nvml_xid_gpu *x = &d->gpus[d->nr_gpus];
		if (!get_bdf(g->items[i], x->bdf) || !get_num(g->items[i], "rc", -1, 1e6, &n))
			return error_set(err, "a GPU of the drain is not bdf and rc");
		x->rc = (int)n;
		d->nr_gpus++;
	}
	for (size_t i = 0; i < e->nr && d->nr_ev < NVML_XID_DISTINCT_MAX; i++) {
		struct nvml_xid_event *x = &d->ev[d->nr_ev];
		double c;
		if (!get_bdf(e->items[i], x->bdf) || !get_num(e->items[i], "xid", 0, 1e6, &n) ||
		    !get_num(e->items[i], "count", 1, 1.8e19, &c))
			return error_set(err, "an event of the drain is not bdf, xid and count");
		x->xid = (unsigned)n;
		x->count = (uint64_t)c;
		d->nr_ev++;
	}
	return 0;
}

/* ---- the file ---- */

void xidwatch_serialize(const struct xid_watch *w, struct strbuf *out)
{
	struct json_writer jw;
	json_writer_init(&jw, out, true);
	json_open_object(&jw);
	json_key(&jw, "version");
	json_int(&jw, 1);
	json_key(&jw, "boot_id");
	json_string(&jw, w->boot_id);
	json_key(&jw, "rc");
	json_int(&jw, w->rc);
	json_key(&jw, "dropped");
	json_uint(&jw, w->dropped);
	json_key(&jw, "foreign");
	json_uint(&jw, w->foreign);
	json_key(&jw, "gpus");
	json_open_array(&jw);
	for (size_t i = 0; i < w->nr_gpus; i++) {
		const struct xidwatch_gpu *g = &w->gpus[i];
		json_open_object(&jw);
		json_key(&jw, "bdf");
		json_string(&jw, g->bdf);
		json_key(&jw, "rc");
		json_int(&jw, g->rc);
		json_key(&jw, "windows");
		json_open_array(&jw);
		for (size_t j = 0; j < g->nr_win; j++) {
			json_open_array(&jw);
			json_fixed(&jw, g->win[j].from, 3);
			json_fixed(&jw, g->win[j].to, 3);
			json_close_array(&jw);
		}
		json_close_array(&jw);
		json_close_object(&jw);
	}
	json_close_array(&jw);
	json_key(&jw, "events");
	json_open_array(&jw);
	for (size_t i = 0; i < w->nr_ev; i++) {
		const struct xidwatch_event *e = &w->ev[i];
		json_open_object(&jw);
		json_key(&jw, "bdf");
		json_string(&jw, e->bdf);
		json_key(&jw, "xid");
		json_uint(&jw, e->xid);
		json_key(&jw, "count");
		json_uint(&jw, e->count);
		json_key(&jw, "first");
		json_fixed(&jw, e->first, 3);
		json_key(&jw, "last");
		json_fixed(&jw, e->last, 3);
		json_close_object(&jw);
	}
	json_close_array(&jw);
	json_close_object(&jw);
	strbuf_addch(out, '\n');
}

int xidwatch_parse(struct xid_watch *w, const char *text, size_t len, double mono_now,
		   struct strbuf *err)
{
	char boot[sizeof(w->boot_id)];
	double n;
	int ret = -1;
	strlcpy_v(boot, w->boot_id, sizeof(boot));
	struct json_value *v = json_parse(text, len, err);
	if (!v)
		return -1;
	const char *b = json_get_string(v, "boot_id");
	const struct json_value *g = json_get(v, "gpus"), *e = json_get(v, "events");
	if (v->type != JSON_OBJECT || !get_num(v, "version", 1, 1, &n) || !b || !g ||
	    g->type != JSON_ARRAY || !e || e->type != JSON_ARRAY) {
		error_set(err, "not a record of NVML's Xid events (version 1)");
		goto out;
	}
	if (strcmp(b, boot)) { /* another boot's: its times are another clock's */
		ret = 0;
		goto out;
	}
	if (get_num(v, "rc", -1, 1e6, &n))
		w->rc = (int)n;
	if (get_num(v, "dropped", 0, 1.8e19, &n))
		w->dropped = (uint64_t)n;
	if (get_num(v, "foreign", 0, 1.8e19, &n))
		w->foreign = (uint64_t)n;
	/* nothing in it may claim a moment this boot's clock has not reached */
	double hi = mono_now + 1;
	for (size_t i = 0; i < g->nr; i++) {
		char bdf[32];
		const struct json_value *gi = g->items[i], *ws = json_get(gi, "windows");
		if (!get_bdf(gi, bdf) || !bdf[0] || !get_num(gi, "rc", -1, 1e6, &n) || !ws ||
		    ws->type != JSON_ARRAY) {
			error_set(err, "GPU %zu is not bdf, rc and windows", i + 1);
			goto bad;
		}
		struct xidwatch_gpu *x = gpu_get(w, bdf, true);
		if (!x) {
			error_set(err, "more than %d GPUs, or one twice", XIDWATCH_MAX_GPUS);
			goto bad;
		}
		x->rc = (int)n;
		for (size_t j = 0; j < ws->nr; j++) {
			const struct json_value *p = ws->items[j];
			if (p->type != JSON_ARRAY || p->nr != 2 || p->items[0]->type != JSON_NUMBER ||
			    p->items[1]->type != JSON_NUMBER || !(p->items[0]->number >= 0) ||
			    !(p->items[1]->number >= p->items[0]->number) ||
			    !(p->items[1]->number <= hi)) {
				error_set(err, "a window of GPU %s is not [from, to] in this boot",
					  bdf);
				goto bad;
			}
			window_note(x, p->items[0]->number, p->items[1]->number);
		}
	}
	for (size_t i = 0; i < e->nr; i++) {
		char bdf[32];
		double xid, count, first, last;
		const struct json_value *ei = e->items[i];
		if (!get_bdf(ei, bdf) || !bdf[0] || !get_num(ei, "xid", 0, 1e6, &xid) ||
		    !get_num(ei, "count", 1, 1.8e19, &count) || !get_num(ei, "first", 0, hi, &first) ||
		    !get_num(ei, "last", first, hi, &last)) {
			error_set(err, "event %zu is not bdf, xid, count, first and last", i + 1);
			goto bad;
		}
		event_note(w, bdf, (unsigned)xid, (uint64_t)count, first, last);
	}
	ret = 0;
	goto out;
bad:
	xidwatch_init(w, boot);
out:
	json_free(v);
	return ret;
}

struct collect_text {
	struct strbuf *sb;
};

static bool take(void *arg, const char *data, size_t len)
{
	strbuf_add(((struct collect_text *)arg)->sb, data, len);
	return true;
}

void xidwatch_load(struct xid_watch *w, const char *path, double mono_now)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	struct collect_text ct = { &text };
	/* root's own directory, but a link or a FIFO planted there is read as nothing */
	int r = read_file_stream(path, READ_STREAM_NOFOLLOW | READ_STREAM_MISSING_OK,
				 XIDWATCH_FILE_MAX, take, &ct, &err);
	if (r == READ_MISSING)
		goto out;
	if (r == READ_OK && xidwatch_parse(w, text.buf, text.len, mono_now, &err) == 0)
		goto out;
	struct strbuf bad = STRBUF_INIT, msg = STRBUF_INIT;
	strbuf_addf(&bad, "%s.damaged", path);
	rename(path, bad.buf);
	strbuf_addf(&msg, "NVML's Xid record '%s' set aside as '%s' (%s): started anew", path,
		    bad.buf, err.buf);
	free(w->error);
	w->error = strbuf_detach(&msg, NULL);
	strbuf_release(&bad);
out:
	strbuf_release(&text);
	strbuf_release(&err);
}

int xidwatch_save(const struct xid_watch *w, const char *path, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	xidwatch_serialize(w, &text);
	int r = write_file_atomic(path, text.buf, text.len, 0644, err);
	strbuf_release(&text);
	return r;
}

/* ---- the judgement ---- */

static const char *detail_get(const struct finding *f, const char *key)
{
	for (size_t i = 0; i < f->nr_details; i++)
		if (!strcmp(f->details[i].key, key))
			return f->details[i].value;
	return NULL;
}

/* "GPU 0000:18:00.0" or "GPU 0000:18:00.0 (GPU-uuid)": the address, or false. */
static bool finding_bdf(const struct finding *f, char out[32])
{
	const char *d = f->device;
	if (!d || strncmp(d, "GPU ", 4))
		return false;
	d += 4;
	size_t n = strcspn(d, " ");
	if (!n || n >= 32)
		return false;
	memcpy(out, d, n);
	out[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)out[i]) && out[i] != ':' && out[i] != '.')
			return false;
	return true;
}

/* The kernel check's "123.456 s after boot (line N)": the stamp, or false (no such time). */
static bool boot_time(const struct finding *f, const char *key, double *t)
{
	const char *s = detail_get(f, key);
	char *end;
	if (!s)
		return false;
	double v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0 || !starts_with(end, " s after boot"))
		return false;
	*t = v;
	return true;
}

static const struct xidwatch_event *event_find(const struct xid_watch *w, const char *bdf,
					       unsigned xid)
{
	for (size_t i = 0; i < w->nr_ev; i++)
		if (w->ev[i].xid == xid && !strcmp(w->ev[i].bdf, bdf))
			return &w->ev[i];
	return NULL;
}

static const struct xidwatch_window *window_over(const struct xidwatch_gpu *g, double a, double b)
{
	for (size_t i = 0; i < g->nr_win; i++) {
		/* printk's clock (sched_clock) and CLOCK_MONOTONIC (NTP-slewed) part by some ppm of
		 * the uptime: a line stamped just after the watch began may be from before it */
		double start = g->win[i].from * (1 + XIDWATCH_DRIFT_PPM / 1e6) + XIDWATCH_MARGIN_S;
		if (a >= start && b <= g->win[i].to - XIDWATCH_MARGIN_S)
			return &g->win[i];
	}
	return NULL;
}

static bool finding_xid(const struct finding *f, unsigned *xid)
{
	const char *s = detail_get(f, "xid");
	char *end;
	/* "fallen off the bus" with no Xid logged is the kernel check's Xid 79 (its policy) */
	if (f->code && !strcmp(f->code, "gpu_off_bus")) {
		*xid = 79;
		return true;
	}
	if (!f->code || strcmp(f->code, "xid") || !s)
		return false;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s || *end || v > 1000000)
		return false;
	*xid = (unsigned)v;
	return true;
}

/* Demote a kernel Xid finding NVML did not confirm to unknown, saying why. */
static void make_doubtful(struct finding *f, const char *bdf, unsigned xid,
			  const struct xidwatch_window *win)
{
	struct strbuf msg = STRBUF_INIT;
	finding_detail(f, "kernel_log_says", "%s", f->message);
	finding_detail(f, "nvml", "watching GPU %s from %.3f to %.3f s after boot; no Xid %u "
		       "reported", bdf, win->from, win->to, xid);
	if (!strcmp(f->code, "gpu_off_bus"))
		strbuf_addf(&msg, "GPU %s fallen off the bus", bdf);
	else
		strbuf_addf(&msg, "Xid %u on GPU %s", xid, bdf);
	strbuf_addf(&msg, " appears in the kernel log but NVML, watching it since %.0f s after "
		    "boot, never reported it and reads the GPU healthy: doubtful (another process "
		    "may have printed it)", win->from);
	free(f->message);
	f->message = strbuf_detach(&msg, NULL);
	f->status = STATUS_UNKNOWN;
	f->severity = severity_default(STATUS_UNKNOWN);
	f->action = ACTION_INVESTIGATE;
}

static void result_restatus(struct check_result *c)
{
	if (c->error)
		return;
	c->status = STATUS_OK;
	for (size_t j = 0; j < c->nr; j++)
		if (c->findings[j].status > c->status)
			c->status = c->findings[j].status;
}

static struct check_result *result_named(struct report *rep, const char *name)
{
	for (size_t i = 0; i < rep->nr; i++)
		if (!strcmp(rep->results[i].name, name))
			return &rep->results[i];
	return NULL;
}

/* Whether the kernel result has a finding (of any status) for this Xid on this GPU. */
static bool log_has(const struct check_result *k, const char *bdf, unsigned xid)
{
	char b[32];
	unsigned x;
	for (size_t j = 0; k && j < k->nr; j++)
		if (finding_xid(&k->findings[j], &x) && x == xid &&
		    finding_bdf(&k->findings[j], b) && !strcmp(b, bdf))
			return true;
	return false;
}

/*
 * Whether NVML's own readings this cycle back the line or cannot be trusted to contradict it: the
 * gpu check could not tell (a call stuck in the driver, as after a GPU falls off the bus), or it
 * finds that very GPU unhealthy (lost, say: a lost GPU's Xid may never reach the event set).
 */
static bool nvml_backs(const struct report *rep, const char *bdf)
{
	const struct check_result *g = result_named((struct report *)rep, "gpu");
	if (!g || g->status == STATUS_UNKNOWN)
		return true;
	for (size_t j = 0; j < g->nr; j++) {
		const struct finding *f = &g->findings[j];
		if (f->status >= STATUS_WARN && f->device && strstr(f->device, bdf))
			return true;
	}
	return false;
}

/*
 * A sticky Xid NVML reported, that the log says a GPU reset cleared: the reset stands only if
 * NVML's watch of that GPU broke since the report. The worker holds the GPU open through NVML,
 * and a GPU with an NVML client cannot be reset (nvidia-smi -r wants none: docs/SLURM.md), so
 * while the watch that took the report has not ended there was no reset, whatever a line says.
 */
static const struct xidwatch_window *reset_is_doubtful(const struct xidwatch_gpu *g,
							const struct xidwatch_event *e)
{
	const struct xidwatch_window *newest = NULL;
	for (size_t i = 0; g && i < g->nr_win; i++)
		if (!newest || g->win[i].from > newest->from)
			newest = &g->win[i];
	return newest && !g->rc && newest->from <= e->first && newest->to >= e->last ? newest
										   : NULL;
}

static void restore_sticky(struct finding *f, unsigned xid, const struct xidwatch_gpu *g,
			   const struct xidwatch_window *win)
{
	struct xid_policy pol;
	struct strbuf msg = STRBUF_INIT;
	xid_classify((int)xid, -1, -1, &pol);
	if (!pol.sticky || pol.status < STATUS_WARN)
		return;
	finding_detail(f, "kernel_log_says", "%s", f->message);
	finding_detail(f, "nvml", "reported by NVML, which has watched GPU %s without a break since "
		       "%.3f s after boot: no reset could have happened", g->bdf, win->from);
	strbuf_addf(&msg, "Xid %u on GPU %s: %s (reported by NVML; the GPU reset the kernel log "
		    "shows after it is doubtful)%s%s", xid, g->bdf, pol.meaning,
		    xid_action_text(pol.action)[0] ? "; " : "", xid_action_text(pol.action));
	free(f->message);
	f->message = strbuf_detach(&msg, NULL);
	f->status = pol.status;
	f->action = pol.action;
	f->severity = pol.severity;
}

/*
 * Whether NVML watched every GPU it knows, each with its events, all through first..last: then
 * an address none of them has is no GPU of this host that NVML could see (a GPU that fell off the
 * bus before the watch began is still one the gpu check misses: nvml_backs() then holds).
 */
static bool watched_all(const struct xid_watch *w, double first, double last)
{
	if (!w->nr_gpus || w->rc)
		return false;
	for (size_t i = 0; i < w->nr_gpus; i++)
		if (w->gpus[i].rc || !window_over(&w->gpus[i], first, last))
			return false;
	return true;
}

static void make_stranger(struct finding *f, const char *bdf, unsigned xid)
{
	struct strbuf msg = STRBUF_INIT;
	finding_detail(f, "kernel_log_says", "%s", f->message);
	finding_detail(f, "nvml", "watching every GPU it knows at the time, none at %s", bdf);
	strbuf_addf(&msg, "Xid %u on GPU %s appears in the kernel log but NVML, watching every GPU "
		    "of this host then, knows no GPU at that address: doubtful (another process may "
		    "have printed it)", xid, bdf);
	free(f->message);
	f->message = strbuf_detach(&msg, NULL);
	f->status = STATUS_UNKNOWN;
	f->severity = severity_default(STATUS_UNKNOWN);
	f->action = ACTION_INVESTIGATE;
}

unsigned xidwatch_judge(const struct xid_watch *w, struct report *rep, double mono_now,
			double window_s)
{
	unsigned changed = 0;
	struct check_result *k = result_named(rep, "kernel");
	for (size_t j = 0; k && j < k->nr; j++) {
		struct finding *f = &k->findings[j];
		char bdf[32];
		unsigned xid;
		double first, last;
		const char *state = detail_get(f, "state");
		if (f->status == STATUS_OK && state && starts_with(state, "cleared by a GPU reset") &&
		    finding_xid(f, &xid) && finding_bdf(f, bdf)) {
			const struct xidwatch_event *e = event_find(w, bdf, xid);
			const struct xidwatch_gpu *g = gpu_find(w, bdf);
			const struct xidwatch_window *win = e ? reset_is_doubtful(g, e) : NULL;
			if (win) {
				enum status before = f->status;
				restore_sticky(f, xid, g, win);
				changed += f->status != before;
			}
			continue;
		}
		if (f->status < STATUS_WARN || f->status == STATUS_UNKNOWN || !finding_xid(f, &xid) ||
		    !finding_bdf(f, bdf))
			continue;
		const struct xidwatch_event *e = event_find(w, bdf, xid);
		if (e) {
			finding_detail(f, "nvml", "reported by NVML (%llu times, by %.3f s after boot)",
				       (unsigned long long)e->count, e->last);
			continue;
		}
		const struct xidwatch_gpu *g = gpu_find(w, bdf);
		if (!g && boot_time(f, "first", &first) && boot_time(f, "last", &last) &&
		    last <= mono_now && watched_all(w, first, last) && !nvml_backs(rep, bdf)) {
			make_stranger(f, bdf, xid);
			changed++;
			continue;
		}
		if (!g || g->rc) {
			finding_detail(f, "nvml", "%s", !g ? "GPU not watched by NVML"
				       : g->rc == NVML_ERROR_NOT_SUPPORTED
					       ? "NVML has no Xid events for this GPU"
					       : "NVML could not watch this GPU");
			continue;
		}
		const struct xidwatch_window *win = NULL;
		if (!boot_time(f, "first", &first) || !boot_time(f, "last", &last) ||
		    !(win = window_over(g, first, last)) || last > mono_now) {
			finding_detail(f, "nvml", "not watched by NVML when it was logged");
			continue;
		}
		if (nvml_backs(rep, bdf)) {
			finding_detail(f, "nvml", "not reported by NVML, but NVML's own readings of "
				       "this GPU are not healthy this cycle");
			continue;
		}
		make_doubtful(f, bdf, xid, win);
		changed++;
	}
	if (k && changed)
		result_restatus(k);

	/* what NVML reported and the log no longer shows */
	struct check_result *into = k ? k : result_named(rep, "gpu");
	unsigned added = 0;
	for (size_t i = 0; into && i < w->nr_ev; i++) {
		const struct xidwatch_event *e = &w->ev[i];
		struct xid_policy pol;
		if (log_has(k, e->bdf, e->xid))
			continue;
		xid_classify((int)e->xid, -1, -1, &pol);
		bool recent = mono_now - e->last <= window_s;
		if (pol.status < STATUS_WARN || (!pol.sticky && !recent))
			continue;
		struct strbuf dev = STRBUF_INIT;
		strbuf_addf(&dev, "GPU %s", e->bdf);
		struct finding *f = result_add(into, pol.status, pol.action, "xid", dev.buf,
					       "Xid %u on GPU %s: %s (reported by NVML; not in the "
					       "kernel log)%s%s", e->xid, e->bdf, pol.meaning,
					       xid_action_text(pol.action)[0] ? "; " : "",
					       xid_action_text(pol.action));
		f->severity = pol.severity;
		finding_detail_num(f, "xid", e->xid);
		finding_detail_num(f, "count", (double)e->count);
		finding_detail(f, "nvml", "reported by NVML from %.3f to %.3f s after boot", e->first,
			       e->last);
		finding_detail(f, "state", "%s", pol.sticky ? "sticky until reboot (NVML's record)"
							     : "recent");
		if (pol.then != ACTION_NONE)
			finding_detail(f, "then", "%s", action_name(pol.then));
		if (!pol.known)
			finding_detail(f, "catalog", "Xid %u is not in vigil's catalog", e->xid);
		strbuf_release(&dev);
		added++;
	}
	if (added)
		result_restatus(into);
	changed += added;
	return changed;
}
