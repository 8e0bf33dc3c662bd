/*
 * world.h: the simulated world: a world for `vigil run`'s supervisor (src/supervise/world.h) in virtual time,
 * with no process: a cluster of hosts n1..nN, a Slurm that answers from a table, a trainer
 * that prints "step N loss X" on rank 0 every step_s seconds from its last checkpoint and
 * ends after total_steps, and faults at chosen virtual instants (a crash, a hang, a lost
 * node, a host turning sick, a signal, raw srun lines in one poll). Time moves only when the
 * supervisor waits, sleeps or does something that takes time (a check round, a stop, a smoke
 * run, stacks), by the latencies below; a run of hours takes milliseconds.
 *
 * In the library (it was tests/fakeworld.c) because `vigil sim` runs the real supervisor in it
 * at the scale of a fleet (src/sim/); tests/unit/test_supervisor.c and bench/sup_scale.c use
 * it as the scripted world it has always been.
 */
#ifndef VIGIL_SIM_WORLD_H
#define VIGIL_SIM_WORLD_H

#include "../lib/strindex.h"
#include "../supervise/world.h"

enum fw_fault_kind {
	FW_CRASH,   /* host's first task exits with code (srun's line), srun ends 1 after 0.5 s */
	FW_HANG,    /* the trainer prints no more steps (a rank stuck in a collective) */
	FW_SLOW,    /* host (NULL: every host) makes a step take factor times as long */
	FW_SICK,    /* host's vigil check says unhealthy with text from now on */
	FW_HEAL,    /* host answers healthy again */
	FW_LOST,    /* host stops: Slurm says NOT_RESPONDING, checks get no answer, srun says
		     * "Node failure on HOST" and ends */
	FW_SILENT,  /* host's vigil check stops answering; Slurm still says it is fine */
	FW_LINES,   /* text: srun's own lines (stderr), all in one wake of the loop */
	FW_SIGNAL,  /* code: a signal the supervisor receives (sup_sig_seen) */
	FW_FINISH,  /* the trainer ends well at the next step */
};

struct fw_fault {
	double at;        /* virtual seconds from the start of the run */
	uint64_t at_step; /* or, for the step's faults: in the same poll as this step's line */
	enum fw_fault_kind kind;
	char host[64];
	int code;
	double factor;
	char text[512];
	bool fired;
	int tag; /* the caller's (vigil sim: its class + 1); 0: none */
};

struct fw_host {
	char name[64];
	bool sick, lost, silent, noagent, bad_smoke, drained;
	int smoke_code;    /* a smoke or determinism test here exits with it (bad_smoke: 1) */
	double slow;       /* 0 or 1: normal */
	char reason[512];  /* sick: what its check says */
	char drain_reason[256];
	bool marked;       /* in fakeworld.marked */
};

struct fakeworld {
	struct sup_world w;
	struct os_ops os;
	double now;        /* virtual seconds */
	double wall0;      /* the wall clock at now = 0 */

	struct fw_host *hosts;
	size_t nr_hosts;
	struct strindex index;
	char nodelist[64]; /* "n[1-N]" */
	unsigned tasks_per_node;

	/* the trainer */
	double startup_s, step_s;
	uint64_t total_steps, ckpt_every, ckpt;
	bool train_forever; /* never ends by itself (the benches) */
	double ckpt_cost_s;  /* the trainer stalls this long at each checkpoint (0: none) */
	uint64_t line_every; /* rank 0 prints every this many steps (0, 1: each step) */
	/* what the trainer did (vigil sim's accounting) */
	uint64_t ckpts, recomputed_steps;
	double slow_lost_s; /* seconds beyond step_s that slow steps took */
	/* called whenever the clock moves, before faults due are applied (vigil sim adds its
	 * next fault then); the world's waits end at wake_at if it is sooner (0: none) */
	void (*tick)(struct fakeworld *fw, void *arg);
	void *tick_arg;
	double wake_at;
	/* Slurm answers a query of some nodes (the periodic watch's) with only those that are not
	 * plainly allocated (lost, drained): the supervisor acts on no other, and building and
	 * freeing five strings for each of 12,500 healthy nodes a round was 40 % of a vigil sim
	 * run. The whole allocation's query is answered in full. Off: every node (the tests). */
	bool slurm_unusual_only;
	/* The world names to the periodic watch the hosts that may not be plainly fine
	 * (sup_world.watch_hosts): the hosts marked since (fw_mark: made sick, lost, silent or
	 * without an agent), less those plainly fine again. Off: it does not know (-1), the watch
	 * asks about every host (the tests, unless they ask for it). */
	bool watch_changed_only;
	size_t *marked, nr_marked, alloc_marked;
	/* called when a crash, hang or lost node of the fault list strikes the step */
	void (*struck)(struct fakeworld *fw, const struct fw_fault *f, void *arg);
	/* what things take */
	double check_s, stop_s, smoke_s, evidence_s, watch_s;

	struct fw_fault *faults;
	size_t nr_faults, alloc_faults;

	/* the step */
	bool live, hung, finish;
	double started, next_line, ends_at, slow, pace;
	uint64_t step;
	int end_code;
	char end_desc[128];
	char **step_hosts;
	size_t nr_step_hosts;
	char step_id[32];
	unsigned launches;

	/* the watch */
	bool watch_live, in_watch, watch_checks;
	double watch_at;
	struct strbuf watch_text;

	/* what the run did */
	unsigned check_rounds, checked_hosts, stops, stop_ids, smokes, evidences, drains,
		diagnoses, journal_records;
	struct strbuf out, err; /* the user's lines: fd 1, fd 2 */
	bool quiet;             /* keep no lines (the benches) */
	unsigned hit[SUP_STATE_NR][SUP_EVENT_NR];

	/* evidence and diagnosis answers */
	char evidence_sick[64], evidence_suspect[64];
	const char *diagnose_hang, *diagnose_logs, *diagnose_steps; /* JSON; NULL: gives none */
	const char *check_note; /* what every check round says it did beside its plan */
	char smoke_refused[256]; /* non-empty: srun refuses every smoke step, saying this */

	/* kill -9 right after the nth journal record of the run (0: never): _exit(137) */
	unsigned die_after_journal;
	/* a signal the supervisor receives during the nth call of an action (FW_IN_*) */
	struct { int sig; unsigned nth, calls; } raise_in[5];
	double id_delay;          /* the step's id is known this long after the launch (1 s) */
	uint64_t hold_watch_step; /* a finished watch is told in the poll of this step's line */
};

enum { FW_IN_STOP, FW_IN_CHECK, FW_IN_SMOKE, FW_IN_EVIDENCE, FW_IN_REPORT };

/* n hosts n1..nN, tasks_per_node ranks each; the trainer: 20 s start-up, 1 s a step, 100
 * steps, a checkpoint every 10. */
void fw_init(struct fakeworld *fw, size_t n, unsigned tasks_per_node);
void fw_release(struct fakeworld *fw);
struct fw_host *fw_host(struct fakeworld *fw, const char *name);
/* h may have stopped being plainly fine: named to the watch until it is fine (every change
 * of sick, lost, silent, noagent to true must mark, where watch_changed_only is on). */
void fw_mark(struct fakeworld *fw, struct fw_host *h);
struct fw_fault *fw_fault(struct fakeworld *fw, double at, enum fw_fault_kind kind,
			  const char *host);
/* Options of a run over every host with spares, in run_dir, with short intervals. */
void fw_options(struct fakeworld *fw, struct sup_options *o, const char *run_dir,
		unsigned spares);

#endif
