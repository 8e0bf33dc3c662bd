/*
 * mhd.h: the subset of libmicrohttpd's API that the agent uses, declared here (values from
 * libmicrohttpd 0.9.x's microhttpd.h) so that vigil builds without libmicrohttpd-dev and loads
 * the library only when the agent serves HTTP (src/agent/http.c). tests/unit/test_mhd_abi.c
 * compares every value with the system header wherever that header is installed.
 */
#ifndef VIGIL_MHD_H
#define VIGIL_MHD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct MHD_Daemon;
struct MHD_Connection;
struct MHD_Response;

enum MHD_Result { MHD_NO = 0, MHD_YES = 1 };

enum MHD_ResponseMemoryMode {
	MHD_RESPMEM_PERSISTENT = 0,
	MHD_RESPMEM_MUST_FREE = 1,
	MHD_RESPMEM_MUST_COPY = 2,
};

enum MHD_DaemonInfoType {
	MHD_DAEMON_INFO_KEY_SIZE = 0,
	MHD_DAEMON_INFO_MAC_KEY_SIZE = 1,
	MHD_DAEMON_INFO_LISTEN_FD = 2,
	MHD_DAEMON_INFO_EPOLL_FD = 3,
	MHD_DAEMON_INFO_CURRENT_CONNECTIONS = 4,
	MHD_DAEMON_INFO_FLAGS = 5,
	MHD_DAEMON_INFO_BIND_PORT = 6,
};

/* start flags (enum MHD_FLAG) */
#define MHD_USE_INTERNAL_POLLING_THREAD 8u
#define MHD_USE_IPv6 16u
#define MHD_USE_POLL 64u
#define MHD_USE_EPOLL 512u

/* enum MHD_OPTION */
#define MHD_OPTION_END 0
#define MHD_OPTION_CONNECTION_MEMORY_LIMIT 1 /* takes a size_t */
#define MHD_OPTION_CONNECTION_LIMIT 2
#define MHD_OPTION_CONNECTION_TIMEOUT 3
#define MHD_OPTION_PER_IP_CONNECTION_LIMIT 5
#define MHD_OPTION_SOCK_ADDR 6
#define MHD_OPTION_NOTIFY_CONNECTION 27 /* takes a MHD_NotifyConnectionCallback and its cls */

enum MHD_ConnectionNotificationCode {
	MHD_CONNECTION_NOTIFY_STARTED = 0,
	MHD_CONNECTION_NOTIFY_CLOSED = 1,
};

enum MHD_ConnectionInfoType {
	MHD_CONNECTION_INFO_CIPHER_ALGO = 0,
	MHD_CONNECTION_INFO_PROTOCOL = 1,
	MHD_CONNECTION_INFO_CLIENT_ADDRESS = 2,
	MHD_CONNECTION_INFO_GNUTLS_SESSION = 3,
	MHD_CONNECTION_INFO_GNUTLS_CLIENT_CERT = 4,
	MHD_CONNECTION_INFO_DAEMON = 5,
	MHD_CONNECTION_INFO_CONNECTION_FD = 6,
};

/* Only the fields the agent reads; every field of the real union sits at offset 0. */
union MHD_ConnectionInfo {
	int connect_fd;
	struct sockaddr *client_addr;
};

#define MHD_HTTP_OK 200
#define MHD_HTTP_NOT_FOUND 404
#define MHD_HTTP_METHOD_NOT_ALLOWED 405

union MHD_DaemonInfo {
	size_t key_size;
	size_t mac_key_size;
	int listen_fd;
	uint16_t port;
	int epoll_fd;
	unsigned int num_connections;
	unsigned int flags;
};

typedef enum MHD_Result (*MHD_AcceptPolicyCallback)(void *cls, const struct sockaddr *addr,
						     socklen_t addrlen);
typedef enum MHD_Result (*MHD_AccessHandlerCallback)(void *cls, struct MHD_Connection *connection,
						      const char *url, const char *method,
						      const char *version, const char *upload_data,
						      size_t *upload_data_size, void **con_cls);
typedef void (*MHD_NotifyConnectionCallback)(void *cls, struct MHD_Connection *connection,
					     void **socket_context,
					     enum MHD_ConnectionNotificationCode toe);

#endif
