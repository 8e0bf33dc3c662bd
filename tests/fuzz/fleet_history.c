/*
 * fleet_history.c: libFuzzer target for the readers of `vigil fleet model` and `vigil fleet
 * lemons` (src/fleet/readers.c): Slurm's node events as `sacctmgr show event -P` prints them
 * and vigil run journals. The first byte picks the reader (even: sacctmgr, odd: a journal),
 * the rest is the text. For any input: no crash, leak or UB; a refusal says why, cleanly, and
 * names the input; what is read is bounded (events within the input's lines), every node name
 * and evidence text clean, every class one of vigil sim's or none; then the merge keeps that.
 *
 * Seeds (tests/fuzz/corpus/fleet_history, the shapes of tests/data/realworld/fleet-history.md
 * with our own values): -P and -p outputs, open events (TimeEnd Unknown), cluster events
 * without a node, reasons with '|', journals with faults, exclusions and a torn last line,
 * binary and over-long lines.
 */
#include "../../src/fleet/history.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	struct fleet_history h = { 0 };
	struct strbuf err = STRBUF_INIT;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	int r = data[0] & 1 ? fleet_read_journal_text(&h, "fuzz", text, len, &err)
			    : fleet_read_sacct_text(&h, "fuzz", text, len, &err);
	if (r < 0 && (!err.len || !str_is_clean(err.buf) || !strstr(err.buf, "fuzz")))
		__builtin_trap();
	if (h.nr > len + 1)
		__builtin_trap();
	for (size_t i = 0; i < h.nr; i++) {
		const struct fleet_event *e = &h.ev[i];
		if (e->cls < 0 || e->cls >= FC_NR || !str_is_clean(e->what) ||
		    strlen(e->what) > 4 * FLEET_WHAT_MAX + 8)
			__builtin_trap();
		if (e->node != FLEET_NO_NODE && e->node >= h.nr_nodes)
			__builtin_trap();
	}
	for (size_t i = 0; i < h.nr_nodes; i++)
		if (!str_is_clean(h.nodes[i]))
			__builtin_trap();
	fleet_history_merge(&h);
	for (size_t i = 1; i < h.nr; i++)
		if (h.ev[i].node < h.ev[i - 1].node)
			__builtin_trap();
	fleet_history_release(&h);
	strbuf_release(&err);
	return 0;
}
