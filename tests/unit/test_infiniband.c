/*
 * test_infiniband.c: the 'infiniband' check: parsing, evaluate() rules on hand-built ports,
 * gather() on fixture trees, counters kept between runs, and a port file that blocks.
 */
#include "../harness.h"
#include "../../src/checks/infiniband.h"
#include "../../src/sys/fsroot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static struct ib_port mkport(const char *hca, unsigned port, int state, int phys, double rate)
{
	static const char *const states[] = { "0: NOP", "1: DOWN", "2: INIT", "3: ARMED",
					      "4: ACTIVE" };
	static const char *const phys_states[] = { "0: ?",	  "1: Sleep",
						   "2: Polling",  "3: Disabled",
						   "4: PortConfigurationTraining", "5: LinkUp",
						   "6: LinkErrorRecovery" };
	struct ib_port p;
	memset(&p, 0, sizeof(p));
	strlcpy_v(p.hca, hca, sizeof(p.hca));
	p.port = port;
	strlcpy_v(p.state, states[state], sizeof(p.state));
	strlcpy_v(p.phys_state, phys_states[phys], sizeof(p.phys_state));
	p.state_num = state;
	p.phys_num = phys;
	snprintf(p.rate, sizeof(p.rate), "%g Gb/sec (4X %s)", rate, rate >= 400 ? "NDR" : "HDR");
	p.rate_gbps = rate;
	strlcpy_v(p.link_layer, "InfiniBand", sizeof(p.link_layer));
	for (int c = 0; c < IBC__COUNT; c++)
		p.have[c] = true;
	return p;
}

static void add(struct ib_readings *r, struct ib_port p)
{
	ALLOC_GROW(r->ports, r->nr + 1, r->alloc);
	r->ports[r->nr++] = p;
}

/* Evaluate with "section.key=value" settings (NULL-terminated list or NULL). */
static const char *detail(const struct finding *f, const char *key)
{
	for (size_t i = 0; f && i < f->nr_details; i++)
		if (!strcmp(f->details[i].key, key))
			return f->details[i].value;
	return NULL;
}

static void eval(const struct ib_readings *r, const char *const *sets, struct check_result *res)
{
	struct config cfg;
	struct ib_options opt;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "h");
	for (size_t i = 0; sets && sets[i]; i++)
		CHECK_INT(config_set(&cfg, sets[i], &err), 0);
	CHECK_MSG(ib_options_load(&cfg, &opt, &err) == 0, "options: %s", err.buf);
	check_result_init(res, "infiniband");
	ib_evaluate(r, &opt, res);
	result_finish(res);
	ib_options_release(&opt);
	config_release(&cfg);
	strbuf_release(&err);
}

TEST(ib_parse_state_and_rate)
{
	double g;
	CHECK_INT(ib_parse_state("4: ACTIVE"), 4);
	CHECK_INT(ib_parse_state("5: LinkUp"), 5);
	CHECK_INT(ib_parse_state("ACTIVE"), -1);
	/* the kernel's names beside the numbers; a disagreeing pair is no state */
	CHECK(ib_state_agrees("4: ACTIVE\n", 4, false));
	CHECK(ib_state_agrees("5: ACTIVE_DEFER", 5, false));
	CHECK(ib_state_agrees("7: Phy Test", 7, true));
	CHECK(ib_state_agrees("9: <unknown>", 9, true));
	CHECK(!ib_state_agrees("1: ACTIVE", 1, false));
	CHECK(!ib_state_agrees("4: ACTIVEX", 4, false));
	CHECK(!ib_state_agrees("4: active", 4, false));
	CHECK(!ib_state_agrees("2: LinkUp", 2, true));
	CHECK(!ib_state_agrees("4:", 4, false));
	CHECK_INT(ib_parse_state(""), -1);
	CHECK(ib_parse_rate("400 Gb/sec (4X NDR)", &g) && g == 400);
	CHECK(ib_parse_rate("2.5 Gb/sec (1X SDR)", &g) && g == 2.5);
	CHECK(!ib_parse_rate("Unknown", &g));
	CHECK(!ib_parse_rate("400 GB", &g));
}

TEST(ib_healthy_ports_one_ok_summary)
{
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 4; i++) {
		char hca[16];
		snprintf(hca, sizeof(hca), "mlx5_%d", i);
		add(&r, mkport(hca, 1, 4, 5, 400));
	}
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_INT(res.nr, 1);
	CHECK_CONTAINS(res.findings[0].message, "4 ports ACTIVE at 400 Gb/s");
	CHECK_CONTAINS(res.findings[0].message, "not compared (no state directory)");
	check_result_release(&res);

	r.state_dir = true;
	eval(&r, NULL, &res);
	CHECK_CONTAINS(res.findings[0].message, "first reading; the next run compares");
	check_result_release(&res);
	ib_readings_release(&r);
}

TEST(ib_port_states_pick_status_and_action)
{
	struct {
		int state, phys;
		enum status st;
		enum action act;
		const char *code, *text;
	} cases[] = {
		{ 1, 2, STATUS_FAIL, ACTION_REPLACE_CABLE, "port_down", "Polling" },
		{ 1, 3, STATUS_WARN, ACTION_FIX_CONFIG, "port_disabled", "disabled" },
		{ 2, 5, STATUS_FAIL, ACTION_INVESTIGATE, "port_not_active", "subnet manager" },
		{ 3, 5, STATUS_FAIL, ACTION_INVESTIGATE, "port_not_active", "ARMED" },
		{ 1, 6, STATUS_FAIL, ACTION_REPLACE_CABLE, "port_down", "error recovery" },
		{ 1, 1, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "port_down", "Sleep" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ib_readings r;
		struct check_result res;
		memset(&r, 0, sizeof(r));
		add(&r, mkport("mlx5_0", 1, 4, 5, 400));
		add(&r, mkport("mlx5_1", 1, cases[i].state, cases[i].phys, 10));
		eval(&r, NULL, &res);
		CHECK_INT(res.status, cases[i].st);
		const struct finding *f = result_find(&res, cases[i].code, "mlx5_1 port 1");
		CHECK_MSG(f, "case %zu: no '%s' finding", i, cases[i].code);
		CHECK_INT(f->status, cases[i].st);
		CHECK_INT(f->action, cases[i].act);
		CHECK_CONTAINS(f->message, cases[i].text);
		CHECK_CONTAINS(f->message, "mlx5_1 port 1");
		/* a down port's meaningless rate does not also fail */
		CHECK(!result_find(&res, "rate", NULL));
		CHECK(!result_find(&res, NULL, "mlx5_0"));
		check_result_release(&res);
		ib_readings_release(&r);
	}
	/* 5: ACTIVE_DEFER is active */
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	struct ib_port p = mkport("mlx5_0", 1, 4, 5, 400);
	strlcpy_v(p.state, "5: ACTIVE_DEFER", sizeof(p.state));
	p.state_num = 5;
	add(&r, p);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	ib_readings_release(&r);
}

TEST(ib_slow_port_stands_out_and_rate_config)
{
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	add(&r, mkport("mlx5_0", 1, 4, 5, 400));
	add(&r, mkport("mlx5_1", 1, 4, 5, 200));
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "rate", "mlx5_1 port 1");
	CHECK(f);
	CHECK_INT(f->action, ACTION_REPLACE_CABLE);
	CHECK_CONTAINS(f->message, "200 Gb/sec (4X HDR), expected 400 Gb/s");
	CHECK(!result_find(&res, "rate", "mlx5_0"));
	check_result_release(&res);

	/* all at 200 with 200 expected: fine; all at 200 with 400 expected: all fail */
	r.ports[0] = mkport("mlx5_0", 1, 4, 5, 200);
	const char *want200[] = { "infiniband.rate=200", NULL };
	eval(&r, want200, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	const char *want400[] = { "infiniband.rate=400", NULL };
	eval(&r, want400, &res);
	CHECK(result_find(&res, "rate", "mlx5_0 port 1"));
	CHECK(result_find(&res, "rate", "mlx5_1 port 1"));
	check_result_release(&res);
	ib_readings_release(&r);
}

TEST(ib_counter_rises_fail_warn_and_reset)
{
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	r.state_dir = r.have_state = true;
	struct ib_port p = mkport("mlx5_0", 1, 4, 5, 400);
	for (int c = 0; c < IBC__COUNT; c++) {
		p.have_prev[c] = true;
		p.prev[c] = p.counter[c] = 100;
	}
	add(&r, p);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "steady since the last run");
	check_result_release(&res);

	/* below the threshold (10): nothing; at it: fail */
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 109;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 110;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "symbol_error", "mlx5_0 port 1");
	CHECK(f);
	CHECK_INT(f->action, ACTION_REPLACE_CABLE);
	CHECK_CONTAINS(f->message, "symbol_error +10 in under a second");
	check_result_release(&res);
	const char *high[] = { "infiniband.counter-threshold=50", NULL };
	eval(&r, high, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);

	/* one link_downed is enough */
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 100;
	r.ports[0].counter[IBC_LINK_DOWNED] = 101;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "link_downed", NULL));
	check_result_release(&res);
	r.ports[0].counter[IBC_LINK_DOWNED] = 100;

	/* warn-only counters warn */
	r.ports[0].counter[IBC_PORT_XMIT_DISCARDS] = 500;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_WARN);
	f = result_find(&res, "port_xmit_discards", NULL);
	CHECK(f && f->status == STATUS_WARN);
	check_result_release(&res);

	/* a counter that went down (cleared, rebooted) is the new baseline, not a rise */
	for (int c = 0; c < IBC__COUNT; c++)
		r.ports[0].counter[c] = 3;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);

	/* a counter stuck at its width's maximum hides rises: say so */
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 65535;
	r.ports[0].prev[IBC_SYMBOL_ERROR] = 65535;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_WARN);
	f = result_find(&res, "counter_saturated", "mlx5_0 port 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "symbol_error 65535");
	check_result_release(&res);
	ib_readings_release(&r);
}

TEST(ib_selection_count_and_skips)
{
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_SKIPPED);
	CHECK_CONTAINS(res.findings[0].message, "no InfiniBand devices");
	check_result_release(&res);
	/* no devices, but the configuration expects 8: the driver did not load */
	const char *want8[] = { "infiniband.count=8", NULL };
	eval(&r, want8, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "port_count", NULL));
	check_result_release(&res);

	/* an Ethernet (RoCE) port with its spare port unplugged is left out by default */
	struct ib_port eth = mkport("mlx5_4", 1, 1, 2, 25);
	strlcpy_v(eth.link_layer, "Ethernet", sizeof(eth.link_layer));
	add(&r, eth);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_SKIPPED);
	CHECK_CONTAINS(res.findings[0].message, "include-ethernet");
	check_result_release(&res);
	const char *eth_on[] = { "infiniband.include-ethernet=true", NULL };
	eval(&r, eth_on, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "port_down", "mlx5_4 port 1"));
	check_result_release(&res);

	add(&r, mkport("mlx5_0", 1, 4, 5, 400));
	add(&r, mkport("mlx5_1", 1, 1, 2, 10));
	/* naming HCAs checks those only, whatever their link layer */
	const char *named[] = { "infiniband.hcas=mlx5_0", NULL };
	eval(&r, named, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	const char *glob[] = { "infiniband.hcas=mlx5_*", NULL };
	eval(&r, glob, &res);
	CHECK(result_find(&res, "port_down", "mlx5_4"));
	CHECK(result_find(&res, "port_down", "mlx5_1"));
	check_result_release(&res);
	const char *ign[] = { "infiniband.ignore=mlx5_1/1", NULL };
	eval(&r, ign, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	/* one active port, two expected */
	const char *want2[] = { "infiniband.ignore=mlx5_1", "infiniband.count=2", NULL };
	eval(&r, want2, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "port_count", NULL);
	CHECK(f);
	CHECK_CONTAINS(f->message, "1 of 2 expected");
	check_result_release(&res);
	ib_readings_release(&r);
}

/* A port whose state or link layer cannot be read may be up: "7 of 8 active" is no failure then. */
TEST(ib_unreadable_port_is_no_missing_port)
{
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	for (unsigned i = 0; i < 7; i++) {
		char hca[16];
		snprintf(hca, sizeof(hca), "mlx5_%u", i);
		add(&r, mkport(hca, 1, 4, 5, 400));
	}
	struct ib_port blank = mkport("mlx5_7", 1, 4, 5, 400);
	blank.state[0] = '\0';
	blank.state_num = -1;
	add(&r, blank);
	const char *want8[] = { "infiniband.count=8", NULL };
	eval(&r, want8, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	const struct finding *f = result_find(&res, "port_count", NULL);
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "7 of 8 expected InfiniBand ports known to be active; 1 cannot");
	CHECK(f && f->action == ACTION_INVESTIGATE);
	CHECK(result_find(&res, "unreadable", "mlx5_7 port 1"));
	check_result_release(&res);
	/* short by two with one unreadable: short whatever it reads */
	const char *want9[] = { "infiniband.count=9", NULL };
	eval(&r, want9, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	f = result_find(&res, "port_count", NULL);
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_INSPECT_HARDWARE);
	CHECK_CONTAINS(f->message, "7 of 9 expected InfiniBand ports active; short even if");
	check_result_release(&res);
	ib_readings_release(&r);
}

TEST(ib_bad_config_is_an_error)
{
	const char *bad[] = { "infiniband.rate=fast", "infiniband.count=-1",
			      "infiniband.counter-threshold=0", "infiniband.include-ethernet=maybe" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct config cfg;
		struct ib_options opt;
		struct strbuf err = STRBUF_INIT;
		config_init(&cfg, "h");
		CHECK_INT(config_set(&cfg, bad[i], &err), 0);
		CHECK_MSG(ib_options_load(&cfg, &opt, &err) < 0, "accepted '%s'", bad[i]);
		CHECK(err.len > 0);
		ib_options_release(&opt);
		config_release(&cfg);
		strbuf_release(&err);
	}
}

static void write_port(const char *root, const char *hca, unsigned port, const char *state,
		       const char *phys, const char *rate, unsigned long long symbol_errors)
{
	struct strbuf p = STRBUF_INIT, v = STRBUF_INIT;
	const char *attrs[][2] = { { "state", state }, { "phys_state", phys }, { "rate", rate },
				   { "link_layer", "InfiniBand" } };
	for (size_t i = 0; i < ARRAY_SIZE(attrs); i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "sys/class/infiniband/%s/ports/%u/%s", hca, port, attrs[i][0]);
		strbuf_reset(&v);
		strbuf_addf(&v, "%s\n", attrs[i][1]);
		test_write(root, p.buf, v.buf);
	}
	for (int c = 0; c < IBC__COUNT; c++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "sys/class/infiniband/%s/ports/%u/counters/%s", hca, port,
			    ib_counters[c].name);
		strbuf_reset(&v);
		strbuf_addf(&v, "%llu\n", c == IBC_SYMBOL_ERROR ? symbol_errors : 0ull);
		test_write(root, p.buf, v.buf);
	}
	strbuf_release(&p);
	strbuf_release(&v);
}

TEST(ib_gather_and_state_between_runs)
{
	const char *root = test_tmpdir();
	struct strbuf state = STRBUF_INIT, err = STRBUF_INIT;
	write_port(root, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", 5);
	write_port(root, "mlx5_1", 1, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", 0);
	write_port(root, "mlx5_1", 10, "1: DOWN", "2: Polling", "10 Gb/sec (4X SDR)", 0);
	write_port(root, "mlx5_1", 2, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", 0);
	/* a port whose rate reads EINVAL while down is simply without a rate: a directory stands
	 * in for the unreadable file */
	strbuf_addf(&state, "%s/sys/class/infiniband/mlx5_1/ports/10/rate", root);
	CHECK_INT(unlink(state.buf), 0);
	test_mkdir(root, "sys/class/infiniband/mlx5_1/ports/10/rate");
	strbuf_reset(&state);
	strbuf_addf(&state, "%s/state", root);
	test_mkdir(root, "state");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct config cfg;
	config_init(&cfg, "h");
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h", .state_dir = state.buf };

	struct ib_readings r;
	memset(&r, 0, sizeof(r));
	CHECK_INT(ib_gather(&ctx, &r, &err), 0);
	CHECK_INT(r.nr, 4);
	CHECK_STR(r.ports[1].hca, "mlx5_1");
	CHECK_INT(r.ports[1].port, 1);
	CHECK_INT(r.ports[2].port, 2); /* numeric order */
	CHECK_INT(r.ports[3].port, 10);
	CHECK_INT(r.ports[0].state_num, 4);
	CHECK_INT(r.ports[0].phys_num, 5);
	CHECK(r.ports[0].rate_gbps == 400);
	CHECK(r.ports[0].have[IBC_SYMBOL_ERROR] && r.ports[0].counter[IBC_SYMBOL_ERROR] == 5);
	CHECK(!r.have_state);
	CHECK_STR(r.ports[3].rate, "");
	CHECK_STR(r.ports[3].error, "");
	ib_readings_release(&r);

	struct check_result res;
	check_result_init(&res, "infiniband");
	CHECK_INT(check_infiniband_run(&ctx, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "port_down", "mlx5_1 port 10"));
	CHECK(!result_find(&res, "symbol_error", NULL));
	check_result_release(&res);

	/* the second run: mlx5_0 gained 40 symbol errors */
	write_port(root, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", 45);
	const char *ign = "infiniband.ignore=mlx5_1:10";
	CHECK_INT(config_set(&cfg, ign, &err), 0);
	check_result_init(&res, "infiniband");
	CHECK_INT(check_infiniband_run(&ctx, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "symbol_error", "mlx5_0 port 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "+40");
	check_result_release(&res);

	/* the third run: steady */
	check_result_init(&res, "infiniband");
	CHECK_INT(check_infiniband_run(&ctx, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "steady since the last run");
	check_result_release(&res);

	/* a missing state file makes the port unknown, not healthy */
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/sys/class/infiniband/mlx5_1/ports/2/state", root);
	CHECK_INT(unlink(p.buf), 0);
	check_result_init(&res, "infiniband");
	CHECK_INT(check_infiniband_run(&ctx, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	CHECK(result_find(&res, "unreadable", "mlx5_1 port 2"));
	check_result_release(&res);
	strbuf_release(&p);

	config_release(&cfg);
	strbuf_release(&state);
	strbuf_release(&err);
	fsroot_release(&fr);
}

static void replace_with_dir(const char *root, const char *rel)
{
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/%s", root, rel);
	CHECK_INT(unlink(p.buf), 0);
	test_mkdir(root, rel);
	strbuf_release(&p);
}

TEST(ib_unreadable_values_are_unknown_by_port)
{
	const char *root = test_tmpdir();
	struct strbuf err = STRBUF_INIT;
	const char *up = "4: ACTIVE", *link = "5: LinkUp", *ndr = "400 Gb/sec (4X NDR)";
	write_port(root, "mlx5_0", 1, up, link, ndr, 0);
	/* an ACTIVE port whose rate reads NUL bytes is not "400 Gb/s like the others" */
	write_port(root, "mlx5_1", 1, up, link, ndr, 0);
	test_write_bytes(root, "sys/class/infiniband/mlx5_1/ports/1/rate", "\0\0\0\0\0\0", 6);
	/* an empty state is no "port is ?" failure */
	write_port(root, "mlx5_2", 1, up, link, ndr, 0);
	test_write(root, "sys/class/infiniband/mlx5_2/ports/1/state", "\n");
	/* a link layer of junk (an escape sequence) is not "Ethernet, left out" */
	write_port(root, "mlx5_3", 1, "1: DOWN", "2: Polling", ndr, 0);
	test_write(root, "sys/class/infiniband/mlx5_3/ports/1/link_layer", "\x1b]0;pwned\x07\n");
	/* an error counter of junk is not "steady" */
	write_port(root, "mlx5_4", 1, up, link, ndr, 0);
	test_write(root, "sys/class/infiniband/mlx5_4/ports/1/counters/symbol_error", "lots\n");
	/* a link layer that cannot be read (EISDIR stands in for EIO) is not InfiniBand */
	write_port(root, "mlx5_5", 1, up, link, ndr, 0);
	replace_with_dir(root, "sys/class/infiniband/mlx5_5/ports/1/link_layer");
	/* an HCA without a ports directory */
	test_mkdir(root, "sys/class/infiniband/mlx5_6");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct config cfg;
	config_init(&cfg, "h");
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h" };
	struct check_result res;
	check_result_init(&res, "infiniband");
	CHECK_MSG(check_infiniband_run(&ctx, &res, &err) == 0, "run: %s", err.buf);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	CHECK(!result_find(&res, NULL, "mlx5_0"));
	const struct finding *f = result_find(&res, "rate_unreadable", "mlx5_1 port 1");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "/sys/class/infiniband/mlx5_1/ports/1/rate' holds NUL bytes");
	f = result_find(&res, "unreadable", "mlx5_2 port 1");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "/sys/class/infiniband/mlx5_2/ports/1/state' is empty");
	CHECK(!result_find(&res, "port_down", NULL));
	f = result_find(&res, "link_layer_unreadable", "mlx5_3 port 1");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "holds '\\x1b]0;pwned\\x07'");
	CHECK_NOT_CONTAINS(f->message, "\x1b");
	f = result_find(&res, "counters_unreadable", "mlx5_4 port 1");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "symbol_error");
	CHECK_CONTAINS(f->message, "holds 'lots', not a number");
	f = result_find(&res, "link_layer_unreadable", "mlx5_5 port 1");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "link_layer");
	f = result_find(&res, "unreadable", "mlx5_6");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "/sys/class/infiniband/mlx5_6/ports' is missing");
	f = result_find(&res, "summary", NULL);
	CHECK(f);
	CHECK_CONTAINS(f->message, "1 of 7 ports without problems");
	check_result_release(&res);
	config_release(&cfg);
	strbuf_release(&err);
	fsroot_release(&fr);
}

TEST(ib_down_port_with_unreadable_phys_state_says_so)
{
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	struct ib_port p = mkport("mlx5_0", 1, 1, 2, 400);
	p.phys_num = -1;
	p.phys_state[0] = '\0';
	strlcpy_v(p.phys_error, "'/sys/class/infiniband/mlx5_0/ports/1/phys_state' is empty",
		  sizeof(p.phys_error));
	add(&r, p);
	eval(&r, NULL, &res);
	/* DOWN is known from state alone: a failure, with why it is unknown said */
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "port_down", "mlx5_0 port 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "is DOWN (phys_state unreadable: ");
	CHECK_CONTAINS(f->message, "phys_state' is empty");
	check_result_release(&res);

	/* an active port's rate that does not parse is unknown, not skipped */
	r.ports[0] = mkport("mlx5_0", 1, 4, 5, 400);
	strlcpy_v(r.ports[0].rate, "fast\x1b[2J", sizeof(r.ports[0].rate));
	r.ports[0].rate_gbps = 0;
	add(&r, mkport("mlx5_1", 1, 4, 5, 400));
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	f = result_find(&res, "rate_unreadable", "mlx5_0 port 1");
	CHECK(f);
	CHECK_CONTAINS(f->message, "holds 'fast\\x1b[2J', not a rate");
	f = result_find(&res, "summary", NULL);
	CHECK(f);
	CHECK_NOT_CONTAINS(f->message, "400 Gb/s");
	check_result_release(&res);
	ib_readings_release(&r);
}

TEST(ib_ports_without_counters_are_not_steady)
{
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	r.state_dir = r.have_state = true;
	struct ib_port p = mkport("mlx5_0", 1, 4, 5, 400);
	for (int c = 0; c < IBC__COUNT; c++)
		p.have[c] = false; /* no counters/ directory at all */
	add(&r, p);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "error counters: none (the driver shows no counters)");
	CHECK_NOT_CONTAINS(res.findings[0].message, "steady");
	check_result_release(&res);
	ib_readings_release(&r);
}

TEST(ib_every_port_of_a_large_hca_is_read)
{
	const char *root = test_tmpdir();
	struct strbuf err = STRBUF_INIT;
	/* 80 ports: a fixed table of 64 dropped the rest unsaid ("9" lists last) */
	for (unsigned i = 1; i <= 80; i++)
		write_port(root, "sw0", i, i == 9 ? "1: DOWN" : "4: ACTIVE",
			   i == 9 ? "2: Polling" : "5: LinkUp", "400 Gb/sec (4X NDR)", 0);
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct config cfg;
	config_init(&cfg, "h");
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h" };
	struct ib_readings r;
	memset(&r, 0, sizeof(r));
	CHECK_INT(ib_gather(&ctx, &r, &err), 0);
	CHECK_INT(r.nr, 80);
	CHECK_INT(r.ports[8].port, 9);
	CHECK_INT(r.ports[79].port, 80);
	ib_readings_release(&r);
	struct check_result res;
	check_result_init(&res, "infiniband");
	CHECK_INT(check_infiniband_run(&ctx, &res, &err), 0);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "port_down", "sw0 port 9"));
	check_result_release(&res);
	config_release(&cfg);
	strbuf_release(&err);
	fsroot_release(&fr);
}

TEST_TIMEOUT(ib_blocking_sysfs_file_times_out_as_unknown, 60)
{
	const char *root = test_tmpdir();
	struct strbuf fifo = STRBUF_INIT, state = STRBUF_INIT;
	write_port(root, "mlx5_0", 1, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", 0);
	strbuf_addf(&fifo, "%s/sys/class/infiniband/mlx5_0/ports/1/state", root);
	strbuf_addf(&state, "%s/state", root);
	CHECK_INT(unlink(fifo.buf), 0);
	CHECK_INT(mkfifo(fifo.buf, 0644), 0);
	/* a writer that never writes: a reader blocks as on a hung sysfs attribute */
	int fd = open(fifo.buf, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	const char *args[] = { "check", "--json", "--only", "infiniband", "--root", root,
			       "--state-dir", state.buf, "-c", "infiniband.timeout=2", NULL };
	struct child c;
	uint64_t t0 = mono_ms();
	test_run_vigil(&c, args, NULL);
	uint64_t took = mono_ms() - t0;
	CHECK_MSG(c.exit_code == 3, "exit %d; stdout:\n%s\nstderr:\n%s", c.exit_code, c.out.buf,
		  c.err.buf);
	struct json_value *rep = test_parse_json(&c);
	const struct json_value *ch = json_path(rep, "checks.0");
	CHECK(ch);
	CHECK_STR(json_get_string(ch, "name"), "infiniband");
	CHECK_STR(json_get_string(ch, "status"), "unknown");
	CHECK_CONTAINS(json_get_string(ch, "error"), "timed out");
	CHECK_CONTAINS(json_get_string(rep, "reason"), "infiniband");
	CHECK_MSG(took < 15000, "took %llu ms with a 2 s deadline", (unsigned long long)took);
	json_free(rep);
	child_release(&c);
	close(fd);
	strbuf_release(&fifo);
	strbuf_release(&state);
}

/* evaluate() with a time base: the rise over how long, and the rate it is judged by. */
TEST(ib_counter_rise_is_a_rate_with_its_time)
{
	struct ib_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	r.state_dir = r.have_state = true;
	r.age = 300;
	struct ib_port p = mkport("mlx5_1", 1, 4, 5, 400);
	for (int c = 0; c < IBC__COUNT; c++) {
		p.have_prev[c] = true;
		p.prev[c] = p.counter[c] = 12;
	}
	p.counter[IBC_SYMBOL_ERROR] = 4012;
	add(&r, p);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "symbol_error", "mlx5_1 port 1");
	CHECK(f);
	CHECK_STR(f->message, "mlx5_1 port 1: symbol_error +4000 in 5 min (48,000/h): bit errors "
			      "on the link");
	CHECK_STR(detail(f, "delta"), "4000");
	CHECK_STR(detail(f, "seconds"), "300");
	CHECK_STR(detail(f, "rate_per_hour"), "48000");
	CHECK_STR(detail(f, "threshold_per_hour"), "10");
	check_result_release(&res);

	/* the agent every 30 s: a rise of 1 is not 120/h of anything, 9 is under the 10 an hour */
	r.age = 30;
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 13;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "steady since the last run (30 s ago)");
	check_result_release(&res);
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 21;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 22;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	check_result_release(&res);

	/* over 2 h: 15 is 7.5/h (under 10/h), 20 is 10/h */
	r.age = 7200;
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 27;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 32;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	f = result_find(&res, "symbol_error", NULL);
	CHECK(f);
	CHECK_CONTAINS(f->message, "symbol_error +20 in 2 h (10/h)");
	check_result_release(&res);

	/* a low symbol-error-rate still wants min-rise: 3 in 2 h is 1.5/h, over 1/h, under 5 */
	const char *low[] = { "infiniband.symbol-error-rate=1", NULL };
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 15;
	eval(&r, low, &res);
	CHECK_INT(res.status, STATUS_OK);
	check_result_release(&res);
	const char *low1[] = { "infiniband.symbol-error-rate=1", "infiniband.min-rise=3", NULL };
	eval(&r, low1, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	check_result_release(&res);
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 12;

	/* link_downed: any rise, however slow, still fails, with its time */
	r.age = 20 * 3600;
	r.ports[0].counter[IBC_LINK_DOWNED] = 13;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	f = result_find(&res, "link_downed", NULL);
	CHECK(f);
	CHECK_CONTAINS(f->message, "link_downed +1 in 20 h (0.05/h)");
	check_result_release(&res);
	ib_readings_release(&r);
}

/* The kept reading is the baseline for up to an hour, then replaced; a day-old or another
 * boot's reading is a new baseline, said so in the summary. */
TEST(ib_baseline_kept_for_an_hour_and_renewed)
{
	struct ib_readings r;
	struct check_result res;
	struct strbuf text = STRBUF_INIT;
	memset(&r, 0, sizeof(r));
	add(&r, mkport("mlx5_0", 1, 4, 5, 400));
	r.ports[0].counter[IBC_SYMBOL_ERROR] = 7;
	r.now = 1733300000;
	r.boot = 1733200000;
	ib_state_apply(&r, "# vigil infiniband counters\nmlx5_0 1 symbol_error 3\n"
			   "@time 1733299400\n@boot 1733200001\n");
	CHECK_INT(r.base, BASE_OK);
	CHECK(r.age == 600);
	CHECK(r.ports[0].have_prev[IBC_SYMBOL_ERROR] && r.ports[0].prev[IBC_SYMBOL_ERROR] == 3);
	ib_state_format(&r, &text);
	CHECK_CONTAINS(text.buf, "mlx5_0 1 symbol_error 3\n");
	CHECK_CONTAINS(text.buf, "@time 1733299400\n");
	CHECK_CONTAINS(text.buf, "@boot 1733200000\n");

	/* an hour on: this reading, dated now, is the next baseline */
	strbuf_reset(&text);
	ib_state_apply(&r, "# vigil infiniband counters\nmlx5_0 1 symbol_error 3\n"
			   "@time 1733296000\n");
	CHECK(r.age == 4000);
	ib_state_format(&r, &text);
	CHECK_CONTAINS(text.buf, "mlx5_0 1 symbol_error 7\n");
	CHECK_CONTAINS(text.buf, "@time 1733300000\n");

	/* 30 h old: not compared, said so (the boot time unknown) */
	r.state_dir = true;
	r.boot = -1;
	ib_state_apply(&r, "# vigil infiniband counters\nmlx5_0 1 symbol_error 3\n"
			   "@time 1733192000\n");
	CHECK_INT(r.base, BASE_STALE);
	CHECK(!r.ports[0].have_prev[IBC_SYMBOL_ERROR]);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_CONTAINS(res.findings[0].message, "new baseline: the last reading is 30 h old");
	check_result_release(&res);

	/* another boot: not compared, said so */
	r.boot = 1733200000;
	ib_state_apply(&r, "# vigil infiniband counters\nmlx5_0 1 symbol_error 3\n"
			   "@time 1733299400\n@boot 1733100000\n");
	CHECK_INT(r.base, BASE_OTHER_BOOT);
	eval(&r, NULL, &res);
	CHECK_CONTAINS(res.findings[0].message, "new baseline: the last reading is from another boot");
	check_result_release(&res);
	strbuf_release(&text);
	ib_readings_release(&r);
}
