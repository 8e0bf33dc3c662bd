/*
 * select.h: which checks one run examines, with which deadline, and running them into one report:
 * the engine behind 'vigil check' and every agent cycle (commands only parse and print).
 *
 * Ownership: struct check_selection borrows its lists; checks_collect() report_init()s rep, and
 * the caller releases it.
 */
#ifndef VIGIL_SELECT_H
#define VIGIL_SELECT_H

#include "check.h"
#include "runner.h"
#include "../lib/strlist.h"

struct check_selection {
	const struct strlist *only; /* --only names (NULL or empty: every check) */
	bool only_given;            /* --only was given, even as '' (which selects nothing) */
	const struct strlist *skip; /* --skip names (may be NULL) */
};

/*
 * Fill items (room for check_table_nr) with the checks to run and add a skipped result to rep
 * for each one the configuration disables. Returns the number to run, or -1 with *err: a bad
 * setting, or nothing selected at all (a run that examines nothing cannot say healthy).
 */
int checks_select(const struct config *cfg, const struct check_selection *sel,
		  struct run_item *items, struct report *rep, struct strbuf *err);

/* Select, run within timeout_s, order as the table, finish: a whole run. 0, or -1 with *err
 * (rep is left released). ctx->now is set here. */
int checks_collect(struct check_ctx *ctx, const struct check_selection *sel, double timeout_s,
		   struct report *rep, struct strbuf *err);

#endif
