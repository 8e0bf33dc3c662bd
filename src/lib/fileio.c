/* fileio.c: bounded file reads and whole-file writes (see fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int read_file_bounded(const char *path, struct strbuf *sb, size_t cap, struct strbuf *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return READ_MISSING;
		return error_set(err, "cannot open '%s': %s", path, strerror(errno));
	}
	return read_fd_bounded(fd, path, sb, cap, err);
}

int read_fd_bounded(int fd, const char *path, struct strbuf *sb, size_t cap, struct strbuf *err)
{
	/* sysfs and regular files ignore O_NONBLOCK; a FIFO would spin: clear it after open. */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	size_t start = sb->len;
	int ret = READ_OK;
	for (;;) {
		size_t have = sb->len - start;
		if (have >= cap) {
			char one;
			ssize_t extra = read(fd, &one, 1);
			if (extra > 0)
				ret = READ_TRUNCATED;
			break;
		}
		size_t want = cap - have < 65536 ? cap - have : 65536;
		strbuf_grow(sb, want);
		ssize_t n = read(fd, sb->buf + sb->len, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = error_set(err, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		sb->len += (size_t)n;
		sb->buf[sb->len] = '\0';
	}
	if (!sb->alloc)
		strbuf_grow(sb, 0);
	close(fd);
	return ret;
}

int write_file(const char *path, const void *data, size_t len, bool atomic, struct strbuf *err)
{
	struct strbuf tmp = STRBUF_INIT;
	const char *target = path;
	int ret = -1;
	if (atomic) {
		strbuf_addf(&tmp, "%s.tmp.%ld", path, (long)getpid());
		target = tmp.buf;
	}
	int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		error_set(err, "cannot create '%s': %s", target, strerror(errno));
		goto out;
	}
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			error_set(err, "cannot write '%s': %s", target, strerror(errno));
			close(fd);
			goto out;
		}
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) < 0) {
		error_set(err, "cannot write '%s': %s", target, strerror(errno));
		goto out;
	}
	if (atomic && rename(target, path) < 0) {
		error_set(err, "cannot rename '%s' to '%s': %s", target, path, strerror(errno));
		unlink(target);
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&tmp);
	return ret;
}

int mkdir_p(const char *path, unsigned mode, struct strbuf *err)
{
	char *p = xstrdup(path);
	int ret = 0;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, mode) < 0 && errno != EEXIST) {
				ret = error_set(err, "cannot create directory '%s': %s", p,
						strerror(errno));
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return ret;
}
