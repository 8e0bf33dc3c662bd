/* model.c: the failure model of vigil sim: the built-in one, and its JSON both ways (model.h). */
#include "model.h"

#include "../lib/fileio.h"
#include "../lib/json.h"
#include "../lib/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const seen_names[SIM_SEEN_NR] = {
	[SIM_SEEN_CRASH] = "crash", [SIM_SEEN_HANG] = "hang", [SIM_SEEN_SLOW] = "slow",
	[SIM_SEEN_LOST] = "lost", [SIM_SEEN_SICK] = "sick",
};

const char *sim_seen_name(enum sim_seen s)
{
	return s < SIM_SEEN_NR ? seen_names[s] : "?";
}

/* Llama 3 405B's pre-training snapshot: 16,384 GPUs for 54 days (docs/SIM.md). */
#define LLAMA3_GPU_DAYS (16384.0 * 54.0)

/*
 * Each class: the unexpected interruptions of the Llama 3 report it stands for (the causes
 * are summed as docs/SIM.md's table says), what the supervisor sees, and the repair time, an
 * assumption of ours where the report gives none (docs/SIM.md says which).
 */
static const struct {
	const char *name;
	unsigned count;
	enum sim_seen seen;
	bool host_fault, check_sees;
	double repair_hours;
	const char *check_says;
} defaults[] = {
	{ "gpu_fell_off_bus", 148 + 17, SIM_SEEN_CRASH, true, true, 72,
	  "gpu: Xid 79 (GPU has fallen off the bus)" },
	{ "gpu_hbm_ecc", 72 + 19, SIM_SEEN_CRASH, true, true, 72,
	  "gpu: Xid 48 (double-bit ECC error), row remapping pending" },
	{ "nvlink", 0, SIM_SEEN_CRASH, true, true, 72, "gpu: Xid 74 (NVLink error)" },
	{ "ib_link", 35 + 7, SIM_SEEN_CRASH, true, true, 12,
	  "infiniband: mlx5_0 port 1 is Down (was Active)" },
	{ "host_crash", 32 + 3 + 3 + 2 + 2 + 2 + 2, SIM_SEEN_LOST, true, true, 24, "" },
	{ "hang", 7, SIM_SEEN_HANG, false, false, 0, "" },
	{ "slowdown", 6, SIM_SEEN_SLOW, true, true, 24,
	  "gpu: clocks throttled (HW thermal slowdown)" },
	{ "storage_stall", 2, SIM_SEEN_HANG, false, false, 0, "" },
	{ "software_bug", 54, SIM_SEEN_CRASH, false, false, 0, "" },
	{ "sdc", 6, SIM_SEEN_CRASH, true, false, 72, "" },
};

void sim_model_default(struct sim_model *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->source, sizeof(m->source), "%s",
		 "Llama 3 405B pre-training: 419 unexpected interruptions in 54 days on 16,384 "
		 "H100 GPUs, by root cause (docs/SIM.md)");
	for (size_t i = 0; i < ARRAY_SIZE(defaults); i++) {
		struct sim_class *c = &m->classes[m->nr++];
		snprintf(c->name, sizeof(c->name), "%s", defaults[i].name);
		/* rounded as the JSON writes it, so the model and its JSON are the same numbers */
		char t[32];
		snprintf(t, sizeof(t), "%.6g", defaults[i].count / LLAMA3_GPU_DAYS);
		c->rate = strtod(t, NULL);
		c->seen = defaults[i].seen;
		c->host_fault = defaults[i].host_fault;
		c->check_sees = defaults[i].check_sees;
		c->repair_hours = defaults[i].repair_hours;
		snprintf(c->check_says, sizeof(c->check_says), "%s", defaults[i].check_says);
	}
}

double sim_model_total_rate(const struct sim_model *m)
{
	double r = 0;
	for (size_t i = 0; i < m->nr; i++)
		r += m->classes[i].rate;
	return r;
}

void sim_model_members(struct json_writer *w, const struct sim_model *m)
{
	json_key(w, "source");
	json_string(w, m->source);
	json_key(w, "rate_unit");
	json_string(w, "per_gpu_day");
	json_key(w, "classes");
	json_open_array(w);
	for (size_t i = 0; i < m->nr; i++) {
		const struct sim_class *c = &m->classes[i];
		json_open_object(w);
		json_key(w, "name");
		json_string(w, c->name);
		json_key(w, "rate");
		json_double(w, c->rate);
		json_key(w, "seen_as");
		json_string(w, sim_seen_name(c->seen));
		json_key(w, "host_fault");
		json_bool(w, c->host_fault);
		json_key(w, "check_sees");
		json_bool(w, c->check_sees);
		json_key(w, "repair_hours");
		json_double(w, c->repair_hours);
		json_key(w, "check_says");
		json_string(w, c->check_says);
		json_close_object(w);
	}
	json_close_array(w);
}

void sim_model_json(const struct sim_model *m, struct strbuf *out)
{
	struct json_writer w;
	json_writer_init(&w, out, true);
	json_open_top(&w);
	sim_model_members(&w, m);
	json_close_object(&w);
	json_writer_finish(&w, NULL);
	strbuf_addch(out, '\n');
}

/* ---- parsing ---- */

static bool name_ok(const char *s)
{
	if (!*s || strlen(s) >= SIM_CLASS_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static int bad(struct strbuf *err, const char *where, const char *key, const char *what)
{
	strbuf_addf(err, "'%s%s': %s", where, key, what);
	return -1;
}

static const struct json_value *need(const struct json_value *o, const char *where,
				     const char *key, enum json_type type, const char *tname,
				     struct strbuf *err)
{
	const struct json_value *v = NULL;
	for (size_t i = 0; i < o->nr; i++)
		if (!strcmp(o->keys[i], key))
			v = o->items[i];
	if (!v) {
		bad(err, where, key, "missing");
		return NULL;
	}
	if (v->type != type) {
		strbuf_addf(err, "'%s%s': wants %s", where, key, tname);
		return NULL;
	}
	return v;
}

/* Every key of o is one of keys[]: else the first unknown one, by name. */
static int known_keys(const struct json_value *o, const char *where, const char *const *keys,
		      struct strbuf *err)
{
	for (size_t i = 0; i < o->nr; i++) {
		size_t k = 0;
		while (keys[k] && strcmp(keys[k], o->keys[i]))
			k++;
		if (!keys[k]) {
			strbuf_addf(err, "unknown key '%s", where);
			strbuf_add_excerpt(err, o->keys[i], 64);
			strbuf_addch(err, '\'');
			return -1;
		}
	}
	return 0;
}

static int number(const struct json_value *o, const char *where, const char *key, double max,
		  double *out, struct strbuf *err)
{
	const struct json_value *v = need(o, where, key, JSON_NUMBER, "a number", err);
	if (!v)
		return -1;
	if (!isfinite(v->number) || v->number < 0 || v->number > max) {
		char t[64];
		snprintf(t, sizeof(t), "wants a number from 0 to %g, not %g", max, v->number);
		return bad(err, where, key, t);
	}
	*out = v->number;
	return 0;
}

static int boolean(const struct json_value *o, const char *where, const char *key, bool *out,
		   struct strbuf *err)
{
	const struct json_value *v = need(o, where, key, JSON_BOOL, "true or false", err);
	if (!v)
		return -1;
	*out = v->boolean;
	return 0;
}

static int parse_class(const struct json_value *o, const char *where, struct sim_class *c,
		       struct strbuf *err)
{
	static const char *const keys[] = { "name", "rate", "seen_as", "host_fault",
					    "check_sees", "repair_hours", "check_says", NULL };
	if (o->type != JSON_OBJECT) {
		strbuf_addf(err, "'%s': wants an object", where);
		return -1;
	}
	struct strbuf w = STRBUF_INIT;
	strbuf_addf(&w, "%s.", where);
	int ret = -1;
	const struct json_value *v;
	if (known_keys(o, w.buf, keys, err) < 0)
		goto out;
	if (!(v = need(o, w.buf, "name", JSON_STRING, "a string", err)))
		goto out;
	if (!name_ok(v->string)) {
		bad(err, w.buf, "name", "wants 1 to 47 of a-z, 0-9 and _");
		goto out;
	}
	snprintf(c->name, sizeof(c->name), "%s", v->string);
	/* a million faults per GPU-day is no model of hardware; it only makes the run endless */
	if (number(o, w.buf, "rate", 1e6, &c->rate, err) < 0)
		goto out;
	if (!(v = need(o, w.buf, "seen_as", JSON_STRING, "a string", err)))
		goto out;
	int s = 0;
	while (s < SIM_SEEN_NR && strcmp(seen_names[s], v->string))
		s++;
	if (s == SIM_SEEN_NR) {
		bad(err, w.buf, "seen_as", "wants crash, hang, slow, lost or sick");
		goto out;
	}
	c->seen = (enum sim_seen)s;
	if (boolean(o, w.buf, "host_fault", &c->host_fault, err) < 0 ||
	    boolean(o, w.buf, "check_sees", &c->check_sees, err) < 0 ||
	    number(o, w.buf, "repair_hours", 1e5, &c->repair_hours, err) < 0)
		goto out;
	if (!(v = need(o, w.buf, "check_says", JSON_STRING, "a string", err)))
		goto out;
	/* it ends up in a drain reason and on a terminal: printable text only */
	if (v->string_len >= sizeof(c->check_says) || strlen(v->string) != v->string_len ||
	    !str_is_clean(v->string)) {
		bad(err, w.buf, "check_says",
		    "wants printable text (no control bytes, valid UTF-8) of at most 159 bytes");
		goto out;
	}
	snprintf(c->check_says, sizeof(c->check_says), "%s", v->string);
	if (!c->host_fault && c->check_sees) {
		bad(err, w.buf, "check_sees", "true needs host_fault true (no host to check)");
		goto out;
	}
	if (!c->host_fault && (c->seen == SIM_SEEN_LOST || c->seen == SIM_SEEN_SICK ||
			       c->seen == SIM_SEEN_SLOW)) {
		bad(err, w.buf, "seen_as", "lost, sick and slow need host_fault true");
		goto out;
	}
	if (c->seen == SIM_SEEN_SICK && !c->check_sees) {
		bad(err, w.buf, "check_sees", "seen_as sick needs check_sees true");
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&w);
	return ret;
}

int sim_model_parse(const char *text, size_t len, struct sim_model *m, struct strbuf *err)
{
	static const char *const keys[] = { "schema_version", "source", "rate_unit", "classes",
					    NULL };
	memset(m, 0, sizeof(*m));
	struct json_value *root = json_parse(text, len, err);
	int ret = -1;
	const struct json_value *v;
	if (!root)
		return -1;
	if (root->type != JSON_OBJECT) {
		strbuf_addstr(err, "a model is a JSON object");
		goto out;
	}
	if (known_keys(root, "", keys, err) < 0)
		goto out;
	if ((v = json_get(root, "schema_version")) &&
	    (v->type != JSON_NUMBER || v->number != 1)) {
		strbuf_addstr(err, "'schema_version': wants 1 (a model of this vigil)");
		goto out;
	}
	if ((v = json_get(root, "source"))) {
		if (v->type != JSON_STRING || strlen(v->string) != v->string_len ||
		    v->string_len >= sizeof(m->source) || !str_is_clean(v->string)) {
			strbuf_addstr(err, "'source': wants printable text of at most 255 bytes");
			goto out;
		}
		snprintf(m->source, sizeof(m->source), "%s", v->string);
	}
	if (!(v = need(root, "", "rate_unit", JSON_STRING, "a string", err)))
		goto out;
	if (strcmp(v->string, "per_gpu_day")) {
		bad(err, "", "rate_unit", "wants \"per_gpu_day\" (faults per GPU-day)");
		goto out;
	}
	if (!(v = need(root, "", "classes", JSON_ARRAY, "an array", err)))
		goto out;
	if (!v->nr || v->nr > SIM_CLASSES_MAX) {
		bad(err, "", "classes", "wants 1 to 32 classes");
		goto out;
	}
	for (size_t i = 0; i < v->nr; i++) {
		char where[32];
		snprintf(where, sizeof(where), "classes[%zu]", i);
		if (parse_class(v->items[i], where, &m->classes[i], err) < 0)
			goto out;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(m->classes[j].name, m->classes[i].name)) {
				strbuf_addf(err, "'%s.name': '%s' is there twice", where,
					    m->classes[i].name);
				goto out;
			}
		m->nr++;
	}
	ret = 0;
out:
	json_free(root);
	if (ret < 0)
		m->nr = 0;
	return ret;
}

int sim_model_load(const char *path, struct sim_model *m, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, e = STRBUF_INIT;
	int ret = -1;
	int r = read_file_bounded(path, &text, SIM_MODEL_FILE_MAX, err);
	if (r < 0)
		goto out;
	if (r == READ_MISSING) {
		strbuf_addf(err, "cannot read '%s': no such file", path);
		goto out;
	}
	if (r == READ_TRUNCATED) {
		strbuf_addf(err, "'%s': more than %d bytes: not a model", path, SIM_MODEL_FILE_MAX);
		goto out;
	}
	if (sim_model_parse(text.buf, text.len, m, &e) < 0) {
		strbuf_addf(err, "'%s': %s", path, e.buf);
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&text);
	strbuf_release(&e);
	return ret;
}
