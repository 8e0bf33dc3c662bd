/* fileio.c: bounded file reads (see fileio.h; the writes are in fileio_write.c). */
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

int read_file_stream(const char *path, unsigned flags, size_t max,
		     bool (*fn)(void *arg, const char *data, size_t len), void *arg,
		     struct strbuf *err)
{
	char buf[65536];
	struct stat st;
	size_t got = 0;
	int rc = READ_OK;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
				    (flags & READ_STREAM_NOFOLLOW ? O_NOFOLLOW : 0));
	if (fd < 0) {
		if (errno == ENOENT && (flags & READ_STREAM_MISSING_OK))
			return READ_MISSING;
		if (errno == ELOOP && (flags & READ_STREAM_NOFOLLOW))
			return error_set(err, "cannot read '%s': it is a symbolic link", path);
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0) {
		rc = error_set(err, "cannot read '%s': %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		/* a FIFO or a device would block or never end */
		rc = error_set(err, "cannot read '%s': it is %s, not a regular file", path,
			       file_kind(st.st_mode));
		close(fd);
		return rc;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = error_set(err, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (max && got > max) {
			/* the bound in a unit that says it: 4096 is "4 KiB", never "0 MiB" */
			if (!(max & ((1u << 20) - 1)))
				rc = error_set(err, "cannot read '%s': it is longer than %zu MiB",
					       path, max >> 20);
			else if (!(max & 1023))
				rc = error_set(err, "cannot read '%s': it is longer than %zu KiB",
					       path, max >> 10);
			else
				rc = error_set(err, "cannot read '%s': it is longer than %zu bytes",
					       path, max);
			break;
		}
		if (!fn(arg, buf, (size_t)n))
			break;
	}
	close(fd);
	return rc;
}
