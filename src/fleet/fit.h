/*
 * fit.h: the fleet's own failure model (`vigil fleet model`) and its lemons (`vigil fleet
 * lemons`), from the events of history.h. docs/LEMONS.md says how and why.
 *
 * The model: for each class of vigil sim's model, the faults counted over the GPU-days
 * observed (nodes x days of the window x GPUs a node), repair_hours the median of Slurm's
 * drain -> resume durations of that class (vigil sim's default where none was seen); the other
 * fields (seen_as, host_fault, check_sees, check_says) are the default model's. A class with no
 * fault gets rate 0 and says so, with the rate that zero events still allow (3 / GPU-days, the
 * rule of three at 95 %). Fewer than FLEET_MIN_NODE_DAYS node-days is too little data: the fit
 * says so (enough_data false, a warning, and the model's source starts with it).
 *
 * Lemons: for each node, its host faults (the classes with host_fault) against what the
 * fleet's rate predicts over its exposure, a Poisson upper tail: P(X >= k | rate x days), over
 * all host classes together and, times the number of host classes, for its worst class;
 * the node's p-value is twice the smaller (Bonferroni over the two); across the fleet,
 * Benjamini-Hochberg's q-value (the false discovery rate had the list stopped at this node).
 * A node with q below alpha is a lemon; confidence = 1 - q.
 *
 * Ownership: struct fleet_fit is plain data; struct fleet_lemons owns its array
 * (fleet_lemons_release()).
 */
#ifndef VIGIL_FLEET_FIT_H
#define VIGIL_FLEET_FIT_H

#include "history.h"
#include "../sim/model.h"

#define FLEET_MIN_NODE_DAYS 10.0
#define FLEET_WARNINGS_MAX 8

struct fleet_fit_opts {
	double since, until;      /* the window; 0: the inputs' first / last time */
	unsigned gpus_per_node;   /* G */
	size_t fleet_nodes;       /* nodes in the fleet if more than the inputs name (0: those) */
	const bool *exclude;      /* per node of the history: left out (a lemon pulled); NULL */
};

struct fleet_class_fit {
	size_t events;
	double rate;          /* per GPU-day, as written to the model */
	double upper95;       /* with no event: 3 / GPU-days */
	double repair_hours;
	size_t repair_samples; /* 0: repair_hours is vigil sim's default */
};

struct fleet_fit {
	double start, end, days, node_days, gpu_days;
	size_t nodes, excluded, events;
	unsigned gpus_per_node;
	bool enough_data;
	struct fleet_class_fit c[FC_NR];
	char warnings[FLEET_WARNINGS_MAX][200];
	size_t nr_warnings;
	struct sim_model model;
};

/* 0, or -1 with *err (no window: no time in any input and no --since/--until). */
int fleet_fit(const struct fleet_history *h, const struct fleet_fit_opts *o, struct fleet_fit *f,
	      struct strbuf *err);
/* The report of the fit: JSON (docs/schema/fleet-model.json, the model under "model") or a
 * table; names what was counted and every warning. */
void fleet_fit_json(const struct fleet_fit *f, const struct fleet_history *h, struct strbuf *out);
/* The members both reports open with: enough_data and the warnings. */
struct json_writer;
void fleet_fit_json_head(struct json_writer *w, const struct fleet_fit *f);
void fleet_fit_text(const struct fleet_fit *f, const struct fleet_history *h, struct strbuf *out);

struct fleet_lemon {
	size_t node;
	size_t events;              /* host faults */
	size_t by_class[FC_NR];
	double expected;            /* host faults the fleet's rates predict over its exposure */
	double p, q, confidence;
	int worst_class;            /* the class of the smallest per-class p-value */
	size_t repairs;             /* drains Slurm ended (the node resumed) */
	size_t after_repair;        /* faults after the node's first repair: it failed again */
	size_t agent_boots;         /* faults the agent saw in a boot of its own */
	bool lemon;                 /* q < alpha */
};

struct fleet_lemons {
	struct fleet_lemon *l;      /* every node with a host fault, most likely lemon first */
	size_t nr;
	size_t nr_lemons;
	double alpha;
};

/* h's events sorted by node (fleet_history_merge()). */
void fleet_lemons_find(const struct fleet_history *h, const struct fleet_fit *f, double alpha,
		       struct fleet_lemons *out);
void fleet_lemons_release(struct fleet_lemons *out);
/* P(X >= k) for X ~ Poisson(lambda). */
double fleet_poisson_tail(size_t k, double lambda);
void fleet_lemons_json(const struct fleet_lemons *L, const struct fleet_history *h,
		       const struct fleet_fit *f, size_t top, struct strbuf *out);
void fleet_lemons_text(const struct fleet_lemons *L, const struct fleet_history *h,
		       const struct fleet_fit *f, size_t top, struct strbuf *out);

#endif
