/*
 * lemons.c: the nodes most likely to fail again (fit.h): each node's host faults against the
 * fleet's rates over its exposure (a Poisson upper tail), the false discovery rate across the
 * fleet (Benjamini-Hochberg), the recurrence after repairs and boots as evidence; the list to
 * pull before a big run, in JSON (docs/schema/fleet-lemons.json) or as a table.
 */
#include "fit.h"
#include "../lib/json.h"
#include "../lib/util.h"

#include <math.h>

double fleet_poisson_tail(size_t k, double lambda)
{
	if (k == 0)
		return 1.0;
	if (!(lambda > 0))
		return 0.0;
	if ((double)k <= lambda) {
		/* 1 - P(X < k): the lower sum is the smaller one to add up */
		double term = exp(-lambda), sum = 0;
		for (size_t i = 0; i < k; i++) {
			sum += term;
			term *= lambda / (double)(i + 1);
		}
		double p = 1.0 - sum;
		return p < 0 ? 0 : p;
	}
	/* the upper sum directly, so that tiny p-values keep their digits */
	double lt = -lambda + (double)k * log(lambda) - lgamma((double)k + 1.0);
	double term = exp(lt), sum = 0;
	for (size_t i = k; i < k + 10000; i++) {
		sum += term;
		term *= lambda / (double)(i + 1);
		if (term < sum * 1e-17)
			break;
	}
	return sum > 1 ? 1 : sum;
}

static int cmp_lemon(const void *a, const void *b)
{
	const struct fleet_lemon *x = a, *y = b;
	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	if (x->events != y->events)
		return x->events > y->events ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

void fleet_lemons_find(const struct fleet_history *h, const struct fleet_fit *f, double alpha,
		       struct fleet_lemons *out)
{
	memset(out, 0, sizeof(*out));
	out->alpha = alpha;
	if (!h->nr_nodes || !(f->node_days > 0))
		return;
	/* per node-day, host classes only */
	double rate[FC_NR] = { 0 }, total = 0;
	size_t nhost = 0;
	for (int c = 0; c < FC_NR; c++)
		if (fleet_class_host_fault(c)) {
			rate[c] = (double)f->c[c].events / f->node_days;
			total += rate[c];
			nhost++;
		}
	size_t alloc = 0;
	/* the events are sorted by node (fleet_history_merge()): one pass, a node at a time */
	for (size_t i = 0; i < h->nr;) {
		size_t node = h->ev[i].node, j = i;
		while (j < h->nr && h->ev[j].node == node)
			j++;
		struct fleet_lemon l = { .node = node, .worst_class = -1 };
		double first_end = 0;
		for (size_t k = i; k < j && node != FLEET_NO_NODE; k++) {
			const struct fleet_event *e = &h->ev[k];
			if (!fleet_class_host_fault(e->cls) || e->t < f->start || e->t > f->end)
				continue;
			l.events++;
			l.by_class[e->cls]++;
			if (e->end > e->t) {
				l.repairs++;
				if (!first_end || e->end < first_end)
					first_end = e->end;
			}
			if (e->sources & FS_AGENT)
				l.agent_boots++;
		}
		/* recurrence: faults after the node's first repair ended */
		for (size_t k = i; k < j && first_end; k++) {
			const struct fleet_event *e = &h->ev[k];
			if (fleet_class_host_fault(e->cls) && e->t >= first_end && e->t <= f->end)
				l.after_repair++;
		}
		i = j;
		if (!l.events)
			continue;
		double exposure = f->days; /* every node is watched for the whole window */
		l.expected = total * exposure;
		double p_all = fleet_poisson_tail(l.events, total * exposure);
		double p_cls = 1.0;
		for (int c = 0; c < FC_NR; c++) {
			if (!l.by_class[c])
				continue;
			double p = fleet_poisson_tail(l.by_class[c], rate[c] * exposure);
			if (p < p_cls) {
				p_cls = p;
				l.worst_class = c;
			}
		}
		p_cls *= (double)nhost;
		double p = 2.0 * (p_all < p_cls ? p_all : p_cls);
		l.p = p > 1 ? 1 : p;
		ALLOC_GROW(out->l, out->nr + 1, alloc);
		out->l[out->nr++] = l;
	}
	qsort(out->l, out->nr, sizeof(*out->l), cmp_lemon);
	/* Benjamini-Hochberg over every node of the fleet (a node with no fault has p = 1) */
	double m = (double)(f->nodes + f->excluded);
	if (m < (double)out->nr)
		m = (double)out->nr;
	double qmin = 1.0;
	for (size_t j = out->nr; j-- > 0;) {
		double q = out->l[j].p * m / (double)(j + 1);
		if (q < qmin)
			qmin = q;
		out->l[j].q = qmin;
		out->l[j].confidence = 1.0 - qmin;
	}
	for (size_t j = 0; j < out->nr; j++)
		if ((out->l[j].lemon = out->l[j].q < alpha))
			out->nr_lemons++;
}

void fleet_lemons_release(struct fleet_lemons *out)
{
	free(out->l);
	memset(out, 0, sizeof(*out));
}

static void lemon_events_json(struct json_writer *w, const struct fleet_history *h,
			      const struct fleet_fit *f, size_t node)
{
	char t[32];
	size_t shown = 0;
	json_key(w, "evidence");
	json_open_array(w);
	for (size_t i = 0; i < h->nr && shown < 32; i++) {
		const struct fleet_event *e = &h->ev[i];
		if (e->node != node || !fleet_class_host_fault(e->cls) || e->t < f->start ||
		    e->t > f->end)
			continue;
		shown++;
		json_open_object(w);
		json_key(w, "class");
		json_string(w, fleet_class_name(e->cls));
		fleet_format_time(e->t, t);
		json_key(w, "t");
		json_string(w, t);
		json_key(w, "time_approximate");
		json_bool(w, e->approx);
		json_key(w, "resumed");
		if (e->end > 0) {
			fleet_format_time(e->end, t);
			json_string(w, t);
		} else {
			json_null(w);
		}
		json_key(w, "sources");
		json_open_array(w);
		if (e->sources & FS_AGENT)
			json_string(w, "agent");
		if (e->sources & FS_SLURM)
			json_string(w, "slurm");
		if (e->sources & FS_JOURNAL)
			json_string(w, "journal");
		json_close_array(w);
		json_key(w, "what");
		json_string(w, e->what ? e->what : "");
		json_close_object(w);
	}
	json_close_array(w);
}

void fleet_lemons_json(const struct fleet_lemons *L, const struct fleet_history *h,
		       const struct fleet_fit *f, size_t top, struct strbuf *out)
{
	struct json_writer w;
	json_writer_init(&w, out, true);
	json_open_top(&w);
	fleet_fit_json_head(&w, f);
	json_key(&w, "nodes");
	json_uint(&w, f->nodes);
	json_key(&w, "days");
	json_fixed(&w, f->days, 3);
	json_key(&w, "alpha");
	json_double(&w, L->alpha);
	json_key(&w, "fleet_rate_per_node_day");
	double total = 0;
	for (int c = 0; c < FC_NR; c++)
		if (fleet_class_host_fault(c))
			total += (double)f->c[c].events / f->node_days;
	json_double(&w, total);
	json_key(&w, "lemons");
	json_uint(&w, L->nr_lemons);
	json_key(&w, "pull");
	json_open_array(&w);
	for (size_t j = 0; j < L->nr; j++)
		if (L->l[j].lemon)
			json_string(&w, h->nodes[L->l[j].node]);
	json_close_array(&w);
	json_key(&w, "ranked");
	json_open_array(&w);
	for (size_t j = 0; j < L->nr && j < top; j++) {
		const struct fleet_lemon *l = &L->l[j];
		json_open_object(&w);
		json_key(&w, "node");
		json_string(&w, h->nodes[l->node]);
		json_key(&w, "lemon");
		json_bool(&w, l->lemon);
		json_key(&w, "faults");
		json_uint(&w, l->events);
		json_key(&w, "expected");
		json_fixed(&w, l->expected, 4);
		json_key(&w, "p_value");
		json_double(&w, l->p);
		json_key(&w, "q_value");
		json_double(&w, l->q);
		json_key(&w, "confidence");
		json_fixed(&w, l->confidence, 4);
		json_key(&w, "worst_class");
		json_string(&w, fleet_class_name(l->worst_class));
		json_key(&w, "by_class");
		json_open_object(&w);
		for (int c = 0; c < FC_NR; c++)
			if (l->by_class[c]) {
				json_key(&w, fleet_class_name(c));
				json_uint(&w, l->by_class[c]);
			}
		json_close_object(&w);
		json_key(&w, "repairs");
		json_uint(&w, l->repairs);
		json_key(&w, "faults_after_repair");
		json_uint(&w, l->after_repair);
		json_key(&w, "agent_boots");
		json_uint(&w, l->agent_boots);
		lemon_events_json(&w, h, f, l->node);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "ranked_omitted");
	json_uint(&w, L->nr > top ? L->nr - top : 0);
	json_close_object(&w);
	json_writer_finish(&w, NULL);
	strbuf_addch(out, '\n');
}

void fleet_lemons_text(const struct fleet_lemons *L, const struct fleet_history *h,
		       const struct fleet_fit *f, size_t top, struct strbuf *out)
{
	strbuf_addf(out, "%zu lemons among %zu nodes over %.1f days (false discovery rate %g):\n",
		    L->nr_lemons, f->nodes, f->days, L->alpha);
	strbuf_addf(out, "%-20s %5s %6s %8s %10s %8s %6s %7s  %s\n", "node", "lemon", "faults",
		    "expected", "p", "confid.", "after", "repairs", "worst class");
	for (size_t j = 0; j < L->nr && j < top; j++) {
		const struct fleet_lemon *l = &L->l[j];
		strbuf_addf(out, "%-20s %5s %6zu %8.2f %10.3g %8.4f %6zu %7zu  %s (%zu)\n",
			    h->nodes[l->node], l->lemon ? "yes" : "no", l->events, l->expected, l->p,
			    l->confidence, l->after_repair, l->repairs,
			    fleet_class_name(l->worst_class),
			    l->worst_class >= 0 ? l->by_class[l->worst_class] : 0);
	}
	if (L->nr > top)
		strbuf_addf(out, "(%zu more nodes with a host fault; --top N shows more)\n",
			    L->nr - top);
	if (L->nr_lemons) {
		strbuf_addstr(out, "pull:");
		for (size_t j = 0; j < L->nr; j++)
			if (L->l[j].lemon)
				strbuf_addf(out, " %s", h->nodes[L->l[j].node]);
		strbuf_addch(out, '\n');
	}
	for (size_t i = 0; i < f->nr_warnings; i++)
		strbuf_addf(out, "warning: %s\n", f->warnings[i]);
}
