/*
 * safe_file.cuh: the only way the CUDA helpers write or read files in a rendezvous directory.
 *
 * vigil runs vigil-nccl as root, and the rendezvous directory is shared: a job's directory on a
 * filesystem every host mounts, writable by the job's user, sometimes by anyone. A name there
 * that can be guessed ("progress-0-1.tmp", "nccl-id-0.tmp.<pid>", "out-0.jsonl") is one someone
 * can plant a link at, and open(O_CREAT | O_TRUNC) through it truncates and writes whatever the
 * link names (/etc/shadow). So, as vigil's own writer does (src/lib/fileio_write.c):
 *
 *   hx_write_atomic()  replaces a file: "NAME.tmp.<16 hex digits from getrandom()>" in the same
 *                      directory, created O_EXCL | O_NOFOLLOW, written whole, fsync, renamed over
 *                      NAME; NAME must be a regular file or absent (a link, FIFO or directory
 *                      there is refused); on any failure the temporary file is removed.
 *   hx_create_excl()   a file that must be new (a rank's output): O_EXCL | O_NOFOLLOW.
 *   hx_read_regular()  reads a regular file only: never through a link, never blocking on a FIFO.
 *
 * Plain C++17 and POSIX, no CUDA, all inline: tests/unit/test_net.c compiles it with the system
 * compiler (through cuda/safe_file_probe.cc) and plants the links, so it is tested without a GPU.
 */
#ifndef VIGIL_CUDA_SAFE_FILE_CUH
#define VIGIL_CUDA_SAFE_FILE_CUH

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 16 hex digits nobody else can predict. Early in boot the pool may not be ready: a weaker name
 * then only lets someone who guesses it make the exclusive create fail, never redirect it. */
inline void hx_random_hex16(char out[17])
{
	static uint64_t counter;
	uint64_t v = 0;
#ifdef HX_SAFE_FILE_TEST
	/* The probe (tests only) names the temporary files, so the test can plant links at them:
	 * HX_TEST_RANDOM is a comma-separated list of 16-digit names, used in order. */
	static size_t at;
	const char *list = getenv("HX_TEST_RANDOM");
	if (list && strlen(list) >= at + 16) {
		snprintf(out, 17, "%.16s", list + at);
		at += 17;
		return;
	}
#endif
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = ((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		     ((uint64_t)getpid() << 40) ^ ++counter) *
		    0x9e3779b97f4a7c15ULL;
	}
	snprintf(out, 17, "%016llx", (unsigned long long)v);
}

/* "a symbolic link", "a FIFO", ... for messages. */
inline const char *hx_file_kind(unsigned mode)
{
	if (S_ISREG(mode))
		return "a regular file";
	if (S_ISLNK(mode))
		return "a symbolic link";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

inline std::string hx_file_err(const std::string &path, const char *verb, const char *why)
{
	return std::string("cannot ") + verb + " '" + path + "': " + why;
}

/*
 * Replace path with data (mode less the umask). true, or false with *err
 * ("cannot write 'P': it is a symbolic link, not a regular file"); path is then as it was.
 */
inline bool hx_write_atomic(const std::string &path, const void *data, size_t len, unsigned mode,
			    std::string *err)
{
	size_t slash = path.rfind('/');
	std::string dir = ".", base = path;
	if (slash != std::string::npos) {
		dir = slash == 0 ? "/" : path.substr(0, slash);
		base = path.substr(slash + 1);
	}
	if (base.empty() || base == "." || base == "..") {
		*err = hx_file_err(path, "write", "not a file name");
		return false;
	}
	int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		*err = hx_file_err(path, "write", strerror(errno));
		return false;
	}
	/* Replace a regular file or nothing: rename never follows a link at the target, but renaming
	 * over a FIFO or device someone uses would swap their node for ours; a link there is someone
	 * meddling, and is said so. */
	struct stat st;
	if (fstatat(dfd, base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode)) {
			*err = hx_file_err(path, "write",
					   (std::string("it is ") + hx_file_kind(st.st_mode) +
					    ", not a regular file")
						   .c_str());
			close(dfd);
			return false;
		}
	} else if (errno != ENOENT) {
		*err = hx_file_err(path, "write", strerror(errno));
		close(dfd);
		return false;
	}
	std::string tmp;
	int fd = -1;
	for (int tries = 0;; tries++) {
		char rnd[17];
		hx_random_hex16(rnd);
		tmp = base + ".tmp." + rnd;
		fd = openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode);
		if (fd >= 0 || errno != EEXIST || tries == 8)
			break;
	}
	if (fd < 0) {
		*err = hx_file_err(path, "write", strerror(errno));
		close(dfd);
		return false;
	}
	const char *p = (const char *)data;
	size_t left = len;
	bool ok = true;
	while (ok && left) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			ok = false;
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	if (ok && fsync(fd) < 0)
		ok = false;
	int e = errno;
	if (close(fd) < 0 && ok) {
		ok = false;
		e = errno;
	}
	if (ok && renameat(dfd, tmp.c_str(), dfd, base.c_str()) < 0) {
		ok = false;
		e = errno;
	}
	if (!ok) {
		*err = hx_file_err(path, "write", strerror(e));
		unlinkat(dfd, tmp.c_str(), 0);
	}
	close(dfd);
	return ok;
}

/*
 * Create path, which must not exist (not even as a link): an O_CLOEXEC descriptor open for
 * reading and writing (flags may add O_APPEND), or -1 with *err.
 */
inline int hx_create_excl(const std::string &path, unsigned mode, std::string *err, int flags = 0)
{
	int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | flags,
		      mode);
	if (fd < 0) {
		struct stat st;
		if (errno == EEXIST && lstat(path.c_str(), &st) == 0)
			*err = hx_file_err(
				path, "create",
				(std::string("it exists already, as ") + hx_file_kind(st.st_mode))
					.c_str());
		else
			*err = hx_file_err(path, "create", strerror(errno));
	}
	return fd;
}

/*
 * Read up to cap bytes of path into *out (replacing it): 1 read, 0 absent (ENOENT), -1 with
 * *err: a link, FIFO, device or directory there is refused, and a FIFO never blocks the reader.
 */
inline int hx_read_regular(const std::string &path, std::string *out, size_t cap, std::string *err)
{
	out->clear();
	int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP)
			*err = hx_file_err(path, "read",
					   "it is a symbolic link, not a regular file");
		else
			*err = hx_file_err(path, "read", strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		*err = hx_file_err(path, "read", strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = hx_file_err(
			path, "read",
			(std::string("it is ") + hx_file_kind(st.st_mode) + ", not a regular file")
				.c_str());
		close(fd);
		return -1;
	}
	char buf[4096];
	while (out->size() < cap) {
		size_t want = cap - out->size() < sizeof(buf) ? cap - out->size() : sizeof(buf);
		ssize_t n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*err = hx_file_err(path, "read", strerror(errno));
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		out->append(buf, (size_t)n);
	}
	close(fd);
	return 1;
}

#endif
