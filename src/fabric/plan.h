/*
 * plan.h: the burn-in planner of 'vigil fabric burnin plan': stages of HCA pairs (host+HCA to
 * host+HCA, each HCA in at most one pair per stage) whose routes together carry traffic over
 * every link of the fabric, in close to the fewest stages (a lower bound is computed and kept
 * in the plan). The plan's JSON is what 'vigil fabric burnin run' reads (docs/FABRIC.md).
 *
 * Routing model (docs/FABRIC.md): the fabric is layered by distance from the HCAs (tier 0 the
 * HCAs, 1 the leaves, ...); a pair's route goes up from one HCA to a switch the two share and
 * down to the other, never higher than the lowest tier that joins them (the minimal up/down
 * routes an SM's ftree/updn engine chooses among). Which of the equal routes the SM picks is
 * its own (by destination LID); the planner picks one per pair so that the stage's demand can
 * load every link, and names it. The runner's counters say which links really carried traffic.
 */
#ifndef VIGIL_FABRIC_PLAN_H
#define VIGIL_FABRIC_PLAN_H

#include "topo.h"

struct plan_opts {
	unsigned hosts_per_stage; /* 0: no limit */
	/* only these hosts' HCAs (an allocation's nodes); nr_hosts 0: every host. The links
	 * they cannot reach are out of scope, not uncovered: not this plan's to test */
	const char *const *hosts;
	size_t nr_hosts;
};

struct plan_link {
	int link;         /* f->links[] */
	int lo, lo_port;  /* the end nearer the HCAs (an HCA for an HCA's link) */
	int hi, hi_port;
	int tier;         /* the upper end's tier; 0 when the link cannot be used */
	bool usable;      /* both ends agree, the link is up and on an up/down route */
	bool covered;
	bool out_of_scope; /* an HCA of a host not in plan_opts.hosts, or out of their reach */
};

struct plan_pair {
	int a, b;         /* HCA nodes */
	size_t route, route_len; /* plan.route[route .. route + route_len): plan links, a to b */
};

struct plan_stage {
	size_t first, nr; /* plan.pairs[first .. first + nr) */
	size_t hosts;
};

struct plan {
	size_t hosts, hcas;
	unsigned tiers;
	struct plan_link *links;
	size_t nr_links;
	struct plan_pair *pairs;
	size_t nr_pairs, alloc_pairs;
	int *route;
	size_t nr_route, alloc_route;
	struct plan_stage *stages;
	size_t nr_stages, alloc_stages;
	int *uncovered;   /* plan links no stage covers (down, miswired, unreachable) */
	size_t nr_uncovered;
	size_t nr_out_of_scope; /* links left out by plan_opts.hosts (never in uncovered) */
	char **missing;   /* names of plan_opts.hosts with no HCA on a usable link here */
	size_t nr_missing;
	unsigned lower_bound;
	char bound_why[160]; /* which constraint set the bound */
};

/* 0, or -1 with *err (no HCA with a usable link: nothing to plan; p is then empty). */
int plan_build(const struct fabric *f, const struct plan_opts *o, struct plan *p,
	       struct strbuf *err);
void plan_release(struct plan *p);

/*
 * The plan's own consistency, for tests and the fuzzers: each route a connected path from its
 * pair's a to its b, each HCA at most once per stage, hosts per stage within the limit, every
 * usable link covered or listed uncovered, no uncovered link in a route. 0, or -1 with *err.
 */
int plan_verify(const struct fabric *f, const struct plan_opts *o, const struct plan *p,
		struct strbuf *err);

void plan_write_json(const struct fabric *f, const struct plan *p, struct strbuf *out);
void plan_write_text(const struct fabric *f, const struct plan *p, struct strbuf *out);

#endif
