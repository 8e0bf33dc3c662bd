/*
 * test_exit_contract.c: the one exit-code contract of vigil(1), EXIT STATUS, through the binary
 * for every command (issue 23): 0 healthy or nothing wrong, 1 a fault found, 2 usage (the
 * command line cannot be acted on: a bad flag or value, a missing or extra argument, a bad
 * configuration), 3 could not tell (an input named on the command line is missing, unreadable
 * or not understood, or the result could not be written). One table; each row one run.
 */
#include "../harness.h"

#include <sys/stat.h>

/* "@T/x" in a row's argument is x under this test's temp dir; "@S/x" x under the source tree. */
static const char *expand(const char *a, struct strbuf *keep)
{
	strbuf_reset(keep);
	if (starts_with(a, "@T/"))
		strbuf_addf(keep, "%s/%s", test_tmpdir(), a + 3);
	else if (starts_with(a, "@S/"))
		test_src_path(keep, a + 3);
	else
		return a;
	return keep->buf;
}

struct exit_row {
	int want;
	const char *args[10];
};

static void run_rows(const struct exit_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct strbuf keep[10];
		const char *args[11];
		size_t k = 0;
		for (; rows[i].args[k]; k++) {
			strbuf_init(&keep[k], 0);
			args[k] = expand(rows[i].args[k], &keep[k]);
		}
		args[k] = NULL;
		struct child c;
		/* never the host's Slurm or NVML: a row that reached them would not be the row */
		const char *env[] = { "PATH=/nonexistent", NULL };
		test_run_vigil(&c, args, env);
		struct strbuf line = STRBUF_INIT;
		for (size_t j = 0; rows[i].args[j]; j++)
			strbuf_addf(&line, "%s%s", j ? " " : "", rows[i].args[j]);
		CHECK_MSG(c.exited && c.exit_code == rows[i].want,
			  "'vigil %s' exited %d, the contract says %d; stderr:\n%s", line.buf,
			  c.exit_code, rows[i].want, c.err.buf);
		/* what went wrong is said (stderr; diagnose logs names the file in its report) */
		if (rows[i].want >= 2)
			CHECK_MSG(c.err.len + c.out.len > 0, "'vigil %s' exited %d saying nothing",
				  line.buf, c.exit_code);
		strbuf_release(&line);
		child_release(&c);
		for (size_t j = 0; j < k; j++)
			strbuf_release(&keep[j]);
	}
}

/* (a) a flag no command knows: 2, for every command and subcommand. */
TEST(exit_contract_bad_flag_is_2_everywhere)
{
	static const struct exit_row rows[] = {
		{ 2, { "check", "--no-such-flag" } },
		{ 2, { "gather", "--no-such-flag", "@T/g" } },
		{ 2, { "agent", "--no-such-flag" } },
		{ 2, { "stress", "gpu", "--no-such-flag" } },
		{ 2, { "stress", "storage", "--no-such-flag" } },
		{ 2, { "net", "nccl", "--no-such-flag" } },
		{ 2, { "net", "pairs", "--no-such-flag" } },
		{ 2, { "net", "ib", "--no-such-flag" } },
		{ 2, { "run", "--no-such-flag", "--", "true" } },
		{ 2, { "fleet", "check", "--no-such-flag" } },
		{ 2, { "stacks", "--no-such-flag" } },
		{ 2, { "report", "--no-such-flag", "@T/run" } },
		{ 2, { "diagnose", "steps", "--no-such-flag", "@T/x" } },
		{ 2, { "diagnose", "stragglers", "--no-such-flag", "@T/x" } },
		{ 2, { "diagnose", "logs", "--no-such-flag", "@T/x" } },
		{ 2, { "diagnose", "hang", "--no-such-flag", "@T/x" } },
		{ 2, { "fabric", "ufm", "--no-such-flag", "@T/x" } },
		{ 2, { "fabric", "links", "--no-such-flag", "@T/x" } },
		{ 2, { "fabric", "burnin", "plan", "--no-such-flag", "@T/x" } },
		{ 2, { "fabric", "burnin", "run", "--no-such-flag", "@T/x" } },
		{ 2, { "list", "--no-such-flag" } },
		{ 2, { "no-such-command" } },
		{ 2, { "diagnose", "no-such-subcommand" } },
		{ 2, { "fabric", "no-such-subcommand" } },
	};
	run_rows(rows, ARRAY_SIZE(rows));
}

/* (a') a missing argument is usage too, never "could not tell". */
TEST(exit_contract_missing_argument_is_2)
{
	static const struct exit_row rows[] = {
		{ 2, { "report" } },
		{ 2, { "diagnose", "steps" } },
		{ 2, { "diagnose", "logs" } },
		{ 2, { "diagnose", "hang" } },
		{ 2, { "fabric", "links" } },
		{ 2, { "fabric", "ufm" } },
		{ 2, { "fabric", "burnin", "plan" } },
		{ 2, { "gather" } },
		{ 2, { "stacks" } },
		{ 2, { "run" } },
		{ 2, { "stress", "storage" } }, /* --dir is required */
		{ 2, { "check", "-c", "@T/no-such.conf" } }, /* configuration: the user's to fix */
		/* --root is an option's value, checked before anything is read (vigil(1)) */
		{ 2, { "check", "--root", "@T/no-such-root" } },
		{ 2, { "gather", "--root", "@T/no-such-root", "@T/g2" } },
	};
	run_rows(rows, ARRAY_SIZE(rows));
}

/* (b) an input named on the command line that is missing, unreadable or not understood: 3. */
TEST(exit_contract_unreadable_input_is_3)
{
	const char *t = test_tmpdir();
	test_mkdir(t, "empty-run");
	test_mkdir(t, "junk-run");
	test_write(t, "junk-run/journal.jsonl", "junk\n\x01\x02\n");
	test_write(t, "junk.txt", "these words are no fabric and no UFM event\n");
	test_mkdir(t, "dir");
	static const struct exit_row rows[] = {
		/* report: before this contract, 1 */
		{ 3, { "report", "@T/missing-run" } },
		{ 3, { "report", "@T/empty-run" } },
		{ 3, { "report", "@T/junk-run" } },
		{ 3, { "diagnose", "steps", "@T/missing.log" } },
		{ 3, { "diagnose", "stragglers", "@T/missing.log" } },
		{ 3, { "diagnose", "logs", "@T/missing.log" } },
		/* diagnose hang: before, 2 */
		{ 3, { "diagnose", "hang", "@T/missing-run" } },
		/* fabric: before, 2 on a file that cannot be read */
		{ 3, { "fabric", "links", "@T/missing.txt" } },
		{ 3, { "fabric", "links", "@T/dir" } },
		{ 3, { "fabric", "links", "@T/junk.txt" } },
		{ 3, { "fabric", "links", "@S/tests/data/fabric/links/iblinkinfo-healthy.txt",
		       "--expect", "@T/missing.txt" } },
		{ 3, { "fabric", "links", "@S/tests/data/fabric/links/iblinkinfo-healthy.txt",
		       "--expect", "@T/junk.txt" } },
		{ 3, { "fabric", "ufm", "@T/missing.log" } },
		{ 3, { "fabric", "ufm", "@T/junk.txt" } },
		{ 3, { "fabric", "burnin", "plan", "@T/missing.txt" } },
		{ 3, { "fabric", "burnin", "plan", "@T/junk.txt" } },
		{ 3, { "fabric", "burnin", "run", "@T/missing.json" } },
		{ 3, { "fabric", "burnin", "run", "@T/junk.txt" } },
		/* stress storage: a DIR it refuses, before writing anything */
		{ 3, { "stress", "storage", "--dir", "@T/missing-dir" } },
		{ 3, { "stress", "storage", "--dir", "@T/junk.txt" } },
	};
	run_rows(rows, ARRAY_SIZE(rows));
}

/* (c) healthy input, where it is cheap: 0. */
TEST(exit_contract_healthy_input_is_0)
{
	const char *t = test_tmpdir();
	test_mkdir(t, "young-run");
	test_write(t, "young-run/journal.jsonl", "{\"t\":5,\"kind\":\"run_started\",\"attempt\":0}\n");
	test_write(t, "clean.log", "step 1 loss 2.0\nall good\n");
	static const struct exit_row rows[] = {
		{ 0, { "report", "@T/young-run" } },
		{ 0, { "fabric", "links", "@S/tests/data/fabric/links/iblinkinfo-healthy.txt" } },
		{ 0, { "diagnose", "logs", "@T/clean.log" } },
		{ 0, { "check", "--only", "gpu", "--root", "@S/tests/scenarios/gpu-healthy-8xh200/root",
		       "--state-dir", "@T/state" } },
		{ 0, { "list" } },
		{ 0, { "version" } },
		{ 0, { "help" } },
	};
	run_rows(rows, ARRAY_SIZE(rows));
}

/*
 * (d) 'vigil stacks' on an attempt directory that is not there exited 0 (an empty report): an
 * input that cannot be read is 3. 'vigil fabric ufm close' follows 'vigil fabric ufm --state':
 * its state directory is set-up, so one missing, damaged or not a directory is refused with 2,
 * like a wrong ticket.
 */
TEST(exit_contract_stacks_and_ufm_close)
{
	const char *t = test_tmpdir();
	struct strbuf p = STRBUF_INIT;
	test_mkdir(t, "ufm-empty");
	test_mkdir(t, "ufm-damaged");
	test_write(t, "ufm-damaged/ufm-state.json", "{\"tickets\": [\x01 not json\n");
	test_write(t, "plain-file", "not a directory\n");
	/* the state directory must be the user's and closed to others, or it is refused */
	strbuf_addf(&p, "%s/ufm-empty", t);
	CHECK(chmod(p.buf, 0700) == 0);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/ufm-damaged", t);
	CHECK(chmod(p.buf, 0700) == 0);
	strbuf_release(&p);
	static const struct exit_row rows[] = {
		{ 3, { "stacks", "--attempt-dir", "@T/no-such-attempt", "--job", "5", "--step", "0",
		       "--uid", "1000" } },
		{ 3, { "stacks", "--attempt-dir", "@T/plain-file", "--job", "5", "--uid", "1000" } },
		{ 2, { "fabric", "ufm", "close" } },
		{ 2, { "fabric", "ufm", "close", "UFM-1a2b3c4d" } },
		{ 2, { "fabric", "ufm", "close", "not a ticket;", "--state", "@T/ufm-empty" } },
		{ 2, { "fabric", "ufm", "close", "UFM-1a2b3c4d", "--state", "@T/ufm-empty" } },
		{ 2, { "fabric", "ufm", "close", "UFM-1a2b3c4d", "--state", "@T/no-such-state" } },
		{ 2, { "fabric", "ufm", "close", "UFM-1a2b3c4d", "--state", "@T/plain-file" } },
		{ 2, { "fabric", "ufm", "close", "UFM-1a2b3c4d", "--state", "@T/ufm-damaged" } },
	};
	run_rows(rows, ARRAY_SIZE(rows));
}
