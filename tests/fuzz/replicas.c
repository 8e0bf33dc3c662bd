/*
 * replicas.c: libFuzzer target for the replicas' digest comparison (src/supervise/replicas.h).
 * Input: lines "R T <rank line>": R the srun label (the rank), T a clock in seconds, the rest
 * what the rank printed; a line "tick T" moves the clock, "reset" starts a new attempt. For any
 * bytes: no crash, leak or UB; a verdict names ranks of the world, in its group, each once; a
 * DIVERGED verdict's digests differ from the majority, held by more than half the reporters;
 * nothing is judged twice (judged never exceeds the accepted reports); pending stays bounded.
 */
#include "../../src/supervise/replicas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WORLD 16

static struct replicas *cur;

static void on_verdict(void *arg, const struct replica_verdict *v)
{
	(void)arg;
	bool seen[WORLD] = { false };
	if (v->group >= WORLD || v->nr_ranks > WORLD || v->reported > v->size)
		__builtin_trap();
	for (size_t i = 0; i < v->nr_ranks; i++) {
		unsigned k = v->ranks[i];
		if (k >= WORLD || seen[k] || cur->group_of[k] != (int)v->group)
			__builtin_trap();
		seen[k] = true;
		if (v->kind == REPLICA_DIVERGED && v->digests[i] == v->majority)
			__builtin_trap();
	}
	if (v->kind == REPLICA_DIVERGED && (!v->has_majority || 2 * v->agree <= v->reported))
		__builtin_trap();
	if (v->kind == REPLICA_UNDECIDED && 2 * v->agree > v->reported)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replicas r;
	replicas_init(&r, WORLD, 5, on_verdict, NULL);
	cur = &r;
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		unsigned rank;
		double t;
		int used = 0;
		if (!strncmp(line, "reset", 5)) {
			replicas_reset(&r);
		} else if (sscanf(line, "tick %lf", &t) == 1) {
			replicas_tick(&r, t);
		} else if (sscanf(line, "%u %lf %n", &rank, &t, &used) == 2 && used > 0) {
			uint64_t step, d;
			unsigned g, m;
			const char *rest = line + used;
			if (replicas_parse_line(rest, strlen(rest), &step, &g, &m, &d) == 1)
				replicas_add(&r, rank, step, g, m, d, t);
		}
		for (unsigned g = 0; g < WORLD; g++)
			if (r.groups[g] && r.groups[g]->nr_pending > REPLICAS_PENDING_MAX)
				__builtin_trap();
		if (r.judged > r.reports)
			__builtin_trap();
		line = nl ? nl + 1 : NULL;
	}
	replicas_flush(&r);
	replicas_release(&r);
	free(text);
	return 0;
}
