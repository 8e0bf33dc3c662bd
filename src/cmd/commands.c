/*
 * commands.c: the command table (like git.c's) and the dispatch through it. A command is one row
 * here and one file under src/cmd/; its subcommands are named here too, so that a misspelt one
 * is refused with a suggestion before the command's own parser sees it. The table lives in the
 * library, not in vigil.c, so that the tests can walk it.
 */
#include "cmd.h"
#include "completion.h"
#include "../lib/config.h"
#include "../lib/fileio.h"
#include "../lib/run.h"

#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

const struct cmd_def cmd_table[] = {
	{ "check", cmd_check, "is this host fit to train? one verdict from the passive checks",
	  CMD_TAKES_ROOT | CMD_TAKES_CONFIG | CMD_NEEDS_ROOT, NULL },
	{ "gather", cmd_gather, "copy what vigil reads from this host into a fixture directory",
	  CMD_TAKES_ROOT | CMD_NEEDS_ROOT, NULL },
	{ "agent", cmd_agent, "per-host daemon: checks on an interval, /metrics, /health, cache",
	  CMD_TAKES_ROOT | CMD_TAKES_CONFIG | CMD_NEEDS_ROOT, NULL },
	{ "stress", cmd_stress, "active tests: verified GEMM, HBM, memory; checkpoint storage",
	  CMD_TAKES_CONFIG | CMD_TAKES_GPUS, (const char *const[]){ "gpu", "storage", NULL } },
	{ "net", cmd_net, "active NVLink/NCCL tests: collectives, GPU pair bandwidth",
	  CMD_TAKES_CONFIG | CMD_TAKES_GPUS, (const char *const[]){ "nccl", "pairs", "ib", NULL } },
	{ "run", cmd_run, "keep a training run alive in a Slurm allocation: detect, exclude, resume",
	  CMD_TAKES_CONFIG, NULL },
	{ "fleet", cmd_fleet, "vigil check on every node of a Slurm cluster through srun",
	  CMD_TAKES_CONFIG, (const char *const[]){ "check", "model", "lemons", NULL } },
	{ "stacks", cmd_stacks, "stacks of a vigil run attempt's ranks on this host (hang evidence)",
	  CMD_NEEDS_ROOT, NULL },
	{ "qualify", cmd_qualify, "judge a fresh allocation: which nodes to keep, a scorecard to compare",
	  CMD_TAKES_CONFIG, NULL },
	{ "sim", cmd_sim, "what failures cost a run of N GPUs: vigil run's supervisor, simulated",
	  0, NULL },
	{ "report", cmd_report, "the timeline of a vigil run: attempts, faults, ETTR", 0, NULL },
	{ "diagnose", cmd_diagnose, "why is a run slow or dead: step-time patterns, stragglers, logs",
	  0, (const char *const[]){ "steps", "stragglers", "logs", "hang", NULL } },
	{ "fabric", cmd_fabric, "InfiniBand fabric: UFM events, link survey, burn-in of every link",
	  0, (const char *const[]){ "ufm", "links", "burnin", NULL } },
	{ "list", cmd_list, "list the checks and what each one looks at", 0, NULL },
	{ "help", cmd_help, "show help for vigil or a command", 0, NULL },
	{ "version", cmd_version, "print vigil's version", 0, NULL },
	{ "completion", cmd_completion, "print the shell completion script for bash, zsh or fish",
	  0, (const char *const[]){ "bash", "zsh", "fish", NULL } },
};
const size_t cmd_table_nr = ARRAY_SIZE(cmd_table);

void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "vigil %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'vigil %s --help'.\n", cmd);
}

bool is_help_arg(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h");
}

int opt_seconds(const char *cmd, const char *opt, const char *arg, double min, double max,
		double *out)
{
	const struct config_key k = { opt, CONFIG_SECONDS, min, max, 0, NULL, cmd, "" };
	if (config_key_check(&k, NULL, arg, NULL) == 0 && parse_double(arg, out))
		return 0;
	struct strbuf want = STRBUF_INIT, got = STRBUF_INIT;
	config_key_describe(&k, &want);
	strbuf_add_excerpt(&got, arg, 64);
	usage_error(cmd, "%s wants %s, not '%s'", opt, want.buf, got.buf);
	strbuf_release(&want);
	strbuf_release(&got);
	return -1;
}

const struct cmd_def *cmd_find(const char *name)
{
	for (size_t i = 0; i < cmd_table_nr; i++)
		if (!strcmp(cmd_table[i].name, name))
			return &cmd_table[i];
	return NULL;
}

const char *cmd_suggest(const char *want, const char *const *names, size_t nr)
{
	const char *best = NULL;
	size_t best_d = strlen(want) / 3 + 1;
	for (size_t i = 0; i < nr; i++) {
		size_t d = config_edit_distance(want, names[i]);
		if (d <= best_d && (!best || d < best_d)) {
			best = names[i];
			best_d = d;
		}
	}
	return best;
}

static size_t count(const char *const *l)
{
	size_t n = 0;
	while (l && l[n])
		n++;
	return n;
}

static void say_subcommands(const struct cmd_def *c)
{
	for (size_t i = 0; c->subcommands[i]; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", c->subcommands[i]);
}

/* The command running, for the handler's message (a row of cmd_table: never freed). */
static const char *volatile running_cmd = "";

static void say(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(2, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/*
 * TERM, INT or HUP (Ctrl-C reaches the whole foreground group, but every child of vigil has a
 * group of its own): kill every child's group and their orphans, reap them, remove the
 * temporary files being written, say so, exit 128 + the signal. Only async-signal-safe calls.
 * A command that handles these itself (agent, run) installs its own handler over this one.
 */
static void on_stop_signal(int sig)
{
	run_kill_all(500);
	fileio_remove_temporaries();
	say("vigil ");
	say(running_cmd);
	say(sig == SIGTERM ? ": interrupted by SIGTERM\n"
	    : sig == SIGINT ? ": interrupted by SIGINT\n"
			    : ": interrupted by SIGHUP\n");
	_exit(128 + sig);
}

void cmd_signals_setup(const char *name)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	/* a second signal while the first is handled waits, and the process is gone by then */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGHUP);
	running_cmd = name;
	/* one already ignored (nohup, a parent's choice) stays ignored */
	const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		struct sigaction old;
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
	/* past RLIMIT_FSIZE a write fails with EFBIG and says so, instead of killing vigil with
	 * no verdict and a temporary file left behind */
	signal(SIGXFSZ, SIG_IGN);
	/* a closed stdout is a write error (EPIPE) the command reports, not a silent death */
	signal(SIGPIPE, SIG_IGN);
}

int cmd_dispatch(int argc, char **argv)
{
	const char *name = argv[0];
	const struct cmd_def *c = cmd_find(name);
	if (c == NULL && !strcmp(name, "config")) {
		/* a help topic, not a command: say where configuration is explained */
		fprintf(stderr, "vigil: 'config' is not a command: settings come from "
				"/etc/vigil/vigil.conf, --config FILE or -c SECTION.KEY=VALUE\n"
				"See 'vigil help config' for every key.\n");
		return EXIT_USAGE;
	}
	if (!c) {
		const char *names[32];
		size_t n = 0;
		for (size_t i = 0; i < cmd_table_nr && n < ARRAY_SIZE(names); i++)
			names[n++] = cmd_table[i].name;
		const char *near = cmd_suggest(name, names, n);
		fprintf(stderr, "vigil: '%s' is not a vigil command", name);
		if (near)
			fprintf(stderr, "; did you mean '%s'?", near);
		fprintf(stderr, "\nSee 'vigil help'.\n");
		return EXIT_USAGE;
	}
	/* a word after a command with subcommands must be one of them (an option is the
	 * command's own business: --help, or its own complaint) */
	if (c->subcommands && argc >= 2 && argv[1][0] != '-') {
		size_t n = count(c->subcommands);
		bool known = false;
		for (size_t i = 0; i < n; i++)
			known |= !strcmp(c->subcommands[i], argv[1]);
		if (!known) {
			const char *near = cmd_suggest(argv[1], c->subcommands, n);
			fprintf(stderr, "vigil %s: '%s' is not a subcommand of 'vigil %s'", name,
				argv[1], name);
			if (near)
				fprintf(stderr, "; did you mean '%s'?", near);
			fprintf(stderr, " (there %s: ", n > 1 ? "are" : "is");
			say_subcommands(c);
			fprintf(stderr, ")\nTry 'vigil %s --help'.\n", name);
			return EXIT_USAGE;
		}
	}
	cmd_signals_setup(c->name);
	return c->fn(argc, argv);
}
