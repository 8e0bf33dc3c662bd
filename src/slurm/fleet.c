/* fleet.c: srun per node in one poll loop, the node policy, the fleet's table and JSON (see
 * fleet.h). */
#include "fleet.h"
#include "fleet_step.h"
#include "../lib/json.h"
#include "../lib/run_group.h"
#include "../lib/strlist.h"

static const char *const row_names[] = { "healthy", "unhealthy", "unknown", "unreachable" };

/* States in which Slurm will not start a task on the node. */
#define NOT_RUNNABLE (NODE_DRAIN | NODE_DOWN | NODE_NOT_RESPONDING | NODE_MAINT | NODE_REBOOT | \
		      NODE_POWER | NODE_FUTURE | NODE_FAIL | NODE_UNKNOWN)

void fleet_row_set(struct fleet_row *r, enum fleet_verdict v, const char *fmt, ...)
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
	return strcmp(((const struct fleet_row *)a)->node.name,
		      ((const struct fleet_row *)b)->node.name);
}

size_t fleet_rows(struct fleet *f, struct slurm_nodes *list, const char *partition)
{
	f->rows = xcalloc(list->nr ? list->nr : 1, sizeof(*f->rows));
	f->nr = 0;
	for (size_t i = 0; i < list->nr; i++) {
		if (partition && !in_partition(&list->items[i], partition))
			continue;
		struct fleet_row *r = &f->rows[f->nr++];
		r->node = list->items[i];
		memset(&list->items[i], 0, sizeof(list->items[i]));
		if (!slurm_node_name_ok(r->node.name))
			fleet_row_set(r, FLEET_UNREACHABLE, "not checked: node name '%s' refused",
				r->node.name);
		else if (r->node.flags & NOT_RUNNABLE)
			fleet_row_set(r, FLEET_UNREACHABLE, "not checked (%s)%s%s",
				slurm_state_short(r->node.flags), *r->node.reason ? ": " : "",
				r->node.reason);
		else
			r->run = true;
	}
	if (f->nr)
		qsort(f->rows, f->nr, sizeof(*f->rows), row_cmp);
	return f->nr;
}

const char **fleet_argv(const struct fleet_plan *p, const char *node, struct strbuf *nodelist)
{
	size_t n = 0, max = p->nr_srun_args + p->nr_remote + 4;
	const char **argv = xcalloc(max, sizeof(*argv));
	strbuf_reset(nodelist);
	strbuf_addf(nodelist, "--nodelist=%s", node);
	argv[n++] = p->srun_args[0];
	argv[n++] = nodelist->buf;
	for (size_t i = 1; i < p->nr_srun_args; i++)
		argv[n++] = p->srun_args[i];
	for (size_t i = 0; i < p->nr_remote; i++)
		argv[n++] = p->remote[i];
	argv[n++] = "--host";
	argv[n++] = node;
	argv[n] = NULL;
	return argv;
}

/* What srun said last on stderr: the cause, when it failed. */
static void last_line(struct strbuf *sb, struct strbuf *out)
{
	strbuf_rtrim(sb);
	const char *nl = strrchr(sb->buf, '\n');
	strbuf_addstr(out, nl ? nl + 1 : sb->buf);
}

struct fleet_job {
	struct fleet_row *row;
	struct child c;
	const char **argv;
	struct strbuf nodelist;
	unsigned timeout_ms;
};

static void job_done(struct child *c, const char *start_error, void *arg)
{
	struct fleet_job *j = (struct fleet_job *)((char *)c - offsetof(struct fleet_job, c));
	struct fleet_row *r = j->row;
	struct strbuf why = STRBUF_INIT, perr = STRBUF_INIT;
	UNUSED(arg);
	if (start_error) {
		fleet_row_set(r, FLEET_UNREACHABLE, "cannot run srun: %s", start_error);
		return;
	}
	r->ms = c->duration_ms;
	r->exit_code = c->exited ? c->exit_code : -1;
	if (c->timed_out) {
		fleet_row_set(r, FLEET_UNREACHABLE, "no answer within %.0f s", j->timeout_ms / 1000.0);
		return;
	}
	struct json_value *v = c->out.len ? json_parse(c->out.buf, c->out.len, &perr) : NULL;
	const char *verdict = v ? json_get_string(v, "verdict") : NULL;
	const char *reason = v ? json_get_string(v, "reason") : NULL;
	if (verdict && reason) {
		enum fleet_verdict rv = !strcmp(verdict, "healthy")     ? FLEET_HEALTHY
					: !strcmp(verdict, "unhealthy") ? FLEET_UNHEALTHY
									: FLEET_UNKNOWN;
		fleet_row_set(r, rv, "%s", reason);
		strbuf_rtrim(&c->out);
		r->report_json = xstrdup(c->out.buf);
	} else {
		last_line(&c->err, &why);
		if (!why.len)
			child_describe(c, &why);
		fleet_row_set(r, FLEET_UNREACHABLE, "%s", why.buf);
	}
	json_free(v);
	strbuf_release(&perr);
	strbuf_release(&why);
}

void fleet_run(struct fleet *f, const struct fleet_plan *p)
{
	if (p->one_step)
		fleet_step_run(f, p);
	else
		fleet_run_nodes(f, p, NULL);
}

void fleet_run_nodes(struct fleet *f, const struct fleet_plan *p, const unsigned char *pick)
{
	struct fleet_job *jobs = xcalloc(f->nr ? f->nr : 1, sizeof(*jobs));
	struct run_group g;
	run_group_init(&g, p->parallel);
	for (size_t i = 0; i < f->nr; i++) {
		struct fleet_job *j = &jobs[i];
		strbuf_init(&j->nodelist, 0);
		child_init(&j->c);
		if (!f->rows[i].run || (pick && !pick[i]))
			continue;
		if (p->stop && *p->stop) {
			fleet_row_set(&f->rows[i], FLEET_UNREACHABLE, "not checked: stopped");
			continue;
		}
		j->row = &f->rows[i];
		f->steps++;
		j->argv = fleet_argv(p, j->row->node.name, &j->nodelist);
		j->timeout_ms = p->timeout_ms;
		j->c.argv = j->argv;
		j->c.timeout_ms = p->timeout_ms;
		j->c.timeout_name = "fleet.timeout";
		j->c.out_cap = 8u << 20;
		run_group_add(&g, &j->c);
	}
	run_group_run(&g, job_done, NULL);
	run_group_release(&g);
	for (size_t i = 0; i < f->nr; i++) {
		child_release(&jobs[i].c);
		strbuf_release(&jobs[i].nodelist);
		free(jobs[i].argv);
	}
	free(jobs);
}

/* The policy on one node that answered, with its state read again just before acting. */
static void drain_one(const struct slurm_cmds *cmds, const struct slurm_policy *pol,
		      struct fleet_row *r)
{
	struct slurm_node now;
	struct strbuf err = STRBUF_INIT;
	memset(&now, 0, sizeof(now));
	if (r->verdict == FLEET_UNREACHABLE)
		return;
	enum verdict v = r->verdict == FLEET_HEALTHY     ? VERDICT_HEALTHY
			 : r->verdict == FLEET_UNHEALTHY ? VERDICT_UNHEALTHY
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

void fleet_drain(struct fleet *f, const struct slurm_cmds *cmds, const struct slurm_policy *pol)
{
	for (size_t i = 0; i < f->nr; i++)
		drain_one(cmds, pol, &f->rows[i]);
}

int fleet_exit_code(const struct fleet *f, const char **verdict)
{
	bool any_bad = false, any_unknown = false;
	for (size_t i = 0; i < f->nr; i++) {
		any_bad |= f->rows[i].verdict == FLEET_UNHEALTHY;
		any_unknown |= f->rows[i].verdict >= FLEET_UNKNOWN;
	}
	if (verdict)
		*verdict = any_bad ? "unhealthy" : any_unknown ? "unknown" : "healthy";
	return any_bad ? 1 : any_unknown ? 3 : 0;
}

void fleet_table(const struct fleet *f, bool drain, double secs, struct strbuf *out)
{
	size_t w = 4;
	size_t counts[4] = { 0 };
	for (size_t i = 0; i < f->nr; i++)
		if (strlen(f->rows[i].node.name) > w)
			w = strlen(f->rows[i].node.name);
	strbuf_addf(out, "%-*s  %-12s %-11s %7s  %s%s\n", (int)w, "NODE", "STATE", "VERDICT", "TIME",
		    drain ? "ACTION   " : "", "REASON");
	for (size_t i = 0; i < f->nr; i++) {
		const struct fleet_row *r = &f->rows[i];
		char t[16] = "-";
		if (r->run)
			snprintf(t, sizeof(t), "%.1fs", r->ms / 1000.0);
		/* node names, admins' reasons and the nodes' own answers are outside text */
		size_t at = out->len;
		strbuf_add_clean(out, r->node.name);
		strbuf_addf(out, "%*s", out->len - at < w ? (int)(w - (out->len - at)) : 0, "");
		strbuf_addf(out, "  %-12s %-11s %7s  ", slurm_state_short(r->node.flags),
			    row_names[r->verdict], t);
		if (drain)
			strbuf_addf(out, "%-9s", r->slurm_error ? "FAILED" :
					    slurm_act_name(r->decision.act));
		strbuf_add_clean(out, r->reason);
		strbuf_addch(out, '\n');
		counts[r->verdict]++;
	}
	strbuf_addf(out, "\n%zu node%s: %zu healthy, %zu unhealthy, %zu unknown, %zu unreachable "
			 "(%.1f s)\n",
		    f->nr, f->nr == 1 ? "" : "s", counts[0], counts[1], counts[2], counts[3], secs);
	for (size_t i = 0; i < f->nr; i++)
		if (f->rows[i].slurm_error) {
			strbuf_addstr(out, "slurm: ");
			strbuf_add_clean(out, f->rows[i].node.name);
			strbuf_addstr(out, ": ");
			strbuf_add_clean(out, f->rows[i].slurm_error);
			strbuf_addch(out, '\n');
		}
}

static void json_head(struct json_writer *w, const char *verdict, int code, double secs,
		      const size_t counts[4])
{
	json_open_top(w);
	json_key(w, "verdict");
	json_string(w, verdict);
	json_key(w, "exit_code");
	json_int(w, code);
	json_key(w, "duration_ms");
	json_uint(w, (uint64_t)(secs * 1000));
	json_key(w, "counts");
	json_open_object(w);
	for (int i = 0; i < 4; i++) {
		json_key(w, row_names[i]);
		json_uint(w, counts[i]);
	}
	json_close_object(w);
}

void fleet_json_error(const char *error, int exit_code, struct strbuf *out)
{
	struct json_writer w;
	const size_t counts[4] = { 0 };
	json_writer_init(&w, out, false);
	json_head(&w, "unknown", exit_code, 0, counts);
	json_key(&w, "error");
	json_string(&w, error);
	json_key(&w, "nodes");
	json_open_array(&w);
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

void fleet_json(const struct fleet *f, bool drain, double secs, struct strbuf *out)
{
	struct json_writer w;
	size_t counts[4] = { 0 };
	const char *verdict;
	int code = fleet_exit_code(f, &verdict);
	for (size_t i = 0; i < f->nr; i++)
		counts[f->rows[i].verdict]++;
	json_writer_init(&w, out, false);
	json_head(&w, verdict, code, secs, counts);
	json_key(&w, "nodes");
	json_open_array(&w);
	for (size_t i = 0; i < f->nr; i++) {
		const struct fleet_row *r = &f->rows[i];
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

void fleet_release(struct fleet *f)
{
	for (size_t i = 0; i < f->nr; i++) {
		slurm_node_release(&f->rows[i].node);
		free(f->rows[i].reason);
		free(f->rows[i].report_json);
		free(f->rows[i].slurm_error);
	}
	free(f->rows);
	free(f->note);
	memset(f, 0, sizeof(*f));
}

const char *fleet_row_name(const void *fleet, size_t i)
{
	return ((const struct fleet *)fleet)->rows[i].node.name;
}

const char *fleet_node_name(const void *slurm_nodes, size_t i)
{
	return ((const struct slurm_nodes *)slurm_nodes)->items[i].name;
}
