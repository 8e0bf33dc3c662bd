/*
 * fleet.c: 'vigil fleet check', one view of a Slurm cluster. Every node that Slurm can run a task
 * on gets its own 'srun -w NODE vigil check --json' under a deadline, several at once; a node
 * that does not answer in time, or that Slurm cannot run on (drained, down), is 'unreachable',
 * never healthy. --drain applies the node policy (src/slurm/policy.c) from the login node.
 */
#include "cmd.h"
#include "common.h"
#include "../lib/run.h"
#include "../lib/strlist.h"
#include "../slurm/slurm.h"

#include <getopt.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static const char fleet_usage[] =
	"usage: vigil fleet check [--partition P | --nodes LIST] [--json] [--drain] [options]\n"
	"                         [-- ARGS for the remote 'vigil check']\n"
	"\n"
	"Run 'vigil check --json' on every node through srun (one task per node, each with a\n"
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
	"  --timeout S         deadline of each node (fleet.timeout, default 60)\n"
	"  --parallel N        nodes checked at once (fleet.parallel, default 32)\n"
	"  --config FILE       configuration file      -c, --set SEC.KEY=VALUE  one setting\n"
	"\n"
	"Configuration: fleet.command (the vigil to run on the nodes, default this one's path),\n"
	"fleet.srun-arg (repeatable: extra srun arguments, e.g. --reservation=ops), slurm.srun,\n"
	"slurm.scontrol, slurm.timeout.\n"
	"\n"
	"Exit status, for the fleet:\n"
	"  0  every node healthy\n"
	"  1  at least one node unhealthy\n"
	"  2  usage error\n"
	"  3  could not tell: a node unknown or unreachable, none unhealthy\n";

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

/* Verdicts of a fleet row: a node's own three, and one for a node that gave none. */
enum row_verdict { ROW_HEALTHY, ROW_UNHEALTHY, ROW_UNKNOWN, ROW_UNREACHABLE };
static const char *const row_names[] = { "healthy", "unhealthy", "unknown", "unreachable" };

struct row {
	struct slurm_node node;
	enum row_verdict verdict;
	char *reason;
	char *report_json; /* the node's own report, when it answered */
	uint64_t ms;
	bool run;
	struct slurm_decision decision;
	char *slurm_error;
};

struct fleet {
	struct row *rows;
	size_t nr;
	size_t next; /* next row for a worker, under lock */
	pthread_mutex_t lock;
	const char *const *argv_base; /* srun ... --nodelist=%s is added per row */
	size_t argc_base;
	const char *const *remote;    /* vigil check --json ..., then --host NODE */
	size_t nr_remote;
	unsigned timeout_ms;
};

static void row_set(struct row *r, enum row_verdict v, const char *fmt, ...) PRINTF_LIKE(3, 4);
static void row_set(struct row *r, enum row_verdict v, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < sb.len; i++)
		if ((unsigned char)sb.buf[i] < 0x20)
			sb.buf[i] = ' ';
	r->verdict = v;
	free(r->reason);
	r->reason = strbuf_detach(&sb, NULL);
}

/* What srun said last on stderr: the cause, when it failed. */
static void last_line(struct strbuf *sb, struct strbuf *out)
{
	strbuf_rtrim(sb);
	const char *nl = strrchr(sb->buf, '\n');
	strbuf_addstr(out, nl ? nl + 1 : sb->buf);
}

static void check_one(struct fleet *f, struct row *r)
{
	const char *argv[96];
	struct strbuf nodelist = STRBUF_INIT, why = STRBUF_INIT;
	struct child c;
	size_t n = 0;
	argv[n++] = f->argv_base[0];
	strbuf_addf(&nodelist, "--nodelist=%s", r->node.name);
	argv[n++] = nodelist.buf;
	for (size_t i = 1; i < f->argc_base && n < 80; i++)
		argv[n++] = f->argv_base[i];
	for (size_t i = 0; i < f->nr_remote && n < 92; i++)
		argv[n++] = f->remote[i];
	argv[n++] = "--host";
	argv[n++] = r->node.name;
	argv[n] = NULL;

	child_init(&c);
	c.argv = argv;
	c.timeout_ms = f->timeout_ms;
	c.out_cap = 8u << 20;
	if (child_run(&c, &why) < 0) {
		row_set(r, ROW_UNREACHABLE, "cannot run srun: %s", why.buf);
		goto out;
	}
	r->ms = c.duration_ms;
	if (c.timed_out) {
		row_set(r, ROW_UNREACHABLE, "no answer within %.0f s", f->timeout_ms / 1000.0);
		goto out;
	}
	struct strbuf perr = STRBUF_INIT;
	struct json_value *v = c.out.len ? json_parse(c.out.buf, c.out.len, &perr) : NULL;
	const char *verdict = v ? json_get_string(v, "verdict") : NULL;
	const char *reason = v ? json_get_string(v, "reason") : NULL;
	if (verdict && reason) {
		enum row_verdict rv = !strcmp(verdict, "healthy")     ? ROW_HEALTHY
				      : !strcmp(verdict, "unhealthy") ? ROW_UNHEALTHY
								      : ROW_UNKNOWN;
		row_set(r, rv, "%s", reason);
		strbuf_rtrim(&c.out);
		r->report_json = xstrdup(c.out.buf);
	} else {
		strbuf_reset(&why);
		last_line(&c.err, &why);
		if (!why.len)
			child_describe(&c, &why);
		row_set(r, ROW_UNREACHABLE, "%s", why.buf);
	}
	json_free(v);
	strbuf_release(&perr);
out:
	child_release(&c);
	strbuf_release(&nodelist);
	strbuf_release(&why);
}

static void *worker(void *arg)
{
	struct fleet *f = arg;
	for (;;) {
		pthread_mutex_lock(&f->lock);
		size_t i = f->next;
		while (i < f->nr && !f->rows[i].run)
			i++;
		f->next = i + 1;
		pthread_mutex_unlock(&f->lock);
		if (i >= f->nr)
			return NULL;
		check_one(f, &f->rows[i]);
	}
}

/* States in which Slurm will not start a task on the node. */
#define NOT_RUNNABLE (NODE_DRAIN | NODE_DOWN | NODE_NOT_RESPONDING | NODE_MAINT | NODE_REBOOT | \
		      NODE_POWER | NODE_FUTURE | NODE_FAIL | NODE_UNKNOWN)

static bool in_partition(const struct slurm_node *n, const char *part)
{
	struct strlist l = STRLIST_INIT;
	strlist_split(&l, n->partitions, ",");
	bool yes = strlist_has(&l, part);
	strlist_release(&l);
	return yes;
}

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->node.name, ((const struct row *)b)->node.name);
}

static void print_table(const struct fleet *f, bool drain, double secs, struct strbuf *out)
{
	size_t w = 4;
	size_t counts[4] = { 0 };
	for (size_t i = 0; i < f->nr; i++)
		if (strlen(f->rows[i].node.name) > w)
			w = strlen(f->rows[i].node.name);
	strbuf_addf(out, "%-*s  %-12s %-11s %7s  %s%s\n", (int)w, "NODE", "STATE", "VERDICT", "TIME",
		    drain ? "ACTION   " : "", "REASON");
	for (size_t i = 0; i < f->nr; i++) {
		const struct row *r = &f->rows[i];
		char t[16] = "-";
		if (r->run)
			snprintf(t, sizeof(t), "%.1fs", r->ms / 1000.0);
		strbuf_addf(out, "%-*s  %-12s %-11s %7s  ", (int)w, r->node.name,
			    slurm_state_short(r->node.flags), row_names[r->verdict], t);
		if (drain)
			strbuf_addf(out, "%-9s", r->slurm_error ? "FAILED" :
					    slurm_act_name(r->decision.act));
		strbuf_addf(out, "%s\n", r->reason);
		counts[r->verdict]++;
	}
	strbuf_addf(out, "\n%zu node%s: %zu healthy, %zu unhealthy, %zu unknown, %zu unreachable "
			 "(%.1f s)\n",
		    f->nr, f->nr == 1 ? "" : "s", counts[0], counts[1], counts[2], counts[3], secs);
	for (size_t i = 0; i < f->nr; i++)
		if (f->rows[i].slurm_error)
			strbuf_addf(out, "slurm: %s: %s\n", f->rows[i].node.name,
				    f->rows[i].slurm_error);
}

static void print_json(const struct fleet *f, bool drain, double secs, const char *verdict,
		       int code, struct strbuf *out)
{
	struct json_writer w;
	size_t counts[4] = { 0 };
	for (size_t i = 0; i < f->nr; i++)
		counts[f->rows[i].verdict]++;
	json_writer_init(&w, out, false);
	json_open_object(&w);
	json_key(&w, "verdict");
	json_string(&w, verdict);
	json_key(&w, "exit_code");
	json_int(&w, code);
	json_key(&w, "duration_ms");
	json_uint(&w, (uint64_t)(secs * 1000));
	json_key(&w, "counts");
	json_open_object(&w);
	for (int i = 0; i < 4; i++) {
		json_key(&w, row_names[i]);
		json_uint(&w, counts[i]);
	}
	json_close_object(&w);
	json_key(&w, "nodes");
	json_open_array(&w);
	for (size_t i = 0; i < f->nr; i++) {
		const struct row *r = &f->rows[i];
		json_open_object(&w);
		json_key(&w, "node");
		json_string(&w, r->node.name);
		json_key(&w, "state");
		json_string(&w, r->node.state);
		json_key(&w, "slurm_reason");
		json_string(&w, r->node.reason);
		json_key(&w, "verdict");
		json_string(&w, row_names[r->verdict]);
		json_key(&w, "reason");
		json_string(&w, r->reason);
		json_key(&w, "duration_ms");
		json_uint(&w, r->ms);
		if (drain) {
			json_key(&w, "slurm_action");
			json_string(&w, slurm_act_name(r->decision.act));
			if (r->slurm_error) {
				json_key(&w, "slurm_error");
				json_string(&w, r->slurm_error);
			}
		}
		if (r->report_json) {
			/* the node's own report, parsed and written again so it is one value */
			struct json_value *v = json_parse(r->report_json, strlen(r->report_json),
							  NULL);
			const struct json_value *checks = v ? json_get(v, "checks") : NULL;
			json_key(&w, "checks");
			json_open_array(&w);
			for (size_t j = 0; checks && j < checks->nr; j++) {
				const char *name = json_get_string(checks->items[j], "name");
				const char *st = json_get_string(checks->items[j], "status");
				json_open_object(&w);
				json_key(&w, "name");
				json_string(&w, name ? name : "");
				json_key(&w, "status");
				json_string(&w, st ? st : "");
				json_close_object(&w);
			}
			json_close_array(&w);
			json_free(v);
		}
		json_close_object(&w);
	}
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

/* The policy on one node that answered, with its state read again just before acting. */
static void drain_one(const struct slurm_cmds *cmds, const struct slurm_policy *pol,
		      struct row *r)
{
	struct slurm_node now;
	struct strbuf err = STRBUF_INIT;
	memset(&now, 0, sizeof(now));
	if (r->verdict == ROW_UNREACHABLE)
		return;
	enum verdict v = r->verdict == ROW_HEALTHY     ? VERDICT_HEALTHY
			 : r->verdict == ROW_UNHEALTHY ? VERDICT_UNHEALTHY
						       : VERDICT_UNKNOWN;
	char reason[REASON_MAX + 1];
	strlcpy_v(reason, r->reason, sizeof(reason));
	if (slurm_node_get(cmds, r->node.name, &now, &err) < 0) {
		slurm_decide(v, reason, NULL, pol, &r->decision);
		r->slurm_error = strbuf_detach(&err, NULL);
		return;
	}
	slurm_decide(v, reason, &now, pol, &r->decision);
	if (slurm_apply(cmds, r->node.name, &r->decision, &err) < 0)
		r->slurm_error = strbuf_detach(&err, NULL);
	slurm_node_release(&now);
	strbuf_release(&err);
}

static int fleet_check(int argc, char **argv)
{
	const char *partition = NULL, *nodes = NULL, *config_path = NULL;
	const char *timeout_opt = NULL, *parallel_opt = NULL;
	bool json = false, drain = false;
	struct strlist sets = STRLIST_INIT, base = STRLIST_INIT, remote = STRLIST_INIT;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, tmp = STRBUF_INIT;
	struct slurm_nodes list = { 0 };
	struct fleet f;
	struct config cfg;
	int ret = EXIT_USAGE, c;
	char self[4096];
	memset(&f, 0, sizeof(f));
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
	double timeout_s;
	uint64_t parallel;
	if (timeout_opt) {
		if (!parse_double(timeout_opt, &timeout_s) || timeout_s <= 0 || timeout_s > 3600) {
			usage_error("fleet", "--timeout wants seconds, not '%s'", timeout_opt);
			goto out;
		}
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

	/* the nodes */
	if (slurm_nodes_list(&cmds, nodes, &list, &err) < 0) {
		fprintf(stderr, "vigil fleet: cannot list the nodes: %s\n", err.buf);
		ret = EXIT_UNKNOWN;
		goto out;
	}
	f.rows = xcalloc(list.nr ? list.nr : 1, sizeof(*f.rows));
	for (size_t i = 0; i < list.nr; i++) {
		if (partition && !in_partition(&list.items[i], partition))
			continue;
		struct row *r = &f.rows[f.nr++];
		r->node = list.items[i];
		memset(&list.items[i], 0, sizeof(list.items[i]));
		if (!slurm_node_name_ok(r->node.name))
			row_set(r, ROW_UNREACHABLE, "not checked: node name '%s' refused",
				r->node.name);
		else if (r->node.flags & NOT_RUNNABLE)
			row_set(r, ROW_UNREACHABLE, "not checked (%s)%s%s",
				slurm_state_short(r->node.flags), *r->node.reason ? ": " : "",
				r->node.reason);
		else
			r->run = true;
	}
	if (!f.nr) {
		fprintf(stderr, "vigil fleet: no nodes%s%s\n", partition ? " in partition " : "",
			partition ? partition : "");
		goto out;
	}
	qsort(f.rows, f.nr, sizeof(*f.rows), row_cmp);

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
	f.argv_base = (const char *const *)base.items;
	f.argc_base = base.nr;
	f.remote = (const char *const *)remote.items;
	f.nr_remote = remote.nr;
	f.timeout_ms = (unsigned)(timeout_s * 1000);
	pthread_mutex_init(&f.lock, NULL);

	uint64_t t0 = mono_ms();
	size_t nthreads = 0;
	for (size_t i = 0; i < f.nr; i++)
		nthreads += f.rows[i].run;
	if (nthreads > parallel)
		nthreads = (size_t)parallel;
	pthread_t *th = xcalloc(nthreads ? nthreads : 1, sizeof(*th));
	size_t started = 0;
	for (size_t i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, &f) == 0)
			started++;
	if (!started && nthreads)
		worker(&f); /* no threads to be had: one at a time */
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	pthread_mutex_destroy(&f.lock);

	if (drain)
		for (size_t i = 0; i < f.nr; i++)
			drain_one(&cmds, &pol, &f.rows[i]);
	double secs = (double)(mono_ms() - t0) / 1000.0;

	bool any_bad = false, any_unknown = false;
	for (size_t i = 0; i < f.nr; i++) {
		any_bad |= f.rows[i].verdict == ROW_UNHEALTHY;
		any_unknown |= f.rows[i].verdict >= ROW_UNKNOWN;
	}
	ret = any_bad ? EXIT_UNHEALTHY : any_unknown ? EXIT_UNKNOWN : EXIT_HEALTHY;
	const char *fv = any_bad ? "unhealthy" : any_unknown ? "unknown" : "healthy";
	if (json)
		print_json(&f, drain, secs, fv, ret, &out);
	else
		print_table(&f, drain, secs, &out);
	fwrite(out.buf, 1, out.len, stdout);
	if (fflush(stdout) != 0 && ret == EXIT_HEALTHY)
		ret = EXIT_UNKNOWN;
out:
	for (size_t i = 0; i < f.nr; i++) {
		slurm_node_release(&f.rows[i].node);
		free(f.rows[i].reason);
		free(f.rows[i].report_json);
		free(f.rows[i].slurm_error);
	}
	free(f.rows);
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
		usage_error("fleet", "which subcommand? (there is 'check')");
		return EXIT_USAGE;
	}
	if (is_help_arg(argv[1])) {
		fputs(fleet_usage, stdout);
		return EXIT_HEALTHY;
	}
	if (!strcmp(argv[1], "check"))
		return fleet_check(argc - 1, argv + 1);
	usage_error("fleet", "unknown subcommand '%s' (there is 'check')", argv[1]);
	return EXIT_USAGE;
}
