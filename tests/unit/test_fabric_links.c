/*
 * test_fabric_links.c: 'vigil fabric links' and the parsers under it (src/fabric/topo.h,
 * links.h): recorded-looking iblinkinfo (default and -l) and ibnetdiscover outputs of a 2-tier
 * rail fabric (tests/data/fabric/links/), healthy and with each fault; CRLF, truncated,
 * garbage, NUL-filled, empty, FIFO and escape-laden inputs; the generated fat trees written
 * back in each tool's form and read again.
 */
#include "../harness.h"
#include "../../src/fabric/links.h"
#include "../../src/lib/fileio.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void fixture(struct strbuf *text, const char *name)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&path, "tests/data/fabric/links/%s", name);
	struct strbuf full = STRBUF_INIT;
	test_src_path(&full, path.buf);
	CHECK_MSG(read_file_bounded(full.buf, text, 1 << 24, &err) == READ_OK, "%s", err.buf);
	strbuf_release(&path);
	strbuf_release(&full);
	strbuf_release(&err);
}

static void run_links(struct child *c, const char *file, const char *opt1, const char *opt2)
{
	struct strbuf path = STRBUF_INIT;
	if (file[0] == '/') {
		strbuf_addstr(&path, file);
	} else {
		struct strbuf rel = STRBUF_INIT;
		strbuf_addf(&rel, "tests/data/fabric/links/%s", file);
		test_src_path(&path, rel.buf);
		strbuf_release(&rel);
	}
	const char *args[] = { "fabric", "links", path.buf, opt1, opt2, NULL };
	test_run_vigil(c, args, NULL);
	strbuf_release(&path);
}

/* The finding of kind at (sw, port) in a --json output, or NULL. */
static const struct json_value *finding(const struct json_value *v, const char *kind,
					const char *sw, int port)
{
	const struct json_value *arr = json_get(v, "findings");
	for (size_t i = 0; arr && i < arr->nr; i++) {
		const struct json_value *x = arr->items[i];
		double p;
		if (!strcmp(json_get_string(x, "kind"), kind) &&
		    !strcmp(json_get_string(x, "switch"), sw) && json_get_number(x, "port", &p) &&
		    (int)p == port)
			return x;
	}
	return NULL;
}

static double count(const struct json_value *v, const char *key)
{
	double d = -1;
	json_get_number(json_get(v, "counts"), key, &d);
	return d;
}

TEST(fabric_links_iblinkinfo_faults_each_once_with_its_action)
{
	struct child c;
	run_links(&c, "iblinkinfo-faults.txt", "--json", NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(count(v, "switches"), 8);
	CHECK_INT(count(v, "hcas"), 12);
	CHECK_INT(count(v, "narrow"), 1);
	CHECK_INT(count(v, "slow"), 1);
	CHECK_INT(count(v, "init"), 1);
	CHECK_INT(count(v, "asymmetric"), 1);
	CHECK_INT(count(v, "findings"), 4);
	CHECK_INT(count(v, "down_not_judged"), 19);
	CHECK_INT(count(v, "disabled"), 1);

	const struct json_value *x = finding(v, "narrow", "ib-leaf-01", 6);
	CHECK(x);
	CHECK_STR(json_get_string(x, "peer"), "ib-spine-02");
	CHECK_STR(json_get_string(x, "width"), "1X");
	CHECK_STR(json_get_string(x, "expected_width"), "4X");
	CHECK_STR(json_get_string(x, "action"), "REPLACE_CABLE");
	x = finding(v, "slow", "ib-leaf-03", 1);
	CHECK(x);
	CHECK_STR(json_get_string(x, "peer"), "gpu-b001 mlx5_1");
	CHECK_STR(json_get_string(x, "speed"), "HDR");
	CHECK_STR(json_get_string(x, "expected_speed"), "NDR");
	x = finding(v, "init", "ib-leaf-01", 7);
	CHECK(x);
	CHECK_CONTAINS(json_get_string(x, "detail"), "Initialize");
	CHECK_STR(json_get_string(x, "action"), "INVESTIGATE");
	x = finding(v, "asymmetric", "ib-leaf-02", 2);
	CHECK(x);
	CHECK_STR(json_get_string(x, "peer"), "gpu-b006 mlx5_0");
	CHECK_CONTAINS(json_get_string(x, "detail"), "Down/Polling");
	json_free(v);
	child_release(&c);

	run_links(&c, "iblinkinfo-faults.txt", NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "narrow     ib-leaf-01 port 6 -> ib-spine-02 port 1");
	CHECK_CONTAINS(c.out.buf, "4 links to act on");
	child_release(&c);
}

TEST(fabric_links_healthy_fabric_exits_0_and_counts_unjudged_down_ports)
{
	struct child c;
	run_links(&c, "iblinkinfo-healthy.txt", NULL, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "HCA links at 4X NDR, switch links at 4X NDR");
	CHECK_CONTAINS(c.out.buf, "19 Down ports with no peer expected");
	CHECK_CONTAINS(c.out.buf, "no link to act on");
	child_release(&c);
	run_links(&c, "ibnetdiscover.txt", "--json", NULL);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "format"), "ibnetdiscover");
	CHECK_INT(count(v, "links"), 28);
	CHECK_INT(count(v, "lines_not_understood"), 0);
	json_free(v);
	child_release(&c);
}

TEST(fabric_links_down_port_judged_against_the_expected_fabric)
{
	struct child c;
	/* without --expect a Down port is not a finding: an unused port looks the same */
	run_links(&c, "iblinkinfo-hostdown.txt", NULL, NULL);
	CHECK_INT(c.exit_code, 0);
	child_release(&c);
	struct strbuf ex = STRBUF_INIT;
	test_src_path(&ex, "tests/data/fabric/links/ibnetdiscover.txt");
	run_links(&c, "iblinkinfo-hostdown.txt", "--json", "--expect");
	CHECK_INT(c.exit_code, 2); /* --expect without its value */
	child_release(&c);
	struct strbuf path = STRBUF_INIT;
	test_src_path(&path, "tests/data/fabric/links/iblinkinfo-hostdown.txt");
	const char *args[] = { "fabric", "links", path.buf, "--expect", ex.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(count(v, "down"), 1);
	const struct json_value *x = finding(v, "down", "ib-leaf-01", 3);
	CHECK(x);
	CHECK_STR(json_get_string(x, "peer"), "gpu-b003 mlx5_0");
	CHECK_STR(json_get_string(x, "action"), "REPLACE_CABLE");
	json_free(v);
	child_release(&c);
	strbuf_release(&ex);
	strbuf_release(&path);
}

TEST(fabric_links_line_form_and_ibnetdiscover_speed)
{
	struct child c;
	run_links(&c, "iblinkinfo-line.txt", "--json", NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(count(v, "switches"), 8); /* told from the shared port GUID of a switch's lines */
	CHECK_INT(count(v, "hcas"), 12);
	CHECK_INT(count(v, "narrow"), 1);
	CHECK_INT(count(v, "findings"), 1);
	CHECK(finding(v, "narrow", "ib-leaf-03", 4));
	json_free(v);
	child_release(&c);

	run_links(&c, "ibnetdiscover-slow.txt", "--json", NULL);
	CHECK_INT(c.exit_code, 1);
	v = test_parse_json(&c);
	CHECK_INT(count(v, "slow"), 1);
	CHECK_INT(count(v, "findings"), 1);
	CHECK(finding(v, "slow", "ib-spine-04", 3));
	json_free(v);
	child_release(&c);
}

/* the same bytes with every "NDR" made "HDR": the fabric's own mode, not a fixed NDR */
TEST(fabric_links_mode_is_the_fabrics_not_a_fixed_speed)
{
	struct strbuf t = STRBUF_INIT;
	fixture(&t, "ibnetdiscover.txt");
	for (char *p = strstr(t.buf, "NDR"); p; p = strstr(p, "NDR"))
		p[0] = 'H';
	test_write(test_tmpdir(), "hdr.txt", t.buf);
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/hdr.txt", test_tmpdir());
	struct child c;
	run_links(&c, path.buf, NULL, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "switch links at 4X HDR");
	child_release(&c);
	strbuf_release(&t);
	strbuf_release(&path);
}

TEST(fabric_links_crlf_and_truncation_survived)
{
	struct strbuf t = STRBUF_INIT, crlf = STRBUF_INIT;
	fixture(&t, "iblinkinfo-faults.txt");
	for (size_t i = 0; i < t.len; i++) {
		if (t.buf[i] == '\n')
			strbuf_addch(&crlf, '\r');
		strbuf_addch(&crlf, t.buf[i]);
	}
	struct fabric f;
	struct strbuf err = STRBUF_INIT;
	fabric_init(&f);
	CHECK(fabric_parse(&f, crlf.buf, crlf.len, &err) == 0);
	CHECK_INT(f.garbage, 0);
	struct link_survey s;
	links_survey(&f, NULL, &s);
	CHECK_INT(s.nr, 4);
	CHECK_INT(s.count[LF_NARROW], 1);
	links_survey_release(&s);
	fabric_release(&f);

	/* cut in the middle of a port line: the cut line is garbage, the rest is read */
	const char *cut = strstr(t.buf, "Switch: 0xfc6a1c0300000003");
	CHECK(cut);
	size_t n = (size_t)(cut - t.buf) + 120;
	fabric_init(&f);
	CHECK(fabric_parse(&f, t.buf, n, &err) == 0);
	CHECK_INT(f.garbage, 1);
	CHECK(f.nr_links > 10);
	links_survey(&f, NULL, &s);
	links_survey_release(&s);
	fabric_release(&f);

	/* every prefix parses without a crash (ASan/UBSan watch) */
	for (size_t k = 0; k < t.len; k += 37) {
		fabric_init(&f);
		if (fabric_parse(&f, t.buf, k, &err) == 0) {
			links_survey(&f, NULL, &s);
			links_survey_release(&s);
		}
		fabric_release(&f);
	}
	strbuf_release(&t);
	strbuf_release(&crlf);
	strbuf_release(&err);
}

TEST(fabric_links_parses_fdr10_hoq_and_down_lines)
{
	const char *text =
		"Switch: 0x0002c90200482d08 MF0;sw-a:IS5030/U1:\n"
		"           1    1[  ] ==( 4X   10.0 Gbps (FDR10) Active/  LinkUp) (HOQ:14 VL_Stall:7)==>      11    1[  ] \"h1 mlx4_0\" ( )\n"
		"           1    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )\n"
		"           1    3[  ] ==( 1X        2.5 Gbps  Armed/  LinkUp)==>    \"Port not available\"\n"
		"CA: h1 mlx4_0:\n"
		"      0x0002c90300001235     11    1[  ] ==( 4X   10.0 Gbps (FDR10) Active/  LinkUp)==>       1    1[  ] \"MF0;sw-a:IS5030/U1\" ( Could be 14.0625 Gbps)\n";
	struct fabric f;
	struct strbuf err = STRBUF_INIT;
	fabric_init(&f);
	CHECK_MSG(fabric_parse(&f, text, strlen(text), &err) == 0, "%s", err.buf);
	CHECK_INT(f.garbage, 0);
	CHECK_INT(f.nr_ports, 4);
	CHECK_INT(f.ports[0].speed, IBSP_FDR10);
	CHECK_INT(f.ports[0].width, 4);
	CHECK_INT(f.ports[1].state, IBS_DOWN);
	CHECK_INT(f.ports[1].phys, IBP_POLLING);
	CHECK_INT(f.ports[1].peer, -1);
	CHECK_INT(f.ports[2].state, IBS_ARMED);
	CHECK_INT(f.nr_links, 1);
	CHECK_STR(f.nodes[f.links[0].a].name, "MF0;sw-a:IS5030/U1");
	CHECK(f.links[0].pa >= 0 && f.links[0].pb >= 0);
	int ca = f.nodes[f.links[0].a].is_switch ? f.links[0].b : f.links[0].a;
	CHECK_STR(f.nodes[ca].host, "h1");
	CHECK_STR(f.nodes[ca].hca, "mlx4_0");
	struct link_survey s;
	links_survey(&f, NULL, &s);
	CHECK_INT(s.count[LF_INIT], 1); /* the Armed port with no peer */
	CHECK_INT(s.down_unjudged, 1);
	links_survey_release(&s);
	fabric_release(&f);
	strbuf_release(&err);
}

TEST(fabric_links_nothing_understood_is_unknown)
{
	const char *dir = test_tmpdir();
	test_write(dir, "garbage.txt", "hello\nthis is not iblinkinfo\n==( nope\n[1] \"x\"\n");
	test_write(dir, "empty.txt", "");
	test_write_bytes(dir, "nul.txt", "\0\0\0\0\0\0\0\0", 8);
	test_write(dir, "headers.txt", "Switch: 0x0002c90200482d08 sw:\nCA: h1 mlx5_0:\n");
	static const char *const names[] = { "garbage.txt", "empty.txt", "nul.txt", "headers.txt" };
	for (size_t i = 0; i < 4; i++) {
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "%s/%s", dir, names[i]);
		struct child c;
		run_links(&c, p.buf, NULL, NULL);
		CHECK_MSG(c.exit_code == 3, "%s: exit %d", names[i], c.exit_code);
		CHECK_CONTAINS(c.err.buf, "unknown");
		CHECK_CONTAINS(c.err.buf, "no iblinkinfo or ibnetdiscover port line");
		child_release(&c);
		strbuf_release(&p);
	}
}

/* unreadable input is "could not tell" (3), the command line alone is usage (2): vigil(1) */
TEST(fabric_links_unreadable_input_is_could_not_tell)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/fifo", dir);
	CHECK(mkfifo(p.buf, 0600) == 0);
	struct child c;
	run_links(&c, p.buf, NULL, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "FIFO");
	child_release(&c);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/missing", dir);
	run_links(&c, p.buf, NULL, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "cannot read");
	child_release(&c);
	const char *none[] = { "fabric", "links", NULL };
	test_run_vigil(&c, none, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	strbuf_release(&p);
}

TEST(fabric_links_names_with_control_bytes_are_cleaned)
{
	const char *text =
		"Switch: 0x0002c90200482d08 sw\x1b[31mred:\n"
		"           1    1[  ] ==( 1X   106.25 Gbps Active/  LinkUp)==>      11    1[  ] \"h\x1b]0;x\x07 mlx5_0\" ( )\n"
		"           1    2[  ] ==( 4X   106.25 Gbps Active/  LinkUp)==>      12    1[  ] \"h2 mlx5_0\" ( )\n"
		"           1    3[  ] ==( 4X   106.25 Gbps Active/  LinkUp)==>      13    1[  ] \"h3 mlx5_0\" ( )\n";
	test_write(test_tmpdir(), "esc.txt", text);
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/esc.txt", test_tmpdir());
	struct child c;
	run_links(&c, p.buf, NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK(!memchr(c.out.buf, 0x1b, c.out.len));
	CHECK(!memchr(c.out.buf, 0x07, c.out.len));
	CHECK_CONTAINS(c.out.buf, "narrow");
	child_release(&c);
	run_links(&c, p.buf, "--json", NULL);
	struct json_value *v = test_parse_json(&c);
	CHECK_INT(count(v, "narrow"), 1);
	json_free(v);
	child_release(&c);
	strbuf_release(&p);
}

/* a generated fat tree written as each tool prints it reads back as the same graph */
TEST(fabric_links_generated_fabrics_read_back_in_every_form)
{
	static const char *const specs[] = { "hosts=16 hcas=1 radix=8",
		"hosts=64 hcas=8 radix=16 tiers=3", "hosts=512 hcas=8 radix=64 tiers=3" };
	for (size_t i = 0; i < 3; i++) {
		struct fat_tree_spec spec;
		struct strbuf err = STRBUF_INIT;
		struct fabric g;
		fabric_init(&g);
		CHECK(fat_tree_parse(specs[i], &spec, &err) == 0);
		CHECK_MSG(fabric_fat_tree(&g, &spec, &err) == 0, "%s", err.buf);
		for (int form = 0; form < 3; form++) {
			struct strbuf t = STRBUF_INIT;
			if (form == 0)
				fabric_write_ibnetdiscover(&g, &t);
			else
				fabric_write_iblinkinfo(&g, form == 2, &t);
			struct fabric f;
			fabric_init(&f);
			CHECK_MSG(fabric_parse(&f, t.buf, t.len, &err) == 0, "%s", err.buf);
			CHECK_MSG(f.nr_links == g.nr_links, "%s form %d: %zu links, want %zu",
				  specs[i], form, f.nr_links, g.nr_links);
			CHECK_INT(f.garbage, 0);
			size_t sw = 0, gsw = 0;
			for (size_t n = 0; n < f.nr_nodes; n++)
				sw += f.nodes[n].is_switch;
			for (size_t n = 0; n < g.nr_nodes; n++)
				gsw += g.nodes[n].is_switch;
			CHECK_INT(sw, gsw);
			struct link_survey s;
			links_survey(&f, NULL, &s);
			CHECK_INT(s.nr, 0);
			links_survey_release(&s);
			fabric_release(&f);
			strbuf_release(&t);
		}
		fabric_release(&g);
		strbuf_release(&err);
	}
}

/* The same arrays as vigil fabric ufm: ports to disable (not the asymmetric one: a person
 * looks first), one ticket per link at fault, its id stable across runs; reenable and
 * incidents empty. */
TEST(fabric_links_json_has_ufms_decision_arrays)
{
	struct child c;
	run_links(&c, "iblinkinfo-faults.txt", "--json", NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *dis = json_get(v, "disable"), *tk = json_get(v, "tickets");
	CHECK(dis && dis->type == JSON_ARRAY && dis->nr == 3);
	CHECK(tk && tk->type == JSON_ARRAY && tk->nr == 4);
	CHECK(json_get(v, "reenable") && json_get(v, "reenable")->nr == 0);
	CHECK(json_get(v, "incidents") && json_get(v, "incidents")->nr == 0);
	for (size_t i = 0; i < dis->nr; i++) {
		CHECK(strcmp(json_get_string(dis->items[i], "cause"), "asymmetric") != 0);
		CHECK(!strncmp(json_get_string(dis->items[i], "ticket"), "LINK-", 5));
		CHECK(json_get_string(json_get(dis->items[i], "port"), "switch") != NULL);
	}
	CHECK_STR(json_get_string(dis->items[0], "cause"), "slow");
	CHECK_STR(json_get_string(json_get(dis->items[0], "port"), "switch"), "ib-leaf-03");
	char first[32];
	snprintf(first, sizeof(first), "%s", json_get_string(tk->items[0], "id"));
	json_free(v);
	child_release(&c);
	run_links(&c, "iblinkinfo-faults.txt", "--json", NULL);
	v = test_parse_json(&c);
	CHECK_STR(json_get_string(json_path(v, "tickets.0"), "id"), first);
	json_free(v);
	child_release(&c);
}
