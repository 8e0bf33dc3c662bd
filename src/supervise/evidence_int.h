/*
 * evidence_int.h: what the parts of the evidence judge share: evidence.c (reading the hosts'
 * outputs, grouping, suspects), evidence_stack.c (a stack text into its signature) and
 * evidence_out.c (the summary and evidence.json). Not for outside src/supervise.
 */
#ifndef VIGIL_EVIDENCE_INT_H
#define VIGIL_EVIDENCE_INT_H

#include "evidence.h"

#define STACK_MAX (64u << 10)
#define MAX_FRAMES 128
#define MAX_THREADS 512
#define FRAME_MAX 240
#define SUMMARY_MAX 1023

/* A copy of s cleaned for a terminal, at most max bytes. */
char *evidence_clean_dup(const char *s, size_t max);
/* One rank's stack text (Python or native) into its signature (the main thread's frames,
 * normalised) and its top frame; false when no thread could be read. */
bool evidence_normalise(const char *text, bool native, bool innermost_line, long pid, char **sig,
			char **top);
/* The summary paragraph and evidence.json of a built evidence. */
void evidence_summarise(struct evidence *e, const struct evidence_input *in);
void evidence_write_json(struct evidence *e, const struct evidence_input *in);

#endif
