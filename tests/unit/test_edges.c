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
