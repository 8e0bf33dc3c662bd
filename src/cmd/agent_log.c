/* agent_log.c: the agent's lines for the journal (see agent_log.h). */
#include "agent_log.h"
#include "../lib/util.h"

#include <stddef.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* An entry past this is cut: the agent's lines are one reason long, far below a datagram's
 * limit (journald takes up to its socket's receive buffer). */
#define ENTRY_MAX 4096

static struct {
	bool journal;  /* stderr is the journal's stream */
	int fd;        /* datagram socket, -1: none (prefixed stderr instead) */
	struct sockaddr_un addr;
	socklen_t addr_len;
} lg = { false, -1, { 0 }, 0 };

/* JOURNAL_STREAM is "DEVICE:INODE" in decimal (systemd.exec(5)); it is inherited by children
 * whose stderr went elsewhere, hence the comparison with what fd 2 is now. */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;
	unsigned long long dev, ino;
	char tail;
	if (!js || sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void agent_log_setup(void)
{
	agent_log_close();
	lg.journal = stderr_is_journal();
	if (!lg.journal)
		return;
	const char *path = getenv("VIGIL_JOURNAL_SOCKET");
	if (!path || !*path)
		path = "/run/systemd/journal/socket";
	if (strlen(path) >= sizeof(lg.addr.sun_path))
		return;
	memset(&lg.addr, 0, sizeof(lg.addr));
	lg.addr.sun_family = AF_UNIX;
	memcpy(lg.addr.sun_path, path, strlen(path) + 1);
	lg.addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
	/* non-blocking: a journald that is restarting or behind costs a stderr line, never a
	 * cycle */
	lg.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

void agent_log_close(void)
{
	if (lg.fd >= 0)
		close(lg.fd);
	lg.fd = -1;
	lg.journal = false;
}

static void field(struct strbuf *out, const char *key, const char *value)
{
	if (!value || !*value)
		return;
	/* cleaned: no newline inside, so the simple KEY=VALUE form holds */
	strbuf_addf(out, "%s=", key);
	strbuf_add_clean(out, value);
	strbuf_addch(out, '\n');
}

void agent_log_entry(struct strbuf *out, int prio, const struct agent_log_fields *f,
		     const char *message)
{
	field(out, "MESSAGE", message);
	strbuf_addf(out, "PRIORITY=%d\n", prio);
	field(out, "SYSLOG_IDENTIFIER", "vigil");
	if (f) {
		field(out, "VIGIL_CHECK", f->check);
		field(out, "VIGIL_CODE", f->code);
		field(out, "VIGIL_DEVICE", f->device);
	}
	if (out->len > ENTRY_MAX) {
		/* cut at a line's end, so that every field left is whole */
		size_t at = ENTRY_MAX;
		while (at && out->buf[at - 1] != '\n')
			at--;
		strbuf_setlen(out, at);
	}
}

void agent_logf(int prio, const struct agent_log_fields *f, const char *fmt, ...)
{
	struct strbuf raw = STRBUF_INIT, msg = STRBUF_INIT, out = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&raw, fmt, ap);
	va_end(ap);
	strbuf_addstr(&msg, "vigil agent: ");
	strbuf_add_clean(&msg, raw.buf);
	if (lg.journal && lg.fd >= 0) {
		agent_log_entry(&out, prio, f, msg.buf);
		if (sendto(lg.fd, out.buf, out.len, MSG_NOSIGNAL, (struct sockaddr *)&lg.addr,
			   lg.addr_len) == (ssize_t)out.len)
			goto out;
	}
	if (lg.journal)
		fprintf(stderr, "<%d>%s\n", prio, msg.buf);
	else
		fprintf(stderr, "%s\n", msg.buf);
out:
	strbuf_release(&raw);
	strbuf_release(&msg);
	strbuf_release(&out);
}
