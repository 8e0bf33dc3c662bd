/*
 * fabric_fuzz.h: what the two fabric parsers' fuzz targets (iblinkinfo.c, ibnetdiscover.c)
 * share: parse with the format forced, then check the graph, the link survey and a burn-in
 * plan over it. Header-only so each target stays one file for the Makefile's fuzz rule.
 */
#ifndef VIGIL_FUZZ_FABRIC_H
#define VIGIL_FUZZ_FABRIC_H

#include "../../src/fabric/links.h"
#include "../../src/fabric/plan.h"
#include "../../src/lib/json.h"

#include <stdint.h>
#include <string.h>

/* Plan f with o: a plan that is built must verify, name a missing host when o lists hosts (the
 * caller's list always holds one the fabric lacks), and write JSON that parses. */
static inline void fuzz_plan(const struct fabric *f, const struct plan_opts *o, struct strbuf *out,
			     struct strbuf *err)
{
	struct plan p;
	if (plan_build(f, o, &p, err) != 0)
		return;
	if (plan_verify(f, o, &p, err) != 0 || (o->nr_hosts && !p.nr_missing))
		__builtin_trap();
	strbuf_reset(out);
	plan_write_json(f, &p, out);
	struct json_value *v = json_parse(out->buf, out->len, err);
	if (!v)
		__builtin_trap();
	json_free(v);
	plan_release(&p);
}

static inline void fabric_fuzz_one(const uint8_t *data, size_t size, enum fabric_format fmt)
{
	struct fabric f;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	fabric_init(&f);
	f.format = fmt;
	int rc = fabric_parse(&f, (const char *)data, size, &err);
	if (f.format != fmt || f.garbage + f.understood > f.lines)
		__builtin_trap();
	if (rc == 0) {
		for (size_t i = 0; i < f.nr_ports; i++) {
			const struct fport *p = &f.ports[i];
			if (p->node < 0 || (size_t)p->node >= f.nr_nodes || p->peer >= (int)f.nr_nodes ||
			    p->width < 0 || p->width > 12 || p->speed < 0 || p->speed > IBSP_XDR)
				__builtin_trap();
		}
		for (size_t i = 0; i < f.nr_links; i++) {
			const struct flink *l = &f.links[i];
			if (l->a < 0 || l->b < 0 || (size_t)l->a >= f.nr_nodes ||
			    (size_t)l->b >= f.nr_nodes || l->pa >= (int)f.nr_ports ||
			    l->pb >= (int)f.nr_ports || (l->pa < 0 && l->pb < 0))
				__builtin_trap();
		}
		for (size_t n = 0; n < f.nr_nodes; n++)
			if (!f.nodes[n].name || !f.nodes[n].host || !f.nodes[n].hca ||
			    strlen(f.nodes[n].name) >= FNODE_NAME_MAX)
				__builtin_trap();
		struct link_survey s;
		links_survey(&f, NULL, &s);
		size_t sum = 0;
		for (int k = 0; k < LF__COUNT; k++)
			sum += s.count[k];
		if (sum != s.nr)
			__builtin_trap();
		links_write_json(&f, &s, "fuzz", &out);
		struct json_value *v = json_parse(out.buf, out.len, &err);
		if (!v)
			__builtin_trap();
		json_free(v);
		strbuf_reset(&out);
		links_write_text(&f, &s, &out);
		links_survey_release(&s);

		struct plan_opts o = { .hosts_per_stage = size % 7 };
		fuzz_plan(&f, &o, &out, &err);
		/* an allocation's share: every other HCA's host, and one the fabric lacks */
		const char *some[9];
		size_t ns = 0;
		for (size_t i = 0; i < f.nr_nodes && ns < 8; i += 2)
			if (!f.nodes[i].is_switch)
				some[ns++] = f.nodes[i].host;
		some[ns++] = "no-such-host";
		struct plan_opts oh = { .hosts_per_stage = size % 5, .hosts = some, .nr_hosts = ns };
		fuzz_plan(&f, &oh, &out, &err);
	}
	fabric_release(&f);
	strbuf_release(&err);
	strbuf_release(&out);
}

#endif
