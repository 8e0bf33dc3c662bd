/*
 * replicas.h: data-parallel replicas' parameter digests, compared as they arrive (silent data
 * corruption in a running job, docs/SUPERVISOR.md "Replica digests").
 *
 * After an optimizer step the ranks of one group (the same model shard in every data-parallel
 * replica: every rank in plain DDP; with tensor or pipeline parallelism, the ranks of one
 * (tp, pp) coordinate) hold bit-identical parameters. Each rank prints, every K steps,
 *
 *     vigil-digest step=N group=G size=M digest=HEX
 *
 * (contrib/python/vigil_train.py does it; M the group's ranks, G < the run's world size, HEX at
 * most 16 hex digits). The rank is srun's label of the line, never a number in it. A step of a
 * group is judged when M ranks have reported it, or late_s after its first report (the others
 * are then missing), or when REPLICAS_PENDING_MAX newer steps wait behind it:
 *
 * - a digest held by more than half the reporters is the group's; each rank with another one
 *   has DIVERGED (said once per rank until replicas_reset());
 * - no such digest (a group of two that differ, a 2-2 split) is UNDECIDED: every reporter is a
 *   suspect, since nothing tells which is wrong;
 * - a rank seen in the group that did not report is MISSING, said when it stops (not again
 *   every step until it reports again); ranks never seen are counted in `unseen`.
 *
 * A group of one rank has nothing to compare; reports for a step already judged are late and
 * counted, not judged again. first_bad_step: the first step any DIVERGED or UNDECIDED verdict
 * named (the checkpoints from it on may hold the corruption).
 *
 * Bounds: a few bytes per rank of the world and a pointer per possible group; a group's table
 * only once it reported; per group at most REPLICAS_PENDING_MAX steps waiting, each with a
 * digest per member. Judging sorts the reporters' digests: O(m log m) per step of a
 * group of m ranks.
 *
 * Ownership: struct replicas owns its tables (replicas_release). A verdict and its arrays live
 * only during the callback.
 */
#ifndef VIGIL_SUPERVISE_REPLICAS_H
#define VIGIL_SUPERVISE_REPLICAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REPLICAS_PENDING_MAX 16
#define REPLICAS_WORLD_MAX (1u << 22)

enum replica_kind { REPLICA_DIVERGED, REPLICA_UNDECIDED, REPLICA_MISSING };

struct replica_verdict {
	enum replica_kind kind;
	uint64_t step;
	unsigned group;
	const unsigned *ranks;    /* the suspects (DIVERGED, UNDECIDED) or the ranks missing */
	const uint64_t *digests;  /* each suspect's digest (NULL for MISSING) */
	size_t nr_ranks;
	bool has_majority;
	uint64_t majority;        /* the group's digest (DIVERGED) */
	unsigned agree;           /* how many reporters hold it */
	unsigned reported, members, size;
	unsigned unseen;          /* MISSING: the group's ranks never seen (size - members) */
};

typedef void (*replicas_fn)(void *arg, const struct replica_verdict *v);

struct replica_pending {
	uint64_t step;
	double first_at;
	uint64_t *digest; /* per member slot */
	bool *have;
	unsigned count;
};

struct replica_group {
	unsigned size;     /* from the first report; 0: none yet */
	unsigned *members; /* ranks, in the order first seen */
	size_t nr_members, alloc_members;
	struct replica_pending pending[REPLICAS_PENDING_MAX];
	unsigned nr_pending;
	bool judged_any, unseen_said;
	uint64_t last_judged; /* reports for a step <= this are late */
};

struct replicas {
	unsigned world;
	double late_s;
	int *group_of;            /* per rank: its group, -1 not seen */
	unsigned *slot_of;        /* per rank: its slot in the group's members */
	bool *diverged, *missing; /* per rank: said already */
	struct replica_group **groups; /* by group id (< world); NULL until its first report */
	unsigned *active;              /* the ids of the groups that exist */
	size_t nr_active;
	replicas_fn fn;
	void *arg;
	bool has_bad;
	uint64_t first_bad_step;
	uint64_t reports, late, refused, judged;
};

/* world ranks (1..REPLICAS_WORLD_MAX); late_s: how long a step waits for its last reports. */
void replicas_init(struct replicas *r, unsigned world, double late_s, replicas_fn fn, void *arg);
void replicas_release(struct replicas *r);
/* A new attempt: nothing pending, nothing said; first_bad_step is kept. */
void replicas_reset(struct replicas *r);

/*
 * One report: rank's digest of group's parameters after step, at now (seconds, any clock the
 * caller keeps); size: the group's ranks. Refused (counted): a rank reporting another group
 * than its first, a size other than the group's first, a group, rank or size out of range, a
 * group with more ranks than its size, the same step twice. A step may be judged here (its
 * last report) and verdicts given.
 */
void replicas_add(struct replicas *r, unsigned rank, uint64_t step, unsigned group,
		  unsigned size, uint64_t digest, double now);
/* Judge the steps that waited late_s. */
void replicas_tick(struct replicas *r, double now);
/* Judge everything still waiting (the attempt ended): what the reporters hold is compared,
 * the ranks that did not report are not called missing (the attempt ended before them). */
void replicas_flush(struct replicas *r);

/*
 * A rank's line: 1 and the fields when it is "vigil-digest step=N group=G size=M digest=HEX"
 * (spaces or tabs between the fields, nothing after but spaces or '\r'); 0 when the line is
 * not a digest line at all; -1 when it starts like one but is not whole (counted by the caller).
 */
int replicas_parse_line(const char *line, size_t len, uint64_t *step, unsigned *group,
			unsigned *size, uint64_t *digest);

#endif
