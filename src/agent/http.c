/*
 * http.c: /metrics and /health over libmicrohttpd (see http.h).
 *
 * The library is loaded with dlopen() when the agent starts serving, not linked: Debian's
 * libmicrohttpd pulls in GnuTLS, whose load-time set-up cost every 'vigil' process about 10 ms
 * of CPU (docs/PERFORMANCE.md), HealthCheckProgram runs included. The header still gives the
 * types and constants; the functions come from one table.
 */
#include "http.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <stddef.h>
#include "mhd.h"
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define MHD_LIBRARY "libmicrohttpd.so.12"

static struct {
	void *handle;
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc, void *apc_cls,
					   MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *d);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							     enum MHD_ResponseMemoryMode mode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *h,
					       const char *v);
	enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status,
					  struct MHD_Response *r);
	void (*destroy_response)(struct MHD_Response *r);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *d,
						       enum MHD_DaemonInfoType t, ...);
} mhd;

static int mhd_load(struct strbuf *err)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
		{ "MHD_start_daemon", offsetof(__typeof__(mhd), start_daemon) },
		{ "MHD_stop_daemon", offsetof(__typeof__(mhd), stop_daemon) },
		{ "MHD_create_response_from_buffer",
		  offsetof(__typeof__(mhd), create_response_from_buffer) },
		{ "MHD_add_response_header", offsetof(__typeof__(mhd), add_response_header) },
		{ "MHD_queue_response", offsetof(__typeof__(mhd), queue_response) },
		{ "MHD_destroy_response", offsetof(__typeof__(mhd), destroy_response) },
		{ "MHD_get_daemon_info", offsetof(__typeof__(mhd), get_daemon_info) },
	};
	if (mhd.handle)
		return 0;
	const char *lib = getenv("VIGIL_MHD_LIBRARY");
	void *h = dlopen(lib && *lib ? lib : MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return error_set(err, "cannot load libmicrohttpd (Debian: libmicrohttpd12): %s",
				 dlerror());
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			dlclose(h);
			return error_set(err, "libmicrohttpd lacks '%s'", syms[i].name);
		}
		memcpy((char *)&mhd + syms[i].off, &f, sizeof(f));
	}
	mhd.handle = h;
	return 0;
}

struct agent_http {
	struct MHD_Daemon *d;
	struct agent *a;
	unsigned port;
};

int agent_listen_parse(const char *spec, void *ss, unsigned *len, struct strbuf *err)
{
	char host[128];
	const char *colon;
	uint64_t port;
	memset(ss, 0, sizeof(struct sockaddr_storage));
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof(host))
			return error_set(err, "cannot parse listen address '%s' (want [V6]:PORT)",
					 spec);
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(spec, ':');
		if (!colon || (size_t)(colon - spec) >= sizeof(host))
			return error_set(err, "cannot parse listen address '%s' (want HOST:PORT)",
					 spec);
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
	}
	if (!parse_u64(colon + 1, &port) || port > 65535)
		return error_set(err, "bad port in listen address '%s'", spec);
	struct sockaddr_in *v4 = ss;
	struct sockaddr_in6 *v6 = ss;
	if (!host[0] || !strcmp(host, "*")) {
		v4->sin_family = AF_INET;
		v4->sin_addr.s_addr = htonl(INADDR_ANY);
		v4->sin_port = htons((uint16_t)port);
		*len = sizeof(*v4);
	} else if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		*len = sizeof(*v4);
	} else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*v6);
	} else {
		return error_set(err, "listen address '%s' is not a numeric IPv4 or IPv6 address",
				 spec);
	}
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     struct strbuf *body)
{
	struct MHD_Response *r = mhd.create_response_from_buffer(body->len, body->buf,
								 MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	mhd.add_response_header(r, "Content-Type", type);
	mhd.add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result ret = mhd.queue_response(conn, status, r);
	mhd.destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_size, void **con_cls)
{
	struct agent_http *h = cls;
	struct strbuf body = STRBUF_INIT;
	enum MHD_Result ret;
	UNUSED(version);
	UNUSED(upload_data);
	if (*upload_size) {
		/* Nothing is accepted from clients; drop any body. */
		*upload_size = 0;
		return MHD_YES;
	}
	UNUSED(con_cls);
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		strbuf_addstr(&body, "only GET and HEAD\n");
		ret = reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", &body);
	} else if (!strcmp(url, "/metrics")) {
		agent_metrics(h->a, &body);
		ret = reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &body);
	} else if (!strcmp(url, "/health")) {
		agent_health(h->a, &body);
		ret = reply(conn, MHD_HTTP_OK, "application/json", &body);
	} else if (!strcmp(url, "/")) {
		strbuf_addstr(&body, "vigil agent: /metrics (Prometheus), /health (JSON verdict)\n");
		ret = reply(conn, MHD_HTTP_OK, "text/plain", &body);
	} else {
		strbuf_addstr(&body, "not found: try /metrics or /health\n");
		ret = reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", &body);
	}
	strbuf_release(&body);
	return ret;
}

/* Loopback: every local client comes from the same address (and may pick any 127/8 source), so a
 * per-address limit there would only be a smaller total that one local user can fill. */
static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return ss->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* Slots the open-file limit can hold beside the agent's other files: a connection accepted past
 * it would fail with EMFILE, and the pipes of the next cycle's checks with it. */
static unsigned connection_limit(void)
{
	struct rlimit rl;
	unsigned limit = AGENT_HTTP_CONNECTIONS;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)AGENT_HTTP_NOFILE)
		limit = rl.rlim_cur > 512 ? (unsigned)rl.rlim_cur - 256 : 64;
	return limit;
}

struct agent_http *agent_http_start(struct agent *a, const char *listen, struct strbuf *err)
{
	struct sockaddr_storage ss;
	unsigned len;
	if (agent_listen_parse(listen, &ss, &len, err) < 0 || mhd_load(err) < 0)
		return NULL;
	struct agent_http *h = xcalloc(1, sizeof(*h));
	h->a = a;
	/*
	 * What keeps /health answering while someone holds connections open: many slots (epoll has
	 * no FD_SETSIZE bound), each dropped after a few idle seconds, each with a small memory
	 * pool, so a slow client must hold more sockets than a user normally may, and keep them
	 * busy, to deny anyone. A per-address share applies only where addresses differ.
	 */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	unsigned limit = connection_limit(), per_ip = is_loopback(&ss) ? 0 : AGENT_HTTP_PER_IP;
	uint16_t port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
						 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	h->d = mhd.start_daemon(flags, port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, limit,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)AGENT_HTTP_TIMEOUT_S,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)AGENT_HTTP_POOL_BYTES,
				MHD_OPTION_END);
	if (!h->d) {
		error_set(err, "cannot listen on '%s' (address in use, or not this host's?)", listen);
		free(h);
		return NULL;
	}
	const union MHD_DaemonInfo *info = mhd.get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	return h;
}

unsigned agent_http_port(const struct agent_http *h)
{
	return h->port;
}

void agent_http_stop(struct agent_http *h)
{
	if (!h)
		return;
	mhd.stop_daemon(h->d);
	free(h);
}
