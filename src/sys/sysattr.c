/* sysattr.c: sysfs and procfs values read strictly, saying why when they cannot be (sysattr.h). */
#include "sysattr.h"
#include "fsroot.h"

static int refuse(struct strbuf *err, const char *path, const char *why)
{
	return error_set(err, "'%s' %s", path, why);
}

/* The text held no NUL byte: read() put len bytes there and strlen must see them all. */
static bool has_nul(const struct strbuf *sb)
{
	return strlen(sb->buf) != sb->len;
}

int sysattr_read(const struct fsroot *root, const char *path, struct strbuf *out,
		 struct strbuf *err)
{
	strbuf_reset(out);
	int r = fsroot_read(root, path, out, 4096, err);
	if (r == READ_MISSING) {
		refuse(err, path, "is missing");
		return READ_MISSING;
	}
	if (r < 0)
		return -1;
	if (r == READ_TRUNCATED)
		return refuse(err, path, "is longer than 4096 bytes: not an attribute");
	if (has_nul(out))
		return refuse(err, path, "holds NUL bytes");
	strbuf_trim(out);
	if (!out->len)
		return refuse(err, path, "is empty");
	return READ_OK;
}

int sysattr_read_u64(const struct fsroot *root, const char *path, uint64_t *out, struct strbuf *err)
{
	struct strbuf v = STRBUF_INIT, q = STRBUF_INIT;
	int r = sysattr_read(root, path, &v, err);
	if (r == READ_OK && !parse_u64(v.buf, out)) {
		strbuf_add_excerpt(&q, v.buf, SYSATTR_EXCERPT);
		r = error_set(err, "'%s' holds '%s', not a number", path, q.buf);
	}
	strbuf_release(&v);
	strbuf_release(&q);
	return r;
}

int sysattr_read_file(const struct fsroot *root, const char *path, struct strbuf *out, size_t cap,
		      struct strbuf *err)
{
	strbuf_reset(out);
	int r = fsroot_read(root, path, out, cap, err);
	if (r == READ_MISSING) {
		refuse(err, path, "is missing");
		return READ_MISSING;
	}
	if (r < 0)
		return -1;
	if (r == READ_TRUNCATED)
		return error_set(err, "'%s' is longer than %zu bytes", path, cap);
	if (has_nul(out))
		return refuse(err, path, "holds NUL bytes");
	return READ_OK;
}

int sysattr_dir_exists(const struct fsroot *root, const char *path, struct strbuf *err)
{
	struct strlist names = STRLIST_INIT;
	int r = fsroot_list(root, path, &names, err);
	strlist_release(&names);
	return r == 0 ? 1 : r == READ_MISSING ? 0 : -1;
}
