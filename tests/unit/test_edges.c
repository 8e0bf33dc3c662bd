/*
 * test_edges.c: issue 22's rough edges, each through the binary: 'fabric ufm --state' makes its
 * directory on first use (never through a link), 'fabric burnin run' outside an allocation is
 * refused before any srun, and 'stress' / 'net' without an NVIDIA driver say so in the gpu
 * check's words instead of CUDA's.
 */
#include "../harness.h"

#include <sys/stat.h>
#include <unistd.h>

static void ufm_with_state(struct child *c, const char *state)
{
	struct strbuf log = STRBUF_INIT;
	test_src_path(&log, "tests/data/fabric/ufm/event.log");
	const char *args[] = { "fabric", "ufm", log.buf, "--state", state, NULL };
	test_run_vigil(c, args, NULL);
	strbuf_release(&log);
}

/* The README's 'fabric ufm --state /var/lib/vigil/fabric' on a fresh host: exit 2, "it does not
 * exist". Now the directory and its missing parents are made, the directory 0700. */
TEST(edges_ufm_state_dir_is_made_on_first_use)
{
	struct strbuf st = STRBUF_INIT, f = STRBUF_INIT;
	struct child c;
	struct stat sb;
	strbuf_addf(&st, "%s/var/lib/vigil/fabric", test_tmpdir());
	ufm_with_state(&c, st.buf);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_NOT_CONTAINS(c.err.buf, "does not exist");
	CHECK_INT(lstat(st.buf, &sb), 0);
	CHECK(S_ISDIR(sb.st_mode));
	CHECK_INT((int)(sb.st_mode & 0777), 0700);
	CHECK_INT((int)sb.st_uid, (int)geteuid());
	strbuf_addf(&f, "%s/ufm-state.json", st.buf);
	CHECK_MSG(access(f.buf, F_OK) == 0, "no ufm-state.json in the new directory");
	child_release(&c);
	/* the second run finds it as the first left it */
	ufm_with_state(&c, st.buf);
	CHECK_INT(c.exit_code, 1);
	child_release(&c);
	strbuf_release(&st);
	strbuf_release(&f);
}

/* What exists and is not a directory of ours is refused, never followed: a file, a link to a
 * directory elsewhere, a dangling link planted where the directory would be made. */
TEST(edges_ufm_state_dir_never_through_a_link)
{
	struct strbuf p = STRBUF_INIT, target = STRBUF_INIT;
	struct child c;
	test_write(test_tmpdir(), "afile", "x\n");
	strbuf_addf(&p, "%s/afile", test_tmpdir());
	ufm_with_state(&c, p.buf);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "is a regular file, not a directory");
	child_release(&c);

	test_mkdir(test_tmpdir(), "elsewhere");
	strbuf_addf(&target, "%s/elsewhere", test_tmpdir());
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/link", test_tmpdir());
	CHECK_INT(symlink(target.buf, p.buf), 0);
	ufm_with_state(&c, p.buf);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	child_release(&c);

	/* dangling: mkdir() would have made the target through it */
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/dangling", test_tmpdir());
	strbuf_reset(&target);
	strbuf_addf(&target, "%s/made-through-link", test_tmpdir());
	CHECK_INT(symlink(target.buf, p.buf), 0);
	ufm_with_state(&c, p.buf);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "symbolic link");
	CHECK_MSG(access(target.buf, F_OK) != 0, "a directory was made through the link");
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&target);
}

/* ---- fabric burnin run outside an allocation ---- */

/* Fake srun (records that it ran and the job it was given) and scontrol (its answer chosen by
 * FAKE_JOB: running, pending, gone as Slurm says it, or no controller). */
static const char srun_rec[] = "echo \"$SLURM_JOB_ID\" >> \"$FAKE_DIR/srun-ran\"\n"
			       "echo 'srun: error: Unable to allocate resources' >&2\nexit 1\n";
static const char scontrol_fake[] =
	"case \"$FAKE_JOB\" in\n"
	"running) echo \"JobId=$4 JobName=burnin UserId=ops(1000) GroupId=ops(1000) "
	"JobState=RUNNING Reason=None Dependency=(null) NumNodes=4\";;\n"
	"pending) echo \"JobId=$4 JobName=burnin UserId=ops(1000) JobState=PENDING "
	"Reason=Resources Dependency=(null)\";;\n"
	"gone) echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1;;\n"
	"*) echo 'scontrol: fatal: Could not establish a configuration source' >&2; exit 1;;\n"
	"esac\n";

static void burnin(struct child *c, const char *job_env, const char *job_mode,
		   const char *jobid)
{
	struct strbuf path = STRBUF_INIT, dir = STRBUF_INIT, mode = STRBUF_INIT,
		      plan = STRBUF_INIT;
	const char *bin = test_script("srun", srun_rec);
	test_script("scontrol", scontrol_fake);
	strbuf_addf(&path, "PATH=%s:/usr/bin:/bin", bin);
	strbuf_addf(&dir, "FAKE_DIR=%s", test_tmpdir());
	strbuf_addf(&mode, "FAKE_JOB=%s", job_mode);
	test_src_path(&plan, "tests/data/fabric/plan-example.json");
	const char *env[] = { path.buf, dir.buf, mode.buf, job_env, "SLURM_JOBID=", NULL };
	const char *args[] = { "fabric", "burnin", "run", plan.buf, "--duration", "1",
			       jobid ? "--jobid" : NULL, jobid, NULL };
	test_run_vigil(c, args, env);
	strbuf_release(&path);
	strbuf_release(&dir);
	strbuf_release(&mode);
	strbuf_release(&plan);
}

static bool srun_ran(struct strbuf *jobs)
{
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/srun-ran", test_tmpdir());
	bool ran = access(p.buf, F_OK) == 0;
	if (jobs && ran) {
		FILE *f = fopen(p.buf, "r");
		char line[64];
		if (f && fgets(line, sizeof(line), f))
			strbuf_addstr(jobs, line);
		if (f)
			fclose(f);
	}
	unlink(p.buf);
	strbuf_release(&p);
	return ran;
}

/* Outside an allocation every srun step failed on its own (about 40 srun errors). Now one
 * message naming salloc, sbatch and --jobid, exit 2, and no srun at all. */
TEST(edges_burnin_run_outside_an_allocation_is_refused_before_srun)
{
	struct child c;
	burnin(&c, "SLURM_JOB_ID=", "running", NULL);
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "not inside a Slurm allocation");
	CHECK_CONTAINS(c.err.buf, "salloc");
	CHECK_CONTAINS(c.err.buf, "sbatch");
	CHECK_CONTAINS(c.err.buf, "--jobid");
	CHECK_NOT_CONTAINS(c.err.buf, "srun: error");
	CHECK_MSG(!srun_ran(NULL), "srun ran outside an allocation");
	child_release(&c);

	/* a job that is not running: pending, or gone from Slurm */
	burnin(&c, "SLURM_JOB_ID=", "pending", "77");
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "job 77 is PENDING, not running");
	CHECK_MSG(!srun_ran(NULL), "srun ran in a pending job");
	child_release(&c);
	burnin(&c, "SLURM_JOB_ID=78", "gone", NULL);
	CHECK_MSG(c.exit_code == 2, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "Slurm has no job 78");
	CHECK_MSG(!srun_ran(NULL), "srun ran in a job that is gone");
	child_release(&c);

	/* Slurm does not answer: could not tell, still before any srun */
	burnin(&c, "SLURM_JOB_ID=79", "down", NULL);
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "cannot tell whether job 79 is running");
	CHECK_CONTAINS(c.err.buf, "Could not establish a configuration source");
	CHECK_MSG(!srun_ran(NULL), "srun ran with Slurm down");
	child_release(&c);

	/* --jobid of a running job: srun is run, in that job */
	struct strbuf jobs = STRBUF_INIT;
	burnin(&c, "SLURM_JOB_ID=", "running", "80");
	CHECK_MSG(srun_ran(&jobs), "srun did not run in a running job: %s", c.err.buf);
	CHECK_STR(jobs.buf, "80\n");
	child_release(&c);
	strbuf_release(&jobs);
}
