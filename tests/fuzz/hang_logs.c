/*
 * hang_logs.c: libFuzzer target for 'vigil diagnose hang' from logs (src/diagnose/hanglogs.h):
 * the input split into files (a 0x1e byte starts the next) and fed in chunks of two different
 * sizes. No crash, leak or UB; the same bytes in other chunks give the same verdict, groups,
 * victims and culprits; a verdict other than unknown has what it names; the JSON parses back.
 */
#include "../../src/diagnose/hanglogs.h"
#include "../../src/lib/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run(struct hlog *h, const uint8_t *data, size_t size, size_t chunk)
{
	hlog_init(h);
	size_t start = 0, nfile = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != 0x1e)
			continue;
		char name[40];
		snprintf(name, sizeof(name), "attempt-1/rank-%zu.err", nfile);
		hlog_file_begin(h, name, nfile % 2 ? "n1" : "", nfile % 3 ? (long)nfile : -1);
		nfile++;
		for (size_t off = start; off < i; off += chunk)
			hlog_feed(h, (const char *)data + off, i - off < chunk ? i - off : chunk);
		hlog_file_end(h, NULL);
		start = i + 1;
	}
	hlog_finish(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hlog a, b;
	run(&a, data, size, size ? size : 1);
	run(&b, data, size, size ? (size_t)data[0] % 13 + 1 : 1);
	if (a.verdict != b.verdict || a.nr_order != b.nr_order || a.nr_silent != b.nr_silent ||
	    a.nccl_warns != b.nccl_warns || a.nccl_errors != b.nccl_errors)
		__builtin_trap();
	for (size_t k = 0; k < a.nr_order; k++) {
		const struct hlog_group *x = &a.groups[a.order_groups[k]],
					*y = &b.groups[b.order_groups[k]];
		if (strcmp(x->name, y->name) || x->seq != y->seq || x->nr_victims != y->nr_victims ||
		    x->nr_culprits != y->nr_culprits || x->nr_suspects != y->nr_suspects ||
		    !x->has_timeout)
			__builtin_trap();
		for (size_t i = 0; i < x->nr_culprits; i++)
			if (x->culprits[i].rank != y->culprits[i].rank ||
			    x->culprits[i].grank != y->culprits[i].grank)
				__builtin_trap();
	}
	if ((a.verdict == HLOG_CULPRIT && !a.groups[a.order_groups[0]].nr_culprits) ||
	    (a.verdict == HLOG_SILENT && !a.nr_silent) ||
	    (a.verdict == HLOG_UNKNOWN && a.nr_order))
		__builtin_trap();

	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	hlog_write_json(&a, &out);
	struct json_value *v = json_parse(out.buf, out.len, &err);
	if (!v)
		__builtin_trap();
	json_free(v);
	strbuf_reset(&out);
	hlog_write_text(&a, &out);
	strbuf_release(&out);
	strbuf_release(&err);
	hlog_release(&a);
	hlog_release(&b);
	return 0;
}
