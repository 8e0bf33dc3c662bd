/*
 * mem.cuh: device memory tests.
 *
 * hbm_run: bandwidth of reading, writing and copying a buffer far larger than the L2 (GB/s with
 * 1 GB = 1e9 bytes; a copy counts the bytes read plus the bytes written, as nccl-tests and the
 * H200 figures of docs/PERFORMANCE.md do), each result checked (the copy and the write against the
 * generator, the read's XOR against the XOR of the generator computed by another kernel).
 * The copy figure is the fastest of four copy kernels and cudaMemcpyAsync, all verified: what
 * the memory can do, not what one access pattern gets out of it.
 *
 * memtest_run: patterns over most of the free memory, in 1 GiB chunks: address in address,
 * walking ones and zeros, moving inversions (ascending then descending sweeps), random. Every
 * word is compared; mismatches are counted in 64 bits with the first address, the expected and
 * the read value, and the OR of all flipped bits.
 */
#ifndef VIGIL_CUDA_MEM_CUH
#define VIGIL_CUDA_MEM_CUH

#include "common.cuh"

#include <functional>

struct hbm_result {
	unsigned long long bytes = 0;
	int reps = 0;
	double read_gbps = 0, write_gbps = 0, copy_gbps = 0, memcpy_gbps = 0;
	std::string copy_variant;                 /* the fastest, which copy_gbps is */
	std::vector<std::string> copy_variants;   /* "name: GB/s" of each kernel tried */
	unsigned long long miscompares = 0;
	std::vector<std::string> errors;
	std::string json() const;
};

bool hbm_run(int dev, unsigned long long bytes, int reps, bool inject, hbm_result *res);

struct memtest_result {
	unsigned long long bytes = 0, words_checked = 0, miscompares = 0, flipped_bits = 0;
	unsigned long long free_before = 0;
	int rounds = 0;
	double seconds = 0;
	std::vector<std::string> patterns;
	std::string first_error;
	std::vector<std::string> errors;
	std::string json() const;
};

bool memtest_run(int dev, double fraction, double seconds, bool inject, memtest_result *res,
		 const std::function<void(double)> &prog);

/* Fill / verify a buffer with the generator (also used by the peer copy test). */
bool pattern_fill(void *p, unsigned long long bytes, uint64_t seed, cudaStream_t s, int grid);
/* Count of 8-byte words that differ from the generator; -1 on a CUDA error. */
long long pattern_verify(const void *p, unsigned long long bytes, uint64_t seed, cudaStream_t s,
			 int grid);

#endif
