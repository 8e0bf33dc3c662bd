/*
 * test_mhd_abi.c: src/agent/mhd.h declares libmicrohttpd's API by hand; where the real header is
 * installed, every value must match it (compiled as static assertions, so a mismatch breaks the
 * build of the tests).
 */
#include "../harness.h"

#if __has_include(<microhttpd.h>)
#include <microhttpd.h>
#define HAVE_REAL_MHD 1
_Static_assert(MHD_YES == 1 && MHD_NO == 0, "MHD_Result");
_Static_assert(MHD_RESPMEM_MUST_COPY == 2 && MHD_RESPMEM_PERSISTENT == 0, "MHD_ResponseMemoryMode");
_Static_assert(MHD_DAEMON_INFO_BIND_PORT == 6, "MHD_DAEMON_INFO_BIND_PORT");
_Static_assert(MHD_USE_INTERNAL_POLLING_THREAD == 8 && MHD_USE_IPv6 == 16 && MHD_USE_POLL == 64,
	       "MHD_FLAG");
_Static_assert(MHD_OPTION_END == 0 && MHD_OPTION_CONNECTION_LIMIT == 2 &&
		       MHD_OPTION_CONNECTION_TIMEOUT == 3 &&
		       MHD_OPTION_PER_IP_CONNECTION_LIMIT == 5 && MHD_OPTION_SOCK_ADDR == 6,
	       "MHD_OPTION");
_Static_assert(MHD_HTTP_OK == 200 && MHD_HTTP_NOT_FOUND == 404 &&
		       MHD_HTTP_METHOD_NOT_ALLOWED == 405, "status codes");
_Static_assert(offsetof(union MHD_DaemonInfo, port) == 0 &&
		       sizeof(((union MHD_DaemonInfo *)0)->port) == sizeof(uint16_t),
	       "MHD_DaemonInfo.port");
#endif

TEST(mhd_declarations_match_the_header)
{
#ifndef HAVE_REAL_MHD
	SKIP("microhttpd.h not installed (Debian libmicrohttpd-dev): nothing to compare with");
#endif
}
