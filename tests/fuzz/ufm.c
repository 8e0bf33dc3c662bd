/*
 * ufm.c: libFuzzer target for 'vigil fabric ufm' (src/fabric/ufm.h): the line parser on every
 * line of the input, and the whole judge (burst window, links, decisions, writers) on the
 * events they make. No crash, leak or UB; a parsed event's strings are NUL-terminated within
 * their arrays and hold no byte at or below a space; its code is the one in the line; the
 * JSON written parses back; the incident counts add up to the burst events. Input that
 * begins with '{' is also read as the intent journal (ufm-intents.json): a ticket for every
 * intent taken, the unknown count within the intents, the writers' JSON parses back.
 */
#include "../../src/fabric/ufm.h"
#include "../../src/lib/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_token(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	if (n == cap)
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			__builtin_trap();
}

static void check_end(const struct ufm_end *e)
{
	check_token(e->name, sizeof(e->name));
	check_token(e->port, sizeof(e->port));
	check_token(e->guid, sizeof(e->guid));
	if (e->num >= 100000)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ufm u;
	struct ufm_config cfg;
	ufm_config_default(&cfg);
	cfg.flap_downs = 2;
	cfg.error_events = 2;
	ufm_init(&u, &cfg);
	unsigned file = ufm_add_file(&u, "fuzz");
	size_t start = 0;
	uint64_t line = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != '\n')
			continue;
		struct ufm_event ev;
		line++;
		int k = ufm_parse_line((const char *)data + start, i - start, &ev);
		if (k == UFM_LINE_EVENT) {
			check_end(&ev.self);
			check_end(&ev.a);
			check_end(&ev.b);
			check_token(ev.cable, sizeof(ev.cable));
			check_token(ev.reason, sizeof(ev.reason));
			if (ev.kind != UFM_EV_MANUAL_OFF && ev.kind != UFM_EV_MANUAL_ON &&
			    ufm_code_index(ev.code) < 0)
				__builtin_trap();
			ev.file = file;
			ev.line = line;
			u.files[file].events++;
			ufm_feed(&u, &ev);
		}
		start = i + 1;
	}
	ufm_finish(&u);
	if (size && data[0] == '{') {
		struct strbuf ierr = STRBUF_INIT;
		size_t before = u.nr_tickets;
		if (ufm_intents_parse(&u, (const char *)data, size, "fuzz", &ierr) == 0) {
			if (ufm_unknown_count(&u) > u.nr_intents)
				__builtin_trap();
			for (size_t i = 0; i < u.nr_intents; i++) {
				bool found = false;
				for (size_t t = 0; t < u.nr_tickets; t++)
					found |= !strcmp(u.tickets[t].id, u.intents[i].ticket);
				if (!found)
					__builtin_trap();
			}
		} else if (!ierr.len || u.nr_tickets < before) {
			__builtin_trap();
		}
		strbuf_release(&ierr);
	}
	ufm_decide(&u);
	uint64_t in_incidents = 0;
	for (size_t i = 0; i < u.nr_incidents; i++) {
		if (!u.incidents[i].events || u.incidents[i].end < u.incidents[i].start)
			__builtin_trap();
		in_incidents += u.incidents[i].events;
	}
	if (in_incidents != u.burst_events || (u.burst_events && u.burst_events < UFM_BURST_EVENTS))
		__builtin_trap();
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	ufm_write_json(&u, &out);
	struct json_value *v = json_parse(out.buf, out.len, &err);
	if (!v)
		__builtin_trap();
	json_free(v);
	strbuf_reset(&out);
	ufm_write_text(&u, &out);
	strbuf_reset(&out);
	ufm_write_csv(&u, &out);
	strbuf_release(&out);
	strbuf_release(&err);
	ufm_release(&u);
	return 0;
}
