/*
 * train.c: the train stage's figures from diagnose steps' JSON (see train.h). Only a positive,
 * finite number counts: diagnose steps writes null for what it does not know, and a 0 or a
 * string from a changed or broken output must not become a figure.
 */
#include "train.h"

#include <math.h>

static bool positive(const struct json_value *v, const char *key, double *out)
{
	double d;
	if (!v || !json_get_number(v, key, &d) || !isfinite(d) || d <= 0)
		return false;
	*out = d;
	return true;
}

void q_train_read(const struct json_value *steps, struct q_train *t)
{
	memset(t, 0, sizeof(*t));
	if (!steps)
		return;
	const char *metric = json_get_string(steps, "metric");
	t->have_st = positive(steps, "median_step_time", &t->step_time_s);
	t->have_tok = positive(steps, "median_tokens_per_s", &t->tokens_per_s);
	/* the median level is a share of expected; with MFU as the metric and no expected value
	 * given, expected is the run's best level, so the level is MFU only when the rows had it
	 * (diagnose steps' "expected" is then in MFU): the MFU is expected * median_level */
	double lvl, exp;
	if (metric && !strcmp(metric, "mfu") && positive(steps, "median_level", &lvl) &&
	    positive(steps, "expected", &exp) && lvl * exp <= 1) {
		t->mfu = lvl * exp;
		t->have_mfu = true;
	}
}

static void num_or_null(struct strbuf *out, bool have, const char *fmt, double v)
{
	if (have)
		strbuf_addf(out, fmt, v);
	else
		strbuf_addstr(out, "null");
}

void q_train_json(const struct q_train *t, const char *outcome, struct strbuf *out)
{
	strbuf_addstr(out, "{\"step_time_s\":");
	num_or_null(out, t->have_st, "%.6g", t->step_time_s);
	strbuf_addstr(out, ",\"tokens_per_s\":");
	num_or_null(out, t->have_tok, "%.6g", t->tokens_per_s);
	strbuf_addstr(out, ",\"mfu\":");
	num_or_null(out, t->have_mfu, "%.4f", t->mfu);
	strbuf_addstr(out, ",\"outcome\":");
	const char *o = outcome ? outcome : "no report from vigil run";
	json_quote(out, o, strlen(o));
	strbuf_addch(out, '}');
}

void q_train_reason(const struct q_train *t, bool excluded, const char *why_not,
		    struct strbuf *out)
{
	if (!t->have_st && why_not && *why_not) {
		strbuf_addstr(out, "no step time: vigil diagnose steps: ");
		strbuf_add_excerpt(out, why_not, 300);
		return;
	}
	if (!t->have_st) {
		strbuf_addstr(out, "no training step was seen in the stage's time");
		return;
	}
	strbuf_addf(out, "median step %.3g s", t->step_time_s);
	if (t->have_tok)
		strbuf_addf(out, ", %.*f tokens/s", t->tokens_per_s >= 100 ? 0 : 2, t->tokens_per_s);
	if (t->have_mfu)
		strbuf_addf(out, ", MFU %.1f %%", 100 * t->mfu);
	if (excluded)
		strbuf_addstr(out, "; hosts excluded");
}
