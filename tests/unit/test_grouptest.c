/*
 * test_grouptest.c: the group-testing planner (src/supervise/grouptest.h) on simulated faulty
 * sets: every single bad host and pairs of bad hosts among 4..64 are found exactly, confirmed
 * alone, within ⌈log₂ n⌉ + 1 rounds and 2·d·⌈log₂ n⌉ + d tests (REFERENCE.md §10); a suspect
 * whose confirmation passes is inconclusive, never bad.
 */
#include "../harness.h"
#include "../../src/supervise/grouptest.h"

static unsigned ceil_log2(size_t n)
{
	unsigned k = 0;
	while (((size_t)1 << k) < n)
		k++;
	return k;
}

/* A smoke run fails when a bad host is in the group; flaky: its confirmation passes. */
static void simulate(size_t n, const bool *bad, size_t flaky, struct grouptest *g)
{
	grouptest_init(g, n, 2);
	size_t groups;
	while ((groups = grouptest_next_round(g)) > 0) {
		CHECK(g->rounds <= 64);
		bool *used = xcalloc(n, 1);
		for (size_t i = 0; i < groups; i++) {
			bool fails = false;
			for (size_t k = 0; k < g->groups[i].nr; k++) {
				size_t h = g->groups[i].hosts[k];
				CHECK_MSG(!used[h], "host %zu in two groups of one round", h);
				used[h] = true;
				fails |= bad[h] && !(g->groups[i].confirm && h == flaky);
			}
			if (g->groups[i].confirm)
				CHECK_INT(g->groups[i].nr, 1);
			grouptest_result(g, i, fails);
		}
		free(used);
	}
}

static void check_found(size_t n, const bool *bad, unsigned d, struct grouptest *g)
{
	for (size_t h = 0; h < n; h++)
		CHECK_MSG((grouptest_host(g, h) == GT_BAD) == bad[h],
			  "n=%zu host %zu: state %d, bad %d", n, h, grouptest_host(g, h), bad[h]);
	CHECK_MSG(g->rounds <= ceil_log2(n) + 1, "n=%zu d=%u: %u rounds", n, d, g->rounds);
	CHECK_MSG(g->tests <= 2 * d * ceil_log2(n) + d, "n=%zu d=%u: %u tests", n, d, g->tests);
}

TEST(grouptest_one_bad_host_in_4_to_64)
{
	for (size_t n = 4; n <= 64; n++) {
		for (size_t f = 0; f < n; f++) {
			bool *bad = xcalloc(n, 1);
			struct grouptest g;
			bad[f] = true;
			simulate(n, bad, SIZE_MAX, &g);
			check_found(n, bad, 1, &g);
			grouptest_release(&g);
			free(bad);
		}
	}
}

TEST(grouptest_two_bad_hosts_in_4_to_64)
{
	for (size_t n = 4; n <= 64; n += (n < 16 ? 1 : 12)) {
		for (size_t a = 0; a < n; a++)
			for (size_t b = a + 1; b < n; b++) {
				bool *bad = xcalloc(n, 1);
				struct grouptest g;
				bad[a] = bad[b] = true;
				simulate(n, bad, SIZE_MAX, &g);
				check_found(n, bad, 2, &g);
				grouptest_release(&g);
				free(bad);
			}
	}
}

TEST(grouptest_flaky_suspect_is_inconclusive_and_nothing_bad_found)
{
	bool bad[8] = { false };
	struct grouptest g;
	bad[5] = true;
	simulate(8, bad, 5, &g);
	CHECK_INT(grouptest_host(&g, 5), GT_INCONCLUSIVE);
	for (size_t h = 0; h < 8; h++)
		CHECK(grouptest_host(&g, h) != GT_BAD);
	grouptest_release(&g);
	/* no bad host: one round, everything cleared */
	bool none[6] = { false };
	simulate(6, none, SIZE_MAX, &g);
	CHECK_INT(g.rounds, 1);
	CHECK_INT(g.tests, 2);
	for (size_t h = 0; h < 6; h++)
		CHECK_INT(grouptest_host(&g, h), GT_CLEARED);
	grouptest_release(&g);
	/* more groups in the first round: fewer rounds (the grid's idea) */
	bool one[48] = { false };
	one[17] = true;
	grouptest_init(&g, 48, 6);
	size_t k;
	while ((k = grouptest_next_round(&g)) > 0)
		for (size_t i = 0; i < k; i++) {
			bool f = false;
			for (size_t j = 0; j < g.groups[i].nr; j++)
				f |= one[g.groups[i].hosts[j]];
			grouptest_result(&g, i, f);
		}
	CHECK_INT(grouptest_host(&g, 17), GT_BAD);
	CHECK(g.rounds <= 1 + ceil_log2(8) + 1);
	grouptest_release(&g);
}
