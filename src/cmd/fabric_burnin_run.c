/*
 * fabric_burnin_run.c: 'vigil fabric burnin run PLAN': each stage of a burn-in plan through srun
 * (inside a Slurm allocation holding the plan's hosts): every involved host's IB port counters
 * before ('vigil net ib --counters --json' on it), every pair's ib_write_bw at once (a 'vigil
 * net ib --server' step on b, a '--peer b' step on a), the counters after; then the judgement
 * of src/fabric/burnin_run.c per port, link and HCA. Every srun is a child with a deadline, and
 * node names are argv items, never through a shell.
 */
#include "cmd.h"
#include "fabric.h"
#include "common.h"
#include "../fabric/burnin_run.h"
#include "../lib/fileio.h"
#include "../lib/run_group.h"
#include "../slurm/slurm.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sys/stat.h>

static const char run_usage[] =
	"usage: vigil fabric burnin run PLAN [--jobid N] [--stage N] [--duration S] [--json]\n"
	"\n"
	"Run a burn-in plan ('vigil fabric burnin plan --json' wrote it) inside a Slurm allocation\n"
	"of its hosts: per stage, each host's IB port counters before and after, and every pair's\n"
	"ib_write_bw at once (server on b, client on a), each step through srun. Judged: a host port\n"
	"whose error counters rose is bad; a link whose every pair was slow is suspect (one that\n"
	"carried a good pair is cleared); an HCA whose every pair was bad while its partners did\n"
	"well elsewhere is suspect. vigil must be installed at the same path on every host.\n"
	"\n"
	"  --jobid N           run in Slurm job N (default $SLURM_JOB_ID: inside salloc or sbatch);\n"
	"                      outside a running job nothing is started (exit 2)\n"
	"  --stage N           run only stage N (default every stage in order)\n"
	"  --duration S        seconds of each ib_write_bw (default 30)\n"
	"  --no-cuda           host memory, not GPUDirect\n"
	"  --port N            first TCP port (default 18515; pair k of a stage uses N + 2k)\n"
	"  --timeout S         deadline of each srun step (default the duration + 180)\n"
	"  --vigil PATH        vigil on the hosts (default this vigil's own path)\n"
	"  --config FILE, -c, --set SEC.KEY=VALUE   configuration (slurm.srun, net.ib-floor-gbps)\n"
	"  --json              print one JSON object (pairs, ports, links, hcas, verdict)\n"
	"\n"
	"Exit: 0 nothing to act on, 1 a bad port, a suspect link or HCA, or a slow pair,\n"
	"2 usage error or no running allocation, 3 could not tell (PLAN missing or unreadable, a step or a reading\n"
	"failed).\n";

enum { ROPT_STAGE = 600, ROPT_DURATION, ROPT_NOCUDA, ROPT_PORT, ROPT_TIMEOUT, ROPT_VIGIL,
       ROPT_JSON, ROPT_CONFIG, ROPT_JOBID };

static const struct option run_opts[] = {
	{ "stage", required_argument, NULL, ROPT_STAGE },
	{ "duration", required_argument, NULL, ROPT_DURATION },
	{ "no-cuda", no_argument, NULL, ROPT_NOCUDA },
	{ "port", required_argument, NULL, ROPT_PORT },
	{ "timeout", required_argument, NULL, ROPT_TIMEOUT },
	{ "vigil", required_argument, NULL, ROPT_VIGIL },
	{ "json", no_argument, NULL, ROPT_JSON },
	{ "jobid", required_argument, NULL, ROPT_JOBID },
	{ "config", required_argument, NULL, ROPT_CONFIG },
	{ "set", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct run_args {
	struct host_env he;
	struct strlist sets;
	int stage; /* 0: all */
	double duration, timeout;
	bool no_cuda, json;
	unsigned port;
	const char *vigil, *plan, *jobid;
};

static int parse(int argc, char **argv, struct run_args *a)
{
	int c;
	int64_t v;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:h", run_opts, NULL)) != -1) {
		switch (c) {
		case ROPT_STAGE:
			if (!parse_i64(optarg, &v) || v < 1 || v > 1000000) {
				usage_error("fabric burnin run", "--stage wants a stage number, not '%s'",
					    optarg);
				return -1;
			}
			a->stage = (int)v;
			break;
		case ROPT_DURATION:
			if (opt_seconds("fabric burnin run", "--duration", optarg, 1, 86400,
					&a->duration) < 0)
				return -1;
			a->duration = ceil(a->duration);
			break;
		case ROPT_TIMEOUT:
			if (opt_seconds("fabric burnin run", "--timeout", optarg, 1, 86400,
					&a->timeout) < 0)
				return -1;
			break;
		case ROPT_PORT:
			if (!parse_i64(optarg, &v) || v < 1024 || v > 60000) {
				usage_error("fabric burnin run", "--port wants a port from 1024 to 60000, "
					    "not '%s'", optarg);
				return -1;
			}
			a->port = (unsigned)v;
			break;
		case ROPT_NOCUDA: a->no_cuda = true; break;
		case ROPT_VIGIL: a->vigil = optarg; break;
		case ROPT_JSON: a->json = true; break;
		case ROPT_JOBID:
			if (!parse_i64(optarg, &v) || v < 1) {
				usage_error("fabric burnin run", "--jobid wants a Slurm job id, not '%s'",
					    optarg);
				return -1;
			}
			a->jobid = optarg;
			break;
		case ROPT_CONFIG: a->he.config_path = optarg; break;
		case 'c': strlist_add(&a->sets, optarg); break;
		case 'h': return 1;
		case ':':
			usage_error("fabric burnin run", "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			usage_error("fabric burnin run", "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind + 1 != argc) {
		usage_error("fabric burnin run", optind < argc ? "one PLAN file, not more"
							       : "which plan? (PLAN)");
		return -1;
	}
	a->plan = argv[optind];
	return 0;
}

/* "JobState=RUNNING" of 'scontrol -o show job N' (one line, KEY=VALUE words): the state, cut
 * to out's size, or "" when the line has none. */
static void job_state(const char *line, char *out, size_t cap)
{
	const char *p = strstr(line, "JobState=");
	size_t n = 0;
	if (p && (p == line || p[-1] == ' ' || p[-1] == '\n'))
		for (p += 9; p[n] && p[n] != ' ' && p[n] != '\n' && n + 1 < cap; n++)
			out[n] = p[n];
	out[n] = '\0';
}

/*
 * Outside a running allocation every srun step of every stage failed on its own: some 40 srun
 * errors for one cause. The job is found and asked about once, before any srun:
 * 0 to go on, else the exit code (the message printed). --jobid is handed to srun as
 * SLURM_JOB_ID, which srun reads as its --jobid.
 */
static int allocation_check(const struct run_args *a)
{
	const char *id = a->jobid;
	static const char hint[] = "run it inside an allocation of the plan's hosts (salloc -w "
				   "HOSTS vigil fabric burnin run PLAN, or from an sbatch script), "
				   "or name a running job with --jobid N";
	if (!id || !*id)
		id = getenv("SLURM_JOB_ID");
	if (!id || !*id)
		id = getenv("SLURM_JOBID");
	if (!id || !*id) {
		fprintf(stderr, "vigil fabric burnin run: not inside a Slurm allocation (no "
				"SLURM_JOB_ID and no --jobid): %s; nothing was run\n", hint);
		return EXIT_USAGE;
	}
	int64_t v;
	if (!parse_i64(id, &v) || v < 1) {
		struct strbuf c = STRBUF_INIT;
		strbuf_add_clean(&c, id);
		fprintf(stderr, "vigil fabric burnin run: SLURM_JOB_ID '%s' is not a job id: %s; "
				"nothing was run\n", c.buf, hint);
		strbuf_release(&c);
		return EXIT_USAGE;
	}
	if (a->jobid)
		setenv("SLURM_JOB_ID", a->jobid, 1);
	struct slurm_cmds sc;
	struct strbuf err = STRBUF_INIT, why = STRBUF_INIT;
	char state[64];
	int ret = 0;
	if (slurm_cmds_from_config(&a->he.cfg, &sc, &err) < 0) {
		fprintf(stderr, "vigil fabric burnin run: %s\n", err.buf);
		ret = EXIT_USAGE;
		goto out;
	}
	const char *argv[] = { sc.scontrol, "-o", "show", "job", id, NULL };
	struct child ch;
	child_init(&ch);
	ch.argv = argv;
	ch.timeout_ms = sc.timeout_ms;
	ch.timeout_name = "slurm.timeout";
	ch.out_cap = 1u << 20;
	if (child_run(&ch, &why) < 0) {
		fprintf(stderr, "vigil fabric burnin run: cannot ask Slurm about job %s: %s; nothing "
				"was run\n", id, why.buf);
		ret = EXIT_UNKNOWN;
		goto out_child;
	}
	job_state(ch.out.buf, state, sizeof(state));
	if (ch.exited && !ch.exit_code && !strcmp(state, "RUNNING"))
		goto out_child;
	if (strstr(ch.err.buf, "Invalid job id specified")) {
		fprintf(stderr, "vigil fabric burnin run: Slurm has no job %s (it ended, or never "
				"was): %s; nothing was run\n", id, hint);
		ret = EXIT_USAGE;
	} else if (ch.exited && !ch.exit_code && *state) {
		strbuf_add_clean(&err, state);
		fprintf(stderr, "vigil fabric burnin run: job %s is %s, not running: wait until it "
				"runs (squeue -j %s), or %s; nothing was run\n", id, err.buf, id, hint);
		ret = EXIT_USAGE;
	} else {
		/* scontrol could not answer: srun could not either, and would say so 40 times */
		child_describe(&ch, &why);
		strbuf_trim(&ch.err);
		char *nl = strchr(ch.err.buf, '\n');
		if (nl)
			strbuf_setlen(&ch.err, (size_t)(nl - ch.err.buf));
		strbuf_add_clean(&err, ch.err.len ? ch.err.buf : "no JobState in its answer");
		fprintf(stderr, "vigil fabric burnin run: cannot tell whether job %s is running "
				"('%s -o show job %s' %s: %s); nothing was run\n", id, sc.scontrol, id,
			why.buf, err.buf);
		ret = EXIT_UNKNOWN;
	}
out_child:
	child_release(&ch);
out:
	strbuf_release(&err);
	strbuf_release(&why);
	return ret;
}

static int read_plan(const char *path, struct br_plan *p, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, e = STRBUF_INIT;
	struct stat st;
	int ret = -1;
	if (stat(path, &st) < 0) {
		error_set(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		error_set(err, "cannot read '%s': not a regular file", path);
		goto out;
	}
	int r = read_file_bounded(path, &text, 64u << 20, &e);
	if (r == READ_TRUNCATED)
		error_set(err, "'%s' is over 64 MiB: not a plan", path);
	else if (r != READ_OK)
		error_set(err, "cannot read '%s': %s", path, e.len ? e.buf : "missing");
	else if (br_plan_parse(text.buf, text.len, p, &e) < 0)
		error_set(err, "'%s' is not a burn-in plan: %s", path, e.buf);
	else
		ret = 0;
out:
	strbuf_release(&text);
	strbuf_release(&e);
	return ret;
}

/* ---- one stage ---- */

struct counter_step {
	struct child c;
	struct strlist argv;
	struct br_counters *into;
	const char *host;
};

static void counters_done(struct child *c, const char *start_error, void *arg)
{
	struct counter_step *s = arg, *x = NULL;
	/* arg is the array; find this child's entry */
	for (size_t i = 0; !x; i++)
		if (&s[i].c == c)
			x = &s[i];
	struct strbuf err = STRBUF_INIT, d = STRBUF_INIT;
	if (start_error) {
		x->into->ok = false;
		snprintf(x->into->error, sizeof(x->into->error), "srun did not start: %.200s",
			 start_error);
	} else if (br_counters_parse(c->out.buf, c->out.len, x->into, &err) < 0) {
		child_describe(c, &d);
		struct strbuf m = STRBUF_INIT;
		strbuf_addf(&m, "the counters step %s: ", d.buf);
		struct strbuf e = STRBUF_INIT;
		strbuf_addstr(&e, c->err.len ? c->err.buf : err.buf);
		while (e.len && (e.buf[e.len - 1] == '\n' || e.buf[e.len - 1] == ' '))
			e.buf[--e.len] = '\0';
		strbuf_add_excerpt(&m, e.buf, 160);
		strbuf_release(&e);
		strlcpy_v(x->into->error, m.buf, sizeof(x->into->error));
		strbuf_release(&m);
	}
	strbuf_release(&err);
	strbuf_release(&d);
}

/* Read the counters of every host in hs (before or after) at once. */
static void read_counters(const char *srun, const char *vigil, struct br_host_stage *hs, size_t n,
			  bool after, unsigned timeout_ms)
{
	struct counter_step *s = xcalloc(n + 1, sizeof(*s));
	struct run_group g;
	run_group_init(&g, 64);
	for (size_t i = 0; i < n; i++) {
		s[i].host = hs[i].host;
		s[i].into = after ? &hs[i].after : &hs[i].before;
		const char *av[] = { srun, "-N1", "-n1", "--overlap", "-w", hs[i].host, "--", vigil,
				     "net", "ib", "--counters", "--json" };
		for (size_t k = 0; k < ARRAY_SIZE(av); k++)
			strlist_add(&s[i].argv, av[k]);
		child_init(&s[i].c);
		s[i].c.argv = (const char *const *)s[i].argv.items;
		s[i].c.timeout_ms = timeout_ms;
		s[i].c.timeout_name = "--timeout";
		run_group_add(&g, &s[i].c);
	}
	run_group_run(&g, counters_done, s);
	run_group_release(&g);
	for (size_t i = 0; i < n; i++) {
		child_release(&s[i].c);
		strlist_release(&s[i].argv);
	}
	free(s);
}

struct pair_run {
	struct ib_pair p;
	struct strlist extra;
	char port[16];
};

static void pair_done(struct child *c, const char *start_error, void *arg)
{
	struct pair_run *r = arg;
	for (size_t i = 0;; i++) {
		if (&r[i].p.srv == c || &r[i].p.cli == c) {
			char *dst = &r[i].p.srv == c ? r[i].p.srv_start_error : r[i].p.cli_start_error;
			if (start_error)
				strlcpy_v(dst, start_error, sizeof(r[i].p.srv_start_error));
			return;
		}
	}
}

static void run_stage(const struct run_args *a, const char *srun, const char *vigil,
		      struct br_stage *st, struct br_host_stage **hs, size_t *nhs, size_t *ahs)
{
	size_t first = *nhs;
	unsigned step_ms = (unsigned)(a->timeout * 1000);
	for (size_t k = 0; k < st->nr; k++) {
		const char *h[2] = { st->pairs[k].a, st->pairs[k].b };
		for (int e = 0; e < 2; e++) {
			bool seen = false;
			for (size_t i = first; i < *nhs; i++)
				seen |= !strcmp((*hs)[i].host, h[e]);
			if (seen)
				continue;
			ALLOC_GROW(*hs, *nhs + 1, *ahs);
			struct br_host_stage *x = &(*hs)[(*nhs)++];
			memset(x, 0, sizeof(*x));
			x->host = h[e];
			x->stage = st->stage;
		}
	}
	read_counters(srun, vigil, *hs + first, *nhs - first, false, step_ms);

	struct pair_run *r = xcalloc(st->nr + 1, sizeof(*r));
	struct run_group g;
	run_group_init(&g, 0);
	char dur[16];
	snprintf(dur, sizeof(dur), "%.0f", a->duration);
	for (size_t k = 0; k < st->nr; k++) {
		struct br_pair *q = &st->pairs[k];
		r[k].p.a = q->a;
		r[k].p.a_hca = q->a_hca;
		r[k].p.b = q->b;
		r[k].p.b_hca = q->b_hca;
		snprintf(r[k].port, sizeof(r[k].port), "%u", a->port + 2 * (unsigned)k);
		const char *ex[] = { "--no-latency", "--duration", dur, "--port", r[k].port,
				     "--connect-wait", "60" };
		for (size_t i = 0; i < ARRAY_SIZE(ex); i++)
			strlist_add(&r[k].extra, ex[i]);
		if (a->no_cuda)
			strlist_add(&r[k].extra, "--no-cuda");
		ib_pair_setup(&r[k].p, srun, vigil, &r[k].extra, step_ms);
	}
	/* servers first in the group: each client retries until its server listens */
	for (size_t k = 0; k < st->nr; k++)
		run_group_add(&g, &r[k].p.srv);
	for (size_t k = 0; k < st->nr; k++)
		run_group_add(&g, &r[k].p.cli);
	run_group_run(&g, pair_done, r);
	run_group_release(&g);
	for (size_t k = 0; k < st->nr; k++) {
		struct br_pair *q = &st->pairs[k];
		ib_pair_judge(&r[k].p, NULL);
		q->ran = true;
		q->verdict = r[k].p.verdict;
		q->bw_gbps = r[k].p.bw_gbps;
		free(q->message);
		q->message = xstrdup(r[k].p.message);
		ib_pair_release(&r[k].p);
		strlist_release(&r[k].extra);
	}
	free(r);
	st->ran = true;
	read_counters(srun, vigil, *hs + first, *nhs - first, true, step_ms);
}

int cmd_fabric_burnin_run(int argc, char **argv)
{
	struct run_args a;
	struct br_plan plan;
	struct strbuf err = STRBUF_INIT, self = STRBUF_INIT;
	struct br_host_stage *hs = NULL;
	size_t nhs = 0, ahs = 0;
	int ret = EXIT_USAGE;
	memset(&a, 0, sizeof(a));
	memset(&plan, 0, sizeof(plan));
	a.duration = 30;
	a.port = IB_DEFAULT_PORT;
	int pr = parse(argc, argv, &a);
	if (pr) {
		if (pr > 0) {
			fputs(run_usage, stdout);
			ret = EXIT_HEALTHY;
		}
		goto out;
	}
	if (a.timeout <= 0)
		a.timeout = a.duration + 180;
	if (host_env_setup(&a.he, (const char *const *)a.sets.items, a.sets.nr, &err) < 0) {
		fprintf(stderr, "vigil fabric burnin run: %s\n", err.buf);
		goto out;
	}
	if (read_plan(a.plan, &plan, &err) < 0) {
		fprintf(stderr, "vigil fabric burnin run: %s\n", err.buf);
		ret = EXIT_UNKNOWN; /* input, not usage: the one exit contract (vigil(1)) */
		goto out_env;
	}
	bool found = !a.stage;
	for (size_t i = 0; i < plan.nr_stages; i++)
		found |= plan.stages[i].stage == a.stage;
	if (!found) {
		usage_error("fabric burnin run", "the plan has no stage %d", a.stage);
		goto out_env;
	}
	int alloc = allocation_check(&a);
	if (alloc) {
		ret = alloc;
		goto out_env;
	}
	const char *srun = config_get(&a.he.cfg, "slurm", "srun");
	if (!srun)
		srun = "srun";
	if (!a.vigil) {
		if (fsroot_readlink(fsroot_host, "/proc/self/exe", &self, false) != 0)
			strbuf_addstr(&self, "vigil");
		a.vigil = self.buf;
	}
	for (size_t i = 0; i < plan.nr_stages; i++) {
		struct br_stage *st = &plan.stages[i];
		if (a.stage && st->stage != a.stage)
			continue;
		if (!a.json)
			fprintf(stderr, "vigil fabric burnin run: stage %d, %zu pair%s\n", st->stage,
				st->nr, st->nr == 1 ? "" : "s");
		run_stage(&a, srun, a.vigil, st, &hs, &nhs, &ahs);
	}
	struct br_judgement j;
	br_judge(&plan, hs, nhs, &j);
	const struct strbuf *o = a.json ? &j.json : &j.text;
	ret = j.exit_code;
	if (fwrite(o->buf, 1, o->len, stdout) != o->len || fflush(stdout))
		ret = EXIT_UNKNOWN;
	br_judgement_release(&j);
out_env:
	host_env_release(&a.he);
out:
	for (size_t i = 0; i < nhs; i++) {
		br_counters_release(&hs[i].before);
		br_counters_release(&hs[i].after);
	}
	free(hs);
	br_plan_release(&plan);
	strlist_release(&a.sets);
	strbuf_release(&err);
	strbuf_release(&self);
	return ret;
}
