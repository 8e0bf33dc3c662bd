/*
 * steps_out.c: what 'vigil diagnose steps' says (steps.h): the table of docs/DIAGNOSE.md (each
 * pattern's name, likely cause and next action), the text report and the --json document. Input
 * text (the file name) reaches the terminal only through strbuf_add_clean().
 */
#include "steps_int.h"
#include "../lib/json.h"

#include <math.h>

/* ---- the table of docs/DIAGNOSE.md ---- */

static const struct {
	const char *name, *cause, *action;
} pattern_info[DP_NR] = {
	[DP_HEALTHY] = { "healthy", "", "nothing to do" },
	[DP_FLAT_TENTH] = { "flat-tenth",
			    "InfiniBand hardware (a bad T2/T3 switch), or GPU-NIC PCIe trouble "
			    "('x16 lanes limited' in dmesg)",
			    "run 'vigil fleet check' for PCIe link downgrades and InfiniBand errors, "
			    "then 'vigil net nccl' between hosts to find the slow link" },
	[DP_FLAT_THIRD] = { "flat-third", "GPUDirect RDMA misconfigured on one host",
			    "check GPUDirect RDMA (nvidia-peermem loaded; NCCL_DEBUG=INFO says GDRDMA) "
			    "on every host; 'vigil net nccl' across host pairs finds the one" },
	[DP_FLAT_DEGRADED] = { "flat-degraded",
			       "a degraded InfiniBand link or NIC (NCCL routing around it), or CPU "
			       "throttling",
			       "look for InfiniBand ports below their speed or with errors ('vigil "
			       "check') and CPU frequency limits; 'vigil net nccl' per host pair" },
	[DP_PERIODIC_DROPS] = { "periodic-drops", "checkpointing or evaluation at a fixed interval",
				"match the period with the checkpoint and evaluation intervals; make "
				"checkpoints asynchronous or less frequent" },
	[DP_RANDOM_DROPS] = { "random-drops",
			      "a CPU-heavy process on one host, network blips, or data loader stalls",
			      "run 'vigil diagnose stragglers' on per-rank compute times around the "
			      "drops; look for other processes and data loader waits on the hosts" },
	[DP_SLOW_DECLINE] = { "slow-decline",
			      "Python garbage collection (back to full speed after a restart)",
			      "disable automatic GC (gc.disable(), gc.freeze()) and collect on a "
			      "schedule, on all ranks at the same step" },
	[DP_STEP_DOWN] = { "step-down", "GPU clock throttling (temperature, fans, power supply)",
			   "look at GPU clocks and throttle reasons from the step it changed ('vigil "
			   "check'), then the host's cooling and power; 'vigil diagnose stragglers' "
			   "names the host" },
	[DP_NOISY] = { "noisy", "moderate InfiniBand degradation or a flapping link",
		       "look for InfiniBand link flaps and symbol errors ('vigil check') and run "
		       "'vigil net nccl'" },
};

const char *diag_pattern_name(enum diag_pattern_kind k) { return pattern_info[k].name; }
const char *diag_pattern_cause(enum diag_pattern_kind k) { return pattern_info[k].cause; }
const char *diag_pattern_action(enum diag_pattern_kind k) { return pattern_info[k].action; }

static const char *const event_names[DE_NR] = {
	[DE_WARMUP] = "warm-up",
	[DE_LAST_STEP] = "last-step",
	[DE_PAUSE] = "pause",
	[DE_ISOLATED] = "isolated-slow-steps",
};

const char *diag_event_name(enum diag_event_kind k) { return event_names[k]; }

static void steps_list(struct strbuf *o, const uint64_t *at, size_t nr, size_t count)
{
	for (size_t i = 0; i < nr; i++)
		strbuf_addf(o, "%s%llu", i ? ", " : "", (unsigned long long)at[i]);
	if (count > nr)
		strbuf_addstr(o, ", ...");
}

/* "took 12.3 s more" when the seconds are known */
static void seconds_text(struct strbuf *o, const char *pre, double secs)
{
	if (secs > 0)
		strbuf_addf(o, "%s%.3g s", pre, secs);
}

static void event_text(const struct diag_event *e, struct strbuf *o)
{
	switch (e->kind) {
	case DE_WARMUP:
		if (e->count == 1)
			strbuf_addf(o, "step %llu", (unsigned long long)e->start_step);
		else
			strbuf_addf(o, "steps %llu to %llu", (unsigned long long)e->start_step,
				    (unsigned long long)e->end_step);
		strbuf_addf(o, " %s (compilation, warm-up, data loader start): the slowest took "
			       "%.3gx a settled step",
			    e->after_restart ? "after a restart" : "at the start", e->slowest);
		seconds_text(o, ", ", e->seconds);
		strbuf_addstr(o, e->seconds > 0 ? " in all beyond the settled pace" : "");
		break;
	case DE_LAST_STEP:
		strbuf_addf(o, "step %llu, the run's last, took %.3gx a step (a final checkpoint, "
			       "evaluation or shutdown)",
			    (unsigned long long)e->start_step, e->slowest);
		break;
	case DE_PAUSE:
		strbuf_addf(o, "%.0f s between steps %llu and %llu (a restart, or a long save): the "
			       "steps after it are a new start",
			    e->seconds, (unsigned long long)e->start_step,
			    (unsigned long long)e->end_step);
		break;
	case DE_ISOLATED:
		strbuf_addf(o, "%zu slow step%s (", e->count, e->count == 1 ? "" : "s");
		steps_list(o, e->steps_at, e->steps_at_nr, e->count);
		strbuf_addf(o, "), the slowest %.3gx a step, %.2f%% of the run's time: too few and too "
			       "cheap to be a pattern (a GC pause or a short stall)",
			    e->slowest, 100 * e->cost);
		break;
	case DE_NR:
		break;
	}
}


bool diag_steps_healthy(const struct diag_steps *s)
{
	return s->pat_nr == 0;
}

/* ---- output ---- */

static void evidence_text(const struct diag_steps *s, const struct diag_pattern *p,
			  struct strbuf *o)
{
	switch (p->kind) {
	case DP_FLAT_TENTH:
	case DP_FLAT_THIRD:
	case DP_FLAT_DEGRADED:
		strbuf_addf(o, "throughput %.0f%% of expected from step %llu", 100 * p->level,
			    (unsigned long long)p->start_step);
		break;
	case DP_PERIODIC_DROPS:
		strbuf_addf(o, "periodic slow steps every %llu steps", (unsigned long long)p->period);
		if (p->period_tol)
			strbuf_addf(o, " (+-%llu)", (unsigned long long)p->period_tol);
		strbuf_addf(o, " (checkpoint or eval?): %zu steps at %.0f%% of the local level",
			    p->count, 100 * p->depth);
		seconds_text(o, ", each ", p->extra_s);
		strbuf_addf(o, "%s, from step %llu to %llu", p->extra_s > 0 ? " longer" : "",
			    (unsigned long long)p->start_step, (unsigned long long)p->end_step);
		break;
	case DP_RANDOM_DROPS:
		strbuf_addf(o, "%zu single-step drops to %.0f%% of the local level at irregular "
			       "steps",
			    p->count, 100 * p->depth);
		if (p->off_period)
			strbuf_addf(o, ", off the period of %llu", (unsigned long long)p->off_period);
		strbuf_addstr(o, " (");
		steps_list(o, p->steps_at, p->steps_at_nr, p->count);
		strbuf_addstr(o, ")");
		break;
	case DP_SLOW_DECLINE:
		strbuf_addf(o, "from %.0f%% to %.0f%% of expected between steps %llu and %llu",
			    100 * p->level_before, 100 * p->level, (unsigned long long)p->start_step,
			    (unsigned long long)p->end_step);
		break;
	case DP_STEP_DOWN:
		strbuf_addf(o, "from %.0f%% to %.0f%% of expected at step %llu",
			    100 * p->level_before, 100 * p->level, (unsigned long long)p->changed_at);
		break;
	case DP_NOISY:
		strbuf_addf(o, "steps spread over %.0f%% of the local level (10th to 90th "
			       "percentile), median %.0f%% of expected",
			    100 * p->spread, 100 * p->level);
		break;
	case DP_HEALTHY:
	case DP_NR:
		break;
	}
	(void)s;
}

void diag_steps_text(const struct diag_steps *s, const struct diag_rows *rows, const char *file,
		     struct strbuf *o)
{
	strbuf_addstr(o, "vigil diagnose steps: ");
	strbuf_add_clean(o, file);
	strbuf_addf(o, "\n  %zu steps (%llu to %llu) from %zu rows (%s)", s->used,
		    (unsigned long long)s->first_step, (unsigned long long)s->last_step, rows->nr,
		    diag_format_name(rows->format));
	if (rows->garbage)
		strbuf_addf(o, "; %zu garbage row%s skipped (first: %s)", rows->garbage,
			    rows->garbage == 1 ? "" : "s", rows->garbage_why);
	if (rows->truncated)
		strbuf_addf(o, "; only the first %u rows read", DIAG_ROWS_MAX);
	strbuf_addch(o, '\n');
	if (s->restarts) {
		strbuf_addf(o, "  %zu restart%s (the last run of each step kept):", s->restarts,
			    s->restarts == 1 ? "" : "s");
		for (size_t i = 0; i < s->restart_nr; i++)
			strbuf_addf(o, "%s step %llu back to %llu (line %u)", i ? "," : "",
				    (unsigned long long)s->restart[i].from_step,
				    (unsigned long long)s->restart[i].to_step, s->restart[i].line);
		strbuf_addch(o, '\n');
	}
	if (s->gaps)
		strbuf_addf(o, "  %zu gap%s, %zu steps missing\n", s->gaps, s->gaps == 1 ? "" : "s",
			    s->missing_steps);
	strbuf_addf(o, "  throughput: %s; expected %.4g %s (%s); median %.0f%% of expected",
		    s->metric_mfu ? (s->mfu_computed ? "MFU from tokens" : "MFU") : "steps per second",
		    s->expected, s->metric_mfu ? "MFU" : "steps/s",
		    s->expected_given ? "given" : "the run's best sustained level",
		    100 * s->median_level);
	if (s->median_step_time > 0)
		strbuf_addf(o, "; median step %.3g s", s->median_step_time);
	if (s->median_tokens_per_s > 0)
		strbuf_addf(o, "; median %.*f tokens/s", s->median_tokens_per_s >= 100 ? 0 : 2,
			    s->median_tokens_per_s);
	strbuf_addch(o, '\n');
	if (s->resolution > 0 && s->resolution_share >= 0.005)
		strbuf_addf(o, "  %s written to %.6g s (%.1f%% of a row's time): a spread within "
			       "two of those is the clock's, not noise\n",
			    s->resolution_of_time ? "times" : "step times", s->resolution,
			    100 * s->resolution_share);
	if (s->backwards)
		strbuf_addf(o, "  the times go backwards at line %u (%zu row%s): those steps have no "
			       "time\n", s->backwards_line, s->backwards, s->backwards == 1 ? "" : "s");
	if (s->event_nr) {
		strbuf_addstr(o, "  expected, not faults (left out of the patterns):\n");
		for (size_t i = 0; i < s->event_nr; i++) {
			strbuf_addf(o, "    %s: ", diag_event_name(s->event[i].kind));
			event_text(&s->event[i], o);
			strbuf_addch(o, '\n');
		}
	}
	if (!s->pat_nr) {
		strbuf_addstr(o, "\nhealthy: no pattern found\n");
		if (!s->expected_given)
			strbuf_addstr(o, "  (a run flat below its target looks healthy against itself: "
					 "give --expected-mfu or --expected-step-time)\n");
		return;
	}
	for (size_t i = 0; i < s->pat_nr; i++) {
		const struct diag_pattern *p = &s->pat[i];
		strbuf_addf(o, "\n%s from step %llu: costs %.1f%% of the throughput\n",
			    diag_pattern_name(p->kind), (unsigned long long)p->start_step,
			    100 * p->cost);
		strbuf_addstr(o, "  evidence: ");
		evidence_text(s, p, o);
		strbuf_addf(o, "\n  likely cause: %s\n  next: %s\n", diag_pattern_cause(p->kind),
			    diag_pattern_action(p->kind));
	}
}

void diag_steps_json(const struct diag_steps *s, const struct diag_rows *rows, const char *file,
		     struct strbuf *out)
{
	struct json_writer w;
	struct strbuf ev = STRBUF_INIT;
	json_writer_init(&w, out, true);
	json_open_top(&w);
	json_key(&w, "file");
	json_string(&w, file);
	json_key(&w, "verdict");
	json_string(&w, s->pat_nr ? "patterns" : "healthy");
	json_key(&w, "format");
	json_string(&w, diag_format_name(rows->format));
	json_key(&w, "rows");
	json_uint(&w, rows->nr);
	json_key(&w, "steps");
	json_uint(&w, s->used);
	json_key(&w, "first_step");
	json_uint(&w, s->first_step);
	json_key(&w, "last_step");
	json_uint(&w, s->last_step);
	json_key(&w, "garbage");
	json_open_object(&w);
	json_key(&w, "count");
	json_uint(&w, rows->garbage);
	json_key(&w, "lines");
	json_open_array(&w);
	for (size_t i = 0; i < rows->garbage_line_nr; i++)
		json_uint(&w, rows->garbage_line[i]);
	json_close_array(&w);
	json_key(&w, "first");
	if (rows->garbage)
		json_string(&w, rows->garbage_why);
	else
		json_null(&w);
	json_close_object(&w);
	json_key(&w, "truncated");
	json_bool(&w, rows->truncated);
	json_key(&w, "restarts");
	json_uint(&w, s->restarts);
	json_key(&w, "restarted");
	json_open_array(&w);
	for (size_t i = 0; i < s->restart_nr; i++) {
		json_open_object(&w);
		json_key(&w, "line");
		json_uint(&w, s->restart[i].line);
		json_key(&w, "from_step");
		json_uint(&w, s->restart[i].from_step);
		json_key(&w, "to_step");
		json_uint(&w, s->restart[i].to_step);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "gaps");
	json_uint(&w, s->gaps);
	json_key(&w, "missing_steps");
	json_uint(&w, s->missing_steps);
	json_key(&w, "metric");
	json_string(&w, s->metric_mfu ? "mfu" : "steps_per_s");
	json_key(&w, "expected");
	json_double(&w, s->expected);
	json_key(&w, "expected_source");
	json_string(&w, s->expected_given ? "given" : "best_sustained");
	json_key(&w, "median_level");
	json_fixed(&w, s->median_level, 4);
	json_key(&w, "noise");
	json_fixed(&w, s->noise, 4);
	json_key(&w, "median_step_time");
	if (s->median_step_time > 0)
		json_double(&w, s->median_step_time);
	else
		json_null(&w);
	json_key(&w, "median_tokens_per_s");
	if (s->median_tokens_per_s > 0)
		json_double(&w, s->median_tokens_per_s);
	else
		json_null(&w);
	json_key(&w, "resolution");
	if (s->resolution > 0)
		json_double(&w, s->resolution);
	else
		json_null(&w);
	json_key(&w, "backwards");
	json_uint(&w, s->backwards);
	json_key(&w, "pauses");
	json_uint(&w, s->pauses);
	json_key(&w, "warmup_steps");
	json_uint(&w, s->warmup_steps);
	json_key(&w, "expected_events");
	json_open_array(&w);
	for (size_t i = 0; i < s->event_nr; i++) {
		const struct diag_event *e = &s->event[i];
		json_open_object(&w);
		json_key(&w, "event");
		json_string(&w, diag_event_name(e->kind));
		json_key(&w, "start_step");
		json_uint(&w, e->start_step);
		json_key(&w, "end_step");
		json_uint(&w, e->end_step);
		if (e->kind == DE_WARMUP || e->kind == DE_ISOLATED) {
			json_key(&w, "steps");
			json_uint(&w, e->count);
		}
		if (e->kind == DE_WARMUP) {
			json_key(&w, "after_restart");
			json_bool(&w, e->after_restart);
		}
		if (e->kind != DE_PAUSE) {
			json_key(&w, "slowest");
			json_fixed(&w, e->slowest, 3);
			json_key(&w, "cost");
			json_fixed(&w, e->cost, 4);
		}
		json_key(&w, "seconds");
		if (e->seconds > 0)
			json_fixed(&w, e->seconds, 3);
		else
			json_null(&w);
		strbuf_reset(&ev);
		event_text(e, &ev);
		json_key(&w, "text");
		json_string(&w, ev.buf);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "patterns");
	json_open_array(&w);
	for (size_t i = 0; i < s->pat_nr || (!s->pat_nr && i == 0); i++) {
		const struct diag_pattern *p = s->pat_nr ? &s->pat[i] : NULL;
		json_open_object(&w);
		json_key(&w, "pattern");
		json_string(&w, diag_pattern_name(p ? p->kind : DP_HEALTHY));
		if (p) {
			json_key(&w, "start_step");
			json_uint(&w, p->start_step);
			json_key(&w, "end_step");
			json_uint(&w, p->end_step);
		}
		json_key(&w, "cost");
		json_fixed(&w, p ? p->cost : 0, 4);
		if (p && p->kind == DP_PERIODIC_DROPS) {
			json_key(&w, "period");
			json_uint(&w, p->period);
			json_key(&w, "period_tolerance");
			json_uint(&w, p->period_tol);
		}
		if (p && p->kind == DP_RANDOM_DROPS) {
			json_key(&w, "off_period");
			if (p->off_period)
				json_uint(&w, p->off_period);
			else
				json_null(&w);
		}
		if (p && p->kind == DP_STEP_DOWN) {
			json_key(&w, "changed_at");
			json_uint(&w, p->changed_at);
		}
		json_key(&w, "evidence");
		json_open_object(&w);
		if (p) {
			switch (p->kind) {
			case DP_PERIODIC_DROPS:
			case DP_RANDOM_DROPS:
				json_key(&w, "drops");
				json_uint(&w, p->count);
				json_key(&w, "depth");
				json_fixed(&w, p->depth, 4);
				json_key(&w, "steps");
				json_open_array(&w);
				for (size_t k = 0; k < p->steps_at_nr; k++)
					json_uint(&w, p->steps_at[k]);
				json_close_array(&w);
				json_key(&w, "extra_seconds");
				if (p->extra_s > 0)
					json_fixed(&w, p->extra_s, 3);
				else
					json_null(&w);
				break;
			case DP_SLOW_DECLINE:
			case DP_STEP_DOWN:
				json_key(&w, "level_before");
				json_fixed(&w, p->level_before, 4);
				json_key(&w, "level_after");
				json_fixed(&w, p->level, 4);
				break;
			case DP_NOISY:
				json_key(&w, "spread");
				json_fixed(&w, p->spread, 4);
				json_key(&w, "level");
				json_fixed(&w, p->level, 4);
				break;
			default:
				json_key(&w, "level");
				json_fixed(&w, p->level, 4);
				break;
			}
			strbuf_reset(&ev);
			evidence_text(s, p, &ev);
			json_key(&w, "text");
			json_string(&w, ev.buf);
		}
		json_close_object(&w);
		json_key(&w, "cause");
		json_string(&w, diag_pattern_cause(p ? p->kind : DP_HEALTHY));
		json_key(&w, "action");
		json_string(&w, diag_pattern_action(p ? p->kind : DP_HEALTHY));
		json_close_object(&w);
	}
	json_close_array(&w);
	json_key(&w, "change_points");
	json_open_array(&w);
	for (size_t i = 0; i < s->change_nr; i++) {
		json_open_object(&w);
		json_key(&w, "step");
		json_uint(&w, s->change[i].step);
		json_key(&w, "before");
		json_fixed(&w, s->change[i].before, 4);
		json_key(&w, "after");
		json_fixed(&w, s->change[i].after, 4);
		json_close_object(&w);
	}
	json_close_array(&w);
	json_close_object(&w);
	strbuf_addch(out, '\n');
	strbuf_release(&ev);
}
