/*
 * burnin-plan.c: the cost of 'vigil fabric burnin plan' on a generated fat tree: the
 * ibnetdiscover text of the fabric read into the graph (fabric_parse), and the plan made over
 * it (plan_build), each the median of RUNS runs, with the plan's size against its bound.
 *
 *   burnin-plan [RUNS] ["hosts=512 hcas=8 radix=64 tiers=3"]...
 *
 * Prints one line per fabric: hosts, HCAs, links, input MB, parse ms, plan ms, stages, bound.
 * docs/PERFORMANCE.md keeps the figures and the command that made them.
 */
#include "../src/fabric/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp);
	return v[n / 2];
}

static int one(const char *words, int runs)
{
	struct fat_tree_spec spec;
	struct strbuf err = STRBUF_INIT, text = STRBUF_INIT;
	struct fabric g;
	fabric_init(&g);
	if (fat_tree_parse(words, &spec, &err) < 0 || fabric_fat_tree(&g, &spec, &err) < 0) {
		fprintf(stderr, "burnin-plan: %s: %s\n", words, err.buf);
		return 2;
	}
	fabric_write_ibnetdiscover(&g, &text);
	double *tp = xcalloc((size_t)runs, sizeof(double)), *tl = xcalloc((size_t)runs, sizeof(double));
	size_t stages = 0, links = 0, hosts = 0, hcas = 0, unc = 0;
	unsigned bound = 0;
	for (int r = 0; r < runs; r++) {
		struct fabric f;
		struct plan p;
		struct plan_opts o = { 0 };
		fabric_init(&f);
		uint64_t t0 = mono_us();
		if (fabric_parse(&f, text.buf, text.len, &err) < 0) {
			fprintf(stderr, "burnin-plan: %s\n", err.buf);
			return 1;
		}
		uint64_t t1 = mono_us();
		if (plan_build(&f, &o, &p, &err) < 0) {
			fprintf(stderr, "burnin-plan: %s\n", err.buf);
			return 1;
		}
		uint64_t t2 = mono_us();
		tp[r] = (double)(t1 - t0) / 1000.0;
		tl[r] = (double)(t2 - t1) / 1000.0;
		stages = p.nr_stages;
		bound = p.lower_bound;
		links = p.nr_links;
		hosts = p.hosts;
		hcas = p.hcas;
		unc = p.nr_uncovered;
		plan_release(&p);
		fabric_release(&f);
	}
	printf("%-40s hosts %5zu  hcas %6zu  links %6zu  input %6.2f MB  parse %8.2f ms  "
	       "plan %8.2f ms  stages %zu  bound %u  uncovered %zu\n", words, hosts, hcas, links,
	       (double)text.len / 1e6, median(tp, runs), median(tl, runs), stages, bound, unc);
	free(tp);
	free(tl);
	fabric_release(&g);
	strbuf_release(&text);
	strbuf_release(&err);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	if (runs < 1 || runs > 1000)
		runs = 5;
	static const char *const dflt[] = { "hosts=16 hcas=1 radix=8", "hosts=256 hcas=8 radix=64 tiers=3",
		"hosts=512 hcas=8 radix=64 tiers=3", "hosts=4096 hcas=1 radix=64 tiers=3",
		"hosts=4096 hcas=8 radix=128 tiers=3" };
	int rc = 0;
	if (argc > 2)
		for (int i = 2; i < argc && !rc; i++)
			rc = one(argv[i], runs);
	else
		for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]) && !rc; i++)
			rc = one(dflt[i], runs);
	return rc;
}
