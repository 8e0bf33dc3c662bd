/*
 * ufm_out.c: what 'vigil fabric ufm' decided, as text (a paragraph per decision, the action to
 * take first), JSON and CSV, and the UFM REST call that applies each decision. Every name and
 * serial came from a log: text goes through strbuf_add_clean(), JSON through the writer's
 * escaping, CSV through csv_field() (quoted, control bytes cleaned).
 */
#include "ufm.h"
#include "../lib/json.h"

#include <string.h>

/*
 * UFM Enterprise REST API, "Actions REST API": POST /ufmRest/actions with action "disable" or
 * "enable" on one port, named "<node GUID>_<port number>" in params.port_id and its system
 * GUID in object_ids.
 */
bool ufm_rest_call(const char *guid, unsigned num, bool enable, const char *description,
		   struct strbuf *path, struct strbuf *body, struct strbuf *why)
{
	if (!guid || !*guid || !num) {
		strbuf_addstr(why, "the log names no GUID and port number for this port (only a "
				   "329 'Link went down' line does): disable it on the switch by hand");
		return false;
	}
	struct strbuf id = STRBUF_INIT;
	strbuf_addf(&id, "%s_%u", guid, num);
	strbuf_addstr(path, "/ufmRest/actions");
	struct json_writer w;
	json_writer_init(&w, body, false);
	json_open_object(&w);
	json_key(&w, "params");
	json_open_object(&w);
	json_key(&w, "port_id");
	json_string(&w, id.buf);
	json_close_object(&w);
	json_key(&w, "action");
	json_string(&w, enable ? "enable" : "disable");
	json_key(&w, "object_ids");
	json_open_array(&w);
	json_string(&w, guid);
	json_close_array(&w);
	json_key(&w, "object_type");
	json_string(&w, "System");
	json_key(&w, "identifier");
	json_string(&w, "id");
	json_key(&w, "description");
	json_string(&w, description);
	json_close_object(&w);
	strbuf_release(&id);
	return true;
}

static const char *cause_text(const char *cause)
{
	if (!strcmp(cause, "flapping"))
		return "flapping: the link went down and came back repeatedly";
	if (!strcmp(cause, "sm_unhealthy"))
		return "the subnet manager marked the port unhealthy";
	return "error counters over UFM's thresholds repeatedly";
}

static void end_text(struct strbuf *out, const struct ufm_end *e)
{
	strbuf_add_clean(out, e->name);
	if (e->port[0]) {
		strbuf_addstr(out, " port ");
		strbuf_add_clean(out, e->port);
	}
	if (e->guid[0] && e->num) {
		strbuf_addstr(out, " (");
		strbuf_add_clean(out, e->guid);
		strbuf_addf(out, " port %u)", e->num);
	}
}

static void description(const struct ufm *u, const struct ufm_decision *d, struct strbuf *sb)
{
	strbuf_addf(sb, "vigil fabric ufm: %s, ticket %s", d->cause, u->tickets[d->ticket].id);
}

static void codes_text(const struct ufm_link *l, struct strbuf *out)
{
	bool first = true;
	for (int i = 0; i < UFM_NCODES; i++) {
		if (!l->codes[i].count)
			continue;
		strbuf_addf(out, "%s%d %s x%llu (", first ? "" : "; ", ufm_codes[i],
			    ufm_code_name(ufm_codes[i]), (unsigned long long)l->codes[i].count);
		ufm_format_time(l->codes[i].first, out);
		strbuf_addstr(out, " to ");
		ufm_format_time(l->codes[i].last, out);
		strbuf_addch(out, ')');
		first = false;
	}
}

void ufm_write_text(const struct ufm *u, struct strbuf *out)
{
	struct strbuf p = STRBUF_INIT, b = STRBUF_INIT, why = STRBUF_INIT, ds = STRBUF_INIT;
	for (size_t i = 0; i < u->nr_disable; i++) {
		const struct ufm_decision *d = &u->disable[i];
		const struct ufm_link *l = &u->links[d->link];
		const struct ufm_ticket *t = &u->tickets[d->ticket];
		strbuf_addstr(out, "DISABLE ");
		end_text(out, &u->ends[d->port_end].e);
		if (d->peer_end >= 0) {
			strbuf_addstr(out, ", the link to ");
			end_text(out, &u->ends[d->peer_end].e);
		}
		if (l->cable[0]) {
			strbuf_addstr(out, ", cable S/N ");
			strbuf_add_clean(out, l->cable);
		}
		strbuf_addf(out, "\n  %s", cause_text(d->cause));
		if (!strcmp(d->cause, "sm_unhealthy") && l->sm_reason[0]) {
			strbuf_addstr(out, " (");
			strbuf_add_clean(out, l->sm_reason);
			strbuf_addch(out, ')');
		}
		if (l->episodes > 1)
			strbuf_addf(out, "; it went down %llu times",
				    (unsigned long long)l->episodes);
		strbuf_addstr(out, "\n  events: ");
		codes_text(l, out);
		strbuf_addf(out, "\n  ticket %s (%s): replace or reseat the cable, then 'vigil fabric "
				 "ufm close %s --state DIR'\n",
			    t->id, t->is_new ? "new" : "open", t->id);
		strbuf_reset(&p);
		strbuf_reset(&b);
		strbuf_reset(&why);
		strbuf_reset(&ds);
		description(u, d, &ds);
		const struct ufm_end *pe = &u->ends[d->port_end].e;
		if (ufm_rest_call(pe->guid, pe->num, false, ds.buf, &p, &b, &why))
			strbuf_addf(out, "  to apply: POST %s %s\n\n", p.buf, b.buf);
		else
			strbuf_addf(out, "  to apply: %s\n\n", why.buf);
	}
	for (size_t i = 0; i < u->nr_reenable; i++) {
		const struct ufm_ticket *t = &u->tickets[u->reenable[i]];
		strbuf_addstr(out, "RE-ENABLE ");
		strbuf_add_clean(out, t->port);
		if (t->peer[0]) {
			strbuf_addstr(out, ", the link to ");
			strbuf_add_clean(out, t->peer);
		}
		strbuf_addstr(out, "\n  ticket ");
		strbuf_add_clean(out, t->id);
		strbuf_addstr(out, " was closed ");
		strbuf_add_clean(out, t->closed_at);
		strbuf_addstr(out, " and the log shows no fault on the link since\n");
		strbuf_reset(&p);
		strbuf_reset(&b);
		strbuf_reset(&why);
		strbuf_reset(&ds);
		strbuf_addf(&ds, "vigil fabric ufm: ticket %s closed", t->id);
		if (ufm_rest_call(t->guid, t->num, true, ds.buf, &p, &b, &why))
			strbuf_addf(out, "  to apply: POST %s %s\n\n", p.buf, b.buf);
		else
			strbuf_addf(out, "  to apply: %s\n\n", why.buf);
	}
	for (size_t i = 0; i < u->nr_incidents; i++) {
		const struct ufm_incident *in = &u->incidents[i];
		strbuf_addf(out, "INCIDENT %llu events from ", (unsigned long long)in->events);
		ufm_format_time(in->start, out);
		strbuf_addstr(out, " to ");
		ufm_format_time(in->end, out);
		strbuf_addf(out, " (%d or more within %d ms: a whole-fabric event such as a UFM "
				 "restart)\n  set aside, not judged port by port; look at what UFM did "
				 "then: ",
			    UFM_BURST_EVENTS, UFM_BURST_SPAN_MS);
		strbuf_add_clean(out, u->files[in->first_file].path);
		strbuf_addf(out, " line %llu to ", (unsigned long long)in->first_line);
		strbuf_add_clean(out, u->files[in->last_file].path);
		strbuf_addf(out, " line %llu\n\n", (unsigned long long)in->last_line);
	}
	for (size_t i = 0; i < u->nr_intents; i++) {
		const struct ufm_intent *in = &u->intents[i];
		if (!ufm_intent_unknown(in))
			continue;
		strbuf_addstr(out, "STATE UNKNOWN ");
		strbuf_add_clean(out, in->port);
		strbuf_addstr(out, ", ticket ");
		strbuf_add_clean(out, in->ticket);
		strbuf_addf(out, "\n  a%s %s may have been applied at ", in->enable ? "n" : "",
			    in->enable ? "enable" : "disable");
		strbuf_add_clean(out, in->at);
		strbuf_addstr(out, " (");
		strbuf_add_clean(out, in->detail[0] ? in->detail : "no outcome was recorded");
		strbuf_addstr(out, "): look at the port on UFM; the next run with --apply asks UFM\n\n");
	}
	for (size_t i = 0; i < u->nr_manual; i++) {
		const struct ufm_end_rec *r = &u->ends[u->manual_ports[i]];
		strbuf_addstr(out, "disabled by hand (not a fault, nothing to do): ");
		end_text(out, &r->e);
		strbuf_addstr(out, " since ");
		ufm_format_time(r->manual_at, out);
		strbuf_addch(out, '\n');
	}
	uint64_t lines = 0, ev = 0, sk = 0, ga = 0;
	for (size_t i = 0; i < u->nr_files; i++) {
		const struct ufm_file_stats *f = &u->files[i];
		lines += f->lines;
		ev += f->events;
		sk += f->skipped;
		ga += f->garbage;
		if (f->cut_last || f->gz_truncated || f->out_of_order) {
			strbuf_addstr(out, "note: ");
			strbuf_add_clean(out, f->path);
			if (f->cut_last)
				strbuf_addstr(out, ": its last line has no newline (cut: not used)");
			if (f->gz_truncated)
				strbuf_addstr(out, ": its gzip data ends early");
			if (f->out_of_order)
				strbuf_addf(out, ": %llu lines older than the line before",
					    (unsigned long long)f->out_of_order);
			strbuf_addch(out, '\n');
		}
	}
	if (u->links_dropped)
		strbuf_addf(out, "note: %llu events named no port or passed %d links: not judged\n",
			    (unsigned long long)u->links_dropped, UFM_MAX_LINKS);
	strbuf_addf(out, "%zu to disable, %zu tickets, %zu to re-enable, %zu incidents, %zu of "
			 "unknown state; %llu lines in %zu files: %llu events kept, %llu of other "
			 "codes, %llu not understood\n",
		    u->nr_disable, u->nr_disable, u->nr_reenable, u->nr_incidents,
		    ufm_unknown_count(u),
		    (unsigned long long)lines, u->nr_files, (unsigned long long)ev,
		    (unsigned long long)sk, (unsigned long long)ga);
	strbuf_release(&p);
	strbuf_release(&b);
	strbuf_release(&why);
	strbuf_release(&ds);
}

static void json_time(struct json_writer *w, const char *key, int64_t t)
{
	struct strbuf s = STRBUF_INIT;
	ufm_format_time(t, &s);
	json_key(w, key);
	json_string(w, s.buf);
	strbuf_release(&s);
}

static void json_end(struct json_writer *w, const char *key, const struct ufm_end *e)
{
	json_key(w, key);
	if (!e) {
		json_null(w);
		return;
	}
	json_open_object(w);
	json_key(w, "switch");
	json_string(w, e->name);
	json_key(w, "port");
	json_string(w, e->port);
	json_key(w, "guid");
	json_string(w, e->guid);
	json_key(w, "port_num");
	json_uint(w, e->num);
	json_close_object(w);
}

static void json_rest(struct json_writer *w, const char *guid, unsigned num, bool enable,
		      const char *desc)
{
	struct strbuf p = STRBUF_INIT, b = STRBUF_INIT, why = STRBUF_INIT;
	json_key(w, "rest");
	if (ufm_rest_call(guid, num, enable, desc, &p, &b, &why)) {
		json_open_object(w);
		json_key(w, "method");
		json_string(w, "POST");
		json_key(w, "path");
		json_string(w, p.buf);
		json_key(w, "body");
		json_string(w, b.buf);
		json_close_object(w);
	} else {
		json_null(w);
		json_key(w, "rest_unavailable");
		json_string(w, why.buf);
	}
	strbuf_release(&p);
	strbuf_release(&b);
	strbuf_release(&why);
}

void ufm_write_json(const struct ufm *u, struct strbuf *out)
{
	struct json_writer w;
	struct strbuf ds = STRBUF_INIT;
	json_writer_init(&w, out, true);
	json_open_top(&w);
	json_key(&w, "disable");
	json_open_array(&w);
	for (size_t i = 0; i < u->nr_disable; i++) {
		const struct ufm_decision *d = &u->disable[i];
		const struct ufm_link *l = &u->links[d->link];
		json_open_object(&w);
		json_key(&w, "ticket");
		json_string(&w, u->tickets[d->ticket].id);
		json_end(&w, "port", &u->ends[d->port_end].e);
		json_end(&w, "peer", d->peer_end >= 0 ? &u->ends[d->peer_end].e : NULL);
		json_key(&w, "cable");
		json_string(&w, l->cable);
		json_key(&w, "cause");
		json_string(&w, d->cause);
		json_key(&w, "sm_reason");
		json_string(&w, l->sm_reason);
		json_key(&w, "downs");
		json_uint(&w, l->episodes);
		json_key(&w, "count");
		json_uint(&w, l->events);
		json_time(&w, "first_seen", l->first);
		json_time(&w, "last_seen", l->last);
		json_key(&w, "codes");
		json_open_array(&w);
		for (int c = 0; c < UFM_NCODES; c++) {
			if (!l->codes[c].count)
				continue;
			json_open_object(&w);
			json_key(&w, "code");
			json_int(&w, ufm_codes[c]);
			json_key(&w, "name");
			json_string(&w, ufm_code_name(ufm_codes[c]));
			json_key(&w, "count");
			json_uint(&w, l->codes[c].count);
			json_time(&w, "first_seen", l->codes[c].first);
			json_time(&w, "last_seen", l->codes[c].last);
			json_close_object(&w);
		}
		json_close_array(&w);
		strbuf_reset(&ds);
		description(u, d, &ds);
		const struct ufm_end *pe = &u->ends[d->port_end].e;
		json_rest(&w, pe->guid, pe->num, false, ds.buf);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "tickets");
	json_open_array(&w);
	for (size_t i = 0; i < u->nr_disable; i++) {
		const struct ufm_decision *d = &u->disable[i];
		const struct ufm_ticket *t = &u->tickets[d->ticket];
		json_open_object(&w);
		json_key(&w, "id");
		json_string(&w, t->id);
		json_key(&w, "new");
		json_bool(&w, t->is_new);
		json_key(&w, "port");
		json_string(&w, t->port);
		json_key(&w, "peer");
		json_string(&w, t->peer);
		json_key(&w, "cable");
		json_string(&w, t->cable);
		json_key(&w, "cause");
		json_string(&w, t->cause);
		json_key(&w, "events");
		json_uint(&w, u->links[d->link].events);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "reenable");
	json_open_array(&w);
	for (size_t i = 0; i < u->nr_reenable; i++) {
		const struct ufm_ticket *t = &u->tickets[u->reenable[i]];
		json_open_object(&w);
		json_key(&w, "ticket");
		json_string(&w, t->id);
		json_key(&w, "port");
		json_string(&w, t->port);
		json_key(&w, "peer");
		json_string(&w, t->peer);
		json_key(&w, "guid");
		json_string(&w, t->guid);
		json_key(&w, "port_num");
		json_uint(&w, t->num);
		json_key(&w, "closed_at");
		json_string(&w, t->closed_at);
		strbuf_reset(&ds);
		strbuf_addf(&ds, "vigil fabric ufm: ticket %s closed", t->id);
		json_rest(&w, t->guid, t->num, true, ds.buf);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "incidents");
	json_open_array(&w);
	for (size_t i = 0; i < u->nr_incidents; i++) {
		const struct ufm_incident *in = &u->incidents[i];
		json_open_object(&w);
		json_time(&w, "start", in->start);
		json_time(&w, "end", in->end);
		json_key(&w, "events");
		json_uint(&w, in->events);
		json_key(&w, "codes");
		json_open_object(&w);
		for (int c = 0; c < UFM_NCODES; c++) {
			char k[8];
			if (!in->codes[c])
				continue;
			snprintf(k, sizeof(k), "%d", ufm_codes[c]);
			json_key(&w, k);
			json_uint(&w, in->codes[c]);
		}
		json_close_object(&w);
		json_key(&w, "first");
		json_string(&w, u->files[in->first_file].path);
		json_key(&w, "first_line");
		json_uint(&w, in->first_line);
		json_key(&w, "last");
		json_string(&w, u->files[in->last_file].path);
		json_key(&w, "last_line");
		json_uint(&w, in->last_line);
		json_close_object(&w);
	}
	json_close_array(&w);
	/* REST calls: this run's, with their outcome, and the earlier runs' that were unsettled */
	for (int pass = 0; pass < 2; pass++) {
		json_key(&w, pass ? "unknown" : "calls");
		json_open_array(&w);
		for (size_t i = 0; i < u->nr_intents; i++) {
			const struct ufm_intent *in = &u->intents[i];
			if (pass ? !ufm_intent_unknown(in) : in->carried && !in->resolved)
				continue;
			json_open_object(&w);
			json_key(&w, "ticket");
			json_string(&w, in->ticket);
			json_key(&w, "action");
			json_string(&w, in->enable ? "enable" : "disable");
			json_key(&w, "port");
			json_string(&w, in->port);
			json_key(&w, "peer");
			json_string(&w, in->peer);
			json_key(&w, "guid");
			json_string(&w, in->guid);
			json_key(&w, "port_num");
			json_uint(&w, in->num);
			json_key(&w, "at");
			json_string(&w, in->at);
			json_key(&w, "outcome");
			json_string(&w, ufm_outcome_name(in->outcome));
			json_key(&w, "detail");
			json_string(&w, in->detail);
			json_key(&w, "earlier_run");
			json_bool(&w, in->carried);
			json_close_object(&w);
		}
		json_close_array(&w);
	}
	json_key(&w, "manual");
	json_open_array(&w);
	for (size_t i = 0; i < u->nr_manual; i++) {
		const struct ufm_end_rec *r = &u->ends[u->manual_ports[i]];
		json_open_object(&w);
		json_end(&w, "port", &r->e);
		json_time(&w, "since", r->manual_at);
		json_key(&w, "events_ignored");
		json_uint(&w, r->manual_ignored);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "files");
	json_open_array(&w);
	for (size_t i = 0; i < u->nr_files; i++) {
		const struct ufm_file_stats *f = &u->files[i];
		json_open_object(&w);
		json_key(&w, "path");
		json_string(&w, f->path);
		json_key(&w, "gzip");
		json_bool(&w, f->gz);
		json_key(&w, "lines");
		json_uint(&w, f->lines);
		json_key(&w, "events");
		json_uint(&w, f->events);
		json_key(&w, "skipped");
		json_uint(&w, f->skipped);
		json_key(&w, "garbage");
		json_uint(&w, f->garbage);
		json_key(&w, "blank");
		json_uint(&w, f->blank);
		json_key(&w, "out_of_order");
		json_uint(&w, f->out_of_order);
		json_key(&w, "last_line_cut");
		json_bool(&w, f->cut_last);
		json_key(&w, "gzip_truncated");
		json_bool(&w, f->gz_truncated);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "thresholds");
	json_open_object(&w);
	json_key(&w, "flap_downs");
	json_uint(&w, u->cfg.flap_downs);
	json_key(&w, "flap_window_s");
	json_uint(&w, u->cfg.flap_window_s);
	json_key(&w, "error_events");
	json_uint(&w, u->cfg.error_events);
	json_key(&w, "episode_ms");
	json_uint(&w, u->cfg.episode_ms);
	json_key(&w, "burst_events");
	json_uint(&w, UFM_BURST_EVENTS);
	json_key(&w, "burst_span_ms");
	json_uint(&w, UFM_BURST_SPAN_MS);
	json_close_object(&w);
	json_key(&w, "burst_events");
	json_uint(&w, u->burst_events);
	json_key(&w, "events_not_placed");
	json_uint(&w, u->links_dropped);
	json_key(&w, "manual_events_ignored");
	json_uint(&w, u->manual_ignored);
	json_close_object(&w);
	strbuf_addch(out, '\n');
	strbuf_release(&ds);
}

/* One CSV field: quoted, quotes doubled, control and invalid bytes cleaned. */
static void csv_field(struct strbuf *out, const char *s, bool last)
{
	struct strbuf c = STRBUF_INIT;
	strbuf_add_clean(&c, s ? s : "");
	strbuf_addch(out, '"');
	for (const char *p = c.buf; *p; p++) {
		if (*p == '"')
			strbuf_addch(out, '"');
		strbuf_addch(out, *p);
	}
	strbuf_addch(out, '"');
	strbuf_addch(out, last ? '\n' : ',');
	strbuf_release(&c);
}

void ufm_write_csv(const struct ufm *u, struct strbuf *out)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, t1 = STRBUF_INIT, t2 = STRBUF_INIT,
		      n = STRBUF_INIT;
	strbuf_addstr(out, "action,ticket,switch,port,guid,port_num,peer_switch,peer_port,cable,"
			   "cause,events,first_seen,last_seen\n");
	for (size_t i = 0; i < u->nr_disable; i++) {
		const struct ufm_decision *d = &u->disable[i];
		const struct ufm_link *l = &u->links[d->link];
		const struct ufm_end *pe = &u->ends[d->port_end].e;
		const struct ufm_end *qe = d->peer_end >= 0 ? &u->ends[d->peer_end].e : NULL;
		strbuf_reset(&t1);
		strbuf_reset(&t2);
		strbuf_reset(&n);
		strbuf_reset(&a);
		strbuf_reset(&b);
		ufm_format_time(l->first, &t1);
		ufm_format_time(l->last, &t2);
		strbuf_addf(&n, "%u", pe->num);
		strbuf_addf(&a, "%llu", (unsigned long long)l->events);
		csv_field(out, "disable", false);
		csv_field(out, u->tickets[d->ticket].id, false);
		csv_field(out, pe->name, false);
		csv_field(out, pe->port, false);
		csv_field(out, pe->guid, false);
		csv_field(out, pe->num ? n.buf : "", false);
		csv_field(out, qe ? qe->name : "", false);
		csv_field(out, qe ? qe->port : "", false);
		csv_field(out, l->cable, false);
		csv_field(out, d->cause, false);
		csv_field(out, a.buf, false);
		csv_field(out, t1.buf, false);
		csv_field(out, t2.buf, true);
	}
	for (size_t i = 0; i < u->nr_reenable; i++) {
		const struct ufm_ticket *t = &u->tickets[u->reenable[i]];
		strbuf_reset(&n);
		strbuf_addf(&n, "%u", t->num);
		const char *colon = strrchr(t->port, ':');
		strbuf_reset(&a);
		strbuf_reset(&b);
		strbuf_add(&a, t->port, colon ? (size_t)(colon - t->port) : strlen(t->port));
		strbuf_addstr(&b, colon ? colon + 1 : "");
		csv_field(out, "reenable", false);
		csv_field(out, t->id, false);
		csv_field(out, a.buf, false);
		csv_field(out, b.buf, false);
		csv_field(out, t->guid, false);
		csv_field(out, t->num ? n.buf : "", false);
		csv_field(out, t->peer, false);
		csv_field(out, "", false);
		csv_field(out, t->cable, false);
		csv_field(out, "ticket closed", false);
		csv_field(out, "", false);
		csv_field(out, "", false);
		csv_field(out, t->closed_at, true);
	}
	for (size_t i = 0; i < u->nr_intents; i++) {
		const struct ufm_intent *in = &u->intents[i];
		if (!ufm_intent_unknown(in))
			continue;
		strbuf_reset(&n);
		strbuf_addf(&n, "%u", in->num);
		const char *colon = strrchr(in->port, ':');
		strbuf_reset(&a);
		strbuf_reset(&b);
		strbuf_add(&a, in->port, colon ? (size_t)(colon - in->port) : strlen(in->port));
		strbuf_addstr(&b, colon ? colon + 1 : "");
		csv_field(out, "unknown", false);
		csv_field(out, in->ticket, false);
		csv_field(out, a.buf, false);
		csv_field(out, b.buf, false);
		csv_field(out, in->guid, false);
		csv_field(out, in->num ? n.buf : "", false);
		csv_field(out, in->peer, false);
		csv_field(out, "", false);
		csv_field(out, in->cable, false);
		csv_field(out, in->enable ? "enable may have been applied"
					  : "disable may have been applied",
			  false);
		csv_field(out, "", false);
		csv_field(out, "", false);
		csv_field(out, in->at, true);
	}
	for (size_t i = 0; i < u->nr_incidents; i++) {
		const struct ufm_incident *in = &u->incidents[i];
		strbuf_reset(&t1);
		strbuf_reset(&t2);
		strbuf_reset(&a);
		ufm_format_time(in->start, &t1);
		ufm_format_time(in->end, &t2);
		strbuf_addf(&a, "%llu", (unsigned long long)in->events);
		csv_field(out, "incident", false);
		for (int k = 0; k < 8; k++)
			csv_field(out, "", false);
		csv_field(out, "burst", false);
		csv_field(out, a.buf, false);
		csv_field(out, t1.buf, false);
		csv_field(out, t2.buf, true);
	}
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&t1);
	strbuf_release(&t2);
	strbuf_release(&n);
}
