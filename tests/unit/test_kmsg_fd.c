/*
 * test_kmsg_fd.c: the kernel log is read from the descriptor that was opened, never from a path
 * opened again: kmsg_read_fd() keeps reading what it was given when the path is replaced by a
 * link to another file, keeps the FIFO deadline even on a descriptor opened blocking; and
 * kernel_gather() under a root opens dev/kmsg once, inside the root, so a fixture whose dev/kmsg
 * is swapped with a link to outside while it runs never has the outside read.
 */
#include "../harness.h"
#include "../../src/checks/kernel.h"
#include "../../src/sys/fsroot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUTSIDE_XID "4,1234,5678901,-;NVRM: Xid (PCI:0000:1b:00): 79, SENTINEL_OUTSIDE\n"

static size_t xids(const struct kmsg_log *log)
{
	size_t n = 0;
	for (size_t i = 0; i < log->nr; i++)
		n += log->ev[i].kind == KMSG_XID;
	return n;
}

/* The fd is what is read: the path turned into a link to another log after the open does not
 * matter, and errors name the name given. */
TEST(kmsg_read_fd_reads_what_was_opened)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT, other = STRBUF_INIT, err = STRBUF_INIT;
	struct kmsg_opts o = { .year_hint = 1772366400.0 };
	struct kmsg_log log;
	test_write(dir, "kmsg", TEST_KMSG_CLEAN);
	test_write(dir, "outside", OUTSIDE_XID);
	strbuf_addf(&p, "%s/kmsg", dir);
	strbuf_addf(&other, "%s/outside", dir);
	int fd = open(p.buf, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_INT(unlink(p.buf), 0);
	CHECK_INT(symlink(other.buf, p.buf), 0);
	struct kmsg_read rd = { .deadline_ms = mono_ms() + 10000 };
	kmsg_log_init(&log, &o);
	CHECK_INT(kmsg_read_fd(fd, "NAME", &log, &rd, &err), 0);
	kmsg_log_finish(&log);
	close(fd);
	CHECK(rd.complete && !rd.device);
	CHECK_INT(rd.done, strlen(TEST_KMSG_CLEAN));
	CHECK_INT(rd.size, strlen(TEST_KMSG_CLEAN));
	CHECK_INT(xids(&log), 0);
	kmsg_log_release(&log);

	/* a directory: the error names the name given */
	fd = open(dir, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	CHECK(fd >= 0);
	kmsg_log_init(&log, &o);
	CHECK_INT(kmsg_read_fd(fd, "ROOT/dev/kmsg", &log, &rd, &err), -1);
	CHECK_CONTAINS(err.buf, "cannot read 'ROOT/dev/kmsg': ");
	CHECK_CONTAINS(err.buf, strerror(EISDIR));
	kmsg_log_release(&log);
	close(fd);
	strbuf_release(&p);
	strbuf_release(&other);
	strbuf_release(&err);
}

/* A FIFO on a descriptor opened blocking (O_RDWR: it has a writer, itself, that never writes):
 * what was written is read and the read stops at the deadline instead of waiting forever. */
TEST(kmsg_read_fd_fifo_stops_at_the_deadline_even_opened_blocking)
{
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	struct kmsg_opts o = { .year_hint = 1772366400.0 };
	struct kmsg_log log;
	strbuf_addf(&p, "%s/fifo", test_tmpdir());
	CHECK_INT(mkfifo(p.buf, 0600), 0);
	int fd = open(p.buf, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, OUTSIDE_XID, strlen(OUTSIDE_XID)), (ssize_t)strlen(OUTSIDE_XID));
	struct kmsg_read rd = { .deadline_ms = mono_ms() + 200 };
	kmsg_log_init(&log, &o);
	CHECK_INT(kmsg_read_fd(fd, p.buf, &log, &rd, &err), 0);
	kmsg_log_finish(&log);
	CHECK(!rd.complete);
	CHECK_INT(rd.done, strlen(OUTSIDE_XID));
	CHECK_INT(rd.size, 0);
	CHECK_INT(xids(&log), 1);
	kmsg_log_release(&log);
	close(fd);
	strbuf_release(&p);
	strbuf_release(&err);
}

/*
 * kernel_gather() under a root while another process swaps ROOT/dev/kmsg (a clean log) with a
 * link to a log outside the root (an Xid 79), atomically, as fast as it can. Resolving the path
 * and then opening it again (what the kernel check did) reads the outside log whenever the swap
 * lands between the two; one open inside the root sees either the clean log or a missing one
 * (the link, resolved inside the root, leads nowhere), never the outside. The race is not
 * deterministic: on the old code this failed within a few hundred runs; it cannot fail on code
 * that reads only what it opened inside the root.
 */
static void swapper(const char *a, const char *b)
{
	for (;;)
		syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2 /* RENAME_EXCHANGE */);
}

static void gather_while_swapped(enum fsroot_resolver resolver)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, kmsg = STRBUF_INIT, alt = STRBUF_INIT,
		      outside = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	strbuf_addf(&kmsg, "%s/dev/kmsg", root.buf);
	strbuf_addf(&alt, "%s/dev/alt", root.buf);
	strbuf_addf(&outside, "%s/outside/kmsg", dir);
	test_write(root.buf, "dev/kmsg", TEST_KMSG_CLEAN);
	test_write(dir, "outside/kmsg", OUTSIDE_XID);
	CHECK_INT(symlink(outside.buf, alt.buf), 0);
	if (syscall(SYS_renameat2, AT_FDCWD, kmsg.buf, AT_FDCWD, alt.buf, 2) < 0)
		SKIP("no renameat2(RENAME_EXCHANGE) here");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root.buf, &err), 0);
	fr.resolver = resolver;
	struct check_ctx ctx = { .root = &fr, .host = "h", .now = 1772366400.0,
				 .timeout_ms = 10000 };
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		swapper(kmsg.buf, alt.buf);
	size_t clean = 0, missing = 0, escaped = 0;
	for (int i = 0; i < 3000 && !escaped; i++) {
		struct kernel_input in;
		strbuf_reset(&err);
		int r = kernel_gather(&ctx, &in, &err);
		if (r == 0 && in.missing)
			missing++;
		else if (r == 0 && xids(&in.log) == 0)
			clean++;
		if (xids(&in.log) || in.read_bytes == strlen(OUTSIDE_XID) ||
		    strstr(err.buf, "outside"))
			escaped++;
		kernel_input_release(&in);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK_MSG(!escaped, "the log outside the root was read (%zu clean, %zu missing before)",
		  clean, missing);
	fsroot_release(&fr);
	strbuf_release(&root);
	strbuf_release(&kmsg);
	strbuf_release(&alt);
	strbuf_release(&outside);
	strbuf_release(&err);
}

TEST_TIMEOUT(kernel_gather_fsroot_swapped_kmsg_never_reads_outside, 120)
{
	gather_while_swapped(FSROOT_RESOLVER_AUTO);
}

TEST_TIMEOUT(kernel_gather_fsroot_swapped_kmsg_never_reads_outside_userspace, 120)
{
	gather_while_swapped(FSROOT_RESOLVER_USERSPACE);
}
