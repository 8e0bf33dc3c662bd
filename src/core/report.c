/* report.c: verdict, reason, and the JSON / Prometheus / table writers (see report.h). */
#include "report.h"
#include "../lib/prom.h"

#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

void report_init(struct report *r, const char *host, double time)
{
	memset(r, 0, sizeof(*r));
	r->host = xstrdup(host);
	r->time = time;
}

void report_release(struct report *r)
{
	for (size_t i = 0; i < r->nr; i++)
		check_result_release(&r->results[i]);
	free(r->results);
	free(r->host);
	memset(r, 0, sizeof(*r));
}

struct check_result *report_add(struct report *r, const char *name)
{
	ALLOC_GROW(r->results, r->nr + 1, r->alloc);
	check_result_init(&r->results[r->nr], name);
	return &r->results[r->nr++];
}

void report_move_result(struct report *r, struct check_result *local)
{
	result_finish(local);
	struct check_result *res = report_add(r, local->name);
	char *name = res->name;
	*res = *local;
	free(name);
	memset(local, 0, sizeof(*local));
}

const char *verdict_name(enum verdict v)
{
	switch (v) {
	case VERDICT_HEALTHY:
		return "healthy";
	case VERDICT_UNHEALTHY:
		return "unhealthy";
	default:
		return "unknown";
	}
}

int verdict_exit_code(enum verdict v)
{
	switch (v) {
	case VERDICT_HEALTHY:
		return 0;
	case VERDICT_UNHEALTHY:
		return 1;
	default:
		return 3;
	}
}

/* Copy s into the reason, one printable line, cut to fit with "..." when too long. */
static void reason_set(struct report *r, const char *prefix, const char *msg, const char *suffix)
{
	struct strbuf sb = STRBUF_INIT;
	size_t fixed = strlen(prefix) + strlen(suffix);
	strbuf_addstr(&sb, prefix);
	size_t room = REASON_MAX > fixed ? REASON_MAX - fixed : 0;
	/* control bytes and bad UTF-8 from outside are spelled out, then cut to fit */
	struct strbuf clean = STRBUF_INIT;
	strbuf_add_clean(&clean, msg);
	if (clean.len <= room) {
		strbuf_addstr(&sb, clean.buf);
	} else if (room > 3) {
		/* cut from the source, so an escape ("\\x1b", "<U+202E>") is never cut in half */
		strbuf_add_excerpt(&sb, msg, room - 3);
	}
	strbuf_release(&clean);
	strbuf_addstr(&sb, suffix);
	for (size_t i = 0; i < sb.len; i++)
		if ((unsigned char)sb.buf[i] < 0x20 || sb.buf[i] == 0x7f)
			sb.buf[i] = ' ';
	strlcpy_v(r->reason, sb.buf, sizeof(r->reason));
	strbuf_release(&sb);
}

void report_finish(struct report *r)
{
	const struct finding *worst = NULL;
	const struct check_result *worst_check = NULL, *unknown_check = NULL;
	size_t fails = 0, warns = 0;
	/* However a result got here (a child, the cache, a test), no findings is no evidence, and
	 * a check is at least as bad as its worst finding (a cached "ok" over an unknown finding
	 * is unknown). */
	for (size_t i = 0; i < r->nr; i++) {
		struct check_result *c = &r->results[i];
		if (!c->nr && c->status != STATUS_FAIL && c->status != STATUS_UNKNOWN) {
			c->status = STATUS_UNKNOWN;
			if (!c->error)
				c->error = xstrdup("the check reported nothing");
		}
		for (size_t j = 0; j < c->nr; j++) {
			if (c->findings[j].status > c->status)
				c->status = c->findings[j].status;
			/* every unknown says what to do (docs/codes: INVESTIGATE when the check did
			 * not say more) */
			if (c->findings[j].status == STATUS_UNKNOWN &&
			    c->findings[j].action == ACTION_NONE)
				c->findings[j].action = ACTION_INVESTIGATE;
		}
		if (c->error)
			c->action = result_error_action(c);
	}
	for (size_t i = 0; i < r->nr; i++) {
		const struct check_result *c = &r->results[i];
		if (c->status == STATUS_UNKNOWN && !unknown_check)
			unknown_check = c;
		for (size_t j = 0; j < c->nr; j++) {
			const struct finding *f = &c->findings[j];
			if (f->status == STATUS_FAIL) {
				fails++;
				if (!worst || f->severity > worst->severity) {
					worst = f;
					worst_check = c;
				}
			} else if (f->status == STATUS_WARN) {
				warns++;
			}
		}
		/* A check that failed without a finding (should not happen) still fails. */
		if (c->status == STATUS_FAIL && !c->nr && !worst_check) {
			worst_check = c;
			fails++;
		}
	}
	struct strbuf pre = STRBUF_INIT, suf = STRBUF_INIT;
	if (!r->nr) {
		/* nothing examined (an empty cached result, say) is no healthy host */
		r->verdict = VERDICT_UNKNOWN;
		reason_set(r, "unknown: ", "no check ran", "");
	} else if (fails) {
		r->verdict = VERDICT_UNHEALTHY;
		strbuf_addf(&pre, "%s: ", worst_check->name);
		if (fails > 1)
			strbuf_addf(&suf, " (+%zu more)", fails - 1);
		reason_set(r, pre.buf, worst ? worst->message : "failed", suf.buf);
	} else if (unknown_check) {
		r->verdict = VERDICT_UNKNOWN;
		const struct finding *f = result_worst(unknown_check);
		strbuf_addf(&pre, "unknown: %s: ", unknown_check->name);
		const char *why = unknown_check->error ? unknown_check->error
			: f ? f->message : "could not tell";
		reason_set(r, pre.buf, why, "");
	} else {
		/* healthy, and plainly what was not examined: "healthy (skipped: gpu, pcie)" */
		r->verdict = VERDICT_HEALTHY;
		struct strbuf what = STRBUF_INIT;
		if (warns)
			strbuf_addf(&what, "%zu warning%s", warns, warns == 1 ? "" : "s");
		for (size_t i = 0, n = 0; i < r->nr; i++)
			if (r->results[i].status == STATUS_SKIPPED)
				strbuf_addf(&what, "%s%s", n++ ? ", "
							 : what.len ? "; skipped: "
								    : "skipped: ",
					    r->results[i].name);
		if (what.len)
			reason_set(r, "healthy (", what.buf, ")");
		else
			reason_set(r, "healthy", "", "");
		strbuf_release(&what);
	}
	strbuf_release(&pre);
	strbuf_release(&suf);
}

void result_to_json(struct json_writer *w, const struct check_result *res)
{
	json_open_object(w);
	json_key(w, "name");
	json_string(w, res->name);
	json_key(w, "status");
	json_string(w, status_name(res->status));
	json_key(w, "duration_ms");
	json_uint(w, res->duration_ms);
	if (res->error) {
		json_key(w, "error");
		json_string(w, res->error);
		json_key(w, "action");
		json_string(w, action_name(result_error_action(res)));
	}
	json_key(w, "findings");
	json_open_array(w);
	for (size_t i = 0; i < res->nr; i++) {
		const struct finding *f = &res->findings[i];
		json_open_object(w);
		json_key(w, "status");
		json_string(w, status_name(f->status));
		json_key(w, "severity");
		json_string(w, severity_name(f->severity));
		json_key(w, "action");
		json_string(w, action_name(f->action));
		json_key(w, "code");
		json_string(w, f->code);
		json_key(w, "device");
		json_string(w, f->device);
		json_key(w, "message");
		json_string(w, f->message);
		json_key(w, "details");
		json_open_object(w);
		for (size_t j = 0; j < f->nr_details; j++) {
			json_key(w, f->details[j].key);
			if (f->details[j].numeric) {
				double d;
				if (parse_double(f->details[j].value, &d))
					json_double(w, d);
				else
					json_null(w);
			} else {
				json_string(w, f->details[j].value);
			}
		}
		json_close_object(w);
		json_close_object(w);
	}
	json_close_array(w);
	json_close_object(w);
}

int result_from_json(const struct json_value *v, struct check_result *res, struct strbuf *err)
{
	const char *st = json_get_string(v, "status");
	const struct json_value *fs = json_get(v, "findings");
	double d;
	if (!st || status_from_name(st) < 0 || !fs || fs->type != JSON_ARRAY)
		return error_set(err, "check result lacks status or findings");
	res->status = (enum status)status_from_name(st);
	if (json_get_number(v, "duration_ms", &d) && d >= 0)
		res->duration_ms = (uint64_t)d;
	const char *e = json_get_string(v, "error");
	if (e) {
		free(res->error);
		res->error = xstrdup(e);
		int a = action_from_name(json_get_string(v, "action"));
		if (a > 0)
			res->action = (enum action)a;
	}
	for (size_t i = 0; i < fs->nr; i++) {
		const struct json_value *fj = fs->items[i];
		int fst = status_from_name(json_get_string(fj, "status"));
		int sev = severity_from_name(json_get_string(fj, "severity"));
		int act = action_from_name(json_get_string(fj, "action"));
		const char *msg = json_get_string(fj, "message");
		if (fst < 0 || sev < 0 || act < 0 || !msg)
			return error_set(err, "finding %zu is malformed", i);
		struct finding *f = result_add(res, (enum status)fst, (enum action)act,
					       json_get_string(fj, "code"),
					       json_get_string(fj, "device"), "%s", msg);
		f->severity = (enum severity)sev;
		const struct json_value *det = json_get(fj, "details");
		for (size_t j = 0; det && det->type == JSON_OBJECT && j < det->nr; j++) {
			const struct json_value *dv = det->items[j];
			if (dv->type == JSON_NUMBER)
				finding_detail_num(f, det->keys[j], dv->number);
			else if (dv->type == JSON_STRING)
				finding_detail(f, det->keys[j], "%s", dv->string);
			else if (dv->type == JSON_BOOL)
				finding_detail(f, det->keys[j], "%s", dv->boolean ? "true" : "false");
		}
	}
	return 0;
}

static void iso_time(double t, char *buf, size_t n)
{
	time_t s = (time_t)t;
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void report_json_verdict(struct json_writer *w, const struct report *r)
{
	json_key(w, "verdict");
	json_string(w, verdict_name(r->verdict));
	json_key(w, "exit_code");
	json_int(w, verdict_exit_code(r->verdict));
	json_key(w, "reason");
	json_string(w, r->reason);
}

void report_json(const struct report *r, struct strbuf *out, bool pretty)
{
	report_json_extra(r, out, pretty, NULL, NULL);
}

void report_json_extra(const struct report *r, struct strbuf *out, bool pretty,
		       void (*extra)(struct json_writer *w, void *arg), void *arg)
{
	struct json_writer w;
	char ts[32];
	json_writer_init(&w, out, pretty);
	iso_time(r->time, ts, sizeof(ts));
	json_open_top(&w);
	json_key(&w, "host");
	json_string(&w, r->host);
	json_key(&w, "time");
	json_string(&w, ts);
	json_key(&w, "timestamp");
	json_double(&w, (double)(int64_t)r->time);
	json_key(&w, "vigil_version");
	json_string(&w, VIGIL_VERSION);
	report_json_verdict(&w, r);
	json_key(&w, "duration_ms");
	json_uint(&w, r->duration_ms);
	if (r->interval_s > 0) {
		json_key(&w, "agent_interval_s");
		json_double(&w, r->interval_s);
	}
	if (extra)
		extra(&w, arg);
	json_key(&w, "checks");
	json_open_array(&w);
	for (size_t i = 0; i < r->nr; i++)
		result_to_json(&w, &r->results[i]);
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

void report_prom(const struct report *r, struct strbuf *out)
{
	static const enum verdict verdicts[] = { VERDICT_HEALTHY, VERDICT_UNHEALTHY,
						 VERDICT_UNKNOWN };
	static const enum status statuses[] = { STATUS_OK, STATUS_WARN, STATUS_FAIL,
						STATUS_UNKNOWN, STATUS_SKIPPED };
	char buf[64];

	prom_family(out, "vigil_verdict", "gauge",
		    "Host verdict of the last vigil check (1 for the current verdict).");
	for (size_t i = 0; i < ARRAY_SIZE(verdicts); i++) {
		const char *l[] = { "verdict", verdict_name(verdicts[i]), NULL };
		prom_sample(out, "vigil_verdict", l, r->verdict == verdicts[i]);
	}
	prom_family(out, "vigil_healthy", "gauge", "1 if the last vigil check found the host healthy.");
	prom_sample(out, "vigil_healthy", NULL, r->verdict == VERDICT_HEALTHY);
	prom_family(out, "vigil_last_run_timestamp_seconds", "gauge",
		    "Unix time at which the last vigil check started.");
	prom_sample(out, "vigil_last_run_timestamp_seconds", NULL, (double)(int64_t)r->time);
	prom_family(out, "vigil_run_duration_seconds", "gauge",
		    "Wall time of the last vigil check.");
	prom_sample(out, "vigil_run_duration_seconds", NULL, (double)r->duration_ms / 1000.0);

	prom_family(out, "vigil_check_status", "gauge",
		    "Status of each check (1 for the current status).");
	for (size_t i = 0; i < r->nr; i++)
		for (size_t s = 0; s < ARRAY_SIZE(statuses); s++) {
			const char *l[] = { "check", r->results[i].name, "status",
					    status_name(statuses[s]), NULL };
			prom_sample(out, "vigil_check_status", l,
				    r->results[i].status == statuses[s]);
		}
	prom_family(out, "vigil_check_duration_seconds", "gauge", "Wall time of each check.");
	for (size_t i = 0; i < r->nr; i++) {
		const char *l[] = { "check", r->results[i].name, NULL };
		prom_sample(out, "vigil_check_duration_seconds", l,
			    (double)r->results[i].duration_ms / 1000.0);
	}
	prom_family(out, "vigil_findings", "gauge", "Number of findings of each check by status.");
	for (size_t i = 0; i < r->nr; i++)
		for (size_t s = 0; s < ARRAY_SIZE(statuses); s++) {
			size_t n = 0;
			for (size_t j = 0; j < r->results[i].nr; j++)
				n += r->results[i].findings[j].status == statuses[s];
			const char *l[] = { "check", r->results[i].name, "status",
					    status_name(statuses[s]), NULL };
			prom_sample(out, "vigil_findings", l, (double)n);
		}
	prom_family(out, "vigil_problem", "gauge",
		    "One series per finding that is not ok, with its action (value 1).");
	for (size_t i = 0; i < r->nr; i++)
		for (size_t j = 0; j < r->results[i].nr; j++) {
			const struct finding *f = &r->results[i].findings[j];
			if (f->status == STATUS_OK || f->status == STATUS_SKIPPED)
				continue;
			snprintf(buf, sizeof(buf), "%s", severity_name(f->severity));
			const char *l[] = { "check",  r->results[i].name, "code",
					    f->code,  "device", f->device,
					    "status", status_name(f->status), "severity",
					    buf,      "action", action_name(f->action),
					    NULL };
			prom_sample(out, "vigil_problem", l, 1);
		}
}

int color_mode_parse(const char *s)
{
	if (!strcmp(s, "always"))
		return COLOR_ALWAYS;
	if (!strcmp(s, "never"))
		return COLOR_NEVER;
	if (!strcmp(s, "auto"))
		return COLOR_AUTO;
	return -2;
}

bool color_enabled(int mode, int fd)
{
	if (mode != COLOR_AUTO)
		return mode == COLOR_ALWAYS;
	const char *no = getenv("NO_COLOR");
	return isatty(fd) && !(no && *no);
}

const char *status_color(enum status s)
{
	switch (s) {
	case STATUS_OK:
		return "\033[32m";
	case STATUS_WARN:
		return "\033[33m";
	case STATUS_FAIL:
		return "\033[1;31m";
	case STATUS_UNKNOWN:
		return "\033[35m";
	default:
		return "\033[2m";
	}
}

const char *verdict_color(enum verdict v)
{
	return v == VERDICT_HEALTHY ? "\033[1;32m" : v == VERDICT_UNHEALTHY ? "\033[1;31m"
									   : "\033[1;35m";
}

static void add_status(struct strbuf *out, enum status s, bool color, int width)
{
	if (color)
		strbuf_addstr(out, status_color(s));
	strbuf_addf(out, "%-*s", width, status_name(s));
	if (color)
		strbuf_addstr(out, COLOR_RESET);
}

void report_verdict_line(const struct report *r, struct strbuf *out, bool color)
{
	strbuf_addstr(out, "verdict: ");
	if (color)
		strbuf_addstr(out, verdict_color(r->verdict));
	strbuf_addstr(out, verdict_name(r->verdict));
	if (color)
		strbuf_addstr(out, COLOR_RESET);
	/* the reason without the verdict it repeats: "healthy (3 warnings)" says "(3 warnings)" */
	const char *why = r->reason;
	if (r->verdict == VERDICT_HEALTHY)
		skip_prefix(why, "healthy", &why);
	else
		skip_prefix(why, "unknown: ", &why);
	while (*why == ' ')
		why++;
	if (*why == '(')
		strbuf_addf(out, "  %s", why);
	else if (*why)
		strbuf_addf(out, "  (%s)", why);
	strbuf_addch(out, '\n');
}

/*
 * The width the table is to fit: COLUMNS when set to a number (as ls and git honour it), else
 * the terminal's width when stdout is one; 0, no limit, otherwise, so a script that reads the
 * table through a pipe gets every word (the JSON has everything in any case).
 */
static size_t table_width(void)
{
	const char *e = getenv("COLUMNS");
	char *end;
	if (e && *e) {
		unsigned long v = strtoul(e, &end, 10);
		if (!*end && v >= 40 && v <= 10000)
			return v;
	}
	struct winsize ws;
	if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		return ws.ws_col;
	return 0;
}

/* Terminal columns of s[0..n): a character each, colour escapes (ESC [ ... m) none. */
static size_t text_cols(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\033') {
			while (i < n && s[i] != 'm')
				i++;
			continue;
		}
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	}
	return c;
}

/* text, made safe to print, with at most max columns: a longer one is cut with an ellipsis. */
static void add_fitted(struct strbuf *out, const char *text, size_t max)
{
	struct strbuf t = STRBUF_INIT;
	strbuf_add_clean(&t, text);
	size_t cols = text_cols(t.buf, t.len);
	if (max && cols > max) {
		size_t keep = max > 1 ? max - 1 : 0, i = 0;
		for (size_t c = 0; i < t.len; i++) {
			if (((unsigned char)t.buf[i] & 0xc0) != 0x80 && c++ == keep)
				break;
		}
		strbuf_setlen(&t, i);
		strbuf_rtrim(&t);
		strbuf_addstr(&t, "\u2026");
	}
	strbuf_add(out, t.buf, t.len);
	strbuf_release(&t);
}

/* message and its "  -> ACTION" after the part of the line from start, within width columns
 * (0: any width); the action is what the reader acts on, so the message gives way. */
static void add_summary(struct strbuf *out, size_t start, const char *message, enum action action,
			size_t width)
{
	char act[64] = "";
	if (action != ACTION_NONE)
		snprintf(act, sizeof(act), "  -> %s", action_name(action));
	size_t used = text_cols(out->buf + start, out->len - start) + strlen(act);
	add_fitted(out, message, !width ? 0 : used + 8 < width ? width - used : 8);
	strbuf_addstr(out, act);
}

void report_table(const struct report *r, struct strbuf *out, bool color, bool verbose)
{
	char ts[32];
	size_t width = table_width();
	iso_time(r->time, ts, sizeof(ts));
	strbuf_addstr(out, "vigil check on ");
	strbuf_add_clean(out, r->host);
	strbuf_addf(out, " at %s (%llu ms)\n\n", ts, (unsigned long long)r->duration_ms);
	strbuf_addf(out, "%-11s %-8s %7s  %s\n", "CHECK", "STATUS", "TIME", "SUMMARY");
	for (size_t i = 0; i < r->nr; i++) {
		const struct check_result *c = &r->results[i];
		const struct finding *w = result_worst(c);
		/* When all is well, the check's own summary says most. */
		if (w && w->status <= STATUS_OK) {
			const struct finding *s = result_find(c, "summary", NULL);
			if (s && s->status == w->status)
				w = s;
		}
		size_t line = out->len, at = out->len;
		strbuf_add_clean(out, c->name);
		strbuf_addf(out, "%*s", out->len - at < 11 ? (int)(11 - (out->len - at)) : 0, "");
		strbuf_addch(out, ' ');
		add_status(out, c->status, color, 8);
		strbuf_addf(out, " %5llums  ", (unsigned long long)c->duration_ms);
		if (c->error) {
			add_summary(out, line, c->error, result_error_action(c), width);
			w = NULL;
		} else if (w) {
			add_summary(out, line, w->message, w->action, width);
		}
		strbuf_addch(out, '\n');
		for (size_t j = 0; j < c->nr; j++) {
			const struct finding *f = &c->findings[j];
			bool shown = f->status == STATUS_WARN || f->status == STATUS_FAIL ||
				     f->status == STATUS_UNKNOWN || verbose;
			if (!shown || f == w)
				continue;
			size_t fl = out->len;
			strbuf_addstr(out, "    ");
			add_status(out, f->status, color, 7);
			strbuf_addch(out, ' ');
			add_summary(out, fl, f->message, f->action, width);
			strbuf_addch(out, '\n');
		}
	}
	strbuf_addch(out, '\n');
	struct strbuf v = STRBUF_INIT;
	report_verdict_line(r, &v, color);
	strbuf_setlen(&v, v.len - 1);
	if (width && text_cols(v.buf, v.len) > width) {
		/* the reason, cut: "verdict: unhealthy  (...)" keeps its verdict word */
		size_t keep = 0, c = 0;
		for (; keep < v.len && c < width - 1; keep++) {
			if (v.buf[keep] == '\033') {
				while (keep < v.len && v.buf[keep] != 'm')
					keep++;
				continue;
			}
			c += ((unsigned char)v.buf[keep] & 0xc0) != 0x80;
		}
		while (keep < v.len && ((unsigned char)v.buf[keep] & 0xc0) == 0x80)
			keep++;
		strbuf_setlen(&v, keep);
		strbuf_addstr(&v, "\u2026");
	}
	strbuf_addch(&v, '\n');
	strbuf_add(out, v.buf, v.len);
	strbuf_release(&v);
}
