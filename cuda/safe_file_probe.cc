/*
 * safe_file_probe.cc: a host-only driver for cuda/safe_file.cuh, for tests/unit/test_net.c (the
 * helpers themselves need a GPU to reach their writes). Not built by the Makefile: the test
 * compiles it with the system C++ compiler and -DHX_SAFE_FILE_TEST (temporary names from
 * $HX_TEST_RANDOM, so the test can plant links at them).
 *
 *   safe_file_probe write PATH TEXT [MODE]   hx_write_atomic; $HX_PROBE_FSIZE=N caps the file
 *                                             size (RLIMIT_FSIZE), so the write fails midway
 *   safe_file_probe create PATH TEXT         hx_create_excl, then TEXT written through the fd
 *   safe_file_probe read PATH                hx_read_regular: the text on stdout
 *
 * Exit 0 done, 1 refused or failed (the message on stderr), 3 read: absent, 2 usage.
 */
#include "safe_file.cuh"

#include <csignal>
#include <sys/resource.h>

int main(int argc, char **argv)
{
	std::string err;
	if (argc >= 4 && !strcmp(argv[1], "write")) {
		const char *cap = getenv("HX_PROBE_FSIZE");
		if (cap) {
			struct rlimit rl;
			rl.rlim_cur = rl.rlim_max = (rlim_t)strtoull(cap, nullptr, 10);
			signal(SIGXFSZ, SIG_IGN);
			if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
				return 2;
		}
		unsigned mode = argc > 4 ? (unsigned)strtoul(argv[4], nullptr, 8) : 0644;
		if (!hx_write_atomic(argv[2], argv[3], strlen(argv[3]), mode, &err)) {
			fprintf(stderr, "%s\n", err.c_str());
			return 1;
		}
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "create")) {
		int fd = hx_create_excl(argv[2], 0644, &err);
		if (fd < 0) {
			fprintf(stderr, "%s\n", err.c_str());
			return 1;
		}
		size_t len = strlen(argv[3]);
		bool ok = write(fd, argv[3], len) == (ssize_t)len;
		close(fd);
		return ok ? 0 : 1;
	}
	if (argc == 3 && !strcmp(argv[1], "read")) {
		std::string text;
		int r = hx_read_regular(argv[2], &text, 1 << 16, &err);
		if (r < 0) {
			fprintf(stderr, "%s\n", err.c_str());
			return 1;
		}
		fwrite(text.data(), 1, text.size(), stdout);
		return r == 1 ? 0 : 3;
	}
	fprintf(stderr, "usage: safe_file_probe write PATH TEXT [MODE] | create PATH TEXT | "
			"read PATH\n");
	return 2;
}
