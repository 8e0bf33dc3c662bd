/*
 * xidwatch.c: libFuzzer target for the agent's record of NVML's Xid events (src/agent/xidwatch.h)
 * and for the worker's drain message. For any input: no crash, leak or UB; a refused record
 * says why and holds nothing; an accepted one stays within its bounds, holds only addresses made
 * of hex digits, ':' and '.', no moment past "now", and serializing and parsing it again gives
 * the same record.
 */
#include "../../src/agent/xidwatch.h"

#include <ctype.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_bdf(const char *b)
{
	for (; *b; b++)
		if (!isxdigit((unsigned char)*b) && *b != ':' && *b != '.')
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const double now = 5000;
	struct xid_watch *w = calloc(1, sizeof(*w)), *again = calloc(1, sizeof(*again));
	struct nvml_xid_drain *d = calloc(1, sizeof(*d));
	struct strbuf err = STRBUF_INIT, text = STRBUF_INIT;
	xidwatch_init(w, "boot");
	xidwatch_init(again, "boot");
	if (xidwatch_parse(w, (const char *)data, size, now, &err) < 0) {
		if (!err.len || w->nr_gpus || w->nr_ev)
			__builtin_trap();
	} else {
		if (w->nr_gpus > XIDWATCH_MAX_GPUS || w->nr_ev > XIDWATCH_MAX_EVENTS)
			__builtin_trap();
		for (size_t i = 0; i < w->nr_gpus; i++) {
			check_bdf(w->gpus[i].bdf);
			if (w->gpus[i].nr_win > XIDWATCH_MAX_WINDOWS)
				__builtin_trap();
			for (size_t j = 0; j < w->gpus[i].nr_win; j++)
				if (w->gpus[i].win[j].to > now + 1 ||
				    w->gpus[i].win[j].from > w->gpus[i].win[j].to)
					__builtin_trap();
		}
		for (size_t i = 0; i < w->nr_ev; i++)
			check_bdf(w->ev[i].bdf);
		xidwatch_serialize(w, &text);
		if (xidwatch_parse(again, text.buf, text.len, now, &err) < 0 ||
		    again->nr_gpus != w->nr_gpus || again->nr_ev != w->nr_ev)
			__builtin_trap();
	}
	/* the same bytes as the worker's drain */
	struct json_value *v = json_parse((const char *)data, size, &err);
	if (v && xidwatch_drain_from_json(v, d, &err) == 0) {
		if (d->nr_gpus > NVML_MAX_GPUS_WATCHED || d->nr_ev > NVML_XID_DISTINCT_MAX)
			__builtin_trap();
		for (size_t i = 0; i < d->nr_ev; i++)
			check_bdf(d->ev[i].bdf);
		xidwatch_merge(w, d);
		if (w->nr_ev > XIDWATCH_MAX_EVENTS || w->nr_gpus > XIDWATCH_MAX_GPUS)
			__builtin_trap();
	}
	json_free(v);
	xidwatch_release(w);
	xidwatch_release(again);
	free(w);
	free(again);
	free(d);
	strbuf_release(&err);
	strbuf_release(&text);
	return 0;
}
