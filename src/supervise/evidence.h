/*
 * evidence.h: what the stacks of a hung or slow attempt say (docs/SUPERVISOR.md, "Evidence"): the judging
 * side of 'vigil stacks' (stacks.h gathers on each host; the supervisor collects every host's
 * JSON and calls this). Pure: no clock, no I/O; garbage in any host's output is "no answer",
 * never a crash, and costs bounded memory.
 *
 * The rules (docs/SUPERVISOR.md, "Evidence"):
 * - A Python stack (a faulthandler dump) is normalised per thread to its frames `FILE in FUNC`,
 *   line numbers dropped. A rank's signature is its main thread's: the thread whose bottom
 *   (outermost) frame is `<module>` (the script's top level); among several, the one faulthandler
 *   marks "Current thread"; with none, the current thread; else the first. Native stacks
 *   (eu-stack) are normalised to the function names of the thread whose TID is the pid (symbol
 *   versions dropped, unnamed frames "??").
 * - Ranks with equal signatures form a group; the majority is the group strictly larger than
 *   every other (a tie: no majority, and nobody differs).
 * - A rank is a suspect when: its main thread was stopped (T) in more than half the samples
 *   (frozen, as by SIGSTOP); its stack differs from the majority's (Python stacks when any rank
 *   gave one, else native ones); it gave no Python stack while others did (unless stopped);
 *   its busy share ((R + D + T) ÷ samples) is over the median rank's + busy_margin [0.3] and
 *   at least 0.5 (unless stopped); its last output line is over silent_margin_s [1 s] before
 *   the median rank's (it went silent first). A host is a suspect when its output is missing
 *   or not vigil stacks' JSON, or when a rank launched there (rank_hosts) was not found.
 */
#ifndef VIGIL_EVIDENCE_H
#define VIGIL_EVIDENCE_H

#include "../lib/strbuf.h"
#include "../lib/strlist.h"

/* Bounds: one host's output, the ranks of all hosts, the groups listed in the JSON. */
#define EVIDENCE_OUTPUT_MAX (8u << 20)
#define EVIDENCE_RANKS_MAX 16384
#define EVIDENCE_GROUPS_LISTED 32

/* One host's answer: the stdout of its 'vigil stacks --json'; output NULL when none came. */
struct evidence_host {
	const char *host;
	const char *output;
	size_t len;
};

struct evidence_input {
	const struct evidence_host *hosts;
	size_t hosts_nr;
	/* per rank (index = rank), the supervisor's time of its last output line; negative or NaN:
	 * unknown. NULL when none is known. */
	const double *last_output;
	size_t last_output_nr;
	/* per rank, the host it was launched on; NULL entries or NULL: unknown */
	const char *const *rank_hosts;
	size_t rank_hosts_nr;
	double now;		/* on last_output's clock */
	long world_size;	/* 0: unknown */
	double silent_margin_s; /* 0: 1.0 */
	double busy_margin;	/* 0: 0.3 */
	/* a hang: the innermost Python frame keeps its line number in the signature. Ranks
	 * blocked in one collective are at one line; the rank that never entered it may be in
	 * the same function at another (on an H200: the victim in main at its loss.item(), the
	 * culprit in main at a sleep, one group without lines). While ranks run (a slowdown),
	 * lines move from sample to sample and are left out. */
	bool hang;
};

enum { EVIDENCE_R, EVIDENCE_S, EVIDENCE_D, EVIDENCE_T, EVIDENCE_NSTATES };

struct evidence_rank {
	long rank, pid;
	char *host;
	unsigned samples, states[EVIDENCE_NSTATES];
	double cpu_s, busy;	   /* busy: (R + D + T) / samples, 0 without samples */
	bool gpu;		   /* it maps libcuda (vigil stacks' "gpu"): a CUDA rank spins
				    * while it waits for its GPU, so its busy share is no evidence */
	int py_group, native_group; /* index in the groups, -1: no stack */
	double last_output;	   /* NAN when unknown */
	bool doubt;		   /* claimed twice (on a host or across hosts): its evidence is
				    * unknown, never judged */
};

struct evidence_group {
	char *signature; /* frames, innermost first, one a line (cleaned) */
	char *top;	 /* "FUNC (FILE)" of the innermost frame, for sentences */
	long *ranks;	 /* ascending */
	size_t nr, alloc;
	struct strlist hosts;
};

struct evidence_suspect {
	long rank; /* -1: the host as a whole */
	char *host;
	struct strlist reasons;
};

struct evidence_host_status {
	char *host;
	bool answered;
	char *why; /* when not answered, or what was wrong in its output; NULL */
	size_t ranks;
	char *doubt; /* why its evidence is doubtful, NULL when it is not (below) */
};

struct evidence {
	struct evidence_host_status *hosts;
	size_t hosts_nr;
	struct evidence_rank *ranks; /* ascending by rank, each rank once */
	size_t ranks_nr, ranks_alloc;
	struct evidence_group *py, *native; /* largest first */
	size_t py_nr, native_nr;
	int py_majority, native_majority; /* -1: none */
	long *missing;			  /* ranks below world_size that no host reported */
	size_t missing_nr;
	struct evidence_suspect *suspects;
	size_t suspects_nr, suspects_alloc;
	struct strlist silent_first; /* hosts that went silent first */
	struct strlist suspect_hosts; /* what the supervisor confirms and may drain */
	/*
	 * Hosts whose evidence is doubtful (docs/SECURITY.md): processes that named the attempt but were
	 * not of the job were ignored there, a rank was claimed twice, the ranks could not be tied
	 * to the attempt's step, or the answer does not say what its ranks were checked against
	 * (an older vigil). Nothing found on such a host drains it without a smoke confirmation.
	 */
	struct strlist doubtful_hosts;
	/* the median busy share of the sampled ranks not on a GPU (0 with none): the bar of the
	 * busy rule here and of the drain in collect.c */
	double busy_median;
	struct strbuf summary;	      /* one paragraph, under 1 KiB, for the journal */
	struct strbuf json;	      /* for ATTEMPT/evidence.json */
};

void evidence_init(struct evidence *e);
/* Judge the input into e (evidence_init'ed; filled afresh). Cannot fail. */
void evidence_build(struct evidence *e, const struct evidence_input *in);
void evidence_release(struct evidence *e);

#endif
