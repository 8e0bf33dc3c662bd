/*
 * http.h: the agent's HTTP endpoints through GNU libmicrohttpd (Debian libmicrohttpd-dev), not a
 * home-made server: GET /metrics (Prometheus text), GET /health (the JSON verdict, always 200
 * with the verdict inside, so a liveness probe on the agent does not restart it because the host
 * is sick), anything else 404, other methods 405.
 *
 * The server runs its own thread and reads the agent under its lock. Connections are limited in
 * number and time, so a slow or hostile client cannot hold the agent.
 *
 * Ownership: agent_http_stop() stops the thread and frees the server.
 */
#ifndef VIGIL_AGENT_HTTP_H
#define VIGIL_AGENT_HTTP_H

#include "agent.h"

struct agent_http;

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
