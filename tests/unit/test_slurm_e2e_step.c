/*
 * test_slurm_e2e_step.c: the srun step of `vigil run` (src/slurm/step.c) on the real local Slurm
 * of tests/e2e/slurm-cluster (munged, slurmctld, four slurmd): ranks on the right hosts with the
 * torch.distributed environment in their own files, and a stopped step (tasks that ignore
 * SIGTERM) leaving no process on any node. Skipped with the reason without Slurm or root. A
 * guardian process stops the cluster however the test ends.
 */
#include "../harness.h"
#include "../../src/slurm/step.h"
#include "../../src/lib/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static char cdir[512];

static void cluster_up(void)
{
	snprintf(cdir, sizeof(cdir), "%s/slurm", test_tmpdir());
	/* below the ephemeral ports (32768 up) and apart from the other Slurm tests' bands */
	test_slurm_up(cdir, 4, 8000 + (unsigned)(getpid() % 100) * 20);
}

static const struct slurm_cmds cmds = { .scontrol = "scontrol", .sinfo = "sinfo", .srun = "srun",
					.timeout_ms = 10000 };

/* Pids whose environment holds exactly entry (each task carries its attempt's VIGIL_STEP_FILE). */
static size_t procs_with_env(const char *entry, struct strbuf *out)
{
	size_t n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		long pid = strtol(e->d_name, NULL, 10);
		if (pid <= 1 || pid == getpid())
			continue;
		char path[64];
		snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
		struct strbuf sb = STRBUF_INIT;
		if (read_file_bounded(path, &sb, 1u << 20, NULL) == 0) {
			for (size_t i = 0; i < sb.len; i += strlen(sb.buf + i) + 1)
				if (!strcmp(sb.buf + i, entry)) {
					strbuf_addf(out, " %ld", pid);
					n++;
					break;
				}
		}
		strbuf_release(&sb);
	}
	closedir(d);
	return n;
}

static void spec_for(struct step_spec *s, const char *const *hosts, const char *dir,
		     struct strbuf *step_file, const char *const *cmd)
{
	memset(s, 0, sizeof(*s));
	s->hosts = hosts;
	s->nr_hosts = 2;
	s->tasks_per_node = 2;
	s->master_port = 29555;
	s->attempt = 1;
	s->run_dir = test_tmpdir();
	s->attempt_dir = dir;
	strbuf_reset(step_file);
	strbuf_addf(step_file, "%s/steps.jsonl", dir);
	s->step_file = step_file->buf;
	s->cmd = cmd;
}

TEST_TIMEOUT(slurm_e2e_step_ranks_env_and_stop_leaves_nothing, 300)
{
	cluster_up();
	const char *tmp = test_tmpdir();
	struct strbuf err = STRBUF_INIT, sf = STRBUF_INIT, a1 = STRBUF_INIT, a2 = STRBUF_INIT;
	strbuf_addf(&a1, "%s/attempt-1", tmp);
	strbuf_addf(&a2, "%s/attempt-2", tmp);
	test_mkdir(tmp, "attempt-1");
	test_mkdir(tmp, "attempt-2");

	/* n3 first: rank 0 and MASTER_ADDR are on the first host given, not Slurm's first node */
	const char *hosts[] = { "n3", "n1" };
	const char *show[] = { "/bin/sh", "-c",
			       "echo RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE "
			       "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE MASTER_ADDR=$MASTER_ADDR "
			       "MASTER_PORT=$MASTER_PORT NODE_RANK=$NODE_RANK HOST=$SLURMD_NODENAME "
			       "ATTEMPT=$VIGIL_ATTEMPT; echo to-stderr >&2",
			       NULL };
	struct step_spec s;
	spec_for(&s, hosts, a1.buf, &sf, show);
	struct step st;
	step_init(&st);
	CHECK_MSG(step_start(&st, &cmds, &s, &err) == 0, "%s", err.buf);
	uint64_t end = mono_ms() + 60000;
	for (;;) {
		struct pollfd pfd[CHILD_POLLFDS];
		size_t n = step_pollfds(&st, pfd);
		poll(pfd, n, 200);
		if (step_handle(&st, pfd, n))
			break;
		CHECK_MSG(mono_ms() < end, "the step did not end; srun said: %s", st.child.err.buf);
	}
	CHECK_MSG(st.child.exited && st.child.exit_code == 0, "srun: exit %d: %s",
		  st.child.exit_code, st.child.err.buf);
	CHECK(step_id(&st) != NULL);
	const char *host_of[] = { "n3", "n3", "n1", "n1" };
	for (int r = 0; r < 4; r++) {
		struct strbuf want = STRBUF_INIT, got = STRBUF_INIT, path = STRBUF_INIT;
		strbuf_addf(&path, "%s/rank-%d.out", a1.buf, r);
		CHECK_MSG(read_file_bounded(path.buf, &got, 4096, &err) == 0, "%s", err.buf);
		strbuf_addf(&want,
			    "RANK=%d LOCAL_RANK=%d WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 MASTER_ADDR=n3 "
			    "MASTER_PORT=29555 NODE_RANK=%d HOST=%s ATTEMPT=1\n",
			    r, r % 2, r / 2, host_of[r]);
		CHECK_STR(got.buf, want.buf);
		strbuf_reset(&path);
		strbuf_reset(&got);
		strbuf_addf(&path, "%s/rank-%d.err", a1.buf, r);
		CHECK(read_file_bounded(path.buf, &got, 4096, &err) == 0);
		CHECK_STR(got.buf, "to-stderr\n");
		strbuf_release(&want);
		strbuf_release(&got);
		strbuf_release(&path);
	}
	CHECK(step_stop(&st, &cmds, 1000, &err) == 0);
	step_release(&st);

	/* tasks that ignore SIGTERM: stop must escalate (scancel, KILL) and leave nothing */
	const char *stubborn[] = { "/bin/sh", "-c", "trap '' TERM; while :; do sleep 1; done", NULL };
	spec_for(&s, hosts, a2.buf, &sf, stubborn);
	s.attempt = 2;
	struct strbuf marker = STRBUF_INIT, left = STRBUF_INIT;
	strbuf_addf(&marker, "VIGIL_STEP_FILE=%s", sf.buf);
	step_init(&st);
	CHECK_MSG(step_start(&st, &cmds, &s, &err) == 0, "%s", err.buf);
	end = mono_ms() + 30000;
	for (;;) {
		strbuf_reset(&left);
		if (step_id(&st) && procs_with_env(marker.buf, &left) >= 4)
			break;
		struct pollfd pfd[CHILD_POLLFDS];
		size_t n = step_pollfds(&st, pfd);
		poll(pfd, n, 100);
		CHECK_MSG(!step_handle(&st, pfd, n), "the step ended by itself: %s",
			  st.child.err.buf);
		CHECK_MSG(mono_ms() < end, "4 tasks did not start (seen:%s)", left.buf);
	}
	CHECK_MSG(step_stop(&st, &cmds, 1500, &err) == 0, "%s", err.buf);
	CHECK(st.child.done);
	/* nothing of the step on any node (all four slurmd share this machine's /proc) */
	end = mono_ms() + 10000;
	for (;;) {
		strbuf_reset(&left);
		if (!procs_with_env(marker.buf, &left))
			break;
		CHECK_MSG(mono_ms() < end, "tasks of the stopped step still running:%s", left.buf);
		usleep(100000);
	}
	step_release(&st);
	/* the attempts' rank files never mix */
	struct strbuf got = STRBUF_INIT, path = STRBUF_INIT;
	strbuf_addf(&path, "%s/rank-0.out", a2.buf);
	CHECK(read_file_bounded(path.buf, &got, 4096, &err) == 0);
	CHECK_STR(got.buf, "");
	strbuf_release(&got);
	strbuf_release(&path);

	const char *stop[] = { "stop", cdir, NULL };
	test_slurm_cluster(stop, 30000, NULL);
	strbuf_release(&err);
	strbuf_release(&sf);
	strbuf_release(&a1);
	strbuf_release(&a2);
	strbuf_release(&marker);
	strbuf_release(&left);
}
