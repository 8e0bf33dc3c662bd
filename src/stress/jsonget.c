/* jsonget.c: typed getters for the helpers' JSON lines (see jsonget.h). */
#include "jsonget.h"

#include <math.h>

double jg_num(const struct json_value *o, const char *key, double def)
{
	double d;
	return json_get_number(o, key, &d) && isfinite(d) ? d : def;
}

uint64_t jg_u64(const struct json_value *o, const char *key)
{
	double d;
	if (!json_get_number(o, key, &d) || !(d >= 0) || d > 1.8e19)
		return 0;
	return (uint64_t)d;
}

bool jg_bool(const struct json_value *o, const char *key, bool def)
{
	const struct json_value *v = json_get(o, key);
	return v && v->type == JSON_BOOL ? v->boolean : def;
}

char *jg_strdup(const struct json_value *o, const char *key)
{
	const char *s = json_get_string(o, key);
	return s ? xstrdup(s) : NULL;
}

char *jg_first_string(const struct json_value *o, const char *key)
{
	const struct json_value *a = json_get(o, key);
	if (!a || a->type != JSON_ARRAY || !a->nr || a->items[0]->type != JSON_STRING)
		return NULL;
	return xstrdup(a->items[0]->string);
}

size_t jg_int_array(const struct json_value *o, const char *key, int **out)
{
	const struct json_value *a = json_get(o, key);
	size_t n = 0;
	*out = NULL;
	if (!a || a->type != JSON_ARRAY || !a->nr)
		return 0;
	*out = xcalloc(a->nr, sizeof(int));
	for (size_t i = 0; i < a->nr; i++)
		if (a->items[i]->type == JSON_NUMBER)
			(*out)[n++] = (int)a->items[i]->number;
	return n;
}
