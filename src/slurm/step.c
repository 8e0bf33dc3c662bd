/* step.c: one srun job step of a `vigil run` attempt: plan (pure), start, poll, stop (step.h). */
#include "step.h"
#include "../lib/fileio.h"
#include "../lib/util.h"

#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

/*
 * Per-task values are computed here, inside the task, from what srun gives it. The script text
 * is fixed: the trainer's argv arrives as "$@" and is exec'd unchanged, so quotes, ';' or '$()'
 * in it are only ever arguments. RANK = SLURM_PROCID; with the arbitrary layout of step_plan()
 * (each host G times in a row), rank r is on hosts[r / G], so NODE_RANK and LOCAL_RANK follow
 * torchrun's convention (RANK = NODE_RANK * G + LOCAL_RANK). Rank 0 records the step's id for
 * step_stop() (a plain file in the attempt directory; a half-written one reads as not known).
 */
const char STEP_TASK_SCRIPT[] =
	"RANK=$SLURM_PROCID\n"
	"LOCAL_RANK=$((SLURM_PROCID % LOCAL_WORLD_SIZE))\n"
	"NODE_RANK=$((SLURM_PROCID / LOCAL_WORLD_SIZE))\n"
	"export RANK LOCAL_RANK NODE_RANK\n"
	"if [ \"$RANK\" = 0 ] && [ -n \"${VIGIL_STEP_ID_FILE:-}\" ]; then\n"
	"\tprintf '%s.%s\\n' \"$SLURM_JOB_ID\" \"$SLURM_STEP_ID\" >\"$VIGIL_STEP_ID_FILE\"\n"
	"fi\n"
	"exec \"$@\"\n";

static void add(char ***v, size_t *n, size_t *alloc, char *s)
{
	if (*n + 2 > *alloc) {
		*alloc = *alloc ? *alloc * 2 : 32;
		*v = xrealloc(*v, *alloc * sizeof(**v));
	}
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, f);
	strbuf_vaddf(&sb, f, ap);
	va_end(ap);
	return strbuf_detach(&sb, NULL);
}

/* A path srun takes as a file-name pattern must hold no pattern of its own. */
static bool pattern_safe(const char *s)
{
	return s && *s && !strchr(s, '%') && !strchr(s, '\\') && !strchr(s, '\n');
}

static bool env_value_ok(const char *s)
{
	return s && *s && !strchr(s, '\n');
}

int step_plan(const struct slurm_cmds *c, const struct step_spec *s, struct step_plan *out,
	      struct strbuf *err)
{
	memset(out, 0, sizeof(*out));
	if (!s->nr_hosts || s->nr_hosts > STEP_MAX_HOSTS || !s->hosts) {
		strbuf_addf(err, "a step needs 1 to %u hosts, not %zu", STEP_MAX_HOSTS, s->nr_hosts);
		return -1;
	}
	for (size_t i = 0; i < s->nr_hosts; i++) {
		if (!s->hosts[i] || !slurm_node_name_ok(s->hosts[i])) {
			strbuf_addstr(err, "not a Slurm node name: '");
			strbuf_add_clean(err, s->hosts[i] ? s->hosts[i] : "");
			strbuf_addch(err, '\'');
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(s->hosts[i], s->hosts[j])) {
				strbuf_addf(err, "host '%s' is named twice in the step", s->hosts[i]);
				return -1;
			}
	}
	if (!s->tasks_per_node || s->tasks_per_node > STEP_MAX_TASKS_PER_NODE) {
		strbuf_addf(err, "tasks per node must be 1 to %u, not %u", STEP_MAX_TASKS_PER_NODE,
			    s->tasks_per_node);
		return -1;
	}
	if (!s->master_port || s->master_port > 65535) {
		strbuf_addf(err, "master port must be 1 to 65535, not %u", s->master_port);
		return -1;
	}
	if (!pattern_safe(s->attempt_dir)) {
		strbuf_addstr(err, "attempt directory must be a path without '%', '\\' or a newline "
				   "(srun reads it as a file name pattern)");
		return -1;
	}
	if (!env_value_ok(s->run_dir) || !env_value_ok(s->step_file)) {
		strbuf_addstr(err, "run directory and step file must be set, without a newline");
		return -1;
	}
	if (s->master_addr && !env_value_ok(s->master_addr)) {
		strbuf_addstr(err, "master address must not be empty or hold a newline");
		return -1;
	}
	if (s->label && (!*s->label || strchr(s->label, '\n') || strchr(s->label, ','))) {
		strbuf_addstr(err, "step label must not be empty or hold a newline or ','");
		return -1;
	}
	for (size_t i = 0; s->env && s->env[i]; i++) {
		const char *eq = strchr(s->env[i], '=');
		if (!eq || eq == s->env[i] || strchr(s->env[i], '\n')) {
			strbuf_addstr(err, "a task's environment entry must be NAME=VALUE without a "
					   "newline: '");
			strbuf_add_clean(err, s->env[i]);
			strbuf_addch(err, '\'');
			return -1;
		}
	}
	if (!s->cmd || !s->cmd[0] || !*s->cmd[0]) {
		strbuf_addstr(err, "no command to run in the step");
		return -1;
	}

	size_t alloc = 0, ealloc = 0;
	size_t world = s->nr_hosts * s->tasks_per_node;
	const char *srun = c && c->srun ? c->srun : "srun";
	add(&out->argv, &out->argc, &alloc, xstrdup(srun));
	add(&out->argv, &out->argc, &alloc, fmt("--nodes=%zu", s->nr_hosts));
	add(&out->argv, &out->argc, &alloc, fmt("--ntasks=%zu", world));
	add(&out->argv, &out->argc, &alloc, fmt("--ntasks-per-node=%u", s->tasks_per_node));
	/* each host G times in a row: rank r on hosts[r / G] */
	struct strbuf nl = STRBUF_INIT;
	strbuf_addstr(&nl, "--nodelist=");
	for (size_t i = 0; i < s->nr_hosts; i++)
		for (unsigned t = 0; t < s->tasks_per_node; t++)
			strbuf_addf(&nl, "%s%s", i || t ? "," : "", s->hosts[i]);
	add(&out->argv, &out->argc, &alloc, strbuf_detach(&nl, NULL));
	add(&out->argv, &out->argc, &alloc, xstrdup("--distribution=arbitrary"));
	/* a task that fails must not take the step down before the supervisor looks at it */
	add(&out->argv, &out->argc, &alloc, xstrdup("--kill-on-bad-exit=0"));
	if (s->wait_s)
		add(&out->argv, &out->argc, &alloc, fmt("--wait=%u", s->wait_s));
	add(&out->argv, &out->argc, &alloc, fmt("--job-name=%s", s->label ? s->label : "vigil-run"));
	/* the step's environment is srun's, even where SLURM_EXPORT_ENV says otherwise */
	add(&out->argv, &out->argc, &alloc, xstrdup("--export=ALL"));
	add(&out->argv, &out->argc, &alloc, xstrdup("--input=none"));
	if (s->labelled) {
		add(&out->argv, &out->argc, &alloc, xstrdup("--label"));
	} else {
		add(&out->argv, &out->argc, &alloc, fmt("--output=%s/rank-%%t.out", s->attempt_dir));
		add(&out->argv, &out->argc, &alloc, fmt("--error=%s/rank-%%t.err", s->attempt_dir));
	}
	add(&out->argv, &out->argc, &alloc, xstrdup("/bin/sh"));
	add(&out->argv, &out->argc, &alloc, xstrdup("-c"));
	add(&out->argv, &out->argc, &alloc, xstrdup(STEP_TASK_SCRIPT));
	add(&out->argv, &out->argc, &alloc, xstrdup("vigil-task")); /* $0 */
	for (size_t i = 0; s->cmd[i]; i++)
		add(&out->argv, &out->argc, &alloc, xstrdup(s->cmd[i]));

	add(&out->env, &out->envc, &ealloc,
	    fmt("MASTER_ADDR=%s", s->master_addr ? s->master_addr : s->hosts[0]));
	add(&out->env, &out->envc, &ealloc, fmt("MASTER_PORT=%u", s->master_port));
	add(&out->env, &out->envc, &ealloc, fmt("WORLD_SIZE=%zu", world));
	add(&out->env, &out->envc, &ealloc, fmt("LOCAL_WORLD_SIZE=%u", s->tasks_per_node));
	add(&out->env, &out->envc, &ealloc, fmt("VIGIL_ATTEMPT=%u", s->attempt));
	add(&out->env, &out->envc, &ealloc, fmt("VIGIL_RUN_DIR=%s", s->run_dir));
	add(&out->env, &out->envc, &ealloc, fmt("VIGIL_STEP_FILE=%s", s->step_file));
	add(&out->env, &out->envc, &ealloc, fmt("VIGIL_STEP_ID_FILE=%s/step-id", s->attempt_dir));
	add(&out->env, &out->envc, &ealloc, fmt("VIGIL_ATTEMPT_DIR=%s", s->attempt_dir));
	for (size_t i = 0; s->env && s->env[i]; i++)
		add(&out->env, &out->envc, &ealloc, xstrdup(s->env[i]));
	return 0;
}

void step_plan_release(struct step_plan *p)
{
	for (size_t i = 0; i < p->argc; i++)
		free(p->argv[i]);
	for (size_t i = 0; i < p->envc; i++)
		free(p->env[i]);
	free(p->argv);
	free(p->env);
	memset(p, 0, sizeof(*p));
}

const char *step_plan_env(const struct step_plan *p, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < p->envc; i++)
		if (!strncmp(p->env[i], name, n) && p->env[i][n] == '=')
			return p->env[i] + n + 1;
	return NULL;
}

void step_init(struct step *st)
{
	memset(st, 0, sizeof(*st));
	child_init(&st->child);
}

int step_start(struct step *st, const struct slurm_cmds *c, const struct step_spec *s,
	       struct strbuf *err)
{
	if (step_plan(c, s, &st->plan, err))
		return -1;
	snprintf(st->attempt_dir, sizeof(st->attempt_dir), "%s", s->attempt_dir);
	/* a step-id file left from an earlier use of this directory must not name this step */
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/step-id", st->attempt_dir);
	unlink(p.buf);
	strbuf_release(&p);
	st->child.argv = (const char *const *)st->plan.argv;
	st->child.env_add = (const char *const *)st->plan.env;
	st->child.out_cap = 64 * 1024; /* srun's own messages; the ranks write to their files */
	st->child.on_output = st->on_output;
	st->child.on_output_arg = st->on_output_arg;
	if (child_start(&st->child, err)) {
		step_plan_release(&st->plan);
		return -1;
	}
	st->started = true;
	return 0;
}

size_t step_pollfds(const struct step *st, struct pollfd *pfd)
{
	return st->started && !st->child.done ? child_pollfds(&st->child, pfd) : 0;
}

bool step_handle(struct step *st, const struct pollfd *pfd, size_t n)
{
	if (!st->started)
		return true;
	if (st->child.done)
		return true;
	if (child_handle(&st->child, pfd, n)) {
		child_finish(&st->child);
		return true;
	}
	return false;
}

bool step_id_ok(const char *s)
{
	size_t dots = 0, i = 0;
	for (; s[i]; i++) {
		if (s[i] == '.') {
			if (!i || !s[i + 1] || s[i + 1] == '.')
				return false;
			dots++;
		} else if (s[i] < '0' || s[i] > '9') {
			return false;
		}
	}
	return i > 0 && dots == 1;
}

const char *step_id(struct step *st)
{
	if (st->id[0] || !st->attempt_dir[0])
		return st->id[0] ? st->id : NULL;
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT;
	strbuf_addf(&p, "%s/step-id", st->attempt_dir);
	/* a whole line only: rank 0 may be half-way through writing it */
	if (read_file_bounded(p.buf, &sb, 64, NULL) == 0 && sb.len && sb.buf[sb.len - 1] == '\n') {
		strbuf_rtrim(&sb);
		if (step_id_ok(sb.buf) && sb.len < sizeof(st->id))
			memcpy(st->id, sb.buf, sb.len + 1);
	}
	strbuf_release(&p);
	strbuf_release(&sb);
	return st->id[0] ? st->id : NULL;
}

/* Run a short Slurm command; its exit code, or -1 when it did not run or exit. */
static int slurm_call(const struct slurm_cmds *c, const char *const *argv, struct strbuf *out)
{
	struct child ch;
	child_init(&ch);
	ch.argv = argv;
	ch.timeout_ms = c && c->timeout_ms ? c->timeout_ms : 10000;
	ch.merge_stderr = true;
	ch.out_cap = 16 * 1024;
	int code = -1;
	if (child_run(&ch, NULL) == 0 && ch.exited)
		code = ch.exit_code;
	if (out)
		strbuf_add(out, ch.out.buf, ch.out.len);
	child_release(&ch);
	return code;
}

static int wait_gone(const struct slurm_cmds *c, const char *scontrol_prog, const char *id,
		     struct strbuf *err);

/* Wait until srun ends, at most ms. */
static void wait_srun(struct step *st, unsigned ms)
{
	uint64_t end = mono_ms() + ms;
	while (!st->child.done) {
		uint64_t now = mono_ms();
		if (now >= end)
			break;
		uint64_t left = end - now;
		if (child_poll(&st->child, left > 100 ? 100 : (int)left) == 1)
			break;
	}
}

int step_stop(struct step *st, const struct slurm_cmds *c, unsigned grace_ms, struct strbuf *err)
{
	if (!st->started)
		return 0;
	if (!st->child.done) {
		/* srun forwards SIGTERM to every task of the step, on every node */
		child_kill(&st->child, SIGTERM);
		wait_srun(st, grace_ms);
	}
	const char *id = step_id(st);
	if (!st->child.done) {
		if (id) {
			const char *argv[] = { st->scancel ? st->scancel : "scancel", "--signal=KILL",
					       id, NULL };
			slurm_call(c, argv, NULL);
			const char *argv2[] = { st->scancel ? st->scancel : "scancel", id, NULL };
			slurm_call(c, argv2, NULL);
		}
		/* srun itself, and whatever of the step it still holds here */
		child_kill(&st->child, SIGKILL);
	}
	child_finish(&st->child);
	if (!id)
		return 0;
	return wait_gone(c, st->scontrol, id, err);
}

int step_stop_id(const struct slurm_cmds *c, const char *scancel, const char *scontrol,
		 const char *id, struct strbuf *err)
{
	if (!id || !step_id_ok(id)) {
		strbuf_addstr(err, "not a Slurm step id: '");
		strbuf_add_clean(err, id ? id : "");
		strbuf_addch(err, '\'');
		return -1;
	}
	const char *argv[] = { scancel ? scancel : "scancel", "--signal=KILL", id, NULL };
	slurm_call(c, argv, NULL);
	const char *argv2[] = { scancel ? scancel : "scancel", id, NULL };
	slurm_call(c, argv2, NULL);
	return wait_gone(c, scontrol, id, err);
}

/* The step is gone when the controller no longer knows it (its slurmstepds ended). */
static int wait_gone(const struct slurm_cmds *c, const char *scontrol_prog, const char *id,
		     struct strbuf *err)
{
	const char *scontrol = scontrol_prog ? scontrol_prog
					     : c && c->scontrol ? c->scontrol : "scontrol";
	uint64_t end = mono_ms() + (c && c->timeout_ms ? c->timeout_ms : 10000);
	struct strbuf out = STRBUF_INIT;
	for (;;) {
		strbuf_reset(&out);
		const char *argv[] = { scontrol, "-o", "show", "step", id, NULL };
		int code = slurm_call(c, argv, &out);
		/* only Slurm's own words count as gone: a controller that does not answer also
		 * makes scontrol fail */
		if (code > 0 && (strstr(out.buf, "not found") || strstr(out.buf, "Invalid job id")))
			break;
		if (mono_ms() >= end) {
			strbuf_addf(err, "step %s still known to Slurm after it was stopped", id);
			strbuf_release(&out);
			return -1;
		}
		usleep(200000);
	}
	strbuf_release(&out);
	return 0;
}

void step_release(struct step *st)
{
	if (st->started && !st->child.done)
		child_finish(&st->child);
	child_release(&st->child);
	step_plan_release(&st->plan);
	st->started = false;
}
