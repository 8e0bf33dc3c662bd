/* statefile.c: counter readings kept between runs (see statefile.h). */
#include "statefile.h"
#include "fileio.h"

#include <errno.h>
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
