/*
 * slurm.h: vigil's side of Slurm. Two halves, like a check:
 *
 *   - the policy (policy.c): a pure function from (verdict, reason, node state, current reason,
 *     configuration) to one action (nothing, drain, resume), with the why in words. It is the one
 *     place the ownership rules live: vigil resumes only nodes whose reason starts with "vigil:",
 *     never relabels or resumes a node someone else drained, and leaves down, rebooting,
 *     maintenance and powered-off nodes alone;
 *   - the commands (slurm.c): scontrol, sinfo and srun run from an argv (src/lib/run.h: no
 *     shell, own process group, a deadline each), so a node name or reason holding quotes, ';',
 *     '$()' or newlines is only ever an argument, and a hung scontrol (at slurmd start-up) costs
 *     at most its deadline.
 *
 * Ownership: struct slurm_node owns its strings; slurm_node_release() frees them. struct
 * slurm_nodes owns its array; slurm_nodes_release() frees all of it.
 */
#ifndef VIGIL_SLURM_H
#define VIGIL_SLURM_H

#include "../lib/config.h"
#include "../lib/strbuf.h"
#include "../core/report.h"

/* Prefix of every drain reason vigil sets; vigil owns exactly the nodes whose reason has it. */
#define SLURM_REASON_PREFIX "vigil:"

/* State flags of a node, from scontrol's "State=BASE+FLAG+FLAG" (base states count as flags). */
enum {
	NODE_IDLE = 1u << 0,
	NODE_ALLOCATED = 1u << 1,
	NODE_MIXED = 1u << 2,
	NODE_DOWN = 1u << 3,
	NODE_DRAIN = 1u << 4,
	NODE_NOT_RESPONDING = 1u << 5,
	NODE_MAINT = 1u << 6,
	NODE_REBOOT = 1u << 7,     /* REBOOT_REQUESTED, REBOOT_ISSUED */
	NODE_POWER = 1u << 8,      /* POWERED_DOWN, POWERING_DOWN, POWER_DOWN, POWERING_UP */
	NODE_FUTURE = 1u << 9,
	NODE_FAIL = 1u << 10,
	NODE_UNKNOWN = 1u << 11,   /* base state UNKNOWN: not registered yet */
	NODE_COMPLETING = 1u << 12,
	NODE_OTHER = 1u << 13,     /* a flag this version of vigil does not know */
};

struct slurm_node {
	char *name;
	char *state;      /* as scontrol prints it: "IDLE+DRAIN" */
	unsigned flags;   /* NODE_* */
	char *reason;     /* "" when none (without the " [user@time]" Slurm appends) */
	char *partitions; /* comma-separated, "" when none */
	char *addr;       /* NodeAddr: where its daemons are reached ("" when not said) */
};

struct slurm_nodes {
	struct slurm_node *items;
	size_t nr, alloc;
};

/* Flags from a state string ("MIXED+DRAIN", "IDLE*", "DOWN*+DRAIN"). */
unsigned slurm_state_flags(const char *state);
/* The state in sinfo's words for a table: "idle", "drained", "draining", "down*", ... */
const char *slurm_state_short(unsigned flags);

/* Parse 'scontrol -o show node' output (one node a line). Returns 0, or -1 with *err when a line
 * has no NodeName. */
int slurm_parse_nodes(const char *text, struct slurm_nodes *out, struct strbuf *err);
void slurm_node_release(struct slurm_node *n);
void slurm_nodes_release(struct slurm_nodes *l);

/* A Slurm node name vigil will hand to scontrol: letters, digits, '-', '_', '.', at most 64
 * characters. Anything else (a hostlist "n[1-4]", a ',' list, quotes, spaces) is refused, so one
 * node's health can never drain several nodes. */
bool slurm_node_name_ok(const char *name);

/* ---- policy (pure) ---- */

enum slurm_on_unknown { SLURM_UNKNOWN_NOTHING, SLURM_UNKNOWN_DRAIN };

struct slurm_policy {
	enum slurm_on_unknown on_unknown;
};

enum slurm_act { SLURM_ACT_NOTHING, SLURM_ACT_DRAIN, SLURM_ACT_RESUME };

struct slurm_decision {
	enum slurm_act act;
	char reason[128];  /* for DRAIN: the full reason to set ("vigil: ...") */
	const char *why;   /* one line for the log: why this action (static string) */
};

/* Read slurm.on-unknown from the configuration: 0, or -1 with *err on a bad value. */
int slurm_policy_from_config(const struct config *cfg, struct slurm_policy *p, struct strbuf *err);
/* node == NULL means its state could not be read: then nothing is changed. */
void slurm_decide(enum verdict v, const char *report_reason, const struct slurm_node *node,
		  const struct slurm_policy *p, struct slurm_decision *out);
const char *slurm_act_name(enum slurm_act a);
/*
 * The drain of a host that `vigil run` excludes from its run (reason "vigil: ..."): drain it
 * unless someone else drained it (their reason is kept) or it is in maintenance, rebooting or
 * powered off. Unlike slurm_decide(), a down or not-responding node is drained too: a host lost
 * in the middle of a run must not return to service by itself when its slurmd comes back
 * (ReturnToService), before someone has looked at it.
 */
void slurm_decide_exclude(const char *reason, const struct slurm_node *node,
			  struct slurm_decision *out);

/* ---- commands ---- */

struct slurm_cmds {
	const char *scontrol, *sinfo, *srun; /* programs, looked up in PATH unless absolute */
	unsigned timeout_ms;                 /* deadline of each scontrol/sinfo call */
	/* The caller's budget: no call runs past this monotonic time (mono_ms(); 0: none), so a
	 * call's deadline is the earlier of timeout_ms and what is left of it. budget_name says
	 * what the budget is in messages ("--timeout 30"). */
	uint64_t deadline_ms;
	const char *budget_name;
};

/* slurm.scontrol, slurm.sinfo, slurm.srun, slurm.timeout (seconds, default 10); the rest of *c
 * is cleared (no budget). */
int slurm_cmds_from_config(const struct config *cfg, struct slurm_cmds *c, struct strbuf *err);

/* State and reason of one node ('scontrol -o show node NAME'). 0, or -1 with *err (the command
 * failed, timed out, or the node is not known). */
int slurm_node_get(const struct slurm_cmds *c, const char *name, struct slurm_node *out,
		   struct strbuf *err);
/* 'scontrol show topology' into *out: the tree plugin's "SwitchName=leaf1 Level=0 LinkSpeed=1
 * Nodes=n[1-2]" lines, the block plugin's "BlockName=b1 BlockIndex=0 Nodes=..."; empty when
 * the cluster has none (scontrol then says so on stderr and exits 0). */
int slurm_topology(const struct slurm_cmds *c, struct strbuf *out, struct strbuf *err);
/* Every node, or those of a hostlist expression (NULL: all). */
int slurm_nodes_list(const struct slurm_cmds *c, const char *hostlist, struct slurm_nodes *out,
		     struct strbuf *err);
/* Carry out a decision on a node: DRAIN with its reason, or RESUME. NOTHING does nothing. */
int slurm_apply(const struct slurm_cmds *c, const char *name, const struct slurm_decision *d,
		struct strbuf *err);

#endif
