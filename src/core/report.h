/*
 * report.h: one run of the checks and everything that can be written from it: the verdict, the
 * one-line reason, JSON, Prometheus text and the table for a person.
 *
 * Ownership: struct report owns its results; report_release() frees them.
 */
#ifndef VIGIL_REPORT_H
#define VIGIL_REPORT_H

#include "finding.h"
#include "../lib/json.h"

enum verdict { VERDICT_HEALTHY, VERDICT_UNHEALTHY, VERDICT_UNKNOWN };

#define REASON_MAX 80

struct report {
	char *host;
	double time; /* wall-clock seconds at the start */
	uint64_t duration_ms;
	double interval_s; /* the agent's interval when an agent ran it (0: not known) */
	struct check_result *results;
	size_t nr, alloc;
	enum verdict verdict;
	char reason[REASON_MAX + 1];
};

void report_init(struct report *r, const char *host, double time);
void report_release(struct report *r);
/* Append an empty result for a check and return it (valid until the next add). */
struct check_result *report_add(struct report *r, const char *name);
/* Move a result built apart (finished here) into r, ownership and all; local is left empty. */
void report_move_result(struct report *r, struct check_result *local);
/* Compute verdict and reason from the results. */
void report_finish(struct report *r);

const char *verdict_name(enum verdict v);
int verdict_exit_code(enum verdict v);

void result_to_json(struct json_writer *w, const struct check_result *res);
/* Fill res from a parsed check object; -1 with *err when a field is missing or wrong. */
int result_from_json(const struct json_value *v, struct check_result *res, struct strbuf *err);

void report_json(const struct report *r, struct strbuf *out, bool pretty);
/* The same with more members of the top object, written by extra(w, arg) after duration_ms
 * ('vigil stress storage' adds its "figures"). */
void report_json_extra(const struct report *r, struct strbuf *out, bool pretty,
		       void (*extra)(struct json_writer *w, void *arg), void *arg);
/* The "verdict", "exit_code" and "reason" members of an open JSON object, as report_json has. */
void report_json_verdict(struct json_writer *w, const struct report *r);
void report_prom(const struct report *r, struct strbuf *out);
/* Colour, one implementation for every table vigil prints. */
enum color_mode { COLOR_AUTO = -1, COLOR_NEVER = 0, COLOR_ALWAYS = 1 };
#define COLOR_RESET "\033[0m"
/* --color WHEN: "auto", "always" or "never" as a mode; -2 for anything else. */
int color_mode_parse(const char *s);
/* always, never, or (auto) when fd is a terminal and NO_COLOR is unset or empty */
bool color_enabled(int mode, int fd);
const char *status_color(enum status s);
const char *verdict_color(enum verdict v);

/* "verdict: healthy  (2 warnings)\n": the verdict and, once, what the reason adds to it. */
void report_verdict_line(const struct report *r, struct strbuf *out, bool color);
void report_table(const struct report *r, struct strbuf *out, bool color, bool verbose);

#endif
