/* det.cu: the determinism workload (see det.cuh for the method and the digest). */
#include "det.cuh"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <dlfcn.h>

#include <cmath>

typedef __nv_bfloat16 bf16_t;

/* ---- kernels ---- */

/* Uniform in [-1, 1), rounded to bf16 here, so the stored inputs are the same on every GPU. */
__global__ void k_det_gen(bf16_t *p, size_t n, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2bfloat16_rn(unit_sym(i, seed));
}

/* Column sums of x (rows x cols, column-major) in fp32, each in a fixed order: thread t adds
 * rows t, t+256, ... in sequence, then a fixed tree over the 256 partial sums. No atomics: the
 * same input gives the same bits every time. */
__global__ void __launch_bounds__(256) k_det_colsum(const bf16_t *x, int rows, float *out)
{
	__shared__ float s[256];
	const bf16_t *col = x + (size_t)blockIdx.x * rows;
	float a = 0;
	for (int i = threadIdx.x; i < rows; i += 256)
		a += __bfloat162float(col[i]);
	s[threadIdx.x] = a;
	__syncthreads();
	for (int w = 128; w > 0; w >>= 1) {
		if ((int)threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = s[0];
}

__device__ __forceinline__ uint64_t det_term(uint64_t w, uint64_t i)
{
	return mix64(w ^ (i * 0xd6e8feb86659fd93ULL));
}

/* One pass: block b adds the terms of its words into part[b] (wrapping). Words of a (na, even)
 * come first, then b's (nb), so the vector's words have their own positions. a is read 16 bytes
 * at a time, four loads in flight per thread: the pass is memory-bound. */
__global__ void __launch_bounds__(256) k_det_digest(const uint64_t *a, size_t na,
						    const uint64_t *b, size_t nb, uint64_t *part)
{
	__shared__ uint64_t s[256];
	uint64_t acc = 0;
	const ulonglong2 *a2 = (const ulonglong2 *)a;
	size_t n2 = na / 2, stride = (size_t)gridDim.x * blockDim.x;
	size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
#pragma unroll 4
	for (size_t j = t; j < n2; j += stride) {
		ulonglong2 w = a2[j];
		acc += det_term(w.x, 2 * j) + det_term(w.y, 2 * j + 1);
	}
	for (size_t k = t; k < nb; k += stride)
		acc += det_term(b[k], na + k);
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int w = 128; w > 0; w >>= 1) {
		if ((int)threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		part[blockIdx.x] = s[0];
}

/* The blocks' sums (n <= 1024) by one block of 1024 threads in a fixed tree (wrapping addition
 * is exact and commutative: any order gives the same digest; this one is fast). */
__global__ void __launch_bounds__(1024) k_det_combine(const uint64_t *part, int n, uint64_t *out)
{
	__shared__ uint64_t s[1024];
	s[threadIdx.x] = (int)threadIdx.x < n ? part[threadIdx.x] : 0;
	__syncthreads();
	for (int w = 512; w > 0; w >>= 1) {
		if ((int)threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*out = s[0];
}

/* --inject sdc: one bit of one element, after the computation and before the digest. */
__global__ void k_det_flip(uint16_t *x, size_t idx, int bit)
{
	x[idx] ^= (uint16_t)(1u << bit);
}

/* ---- host ---- */

#define LTC(call)                                                                              \
	do {                                                                                   \
		cublasStatus_t s_ = (call);                                                    \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
			errs.push_back(std::string(#call) + ": " + cublasLtGetStatusName(s_));  \
			return false;                                                          \
		}                                                                              \
	} while (0)

namespace {

struct det_state {
	cublasLtHandle_t h = nullptr;
	cublasLtMatmulDesc_t desc = nullptr;
	cublasLtMatrixLayout_t lay = nullptr;
	cublasLtMatmulAlgo_t algo;
	std::string algo_desc;
	void *ws = nullptr;
	size_t ws_size = 32u << 20;
	std::vector<bf16_t *> w;    /* chain[0] is the input, chain[1..] the weights */
	bf16_t *x[2] = { nullptr, nullptr };
	float *colsum = nullptr;
	uint64_t *part = nullptr, *digest = nullptr;
	int blocks = 0;
	cudaStream_t s = nullptr;
	cudaEvent_t e0 = nullptr, e1 = nullptr, e2 = nullptr;
	~det_state()
	{
		if (desc)
			cublasLtMatmulDescDestroy(desc);
		if (lay)
			cublasLtMatrixLayoutDestroy(lay);
		if (h)
			cublasLtDestroy(h);
		for (bf16_t *p : w)
			cudaFree(p);
		cudaFree(x[0]);
		cudaFree(x[1]);
		cudaFree(colsum);
		cudaFree(part);
		cudaFree(digest);
		cudaFree(ws);
		if (e0)
			cudaEventDestroy(e0);
		if (e1)
			cudaEventDestroy(e1);
		if (e2)
			cudaEventDestroy(e2);
		if (s)
			cudaStreamDestroy(s);
	}
};

/* The plan: bf16 in and out, fp32 accumulation, C = alpha A^T B. The heuristic is asked once,
 * for algorithms without a split-K reduction scheme (those reduce in a workspace or with
 * atomics); its first answer is then used for every product of every repeat. */
bool det_plan(det_state &st, int n, std::vector<std::string> &errs)
{
	LTC(cublasLtCreate(&st.h));
	LTC(cublasLtMatmulDescCreate(&st.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
	LTC(cublasLtMatmulDescSetAttribute(st.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT)));
	LTC(cublasLtMatmulDescSetAttribute(st.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN)));
	LTC(cublasLtMatrixLayoutCreate(&st.lay, CUDA_R_16BF, n, n, n));
	CK(cudaMalloc(&st.ws, st.ws_size));
	cublasLtMatmulPreference_t pref;
	LTC(cublasLtMatmulPreferenceCreate(&pref));
	uint64_t wss = st.ws_size;
	uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE;
	cublasStatus_t r = cublasLtMatmulPreferenceSetAttribute(
		pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wss, sizeof(wss));
	if (r == CUBLAS_STATUS_SUCCESS)
		r = cublasLtMatmulPreferenceSetAttribute(
			pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof(red));
	cublasLtMatmulHeuristicResult_t hr[1];
	int got = 0;
	if (r == CUBLAS_STATUS_SUCCESS)
		r = cublasLtMatmulAlgoGetHeuristic(st.h, st.desc, st.lay, st.lay, st.lay, st.lay, pref,
						   1, hr, &got);
	cublasLtMatmulPreferenceDestroy(pref);
	LTC(r);
	if (got < 1) {
		errs.push_back("cuBLASLt has no algorithm without split-K reduction for this product");
		return false;
	}
	st.algo = hr[0].algo;
	/* what was chosen, so two hosts that differ can see whether cuBLAS chose differently */
	static const cublasLtMatmulAlgoConfigAttributes_t at[] = {
		CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_STAGES_ID,
		CUBLASLT_ALGO_CONFIG_SPLITK_NUM, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
		CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION
	};
	static const char *const nm[] = { "id", "tile", "stages", "splitk", "reduction",
					   "swizzle", "custom" };
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		uint32_t v = 0;
		size_t sz = 0;
		if (cublasLtMatmulAlgoConfigGetAttribute(&st.algo, at[i], &v, sizeof(v), &sz) !=
		    CUBLAS_STATUS_SUCCESS)
			continue;
		st.algo_desc += (st.algo_desc.empty() ? "" : " ") + std::string(nm[i]) + "=" +
				std::to_string(v);
	}
	return true;
}

bool det_setup(det_state &st, const det_opts &o, std::vector<std::string> &errs)
{
	size_t n = (size_t)o.size, elems = n * n;
	CK(cudaStreamCreateWithFlags(&st.s, cudaStreamNonBlocking));
	CK(cudaEventCreate(&st.e0));
	CK(cudaEventCreate(&st.e1));
	CK(cudaEventCreate(&st.e2));
	if (!det_plan(st, o.size, errs))
		return false;
	st.w.assign(o.chain + 1, nullptr);
	for (int i = 0; i <= o.chain; i++) {
		CK(cudaMalloc(&st.w[i], elems * sizeof(bf16_t)));
		k_det_gen<<<1024, 256, 0, st.s>>>(st.w[i], elems, o.seed + 1000003ULL * i);
		CK(cudaGetLastError());
	}
	CK(cudaMalloc(&st.x[0], elems * sizeof(bf16_t)));
	CK(cudaMalloc(&st.x[1], elems * sizeof(bf16_t)));
	CK(cudaMalloc(&st.colsum, n * sizeof(float)));
	/* a fixed block count (not the SM count), so that the partial sums are laid out alike on
	 * every GPU; the result would not change anyway (wrapping addition) */
	st.blocks = 1024;
	CK(cudaMalloc(&st.part, st.blocks * sizeof(uint64_t)));
	CK(cudaMalloc(&st.digest, sizeof(uint64_t)));
	CK(cudaStreamSynchronize(st.s));
	return true;
}

/* One repeat: the chain, the column sums, [the flip], the digest. Times in ms from events. */
bool det_repeat(det_state &st, const det_opts &o, bool flip, size_t flip_idx, int flip_bit,
		uint64_t *digest, float *work_ms, float *digest_ms, std::vector<std::string> &errs)
{
	size_t n = (size_t)o.size, elems = n * n;
	/* the chain keeps the scale: entries of variance 1/3 stay so with alpha^2 = 3/n */
	const float alpha = (float)std::sqrt(3.0 / (double)n), zero = 0.0f;
	/* poison the final output so a product that writes nothing cannot pass as a repeat */
	bf16_t *out = st.x[(o.chain - 1) & 1];
	CK(cudaMemsetAsync(out, 0xff, elems * sizeof(bf16_t), st.s));
	CK(cudaEventRecord(st.e0, st.s));
	const bf16_t *in = st.w[0];
	for (int i = 0; i < o.chain; i++) {
		bf16_t *dst = st.x[i & 1];
		LTC(cublasLtMatmul(st.h, st.desc, &alpha, st.w[i + 1], st.lay, in, st.lay, &zero, dst,
				   st.lay, dst, st.lay, &st.algo, st.ws, st.ws_size, st.s));
		in = dst;
	}
	k_det_colsum<<<(unsigned)n, 256, 0, st.s>>>(out, (int)n, st.colsum);
	CK(cudaGetLastError());
	CK(cudaEventRecord(st.e1, st.s));
	if (flip) {
		k_det_flip<<<1, 1, 0, st.s>>>((uint16_t *)out, flip_idx, flip_bit);
		CK(cudaGetLastError());
	}
	k_det_digest<<<st.blocks, 256, 0, st.s>>>((const uint64_t *)out, elems / 4,
						   (const uint64_t *)st.colsum, n / 2, st.part);
	CK(cudaGetLastError());
	k_det_combine<<<1, 1024, 0, st.s>>>(st.part, st.blocks, st.digest);
	CK(cudaGetLastError());
	CK(cudaEventRecord(st.e2, st.s));
	CK(cudaMemcpyAsync(digest, st.digest, sizeof(uint64_t), cudaMemcpyDeviceToHost, st.s));
	CK(cudaStreamSynchronize(st.s));
	CK(cudaEventElapsedTime(work_ms, st.e0, st.e1));
	CK(cudaEventElapsedTime(digest_ms, st.e1, st.e2));
	return true;
}

void ident_json(jw &j, const det_gpu_info &g)
{
	j.num("gpu", g.dev).str("name", g.ident.name).str("uuid", g.ident.uuid);
	j.str("driver", g.driver).num("cuda_driver", g.cuda_driver);
	j.num("cuda_runtime", g.cuda_runtime).u64("cublaslt", g.cublaslt);
}

} /* namespace */

void det_run(const det_gpu_info &g, const det_opts &o)
{
	std::vector<std::string> errs;
	double t0 = now_s();
	det_state st;
	int done = 0;
	double work_ms = 0, dig_ms = 0, t_loop = 0;
	bool ok = det_setup(st, o, errs);
	double setup_s = now_s() - t0;
	if (ok) {
		size_t elems = (size_t)o.size * o.size;
		uint64_t h = mix64(o.inject_entropy);
		size_t flip_idx = (size_t)(h % elems);
		int flip_bit = (int)((h >> 40) % 16);
		double start = now_s();
		while (o.repeats > 0 ? done < o.repeats : (done < 3 || now_s() - start < o.seconds)) {
			uint64_t d = 0;
			float wm = 0, dm = 0;
			bool flip = o.inject_repeat == done + 1;
			if (!det_repeat(st, o, flip, flip_idx, flip_bit, &d, &wm, &dm, errs))
				break;
			done++;
			work_ms += wm;
			dig_ms += dm;
			char hex[24];
			snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)d);
			jw j;
			j.str("type", "det");
			ident_json(j, g);
			j.str("workload", DET_WORKLOAD).num("repeat", done).str("digest", hex);
			j.num("work_ms", std::round(wm * 1000) / 1000);
			j.num("digest_ms", std::round(dm * 10000) / 10000);
			if (flip) {
				jw x;
				x.u64("element", flip_idx).num("bit", flip_bit);
				j.raw("injected", x.done());
			}
			emit(j.done());
			progress("GPU %d: determinism repeat %d", g.dev, done);
		}
		t_loop = now_s() - start;
	}
	jw j;
	j.str("type", "det_done");
	ident_json(j, g);
	j.str("pci", g.ident.pci).num("sm_count", g.ident.sm_count);
	j.str("workload", DET_WORKLOAD).num("size", o.size).num("chain", o.chain);
	j.str("algo", st.algo_desc).num("repeats", done);
	j.num("setup_s", std::round(setup_s * 1000) / 1000);
	j.num("seconds", std::round(t_loop * 1000) / 1000);
	j.num("work_ms", std::round(work_ms * 1000) / 1000);
	j.num("digest_ms", std::round(dig_ms * 1000) / 1000);
	j.raw("errors", json_str_array(errs));
	emit(j.done());
}

std::string det_version_from_proc(const char *line)
{
	/* The first word of digits and dots with a dot in it. The proprietary module says
	 * "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 ...", the open one
	 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build ...",
	 * a Jetson "... Open Kernel Module for aarch64  35.3.1  Release Build ..."
	 * (tests/data/realworld/determinism.md): the version's place moves, its shape does not. */
	const char *p = strstr(line, "Kernel Module");
	p = p ? p : line;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		size_t n = strcspn(p, " \t\n\r");
		if (!n)
			break;
		bool digits = n > 0, dot = false;
		for (size_t i = 0; i < n; i++) {
			dot |= p[i] == '.';
			digits &= (p[i] >= '0' && p[i] <= '9') || p[i] == '.';
		}
		if (digits && dot && p[0] != '.')
			return std::string(p, n);
		p += n;
	}
	return "";
}

std::string det_driver_version()
{
	/* NVML first (what nvidia-smi prints), without linking it */
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (lib) {
		typedef int (*init_fn)(void);
		typedef int (*ver_fn)(char *, unsigned);
		init_fn init = (init_fn)dlsym(lib, "nvmlInit_v2");
		ver_fn ver = (ver_fn)dlsym(lib, "nvmlSystemGetDriverVersion");
		init_fn shut = (init_fn)dlsym(lib, "nvmlShutdown");
		char b[96] = "";
		bool up = init && init() == 0;
		bool got = up && ver && ver(b, sizeof(b)) == 0 && b[0];
		if (up && shut)
			shut();
		dlclose(lib);
		if (got)
			return b;
	}
	FILE *f = fopen("/proc/driver/nvidia/version", "re");
	if (!f)
		return "";
	char line[512] = "";
	std::string v;
	if (fgets(line, sizeof(line), f))
		v = det_version_from_proc(line);
	fclose(f);
	return v;
}
