/*
 * sim.c: 'vigil sim', what failures cost a training run of a given size (docs/SIM.md): vigil
 * run's real supervisor in virtual time against a simulated cluster whose faults come from a
 * model (src/sim/). Parses the options, runs src/sim/sim.c, prints a table or JSON.
 */
#include "cmd.h"
#include "../lib/json.h"
#include "../lib/fileio.h"
#include "../sim/html.h"
#include "../sim/sim.h"
#include "../sim/sweep.h"

#include <getopt.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static const char sim_usage[] =
	"usage: vigil sim [--gpus N] [--gpus-per-node G] [--days D] [--step-time SEC]\n"
	"                 [--failures MODEL.json] [--checkpoint-every SEC]\n"
	"                 [--checkpoint-cost SEC] [--restart-cost SEC] [--spares K]\n"
	"                 [--repair-hours H] [--check-interval SEC] [--seed X] [--json]\n"
	"                 [--policy vigil|torchrun|manual]... [--schedule FILE]\n"
	"                 [--nccl-timeout SEC] [--operator-minutes M] [--monitor-interval SEC]\n"
	"                 [--hang-floor SEC] [--latencies NAME=SEC,...]\n"
	"                 [--replicas R] [--sweep NAME[=LIST]]... [--spares-risk P]\n"
	"                 [--html FILE]\n"
	"       vigil sim --print-model [--failures MODEL.json]\n"
	"\n"
	"Simulate a training job of N GPUs for D days: faults drawn from a failure model (by\n"
	"class, rates per GPU-day; the default is built from Llama 3's 419 unexpected\n"
	"interruptions in 54 days on 16,384 GPUs), handled by vigil run's own supervisor in\n"
	"virtual time against a simulated Slurm. Prints ETTR (productive training time over wall\n"
	"time), goodput, interruptions by class, the time lost by cause, the spares used and\n"
	"Young/Daly's checkpoint interval sqrt(2 MTBF C). The same seed gives the same output.\n"
	"\n"
	"  --gpus N               GPUs of the job (default 16384)\n"
	"  --gpus-per-node G      (default 8)\n"
	"  --days D               wall time simulated (default 54)\n"
	"  --step-time SEC        one training step (default 10; from 0.1)\n"
	"  --failures FILE        the failure model (JSON, as --print-model writes it)\n"
	"  --checkpoint-every SEC (default 1800)\n"
	"  --checkpoint-cost SEC  the trainer stalls this long to save one (default 60)\n"
	"  --restart-cost SEC     the trainer's start-up after srun (default 300)\n"
	"  --spares K             spare nodes in the allocation (default 16)\n"
	"  --repair-hours H       every broken host's repair time (default: the model's)\n"
	"  --check-interval SEC   the supervisor's periodic vigil check (default 300)\n"
	"  --seed X               the generator's seed (default 1)\n"
	"  --policy P[,P...]      who handles the faults: vigil (vigil run's supervisor),\n"
	"                         torchrun (--max-restarts), manual (an operator); repeatable;\n"
	"                         each gets the same faults (default vigil)\n"
	"  --schedule FILE        replay these faults instead of drawing them: a JSON list of\n"
	"                         {\"at_s\", \"class\", \"node\"} (node: the job's slot from 0)\n"
	"  --nccl-timeout SEC     torchrun's and manual's hang detection (default 600)\n"
	"  --operator-minutes M   an operator's response to a page (default 30)\n"
	"  --monitor-interval SEC torchrun's poll of its workers (default 0.1)\n"
	"  --hang-floor SEC       vigil's hang limit's floor (default 60)\n"
	"  --latencies L          the simulated cluster's: check=S,stop=S,stacks=S,smoke=S,\n"
	"                         restart-delay=S (default 2, 3, 5, 30, 2; for a replay)\n"
	"  --json                 one JSON object (docs/schema/sim.json)\n"
	"  --print-model          print the model as JSON and stop\n"
	"  --replicas R           R runs, seeds X to X+R-1: means with 95 % intervals\n"
	"                         (Student's t) (default 1: the one run, as without)\n"
	"  --sweep NAME=LIST      one result per value, the rest as given; NAME is\n"
	"                         checkpoint-every, spares or gpus, LIST comma separated;\n"
	"                         checkpoint-every alone: Young/Daly's interval x 0.25 to 4\n"
	"                         in steps of sqrt 2. Once per NAME. The recommended\n"
	"                         checkpoint interval comes only from a checkpoint-every\n"
	"                         sweep (null without one)\n"
	"                         With several --policy, each policy runs every replica\n"
	"                         and value on the same seeds (its own under policies)\n"
	"  --spares-risk P        recommended spares: the fewest that ran short in at most\n"
	"                         this share of the replicas (default 0.01)\n"
	"  --html FILE            also write one self-contained page (inline SVG) to FILE\n"
	"                         (replaced atomically; never written through a link)\n"
	"\n"
	"Exit status:\n"
	"  0  the simulation ran (or the model was printed)\n"
	"  2  usage error: a bad option, or a model file that is not a model (the key named)\n"
	"  3  could not run: no temporary directory, the job could not run at all, or FILE\n"
	"     could not be written\n";

enum {
	OPT_GPUS = 256, OPT_GPN, OPT_DAYS, OPT_STEP, OPT_FAILURES, OPT_CKPT_EVERY, OPT_CKPT_COST,
	OPT_RESTART, OPT_SPARES, OPT_REPAIR, OPT_CHECK, OPT_SEED, OPT_JSON, OPT_PRINT,
	OPT_POLICY, OPT_SCHEDULE, OPT_NCCL, OPT_OPERATOR, OPT_MONITOR, OPT_HANG_FLOOR, OPT_LAT,
	OPT_REPLICAS, OPT_SWEEP, OPT_RISK, OPT_HTML,
};

static const struct option sim_opts[] = {
	{ "gpus", required_argument, NULL, OPT_GPUS },
	{ "gpus-per-node", required_argument, NULL, OPT_GPN },
	{ "days", required_argument, NULL, OPT_DAYS },
	{ "step-time", required_argument, NULL, OPT_STEP },
	{ "failures", required_argument, NULL, OPT_FAILURES },
	{ "checkpoint-every", required_argument, NULL, OPT_CKPT_EVERY },
	{ "checkpoint-cost", required_argument, NULL, OPT_CKPT_COST },
	{ "restart-cost", required_argument, NULL, OPT_RESTART },
	{ "spares", required_argument, NULL, OPT_SPARES },
	{ "repair-hours", required_argument, NULL, OPT_REPAIR },
	{ "check-interval", required_argument, NULL, OPT_CHECK },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "print-model", no_argument, NULL, OPT_PRINT },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "schedule", required_argument, NULL, OPT_SCHEDULE },
	{ "nccl-timeout", required_argument, NULL, OPT_NCCL },
	{ "operator-minutes", required_argument, NULL, OPT_OPERATOR },
	{ "monitor-interval", required_argument, NULL, OPT_MONITOR },
	{ "hang-floor", required_argument, NULL, OPT_HANG_FLOOR },
	{ "latencies", required_argument, NULL, OPT_LAT },
	{ "replicas", required_argument, NULL, OPT_REPLICAS },
	{ "sweep", required_argument, NULL, OPT_SWEEP },
	{ "spares-risk", required_argument, NULL, OPT_RISK },
	{ "html", required_argument, NULL, OPT_HTML },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A count from lo to hi, or a usage error naming the option. */
static int opt_count(const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (parse_u64(arg, out) && *out >= lo && *out <= hi)
		return 0;
	struct strbuf got = STRBUF_INIT;
	strbuf_add_excerpt(&got, arg, 64);
	usage_error("sim", "%s wants a whole number from %llu to %llu, not '%s'", opt,
		    (unsigned long long)lo, (unsigned long long)hi, got.buf);
	strbuf_release(&got);
	return -1;
}

static int opt_number(const char *opt, const char *arg, double lo, double hi, double *out)
{
	if (parse_double(arg, out) && *out >= lo && *out <= hi)
		return 0;
	struct strbuf got = STRBUF_INIT;
	strbuf_add_excerpt(&got, arg, 64);
	usage_error("sim", "%s wants a number from %g to %g, not '%s'", opt, lo, hi, got.buf);
	strbuf_release(&got);
	return -1;
}

/* The figures each policy has: at the top for the first policy, and under policies. */
static void headline(struct json_writer *w, const struct sim_model *m,
		     const struct sim_result *r)
{
	json_key(w, "ettr");
	json_fixed(w, r->ettr, 6);
	json_key(w, "goodput");
	json_fixed(w, r->goodput, 6);
	json_key(w, "interruptions");
	json_uint(w, r->interruptions);
	json_key(w, "interruptions_by_class");
	json_open_object(w);
	for (size_t i = 0; i < m->nr; i++) {
		json_key(w, m->classes[i].name);
		json_uint(w, r->by_class[i]);
	}
	json_close_object(w);
	json_key(w, "lost_seconds_by_cause");
	json_open_object(w);
	for (int c = 0; c < SIM_CAUSE_NR; c++) {
		json_key(w, sim_cause_name((enum sim_cause)c));
		json_fixed(w, r->lost_s[c], 1);
	}
	json_close_object(w);
}

/* The rest of a policy's figures (under policies; at the top after the recommendations). */
static void counts(struct json_writer *w, const struct sim_result *r)
{
	json_key(w, "spares_used_max");
	json_uint(w, r->spares_used_max);
	json_key(w, "spares_exhausted");
	json_bool(w, r->requeues > 0);
	json_key(w, "requeues");
	json_uint(w, r->requeues);
	json_key(w, "restarts");
	json_uint(w, r->restarts);
	json_key(w, "productive_s");
	json_fixed(w, r->productive_s, 1);
	json_key(w, "steps");
	json_uint(w, r->steps);
}

static void result_json(const struct sim_params *p, const struct sim_model *m,
			const struct sim_result *rs, const enum sim_policy *pol, size_t npol,
			const struct sim_study *st, struct strbuf *out)
{
	const struct sim_result *r = &rs[0];
	struct json_writer w;
	json_writer_init(&w, out, true);
	json_open_top(&w);
	headline(&w, m, r);
	/* the first policy's: from its checkpoint-every sweep only, else null (never a guess) */
	json_key(&w, "recommended_checkpoint_every_s");
	sim_study_json_recommended(&w, st);
	json_key(&w, "young_daly_checkpoint_every_s");
	json_fixed(&w, r->young_daly_s, 1);
	json_key(&w, "spares_used_max");
	json_uint(&w, r->spares_used_max);
	json_key(&w, "spares_exhausted");
	json_bool(&w, r->requeues > 0);
	json_key(&w, "requeues");
	json_uint(&w, r->requeues);
	json_key(&w, "restarts");
	json_uint(&w, r->restarts);
	json_key(&w, "mtbf_s");
	json_fixed(&w, r->mtbf_s, 1);
	json_key(&w, "productive_s");
	json_fixed(&w, r->productive_s, 1);
	json_key(&w, "wall_s");
	json_fixed(&w, r->wall_s, 1);
	json_key(&w, "steps");
	json_uint(&w, r->steps);
	json_key(&w, "check_rounds");
	json_uint(&w, r->check_rounds);
	json_key(&w, "faults");
	json_uint(&w, r->faults);
	if (sim_study_extended(&st[0]))
		sim_study_json(&w, &st[0]);
	json_key(&w, "params");
	json_open_object(&w);
	json_key(&w, "gpus");
	json_uint(&w, p->gpus);
	json_key(&w, "gpus_per_node");
	json_uint(&w, p->gpus_per_node);
	json_key(&w, "nodes");
	json_uint(&w, r->nodes);
	json_key(&w, "spares");
	json_uint(&w, p->spares);
	json_key(&w, "days");
	json_double(&w, p->days);
	json_key(&w, "step_time_s");
	json_double(&w, p->step_s);
	json_key(&w, "checkpoint_every_s");
	json_double(&w, p->checkpoint_every_s);
	json_key(&w, "checkpoint_cost_s");
	json_double(&w, p->checkpoint_cost_s);
	json_key(&w, "restart_cost_s");
	json_double(&w, p->restart_cost_s);
	json_key(&w, "check_interval_s");
	json_double(&w, p->check_interval_s);
	json_key(&w, "repair_hours");
	if (p->repair_hours > 0)
		json_double(&w, p->repair_hours);
	else
		json_null(&w);
	json_key(&w, "seed");
	json_uint(&w, p->seed);
	json_key(&w, "policy");
	json_string(&w, sim_policy_name(pol[0]));
	json_key(&w, "schedule");
	json_string(&w, p->schedule ? "scripted" : "drawn");
	json_key(&w, "nccl_timeout_s");
	json_double(&w, p->nccl_timeout_s);
	json_key(&w, "operator_minutes");
	json_double(&w, p->operator_minutes);
	json_key(&w, "monitor_interval_s");
	json_double(&w, p->torchrun_monitor_s);
	json_key(&w, "hang_floor_s");
	json_double(&w, p->hang_floor_s);
	json_close_object(&w);
	json_key(&w, "policies");
	json_open_object(&w);
	for (size_t i = 0; i < npol; i++) {
		json_key(&w, sim_policy_name(pol[i]));
		json_open_object(&w);
		headline(&w, m, &rs[i]);
		counts(&w, &rs[i]);
		/* each policy's own replicas, sweep rows and recommendations (the first's also
		 * at the top level) */
		if (sim_study_extended(&st[i])) {
			json_key(&w, "recommended_checkpoint_every_s");
			sim_study_json_recommended(&w, &st[i]);
			sim_study_json(&w, &st[i]);
		}
		json_close_object(&w);
	}
	json_close_object(&w);
	json_close_object(&w);
	json_writer_finish(&w, NULL);
	strbuf_addch(out, '\n');
}

static void result_text(const struct sim_params *p, const struct sim_model *m,
			const struct sim_result *r, struct strbuf *out)
{
	strbuf_addf(out, "vigil sim: %u GPUs (%u nodes of %u, %u spares), %g day%s, seed %llu\n\n",
		    p->gpus, r->nodes, p->gpus_per_node, p->spares, p->days,
		    p->days == 1 ? "" : "s", (unsigned long long)p->seed);
	if (p->policy != SIM_POLICY_VIGIL)
		strbuf_addf(out, "  policy          %s (a model of it, not vigil's supervisor: "
			    "docs/SIM.md)\n", sim_policy_name(p->policy));
	strbuf_addf(out, "  ETTR            %.4f   (productive %.1f h of %.1f h)\n", r->ettr,
		    r->productive_s / 3600, r->wall_s / 3600);
	strbuf_addf(out, "  goodput         %.4f   (spares' GPU-hours counted)\n", r->goodput);
	strbuf_addf(out, "  interruptions   %u      (model MTBF for this job %.2f h)\n",
		    r->interruptions, r->mtbf_s / 3600);
	strbuf_addf(out, "  restarts        %u, requeues %u (spares ran out), spares used at "
		    "most %u\n", r->restarts, r->requeues, r->spares_used_max);
	strbuf_addf(out, "  Young/Daly      checkpoint every %.0f s (now every %g s)\n\n",
		    r->young_daly_s, p->checkpoint_every_s);
	strbuf_addstr(out, "  interruptions by class\n");
	for (size_t i = 0; i < m->nr; i++)
		strbuf_addf(out, "    %-20s %6u\n", m->classes[i].name, r->by_class[i]);
	strbuf_addstr(out, "\n  time lost by cause       hours   share of wall\n");
	for (int c = 0; c < SIM_CAUSE_NR; c++)
		strbuf_addf(out, "    %-20s %9.2f   %6.2f %%\n", sim_cause_name((enum sim_cause)c),
			    r->lost_s[c] / 3600, 100 * r->lost_s[c] / r->wall_s);
}

/* Every policy on one line each, the same faults (more than one policy); with replicas the
 * means, each policy over the same seeds (so the same faults replica by replica). */
static void policies_text(const struct sim_result *rs, const enum sim_policy *pol, size_t npol,
			  unsigned replicas, struct strbuf *out)
{
	if (replicas > 1)
		strbuf_addf(out, "\n  policies (means of %u replicas, the same faults in each)\n",
			    replicas);
	else
		strbuf_addf(out, "\n  policies (the same %u faults)\n", rs[0].faults);
	strbuf_addstr(out, "    policy       ETTR   goodput  interruptions  restarts   detection h"
			   "  restart h  recomputation h  waiting h\n");
	for (size_t i = 0; i < npol; i++) {
		const struct sim_result *r = &rs[i];
		strbuf_addf(out, "    %-9s %7.4f  %7.4f  %13u  %8u  %12.2f  %9.2f  %15.2f  %9.2f\n",
			    sim_policy_name(pol[i]), r->ettr, r->goodput, r->interruptions,
			    r->restarts, r->lost_s[SIM_LOST_DETECTION] / 3600,
			    r->lost_s[SIM_LOST_RESTART] / 3600, r->lost_s[SIM_LOST_RECOMPUTE] / 3600,
			    r->lost_s[SIM_LOST_WAITING] / 3600);
	}
}

/* --latencies check=S,stop=S,...: 0, or a usage error naming the part. */
static int opt_latencies(const char *arg, struct sim_params *p)
{
	static const char *const names[] = { "check", "stop", "stacks", "smoke",
					     "restart-delay" };
	double *slot[] = { &p->lat_check_s, &p->lat_stop_s, &p->lat_stacks_s, &p->lat_smoke_s,
			   &p->lat_restart_delay_s };
	char buf[256];
	struct strbuf got = STRBUF_INIT;
	size_t len = strlen(arg);
	if (!len || len >= sizeof(buf))
		goto bad;
	memcpy(buf, arg, len + 1);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			goto bad;
		*eq = 0;
		size_t i = 0;
		while (i < 5 && strcmp(tok, names[i]))
			i++;
		double v;
		if (i == 5 || !parse_double(eq + 1, &v) || !(v > 0) || v > 86400)
			goto bad;
		*slot[i] = v;
	}
	return 0;
bad:
	strbuf_add_excerpt(&got, arg, 64);
	usage_error("sim", "--latencies wants NAME=SECONDS,... (check, stop, stacks, smoke, "
		    "restart-delay; each above 0), not '%s'", got.buf);
	strbuf_release(&got);
	return -1;
}

/* --policy's value: one name or a comma list, added to pol (each once). */
static int opt_policy(const char *arg, enum sim_policy *pol, size_t *npol)
{
	char buf[128];
	struct strbuf got = STRBUF_INIT;
	size_t len = strlen(arg);
	/* an empty name (",x", "x,", "x,,y") is a mistake, not nothing */
	if (!len || len >= sizeof(buf) || arg[0] == ',' || arg[len - 1] == ',' ||
	    strstr(arg, ",,"))
		goto bad;
	memcpy(buf, arg, strlen(arg) + 1);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		enum sim_policy x;
		if (sim_policy_parse(tok, &x) < 0)
			goto bad;
		bool seen = false;
		for (size_t i = 0; i < *npol; i++)
			seen |= pol[i] == x;
		if (!seen)
			pol[(*npol)++] = x;
	}
	if (*npol)
		return 0;
bad:
	strbuf_add_excerpt(&got, arg, 64);
	usage_error("sim", "--policy wants vigil, torchrun or manual (or a comma list), not '%s'",
		    got.buf);
	strbuf_release(&got);
	return -1;
}

/* --replicas, --sweep, --spares-risk, --html (src/sim/sweep.c, html.c): 0 or -1 (usage). */
static int study_option(struct sim_study *st, int c, const char *arg, const char **html)
{
	uint64_t u = 1;
	int bad = 0;
	struct strbuf e = STRBUF_INIT;
	switch (c) {
	case OPT_REPLICAS:
		bad = opt_count("--replicas", arg, 1, SIM_REPLICAS_MAX, &u);
		st->replicas = (unsigned)u;
		break;
	case OPT_RISK:
		bad = opt_number("--spares-risk", arg, 0, 1, &st->spares_risk);
		st->risk_given = true;
		break;
	case OPT_SWEEP:
		if ((bad = sim_sweep_parse(st, arg, &e)) < 0)
			usage_error("sim", "%s", e.buf);
		break;
	default:
		if (!*arg) {
			usage_error("sim", "--html wants a file name");
			bad = -1;
		}
		*html = arg;
	}
	strbuf_release(&e);
	return bad;
}

/* The page (src/sim/html.c), from the JSON the run printed or would print: replaced
 * atomically, never through a link. 0, or -1 said. */
static int study_html(const char *html, const struct sim_params *p, const struct sim_model *m,
		      const struct sim_result *rs, const enum sim_policy *pol, size_t npol,
		      const struct sim_study *st)
{
	struct strbuf js = STRBUF_INIT, page = STRBUF_INIT, err = STRBUF_INIT, q = STRBUF_INIT;
	int ret = 0;
	result_json(p, m, rs, pol, npol, st, &js);
	if (sim_html(js.buf, js.len, m->source, &page, &err) < 0 ||
	    write_file_atomic(html, page.buf, page.len, 0644, &err) < 0) {
		strbuf_add_clean(&q, err.buf);
		fprintf(stderr, "vigil sim: %s\n", q.buf);
		ret = -1;
	}
	strbuf_release(&js);
	strbuf_release(&page);
	strbuf_release(&err);
	strbuf_release(&q);
	return ret;
}

int cmd_sim(int argc, char **argv)
{
	struct sim_params p = {
		.gpus = 16384, .gpus_per_node = 8, .spares = 16, .days = 54, .step_s = 10,
		.checkpoint_every_s = 1800, .checkpoint_cost_s = 60, .restart_cost_s = 300,
		.check_interval_s = 300, .hang_floor_s = 60, .seed = 1,
		.nccl_timeout_s = SIM_NCCL_TIMEOUT_S, .operator_minutes = SIM_OPERATOR_MINUTES,
		.torchrun_monitor_s = SIM_TORCHRUN_MONITOR_S,
	};
	const char *failures = NULL, *schedule = NULL;
	enum sim_policy pol[SIM_POLICY_NR];
	size_t npol = 0;
	struct sim_result rs[SIM_POLICY_NR];
	struct sim_schedule sched = { 0 };
	const char *html = NULL;
	bool json = false, print = false;
	int c, ret = EXIT_USAGE;
	uint64_t u;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, q = STRBUF_INIT;
	struct sim_model m;
	/* one study per policy (~0.5 MiB each: not the stack); the options fill the first */
	struct sim_study *study = xcalloc(SIM_POLICY_NR, sizeof(*study));
	sim_study_init(&study[0]);

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", sim_opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case OPT_GPUS:
			bad = opt_count("--gpus", optarg, 1, 10000000, &u);
			p.gpus = (unsigned)u;
			break;
		case OPT_GPN:
			bad = opt_count("--gpus-per-node", optarg, 1, 64, &u);
			p.gpus_per_node = (unsigned)u;
			break;
		case OPT_SPARES:
			bad = opt_count("--spares", optarg, 0, 100000, &u);
			p.spares = (unsigned)u;
			break;
		case OPT_SEED:
			bad = opt_count("--seed", optarg, 0, UINT64_MAX, &p.seed);
			break;
		case OPT_DAYS: bad = opt_number("--days", optarg, 0.001, 3650, &p.days); break;
		case OPT_STEP: /* the world counts each step: 0.1 s keeps 10 years at 3 G steps */
			bad = opt_number("--step-time", optarg, 0.1, 86400, &p.step_s);
			break;
		case OPT_CKPT_EVERY:
			bad = opt_number("--checkpoint-every", optarg, 0.001, 1e7,
					 &p.checkpoint_every_s);
			break;
		case OPT_CKPT_COST:
			bad = opt_number("--checkpoint-cost", optarg, 0, 86400, &p.checkpoint_cost_s);
			break;
		case OPT_RESTART:
			bad = opt_number("--restart-cost", optarg, 0, 86400, &p.restart_cost_s);
			break;
		case OPT_REPAIR:
			bad = opt_number("--repair-hours", optarg, 0.001, 1e5, &p.repair_hours);
			break;
		case OPT_CHECK:
			bad = opt_number("--check-interval", optarg, 1, 86400, &p.check_interval_s);
			break;
		case OPT_FAILURES: failures = optarg; break;
		case OPT_SCHEDULE: schedule = optarg; break;
		case OPT_POLICY: bad = opt_policy(optarg, pol, &npol); break;
		case OPT_NCCL:
			bad = opt_number("--nccl-timeout", optarg, 1, 86400, &p.nccl_timeout_s);
			break;
		case OPT_OPERATOR:
			bad = opt_number("--operator-minutes", optarg, 0.1, 10080,
					 &p.operator_minutes);
			break;
		case OPT_MONITOR:
			bad = opt_number("--monitor-interval", optarg, 0.01, 3600,
					 &p.torchrun_monitor_s);
			break;
		case OPT_LAT: bad = opt_latencies(optarg, &p); break;
		case OPT_HANG_FLOOR:
			bad = opt_number("--hang-floor", optarg, 1, 86400, &p.hang_floor_s);
			break;
		case OPT_JSON: json = true; break;
		case OPT_PRINT: print = true; break;
		case OPT_REPLICAS: case OPT_SWEEP: case OPT_RISK: case OPT_HTML:
			bad = study_option(study, c, optarg, &html);
			break;
		case 'h':
			fputs(sim_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		case ':':
			usage_error("sim", "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			usage_error("sim", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
		if (bad)
			goto out;
	}
	if (optind < argc) {
		strbuf_add_excerpt(&q, argv[optind], 64);
		usage_error("sim", "unexpected argument '%s'", q.buf);
		goto out;
	}
	if (failures) {
		if (sim_model_load(failures, &m, &err) < 0) {
			strbuf_add_clean(&q, err.buf);
			fprintf(stderr, "vigil sim: %s\n", q.buf);
			goto out;
		}
	} else {
		sim_model_default(&m);
	}
	if (print) {
		sim_model_json(&m, &out);
		fputs(out.buf, stdout);
		ret = EXIT_HEALTHY;
		goto out;
	}
	if (p.gpus % p.gpus_per_node) {
		usage_error("sim", "--gpus %u is not a whole number of nodes of %u GPUs", p.gpus,
			    p.gpus_per_node);
		goto out;
	}
	if (p.checkpoint_every_s < p.step_s) {
		usage_error("sim", "--checkpoint-every %g is shorter than one step (%g s)",
			    p.checkpoint_every_s, p.step_s);
		goto out;
	}
	if (!(sim_model_total_rate(&m) > 0)) {
		usage_error("sim", "the model has no fault at all (every rate is 0)");
		goto out;
	}
	if (sim_study_check(study, &p, &err) < 0) {
		usage_error("sim", "%s", err.buf);
		goto out;
	}
	/* the run directory: TMPDIR, else tmpfs where there is one (the journal's fsyncs are
	 * then memory's), else /tmp */
	struct stat st;
	p.tmpdir = getenv("TMPDIR");
	if ((!p.tmpdir || !*p.tmpdir) && stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
	    access("/dev/shm", W_OK) == 0)
		p.tmpdir = "/dev/shm";
	if (!npol)
		pol[npol++] = SIM_POLICY_VIGIL;
	if (schedule) {
		/* a replay's faults are the file's, whatever the seed, on the base's node slots */
		if (study[0].replicas > 1) {
			usage_error("sim", "--replicas with --schedule: every replica would replay "
				    "the same faults");
			goto out;
		}
		if (study[0].sweeps[SIM_SWEEP_GPUS].on) {
			usage_error("sim", "--sweep gpus with --schedule: the replayed faults name "
				    "the job's node slots of --gpus %u", p.gpus);
			goto out;
		}
		if (sim_schedule_load(schedule, &m, p.gpus / p.gpus_per_node, p.days * 86400, &sched,
				      &err) < 0) {
			strbuf_add_clean(&q, err.buf);
			fprintf(stderr, "vigil sim: %s\n", q.buf);
			goto out;
		}
		p.schedule = &sched;
	}
	ret = EXIT_UNKNOWN;
	/* each policy gets the whole study (replicas, every sweep's values) over the same seeds,
	 * so the same faults, value by value and replica by replica (docs/SIM.md, "Policies,
	 * replicas and sweeps together") */
	for (size_t i = 1; i < npol; i++)
		study[i] = study[0]; /* the options, before any ran */
	for (size_t i = 0; i < npol; i++) {
		struct sim_study *s = &study[i];
		p.policy = pol[i];
		if (sim_study_run(s, &p, &m, &err) < 0) {
			strbuf_add_clean(&q, err.buf);
			if (npol > 1)
				fprintf(stderr, "vigil sim: %s: %s\n", sim_policy_name(pol[i]), q.buf);
			else
				fprintf(stderr, "vigil sim: %s\n", q.buf);
			goto out;
		}
		rs[i] = s->base.mean; /* with one replica, the run itself */
	}
	p.policy = pol[0];
	if (html && study_html(html, &p, &m, rs, pol, npol, study) < 0)
		goto out;
	if (json) {
		result_json(&p, &m, rs, pol, npol, study, &out);
	} else {
		result_text(&p, &m, &rs[0], &out);
		if (npol > 1)
			policies_text(rs, pol, npol, study[0].replicas, &out);
		for (size_t i = 0; i < npol && sim_study_extended(&study[0]); i++) {
			if (npol > 1)
				strbuf_addf(&out, "\n  policy %s:\n", sim_policy_name(pol[i]));
			sim_study_text(&study[i], &p, &out);
		}
		if (html) {
			strbuf_add_clean(&q, html);
			strbuf_addf(&out, "\nThe page: %s\n", q.buf);
		}
	}
	fputs(out.buf, stdout);
	ret = fflush(stdout) == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
out:
	sim_schedule_release(&sched);
	free(study);
	strbuf_release(&err);
	strbuf_release(&out);
	strbuf_release(&q);
	return ret;
}
