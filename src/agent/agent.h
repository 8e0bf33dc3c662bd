/*
 * agent.h: the per-host daemon's core, free of the command line and of HTTP.
 *
 * A cycle collects one report (through a callback: 'vigil agent' runs the passive checks with the
 * same runner as 'vigil check'), applies the history of findings across reboots, writes the cached
 * report (for 'vigil check --cached'), the history and the Prometheus textfile, and publishes the
 * report for /metrics and /health. The loop runs a cycle, then sleeps the interval plus or minus
 * the jitter, until told to stop.
 *
 * Time, sleep, randomness, CPU accounting and file writes go through struct agent_ops (SQLite's
 * replaceable syscall table is the model), so tests run days of cycles in virtual time and make
 * a write fail as on a full disk.
 *
 * The published state is read by the HTTP thread: agent_metrics() and agent_health() take the
 * lock; everything else runs on the loop's thread.
 *
 * What the agent survives, and says in its metrics: a check that hangs (the runner kills it at its
 * deadline: vigil_agent_check_timeouts_total), a write that fails, a full disk for example
 * (vigil_agent_write_errors_total, vigil_agent_write_ok, and the system's own error in
 * vigil_agent_write_error; a deleted state directory is made again), a check that cannot run,
 * a missing NVML library for example (vigil_agent_check_unknown with the error).
 *
 * Ownership: struct agent owns its history, its latest report and its counters; agent_release()
 * frees them. Settings strings are borrowed and must outlive the agent.
 */
#ifndef VIGIL_AGENT_H
#define VIGIL_AGENT_H

#include "history.h"
#include "../lib/osops.h"

#include <pthread.h>

/* The agent's ops are the OS-ops table of src/lib/osops.h (its first six entries, in this
 * order: wall, mono_ms, sleep_ms, random, cpu_seconds, write_file). */
#define agent_ops os_ops

/* The real clock, nanosleep-free sleep on a stop flag, getrusage, rename-atomic writes. */
extern const struct agent_ops agent_real_ops;
/* Set by SIGTERM/SIGINT handlers (agent_real_ops' sleep returns false once it is set). */
extern volatile int agent_stop_requested;
/* Set by the SIGHUP handler: agent_real_ops' sleep ends early (returning true), and the loop
 * calls a->reload before its next cycle. */
extern volatile int agent_reload_requested;

struct agent_settings {
	double interval_s;        /* between cycle starts (default 60) */
	double jitter_s;          /* +- this much, at random (default interval/10) */
	double max_age_s;         /* older results are unknown (default 3 intervals) */
	unsigned escalate_after;  /* reboots; 0: never escalate */
	const char *state_dir;    /* NULL: keep nothing on disk */
	const char *prom_path;    /* NULL: no textfile */
	const char *host;
	const char *boot_id;      /* NULL: no history */
	unsigned max_cycles;      /* 0: until stopped */
};

enum agent_file { AGENT_FILE_REPORT, AGENT_FILE_HISTORY, AGENT_FILE_PROM, AGENT_FILE__COUNT };

struct agent_check_count {
	char *check;
	uint64_t n;
};

struct agent {
	struct agent_settings set;
	const struct agent_ops *ops;
	void *ops_ctx;
	/* Fill rep (report_init'ed by the callee) with one run of the checks. */
	int (*collect)(void *arg, struct report *rep, struct strbuf *err);
	void *collect_arg;
	/* Optional: called on the loop's thread after each cycle, with the published report. */
	void (*on_cycle)(void *arg, const struct report *rep, bool verdict_changed);
	void *on_cycle_arg;
	/* Optional: CPU seconds so far of processes the agent keeps running (the gpu worker), which
	 * getrusage() cannot count until they are reaped; added to the cycle's CPU. */
	double (*kept_cpu)(void *arg);
	void *kept_cpu_arg;
	/* Optional: called on the loop's thread, between cycles, once agent_reload_requested was
	 * set; it reads the configuration again and calls agent_apply() with what it allows. */
	void (*reload)(void *arg);
	void *reload_arg;
	/* Optional: called on the loop's thread after each cycle and every alive_every_ms (0:
	 * once) of the sleep between cycles, never during a cycle: systemd's watchdog ping
	 * (notify.h), which stops when a cycle hangs. */
	void (*alive)(void *arg);
	void *alive_arg;
	uint64_t alive_every_ms;
	/* Optional: more families for /metrics and the textfile, after the agent's own (the gpu
	 * worker's per-GPU telemetry); called with the agent's lock held, from any thread. */
	void (*more_metrics)(void *arg, struct strbuf *out);
	void *more_metrics_arg;

	/* Optional: a fresh NVML reading as snapshot text for GET /gpu-reading on the socket
	 * (http.h), called on the socket's thread only. 0, or -1 with *err. */
	int (*gpu_reading)(void *arg, bool skip_counters, struct strbuf *out, struct strbuf *err);
	void *gpu_reading_arg;

	struct history hist;
	char *history_error; /* why the history could not be loaded, if so */

	pthread_mutex_t lock; /* guards everything below */
	struct report latest;
	bool have_latest;
	double started;
	uint64_t cycles, collect_errors;
	double last_cycle_s, cpu_total_s, last_cycle_cpu_s;
	unsigned escalated;
	uint64_t write_errors[AGENT_FILE__COUNT];
	bool write_ok[AGENT_FILE__COUNT];
	char *write_error[AGENT_FILE__COUNT]; /* the last failed write's error, NULL once it works */
	struct agent_check_count *timeouts;
	size_t nr_timeouts, alloc_timeouts;
	double next_sleep_s; /* the last sleep chosen, for tests */
};

void agent_init(struct agent *a, const struct agent_settings *set, const struct agent_ops *ops,
		void *ops_ctx);
void agent_release(struct agent *a);
/* Load the history from the state directory (a damaged file is set aside and started anew). */
void agent_load_history(struct agent *a);
/* New interval, jitter, max-age and escalate-after from set (with agent_init()'s defaults);
 * the paths, the host and the boot id stay as they are. Takes the lock (HTTP reads them). */
void agent_apply(struct agent *a, const struct agent_settings *set);
/* One cycle. Returns 0, or -1 when nothing could be collected (still counted and published). */
int agent_cycle(struct agent *a);
/* Cycles until ops->sleep_ms says stop or max_cycles ran. */
void agent_loop(struct agent *a);
/* The seconds to sleep before the next cycle: interval +- jitter, at least 1 s. */
double agent_next_sleep(struct agent *a);

/* What is served, computed at the time of the call (a result grows stale between cycles). */
void agent_metrics(struct agent *a, struct strbuf *out);
void agent_health(struct agent *a, struct strbuf *out);

#endif
