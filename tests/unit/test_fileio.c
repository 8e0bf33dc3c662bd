/*
 * test_fileio.c: the write side of fileio.h as root sees it. A write never follows a link
 * planted where its temporary file or target will be, never replaces a device or FIFO, leaves
 * no temporary file when it fails (a full disk, a failing fsync), syncs the file and its
 * directory; fixture files are created beneath a directory, exclusively. Through the binary:
 * 'check --prom' into a FIFO or onto a full disk, and the storage probe next to a planted link.
 */
#include "../harness.h"
#include "../../src/agent/agent.h"
#include "../../src/agent/history.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/prom.h"
#include "../../src/lib/strlist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static void path_in(struct strbuf *out, const char *dir, const char *name)
{
	strbuf_reset(out);
	strbuf_addf(out, "%s/%s", dir, name);
}

static char *slurp(const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	if (read_file_bounded(path, &sb, 1 << 20, NULL) != READ_OK) {
		strbuf_release(&sb);
		return xstrdup("(unreadable)");
	}
	return strbuf_detach(&sb, NULL);
}

#define CHECK_FILE(path, want)                                                                 \
	do {                                                                                   \
		char *got_ = slurp(path);                                                      \
		CHECK_STR(got_, want);                                                         \
		free(got_);                                                                    \
	} while (0)

/* Names in dir that hold ".tmp." (what a failed or hijacked write leaves behind). */
static size_t leftovers(const char *dir, struct strbuf *names)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;
	CHECK(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".tmp.")) {
			strbuf_addf(names, "%s ", de->d_name);
			n++;
		}
	closedir(d);
	return n;
}

TEST(write_file_never_follows_a_link_planted_at_the_old_temporary_name)
{
	const char *tmp = test_tmpdir();
	struct strbuf target = STRBUF_INIT, sentinel = STRBUF_INIT, trap = STRBUF_INIT,
		      err = STRBUF_INIT, prom = STRBUF_INIT;
	test_write(tmp, "sentinel", "KEEP\n");
	path_in(&sentinel, tmp, "sentinel");
	path_in(&target, tmp, "infiniband.state");
	/* PATH.tmp.<pid> was the whole secret: any local user could plant it */
	strbuf_addf(&trap, "%s.tmp.%ld", target.buf, (long)getpid());
	CHECK_INT(symlink(sentinel.buf, trap.buf), 0);
	CHECK_INT(write_file(target.buf, "new\n", 4, true, &err), 0);
	CHECK_FILE(sentinel.buf, "KEEP\n");
	CHECK_FILE(target.buf, "new\n");

	/* the textfile writer is the same writer */
	path_in(&target, tmp, "vigil.prom");
	strbuf_reset(&trap);
	strbuf_addf(&trap, "%s.tmp.%ld", target.buf, (long)getpid());
	CHECK_INT(symlink(sentinel.buf, trap.buf), 0);
	strbuf_addstr(&prom, "vigil_healthy 1\n");
	CHECK_INT(prom_write_atomic(target.buf, &prom, &err), 0);
	CHECK_FILE(sentinel.buf, "KEEP\n");
	CHECK_FILE(target.buf, "vigil_healthy 1\n");
	strbuf_release(&target);
	strbuf_release(&sentinel);
	strbuf_release(&trap);
	strbuf_release(&err);
	strbuf_release(&prom);
}

TEST(write_file_replaces_only_a_regular_file_or_nothing)
{
	const char *tmp = test_tmpdir();
	struct strbuf p = STRBUF_INIT, sentinel = STRBUF_INIT, err = STRBUF_INIT;
	struct stat st;
	test_write(tmp, "sentinel", "KEEP\n");
	path_in(&sentinel, tmp, "sentinel");

	path_in(&p, tmp, "fifo.prom");
	CHECK_INT(mkfifo(p.buf, 0644), 0);
	CHECK_INT(write_file(p.buf, "x\n", 2, true, &err), -1);
	CHECK_CONTAINS(err.buf, "it is a FIFO, not a regular file");
	CHECK_CONTAINS(err.buf, p.buf);
	CHECK(lstat(p.buf, &st) == 0 && S_ISFIFO(st.st_mode));

	path_in(&p, tmp, "link.prom");
	CHECK_INT(symlink(sentinel.buf, p.buf), 0);
	CHECK_INT(write_file(p.buf, "x\n", 2, true, &err), -1);
	CHECK_CONTAINS(err.buf, "it is a symbolic link, not a regular file");
	CHECK(lstat(p.buf, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK_FILE(sentinel.buf, "KEEP\n");
	/* in place too: never through the link */
	CHECK_INT(write_file(p.buf, "x\n", 2, false, &err), -1);
	CHECK_FILE(sentinel.buf, "KEEP\n");

	path_in(&p, tmp, "dir.prom");
	CHECK_INT(mkdir(p.buf, 0755), 0);
	CHECK_INT(write_file(p.buf, "x\n", 2, true, &err), -1);
	CHECK_CONTAINS(err.buf, "it is a directory");

	/* a device node: what --prom /dev/null used to replace (made here, not the real one) */
	path_in(&p, tmp, "null");
	if (mknod(p.buf, S_IFCHR | 0666, makedev(1, 3)) == 0) {
		CHECK_INT(write_file(p.buf, "x\n", 2, true, &err), -1);
		CHECK_CONTAINS(err.buf, "it is a character device, not a regular file");
		CHECK(lstat(p.buf, &st) == 0 && S_ISCHR(st.st_mode));
		CHECK_INT(write_file(p.buf, "x\n", 2, false, &err), -1);
		CHECK_CONTAINS(err.buf, "not a regular file");
	}
	strbuf_reset(&err);
	CHECK_INT(leftovers(tmp, &err), 0);
	strbuf_release(&p);
	strbuf_release(&sentinel);
	strbuf_release(&err);
}

TEST(write_file_on_a_full_disk_leaves_no_temporary_file)
{
	const char *tmp = test_tmpdir();
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT, names = STRBUF_INIT;
	struct rlimit old, small;
	size_t big = 64 << 10;
	char *data = xmalloc(big);
	memset(data, 'x', big);
	test_write(tmp, "agent.prom", "old\n");
	path_in(&p, tmp, "agent.prom");
	/* RLIMIT_FSIZE with SIGXFSZ ignored: write() fails with EFBIG part way, as ENOSPC would */
	signal(SIGXFSZ, SIG_IGN);
	CHECK_INT(getrlimit(RLIMIT_FSIZE, &old), 0);
	small = old;
	small.rlim_cur = 4096;
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &small), 0);
	int r = write_file(p.buf, data, big, true, &err);
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &old), 0);
	CHECK_INT(r, -1);
	CHECK_CONTAINS(err.buf, "cannot write '");
	CHECK_CONTAINS(err.buf, "agent.prom': File too large");
	CHECK_MSG(leftovers(tmp, &names) == 0, "left behind: %s", names.buf);
	CHECK_FILE(p.buf, "old\n");
	free(data);
	strbuf_release(&p);
	strbuf_release(&err);
	strbuf_release(&names);
}

static const char *fail_step;
static int fail_errno;
static unsigned fsyncs, dirsyncs;
static struct strbuf tmp_names = STRBUF_INIT;

static int hook(const char *step, int fd)
{
	if (!strcmp(step, "write")) {
		char self[64], name[4096];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(self, name, sizeof(name) - 1);
		if (n > 0) {
			name[n] = '\0';
			strbuf_addf(&tmp_names, "%s\n", name);
		}
	}
	fsyncs += !strcmp(step, "fsync");
	dirsyncs += !strcmp(step, "dirsync");
	return fail_step && !strcmp(step, fail_step) ? fail_errno : 0;
}

TEST(write_file_syncs_file_and_directory_and_cleans_up_at_every_failed_step)
{
	const char *tmp = test_tmpdir();
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT, names = STRBUF_INIT;
	test_write(tmp, "history.json", "old\n");
	path_in(&p, tmp, "history.json");
	fileio_set_fault_hook(hook);

	/* durable: the file and then its directory are synced, once each */
	CHECK_INT(write_file(p.buf, "v1\n", 3, true, &err), 0);
	CHECK_INT(fsyncs, 1);
	CHECK_INT(dirsyncs, 1);
	CHECK_FILE(p.buf, "v1\n");

	static const char *const steps[] = { "write", "fsync", "rename" };
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		fail_step = steps[i];
		fail_errno = i == 0 ? ENOSPC : EIO;
		CHECK_INT(write_file(p.buf, "v2\n", 3, true, &err), -1);
		CHECK_CONTAINS(err.buf, i == 0 ? "No space left on device"
					       : "Input/output error");
		CHECK_MSG(leftovers(tmp, &names) == 0, "after a failed %s: %s", steps[i],
			  names.buf);
		CHECK_FILE(p.buf, "v1\n");
	}
	/* the new content is in place, but the caller hears it may not survive a crash */
	fail_step = "dirsync";
	CHECK_INT(write_file(p.buf, "v3\n", 3, true, &err), -1);
	CHECK_CONTAINS(err.buf, "written, but its directory could not be synced");
	CHECK_FILE(p.buf, "v3\n");
	CHECK_INT(leftovers(tmp, &names), 0);

	/* temporary names: in the target's directory, 16 random hex digits, never the pid */
	fail_step = NULL;
	strbuf_reset(&tmp_names);
	CHECK_INT(write_file(p.buf, "v4\n", 3, true, &err), 0);
	CHECK_INT(write_file(p.buf, "v5\n", 3, true, &err), 0);
	fileio_set_fault_hook(NULL);
	struct strlist l = STRLIST_INIT;
	strlist_split(&l, tmp_names.buf, "\n");
	CHECK_INT(l.nr, 2);
	for (size_t i = 0; i < l.nr; i++) {
		const char *rest;
		CHECK_MSG(skip_prefix(l.items[i], p.buf, &rest) && skip_prefix(rest, ".tmp.", &rest),
			  "temporary file '%s'", l.items[i]);
		CHECK_MSG(strlen(rest) == 16 && strspn(rest, "0123456789abcdef") == 16,
			  "temporary file '%s'", l.items[i]);
	}
	CHECK(strcmp(l.items[0], l.items[1]));
	strlist_release(&l);
	strbuf_release(&p);
	strbuf_release(&err);
	strbuf_release(&names);
}

TEST(create_file_beneath_never_writes_through_a_planted_link)
{
	const char *tmp = test_tmpdir();
	struct strbuf d = STRBUF_INIT, p = STRBUF_INIT, out = STRBUF_INIT, err = STRBUF_INIT;
	struct stat st;
	test_mkdir(tmp, "fixture");
	test_mkdir(tmp, "outside");
	test_write(tmp, "sentinel", "KEEP\n");
	path_in(&d, tmp, "fixture");
	int dfd = open(d.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);

	/* a file planted where one will be created */
	path_in(&p, tmp, "sentinel");
	path_in(&out, d.buf, "hostname");
	CHECK_INT(symlink(p.buf, out.buf), 0);
	CHECK_INT(create_file_beneath(dfd, "hostname", "evil\n", 5, 0644, &err), -1);
	CHECK_CONTAINS(err.buf, "cannot create 'hostname': something is already there");
	CHECK_FILE(p.buf, "KEEP\n");

	/* a directory link planted on the way */
	path_in(&p, tmp, "outside");
	path_in(&out, d.buf, "etc");
	CHECK_INT(symlink(p.buf, out.buf), 0);
	CHECK_INT(create_file_beneath(dfd, "/etc/hostname", "evil\n", 5, 0644, &err), -1);
	CHECK_CONTAINS(err.buf, "'etc': a symbolic link is there");
	path_in(&out, p.buf, "hostname");
	CHECK(access(out.buf, F_OK) < 0);
	CHECK_INT(create_file_beneath(dfd, "a/../../x", "", 0, 0644, &err), -1);
	CHECK_CONTAINS(err.buf, "'..' leads out of the directory");

	/* new files and directories: made, with the mode asked for */
	CHECK_INT(create_file_beneath(dfd, "/dev/kmsg", "log\n", 4, 0600, &err), 0);
	path_in(&out, d.buf, "dev/kmsg");
	CHECK(stat(out.buf, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK_FILE(out.buf, "log\n");
	/* a directory made by someone else is not ours to fill */
	path_in(&out, d.buf, "proc");
	CHECK_INT(mkdir(out.buf, 0777), 0);
	if (geteuid() == 0 && chown(out.buf, 65534, 65534) == 0) {
		CHECK_INT(create_file_beneath(dfd, "/proc/meminfo", "x", 1, 0644, &err), -1);
		CHECK_CONTAINS(err.buf, "cannot use directory 'proc': it belongs to uid 65534");
	}
	close(dfd);
	strbuf_release(&d);
	strbuf_release(&p);
	strbuf_release(&out);
	strbuf_release(&err);
}

TEST(mkdir_p_wants_a_directory)
{
	const char *tmp = test_tmpdir();
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	test_write(tmp, "state", "a file\n");
	path_in(&p, tmp, "state");
	CHECK_INT(mkdir_p(p.buf, 0755, &err), -1);
	CHECK_CONTAINS(err.buf, "it is a regular file");
	path_in(&p, tmp, "a/b/c");
	CHECK_INT(mkdir_p(p.buf, 0755, &err), 0);
	strbuf_release(&p);
	strbuf_release(&err);
}

static struct strbuf synced = STRBUF_INIT;

static int record_syncs(const char *step, int fd)
{
	char self[64], name[4096];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(self, name, sizeof(name) - 1);
	if (n > 0 && (!strcmp(step, "fsync") || !strcmp(step, "dirsync"))) {
		name[n] = '\0';
		const char *base = strrchr(name, '/');
		strbuf_addf(&synced, "%s %s\n", step, base ? base + 1 : name);
	}
	return fail_step && !strcmp(step, fail_step) ? fail_errno : 0;
}

static int one_reboot_finding(void *arg, struct report *rep, struct strbuf *err)
{
	UNUSED(arg);
	UNUSED(err);
	report_init(rep, "vhost", wall_seconds());
	struct check_result *r = report_add(rep, "kernel");
	result_add(r, STATUS_FAIL, ACTION_REBOOT, "xid", "GPU 0000:9b:00.0", "Xid 79");
	result_finish(r);
	report_finish(rep);
	return 0;
}

/* The agent's reboot history (and its cache and .prom) go through the one durable writer. */
TEST(agent_history_is_written_durably_and_a_failed_write_leaves_nothing)
{
	const char *tmp = test_tmpdir();
	struct strbuf state = STRBUF_INIT, prom = STRBUF_INIT, hist = STRBUF_INIT,
		      names = STRBUF_INIT;
	test_mkdir(tmp, "state");
	path_in(&state, tmp, "state");
	path_in(&prom, tmp, "vigil.prom");
	path_in(&hist, state.buf, HISTORY_FILE);
	struct agent_settings s = { .interval_s = 30, .state_dir = state.buf, .host = "vhost",
				    .prom_path = prom.buf, .boot_id = "boot-1", .max_cycles = 1 };
	struct agent a;
	agent_init(&a, &s, &agent_real_ops, NULL);
	a.collect = one_reboot_finding;
	fail_step = NULL;
	fileio_set_fault_hook(record_syncs);
	agent_cycle(&a);
	CHECK_CONTAINS(synced.buf, "fsync " HISTORY_FILE ".tmp.");
	CHECK_CONTAINS(synced.buf, "dirsync state\n");
	CHECK_CONTAINS(synced.buf, "fsync vigil.prom.tmp.");
	char *before = slurp(hist.buf);
	CHECK_CONTAINS(before, "boot-1");

	/* a disk that fails its fsync: every file stays as it was, no temporary is left */
	fail_step = "fsync";
	fail_errno = EIO;
	s.boot_id = "boot-2";
	struct agent b;
	agent_init(&b, &s, &agent_real_ops, NULL);
	b.collect = one_reboot_finding;
	b.hist = a.hist; /* the history the first agent loaded */
	memset(&a.hist, 0, sizeof(a.hist));
	agent_cycle(&b);
	fileio_set_fault_hook(NULL);
	CHECK(!b.write_ok[AGENT_FILE_HISTORY]);
	CHECK_FILE(hist.buf, before);
	CHECK_MSG(leftovers(state.buf, &names) == 0, "left behind: %s", names.buf);
	CHECK_MSG(leftovers(tmp, &names) == 0, "left behind: %s", names.buf);
	free(before);
	agent_release(&a);
	agent_release(&b);
	strbuf_release(&state);
	strbuf_release(&prom);
	strbuf_release(&hist);
	strbuf_release(&names);
}

/* ---- through the binary ---- */

static void kernel_clean(struct strbuf *root)
{
	test_src_path(root, "tests/scenarios/kernel-clean/root");
}

TEST(check_prom_into_a_fifo_is_refused_and_the_verdict_says_why)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, p = STRBUF_INIT, state = STRBUF_INIT;
	struct stat st;
	kernel_clean(&root);
	path_in(&p, tmp, "vigil.prom");
	path_in(&state, tmp, "state");
	CHECK_INT(mkfifo(p.buf, 0644), 0);
	const char *args[] = { "check", "--root", root.buf, "--only", "kernel", "--state-dir",
			       state.buf, "--prom", p.buf, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 3, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	/* the checks' own results stand; the verdict printed says the file was not written */
	CHECK_CONTAINS(c.out.buf, "kernel log clean");
	CHECK_CONTAINS(c.out.buf, "verdict: unknown  (output: --prom: cannot write");
	CHECK_CONTAINS(c.err.buf, "vigil check: --prom: cannot write '");
	CHECK_CONTAINS(c.err.buf, "vigil.prom': it is a FIFO, not a regular file");
	CHECK(lstat(p.buf, &st) == 0 && S_ISFIFO(st.st_mode));
	child_release(&c);

	/* with --npd the same failure is 2, its "could not tell" */
	const char *npd[] = { "check", "--root", root.buf, "--only", "kernel", "--state-dir",
			      state.buf, "--npd", "--prom", p.buf, NULL };
	test_run_vigil(&c, npd, NULL);
	CHECK_INT(c.exit_code, 2);
	CHECK_CONTAINS(c.err.buf, "--prom: cannot write");
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&p);
	strbuf_release(&state);
}

TEST(check_on_a_full_state_disk_leaves_no_temporary_files)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, p = STRBUF_INIT, state = STRBUF_INIT,
		      names = STRBUF_INIT;
	struct rlimit old, none;
	test_src_path(&root, "tests/scenarios/ib-symbol-errors-rising/before");
	path_in(&state, tmp, "state");
	CHECK_INT(mkdir(state.buf, 0755), 0);
	path_in(&p, state.buf, "vigil.prom");
	const char *args[] = { "check", "--json", "--root", root.buf, "--only", "infiniband",
			       "--state-dir", state.buf, "--prom", p.buf, NULL };
	/* no byte fits: every state file and the .prom fail to write, as on a full disk */
	signal(SIGXFSZ, SIG_IGN);
	CHECK_INT(getrlimit(RLIMIT_FSIZE, &old), 0);
	none = old;
	none.rlim_cur = 0;
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &none), 0);
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &old), 0);
	CHECK_MSG(leftovers(state.buf, &names) == 0, "left behind: %s", names.buf);
	CHECK(access(p.buf, F_OK) < 0);
	CHECK_CONTAINS(c.err.buf, "--prom: cannot write '");
	CHECK_CONTAINS(c.err.buf, "File too large");
	CHECK_CONTAINS(c.out.buf, "cannot keep the counter reading: cannot write '");
	CHECK_INT(c.exit_code, 3);
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&p);
	strbuf_release(&state);
	strbuf_release(&names);
}

TEST(storage_probe_never_writes_through_a_planted_link)
{
	const char *root = test_tmpdir();
	struct strbuf sentinel = STRBUF_INIT, link = STRBUF_INIT, state = STRBUF_INIT,
		      names = STRBUF_INIT;
	test_write(root, "proc/mounts", "/dev/sda1 / ext4 rw 0 0\n");
	test_write(root, "fs.snapshot", "/ 1000 500 500 0 0\n");
	test_mkdir(root, "data");
	test_write(root, "sentinel", "KEEP\n");
	path_in(&sentinel, root, "sentinel");
	path_in(&link, root, "data/victim");
	path_in(&state, root, "state");
	CHECK_INT(symlink(sentinel.buf, link.buf), 0);
	/* the fixed-name seam: opened without following, creating or truncating */
	const char *args[] = { "check", "--json", "--only", "storage", "--root", root,
			       "--state-dir", state.buf, "-c", "storage.probe=/data", "-c",
			       "storage.probe-file=victim", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_FILE(sentinel.buf, "KEEP\n");
	CHECK_CONTAINS(c.out.buf, "probe of /data failed at open");
	child_release(&c);
	/* a fresh name: written, read back and removed, nothing else in the directory touched */
	const char *fresh[] = { "check", "--json", "--only", "storage", "--root", root,
				"--state-dir", state.buf, "-c", "storage.probe=/data", NULL };
	test_run_vigil(&c, fresh, NULL);
	CHECK_CONTAINS(c.out.buf, "written, synced and read back");
	struct strbuf data = STRBUF_INIT;
	path_in(&data, root, "data");
	DIR *d = opendir(data.buf);
	struct dirent *de;
	CHECK(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			strbuf_addf(&names, "%s ", de->d_name);
	closedir(d);
	CHECK_STR(names.buf, "victim ");
	strbuf_release(&data);
	CHECK_FILE(sentinel.buf, "KEEP\n");
	child_release(&c);
	strbuf_release(&sentinel);
	strbuf_release(&link);
	strbuf_release(&state);
	strbuf_release(&names);
}

static bool count_chunk(void *arg, const char *data, size_t len)
{
	struct strbuf *sb = arg;
	strbuf_add(sb, data, len);
	return sb->len < 100000; /* stops early past 100 kB */
}

/* The streaming reader of the journal, its report and vigil diagnose: a link, FIFO or
 * directory refused by name (never waited on), a missing file only when asked, the bound and
 * an early stop. */
TEST(read_file_stream_refuses_what_is_not_a_regular_file)
{
	const char *dir = test_tmpdir();
	struct strbuf p = STRBUF_INIT, l = STRBUF_INIT, f = STRBUF_INIT, sb = STRBUF_INIT,
		      err = STRBUF_INIT;
	char big[300000];
	memset(big, 'x', sizeof(big));
	test_write_bytes(dir, "big", big, sizeof(big));
	strbuf_addf(&p, "%s/big", dir);
	CHECK_INT(read_file_stream(p.buf, 0, 0, count_chunk, &sb, &err), READ_OK);
	CHECK(sb.len >= 100000 && sb.len < sizeof(big)); /* stopped by fn */
	strbuf_reset(&sb);
	CHECK_INT(read_file_stream(p.buf, 0, 65536, count_chunk, &sb, &err), -1);
	CHECK_CONTAINS(err.buf, "it is longer than 64 KiB");
	strbuf_addf(&l, "%s/link", dir);
	CHECK(symlink(p.buf, l.buf) == 0);
	CHECK_INT(read_file_stream(l.buf, READ_STREAM_NOFOLLOW, 0, count_chunk, &sb, &err), -1);
	CHECK_CONTAINS(err.buf, "it is a symbolic link");
	strbuf_addf(&f, "%s/fifo", dir);
	CHECK(mkfifo(f.buf, 0600) == 0);
	CHECK_INT(read_file_stream(f.buf, 0, 0, count_chunk, &sb, &err), -1);
	CHECK_CONTAINS(err.buf, "it is a FIFO, not a regular file");
	CHECK_INT(read_file_stream(dir, 0, 0, count_chunk, &sb, &err), -1);
	CHECK_CONTAINS(err.buf, "not a regular file");
	strbuf_addstr(&p, ".absent");
	CHECK_INT(read_file_stream(p.buf, READ_STREAM_MISSING_OK, 0, count_chunk, &sb, &err),
		  READ_MISSING);
	CHECK_INT(read_file_stream(p.buf, 0, 0, count_chunk, &sb, &err), -1);
	CHECK_CONTAINS(err.buf, "No such file");
	strbuf_release(&p);
	strbuf_release(&l);
	strbuf_release(&f);
	strbuf_release(&sb);
	strbuf_release(&err);
}

/* Under ulimit -f, a write past the limit fails (EFBIG) instead of SIGXFSZ killing vigil with no
 * verdict and a NAME.tmp.* left: the verdict says which write failed and why. */
TEST(check_prom_past_the_file_size_limit_fails_cleanly_with_a_verdict)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, p = STRBUF_INIT, state = STRBUF_INIT, err = STRBUF_INIT;
	char nvml_env[1024];
	kernel_clean(&root);
	path_in(&p, tmp, "vigil.prom");
	path_in(&state, tmp, "state");
	snprintf(nvml_env, sizeof(nvml_env), "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
	const char *argv[] = { "/bin/sh", "-c", "ulimit -f 0 && exec \"$0\" \"$@\"", test_vigil_bin(),
			       "check", "--root", root.buf, "--only", "kernel", "--state-dir",
			       state.buf, "--prom", p.buf, NULL };
	const char *env[] = { nvml_env, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 30000;
	CHECK_INT(child_run(&c, &err), 0);
	CHECK_MSG(c.exited && c.exit_code == 3, "exited %d code %d signal %d\n%s%s", c.exited,
		  c.exit_code, c.term_signal, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "kernel log clean");
	CHECK_CONTAINS(c.out.buf, "verdict: unknown  (output: --prom: cannot write");
	CHECK_CONTAINS(c.err.buf, "vigil.prom': File too large");
	DIR *d = opendir(tmp);
	for (struct dirent *de; d && (de = readdir(d));)
		CHECK_MSG(!strstr(de->d_name, ".tmp."), "left behind: %s", de->d_name);
	if (d)
		closedir(d);
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&p);
	strbuf_release(&state);
	strbuf_release(&err);
}

/* Standard output to a file past ulimit -f: nobody reading it gets the verdict, so stderr says why
 * and the exit is not healthy. */
TEST(check_stdout_past_the_file_size_limit_says_why)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, cmd = STRBUF_INIT, err = STRBUF_INIT;
	char nvml_env[1024];
	kernel_clean(&root);
	snprintf(nvml_env, sizeof(nvml_env), "VIGIL_NVML_LIBRARY=%s", test_fake_nvml());
	strbuf_addf(&cmd, "ulimit -f 0 && exec \"$0\" \"$@\" > '%s/out'", tmp);
	const char *argv[] = { "/bin/sh", "-c", cmd.buf, test_vigil_bin(), "check", "--root",
			       root.buf, "--only", "kernel", NULL };
	const char *env[] = { nvml_env, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.env_add = env;
	c.timeout_ms = 30000;
	CHECK_INT(child_run(&c, &err), 0);
	CHECK_MSG(c.exited && c.exit_code == 3, "exited %d code %d signal %d: %s", c.exited,
		  c.exit_code, c.term_signal, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "vigil check: cannot write the report to standard output: File "
				  "too large (verdict: ");
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&cmd);
	strbuf_release(&err);
}

/* A signal handler's fileio_remove_temporaries() removes the temporary being written, never the
 * file it replaces, and forgets it once renamed (the in-process half of the signal tests). */
static int remove_at_fsync(const char *step, int fd)
{
	UNUSED(fd);
	if (!strcmp(step, "fsync"))
		fileio_remove_temporaries(); /* what the handler does at this moment */
	return 0;
}

TEST(fileio_remove_temporaries_removes_only_the_temporary)
{
	const char *tmp = test_tmpdir();
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	path_in(&p, tmp, "kept");
	CHECK_INT(write_file_atomic(p.buf, "old\n", 4, 0644, &err), 0);
	fileio_set_fault_hook(remove_at_fsync);
	/* the temporary is gone at the fsync, so the rename fails: the kept file is the old one */
	CHECK(write_file_atomic(p.buf, "new\n", 4, 0644, &err) < 0);
	fileio_set_fault_hook(NULL);
	char *s = slurp(p.buf);
	CHECK_STR(s, "old\n");
	free(s);
	DIR *d = opendir(tmp);
	for (struct dirent *de; d && (de = readdir(d));)
		CHECK_MSG(!strstr(de->d_name, ".tmp."), "left behind: %s", de->d_name);
	if (d)
		closedir(d);
	/* after a write that succeeded, nothing is registered: the kept file stays */
	CHECK_INT(write_file_atomic(p.buf, "new\n", 4, 0644, &err), 0);
	fileio_remove_temporaries();
	s = slurp(p.buf);
	CHECK_STR(s, "new\n");
	free(s);
	strbuf_release(&p);
	strbuf_release(&err);
}
