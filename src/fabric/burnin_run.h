/*
 * burnin_run.h: what 'vigil fabric burnin run' reads and decides. The plan (the JSON of
 * 'vigil fabric burnin plan --json'), the IB port counters each host reported ('vigil net ib
 * --counters --json'), and the judgement once the stages ran: each host port (its error
 * counters rose during a stage: bad), each link (every pair across it slow: suspect; a link that
 * also carried good pairs is cleared), each HCA (every pair it was in was bad while its partners
 * did well elsewhere: suspect). Pure; src/cmd/fabric_burnin_run.c runs the stages.
 *
 * Ownership: struct br_plan owns everything in it (br_plan_release()); so does struct
 * br_counters (br_counters_release()).
 */
#ifndef VIGIL_FABRIC_BURNIN_RUN_H
#define VIGIL_FABRIC_BURNIN_RUN_H

#include "ibrun.h"
#include "../checks/infiniband.h"

struct br_link {
	char *id, *a, *a_hca, *b; /* a_hca: set when a is a host (the host's end of its cable) */
	int a_port, b_port;
};

struct br_pair {
	char *a, *a_hca, *b, *b_hca;
	struct strlist links;
	/* filled once the stage ran */
	bool ran;
	enum ib_verdict verdict;
	double bw_gbps; /* -1: not measured */
	char *message;
};

struct br_stage {
	int stage;
	struct br_pair *pairs;
	size_t nr;
	bool ran;
};

struct br_plan {
	struct br_link *links;
	size_t nr_links;
	struct br_stage *stages;
	size_t nr_stages;
};

/* Parse a plan. 0, or -1 with *err naming what is wrong ("stage 2 pair 3: no 'b_hca'"). Host
 * and HCA names must be plain names (no spaces, no leading '-'): they go into srun argv. */
int br_plan_parse(const char *text, size_t len, struct br_plan *p, struct strbuf *err);
void br_plan_release(struct br_plan *p);

/* One host's port counters as 'vigil net ib --counters --json' prints them. */
struct br_port_reading {
	char hca[64];
	unsigned port;
	bool have[IBC__COUNT];
	uint64_t counter[IBC__COUNT];
};
struct br_counters {
	bool ok;            /* read and understood */
	char error[256];    /* why not */
	struct br_port_reading *ports;
	size_t nr;
};
/* 0, or -1 with *err; c->ok is set on success. */
int br_counters_parse(const char *text, size_t len, struct br_counters *c, struct strbuf *err);
void br_counters_release(struct br_counters *c);

/* A host's readings around one stage, handed to br_judge. */
struct br_host_stage {
	const char *host;
	int stage;
	struct br_counters before, after;
};

enum br_verdict { BRV_OK, BRV_UNTESTED, BRV_UNKNOWN, BRV_SUSPECT, BRV_BAD };
const char *br_verdict_name(enum br_verdict v);

/* The judgement, written as JSON and text. */
struct br_judgement {
	struct strbuf json, text;
	int exit_code; /* 0 nothing to act on, 1 something, 3 could not tell */
};

void br_judge(const struct br_plan *p, const struct br_host_stage *hs, size_t nr_hs,
	      struct br_judgement *j);
void br_judgement_release(struct br_judgement *j);

#endif
