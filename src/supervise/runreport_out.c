/* runreport_out.c: a run report as text for a person and as JSON (see runreport.h), and the
 * phrases both writers and the page share (runreport_int.h). */
#include "runreport_int.h"
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
void rr_add_at(struct strbuf *out, const struct run_report *r, double t)
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

void rr_add_utc(struct strbuf *out, double t)
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

void rr_add_percent(struct strbuf *out, double ratio)
{
	if (isfinite(ratio))
		strbuf_addf(out, "%.1f%%", ratio * 100);
	else
		strbuf_addch(out, '-');
}

const char *rr_attempt_outcome(const struct run_report *r, const struct rr_attempt *a)
{
	if (a->ended)
		return a->outcome ? a->outcome : "(no outcome)";
	if (!r->finished && a == &r->attempts[r->nr_attempts - 1])
		return "running";
	return "not ended";
}

const char *rr_run_outcome(const struct run_report *r)
{
	if (r->finished)
		return r->outcome ? r->outcome : "(no outcome)";
	return "not ended";
}

/* Hosts as "n1, n2, n3, n4 and 12 more" (cleaned). */
void rr_add_hosts(struct strbuf *out, const struct rr_attempt *a, size_t show)
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

void rr_add_steps(struct strbuf *out, const struct rr_attempt *a)
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
	strbuf_add_excerpt(out, rr_run_outcome(r), 64);
	strbuf_addstr(out, ": wall ");
	runreport_duration(out, r->wall_s);
	strbuf_addstr(out, ", ETTR ");
	rr_add_percent(out, r->ettr);
	strbuf_addstr(out, " (productive ");
	runreport_duration(out, r->productive_s);
	strbuf_addf(out, "), %zu attempt%s, %zu fault%s, %llu step%s redone\n", r->nr_attempts,
		    r->nr_attempts == 1 ? "" : "s", r->nr_faults, r->nr_faults == 1 ? "" : "s",
		    (unsigned long long)r->steps_redone, r->steps_redone == 1 ? "" : "s");
	strbuf_addstr(out, "started ");
	rr_add_utc(out, r->start);
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
			rr_add_at(&c, r, a->start);
			cell(&t, &c);
			rr_add_at(&c, r, a->end);
			cell(&t, &c);
			strbuf_add_excerpt(&c, rr_attempt_outcome(r, a), 40);
			if (a->has_code)
				strbuf_addf(&c, " (%d)", a->code);
			cell(&t, &c);
			rr_add_steps(&c, a);
			cell(&t, &c);
			strbuf_addf(&c, "%llu", (unsigned long long)a->steps_redone);
			cell(&t, &c);
			runreport_duration(&c, a->end - a->start);
			cell(&t, &c);
			runreport_duration(&c, a->productive_s);
			cell(&t, &c);
			rr_add_hosts(&c, a, 4);
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
			rr_add_at(&c, r, f->happened);
			cell(&t, &c);
			rr_add_at(&c, r, isnan(f->detected) ? f->t : f->detected);
			cell(&t, &c);
			runreport_duration(&c, f->latency_s);
			cell(&t, &c);
			rr_add_at(&c, r, f->recovered);
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
		rr_add_at(out, r, x->t);
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
	j_str(&w, "outcome", r->finished ? rr_run_outcome(r) : NULL);
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
		j_str(&w, "outcome", rr_attempt_outcome(r, a));
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
