/*
 * train.h: the train stage's figures (docs/QUALIFY.md), read from what 'vigil diagnose steps
 * --json' said about the run's journal: the median step time, tokens per second and MFU. Pure:
 * the stage (src/cmd/qualify_stages.c) runs the commands; here their JSON becomes the card's
 * "train" object and the stage's reason. A figure the steps did not give is null, never 0.
 */
#ifndef VIGIL_QUALIFY_TRAIN_H
#define VIGIL_QUALIFY_TRAIN_H

#include "../lib/json.h"
#include "../lib/strlist.h"

struct q_train {
	bool have_st, have_tok, have_mfu;
	double step_time_s, tokens_per_s, mfu;
};

/* steps: diagnose steps' JSON, or NULL (it gave none): every figure unknown then. */
void q_train_read(const struct json_value *steps, struct q_train *t);
/* The card's "train" object: {"step_time_s", "tokens_per_s", "mfu", "outcome"} (outcome: vigil
 * run's, NULL when it reported none) appended to out as JSON. */
void q_train_json(const struct q_train *t, const char *outcome, struct strbuf *out);
/* The stage's reason: "median step 0.5 s, 8192 tokens/s, MFU 41.0 %" (the figures known),
 * "; hosts excluded" when some were; without a step time, why_not (what diagnose steps said,
 * when it said something: steps may have been seen and their times not told apart) or that
 * no step was seen. */
void q_train_reason(const struct q_train *t, bool excluded, const char *why_not,
		    struct strbuf *out);

/* ---- node groups: the same job on each group at once (--train-groups) ---- */

#define Q_TRAIN_GROUPS_MAX 64

struct q_group {
	char *name;           /* "1", "2" ... or the leaf switch's name */
	struct strlist hosts; /* in the order of the nodes given */
};
struct q_groups {
	struct q_group *items;
	size_t nr;
};

/* n nodes into k groups of consecutive nodes (names often follow the racks), sizes differing by
 * one at most; k > n gives n groups of one. */
void q_groups_split(const char *const *nodes, size_t n, unsigned k, struct q_groups *out);
/* n nodes into groups of exactly size consecutive nodes (a trainer with a fixed layout), at
 * most Q_TRAIN_GROUPS_MAX of them; the nodes left over (fewer than size, or past the last
 * group) go to *left. */
void q_groups_of_size(const char *const *nodes, size_t n, unsigned size, struct q_groups *out,
		      struct strlist *left);
/*
 * The nodes grouped by what 'scontrol show topology' printed (text): a group a leaf switch
 * ("SwitchName=X Level=0 ... Nodes=EXPR", topology/tree) or a block ("BlockName=X BlockIndex=I
 * Nodes=EXPR", topology/block), named so, in the order of their first node; switches above
 * the leaves are passed over. A node under no leaf or block goes to *left. -1 with *err when
 * the text names no leaf and no block, or one of them badly (a name that is not a plain word,
 * a hostlist that does not parse), when none holds any of the nodes, or when more than
 * Q_TRAIN_GROUPS_MAX groups hold them.
 */
int q_groups_topology(const char *text, const char *const *nodes, size_t n,
		      struct q_groups *out, struct strlist *left, struct strbuf *err);
void q_groups_release(struct q_groups *g);
/* One group's object of the card's train.groups: {"name", "hosts", "step_time_s",
 * "tokens_per_s", "mfu", "outcome"}, appended to out. */
void q_train_group_json(const struct q_group *g, const struct q_train *t, const char *outcome,
			struct strbuf *out);

#endif
