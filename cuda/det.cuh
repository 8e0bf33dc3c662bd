/*
 * det.cuh: the determinism workload of 'vigil-gpu determinism' (docs/STRESS.md, "Determinism").
 *
 * A fixed chain of bf16 matrix products through cuBLASLt with one algorithm chosen once (no
 * split-K reduction scheme allowed, so no atomics), then a column-sum reduction of vigil's own in
 * a fixed order, on inputs generated on the GPU from a fixed seed. Run R times (or for a
 * duration); after each repeat one kernel reads the output once and folds it into a 64-bit
 * digest. Every repeat, and every GPU of the same model, driver and cuBLASLt, must print the same
 * digest: a GPU that computes wrong silently (a bit now and then) prints another one.
 *
 * The digest is sum over 64-bit words w_i of mix64(w_i ^ K*i) mod 2^64 (per block, then the
 * blocks' sums added in index order by one block). mix64 is a bijection, so any change to one
 * word changes the digest for certain; several changes cancel with probability about 2^-64.
 * It reads each word once (memory-bound, tens of microseconds for 128 MiB on an H200), where a
 * cryptographic hash would be sequential or need a tree; nobody here is an adversary.
 */
#ifndef VIGIL_CUDA_DET_CUH
#define VIGIL_CUDA_DET_CUH

#include "common.cuh"

/* Bump when the chain, the sizes, the seed or the digest change: references are per version. */
#define DET_WORKLOAD "det-bf16-chain-v1"

struct det_opts {
	int size = 8192;       /* M = N = K of every product */
	int chain = 4;         /* products per repeat */
	int repeats = 0;       /* 0: as many as fit in seconds */
	double seconds = 60;
	uint64_t seed = 20261204; /* fixed: every GPU and host computes the same thing */
	int inject_repeat = 0; /* > 0: flip one bit of the output before that repeat's digest */
	uint64_t inject_entropy = 0; /* which element and bit */
};

struct det_gpu_info {
	int dev;
	gpu_ident ident;
	std::string driver;    /* NVIDIA driver version, "" when not known */
	int cuda_driver = 0, cuda_runtime = 0;
	size_t cublaslt = 0;
};

/* Run the workload on the current device, printing one "det" line per repeat and a "det_done"
 * line at the end (also after an error, with errors[]). */
void det_run(const det_gpu_info &g, const det_opts &o);

/* The NVIDIA driver version ("570.133.20") from NVML, else /proc/driver/nvidia/version. */
std::string det_driver_version();
/* The version in the first line of /proc/driver/nvidia/version, "" when none. */
std::string det_version_from_proc(const char *line);

#endif
