/* fsroot.c: rerootable reads of /sys, /proc, /dev and /etc (see fsroot.h). */
#include "fsroot.h"

#include <dirent.h>
#include <errno.h>
#include <unistd.h>

static char *root;

void fsroot_set(const char *r)
{
	free(root);
	root = NULL;
	if (r && *r && strcmp(r, "/")) {
		size_t n = strlen(r);
		while (n > 1 && r[n - 1] == '/')
			n--;
		root = xstrndup(r, n);
	}
}

const char *fsroot_get(void)
{
	return root ? root : "";
}

bool fsroot_is_host(void)
{
	return !root;
}

void fsroot_path(struct strbuf *out, const char *path)
{
	strbuf_reset(out);
	if (root)
		strbuf_addstr(out, root);
	strbuf_addstr(out, path);
}

int fsroot_read(const char *path, struct strbuf *sb, size_t cap, struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT;
	fsroot_path(&p, path);
	int r = read_file_bounded(p.buf, sb, cap, err);
	strbuf_release(&p);
	return r;
}

int fsroot_read_attr(const char *path, struct strbuf *out, struct strbuf *err)
{
	strbuf_reset(out);
	int r = fsroot_read(path, out, 4096, err);
	if (r == READ_TRUNCATED)
		r = READ_OK;
	if (r == READ_OK)
		strbuf_trim(out);
	return r;
}

int fsroot_read_u64(const char *path, uint64_t *out, struct strbuf *err)
{
	struct strbuf v = STRBUF_INIT;
	int r = fsroot_read_attr(path, &v, err);
	if (r == READ_OK && !parse_u64(v.buf, out))
		r = error_set(err, "'%s' holds '%.40s', not a number", path, v.buf);
	strbuf_release(&v);
	return r;
}

bool fsroot_exists(const char *path)
{
	struct strbuf p = STRBUF_INIT;
	fsroot_path(&p, path);
	bool r = access(p.buf, F_OK) == 0;
	strbuf_release(&p);
	return r;
}

int fsroot_list(const char *path, struct strlist *out, struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT;
	fsroot_path(&p, path);
	DIR *d = opendir(p.buf);
	int r = 0;
	if (!d) {
		if (errno == ENOENT || errno == ENOTDIR)
			r = READ_MISSING;
		else
			r = error_set(err, "cannot list '%s': %s", p.buf, strerror(errno));
		goto out;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		strlist_add(out, de->d_name);
	}
	closedir(d);
	strlist_sort(out);
out:
	strbuf_release(&p);
	return r;
}

int fsroot_readlink(const char *path, struct strbuf *out, bool basename)
{
	struct strbuf p = STRBUF_INIT;
	char buf[4096];
	fsroot_path(&p, path);
	ssize_t n = readlink(p.buf, buf, sizeof(buf) - 1);
	strbuf_release(&p);
	strbuf_reset(out);
	if (n < 0)
		return errno == ENOENT ? READ_MISSING : -1;
	buf[n] = '\0';
	const char *s = buf;
	if (basename) {
		const char *slash = strrchr(buf, '/');
		if (slash)
			s = slash + 1;
	}
	strbuf_addstr(out, s);
	return 0;
}

int fsroot_statvfs(const char *path, struct statvfs *st, struct strbuf *err)
{
	struct strbuf p = STRBUF_INIT;
	fsroot_path(&p, path);
	int r = 0;
	if (statvfs(p.buf, st) < 0) {
		if (errno == ENOENT)
			r = READ_MISSING;
		else
			r = error_set(err, "cannot stat '%s': %s", p.buf, strerror(errno));
	}
	strbuf_release(&p);
	return r;
}
