/*
 * hang.h: the NCCL flight recorder files of a hung run (one per process, every host) in, the
 * rank that stopped the collective out: for each communicator, the last collective each rank
 * enqueued and completed, the one the others wait in, the ranks that never entered it or
 * entered it and never finished, its operation and size, and how long the others have waited.
 *
 * Pure: the command (src/cmd/diagnose_hang.c) reads the files and feeds each parsed ring here.
 *
 *   hang_init(&h); hang_add_ring(&h, name, &ring)... / hang_add_error(&h, name, why)...
 *   hang_finish(&h, now_s); hang_write_text(&h, &out) / hang_write_json(&h, &w);
 *   hang_release(&h);
 *
 * Collectives are matched across ranks by their index on the communicator (the n-th
 * collective this process enqueued on it): every rank of a communicator calls its collectives
 * in the same order, whatever NCCL's per-function sequence numbers say. The same process seen
 * twice (its live ring and a dump at exit) counts once, the record that saw more kept.
 *
 * The states of a communicator, from what its ranks' counters say:
 *   idle            every rank completed all it enqueued, the same number: nothing is inside
 *                   NCCL on it (a hang, if there is one, is above NCCL: look at the stacks)
 *   never_entered   some ranks never enqueued the collective the others wait in: they are the
 *                   culprits, the others victims
 *   never_finished  every rank entered it, some finished and some did not
 *   stuck_inside    every rank entered it and none finished: the network or a GPU, not a
 *                   missing rank (the ranks whose GPU never began it are named)
 *
 * A rank whose process was stopped (T, frozen as by SIGSTOP: vigil stacks saw it so in most
 * samples, hang_add_stopped) while it was inside the collective (stuck_inside, never_finished)
 * is the culprit, role "stopped": its NCCL threads make no progress, so the others wait for it
 * as they would for a broken link (seen on an H200: rank 1 stopped in the middle of a DDP
 * all_reduce, every rank inside it, none finishing). It is matched by global rank and pid.
 *   behind          completion is not reported (profiler API v1/v2, or no GPU channel events)
 *                   and some ranks enqueued fewer collectives than the others
 *   same_count      completion is not reported and every rank enqueued the same number: all
 *                   idle above NCCL, or all inside the last one, the recorder cannot tell
 *   incomplete      ranks are unknown and they decide it: missing (no file, or a file refused
 *                   as cut short or damaged) while the present ones are all waiting or all
 *                   idle, or one rank seen in two processes or from two owners' files (doubt,
 *                   never evidence). No culprit is named; `vigil diagnose hang` exits 3
 */
#ifndef VIGIL_DIAGNOSE_HANG_H
#define VIGIL_DIAGNOSE_HANG_H

#include "ncclring.h"
#include "../lib/json.h"

/* A communicator larger than this is taken as a corrupt count: its size is unknown. */
#define HANG_RANKS_MAX (1 << 20)

enum hang_state {
	HANG_IDLE,
	HANG_NEVER_ENTERED,
	HANG_NEVER_FINISHED,
	HANG_STUCK_INSIDE,
	HANG_BEHIND,
	HANG_SAME_COUNT,
	HANG_INCOMPLETE,
};

const char *hang_state_name(enum hang_state s);

struct hang_member {
	int32_t comm_rank, global_rank, pid;
	uint32_t file_uid;
	char host[65];
	char file[256];
	uint64_t enqueued, started, done;
	uint64_t last_enqueued_ns, last_done_ns, seen_ns, written;
	bool kernel_events;
	struct nring_op *ops; /* its latest collectives on this communicator, oldest first */
	size_t nr_ops;
	int role; /* 0 waiting/ok, 1 never entered, 2 never finished, 3 GPU never began,
		   * 4 stopped (hang_add_stopped) */
	unsigned stopped_t, stopped_samples; /* role 4: T in so many of so many samples */
};

struct hang_comm {
	uint64_t hash;
	char name[NREC_NAME_MAX + 1];
	int32_t nranks; /* the largest any member reported; -1 unknown */
	struct hang_member *m;
	size_t nr, alloc;
	/* after hang_finish */
	enum hang_state state;
	uint64_t waiting;     /* the collective (index) the others wait in; 0 none */
	struct nring_op op;   /* its details where a ring still held it */
	bool have_op;
	double waited_s;      /* since the first rank enqueued it, to when the files were taken */
	int32_t *missing;     /* comm ranks with no file */
	size_t nr_missing, alloc_missing;
	size_t culprits;      /* members named (role 1 or 2, or 3 when stuck inside, or 4) */
	bool stopped;         /* the culprits are processes found stopped (role 4) */
	size_t nr_dup;        /* comm ranks with more than one file (processes or owners) */
	int32_t dup_rank;     /* the first of them */
	bool min_done_all;    /* incomplete: every rank read completed all it enqueued */
};

struct hang_file {
	char *name;
	char *error; /* NULL when read */
};

/* A process vigil stacks found stopped (T) in most samples, by global rank and pid. */
struct hang_stopped {
	int32_t rank, pid;
	unsigned t, samples;
};

struct hang {
	struct hang_comm *comms;
	size_t nr, alloc;
	struct hang_file *files;
	size_t nr_files, alloc_files;
	size_t rings; /* files read as recorder files */
	struct hang_stopped *stopped;
	size_t nr_stopped, alloc_stopped;
	double now_s;
	/* after hang_finish: the communicator that explains the hang (NULL: none) */
	const struct hang_comm *main;
	bool all_idle; /* every communicator idle: the hang is above NCCL */
};

void hang_init(struct hang *h);
void hang_release(struct hang *h);
void hang_add_ring(struct hang *h, const char *name, const struct nring *r);
void hang_add_error(struct hang *h, const char *name, const char *why);
/* Rank `rank` (pid `pid`) was stopped (T) in t of samples samples (vigil stacks); before
 * hang_finish. Taken only when t is more than half of samples. */
void hang_add_stopped(struct hang *h, int32_t rank, int32_t pid, unsigned t, unsigned samples);
/* now_s: wall-clock seconds the waits are counted to when a ring carries no dump time. */
void hang_finish(struct hang *h, double now_s);
/* True when a communicator names ranks to look at: a culprit, ranks stuck, or ranks
 * missing while the others wait (same_count names none). */
bool hang_found(const struct hang *h);
/* One paragraph (cleaned of control bytes) for a person. */
void hang_write_text(const struct hang *h, struct strbuf *out);
/* The "recorder" object of 'vigil diagnose hang --json'. */
void hang_write_json(const struct hang *h, struct json_writer *w);

#endif
