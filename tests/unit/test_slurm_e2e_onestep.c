/*
 * test_slurm_e2e_onestep.c: a check round as ONE srun step, through the real vigil on the real
 * local Slurm of tests/e2e/slurm-cluster (four slurmd n1..n4 on this host, ports 48000-49999,
 * one start-up): 'vigil fleet check' gives the same verdicts and JSON in one srun as in one
 * srun a node (counted by an srun wrapper given as slurm.srun, which logs each call); a task
 * that names another node is not believed; with n4's slurmd stopped, n1..n3 answer in the
 * same step and n4 is unreachable by name, srun's own words. Under the old code the round was
 * four sruns and a forged name went unnoticed. Skipped with the reason without Slurm or root;
 * a guardian stops the cluster however the test ends.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"

#include <sys/stat.h>
#include <unistd.h>

static const char xid_kmsg[] =
	"3,100,1000000,-;NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=python, GPU has fallen off "
	"the bus.\n";

static char cdir[512], fx[512];

static void exe(const char *rel, const char *text)
{
	struct strbuf p = STRBUF_INIT;
	test_write(test_tmpdir(), rel, text);
	strbuf_addf(&p, "%s/%s", test_tmpdir(), rel);
	chmod(p.buf, 0755);
	strbuf_release(&p);
}

static void cluster_up(void)
{
	struct strbuf err = STRBUF_INIT, w = STRBUF_INIT;
	snprintf(cdir, sizeof(cdir), "%s/slurm", test_tmpdir());
	snprintf(fx, sizeof(fx), "%s/fx", test_tmpdir());
	for (int i = 1; i <= 4; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "fx/n%d/dev/kmsg", i);
		test_write(test_tmpdir(), rel, i == 2 ? xid_kmsg : TEST_KMSG_CLEAN);
	}
	/* each node's vigil on its own fixture root; "forge" names n2's answer n3 */
	strbuf_addf(&w,
		    "#!/bin/sh\n"
		    "root=%s/$SLURMD_NODENAME\n"
		    "[ -e %s/forge ] && [ \"$SLURMD_NODENAME\" = n2 ] && export SLURMD_NODENAME=n3\n"
		    "exec %s \"$@\" --only kernel --root $root\n",
		    fx, fx, test_vigil_bin());
	exe("bin/remote-vigil", w.buf);
	strbuf_reset(&w);
	strbuf_addf(&w, "#!/bin/sh\necho \"$*\" >>%s/srun.log\nexec srun \"$@\"\n", test_tmpdir());
	exe("bin/srun", w.buf);
	test_slurm_up(cdir, 4, 48000 + (unsigned)(getpid() % 90) * 20);
	strbuf_release(&w);
	strbuf_release(&err);
}

/* 'vigil fleet check --json' with one-step on or off; the srun calls it made in *sruns. */
static struct json_value *fleet(bool one_step, const char *timeout, int *code, size_t *sruns,
				char **srun_log)
{
	char cmd[700], srun[700], log[700];
	snprintf(cmd, sizeof(cmd), "fleet.command=%s/bin/remote-vigil", test_tmpdir());
	snprintf(srun, sizeof(srun), "slurm.srun=%s/bin/srun", test_tmpdir());
	snprintf(log, sizeof(log), "%s/srun.log", test_tmpdir());
	unlink(log);
	const char *args[] = { "fleet", "check", "--json", "--timeout", timeout, "-c", cmd,
			       "-c", srun, "-c", one_step ? "fleet.one-step=true"
							   : "fleet.one-step=false", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	*code = c.exit_code;
	struct json_value *v = test_parse_json(&c);
	child_release(&c);
	struct strbuf sb = STRBUF_INIT;
	read_file_bounded(log, &sb, 1 << 20, NULL);
	*sruns = 0;
	for (size_t i = 0; i < sb.len; i++)
		*sruns += sb.buf[i] == '\n';
	*srun_log = strbuf_detach(&sb, NULL);
	return v;
}

static const struct json_value *row(const struct json_value *v, const char *node)
{
	const struct json_value *nodes = json_get(v, "nodes");
	for (size_t i = 0; nodes && i < nodes->nr; i++)
		if (!strcmp(json_get_string(nodes->items[i], "node"), node))
			return nodes->items[i];
	return NULL;
}

/* The JSON of a node minus its timing: what must not change between the two ways. */
static void node_text(const struct json_value *n, struct strbuf *out)
{
	strbuf_reset(out);
	const char *keys[] = { "node", "state", "verdict", "reason" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		strbuf_addf(out, "%s=%s;", keys[i], n ? json_get_string(n, keys[i]) : "(none)");
	const struct json_value *checks = n ? json_get(n, "checks") : NULL;
	for (size_t i = 0; checks && i < checks->nr; i++)
		strbuf_addf(out, "%s:%s;", json_get_string(checks->items[i], "name"),
			    json_get_string(checks->items[i], "status"));
}

TEST_TIMEOUT(slurm_e2e_onestep_one_srun_same_answers_forged_names_and_a_dead_node, 240)
{
	cluster_up();
	int code_new, code_old;
	size_t sruns_new, sruns_old;
	char *log_new, *log_old;
	struct json_value *vn = fleet(true, "20", &code_new, &sruns_new, &log_new);
	struct json_value *vo = fleet(false, "20", &code_old, &sruns_old, &log_old);
	CHECK_INT(code_new, 1);
	CHECK_INT(code_old, 1);
	CHECK_MSG(sruns_new == 1, "one-step made %zu srun calls:\n%s", sruns_new, log_new);
	CHECK_CONTAINS(log_new, "--nodes=4 --ntasks=4 --ntasks-per-node=1 --nodelist=n[1-4]");
	CHECK_MSG(sruns_old == 4, "per node made %zu srun calls:\n%s", sruns_old, log_old);
	CHECK_STR(json_get_string(vn, "verdict"), json_get_string(vo, "verdict"));
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	const char *nodes[] = { "n1", "n2", "n3", "n4" };
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		node_text(row(vn, nodes[i]), &a);
		node_text(row(vo, nodes[i]), &b);
		CHECK_STR(a.buf, b.buf);
	}
	CHECK_CONTAINS(a.buf, "verdict=healthy;"); /* n4 */
	node_text(row(vn, "n2"), &a);
	CHECK_CONTAINS(a.buf, "verdict=unhealthy;reason=kernel: Xid 79");
	json_free(vn);
	json_free(vo);
	free(log_new);
	free(log_old);

	/* n2's task says it is n3 (with n2's Xid): not believed, n3 keeps its own answer */
	test_write(fx, "forge", "");
	int code;
	size_t sruns;
	char *log;
	struct json_value *v = fleet(true, "20", &code, &sruns, &log);
	CHECK_STR(json_get_string(row(v, "n2"), "verdict"), "unreachable");
	CHECK_STR(json_get_string(row(v, "n2"), "reason"),
		  "its task answered as 'n3': not believed");
	CHECK_STR(json_get_string(row(v, "n3"), "verdict"), "healthy");
	CHECK_INT(code, 3); /* nobody unhealthy, one node could not tell */
	json_free(v);
	free(log);
	char p[700];
	snprintf(p, sizeof(p), "%s/forge", fx);
	unlink(p);

	/* n4's slurmd stopped, Slurm not yet aware: the step still answers for n1..n3 */
	const char *stop[] = { "stop-node", cdir, "n4", NULL };
	CHECK_INT(test_slurm_cluster(stop, 30000, NULL), 0);
	uint64_t t0 = mono_ms();
	v = fleet(true, "20", &code, &sruns, &log);
	uint64_t ms = mono_ms() - t0;
	CHECK_INT(code, 1);
	CHECK_STR(json_get_string(row(v, "n1"), "verdict"), "healthy");
	CHECK_STR(json_get_string(row(v, "n2"), "verdict"), "unhealthy");
	CHECK_STR(json_get_string(row(v, "n3"), "verdict"), "healthy");
	CHECK_STR(json_get_string(row(v, "n4"), "verdict"), "unreachable");
	CHECK_STR(json_get_string(row(v, "n4"), "reason"),
		  "srun could not start its task: Communication connection failure");
	CHECK_MSG(sruns == 1, "%zu srun calls:\n%s", sruns, log);
	CHECK_MSG(ms < 20000, "the round took %llu ms", (unsigned long long)ms);
	json_free(v);
	free(log);
	strbuf_release(&a);
	strbuf_release(&b);
	const char *down[] = { "stop", cdir, NULL };
	test_slurm_cluster(down, 30000, NULL);
}
