/* stacks_out.c: a stacks result as JSON and as text for a person (see stacks.h). */
#include "stacks.h"
#include "../lib/json.h"

static void json_strlist(struct json_writer *w, const char *key, const struct strlist *l)
{
	json_key(w, key);
	json_open_array(w);
	for (size_t i = 0; i < l->nr; i++)
		json_string(w, l->items[i]);
	json_close_array(w);
}

static void json_str_or_null(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	if (s)
		json_string(w, s);
	else
		json_null(w);
}

void stacks_write_json(const struct stacks_result *r, struct strbuf *out)
{
	static const char *const names[] = { "R", "S", "D", "T", "Z", "other" };
	struct json_writer w;
	json_writer_init(&w, out, false);
	json_open_top(&w);
	json_key(&w, "host");
	json_string(&w, r->host ? r->host : "");
	json_key(&w, "attempt_dir");
	json_string(&w, r->attempt_dir ? r->attempt_dir : "");
	json_str_or_null(&w, "eu_stack", r->eu_stack);
	json_key(&w, "job");
	json_string(&w, r->job ? r->job : "");
	json_str_or_null(&w, "step", r->step);
	json_key(&w, "uid");
	json_int(&w, r->uid);
	json_key(&w, "cgroup_checked");
	json_bool(&w, r->cgroup_checked);
	json_strlist(&w, "ignored", &r->ignored);
	json_key(&w, "ranks");
	json_open_array(&w);
	for (size_t i = 0; i < r->nr; i++) {
		const struct stacks_rank *k = &r->ranks[i];
		json_open_object(&w);
		json_key(&w, "rank");
		json_int(&w, k->rank);
		json_key(&w, "local_rank");
		if (k->local_rank >= 0)
			json_int(&w, k->local_rank);
		else
			json_null(&w);
		json_key(&w, "pid");
		json_int(&w, k->pid);
		json_key(&w, "samples");
		json_uint(&w, k->samples);
		json_key(&w, "states");
		json_open_object(&w);
		for (size_t s = 0; s < STACKS_NSTATES; s++) {
			json_key(&w, names[s]);
			json_uint(&w, k->states[s]);
		}
		json_close_object(&w);
		json_key(&w, "cpu_s");
		json_double(&w, k->cpu_s);
		json_str_or_null(&w, "wchan", k->wchan);
		json_key(&w, "gpu");
		if (k->gpu >= 0)
			json_bool(&w, k->gpu == 1);
		else
			json_null(&w);
		json_str_or_null(&w, "py_stack", k->py_stack);
		json_str_or_null(&w, "native_stack", k->native_stack);
		json_str_or_null(&w, "nccl_ring", k->nccl_ring);
		json_str_or_null(&w, "doubt", k->doubt);
		json_strlist(&w, "errors", &k->errors);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_strlist(&w, "errors", &r->errors);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

static void indent(struct strbuf *out, const char *text)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		strbuf_addstr(out, "    ");
		strbuf_add(out, p, n);
		strbuf_addch(out, '\n');
		p += n + (nl ? 1 : 0);
	}
}

void stacks_write_text(const struct stacks_result *r, struct strbuf *out)
{
	strbuf_addstr(out, "host ");
	strbuf_add_clean(out, r->host ? r->host : "");
	strbuf_addstr(out, ", attempt ");
	strbuf_add_clean(out, r->attempt_dir ? r->attempt_dir : "");
	strbuf_addch(out, '\n');
	if (!r->nr)
		strbuf_addstr(out, "no rank of this attempt runs on this host\n");
	for (size_t i = 0; i < r->nr; i++) {
		const struct stacks_rank *k = &r->ranks[i];
		strbuf_addf(out, "\nrank %ld", k->rank);
		if (k->local_rank >= 0)
			strbuf_addf(out, " (local %ld)", k->local_rank);
		strbuf_addf(out, ", pid %d: %u samples R %u S %u D %u T %u Z %u, cpu %.2f s",
			    (int)k->pid, k->samples, k->states[STACKS_R], k->states[STACKS_S],
			    k->states[STACKS_D], k->states[STACKS_T], k->states[STACKS_Z], k->cpu_s);
		if (k->gpu == 1)
			strbuf_addstr(out, ", on a GPU (maps libcuda)");
		if (k->wchan)
			strbuf_addf(out, ", waiting in %s", k->wchan);
		strbuf_addch(out, '\n');
		if (k->doubt)
			strbuf_addf(out, "  doubt: %s\n", k->doubt);
		for (size_t e = 0; e < k->errors.nr; e++)
			strbuf_addf(out, "  %s\n", k->errors.items[e]);
		if (k->py_stack) {
			strbuf_addstr(out, "  Python stack:\n");
			indent(out, k->py_stack);
		}
		if (k->native_stack) {
			strbuf_addstr(out, "  native stack:\n");
			indent(out, k->native_stack);
		}
	}
	if (!r->step)
		strbuf_addstr(out, "the attempt's step is not known: its ranks are doubt\n");
	for (size_t e = 0; e < r->ignored.nr; e++)
		strbuf_addf(out, "%s\n", r->ignored.items[e]);
	for (size_t e = 0; e < r->errors.nr; e++)
		strbuf_addf(out, "%s\n", r->errors.items[e]);
}
