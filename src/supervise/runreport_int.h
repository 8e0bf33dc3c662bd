/*
 * runreport_int.h: what the writers of a run report share (runreport_out.c: text and JSON;
 * runreport_html.c: the page). Not for outside src/supervise.
 */
#ifndef VIGIL_RUNREPORT_INT_H
#define VIGIL_RUNREPORT_INT_H

#include "runreport.h"

/* Phrases the text writer and the page share: a time since the run began (and the UTC stamp),
 * a percentage, an attempt's hosts (at most show) and steps, an attempt's and the run's outcome. */
void rr_add_at(struct strbuf *out, const struct run_report *r, double t);
void rr_add_hosts(struct strbuf *out, const struct rr_attempt *a, size_t show);
void rr_add_percent(struct strbuf *out, double ratio);
void rr_add_steps(struct strbuf *out, const struct rr_attempt *a);
void rr_add_utc(struct strbuf *out, double t);
const char *rr_attempt_outcome(const struct run_report *r, const struct rr_attempt *a);
const char *rr_run_outcome(const struct run_report *r);

#endif
