/*
 * test_qualify_card.c: what reads a finished 'vigil qualify' scorecard (src/qualify/card.h),
 * through the library (the command comes with the lead's branch): the --html page of the sample
 * card tests/data/qualify/card-a.json (node names, heat cells and their colours, the two SVG
 * plots), a hostile node name escaped, a partial card's banner, broken cards that still render
 * (and every member of card-a swapped for a value of another type), the page in a headless
 * browser with no console error; --compare of card-a against card-b.json (another provider: 8
 * nodes, faster storage, slower bf16): rows, winners, noise, summary, the text table, the JSON
 * kept for docs/schema/qualify-compare.json, and the refusal of what is not a scorecard; the
 * page with the comparison (--html with --compare), in the browser too.
 */
#include "../harness.h"
#include "../../src/qualify/card.h"
#include "../../src/lib/fileio.h"

#include <math.h>

static struct json_value *load_card(const char *name)
{
	struct strbuf path = STRBUF_INIT, text = STRBUF_INIT, err = STRBUF_INIT;
	test_src_path(&path, "tests/data/qualify/");
	strbuf_addstr(&path, name);
	CHECK_MSG(read_file_bounded(path.buf, &text, 4u << 20, &err) == 0, "%s", err.buf);
	struct json_value *v = json_parse(text.buf, text.len, &err);
	CHECK_MSG(v, "%s: %s", name, err.buf);
	strbuf_release(&path);
	strbuf_release(&text);
	strbuf_release(&err);
	return v;
}

static struct json_value *parse(const char *text)
{
	struct strbuf err = STRBUF_INIT;
	struct json_value *v = json_parse(text, strlen(text), &err);
	CHECK_MSG(v, "%s", err.buf);
	strbuf_release(&err);
	return v;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The page of card, which must render. */
static void page_of(const struct json_value *card, struct strbuf *html)
{
	struct strbuf err = STRBUF_INIT;
	strbuf_reset(html);
	CHECK_MSG(qualify_html(card, NULL, html, &err) == 0, "qualify_html: %s", err.buf);
	strbuf_release(&err);
}

/* Nothing a page must never hold: a script, anything fetched, a coordinate that is not a
 * number (the browser logs it as an error and drops the element). */
static void check_self_contained(const char *html)
{
	CHECK_NOT_CONTAINS(html, "<script");
	CHECK_NOT_CONTAINS(html, "<img");
	CHECK_NOT_CONTAINS(html, " src=\"");
	CHECK_NOT_CONTAINS(html, "href=\"");
	CHECK_NOT_CONTAINS(html, "url(");
	CHECK_NOT_CONTAINS(html, "@import");
	static const char *const bad[] = { "nan\"", "inf\"", "nan,", "inf,", ",nan", ",inf",
					   " nan ", "\"nan", "\"inf", "\"-nan", "\"-inf" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_NOT_CONTAINS(html, bad[i]);
	size_t n = strlen(html);
	CHECK_MSG(n > 7 && !strcmp(html + n - 8, "</html>\n"), "the page does not end: %.200s",
		  n > 200 ? html + n - 200 : html);
}

/* Replace the string v holds (a node's name, a cluster). */
static void set_string(struct json_value *v, const char *s)
{
	CHECK(v && v->type == JSON_STRING);
	free(v->string);
	v->string = xstrdup(s);
	v->string_len = strlen(s);
}

TEST(qualify_html_card_a_has_nodes_heat_cells_and_two_plots)
{
	struct json_value *card = load_card("card-a.json");
	struct strbuf html = STRBUF_INIT;
	page_of(card, &html);
	check_self_contained(html.buf);
	CHECK_CONTAINS(html.buf, "<title>vigil qualify: provider-a (job 4242)</title>");
	CHECK_CONTAINS(html.buf, "<span id=\"verdict\" class=\"v-unhealthy\">unhealthy</span>");
	CHECK_CONTAINS(html.buf, "<span id=\"time\">2026-12-04T10:00:00Z</span>");
	CHECK_CONTAINS(html.buf, "1 of 4 nodes failed a stage (n2: gpu)");
	CHECK_NOT_CONTAINS(html.buf, "id=\"partial\"");
	/* the stages: status, wall against budget */
	CHECK_CONTAINS(html.buf, "<td class=\"s-failed\">failed</td><td class=\"n\">640.2</td>"
				 "<td class=\"n\">900</td>");
	CHECK_CONTAINS(html.buf, "style=\"width:85px\"></span> 71 %");
	CHECK_CONTAINS(html.buf, "<td class=\"s-skipped\">skipped</td>");
	/* the heat table: a row per node, a cell per figure */
	for (int i = 1; i <= 4; i++) {
		char th[64];
		snprintf(th, sizeof(th), "<th class=\"node\">n%d</th>", i);
		CHECK_CONTAINS(html.buf, th);
	}
	CHECK_INT(count(html.buf, "<td class=\"n heat "), 4 * 9);
	/* the IB pairs and the burn-in step */
	CHECK_CONTAINS(html.buf, "<h2>InfiniBand</h2>");
	CHECK_CONTAINS(html.buf, "<tr><td>n1</td><td>n3</td><td class=\"n\">391.4</td>"
				 "<td class=\"s-passed\">passed</td>");
	CHECK_CONTAINS(html.buf, "<p id=\"burnin\">Burn-in: <span class=\"s-passed\">passed</span>: "
				 "stage 1 of 2: 6 of 6 pairs ok");
	/* n2's bf16 is 40 % below the median, its rank the card's, an outlier; its gpu stage failed
	 * and it is to be drained */
	CHECK_CONTAINS(html.buf, "<td class=\"n heat h0 outlier\" title=\"gemm_bf16_tflops 412 "
				 "TFLOP/s: 40.0 % worse than the median 686.5; rank 4 of 4; an "
				 "outlier\">412 &#9888;<sup>#4</sup></td>");
	CHECK_CONTAINS(html.buf, "<tr class=\"node failed\"><th class=\"node\">n2</th><td "
				 "class=\"action a-drain\">drain</td><td class=\"stage s-passed\">"
				 "pass</td><td class=\"stage s-failed\">FAIL</td>");
	CHECK_CONTAINS(html.buf, "<td class=\"action a-drain\">drain</td>");
	CHECK_INT(count(html.buf, "<td class=\"action a-keep\">keep</td>"), 3);
	/* fsync: lower is better, n1 3.4 % under the median is green; n4's storage red and marked */
	CHECK_CONTAINS(html.buf, "<td class=\"n heat h4\" title=\"fsync_p99_ms 38.20 ms: 3.4 % "
				 "better than the median 39.55; rank 2 of 4\">");
	CHECK_CONTAINS(html.buf, "<td class=\"n heat h0 outlier\" title=\"storage_write_mib_s "
				 "980 MiB/s: 51.7 % worse");
	/* HBM within 1 % everywhere: no red for the slowest of four close nodes */
	CHECK_CONTAINS(html.buf, "<td class=\"n heat h3\" title=\"hbm_copy_gbps 4090 GB/s: 0.4 % "
				 "worse than the median 4105.5; rank 4 of 4\">");
	/* the distribution: median, p5, worst with its node */
	CHECK_CONTAINS(html.buf, "<td>gemm_bf16_tflops</td><td>TFLOP/s</td><td>higher</td>"
				 "<td class=\"n\">4</td><td class=\"n\">686.5</td>");
	CHECK_CONTAINS(html.buf, "<td class=\"n\">412</td><td>n2</td>");
	/* two plots: busbw (two ops, dashed expectation) and the fsync CDF */
	CHECK_INT(count(html.buf, "<svg "), 2);
	CHECK_CONTAINS(html.buf, "<svg id=\"busbw\"");
	CHECK_CONTAINS(html.buf, "<svg id=\"fsync-cdf\"");
	CHECK_INT(count(html.buf, "<polyline class=\"busbw\""), 2);
	CHECK_INT(count(html.buf, "<polyline class=\"expected\""), 2);
	CHECK_CONTAINS(html.buf, "stroke-dasharray=\"6 4\"");
	CHECK_CONTAINS(html.buf, "<title>all_reduce at 4 nodes: 352 GB/s (expected 370)</title>");
	CHECK_INT(count(html.buf, "<polyline class=\"cdf\""), 1);
	CHECK_CONTAINS(html.buf, "<title>41 ms: 99.0 %</title>");
	CHECK_CONTAINS(html.buf, "<td>/lustre/scratch/qualify</td>");
	CHECK_CONTAINS(html.buf, "No training run (no --train).");
	CHECK_CONTAINS(html.buf, "<td>n2</td><td>vigil: qualify: gpu: GPU 3 bf16 412 TFLOP/s, "
				 "below the floor 552</td><td>yes</td>");
	CHECK_CONTAINS(html.buf, "To hand back to the provider: <b>n2</b>.");
	json_free(card);
	strbuf_release(&html);
}

TEST(qualify_html_escapes_hostile_names)
{
	struct json_value *card = load_card("card-a.json");
	struct strbuf html = STRBUF_INIT;
	set_string((struct json_value *)json_path(card, "nodes.0.node"),
		   "<script>alert(1)</script>");
	set_string((struct json_value *)json_path(card, "cluster"), "\"><img src=x onerror=alert(2)>");
	set_string((struct json_value *)json_path(card, "nodes.1.reason"), "red \x1b[31m & 'quoted'");
	set_string((struct json_value *)json_path(card, "nccl.0.op"), "</text><script>x()</script>");
	page_of(card, &html);
	check_self_contained(html.buf);
	CHECK_CONTAINS(html.buf, "<th class=\"node\">&lt;script&gt;alert(1)&lt;/script&gt;</th>");
	CHECK_CONTAINS(html.buf, "<title>vigil qualify: &quot;&gt;&lt;img src=x onerror=alert(2)&gt;");
	CHECK_NOT_CONTAINS(html.buf, "<img");
	CHECK_CONTAINS(html.buf, "<td class=\"reason\">red \\x1b[31m &amp; &#39;quoted&#39;</td>");
	CHECK_CONTAINS(html.buf, "&lt;/text&gt;&lt;script&gt;x()&lt;/script&gt;");
	json_free(card);
	strbuf_release(&html);
}

TEST(qualify_html_partial_card_has_the_banner)
{
	struct json_value *card = load_card("card-partial.json");
	struct strbuf html = STRBUF_INIT;
	page_of(card, &html);
	check_self_contained(html.buf);
	CHECK_CONTAINS(html.buf, "<div class=\"banner\" id=\"partial\"><b>Partial scorecard.</b> "
				 "The run stopped before every stage ran");
	CHECK_CONTAINS(html.buf, "<li><b>storage</b>: the budget ran out (1801 s of 1800 s)</li>");
	CHECK_CONTAINS(html.buf, "<li><b>train</b>: the budget ran out");
	CHECK_CONTAINS(html.buf, "<td class=\"s-not_run\">not_run</td>");
	CHECK_CONTAINS(html.buf, "<td class=\"stage s-not_run\">not_run</td>");
	CHECK_CONTAINS(html.buf, "The storage stage was not run.");
	CHECK_INT(count(html.buf, "<svg "), 1);
	CHECK_INT(count(html.buf, "<td class=\"n heat "), 4 * 5);
	/* a card that does not say whether it is complete is not taken as complete */
	struct json_value *a = load_card("card-a.json");
	for (size_t i = 0; i < a->nr; i++)
		if (!strcmp(a->keys[i], "complete"))
			a->items[i]->type = JSON_NULL;
	page_of(a, &html);
	CHECK_CONTAINS(html.buf, "The card does not say that it is complete, so it is read as "
				 "partial.");
	json_free(a);
	json_free(card);
	strbuf_release(&html);
}

/* Broken cards, written by hand: each renders, with "-" where a value is missing. */
static const char *const broken[] = {
	/* figures missing, nccl not an array, storage null */
	"{\"schema_version\":1,\"kind\":\"qualify\",\"cluster\":\"c\",\"nccl\":\"all_reduce\","
	"\"storage\":null,\"nodes\":[{\"node\":\"n1\",\"figures\":{\"gemm_bf16_tflops\":600},"
	"\"stages\":{\"node\":\"passed\"}},{\"node\":\"n2\"},7,null,\"n3\"]}",
	/* only the two members that make it a card */
	"{\"schema_version\":1,\"kind\":\"qualify\"}",
	/* every member of another type */
	"{\"schema_version\":1,\"kind\":\"qualify\",\"cluster\":5,\"job_id\":[],\"time\":{},"
	"\"verdict\":1,\"reason\":null,\"complete\":\"yes\",\"stages\":{},\"not_run\":\"x\","
	"\"nodes\":{},\"figures\":3,\"nccl\":{},\"storage\":[],\"train\":\"fast\","
	"\"to_drain\":{},\"to_return\":[1,{},null]}",
	/* odd numbers and points: zero medians and budgets, 0 ms, huge values, bad CDF pairs,
	 * one NCCL point, a falloff outside the range, unknown words */
	"{\"schema_version\":1,\"kind\":\"qualify\",\"stages\":[{\"name\":\"node\",\"status\":"
	"\"weird\",\"budget_s\":0,\"wall_s\":1e300},{\"status\":\"failed\"},{\"budget_s\":1e-300,"
	"\"wall_s\":1e300}],\"figures\":[{\"name\":\"f\",\"better\":\"higher\",\"median\":0},"
	"{\"name\":\"g\",\"better\":\"sideways\"},{\"better\":\"lower\"},{\"name\":\"f\"}],"
	"\"nodes\":[{\"node\":\"a\",\"figures\":{\"f\":1e308,\"g\":-1e308,\"h\":\"x\"},"
	"\"ranks\":{\"f\":-3},\"outliers\":\"f\",\"action\":\"burn\",\"stages\":{\"node\":7}},"
	"{\"node\":\"b\",\"figures\":{\"f\":0,\"h\":2},\"ranks\":{\"f\":1e300}}],"
	"\"nccl\":[{\"op\":\"all_reduce\",\"nodes\":2,\"busbw_gbps\":1e308,\"expected_gbps\":-1},"
	"{\"op\":\"x\",\"nodes\":1e308},{\"nodes\":4},7,{\"op\":\"y\",\"nodes\":8,\"busbw_gbps\":"
	"\"fast\"},{\"op\":\"z\",\"nodes\":3,\"busbw_gbps\":0}],\"nccl_falloff_nodes\":1e9,"
	"\"storage\":{\"fsync_ms\":7,\"fsync_cdf\":[[0,0],[1e308,1],[\"a\",1],[5],[3,-2],[2,9],7,"
	"[1e-300,0.5]]},\"train\":{\"mfu\":null,\"step_time_s\":\"1s\",\"x\":{}}}",
	/* a CDF of one point, an empty nccl list */
	"{\"schema_version\":1,\"kind\":\"qualify\",\"nccl\":[],\"storage\":{\"fsync_cdf\":"
	"[[10,1]]},\"train\":{}}",
};

TEST(qualify_html_renders_broken_cards)
{
	struct strbuf html = STRBUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(broken); i++) {
		struct json_value *card = parse(broken[i]);
		page_of(card, &html);
		check_self_contained(html.buf);
		json_free(card);
	}
	/* the first: "-" where the figure is missing, no plot where nothing can be drawn */
	struct json_value *card = parse(broken[0]);
	page_of(card, &html);
	CHECK_CONTAINS(html.buf, "<th class=\"node\">n2</th><td class=\"action a-other\">-</td>"
				 "<td class=\"stage s-not_run\">-</td><td class=\"n missing\">-</td>");
	CHECK_CONTAINS(html.buf, "No NCCL results between nodes (the card's nccl is not a list).");
	CHECK_CONTAINS(html.buf, "The storage stage was not run.");
	CHECK_CONTAINS(html.buf, "The card has no cluster figures.");
	CHECK_INT(count(html.buf, "<svg "), 0);
	json_free(card);
	/* the fourth: what could be read is drawn, the rest counted */
	card = parse(broken[3]);
	page_of(card, &html);
	CHECK_INT(count(html.buf, "<svg "), 2);
	CHECK_CONTAINS(html.buf, "NCCL entries could not be read or drawn");
	CHECK_CONTAINS(html.buf, "fsync_cdf points could not be read");
	CHECK_CONTAINS(html.buf, "<td class=\"action a-other\">burn</td>");
	json_free(card);
	strbuf_release(&html);
}

/* Each member of card-a, and of its first stage, node, figure, NCCL point and its storage, in
 * turn swapped for a value of every other type: the page always renders, whole. */
TEST(qualify_html_survives_every_member_of_another_type)
{
	struct json_value *card = load_card("card-a.json");
	struct json_value *others = parse("[null,7,\"x\",[],{},[1,\"a\",null,{},[2,3]],{\"a\":[]}]");
	struct strbuf html = STRBUF_INIT, err = STRBUF_INIT;
	const char *within[] = { "", "stages.0", "nodes.1", "nodes.1.figures", "nodes.1.stages",
				 "figures.0", "nccl.0", "storage", "storage.fsync_ms" };
	size_t pages = 0;
	for (size_t w = 0; w < ARRAY_SIZE(within); w++) {
		struct json_value *obj =
			(struct json_value *)(*within[w] ? json_path(card, within[w]) : card);
		CHECK_MSG(obj && obj->type == JSON_OBJECT, "%s", within[w]);
		for (size_t i = 0; i < obj->nr; i++) {
			if (!*within[w] && (!strcmp(obj->keys[i], "kind") ||
					    !strcmp(obj->keys[i], "schema_version")))
				continue;
			struct json_value *keep = obj->items[i];
			for (size_t k = 0; k < others->nr; k++) {
				obj->items[i] = others->items[k];
				strbuf_reset(&html);
				CHECK_MSG(qualify_html(card, NULL, &html, &err) == 0, "%s.%s: %s",
					  within[w], obj->keys[i], err.buf);
				check_self_contained(html.buf);
				pages++;
			}
			obj->items[i] = keep;
		}
	}
	CHECK(pages > 300);
	json_free(others);
	json_free(card);
	strbuf_release(&html);
	strbuf_release(&err);
}

TEST(qualify_html_refuses_what_is_not_a_scorecard)
{
	static const struct {
		const char *json, *err;
	} cases[] = {
		{ "[1,2]", "is not a qualify scorecard: not a JSON object" },
		{ "{\"schema_version\":1,\"verdict\":\"healthy\",\"checks\":[]}",
		  "is not a qualify scorecard: it has no \"kind\"" },
		{ "{\"schema_version\":1,\"kind\":\"check\"}",
		  "is not a qualify scorecard: its kind is \"check\"" },
		{ "{\"kind\":\"qualify\"}", "has no \"schema_version\"" },
		{ "{\"schema_version\":2,\"kind\":\"qualify\"}",
		  "is a scorecard of schema_version 2; this vigil reads 1" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct json_value *v = parse(cases[i].json);
		struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
		CHECK_INT(qualify_html(v, NULL, &out, &err), -1);
		CHECK_STR(err.buf, cases[i].err);
		CHECK_STR(out.buf, "");
		json_free(v);
		strbuf_release(&out);
		strbuf_release(&err);
	}
}

static void browse(const char *name, const struct json_value *card,
		   const struct json_value *old, struct strbuf *dom)
{
	struct strbuf html = STRBUF_INIT, page = STRBUF_INIT, url = STRBUF_INIT,
		      console = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_MSG(qualify_html(card, old, &html, &err) == 0, "qualify_html: %s", err.buf);
	strbuf_release(&err);
	strbuf_addf(&page, "%s/%s.html", test_tmpdir(), name);
	CHECK_INT(write_file(page.buf, html.buf, html.len, false, NULL), 0);
	strbuf_addf(&url, "file://%s", page.buf);
	strbuf_reset(dom);
	test_run_browser_console(url.buf, "--dump-dom", dom, &console);
	CHECK_MSG(!console.len, "the page %s wrote to the browser's console:\n%s", name,
		  console.buf);
	strbuf_release(&html);
	strbuf_release(&page);
	strbuf_release(&url);
	strbuf_release(&console);
}

TEST_TIMEOUT(qualify_html_renders_in_a_headless_browser, 300)
{
	if (!test_browser())
		SKIP("chromium-headless-shell is not installed (tests/setup-deps installs it)");
	struct json_value *card = load_card("card-a.json");
	struct strbuf dom = STRBUF_INIT;
	browse("card-a", card, NULL, &dom);
	/* the browser built both plots and the tables */
	CHECK_CONTAINS(dom.buf, "<svg id=\"busbw\"");
	CHECK_CONTAINS(dom.buf, "<svg id=\"fsync-cdf\"");
	CHECK_INT(count(dom.buf, "<polyline class=\"busbw\""), 2);
	CHECK_INT(count(dom.buf, "<polyline class=\"expected\""), 2);
	CHECK_CONTAINS(dom.buf, "<polyline class=\"cdf\"");
	CHECK_INT(count(dom.buf, "<circle class=\"point\""), 4 + 6);
	CHECK_CONTAINS(dom.buf, "<table id=\"heat\">");
	CHECK_INT(count(dom.buf, "<td class=\"n heat "), 36);

	/* a hostile name stays text: the browser finds no script element in the page */
	set_string((struct json_value *)json_path(card, "nodes.0.node"),
		   "<script>document.title='owned'</script>");
	browse("hostile", card, NULL, &dom);
	CHECK_NOT_CONTAINS(dom.buf, "<script");
	CHECK_CONTAINS(dom.buf, "&lt;script&gt;document.title='owned'&lt;/script&gt;");
	json_free(card);

	/* the odd numbers of a broken card make no attribute the browser rejects */
	card = parse(broken[3]);
	browse("broken", card, NULL, &dom);
	CHECK_CONTAINS(dom.buf, "<svg id=\"busbw\"");
	json_free(card);

	/* card-b compared with card-a (--html with --compare): the section renders, no console
	 * error, every row of the comparison there; and compared with a broken card */
	card = load_card("card-b.json");
	struct json_value *old = load_card("card-a.json");
	browse("compared", card, old, &dom);
	CHECK_CONTAINS(dom.buf, "<table id=\"compare\">");
	CHECK_INT(count(dom.buf, "<tr class=\"w-"), 44);
	CHECK_CONTAINS(dom.buf, "Compared with provider-a, job 4242");
	/* --train-groups: the groups' table, its words escaped */
	CHECK_CONTAINS(dom.buf, "<table id=\"train-groups\">");
	CHECK_CONTAINS(dom.buf, "<td>leaf-a</td><td>b-gpu-001, b-gpu-002, b-gpu-003, b-gpu-004</td>");
	CHECK_CONTAINS(dom.buf, "&lt;i&gt;leaf-b&lt;/i&gt;");
	CHECK_CONTAINS(dom.buf, "&lt;b&gt;b-gpu-008&lt;/b&gt;");
	json_free(old);
	old = parse(broken[3]);
	browse("compared-broken", card, old, &dom);
	CHECK_CONTAINS(dom.buf, "<h2 id=\"compare-head\">");
	json_free(old);
	json_free(card);
	strbuf_release(&dom);
}

/* The page with the comparison (--html with --compare): "Compared with" the old card's cluster,
 * job and time; one row per comparison row, the better value marked, the rows beyond noise
 * highlighted, unknown rows a '?' and no mark; the old card's strings escaped; an old card that
 * is not one said in the section, the page whole. Without an old card, no section. */
TEST(qualify_html_compared_with_an_old_card)
{
	struct json_value *a = load_card("card-a.json"), *b = load_card("card-b.json");
	struct strbuf html = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_INT(qualify_html(b, a, &html, &err), 0);
	check_self_contained(html.buf);
	CHECK_CONTAINS(html.buf, "<h2 id=\"compare-head\">Compared with provider-a, job 4242, "
				 "2026-12-04T10:00:00Z</h2>");
	CHECK_CONTAINS(html.buf, "This card (provider-b, job 88120, 2026-12-11T09:30:00Z) is better "
				 "in 19, worse in 3, the same within noise in 18; not comparable "
				 "in 4.");
	CHECK_INT(count(html.buf, "<tr class=\"w-"), 44);
	/* bf16 median: the old card better, beyond noise, its value marked */
	CHECK_CONTAINS(html.buf, "<tr class=\"w-old beyond\"><td>gemm_bf16_tflops</td><td>median"
				 "</td><td>TFLOP/s</td><td class=\"n win clear\">686.5 &#10003;</td>"
				 "<td class=\"n\">639.8</td>");
	/* fp8 median: the old card by a hair, within noise: marked, not highlighted */
	CHECK_CONTAINS(html.buf, "<tr class=\"w-old\"><td>gemm_fp8_tflops</td><td>median</td>");
	/* storage write: the new card, beyond noise */
	CHECK_CONTAINS(html.buf, "<tr class=\"w-new beyond\"><td>storage</td><td>write_mib_s</td>");
	/* training only in the new card: unknown, no mark on either value */
	CHECK_CONTAINS(html.buf, "<tr class=\"w-unknown\"><td>train</td><td>tokens_per_s</td>"
				 "<td>tokens/s</td><td class=\"n missing\">-</td><td class=\"n\">"
				 "56740</td><td class=\"n\">-</td><td class=\"winner\">?</td>");
	/* marked beyond noise: the 19 rows the new card wins and the 3 the old one does */
	CHECK_INT(count(html.buf, "<td class=\"n win clear\">"), 19 + 3);
	strbuf_reset(&html);
	CHECK_INT(qualify_html(b, NULL, &html, &err), 0);
	CHECK_NOT_CONTAINS(html.buf, "compare-head");

	/* the old card's strings are text */
	set_string((struct json_value *)json_get(a, "cluster"), "<b onmouseover=x>old</b>");
	strbuf_reset(&html);
	CHECK_INT(qualify_html(b, a, &html, &err), 0);
	CHECK_NOT_CONTAINS(html.buf, "<b onmouseover");
	CHECK_CONTAINS(html.buf, "Compared with &lt;b onmouseover=x&gt;old&lt;/b&gt;");
	/* an old card that is not one: said, the page whole */
	struct json_value *check = parse("{\"schema_version\":1,\"kind\":\"check\"}");
	strbuf_reset(&html);
	CHECK_INT(qualify_html(b, check, &html, &err), 0);
	check_self_contained(html.buf);
	CHECK_CONTAINS(html.buf, "The comparison cannot be made: the old card is not a qualify "
				 "scorecard: its kind is &quot;check&quot;.");
	json_free(check);
	json_free(a);
	json_free(b);
	strbuf_release(&html);
	strbuf_release(&err);
}

/* ---- --compare ---- */

static const struct json_value *row_of(const struct json_value *cmp, const char *figure,
				       const char *stat)
{
	const struct json_value *rows = json_get(cmp, "rows");
	for (size_t i = 0; rows && i < rows->nr; i++) {
		const char *f = json_get_string(rows->items[i], "figure");
		const char *s = json_get_string(rows->items[i], "stat");
		if (f && s && !strcmp(f, figure) && !strcmp(s, stat))
			return rows->items[i];
	}
	test_fail_(__FILE__, __LINE__, "no row %s %s", figure, stat);
}

/* One row: old, new (NAN for null), change, winner, beyond noise. */
static void check_row(const struct json_value *cmp, const char *figure, const char *stat,
		      double old, double new, double change, const char *winner, bool beyond)
{
	const struct json_value *r = row_of(cmp, figure, stat), *b = json_get(r, "beyond_noise");
	double v;
	const char *what[] = { "old", "new", "change_pct" };
	double want[] = { old, new, change };
	for (size_t i = 0; i < 3; i++) {
		bool has = json_get_number(r, what[i], &v);
		if (isnan(want[i]))
			CHECK_MSG(!has && json_get(r, what[i]) && json_get(r, what[i])->type == JSON_NULL,
				  "%s %s: %s is not null", figure, stat, what[i]);
		else
			CHECK_MSG(has && fabs(v - want[i]) < 0.006, "%s %s: %s is %g, expected %g",
				  figure, stat, what[i], has ? v : NAN, want[i]);
	}
	CHECK_MSG(!strcmp(json_get_string(r, "winner"), winner), "%s %s: winner %s, expected %s",
		  figure, stat, json_get_string(r, "winner"), winner);
	CHECK_MSG(b && b->type == JSON_BOOL && b->boolean == beyond, "%s %s: beyond_noise not %d",
		  figure, stat, beyond);
}

static void compare(const char *a, const char *b, bool json, struct strbuf *out)
{
	struct json_value *o = load_card(a), *n = load_card(b);
	struct strbuf err = STRBUF_INIT;
	strbuf_reset(out);
	CHECK_MSG(qualify_compare(o, n, json, out, &err) == 0, "%s", err.buf);
	json_free(o);
	json_free(n);
	strbuf_release(&err);
}

TEST(qualify_compare_card_a_against_card_b)
{
	struct strbuf out = STRBUF_INIT;
	compare("card-a.json", "card-b.json", true, &out);
	test_keep_json_as("qualify-compare", out.buf, out.len);
	struct json_value *c = parse(out.buf);
	CHECK_STR(json_get_string(c, "kind"), "qualify-compare");
	CHECK_STR(json_path(c, "old.cluster")->string, "provider-a");
	CHECK_STR(json_path(c, "new.job_id")->string, "88120");
	CHECK_INT(json_path(c, "new.nodes")->number, 8);
	/* bf16: provider-b's median is 6.8 % slower, beyond the 3 % floor (card-a's n2 does not
	 * widen the noise: its nodes' MAD is 0.4 %); its worst node is far better than n2 */
	check_row(c, "gemm_bf16_tflops", "median", 686.55, 639.8, -6.81, "old", true);
	check_row(c, "gemm_bf16_tflops", "worst", 412, 636, 54.37, "new", true);
	const struct json_value *bf = row_of(c, "gemm_bf16_tflops", "median");
	CHECK_STR(json_get_string(bf, "better"), "higher");
	CHECK_STR(json_get_string(bf, "unit"), "TFLOP/s");
	/* fp8 and HBM: within noise either way */
	check_row(c, "gemm_fp8_tflops", "median", 1294.5, 1293.8, -0.05, "old", false);
	check_row(c, "hbm_copy_gbps", "median", 4105.5, 4107.3, 0.04, "new", false);
	/* storage: faster per node and in aggregate, fsync tail shorter */
	check_row(c, "storage_write_mib_s", "median", 2030.55, 3104.35, 52.88, "new", true);
	check_row(c, "fsync_p99_ms", "median", 39.55, 14.15, -64.22, "new", true);
	check_row(c, "storage", "write_mib_s", 7121.1, 23480.6, 229.73, "new", true);
	check_row(c, "storage", "fsync_p99_ms", 41, 14.5, -64.63, "new", true);
	/* a wall time 2.3 % longer is noise; a storage stage 28 % shorter is not; a stage the old
	 * card skipped has no time to compare */
	check_row(c, "stage.node", "wall_s", 640.2, 655, 2.31, "old", false);
	check_row(c, "stage.storage", "wall_s", 250.3, 181.4, -27.53, "new", true);
	check_row(c, "stage.train", "wall_s", NAN, 308.6, NAN, "unknown", false);
	/* NCCL at 4 nodes, the largest both measured (card-b also ran 8) */
	check_row(c, "nccl.all_reduce", "busbw_at_4_nodes", 352, 355.1, 0.88, "new", false);
	check_row(c, "nccl.all_gather", "busbw_at_4_nodes", 331, 333.8, 0.85, "new", false);
	/* nodes: one of four failed and was drained, none of eight: one node of the smaller
	 * cluster is not beyond noise */
	check_row(c, "nodes", "failed", 1, 0, -100, "new", false);
	check_row(c, "nodes", "drained", 1, 0, -100, "new", false);
	/* training only in the new card */
	check_row(c, "train", "mfu", NAN, 0.412, NAN, "unknown", false);
	double v;
	CHECK(json_get_number(json_get(c, "summary"), "better_in", &v) && v == 19);
	CHECK(json_get_number(json_get(c, "summary"), "worse_in", &v) && v == 3);
	CHECK(json_get_number(json_get(c, "summary"), "same", &v) && v == 18);
	CHECK(json_get_number(json_get(c, "summary"), "unknown", &v) && v == 4);
	CHECK_INT(json_get(c, "rows")->nr, 19 + 3 + 18 + 4);
	json_free(c);

	/* the other way round, winners and changes turn */
	compare("card-b.json", "card-a.json", true, &out);
	test_keep_json_as("qualify-compare", out.buf, out.len);
	c = parse(out.buf);
	check_row(c, "gemm_bf16_tflops", "median", 639.8, 686.55, 7.31, "new", true);
	CHECK(json_get_number(json_get(c, "summary"), "better_in", &v) && v == 3);
	CHECK(json_get_number(json_get(c, "summary"), "worse_in", &v) && v == 19);
	json_free(c);
	strbuf_release(&out);
}

TEST(qualify_compare_text_table)
{
	struct strbuf out = STRBUF_INIT;
	compare("card-a.json", "card-b.json", false, &out);
	CHECK_CONTAINS(out.buf, "vigil qualify compare\n"
				"  old: provider-a, job 4242, 2026-12-04T10:00:00Z, 4 nodes\n"
				"  new: provider-b, job 88120, 2026-12-11T09:30:00Z, 8 nodes\n\n");
	CHECK_CONTAINS(out.buf, "\nfigure                 stat              unit          old      new"
				"    change  better\n"
				"gemm_bf16_tflops       median            TFLOP/s     686.5    639.8"
				"    -6.8 %  old *\n");
	CHECK_CONTAINS(out.buf, "\nstage.train            wall_s            s               -    308.6"
				"         -  ?\n");
	CHECK_CONTAINS(out.buf, "new is better in 19, worse in 3, the same within noise in 18; 4 "
				"not comparable\n");
	/* aligned: every row of the table has its "better" column at the header's place */
	const char *head = strstr(out.buf, "\nfigure ");
	CHECK(head);
	size_t at = (size_t)(strstr(head + 1, "better") - (head + 1));
	size_t rows = 0;
	for (const char *l = strchr(head + 1, '\n') + 1; *l && *l != '\n'; l = strchr(l, '\n') + 1) {
		size_t len = strcspn(l, "\n");
		CHECK_MSG(len > at && l[at - 1] == ' ' && l[at - 2] == ' ' && l[at] != ' ',
			  "row not aligned at %zu: %.*s", at, (int)len, l);
		rows++;
	}
	CHECK_INT(rows, 44);
	CHECK_CONTAINS(out.buf, "  old *\n");
	CHECK_CONTAINS(out.buf, "  ?\n");
	/* a partial card says so, and nothing from a card reaches the terminal raw */
	struct json_value *o = load_card("card-partial.json"), *n = load_card("card-b.json");
	set_string((struct json_value *)json_path(n, "cluster"), "evil\x1b]0;title\x07\n");
	set_string((struct json_value *)json_path(n, "figures.0.name"), "bf16\x1b[2J");
	strbuf_reset(&out);
	CHECK_INT(qualify_compare(o, n, false, &out, NULL), 0);
	CHECK_CONTAINS(out.buf, "  old: provider-a, job 4243, 2026-12-04T10:00:00Z, 4 nodes "
				"(partial: not every stage ran)\n");
	CHECK_CONTAINS(out.buf, "  new: evil\\x1b]0;title\\x07\\x0a, job 88120");
	CHECK_CONTAINS(out.buf, "\nbf16\\x1b[2J ");
	CHECK(!strchr(out.buf, '\x1b') && !strchr(out.buf, '\x07'));
	json_free(o);
	json_free(n);
	strbuf_release(&out);
}

TEST(qualify_compare_refuses_what_is_not_a_scorecard)
{
	struct json_value *a = load_card("card-a.json");
	struct json_value *check = parse("{\"schema_version\":1,\"verdict\":\"healthy\","
					 "\"checks\":[]}");
	struct json_value *v2 = parse("{\"schema_version\":2,\"kind\":\"qualify\"}");
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	CHECK_INT(qualify_compare(a, check, false, &out, &err), -1);
	CHECK_STR(err.buf, "the new card is not a qualify scorecard: it has no \"kind\"");
	CHECK_INT(qualify_compare(check, a, true, &out, &err), -1);
	CHECK_STR(err.buf, "the old card is not a qualify scorecard: it has no \"kind\"");
	CHECK_INT(qualify_compare(v2, a, true, &out, &err), -1);
	CHECK_STR(err.buf, "the old card is a scorecard of schema_version 2; this vigil reads 1");
	CHECK_STR(out.buf, "");
	json_free(a);
	json_free(check);
	json_free(v2);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* Broken cards compare too: every row a side cannot fill is unknown, none is a win. */
TEST(qualify_compare_broken_cards_are_unknown_not_wins)
{
	struct json_value *a = load_card("card-a.json");
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(broken); i++) {
		struct json_value *b = parse(broken[i]);
		strbuf_reset(&out);
		CHECK_MSG(qualify_compare(a, b, true, &out, &err) == 0, "%s", err.buf);
		test_keep_json_as("qualify-compare", out.buf, out.len);
		struct json_value *c = parse(out.buf);
		const struct json_value *rows = json_get(c, "rows");
		for (size_t r = 0; rows && r < rows->nr; r++) {
			const struct json_value *x = rows->items[r];
			if (json_get(x, "new")->type == JSON_NULL)
				CHECK_STR(json_get_string(x, "winner"), "unknown");
		}
		json_free(c);
		strbuf_reset(&out);
		CHECK_INT(qualify_compare(b, a, false, &out, &err), 0);
		json_free(b);
	}
	json_free(a);
	strbuf_release(&out);
	strbuf_release(&err);
}
