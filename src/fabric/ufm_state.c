/*
 * ufm_state.c: the tickets of 'vigil fabric ufm' kept between runs, DIR/ufm-state.json:
 *
 *   {"version": 1, "tickets": [{"id": "UFM-1a2b3c4d", "port": "SW:1/17/1", "peer": "SW2:1/4/2",
 *     "guid": "9c05...", "port_num": 33, "cable": "MT...", "cause": "flapping",
 *     "opened": "...", "last_seen_ms": N, "status": "open|closed|reenabled",
 *     "closed_at": "...", "reenabled_at": "..."}]}
 *
 * Read bounded and never through a link (a planted link is an error, not an empty state: the
 * tickets it stands for would be forgotten); replaced with write_file_atomic().
 */
#include "ufm.h"
#include "../lib/fileio.h"
#include "../lib/json.h"

#include <errno.h>
#include <string.h>

#define STATE_MAX (8u << 20)
#define STATE_TICKETS_MAX 100000

static const char *status_name(enum ufm_ticket_status s)
{
	return s == UFM_TICKET_OPEN ? "open" : s == UFM_TICKET_CLOSED ? "closed" : "reenabled";
}

static bool text_cb(void *arg, const char *data, size_t len)
{
	return strbuf_add(arg, data, len) == 0;
}

static int load(const char *dir, struct strbuf *text, struct json_value **root,
		struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/%s", dir, UFM_STATE_FILE);
	strbuf_init(text, STATE_MAX + 1);
	int r = read_file_stream(path.buf, READ_STREAM_NOFOLLOW | READ_STREAM_MISSING_OK,
				 STATE_MAX, text_cb, text, err);
	*root = NULL;
	if (r == READ_MISSING) {
		strbuf_release(&path);
		return 1;
	}
	if (r < 0) {
		strbuf_release(&path);
		return -1;
	}
	struct strbuf why = STRBUF_INIT;
	*root = json_parse(text->buf, text->len, &why);
	if (!*root || (*root)->type != JSON_OBJECT || !json_get(*root, "tickets") ||
	    json_get(*root, "tickets")->type != JSON_ARRAY) {
		error_set(err, "cannot read '%s': it is not vigil's ufm state (%s)", path.buf,
			  why.len ? why.buf : "no tickets array");
		json_free(*root);
		*root = NULL;
		strbuf_release(&why);
		strbuf_release(&path);
		return -1;
	}
	strbuf_release(&why);
	strbuf_release(&path);
	return 0;
}

static char *str_or(const struct json_value *o, const char *key)
{
	const char *s = json_get_string(o, key);
	return xstrdup(s ? s : "");
}

int ufm_state_load(struct ufm *u, const char *dir, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	struct json_value *root;
	int r = load(dir, &text, &root, err);
	strbuf_release(&text);
	if (r < 0)
		return -1;
	u->have_state = true;
	if (r == 1)
		return 0;
	const struct json_value *arr = json_get(root, "tickets");
	for (size_t i = 0; i < arr->nr && u->nr_tickets < STATE_TICKETS_MAX; i++) {
		const struct json_value *o = arr->items[i];
		const char *id = o->type == JSON_OBJECT ? json_get_string(o, "id") : NULL;
		const char *port = id ? json_get_string(o, "port") : NULL;
		const char *st = id ? json_get_string(o, "status") : NULL;
		if (!id || !*id || !port || !st)
			continue;
		double v;
		ALLOC_GROW(u->tickets, u->nr_tickets + 1, u->alloc_tickets);
		struct ufm_ticket *t = &u->tickets[u->nr_tickets++];
		memset(t, 0, sizeof(*t));
		t->id = xstrdup(id);
		t->port = xstrdup(port);
		t->peer = str_or(o, "peer");
		t->guid = str_or(o, "guid");
		t->num = json_get_number(o, "port_num", &v) && v >= 0 && v < 100000 ? (unsigned)v : 0;
		t->cable = str_or(o, "cable");
		t->cause = str_or(o, "cause");
		t->opened = str_or(o, "opened");
		t->closed_at = str_or(o, "closed_at");
		t->reenabled_at = str_or(o, "reenabled_at");
		t->last_seen = json_get_number(o, "last_seen_ms", &v) ? (int64_t)v : 0;
		t->status = !strcmp(st, "closed")      ? UFM_TICKET_CLOSED
			    : !strcmp(st, "reenabled") ? UFM_TICKET_REENABLED
						       : UFM_TICKET_OPEN;
	}
	json_free(root);
	return 0;
}

static void write_tickets(struct json_writer *w, const struct ufm_ticket *t, size_t nr)
{
	json_key(w, "tickets");
	json_open_array(w);
	for (size_t i = 0; i < nr; i++) {
		json_open_object(w);
		json_key(w, "id");
		json_string(w, t[i].id);
		json_key(w, "port");
		json_string(w, t[i].port);
		json_key(w, "peer");
		json_string(w, t[i].peer);
		json_key(w, "guid");
		json_string(w, t[i].guid);
		json_key(w, "port_num");
		json_uint(w, t[i].num);
		json_key(w, "cable");
		json_string(w, t[i].cable);
		json_key(w, "cause");
		json_string(w, t[i].cause);
		json_key(w, "opened");
		json_string(w, t[i].opened);
		json_key(w, "last_seen_ms");
		json_int(w, t[i].last_seen);
		json_key(w, "status");
		json_string(w, status_name(t[i].status));
		json_key(w, "closed_at");
		json_string(w, t[i].closed_at);
		json_key(w, "reenabled_at");
		json_string(w, t[i].reenabled_at);
		json_close_object(w);
	}
	json_close_array(w);
}

static int save(const struct ufm_ticket *t, size_t nr, const char *dir, struct strbuf *err)
{
	struct strbuf out = STRBUF_INIT, path = STRBUF_INIT;
	struct json_writer w;
	json_writer_init(&w, &out, true);
	json_open_object(&w);
	json_key(&w, "version");
	json_int(&w, 1);
	write_tickets(&w, t, nr);
	json_close_object(&w);
	strbuf_addch(&out, '\n');
	int r = json_writer_finish(&w, err);
	if (!r) {
		strbuf_addf(&path, "%s/%s", dir, UFM_STATE_FILE);
		r = write_file_atomic(path.buf, out.buf, out.len, 0600, err);
	}
	strbuf_release(&out);
	strbuf_release(&path);
	return r;
}

int ufm_state_save(const struct ufm *u, const char *dir, struct strbuf *err)
{
	return save(u->tickets, u->nr_tickets, dir, err);
}

int ufm_state_close(const char *dir, const char *id, const char *now, struct strbuf *err)
{
	struct ufm u;
	ufm_init(&u, NULL);
	int r = ufm_state_load(&u, dir, err);
	if (r < 0)
		goto out;
	r = -1;
	for (size_t i = 0; i < u.nr_tickets; i++) {
		struct ufm_ticket *t = &u.tickets[i];
		if (strcmp(t->id, id))
			continue;
		if (t->status != UFM_TICKET_OPEN) {
			r = 1;
			goto out;
		}
		t->status = UFM_TICKET_CLOSED;
		free(t->closed_at);
		t->closed_at = xstrdup(now);
		r = save(u.tickets, u.nr_tickets, dir, err);
		goto out;
	}
	error_set(err, "no ticket '%s' in '%s/%s' (%zu tickets there)", id, dir, UFM_STATE_FILE,
		  u.nr_tickets);
out:
	ufm_release(&u);
	return r;
}
