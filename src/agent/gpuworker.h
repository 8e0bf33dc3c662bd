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
 * agent cannot reap a process that is still running to count it.
 *
 * Ownership: struct gpu_worker borrows def and the ctx it was started with (cfg, strings); they
 * must outlive it. gpu_worker_release() stops the worker and frees the rest.
 */
#ifndef VIGIL_AGENT_GPUWORKER_H
#define VIGIL_AGENT_GPUWORKER_H

#include "../checks/check.h"

#include <sys/types.h>

struct gpu_worker_unreaped;

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
};

void gpu_worker_init(struct gpu_worker *w, const struct check_def *def,
		     const struct check_ctx *ctx);
/* Stop the worker (EOF on its pipe, then SIGKILL to its group) and free. */
void gpu_worker_release(struct gpu_worker *w);
/* Ask for one run (starting a worker if none runs); 0, or -1 with *err (no worker could start). */
int gpu_worker_send(struct gpu_worker *w, double now, unsigned timeout_ms, struct strbuf *err);
/* Wait for the answer until the deadline and fill res (check_result_init'ed by the caller). */
void gpu_worker_wait(struct gpu_worker *w, struct check_result *res);
/* CPU seconds of every worker so far, as they said. */
double gpu_worker_cpu(const struct gpu_worker *w);

#endif
