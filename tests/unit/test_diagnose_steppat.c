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

enum out_fmt { F_TIME, F_STEP_TIME, F_JSONL_STEP_TIME };

/* one run: every field 0 is "not in this run" */
struct spec {
	const char *name;
	size_t n;            /* steps */
	double step_s;       /* a settled step, seconds */
	double jitter;       /* log-normal sigma of every step */
	double first;        /* warm-up: the first step is this many steps, the next ones decay */
	uint64_t ck_every;   /* checkpoint every K steps ... */
	double ck_s;         /* ... taking this many seconds */
	uint64_t ck_phase;
	bool ck_clock;       /* by the clock: each interval K +- 1 */
	uint64_t ev_every;   /* evaluation every K steps */
	double ev_s;
	double gc_rate, gc_mult; /* GC pauses: per step, step multiplier up to this */
	double rnd_rate, rnd_mult; /* faults: random stalls */
	double down_at, down_to;   /* step down at this share of the run to this level */
	double noisy;              /* throughput uniform in [1 - noisy, 1] */
	double decline;            /* level falls linearly by this over the run */
	size_t crash_at, back_to;  /* a restart: dies after crash_at, resumes at back_to */
	size_t pause_at;           /* a pause of pause_s before this step (a requeue) */
	double pause_s;
	double last;               /* the last step takes this many steps */
	size_t odd_at;             /* one stall off the period, odd_mult steps long */
	double odd_mult;
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
		if (sp->rnd_rate > 0 && unif() < sp->rnd_rate)
			d *= sp->rnd_mult;
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
		if (sp->fmt == F_TIME)
			strbuf_addf(out, "%zu,%.4f,2.4\n", i, t);
		else if (sp->fmt == F_STEP_TIME)
			strbuf_addf(out, "%zu,%.5f,2.4\n", i, d);
		else
			strbuf_addf(out, "{\"step\": %zu, \"step_time\": %.5f, \"loss\": 2.4}\n", i, d);
		if (sp->crash_at && i == sp->crash_at) { /* resumed from a checkpoint */
			i = sp->back_to - 1;
			t += 240;
			into = 0;
			if (next_ck)
				next_ck = (sp->back_to / sp->ck_every + 1) * sp->ck_every + sp->ck_phase;
			sp->crash_at = 0; /* once */
		}
	}
}

static struct strbuf fails = STRBUF_INIT;
static size_t fails_nr;
/* the bank checks every case before it fails, so that one run names every miss */
#define BANK_CHECK(cond, ...)                                                                  \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fails_nr++;                                                            \
			strbuf_addf(&fails, __VA_ARGS__);                                      \
			strbuf_addch(&fails, '\n');                                            \
		}                                                                              \
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
#define NANOGPT .n = 3000, .step_s = 0.022, .jitter = 0.02, .first = 360
#define TITAN .n = 1500, .step_s = 1.17, .jitter = 0.015, .first = 4

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
	    .fmt = F_JSONL_STEP_TIME }, "", "warm-up", { 0 } },
	{ { "5% log-normal jitter, gc pauses", .n = 3000, .step_s = 0.8, .jitter = 0.05,
	    .first = 6, .gc_rate = 0.002, .gc_mult = 2.5, .fmt = F_TIME }, "", "warm-up*", { 0 } },
	{ { "3% jitter, ms stamps", .n = 2500, .step_s = 0.35, .jitter = 0.03, .first = 20,
	    .fmt = F_TIME }, "", "warm-up", { 0 } },
	{ { "60 steps, first slow", .n = 60, .step_s = 1.0, .jitter = 0.01, .first = 40,
	    .fmt = F_STEP_TIME }, "", "warm-up", { 0 } },
	{ { "35 steps, short", .n = 35, .step_s = 2.0, .jitter = 0.02, .first = 8,
	    .fmt = F_TIME }, "", "warm-up", { 0 } },
	{ { "restart, warm-up again", MEGATRON, .crash_at = 1300, .back_to = 1201,
	    .fmt = F_TIME }, "", "warm-up warm-up", { 0 } },
	{ { "requeued at the next step", TITAN, .pause_at = 900, .pause_s = 1800, .fmt = F_TIME },
	  "", "warm-up pause warm-up", { 0 } },
	{ { "final checkpoint", TITAN, .last = 25, .fmt = F_STEP_TIME }, "", "warm-up last-step",
	  { 0 } },
	/* faults, each named, and only it */
	{ { "checkpoints and a slow first step", MEGATRON, .ck_every = 200, .ck_s = 60,
	    .fmt = F_STEP_TIME }, "periodic-drops", "warm-up", { 200 } },
	{ { "eval by the clock, K+-1", TITAN, .ck_every = 100, .ck_s = 9, .ck_clock = true,
	    .fmt = F_TIME }, "periodic-drops", "warm-up", { 100 } },
	{ { "eval every 100, checkpoint every 500", MEGATRON, .ev_every = 100, .ev_s = 16,
	    .ck_every = 500, .ck_s = 90, .fmt = F_STEP_TIME },
	  "periodic-drops periodic-drops", "warm-up", { 500, 100 } },
	{ { "eval every 100, checkpoint every 250 off its phase", NANOGPT, .ev_every = 100,
	    .ev_s = 0.2, .ck_every = 250, .ck_phase = 30, .ck_s = 0.6, .fmt = F_TIME },
	  "periodic-drops periodic-drops", "warm-up", { 250, 100 } },
	{ { "step down under checkpoints", MEGATRON, .down_at = 0.6, .down_to = 0.7,
	    .ck_every = 250, .ck_s = 50, .fmt = F_STEP_TIME },
	  "step-down periodic-drops", "warm-up", { 250 } },
	{ { "checkpoints and one stall off the period", TITAN, .ck_every = 100, .ck_s = 12,
	    .odd_at = 777, .odd_mult = 40, .fmt = F_STEP_TIME },
	  "periodic-drops random-drops", "warm-up", { 100 } },
	{ { "random 10x stalls", TITAN, .rnd_rate = 0.004, .rnd_mult = 10, .fmt = F_TIME },
	  "random-drops", "warm-up", { 0 } },
	{ { "noisy link", TITAN, .noisy = 0.2, .fmt = F_STEP_TIME }, "noisy", "warm-up*",
	  { 0 } },
	{ { "step down in a short run", .n = 80, .step_s = 1.0, .jitter = 0.01, .first = 30,
	    .down_at = 0.5, .down_to = 0.7, .fmt = F_STEP_TIME }, "step-down", "warm-up", { 0 } },
	{ { "gc decline", MEGATRON, .decline = 0.35, .fmt = F_TIME }, "slow-decline", "warm-up",
	  { 0 } },
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
	for (size_t c = 0; c < ARRAY_SIZE(bank); c++) {
		for (uint64_t seed = 1; seed <= 6; seed++) {
			struct spec sp = bank[c].sp;
			struct strbuf text = STRBUF_INIT, pat = STRBUF_INIT, ev = STRBUF_INIT;
			gen(&sp, seed * 31 + c, &text);
			BANK_CHECK(analyse(&text, &ds) == 0, "%s seed %llu: cannot tell", sp.name,
				  (unsigned long long)seed);
			names(&ds, &pat, &ev);
			BANK_CHECK(!strcmp(pat.buf, bank[c].patterns),
				  "%s seed %llu: patterns '%s', want '%s'", sp.name,
				  (unsigned long long)seed, pat.buf, bank[c].patterns);
			struct strbuf want_ev = STRBUF_INIT;
			strbuf_addstr(&want_ev, bank[c].events);
			if (last_slow)
				strbuf_addstr(&want_ev, " last-step");
			BANK_CHECK(events_match(want_ev.buf, ev.buf),
				  "%s seed %llu: events '%s', want '%s'", sp.name,
				  (unsigned long long)seed, ev.buf, want_ev.buf);
			strbuf_release(&want_ev);
			/* the periods, in any order */
			uint64_t got[2] = { 0, 0 }, want[2] = { bank[c].period[0], bank[c].period[1] };
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
