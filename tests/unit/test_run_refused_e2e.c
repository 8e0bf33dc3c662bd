/*
 * test_run_refused_e2e.c: `vigil run` on the real local Slurm (tests/e2e/slurm-cluster, one
 * node of 4 CPUs) in an allocation of one task a node, asked for two tasks a node. srun
 * refuses the step ("srun: error: Unable to create step for job J: More processors requested
 * than permitted") and exits 1 before any task runs: the allocation is too small, no host is
 * at fault. Found on a real one-node Slurm: vigil took it for a crash, relaunched, group-tested
 * and drained the healthy node (too_few_hosts). Now the run ends at once, launch_refused, exit
 * 1, srun's reason and what to ask for, and the node stays as it was. No trainer needed (the
 * command never runs): a few seconds besides the cluster's start. Ports 20900-20999.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/run.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

TEST_TIMEOUT(run_e2e_refused_step_ends_the_run_and_drains_nothing, 300)
{
	struct strbuf w = STRBUF_INIT, out = STRBUF_INIT;
	char dir[512], cdir[600], job[32], run_dir[700], set_cmd[800], env_job[64];
	snprintf(dir, sizeof(dir), "%s", test_tmpdir());
	snprintf(cdir, sizeof(cdir), "%s/slurm", dir);
	test_slurm_up(cdir, 1, 20900 + (unsigned)(getpid() % 9) * 10);
	test_write(dir, "fx/n1/dev/kmsg", TEST_KMSG_CLEAN);
	strbuf_addf(&w,
		    "#!/bin/sh\n"
		    "case \"$1\" in\n"
		    "check) exec %s \"$@\" --only kernel --root %s/fx/$SLURMD_NODENAME ;;\n"
		    "*) exec %s \"$@\" ;;\n"
		    "esac\n",
		    test_vigil_bin(), dir, test_vigil_bin());
	test_write(dir, "bin/remote-vigil", w.buf);
	strbuf_reset(&w);
	strbuf_addf(&w, "%s/bin/remote-vigil", dir);
	chmod(w.buf, 0755);
	snprintf(set_cmd, sizeof(set_cmd), "fleet.command=%s", w.buf);

	/* one task's worth of the node (1 of its 4 CPUs), as `salloc -N1` on a small default */
	strbuf_reset(&w);
	const char *salloc[] = { "salloc", "--no-shell", "-N1", "--ntasks-per-node=1", "-J",
				 "vigil-refused", NULL };
	int rc = test_run_argv(salloc, 60000, &w);
	const char *g = strstr(w.buf, "Granted job allocation ");
	CHECK_MSG(rc == 0 && g, "salloc: %s", w.buf);
	snprintf(job, sizeof(job), "%ld", strtol(g + 23, NULL, 10));
	snprintf(env_job, sizeof(env_job), "SLURM_JOB_ID=%s", job);
	snprintf(run_dir, sizeof(run_dir), "%s/run", dir);

	const char *env[] = { env_job, "SLURM_JOB_NODELIST=n1", NULL };
	const char *argv[] = { test_vigil_bin(), "run", "--tasks-per-node", "2", "--run-dir", run_dir,
			       "--json", "-c", set_cmd, "-c", "run.grace=3", "-c",
			       "run.restart-delay=0.5", "-c", "run.master-port=20950", "--",
			       "/bin/true", NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 120000;
	CHECK(child_run(&c, NULL) == 0);
	CHECK_MSG(c.exited && c.exit_code == 1, "exit %d: %s\n%s", c.exit_code, c.out.buf,
		  c.err.buf);
	CHECK_CONTAINS(c.out.buf, "\"outcome\":\"launch_refused\"");
	CHECK_CONTAINS(c.out.buf, "srun refused to create the step: More processors requested "
				  "than permitted; the allocation cannot hold this step");
	CHECK_CONTAINS(c.out.buf, "\"excluded\":[]");
	CHECK_NOT_CONTAINS(c.err.buf, "group test");
	json_free(test_parse_json(&c));
	child_release(&c);

	/* the journal says why, and vigil report shows it */
	strbuf_reset(&w);
	strbuf_addf(&w, "%s/journal.jsonl", run_dir);
	CHECK(read_file_bounded(w.buf, &out, 1u << 20, NULL) == 0);
	CHECK_CONTAINS(out.buf, "\"class\":\"launch_refused\"");
	CHECK_CONTAINS(out.buf, "More processors requested than permitted");
	CHECK_NOT_CONTAINS(out.buf, "host_excluded");
	CHECK_NOT_CONTAINS(out.buf, "\"class\":\"crash\"");
	const char *report[] = { test_vigil_bin(), "report", run_dir, "--json", NULL };
	strbuf_reset(&out);
	CHECK_INT(test_run_argv(report, 30000, &out), 0);
	CHECK_CONTAINS(out.buf, "\"outcome\": \"launch_refused\"");
	CHECK_CONTAINS(out.buf, "\"class\": \"launch_refused\"");
	CHECK_CONTAINS(out.buf, "\"excluded\": []");

	/* the node is as it was: not drained, nobody's reason on it */
	const char *show[] = { "scontrol", "show", "node", "n1", NULL };
	strbuf_reset(&out);
	CHECK_INT(test_run_argv(show, 30000, &out), 0);
	CHECK_NOT_CONTAINS(out.buf, "DRAIN");
	CHECK_NOT_CONTAINS(out.buf, "Reason=");
	const char *scancel[] = { "scancel", job, NULL };
	test_run_argv(scancel, 30000, NULL);
	strbuf_release(&w);
	strbuf_release(&out);
}
