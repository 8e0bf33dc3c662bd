/*
 * test_fleet_lemons.c: 'vigil fleet model' and 'vigil fleet lemons' through the real binary:
 * the fitted model goes through the real 'vigil sim --failures'; one fault seen by Slurm, a
 * journal and the agent counts once; too little data and classes never seen are said; bad
 * input names its file and line; and on histories generated with planted lemons
 * (tests/fleetgen.c) the lemon list's precision and recall. Plus the parsers and the Poisson
 * tail directly.
 */
#include "../harness.h"
#include "../fleetgen.h"
#include "../../src/fleet/fit.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"

#include <math.h>

/* Slurm's node events in the shape sacctmgr prints with -P (a header, '|' between fields);
 * our own nodes, times and reasons. */
static const char sacct_small[] =
	"NodeName|TimeStart|TimeEnd|State|Reason|User\n"
	"n01|2026-01-03T10:00:05|2026-01-05T10:00:05|DRAIN|vigil: gpu: Xid 79 (GPU has fallen off "
	"the bus) on 0000:3a:00.0|root(0)\n"
	"n02|2026-01-04T08:00:00|2026-01-04T20:00:00|DRAIN|vigil: infiniband: mlx5_1 port 1 is "
	"Down (was Active)|root(0)\n"
	"n03|2026-01-06T01:00:00|2026-01-07T01:00:00|DOWN*|Not responding|slurm(64030)\n"
	"n04|2026-01-08T00:00:00|2026-01-08T04:00:00|DRAIN|scheduled maintenance|root(0)\n"
	"n01|2026-01-09T10:00:00|Unknown|DRAIN|vigil: gpu: Xid 79 (GPU has fallen off the bus) on "
	"0000:3a:00.0|root(0)\n"
	"|2026-01-02T00:00:00|2026-01-02T00:10:00|||\n";

/* The journal of a run that saw n01's first fault: a crash, then n01 excluded. */
static const char journal_small[] =
	"{\"t\":1767312000.000,\"kind\":\"run_started\",\"attempt\":0}\n"
	"{\"t\":1767312001.000,\"kind\":\"attempt_started\",\"attempt\":1,\"restarts\":0,"
	"\"step_id\":\"812.0\",\"hosts\":[\"n01\",\"n02\",\"n03\",\"n04\",\"n05\"]}\n"
	"{\"t\":1767434402.000,\"kind\":\"event\",\"attempt\":1,\"class\":\"crash\",\"host\":\"n01\","
	"\"detail\":\"srun: error: n01: task 3: Exited with exit code 1\",\"happened\":1767434400.0,"
	"\"detected\":1767434402.0,\"latency_s\":2.0}\n"
	"{\"t\":1767434440.000,\"kind\":\"host_excluded\",\"attempt\":1,\"host\":\"n01\","
	"\"reason\":\"vigil: gpu: Xid 79 (GPU has fallen off the bus) on 0000:3a:00.0\"}\n"
	"{\"t\":1767434450.000,\"kind\":\"attempt_ended\",\"attempt\":1,\"outcome\":\"crash\","
	"\"code\":1}\n"
	"{\"t\":1767500000.000,\"kind\":\"event\",\"attempt\":2,\"class\":\"crash\","
	"\"detail\":\"rank 0: Traceback (most recent call last): ValueError\"}\n"
	"{\"t\":1767500000.5,\"kind\":\"ev";

/* n01's agent saw Xid 79 in two boots: the two drains above. */
static const char history_n01[] =
	"{\"version\": 1, \"entries\": [{\"key\": \"kernel|xid|0000:3a:00.0|xid=79\", "
	"\"first_seen\": 1767434430.0, \"last_seen\": 1767952830.0, "
	"\"boots\": [\"0f6c2d3e-1111-4a2b-9c3d-000000000001\", "
	"\"0f6c2d3e-1111-4a2b-9c3d-000000000002\"]}]}\n";
static const char history_empty[] = "{\"version\": 1, \"entries\": []}\n";

static const char *small_fleet(void)
{
	const char *d = test_tmpdir();
	test_write(d, "events.txt", sacct_small);
	test_write(d, "runs/r1/journal.jsonl", journal_small);
	test_write(d, "agent/n01/history.json", history_n01);
	test_write(d, "agent/n02/history.json", history_empty);
	test_write(d, "agent/n05/history.json", history_empty);
	return d;
}

static const struct json_value *class_of(const struct json_value *v, const char *name)
{
	const struct json_value *cl = json_get(v, "classes");
	for (size_t i = 0; cl && i < cl->nr; i++) {
		const char *n = json_get_string(cl->items[i], "name");
		if (n && !strcmp(n, name))
			return cl->items[i];
	}
	test_fail_(__FILE__, __LINE__, "no class '%s'", name);
	return NULL;
}

static double num(const struct json_value *v, const char *key)
{
	double d = NAN;
	CHECK_MSG(json_get_number(v, key, &d), "no number '%s'", key);
	return d;
}

TEST(fleet_model_counts_each_fault_once_and_round_trips_through_sim)
{
	const char *d = small_fleet();
	struct strbuf ev = STRBUF_INIT, runs = STRBUF_INIT, agent = STRBUF_INIT, mf = STRBUF_INIT;
	strbuf_addf(&ev, "%s/events.txt", d);
	strbuf_addf(&runs, "%s/runs", d);
	strbuf_addf(&agent, "%s/agent", d);
	strbuf_addf(&mf, "%s/model.json", d);
	const char *args[] = { "fleet", "model", "--slurm-events", ev.buf, "--journal", runs.buf,
			       "--agent-history", agent.buf, "--since", "2026-01-01",
			       "--until", "2026-01-31", "-o", mf.buf, "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	/* n01's first Xid 79: Slurm, the journal and the agent saw it; its second: Slurm and
	 * the agent. Two faults, not five. */
	const struct json_value *bus = class_of(v, "gpu_fell_off_bus");
	CHECK_INT((int)num(bus, "faults"), 2);
	CHECK_INT((int)num(class_of(v, "ib_link"), "faults"), 1);
	CHECK_INT((int)num(class_of(v, "host_crash"), "faults"), 1);
	CHECK_INT((int)num(class_of(v, "software_bug"), "faults"), 1);
	CHECK_INT((int)num(v, "faults"), 5);
	/* 5 nodes (n01..n05) x 30 days x 8 GPUs */
	CHECK(fabs(num(v, "gpu_days") - 1200) < 1e-6);
	CHECK(fabs(num(bus, "rate") - 2.0 / 1200) < 1e-8);
	/* repair: the drain that Slurm ended, 48 h; the open one has no end */
	CHECK(fabs(num(bus, "repair_hours") - 48) < 1e-6);
	CHECK_INT((int)num(bus, "repair_samples"), 1);
	CHECK_INT((int)num(json_get(v, "inputs"), "planned"), 1);
	/* a class never seen says so */
	const struct json_value *nv = class_of(v, "nvlink");
	CHECK_INT((int)num(nv, "faults"), 0);
	CHECK_CONTAINS(json_get_string(nv, "note"), "no fault seen: rate 0");
	CHECK(num(nv, "rate_upper95") > 0);
	CHECK(json_get(v, "enough_data")->boolean);
	CHECK_CONTAINS(json_get_string(v, "source"), "5 faults on 5 nodes");
	CHECK_CONTAINS(json_get_string(v, "source"), "no fault seen (rate 0): gpu_hbm_ecc, nvlink");
	json_free(v);
	child_release(&c);

	/* the file is what vigil sim reads */
	const char *sa[] = { "sim", "--failures", mf.buf, "--print-model", NULL };
	test_run_vigil(&c, sa, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "vigil sim refused the model: %s", c.err.buf);
	v = test_parse_json(&c);
	const struct json_value *cl = json_get(v, "classes");
	CHECK(cl && cl->nr == 10);
	CHECK(fabs(num(cl->items[0], "rate") - 2.0 / 1200) < 1e-8);
	CHECK_CONTAINS(json_get_string(v, "source"), "vigil fleet model");
	json_free(v);
	child_release(&c);
	const char *run[] = { "sim", "--failures", mf.buf, "--gpus", "64", "--days", "1", "--json",
			      NULL };
	const char *const env[] = { "TMPDIR=", NULL };
	test_run_vigil(&c, run, env);
	CHECK_MSG(c.exited && c.exit_code == 0, "vigil sim with the model: %s", c.err.buf);
	v = test_parse_json(&c);
	CHECK(json_get(v, "ettr") != NULL);
	json_free(v);
	child_release(&c);
	strbuf_release(&ev);
	strbuf_release(&runs);
	strbuf_release(&agent);
	strbuf_release(&mf);
}

TEST(fleet_model_with_too_little_data_says_so)
{
	const char *d = test_tmpdir();
	test_write(d, "e.txt", "NodeName|TimeStart|TimeEnd|State|Reason\n"
			       "a1|2026-02-01T00:00:00|2026-02-01T05:00:00|DRAIN|vigil: gpu: Xid 79\n"
			       "a2|2026-02-02T00:00:00|2026-02-02T01:00:00|DRAIN|vigil: gpu: Xid 48\n");
	struct strbuf ev = STRBUF_INIT;
	strbuf_addf(&ev, "%s/e.txt", d);
	const char *args[] = { "fleet", "model", "--slurm-events", ev.buf, "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && c.exit_code == 3, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK(!json_get(v, "enough_data")->boolean);
	CHECK_CONTAINS(c.out.buf, "too little data: 2.1 node-days observed");
	CHECK(starts_with(json_get_string(v, "source"), "TOO LITTLE DATA"));
	CHECK(starts_with(json_get_string(json_get(v, "model"), "source"), "TOO LITTLE DATA"));
	json_free(v);
	child_release(&c);
	/* the model alone on stdout, the warning on stderr */
	const char *a2[] = { "fleet", "model", "--slurm-events", ev.buf, NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "warning: too little data");
	CHECK_CONTAINS(c.out.buf, "\"rate_unit\": \"per_gpu_day\"");
	child_release(&c);
	strbuf_release(&ev);
}

TEST(fleet_bad_input_names_the_file_and_line)
{
	const char *d = test_tmpdir();
	static const char bin[] = "NodeName|TimeStart|Reason\nn1|2026-01-01T00:00:00|x\0y\n";
	test_write_bytes(d, "bin.txt", bin, sizeof(bin) - 1);
	test_write(d, "nohdr.txt", "n1|2026-01-01T00:00:00|2026-01-02T00:00:00|DRAIN|x\n");
	struct strbuf big = STRBUF_INIT;
	strbuf_addstr(&big, "NodeName|TimeStart|Reason\nn1|2026-01-01T00:00:00|");
	for (int i = 0; i < 70000; i++)
		strbuf_addch(&big, 'x');
	strbuf_addch(&big, '\n');
	test_write(d, "long.txt", big.buf);
	test_write(d, "runs/r/journal.jsonl", "not json\nnor this\n");
	static const struct {
		const char *opt, *file, *msg;
	} bad[] = {
		{ "--slurm-events", "bin.txt", "bin.txt' line 2: binary data" },
		{ "--slurm-events", "nohdr.txt", "nohdr.txt' line 1: not sacctmgr's event list" },
		{ "--slurm-events", "long.txt", "long.txt' line 2: longer than 65536 bytes" },
		{ "--slurm-events", "missing.txt", "missing.txt" },
		{ "--journal", "runs", "journal.jsonl': no line is a vigil run journal record" },
		{ "--agent-history", "runs", "holds no agent history" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "%s/%s", d, bad[i].file);
		const char *args[] = { "fleet", "lemons", bad[i].opt, p.buf, NULL };
		struct child c;
		test_run_vigil(&c, args, NULL);
		CHECK_MSG(c.exited && c.exit_code == 2, "%s: exit %d: %s", bad[i].file, c.exit_code,
			  c.err.buf);
		CHECK_CONTAINS(c.err.buf, bad[i].msg);
		CHECK_STR(c.out.buf, "");
		child_release(&c);
		strbuf_release(&p);
	}
	strbuf_release(&big);
}

TEST(fleet_classify_reasons_and_keys)
{
	static const struct {
		const char *text;
		int cls;
	} t[] = {
		{ "vigil: gpu: Xid 79 (GPU has fallen off the bus)", FC_GPU_FELL_OFF_BUS },
		{ "NVRM: Xid (PCI:0000:3b:00): 94, pid=1234, Contained ECC error", FC_GPU_HBM_ECC },
		{ "vigil: gpu: GPU 3: reset GPU: pending row remap", FC_GPU_HBM_ECC },
		{ "vigil: kernel: Xid 74 on 0000:bd:00.0", FC_NVLINK },
		{ "vigil: kernel: SXid 12028 on NVSwitch 2", FC_NVLINK },
		{ "vigil: infiniband: mlx5_0 port 1 is Down (was Active)", FC_IB_LINK },
		{ "Not responding", FC_HOST_CRASH },
		{ "Node unexpectedly rebooted boot_time=1767312000 last response=1767311000",
		  FC_HOST_CRASH },
		{ "Kill task failed", FC_HANG },
		{ "vigil: gpu: GPU 1: clocks throttled (HW thermal slowdown)", FC_SLOWDOWN },
		{ "vigil: storage: probe of /data timed out after 30 s: the filesystem hangs",
		  FC_STORAGE_STALL },
		{ "silent data corruption suspected: GPU 2 digest differs", FC_SDC },
		{ "scheduled maintenance: firmware", FC_PLANNED },
		{ "Reboot ASAP", FC_PLANNED },
		{ "batch job complete failure", FC_UNCLASSIFIED },
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		CHECK_MSG(fleet_classify_text(t[i].text) == t[i].cls, "'%s': %s, not %s", t[i].text,
			  fleet_class_name(fleet_classify_text(t[i].text)),
			  fleet_class_name(t[i].cls));
	CHECK_INT(fleet_classify_key("kernel|xid|0000:3a:00.0|xid=79"), FC_GPU_FELL_OFF_BUS);
	CHECK_INT(fleet_classify_key("gpu|row_remap_pending|GPU-1234"), FC_GPU_HBM_ECC);
	CHECK_INT(fleet_classify_key("kernel|sxid|nvswitch2|sxid=20034"), FC_NVLINK);
	CHECK_INT(fleet_classify_key("gpu|lost|"), FC_GPU_FELL_OFF_BUS);
	CHECK_INT(fleet_classify_key("nonsense"), FC_UNCLASSIFIED);
}

TEST(fleet_sacct_parser_takes_p_and_P_and_a_reason_with_a_bar)
{
	struct fleet_history h = { 0 };
	struct strbuf err = STRBUF_INIT;
	/* -p: a '|' after the last field too; the reason holds a '|' of its own */
	static const char p[] = "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|\n"
				"c1|n7|2026-03-01T00:00:00|2026-03-01T12:00:00|DRAIN|"
				"NHC: check_hw_ib: ib0 | link down|root(0)|\n"
				"c1|n8|garbage|2026-03-01T12:00:00|DRAIN|Not responding|root(0)|\n";
	CHECK_INT(fleet_read_sacct_text(&h, "t", p, sizeof(p) - 1, &err), 0);
	CHECK_INT((int)h.nr, 1);
	CHECK_INT(h.ev[0].cls, FC_IB_LINK);
	CHECK_STR(h.nodes[h.ev[0].node], "n7");
	CHECK(fabs(h.ev[0].end - h.ev[0].t - 12 * 3600) < 1e-6);
	CHECK_CONTAINS(h.ev[0].what, "ib0 | link down");
	CHECK_INT((int)h.skipped_lines, 1);
	fleet_history_release(&h);
	strbuf_release(&err);
}

TEST(fleet_poisson_tail_is_right)
{
	CHECK(fleet_poisson_tail(0, 3) == 1.0);
	/* P(X >= 1 | 2) = 1 - e^-2 */
	CHECK(fabs(fleet_poisson_tail(1, 2) - (1 - exp(-2))) < 1e-12);
	/* P(X >= 10 | 1) = 1.1142e-7 (sum of e^-1/k! from k = 10) */
	CHECK(fabs(fleet_poisson_tail(10, 1) / 1.1142547833872e-7 - 1) < 1e-6);
	CHECK(fleet_poisson_tail(3, 0) == 0.0);
}

struct pr {
	double precision, recall;
	size_t flagged, planted;
};

static struct pr planted_run(double rate, unsigned seed)
{
	struct pr r = { 0 };
	const char *d = test_memory_tmpdir();
	struct fleetgen g = { .nodes = 1000, .days = 90, .rate_node_day = rate,
			      .soft_rate_node_day = 0.002, .lemon_share = 0.02,
			      .lemon_factor = 10, .seed = seed, .start = 1767225600.0 };
	bool lemon[1000];
	CHECK(fleetgen_write(&g, d, lemon) > 0);
	struct strbuf ev = STRBUF_INIT, runs = STRBUF_INIT, agent = STRBUF_INIT;
	strbuf_addf(&ev, "%s/slurm-events.txt", d);
	strbuf_addf(&runs, "%s/runs", d);
	strbuf_addf(&agent, "%s/agent", d);
	const char *args[] = { "fleet", "lemons", "--slurm-events", ev.buf, "--journal", runs.buf,
			       "--agent-history", agent.buf, "--since", "2026-01-01",
			       "--until", "2026-04-01", "--top", "100", "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && (c.exit_code == 0 || c.exit_code == 1), "exit %d: %s", c.exit_code,
		  c.err.buf);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *pull = json_get(v, "pull");
	CHECK(pull && pull->type == JSON_ARRAY);
	size_t tp = 0;
	for (size_t i = 0; i < pull->nr; i++) {
		unsigned n = 0;
		CHECK(sscanf(pull->items[i]->string, "gpu-%u", &n) == 1 && n < 1000);
		tp += lemon[n];
	}
	for (unsigned i = 0; i < 1000; i++)
		r.planted += lemon[i];
	r.flagged = pull->nr;
	r.precision = pull->nr ? (double)tp / (double)pull->nr : 0;
	r.recall = (double)tp / (double)r.planted;
	CHECK_INT((int)num(v, "lemons"), (int)pull->nr);
	json_free(v);
	child_release(&c);
	strbuf_release(&ev);
	strbuf_release(&runs);
	strbuf_release(&agent);
	return r;
}

/* 1000 nodes, 2 % lemons at 10 times the rate, 90 days, 0.02 host faults a node-day (8 GPUs:
 * 2.5e-3 a GPU-day, Meta's research clusters' order, docs/SIM.md) */
TEST_TIMEOUT(fleet_lemons_finds_planted_lemons, 300)
{
	struct pr r = planted_run(0.02, 7);
	printf("# planted lemons at 0.02/node-day: %zu planted, %zu flagged, precision %.3f, "
	       "recall %.3f\n",
	       r.planted, r.flagged, r.precision, r.recall);
	CHECK_MSG(r.precision >= 0.8 && r.recall >= 0.8, "precision %.3f, recall %.3f",
		  r.precision, r.recall);
}

/* The same at Llama 3's host-fault rate (about 3.2e-3 a node-day): a normal node has 0.3
 * faults in 90 days, a lemon 3: fewer lemons stand out, those listed are still lemons. */
TEST_TIMEOUT(fleet_lemons_at_llama3_rate_lists_few_but_right, 300)
{
	struct pr r = planted_run(0.0032, 11);
	printf("# planted lemons at 0.0032/node-day: %zu planted, %zu flagged, precision %.3f, "
	       "recall %.3f\n",
	       r.planted, r.flagged, r.precision, r.recall);
	CHECK_MSG(r.flagged == 0 || r.precision >= 0.8, "precision %.3f", r.precision);
}

TEST(fleet_lemons_json_names_the_evidence)
{
	const char *d = test_tmpdir();
	struct strbuf s = STRBUF_INIT;
	strbuf_addstr(&s, "NodeName|TimeStart|TimeEnd|State|Reason|User\n");
	/* 40 nodes over 60 days, each one fault; b07 five Xid 79s, repaired in between */
	for (int i = 0; i < 40; i++)
		strbuf_addf(&s, "b%02d|2026-01-%02dT03:00:00|2026-01-%02dT15:00:00|DRAIN|vigil: "
				"infiniband: mlx5_0 port 1 is Down (was Active)|root(0)\n",
			    i, 1 + i % 28, 1 + i % 28);
	for (int k = 0; k < 5; k++)
		strbuf_addf(&s, "b07|2026-02-%02dT10:00:00|2026-02-%02dT22:00:00|DRAIN|vigil: gpu: "
				"Xid 79 (GPU has fallen off the bus) on 0000:3a:00.0|root(0)\n",
			    2 + 5 * k, 2 + 5 * k);
	test_write(d, "e.txt", s.buf);
	strbuf_reset(&s);
	strbuf_addf(&s, "%s/e.txt", d);
	const char *args[] = { "fleet", "lemons", "--slurm-events", s.buf, "--since", "2026-01-01",
			       "--until", "2026-03-02", "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *pull = json_get(v, "pull");
	CHECK(pull && pull->nr == 1);
	CHECK_STR(pull->items[0]->string, "b07");
	const struct json_value *top = json_get(v, "ranked")->items[0];
	CHECK_STR(json_get_string(top, "node"), "b07");
	CHECK_INT((int)num(top, "faults"), 6);
	CHECK_STR(json_get_string(top, "worst_class"), "gpu_fell_off_bus");
	CHECK_INT((int)num(top, "faults_after_repair"), 5);
	CHECK(num(top, "confidence") > 0.95);
	CHECK(num(top, "p_value") < 1e-3);
	const struct json_value *evd = json_get(top, "evidence");
	CHECK(evd && evd->nr == 6);
	CHECK_CONTAINS(c.out.buf, "\"t\": \"2026-02-02T10:00:00\"");
	CHECK_CONTAINS(c.out.buf, "Xid 79 (GPU has fallen off the bus)");
	json_free(v);
	child_release(&c);
	/* the table says the same */
	const char *a2[] = { "fleet", "lemons", "--slurm-events", s.buf, "--since", "2026-01-01",
			     "--until", "2026-03-02", NULL };
	test_run_vigil(&c, a2, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "1 lemons among 40 nodes");
	CHECK_CONTAINS(c.out.buf, "pull: b07");
	child_release(&c);
	/* the fleet once b07 is pulled: its node and its 6 faults out of the model */
	const char *a3[] = { "fleet", "model", "--slurm-events", s.buf, "--since", "2026-01-01",
			     "--until", "2026-03-02", "--without-lemons", "--json", NULL };
	test_run_vigil(&c, a3, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	v = test_parse_json(&c);
	CHECK_INT((int)num(v, "nodes"), 39);
	CHECK_INT((int)num(v, "nodes_excluded"), 1);
	CHECK_INT((int)num(v, "faults"), 39);
	CHECK_INT((int)num(class_of(v, "gpu_fell_off_bus"), "faults"), 0);
	json_free(v);
	child_release(&c);
	strbuf_release(&s);
}

/* --from-slurm asks sacctmgr for node events in UTC, in the -P shape, from --since. */
TEST(fleet_from_slurm_runs_sacctmgr_in_utc)
{
	const char *tmp = test_tmpdir();
	struct strbuf body = STRBUF_INIT, path = STRBUF_INIT, argsf = STRBUF_INIT;
	strbuf_addf(&argsf, "%s/sacctmgr.args", tmp);
	/* the fake answers only when asked as vigil must ask: TZ=UTC, the standard time format */
	strbuf_addf(&body, "echo \"$@\" > '%s'\n"
			   "[ \"$TZ\" = UTC ] && [ \"$SLURM_TIME_FORMAT\" = standard ] || exit 1\n"
			   "cat <<'EOF'\n%sEOF\n",
		    argsf.buf, sacct_small);
	const char *dir = test_script("sacctmgr", body.buf);
	strbuf_addf(&path, "PATH=%s:/usr/bin:/bin", dir);
	const char *env[] = { path.buf, NULL };
	const char *args[] = { "fleet", "model", "--from-slurm", "--since", "2026-01-01",
			       "--until", "2026-01-31", "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT((int)num(class_of(v, "gpu_fell_off_bus"), "faults"), 2);
	CHECK_INT((int)num(json_get(v, "inputs"), "slurm_event_lists"), 1);
	json_free(v);
	child_release(&c);
	struct strbuf got = STRBUF_INIT;
	CHECK(read_file_bounded(argsf.buf, &got, 4096, NULL) == 0);
	CHECK_CONTAINS(got.buf, "show event -P event=node");
	CHECK_CONTAINS(got.buf, "format=NodeName,TimeStart,TimeEnd,State,Reason,User");
	CHECK_CONTAINS(got.buf, "start=2026-01-01");
	/* a sacctmgr that fails is said, with its words */
	strbuf_reset(&body);
	strbuf_addstr(&body, "echo 'sacctmgr: error: Problem talking to the database' >&2\nexit 1\n");
	dir = test_script("sacctmgr", body.buf);
	test_run_vigil(&c, args, env);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "sacctmgr show event: exited with 1");
	CHECK_CONTAINS(c.err.buf, "Problem talking to the database");
	child_release(&c);
	strbuf_release(&got);
	strbuf_release(&body);
	strbuf_release(&path);
	strbuf_release(&argsf);
}
