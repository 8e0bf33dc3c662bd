/*
 * ibrun.h: running perftest for 'vigil net ib' and 'vigil fabric burnin run': this host's HCAs
 * and GPUs, one side of a host-pair test (server or client, every HCA), and a pair of hosts
 * through srun (a server step on one, a client step on the other, vigil itself on both).
 * Every child runs through src/lib/run.h with a deadline; a hung ib_write_bw (a peer that never
 * comes) is killed and said so by name. What the figures mean is perftest.h's.
 *
 * Ownership: struct ib_side owns its hcas array (ib_side_release()); options are borrowed.
 */
#ifndef VIGIL_FABRIC_IBRUN_H
#define VIGIL_FABRIC_IBRUN_H

#include "perftest.h"
#include "../lib/strlist.h"
#include "../lib/run.h"
#include "../sys/fsroot.h"

#define IB_DEFAULT_PORT 18515 /* perftest's own default TCP port */

struct ib_opts {
	const struct fsroot *root;  /* where /sys/class/infiniband and /proc/driver/nvidia are */
	const char *hcas;           /* "mlx5_0,mlx5_3:1"; NULL: every HCA under the root */
	const char *peer;           /* client: the server's host; NULL: this side serves */
	const char *gpus;           /* GPUs to pair with the HCAs in order ("0,1,2"); NULL: all */
	bool no_cuda;               /* host memory even where a GPU is */
	bool latency;               /* ib_read_lat after ib_write_bw */
	unsigned port;              /* HCA i: bandwidth on port + 2i, latency on port + 2i + 1 */
	unsigned duration_s;        /* ib_write_bw -D */
	uint64_t size;              /* ib_write_bw -s */
	unsigned timeout_ms;        /* deadline of one test on the client */
	unsigned connect_wait_ms;   /* the client retries a refused connection this long */
	const char *bw_prog, *lat_prog; /* "ib_write_bw", "ib_read_lat" */
};

void ib_opts_init(struct ib_opts *o);

struct ib_side {
	struct pt_hca *hcas;
	size_t nr;
	bool server;
	bool have_out_json;  /* this perftest writes --out_json */
	char problem[320];   /* why nothing could be measured at all ("" when something was) */
	char problem_code[32]; /* "no_hca", "perftest_missing" */
};

void ib_side_release(struct ib_side *s);

/*
 * The HCAs to test: list (as --hca) or every entry of /sys/class/infiniband under the root.
 * 0, or -1 with *err (the directory cannot be listed, is missing, is empty, or a name is bad).
 */
int ib_list_hcas(const struct fsroot *root, const char *list, struct strlist *out,
		 struct strbuf *err);
/* The GPUs of this host from /proc/driver/nvidia/gpus under the root: how many (0: none). */
size_t ib_count_gpus(const struct fsroot *root);

/*
 * Run one side: every HCA's tests, servers all at once (each waits for its client), clients one
 * HCA after the other. Never fails: what could not be done is in s (problem, or per HCA).
 */
void ib_side_run(const struct ib_opts *o, struct ib_side *s);
/* Findings for a side into res (pt_evaluate per HCA on a client, "ib_served" on a server). */
void ib_side_evaluate(const struct ib_side *s, const struct pt_floors *f,
		      struct check_result *res);

/*
 * A pair through srun: argv for the server step on host b and the client step on host a, each
 * "srun -N1 -n1 --overlap -w HOST -- VIGIL net ib ...". extra: options both sides get (--hca is
 * per side). Node names are argv items, never through a shell.
 */
void ib_pair_argv(struct strlist *out, const char *srun, const char *vigil, const char *host,
		  bool server, const char *peer, const char *hca, const struct strlist *extra);

/* How a host pair's bandwidth came out, from the client's report. */
enum ib_verdict { IBV_OK, IBV_SLOW, IBV_ERROR, IBV_UNKNOWN };
const char *ib_verdict_name(enum ib_verdict v);

/*
 * One host pair through srun: a server step on b (its HCA b_hca), a client step on a (a_hca)
 * that connects to b. The caller adds srv and cli to a run group (or runs them), then calls
 * ib_pair_judge(). Strings are borrowed; ib_pair_release() frees the rest.
 */
struct ib_pair {
	const char *a, *a_hca, *b, *b_hca;
	struct strlist srv_argv, cli_argv;
	struct child srv, cli;
	char srv_start_error[256], cli_start_error[256];
	/* filled by ib_pair_judge() */
	enum ib_verdict verdict;
	double bw_gbps;      /* when measured, else -1 */
	char message[400];   /* the client's (or the server's, or srun's) word on it, clean */
};

/* extra: options both sides get (--duration ..., --port P, --no-latency); timeout_ms: each
 * srun step's deadline. */
void ib_pair_setup(struct ib_pair *p, const char *srun, const char *vigil,
		   const struct strlist *extra, unsigned timeout_ms);
void ib_pair_release(struct ib_pair *p);
/* Read the client's JSON report into the verdict; its findings (device "HOST mlx5_0") and
 * the server's problems are added to res when res is not NULL. */
void ib_pair_judge(struct ib_pair *p, struct check_result *res);

#endif
