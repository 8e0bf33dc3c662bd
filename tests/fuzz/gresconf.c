/*
 * gresconf.c: libFuzzer target for the slurm.conf / gres.conf parser (src/logs/gresconf.c), whose
 * answer is how many GPUs the gpu check holds a node to. For any input: no crash, leak or UB, and
 * time bounded by the input (hostile hostlists included); a refusal says why, cleanly, and names
 * a line; an answer is a count within bounds and a clean Gres value. The first line of the input
 * is the node name, the rest the file (both parsers run on it), so names and files vary together.
 *
 * Seeds (tests/fuzz/corpus/gresconf, shapes of tests/data/realworld/gres.md, our own values):
 * slurm.conf NodeName lines with hostlist ranges, DEFAULT lines, continuations and Includes;
 * gres.conf with File ranges, Count and AutoDetect; scontrol's Gres=gpu:8(S:0-1); broken ones.
 */
#include "../../src/logs/gresconf.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int r, const struct gresconf_answer *a, const struct strbuf *err)
{
	if (r < 0 && (!err->len || !str_is_clean(err->buf)))
		__builtin_trap();
	if (r == 0 && a->found == GRESCONF_NODE_FOUND && a->gpus > 4096)
		__builtin_trap();
	if (!str_is_clean(a->gres))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nl = memchr(text, '\n', size);
	size_t name_len = nl ? (size_t)(nl - text) : size;
	if (name_len > 128)
		return 0;
	char node[129];
	memcpy(node, text, name_len);
	node[name_len] = '\0';
	const char *body = nl ? nl + 1 : text + size;
	size_t len = size - (size_t)(body - text);
	struct gresconf_answer a;
	struct strbuf err = STRBUF_INIT;
	gresconf_answer_init(&a);
	check(slurmconf_node_gpus(body, len, node, &a, &err), &a, &err);
	gresconf_answer_release(&a);
	strbuf_reset(&err);
	gresconf_answer_init(&a);
	check(gresconf_node_gpus(body, len, node, &a, &err), &a, &err);
	gresconf_answer_release(&a);
	/* the bare parsers, on the first line as a value */
	uint64_t n;
	strbuf_reset(&err);
	if (gres_value_gpus(node, &n, &err) == 0 && n > 4096)
		__builtin_trap();
	strbuf_reset(&err);
	if (hostlist_count(node, &n, &err) == 0 && n > 4096)
		__builtin_trap();
	strbuf_release(&err);
	return 0;
}
