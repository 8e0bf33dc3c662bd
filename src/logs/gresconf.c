/*
 * gresconf.c: a node's GPU count from slurm.conf and gres.conf text (see gresconf.h). Only what
 * the count needs is understood; every other line is walked over, so a configuration written for
 * a newer Slurm still answers.
 */
#include "gresconf.h"
#include "../lib/util.h"

#include <ctype.h>
#include <strings.h>

/* Steps the hostlist matcher may take for one expression: each bracket tries a few digit runs,
 * and a hostile "[0-9][0-9]..." against a long number must not explode. */
#define HOSTLIST_STEPS 20000
/* More GPUs than this on a node is not a count but junk. */
#define GRES_GPUS_MAX 4096

/* Decimal digits only: hostlists write "008", which strtoull's base 0 would read as octal. */
static bool parse_dec(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

void gresconf_answer_init(struct gresconf_answer *a)
{
	memset(a, 0, sizeof(*a));
}

void gresconf_answer_release(struct gresconf_answer *a)
{
	strlist_release(&a->includes);
	gresconf_answer_init(a);
}

/* ---- hostlists ---- */

struct hl_range {
	uint64_t lo, hi;
	size_t width; /* digits of lo as written: "001" pads to 3 */
};

/* Parse "1-4,7" (the inside of one bracket pair, n bytes) into r. 0, or -1 with *err. */
static int parse_ranges(const char *s, size_t n, struct hl_range *r, size_t max, size_t *nr,
			struct strbuf *err)
{
	size_t i = 0;
	*nr = 0;
	while (i <= n) {
		size_t start = i;
		while (i < n && s[i] != ',')
			i++;
		const char *item = s + start;
		size_t len = i - start, dash = 0;
		while (dash < len && item[dash] != '-')
			dash++;
		char lo[20], hi[20];
		size_t lo_len = dash, hi_len = dash < len ? len - dash - 1 : 0;
		if (!lo_len || lo_len >= sizeof(lo) || (dash < len && (!hi_len || hi_len >= sizeof(hi))))
			return error_set(err, "bad range in hostlist brackets");
		memcpy(lo, item, lo_len);
		lo[lo_len] = '\0';
		if (dash < len) {
			memcpy(hi, item + dash + 1, hi_len);
			hi[hi_len] = '\0';
		} else {
			memcpy(hi, lo, lo_len + 1);
		}
		for (const char *p = lo; *p; p++)
			if (!isdigit((unsigned char)*p))
				return error_set(err, "bad range in hostlist brackets");
		for (const char *p = hi; *p; p++)
			if (!isdigit((unsigned char)*p))
				return error_set(err, "bad range in hostlist brackets");
		if (*nr == max)
			return error_set(err, "too many ranges in hostlist brackets");
		struct hl_range *x = &r[(*nr)++];
		if (!parse_dec(lo, &x->lo) || !parse_dec(hi, &x->hi) || x->lo > x->hi)
			return error_set(err, "bad range in hostlist brackets");
		x->width = lo_len;
		i++; /* past the ',' (or the end) */
	}
	return 0;
}

#define HL_RANGES_MAX 64

/* Match one item (no top-level ',') of n bytes against name. 1, 0, or -1 (*err). */
static int match_item(const char *pat, size_t n, const char *name, unsigned depth, unsigned *steps,
		      struct strbuf *err)
{
	if (++*steps > HOSTLIST_STEPS)
		return error_set(err, "hostlist expression too complex");
	size_t i = 0;
	while (i < n && pat[i] != '[') {
		if (tolower((unsigned char)pat[i]) != tolower((unsigned char)*name))
			return 0;
		i++;
		name++;
	}
	if (i == n)
		return *name == '\0';
	if (depth >= GRESCONF_HOSTLIST_BRACKETS)
		return error_set(err, "more than %d brackets in a hostlist", GRESCONF_HOSTLIST_BRACKETS);
	size_t close = i + 1;
	while (close < n && pat[close] != ']' && pat[close] != '[')
		close++;
	if (close == n || pat[close] != ']')
		return error_set(err, "unbalanced '[' in hostlist");
	struct hl_range r[HL_RANGES_MAX];
	size_t nr;
	if (parse_ranges(pat + i + 1, close - i - 1, r, HL_RANGES_MAX, &nr, err) < 0)
		return -1;
	size_t digits = 0;
	while (isdigit((unsigned char)name[digits]) && digits < 19)
		digits++;
	int found = 0;
	for (size_t len = 1; len <= digits && !found; len++) {
		char num[20];
		uint64_t v;
		memcpy(num, name, len);
		num[len] = '\0';
		if (!parse_dec(num, &v))
			continue;
		for (size_t k = 0; k < nr && !found; k++) {
			/* Slurm writes each number padded to the width of the range's start. */
			bool shape = len == r[k].width || (len > r[k].width && num[0] != '0');
			if (!shape || v < r[k].lo || v > r[k].hi)
				continue;
			int m = match_item(pat + close + 1, n - close - 1, name + len, depth + 1, steps,
					   err);
			if (m < 0)
				return -1;
			found = m;
		}
	}
	return found;
}

/* Call fn on each top-level item of expr (split on ',' outside brackets). */
static int each_item(const char *expr, int (*fn)(const char *, size_t, void *), void *data,
		     struct strbuf *err)
{
	size_t i = 0, n = strlen(expr);
	if (!n)
		return error_set(err, "empty hostlist");
	/* the whole expression first: a bad one is bad for every node, matched or not */
	for (int pass = 0; pass < 2; pass++) {
		i = 0;
		while (i <= n) {
			size_t start = i;
			int depth = 0;
			while (i < n && (expr[i] != ',' || depth)) {
				if (expr[i] == '[')
					depth++;
				else if (expr[i] == ']' && --depth < 0)
					return error_set(err, "unbalanced ']' in hostlist");
				i++;
			}
			if (depth)
				return error_set(err, "unbalanced '[' in hostlist");
			if (i == start)
				return error_set(err, "empty name in hostlist");
			if (pass) {
				int r = fn(expr + start, i - start, data);
				if (r)
					return r;
			}
			i++;
		}
	}
	return 0;
}

struct match_data {
	const char *node;
	unsigned steps;
	struct strbuf *err;
};

static int match_fn(const char *item, size_t n, void *data)
{
	struct match_data *m = data;
	return match_item(item, n, m->node, 0, &m->steps, m->err);
}

int hostlist_match(const char *expr, const char *node, struct strbuf *err)
{
	struct match_data m = { .node = node, .err = err };
	return each_item(expr, match_fn, &m, err);
}

struct count_data {
	uint64_t total;
	struct strbuf *err;
};

static int count_fn(const char *item, size_t n, void *data)
{
	struct count_data *c = data;
	uint64_t names = 1;
	unsigned brackets = 0;
	for (size_t i = 0; i < n; i++) {
		if (item[i] == ']')
			return error_set(c->err, "unbalanced ']' in hostlist");
		if (item[i] != '[')
			continue;
		size_t close = i + 1;
		while (close < n && item[close] != ']' && item[close] != '[')
			close++;
		if (close == n || item[close] != ']')
			return error_set(c->err, "unbalanced '[' in hostlist");
		if (++brackets > GRESCONF_HOSTLIST_BRACKETS)
			return error_set(c->err, "more than %d brackets in a hostlist",
					 GRESCONF_HOSTLIST_BRACKETS);
		struct hl_range r[HL_RANGES_MAX];
		size_t nr;
		uint64_t sum = 0;
		if (parse_ranges(item + i + 1, close - i - 1, r, HL_RANGES_MAX, &nr, c->err) < 0)
			return -1;
		for (size_t k = 0; k < nr; k++) {
			sum += r[k].hi - r[k].lo + 1;
			if (sum > GRES_GPUS_MAX || r[k].hi - r[k].lo >= GRES_GPUS_MAX)
				return error_set(c->err, "hostlist of more than %d names",
						 GRES_GPUS_MAX);
		}
		names *= sum;
		if (names > GRES_GPUS_MAX)
			return error_set(c->err, "hostlist of more than %d names", GRES_GPUS_MAX);
		i = close;
	}
	c->total += names;
	if (c->total > GRES_GPUS_MAX)
		return error_set(c->err, "hostlist of more than %d names", GRES_GPUS_MAX);
	return 0;
}

int hostlist_count(const char *expr, uint64_t *count, struct strbuf *err)
{
	struct count_data c = { .err = err };
	*count = 0;
	if (each_item(expr, count_fn, &c, err) < 0)
		return -1;
	*count = c.total;
	return 0;
}

/* ---- Gres values ---- */

/* "8", "2K" -> count (Slurm's suffixes multiply by 1024^n). */
static bool parse_count(const char *s, size_t n, uint64_t *out)
{
	static const char suffix[] = "KMGTP";
	char buf[24];
	uint64_t mul = 1;
	if (!n || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	const char *sfx = strchr(suffix, toupper((unsigned char)buf[n - 1]));
	if (n > 1 && sfx && buf[n - 1]) {
		for (const char *p = suffix; p <= sfx; p++)
			mul *= 1024;
		buf[n - 1] = '\0';
	}
	for (const char *p = buf; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	if (!parse_dec(buf, out) || *out > GRES_GPUS_MAX)
		return false;
	*out *= mul;
	return *out <= GRES_GPUS_MAX;
}

static int gres_item(const char *s, size_t n, uint64_t *gpus, struct strbuf *err)
{
	/* scontrol's "gpu:8(S:0-1)": the socket list in parentheses says where, not how many */
	const char *paren = memchr(s, '(', n);
	if (paren) {
		if (s[n - 1] != ')')
			return error_set(err, "bad Gres item (unclosed '(')");
		n = (size_t)(paren - s);
	}
	size_t fields = 0, last = 0, name_len = n;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ':') {
			if (!fields)
				name_len = i;
			fields++;
			last = i + 1;
		} else if (isspace((unsigned char)s[i]) || s[i] == '=' || s[i] == '[' || s[i] == ']') {
			return error_set(err, "bad character in Gres item");
		}
	}
	if (!name_len)
		return error_set(err, "Gres item without a name");
	if (fields > 3)
		return error_set(err, "Gres item with too many ':' fields");
	if (name_len != 3 || strncasecmp(s, "gpu", 3))
		return 0; /* another resource: mps, shard, nvme... */
	uint64_t c = 1;
	if (fields && isdigit((unsigned char)s[last]) && !parse_count(s + last, n - last, &c))
		return error_set(err, "bad GPU count in Gres item");
	if (fields && last == n)
		return error_set(err, "Gres item ends in ':'");
	*gpus += c;
	if (*gpus > GRES_GPUS_MAX)
		return error_set(err, "more than %d GPUs in Gres", GRES_GPUS_MAX);
	return 0;
}

int gres_value_gpus(const char *value, uint64_t *gpus, struct strbuf *err)
{
	size_t i = 0, n = strlen(value);
	*gpus = 0;
	if (!n || !strcasecmp(value, "(null)"))
		return 0; /* scontrol's word for none */
	while (i <= n) {
		size_t start = i;
		int depth = 0;
		while (i < n && (value[i] != ',' || depth)) {
			if (value[i] == '(')
				depth++;
			else if (value[i] == ')')
				depth--;
			i++;
		}
		if (i == start || depth)
			return error_set(err, "bad Gres value");
		if (gres_item(value + start, i - start, gpus, err) < 0)
			return -1;
		i++;
	}
	return 0;
}

/* ---- lines ---- */

struct token {
	char key[32];
	char value[1024];
	bool has_eq;
};

#define LINE_TOKENS 64

/*
 * Split a logical line (comments already cut) into Key=Value tokens; a value in double quotes may
 * hold spaces. Returns the token count, or -1 with *err.
 */
static int tokenize(const char *line, struct token *t, size_t max, struct strbuf *err)
{
	size_t nt = 0;
	const char *p = line;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			return (int)nt;
		if (nt == max)
			return error_set(err, "more than %d words on a line", LINE_TOKENS);
		struct token *x = &t[nt++];
		size_t k = 0, v = 0;
		memset(x, 0, sizeof(*x));
		while (*p && !isspace((unsigned char)*p) && *p != '=') {
			if (k + 1 >= sizeof(x->key))
				return error_set(err, "a key longer than %zu bytes", sizeof(x->key) - 1);
			x->key[k++] = *p++;
		}
		if (*p != '=')
			continue;
		x->has_eq = true;
		p++;
		bool quoted = false;
		while (*p && (quoted || !isspace((unsigned char)*p))) {
			if (*p == '"') {
				quoted = !quoted;
				p++;
				continue;
			}
			if (v + 1 >= sizeof(x->value))
				return error_set(err, "a value longer than %zu bytes",
						 sizeof(x->value) - 1);
			x->value[v++] = *p++;
		}
		if (quoted)
			return error_set(err, "unclosed '\"'");
	}
}

static const struct token *find_key(const struct token *t, int nt, const char *key)
{
	for (int i = 0; i < nt; i++)
		if (t[i].has_eq && !strcasecmp(t[i].key, key))
			return &t[i];
	return NULL;
}

typedef int (*line_fn)(const char *line, unsigned lineno, void *data, struct strbuf *err);

/*
 * Call fn on each logical line of text: '\r' dropped, a trailing '\' joins the next line, '#'
 * starts a comment. Stops at fn's first non-zero return. -1 with *err ("line N: ...") on NUL
 * bytes, an over-long line, or fn's error.
 */
static int each_line(const char *text, size_t len, line_fn fn, void *data, struct strbuf *err)
{
	struct strbuf line = STRBUF_INIT, why = STRBUF_INIT;
	size_t i = 0;
	unsigned lineno = 0, first = 0;
	int ret = 0;
	if (memchr(text, '\0', len)) {
		ret = error_set(err, "holds NUL bytes: not a configuration file");
		goto out;
	}
	while (i < len && ret == 0) {
		size_t end = i;
		while (end < len && text[end] != '\n')
			end++;
		size_t n = end - i;
		lineno++;
		if (!line.len)
			first = lineno;
		if (n && text[i + n - 1] == '\r')
			n--;
		bool cont = n && text[i + n - 1] == '\\';
		if (line.len + n > GRESCONF_LINE_MAX) {
			ret = error_set(err, "line %u: longer than %d bytes", first, GRESCONF_LINE_MAX);
			break;
		}
		strbuf_add(&line, text + i, cont ? n - 1 : n);
		i = end + 1;
		if (cont && i < len)
			continue;
		char *hash = strchr(line.buf, '#');
		if (hash)
			strbuf_setlen(&line, (size_t)(hash - line.buf));
		strbuf_reset(&why);
		int r = fn(line.buf, first, data, &why);
		if (r < 0) {
			error_set(err, "line %u: %s", first, why.buf);
			ret = -1;
		} else if (r > 0) {
			break;
		}
		strbuf_reset(&line);
	}
out:
	strbuf_release(&line);
	strbuf_release(&why);
	return ret;
}

static void keep_gres(struct gresconf_answer *a, const char *gres)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_excerpt(&sb, gres, 120); /* escapes at most 4x: fits whole */
	strlcpy_v(a->gres, sb.buf, sizeof(a->gres));
	strbuf_release(&sb);
}

struct conf_state {
	const char *node;
	struct gresconf_answer *a;
	char default_gres[1024];
	bool autodetect;      /* gres.conf: a global AutoDetect other than off */
	bool node_autodetect; /* gres.conf: a line for this node leaves it to AutoDetect */
	bool gpu_lines;       /* gres.conf: a Name=gpu line for this node was counted */
	uint64_t sum;
};

static int slurm_line(const char *line, unsigned lineno, void *data, struct strbuf *err)
{
	struct conf_state *s = data;
	struct token t[LINE_TOKENS];
	int nt = tokenize(line, t, LINE_TOKENS, err);
	if (nt <= 0)
		return nt;
	if (!t[0].has_eq && !strcasecmp(t[0].key, "include")) {
		if (nt > 1 && !t[1].has_eq && s->a->includes.nr < 16)
			strlist_add(&s->a->includes, t[1].key);
		return 0;
	}
	if (!t[0].has_eq || strcasecmp(t[0].key, "nodename"))
		return 0;
	for (int i = 1; i < nt; i++)
		if (!t[i].has_eq)
			return error_set(err, "NodeName line with a word that is not Key=Value");
	const struct token *gres = find_key(t, nt, "gres");
	uint64_t gpus;
	if (gres && gres_value_gpus(gres->value, &gpus, err) < 0)
		return -1;
	if (!strcasecmp(t[0].value, "default")) {
		if (gres)
			strlcpy_v(s->default_gres, gres->value, sizeof(s->default_gres));
		return 0;
	}
	int m = hostlist_match(t[0].value, s->node, err);
	if (m <= 0 || s->a->found == GRESCONF_NODE_FOUND)
		return m;
	const char *value = gres ? gres->value : s->default_gres;
	if (gres_value_gpus(value, &gpus, err) < 0)
		return -1;
	s->a->found = GRESCONF_NODE_FOUND;
	s->a->gpus = gpus;
	s->a->line = lineno;
	keep_gres(s->a, value);
	return 0;
}

int slurmconf_node_gpus(const char *text, size_t len, const char *node, struct gresconf_answer *a,
			struct strbuf *err)
{
	struct conf_state s = { .node = node, .a = a };
	return each_line(text, len, slurm_line, &s, err);
}

static int gres_line(const char *line, unsigned lineno, void *data, struct strbuf *err)
{
	struct conf_state *s = data;
	struct token t[LINE_TOKENS];
	int nt = tokenize(line, t, LINE_TOKENS, err);
	if (nt <= 0)
		return nt;
	for (int i = 0; i < nt; i++)
		if (!t[i].has_eq)
			return error_set(err, "a word that is not Key=Value");
	const struct token *nodes = find_key(t, nt, "nodename"), *name = find_key(t, nt, "name");
	const struct token *count = find_key(t, nt, "count"), *file = find_key(t, nt, "file");
	const struct token *autod = find_key(t, nt, "autodetect");
	if (nodes) {
		int m = hostlist_match(nodes->value, s->node, err);
		if (m <= 0)
			return m;
	}
	bool auto_on = autod && strcasecmp(autod->value, "off");
	if (!name) {
		if (auto_on)
			s->autodetect = true;
		return 0;
	}
	if (strcasecmp(name->value, "gpu"))
		return 0;
	uint64_t c = 1;
	if (count) {
		if (!parse_count(count->value, strlen(count->value), &c))
			return error_set(err, "bad Count");
	} else if (file) {
		if (hostlist_count(file->value, &c, err) < 0)
			return -1;
	} else if (auto_on || s->autodetect) {
		s->node_autodetect = true;
		return 0;
	}
	if (!s->gpu_lines)
		s->a->line = lineno;
	s->gpu_lines = true;
	s->sum += c;
	if (s->sum > GRES_GPUS_MAX)
		return error_set(err, "more than %d GPUs", GRES_GPUS_MAX);
	return 0;
}

int gresconf_node_gpus(const char *text, size_t len, const char *node, struct gresconf_answer *a,
		       struct strbuf *err)
{
	struct conf_state s = { .node = node, .a = a };
	if (each_line(text, len, gres_line, &s, err) < 0)
		return -1;
	if (s.gpu_lines) {
		a->found = GRESCONF_NODE_FOUND;
		a->gpus = s.sum;
	} else if (s.autodetect || s.node_autodetect) {
		a->found = GRESCONF_AUTODETECT;
	}
	return 0;
}
