/*
 * test_fabric_plan.c: the burn-in planner (src/fabric/plan.h) and 'vigil fabric burnin plan':
 * every link covered on generated fat trees of 16 to 4,096 hosts (1 to 3 tiers, 1 and 8 HCAs
 * per host, read back from ibnetdiscover text too), each HCA at most once per stage, stages
 * against the computed lower bound, hosts per stage, links that cannot be covered listed by id,
 * the JSON the runner reads, and the committed example plan kept equal to the planner's.
 */
#include "../harness.h"
#include "../../src/fabric/plan.h"
#include "../../src/lib/fileio.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void gen(struct fabric *f, const char *words)
{
	struct fat_tree_spec spec;
	struct strbuf err = STRBUF_INIT;
	fabric_init(f);
	CHECK_MSG(fat_tree_parse(words, &spec, &err) == 0, "%s: %s", words, err.buf);
	CHECK_MSG(fabric_fat_tree(f, &spec, &err) == 0, "%s: %s", words, err.buf);
	strbuf_release(&err);
}

/* plan f, verify it, and check full coverage within slack stages of the lower bound */
static void plan_and_check(const struct fabric *f, const struct plan_opts *o, const char *what,
			   unsigned slack)
{
	struct plan p;
	struct strbuf err = STRBUF_INIT;
	CHECK_MSG(plan_build(f, o, &p, &err) == 0, "%s: %s", what, err.buf);
	CHECK_MSG(plan_verify(f, o, &p, &err) == 0, "%s: %s", what, err.buf);
	CHECK_MSG(p.nr_uncovered == 0, "%s: %zu links uncovered", what, p.nr_uncovered);
	CHECK_MSG(p.nr_stages >= p.lower_bound, "%s: %zu stages under the bound %u", what,
		  p.nr_stages, p.lower_bound);
	CHECK_MSG(p.nr_stages <= p.lower_bound + slack, "%s: %zu stages, bound %u", what,
		  p.nr_stages, p.lower_bound);
	size_t covered = 0;
	for (size_t i = 0; i < p.nr_links; i++)
		covered += p.links[i].covered;
	CHECK_INT(covered, f->nr_links);
	plan_release(&p);
	strbuf_release(&err);
}

TEST_TIMEOUT(fabric_plan_covers_every_link_of_generated_fat_trees, 240)
{
	static const char *const specs[] = {
		"hosts=16 hcas=1 radix=32",            /* one switch */
		"hosts=16 hcas=1 radix=8",             /* 2 tiers */
		"hosts=16 hcas=8 radix=8 tiers=3",
		"hosts=64 hcas=8 radix=16 tiers=3",
		"hosts=100 hcas=2 radix=16 tiers=3",   /* partial leaves and pods */
		"hosts=256 hcas=1 radix=32",
		"hosts=512 hcas=8 radix=64 tiers=3",   /* the benchmark's fabric */
		"hosts=1024 hcas=1 radix=64",
		"hosts=4096 hcas=1 radix=64 tiers=3",
		"hosts=4096 hcas=2 radix=64 tiers=3",
	};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct fabric f;
		gen(&f, specs[i]);
		struct plan_opts o = { 0 };
		plan_and_check(&f, &o, specs[i], 1);
		fabric_release(&f);
	}
}

TEST_TIMEOUT(fabric_plan_from_ibnetdiscover_text_of_generated_fabrics, 120)
{
	static const char *const specs[] = { "hosts=16 hcas=8 radix=16", "hosts=512 hcas=8 radix=64 tiers=3" };
	for (size_t i = 0; i < 2; i++) {
		struct fabric g, f;
		gen(&g, specs[i]);
		struct strbuf t = STRBUF_INIT, err = STRBUF_INIT;
		fabric_write_ibnetdiscover(&g, &t);
		fabric_init(&f);
		CHECK(fabric_parse(&f, t.buf, t.len, &err) == 0);
		struct plan_opts o = { 0 };
		plan_and_check(&f, &o, specs[i], 1);
		fabric_release(&f);
		fabric_release(&g);
		strbuf_release(&t);
		strbuf_release(&err);
	}
}

TEST(fabric_plan_hosts_per_stage_bounds_each_stage)
{
	struct fabric f;
	gen(&f, "hosts=32 hcas=4 radix=16");
	struct plan_opts o = { .hosts_per_stage = 6 };
	struct plan p;
	struct strbuf err = STRBUF_INIT;
	CHECK(plan_build(&f, &o, &p, &err) == 0);
	CHECK_MSG(plan_verify(&f, &o, &p, &err) == 0, "%s", err.buf);
	CHECK_INT(p.lower_bound, 6); /* ceil(32 / 6) */
	CHECK_CONTAINS(p.bound_why, "at most 6 per stage");
	CHECK_INT(p.nr_uncovered, 0);
	for (size_t s = 0; s < p.nr_stages; s++)
		CHECK(p.stages[s].hosts <= 6);
	CHECK_MSG(p.nr_stages <= 8, "%zu stages", p.nr_stages);
	plan_release(&p);
	fabric_release(&f);
	strbuf_release(&err);
}

/* an oversubscribed leaf (2 HCAs, 4 uplinks) and an HCA with two cabled ports raise the bound */
TEST(fabric_plan_lower_bound_from_uplinks_and_dual_ports)
{
	struct fabric f;
	fabric_init(&f);
	int sp[4], lf[3];
	char name[32];
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "spine%d", i + 1);
		sp[i] = fabric_add_node(&f, name, true, 0x100 + (uint64_t)i, 1 + i);
	}
	for (int l = 0; l < 3; l++) {
		snprintf(name, sizeof(name), "leaf%d", l + 1);
		lf[l] = fabric_add_node(&f, name, true, 0x200 + (uint64_t)l, 10 + l);
		for (int i = 0; i < 4; i++)
			fabric_connect(&f, lf[l], 10 + i, sp[i], l + 1, 4, IBSP_NDR);
		for (int h = 0; h < 2; h++) {
			snprintf(name, sizeof(name), "host%d mlx5_0", l * 2 + h + 1);
			int ca = fabric_add_node(&f, name, false, 0x300 + (uint64_t)(l * 2 + h),
						 20 + l * 2 + h);
			fabric_connect(&f, ca, 1, lf[l], h + 1, 4, IBSP_NDR);
		}
	}
	fabric_finish(&f);
	struct plan p;
	struct strbuf err = STRBUF_INIT;
	struct plan_opts o = { 0 };
	CHECK(plan_build(&f, &o, &p, &err) == 0);
	CHECK_MSG(plan_verify(&f, &o, &p, &err) == 0, "%s", err.buf);
	CHECK_INT(p.lower_bound, 2);
	CHECK_CONTAINS(p.bound_why, "4 uplinks over 2 HCAs");
	CHECK_INT(p.nr_uncovered, 0);
	CHECK_MSG(p.nr_stages >= 2 && p.nr_stages <= 3, "%zu stages", p.nr_stages);
	plan_release(&p);
	fabric_release(&f);

	/* one HCA cabled to two leaves: its two links need two stages */
	gen(&f, "hosts=6 hcas=1 radix=8 tiers=2");
	int ca = -1;
	for (size_t n = 0; n < f.nr_nodes; n++)
		if (!strcmp(f.nodes[n].name, "node0001 mlx5_0"))
			ca = (int)n;
	int leaf2 = -1;
	for (size_t n = 0; n < f.nr_nodes; n++)
		if (!strcmp(f.nodes[n].name, "leaf002"))
			leaf2 = (int)n;
	CHECK(ca >= 0 && leaf2 >= 0);
	fabric_connect(&f, ca, 2, leaf2, 3, 4, IBSP_NDR);
	fabric_finish(&f);
	CHECK(plan_build(&f, &o, &p, &err) == 0);
	CHECK_MSG(plan_verify(&f, &o, &p, &err) == 0, "%s", err.buf);
	CHECK_INT(p.lower_bound, 2);
	CHECK_INT(p.nr_uncovered, 0);
	plan_release(&p);
	fabric_release(&f);
	strbuf_release(&err);
}

static void run_plan(struct child *c, const char *a1, const char *a2, const char *a3,
		     const char *a4)
{
	const char *args[] = { "fabric", "burnin", "plan", a1, a2, a3, a4, NULL };
	test_run_vigil(c, args, NULL);
}

TEST(fabric_plan_links_that_cannot_carry_traffic_are_listed_uncovered)
{
	struct strbuf path = STRBUF_INIT;
	test_src_path(&path, "tests/data/fabric/links/iblinkinfo-faults.txt");
	struct child c;
	run_plan(&c, path.buf, "--json", NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *unc = json_get(v, "uncovered");
	CHECK(unc && unc->type == JSON_ARRAY);
	/* the Initialize link and the link one end reports Down */
	CHECK_INT(unc->nr, 2);
	const struct json_value *links = json_get(v, "links");
	bool init_link = false, asym_link = false;
	for (size_t i = 0; i < unc->nr; i++)
		for (size_t j = 0; j < links->nr; j++) {
			const struct json_value *l = links->items[j];
			if (strcmp(json_get_string(l, "id"), unc->items[i]->string))
				continue;
			const char *a = json_get_string(l, "a"), *b = json_get_string(l, "b");
			init_link |= (!strcmp(a, "ib-leaf-01") && !strcmp(b, "ib-spine-03")) ||
				     (!strcmp(b, "ib-leaf-01") && !strcmp(a, "ib-spine-03"));
			asym_link |= !strcmp(a, "gpu-b006") || !strcmp(b, "gpu-b006");
		}
	CHECK(init_link);
	CHECK(asym_link);
	json_free(v);
	child_release(&c);
	run_plan(&c, path.buf, NULL, NULL, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "uncovered L");
	CHECK_CONTAINS(c.out.buf, "down, miswired or off the up/down tree");
	child_release(&c);
	strbuf_release(&path);
}

/* --hosts: an allocation's share of the fabric. Only its hosts in pairs, the links none of
 * them can reach out of scope (counted, not listed uncovered: exit 0), a listed host the
 * topology lacks named (exit 1); and on generated fat trees the plan still verifies */
TEST(fabric_plan_hosts_plans_an_allocations_share_only)
{
	struct strbuf path = STRBUF_INIT;
	test_src_path(&path, "tests/data/fabric/links/ibnetdiscover.txt");
	struct child c;
	run_plan(&c, path.buf, "--hosts", "gpu-b001,gpu-b003,gpu-b005", "--json");
	CHECK_MSG(c.exit_code == 0, "exit %d: %s%s", c.exit_code, c.out.buf, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *stages = json_get(v, "stages"), *links = json_get(v, "links");
	CHECK(stages && stages->nr >= 1);
	for (size_t s = 0; stages && s < stages->nr; s++) {
		const struct json_value *pairs = json_get(stages->items[s], "pairs");
		for (size_t i = 0; pairs && i < pairs->nr; i++)
			for (int e = 0; e < 2; e++) {
				const char *h = json_get_string(pairs->items[i], e ? "b" : "a");
				CHECK_MSG(!strcmp(h, "gpu-b001") || !strcmp(h, "gpu-b003") ||
						  !strcmp(h, "gpu-b005"),
					  "a pair with %s", h);
			}
	}
	for (size_t i = 0; links && i < links->nr; i++) {
		const char *a = json_get_string(links->items[i], "a");
		CHECK_MSG(strcmp(a, "gpu-b002") && strcmp(a, "gpu-b004") && strcmp(a, "gpu-b006"),
			  "the link of %s is planned", a);
	}
	double oos = 0;
	CHECK(json_get_number(v, "out_of_scope", &oos) && oos >= 6);
	CHECK_INT(json_get(v, "uncovered")->nr, 0);
	CHECK_INT(json_get(v, "missing_hosts")->nr, 0);
	json_free(v);
	child_release(&c);

	run_plan(&c, path.buf, "--hosts", "gpu-b001,gpu-b002,gpu-b099", NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "not in the topology (no HCA on a usable link): gpu-b099");
	CHECK_CONTAINS(c.out.buf, "links out of reach of --hosts' HCAs: not planned");
	child_release(&c);
	run_plan(&c, path.buf, "--hosts", ",", NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--hosts wants comma-separated host names");
	child_release(&c);

	static const char *const specs[] = { "hosts=64 hcas=8 radix=16 tiers=3",
					     "hosts=100 hcas=2 radix=16 tiers=3" };
	static const char *const some[] = { "node0002", "node0017", "node0040", "node0063" };
	for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
		struct fabric f;
		gen(&f, specs[i]);
		struct plan_opts o = { .hosts = some, .nr_hosts = ARRAY_SIZE(some) };
		struct plan p;
		struct strbuf err = STRBUF_INIT;
		CHECK_MSG(plan_build(&f, &o, &p, &err) == 0, "%s: %s", specs[i], err.buf);
		CHECK_MSG(plan_verify(&f, &o, &p, &err) == 0, "%s: %s", specs[i], err.buf);
		CHECK_INT(p.hosts, 4);
		CHECK_INT(p.nr_missing, 0);
		CHECK(p.nr_out_of_scope > 0);
		plan_release(&p);
		fabric_release(&f);
		strbuf_release(&err);
	}
	strbuf_release(&path);
}

/* the shape 'vigil fabric burnin run' reads: every id a pair names is a link, each HCA once
 * per stage, the routes' links join a to b */
TEST(fabric_plan_json_is_the_runners_shape)
{
	struct child c;
	run_plan(&c, "--fat-tree", "hosts=64,hcas=8,radix=16,tiers=3", "--json", NULL);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	double d;
	CHECK(json_get_number(v, "version", &d) && d == 1);
	CHECK(json_get_number(v, "hosts", &d) && d == 64);
	CHECK(json_get_number(v, "hcas", &d) && d == 512);
	CHECK(json_get_number(v, "lower_bound", &d) && d >= 1);
	const struct json_value *links = json_get(v, "links");
	CHECK(links && links->nr == 512 * 3);
	const struct json_value *l0 = links->items[0];
	CHECK_STR(json_get_string(l0, "id"), "L1");
	CHECK(json_get_string(l0, "a_hca") != NULL);
	CHECK(json_get_number(l0, "a_port", &d));
	CHECK(json_get_number(l0, "b_port", &d));
	const struct json_value *stages = json_get(v, "stages");
	CHECK(stages && stages->nr >= 1);
	size_t pairs = 0;
	for (size_t s = 0; s < stages->nr; s++) {
		const struct json_value *st = stages->items[s];
		CHECK(json_get_number(st, "stage", &d) && (size_t)d == s + 1);
		const struct json_value *pp = json_get(st, "pairs");
		struct strbuf seen = STRBUF_INIT;
		for (size_t i = 0; i < pp->nr; i++) {
			const struct json_value *x = pp->items[i];
			const char *ends[2][2] = { { json_get_string(x, "a"), json_get_string(x, "a_hca") },
						   { json_get_string(x, "b"), json_get_string(x, "b_hca") } };
			for (int e = 0; e < 2; e++) {
				struct strbuf key = STRBUF_INIT;
				strbuf_addf(&key, "|%s/%s|", ends[e][0], ends[e][1]);
				CHECK_MSG(!strstr(seen.buf, key.buf), "HCA %s twice in stage %zu",
					  key.buf, s + 1);
				strbuf_addstr(&seen, key.buf);
				strbuf_release(&key);
			}
			const struct json_value *r = json_get(x, "links");
			CHECK(r && r->nr >= 2);
			for (size_t k = 0; k < r->nr; k++) {
				long id = strtol(r->items[k]->string + 1, NULL, 10);
				CHECK(r->items[k]->string[0] == 'L' && id >= 1 && (size_t)id <= links->nr);
			}
			pairs++;
		}
		strbuf_release(&seen);
	}
	CHECK(pairs >= 256);
	CHECK(json_get(v, "uncovered")->nr == 0);
	json_free(v);
	child_release(&c);
}

TEST(fabric_plan_example_is_the_planners_output)
{
	struct strbuf want = STRBUF_INIT, got = STRBUF_INIT, err = STRBUF_INIT, path = STRBUF_INIT;
	test_src_path(&path, "tests/data/fabric/plan-example.json");
	CHECK(read_file_bounded(path.buf, &want, 1 << 20, &err) == READ_OK);
	struct child c;
	run_plan(&c, "--fat-tree", "hosts=4,hcas=2,radix=4", "--json", NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_MSG(c.out.len == want.len && !memcmp(c.out.buf, want.buf, want.len),
		  "tests/data/fabric/plan-example.json differs from 'vigil fabric burnin plan "
		  "--fat-tree hosts=4,hcas=2,radix=4 --json':\n%s", c.out.buf);
	child_release(&c);
	/* -o writes the same bytes */
	strbuf_reset(&path);
	strbuf_addf(&path, "%s/plan.json", test_tmpdir());
	run_plan(&c, "--fat-tree", "hosts=4,hcas=2,radix=4", "-o", path.buf);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "1 stage; lower bound 1");
	CHECK(read_file_bounded(path.buf, &got, 1 << 20, &err) == READ_OK);
	CHECK(got.len == want.len && !memcmp(got.buf, want.buf, want.len));
	child_release(&c);
	strbuf_release(&want);
	strbuf_release(&got);
	strbuf_release(&err);
	strbuf_release(&path);
}

TEST(fabric_plan_fat_tree_file_and_bad_descriptions)
{
	const char *dir = test_tmpdir();
	test_write(dir, "ft.txt", "# the test cluster\nfat-tree hosts=16 hcas=2\n  radix=8 # rails\n");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/ft.txt", dir);
	struct child c;
	run_plan(&c, p.buf, NULL, NULL, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "16 hosts, 32 HCAs");
	child_release(&c);

	static const char *const bad[][2] = {
		{ "hosts=0", "hosts=N" }, { "hosts=8,radix=7", "radix wants" },
		{ "hosts=8,colour=red", "no fat-tree key 'colour'" },
		{ "hosts=8,hcas=99", "hcas wants" }, { "hosts=9999,radix=8,tiers=2", "do not fit" },
		{ "hosts=8 speed=fast", "speed wants" }, { "hosts", "KEY=VALUE" },
		/* issue 17: a whole number over the limit was "wants a whole number" */
		{ "hosts=1000000000", "hosts=1000000000 is more than the planner takes (at most 1000000)" },
		{ "hosts=8,radix=99999999999999999999", "radix wants a whole number" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run_plan(&c, "--fat-tree", bad[i][0], NULL, NULL);
		CHECK_MSG(c.exit_code == 2, "%s: exit %d", bad[i][0], c.exit_code);
		CHECK_CONTAINS(c.err.buf, bad[i][1]);
		child_release(&c);
	}
	run_plan(&c, "--fat-tree", "hosts=8", "--hosts-per-stage", "0");
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--hosts-per-stage wants");
	child_release(&c);
	run_plan(&c, "--fat-tree", "hosts=8", p.buf, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	strbuf_release(&p);
}

TEST(fabric_plan_input_not_understood_is_unknown)
{
	const char *dir = test_tmpdir();
	test_write(dir, "junk.txt", "not a fabric\n\x01\x02\n");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/junk.txt", dir);
	struct child c;
	run_plan(&c, p.buf, NULL, NULL, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "unknown");
	child_release(&c);
	/* switches only, no HCA: nothing to plan, could not tell */
	test_write(dir, "sw.txt",
		   "Switch\t8 \"S-0000000000000001\"\t\t# \"a\" enhanced port 0 lid 1 lmc 0\n"
		   "[1]\t\"S-0000000000000002\"[1]\t\t# \"b\" lid 2 4xNDR\n"
		   "Switch\t8 \"S-0000000000000002\"\t\t# \"b\" enhanced port 0 lid 2 lmc 0\n"
		   "[1]\t\"S-0000000000000001\"[1]\t\t# \"a\" lid 1 4xNDR\n");
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/sw.txt", dir);
	run_plan(&c, p.buf, NULL, NULL, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "no HCA with a working link");
	child_release(&c);
	strbuf_release(&p);
}

/* a chain of 100,000 switches: tiers are found in one walk (not one pass per tier) and stop at
 * 16, the walks down never recurse deeper; every switch link is listed uncovered */
TEST(fabric_plan_deep_chain_is_bounded_not_quadratic)
{
	struct fabric f;
	fabric_init(&f);
	enum { N = 100000 };
	int prev = -1;
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "sw%d", i);
		int s = fabric_add_node(&f, name, true, 0x1000 + (uint64_t)i, i + 1);
		if (prev >= 0)
			fabric_connect(&f, prev, 2, s, 1, 4, IBSP_NDR);
		else {
			int h1 = fabric_add_node(&f, "h1 mlx5_0", false, 0x10, 0);
			int h2 = fabric_add_node(&f, "h2 mlx5_0", false, 0x20, 0);
			fabric_connect(&f, h1, 1, s, 3, 4, IBSP_NDR);
			fabric_connect(&f, h2, 1, s, 4, 4, IBSP_NDR);
		}
		prev = s;
	}
	fabric_finish(&f);
	struct plan p;
	struct plan_opts o = { 0 };
	struct strbuf err = STRBUF_INIT;
	CHECK(plan_build(&f, &o, &p, &err) == 0);
	CHECK_MSG(plan_verify(&f, &o, &p, &err) == 0, "%s", err.buf);
	CHECK_INT(p.tiers, 16);
	CHECK_INT(p.nr_stages, 1);
	CHECK_INT(p.nr_uncovered, N - 1);
	plan_release(&p);
	fabric_release(&f);
	strbuf_release(&err);
}

TEST(fabric_plan_output_never_written_through_a_link)
{
	const char *dir = test_tmpdir();
	test_write(dir, "victim", "keep\n");
	struct strbuf link = STRBUF_INIT, victim = STRBUF_INIT, got = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&link, "%s/plan.json", dir);
	strbuf_addf(&victim, "%s/victim", dir);
	CHECK(symlink(victim.buf, link.buf) == 0);
	struct child c;
	run_plan(&c, "--fat-tree", "hosts=4", "-o", link.buf);
	CHECK_INT(c.exit_code, 3); /* the result not written: could not tell (was 2) */
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	child_release(&c);
	CHECK(read_file_bounded(victim.buf, &got, 1024, &err) == READ_OK);
	CHECK_STR(got.buf, "keep\n");
	strbuf_release(&link);
	strbuf_release(&victim);
	strbuf_release(&got);
	strbuf_release(&err);
}
