/*
 * hanglogs_out.c: what 'vigil diagnose hang' from logs says (see hanglogs.h): the paragraph,
 * the text listing and the JSON object of a finished struct hlog. Everything from the input
 * reaches a terminal through strbuf_add_clean or the JSON writer's escaping.
 */
#include "hanglogs.h"
#include "hanglogs_int.h"
#include "../lib/json.h"
#include "../lib/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- output ---- */

const char *hlog_verdict_name(enum hlog_verdict v)
{
	switch (v) {
	case HLOG_CULPRIT: return "culprit";
	case HLOG_SUSPECTS: return "suspects";
	case HLOG_INSIDE: return "inside_collective";
	case HLOG_SILENT: return "silent";
	default: return "unknown";
	}
}

const char *hlog_why_name(enum hlog_why w)
{
	switch (w) {
	case HLOG_WHY_NEVER_ENTERED: return "never_entered";
	case HLOG_WHY_BEHIND: return "behind";
	case HLOG_WHY_DESYNC: return "desync_report";
	case HLOG_WHY_SILENT: return "silent";
	case HLOG_WHY_OTHER_GROUP: return "timed_out_in_other_group";
	case HLOG_WHY_NO_TIMEOUT: return "no_timeout";
	default: return "no_output";
	}
}

static void time_str(const struct hlog_time *t, char *out, size_t size)
{
	static const char *const mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	static const int before_m[13] = { 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365 };
	out[0] = 0;
	if (!isfinite(t->ts) || t->ts < -1e12 || t->ts > 1e12)
		return;
	long long all = llround(t->ts * 1000.0);
	long long sec = all >= 0 ? all / 1000 : -((-all + 999) / 1000);
	int ms = (int)(all - sec * 1000);
	if (t->tb == HLOG_TB_WALL) {
		time_t tt = (time_t)sec;
		struct tm tm;
		if (gmtime_r(&tt, &tm))
			snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
				 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
	} else if (t->tb == HLOG_TB_GLOG && sec >= 0) {
		int day = (int)(sec / 86400), m = 0;
		while (m < 11 && day >= before_m[m + 1])
			m++;
		int s = (int)(sec % 86400);
		snprintf(out, size, "%s %02d %02d:%02d:%02d.%03d", mon[m], day - before_m[m] + 1,
			 s / 3600, s / 60 % 60, s % 60, ms);
	}
}

static void group_label(const struct hlog_group *g, struct strbuf *sb)
{
	if (g->name[0]) {
		strbuf_addstr(sb, "process group ");
		strbuf_add_clean(sb, g->name);
	} else if (g->cluster) {
		/* PyTorch 1.x names no group: this one is told apart by its SeqNum */
		strbuf_addstr(sb, "an unnamed process group");
		if (g->seq != HLOG_UNSET)
			strbuf_addf(sb, " (its collectives at SeqNum %lld)", (long long)g->seq);
	} else if (g->dflt) {
		strbuf_addstr(sb, "the default process group");
	} else {
		strbuf_addstr(sb, "a process group its lines do not name");
	}
}

static void who_name(const struct hlog_who *w, const struct hlog_group *g, struct strbuf *sb)
{
	if (w->rank >= 0) {
		strbuf_addf(sb, "rank %ld", w->rank);
	} else if (g->cluster) {
		strbuf_addf(sb, "rank %ld of that group", w->grank);
	} else {
		strbuf_addf(sb, "rank %ld of ", w->grank);
		group_label(g, sb);
	}
	if (w->host[0]) {
		strbuf_addstr(sb, " (host ");
		strbuf_add_clean(sb, w->host);
		strbuf_addch(sb, ')');
	}
}

/* What PyTorch's desync report said, in its own numbering (not the watchdog's SeqNum). */
static void report_why(const struct hlog_who *w, const struct hlog_group *g, struct strbuf *sb)
{
	switch (w->report) {
	case HLOG_REPORT_NEVER_JOINED:
		strbuf_addstr(sb, "never joined any collective, says PyTorch's desync report");
		return;
	case HLOG_REPORT_NOT_JOINED:
		if (w->report_seq != HLOG_UNSET && w->report_next != HLOG_UNSET)
			strbuf_addf(sb, "finished collective #%lld but did not join #%lld",
				    (long long)w->report_seq, (long long)w->report_next);
		else
			strbuf_addstr(sb, "did not join the collective the others are in");
		break;
	case HLOG_REPORT_NOT_FINISHED:
		strbuf_addf(sb, "joined collective #%lld but did not finish it while the others "
				"went on", (long long)w->report_seq);
		break;
	default:
		strbuf_addstr(sb, "is named by PyTorch's desync report");
		return;
	}
	strbuf_addstr(sb, ", says PyTorch's desync report (its # counts its own way");
	if (g->seq != HLOG_UNSET)
		strbuf_addf(sb, "; the watchdog's SeqNum is %lld", (long long)g->seq);
	strbuf_addch(sb, ')');
}

static void who_why(const struct hlog *h, const struct hlog_who *w, const struct hlog_group *g,
		    struct strbuf *sb)
{
	char t[48];
	time_str(&w->last, t, sizeof(t));
	switch (w->why) {
	case HLOG_WHY_NEVER_ENTERED:
		strbuf_addf(sb, "never entered it (last enqueued work %lld", (long long)w->last_enq);
		if (w->last_done != HLOG_UNSET)
			strbuf_addf(sb, ", last completed %lld", (long long)w->last_done);
		strbuf_addch(sb, ')');
		break;
	case HLOG_WHY_BEHIND:
		strbuf_addf(sb, "is behind: it timed out at an earlier work, #%lld", (long long)w->seq);
		break;
	case HLOG_WHY_DESYNC:
		report_why(w, g, sb);
		break;
	case HLOG_WHY_SILENT:
		strbuf_addf(sb, "printed no timeout and its output stopped at %s", t[0] ? t : "?");
		if (w->behind_s >= 0)
			strbuf_addf(sb, ", %.0f s before the first timeout", w->behind_s);
		break;
	case HLOG_WHY_OTHER_GROUP:
		strbuf_addstr(sb, "timed out in ");
		if (w->other_group < h->nr_groups)
			group_label(&h->groups[w->other_group], sb);
		else
			strbuf_addstr(sb, "another process group");
		strbuf_addstr(sb, " instead: it waits there");
		break;
	case HLOG_WHY_NO_TIMEOUT:
		strbuf_addstr(sb, "printed no timeout");
		if (t[0])
			strbuf_addf(sb, " (its output goes on until %s)", t);
		break;
	default:
		strbuf_addstr(sb, "has no output in any of the logs");
		break;
	}
}

static void ranks_str(const long *r, size_t nr, uint64_t more, struct strbuf *sb)
{
	size_t start = sb->len;
	for (size_t i = 0; i < nr;) {
		size_t j = i;
		while (j + 1 < nr && r[j + 1] == r[j] + 1)
			j++;
		if (sb->len > start)
			strbuf_addch(sb, ',');
		if (sb->len - start > 60) {
			strbuf_addstr(sb, "...");
			break;
		}
		if (j == i)
			strbuf_addf(sb, "%ld", r[i]);
		else
			strbuf_addf(sb, "%ld-%ld", r[i], r[j]);
		i = j + 1;
	}
	if (more)
		strbuf_addf(sb, " and %llu more", (unsigned long long)more);
}

void hlog_summary(const struct hlog *h, struct strbuf *out)
{
	char t[48];
	if (!h->nr_order) {
		if (h->verdict == HLOG_SILENT) {
			const struct hlog_who *w = &h->silent[0];
			strbuf_addstr(out, "no watchdog timeout in the logs; the output that stopped first is ");
			if (w->rank >= 0)
				strbuf_addf(out, "rank %ld's", w->rank);
			else
				strbuf_addstr(out, "that");
			if (w->host[0]) {
				strbuf_addstr(out, " on host ");
				strbuf_add_clean(out, w->host);
			}
			time_str(&w->last, t, sizeof(t));
			strbuf_addf(out, ", at %s, %.0f s before the latest line of the others", t, w->behind_s);
			if (h->nr_silent > 1)
				strbuf_addf(out, " (%zu outputs stopped early)", h->nr_silent);
			strbuf_addstr(out, ": a hung rank stops logging, so look there first (vigil stacks, "
					   "its host's kernel log).");
		} else {
			strbuf_addstr(out, "unknown: no watchdog timeout line in the logs");
			if (h->silent_inconclusive)
				strbuf_addstr(out, ", and most outputs stop early (the trainer prints "
						   "rarely on most ranks), so silence names no one");
			else
				strbuf_addstr(out, " and no output that stopped well before the others");
			strbuf_addstr(out, "; the logs cannot tell which rank hung, or whether one did.");
		}
	} else {
		const struct hlog_group *g = &h->groups[h->order_groups[0]];
		strbuf_addstr(out, "in ");
		group_label(g, out);
		strbuf_addf(out, ", %zu rank%s (", g->nr_victims + (size_t)g->more_victims,
			    g->nr_victims + g->more_victims == 1 ? "" : "s");
		ranks_str(g->victims, g->nr_victims, g->more_victims, out);
		strbuf_addf(out, ") timed out waiting in %s", g->op[0] ? g->op : "a collective");
		if (g->seq != HLOG_UNSET)
			strbuf_addf(out, " #%lld", (long long)g->seq);
		if (g->numel_in != HLOG_UNSET)
			strbuf_addf(out, " (%lld elements in)", (long long)g->numel_in);
		if (g->waited_ms != HLOG_UNSET)
			strbuf_addf(out, " after %lld ms", (long long)g->waited_ms);
		time_str(&g->first, t, sizeof(t));
		if (t[0])
			strbuf_addf(out, ", the first at %s", t);
		if (g->nr_culprits) {
			strbuf_addstr(out, "; ");
			for (size_t i = 0; i < g->nr_culprits && i < 3; i++) {
				if (i)
					strbuf_addstr(out, "; ");
				who_name(&g->culprits[i], g, out);
				strbuf_addch(out, ' ');
				who_why(h, &g->culprits[i], g, out);
			}
			if (g->nr_culprits > 3)
				strbuf_addf(out, "; and %zu more", g->nr_culprits - 3);
			strbuf_addstr(out, ". The ranks that print the timeout are victims: look at ");
			who_name(&g->culprits[0], g, out);
			strbuf_addstr(out, " first (vigil stacks, its host's kernel log).");
		} else if (g->nr_suspects) {
			strbuf_addstr(out, "; no rank is shown to have stayed out of it, but ");
			for (size_t i = 0; i < g->nr_suspects && i < 3; i++) {
				if (i)
					strbuf_addstr(out, "; ");
				who_name(&g->suspects[i], g, out);
				strbuf_addch(out, ' ');
				who_why(h, &g->suspects[i], g, out);
			}
			if (g->nr_suspects > 3)
				strbuf_addf(out, "; and %zu more", g->nr_suspects - 3);
			strbuf_addstr(out, ": suspects, not proven culprits.");
		} else {
			strbuf_addstr(out, "; every rank the logs show timed out in it and none is missing: "
					   "they all entered it and none finished, so the hang is inside the "
					   "collective (network, NCCL, a GPU), or the logs lack the rank that "
					   "stayed out.");
		}
	}
	if (h->has_nccl) {
		const struct hlog_nccl_line *l = &h->nccl_first;
		strbuf_addf(out, " NCCL: %llu WARN and %llu error line%s; the first", (unsigned long long)h->nccl_warns,
			    (unsigned long long)h->nccl_errors, h->nccl_warns + h->nccl_errors == 1 ? "" : "s");
		if (l->host[0]) {
			strbuf_addstr(out, " on ");
			strbuf_add_clean(out, l->host);
		}
		if (l->rank >= 0)
			strbuf_addf(out, " rank %ld", l->rank);
		time_str(&l->t, t, sizeof(t));
		if (t[0])
			strbuf_addf(out, " at %s", t);
		strbuf_addstr(out, ": ");
		strbuf_add_excerpt(out, l->example, 120);
		strbuf_addch(out, '.');
	}
}

/* What to do next: every verdict has one, "unknown" above all. */
const char *hlog_action(const struct hlog *h)
{
	switch (h->verdict) {
	case HLOG_CULPRIT:
		return "take the culprit's stacks while the job hangs (vigil stacks) and read its "
		       "host's kernel log; if its GPU or NIC is at fault, restart without that host";
	case HLOG_SUSPECTS:
		return "take the suspects' stacks while the job hangs (vigil stacks) and read their "
		       "hosts' kernel logs";
	case HLOG_INSIDE:
		return "check the group's hosts (vigil check, vigil net): every rank entered and none "
		       "finished; for a next hang set TORCH_NCCL_DESYNC_DEBUG=1 or load vigil's NCCL "
		       "recorder (vigil run --nccl-recorder)";
	case HLOG_SILENT:
		return "take that rank's stacks while the job hangs (vigil stacks) and read its host's "
		       "kernel log";
	default:
		return "take every rank's stacks while the job hangs (vigil stacks); run it again with "
		       "vigil's NCCL recorder (vigil run --nccl-recorder) or TORCH_NCCL_DESYNC_DEBUG=1, "
		       "so that the next hang names its rank";
	}
}

#define HLOG_FILE_ACTION "make it a readable regular file and run again: its ranks are not judged"

void hlog_write_text(const struct hlog *h, struct strbuf *out)
{
	char t[48];
	strbuf_addf(out, "hang from logs: %s\n", hlog_verdict_name(h->verdict));
	hlog_summary(h, out);
	strbuf_addf(out, "\nnext: %s\n", hlog_action(h));
	for (size_t k = 0; k < h->nr_order; k++) {
		const struct hlog_group *g = &h->groups[h->order_groups[k]];
		strbuf_addstr(out, "\n");
		group_label(g, out);
		strbuf_addf(out, ": %s", g->op[0] ? g->op : "collective");
		if (g->seq != HLOG_UNSET)
			strbuf_addf(out, " #%lld", (long long)g->seq);
		strbuf_addf(out, ", %zu victim%s ", g->nr_victims, g->nr_victims == 1 ? "" : "s");
		ranks_str(g->victims, g->nr_victims, g->more_victims, out);
		strbuf_addstr(out, "\n");
		for (size_t i = 0; i < g->nr_culprits && i < 16; i++) {
			strbuf_addstr(out, "  culprit  ");
			who_name(&g->culprits[i], g, out);
			strbuf_addch(out, ' ');
			who_why(h, &g->culprits[i], g, out);
			strbuf_addstr(out, "\n");
		}
		for (size_t i = 0; i < g->nr_suspects && i < 16; i++) {
			strbuf_addstr(out, "  suspect  ");
			who_name(&g->suspects[i], g, out);
			strbuf_addch(out, ' ');
			who_why(h, &g->suspects[i], g, out);
			strbuf_addstr(out, "\n");
		}
	}
	if (h->nr_silent) {
		strbuf_addf(out, "\nstopped first%s:\n", h->silent_inconclusive ? " (most outputs, so "
									 "it names no one)" : "");
		for (size_t i = 0; i < h->nr_silent && i < 8; i++) {
			const struct hlog_who *w = &h->silent[i];
			time_str(&w->last, t, sizeof(t));
			strbuf_addstr(out, "  ");
			if (w->rank >= 0)
				strbuf_addf(out, "rank %ld ", w->rank);
			if (w->host[0]) {
				strbuf_addstr(out, "host ");
				strbuf_add_clean(out, w->host);
				strbuf_addch(out, ' ');
			}
			strbuf_addf(out, "last line %s, %.0f s before the latest\n", t, w->behind_s);
		}
	}
	for (size_t i = 0; i < h->nr_files; i++) {
		if (!h->files[i].error)
			continue;
		strbuf_addstr(out, "note: ");
		strbuf_add_clean(out, h->files[i].name);
		strbuf_addstr(out, ": unknown: ");
		strbuf_add_clean(out, h->files[i].error);
		strbuf_addstr(out, "; " HLOG_FILE_ACTION "\n");
	}
	if (h->lost)
		strbuf_addf(out, "note: %llu records past the bounds were not kept\n",
			    (unsigned long long)h->lost);
}

static void json_i64(struct json_writer *w, const char *key, int64_t v)
{
	json_key(w, key);
	if (v == HLOG_UNSET)
		json_null(w);
	else
		json_int(w, v);
}

static void json_rank(struct json_writer *w, const char *key, long v)
{
	json_key(w, key);
	if (v < 0)
		json_null(w);
	else
		json_int(w, v);
}

static void json_str_or_null(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	if (s && s[0])
		json_string(w, s);
	else
		json_null(w);
}

static void json_time(struct json_writer *w, const char *key, const struct hlog_time *t)
{
	char s[48];
	time_str(t, s, sizeof(s));
	json_str_or_null(w, key, s);
}

static const char *report_name(enum hlog_report r)
{
	switch (r) {
	case HLOG_REPORT_NEVER_JOINED: return "never_joined";
	case HLOG_REPORT_NOT_JOINED: return "finished_not_joined";
	case HLOG_REPORT_NOT_FINISHED: return "joined_not_finished";
	default: return NULL;
	}
}

static void json_who(const struct hlog *h, struct json_writer *w, const struct hlog_who *x)
{
	json_open_object(w);
	json_rank(w, "rank", x->rank);
	json_rank(w, "group_rank", x->grank);
	json_str_or_null(w, "host", x->host);
	json_key(w, "why");
	json_string(w, hlog_why_name(x->why));
	json_i64(w, "last_enqueued", x->last_enq);
	json_i64(w, "last_completed", x->last_done);
	json_i64(w, "timed_out_seq", x->seq);
	json_time(w, "last_time", &x->last);
	json_key(w, "behind_s");
	if (x->behind_s >= 0)
		json_fixed(w, x->behind_s, 3);
	else
		json_null(w);
	json_str_or_null(w, "report", report_name(x->report));
	json_i64(w, "report_seq", x->report_seq);
	json_i64(w, "report_next", x->report_next);
	json_key(w, "other_group");
	if (x->other_group < h->nr_groups)
		json_uint(w, x->other_group);
	else
		json_null(w);
	json_close_object(w);
}

void hlog_write_json(const struct hlog *h, struct strbuf *out)
{
	struct json_writer w;
	struct strbuf sum = STRBUF_INIT;
	json_writer_init(&w, out, false);
	json_open_top(&w);
	json_key(&w, "verdict");
	json_string(&w, hlog_verdict_name(h->verdict));
	hlog_summary(h, &sum);
	json_key(&w, "summary");
	json_string(&w, sum.buf);
	strbuf_release(&sum);
	json_key(&w, "action");
	json_string(&w, hlog_action(h));
	json_key(&w, "groups");
	json_open_array(&w);
	for (size_t k = 0; k < h->nr_order; k++) {
		const struct hlog_group *g = &h->groups[h->order_groups[k]];
		json_open_object(&w);
		json_str_or_null(&w, "group", g->name);
		json_key(&w, "default");
		json_bool(&w, g->dflt);
		json_key(&w, "index");
		json_uint(&w, h->order_groups[k]);
		json_key(&w, "seq_run");
		json_uint(&w, g->cluster);
		json_i64(&w, "seq", g->seq);
		json_str_or_null(&w, "op", g->op);
		json_i64(&w, "numel_in", g->numel_in);
		json_i64(&w, "numel_out", g->numel_out);
		json_i64(&w, "timeout_ms", g->timeout_ms);
		json_i64(&w, "waited_ms", g->waited_ms);
		json_key(&w, "first_timeout");
		json_open_object(&w);
		json_time(&w, "time", &g->first);
		json_key(&w, "timebase");
		json_string(&w, g->first.tb == HLOG_TB_WALL ? "wall" : g->first.tb == HLOG_TB_GLOG ? "glog" : "none");
		json_key(&w, "file");
		json_string(&w, g->first_file < h->nr_files ? h->files[g->first_file].name : "");
		json_key(&w, "line");
		json_uint(&w, g->first_line);
		json_rank(&w, "rank", g->first_rank);
		json_close_object(&w);
		json_key(&w, "victims");
		json_open_array(&w);
		for (size_t i = 0; i < g->nr_victims; i++)
			json_int(&w, g->victims[i]);
		json_close_array(&w);
		json_key(&w, "more_victims");
		json_uint(&w, g->more_victims);
		json_key(&w, "culprits");
		json_open_array(&w);
		for (size_t i = 0; i < g->nr_culprits; i++)
			json_who(h, &w, &g->culprits[i]);
		json_close_array(&w);
		json_key(&w, "suspects");
		json_open_array(&w);
		for (size_t i = 0; i < g->nr_suspects; i++)
			json_who(h, &w, &g->suspects[i]);
		json_close_array(&w);
		json_key(&w, "inside_collective");
		json_bool(&w, g->inside);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "silent");
	json_open_array(&w);
	for (size_t i = 0; i < h->nr_silent; i++) {
		const struct hlog_who *x = &h->silent[i];
		json_open_object(&w);
		json_rank(&w, "rank", x->rank);
		json_str_or_null(&w, "host", x->host);
		json_time(&w, "last_time", &x->last);
		json_key(&w, "behind_s");
		json_fixed(&w, x->behind_s, 3);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "silent_inconclusive");
	json_bool(&w, h->silent_inconclusive);
	json_time(&w, "latest_time", &h->latest);
	json_key(&w, "nccl");
	json_open_object(&w);
	json_key(&w, "warnings");
	json_uint(&w, h->nccl_warns);
	json_key(&w, "errors");
	json_uint(&w, h->nccl_errors);
	json_key(&w, "first");
	if (h->has_nccl) {
		const struct hlog_nccl_line *l = &h->nccl_first;
		json_open_object(&w);
		json_key(&w, "kind");
		json_string(&w, l->warn ? "warn" : "error");
		json_str_or_null(&w, "host", l->host);
		json_rank(&w, "rank", l->rank);
		json_key(&w, "file");
		json_string(&w, h->files[l->file].name);
		json_key(&w, "line");
		json_uint(&w, l->line);
		json_time(&w, "time", &l->t);
		json_key(&w, "example");
		json_string(&w, l->example);
		json_close_object(&w);
	} else {
		json_null(&w);
	}
	json_key(&w, "hosts");
	json_open_array(&w);
	for (size_t i = 0; i < h->nr_nccl_hosts; i++)
		json_string(&w, h->nccl_hosts[i]);
	json_close_array(&w);
	json_close_object(&w);
	json_key(&w, "files");
	json_open_array(&w);
	for (size_t i = 0; i < h->nr_files; i++) {
		const struct hlog_file *f = &h->files[i];
		json_open_object(&w);
		json_key(&w, "file");
		json_string(&w, f->name);
		json_str_or_null(&w, "host", f->host);
		json_rank(&w, "rank", f->rank);
		json_key(&w, "lines");
		json_uint(&w, f->lines);
		json_key(&w, "bytes");
		json_uint(&w, f->bytes);
		json_key(&w, "cut_lines");
		json_uint(&w, f->cut_lines);
		json_time(&w, "last_time", &f->last);
		json_key(&w, "status");
		json_string(&w, f->error ? "unknown" : "read");
		json_str_or_null(&w, "error", f->error);
		json_str_or_null(&w, "action", f->error ? HLOG_FILE_ACTION : NULL);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "unreadable");
	json_uint(&w, hlog_unreadable(h));
	json_key(&w, "lost");
	json_uint(&w, h->lost);
	json_close_object(&w);
}
