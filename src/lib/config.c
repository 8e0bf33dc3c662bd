/* config.c: git-config style parser with per-host sections (see config.h). */
#include "config.h"
#include "fileio.h"

#include <ctype.h>
#include <fnmatch.h>

void config_init(struct config *cfg, const char *host)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->host = xstrdup(host ? host : "");
}

void config_release(struct config *cfg)
{
	for (size_t i = 0; i < cfg->nr; i++) {
		free(cfg->e[i].section);
		free(cfg->e[i].subsection);
		free(cfg->e[i].key);
		free(cfg->e[i].value);
		free(cfg->e[i].origin);
	}
	free(cfg->e);
	free(cfg->host);
	memset(cfg, 0, sizeof(*cfg));
}

static char *lower_dup(const char *s, size_t n)
{
	char *r = xstrndup(s, n);
	for (char *p = r; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return r;
}

static void add_entry(struct config *cfg, const char *sec, const char *sub, const char *key,
		      size_t keylen, const char *val, const char *origin)
{
	ALLOC_GROW(cfg->e, cfg->nr + 1, cfg->alloc);
	struct config_entry *e = &cfg->e[cfg->nr++];
	e->section = xstrdup(sec);
	e->subsection = sub ? xstrdup(sub) : NULL;
	e->key = lower_dup(key, keylen);
	e->value = xstrdup(val);
	e->origin = xstrdup(origin);
}

static bool is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/* Value: trim, drop a trailing comment outside quotes, strip one pair of quotes. */
static void parse_value(const char *s, const char *end, struct strbuf *out)
{
	bool quoted = false;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	for (; s < end; s++) {
		if (*s == '"') {
			quoted = !quoted;
			continue;
		}
		if (!quoted && (*s == '#' || *s == ';'))
			break;
		if (*s == '\\' && s + 1 < end && quoted) {
			s++;
			strbuf_addch(out, *s == 'n' ? '\n' : *s == 't' ? '\t' : *s);
			continue;
		}
		strbuf_addch(out, *s);
	}
	if (!quoted)
		strbuf_rtrim(out);
}

int config_parse(struct config *cfg, const char *text, size_t len, const char *name,
		 struct strbuf *err)
{
	struct strbuf sec = STRBUF_INIT, sub = STRBUF_INIT, val = STRBUF_INIT, origin = STRBUF_INIT;
	bool have_sec = false, have_sub = false;
	int lineno = 0, ret = 0;
	const char *p = text, *end = text + len;

	if (memchr(text, '\0', len)) {
		ret = error_set(err, "'%s' is not a text file", name);
		goto out;
	}
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const char *s = p, *e = eol;
		p = eol < end ? eol + 1 : end;
		lineno++;
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if (s == e || *s == '#' || *s == ';')
			continue;
		strbuf_reset(&origin);
		strbuf_addf(&origin, "%s:%d", name, lineno);
		if (*s == '[') {
			const char *q = s + 1;
			strbuf_reset(&sec);
			strbuf_reset(&sub);
			have_sub = false;
			while (q < e && is_name_char(*q))
				strbuf_addch(&sec, tolower((unsigned char)*q++));
			if (!sec.len)
				goto bad;
			while (q < e && *q == ' ')
				q++;
			if (q < e && *q == '"') {
				q++;
				while (q < e && *q != '"') {
					if (*q == '\\' && q + 1 < e)
						q++;
					strbuf_addch(&sub, *q++);
				}
				if (q >= e)
					goto bad;
				q++;
				have_sub = true;
			}
			if (q >= e || *q != ']')
				goto bad;
			q++;
			while (q < e && (*q == ' ' || *q == '\t'))
				q++;
			if (q < e && *q != '#' && *q != ';')
				goto bad;
			have_sec = true;
			continue;
		}
		if (!have_sec) {
			ret = error_set(err, "%s: setting outside of a [section]", origin.buf);
			goto out;
		}
		const char *k = s;
		while (s < e && is_name_char(*s))
			s++;
		size_t klen = (size_t)(s - k);
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		if (!klen)
			goto bad;
		strbuf_reset(&val);
		if (s == e || *s == '#' || *s == ';') {
			strbuf_addstr(&val, "true"); /* bare key is a boolean, as in git */
		} else if (*s == '=') {
			parse_value(s + 1, e, &val);
		} else {
			goto bad;
		}
		add_entry(cfg, sec.buf, have_sub ? sub.buf : NULL, k, klen, val.buf, origin.buf);
		continue;
bad:
		ret = error_set(err, "%s: cannot parse line", origin.buf);
		goto out;
	}
out:
	strbuf_release(&sec);
	strbuf_release(&sub);
	strbuf_release(&val);
	strbuf_release(&origin);
	return ret;
}

int config_load_file(struct config *cfg, const char *path, bool missing_ok, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	int r = read_file_bounded(path, &text, CONFIG_MAX_BYTES, err);
	if (r == READ_MISSING && missing_ok) {
		strbuf_release(&text);
		return 1;
	}
	if (r == READ_TRUNCATED) {
		r = error_set(err, "'%s' is larger than %u bytes", path, CONFIG_MAX_BYTES);
	} else if (r == READ_MISSING) {
		r = error_set(err, "cannot read '%s': No such file or directory", path);
	} else if (r == 0) {
		r = config_parse(cfg, text.buf, text.len, path, err);
	}
	strbuf_release(&text);
	return r < 0 ? -1 : 0;
}

int config_set(struct config *cfg, const char *a, struct strbuf *err)
{
	const char *eq = strchr(a, '=');
	const char *dot = strchr(a, '.');
	if (!eq || !dot || dot > eq || dot == a || dot + 1 == eq)
		return error_set(err, "expected 'section.key=value', got '%s'", a);
	char *sec = lower_dup(a, (size_t)(dot - a));
	add_entry(cfg, sec, NULL, dot + 1, (size_t)(eq - dot - 1), eq + 1, "command line");
	free(sec);
	return 0;
}

static bool applies(const struct config *cfg, const struct config_entry *e)
{
	return !e->subsection || fnmatch(e->subsection, cfg->host, 0) == 0;
}

static const struct config_entry *find_last(const struct config *cfg, const char *section,
					    const char *key)
{
	for (size_t i = cfg->nr; i-- > 0;) {
		const struct config_entry *e = &cfg->e[i];
		if (!strcmp(e->section, section) && !strcmp(e->key, key) && applies(cfg, e))
			return e;
	}
	return NULL;
}

const char *config_get(const struct config *cfg, const char *section, const char *key)
{
	const struct config_entry *e = cfg ? find_last(cfg, section, key) : NULL;
	return e ? e->value : NULL;
}

const char *config_origin(const struct config *cfg, const char *section, const char *key)
{
	const struct config_entry *e = cfg ? find_last(cfg, section, key) : NULL;
	return e ? e->origin : NULL;
}

size_t config_get_all(const struct config *cfg, const char *section, const char *key,
		      const char ***out)
{
	size_t n = 0, alloc = 0;
	*out = NULL;
	for (size_t i = 0; cfg && i < cfg->nr; i++) {
		const struct config_entry *e = &cfg->e[i];
		if (!strcmp(e->section, section) && !strcmp(e->key, key) && applies(cfg, e)) {
			ALLOC_GROW(*out, n + 1, alloc);
			(*out)[n++] = e->value;
		}
	}
	return n;
}

int config_get_u64(const struct config *cfg, const char *section, const char *key, uint64_t def,
		   uint64_t *out, struct strbuf *err)
{
	const struct config_entry *e = cfg ? find_last(cfg, section, key) : NULL;
	*out = def;
	if (!e)
		return 0;
	if (!parse_u64(e->value, out))
		return error_set(err, "%s: '%s.%s' must be a whole number, not '%s'", e->origin,
				 section, key, e->value);
	return 0;
}

int config_get_double(const struct config *cfg, const char *section, const char *key, double def,
		      double *out, struct strbuf *err)
{
	const struct config_entry *e = cfg ? find_last(cfg, section, key) : NULL;
	*out = def;
	if (!e)
		return 0;
	struct strbuf v = STRBUF_INIT;
	strbuf_addstr(&v, e->value);
	if (v.len && v.buf[v.len - 1] == '%')
		strbuf_setlen(&v, v.len - 1);
	bool ok = parse_double(v.buf, out);
	strbuf_release(&v);
	if (!ok)
		return error_set(err, "%s: '%s.%s' must be a number, not '%s'", e->origin, section,
				 key, e->value);
	return 0;
}

int config_get_bool(const struct config *cfg, const char *section, const char *key, bool def,
		    bool *out, struct strbuf *err)
{
	const struct config_entry *e = cfg ? find_last(cfg, section, key) : NULL;
	*out = def;
	if (!e)
		return 0;
	int b = parse_bool(e->value);
	if (b < 0)
		return error_set(err, "%s: '%s.%s' must be true or false, not '%s'", e->origin,
				 section, key, e->value);
	*out = b;
	return 0;
}
