/*
 * test_diagnose_steppat.c: 'vigil diagnose steps' on series shaped like real runs (issue 18).
 * A bank of seeded runs with the shapes of posted Megatron-LM, nanoGPT and torchtitan logs
 * (tests/data/realworld/steppatterns.md has the sources): a first step tens to hundreds of times
 * a settled one, checkpoints of tens of seconds every K steps, evaluations every K steps, by
 * the clock (K +- 1), two at once, restarts and pauses, log-normal jitter of 1-5 %, GC pauses
 * now and then. Healthy ones must give no pattern at all; each fault must be named, and only it.
 */
#include "../harness.h"
#include "../../src/diagnose/steps.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"

#include <math.h>

static uint64_t rng;
static double unif(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}
static double gauss1(void)
{
	double u = unif() + 1e-12, v = unif();
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

enum out_fmt { F_TIME, F_STEP_TIME, F_JSONL_STEP_TIME, F_JSONL_MFU };

/* one run: every field 0 is "not in this run" */
struct spec {
	const char *name;
	size_t n;	   /* steps */
	double step_s;	   /* a settled step, seconds */
	double jitter;	   /* log-normal sigma of every step */
	double first;	   /* warm-up: the first step is this many steps, the next ones decay */
	uint64_t ck_every; /* checkpoint every K steps ... */
	double ck_s;	   /* ... taking this many seconds */
	uint64_t ck_phase;
	bool ck_clock;	   /* by the clock: each interval K +- 1 */
	uint64_t ev_every; /* evaluation every K steps */
	double ev_s;
	double gc_rate, gc_mult;   /* GC pauses: per step, step multiplier up to this */
	double rnd_rate, rnd_mult; /* faults: random stalls */
	double down_at, down_to;   /* step down at this share of the run to this level */
	double noisy;		   /* throughput uniform in [1 - noisy, 1] */
	double decline;		   /* level falls linearly by this over the run */
	size_t crash_at, back_to;  /* a restart: dies after crash_at, resumes at back_to */
	size_t pause_at;	   /* a pause of pause_s before this step (a requeue) */
	double pause_s;
	double last;   /* the last step takes this many steps */
	size_t odd_at; /* one stall off the period, odd_mult steps long */
	double odd_mult;
	size_t log_every; /* a row every k steps, its step_time their mean (Megatron's log_interval) */
	enum out_fmt fmt;
};

/* the time step i of a spec takes; *warm: how many steps into an execution */
static double step_time(const struct spec *sp, size_t i, size_t into)
{
	double f = 1;
	if (sp->down_at > 0 && (double)i >= sp->down_at * (double)sp->n)
		f /= sp->down_to;
	if (sp->noisy > 0)
		f /= 1 - sp->noisy * unif();
	if (sp->decline > 0)
		f /= 1 - sp->decline * (double)i / (double)sp->n;
	double t = sp->step_s * f * exp(sp->jitter * gauss1());
	/* warm-up: nanoGPT's compile shape, the first step ~first, the second ~sqrt(first),
	 * then 1.5x, 1.2x */
	if (sp->first > 0) {
		static const double tail[] = { 1.5, 1.2 };
		if (into == 0)
			t *= sp->first;
		else if (into == 1)
			t *= sqrt(sp->first);
		else if (into - 2 < ARRAY_SIZE(tail))
			t *= tail[into - 2];
	}
	return t;
}

/* the run's last step had a checkpoint or evaluation (a final one): named as the last step */
static bool last_slow;
/* random stalls the run had, outside its first steps and its last */
static size_t stalls;

/* the CSV or JSON lines of a spec */
static void gen(struct spec *sp, uint64_t seed, struct strbuf *out)
{
	rng = seed * 0x9E3779B97F4A7C15ull + 7;
	double t = 1.75e9;
	uint64_t next_ck = sp->ck_every ? sp->ck_every + sp->ck_phase : 0;
	if (sp->fmt == F_TIME)
		strbuf_addstr(out, "step,time,loss\n");
	else if (sp->fmt == F_STEP_TIME)
		strbuf_addstr(out, "step,step_time,loss\n");
	size_t into = 0;
	last_slow = false;
	stalls = 0;
	for (size_t i = 1; i <= sp->n; i++) {
		double d = step_time(sp, i, into++);
		if (next_ck && i == next_ck) {
			last_slow = i == sp->n;
			d += sp->ck_s * (0.9 + 0.2 * unif());
			next_ck += sp->ck_every;
			if (sp->ck_clock) /* by the clock: the next one a step early or late */
				next_ck += (uint64_t)(unif() * 3) - 1;
		}
		if (sp->ev_every && i % sp->ev_every == 0) {
			last_slow |= i == sp->n && sp->ev_s > 5 * sp->step_s;
			d += sp->ev_s * (0.9 + 0.2 * unif());
		}
		if (sp->gc_rate > 0 && unif() < sp->gc_rate)
			d *= 1.3 + (sp->gc_mult - 1.3) * unif();
		if (sp->rnd_rate > 0 && unif() < sp->rnd_rate) {
			d *= sp->rnd_mult;
			last_slow |= i == sp->n;
			stalls += i > 5 && i < sp->n;
		}
		if (sp->odd_at && i == sp->odd_at)
			d *= sp->odd_mult;
		if (i == sp->n && sp->last > 0)
			d *= sp->last;
		if (sp->pause_at && i == sp->pause_at) {
			t += sp->pause_s;
			into = 0;
			d = step_time(sp, i, into++);
		}
		t += d;
		if (sp->log_every > 1) { /* Megatron: the mean over the interval, one row */
			static double acc;
			acc += d;
			if (i % sp->log_every)
				continue;
			d = acc / (double)sp->log_every;
			acc = 0;
		}
		if (sp->fmt == F_TIME)
			strbuf_addf(out, "%zu,%.4f,2.4\n", i, t);
		else if (sp->fmt == F_STEP_TIME)
			strbuf_addf(out, "%zu,%.5f,2.4\n", i, d);
		else if (sp->fmt == F_JSONL_STEP_TIME)
			strbuf_addf(out, "{\"step\": %zu, \"step_time\": %.5f, \"loss\": 2.4}\n", i,
				    d);
		else /* torchtitan prints MFU: 42 % at a settled step */
			strbuf_addf(out, "{\"step\": %zu, \"mfu\": %.4f, \"loss\": 2.4}\n", i,
				    0.42 * sp->step_s / d);
		if (sp->crash_at && i == sp->crash_at) { /* resumed from a checkpoint */
			i = sp->back_to - 1;
			t += 240;
			into = 0;
			if (next_ck)
				next_ck = (sp->back_to / sp->ck_every + 1) * sp->ck_every +
					  sp->ck_phase;
			sp->crash_at = 0; /* once */
		}
	}
}

static struct strbuf fails = STRBUF_INIT;
static size_t fails_nr;
/* the bank checks every case before it fails, so that one run names every miss */
#define BANK_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fails_nr++;                                                                \
			strbuf_addf(&fails, __VA_ARGS__);                                          \
			strbuf_addch(&fails, '\n');                                                \
		}                                                                                  \
	} while (0)

static int analyse(const struct strbuf *text, struct diag_steps *s)
{
	struct diag_rows r;
	struct strbuf err = STRBUF_INIT;
	const struct diag_steps_opts o = { 0 };
	diag_rows_init(&r);
	diag_rows_feed(&r, text->buf, text->len);
	diag_rows_finish(&r);
	int ret = diag_steps_analyse(&r, &o, s, &err);
	if (ret)
		strbuf_addf(&fails, "(%s) ", err.buf);
	diag_rows_release(&r);
	strbuf_release(&err);
	return ret;
}

static struct diag_steps ds;

/* shapes from real logs (steppatterns.md): Megatron 5.2 s steps, iteration 1 ~12x; nanoGPT
 * 22 ms steps, iter 0 ~360x with torch.compile; torchtitan 1.17 s steps */
#define MEGATRON .n = 2000, .step_s = 5.2, .jitter = 0.01, .first = 12
#define NANOGPT	 .n = 3000, .step_s = 0.022, .jitter = 0.02, .first = 360
#define TITAN	 .n = 1500, .step_s = 1.17, .jitter = 0.015, .first = 4

struct want {
	struct spec sp;
	const char *patterns; /* the pattern names found, in cost order, space separated */
	const char *events;   /* the event kinds, in step order */
	uint64_t period[2];   /* the periods of the periodic patterns, in any order */
};

static const struct want bank[] = {
	/* healthy: no pattern at all */
	{ { "megatron steady", MEGATRON, .fmt = F_STEP_TIME }, "", "warm-up", { 0 } },
	{ { "nanogpt compile", NANOGPT, .fmt = F_STEP_TIME }, "", "warm-up", { 0 } },
	{ { "torchtitan, periodic gc 0.12 s", TITAN, .ev_every = 50, .ev_s = 0.12,
	    .fmt = F_JSONL_STEP_TIME },
	  "",
	  "warm-up",
	  { 0 } },
	{ { "5% log-normal jitter, gc pauses", .n = 3000, .step_s = 0.8, .jitter = 0.05, .first = 6,
	    .gc_rate = 0.002, .gc_mult = 2.5, .fmt = F_TIME },
	  "",
	  "warm-up*",
	  { 0 } },
	{ { "3% jitter, ms stamps", .n = 2500, .step_s = 0.35, .jitter = 0.03, .first = 20,
	    .fmt = F_TIME },
	  "",
	  "warm-up",
	  { 0 } },
	{ { "60 steps, first slow", .n = 60, .step_s = 1.0, .jitter = 0.01, .first = 40,
	    .fmt = F_STEP_TIME },
	  "",
	  "warm-up",
	  { 0 } },
	{ { "35 steps, short", .n = 35, .step_s = 2.0, .jitter = 0.02, .first = 8, .fmt = F_TIME },
	  "",
	  "warm-up",
	  { 0 } },
	{ { "restart, warm-up again", MEGATRON, .crash_at = 1300, .back_to = 1201, .fmt = F_TIME },
	  "",
	  "warm-up warm-up",
	  { 0 } },
	{ { "requeued at the next step", TITAN, .pause_at = 900, .pause_s = 1800, .fmt = F_TIME },
	  "",
	  "warm-up pause warm-up",
	  { 0 } },
	{ { "final checkpoint", TITAN, .last = 25, .fmt = F_STEP_TIME },
	  "",
	  "warm-up last-step",
	  { 0 } },
	/* faults, each named, and only it */
	{ { "checkpoints and a slow first step", MEGATRON, .ck_every = 200, .ck_s = 60,
	    .fmt = F_STEP_TIME },
	  "periodic-drops",
	  "warm-up",
	  { 200 } },
	{ { "eval by the clock, K+-1", TITAN, .ck_every = 100, .ck_s = 9, .ck_clock = true,
	    .fmt = F_TIME },
	  "periodic-drops",
	  "warm-up",
	  { 100 } },
	{ { "eval every 100, checkpoint every 500", MEGATRON, .ev_every = 100, .ev_s = 16,
	    .ck_every = 500, .ck_s = 90, .fmt = F_STEP_TIME },
	  "periodic-drops periodic-drops",
	  "warm-up",
	  { 500, 100 } },
	{ { "eval every 100, checkpoint every 250 off its phase", NANOGPT, .ev_every = 100,
	    .ev_s = 0.2, .ck_every = 250, .ck_phase = 30, .ck_s = 0.6, .fmt = F_TIME },
	  "periodic-drops periodic-drops",
	  "warm-up",
	  { 250, 100 } },
	{ { "step down under checkpoints", MEGATRON, .down_at = 0.6, .down_to = 0.7,
	    .ck_every = 250, .ck_s = 50, .fmt = F_STEP_TIME },
	  "step-down periodic-drops",
	  "warm-up",
	  { 250 } },
	{ { "checkpoints and one stall off the period", TITAN, .ck_every = 100, .ck_s = 12,
	    .odd_at = 777, .odd_mult = 40, .fmt = F_STEP_TIME },
	  "periodic-drops random-drops",
	  "warm-up",
	  { 100 } },
	{ { "random 10x stalls", TITAN, .rnd_rate = 0.004, .rnd_mult = 10, .fmt = F_TIME },
	  "random-drops",
	  "warm-up",
	  { 0 } },
	{ { "noisy link", TITAN, .noisy = 0.2, .fmt = F_STEP_TIME }, "noisy", "warm-up*", { 0 } },
	{ { "step down in a short run", .n = 80, .step_s = 1.0, .jitter = 0.01, .first = 30,
	    .down_at = 0.5, .down_to = 0.7, .fmt = F_STEP_TIME },
	  "step-down",
	  "warm-up",
	  { 0 } },
	{ { "gc decline", MEGATRON, .decline = 0.35, .fmt = F_TIME },
	  "slow-decline",
	  "warm-up",
	  { 0 } },
	{ { "mfu rows, slow first steps", TITAN, .fmt = F_JSONL_MFU }, "", "warm-up", { 0 } },
	{ { "mfu rows, checkpoints", TITAN, .ck_every = 300, .ck_s = 30, .fmt = F_JSONL_MFU },
	  "periodic-drops",
	  "warm-up",
	  { 300 } },
	{ { "megatron log_interval 10, checkpoints every 500", .n = 20000, .step_s = 5.2,
	    .jitter = 0.01, .first = 12, .log_every = 10, .ck_every = 500, .ck_s = 90,
	    .fmt = F_STEP_TIME },
	  "periodic-drops",
	  "warm-up",
	  { 500 } },
};

static void names(const struct diag_steps *s, struct strbuf *pat, struct strbuf *ev)
{
	for (size_t i = 0; i < s->pat_nr; i++)
		strbuf_addf(pat, "%s%s", i ? " " : "", diag_pattern_name(s->pat[i].kind));
	for (size_t i = 0; i < s->event_nr; i++)
		strbuf_addf(ev, "%s%s", i ? " " : "", diag_event_name(s->event[i].kind));
}

/* "warm-up*": warm-up, then any isolated slow steps (a GC pause) */
static bool events_match(const char *want, const char *got)
{
	size_t n = strlen(want);
	if (n && want[n - 1] == '*')
		return !strncmp(got, want, n - 1) &&
		       (!got[n - 1] || !strcmp(got + n - 1, " isolated-slow-steps"));
	return !strcmp(want, got);
}

TEST_TIMEOUT(steppat_bank_healthy_runs_are_healthy_and_faults_named, 240)
{
	/* VIGIL_STEPPAT_SEEDS=N runs more seeds (a longer look for rare misses) */
	const char *ns = getenv("VIGIL_STEPPAT_SEEDS");
	uint64_t seeds = ns && atoi(ns) > 0 ? (uint64_t)atoi(ns) : 6;
	for (size_t c = 0; c < ARRAY_SIZE(bank); c++) {
		for (uint64_t seed = 1; seed <= seeds; seed++) {
			struct spec sp = bank[c].sp;
			struct strbuf text = STRBUF_INIT, pat = STRBUF_INIT, ev = STRBUF_INIT;
			gen(&sp, seed * 31 + c, &text);
			BANK_CHECK(analyse(&text, &ds) == 0, "%s seed %llu: cannot tell", sp.name,
				   (unsigned long long)seed);
			names(&ds, &pat, &ev);
			/* a random run without a stall is a healthy run */
			const char *want_pat = sp.rnd_rate > 0 && !stalls ? "" : bank[c].patterns;
			BANK_CHECK(!strcmp(pat.buf, want_pat),
				   "%s seed %llu: patterns '%s', want '%s'", sp.name,
				   (unsigned long long)seed, pat.buf, want_pat);
			struct strbuf want_ev = STRBUF_INIT;
			strbuf_addstr(&want_ev, bank[c].events);
			if (last_slow)
				strbuf_addstr(&want_ev, " last-step");
			BANK_CHECK(events_match(want_ev.buf, ev.buf),
				   "%s seed %llu: events '%s', want '%s'", sp.name,
				   (unsigned long long)seed, ev.buf, want_ev.buf);
			strbuf_release(&want_ev);
			/* the periods, in any order */
			uint64_t got[2] = { 0, 0 },
				 want[2] = { bank[c].period[0], bank[c].period[1] };
			for (size_t i = 0, k = 0; i < ds.pat_nr && k < 2; i++)
				if (ds.pat[i].kind == DP_PERIODIC_DROPS)
					got[k++] = ds.pat[i].period;
			if (got[0] > got[1] && got[1]) {
				uint64_t t = got[0];
				got[0] = got[1];
				got[1] = t;
			}
			if (want[0] > want[1] && want[1]) {
				uint64_t t = want[0];
				want[0] = want[1];
				want[1] = t;
			}
			for (int k = 0; k < 2; k++)
				BANK_CHECK(got[k] + 1 >= want[k] && got[k] <= want[k] + 1,
					   "%s seed %llu: period %llu, want %llu", sp.name,
					   (unsigned long long)seed, (unsigned long long)got[k],
					   (unsigned long long)want[k]);
			strbuf_release(&text);
			strbuf_release(&pat);
			strbuf_release(&ev);
		}
	}
	CHECK_MSG(!fails_nr, "%zu misses:\n%s", fails_nr, fails.buf);
}

/* ---- what a user sees: the binary's text, JSON and exit code ---- */

/* run 'vigil diagnose steps' on text (written to NAME) with --json when json */
static void run_steps(struct child *c, const char *name, const struct strbuf *text, bool json)
{
	static struct strbuf path = STRBUF_INIT;
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/%s", test_tmpdir(), name);
	test_write_bytes(test_tmpdir(), name, text->buf, text->len);
	const char *a[] = { "diagnose", "steps", path.buf, json ? "--json" : NULL, NULL };
	test_run_vigil(c, a, NULL);
}

/* the pattern names of a --json document, space separated */
static void json_patterns(const struct json_value *v, struct strbuf *out)
{
	const struct json_value *p = json_path(v, "patterns");
	for (size_t i = 0; p && i < p->nr; i++)
		strbuf_addf(out, "%s%s", i ? " " : "", json_get_string(p->items[i], "pattern"));
}

static void json_events(const struct json_value *v, struct strbuf *out)
{
	const struct json_value *p = json_path(v, "expected_events");
	for (size_t i = 0; p && i < p->nr; i++)
		strbuf_addf(out, "%s%s", i ? " " : "", json_get_string(p->items[i], "event"));
}

/* A 60-step run whose first step is slow (compilation) is healthy: the first step is warm-up,
 * named as such, never a drop. It was "random-drops", exit 1. */
TEST(steppat_cli_slow_first_step_is_warm_up_not_a_drop)
{
	struct spec sp = { "60 steps",	   .n = 60,	.step_s = 1.0,
			   .jitter = 0.01, .first = 40, .fmt = F_STEP_TIME };
	struct strbuf text = STRBUF_INIT;
	struct child c;
	gen(&sp, 1, &text);
	run_steps(&c, "sixty.csv", &text, false);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.out.buf);
	CHECK_CONTAINS(c.out.buf, "healthy: no pattern found");
	CHECK_CONTAINS(c.out.buf, "warm-up: steps 1 to ");
	CHECK_CONTAINS(c.out.buf, " at the start (compilation, warm-up, data loader start)");
	CHECK_NOT_CONTAINS(c.out.buf, "random-drops");
	child_release(&c);
	run_steps(&c, "sixty.csv", &text, true);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	double d;
	CHECK_STR(json_get_string(v, "verdict"), "healthy");
	CHECK_STR(json_path(v, "patterns.0.pattern")->string, "healthy");
	CHECK_STR(json_path(v, "expected_events.0.event")->string, "warm-up");
	CHECK(json_get_number(json_path(v, "expected_events.0"), "start_step", &d) && d == 1);
	CHECK(json_get_number(json_path(v, "expected_events.0"), "slowest", &d) && d > 30 &&
	      d < 50);
	CHECK(json_path(v, "expected_events.0.after_restart")->type == JSON_BOOL &&
	      !json_path(v, "expected_events.0.after_restart")->boolean);
	CHECK(json_get_number(v, "warmup_steps", &d) && d >= 2 && d <= 5);
	json_free(v);
	child_release(&c);
	strbuf_release(&text);
}

/* Checkpoints every 200 steps of a run whose first step is slow: one periodic pattern, named
 * "periodic slow steps every 200 steps (checkpoint or eval?)", no random drop. It was
 * periodic-drops + random-drops (step 1 the odd one out). */
TEST(steppat_cli_checkpoints_and_a_slow_first_step_are_periodic_only)
{
	struct spec sp = { "ckpt", MEGATRON, .ck_every = 200, .ck_s = 60, .fmt = F_STEP_TIME };
	struct strbuf text = STRBUF_INIT, pats = STRBUF_INIT;
	struct child c;
	gen(&sp, 2, &text);
	run_steps(&c, "ckpt.csv", &text, false);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "periodic-drops from step 200: costs ");
	CHECK_CONTAINS(c.out.buf, "periodic slow steps every 200 steps (checkpoint or eval?)");
	CHECK_CONTAINS(c.out.buf, "warm-up: steps 1 to ");
	CHECK_NOT_CONTAINS(c.out.buf, "random-drops");
	child_release(&c);
	run_steps(&c, "ckpt.csv", &text, true);
	struct json_value *v = test_parse_json(&c);
	double d;
	json_patterns(v, &pats);
	CHECK_STR(pats.buf, "periodic-drops");
	CHECK(json_get_number(json_path(v, "patterns.0"), "period", &d) && d == 200);
	CHECK(json_get_number(json_path(v, "patterns.0"), "period_tolerance", &d) && d == 0);
	CHECK(json_get_number(json_path(v, "patterns.0.evidence"), "extra_seconds", &d) && d > 50 &&
	      d < 70);
	json_free(v);
	child_release(&c);
	strbuf_release(&text);
	strbuf_release(&pats);
}

/* A step down with periodic checkpoints on top, after a slow start: both, and nothing else. */
TEST(steppat_cli_step_down_under_checkpoints_reports_both)
{
	struct spec sp = { "down",	    MEGATRON,	.down_at = 0.6,	   .down_to = 0.7,
			   .ck_every = 250, .ck_s = 50, .fmt = F_STEP_TIME };
	struct strbuf text = STRBUF_INIT, pats = STRBUF_INIT;
	struct child c;
	gen(&sp, 3, &text);
	run_steps(&c, "down.csv", &text, true);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	double d;
	json_patterns(v, &pats);
	CHECK_STR(pats.buf, "step-down periodic-drops");
	CHECK(json_get_number(json_path(v, "patterns.0"), "changed_at", &d) && d >= 1190 &&
	      d <= 1210);
	CHECK(json_get_number(json_path(v, "patterns.1"), "period", &d) && d == 250);
	json_free(v);
	child_release(&c);
	strbuf_release(&text);
	strbuf_release(&pats);
}

/* Evaluation every 100 steps by the clock (100 +- 1) and a checkpoint every 500 on top of it:
 * two periodic series, each with its period; a jittered one says its tolerance. */
TEST(steppat_cli_two_periodic_series_and_a_jittered_period)
{
	struct spec two = { "two",	     MEGATRON,	 .ev_every = 100,   .ev_s = 16,
			    .ck_every = 500, .ck_s = 90, .fmt = F_STEP_TIME };
	struct strbuf text = STRBUF_INIT, pats = STRBUF_INIT;
	struct child c;
	gen(&two, 4, &text);
	run_steps(&c, "two.csv", &text, true);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	double p0, p1;
	json_patterns(v, &pats);
	CHECK_STR(pats.buf, "periodic-drops periodic-drops");
	CHECK(json_get_number(json_path(v, "patterns.0"), "period", &p0));
	CHECK(json_get_number(json_path(v, "patterns.1"), "period", &p1));
	CHECK_MSG((p0 == 100 && p1 == 500) || (p0 == 500 && p1 == 100), "periods %g and %g", p0,
		  p1);
	json_free(v);
	child_release(&c);

	struct spec clock = { "clock",		TITAN,	      .ck_every = 100, .ck_s = 9,
			      .ck_clock = true, .fmt = F_TIME };
	strbuf_reset(&text);
	strbuf_reset(&pats);
	gen(&clock, 5, &text);
	run_steps(&c, "clock.csv", &text, true);
	CHECK_INT(c.exit_code, 1);
	v = test_parse_json(&c);
	json_patterns(v, &pats);
	CHECK_STR(pats.buf, "periodic-drops");
	CHECK(json_get_number(json_path(v, "patterns.0"), "period", &p0) && p0 >= 99 && p0 <= 101);
	CHECK(json_get_number(json_path(v, "patterns.0"), "period_tolerance", &p1) && p1 >= 1 &&
	      p1 <= 2);
	CHECK_CONTAINS(json_path(v, "patterns.0.evidence.text")->string, "steps (+-");
	json_free(v);
	child_release(&c);
	strbuf_release(&text);
	strbuf_release(&pats);
}

/* A run resumed from a checkpoint (the steps go back) and later requeued at the next step (a
 * 30 min pause): warm-up again after each, the pause no step's time; healthy. The pause was a
 * random drop. */
TEST(steppat_cli_restart_and_pause_are_warm_up_again)
{
	struct spec sp = { "resumed",	     TITAN,	      .crash_at = 700, .back_to = 601,
			   .pause_at = 1100, .pause_s = 1800, .fmt = F_TIME };
	struct strbuf text = STRBUF_INIT, evs = STRBUF_INIT;
	struct child c;
	gen(&sp, 6, &text);
	run_steps(&c, "resumed.csv", &text, true);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.out.buf);
	struct json_value *v = test_parse_json(&c);
	double d;
	json_events(v, &evs);
	CHECK_STR(evs.buf, "warm-up warm-up pause warm-up");
	CHECK(json_get_number(v, "restarts", &d) && d == 1);
	CHECK(json_get_number(v, "pauses", &d) && d == 1);
	CHECK(json_get_number(json_path(v, "expected_events.2"), "seconds", &d) && d > 1800 &&
	      d < 1830);
	CHECK(json_path(v, "expected_events.3.after_restart")->boolean);
	json_free(v);
	child_release(&c);
	run_steps(&c, "resumed.csv", &text, false);
	CHECK_CONTAINS(c.out.buf, "pause: 18");
	CHECK_CONTAINS(c.out.buf, " after a restart (compilation, warm-up");
	CHECK_CONTAINS(c.out.buf, "healthy: no pattern found");
	child_release(&c);
	strbuf_release(&text);
	strbuf_release(&evs);
}

/* Steady runs with realistic noise: log-normal jitter of 5 %, GC pauses now and then, a final
 * checkpoint: healthy, exit 0. 5 % jitter was "noisy". */
TEST(steppat_cli_realistic_noise_and_gc_pauses_are_healthy)
{
	struct spec sp = { "noise",	   .n = 3000,  .step_s = 0.8,
			   .jitter = 0.05, .first = 6, .gc_rate = 0.002,
			   .gc_mult = 2.5, .last = 20, .fmt = F_TIME };
	struct strbuf text = STRBUF_INIT;
	struct child c;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		strbuf_reset(&text);
		gen(&sp, seed, &text);
		run_steps(&c, "noise.csv", &text, false);
		CHECK_MSG(c.exit_code == 0, "seed %llu: exit %d: %s", (unsigned long long)seed,
			  c.exit_code, c.out.buf);
		CHECK_CONTAINS(c.out.buf, "healthy: no pattern found");
		CHECK_CONTAINS(c.out.buf, "last-step: step 3000, the run's last");
		child_release(&c);
	}
	strbuf_release(&text);
}

/* The fixtures shaped like real runs (tests/data/steps-patterns/make.py) */
TEST(steppat_cli_fixtures_shaped_like_real_runs)
{
	static const struct {
		const char *file;
		int code;
		const char *patterns, *events, *text;
	} fx[] = {
		{ "megatron-ckpt200.csv", 1, "periodic-drops", "warm-up last-step",
		  "periodic slow steps every 200 steps (checkpoint or eval?)" },
		{ "nanogpt-compile.jsonl", 0, "healthy", "warm-up", "warm-up: steps 0 to 2" },
		{ "torchtitan-jitter-gc.csv", 0, "healthy", "warm-up isolated-slow-steps",
		  "healthy: no pattern found" },
		{ "trainer-eval-ckpt-restarts.csv", 1, "periodic-drops periodic-drops",
		  "warm-up warm-up pause warm-up last-step", "step 1130 back to 1001" },
	};
	struct strbuf path = STRBUF_INIT, pats = STRBUF_INIT, evs = STRBUF_INIT;
	struct child c;
	for (size_t i = 0; i < ARRAY_SIZE(fx); i++) {
		strbuf_reset(&path);
		strbuf_addf(&path, "%s/tests/data/steps-patterns/%s", test_srcdir(), fx[i].file);
		const char *t[] = { "diagnose", "steps", path.buf, NULL };
		test_run_vigil(&c, t, NULL);
		CHECK_MSG(c.exit_code == fx[i].code, "%s: exit %d", fx[i].file, c.exit_code);
		CHECK_CONTAINS(c.out.buf, fx[i].text);
		child_release(&c);
		const char *j[] = { "diagnose", "steps", path.buf, "--json", NULL };
		test_run_vigil(&c, j, NULL);
		struct json_value *v = test_parse_json(&c);
		strbuf_reset(&pats);
		strbuf_reset(&evs);
		json_patterns(v, &pats);
		json_events(v, &evs);
		CHECK_MSG(!strcmp(pats.buf, fx[i].patterns), "%s: patterns '%s'", fx[i].file,
			  pats.buf);
		CHECK_MSG(!strcmp(evs.buf, fx[i].events), "%s: events '%s'", fx[i].file, evs.buf);
		json_free(v);
		child_release(&c);
	}
	strbuf_release(&path);
	strbuf_release(&pats);
	strbuf_release(&evs);
}

/* The page shades warm-up and pauses apart from the patterns and lists them as expected. */
TEST(steppat_cli_page_shows_warm_up_and_pauses_as_expected)
{
	struct strbuf path = STRBUF_INIT, page = STRBUF_INIT, html = STRBUF_INIT, err = STRBUF_INIT;
	struct child c;
	strbuf_addf(&path, "%s/tests/data/steps-patterns/trainer-eval-ckpt-restarts.csv",
		    test_srcdir());
	strbuf_addf(&page, "%s/steps.html", test_tmpdir());
	const char *a[] = { "diagnose", "steps", path.buf, "--html", page.buf, NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_INT(c.exit_code, 1);
	child_release(&c);
	CHECK_INT(read_file_bounded(page.buf, &html, 1 << 22, &err), 0);
	CHECK_CONTAINS(html.buf, "<rect class=\"expected-event\" data-event=\"warm-up\"");
	CHECK_CONTAINS(html.buf, "<rect class=\"expected-event\" data-event=\"pause\"");
	CHECK_CONTAINS(html.buf, "<table id=\"expected\">");
	CHECK_CONTAINS(html.buf,
		       "<tr><td class=\"event\">pause</td><td>1300</td><td>1301</td></tr>");
	CHECK_CONTAINS(html.buf, "<td class=\"name\">periodic-drops</td>");
	CHECK_NOT_CONTAINS(html.buf, "<td class=\"name\">random-drops</td>");
	strbuf_release(&path);
	strbuf_release(&page);
	strbuf_release(&html);
	strbuf_release(&err);
}
