/* config.c: git-config style parser with per-host sections (see config.h). */
#include "config.h"
#include "fileio.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

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
	for (size_t i = 0; i < cfg->nr_sec; i++) {
		free(cfg->sec[i].name);
		free(cfg->sec[i].origin);
	}
	free(cfg->sec);
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
			ALLOC_GROW(cfg->sec, cfg->nr_sec + 1, cfg->alloc_sec);
			cfg->sec[cfg->nr_sec].first = cfg->nr;
			cfg->sec[cfg->nr_sec].name = xstrdup(sec.buf);
			cfg->sec[cfg->nr_sec++].origin = xstrdup(origin.buf);
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

/* Read all of fd into text, at most cap bytes: READ_OK, READ_TRUNCATED or -1 with *err. */
static int read_capped(int fd, const char *path, struct strbuf *text, size_t cap,
		       struct strbuf *err)
{
	for (;;) {
		if (text->len > cap)
			return READ_TRUNCATED;
		strbuf_grow(text, 65536);
		size_t room = text->alloc - text->len - 1;
		if (room > cap + 1 - text->len)
			room = cap + 1 - text->len;
		ssize_t n = read(fd, text->buf + text->len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return error_set(err, "cannot read '%s': %s", path, strerror(errno));
		if (n == 0)
			return READ_OK;
		text->len += (size_t)n;
		text->buf[text->len] = '\0';
	}
}

/* A regular file, or the null device ("--config /dev/null": no configuration at all). */
static bool plain_or_null(const struct stat *st)
{
	return S_ISREG(st->st_mode) || (S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3));
}

int config_load_fd(struct config *cfg, int fd, const char *path, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	struct stat st;
	int r = -1;
	if (fstat(fd, &st) < 0) {
		error_set(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	/* A FIFO, socket or device can feed us for as long as its writer likes: only a regular
	 * file has an end we know of. */
	if (!plain_or_null(&st)) {
		error_set(err, "'%s' is not a regular file", path);
		goto out;
	}
	if (st.st_size > (off_t)CONFIG_MAX_BYTES) {
		error_set(err, "'%s' is larger than %u bytes", path, CONFIG_MAX_BYTES);
		goto out;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	r = read_capped(fd, path, &text, CONFIG_MAX_BYTES, err);
	if (r == READ_TRUNCATED)
		r = error_set(err, "'%s' is larger than %u bytes", path, CONFIG_MAX_BYTES);
	else if (r == READ_OK)
		r = config_parse(cfg, text.buf, text.len, path, err);
out:
	close(fd);
	strbuf_release(&text);
	return r < 0 ? -1 : 0;
}

int config_load_file(struct config *cfg, const char *path, bool missing_ok, struct strbuf *err)
{
	struct stat st;
	/* Look before opening: opening some devices does something (a watchdog starts counting). */
	if (stat(path, &st) == 0 && !plain_or_null(&st))
		return error_set(err, "'%s' is not a regular file", path);
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; it matters if
	 * one takes the file's place between the look and the open. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if ((errno == ENOENT || errno == ENOTDIR) && missing_ok)
			return 1;
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	}
	return config_load_fd(cfg, fd, path, err);
}

int config_set(struct config *cfg, const char *a, struct strbuf *err)
{
	const char *eq = strchr(a, '=');
	const char *dot = strchr(a, '.');
	if (!eq || !dot || dot > eq || dot == a || dot + 1 == eq)
		return error_set(err, "expected 'section.key=value', got '%s'", a);
	char *sec = lower_dup(a, (size_t)(dot - a));
	add_entry(cfg, sec, NULL, dot + 1, (size_t)(eq - dot - 1), eq + 1, CONFIG_ORIGIN_SET);
	free(sec);
	return 0;
}

void config_remove_entry(struct config *cfg, size_t i)
{
	struct config_entry *e = &cfg->e[i];
	free(e->section);
	free(e->subsection);
	free(e->key);
	free(e->value);
	free(e->origin);
	memmove(e, e + 1, (cfg->nr - i - 1) * sizeof(*e));
	cfg->nr--;
	for (size_t s = 0; s < cfg->nr_sec; s++)
		if (cfg->sec[s].first > i)
			cfg->sec[s].first--;
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

/* ---- the schema ---- */

static void add_number(struct strbuf *sb, const struct config_key *k, double v)
{
	if (k->type == CONFIG_SIZE || k->type == CONFIG_COUNT || (k->flags & CONFIG_WHOLE))
		strbuf_addf(sb, "%.0f", v);
	else
		strbuf_addf(sb, "%.10g", v);
}

static void add_range(struct strbuf *sb, const struct config_key *k)
{
	bool lo_x = k->flags & CONFIG_MIN_EXCL, hi_x = k->flags & CONFIG_MAX_EXCL;
	if (!lo_x && !hi_x) {
		strbuf_addstr(sb, " from ");
		add_number(sb, k, k->min);
		strbuf_addstr(sb, " to ");
		add_number(sb, k, k->max);
		return;
	}
	strbuf_addstr(sb, lo_x ? " above " : " at least ");
	add_number(sb, k, k->min);
	strbuf_addstr(sb, hi_x ? " and below " : " and at most ");
	add_number(sb, k, k->max);
}

static void add_choices(struct strbuf *sb, const struct config_key *k)
{
	for (size_t i = 0; k->choices && k->choices[i]; i++) {
		if (i)
			strbuf_addstr(sb, k->choices[i + 1] ? ", " : " or ");
		strbuf_addstr(sb, k->choices[i]);
	}
}

void config_key_describe(const struct config_key *k, struct strbuf *sb)
{
	switch (k->type) {
	case CONFIG_BOOL: strbuf_addstr(sb, "true or false"); return;
	case CONFIG_SECONDS:
		strbuf_addstr(sb, k->flags & CONFIG_WHOLE ? "whole seconds" : "seconds");
		break;
	case CONFIG_COUNT: strbuf_addstr(sb, "a whole number"); break;
	case CONFIG_SIZE: strbuf_addstr(sb, "a size in bytes"); break;
	case CONFIG_NUMBER: strbuf_addstr(sb, "a number"); break;
	case CONFIG_PERCENT: strbuf_addstr(sb, "a percentage"); break;
	case CONFIG_STRING: strbuf_addstr(sb, "text"); return;
	case CONFIG_PATH: strbuf_addstr(sb, "an absolute path"); return;
	case CONFIG_ENUM: add_choices(sb, k); return;
	case CONFIG_NAMES:
		strbuf_addstr(sb, "a list of ");
		add_choices(sb, k);
		return;
	}
	add_range(sb, k);
}

static bool in_range(const struct config_key *k, double v)
{
	if (!isfinite(v))
		return false;
	if (k->flags & CONFIG_MIN_EXCL ? !(v > k->min) : !(v >= k->min))
		return false;
	return k->flags & CONFIG_MAX_EXCL ? v < k->max : v <= k->max;
}

static bool is_choice(const struct config_key *k, const char *v, size_t len)
{
	for (size_t i = 0; k->choices && k->choices[i]; i++)
		if (strlen(k->choices[i]) == len && !strncmp(k->choices[i], v, len))
			return true;
	return false;
}

static bool is_blank(const char *v)
{
	return !v[strspn(v, " \t\n\r\v\f")];
}

static bool value_ok(const struct config_key *k, const char *v)
{
	uint64_t u;
	double d;
	switch (k->type) {
	case CONFIG_BOOL: return parse_bool(v) >= 0;
	case CONFIG_SECONDS:
		if (k->flags & CONFIG_WHOLE)
			return parse_u64(v, &u) && in_range(k, (double)u);
		return parse_double(v, &d) && in_range(k, d);
	case CONFIG_COUNT:
	case CONFIG_SIZE: return parse_u64(v, &u) && in_range(k, (double)u);
	case CONFIG_NUMBER: return parse_double(v, &d) && in_range(k, d);
	case CONFIG_PERCENT: {
		/* as the readers take it: trailing '%' and spaces dropped */
		char *s = xstrdup(v);
		size_t n = strlen(s);
		while (n && (s[n - 1] == '%' || s[n - 1] == ' '))
			s[--n] = '\0';
		bool ok = parse_double(s, &d) && in_range(k, d);
		free(s);
		return ok;
	}
	/* empty text is no value: 'gpu.driver-version =' would otherwise drop the pin unseen,
	 * and 'kernel.allow = " "' would ignore every line with a space in it */
	case CONFIG_STRING: return !is_blank(v);
	case CONFIG_PATH: return v[0] == '/';
	case CONFIG_ENUM: return is_choice(k, v, strlen(v));
	case CONFIG_NAMES:
		for (const char *p = v; *p;) {
			size_t n = strcspn(p, ", \t");
			if (n && !is_choice(k, p, n))
				return false;
			p += n;
			p += strspn(p, ", \t");
		}
		return true;
	}
	return false;
}

int config_key_check(const struct config_key *k, const char *name, const char *value,
		     struct strbuf *err)
{
	if (value_ok(k, value))
		return 0;
	if (is_blank(value) && (k->type == CONFIG_STRING || k->type == CONFIG_PATH))
		return error_set(err, "'%s' is empty: give it a value or remove the setting",
				 name ? name : k->name);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "'%s' wants ", name ? name : k->name);
	config_key_describe(k, &sb);
	strbuf_addstr(&sb, ", not '");
	strbuf_add_excerpt(&sb, value, 64);
	strbuf_addch(&sb, '\'');
	error_set(err, "%s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

const struct config_key *config_key_find(const struct config_key *keys, size_t nr,
					 const char *section, const char *key)
{
	struct strbuf full = STRBUF_INIT;
	const struct config_key *found = NULL;
	strbuf_addf(&full, "%s.%s", section, key);
	for (size_t i = 0; i < nr && !found; i++)
		if (!strcmp(keys[i].name, full.buf))
			found = &keys[i];
	/* FNM_PERIOD off: "stress.floor-*" must not match across a dot either way, since section
	 * and key names may hold dots only in the key. */
	for (size_t i = 0; i < nr && !found; i++)
		if (strchr(keys[i].name, '*') && !fnmatch(keys[i].name, full.buf, 0))
			found = &keys[i];
	strbuf_release(&full);
	return found;
}

size_t config_edit_distance(const char *a, const char *b)
{
	/* Damerau (optimal string alignment): "cuont" is one swap from "count" */
	size_t la = strlen(a), lb = strlen(b);
	if (la > 256 || lb > 256)
		return la > lb ? la : lb;
	size_t *d = xcalloc((la + 1) * (lb + 1), sizeof(*d));
#define D(i, j) d[(i) * (lb + 1) + (j)]
	for (size_t i = 0; i <= la; i++)
		D(i, 0) = i;
	for (size_t j = 0; j <= lb; j++)
		D(0, j) = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = D(i - 1, j) + 1;
			if (D(i, j - 1) + 1 < v)
				v = D(i, j - 1) + 1;
			if (D(i - 1, j - 1) + cost < v)
				v = D(i - 1, j - 1) + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    D(i - 2, j - 2) + 1 < v)
				v = D(i - 2, j - 2) + 1;
			D(i, j) = v;
		}
	}
	size_t r = D(la, lb);
#undef D
	free(d);
	return r;
}

/* The nearest name to want among the keys (whole "section.key" names, or sections only), if it is
 * near enough to be a slip of the keyboard rather than another word. */
static const char *nearest(const struct config_key *keys, size_t nr, const char *want,
			   bool sections, struct strbuf *buf)
{
	size_t best = (size_t)-1, limit = strlen(want) / 3 + 1;
	strbuf_reset(buf);
	for (size_t i = 0; i < nr; i++) {
		const char *n = keys[i].name;
		if (strchr(n, '*') && !sections)
			continue;
		size_t len = sections ? strcspn(n, ".") : strlen(n);
		char *cand = xstrndup(n, len);
		size_t dist = config_edit_distance(want, cand);
		if (dist < best && dist <= limit) {
			best = dist;
			strbuf_reset(buf);
			strbuf_addstr(buf, cand);
		}
		free(cand);
	}
	return buf->len ? buf->buf : NULL;
}

static bool section_known(const struct config_key *keys, size_t nr, const char *section)
{
	size_t len = strlen(section);
	for (size_t i = 0; i < nr; i++) {
		const char *n = keys[i].name;
		if (!strncmp(n, section, len) && n[len] == '.')
			return true;
		/* a pattern's section ("*.enabled" is not one; "stress*.x" would be) */
		const char *dot = strchr(n, '.');
		if (dot && memchr(n, '*', (size_t)(dot - n))) {
			char *sec = xstrndup(n, (size_t)(dot - n));
			bool m = !fnmatch(sec, section, 0);
			free(sec);
			if (m)
				return true;
		}
	}
	return false;
}

static int unknown(const char *origin, const char *what, const char *name, const char *hint,
		   struct strbuf *err)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s: unknown %s '", origin, what);
	strbuf_add_excerpt(&sb, name, 64);
	strbuf_addch(&sb, '\'');
	if (hint)
		strbuf_addf(&sb, " (did you mean '%s'?)", hint);
	error_set(err, "%s", sb.buf);
	strbuf_release(&sb);
	return -1;
}

int config_validate(const struct config *cfg, const struct config_key *keys, size_t nr,
		    struct strbuf *err)
{
	struct strbuf hint = STRBUF_INIT, full = STRBUF_INIT, name = STRBUF_INIT;
	int ret = 0;
	size_t s = 0;
	for (size_t i = 0; i <= cfg->nr && !ret; i++) {
		const struct config_entry *e = i < cfg->nr ? &cfg->e[i] : NULL;
		/* sections in file order, each before the first entry written after it */
		for (; s < cfg->nr_sec && !ret; s++) {
			const struct config_section *sec = &cfg->sec[s];
			if (e && sec->first > i)
				break;
			if (!section_known(keys, nr, sec->name))
				ret = unknown(sec->origin, "section", sec->name,
					      nearest(keys, nr, sec->name, true, &hint), err);
		}
		if (!e || ret)
			continue;
		strbuf_reset(&full);
		strbuf_addf(&full, "%s.%s", e->section, e->key);
		const struct config_key *k = config_key_find(keys, nr, e->section, e->key);
		if (!k) {
			const char *near = nearest(keys, nr, full.buf, false, &hint);
			bool sec_known = section_known(keys, nr, e->section);
			if (!near && !sec_known)
				near = nearest(keys, nr, e->section, true, &hint);
			ret = unknown(e->origin, sec_known ? "key" : "section",
				      sec_known ? full.buf : e->section, near, err);
			continue;
		}
		if (config_key_check(k, full.buf, e->value, &name) < 0)
			ret = error_set(err, "%s: %s", e->origin, name.buf);
	}
	strbuf_release(&hint);
	strbuf_release(&full);
	strbuf_release(&name);
	return ret;
}
