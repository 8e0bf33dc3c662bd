/*
 * logsout.c: what 'vigil diagnose logs' prints (see logs.h): the text a person reads and the
 * JSON a program reads, from the findings logs.c grouped. Everything from the input is quoted
 * (strbuf_add_clean / strbuf_add_excerpt, the JSON writer's escapes).
 */
#include "logs.h"
#include "../lib/json.h"

#include <math.h>
#include <time.h>

void dlog_time_str(enum dlog_tb tb, double ts, char *out, size_t size)
{
	if (tb == DLOG_TB_WALL && isfinite(ts) && ts > -1e12 && ts < 1e12) {
		long long all = llround(ts * 1000.0); /* 1.120 is 1.11999...: round, not cut */
		long long sec = all >= 0 ? all / 1000 : -((-all + 999) / 1000);
		int ms = (int)(all - sec * 1000);
		time_t t = (time_t)sec;
		struct tm tm;
		if (gmtime_r(&t, &tm)) {
			snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
				 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
			return;
		}
	}
	if (tb == DLOG_TB_BOOT && isfinite(ts)) {
		snprintf(out, size, "boot+%.3fs", ts);
		return;
	}
	if (size)
		out[0] = 0;
}

/* "0-7,9,12-15" for a sorted list of ranks (at most about max bytes, then "..."). */
static void ranks_str(const struct dlog_finding *f, struct strbuf *sb, size_t max)
{
	size_t start = sb->len;
	for (size_t i = 0; i < f->nr_ranks;) {
		size_t j = i;
		while (j + 1 < f->nr_ranks && f->ranks[j + 1] == f->ranks[j] + 1)
			j++;
		if (sb->len > start)
			strbuf_addch(sb, ',');
		if (sb->len - start > max) {
			strbuf_addstr(sb, "...");
			return;
		}
		if (j == i)
			strbuf_addf(sb, "%ld", f->ranks[i]);
		else
			strbuf_addf(sb, "%ld-%ld", f->ranks[i], f->ranks[j]);
		i = j + 1;
	}
	if (f->more_ranks)
		strbuf_addf(sb, " and %llu more", (unsigned long long)f->more_ranks);
}

static void cause_str(const struct dlog_finding *f, struct strbuf *sb)
{
	if (f->num >= 0)
		strbuf_addf(sb, "%s %d: ", !strcmp(f->code, "sxid") ? "SXid" : "Xid", f->num);
	strbuf_addstr(sb, f->cause);
}

static void where_str(const struct dlog_occ *o, struct strbuf *sb)
{
	bool any = false;
	if (o->host[0]) {
		strbuf_addstr(sb, "host ");
		strbuf_add_clean(sb, o->host);
		any = true;
	}
	if (o->rank >= 0) {
		strbuf_addf(sb, "%srank %ld", any ? ", " : "", o->rank);
		any = true;
	}
	if (!any)
		strbuf_addstr(sb, "host and rank unknown");
}

/* "exitcode -9 (SIGKILL), pid 4242, local_rank 1, error_file <N/A>" for a launcher's word. */
static void launch_str(const struct dlog_launch *l, struct strbuf *sb)
{
	size_t start = sb->len;
	if (l->has_exit) {
		strbuf_addf(sb, "exitcode %d", l->exitcode);
		if (l->signal[0])
			strbuf_addf(sb, " (%s)", l->signal);
	} else if (l->torchrun) {
		strbuf_addstr(sb, "exitcode unknown");
	}
	if (l->pid >= 0)
		strbuf_addf(sb, "%spid %ld", sb->len > start ? ", " : "", l->pid);
	if (l->local_rank >= 0)
		strbuf_addf(sb, "%slocal_rank %ld", sb->len > start ? ", " : "", l->local_rank);
	if (l->error_file[0]) {
		strbuf_addf(sb, "%serror_file ", sb->len > start ? ", " : "");
		strbuf_add_clean(sb, l->error_file);
	}
	if (l->when[0]) {
		strbuf_addf(sb, "%storchrun's time ", sb->len > start ? ", " : "");
		strbuf_add_clean(sb, l->when);
	}
}

static void file_line(const struct dlog *d, const struct dlog_occ *o, struct strbuf *sb)
{
	strbuf_add_clean(sb, d->files[o->file].name);
	strbuf_addf(sb, ":%llu", (unsigned long long)o->line);
}

void dlog_write_text(const struct dlog *d, struct strbuf *out)
{
	char t[48];
	size_t unread = dlog_unreadable(d);
	if (!d->nr) {
		strbuf_addf(out, "no known error lines in %zu file%s", d->nr_files - unread,
			    d->nr_files - unread == 1 ? "" : "s");
		if (unread)
			strbuf_addf(out, " (%zu more could not be read: unknown)", unread);
		strbuf_addstr(out, "\n");
	} else {
		const struct dlog_finding *r = &d->f[d->root];
		strbuf_addstr(out, "likely root: ");
		cause_str(r, out);
		strbuf_addstr(out, "\n  where:  ");
		where_str(&r->first, out);
		dlog_time_str(r->first.tb, r->first.ts, t, sizeof(t));
		if (t[0])
			strbuf_addf(out, ", at %s", t);
		if (r->first.launch.torchrun)
			strbuf_addstr(out, r->first.launch.root_cause
						   ? " (torchrun's root cause)"
						   : " (a failure torchrun lists)");
		if (r->first.launch.has_exit || r->first.launch.torchrun) {
			strbuf_addstr(out, "\n  exit:   ");
			launch_str(&r->first.launch, out);
		}
		strbuf_addstr(out, "\n  line:   ");
		file_line(d, &r->first, out);
		strbuf_addstr(out, ": ");
		strbuf_add_excerpt(out, r->first.example, 160);
		strbuf_addf(out, "\n  why:    %s\n  action: %s\n", d->root_why, r->action);
		strbuf_addf(out, "\n%zu cause%s, in time order:\n", d->nr, d->nr == 1 ? "" : "s");
	}
	for (size_t i = 0; i < d->nr; i++) {
		const struct dlog_finding *f = &d->f[i];
		strbuf_addf(out, "  %s%-22s ", (long)i == d->root ? "* " : "  ", f->code);
		cause_str(f, out);
		strbuf_addf(out, "%s\n      %llu line%s", f->tier == DLOG_TIER_CASCADE ? " (cascade)" : "",
			    (unsigned long long)f->count, f->count == 1 ? "" : "s");
		if (f->nr_hosts) {
			strbuf_addf(out, ", host%s ", f->nr_hosts + f->more_hosts == 1 ? "" : "s");
			for (size_t h = 0; h < f->nr_hosts && h < 8; h++) {
				if (h)
					strbuf_addch(out, ',');
				strbuf_add_clean(out, f->hosts[h]);
			}
			if (f->nr_hosts + f->more_hosts > 8)
				strbuf_addf(out, " and %llu more",
					    (unsigned long long)(f->nr_hosts + f->more_hosts - 8));
		}
		if (f->nr_ranks) {
			strbuf_addf(out, ", rank%s ", f->nr_ranks + f->more_ranks == 1 ? "" : "s");
			ranks_str(f, out, 60);
		}
		dlog_time_str(f->first.tb, f->first.ts, t, sizeof(t));
		strbuf_addf(out, "; first %s%s", t, t[0] ? " " : "");
		file_line(d, &f->first, out);
		strbuf_addstr(out, "\n");
	}
	if (d->lost)
		strbuf_addf(out, "(%llu more error lines of causes past the first %d not grouped)\n",
			    (unsigned long long)d->lost, DLOG_FINDINGS_MAX);
	bool head = false;
	for (size_t i = 0; i < d->nr_files; i++) {
		const struct dlog_file *f = &d->files[i];
		if (!f->error && (f->wall || !f->found))
			continue;
		if (!head)
			strbuf_addstr(out, "\n");
		head = true;
		strbuf_addstr(out, "note: ");
		strbuf_add_clean(out, f->name);
		if (f->error) {
			strbuf_addstr(out, ": unknown: ");
			strbuf_add_clean(out, f->error);
		} else {
			strbuf_addstr(out, f->boot ? ": times since boot only, ordered within the file"
						   : ": no time stamps, ordered within the file only");
		}
		strbuf_addstr(out, "\n");
	}
}

static void json_occ(struct json_writer *w, const struct dlog *d, const struct dlog_occ *o)
{
	char t[48];
	json_key(w, "host");
	if (o->host[0])
		json_string(w, o->host);
	else
		json_null(w);
	json_key(w, "rank");
	if (o->rank >= 0)
		json_int(w, o->rank);
	else
		json_null(w);
	json_key(w, "example");
	json_string(w, o->example);
	json_key(w, "file");
	json_string(w, d->files[o->file].name);
	json_key(w, "line");
	json_uint(w, o->line);
	json_key(w, "time");
	dlog_time_str(o->tb, o->ts, t, sizeof(t));
	if (t[0])
		json_string(w, t);
	else
		json_null(w);
	json_key(w, "timebase");
	json_string(w, o->tb == DLOG_TB_WALL ? "wall" : o->tb == DLOG_TB_BOOT ? "boot" : "none");
	json_key(w, "exitcode");
	if (o->launch.has_exit)
		json_int(w, o->launch.exitcode);
	else
		json_null(w);
	json_key(w, "signal");
	if (o->launch.signal[0])
		json_string(w, o->launch.signal);
	else
		json_null(w);
	json_key(w, "torchrun");
	if (o->launch.torchrun) {
		json_open_object(w);
		json_key(w, "root_cause");
		json_bool(w, o->launch.root_cause);
		json_key(w, "pid");
		if (o->launch.pid >= 0)
			json_int(w, o->launch.pid);
		else
			json_null(w);
		json_key(w, "local_rank");
		if (o->launch.local_rank >= 0)
			json_int(w, o->launch.local_rank);
		else
			json_null(w);
		json_key(w, "error_file");
		if (o->launch.error_file[0])
			json_string(w, o->launch.error_file);
		else
			json_null(w);
		json_key(w, "time");
		if (o->launch.when[0])
			json_string(w, o->launch.when);
		else
			json_null(w);
		json_close_object(w);
	} else {
		json_null(w);
	}
}

static void json_cause(struct json_writer *w, const struct dlog_finding *f)
{
	struct strbuf c = STRBUF_INIT;
	cause_str(f, &c);
	json_key(w, "code");
	json_string(w, f->code);
	json_key(w, "cause");
	json_string(w, c.buf);
	json_key(w, "action");
	json_string(w, f->action);
	json_key(w, "action_code");
	json_string(w, action_name(f->act));
	json_key(w, "cascade");
	json_bool(w, f->tier == DLOG_TIER_CASCADE);
	if (f->num >= 0) {
		json_key(w, !strcmp(f->code, "sxid") ? "sxid" : "xid");
		json_int(w, f->num);
	}
	strbuf_release(&c);
}

void dlog_write_json(const struct dlog *d, struct strbuf *out)
{
	struct json_writer w;
	json_writer_init(&w, out, false);
	json_open_top(&w);
	json_key(&w, "root");
	if (d->root >= 0) {
		const struct dlog_finding *r = &d->f[d->root];
		json_open_object(&w);
		json_cause(&w, r);
		json_occ(&w, d, &r->first);
		json_key(&w, "why");
		json_string(&w, d->root_why);
		json_close_object(&w);
	} else {
		json_null(&w);
	}
	json_key(&w, "findings");
	json_open_array(&w);
	for (size_t i = 0; i < d->nr; i++) {
		const struct dlog_finding *f = &d->f[i];
		json_open_object(&w);
		json_cause(&w, f);
		json_key(&w, "count");
		json_uint(&w, f->count);
		json_key(&w, "first");
		json_open_object(&w);
		json_key(&w, "host");
		if (f->first.host[0])
			json_string(&w, f->first.host);
		else
			json_null(&w);
		json_key(&w, "rank");
		if (f->first.rank >= 0)
			json_int(&w, f->first.rank);
		else
			json_null(&w);
		json_close_object(&w);
		json_key(&w, "hosts");
		json_open_array(&w);
		for (size_t h = 0; h < f->nr_hosts; h++)
			json_string(&w, f->hosts[h]);
		json_close_array(&w);
		json_key(&w, "more_hosts");
		json_uint(&w, f->more_hosts);
		json_key(&w, "ranks");
		json_open_array(&w);
		for (size_t r = 0; r < f->nr_ranks; r++)
			json_int(&w, f->ranks[r]);
		json_close_array(&w);
		json_key(&w, "more_ranks");
		json_uint(&w, f->more_ranks);
		json_occ(&w, d, &f->first);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "files");
	json_open_array(&w);
	for (size_t i = 0; i < d->nr_files; i++) {
		const struct dlog_file *f = &d->files[i];
		json_open_object(&w);
		json_key(&w, "file");
		json_string(&w, f->name);
		json_key(&w, "host");
		if (f->host[0])
			json_string(&w, f->host);
		else
			json_null(&w);
		json_key(&w, "rank");
		if (f->rank >= 0)
			json_int(&w, f->rank);
		else
			json_null(&w);
		json_key(&w, "lines");
		json_uint(&w, f->lines);
		json_key(&w, "bytes");
		json_uint(&w, f->bytes);
		json_key(&w, "errors");
		json_uint(&w, f->found);
		json_key(&w, "cut_lines");
		json_uint(&w, f->cut_lines);
		json_key(&w, "times");
		json_string(&w, f->wall ? "wall" : f->boot ? "boot" : "none");
		json_key(&w, "status");
		json_string(&w, f->error ? "unknown" : "read");
		json_key(&w, "error");
		if (f->error)
			json_string(&w, f->error);
		else
			json_null(&w);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "unknown_times");
	json_bool(&w, d->unknown_times);
	json_key(&w, "unreadable");
	json_uint(&w, dlog_unreadable(d));
	json_key(&w, "ungrouped");
	json_uint(&w, d->lost);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}
