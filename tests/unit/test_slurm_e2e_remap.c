/*
 * test_slurm_e2e_remap.c: issue 23's pending row remap on the real local Slurm of
 * tests/e2e/slurm-cluster (munged, slurmctld, one slurmd): `vigil check --slurm --only gpu` on a
 * fixture root whose NVML snapshot (served by the fake NVML, docs/nvml-snapshot.md) has a row
 * remap pending drains the node with a reason that names the GPU's bus id and the reset, while
 * a job runs there: the node shows draining, the job ends by itself (never killed), and the
 * node is drained once idle. Once the snapshot says the remap is applied (the GPU was reset),
 * the next check resumes the node. 13-16 s here, most of it Slurm starting and the 4 s job.
 * Under the old code the pending remap drained with "has a row remap pending: ..." and no
 * "reset GPU: pending row remap" reason. That a node someone else drained keeps their reason is
 * the policy's, tested for every reason in test_slurm.c and on this Slurm in test_slurm_e2e.c. Skipped with the reason without Slurm or root. A
 * guardian process stops the cluster however the test ends.
 */
#include "../harness.h"
#include "../../src/slurm/slurm.h"

#include <unistd.h>

static char cdir[512];

static void cluster_up(void)
{
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	snprintf(cdir, sizeof(cdir), "%s/slurm", test_tmpdir());
	char port[16];
	/* a band of its own (20000-20999), apart from the other Slurm tests' */
	snprintf(port, sizeof(port), "%u", 20000 + (unsigned)(getpid() % 45) * 20);
	test_slurm_guardian(cdir);
	const char *args[] = { "start", cdir, "1", port, "", "0", NULL };
	int rc = test_slurm_cluster(args, 150000, &err);
	if (rc != 0) {
		static char why[1024];
		snprintf(why, sizeof(why), "cannot start Slurm here (exit %d): %s", rc, err.buf);
		SKIP(why);
	}
	strbuf_addf(&p, "%s/slurm.conf", cdir);
	setenv("SLURM_CONF", p.buf, 1);
	strbuf_release(&p);
	strbuf_release(&err);
}

/* One H200 as NVML shows it; pending is the row remapper's pending flag (0 once reset). */
static void snapshot(const char *root, int pending)
{
	struct strbuf s = STRBUF_INIT;
	strbuf_addf(&s,
		    "vigil-nvml-snapshot 1\n"
		    "driver_version 580.159.04\n"
		    "device_count 1\n"
		    "\n[gpu 0]\n"
		    "name NVIDIA H200\n"
		    "uuid GPU-2c41d0aa-57e3-4f0e-9b1d-6e8a3c2f7b10\n"
		    "pci_bus_id 00000000:5D:00.0\n"
		    "pci_device_id 0x233510de\n"
		    "ecc_mode_current 1\n"
		    "ecc_mode_pending 1\n"
		    "remapped_rows_correctable 0\n"
		    "remapped_rows_uncorrectable %d\n"
		    "remapped_rows_pending %d\n"
		    "remapped_rows_failure 0\n",
		    pending ? 1 : 2, pending);
	test_write(root, "nvml.snapshot", s.buf);
	test_write(root, "dev/kmsg", TEST_KMSG_CLEAN); /* a host root, not a bare directory */
	strbuf_release(&s);
}

static const struct slurm_cmds cmds = { .scontrol = "scontrol", .sinfo = "sinfo", .srun = "srun",
					.timeout_ms = 10000 };

static void node_get(struct slurm_node *n)
{
	struct strbuf err = STRBUF_INIT;
	memset(n, 0, sizeof(*n));
	CHECK_MSG(slurm_node_get(&cmds, "n1", n, &err) == 0, "scontrol on n1: %s", err.buf);
	strbuf_release(&err);
}

/* What slurmd's HealthCheckProgram runs, for node n1, on the fixture root. */
static void health_check(const char *root, struct child *c)
{
	const char *args[] = { "check", "--slurm", "--only", "gpu", "--root", root, "--reason",
			       "-c", "slurm.timeout=5", NULL };
	const char *env[] = { "SLURMD_NODENAME=n1", NULL };
	test_run_vigil(c, args, env);
}

TEST_TIMEOUT(slurm_e2e_pending_row_remap_drains_until_reset, 120)
{
	struct strbuf root = STRBUF_INIT;
	struct slurm_node n;
	struct child c;
	strbuf_addf(&root, "%s/fx-n1", test_tmpdir());
	snapshot(root.buf, 1);
	cluster_up();

	/* a job runs on n1 when the check finds the pending remap */
	const char *job_argv[] = { "srun", "-N1", "-w", "n1", "sleep", "4", NULL };
	struct child job;
	struct strbuf err = STRBUF_INIT;
	child_init(&job);
	job.argv = job_argv;
	job.timeout_ms = 60000;
	CHECK_MSG(child_start(&job, &err) == 0, "srun: %s", err.buf);
	for (int i = 0; i < 100; i++) {
		node_get(&n);
		bool busy = n.flags & (NODE_ALLOCATED | NODE_MIXED);
		slurm_node_release(&n);
		if (busy)
			break;
		usleep(100000);
	}
	health_check(root.buf, &c);
	CHECK_MSG(c.exited && c.exit_code == 1, "exit %d; stdout '%s' stderr '%s'", c.exit_code,
		  c.out.buf, c.err.buf);
	child_release(&c);
	node_get(&n);
	/* DRAIN, never DOWN: the job runs on (draining), the node takes no new one */
	CHECK_MSG((n.flags & NODE_DRAIN) && !(n.flags & NODE_DOWN), "n1 is %s", n.state);
	CHECK_MSG(!strcmp(slurm_state_short(n.flags), "draining"), "n1 is %s, not draining",
		  n.state);
	CHECK_STR(n.reason, "vigil: gpu: GPU 0 (0000:5d:00.0): reset GPU: pending row remap");
	slurm_node_release(&n);
	/* the job ends as it would have (not killed), and the node is drained: idle, no job */
	while (child_poll(&job, 1000) == 0)
		;
	child_finish(&job);
	CHECK_MSG(job.exited && job.exit_code == 0, "the job did not finish: %s", job.err.buf);
	child_release(&job);
	strbuf_release(&err);
	for (int i = 0; i < 50; i++) {
		node_get(&n);
		bool drained = !strcmp(slurm_state_short(n.flags), "drained");
		if (drained)
			break;
		slurm_node_release(&n);
		n.state = NULL;
		usleep(100000);
	}
	CHECK_MSG(n.state && !strcmp(slurm_state_short(n.flags), "drained"), "n1 is %s",
		  n.state ? n.state : "?");
	slurm_node_release(&n);

	/* the GPU was reset: the remap is applied, nothing is pending, the node comes back */
	snapshot(root.buf, 0);
	health_check(root.buf, &c);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d; stdout '%s' stderr '%s'", c.exit_code,
		  c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "resuming the node vigil drained");
	child_release(&c);
	node_get(&n);
	CHECK_MSG(!(n.flags & NODE_DRAIN), "n1 still drained: %s '%s'", n.state, n.reason);
	slurm_node_release(&n);

	const char *stop[] = { "stop", cdir, NULL };
	test_slurm_cluster(stop, 30000, NULL);
	strbuf_release(&root);
}
