/*
 * runreport.c: a supervised run's journal read back into attempts, faults, steps redone and
 * ETTR (see runreport.h for the definitions); runreport_out.c writes it as text and JSON,
 * runreport_html.c as an HTML page.
 */
#include "runreport.h"
#include "journal.h"
#include "../lib/fileio.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A time outside [0, 1e11] s (year 5138) is not one a journal writes: the line is damaged. */
#define RR_T_MAX 1e11

static const char *const fault_classes[] = { "crash", "hang",  "startup_timeout", "slow",
					     "sick",  "lost",  "cancel",          "supervisor_restart", "sdc" };

bool runreport_is_fault(const char *cls)
{
	for (size_t i = 0; cls && i < ARRAY_SIZE(fault_classes); i++)
		if (!strcmp(cls, fault_classes[i]))
			return true;
	return false;
}

/* ---- reading ---- */

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static bool get_uint(const struct json_value *o, const char *key, uint64_t *out)
{
	const struct json_value *v = json_get(o, key);
	if (!v || v->type != JSON_NUMBER || !(v->number >= 0) || v->number > 9007199254740991.0 ||
	    v->number != floor(v->number))
		return false;
	*out = (uint64_t)v->number;
	return true;
}

/* A time or a duration: finite and within [lo, RR_T_MAX]; else NAN. */
static double get_time(const struct json_value *o, const char *key, double lo)
{
	double d;
	if (!json_get_number(o, key, &d) || !isfinite(d) || d < lo || d > RR_T_MAX)
		return NAN;
	return d;
}

struct reader {
	struct run_report *r;
	struct strbuf line;
	bool overlong;
	size_t cur; /* the attempt the last record named (a cache: records come in runs) */
	double last_t;
};

static struct rr_attempt *find_attempt(struct reader *rd, unsigned number)
{
	struct run_report *r = rd->r;
	if (rd->cur < r->nr_attempts && r->attempts[rd->cur].number == number)
		return &r->attempts[rd->cur];
	for (size_t i = r->nr_attempts; i-- > 0;)
		if (r->attempts[i].number == number) {
			rd->cur = i;
			return &r->attempts[i];
		}
	return NULL;
}

static struct rr_attempt *new_attempt(struct reader *rd, unsigned number, double t)
{
	struct run_report *r = rd->r;
	if (r->nr_attempts >= RR_MAX_ITEMS) {
		r->attempts_omitted++;
		return NULL;
	}
	ALLOC_GROW(r->attempts, r->nr_attempts + 1, r->alloc_attempts);
	struct rr_attempt *a = &r->attempts[r->nr_attempts];
	memset(a, 0, sizeof(*a));
	a->number = number;
	a->start = t;
	a->end = t;
	a->median_step_s = NAN;
	a->first_step_t = a->last_step_t = NAN;
	rd->cur = r->nr_attempts++;
	return a;
}

/* Keep one value in 2^thin; when the array is full, drop every other one kept so far (the
 * first stays) and keep half as many from then on. */
static void thin_half_samples(struct rr_attempt *a)
{
	size_t n = 0;
	for (size_t i = 0; i < a->nr_samples; i += 2)
		a->samples[n++] = a->samples[i];
	a->nr_samples = n;
	a->thin_samples++;
}

static void add_step(struct rr_attempt *a, double t, uint64_t step)
{
	/* seconds a step between this record and the one before, for the median */
	if (a->has_steps && step > a->last_step && t > a->last_step_t) {
		double per = (t - a->last_step_t) / (double)(step - a->last_step);
		if (a->skip_intervals) {
			a->skip_intervals--;
		} else {
			if (a->nr_intervals >= RR_MAX_SAMPLES) {
				size_t n = 0;
				for (size_t i = 0; i < a->nr_intervals; i += 2)
					a->intervals[n++] = a->intervals[i];
				a->nr_intervals = n;
				a->thin_intervals++;
			}
			ALLOC_GROW(a->intervals, a->nr_intervals + 1, a->alloc_intervals);
			a->intervals[a->nr_intervals++] = per;
			a->skip_intervals = ((size_t)1 << a->thin_intervals) - 1;
		}
	}
	if (!a->has_steps) {
		a->has_steps = true;
		a->first_step = step;
		a->first_step_t = t;
	}
	a->step_records++;
	a->last_step = step;
	a->last_step_t = t;
	/* the samples: the first always; then one in 2^thin; the last is kept apart (last_step) */
	if (a->skip_samples) {
		a->skip_samples--;
		return;
	}
	if (a->nr_samples >= RR_MAX_SAMPLES)
		thin_half_samples(a);
	ALLOC_GROW(a->samples, a->nr_samples + 1, a->alloc_samples);
	a->samples[a->nr_samples].t = t;
	a->samples[a->nr_samples].step = step;
	a->nr_samples++;
	a->skip_samples = ((size_t)1 << a->thin_samples) - 1;
}

static void add_event(struct run_report *r, const char *cls, unsigned attempt,
		      const struct json_value *v, double t)
{
	if (r->nr_events >= RR_MAX_ITEMS) {
		r->events_omitted++;
		return;
	}
	ALLOC_GROW(r->events, r->nr_events + 1, r->alloc_events);
	struct rr_event *e = &r->events[r->nr_events++];
	e->cls = xstrdup(cls);
	e->host = dup_or_null(json_get_string(v, "host"));
	e->detail = dup_or_null(json_get_string(v, "detail"));
	e->attempt = attempt;
	e->t = t;
}

static void add_fault(struct run_report *r, const char *cls, unsigned attempt,
		      const struct json_value *v, double t)
{
	if (r->nr_faults >= RR_MAX_ITEMS) {
		r->faults_omitted++;
		return;
	}
	ALLOC_GROW(r->faults, r->nr_faults + 1, r->alloc_faults);
	struct rr_fault *f = &r->faults[r->nr_faults++];
	memset(f, 0, sizeof(*f));
	f->cls = xstrdup(cls);
	f->attempt = attempt;
	f->host = dup_or_null(json_get_string(v, "host"));
	f->detail = dup_or_null(json_get_string(v, "detail"));
	f->t = t;
	f->happened = get_time(v, "happened", 0);
	f->detected = get_time(v, "detected", 0);
	f->latency_s = get_time(v, "latency_s", 0);
	if (isnan(f->latency_s) && f->detected >= f->happened)
		f->latency_s = f->detected - f->happened;
	f->recovered = f->time_to_recover_s = NAN;
}

static const char *excluded_name(const void *arr, size_t i)
{
	return ((const struct rr_excluded *)arr)[i].host;
}

static void add_excluded(struct run_report *r, const char *host, const char *reason,
			 unsigned attempt, double t)
{
	if (strindex_find(&r->excluded_index, host, r->excluded, excluded_name) != (size_t)-1)
		return; /* excluded once; a later record repeats it (a resumed run) */
	if (r->nr_excluded >= RR_MAX_ITEMS) {
		r->excluded_omitted++;
		return;
	}
	ALLOC_GROW(r->excluded, r->nr_excluded + 1, r->alloc_excluded);
	strindex_add(&r->excluded_index, host, r->nr_excluded, r->excluded, excluded_name);
	struct rr_excluded *x = &r->excluded[r->nr_excluded++];
	x->host = xstrdup(host);
	x->reason = dup_or_null(reason);
	x->attempt = attempt;
	x->t = t;
	/* excluded for the latest fault of its attempt, if there was one */
	if (r->nr_faults && r->faults[r->nr_faults - 1].attempt == attempt) {
		struct rr_fault *f = &r->faults[r->nr_faults - 1];
		ALLOC_GROW(f->excluded, f->nr_excluded + 1, f->alloc_excluded);
		f->excluded[f->nr_excluded].host = x->host;
		f->excluded[f->nr_excluded].reason = x->reason;
		f->excluded[f->nr_excluded].attempt = attempt;
		f->excluded[f->nr_excluded].t = t;
		f->nr_excluded++;
	}
}

/* One line; false when it is not a record this report can use. */
static bool apply(struct reader *rd, const char *line, size_t len)
{
	struct run_report *r = rd->r;
	struct json_value *v = json_parse(line, len, NULL);
	const char *kind = v && v->type == JSON_OBJECT ? json_get_string(v, "kind") : NULL;
	double t = v ? get_time(v, "t", 0) : NAN;
	uint64_t n = 0;
	if (!kind || isnan(t)) {
		json_free(v);
		return false;
	}
	r->records++;
	if (isnan(r->start))
		r->start = t;
	if (isnan(rd->last_t) || t > rd->last_t)
		rd->last_t = t;
	unsigned attempt = 0;
	if (get_uint(v, "attempt", &n) && n <= 1000000)
		attempt = (unsigned)n;
	else if (r->nr_attempts)
		attempt = r->attempts[r->nr_attempts - 1].number;
	struct rr_attempt *a = NULL;

	if (!strcmp(kind, "run_started")) {
		/* the first record starts the wall time, whatever it is */
	} else if (!strcmp(kind, "attempt_started")) {
		a = new_attempt(rd, attempt, t);
		if (a) {
			a->started = true;
			if (get_uint(v, "restarts", &n) && n <= 1000000)
				a->restarts = (unsigned)n;
			a->step_id = dup_or_null(json_get_string(v, "step_id"));
			const struct json_value *h = json_get(v, "hosts");
			for (size_t i = 0; h && h->type == JSON_ARRAY && i < h->nr; i++)
				if (h->items[i]->type == JSON_STRING && a->hosts.nr < JOURNAL_HOSTS_MAX)
					strlist_add(&a->hosts, h->items[i]->string);
				else
					a->hosts_omitted++;
			if (get_uint(v, "hosts_omitted", &n))
				a->hosts_omitted += n;
		}
	} else if (!strcmp(kind, "attempt_ended")) {
		a = find_attempt(rd, attempt);
		if (!a)
			a = new_attempt(rd, attempt, t);
		if (a && !a->ended) {
			a->ended = true;
			a->end = t;
			a->outcome = dup_or_null(json_get_string(v, "outcome"));
			double code;
			if (json_get_number(v, "code", &code) && code == floor(code) &&
			    fabs(code) < 1e9) {
				a->has_code = true;
				a->code = (int)code;
			}
		}
	} else if (!strcmp(kind, "step")) {
		if (get_uint(v, "step", &n)) {
			a = find_attempt(rd, attempt);
			if (!a)
				a = new_attempt(rd, attempt, t);
			if (a)
				add_step(a, t, n);
		}
	} else if (!strcmp(kind, "event")) {
		const char *cls = json_get_string(v, "class");
		if (!cls || !*cls)
			cls = "(no class)";
		if (runreport_is_fault(cls))
			add_fault(r, cls, attempt, v, t);
		else
			add_event(r, cls, attempt, v, t);
		a = find_attempt(rd, attempt);
	} else if (!strcmp(kind, "host_excluded")) {
		const char *host = json_get_string(v, "host");
		if (host && *host)
			add_excluded(r, host, json_get_string(v, "reason"), attempt, t);
		a = find_attempt(rd, attempt);
	} else if (!strcmp(kind, "run_ended")) {
		r->finished = true;
		r->end = t;
		free(r->outcome);
		free(r->detail);
		r->outcome = dup_or_null(json_get_string(v, "outcome"));
		r->detail = dup_or_null(json_get_string(v, "detail"));
	} else {
		r->unknown_kinds++;
	}
	/* an attempt that never ended lasted at least until its last record */
	if (a && !a->ended && t > a->end)
		a->end = t;
	json_free(v);
	return true;
}

static void reader_line(struct reader *rd, bool complete)
{
	bool blank = true;
	for (size_t i = 0; i < rd->line.len && blank; i++)
		if (rd->line.buf[i] != ' ' && rd->line.buf[i] != '\t' && rd->line.buf[i] != '\r')
			blank = false;
	if (rd->overlong || (!blank && !apply(rd, rd->line.buf, rd->line.len))) {
		if (complete)
			rd->r->bad_lines++;
		else
			rd->r->torn_tail = true;
	}
	strbuf_reset(&rd->line);
	rd->overlong = false;
}

static void reader_feed(struct reader *rd, const char *data, size_t len)
{
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		if (rd->overlong || rd->line.len + n > JOURNAL_LINE_MAX) {
			rd->overlong = true;
			strbuf_reset(&rd->line);
		} else {
			strbuf_add(&rd->line, data, n);
		}
		if (!nl)
			return;
		reader_line(rd, true);
		data += n + 1;
		len -= n + 1;
	}
}

static void reader_init(struct reader *rd, struct run_report *r)
{
	memset(r, 0, sizeof(*r));
	r->start = r->end = r->wall_s = NAN;
	r->ettr = NAN;
	memset(rd, 0, sizeof(*rd));
	rd->r = r;
	strbuf_init(&rd->line, 0);
	rd->last_t = NAN;
}

/* ---- what the records add up to ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, size_t n)
{
	if (!n)
		return NAN;
	double *c = xmalloc(n * sizeof(*c));
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return m;
}

/* When attempt a reached step k (first_step <= k <= last_step), from its records. */
static double time_at_step(const struct rr_attempt *a, uint64_t k)
{
	if (k >= a->last_step)
		return a->last_step_t;
	const struct rr_sample *prev = NULL;
	for (size_t i = 0; i < a->nr_samples; i++) {
		const struct rr_sample *s = &a->samples[i];
		if (s->step >= k) {
			if (!prev || s->step == k || s->step <= prev->step)
				return s->t;
			return prev->t + (double)(k - prev->step) * (s->t - prev->t) /
						 (double)(s->step - prev->step);
		}
		prev = s;
	}
	/* between the last sample kept and the last record */
	if (prev && a->last_step > prev->step)
		return prev->t + (double)(k - prev->step) * (a->last_step_t - prev->t) /
					 (double)(a->last_step - prev->step);
	return a->last_step_t;
}

static void derive(struct reader *rd)
{
	struct run_report *r = rd->r;
	if (!r->records)
		return;
	if (!r->finished)
		r->end = rd->last_t;
	r->wall_s = r->end > r->start ? r->end - r->start : 0;

	/* the median seconds a step, per attempt; the run's for an attempt without two records */
	size_t total = 0;
	for (size_t i = 0; i < r->nr_attempts; i++)
		total += r->attempts[i].nr_intervals;
	double *all = xmalloc((total ? total : 1) * sizeof(*all));
	total = 0;
	for (size_t i = 0; i < r->nr_attempts; i++) {
		struct rr_attempt *a = &r->attempts[i];
		if (a->nr_intervals)
			memcpy(all + total, a->intervals, a->nr_intervals * sizeof(*all));
		total += a->nr_intervals;
		a->median_step_s = median(a->intervals, a->nr_intervals);
		if (a->end < a->start)
			a->end = a->start;
	}
	double run_median = median(all, total);
	free(all);

	/* kept and redone, from the last attempt back: K = min over later (first step - 1) */
	bool have_k = false;
	int64_t k = 0; /* -1: a later attempt started from scratch, nothing before it is kept */
	r->productive_s = 0;
	r->steps_redone = 0;
	for (size_t i = r->nr_attempts; i-- > 0;) {
		struct rr_attempt *a = &r->attempts[i];
		if (!a->has_steps)
			continue;
		double med = isnan(a->median_step_s) ? run_median : a->median_step_s;
		double kept_to_t = a->last_step_t;
		a->has_kept_limit = have_k;
		a->kept_limit = have_k && k >= 0 ? (uint64_t)k : 0;
		bool none_kept = false;
		if (have_k) {
			if (k < 0 || (uint64_t)k < a->first_step) {
				none_kept = true;
				a->steps_redone = a->last_step >= a->first_step
							  ? a->last_step - a->first_step + 1
							  : 0;
			} else if ((uint64_t)k < a->last_step) {
				a->steps_redone = a->last_step - (uint64_t)k;
				kept_to_t = time_at_step(a, (uint64_t)k);
			}
		}
		if (!none_kept) {
			double p = kept_to_t - a->first_step_t + (isnan(med) ? 0 : med);
			double most = a->end - a->start;
			a->productive_s = p < 0 ? 0 : p > most ? most : p;
		}
		r->productive_s += a->productive_s;
		r->steps_redone += a->steps_redone;
		int64_t from = (int64_t)a->first_step - 1;
		if (!have_k || from < k)
			k = from;
		have_k = true;
	}
	if (r->wall_s > 0) {
		r->ettr = r->productive_s / r->wall_s;
		if (r->ettr > 1)
			r->ettr = 1;
	}

	/* faults: recovery, evidence */
	for (size_t i = 0; i < r->nr_faults; i++) {
		struct rr_fault *f = &r->faults[i];
		double seen = isnan(f->detected) ? f->t : f->detected;
		const struct rr_event *cleared = NULL, *evidence = NULL;
		for (size_t j = 0; j < r->nr_events; j++) {
			const struct rr_event *e = &r->events[j];
			if (e->attempt != f->attempt || e->t < f->t)
				continue;
			if (!cleared && !strcmp(e->cls, "hang_cleared") &&
			    (!strcmp(f->cls, "hang") || !strcmp(f->cls, "startup_timeout")))
				cleared = e;
			/* a slowdown no host explains: the run went on in the same attempt */
			if (!cleared && !strcmp(e->cls, "slow_unexplained") && !strcmp(f->cls, "slow"))
				cleared = e;
			if (!evidence && !strcmp(e->cls, "evidence"))
				evidence = e;
		}
		if (evidence) {
			f->evidence = dup_or_null(evidence->detail);
			f->evidence_host = dup_or_null(evidence->host);
		}
		if (cleared) {
			f->cleared = true;
			for (size_t j = 0; j < r->nr_attempts && isnan(f->recovered); j++) {
				const struct rr_attempt *a = &r->attempts[j];
				if (a->number != f->attempt)
					continue;
				for (size_t s = 0; s < a->nr_samples; s++)
					if (a->samples[s].t >= seen) {
						f->recovered = a->samples[s].t;
						break;
					}
				if (isnan(f->recovered) && a->has_steps && a->last_step_t >= seen)
					f->recovered = a->last_step_t;
			}
		} else {
			for (size_t j = 0; j < r->nr_attempts; j++) {
				const struct rr_attempt *a = &r->attempts[j];
				if (a->number > f->attempt && a->has_steps) {
					f->recovered = a->first_step_t;
					break;
				}
			}
		}
		if (!isnan(f->recovered))
			f->time_to_recover_s = f->recovered - seen;
	}
}

static void reader_finish(struct reader *rd)
{
	if (rd->line.len || rd->overlong)
		reader_line(rd, false);
	strbuf_release(&rd->line);
	derive(rd);
}

void runreport_build(const char *text, size_t len, struct run_report *out)
{
	struct reader rd;
	reader_init(&rd, out);
	reader_feed(&rd, text, len);
	reader_finish(&rd);
}

static bool report_chunk(void *arg, const char *data, size_t len)
{
	reader_feed(arg, data, len);
	return true;
}

int runreport_read(const char *path, size_t max_bytes, struct run_report *out,
		   struct strbuf *err)
{
	struct reader rd;
	reader_init(&rd, out);
	int rc = read_file_stream(path, READ_STREAM_NOFOLLOW, max_bytes ? max_bytes : (size_t)1 << 30,
				  report_chunk, &rd, err);
	reader_finish(&rd);
	if (rc < 0) {
		run_report_release(out);
		reader_init(&rd, out);
		strbuf_release(&rd.line);
		return -1;
	}
	return 0;
}

void run_report_release(struct run_report *r)
{
	for (size_t i = 0; i < r->nr_attempts; i++) {
		struct rr_attempt *a = &r->attempts[i];
		free(a->outcome);
		free(a->step_id);
		strlist_release(&a->hosts);
		free(a->samples);
		free(a->intervals);
	}
	free(r->attempts);
	for (size_t i = 0; i < r->nr_faults; i++) {
		struct rr_fault *f = &r->faults[i];
		free(f->cls);
		free(f->host);
		free(f->detail);
		free(f->evidence);
		free(f->evidence_host);
		free(f->excluded); /* views of r->excluded */
	}
	free(r->faults);
	for (size_t i = 0; i < r->nr_excluded; i++) {
		free(r->excluded[i].host);
		free(r->excluded[i].reason);
	}
	free(r->excluded);
	strindex_release(&r->excluded_index);
	for (size_t i = 0; i < r->nr_events; i++) {
		free(r->events[i].cls);
		free(r->events[i].host);
		free(r->events[i].detail);
	}
	free(r->events);
	free(r->outcome);
	free(r->detail);
	memset(r, 0, sizeof(*r));
	r->start = r->end = r->wall_s = r->ettr = NAN;
}
