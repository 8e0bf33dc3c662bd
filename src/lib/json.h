/*
 * json.h: a small JSON writer (into a strbuf) and a bounded JSON parser (into a tree).
 *
 * Writer: json_open/close object or array, json_key, then value calls; commas are handled.
 * Strings are escaped as RFC 8259 asks; invalid UTF-8 bytes become U+FFFD so output always parses.
 *
 * Parser: json_parse() builds a tree owned by the returned root; json_free() frees all of it.
 * Depth is limited (JSON_MAX_DEPTH) so hostile input cannot blow the stack.
 */
#ifndef VIGIL_JSON_H
#define VIGIL_JSON_H

#include "strbuf.h"

struct json_writer {
	struct strbuf *out;
	int depth;
	bool need_comma[64];
	bool after_key;
	bool pretty;
	const char *failed; /* why writing stopped (too deep, unbalanced), or NULL */
};

void json_writer_init(struct json_writer *w, struct strbuf *out, bool pretty);
/*
 * The version of the shape of every command's --json output (docs/schema/, one file a command): raised when a
 * field changes meaning, type or goes away, so a consumer can refuse what it does not know; a new
 * field does not raise it. Written first in each command's top object by json_open_top().
 */
#define VIGIL_JSON_SCHEMA_VERSION 1
/* Open a command's top object and write "schema_version" as its first member. */
void json_open_top(struct json_writer *w);
void json_open_object(struct json_writer *w);
void json_close_object(struct json_writer *w);
void json_open_array(struct json_writer *w);
void json_close_array(struct json_writer *w);
void json_key(struct json_writer *w, const char *key);
void json_string(struct json_writer *w, const char *s);
void json_string_len(struct json_writer *w, const char *s, size_t len);
void json_int(struct json_writer *w, int64_t v);
void json_uint(struct json_writer *w, uint64_t v);
void json_double(struct json_writer *w, double v);
/* v with a fixed number of decimals (0..9): wall-clock seconds keep their milliseconds, which
 * json_double's 6 significant digits would lose; null when not finite or 1e15 or more. */
void json_fixed(struct json_writer *w, double v, int decimals);
void json_bool(struct json_writer *w, bool v);
void json_null(struct json_writer *w);
/* After the last value: 0, or -1 with *err when the writer stopped (nested past its depth, a
 * close with nothing open) or values are left open. A failed writer appends nothing more, so
 * what it wrote is a prefix of the document, never a wrong one. */
int json_writer_finish(struct json_writer *w, struct strbuf *err);
/* Append s as a JSON string literal (with quotes) to sb. */
void json_quote(struct strbuf *sb, const char *s, size_t len);

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

#define JSON_MAX_DEPTH 64

struct json_value {
	enum json_type type;
	bool boolean;
	double number;
	char *string;      /* JSON_STRING: decoded, NUL-terminated */
	size_t string_len;
	/* JSON_ARRAY / JSON_OBJECT: children; keys[i] set for objects */
	struct json_value **items;
	char **keys;
	size_t nr, alloc;
};

/* Write a parsed tree back (a report kept inside another document): depth is the parser's. */
void json_value_write(struct json_writer *w, const struct json_value *v);

/* Parse len bytes; returns the root or NULL with *err set. */
struct json_value *json_parse(const char *text, size_t len, struct strbuf *err);
void json_free(struct json_value *v);

/* Lookups; NULL when absent or of another type. */
const struct json_value *json_get(const struct json_value *obj, const char *key);
/* Dotted path: "checks.0.name" (numbers index arrays). */
const struct json_value *json_path(const struct json_value *v, const char *path);
const char *json_get_string(const struct json_value *obj, const char *key);
bool json_get_number(const struct json_value *obj, const char *key, double *out);

#endif
