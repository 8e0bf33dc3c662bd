/*
 * ufm.c: libFuzzer target for 'vigil fabric ufm' (src/fabric/ufm.h): the line parser on every
 * line of the input, and the whole judge (burst window, links, decisions, writers) on the
 * events they make. No crash, leak or UB; a parsed event's strings are NUL-terminated within
 * their arrays and hold no byte at or below a space; its code is the one in the line; the
 * JSON written parses back; the incident counts add up to the burst events.
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
