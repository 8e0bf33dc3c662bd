/*
 * test_replicas.c: data-parallel replicas' digests compared (src/supervise/replicas.h) on
 * made-up reports: agreement, one or two ranks that differ, a group of two (cannot tell which),
 * late and missing reports, a rank that stops reporting, groups kept apart, refusals, the
 * pending bound, a new attempt, and the line the ranks print.
 */
#include "../harness.h"
#include "../../src/supervise/replicas.h"

#include <string.h>

struct seen {
	unsigned n;
	struct {
		enum replica_kind kind;
		uint64_t step;
		unsigned group, ranks[8], agree, reported, unseen;
		uint64_t digests[8], majority;
		size_t nr;
	} v[32];
};

static void on_verdict(void *arg, const struct replica_verdict *v)
{
	struct seen *s = arg;
	if (s->n == 32)
		return;
	typeof(s->v[0]) *o = &s->v[s->n++];
	o->kind = v->kind;
	o->step = v->step;
	o->group = v->group;
	o->nr = v->nr_ranks;
	o->agree = v->agree;
	o->reported = v->reported;
	o->unseen = v->unseen;
	o->majority = v->majority;
	for (size_t i = 0; i < v->nr_ranks && i < 8; i++) {
		o->ranks[i] = v->ranks[i];
		o->digests[i] = v->digests ? v->digests[i] : 0;
	}
}

/* Step `step` of group 0 (size n): every rank reports d, but rank `odd` reports od. */
static void round_(struct replicas *r, unsigned n, uint64_t step, uint64_t d, int odd,
		   uint64_t od, double now)
{
	for (unsigned k = 0; k < n; k++)
		replicas_add(r, k, step, 0, n, (int)k == odd ? od : d, now);
}

TEST(replicas_agreeing_groups_say_nothing)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 4, 30, on_verdict, &s);
	for (uint64_t step = 1; step <= 50; step++)
		round_(&r, 4, step, 0xabc0 + step, -1, 0, (double)step);
	CHECK_INT(s.n, 0);
	CHECK_INT((long long)r.judged, 50);
	CHECK(!r.has_bad);
	replicas_release(&r);
}

TEST(replicas_one_rank_differs_from_the_majority_once)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 4, 30, on_verdict, &s);
	round_(&r, 4, 10, 0x1111, -1, 0, 1);
	round_(&r, 4, 20, 0x2222, 2, 0x2223, 2); /* one flipped bit on rank 2 */
	round_(&r, 4, 30, 0x3333, 2, 0x9999, 3); /* and it stays different: said once */
	CHECK_INT(s.n, 1);
	CHECK_INT(s.v[0].kind, REPLICA_DIVERGED);
	CHECK_INT((long long)s.v[0].step, 20);
	CHECK_INT((long long)s.v[0].nr, 1);
	CHECK_INT(s.v[0].ranks[0], 2);
	CHECK_INT((long long)s.v[0].digests[0], 0x2223);
	CHECK_INT((long long)s.v[0].majority, 0x2222);
	CHECK_INT(s.v[0].agree, 3);
	CHECK_INT(s.v[0].reported, 4);
	CHECK(r.has_bad);
	CHECK_INT((long long)r.first_bad_step, 20);
	replicas_release(&r);
}

TEST(replicas_two_ranks_differ_and_both_are_named)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 5, 30, on_verdict, &s);
	replicas_add(&r, 0, 7, 0, 5, 0xa, 0);
	replicas_add(&r, 1, 7, 0, 5, 0xb, 0);
	replicas_add(&r, 2, 7, 0, 5, 0xa, 0);
	replicas_add(&r, 3, 7, 0, 5, 0xc, 0);
	replicas_add(&r, 4, 7, 0, 5, 0xa, 0);
	CHECK_INT(s.n, 1);
	CHECK_INT(s.v[0].kind, REPLICA_DIVERGED);
	CHECK_INT((long long)s.v[0].nr, 2);
	CHECK_INT(s.v[0].ranks[0], 1);
	CHECK_INT(s.v[0].ranks[1], 3);
	CHECK_INT(s.v[0].agree, 3);
	replicas_release(&r);
}

TEST(replicas_a_group_of_two_that_differ_cannot_tell_which)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 2, 30, on_verdict, &s);
	replicas_add(&r, 0, 3, 0, 2, 0x10, 0);
	replicas_add(&r, 1, 3, 0, 2, 0x11, 0);
	replicas_add(&r, 0, 4, 0, 2, 0x20, 0);
	replicas_add(&r, 1, 4, 0, 2, 0x21, 0); /* the same two again: said once */
	CHECK_INT(s.n, 1);
	CHECK_INT(s.v[0].kind, REPLICA_UNDECIDED);
	CHECK_INT((long long)s.v[0].nr, 2);
	CHECK_INT(s.v[0].ranks[0], 0);
	CHECK_INT(s.v[0].ranks[1], 1);
	CHECK_INT((long long)r.first_bad_step, 3);
	/* a 2-2 split of four is no majority either */
	struct seen s4 = { 0 };
	struct replicas r4;
	replicas_init(&r4, 4, 30, on_verdict, &s4);
	replicas_add(&r4, 0, 1, 0, 4, 1, 0);
	replicas_add(&r4, 1, 1, 0, 4, 1, 0);
	replicas_add(&r4, 2, 1, 0, 4, 2, 0);
	replicas_add(&r4, 3, 1, 0, 4, 2, 0);
	CHECK_INT(s4.n, 1);
	CHECK_INT(s4.v[0].kind, REPLICA_UNDECIDED);
	CHECK_INT((long long)s4.v[0].nr, 4);
	replicas_release(&r);
	replicas_release(&r4);
}

TEST(replicas_late_and_missing_reports_and_a_rank_that_stops)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 4, 10, on_verdict, &s);
	round_(&r, 4, 1, 0x1, -1, 0, 0);
	/* step 2: rank 3 says nothing; judged 10 s after the first report */
	for (unsigned k = 0; k < 3; k++)
		replicas_add(&r, k, 2, 0, 4, 0x2, 100);
	replicas_tick(&r, 105);
	CHECK_INT(s.n, 0); /* not yet */
	replicas_tick(&r, 110);
	CHECK_INT(s.n, 1);
	CHECK_INT(s.v[0].kind, REPLICA_MISSING);
	CHECK_INT((long long)s.v[0].step, 2);
	CHECK_INT((long long)s.v[0].nr, 1);
	CHECK_INT(s.v[0].ranks[0], 3);
	/* its report for step 2 comes after the verdict: late, not judged again */
	replicas_add(&r, 3, 2, 0, 4, 0x2, 111);
	CHECK_INT((long long)r.late, 1);
	/* it stays silent: not said again every step */
	for (uint64_t st = 3; st <= 6; st++) {
		for (unsigned k = 0; k < 3; k++)
			replicas_add(&r, k, st, 0, 4, st, 200 + (double)st * 20);
		replicas_tick(&r, 200 + (double)st * 20 + 10);
	}
	CHECK_INT(s.n, 1);
	/* it comes back, then stops again: said again */
	round_(&r, 4, 7, 0x7, -1, 0, 400);
	for (unsigned k = 0; k < 3; k++)
		replicas_add(&r, k, 8, 0, 4, 0x8, 500);
	replicas_tick(&r, 600);
	CHECK_INT(s.n, 2);
	CHECK_INT(s.v[1].kind, REPLICA_MISSING);
	CHECK_INT(s.v[1].ranks[0], 3);
	CHECK(!r.has_bad); /* missing is no divergence */
	replicas_release(&r);
}

TEST(replicas_ranks_never_seen_are_counted_once)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 8, 5, on_verdict, &s);
	/* a group of 4 of which only ranks 0 and 1 ever report */
	replicas_add(&r, 0, 1, 0, 4, 0x1, 0);
	replicas_add(&r, 1, 1, 0, 4, 0x1, 0);
	replicas_tick(&r, 5);
	replicas_add(&r, 0, 2, 0, 4, 0x2, 10);
	replicas_add(&r, 1, 2, 0, 4, 0x2, 10);
	replicas_tick(&r, 15);
	CHECK_INT(s.n, 1);
	CHECK_INT(s.v[0].kind, REPLICA_MISSING);
	CHECK_INT((long long)s.v[0].nr, 0);
	CHECK_INT(s.v[0].unseen, 2);
	replicas_release(&r);
}

TEST(replicas_groups_are_judged_apart)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 8, 30, on_verdict, &s);
	/* tensor parallel 2 x data parallel 4: ranks 0,2,4,6 hold shard 0, 1,3,5,7 shard 1 */
	for (unsigned k = 0; k < 8; k++)
		replicas_add(&r, k, 5, k % 2, 4, k % 2 ? (k == 5 ? 0xbad : 0xb) : 0xa, 0);
	CHECK_INT(s.n, 1);
	CHECK_INT(s.v[0].group, 1);
	CHECK_INT(s.v[0].ranks[0], 5);
	CHECK_INT((long long)s.v[0].majority, 0xb);
	replicas_release(&r);
}

TEST(replicas_refuse_what_does_not_fit)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 4, 30, on_verdict, &s);
	replicas_add(&r, 9, 1, 0, 4, 1, 0);  /* rank out of the world */
	replicas_add(&r, 0, 1, 7, 4, 1, 0);  /* group out of the world */
	replicas_add(&r, 0, 1, 0, 0, 1, 0);  /* size 0 */
	replicas_add(&r, 0, 1, 0, 9, 1, 0);  /* size over the world */
	CHECK_INT((long long)r.refused, 4);
	replicas_add(&r, 0, 1, 0, 2, 1, 0);
	replicas_add(&r, 0, 2, 1, 2, 1, 0);  /* rank 0 in another group */
	replicas_add(&r, 1, 1, 0, 3, 1, 0);  /* another size for group 0 */
	replicas_add(&r, 0, 1, 0, 2, 2, 0);  /* the same step twice */
	CHECK_INT((long long)r.refused, 7);
	replicas_add(&r, 1, 1, 0, 2, 1, 0);
	replicas_add(&r, 2, 1, 0, 2, 1, 0);  /* a third rank in a group of two */
	CHECK_INT((long long)r.refused, 8);
	CHECK_INT(s.n, 0);
	CHECK_INT((long long)r.judged, 1);
	replicas_release(&r);
}

TEST(replicas_pending_steps_are_bounded)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 2, 1e9, on_verdict, &s);
	/* rank 1 never reports: steps wait, at most REPLICAS_PENDING_MAX of them */
	for (uint64_t st = 1; st <= REPLICAS_PENDING_MAX + 5; st++)
		replicas_add(&r, 0, st, 0, 2, st, 0);
	CHECK_INT(r.groups[0]->nr_pending, REPLICAS_PENDING_MAX);
	CHECK_INT((long long)r.judged, 5);
	/* a step older than every waiting one is late */
	replicas_add(&r, 1, 2, 0, 2, 2, 0);
	CHECK_INT((long long)r.late, 1);
	unsigned said = s.n;
	replicas_flush(&r);
	CHECK_INT(s.n, said); /* the attempt ended: nobody is missing for that */
	CHECK_INT(r.groups[0]->nr_pending, 0);
	CHECK_INT((long long)r.judged, REPLICAS_PENDING_MAX + 5);
	replicas_release(&r);
}

TEST(replicas_a_new_attempt_says_things_again)
{
	struct seen s = { 0 };
	struct replicas r;
	replicas_init(&r, 3, 30, on_verdict, &s);
	round_(&r, 3, 10, 0x1, 1, 0x2, 0);
	CHECK_INT(s.n, 1);
	replicas_reset(&r);
	/* relaunched from step 5: steps below the last judged are not late in a new attempt */
	round_(&r, 3, 6, 0x6, 1, 0x7, 1);
	CHECK_INT(s.n, 2);
	CHECK_INT((long long)s.v[1].step, 6);
	CHECK_INT((long long)r.first_bad_step, 6);
	CHECK_INT((long long)r.late, 0);
	replicas_release(&r);
}

TEST(replicas_parse_the_ranks_line)
{
	uint64_t step, d;
	unsigned g, m;
	const char *ok = "vigil-digest step=1200 group=3 size=64 digest=00ff12AB9c0d4e5f";
	CHECK_INT(replicas_parse_line(ok, strlen(ok), &step, &g, &m, &d), 1);
	CHECK_INT((long long)step, 1200);
	CHECK_INT(g, 3);
	CHECK_INT(m, 64);
	CHECK(d == 0x00ff12ab9c0d4e5full);
	const char *tabs = "vigil-digest\tstep=1\tgroup=0\tsize=2\tdigest=1\r";
	CHECK_INT(replicas_parse_line(tabs, strlen(tabs), &step, &g, &m, &d), 1);
	const char *no[] = { "step 12 loss 3.4", "vigil-digestx step=1", "", "vigil-dig", NULL };
	for (int i = 0; no[i]; i++)
		CHECK_MSG(replicas_parse_line(no[i], strlen(no[i]), &step, &g, &m, &d) == 0, "%s",
			  no[i]);
	const char *bad[] = {
		"vigil-digest",
		"vigil-digest step=1 group=0 size=2",
		"vigil-digest step=1 group=0 size=2 digest=",
		"vigil-digest step=1 group=0 size=2 digest=12345678901234567",
		"vigil-digest step=99999999999999999999 group=0 size=2 digest=1",
		"vigil-digest step=1 group=0 size=0 digest=1",
		"vigil-digest step=1 group=0 size=2 digest=1 extra",
		"vigil-digest step=1 group=0 size=2 digest=xyz",
		"vigil-digest group=0 step=1 size=2 digest=1",
		"vigil-digest step=-1 group=0 size=2 digest=1",
		NULL,
	};
	for (int i = 0; bad[i]; i++)
		CHECK_MSG(replicas_parse_line(bad[i], strlen(bad[i]), &step, &g, &m, &d) == -1,
			  "%s", bad[i]);
}
