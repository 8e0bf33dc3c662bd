/*
 * test_fabric_burnin_e2e.c: 'vigil fabric burnin run' inside a real Slurm allocation (the
 * project's local test bed: munged, slurmctld and four slurmd names on this machine). Real srun
 * starts every step (counters before and after, the servers and clients of each stage's pairs,
 * on the hosts the plan names); what is not real is the InfiniBand: each node's HCA is a
 * fake sysfs root (VIGIL_ROOT set per node by the vigil the nodes run) and ib_write_bw a script
 * on PATH that prints recorded-looking outputs (slow ones when n4 takes part) and raises
 * link_downed on n2 as if its cable had flapped. Skipped with the reason without Slurm or
 * root.
 */
#include "../harness.h"
#include "../../src/lib/json.h"
#include "../../src/lib/run.h"

#include <sys/stat.h>
#include <unistd.h>

static const char plan[] =
	"{\"version\": 1, \"hosts\": 4, \"hcas\": 4, \"links\": [\n"
	" {\"id\": \"L1\", \"a\": \"n1\", \"a_hca\": \"mlx5_0\", \"a_port\": 1, \"b\": \"leaf1\", \"b_port\": 1},\n"
	" {\"id\": \"L2\", \"a\": \"n2\", \"a_hca\": \"mlx5_0\", \"a_port\": 1, \"b\": \"leaf1\", \"b_port\": 2},\n"
	" {\"id\": \"L3\", \"a\": \"n3\", \"a_hca\": \"mlx5_0\", \"a_port\": 1, \"b\": \"leaf2\", \"b_port\": 1},\n"
	" {\"id\": \"L4\", \"a\": \"n4\", \"a_hca\": \"mlx5_0\", \"a_port\": 1, \"b\": \"leaf2\", \"b_port\": 2},\n"
	" {\"id\": \"L5\", \"a\": \"leaf1\", \"a_port\": 3, \"b\": \"spine1\", \"b_port\": 1},\n"
	" {\"id\": \"L6\", \"a\": \"leaf1\", \"a_port\": 4, \"b\": \"spine2\", \"b_port\": 1},\n"
	" {\"id\": \"L7\", \"a\": \"leaf2\", \"a_port\": 3, \"b\": \"spine1\", \"b_port\": 2},\n"
	" {\"id\": \"L8\", \"a\": \"leaf2\", \"a_port\": 4, \"b\": \"spine2\", \"b_port\": 2}],\n"
	" \"lower_bound\": 2, \"stages\": [\n"
	" {\"stage\": 1, \"pairs\": [\n"
	"  {\"a\": \"n1\", \"a_hca\": \"mlx5_0\", \"b\": \"n3\", \"b_hca\": \"mlx5_0\", \"links\": [\"L1\", \"L5\", \"L7\", \"L3\"]},\n"
	"  {\"a\": \"n2\", \"a_hca\": \"mlx5_0\", \"b\": \"n4\", \"b_hca\": \"mlx5_0\", \"links\": [\"L2\", \"L6\", \"L8\", \"L4\"]}]},\n"
	" {\"stage\": 2, \"pairs\": [\n"
	"  {\"a\": \"n1\", \"a_hca\": \"mlx5_0\", \"b\": \"n4\", \"b_hca\": \"mlx5_0\", \"links\": [\"L1\", \"L5\", \"L8\", \"L4\"]},\n"
	"  {\"a\": \"n2\", \"a_hca\": \"mlx5_0\", \"b\": \"n3\", \"b_hca\": \"mlx5_0\", \"links\": [\"L2\", \"L6\", \"L7\", \"L3\"]}]}],\n"
	" \"uncovered\": []}\n";

/* The fake ib_write_bw: the server (no peer as its last word) prints nothing; a client prints
 * the recorded output, the slow one when n4 is either end; on n2 the port's link_downed rises. */
static const char bw_body[] =
	"for a in \"$@\"; do case \"$a\" in --help) echo '--out_json'; exit 0;; esac; done\n"
	"for last in \"$@\"; do :; done\n"
	"if [ \"$SLURMD_NODENAME\" = n2 ]; then echo 4 > "
	"\"$VIGIL_ROOT/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed\"; fi\n"
	"case $last in n[0-9]*) ;; *) exit 0;; esac\n"
	"case \"$SLURMD_NODENAME $last\" in *n4*) cat \"$FAKE_DATA/bw-slow.txt\";; "
	"*) cat \"$FAKE_DATA/bw-host.txt\";; esac\n";


static const struct json_value *entry(const struct json_value *v, const char *array,
				      const char *key, const char *value)
{
	const struct json_value *a = json_get(v, array);
	for (size_t i = 0; a && i < a->nr; i++) {
		const char *x = json_get_string(a->items[i], key);
		if (x && !strcmp(x, value))
			return a->items[i];
	}
	return NULL;
}

TEST_TIMEOUT(fabric_burnin_e2e_real_srun_judges_ports_links_and_hcas, 300)
{
	const char *dir = test_tmpdir();
	struct strbuf cdir = STRBUF_INIT, err = STRBUF_INIT, w = STRBUF_INIT;
	strbuf_addf(&cdir, "%s/slurm", dir);
	/* a port band of its own (10000-11999), below the ephemeral range */
	char port[16];
	snprintf(port, sizeof(port), "%u", 10000 + (unsigned)(getpid() % 100) * 20);
	test_slurm_guardian(cdir.buf);
	const char *args[] = { "start", cdir.buf, "4", port, "", "0", NULL };
	int rc = test_slurm_cluster(args, 150000, &err);
	if (rc != 0) {
		static char why[1024];
		snprintf(why, sizeof(why), "cannot start Slurm here (exit %d): %s", rc, err.buf);
		SKIP(why);
	}
	char conf[4200];
	snprintf(conf, sizeof(conf), "%s/slurm.conf", cdir.buf);
	setenv("SLURM_CONF", conf, 1);

	/* each node's HCA: a fake root with one active port and its counters */
	for (int i = 1; i <= 4; i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "roots/n%d/sys/class/infiniband/mlx5_0/ports/1/state", i);
		test_write(dir, rel, "4: ACTIVE\n");
		snprintf(rel, sizeof(rel),
			 "roots/n%d/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", i);
		test_write(dir, rel, "0\n");
		snprintf(rel, sizeof(rel),
			 "roots/n%d/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error", i);
		test_write(dir, rel, "12\n");
		snprintf(rel, sizeof(rel), "roots/n%d/etc/hostname", i);
		test_write(dir, rel, "n0\n");
	}
	/* the vigil the nodes run: this vigil, with the node's own fake root */
	strbuf_addf(&w, "#!/bin/sh\nVIGIL_ROOT=%s/roots/$SLURMD_NODENAME; export VIGIL_ROOT\n"
			"exec %s \"$@\"\n", dir, test_vigil_bin());
	test_write(dir, "bin/node-vigil", w.buf);
	test_write(dir, "fake/ib_write_bw", bw_body);
	char nv[4200], fk[4200];
	snprintf(nv, sizeof(nv), "%s/bin/node-vigil", dir);
	snprintf(fk, sizeof(fk), "%s/fake/ib_write_bw", dir);
	chmod(nv, 0755);
	chmod(fk, 0755);
	test_write(dir, "plan.json", plan);

	strbuf_reset(&w);
	const char *salloc[] = { "salloc", "--no-shell", "-N4", "-J", "vigil-burnin", NULL };
	rc = test_run_argv(salloc, 60000, &w);
	const char *g = strstr(w.buf, "Granted job allocation ");
	CHECK_MSG(rc == 0 && g, "salloc: %s", w.buf);
	char job[64], path[4400], data[4200], planp[4200];
	snprintf(job, sizeof(job), "SLURM_JOB_ID=%ld", strtol(g + 23, NULL, 10));
	const char *p0 = getenv("PATH");
	snprintf(path, sizeof(path), "PATH=%s/fake:%s", dir, p0 ? p0 : "/usr/bin:/bin");
	snprintf(data, sizeof(data), "FAKE_DATA=%s/tests/data/fabric/perftest", test_srcdir());
	snprintf(planp, sizeof(planp), "%s/plan.json", dir);
	const char *env[] = { job, path, data, NULL };
	const char *run[] = { "fabric", "burnin", "run", planp, "--duration", "1", "--json",
			      "--vigil", nv, NULL };
	struct child c;
	test_run_vigil(&c, run, env);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "act");
	/* n2's port: its link_downed rose during the stages */
	const struct json_value *a = json_get(v, "ports");
	bool n2_bad = false;
	for (size_t i = 0; a && i < a->nr; i++) {
		const char *h = json_get_string(a->items[i], "host");
		const char *vd = json_get_string(a->items[i], "verdict");
		if (h && !strcmp(h, "n2"))
			n2_bad = vd && !strcmp(vd, "bad");
		else
			CHECK_MSG(!vd || strcmp(vd, "bad"), "%s's port judged bad", h ? h : "?");
	}
	CHECK_MSG(n2_bad, "n2's port not bad: %s", c.out.buf);
	/* n4 slow in both stages with different peers: its HCA is the suspect */
	const struct json_value *h4 = entry(v, "hcas", "host", "n4");
	CHECK_MSG(h4 != NULL, "n4 not among the suspect HCAs: %s", c.out.buf);
	CHECK(entry(v, "hcas", "host", "n1") == NULL);
	/* n1-n3 was good: its links ok */
	const struct json_value *l7 = entry(v, "links", "id", "L7");
	CHECK(l7 != NULL);
	json_free(v);
	child_release(&c);

	const char *stop[] = { "stop", cdir.buf, NULL };
	test_slurm_cluster(stop, 60000, NULL);
	strbuf_release(&cdir);
	strbuf_release(&err);
	strbuf_release(&w);
}
