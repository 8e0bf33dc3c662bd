/*
 * world.h: every touch of the outside that `vigil run`'s loop makes, in one table: the seam
 * between the supervisor and the world. The clock and sleep are the OS-ops table the agent
 * uses (osops.h); beside it, the Slurm calls (the allocation's nodes, a node's state, a drain),
 * vigil check on hosts (the fleet fan-out), the attempt's step (launch, its output and end,
 * stop), the periodic watch, stacks, smoke runs and diagnosis, and where the user's lines go.
 *
 * sup_real_world() is the real one (world_real.c): srun, scontrol, poll, fork. Tests and the
 * scale benchmarks pass a fake that runs in virtual time with no process at all
 * (src/sim/world.h): a fault at any instant, two in one poll, a signal during a stop, a
 * kill -9 after any journal record, 16,384 nodes.
 *
 * The world calls back into the supervisor only through sup_world_output() (the step's output
 * as srun labels it) and sup_watch_text() (what a periodic watch finds, for a world that runs
 * it in-process); everything else comes back as return values or the wake of wait().
 *
 * Ownership: the table and its ctx are borrowed for the run.
 */
#ifndef VIGIL_SUP_WORLD_H
#define VIGIL_SUP_WORLD_H

#include "machine.h"
#include "options.h"
#include "../lib/osops.h"
#include "../lib/strbuf.h"
#include "../lib/strlist.h"
#include "../slurm/fleet.h"
#include "../slurm/step.h"

#include <signal.h>

struct sup; /* the run (sup_int.h) */

/* sup_world.smoke's answer when srun refused to create the test's step: no task ran, so the
 * test says nothing of its hosts. */
#define SUP_SMOKE_REFUSED (-2)

/* The last signal seen (SIGTERM, SIGINT, SIGHUP), set by the world (the real one's handler). */
extern volatile sig_atomic_t sup_sig_seen;

/* One host's answer to vigil check. */
struct check_row {
	char *host;
	enum fleet_verdict verdict;
	char *reason;
	unsigned findings; /* not-ok findings in its report (the preflight's preference) */
	bool no_cache;     /* asked for the agent's cached result, there was none fresh */
};

/* What woke the loop (wait). */
struct sup_wake {
	bool step_ended;         /* srun ended: every task is done */
	int code;                /* its exit code (128+N for a signal) */
	struct strbuf desc;      /* how it ended, in words ("exited with code 1") */
	bool watch_done;         /* the periodic watch ended */
	const char *watch_text;  /* its lines (sup_watch_text's form), valid until the next wait */
};

/* What a collection of evidence found (collect.h's sup_collect_evidence). */
struct sup_evidence_found {
	struct strbuf summary;
	struct strlist suspects, sick, why;
};

struct sup_world {
	const struct os_ops *os; /* wall, mono_ms, sleep_ms; NULL: the real calls */
	void *os_ctx;
	void *ctx;               /* passed to every entry below */

	/* Slurm: nodes of a hostlist (scontrol show node), one node, the drain of one. */
	int (*nodes)(void *ctx, const struct sup_options *o, const char *hostlist,
		     struct slurm_nodes *out, struct strbuf *err);
	int (*node_get)(void *ctx, const struct sup_options *o, const char *host,
			struct slurm_node *out, struct strbuf *err);
	int (*drain)(void *ctx, const struct sup_options *o, const char *host,
		     const struct slurm_decision *d, struct strbuf *err);

	/* vigil check on hosts, all at once with o->check_timeout_s each; rows in the order of
	 * hosts (xcalloc'd, sup_check_rows_release). cached: the agents' cached answers. What
	 * the round did beside its plan (one step became one srun a node) is added to *note. */
	struct check_row *(*check)(void *ctx, const struct sup_options *o,
				   const char *const *hosts, size_t n,
				   const struct slurm_nodes *alloc, bool cached, struct strbuf *note);

	/* The attempt's step. launch: 0 or -1 with *err. wait: up to ms for the step's output
	 * (given to sup_world_output as it comes), its end, the watch's end or a signal
	 * (sup_sig_seen). step_id: "JOB.STEP" once known, else NULL. stop: TERM, grace, KILL,
	 * what srun still says, then the step is gone (-1 with *err: it could not be seen gone).
	 * release: after the end wait reported. stop_id: a step left by an earlier vigil run. */
	int (*launch)(void *ctx, struct sup *s, const struct step_spec *spec, struct strbuf *err);
	void (*wait)(void *ctx, struct sup *s, int ms, struct sup_wake *wk);
	const char *(*step_id)(void *ctx, struct sup *s);
	int (*stop)(void *ctx, struct sup *s, unsigned grace_ms, struct strbuf *err);
	void (*release)(void *ctx, struct sup *s);
	int (*stop_id)(void *ctx, const struct sup_options *o, const char *id,
		       struct strbuf *err);

	/* The periodic watch (Slurm's view of the active hosts; vigil check on them when checks),
	 * run beside the loop; its end comes through wait. -1 with *err: not started. */
	int (*watch_start)(void *ctx, struct sup *s, bool checks, struct strbuf *err);
	void (*watch_stop)(void *ctx, struct sup *s);

	/*
	 * Optional (NULL, or -1: unknown, ask about every active host). The hosts that may not be
	 * plainly fine (Slurm would not say plainly allocated, vigil check would not say healthy)
	 * into *out, for the periodic watch to ask Slurm and vigil check about, with the hosts the
	 * run itself tracks (an unreachable streak, no agent), instead of every active host: a
	 * round in O(changed), not O(nodes); every other host is taken to answer as a plainly fine
	 * one does (a watch has nothing to say of it). The real world cannot know this without
	 * asking (a sick-but-running host is what the watch's check round exists to find): it has
	 * none. vigil sim's world keeps an index of its few unusual hosts (src/sim/world.h).
	 */
	int (*watch_hosts)(void *ctx, struct strlist *out);

	/* The world writes no step file (a simulated trainer): the loop does not look for one.
	 * false (the real world): opened, while absent, once a turn. */
	bool no_step_file;

	/* The run directory is private and temporary (vigil sim's, removed when the run ends):
	 * the journal is lazy (journal.h: records written 64 KiB at a time, never fsync'd), and
	 * so are the rank files (rankout.h: written 64 KiB at a time, not a line at a time).
	 * false (the real world): every record and line written at once, the journal fsync'd
	 * by its rule. */
	bool run_dir_private;

	/*
	 * One smoke run of spec, within timeout_s: its exit status (0 passed), or -1 when it did
	 * not finish by itself (not started, killed at the deadline or hung, a signal), or
	 * SUP_SMOKE_REFUSED when srun could not create its step (srunmsg.h: the allocation
	 * cannot hold it; *why is then srun's reason alone); *why says how it ended when it did
	 * not pass. quiet_s
	 * (0: none): a smoke whose ranks wrote something and then nothing more for quiet_s (the
	 * run's own hang limit) is hung: failed then, not at timeout_s.
	 */
	int (*smoke)(void *ctx, struct sup *s, const struct step_spec *spec, double timeout_s,
		     double quiet_s, struct strbuf *why);

	/* Stacks of every rank of the attempt (collect.h). */
	void (*evidence)(void *ctx, struct sup *s, const char *step_id, char *const *hosts,
			 size_t nr_hosts, unsigned world, struct sup_evidence_found *out);

	/* vigil diagnose KIND --json ARG: its JSON into *out, 0; -1 when it gave none. */
	int (*diagnose)(void *ctx, const char *kind, const char *arg, struct strbuf *out);

	/* Signal handling on (SIGTERM, SIGINT, SIGHUP set sup_sig_seen) or off; NULL: none. */
	int (*signals)(void *ctx, bool on, struct strbuf *err);

	/* A line for the user: fd 1 (the outcome) or 2 (progress). Already clean. */
	void (*print)(void *ctx, int fd, const char *text, size_t len);

	/* The loop's longest wait in one turn, in ms; 0: 250. The real world's poll wakes on
	 * output, the step's end and signals; the cap is for the step file, read once a turn. A
	 * simulated world that writes no step file and wakes the loop for all it does passes a
	 * longer one (vigil sim: a month is 10 M turns of 250 ms). */
	unsigned turn_ms;

	/* Observers for tests, NULL in the real world: after each journal record is written (the
	 * nth of this run), and each event fed to the machine with the state it meets. */
	void (*journaled)(void *ctx, unsigned nth);
	void (*fed)(void *ctx, enum sup_state st, enum sup_event_kind ev);
};

/* The real world: srun, scontrol, poll, fork, the real clock. */
const struct sup_world *sup_real_world(void);

/* supervise() in the given world (NULL: the real one). */
int supervise_in(const struct sup_options *o, const struct sup_world *w, struct strbuf *err);

/* The step's output as srun writes it with --label ("3: text"), for a world's wait. */
void sup_world_output(struct sup *s, int stream, const char *data, size_t len);

/* What a periodic watch finds, one line per host "HOST\tWHAT\tDETAIL" (WHAT: lost, healthy,
 * unhealthy, unknown, unreachable, noagent), asking the world's nodes and check entries; a
 * healthy host only when it ends a streak of unreachable checks (else it has nothing to say). */
void sup_watch_text(struct sup *s, bool checks, struct strbuf *out);

/* The run's clock, for a world that needs it. */
double sup_wall(const struct sup *s);
double sup_mono(const struct sup *s);

void sup_check_rows_release(struct check_row *rows, size_t n);

#endif
