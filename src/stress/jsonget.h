/*
 * jsonget.h: small typed getters over a parsed JSON object, with defaults, for reading the CUDA
 * helpers' lines. Strings returned by the *dup getters are malloc'ed (the caller frees them).
 */
#ifndef VIGIL_STRESS_JSONGET_H
#define VIGIL_STRESS_JSONGET_H

#include "../lib/json.h"

double jg_num(const struct json_value *o, const char *key, double def);
/* A non-negative integer; 0 when absent, negative or not a number. */
uint64_t jg_u64(const struct json_value *o, const char *key);
bool jg_bool(const struct json_value *o, const char *key, bool def);
/* A copy of the string value, or NULL. */
char *jg_strdup(const struct json_value *o, const char *key);
/* A copy of the first string of an array value, or NULL (an "errors" list). */
char *jg_first_string(const struct json_value *o, const char *key);
/* Integers of an array value into a new array; returns the count (*out NULL when 0). */
size_t jg_int_array(const struct json_value *o, const char *key, int **out);

#endif
