/*
 * test_slurm_fleet.c: 'vigil fleet check' and the agent/fleet command lines without a Slurm: a
 * fake scontrol lists the nodes, a fake srun runs the remote vigil on the node's fixture root
 * (or fails, or hangs, by the node's marker file). The real Slurm is in test_slurm_e2e.c.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char xid_kmsg[] =
	"3,100,1000000,-;NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=python, GPU has fallen off "
	"the bus.\n";

struct fake {
	char dir[512];
	char set_scontrol[700], set_srun[700], set_cmd[700];
};

static void exe(const char *dir, const char *rel, const char *text)
{
	struct strbuf p = STRBUF_INIT;
	test_write(dir, rel, text);
	strbuf_addf(&p, "%s/%s", dir, rel);
	chmod(p.buf, 0755);
	strbuf_release(&p);
}

static void fake_setup(struct fake *f, const char *nodes)
{
	struct strbuf w = STRBUF_INIT;
	snprintf(f->dir, sizeof(f->dir), "%s", test_tmpdir());
	test_write(f->dir, "node.txt", nodes);
	exe(f->dir, "bin/scontrol",
	    "#!/bin/sh\n"
	    "d=$(dirname \"$0\")/..\n"
	    "echo \"$*\" >>\"$d/scontrol.log\"\n"
	    "if [ \"$3\" = node ]; then\n"
	    "  if [ -n \"$4\" ]; then grep \"^NodeName=$4 \" \"$d/node.txt\"; else cat \"$d/node.txt\"; fi\n"
	    "  exit 0\nfi\n"
	    "[ -e \"$d/scontrol.fail\" ] && { echo 'slurm_load_node error: Unable to contact' >&2; "
	    "exit 1; }\n"
	    "exit 0\n");
	exe(f->dir, "bin/srun",
	    "#!/bin/sh\n"
	    "d=$(dirname \"$0\")/..\n"
	    "echo \"$*\" >>\"$d/srun.log\"\n"
	    "for a in \"$@\"; do case \"$a\" in --nodelist=*) node=${a#--nodelist=};; esac; done\n"
	    "[ -e \"$d/$node.hang\" ] && exec sleep 60\n"
	    "if [ -e \"$d/$node.fail\" ]; then\n"
	    "  echo \"srun: error: Task launch for StepId=7.0 failed on node $node: Communication "
	    "connection failure\" >&2; exit 1\nfi\n"
	    "while [ $# -gt 0 ]; do case \"$1\" in --*) shift;; *) break;; esac; done\n"
	    "SLURMD_NODENAME=$node exec \"$@\"\n");
	strbuf_addf(&w,
		    "#!/bin/sh\nexec %s \"$@\" --only kernel --root %s/fx/$SLURMD_NODENAME\n",
		    test_vigil_bin(), f->dir);
	exe(f->dir, "bin/remote-vigil", w.buf);
	snprintf(f->set_scontrol, sizeof(f->set_scontrol), "slurm.scontrol=%s/bin/scontrol",
		 f->dir);
	snprintf(f->set_srun, sizeof(f->set_srun), "slurm.srun=%s/bin/srun", f->dir);
	snprintf(f->set_cmd, sizeof(f->set_cmd), "fleet.command=%s/bin/remote-vigil", f->dir);
	for (int i = 1; i <= 6; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "fx/n%d/dev/kmsg", i);
		test_write(f->dir, rel, TEST_KMSG_CLEAN);
	}
	strbuf_release(&w);
}

static void fleet(struct fake *f, struct child *c, const char *const *extra)
{
	const char *args[32] = { "fleet", "check", "-c", f->set_scontrol, "-c", f->set_srun, "-c",
				 f->set_cmd };
	size_t n = 8;
	for (size_t i = 0; extra && extra[i]; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	test_run_vigil(c, args, NULL);
}

static const struct json_value *node_row(const struct json_value *v, const char *node)
{
	const struct json_value *nodes = json_get(v, "nodes");
	for (size_t i = 0; nodes && i < nodes->nr; i++)
		if (!strcmp(json_get_string(nodes->items[i], "node"), node))
			return nodes->items[i];
	return NULL;
}

static char *slurp(struct fake *f, const char *rel)
{
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT;
	strbuf_addf(&p, "%s/%s", f->dir, rel);
	read_file_bounded(p.buf, &sb, 1 << 20, NULL);
	strbuf_release(&p);
	return strbuf_detach(&sb, NULL);
}

TEST(fleet_every_node_gets_a_verdict_and_unreachable_is_never_healthy)
{
	struct fake f;
	fake_setup(&f, "NodeName=n1 State=IDLE Partitions=gpu\n"
		       "NodeName=n2 State=MIXED Partitions=gpu\n"
		       "NodeName=n3 State=IDLE+DRAIN Partitions=gpu Reason=admin: fan "
		       "[root@2026-11-30T11:00:00]\n"
		       "NodeName=n4 State=IDLE Partitions=gpu\n"
		       "NodeName=n5 State=IDLE Partitions=gpu\n"
		       "NodeName=n6 State=DOWN+NOT_RESPONDING Partitions=gpu Reason=Not responding "
		       "[slurm@2026-11-30T11:00:00]\n");
	test_write(f.dir, "fx/n2/dev/kmsg", xid_kmsg);
	test_write(f.dir, "n4.fail", "");
	test_write(f.dir, "n5.hang", "");
	struct child c;
	const char *extra[] = { "--json", "--timeout", "3", NULL };
	uint64_t t0 = mono_ms();
	fleet(&f, &c, extra);
	uint64_t ms = mono_ms() - t0;
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "unhealthy");
	CHECK_STR(json_get_string(node_row(v, "n1"), "verdict"), "healthy");
	CHECK_STR(json_get_string(node_row(v, "n2"), "verdict"), "unhealthy");
	CHECK_CONTAINS(json_get_string(node_row(v, "n2"), "reason"), "kernel: Xid 79");
	CHECK_STR(json_get_string(node_row(v, "n3"), "verdict"), "unreachable");
	CHECK_STR(json_get_string(node_row(v, "n3"), "reason"), "not checked (drained): admin: fan");
	CHECK_STR(json_get_string(node_row(v, "n4"), "verdict"), "unreachable");
	CHECK_CONTAINS(json_get_string(node_row(v, "n4"), "reason"), "Communication connection");
	CHECK_STR(json_get_string(node_row(v, "n5"), "verdict"), "unreachable");
	CHECK_STR(json_get_string(node_row(v, "n5"), "reason"), "no answer within 3 s");
	CHECK_STR(json_get_string(node_row(v, "n6"), "verdict"), "unreachable");
	CHECK_INT(json_get(json_get(v, "counts"), "unreachable")->number, 4);
	json_free(v);
	child_release(&c);
	CHECK_MSG(ms < 15000, "fleet took %llu ms with a 3 s deadline", (unsigned long long)ms);
	char *log = slurp(&f, "srun.log");
	CHECK_CONTAINS(log, "--nodelist=n1 --nodes=1 --ntasks=1 --immediate=2 --time=2 "
			    "--job-name=vigil-fleet --quiet");
	CHECK_CONTAINS(log, "check --json --host n1");
	CHECK_NOT_CONTAINS(log, "--nodelist=n3"); /* Slurm runs nothing on a drained node */
	CHECK_NOT_CONTAINS(log, "--nodelist=n6");
	free(log);
	/* the table for a person */
	const char *table[] = { "--timeout", "3", NULL };
	fleet(&f, &c, table);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "NODE  STATE        VERDICT        TIME  REASON\n");
	CHECK_CONTAINS(c.out.buf, "6 nodes: 1 healthy, 1 unhealthy, 0 unknown, 4 unreachable");
	child_release(&c);
}

TEST(fleet_exit_status_is_the_fleets)
{
	struct fake f;
	fake_setup(&f, "NodeName=n1 State=IDLE Partitions=gpu\n"
		       "NodeName=n2 State=IDLE Partitions=cpu\n");
	struct child c;
	fleet(&f, &c, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "2 nodes: 2 healthy");
	child_release(&c);
	test_write(f.dir, "n2.fail", "");
	fleet(&f, &c, NULL);
	CHECK_INT(c.exit_code, 3); /* one unreachable, none unhealthy: could not tell */
	child_release(&c);
	const char *part[] = { "--partition", "gpu", "--json", NULL };
	fleet(&f, &c, part);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	CHECK(node_row(v, "n1") && !node_row(v, "n2"));
	json_free(v);
	child_release(&c);
	const char *none[] = { "--partition", "nope", NULL };
	fleet(&f, &c, none);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "no nodes in partition nope");
	child_release(&c);
	/* scontrol cannot be reached: could not tell, said so */
	const char *bad[] = { "-c", "slurm.scontrol=/nonexistent/scontrol", NULL };
	fleet(&f, &c, bad);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.err.buf, "cannot list the nodes");
	child_release(&c);
}

TEST(fleet_drain_applies_the_node_policy)
{
	struct fake f;
	fake_setup(&f, "NodeName=n1 State=IDLE Partitions=gpu\n"
		       "NodeName=n2 State=IDLE Partitions=gpu\n");
	test_write(f.dir, "fx/n2/dev/kmsg", xid_kmsg);
	struct child c;
	const char *extra[] = { "--drain", NULL };
	fleet(&f, &c, extra);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "ACTION");
	child_release(&c);
	char *log = slurp(&f, "scontrol.log");
	CHECK_CONTAINS(log, "update NodeName=n2 State=DRAIN Reason=vigil: kernel: Xid 79");
	CHECK_NOT_CONTAINS(log, "NodeName=n1 State");
	free(log);
}

TEST(fleet_and_agent_command_lines)
{
	struct child c;
	const char *h1[] = { "fleet", "--help", NULL };
	test_run_vigil(&c, h1, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "usage: vigil fleet check");
	CHECK_CONTAINS(c.out.buf, "3  could not tell");
	child_release(&c);
	const char *h2[] = { "help", "agent", NULL };
	test_run_vigil(&c, h2, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "usage: vigil agent");
	child_release(&c);
	const char *h3[] = { "fleet", "check", "--help", NULL };
	test_run_vigil(&c, h3, NULL);
	CHECK_INT(c.exit_code, 0);
	child_release(&c);
	const char *const bad[][8] = {
		{ "fleet", NULL },
		{ "fleet", "status", NULL },
		{ "fleet", "check", "--partition", "a", "--nodes", "b", NULL },
		{ "fleet", "check", "--bogus", NULL },
		{ "fleet", "check", "--timeout", "soon", NULL },
		{ "fleet", "check", "--parallel", "0", NULL },
		{ "agent", "--bogus", NULL },
		{ "agent", "--interval", "0", NULL },
		{ "agent", "--once", "--listen", "localhost:80", "--only", "kernel", NULL },
		{ "agent", "--only", "nope", NULL },
		{ "agent", "extra", NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		test_run_vigil(&c, bad[i], NULL);
		CHECK_MSG(c.exited && c.exit_code == 2, "'vigil %s %s' exited %d", bad[i][0],
			  bad[i][1] ? bad[i][1] : "", c.exit_code);
		CHECK(c.err.len > 0);
		CHECK_STR(c.out.buf, "");
		child_release(&c);
	}
}

/* srun gets every fleet.srun-arg, however many (they were cut silently past 80). */
TEST(fleet_passes_every_srun_argument)
{
	struct fake f;
	fake_setup(&f, "NodeName=n1 State=IDLE Partitions=gpu\n");
	struct strbuf conf = STRBUF_INIT;
	char path[600];
	strbuf_addstr(&conf, "[fleet]\n");
	for (int i = 0; i < 100; i++)
		strbuf_addf(&conf, "srun-arg = --comment=a%d\n", i);
	test_write(f.dir, "many.conf", conf.buf);
	strbuf_release(&conf);
	snprintf(path, sizeof(path), "%s/many.conf", f.dir);
	const char *args[] = { "fleet", "check", "--config", path, "-c", f.set_scontrol, "-c",
			       f.set_srun, "-c", f.set_cmd, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s", c.exit_code, c.err.buf);
	child_release(&c);
	char *log = slurp(&f, "srun.log");
	CHECK_CONTAINS(log, "--comment=a0 ");
	CHECK_CONTAINS(log, "--comment=a99 ");
	CHECK_CONTAINS(log, "check --json --host n1");
	free(log);
}

/* Slurm cannot be reached: --json still gets one JSON object, saying why. */
TEST(fleet_json_when_slurm_cannot_be_reached)
{
	struct fake f;
	fake_setup(&f, "");
	exe(f.dir, "bin/scontrol-down",
	    "#!/bin/sh\necho 'slurm_load_node error: Unable to contact slurm controller' >&2\n"
	    "exit 1\n");
	char set[700];
	snprintf(set, sizeof(set), "slurm.scontrol=%s/bin/scontrol-down", f.dir);
	const char *args[] = { "fleet", "check", "--json", "-c", set, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "unknown");
	CHECK_CONTAINS(json_get_string(v, "error"), "Unable to contact slurm controller");
	CHECK(json_get(v, "nodes") && json_get(v, "nodes")->nr == 0);
	json_free(v);
	CHECK_CONTAINS(c.err.buf, "cannot list the nodes");
	child_release(&c);
}

/* Slurm answers but lists no node (or none in the partition): --json still gets JSON. */
TEST(fleet_json_when_there_are_no_nodes)
{
	struct fake f;
	fake_setup(&f, "NodeName=n1 State=IDLE Partitions=gpu\n");
	const char *args[] = { "--partition", "nope", "--json", NULL };
	struct child c;
	fleet(&f, &c, args);
	CHECK_INT(c.exit_code, 2);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "error"), "no nodes in partition nope");
	CHECK_INT(json_get(v, "nodes") ? json_get(v, "nodes")->nr : 99, 0);
	json_free(v);
	CHECK_CONTAINS(c.err.buf, "no nodes in partition nope");
	child_release(&c);
}

/* check --slurm: scontrol's deadline is what is left of --timeout, not slurm.timeout alone. */
TEST_TIMEOUT(check_slurm_calls_fit_inside_timeout, 60)
{
	struct fake f;
	fake_setup(&f, "NodeName=n1 State=IDLE Partitions=gpu\n");
	exe(f.dir, "bin/scontrol-hang", "#!/bin/sh\nexec sleep 60\n");
	char set[700], root[600], state[600];
	snprintf(set, sizeof(set), "slurm.scontrol=%s/bin/scontrol-hang", f.dir);
	snprintf(root, sizeof(root), "%s/fx/n1", f.dir);
	snprintf(state, sizeof(state), "%s/state", f.dir);
	const char *args[] = { "check", "--slurm", "--only", "kernel", "--root", root,
			       "--state-dir", state, "--timeout", "3", "-c", set, "-c",
			       "slurm.timeout=25", NULL };
	const char *env[] = { "SLURMD_NODENAME=n1", NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "(what was left of --timeout 3)");
	CHECK_NOT_CONTAINS(c.err.buf, "slurm.timeout 25");
	child_release(&c);
}

/* check --slurm with a check that hangs to the end of --timeout: the checks leave Slurm its
 * room, so slurm.on-unknown = drain still drains the node. */
TEST_TIMEOUT(check_slurm_drains_though_a_check_hung, 60)
{
	struct fake f;
	fake_setup(&f, "NodeName=n1 State=IDLE Partitions=gpu\n");
	char set[700], root[600], state[600], fifo[700], log[600];
	snprintf(set, sizeof(set), "slurm.scontrol=%s/bin/scontrol", f.dir);
	snprintf(root, sizeof(root), "%s/fx/n1", f.dir);
	snprintf(state, sizeof(state), "%s/state", f.dir);
	test_write(root, "sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");
	test_write(root, "sys/class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
	test_write(root, "sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
	test_mkdir(root, "sys/class/infiniband/mlx5_0/ports/1/counters");
	snprintf(fifo, sizeof(fifo), "%s/sys/class/infiniband/mlx5_0/ports/1/state", root);
	CHECK(mkfifo(fifo, 0600) == 0);
	/* a writer that never writes: the check blocks as on a hung sysfs attribute */
	int hold = open(fifo, O_RDWR | O_CLOEXEC);
	CHECK(hold >= 0);
	const char *args[] = { "check", "--slurm", "--only", "infiniband", "--root", root,
			       "--state-dir", state, "--timeout", "6", "-c", set,
			       "-c", "slurm.on-unknown=drain", "-c", "infiniband.timeout=60", NULL };
	const char *env[] = { "SLURMD_NODENAME=n1", NULL };
	struct child c;
	test_run_vigil(&c, args, env);
	close(hold);
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.err.buf);
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT;
	snprintf(log, sizeof(log), "%s/scontrol.log", f.dir);
	CHECK_MSG(read_file_bounded(log, &sb, 1 << 16, &err) == READ_OK, "no scontrol call: %s",
		  c.err.buf);
	CHECK_CONTAINS(sb.buf, "update NodeName=n1 State=DRAIN");
	child_release(&c);
	strbuf_release(&sb);
	strbuf_release(&err);
}
