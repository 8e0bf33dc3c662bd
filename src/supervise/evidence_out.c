/* evidence_out.c: the summary paragraph and evidence.json of a judged attempt (see evidence.h). */
#include "evidence_int.h"
#include "../lib/json.h"

#include <math.h>
#include <stdarg.h>

/* ---- output ---- */

static void say_ranks(struct strbuf *sb, const long *r, size_t n, size_t max)
{
	for (size_t i = 0; i < n && i < max; i++)
		strbuf_addf(sb, "%s%ld", i ? "," : "", r[i]);
	if (n > max)
		strbuf_addf(sb, ",... (%zu)", n);
}

void evidence_summarise(struct evidence *e, const struct evidence_input *in)
{
	struct strbuf *s = &e->summary;
	size_t answered = 0;
	strbuf_reset(s);
	for (size_t i = 0; i < e->hosts_nr; i++)
		answered += e->hosts[i].answered;
	strbuf_addf(s, "%zu of %zu hosts answered", answered, e->hosts_nr);
	for (size_t i = 0, k = 0; i < e->hosts_nr; i++)
		if (!e->hosts[i].answered)
			strbuf_addf(s, "%s%s: %s", k++ ? "; " : " (", e->hosts[i].host,
				    e->hosts[i].why ? e->hosts[i].why : "no answer");
	if (answered < e->hosts_nr)
		strbuf_addch(s, ')');
	strbuf_addf(s, "; %zu rank%s found", e->ranks_nr, e->ranks_nr == 1 ? "" : "s");
	if (in->world_size > 0)
		strbuf_addf(s, " of %ld", in->world_size);
	if (e->missing_nr) {
		strbuf_addstr(s, " (missing: ");
		say_ranks(s, e->missing, e->missing_nr, 16);
		strbuf_addch(s, ')');
	}
	const struct evidence_group *g = e->py_nr ? e->py : e->native;
	size_t gn = e->py_nr ? e->py_nr : e->native_nr;
	int maj = e->py_nr ? e->py_majority : e->native_majority;
	if (gn) {
		strbuf_addf(s, ". %s stacks: %zu group%s", e->py_nr ? "Python" : "Native", gn,
			    gn == 1 ? "" : "s");
		if (maj >= 0)
			strbuf_addf(s, ", majority %zu rank%s in %s", g[maj].nr,
				    g[maj].nr == 1 ? "" : "s", g[maj].top);
		else
			strbuf_addstr(s, ", no majority");
	} else {
		strbuf_addstr(s, ". No stacks");
	}
	size_t on_gpu = 0;
	for (size_t i = 0; i < e->ranks_nr; i++)
		on_gpu += e->ranks[i].gpu;
	if (on_gpu)
		strbuf_addf(s, ". Busy shares of the %zu rank%s on GPUs not compared (a rank waiting "
			    "for its GPU spins)", on_gpu, on_gpu == 1 ? "" : "s");
	if (e->suspects_nr) {
		strbuf_addstr(s, ". Suspects: ");
		for (size_t i = 0; i < e->suspects_nr; i++) {
			const struct evidence_suspect *x = &e->suspects[i];
			if (x->rank >= 0)
				strbuf_addf(s, "%srank %ld on %s: ", i ? "; " : "", x->rank, x->host);
			else
				strbuf_addf(s, "%shost %s: ", i ? "; " : "", x->host);
			for (size_t j = 0; j < x->reasons.nr; j++)
				strbuf_addf(s, "%s%s", j ? ", " : "", x->reasons.items[j]);
		}
	} else {
		/* "agree" only where they do: two ranks in two frames (one waiting in a
		 * collective, one elsewhere) are a tie, not agreement */
		strbuf_addstr(s, gn > 1 && maj < 0 ? ". No suspect: no rank stands out"
						   : ". No suspect: the stacks agree");
	}
	for (size_t i = 0, k = 0; i < e->hosts_nr; i++)
		if (e->hosts[i].doubt)
			strbuf_addf(s, "%s%s: %s", k++ ? "; " : ". Doubtful evidence (confirmed by a "
				    "smoke test before any drain): ", e->hosts[i].host,
				    e->hosts[i].doubt);
	strbuf_addch(s, '.');
	if (s->len > SUMMARY_MAX) {
		/* cut on a character boundary */
		size_t n = SUMMARY_MAX - 3;
		while (n && ((unsigned char)s->buf[n] & 0xc0) == 0x80)
			n--;
		strbuf_setlen(s, n);
		strbuf_addstr(s, "...");
	}
}

static void json_groups(struct json_writer *w, const char *key, const struct evidence_group *g,
			size_t n, int maj)
{
	json_key(w, key);
	json_open_array(w);
	for (size_t i = 0; i < n && i < EVIDENCE_GROUPS_LISTED; i++) {
		json_open_object(w);
		json_key(w, "ranks");
		json_open_array(w);
		for (size_t j = 0; j < g[i].nr; j++)
			json_int(w, g[i].ranks[j]);
		json_close_array(w);
		json_key(w, "hosts");
		json_open_array(w);
		for (size_t j = 0; j < g[i].hosts.nr; j++)
			json_string(w, g[i].hosts.items[j]);
		json_close_array(w);
		json_key(w, "majority");
		json_bool(w, (int)i == maj);
		json_key(w, "top");
		json_string(w, g[i].top);
		json_key(w, "signature");
		json_string(w, g[i].signature);
		json_close_object(w);
	}
	json_close_array(w);
	json_key(w, key[0] == 'p' ? "python_groups_omitted" : "native_groups_omitted");
	json_uint(w, n > EVIDENCE_GROUPS_LISTED ? n - EVIDENCE_GROUPS_LISTED : 0);
}

void evidence_write_json(struct evidence *e, const struct evidence_input *in)
{
	static const char *const names[EVIDENCE_NSTATES] = { "R", "S", "D", "T" };
	struct json_writer w;
	strbuf_reset(&e->json);
	json_writer_init(&w, &e->json, false);
	json_open_object(&w);
	json_key(&w, "world_size");
	if (in->world_size > 0)
		json_int(&w, in->world_size);
	else
		json_null(&w);
	json_key(&w, "hosts");
	json_open_array(&w);
	for (size_t i = 0; i < e->hosts_nr; i++) {
		json_open_object(&w);
		json_key(&w, "host");
		json_string(&w, e->hosts[i].host);
		json_key(&w, "answered");
		json_bool(&w, e->hosts[i].answered);
		json_key(&w, "ranks");
		json_uint(&w, e->hosts[i].ranks);
		json_key(&w, "note");
		if (e->hosts[i].why)
			json_string(&w, e->hosts[i].why);
		else
			json_null(&w);
		json_key(&w, "doubt");
		if (e->hosts[i].doubt)
			json_string(&w, e->hosts[i].doubt);
		else
			json_null(&w);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "ranks_missing");
	json_open_array(&w);
	for (size_t i = 0; i < e->missing_nr; i++)
		json_int(&w, e->missing[i]);
	json_close_array(&w);
	json_key(&w, "ranks");
	json_open_array(&w);
	for (size_t i = 0; i < e->ranks_nr; i++) {
		const struct evidence_rank *k = &e->ranks[i];
		json_open_object(&w);
		json_key(&w, "rank");
		json_int(&w, k->rank);
		json_key(&w, "host");
		json_string(&w, k->host);
		json_key(&w, "pid");
		json_int(&w, k->pid);
		json_key(&w, "samples");
		json_uint(&w, k->samples);
		json_key(&w, "states");
		json_open_object(&w);
		for (size_t s = 0; s < EVIDENCE_NSTATES; s++) {
			json_key(&w, names[s]);
			json_uint(&w, k->states[s]);
		}
		json_close_object(&w);
		json_key(&w, "doubt");
		json_bool(&w, k->doubt);
		json_key(&w, "busy");
		json_double(&w, k->busy);
		json_key(&w, "cpu_s");
		json_double(&w, k->cpu_s);
		json_key(&w, "gpu");
		json_bool(&w, k->gpu);
		json_key(&w, "python_group");
		if (k->py_group >= 0)
			json_int(&w, k->py_group);
		else
			json_null(&w);
		json_key(&w, "native_group");
		if (k->native_group >= 0)
			json_int(&w, k->native_group);
		else
			json_null(&w);
		json_key(&w, "last_output_age_s");
		if (isfinite(k->last_output))
			json_double(&w, in->now - k->last_output);
		else
			json_null(&w);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_groups(&w, "python_groups", e->py, e->py_nr, e->py_majority);
	json_groups(&w, "native_groups", e->native, e->native_nr, e->native_majority);
	json_key(&w, "suspects");
	json_open_array(&w);
	for (size_t i = 0; i < e->suspects_nr; i++) {
		json_open_object(&w);
		json_key(&w, "rank");
		if (e->suspects[i].rank >= 0)
			json_int(&w, e->suspects[i].rank);
		else
			json_null(&w);
		json_key(&w, "host");
		json_string(&w, e->suspects[i].host);
		json_key(&w, "reasons");
		json_open_array(&w);
		for (size_t j = 0; j < e->suspects[i].reasons.nr; j++)
			json_string(&w, e->suspects[i].reasons.items[j]);
		json_close_array(&w);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "silent_first");
	json_open_array(&w);
	for (size_t i = 0; i < e->silent_first.nr; i++)
		json_string(&w, e->silent_first.items[i]);
	json_close_array(&w);
	json_key(&w, "suspect_hosts");
	json_open_array(&w);
	for (size_t i = 0; i < e->suspect_hosts.nr; i++)
		json_string(&w, e->suspect_hosts.items[i]);
	json_close_array(&w);
	json_key(&w, "doubtful_hosts");
	json_open_array(&w);
	for (size_t i = 0; i < e->doubtful_hosts.nr; i++)
		json_string(&w, e->doubtful_hosts.items[i]);
	json_close_array(&w);
	json_key(&w, "summary");
	json_string(&w, e->summary.buf);
	json_close_object(&w);
	strbuf_addch(&e->json, '\n');
}
