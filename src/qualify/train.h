/*
 * train.h: the train stage's figures (docs/QUALIFY.md), read from what 'vigil diagnose steps
 * --json' said about the run's journal: the median step time, tokens per second and MFU. Pure:
 * the stage (src/cmd/qualify_stages.c) runs the commands; here their JSON becomes the card's
 * "train" object and the stage's reason. A figure the steps did not give is null, never 0.
 */
#ifndef VIGIL_QUALIFY_TRAIN_H
#define VIGIL_QUALIFY_TRAIN_H

#include "../lib/json.h"

struct q_train {
	bool have_st, have_tok, have_mfu;
	double step_time_s, tokens_per_s, mfu;
};

/* steps: diagnose steps' JSON, or NULL (it gave none): every figure unknown then. */
void q_train_read(const struct json_value *steps, struct q_train *t);
/* The card's "train" object: {"step_time_s", "tokens_per_s", "mfu", "outcome"} (outcome: vigil
 * run's, NULL when it reported none) appended to out as JSON. */
void q_train_json(const struct q_train *t, const char *outcome, struct strbuf *out);
/* The stage's reason: "median step 0.5 s, 8192 tokens/s, MFU 41.0 %" (the figures known),
 * "; hosts excluded" when some were; without a step time, why_not (what diagnose steps said,
 * when it said something: steps may have been seen and their times not told apart) or that
 * no step was seen. */
void q_train_reason(const struct q_train *t, bool excluded, const char *why_not,
		    struct strbuf *out);

#endif
