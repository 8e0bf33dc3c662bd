/* runner.c: one forked child per check, with deadlines, in one run group (see runner.h). */
#include "runner.h"

#include "../lib/run_group.h"

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

#define CHILD_OUTPUT_CAP (8u << 20)

void check_run_inline(const struct check_ctx *ctx, const struct check_def *def,
		      struct check_result *res)
{
	struct strbuf err = STRBUF_INIT;
	uint64_t t0 = mono_ms();
	if (def->run(ctx, res, &err) < 0) {
		free(res->error);
		res->error = xstrdup(err.len ? err.buf : "the check could not run");
		result_finish(res);
		if (res->status < STATUS_UNKNOWN)
			res->status = STATUS_UNKNOWN;
	} else {
		result_finish(res);
	}
	res->duration_ms = mono_ms() - t0;
	strbuf_release(&err);
}

/* Kept of a check's own stdout/stderr (an NVML library that prints, a stray debug line): enough
 * to quote when the check dies, never enough to matter. */
#define CHECK_OUTPUT_CAP (64u << 10)

struct job {
	struct check_ctx ctx;
	const struct check_def *def;
	struct check_result *res;
	struct child c;
	char bound[64];
};

/* The forked check: its result goes to fd, a pipe of its own; fds 1 and 2 are captured apart,
 * so nothing a library prints can corrupt the result or vigil's own output. */
static int check_child(void *arg, int fd)
{
	struct job *j = arg;
	struct check_result res;
	struct strbuf out = STRBUF_INIT;
	struct json_writer w;
	check_result_init(&res, j->def->name);
	check_run_inline(&j->ctx, j->def, &res);
	json_writer_init(&w, &out, false);
	result_to_json(&w, &res);
	const char *p = out.buf;
	size_t len = out.len;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void set_unknown(struct check_result *res, struct strbuf *why)
{
	free(res->error);
	res->error = strbuf_detach(why, NULL);
	res->status = STATUS_UNKNOWN;
}

/* "; it said: '...'": the last line the check printed on stderr, if it died without a result. */
static void add_last_words(struct strbuf *why, const struct child *c)
{
	struct strbuf e = STRBUF_INIT;
	strbuf_add(&e, c->err.buf, c->err.len);
	strbuf_rtrim(&e);
	const char *nl = strrchr(e.buf, '\n');
	const char *last = nl ? nl + 1 : e.buf;
	if (*last) {
		strbuf_addstr(why, "; it said: '");
		strbuf_add_excerpt(why, last, 120);
		strbuf_addch(why, '\'');
	}
	strbuf_release(&e);
}

static void job_done(struct child *c, const char *start_error, void *arg)
{
	struct job *j = (struct job *)((char *)c - offsetof(struct job, c));
	struct check_result *res = j->res;
	struct strbuf why = STRBUF_INIT;
	UNUSED(arg);
	if (start_error) {
		strbuf_addf(&why, "the check could not start: %s", start_error);
		set_unknown(res, &why);
		return;
	}
	if (c->timed_out) {
		child_describe(c, &why);
		set_unknown(res, &why);
		res->duration_ms = c->duration_ms;
		return;
	}
	if (c->signaled) {
		strbuf_addf(&why, "the check crashed (%s)", strsignal(c->term_signal));
		add_last_words(&why, c);
		set_unknown(res, &why);
	} else if (!c->exited || c->exit_code != 0 || !c->result.len) {
		strbuf_addstr(&why, "the check ended without a result");
		if (c->exited && c->exit_code)
			strbuf_addf(&why, " (exit %d)", c->exit_code);
		add_last_words(&why, c);
		set_unknown(res, &why);
	} else {
		struct strbuf err = STRBUF_INIT;
		struct json_value *v = json_parse(c->result.buf, c->result.len, &err);
		if (!v || result_from_json(v, res, &err) < 0) {
			strbuf_addf(&why, "the check returned a bad result: %s", err.buf);
			set_unknown(res, &why);
		}
		json_free(v);
		strbuf_release(&err);
	}
	strbuf_release(&why);
	if (!res->duration_ms)
		res->duration_ms = c->duration_ms;
}

void checks_run(const struct check_ctx *ctx, const struct run_item *items, size_t n,
		unsigned total_timeout_ms, struct report *rep)
{
	struct job *jobs = xcalloc(n ? n : 1, sizeof(*jobs));
	struct run_group g;
	size_t first = rep->nr;
	for (size_t i = 0; i < n; i++)
		report_add(rep, items[i].def->name);
	run_group_init(&g, 0); /* every check at once: the wall time is the slowest one */
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[i];
		unsigned t = items[i].timeout_ms;
		/* The bound that will fire, named as the user sets it. */
		if (total_timeout_ms && (!t || t >= total_timeout_ms)) {
			t = total_timeout_ms;
			snprintf(j->bound, sizeof(j->bound), "--timeout %g", t / 1000.0);
		} else {
			snprintf(j->bound, sizeof(j->bound), "%s.timeout", items[i].def->name);
		}
		j->ctx = *ctx;
		j->ctx.timeout_ms = t;
		j->def = items[i].def;
		child_init(&j->c);
		j->c.fn = check_child;
		j->c.fn_arg = j;
		j->c.result_pipe = true;
		j->c.result_cap = CHILD_OUTPUT_CAP;
		j->c.out_cap = CHECK_OUTPUT_CAP;
		j->c.timeout_ms = t;
		j->c.timeout_name = j->bound;
		run_group_add(&g, &j->c);
	}
	/* results after report_add, which may move the array */
	for (size_t i = 0; i < n; i++)
		jobs[i].res = &rep->results[first + i];
	run_group_run(&g, job_done, NULL);
	run_group_release(&g);
	for (size_t i = 0; i < n; i++)
		child_release(&jobs[i].c);
	free(jobs);
}
