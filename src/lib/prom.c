/* prom.c: Prometheus text format writer and atomic textfile writes (see prom.h). */
#include "prom.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>

static void add_escaped(struct strbuf *out, const char *s, bool label)
{
	for (; *s; s++) {
		if (*s == '\\')
			strbuf_addstr(out, "\\\\");
		else if (*s == '\n')
			strbuf_addstr(out, "\\n");
		else if (*s == '"' && label)
			strbuf_addstr(out, "\\\"");
		else
			strbuf_addch(out, *s);
	}
}

void prom_family(struct strbuf *out, const char *name, const char *type, const char *help)
{
	strbuf_addf(out, "# HELP %s ", name);
	add_escaped(out, help, false);
	strbuf_addf(out, "\n# TYPE %s %s\n", name, type);
}

void prom_sample(struct strbuf *out, const char *name, const char *const *labels, double value)
{
	strbuf_addstr(out, name);
	if (labels && labels[0]) {
		strbuf_addch(out, '{');
		for (size_t i = 0; labels[i] && labels[i + 1]; i += 2) {
			if (i)
				strbuf_addch(out, ',');
			strbuf_addf(out, "%s=\"", labels[i]);
			add_escaped(out, labels[i + 1], true);
			strbuf_addch(out, '"');
		}
		strbuf_addch(out, '}');
	}
	if (isnan(value))
		strbuf_addstr(out, " NaN\n");
	else if (value == floor(value) && fabs(value) < 1e15)
		strbuf_addf(out, " %.0f\n", value);
	else
		strbuf_addf(out, " %.9g\n", value);
}

int prom_write_atomic(const char *path, const struct strbuf *content, struct strbuf *err)
{
	struct strbuf tmp = STRBUF_INIT;
	int ret = -1, fd;
	strbuf_addf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		error_set(err, "cannot create '%s': %s", tmp.buf, strerror(errno));
		goto out;
	}
	size_t off = 0;
	while (off < content->len) {
		ssize_t n = write(fd, content->buf + off, content->len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			error_set(err, "cannot write '%s': %s", tmp.buf, strerror(errno));
			close(fd);
			unlink(tmp.buf);
			goto out;
		}
		off += (size_t)n;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		error_set(err, "cannot write '%s': %s", tmp.buf, strerror(errno));
		unlink(tmp.buf);
		goto out;
	}
	if (rename(tmp.buf, path) < 0) {
		error_set(err, "cannot rename '%s' to '%s': %s", tmp.buf, path, strerror(errno));
		unlink(tmp.buf);
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&tmp);
	return ret;
}
