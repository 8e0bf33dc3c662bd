/*
 * stage.h: running qualify's stages on the nodes (stage.c). The caller (src/cmd/qualify.c)
 * builds the srun arguments and the remote vigil from the configuration, as 'vigil fleet check'
 * does, and passes them in struct q_reach.
 */
#ifndef VIGIL_QUALIFY_STAGE_H
#define VIGIL_QUALIFY_STAGE_H

#include "qualify.h"
#include "../lib/strlist.h"
#include "../slurm/fleet.h"

#include <signal.h>

struct q_reach {
	const struct slurm_cmds *cmds;
	const char *const *srun_args; /* srun and the arguments every step takes */
	size_t nr_srun_args;
	const char *vigil;            /* the vigil the nodes run (fleet.command) */
	bool one_step;
	double expected_busbw_gbps;   /* the fabric's NCCL busbw to expect; 0: not known */
	double busbw_floor;           /* a fraction of it below which a point fails */
	/* set by a signal handler: a round not yet started is not started (a signal that came
	 * while Slurm was asked for the nodes would otherwise miss the srun started next) */
	volatile sig_atomic_t *stop;
};

/* One fleet round of 'vigil ARGS --json ...' over the card's nodes: every node's answer (its
 * report) or why not, into stage s of the card, then the stage's status and reason. -1 with
 * *err when Slurm cannot list the nodes or *reach->stop is set (nothing recorded); *err may
 * carry a note on 0. */
int q_stage_fleet(struct q_card *c, enum q_stage s, const struct q_reach *reach,
		  const char *const *args, size_t nr_args, unsigned timeout_ms, struct strbuf *err);

/* One NCCL point: 'vigil net nccl --op OP --rendezvous RDV ARGS' on the first k of nodes, one
 * task a GPU (srun --label), rank 0's report kept as the point. */
void q_fabric_point(struct q_card *c, const struct q_reach *reach, const char *op,
		    const char *const *nodes, size_t k, unsigned gpus_per_node,
		    const char *rendezvous, const char *const *args, size_t nr_args,
		    unsigned timeout_ms);
/* True when every one of nodes had an active InfiniBand port in its passive report. */
bool q_nodes_have_ib(const struct q_card *c, const char *const *nodes, size_t n);
/* 'vigil net ib --srun ARGS' on neighbours in pairs at once, then each node of a pair that did
 * not pass against a node of one that did: a node fails the fabric stage when it failed with
 * two peers, is unknown when it failed with one, passes when a pair of it passed. */
void q_ib_pairs(struct q_card *c, const struct q_reach *reach, const char *const *nodes,
		size_t n, const char *const *args, size_t nr_args, unsigned timeout_ms);
/* A later answer of node n in stage s (another round, the burn-in): its report's checks join
 * the node's, and the worse status (failed > unknown > passed) and its reason stay. Takes rep
 * (may be NULL). */
void q_node_merge(struct q_node *n, enum q_stage s, enum q_status st, const char *reason,
		  struct json_value *rep);
/* The burn-in step of the fabric stage (burnin.c): plan is 'vigil fabric burnin plan --hosts
 * --json', run is 'vigil fabric burnin run --stage 1 --json' (NULL when it gave none); the
 * card's "burnin" object and each node's fabric status from its ports, HCAs and pairs. */
void q_burnin_apply(struct q_card *c, const struct json_value *plan,
		    const struct json_value *run, const char *plan_path);
/* The burn-in was not run, and why (no topology, no plan): the card says so, no node is
 * judged on it. */
void q_burnin_not_run(struct q_card *c, const char *why);
/* The fabric stage's status and reason from its points; nodes get the stage's status. */
void q_fabric_summarize(struct q_card *c);
/* GPUs of the node with the fewest, from the node stage's reports (devices with GEMM figures);
 * 0 when no node stage report names one. */
unsigned q_gpus_per_node(const struct q_card *c);

#endif
