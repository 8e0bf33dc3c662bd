/*
 * stress.c: 'vigil stress gpu', the active GPU test, and what the active commands share
 * (active.h): output, progress, and 'vigil check --deep'. The tests run in the CUDA helper
 * vigil-gpu (cuda/); src/stress/engine.c runs it and gpu_stress.c judges what it printed: this
 * file parses the options, calls them and prints.
 */
#include "cmd.h"
#include "active.h"
#include "common.h"
#include "../lib/strlist.h"
#include "../slurm/slurm.h"
#include "../stress/driver.h"

#include <fcntl.h>
#include <stdlib.h>
#include <getopt.h>
#include <unistd.h>

/* ---- shared by the active commands ---- */

int active_progress_fd(bool want)
{
	if (!want || !isatty(2))
		return -1;
	return dup(2); /* without close-on-exec: the helper inherits it */
}

void active_progress_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int active_out_option(const char *cmd, int c, const char *arg, struct active_out *o)
{
	switch (c) {
	case AOPT_JSON: o->json = true; return 1;
	case AOPT_REASON: o->reason = true; return 1;
	case 'v': o->verbose = true; return 1;
	case AOPT_COLOR:
		o->color = color_mode_parse(arg);
		if (o->color == -2) {
			usage_error(cmd, "--color wants auto, always or never");
			return -1;
		}
		return 1;
	default:
		return 0;
	}
}

int active_host_option(const char *cmd, int c, const char *arg, const char **host)
{
	if (c == AOPT_HOST) {
		*host = arg;
		return 1;
	}
	if (c != AOPT_HOST_SLURMD)
		return 0;
	/* one srun step runs the same command line on every node: slurmd names the node
	 * (vigil qualify's rounds; docs/SLURM.md) */
	const char *n = getenv("SLURMD_NODENAME");
	if (!n || !slurm_node_name_ok(n)) {
		usage_error(cmd, "--host-from-slurmd: SLURMD_NODENAME is %s",
			    n ? "no node name" : "not set (not a Slurm task)");
		return -1;
	}
	*host = n;
	return 1;
}

bool active_gpu_list_ok(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == ',' || *p == '-'))
			return false;
	return s[0] != ',' && s[0] != '-';
}

int active_gpu_list_count(const char *s)
{
	int n = 0;
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b = a;
		if (end == s)
			return 0;
		if (*end == '-') {
			const char *t = end + 1;
			b = strtol(t, &end, 10);
			if (end == t || b < a)
				return 0;
		}
		if (b - a >= 1 << 20)
			return 0;
		n += (int)(b - a + 1);
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return 0;
	}
	return n;
}

static int print_report(const struct report *rep, const char *title, const char *figures,
			const struct active_out *o, void (*extra)(struct json_writer *, void *),
			void *arg)
{
	struct strbuf out = STRBUF_INIT;
	int ret = verdict_exit_code(rep->verdict);
	if (o->json) {
		report_json_extra(rep, &out, true, extra, arg);
	} else if (o->reason) {
		strbuf_addf(&out, "%s\n", rep->reason);
	} else {
		bool color = color_enabled(o->color, 1);
		strbuf_addf(&out, "%s on ", title);
		strbuf_add_clean(&out, rep->host);
		strbuf_addf(&out, " (%.0f s)\n\n", (double)rep->duration_ms / 1000);
		if (figures && *figures) {
			/* GPU names and figures come from the helper: spelled out, line by line */
			const char *p = figures;
			while (*p) {
				const char *nl = strchr(p, '\n');
				size_t n = nl ? (size_t)(nl - p) : strlen(p);
				char *line = xstrndup(p, n);
				strbuf_add_clean(&out, line);
				strbuf_addch(&out, '\n');
				free(line);
				p += n + (nl ? 1 : 0);
			}
		}
		size_t shown = 0;
		for (size_t i = 0; i < rep->nr; i++) {
			const struct check_result *c = &rep->results[i];
			for (size_t j = 0; j < c->nr; j++) {
				const struct finding *f = &c->findings[j];
				bool problem = f->status == STATUS_FAIL || f->status == STATUS_WARN ||
					       f->status == STATUS_UNKNOWN;
				if (!problem && !o->verbose)
					continue;
				if (!shown++)
					strbuf_addstr(&out, o->verbose ? "findings:\n" : "problems:\n");
				strbuf_addstr(&out, "  ");
				if (color)
					strbuf_addstr(&out, status_color(f->status));
				strbuf_addf(&out, "%-7s", status_name(f->status));
				if (color)
					strbuf_addstr(&out, COLOR_RESET);
				strbuf_addf(&out, " %-13s ", c->name);
				strbuf_add_clean(&out, f->message);
				if (f->action != ACTION_NONE && problem)
					strbuf_addf(&out, "  -> %s", action_name(f->action));
				strbuf_addch(&out, '\n');
			}
		}
		if (shown)
			strbuf_addch(&out, '\n');
		report_verdict_line(rep, &out, color);
	}
	fwrite(out.buf, 1, out.len, stdout);
	if (fflush(stdout) != 0 && ret == EXIT_HEALTHY)
		ret = EXIT_UNKNOWN;
	strbuf_release(&out);
	return ret;
}

int active_finish(struct report *rep, const char *title, const char *figures,
		  const struct active_out *o)
{
	return active_finish_extra(rep, title, figures, o, NULL, NULL);
}

int active_finish_extra(struct report *rep, const char *title, const char *figures,
			const struct active_out *o, void (*extra)(struct json_writer *, void *),
			void *arg)
{
	report_finish(rep);
	int ret = print_report(rep, title, figures, o, extra, arg);
	report_release(rep);
	return ret;
}

/* ---- vigil stress gpu ---- */

static const char stress_usage[] =
	"usage: vigil stress gpu [options]\n"
	"\n"
	"Take the GPUs (all at once) for a while and find the weak one: sustained matrix products\n"
	"in bf16, fp16, tf32 and fp8 (where the GPU has it), every product verified against an\n"
	"independent reference; HBM read, write and copy bandwidth; memory patterns (walking\n"
	"ones and zeros, moving inversions, random, address in address) over most of the free\n"
	"memory; ECC, row remapping and Xid watched from before to after. A GPU fails on any\n"
	"miscompare, new uncorrectable error or Xid, below its model's floor, or below its\n"
	"siblings by more than the outlier margin. Never run it beside training.\n"
	"(The storage test, which takes no GPU: 'vigil stress storage --help'.)\n"
	"\n"
	"Needs vigil's CUDA helpers (vigil-gpu, built by 'make' where nvcc is found) next to vigil,\n"
	"in " VIGIL_LIBDIR "/vigil, or in $VIGIL_CUDA_HELPER_DIR.\n"
	"\n"
	"  --duration SECONDS  how long to load the GPUs (default 60; 70% matrix products, 25%\n"
	"                      memory patterns)\n"
	"  --gpus LIST         only these GPUs (0,1,4-7)\n"
	"  --dtypes LIST       matrix product types (default bf16,fp16,tf32,fp8)\n"
	"  --no-gemm, --no-hbm, --no-memtest   leave a test out\n"
	"  --timeout SECONDS   deadline for the whole run (default: duration + 25% + 120)\n"
	"  --inject TEST       plant one fault in gemm, hbm or memtest (checks the checkers)\n"
	"\n"
	"Silent data corruption (alone, instead of the tests above):\n"
	"  --determinism       one fixed workload (bf16 products through one cuBLASLt algorithm\n"
	"                      and a fixed-order reduction) repeated on every GPU at once: every\n"
	"                      repeat and every GPU of a model must give the same digest of the\n"
	"                      output bits, and the reference digest shipped with vigil\n"
	"  --repeats N         repeat N times (at least 3) instead of for --duration\n"
	"  --reference FILE    reference digests (default determinism-ref.tsv beside the helper)\n"
	"  --inject sdc        flip one bit in one repeat of the first GPU (checks the checker)\n"
	ACTIVE_OUT_USAGE;

enum { SOPT_DURATION = 300, SOPT_GPUS, SOPT_DTYPES, SOPT_NO_GEMM, SOPT_NO_HBM, SOPT_NO_MEMTEST,
       SOPT_TIMEOUT, SOPT_INJECT, SOPT_DETERMINISM, SOPT_REPEATS, SOPT_REFERENCE };

static const struct option stress_opts[] = {
	{ "duration", required_argument, NULL, SOPT_DURATION },
	{ "gpus", required_argument, NULL, SOPT_GPUS },
	{ "dtypes", required_argument, NULL, SOPT_DTYPES },
	{ "no-gemm", no_argument, NULL, SOPT_NO_GEMM },
	{ "no-hbm", no_argument, NULL, SOPT_NO_HBM },
	{ "no-memtest", no_argument, NULL, SOPT_NO_MEMTEST },
	{ "timeout", required_argument, NULL, SOPT_TIMEOUT },
	{ "inject", required_argument, NULL, SOPT_INJECT },
	{ "determinism", no_argument, NULL, SOPT_DETERMINISM },
	{ "repeats", required_argument, NULL, SOPT_REPEATS },
	{ "reference", required_argument, NULL, SOPT_REFERENCE },
	ACTIVE_OUT_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

struct stress_args {
	struct host_env he;
	struct strlist sets;
	struct active_out out;
	double duration, timeout;
	const char *gpus, *dtypes, *inject, *reference;
	bool no_gemm, no_hbm, no_memtest, determinism, duration_set;
	unsigned repeats;
};

static int stress_parse(int argc, char **argv, struct stress_args *a)
{
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:vh", stress_opts, NULL)) != -1) {
		int r = active_out_option("stress", c, optarg, &a->out);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		switch (c) {
		case SOPT_DURATION:
			if (!parse_double(optarg, &a->duration) || a->duration <= 0 ||
			    a->duration > 86400) {
				usage_error("stress", "--duration wants seconds, not '%s'", optarg);
				return -1;
			}
			a->duration_set = true;
			break;
		case SOPT_TIMEOUT:
			if (opt_seconds("stress", "--timeout", optarg, 1, 172800, &a->timeout) < 0)
				return -1;
			break;
		case SOPT_GPUS:
			if (!active_gpu_list_ok(optarg)) {
				usage_error("stress", "--gpus wants a list such as 0,1,4-7, not '%s'",
					    optarg);
				return -1;
			}
			a->gpus = optarg;
			break;
		case SOPT_DTYPES: {
			struct strlist l = STRLIST_INIT;
			strlist_split(&l, optarg, ",");
			bool ok = l.nr > 0;
			for (size_t i = 0; i < l.nr; i++)
				ok &= stress_dtype_from_name(l.items[i]) >= 0;
			strlist_release(&l);
			if (!ok) {
				usage_error("stress", "--dtypes wants bf16, fp16, tf32 or fp8, not '%s'",
					    optarg);
				return -1;
			}
			a->dtypes = optarg;
			break;
		}
		case SOPT_NO_GEMM: a->no_gemm = true; break;
		case SOPT_NO_HBM: a->no_hbm = true; break;
		case SOPT_NO_MEMTEST: a->no_memtest = true; break;
		case SOPT_INJECT:
			if (strcmp(optarg, "gemm") && strcmp(optarg, "hbm") && strcmp(optarg, "memtest") &&
			    strcmp(optarg, "sdc")) {
				usage_error("stress", "--inject wants gemm, hbm, memtest or sdc");
				return -1;
			}
			a->inject = optarg;
			break;
		case SOPT_DETERMINISM: a->determinism = true; break;
		case SOPT_REPEATS: {
			double rv;
			if (!parse_double(optarg, &rv) || rv < 3 || rv > 1000000 || rv != (unsigned)rv) {
				usage_error("stress", "--repeats wants a count of at least 3, not '%s'",
					    optarg);
				return -1;
			}
			a->repeats = (unsigned)rv;
			break;
		}
		case SOPT_REFERENCE: a->reference = optarg; break;
		case AOPT_CONFIG: a->he.config_path = optarg; break;
		case AOPT_HOST:
		case AOPT_HOST_SLURMD:
			if (active_host_option("stress", c, optarg, &a->he.host) < 0)
				return -1;
			break;
		case 'c': strlist_add(&a->sets, optarg); break;
		case 'h': return 1;
		case ':':
			usage_error("stress", "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			usage_error("stress", "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		usage_error("stress", "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!a->determinism && (a->repeats || a->reference)) {
		usage_error("stress", "--repeats and --reference belong to --determinism");
		return -1;
	}
	if (a->determinism && (a->no_gemm || a->no_hbm || a->no_memtest || a->dtypes)) {
		usage_error("stress", "--determinism runs alone: leave out --dtypes and --no-*");
		return -1;
	}
	if (a->inject && (!strcmp(a->inject, "sdc") != a->determinism)) {
		usage_error("stress", a->determinism ? "--determinism takes only --inject sdc"
						     : "--inject sdc belongs to --determinism");
		return -1;
	}
	if (a->determinism && a->repeats && a->duration_set) {
		usage_error("stress", "--repeats and --duration: give one of them");
		return -1;
	}
	if (a->no_gemm && a->no_hbm && a->no_memtest) {
		usage_error("stress", "--no-gemm, --no-hbm and --no-memtest leave nothing to run");
		return -1;
	}
	if (a->out.json && a->out.reason) {
		usage_error("stress", "--json and --reason cannot be used together");
		return -1;
	}
	return 0;
}

/* The figures table: one line per GPU. */
static void stress_figures(const struct gs_run *r, struct strbuf *out)
{
	if (!r->nr)
		return;
	strbuf_addf(out, "%-4s %-14s", "GPU", "model");
	for (int d = 0; d < STRESS_NR_DTYPES; d++)
		strbuf_addf(out, " %6s", stress_dtype_name(d));
	strbuf_addf(out, "  %6s %6s %6s  %-16s %5s %6s\n", "read", "write", "copy", "memtest", "temp",
		    "power");
	strbuf_addf(out, "%-4s %-14s", "", "");
	for (int d = 0; d < STRESS_NR_DTYPES; d++)
		strbuf_addf(out, " %6s", d == STRESS_NR_DTYPES - 1 ? "TFLOP/s" : "");
	strbuf_addf(out, "  %6s %6s %6s\n", "", "", "GB/s");
	for (size_t i = 0; i < r->nr; i++) {
		const struct gs_gpu *g = &r->gpus[i];
		const char *name = g->name ? g->name : "?";
		if (starts_with(name, "NVIDIA "))
			name += 7;
		strbuf_addf(out, "%-4d %-14.14s", g->index, name);
		for (int d = 0; d < STRESS_NR_DTYPES; d++) {
			const struct gs_gemm *x = NULL;
			for (size_t j = 0; j < g->nr_gemm; j++)
				if (g->gemm[j].dtype == d)
					x = &g->gemm[j];
			if (x && x->supported && !x->error)
				strbuf_addf(out, " %6.0f", x->tflops);
			else
				strbuf_addf(out, " %6s", "-");
		}
		if (g->has_hbm && !g->hbm_error)
			strbuf_addf(out, "  %6.0f %6.0f %6.0f", g->hbm_read, g->hbm_write, g->hbm_copy);
		else
			strbuf_addf(out, "  %6s %6s %6s", "-", "-", "-");
		char mt[32] = "-";
		if (g->has_memtest)
			snprintf(mt, sizeof(mt), "%.1f GiB %s", (double)g->mt_bytes / (1u << 30),
				 g->mt_miscompares ? "ERRORS" : g->mt_error ? "failed" : "ok");
		strbuf_addf(out, "  %-16s", mt);
		if (g->has_telemetry && g->temp_max == g->temp_max)
			strbuf_addf(out, " %4.0fC %5.0fW", g->temp_max, g->power_max);
		strbuf_addch(out, '\n');
	}
}

static int cmd_stress_gpu(int argc, char **argv)
{
	struct stress_args a;
	struct strbuf err = STRBUF_INIT, desc = STRBUF_INIT, why = STRBUF_INIT, fig = STRBUF_INIT;
	struct stress_limits lim;
	struct gs_run run;
	struct gs_end end;
	struct report rep;
	int ret = EXIT_USAGE;

	memset(&a, 0, sizeof(a));
	a.duration = 60;
	a.out.color = -1;
	gs_run_init(&run);
	int pr = stress_parse(argc, argv, &a);
	if (pr) {
		if (pr > 0) {
			fputs(stress_usage, stdout);
			ret = EXIT_HEALTHY;
		}
		goto out_args;
	}
	if (host_env_setup(&a.he, (const char *const *)a.sets.items, a.sets.nr, &err) < 0 ||
	    stress_limits_get(&lim, NULL, &a.he.cfg, &err) < 0) {
		fprintf(stderr, "vigil stress: %s\n", err.buf);
		goto out_env;
	}
	if (a.determinism) {
		struct stress_det_opts d = { a.duration, a.timeout, a.repeats, a.gpus, a.inject,
					     a.reference };
		ret = stress_det_run(&d, &a.he, &a.out);
		goto out_env;
	}
	char dur[32];
	snprintf(dur, sizeof(dur), "%g", a.duration);
	const char *args[24];
	size_t n = 0;
	args[n++] = "stress";
	args[n++] = "--duration";
	args[n++] = dur;
	if (a.gpus) {
		args[n++] = "--gpus";
		args[n++] = a.gpus;
	}
	if (a.dtypes) {
		args[n++] = "--dtypes";
		args[n++] = a.dtypes;
	}
	if (a.no_gemm)
		args[n++] = "--no-gemm";
	if (a.no_hbm)
		args[n++] = "--no-hbm";
	if (a.no_memtest)
		args[n++] = "--no-memtest";
	if (a.inject) {
		args[n++] = "--inject";
		args[n++] = a.inject;
	}
	args[n] = NULL;
	double t_s = a.timeout > 0 ? a.timeout : a.duration * 1.25 + 120;
	report_init(&rep, a.he.host, wall_seconds());
	uint64_t t0 = mono_ms();
	int fd = active_progress_fd(!a.out.json);
	engine_stress(args, (unsigned)(t_s * 1000), fd, &run, &end, &desc, &why);
	stress_driver_fix(&a.he.fs, &run.error_code, &run.error);
	active_progress_close(fd);
	rep.duration_ms = mono_ms() - t0;
	if (stress_limits_get(&lim, engine_model(&run), &a.he.cfg, &err) < 0) {
		fprintf(stderr, "vigil stress: %s\n", err.buf);
		report_release(&rep);
		goto out_env;
	}
	gpu_stress_evaluate(&run, &end, &lim, &rep);
	stress_figures(&run, &fig);
	ret = active_finish(&rep, "vigil stress gpu", fig.buf, &a.out);
out_env:
	host_env_release(&a.he);
out_args:
	gs_run_release(&run);
	strlist_release(&a.sets);
	strbuf_release(&err);
	strbuf_release(&desc);
	strbuf_release(&why);
	strbuf_release(&fig);
	return ret;
}

int cmd_stress(int argc, char **argv)
{
	if (argc < 2 || is_help_arg(argv[1])) {
		if (argc < 2) {
			usage_error("stress", "which test? (gpu, storage)");
			return EXIT_USAGE;
		}
		fputs(stress_usage, stdout);
		return EXIT_HEALTHY;
	}
	if (!strcmp(argv[1], "gpu"))
		return cmd_stress_gpu(argc - 1, argv + 1);
	if (!strcmp(argv[1], "storage"))
		return cmd_stress_storage(argc - 1, argv + 1);
	usage_error("stress", "no test '%s' (there are: gpu, storage)", argv[1]);
	return EXIT_USAGE;
}

/* ---- vigil check --deep ---- */

void active_deep(const struct config *cfg, double seconds, bool progress, struct report *rep)
{
	int fd = active_progress_fd(progress);
	engine_deep(cfg, seconds, fd, rep);
	active_progress_close(fd);
}
