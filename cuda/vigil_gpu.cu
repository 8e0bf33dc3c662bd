/*
 * vigil_gpu.cu: the vigil-gpu helper. vigil runs it from an argv with a deadline and reads the
 * JSON lines it prints; it judges nothing itself (the verdicts are pure C in src/stress/).
 *
 *   vigil-gpu info                      one line per GPU
 *   vigil-gpu stress [options]          all GPUs at once: verified GEMMs, HBM bandwidth, patterns
 *   vigil-gpu pairs [options]           peer copy bandwidth for every GPU pair, verified
 *   vigil-gpu burn [options]            unverified GEMM load (a background load for benchmarks)
 *   vigil-gpu procs [--gpus LIST]       other processes' compute contexts on each GPU, now
 *   vigil-gpu determinism [options]     the same fixed workload repeated on every GPU at once,
 *                                       one digest of the output bits per repeat (det.cuh)
 *
 * stress and pairs list the compute processes of others on every GPU (NVML) at the start, every
 * second during the tests and at the end of each GPU's tests: a foreign load makes the figures
 * of that GPU untrustworthy, and vigil says so instead of judging them.
 */
#include "common.cuh"
#include "det.cuh"
#include "gemm.cuh"
#include "mem.cuh"
#include "nvml_lite.cuh"

#include <cublasLt.h>

#include <algorithm>
#include <thread>

#include <unistd.h>

static const char usage[] =
	"usage: vigil-gpu info\n"
	"       vigil-gpu stress [--gpus LIST] [--duration S] [--dtypes bf16,fp16,tf32,fp8]\n"
	"                        [--gemm-size N] [--hbm-bytes SIZE] [--mem-fraction F]\n"
	"                        [--no-gemm] [--no-hbm] [--no-memtest] [--tau T] [--seed N]\n"
	"                        [--inject gemm|hbm|memtest] [--progress-fd FD]\n"
	"       vigil-gpu pairs [--gpus LIST] [--bytes SIZE] [--reps N] [--progress-fd FD]\n"
	"       vigil-gpu burn [--gpus LIST] [--duration S] [--dtypes bf16] [--duty F]\n"
	"       vigil-gpu procs [--gpus LIST]\n"
	"       vigil-gpu determinism [--gpus LIST] [--duration S] [--repeats R]\n"
	"                        [--gemm-size N] [--inject sdc] [--progress-fd FD]\n"
	"\n"
	"Prints one JSON object per line (docs/STRESS.md). Exit: 0 ran, 2 usage, 3 no GPU.\n";

struct stress_opts {
	std::vector<int> gpus;
	double duration = 60;
	std::vector<gemm_dtype> dtypes = { GD_BF16, GD_FP16, GD_TF32, GD_FP8 };
	int gemm_size = 8192;
	unsigned long long hbm_bytes = 4ULL << 30, pair_bytes = 1ULL << 30;
	int reps = 20, pair_reps = 10;
	double mem_fraction = 0.9, tau = 10;
	bool gemm = true, hbm = true, memtest = true;
	std::string inject;
	uint64_t seed = 1;
	double duty = 1; /* burn: the fraction of each 40 ms period spent computing */
	int det_repeats = 0; /* determinism: 0 runs for the duration */
};

static int usage_err(const char *fmt, const char *a)
{
	fprintf(stderr, "vigil-gpu: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\n%s", usage);
	return HX_USAGE;
}

static int parse(int argc, char **argv, stress_opts *o)
{
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
		auto need = [&]() -> bool { return v != nullptr; };
		double d;
		unsigned long long u;
		if (!strcmp(a, "--no-gemm")) {
			o->gemm = false;
			continue;
		}
		if (!strcmp(a, "--no-hbm")) {
			o->hbm = false;
			continue;
		}
		if (!strcmp(a, "--no-memtest")) {
			o->memtest = false;
			continue;
		}
		if (!need())
			return usage_err("option '%s' needs a value (or is unknown)", a);
		i++;
		if (!strcmp(a, "--gpus")) {
			if (!parse_int_list(v, &o->gpus))
				return usage_err("--gpus wants a list such as 0,1,4-7, not '%s'", v);
		} else if (!strcmp(a, "--duration")) {
			if (!parse_double_arg(v, &d) || d <= 0 || d > 86400)
				return usage_err("--duration wants seconds, not '%s'", v);
			o->duration = d;
		} else if (!strcmp(a, "--dtypes")) {
			o->dtypes.clear();
			for (const std::string &t : split(v, ',')) {
				gemm_dtype g;
				if (!gemm_dtype_parse(t.c_str(), &g))
					return usage_err("unknown dtype in '%s' (bf16, fp16, tf32, fp8)", v);
				o->dtypes.push_back(g);
			}
		} else if (!strcmp(a, "--gemm-size")) {
			if (!parse_double_arg(v, &d) || d < 256 || d > 12288 || (int)d % 256)
				return usage_err("--gemm-size wants a multiple of 256 up to 12288, not '%s'", v);
			o->gemm_size = (int)d;
		} else if (!strcmp(a, "--hbm-bytes")) {
			if (!parse_size(v, &u) || u < (1u << 20))
				return usage_err("--hbm-bytes wants a size such as 4G, not '%s'", v);
			o->hbm_bytes = u;
		} else if (!strcmp(a, "--bytes")) {
			if (!parse_size(v, &u) || u < (1u << 20))
				return usage_err("--bytes wants a size such as 1G, not '%s'", v);
			o->pair_bytes = u;
		} else if (!strcmp(a, "--reps")) {
			if (!parse_double_arg(v, &d) || d < 1 || d > 100000)
				return usage_err("--reps wants a count, not '%s'", v);
			o->pair_reps = o->reps = (int)d;
		} else if (!strcmp(a, "--repeats")) {
			if (!parse_double_arg(v, &d) || d < 1 || d > 1000000 || d != std::floor(d))
				return usage_err("--repeats wants a count, not '%s'", v);
			o->det_repeats = (int)d;
		} else if (!strcmp(a, "--duty")) {
			if (!parse_double_arg(v, &d) || d <= 0 || d > 1)
				return usage_err("--duty wants a fraction in (0, 1], not '%s'", v);
			o->duty = d;
		} else if (!strcmp(a, "--mem-fraction")) {
			if (!parse_double_arg(v, &d) || d <= 0 || d > 0.99)
				return usage_err("--mem-fraction wants a fraction below 0.99, not '%s'", v);
			o->mem_fraction = d;
		} else if (!strcmp(a, "--tau")) {
			if (!parse_double_arg(v, &d) || d < 1)
				return usage_err("--tau wants a number of sigmas, not '%s'", v);
			o->tau = d;
		} else if (!strcmp(a, "--seed")) {
			if (!parse_double_arg(v, &d) || d < 0)
				return usage_err("--seed wants a number, not '%s'", v);
			o->seed = (uint64_t)d;
		} else if (!strcmp(a, "--inject")) {
			if (strcmp(v, "gemm") && strcmp(v, "hbm") && strcmp(v, "memtest") &&
			    strcmp(v, "sdc"))
				return usage_err("--inject wants gemm, hbm, memtest or sdc, not '%s'", v);
			o->inject = v;
		} else if (!strcmp(a, "--progress-fd")) {
			if (!parse_double_arg(v, &d) || d < 0 || d > 1023)
				return usage_err("--progress-fd wants a descriptor, not '%s'", v);
			progress_set_fd((int)d);
		} else {
			return usage_err("unknown option '%s'", a);
		}
	}
	return 0;
}

static std::string versions_json(jw &j)
{
	int rt = 0, drv = 0;
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	j.num("cuda_runtime", rt).num("cuda_driver", drv);
	j.num("cublaslt", (double)cublasLtGetVersion());
	return "";
}

static int start_gpus(const stress_opts &o, std::vector<int> *gpus)
{
	std::string err;
	if (!select_gpus(o.gpus, gpus, &err)) {
		emit_error("no_gpu", "%s", err.c_str());
		return HX_NO_GPU;
	}
	return 0;
}

static int cmd_info(const stress_opts &o)
{
	std::vector<int> gpus;
	int rc = start_gpus(o, &gpus);
	if (rc)
		return rc;
	jw s;
	s.str("type", "start").str("helper", "vigil-gpu").str("version", VIGIL_HELPER_VERSION);
	versions_json(s);
	s.raw("gpus", json_int_array(gpus));
	emit(s.done());
	for (int d : gpus) {
		gpu_ident g;
		std::string err;
		jw j;
		j.str("type", "gpu_info");
		if (gpu_ident_read(d, &g, &err))
			gpu_ident_json(j, g);
		else
			j.num("index", d).str("error", err);
		emit(j.done());
	}
	return HX_OK;
}

struct gpu_run {
	int dev;
	gpu_ident ident;
	std::vector<gemm_result> gemm;
	hbm_result hbm;
	bool hbm_ran = false;
	memtest_result mt;
	bool mt_ran = false;
	std::vector<std::string> errors;
	nvml_health before, after;
	double seconds = 0;
};

static void emit_gpu(gpu_run &g, nvml_watch *w, bool nv, bool burn)
{
	jw j;
	j.str("type", burn ? "burn" : "gpu");
	gpu_ident_json(j, g.ident);
	std::string gs = "[";
	for (size_t i = 0; i < g.gemm.size(); i++)
		gs += (i ? "," : "") + g.gemm[i].json();
	j.raw("gemm", gs + "]");
	if (g.hbm_ran)
		j.raw("hbm", g.hbm.json());
	if (g.mt_ran)
		j.raw("memtest", g.mt.json());
	if (nv) {
		g.after = w->health(g.dev);
		w->procs_now(g.dev, PROC_AT_END);
		j.raw("other_processes", nvml_procs_json(w->procs(g.dev)));
		j.raw("telemetry", w->telemetry(g.dev).json());
		j.raw("health_before", g.before.json());
		j.raw("health_after", g.after.json());
		std::string xs = "[";
		auto xids = w->xids(g.dev);
		for (size_t i = 0; i < xids.size(); i++) {
			jw x;
			x.u64("xid", xids[i].xid).num("at_s", std::round(xids[i].at_s * 10) / 10);
			xs += (i ? "," : "") + x.done();
		}
		j.raw("xids", xs + "]");
	}
	j.num("seconds", std::round(g.seconds * 100) / 100);
	j.raw("errors", json_str_array(g.errors));
	emit(j.done());
}

static void run_one(gpu_run *g, const stress_opts &o, bool burn)
{
	double t0 = now_s();
	std::string err;
	if (!gpu_ident_read(g->dev, &g->ident, &err))
		g->errors.push_back(err);
	if (cudaSetDevice(g->dev) != cudaSuccess) {
		g->errors.push_back("cudaSetDevice failed");
		return;
	}
	double gemm_s = o.gemm ? (o.memtest ? 0.7 : 0.95) * o.duration : 0;
	double mem_s = o.memtest ? (o.gemm ? 0.25 : 0.9) * o.duration : 0;
	if (burn) {
		gemm_s = o.duration;
		mem_s = 0;
	}
	double last_prog = 0;
	for (size_t i = 0; o.gemm && i < o.dtypes.size(); i++) {
		gemm_opts go;
		go.size = o.gemm_size;
		go.seconds = std::max(1.0, gemm_s / o.dtypes.size());
		go.tau = o.tau;
		go.seed = o.seed + 7919ULL * (uint64_t)g->dev + 104729ULL * i;
		go.inject = o.inject == "gemm" && i == 0;
		go.verify = go.kat = !burn;
		if (burn && o.duty < 1) {
			go.duty = o.duty;
			go.ring = 1; /* turns of about 1.6 ms products, not 6.4 ms windows */
		}
		gemm_result r;
		gemm_run(g->dev, o.dtypes[i], go, &r, [&](const char *ph, double tf, double frac) {
			double now = now_s();
			if (now - last_prog < 2.0)
				return;
			last_prog = now;
			progress("GPU %d: %s GEMM %.0f TFLOP/s (%.0f%%)", g->dev, ph, tf,
				 frac * 100);
		});
		progress("GPU %d: %s GEMM done: %.1f TFLOP/s, %llu miscompares", g->dev,
			 gemm_dtype_name(o.dtypes[i]), r.tflops_median,
			 (unsigned long long)(r.miscompares + r.kat_miscompares));
		g->gemm.push_back(r);
		/* a sticky CUDA error ends the run of this GPU */
		if (!r.errors.empty() && cudaDeviceSynchronize() != cudaSuccess)
			return;
	}
	if (!burn && o.hbm) {
		g->hbm_ran = true;
		hbm_run(g->dev, o.hbm_bytes, o.reps, o.inject == "hbm", &g->hbm);
		progress("GPU %d: HBM read %.0f, write %.0f, copy %.0f GB/s", g->dev,
			 g->hbm.read_gbps, g->hbm.write_gbps, g->hbm.copy_gbps);
		if (!g->hbm.errors.empty() && cudaDeviceSynchronize() != cudaSuccess)
			return;
	}
	if (!burn && o.memtest) {
		g->mt_ran = true;
		last_prog = 0;
		memtest_run(g->dev, o.mem_fraction, mem_s, o.inject == "memtest", &g->mt,
			    [&](double frac) {
				    double now = now_s();
				    if (now - last_prog < 2.0)
					    return;
				    last_prog = now;
				    progress("GPU %d: memory patterns %.0f%%", g->dev, frac * 100);
			    });
		progress("GPU %d: memory patterns done: %.1f GiB, %d rounds, %llu miscompares",
			 g->dev, g->mt.bytes / 1073741824.0, g->mt.rounds,
			 (unsigned long long)g->mt.miscompares);
	}
	g->seconds = now_s() - t0;
}

/* The start line's "processes_watch" and "other_processes" (each with its "gpu"): the other
 * compute processes on the GPUs before any test, so that even a GPU that then hangs has them. */
static void procs_start_json(jw &s, nvml_watch &w, bool nv, const std::vector<int> &gpus)
{
	if (!nv) {
		s.str("processes_watch", "unavailable: no NVML");
		return;
	}
	std::string list = "[";
	bool first = true;
	for (int d : gpus) {
		w.procs_now(d, PROC_AT_START);
		for (const nvml_proc &p : w.procs(d)) {
			jw x;
			x.num("gpu", d).num("pid", p.pid);
			if (!p.name.empty())
				x.str("name", p.name);
			if (p.used_bytes != ~0ULL)
				x.u64("used_bytes", p.used_bytes);
			list += (first ? "" : ",") + x.done();
			first = false;
		}
	}
	s.str("processes_watch", w.procs_watch);
	s.raw("other_processes", list + "]");
}

static int cmd_stress(const stress_opts &o, bool burn)
{
	std::vector<int> gpus;
	int rc = start_gpus(o, &gpus);
	if (rc)
		return rc;
	double t0 = now_s();
	nvml_watch w;
	bool nv = w.start(gpus);
	jw s;
	s.str("type", "start").str("helper", "vigil-gpu").str("version", VIGIL_HELPER_VERSION);
	s.str("mode", burn ? "burn" : "stress");
	versions_json(s);
	s.raw("gpus", json_int_array(gpus));
	s.num("duration_s", o.duration);
	s.str("nvml", nv ? "ok" : ("unavailable: " + w.why).c_str());
	s.str("xid_watch", !nv ? "unavailable: no NVML"
			       : w.xid_supported ? "ok"
						 : w.xid_note.c_str());
	procs_start_json(s, w, nv, gpus);
	emit(s.done());

	std::vector<gpu_run> runs(gpus.size());
	for (size_t i = 0; i < gpus.size(); i++) {
		runs[i].dev = gpus[i];
		if (nv)
			runs[i].before = w.health(gpus[i]);
	}
	std::vector<std::thread> th;
	for (size_t i = 0; i < gpus.size(); i++)
		th.emplace_back([&, i] {
			run_one(&runs[i], o, burn);
			/* each GPU's line as soon as it is done: if another GPU hangs, vigil still
			 * has these and can name the one that did not finish */
			emit_gpu(runs[i], &w, nv, burn);
		});
	for (auto &t : th)
		t.join();
	w.stop();
	jw e;
	e.str("type", "end").num("seconds", std::round((now_s() - t0) * 100) / 100);
	if (nv)
		e.str("processes_watch", w.procs_watch);
	w.close();
	emit(e.done());
	return HX_OK;
}

/* ---- determinism ---- */

/* Every GPU at once, one thread each; each prints a "det" line per repeat and a "det_done" line.
 * --inject sdc flips one bit in one repeat (2 to 6, at random) of the first GPU: the checker
 * must name that repeat. */
static int cmd_determinism(const stress_opts &o)
{
	std::vector<int> gpus;
	int rc = start_gpus(o, &gpus);
	if (rc)
		return rc;
	double t0 = now_s();
	std::string drv = det_driver_version();
	jw s;
	s.str("type", "start").str("helper", "vigil-gpu").str("version", VIGIL_HELPER_VERSION);
	s.str("mode", "determinism").str("workload", DET_WORKLOAD);
	versions_json(s);
	s.str("driver", drv);
	s.raw("gpus", json_int_array(gpus));
	s.num("duration_s", o.duration).num("repeats", o.det_repeats).num("size", o.gemm_size);
	emit(s.done());
	det_opts d;
	d.size = o.gemm_size;
	d.repeats = o.det_repeats;
	d.seconds = o.duration;
	uint64_t ent = mix64((uint64_t)(now_s() * 1e9) ^ ((uint64_t)getpid() << 32));
	std::vector<std::thread> th;
	for (size_t i = 0; i < gpus.size(); i++)
		th.emplace_back([&, i] {
			det_gpu_info g;
			g.dev = gpus[i];
			std::string err;
			if (cudaSetDevice(g.dev) != cudaSuccess) {
				emit_error("cuda", "GPU %d: cudaSetDevice failed", g.dev);
				return;
			}
			gpu_ident_read(g.dev, &g.ident, &err);
			g.driver = drv;
			cudaRuntimeGetVersion(&g.cuda_runtime);
			cudaDriverGetVersion(&g.cuda_driver);
			g.cublaslt = cublasLtGetVersion();
			det_opts mine = d;
			if (o.inject == "sdc" && i == 0) {
				int hi = d.repeats > 0 ? std::min(d.repeats, 6) : 6;
				mine.inject_repeat = hi <= 2 ? hi : 2 + (int)(ent % (uint64_t)(hi - 1));
				mine.inject_entropy = ent;
			}
			det_run(g, mine);
		});
	for (auto &t : th)
		t.join();
	jw e;
	e.str("type", "end").num("seconds", std::round((now_s() - t0) * 100) / 100);
	emit(e.done());
	return HX_OK;
}

/* ---- pairs ---- */

static bool pairs_inner(const stress_opts &o, const std::vector<int> &gpus,
			std::vector<std::string> &errs)
{
	size_t n = gpus.size();
	unsigned long long bytes = o.pair_bytes & ~4095ULL;
	std::vector<void *> src(n, nullptr), dst(n, nullptr);
	std::vector<cudaStream_t> st(n, nullptr);
	std::vector<int> grid(n, 1024);
	struct cleanup {
		std::vector<void *> *a, *b;
		std::vector<cudaStream_t> *s;
		~cleanup()
		{
			for (void *p : *a)
				cudaFree(p);
			for (void *p : *b)
				cudaFree(p);
			for (cudaStream_t x : *s)
				if (x)
					cudaStreamDestroy(x);
		}
	} cl{ &src, &dst, &st };
	for (size_t i = 0; i < n; i++) {
		CK(cudaSetDevice(gpus[i]));
		int sms = 132;
		cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpus[i]);
		grid[i] = sms * 8;
		CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
		CK(cudaMalloc(&src[i], bytes));
		CK(cudaMalloc(&dst[i], bytes));
		if (!pattern_fill(src[i], bytes, 0x5000 + (uint64_t)gpus[i], st[i], grid[i]))
			CK(cudaGetLastError());
		for (size_t j = 0; j < n; j++) {
			if (i == j)
				continue;
			int can = 0;
			CK(cudaDeviceCanAccessPeer(&can, gpus[i], gpus[j]));
			if (can) {
				cudaError_t e = cudaDeviceEnablePeerAccess(gpus[j], 0);
				if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
					CK(e);
				cudaGetLastError();
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		CK(cudaSetDevice(gpus[i]));
		CK(cudaStreamSynchronize(st[i]));
	}
	/* one direction at a time */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			if (i == j)
				continue;
			int can = 0;
			CK(cudaDeviceCanAccessPeer(&can, gpus[i], gpus[j]));
			CK(cudaSetDevice(gpus[j]));
			CK(cudaMemsetAsync(dst[j], 0, bytes, st[j]));
			CK(cudaStreamSynchronize(st[j]));
			CK(cudaSetDevice(gpus[i]));
			cudaEvent_t e0, e1;
			CK(cudaEventCreate(&e0));
			CK(cudaEventCreate(&e1));
			/* warm-up */
			CK(cudaMemcpyPeerAsync(dst[j], gpus[j], src[i], gpus[i], bytes, st[i]));
			CK(cudaEventRecord(e0, st[i]));
			for (int r = 0; r < o.pair_reps; r++)
				CK(cudaMemcpyPeerAsync(dst[j], gpus[j], src[i], gpus[i], bytes, st[i]));
			CK(cudaEventRecord(e1, st[i]));
			CK(cudaEventSynchronize(e1));
			float ms = 0;
			CK(cudaEventElapsedTime(&ms, e0, e1));
			cudaEventDestroy(e0);
			cudaEventDestroy(e1);
			CK(cudaSetDevice(gpus[j]));
			long long bad = pattern_verify(dst[j], bytes, 0x5000 + (uint64_t)gpus[i], st[j],
						       grid[j]);
			jw p;
			p.str("type", "pair").num("src", gpus[i]).num("dst", gpus[j]);
			p.boolean("p2p", can != 0).u64("bytes", bytes).num("reps", o.pair_reps);
			p.num("gbps", std::round((double)bytes * o.pair_reps / (ms * 1e-3) / 1e8) / 10);
			if (bad >= 0)
				p.i64("miscompares", bad);
			else
				p.str("error", "could not verify the copy");
			emit(p.done());
			progress("GPU %d -> GPU %d: %.0f GB/s", gpus[i], gpus[j],
				 (double)bytes * o.pair_reps / (ms * 1e-3) / 1e9);
		}
	/* both directions at once */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			for (size_t x : { i, j }) {
				CK(cudaSetDevice(gpus[x]));
				CK(cudaMemsetAsync(dst[x], 0, bytes, st[x]));
				CK(cudaStreamSynchronize(st[x]));
			}
			double t0 = now_s();
			for (int r = 0; r < o.pair_reps; r++) {
				CK(cudaSetDevice(gpus[i]));
				CK(cudaMemcpyPeerAsync(dst[j], gpus[j], src[i], gpus[i], bytes, st[i]));
				CK(cudaSetDevice(gpus[j]));
				CK(cudaMemcpyPeerAsync(dst[i], gpus[i], src[j], gpus[j], bytes, st[j]));
			}
			for (size_t x : { i, j }) {
				CK(cudaSetDevice(gpus[x]));
				CK(cudaStreamSynchronize(st[x]));
			}
			double t = now_s() - t0;
			long long bad = 0;
			for (size_t x : { i, j }) {
				size_t from = x == i ? j : i;
				CK(cudaSetDevice(gpus[x]));
				long long b = pattern_verify(dst[x], bytes, 0x5000 + (uint64_t)gpus[from],
							     st[x], grid[x]);
				bad = b < 0 || bad < 0 ? -1 : bad + b;
			}
			jw p;
			p.str("type", "pair_bidir").num("a", gpus[i]).num("b", gpus[j]);
			p.u64("bytes", bytes).num("reps", o.pair_reps);
			p.num("gbps", std::round(2.0 * bytes * o.pair_reps / t / 1e8) / 10);
			if (bad >= 0)
				p.i64("miscompares", bad);
			else
				p.str("error", "could not verify the copy");
			emit(p.done());
		}
	return true;
}

/* One "processes" line per GPU: every other process seen on it from the start to now. */
static void emit_procs(nvml_watch &w, bool nv, const std::vector<int> &gpus)
{
	if (!nv)
		return;
	for (int d : gpus) {
		w.procs_now(d, PROC_AT_END);
		jw j;
		j.str("type", "processes").num("gpu", d);
		j.raw("other_processes", nvml_procs_json(w.procs(d)));
		emit(j.done());
	}
}

/* vigil-gpu procs: the other compute processes on each GPU now (vigil asks before and after
 * vigil-nccl, whose ranks do not watch). No CUDA context is created. */
static int cmd_procs(const stress_opts &o)
{
	std::vector<int> gpus;
	int rc = start_gpus(o, &gpus);
	if (rc)
		return rc;
	nvml_watch w;
	bool nv = w.start(gpus);
	jw s;
	s.str("type", "start").str("helper", "vigil-gpu").str("version", VIGIL_HELPER_VERSION);
	s.str("mode", "procs");
	s.raw("gpus", json_int_array(gpus));
	procs_start_json(s, w, nv, gpus);
	emit(s.done());
	jw e;
	e.str("type", "end");
	emit(e.done());
	return HX_OK;
}

static int cmd_pairs(const stress_opts &o)
{
	std::vector<int> gpus;
	int rc = start_gpus(o, &gpus);
	if (rc)
		return rc;
	double t0 = now_s();
	jw s;
	s.str("type", "start").str("helper", "vigil-gpu").str("version", VIGIL_HELPER_VERSION);
	s.str("mode", "pairs");
	versions_json(s);
	s.raw("gpus", json_int_array(gpus));
	nvml_watch w;
	bool nv = w.start(gpus);
	procs_start_json(s, w, nv, gpus);
	emit(s.done());
	for (int d : gpus) {
		gpu_ident g;
		std::string err;
		jw j;
		j.str("type", "gpu_info");
		if (gpu_ident_read(d, &g, &err))
			gpu_ident_json(j, g);
		emit(j.done());
	}
	std::vector<std::string> errs;
	if (gpus.size() < 2) {
		emit_error("one_gpu", "pairs need at least two GPUs (this host has %zu)", gpus.size());
		return HX_NO_GPU;
	}
	if (!pairs_inner(o, gpus, errs))
		for (auto &e : errs)
			emit_error("cuda", "%s", e.c_str());
	emit_procs(w, nv, gpus);
	jw e;
	e.str("type", "end").num("seconds", std::round((now_s() - t0) * 100) / 100);
	emit(e.done());
	return HX_OK;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? HX_USAGE : HX_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("vigil-gpu %s\n", VIGIL_HELPER_VERSION);
		return HX_OK;
	}
	stress_opts o;
	const char *cmd = argv[1];
	if (strcmp(cmd, "info") && strcmp(cmd, "stress") && strcmp(cmd, "pairs") &&
	    strcmp(cmd, "burn") && strcmp(cmd, "procs") && strcmp(cmd, "determinism"))
		return usage_err("unknown command '%s'", cmd);
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	if (!strcmp(cmd, "info"))
		return cmd_info(o);
	if (!strcmp(cmd, "pairs"))
		return cmd_pairs(o);
	if (!strcmp(cmd, "procs"))
		return cmd_procs(o);
	if (!strcmp(cmd, "determinism"))
		return cmd_determinism(o);
	if (!strcmp(cmd, "burn")) {
		if (o.dtypes.size() > 1)
			o.dtypes.resize(1);
		return cmd_stress(o, true);
	}
	return cmd_stress(o, false);
}
