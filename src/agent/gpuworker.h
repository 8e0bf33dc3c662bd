/*
 * gpuworker.h: the agent's long-lived gpu worker, a child process that keeps NVML loaded and
 * initialised and runs the gpu check when asked.
 *
 * Why: on an H200 host NVML's start and stop and its first round of queries cost ~37 ms of CPU
 * each time the gpu check runs in a fresh process; the worker pays them once. Why a process and
 * not a thread: an NVML call can block in the driver for minutes, and only a process (group) can
 * be killed. So the agent sends "run now" over a pipe, waits for the result JSON until the
 * check's deadline, and on a miss kills the worker's process group, reports the gpu check
 * unknown "timed out" (as the runner does for any check), and starts a new worker next cycle.
 * A worker that crashes is unknown the same way ("the gpu worker ended ..."), then restarted.
 *
 * Protocol (private to this file): request "NOW TIMEOUT_MS\n"; answer "CPU_S LEN\n" and LEN bytes
 * of one check result as JSON, CPU_S being the worker's own CPU so far (getrusage), since the
 * agent cannot reap a process that is still running to count it. Before it, once NVML is open,
 * "E LEN\n" and a drain of NVML's Xid events as JSON (xidwatch.h); request "D\n" is answered
 * with a drain alone. With telemetry on, before the result, "T LEN\n" and what the gpu check's
 * NVML read said (telemetry.h), kept for gpu_worker_metrics().
 *
 * Ownership: struct gpu_worker borrows def and the ctx it was started with (cfg, strings); they
 * must outlive it. gpu_worker_release() stops the worker and frees the rest.
 */
#ifndef VIGIL_AGENT_GPUWORKER_H
#define VIGIL_AGENT_GPUWORKER_H

#include "../checks/check.h"

#include <sys/types.h>

struct gpu_worker_unreaped;
struct xid_watch;
struct report;

struct gpu_worker {
	const struct check_def *def;
	struct check_ctx ctx;     /* a template: now and timeout_ms come with each request */
	pid_t pid;                /* 0: none running */
	int req_fd, resp_fd;
	bool pending;             /* a request sent and not answered yet */
	uint64_t deadline_ms;     /* of the pending request (mono_ms) */
	unsigned timeout_ms;
	uint64_t sent_ms;
	double cpu_ended_s;       /* CPU of workers that ended, as they last said */
	double cpu_now_s;         /* the running worker's CPU, as it last said */
	unsigned starts, timeouts;
	struct gpu_worker_unreaped *unreaped; /* killed, not reaped yet (stuck in the kernel) */
	size_t nr_unreaped;
	/* NVML's Xid record (xidwatch.h), loaded at first use from STATE_DIR/nvml-xid.json; NULL
	 * with xw_off when there is no boot id. Kept here, not in the worker: it survives any. */
	struct xid_watch *xw;
	char *xw_path;
	bool xw_off;
	/* Per-GPU telemetry in the metrics (agent.gpu-telemetry; set after gpu_worker_init()). */
	bool telemetry;
};

void gpu_worker_init(struct gpu_worker *w, const struct check_def *def,
		     const struct check_ctx *ctx);
/* Stop the worker (EOF on its pipe, then SIGKILL to its group) and free. */
void gpu_worker_release(struct gpu_worker *w);
/* Ask for one run (starting a worker if none runs); 0, or -1 with *err (no worker could start). */
int gpu_worker_send(struct gpu_worker *w, double now, unsigned timeout_ms, struct strbuf *err);
/* Wait for the answer until the deadline and fill res (check_result_init'ed by the caller). */
void gpu_worker_wait(struct gpu_worker *w, struct check_result *res);
/*
 * Ask the running worker (between runs) for what NVML queued, and merge it into the record:
 * 0, or -1 (no worker, no record, or it did not answer within the gpu check's timeout, at most
 * 3 s: then it is killed, and a new one starts at the next run; what earlier drains said is kept).
 */
int gpu_worker_drain(struct gpu_worker *w);
/*
 * After a cycle's checks ran (the kernel log read): take a last drain, then weigh rep's Xid
 * findings against NVML's record (xidwatch_judge()). Returns how many findings changed or were
 * added; the caller runs report_finish(). Nothing happens without a worker (def NULL) or a
 * boot id; a drain that could not be taken leaves the record as earlier drains made it.
 */
unsigned gpu_worker_xid_judge(struct gpu_worker *w, struct report *rep);
/*
 * The per-GPU telemetry families (telemetry.h) as the last answer with telemetry said, for
 * /metrics: safe from any thread (one record per process, under its own lock, so a reload
 * that starts the worker anew never races a scrape). Nothing before a first read, nor once a
 * worker without telemetry was started.
 */
void gpu_worker_metrics(struct strbuf *out);
/*
 * A fresh NVML reading as snapshot text (snapshot.h), appended to out: request "S 0" (or "S 1":
 * NVLink error counters left unread), answer "S LEN" and the snapshot, or "X LEN" and why there is
 * none (no NVML on this host). For GET /gpu-reading on the agent's socket, through a worker of its
 * own (never the cycle's: one pipe, one asker). 0, or -1 with *err (busy, no answer within
 * timeout_ms: the worker is then killed and a new one starts at the next request).
 */
int gpu_worker_reading(struct gpu_worker *w, bool skip_counters, unsigned timeout_ms,
		       struct strbuf *out, struct strbuf *err);
/* Start the worker if none runs (the fork alone, for a caller that must step out of the fork
 * gate around it: forkgate.h). 0, or -1 with *err. */
int gpu_worker_ready(struct gpu_worker *w, struct strbuf *err);
/* CPU seconds of every worker so far, as they said. */
double gpu_worker_cpu(const struct gpu_worker *w);

#endif
