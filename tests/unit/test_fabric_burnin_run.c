/*
 * test_fabric_burnin_run.c: 'vigil fabric burnin run' against a fake srun that runs the step on
 * this machine with the host's own fake root (VIGIL_ROOT=ROOTS/HOST: its HCAs and counters), and
 * a fake ib_write_bw that prints recorded-looking outputs, slow ones for the hosts named in
 * FAKE_SLOW, and raises a port's link_downed on the host named in FAKE_FLAP; plus the plan and
 * counters readers and the judgement on hand-built data.
 */
#include "../harness.h"
#include "../../src/fabric/burnin_run.h"

static const char srun_body[] =
	"host=''\n"
	"while [ $# -gt 0 ]; do case \"$1\" in -w) host=$2; shift 2;; --) shift; break;; "
	"*) shift;; esac; done\n"
	"echo \"$host $*\" >> \"$FAKE_DIR/srun.log\"\n"
	"if [ \"$host\" = \"$FAKE_DOWN\" ]; then echo \"srun: error: Unable to create step: "
	"Invalid node name specified\" >&2; exit 1; fi\n"
	"r=\"$FAKE_ROOTS/$host\"; d=\"$r/sys/class/infiniband\"\n"
	/* a host of the plan without a root of its own gets two quiet HCAs */
	"if [ ! -d \"$r\" ]; then for h in mlx5_0 mlx5_1; do mkdir -p \"$d/$h/ports/1/counters\"; "
	"echo '4: ACTIVE' > \"$d/$h/ports/1/state\"; "
	"echo 0 > \"$d/$h/ports/1/counters/link_downed\"; done; fi\n"
	"export VIGIL_ROOT=\"$r\" FAKE_HOST=\"$host\"\n"
	"exec \"$@\"\n";

static const char bw_body[] =
	"for a in \"$@\"; do case \"$a\" in --help) echo '--out_json'; exit 0;; esac; done\n"
	"for last in \"$@\"; do :; done\n"
	"if [ \"$FAKE_HOST\" = \"$FAKE_FLAP\" ]; then echo 4 > "
	"\"$VIGIL_ROOT/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed\"; fi\n"
	"case $last in node*) ;; *) exit 0;; esac\n" /* the server has no figures */
	"case \" $FAKE_SLOW \" in *\" $FAKE_HOST \"*|*\" $last \"*) "
	"cat \"$FAKE_DATA/bw-slow.txt\";; *) cat \"$FAKE_DATA/bw-host.txt\";; esac\n";

/* 4 hosts, 2 stages: node04's HCA is in a pair of each stage, with node02 then node01. */
static const char plan2[] =
	"{\"version\": 1, \"hosts\": 4, \"hcas\": 4, \"links\": [\n"
	" {\"id\": \"L1\", \"a\": \"node01\", \"a_hca\": \"mlx5_0\", \"a_port\": 1, \"b\": \"leaf01\", \"b_port\": 1},\n"
	" {\"id\": \"L2\", \"a\": \"node02\", \"a_hca\": \"mlx5_0\", \"a_port\": 1, \"b\": \"leaf01\", \"b_port\": 2},\n"
	" {\"id\": \"L3\", \"a\": \"node03\", \"a_hca\": \"mlx5_0\", \"a_port\": 1, \"b\": \"leaf02\", \"b_port\": 1},\n"
	" {\"id\": \"L4\", \"a\": \"node04\", \"a_hca\": \"mlx5_0\", \"a_port\": 1, \"b\": \"leaf02\", \"b_port\": 2},\n"
	" {\"id\": \"L5\", \"a\": \"leaf01\", \"a_port\": 3, \"b\": \"spine01\", \"b_port\": 1},\n"
	" {\"id\": \"L6\", \"a\": \"leaf01\", \"a_port\": 4, \"b\": \"spine02\", \"b_port\": 1},\n"
	" {\"id\": \"L7\", \"a\": \"leaf02\", \"a_port\": 3, \"b\": \"spine01\", \"b_port\": 2},\n"
	" {\"id\": \"L8\", \"a\": \"leaf02\", \"a_port\": 4, \"b\": \"spine02\", \"b_port\": 2},\n"
	" {\"id\": \"L9\", \"a\": \"leaf03\", \"a_port\": 1, \"b\": \"spine02\", \"b_port\": 3}],\n"
	" \"lower_bound\": 2, \"stages\": [\n"
	" {\"stage\": 1, \"pairs\": [\n"
	"  {\"a\": \"node01\", \"a_hca\": \"mlx5_0\", \"b\": \"node03\", \"b_hca\": \"mlx5_0\", \"links\": [\"L1\", \"L5\", \"L7\", \"L3\"]},\n"
	"  {\"a\": \"node02\", \"a_hca\": \"mlx5_0\", \"b\": \"node04\", \"b_hca\": \"mlx5_0\", \"links\": [\"L2\", \"L6\", \"L8\", \"L4\"]}]},\n"
	" {\"stage\": 2, \"pairs\": [\n"
	"  {\"a\": \"node01\", \"a_hca\": \"mlx5_0\", \"b\": \"node04\", \"b_hca\": \"mlx5_0\", \"links\": [\"L1\", \"L5\", \"L8\", \"L4\"]},\n"
	"  {\"a\": \"node02\", \"a_hca\": \"mlx5_0\", \"b\": \"node03\", \"b_hca\": \"mlx5_0\", \"links\": [\"L2\", \"L6\", \"L7\", \"L3\"]}]}],\n"
	" \"uncovered\": []}\n";

struct bfake {
	char env[12][4400];
	const char *envp[13];
	size_t n;
	char plan[4200];
};

static void benv(struct bfake *f, const char *fmt, const char *v)
{
	snprintf(f->env[f->n], sizeof(f->env[0]), fmt, v);
	f->envp[f->n] = f->env[f->n];
	f->n++;
	f->envp[f->n] = NULL;
}

static void bsetup(struct bfake *f)
{
	memset(f, 0, sizeof(*f));
	const char *dir = test_script("srun", srun_body);
	test_script("ib_write_bw", bw_body);
	/* inside an allocation (issue 22: outside one nothing is started), as 'scontrol -o show
	 * job' prints a running job */
	test_script("scontrol", "echo 'JobId=4242 JobName=burnin UserId=ops(1000) "
				"JobState=RUNNING Reason=None NumNodes=4'\n");
	char p[4096];
	const char *hosts[] = { "node01", "node02", "node03", "node04" };
	for (size_t i = 0; i < 4; i++) {
		char rel[256];
		snprintf(rel, sizeof(rel), "roots/%s/sys/class/infiniband/mlx5_0/ports/1/state",
			 hosts[i]);
		test_write(test_tmpdir(), rel, "4: ACTIVE\n");
		snprintf(rel, sizeof(rel),
			 "roots/%s/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed",
			 hosts[i]);
		test_write(test_tmpdir(), rel, "0\n");
		snprintf(rel, sizeof(rel),
			 "roots/%s/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error",
			 hosts[i]);
		test_write(test_tmpdir(), rel, "12\n");
		snprintf(rel, sizeof(rel), "roots/%s/etc/hostname", hosts[i]);
		test_write(test_tmpdir(), rel, hosts[i]);
	}
	snprintf(p, sizeof(p), "%s:/usr/bin:/bin", dir);
	benv(f, "PATH=%s", p);
	benv(f, "FAKE_DIR=%s", test_tmpdir());
	snprintf(p, sizeof(p), "%s/roots", test_tmpdir());
	benv(f, "FAKE_ROOTS=%s", p);
	snprintf(p, sizeof(p), "%s/tests/data/fabric/perftest", test_srcdir());
	benv(f, "FAKE_DATA=%s", p);
	benv(f, "TMPDIR=%s", test_tmpdir());
	benv(f, "SLURM_JOB_ID=%s", "4242");
	test_write(test_tmpdir(), "plan2.json", plan2);
	snprintf(f->plan, sizeof(f->plan), "%s/plan2.json", test_tmpdir());
}

static struct json_value *brun(struct bfake *f, struct child *c, const char *plan,
			       const char *extra)
{
	const char *args[] = { "fabric", "burnin", "run", plan, "--duration", "1", "--json",
			       extra, NULL };
	test_run_vigil(c, args, f->envp);
	return test_parse_json(c);
}

/* The entry of array whose key is value (and key2 is value2 when given). */
static const struct json_value *entry(const struct json_value *v, const char *array,
				      const char *key, const char *value, const char *key2,
				      const char *value2)
{
	const struct json_value *a = json_get(v, array);
	for (size_t i = 0; a && i < a->nr; i++) {
		const char *x = json_get_string(a->items[i], key);
		const char *y = key2 ? json_get_string(a->items[i], key2) : NULL;
		if (x && !strcmp(x, value) && (!key2 || (y && !strcmp(y, value2))))
			return a->items[i];
	}
	return NULL;
}

static const char *verdict_of(const struct json_value *v, const char *array, const char *key,
			      const char *value)
{
	const struct json_value *e = entry(v, array, key, value, NULL, NULL);
	return e ? json_get_string(e, "verdict") : "(absent)";
}

TEST_TIMEOUT(fabric_burnin_run_all_good, 90)
{
	struct bfake f;
	struct child c;
	bsetup(&f);
	struct strbuf ex = STRBUF_INIT;
	test_src_path(&ex, "tests/data/fabric/plan-example.json");
	struct json_value *v = brun(&f, &c, ex.buf, "--stage=1");
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_STR(json_get_string(v, "verdict"), "ok");
	/* the planner's example: every pair measured, every link it covers cleared */
	const struct json_value *pairs = json_get(v, "pairs"), *links = json_get(v, "links");
	CHECK(pairs && pairs->nr > 0 && links && links->nr > 0);
	for (size_t i = 0; i < pairs->nr; i++) {
		double bw = 0;
		CHECK_STR(json_get_string(pairs->items[i], "verdict"), "ok");
		CHECK(json_get_number(pairs->items[i], "bw_gbps", &bw) && bw == 371.2);
	}
	for (size_t i = 0; i < links->nr; i++)
		CHECK_MSG(!strcmp(json_get_string(links->items[i], "verdict"), "ok") ||
				  !strcmp(json_get_string(links->items[i], "verdict"), "untested"),
			  "link %zu", i);
	const struct json_value *ports = json_get(v, "ports");
	CHECK(ports && ports->nr > 0);
	for (size_t i = 0; i < ports->nr; i++)
		CHECK_STR(json_get_string(ports->items[i], "verdict"), "ok");
	json_free(v);
	child_release(&c);
	/* and the hand-written two-stage plan, whole */
	v = brun(&f, &c, f.plan, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	const struct json_value *p = entry(v, "pairs", "a", "node01", NULL, NULL);
	CHECK_STR(json_get_string(p, "verdict"), "ok");
	for (int i = 1; i <= 8; i++) {
		char id[8];
		snprintf(id, sizeof(id), "L%d", i);
		CHECK_STR(verdict_of(v, "links", "id", id), "ok");
	}
	CHECK_STR(verdict_of(v, "links", "id", "L9"), "untested");
	CHECK_STR(verdict_of(v, "ports", "host", "node03"), "ok");
	json_free(v);
	child_release(&c);
	strbuf_release(&ex);
}

/* node04's HCA is slow in both its pairs; its partners did well elsewhere: the HCA and its own
 * cable are suspect, the shared spine links are cleared by the good pairs. */
TEST_TIMEOUT(fabric_burnin_run_slow_hca_and_links, 120)
{
	struct bfake f;
	struct child c;
	bsetup(&f);
	benv(&f, "FAKE_SLOW=%s", "node04");
	struct json_value *v = brun(&f, &c, f.plan, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_STR(json_get_string(v, "verdict"), "act");
	const struct json_value *p = entry(v, "pairs", "a", "node02", "b", "node04");
	CHECK_STR(json_get_string(p, "verdict"), "slow");
	CHECK_CONTAINS(json_get_string(p, "message"), "below the floor of 360 Gb/s");
	CHECK_STR(verdict_of(v, "links", "id", "L4"), "suspect");
	CHECK_STR(verdict_of(v, "links", "id", "L8"), "suspect");
	CHECK_STR(verdict_of(v, "links", "id", "L1"), "ok"); /* node01-node03 was good */
	CHECK_STR(verdict_of(v, "links", "id", "L7"), "ok");
	CHECK_STR(verdict_of(v, "links", "id", "L9"), "untested");
	CHECK_STR(verdict_of(v, "hcas", "host", "node04"), "suspect");
	CHECK(!entry(v, "hcas", "host", "node01", NULL, NULL));
	json_free(v);
	child_release(&c);
}

TEST_TIMEOUT(fabric_burnin_run_counter_rise_is_a_bad_port, 120)
{
	struct bfake f;
	struct child c;
	struct strbuf log = STRBUF_INIT;
	bsetup(&f);
	benv(&f, "FAKE_FLAP=%s", "node03");
	struct json_value *v = brun(&f, &c, f.plan, "--stage=1");
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	const struct json_value *p = entry(v, "ports", "host", "node03", NULL, NULL);
	CHECK_STR(json_get_string(p, "verdict"), "bad");
	double d = 0;
	CHECK(json_get_number(json_get(p, "rises"), "link_downed", &d) && d == 4);
	CHECK_CONTAINS(json_get_string(p, "message"), "stage 1: link_downed rose by 4");
	CHECK_STR(verdict_of(v, "links", "id", "L3"), "bad");
	CHECK_STR(verdict_of(v, "ports", "host", "node01"), "ok");
	/* only stage 1 ran */
	CHECK(json_path(v, "stages_run.0") && !json_path(v, "stages_run.1"));
	/* node names went to srun as argv items: the log shows each step's command */
	struct strbuf err = STRBUF_INIT;
	char path[4200];
	snprintf(path, sizeof(path), "%s/srun.log", test_tmpdir());
	read_file_bounded(path, &log, 1 << 20, &err);
	CHECK_CONTAINS(log.buf, "node03 ");
	CHECK_CONTAINS(log.buf, " net ib --server --hca mlx5_0 --no-latency --duration 1 --port 18517");
	CHECK_CONTAINS(log.buf, " net ib --peer node04 --hca mlx5_0");
	CHECK_CONTAINS(log.buf, " net ib --counters --json");
	json_free(v);
	child_release(&c);
	strbuf_release(&log);
	strbuf_release(&err);
}

TEST_TIMEOUT(fabric_burnin_run_unreachable_host_is_unknown, 120)
{
	struct bfake f;
	struct child c;
	bsetup(&f);
	benv(&f, "FAKE_DOWN=%s", "node02");
	struct json_value *v = brun(&f, &c, f.plan, "--stage=1");
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_STR(json_get_string(v, "verdict"), "unknown");
	const struct json_value *p = entry(v, "pairs", "a", "node02", NULL, NULL);
	CHECK_STR(json_get_string(p, "verdict"), "unknown");
	CHECK_CONTAINS(json_get_string(p, "message"), "Invalid node name specified");
	CHECK_STR(verdict_of(v, "ports", "host", "node02"), "unknown");
	CHECK_STR(verdict_of(v, "links", "id", "L2"), "unknown");
	CHECK_STR(verdict_of(v, "links", "id", "L1"), "ok");
	json_free(v);
	child_release(&c);
}

TEST(fabric_burnin_run_text_report)
{
	struct bfake f;
	struct child c;
	bsetup(&f);
	benv(&f, "FAKE_SLOW=%s", "node04");
	const char *args[] = { "fabric", "burnin", "run", f.plan, "--duration", "1", "--stage",
			       "1", NULL };
	test_run_vigil(&c, args, f.envp);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "pairs:\n");
	CHECK_CONTAINS(c.out.buf, "stage 1   node02 mlx5_0 -> node04 mlx5_0  slow    281.1 Gb/s");
	CHECK_CONTAINS(c.out.buf, "L4     node04:1 - leaf02:2  suspect");
	CHECK_CONTAINS(c.out.buf, "verdict: something to act on");
	child_release(&c);
}

TEST(fabric_burnin_run_usage_and_bad_plans)
{
	struct child c;
	test_mkdir(test_tmpdir(), "adir");
	char dir[4200], bad[4200], inj[4200];
	snprintf(dir, sizeof(dir), "%s/adir", test_tmpdir());
	test_write(test_tmpdir(), "bad.json", "{\"version\": 1, \"links\": [], \"stages\": "
					      "[{\"stage\": 1, \"pairs\": [{\"a\": \"x\"}]}]}");
	snprintf(bad, sizeof(bad), "%s/bad.json", test_tmpdir());
	test_write(test_tmpdir(), "inj.json",
		   "{\"version\": 1, \"links\": [], \"stages\": [{\"stage\": 1, \"pairs\": "
		   "[{\"a\": \"-w\", \"a_hca\": \"m\", \"b\": \"h\", \"b_hca\": \"m\"}]}]}");
	snprintf(inj, sizeof(inj), "%s/inj.json", test_tmpdir());
	struct {
		const char *args[8];
		const char *err;
		int exit; /* vigil(1): the command line 2, a plan that cannot be used 3 (was 2) */
	} cases[] = {
		{ { "fabric", "burnin", "run", NULL }, "which plan?", 2 },
		{ { "fabric", "burnin", "run", "/nonexistent/plan.json", NULL }, "cannot read", 3 },
		{ { "fabric", "burnin", "run", dir, NULL }, "not a regular file", 3 },
		{ { "fabric", "burnin", "run", bad, NULL }, "stage 1 pair 1: no 'a_hca'", 3 },
		{ { "fabric", "burnin", "run", inj, NULL }, "not a plain host or HCA name", 3 },
		{ { "fabric", "burnin", "run", bad, "--stage", "0", NULL }, "--stage", 2 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		test_run_vigil(&c, cases[i].args, NULL);
		CHECK_MSG(c.exit_code == cases[i].exit, "case %zu: exit %d", i, c.exit_code);
		CHECK_CONTAINS(c.err.buf, cases[i].err);
		child_release(&c);
	}
}

TEST(fabric_burnin_counters_parse)
{
	struct br_counters c;
	struct strbuf err = STRBUF_INIT;
	const char *ok = "{\"host\":\"n\",\"ports\":[{\"hca\":\"mlx5_0\",\"port\":1,\"state\":\"4: "
			 "ACTIVE\",\"counters\":{\"link_downed\":2,\"symbol_error\":7}}]}";
	CHECK_INT(br_counters_parse(ok, strlen(ok), &c, &err), 0);
	CHECK(c.ok && c.nr == 1 && c.ports[0].have[IBC_LINK_DOWNED] &&
	      c.ports[0].counter[IBC_SYMBOL_ERROR] == 7 && !c.ports[0].have[IBC_PORT_RCV_ERRORS]);
	br_counters_release(&c);
	const char *e = "{\"host\":\"n\",\"error\":\"no RDMA device\",\"ports\":[]}";
	CHECK_INT(br_counters_parse(e, strlen(e), &c, &err), -1);
	CHECK(!c.ok);
	CHECK_CONTAINS(c.error, "no RDMA device");
	br_counters_release(&c);
	strbuf_reset(&err);
	CHECK_INT(br_counters_parse("\0\0garbage", 9, &c, &err), -1);
	br_counters_release(&c);
	strbuf_release(&err);
}
