/*
 * http.h: the agent's HTTP endpoints through GNU libmicrohttpd (Debian libmicrohttpd-dev), not a
 * home-made server: GET /metrics (Prometheus text), GET /health (the JSON verdict, always 200
 * with the verdict inside, so a liveness probe on the agent does not restart it because the host
 * is sick), anything else 404, other methods 405.
 *
 * The server runs its own thread (epoll) and reads the agent under its lock. A client that opens
 * connections and never finishes its request cannot deny /health to others: each connection is
 * dropped after AGENT_HTTP_TIMEOUT_S idle seconds and there are AGENT_HTTP_CONNECTIONS of them
 * (cmd/agent.c raises the open-file limit to hold them). Listening beyond loopback, one address
 * gets at most AGENT_HTTP_PER_IP of them; on loopback every local user shares 127.0.0.1, so no
 * per-address share applies there.
 *
 * Ownership: agent_http_stop() stops the thread and frees the server.
 */
#ifndef VIGIL_AGENT_HTTP_H
#define VIGIL_AGENT_HTTP_H

#include "agent.h"

struct agent_http;

#define AGENT_HTTP_CONNECTIONS 1024u
#define AGENT_HTTP_TIMEOUT_S 5u
#define AGENT_HTTP_PER_IP 64u
#define AGENT_HTTP_POOL_BYTES 16384u
/* Open files the agent wants: the connections, plus its own files and check pipes. */
#define AGENT_HTTP_NOFILE (AGENT_HTTP_CONNECTIONS + 256u)

/* Parse "HOST:PORT", "[V6]:PORT" or ":PORT" (all addresses) into a socket address. 0, or -1 with
 * *err. */
int agent_listen_parse(const char *spec, void *sockaddr_storage, unsigned *len,
		       struct strbuf *err);
/* Start serving a on the address. NULL with *err when it cannot listen. */
struct agent_http *agent_http_start(struct agent *a, const char *listen, struct strbuf *err);
/* The port actually bound (useful with port 0). */
unsigned agent_http_port(const struct agent_http *h);
void agent_http_stop(struct agent_http *h);

#endif
