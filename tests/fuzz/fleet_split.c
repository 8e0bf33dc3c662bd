/*
 * fleet_split.c: libFuzzer target for the one-step check round's splitter and matcher
 * (src/slurm/fleet_step.c): srun --label -v output, stdout and stderr, in any chunks. For any
 * bytes: no crash, leak or UB; every node gets a verdict and a one-line reason; a node counted
 * as answered has its own report, whose "host" is the node's name and which srun started on
 * that node when srun said where it started the task.
 *
 * Input: byte 0 picks the chunk size; the rest is stdout up to the first "\n--\n", stderr
 * after it. Seeds (tests/fuzz/corpus/fleet_split): the shapes seen on the testbed's Slurm 22.05
 * (tests/data/realworld/slurm-step.md) and hostile variants.
 */
#include "../../src/lib/json.h"
#include "../../src/slurm/fleet_step.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NODES 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t chunk = (size_t)data[0] % 64 + 1;
	const char *text = (const char *)data + 1;
	size_t len = size - 1, olen = len;
	const char *sep = memmem(text, len, "\n--\n", 4);
	if (sep)
		olen = (size_t)(sep - text) + 1;
	const char *err = sep ? sep + 4 : text + len;
	size_t elen = (size_t)(text + len - err);

	struct fleet f = { 0 };
	size_t idx[NODES];
	bool done[NODES];
	f.rows = xcalloc(NODES, sizeof(*f.rows));
	f.nr = NODES;
	for (size_t i = 0; i < NODES; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%zu", i + 1);
		f.rows[i].node.name = xstrdup(name);
		f.rows[i].node.state = xstrdup("IDLE");
		f.rows[i].node.reason = xstrdup("");
		f.rows[i].node.partitions = xstrdup("");
		f.rows[i].node.addr = xstrdup("");
		f.rows[i].run = true;
		idx[i] = i;
	}
	struct fleet_split s;
	fleet_split_init(&s, NODES, 1u << 16);
	for (size_t a = 0, b = 0; a < olen || b < elen;) {
		size_t n = olen - a < chunk ? olen - a : chunk;
		fleet_split_feed(&s, 1, text + a, n, a);
		a += n;
		n = elen - b < chunk ? elen - b : chunk;
		fleet_split_feed(&s, 2, err + b, n, b);
		b += n;
	}
	fleet_split_finish(&s, len);
	fleet_split_assign(&s, f.rows, idx, NODES, chunk & 1, 1000, done);
	for (size_t i = 0; i < NODES; i++) {
		const struct fleet_row *r = &f.rows[i];
		if (!r->reason || strchr(r->reason, '\n'))
			__builtin_trap();
		if (r->verdict != FLEET_UNREACHABLE) {
			if (!r->report_json)
				__builtin_trap();
			struct json_value *v = json_parse(r->report_json, strlen(r->report_json), NULL);
			const char *host = v ? json_get_string(v, "host") : NULL;
			if (!host || strcmp(host, r->node.name))
				__builtin_trap(); /* an answer under another node's name */
			for (size_t t = 0; t < s.nr_tasks; t++)
				if (s.tasks[t].launched_on && !strcmp(s.tasks[t].launched_on, host) &&
				    strcmp(s.tasks[t].out.buf, r->report_json))
					__builtin_trap(); /* not the report of the task srun started there */
			json_free(v);
		}
	}
	fleet_split_release(&s);
	fleet_release(&f);
	return 0;
}
