/*
 * readers.c: the line-oriented sources of the fleet's history (history.h), read as streams:
 * Slurm's node events as `sacctmgr show event -P` prints them (a header of field names, then
 * one event a line, fields between '|'; Slurm's src/sacctmgr/event_functions.c) and vigil run
 * journals (JSON lines, docs/SUPERVISOR.md).
 */
#include "history.h"
#include "../lib/fileio.h"
#include "../lib/json.h"
#include "../lib/util.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

struct lines {
	const char *name;
	struct strbuf part;
	size_t lineno;
	bool failed;
	struct strbuf *err;
	int (*fn)(void *arg, char *line, size_t len, size_t lineno, struct strbuf *err);
	void *arg;
};

static bool line_out(struct lines *l, char *s, size_t len)
{
	l->lineno++;
	if (len && s[len - 1] == '\r')
		s[--len] = '\0';
	if (memchr(s, '\0', len)) {
		error_set(l->err, "'%s' line %zu: binary data (a NUL byte): not a text file", l->name,
			  l->lineno);
		return false;
	}
	return l->fn(l->arg, s, len, l->lineno, l->err) == 0;
}

static bool lines_chunk(void *arg, const char *data, size_t len)
{
	struct lines *l = arg;
	while (len && !l->failed) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;
		if (l->part.len + take > FLEET_LINE_MAX) {
			error_set(l->err, "'%s' line %zu: longer than %u bytes: not this format",
				  l->name, l->lineno + 1, (unsigned)FLEET_LINE_MAX);
			l->failed = true;
			return false;
		}
		strbuf_add(&l->part, data, take);
		data += take;
		len -= take;
		if (!nl)
			break;
		data++;
		len--;
		if (!line_out(l, l->part.buf, l->part.len))
			l->failed = true;
		strbuf_reset(&l->part);
	}
	return !l->failed;
}

static int lines_end(struct lines *l)
{
	if (!l->failed && l->part.len && !line_out(l, l->part.buf, l->part.len))
		l->failed = true;
	strbuf_release(&l->part);
	return l->failed ? -1 : 0;
}

static int lines_file(const char *path, struct lines *l)
{
	int r = read_file_stream(path, READ_STREAM_NOFOLLOW, FLEET_FILE_MAX, lines_chunk, l, l->err);
	if (r < 0) {
		strbuf_release(&l->part);
		return -1;
	}
	return lines_end(l);
}

static int lines_text(const char *text, size_t len, struct lines *l)
{
	if (lines_chunk(l, text, len))
		return lines_end(l);
	strbuf_release(&l->part);
	return -1;
}

/* --- sacctmgr show event -P (or -p: a '|' after the last field too) --- */

enum { SF_NODE, SF_START, SF_END, SF_STATE, SF_REASON, SF_NR };
#define SACCT_FIELDS_MAX 32

struct sacct_ctx {
	struct fleet_history *h;
	const char *name;
	bool have_header;
	int col[SF_NR];
	size_t nr_cols;
};

static size_t split_bar(char *s, char **f, size_t max)
{
	size_t n = 0;
	f[n++] = s;
	for (char *p = s; *p; p++)
		if (*p == '|') {
			*p = '\0';
			if (n == max)
				return max + 1;
			f[n++] = p + 1;
		}
	return n;
}

static int sacct_header(struct sacct_ctx *c, char *line, size_t lineno, struct strbuf *err)
{
	char *f[SACCT_FIELDS_MAX + 1];
	size_t n = split_bar(line, f, SACCT_FIELDS_MAX);
	if (n <= SACCT_FIELDS_MAX && n > 1 && !*f[n - 1])
		n--; /* -p ends each line with '|' */
	for (int i = 0; i < SF_NR; i++)
		c->col[i] = -1;
	for (size_t i = 0; i < n && i < SACCT_FIELDS_MAX; i++) {
		const char *k = f[i];
		/* the header names: NodeName, TimeStart, TimeEnd, State, Reason (format=Start
		 * and End print as TimeStart and TimeEnd) */
		if (!strcasecmp(k, "NodeName"))
			c->col[SF_NODE] = (int)i;
		else if (!strcasecmp(k, "TimeStart") || !strcasecmp(k, "Start"))
			c->col[SF_START] = (int)i;
		else if (!strcasecmp(k, "TimeEnd") || !strcasecmp(k, "End"))
			c->col[SF_END] = (int)i;
		else if (!strcasecmp(k, "State"))
			c->col[SF_STATE] = (int)i;
		else if (!strcasecmp(k, "Reason"))
			c->col[SF_REASON] = (int)i;
	}
	if (n > SACCT_FIELDS_MAX || c->col[SF_NODE] < 0 || c->col[SF_START] < 0 ||
	    c->col[SF_REASON] < 0)
		return error_set(err,
				 "'%s' line %zu: not sacctmgr's event list (the first line must be "
				 "its header, naming NodeName, TimeStart and Reason: run 'sacctmgr "
				 "show event -P format=NodeName,TimeStart,TimeEnd,State,Reason', "
				 "without -n)",
				 c->name, lineno);
	c->nr_cols = n;
	c->have_header = true;
	return 0;
}

static int sacct_line(void *arg, char *line, size_t len, size_t lineno, struct strbuf *err)
{
	struct sacct_ctx *c = arg;
	struct fleet_history *h = c->h;
	if (!len)
		return 0;
	if (!c->have_header)
		return sacct_header(c, line, lineno, err);
	char *f[SACCT_FIELDS_MAX + 1];
	size_t n = split_bar(line, f, SACCT_FIELDS_MAX);
	/* more fields than split_bar() keeps: f[n - 1] was never set */
	if (n <= SACCT_FIELDS_MAX && n > c->nr_cols && !*f[n - 1])
		n--;
	if (n > SACCT_FIELDS_MAX || n < c->nr_cols) {
		h->skipped_lines++;
		return 0;
	}
	/* a reason with '|' in it: the extra fields are the reason's */
	size_t extra = n - c->nr_cols;
	int rc = c->col[SF_REASON];
	for (size_t k = 0; k < extra; k++)
		f[rc][strlen(f[rc])] = '|';
	const char *field[SF_NR];
	for (int i = 0; i < SF_NR; i++) {
		int col = c->col[i];
		field[i] = col < 0 ? "" : f[(size_t)col > (size_t)rc ? (size_t)col + extra : (size_t)col];
	}
	double start, end = 0;
	/* a cluster event has no node */
	if (!*field[SF_NODE] || !fleet_parse_time(field[SF_START], &start)) {
		h->skipped_lines++;
		return 0;
	}
	/* an event still open: "Unknown" */
	if (*field[SF_END] && !fleet_parse_time(field[SF_END], &end))
		end = 0;
	fleet_history_saw(h, start);
	fleet_history_saw(h, end);
	size_t node = fleet_history_node(h, field[SF_NODE]);
	if (node == FLEET_NO_NODE)
		return error_set(err, "'%s' line %zu: more than %u nodes", c->name, lineno,
				 (unsigned)FLEET_NODES_MAX);
	int cls = fleet_classify_text(field[SF_REASON]);
	if (cls == FC_PLANNED) {
		h->planned++;
		return 0;
	}
	if (cls == FC_UNCLASSIFIED) {
		h->unclassified++;
		return 0;
	}
	if (fleet_history_add(h, node, cls, start, end, FS_SLURM, field[SF_REASON]) < 0)
		return error_set(err, "'%s' line %zu: more than %u events", c->name, lineno,
				 (unsigned)FLEET_EVENTS_MAX);
	return 0;
}

static int sacct_done(struct sacct_ctx *c, int r, struct strbuf *err)
{
	if (r == 0 && !c->have_header)
		return error_set(err, "'%s' is empty: no header of sacctmgr's event list", c->name);
	if (r == 0)
		c->h->slurm_files++;
	return r;
}

int fleet_read_sacct(struct fleet_history *h, const char *path, struct strbuf *err)
{
	struct sacct_ctx c = { .h = h, .name = path };
	struct lines l = { .name = path, .err = err, .fn = sacct_line, .arg = &c };
	return sacct_done(&c, lines_file(path, &l), err);
}

int fleet_read_sacct_text(struct fleet_history *h, const char *name, const char *text,
			  size_t len, struct strbuf *err)
{
	struct sacct_ctx c = { .h = h, .name = name };
	struct lines l = { .name = name, .err = err, .fn = sacct_line, .arg = &c };
	return sacct_done(&c, lines_text(text, len, &l), err);
}

/* --- vigil run journals --- */

struct journal_ctx {
	struct fleet_history *h;
	const char *name;
	size_t last;      /* the journal's last fault event (index), or (size_t)-1 */
	unsigned last_attempt;
	size_t good;
};

static int event_class(const char *cls, const char *detail, bool *known)
{
	int by_text = fleet_classify_text(detail);
	*known = true;
	if (!strcmp(cls, "lost"))
		return FC_HOST_CRASH;
	if (!strcmp(cls, "slow"))
		return FC_SLOWDOWN;
	if (!strcmp(cls, "sdc"))
		return FC_SDC;
	if (!strcmp(cls, "hang") || !strcmp(cls, "startup_timeout"))
		return by_text >= 0 && by_text != FC_SOFTWARE_BUG ? by_text : FC_HANG;
	if (!strcmp(cls, "crash"))
		return by_text >= 0 ? by_text : FC_SOFTWARE_BUG;
	if (!strcmp(cls, "sick"))
		return by_text >= 0 ? by_text : FC_UNCLASSIFIED;
	*known = false; /* launched, evidence, group_test, ...: not faults (docs/SUPERVISOR.md) */
	return FC_UNCLASSIFIED;
}

static int journal_line(void *arg, char *line, size_t len, size_t lineno, struct strbuf *err)
{
	struct journal_ctx *c = arg;
	struct fleet_history *h = c->h;
	struct strbuf perr = STRBUF_INIT;
	int ret = 0;
	if (!len)
		return 0;
	struct json_value *v = json_parse(line, len, &perr);
	strbuf_release(&perr);
	const char *kind = v ? json_get_string(v, "kind") : NULL;
	double t = 0, att = 0;
	/* times within years 1970..9999 (as the sacctmgr reader's), attempts a count */
	if (!kind || !json_get_number(v, "t", &t) || !(t > 0 && t < FLEET_TIME_MAX)) {
		h->skipped_lines++; /* a torn or damaged line: the journal's reader skips it too */
		goto out;
	}
	c->good++;
	fleet_history_saw(h, t);
	if (!json_get_number(v, "attempt", &att) || !(att >= 0 && att < 4e9))
		att = 0;
	const char *host = json_get_string(v, "host");
	size_t node = FLEET_NO_NODE;
	if (host && *host && (node = fleet_history_node(h, host)) == FLEET_NO_NODE) {
		ret = error_set(err, "'%s' line %zu: more than %u nodes", c->name, lineno,
				(unsigned)FLEET_NODES_MAX);
		goto out;
	}
	if (!strcmp(kind, "attempt_started")) {
		const struct json_value *hosts = json_get(v, "hosts");
		for (size_t i = 0; hosts && hosts->type == JSON_ARRAY && i < hosts->nr; i++)
			if (hosts->items[i]->type == JSON_STRING && *hosts->items[i]->string)
				fleet_history_node(h, hosts->items[i]->string);
	} else if (!strcmp(kind, "event")) {
		const char *cls = json_get_string(v, "class");
		const char *detail = json_get_string(v, "detail");
		double happened;
		bool known;
		int fc = event_class(cls ? cls : "", detail, &known);
		if (!known)
			goto out;
		if (fc == FC_UNCLASSIFIED) {
			h->unclassified++;
			goto out;
		}
		if (json_get_number(v, "happened", &happened) && happened > 0 && happened <= t &&
		    t - happened < 86400.0 * 366)
			t = happened;
		/* a software fault is no host's, whoever the supervisor named */
		if (!fleet_class_host_fault(fc) && fc != FC_HANG && fc != FC_STORAGE_STALL)
			node = FLEET_NO_NODE;
		if (fleet_history_add(h, node, fc, t, 0, FS_JOURNAL, detail ? detail : cls) < 0)
			goto full;
		c->last = h->nr - 1;
		c->last_attempt = (unsigned)att;
	} else if (!strcmp(kind, "host_excluded") && node != FLEET_NO_NODE) {
		/* the reason the host was drained with names the fault better than the event */
		const char *reason = json_get_string(v, "reason");
		int fc = fleet_classify_text(reason);
		if (fc < 0)
			goto out;
		if (c->last != (size_t)-1 && c->last < h->nr && c->last_attempt == (unsigned)att) {
			struct fleet_event *e = &h->ev[c->last];
			if (e->node == node && e->cls == fc)
				goto out;
			if ((e->node == FLEET_NO_NODE || e->node == node) &&
			    !fleet_class_host_fault(e->cls)) {
				e->node = node;
				e->cls = fc;
				free(e->what);
				struct strbuf sb = STRBUF_INIT;
				strbuf_add_excerpt(&sb, reason, FLEET_WHAT_MAX);
				e->what = strbuf_detach(&sb, NULL);
				goto out;
			}
		}
		if (fleet_history_add(h, node, fc, t, 0, FS_JOURNAL, reason) < 0)
			goto full;
	}
	goto out;
full:
	ret = error_set(err, "'%s' line %zu: more than %u events", c->name, lineno,
			(unsigned)FLEET_EVENTS_MAX);
out:
	json_free(v);
	return ret;
}

static int journal_done(struct journal_ctx *c, size_t lines, int r, struct strbuf *err)
{
	if (r == 0 && lines && !c->good)
		return error_set(err, "'%s': no line is a vigil run journal record", c->name);
	if (r == 0)
		c->h->journals++;
	return r;
}

int fleet_read_journal_text(struct fleet_history *h, const char *name, const char *text,
			    size_t len, struct strbuf *err)
{
	struct journal_ctx c = { .h = h, .name = name, .last = (size_t)-1 };
	struct lines l = { .name = name, .err = err, .fn = journal_line, .arg = &c };
	int r = lines_text(text, len, &l);
	return journal_done(&c, l.lineno, r, err);
}

static int read_one_journal(struct fleet_history *h, const char *path, struct strbuf *err)
{
	struct journal_ctx c = { .h = h, .name = path, .last = (size_t)-1 };
	struct lines l = { .name = path, .err = err, .fn = journal_line, .arg = &c };
	int r = lines_file(path, &l);
	return journal_done(&c, l.lineno, r, err);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int fleet_read_journals(struct fleet_history *h, const char *dir, struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT;
	struct stat st;
	int ret = 0;
	strbuf_addf(&path, "%s/journal.jsonl", dir);
	if (!stat(path.buf, &st)) {
		ret = read_one_journal(h, path.buf, err);
		strbuf_release(&path);
		return ret;
	}
	DIR *d = opendir(dir);
	if (!d) {
		error_set(err, "cannot read '%s': %s", dir, strerror(errno));
		strbuf_release(&path);
		return -1;
	}
	char **names = NULL;
	size_t nr = 0, alloc = 0, found = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		ALLOC_GROW(names, nr + 1, alloc);
		names[nr++] = xstrdup(de->d_name);
	}
	closedir(d);
	qsort(names, nr, sizeof(*names), name_cmp);
	for (size_t i = 0; i < nr && !ret; i++) {
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/%s/journal.jsonl", dir, names[i]);
		if (stat(path.buf, &st))
			continue;
		found++;
		ret = read_one_journal(h, path.buf, err);
	}
	if (!ret && !found)
		ret = error_set(err, "'%s' holds no vigil run journal (journal.jsonl, or "
				     "RUN/journal.jsonl for each run)", dir);
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	strbuf_release(&path);
	return ret;
}
