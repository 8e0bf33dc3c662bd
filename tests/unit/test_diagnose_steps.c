/*
 * test_diagnose_steps.c: 'vigil diagnose steps' and 'vigil diagnose stragglers' (issue 11).
 * Series are generated here for every pattern of REFERENCE.md §9 with seeded, realistic noise
 * (1 % Gaussian jitter on every step), short and long, with gaps, restarts and garbage rows, in
 * CSV, JSON lines and vigil run's journal; then the command's exit codes, JSON and page.
 */
#include "../harness.h"
#include "../../src/diagnose/html.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- generated runs ---- */

static uint64_t rng_state;
static double uniform(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double gauss(void)
{
	double u = uniform() + 1e-12, v = uniform();
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

enum gen_kind { G_HEALTHY, G_TENTH, G_THIRD, G_DEGRADED, G_PERIODIC, G_RANDOM, G_DECLINE,
		G_STEP_DOWN, G_NOISY, G_PERIODIC_ON_STEP_DOWN };

/* throughput share of step i of n for a pattern (drops every 100 steps at 37 mod 100, or every
 * 10 at 7 mod 10 for short runs) */
static double share(enum gen_kind k, size_t i, size_t n)
{
	double f = 1.0;
	size_t period = n >= 1000 ? 100 : 10, phase = n >= 1000 ? 37 : 7;
	switch (k) {
	case G_TENTH: f = 0.08; break;
	case G_THIRD: f = 0.3; break;
	case G_DEGRADED: f = 0.7; break;
	case G_STEP_DOWN: f = i >= n * 2 / 5 ? 0.7 : 1.0; break;
	case G_PERIODIC_ON_STEP_DOWN: f = i >= n / 2 ? 0.7 : 1.0; break;
	case G_DECLINE: f = 1.0 - 0.4 * (double)i / (double)n; break;
	case G_NOISY: f = 0.8 + 0.2 * uniform(); break; /* 90-100 % is a healthy run's 5 % */
	default: break;
	}
	f *= 1 + 0.01 * gauss();
	if ((k == G_PERIODIC || k == G_PERIODIC_ON_STEP_DOWN) && i % period == phase)
		f /= 10;
	if (k == G_RANDOM && uniform() < 0.004)
		f /= 10;
	return f;
}

/* CSV: step,time (Unix seconds at each step's end), 0.5 s a step at full speed */
static void gen_csv(enum gen_kind k, size_t n, uint64_t seed, struct strbuf *out)
{
	double t = 1.7e9;
	rng_state = seed * 2654435761u + 1;
	strbuf_addstr(out, "step,time,loss\n");
	for (size_t i = 0; i < n; i++) {
		t += 0.5 / share(k, i, n);
		strbuf_addf(out, "%zu,%.4f,2.5\n", i, t);
	}
}

static void parse_rows(const char *text, size_t len, struct diag_rows *r)
{
	diag_rows_init(r);
	diag_rows_feed(r, text, len);
	diag_rows_finish(r);
}

/* diagnose text; 0 or -1 as diag_steps_analyse */
static int diagnose(const char *text, size_t len, const struct diag_steps_opts *o,
		    struct diag_steps *s, struct diag_rows *r)
{
	struct strbuf err = STRBUF_INIT;
	parse_rows(text, len, r);
	int ret = diag_steps_analyse(r, o, s, &err);
	strbuf_release(&err);
	return ret;
}

static const struct diag_pattern *find(const struct diag_steps *s, enum diag_pattern_kind k)
{
	for (size_t i = 0; i < s->pat_nr; i++)
		if (s->pat[i].kind == k)
			return &s->pat[i];
	return NULL;
}

static struct diag_steps st; /* big: not on the stack */

TEST(diag_steps_every_pattern_in_a_generated_run)
{
	static const struct {
		enum gen_kind g;
		enum diag_pattern_kind want;
	} cases[] = {
		{ G_HEALTHY, DP_HEALTHY },
		{ G_TENTH, DP_FLAT_TENTH },
		{ G_THIRD, DP_FLAT_THIRD },
		{ G_DEGRADED, DP_FLAT_DEGRADED },
		{ G_PERIODIC, DP_PERIODIC_DROPS },
		{ G_RANDOM, DP_RANDOM_DROPS },
		{ G_DECLINE, DP_SLOW_DECLINE },
		{ G_STEP_DOWN, DP_STEP_DOWN },
		{ G_NOISY, DP_NOISY },
	};
	const struct diag_steps_opts o = { .expected_step_time = 0.5 };
	for (uint64_t seed = 1; seed <= 3; seed++) {
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			struct strbuf csv = STRBUF_INIT;
			struct diag_rows r;
			gen_csv(cases[i].g, 2000, seed, &csv);
			CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), 0);
			if (cases[i].want == DP_HEALTHY) {
				CHECK_MSG(st.pat_nr == 0, "seed %llu: healthy run diagnosed as %s",
					  (unsigned long long)seed, diag_pattern_name(st.pat[0].kind));
			} else {
				CHECK_MSG(st.pat_nr == 1 && st.pat[0].kind == cases[i].want,
					  "seed %llu: want only %s, got %zu patterns, first %s",
					  (unsigned long long)seed, diag_pattern_name(cases[i].want),
					  st.pat_nr, st.pat_nr ? diag_pattern_name(st.pat[0].kind) : "-");
				CHECK(st.pat[0].cost > 0.01 && st.pat[0].cost < 1);
			}
			diag_rows_release(&r);
			strbuf_release(&csv);
		}
	}
	/* the evidence of a few, numbers a person can check */
	struct strbuf csv = STRBUF_INIT;
	struct diag_rows r;
	gen_csv(G_STEP_DOWN, 2000, 7, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), 0);
	CHECK_MSG(st.pat[0].changed_at >= 795 && st.pat[0].changed_at <= 805, "changed at %llu",
		  (unsigned long long)st.pat[0].changed_at);
	CHECK(fabs(st.pat[0].level - 0.7) < 0.03 && fabs(st.pat[0].level_before - 1) < 0.03);
	diag_rows_release(&r);
	strbuf_reset(&csv);
	gen_csv(G_PERIODIC, 2000, 7, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), 0);
	CHECK_INT(st.pat[0].period, 100);
	CHECK_INT(st.pat[0].start_step, 37);
	CHECK_INT(st.pat[0].count, 20);
	diag_rows_release(&r);
	strbuf_release(&csv);
}

/* Without an expected value the run is its own reference: the shapes still show; flat cannot. */
TEST(diag_steps_without_expected_uses_the_runs_best_level)
{
	const struct diag_steps_opts none = { 0 };
	struct strbuf csv = STRBUF_INIT;
	struct diag_rows r;
	gen_csv(G_THIRD, 2000, 3, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &none, &st, &r), 0);
	CHECK_INT(st.pat_nr, 0);
	CHECK(!st.expected_given);
	CHECK(fabs(st.expected - 1 / 1.6667) < 0.05); /* 0.3 of 2 steps/s */
	diag_rows_release(&r);
	strbuf_reset(&csv);
	gen_csv(G_STEP_DOWN, 2000, 3, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &none, &st, &r), 0);
	CHECK(st.pat_nr == 1 && st.pat[0].kind == DP_STEP_DOWN);
	diag_rows_release(&r);
	strbuf_release(&csv);
}

/* Times written by a reader (vigil run's journal: when it read each line) carry its jitter:
 * two lines read at once make one long and one zero-length step. That is no pattern; a step
 * that really took long (no short one after it) still is. */
TEST(diag_steps_reader_jitter_is_not_a_pattern)
{
	const struct diag_steps_opts none = { 0 };
	struct strbuf j = STRBUF_INIT;
	struct diag_rows r;
	double t = 1796090000.0;
	for (int i = 1; i <= 400; i++) {
		/* every 7th line read late, the next with it */
		t += i % 7 == 0 ? 0.4 : i % 7 == 1 && i > 1 ? 0.0 : 0.2;
		strbuf_addf(&j, "{\"t\":%.3f,\"kind\":\"step\",\"attempt\":0,\"step\":%d}\n", t, i);
	}
	CHECK_INT(diagnose(j.buf, j.len, &none, &st, &r), 0);
	CHECK_MSG(st.pat_nr == 0, "a pattern in reader jitter: %s",
		  st.pat_nr ? diag_pattern_name(st.pat[0].kind) : "");
	diag_rows_release(&r);
	/* the same with real slow steps every 50 (no short step after them): periodic drops */
	strbuf_reset(&j);
	t = 1796090000.0;
	for (int i = 1; i <= 400; i++) {
		t += i % 50 == 0 ? 2.0 : 0.2;
		strbuf_addf(&j, "{\"t\":%.3f,\"kind\":\"step\",\"attempt\":0,\"step\":%d}\n", t, i);
	}
	CHECK_INT(diagnose(j.buf, j.len, &none, &st, &r), 0);
	CHECK_MSG(find(&st, DP_PERIODIC_DROPS) != NULL, "no periodic drops found (%zu patterns)",
		  (size_t)st.pat_nr);
	diag_rows_release(&r);
	strbuf_release(&j);
}

/* Two at once, most costly first: checkpoint drops on top of a step down. */
TEST(diag_steps_several_patterns_most_costly_first)
{
	const struct diag_steps_opts none = { 0 };
	struct strbuf csv = STRBUF_INIT;
	struct diag_rows r;
	gen_csv(G_PERIODIC_ON_STEP_DOWN, 4000, 11, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &none, &st, &r), 0);
	CHECK_INT(st.pat_nr, 2);
	CHECK_INT(st.pat[0].kind, DP_STEP_DOWN);
	CHECK_INT(st.pat[1].kind, DP_PERIODIC_DROPS);
	CHECK(st.pat[0].cost > st.pat[1].cost);
	CHECK_INT(st.pat[1].period, 100);
	CHECK(st.pat[0].changed_at >= 1995 && st.pat[0].changed_at <= 2005);
	diag_rows_release(&r);
	strbuf_release(&csv);
}

TEST_TIMEOUT(diag_steps_short_and_long_runs, 240)
{
	const struct diag_steps_opts o = { .expected_step_time = 0.5 };
	struct strbuf csv = STRBUF_INIT;
	struct diag_rows r;
	/* 50 rows: 49 step times */
	gen_csv(G_HEALTHY, 50, 5, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), 0);
	CHECK_INT(st.pat_nr, 0);
	CHECK_INT(st.used, 49);
	diag_rows_release(&r);
	strbuf_reset(&csv);
	gen_csv(G_STEP_DOWN, 50, 5, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), 0);
	CHECK(st.pat_nr == 1 && st.pat[0].kind == DP_STEP_DOWN);
	diag_rows_release(&r);
	strbuf_reset(&csv);
	gen_csv(G_PERIODIC, 50, 5, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), 0);
	CHECK(st.pat_nr == 1 && st.pat[0].kind == DP_PERIODIC_DROPS && st.pat[0].period == 10);
	diag_rows_release(&r);
	strbuf_reset(&csv);
	/* too few */
	gen_csv(G_HEALTHY, 20, 5, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), -1);
	diag_rows_release(&r);
	strbuf_reset(&csv);
	/* 100,000 steps: checkpoint drops on a step down */
	gen_csv(G_PERIODIC_ON_STEP_DOWN, 100000, 9, &csv);
	CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), 0);
	CHECK_INT(st.pat_nr, 2);
	CHECK_INT(st.pat[0].kind, DP_STEP_DOWN);
	CHECK_MSG(st.pat[0].changed_at >= 49990 && st.pat[0].changed_at <= 50010, "at %llu",
		  (unsigned long long)st.pat[0].changed_at);
	CHECK_INT(st.pat[1].period, 100);
	CHECK_INT(st.pat[1].count, 1000);
	diag_rows_release(&r);
	strbuf_release(&csv);
}

/* A resumed run (the step counter goes back), a gap and garbage rows: counted and named, the
 * last execution of each step kept, the pattern still found. */
TEST(diag_steps_restarts_gaps_and_garbage)
{
	const struct diag_steps_opts o = { .expected_step_time = 0.5 };
	struct strbuf csv = STRBUF_INIT;
	struct diag_rows r;
	double t = 1.7e9;
	rng_state = 42;
	strbuf_addstr(&csv, "step,time\n");
	for (size_t i = 0; i < 600; i++) { /* first execution: dies at 599, resumed from 500 */
		t += 0.5 * (1 + 0.01 * gauss());
		strbuf_addf(&csv, "%zu,%.4f\n", i, t);
	}
	strbuf_addstr(&csv, "oops,not a row\n");
	strbuf_addstr(&csv, "12,nan\n");
	t += 300;
	for (size_t i = 500; i < 2000; i++) {
		if (i >= 1500 && i < 1520)
			continue; /* a gap */
		t += (i >= 1000 ? 0.5 / 0.7 : 0.5) * (1 + 0.01 * gauss()) * (i == 1520 ? 21 : 1);
		strbuf_addf(&csv, "%zu,%.4f\n", i, t);
	}
	CHECK_INT(diagnose(csv.buf, csv.len, &o, &st, &r), 0);
	CHECK_INT(r.garbage, 2);
	CHECK_INT(r.garbage_line[0], 602);
	CHECK_INT(r.garbage_line[1], 603);
	CHECK_CONTAINS(r.garbage_why, "line 602: ");
	CHECK_INT(st.restarts, 1);
	CHECK_INT(st.restart[0].from_step, 599);
	CHECK_INT(st.restart[0].to_step, 500);
	CHECK_INT(st.restart[0].line, 604);
	CHECK_INT(st.gaps, 1);
	CHECK_INT(st.missing_steps, 20);
	CHECK_INT(st.first_step, 1);
	CHECK_INT(st.last_step, 1999);
	CHECK(st.pat_nr >= 1 && st.pat[0].kind == DP_STEP_DOWN);
	CHECK(st.pat[0].changed_at >= 995 && st.pat[0].changed_at <= 1005);
	/* the restart's pause is not a step time: no drop at 500 */
	CHECK(!find(&st, DP_RANDOM_DROPS));
	diag_rows_release(&r);
	strbuf_release(&csv);
}

/* The same run as CSV, JSON lines (step_time, mfu), vigil run's journal and a steps.jsonl. */
TEST(diag_steps_input_formats)
{
	struct strbuf csv = STRBUF_INIT, jl = STRBUF_INIT, journal = STRBUF_INIT,
		      mfu = STRBUF_INIT, tok = STRBUF_INIT;
	struct diag_rows r;
	double t = 1.7e9, cum = 0;
	rng_state = 99;
	strbuf_addstr(&csv, "\"step\", \"step_time\"\r\n");
	strbuf_addstr(&journal, "{\"t\":1700000000.0,\"kind\":\"run_started\",\"attempt\":0}\n"
				"{\"t\":1700000000.5,\"kind\":\"attempt_started\",\"attempt\":1,"
				"\"hosts\":[\"n1\",\"n2\"]}\n");
	for (size_t i = 1; i <= 1000; i++) {
		double f = share(G_STEP_DOWN, i, 1000), stt = 0.5 / f;
		t += stt;
		cum += 4096;
		strbuf_addf(&csv, "%zu,%.5f\r\n", i, stt);
		strbuf_addf(&jl, "{\"step\": %zu, \"step_time\": %.5f, \"loss\": 2.1}\n", i, stt);
		strbuf_addf(&journal, "{\"t\":%.4f,\"kind\":\"step\",\"attempt\":1,\"step\":%zu,"
				      "\"loss\":2.31}\n", t, i);
		strbuf_addf(&mfu, "{\"step\":%zu,\"mfu\":%.4f}\n", i, 0.45 * f);
		strbuf_addf(&tok, "{\"step\":%zu,\"loss\":2.0,\"tokens\":%.0f,\"time\":%.4f}\n", i, cum,
			    t);
	}
	strbuf_addstr(&journal, "{\"t\":1,\"kind\":\"run_ended\",\"attempt\":1,\"outcome\":\"done\"}\n");
	const struct diag_steps_opts none = { 0 };
	CHECK_INT(diagnose(csv.buf, csv.len, &none, &st, &r), 0);
	CHECK_INT(r.format, DIAG_FMT_CSV);
	CHECK(!st.metric_mfu && st.pat_nr == 1 && st.pat[0].kind == DP_STEP_DOWN);
	CHECK(fabs(st.median_step_time - 0.714) < 0.02);
	diag_rows_release(&r);
	CHECK_INT(diagnose(jl.buf, jl.len, &none, &st, &r), 0);
	CHECK_INT(r.format, DIAG_FMT_JSONL);
	CHECK(st.pat_nr == 1 && st.pat[0].kind == DP_STEP_DOWN);
	diag_rows_release(&r);
	CHECK_INT(diagnose(journal.buf, journal.len, &none, &st, &r), 0);
	CHECK_INT(r.format, DIAG_FMT_JOURNAL);
	CHECK_INT(r.skipped, 3);
	CHECK_INT(r.garbage, 0);
	CHECK_INT(st.used, 999);
	CHECK(st.pat_nr == 1 && st.pat[0].kind == DP_STEP_DOWN);
	diag_rows_release(&r);
	/* MFU against an expected MFU; at 70 % of 0.45 after the change */
	const struct diag_steps_opts em = { .expected_mfu = 0.45 };
	CHECK_INT(diagnose(mfu.buf, mfu.len, &em, &st, &r), 0);
	CHECK(st.metric_mfu && !st.mfu_computed && st.expected == 0.45);
	CHECK(st.pat_nr == 1 && st.pat[0].kind == DP_STEP_DOWN);
	diag_rows_release(&r);
	/* a steps.jsonl with running token totals and times: MFU computed from the tokens;
	 * 4096 tokens * 1e9 FLOPs / (0.5 s * 4.5e12) = 0.45... of a peak of 1.82e13 */
	const struct diag_steps_opts fl = { .flops_per_token = 1e9, .peak_flops = 1.82e13 };
	CHECK_INT(diagnose(tok.buf, tok.len, &fl, &st, &r), 0);
	CHECK(st.metric_mfu && st.mfu_computed);
	CHECK_MSG(fabs(st.expected - 4096 * 1e9 / (0.5 * 1.82e13)) < 0.01, "expected %g",
		  st.expected);
	CHECK(st.pat_nr == 1 && st.pat[0].kind == DP_STEP_DOWN);
	diag_rows_release(&r);
	/* --expected-mfu on rows without MFU or tokens: cannot tell */
	CHECK_INT(diagnose(csv.buf, csv.len, &em, &st, &r), -1);
	diag_rows_release(&r);
	strbuf_release(&csv);
	strbuf_release(&jl);
	strbuf_release(&journal);
	strbuf_release(&mfu);
	strbuf_release(&tok);
}

/* The reader: rows do not depend on how the input is cut; odd rows are garbage by line. */
TEST(diag_rows_reader_chunks_and_garbage)
{
	static const char text[] =
		"{\"step\":1,\"step_time\":0.5,\"host\":\"n1\",\"rank\":3}\n"
		"{\"step\":2,\"step_time\":\"fast\"}\n"
		"{\"step\":2.5,\"step_time\":0.5}\n"
		"{\"step\":3,\"mfu\":1.5}\n"
		"[1,2]\n"
		"\n"
		"{\"step\":4,\"step_time\":0.5,\"host\":\"n\\u0031\"}\n"
		"{\"step\":5,\"step_time\":-1}\n"
		"{\"step\":6,\"step_time\":1e999}\n"
		"{\"step\":7} trailing\n"
		"{\"step\":8,\"step_time\":0.5}";
	struct diag_rows a, b;
	parse_rows(text, sizeof(text) - 1, &a);
	CHECK_INT(a.nr, 3);
	CHECK_INT(a.garbage, 7);
	CHECK_INT(a.hosts_nr, 1); /* "n\u0031" is n1 */
	CHECK_INT(a.v[1].host, 0);
	CHECK_INT(a.v[0].rank, 3);
	CHECK_INT(a.v[2].line, 11);
	CHECK_STR(a.garbage_why, "line 2: a value is not a number");
	for (size_t chunk = 1; chunk < 20; chunk++) {
		diag_rows_init(&b);
		for (size_t off = 0; off < sizeof(text) - 1; off += chunk)
			diag_rows_feed(&b, text + off,
				       sizeof(text) - 1 - off < chunk ? sizeof(text) - 1 - off : chunk);
		diag_rows_finish(&b);
		CHECK_INT(b.nr, a.nr);
		CHECK_INT(b.garbage, a.garbage);
		CHECK(!memcmp(a.v, b.v, a.nr * sizeof(*a.v)));
		diag_rows_release(&b);
	}
	diag_rows_release(&a);
	/* a CSV without a step column, an overlong line, NUL bytes */
	parse_rows("time,step_time\n1,2\n", 19, &a);
	CHECK_CONTAINS(a.header_error, "no 'step' column");
	CHECK_INT(a.nr, 0);
	diag_rows_release(&a);
	struct strbuf big = STRBUF_INIT;
	strbuf_addstr(&big, "step,step_time\n1,0.5\n");
	for (int i = 0; i < 5000; i++)
		strbuf_addch(&big, '9');
	strbuf_addstr(&big, "\n2,0.5\n3,\0.5\n");
	parse_rows(big.buf, big.len + 1, &a);
	CHECK_INT(a.nr, 2);
	CHECK_INT(a.garbage, 2);
	CHECK_CONTAINS(a.garbage_why, "line 3: a line longer than 4096 bytes");
	diag_rows_release(&a);
	strbuf_release(&big);
}

/* ---- stragglers ---- */

/* 8 hosts of 4 ranks; host slow_host (-1: none) 15 % slower between from and to */
static void gen_ranks(size_t steps, int slow_host, size_t from, size_t to, struct strbuf *out)
{
	rng_state = 1234;
	strbuf_addstr(out, "step,rank,host,compute_time\n");
	for (size_t s = 0; s < steps; s++)
		for (int r = 0; r < 32; r++) {
			double c = 0.4 * (1 + 0.02 * gauss());
			if (r / 4 == slow_host && s >= from && s < to)
				c *= 1.15;
			if (uniform() < 0.002)
				c *= 2; /* any host has an odd slow step */
			strbuf_addf(out, "%zu,%d,gpu-node-%02d,%.5f\n", s, r, r / 4, c);
		}
}

static struct diag_stragglers sg;

TEST(diag_stragglers_one_slow_host_none_and_a_while)
{
	struct strbuf csv = STRBUF_INIT, err = STRBUF_INIT;
	struct diag_rows r;
	gen_ranks(500, 5, 0, 500, &csv);
	parse_rows(csv.buf, csv.len, &r);
	CHECK_INT(diag_stragglers_analyse(&r, &sg, &err), 0);
	CHECK_INT(sg.hosts, 8);
	CHECK_INT(sg.ranks, 32);
	CHECK_INT(sg.nr, 1);
	CHECK_STR(r.hosts[sg.s[0].host], "gpu-node-05");
	CHECK(fabs(sg.s[0].slower - 0.15) < 0.03);
	CHECK_INT(sg.s[0].since_step, 0);
	CHECK(!sg.s[0].recovered);
	diag_rows_release(&r);

	strbuf_reset(&csv);
	gen_ranks(500, -1, 0, 0, &csv);
	parse_rows(csv.buf, csv.len, &r);
	CHECK_INT(diag_stragglers_analyse(&r, &sg, &err), 0);
	CHECK_INT(sg.nr, 0);
	diag_rows_release(&r);

	/* slow from step 200 to 300 only: named, since about 200, recovered */
	strbuf_reset(&csv);
	gen_ranks(500, 2, 200, 300, &csv);
	parse_rows(csv.buf, csv.len, &r);
	CHECK_INT(diag_stragglers_analyse(&r, &sg, &err), 0);
	CHECK_INT(sg.nr, 1);
	CHECK_STR(r.hosts[sg.s[0].host], "gpu-node-02");
	CHECK_MSG(sg.s[0].since_step >= 200 && sg.s[0].since_step <= 250, "since %llu",
		  (unsigned long long)sg.s[0].since_step);
	CHECK(sg.s[0].recovered && sg.s[0].until_step <= 300);
	diag_rows_release(&r);

	/* no rank or host column: cannot tell */
	parse_rows("step,step_time\n1,2\n", 19, &r);
	CHECK_INT(diag_stragglers_analyse(&r, &sg, &err), -1);
	CHECK_CONTAINS(err.buf, "no 'host' or 'rank' column");
	diag_rows_release(&r);
	strbuf_release(&csv);
	strbuf_release(&err);
}

/* ---- the command ---- */

static const char *write_tmp(const char *name, const struct strbuf *sb)
{
	static struct strbuf p = STRBUF_INIT;
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/%s", test_tmpdir(), name);
	test_write_bytes(test_tmpdir(), name, sb->buf, sb->len);
	return p.buf;
}

TEST_TIMEOUT(diag_command_exit_codes_text_and_json, 120)
{
	struct strbuf csv = STRBUF_INIT, path = STRBUF_INIT;
	struct child c;
	gen_csv(G_HEALTHY, 300, 1, &csv);
	strbuf_addstr(&path, write_tmp("healthy.csv", &csv));
	const char *ok[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, ok, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "healthy: no pattern found");
	CHECK_STR(c.err.buf, "");
	child_release(&c);

	strbuf_reset(&csv);
	gen_csv(G_PERIODIC_ON_STEP_DOWN, 3000, 2, &csv);
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("sick\x1b[31m.csv", &csv));
	const char *js[] = { "diagnose", "steps", path.buf, "--json", NULL };
	test_run_vigil(&c, js, NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	double d;
	CHECK_STR(json_get_string(v, "verdict"), "patterns");
	CHECK_STR(json_get_string(v, "format"), "csv");
	CHECK_STR(json_path(v, "patterns.0.pattern")->string, "step-down");
	CHECK(json_get_number(json_path(v, "patterns.0"), "changed_at", &d) && d >= 1490 &&
	      d <= 1510);
	CHECK_STR(json_path(v, "patterns.1.pattern")->string, "periodic-drops");
	CHECK(json_get_number(json_path(v, "patterns.1"), "period", &d) && d == 100);
	CHECK(json_get_number(json_path(v, "patterns.1"), "cost", &d) && d > 0.02 && d < 0.2);
	CHECK_CONTAINS(json_path(v, "patterns.1.cause")->string, "checkpointing");
	CHECK(json_path(v, "patterns.1.action")->string[0]);
	CHECK(json_get_number(json_path(v, "patterns.1.evidence"), "drops", &d) && d == 30);
	CHECK(json_get_number(json_path(v, "change_points.0"), "after", &d) && d < 0.75);
	CHECK(json_get_number(json_path(v, "garbage"), "count", &d) && d == 0);
	json_free(v);
	child_release(&c);

	/* text: the file name's escape sequence is quoted, never sent */
	const char *txt[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, txt, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_NOT_CONTAINS(c.out.buf, "\x1b");
	CHECK_CONTAINS(c.out.buf, "sick\\x1b[31m.csv");
	CHECK_CONTAINS(c.out.buf, "step-down from step 1");
	CHECK_CONTAINS(c.out.buf, "likely cause: GPU clock throttling");
	child_release(&c);

	/* could not tell: too few rows, a missing file, a FIFO, a directory */
	strbuf_reset(&csv);
	strbuf_addstr(&csv, "step,step_time\n1,0.5\n2,0.5\ngarbage\n");
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("few.csv", &csv));
	const char *few[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, few, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "too few steps to tell: 2");
	CHECK_CONTAINS(c.err.buf, "1 garbage rows; first: line 4");
	CHECK_STR(c.out.buf, "");
	child_release(&c);
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/fifo", test_tmpdir());
	CHECK_INT(mkfifo(path.buf, 0600), 0);
	const char *fifo[] = { "diagnose", "stragglers", path.buf, NULL };
	test_run_vigil(&c, fifo, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "it is a FIFO, not a regular file");
	child_release(&c);
	const char *dir[] = { "diagnose", "steps", test_tmpdir(), NULL };
	test_run_vigil(&c, dir, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "not a regular file");
	child_release(&c);
	const char *missing[] = { "diagnose", "steps", "/nonexistent/steps.csv", NULL };
	test_run_vigil(&c, missing, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "cannot read '/nonexistent/steps.csv': No such file");
	child_release(&c);

	/* usage */
	const char *u1[] = { "diagnose", "steps", NULL };
	const char *u2[] = { "diagnose", "steps", "x", "--expected-mfu", "2", NULL };
	const char *u3[] = { "diagnose", "steps", "x", "--expected-mfu", "0.5",
			     "--expected-step-time", "1", NULL };
	const char *u4[] = { "diagnose", "stragglers", "x", "--expected-mfu", "0.5", NULL };
	const char *u5[] = { "diagnose", "steps", "x", "--flops-per-token", "1e9", NULL };
	const char *u6[] = { "diagnose", "stepz", NULL };
	const char *const *usage[] = { u1, u2, u3, u4, u5, u6 };
	for (size_t i = 0; i < ARRAY_SIZE(usage); i++) {
		test_run_vigil(&c, usage[i], NULL);
		CHECK_MSG(c.exit_code == 2, "usage %zu exited %d", i, c.exit_code);
		CHECK_STR(c.out.buf, "");
		child_release(&c);
	}

	/* stragglers: exit 1 with the host, 0 without */
	strbuf_reset(&csv);
	gen_ranks(300, 3, 0, 300, &csv);
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("ranks.csv", &csv));
	const char *sj[] = { "diagnose", "stragglers", path.buf, "--json", NULL };
	test_run_vigil(&c, sj, NULL);
	CHECK_INT(c.exit_code, 1);
	v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "stragglers");
	CHECK_STR(json_path(v, "stragglers.0.host")->string, "gpu-node-03");
	CHECK(json_get_number(json_path(v, "stragglers.0"), "slower_pct", &d) && d > 12 && d < 18);
	CHECK(json_get_number(json_path(v, "stragglers.0"), "since_step", &d) && d == 0);
	CHECK(!json_path(v, "stragglers.1"));
	json_free(v);
	child_release(&c);
	strbuf_reset(&csv);
	gen_ranks(300, -1, 0, 0, &csv);
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("ranks-ok.csv", &csv));
	const char *st0[] = { "diagnose", "stragglers", path.buf, NULL };
	test_run_vigil(&c, st0, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "no straggler");
	child_release(&c);
	strbuf_release(&csv);
	strbuf_release(&path);
}

/* ---- the page in a real browser ---- */

TEST_TIMEOUT(diag_html_renders_in_a_headless_browser, 240)
{
	if (!test_browser())
		SKIP("chromium-headless-shell is not installed (tests/setup-deps installs it)");
	struct strbuf csv = STRBUF_INIT, path = STRBUF_INIT, page = STRBUF_INIT,
		      url = STRBUF_INIT, dom = STRBUF_INIT;
	struct child c;
	gen_csv(G_PERIODIC_ON_STEP_DOWN, 3000, 4, &csv);
	strbuf_addstr(&path, write_tmp("run<b>.csv", &csv));
	strbuf_addf(&page, "%s/steps.html", test_tmpdir());
	const char *a[] = { "diagnose", "steps", path.buf, "--html", page.buf, NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "The page: ");
	child_release(&c);
	strbuf_addf(&url, "file://%s", page.buf);
	test_run_browser(url.buf, "--dump-dom", &dom);
	CHECK_CONTAINS(dom.buf, "<svg id=\"curve\"");
	CHECK_CONTAINS(dom.buf, "<polyline class=\"throughput\"");
	CHECK_CONTAINS(dom.buf, "<circle class=\"drop\"");
	CHECK_CONTAINS(dom.buf, "<line class=\"change\"");
	CHECK_CONTAINS(dom.buf, "<rect class=\"pattern\" data-pattern=\"step-down\"");
	CHECK_CONTAINS(dom.buf, "<b id=\"verdict\">step-down</b>");
	CHECK_CONTAINS(dom.buf, "<td class=\"name\">periodic-drops</td>");
	CHECK_CONTAINS(dom.buf, "run&lt;b&gt;.csv");
	CHECK_NOT_CONTAINS(dom.buf, "<script");

	/* stragglers on their page */
	strbuf_reset(&csv);
	gen_ranks(200, 6, 0, 200, &csv);
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("ranks.csv", &csv));
	const char *b[] = { "diagnose", "stragglers", path.buf, "--html", page.buf, NULL };
	test_run_vigil(&c, b, NULL);
	CHECK_INT(c.exit_code, 1);
	child_release(&c);
	strbuf_reset(&dom);
	test_run_browser(url.buf, "--dump-dom", &dom);
	CHECK_CONTAINS(dom.buf, "<svg id=\"stragglers\"");
	CHECK_CONTAINS(dom.buf, "<rect class=\"straggler\"");
	CHECK_CONTAINS(dom.buf, "gpu-node-06");

	/* never written through a link */
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/link.html", test_tmpdir());
	CHECK_INT(symlink("/nonexistent-target", path.buf), 0);
	const char *l[] = { "diagnose", "stragglers", write_tmp("ranks2.csv", &csv), "--html",
			    path.buf, NULL };
	test_run_vigil(&c, l, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	child_release(&c);
	strbuf_release(&csv);
	strbuf_release(&path);
	strbuf_release(&page);
	strbuf_release(&url);
	strbuf_release(&dom);
}

/* ---- issue 17: answers when it cannot tell ---- */

/* A perfectly steady run, 15.3 ticks a step, its times written at the tick (vigil run's journal
 * writes ms, many trainers 0.01 s or 0.1 s): the step times are 15 or 16 ticks, a spread of
 * 6.5 % that is the clock's. It was "noisy, InfiniBand degradation". */
TEST(diag_steps_quantised_times_are_not_noise)
{
	static const double tick[] = { 0.001, 0.01, 0.1 };
	struct strbuf f = STRBUF_INIT, path = STRBUF_INIT;
	struct child c;
	for (size_t k = 0; k < ARRAY_SIZE(tick); k++) {
		strbuf_reset(&f);
		double t = 1.7e9;
		for (size_t i = 0; i < 3000; i++) {
			t += 15.3 * tick[k];
			double q = floor(t / tick[k] + 1e-9) * tick[k];
			if (k == 0) /* the journal's own shape */
				strbuf_addf(&f, "{\"t\":%.3f,\"kind\":\"step\",\"attempt\":1,\"step\":%zu}\n",
					    q, i);
			else
				strbuf_addf(&f, "{\"step\":%zu,\"time\":%.2f}\n", i, q);
		}
		strbuf_reset(&path);
		strbuf_addstr(&path, write_tmp("steady.jsonl", &f));
		const char *a[] = { "diagnose", "steps", path.buf, "--json", NULL };
		test_run_vigil(&c, a, NULL);
		CHECK_MSG(c.exit_code == 0, "tick %g: exit %d %s", tick[k], c.exit_code, c.out.buf);
		struct json_value *v = test_parse_json(&c);
		double d;
		CHECK_STR(json_get_string(v, "verdict"), "healthy");
		CHECK(json_get_number(v, "resolution", &d) && fabs(d - tick[k]) < 1e-9);
		json_free(v);
		child_release(&c);
	}
	/* a genuinely noisy run at the same ticks is still noisy: +-15 % uniform, ms stamps (+-10 %
	 * is about what a healthy run's 5 % log-normal jitter spreads over: issue 18) */
	strbuf_reset(&f);
	rng_state = 99;
	double t = 1.7e9;
	for (size_t i = 0; i < 3000; i++) {
		t += 0.2 * (0.85 + 0.3 * uniform());
		strbuf_addf(&f, "{\"step\":%zu,\"time\":%.3f}\n", i, t);
	}
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("noisy.jsonl", &f));
	const char *a[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "noisy from step");
	child_release(&c);
	strbuf_release(&f);
	strbuf_release(&path);
}

/* Times that go backwards are said to, by line, not "the rows have no time". */
TEST(diag_steps_times_going_backwards_are_named)
{
	struct strbuf f = STRBUF_INIT, path = STRBUF_INIT;
	struct child c;
	strbuf_addstr(&f, "step,time\n");
	for (int i = 0; i < 100; i++)
		strbuf_addf(&f, "%d,%d\n", i, 1700000000 - i);
	strbuf_addstr(&path, write_tmp("back.csv", &f));
	const char *a[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "the times go backwards at line 3");
	CHECK_NOT_CONTAINS(c.err.buf, "have no 'step_time' and no 'time'");
	child_release(&c);
	/* some backwards among many good: the run is read, and the text says so */
	strbuf_reset(&f);
	strbuf_addstr(&f, "step,time\n");
	for (int i = 0; i < 300; i++)
		strbuf_addf(&f, "%d,%.3f\n", i, 1.7e9 + 0.5 * i - (i == 150 ? 5.0 : 0));
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("back2.csv", &f));
	const char *b[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, b, NULL);
	CHECK_CONTAINS(c.out.buf, "the times go backwards at line 152 (1 row)");
	/* the interval out of the row set back is the clock's too: no drop made of it */
	CHECK_INT(c.exit_code, 0);
	child_release(&c);
	strbuf_release(&f);
	strbuf_release(&path);
}

/* Two hosts, one twice as slow: the median of the ranks lies inside one of them, so either
 * could be the slow one. It was "no straggler", exit 0; it is "cannot tell", exit 3. Three
 * hosts name it. */
TEST(diag_stragglers_two_hosts_cannot_tell_three_can)
{
	struct strbuf f = STRBUF_INIT, path = STRBUF_INIT;
	struct child c;
	for (int hosts = 1; hosts <= 3; hosts++) {
		for (int same = 0; same < 2; same++) {
			strbuf_reset(&f);
			strbuf_addstr(&f, "step,rank,host,compute_time\n");
			for (int s = 0; s < 200; s++)
				for (int r = 0; r < 4 * hosts; r++)
					strbuf_addf(&f, "%d,%d,node-%d,%.3f\n", s, r, r / 4,
						    r / 4 == 0 && !same ? 0.8 : 0.4);
			strbuf_reset(&path);
			strbuf_addstr(&path, write_tmp("ranks.csv", &f));
			const char *a[] = { "diagnose", "stragglers", path.buf, NULL };
			test_run_vigil(&c, a, NULL);
			if (hosts < 3) {
				CHECK_MSG(c.exit_code == 3, "%d hosts: exit %d: %s", hosts, c.exit_code,
					  c.out.buf);
				CHECK_CONTAINS(c.err.buf, "at least 3 are needed");
				CHECK_STR(c.out.buf, "");
			} else {
				CHECK_INT(c.exit_code, same ? 0 : 1);
				if (!same)
					CHECK_CONTAINS(c.out.buf, "node-0: 100.0% slower");
			}
			child_release(&c);
		}
	}
	strbuf_release(&f);
	strbuf_release(&path);
}

/* A run longer than the rows vigil holds: what came after the cut is not known, so the answer
 * is "cannot tell", never "healthy" (it was healthy with a slowdown past the cut). */
TEST_TIMEOUT(diag_steps_rows_past_the_bound_cannot_tell, 120)
{
	struct strbuf f = STRBUF_INIT, path = STRBUF_INIT;
	struct child c;
	size_t n = DIAG_ROWS_MAX + 1000;
	strbuf_grow(&f, n * 9);
	strbuf_addstr(&f, "step,step_time\n");
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&f, "%zu,%s\n", i, i < DIAG_ROWS_MAX ? "1" : "2");
	strbuf_addstr(&path, write_tmp("long.csv", &f));
	strbuf_release(&f);
	const char *a[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "only the first 4000000 were read");
	CHECK_NOT_CONTAINS(c.out.buf, "healthy");
	child_release(&c);
	unlink(path.buf);
	strbuf_release(&path);
}

/* Attacks on the resolution (issue 17, found after the fix): stamps coarser than a quarter of a
 * row's time hide what the run did, so that is "cannot tell", never healthy: 0.1 s stamps over
 * 0.2 s steps with +-10 % noise were "healthy"; 1 s stamps over 0.2 s steps said "median step
 * 1 s". A series regular on its own period (every time on a 0.2 s grid) has no tick to find.
 * Per-rank rows given to steps are named as such, not "the rows have no time". */
TEST(diag_steps_coarse_stamps_cannot_tell_and_per_rank_rows_are_named)
{
	struct strbuf f = STRBUF_INIT, path = STRBUF_INIT;
	struct child c;
	rng_state = 7;
	double t = 1.7e9;
	for (size_t i = 0; i < 3000; i++) {
		t += 0.2 * (0.9 + 0.2 * uniform());
		strbuf_addf(&f, "{\"step\":%zu,\"time\":%.1f}\n", i, floor(t * 10) / 10);
	}
	strbuf_addstr(&path, write_tmp("coarse.jsonl", &f));
	const char *a[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "the times are written to 0.1 s, 50% of a row's time");
	child_release(&c);
	strbuf_reset(&f);
	t = 1.7e9;
	for (size_t i = 0; i < 3000; i++) {
		t += 0.2;
		strbuf_addf(&f, "{\"step\":%zu,\"time\":%.0f}\n", i, floor(t));
	}
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("coarse1.jsonl", &f));
	const char *b[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, b, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "written to 1 s");
	CHECK_NOT_CONTAINS(c.out.buf, "median step 1 s");
	child_release(&c);
	/* per-rank rows */
	strbuf_reset(&f);
	for (int i = 0; i < 200; i++)
		for (int r = 0; r < 4; r++)
			strbuf_addf(&f, "{\"step\":%d,\"rank\":%d,\"time\":%.3f}\n", i, r,
				    1.7e9 + 0.5 * i + 0.01 * r);
	strbuf_reset(&path);
	strbuf_addstr(&path, write_tmp("ranks.jsonl", &f));
	const char *d[] = { "diagnose", "steps", path.buf, NULL };
	test_run_vigil(&c, d, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "each step has several rows");
	CHECK_CONTAINS(c.err.buf, "vigil diagnose stragglers");
	child_release(&c);
	strbuf_release(&f);
	strbuf_release(&path);
}

/* More hosts than the reader keeps (attack on the 3-host rule): the rows of the hosts past the
 * bound are garbage, and a slow one among them was "no straggler", exit 0. */
TEST(diag_stragglers_more_hosts_than_kept_cannot_tell)
{
	struct strbuf f = STRBUF_INIT, path = STRBUF_INIT;
	struct child c;
	strbuf_addstr(&f, "step,rank,host,compute_time\n");
	for (int s = 0; s < 6; s++)
		for (unsigned h = 0; h < DIAG_HOSTS_MAX + 2; h++)
			strbuf_addf(&f, "%d,%u,h%u,%s\n", s, h, h, h == DIAG_HOSTS_MAX + 1 ? "0.8" : "0.4");
	strbuf_addstr(&path, write_tmp("many.csv", &f));
	const char *a[] = { "diagnose", "stragglers", path.buf, NULL };
	test_run_vigil(&c, a, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "more than 4096 host names");
	child_release(&c);
	strbuf_release(&f);
	strbuf_release(&path);
}
