/*
 * runreport.c: a supervised run's journal read back into attempts, faults, steps redone and
 * ETTR (see runreport.h for the definitions), and written as text, JSON or an HTML page.
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
					     "sick",  "lost",  "cancel",          "supervisor_restart" };

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

/* ---- shared by the writers ---- */

void runreport_duration(struct strbuf *out, double s)
{
	if (!isfinite(s)) {
		strbuf_addch(out, '-');
		return;
	}
	if (s < 0) {
		strbuf_addch(out, '-');
		s = -s;
	}
	if (s < 60) {
		strbuf_addf(out, "%.1fs", s);
		return;
	}
	uint64_t whole = (uint64_t)(s + 0.5);
	if (whole < 3600)
		strbuf_addf(out, "%um%02us", (unsigned)(whole / 60), (unsigned)(whole % 60));
	else
		strbuf_addf(out, "%lluh%02um%02us", (unsigned long long)(whole / 3600),
			    (unsigned)(whole / 60 % 60), (unsigned)(whole % 60));
}

/* A moment as an offset from the run's start: "+0:10:02.5". */
static void add_at(struct strbuf *out, const struct run_report *r, double t)
{
	double d = t - r->start;
	if (!isfinite(d)) {
		strbuf_addch(out, '-');
		return;
	}
	const char *sign = d < 0 ? "-" : "+";
	d = fabs(d);
	uint64_t ds = (uint64_t)(d * 10 + 0.5); /* tenths */
	strbuf_addf(out, "%s%llu:%02u:%02u.%u", sign, (unsigned long long)(ds / 36000),
		    (unsigned)(ds / 600 % 60), (unsigned)(ds / 10 % 60), (unsigned)(ds % 10));
}

static void add_utc(struct strbuf *out, double t)
{
	struct tm tm;
	time_t s = isfinite(t) ? (time_t)t : 0;
	if (!isfinite(t) || !gmtime_r(&s, &tm)) {
		strbuf_addch(out, '-');
		return;
	}
	char b[64];
	strftime(b, sizeof(b), "%Y-%m-%d %H:%M:%S UTC", &tm);
	strbuf_addstr(out, b);
}

static void add_percent(struct strbuf *out, double ratio)
{
	if (isfinite(ratio))
		strbuf_addf(out, "%.1f%%", ratio * 100);
	else
		strbuf_addch(out, '-');
}

static const char *attempt_outcome(const struct run_report *r, const struct rr_attempt *a)
{
	if (a->ended)
		return a->outcome ? a->outcome : "(no outcome)";
	if (!r->finished && a == &r->attempts[r->nr_attempts - 1])
		return "running";
	return "not ended";
}

static const char *run_outcome(const struct run_report *r)
{
	if (r->finished)
		return r->outcome ? r->outcome : "(no outcome)";
	return "not ended";
}

/* Hosts as "n1, n2, n3, n4 and 12 more" (cleaned). */
static void add_hosts(struct strbuf *out, const struct rr_attempt *a, size_t show)
{
	size_t i;
	for (i = 0; i < a->hosts.nr && i < show; i++) {
		if (i)
			strbuf_addstr(out, ",");
		strbuf_add_excerpt(out, a->hosts.items[i], 64);
	}
	uint64_t more = (a->hosts.nr - i) + a->hosts_omitted;
	if (more)
		strbuf_addf(out, "%s+%llu more", i ? " " : "", (unsigned long long)more);
	if (!i && !more)
		strbuf_addch(out, '-');
}

static void add_steps(struct strbuf *out, const struct rr_attempt *a)
{
	if (!a->has_steps)
		strbuf_addch(out, '-');
	else
		strbuf_addf(out, "%llu..%llu", (unsigned long long)a->first_step,
			    (unsigned long long)a->last_step);
}

/* ---- text ---- */

struct table {
	size_t cols;
	struct strlist cells; /* row-major; the first row is the header */
};

static size_t display_width(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void table_print(const struct table *t, struct strbuf *out)
{
	size_t w[16] = { 0 };
	for (size_t i = 0; i < t->cells.nr; i++) {
		size_t c = i % t->cols, n = display_width(t->cells.items[i]);
		if (n > w[c])
			w[c] = n;
	}
	for (size_t i = 0; i < t->cells.nr; i++) {
		size_t c = i % t->cols;
		const char *s = t->cells.items[i];
		if (c == 0)
			strbuf_addstr(out, "  ");
		strbuf_addstr(out, s);
		if (c + 1 == t->cols) {
			strbuf_rtrim(out);
			strbuf_addch(out, '\n');
		} else {
			for (size_t p = display_width(s); p < w[c] + 2; p++)
				strbuf_addch(out, ' ');
		}
	}
}

static void cell(struct table *t, struct strbuf *c)
{
	strlist_add(&t->cells, c->len ? c->buf : "-");
	strbuf_reset(c);
}

void runreport_text(const struct run_report *r, const char *title, struct strbuf *out)
{
	struct strbuf c = STRBUF_INIT;
	if (title) {
		strbuf_addstr(out, "vigil report: ");
		strbuf_add_clean(out, title);
		strbuf_addch(out, '\n');
	}
	strbuf_addstr(out, "run ");
	strbuf_add_excerpt(out, run_outcome(r), 64);
	strbuf_addstr(out, ": wall ");
	runreport_duration(out, r->wall_s);
	strbuf_addstr(out, ", ETTR ");
	add_percent(out, r->ettr);
	strbuf_addstr(out, " (productive ");
	runreport_duration(out, r->productive_s);
	strbuf_addf(out, "), %zu attempt%s, %zu fault%s, %llu step%s redone\n", r->nr_attempts,
		    r->nr_attempts == 1 ? "" : "s", r->nr_faults, r->nr_faults == 1 ? "" : "s",
		    (unsigned long long)r->steps_redone, r->steps_redone == 1 ? "" : "s");
	strbuf_addstr(out, "started ");
	add_utc(out, r->start);
	if (r->finished && r->detail) {
		strbuf_addstr(out, "; ended: ");
		strbuf_add_excerpt(out, r->detail, 300);
	}
	strbuf_addch(out, '\n');
	if (r->bad_lines || r->torn_tail || r->unknown_kinds) {
		strbuf_addf(out, "journal: %zu record%s read", r->records,
			    r->records == 1 ? "" : "s");
		if (r->bad_lines)
			strbuf_addf(out, ", %zu damaged line%s skipped", r->bad_lines,
				    r->bad_lines == 1 ? "" : "s");
		if (r->torn_tail)
			strbuf_addstr(out, ", a torn last line skipped");
		if (r->unknown_kinds)
			strbuf_addf(out, ", %zu record%s of unknown kinds", r->unknown_kinds,
				    r->unknown_kinds == 1 ? "" : "s");
		strbuf_addch(out, '\n');
	}

	strbuf_addstr(out, "\nAttempts (times from the run's start)\n");
	if (!r->nr_attempts)
		strbuf_addstr(out, "  none started\n");
	else {
		struct table t = { 9, STRLIST_INIT };
		const char *head[] = { "ATTEMPT", "START",  "END",        "OUTCOME", "STEPS",
				       "REDONE",  "LASTED", "PRODUCTIVE", "HOSTS" };
		for (size_t i = 0; i < ARRAY_SIZE(head); i++)
			strlist_add(&t.cells, head[i]);
		for (size_t i = 0; i < r->nr_attempts; i++) {
			const struct rr_attempt *a = &r->attempts[i];
			strbuf_addf(&c, "%u", a->number);
			cell(&t, &c);
			add_at(&c, r, a->start);
			cell(&t, &c);
			add_at(&c, r, a->end);
			cell(&t, &c);
			strbuf_add_excerpt(&c, attempt_outcome(r, a), 40);
			if (a->has_code)
				strbuf_addf(&c, " (%d)", a->code);
			cell(&t, &c);
			add_steps(&c, a);
			cell(&t, &c);
			strbuf_addf(&c, "%llu", (unsigned long long)a->steps_redone);
			cell(&t, &c);
			runreport_duration(&c, a->end - a->start);
			cell(&t, &c);
			runreport_duration(&c, a->productive_s);
			cell(&t, &c);
			add_hosts(&c, a, 4);
			cell(&t, &c);
		}
		table_print(&t, out);
		strlist_release(&t.cells);
		if (r->attempts_omitted)
			strbuf_addf(out, "  (%zu more attempts not shown)\n", r->attempts_omitted);
	}

	strbuf_addstr(out, "\nFaults\n");
	if (!r->nr_faults)
		strbuf_addstr(out, "  none\n");
	else {
		struct table t = { 9, STRLIST_INIT };
		const char *head[] = { "#",        "CLASS",   "ATTEMPT",   "HOST",      "HAPPENED",
				       "DETECTED", "LATENCY", "RECOVERED", "TO RECOVER" };
		for (size_t i = 0; i < ARRAY_SIZE(head); i++)
			strlist_add(&t.cells, head[i]);
		for (size_t i = 0; i < r->nr_faults; i++) {
			const struct rr_fault *f = &r->faults[i];
			strbuf_addf(&c, "%zu", i + 1);
			cell(&t, &c);
			strbuf_addstr(&c, f->cls);
			cell(&t, &c);
			strbuf_addf(&c, "%u", f->attempt);
			cell(&t, &c);
			if (f->host)
				strbuf_add_excerpt(&c, f->host, 64);
			cell(&t, &c);
			add_at(&c, r, f->happened);
			cell(&t, &c);
			add_at(&c, r, isnan(f->detected) ? f->t : f->detected);
			cell(&t, &c);
			runreport_duration(&c, f->latency_s);
			cell(&t, &c);
			add_at(&c, r, f->recovered);
			if (f->cleared)
				strbuf_addstr(&c, " (cleared)");
			cell(&t, &c);
			runreport_duration(&c, f->time_to_recover_s);
			cell(&t, &c);
		}
		table_print(&t, out);
		strlist_release(&t.cells);
		for (size_t i = 0; i < r->nr_faults; i++) {
			const struct rr_fault *f = &r->faults[i];
			if (f->detail) {
				strbuf_addf(out, "  %zu: ", i + 1);
				strbuf_add_excerpt(out, f->detail, 300);
				strbuf_addch(out, '\n');
			}
			if (f->evidence || f->evidence_host) {
				strbuf_addf(out, "  %zu: evidence", i + 1);
				if (f->evidence_host) {
					strbuf_addstr(out, " (suspect ");
					strbuf_add_excerpt(out, f->evidence_host, 64);
					strbuf_addch(out, ')');
				}
				strbuf_addstr(out, ": ");
				strbuf_add_excerpt(out, f->evidence ? f->evidence : "-", 300);
				strbuf_addch(out, '\n');
			}
			for (size_t j = 0; j < f->nr_excluded; j++) {
				strbuf_addf(out, "  %zu: excluded ", i + 1);
				strbuf_add_excerpt(out, f->excluded[j].host, 64);
				strbuf_addstr(out, ": ");
				strbuf_add_excerpt(out, f->excluded[j].reason ? f->excluded[j].reason
									      : "-",
						   300);
				strbuf_addch(out, '\n');
			}
		}
		if (r->faults_omitted)
			strbuf_addf(out, "  (%zu more faults not shown)\n", r->faults_omitted);
	}

	strbuf_addstr(out, "\nExcluded hosts\n");
	if (!r->nr_excluded)
		strbuf_addstr(out, "  none\n");
	for (size_t i = 0; i < r->nr_excluded; i++) {
		const struct rr_excluded *x = &r->excluded[i];
		strbuf_addstr(out, "  ");
		strbuf_add_excerpt(out, x->host, 64);
		strbuf_addf(out, "  attempt %u  ", x->attempt);
		add_at(out, r, x->t);
		strbuf_addstr(out, "  ");
		strbuf_add_excerpt(out, x->reason ? x->reason : "-", 300);
		strbuf_addch(out, '\n');
	}
	if (r->excluded_omitted)
		strbuf_addf(out, "  (%zu more not shown)\n", r->excluded_omitted);

	/* what vigil diagnose said of the run's files (a crash's first error, the step times) */
	bool any = false;
	for (size_t i = 0; i < r->nr_events; i++) {
		const struct rr_event *e = &r->events[i];
		if (!e->cls || strcmp(e->cls, "diagnosis"))
			continue;
		if (!any)
			strbuf_addstr(out, "\nDiagnosis (vigil diagnose)\n");
		any = true;
		strbuf_addf(out, "  attempt %u  ", e->attempt);
		strbuf_add_excerpt(out, e->detail ? e->detail : "-", 400);
		strbuf_addch(out, '\n');
	}
	strbuf_release(&c);
}

/* ---- JSON ---- */

static void j_time(struct json_writer *w, const char *key, double t)
{
	json_key(w, key);
	json_fixed(w, t, 3);
}

static void j_str(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	json_string(w, s);
}

void runreport_json(const struct run_report *r, const char *title, struct strbuf *out)
{
	struct json_writer w;
	json_writer_init(&w, out, true);
	json_open_top(&w);
	j_str(&w, "run", title);
	j_str(&w, "outcome", r->finished ? run_outcome(r) : NULL);
	json_key(&w, "finished");
	json_bool(&w, r->finished);
	j_str(&w, "detail", r->detail);
	j_time(&w, "started", r->start);
	j_time(&w, "ended", r->end);
	j_time(&w, "wall_s", r->wall_s);
	j_time(&w, "productive_s", r->productive_s);
	json_key(&w, "ettr");
	json_fixed(&w, r->ettr, 4);
	json_key(&w, "steps_redone");
	json_uint(&w, r->steps_redone);
	json_key(&w, "restarts");
	json_uint(&w, r->nr_attempts ? r->nr_attempts - 1 : 0);

	json_key(&w, "journal");
	json_open_object(&w);
	json_key(&w, "records");
	json_uint(&w, r->records);
	json_key(&w, "bad_lines");
	json_uint(&w, r->bad_lines);
	json_key(&w, "torn_tail");
	json_bool(&w, r->torn_tail);
	json_key(&w, "unknown_kinds");
	json_uint(&w, r->unknown_kinds);
	json_close_object(&w);

	json_key(&w, "attempts");
	json_open_array(&w);
	for (size_t i = 0; i < r->nr_attempts; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		json_open_object(&w);
		json_key(&w, "attempt");
		json_uint(&w, a->number);
		j_time(&w, "start", a->start);
		j_time(&w, "end", a->end);
		j_time(&w, "duration_s", a->end - a->start);
		json_key(&w, "ended");
		json_bool(&w, a->ended);
		j_str(&w, "outcome", attempt_outcome(r, a));
		json_key(&w, "code");
		if (a->has_code)
			json_int(&w, a->code);
		else
			json_null(&w);
		json_key(&w, "restarts");
		json_uint(&w, a->restarts);
		j_str(&w, "step_id", a->step_id);
		json_key(&w, "hosts");
		json_open_array(&w);
		for (size_t h = 0; h < a->hosts.nr; h++)
			json_string(&w, a->hosts.items[h]);
		json_close_array(&w);
		json_key(&w, "hosts_omitted");
		json_uint(&w, a->hosts_omitted);
		json_key(&w, "step_records");
		json_uint(&w, a->step_records);
		json_key(&w, "first_step");
		if (a->has_steps)
			json_uint(&w, a->first_step);
		else
			json_null(&w);
		json_key(&w, "last_step");
		if (a->has_steps)
			json_uint(&w, a->last_step);
		else
			json_null(&w);
		j_time(&w, "first_step_t", a->first_step_t);
		j_time(&w, "last_step_t", a->last_step_t);
		json_key(&w, "kept_through_step");
		if (!a->has_steps)
			json_null(&w);
		else if (!a->has_kept_limit || a->kept_limit >= a->last_step)
			json_uint(&w, a->last_step);
		else if (a->steps_redone > a->last_step - a->first_step)
			json_null(&w); /* none kept */
		else
			json_uint(&w, a->kept_limit);
		json_key(&w, "steps_redone");
		json_uint(&w, a->steps_redone);
		j_time(&w, "median_step_s", a->median_step_s);
		j_time(&w, "productive_s", a->productive_s);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "attempts_omitted");
	json_uint(&w, r->attempts_omitted);

	json_key(&w, "faults");
	json_open_array(&w);
	for (size_t i = 0; i < r->nr_faults; i++) {
		const struct rr_fault *f = &r->faults[i];
		json_open_object(&w);
		j_str(&w, "class", f->cls);
		json_key(&w, "attempt");
		json_uint(&w, f->attempt);
		j_str(&w, "host", f->host);
		j_str(&w, "detail", f->detail);
		j_time(&w, "t", f->t);
		j_time(&w, "happened", f->happened);
		j_time(&w, "detected", f->detected);
		j_time(&w, "latency_s", f->latency_s);
		j_time(&w, "recovered", f->recovered);
		j_time(&w, "time_to_recover_s", f->time_to_recover_s);
		json_key(&w, "cleared");
		json_bool(&w, f->cleared);
		j_str(&w, "evidence", f->evidence);
		j_str(&w, "evidence_host", f->evidence_host);
		json_key(&w, "excluded");
		json_open_array(&w);
		for (size_t j = 0; j < f->nr_excluded; j++) {
			json_open_object(&w);
			j_str(&w, "host", f->excluded[j].host);
			j_str(&w, "reason", f->excluded[j].reason);
			json_close_object(&w);
		}
		json_close_array(&w);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "faults_omitted");
	json_uint(&w, r->faults_omitted);

	json_key(&w, "excluded");
	json_open_array(&w);
	for (size_t i = 0; i < r->nr_excluded; i++) {
		const struct rr_excluded *x = &r->excluded[i];
		json_open_object(&w);
		j_str(&w, "host", x->host);
		j_str(&w, "reason", x->reason);
		json_key(&w, "attempt");
		json_uint(&w, x->attempt);
		j_time(&w, "t", x->t);
		json_close_object(&w);
	}
	json_close_array(&w);

	json_key(&w, "events");
	json_open_array(&w);
	for (size_t i = 0; i < r->nr_events; i++) {
		const struct rr_event *e = &r->events[i];
		json_open_object(&w);
		j_str(&w, "class", e->cls);
		json_key(&w, "attempt");
		json_uint(&w, e->attempt);
		j_time(&w, "t", e->t);
		j_str(&w, "host", e->host);
		j_str(&w, "detail", e->detail);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "events_omitted");
	json_uint(&w, r->events_omitted);
	json_close_object(&w);
	json_writer_finish(&w, NULL);
	strbuf_addch(out, '\n');
}

/* ---- HTML ---- */

/* Outside text into HTML: cleaned (no control bytes, valid UTF-8), then escaped. */
static void h_text(struct strbuf *out, const char *s, size_t max)
{
	struct strbuf c = STRBUF_INIT;
	strbuf_add_excerpt(&c, s ? s : "", max);
	for (const char *p = c.buf; *p; p++) {
		switch (*p) {
		case '&': strbuf_addstr(out, "&amp;"); break;
		case '<': strbuf_addstr(out, "&lt;"); break;
		case '>': strbuf_addstr(out, "&gt;"); break;
		case '"': strbuf_addstr(out, "&quot;"); break;
		case '\'': strbuf_addstr(out, "&#39;"); break;
		default: strbuf_addch(out, *p);
		}
	}
	strbuf_release(&c);
}

static const struct {
	const char *name, *colour;
} palette[] = {
	{ "done", "#2e7d32" },    { "crash", "#c62828" },   { "hang", "#ef6c00" },
	{ "startup_timeout", "#f9a825" }, { "slow", "#6a1b9a" }, { "sick", "#ad1457" },
	{ "lost", "#5d4037" },    { "cancel", "#546e7a" },  { "supervisor_restart", "#1565c0" },
};
#define OTHER_COLOUR "#90a4ae"

static const char *colour_of(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(palette); i++)
		if (!strcmp(name, palette[i].name))
			return palette[i].colour;
	return OTHER_COLOUR;
}

/* The plot's geometry. */
#define SVG_W 1000.0
#define SVG_LEFT 100.0
#define SVG_RIGHT 30.0
#define LANE_H 26.0
#define LANES_TOP 10.0
#define PLOT_H 170.0
#define MAX_LANES 200
#define MAX_POINTS 600

struct geom {
	double t0, span, plot_w;
	double lanes_bottom, plot_top, plot_bottom;
	uint64_t max_step;
	size_t lanes;
};

static double gx(const struct geom *g, double t)
{
	double x = SVG_LEFT + (t - g->t0) / g->span * g->plot_w;
	return x < SVG_LEFT ? SVG_LEFT : x > SVG_LEFT + g->plot_w ? SVG_LEFT + g->plot_w : x;
}

static double lane_y(size_t lane)
{
	return LANES_TOP + (double)lane * LANE_H;
}

/* The lane of attempt number n (the last entry with that number), or -1. */
static long lane_of(const struct run_report *r, const struct geom *g, unsigned n)
{
	for (size_t i = g->lanes; i-- > 0;)
		if (r->attempts[i].number == n)
			return (long)i;
	return -1;
}

static void svg_marker(struct strbuf *out, const char *shape, double x, double y,
		       const char *colour, const struct rr_fault *f, const char *what)
{
	if (!strcmp(shape, "circle"))
		strbuf_addf(out,
			    "<circle class=\"happened\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#fff\" "
			    "stroke=\"#111\" stroke-width=\"2\" data-class=\"%s\">",
			    x, y, f->cls);
	else
		strbuf_addf(out,
			    "<polygon class=\"detected\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f "
			    "%.1f,%.1f\" fill=\"#111\" stroke=\"%s\" stroke-width=\"2\">",
			    x, y - 7, x + 6, y, x, y + 7, x - 6, y, colour);
	strbuf_addf(out, "<title>%s %s", f->cls, what);
	if (f->host) {
		strbuf_addstr(out, " on ");
		h_text(out, f->host, 64);
	}
	strbuf_addf(out, " (attempt %u)</title></%s>\n", f->attempt,
		    strcmp(shape, "circle") ? "polygon" : "circle");
}

static void svg(const struct run_report *r, struct strbuf *out)
{
	struct geom g = { 0 };
	g.t0 = r->start;
	g.span = r->wall_s > 0 ? r->wall_s : 1;
	g.plot_w = SVG_W - SVG_LEFT - SVG_RIGHT;
	g.lanes = r->nr_attempts < MAX_LANES ? r->nr_attempts : MAX_LANES;
	g.lanes_bottom = lane_y(g.lanes ? g.lanes : 1);
	g.plot_top = g.lanes_bottom + 20;
	g.plot_bottom = g.plot_top + PLOT_H;
	g.max_step = 1;
	for (size_t i = 0; i < g.lanes; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		if (a->has_steps && a->last_step > g.max_step)
			g.max_step = a->last_step;
		for (size_t s = 0; s < a->nr_samples; s++)
			if (a->samples[s].step > g.max_step)
				g.max_step = a->samples[s].step;
	}
	double height = g.plot_bottom + 40;
	strbuf_addf(out,
		    "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		    "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		    "aria-label=\"timeline of the run\">\n",
		    SVG_W, height, SVG_W, height);
	strbuf_addf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n",
		    SVG_W, height);

	/* recovery spans first, behind everything */
	for (size_t i = 0; i < r->nr_faults; i++) {
		const struct rr_fault *f = &r->faults[i];
		double from = isnan(f->detected) ? f->t : f->detected;
		if (isnan(f->recovered))
			continue;
		double x0 = gx(&g, from), x1 = gx(&g, f->recovered);
		strbuf_addf(out,
			    "<rect class=\"recovery\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			    "height=\"%.1f\" fill=\"#9e9e9e\" fill-opacity=\"0.25\"><title>recovery "
			    "from %s: ",
			    x0, LANES_TOP - 4, x1 > x0 ? x1 - x0 : 1, g.plot_bottom - LANES_TOP + 4,
			    f->cls);
		runreport_duration(out, f->time_to_recover_s);
		strbuf_addstr(out, "</title></rect>\n");
	}

	/* lanes */
	for (size_t i = 0; i < g.lanes; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		const char *outcome = attempt_outcome(r, a);
		double y = lane_y(i);
		double x0 = gx(&g, a->start), x1 = gx(&g, a->end);
		strbuf_addf(out,
			    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">attempt "
			    "%u</text>\n",
			    SVG_LEFT - 8, y + 13, a->number);
		strbuf_addf(out,
			    "<rect class=\"attempt\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			    "height=\"16\" rx=\"3\" fill=\"%s\"><title>attempt %u: ",
			    x0, y + 2, x1 - x0 > 2 ? x1 - x0 : 2, colour_of(outcome), a->number);
		h_text(out, outcome, 64);
		strbuf_addstr(out, ", ");
		runreport_duration(out, a->end - a->start);
		strbuf_addstr(out, "</title></rect>\n");
	}
	if (r->nr_attempts > g.lanes)
		strbuf_addf(out,
			    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">(%zu more attempts not "
			    "drawn)</text>\n",
			    SVG_LEFT, g.lanes_bottom + 12, r->nr_attempts - g.lanes);

	/* fault markers: happened (hollow circle) and detected (diamond), joined by the latency */
	for (size_t i = 0; i < r->nr_faults; i++) {
		const struct rr_fault *f = &r->faults[i];
		long lane = lane_of(r, &g, f->attempt);
		double y = lane < 0 ? LANES_TOP + 10 : lane_y((size_t)lane) + 10;
		double det = isnan(f->detected) ? f->t : f->detected;
		const char *colour = colour_of(f->cls);
		if (!isnan(f->happened))
			strbuf_addf(out,
				    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				    "stroke=\"#000\" stroke-width=\"1.5\"/>\n",
				    gx(&g, f->happened), y, gx(&g, det), y);
		if (!isnan(f->happened))
			svg_marker(out, "circle", gx(&g, f->happened), y, colour, f, "happened");
		svg_marker(out, "polygon", gx(&g, det), y, colour, f, "detected");
	}

	/* progress: step against time, one polyline an attempt */
	strbuf_addf(out,
		    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		    "stroke=\"#bbb\"/>\n",
		    SVG_LEFT, g.plot_top, g.plot_w, PLOT_H);
	strbuf_addf(out,
		    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">step "
		    "%llu</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
		    "text-anchor=\"end\">0</text>\n",
		    SVG_LEFT - 6, g.plot_top + 10, (unsigned long long)g.max_step, SVG_LEFT - 6,
		    g.plot_bottom);
	for (size_t i = 0; i < g.lanes; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		if (!a->has_steps)
			continue;
		size_t every = a->nr_samples / MAX_POINTS + 1;
		strbuf_addf(out,
			    "<polyline class=\"progress\" fill=\"none\" stroke=\"%s\" "
			    "stroke-width=\"2\" points=\"",
			    i % 2 ? "#1565c0" : "#283593");
		for (size_t s = 0; s < a->nr_samples; s += every)
			strbuf_addf(out, "%.1f,%.1f ", gx(&g, a->samples[s].t),
				    g.plot_bottom - (double)a->samples[s].step /
							    (double)g.max_step * PLOT_H);
		strbuf_addf(out, "%.1f,%.1f", gx(&g, a->last_step_t),
			    g.plot_bottom - (double)a->last_step / (double)g.max_step * PLOT_H);
		strbuf_addf(out, "\"><title>attempt %u: steps %llu..%llu</title></polyline>\n",
			    a->number, (unsigned long long)a->first_step,
			    (unsigned long long)a->last_step);
	}

	/* the time axis */
	double axis_y = g.plot_bottom + 16;
	for (int i = 0; i <= 5; i++) {
		double t = g.t0 + g.span * i / 5;
		double x = gx(&g, t);
		strbuf_addf(out,
			    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n",
			    x, LANES_TOP - 4, x, g.plot_bottom + 4);
		strbuf_addf(out,
			    "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
			    "text-anchor=\"middle\">",
			    x, axis_y);
		if (isfinite(t))
			add_at(out, r, t);
		strbuf_addstr(out, "</text>\n");
	}
	strbuf_addstr(out, "</svg>\n");
}

static void legend(struct strbuf *out)
{
	strbuf_addstr(out, "<div class=\"legend\" id=\"legend\">");
	for (size_t i = 0; i < ARRAY_SIZE(palette); i++)
		strbuf_addf(out,
			    "<span><svg width=\"14\" height=\"12\"><rect width=\"14\" height=\"12\" "
			    "rx=\"2\" fill=\"%s\"/></svg> %s</span>",
			    palette[i].colour, palette[i].name);
	strbuf_addf(out,
		    "<span><svg width=\"14\" height=\"12\"><rect width=\"14\" height=\"12\" rx=\"2\" "
		    "fill=\"%s\"/></svg> running or not ended</span>",
		    OTHER_COLOUR);
	strbuf_addstr(out,
		      "<br><span><svg width=\"14\" height=\"14\"><circle cx=\"7\" cy=\"7\" r=\"5\" "
		      "fill=\"#fff\" stroke=\"#111\" stroke-width=\"2\"/></svg> fault happened</span>"
		      "<span><svg width=\"14\" height=\"14\"><polygon points=\"7,0 14,7 7,14 0,7\" "
		      "fill=\"#111\"/></svg> fault detected (outlined in its class's colour)</span>"
		      "<span><svg width=\"14\" height=\"12\"><rect width=\"14\" height=\"12\" "
		      "fill=\"#9e9e9e\" fill-opacity=\"0.25\"/></svg> recovery (detected to a step "
		      "again)</span>"
		      "<span><svg width=\"18\" height=\"12\"><line x1=\"0\" y1=\"10\" x2=\"18\" y2=\"2\" "
		      "stroke=\"#283593\" stroke-width=\"2\"/></svg> step reached (lower plot)</span>"
		      "</div>\n");
}

static void h_cell_at(struct strbuf *out, const struct run_report *r, double t)
{
	strbuf_addstr(out, "<td>");
	add_at(out, r, t);
	strbuf_addstr(out, "</td>");
}

static void h_cell_dur(struct strbuf *out, double s)
{
	strbuf_addstr(out, "<td>");
	runreport_duration(out, s);
	strbuf_addstr(out, "</td>");
}

static void h_cell(struct strbuf *out, const char *s, size_t max)
{
	strbuf_addstr(out, "<td>");
	h_text(out, s ? s : "-", max);
	strbuf_addstr(out, "</td>");
}

void runreport_html(const struct run_report *r, const char *title, struct strbuf *out)
{
	struct strbuf tmp = STRBUF_INIT;
	strbuf_addstr(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			   "<meta name=\"viewport\" content=\"width=device-width, "
			   "initial-scale=1\">\n<title>vigil report");
	if (title) {
		strbuf_addstr(out, ": ");
		h_text(out, title, 200);
	}
	strbuf_addstr(
		out,
		"</title>\n<style>\n"
		/* one page from a phone (360 px) to a wide screen: the timeline scales with its
		 * viewBox, long text wraps, each table scrolls in its own box */
		"*{box-sizing:border-box}\n"
		"body{font-family:sans-serif;margin:0 auto;padding:12px;max-width:1400px;color:#222;"
		"background:#fff}\n"
		"p{overflow-wrap:anywhere}#timeline{display:block;width:100%;height:auto}\n"
		".scroll{max-width:100%;overflow-x:auto}\n"
		"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}\n"
		"table{border-collapse:collapse;font-size:13px}\n"
		"td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}\n"
		"th{background:#f3f3f3}.summary{font-size:15px}.legend{font-size:12px;margin:6px 0}\n"
		".legend span{margin-right:14px;white-space:nowrap}.note{color:#a00}\n"
		"</style>\n</head>\n<body>\n<h1>vigil report</h1>\n");
	if (title) {
		strbuf_addstr(out, "<p class=\"run\">");
		h_text(out, title, 1024);
		strbuf_addstr(out, "</p>\n");
	}
	strbuf_addstr(out, "<p class=\"summary\" id=\"summary\">Outcome <b id=\"outcome\">");
	h_text(out, run_outcome(r), 64);
	strbuf_addstr(out, "</b> &middot; wall <b id=\"wall\">");
	runreport_duration(out, r->wall_s);
	strbuf_addstr(out, "</b> &middot; ETTR <b id=\"ettr\">");
	add_percent(out, r->ettr);
	strbuf_addstr(out, "</b> (productive ");
	runreport_duration(out, r->productive_s);
	strbuf_addf(out, ") &middot; %zu attempts &middot; %zu faults &middot; %llu steps redone",
		    r->nr_attempts, r->nr_faults, (unsigned long long)r->steps_redone);
	strbuf_addstr(out, " &middot; started ");
	add_utc(out, r->start);
	if (r->finished && r->detail) {
		strbuf_addstr(out, "<br>ended: ");
		h_text(out, r->detail, 300);
	}
	strbuf_addstr(out, "</p>\n");
	if (r->bad_lines || r->torn_tail)
		strbuf_addf(out,
			    "<p class=\"note\">The journal had %zu damaged line%s%s; they were "
			    "skipped.</p>\n",
			    r->bad_lines, r->bad_lines == 1 ? "" : "s",
			    r->torn_tail ? " and a torn last line" : "");

	strbuf_addstr(out, "<h2>Timeline</h2>\n");
	svg(r, out);
	legend(out);

	strbuf_addstr(out, "<h2>Attempts</h2>\n<div class=\"scroll\"><table id=\"attempts\">\n<tr><th>attempt</th>"
			   "<th>start</th><th>end</th><th>outcome</th><th>steps</th>"
			   "<th>redone</th><th>lasted</th><th>productive</th><th>hosts</th></tr>\n");
	for (size_t i = 0; i < r->nr_attempts; i++) {
		const struct rr_attempt *a = &r->attempts[i];
		strbuf_addf(out, "<tr><td>%u</td>", a->number);
		h_cell_at(out, r, a->start);
		h_cell_at(out, r, a->end);
		strbuf_reset(&tmp);
		strbuf_addstr(&tmp, attempt_outcome(r, a));
		if (a->has_code)
			strbuf_addf(&tmp, " (%d)", a->code);
		h_cell(out, tmp.buf, 80);
		strbuf_reset(&tmp);
		add_steps(&tmp, a);
		h_cell(out, tmp.buf, 80);
		strbuf_addf(out, "<td>%llu</td>", (unsigned long long)a->steps_redone);
		h_cell_dur(out, a->end - a->start);
		h_cell_dur(out, a->productive_s);
		strbuf_reset(&tmp);
		add_hosts(&tmp, a, 16);
		h_cell(out, tmp.buf, 2000);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");

	strbuf_addstr(out, "<h2>Faults</h2>\n<div class=\"scroll\"><table id=\"faults\">\n<tr><th>#</th><th>class</th>"
			   "<th>attempt</th><th>host</th><th>happened</th><th>detected</th>"
			   "<th>latency</th><th>recovered</th><th>to recover</th><th>detail</th>"
			   "<th>evidence</th><th>excluded</th></tr>\n");
	for (size_t i = 0; i < r->nr_faults; i++) {
		const struct rr_fault *f = &r->faults[i];
		strbuf_addf(out, "<tr><td>%zu</td>", i + 1);
		h_cell(out, f->cls, 64);
		strbuf_addf(out, "<td>%u</td>", f->attempt);
		h_cell(out, f->host, 64);
		h_cell_at(out, r, f->happened);
		h_cell_at(out, r, isnan(f->detected) ? f->t : f->detected);
		h_cell_dur(out, f->latency_s);
		h_cell_at(out, r, f->recovered);
		h_cell_dur(out, f->time_to_recover_s);
		h_cell(out, f->detail, 300);
		strbuf_reset(&tmp);
		if (f->evidence_host)
			strbuf_addf(&tmp, "suspect %s: ", f->evidence_host);
		if (f->evidence)
			strbuf_addstr(&tmp, f->evidence);
		h_cell(out, tmp.len ? tmp.buf : NULL, 600);
		strbuf_reset(&tmp);
		for (size_t j = 0; j < f->nr_excluded; j++)
			strbuf_addf(&tmp, "%s%s: %s", j ? "; " : "", f->excluded[j].host,
				    f->excluded[j].reason ? f->excluded[j].reason : "-");
		h_cell(out, tmp.len ? tmp.buf : NULL, 1200);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");

	strbuf_addstr(out, "<h2>Excluded hosts</h2>\n<div class=\"scroll\"><table id=\"excluded\">\n<tr><th>host</th>"
			   "<th>attempt</th><th>when</th><th>reason</th></tr>\n");
	for (size_t i = 0; i < r->nr_excluded; i++) {
		const struct rr_excluded *x = &r->excluded[i];
		strbuf_addstr(out, "<tr>");
		h_cell(out, x->host, 64);
		strbuf_addf(out, "<td>%u</td>", x->attempt);
		h_cell_at(out, r, x->t);
		h_cell(out, x->reason, 600);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");

	strbuf_addstr(out, "<h2>Other events</h2>\n<div class=\"scroll\"><table id=\"events\">\n<tr><th>when</th>"
			   "<th>attempt</th><th>event</th><th>host</th><th>detail</th></tr>\n");
	for (size_t i = 0; i < r->nr_events && i < 2000; i++) {
		const struct rr_event *e = &r->events[i];
		strbuf_addstr(out, "<tr>");
		h_cell_at(out, r, e->t);
		strbuf_addf(out, "<td>%u</td>", e->attempt);
		h_cell(out, e->cls, 64);
		h_cell(out, e->host, 64);
		h_cell(out, e->detail, 300);
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</table></div>\n");
	if (r->nr_events > 2000 || r->events_omitted)
		strbuf_addf(out, "<p>(%zu more events not shown)</p>\n",
			    r->nr_events - (r->nr_events > 2000 ? 2000 : r->nr_events) +
				    r->events_omitted);
	strbuf_addstr(out, "</body>\n</html>\n");
	strbuf_release(&tmp);
}
