/*
 * gpu_agent.h: `vigil check`'s gpu reading from the agent's gpu worker (GET /gpu-reading on the
 * agent's Unix socket, src/agent/http.h) instead of starting NVML in this process: NVML's start
 * is ~40 ms of CPU on an H200, almost all of a check; the agent keeps it started.
 *
 * Trust: the answer decides a host's verdict, so it is taken only from a socket that root or
 * this user owns (lstat: a symbolic link at the path is not followed, whoever planted it) and
 * whose listening peer runs as root or as this user (SO_PEERCRED, which also defeats a link
 * swapped in between the two steps); only an answer about the same root (its first line) is
 * used. Anything else is refused with the reason, and the check reads NVML itself.
 */
#ifndef VIGIL_CHECK_GPU_AGENT_H
#define VIGIL_CHECK_GPU_AGENT_H

#include "check.h"
#include "../gpu/nvml.h"

/* How long `vigil check` waits for the agent's answer before it reads NVML itself. */
#define GPU_AGENT_DEADLINE_MS 2000u
#define GPU_AGENT_ANSWER_CAP (8u << 20)

/*
 * Ask the agent at ctx->agent_socket for a reading (without the NVLink error counters when
 * skip_counters) into h. 0: h holds it; -1: not used, *why says why ("no agent socket at ...",
 * "owned by uid 1000", "stale: nobody listens", ...).
 */
int gpu_agent_reading(const struct check_ctx *ctx, bool skip_counters, struct nvml_host *h,
		      struct strbuf *why);

#endif
