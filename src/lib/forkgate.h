/*
 * forkgate.h: fork() and the agent's threads, made safe for the children that run on without
 * exec (the gpu worker, every forked check).
 *
 * fork() copies only the thread that calls it. A lock that another thread held at that moment
 * stays held forever in the child, and the child's next call that needs it never returns. glibc
 * takes its own malloc and stdio locks around fork, but not every allocator does: GCC 12's
 * AddressSanitizer allocator is not locked around fork, and the agent's Unix-socket thread,
 * starting or answering a client while the agent forked its gpu worker, left the worker stuck in
 * free() until the cycle's bound (the intermittent "gpu: timed out" of the agent's tests).
 *
 * The gate: a thread that allocates holds it, shared, while it works (from poll's return to the
 * next poll); fork() takes it exclusively first (pthread_atfork), so no such thread is inside an
 * allocation when the copy is made. The child starts with the gate open. A thread must never
 * fork or wait for the forking thread while it holds the gate.
 *
 * Threads the gate does not cover: libmicrohttpd's internal thread allocates outside the agent's
 * handler (docs/SECURITY.md names it).
 */
#ifndef VIGIL_FORKGATE_H
#define VIGIL_FORKGATE_H

/* Install the fork handlers (once; any thread may call it). */
void forkgate_setup(void);
/* Hold the gate while working (shared among threads); a fork waits until every holder left. */
void forkgate_enter(void);
void forkgate_leave(void);
/* How many forks waited for a holder (tests). */
unsigned long forkgate_waits(void);

#endif
