/*
 * kmsg_read.c: reading a kernel log into memory: a /dev/kmsg device record by record, or the
 * tail of a saved file, each capped so that a huge log keeps its newest part (see kmsg.h).
 */
#include "kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Keep the newest: past cap, drop the oldest half (from a line start). */
static void keep_tail(struct strbuf *out, size_t start, size_t cap, bool *truncated)
{
	if (out->len - start <= cap)
		return;
	size_t cut = start + (out->len - start) / 2;
	const char *nl = memchr(out->buf + cut, '\n', out->len - cut);
	cut = nl ? (size_t)(nl + 1 - out->buf) : out->len;
	memmove(out->buf + start, out->buf + cut, out->len - cut);
	strbuf_setlen(out, start + out->len - cut);
	*truncated = true;
}

int kmsg_read_device(const char *path, struct strbuf *out, size_t cap, bool *truncated,
		     struct strbuf *err)
{
	enum { REC_MAX = 16384 }; /* a record is at most 8 KiB; a smaller buffer gets EINVAL */
	*truncated = false;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	char *rec = xmalloc(REC_MAX);
	size_t start = out->len;
	int ret = 0;
	for (;;) {
		ssize_t n = read(fd, rec, REC_MAX);
		if (n < 0) {
			if (errno == EINTR || errno == EPIPE) /* EPIPE: records overwritten */
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			ret = error_set(err, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		strbuf_add(out, rec, (size_t)n);
		if (rec[n - 1] != '\n')
			strbuf_addch(out, '\n');
		keep_tail(out, start, cap, truncated);
	}
	free(rec);
	close(fd);
	return ret;
}

int kmsg_read_tail(const char *path, struct strbuf *out, size_t cap, bool *truncated,
		   struct strbuf *err)
{
	*truncated = false;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	struct stat st;
	size_t start = out->len;
	bool skip_partial = false;
	if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode)) {
		/* a kmsg device after all (a link to /dev/kmsg in a fixture, --kernel-log /dev/kmsg) */
		close(fd);
		return kmsg_read_device(path, out, cap, truncated, err);
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > cap) {
		if (lseek(fd, st.st_size - (off_t)cap, SEEK_SET) >= 0) {
			*truncated = true;
			skip_partial = true;
		}
	}
	int ret = 0;
	for (;;) {
		strbuf_grow(out, 65536);
		ssize_t n = read(fd, out->buf + out->len, 65536);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = error_set(err, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		out->len += (size_t)n; /* strbuf_setlen() only shortens */
		out->buf[out->len] = 0;
		keep_tail(out, start, cap, truncated);
	}
	close(fd);
	if (!ret && skip_partial) {
		const char *nl = memchr(out->buf + start, '\n', out->len - start);
		size_t cut = nl ? (size_t)(nl + 1 - out->buf) : out->len;
		memmove(out->buf + start, out->buf + cut, out->len - cut);
		strbuf_setlen(out, start + out->len - cut);
	}
	return ret;
}
