/*
 * qualify_burnin.c: the fabric stage's burn-in step, when every node has an active
 * InfiniBand port: the fabric's topology (qualify.topology, else ibnetdiscover on the first
 * node through srun), the allocation's share of it planned ('vigil fabric burnin plan --hosts',
 * src/fabric/plan.c), and the plan's first stage run ('vigil fabric burnin run --stage 1',
 * which takes every link of the stage's pairs and reads the ports' error counters before and
 * after). src/qualify/burnin.c turns its answer into the card.
 */
#include "cmd.h"
#include "qualify_int.h"
#include "../lib/fileio.h"
#include "../lib/json.h"
#include "../lib/run.h"

#include <string.h>

static void add_num(struct strlist *l, const char *fmt, double v)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, fmt, v);
	strlist_add(l, sb.buf);
	strbuf_release(&sb);
}

/* sb = pre + sb */
static void prefix(struct strbuf *sb, const char *pre)
{
	struct strbuf t = STRBUF_INIT;
	strbuf_addstr(&t, pre);
	strbuf_add(&t, sb->buf, sb->len);
	strbuf_reset(sb);
	strbuf_add(sb, t.buf, t.len);
	strbuf_release(&t);
}

/* Run argv within timeout_ms; 0 with its stdout in out (whatever its exit), -1 with why. */
static int run_capture(const char *const *argv, unsigned timeout_ms, size_t cap,
		       struct strbuf *out, struct strbuf *why, int *exit_code)
{
	struct child ch;
	child_init(&ch);
	ch.argv = argv;
	ch.timeout_ms = timeout_ms;
	ch.timeout_name = "the burn-in's share of the fabric stage";
	ch.out_cap = cap;
	struct strbuf err = STRBUF_INIT;
	int ret = child_run(&ch, &err);
	if (ret < 0) {
		strbuf_add(why, err.buf, err.len);
	} else if (ch.timed_out || ch.signaled) {
		child_describe(&ch, why);
		ret = -1;
	} else if (ch.out.len >= cap) {
		/* a topology or report cut at the cap would be read as a smaller one */
		strbuf_addf(why, "printed more than %zu MiB", cap >> 20);
		ret = -1;
	} else {
		strbuf_add(out, ch.out.buf, ch.out.len);
		*exit_code = ch.exit_code;
		if (ch.err.len) {
			/* the lines of its stderr on one line */
			strbuf_rtrim(&ch.err);
			for (size_t i = 0; i < ch.err.len; i++)
				if (ch.err.buf[i] == '\n')
					ch.err.buf[i] = ' ';
			strbuf_add_excerpt(why, ch.err.buf, 300);
		}
	}
	child_release(&ch);
	strbuf_release(&err);
	return ret;
}

/* The topology's file: qualify.topology, else ibnetdiscover's output on nodes[0] kept in the
 * state directory. 0 with *path, or -1 with why. */
static int topology(struct qrun *r, const char *node, unsigned timeout_ms, struct strbuf *path,
		    struct strbuf *why)
{
	const char *given = config_get(&r->cfg, "qualify", "topology");
	if (given && *given) {
		strbuf_addstr(path, given);
		return 0;
	}
	struct strbuf list = STRBUF_INIT, out = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&list, "--nodelist=%s", node);
	const char **argv = xcalloc(r->reach.nr_srun_args + 8, sizeof(*argv));
	size_t k = 0;
	for (size_t i = 0; i < r->reach.nr_srun_args; i++)
		argv[k++] = r->reach.srun_args[i];
	argv[k++] = "--nodes=1";
	argv[k++] = "--ntasks=1";
	argv[k++] = list.buf;
	argv[k++] = "ibnetdiscover";
	argv[k] = NULL;
	int code = -1, ret = -1;
	if (run_capture(argv, timeout_ms, 64u << 20, &out, &err, &code) < 0 || code != 0 ||
	    !out.len) {
		strbuf_addf(why, "no topology: ibnetdiscover on %s ", node);
		if (code > 0)
			strbuf_addf(why, "exited %d", code);
		else if (code == 0)
			strbuf_addstr(why, "printed nothing");
		else
			strbuf_addstr(why, "did not run");
		if (err.len) {
			strbuf_addstr(why, ": ");
			strbuf_add(why, err.buf, err.len);
		}
		strbuf_addstr(why, " (set qualify.topology to its output or a fat-tree file)");
		goto out;
	}
	strbuf_addf(path, "%s/topology.txt", r->dir.buf);
	strbuf_reset(&err);
	if (write_file_atomic(path->buf, out.buf, out.len, 0600, &err) < 0) {
		strbuf_addf(why, "no topology: %s", err.buf);
		goto out;
	}
	ret = 0;
out:
	free(argv);
	strbuf_release(&list);
	strbuf_release(&out);
	strbuf_release(&err);
	return ret;
}

void qualify_burnin(struct qrun *r, const char *const *nodes, size_t n, double share)
{
	struct q_card *c = &r->card;
	struct strbuf topo = STRBUF_INIT, why = STRBUF_INIT, plan_path = STRBUF_INIT;
	struct strbuf hosts = STRBUF_INIT, out = STRBUF_INIT;
	struct strlist argv = STRLIST_INIT;
	struct json_value *plan = NULL, *run = NULL;
	uint64_t t0 = mono_ms();
	int code = -1;
	if (topology(r, nodes[0], (unsigned)(share * 250), &topo, &why) < 0)
		goto not_run;

	/* the plan: the allocation's share of the fabric */
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&hosts, "%s%s", i ? "," : "", nodes[i]);
	strbuf_addf(&plan_path, "%s/burnin-plan.json", r->dir.buf);
	const char *pargv[] = { r->self, "fabric", "burnin", "plan", topo.buf, "--hosts", hosts.buf,
				"--json", "-o", plan_path.buf, NULL };
	if (run_capture(pargv, 60000, 64u << 20, &out, &why, &code) < 0 || code > 1) {
		prefix(&why, "no plan: vigil fabric burnin plan: ");
		goto not_run;
	}
	strbuf_reset(&out);
	struct strbuf err = STRBUF_INIT;
	if (read_file_bounded(plan_path.buf, &out, 256u << 20, &err) < 0 ||
	    !(plan = json_parse(out.buf, out.len, &err))) {
		strbuf_reset(&why);
		strbuf_addf(&why, "no plan: %s", err.buf);
		strbuf_release(&err);
		goto not_run;
	}
	strbuf_release(&err);
	const struct json_value *stages = json_get(plan, "stages");
	if (!stages || stages->type != JSON_ARRAY || !stages->nr) {
		strbuf_reset(&why);
		strbuf_addstr(&why, "the plan has no stage: no two of the nodes' HCAs can be paired");
		goto not_run;
	}

	/* its first stage, within what is left of the share */
	double left = share - (double)(mono_ms() - t0) / 1000.0;
	double dur = left / 3 > 60 ? 60 : left / 3 < 5 ? 5 : left / 3;
	strlist_add(&argv, r->self);
	strlist_add(&argv, "fabric");
	strlist_add(&argv, "burnin");
	strlist_add(&argv, "run");
	strlist_add(&argv, plan_path.buf);
	strlist_add(&argv, "--stage");
	strlist_add(&argv, "1");
	strlist_add(&argv, "--duration");
	add_num(&argv, "%.0f", dur);
	strlist_add(&argv, "--timeout");
	add_num(&argv, "%.0f", left - 5 > dur + 10 ? left - 5 : dur + 10);
	strlist_add(&argv, "--port");
	add_num(&argv, "%.0f", r->port + 200);
	strlist_add(&argv, "--vigil");
	strlist_add(&argv, r->reach.vigil);
	strlist_add(&argv, "--json");
	if (r->a->config) {
		strlist_add(&argv, "--config");
		strlist_add(&argv, r->a->config);
	}
	for (size_t i = 0; i < r->a->sets.nr; i++) {
		strlist_add(&argv, "-c");
		strlist_add(&argv, r->a->sets.items[i]);
	}
	qualify_say("fabric: burn-in stage 1 of %zu of the nodes' share of the fabric, %.0f s "
		    "a pair", stages->nr, dur);
	strbuf_reset(&out);
	strbuf_reset(&why);
	int rc = run_capture((const char *const *)argv.items,
			     (unsigned)((left > dur + 20 ? left : dur + 20) * 1000), 64u << 20, &out,
			     &why, &code);
	run = rc == 0 ? json_parse(out.buf, out.len, NULL) : NULL;
	if (!run || !json_get_string(run, "verdict")) {
		if (!why.len)
			strbuf_addstr(&why, "no report");
		prefix(&why, "vigil fabric burnin run: ");
		goto not_run;
	}
	q_burnin_apply(c, plan, run, plan_path.buf);
	qualify_say("fabric: burn-in: %s",
		    json_get_string(c->burnin, "reason") ? json_get_string(c->burnin, "reason")
							   : "?");
	goto out;
not_run:
	q_burnin_not_run(c, why.buf);
	qualify_say("fabric: burn-in not run: %s", why.buf);
out:
	json_free(plan);
	json_free(run);
	strlist_release(&argv);
	strbuf_release(&topo);
	strbuf_release(&why);
	strbuf_release(&plan_path);
	strbuf_release(&hosts);
	strbuf_release(&out);
}
