/*
 * gresconf.h: how many GPUs Slurm's own configuration says a node has, read from the text of
 * slurm.conf (its NodeName lines' Gres=) and gres.conf (Name=gpu lines), so that the gpu check
 * knows what a node is meant to have without a hand-written gpu.count, and without asking
 * slurmctld (no RPC every agent cycle).
 *
 * It lives with the parsers (logs/), not in slurm/, because the gpu check, a layer below slurm/,
 * reads it. Pure text in, numbers out: no file access here (the gpu check reads the files under --root).
 * The parsers walk the text line by line and keep nothing of it but the one node's answer, so a
 * huge or hostile file costs time bounded by its size and no memory beyond a line.
 *
 * Shapes (tests/data/realworld/gres.md): "NodeName=gpu[001-512] CPUs=.. Gres=gpu:h100:8
 * State=UNKNOWN", "NodeName=DEFAULT Gres=gpu:8" (a default for the NodeName lines after it), a
 * line continued with a trailing '\', '#' comments, "Include FILE"; Gres values "gpu:8",
 * "gpu:h100:8", "gpu:a100:2,gpu:v100:2" (summed), "gpu:8(S:0-1)" (scontrol's form), "gpu" (one),
 * counts with K/M/G suffixes; gres.conf "NodeName=n[1-4] Name=gpu Type=h100 File=/dev/nvidia[0-7]",
 * "Name=gpu Count=8", "AutoDetect=nvml".
 */
#ifndef VIGIL_LOGS_GRESCONF_H
#define VIGIL_LOGS_GRESCONF_H

#include "../lib/strbuf.h"
#include "../lib/strlist.h"

/* Longest logical line (continuations joined) the parsers take; longer is malformed. */
#define GRESCONF_LINE_MAX 65536
/* Brackets in one hostlist expression: more is refused (a bound on the matcher's work). */
#define GRESCONF_HOSTLIST_BRACKETS 8

/*
 * Does hostlist expression expr ("gpu[001-512]", "n[1-4,7],login1", "r[1-2]n[01-16]") name node?
 * 1 yes, 0 no, -1 with *err when expr does not parse (unbalanced '[', a bad range).
 */
int hostlist_match(const char *expr, const char *node, struct strbuf *err);
/* How many names (or device files) expr expands to: "/dev/nvidia[0-7]" is 8. 0, or -1 with *err. */
int hostlist_count(const char *expr, uint64_t *count, struct strbuf *err);

/*
 * The GPUs in a Gres value ("gpu:h100:8,nvme:1", "gpu:8(S:0-1)"): 0 with *gpus (0 when the value
 * names no gpu), or -1 with *err when the value does not parse.
 */
int gres_value_gpus(const char *value, uint64_t *gpus, struct strbuf *err);

enum gresconf_found {
	GRESCONF_NODE_ABSENT,  /* the node is on no NodeName line (gres.conf: no gpu line for it) */
	GRESCONF_NODE_FOUND,   /* found: gpus holds its count (0: a node without GPUs) */
	GRESCONF_AUTODETECT,   /* gres.conf leaves the count to AutoDetect (nvml, nvidia): none */
};

struct gresconf_answer {
	enum gresconf_found found;
	uint64_t gpus;
	unsigned line;         /* where it was said (1-based; the first line of a continued one) */
	char gres[512];        /* the Gres value as written (slurm.conf), cleaned; "" if none */
	struct strlist includes; /* slurm.conf "Include FILE" targets, as written (unread here) */
};

void gresconf_answer_init(struct gresconf_answer *a);
void gresconf_answer_release(struct gresconf_answer *a);

/*
 * Read slurm.conf text (len bytes, NULs allowed: they make it malformed) for node's Gres. A node
 * already found (a->found) is left as it is, so the caller may parse included files after it.
 * 0, or -1 with *err naming the line when a line that matters (a NodeName line) is malformed or
 * the text is not a configuration at all (NUL bytes, a line over GRESCONF_LINE_MAX).
 */
int slurmconf_node_gpus(const char *text, size_t len, const char *node, struct gresconf_answer *a,
			struct strbuf *err);
/* The same for gres.conf: the GPUs of the lines that name node or name no node (summed). */
int gresconf_node_gpus(const char *text, size_t len, const char *node, struct gresconf_answer *a,
		       struct strbuf *err);

#endif
