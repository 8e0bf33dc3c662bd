/* history.c: findings across reboots and the escalation to INSPECT_HARDWARE (see history.h). */
#include "history.h"

void history_release(struct history *h)
{
	for (size_t i = 0; i < h->nr; i++) {
		free(h->e[i].key);
		for (size_t j = 0; j < h->e[i].nr_boots; j++)
			free(h->e[i].boots[j]);
	}
	free(h->e);
	memset(h, 0, sizeof(*h));
}

bool history_key(const struct check_result *c, const struct finding *f, struct strbuf *key)
{
	if (f->status != STATUS_FAIL || (f->action != ACTION_REBOOT && f->action != ACTION_RESET_GPU))
		return false;
	strbuf_reset(key);
	strbuf_addf(key, "%s|%s|%s", c->name, f->code ? f->code : "", f->device ? f->device : "");
	for (size_t i = 0; i < f->nr_details; i++)
		if (!strcmp(f->details[i].key, "xid") || !strcmp(f->details[i].key, "sxid"))
			strbuf_addf(key, "|%s=%s", f->details[i].key, f->details[i].value);
	return true;
}

static struct history_entry *find(const struct history *h, const char *key)
{
	for (size_t i = 0; i < h->nr; i++)
		if (!strcmp(h->e[i].key, key))
			return &h->e[i];
	return NULL;
}

static void entry_add_boot(struct history_entry *e, const char *boot)
{
	for (size_t i = 0; i < e->nr_boots; i++)
		if (!strcmp(e->boots[i], boot))
			return;
	if (e->nr_boots == HISTORY_MAX_BOOTS) {
		free(e->boots[0]);
		memmove(e->boots, e->boots + 1, (HISTORY_MAX_BOOTS - 1) * sizeof(e->boots[0]));
		e->nr_boots--;
	}
	e->boots[e->nr_boots++] = xstrdup(boot);
}

static struct history_entry *add_entry(struct history *h, const char *key)
{
	if (h->nr == HISTORY_MAX_ENTRIES) {
		/* drop the least recently seen */
		size_t old = 0;
		for (size_t i = 1; i < h->nr; i++)
			if (h->e[i].last_seen < h->e[old].last_seen)
				old = i;
		struct history_entry gone = h->e[old];
		h->e[old] = h->e[h->nr - 1];
		h->nr--;
		free(gone.key);
		for (size_t j = 0; j < gone.nr_boots; j++)
			free(gone.boots[j]);
	}
	ALLOC_GROW(h->e, h->nr + 1, h->alloc);
	struct history_entry *e = &h->e[h->nr++];
	memset(e, 0, sizeof(*e));
	e->key = xstrdup(key);
	return e;
}

int history_parse(struct history *h, const char *text, size_t len, struct strbuf *err)
{
	struct json_value *v = json_parse(text, len, err);
	if (!v)
		return -1;
	const struct json_value *ents = json_get(v, "entries");
	int ret = 0;
	if (!ents || ents->type != JSON_ARRAY) {
		ret = error_set(err, "no entries");
		goto out;
	}
	for (size_t i = 0; i < ents->nr; i++) {
		const struct json_value *ej = ents->items[i];
		const char *key = json_get_string(ej, "key");
		const struct json_value *boots = json_get(ej, "boots");
		if (!key || !boots || boots->type != JSON_ARRAY || find(h, key))
			continue;
		struct history_entry *e = add_entry(h, key);
		json_get_number(ej, "first_seen", &e->first_seen);
		json_get_number(ej, "last_seen", &e->last_seen);
		for (size_t j = 0; j < boots->nr; j++)
			if (boots->items[j]->type == JSON_STRING)
				entry_add_boot(e, boots->items[j]->string);
	}
out:
	json_free(v);
	return ret;
}

void history_serialize(const struct history *h, struct strbuf *out)
{
	struct json_writer w;
	json_writer_init(&w, out, true);
	json_open_object(&w);
	json_key(&w, "version");
	json_int(&w, 1);
	json_key(&w, "entries");
	json_open_array(&w);
	for (size_t i = 0; i < h->nr; i++) {
		const struct history_entry *e = &h->e[i];
		json_open_object(&w);
		json_key(&w, "key");
		json_string(&w, e->key);
		json_key(&w, "first_seen");
		json_double(&w, e->first_seen);
		json_key(&w, "last_seen");
		json_double(&w, e->last_seen);
		json_key(&w, "boots");
		json_open_array(&w);
		for (size_t j = 0; j < e->nr_boots; j++)
			json_string(&w, e->boots[j]);
		json_close_array(&w);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
}

void history_note(struct history *h, const struct report *rep, const char *boot_id, double now)
{
	struct strbuf key = STRBUF_INIT;
	if (!boot_id || !*boot_id)
		return;
	for (size_t i = 0; i < rep->nr; i++) {
		const struct check_result *c = &rep->results[i];
		for (size_t j = 0; j < c->nr; j++) {
			if (!history_key(c, &c->findings[j], &key))
				continue;
			struct history_entry *e = find(h, key.buf);
			if (!e) {
				e = add_entry(h, key.buf);
				e->first_seen = now;
			}
			e->last_seen = now;
			entry_add_boot(e, boot_id);
		}
	}
	strbuf_release(&key);
}

unsigned history_escalate(const struct history *h, struct report *rep, unsigned after_reboots)
{
	struct strbuf key = STRBUF_INIT, msg = STRBUF_INIT;
	unsigned n = 0;
	if (!after_reboots)
		return 0;
	for (size_t i = 0; i < rep->nr; i++) {
		struct check_result *c = &rep->results[i];
		for (size_t j = 0; j < c->nr; j++) {
			struct finding *f = &c->findings[j];
			if (!history_key(c, f, &key))
				continue;
			const struct history_entry *e = find(h, key.buf);
			if (!e || e->nr_boots <= after_reboots)
				continue;
			f->action = ACTION_INSPECT_HARDWARE;
			strbuf_reset(&msg);
			/* first, so that the cut 80-character reason keeps it */
			strbuf_addf(&msg, "seen in %zu boots, inspect hardware: %s", e->nr_boots,
				    f->message);
			free(f->message);
			f->message = strbuf_detach(&msg, NULL);
			finding_detail_num(f, "seen_in_boots", (double)e->nr_boots);
			n++;
		}
	}
	if (n)
		report_finish(rep);
	strbuf_release(&key);
	strbuf_release(&msg);
	return n;
}
