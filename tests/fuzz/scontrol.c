/*
 * scontrol.c: libFuzzer target for the 'scontrol -o show node' parser (src/slurm/slurm.c), whose
 * answer decides whether vigil drains or resumes a node. For any input: no crash, leak or UB; a
 * refusal says why and is clean (no control byte or bidi control); every parsed field is clean,
 * one line, and the node name, state and reason feed the drain policy without harm: a node
 * whose reason vigil did not write is never resumed.
 *
 * The same bytes go to the reader of 'scontrol show topology' (qualify --train-groups switch):
 * read, every node given is in exactly one group or left out, a group's name is a plain word
 * and there are at most Q_TRAIN_GROUPS_MAX; refused, it says why, cleanly, and gives no group.
 *
 * Seeds (tests/fuzz/corpus/scontrol, shapes from real output; see its README): one line a node
 * as 'scontrol -o show node' prints it, the multi-line form of 'scontrol show node', reasons
 * with their "[user@time]" stamps, and hostile variants (escapes, bidi controls, NULs).
 */
#include "../../src/slurm/slurm.h"
#include "../../src/qualify/train.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void clean_or_trap(const char *s)
{
	if (!s || !str_is_clean(s) || strchr(s, '\n'))
		__builtin_trap();
}

static void topology(const char *text, struct strbuf *err)
{
	static const char *const nodes[] = { "n1", "n2", "n3", "n4", "gpu001", "gpu002", "a-b.c" };
	struct q_groups g;
	struct strlist left = STRLIST_INIT;
	if (q_groups_topology(text, nodes, 7, &g, &left, err) < 0) {
		if (!err->len || !str_is_clean(err->buf) || g.nr || g.items)
			__builtin_trap();
		strlist_release(&left);
		return;
	}
	if (err->len || !g.nr || g.nr > Q_TRAIN_GROUPS_MAX)
		__builtin_trap();
	size_t seen = left.nr;
	for (size_t k = 0; k < g.nr; k++) {
		if (!g.items[k].name[0] || !str_is_clean(g.items[k].name) ||
		    strpbrk(g.items[k].name, " =$`;|&<>\"'\\/") || !g.items[k].hosts.nr)
			__builtin_trap();
		seen += g.items[k].hosts.nr;
	}
	if (seen != 7)
		__builtin_trap();
	q_groups_release(&g);
	strlist_release(&left);
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
	strbuf_reset(&err);
	topology(text, &err);
	strbuf_release(&err);
	free(text);
	return 0;
}
