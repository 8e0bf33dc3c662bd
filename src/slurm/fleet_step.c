/* fleet_step.c: a check round as one srun step over its nodes, srun's output split by task and
 * each answer matched to its node (see fleet_step.h for why it is done this way). */
#include "fleet_step.h"
#include "../lib/json.h"
#include "../lib/run.h"
#include "../lib/strindex.h"

#include <limits.h>

/* A --nodelist longer than this goes one srun a node: Linux refuses one argument over 128 KiB
 * (MAX_ARG_STRLEN), and a hostlist that long means names that do not compress. */
#define NODELIST_MAX (100u * 1024)

void fleet_split_init(struct fleet_split *s, size_t nr_tasks, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->tasks = xcalloc(nr_tasks ? nr_tasks : 1, sizeof(*s->tasks));
	s->nr_tasks = nr_tasks;
	s->cap = cap;
	for (size_t t = 0; t < nr_tasks; t++) {
		strbuf_init(&s->tasks[t].out, 0);
		strbuf_init(&s->tasks[t].errline, 0);
		s->tasks[t].exit_code = -1;
	}
	for (int i = 0; i < 3; i++)
		strbuf_init(&s->part[i], 0);
	strbuf_init(&s->srun_error, 0);
}

void fleet_split_release(struct fleet_split *s)
{
	for (size_t t = 0; t < s->nr_tasks; t++) {
		strbuf_release(&s->tasks[t].out);
		strbuf_release(&s->tasks[t].errline);
		free(s->tasks[t].launched_on);
	}
	free(s->tasks);
	for (size_t i = 0; i < s->nr_fails; i++) {
		free(s->fails[i].node);
		free(s->fails[i].why);
	}
	free(s->fails);
	for (int i = 0; i < 3; i++)
		strbuf_release(&s->part[i]);
	strbuf_release(&s->srun_error);
	free(s->step_id);
	memset(s, 0, sizeof(*s));
}

/* A decimal of at most 9 digits at *p (advanced past it), or -1. */
static long read_uint(const char **p)
{
	long v = 0;
	int n = 0;
	while (**p >= '0' && **p <= '9' && n < 9) {
		v = v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	return n && !(**p >= '0' && **p <= '9') ? v : -1;
}

/* srun --label's "%*d: " prefix: the task, and the payload after it; -1 when there is none. */
static long label_of(const char *line, const char **payload)
{
	const char *p = line;
	while (*p == ' ')
		p++;
	long t = read_uint(&p);
	if (t < 0 || p[0] != ':' || p[1] != ' ')
		return -1;
	*payload = p + 2;
	return t;
}

static void set_excerpt(struct strbuf *sb, const char *s)
{
	strbuf_reset(sb);
	strbuf_add_excerpt(sb, s, 300);
}

/* "[srun: ]launching StepId=J.S on host NODE, 1 tasks: T" (22.05; "launching J.S on host"
 * before 20.11): which node srun started task T on. Only one task a node is understood. */
static bool srun_launch_line(struct fleet_split *s, const char *rest)
{
	const char *step = rest, *at = strstr(rest, " on host "), *on, *comma, *p;
	if (!at)
		return false;
	skip_prefix(step, "StepId=", &step);
	on = at + strlen(" on host ");
	comma = strstr(on, ", ");
	if (!comma || comma == on || (size_t)(comma - on) > 255)
		return false;
	p = comma + 2;
	if (read_uint(&p) != 1 || !skip_prefix(p, " tasks: ", &p))
		return false;
	long t = read_uint(&p);
	if (t < 0 || *p || (size_t)t >= s->nr_tasks || s->tasks[t].launched_on)
		return false;
	char *node = xstrndup(on, (size_t)(comma - on));
	if (!slurm_node_name_ok(node)) {
		free(node);
		return false;
	}
	s->tasks[t].launched_on = node;
	if (!s->step_id && at > step)
		s->step_id = xstrndup(step, (size_t)(at - step) < 64 ? (size_t)(at - step) : 64);
	return true;
}

/* "NODE: task T: Completed" / "Exited with exit code N" / "Killed" (srun's per-task exit lines,
 * after "error: " or "launch/slurm: _task_finish: "). */
static bool srun_task_line(struct fleet_split *s, const char *rest)
{
	const char *p = strstr(rest, ": task ");
	if (!p)
		return false;
	p += strlen(": task ");
	long t = read_uint(&p);
	if (t < 0 || (size_t)t >= s->nr_tasks || !skip_prefix(p, ": ", &p))
		return false;
	struct fleet_task *k = &s->tasks[t];
	if (!strcmp(p, "Completed")) {
		k->exit_code = 0;
	} else if (skip_prefix(p, "Exited with exit code ", &p)) {
		long c = read_uint(&p);
		if (c < 0 || c > 255)
			return false;
		k->exit_code = (int)c;
	} else if (!strcmp(p, "Killed") || !strcmp(p, "Terminated")) {
		k->killed = true;
	} else {
		return false;
	}
	return true;
}

static void srun_line(struct fleet_split *s, const char *line)
{
	const char *rest;
	if (skip_prefix(line, "srun: launching ", &rest) && srun_launch_line(s, rest))
		return;
	if (skip_prefix(line, "srun: error: Task launch for ", &rest)) {
		/* "Task launch for StepId=J.S failed on node NODE: WHY" */
		const char *on = strstr(rest, " failed on node "), *colon;
		if (on && (colon = strstr(on + 16, ": ")) && colon > on + 16 &&
		    s->nr_fails < s->nr_tasks + 1) {
			ALLOC_GROW(s->fails, s->nr_fails + 1, s->alloc_fails);
			struct fleet_launch_fail *lf = &s->fails[s->nr_fails++];
			lf->node = xstrndup(on + 16, (size_t)(colon - on - 16));
			struct strbuf w = STRBUF_INIT;
			strbuf_add_excerpt(&w, colon + 2, 200);
			lf->why = strbuf_detach(&w, NULL);
			return;
		}
	}
	if (skip_prefix(line, "srun: ", &rest) && srun_task_line(s, rest))
		return;
	if (skip_prefix(line, "srun: error: ", &rest))
		set_excerpt(&s->srun_error, rest);
	/* srun's other lines (options, "jobid J: nodes(N)", "Job step aborted") say nothing
	 * about one node */
}

static void one_line(struct fleet_split *s, int stream, const char *line, uint64_t now_ms)
{
	const char *payload;
	long t = label_of(line, &payload);
	if (t >= 0 && (size_t)t < s->nr_tasks) {
		struct fleet_task *k = &s->tasks[t];
		if (stream == 2) {
			if (*payload)
				set_excerpt(&k->errline, payload);
			return;
		}
		/* srun cuts a task's line at 1024 bytes and ends each piece with a newline of its
		 * own (seen on the testbed), so its line breaks are not the task's. The report is
		 * one JSON value, in which a newline is only ever whitespace between tokens: all
		 * of them go, and what is left parses to the same value. */
		size_t n = strlen(payload);
		if (k->out.len + n > s->cap)
			k->over = true;
		else
			strbuf_add(&k->out, payload, n);
		k->last_ms = now_ms;
		return;
	}
	if (stream == 2 && starts_with(line, "srun: ")) {
		srun_line(s, line);
		return;
	}
	if (*line)
		s->garbled++;
}

void fleet_split_feed(struct fleet_split *s, int stream, const char *data, size_t len,
		      uint64_t now_ms)
{
	if (stream != 1 && stream != 2)
		return;
	struct strbuf *part = &s->part[stream];
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		if (!s->skipping[stream]) {
			if (part->len + n > FLEET_SPLIT_LINE_MAX) {
				s->skipping[stream] = true;
				s->garbled++;
				strbuf_reset(part);
			} else {
				strbuf_add(part, data, n);
			}
		}
		if (!nl)
			return;
		if (!s->skipping[stream]) {
			/* a NUL inside a line ends it for the parsers: what follows is dropped */
			one_line(s, stream, part->buf, now_ms);
		}
		s->skipping[stream] = false;
		strbuf_reset(part);
		data = nl + 1;
		len -= n + 1;
	}
}

void fleet_split_finish(struct fleet_split *s, uint64_t now_ms)
{
	for (int i = 1; i <= 2; i++)
		if (s->part[i].len || s->skipping[i])
			fleet_split_feed(s, i, "\n", 1, now_ms);
}

/* ---- answers to nodes ---- */

struct step_rows {
	const struct fleet_row *rows;
	const size_t *idx;
};

static const char *step_row_name(const void *arr, size_t k)
{
	const struct step_rows *sr = arr;
	return sr->rows[sr->idx[k]].node.name;
}

static size_t find_row(const struct strindex *x, const struct step_rows *sr, const char *name)
{
	return name ? strindex_find(x, name, sr, step_row_name) : (size_t)-1;
}

void fleet_split_assign(const struct fleet_split *s, struct fleet_row *rows, const size_t *idx,
			size_t n, bool timed_out, unsigned timeout_ms, bool *done)
{
	struct step_rows sr = { rows, idx };
	struct strindex x = { 0 };
	struct json_value **rep = xcalloc(s->nr_tasks + 1, sizeof(*rep));
	size_t *claim = xcalloc(s->nr_tasks + 1, sizeof(*claim));
	size_t *claims = xcalloc(n + 1, sizeof(*claims));
	long *answer = xcalloc(n + 1, sizeof(*answer)), *task_of = xcalloc(n + 1, sizeof(*task_of));
	const char **forged = xcalloc(n + 1, sizeof(*forged));
	const char **failed = xcalloc(n + 1, sizeof(*failed));
	bool *twice = xcalloc(n + 1, sizeof(*twice));
	size_t *started = xcalloc(n + 1, sizeof(*started));
	for (size_t k = 0; k < n; k++) {
		if (find_row(&x, &sr, rows[idx[k]].node.name) == (size_t)-1)
			strindex_add(&x, rows[idx[k]].node.name, k, &sr, step_row_name);
		answer[k] = task_of[k] = -1;
	}
	for (size_t i = 0; i < s->nr_fails; i++) {
		size_t k = find_row(&x, &sr, s->fails[i].node);
		if (k != (size_t)-1)
			failed[k] = s->fails[i].why;
	}
	/* what each task says it is; how many tasks say so of each node */
	for (size_t t = 0; t < s->nr_tasks; t++) {
		const struct fleet_task *k = &s->tasks[t];
		size_t on = find_row(&x, &sr, k->launched_on);
		claim[t] = (size_t)-1;
		if (on != (size_t)-1) {
			task_of[on] = (long)t;
			started[on]++;
		}
		if (!k->out.len || k->over)
			continue;
		rep[t] = json_parse(k->out.buf, k->out.len, NULL);
		const char *host = rep[t] ? json_get_string(rep[t], "host") : NULL;
		if (!host || !json_get_string(rep[t], "verdict") || !json_get_string(rep[t], "reason"))
			continue;
		claim[t] = find_row(&x, &sr, host);
		if (claim[t] != (size_t)-1)
			claims[claim[t]]++;
	}
	for (size_t t = 0; t < s->nr_tasks; t++) {
		size_t c = claim[t];
		const char *on = s->tasks[t].launched_on;
		size_t at = find_row(&x, &sr, on);
		if (c == (size_t)-1)
			continue;
		if (on && started[c] > 1)
			continue; /* srun's map is not one task a node: nothing from it holds */
		if (on && at != c) {
			/* srun started this task on another node than it names */
			if (at != (size_t)-1)
				forged[at] = rows[idx[c]].node.name;
			continue;
		}
		if (!on && (claims[c] > 1 || task_of[c] >= 0))
			continue; /* srun did not say where this task ran: believed only when it
				   * is the one claim of c and no other task ran on c */
		if (answer[c] >= 0)
			twice[c] = true;
		answer[c] = (long)t;
	}
	for (size_t k = 0; k < n; k++) {
		struct fleet_row *r = &rows[idx[k]];
		long t = answer[k] >= 0 && !twice[k] ? answer[k] : task_of[k];
		const struct fleet_task *tk = t >= 0 ? &s->tasks[t] : NULL;
		r->exit_code = tk ? tk->exit_code : -1;
		done[k] = true;
		if (answer[k] >= 0 && !twice[k]) {
			const char *verdict = json_get_string(rep[t], "verdict");
			fleet_row_set(r, !strcmp(verdict, "healthy")	 ? FLEET_HEALTHY
					 : !strcmp(verdict, "unhealthy") ? FLEET_UNHEALTHY
									 : FLEET_UNKNOWN,
				      "%s", json_get_string(rep[t], "reason"));
			r->report_json = xstrdup(tk->out.buf);
			r->ms = tk->last_ms;
		} else if (started[k] > 1) {
			fleet_row_set(r, FLEET_UNREACHABLE,
				      "srun says it started %zu tasks on it: none is believed",
				      started[k]);
		} else if (twice[k] || (claims[k] > 1 && !forged[k])) {
			fleet_row_set(r, FLEET_UNREACHABLE,
				      "%zu tasks answered as '%s': none is believed", claims[k],
				      r->node.name);
		} else if (failed[k]) {
			fleet_row_set(r, FLEET_UNREACHABLE, "srun could not start its task: %s",
				      failed[k]);
		} else if (forged[k]) {
			fleet_row_set(r, FLEET_UNREACHABLE,
				      "its task answered as '%s': not believed", forged[k]);
		} else if (timed_out) {
			fleet_row_set(r, FLEET_UNREACHABLE, "no answer within %.0f s",
				      timeout_ms / 1000.0);
		} else if (tk && tk->over) {
			fleet_row_set(r, FLEET_UNREACHABLE, "answer over %zu bytes", s->cap);
		} else if (tk && tk->exit_code >= 0) {
			/* the task ran to its end without a report: asking again says the same */
			if (tk->errline.len)
				fleet_row_set(r, FLEET_UNREACHABLE, "%s", tk->errline.buf);
			else
				fleet_row_set(r, FLEET_UNREACHABLE,
					      "no report (its vigil exited with code %d)",
					      tk->exit_code);
		} else {
			/* never started or killed with the step: worth one srun of its own */
			fleet_row_set(r, FLEET_UNREACHABLE, "no answer from its task%s%s",
				      s->srun_error.len ? ": " : "", s->srun_error.buf);
			done[k] = false;
		}
	}
	for (size_t t = 0; t < s->nr_tasks; t++)
		json_free(rep[t]);
	strindex_release(&x);
	free(rep);
	free(claim);
	free(claims);
	free(answer);
	free(task_of);
	free(forged);
	free(failed);
	free(twice);
	free(started);
}

/* ---- hostlist ---- */

struct hl_name {
	const char *name;
	size_t plen;      /* prefix length */
	size_t width;     /* digits of a zero-padded suffix; 0: not padded (or none) */
	unsigned long num;
	bool has_num;
};

static int hl_cmp(const void *a, const void *b)
{
	const struct hl_name *x = a, *y = b;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	int c = memcmp(x->name, y->name, x->plen);
	if (c)
		return c;
	if (x->has_num != y->has_num || x->width != y->width)
		return x->has_num != y->has_num ? (x->has_num ? 1 : -1) : x->width < y->width ? -1 : 1;
	return x->num < y->num ? -1 : x->num > y->num;
}

void fleet_hostlist(const char *const *names, size_t n, struct strbuf *out)
{
	struct hl_name *h = xcalloc(n + 1, sizeof(*h));
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]), d = len;
		while (d > 0 && names[i][d - 1] >= '0' && names[i][d - 1] <= '9')
			d--;
		h[i].name = names[i];
		h[i].plen = d;
		if (d < len && len - d <= 9) {
			h[i].has_num = true;
			h[i].num = strtoul(names[i] + d, NULL, 10);
			h[i].width = names[i][d] == '0' && len - d > 1 ? len - d : 0;
		} else {
			h[i].plen = len;
		}
	}
	qsort(h, n, sizeof(*h), hl_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		if (out->len)
			strbuf_addch(out, ',');
		if (!h[i].has_num) {
			strbuf_addstr(out, h[i].name);
			for (; j < n && !h[j].has_num && !strcmp(h[j].name, h[i].name); j++)
				; /* a name twice is one node */
			i = j;
			continue;
		}
		while (j < n && h[j].has_num && h[j].plen == h[i].plen && h[j].width == h[i].width &&
		       !memcmp(h[j].name, h[i].name, h[i].plen))
			j++;
		strbuf_add(out, h[i].name, h[i].plen);
		strbuf_addch(out, '[');
		for (size_t a = i; a < j;) {
			size_t b = a;
			while (b + 1 < j && h[b + 1].num <= h[b].num + 1)
				b++;
			int w = (int)h[a].width;
			strbuf_addf(out, "%s%0*lu", a > i ? "," : "", w, h[a].num);
			if (h[b].num != h[a].num)
				strbuf_addf(out, "-%0*lu", w, h[b].num);
			a = b + 1;
		}
		strbuf_addch(out, ']');
		i = j;
	}
	free(h);
}

/* ---- the step ---- */

struct step_ctx {
	struct fleet_split split;
	uint64_t t0;
};

static void step_output(void *arg, int stream, const char *data, size_t len)
{
	struct step_ctx *sc = arg;
	fleet_split_feed(&sc->split, stream, data, len, mono_ms() - sc->t0);
}

/* srun's arguments of one node's step, less those that shape it (--nodes=, --ntasks=) and
 * --quiet (which srun refuses beside -v). */
static bool per_node_only(const char *a)
{
	return starts_with(a, "--nodes=") || starts_with(a, "--ntasks=") || !strcmp(a, "--quiet") ||
	       !strcmp(a, "-Q");
}

void fleet_step_run(struct fleet *f, const struct fleet_plan *p)
{
	size_t n = 0;
	size_t *idx = xcalloc(f->nr + 1, sizeof(*idx));
	const char **names = xcalloc(f->nr + 1, sizeof(*names));
	for (size_t i = 0; i < f->nr; i++)
		if (f->rows[i].run) {
			names[n] = f->rows[i].node.name;
			idx[n++] = i;
		}
	struct strbuf list = STRBUF_INIT, a_nodes = STRBUF_INIT, a_ntasks = STRBUF_INIT;
	struct strbuf a_list = STRBUF_INIT, err = STRBUF_INIT, note = STRBUF_INIT;
	fleet_hostlist(names, n, &list);
	if (!n || list.len > NODELIST_MAX) {
		if (n)
			strbuf_addf(&note, "the %zu nodes' names make a --nodelist of %zu bytes: "
					   "one srun a node", n, list.len);
		fleet_run_nodes(f, p, NULL);
		goto out;
	}
	strbuf_addf(&a_nodes, "--nodes=%zu", n);
	strbuf_addf(&a_ntasks, "--ntasks=%zu", n);
	strbuf_addf(&a_list, "--nodelist=%s", list.buf);
	size_t max = p->nr_srun_args + p->nr_remote + 10, k = 0;
	const char **argv = xcalloc(max, sizeof(*argv));
	argv[k++] = p->srun_args[0];
	argv[k++] = a_nodes.buf;
	argv[k++] = a_ntasks.buf;
	argv[k++] = "--ntasks-per-node=1";
	argv[k++] = a_list.buf;
	argv[k++] = "--label"; /* which task printed each line */
	argv[k++] = "-v";      /* which node srun started each task on */
	for (size_t i = 1; i < p->nr_srun_args; i++)
		if (!per_node_only(p->srun_args[i]))
			argv[k++] = p->srun_args[i];
	for (size_t i = 0; i < p->nr_remote; i++)
		argv[k++] = p->remote[i];
	argv[k++] = "--host-from-slurmd";
	argv[k] = NULL;

	struct step_ctx sc;
	struct child c;
	fleet_split_init(&sc.split, n, 4u << 20);
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = p->timeout_ms;
	c.timeout_name = "fleet.timeout";
	c.on_output = step_output;
	c.on_output_arg = &sc;
	sc.t0 = mono_ms();
	f->steps++;
	bool *done = xcalloc(n + 1, sizeof(*done));
	if (child_run(&c, &err) < 0) {
		for (size_t i = 0; i < n; i++)
			fleet_row_set(&f->rows[idx[i]], FLEET_UNREACHABLE, "cannot run srun: %s",
				      err.buf);
	} else {
		fleet_split_finish(&sc.split, mono_ms() - sc.t0);
		fleet_split_assign(&sc.split, f->rows, idx, n, c.timed_out, p->timeout_ms, done);
		uint64_t ms = mono_ms() - sc.t0;
		unsigned char *pick = xcalloc(f->nr + 1, 1);
		size_t again = 0;
		for (size_t i = 0; i < n; i++) {
			if (!f->rows[idx[i]].report_json)
				f->rows[idx[i]].ms = ms;
			if (!done[i]) {
				pick[idx[i]] = 1;
				again++;
			}
		}
		if (again) {
			/* the step failed as a whole (a node Slurm could not launch on aborts it):
			 * the others are asked one srun each, as before one-step */
			strbuf_addf(&note, "one srun step over %zu nodes ended with no answer from %zu "
					   "of them (", n, again);
			strbuf_add_excerpt(&note, sc.split.srun_error.len ? sc.split.srun_error.buf
									  : "no srun error", 160);
			strbuf_addf(&note, "); asked again one srun a node");
			/* Inside an allocation (vigil run) these start at once. Outside one
			 * (vigil fleet check) the aborted step's job holds all its nodes
			 * COMPLETING until slurmctld gives up on the one that did not launch:
			 * on the testbed these sruns found the live nodes "busy" (docs/SLURM.md) */
			fleet_run_nodes(f, p, pick);
		}
		free(pick);
	}
	fleet_split_release(&sc.split);
	child_release(&c);
	free(done);
	free(argv);
out:
	if (note.len) {
		free(f->note);
		f->note = strbuf_detach(&note, NULL);
	}
	strbuf_release(&note);
	strbuf_release(&list);
	strbuf_release(&a_nodes);
	strbuf_release(&a_ntasks);
	strbuf_release(&a_list);
	strbuf_release(&err);
	free(idx);
	free(names);
}
