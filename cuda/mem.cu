/* mem.cu: HBM bandwidth (read, write, copy) and memory pattern tests (see mem.cuh). */
#include "mem.cuh"

#include <algorithm>

struct mt_counters {
	unsigned long long mis;
	unsigned long long flipped;
	unsigned long long xor_read;
	int first_set;
	unsigned long long addr, expect, got;
};

/* A cheap generator for the bandwidth kernels (one multiply per word, so writing it does not
 * cost more than the memory does). */
__host__ __device__ __forceinline__ uint64_t lin_word(uint64_t idx, uint64_t seed)
{
	return (idx * 0x9e3779b97f4a7c15ULL) ^ seed;
}

__global__ void k_fill(uint4 *p, size_t n, uint64_t seed)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
		uint64_t w0 = lin_word(2 * i, seed), w1 = lin_word(2 * i + 1, seed);
		p[i] = make_uint4((unsigned)w0, (unsigned)(w0 >> 32), (unsigned)w1,
				  (unsigned)(w1 >> 32));
	}
}

/* The write test: the same stores as k_fill, four independent ones in flight per thread. */
__global__ void k_write(uint4 *__restrict__ p, size_t n, uint64_t seed)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	for (; i + 3 * stride < n; i += 4 * stride) {
#pragma unroll
		for (int u = 0; u < 4; u++) {
			size_t x = i + u * stride;
			uint64_t w0 = lin_word(2 * x, seed), w1 = lin_word(2 * x + 1, seed);
			p[x] = make_uint4((unsigned)w0, (unsigned)(w0 >> 32), (unsigned)w1,
					  (unsigned)(w1 >> 32));
		}
	}
	for (; i < n; i += stride) {
		uint64_t w0 = lin_word(2 * i, seed), w1 = lin_word(2 * i + 1, seed);
		p[i] = make_uint4((unsigned)w0, (unsigned)(w0 >> 32), (unsigned)w1,
				  (unsigned)(w1 >> 32));
	}
}

__device__ __forceinline__ unsigned long long warp_xor(unsigned long long v)
{
	for (int o = 16; o; o >>= 1)
		v ^= __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ unsigned long long u4_xor(uint4 v)
{
	return ((unsigned long long)v.y << 32 | v.x) ^ ((unsigned long long)v.w << 32 | v.z);
}

__global__ void k_read(const uint4 *__restrict__ p, size_t n, unsigned long long *out)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	unsigned long long x = 0;
	for (; i + 3 * stride < n; i += 4 * stride) {
		uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
		x ^= u4_xor(a) ^ u4_xor(b) ^ u4_xor(c) ^ u4_xor(d);
	}
	for (; i < n; i += stride)
		x ^= u4_xor(p[i]);
	x = warp_xor(x);
	if ((threadIdx.x & 31) == 0 && x)
		atomicXor(out, x);
}

/* The XOR the read must find, computed from the generator without reading memory. */
__global__ void k_expect_xor(size_t n, uint64_t seed, unsigned long long *out)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	unsigned long long x = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
		x ^= lin_word(2 * i, seed) ^ lin_word(2 * i + 1, seed);
	x = warp_xor(x);
	if ((threadIdx.x & 31) == 0 && x)
		atomicXor(out, x);
}

__global__ void k_copy(const uint4 *__restrict__ s, uint4 *__restrict__ d, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	for (; i + 3 * stride < n; i += 4 * stride) {
		uint4 a = s[i], b = s[i + stride], c = s[i + 2 * stride], e = s[i + 3 * stride];
		d[i] = a;
		d[i + stride] = b;
		d[i + 2 * stride] = c;
		d[i + 3 * stride] = e;
	}
	for (; i < n; i += stride)
		d[i] = s[i];
}

/* Copy variants: the fastest one on this GPU is the copy figure (each one verified). */
template <int U, bool STREAM>
__global__ void k_copy_v(const uint4 *__restrict__ s, uint4 *__restrict__ d, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	for (; i + (U - 1) * stride < n; i += U * stride) {
		uint4 v[U];
#pragma unroll
		for (int u = 0; u < U; u++)
			v[u] = STREAM ? __ldcs(s + i + u * stride) : s[i + u * stride];
#pragma unroll
		for (int u = 0; u < U; u++) {
			if (STREAM)
				__stcs(d + i + u * stride, v[u]);
			else
				d[i + u * stride] = v[u];
		}
	}
	for (; i < n; i += stride)
		d[i] = s[i];
}

__device__ __forceinline__ void record_bad(mt_counters *c, const void *addr, uint64_t want,
					   uint64_t got)
{
	atomicAdd(&c->mis, 1ULL);
	atomicOr(&c->flipped, (unsigned long long)(want ^ got));
	if (atomicCAS(&c->first_set, 0, 1) == 0) {
		c->addr = (unsigned long long)addr;
		c->expect = want;
		c->got = got;
	}
}

__global__ void k_verify_lin(const uint64_t *p, size_t n, uint64_t seed, mt_counters *c)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
		uint64_t want = lin_word(i, seed), got = p[i];
		if (got != want)
			record_bad(c, p + i, want, got);
	}
}

/* ---- pattern test ---- */

enum { PM_ADDR, PM_WALK, PM_RAND, PM_CONST };

__device__ __forceinline__ uint64_t pat(int mode, uint64_t idx, const uint64_t *addr, uint64_t a,
					uint64_t b)
{
	switch (mode) {
	case PM_ADDR:
		return (uint64_t)addr ^ a;
	case PM_WALK:
		return (1ULL << ((idx + a) & 63)) ^ b;
	case PM_RAND:
		return mix64(idx ^ a);
	default:
		return a;
	}
}

__global__ void k_mt_write(uint64_t *p, size_t n, uint64_t base, int mode, uint64_t a, uint64_t b)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
		p[i] = pat(mode, base + i, p + i, a, b);
}

__global__ void k_mt_verify(const uint64_t *p, size_t n, uint64_t base, int mode, uint64_t a,
			    uint64_t b, mt_counters *c)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
		uint64_t want = pat(mode, base + i, p + i, a, b), got = p[i];
		if (got != want)
			record_bad(c, p + i, want, got);
	}
}

/* Moving inversions: check P and write ~P going up; check ~P and write P going down. */
__global__ void k_mt_sweep(uint64_t *p, size_t n, uint64_t P, int up, mt_counters *c)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < n; t += stride) {
		size_t i = up ? t : n - 1 - t;
		uint64_t want = up ? P : ~P, got = p[i];
		if (got != want)
			record_bad(c, p + i, want, got);
		p[i] = up ? ~P : P;
	}
}

__global__ void k_flip(uint64_t *p, uint64_t mask)
{
	*p ^= mask;
}

/* ---- helpers ---- */

namespace {

struct stream_guard {
	cudaStream_t s = nullptr;
	~stream_guard()
	{
		if (s) {
			cudaStreamSynchronize(s);
			cudaStreamDestroy(s);
		}
	}
};

struct buf_guard {
	std::vector<void *> p;
	~buf_guard()
	{
		for (void *x : p)
			cudaFree(x);
	}
};

double median(std::vector<double> v)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

int sm_grid(int dev)
{
	int sms = 132;
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	return sms * 8;
}

} // namespace

bool pattern_fill(void *p, unsigned long long bytes, uint64_t seed, cudaStream_t s, int grid)
{
	k_fill<<<grid, 256, 0, s>>>((uint4 *)p, bytes / 16, seed);
	return cudaGetLastError() == cudaSuccess;
}

long long pattern_verify(const void *p, unsigned long long bytes, uint64_t seed, cudaStream_t s,
			 int grid)
{
	mt_counters *c = nullptr, h;
	if (cudaMalloc(&c, sizeof(*c)) != cudaSuccess)
		return -1;
	long long ret = -1;
	if (cudaMemsetAsync(c, 0, sizeof(*c), s) == cudaSuccess) {
		k_verify_lin<<<grid, 256, 0, s>>>((const uint64_t *)p, bytes / 8, seed, c);
		if (cudaGetLastError() == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess &&
		    cudaMemcpy(&h, c, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess)
			ret = (long long)h.mis;
	}
	cudaFree(c);
	return ret;
}

std::string hbm_result::json() const
{
	jw j;
	j.u64("bytes", bytes).num("reps", reps);
	j.num("read_gbps", std::round(read_gbps)).num("write_gbps", std::round(write_gbps));
	j.num("copy_gbps", std::round(copy_gbps)).num("memcpy_gbps", std::round(memcpy_gbps));
	j.str("copy_best", copy_variant).raw("copy_variants", json_str_array(copy_variants));
	j.u64("miscompares", miscompares);
	j.raw("errors", json_str_array(errors));
	return j.done();
}

static bool hbm_inner(int dev, unsigned long long bytes, int reps, bool inject, hbm_result *res,
		      std::vector<std::string> &errs)
{
	CK(cudaSetDevice(dev));
	int grid = sm_grid(dev);
	stream_guard sg;
	buf_guard bg;
	CK(cudaStreamCreateWithFlags(&sg.s, cudaStreamNonBlocking));
	cudaStream_t s = sg.s;
	bytes &= ~(unsigned long long)4095;
	void *src = nullptr, *dst = nullptr;
	mt_counters *c = nullptr;
	unsigned long long *x = nullptr;
	CK(cudaMalloc(&src, bytes));
	bg.p.push_back(src);
	CK(cudaMalloc(&dst, bytes));
	bg.p.push_back(dst);
	CK(cudaMalloc(&c, sizeof(*c)));
	bg.p.push_back(c);
	CK(cudaMalloc(&x, 2 * sizeof(*x)));
	bg.p.push_back(x);
	CK(cudaMemsetAsync(c, 0, sizeof(*c), s));
	res->bytes = bytes;
	res->reps = reps;
	size_t n16 = bytes / 16;
	const uint64_t seed_src = 0x1234567ULL, seed_w = 0xabcdefULL;
	k_fill<<<grid, 256, 0, s>>>((uint4 *)src, n16, seed_src);
	CK(cudaGetLastError());

	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	static const int NV = 4;
	static const char *const vname[NV] = { "grid-stride x4", "streaming x4", "streaming x8",
					       "one per thread" };
	std::vector<double> rd, wr, mc, cpv[NV];
	for (int rep = -1; rep < reps; rep++) { /* rep -1 warms up */
		float ms;
		CK(cudaMemsetAsync(x, 0, 2 * sizeof(*x), s));
		CK(cudaEventRecord(e0, s));
		k_read<<<grid, 256, 0, s>>>((const uint4 *)src, n16, x);
		CK(cudaEventRecord(e1, s));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (rep >= 0)
			rd.push_back(bytes / (ms * 1e-3) / 1e9);
		k_expect_xor<<<grid, 256, 0, s>>>(n16, seed_src, x + 1);
		unsigned long long hx[2];
		CK(cudaMemcpyAsync(hx, x, sizeof(hx), cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		if (hx[0] != hx[1])
			res->miscompares++;

		CK(cudaEventRecord(e0, s));
		k_write<<<grid, 256, 0, s>>>((uint4 *)dst, n16, seed_w);
		CK(cudaEventRecord(e1, s));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (rep >= 0)
			wr.push_back(bytes / (ms * 1e-3) / 1e9);
		k_verify_lin<<<grid, 256, 0, s>>>((const uint64_t *)dst, bytes / 8, seed_w, c);

		for (int v = 0; v < NV; v++) {
			CK(cudaMemsetAsync(dst, 0, bytes, s));
			CK(cudaEventRecord(e0, s));
			switch (v) {
			case 0:
				k_copy<<<grid, 256, 0, s>>>((const uint4 *)src, (uint4 *)dst, n16);
				break;
			case 1:
				k_copy_v<4, true><<<grid, 256, 0, s>>>((const uint4 *)src, (uint4 *)dst,
								     n16);
				break;
			case 2:
				k_copy_v<8, true><<<grid / 2, 512, 0, s>>>((const uint4 *)src,
									 (uint4 *)dst, n16);
				break;
			default:
				k_copy_v<1, false><<<(unsigned)std::min<size_t>((n16 + 255) / 256,
										 0x7fffffffULL),
						     256, 0, s>>>((const uint4 *)src, (uint4 *)dst, n16);
			}
			CK(cudaEventRecord(e1, s));
			CK(cudaEventSynchronize(e1));
			CK(cudaEventElapsedTime(&ms, e0, e1));
			if (rep >= 0)
				cpv[v].push_back(2.0 * bytes / (ms * 1e-3) / 1e9);
			if (inject && rep == 0 && v == 0)
				k_flip<<<1, 1, 0, s>>>((uint64_t *)dst + 12345, 1ULL << 17);
			k_verify_lin<<<grid, 256, 0, s>>>((const uint64_t *)dst, bytes / 8, seed_src,
							   c);
		}

		CK(cudaMemsetAsync(dst, 0, bytes, s));
		CK(cudaEventRecord(e0, s));
		CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
		CK(cudaEventRecord(e1, s));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (rep >= 0)
			mc.push_back(2.0 * bytes / (ms * 1e-3) / 1e9);
		k_verify_lin<<<grid, 256, 0, s>>>((const uint64_t *)dst, bytes / 8, seed_src, c);
		CK(cudaGetLastError());
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	mt_counters h;
	CK(cudaMemcpyAsync(&h, c, sizeof(h), cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	res->miscompares += h.mis;
	res->read_gbps = median(rd);
	res->write_gbps = median(wr);
	res->memcpy_gbps = median(mc);
	res->copy_gbps = res->memcpy_gbps;
	res->copy_variant = "cudaMemcpyAsync";
	for (int v = 0; v < NV; v++) {
		res->copy_variants.push_back(std::string(vname[v]) + ": " +
					     std::to_string((long)median(cpv[v])));
		if (median(cpv[v]) > res->copy_gbps) {
			res->copy_gbps = median(cpv[v]);
			res->copy_variant = vname[v];
		}
	}
	return true;
}

bool hbm_run(int dev, unsigned long long bytes, int reps, bool inject, hbm_result *res)
{
	return hbm_inner(dev, bytes, reps, inject, res, res->errors);
}

std::string memtest_result::json() const
{
	jw j;
	char fb[32];
	snprintf(fb, sizeof(fb), "0x%016llx", flipped_bits);
	j.u64("bytes", bytes).u64("free_bytes_before", free_before);
	j.num("rounds", rounds).num("seconds", std::round(seconds * 1000) / 1000);
	j.raw("patterns", json_str_array(patterns));
	j.u64("words_checked", words_checked).u64("miscompares", miscompares);
	j.str("flipped_bits", fb);
	if (!first_error.empty())
		j.str("first_error", first_error);
	j.raw("errors", json_str_array(errors));
	return j.done();
}

static bool memtest_inner(int dev, double fraction, double seconds, bool inject,
			  memtest_result *res, const std::function<void(double)> &prog,
			  std::vector<std::string> &errs)
{
	CK(cudaSetDevice(dev));
	int grid = sm_grid(dev);
	stream_guard sg;
	buf_guard bg;
	CK(cudaStreamCreateWithFlags(&sg.s, cudaStreamNonBlocking));
	cudaStream_t s = sg.s;
	size_t fr = 0, tot = 0;
	CK(cudaMemGetInfo(&fr, &tot));
	res->free_before = fr;
	const size_t chunk = 1ULL << 30, reserve = 768ULL << 20;
	double want_d = (double)fr * fraction - (double)reserve;
	size_t want = want_d > 0 ? (size_t)want_d : 0;
	std::vector<std::pair<uint64_t *, size_t>> chunks; /* pointer, words */
	size_t got = 0;
	while (got < want) {
		size_t sz = std::min(chunk, want - got) & ~(size_t)4095;
		if (sz < (64u << 20))
			break;
		void *p = nullptr;
		if (cudaMalloc(&p, sz) != cudaSuccess) {
			cudaGetLastError(); /* not sticky: the memory is simply in use */
			break;
		}
		bg.p.push_back(p);
		chunks.push_back({ (uint64_t *)p, sz / 8 });
		got += sz;
	}
	res->bytes = got;
	if (chunks.empty()) {
		errs.push_back("could not allocate any memory to test (" + std::to_string(fr >> 20) +
			       " MiB free)");
		return false;
	}
	mt_counters *c = nullptr;
	CK(cudaMalloc(&c, sizeof(*c)));
	bg.p.push_back(c);
	CK(cudaMemsetAsync(c, 0, sizeof(*c), s));

	auto write_all = [&](int mode, uint64_t a, uint64_t b) {
		uint64_t base = 0;
		for (auto &ch : chunks) {
			k_mt_write<<<grid, 256, 0, s>>>(ch.first, ch.second, base, mode, a, b);
			base += ch.second;
		}
	};
	auto verify_all = [&](int mode, uint64_t a, uint64_t b) {
		uint64_t base = 0;
		for (auto &ch : chunks) {
			k_mt_verify<<<grid, 256, 0, s>>>(ch.first, ch.second, base, mode, a, b, c);
			base += ch.second;
			res->words_checked += ch.second;
		}
	};
	double t0 = now_s();
	bool injected = false;
	for (int round = 0;; round++) {
		struct step {
			const char *name;
			int mode;
			uint64_t a, b;
		};
		const uint64_t rconst[] = { 0x0ULL, 0x5555555555555555ULL, 0x3333333333333333ULL,
					    mix64(round) };
		const step steps[] = {
			{ "address", PM_ADDR, 0, 0 },
			{ "address_inverse", PM_ADDR, ~0ULL, 0 },
			{ "walking_ones", PM_WALK, (uint64_t)round, 0 },
			{ "walking_zeros", PM_WALK, (uint64_t)round, ~0ULL },
			{ "moving_inversions", PM_CONST, rconst[round % 4], 0 },
			{ "random", PM_RAND, mix64(0xfeedULL + round), 0 },
		};
		for (const step &st : steps) {
			write_all(st.mode, st.a, st.b);
			if (inject && !injected) {
				k_flip<<<1, 1, 0, s>>>(chunks[0].first + 777, 1ULL << 3);
				injected = true;
			}
			if (st.mode == PM_CONST) {
				/* up: check P, write ~P; down: check ~P, write P; then check P */
				for (auto &ch : chunks)
					k_mt_sweep<<<grid, 256, 0, s>>>(ch.first, ch.second, st.a, 1, c);
				for (auto it = chunks.rbegin(); it != chunks.rend(); ++it)
					k_mt_sweep<<<grid, 256, 0, s>>>(it->first, it->second, st.a, 0,
									c);
				for (auto &ch : chunks)
					res->words_checked += 2 * ch.second;
			}
			verify_all(st.mode, st.a, st.b);
			CK(cudaGetLastError());
			if (!round)
				res->patterns.push_back(st.name);
			CK(cudaStreamSynchronize(s));
			prog(std::min(1.0, (now_s() - t0) / std::max(seconds, 1e-3)));
		}
		res->rounds = round + 1;
		if (now_s() - t0 >= seconds)
			break;
	}
	res->seconds = now_s() - t0;
	mt_counters h;
	CK(cudaMemcpyAsync(&h, c, sizeof(h), cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	res->miscompares = h.mis;
	res->flipped_bits = h.flipped;
	if (h.first_set) {
		char b[160];
		unsigned long long off = 0;
		for (auto &ch : chunks) { /* offset into the tested memory, not a raw pointer */
			unsigned long long lo = (unsigned long long)ch.first;
			if (h.addr >= lo && h.addr < lo + ch.second * 8) {
				off += h.addr - lo;
				break;
			}
			off += ch.second * 8;
		}
		snprintf(b, sizeof(b), "word at offset 0x%llx: read 0x%016llx, wrote 0x%016llx", off,
			 h.got, h.expect);
		res->first_error = b;
	}
	return true;
}

bool memtest_run(int dev, double fraction, double seconds, bool inject, memtest_result *res,
		 const std::function<void(double)> &prog)
{
	return memtest_inner(dev, fraction, seconds, inject, res, prog, res->errors);
}
