/*
 * completion.h: the options of every command path, as the shell completion scripts offer them
 * (src/cmd/completion.c), and the generator of those scripts.
 */
#ifndef VIGIL_CMD_COMPLETION_H
#define VIGIL_CMD_COMPLETION_H

#include <stddef.h>

struct strbuf;

struct comp_def {
	const char *path; /* "" for vigil itself, "check", "fabric burnin plan" */
	/* space-separated: "--name" a flag, "--name=KIND" an option with a value of KIND (check,
	 * key, file, dir, cmd, any, or choices joined by '|'), "@KIND" the operands */
	const char *opts;
};
extern const struct comp_def comp_table[];
extern const size_t comp_table_nr;

/* The words one level below path (its subcommands), space-separated, appended to out. */
void comp_children(const char *path, struct strbuf *out);
/* The completion script for shell ("bash", "zsh", "fish") appended to out: 0, or -1 for
 * another shell. */
int comp_script(const char *shell, struct strbuf *out);

int cmd_completion(int argc, char **argv);

#endif
