/*
 * grouptest.h: an adaptive group-testing planner for the supervisor (docs/SUPERVISOR.md): which groups of
 * hosts to run the smoke test on next, to find the hosts that make a run fail when no check
 * explains it. Pure: hosts are indices 0..n-1; the driver (next session) runs each round's groups
 * in parallel and reports each group's result.
 *
 * Plan (docs/SUPERVISOR.md: rounds cost more than tests, and tests are noisy): round 1 splits all
 * hosts into first_groups groups; every later round halves each group that failed, testing both
 * halves at once; a host that failed alone is tested alone once more to confirm it. Rounds for d
 * bad hosts among n: at most ⌈log₂ n⌉ + 1 (first_groups 2); tests at most 2·d·⌈log₂ n⌉ + d.
 * A host cleared by a passing group is believed; a suspect whose confirmation passes is
 * GT_INCONCLUSIVE (flaky), never drained.
 *
 * Ownership: the planner owns its groups (grouptest_release); a round's groups live until the
 * next grouptest_next_round().
 */
#ifndef VIGIL_GROUPTEST_H
#define VIGIL_GROUPTEST_H

#include "../lib/util.h"

enum gt_host { GT_UNKNOWN, GT_CLEARED, GT_SUSPECT, GT_BAD, GT_INCONCLUSIVE };

struct gt_group {
	size_t *hosts;
	size_t nr;
	bool confirm; /* a suspect alone, the second time */
	bool failed, reported;
};

struct grouptest {
	size_t n;
	unsigned first_groups;
	unsigned char *host; /* enum gt_host per host */
	struct gt_group *groups;
	size_t nr_groups, alloc_groups;
	bool started;
	unsigned rounds, tests;
};

/* n hosts, first_groups (>= 2; 2 when 0) groups in the first round. */
void grouptest_init(struct grouptest *g, size_t n, unsigned first_groups);
void grouptest_release(struct grouptest *g);
/* Plan the next round from the last one's results; its groups are g->groups[0..nr). 0: done. */
size_t grouptest_next_round(struct grouptest *g);
/* The smoke test on group i of this round failed (or passed). */
void grouptest_result(struct grouptest *g, size_t i, bool failed);
enum gt_host grouptest_host(const struct grouptest *g, size_t host);

#endif
