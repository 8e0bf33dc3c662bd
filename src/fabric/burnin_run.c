/*
 * burnin_run.c: the burn-in's plan and counters read, and its judgement (see burnin_run.h).
 *
 * Why these rules: a host sees only its own ports' counters (a switch port needs the fabric
 * manager), so the counters judge the host end of each cable; the bandwidth of pairs judges the
 * links in between. A slow pair says "something on my path is bad", never which: a link that
 * also carried a good pair in some stage is cleared, a link whose every pair was slow is
 * suspect, and an HCA whose every pair was bad while each of its partners did well with someone
 * else is suspect itself. A pair that could not be measured counts for nothing either way.
 */
#include "burnin_run.h"
#include "../lib/json.h"

#include <ctype.h>

static bool plain_name(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 63 || s[0] == '-' || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

static int get_name(const struct json_value *o, const char *key, bool required, char **out,
		    const char *where, struct strbuf *err)
{
	const struct json_value *v = json_get(o, key);
	if (!v && !required)
		return 0;
	if (!v || v->type != JSON_STRING)
		return error_set(err, "%s: no '%s'", where, key);
	if (!plain_name(v->string)) {
		struct strbuf q = STRBUF_INIT;
		strbuf_add_excerpt(&q, v->string, 40);
		error_set(err, "%s: '%s' is '%s', not a plain host or HCA name", where, key, q.buf);
		strbuf_release(&q);
		return -1;
	}
	*out = xstrdup(v->string);
	return 0;
}

static int get_int(const struct json_value *o, const char *key, int *out)
{
	double d;
	if (!json_get_number(o, key, &d) || d < 0 || d > 1e6 || d != (double)(int)d)
		return -1;
	*out = (int)d;
	return 0;
}

int br_plan_parse(const char *text, size_t len, struct br_plan *p, struct strbuf *err)
{
	struct strbuf perr = STRBUF_INIT;
	char where[96];
	int ret = -1;
	memset(p, 0, sizeof(*p));
	struct json_value *root = json_parse(text, len, &perr);
	if (!root) {
		error_set(err, "not JSON: %s", perr.buf);
		goto out;
	}
	double ver;
	if (!json_get_number(root, "version", &ver) || ver != 1) {
		error_set(err, "not a version 1 burn-in plan (no \"version\": 1)");
		goto out;
	}
	const struct json_value *links = json_get(root, "links");
	const struct json_value *stages = json_get(root, "stages");
	if (!links || links->type != JSON_ARRAY || !stages || stages->type != JSON_ARRAY) {
		error_set(err, "no 'links' or 'stages' array");
		goto out;
	}
	p->links = xcalloc(links->nr ? links->nr : 1, sizeof(*p->links));
	for (size_t i = 0; i < links->nr; i++) {
		const struct json_value *l = links->items[i];
		struct br_link *bl = &p->links[p->nr_links++];
		snprintf(where, sizeof(where), "link %zu", i + 1);
		if (l->type != JSON_OBJECT) {
			error_set(err, "%s is not an object", where);
			goto out;
		}
		if (get_name(l, "id", true, &bl->id, where, err) < 0 ||
		    get_name(l, "a", true, &bl->a, where, err) < 0 ||
		    get_name(l, "b", true, &bl->b, where, err) < 0 ||
		    get_name(l, "a_hca", false, &bl->a_hca, where, err) < 0)
			goto out;
		if (get_int(l, "a_port", &bl->a_port) < 0 || get_int(l, "b_port", &bl->b_port) < 0) {
			error_set(err, "%s: 'a_port' and 'b_port' want port numbers", where);
			goto out;
		}
	}
	p->stages = xcalloc(stages->nr ? stages->nr : 1, sizeof(*p->stages));
	for (size_t i = 0; i < stages->nr; i++) {
		const struct json_value *s = stages->items[i];
		struct br_stage *bs = &p->stages[p->nr_stages++];
		const struct json_value *pairs = json_get(s, "pairs");
		if (s->type != JSON_OBJECT || get_int(s, "stage", &bs->stage) < 0 || !pairs ||
		    pairs->type != JSON_ARRAY) {
			error_set(err, "stage %zu: wants a 'stage' number and a 'pairs' array", i + 1);
			goto out;
		}
		bs->pairs = xcalloc(pairs->nr ? pairs->nr : 1, sizeof(*bs->pairs));
		for (size_t k = 0; k < pairs->nr; k++) {
			const struct json_value *q = pairs->items[k];
			struct br_pair *bp = &bs->pairs[bs->nr++];
			bp->bw_gbps = -1;
			snprintf(where, sizeof(where), "stage %d pair %zu", bs->stage, k + 1);
			if (q->type != JSON_OBJECT) {
				error_set(err, "%s is not an object", where);
				goto out;
			}
			if (get_name(q, "a", true, &bp->a, where, err) < 0 ||
			    get_name(q, "a_hca", true, &bp->a_hca, where, err) < 0 ||
			    get_name(q, "b", true, &bp->b, where, err) < 0 ||
			    get_name(q, "b_hca", true, &bp->b_hca, where, err) < 0)
				goto out;
			if (!strcmp(bp->a, bp->b)) {
				error_set(err, "%s: a host paired with itself", where);
				goto out;
			}
			const struct json_value *ls = json_get(q, "links");
			for (size_t m = 0; ls && ls->type == JSON_ARRAY && m < ls->nr; m++)
				if (ls->items[m]->type == JSON_STRING)
					strlist_add(&bp->links, ls->items[m]->string);
		}
	}
	ret = 0;
out:
	json_free(root);
	strbuf_release(&perr);
	return ret;
}

void br_plan_release(struct br_plan *p)
{
	for (size_t i = 0; i < p->nr_links; i++) {
		free(p->links[i].id);
		free(p->links[i].a);
		free(p->links[i].a_hca);
		free(p->links[i].b);
	}
	free(p->links);
	for (size_t i = 0; i < p->nr_stages; i++) {
		for (size_t k = 0; k < p->stages[i].nr; k++) {
			struct br_pair *q = &p->stages[i].pairs[k];
			free(q->a);
			free(q->a_hca);
			free(q->b);
			free(q->b_hca);
			free(q->message);
			strlist_release(&q->links);
		}
		free(p->stages[i].pairs);
	}
	free(p->stages);
	memset(p, 0, sizeof(*p));
}

int br_counters_parse(const char *text, size_t len, struct br_counters *c, struct strbuf *err)
{
	struct strbuf perr = STRBUF_INIT;
	int ret = -1;
	memset(c, 0, sizeof(*c));
	struct json_value *root = json_parse(text, len, &perr);
	const struct json_value *ports = root ? json_get(root, "ports") : NULL;
	const char *e = root ? json_get_string(root, "error") : NULL;
	if (!root) {
		error_set(err, "not JSON: %s", perr.buf);
	} else if (e) {
		struct strbuf q = STRBUF_INIT;
		strbuf_add_excerpt(&q, e, 200);
		error_set(err, "%s", q.buf);
		strbuf_release(&q);
	} else if (!ports || ports->type != JSON_ARRAY || !ports->nr) {
		error_set(err, "no ports in the counters report");
	} else {
		c->ports = xcalloc(ports->nr, sizeof(*c->ports));
		ret = 0;
		for (size_t i = 0; i < ports->nr && ret == 0; i++) {
			const struct json_value *p = ports->items[i];
			const char *hca = json_get_string(p, "hca");
			int port;
			const struct json_value *cs = json_get(p, "counters");
			if (!hca || !plain_name(hca) || get_int(p, "port", &port) < 0 || !cs ||
			    cs->type != JSON_OBJECT) {
				ret = error_set(err, "port %zu of the counters report is not understood",
						i + 1);
				break;
			}
			struct br_port_reading *r = &c->ports[c->nr++];
			strlcpy_v(r->hca, hca, sizeof(r->hca));
			r->port = (unsigned)port;
			for (int k = 0; k < IBC__COUNT; k++) {
				double d;
				if (json_get_number(cs, ib_counters[k].name, &d) && d >= 0 && d < 1.9e19) {
					r->have[k] = true;
					r->counter[k] = (uint64_t)d;
				}
			}
		}
	}
	c->ok = ret == 0;
	if (!c->ok)
		strlcpy_v(c->error, err->buf, sizeof(c->error));
	json_free(root);
	strbuf_release(&perr);
	return ret;
}

void br_counters_release(struct br_counters *c)
{
	free(c->ports);
	memset(c, 0, sizeof(*c));
}

const char *br_verdict_name(enum br_verdict v)
{
	switch (v) {
	case BRV_OK: return "ok";
	case BRV_UNTESTED: return "untested";
	case BRV_UNKNOWN: return "unknown";
	case BRV_SUSPECT: return "suspect";
	case BRV_BAD: return "bad";
	}
	return "unknown";
}

/* ---- the judgement ---- */

struct jport {
	const char *host;
	char hca[64];
	unsigned port;
	enum br_verdict v;
	uint64_t rise[IBC__COUNT];
	char why[256];
};

struct jhca {
	const char *host, *hca;
	unsigned good, bad, unknown;
	enum br_verdict v;
};

struct jstate {
	struct jport *ports;
	size_t np, ap;
	struct jhca *hcas;
	size_t nh, ah;
};

static struct jport *port_of(struct jstate *s, const char *host, const char *hca, unsigned port)
{
	for (size_t i = 0; i < s->np; i++)
		if (!strcmp(s->ports[i].host, host) && !strcmp(s->ports[i].hca, hca) &&
		    s->ports[i].port == port)
			return &s->ports[i];
	ALLOC_GROW(s->ports, s->np + 1, s->ap);
	struct jport *p = &s->ports[s->np++];
	memset(p, 0, sizeof(*p));
	p->host = host;
	strlcpy_v(p->hca, hca, sizeof(p->hca));
	p->port = port;
	p->v = BRV_OK;
	return p;
}

static struct jhca *hca_of(struct jstate *s, const char *host, const char *hca)
{
	for (size_t i = 0; i < s->nh; i++)
		if (!strcmp(s->hcas[i].host, host) && !strcmp(s->hcas[i].hca, hca))
			return &s->hcas[i];
	ALLOC_GROW(s->hcas, s->nh + 1, s->ah);
	struct jhca *h = &s->hcas[s->nh++];
	memset(h, 0, sizeof(*h));
	h->host = host;
	h->hca = hca;
	return h;
}

static void worse(enum br_verdict *v, enum br_verdict n, char *why, size_t wn, const char *msg)
{
	if (n > *v) {
		*v = n;
		strlcpy_v(why, msg, wn);
	}
}

static void judge_counters(struct jstate *s, const struct br_host_stage *h)
{
	char msg[256];
	if (!h->before.ok || !h->after.ok) {
		struct jport *p = port_of(s, h->host, "", 0);
		snprintf(msg, sizeof(msg), "stage %d: counters %s could not be read: %.200s", h->stage,
			 !h->before.ok ? "before" : "after",
			 !h->before.ok ? h->before.error : h->after.error);
		worse(&p->v, BRV_UNKNOWN, p->why, sizeof(p->why), msg);
		return;
	}
	for (size_t i = 0; i < h->after.nr; i++) {
		const struct br_port_reading *a = &h->after.ports[i], *b = NULL;
		for (size_t k = 0; k < h->before.nr && !b; k++)
			if (!strcmp(h->before.ports[k].hca, a->hca) && h->before.ports[k].port == a->port)
				b = &h->before.ports[k];
		struct jport *p = port_of(s, h->host, a->hca, a->port);
		if (!b) {
			snprintf(msg, sizeof(msg), "stage %d: the port was not there before", h->stage);
			worse(&p->v, BRV_UNKNOWN, p->why, sizeof(p->why), msg);
			continue;
		}
		for (int c = 0; c < IBC__COUNT; c++) {
			if (!a->have[c] || !b->have[c])
				continue;
			if (a->counter[c] < b->counter[c]) {
				snprintf(msg, sizeof(msg), "stage %d: %s went down (reset during the "
					 "stage?)", h->stage, ib_counters[c].name);
				worse(&p->v, BRV_UNKNOWN, p->why, sizeof(p->why), msg);
				continue;
			}
			uint64_t d = a->counter[c] - b->counter[c];
			if (!d)
				continue;
			p->rise[c] += d;
			snprintf(msg, sizeof(msg), "stage %d: %s rose by %llu (%s)", h->stage,
				 ib_counters[c].name, (unsigned long long)d, ib_counters[c].meaning);
			worse(&p->v, ib_counters[c].fails ? BRV_BAD : BRV_SUSPECT, p->why,
			      sizeof(p->why), msg);
		}
	}
}

static bool pair_good(const struct br_pair *q)
{
	return q->ran && q->verdict == IBV_OK;
}

static bool pair_bad(const struct br_pair *q)
{
	return q->ran && (q->verdict == IBV_SLOW || q->verdict == IBV_ERROR);
}

static void json_opt_str(struct json_writer *w, const char *k, const char *v)
{
	json_key(w, k);
	if (v)
		json_string(w, v);
	else
		json_null(w);
}

void br_judge(const struct br_plan *p, const struct br_host_stage *hs, size_t nr_hs,
	      struct br_judgement *j)
{
	struct jstate s;
	struct json_writer w;
	bool act = false, unknown = false;
	memset(&s, 0, sizeof(s));
	strbuf_init(&j->json, 0);
	strbuf_init(&j->text, 0);
	for (size_t i = 0; i < nr_hs; i++)
		judge_counters(&s, &hs[i]);

	/* HCAs: good and bad pairs each was in */
	for (size_t i = 0; i < p->nr_stages; i++)
		for (size_t k = 0; k < p->stages[i].nr; k++) {
			const struct br_pair *q = &p->stages[i].pairs[k];
			if (!q->ran)
				continue;
			struct jhca *x[2] = { hca_of(&s, q->a, q->a_hca), hca_of(&s, q->b, q->b_hca) };
			for (int e = 0; e < 2; e++) {
				if (pair_good(q))
					x[e]->good++;
				else if (pair_bad(q))
					x[e]->bad++;
				else
					x[e]->unknown++;
			}
		}
	for (size_t i = 0; i < s.nh; i++) {
		struct jhca *h = &s.hcas[i];
		h->v = h->bad ? BRV_OK : (h->good ? BRV_OK : BRV_UNKNOWN);
		if (!h->bad || h->good)
			continue;
		/* every pair of it bad: suspect when each partner did well elsewhere */
		bool partners_good = true;
		for (size_t a = 0; a < p->nr_stages; a++)
			for (size_t k = 0; k < p->stages[a].nr; k++) {
				const struct br_pair *q = &p->stages[a].pairs[k];
				if (!pair_bad(q))
					continue;
				const char *ph = NULL, *pc = NULL;
				if (!strcmp(q->a, h->host) && !strcmp(q->a_hca, h->hca))
					ph = q->b, pc = q->b_hca;
				else if (!strcmp(q->b, h->host) && !strcmp(q->b_hca, h->hca))
					ph = q->a, pc = q->a_hca;
				if (ph && !hca_of(&s, ph, pc)->good)
					partners_good = false;
			}
		h = &s.hcas[i]; /* hca_of may have grown the array */
		h->v = partners_good ? BRV_SUSPECT : BRV_UNKNOWN;
	}

	json_writer_init(&w, &j->json, true);
	json_open_top(&w);
	json_key(&w, "stages_run");
	json_open_array(&w);
	for (size_t i = 0; i < p->nr_stages; i++)
		if (p->stages[i].ran)
			json_int(&w, p->stages[i].stage);
	json_close_array(&w);

	strbuf_addstr(&j->text, "pairs:\n");
	json_key(&w, "pairs");
	json_open_array(&w);
	for (size_t i = 0; i < p->nr_stages; i++)
		for (size_t k = 0; k < p->stages[i].nr; k++) {
			const struct br_pair *q = &p->stages[i].pairs[k];
			if (!q->ran)
				continue;
			json_open_object(&w);
			json_key(&w, "stage");
			json_int(&w, p->stages[i].stage);
			json_opt_str(&w, "a", q->a);
			json_opt_str(&w, "a_hca", q->a_hca);
			json_opt_str(&w, "b", q->b);
			json_opt_str(&w, "b_hca", q->b_hca);
			json_opt_str(&w, "verdict", ib_verdict_name(q->verdict));
			json_key(&w, "bw_gbps");
			if (q->bw_gbps >= 0)
				json_fixed(&w, q->bw_gbps, 2);
			else
				json_null(&w);
			json_opt_str(&w, "message", q->message ? q->message : "");
			json_close_object(&w);
			strbuf_addf(&j->text, "  stage %-3d %s %s -> %s %s  %-7s", p->stages[i].stage,
				    q->a, q->a_hca, q->b, q->b_hca, ib_verdict_name(q->verdict));
			if (q->bw_gbps >= 0)
				strbuf_addf(&j->text, " %.1f Gb/s", q->bw_gbps);
			else if (q->message)
				strbuf_addf(&j->text, " %s", q->message);
			strbuf_addch(&j->text, '\n');
			act |= pair_bad(q);
			unknown |= q->verdict == IBV_UNKNOWN;
		}
	json_close_array(&w);

	strbuf_addstr(&j->text, "ports:\n");
	json_key(&w, "ports");
	json_open_array(&w);
	for (size_t i = 0; i < s.np; i++) {
		const struct jport *x = &s.ports[i];
		json_open_object(&w);
		json_opt_str(&w, "host", x->host);
		json_opt_str(&w, "hca", x->hca[0] ? x->hca : NULL);
		json_key(&w, "port");
		json_uint(&w, x->port);
		json_opt_str(&w, "verdict", br_verdict_name(x->v));
		json_key(&w, "rises");
		json_open_object(&w);
		for (int c = 0; c < IBC__COUNT; c++)
			if (x->rise[c]) {
				json_key(&w, ib_counters[c].name);
				json_uint(&w, x->rise[c]);
			}
		json_close_object(&w);
		json_opt_str(&w, "message", x->why);
		json_close_object(&w);
		if (x->v != BRV_OK || x->hca[0] == '\0')
			strbuf_addf(&j->text, "  %s %s port %u  %s  %s\n", x->host,
				    x->hca[0] ? x->hca : "(all)", x->port, br_verdict_name(x->v), x->why);
		act |= x->v == BRV_BAD || x->v == BRV_SUSPECT;
		unknown |= x->v == BRV_UNKNOWN;
	}
	size_t okp = 0;
	for (size_t i = 0; i < s.np; i++)
		okp += s.ports[i].v == BRV_OK;
	strbuf_addf(&j->text, "  %zu port%s without a counter rise\n", okp, okp == 1 ? "" : "s");
	json_close_array(&w);

	strbuf_addstr(&j->text, "links:\n");
	json_key(&w, "links");
	json_open_array(&w);
	for (size_t i = 0; i < p->nr_links; i++) {
		const struct br_link *l = &p->links[i];
		unsigned good = 0, bad = 0, unk = 0;
		for (size_t a = 0; a < p->nr_stages; a++)
			for (size_t k = 0; k < p->stages[a].nr; k++) {
				const struct br_pair *q = &p->stages[a].pairs[k];
				if (!q->ran || !strlist_has(&q->links, l->id))
					continue;
				good += pair_good(q);
				bad += pair_bad(q);
				unk += !pair_good(q) && !pair_bad(q);
			}
		enum br_verdict v;
		char why[256];
		if (good) {
			v = BRV_OK;
			snprintf(why, sizeof(why), "%u good pair%s across it", good, good == 1 ? "" : "s");
		} else if (bad) {
			v = BRV_SUSPECT;
			snprintf(why, sizeof(why), "every measured pair across it was slow or failed (%u)",
				 bad);
		} else if (unk) {
			v = BRV_UNKNOWN;
			snprintf(why, sizeof(why), "no pair across it could be measured");
		} else {
			v = BRV_UNTESTED;
			snprintf(why, sizeof(why), "no stage that ran crosses it");
		}
		if (l->a_hca) {
			for (size_t k = 0; k < s.np; k++)
				if (!strcmp(s.ports[k].host, l->a) && !strcmp(s.ports[k].hca, l->a_hca) &&
				    (int)s.ports[k].port == l->a_port && s.ports[k].v == BRV_BAD) {
					v = BRV_BAD;
					snprintf(why, sizeof(why), "the host end's error counters rose: %.200s",
						 s.ports[k].why);
				}
		}
		json_open_object(&w);
		json_opt_str(&w, "id", l->id);
		json_opt_str(&w, "a", l->a);
		json_opt_str(&w, "a_hca", l->a_hca);
		json_key(&w, "a_port");
		json_int(&w, l->a_port);
		json_opt_str(&w, "b", l->b);
		json_key(&w, "b_port");
		json_int(&w, l->b_port);
		json_opt_str(&w, "verdict", br_verdict_name(v));
		json_key(&w, "pairs_good");
		json_uint(&w, good);
		json_key(&w, "pairs_bad");
		json_uint(&w, bad);
		json_key(&w, "pairs_unknown");
		json_uint(&w, unk);
		json_opt_str(&w, "message", why);
		json_close_object(&w);
		strbuf_addf(&j->text, "  %-6s %s:%d - %s:%d  %-8s %s\n", l->id, l->a, l->a_port, l->b,
			    l->b_port, br_verdict_name(v), why);
		act |= v == BRV_BAD || v == BRV_SUSPECT;
		unknown |= v == BRV_UNKNOWN;
	}
	json_close_array(&w);

	json_key(&w, "hcas");
	json_open_array(&w);
	for (size_t i = 0; i < s.nh; i++) {
		const struct jhca *h = &s.hcas[i];
		if (h->v == BRV_OK)
			continue;
		json_open_object(&w);
		json_opt_str(&w, "host", h->host);
		json_opt_str(&w, "hca", h->hca);
		json_opt_str(&w, "verdict", br_verdict_name(h->v));
		json_key(&w, "pairs_good");
		json_uint(&w, h->good);
		json_key(&w, "pairs_bad");
		json_uint(&w, h->bad);
		json_close_object(&w);
		if (h->v == BRV_SUSPECT) {
			if (!j->text.len || !strstr(j->text.buf, "hcas:\n"))
				strbuf_addstr(&j->text, "hcas:\n");
			strbuf_addf(&j->text, "  %s %s  suspect: every pair it was in was bad (%u), "
				    "its partners did well with others\n", h->host, h->hca, h->bad);
			act = true;
		}
	}
	json_close_array(&w);
	j->exit_code = act ? 1 : unknown ? 3 : 0;
	json_key(&w, "verdict");
	json_string(&w, act ? "act" : unknown ? "unknown" : "ok");
	json_key(&w, "exit_code");
	json_int(&w, j->exit_code);
	json_close_object(&w);
	strbuf_addch(&j->json, '\n');
	strbuf_addf(&j->text, "verdict: %s\n",
		    act ? "something to act on" : unknown ? "could not tell" : "nothing to act on");
	free(s.ports);
	free(s.hcas);
}

void br_judgement_release(struct br_judgement *j)
{
	strbuf_release(&j->json);
	strbuf_release(&j->text);
}
