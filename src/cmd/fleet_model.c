/*
 * fleet_model.c: 'vigil fleet model' (the fleet's own failure model, a --failures file for
 * vigil sim) and 'vigil fleet lemons' (the nodes to pull before a big run), from the fleet's
 * recorded history: agent histories, Slurm's node events, vigil run journals. The reading and
 * the statistics are src/fleet/ (docs/LEMONS.md); this file parses options and prints.
 */
#include "cmd.h"
#include "fleet_model.h"
#include "../fleet/fit.h"
#include "../lib/fileio.h"
#include "../lib/run.h"
#include "../lib/strlist.h"

#include <getopt.h>
#include <math.h>

#define FLEET_INPUT_USAGE                                                                         \
	"  --agent-history DIR  an agent's state directory (DIR/history.json), or a folder of\n"  \
	"                       them, one a node, named by the node (DIR/NODE/history.json)\n"    \
	"  --slurm-events FILE  Slurm's node events as 'sacctmgr show event -P\n"                  \
	"                       format=NodeName,TimeStart,TimeEnd,State,Reason' prints them\n"     \
	"                       (times in UTC: run it with TZ=UTC)\n"                              \
	"  --from-slurm         ask sacctmgr for them (TZ=UTC, event=node, from --since)\n"       \
	"  --journal DIR        a vigil run directory (DIR/journal.jsonl), or a folder of them\n"  \
	"                       (each repeatable; at least one input)\n"                           \
	"  --since DATE         only faults from DATE (YYYY-MM-DD[THH:MM[:SS]], UTC); the\n"     \
	"                       window's start (default: the inputs' first record)\n"              \
	"  --until DATE         the window's end (default: the inputs' last record)\n"            \
	"  --gpus-per-node G    GPUs a node (default 8)\n"                                        \
	"  --fleet-nodes N      nodes in the fleet, when more than the inputs name\n"             \
	"  --alpha A            false discovery rate of the lemon list (default 0.05)\n"

static const char model_usage[] =
	"usage: vigil fleet model [--agent-history DIR]... [--slurm-events FILE | --from-slurm]\n"
	"                         [--journal DIR]... [--since DATE] [--until DATE]\n"
	"                         [--gpus-per-node G] [--without-lemons] [-o FILE] [--json]\n"
	"\n"
	"Fit vigil sim's failure model to what this fleet recorded: faults by class (Xid 79 off\n"
	"the bus, HBM/ECC, NVLink, InfiniBand, host crash, hang, slowdown, storage stall,\n"
	"software, silent data corruption) over the GPU-days observed (nodes x days x G),\n"
	"repair_hours the median drain -> resume per class. The model is written as\n"
	"'vigil sim --failures' reads it: to FILE (-o), else to stdout; what was counted, classes\n"
	"never seen and too little data are said on stderr (or stdout with -o), or with --json\n"
	"in one report with the model under \"model\".\n"
	"\n" FLEET_INPUT_USAGE
	"  --without-lemons     leave the lemons (vigil fleet lemons) and their faults out: the\n"
	"                       fleet as it is once they are pulled\n"
	"  -o, --output FILE    write the model to FILE\n"
	"  --json               the report as JSON on stdout (docs/schema/fleet-model.json)\n"
	"\n"
	"Exit status:\n"
	"  0  model written\n"
	"  2  usage error, or an input that cannot be read or is not its format\n"
	"  3  too little data (under 10 node-days): the model is written, marked so\n";

static const char lemons_usage[] =
	"usage: vigil fleet lemons [--agent-history DIR]... [--slurm-events FILE | --from-slurm]\n"
	"                          [--journal DIR]... [--since DATE] [--until DATE] [--top N]\n"
	"                          [--alpha A] [--json]\n"
	"\n"
	"Rank the nodes by how likely they are to fail again: each node's host faults against\n"
	"the fleet's rates over the same days (a Poisson test, all classes and its worst class),\n"
	"the false discovery rate across the fleet (Benjamini-Hochberg) as its confidence, its\n"
	"faults after a repair and in the agent's boots as evidence. The lemons (q-value under\n"
	"--alpha) are the list to pull before a big run.\n"
	"\n" FLEET_INPUT_USAGE
	"  --top N              nodes shown (default 20)\n"
	"  --json               JSON on stdout (docs/schema/fleet-lemons.json)\n"
	"\n"
	"Exit status:\n"
	"  0  no lemon\n"
	"  1  lemons found (listed under 'pull')\n"
	"  2  usage error, or an input that cannot be read or is not its format\n"
	"  3  too little data to tell (under 10 node-days)\n";

enum { OPT_AGENT = 256, OPT_SLURM, OPT_FROM_SLURM, OPT_JOURNAL, OPT_SINCE, OPT_UNTIL, OPT_GPN,
       OPT_FLEET_NODES, OPT_ALPHA, OPT_TOP, OPT_JSON, OPT_WITHOUT };

static const struct option model_opts[] = {
	{ "agent-history", required_argument, NULL, OPT_AGENT },
	{ "slurm-events", required_argument, NULL, OPT_SLURM },
	{ "from-slurm", no_argument, NULL, OPT_FROM_SLURM },
	{ "journal", required_argument, NULL, OPT_JOURNAL },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "gpus-per-node", required_argument, NULL, OPT_GPN },
	{ "fleet-nodes", required_argument, NULL, OPT_FLEET_NODES },
	{ "alpha", required_argument, NULL, OPT_ALPHA },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ "without-lemons", no_argument, NULL, OPT_WITHOUT },
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 },
};

static const struct option lemons_opts[] = {
	{ "agent-history", required_argument, NULL, OPT_AGENT },
	{ "slurm-events", required_argument, NULL, OPT_SLURM },
	{ "from-slurm", no_argument, NULL, OPT_FROM_SLURM },
	{ "journal", required_argument, NULL, OPT_JOURNAL },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "gpus-per-node", required_argument, NULL, OPT_GPN },
	{ "fleet-nodes", required_argument, NULL, OPT_FLEET_NODES },
	{ "alpha", required_argument, NULL, OPT_ALPHA },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ "top", required_argument, NULL, OPT_TOP },
	{ NULL, 0, NULL, 0 },
};

struct fleet_args {
	struct strlist agent, slurm, journal;
	bool from_slurm, json, without;
	const char *since_s, *output;
	double since, until, alpha;
	uint64_t gpn, fleet_nodes, top;
};

static int parse_args(const char *name, bool model, int argc, char **argv, struct fleet_args *a)
{
	int c;
	a->alpha = 0.05;
	a->gpn = 8;
	a->top = 20;
	optind = 1;
	opterr = 0;
	/* two tables, so that each subcommand refuses the other's options */
	while ((c = model ? getopt_long(argc, argv, "+:o:h", model_opts, NULL)
			  : getopt_long(argc, argv, "+:h", lemons_opts, NULL)) != -1) {
		switch (c) {
		case OPT_AGENT: strlist_add(&a->agent, optarg); break;
		case OPT_SLURM: strlist_add(&a->slurm, optarg); break;
		case OPT_FROM_SLURM: a->from_slurm = true; break;
		case OPT_JOURNAL: strlist_add(&a->journal, optarg); break;
		case OPT_JSON: a->json = true; break;
		case OPT_SINCE:
		case OPT_UNTIL:
			if (!fleet_parse_time(optarg, c == OPT_SINCE ? &a->since : &a->until)) {
				usage_error(name, "%s wants a date YYYY-MM-DD[THH:MM[:SS]] (UTC)",
					    c == OPT_SINCE ? "--since" : "--until");
				return -1;
			}
			if (c == OPT_SINCE)
				a->since_s = optarg;
			break;
		case OPT_GPN:
			if (!parse_u64(optarg, &a->gpn) || !a->gpn || a->gpn > 1024) {
				usage_error(name, "--gpus-per-node wants a count from 1 to 1024");
				return -1;
			}
			break;
		case OPT_FLEET_NODES:
			if (!parse_u64(optarg, &a->fleet_nodes) || a->fleet_nodes > FLEET_NODES_MAX) {
				usage_error(name, "--fleet-nodes wants a count up to %u",
					    (unsigned)FLEET_NODES_MAX);
				return -1;
			}
			break;
		case OPT_ALPHA: {
			char *end;
			a->alpha = strtod(optarg, &end);
			if (*end || !(a->alpha > 0 && a->alpha < 1)) {
				usage_error(name, "--alpha wants a number between 0 and 1");
				return -1;
			}
			break;
		}
		case OPT_TOP:
			if (!parse_u64(optarg, &a->top) || !a->top || a->top > 1000000) {
				usage_error(name, "--top wants a count from 1 to 1000000");
				return -1;
			}
			break;
		case OPT_WITHOUT: a->without = true; break;
		case 'o': a->output = optarg; break;
		case 'h':
			fputs(model ? model_usage : lemons_usage, stdout);
			return 1;
		case ':':
			usage_error(name, "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			usage_error(name, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		usage_error(name, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!a->agent.nr && !a->slurm.nr && !a->journal.nr && !a->from_slurm) {
		usage_error(name, "no input: give --agent-history, --slurm-events, --from-slurm or "
				  "--journal");
		return -1;
	}
	if (a->since && a->until && a->until <= a->since) {
		usage_error(name, "--until is not after --since");
		return -1;
	}
	return 0;
}

/* sacctmgr's node events, asked for in UTC (its times carry no zone). */
static int from_slurm(struct fleet_history *h, const struct fleet_args *a, struct strbuf *err)
{
	struct strbuf start = STRBUF_INIT, how = STRBUF_INIT;
	strbuf_addf(&start, "start=%s", a->since_s ? a->since_s : "1970-01-01T00:00:00");
	const char *argv[] = { "sacctmgr", "show", "event", "-P", "event=node",
			       "format=NodeName,TimeStart,TimeEnd,State,Reason,User", start.buf,
			       NULL };
	/* SLURM_TIME_FORMAT=standard: a site's own format would not parse */
	const char *env[] = { "TZ=UTC", "SLURM_TIME_FORMAT=standard", NULL };
	struct child c;
	int ret = -1;
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 120000;
	c.timeout_name = "sacctmgr's deadline, 120 s";
	c.out_cap = 256u << 20;
	if (child_run(&c, err) < 0)
		goto out;
	if (!c.exited || c.exit_code || c.out.truncated) {
		child_describe(&c, &how);
		strbuf_addstr(&how, ": ");
		strbuf_add_excerpt(&how, c.err.len ? c.err.buf : c.out.buf, 200);
		error_set(err, "sacctmgr show event: %s", c.out.truncated ? "over 256 MiB of output"
									   : how.buf);
		goto out;
	}
	ret = fleet_read_sacct_text(h, "sacctmgr show event", c.out.buf, c.out.len, err);
out:
	child_release(&c);
	strbuf_release(&start);
	strbuf_release(&how);
	return ret;
}

static int read_inputs(struct fleet_history *h, const struct fleet_args *a, struct strbuf *err)
{
	for (size_t i = 0; i < a->slurm.nr; i++)
		if (fleet_read_sacct(h, a->slurm.items[i], err) < 0)
			return -1;
	if (a->from_slurm && from_slurm(h, a, err) < 0)
		return -1;
	for (size_t i = 0; i < a->journal.nr; i++)
		if (fleet_read_journals(h, a->journal.items[i], err) < 0)
			return -1;
	/* Slurm's and the journals' faults first: one fault both saw counts once */
	fleet_history_merge(h);
	for (size_t i = 0; i < a->agent.nr; i++)
		if (fleet_read_agent(h, a->agent.items[i], err) < 0)
			return -1;
	fleet_history_merge(h);
	if (a->since || a->until)
		fleet_history_window(h, a->since, a->until);
	return 0;
}

static void args_release(struct fleet_args *a)
{
	strlist_release(&a->agent);
	strlist_release(&a->slurm);
	strlist_release(&a->journal);
}

static int fit_from(const char *name, struct fleet_args *a, struct fleet_history *h,
		    struct fleet_fit *f, struct strbuf *err)
{
	struct fleet_fit_opts o = { .since = a->since, .until = a->until,
				    .gpus_per_node = (unsigned)a->gpn,
				    .fleet_nodes = (size_t)a->fleet_nodes };
	if (read_inputs(h, a, err) < 0 || fleet_fit(h, &o, f, err) < 0) {
		struct strbuf clean = STRBUF_INIT;
		strbuf_add_clean(&clean, err->buf);
		fprintf(stderr, "vigil %s: %s\n", name, clean.buf);
		strbuf_release(&clean);
		return -1;
	}
	return 0;
}

int fleet_model_cmd(int argc, char **argv)
{
	struct fleet_args a = { .agent = STRLIST_INIT, .slurm = STRLIST_INIT, .journal = STRLIST_INIT };
	struct fleet_history h = { 0 };
	struct fleet_fit f;
	struct fleet_lemons L = { 0 };
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, model = STRBUF_INIT;
	bool *exclude = NULL;
	int ret = EXIT_USAGE, r = parse_args("fleet model", true, argc, argv, &a);
	if (r) {
		ret = r > 0 ? EXIT_HEALTHY : EXIT_USAGE;
		goto out;
	}
	if (fit_from("fleet model", &a, &h, &f, &err) < 0)
		goto out;
	if (a.without) {
		/* the fleet less its lemons: their nodes and faults out of the counts */
		fleet_lemons_find(&h, &f, a.alpha, &L);
		exclude = xcalloc(h.nr_nodes + 1, sizeof(*exclude));
		for (size_t i = 0; i < L.nr; i++)
			if (L.l[i].lemon)
				exclude[L.l[i].node] = true;
		struct fleet_fit_opts o = { .since = a.since, .until = a.until,
					    .gpus_per_node = (unsigned)a.gpn,
					    .fleet_nodes = (size_t)a.fleet_nodes,
					    .exclude = exclude };
		if (fleet_fit(&h, &o, &f, &err) < 0) {
			fprintf(stderr, "vigil fleet model: %s\n", err.buf);
			goto out;
		}
	}
	sim_model_json(&f.model, &model);
	if (a.output && write_file_atomic(a.output, model.buf, model.len, 0644, &err) < 0) {
		fprintf(stderr, "vigil fleet model: %s\n", err.buf);
		ret = EXIT_UNKNOWN;
		goto out;
	}
	if (a.json)
		fleet_fit_json(&f, &h, &out);
	else
		fleet_fit_text(&f, &h, &out);
	if (a.without && !a.json)
		strbuf_addf(&out, "without %zu lemons (vigil fleet lemons)\n", L.nr_lemons);
	if (a.json) {
		fwrite(out.buf, 1, out.len, stdout);
	} else if (a.output) {
		fwrite(out.buf, 1, out.len, stdout);
	} else {
		fwrite(model.buf, 1, model.len, stdout);
		fwrite(out.buf, 1, out.len, stderr);
	}
	ret = f.enough_data ? EXIT_HEALTHY : EXIT_UNKNOWN;
	if (fflush(stdout) != 0)
		ret = EXIT_UNKNOWN;
out:
	free(exclude);
	fleet_lemons_release(&L);
	fleet_history_release(&h);
	args_release(&a);
	strbuf_release(&err);
	strbuf_release(&out);
	strbuf_release(&model);
	return ret;
}

int fleet_lemons_cmd(int argc, char **argv)
{
	struct fleet_args a = { .agent = STRLIST_INIT, .slurm = STRLIST_INIT, .journal = STRLIST_INIT };
	struct fleet_history h = { 0 };
	struct fleet_fit f;
	struct fleet_lemons L = { 0 };
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	int ret = EXIT_USAGE, r = parse_args("fleet lemons", false, argc, argv, &a);
	if (r) {
		ret = r > 0 ? EXIT_HEALTHY : EXIT_USAGE;
		goto out;
	}
	if (fit_from("fleet lemons", &a, &h, &f, &err) < 0)
		goto out;
	fleet_lemons_find(&h, &f, a.alpha, &L);
	if (a.json)
		fleet_lemons_json(&L, &h, &f, (size_t)a.top, &out);
	else
		fleet_lemons_text(&L, &h, &f, (size_t)a.top, &out);
	fwrite(out.buf, 1, out.len, stdout);
	ret = !f.enough_data ? EXIT_UNKNOWN : L.nr_lemons ? EXIT_UNHEALTHY : EXIT_HEALTHY;
	if (fflush(stdout) != 0)
		ret = EXIT_UNKNOWN;
out:
	fleet_lemons_release(&L);
	fleet_history_release(&h);
	args_release(&a);
	strbuf_release(&err);
	strbuf_release(&out);
	return ret;
}
