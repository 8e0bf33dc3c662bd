/*
 * engine.h: the active tests' runners, below the commands: run a CUDA helper under its deadline
 * into parsed results (struct gs_run, np_run, nc_run) and a struct gs_end, and the sequence of
 * 'vigil check --deep'. The commands (src/cmd/stress.c, net.c, check.c) only parse options,
 * call these and print; the verdicts stay the pure functions of gpu_stress.c and net.c.
 *
 * progress_fd: a descriptor the helper writes progress lines to for a person (-1: none); the
 * command decides (a terminal on stderr).
 *
 * Ownership: desc and why (caller's strbufs) keep the strings that end->describe and
 * end->why_not point to; release them after the end is no longer used.
 */
#ifndef VIGIL_STRESS_ENGINE_H
#define VIGIL_STRESS_ENGINE_H

#include "determinism.h"
#include "gpu_stress.h"
#include "helper.h"
#include "net.h"
#include "../lib/config.h"

/* Fill e from a finished helper run (desc keeps the description alive). */
void engine_end(struct gs_end *e, const struct helper_out *ho, struct strbuf *desc);

/* Find helper name and run it with args under timeout_ms: 0 with ho holding its lines and end
 * how it ended, or -1 with end->why_not saying why it could not run (why keeps that string). */
int engine_run_helper(const char *name, const char *const *args, unsigned timeout_ms,
		      int progress_fd, struct helper_out *ho, struct gs_end *end,
		      struct strbuf *desc, struct strbuf *why);

/* vigil-gpu stress with args (without the program): parse into run, names of other processes
 * filled in from /proc where the helper could not read them. */
void engine_stress(const char *const *args, unsigned timeout_ms, int progress_fd,
		   struct gs_run *run, struct gs_end *end, struct strbuf *desc, struct strbuf *why);

/* vigil-gpu determinism with args (without the program), parsed into run. */
void engine_determinism(const char *const *args, unsigned timeout_ms, int progress_fd,
			struct det_run *run, struct gs_end *end, struct strbuf *desc,
			struct strbuf *why);

/* The reference digests from path, or when path is NULL from DET_REF_FILE where the helpers are
 * looked for. A file that cannot be read or parsed leaves refs empty with refs->why_none set
 * (the cross-check is then unknown, never a failure); a missing default file likewise. */
#define DET_REF_FILE "determinism-ref.tsv"
void engine_det_refs(const char *path, struct det_refs *refs);

/* vigil-gpu pairs (bytes in MiB, reps; gpus may be NULL). */
void engine_pairs(unsigned mib, unsigned reps, const char *gpus, int progress_fd,
		  struct np_run *run, struct gs_end *end, struct strbuf *desc, struct strbuf *why);

/* vigil-nccl with args; its ranks do not watch for other processes, so 'vigil-gpu procs' is
 * asked before and after into procs (left empty when it cannot say: procs->watch says why). */
void engine_nccl(const char *const *args, unsigned timeout_ms, int progress_fd,
		 struct nc_run *run, struct gs_procs *procs, struct gs_end *end,
		 struct strbuf *desc, struct strbuf *why);

/* The GPU model the first GPU of a run named, or NULL. */
const char *engine_model(const struct gs_run *r);

/*
 * 'vigil check --deep': after the passive checks already in rep, a short 'stress gpu' of
 * seconds, then on two or more GPUs 'net pairs' and an all_reduce, all into rep. When the
 * passive gpu check in rep found no GPU and no driver, nothing runs and one skipped "stress"
 * result says so, so that 'check' and 'check --deep' agree on a host with no GPU.
 */
void engine_deep(const struct config *cfg, double seconds, int progress_fd, struct report *rep);

#endif
