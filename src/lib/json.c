/* json.c: JSON writer and bounded recursive-descent parser (see json.h). */
#include "json.h"

#include <math.h>

void json_writer_init(struct json_writer *w, struct strbuf *out, bool pretty)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->pretty = pretty;
}

static void newline(struct json_writer *w)
{
	if (!w->pretty)
		return;
	strbuf_addch(w->out, '\n');
	for (int i = 0; i < w->depth; i++)
		strbuf_addstr(w->out, "  ");
}

static void before_value(struct json_writer *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->depth > 0) {
		if (w->need_comma[w->depth])
			strbuf_addch(w->out, ',');
		w->need_comma[w->depth] = true;
		newline(w);
	}
}

/* Past the writer's depth, or a close with nothing open: stop writing rather than emit broken
 * JSON; json_writer_finish() reports it. */
static void writer_fail(struct json_writer *w, const char *why)
{
	if (!w->failed)
		w->failed = why;
}

static void open_(struct json_writer *w, char c)
{
	if (w->failed)
		return;
	if (w->depth + 1 >= (int)ARRAY_SIZE(w->need_comma)) {
		writer_fail(w, "nested deeper than the JSON writer allows");
		return;
	}
	before_value(w);
	strbuf_addch(w->out, c);
	w->depth++;
	w->need_comma[w->depth] = false;
}

static void close_(struct json_writer *w, char c)
{
	if (w->failed)
		return;
	if (w->depth <= 0) {
		writer_fail(w, "a close with nothing open");
		return;
	}
	bool had = w->need_comma[w->depth];
	w->depth--;
	if (had)
		newline(w);
	strbuf_addch(w->out, c);
}

void json_open_object(struct json_writer *w) { open_(w, '{'); }
void json_close_object(struct json_writer *w) { close_(w, '}'); }

void json_open_top(struct json_writer *w)
{
	open_(w, '{');
	json_key(w, "schema_version");
	json_int(w, VIGIL_JSON_SCHEMA_VERSION);
}
void json_open_array(struct json_writer *w) { open_(w, '['); }
void json_close_array(struct json_writer *w) { close_(w, ']'); }

int json_writer_finish(struct json_writer *w, struct strbuf *err)
{
	if (w->failed)
		return error_set(err, "cannot write JSON: %s", w->failed);
	if (w->depth)
		return error_set(err, "cannot write JSON: %d value%s left open", w->depth,
				 w->depth == 1 ? "" : "s");
	return 0;
}

void json_key(struct json_writer *w, const char *key)
{
	if (w->failed)
		return;
	before_value(w);
	json_quote(w->out, key, strlen(key));
	strbuf_addch(w->out, ':');
	if (w->pretty)
		strbuf_addch(w->out, ' ');
	w->after_key = true;
}

/* Length of a valid UTF-8 sequence at s (max n bytes), or 0 if invalid. */
static size_t utf8_len_cp(const unsigned char *s, size_t n, unsigned *cpout)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80) {
		*cpout = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		len = 2;
		min = 0x80;
		c &= 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3;
		min = 0x800;
		c &= 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4;
		min = 0x10000;
		c &= 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cpout = c;
	return len;
}

void json_quote(struct strbuf *sb, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	strbuf_addch(sb, '"');
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		if (c == '"' || c == '\\') {
			strbuf_addch(sb, '\\');
			strbuf_addch(sb, c);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			switch (c) {
			case '\n': strbuf_addstr(sb, "\\n"); break;
			case '\t': strbuf_addstr(sb, "\\t"); break;
			case '\r': strbuf_addstr(sb, "\\r"); break;
			default: strbuf_addf(sb, "\\u%04x", c);
			}
			i++;
		} else if (c < 0x80) {
			size_t j = i;
			while (j < len && s[j] >= 0x20 && s[j] < 0x7f && s[j] != '"' && s[j] != '\\')
				j++;
			strbuf_add(sb, s + i, j - i);
			i = j;
		} else if (c == 0xc0 && i + 1 < len && s[i + 1] == 0x80) {
			/* the parser's stand-in for a NUL (strbuf.h): written back as it came */
			strbuf_addstr(sb, "\\u0000");
			i += 2;
		} else {
			unsigned cp = 0;
			size_t l = utf8_len_cp(s + i, len - i, &cp);
			if (l && unicode_invisible(cp)) {
				/* valid JSON either way; escaped, a bidi control cannot reverse a name on
				 * the terminal of whoever cats the file */
				if (cp > 0xffff) /* a surrogate pair, as JSON spells it */
					strbuf_addf(sb, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
						    0xdc00 + ((cp - 0x10000) & 0x3ff));
				else
					strbuf_addf(sb, "\\u%04x", cp);
				i += l;
			} else if (l) {
				strbuf_add(sb, s + i, l);
				i += l;
			} else {
				strbuf_addstr(sb, "\\ufffd");
				i++;
			}
		}
	}
	strbuf_addch(sb, '"');
}

void json_string_len(struct json_writer *w, const char *s, size_t len)
{
	if (w->failed)
		return;
	before_value(w);
	json_quote(w->out, s, len);
}

void json_string(struct json_writer *w, const char *s)
{
	if (!s) {
		json_null(w);
		return;
	}
	json_string_len(w, s, strlen(s));
}

void json_int(struct json_writer *w, int64_t v)
{
	if (w->failed)
		return;
	before_value(w);
	strbuf_addf(w->out, "%lld", (long long)v);
}

void json_uint(struct json_writer *w, uint64_t v)
{
	if (w->failed)
		return;
	before_value(w);
	strbuf_addf(w->out, "%llu", (unsigned long long)v);
}

void json_double(struct json_writer *w, double v)
{
	if (w->failed)
		return;
	before_value(w);
	if (!isfinite(v))
		strbuf_addstr(w->out, "null");
	else if (v == floor(v) && fabs(v) < 1e15)
		strbuf_addf(w->out, "%.0f", v);
	else
		strbuf_addf(w->out, "%.6g", v);
}

void json_fixed(struct json_writer *w, double v, int decimals)
{
	if (w->failed)
		return;
	before_value(w);
	if (!isfinite(v) || fabs(v) >= 1e15)
		strbuf_addstr(w->out, "null");
	else
		strbuf_addf(w->out, "%.*f", decimals < 0 ? 0 : decimals > 9 ? 9 : decimals, v);
}

void json_bool(struct json_writer *w, bool v)
{
	if (w->failed)
		return;
	before_value(w);
	strbuf_addstr(w->out, v ? "true" : "false");
}

void json_null(struct json_writer *w)
{
	if (w->failed)
		return;
	before_value(w);
	strbuf_addstr(w->out, "null");
}

void json_value_write(struct json_writer *w, const struct json_value *v)
{
	if (!v) {
		json_null(w);
		return;
	}
	switch (v->type) {
	case JSON_NULL: json_null(w); break;
	case JSON_BOOL: json_bool(w, v->boolean); break;
	case JSON_NUMBER: json_double(w, v->number); break;
	case JSON_STRING: json_string_len(w, v->string, v->string_len); break;
	case JSON_ARRAY:
		json_open_array(w);
		for (size_t i = 0; i < v->nr; i++)
			json_value_write(w, v->items[i]);
		json_close_array(w);
		break;
	case JSON_OBJECT:
		json_open_object(w);
		for (size_t i = 0; i < v->nr; i++) {
			json_key(w, v->keys[i]);
			json_value_write(w, v->items[i]);
		}
		json_close_object(w);
		break;
	}
}

/* ---- parser ---- */

struct parser {
	const char *p, *end;
	struct strbuf *err;
	const char *start;
	bool failed;
};

static void perr(struct parser *ps, const char *what)
{
	if (!ps->failed)
		error_set(ps->err, "invalid JSON at byte %zu: %s", (size_t)(ps->p - ps->start), what);
	ps->failed = true;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static void add_utf8(struct strbuf *sb, unsigned cp)
{
	if (cp < 0x80) {
		strbuf_addch(sb, (int)cp);
	} else if (cp < 0x800) {
		strbuf_addch(sb, 0xc0 | (cp >> 6));
		strbuf_addch(sb, 0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		strbuf_addch(sb, 0xe0 | (cp >> 12));
		strbuf_addch(sb, 0x80 | ((cp >> 6) & 0x3f));
		strbuf_addch(sb, 0x80 | (cp & 0x3f));
	} else {
		strbuf_addch(sb, 0xf0 | (cp >> 18));
		strbuf_addch(sb, 0x80 | ((cp >> 12) & 0x3f));
		strbuf_addch(sb, 0x80 | ((cp >> 6) & 0x3f));
		strbuf_addch(sb, 0x80 | (cp & 0x3f));
	}
}

static int hex4(struct parser *ps, unsigned *out)
{
	unsigned v = 0;
	if (ps->end - ps->p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = *ps->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *parse_string(struct parser *ps, size_t *lenp)
{
	struct strbuf sb = STRBUF_INIT;
	ps->p++; /* opening quote */
	while (ps->p < ps->end && *ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p;
		if (c < 0x20) {
			perr(ps, "control character in string");
			goto fail;
		}
		if (c != '\\') {
			strbuf_addch(&sb, c);
			ps->p++;
			continue;
		}
		ps->p++;
		if (ps->p >= ps->end)
			break;
		char e = *ps->p++;
		switch (e) {
		case '"': strbuf_addch(&sb, '"'); break;
		case '\\': strbuf_addch(&sb, '\\'); break;
		case '/': strbuf_addch(&sb, '/'); break;
		case 'b': strbuf_addch(&sb, '\b'); break;
		case 'f': strbuf_addch(&sb, '\f'); break;
		case 'n': strbuf_addch(&sb, '\n'); break;
		case 'r': strbuf_addch(&sb, '\r'); break;
		case 't': strbuf_addch(&sb, '\t'); break;
		case 'u': {
			unsigned cp;
			if (hex4(ps, &cp)) {
				perr(ps, "bad \\u escape");
				goto fail;
			}
			if (cp >= 0xd800 && cp < 0xdc00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
			    ps->p[1] == 'u') {
				unsigned lo;
				ps->p += 2;
				if (hex4(ps, &lo) || lo < 0xdc00 || lo > 0xdfff) {
					perr(ps, "bad surrogate pair");
					goto fail;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xd800 && cp <= 0xdfff) {
				cp = 0xfffd;
			}
			if (cp == 0) {
				/* a NUL would end the C string every consumer reads: keep it as C0 80
				 * (strbuf.h), which the cleaners spell "\x00" and the writer "\u0000" */
				strbuf_addch(&sb, 0xc0);
				strbuf_addch(&sb, 0x80);
			} else {
				add_utf8(&sb, cp);
			}
			break;
		}
		default:
			perr(ps, "bad escape");
			goto fail;
		}
	}
	if (ps->p >= ps->end) {
		perr(ps, "unterminated string");
		goto fail;
	}
	ps->p++;
	if (!sb.alloc)
		strbuf_grow(&sb, 0);
	return strbuf_detach(&sb, lenp);
fail:
	strbuf_release(&sb);
	return NULL;
}

static struct json_value *parse_value(struct parser *ps, int depth);

static void add_child(struct json_value *parent, char *key, struct json_value *child)
{
	if (parent->nr >= parent->alloc) {
		size_t a = parent->alloc;
		ALLOC_GROW(parent->items, parent->nr + 1, parent->alloc);
		if (parent->type == JSON_OBJECT) {
			size_t b = a;
			parent->keys = grow_array(parent->keys, sizeof(char *), parent->alloc, &b);
		}
	}
	parent->items[parent->nr] = child;
	if (parent->type == JSON_OBJECT)
		parent->keys[parent->nr] = key;
	parent->nr++;
}

static struct json_value *parse_container(struct parser *ps, int depth, bool object)
{
	struct json_value *v = xcalloc(1, sizeof(*v));
	v->type = object ? JSON_OBJECT : JSON_ARRAY;
	char close = object ? '}' : ']';
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		skip_ws(ps);
		if (object) {
			if (ps->p >= ps->end || *ps->p != '"') {
				perr(ps, "expected a key");
				goto fail;
			}
			key = parse_string(ps, NULL);
			if (!key)
				goto fail;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				free(key);
				perr(ps, "expected ':'");
				goto fail;
			}
			ps->p++;
		}
		struct json_value *child = parse_value(ps, depth + 1);
		if (!child) {
			free(key);
			goto fail;
		}
		add_child(v, key, child);
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			return v;
		}
		perr(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
		goto fail;
	}
fail:
	json_free(v);
	return NULL;
}

static bool match_word(struct parser *ps, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, w, n)) {
		ps->p += n;
		return true;
	}
	return false;
}

static struct json_value *parse_value(struct parser *ps, int depth)
{
	if (depth > JSON_MAX_DEPTH) {
		perr(ps, "nested too deep");
		return NULL;
	}
	skip_ws(ps);
	if (ps->p >= ps->end) {
		perr(ps, "unexpected end");
		return NULL;
	}
	char c = *ps->p;
	if (c == '{' || c == '[')
		return parse_container(ps, depth, c == '{');
	struct json_value *v = xcalloc(1, sizeof(*v));
	if (c == '"') {
		v->type = JSON_STRING;
		v->string = parse_string(ps, &v->string_len);
		if (!v->string)
			goto fail;
		return v;
	}
	if (match_word(ps, "true")) {
		v->type = JSON_BOOL;
		v->boolean = true;
		return v;
	}
	if (match_word(ps, "false")) {
		v->type = JSON_BOOL;
		return v;
	}
	if (match_word(ps, "null"))
		return v;
	if (c == '-' || (c >= '0' && c <= '9')) {
		char buf[64];
		size_t n = 0;
		while (ps->p < ps->end && n < sizeof(buf) - 1 &&
		       strchr("+-0123456789.eE", *ps->p))
			buf[n++] = *ps->p++;
		buf[n] = '\0';
		char *end;
		v->type = JSON_NUMBER;
		v->number = strtod(buf, &end);
		if (*end || !n) {
			perr(ps, "bad number");
			goto fail;
		}
		return v;
	}
	perr(ps, "unexpected character");
fail:
	json_free(v);
	return NULL;
}

struct json_value *json_parse(const char *text, size_t len, struct strbuf *err)
{
	struct parser ps = { text, text + len, err, text, false };
	struct json_value *v = parse_value(&ps, 0);
	if (!v)
		return NULL;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		perr(&ps, "trailing data");
		json_free(v);
		return NULL;
	}
	return v;
}

void json_free(struct json_value *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nr; i++) {
		json_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->string);
	free(v);
}

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->nr; i++)
		if (!strcmp(obj->keys[i], key))
			return obj->items[i];
	return NULL;
}

const struct json_value *json_path(const struct json_value *v, const char *path)
{
	char part[128];
	while (v && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(part))
			return NULL;
		memcpy(part, path, n);
		part[n] = '\0';
		path += n + (path[n] == '.');
		if (v->type == JSON_ARRAY) {
			uint64_t idx;
			if (!parse_u64(part, &idx) || idx >= v->nr)
				return NULL;
			v = v->items[idx];
		} else {
			v = json_get(v, part);
		}
	}
	return v;
}

const char *json_get_string(const struct json_value *obj, const char *key)
{
	const struct json_value *v = json_get(obj, key);
	return v && v->type == JSON_STRING ? v->string : NULL;
}

bool json_get_number(const struct json_value *obj, const char *key, double *out)
{
	const struct json_value *v = json_get(obj, key);
	if (!v || v->type != JSON_NUMBER)
		return false;
	*out = v->number;
	return true;
}
