/*
 * osops.h: the operating-system calls that code which waits, schedules or supervises makes, in
 * one replaceable table (SQLite's syscall table is the model), so tests run virtual time and
 * inject faults: a fork that fails with EAGAIN, a clock that jumps past a deadline, a write that
 * fails as on a full disk, a kill that is ignored.
 *
 * os_real_ops is the default instance; every entry is the plain system call (or vigil's own
 * wrapper of one). A table may be partly filled: a NULL entry means "the real one" for the code
 * that takes it through os_ops_or_real(). The agent's table (src/agent/agent.h) is this one.
 *
 * Ownership: tables are borrowed and must outlive their users; ctx is passed through untouched.
 */
#ifndef VIGIL_OSOPS_H
#define VIGIL_OSOPS_H

#include "strbuf.h"

#include <sys/types.h>

struct os_ops {
	double (*wall)(void *ctx);                /* seconds since the epoch */
	uint64_t (*mono_ms)(void *ctx);           /* monotonic milliseconds */
	bool (*sleep_ms)(void *ctx, uint64_t ms); /* false: stop now (a stop was asked for) */
	uint32_t (*random)(void *ctx);
	double (*cpu_seconds)(void *ctx);         /* this process and its reaped children */
	int (*write_file)(void *ctx, const char *path, const void *data, size_t len,
			  struct strbuf *err);    /* atomic replace; 0 or -1 with *err */
	/* Process control, as the system calls: spawn is fork() (-1 with errno when it fails),
	 * kill is kill(2) (a negative pid names a process group), wait is waitpid(2). */
	pid_t (*spawn)(void *ctx);
	int (*kill)(void *ctx, pid_t pid, int sig);
	pid_t (*wait)(void *ctx, pid_t pid, int *status, int options);
};

/* The real calls: clock_gettime, nanosleep (always true), getrusage, write_file(.., true, ..)
 * from fileio.h, fork, kill, waitpid. */
extern const struct os_ops os_real_ops;

/* ops, or os_real_ops when ops is NULL. */
const struct os_ops *os_ops_or_real(const struct os_ops *ops);

/* Each entry of ops, or the real one where ops has NULL (a partly filled fake). */
double os_wall(const struct os_ops *ops, void *ctx);
uint64_t os_mono_ms(const struct os_ops *ops, void *ctx);
bool os_sleep_ms(const struct os_ops *ops, void *ctx, uint64_t ms);
uint32_t os_random(const struct os_ops *ops, void *ctx);
double os_cpu_seconds(const struct os_ops *ops, void *ctx);
pid_t os_spawn(const struct os_ops *ops, void *ctx);
int os_kill(const struct os_ops *ops, void *ctx, pid_t pid, int sig);
pid_t os_wait(const struct os_ops *ops, void *ctx, pid_t pid, int *status, int options);
int os_write_file(const struct os_ops *ops, void *ctx, const char *path, const void *data,
		  size_t len, struct strbuf *err);

#endif
