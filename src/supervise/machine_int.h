/*
 * machine_int.h: what machine.c (the table and its cells) and machine_life.c (start, resume,
 * names) share. Not for outside src/supervise.
 */
#ifndef VIGIL_MACHINE_INT_H
#define VIGIL_MACHINE_INT_H

#include "machine.h"

/* A new action of kind at the end of a (zeroed). */
struct sup_action *machine_act(struct sup_actions *a, enum sup_action_kind kind);
/* A copy of s, or NULL for NULL. */
char *machine_dup_or_null(const char *s);
/* A journal action of that record kind (and name) for the current attempt. */
struct sup_action *machine_record(struct sup_machine *m, struct sup_actions *a, enum journal_kind kind, const char *name);
/* A journal event named name (crash, hang, lost...) about host, with text. */
void machine_record_event(struct sup_machine *m, struct sup_actions *a, const char *name, const char *host, const char *text);
/* The host named name, or NULL. */
struct sup_host *machine_find_host(struct sup_machine *m, const char *name);
/* The host named name; added with that role if it is new. */
struct sup_host *machine_add_host(struct sup_machine *m, const char *name, enum sup_role role);

/* The run ends: run_ended journaled, the report with outcome and why; returns to. */
enum sup_state machine_finish(struct sup_machine *m, struct sup_actions *a, enum sup_state to,
			      const char *outcome, const char *why);
/* The cells of srun's refusal (machine_refused.c): in launching, stopping, group testing. */
enum sup_state machine_launch_refused(struct sup_machine *m, const struct sup_event *e,
				      struct sup_actions *a);
enum sup_state machine_refused_meanwhile(struct sup_machine *m, const struct sup_event *e,
					 struct sup_actions *a);
enum sup_state machine_refused_smoke(struct sup_machine *m, const struct sup_event *e,
				     struct sup_actions *a);

#endif
