/*
 * machine_refused.c: the machine's cells for srun's refusal to create a step (machine.h's
 * SUP_EV_LAUNCH_REFUSED; docs/SUPERVISOR.md "A step srun refuses"), apart from machine.c's
 * table so that it stays one thing of a readable size.
 */
#include "machine_int.h"

/* srun refused to create a step: the allocation cannot hold what was asked (more tasks a node
 * than its CPUs, memory or GPUs), or the job is ending. No host did anything, and a relaunch
 * or a smoke test would be refused the same way: nothing is checked, blamed or drained; the
 * step (srun, exiting already) is stopped and the run ends launch_refused. */
static void note_refused(struct sup_machine *m, const struct sup_event *e, struct sup_actions *a)
{
	machine_record_event(m, a, "launch_refused", NULL, e->text);
	if (!m->refused_text)
		m->refused_text = xstrdup(e->text ? e->text : "srun refused to create the step");
}

enum sup_state machine_launch_refused(struct sup_machine *m, const struct sup_event *e,
				      struct sup_actions *a)
{
	note_refused(m, e, a);
	m->fault = SUP_FAULT_LAUNCH_REFUSED;
	machine_act(a, SUP_ACT_STOP_STEP);
	return SUP_STOPPING;
}

enum sup_state machine_refused_meanwhile(struct sup_machine *m, const struct sup_event *e,
					 struct sup_actions *a)
{
	note_refused(m, e, a); /* read while stopping for something else: the stop ends the run */
	return m->state;
}

enum sup_state machine_refused_smoke(struct sup_machine *m, const struct sup_event *e,
				     struct sup_actions *a)
{
	/* a smoke or determinism test's step refused: its hosts' result is unknown, and the
	 * attempt's step would be refused as well */
	note_refused(m, e, a);
	return machine_finish(m, a, SUP_FAILED, "launch_refused", m->refused_text);
}
