/*
 * net.c: 'vigil net nccl' (NCCL collectives: busbw per size, exact data, a deadline that names
 * the ranks that did not complete) and 'vigil net pairs' (peer copy bandwidth of every GPU
 * pair). The measurements run in the CUDA helpers vigil-nccl and vigil-gpu; src/stress/engine.c
 * runs them and src/stress/net.c judges their output: this file parses, calls and prints.
 */
#include "cmd.h"
#include "active.h"
#include "common.h"
#include "../lib/strlist.h"
#include "../stress/driver.h"
#include "../checks/infiniband.h"
#include "../fabric/ibrun.h"

#include <getopt.h>
#include <ctype.h>
#include <math.h>

static const char *const nccl_ops[] = { "all_reduce", "all_gather", "reduce_scatter", "alltoall",
					"sendrecv" };

static const char net_usage[] =
	"usage: vigil net nccl [options]\n"
	"       vigil net pairs [options]\n"
	"       vigil net ib (--server | --peer HOST | --srun | --nodes A,B) [options]\n"
	"\n"
	"Active tests of the links between GPUs; they take the GPUs, never run them beside training.\n"
	"Need vigil's CUDA helpers (vigil-nccl, vigil-gpu; built by 'make' where nvcc is found).\n"
	"\n"
	"vigil net nccl: NCCL collectives with algbw and busbw per size (nccl-tests' formulas), an\n"
	"exact check of the data, a deadline on every collective (one that does not finish names\n"
	"the ranks that did not complete and those that never entered), and a busbw floor.\n"
	"By default one process per GPU of this host, meeting through a temporary directory, as\n"
	"if each GPU were on its own host. Across hosts, start one rank per GPU with srun (or any\n"
	"launcher) and give --rendezvous; rank and count come from SLURM_PROCID/SLURM_NTASKS.\n"
	"  --op LIST           all_reduce (default), all_gather, reduce_scatter, alltoall, sendrecv\n"
	"  --sizes MIN:MAX     bytes per rank buffer, doubling (default 1M:4G)\n"
	"  --gpus LIST         GPUs of this host to use (default all)\n"
	"  --iters N, --warmup N   timed and untimed collectives per size (default 20, 5)\n"
	"  --timeout SECONDS   deadline of each collective (default 60)\n"
	"  --single-process    one process drives every GPU\n"
	"  --rank R --nranks N --rendezvous DIR|tcp://HOST:PORT [--gpu G] [--run-id ID]\n"
	"                      one rank of a job across hosts (DIR shared by all hosts)\n"
	"  --deadline SECONDS  bound for the whole run (default from the sizes and --timeout)\n"
	"\n"
	"vigil net pairs: copy bandwidth for every ordered GPU pair and both ways at once, each copy\n"
	"verified, against a floor and against the other pairs, to point at a weak link or GPU.\n"
	"  --gpus LIST         GPUs to pair (default all)\n"
	"  --bytes MIB         size of each copy in MiB (default 1024)\n"
	"  --reps N            timed copies per pair (default 10)\n"
	"\n"
	"vigil net ib: InfiniBand bandwidth (ib_write_bw) and read latency (ib_read_lat, Debian\n"
	"package perftest) between two hosts, per HCA, with GPUDirect (--use_cuda) where a GPU is,\n"
	"against floors (net.ib-floor-gbps, default 360 Gb/s; net.ib-lat-p99-us, default 4.2).\n"
	"  --server            serve: one ib_write_bw/ib_read_lat server per HCA\n"
	"  --peer HOST         connect to the host running --server (the client has the figures)\n"
	"  --srun              in a 2-task srun step: task 0 serves, task 1 connects to it\n"
	"  --nodes A,B         run the srun steps itself: server on B, client on A\n"
	"  --hca LIST          HCAs (mlx5_0,mlx5_1:1; default every one under /sys/class/infiniband)\n"
	"  --gpus LIST         GPUs for the HCAs in order (default: all, HCA i with GPU i)\n"
	"  --no-cuda           host memory, not GPUDirect\n"
	"  --no-latency        bandwidth only\n"
	"  --duration S        seconds of each bandwidth test (default 10)\n"
	"  --size BYTES        message size (default 1M)\n"
	"  --port N            first TCP port (default 18515; HCA i uses N+2i and N+2i+1)\n"
	"  --timeout S         deadline of each test (default the duration + 50)\n"
	"  --connect-wait S    how long the client retries a server not yet listening (default 60)\n"
	"  --counters          print this host's IB port counters (for vigil fabric burnin run)\n"
	"  --root DIR          read /sys and /proc under DIR\n"
	"\n" ACTIVE_OUT_USAGE;

/* ---- options ---- */

enum { NOPT_OP = 400, NOPT_SIZES, NOPT_GPUS, NOPT_ITERS, NOPT_WARMUP, NOPT_TIMEOUT, NOPT_SINGLE,
       NOPT_RANK, NOPT_NRANKS, NOPT_RDV, NOPT_GPU, NOPT_RUNID, NOPT_FAULT_RANK, NOPT_FAULT_BYTES,
       NOPT_DEADLINE, NOPT_BYTES, NOPT_REPS };

static const struct option net_opts[] = {
	{ "op", required_argument, NULL, NOPT_OP },
	{ "sizes", required_argument, NULL, NOPT_SIZES },
	{ "gpus", required_argument, NULL, NOPT_GPUS },
	{ "iters", required_argument, NULL, NOPT_ITERS },
	{ "warmup", required_argument, NULL, NOPT_WARMUP },
	{ "timeout", required_argument, NULL, NOPT_TIMEOUT },
	{ "single-process", no_argument, NULL, NOPT_SINGLE },
	{ "rank", required_argument, NULL, NOPT_RANK },
	{ "nranks", required_argument, NULL, NOPT_NRANKS },
	{ "rendezvous", required_argument, NULL, NOPT_RDV },
	{ "gpu", required_argument, NULL, NOPT_GPU },
	{ "run-id", required_argument, NULL, NOPT_RUNID },
	{ "fault-hang-rank", required_argument, NULL, NOPT_FAULT_RANK },
	{ "fault-bytes", required_argument, NULL, NOPT_FAULT_BYTES },
	{ "deadline", required_argument, NULL, NOPT_DEADLINE },
	{ "bytes", required_argument, NULL, NOPT_BYTES },
	{ "reps", required_argument, NULL, NOPT_REPS },
	ACTIVE_OUT_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* 64M, 4G, 1024, 1.5G, 1MiB */
static bool parse_size_arg(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v >= 0))
		return false;
	double mul = 1;
	switch (*end) {
	case 'k': case 'K': mul = 1024.0; end++; break;
	case 'm': case 'M': mul = 1048576.0; end++; break;
	case 'g': case 'G': mul = 1073741824.0; end++; break;
	default: break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end || v * mul > 1e15)
		return false;
	*out = (uint64_t)(v * mul);
	return true;
}

static bool parse_whole(const char *s, int lo, int hi, int *out)
{
	int64_t v;
	if (!parse_i64(s, &v) || v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

struct net_args {
	struct host_env he;
	struct strlist sets;
	struct active_out out;
	struct strlist pass; /* options for the helper */
	int nops;
	uint64_t lo, hi;
	double timeout, deadline;
	bool floor_set;
	unsigned mib, reps;
	const char *gpus;
	bool rank_mode;
	int fault_rank, nranks; /* -1 and 0 when not given */
};

static int net_parse(const char *sub, int argc, char **argv, struct net_args *a)
{
	int c, v;
	optind = 1;
	opterr = 0;
	bool nccl = !strcmp(sub, "nccl");
	while ((c = getopt_long(argc, argv, ":c:vh", net_opts, NULL)) != -1) {
		int r = active_out_option("net", c, optarg, &a->out);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		const char *name = NULL;
		for (size_t i = 0; net_opts[i].name; i++)
			if (net_opts[i].val == c)
				name = net_opts[i].name;
		bool nccl_only = c >= NOPT_OP && c <= NOPT_DEADLINE && c != NOPT_GPUS;
		bool pairs_only = c == NOPT_BYTES || c == NOPT_REPS;
		if ((nccl_only && !nccl) || (pairs_only && nccl)) {
			usage_error("net", "'--%s' is not an option of 'vigil net %s'", name, sub);
			return -1;
		}
		switch (c) {
		case NOPT_OP: {
			struct strlist l = STRLIST_INIT;
			strlist_split(&l, optarg, ",");
			bool ok = l.nr > 0;
			for (size_t i = 0; i < l.nr; i++) {
				bool known = false;
				for (size_t k = 0; k < ARRAY_SIZE(nccl_ops); k++)
					known |= !strcmp(l.items[i], nccl_ops[k]);
				ok &= known;
			}
			a->nops = (int)l.nr;
			strlist_release(&l);
			if (!ok) {
				usage_error("net", "--op wants all_reduce, all_gather, reduce_scatter, "
					    "alltoall or sendrecv, not '%s'", optarg);
				return -1;
			}
			break;
		}
		case NOPT_SIZES: {
			const char *colon = strchr(optarg, ':');
			char lo[64];
			bool ok = colon && (size_t)(colon - optarg) < sizeof(lo);
			if (ok) {
				memcpy(lo, optarg, (size_t)(colon - optarg));
				lo[colon - optarg] = '\0';
				ok = parse_size_arg(lo, &a->lo) && parse_size_arg(colon + 1, &a->hi) &&
				     a->lo > 0 && a->lo <= a->hi;
			} else if (!colon) {
				ok = parse_size_arg(optarg, &a->lo) && a->lo > 0;
				a->hi = a->lo;
			}
			if (!ok) {
				usage_error("net", "--sizes wants MIN:MAX such as 1M:4G, not '%s'",
					    optarg);
				return -1;
			}
			break;
		}
		case NOPT_GPUS:
			if (!active_gpu_list_ok(optarg)) {
				usage_error("net", "--gpus wants a list such as 0,1,4-7, not '%s'",
					    optarg);
				return -1;
			}
			a->gpus = optarg;
			break;
		case NOPT_ITERS:
		case NOPT_WARMUP:
			if (!parse_whole(optarg, c == NOPT_ITERS ? 1 : 0, 100000, &v)) {
				usage_error("net", "--%s wants a count, not '%s'", name, optarg);
				return -1;
			}
			break;
		case NOPT_TIMEOUT:
		case NOPT_DEADLINE: {
			double d;
			char opt[24];
			snprintf(opt, sizeof(opt), "--%s", name);
			if (opt_seconds("net", opt, optarg, 1, 86400, &d) < 0)
				return -1;
			if (c == NOPT_TIMEOUT)
				a->timeout = d;
			else
				a->deadline = d;
			if (c == NOPT_DEADLINE)
				continue; /* vigil's own, not the helper's */
			break;
		}
		case NOPT_SINGLE: break;
		case NOPT_RANK:
		case NOPT_NRANKS:
		case NOPT_GPU:
		case NOPT_FAULT_RANK:
			if (!parse_whole(optarg, c == NOPT_NRANKS ? 1 : 0, 1 << 20, &v)) {
				usage_error("net", "--%s wants a number, not '%s'", name, optarg);
				return -1;
			}
			if (c == NOPT_RANK)
				a->rank_mode = true;
			if (c == NOPT_FAULT_RANK)
				a->fault_rank = v;
			if (c == NOPT_NRANKS)
				a->nranks = v;
			break;
		case NOPT_RDV:
			if (!*optarg) {
				usage_error("net", "--rendezvous wants a directory or tcp://HOST:PORT");
				return -1;
			}
			a->rank_mode = true;
			break;
		case NOPT_RUNID: break;
		case NOPT_FAULT_BYTES: {
			uint64_t b;
			if (!parse_size_arg(optarg, &b)) {
				usage_error("net", "--fault-bytes wants a size, not '%s'", optarg);
				return -1;
			}
			break;
		}
		case NOPT_BYTES:
			if (!parse_whole(optarg, 1, 1 << 20, &v)) {
				usage_error("net", "--bytes wants MiB, not '%s'", optarg);
				return -1;
			}
			a->mib = (unsigned)v;
			continue;
		case NOPT_REPS:
			if (!parse_whole(optarg, 1, 100000, &v)) {
				usage_error("net", "--reps wants a count, not '%s'", optarg);
				return -1;
			}
			a->reps = (unsigned)v;
			continue;
		case AOPT_CONFIG: a->he.config_path = optarg; continue;
		case AOPT_HOST:
		case AOPT_HOST_SLURMD:
			if (active_host_option("net", c, optarg, &a->he.host) < 0)
				return -1;
			continue;
		case 'c': strlist_add(&a->sets, optarg); continue;
		case 'h': return 1;
		case ':':
			usage_error("net", "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			usage_error("net", "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
		/* the helper takes the same option */
		struct strbuf o = STRBUF_INIT;
		strbuf_addf(&o, "--%s", name);
		strlist_add(&a->pass, o.buf);
		strbuf_release(&o);
		if (optarg)
			strlist_add(&a->pass, optarg);
	}
	if (optind < argc) {
		usage_error("net", "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (a->out.json && a->out.reason) {
		usage_error("net", "--json and --reason cannot be used together");
		return -1;
	}
	int known = a->nranks ? a->nranks : a->gpus ? active_gpu_list_count(a->gpus) : 0;
	if (a->fault_rank >= 0 && known && (known < 2 || a->fault_rank >= known)) {
		usage_error("net", "--fault-hang-rank %d cannot happen in a run of %d rank%s%s",
			    a->fault_rank, known, known == 1 ? "" : "s",
			    known < 2 ? " (a collective needs two)" : "");
		return -1;
	}
	return 0;
}

/* An injected fault the run could not have: a usage error, never a healthy verdict. */
static bool fault_possible(const struct net_args *a, const struct nc_run *r)
{
	if (a->fault_rank < 0 || !r->started || r->nranks <= 0)
		return true;
	if (r->nranks >= 2 && a->fault_rank < r->nranks)
		return true;
	usage_error("net", "--fault-hang-rank %d cannot happen: the run had %d rank%s%s",
		    a->fault_rank, r->nranks, r->nranks == 1 ? "" : "s",
		    r->nranks < 2 ? " (a collective needs two)" : "");
	return false;
}

/* ---- figures ---- */

static void nccl_figures(const struct nc_run *r, struct strbuf *out)
{
	struct nc_size *s = NULL;
	size_t n = nc_sizes(r, &s);
	if (n) {
		strbuf_addf(out, "%d ranks (%s), NCCL %d\n", r->nranks, r->mode, r->nccl_version);
		strbuf_addf(out, "%-15s %12s %11s %11s %11s %6s %6s\n", "op", "bytes", "time us",
			    "algbw GB/s", "busbw GB/s", "wrong", "ranks");
	}
	for (size_t i = 0; i < n; i++)
		strbuf_addf(out, "%-15s %12llu %11.1f %11.2f %11.2f %6llu %6d\n", s[i].op,
			    (unsigned long long)s[i].bytes, s[i].time_us, s[i].algbw, s[i].busbw,
			    (unsigned long long)s[i].wrong, s[i].ranks_reported);
	free(s);
}

static void pairs_figures(const struct np_run *r, struct strbuf *out)
{
	int maxg = -1;
	for (size_t i = 0; i < r->nr; i++) {
		maxg = r->pairs[i].src > maxg ? r->pairs[i].src : maxg;
		maxg = r->pairs[i].dst > maxg ? r->pairs[i].dst : maxg;
	}
	if (maxg < 0)
		return;
	strbuf_addf(out, "GB/s one way  ");
	for (int d = 0; d <= maxg; d++)
		strbuf_addf(out, " %7s%-2d", "to GPU ", d);
	strbuf_addch(out, '\n');
	for (int s = 0; s <= maxg; s++) {
		strbuf_addf(out, "from GPU %-4d ", s);
		for (int d = 0; d <= maxg; d++) {
			double v = -1;
			for (size_t i = 0; i < r->nr; i++)
				if (!r->pairs[i].bidir && r->pairs[i].src == s && r->pairs[i].dst == d)
					v = r->pairs[i].gbps;
			if (v < 0)
				strbuf_addf(out, " %9s", "-");
			else
				strbuf_addf(out, " %9.1f", v);
		}
		strbuf_addch(out, '\n');
	}
	for (size_t i = 0; i < r->nr; i++)
		if (r->pairs[i].bidir)
			strbuf_addf(out, "both ways GPU %d <-> GPU %d: %.1f GB/s\n", r->pairs[i].src,
				    r->pairs[i].dst, r->pairs[i].gbps);
}

/* ---- the commands ---- */

static int net_run(const char *sub, int argc, char **argv)
{
	struct net_args a;
	struct strbuf err = STRBUF_INIT, desc = STRBUF_INIT, why = STRBUF_INIT, fig = STRBUF_INIT;
	struct stress_limits lim;
	struct gs_end end;
	struct report rep;
	int ret = EXIT_USAGE;
	bool nccl = !strcmp(sub, "nccl");

	memset(&a, 0, sizeof(a));
	a.out.color = -1;
	a.nops = 1;
	a.lo = 1ULL << 20;
	a.hi = 4ULL << 30;
	a.timeout = 60;
	a.mib = 1024;
	a.reps = 10;
	a.fault_rank = -1;
	int pr = net_parse(sub, argc, argv, &a);
	if (pr) {
		if (pr > 0) {
			fputs(net_usage, stdout);
			ret = EXIT_HEALTHY;
		}
		goto out_args;
	}
	if (host_env_setup(&a.he, (const char *const *)a.sets.items, a.sets.nr, &err) < 0 ||
	    stress_limits_get(&lim, NULL, &a.he.cfg, &err) < 0) {
		fprintf(stderr, "vigil net: %s\n", err.buf);
		goto out_env;
	}
	a.floor_set = config_get(&a.he.cfg, "net", "floor-busbw") != NULL;
	report_init(&rep, a.he.host, wall_seconds());
	uint64_t t0 = mono_ms();
	const char *model = NULL;
	if (nccl) {
		struct nc_run run;
		nc_run_init(&run);
		const char *args[72];
		size_t n = 0;
		for (size_t i = 0; i < a.pass.nr && n < ARRAY_SIZE(args) - 1; i++)
			args[n++] = a.pass.items[i];
		args[n] = NULL;
		int nsizes = 1;
		for (uint64_t s = a.lo; s < a.hi && nsizes < 64; s *= 2)
			nsizes++;
		double dl = a.deadline > 0 ? a.deadline : 90 + 2 * a.timeout + 5.0 * a.nops * nsizes;
		struct gs_procs procs;
		memset(&procs, 0, sizeof(procs));
		int fd = active_progress_fd(!a.out.json);
		engine_nccl(args, (unsigned)(dl * 1000), fd, &run, &procs, &end, &desc, &why);
		for (size_t i = 0; i < run.nr_errors; i++)
			if (starts_with(run.errors[i], "no_gpu: "))
				stress_driver_fix_prefixed(&a.he.fs, &run.errors[i]);
		active_progress_close(fd);
		rep.duration_ms = mono_ms() - t0;
		/* the floor is the model's, as the ranks named their GPUs */
		model = run.gpu_name[0] ? run.gpu_name : NULL;
		if (!fault_possible(&a, &run)) {
			nc_run_release(&run);
			gs_procs_release(&procs);
			report_release(&rep);
			goto out_env;
		}
		if (stress_limits_get(&lim, model, &a.he.cfg, &err) == 0) {
			nccl_evaluate(&run, &end, &lim, a.floor_set, &rep);
			gs_procs_report(&procs, "nccl", "NCCL test", &rep);
			nccl_figures(&run, &fig);
		}
		nc_run_release(&run);
		gs_procs_release(&procs);
	} else {
		struct np_run run;
		np_run_init(&run);
		int fd = active_progress_fd(!a.out.json);
		engine_pairs(a.mib, a.reps, a.gpus, fd, &run, &end, &desc, &why);
		stress_driver_fix(&a.he.fs, &run.error_code, &run.error);
		active_progress_close(fd);
		rep.duration_ms = mono_ms() - t0;
		for (size_t i = 0; i < run.nr_gpus && !model; i++)
			model = run.gpus[i].name;
		if (stress_limits_get(&lim, model, &a.he.cfg, &err) == 0) {
			pairs_evaluate(&run, &end, &lim, &rep);
			pairs_figures(&run, &fig);
		}
		np_run_release(&run);
	}
	ret = active_finish(&rep, nccl ? "vigil net nccl" : "vigil net pairs", fig.buf, &a.out);
out_env:
	host_env_release(&a.he);
out_args:
	strlist_release(&a.sets);
	strlist_release(&a.pass);
	strbuf_release(&err);
	strbuf_release(&desc);
	strbuf_release(&why);
	strbuf_release(&fig);
	return ret;
}

/* ---- vigil net ib ---- */

enum { IOPT_SERVER = 500, IOPT_PEER, IOPT_SRUN, IOPT_NODES, IOPT_HCA, IOPT_GPUS, IOPT_NOCUDA,
       IOPT_NOLAT, IOPT_DURATION, IOPT_SIZE, IOPT_PORT, IOPT_TIMEOUT, IOPT_WAIT, IOPT_COUNTERS,
       IOPT_ROOT };

static const struct option ib_opts_table[] = {
	{ "server", no_argument, NULL, IOPT_SERVER },
	{ "peer", required_argument, NULL, IOPT_PEER },
	{ "srun", no_argument, NULL, IOPT_SRUN },
	{ "nodes", required_argument, NULL, IOPT_NODES },
	{ "hca", required_argument, NULL, IOPT_HCA },
	{ "gpus", required_argument, NULL, IOPT_GPUS },
	{ "no-cuda", no_argument, NULL, IOPT_NOCUDA },
	{ "no-latency", no_argument, NULL, IOPT_NOLAT },
	{ "duration", required_argument, NULL, IOPT_DURATION },
	{ "size", required_argument, NULL, IOPT_SIZE },
	{ "port", required_argument, NULL, IOPT_PORT },
	{ "timeout", required_argument, NULL, IOPT_TIMEOUT },
	{ "connect-wait", required_argument, NULL, IOPT_WAIT },
	{ "counters", no_argument, NULL, IOPT_COUNTERS },
	{ "root", required_argument, NULL, IOPT_ROOT },
	ACTIVE_OUT_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

struct ib_args {
	struct host_env he;
	struct strlist sets;
	struct active_out out;
	struct ib_opts o;
	bool server, srun, counters, timeout_set;
	const char *nodes;
	struct strlist pass; /* options both sides of --nodes get */
};

static bool ib_host_ok(const char *h)
{
	if (!*h || strlen(h) > 253 || *h == '-')
		return false;
	for (const char *p = h; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_' && *p != ':')
			return false;
	return true;
}

static int ib_parse(int argc, char **argv, struct ib_args *a)
{
	int c, modes = 0;
	double d;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:vh", ib_opts_table, NULL)) != -1) {
		int r = active_out_option("net", c, optarg, &a->out);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		bool pass = false;
		switch (c) {
		case IOPT_SERVER: a->server = true; modes++; break;
		case IOPT_PEER:
			if (!ib_host_ok(optarg)) {
				usage_error("net", "--peer wants a host name, not '%s'", optarg);
				return -1;
			}
			a->o.peer = optarg;
			modes++;
			break;
		case IOPT_SRUN: a->srun = true; modes++; break;
		case IOPT_NODES: a->nodes = optarg; modes++; break;
		case IOPT_COUNTERS: a->counters = true; modes++; break;
		case IOPT_HCA: {
			struct strlist l = STRLIST_INIT;
			struct strbuf err = STRBUF_INIT;
			int hr = ib_list_hcas(fsroot_host, optarg, &l, &err);
			if (hr < 0)
				usage_error("net", "--hca: %s", err.buf);
			strlist_release(&l);
			strbuf_release(&err);
			if (hr < 0)
				return -1;
			a->o.hcas = optarg;
			pass = true;
			break;
		}
		case IOPT_GPUS:
			if (!active_gpu_list_ok(optarg) || strchr(optarg, '-')) {
				usage_error("net", "--gpus wants GPU numbers such as 0,1,2, not '%s'",
					    optarg);
				return -1;
			}
			a->o.gpus = optarg;
			pass = true;
			break;
		case IOPT_NOCUDA: a->o.no_cuda = true; pass = true; break;
		case IOPT_NOLAT: a->o.latency = false; pass = true; break;
		case IOPT_DURATION:
			if (opt_seconds("net", "--duration", optarg, 1, 86400, &d) < 0)
				return -1;
			a->o.duration_s = (unsigned)ceil(d);
			pass = true;
			break;
		case IOPT_SIZE: {
			uint64_t b;
			if (!parse_size_arg(optarg, &b) || b < 1 || b > (1ULL << 31)) {
				usage_error("net", "--size wants bytes up to 2G, not '%s'", optarg);
				return -1;
			}
			a->o.size = b;
			pass = true;
			break;
		}
		case IOPT_PORT: {
			int v;
			if (!parse_whole(optarg, 1024, 65000, &v)) {
				usage_error("net", "--port wants a port from 1024 to 65000, not '%s'",
					    optarg);
				return -1;
			}
			a->o.port = (unsigned)v;
			pass = true;
			break;
		}
		case IOPT_TIMEOUT:
		case IOPT_WAIT:
			if (opt_seconds("net", c == IOPT_TIMEOUT ? "--timeout" : "--connect-wait",
					optarg, c == IOPT_TIMEOUT ? 1 : 0, 86400, &d) < 0)
				return -1;
			if (c == IOPT_TIMEOUT) {
				a->o.timeout_ms = (unsigned)(d * 1000);
				a->timeout_set = true;
			} else {
				a->o.connect_wait_ms = (unsigned)(d * 1000);
			}
			pass = true;
			break;
		case IOPT_ROOT: a->he.root = optarg; break;
		case AOPT_CONFIG: a->he.config_path = optarg; break;
		case AOPT_HOST:
		case AOPT_HOST_SLURMD:
			if (active_host_option("net", c, optarg, &a->he.host) < 0)
				return -1;
			break;
		case 'c': strlist_add(&a->sets, optarg); break;
		case 'h': return 1;
		case ':':
			usage_error("net", "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			usage_error("net", "unknown option '%s' of 'vigil net ib'", argv[optind - 1]);
			return -1;
		}
		if (pass && c != IOPT_HCA) {
			struct strbuf o = STRBUF_INIT;
			for (size_t i = 0; ib_opts_table[i].name; i++)
				if (ib_opts_table[i].val == c)
					strbuf_addf(&o, "--%s", ib_opts_table[i].name);
			strlist_add(&a->pass, o.buf);
			strbuf_release(&o);
			if (optarg)
				strlist_add(&a->pass, optarg);
		}
	}
	if (optind < argc) {
		usage_error("net", "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (modes != 1) {
		usage_error("net", "'vigil net ib' wants one of --server, --peer HOST, --srun, "
			    "--nodes A,B or --counters");
		return -1;
	}
	if (a->out.json && a->out.reason) {
		usage_error("net", "--json and --reason cannot be used together");
		return -1;
	}
	if (!a->timeout_set)
		a->o.timeout_ms = (a->o.duration_s + 50) * 1000;
	return 0;
}

/* --counters: this host's IB port counters as JSON, for vigil fabric burnin run. */
static int ib_counters_print(struct ib_args *a)
{
	struct check_ctx ctx;
	struct ib_readings rd;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	struct json_writer w;
	memset(&ctx, 0, sizeof(ctx));
	memset(&rd, 0, sizeof(rd));
	ctx.root = &a->he.fs;
	int ret = EXIT_HEALTHY;
	int gr = ib_gather(&ctx, &rd, &err);
	json_writer_init(&w, &out, false);
	json_open_top(&w);
	json_key(&w, "host");
	json_string(&w, a->he.host);
	if (gr < 0 || !rd.nr) {
		json_key(&w, "error");
		if (gr < 0)
			json_string(&w, err.buf);
		else
			json_string(&w, "no RDMA device under /sys/class/infiniband");
		ret = EXIT_UNKNOWN;
	}
	json_key(&w, "ports");
	json_open_array(&w);
	for (size_t i = 0; i < rd.nr; i++) {
		const struct ib_port *p = &rd.ports[i];
		json_open_object(&w);
		json_key(&w, "hca");
		json_string(&w, p->hca);
		json_key(&w, "port");
		json_uint(&w, p->port);
		json_key(&w, "state");
		json_string(&w, p->state);
		if (p->error[0] || p->counter_error[0]) {
			json_key(&w, "error");
			json_string(&w, p->error[0] ? p->error : p->counter_error);
		}
		json_key(&w, "counters");
		json_open_object(&w);
		for (int k = 0; k < IBC__COUNT; k++)
			if (p->have[k]) {
				json_key(&w, ib_counters[k].name);
				json_uint(&w, p->counter[k]);
			}
		json_close_object(&w);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(&out, '\n');
	if (fwrite(out.buf, 1, out.len, stdout) != out.len || fflush(stdout))
		ret = EXIT_UNKNOWN;
	ib_readings_release(&rd);
	strbuf_release(&err);
	strbuf_release(&out);
	return ret;
}

/* --srun: task 0 of the step serves, task 1 connects to task 0's host (the step's first node,
 * as srun -N2 -n2 places tasks in block order). 0, or -1 with *err. */
static int ib_srun_role(struct ib_args *a, char *peer, size_t n, struct strbuf *err)
{
	const char *rank = getenv("SLURM_PROCID");
	const char *nl = getenv("SLURM_STEP_NODELIST");
	int64_t r;
	if (!nl || !*nl)
		nl = getenv("SLURM_JOB_NODELIST");
	if (!rank || !parse_i64(rank, &r) || r < 0 || r > 1)
		return error_set(err, "--srun wants SLURM_PROCID 0 or 1 (run it as 'srun -N2 -n2 "
				      "vigil net ib --srun'), not '%s'", rank ? rank : "(unset)");
	if (r == 0) {
		a->server = true;
		return 0;
	}
	if (!nl || !*nl)
		return error_set(err, "--srun: no SLURM_STEP_NODELIST to find task 0's host");
	const char *argv[] = { "scontrol", "show", "hostnames", nl, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 30000;
	c.timeout_name = "scontrol's deadline";
	int ret = -1;
	if (child_run(&c, err) == 0 && c.exited && c.exit_code == 0) {
		size_t l = strcspn(c.out.buf, "\n");
		if (l && l < n) {
			memcpy(peer, c.out.buf, l);
			peer[l] = '\0';
			if (ib_host_ok(peer)) {
				a->o.peer = peer;
				ret = 0;
			}
		}
		if (ret < 0)
			error_set(err, "scontrol show hostnames gave no host name");
	} else if (!err->len) {
		struct strbuf d = STRBUF_INIT;
		child_describe(&c, &d);
		error_set(err, "scontrol show hostnames %s", d.buf);
		strbuf_release(&d);
	}
	child_release(&c);
	return ret;
}

/* --nodes A,B: the two srun steps from here. */
static void ib_nodes_run(struct ib_args *a, struct check_result *res, struct strbuf *fig)
{
	struct strlist n = STRLIST_INIT;
	struct strbuf self = STRBUF_INIT;
	strlist_split(&n, a->nodes, ",");
	if (fsroot_readlink(fsroot_host, "/proc/self/exe", &self, false) != 0)
		strbuf_addstr(&self, "vigil");
	struct ib_pair p;
	memset(&p, 0, sizeof(p));
	p.a = n.items[0];
	p.b = n.items[1];
	p.a_hca = p.b_hca = a->o.hcas;
	const char *srun = config_get(&a->he.cfg, "slurm", "srun");
	/* the client's own deadline: its retries and every test of every HCA */
	unsigned tests = 16 * (a->o.latency ? 2 : 1);
	ib_pair_setup(&p, srun, self.buf, &a->pass,
		      a->o.connect_wait_ms + tests * a->o.timeout_ms + 60000);
	struct strbuf serr = STRBUF_INIT;
	if (child_start(&p.srv, &serr) < 0)
		strlcpy_v(p.srv_start_error, serr.buf, sizeof(p.srv_start_error));
	/* the server first, then the client: both under their deadlines */
	struct strbuf cerr = STRBUF_INIT;
	if (!p.srv_start_error[0]) {
		if (child_run(&p.cli, &cerr) < 0)
			strlcpy_v(p.cli_start_error, cerr.buf, sizeof(p.cli_start_error));
		while (!child_poll(&p.srv, -1))
			;
		child_finish(&p.srv);
	} else {
		strlcpy_v(p.cli_start_error, "the server step did not start",
			  sizeof(p.cli_start_error));
	}
	ib_pair_judge(&p, res);
	strbuf_addf(fig, "pair %s -> %s: %s", p.a, p.b, ib_verdict_name(p.verdict));
	if (p.bw_gbps >= 0)
		strbuf_addf(fig, ", %.1f Gb/s", p.bw_gbps);
	strbuf_addch(fig, '\n');
	ib_pair_release(&p);
	strlist_release(&n);
	strbuf_release(&self);
	strbuf_release(&serr);
	strbuf_release(&cerr);
}

static void ib_figures(const struct ib_side *s, struct strbuf *out)
{
	if (!s->nr || s->server)
		return;
	strbuf_addf(out, "%-12s %5s %12s %12s %12s\n", "HCA", "GPU", "avg Gb/s", "peak Gb/s",
		    "lat p99 us");
	for (size_t i = 0; i < s->nr; i++) {
		const struct pt_hca *h = &s->hcas[i];
		char gpu[16] = "-", avg[24] = "-", peak[24] = "-", lat[24] = "-";
		if (h->cuda >= 0)
			snprintf(gpu, sizeof(gpu), "%d", h->cuda);
		if (h->bw.outcome == PT_RAN && h->bw.r.have) {
			snprintf(avg, sizeof(avg), "%.1f", h->bw.r.bw_avg);
			snprintf(peak, sizeof(peak), "%.1f", h->bw.r.bw_peak);
		}
		if (h->lat.outcome == PT_RAN && h->lat.r.have)
			snprintf(lat, sizeof(lat), "%.2f",
				 h->lat.r.have_p99 ? h->lat.r.p99 : h->lat.r.t_avg);
		strbuf_addf(out, "%-12s %5s %12s %12s %12s\n", h->hca, gpu, avg, peak, lat);
	}
}

static int net_ib(int argc, char **argv)
{
	struct ib_args a;
	struct strbuf err = STRBUF_INIT, fig = STRBUF_INIT;
	struct report rep;
	struct pt_floors fl;
	char peer[256];
	int ret = EXIT_USAGE;
	memset(&a, 0, sizeof(a));
	a.out.color = -1;
	ib_opts_init(&a.o);
	int pr = ib_parse(argc, argv, &a);
	if (pr) {
		if (pr > 0) {
			fputs(net_usage, stdout);
			ret = EXIT_HEALTHY;
		}
		goto out_args;
	}
	if (a.nodes) {
		struct strlist n = STRLIST_INIT;
		strlist_split(&n, a.nodes, ",");
		bool ok = n.nr == 2 && ib_host_ok(n.items[0]) && ib_host_ok(n.items[1]) &&
			  strcmp(n.items[0], n.items[1]);
		strlist_release(&n);
		if (!ok) {
			usage_error("net", "--nodes wants two host names A,B, not '%s'", a.nodes);
			goto out_args;
		}
	}
	if (host_env_setup(&a.he, (const char *const *)a.sets.items, a.sets.nr, &err) < 0 ||
	    config_get_double(&a.he.cfg, "net", "ib-floor-gbps", PT_FLOOR_BW_GBPS, &fl.bw_gbps,
			      &err) < 0 ||
	    config_get_double(&a.he.cfg, "net", "ib-lat-p99-us", PT_FLOOR_LAT_P99_US,
			      &fl.lat_p99_us, &err) < 0) {
		fprintf(stderr, "vigil net: %s\n", err.buf);
		goto out_env;
	}
	a.o.root = &a.he.fs;
	if (a.counters) {
		ret = ib_counters_print(&a);
		goto out_env;
	}
	if (a.srun && ib_srun_role(&a, peer, sizeof(peer), &err) < 0) {
		fprintf(stderr, "vigil net: %s\n", err.buf);
		ret = EXIT_USAGE;
		goto out_env;
	}
	report_init(&rep, a.he.host, wall_seconds());
	uint64_t t0 = mono_ms();
	struct check_result *res = report_add(&rep, "ib");
	if (a.nodes) {
		ib_nodes_run(&a, res, &fig);
	} else {
		struct ib_side side;
		memset(&side, 0, sizeof(side));
		ib_side_run(&a.o, &side);
		ib_side_evaluate(&side, &fl, res);
		ib_figures(&side, &fig);
		ib_side_release(&side);
	}
	rep.duration_ms = res->duration_ms = mono_ms() - t0;
	result_finish(res);
	ret = active_finish(&rep, a.server ? "vigil net ib (server)" : "vigil net ib", fig.buf,
			    &a.out);
out_env:
	host_env_release(&a.he);
out_args:
	strlist_release(&a.sets);
	strlist_release(&a.pass);
	strbuf_release(&err);
	strbuf_release(&fig);
	return ret;
}

int cmd_net(int argc, char **argv)
{
	if (argc < 2 || is_help_arg(argv[1])) {
		if (argc < 2) {
			usage_error("net", "which test? (nccl, pairs or ib)");
			return EXIT_USAGE;
		}
		fputs(net_usage, stdout);
		return EXIT_HEALTHY;
	}
	if (!strcmp(argv[1], "nccl") || !strcmp(argv[1], "pairs"))
		return net_run(argv[1], argc - 1, argv + 1);
	if (!strcmp(argv[1], "ib"))
		return net_ib(argc - 1, argv + 1);
	usage_error("net", "no test '%s' (there are: nccl, pairs, ib)", argv[1]);
	return EXIT_USAGE;
}
