/*
 * test_sim_sweep.c: 'vigil sim --replicas, --sweep, --spares-risk, --html' through the real
 * binary (docs/SIM.md): replicas give means with 95 % intervals that narrow with more
 * replicas, one replica is the plain run byte for byte; a sweep gives one row per value; the
 * recommended checkpoint interval of an automatic sweep is Young/Daly's within 10 % on one
 * failure class (the validation 2, with the closed form's ETTR); the recommended
 * spares fall as the risk allowed grows; the page renders in a headless browser with no
 * console error, escapes the model's text and is never written through a planted link.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"
#include "../../src/sim/html.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const sim_env[] = { "TMPDIR=", NULL };

/* One class: a software crash (no host at fault; a restart fixes it). */
static const char *one_class_model(double rate)
{
	static char buf[512];
	snprintf(buf, sizeof(buf),
		 "{\"rate_unit\": \"per_gpu_day\", \"classes\": [{\"name\": \"software_bug\", "
		 "\"rate\": %g, \"seen_as\": \"crash\", \"host_fault\": false, \"check_sees\": "
		 "false, \"repair_hours\": 0, \"check_says\": \"\"}]}\n",
		 rate);
	return buf;
}

/* Host faults a check sees (repairs of 12 h) and software crashes: at 64 GPUs about one host
 * fault every 4 h, so the spares used differ from replica to replica. */
static const char hosts_model[] =
	"{\"source\": \"test: hosts\", \"rate_unit\": \"per_gpu_day\", \"classes\": [\n"
	" {\"name\": \"gpu\", \"rate\": 0.09, \"seen_as\": \"crash\", \"host_fault\": true,"
	"  \"check_sees\": true, \"repair_hours\": 12, \"check_says\": \"gpu: Xid 79\"},\n"
	" {\"name\": \"software_bug\", \"rate\": 0.05, \"seen_as\": \"crash\", \"host_fault\": false,"
	"  \"check_sees\": false, \"repair_hours\": 0, \"check_says\": \"\"}\n"
	"]}\n";

static const char *model_file(const char *name, const char *text)
{
	static char path[4096];
	test_write(test_tmpdir(), name, text);
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static struct json_value *sim_json(const char *const *args, struct strbuf *text)
{
	struct child c;
	test_run_vigil(&c, args, sim_env);
	CHECK_MSG(c.exited && c.exit_code == 0, "vigil sim exited %d: %s", c.exit_code, c.err.buf);
	if (text)
		strbuf_addstr(text, c.out.buf);
	struct json_value *v = test_parse_json(&c);
	child_release(&c);
	return v;
}

/* The same for a run longer than test_run_vigil's 30 s (a sweep of 20-day runs under ASan on a
 * busy machine): its own deadline. */
static struct json_value *sim_json_slow(const char *const *args, struct strbuf *text)
{
	const char *argv[32];
	size_t n = 0;
	argv[n++] = test_vigil_bin();
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	struct child c;
	struct strbuf err = STRBUF_INIT;
	child_init(&c);
	c.argv = argv;
	c.env_add = sim_env;
	c.timeout_ms = 200000;
	c.out_cap = 16u << 20;
	CHECK_MSG(child_run(&c, &err) == 0, "cannot run vigil: %s", err.buf);
	CHECK_MSG(c.exited && c.exit_code == 0, "vigil sim exited %d (timed out %d): %s",
		  c.exit_code, c.timed_out, c.err.buf);
	struct json_value *v = json_parse(c.out.buf, c.out.len, &err);
	CHECK_MSG(v, "not JSON (%s): %s", err.buf, c.out.buf);
	test_keep_json_as("sim", c.out.buf, c.out.len);
	strbuf_addstr(text, c.out.buf);
	child_release(&c);
	strbuf_release(&err);
	return v;
}

static double num(const struct json_value *v, const char *path)
{
	const struct json_value *x = json_path(v, path);
	CHECK_MSG(x && x->type == JSON_NUMBER, "no number at '%s'", path);
	return x->number;
}

/* [lo, hi] at key, lo <= mean <= hi */
static double ci_width(const struct json_value *v, const char *key, double mean)
{
	const struct json_value *a = json_get(v, key);
	CHECK_MSG(a && a->type == JSON_ARRAY && a->nr == 2, "no [lo, hi] at '%s'", key);
	double lo = a->items[0]->number, hi = a->items[1]->number;
	CHECK_MSG(lo <= mean && mean <= hi, "%s [%g, %g] leaves out the mean %g", key, lo, hi,
		  mean);
	return hi - lo;
}

TEST_TIMEOUT(sim_replicas_mean_and_ci95_narrow_with_more, 180)
{
	/* software crashes only, ~19 a day: ETTR varies from seed to seed by the draws alone */
	const char *model = model_file("one.json", one_class_model(0.3));
	const char *a[] = { "sim", "--failures", model, "--gpus", "64", "--spares", "4", "--days",
			    "1", "--step-time", "60", "--seed", "7", "--json", NULL, NULL, NULL };
	struct strbuf plain = STRBUF_INIT, one = STRBUF_INIT;
	/* one replica is the run without the option, byte for byte, and says nothing new */
	json_free(sim_json(a, &plain));
	a[14] = "--replicas";
	a[15] = "1";
	json_free(sim_json(a, &one));
	CHECK_STR(one.buf, plain.buf);
	CHECK_NOT_CONTAINS(one.buf, "\"replicas\"");
	CHECK_NOT_CONTAINS(one.buf, "_ci95");

	/* four replicas: seeds 7 to 10; the mean is theirs */
	double ettr_sum = 0;
	for (int s = 7; s <= 10; s++) {
		char seed[8];
		snprintf(seed, sizeof(seed), "%d", s);
		const char *b[] = { "sim", "--failures", model, "--gpus", "64", "--spares", "4",
				    "--days", "1", "--step-time", "60", "--seed", seed, "--json",
				    NULL };
		struct json_value *v = sim_json(b, NULL);
		ettr_sum += num(v, "ettr");
		json_free(v);
	}
	a[15] = "4";
	struct strbuf text4 = STRBUF_INIT;
	struct json_value *v4 = sim_json(a, &text4);
	test_keep_json_as("sim", text4.buf, text4.len);
	CHECK_INT(num(v4, "replicas"), 4);
	double e4 = num(v4, "ettr");
	CHECK_MSG(fabs(e4 - ettr_sum / 4) < 2e-6, "mean ETTR %.6f, the replicas' %.6f", e4,
		  ettr_sum / 4);
	double w4 = ci_width(v4, "ettr_ci95", e4);
	ci_width(v4, "goodput_ci95", num(v4, "goodput"));
	ci_width(v4, "interruptions_ci95", num(v4, "interruptions"));
	CHECK(w4 > 0);
	a[15] = "16";
	struct json_value *v16 = sim_json(a, NULL);
	double w16 = ci_width(v16, "ettr_ci95", num(v16, "ettr"));
	CHECK_MSG(w16 < w4 / 1.5, "the 95 %% interval of 16 replicas (%.4f) is not narrower than "
		  "that of 4 (%.4f)", w16, w4);
	/* the text says it too */
	const char *t[] = { "sim", "--failures", model, "--gpus", "64", "--spares", "4", "--days",
			    "1", "--step-time", "60", "--seed", "7", "--replicas", "4", NULL };
	struct child c;
	test_run_vigil(&c, t, sim_env);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "  replicas        4 (seeds 7 to 10)");
	CHECK_CONTAINS(c.out.buf, "  ETTR            0.");
	child_release(&c);
	json_free(v4);
	json_free(v16);
	strbuf_release(&plain);
	strbuf_release(&one);
	strbuf_release(&text4);
}

TEST_TIMEOUT(sim_sweep_gives_one_row_per_value, 180)
{
	const char *model = model_file("hosts.json", hosts_model);
	const char *a[] = { "sim", "--failures", model, "--gpus", "64", "--spares", "2", "--days",
			    "1", "--step-time", "60", "--sweep", "spares=4,0,1", "--sweep",
			    "gpus=32,64", "--json", NULL };
	struct strbuf text = STRBUF_INIT;
	struct json_value *v = sim_json(a, &text);
	test_keep_json_as("sim", text.buf, text.len);
	const struct json_value *rows = json_get(v, "sweep");
	CHECK(rows && rows->type == JSON_ARRAY);
	CHECK_INT(rows ? rows->nr : 0, 5);
	const char *want[][2] = { { "spares", "0" }, { "spares", "1" }, { "spares", "4" },
				  { "gpus", "32" }, { "gpus", "64" } };
	for (size_t i = 0; rows && i < rows->nr && i < 5; i++) {
		const struct json_value *r = rows->items[i];
		CHECK_STR(json_get_string(r, "parameter"), want[i][0]);
		CHECK_INT(num(r, "value"), atoi(want[i][1]));
		CHECK(num(r, "ettr") > 0 && num(r, "ettr") < 1);
		CHECK(json_path(r, "lost_seconds_by_cause.restart") != NULL);
	}
	/* the row that is the base run (64 GPUs) is the base, the same seed: the same figures */
	CHECK_MSG(fabs(num(rows->items[4], "ettr") - num(v, "ettr")) < 1e-9,
		  "gpus=64 %.6f, the base %.6f", num(rows->items[4], "ettr"), num(v, "ettr"));
	/* no spares: the job waits for repairs; more spares, fewer requeues */
	CHECK(num(rows->items[0], "spares_exhausted_share") == 1);
	CHECK(num(rows->items[0], "ettr") <= num(rows->items[2], "ettr"));
	/* half the GPUs, about half the interruptions */
	CHECK(num(rows->items[3], "interruptions") < num(rows->items[4], "interruptions"));
	/* recommended_spares from the sweep: the fewest swept that did not run short */
	const struct json_value *rs = json_get(v, "recommended_spares");
	CHECK(rs != NULL);
	for (size_t i = 0; rs && rs->type == JSON_NUMBER && i < 3; i++)
		if (num(rows->items[i], "value") < rs->number)
			CHECK(num(rows->items[i], "spares_exhausted_share") > 0.01);
	/* no checkpoint sweep: no recommended interval */
	const struct json_value *rc = json_get(v, "recommended_checkpoint_every_s");
	CHECK(rc && rc->type == JSON_NULL);
	json_free(v);
	/* the text: a table per sweep */
	const char *t[] = { "sim", "--failures", model, "--gpus", "64", "--spares", "2", "--days",
			    "1", "--step-time", "60", "--sweep", "gpus=32,64", NULL };
	struct child c;
	test_run_vigil(&c, t, sim_env);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "  sweep gpus ");
	CHECK_CONTAINS(c.out.buf, "\n    32 ");
	child_release(&c);
	strbuf_release(&text);
}

/*
 * Young/Daly (the validation 2): one class, a crash seen at once, a fixed restart.
 * M = 7,200 s for 8 GPUs (1.5 faults a GPU-day), C = 10 s: sqrt(2 M C) = 379.5 s. The automatic
 * sweep (0.25x to 4x) recommends an interval within 10 % of it; the swept interval nearest it
 * beats the ends; and ETTR there is within 0.01 of 1 - (C/T + (T/2 + R + D)/M), R and D the
 * restart and detection per interruption the run measured.
 */
TEST_TIMEOUT(sim_recommended_checkpoint_is_young_daly, 240)
{
	const char *model = model_file("one.json", one_class_model(1.5));
	const char *a[] = { "sim", "--failures", model, "--gpus", "8", "--spares", "0", "--days",
			    "20", "--step-time", "38", "--checkpoint-cost", "10", "--restart-cost",
			    "30", "--seed", "1", "--sweep", "checkpoint-every", "--json", NULL };
	struct strbuf text = STRBUF_INIT;
	struct json_value *v = sim_json_slow(a, &text);
	const double C = 10;
	double M = num(v, "mtbf_s"), yd = num(v, "young_daly_checkpoint_every_s");
	CHECK_MSG(fabs(M - 7200) < 1 && fabs(yd - sqrt(2 * 7200 * C)) < 1, "M %.1f, Young/Daly %.1f",
		  M, yd);
	double rec = num(v, "recommended_checkpoint_every_s");
	CHECK_MSG(fabs(rec - yd) <= 0.1 * yd, "recommended %.0f s, Young/Daly %.0f s", rec, yd);
	const struct json_value *rows = json_get(v, "sweep");
	CHECK(rows && rows->type == JSON_ARRAY && rows->nr == 9);
	/* 0.25x .. 4x in whole steps of 38 s */
	CHECK_INT(num(rows->items[0], "value"), 76);
	CHECK_INT(num(rows->items[4], "value"), 380);
	CHECK_INT(num(rows->items[8], "value"), 1520);
	const struct json_value *mid = rows->items[4];
	double e = num(mid, "ettr"), n = num(mid, "interruptions");
	CHECK(n > 100);
	CHECK_MSG(e > num(rows->items[0], "ettr") && e > num(rows->items[8], "ettr"),
		  "ETTR at 380 s %.4f, at 76 s %.4f, at 1520 s %.4f", e,
		  num(rows->items[0], "ettr"), num(rows->items[8], "ettr"));
	double R = num(mid, "lost_seconds_by_cause.restart") / n,
	       D = num(mid, "lost_seconds_by_cause.detection") / n, T = 380,
	       closed = 1 - (C / T + (T / 2 + R + D) / M);
	CHECK_MSG(fabs(e - closed) <= 0.01, "ETTR %.4f, closed form %.4f (R %.1f D %.1f)", e,
		  closed, R, D);
	CHECK(json_get(v, "recommended_checkpoint_every_at_edge") &&
	      !json_get(v, "recommended_checkpoint_every_at_edge")->boolean);
	json_free(v);
	strbuf_release(&text);
}

static long spares_for(const char *model, const char *risk)
{
	const char *a[] = { "sim", "--failures", model, "--gpus", "64", "--spares", "16", "--days",
			    "1", "--step-time", "60", "--replicas", "10", "--spares-risk", risk,
			    "--json", NULL };
	struct json_value *v = sim_json(a, NULL);
	const struct json_value *k = json_get(v, "recommended_spares");
	CHECK_MSG(k && k->type == JSON_NUMBER, "no recommended_spares at risk %s", risk);
	long n = (long)k->number;
	if (!strcmp(risk, "0.01")) /* no risk at all: the most any replica used */
		CHECK_INT(n, num(v, "spares_used_max"));
	json_free(v);
	return n;
}

TEST_TIMEOUT(sim_recommended_spares_fall_with_the_risk, 180)
{
	const char *model = model_file("hosts.json", hosts_model);
	long k1 = spares_for(model, "0.01"), k3 = spares_for(model, "0.3"),
	     k9 = spares_for(model, "0.9");
	CHECK_MSG(k1 >= k3 && k3 >= k9 && k1 > k9, "spares at risks 1 %%, 30 %%, 90 %%: %ld %ld %ld",
		  k1, k3, k9);
}

/* The browser on url: the DOM on *dom, its log (console messages included) on *log. */
static void browse(const char *url, struct strbuf *dom, struct strbuf *log)
{
	struct strbuf profile = STRBUF_INIT, home = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&profile, "--user-data-dir=%s/chromium-profile", test_tmpdir());
	strbuf_addf(&home, "HOME=%s", test_tmpdir());
	/* --enable-logging: the page's console messages (an SVG attribute the browser cannot
	 * read is "CONSOLE ... Error: <rect> attribute height: ...") come on stderr */
	const char *argv[] = { test_browser(), "--no-sandbox", "--headless", "--disable-gpu",
			       "--window-size=1200,1600", "--enable-logging=stderr", "--v=0",
			       profile.buf, "--dump-dom", url, NULL };
	const char *env[] = { home.buf, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 90000;
	c.timeout_name = "the browser's deadline";
	c.out_cap = 8u << 20;
	CHECK_MSG(child_run(&c, &err) == 0, "cannot run the browser: %s", err.buf);
	CHECK_MSG(c.exited && c.exit_code == 0, "the browser failed (%d)", c.exit_code);
	strbuf_addstr(dom, c.out.buf);
	strbuf_addstr(log, c.err.buf);
	child_release(&c);
	strbuf_release(&profile);
	strbuf_release(&home);
	strbuf_release(&err);
}

TEST_TIMEOUT(sim_html_page_renders_without_console_errors, 240)
{
	/* the model's source is free text: it reaches the page, escaped */
	struct strbuf m = STRBUF_INIT, page = STRBUF_INIT, url = STRBUF_INIT, dom = STRBUF_INIT,
		      log = STRBUF_INIT, html = STRBUF_INIT;
	const char *src = strstr(hosts_model, "test: hosts");
	CHECK(src != NULL);
	strbuf_add(&m, hosts_model, (size_t)(src - hosts_model));
	strbuf_addstr(&m, "<script>alert(1)</script> & 'q'");
	strbuf_addstr(&m, src + strlen("test: hosts"));
	const char *model = model_file("hostile.json", m.buf);
	strbuf_addf(&page, "%s/sim.html", test_tmpdir());
	const char *a[] = { "sim", "--failures", model, "--gpus", "64", "--spares", "2", "--days",
			    "1", "--step-time", "60", "--replicas", "2", "--sweep", "gpus=32,64,128",
			    "--sweep", "checkpoint-every=600,1800,3600", "--html", page.buf, NULL };
	struct child c;
	test_run_vigil(&c, a, sim_env);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "The page: ");
	child_release(&c);
	CHECK_INT(read_file_bounded(page.buf, &html, 4 << 20, NULL), READ_OK);
	struct stat st;
	CHECK(stat(page.buf, &st) == 0 && (st.st_mode & 0777) == 0644);
	CHECK_NOT_CONTAINS(html.buf, "<script");
	CHECK_NOT_CONTAINS(html.buf, " src=");
	CHECK_NOT_CONTAINS(html.buf, " href=");
	CHECK_CONTAINS(html.buf, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;q&#39;");
	if (!test_browser())
		SKIP("chromium-headless-shell is not installed (tests/setup-deps installs it)");
	strbuf_addf(&url, "file://%s", page.buf);
	browse(url.buf, &dom, &log);
	CHECK_CONTAINS(dom.buf, "<svg id=\"ettr-gpus\"");
	CHECK_CONTAINS(dom.buf, "<svg id=\"ettr-checkpoint\"");
	CHECK_CONTAINS(dom.buf, "<svg id=\"lost\"");
	CHECK_CONTAINS(dom.buf, "<polyline class=\"ettr\"");
	CHECK_CONTAINS(dom.buf, "<circle class=\"point\"");
	CHECK_CONTAINS(dom.buf, "<line class=\"ci\"");
	CHECK_CONTAINS(dom.buf, "<line class=\"young-daly\"");
	CHECK_CONTAINS(dom.buf, "<line class=\"recommended\"");
	CHECK_CONTAINS(dom.buf, "<rect class=\"cause\"");
	CHECK_CONTAINS(dom.buf, "<text class=\"policy\"");
	CHECK_CONTAINS(dom.buf, "<table id=\"sweep\">");
	CHECK_CONTAINS(dom.buf, "<span id=\"source\">&lt;script&gt;alert(1)&lt;/script&gt;");
	CHECK_NOT_CONTAINS(dom.buf, "<script");
	/* no console message at all: an SVG attribute the browser could not read is one */
	CHECK_MSG(!strstr(log.buf, ":CONSOLE"), "the browser's console:\n%s", log.buf);
	strbuf_release(&m);
	strbuf_release(&page);
	strbuf_release(&url);
	strbuf_release(&dom);
	strbuf_release(&log);
	strbuf_release(&html);
}

TEST(sim_html_refuses_a_planted_link_and_hostile_class_names)
{
	const char *model = model_file("one.json", one_class_model(0.01));
	struct strbuf link = STRBUF_INIT, victim = STRBUF_INIT, got = STRBUF_INIT;
	strbuf_addf(&victim, "%s/victim", test_tmpdir());
	test_write(test_tmpdir(), "victim", "precious\n");
	strbuf_addf(&link, "%s/page.html", test_tmpdir());
	CHECK(symlink(victim.buf, link.buf) == 0);
	const char *a[] = { "sim", "--failures", model, "--gpus", "8", "--days", "0.1", "--html",
			    link.buf, NULL };
	struct child c;
	test_run_vigil(&c, a, sim_env);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	CHECK_STR(c.out.buf, "");
	child_release(&c);
	CHECK_INT(read_file_bounded(victim.buf, &got, 1024, NULL), READ_OK);
	CHECK_STR(got.buf, "precious\n");
	/* a class name is the only other text of a model that reaches the page: one that is
	 * not [a-z0-9_] is refused before any run, and no page is written */
	const char *bad = model_file("bad.json",
				     "{\"rate_unit\": \"per_gpu_day\", \"classes\": [{\"name\": "
				     "\"<b>x</b>\", \"rate\": 1, \"seen_as\": \"crash\", "
				     "\"host_fault\": false, \"check_sees\": false, "
				     "\"repair_hours\": 0, \"check_says\": \"\"}]}\n");
	strbuf_reset(&link);
	strbuf_addf(&link, "%s/fresh.html", test_tmpdir());
	const char *b[] = { "sim", "--failures", bad, "--gpus", "8", "--days", "0.1", "--html",
			    link.buf, NULL };
	test_run_vigil(&c, b, sim_env);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "'classes[0].name': wants 1 to 47 of a-z, 0-9 and _");
	CHECK(access(link.buf, F_OK) != 0);
	child_release(&c);
	strbuf_release(&link);
	strbuf_release(&victim);
	strbuf_release(&got);
}

/* The page reads "policies" when it is there (the other policies' runs put their own
 * lost_seconds_by_cause under it): one stacked bar each, their names escaped. */
TEST(sim_html_draws_one_bar_per_policy)
{
	static const char js[] =
		"{\"ettr\": 0.9, \"goodput\": 0.8, \"interruptions\": 3,"
		" \"lost_seconds_by_cause\": {\"restart\": 100, \"detection\": 5},"
		" \"young_daly_checkpoint_every_s\": 400, \"recommended_checkpoint_every_s\": null,"
		" \"params\": {\"gpus\": 64, \"days\": 2},"
		" \"policies\": {"
		"  \"vigil\": {\"ettr\": 0.9, \"lost_seconds_by_cause\": {\"restart\": 100}},"
		"  \"torchrun\": {\"ettr\": 0.7, \"lost_seconds_by_cause\": {\"restart\": 900,"
		"   \"detection\": 600}},"
		"  \"<i>x</i>\": {\"ettr\": 0.5, \"lost_seconds_by_cause\": {\"<b>odd</b>\": 7200}}}}";
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_INT(sim_html(js, strlen(js), NULL, &out, &err), 0);
	size_t bars = 0;
	for (const char *p = out.buf; (p = strstr(p, "<text class=\"policy\"")); p++)
		bars++;
	CHECK_INT(bars, 3);
	CHECK_CONTAINS(out.buf, ">torchrun</text>");
	CHECK_CONTAINS(out.buf, ">&lt;i&gt;x&lt;/i&gt;</text>");
	CHECK_CONTAINS(out.buf, "&lt;b&gt;odd&lt;/b&gt; 2.00 h");
	CHECK_NOT_CONTAINS(out.buf, "<i>");
	CHECK_NOT_CONTAINS(out.buf, "<b>odd");
	/* no sweep: said, no empty chart */
	CHECK_CONTAINS(out.buf, "No gpus sweep");
	CHECK_NOT_CONTAINS(out.buf, "id=\"ettr-gpus\"");
	/* not an object: refused */
	strbuf_reset(&out);
	CHECK_INT(sim_html("[1]", 3, NULL, &out, &err), -1);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* With several policies, each that has its own checkpoint-every rows draws its own curve in
 * the chart (the first policy's from the top level), named and escaped; one without rows
 * draws none. */
TEST(sim_html_draws_one_checkpoint_curve_per_policy)
{
	static const char js[] =
		"{\"ettr\": 0.9, \"young_daly_checkpoint_every_s\": 400,"
		" \"recommended_checkpoint_every_s\": 450, \"params\": {\"policy\": \"vigil\"},"
		" \"sweep\": [{\"parameter\": \"checkpoint_every_s\", \"value\": 200, \"ettr\": 0.88},"
		"  {\"parameter\": \"checkpoint_every_s\", \"value\": 800, \"ettr\": 0.89}],"
		" \"policies\": {"
		"  \"vigil\": {\"ettr\": 0.9, \"sweep\": [{\"parameter\": \"checkpoint_every_s\","
		"   \"value\": 200, \"ettr\": 0.88}]},"
		"  \"torchrun\": {\"ettr\": 0.3, \"sweep\": ["
		"   {\"parameter\": \"checkpoint_every_s\", \"value\": 200, \"ettr\": 0.31,"
		"    \"ettr_ci95\": [0.2, 0.4]},"
		"   {\"parameter\": \"checkpoint_every_s\", \"value\": 800, \"ettr\": 0.25}]},"
		"  \"manual\": {\"ettr\": 0.5},"
		"  \"<i>x</i>\": {\"ettr\": 0.5, \"sweep\": [{\"parameter\": \"checkpoint_every_s\","
		"   \"value\": 400, \"ettr\": 0.6}]}}}";
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_INT(sim_html(js, strlen(js), NULL, &out, &err), 0);
	const char *chart = strstr(out.buf, "id=\"ettr-checkpoint\"");
	CHECK(chart != NULL);
	size_t lines = 0;
	for (const char *p = chart; p && (p = strstr(p, "<polyline class=\"ettr\"")); p++)
		lines++;
	CHECK_INT(lines, 3); /* vigil (top level), torchrun, <i>x</i>; manual has no rows */
	CHECK_CONTAINS(chart, ">vigil</text>");
	CHECK_CONTAINS(chart, ">torchrun</text>");
	CHECK_CONTAINS(chart, ">&lt;i&gt;x&lt;/i&gt;</text>");
	CHECK_CONTAINS(chart, "torchrun 200: ETTR 0.3100 [0.2000, 0.4000]");
	CHECK_NOT_CONTAINS(chart, ">manual</text>");
	CHECK_NOT_CONTAINS(out.buf, "<i>");
	strbuf_release(&out);
	strbuf_release(&err);
}

TEST(sim_sweep_usage_errors_exit_2)
{
	const char *bad[][4] = {
		{ "--sweep", "bogus=1" },
		{ "--sweep", "gpus" },             /* a list wanted */
		{ "--sweep", "gpus=12" },          /* not whole nodes of 8 */
		{ "--sweep", "spares=1,,2" },
		{ "--sweep", "checkpoint-every=1" }, /* shorter than a step */
		{ "--replicas", "0" },
		{ "--replicas", "1001" },
		{ "--spares-risk", "1.5" },
		{ "--html", "" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = { "sim", "--days", "0.1", bad[i][0], bad[i][1], NULL };
		struct child c;
		test_run_vigil(&c, a, sim_env);
		CHECK_MSG(c.exited && c.exit_code == 2, "vigil sim %s '%s': exit %d", bad[i][0],
			  bad[i][1], c.exit_code);
		CHECK_CONTAINS(c.err.buf, "vigil sim: ");
		child_release(&c);
	}
	const char *twice[] = { "sim", "--sweep", "spares=1", "--sweep", "spares=2", NULL };
	struct child c;
	test_run_vigil(&c, twice, sim_env);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--sweep spares is given twice");
	child_release(&c);
}

/* The policy's object under "policies" of a sim JSON. */
static const struct json_value *policy_of(const struct json_value *v, const char *name)
{
	const struct json_value *p = json_get(json_get(v, "policies"), name);
	CHECK_MSG(p && p->type == JSON_OBJECT, "no policies.%s", name);
	return p;
}

/*
 * --policy with --replicas and --sweep (docs/SIM.md, "Policies, replicas and sweeps
 * together"): every policy runs the whole study over the same seeds, so under "policies" each
 * has its own means (the mean of its own runs seed by seed), 95 % intervals, sweep rows and
 * recommended checkpoint interval; the top level is the first policy's; the same seed gives
 * the same bytes; a replay refuses replicas (they would all replay the same faults).
 */
TEST_TIMEOUT(sim_policies_with_replicas_and_sweep_each_get_ci95_and_a_recommendation, 240)
{
	const char *model = model_file("hosts.json", hosts_model);
	const char *a[] = { "sim", "--failures", model, "--gpus", "64", "--spares", "4", "--days",
			    "1", "--step-time", "60", "--checkpoint-cost", "60", "--seed", "5",
			    "--policy", "vigil,torchrun", "--replicas", "3", "--sweep",
			    "checkpoint-every=600,1800,3600,7200", "--json", NULL };
	struct strbuf text = STRBUF_INIT, again = STRBUF_INIT;
	struct json_value *v = sim_json_slow(a, &text);
	json_free(sim_json_slow(a, &again));
	CHECK_STR(again.buf, text.buf); /* deterministic for a seed */
	const char *names[] = { "vigil", "torchrun" };
	double ettr[2] = { 0, 0 };
	for (int i = 0; i < 2; i++) {
		const struct json_value *p = policy_of(v, names[i]);
		CHECK_INT(num(p, "replicas"), 3);
		ettr[i] = num(p, "ettr");
		CHECK(ci_width(p, "ettr_ci95", ettr[i]) > 0);
		ci_width(p, "goodput_ci95", num(p, "goodput"));
		double rec = num(p, "recommended_checkpoint_every_s");
		CHECK_MSG(rec >= 600 && rec <= 7200, "%s: recommended %g s", names[i], rec);
		CHECK(json_get(p, "recommended_checkpoint_every_at_edge") != NULL);
		CHECK(json_get(p, "recommended_spares") != NULL);
		const struct json_value *rows = json_get(p, "sweep");
		CHECK_MSG(rows && rows->type == JSON_ARRAY && rows->nr == 4, "%s: no 4 sweep rows",
			  names[i]);
		for (size_t k = 0; rows && k < rows->nr; k++) {
			const struct json_value *r = rows->items[k];
			CHECK_STR(json_get_string(r, "parameter"), "checkpoint_every_s");
			ci_width(r, "ettr_ci95", num(r, "ettr"));
		}
		/* the 1800 s row is the base (the same seeds): the policy's own figures */
		if (rows && rows->nr == 4)
			CHECK_MSG(fabs(num(rows->items[1], "ettr") - ettr[i]) < 1e-9,
				  "%s: row 1800 %.6f, the base %.6f", names[i],
				  num(rows->items[1], "ettr"), ettr[i]);
		/* the mean is this policy's own runs', seed by seed */
		double sum = 0;
		for (int s = 5; s <= 7; s++) {
			char seed[8];
			snprintf(seed, sizeof(seed), "%d", s);
			const char *b[] = { "sim", "--failures", model, "--gpus", "64", "--spares",
					    "4", "--days", "1", "--step-time", "60",
					    "--checkpoint-cost", "60", "--seed", seed, "--policy",
					    names[i], "--json", NULL };
			struct json_value *one = sim_json(b, NULL);
			sum += num(one, "ettr");
			json_free(one);
		}
		CHECK_MSG(fabs(ettr[i] - sum / 3) < 2e-6, "%s: mean ETTR %.6f, its runs' %.6f",
			  names[i], ettr[i], sum / 3);
	}
	/* torchrun excludes no host: on the same faults it keeps less */
	CHECK_MSG(ettr[1] < ettr[0], "torchrun %.4f, vigil %.4f", ettr[1], ettr[0]);
	/* the top level is the first policy's */
	const struct json_value *pv = policy_of(v, "vigil");
	CHECK(fabs(num(v, "ettr") - num(pv, "ettr")) < 1e-12);
	CHECK(fabs(num(v, "recommended_checkpoint_every_s") -
		   num(pv, "recommended_checkpoint_every_s")) < 1e-9);
	const struct json_value *ci = json_get(v, "ettr_ci95"), *cip = json_get(pv, "ettr_ci95");
	CHECK(ci && cip && ci->nr == 2 && cip->nr == 2 &&
	      fabs(ci->items[0]->number - cip->items[0]->number) < 1e-12);
	json_free(v);

	/* the text: the table of means, then each policy's intervals, rows and recommendation */
	a[21] = NULL;
	struct child c;
	test_run_vigil(&c, a, sim_env);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "policies (means of 3 replicas, the same faults in each)");
	CHECK_CONTAINS(c.out.buf, "\n  policy vigil:\n");
	CHECK_CONTAINS(c.out.buf, "\n  policy torchrun:\n");
	const char *t = strstr(c.out.buf, "\n  policy torchrun:\n");
	CHECK(t && strstr(t, "  sweep checkpoint-every") && strstr(t, "recommended     checkpoint"));
	child_release(&c);

	/* a replay with replicas, or with a gpus sweep: refused, said */
	test_write(test_tmpdir(), "sched.json", "[{\"at_s\": 100, \"class\": \"gpu\", \"node\": 0}]");
	char sched[4096];
	snprintf(sched, sizeof(sched), "%s/sched.json", test_tmpdir());
	const char *r[][2] = { { "--replicas", "2" }, { "--sweep", "gpus=32,64" } };
	for (int i = 0; i < 2; i++) {
		const char *b[] = { "sim", "--failures", model, "--gpus", "64", "--days", "0.1",
				    "--schedule", sched, r[i][0], r[i][1], NULL };
		test_run_vigil(&c, b, sim_env);
		CHECK_MSG(c.exited && c.exit_code == 2, "%s with --schedule: exit %d", r[i][0],
			  c.exit_code);
		CHECK_CONTAINS(c.err.buf, "with --schedule");
		child_release(&c);
	}
	strbuf_release(&text);
	strbuf_release(&again);
}
