/*
 * test_qualify_groups.c: the train stage's node groups (--train-groups, src/qualify/train.c):
 * N groups of consecutive nodes; groups by leaf switch from 'scontrol show topology' as
 * Debian's Slurm 22.05 prints it (captured from tests/e2e/slurm-cluster with a topology.conf)
 * and as the tree and block plugins' sources print it (tests/data/realworld/slurm-topology.md);
 * hostile output refused by line; a group's step time as its nodes' train_step_s, ranked and
 * judged for outliers; the refusals of the options.
 */
#include "../harness.h"
#include "../../src/qualify/qualify.h"
#include "../../src/qualify/stage.h"
#include "../../src/qualify/train.h"

static const char *const four[] = { "n1", "n2", "n3", "n4" };

static void check_group(const struct q_groups *g, size_t k, const char *name, const char *hosts)
{
	CHECK_MSG(k < g->nr, "no group %zu (%zu groups)", k, g->nr);
	if (k >= g->nr)
		return;
	CHECK_STR(g->items[k].name, name);
	struct strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < g->items[k].hosts.nr; i++)
		strbuf_addf(&sb, "%s%s", i ? "," : "", g->items[k].hosts.items[i]);
	CHECK_STR(sb.buf, hosts);
	strbuf_release(&sb);
}

TEST(qualify_groups_split_consecutive_nodes_evenly)
{
	static const char *const five[] = { "a1", "a2", "a3", "a4", "a5" };
	struct q_groups g;
	q_groups_split(five, 5, 2, &g);
	CHECK_INT((int)g.nr, 2);
	check_group(&g, 0, "1", "a1,a2,a3");
	check_group(&g, 1, "2", "a4,a5");
	q_groups_release(&g);
	q_groups_split(five, 3, 5, &g); /* more groups than nodes: one node each */
	CHECK_INT((int)g.nr, 3);
	check_group(&g, 2, "3", "a3");
	q_groups_release(&g);
	q_groups_split(five, 0, 2, &g);
	CHECK_INT((int)g.nr, 0);
	q_groups_release(&g);
	/* groups of a size (a trainer of a fixed layout): the rest left over, by name */
	struct strlist left = STRLIST_INIT;
	q_groups_of_size(five, 5, 2, &g, &left);
	CHECK_INT((int)g.nr, 2);
	check_group(&g, 0, "1", "a1,a2");
	check_group(&g, 1, "2", "a3,a4");
	CHECK_INT((int)left.nr, 1);
	CHECK_STR(left.items[0], "a5");
	q_groups_release(&g);
	strlist_release(&left);
	q_groups_of_size(five, 5, 6, &g, &left); /* larger than the nodes: no group */
	CHECK_INT((int)g.nr, 0);
	CHECK_INT((int)left.nr, 5);
	q_groups_release(&g);
	strlist_release(&left);
	/* at most Q_TRAIN_GROUPS_MAX groups: the nodes past them are left over */
	struct strlist many = STRLIST_INIT;
	for (int i = 0; i < 2 * Q_TRAIN_GROUPS_MAX + 3; i++) {
		char n[16];
		snprintf(n, sizeof(n), "m%d", i);
		strlist_add(&many, n);
	}
	q_groups_of_size((const char *const *)many.items, many.nr, 1, &g, &left);
	CHECK_INT((int)g.nr, Q_TRAIN_GROUPS_MAX);
	CHECK_INT((int)left.nr, Q_TRAIN_GROUPS_MAX + 3);
	q_groups_release(&g);
	strlist_release(&left);
	strlist_release(&many);
}

TEST(qualify_groups_by_leaf_switch_from_real_scontrol_output)
{
	/* Debian 12's Slurm 22.05.8, 'scontrol show topology' of topology.conf "SwitchName=leaf1
	 * Nodes=n[1-2]", "SwitchName=leaf2 Nodes=n[3-4]", "SwitchName=spine Switches=leaf[1-2]" */
	static const char deb[] = "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[1-2]\n"
				  "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=n[3-4]\n"
				  "SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-4] "
				  "Switches=leaf[1-2]\n";
	struct q_groups g;
	struct strlist left = STRLIST_INIT;
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(q_groups_topology(deb, four, 4, &g, &left, &err), 0);
	CHECK_INT((int)g.nr, 2);
	check_group(&g, 0, "leaf1", "n1,n2");
	check_group(&g, 1, "leaf2", "n3,n4");
	CHECK_INT((int)left.nr, 0);
	q_groups_release(&g);

	/* older Slurm: a space after each field (slurm_print_topo_record); the leaves listed out
	 * of the nodes' order: the groups follow the nodes; n4 under no leaf is left out */
	static const char old[] = "SwitchName=s2 Level=0 LinkSpeed=1 Nodes=n[2-3] \n"
				  "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n1 \n"
				  "SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-3] Switches=s[1-2] \n";
	CHECK_INT(q_groups_topology(old, four, 4, &g, &left, &err), 0);
	CHECK_INT((int)g.nr, 2);
	check_group(&g, 0, "s1", "n1");
	check_group(&g, 1, "s2", "n2,n3");
	CHECK_INT((int)left.nr, 1);
	CHECK_STR(left.items[0], "n4");
	q_groups_release(&g);
	strlist_release(&left);

	/* the block plugin (topology/block: "BlockName=%s BlockIndex=%u Nodes=%s") */
	static const char block[] = "BlockName=b1 BlockIndex=0 Nodes=n[1,3]\n"
				    "BlockName=b2 BlockIndex=1 Nodes=n[2,4]\n";
	CHECK_INT(q_groups_topology(block, four, 4, &g, &left, &err), 0);
	check_group(&g, 0, "b1", "n1,n3");
	check_group(&g, 1, "b2", "n2,n4");
	q_groups_release(&g);
	strlist_release(&left);
	strbuf_release(&err);
}

TEST(qualify_groups_refuse_topology_they_cannot_read)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "", "names no leaf switch and no block" },
		{ "scontrol: error: No topology information available\n",
		  "names no leaf switch and no block" },
		{ "SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-4]\n",
		  "names no leaf switch and no block" },
		{ "SwitchName=le\x1b]0;pwn\x07 Level=0 LinkSpeed=1 Nodes=n1\n",
		  "line 1 names a switch or block that is not a plain word" },
		{ "SwitchName=a Level=0 Nodes=n1\nSwitchName=$(reboot) Level=0 Nodes=n2\n",
		  "line 2 names a switch or block that is not a plain word" },
		{ "SwitchName=a Level=0 LinkSpeed=1 Nodes=n[1-\n", "line 1: Nodes=n[1-: " },
		{ "SwitchName=a Level=0 LinkSpeed=1 Nodes=x[1-3]\n",
		  "no leaf switch or block of scontrol show topology holds any of the nodes" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct q_groups g;
		struct strlist left = STRLIST_INIT;
		struct strbuf err = STRBUF_INIT;
		CHECK_MSG(q_groups_topology(bad[i].text, four, 4, &g, &left, &err) < 0,
			  "case %zu read", i);
		CHECK_CONTAINS(err.buf, bad[i].why);
		CHECK_MSG(str_is_clean(err.buf), "case %zu: raw bytes in '%s'", i, err.buf);
		CHECK_INT((int)g.nr, 0);
		strlist_release(&left);
		strbuf_release(&err);
	}
	/* more than Q_TRAIN_GROUPS_MAX leaves holding the nodes */
	struct strbuf t = STRBUF_INIT, err = STRBUF_INIT;
	struct strlist nodes = STRLIST_INIT, left = STRLIST_INIT;
	for (int i = 1; i <= Q_TRAIN_GROUPS_MAX + 1; i++) {
		char n[16];
		snprintf(n, sizeof(n), "n%d", i);
		strlist_add(&nodes, n);
		strbuf_addf(&t, "SwitchName=l%d Level=0 LinkSpeed=1 Nodes=n%d\n", i, i);
	}
	struct q_groups g;
	CHECK(q_groups_topology(t.buf, (const char *const *)nodes.items, nodes.nr, &g, &left,
				&err) < 0);
	CHECK_CONTAINS(err.buf, "more than 64 leaf switches or blocks (--train-groups N instead)");
	strbuf_release(&t);
	strbuf_release(&err);
	strlist_release(&nodes);
	strlist_release(&left);
}

/* A node's train report from its group ({"group", "figures": {"step_time_s"}}) is its
 * train_step_s: the slow group's nodes rank last and are outliers; a node without one has none. */
TEST(qualify_groups_step_time_is_each_nodes_figure)
{
	struct q_card c;
	q_card_init(&c);
	c.outlier_margin = 0.10;
	static const char *const rep[] = {
		"{\"group\":\"leaf1\",\"figures\":{\"step_time_s\":0.41}}",
		"{\"group\":\"leaf2\",\"figures\":{\"step_time_s\":0.2}}",
		"{\"group\":\"leaf2\",\"figures\":{\"step_time_s\":0.2}}",
		"{\"group\":\"leaf3\",\"figures\":{\"step_time_s\":0.21}}",
		"{\"group\":\"leaf3\",\"figures\":{\"step_time_s\":\"fast\"}}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(rep); i++) {
		char name[8];
		snprintf(name, sizeof(name), "n%zu", i + 1);
		struct q_node *n = q_card_add_node(&c, name);
		q_node_set(n, Q_TRAIN, Q_PASSED, "trained",
			   json_parse(rep[i], strlen(rep[i]), NULL));
	}
	q_figures(&c);
	int f = -1;
	for (int k = 0; k < QF_NR; k++)
		if (!strcmp(q_figs[k].name, "train_step_s"))
			f = k;
	CHECK(f >= 0);
	if (f < 0)
		return;
	CHECK(q_figs[f].better == Q_LOWER);
	CHECK(c.nodes[0].have[f] && c.nodes[0].outlier[f]);
	CHECK_INT((int)c.nodes[0].rank[f], 4);
	CHECK(c.nodes[1].have[f] && !c.nodes[1].outlier[f]);
	CHECK_INT((int)c.nodes[1].rank[f], 1);
	CHECK(c.nodes[3].have[f] && !c.nodes[3].outlier[f]);
	CHECK(!c.nodes[4].have[f]);
	struct strbuf j = STRBUF_INIT;
	q_card_json(&c, &j);
	struct json_value *v = json_parse(j.buf, j.len, NULL);
	CHECK(v != NULL);
	CHECK_CONTAINS(j.buf, "\"train_step_s\"");
	json_free(v);
	strbuf_release(&j);
	q_card_release(&c);
}

TEST(qualify_train_groups_option_refusals)
{
	static const char *env[] = { "SLURM_JOB_ID=77", "SLURM_JOB_NODELIST=n[1-2]", NULL };
	static const struct {
		const char *val, *why;
	} bad[] = {
		{ "1", "--train-groups wants a count from 2 to 64, 'size=K' (groups of K nodes) or "
		       "'switch', not '1'" },
		{ "65", "not '65'" },
		{ "leaf", "not 'leaf'" },
		{ "size=0", "not 'size=0'" },
		{ "size=", "not 'size='" },
		{ "size=2x", "not 'size=2x'" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct child c;
		const char *args[] = { "qualify", "--train", "/bin/true", "--train-groups",
				       bad[i].val, NULL };
		test_run_vigil(&c, args, env);
		CHECK_INT(c.exit_code, 2);
		CHECK_CONTAINS(c.err.buf, bad[i].why);
		child_release(&c);
	}
	struct child c;
	const char *no_train[] = { "qualify", "--train-groups", "2", NULL };
	test_run_vigil(&c, no_train, env);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--train-groups needs --train CMD");
	child_release(&c);
	/* vigil run --hosts: a list that does not parse is a usage error */
	const char *run[] = { "run", "--hosts", "n[1-", "--", "/bin/true", NULL };
	test_run_vigil(&c, run, env);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--hosts wants a Slurm hostlist (n[1-4],gpu7), not 'n[1-'");
	child_release(&c);
}

/* The train stage kept for --resume (its groups in the card's train, each node's group report)
 * reads back whole: the same train_step_s and the same groups. */
TEST(qualify_groups_kept_train_stage_reads_back_whole)
{
	struct q_card a, b;
	q_card_init(&a);
	q_card_init(&b);
	a.job_id = xstrdup("77");
	const char *rep = "{\"group\":\"leaf2\",\"figures\":{\"step_time_s\":0.205}}";
	q_node_set(q_card_add_node(&a, "n3"), Q_TRAIN, Q_PASSED, "trained",
		   json_parse(rep, strlen(rep), NULL));
	q_node_set(q_card_add_node(&a, "n2"), Q_TRAIN, Q_FAILED, "group leaf1: vigil: preflight",
		   NULL);
	const char *train = "{\"step_time_s\":0.4,\"tokens_per_s\":null,\"mfu\":0.385,"
			    "\"outcome\":\"cancelled\",\"groups\":[{\"name\":\"leaf2\","
			    "\"hosts\":[\"n3\"],\"step_time_s\":0.205,\"tokens_per_s\":null,"
			    "\"mfu\":0.385,\"outcome\":\"cancelled\"}]}";
	a.train = json_parse(train, strlen(train), NULL);
	a.stages[Q_TRAIN].st = Q_FAILED;
	struct strbuf doc = STRBUF_INIT, err = STRBUF_INIT;
	q_stage_save(&a, Q_TRAIN, &doc);
	q_card_add_node(&b, "n3");
	q_card_add_node(&b, "n2");
	CHECK_MSG(q_stage_load(&b, doc.buf, doc.len, Q_TRAIN, &err) == 0, "%s", err.buf);
	q_figures(&b);
	CHECK(b.nodes[0].have[QF_TRAIN_STEP] && b.nodes[0].fig[QF_TRAIN_STEP] == 0.205);
	CHECK_INT(b.nodes[1].st[Q_TRAIN], Q_FAILED);
	CHECK(b.train != NULL);
	const struct json_value *g = json_get(b.train, "groups");
	CHECK(g && g->type == JSON_ARRAY && g->nr == 1);
	if (g && g->nr == 1)
		CHECK_STR(json_get_string(g->items[0], "name"), "leaf2");
	q_card_release(&a);
	q_card_release(&b);
	strbuf_release(&doc);
	strbuf_release(&err);
}
