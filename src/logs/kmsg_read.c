/*
 * kmsg_read.c: reading a kernel log into the parser: a /dev/kmsg device record by record, or a
 * saved file chunk by chunk, whole, in bounded memory (see kmsg.h). Everything reads from a
 * descriptor (kmsg_read_fd()), so a caller that opened the log inside a root (fsroot_open())
 * reads what it opened, never a path that may have changed since. The newest part of a log is
 * not enough: a GPU that fell off the bus an hour ago may be followed by a gigabyte of noise.
 */
#include "kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

static bool past(const struct kmsg_read *rd)
{
	return rd->deadline_ms && mono_ms() >= rd->deadline_ms;
}

/* Wait until fd can be read; false at the deadline. */
static bool wait_readable(int fd, const struct kmsg_read *rd)
{
	for (;;) {
		int ms = -1;
		if (rd->deadline_ms) {
			uint64_t now = mono_ms();
			if (now >= rd->deadline_ms)
				return false;
			ms = rd->deadline_ms - now > INT_MAX ? INT_MAX : (int)(rd->deadline_ms - now);
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, ms);
		if (r > 0)
			return true;
		if (r == 0 || errno != EINTR)
			return r != 0; /* an error: let read() say what it is */
	}
}

static bool zeros(const char *p, size_t n)
{
	static const char zero[4096];
	while (n >= sizeof(zero)) {
		if (memcmp(p, zero, sizeof(zero)))
			return false;
		p += sizeof(zero);
		n -= sizeof(zero);
	}
	return !memcmp(p, zero, n);
}

/* What the caller's shape checks need: all zero so far, control bytes in the first MiB, the
 * first line. */
static void look(struct kmsg_read *rd, const char *p, size_t n)
{
	enum { SAMPLE = 1 << 20 };
	if (rd->all_zero && !zeros(p, n))
		rd->all_zero = false;
	if (!rd->done) {
		size_t k = 0;
		while (k < n && k + 1 < sizeof(rd->head) && p[k] != '\n' && p[k])
			k++;
		memcpy(rd->head, p, k);
		rd->head[k] = 0;
	}
	for (size_t i = 0; i < n && rd->sample < SAMPLE; i++, rd->sample++) {
		unsigned char c = (unsigned char)p[i];
		rd->sample_ctl += (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f;
	}
}

static void read_init(struct kmsg_read *rd)
{
	rd->device = rd->pipe = rd->complete = false;
	rd->size = rd->done = rd->sample = rd->sample_ctl = 0;
	rd->all_zero = true;
	rd->head[0] = 0;
}

/* /dev/kmsg on fd: one record per read(), until none is left. */
static int read_device(int fd, const char *name, struct kmsg_log *log, struct kmsg_read *rd,
		       struct strbuf *err)
{
	enum { REC_MAX = 16384 }; /* a record is at most 8 KiB; a smaller buffer gets EINVAL */
	rd->device = true;
	char *rec = xmalloc(REC_MAX + 1);
	int ret = 0;
	for (unsigned nr = 1;; nr++) {
		ssize_t n = read(fd, rec, REC_MAX);
		if (n < 0) {
			if (errno == EINTR || errno == EPIPE) /* EPIPE: records overwritten */
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				rd->complete = true;
				break;
			}
			ret = error_set(err, "cannot read '%s': %s", name, strerror(errno));
			break;
		}
		if (n == 0) {
			rd->complete = true;
			break;
		}
		if (rec[n - 1] != '\n')
			rec[n++] = '\n';
		look(rd, rec, (size_t)n);
		rd->done += (uint64_t)n;
		kmsg_feed(log, rec, (size_t)n);
		if (nr % 256 == 0 && past(rd))
			break;
	}
	free(rec);
	return ret;
}

/* A saved log (regular file, FIFO) on fd, chunk by chunk. */
static int read_stream(int fd, const char *name, const struct stat *st, struct kmsg_log *log,
		       struct kmsg_read *rd, struct strbuf *err)
{
	if (S_ISREG(st->st_mode) && st->st_size > 0)
		rd->size = (uint64_t)st->st_size;
	size_t chunk = rd->chunk ? rd->chunk : KMSG_READ_CHUNK;
	char *buf = xmalloc(chunk);
	int ret = 0;
	for (;;) {
		ssize_t n = read(fd, buf, chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				/* a FIFO whose writer is slow: wait, but not past the deadline */
				if (wait_readable(fd, rd))
					continue;
				break;
			}
			ret = error_set(err, "cannot read '%s': %s", name, strerror(errno));
			break;
		}
		if (n == 0) {
			rd->complete = true;
			break;
		}
		look(rd, buf, (size_t)n);
		rd->done += (uint64_t)n;
		kmsg_feed(log, buf, (size_t)n);
		if (past(rd))
			break;
	}
	free(buf);
	return ret;
}

int kmsg_read_fd(int fd, const char *name, struct kmsg_log *log, struct kmsg_read *rd,
		 struct strbuf *err)
{
	struct stat st;
	read_init(rd);
	if (fstat(fd, &st) < 0)
		return error_set(err, "cannot read '%s': %s", name, strerror(errno));
	/* A writer that stops writing must not hold a read past the deadline (wait_readable()),
	 * and the device is read until EAGAIN: both want a non-blocking descriptor. */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return error_set(err, "cannot read '%s': %s", name, strerror(errno));
	rd->pipe = S_ISFIFO(st.st_mode);
	/* a kmsg device after all (a device node in a fixture, --kernel-log /dev/kmsg) */
	if (S_ISCHR(st.st_mode))
		return read_device(fd, name, log, rd, err);
	return read_stream(fd, name, &st, log, rd, err);
}

/* O_NONBLOCK: opening a FIFO without a writer must not hang (it reads as empty). */
#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

int kmsg_read_device(const char *path, struct kmsg_log *log, struct kmsg_read *rd,
		     struct strbuf *err)
{
	read_init(rd);
	rd->device = true;
	int fd = open(path, OPEN_FLAGS);
	if (fd < 0)
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	int ret = read_device(fd, path, log, rd, err);
	close(fd);
	return ret;
}

int kmsg_read_file(const char *path, struct kmsg_log *log, struct kmsg_read *rd,
		   struct strbuf *err)
{
	read_init(rd);
	int fd = open(path, OPEN_FLAGS);
	if (fd < 0)
		return error_set(err, "cannot read '%s': %s", path, strerror(errno));
	int ret = kmsg_read_fd(fd, path, log, rd, err);
	close(fd);
	return ret;
}
