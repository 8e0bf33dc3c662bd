/*
 * common.cuh: what both CUDA helpers (vigil-gpu, vigil-nccl) share: error checks that never abort
 * silently, a small JSON line writer, argument and list parsing, clocks, and the integer hash that
 * generates every test pattern (the same function on host and device, so a checker can recompute
 * any element without reading it from anywhere else).
 *
 * The helpers print one JSON object per line on stdout (docs/STRESS.md lists the fields); human
 * progress goes to the descriptor given by --progress-fd, never to stdout.
 */
#ifndef VIGIL_CUDA_COMMON_CUH
#define VIGIL_CUDA_COMMON_CUH

#include <cuda_runtime.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

/* hx_write_atomic(), hx_create_excl(), hx_read_regular(): every file a helper writes or reads in
 * a shared directory goes through these (never through a planted link). */
#include "safe_file.cuh"

#define VIGIL_HELPER_VERSION "1"

/* Exit codes of the helpers: 0 ran (the verdict is vigil's business), 2 usage, 3 could not run
 * at all (no driver, no GPU), 4 a collective did not finish by its deadline, 1 anything else. */
enum { HX_OK = 0, HX_FAIL = 1, HX_USAGE = 2, HX_NO_GPU = 3, HX_TIMEOUT = 4 };

/* ---- JSON ---- */

struct jw {
	std::string s;
	bool first = true;
	jw() { s = "{"; }
	void key(const char *k)
	{
		if (!first)
			s += ',';
		first = false;
		str_lit(k);
		s += ':';
	}
	void str_lit(const char *v)
	{
		s += '"';
		for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
			switch (*p) {
			case '"': s += "\\\""; break;
			case '\\': s += "\\\\"; break;
			case '\n': s += "\\n"; break;
			case '\t': s += "\\t"; break;
			case '\r': s += "\\r"; break;
			default:
				if (*p < 0x20) {
					char b[8];
					snprintf(b, sizeof(b), "\\u%04x", *p);
					s += b;
				} else {
					s += (char)*p;
				}
			}
		}
		s += '"';
	}
	jw &str(const char *k, const char *v) { key(k); str_lit(v ? v : ""); return *this; }
	jw &str(const char *k, const std::string &v) { return str(k, v.c_str()); }
	jw &num(const char *k, double v)
	{
		key(k);
		char b[64];
		if (!std::isfinite(v))
			snprintf(b, sizeof(b), "null");
		else if (v == std::floor(v) && std::fabs(v) < 1e15)
			snprintf(b, sizeof(b), "%.0f", v);
		else
			snprintf(b, sizeof(b), "%.6g", v);
		s += b;
		return *this;
	}
	jw &u64(const char *k, unsigned long long v)
	{
		key(k);
		s += std::to_string(v);
		return *this;
	}
	jw &i64(const char *k, long long v)
	{
		key(k);
		s += std::to_string(v);
		return *this;
	}
	jw &boolean(const char *k, bool v) { key(k); s += v ? "true" : "false"; return *this; }
	/* Raw JSON (an object or array built elsewhere). */
	jw &raw(const char *k, const std::string &v) { key(k); s += v; return *this; }
	std::string done() { return s + "}"; }
};

std::string json_int_array(const std::vector<int> &v);
std::string json_str_array(const std::vector<std::string> &v);

/* Print one JSON line on stdout, whole, under a lock (threads print results as they finish). */
void emit(const std::string &line);
/* Progress for a person (no-op unless --progress-fd was given). */
void progress_set_fd(int fd);
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"type":"error","code":...,"message":...} on stdout and the message on stderr. */
void emit_error(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- errors ---- */

/* A CUDA error inside a test: recorded in the std::vector<std::string> errs in scope, with the
 * call that failed, and the function returns false. Never ignored, never an abort. */
#define CK(call)                                                                               \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                       \
		if (e_ != cudaSuccess) {                                                       \
			errs.push_back(std::string(#call) + ": " + cudaGetErrorString(e_));    \
			return false;                                                          \
		}                                                                              \
	} while (0)

std::string cuda_err_str(cudaError_t e);

/* ---- arguments ---- */

struct args {
	int argc;
	char **argv;
	int i = 1;
	args(int c, char **v, int start) : argc(c), argv(v), i(start) {}
};
bool parse_int_list(const char *s, std::vector<int> *out);
bool parse_size(const char *s, unsigned long long *out);     /* 64M, 4G, 1024, 1.5G */
bool parse_size_range(const char *s, unsigned long long *lo, unsigned long long *hi);
bool parse_double_arg(const char *s, double *out);
std::vector<std::string> split(const char *s, char sep);

/* ---- time ---- */

static inline double now_s()
{
	using namespace std::chrono;
	return duration<double>(steady_clock::now().time_since_epoch()).count();
}

/* ---- hashing: the pattern generator ---- */

__host__ __device__ static inline uint64_t mix64(uint64_t x)
{
	/* splitmix64 finaliser */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Uniform in [-1, 1) from an index and a seed. */
__host__ __device__ static inline float unit_sym(uint64_t idx, uint64_t seed)
{
	uint64_t h = mix64(idx ^ mix64(seed));
	return (float)((double)(h >> 11) * (1.0 / 4503599627370496.0) - 1.0);
}

/* Small integer in [-r, r] from an index and a seed. */
__host__ __device__ static inline int small_int(uint64_t idx, uint64_t seed, int r)
{
	uint64_t h = mix64(idx ^ mix64(seed ^ 0x5bd1e995ULL));
	return (int)(h % (uint64_t)(2 * r + 1)) - r;
}

/* GPU identity, filled from CUDA (and NVML where it answers). */
struct gpu_ident {
	int index;
	std::string name, pci, uuid;
	int sm_count = 0, cc_major = 0, cc_minor = 0;
	unsigned long long mem_total = 0;
};
bool gpu_ident_read(int dev, gpu_ident *g, std::string *err);
void gpu_ident_json(jw &j, const gpu_ident &g);

/* Every device if list is empty, else list checked against the device count. */
bool select_gpus(const std::vector<int> &want, std::vector<int> *out, std::string *err);

#endif
