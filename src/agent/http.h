/*
 * http.h: the agent's HTTP endpoints through GNU libmicrohttpd (Debian libmicrohttpd-dev), not a
 * home-made server: GET /metrics (Prometheus text), GET /health (the JSON verdict, always 200
 * with the verdict inside, so a liveness probe on the agent does not restart it because the host
 * is sick), anything else 404, other methods 405.
 *
 * The server runs its own thread (epoll) and reads the agent under its lock. A client that opens
 * connections and trickles its requests cannot deny /health to others: each connection is cut
 * AGENT_HTTP_DEADLINE_S after accept however busy it keeps itself (a reaper thread; MHD's own
 * timeout, AGENT_HTTP_TIMEOUT_S, counts idle seconds only), and one client holds at most
 * AGENT_HTTP_PER_CLIENT of the AGENT_HTTP_CONNECTIONS slots (cmd/agent.c raises the open-file
 * limit to hold them). A client is a local uid (the owner of the peer's socket, from the
 * kernel's socket table: every local user connects from 127.0.0.1) or a remote address.
 *
 * Apart from that pool, agent_sock_start() serves /health on a Unix socket with a server of its
 * own (one poll thread, AGENT_SOCK_SLOTS connections). Its file is root's, mode 0600: a user who
 * may not connect cannot fill its listen queue with a storm of connects either (the kernel
 * refuses them at the path, before the queue). Among those who may (a wider mode is for tests),
 * the caller's uid comes from SO_PEERCRED, each uid (each process, for root) holds at most
 * AGENT_SOCK_PER_CLIENT connections, users other than root share what AGENT_SOCK_ROOT_SLOTS
 * leaves, so root's callers (slurmd's health program, NPD) always find room; every connection gets one answer (HTTP/1.0, then closed) or
 * is cut AGENT_SOCK_DEADLINE_MS after accept. A client that never reads its answer waits alone.
 *
 * The socket also answers GET /gpu-reading (?counters=0: NVLink error counters left unread): a
 * fresh NVML reading from a gpu worker of the socket's own (gpuworker.h), as an NVML snapshot
 * (docs/nvml-snapshot.md) after a first line "# vigil-agent-root DIR" ("" for the host), so that
 * `vigil check` on this host need not start NVML itself (~40 ms of CPU on an H200). A reading
 * younger than AGENT_READING_FRESH_MS is served again (a burst of checks costs one NVML read);
 * none is older. 503 with the reason when there is none (no NVML, the worker stuck: it is killed
 * after AGENT_READING_TIMEOUT_MS). Only the socket serves it, never the TCP port.
 *
 * Ownership: agent_http_stop() and agent_sock_stop() stop the threads and free the servers.
 */
#ifndef VIGIL_AGENT_HTTP_H
#define VIGIL_AGENT_HTTP_H

#include "agent.h"

struct agent_http;

#define AGENT_HTTP_CONNECTIONS 1024u
#define AGENT_HTTP_TIMEOUT_S 5u
#define AGENT_HTTP_PER_CLIENT 64u
#define AGENT_HTTP_DEADLINE_S 10u
#define AGENT_HTTP_POOL_BYTES 16384u
/* Open files the agent wants: the connections, plus its own files and check pipes. */
#define AGENT_HTTP_NOFILE (AGENT_HTTP_CONNECTIONS + 256u)

/* Parse "HOST:PORT", "[V6]:PORT" or ":PORT" (all addresses) into a socket address. 0, or -1 with
 * *err. */
int agent_listen_parse(const char *spec, void *sockaddr_storage, unsigned *len,
		       struct strbuf *err);
struct agent_http_limits {
	unsigned connections; /* slots (also bounded by the open-file limit) */
	unsigned per_client;  /* slots one client may hold; 0: no share */
	unsigned deadline_ms; /* from accept; 0: none */
};
extern const struct agent_http_limits agent_http_default_limits;

/* Start serving a on the address. NULL with *err when it cannot listen. */
struct agent_http *agent_http_start(struct agent *a, const char *listen, struct strbuf *err);
struct agent_http *agent_http_start_limits(struct agent *a, const char *listen,
					   const struct agent_http_limits *lim,
					   struct strbuf *err);
/* The port actually bound (useful with port 0). */
unsigned agent_http_port(const struct agent_http *h);
/* Connections cut at the deadline, and refused over a client's share, so far. */
void agent_http_counts(struct agent_http *h, uint64_t *cut_deadline, uint64_t *refused_share);
void agent_http_stop(struct agent_http *h);

#define AGENT_SOCK_SLOTS 64u
#define AGENT_SOCK_ROOT_SLOTS 16u
#define AGENT_SOCK_PER_CLIENT 4u
#define AGENT_SOCK_DEADLINE_MS 2000u
#define AGENT_SOCK_REQUEST_BYTES 4096u
#define AGENT_SOCK_MODE 0600 /* root's callers only: see agent_sock_start */
#define AGENT_READING_FRESH_MS 1000u
#define AGENT_READING_TIMEOUT_MS 1500u

struct agent_sock_limits {
	unsigned slots, root_slots, per_client, deadline_ms;
	unsigned mode; /* of the socket's file; 0: AGENT_SOCK_MODE */
};
extern const struct agent_sock_limits agent_sock_default_limits;
struct agent_sock;

/* Serve /health on a Unix socket at path (lim NULL: the defaults). NULL with *err when the path
 * is unsafe (a directory others may write, a name that is not our stale socket) or taken. */
struct agent_sock *agent_sock_start(struct agent *a, const char *path,
				    const struct agent_sock_limits *lim, struct strbuf *err);
/* Answers given, connections refused over a share or the slots, and cut at the deadline. */
void agent_sock_counts(struct agent_sock *s, uint64_t *answered, uint64_t *refused,
		       uint64_t *cut_deadline);
/* Stop, and remove the socket's name if it is still ours. */
void agent_sock_stop(struct agent_sock *s);

#endif
