/*
 * test_run_cli.c: `vigil run`'s refusals, each a clear message and exit 2 before anything is
 * launched (outside an allocation, a command that is not there, an invalid --step-pattern, N
 * larger than the allocation, a run directory that cannot be used, a bad setting), with a fake
 * scontrol for the allocation's nodes; and rankout.c, which splits a labelled step's output
 * into rank files: binary garbage, megabyte lines and planted links.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/supervise/rankout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char set_scontrol[600];

static void fake_slurm(const char *dir)
{
	test_write(dir, "bin/scontrol",
		   "#!/bin/sh\n"
		   "for n in n1 n2 n3; do\n"
		   "  echo \"NodeName=$n Arch=x86_64 NodeAddr=127.0.0.1 State=ALLOCATED "
		   "Partitions=debug Reason=\"\n"
		   "done\n");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/bin/scontrol", dir);
	chmod(p.buf, 0755);
	snprintf(set_scontrol, sizeof(set_scontrol), "slurm.scontrol=%s", p.buf);
	strbuf_release(&p);
}

static void run(struct child *c, const char *const *args, bool in_alloc)
{
	const char *env_in[] = { "SLURM_JOB_ID=41", "SLURM_JOB_NODELIST=n[1-3]", NULL };
	const char *env_out[] = { "SLURM_JOB_ID=", "SLURM_JOB_NODELIST=", "SLURM_NODELIST=", NULL };
	test_run_vigil(c, args, in_alloc ? env_in : env_out);
}

TEST(run_cli_refusals_say_why_and_exit_2)
{
	const char *dir = test_tmpdir();
	fake_slurm(dir);
	struct strbuf rd = STRBUF_INIT, file = STRBUF_INIT;
	strbuf_addf(&rd, "%s/rd", dir);
	test_write(dir, "a-file", "x");
	strbuf_addf(&file, "%s/a-file/run", dir);
	struct child c;

	const char *outside[] = { "run", "--", "/bin/true", NULL };
	run(&c, outside, false);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "not inside a Slurm allocation");
	child_release(&c);

	const char *nocmd[] = { "run", "-c", set_scontrol, "--", "no-such-trainer-here", NULL };
	run(&c, nocmd, true);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "command not found: 'no-such-trainer-here'");
	child_release(&c);

	const char *nothing[] = { "run", "-c", set_scontrol, NULL };
	run(&c, nothing, true);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "no command to run");
	child_release(&c);

	const char *regex[] = { "run", "-c", set_scontrol, "--step-pattern", "(", "--",
				"/bin/true", NULL };
	run(&c, regex, true);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--step-pattern");
	child_release(&c);

	const char *toomany[] = { "run", "-c", set_scontrol, "--nodes", "4", "--run-dir", rd.buf,
				  "--", "/bin/true", NULL };
	run(&c, toomany, true);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--nodes 4 is more than the allocation's 3 nodes");
	child_release(&c);

	const char *nospare[] = { "run", "-c", set_scontrol, "--spares", "3", "--run-dir", rd.buf,
				  "--", "/bin/true", NULL };
	run(&c, nospare, true);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "no room for 3 spares");
	child_release(&c);

	const char *baddir[] = { "run", "-c", set_scontrol, "--run-dir", file.buf, "--",
				 "/bin/true", NULL };
	run(&c, baddir, true);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "cannot create");
	child_release(&c);

	/* a planted link as the run directory is not followed */
	struct strbuf link = STRBUF_INIT;
	strbuf_addf(&link, "%s/linked", dir);
	CHECK(symlink("/tmp", link.buf) == 0);
	const char *linked[] = { "run", "-c", set_scontrol, "--run-dir", link.buf, "--",
				 "/bin/true", NULL };
	run(&c, linked, true);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "a symbolic link, not a directory");
	child_release(&c);

	const char *badset[] = { "run", "-c", set_scontrol, "--hang-after", "0.5", "--",
				 "/bin/true", NULL };
	run(&c, badset, true);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "run.hang-after");
	child_release(&c);

	const char *help[] = { "run", "--help", NULL };
	run(&c, help, false);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "usage: vigil run");
	child_release(&c);
	strbuf_release(&rd);
	strbuf_release(&file);
	strbuf_release(&link);
}

struct seen {
	struct strbuf lines;
	size_t n;
};

static void on_line(void *arg, int rank, int stream, const char *line, size_t len)
{
	struct seen *s = arg;
	s->n++;
	strbuf_addf(&s->lines, "%d/%d:%zu:", rank, stream, len);
	for (size_t i = 0; i < len && i < 40; i++)
		strbuf_addch(&s->lines, line[i] ? line[i] : '@'); /* NULs shown */
	strbuf_addch(&s->lines, '\n');
}

TEST(run_rankout_splits_labels_garbage_and_megabyte_lines)
{
	const char *dir = test_tmpdir();
	struct rankout ro;
	struct strbuf err = STRBUF_INIT, f = STRBUF_INIT;
	struct seen s = { STRBUF_INIT, 0 };
	CHECK(rankout_open(&ro, dir, 12, on_line, &s, &err) == 0);
	/* labels padded as srun pads them, split across reads */
	const char *a = " 3: step 1 loss 2.5\n11: hello\n 3: par";
	rankout_feed(&ro, 1, a, strlen(a), 1796090000.25, 1.0);
	rankout_feed(&ro, 1, "tial\n", 5, 1796090000.5, 1.5);
	rankout_feed(&ro, 2, "srun: error: n2: task 3: Killed\n", 32, 1796090001.0, 2.0);
	/* binary garbage with NULs and a label past the world: srun's own line */
	const char garbage[] = "99: \x01\x02\x00\xff junk\n";
	rankout_feed(&ro, 1, garbage, sizeof(garbage) - 1, 1796090002.0, 3.0);
	/* a 3 MiB line from rank 0: written whole, the callback sees its head */
	size_t big = 3u << 20;
	char *line = xmalloc(big + 5);
	memcpy(line, "0: ", 3);
	memset(line + 3, 'x', big);
	line[big + 3] = '\n';
	for (size_t off = 0; off < big + 4; off += 65536)
		rankout_feed(&ro, 1, line + off, big + 4 - off < 65536 ? big + 4 - off : 65536,
			     1796090003.0, 4.0);
	free(line);
	CHECK(ro.s[0].head.alloc <= 2 * ROUT_LINE_MAX + 1024); /* bounded, whatever the line */
	rankout_feed(&ro, 1, " 5: no newline at the end", 25, 1796090004.0, 5.0);
	rankout_finish(&ro);
	CHECK(ro.ranks[3].last_output == 1796090000.5);
	CHECK(ro.ranks[11].lines == 1);
	rankout_close(&ro);

	strbuf_addf(&f, "%s/rank-3.out", dir);
	struct strbuf got = STRBUF_INIT;
	CHECK(read_file_bounded(f.buf, &got, 1u << 20, NULL) == 0);
	/* a line is stamped when it is whole */
	CHECK_STR(got.buf, "2026-12-01T01:53:20.250Z step 1 loss 2.5\n"
			   "2026-12-01T01:53:20.500Z partial\n");
	strbuf_reset(&f);
	strbuf_reset(&got);
	strbuf_addf(&f, "%s/srun.log", dir);
	CHECK(read_file_bounded(f.buf, &got, 1u << 20, NULL) == 0);
	CHECK_CONTAINS(got.buf, "E srun: error: n2: task 3: Killed\n");
	CHECK_CONTAINS(got.buf, "99: \x01\x02");
	strbuf_reset(&f);
	strbuf_reset(&got);
	strbuf_addf(&f, "%s/rank-0.out", dir);
	CHECK(read_file_bounded(f.buf, &got, 4u << 20, NULL) == 0);
	CHECK_INT((long long)got.len, (long long)(25 + big + 1));
	strbuf_reset(&f);
	strbuf_reset(&got);
	strbuf_addf(&f, "%s/rank-5.out", dir);
	CHECK(read_file_bounded(f.buf, &got, 4096, NULL) == 0);
	CHECK_CONTAINS(got.buf, "Z no newline at the end\n");
	CHECK_CONTAINS(s.lines.buf, "3/1:15:step 1 loss 2.5\n");
	CHECK_CONTAINS(s.lines.buf, "-1/2:");
	CHECK_CONTAINS(s.lines.buf, "0/1:16381:xxxx");
	strbuf_release(&got);
	strbuf_release(&f);
	strbuf_release(&s.lines);
	strbuf_release(&err);
}

TEST(run_rankout_never_writes_through_a_planted_link)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT, victim = STRBUF_INIT, err = STRBUF_INIT, got = STRBUF_INIT;
	test_write(dir, "victim", "keep me\n");
	strbuf_addf(&victim, "%s/victim", dir);
	strbuf_addf(&p, "%s/rank-0.out", dir);
	CHECK(symlink(victim.buf, p.buf) == 0);
	struct rankout ro;
	CHECK(rankout_open(&ro, dir, 2, NULL, NULL, &err) == 0);
	rankout_feed(&ro, 1, "0: owned\n", 9, 1796090000.0, 1.0);
	rankout_finish(&ro);
	CHECK(ro.write_errors > 0);
	rankout_close(&ro);
	CHECK(read_file_bounded(victim.buf, &got, 4096, NULL) == 0);
	CHECK_STR(got.buf, "keep me\n");
	strbuf_release(&p);
	strbuf_release(&victim);
	strbuf_release(&err);
	strbuf_release(&got);
}
