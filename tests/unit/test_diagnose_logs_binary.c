/*
 * test_diagnose_logs_binary.c: `vigil diagnose logs` on a file that is not text (issue 23). A
 * file of NULs or random bytes has no known line because it has no lines at all: that is "could
 * not tell" (exit 3, the file named), never "no known error lines" (exit 0, as the old code
 * said). A text file with no known line stays 0, and a log whose tail a crash filled with NULs
 * keeps the errors its lines hold.
 */
#include "../harness.h"

static int run_logs(struct child *c, const char *file)
{
	const char *argv[] = { "diagnose", "logs", file, NULL };
	test_run_vigil(c, argv, NULL);
	CHECK_MSG(c->exited, "vigil diagnose logs did not exit: %s", c->err.buf);
	return c->exit_code;
}

TEST(diag_logs_a_file_that_is_not_text_is_could_not_tell)
{
	const char *t = test_tmpdir();
	struct strbuf p = STRBUF_INIT;
	struct child c;
	static char nuls[65536];
	test_write_bytes(t, "nuls.log", nuls, sizeof(nuls));
	/* random bytes (a fixed generator, so a failure repeats) */
	static unsigned char rnd[20000];
	uint32_t x = 2463534242u;
	for (size_t i = 0; i < sizeof(rnd); i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		rnd[i] = (unsigned char)x;
	}
	test_write_bytes(t, "core.rank3", rnd, sizeof(rnd));

	strbuf_addf(&p, "%s/nuls.log", t);
	CHECK_INT(run_logs(&c, p.buf), 3);
	CHECK_CONTAINS(c.out.buf, "nuls.log' is not text: 65536 of its 65536 bytes are NUL");
	CHECK_NOT_CONTAINS(c.out.buf, "no known error lines in 1 file");
	child_release(&c);

	strbuf_reset(&p);
	strbuf_addf(&p, "%s/core.rank3", t);
	CHECK_INT(run_logs(&c, p.buf), 3);
	CHECK_CONTAINS(c.out.buf, "core.rank3' is not text");
	child_release(&c);

	/* text with no known line: nothing wrong found, 0 as before; ANSI colours and a progress
	 * bar's carriage returns are text */
	test_write(t, "clean.log",
		   "\x1b[32mINFO\x1b[0m step 100 loss 2.31\n"
		   "epoch 1:  42%|####      | 420/1000 [01:10<01:37]\r"
		   "epoch 1: 100%|##########| 1000/1000 [02:47<00:00]\n");
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/clean.log", t);
	CHECK_INT(run_logs(&c, p.buf), 0);
	CHECK_CONTAINS(c.out.buf, "no known error lines in 1 file");
	child_release(&c);

	/* a crash left NULs after the last line (ext4 after a power loss): the error is kept */
	static const char head[] =
		"[rank3]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
		"GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n";
	static char crashed[sizeof(head) - 1 + 8192];
	memcpy(crashed, head, sizeof(head) - 1);
	test_write_bytes(t, "rank3.log", crashed, sizeof(crashed));
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/rank3.log", t);
	CHECK_INT(run_logs(&c, p.buf), 1);
	CHECK_NOT_CONTAINS(c.out.buf, "is not text");
	child_release(&c);
	strbuf_release(&p);
}
