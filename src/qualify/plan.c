/*
 * plan.c: the stages' shares of the budget. The budget is wall time for the whole qualify; each
 * stage, when it starts, gets its weight's share of what is left (so a stage that finished early
 * leaves its time to the later ones), never less than its minimum: a stage that cannot have its
 * minimum is not run, and the scorecard says so. The weights follow where the time goes on a
 * real cluster: the active GPU tests and the fabric take most; the passive round is seconds.
 */
#include "qualify.h"
#include "../lib/strlist.h"
#include "../lib/util.h"

#include <string.h>

/* passive: a vigil check round (30 s check deadline + srun); node: a short stress, pairs and
 * NCCL (check --deep's minimum useful run); fabric: two NCCL points; storage: one round of
 * the checkpoint workload; train: a job's start-up and a few steps */
const double q_stage_min_s[Q_NR_STAGES] = { 15, 60, 30, 20, 30 };
static const double weight[Q_NR_STAGES] = { 1, 5, 3, 2, 3 };

double q_stage_share(enum q_stage s, const bool asked[Q_NR_STAGES], double left_s)
{
	double wsum = 0, later_min = 0;
	for (int k = (int)s; k < Q_NR_STAGES; k++)
		if (asked[k]) {
			wsum += weight[k];
			if (k != (int)s)
				later_min += q_stage_min_s[k];
		}
	if (left_s < q_stage_min_s[s] || wsum <= 0)
		return 0;
	double share = left_s * weight[s] / wsum;
	if (s == Q_PASSIVE && share > 120)
		share = 120;
	if (share < q_stage_min_s[s])
		share = q_stage_min_s[s];
	/* leave the later stages their minimums where the budget allows */
	if (share > q_stage_min_s[s] && left_s - share < later_min)
		share = left_s - later_min > q_stage_min_s[s] ? left_s - later_min : q_stage_min_s[s];
	return share;
}

int q_plan_check(const bool asked[Q_NR_STAGES], double budget_s, struct strbuf *err)
{
	double need = 0;
	struct strbuf names = STRBUF_INIT;
	for (int s = 0; s < Q_NR_STAGES; s++)
		if (asked[s]) {
			need += q_stage_min_s[s];
			if (names.len)
				strbuf_addch(&names, ',');
			strbuf_addstr(&names, q_stage_name(s));
		}
	int ret = 0;
	if (!names.len)
		ret = error_set(err, "no stage to run");
	else if (budget_s < need)
		ret = error_set(err, "a budget of %.1f min is less than the %.1f min the stages %s "
				     "need at the least",
				budget_s / 60, need / 60, names.buf);
	strbuf_release(&names);
	return ret;
}

int q_parse_stages(const char *list, bool asked[Q_NR_STAGES], struct strbuf *err)
{
	struct strlist l = STRLIST_INIT;
	int ret = 0;
	memset(asked, 0, Q_NR_STAGES * sizeof(*asked));
	strlist_split(&l, list, ",");
	for (size_t i = 0; i < l.nr && !ret; i++) {
		int s = q_stage_from_name(l.items[i]);
		if (s < 0) {
			struct strbuf sb = STRBUF_INIT;
			strbuf_add_clean(&sb, l.items[i]);
			ret = error_set(err, "no stage '%s' (passive, node, fabric, storage, train)",
					sb.buf);
			strbuf_release(&sb);
		} else {
			asked[s] = true;
		}
	}
	if (!ret && !l.nr)
		ret = error_set(err, "no stage named");
	strlist_release(&l);
	return ret;
}
