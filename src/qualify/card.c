/* card.c: what both readers of a scorecard share (see card.h): the check of its kind and
 * version, finite numbers, and one way of writing a number for a person. */
#include "card.h"

#include <math.h>
#include <stdio.h>

int qualify_card_check(const struct json_value *card, struct strbuf *err)
{
	double v;
	if (!card || card->type != JSON_OBJECT)
		return error_set(err, "is not a qualify scorecard: not a JSON object");
	const char *kind = json_get_string(card, "kind");
	if (!kind)
		return error_set(err, "is not a qualify scorecard: it has no \"kind\"");
	if (strcmp(kind, "qualify")) {
		struct strbuf k = STRBUF_INIT;
		strbuf_add_excerpt(&k, kind, 40);
		error_set(err, "is not a qualify scorecard: its kind is \"%s\"", k.buf);
		strbuf_release(&k);
		return -1;
	}
	if (!json_get_number(card, "schema_version", &v))
		return error_set(err, "has no \"schema_version\"");
	if (v != QUALIFY_CARD_SCHEMA)
		return error_set(err, "is a scorecard of schema_version %.6g; this vigil reads %d",
				 v, QUALIFY_CARD_SCHEMA);
	return 0;
}

bool card_num(const struct json_value *obj, const char *key, double *v)
{
	double d;
	if (!json_get_number(obj, key, &d) || !isfinite(d))
		return false;
	*v = d;
	return true;
}

/* Enough digits to tell two nodes close in a figure apart (688.1 against 685.0), no more. */
const char *card_fmt(char buf[32], double v)
{
	double a = fabs(v);
	if (!isfinite(v))
		snprintf(buf, 32, "-");
	else if (a >= 1e9)
		snprintf(buf, 32, "%.4g", v);
	else if (a >= 100 || v == floor(v))
		snprintf(buf, 32, "%.*f", v == floor(v) ? 0 : 1, v);
	else if (a >= 1)
		snprintf(buf, 32, "%.2f", v);
	else
		snprintf(buf, 32, "%.3g", v);
	return buf;
}
