/* helper.c: find, run and read vigil's CUDA helpers (see helper.h). */
#include "helper.h"

#include <limits.h>
#include <unistd.h>

#ifndef VIGIL_LIBDIR
#define VIGIL_LIBDIR "/usr/local/lib"
#endif

static bool executable(const char *p)
{
	return access(p, X_OK) == 0;
}

static bool readable(const char *p)
{
	return access(p, R_OK) == 0;
}

static int find_in(const char *name, bool (*ok)(const char *), struct strbuf *path,
		   struct strbuf *err);

int helper_find(const char *name, struct strbuf *path, struct strbuf *err)
{
	return find_in(name, executable, path, err);
}

int helper_find_file(const char *name, struct strbuf *path, struct strbuf *err)
{
	return find_in(name, readable, path, err);
}

static int find_in(const char *name, bool (*ok)(const char *), struct strbuf *path,
		   struct strbuf *err)
{
	struct strbuf looked = STRBUF_INIT;
	const char *dir = getenv("VIGIL_CUDA_HELPER_DIR");
	int ret = -1;
	if (dir && *dir) {
		strbuf_reset(path);
		strbuf_addf(path, "%s/%s", dir, name);
		if (ok(path->buf))
			return 0;
		error_set(err, "no '%s' in VIGIL_CUDA_HELPER_DIR ('%s')", name, dir);
		return -1;
	}
	char self[PATH_MAX];
	if (exe_dir(self, sizeof(self))) {
		strbuf_reset(path);
		strbuf_addf(path, "%s/%s", self, name);
		if (ok(path->buf))
			goto found;
		strbuf_addf(&looked, "'%s', ", self);
	}
	strbuf_reset(path);
	strbuf_addf(path, "%s/vigil/%s", VIGIL_LIBDIR, name);
	if (ok(path->buf))
		goto found;
	strbuf_addf(&looked, "'%s/vigil'", VIGIL_LIBDIR);
	error_set(err, "no '%s' next to vigil or installed (looked in %s)", name, looked.buf);
	goto out;
found:
	ret = 0;
out:
	strbuf_release(&looked);
	return ret;
}

void helper_out_init(struct helper_out *out)
{
	memset(out, 0, sizeof(*out));
	child_init(&out->c);
}

void helper_out_release(struct helper_out *out)
{
	for (size_t i = 0; i < out->nr; i++)
		json_free(out->lines[i]);
	free(out->lines);
	free(out->first_bad);
	child_release(&out->c);
	memset(out, 0, sizeof(*out));
}

void helper_parse_lines(struct helper_out *out, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *s = p;
		while (s < le && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		size_t n = (size_t)(le - s);
		while (n && (s[n - 1] == '\r' || s[n - 1] == ' '))
			n--;
		if (n) {
			struct json_value *v = json_parse(s, n, NULL);
			if (v && v->type == JSON_OBJECT) {
				ALLOC_GROW(out->lines, out->nr + 1, out->alloc);
				out->lines[out->nr++] = v;
			} else {
				json_free(v);
				if (!out->bad_lines++)
					out->first_bad = xstrndup(s, n < 200 ? n : 200);
			}
		}
		p = nl ? nl + 1 : end;
	}
}

int helper_run(const char *path, const char *const *args, unsigned timeout_ms, int progress_fd,
	       struct helper_out *out, struct strbuf *err)
{
	const char *argv[72];
	char fdbuf[16];
	size_t n = 0;
	argv[n++] = path;
	for (size_t i = 0; args && args[i] && n < ARRAY_SIZE(argv) - 3; i++)
		argv[n++] = args[i];
	if (progress_fd >= 0) {
		snprintf(fdbuf, sizeof(fdbuf), "%d", progress_fd);
		argv[n++] = "--progress-fd";
		argv[n++] = fdbuf;
	}
	argv[n] = NULL;
	out->c.argv = argv;
	out->c.timeout_ms = timeout_ms;
	out->c.out_cap = 64u << 20;
	if (child_run(&out->c, err) < 0)
		return -1;
	out->c.argv = NULL; /* argv was on this stack */
	helper_parse_lines(out, out->c.out.buf, out->c.out.len);
	return 0;
}

void helper_describe_end(const struct child *c, struct strbuf *out)
{
	if (c->timed_out)
		strbuf_addf(out, "did not finish within its deadline (%u s)", c->timeout_ms / 1000);
	else
		child_describe(c, out);
	/* the last non-empty line of stderr says more */
	const char *e = c->err.buf;
	size_t len = c->err.len;
	while (len && (e[len - 1] == '\n' || e[len - 1] == ' '))
		len--;
	if (len) {
		size_t start = len;
		while (start && e[start - 1] != '\n')
			start--;
		size_t l = len - start;
		strbuf_addf(out, ": %.*s", (int)(l > 160 ? 160 : l), e + start);
	}
}

const struct json_value *helper_first(const struct helper_out *out, const char *type)
{
	for (size_t i = 0; i < out->nr; i++) {
		const char *t = json_get_string(out->lines[i], "type");
		if (t && !strcmp(t, type))
			return out->lines[i];
	}
	return NULL;
}
