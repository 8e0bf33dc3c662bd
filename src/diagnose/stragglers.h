/*
 * stragglers.h: 'vigil diagnose stragglers' as a pure function. In synchronous training every
 * rank waits for the slowest, so step times are the same everywhere; a rank's compute time (its
 * time outside collectives) is what names the slow host. Per step, each rank's robust z-score
 * across ranks; per host, the median of its ranks'; a host is a straggler when the median of
 * that over a window of steps stays above a threshold. docs/DIAGNOSE.md has the numbers.
 */
#ifndef VIGIL_DIAGNOSE_STRAGGLERS_H
#define VIGIL_DIAGNOSE_STRAGGLERS_H

#include "rows.h"

#define DIAG_Z_SLOW 3.0          /* a window's median z above this: slow */
#define DIAG_SLOW_MIN 0.03       /* and at least 3 % slower than the median rank */
#define DIAG_STRAGGLERS_KEPT 64
#define DIAG_MIN_GROUPS 3         /* hosts (or ranks) with times: fewer cannot be told apart */

struct diag_straggler {
	uint32_t host;         /* index into the rows' hosts, or a rank when rows have no host */
	bool by_rank;
	uint64_t since_step;   /* the first step of the first slow window */
	uint64_t until_step;   /* the last step of the last slow window */
	bool recovered;        /* its last window is not slow */
	double slower;         /* median share slower than the median rank over its slow windows */
	double z;              /* median z over its slow windows */
	size_t slow_windows, windows;
};

/* One host's (or rank's) step times against each step's median rank, for the page: the share
 * slower (0.1 = 10 % slower; negative: faster) at its 10th, 25th, 50th, 75th and 90th
 * percentiles over the steps it was in. */
struct diag_group_dist {
	uint32_t host; /* as diag_straggler.host */
	bool by_rank;
	bool straggler;
	size_t n;
	double q[5];
};
#define DIAG_DIST_KEPT 64

struct diag_stragglers {
	size_t rows, steps, ranks, hosts, used_steps, duplicates;
	size_t window;         /* steps a window */
	bool compute;          /* compute_time (else per-rank step_time) */
	uint64_t first_step, last_step;
	struct diag_straggler s[DIAG_STRAGGLERS_KEPT];
	size_t nr;
	/* every group's distribution, slowest median first; the DIAG_DIST_KEPT slowest kept
	 * (dist_total counts them all) */
	struct diag_group_dist dist[DIAG_DIST_KEPT];
	size_t dist_nr, dist_total;
};

/* 0 with *out filled (nr 0: no host stands out); -1 with *err when it cannot tell (no rank or
 * host column, no compute_time or step_time, fewer than 3 ranks a step, too few steps). */
int diag_stragglers_analyse(const struct diag_rows *rows, struct diag_stragglers *out,
			    struct strbuf *err);
void diag_stragglers_text(const struct diag_stragglers *s, const struct diag_rows *rows,
			  const char *file, struct strbuf *out);
void diag_stragglers_json(const struct diag_stragglers *s, const struct diag_rows *rows,
			  const char *file, struct strbuf *out);
/* a straggler's name: the host, or "rank N" */
void diag_straggler_name(const struct diag_straggler *g, const struct diag_rows *rows,
			 struct strbuf *out);

#endif
