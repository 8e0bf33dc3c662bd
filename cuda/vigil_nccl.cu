/*
 * vigil_nccl.cu: the vigil-nccl helper: NCCL collectives with algbw/busbw per size (nccl-tests'
 * formulas, docs/PERFORMANCE.md), an exact data check of every size, and a deadline on every
 * collective that names the ranks that did not complete it.
 *
 * Three ways to run:
 *   local (default)   this process forks one rank per GPU (--gpus), separate processes as if on
 *                     separate hosts, meeting through a fresh temporary directory;
 *   --single-process  one process drives every GPU (ncclCommInitAll);
 *   one rank          --rank R --nranks N --rendezvous DIR|tcp://HOST:PORT [--gpu G], as srun
 *                     (or any launcher) starts it on every host; without --rank the rank comes
 *                     from SLURM_PROCID/SLURM_NTASKS (or RANK/WORLD_SIZE).
 *
 * Rendezvous through a directory: rank 0 writes the ncclUniqueId to DIR/nccl-id-RUN (written
 * to an unguessable temporary name, then renamed: safe_file.cuh, as DIR is shared and this may
 * run as root), the others poll for it. Through TCP: rank 0 listens on
 * HOST:PORT and sends the id to each rank that connects. Each rank also keeps
 * DIR/progress-RUN-RANK ("entered done") so that a rank that times out can tell which ranks never
 * entered the collective (the culprit, docs/DIAGNOSE.md) and which entered but did not finish.
 *
 * Every rank prints its own JSON lines ("rank": R); vigil groups them by size. The local launcher
 * passes its ranks' lines through and adds one "rank_exit" line per rank.
 */
#include "common.cuh"

#include <nccl.h>

#include <arpa/inet.h>
#include <cctype>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

static const char usage[] =
	"usage: vigil-nccl [--op OP[,OP...]] [--sizes MIN:MAX] [--iters N] [--warmup N]\n"
	"                  [--timeout S] [--gpus LIST] [--single-process]\n"
	"                  [--rank R --nranks N --rendezvous DIR|tcp://HOST:PORT [--gpu G]]\n"
	"                  [--run-id ID] [--fault-hang-rank R --fault-bytes SIZE]\n"
	"ops: all_reduce all_gather reduce_scatter alltoall sendrecv (default all_reduce)\n"
	"sizes: bytes per rank buffer, doubling from MIN to MAX (default 1M:4G)\n"
	"Prints one JSON object per line. Exit: 0 ran, 2 usage, 3 no GPU, 4 a collective timed out.\n";

enum op_id { OP_ALL_REDUCE, OP_ALL_GATHER, OP_REDUCE_SCATTER, OP_ALLTOALL, OP_SENDRECV };
static const char *const op_names[] = { "all_reduce", "all_gather", "reduce_scatter", "alltoall",
					"sendrecv" };

struct nopts {
	std::vector<op_id> ops = { OP_ALL_REDUCE };
	unsigned long long size_lo = 1ULL << 20, size_hi = 4ULL << 30;
	int iters = 20, warmup = 5;
	double timeout = 60;
	std::vector<int> gpus;
	bool single = false;
	int rank = -1, nranks = -1, gpu = -1;
	std::string rendezvous, run_id;
	int fault_rank = -1;
	unsigned long long fault_bytes = 0;
	bool child = false; /* started by the local launcher */
};

static int usage_err(const char *fmt, const char *a)
{
	fprintf(stderr, "vigil-nccl: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\n%s", usage);
	return HX_USAGE;
}

static int parse(int argc, char **argv, nopts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
		double d;
		if (!strcmp(a, "--single-process")) {
			o->single = true;
			continue;
		}
		if (!strcmp(a, "--child")) {
			o->child = true;
			continue;
		}
		if (!v)
			return usage_err("option '%s' needs a value (or is unknown)", a);
		i++;
		if (!strcmp(a, "--op")) {
			o->ops.clear();
			for (const std::string &t : split(v, ',')) {
				bool found = false;
				for (int k = 0; k < 5; k++)
					if (t == op_names[k] || (t == "all" && k == 0)) {
						found = true;
						o->ops.push_back((op_id)k);
					}
				if (t == "all") {
					o->ops.clear();
					for (int k = 0; k < 5; k++)
						o->ops.push_back((op_id)k);
				}
				if (!found)
					return usage_err("unknown collective in '%s'", v);
			}
		} else if (!strcmp(a, "--sizes")) {
			if (!parse_size_range(v, &o->size_lo, &o->size_hi))
				return usage_err("--sizes wants MIN:MAX such as 1M:4G, not '%s'", v);
		} else if (!strcmp(a, "--iters")) {
			if (!parse_double_arg(v, &d) || d < 1 || d > 1e6)
				return usage_err("--iters wants a count, not '%s'", v);
			o->iters = (int)d;
		} else if (!strcmp(a, "--warmup")) {
			if (!parse_double_arg(v, &d) || d < 0 || d > 1e6)
				return usage_err("--warmup wants a count, not '%s'", v);
			o->warmup = (int)d;
		} else if (!strcmp(a, "--timeout")) {
			if (!parse_double_arg(v, &d) || d <= 0)
				return usage_err("--timeout wants seconds, not '%s'", v);
			o->timeout = d;
		} else if (!strcmp(a, "--gpus")) {
			if (!parse_int_list(v, &o->gpus))
				return usage_err("--gpus wants a list such as 0,1, not '%s'", v);
		} else if (!strcmp(a, "--rank")) {
			if (!parse_double_arg(v, &d) || d < 0)
				return usage_err("--rank wants a number, not '%s'", v);
			o->rank = (int)d;
		} else if (!strcmp(a, "--nranks")) {
			if (!parse_double_arg(v, &d) || d < 1)
				return usage_err("--nranks wants a number, not '%s'", v);
			o->nranks = (int)d;
		} else if (!strcmp(a, "--gpu")) {
			if (!parse_double_arg(v, &d) || d < 0)
				return usage_err("--gpu wants a number, not '%s'", v);
			o->gpu = (int)d;
		} else if (!strcmp(a, "--rendezvous")) {
			o->rendezvous = v;
		} else if (!strcmp(a, "--run-id")) {
			o->run_id = v;
		} else if (!strcmp(a, "--fault-hang-rank")) {
			if (!parse_double_arg(v, &d) || d < 0)
				return usage_err("--fault-hang-rank wants a rank, not '%s'", v);
			o->fault_rank = (int)d;
		} else if (!strcmp(a, "--fault-bytes")) {
			if (!parse_size(v, &o->fault_bytes))
				return usage_err("--fault-bytes wants a size, not '%s'", v);
		} else if (!strcmp(a, "--progress-fd")) {
			if (!parse_double_arg(v, &d) || d < 0)
				return usage_err("--progress-fd wants a descriptor, not '%s'", v);
			progress_set_fd((int)d);
		} else {
			return usage_err("unknown option '%s'", a);
		}
	}
	return 0;
}

/* ---- data: small integers, so every sum is exact in fp32 ---- */

__host__ __device__ static inline float val(int rank, unsigned long long g)
{
	return (float)((int)(((g * 2654435761ULL) + (unsigned long long)rank * 40503ULL) >> 7 & 31) - 16);
}

__global__ void k_fill_send(float *p, size_t n, int rank)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = val(rank, i);
}

/* What recv must hold after one collective of count elements per rank buffer (E). */
__global__ void k_check_recv(const float *recv, size_t E, int op, int rank, int n,
			     unsigned long long *wrong)
{
	size_t c = E / n;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;; i += (size_t)gridDim.x * blockDim.x) {
		size_t lim = op == OP_REDUCE_SCATTER ? c : E;
		if (i >= lim)
			break;
		float want = 0;
		switch (op) {
		case OP_ALL_REDUCE:
			for (int r = 0; r < n; r++)
				want += val(r, i);
			break;
		case OP_ALL_GATHER:
			want = val((int)(i / c), i % c);
			break;
		case OP_REDUCE_SCATTER:
			for (int r = 0; r < n; r++)
				want += val(r, (size_t)rank * c + i);
			break;
		case OP_ALLTOALL:
			want = val((int)(i / c), (size_t)rank * c + i % c);
			break;
		default:
			want = val((rank - 1 + n) % n, i);
		}
		if (recv[i] != want)
			atomicAdd(wrong, 1ULL);
	}
}

/* ---- one local rank's state ---- */

struct lrank {
	int rank, gpu;
	ncclComm_t comm = nullptr;
	cudaStream_t s = nullptr;
	float *send = nullptr, *recv = nullptr;
	unsigned long long *wrong = nullptr;
	cudaEvent_t e0 = nullptr, e1 = nullptr;
	int grid = 1024;
};

static double busbw_factor(op_id op, int n)
{
	switch (op) {
	case OP_ALL_REDUCE:
		return 2.0 * (n - 1) / n;
	case OP_ALL_GATHER:
	case OP_REDUCE_SCATTER:
	case OP_ALLTOALL:
		return (double)(n - 1) / n;
	default:
		return 1.0;
	}
}

static ncclResult_t launch(op_id op, lrank &L, size_t E, int n)
{
	size_t c = E / n;
	switch (op) {
	case OP_ALL_REDUCE:
		return ncclAllReduce(L.send, L.recv, E, ncclFloat, ncclSum, L.comm, L.s);
	case OP_ALL_GATHER:
		return ncclAllGather(L.send, L.recv, c, ncclFloat, L.comm, L.s);
	case OP_REDUCE_SCATTER:
		return ncclReduceScatter(L.send, L.recv, c, ncclFloat, ncclSum, L.comm, L.s);
	case OP_ALLTOALL: {
		ncclResult_t r = ncclGroupStart();
		for (int p = 0; r == ncclSuccess && p < n; p++) {
			r = ncclSend(L.send + (size_t)p * c, c, ncclFloat, p, L.comm, L.s);
			if (r == ncclSuccess)
				r = ncclRecv(L.recv + (size_t)p * c, c, ncclFloat, p, L.comm, L.s);
		}
		ncclResult_t r2 = ncclGroupEnd();
		return r != ncclSuccess ? r : r2;
	}
	default: {
		ncclResult_t r = ncclGroupStart();
		if (r == ncclSuccess)
			r = ncclSend(L.send, E, ncclFloat, (L.rank + 1) % n, L.comm, L.s);
		if (r == ncclSuccess)
			r = ncclRecv(L.recv, E, ncclFloat, (L.rank - 1 + n) % n, L.comm, L.s);
		ncclResult_t r2 = ncclGroupEnd();
		return r != ncclSuccess ? r : r2;
	}
	}
}

/* ---- progress files (directory rendezvous) ---- */

/* The directory is shared (and this may run as root): the file is replaced through an
 * unguessable temporary name (hx_write_atomic) and read only when it is a regular file, so a link
 * planted at either name writes nothing elsewhere, and a FIFO there cannot stall the watchdog. */
struct progress_dir {
	std::string dir, run;
	int rank = 0, n = 0;
	bool warned = false;
	bool on() const { return !dir.empty(); }
	void write(long entered, long done)
	{
		if (!on())
			return;
		std::string p = dir + "/progress-" + run + "-" + std::to_string(rank);
		char line[64];
		int len = snprintf(line, sizeof(line), "%ld %ld\n", entered, done);
		std::string err;
		/* Without it the others' timeout reports only lose who entered what: said once, on
		 * stderr, not as an error line that would fail the run. */
		if (!hx_write_atomic(p, line, (size_t)len, 0644, &err) && !warned) {
			warned = true;
			fprintf(stderr, "vigil-nccl: rank %d: %s\n", rank, err.c_str());
		}
	}
	bool read(int r, long *entered, long *done)
	{
		std::string p = dir + "/progress-" + run + "-" + std::to_string(r), text, err;
		if (hx_read_regular(p, &text, 64, &err) != 1)
			return false;
		return sscanf(text.c_str(), "%ld %ld", entered, done) == 2;
	}
};

/* ---- the deadline ----
 * A collective can block on the host (NCCL connects lazily, inside the first call, and waits for
 * the peers there) as well as on the GPU, so the deadline is kept by a thread of its own: when it
 * passes, the thread prints which ranks did not complete and ends the process. */

struct watchdog {
	std::mutex m;
	bool armed = false;
	double t_armed = 0, deadline = 0;
	std::string op;
	unsigned long long bytes = 0;
	long seq = 0;
	int n = 0;
	std::vector<int> ranks;   /* the local ranks */
	std::vector<bool> done;   /* per local rank */
	progress_dir *pd = nullptr;
	std::thread th;

	void start()
	{
		th = std::thread([this] { loop(); });
		th.detach();
	}
	void arm(const char *what, unsigned long long b, long s, double timeout)
	{
		std::lock_guard<std::mutex> g(m);
		op = what;
		bytes = b;
		seq = s;
		t_armed = now_s();
		deadline = t_armed + timeout;
		done.assign(ranks.size(), false);
		armed = true;
	}
	void set_done(size_t i)
	{
		std::lock_guard<std::mutex> g(m);
		if (i < done.size())
			done[i] = true;
	}
	void disarm()
	{
		std::lock_guard<std::mutex> g(m);
		armed = false;
	}
	void loop()
	{
		for (;;) {
			usleep(50000);
			std::lock_guard<std::mutex> g(m);
			if (!armed || now_s() < deadline)
				continue;
			std::vector<int> incomplete, not_entered;
			if (pd && pd->on()) {
				for (int r = 0; r < n; r++) {
					long en = 0, dn = 0;
					bool have = pd->read(r, &en, &dn);
					if (r == pd->rank)
						en = seq, dn = seq - 1;
					if (!have || en < seq)
						not_entered.push_back(r);
					if (!have || dn < seq)
						incomplete.push_back(r);
				}
			} else {
				for (size_t i = 0; i < ranks.size(); i++)
					if (!done[i])
						incomplete.push_back(ranks[i]);
			}
			jw j;
			j.str("type", "nccl_timeout").str("op", op);
			j.u64("bytes", bytes).num("nranks", n);
			j.num("rank", ranks.size() == 1 ? ranks[0] : -1);
			j.num("waited_s", std::round((now_s() - t_armed) * 10) / 10);
			j.raw("incomplete_ranks", json_int_array(incomplete));
			if (pd && pd->on())
				j.raw("not_entered_ranks", json_int_array(not_entered));
			emit(j.done());
			progress("%s of %llu bytes did not finish in %.0f s", op.c_str(), bytes,
				 deadline - t_armed);
			fflush(stdout);
			_exit(HX_TIMEOUT);
		}
	}
};

static watchdog wd;

/* ---- rendezvous ---- */

static bool rdv_dir(const nopts &o, ncclUniqueId *id, std::string *err)
{
	std::string path = o.rendezvous + "/nccl-id-" + o.run_id;
	if (o.rank == 0) {
		ncclResult_t r = ncclGetUniqueId(id);
		if (r != ncclSuccess) {
			*err = std::string("ncclGetUniqueId: ") + ncclGetErrorString(r);
			return false;
		}
		/* 0600: the id lets whoever reads it join the communicator */
		return hx_write_atomic(path, id, sizeof(*id), 0600, err);
	}
	double t0 = now_s();
	for (;;) {
		/* Not through a link, never blocked by a FIFO: anything there but a regular file is
		 * someone meddling (rank 0 refuses to write over it too), so said at once. */
		std::string text;
		int got = hx_read_regular(path, &text, sizeof(*id) + 1, err);
		if (got < 0)
			return false;
		if (got == 1 && text.size() == sizeof(*id)) {
			memcpy(id, text.data(), sizeof(*id));
			return true;
		}
		if (now_s() - t0 > o.timeout) {
			*err = "no NCCL id from rank 0 in '" + path + "' after " +
			       std::to_string((int)o.timeout) + " s";
			return false;
		}
		usleep(20000);
	}
}

static bool rdv_tcp(const nopts &o, ncclUniqueId *id, std::string *err)
{
	std::string hp = o.rendezvous.substr(6);
	size_t colon = hp.rfind(':');
	if (colon == std::string::npos) {
		*err = "rendezvous wants tcp://HOST:PORT";
		return false;
	}
	std::string host = hp.substr(0, colon), port = hp.substr(colon + 1);
	struct addrinfo hints, *ai = nullptr;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (o.rank == 0)
		hints.ai_flags = AI_PASSIVE;
	int gr = getaddrinfo(o.rank == 0 && host == "*" ? nullptr : host.c_str(), port.c_str(),
			     &hints, &ai);
	if (gr) {
		*err = "cannot resolve '" + host + "': " + gai_strerror(gr);
		return false;
	}
	double t0 = now_s();
	bool ok = false;
	if (o.rank == 0) {
		ncclResult_t r = ncclGetUniqueId(id);
		int ls = socket(ai->ai_family, SOCK_STREAM, 0);
		int one = 1;
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (r != ncclSuccess || ls < 0 || bind(ls, ai->ai_addr, ai->ai_addrlen) ||
		    listen(ls, 1024)) {
			*err = "cannot listen on " + hp + ": " + strerror(errno);
		} else {
			int served = 0;
			fcntl(ls, F_SETFL, O_NONBLOCK);
			while (served < o.nranks - 1 && now_s() - t0 < o.timeout) {
				int c = accept(ls, nullptr, nullptr);
				if (c < 0) {
					usleep(10000);
					continue;
				}
				fcntl(c, F_SETFL, 0);
				if (::write(c, id, sizeof(*id)) == (ssize_t)sizeof(*id))
					served++;
				close(c);
			}
			ok = served == o.nranks - 1;
			if (!ok)
				*err = "only " + std::to_string(served) + " of " +
				       std::to_string(o.nranks - 1) + " ranks connected to " + hp;
		}
		if (ls >= 0)
			close(ls);
	} else {
		while (!ok && now_s() - t0 < o.timeout) {
			int c = socket(ai->ai_family, SOCK_STREAM, 0);
			if (c >= 0 && connect(c, ai->ai_addr, ai->ai_addrlen) == 0) {
				size_t got = 0;
				while (got < sizeof(*id)) {
					ssize_t m = ::read(c, (char *)id + got, sizeof(*id) - got);
					if (m <= 0)
						break;
					got += (size_t)m;
				}
				ok = got == sizeof(*id);
			}
			if (c >= 0)
				close(c);
			if (!ok)
				usleep(100000);
		}
		if (!ok)
			*err = "no NCCL id from rank 0 at " + hp;
	}
	freeaddrinfo(ai);
	return ok;
}

/* ---- the measurement loop (one or several local ranks) ---- */

#define NC(call, what)                                                                         \
	do {                                                                                   \
		ncclResult_t r_ = (call);                                                      \
		if (r_ != ncclSuccess) {                                                       \
			emit_error("nccl", "%s: %s", what, ncclGetErrorString(r_));            \
			return HX_FAIL;                                                        \
		}                                                                              \
	} while (0)
#define CU(call)                                                                               \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                       \
		if (e_ != cudaSuccess) {                                                       \
			emit_error("cuda", "%s: %s", #call, cuda_err_str(e_).c_str());         \
			return HX_FAIL;                                                        \
		}                                                                              \
	} while (0)

static int measure(const nopts &o, std::vector<lrank> &L, int n, progress_dir &pd)
{
	size_t max_bytes = (size_t)o.size_hi;
	for (lrank &l : L) {
		CU(cudaSetDevice(l.gpu));
		int sms = 132;
		cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, l.gpu);
		l.grid = sms * 8;
		CU(cudaStreamCreateWithFlags(&l.s, cudaStreamNonBlocking));
		CU(cudaMalloc(&l.send, max_bytes));
		CU(cudaMalloc(&l.recv, max_bytes));
		CU(cudaMalloc(&l.wrong, sizeof(unsigned long long)));
		CU(cudaEventCreate(&l.e0));
		CU(cudaEventCreate(&l.e1));
		k_fill_send<<<l.grid, 256, 0, l.s>>>(l.send, max_bytes / 4, l.rank);
		CU(cudaGetLastError());
		CU(cudaStreamSynchronize(l.s));
	}
	wd.n = n;
	wd.pd = &pd;
	wd.ranks.clear();
	for (lrank &l : L)
		wd.ranks.push_back(l.rank);
	long seq = 0;
	for (op_id op : o.ops) {
		for (unsigned long long sz = o.size_lo; sz <= o.size_hi; sz *= 2) {
			size_t E = (size_t)(sz / 4) / (size_t)n * (size_t)n;
			if (!E)
				continue;
			seq++;
			if (o.fault_rank >= 0 && sz >= o.fault_bytes)
				for (lrank &l : L)
					if (l.rank == o.fault_rank) {
						/* a rank that never enters the collective */
						progress("rank %d: hanging before %s %llu bytes (fault)",
							 l.rank, op_names[op], sz);
						for (;;)
							pause();
					}
			pd.write(seq, seq - 1);
			for (lrank &l : L) {
				CU(cudaSetDevice(l.gpu));
				CU(cudaMemsetAsync(l.recv, 0xff, (size_t)E * 4, l.s));
				CU(cudaMemsetAsync(l.wrong, 0, sizeof(unsigned long long), l.s));
			}
			wd.arm(op_names[op], (unsigned long long)E * 4, seq, o.timeout);
			for (int it = 0; it < o.warmup + o.iters; it++) {
				if (it == o.warmup)
					for (lrank &l : L) {
						CU(cudaSetDevice(l.gpu));
						CU(cudaEventRecord(l.e0, l.s));
					}
				NC(ncclGroupStart(), "ncclGroupStart");
				for (lrank &l : L) {
					CU(cudaSetDevice(l.gpu));
					NC(launch(op, l, E, n), op_names[op]);
				}
				NC(ncclGroupEnd(), "ncclGroupEnd");
			}
			for (lrank &l : L) {
				CU(cudaSetDevice(l.gpu));
				CU(cudaEventRecord(l.e1, l.s));
				k_check_recv<<<l.grid, 256, 0, l.s>>>(l.recv, E, op, l.rank, n, l.wrong);
				CU(cudaGetLastError());
			}
			/* poll: the watchdog ends the process if this does not finish in time */
			size_t ndone = 0;
			std::vector<bool> done(L.size(), false);
			while (ndone < L.size()) {
				for (size_t i = 0; i < L.size(); i++) {
					if (done[i])
						continue;
					cudaSetDevice(L[i].gpu);
					cudaError_t q = cudaStreamQuery(L[i].s);
					if (q == cudaSuccess) {
						done[i] = true;
						wd.set_done(i);
						ndone++;
					} else if (q != cudaErrorNotReady) {
						emit_error("cuda", "rank %d: %s", L[i].rank,
							   cuda_err_str(q).c_str());
						return HX_FAIL;
					}
					ncclResult_t ae = ncclSuccess;
					ncclCommGetAsyncError(L[i].comm, &ae);
					if (ae != ncclSuccess && ae != ncclInProgress) {
						emit_error("nccl", "rank %d: %s", L[i].rank,
							   ncclGetErrorString(ae));
						return HX_FAIL;
					}
				}
				if (ndone < L.size())
					usleep(100);
			}
			wd.disarm();
			pd.write(seq, seq);
			for (lrank &l : L) {
				float ms = 0;
				unsigned long long wrong = 0;
				CU(cudaSetDevice(l.gpu));
				CU(cudaEventElapsedTime(&ms, l.e0, l.e1));
				CU(cudaMemcpy(&wrong, l.wrong, sizeof(wrong), cudaMemcpyDeviceToHost));
				double t_s = ms * 1e-3 / o.iters;
				double algbw = (double)E * 4 / t_s / 1e9;
				jw j;
				j.str("type", "nccl").str("op", op_names[op]).num("rank", l.rank);
				j.num("nranks", n).num("gpu", l.gpu);
				j.u64("bytes", (unsigned long long)E * 4).u64("count", E);
				j.str("dtype", "float").num("iters", o.iters);
				j.num("time_us", std::round(t_s * 1e7) / 10);
				j.num("algbw", std::round(algbw * 100) / 100);
				j.num("busbw", std::round(algbw * busbw_factor(op, n) * 100) / 100);
				j.u64("wrong", wrong);
				emit(j.done());
				if (l.rank == L[0].rank)
					progress("%s %8llu bytes: busbw %.1f GB/s%s", op_names[op],
						 (unsigned long long)E * 4, algbw * busbw_factor(op, n),
						 wrong ? " WRONG DATA" : "");
			}
		}
	}
	for (lrank &l : L) {
		cudaSetDevice(l.gpu);
		ncclCommDestroy(l.comm);
		cudaFree(l.send);
		cudaFree(l.recv);
		cudaFree(l.wrong);
		cudaStreamDestroy(l.s);
	}
	return HX_OK;
}

static void emit_start(const char *mode, int n, int rank, const std::vector<int> &gpus)
{
	cudaDeviceProp prop;
	std::string gname;
	if (!gpus.empty() && cudaGetDeviceProperties(&prop, gpus[0]) == cudaSuccess)
		gname = prop.name;
	int v = 0;
	ncclGetVersion(&v);
	int rt = 0, drv = 0;
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	jw j;
	j.str("type", "start").str("helper", "vigil-nccl").str("version", VIGIL_HELPER_VERSION);
	j.str("mode", mode).num("nccl_version", v).num("cuda_runtime", rt).num("cuda_driver", drv);
	j.num("nranks", n).num("rank", rank).raw("gpus", json_int_array(gpus));
	j.str("gpu_name", gname);
	const char *nvls = getenv("NCCL_NVLS_ENABLE");
	j.str("nccl_nvls_enable", nvls ? nvls : "");
	emit(j.done());
}

static int run_single(const nopts &o)
{
	std::vector<int> gpus;
	std::string err;
	if (!select_gpus(o.gpus, &gpus, &err)) {
		emit_error("no_gpu", "%s", err.c_str());
		return HX_NO_GPU;
	}
	int n = (int)gpus.size();
	emit_start("single-process", n, -1, gpus);
	std::vector<ncclComm_t> comms(n);
	wd.n = n;
	wd.ranks = gpus;
	wd.start();
	wd.arm("init", 0, 0, o.timeout);
	NC(ncclCommInitAll(comms.data(), n, gpus.data()), "ncclCommInitAll");
	wd.disarm();
	std::vector<lrank> L(n);
	for (int i = 0; i < n; i++) {
		L[i].rank = i;
		L[i].gpu = gpus[i];
		L[i].comm = comms[i];
	}
	progress_dir pd;
	int rc = measure(o, L, n, pd);
	jw e;
	e.str("type", "end");
	emit(e.done());
	return rc;
}

static int run_rank(nopts o)
{
	int ndev = 0;
	cudaError_t ce = cudaGetDeviceCount(&ndev);
	if (ce != cudaSuccess || ndev < 1) {
		emit_error("no_gpu", "no CUDA device: %s", cuda_err_str(ce).c_str());
		return HX_NO_GPU;
	}
	if (o.gpu < 0) {
		const char *lr = getenv("SLURM_LOCALID");
		if (!lr)
			lr = getenv("LOCAL_RANK");
		o.gpu = (lr ? atoi(lr) : o.rank) % ndev;
	}
	if (o.gpu >= ndev) {
		emit_error("no_gpu", "GPU %d does not exist (this host has %d)", o.gpu, ndev);
		return HX_NO_GPU;
	}
	emit_start("rank", o.nranks, o.rank, { o.gpu });
	if (cudaSetDevice(o.gpu) != cudaSuccess) {
		emit_error("cuda", "cannot use GPU %d", o.gpu);
		return HX_FAIL;
	}
	ncclUniqueId id;
	std::string err;
	bool tcp = o.rendezvous.compare(0, 6, "tcp://") == 0;
	if (!(tcp ? rdv_tcp(o, &id, &err) : rdv_dir(o, &id, &err))) {
		emit_error("rendezvous", "rank %d: %s", o.rank, err.c_str());
		return HX_FAIL;
	}
	std::vector<lrank> L(1);
	L[0].rank = o.rank;
	L[0].gpu = o.gpu;
	/* init under the deadline too: a rank that never shows up must not hang the others */
	progress_dir pd;
	if (!tcp) {
		pd.dir = o.rendezvous;
		pd.run = o.run_id;
		pd.rank = o.rank;
		pd.n = o.nranks;
	}
	wd.n = o.nranks;
	wd.ranks = { o.rank };
	wd.pd = nullptr; /* nobody has entered anything yet */
	wd.start();
	wd.arm("init", 0, 0, o.timeout);
	ncclResult_t r = ncclCommInitRank(&L[0].comm, o.nranks, id, o.rank);
	wd.disarm();
	if (r != ncclSuccess) {
		emit_error("nccl", "rank %d: ncclCommInitRank: %s", o.rank, ncclGetErrorString(r));
		return HX_FAIL;
	}
	return measure(o, L, o.nranks, pd);
}

/* The local launcher: one process per GPU, as if each were on its own host. */
static int run_local(const nopts &o, int argc, char **argv)
{
	std::vector<int> gpus;
	std::string err;
	/* Count devices in a child: this process must not initialise CUDA before forking. */
	int ndev = -1;
	{
		int p[2];
		if (pipe(p) == 0) {
			pid_t c = fork();
			if (c == 0) {
				int k = 0;
				if (cudaGetDeviceCount(&k) != cudaSuccess)
					k = 0;
				if (::write(p[1], &k, sizeof(k)) < 0)
					_exit(1);
				_exit(0);
			}
			close(p[1]);
			if (c > 0 && ::read(p[0], &ndev, sizeof(ndev)) != (ssize_t)sizeof(ndev))
				ndev = 0;
			close(p[0]);
			if (c > 0)
				waitpid(c, nullptr, 0);
		}
	}
	if (ndev <= 0) {
		emit_error("no_gpu", "no CUDA device");
		return HX_NO_GPU;
	}
	if (o.gpus.empty())
		for (int i = 0; i < ndev; i++)
			gpus.push_back(i);
	else
		gpus = o.gpus;
	for (int g : gpus)
		if (g >= ndev) {
			emit_error("no_gpu", "GPU %d does not exist (this host has %d)", g, ndev);
			return HX_NO_GPU;
		}
	int n = (int)gpus.size();
	std::string dir = o.rendezvous;
	if (dir.empty()) {
		const char *td = getenv("TMPDIR");
		std::string t = std::string(td && *td ? td : "/tmp") + "/vigil-nccl-XXXXXX";
		std::vector<char> buf(t.begin(), t.end());
		buf.push_back('\0');
		if (!mkdtemp(buf.data())) {
			emit_error("rendezvous", "cannot create a temporary directory: %s",
				   strerror(errno));
			return HX_FAIL;
		}
		dir = buf.data();
	}
	{
		jw j;
		j.str("type", "start").str("helper", "vigil-nccl").str("version", VIGIL_HELPER_VERSION);
		int v = 0;
		ncclGetVersion(&v);
		const char *nvls = getenv("NCCL_NVLS_ENABLE");
		j.str("mode", "local").num("nccl_version", v).num("nranks", n);
		j.raw("gpus", json_int_array(gpus)).str("rendezvous", dir);
		j.str("nccl_nvls_enable", nvls ? nvls : "");
		emit(j.done());
	}
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0) {
		emit_error("launch", "cannot find my own executable");
		return HX_FAIL;
	}
	self[sl] = '\0';
	std::vector<pid_t> pids(n, -1);
	std::vector<std::string> outs(n);
	std::vector<int> out_fds(n, -1);
	/* Each rank's stdout, created here before any rank starts, fresh (O_EXCL | O_NOFOLLOW:
	 * never through a link planted in a shared --rendezvous directory), and read back through
	 * this same descriptor, never by name again. A previous run's file under that name is
	 * removed first: unlink removes a link itself, not what it names. */
	for (int r = 0; r < n; r++) {
		outs[r] = dir + "/out-" + std::to_string(r) + ".jsonl";
		if (!o.rendezvous.empty())
			unlink(outs[r].c_str());
		out_fds[r] = hx_create_excl(outs[r], 0644, &err);
		if (out_fds[r] < 0) {
			emit_error("launch", "rank %d: %s", r, err.c_str());
			for (int k = 0; k < r; k++) {
				close(out_fds[k]);
				unlink(outs[k].c_str());
			}
			if (o.rendezvous.empty())
				rmdir(dir.c_str());
			return HX_FAIL;
		}
	}
	for (int r = 0; r < n; r++) {
		std::vector<std::string> av = { self,	    "--child", "--rank",
						std::to_string(r), "--nranks",
						std::to_string(n), "--gpu", std::to_string(gpus[r]),
						"--rendezvous", dir, "--run-id", "local" };
		/* pass the measurement options through */
		for (int i = 1; i < argc; i++) {
			std::string a = argv[i];
			if (a == "--gpus" || a == "--rendezvous" || a == "--run-id" ||
			    (a == "--progress-fd" && r != 0)) {
				i++;
				continue;
			}
			av.push_back(a);
		}
		pid_t pid = fork();
		if (pid < 0) {
			emit_error("launch", "cannot fork: %s", strerror(errno));
			break;
		}
		if (pid == 0) {
			if (dup2(out_fds[r], 1) < 0)
				_exit(127);
			std::vector<char *> cav;
			for (auto &s : av)
				cav.push_back(&s[0]);
			cav.push_back(nullptr);
			execv(self, cav.data());
			_exit(127);
		}
		pids[r] = pid;
	}
	/* Wait. A rank that reports a timeout lets the others finish theirs, then all go. */
	std::vector<int> status(n, 0);
	std::vector<bool> exited(n, false), killed(n, false);
	double grace_until = -1;
	int left = 0;
	for (pid_t p : pids)
		left += p > 0;
	while (left > 0) {
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);
		if (w > 0) {
			for (int r = 0; r < n; r++)
				if (pids[r] == w) {
					exited[r] = true;
					status[r] = st;
					left--;
					bool bad = !WIFEXITED(st) || WEXITSTATUS(st) != 0;
					if (bad && grace_until < 0)
						grace_until = now_s() + std::min(5.0, o.timeout);
				}
			continue;
		}
		if (grace_until > 0 && now_s() > grace_until) {
			for (int r = 0; r < n; r++)
				if (pids[r] > 0 && !exited[r]) {
					kill(pids[r], SIGKILL);
					killed[r] = true;
				}
			grace_until = 1e300;
		}
		usleep(20000);
	}
	int rc = HX_OK;
	for (int r = 0; r < n; r++) {
		FILE *f = nullptr;
		if (out_fds[r] >= 0 && lseek(out_fds[r], 0, SEEK_SET) == 0) {
			f = fdopen(out_fds[r], "r");
			if (f)
				out_fds[r] = -1; /* fclose closes it */
		}
		if (out_fds[r] >= 0)
			close(out_fds[r]);
		if (f) {
			char line[65536];
			while (fgets(line, sizeof(line), f)) {
				size_t l = strlen(line);
				while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
					line[--l] = '\0';
				if (!l)
					continue;
				if (!strncmp(line, "{\"type\":\"start\"", 15))
					/* the rank's own header: kept, under another name */
					emit(std::string("{\"type\":\"rank_start\"") + (line + 15));
				else
					emit(line);
			}
			fclose(f);
		}
		jw j;
		j.str("type", "rank_exit").num("rank", r).num("gpu", gpus[r]);
		if (killed[r]) {
			j.str("status", "killed").str("why", "still running after another rank ended");
		} else if (exited[r] && WIFEXITED(status[r])) {
			j.str("status", "exited").num("code", WEXITSTATUS(status[r]));
			if (WEXITSTATUS(status[r]) == HX_TIMEOUT)
				rc = HX_TIMEOUT;
			else if (WEXITSTATUS(status[r]) && rc == HX_OK)
				rc = HX_FAIL;
		} else if (exited[r] && WIFSIGNALED(status[r])) {
			j.str("status", "signaled").num("signal", WTERMSIG(status[r]));
			if (rc == HX_OK)
				rc = HX_FAIL;
		} else {
			j.str("status", "not started");
			if (rc == HX_OK)
				rc = HX_FAIL;
		}
		emit(j.done());
	}
	if (o.rendezvous.empty()) {
		for (int r = 0; r < n; r++) {
			unlink(outs[r].c_str());
			unlink((dir + "/progress-local-" + std::to_string(r)).c_str());
		}
		unlink((dir + "/nccl-id-local").c_str());
		rmdir(dir.c_str());
	}
	jw e;
	e.str("type", "end");
	emit(e.done());
	return rc;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return HX_OK;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("vigil-nccl %s\n", VIGIL_HELPER_VERSION);
			return HX_OK;
		}
	}
	nopts o;
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	if (o.run_id.empty()) {
		const char *j = getenv("SLURM_JOB_ID"), *s = getenv("SLURM_STEP_ID");
		o.run_id = j ? std::string(j) + "." + (s ? s : "0") : "0";
	}
	/* The run id is part of file names in the rendezvous directory: a '/' or ".." in it
	 * (from --run-id or SLURM_JOB_ID) would put them elsewhere. */
	bool id_ok = !o.run_id.empty() && o.run_id.size() <= 128 && o.run_id[0] != '.';
	for (char c : o.run_id)
		id_ok = id_ok && (isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-');
	if (!id_ok)
		return usage_err("the run id wants letters, digits, '.', '_' and '-' "
				 "(not first '.'), not '%s'",
				 o.run_id.c_str());
	if (o.single)
		return run_single(o);
	if (o.rank < 0 && !o.rendezvous.empty()) {
		const char *r = getenv("SLURM_PROCID"), *n = getenv("SLURM_NTASKS");
		if (!r || !n) {
			r = getenv("RANK");
			n = getenv("WORLD_SIZE");
		}
		if (r && n) {
			o.rank = atoi(r);
			o.nranks = atoi(n);
		}
	}
	if (o.rank >= 0) {
		if (o.nranks < 1 || o.rank >= o.nranks || o.rendezvous.empty())
			return usage_err("%s", "--rank needs --nranks above it and --rendezvous");
		return run_rank(o);
	}
	return run_local(o, argc, argv);
}
