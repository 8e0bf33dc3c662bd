/*
 * http.c: /metrics and /health over libmicrohttpd (see http.h).
 *
 * The library is loaded with dlopen() when the agent starts serving, not linked: Debian's
 * libmicrohttpd pulls in GnuTLS, whose load-time set-up cost every 'vigil' process about 10 ms
 * of CPU (docs/PERFORMANCE.md), HealthCheckProgram runs included. The header still gives the
 * types and constants; the functions come from one table.
 */
#include "http.h"
#include "../lib/forkgate.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include "mhd.h"
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *c,
							       enum MHD_ConnectionInfoType t, ...);
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
		{ "MHD_get_connection_info", offsetof(__typeof__(mhd), get_connection_info) },
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

/* One connection the server holds: when it came, whose it is, and the socket to cut. */
struct conn_slot {
	bool used;
	int fd;
	ino_t ino;          /* the socket's inode: an fd number reused since is never cut */
	uint64_t start_ms;  /* accepted at */
	bool cut;           /* past its deadline: shut down once, freed when MHD closes it */
	bool local;         /* a process of this host (its uid known, or from loopback) */
	uid_t uid;          /* local: the peer's owner, (uid_t)-1 when not found */
	struct sockaddr_storage peer; /* not local: the peer's address, for the share per address */
};

struct agent_http {
	struct MHD_Daemon *d;
	struct agent *a;
	unsigned port;
	struct agent_http_limits lim;
	pthread_mutex_t lock; /* guards slots and stop */
	pthread_cond_t wake;
	struct conn_slot *slots;
	unsigned nr_slots;
	bool stop, have_reaper;
	pthread_t reaper;
	uint64_t cut_deadline, refused_share; /* counters, for tests */
};

const struct agent_http_limits agent_http_default_limits = {
	.connections = AGENT_HTTP_CONNECTIONS,
	.per_client = AGENT_HTTP_PER_CLIENT,
	.deadline_ms = AGENT_HTTP_DEADLINE_S * 1000u,
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

static enum MHD_Result handle_gated(void *cls, struct MHD_Connection *conn, const char *url,
				    const char *method, const char *version,
				    const char *upload_data, size_t *upload_size, void **con_cls)
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

/* The handler inside the fork gate: what it allocates is never half done when the agent forks
 * (forkgate.h; libmicrohttpd's own allocations are outside it). */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_size, void **con_cls)
{
	forkgate_enter();
	enum MHD_Result r = handle_gated(cls, conn, url, method, version, upload_data,
					 upload_size, con_cls);
	forkgate_leave();
	return r;
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

/* A v4-mapped IPv6 address (a dual-stack listener) as the IPv4 one it is. */
static void unmap(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr))
		return;
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = v6->sin6_port };
	memcpy(&v4.sin_addr, v6->sin6_addr.s6_addr + 12, 4);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &v4, sizeof(v4));
}

/*
 * The owner of the other end of an accepted TCP socket when that end is a socket of this host
 * (any local client, loopback or not): the kernel's socket table through sock_diag, asked for
 * the one socket whose source is the peer and whose destination is us, as ss(8) does. Every
 * local user connects from 127.0.0.1 (or any 127/8 address it likes), so the address cannot tell
 * one local user from another; the uid can. false when no such socket is found (a remote peer).
 */
static bool tcp_peer_uid(int fd, uid_t *uid)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
		return false;
	unmap(&me);
	unmap(&peer);
	if (me.ss_family != peer.ss_family)
		return false;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (uint8_t)peer.ss_family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (peer.ss_family == AF_INET) {
		const struct sockaddr_in *p4 = (const void *)&peer, *m4 = (const void *)&me;
		req.r.id.idiag_sport = p4->sin_port;
		req.r.id.idiag_dport = m4->sin_port;
		memcpy(req.r.id.idiag_src, &p4->sin_addr, 4);
		memcpy(req.r.id.idiag_dst, &m4->sin_addr, 4);
	} else if (peer.ss_family == AF_INET6) {
		const struct sockaddr_in6 *p6 = (const void *)&peer, *m6 = (const void *)&me;
		req.r.id.idiag_sport = p6->sin6_port;
		req.r.id.idiag_dport = m6->sin6_port;
		memcpy(req.r.id.idiag_src, &p6->sin6_addr, 16);
		memcpy(req.r.id.idiag_dst, &m6->sin6_addr, 16);
	} else {
		return false;
	}
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return false;
	/* the kernel answers at once or not at all: never wait on it from the server's thread */
	struct timeval tv = { 0, 200000 };
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	bool found = false;
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} ans;
	if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) ==
	    (ssize_t)sizeof(req)) {
		ssize_t n = recv(nl, &ans, sizeof(ans), 0);
		if (n >= (ssize_t)(sizeof(struct nlmsghdr) + sizeof(struct inet_diag_msg)) &&
		    ans.nh.nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    ans.nh.nlmsg_len <= (size_t)n) {
			const struct inet_diag_msg *m = NLMSG_DATA(&ans.nh);
			*uid = m->idiag_uid;
			found = true;
		}
	}
	close(nl);
	return found;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

/* Whether two held connections belong to the same client: one local uid, or one remote address. */
static bool same_client(const struct conn_slot *x, const struct conn_slot *y)
{
	if (x->local != y->local)
		return false;
	return x->local ? x->uid == y->uid : same_addr(&x->peer, &y->peer);
}

static void cut(struct conn_slot *c)
{
	struct stat st;
	/* the fd is still the socket it was (MHD closes it only after telling us, under our
	 * lock; the inode guards against a number reused all the same) */
	if (fstat(c->fd, &st) == 0 && st.st_ino == c->ino) {
		/* a reset at close, not an orderly end: a slow reader would go on reading what
		 * the kernel still holds for it long after its slot was freed */
		struct linger l = { 1, 0 };
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		shutdown(c->fd, SHUT_RDWR);
	}
}

/*
 * Runs on the server's thread at each connection's start and end. At the start: the client
 * (local uid, else remote address) gets at most lim.per_client connections; one more is cut at
 * once, so that one client cannot fill the pool whatever it sends. Its start time is kept for
 * the reaper.
 */
static void on_connection(void *cls, struct MHD_Connection *conn, void **ctx,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct agent_http *h = cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		uintptr_t i = (uintptr_t)*ctx;
		pthread_mutex_lock(&h->lock);
		if (i && i <= h->nr_slots)
			h->slots[i - 1].used = false;
		pthread_mutex_unlock(&h->lock);
		*ctx = NULL;
		return;
	}
	const union MHD_ConnectionInfo *ci =
		mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	struct conn_slot c;
	struct stat st;
	memset(&c, 0, sizeof(c));
	c.used = true;
	c.fd = ci->connect_fd;
	c.start_ms = mono_ms();
	if (fstat(c.fd, &st) == 0)
		c.ino = st.st_ino;
	socklen_t pl = sizeof(c.peer);
	if (getpeername(c.fd, (struct sockaddr *)&c.peer, &pl) < 0)
		memset(&c.peer, 0, sizeof(c.peer));
	unmap(&c.peer);
	c.uid = (uid_t)-1;
	c.local = tcp_peer_uid(c.fd, &c.uid) || is_loopback(&c.peer);
	pthread_mutex_lock(&h->lock);
	unsigned same = 0, free_at = h->nr_slots;
	for (unsigned i = 0; i < h->nr_slots; i++) {
		if (!h->slots[i].used) {
			if (free_at == h->nr_slots)
				free_at = i;
		} else if (same_client(&h->slots[i], &c)) {
			same++;
		}
	}
	if (free_at == h->nr_slots || (h->lim.per_client && same >= h->lim.per_client)) {
		h->refused_share++;
		cut(&c);
	} else {
		h->slots[free_at] = c;
		*ctx = (void *)(uintptr_t)(free_at + 1);
	}
	pthread_mutex_unlock(&h->lock);
}

/* Cuts every connection older than the deadline, however busy it keeps itself: MHD's own
 * timeout counts idle seconds only, which a header line every second resets for ever. */
static void *reaper(void *arg)
{
	struct agent_http *h = arg;
	unsigned tick = h->lim.deadline_ms / 4;
	if (tick < 20)
		tick = 20;
	if (tick > 250)
		tick = 250;
	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)tick * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&h->wake, &h->lock, &ts);
		uint64_t now = mono_ms();
		for (unsigned i = 0; i < h->nr_slots; i++) {
			struct conn_slot *c = &h->slots[i];
			/* the slot stays taken until MHD's close notice frees it: freed here, a
			 * new connection could take it and then lose it to the old one's notice */
			if (c->used && !c->cut && now - c->start_ms >= h->lim.deadline_ms) {
				cut(c);
				c->cut = true;
				h->cut_deadline++;
			}
		}
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

struct agent_http *agent_http_start(struct agent *a, const char *listen, struct strbuf *err)
{
	return agent_http_start_limits(a, listen, &agent_http_default_limits, err);
}

struct agent_http *agent_http_start_limits(struct agent *a, const char *listen,
					   const struct agent_http_limits *lim,
					   struct strbuf *err)
{
	struct sockaddr_storage ss;
	unsigned len;
	if (agent_listen_parse(listen, &ss, &len, err) < 0 || mhd_load(err) < 0)
		return NULL;
	struct agent_http *h = xcalloc(1, sizeof(*h));
	h->a = a;
	h->lim = *lim;
	/*
	 * What keeps /health answering while someone holds connections open: many slots (epoll has
	 * no FD_SETSIZE bound), a small memory pool each, a deadline from accept that no amount of
	 * trickling extends (the reaper), and a share per client (a local uid, through the
	 * kernel's socket table, or a remote address), so that one client fills at most its share
	 * and the rest stays for the others. A local caller that must always get an answer (Slurm,
	 * NPD) has the Unix socket besides (agent_sock_start), apart from this pool.
	 */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	forkgate_setup();
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	unsigned limit = connection_limit();
	if (lim->connections && lim->connections < limit)
		limit = lim->connections;
	h->nr_slots = limit;
	h->slots = xcalloc(limit, sizeof(*h->slots));
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->wake, NULL);
	uint16_t port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
						 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	unsigned idle_s = AGENT_HTTP_TIMEOUT_S;
	if (lim->deadline_ms && lim->deadline_ms / 1000 < idle_s)
		idle_s = lim->deadline_ms / 1000 ? lim->deadline_ms / 1000 : 1;
	h->d = mhd.start_daemon(flags, port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, limit,
				MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)AGENT_HTTP_POOL_BYTES,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
	if (!h->d) {
		error_set(err, "cannot listen on '%s' (address in use, or not this host's?)", listen);
		agent_http_stop(h);
		return NULL;
	}
	const union MHD_DaemonInfo *info = mhd.get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	if (lim->deadline_ms) {
		if (pthread_create(&h->reaper, NULL, reaper, h) != 0) {
			error_set(err, "cannot start the http server's reaper thread");
			agent_http_stop(h);
			return NULL;
		}
		h->have_reaper = true;
	}
	return h;
}

unsigned agent_http_port(const struct agent_http *h)
{
	return h->port;
}

void agent_http_counts(struct agent_http *h, uint64_t *cut_deadline, uint64_t *refused_share)
{
	pthread_mutex_lock(&h->lock);
	*cut_deadline = h->cut_deadline;
	*refused_share = h->refused_share;
	pthread_mutex_unlock(&h->lock);
}

void agent_http_stop(struct agent_http *h)
{
	if (!h)
		return;
	if (h->have_reaper) {
		pthread_mutex_lock(&h->lock);
		h->stop = true;
		pthread_cond_signal(&h->wake);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->reaper, NULL);
	}
	if (h->d)
		mhd.stop_daemon(h->d);
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h->slots);
	free(h);
}

/* ---- /health over a Unix socket, apart from the HTTP pool ---- */

struct sock_conn {
	int fd; /* -1: free */
	uid_t uid;
	pid_t pid;
	uint64_t start_ms;
	char in[AGENT_SOCK_REQUEST_BYTES];
	size_t in_len;
	struct strbuf out;
	size_t out_off;
	bool answering;
};

struct agent_sock {
	struct agent *a;
	struct agent_sock_limits lim;
	char *path;
	dev_t dev;
	ino_t ino;
	int listen_fd, stop_pipe[2];
	pthread_t thread;
	struct sock_conn *conns;
	pthread_mutex_t lock; /* guards the counters and started */
	pthread_cond_t started_cond;
	bool started;
	struct pollfd *pfd; /* the thread's poll set and its slot for each, made before it starts */
	unsigned *who;
	uint64_t answered, refused, cut;
	/* GET /gpu-reading: the last reading, when it was taken (mono_ms), and with which counters */
	struct strbuf reading;
	uint64_t reading_ms;
	bool reading_skip;
};

const struct agent_sock_limits agent_sock_default_limits = {
	.slots = AGENT_SOCK_SLOTS,
	.root_slots = AGENT_SOCK_ROOT_SLOTS,
	.per_client = AGENT_SOCK_PER_CLIENT,
	.deadline_ms = AGENT_SOCK_DEADLINE_MS,
	.mode = AGENT_SOCK_MODE,
};

static void sock_drop(struct agent_sock *s, struct sock_conn *c)
{
	close(c->fd);
	c->fd = -1;
	strbuf_release(&c->out);
	c->in_len = c->out_off = 0;
	c->answering = false;
	UNUSED(s);
}

/* The end of the request's headers, or NULL while they are not all in. */
static const char *headers_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] == '\n' && buf[i + 1] == '\n')
			return buf + i + 2;
		if (i + 3 < len && !memcmp(buf + i, "\r\n\r\n", 4))
			return buf + i + 4;
	}
	return NULL;
}

/* GET /gpu-reading's body: a reading younger than AGENT_READING_FRESH_MS (taken with the same
 * or more counters), else a fresh one from the worker. -1 with the reason in body. */
static int sock_reading(struct agent_sock *s, bool skip, struct strbuf *body)
{
	struct strbuf err = STRBUF_INIT;
	uint64_t now = mono_ms();
	if (!s->a->gpu_reading) {
		strbuf_addstr(body, "no gpu reading: this agent runs no gpu worker\n");
		return -1;
	}
	if (s->reading.len && now - s->reading_ms < AGENT_READING_FRESH_MS &&
	    (skip || !s->reading_skip)) {
		strbuf_add(body, s->reading.buf, s->reading.len);
		return 0;
	}
	strbuf_reset(&s->reading);
	if (s->a->gpu_reading(s->a->gpu_reading_arg, skip, &s->reading, &err) < 0) {
		strbuf_reset(&s->reading);
		strbuf_addstr(body, "no gpu reading: ");
		strbuf_add_clean(body, err.buf);
		strbuf_addch(body, '\n');
		strbuf_release(&err);
		return -1;
	}
	s->reading_ms = now;
	s->reading_skip = skip;
	strbuf_add(body, s->reading.buf, s->reading.len);
	strbuf_release(&err);
	return 0;
}

/* One answer, computed from the published verdict (no check runs for a request). */
static void sock_answer(struct agent_sock *s, struct sock_conn *c, bool complete)
{
	struct strbuf body = STRBUF_INIT;
	unsigned status = 200;
	const char *reason = "OK", *type = "application/json";
	bool head = false;
	if (!complete) {
		status = 431;
		reason = "Request Header Fields Too Large";
		type = "text/plain";
		strbuf_addstr(&body, "request too large\n");
	} else {
		/* "METHOD PATH[?query] HTTP/1.x" */
		const char *sp = memchr(c->in, ' ', c->in_len);
		size_t mlen = sp ? (size_t)(sp - c->in) : 0;
		const char *path = sp ? sp + 1 : NULL;
		size_t plen = 0;
		while (path && path + plen < c->in + c->in_len && path[plen] != ' ' &&
		       path[plen] != '?' && path[plen] != '\r' && path[plen] != '\n')
			plen++;
		head = mlen == 4 && !memcmp(c->in, "HEAD", 4);
		if (!(mlen == 3 && !memcmp(c->in, "GET", 3)) && !head) {
			status = 405;
			reason = "Method Not Allowed";
			type = "text/plain";
			strbuf_addstr(&body, "only GET and HEAD\n");
		} else if (plen == 7 && !memcmp(path, "/health", 7)) {
			agent_health(s->a, &body);
		} else if (plen == 12 && !memcmp(path, "/gpu-reading", 12)) {
			bool skip = path[plen] == '?' &&
				    c->in + c->in_len - (path + plen) >= 12 &&
				    !memcmp(path + plen, "?counters=0", 11);
			type = "text/plain";
			if (sock_reading(s, skip, &body) < 0) {
				status = 503;
				reason = "Service Unavailable";
			}
		} else {
			status = 404;
			reason = "Not Found";
			type = "text/plain";
			strbuf_addstr(&body, "not found: this socket serves /health and /gpu-reading\n");
		}
	}
	strbuf_addf(&c->out,
		    "HTTP/1.0 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		    "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
		    status, reason, type, body.len);
	if (!head)
		strbuf_add(&c->out, body.buf, body.len);
	strbuf_release(&body);
	c->answering = true;
	/* the rest of the request, if any, is never read: the answer is all there is */
	shutdown(c->fd, SHUT_RD);
}

/* Accepts everything waiting; whoever is over a share is closed at once, so that the kernel's
 * queue never fills with one client's connections while another waits behind them. */
static void sock_accept(struct agent_sock *s)
{
	/* A bounded batch: under a storm of connects the queue never empties, and the ones
	 * already accepted must still be read and answered between batches. */
	for (unsigned batch = 0; batch < s->lim.slots; batch++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		bool ok = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 &&
			  cl == sizeof(cr);
		unsigned used = 0, others = 0, same = 0, free_at = s->lim.slots;
		for (unsigned i = 0; ok && i < s->lim.slots; i++) {
			const struct sock_conn *c = &s->conns[i];
			if (c->fd < 0) {
				if (free_at == s->lim.slots)
					free_at = i;
				continue;
			}
			used++;
			if (c->uid != 0)
				others++;
			/* root is one trusted user with many callers (slurmd, NPD, the
			 * operator): its share is per process; everyone else's per uid */
			if (cr.uid == 0 ? (c->uid == 0 && c->pid == cr.pid) : c->uid == cr.uid)
				same++;
		}
		if (!ok || free_at == s->lim.slots || same >= s->lim.per_client ||
		    (cr.uid != 0 && others + s->lim.root_slots >= s->lim.slots)) {
			close(fd);
			pthread_mutex_lock(&s->lock);
			s->refused++;
			pthread_mutex_unlock(&s->lock);
			continue;
		}
		struct sock_conn *c = &s->conns[free_at];
		c->fd = fd;
		c->uid = cr.uid;
		c->pid = cr.pid;
		c->start_ms = mono_ms();
		c->in_len = c->out_off = 0;
		c->answering = false;
		strbuf_init(&c->out, 0);
	}
}

static void sock_io(struct agent_sock *s, struct sock_conn *c, short revents)
{
	if (!c->answering && (revents & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
		if (n <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EINTR))
				sock_drop(s, c);
			return;
		}
		c->in_len += (size_t)n;
		if (headers_end(c->in, c->in_len))
			sock_answer(s, c, true);
		else if (c->in_len == sizeof(c->in))
			sock_answer(s, c, false);
	}
	if (c->answering) {
		while (c->out_off < c->out.len) {
			ssize_t n = send(c->fd, c->out.buf + c->out_off, c->out.len - c->out_off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return; /* a client that does not read waits for POLLOUT, alone */
			if (n <= 0) {
				sock_drop(s, c);
				return;
			}
			c->out_off += (size_t)n;
		}
		pthread_mutex_lock(&s->lock);
		s->answered++;
		pthread_mutex_unlock(&s->lock);
		sock_drop(s, c);
	}
}

/*
 * The socket's thread. It allocates (answers, strbufs) only inside the fork gate (forkgate.h), and
 * its poll set is made before it starts: the agent forks its gpu worker and checks, which run on
 * without exec, and must never copy an allocator lock this thread held.
 */
static void *sock_serve(void *arg)
{
	struct agent_sock *s = arg;
	struct pollfd *p = s->pfd;
	unsigned *who = s->who;
	/* the thread's own start (the runtime's allocations for it) is over: the agent may fork */
	pthread_mutex_lock(&s->lock);
	s->started = true;
	pthread_cond_signal(&s->started_cond);
	pthread_mutex_unlock(&s->lock);
	for (;;) {
		unsigned n = 0;
		uint64_t now = mono_ms();
		int wait = -1;
		p[n++] = (struct pollfd){ s->stop_pipe[0], POLLIN, 0 };
		p[n++] = (struct pollfd){ s->listen_fd, POLLIN, 0 };
		for (unsigned i = 0; i < s->lim.slots; i++) {
			struct sock_conn *c = &s->conns[i];
			if (c->fd < 0)
				continue;
			/* the deadline runs from accept: sending slowly does not extend it */
			if (now - c->start_ms >= s->lim.deadline_ms) {
				sock_drop(s, c);
				pthread_mutex_lock(&s->lock);
				s->cut++;
				pthread_mutex_unlock(&s->lock);
				continue;
			}
			int left = (int)(s->lim.deadline_ms - (now - c->start_ms));
			if (wait < 0 || left < wait)
				wait = left;
			who[n] = i;
			p[n++] = (struct pollfd){ c->fd, c->answering ? POLLOUT : POLLIN, 0 };
		}
		if (poll(p, n, wait) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		forkgate_enter();
		for (unsigned k = 2; k < n; k++)
			if (p[k].revents)
				sock_io(s, &s->conns[who[k]], p[k].revents);
		if (p[1].revents & POLLIN)
			sock_accept(s);
		forkgate_leave();
	}
	return NULL;
}

/*
 * The socket's file, made so that nobody else chooses what it is: its directory belongs to us
 * (or root) and nobody else may write there (so no link or file can be planted in it, now or
 * between our steps); a socket of ours left by an agent that died is replaced, one that still
 * answers is another agent's and refused, anything else at the path is refused by name.
 */
static int sock_bind(struct agent_sock *s, struct strbuf *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(s->path) >= sizeof(sun.sun_path))
		return error_set(err, "socket path '%s' is longer than %zu bytes", s->path,
				 sizeof(sun.sun_path) - 1);
	memcpy(sun.sun_path, s->path, strlen(s->path) + 1);
	char *dir = xstrdup(s->path);
	char *slash = strrchr(dir, '/');
	if (!slash) {
		free(dir);
		dir = xstrdup(".");
	} else if (slash == dir) {
		dir[1] = '\0';
	} else {
		*slash = '\0';
	}
	struct stat st;
	int ret = 0;
	if (stat(dir, &st) < 0) {
		ret = error_set(err, "cannot use the socket's directory '%s': %s", dir,
				strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		ret = error_set(err, "the socket's directory '%s' is not a directory", dir);
	} else if ((st.st_uid != geteuid() && st.st_uid != 0) ||
		   (st.st_mode & (S_IWGRP | S_IWOTH))) {
		ret = error_set(err,
				"the socket's directory '%s' is writable by others: someone could "
				"plant the socket's name there; use a directory only root writes",
				dir);
	}
	free(dir);
	if (ret < 0)
		return ret;
	if (lstat(s->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
			return error_set(err, "'%s' exists and is not a socket of this agent's user: "
					      "not replaced (remove it)", s->path);
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool live = probe >= 0 &&
			    connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0;
		if (probe >= 0)
			close(probe);
		if (live)
			return error_set(err, "another agent serves '%s'", s->path);
		if (unlink(s->path) < 0)
			return error_set(err, "cannot remove the stale socket '%s': %s", s->path,
					 strerror(errno));
	} else if (errno != ENOENT) {
		return error_set(err, "cannot use '%s': %s", s->path, strerror(errno));
	}
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
		return error_set(err, "cannot make a socket: %s", strerror(errno));
	/* bind() never follows a link: a name that appeared since is EADDRINUSE */
	if (bind(s->listen_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return error_set(err, "cannot bind '%s': %s", s->path, strerror(errno));
	if (lstat(s->path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return error_set(err, "'%s' changed under the agent", s->path);
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	/* Who may connect at all is the file's mode (root only by default: a user who cannot
	 * connect cannot fill the listen queue either); among those who may, SO_PEERCRED shares
	 * the slots out. Until this chmod the umask's mode can only be narrower; the name is safe
	 * to chmod: the directory is ours alone. */
	if (chmod(s->path, s->lim.mode) < 0)
		return error_set(err, "cannot set the mode of '%s': %s", s->path, strerror(errno));
	if (listen(s->listen_fd, SOMAXCONN) < 0)
		return error_set(err, "cannot listen on '%s': %s", s->path, strerror(errno));
	return 0;
}

struct agent_sock *agent_sock_start(struct agent *a, const char *path,
				    const struct agent_sock_limits *lim, struct strbuf *err)
{
	struct agent_sock *s = xcalloc(1, sizeof(*s));
	strbuf_init(&s->reading, 0);
	s->a = a;
	s->lim = lim ? *lim : agent_sock_default_limits;
	if (!s->lim.mode)
		s->lim.mode = AGENT_SOCK_MODE;
	if (!s->lim.slots)
		s->lim.slots = 1;
	s->path = xstrdup(path);
	s->listen_fd = s->stop_pipe[0] = s->stop_pipe[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->started_cond, NULL);
	s->conns = xcalloc(s->lim.slots, sizeof(*s->conns));
	for (unsigned i = 0; i < s->lim.slots; i++)
		s->conns[i].fd = -1;
	if (sock_bind(s, err) < 0)
		goto fail;
	if (pipe2(s->stop_pipe, O_CLOEXEC) < 0) {
		error_set(err, "cannot make a pipe: %s", strerror(errno));
		goto fail;
	}
	s->pfd = xcalloc(s->lim.slots + 2, sizeof(*s->pfd));
	s->who = xcalloc(s->lim.slots + 2, sizeof(*s->who));
	forkgate_setup();
	if (pthread_create(&s->thread, NULL, sock_serve, s) != 0) {
		error_set(err, "cannot start the socket's thread");
		goto fail;
	}
	/* not before the thread runs its own code: a fork meanwhile could copy the runtime's
	 * locks that its start holds (forkgate.h) */
	pthread_mutex_lock(&s->lock);
	while (!s->started)
		pthread_cond_wait(&s->started_cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return s;
fail:
	if (s->ino)
		unlink(s->path);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	for (int i = 0; i < 2; i++)
		if (s->stop_pipe[i] >= 0)
			close(s->stop_pipe[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->started_cond);
	free(s->pfd);
	free(s->who);
	free(s->conns);
	free(s->path);
	free(s);
	return NULL;
}

void agent_sock_counts(struct agent_sock *s, uint64_t *answered, uint64_t *refused,
		       uint64_t *cut_deadline)
{
	pthread_mutex_lock(&s->lock);
	*answered = s->answered;
	*refused = s->refused;
	*cut_deadline = s->cut;
	pthread_mutex_unlock(&s->lock);
}

void agent_sock_stop(struct agent_sock *s)
{
	if (!s)
		return;
	char b = 0;
	if (write(s->stop_pipe[1], &b, 1) != 1)
		abort(); /* a pipe of our own, never full */
	pthread_join(s->thread, NULL);
	for (unsigned i = 0; i < s->lim.slots; i++)
		if (s->conns[i].fd >= 0)
			sock_drop(s, &s->conns[i]);
	/* the name is removed only while it is still the socket we made */
	struct stat st;
	if (lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	close(s->listen_fd);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->started_cond);
	free(s->pfd);
	free(s->who);
	free(s->conns);
	free(s->path);
	strbuf_release(&s->reading);
	free(s);
}
