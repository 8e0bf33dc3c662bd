/*
 * stress_storage.c: 'vigil stress storage', the checkpoint workload on a directory (the storage
 * stage of 'vigil qualify', usable alone). src/stress/ckpt.c runs it and ckpt_eval.c
 * judges it; this file parses the options, refuses what must be refused, prints, and removes
 * the test's files on SIGINT, SIGTERM and SIGHUP as well.
 */
#include "cmd.h"
#include "active.h"
#include "common.h"
#include "../lib/fileio.h"
#include "../lib/run.h"
#include "../lib/strlist.h"
#include "../stress/ckpt.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

static const char storage_usage[] =
	"usage: vigil stress storage --dir DIR [options]\n"
	"\n"
	"The checkpoint workload on DIR: each writer (a process of its own) writes its shard\n"
	"files sequentially in blocks, fsyncs each, renames it into place and syncs the\n"
	"directory; then every shard is read back (O_DIRECT where the file system takes it, else\n"
	"after dropping its pages from the page cache) and every byte verified; then a metadata\n"
	"burst creates, stats, renames and unlinks many small files. Figures: write and read\n"
	"MiB/s, fsync latency p50/p99/max, metadata operations/s. It fails on data read back\n"
	"wrong, a failed call, or an operation slower than --stall-ms. Everything is written\n"
	"under a fresh subdirectory of DIR and removed at the end; a DIR that is a link, not a\n"
	"directory, not writable or without room for the test is refused before writing.\n"
	"\n"
	"  --dir DIR           where to write (required); the file system under test\n"
	"  --size BYTES        bytes in all (default 256M; K, M, G, T suffixes are powers of 2)\n"
	"  --file-size BYTES   bytes per shard file (default 64M)\n"
	"  --writers N         writer processes (default 4)\n"
	"  --block BYTES       bytes per write and read, a multiple of 4K (default 1M)\n"
	"  --duration SECONDS  deadline for the whole test (default 120); past it: unknown\n"
	"  --stall-ms MS       one operation slower than this is a stall (default 10000)\n"
	"  --meta-files N      small files in the metadata burst (default 1000; 0: none)\n"
	"  --buffered          never O_DIRECT (the page cache is dropped for the read-back)\n"
	"  --verify MODE       how the read-back is checked: auto (default: overlapped where\n"
	"                      each writer and its checker have a CPU, else inline), inline,\n"
	"                      overlapped, or none (bandwidth only: the data is not judged,\n"
	"                      so the verdict is unknown)\n"
	"  --inject FAULT      plant one fault, stall or corrupt (checks the checkers)\n"
	"  --config FILE       configuration file (default /etc/vigil/vigil.conf)\n"
	"  -c, --set SEC.KEY=VALUE  one configuration setting (repeatable)\n"
	"  --host NAME         host name for the report\n"
	"  --host-from-slurmd  the host name is SLURMD_NODENAME (one srun step on many nodes)\n"
	"  --json              print one JSON object (vigil check's, plus \"figures\")\n"
	"  --reason            print only the one-line reason (at most 80 characters)\n"
	"  -v, --verbose       list every finding, not only problems\n"
	"  --color WHEN        auto (default: on a terminal), always or never\n"
	"\n"
	"Size it for a real shared file system with --size at least a few times the servers'\n"
	"cache and --writers as a checkpointing node has ranks (docs/STRESS.md).\n"
	"\n"
	"Exit status:\n"
	"  0  healthy: every byte verified, no error, no stall\n"
	"  1  unhealthy: data read back wrong, a call failed, or a stall\n"
	"  2  usage error\n"
	"  3  could not tell: DIR refused (missing, a link, not a directory, not writable, too\n"
	"     little free space) or the test did not finish within --duration\n";

enum {
	SSOPT_DIR = 400,
	SSOPT_SIZE,
	SSOPT_FILE_SIZE,
	SSOPT_WRITERS,
	SSOPT_BLOCK,
	SSOPT_DURATION,
	SSOPT_STALL,
	SSOPT_META,
	SSOPT_BUFFERED,
	SSOPT_INJECT,
	SSOPT_VERIFY
};

static const struct option ckpt_opts[] = {
	{ "dir", required_argument, NULL, SSOPT_DIR },
	{ "size", required_argument, NULL, SSOPT_SIZE },
	{ "file-size", required_argument, NULL, SSOPT_FILE_SIZE },
	{ "writers", required_argument, NULL, SSOPT_WRITERS },
	{ "block", required_argument, NULL, SSOPT_BLOCK },
	{ "duration", required_argument, NULL, SSOPT_DURATION },
	{ "stall-ms", required_argument, NULL, SSOPT_STALL },
	{ "meta-files", required_argument, NULL, SSOPT_META },
	{ "buffered", no_argument, NULL, SSOPT_BUFFERED },
	{ "inject", required_argument, NULL, SSOPT_INJECT },
	{ "verify", required_argument, NULL, SSOPT_VERIFY },
	ACTIVE_OUT_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

struct ckpt_args {
	struct host_env he;
	struct strlist sets;
	struct active_out out;
	const char *dir;
	struct ckpt_opts o;
};

/* 64M, 1G, 4096, 1.5G, 1MiB: bytes */
static bool parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0 || !(v == v))
		return false;
	double mul = 1;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1048576.0;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1073741824.0;
		end++;
		break;
	case 't':
	case 'T':
		mul = 1099511627776.0;
		end++;
		break;
	case 'p':
	case 'P':
		mul = 1125899906842624.0;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' && end[1] == 'B' && mul > 1)
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || v * mul >= 1.8e19)
		return false;
	*out = (uint64_t)(v * mul);
	return true;
}

static int bytes_opt(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	if (!parse_bytes(arg, &v) || v < min || v > max) {
		usage_error("stress storage",
			    "%s wants bytes (such as 64M or 1G) from %llu to %llu, "
			    "not '%s'",
			    opt, (unsigned long long)min, (unsigned long long)max, arg);
		return -1;
	}
	*out = v;
	return 0;
}

static int count_opt(const char *opt, const char *arg, uint64_t min, uint64_t max, unsigned *out)
{
	uint64_t v;
	if (!parse_u64(arg, &v) || v < min || v > max) {
		usage_error("stress storage", "%s wants a whole number from %llu to %llu, not '%s'",
			    opt, (unsigned long long)min, (unsigned long long)max, arg);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static int ckpt_parse(int argc, char **argv, struct ckpt_args *a)
{
	int c;
	uint64_t v;
	double d;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:vh", ckpt_opts, NULL)) != -1) {
		int r = active_out_option("stress storage", c, optarg, &a->out);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		switch (c) {
		case SSOPT_DIR:
			a->dir = optarg;
			break;
		case SSOPT_SIZE:
			if (bytes_opt("--size", optarg, 4096, 1ull << 50, &a->o.size) < 0)
				return -1;
			break;
		case SSOPT_FILE_SIZE:
			if (bytes_opt("--file-size", optarg, 4096, 1ull << 44, &a->o.file_size) < 0)
				return -1;
			break;
		case SSOPT_BLOCK:
			if (bytes_opt("--block", optarg, 4096, 64u << 20, &v) < 0)
				return -1;
			if (v % 4096) {
				usage_error("stress storage",
					    "--block wants a multiple of 4096 "
					    "(O_DIRECT needs aligned blocks), not '%s'",
					    optarg);
				return -1;
			}
			a->o.block = (uint32_t)v;
			break;
		case SSOPT_WRITERS:
			if (count_opt("--writers", optarg, 1, 256, &a->o.writers) < 0)
				return -1;
			break;
		case SSOPT_META:
			if (count_opt("--meta-files", optarg, 0, 1000000, &a->o.meta_files) < 0)
				return -1;
			break;
		case SSOPT_DURATION:
			if (opt_seconds("stress storage", "--duration", optarg, 1, 86400, &d) < 0)
				return -1;
			a->o.deadline_ms = (unsigned)(d * 1000);
			break;
		case SSOPT_STALL:
			if (count_opt("--stall-ms", optarg, 1, 3600000, &a->o.stall_ms) < 0)
				return -1;
			break;
		case SSOPT_BUFFERED:
			a->o.buffered = true;
			break;
		case SSOPT_INJECT:
			if (!strcmp(optarg, "stall"))
				a->o.inject = CKPT_INJECT_STALL;
			else if (!strcmp(optarg, "corrupt"))
				a->o.inject = CKPT_INJECT_CORRUPT;
			else {
				usage_error("stress storage", "--inject wants stall or corrupt");
				return -1;
			}
			break;
		case SSOPT_VERIFY:
			if (!ckpt_verify_parse(optarg, &a->o.verify)) {
				usage_error("stress storage",
					    "--verify wants auto, inline, overlapped or none, not '%s'",
					    optarg);
				return -1;
			}
			break;
		case AOPT_CONFIG:
			a->he.config_path = optarg;
			break;
		case AOPT_HOST:
		case AOPT_HOST_SLURMD:
			if (active_host_option("stress storage", c, optarg, &a->he.host) < 0)
				return -1;
			break;
		case 'c':
			strlist_add(&a->sets, optarg);
			break;
		case 'h':
			return 1;
		case ':':
			usage_error("stress storage", "option '%s' needs a value",
				    argv[optind - 1]);
			return -1;
		default:
			usage_error("stress storage", "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		usage_error("stress storage", "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!a->dir || !*a->dir) {
		usage_error("stress storage", "--dir DIR is required (the file system to test)");
		return -1;
	}
	if (a->out.json && a->out.reason) {
		usage_error("stress storage", "--json and --reason cannot be used together");
		return -1;
	}
	if (a->o.file_size % a->o.block || a->o.size % a->o.block) {
		usage_error("stress storage",
			    "--size and --file-size want multiples of --block "
			    "(%u bytes)",
			    a->o.block);
		return -1;
	}
	if ((uint64_t)a->o.writers * a->o.block * 3 > (4ull << 30)) {
		/* each writer holds the pattern, a block and the verifier's second block */
		usage_error("stress storage", "--writers x --block x 3 buffers is over 4 GiB of "
					      "memory: fewer writers or a smaller block");
		return -1;
	}
	if (a->o.size / a->o.file_size > 1000000) {
		usage_error("stress storage", "--size / --file-size makes over a million files");
		return -1;
	}
	return 0;
}

/* ---- signals: the workers' group killed, the test's files removed, then exit ---- */

static void say(const char *s)
{
	if (write(2, s, strlen(s)) < 0)
		return;
}

static void on_stop(int sig)
{
	run_kill_all(500);
	ckpt_sweep_signal();
	fileio_remove_temporaries();
	say(sig == SIGTERM  ? "vigil stress storage: interrupted by SIGTERM (its files removed)\n"
	    : sig == SIGINT ? "vigil stress storage: interrupted by SIGINT (its files removed)\n"
			    : "vigil stress storage: interrupted by SIGHUP (its files removed)\n");
	_exit(128 + sig);
}

static void signals_setup(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGHUP);
	const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		struct sigaction old;
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

/* ---- output ---- */

static void figures_text(const struct ckpt_result *r, const char *dir, struct strbuf *out)
{
	strbuf_addf(out,
		    "%s (%s, %s): %.0f MiB in %u files of %.0f MiB, %u writers, %u KiB "
		    "blocks\n",
		    dir, r->fs_type, r->direct ? "O_DIRECT" : "buffered",
		    (double)r->bytes / 1048576, r->files, (double)r->file_size / 1048576,
		    r->writers, r->block / 1024);
	if (!r->direct && r->direct_note[0])
		strbuf_addf(out, "  %s\n", r->direct_note);
	if (r->written)
		strbuf_addf(out,
			    "write  %8.0f MiB/s  fsync p50 %.1f ms, p99 %.1f ms, max %.1f ms "
			    "(%llu fsyncs)\n",
			    r->write_mib_s, r->fsync_p50_ms, r->fsync_p99_ms, r->fsync_max_ms,
			    (unsigned long long)r->fsyncs);
	if (r->read && r->verify == CKPT_VERIFY_NONE)
		strbuf_addf(out, "read   %8.0f MiB/s  not checked (--verify none)\n",
			    r->read_mib_s);
	else if (r->read)
		strbuf_addf(out, "read   %8.0f MiB/s  %.0f MiB verified (%s)\n", r->read_mib_s,
			    (double)r->verified / 1048576, ckpt_verify_name(r->verify));
	if (r->meta_ops)
		strbuf_addf(out, "meta   %8.0f ops/s  (create, stat, rename, unlink)\n",
			    r->meta_ops_s);
	strbuf_addch(out, '\n');
}

static void figures_json(struct json_writer *w, void *arg)
{
	const struct ckpt_result *r = arg;
	json_key(w, "figures");
	json_open_object(w);
	ckpt_figures_json(r, w);
	json_close_object(w);
}

int cmd_stress_storage(int argc, char **argv)
{
	struct ckpt_args a;
	struct strbuf err = STRBUF_INIT, fig = STRBUF_INIT;
	struct ckpt_result res;
	struct ckpt_dir d;
	struct report rep;
	int ret = EXIT_USAGE;

	memset(&a, 0, sizeof(a));
	a.out.color = -1;
	a.o.size = 256u << 20;
	a.o.file_size = 64u << 20;
	a.o.writers = 4;
	a.o.block = 1u << 20;
	a.o.deadline_ms = 120000;
	a.o.stall_ms = 10000;
	a.o.meta_files = 1000;
	ckpt_result_init(&res);
	int pr = ckpt_parse(argc, argv, &a);
	if (pr) {
		if (pr > 0) {
			fputs(storage_usage, stdout);
			ret = EXIT_HEALTHY;
		}
		goto out_args;
	}
	if (host_env_setup(&a.he, (const char *const *)a.sets.items, a.sets.nr, &err) < 0) {
		fprintf(stderr, "vigil stress storage: %s\n", err.buf);
		goto out_env;
	}
	signals_setup();
	report_init(&rep, a.he.host, wall_seconds());
	uint64_t t0 = mono_ms();
	enum ckpt_refusal why = ckpt_open(&d, a.dir, &a.o, &err);
	if (why != CKPT_OK) {
		struct strbuf clean = STRBUF_INIT;
		strbuf_add_clean(&clean, err.buf);
		fprintf(stderr, "vigil stress storage: %s\n", clean.buf);
		strbuf_release(&clean);
		ckpt_refused(why, err.buf, &rep);
	} else {
		ckpt_run(&d, &a.o, &res);
		strbuf_reset(&err);
		if (ckpt_close(&d, &err) < 0) {
			struct strbuf clean = STRBUF_INIT;
			strbuf_add_clean(&clean, err.buf);
			fprintf(stderr,
				"vigil stress storage: not everything it wrote could be "
				"removed: %s\n",
				clean.buf);
			strbuf_release(&clean);
		}
		ckpt_evaluate(&res, &a.o, &rep);
		figures_text(&res, a.dir, &fig);
	}
	rep.duration_ms = mono_ms() - t0;
	ret = active_finish_extra(&rep, "vigil stress storage", fig.buf, &a.out, figures_json,
				  &res);
out_env:
	host_env_release(&a.he);
out_args:
	ckpt_result_release(&res);
	strlist_release(&a.sets);
	strbuf_release(&err);
	strbuf_release(&fig);
	return ret;
}
