/*
 * fleet.c: 'vigil fleet check', one view of a Slurm cluster: options, configuration, output.
 * The engine (one srun step over the nodes, src/slurm/fleet_step.c, or srun per node in one poll
 * loop; the node policy, the table and JSON) is src/slurm/fleet.c.
 */
#include "cmd.h"
#include "common.h"
#include "config_keys.h"
#include "fleet_model.h"
#include "../lib/strlist.h"
#include "../slurm/fleet.h"

#include <getopt.h>
#include <unistd.h>

static const char fleet_usage[] =
	"usage: vigil fleet check [--partition P | --nodes LIST] [--json] [--drain] [options]\n"
	"                         [-- ARGS for the remote 'vigil check']\n"
	"\n"
	"Run 'vigil check --json' on every node through srun (one step, one task per node, with a\n"
	"deadline) and print one table: node, Slurm state, verdict, time, reason. A node that does\n"
	"not answer in time, or that Slurm cannot run a task on (drained, down, not responding), is\n"
	"'unreachable', never healthy.\n"
	"\n"
	"  --partition P       only the nodes of partition P\n"
	"  --nodes LIST        only these nodes (a Slurm hostlist: n[1-4],gpu7)\n"
	"  --json              one JSON object for the fleet\n"
	"  --drain             apply the drain/resume policy of 'vigil check --slurm' to each node\n"
	"                      that answered (vigil drains only undrained nodes and resumes only its\n"
	"                      own drains; a drained node cannot run srun, so resuming is done by\n"
	"                      the node's own HealthCheckProgram)\n"
	"  --timeout S         deadline of the step, or of each node with fleet.one-step=false\n"
	"                      (fleet.timeout, default 60)\n"
	"  --parallel N        nodes checked at once with fleet.one-step=false (fleet.parallel,\n"
	"                      default 32)\n"
	"  --config FILE       configuration file      -c, --set SEC.KEY=VALUE  one setting\n"
	"\n"
	"Configuration: fleet.command (the vigil to run on the nodes, default this one's path),\n"
	"fleet.one-step (default true; false: one srun per node, --parallel at once),\n"
	"fleet.srun-arg (repeatable: extra srun arguments, e.g. --reservation=ops), slurm.srun,\n"
	"slurm.scontrol, slurm.timeout.\n"
	"\n"
	"Exit status, for the fleet:\n"
	"  0  every node healthy\n"
	"  1  at least one node unhealthy\n"
	"  2  usage error\n"
	"  3  could not tell: a node unknown or unreachable, none unhealthy\n"
	"\n"
	"Also 'vigil fleet model' and 'vigil fleet lemons': the fleet's own failure model for\n"
	"vigil sim and the nodes to pull before a big run (see their --help).\n";

enum { OPT_PARTITION = 256, OPT_NODES, OPT_JSON, OPT_DRAIN, OPT_TIMEOUT, OPT_PARALLEL,
       OPT_CONFIG };

static const struct option fleet_opts[] = {
	{ "partition", required_argument, NULL, OPT_PARTITION },
	{ "nodes", required_argument, NULL, OPT_NODES },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "drain", no_argument, NULL, OPT_DRAIN },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "parallel", required_argument, NULL, OPT_PARALLEL },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "set", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int fleet_check(int argc, char **argv)
{
	const char *partition = NULL, *nodes = NULL, *config_path = NULL;
	const char *timeout_opt = NULL, *parallel_opt = NULL;
	bool json = false, drain = false;
	struct strlist sets = STRLIST_INIT, base = STRLIST_INIT, remote = STRLIST_INIT;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, tmp = STRBUF_INIT;
	struct slurm_nodes list = { 0 };
	struct fleet f = { 0 };
	struct config cfg;
	int ret = EXIT_USAGE, c;
	char self[4096];
	config_init(&cfg, "");

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:c:h", fleet_opts, NULL)) != -1) {
		switch (c) {
		case OPT_PARTITION: partition = optarg; break;
		case OPT_NODES: nodes = optarg; break;
		case OPT_JSON: json = true; break;
		case OPT_DRAIN: drain = true; break;
		case OPT_TIMEOUT: timeout_opt = optarg; break;
		case OPT_PARALLEL: parallel_opt = optarg; break;
		case OPT_CONFIG: config_path = optarg; break;
		case 'c': strlist_add(&sets, optarg); break;
		case 'h':
			fputs(fleet_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		case ':':
			usage_error("fleet", "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			usage_error("fleet", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (partition && nodes) {
		usage_error("fleet", "--partition and --nodes cannot be used together");
		goto out;
	}
	/* configuration: the file of this (login) host, then -c */
	if (!config_path)
		config_path = getenv("VIGIL_CONFIG");
	if (config_load_file(&cfg, config_path && *config_path ? config_path
							      : "/etc/vigil/vigil.conf",
			     !(config_path && *config_path), &err) < 0) {
		fprintf(stderr, "vigil fleet: %s\n", err.buf);
		goto out;
	}
	for (size_t i = 0; i < sets.nr; i++)
		if (config_set(&cfg, sets.items[i], &err) < 0) {
			fprintf(stderr, "vigil fleet: %s\n", err.buf);
			goto out;
		}
	if (config_keys_validate(&cfg, &err) < 0) {
		fprintf(stderr, "vigil fleet: %s\n", err.buf);
		goto out;
	}
	double timeout_s;
	uint64_t parallel;
	bool one_step;
	if (config_get_bool(&cfg, "fleet", "one-step", true, &one_step, &err) < 0) {
		fprintf(stderr, "vigil fleet: %s\n", err.buf);
		goto out;
	}
	if (timeout_opt) {
		if (opt_seconds("fleet", "--timeout", timeout_opt, 1, 3600, &timeout_s) < 0)
			goto out;
	} else if (config_get_double(&cfg, "fleet", "timeout", 60, &timeout_s, &err) < 0) {
		fprintf(stderr, "vigil fleet: %s\n", err.buf);
		goto out;
	}
	if (parallel_opt) {
		if (!parse_u64(parallel_opt, &parallel) || !parallel || parallel > 1024) {
			usage_error("fleet", "--parallel wants a count from 1 to 1024");
			goto out;
		}
	} else if (config_get_u64(&cfg, "fleet", "parallel", 32, &parallel, &err) < 0) {
		fprintf(stderr, "vigil fleet: %s\n", err.buf);
		goto out;
	}
	struct slurm_cmds cmds;
	struct slurm_policy pol;
	if (slurm_cmds_from_config(&cfg, &cmds, &err) < 0 ||
	    slurm_policy_from_config(&cfg, &pol, &err) < 0) {
		fprintf(stderr, "vigil fleet: %s\n", err.buf);
		goto out;
	}

	/* the nodes; when Slurm cannot be asked, --json still says so in JSON */
	if (slurm_nodes_list(&cmds, nodes, &list, &err) < 0) {
		strbuf_addf(&tmp, "cannot list the nodes: %s", err.buf);
		fprintf(stderr, "vigil fleet: %s\n", tmp.buf);
		ret = EXIT_UNKNOWN;
		if (json) {
			fleet_json_error(tmp.buf, ret, &out);
			fwrite(out.buf, 1, out.len, stdout);
		}
		goto out;
	}
	if (!fleet_rows(&f, &list, partition)) {
		strbuf_addf(&tmp, "no nodes%s%s", partition ? " in partition " : "",
			    partition ? partition : "");
		fprintf(stderr, "vigil fleet: %s\n", tmp.buf);
		if (json) {
			/* whoever parses stdout gets JSON whatever went wrong */
			fleet_json_error(tmp.buf, ret, &out);
			fwrite(out.buf, 1, out.len, stdout);
		}
		goto out;
	}

	/* srun ... per node; --immediate so a node Slurm cannot give fails at once, --time so a
	 * job whose srun was killed at the deadline does not linger */
	const char *cmd = config_get(&cfg, "fleet", "command");
	if (!cmd) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[n > 0 ? n : 0] = '\0';
		cmd = n > 0 ? self : "vigil";
	}
	strlist_add(&base, cmds.srun);
	strlist_add(&base, "--nodes=1");
	strlist_add(&base, "--ntasks=1");
	strbuf_addf(&tmp, "--immediate=%u", timeout_s > 20 ? 10u : (unsigned)(timeout_s / 2 + 1));
	strlist_add(&base, tmp.buf);
	strbuf_reset(&tmp);
	strbuf_addf(&tmp, "--time=%u", (unsigned)(timeout_s / 60) + 2);
	strlist_add(&base, tmp.buf);
	strlist_add(&base, "--job-name=vigil-fleet");
	strlist_add(&base, "--quiet");
	const char **extra;
	size_t nr_extra = config_get_all(&cfg, "fleet", "srun-arg", &extra);
	for (size_t i = 0; i < nr_extra; i++)
		strlist_add(&base, extra[i]);
	free(extra);
	strlist_add(&remote, cmd);
	strlist_add(&remote, "check");
	strlist_add(&remote, "--json");
	for (int i = optind; i < argc; i++)
		strlist_add(&remote, argv[i]);
	struct fleet_plan plan = {
		.srun_args = (const char *const *)base.items,
		.nr_srun_args = base.nr,
		.remote = (const char *const *)remote.items,
		.nr_remote = remote.nr,
		.timeout_ms = (unsigned)(timeout_s * 1000),
		.parallel = (unsigned)parallel,
		.one_step = one_step,
	};

	uint64_t t0 = mono_ms();
	fleet_run(&f, &plan);
	if (f.note) {
		struct strbuf clean = STRBUF_INIT;
		strbuf_add_clean(&clean, f.note);
		fprintf(stderr, "vigil fleet: %s\n", clean.buf);
		strbuf_release(&clean);
	}
	if (drain)
		fleet_drain(&f, &cmds, &pol);
	double secs = (double)(mono_ms() - t0) / 1000.0;

	ret = fleet_exit_code(&f, NULL);
	if (json)
		fleet_json(&f, drain, secs, &out);
	else
		fleet_table(&f, drain, secs, &out);
	fwrite(out.buf, 1, out.len, stdout);
	if (fflush(stdout) != 0 && ret == EXIT_HEALTHY)
		ret = EXIT_UNKNOWN;
out:
	fleet_release(&f);
	slurm_nodes_release(&list);
	config_release(&cfg);
	strlist_release(&sets);
	strlist_release(&base);
	strlist_release(&remote);
	strbuf_release(&err);
	strbuf_release(&out);
	strbuf_release(&tmp);
	return ret;
}

int cmd_fleet(int argc, char **argv)
{
	if (argc < 2) {
		usage_error("fleet", "which subcommand? (there are 'check', 'model', 'lemons')");
		return EXIT_USAGE;
	}
	if (is_help_arg(argv[1])) {
		fputs(fleet_usage, stdout);
		return EXIT_HEALTHY;
	}
	if (!strcmp(argv[1], "check"))
		return fleet_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "model"))
		return fleet_model_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "lemons"))
		return fleet_lemons_cmd(argc - 1, argv + 1);
	usage_error("fleet", "unknown subcommand '%s' (there are 'check', 'model', 'lemons')",
		    argv[1]);
	return EXIT_USAGE;
}
