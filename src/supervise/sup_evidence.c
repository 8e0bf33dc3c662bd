/* sup_evidence.c: see sup_int.h */
#include "sup_int.h"

/* ---- diagnosis (vigil diagnose, docs/DIAGNOSE.md): what the run's own files say ---- */

/*
 * Run `vigil diagnose KIND --json ARG` (this very vigil, a child with a deadline: a diagnosis
 * that fails or hangs costs the run nothing), keep its JSON in out_path and journal one
 * "diagnosis" event with its verdict in words.
 */
struct json_value *sup_diagnose(struct sup *s, const char *kind, const char *arg,
				   const char *out_path)
{
	struct json_value *v = NULL;
	struct strbuf out = STRBUF_INIT, d = STRBUF_INIT;
	if (s->W->diagnose(s->W->ctx, kind, arg, &out) == 0) {
		write_file_atomic(out_path, out.buf, out.len, 0644, NULL);
		v = json_parse(out.buf, out.len, NULL);
		if (v && !strcmp(kind, "hang")) {
			const char *sum = json_get_string(v, "summary");
			const char *src = json_get_string(v, "source");
			strbuf_addf(&d, "hang (%s): %s", src ? src : "?",
				    sum && *sum ? sum : "could not tell");
		} else if (v && !strcmp(kind, "logs")) {
			const struct json_value *root = json_get(v, "root");
			const char *cause = root ? json_get_string(root, "cause") : NULL;
			if (cause) {
				const char *host = json_get_string(root, "host");
				const char *ex = json_get_string(root, "example");
				const struct json_value *rk = json_get(root, "rank");
				strbuf_addf(&d, "logs: first error: %s", cause);
				if (host && *host)
					strbuf_addf(&d, " on %s", host);
				if (rk && rk->type == JSON_NUMBER)
					strbuf_addf(&d, " rank %.0f", rk->number);
				if (ex)
					strbuf_addf(&d, ": %s", ex);
			} else {
				strbuf_addstr(&d, "logs: no known error line");
			}
		} else if (v) {
			const struct json_value *pats = json_get(v, "patterns");
			for (size_t i = 0; pats && pats->type == JSON_ARRAY && i < pats->nr && i < 3;
			     i++) {
				const char *name = json_get_string(pats->items[i], "pattern");
				const char *cause = json_get_string(pats->items[i], "cause");
				strbuf_addf(&d, "%s%s", i ? "; " : "steps: ", name ? name : "?");
				if (cause && name && strcmp(name, "healthy"))
					strbuf_addf(&d, " (%s)", cause);
			}
		}
	} else {
		/* too few steps, nothing readable: said, not guessed */
		strbuf_addf(&d, "%s: could not tell", kind);
	}
	if (d.len) {
		sup_journal_event(s, "diagnosis", NULL, d.buf);
		sup_say(s, "diagnosis: %s", d.buf);
	}
	strbuf_release(&d);
	strbuf_release(&out);
	return v;
}

/* ---- evidence ---- */

struct json_value *sup_diagnose(struct sup *s, const char *kind, const char *arg,
				   const char *out_path);

/*
 * The ranks 'vigil diagnose hang' names (the recorder's culprits, else the logs'), as the hosts
 * they ran on: rank r runs on hosts[r / G] (step.h). Suspects, not verdicts: a rank that never
 * entered a collective may be a software bug as well as a sick host, so they are confirmed by
 * a smoke run alone like the stacks' weaker suspects.
 */
/* Rank r's host in the run: hosts[r / G] (step.h), added to out once. */
static void add_rank_host(struct sup *s, double r, char *const *hosts, size_t nr_hosts,
			  struct strlist *out)
{
	if (r < 0 || !s->o->tasks_per_node)
		return;
	size_t h = (size_t)r / s->o->tasks_per_node;
	if (h < nr_hosts && !strlist_has(out, hosts[h]))
		strlist_add(out, hosts[h]);
}

/* The hosts of a non-empty array of culprits ({"rank": R, ...}); false when there is none. */
static bool add_culprit_hosts(struct sup *s, const struct json_value *list, char *const *hosts,
			      size_t nr_hosts, struct strlist *out)
{
	if (!list || list->type != JSON_ARRAY || !list->nr)
		return false;
	for (size_t i = 0; i < list->nr; i++) {
		double r;
		if (json_get_number(list->items[i], "rank", &r))
			add_rank_host(s, r, hosts, nr_hosts, out);
	}
	return true;
}

static void hang_suspects(struct sup *s, const struct json_value *v, char *const *hosts,
			  size_t nr_hosts, struct strlist *out)
{
	/* the recorder's culprits, else the first process group's culprits in the logs */
	if (add_culprit_hosts(s, json_path(v, "recorder.culprits"), hosts, nr_hosts, out))
		return;
	const struct json_value *groups = json_path(v, "logs.groups");
	for (size_t g = 0; groups && groups->type == JSON_ARRAY && g < groups->nr; g++)
		if (add_culprit_hosts(s, json_get(groups->items[g], "culprits"), hosts, nr_hosts,
				      out))
			return;
	/* else the ranks that left no ring while every other waits: the likeliest culprits */
	const char *state = json_get_string(json_get(v, "recorder"), "state");
	const struct json_value *comms = json_path(v, "recorder.communicators");
	if (!state || strcmp(state, "incomplete") || !comms || comms->type != JSON_ARRAY)
		return;
	for (size_t c = 0; c < comms->nr; c++) {
		const char *cs = json_get_string(comms->items[c], "state");
		const struct json_value *m = json_get(comms->items[c], "missing_ranks");
		if (!cs || strcmp(cs, "incomplete") || !m || m->type != JSON_ARRAY)
			continue;
		for (size_t i = 0; i < m->nr; i++)
			if (m->items[i]->type == JSON_NUMBER)
				add_rank_host(s, m->items[i]->number, hosts, nr_hosts, out);
	}
}

void sup_do_evidence(struct sup *s, const struct sup_action *x)
{
	if (s->m.fault == SUP_FAULT_SLOW) {
		/* what the step times say of the slowdown, before the stop */
		struct strbuf j = STRBUF_INIT, p = STRBUF_INIT;
		strbuf_addf(&j, "%s/journal.jsonl", s->o->run_dir);
		strbuf_addf(&p, "%s/diagnosis-steps.json", s->at.attempt_dir);
		journal_sync(&s->j, NULL);
		json_free(sup_diagnose(s, "steps", j.buf, p.buf));
		strbuf_release(&j);
		strbuf_release(&p);
	}
	/* stacks of every rank, before anything is killed: see evidence.c */
	struct sup_evidence_found found = { .summary = STRBUF_INIT, .suspects = STRLIST_INIT,
					    .sick = STRLIST_INIT, .why = STRLIST_INIT };
	s->W->evidence(s->W->ctx, s, s->W->step_id(s->W->ctx, s), x->hosts.items, x->hosts.nr,
		       sup_world_of(s, x->hosts.nr), &found);
	struct strbuf summary = found.summary;
	struct strlist suspects = found.suspects, sick = found.sick, why = found.why;
	if (s->m.fault == SUP_FAULT_HANG) {
		/* which rank stopped the collective: the NCCL recorder's rings (copied by vigil
		 * stacks just now) or the watchdog lines, before anything is stopped */
		struct strbuf p = STRBUF_INIT;
		struct strlist named = STRLIST_INIT;
		strbuf_addf(&p, "%s/diagnosis-hang.json", s->at.attempt_dir);
		struct json_value *v = sup_diagnose(s, "hang", s->at.attempt_dir, p.buf);
		if (v)
			hang_suspects(s, v, x->hosts.items, x->hosts.nr, &named);
		for (size_t i = 0; i < named.nr; i++)
			if (!strlist_has(&sick, named.items[i]) &&
			    !strlist_has(&suspects, named.items[i]))
				strlist_add(&suspects, named.items[i]);
		if (named.nr) {
			strbuf_addstr(&summary, "; vigil diagnose hang names ");
			for (size_t i = 0; i < named.nr; i++)
				strbuf_addf(&summary, "%s%s", i ? ", " : "", named.items[i]);
		}
		json_free(v);
		strlist_release(&named);
		strbuf_release(&p);
	}
	sup_say(s, "evidence: %s", summary.buf);
	struct sup_event e = { .kind = SUP_EV_EVIDENCE_DONE, .text = summary.buf,
			       .hosts = (const char *const *)suspects.items,
			       .nr_hosts = suspects.nr,
			       .sick = (const char *const *)sick.items,
			       .sick_reasons = (const char *const *)why.items,
			       .nr_sick = sick.nr };
	sup_post(s, &e);
	strbuf_release(&summary);
	strlist_release(&suspects);
	strlist_release(&sick);
	strlist_release(&why);
}
