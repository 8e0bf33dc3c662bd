/* statefile.c: counter readings kept between runs (see statefile.h). */
#include "statefile.h"
#include "fileio.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_MAX_BYTES 255

static bool name_ok(const char *name, size_t len)
{
	if (!len || len > NAME_MAX_BYTES || name[0] == ' ' || name[len - 1] == ' ' ||
	    name[0] == '#')
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] >= 0x7f)
			return false;
	return true;
}

bool counter_set_add(struct counter_set *s, const char *name, uint64_t value)
{
	if (!name_ok(name, strlen(name)))
		return false;
	ALLOC_GROW(s->items, s->nr + 1, s->alloc);
	s->items[s->nr].name = xstrdup(name);
	s->items[s->nr++].value = value;
	return true;
}

bool counter_set_get(const struct counter_set *s, const char *name, uint64_t *value)
{
	for (size_t i = 0; i < s->nr; i++)
		if (!strcmp(s->items[i].name, name)) {
			*value = s->items[i].value;
			return true;
		}
	return false;
}

void counter_set_release(struct counter_set *s)
{
	for (size_t i = 0; i < s->nr; i++)
		free(s->items[i].name);
	free(s->items);
	memset(s, 0, sizeof(*s));
}

void statefile_format(const char *kind, const struct counter_set *s, struct strbuf *out)
{
	strbuf_addf(out, "# vigil %s counters (NAME VALUE: the name is all before the last space)\n",
		    kind);
	for (size_t i = 0; i < s->nr; i++)
		strbuf_addf(out, "%s %llu\n", s->items[i].name,
			    (unsigned long long)s->items[i].value);
}

/* "# vigil KIND ..." names the kind; another kind is another program's file. */
static bool header_kind_ok(const char *line, size_t len, const char *kind)
{
	const char *p = line + strlen("# vigil ");
	size_t n = 0, rest = len - strlen("# vigil ");
	while (n < rest && p[n] != ' ' && p[n] != ':')
		n++;
	return n == strlen(kind) && !memcmp(p, kind, n);
}

int statefile_parse(const char *kind, const char *text, size_t len, struct counter_set *out,
		    struct strbuf *why)
{
	size_t lineno = 0;
	char num[32];
	if (memchr(text, '\0', len))
		return error_set(why, "it holds NUL bytes");
	for (const char *line = text, *end = text + len; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		lineno++;
		if (lineno == 1 && n >= 8 && !memcmp(line, "# vigil ", 8) &&
		    !header_kind_ok(line, n, kind)) {
			counter_set_release(out);
			return error_set(why, "it is not a vigil %s counter file", kind);
		}
		if (n && line[0] != '#') {
			const char *sp = NULL;
			for (size_t i = n; i > 0 && !sp; i--)
				if (line[i - 1] == ' ')
					sp = line + i - 1;
			size_t vlen = sp ? n - (size_t)(sp + 1 - line) : 0;
			uint64_t v;
			bool ok = sp && vlen && vlen < sizeof(num) && name_ok(line, (size_t)(sp - line));
			if (ok) {
				memcpy(num, sp + 1, vlen);
				num[vlen] = '\0';
				ok = strspn(num, "0123456789") == vlen && parse_u64(num, &v);
			}
			if (!ok) {
				counter_set_release(out);
				return error_set(why, "line %zu is not NAME VALUE", lineno);
			}
			char *name = xstrndup(line, (size_t)(sp - line));
			counter_set_add(out, name, v);
			free(name);
		}
		line = nl ? nl + 1 : end;
	}
	return 0;
}

int statefile_load(const char *path, const char *kind, struct counter_set *out, double *mtime,
		   struct strbuf *why)
{
	struct strbuf text = STRBUF_INIT, e = STRBUF_INIT;
	struct stat st;
	int ret = STATEFILE_UNUSABLE;
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			ret = STATEFILE_NONE;
			goto out;
		}
		error_set(why, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	/* Never a file vigil wrote: someone put it there (and the save would refuse it too). */
	if (!S_ISREG(st.st_mode)) {
		error_set(why, "'%s' is %s, not a regular file", path, file_kind(st.st_mode));
		goto out;
	}
	/* In a directory others may create files in (a sticky /tmp), one of theirs under our
	 * name would be a forged reading: only vigil's user or root wrote a reading vigil kept. */
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		error_set(why, "'%s' belongs to uid %u, not to vigil's uid %u or root", path,
			  (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	int r = read_file_bounded(path, &text, STATEFILE_MAX_BYTES, &e);
	if (r == READ_MISSING) {
		ret = STATEFILE_NONE;
		goto out;
	}
	if (r == READ_TRUNCATED) {
		error_set(why, "'%s' is too large for a counter file (over %u bytes)", path,
			  STATEFILE_MAX_BYTES);
		goto out;
	}
	if (r < 0) {
		error_set(why, "%s", e.buf);
		goto out;
	}
	if (statefile_parse(kind, text.buf, text.len, out, &e) < 0) {
		error_set(why, "'%s' is not usable: %s", path, e.buf);
		goto out;
	}
	if (mtime)
		*mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
	ret = STATEFILE_LOADED;
out:
	strbuf_release(&text);
	strbuf_release(&e);
	return ret;
}

int statefile_save(const char *path, const char *kind, const struct counter_set *s,
		   struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	statefile_format(kind, s, &text);
	int ret = write_file_atomic(path, text.buf, text.len, 0644, err);
	strbuf_release(&text);
	return ret;
}

void statefile_stamp(struct counter_set *s, double time, double boot)
{
	counter_set_add(s, STATEFILE_TIME, time > 0 ? (uint64_t)time : 0);
	if (boot > 0)
		counter_set_add(s, STATEFILE_BOOT, (uint64_t)boot);
}

enum statefile_base statefile_base(const struct counter_set *prev, bool loaded, double mtime,
				   double now, double boot, double *age)
{
	uint64_t t, b;
	*age = -1;
	if (!loaded)
		return BASE_FIRST;
	double when = counter_set_get(prev, STATEFILE_TIME, &t) ? (double)t : mtime;
	if (when > 0 && now > 0)
		*age = floor(now) - floor(when); /* whole seconds, as "@time" keeps them */
	if (boot > 0 && counter_set_get(prev, STATEFILE_BOOT, &b) &&
	    fabs((double)b - boot) > STATEFILE_BOOT_SLACK_S)
		return BASE_OTHER_BOOT;
	/* a reading from before this boot (an older file without "@boot") is of another boot */
	if (boot > 0 && when > 0 && when < boot - STATEFILE_BOOT_SLACK_S)
		return BASE_OTHER_BOOT;
	if (*age > STATEFILE_MAX_AGE_S || (when > 0 && now > 0 && *age < -STATEFILE_BOOT_SLACK_S))
		return BASE_STALE;
	if (*age < 0 && when > 0 && now > 0)
		*age = 0; /* a second or so of clock adjustment */
	return BASE_OK;
}

/* "45 s", "5 min", "2.5 h", "3 days": how long, rounded as a person says it. */
void statefile_span(struct strbuf *out, double secs)
{
	if (secs < 120)
		strbuf_addf(out, "%.0f s", secs);
	else if (secs < 2 * 3600)
		strbuf_addf(out, "%.0f min", secs / 60);
	else if (secs < 72 * 3600)
		strbuf_addf(out, "%.3g h", secs / 3600);
	else
		strbuf_addf(out, "%.0f days", secs / 86400);
}

void statefile_base_describe(enum statefile_base b, double age, struct strbuf *out)
{
	switch (b) {
	case BASE_FIRST:
		strbuf_addstr(out, "first reading; the next run compares");
		break;
	case BASE_OTHER_BOOT:
		strbuf_addstr(out, "new baseline: the last reading is from another boot");
		break;
	case BASE_STALE:
		if (age < 0) {
			strbuf_addstr(out, "new baseline: the last reading is dated after now "
					   "(the clock moved back)");
		} else {
			strbuf_addstr(out, "new baseline: the last reading is ");
			statefile_span(out, age);
			strbuf_addstr(out, " old");
		}
		break;
	case BASE_OK:
		break;
	}
}

double rate_per_hour(uint64_t delta, double secs)
{
	return secs > 0 ? (double)delta * 3600.0 / secs : -1;
}

/* 48000 -> "48,000"; under 100 with up to 3 significant digits ("1.5", "36") */
static void add_rate(struct strbuf *out, double v)
{
	if (v < 100) {
		strbuf_addf(out, "%.3g", v);
		return;
	}
	char digits[32];
	snprintf(digits, sizeof(digits), "%.0f", v);
	size_t n = strlen(digits);
	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			strbuf_addch(out, ',');
		strbuf_addch(out, digits[i]);
	}
}

void rate_format(struct strbuf *out, uint64_t delta, double secs)
{
	strbuf_addf(out, "+%llu ", (unsigned long long)delta);
	if (secs < 0) {
		strbuf_addstr(out, "since the last run (its time unknown)");
		return;
	}
	if (secs < 1) {
		strbuf_addstr(out, "in under a second"); /* no rate worth saying */
		return;
	}
	strbuf_addstr(out, "in ");
	statefile_span(out, secs);
	strbuf_addstr(out, " (");
	add_rate(out, rate_per_hour(delta, secs));
	strbuf_addstr(out, "/h)");
}

bool rate_alarms(uint64_t delta, double secs, double per_hour, uint64_t min_rise)
{
	if (!delta || delta < min_rise)
		return false;
	if (secs < 0)
		return (double)delta >= per_hour;
	double span = secs > STATEFILE_BASELINE_S ? secs : STATEFILE_BASELINE_S;
	return (double)delta * 3600.0 >= per_hour * span;
}

bool statefile_parse_btime(const char *stat_text, double *boot)
{
	const char *l = strncmp(stat_text, "btime ", 6) ? strstr(stat_text, "\nbtime ") : stat_text - 1;
	if (!l)
		return false;
	l += 7;
	size_t n = strspn(l, "0123456789");
	char num[24];
	uint64_t v;
	if (!n || n >= sizeof(num) || (l[n] && l[n] != '\n'))
		return false;
	memcpy(num, l, n);
	num[n] = '\0';
	if (!parse_u64(num, &v) || !v)
		return false;
	*boot = (double)v;
	return true;
}
