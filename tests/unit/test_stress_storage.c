/*
 * test_stress_storage.c: 'vigil stress storage' through the real binary, at small sizes: the
 * figures and verdict on this machine's disk (and tmpfs), data read back wrong, a stall, the
 * deadline, the refusals (a link, a file, a missing or unwritable directory, too little space),
 * planted links never followed, and nothing left behind in DIR, on SIGTERM too.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* a small run: 8 MiB in 4 files, 2 writers, 256 KiB blocks, 50 metadata files */
#define SMALL                                                                                      \
	"--size", "8M", "--file-size", "2M", "--writers", "2", "--block", "256K", "--meta-files",  \
		"50"

static const char *mkdir_in(const char *name)
{
	static char path[4][512];
	static int next;
	char *p = path[next++ % 4];
	snprintf(p, sizeof(path[0]), "%s/%s", test_tmpdir(), name);
	test_mkdir(test_tmpdir(), name);
	return p;
}

/* names in dir, sorted by readdir order, space separated ("" when empty) */
static void entries(const char *dir, struct strbuf *out)
{
	DIR *d = opendir(dir);
	CHECK_MSG(d != NULL, "cannot list %s", dir);
	for (struct dirent *e; d && (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			strbuf_addf(out, "%s%s", out->len ? " " : "", e->d_name);
	if (d)
		closedir(d);
}

static void check_empty(const char *dir)
{
	struct strbuf e = STRBUF_INIT;
	entries(dir, &e);
	CHECK_MSG(e.len == 0, "left behind in %s: %s", dir, e.buf);
	strbuf_release(&e);
}

/* The first finding of a check, by check name. */
static const struct json_value *finding_of(const struct json_value *v, const char *check)
{
	const struct json_value *checks = json_get(v, "checks");
	for (size_t i = 0; checks && i < checks->nr; i++)
		if (!strcmp(json_get_string(checks->items[i], "name"), check)) {
			const struct json_value *f = json_get(checks->items[i], "findings");
			return f && f->nr ? f->items[0] : NULL;
		}
	return NULL;
}

static double figure(const struct json_value *v, const char *key)
{
	double d = -1;
	CHECK_MSG(json_get_number(json_get(v, "figures"), key, &d), "no figures.%s", key);
	return d;
}

TEST(stress_storage_on_disk_writes_verifies_and_leaves_nothing)
{
	const char *dir = mkdir_in("disk");
	const char *args[] = { "stress", "storage", "--dir", dir, SMALL, "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exited && c.exit_code == 0, "exit %d: %s%s", c.exit_code, c.out.buf, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "healthy");
	CHECK(figure(v, "write_mib_s") > 0);
	CHECK(figure(v, "read_mib_s") > 0);
	CHECK(figure(v, "fsync_p50_ms") >= 0);
	CHECK(figure(v, "fsync_p99_ms") >= figure(v, "fsync_p50_ms"));
	CHECK(figure(v, "fsync_max_ms") >= figure(v, "fsync_p99_ms"));
	CHECK(figure(v, "meta_ops_s") > 0);
	CHECK_INT(figure(v, "verified_bytes"), 8 << 20);
	CHECK_INT(figure(v, "files"), 4);
	CHECK_INT(figure(v, "fsyncs"), 4);
	CHECK_INT(figure(v, "meta_ops"), 200);
	const struct json_value *fig = json_get(v, "figures");
	CHECK_MSG(json_get(fig, "direct") != NULL, "no figures.direct");
	const char *pc = json_get_string(fig, "page_cache");
	/* O_DIRECT, or the pages dropped; a TMPDIR on tmpfs (no O_DIRECT before Linux 6.6) keeps
	 * them, and says so */
	bool tmpfs = !strcmp(json_get_string(fig, "fs_type"), "tmpfs");
	CHECK_MSG(pc && (!strcmp(pc, "bypassed") || !strcmp(pc, tmpfs ? "not dropped" : "dropped")),
		  "page_cache %s", pc);
	CHECK_STR(json_get_string(finding_of(v, "storage-data"), "code"), "storage_verified");
	CHECK_STR(json_get_string(finding_of(v, "storage-stall"), "code"), "storage_no_stall");
	CHECK_STR(json_get_string(finding_of(v, "storage-meta"), "code"), "storage_meta");
	json_free(v);
	child_release(&c);
	check_empty(dir);

	/* the table a person reads */
	const char *plain[] = { "stress", "storage", "--dir", dir, SMALL, NULL };
	test_run_vigil(&c, plain, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "MiB/s");
	CHECK_CONTAINS(c.out.buf, "fsync p50");
	CHECK_CONTAINS(c.out.buf, "verdict: healthy");
	child_release(&c);
	check_empty(dir);
}

/* --buffered: no O_DIRECT; after fsync the pages are dropped on a disk (the read-back is the
 * disk's), while tmpfs keeps them (the read-back is memory's), and the JSON says which. */
TEST(stress_storage_buffered_says_whether_the_page_cache_was_dropped)
{
	const char *dir = mkdir_in("buffered");
	const char *args[] = { "stress", "storage",    "--dir",	 dir,
			       SMALL,	 "--buffered", "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *fig = json_get(v, "figures");
	CHECK(json_get(fig, "direct") && !json_get(fig, "direct")->boolean);
	CHECK_CONTAINS(json_get_string(fig, "direct_note"), "--buffered");
	const char *pc = json_get_string(fig, "page_cache");
	if (strcmp(json_get_string(fig, "fs_type"), "tmpfs"))
		CHECK_MSG(pc && strstr(pc, "dropped") && strcmp(pc, "not dropped"), "%s", pc);
	json_free(v);
	child_release(&c);
	check_empty(dir);

	struct stat st;
	if (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode) || access("/dev/shm", W_OK) < 0)
		SKIP("no writable /dev/shm: the tmpfs half was not run");
	const char *shm[] = { "stress", "storage",    "--dir",	"/dev/shm",
			      SMALL,	"--buffered", "--json", NULL };
	test_run_vigil(&c, shm, NULL);
	CHECK_INT(c.exit_code, 0);
	v = test_parse_json(&c);
	fig = json_get(v, "figures");
	if (!strcmp(json_get_string(fig, "fs_type"), "tmpfs")) {
		CHECK_STR(json_get_string(fig, "page_cache"), "not dropped");
		CHECK_CONTAINS(json_get_string(finding_of(v, "storage-run"), "message"),
			       "tmpfs keeps files in memory");
	}
	json_free(v);
	child_release(&c);
}

/* the checker catches a flipped byte whichever way it runs: by the reader between two reads,
 * or by a thread beside it (auto picks one by the CPUs there are; both are asked for here) */
TEST(stress_storage_data_read_back_wrong_fails_naming_file_and_offset)
{
	static const char *const modes[] = { "inline", "overlapped", "inline" };
	for (size_t m = 0; m < ARRAY_SIZE(modes); m++) {
		const char *dir = mkdir_in(m == 0 ? "corrupt-inline" : m == 1 ? "corrupt-overlapped"
								       : "corrupt-plain");
		/* overlapped with 1 MiB blocks: its two buffers in huge pages (ckpt_io.c), the
		 * others' 256 KiB blocks in plain ones */
		const char *args[] = { "stress",   "storage", "--dir",	  dir,	    SMALL,
				       "--inject", "corrupt", "--verify", modes[m], "--json",
				       "--block",  m == 1 ? "1M" : "256K",	  NULL };
		/* the third time the portable check, where the CPU has AVX2 too (ckpt_io.c) */
		const char *env[] = { "VIGIL_TEST_PLAIN_CHECK=1", NULL };
		struct child c;
		test_run_vigil(&c, args, m == 2 ? env : NULL);
		CHECK_MSG(c.exit_code == 1, "%s: exit %d: %s", modes[m], c.exit_code, c.out.buf);
		struct json_value *v = test_parse_json(&c);
		CHECK_STR(json_get_string(v, "verdict"), "unhealthy");
		CHECK_STR(json_get_string(json_get(v, "figures"), "verify"), modes[m]);
		const struct json_value *f = finding_of(v, "storage-data");
		CHECK_STR(json_get_string(f, "code"), "storage_mismatch");
		CHECK_STR(json_get_string(f, "device"), "shard-00000");
		CHECK_STR(json_get_string(f, "action"), "INSPECT_HARDWARE");
		double off = -1;
		CHECK(json_get_number(json_get(f, "details"), "offset", &off));
		CHECK_INT(off, 1 << 20); /* the sector of the byte flipped in the middle of 2 MiB */
		/* and each of the four sectors flipped: inside, the first body byte, the last
		 * byte, and one in the next 32 KiB fold of the pattern (ckpt_io.c) */
		CHECK_INT(figure(v, "mismatched_sectors"), 4);
		json_free(v);
		child_release(&c);
		check_empty(dir);
	}
}

/* On tmpfs the I/O buffers are in huge pages (ckpt_io.c): the flipped bytes are found there
 * too, by the reader and by the thread (two buffers) */
TEST(stress_storage_corrupt_found_on_tmpfs_with_huge_page_buffers)
{
	struct stat st;
	if (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode) || access("/dev/shm", W_OK) < 0)
		SKIP("no writable /dev/shm");
	static const char *const modes[] = { "inline", "overlapped" };
	for (size_t m = 0; m < ARRAY_SIZE(modes); m++) {
		const char *args[] = { "stress", "storage", "--dir", "/dev/shm", "--size", "4M",
				       "--file-size", "2M", "--writers", "2", "--block", "1M",
				       "--meta-files", "10", "--inject", "corrupt", "--verify",
				       modes[m], "--json", NULL };
		struct child c;
		test_run_vigil(&c, args, NULL);
		CHECK_MSG(c.exit_code == 1, "%s: exit %d: %s", modes[m], c.exit_code, c.out.buf);
		struct json_value *v = test_parse_json(&c);
		if (strcmp(json_get_string(json_get(v, "figures"), "fs_type"), "tmpfs")) {
			json_free(v);
			child_release(&c);
			SKIP("/dev/shm is not tmpfs here");
		}
		CHECK_STR(json_get_string(finding_of(v, "storage-data"), "code"), "storage_mismatch");
		CHECK_INT(figure(v, "mismatched_sectors"), 4);
		json_free(v);
		child_release(&c);
	}
}

/* A block that is not a whole number of 32 KiB folds (36 KiB: one fold and a short one): its
 * last fold has a key of its own (the sanitizer build caught the read past the keys), and
 * the flipped bytes are all found, one in that short fold */
TEST(stress_storage_block_with_a_short_last_fold)
{
	const char *dir = mkdir_in("short-fold");
	const char *args[] = { "stress",      "storage", "--dir",     dir,	   "--size",
			       "720K",	      "--file-size", "360K",  "--writers", "2",
			       "--block",     "36K",	 "--meta-files", "5",	   "--inject",
			       "corrupt",     "--json",	 NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.out.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(finding_of(v, "storage-data"), "code"), "storage_mismatch");
	CHECK_INT(figure(v, "mismatched_sectors"), 4);
	json_free(v);
	child_release(&c);
	check_empty(dir);
}

/* --verify none measures the bandwidth and says the data was not judged: never healthy */
TEST(stress_storage_verify_none_is_unknown_not_healthy)
{
	const char *dir = mkdir_in("verify-none");
	const char *args[] = { "stress",   "storage", "--dir",	dir, SMALL,
			       "--verify", "none",    "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.out.buf);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "unknown");
	CHECK_STR(json_get_string(json_get(v, "figures"), "verify"), "none");
	CHECK(figure(v, "read_mib_s") > 0);
	CHECK_INT(figure(v, "verified_bytes"), 0);
	const struct json_value *f = finding_of(v, "storage-data");
	CHECK_STR(json_get_string(f, "code"), "storage_unverified");
	CHECK_CONTAINS(json_get_string(f, "message"), "--verify none");
	json_free(v);
	child_release(&c);
	check_empty(dir);
}

TEST(stress_storage_a_stall_is_a_finding_naming_file_and_operation)
{
	const char *dir = mkdir_in("stall");
	const char *args[] = { "stress", "storage",    "--dir", dir,	  SMALL, "--inject",
			       "stall",	 "--stall-ms", "100",	"--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 1, "exit %d: %s", c.exit_code, c.out.buf);
	struct json_value *v = test_parse_json(&c);
	/* the injected one, among any a loaded machine adds (a slow create, say) */
	const struct json_value *checks = json_get(v, "checks"), *f = NULL;
	for (size_t i = 0; checks && i < checks->nr; i++) {
		const struct json_value *fs = json_get(checks->items[i], "findings");
		for (size_t k = 0; fs && k < fs->nr; k++)
			if (!strcmp(json_get_string(fs->items[k], "device"), "shard-00000.part") &&
			    strstr(json_get_string(fs->items[k], "message"), "fsync of"))
				f = fs->items[k];
	}
	CHECK_MSG(f != NULL, "no stall finding for the fsync of shard-00000.part:\n%s", c.out.buf);
	CHECK_STR(json_get_string(f, "code"), "storage_stall");
	CHECK_STR(json_get_string(f, "status"), "fail");
	CHECK_CONTAINS(json_get_string(f, "message"),
		       "fsync of shard-00000.part (writer 0) stalled");
	CHECK_CONTAINS(json_get_string(f, "message"), "--stall-ms");
	CHECK_STR(json_get_string(json_get(f, "details"), "op"), "fsync");
	CHECK(figure(v, "stalls") >= 1);
	/* the data was still verified: a stall is not a mismatch */
	CHECK_STR(json_get_string(finding_of(v, "storage-data"), "code"), "storage_verified");
	json_free(v);
	child_release(&c);
	check_empty(dir);
}

/* An fsync held past --duration: the worker is killed at the deadline, what did not run is
 * unknown (exit 3), never healthy, and the files still go. */
TEST(stress_storage_past_the_deadline_is_unknown_by_name)
{
	const char *dir = mkdir_in("deadline");
	const char *args[] = { "stress",   "storage", "--dir",	    dir,    SMALL,
			       "--inject", "stall",   "--stall-ms", "5000", "--duration",
			       "1",	   "--json",  NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.out.buf);
	struct json_value *v = test_parse_json(&c);
	const struct json_value *f = finding_of(v, "storage-run");
	CHECK_STR(json_get_string(f, "code"), "storage_deadline");
	CHECK_CONTAINS(json_get_string(f, "message"), "--duration 1 s");
	CHECK_STR(json_get_string(finding_of(v, "storage-data"), "status"), "unknown");
	json_free(v);
	child_release(&c);
	check_empty(dir);
}

TEST(stress_storage_refuses_a_link_a_file_a_missing_dir_and_too_little_space)
{
	const char *target = mkdir_in("target");
	const char *tmp = test_tmpdir();
	struct strbuf link = STRBUF_INIT, file = STRBUF_INIT, missing = STRBUF_INIT;
	strbuf_addf(&link, "%s/link", tmp);
	strbuf_addf(&file, "%s/afile", tmp);
	strbuf_addf(&missing, "%s/missing", tmp);
	CHECK_INT(symlink(target, link.buf), 0);
	test_write(tmp, "afile", "x");
	static const struct {
		const char *which, *code, *action, *says;
	} want[] = {
		{ "link", "storage_refused", "FIX_CONFIG", "symbolic link" },
		{ "file", "storage_refused", "FIX_CONFIG", "not a directory" },
		{ "missing", "storage_refused", "FIX_CONFIG", "No such file" },
		{ "space", "storage_no_space", "FREE_DISK", "refused before writing anything" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const char *d = i == 0	 ? link.buf
				: i == 1 ? file.buf
				: i == 2 ? missing.buf
					 : target;
		const char *args[] = { "stress",      "storage",
				       "--dir",	      d,
				       "--size",      i == 3 ? "1P" : "8M",
				       "--file-size", i == 3 ? "1T" : "2M",
				       "--json",      NULL };
		struct child c;
		test_run_vigil(&c, args, NULL);
		CHECK_MSG(c.exit_code == 3, "%s: exit %d: %s", want[i].which, c.exit_code,
			  c.err.buf);
		CHECK_CONTAINS(c.err.buf, want[i].says);
		struct json_value *v = test_parse_json(&c);
		CHECK_STR(json_get_string(v, "verdict"), "unknown");
		const struct json_value *f = finding_of(v, "storage-run");
		CHECK_STR(json_get_string(f, "code"), want[i].code);
		CHECK_STR(json_get_string(f, "action"), want[i].action);
		CHECK_CONTAINS(json_get_string(f, "message"), want[i].says);
		CHECK_MSG(json_get(v, "figures") != NULL, "%s: no figures object", want[i].which);
		json_free(v);
		child_release(&c);
	}
	check_empty(target); /* nothing through the link, nothing before the space check */
	strbuf_release(&link);
	strbuf_release(&file);
	strbuf_release(&missing);
}

/* Links planted in DIR, to a file and a directory outside it: never followed, never removed;
 * afterwards DIR holds exactly what was planted. */
TEST(stress_storage_never_follows_a_planted_link)
{
	const char *dir = mkdir_in("planted");
	const char *outside = mkdir_in("outside");
	const char *tmp = test_tmpdir();
	test_write(tmp, "outside/precious", "keep me");
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, t = STRBUF_INIT;
	strbuf_addf(&a, "%s/shard-00000", dir);
	strbuf_addf(&t, "%s/precious", outside);
	CHECK_INT(symlink(t.buf, a.buf), 0);
	strbuf_addf(&b, "%s/meta", dir);
	CHECK_INT(symlink(outside, b.buf), 0);
	const char *args[] = { "stress", "storage", "--dir", dir, SMALL, "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d: %s%s", c.exit_code, c.out.buf, c.err.buf);
	struct json_value *v = test_parse_json(&c);
	json_free(v);
	child_release(&c);
	struct strbuf got = STRBUF_INIT, data = STRBUF_INIT;
	entries(outside, &got);
	CHECK_STR(got.buf, "precious");
	CHECK(read_file_bounded(t.buf, &data, 1024, NULL) == 0);
	CHECK_STR(data.buf, "keep me");
	strbuf_reset(&got);
	entries(dir, &got);
	CHECK_MSG(!strcmp(got.buf, "shard-00000 meta") || !strcmp(got.buf, "meta shard-00000"),
		  "DIR holds: %s", got.buf);
	struct stat st;
	CHECK(lstat(a.buf, &st) == 0 && S_ISLNK(st.st_mode));
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&t);
	strbuf_release(&got);
	strbuf_release(&data);
}

/* Root writes through a mode of 0555; an immutable directory it cannot. */
TEST(stress_storage_refuses_an_unwritable_dir)
{
	const char *dir = mkdir_in("readonly");
	int fd = -1, flags = 0;
	bool immutable = false;
	if (geteuid() != 0) {
		CHECK_INT(chmod(dir, 0555), 0);
	} else {
		fd = open(dir, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
			SKIP("root, and no FS_IOC_GETFLAGS here: cannot make an unwritable dir");
		int f2 = flags | FS_IMMUTABLE_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &f2) < 0)
			SKIP("root, and this file system has no immutable flag");
		immutable = true;
	}
	const char *args[] = { "stress", "storage", "--dir", dir, SMALL, "--json", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	if (immutable)
		ioctl(fd, FS_IOC_SETFLAGS, &flags);
	else
		chmod(dir, 0755);
	if (fd >= 0)
		close(fd);
	CHECK_MSG(c.exit_code == 3, "exit %d: %s", c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "cannot create a directory in");
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(finding_of(v, "storage-run"), "code"), "storage_refused");
	json_free(v);
	child_release(&c);
	check_empty(dir);
}

TEST(stress_storage_usage_errors_exit_2)
{
	static const char *const bad[][10] = {
		{ "stress", "storage", NULL },
		{ "stress", "storage", "--dir", "/tmp", "--block", "5000", NULL },
		{ "stress", "storage", "--dir", "/tmp", "--writers", "0", NULL },
		{ "stress", "storage", "--dir", "/tmp", "--inject", "fire", NULL },
		{ "stress", "storage", "--dir", "/tmp", "--size", "lots", NULL },
		{ "stress", "storage", "--dir", "/tmp", "--size", "3M", "--block", "2M", NULL },
		{ "stress", "storage", "--dir", "/tmp", "--verify", "some", NULL },
	};
	const char *says[] = {
		"--dir DIR is required", "multiple of 4096",   "--writers",
		"stall or corrupt",	 "--size wants bytes", "multiples of --block",
		"--verify wants auto, inline, overlapped or none"
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct child c;
		test_run_vigil(&c, (const char *const *)bad[i], NULL);
		CHECK_MSG(c.exit_code == 2, "case %zu: exit %d", i, c.exit_code);
		CHECK_CONTAINS(c.err.buf, says[i]);
		CHECK_STR(c.out.buf, "");
		child_release(&c);
	}
}

/* SIGTERM in the middle (a worker held in its first fsync): the workers die, the files go,
 * exit 128 + 15. */
TEST(stress_storage_on_sigterm_removes_its_files)
{
	const char *dir = mkdir_in("sigterm");
	const char *argv[] = { test_vigil_bin(), "stress", "storage",	 "--dir", dir, SMALL,
			       "--inject",	 "stall",  "--stall-ms", "20000", NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 30000;
	struct strbuf err = STRBUF_INIT, got = STRBUF_INIT;
	CHECK(child_start(&c, &err) == 0);
	/* wait for the first shard to exist: the writers are in the middle of their work */
	for (int i = 0; i < 2000; i++) {
		strbuf_reset(&got);
		entries(dir, &got);
		if (got.len) {
			struct strbuf sub = STRBUF_INIT, in = STRBUF_INIT;
			strbuf_addf(&sub, "%s/%s", dir, got.buf);
			DIR *d = opendir(sub.buf);
			if (d)
				closedir(d);
			if (d)
				entries(sub.buf, &in);
			bool started = strstr(in.buf, "shard-") != NULL;
			strbuf_release(&sub);
			strbuf_release(&in);
			if (started)
				break;
		}
		usleep(5000);
	}
	CHECK_MSG(got.len, "vigil made nothing in %s", dir);
	CHECK_INT(kill(c.pid, SIGTERM), 0);
	while (!child_poll(&c, -1))
		;
	child_finish(&c);
	CHECK_MSG(c.exited && c.exit_code == 128 + SIGTERM, "exited %d code %d: %s", c.exited,
		  c.exit_code, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "interrupted by SIGTERM");
	check_empty(dir);
	child_release(&c);
	strbuf_release(&err);
	strbuf_release(&got);
}
