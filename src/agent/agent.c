/* agent.c: the agent's cycle, loop and what it serves (see agent.h). */
#include "agent.h"
#include "cache.h"
#include "../lib/fileio.h"
#include "../lib/prom.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

volatile int agent_stop_requested;
volatile int agent_reload_requested;

/* Sleep until the deadline, SIGTERM/SIGINT (stop) or SIGHUP (reload), whichever comes first,
 * with one wake-up: the signals are blocked while the flags are tested and unblocked only
 * inside ppoll(), so a signal cannot slip in between the test and the wait. (cmd/agent.c keeps
 * them blocked in the HTTP thread, so that they are delivered here.) */
static bool real_sleep(void *ctx, uint64_t ms)
{
	sigset_t block, orig, during;
	UNUSED(ctx);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &orig);
	during = orig;
	sigdelset(&during, SIGTERM);
	sigdelset(&during, SIGINT);
	sigdelset(&during, SIGHUP);
	uint64_t end = mono_ms() + ms;
	while (!agent_stop_requested && !agent_reload_requested) {
		uint64_t now = mono_ms();
		if (now >= end)
			break;
		uint64_t left = end - now;
		struct timespec ts = { (time_t)(left / 1000), (long)(left % 1000) * 1000000L };
		ppoll(NULL, 0, &ts, &during);
	}
	pthread_sigmask(SIG_SETMASK, &orig, NULL);
	return !agent_stop_requested;
}

/* A directory deleted under the running agent (a clean-up script, an admin's rm -r) is made
 * again, the immediate parent only: a wrong path higher up is not built. The error kept is the
 * system's, from the last attempt. */
static int real_write(void *ctx, const char *path, const void *data, size_t len,
		      struct strbuf *err)
{
	struct stat st;
	UNUSED(ctx);
	struct strbuf first = STRBUF_INIT;
	if (write_file(path, data, len, true, &first) == 0)
		goto ok;
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		goto fail;
	char *dir = xstrndup(path, (size_t)(slash - path));
	bool gone = stat(dir, &st) < 0 && errno == ENOENT;
	if (gone && mkdir(dir, 0755) < 0 && errno != EEXIST) {
		error_set(err, "cannot create directory '%s': %s", dir, strerror(errno));
		free(dir);
		strbuf_release(&first);
		return -1;
	}
	free(dir);
	if (!gone)
		goto fail;
	strbuf_reset(&first);
	if (write_file(path, data, len, true, &first) == 0)
		goto ok;
fail:
	error_set(err, "%s", first.buf);
	strbuf_release(&first);
	return -1;
ok:
	strbuf_release(&first);
	return 0;
}

/* The process entries (spawn, kill, wait) are left NULL: os_ops.h's real ones. */
/* The clocks, random numbers and CPU time are osops' own (NULL: the real one); sleeping and
 * writing are the agent's: woken by SIGTERM, and a deleted directory made again. */
const struct agent_ops agent_real_ops = { .sleep_ms = real_sleep, .write_file = real_write };

static void timing_defaults(struct agent_settings *s)
{
	if (s->interval_s <= 0)
		s->interval_s = 60;
	if (s->jitter_s < 0)
		s->jitter_s = 0;
	if (s->max_age_s <= 0)
		s->max_age_s = 3 * s->interval_s;
}

void agent_init(struct agent *a, const struct agent_settings *set, const struct agent_ops *ops,
		void *ops_ctx)
{
	memset(a, 0, sizeof(*a));
	a->set = *set;
	timing_defaults(&a->set);
	a->ops = ops;
	a->ops_ctx = ops_ctx;
	pthread_mutex_init(&a->lock, NULL);
	for (int i = 0; i < AGENT_FILE__COUNT; i++)
		a->write_ok[i] = true;
	a->started = os_wall(ops, ops_ctx);
}

void agent_apply(struct agent *a, const struct agent_settings *set)
{
	struct agent_settings s = *set;
	timing_defaults(&s);
	pthread_mutex_lock(&a->lock);
	a->set.interval_s = s.interval_s;
	a->set.jitter_s = s.jitter_s;
	a->set.max_age_s = s.max_age_s;
	a->set.escalate_after = s.escalate_after;
	pthread_mutex_unlock(&a->lock);
}

void agent_release(struct agent *a)
{
	history_release(&a->hist);
	free(a->history_error);
	if (a->have_latest)
		report_release(&a->latest);
	for (size_t i = 0; i < a->nr_timeouts; i++)
		free(a->timeouts[i].check);
	free(a->timeouts);
	for (int i = 0; i < AGENT_FILE__COUNT; i++)
		free(a->write_error[i]);
	pthread_mutex_destroy(&a->lock);
}

static void state_path(const struct agent *a, struct strbuf *out, const char *file)
{
	strbuf_reset(out);
	strbuf_addf(out, "%s/%s", a->set.state_dir, file);
}

void agent_load_history(struct agent *a)
{
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
	if (!a->set.state_dir)
		goto out;
	state_path(a, &p, HISTORY_FILE);
	int r = read_file_bounded(p.buf, &text, 4u << 20, &err);
	if (r == READ_MISSING)
		goto out;
	if (r != READ_OK || history_parse(&a->hist, text.buf, text.len, &err) < 0) {
		/* Keep the damaged file for a person to look at; start a new history. */
		struct strbuf bad = STRBUF_INIT;
		strbuf_addf(&bad, "%s.damaged", p.buf);
		rename(p.buf, bad.buf);
		strbuf_reset(&bad);
		strbuf_addf(&bad, "history '%s' damaged (%s): started anew", p.buf,
			    r == READ_TRUNCATED ? "too large" : err.buf);
		a->history_error = strbuf_detach(&bad, NULL);
		history_release(&a->hist);
	}
out:
	strbuf_release(&p);
	strbuf_release(&text);
	strbuf_release(&err);
}

static void count_timeout(struct agent *a, const char *check)
{
	for (size_t i = 0; i < a->nr_timeouts; i++)
		if (!strcmp(a->timeouts[i].check, check)) {
			a->timeouts[i].n++;
			return;
		}
	ALLOC_GROW(a->timeouts, a->nr_timeouts + 1, a->alloc_timeouts);
	a->timeouts[a->nr_timeouts].check = xstrdup(check);
	a->timeouts[a->nr_timeouts++].n = 1;
}

static void save(struct agent *a, enum agent_file which, const char *path, const struct strbuf *data)
{
	struct strbuf err = STRBUF_INIT;
	bool ok = os_write_file(a->ops, a->ops_ctx, path, data->buf, data->len, &err) == 0;
	pthread_mutex_lock(&a->lock);
	a->write_ok[which] = ok;
	free(a->write_error[which]);
	a->write_error[which] = NULL;
	if (!ok) {
		a->write_errors[which]++;
		a->write_error[which] = xstrdup(err.len ? err.buf : "the write failed, no reason given");
	}
	pthread_mutex_unlock(&a->lock);
	strbuf_release(&err);
}

static double cpu_now(struct agent *a)
{
	double s = os_cpu_seconds(a->ops, a->ops_ctx);
	return a->kept_cpu ? s + a->kept_cpu(a->kept_cpu_arg) : s;
}

int agent_cycle(struct agent *a)
{
	struct report rep;
	struct strbuf err = STRBUF_INIT, buf = STRBUF_INIT, p = STRBUF_INIT;
	uint64_t t0 = os_mono_ms(a->ops, a->ops_ctx);
	double cpu0 = cpu_now(a);
	int ret = 0;

	if (a->collect(a->collect_arg, &rep, &err) < 0) {
		/* Nothing collected: say so as an unknown result, never keep an old healthy one. */
		struct strbuf why = STRBUF_INIT;
		strbuf_addf(&why, "the checks could not run: %s", err.buf);
		agent_cache_stand_in(&rep, a->set.host, os_wall(a->ops, a->ops_ctx), why.buf);
		strbuf_release(&why);
		ret = -1;
	}
	history_note(&a->hist, &rep, a->set.boot_id, rep.time);
	unsigned esc = history_escalate(&a->hist, &rep, a->set.escalate_after);

	pthread_mutex_lock(&a->lock);
	bool changed = !a->have_latest || a->latest.verdict != rep.verdict ||
		       strcmp(a->latest.reason, rep.reason);
	for (size_t i = 0; i < rep.nr; i++)
		if (rep.results[i].error && starts_with(rep.results[i].error, "timed out"))
			count_timeout(a, rep.results[i].name);
	if (a->have_latest)
		report_release(&a->latest);
	a->latest = rep;
	a->have_latest = true;
	a->escalated = esc;
	a->cycles++;
	a->collect_errors += ret < 0;
	pthread_mutex_unlock(&a->lock);

	if (a->set.state_dir) {
		strbuf_reset(&buf);
		pthread_mutex_lock(&a->lock);
		a->latest.interval_s = a->set.interval_s;
		report_json(&a->latest, &buf, true);
		pthread_mutex_unlock(&a->lock);
		agent_cache_path(&p, a->set.state_dir);
		save(a, AGENT_FILE_REPORT, p.buf, &buf);
		if (a->set.boot_id) {
			strbuf_reset(&buf);
			history_serialize(&a->hist, &buf);
			state_path(a, &p, HISTORY_FILE);
			save(a, AGENT_FILE_HISTORY, p.buf, &buf);
		}
	}
	double cycle_s = (double)(os_mono_ms(a->ops, a->ops_ctx) - t0) / 1000.0;
	double cpu_s = cpu_now(a) - cpu0;
	pthread_mutex_lock(&a->lock);
	a->last_cycle_s = cycle_s;
	a->last_cycle_cpu_s = cpu_s;
	a->cpu_total_s += cpu_s;
	pthread_mutex_unlock(&a->lock);
	if (a->set.prom_path) {
		strbuf_reset(&buf);
		agent_metrics(a, &buf);
		save(a, AGENT_FILE_PROM, a->set.prom_path, &buf);
	}
	/* latest changes only on this thread, so it can be read here without the lock */
	if (a->on_cycle)
		a->on_cycle(a->on_cycle_arg, &a->latest, changed);
	strbuf_release(&err);
	strbuf_release(&buf);
	strbuf_release(&p);
	return ret;
}

double agent_next_sleep(struct agent *a)
{
	double j = a->set.jitter_s;
	double u = (double)os_random(a->ops, a->ops_ctx) / 4294967296.0; /* [0, 1) */
	double s = a->set.interval_s + (2 * u - 1) * j;
	return s < 1 ? 1 : s;
}

/* The sleep between cycles, cut into alive_every_ms pieces with a->alive called before each:
 * false when told to stop. A SIGHUP ends it early, as it ends one sleep. */
static bool sleep_alive(struct agent *a, uint64_t ms)
{
	if (!a->alive)
		return os_sleep_ms(a->ops, a->ops_ctx, ms);
	uint64_t end = os_mono_ms(a->ops, a->ops_ctx) + ms;
	for (;;) {
		a->alive(a->alive_arg);
		uint64_t now = os_mono_ms(a->ops, a->ops_ctx);
		if (now >= end || agent_reload_requested)
			return true;
		uint64_t step = end - now;
		if (a->alive_every_ms && step > a->alive_every_ms)
			step = a->alive_every_ms;
		if (!os_sleep_ms(a->ops, a->ops_ctx, step))
			return false;
	}
}

void agent_loop(struct agent *a)
{
	for (unsigned n = 0; !a->set.max_cycles || n < a->set.max_cycles; n++) {
		/* a SIGHUP ended the sleep (or came during the last cycle): the new settings
		 * are read before this cycle, which then runs at once under them */
		if (agent_reload_requested) {
			agent_reload_requested = 0;
			if (a->reload)
				a->reload(a->reload_arg);
		}
		uint64_t start = os_mono_ms(a->ops, a->ops_ctx);
		agent_cycle(a);
		if (a->set.max_cycles && n + 1 >= a->set.max_cycles)
			break;
		/* The interval runs from cycle start to cycle start; a slow cycle eats into it. */
		double s = agent_next_sleep(a);
		a->next_sleep_s = s;
		uint64_t spent = os_mono_ms(a->ops, a->ops_ctx) - start;
		uint64_t want = (uint64_t)(s * 1000);
		if (!sleep_alive(a, want > spent ? want - spent : 0))
			break;
	}
}

/* The report to serve now: the latest if fresh, else the unknown stand-in. Lock held. */
static bool current(struct agent *a, double now, struct report *out, double *age)
{
	char why[160];
	if (!a->have_latest) {
		agent_cache_stand_in(out, a->set.host ? a->set.host : "", now,
				     "the agent has not finished its first cycle");
		*age = 0;
		return false;
	}
	*age = now - a->latest.time;
	if (*age <= a->set.max_age_s)
		return true;
	snprintf(why, sizeof(why), "the agent's last result is %.0f s old (limit %.0f s)", *age,
		 a->set.max_age_s);
	agent_cache_stand_in(out, a->latest.host, now, why);
	return false;
}

static const char *file_name(int i)
{
	static const char *const names[] = { "report", "history", "prom" };
	return names[i];
}

void agent_metrics(struct agent *a, struct strbuf *out)
{
	struct report stand;
	double age;
	char num[32];
	double now = os_wall(a->ops, a->ops_ctx);
	pthread_mutex_lock(&a->lock);
	bool fresh = current(a, now, &stand, &age);
	const struct report *r = fresh ? &a->latest : &stand;
	report_prom(r, out);

	prom_family(out, "vigil_agent_up", "gauge", "1 while the vigil agent runs.");
	prom_sample(out, "vigil_agent_up", NULL, 1);
	prom_family(out, "vigil_agent_start_time_seconds", "gauge",
		    "Unix time at which the agent started.");
	prom_sample(out, "vigil_agent_start_time_seconds", NULL, (double)(int64_t)a->started);
	prom_family(out, "vigil_agent_cycles_total", "counter", "Check cycles run by the agent.");
	prom_sample(out, "vigil_agent_cycles_total", NULL, (double)a->cycles);
	prom_family(out, "vigil_agent_collect_errors_total", "counter",
		    "Cycles in which the checks could not run at all.");
	prom_sample(out, "vigil_agent_collect_errors_total", NULL, (double)a->collect_errors);
	prom_family(out, "vigil_agent_cycle_seconds", "gauge", "Wall time of the last cycle.");
	prom_sample(out, "vigil_agent_cycle_seconds", NULL, a->last_cycle_s);
	prom_family(out, "vigil_agent_cycle_cpu_seconds", "gauge",
		    "CPU time (agent and its check processes) of the last cycle.");
	prom_sample(out, "vigil_agent_cycle_cpu_seconds", NULL, a->last_cycle_cpu_s);
	prom_family(out, "vigil_agent_cpu_seconds_total", "counter",
		    "CPU time of all cycles (agent and its check processes).");
	prom_sample(out, "vigil_agent_cpu_seconds_total", NULL, a->cpu_total_s);
	prom_family(out, "vigil_agent_interval_seconds", "gauge", "Configured cycle interval.");
	prom_sample(out, "vigil_agent_interval_seconds", NULL, a->set.interval_s);
	prom_family(out, "vigil_agent_result_age_seconds", "gauge",
		    "Age of the result served; older than the limit it is served as unknown.");
	prom_sample(out, "vigil_agent_result_age_seconds", NULL, age);
	prom_family(out, "vigil_agent_result_stale", "gauge",
		    "1 when the latest result is too old (or missing) and served as unknown.");
	prom_sample(out, "vigil_agent_result_stale", NULL, !fresh);
	prom_family(out, "vigil_agent_escalated_findings", "gauge",
		    "Findings escalated to INSPECT_HARDWARE because they came back after reboots.");
	prom_sample(out, "vigil_agent_escalated_findings", NULL, a->escalated);
	prom_family(out, "vigil_agent_history_ok", "gauge",
		    "0 when the history of findings was damaged and started anew.");
	prom_sample(out, "vigil_agent_history_ok", NULL, !a->history_error);

	prom_family(out, "vigil_agent_write_errors_total", "counter",
		    "Failed writes of the agent's files (a full disk, a read-only file system).");
	for (int i = 0; i < AGENT_FILE__COUNT; i++) {
		const char *l[] = { "file", file_name(i), NULL };
		prom_sample(out, "vigil_agent_write_errors_total", l, (double)a->write_errors[i]);
	}
	prom_family(out, "vigil_agent_write_ok", "gauge",
		    "1 when the last write of the file succeeded.");
	for (int i = 0; i < AGENT_FILE__COUNT; i++) {
		const char *l[] = { "file", file_name(i), NULL };
		prom_sample(out, "vigil_agent_write_ok", l, a->write_ok[i]);
	}
	prom_family(out, "vigil_agent_write_error", "gauge",
		    "Why the last write of the file failed, as the system said it (1 while it fails).");
	for (int i = 0; i < AGENT_FILE__COUNT; i++) {
		char msg[121];
		if (!a->write_error[i])
			continue;
		strlcpy_v(msg, a->write_error[i], sizeof(msg));
		const char *l[] = { "file", file_name(i), "error", msg, NULL };
		prom_sample(out, "vigil_agent_write_error", l, 1);
	}
	prom_family(out, "vigil_agent_check_timeouts_total", "counter",
		    "Checks killed at their deadline (a hung sysfs read or NVML call).");
	for (size_t i = 0; i < a->nr_timeouts; i++) {
		const char *l[] = { "check", a->timeouts[i].check, NULL };
		prom_sample(out, "vigil_agent_check_timeouts_total", l, (double)a->timeouts[i].n);
	}
	prom_family(out, "vigil_agent_check_unknown", "gauge",
		    "Checks that could not tell in the last cycle, with why (a missing NVML "
		    "library, a timeout).");
	for (size_t i = 0; i < r->nr; i++) {
		const struct check_result *c = &r->results[i];
		if (c->status != STATUS_UNKNOWN)
			continue;
		const struct finding *w = result_worst(c);
		char msg[81];
		strlcpy_v(msg, c->error ? c->error : w ? w->message : "could not tell", sizeof(msg));
		const char *l[] = { "check", c->name, "error", msg, NULL };
		prom_sample(out, "vigil_agent_check_unknown", l, 1);
	}
	snprintf(num, sizeof(num), "%s", VIGIL_VERSION);
	prom_family(out, "vigil_agent_info", "gauge", "The agent's version.");
	const char *vl[] = { "version", num, NULL };
	prom_sample(out, "vigil_agent_info", vl, 1);
	if (a->more_metrics)
		a->more_metrics(a->more_metrics_arg, out);
	if (!fresh)
		report_release(&stand);
	pthread_mutex_unlock(&a->lock);
}

void agent_health(struct agent *a, struct strbuf *out)
{
	struct report stand;
	double age;
	double now = os_wall(a->ops, a->ops_ctx);
	pthread_mutex_lock(&a->lock);
	bool fresh = current(a, now, &stand, &age);
	const struct report *r = fresh ? &a->latest : &stand;
	struct strbuf rep = STRBUF_INIT;
	report_json(r, &rep, false);
	strbuf_rtrim(&rep);
	struct json_writer w;
	json_writer_init(&w, out, false);
	json_open_top(&w);
	json_key(&w, "host");
	json_string(&w, r->host);
	report_json_verdict(&w, r);
	json_key(&w, "age_seconds");
	json_double(&w, age);
	json_key(&w, "stale");
	json_bool(&w, !fresh);
	json_key(&w, "cycles");
	json_uint(&w, a->cycles);
	json_key(&w, "report");
	/* the report is already JSON: splice it in as the last value */
	strbuf_addstr(out, rep.buf);
	strbuf_addstr(out, "}\n");
	strbuf_release(&rep);
	if (!fresh)
		report_release(&stand);
	pthread_mutex_unlock(&a->lock);
}
