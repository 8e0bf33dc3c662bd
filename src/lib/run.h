/*
 * run.h: child processes, the only way vigil starts one (git's run-command, reduced).
 *
 * No shell: a child runs either an argv (execvp) or a function in a forked copy of vigil. Every
 * child gets its own process group and a deadline; on expiry the whole group gets SIGKILL, so a
 * hung helper and its own children die together. Output is captured up to a cap per stream.
 *
 * Ownership: the caller owns struct child; child_release() frees the captured output.
 */
#ifndef VIGIL_RUN_H
#define VIGIL_RUN_H

#include "strbuf.h"

struct child {
	/* input */
	const char *const *argv;       /* program and arguments, or NULL when fn is set */
	int (*fn)(void *arg, int out_fd); /* forked function; its return value is the exit code */
	void *fn_arg;
	const char *const *env_add;    /* extra "NAME=VALUE" entries, NULL-terminated (optional) */
	const char *dir;               /* working directory (optional) */
	const char *stdin_data;        /* written to stdin, then closed (optional) */
	size_t stdin_len;
	unsigned timeout_ms;           /* 0: no deadline */
	size_t out_cap;                /* per stream; 0 means 1 MiB */
	bool merge_stderr;             /* stderr into out */

	/* output */
	struct strbuf out, err;
	int exit_code;                 /* valid when exited */
	int term_signal;               /* valid when signaled */
	bool exited, signaled, timed_out;
	uint64_t duration_ms;
};

void child_init(struct child *c);
void child_release(struct child *c);
/* Run to completion or deadline. 0 when the child ran (check exited/timed_out), -1 if it could
 * not be started (*err says why). */
int child_run(struct child *c, struct strbuf *err);
/* Human description of how the child ended ("exited with 1", "timed out after 5000 ms", ...). */
void child_describe(const struct child *c, struct strbuf *out);

#endif
