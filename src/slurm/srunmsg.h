/*
 * srunmsg.h: srun's own lines about the step it was asked to create (docs/SUPERVISOR.md,
 * "A step srun refuses"). srun first asks slurmctld for the step; when the allocation cannot
 * hold it, srun says why and exits 1 before any task runs:
 *
 *   srun: error: Unable to create step for job 812: More processors requested than permitted
 *   srun: error: Unable to create job step: Memory required by task is not available (older)
 *
 * That is the allocation's answer to the request, never a host's fault. srun's retry line
 * ("srun: Job 812 step creation temporarily disabled, retrying (Requested nodes are busy)",
 * "... still disabled, retrying ...") is not a refusal: srun waits and may still get the step.
 * Formats and sources: tests/data/realworld/srun-refusal.md.
 *
 * Pure and bounded: a line is read at most to SRUN_MSG_LINE_MAX bytes; the reason handed back
 * is cleaned (strbuf_add_clean) and at most SRUN_MSG_REASON_MAX bytes of srun's text.
 */
#ifndef VIGIL_SLURM_SRUNMSG_H
#define VIGIL_SLURM_SRUNMSG_H

#include "../lib/strbuf.h"

#include <stddef.h>

#define SRUN_MSG_LINE_MAX   1024
#define SRUN_MSG_REASON_MAX 200

enum srun_msg {
	SRUN_MSG_OTHER,	  /* not about the step's creation */
	SRUN_MSG_REFUSED, /* srun could not create the step: it exits, no task ran */
	SRUN_MSG_PENDING, /* step creation is held off for now; srun retries */
};

/* What one of srun's own lines (no label, newline optional) says; srun's reason is appended to
 * *reason (may be NULL) for REFUSED and PENDING ("" when the line gives none). */
enum srun_msg srun_msg_parse(const char *line, size_t len, struct strbuf *reason);

/* What a person can do about a refusal with this reason, in words (static). */
const char *srun_refusal_action(const char *reason);

/* The whole text of a refusal for the journal and the outcome: "srun refused to create the
 * step: REASON; ACTION". */
void srun_refusal_describe(const char *reason, struct strbuf *out);

#endif
