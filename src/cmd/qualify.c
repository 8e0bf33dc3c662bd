/*
 * qualify.c: 'vigil qualify', a fresh allocation judged in one command: options, the plan, the
 * stages one after the other within the budget, progress on stderr, the scorecard (text on
 * stdout, --json, --html), --drain, --compare and --resume. The stages' work is src/qualify/
 * (stage.c runs the rounds through the fleet engine; figures.c and scorecard.c make the card).
 */
#include "cmd.h"
#include "common.h"
#include "config_keys.h"
#include "../lib/fileio.h"
#include "../lib/run.h"
#include "../lib/strlist.h"
#include "../qualify/card.h"
#include "../qualify/train.h"
#include "qualify_int.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static const char qualify_usage[] =
	"usage: vigil qualify [--budget MINUTES] [--stages LIST] [--storage DIR] [--train CMD]\n"
	"                     [--train-groups N|size=K|switch] [--drain] [--json FILE]\n"
	"                     [--html FILE] [--compare OLD.json] [--compare-json FILE]\n"
	"                     [--resume DIR] [--dir DIR]\n"
	"       vigil qualify --from CARD.json [--compare OLD.json [--compare-json FILE]]\n"
	"                     [--json FILE] [--html FILE]\n"
	"\n"
	"Judge a fresh Slurm allocation in one command, from inside it (sbatch or salloc): which\n"
	"nodes to keep, which to drain or hand back, and a scorecard to compare with the last\n"
	"cluster. The stages, in order, each with its share of the budget (printed first):\n"
	"  passive  'vigil check' on every node\n"
	"  node     'vigil check --deep' on every node at once: verified GEMM, HBM, memory\n"
	"           patterns, NVLink pairs, NCCL inside the node\n"
	"  fabric   InfiniBand pairs ('vigil net ib') when every node has ports; NCCL all_reduce\n"
	"           and all_gather across 2, 4, 8 ... all the nodes, one task a GPU: busbw\n"
	"           against the node count and where it falls off\n"
	"  storage  'vigil stress storage' on --storage DIR from every node at once: bandwidth,\n"
	"           fsync latency, metadata, stalls (needs --storage)\n"
	"  train    a short real job through 'vigil run' (needs --train): step time,\n"
	"           tokens/s (when the trainer's step lines count tokens) and MFU\n"
	"A node that fails a stage is named with its action (and drained with --drain, reason\n"
	"\"vigil: qualify: STAGE: ...\"); a node slower than the median of its peers by more than\n"
	"qualify.outlier-margin in any figure is named an outlier.\n"
	"\n"
	"  --budget MINUTES    wall time for everything (default 30; decimals allowed)\n"
	"  --stages LIST       stages to run (default passive,node,fabric and storage with\n"
	"                      --storage, train with --train)\n"
	"  --storage DIR       the shared file system to test (each node writes under it)\n"
	"  --train CMD         the training command, words split on blanks (no shell)\n"
	"  --train-groups N|size=K|switch  half of the train stage runs CMD on each group of\n"
	"                      nodes at once: N groups of consecutive nodes, groups of K nodes (a\n"
	"                      trainer of a fixed size), or one a leaf switch (Slurm's topology);\n"
	"                      a slow group's nodes are outliers in train_step_s\n"
	"  --gpus-per-node N   tasks a node in the fabric stage (default: the GPUs the node\n"
	"                      stage found on the node with the fewest)\n"
	"  --drain             drain the nodes that failed (slurm.on-unknown for the others)\n"
	"  --json FILE         write the scorecard as JSON (- for stdout)\n"
	"  --html FILE         write the scorecard as one self-contained page (with --compare,\n"
	"                      the comparison too)\n"
	"  --compare OLD.json  compare the scorecard with an older one, figure by figure (a\n"
	"                      text table on stdout)\n"
	"  --compare-json FILE write the comparison as JSON (- for stdout, instead of the\n"
	"                      table); needs --compare\n"
	"  --dir DIR           where each finished stage is kept (default\n"
	"                      ./vigil-qualify-$SLURM_JOB_ID)\n"
	"  --resume DIR        continue a qualify cut short: the stages kept in DIR are not run\n"
	"                      again\n"
	"  --from CARD.json    no run: print, compare or render a scorecard written before\n"
	"  --config FILE       configuration file (default /etc/vigil/vigil.conf)\n"
	"  -c, --set SEC.KEY=VALUE  one configuration setting (repeatable)\n"
	"\n"
	"Ctrl-C, SIGTERM or the budget running out stop the stage that runs: the partial\n"
	"scorecard is written, with what was not run and why; --resume DIR continues.\n"
	"\n"
	"Exit status:\n"
	"  0  every node passed every stage, and every stage ran\n"
	"  1  a node failed a stage (the scorecard names it and its action)\n"
	"  2  usage error, outside an allocation, --storage unusable, budget too small\n"
	"  3  could not tell: a node unreachable or unknown in a stage, or the run cut short\n";

enum { QOPT_BUDGET = 256, QOPT_STAGES, QOPT_STORAGE, QOPT_TRAIN, QOPT_DRAIN, QOPT_JSON,
       QOPT_HTML, QOPT_COMPARE, QOPT_RESUME, QOPT_DIR, QOPT_FROM, QOPT_GPN, QOPT_CONFIG,
       QOPT_COMPARE_JSON, QOPT_TRAIN_GROUPS };

static const struct option qualify_opts[] = {
	{ "budget", required_argument, NULL, QOPT_BUDGET },
	{ "stages", required_argument, NULL, QOPT_STAGES },
	{ "storage", required_argument, NULL, QOPT_STORAGE },
	{ "train", required_argument, NULL, QOPT_TRAIN },
	{ "train-groups", required_argument, NULL, QOPT_TRAIN_GROUPS },
	{ "gpus-per-node", required_argument, NULL, QOPT_GPN },
	{ "drain", no_argument, NULL, QOPT_DRAIN },
	{ "json", required_argument, NULL, QOPT_JSON },
	{ "html", required_argument, NULL, QOPT_HTML },
	{ "compare", required_argument, NULL, QOPT_COMPARE },
	{ "compare-json", required_argument, NULL, QOPT_COMPARE_JSON },
	{ "resume", required_argument, NULL, QOPT_RESUME },
	{ "dir", required_argument, NULL, QOPT_DIR },
	{ "from", required_argument, NULL, QOPT_FROM },
	{ "config", required_argument, NULL, QOPT_CONFIG },
	{ "set", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

volatile sig_atomic_t qualify_stop;

static void on_stop(int sig)
{
	/* The first: TERM to the running step's srun, which passes it to the tasks and ends the
	 * step (so no task of a cut stage holds its node's CPUs from a --resume's steps); the
	 * stage then returns as usual and the partial card is written. A second: KILL. */
	run_signal_all(qualify_stop ? SIGKILL : SIGTERM);
	qualify_stop = sig;
}

static int parse(int argc, char **argv, struct qargs *a)
{
	int c;
	struct strbuf err = STRBUF_INIT;
	uint64_t v;
	a->budget_s = 1800;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:c:h", qualify_opts, NULL)) != -1) {
		switch (c) {
		case QOPT_BUDGET: {
			char *end;
			errno = 0;
			double m = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(m) || m <= 0 || m > 10080) {
				usage_error("qualify", "--budget wants minutes from 0 to 10080, not "
						       "'%s'", optarg);
				return -1;
			}
			a->budget_s = m * 60;
			break;
		}
		case QOPT_STAGES:
			if (q_parse_stages(optarg, a->asked, &err) < 0) {
				usage_error("qualify", "--stages: %s", err.buf);
				strbuf_release(&err);
				return -1;
			}
			a->stages_given = true;
			break;
		case QOPT_STORAGE: a->storage = optarg; break;
		case QOPT_TRAIN: a->train = optarg; break;
		case QOPT_TRAIN_GROUPS:
			if (strcmp(optarg, "switch") &&
			    (!starts_with(optarg, "size=") || !parse_u64(optarg + 5, &v) || !v ||
			     v > 65536) &&
			    (!parse_u64(optarg, &v) || v < 2 || v > Q_TRAIN_GROUPS_MAX)) {
				usage_error("qualify", "--train-groups wants a count from 2 to %d, "
						       "'size=K' (groups of K nodes) or 'switch', not "
						       "'%s'", Q_TRAIN_GROUPS_MAX, optarg);
				return -1;
			}
			a->train_groups = optarg;
			break;
		case QOPT_GPN:
			if (!parse_u64(optarg, &v) || !v || v > 64) {
				usage_error("qualify", "--gpus-per-node wants 1 to 64");
				return -1;
			}
			a->gpn = (unsigned)v;
			break;
		case QOPT_DRAIN: a->drain = true; break;
		case QOPT_JSON: a->json = optarg; break;
		case QOPT_HTML: a->html = optarg; break;
		case QOPT_COMPARE: a->compare = optarg; break;
		case QOPT_COMPARE_JSON: a->compare_json = optarg; break;
		case QOPT_RESUME: a->resume = optarg; break;
		case QOPT_DIR: a->dir = optarg; break;
		case QOPT_FROM: a->from = optarg; break;
		case QOPT_CONFIG: a->config = optarg; break;
		case 'c': strlist_add(&a->sets, optarg); break;
		case 'h': return 1;
		case ':':
			usage_error("qualify", "option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			usage_error("qualify", "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		usage_error("qualify", "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (a->compare_json && !a->compare) {
		usage_error("qualify", "--compare-json FILE needs --compare OLD.json");
		return -1;
	}
	if (a->compare_json && a->json && !strcmp(a->compare_json, "-") && !strcmp(a->json, "-")) {
		usage_error("qualify", "--json - and --compare-json - cannot both have stdout");
		return -1;
	}
	if (a->resume && a->dir) {
		usage_error("qualify", "--resume DIR is the directory: not with --dir");
		return -1;
	}
	if (!a->stages_given) {
		a->asked[Q_PASSIVE] = a->asked[Q_NODE] = a->asked[Q_FABRIC] = true;
		a->asked[Q_STORAGE] = a->storage != NULL;
		a->asked[Q_TRAIN] = a->train != NULL;
	}
	if (a->asked[Q_STORAGE] && !a->storage) {
		usage_error("qualify", "the storage stage needs --storage DIR");
		return -1;
	}
	if (a->asked[Q_TRAIN] && !a->train) {
		usage_error("qualify", "the train stage needs --train CMD");
		return -1;
	}
	if (a->train_groups && !a->train) {
		usage_error("qualify", "--train-groups needs --train CMD");
		return -1;
	}
	return 0;
}

/* ---- output files ---- */

static int write_out(const char *path, const struct strbuf *sb)
{
	struct strbuf err = STRBUF_INIT;
	int ret = 0;
	if (!strcmp(path, "-")) {
		fwrite(sb->buf, 1, sb->len, stdout);
	} else if (write_file_atomic(path, sb->buf, sb->len, 0644, &err) < 0) {
		fprintf(stderr, "vigil qualify: %s\n", err.buf);
		ret = -1;
	}
	strbuf_release(&err);
	return ret;
}

static struct json_value *load_card(const char *path, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, perr = STRBUF_INIT;
	struct json_value *v = NULL;
	if (read_file_bounded(path, &text, 64u << 20, err) == 0) {
		v = json_parse(text.buf, text.len, &perr);
		if (!v)
			error_set(err, "%s: not JSON (%s)", path, perr.buf);
	}
	strbuf_release(&text);
	strbuf_release(&perr);
	return v;
}

/* The card's files and the comparison: JSON, HTML (with the comparison when --compare), the
 * comparison's table on stdout or its JSON (--compare-json). The card is passed as its JSON text
 * so that a card made now and one loaded with --from go the same way. An old card that cannot
 * be read is said, and the rest is written all the same (the page without the comparison). */
static int outputs(const struct qargs *a, const struct strbuf *card_json)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	struct json_value *old = NULL;
	int ret = 0;
	struct json_value *card = json_parse(card_json->buf, card_json->len, &err);
	if (!card) {
		fprintf(stderr, "vigil qualify: the scorecard is not JSON: %s\n", err.buf);
		ret = -1;
		goto out;
	}
	if (a->json && write_out(a->json, card_json) < 0)
		ret = -1;
	if (a->compare) {
		old = load_card(a->compare, &err);
		if (old && qualify_card_check(old, &out) < 0) {
			struct strbuf path = STRBUF_INIT;
			strbuf_add_clean(&path, a->compare);
			error_set(&err, "%s %s", path.buf, out.buf);
			strbuf_release(&path);
			json_free(old);
			old = NULL;
		}
		if (!old) {
			fprintf(stderr, "vigil qualify: --compare: %s\n", err.buf);
			ret = -1;
		}
		strbuf_reset(&out);
	}
	if (a->html) {
		if (qualify_html(card, old, &out, &err) < 0) {
			fprintf(stderr, "vigil qualify: --html: %s\n", err.buf);
			ret = -1;
		} else if (write_out(a->html, &out) < 0) {
			ret = -1;
		}
	}
	/* stdout carries one thing: JSON asked for there (the card's or the comparison's), or the
	 * text; the table would break the JSON */
	bool json_on_stdout = (a->compare_json && !strcmp(a->compare_json, "-")) ||
			      (a->json && !strcmp(a->json, "-"));
	if (old && json_on_stdout && !a->compare_json)
		fprintf(stderr, "vigil qualify: --compare: no table with --json - (stdout is the "
				"card's JSON): --compare-json FILE writes the comparison\n");
	if (old && !json_on_stdout) {
		strbuf_reset(&out);
		if (qualify_compare(old, card, false, &out, &err) < 0) {
			fprintf(stderr, "vigil qualify: --compare: %s\n", err.buf);
			ret = -1;
		} else {
			fputs("\n", stdout);
			fwrite(out.buf, 1, out.len, stdout);
		}
	}
	if (old && a->compare_json) {
		strbuf_reset(&out);
		if (qualify_compare(old, card, true, &out, &err) < 0) {
			fprintf(stderr, "vigil qualify: --compare-json: %s\n", err.buf);
			ret = -1;
		} else if (write_out(a->compare_json, &out) < 0) {
			ret = -1;
		}
	}
out:
	json_free(card);
	json_free(old);
	strbuf_release(&err);
	strbuf_release(&out);
	return ret;
}

/* --from: a card written before, printed again (its verdict line), compared or rendered. */
static int from_card(const struct qargs *a)
{
	struct strbuf err = STRBUF_INIT, text = STRBUF_INIT;
	int ret = EXIT_USAGE;
	if (read_file_bounded(a->from, &text, 64u << 20, &err) < 0) {
		fprintf(stderr, "vigil qualify: %s\n", err.buf);
		goto out;
	}
	struct json_value *v = json_parse(text.buf, text.len, &err);
	const char *kind = v ? json_get_string(v, "kind") : NULL;
	double code = 3;
	if (!kind || strcmp(kind, "qualify")) {
		fprintf(stderr, "vigil qualify: %s is not a vigil qualify scorecard%s%s\n", a->from,
			v ? "" : ": ", v ? "" : err.buf);
		json_free(v);
		goto out;
	}
	json_get_number(v, "exit_code", &code);
	if (!a->json && !a->html && !a->compare) {
		struct strbuf line = STRBUF_INIT;
		strbuf_addf(&line, "verdict: %s: ", str_or(json_get_string(v, "verdict"), "unknown"));
		strbuf_add_clean(&line, str_or(json_get_string(v, "reason"), ""));
		printf("%s\n", line.buf);
		strbuf_release(&line);
	}
	json_free(v);
	ret = outputs(a, &text) < 0 ? EXIT_UNKNOWN : (int)code;
out:
	strbuf_release(&err);
	strbuf_release(&text);
	return ret;
}

/* ---- the state directory ---- */

static void stage_path(const struct qrun *r, enum q_stage s, struct strbuf *p)
{
	strbuf_reset(p);
	strbuf_addf(p, "%s/%s.json", r->dir.buf, q_stage_name(s));
}

/* A stage kept by an earlier run (--resume): true when loaded. */
static bool load_kept(struct qrun *r, enum q_stage s)
{
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
	bool ok = false;
	stage_path(r, s, &p);
	if (access(p.buf, F_OK) == 0) {
		if (read_file_bounded(p.buf, &text, 256u << 20, &err) < 0 ||
		    q_stage_load(&r->card, text.buf, text.len, s, &err) < 0)
			qualify_say("%s: the kept stage cannot be used (%s): it runs again", p.buf, err.buf);
		else
			ok = true;
	}
	strbuf_release(&p);
	strbuf_release(&text);
	strbuf_release(&err);
	return ok;
}

static void save_stage(struct qrun *r, enum q_stage s)
{
	struct strbuf p = STRBUF_INIT, doc = STRBUF_INIT, err = STRBUF_INIT;
	stage_path(r, s, &p);
	q_stage_save(&r->card, s, &doc);
	if (write_file_atomic(p.buf, doc.buf, doc.len, 0640, &err) < 0)
		qualify_say("cannot keep the %s stage for --resume: %s", q_stage_name(s), err.buf);
	strbuf_release(&p);
	strbuf_release(&doc);
	strbuf_release(&err);
}

/* The state directory must be a directory of ours that nobody else can write: what --resume
 * finds there is believed (a stage kept as passed is not run again), so a directory where
 * another user could plant a stage's record is refused, as is a link. */
static int dir_ours(const char *path)
{
	struct stat st;
	const char *why = NULL;
	if (lstat(path, &st) < 0)
		why = errno == ENOENT ? "it does not exist" : strerror(errno);
	else if (S_ISLNK(st.st_mode))
		why = "it is a symbolic link";
	else if (!S_ISDIR(st.st_mode))
		why = "it is not a directory";
	else if (st.st_uid != geteuid())
		why = "it belongs to another user";
	else if (st.st_mode & 022)
		why = "others can write to it (what is kept there is believed by --resume)";
	if (!why)
		return 0;
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_clean(&sb, path);
	fprintf(stderr, "vigil qualify: state directory %s: %s\n", sb.buf, why);
	strbuf_release(&sb);
	return -1;
}

static int state_dir(struct qrun *r, const char *job)
{
	struct strbuf err = STRBUF_INIT;
	const char *d = r->a->resume ? r->a->resume : r->a->dir;
	if (d)
		strbuf_addstr(&r->dir, d);
	else
		strbuf_addf(&r->dir, "vigil-qualify-%s", job);
	if (r->a->resume)
		return dir_ours(r->dir.buf);
	if (mkdir_state_dir(r->dir.buf, 0750, &err) < 0) {
		fprintf(stderr, "vigil qualify: %s\n", err.buf);
		strbuf_release(&err);
		return -1;
	}
	return dir_ours(r->dir.buf);
}

/* --storage: the directory each node writes under, checked here first (the login node sees
 * the shared file system too): a link, not a directory or not writable is refused. */
static int storage_ok(const char *dir)
{
	struct stat st;
	const char *why = NULL;
	if (lstat(dir, &st) < 0)
		why = errno == ENOENT ? "it does not exist" : strerror(errno);
	else if (S_ISLNK(st.st_mode))
		why = "it is a symbolic link (give the directory it points to)";
	else if (!S_ISDIR(st.st_mode))
		why = "it is not a directory";
	else if (access(dir, W_OK | X_OK) < 0)
		why = "it is not writable";
	if (!why)
		return 0;
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_clean(&sb, dir);
	fprintf(stderr, "vigil qualify: --storage %s: %s\n", sb.buf, why);
	strbuf_release(&sb);
	return -1;
}

/* ---- setup ---- */

/* The configuration first, so a mistake in it is said before anything else is looked at. */
static int load_config(struct qrun *r)
{
	struct strbuf err = STRBUF_INIT;
	int ret = -1;
	const char *path = r->a->config ? r->a->config : getenv("VIGIL_CONFIG");
	if (config_load_file(&r->cfg, path && *path ? path : "/etc/vigil/vigil.conf",
			     !(path && *path), &err) < 0)
		goto bad;
	for (size_t i = 0; i < r->a->sets.nr; i++)
		if (config_set(&r->cfg, r->a->sets.items[i], &err) < 0)
			goto bad;
	uint64_t writers, stall, size, port, mport;
	double margin, expect, floor;
	bool one_step;
	if (config_keys_validate(&r->cfg, &err) < 0 ||
	    config_get_bool(&r->cfg, "fleet", "one-step", true, &one_step, &err) < 0 ||
	    config_get_u64(&r->cfg, "qualify", "storage-size", 4ull << 30, &size, &err) < 0 ||
	    config_get_u64(&r->cfg, "qualify", "storage-writers", 8, &writers, &err) < 0 ||
	    config_get_u64(&r->cfg, "qualify", "stall-ms", 10000, &stall, &err) < 0 ||
	    config_get_u64(&r->cfg, "qualify", "port", 29650, &port, &err) < 0 ||
	    config_get_u64(&r->cfg, "run", "master-port", 29500, &mport, &err) < 0 ||
	    config_get_double(&r->cfg, "qualify", "outlier-margin", 0.10, &margin, &err) < 0 ||
	    config_get_double(&r->cfg, "qualify", "expected-busbw", 0, &expect, &err) < 0 ||
	    config_get_double(&r->cfg, "qualify", "busbw-floor", 0.8, &floor, &err) < 0 ||
	    slurm_cmds_from_config(&r->cfg, &r->cmds, &err) < 0 ||
	    slurm_policy_from_config(&r->cfg, &r->pol, &err) < 0)
		goto bad;
	r->storage_size = size;
	r->storage_writers = (unsigned)writers;
	r->stall_ms = (unsigned)stall;
	r->port = (unsigned)port;
	r->master_port = (unsigned)mport;
	r->card.outlier_margin = margin;
	r->one_step = one_step;
	r->expect = expect;
	r->floor = floor;
	ret = 0;
	goto out;
bad:
	fprintf(stderr, "vigil qualify: %s\n", err.buf);
out:
	strbuf_release(&err);
	return ret;
}

static int setup(struct qrun *r, const char *job, const char *nodelist)
{
	struct strbuf err = STRBUF_INIT, tmp = STRBUF_INIT;
	struct slurm_nodes list = { 0 };
	int ret = -1;
	if (slurm_nodes_list(&r->cmds, nodelist, &list, &err) < 0) {
		strbuf_reset(&tmp);
		strbuf_addf(&tmp, "cannot list the allocation's nodes: %s", err.buf);
		strbuf_reset(&err);
		strbuf_addstr(&err, tmp.buf);
		goto bad;
	}
	for (size_t i = 0; i < list.nr; i++) {
		if (!slurm_node_name_ok(list.items[i].name)) {
			strbuf_add_clean(&tmp, list.items[i].name);
			error_set(&err, "node name '%s' refused", tmp.buf);
			goto bad;
		}
		q_card_add_node(&r->card, list.items[i].name);
	}
	if (!r->card.nr) {
		error_set(&err, "the allocation has no nodes Slurm knows");
		goto bad;
	}
	const char *cmd = config_get(&r->cfg, "fleet", "command");
	ssize_t n = readlink("/proc/self/exe", r->self, sizeof(r->self) - 1);
	r->self[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		strlcpy_v(r->self, "vigil", sizeof(r->self));
	strlist_add(&r->srun, r->cmds.srun);
	strlist_add(&r->srun, "--nodes=1");
	strlist_add(&r->srun, "--ntasks=1");
	strlist_add(&r->srun, "--job-name=vigil-qualify");
	strlist_add(&r->srun, "--quiet");
	const char **extra;
	size_t nr_extra = config_get_all(&r->cfg, "fleet", "srun-arg", &extra);
	for (size_t i = 0; i < nr_extra; i++)
		strlist_add(&r->srun, extra[i]);
	free(extra);
	r->reach = (struct q_reach){
		.cmds = &r->cmds,
		.srun_args = (const char *const *)r->srun.items,
		.nr_srun_args = r->srun.nr,
		.vigil = cmd ? cmd : r->self,
		.one_step = r->one_step,
		.expected_busbw_gbps = r->expect,
		.busbw_floor = r->floor,
		.stop = &qualify_stop,
	};
	r->card.job_id = xstrdup(job);
	const char *cl = getenv("SLURM_CLUSTER_NAME");
	r->card.cluster = xstrdup(cl && str_is_clean(cl) ? cl : "");
	ret = 0;
	goto out;
bad:
	fprintf(stderr, "vigil qualify: %s\n", err.buf);
out:
	slurm_nodes_release(&list);
	strbuf_release(&err);
	strbuf_release(&tmp);
	return ret;
}

static const char *const what[Q_NR_STAGES] = {
	"vigil check on every node",
	"stress gpu, GPU pairs and NCCL inside each node, all nodes at once",
	"InfiniBand pairs (where every node has ports), NCCL across 2, 4 ... all nodes",
	"vigil stress storage from every node at once",
	"a short job through vigil run",
};

static void print_plan(const struct qrun *r, const bool kept[Q_NR_STAGES])
{
	bool todo[Q_NR_STAGES];
	double left = r->a->budget_s;
	for (int s = 0; s < Q_NR_STAGES; s++)
		todo[s] = r->a->asked[s] && !kept[s];
	qualify_say("job %s, %zu nodes, budget %.1f min; stages kept in %s", r->card.job_id, r->card.nr,
	    r->a->budget_s / 60, r->dir.buf);
	for (int s = 0; s < Q_NR_STAGES; s++) {
		if (!r->a->asked[s]) {
			qualify_say("  %-8s skipped (%s)", q_stage_name(s),
			    s == Q_STORAGE ? "no --storage" : s == Q_TRAIN ? "no --train"
									: "not in --stages");
			continue;
		}
		if (kept[s]) {
			qualify_say("  %-8s kept from the run resumed", q_stage_name(s));
			continue;
		}
		double share = q_stage_share((enum q_stage)s, todo, left);
		left -= share;
		qualify_say("  %-8s up to %4.0f s  %s", q_stage_name(s), share, what[s]);
	}
}

static void not_run(struct q_card *c, enum q_stage s, const char *fmt, ...) PRINTF_LIKE(3, 4);
static void not_run(struct q_card *c, enum q_stage s, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	free(c->not_run_why[s]);
	c->not_run_why[s] = strbuf_detach(&sb, NULL);
	c->stages[s].st = Q_NOT_RUN;
	c->complete = false;
	/* what the stage's nodes said before it was cut is not kept: half a round is no answer */
	for (size_t i = 0; i < c->nr; i++)
		q_node_set(&c->nodes[i], s, Q_NOT_RUN, NULL, NULL);
	if (s == Q_FABRIC) {
		for (size_t i = 0; i < c->nr_nccl; i++)
			free(c->nccl[i].reason);
		c->nr_nccl = 0;
	}
}

static void run_stages(struct qrun *r, const bool kept[Q_NR_STAGES])
{
	struct q_card *c = &r->card;
	bool todo[Q_NR_STAGES];
	int nth = 0, total = 0;
	for (int s = 0; s < Q_NR_STAGES; s++) {
		todo[s] = r->a->asked[s] && !kept[s];
		total += r->a->asked[s];
	}
	for (int s = 0; s < Q_NR_STAGES; s++) {
		if (!r->a->asked[s])
			continue;
		nth++;
		if (kept[s])
			continue;
		double left = r->a->budget_s - qualify_elapsed_s(r);
		double share = q_stage_share((enum q_stage)s, todo, left);
		todo[s] = false;
		if (qualify_stop) {
			not_run(c, s, "not started: stopped by %s", strsignal(qualify_stop));
			continue;
		}
		if (share <= 0) {
			not_run(c, s, "the budget ran out: %.0f s left, the stage needs %.0f s",
				left > 0 ? left : 0, q_stage_min_s[s]);
			qualify_say("[%d/%d] %s: not run: %s", nth, total, q_stage_name(s),
			    c->not_run_why[s]);
			continue;
		}
		qualify_say("[%d/%d] %s: started (up to %.0f s)", nth, total, q_stage_name(s), share);
		uint64_t t0 = mono_ms();
		c->stages[s].budget_s = share;
		qualify_stage_run(r, (enum q_stage)s, share);
		c->stages[s].wall_s = (double)(mono_ms() - t0) / 1000.0;
		if (qualify_stop) {
			not_run(c, s, "interrupted by %s after %.0f s", strsignal(qualify_stop),
				c->stages[s].wall_s);
			qualify_say("[%d/%d] %s: %s", nth, total, q_stage_name(s), c->not_run_why[s]);
			continue;
		}
		save_stage(r, s);
		double rest = r->a->budget_s - qualify_elapsed_s(r);
		/* the later stages take at most what is left of the budget: the estimate of the
		 * rest is that bound (a stage ends early when its nodes answer early) */
		qualify_say("[%d/%d] %s: %s in %.0f s: %s; %.0f s in, the rest at most %.0f s", nth,
			    total, q_stage_name(s), q_status_name(c->stages[s].st),
			    c->stages[s].wall_s, c->stages[s].reason ? c->stages[s].reason : "",
			    qualify_elapsed_s(r), rest > 0 ? rest : 0);
	}
}

static int qualify_run(struct qrun *r)
{
	struct qargs *a = r->a;
	if (load_config(r) < 0)
		return EXIT_USAGE;
	const char *job = getenv("SLURM_JOB_ID");
	const char *nodelist = getenv("SLURM_JOB_NODELIST");
	if (!nodelist || !*nodelist)
		nodelist = getenv("SLURM_NODELIST");
	if (!job || !*job || !nodelist || !*nodelist || strspn(job, "0123456789") != strlen(job)) {
		fprintf(stderr, "vigil qualify: not inside a Slurm allocation (SLURM_JOB_ID and "
				"SLURM_JOB_NODELIST are not set): run it under salloc or sbatch, "
				"over the nodes to qualify\n");
		return EXIT_USAGE;
	}
	struct strbuf err = STRBUF_INIT;
	if (q_plan_check(a->asked, a->budget_s, &err) < 0) {
		fprintf(stderr, "vigil qualify: %s\n", err.buf);
		strbuf_release(&err);
		return EXIT_USAGE;
	}
	strbuf_release(&err);
	if (a->asked[Q_STORAGE] && storage_ok(a->storage) < 0)
		return EXIT_USAGE;
	if (state_dir(r, job) < 0 || setup(r, job, nodelist) < 0)
		return EXIT_USAGE;

	bool kept[Q_NR_STAGES] = { false };
	for (int s = 0; s < Q_NR_STAGES; s++) {
		r->card.asked[s] = a->asked[s];
		if (!a->asked[s])
			r->card.stages[s].st = Q_SKIPPED;
		else if (a->resume)
			kept[s] = load_kept(r, (enum q_stage)s);
	}
	r->card.budget_s = a->budget_s;
	r->card.drain = a->drain;
	r->card.started = time(NULL);
	print_plan(r, kept);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	run_stages(r, kept);
	q_figures(&r->card);
	if (a->drain)
		qualify_drain(r);
	r->card.wall_s = qualify_elapsed_s(r);

	struct strbuf card = STRBUF_INIT, text = STRBUF_INIT;
	q_card_json(&r->card, &card);
	/* stdout carries one thing: the card's text, or the JSON asked for there */
	if ((!a->json || strcmp(a->json, "-")) &&
	    (!a->compare_json || strcmp(a->compare_json, "-"))) {
		q_card_text(&r->card, &text);
		fwrite(text.buf, 1, text.len, stdout);
	}
	struct strbuf reason = STRBUF_INIT;
	int code = q_card_verdict(&r->card, &reason);
	if (outputs(a, &card) < 0 && code == EXIT_HEALTHY)
		code = EXIT_UNKNOWN;
	if (fflush(stdout) != 0 && code == EXIT_HEALTHY)
		code = EXIT_UNKNOWN;
	strbuf_release(&card);
	strbuf_release(&text);
	strbuf_release(&reason);
	return code;
}

int cmd_qualify(int argc, char **argv)
{
	struct qargs a;
	memset(&a, 0, sizeof(a));
	int p = parse(argc, argv, &a), ret;
	if (p != 0) {
		if (p > 0)
			fputs(qualify_usage, stdout);
		strlist_release(&a.sets);
		return p > 0 ? EXIT_HEALTHY : EXIT_USAGE;
	}
	if (a.from) {
		ret = from_card(&a);
		strlist_release(&a.sets);
		return ret;
	}
	struct qrun r;
	memset(&r, 0, sizeof(r));
	r.a = &a;
	r.t0 = mono_ms();
	config_init(&r.cfg, "");
	strbuf_init(&r.dir, 0);
	q_card_init(&r.card);
	ret = qualify_run(&r);
	q_card_release(&r.card);
	config_release(&r.cfg);
	strlist_release(&r.srun);
	strbuf_release(&r.dir);
	strlist_release(&a.sets);
	return ret;
}
