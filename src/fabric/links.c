/*
 * links.c: the link survey (links.h). Each link is judged once, from both ends' reports: a
 * link whose ends disagree is one "asymmetric" finding, not two; narrow and slow are measured
 * against the fabric's own mode (the width and speed most links of the class run at), because
 * a fabric of HDR links is healthy at HDR and one NDR link in it is not the fault.
 */
#include "links.h"
#include "../lib/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lf_kind_name(enum lf_kind k)
{
	static const char *const n[] = { "down", "init", "narrow", "slow", "asymmetric" };
	return k < LF__COUNT ? n[k] : "?";
}

static const char ADV_DOWN[] =
	"reseat or replace the cable (and its transceivers); if the port stays Down, inspect both ports";
static const char ADV_INIT[] =
	"the link trained but the subnet manager has not activated it: check the SM is running and "
	"sees this port, then reseat the cable";
static const char ADV_NARROW[] =
	"reseat or replace the cable: lanes are missing (a dirty or damaged connector or cable)";
static const char ADV_SLOW[] =
	"reseat or replace the cable, then check both ends' firmware and speed settings";
static const char ADV_ASYM[] =
	"read the fabric again (it may have changed between the two ends' reads); if the ends "
	"still disagree, check the cabling against the plan and reseat the cable";

/* Name of node n for messages, cleaned of control bytes. */
static void add_name(struct strbuf *sb, const struct fabric *f, int n)
{
	if (n < 0) {
		strbuf_addstr(sb, "?");
		return;
	}
	strbuf_add_excerpt(sb, f->nodes[n].name[0] ? f->nodes[n].name : f->nodes[n].key, 80);
}

static struct link_finding *add(struct link_survey *s, enum lf_kind k, int node, int port,
				int peer, int peer_port)
{
	s->f = grow_array(s->f, sizeof(*s->f), s->nr + 1, &s->alloc);
	struct link_finding *x = &s->f[s->nr++];
	memset(x, 0, sizeof(*x));
	x->kind = k;
	x->node = node;
	x->port = port;
	x->peer = peer;
	x->peer_port = peer_port;
	s->count[k]++;
	return x;
}

static void set_detail(struct link_finding *x, struct strbuf *sb)
{
	strlcpy_v(x->detail, sb->buf, sizeof(x->detail));
	strbuf_reset(sb);
}

/* the most common non-zero value of v[0..n) (ties: the larger, so a half-degraded fabric
 * flags the lower half) */
static int mode_of(const int *v, size_t n, int maxv)
{
	size_t *cnt = xcalloc((size_t)maxv + 1, sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		if (v[i] > 0 && v[i] <= maxv)
			cnt[v[i]]++;
	int best = 0;
	for (int i = 1; i <= maxv; i++)
		if (cnt[i] && cnt[i] >= cnt[best])
			best = i;
	free(cnt);
	return best;
}

/* expected ports: (name, port) sorted, for --expect */
struct xport {
	const char *name;
	int port;
	int peer; /* node of the expected fabric */
	int peer_port;
};

static int xport_cmp(const void *a, const void *b)
{
	const struct xport *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->port > y->port) - (x->port < y->port);
}

static bool usable(const struct fport *p)
{
	/* ibnetdiscover does not say the state: a port it lists has a peer, so it is not Down */
	return p->state == IBS_ACTIVE || p->state == IBS_UNKNOWN;
}

static int min_known(int a, int b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

void links_survey(const struct fabric *f, const struct fabric *expect, struct link_survey *s)
{
	memset(s, 0, sizeof(*s));
	s->expect_given = expect != NULL;
	struct strbuf sb = STRBUF_INIT;
	for (size_t n = 0; n < f->nr_nodes; n++) {
		if (f->nodes[n].is_switch)
			s->switches++;
		else
			s->hcas++;
	}
	s->links = f->nr_links;
	s->ports = f->nr_ports;

	/* ports a link names as an end, so a Down end of a link another port claims is judged
	 * once, as the link's asymmetry */
	bool *in_link = xcalloc(f->nr_ports + 1, sizeof(bool));
	int *eff_w = xcalloc(f->nr_links + 1, sizeof(int));
	int *eff_s = xcalloc(f->nr_links + 1, sizeof(int));
	int *cls = xcalloc(f->nr_links + 1, sizeof(int));
	int *wv[LC__COUNT], *sv[LC__COUNT];
	size_t nv[LC__COUNT] = { 0, 0 };
	for (int c = 0; c < LC__COUNT; c++) {
		wv[c] = xcalloc(f->nr_links + 1, sizeof(int));
		sv[c] = xcalloc(f->nr_links + 1, sizeof(int));
	}
	for (size_t i = 0; i < f->nr_links; i++) {
		const struct flink *l = &f->links[i];
		const struct fport *ra = l->pa >= 0 ? &f->ports[l->pa] : NULL;
		const struct fport *rb = l->pb >= 0 ? &f->ports[l->pb] : NULL;
		if (ra)
			in_link[l->pa] = true;
		if (rb)
			in_link[l->pb] = true;
		cls[i] = f->nodes[l->a].is_switch && f->nodes[l->b].is_switch ? LC_SWITCH : LC_HOST;
		bool up = (!ra || usable(ra)) && (!rb || usable(rb));
		eff_w[i] = min_known(ra ? ra->width : 0, rb ? rb->width : 0);
		eff_s[i] = min_known(ra ? ra->speed : 0, rb ? rb->speed : 0);
		if (up) {
			/* one report per link (the first end's): the mode is what links run at */
			if (ra) {
				wv[cls[i]][nv[cls[i]]] = ra->width;
				sv[cls[i]][nv[cls[i]]++] = ra->speed;
			} else if (rb) {
				wv[cls[i]][nv[cls[i]]] = rb->width;
				sv[cls[i]][nv[cls[i]]++] = rb->speed;
			}
		}
	}
	for (int c = 0; c < LC__COUNT; c++) {
		s->mode_width[c] = mode_of(wv[c], nv[c], 12);
		s->mode_speed[c] = mode_of(sv[c], nv[c], IBSP_XDR);
		free(wv[c]);
		free(sv[c]);
	}

	for (size_t i = 0; i < f->nr_links; i++) {
		const struct flink *l = &f->links[i];
		const struct fport *ra = l->pa >= 0 ? &f->ports[l->pa] : NULL;
		const struct fport *rb = l->pb >= 0 ? &f->ports[l->pb] : NULL;
		/* the switch end leads (an HCA is named as the peer), else the lower end */
		int n0 = l->a, p0 = l->a_port, n1 = l->b, p1 = l->b_port;
		const struct fport *r0 = ra, *r1 = rb;
		if (!f->nodes[n0].is_switch && f->nodes[n1].is_switch) {
			n0 = l->b, p0 = l->b_port, n1 = l->a, p1 = l->a_port;
			r0 = rb, r1 = ra;
		}
		struct link_finding *x;
		if (r0 && r1) {
			bool a_points = r0->peer == n1 && r0->peer_port == p1;
			bool b_points = r1->peer == n0 && r1->peer_port == p0;
			if (!a_points || !b_points) {
				/* one end names the other, which names something else or nothing */
				const struct fport *says = a_points ? r0 : r1;
				const struct fport *other = a_points ? r1 : r0;
				x = add(s, LF_ASYMMETRIC, n0, p0, n1, p1);
				x->act = ACTION_INSPECT_HARDWARE;
				x->advice = ADV_ASYM;
				x->line = says->line;
				add_name(&sb, f, says->node);
				strbuf_addf(&sb, " port %d reports a link to ", says->port);
				add_name(&sb, f, other->node);
				strbuf_addf(&sb, " port %d, which reports ", other->port);
				if (other->peer < 0) {
					strbuf_addf(&sb, "%s/%s and no peer", ib_state_name(other->state),
						    ib_phys_name(other->phys));
				} else {
					strbuf_addstr(&sb, "a link to ");
					add_name(&sb, f, other->peer);
					strbuf_addf(&sb, " port %d", other->peer_port);
				}
				set_detail(x, &sb);
				continue;
			}
			if (r0->width != r1->width || r0->speed != r1->speed ||
			    (r0->state != r1->state && r0->state && r1->state)) {
				x = add(s, LF_ASYMMETRIC, n0, p0, n1, p1);
				x->act = ACTION_INSPECT_HARDWARE;
				x->advice = ADV_ASYM;
				x->line = r0->line;
				x->width = min_known(r0->width, r1->width);
				x->speed = min_known(r0->speed, r1->speed);
				add_name(&sb, f, n0);
				strbuf_addf(&sb, " port %d reports %s %s %s, ", p0,
					    ib_width_name(r0->width), ib_speed_name(r0->speed),
					    ib_state_name(r0->state));
				add_name(&sb, f, n1);
				strbuf_addf(&sb, " port %d reports %s %s %s", p1,
					    ib_width_name(r1->width), ib_speed_name(r1->speed),
					    ib_state_name(r1->state));
				set_detail(x, &sb);
				continue;
			}
		}
		const struct fport *r = r0 ? r0 : r1;
		if (r && (r->state == IBS_INIT || r->state == IBS_ARMED)) {
			x = add(s, LF_INIT, n0, p0, n1, p1);
			x->act = ACTION_INVESTIGATE;
			x->advice = ADV_INIT;
			x->line = r->line;
			x->width = eff_w[i];
			x->speed = eff_s[i];
			strbuf_addstr(&sb, "the link to ");
			add_name(&sb, f, n1);
			strbuf_addf(&sb, " port %d is stuck in %s/%s", p1, ib_state_name(r->state),
				    ib_phys_name(r->phys));
			set_detail(x, &sb);
			continue;
		}
		if (r && !usable(r))
			continue;
		int c = cls[i];
		if (eff_w[i] && s->mode_width[c] && eff_w[i] < s->mode_width[c]) {
			x = add(s, LF_NARROW, n0, p0, n1, p1);
			x->act = ACTION_REPLACE_CABLE;
			x->advice = ADV_NARROW;
			x->line = r ? r->line : 0;
			x->width = eff_w[i];
			x->speed = eff_s[i];
			x->want_width = s->mode_width[c];
			x->want_speed = s->mode_speed[c];
			strbuf_addf(&sb, "runs %s where the fabric's %s links run %s",
				    ib_width_name(eff_w[i]), c == LC_HOST ? "HCA" : "switch",
				    ib_width_name(s->mode_width[c]));
			set_detail(x, &sb);
		}
		if (eff_s[i] && s->mode_speed[c] && eff_s[i] < s->mode_speed[c]) {
			x = add(s, LF_SLOW, n0, p0, n1, p1);
			x->act = ACTION_REPLACE_CABLE;
			x->advice = ADV_SLOW;
			x->line = r ? r->line : 0;
			x->width = eff_w[i];
			x->speed = eff_s[i];
			x->want_width = s->mode_width[c];
			x->want_speed = s->mode_speed[c];
			strbuf_addf(&sb, "runs %s where the fabric's %s links run %s",
				    ib_speed_name(eff_s[i]), c == LC_HOST ? "HCA" : "switch",
				    ib_speed_name(s->mode_speed[c]));
			set_detail(x, &sb);
		}
	}

	/* ports with no peer of their own and no link naming them */
	struct xport *xp = NULL;
	size_t nxp = 0;
	if (expect) {
		xp = xmalloc((expect->nr_ports + 1) * sizeof(*xp));
		for (size_t i = 0; i < expect->nr_ports; i++) {
			const struct fport *p = &expect->ports[i];
			if (p->peer < 0)
				continue;
			xp[nxp++] = (struct xport){ expect->nodes[p->node].name, p->port, p->peer,
						    p->peer_port };
		}
		qsort(xp, nxp, sizeof(*xp), xport_cmp);
	}
	for (size_t i = 0; i < f->nr_ports; i++) {
		const struct fport *p = &f->ports[i];
		if (in_link[i] || p->peer >= 0)
			continue;
		if (p->state == IBS_DOWN && p->phys == IBP_DISABLED) {
			s->disabled++;
			continue;
		}
		struct link_finding *x;
		if (p->state == IBS_INIT || p->state == IBS_ARMED) {
			x = add(s, LF_INIT, p->node, p->port, -1, -1);
			x->act = ACTION_INVESTIGATE;
			x->advice = ADV_INIT;
			x->line = p->line;
			x->width = p->width;
			x->speed = p->speed;
			strbuf_addf(&sb, "stuck in %s/%s (the peer is not available)",
				    ib_state_name(p->state), ib_phys_name(p->phys));
			set_detail(x, &sb);
			continue;
		}
		if (p->state != IBS_DOWN)
			continue;
		const struct xport *hit = NULL;
		if (xp) {
			struct xport key = { f->nodes[p->node].name, p->port, -1, -1 };
			hit = bsearch(&key, xp, nxp, sizeof(*xp), xport_cmp);
		}
		if (!hit) {
			s->down_unjudged++;
			continue;
		}
		x = add(s, LF_DOWN, p->node, p->port, -1, hit->peer_port);
		x->act = ACTION_REPLACE_CABLE;
		x->advice = ADV_DOWN;
		x->line = p->line;
		strbuf_addf(&sb, "%s/%s where the expected fabric cables it to ",
			    ib_state_name(p->state), ib_phys_name(p->phys));
		strbuf_add_excerpt(&sb, expect->nodes[hit->peer].name, 80);
		strbuf_addf(&sb, " port %d", hit->peer_port);
		set_detail(x, &sb);
		/* the peer named by the expected fabric, by name in this one where it is there */
		for (size_t n = 0; n < f->nr_nodes; n++)
			if (!strcmp(f->nodes[n].name, expect->nodes[hit->peer].name)) {
				x->peer = (int)n;
				break;
			}
		if (x->peer < 0)
			strlcpy_v(x->peer_name, expect->nodes[hit->peer].name, sizeof(x->peer_name));
	}
	free(xp);
	free(in_link);
	free(eff_w);
	free(eff_s);
	free(cls);
	strbuf_release(&sb);
}

void links_survey_release(struct link_survey *s)
{
	free(s->f);
	memset(s, 0, sizeof(*s));
}

static void json_name(struct json_writer *w, const struct fabric *f, int n, const char *alt)
{
	if (n < 0 && alt && *alt)
		json_string(w, alt);
	else if (n < 0)
		json_null(w);
	else
		json_string(w, f->nodes[n].name);
}

/* A link's ticket: "LINK-" and 8 hex digits of FNV-1a over both ends' names and ports, the
 * same from either end and on every run (a person files it once). */
static void links_ticket_id(const struct fabric *f, const struct link_finding *x,
			    struct json_writer *w)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	strbuf_addf(&a, "%s:%d", x->node >= 0 ? f->nodes[x->node].name : "?", x->port);
	strbuf_addf(&b, "%s:%d",
		    x->peer >= 0 ? f->nodes[x->peer].name : x->peer_name[0] ? x->peer_name : "?",
		    x->peer_port);
	const struct strbuf *lo = strcmp(a.buf, b.buf) <= 0 ? &a : &b;
	const struct strbuf *hi = lo == &a ? &b : &a;
	uint32_t h = 2166136261u;
	for (const struct strbuf *p = lo;; p = hi) {
		for (size_t i = 0; i < p->len; i++)
			h = (h ^ (unsigned char)p->buf[i]) * 16777619u;
		h = (h ^ '|') * 16777619u;
		if (p == hi)
			break;
	}
	char id[16];
	snprintf(id, sizeof(id), "LINK-%08x", h);
	json_string(w, id);
	strbuf_release(&a);
	strbuf_release(&b);
}

void links_write_json(const struct fabric *f, const struct link_survey *s, const char *source,
		      struct strbuf *out)
{
	struct json_writer w;
	json_writer_init(&w, out, false);
	json_open_top(&w);
	json_key(&w, "source");
	json_string(&w, source ? source : "");
	json_key(&w, "format");
	json_string(&w, f->format == FABRIC_FMT_IBNETDISCOVER ? "ibnetdiscover" : "iblinkinfo");
	json_key(&w, "counts");
	json_open_object(&w);
	json_key(&w, "switches");
	json_uint(&w, s->switches);
	json_key(&w, "hcas");
	json_uint(&w, s->hcas);
	json_key(&w, "links");
	json_uint(&w, s->links);
	json_key(&w, "ports");
	json_uint(&w, s->ports);
	for (int k = 0; k < LF__COUNT; k++) {
		json_key(&w, lf_kind_name(k));
		json_uint(&w, s->count[k]);
	}
	json_key(&w, "findings");
	json_uint(&w, s->nr);
	json_key(&w, "down_not_judged");
	json_uint(&w, s->down_unjudged);
	json_key(&w, "disabled");
	json_uint(&w, s->disabled);
	json_key(&w, "lines");
	json_uint(&w, f->lines);
	json_key(&w, "lines_not_understood");
	json_uint(&w, f->garbage);
	json_close_object(&w);
	json_key(&w, "mode");
	json_open_object(&w);
	static const char *const cname[] = { "hca_links", "switch_links" };
	for (int c = 0; c < LC__COUNT; c++) {
		json_key(&w, cname[c]);
		json_open_object(&w);
		json_key(&w, "width");
		if (s->mode_width[c])
			json_string(&w, ib_width_name(s->mode_width[c]));
		else
			json_null(&w);
		json_key(&w, "speed");
		if (s->mode_speed[c])
			json_string(&w, ib_speed_name(s->mode_speed[c]));
		else
			json_null(&w);
		json_close_object(&w);
	}
	json_close_object(&w);
	json_key(&w, "findings");
	json_open_array(&w);
	for (size_t i = 0; i < s->nr; i++) {
		const struct link_finding *x = &s->f[i];
		json_open_object(&w);
		json_key(&w, "kind");
		json_string(&w, lf_kind_name(x->kind));
		json_key(&w, "switch");
		json_name(&w, f, x->node, NULL);
		json_key(&w, "port");
		json_int(&w, x->port);
		json_key(&w, "peer");
		json_name(&w, f, x->peer, x->peer_name);
		json_key(&w, "peer_port");
		if (x->peer_port >= 0)
			json_int(&w, x->peer_port);
		else
			json_null(&w);
		json_key(&w, "width");
		if (x->width)
			json_string(&w, ib_width_name(x->width));
		else
			json_null(&w);
		json_key(&w, "speed");
		if (x->speed)
			json_string(&w, ib_speed_name(x->speed));
		else
			json_null(&w);
		if (x->kind == LF_NARROW || x->kind == LF_SLOW) {
			json_key(&w, "expected_width");
			json_string(&w, ib_width_name(x->want_width));
			json_key(&w, "expected_speed");
			json_string(&w, ib_speed_name(x->want_speed));
		}
		json_key(&w, "detail");
		json_string(&w, x->detail);
		json_key(&w, "action");
		json_string(&w, action_name(x->act));
		json_key(&w, "advice");
		json_string(&w, x->advice);
		json_key(&w, "line");
		json_uint(&w, x->line);
		json_close_object(&w);
	}
	json_close_array(&w);
	/*
	 * The same arrays as 'vigil fabric ufm' (docs/FABRIC.md: one JSON shape for the fabric's
	 * decisions): disable, the ports to take out of service until the link is fixed (a link
	 * narrower or slower than the fabric's, one stuck in Initialize, an expected port down);
	 * tickets, one per physical link found at fault, asymmetric ends included (those need a
	 * person, not a disable); reenable and incidents stay empty here (a survey keeps no state
	 * and sees no bursts).
	 */
	json_key(&w, "disable");
	json_open_array(&w);
	for (size_t i = 0; i < s->nr; i++) {
		const struct link_finding *x = &s->f[i];
		if (x->kind == LF_ASYMMETRIC)
			continue;
		json_open_object(&w);
		json_key(&w, "ticket");
		links_ticket_id(f, x, &w);
		json_key(&w, "port");
		json_open_object(&w);
		json_key(&w, "switch");
		json_name(&w, f, x->node, NULL);
		json_key(&w, "port");
		json_int(&w, x->port);
		json_close_object(&w);
		json_key(&w, "peer");
		json_open_object(&w);
		json_key(&w, "switch");
		json_name(&w, f, x->peer, x->peer_name);
		json_key(&w, "port");
		if (x->peer_port >= 0)
			json_int(&w, x->peer_port);
		else
			json_null(&w);
		json_close_object(&w);
		json_key(&w, "cause");
		json_string(&w, lf_kind_name(x->kind));
		json_key(&w, "detail");
		json_string(&w, x->detail);
		json_key(&w, "action");
		json_string(&w, action_name(x->act));
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "tickets");
	json_open_array(&w);
	for (size_t i = 0; i < s->nr; i++) {
		const struct link_finding *x = &s->f[i];
		json_open_object(&w);
		json_key(&w, "id");
		links_ticket_id(f, x, &w);
		json_key(&w, "cause");
		json_string(&w, lf_kind_name(x->kind));
		json_key(&w, "detail");
		json_string(&w, x->detail);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "reenable");
	json_open_array(&w);
	json_close_array(&w);
	json_key(&w, "incidents");
	json_open_array(&w);
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

void links_write_text(const struct fabric *f, const struct link_survey *s, struct strbuf *out)
{
	strbuf_addf(out, "%zu switches, %zu HCAs, %zu links (%s", s->switches, s->hcas, s->links,
		    f->format == FABRIC_FMT_IBNETDISCOVER ? "ibnetdiscover" : "iblinkinfo");
	if (f->garbage)
		strbuf_addf(out, "; %zu lines not understood, the first line %u", f->garbage,
			    f->first_garbage);
	strbuf_addstr(out, ")\n");
	strbuf_addstr(out, "the fabric runs");
	static const char *const cname[] = { "HCA links", "switch links" };
	bool any = false;
	for (int c = 0; c < LC__COUNT; c++) {
		if (!s->mode_width[c] && !s->mode_speed[c])
			continue;
		strbuf_addf(out, "%s %s at %s %s", any ? "," : "", cname[c],
			    ib_width_name(s->mode_width[c]), ib_speed_name(s->mode_speed[c]));
		any = true;
	}
	strbuf_addstr(out, any ? "\n" : " no active links\n");
	for (size_t i = 0; i < s->nr; i++) {
		const struct link_finding *x = &s->f[i];
		strbuf_addf(out, "%-10s ", lf_kind_name(x->kind));
		add_name(out, f, x->node);
		strbuf_addf(out, " port %d", x->port);
		if (x->peer >= 0 || x->peer_port >= 0) {
			strbuf_addstr(out, " -> ");
			if (x->peer < 0 && x->peer_name[0])
				strbuf_add_excerpt(out, x->peer_name, 80);
			else
				add_name(out, f, x->peer);
			if (x->peer_port >= 0)
				strbuf_addf(out, " port %d", x->peer_port);
		}
		strbuf_addstr(out, ": ");
		strbuf_add_clean(out, x->detail);
		strbuf_addf(out, "\n           %s: %s\n", action_name(x->act), x->advice);
	}
	if (s->down_unjudged && s->expect_given)
		strbuf_addf(out, "%zu Down port%s the expected fabric does not cable (not judged)\n",
			    s->down_unjudged, s->down_unjudged == 1 ? "" : "s");
	else if (s->down_unjudged)
		strbuf_addf(out, "%zu Down port%s with no peer expected (not judged: --expect TOPOLOGY "
			    "names the ports that should be cabled)\n", s->down_unjudged,
			    s->down_unjudged == 1 ? "" : "s");
	if (!s->nr)
		strbuf_addstr(out, "no link to act on\n");
	else
		strbuf_addf(out, "%zu link%s to act on\n", s->nr, s->nr == 1 ? "" : "s");
}
