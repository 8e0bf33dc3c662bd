/*
 * scontrol.c: libFuzzer target for the 'scontrol -o show node' parser (src/slurm/slurm.c), whose
 * answer decides whether vigil drains or resumes a node. For any input: no crash, leak or UB; a
 * refusal says why and is clean (no control byte or bidi control); every parsed field is clean,
 * one line, and the node name, state and reason feed the drain policy without harm: a node
 * whose reason vigil did not write is never resumed.
 *
 * Seeds (tests/fuzz/corpus/scontrol, shapes from real output; see its README): one line a node
 * as 'scontrol -o show node' prints it, the multi-line form of 'scontrol show node', reasons
 * with their "[user@time]" stamps, and hostile variants (escapes, bidi controls, NULs).
 */
#include "../../src/slurm/slurm.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void clean_or_trap(const char *s)
{
	if (!s || !str_is_clean(s) || strchr(s, '\n'))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	struct slurm_nodes l = { 0 };
	struct strbuf err = STRBUF_INIT;
	if (slurm_parse_nodes(text, &l, &err) < 0) {
		if (!err.len || !str_is_clean(err.buf))
			__builtin_trap();
	}
	for (size_t i = 0; i < l.nr; i++) {
		const struct slurm_node *n = &l.items[i];
		clean_or_trap(n->name);
		clean_or_trap(n->state);
		clean_or_trap(n->reason);
		clean_or_trap(n->partitions);
		clean_or_trap(n->addr);
		if (slurm_state_flags(n->state) != n->flags)
			__builtin_trap();
		(void)slurm_state_short(n->flags);
		struct slurm_policy p = { SLURM_UNKNOWN_NOTHING };
		struct slurm_decision d;
		slurm_decide(VERDICT_HEALTHY, "healthy", n, &p, &d);
		if (d.act == SLURM_ACT_RESUME && strncmp(n->reason, "vigil:", 6) != 0)
			__builtin_trap(); /* only vigil's own drain is vigil's to resume */
		slurm_decide(VERDICT_UNHEALTHY, "kernel: Xid 79", n, &p, &d);
		if (d.act == SLURM_ACT_DRAIN && (!d.reason[0] || strchr(d.reason, '\n')))
			__builtin_trap();
		slurm_decide_exclude("vigil: excluded", n, &d);
	}
	slurm_nodes_release(&l);
	strbuf_release(&err);
	free(text);
	return 0;
}
