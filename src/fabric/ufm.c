/*
 * ufm.c: UFM events into decisions (ufm.h): each event placed on its physical link (a 329
 * names both ends; a counter alarm names one end, joined to the link that end is known on),
 * bursts of a whole-fabric incident held back and set aside, the rest judged per link
 * against the thresholds (flapping, the subnet manager's verdict, error alarms), then the
 * state's tickets matched so that a link has one ticket whatever number of events it had.
 */
#include "ufm.h"

#include <string.h>

void ufm_config_default(struct ufm_config *c)
{
	c->flap_downs = 3;
	c->flap_window_s = 86400;
	c->error_events = 3;
	c->episode_ms = 5000;
}

void ufm_init(struct ufm *u, const struct ufm_config *cfg)
{
	memset(u, 0, sizeof(*u));
	if (cfg)
		u->cfg = *cfg;
	else
		ufm_config_default(&u->cfg);
	if (u->cfg.flap_downs < 1)
		u->cfg.flap_downs = 1;
	if (u->cfg.error_events < 1)
		u->cfg.error_events = 1;
}

static void ticket_release(struct ufm_ticket *t)
{
	free(t->id);
	free(t->port);
	free(t->peer);
	free(t->guid);
	free(t->cable);
	free(t->cause);
	free(t->opened);
	free(t->closed_at);
	free(t->reenabled_at);
}

void ufm_release(struct ufm *u)
{
	for (size_t i = 0; i < u->nr_files; i++)
		free(u->files[i].path);
	free(u->files);
	free(u->ends);
	free(u->ehash);
	for (size_t i = 0; i < u->nr_links; i++) {
		free(u->links[i].ring);
		free(u->links[i].ering);
	}
	free(u->links);
	free(u->incidents);
	for (size_t i = 0; i < u->nr_tickets; i++)
		ticket_release(&u->tickets[i]);
	free(u->tickets);
	free(u->disable);
	free(u->reenable);
	free(u->manual_ports);
	for (size_t i = 0; i < u->nr_intents; i++) {
		struct ufm_intent *in = &u->intents[i];
		free(in->ticket);
		free(in->port);
		free(in->peer);
		free(in->guid);
		free(in->cable);
		free(in->cause);
		free(in->at);
		free(in->detail);
	}
	free(u->intents);
	memset(u, 0, sizeof(*u));
}

const char *ufm_outcome_name(enum ufm_outcome o)
{
	return o == UFM_OUT_DONE	  ? "done"
	       : o == UFM_OUT_NOT_APPLIED ? "not_applied"
	       : o == UFM_OUT_UNKNOWN	  ? "unknown"
					  : "none";
}

bool ufm_intent_unknown(const struct ufm_intent *in)
{
	return !in->resolved && (in->outcome == UFM_OUT_NONE || in->outcome == UFM_OUT_UNKNOWN);
}

size_t ufm_unknown_count(const struct ufm *u)
{
	size_t n = 0;
	for (size_t i = 0; i < u->nr_intents; i++)
		n += ufm_intent_unknown(&u->intents[i]);
	return n;
}

unsigned ufm_add_file(struct ufm *u, const char *path)
{
	ALLOC_GROW(u->files, u->nr_files + 1, u->alloc_files);
	struct ufm_file_stats *f = &u->files[u->nr_files];
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(path);
	return (unsigned)u->nr_files++;
}

uint64_t ufm_understood(const struct ufm *u)
{
	uint64_t n = 0;
	for (size_t i = 0; i < u->nr_files; i++)
		n += u->files[i].events + u->files[i].skipped;
	return n;
}

/* Ends: "NAME:PORT" in an open-addressing table. */

static uint64_t end_hash(const char *name, const char *port)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ ':') * 1099511628211ull;
	for (const char *p = port; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

static void ehash_insert(struct ufm *u, int idx)
{
	const struct ufm_end *e = &u->ends[idx].e;
	size_t mask = u->ehash_size - 1, i = end_hash(e->name, e->port) & mask;
	while (u->ehash[i] >= 0)
		i = (i + 1) & mask;
	u->ehash[i] = idx;
}

static int end_lookup(const struct ufm *u, const char *name, const char *port)
{
	if (!u->ehash_size)
		return -1;
	size_t mask = u->ehash_size - 1, i = end_hash(name, port) & mask;
	for (; u->ehash[i] >= 0; i = (i + 1) & mask) {
		const struct ufm_end *e = &u->ends[u->ehash[i]].e;
		if (!strcmp(e->name, name) && !strcmp(e->port, port))
			return u->ehash[i];
	}
	return -1;
}

/* The end's record (made when new, its GUID and number learnt when a line names them), or -1
 * when it names nothing or the table is full. */
static int end_get(struct ufm *u, const struct ufm_end *e)
{
	if (!e->name[0])
		return -1;
	int idx = end_lookup(u, e->name, e->port);
	if (idx < 0) {
		if (u->nr_ends >= 2 * (size_t)UFM_MAX_LINKS)
			return -1;
		if ((u->nr_ends + 1) * 2 > u->ehash_size) {
			free(u->ehash);
			u->ehash_size = u->ehash_size ? u->ehash_size * 2 : 1024;
			u->ehash = xmalloc(u->ehash_size * sizeof(*u->ehash));
			memset(u->ehash, 0xff, u->ehash_size * sizeof(*u->ehash));
			for (size_t i = 0; i < u->nr_ends; i++)
				ehash_insert(u, (int)i);
		}
		ALLOC_GROW(u->ends, u->nr_ends + 1, u->alloc_ends);
		struct ufm_end_rec *r = &u->ends[u->nr_ends];
		memset(r, 0, sizeof(*r));
		strlcpy_v(r->e.name, e->name, sizeof(r->e.name));
		strlcpy_v(r->e.port, e->port, sizeof(r->e.port));
		r->link = -1;
		idx = (int)u->nr_ends++;
		ehash_insert(u, idx);
	}
	struct ufm_end_rec *r = &u->ends[idx];
	if (e->guid[0] && e->num) {
		strlcpy_v(r->e.guid, e->guid, sizeof(r->e.guid));
		r->e.num = e->num;
	} else if (e->guid[0] && !r->e.guid[0]) {
		strlcpy_v(r->e.guid, e->guid, sizeof(r->e.guid));
	}
	return idx;
}

static void end_key(const struct ufm *u, int idx, struct strbuf *out)
{
	strbuf_addf(out, "%s:%s", u->ends[idx].e.name, u->ends[idx].e.port);
}

/* A closed ticket on this end: its events up to the ticket's last one were handled. */
static void link_apply_tickets(struct ufm *u, struct ufm_link *l, int end)
{
	if (end < 0 || !u->nr_tickets)
		return;
	struct strbuf k = STRBUF_INIT;
	end_key(u, end, &k);
	for (size_t i = 0; i < u->nr_tickets; i++) {
		const struct ufm_ticket *t = &u->tickets[i];
		if (t->status == UFM_TICKET_OPEN)
			continue;
		if ((!strcmp(t->port, k.buf) || !strcmp(t->peer, k.buf)) &&
		    t->last_seen > l->ignore_before)
			l->ignore_before = t->last_seen;
	}
	strbuf_release(&k);
}

static int link_new(struct ufm *u, int x, int y)
{
	if (u->nr_links >= UFM_MAX_LINKS)
		return -1;
	ALLOC_GROW(u->links, u->nr_links + 1, u->alloc_links);
	struct ufm_link *l = &u->links[u->nr_links];
	memset(l, 0, sizeof(*l));
	l->end[0] = x;
	l->end[1] = y;
	l->sm_end = -1;
	l->merged_into = -1;
	l->ignore_before = INT64_MIN;
	l->ring = xcalloc(u->cfg.flap_downs, sizeof(*l->ring));
	l->ering = xcalloc(u->cfg.error_events, sizeof(*l->ering));
	int li = (int)u->nr_links++;
	u->ends[x].link = li;
	if (y >= 0)
		u->ends[y].link = li;
	link_apply_tickets(u, l, x);
	link_apply_tickets(u, l, y);
	return li;
}

static int link_resolve(const struct ufm *u, int li)
{
	while (li >= 0 && u->links[li].merged_into >= 0)
		li = u->links[li].merged_into;
	return li;
}

/* Fold link b into a (the same cable seen first from each end alone). */
static void link_merge(struct ufm *u, int a, int b)
{
	struct ufm_link *la = &u->links[a], *lb = &u->links[b];
	for (int i = 0; i < UFM_NCODES; i++) {
		struct ufm_code_count *ca = &la->codes[i], *cb = &lb->codes[i];
		if (!cb->count)
			continue;
		if (!ca->count || cb->first < ca->first)
			ca->first = cb->first;
		if (!ca->count || cb->last > ca->last)
			ca->last = cb->last;
		ca->count += cb->count;
	}
	if (lb->events && (!la->events || lb->first < la->first))
		la->first = lb->first;
	if (lb->last > la->last)
		la->last = lb->last;
	la->events += lb->events;
	la->ignored_before_close += lb->ignored_before_close;
	la->episodes += lb->episodes;
	la->flapping |= lb->flapping;
	la->errors |= lb->errors;
	if (lb->sm_unhealthy && !la->sm_unhealthy) {
		la->sm_unhealthy = true;
		memcpy(la->sm_reason, lb->sm_reason, sizeof(la->sm_reason));
		la->sm_end = lb->sm_end;
	}
	if (!la->cable[0])
		memcpy(la->cable, lb->cable, sizeof(la->cable));
	if (lb->ignore_before > la->ignore_before)
		la->ignore_before = lb->ignore_before;
	lb->merged_into = a;
}

/* The link of ends x (known) and y (-1: not named). */
static int link_of(struct ufm *u, int x, int y)
{
	int lx = link_resolve(u, u->ends[x].link);
	int ly = y >= 0 ? link_resolve(u, u->ends[y].link) : -1;
	if (y < 0 || y == x)
		return lx >= 0 ? lx : link_new(u, x, -1);
	if (lx >= 0 && lx == ly)
		return lx;
	if (lx < 0 && ly < 0)
		return link_new(u, x, y);
	if (lx >= 0 && ly < 0) {
		struct ufm_link *l = &u->links[lx];
		if (l->end[1] < 0 || l->end[1] == y) {
			l->end[1] = y;
			u->ends[y].link = lx;
			link_apply_tickets(u, l, y);
			return lx;
		}
		/* recabled: the newest cabling takes the later events */
		return link_new(u, x, y);
	}
	if (lx < 0) {
		struct ufm_link *l = &u->links[ly];
		int other = l->end[0] == y ? 1 : 0;
		if (l->end[other] < 0 || l->end[other] == x) {
			l->end[other] = x;
			u->ends[x].link = ly;
			link_apply_tickets(u, l, x);
			return ly;
		}
		return link_new(u, x, y);
	}
	/* both ends known on different links: one cable seen from each end */
	struct ufm_link *a = &u->links[lx];
	link_merge(u, lx, ly);
	a = &u->links[lx];
	a->end[0] = x;
	a->end[1] = y;
	u->ends[y].link = lx;
	return lx;
}

static void ring_push(int64_t *ring, unsigned cap, unsigned *n, unsigned *at, int64_t t)
{
	ring[*at] = t;
	*at = (*at + 1) % cap;
	if (*n < cap)
		(*n)++;
}

/* Oldest of a full ring. */
static int64_t ring_oldest(const int64_t *ring, unsigned cap, unsigned n, unsigned at)
{
	return n < cap ? ring[0] : ring[at];
}

static void judge(struct ufm *u, const struct ufm_event *ev)
{
	u->judged_events++;
	if (ev->kind == UFM_EV_MANUAL_OFF || ev->kind == UFM_EV_MANUAL_ON) {
		int e = end_get(u, ev->a.name[0] ? &ev->a : &ev->self);
		if (e < 0)
			return;
		u->ends[e].manual = ev->kind == UFM_EV_MANUAL_OFF;
		u->ends[e].manual_at = ev->t_ms;
		return;
	}
	int x = -1, y = -1;
	switch (ev->kind) {
	case UFM_EV_LINK_DOWN:
		x = end_get(u, ev->a.name[0] ? &ev->a : &ev->self);
		y = ev->a.name[0] ? end_get(u, &ev->b) : -1;
		break;
	case UFM_EV_SM_UNHEALTHY:
		x = end_get(u, ev->a.name[0] ? &ev->a : &ev->self);
		y = ev->a.name[0] ? end_get(u, &ev->self) : -1;
		break;
	default:
		x = end_get(u, &ev->self);
		break;
	}
	int self = end_get(u, &ev->self);
	if (x < 0) {
		u->links_dropped++;
		return;
	}
	int li = link_of(u, x, y);
	if (li < 0) {
		u->links_dropped++;
		return;
	}
	struct ufm_link *l = &u->links[li];
	for (int i = 0; i < 2; i++) {
		if (l->end[i] >= 0 && u->ends[l->end[i]].manual) {
			/* an administrator took this port down: its events are not faults */
			u->ends[l->end[i]].manual_ignored++;
			u->manual_ignored++;
			return;
		}
	}
	if (ev->t_ms <= l->ignore_before) {
		l->ignored_before_close++;
		return;
	}
	int ci = ufm_code_index(ev->code);
	if (ci >= 0) {
		struct ufm_code_count *c = &l->codes[ci];
		if (!c->count)
			c->first = ev->t_ms;
		c->last = ev->t_ms;
		c->count++;
	}
	if (!l->events)
		l->first = ev->t_ms;
	l->last = ev->t_ms;
	l->events++;
	if (self >= 0)
		u->ends[self].reported++;
	if (ev->cable[0])
		memcpy(l->cable, ev->cable, sizeof(l->cable));
	int64_t window = (int64_t)u->cfg.flap_window_s * 1000;
	switch (ev->kind) {
	case UFM_EV_LINK_DOWN:
	case UFM_EV_DOWNED:
		if (l->episodes && ev->t_ms - l->last_episode < (int64_t)u->cfg.episode_ms)
			break;
		l->episodes++;
		l->last_episode = ev->t_ms;
		ring_push(l->ring, u->cfg.flap_downs, &l->ring_n, &l->ring_at, ev->t_ms);
		if (l->ring_n == u->cfg.flap_downs &&
		    ev->t_ms - ring_oldest(l->ring, u->cfg.flap_downs, l->ring_n, l->ring_at) <=
			    window)
			l->flapping = true;
		break;
	case UFM_EV_ERRORS:
		ring_push(l->ering, u->cfg.error_events, &l->ering_n, &l->ering_at, ev->t_ms);
		if (l->ering_n == u->cfg.error_events &&
		    ev->t_ms - ring_oldest(l->ering, u->cfg.error_events, l->ering_n,
					   l->ering_at) <= window)
			l->errors = true;
		break;
	case UFM_EV_SM_UNHEALTHY:
		l->sm_unhealthy = true;
		memcpy(l->sm_reason, ev->reason, sizeof(l->sm_reason));
		l->sm_end = x;
		break;
	default:
		break;
	}
}

/* An event leaves the window: part of a burst (an incident) or judged. */
static void finalize(struct ufm *u, const struct ufm_event *ev, bool burst)
{
	if (!burst) {
		u->in_incident = false;
		judge(u, ev);
		return;
	}
	u->burst_events++;
	struct ufm_incident *in = u->nr_incidents ? &u->incidents[u->nr_incidents - 1] : NULL;
	if (!u->in_incident || !in || ev->t_ms - in->end >= UFM_BURST_SPAN_MS) {
		ALLOC_GROW(u->incidents, u->nr_incidents + 1, u->alloc_incidents);
		in = &u->incidents[u->nr_incidents++];
		memset(in, 0, sizeof(*in));
		in->start = ev->t_ms;
		in->first_file = ev->file;
		in->first_line = ev->line;
		u->in_incident = true;
	}
	in->end = ev->t_ms;
	in->events++;
	int ci = ufm_code_index(ev->code);
	if (ci >= 0)
		in->codes[ci]++;
	in->last_file = ev->file;
	in->last_line = ev->line;
	/* an operator's action inside a burst still happened */
	if (ev->kind == UFM_EV_MANUAL_OFF || ev->kind == UFM_EV_MANUAL_ON)
		judge(u, ev);
}

void ufm_feed(struct ufm *u, const struct ufm_event *ev_in)
{
	struct ufm_event ev = *ev_in;
	if (u->have_last && ev.t_ms < u->last_t) {
		if (ev.file < u->nr_files)
			u->files[ev.file].out_of_order++;
		ev.t_ms = u->last_t;
	}
	u->last_t = ev.t_ms;
	u->have_last = true;
	/*
	 * The window holds the last UFM_BURST_EVENTS events. An event is final when it leaves:
	 * every window of that many events that could include it has been seen by then, so no
	 * event is judged before it is known not to be part of a burst, and none twice.
	 */
	if (u->win_n == UFM_BURST_EVENTS) {
		finalize(u, &u->win[u->win_start], u->win_burst[u->win_start]);
		u->win_start = (u->win_start + 1) % UFM_BURST_EVENTS;
		u->win_n--;
	}
	unsigned at = (u->win_start + u->win_n) % UFM_BURST_EVENTS;
	u->win[at] = ev;
	u->win_burst[at] = false;
	u->win_n++;
	if (u->win_n == UFM_BURST_EVENTS &&
	    ev.t_ms - u->win[u->win_start].t_ms < UFM_BURST_SPAN_MS)
		for (unsigned i = 0; i < UFM_BURST_EVENTS; i++)
			u->win_burst[i] = true;
}

void ufm_finish(struct ufm *u)
{
	while (u->win_n) {
		finalize(u, &u->win[u->win_start], u->win_burst[u->win_start]);
		u->win_start = (u->win_start + 1) % UFM_BURST_EVENTS;
		u->win_n--;
	}
}

/* Reading: every file open at once, merged by time. */

struct merge_src {
	struct ufm_src src;
	struct ufm_event ev;
	bool have;
	unsigned file;
};

/* The source's next event into ms->ev (have false at its end). */
static int advance(struct ufm *u, struct merge_src *ms, struct strbuf *err)
{
	struct ufm_file_stats *f = &u->files[ms->file];
	const char *line;
	size_t len;
	int r;
	ms->have = false;
	while ((r = ufm_src_next(&ms->src, &line, &len, err)) > 0) {
		f->lines++;
		if (r == 2) {
			f->garbage++;
			continue;
		}
		int k = ufm_parse_line(line, len, &ms->ev);
		if (k == UFM_LINE_EVENT) {
			f->events++;
			ms->ev.file = ms->file;
			ms->ev.line = ms->src.lines;
			ms->have = true;
			return 0;
		}
		if (k == UFM_LINE_OTHER) {
			f->skipped++;
			continue;
		}
		size_t i = 0;
		while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
			i++;
		if (i == len)
			f->blank++;
		else
			f->garbage++;
	}
	if (r < 0)
		return -1;
	if (ms->src.cut_last) {
		f->lines++;
		f->garbage++;
		f->cut_last = true;
	}
	f->gz = ms->src.gz;
	f->gz_truncated = ms->src.gz_truncated;
	return 0;
}

int ufm_read_files(struct ufm *u, const char *const *paths, size_t nr, struct strbuf *err)
{
	struct merge_src *ms = xcalloc(nr ? nr : 1, sizeof(*ms));
	size_t opened = 0;
	int ret = -1;
	for (size_t i = 0; i < nr; i++) {
		ms[i].file = ufm_add_file(u, paths[i]);
		if (ufm_src_open(&ms[i].src, paths[i], err) < 0)
			goto out;
		opened++;
		u->files[ms[i].file].gz = ms[i].src.gz;
	}
	for (size_t i = 0; i < nr; i++)
		if (advance(u, &ms[i], err) < 0)
			goto out;
	for (;;) {
		struct merge_src *best = NULL;
		for (size_t i = 0; i < nr; i++)
			if (ms[i].have && (!best || ms[i].ev.t_ms < best->ev.t_ms))
				best = &ms[i];
		if (!best)
			break;
		ufm_feed(u, &best->ev);
		if (advance(u, best, err) < 0)
			goto out;
	}
	ufm_finish(u);
	ret = 0;
out:
	for (size_t i = 0; i < opened; i++)
		ufm_src_close(&ms[i].src);
	free(ms);
	return ret;
}

/* Decisions. */

static uint32_t fnv32(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static bool ticket_on(const struct ufm_ticket *t, const char *k0, const char *k1)
{
	return (k0 && (!strcmp(t->port, k0) || !strcmp(t->peer, k0))) ||
	       (k1 && (!strcmp(t->port, k1) || !strcmp(t->peer, k1)));
}

static bool id_taken(const struct ufm *u, const char *id)
{
	for (size_t i = 0; i < u->nr_tickets; i++)
		if (!strcmp(u->tickets[i].id, id))
			return true;
	return false;
}

static int ticket_for(struct ufm *u, const struct ufm_decision *d, const struct ufm_link *l)
{
	struct strbuf k0 = STRBUF_INIT, k1 = STRBUF_INIT, id = STRBUF_INIT, s = STRBUF_INIT;
	end_key(u, d->port_end, &k0);
	if (d->peer_end >= 0)
		end_key(u, d->peer_end, &k1);
	int found = -1;
	for (size_t i = 0; i < u->nr_tickets; i++)
		if (u->tickets[i].status == UFM_TICKET_OPEN &&
		    ticket_on(&u->tickets[i], k0.buf, k1.len ? k1.buf : NULL))
			found = (int)i;
	if (found < 0) {
		/* the same link gets the same number in every run, with or without state */
		strbuf_addf(&s, "%s|%s", k0.buf, k1.buf);
		strbuf_addf(&id, "UFM-%08x", fnv32(s.buf));
		for (unsigned n = 2; id_taken(u, id.buf); n++) {
			strbuf_reset(&id);
			strbuf_addf(&id, "UFM-%08x-%u", fnv32(s.buf), n);
		}
		ALLOC_GROW(u->tickets, u->nr_tickets + 1, u->alloc_tickets);
		struct ufm_ticket *t = &u->tickets[u->nr_tickets];
		memset(t, 0, sizeof(*t));
		t->id = strbuf_detach(&id, NULL);
		t->port = xstrdup(k0.buf);
		t->peer = xstrdup(k1.buf);
		t->guid = xstrdup("");
		t->cable = xstrdup("");
		t->cause = xstrdup("");
		strbuf_reset(&s);
		ufm_format_time(l->first, &s);
		t->opened = xstrdup(s.buf);
		t->closed_at = xstrdup("");
		t->reenabled_at = xstrdup("");
		t->status = UFM_TICKET_OPEN;
		t->is_new = true;
		found = (int)u->nr_tickets++;
	}
	struct ufm_ticket *t = &u->tickets[found];
	const struct ufm_end *pe = &u->ends[d->port_end].e;
	if (pe->guid[0] && pe->num) {
		free(t->guid);
		t->guid = xstrdup(pe->guid);
		t->num = pe->num;
	}
	if (l->cable[0]) {
		free(t->cable);
		t->cable = xstrdup(l->cable);
	}
	free(t->cause);
	t->cause = xstrdup(d->cause);
	if (l->last > t->last_seen)
		t->last_seen = l->last;
	t->touched = true;
	strbuf_release(&k0);
	strbuf_release(&k1);
	strbuf_release(&id);
	strbuf_release(&s);
	return found;
}

void ufm_decide(struct ufm *u)
{
	size_t old_tickets = u->nr_tickets;
	for (size_t li = 0; li < u->nr_links; li++) {
		struct ufm_link *l = &u->links[li];
		if (l->merged_into >= 0 || !l->events)
			continue;
		const char *cause = l->sm_unhealthy ? "sm_unhealthy"
				    : l->flapping  ? "flapping"
				    : l->errors    ? "errors"
						   : NULL;
		if (!cause)
			continue;
		bool manual = false;
		for (int i = 0; i < 2; i++)
			if (l->end[i] >= 0 && u->ends[l->end[i]].manual)
				manual = true;
		if (manual)
			continue;
		struct ufm_decision d = { (int)li, l->end[0], l->end[1], cause, -1 };
		if (l->sm_unhealthy && l->sm_end >= 0) {
			d.port_end = l->sm_end;
			d.peer_end = l->end[0] == l->sm_end ? l->end[1] : l->end[0];
		} else if (l->end[1] >= 0) {
			/* the end a REST call can name, then the end that reported most */
			const struct ufm_end_rec *a = &u->ends[l->end[0]], *b = &u->ends[l->end[1]];
			int sa = (a->e.guid[0] && a->e.num ? 2 : 0) + (a->reported >= b->reported);
			int sb = (b->e.guid[0] && b->e.num ? 2 : 0) + (b->reported > a->reported);
			if (sb > sa) {
				d.port_end = l->end[1];
				d.peer_end = l->end[0];
			}
		}
		d.ticket = ticket_for(u, &d, l);
		ALLOC_GROW(u->disable, u->nr_disable + 1, u->alloc_disable);
		u->disable[u->nr_disable++] = d;
	}
	/* closed tickets: re-enable, unless the same link has a new ticket (it failed again) */
	for (size_t i = 0; i < old_tickets; i++) {
		const struct ufm_ticket *t = &u->tickets[i];
		if (t->status != UFM_TICKET_CLOSED)
			continue;
		bool again = false;
		for (size_t j = old_tickets; j < u->nr_tickets; j++)
			if (ticket_on(&u->tickets[j], t->port, t->peer[0] ? t->peer : NULL))
				again = true;
		if (again)
			continue;
		ALLOC_GROW(u->reenable, u->nr_reenable + 1, u->alloc_reenable);
		u->reenable[u->nr_reenable++] = (int)i;
	}
	for (size_t e = 0; e < u->nr_ends; e++) {
		if (!u->ends[e].manual)
			continue;
		ALLOC_GROW(u->manual_ports, u->nr_manual + 1, u->alloc_manual);
		u->manual_ports[u->nr_manual++] = (int)e;
	}
}
