/*
 * model_fit.c: the fleet's own failure model for vigil sim, from its recorded faults (fit.h):
 * rates over the GPU-days observed, repair times from Slurm's drains and resumes, and what
 * the fit cannot say (too little data, classes never seen) said plainly.
 */
#include "fit.h"
#include "../lib/json.h"
#include "../lib/util.h"

#include <math.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void warn(struct fleet_fit *f, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void warn(struct fleet_fit *f, const char *fmt, ...)
{
	if (f->nr_warnings >= FLEET_WARNINGS_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->warnings[f->nr_warnings++], sizeof(f->warnings[0]), fmt, ap);
	va_end(ap);
}

/* Rounded as the model's JSON writes it, so the report and the file say the same number. */
static double g6(double v)
{
	char t[32];
	snprintf(t, sizeof(t), "%.6g", v);
	return strtod(t, NULL);
}

static void fill_model(struct fleet_fit *f, const struct fleet_history *h)
{
	struct sim_model *m = &f->model;
	char a[32], b[32];
	sim_model_default(m);
	for (size_t i = 0; i < m->nr && i < FC_NR; i++) {
		m->classes[i].rate = f->c[i].rate;
		m->classes[i].repair_hours = f->c[i].repair_hours;
	}
	fleet_format_time(f->start, a);
	fleet_format_time(f->end, b);
	a[10] = b[10] = '\0';
	snprintf(m->source, sizeof(m->source),
		 "%svigil fleet model: %zu faults on %zu nodes x %.1f days (%s..%s) x %u GPUs; "
		 "%zu agent histories, %zu Slurm event lists, %zu run journals",
		 f->enough_data ? "" : "TOO LITTLE DATA, not a model to trust: ", f->events,
		 f->nodes, f->days, a, b, f->gpus_per_node, h->agent_dirs, h->slurm_files,
		 h->journals);
	/* the file itself says which rates are 0 for want of a fault, as far as it has room */
	size_t len = strlen(m->source);
	const char *sep = "; no fault seen (rate 0): ";
	for (int c = 0; c < FC_NR; c++) {
		if (f->c[c].events)
			continue;
		size_t need = strlen(sep) + strlen(fleet_class_name(c));
		if (len + need >= sizeof(m->source))
			break;
		snprintf(m->source + len, sizeof(m->source) - len, "%s%s", sep, fleet_class_name(c));
		len += need;
		sep = ", ";
	}
}

int fleet_fit(const struct fleet_history *h, const struct fleet_fit_opts *o, struct fleet_fit *f,
	      struct strbuf *err)
{
	struct sim_model def;
	double *rep = NULL;
	memset(f, 0, sizeof(*f));
	sim_model_default(&def);
	/* the classes are vigil sim's, by position: a model that changed its order is a bug */
	for (int i = 0; i < FC_NR; i++)
		if ((size_t)i >= def.nr || strcmp(def.classes[i].name, fleet_class_name(i)))
			return error_set(err, "vigil sim's default model has no class '%s' at %d",
					 fleet_class_name(i), i);
	f->gpus_per_node = o->gpus_per_node ? o->gpus_per_node : 8;
	f->start = o->since ? o->since : h->t_min;
	f->end = o->until ? o->until : h->t_max;
	if (!f->start || !f->end)
		return error_set(err, "no time in any input: give --since and --until");
	if (f->end <= f->start)
		return error_set(err, "the window is empty (%s after its end)",
				 o->since ? "--since" : "the first record");
	f->days = (f->end - f->start) / 86400.0;
	for (size_t i = 0; i < h->nr_nodes; i++)
		if (o->exclude && o->exclude[i])
			f->excluded++;
	f->nodes = h->nr_nodes - f->excluded;
	if (o->fleet_nodes > h->nr_nodes)
		f->nodes = o->fleet_nodes - f->excluded;
	f->node_days = (double)f->nodes * f->days;
	f->gpu_days = f->node_days * f->gpus_per_node;

	rep = xcalloc(h->nr + 1, sizeof(*rep));
	for (int c = 0; c < FC_NR; c++) {
		size_t nrep = 0;
		for (size_t i = 0; i < h->nr; i++) {
			const struct fleet_event *e = &h->ev[i];
			if (e->cls != c || e->t < f->start || e->t > f->end)
				continue;
			if (e->node != FLEET_NO_NODE && o->exclude && o->exclude[e->node])
				continue;
			f->c[c].events++;
			if (e->end > e->drained && e->drained > 0)
				rep[nrep++] = (e->end - e->drained) / 3600.0;
		}
		f->events += f->c[c].events;
		f->c[c].rate = f->gpu_days > 0 ? g6((double)f->c[c].events / f->gpu_days) : 0;
		f->c[c].upper95 = f->gpu_days > 0 ? g6(3.0 / f->gpu_days) : 0;
		f->c[c].repair_samples = nrep;
		if (nrep) {
			qsort(rep, nrep, sizeof(*rep), cmp_double);
			double med = nrep % 2 ? rep[nrep / 2] : (rep[nrep / 2 - 1] + rep[nrep / 2]) / 2;
			f->c[c].repair_hours = g6(med);
		} else {
			f->c[c].repair_hours = def.classes[c].repair_hours;
		}
	}
	free(rep);

	f->enough_data = f->node_days >= FLEET_MIN_NODE_DAYS;
	if (!f->enough_data)
		warn(f, "too little data: %.1f node-days observed (at least %.0f): the rates below "
			"are not a model to plan with",
		     f->node_days, FLEET_MIN_NODE_DAYS);
	if (!o->since || !o->until)
		warn(f, "the window is the inputs' first to last record; --since/--until set it "
			"(a quiet stretch at either end is not counted)");
	/* every node named has its agent's history: the agents name the fleet */
	if (o->fleet_nodes == 0 && h->agent_dirs < h->nr_nodes)
		warn(f, "nodes are those the inputs name (%zu): a node no input names is not "
			"counted (--fleet-nodes N)",
		     h->nr_nodes);
	if (f->events && f->events < 10)
		warn(f, "only %zu faults: each rate is uncertain by about 1/sqrt(count)", f->events);
	if (h->unclassified)
		warn(f, "%zu faults not placed in a class (not counted): see docs/LEMONS.md",
		     h->unclassified);
	fill_model(f, h);
	return 0;
}

static void class_note(const struct fleet_fit *f, int c, struct strbuf *out)
{
	if (!f->c[c].events)
		strbuf_addf(out, "no fault seen: rate 0 (the true rate may still be up to %.3g per "
				 "GPU-day, 95 %% upper bound)",
			    f->c[c].upper95);
	else if (!fleet_class_host_fault(c) && !f->c[c].repair_samples)
		strbuf_addstr(out, "not a host fault: no repair");
	else if (!f->c[c].repair_samples)
		strbuf_addstr(out, "repair_hours: vigil sim's default (no drain -> resume seen)");
	else
		strbuf_addf(out, "repair_hours: median of %zu drain -> resume",
			    f->c[c].repair_samples);
}

void fleet_fit_json_head(struct json_writer *w, const struct fleet_fit *f)
{
	json_key(w, "enough_data");
	json_bool(w, f->enough_data);
	json_key(w, "warnings");
	json_open_array(w);
	for (size_t i = 0; i < f->nr_warnings; i++)
		json_string(w, f->warnings[i]);
	json_close_array(w);
}

void fleet_fit_json(const struct fleet_fit *f, const struct fleet_history *h, struct strbuf *out)
{
	struct json_writer w;
	struct strbuf note = STRBUF_INIT;
	char a[32], b[32];
	json_writer_init(&w, out, true);
	json_open_top(&w);
	fleet_fit_json_head(&w, f);
	fleet_format_time(f->start, a);
	fleet_format_time(f->end, b);
	json_key(&w, "since");
	json_string(&w, a);
	json_key(&w, "until");
	json_string(&w, b);
	json_key(&w, "days");
	json_fixed(&w, f->days, 3);
	json_key(&w, "nodes");
	json_uint(&w, f->nodes);
	json_key(&w, "nodes_excluded");
	json_uint(&w, f->excluded);
	json_key(&w, "gpus_per_node");
	json_uint(&w, f->gpus_per_node);
	json_key(&w, "node_days");
	json_fixed(&w, f->node_days, 3);
	json_key(&w, "gpu_days");
	json_fixed(&w, f->gpu_days, 3);
	json_key(&w, "faults");
	json_uint(&w, f->events);
	json_key(&w, "inputs");
	json_open_object(&w);
	json_key(&w, "agent_histories");
	json_uint(&w, h->agent_dirs);
	json_key(&w, "slurm_event_lists");
	json_uint(&w, h->slurm_files);
	json_key(&w, "journals");
	json_uint(&w, h->journals);
	json_key(&w, "merged");
	json_uint(&w, h->merged);
	json_key(&w, "unclassified");
	json_uint(&w, h->unclassified);
	json_key(&w, "planned");
	json_uint(&w, h->planned);
	json_key(&w, "skipped_lines");
	json_uint(&w, h->skipped_lines);
	json_close_object(&w);
	json_key(&w, "classes");
	json_open_array(&w);
	for (int c = 0; c < FC_NR; c++) {
		json_open_object(&w);
		json_key(&w, "name");
		json_string(&w, fleet_class_name(c));
		json_key(&w, "faults");
		json_uint(&w, f->c[c].events);
		json_key(&w, "rate");
		json_double(&w, f->c[c].rate);
		json_key(&w, "rate_upper95");
		if (f->c[c].events)
			json_null(&w);
		else
			json_double(&w, f->c[c].upper95);
		json_key(&w, "repair_hours");
		json_double(&w, f->c[c].repair_hours);
		json_key(&w, "repair_samples");
		json_uint(&w, f->c[c].repair_samples);
		strbuf_reset(&note);
		class_note(f, c, &note);
		json_key(&w, "note");
		json_string(&w, note.buf);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "source");
	json_string(&w, f->model.source);
	/* the model itself, as --failures reads it (sim_model_json()'s fields) */
	json_key(&w, "model");
	json_open_object(&w);
	json_key(&w, "schema_version");
	json_int(&w, 1);
	sim_model_members(&w, &f->model);
	json_close_object(&w);
	json_close_object(&w);
	json_writer_finish(&w, NULL);
	strbuf_addch(out, '\n');
	strbuf_release(&note);
}

void fleet_fit_text(const struct fleet_fit *f, const struct fleet_history *h, struct strbuf *out)
{
	struct strbuf note = STRBUF_INIT;
	char a[32], b[32];
	fleet_format_time(f->start, a);
	fleet_format_time(f->end, b);
	strbuf_addf(out, "fleet model: %zu faults on %zu nodes x %.1f days (%s .. %s) x %u GPUs = "
			 "%.0f GPU-days\n",
		    f->events, f->nodes, f->days, a, b, f->gpus_per_node, f->gpu_days);
	strbuf_addf(out, "inputs: %zu agent histories, %zu Slurm event lists, %zu run journals; "
			 "%zu seen twice (merged), %zu unclassified, %zu planned, %zu lines skipped\n",
		    h->agent_dirs, h->slurm_files, h->journals, h->merged, h->unclassified,
		    h->planned, h->skipped_lines);
	strbuf_addf(out, "%-17s %7s %12s %8s  %s\n", "class", "faults", "per GPU-day", "repair h",
		    "note");
	for (int c = 0; c < FC_NR; c++) {
		strbuf_reset(&note);
		class_note(f, c, &note);
		strbuf_addf(out, "%-17s %7zu %12.4g %8.4g  %s\n", fleet_class_name(c), f->c[c].events,
			    f->c[c].rate, f->c[c].repair_hours, note.buf);
	}
	for (size_t i = 0; i < f->nr_warnings; i++)
		strbuf_addf(out, "warning: %s\n", f->warnings[i]);
	strbuf_release(&note);
}
