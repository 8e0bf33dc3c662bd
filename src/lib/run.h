/*
 * run.h: child processes, the only way vigil starts one (git's run-command, reduced).
 *
 * No shell: a child runs either an argv (execvp) or a function in a forked copy of vigil. Every
 * child gets its own process group and a deadline; on expiry the whole group gets SIGKILL, so a
 * hung helper and its own children die together. Output is captured up to a cap per stream.
 *
 * Three levels, for three kinds of caller:
 *   - child_run(): start, wait, finish; the simple case.
 *   - child_start() / child_pollfds() + poll() + child_handle() / child_finish(): one child's
 *     steps, so a caller that watches several children (a supervisor, run_group.h) multiplexes
 *     them in its own poll loop; child_poll() is that loop for one child.
 *   - run_group.h: N children, a concurrency limit, a deadline each, one poll loop, no threads.
 *
 * Process calls (fork, kill, waitpid) and the clock go through c->ops (osops.h), so a test makes
 * a fork fail or a clock jump past a deadline.
 *
 * Ownership: the caller owns struct child; child_release() frees the captured output. A started
 * child must be finished (child_finish(), which child_run() calls) before child_release().
 */
#ifndef VIGIL_RUN_H
#define VIGIL_RUN_H

#include "strbuf.h"
#include "osops.h"

#include <poll.h>
#include <sys/types.h>

/* At most this many pollfds per child: stdin, stdout, stderr, the result pipe, the pidfd. */
#define CHILD_POLLFDS 5

struct child {
	/* input */
	const char *const *argv;       /* program and arguments, or NULL when fn is set */
	int (*fn)(void *arg, int out_fd); /* forked function; its return value is the exit code */
	void *fn_arg;
	const char *const *env_add;    /* extra "NAME=VALUE" entries, NULL-terminated (optional) */
	const char *dir;               /* working directory (optional) */
	const char *stdin_data;        /* written to stdin, then closed (optional) */
	size_t stdin_len;
	unsigned timeout_ms;           /* 0: no deadline; counted from child_start() */
	uint64_t deadline_ms;          /* absolute, on the ops' monotonic clock; 0: none. The
					* earlier of this and timeout_ms fires. */
	const char *timeout_name;      /* the bound for messages ("--timeout 1", "kernel.timeout") */
	size_t out_cap;                /* per stream; 0 means 1 MiB */
	bool merge_stderr;             /* stderr into out */
	/* Streaming instead of capture: when set, what the child writes on stdout (stream 1) and
	 * stderr (stream 2) is handed to on_output as it is read, and out/err stay empty (a
	 * supervisor reads a training step's output for hours). */
	void (*on_output)(void *arg, int stream, const char *data, size_t len);
	void *on_output_arg;
	/* fn only: fn's out_fd is a pipe of its own, captured in result (up to result_cap, 0: 8
	 * MiB); whatever the function or a library it calls prints on fds 1 and 2 is captured in
	 * out and err (up to out_cap), never mixed into the result. */
	bool result_pipe;
	size_t result_cap;
	const struct os_ops *ops;      /* NULL: os_real_ops */
	void *ops_ctx;

	/* output */
	struct strbuf out, err, result;
	int exit_code;                 /* valid when exited */
	int term_signal;               /* valid when signaled */
	bool exited, signaled, timed_out;
	uint64_t duration_ms;
	unsigned timeout_fired_ms;     /* when timed_out: the bound that fired, in ms */
	char hung[160];                /* when timed_out: what the child was doing, if known */

	/* state between child_start() and child_finish() */
	pid_t pid;
	int fd_in, fd_out, fd_err, fd_res, fd_pid;
	size_t in_off;
	uint64_t started, deadline;    /* deadline: the effective one, 0 none */
	int status;
	bool running, done, reaped, status_lost;
};

void child_init(struct child *c);
void child_release(struct child *c);

/* Start the child. 0, or -1 when it could not be started (*err says why: a pipe, the fork, the
 * exec, the working directory); then there is nothing to finish. */
int child_start(struct child *c, struct strbuf *err);
/* Fill pfd (room for CHILD_POLLFDS) with what to wait for; returns how many. */
size_t child_pollfds(const struct child *c, struct pollfd *pfd);
/* Milliseconds a poll may sleep before this child needs attention (its deadline), -1: no limit. */
int child_wait_ms(const struct child *c);
/* After poll(): move the data of the ready fds (entries of other children are ignored), reap
 * the child if it exited, kill its group if its deadline passed. true when the child is done. */
bool child_handle(struct child *c, const struct pollfd *pfd, size_t n);
/* One child's poll loop step: wait at most wait_ms (-1: until something happens). 1 when the
 * child is done, 0 when not yet. */
int child_poll(struct child *c, int wait_ms);
/* Signal the child's whole process group (and the child itself). */
void child_kill(struct child *c, int sig);
/* Finish a started child: kill it and its group if it is not done, reap it (bounded: a child in
 * uninterruptible sleep is left to init), close the pipes, fill exited/signaled/exit_code. */
void child_finish(struct child *c);

/*
 * For a signal handler (async-signal-safe): SIGTERM to every running child and its group (every
 * child started by child_start() in this process and not yet reaped), a fifth of wait_ms for
 * them to end (a forked vigil child removes its temporaries), SIGKILL to the groups of those
 * left; then, for up to wait_ms,
 * kill and reap whatever children remain, their orphans included (this process becomes their
 * subreaper). A child held in uninterruptible sleep is left to die when the kernel lets go.
 * For a process about to exit: it reaps children behind their child_finish()'s back.
 */
void run_kill_all(unsigned wait_ms);
/* sig to every running child and its process group, nothing waited for or reaped: for a process
 * that goes on after a signal (vigil qualify's Ctrl-C), whose child_run() then sees each child
 * end as usual. Async-signal-safe. */
void run_signal_all(int sig);

/* Run to completion or deadline. 0 when the child ran (check exited/timed_out), -1 if it could
 * not be started (*err says why). */
int child_run(struct child *c, struct strbuf *err);
/* How the child ended: "exited with 1", "killed by signal 9 (Killed)", "timed out after 1.0 s
 * (--timeout 1); it was in uninterruptible sleep (D) in 'nfs_wait_bit_killable'". */
void child_describe(const struct child *c, struct strbuf *out);

#endif
