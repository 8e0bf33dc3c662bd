/*
 * stacks_int.h: what stacks.c (sampling, Python and native stacks, the NCCL rings, the result)
 * and stacks_find.c (finding the attempt's ranks in /proc) share. Not for outside src/supervise.
 */
#ifndef VIGIL_STACKS_INT_H
#define VIGIL_STACKS_INT_H

#include "stacks.h"

#include <sys/types.h>

struct proc_stat {
	char state;
	long ppid;
	unsigned long long utime, stime, start;
};

/* Sleep ms milliseconds (EINTR resumes). */
void stacks_sleep_ms(unsigned ms);
/* /proc/PID/stat's state and start time; 0, or -1 when the process is gone or unreadable. */
int stacks_read_stat(pid_t pid, struct proc_stat *st);
/* The ranks of the attempt on this host (stacks.h says which processes count). */
int stacks_find_ranks(struct stacks_result *r, const struct stacks_options *o, struct strbuf *err);

#endif
