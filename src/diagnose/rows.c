/*
 * rows.c: the row reader of 'vigil diagnose' (see rows.h). Lines are cut here, so that a file of
 * a million rows is read in pieces with one line buffer, and the JSON lines are parsed with the
 * bounded parser of src/lib/json.c, one line at a time.
 */
#include "rows.h"
#include "../lib/fileio.h"
#include "../lib/json.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

enum col_id { C_STEP, C_TIME, C_STEP_TIME, C_MFU, C_TOKENS, C_COMPUTE, C_RANK, C_HOST, C_KIND,
	      C_ATTEMPT, C_NR };

static const struct {
	const char *name;
	int id;
} col_names[] = {
	{ "step", C_STEP },        { "time", C_TIME },       { "t", C_TIME },
	{ "step_time", C_STEP_TIME }, { "mfu", C_MFU },      { "tokens", C_TOKENS },
	{ "compute_time", C_COMPUTE }, { "rank", C_RANK },   { "host", C_HOST },
	{ "kind", C_KIND },        { "attempt", C_ATTEMPT },
};

static int col_find(const char *s, size_t len)
{
	if (!len || len > 12)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(col_names); i++)
		if ((col_names[i].name[0] | 0x20) == (s[0] | 0x20) &&
		    strlen(col_names[i].name) == len && !strncasecmp(col_names[i].name, s, len))
			return col_names[i].id;
	return -1;
}

const char *diag_format_name(enum diag_format f)
{
	switch (f) {
	case DIAG_FMT_JSONL: return "jsonl";
	case DIAG_FMT_JOURNAL: return "journal";
	case DIAG_FMT_CSV: return "csv";
	case DIAG_FMT_LOG: return "log";
	case DIAG_FMT_NONE: break;
	}
	return "none";
}

void diag_rows_init(struct diag_rows *r)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->part, 0);
}

void diag_rows_release(struct diag_rows *r)
{
	diag_raw_free(r);
	free(r->v);
	for (size_t i = 0; i < r->hosts_nr; i++)
		free(r->hosts[i]);
	free(r->hosts);
	strbuf_release(&r->part);
	diag_rows_init(r);
}

void diag_rows_garbage(struct diag_rows *r, const char *why)
{
	uint32_t line = (uint32_t)r->lines;
	if (!r->garbage)
		snprintf(r->garbage_why, sizeof(r->garbage_why), "line %u: %s", line, why);
	if (r->garbage_line_nr < DIAG_GARBAGE_KEPT)
		r->garbage_line[r->garbage_line_nr++] = line;
	r->garbage++;
}

/* FNV-1a: host names are few; the table is twice DIAG_HOSTS_MAX, so probing ends. */
static int host_index(struct diag_rows *r, const char *s, size_t len, uint32_t *out)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	size_t mask = ARRAY_SIZE(r->host_slot) - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		uint32_t slot = r->host_slot[i];
		if (!slot) {
			if (r->hosts_nr >= DIAG_HOSTS_MAX)
				return -1;
			ALLOC_GROW(r->hosts, r->hosts_nr + 1, r->hosts_alloc);
			r->hosts[r->hosts_nr++] = xstrndup(s, len);
			r->host_slot[i] = (uint32_t)r->hosts_nr;
			*out = (uint32_t)r->hosts_nr - 1;
			return 0;
		}
		const char *have = r->hosts[slot - 1];
		if (strlen(have) == len && !memcmp(have, s, len)) {
			*out = slot - 1;
			return 0;
		}
	}
}

/* One value by its column; false (with *why) when it is not a usable number of its kind. */
static bool set_number(struct diag_row *row, int id, double d, const char **why)
{
	if (!isfinite(d)) {
		*why = "a value is not a finite number";
		return false;
	}
	switch (id) {
	case C_STEP:
		if (d < 0 || d > DIAG_STEP_MAX || d != floor(d)) {
			*why = "'step' is not a whole number from 0";
			return false;
		}
		row->step = (uint64_t)d;
		return true;
	case C_TIME:
		if (d < 0 || d > 1e11) {
			*why = "'time' is not Unix seconds";
			return false;
		}
		row->time = d;
		row->has |= DROW_TIME;
		return true;
	case C_STEP_TIME:
		if (d <= 0 || d > 1e7) {
			*why = "'step_time' is not seconds above 0";
			return false;
		}
		row->step_time = d;
		row->has |= DROW_STEP_TIME;
		return true;
	case C_MFU:
		if (d < 0 || d > 1) {
			*why = "'mfu' is not from 0 to 1";
			return false;
		}
		row->mfu = d;
		row->has |= DROW_MFU;
		return true;
	case C_TOKENS:
		if (d < 0 || d > 1e18) {
			*why = "'tokens' is not a count";
			return false;
		}
		row->tokens = d;
		row->has |= DROW_TOKENS;
		return true;
	case C_COMPUTE:
		if (d < 0 || d > 1e7) {
			*why = "'compute_time' is not seconds";
			return false;
		}
		row->compute = d;
		row->has |= DROW_COMPUTE;
		return true;
	case C_RANK:
		if (d < 0 || d > 1e7 || d != floor(d)) {
			*why = "'rank' is not a whole number from 0";
			return false;
		}
		row->rank = (uint32_t)d;
		row->has |= DROW_RANK;
		return true;
	case C_ATTEMPT:
		if (d >= 0 && d <= 1e9 && d == floor(d))
			row->attempt = (uint32_t)d;
		return true; /* the journal's own field: not the user's to get right */
	}
	return true;
}

void diag_rows_keep(struct diag_rows *r, struct diag_row *row)
{
	if (r->nr >= DIAG_ROWS_MAX) {
		r->truncated = true;
		return;
	}
	row->line = (uint32_t)r->lines;
	ALLOC_GROW(r->v, r->nr + 1, r->alloc);
	r->v[r->nr++] = *row;
	r->columns |= row->has;
}

struct fld {
	int id;
	enum json_type type;
	double num;
	const char *str;
	size_t slen;
};

#define FLDS_MAX 16

/*
 * The fast path for the common line, a flat object of numbers, plain strings (no escapes),
 * true, false and null: the fields vigil reads into f[], and the count; -1 when the line needs
 * the full parser (nesting, escapes, anything odd), which then decides.
 */
static int fast_object(const char *s, size_t len, struct fld *f)
{
	const char *p = s, *end = s + len;
	int nf = 0;
#define WS() while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++
	WS();
	if (p >= end || *p++ != '{')
		return -1;
	WS();
	if (p < end && *p == '}')
		goto close;
	for (;;) {
		WS();
		if (p >= end || *p++ != '"')
			return -1;
		const char *k = p;
		while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
			p++;
		if (p >= end || *p != '"')
			return -1;
		int id = col_find(k, (size_t)(p - k));
		p++;
		WS();
		if (p >= end || *p++ != ':')
			return -1;
		WS();
		if (p >= end)
			return -1;
		struct fld v = { id, JSON_NULL, 0, NULL, 0 };
		if (*p == '"') {
			const char *q = ++p;
			while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
				p++;
			if (p >= end || *p != '"')
				return -1;
			v.type = JSON_STRING;
			v.str = q;
			v.slen = (size_t)(p - q);
			p++;
		} else if (*p == '-' || (*p >= '0' && *p <= '9')) {
			char num[40];
			size_t n = 0;
			while (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == '-' ||
					    *p == '+' || *p == 'e' || *p == 'E')) {
				if (n + 1 >= sizeof(num))
					return -1;
				num[n++] = *p++;
			}
			num[n] = 0;
			if (num[0] == '0' && n > 1 && num[1] >= '0' && num[1] <= '9')
				return -1;
			if (!parse_double(num, &v.num))
				return -1;
			v.type = JSON_NUMBER;
		} else if (end - p >= 4 && !memcmp(p, "null", 4)) {
			p += 4;
		} else if (end - p >= 4 && !memcmp(p, "true", 4)) {
			v.type = JSON_BOOL;
			p += 4;
		} else if (end - p >= 5 && !memcmp(p, "false", 5)) {
			v.type = JSON_BOOL;
			p += 5;
		} else {
			return -1;
		}
		if (id >= 0) {
			if (nf >= FLDS_MAX)
				return -1;
			f[nf++] = v;
		}
		WS();
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		break;
	}
close:
	if (p >= end || *p++ != '}')
		return -1;
	WS();
	return p == end ? nf : -1;
#undef WS
}

static void json_line(struct diag_rows *r, const char *s, size_t len)
{
	struct fld f[FLDS_MAX];
	struct json_value *v = NULL;
	struct diag_row row;
	const char *why = NULL;
	bool have_step = false, is_step_kind = false, has_kind = false;
	int nf = fast_object(s, len, f);
	memset(&row, 0, sizeof(row));
	if (nf < 0) {
		v = json_parse(s, len, NULL);
		if (!v || v->type != JSON_OBJECT) {
			diag_rows_garbage(r, "not a JSON object");
			goto out;
		}
		nf = 0;
		for (size_t i = 0; i < v->nr; i++) {
			int id = col_find(v->keys[i], strlen(v->keys[i]));
			if (id < 0)
				continue;
			if (nf >= FLDS_MAX) {
				diag_rows_garbage(r, "too many fields");
				goto out;
			}
			const struct json_value *e = v->items[i];
			f[nf++] = (struct fld){ id, e->type, e->number, e->string, e->string_len };
		}
	}
	for (int i = 0; i < nf; i++) {
		int id = f[i].id;
		if (id == C_KIND) {
			has_kind = true;
			is_step_kind = f[i].type == JSON_STRING && f[i].slen == 4 &&
				       !memcmp(f[i].str, "step", 4);
			continue;
		}
		if (id == C_HOST) {
			if (f[i].type != JSON_STRING || !f[i].slen || f[i].slen > 255 ||
			    memchr(f[i].str, 0, f[i].slen)) {
				why = "'host' is not a host name";
				break;
			}
			if (host_index(r, f[i].str, f[i].slen, &row.host) < 0) {
				why = "too many host names";
				r->hosts_over++;
				break;
			}
			row.has |= DROW_HOST;
			continue;
		}
		if (f[i].type == JSON_NULL)
			continue;
		if (f[i].type != JSON_NUMBER) {
			why = "a value is not a number";
			break;
		}
		if (!set_number(&row, id, f[i].num, &why))
			break;
		have_step |= id == C_STEP;
	}
	if (has_kind && !why) {
		/* vigil run's journal: its step records are the rows, the others are not rows */
		if (r->format == DIAG_FMT_JSONL)
			r->format = DIAG_FMT_JOURNAL;
		if (!is_step_kind) {
			r->skipped++;
			goto out;
		}
	}
	if (why)
		diag_rows_garbage(r, why);
	else if (!have_step)
		diag_rows_garbage(r, "no 'step'");
	else
		diag_rows_keep(r, &row);
out:
	json_free(v);
}

static void trim(const char **s, size_t *len)
{
	while (*len && (**s == ' ' || **s == '\t' || **s == '"')) {
		(*s)++;
		(*len)--;
	}
	while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' ||
			(*s)[*len - 1] == '"' || (*s)[*len - 1] == '\r'))
		(*len)--;
}

static void csv_header(struct diag_rows *r, const char *s, size_t len)
{
	bool step = false;
	size_t n = 0;
	for (const char *p = s, *end = s + len; p <= end && n < ARRAY_SIZE(r->col); n++) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *fe = c ? c : end;
		const char *f = p;
		size_t fl = (size_t)(fe - p);
		trim(&f, &fl);
		r->col[n] = col_find(f, fl);
		if (r->col[n] == C_KIND || r->col[n] == C_ATTEMPT)
			r->col[n] = -1;
		step |= r->col[n] == C_STEP;
		p = fe + 1;
		if (!c)
			break;
	}
	r->ncol = n + (n < ARRAY_SIZE(r->col));
	if (!step)
		snprintf(r->header_error, sizeof(r->header_error),
			 "line %zu: the CSV header has no 'step' column", r->lines);
}

static void csv_line(struct diag_rows *r, const char *s, size_t len)
{
	struct diag_row row;
	const char *why = NULL;
	bool have_step = false;
	char num[64];
	size_t n = 0;
	memset(&row, 0, sizeof(row));
	for (const char *p = s, *end = s + len; n < r->ncol; n++) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *fe = c ? c : end;
		const char *f = p;
		size_t fl = (size_t)(fe - p);
		int id = r->col[n];
		trim(&f, &fl);
		if (id >= 0 && fl) {
			if (id == C_HOST) {
				if (fl > 255 || memchr(f, 0, fl)) {
					why = "'host' is not a host name";
					break;
				}
				if (host_index(r, f, fl, &row.host) < 0) {
					why = "too many host names";
					r->hosts_over++;
					break;
				}
				row.has |= DROW_HOST;
			} else {
				double d;
				if (fl >= sizeof(num)) {
					why = "a value is not a number";
					break;
				}
				memcpy(num, f, fl);
				num[fl] = 0;
				if (!parse_double(num, &d)) {
					why = "a value is not a number";
					break;
				}
				if (!set_number(&row, id, d, &why))
					break;
				have_step |= id == C_STEP;
			}
		}
		if (!c)
			break;
		p = fe + 1;
	}
	if (why)
		diag_rows_garbage(r, why);
	else if (!have_step)
		diag_rows_garbage(r, "no 'step'");
	else
		diag_rows_keep(r, &row);
}

/* Is the first line one of rows: a JSON object, or a CSV header (names of columns separated
 * by commas, or one known column's name)? Anything else is a trainer's raw output. */
static bool rows_first_line(const char *s, size_t len)
{
	if (*s == '{') {
		struct fld f[FLDS_MAX];
		if (fast_object(s, len, f) >= 0)
			return true;
		struct json_value *v = json_parse(s, len, NULL);
		bool obj = v && v->type == JSON_OBJECT;
		json_free(v);
		return obj;
	}
	if (!memchr(s, ',', len)) {
		const char *f = s;
		size_t fl = len;
		trim(&f, &fl);
		return col_find(f, fl) >= 0;
	}
	for (const char *p = s, *end = s + len; p <= end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *fe = c ? c : end;
		const char *f = p;
		size_t fl = (size_t)(fe - p);
		trim(&f, &fl);
		if (!fl || fl > 64 || !(isalpha((unsigned char)*f) || *f == '_'))
			return false;
		for (size_t k = 0; k < fl; k++)
			if (!isalnum((unsigned char)f[k]) && !strchr("_ ./()-", f[k]))
				return false;
		if (!c)
			break;
		p = fe + 1;
	}
	return true;
}

static void one_line(struct diag_rows *r, const char *s, size_t len, bool overlong)
{
	r->lines++;
	if (overlong) {
		diag_rows_garbage(r, "a line longer than 4096 bytes");
		return;
	}
	size_t i = 0;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	if (i == len)
		return; /* blank */
	if (r->header_error[0])
		return; /* nothing can be read under a header without 'step' */
	if (r->format == DIAG_FMT_NONE) {
		if (diag_raw_forced(r) || !rows_first_line(s + i, len - i)) {
			diag_raw_start(r, s, len, true);
			return;
		}
		if (s[i] == '{') {
			r->format = DIAG_FMT_JSONL;
		} else {
			r->format = DIAG_FMT_CSV;
			csv_header(r, s + i, len - i);
			return;
		}
	}
	if (r->format == DIAG_FMT_CSV)
		csv_line(r, s + i, len - i);
	else
		json_line(r, s + i, len - i);
}

void diag_rows_feed(struct diag_rows *r, const char *data, size_t len)
{
	while (len && !r->truncated) {
		if (r->format == DIAG_FMT_LOG) {
			diag_raw_feed(r, data, len);
			return;
		}
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		if (!r->part_overlong) {
			if (r->part.len + n > DIAG_LINE_MAX && r->format == DIAG_FMT_NONE &&
			    !(r->part.len ? r->part.buf[0] == '{' : *data == '{')) {
				/* a first line of more than 4 KB is no row: a trainer's output
				 * (a progress bar redrawn after '\r', never a '\n') */
				diag_raw_start(r, r->part.buf, r->part.len, false);
				strbuf_reset(&r->part);
				continue;
			}
			if (r->part.len + n > DIAG_LINE_MAX) {
				r->part_overlong = true;
				strbuf_reset(&r->part);
			} else if (nl && !r->part.len) {
				one_line(r, data, n, false); /* the whole line is here: no copy */
				data += n + 1;
				len -= n + 1;
				continue;
			} else {
				strbuf_add(&r->part, data, n);
			}
		}
		if (!nl)
			return;
		one_line(r, r->part.buf, r->part.len, r->part_overlong);
		strbuf_reset(&r->part);
		r->part_overlong = false;
		data += n + 1;
		len -= n + 1;
	}
}

void diag_rows_finish(struct diag_rows *r)
{
	if ((r->part.len || r->part_overlong) && !r->truncated && r->format != DIAG_FMT_LOG)
		one_line(r, r->part.buf, r->part.len, r->part_overlong);
	strbuf_reset(&r->part);
	r->part_overlong = false;
	if (r->format == DIAG_FMT_LOG)
		diag_raw_finish(r);
}

static bool rows_chunk(void *arg, const char *data, size_t len)
{
	struct diag_rows *r = arg;
	diag_rows_feed(r, data, len);
	return !r->truncated; /* the row bound is reached: the rest is not read */
}

int diag_rows_read(const char *path, struct diag_rows *r, struct strbuf *err)
{
	if (read_file_stream(path, 0, 0, rows_chunk, r, err) < 0)
		return -1;
	diag_rows_finish(r);
	return 0;
}
