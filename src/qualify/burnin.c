/*
 * burnin.c: the fabric stage's burn-in step into the card (stage.h). The command plans the
 * allocation's share of the fabric ('vigil fabric burnin plan --hosts') and runs its first
 * stage ('vigil fabric burnin run --stage 1'); here its JSON becomes the card's "burnin"
 * object and the nodes' fabric status: a port whose error counters rose, or an HCA whose
 * every pair was bad while its partners did well elsewhere, fails its node (drained with
 * --drain); a suspect link or a slow pair is the fabric's (the card names it, no node is
 * failed on it alone); what could not be read is unknown.
 */
#include "stage.h"
#include "../lib/json.h"

#include <string.h>

static size_t count_verdict(const struct json_value *arr, const char *verdict)
{
	size_t n = 0;
	for (size_t i = 0; arr && arr->type == JSON_ARRAY && i < arr->nr; i++) {
		const char *v = json_get_string(arr->items[i], "verdict");
		n += v && !strcmp(v, verdict);
	}
	return n;
}

static void set_burnin(struct q_card *c, struct strbuf *obj)
{
	json_free(c->burnin);
	c->burnin = json_parse(obj->buf, obj->len, NULL);
}

void q_burnin_not_run(struct q_card *c, const char *why)
{
	struct strbuf t = STRBUF_INIT;
	strbuf_addstr(&t, "{\"status\":\"not_run\",\"reason\":");
	json_quote(&t, why, strlen(why));
	strbuf_addstr(&t, "}");
	set_burnin(c, &t);
	strbuf_release(&t);
}

/* A node's burn-in answer: the worst of its ports and HCAs; passed when it was in a pair and
 * nothing of it was bad. */
static void burnin_node(struct q_node *n, const struct json_value *run)
{
	const struct json_value *ports = json_get(run, "ports"), *hcas = json_get(run, "hcas");
	const struct json_value *pairs = json_get(run, "pairs");
	struct strbuf why = STRBUF_INIT;
	enum q_status st = Q_NOT_RUN;
	for (size_t i = 0; ports && ports->type == JSON_ARRAY && i < ports->nr; i++) {
		const struct json_value *p = ports->items[i];
		const char *v = str_or(json_get_string(p, "verdict"), "unknown");
		if (strcmp(str_or(json_get_string(p, "host"), ""), n->name) || !strcmp(v, "ok"))
			continue;
		bool bad = !strcmp(v, "bad");
		if (bad || st == Q_NOT_RUN) {
			strbuf_reset(&why);
			double port = 0;
			json_get_number(p, "port", &port);
			strbuf_addf(&why, "burn-in: %s port %.0f %s: ",
				    str_or(json_get_string(p, "hca"), "?"), port, v);
			strbuf_add_excerpt(&why, str_or(json_get_string(p, "message"), ""), 160);
		}
		if (bad)
			st = Q_FAILED;
		else if (st == Q_NOT_RUN)
			st = Q_UNKNOWN;
	}
	for (size_t i = 0; st != Q_FAILED && hcas && hcas->type == JSON_ARRAY && i < hcas->nr;
	     i++) {
		const struct json_value *h = hcas->items[i];
		if (strcmp(str_or(json_get_string(h, "host"), ""), n->name) ||
		    strcmp(str_or(json_get_string(h, "verdict"), ""), "suspect"))
			continue;
		strbuf_reset(&why);
		strbuf_addf(&why, "burn-in: %s is suspect: every pair of it was bad while its "
				  "partners did well with others",
			    str_or(json_get_string(h, "hca"), "?"));
		st = Q_FAILED;
	}
	if (st == Q_NOT_RUN) {
		bool in = false, good = false;
		for (size_t i = 0; pairs && pairs->type == JSON_ARRAY && i < pairs->nr; i++) {
			const struct json_value *p = pairs->items[i];
			if (strcmp(str_or(json_get_string(p, "a"), ""), n->name) &&
			    strcmp(str_or(json_get_string(p, "b"), ""), n->name))
				continue;
			in = true;
			good |= !strcmp(str_or(json_get_string(p, "verdict"), ""), "ok");
		}
		if (!in)
			goto out;
		st = good ? Q_PASSED : Q_UNKNOWN;
		strbuf_addstr(&why, good ? "its burn-in pairs passed"
					 : "burn-in: no pair of it passed (which side cannot be told)");
	}
	q_node_merge(n, Q_FABRIC, st, why.buf, NULL);
out:
	strbuf_release(&why);
}

void q_burnin_apply(struct q_card *c, const struct json_value *plan,
		    const struct json_value *run, const char *plan_path)
{
	const struct json_value *stages = json_get(plan, "stages");
	const struct json_value *missing = json_get(plan, "missing_hosts");
	const struct json_value *pairs = json_get(run, "pairs"), *links = json_get(run, "links");
	const struct json_value *ports = json_get(run, "ports"), *hcas = json_get(run, "hcas");
	const char *verdict = json_get_string(run, "verdict");
	double oos = 0;
	json_get_number(plan, "out_of_scope", &oos);
	for (size_t i = 0; i < c->nr; i++)
		burnin_node(&c->nodes[i], run);
	/* a node of the allocation that the topology lacks: its links were not planned */
	for (size_t i = 0; missing && missing->type == JSON_ARRAY && i < missing->nr; i++) {
		struct q_node *n = missing->items[i]->type == JSON_STRING
					   ? q_card_node(c, missing->items[i]->string)
					   : NULL;
		if (n)
			q_node_merge(n, Q_FABRIC, Q_UNKNOWN,
				     "burn-in: not in the fabric's topology (no HCA on a usable link)",
				     NULL);
	}
	size_t bad_ports = count_verdict(ports, "bad"), sus_hcas = count_verdict(hcas, "suspect");
	size_t sus_links = count_verdict(links, "suspect"), ok_pairs = count_verdict(pairs, "ok");
	size_t nr_pairs = pairs && pairs->type == JSON_ARRAY ? pairs->nr : 0;
	const char *status = !verdict			    ? "unknown"
			     : bad_ports || sus_hcas || sus_links ? "failed"
			     : ok_pairs < nr_pairs || strcmp(verdict, "ok") ? "unknown"
								  : "passed";
	struct strbuf t = STRBUF_INIT, why = STRBUF_INIT;
	if (!verdict)
		strbuf_addstr(&why, "no report from vigil fabric burnin run");
	else
		strbuf_addf(&why, "stage 1 of %zu: %zu of %zu pairs ok, %zu links ok, %zu suspect; "
				  "%zu ports bad, %zu HCAs suspect",
			    stages && stages->type == JSON_ARRAY ? stages->nr : 0, ok_pairs,
			    nr_pairs, count_verdict(links, "ok"), sus_links, bad_ports, sus_hcas);
	strbuf_addstr(&t, "{\"status\":");
	json_quote(&t, status, strlen(status));
	strbuf_addstr(&t, ",\"reason\":");
	json_quote(&t, why.buf, why.len);
	strbuf_addf(&t, ",\"stage\":1,\"stages_in_plan\":%zu,\"pairs\":%zu,\"pairs_ok\":%zu,"
			"\"links_ok\":%zu,\"links_suspect\":[",
		    stages && stages->type == JSON_ARRAY ? stages->nr : 0, nr_pairs, ok_pairs,
		    count_verdict(links, "ok"));
	bool first = true;
	for (size_t i = 0; links && links->type == JSON_ARRAY && i < links->nr; i++) {
		const struct json_value *l = links->items[i];
		const char *id = json_get_string(l, "id");
		if (!id || strcmp(str_or(json_get_string(l, "verdict"), ""), "suspect"))
			continue;
		strbuf_addstr(&t, first ? "" : ",");
		json_quote(&t, id, strlen(id));
		first = false;
	}
	strbuf_addf(&t, "],\"out_of_scope\":%.0f,\"plan\":", oos);
	json_quote(&t, plan_path, strlen(plan_path));
	strbuf_addstr(&t, "}");
	set_burnin(c, &t);
	strbuf_release(&t);
	strbuf_release(&why);
}
