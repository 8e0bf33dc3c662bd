/*
 * net.h: 'vigil net nccl' and 'vigil net pairs' results, parsed from the helpers' JSON lines
 * (vigil-nccl, vigil-gpu pairs), and their pure evaluation into findings.
 *
 * NCCL: every rank prints its own line per size; the evaluation groups them by (op, bytes):
 * the slowest rank's time gives algbw and busbw (what the collective as a whole achieved), wrong
 * elements add up, and a size some rank did not report on is a size that did not complete.
 * A timeout line names the ranks that did not complete and those that never entered (the
 * suspects). Pairs: one finding per ordered GPU pair against the floor and the other pairs.
 *
 * Ownership: struct nc_run and struct np_run own everything in them; *_release() frees it.
 */
#ifndef VIGIL_STRESS_NET_H
#define VIGIL_STRESS_NET_H

#include "gpu_stress.h"

struct nc_row {
	char op[24];
	int rank, nranks, gpu;
	uint64_t bytes;
	double time_us, algbw, busbw;
	uint64_t wrong;
};

struct nc_timeout {
	char op[24];
	uint64_t bytes;
	int rank;
	double waited_s;
	int *incomplete, *not_entered;
	size_t nr_incomplete, nr_not_entered;
	bool has_not_entered;
};

struct nc_exit {
	int rank, gpu;
	char status[16]; /* exited, signaled, killed, not started */
	int code, signal;
};

struct nc_run {
	bool started;
	char mode[24];    /* local, single-process, rank */
	int nranks, rank; /* rank: the one this process ran, -1 for all */
	int nccl_version;
	char gpu_name[96];  /* of the first rank that said */
	struct nc_row *rows;
	size_t nr_rows, alloc_rows;
	struct nc_timeout *timeouts;
	size_t nr_timeouts, alloc_timeouts;
	struct nc_exit *exits;
	size_t nr_exits, alloc_exits;
	char **errors;    /* "code: message" of error lines */
	size_t nr_errors, alloc_errors;
	bool no_gpu;
	bool ended;
};

/* One size of one collective, all ranks together. */
struct nc_size {
	char op[24];
	uint64_t bytes;
	int ranks_reported;
	double time_us, algbw, busbw; /* from the slowest rank */
	uint64_t wrong;
};

void nc_run_init(struct nc_run *r);
void nc_run_release(struct nc_run *r);
int nc_run_parse(struct nc_run *r, const struct json_value *const *lines, size_t nr,
		 struct strbuf *err);
/* Group rows by (op, bytes) in the order they first appear. Returns the count; *out malloc'ed. */
size_t nc_sizes(const struct nc_run *r, struct nc_size **out);

/* Limits: busbw_floor applies to all_reduce sizes >= busbw_floor_min_bytes, and only when the
 * ranks are on this one host (local and single-process modes) unless the floor was configured
 * (floor_configured). */
void nccl_evaluate(const struct nc_run *r, const struct gs_end *end, const struct stress_limits *lim,
		   bool floor_configured, struct report *rep);

struct np_pair {
	int src, dst;   /* for a both-ways row: a and b */
	bool bidir;
	bool p2p;
	uint64_t bytes;
	double gbps;
	int64_t miscompares; /* -1: not verified */
};

struct np_run {
	bool started;
	struct gs_gpu *gpus; /* identity only (index, name, pci) */
	size_t nr_gpus, alloc_gpus;
	struct np_pair *pairs;
	size_t nr, alloc;
	char *error_code, *error;
	bool ended;
	struct gs_procs procs; /* other compute processes on the GPUs, start to end */
};

void np_run_init(struct np_run *r);
void np_run_release(struct np_run *r);
int np_run_parse(struct np_run *r, const struct json_value *const *lines, size_t nr,
		 struct strbuf *err);
void pairs_evaluate(const struct np_run *r, const struct gs_end *end,
		    const struct stress_limits *lim, struct report *rep);

#endif
