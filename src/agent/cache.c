/* cache.c: read the agent's cached report back, with its age limit (see cache.h). */
#include "cache.h"
#include "../lib/fileio.h"

#define CACHE_MAX_BYTES (16u << 20)

void agent_cache_path(struct strbuf *out, const char *state_dir)
{
	strbuf_reset(out);
	strbuf_addf(out, "%s/%s", state_dir, AGENT_CACHE_FILE);
}

int report_from_json_text(const char *text, size_t len, struct report *rep, struct strbuf *err)
{
	struct json_value *v = json_parse(text, len, err);
	double ts, dur;
	if (!v) {
		report_init(rep, "", 0);
		report_release(rep);
		return -1;
	}
	const char *host = json_get_string(v, "host");
	const struct json_value *checks = json_get(v, "checks");
	report_init(rep, host ? host : "", 0);
	if (!host || !json_get_number(v, "timestamp", &ts) || !checks ||
	    checks->type != JSON_ARRAY) {
		error_set(err, "not a vigil report (host, timestamp or checks missing)");
		goto fail;
	}
	rep->time = ts;
	if (json_get_number(v, "duration_ms", &dur) && dur >= 0)
		rep->duration_ms = (uint64_t)dur;
	if (json_get_number(v, "agent_interval_s", &dur) && dur > 0 && dur < 1e7)
		rep->interval_s = dur;
	for (size_t i = 0; i < checks->nr; i++) {
		const char *name = json_get_string(checks->items[i], "name");
		if (!name) {
			error_set(err, "check %zu has no name", i);
			goto fail;
		}
		struct check_result *r = report_add(rep, name);
		if (result_from_json(checks->items[i], r, err) < 0)
			goto fail;
	}
	json_free(v);
	report_finish(rep);
	return 0;
fail:
	json_free(v);
	report_release(rep);
	return -1;
}

void agent_cache_stand_in(struct report *rep, const char *host, double now, const char *why)
{
	report_init(rep, host, now);
	struct check_result *r = report_add(rep, "agent");
	r->status = STATUS_UNKNOWN;
	r->error = xstrdup(why);
	result_add(r, STATUS_UNKNOWN, ACTION_INVESTIGATE, "cache", "", "%s", why);
	report_finish(rep);
}

int agent_cache_load(const char *state_dir, const char *host, double now, double max_age_s,
		     double default_interval_s, struct report *rep)
{
	struct strbuf path = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT, why = STRBUF_INIT;
	int ret = 1;
	if (!state_dir) {
		strbuf_addstr(&why, "no state directory, so no cached result");
		goto stand_in;
	}
	agent_cache_path(&path, state_dir);
	int r = read_file_bounded(path.buf, &text, CACHE_MAX_BYTES, &err);
	if (r == READ_MISSING) {
		strbuf_addf(&why, "no cached result (is 'vigil agent' running?) in '%s'", state_dir);
		goto stand_in;
	}
	if (r != READ_OK) {
		strbuf_addf(&why, "cannot read the cached result: %s",
			    r == READ_TRUNCATED ? "file too large" : err.buf);
		goto stand_in;
	}
	if (report_from_json_text(text.buf, text.len, rep, &err) < 0) {
		strbuf_addf(&why, "the cached result is damaged: %s", err.buf);
		goto stand_in;
	}
	double age = now - rep->time;
	/* three of the intervals of the agent that wrote it: an agent run with --interval 5 that
	 * died is stale after 15 s, not after three configured (default) intervals */
	if (max_age_s <= 0)
		max_age_s = 3 * (rep->interval_s > 0 ? rep->interval_s : default_interval_s);
	if (age > max_age_s || age < -60) {
		if (age > 0)
			strbuf_addf(&why, "cached result %.0f s old (limit %.0f s): agent not running?",
				    age, max_age_s);
		else
			strbuf_addf(&why, "cached result from the future (%.0f s ahead)", -age);
		report_release(rep);
		goto stand_in;
	}
	ret = 0;
	goto out;
stand_in:
	agent_cache_stand_in(rep, host, now, why.buf);
out:
	strbuf_release(&path);
	strbuf_release(&text);
	strbuf_release(&err);
	strbuf_release(&why);
	return ret;
}
