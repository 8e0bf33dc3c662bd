/*
 * hanglogs_int.h: what the three parts of 'vigil diagnose hang' from logs share (line reading
 * in hanglogs.c, the verdict in hanglogs_judge.c, the output in hanglogs_out.c). Not for use
 * outside src/diagnose/hanglogs*.c.
 */
#ifndef VIGIL_DIAGNOSE_HANGLOGS_INT_H
#define VIGIL_DIAGNOSE_HANGLOGS_INT_H

#include "hanglogs.h"

/* a before b: by time when both have one of the same base, else wall before glog before none,
 * else by order of reading (ao, bo) */
bool hlog_time_before(const struct hlog_time *a, uint64_t ao, const struct hlog_time *b,
		      uint64_t bo);
/* The group named name ("" unnamed), made when new; SIZE_MAX past HLOG_GROUPS_MAX (counted). */
size_t hlog_group_for(struct hlog *h, const char *name);

#endif
