/* schedule.c: the faults of one vigil sim run, drawn ahead or read from a file (schedule.h). */
#include "schedule.h"
#include "sim.h"

#include "../lib/fileio.h"
#include "../lib/json.h"
#include "../lib/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(struct sim_schedule *s, double at, int cls, unsigned slot)
{
	ALLOC_GROW(s->f, s->nr + 1, s->alloc);
	s->f[s->nr].at = at;
	s->f[s->nr].cls = cls;
	s->f[s->nr].slot = slot;
	s->nr++;
}

void sim_schedule_draw(const struct sim_model *m, unsigned gpus, unsigned nodes,
		       double horizon_s, uint64_t seed, struct sim_schedule *s)
{
	memset(s, 0, sizeof(*s));
	double total = sim_model_total_rate(m), rate_s = total * gpus / 86400;
	if (!(rate_s > 0) || !nodes)
		return;
	struct sim_rng g;
	sim_rng_seed(&g, seed);
	/* the order of the draws is phase 1's (the time to the first fault; then for each
	 * fault its class, its slot and the time to the next), so a seed's faults are the
	 * ones it always gave */
	double t = -log(1 - sim_rng_uniform(&g)) / rate_s;
	while (t < horizon_s && s->nr < (size_t)SIM_SCHEDULE_MAX * 100) {
		double u = sim_rng_uniform(&g) * total, acc = 0;
		int c = (int)m->nr - 1;
		for (size_t i = 0; i < m->nr; i++) {
			acc += m->classes[i].rate;
			if (u < acc && m->classes[i].rate > 0) {
				c = (int)i;
				break;
			}
		}
		unsigned slot = (unsigned)(sim_rng_uniform(&g) * (double)nodes);
		add(s, t, c, slot < nodes ? slot : nodes - 1);
		t += -log(1 - sim_rng_uniform(&g)) / rate_s;
	}
}

static int entry_error(struct strbuf *err, size_t i, const char *what)
{
	strbuf_addf(err, "schedule entry %zu: %s", i, what);
	return -1;
}

static int parse_entry(const struct json_value *o, size_t i, const struct sim_model *m,
		       unsigned nodes, double *at, int *cls, unsigned *slot, struct strbuf *err)
{
	if (o->type != JSON_OBJECT)
		return entry_error(err, i, "not an object {\"at_s\", \"class\", \"node\"}");
	for (size_t k = 0; k < o->nr; k++)
		if (strcmp(o->keys[k], "at_s") && strcmp(o->keys[k], "class") &&
		    strcmp(o->keys[k], "node")) {
			strbuf_addf(err, "schedule entry %zu: unknown key '", i);
			strbuf_add_excerpt(err, o->keys[k], 64);
			strbuf_addch(err, '\'');
			return -1;
		}
	const struct json_value *v = json_get(o, "at_s");
	if (!v || v->type != JSON_NUMBER || !isfinite(v->number) || v->number < 0)
		return entry_error(err, i, "'at_s' wants a number of seconds from 0");
	*at = v->number;
	v = json_get(o, "class");
	if (!v || v->type != JSON_STRING)
		return entry_error(err, i, "'class' wants a class name of the model");
	*cls = -1;
	for (size_t c = 0; c < m->nr; c++)
		if (strlen(v->string) == v->string_len && !strcmp(m->classes[c].name, v->string))
			*cls = (int)c;
	if (*cls < 0) {
		strbuf_addf(err, "schedule entry %zu: class '", i);
		strbuf_add_excerpt(err, v->string, 64);
		strbuf_addstr(err, "' is not in the model");
		return -1;
	}
	v = json_get(o, "node");
	if (!v || v->type != JSON_NUMBER || v->number != floor(v->number) || v->number < 0 ||
	    v->number >= nodes) {
		strbuf_addf(err, "schedule entry %zu: 'node' wants the job's node slot, a whole "
			    "number from 0 to %u", i, nodes ? nodes - 1 : 0);
		return -1;
	}
	*slot = (unsigned)v->number;
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct sim_fault_at *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	/* qsort is not stable: faults at the same instant go by slot, then class, so the
	 * order never depends on the C library's */
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return (x->cls > y->cls) - (x->cls < y->cls);
}

int sim_schedule_parse(const char *text, size_t len, const struct sim_model *m, unsigned nodes,
		       double horizon_s, struct sim_schedule *s, struct strbuf *err)
{
	memset(s, 0, sizeof(*s));
	s->scripted = true;
	struct json_value *root = json_parse(text, len, err);
	if (!root)
		return -1;
	int ret = -1;
	if (root->type != JSON_ARRAY) {
		strbuf_addstr(err, "a schedule is a JSON list of {\"at_s\", \"class\", \"node\"}");
		goto out;
	}
	if (root->nr > SIM_SCHEDULE_MAX) {
		strbuf_addf(err, "more than %d faults: not a schedule", SIM_SCHEDULE_MAX);
		goto out;
	}
	bool sorted = true;
	for (size_t i = 0; i < root->nr; i++) {
		double at;
		int cls;
		unsigned slot;
		if (parse_entry(root->items[i], i, m, nodes, &at, &cls, &slot, err) < 0)
			goto out;
		if (at >= horizon_s)
			continue; /* after the end: never comes */
		if (s->nr && at < s->f[s->nr - 1].at)
			sorted = false;
		add(s, at, cls, slot);
	}
	if (!sorted)
		qsort(s->f, s->nr, sizeof(*s->f), by_time);
	ret = 0;
out:
	json_free(root);
	if (ret < 0)
		sim_schedule_release(s);
	return ret;
}

int sim_schedule_load(const char *path, const struct sim_model *m, unsigned nodes,
		      double horizon_s, struct sim_schedule *s, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, e = STRBUF_INIT;
	int ret = -1;
	memset(s, 0, sizeof(*s));
	int r = read_file_bounded(path, &text, SIM_SCHEDULE_FILE_MAX, err);
	if (r < 0)
		goto out;
	if (r == READ_MISSING) {
		strbuf_addf(err, "cannot read '%s': no such file", path);
		goto out;
	}
	if (r == READ_TRUNCATED) {
		strbuf_addf(err, "'%s': more than %d bytes: not a schedule", path,
			    SIM_SCHEDULE_FILE_MAX);
		goto out;
	}
	if (sim_schedule_parse(text.buf, text.len, m, nodes, horizon_s, s, &e) < 0) {
		strbuf_addf(err, "'%s': %s", path, e.buf);
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&text);
	strbuf_release(&e);
	return ret;
}

void sim_schedule_release(struct sim_schedule *s)
{
	free(s->f);
	s->f = NULL;
	s->nr = s->alloc = 0;
}
