/*
 * run_group.h: N children at once under a concurrency limit, each with its own deadline, in one
 * poll loop of the calling thread (no threads, no signals): the check runner's children and the
 * fleet's srun per node. Built on run.h's steps, so a child here behaves exactly as with
 * child_run(): own process group, killed whole at its deadline, output capped.
 *
 * Ownership: the group borrows its children (the caller owns and releases them) and owns only
 * its array; run_group_release() frees that.
 */
#ifndef VIGIL_RUN_GROUP_H
#define VIGIL_RUN_GROUP_H

#include "run.h"

struct run_group {
	struct child **items;
	size_t nr, alloc;
	unsigned parallel; /* at most this many running at once; 0: all */
};

void run_group_init(struct run_group *g, unsigned parallel);
void run_group_release(struct run_group *g);
/* Add a child (child_init'ed and filled in); it is started by run_group_run(), in the order
 * added, when a slot is free; its timeout_ms counts from that start. */
void run_group_add(struct run_group *g, struct child *c);
/*
 * Run every child to its end. on_done (optional) is called once per child as soon as it is
 * finished (child_finish() done: exited/signaled/timed_out and output are final), or with
 * start_error set when it could not be started (then nothing else about it is valid).
 */
void run_group_run(struct run_group *g,
		   void (*on_done)(struct child *c, const char *start_error, void *arg), void *arg);

#endif
