/*
 * supervisor.h: the loop of `vigil run` (docs/SUPERVISOR.md). It turns the world into the events of the
 * state machine (machine.h) and carries out the machine's actions:
 *
 *   world                                   event            action (done here)
 *   vigil check on every allocated node     preflight_*      preflight (fleet fan-out)
 *   srun step started / its step id         launched         launch (src/slurm/step.c)
 *   rank 0's output, $VIGIL_STEP_FILE       step, slow*, hang (detect.h)
 *   srun's "task N: Killed", srun's exit    task_exit        stop_step (TERM, grace, KILL)
 *   a node not responding, unreachable      node_lost        drain_host, replace_host
 *   a periodic check says unhealthy         host_sick        run_checks
 *   stacks of every rank (vigil stacks)     evidence_done    collect_stacks
 *   smoke runs on groups (grouptest.h)      smoke_result     group_test
 *   SIGTERM, SIGINT, SIGHUP                 cancel           journal, report
 *
 * One thread, one poll loop: the step's output (streamed, split per rank by rankout.h), the
 * periodic check (a forked child running the fleet fan-out, so a slow srun never stops the
 * loop), signals through a self-pipe, and the deadlines of detect.h. Blocking work (preflight,
 * checks after a stop, stacks, smoke runs) happens only while no step runs.
 *
 * Ownership: the options (options.h) are borrowed for the run.
 */
#ifndef VIGIL_SUPERVISOR_H
#define VIGIL_SUPERVISOR_H

#include "options.h"
#include "../lib/strbuf.h"

/* Run (or resume, from RUN_DIR's journal) the supervised run. Returns the exit code: 0 the run
 * finished, 1 it failed (too few healthy hosts, restart budget spent, cancelled), 2 it could not
 * start (*err says why). */
int supervise(const struct sup_options *o, struct strbuf *err);

#endif
