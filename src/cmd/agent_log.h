/*
 * agent_log.h: the agent's lines for the journal, apart from what they say.
 *
 * Under systemd the agent's stderr is a stream to journald, which gives every line the unit's
 * default priority unless it starts with sd-daemon's "<N>" prefix; so an Xid 79 and "cycle
 * done" were filed alike. When stderr is the journal (JOURNAL_STREAM names stderr's
 * device:inode, systemd.exec(5)), each entry goes as one datagram of the journal's native
 * protocol (https://systemd.io/JOURNAL_NATIVE_PROTOCOL/) with PRIORITY and the fields
 * VIGIL_CHECK, VIGIL_CODE and VIGIL_DEVICE ('journalctl VIGIL_CODE=xid'); where that socket
 * does not answer, the line goes to stderr with the "<N>" prefix. Anywhere else (a terminal, a
 * file, a pipe) the line is plain, as before.
 *
 * The socket is /run/systemd/journal/socket; VIGIL_JOURNAL_SOCKET names another, for tests.
 * It is an environment variable, never a configuration key, so that a --root fixture's
 * vigil.conf cannot send the agent's lines elsewhere (docs/SECURITY.md, CONFIG_HOST_ONLY).
 */
#ifndef VIGIL_CMD_AGENT_LOG_H
#define VIGIL_CMD_AGENT_LOG_H

#include "../lib/strbuf.h"

/* syslog(3)'s levels, the ones the agent uses */
enum agent_log_prio { ALOG_ERR = 3, ALOG_WARNING = 4, ALOG_INFO = 6 };

/* What a line is about, for the journal's fields; any may be NULL or empty (not sent). */
struct agent_log_fields {
	const char *check, *code, *device;
};

/* Look at JOURNAL_STREAM and stderr once, at start. */
void agent_log_setup(void);
void agent_log_close(void);
/* One line, "vigil agent: " and the text (cleaned of control bytes), at that priority. */
void agent_logf(int prio, const struct agent_log_fields *f, const char *fmt, ...)
	PRINTF_LIKE(3, 4);

/* The native protocol's entry (KEY=VALUE lines), apart for the unit tests. */
void agent_log_entry(struct strbuf *out, int prio, const struct agent_log_fields *f,
		     const char *message);

#endif
