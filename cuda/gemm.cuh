/*
 * gemm.cuh: sustained matrix multiplication through cuBLASLt, every product verified against a
 * reference computed another way (docs/STRESS.md, "Verification"):
 *
 *  - random inputs (full mantissas, fresh every few seconds): every output C of the sustained loop
 *    is checked by block checksums. For each block of 256 rows and each column j,
 *    sum_i C[i][j] must equal sum_k (sum_i A[i][k]) * B[k][j], the right side computed once per
 *    input set in fp64 by plain CUDA kernels (no tensor cores, no cuBLAS), within a tolerance
 *    derived from the rounding of the output type and of the fp32 accumulation (tau sigma);
 *  - known-answer inputs (small integers) at the start and end of each phase: every element of
 *    the cuBLAS result must equal, exactly, the integer product computed by a plain tiled FFMA
 *    kernel and rounded once to the output type.
 *
 * Miscompares are counted in 64 bits. TFLOP/s is timed with events around the products only (the
 * checks run between timed windows), so it is comparable with torch.matmul at the same shape;
 * tflops_wall is the work done over the whole sustained window by the host clock (products x
 * FLOPs / time), which also falls when another process takes turns on the GPU between products.
 */
#ifndef VIGIL_CUDA_GEMM_CUH
#define VIGIL_CUDA_GEMM_CUH

#include "common.cuh"

#include <functional>

enum gemm_dtype { GD_BF16, GD_FP16, GD_TF32, GD_FP8, GD__COUNT };

const char *gemm_dtype_name(gemm_dtype d);
bool gemm_dtype_parse(const char *s, gemm_dtype *out);

struct gemm_opts {
	int size = 8192;            /* M = N = K */
	double seconds = 10;        /* sustained time for this dtype */
	double regen_s = 2.0;       /* fresh random inputs this often */
	double tau = 10;            /* tolerance in sigmas */
	int ring = 4;               /* outputs per timed window */
	uint64_t seed = 1;
	bool inject = false;        /* corrupt one output element once (tests the checker) */
	bool kat = true;
	bool verify = true;         /* burn mode turns it off */
	double duty = 1;            /* burn: compute this fraction of each 40 ms, sleep the rest */
};

struct gemm_result {
	gemm_dtype dtype;
	bool supported = true;
	std::string note;
	int m = 0, n = 0, k = 0;
	double seconds = 0;
	unsigned long long gemms = 0, checked = 0, checksums = 0, miscompares = 0;
	unsigned long long kat_runs = 0, kat_elements = 0, kat_miscompares = 0;
	double tflops_median = 0, tflops_mean = 0, tflops_min = 0, tflops_max = 0;
	double tflops_first = 0, tflops_last = 0;
	double tflops_wall = 0;     /* gemms x 2MNK / seconds: what the GPU delivered over the
				     * sustained window, checks and time lost to others included */
	double max_err_ratio = 0;   /* worst |checksum - reference| / tolerance seen */
	double detect_rms = 0;      /* an error in one element above this many rms(C) is caught */
	std::string first_error;
	std::string algo;
	std::vector<std::string> errors;
	std::string json() const;
};

typedef std::function<void(const char *phase, double tflops, double done_frac)> gemm_progress_fn;

/* Run one dtype on the current device for opts.seconds. False when it could not run (errors). */
bool gemm_run(int dev, gemm_dtype dt, const gemm_opts &opts, gemm_result *res,
	      const gemm_progress_fn &prog);

#endif
