/*
 * cache.h: the agent's latest report on disk, so that 'vigil check --cached' (the cheap
 * HealthCheckProgram) answers at once. The file is report_json() output, written atomically.
 *
 * A cache that is missing, unreadable, too old or from the future is never taken as healthy:
 * agent_cache_load() then gives a report whose one result, "agent", is unknown and says why.
 *
 * Ownership: the caller owns the report it passes in (report_release()).
 */
#ifndef VIGIL_AGENT_CACHE_H
#define VIGIL_AGENT_CACHE_H

#include "../core/report.h"

#define AGENT_CACHE_FILE "agent-report.json"

/* out = STATE_DIR/agent-report.json (replaces out's content). */
void agent_cache_path(struct strbuf *out, const char *state_dir);

/* Fill rep (report_init'ed by this call) from report_json() text; verdict and reason are
 * recomputed from the results. 0, or -1 with *err (rep is then released). */
int report_from_json_text(const char *text, size_t len, struct report *rep, struct strbuf *err);

/* Load STATE_DIR's cache into rep (report_init'ed by this call). Returns 0 when the cached
 * report is fresh (at most max_age_s old at now; max_age_s 0: three times the interval the
 * agent recorded in it, or default_interval_s when it recorded none), 1 when rep is the
 * unknown stand-in. */
int agent_cache_load(const char *state_dir, const char *host, double now, double max_age_s,
		     double default_interval_s, struct report *rep);

/* Turn rep into the unknown stand-in: one "agent" result, unknown, with why. */
void agent_cache_stand_in(struct report *rep, const char *host, double now, const char *why);

#endif
