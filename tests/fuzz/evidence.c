/*
 * evidence.c: libFuzzer target for the evidence judge (src/supervise/evidence.h). The input is
 * cut into host outputs at each 0x1e byte (the first byte also picks the world size and the
 * last-output times). For any bytes: no crash, leak or UB; the summary stays under 1 KiB;
 * evidence.json parses; ranks ascend without repeats; every group has a rank; the majority is a
 * group or none; every suspect has a reason.
 */
#include "../../src/supervise/evidence.h"
#include "../../src/lib/json.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HOSTS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[MAX_HOSTS] = { "n0", "n1", "n2",	 "n3",	"n4",  "n5",
						      "n6", "n7", "n8",	 "n9",	"n10", "n11",
						      "n12", "n13", "n14", "n15" };
	struct evidence_host hosts[MAX_HOSTS];
	double last[8];
	const char *rank_hosts[8];
	size_t nh = 0, start = 1;
	unsigned seed = size ? data[0] : 0;

	for (size_t i = 1; i <= size && nh < MAX_HOSTS; i++) {
		if (i == size || data[i] == 0x1e) {
			hosts[nh].host = names[nh];
			/* an empty piece stands for a host that gave no output */
			hosts[nh].output = i > start ? (const char *)data + start : NULL;
			hosts[nh].len = i - start;
			nh++;
			start = i + 1;
		}
	}
	for (size_t r = 0; r < 8; r++) {
		last[r] = (seed >> (r % 8)) & 1 ? 100.0 + (double)((seed * (r + 3)) % 17) : NAN;
		rank_hosts[r] = names[(r + seed) % MAX_HOSTS];
	}
	struct evidence_input in = { .hosts = hosts, .hosts_nr = nh, .last_output = last,
				     .last_output_nr = 8, .rank_hosts = rank_hosts,
				     .rank_hosts_nr = 8, .now = 200, .world_size = seed % 12 };
	struct evidence e;
	evidence_init(&e);
	evidence_build(&e, &in);
	if (e.summary.len > 1023)
		__builtin_trap();
	struct json_value *v = json_parse(e.json.buf, e.json.len, NULL);
	if (!v)
		__builtin_trap();
	json_free(v);
	for (size_t i = 1; i < e.ranks_nr; i++)
		if (e.ranks[i - 1].rank >= e.ranks[i].rank)
			__builtin_trap();
	for (size_t i = 0; i < e.py_nr; i++)
		if (!e.py[i].nr)
			__builtin_trap();
	for (size_t i = 0; i < e.native_nr; i++)
		if (!e.native[i].nr)
			__builtin_trap();
	if (e.py_majority >= (int)e.py_nr || e.native_majority >= (int)e.native_nr)
		__builtin_trap();
	for (size_t i = 0; i < e.suspects_nr; i++)
		if (!e.suspects[i].reasons.nr)
			__builtin_trap();
	/* a doubtful rank (claimed twice) is never judged by what its claimants showed, and its
	 * answers' hosts are doubtful */
	for (size_t i = 0; i < e.ranks_nr; i++) {
		if (!e.ranks[i].doubt)
			continue;
		if (e.ranks[i].samples || e.ranks[i].py_group >= 0 || e.ranks[i].native_group >= 0 ||
		    !strlist_has(&e.doubtful_hosts, e.ranks[i].host))
			__builtin_trap();
		for (size_t k = 0; k < e.suspects_nr; k++)
			for (size_t x = 0; e.suspects[k].rank == e.ranks[i].rank &&
					   x < e.suspects[k].reasons.nr; x++)
				if (strncmp(e.suspects[k].reasons.items[x], "went silent", 11) &&
				    strncmp(e.suspects[k].reasons.items[x], "not found", 9))
					__builtin_trap();
	}
	evidence_release(&e);
	return 0;
}
