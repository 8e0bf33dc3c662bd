/*
 * test_storage.c: the 'storage' check: /proc/mounts and fs.snapshot parsing, evaluate() rules,
 * gather() and probes on fixture trees, a probe that blocks, and the snapshot writer.
 */
#include "../harness.h"
#include "../../src/checks/storage.h"
#include "../../src/sys/fsroot.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#define GiB (1024ull * 1024 * 1024)

static void opts(struct storage_options *opt, const char *const *sets)
{
	struct config cfg;
	struct strbuf err = STRBUF_INIT;
	config_init(&cfg, "h");
	for (size_t i = 0; sets && sets[i]; i++)
		CHECK_INT(config_set(&cfg, sets[i], &err), 0);
	CHECK_MSG(storage_options_load(&cfg, opt, &err) == 0, "options: %s", err.buf);
	config_release(&cfg);
	strbuf_release(&err);
}

static void add_fs(struct storage_readings *r, const char *path, uint64_t total, uint64_t avail,
		   uint64_t itotal, uint64_t ifree)
{
	ALLOC_GROW(r->fs, r->nr_fs + 1, r->alloc_fs);
	struct storage_fs *fs = &r->fs[r->nr_fs++];
	memset(fs, 0, sizeof(*fs));
	fs->path = xstrdup(path);
	fs->n.ok = true;
	fs->n.total = total;
	fs->n.free = avail;
	fs->n.avail = avail;
	fs->n.itotal = itotal;
	fs->n.ifree = ifree;
}

static void eval(const struct storage_readings *r, const char *const *sets,
		 struct check_result *res)
{
	struct storage_options opt;
	opts(&opt, sets);
	check_result_init(res, "storage");
	storage_evaluate(r, &opt, res);
	result_finish(res);
	storage_options_release(&opt);
}

TEST(storage_mounts_escapes_and_snapshot_lines)
{
	struct storage_readings r;
	memset(&r, 0, sizeof(r));
	storage_parse_mounts(&r, "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
				 "proc /proc proc rw 0 0\n"
				 "10.0.0.5:/export /data nfs4 rw 0 0\n"
				 "/dev/md0 /data/scratch\\040space xfs rw 0 0\n");
	CHECK_INT(r.nr_mounts, 4);
	CHECK_STR(r.mounts[3].target, "/data/scratch space");
	CHECK_STR(r.mounts[2].fstype, "nfs4");
	CHECK_STR(storage_mount_of(&r, "/data/ckpt/run1"), "/data");
	CHECK_STR(storage_mount_of(&r, "/data/scratch space/x"), "/data/scratch space");
	CHECK_STR(storage_mount_of(&r, "/database"), "/");
	CHECK_STR(storage_mount_of(&r, "/data"), "/data");
	storage_readings_release(&r);
	/* no mounts known: the path stands for itself */
	CHECK_STR(storage_mount_of(&r, "/x/y"), "/x/y");

	char s[] = "a\\040b\\011c\\134d\\9";
	storage_unescape(s);
	CHECK_STR(s, "a b\tc\\d\\9");

	struct fs_numbers n;
	const char *snap = "# comment\n/ 100 40 30 1000 900\n/data\\040x 10 1 1 0 0\n/bad 1 2\n";
	CHECK(storage_snapshot_lookup(snap, "/", &n));
	CHECK(n.ok && n.total == 100 && n.free == 40 && n.avail == 30 && n.itotal == 1000 &&
	      n.ifree == 900);
	CHECK(storage_snapshot_lookup(snap, "/data x", &n));
	CHECK(n.ok && n.total == 10);
	CHECK(storage_snapshot_lookup(snap, "/bad", &n));
	CHECK(!n.ok);
	CHECK(!storage_snapshot_lookup(snap, "/nope", &n));
}

TEST(storage_usage_and_inode_thresholds)
{
	struct storage_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	add_fs(&r, "/", 100 * GiB, 50 * GiB, 1000, 900);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_OK);
	CHECK_INT(res.nr, 1);
	CHECK_CONTAINS(res.findings[0].message, "1 mount below 90 % full: /");
	check_result_release(&res);

	add_fs(&r, "/data", 1000 * GiB, 40 * GiB, 1000, 900); /* 96 % */
	add_fs(&r, "/scratch", 100 * GiB, 8 * GiB, 0, 0);     /* 92 %, no inode counts */
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "usage", "/data");
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_FREE_DISK);
	CHECK_CONTAINS(f->message, "/data is 96.0 % full (40 GiB free of 1000 GiB)");
	f = result_find(&res, "usage", "/scratch");
	CHECK(f && f->status == STATUS_WARN && f->action == ACTION_FREE_DISK);
	for (size_t i = 0; i < res.nr; i++)
		CHECK(strcmp(res.findings[i].device, "/") || strcmp(res.findings[i].code, "usage"));
	CHECK(!result_find(&res, "inodes", NULL));
	f = result_find(&res, "summary", NULL);
	CHECK(f);
	CHECK_CONTAINS(f->message, "1 of 3 mounts without problems: /");
	check_result_release(&res);

	/* a higher threshold moves both lines */
	const char *t99[] = { "storage.usage-threshold=99%", NULL };
	eval(&r, t99, &res);
	CHECK_INT(res.status, STATUS_WARN);
	f = result_find(&res, "usage", "/data");
	CHECK(f && f->status == STATUS_WARN);
	CHECK(!result_find(&res, "usage", "/scratch"));
	check_result_release(&res);

	/* inodes run out before space does */
	storage_readings_release(&r);
	add_fs(&r, "/", 100 * GiB, 50 * GiB, 1000, 10);
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	f = result_find(&res, "inodes", "/");
	CHECK(f && f->action == ACTION_FREE_DISK);
	CHECK_CONTAINS(f->message, "99.0 % of its inodes");
	check_result_release(&res);
	storage_readings_release(&r);
}

TEST(storage_required_mounts_and_unreadable_numbers)
{
	struct storage_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	storage_parse_mounts(&r, "/dev/sda1 / ext4 rw 0 0\n10.0.0.5:/e /data nfs rw 0 0\n");
	r.mounts_read = true;
	add_fs(&r, "/", 100 * GiB, 50 * GiB, 0, 0);
	const char *req[] = { "storage.require=/data/", "storage.require=/scratch", NULL };
	eval(&r, req, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "mount_missing", "/scratch");
	CHECK(f && f->action == ACTION_INVESTIGATE);
	CHECK_STR(f->message, "mount /scratch missing");
	CHECK(!result_find(&res, "mount_missing", "/data"));
	check_result_release(&res);

	/* no /proc/mounts: cannot tell, which is not healthy */
	r.mounts_read = false;
	eval(&r, req, &res);
	CHECK_INT(res.status, STATUS_UNKNOWN);
	check_result_release(&res);
	r.mounts_read = true;

	/* a statfs that hung fails and names the mount; the ones after it are unknown */
	add_fs(&r, "/data", 0, 0, 0, 0);
	add_fs(&r, "/home", 0, 0, 0, 0);
	add_fs(&r, "/gone", 0, 0, 0, 0);
	add_fs(&r, "/snap", 0, 0, 0, 0);
	memset(&r.fs[1].n, 0, sizeof(r.fs[1].n));
	r.fs[1].n.timed_out = true;
	memset(&r.fs[2].n, 0, sizeof(r.fs[2].n));
	r.fs[2].n.not_reached = true;
	memset(&r.fs[3].n, 0, sizeof(r.fs[3].n));
	r.fs[3].n.missing = true;
	memset(&r.fs[4].n, 0, sizeof(r.fs[4].n));
	r.fs[4].n.not_in_snapshot = true;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	f = result_find(&res, "statfs", "/data");
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_INSPECT_HARDWARE);
	CHECK_CONTAINS(f->message, "timed out after 5 s: the filesystem hangs");
	f = result_find(&res, "statfs", "/home");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "/data hung first");
	f = result_find(&res, "statfs", "/gone");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "does not exist");
	f = result_find(&res, "statfs", "/snap");
	CHECK(f && f->status == STATUS_UNKNOWN);
	CHECK_CONTAINS(f->message, "fs.snapshot");
	check_result_release(&res);
	storage_readings_release(&r);
}

TEST(storage_probe_outcomes)
{
	struct storage_readings r;
	struct check_result res;
	memset(&r, 0, sizeof(r));
	add_fs(&r, "/", 100 * GiB, 50 * GiB, 0, 0);
	struct storage_probe p[5];
	memset(p, 0, sizeof(p));
	for (int i = 0; i < 5; i++)
		p[i].outcome = (enum probe_outcome)i;
	p[0].path = "/ok";
	p[0].bytes = 1 << 20;
	p[0].write_ms = 1;
	p[0].fsync_ms = 10;
	p[0].read_ms = 2;
	p[1].path = "/hung";
	p[1].timeout_ms = 5000;
	p[2].path = "/full";
	strlcpy_v(p[2].step, "write", sizeof(p[2].step));
	p[2].err_no = ENOSPC;
	p[3].path = "/liar";
	p[3].bytes = 4096;
	p[4].path = "/late";
	strlcpy_v(p[4].error, "not run: the check's time ran out", sizeof(p[4].error));
	r.probes = p;
	r.nr_probes = 5;
	eval(&r, NULL, &res);
	CHECK_INT(res.status, STATUS_FAIL);
	const struct finding *f = result_find(&res, "probe", "/ok");
	CHECK(f && f->status == STATUS_OK);
	CHECK_CONTAINS(f->message, "1.0 MiB written, synced and read back in 13 ms");
	f = result_find(&res, "probe", "/hung");
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_INSPECT_HARDWARE);
	CHECK_STR(f->message, "probe of /hung timed out after 5 s: the filesystem hangs");
	f = result_find(&res, "probe", "/full");
	CHECK(f && f->status == STATUS_FAIL && f->action == ACTION_FREE_DISK);
	CHECK_CONTAINS(f->message, "failed at write: No space left on device");
	f = result_find(&res, "probe", "/liar");
	CHECK(f && f->status == STATUS_FAIL);
	CHECK_CONTAINS(f->message, "read back other data");
	f = result_find(&res, "probe", "/late");
	CHECK(f && f->status == STATUS_UNKNOWN);
	check_result_release(&res);
	r.probes = NULL;
	r.nr_probes = 0;
	storage_readings_release(&r);
}

TEST(storage_bad_config_is_an_error)
{
	const char *bad[] = { "storage.usage-threshold=lots", "storage.usage-threshold=150",
			      "storage.mount=data",	    "storage.probe=relative/dir",
			      "storage.probe-timeout=0",    "storage.probe-file=a/b",
			      "storage.probe-size=0",	    "storage.require=x" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct config cfg;
		struct storage_options opt;
		struct strbuf err = STRBUF_INIT;
		config_init(&cfg, "h");
		CHECK_INT(config_set(&cfg, bad[i], &err), 0);
		CHECK_MSG(storage_options_load(&cfg, &opt, &err) < 0, "accepted '%s'", bad[i]);
		CHECK(err.len > 0);
		storage_options_release(&opt);
		config_release(&cfg);
		strbuf_release(&err);
	}
}

TEST(storage_gather_snapshot_and_real_probe)
{
	const char *root = test_tmpdir();
	struct strbuf err = STRBUF_INIT;
	test_write(root, "proc/mounts",
		   "/dev/sda1 / ext4 rw 0 0\n10.0.0.5:/e /data nfs rw 0 0\nproc /proc proc rw 0 0\n");
	test_write(root, "fs.snapshot",
		   "/ 107374182400 53687091200 53687091200 6553600 6000000\n"
		   "/data 1099511627776 43980465111 43980465111 0 0\n");
	test_mkdir(root, "data/ckpt");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct storage_options opt;
	const char *sets[] = { "storage.probe=/data/ckpt", "storage.require=/data",
			       "storage.probe=/data/missing", NULL };
	opts(&opt, sets);
	struct storage_readings r;
	memset(&r, 0, sizeof(r));
	struct check_ctx ctx = { .root = &fr, .host = "h" };
	CHECK_INT(storage_gather(&ctx, &opt, &r, &err), 0);
	CHECK(r.mounts_read && r.from_snapshot);
	CHECK_INT(r.nr_fs, 2);
	CHECK_STR(r.fs[0].path, "/");
	CHECK_STR(r.fs[1].path, "/data");
	CHECK(r.fs[1].n.ok && r.fs[1].n.avail == 43980465111ull);
	CHECK_INT(r.nr_probes, 2);
	CHECK_MSG(r.probes[0].outcome == PROBE_OK, "probe outcome %d step %s errno %d %s",
		  r.probes[0].outcome, r.probes[0].step, r.probes[0].err_no, r.probes[0].error);
	CHECK_INT(r.probes[0].bytes, 1 << 20);
	CHECK_INT(r.probes[1].outcome, PROBE_ERROR);
	CHECK_INT(r.probes[1].err_no, ENOENT);
	/* the probe cleans up after itself */
	struct strlist left = STRLIST_INIT;
	CHECK_INT(fsroot_list(&fr, "/data/ckpt", &left, &err), 0);
	CHECK_INT(left.nr, 0);
	strlist_release(&left);

	struct check_result res;
	check_result_init(&res, "storage");
	storage_evaluate(&r, &opt, &res);
	result_finish(&res);
	CHECK_INT(res.status, STATUS_FAIL);
	CHECK(result_find(&res, "usage", "/data")); /* 96 % */
	CHECK(result_find(&res, "probe", "/data/ckpt")->status == STATUS_OK);
	CHECK(result_find(&res, "probe", "/data/missing")->action == ACTION_INVESTIGATE);
	check_result_release(&res);
	storage_readings_release(&r);
	storage_options_release(&opt);

	/* without fs.snapshot the numbers come from statvfs under the root */
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/fs.snapshot", root);
	CHECK_INT(unlink(p.buf), 0);
	const char *plain[] = { "storage.mount=/data", "storage.mount=/nowhere", NULL };
	opts(&opt, plain);
	memset(&r, 0, sizeof(r));
	CHECK_INT(storage_gather(&ctx, &opt, &r, &err), 0);
	CHECK(!r.from_snapshot);
	CHECK_INT(r.nr_fs, 2);
	CHECK(r.fs[0].n.ok && r.fs[0].n.total > 0);
	CHECK(r.fs[1].n.missing);
	storage_readings_release(&r);
	storage_options_release(&opt);
	fsroot_release(&fr);
	strbuf_release(&p);
	strbuf_release(&err);
}

TEST(storage_snapshot_write_round_trip)
{
	const char *root = test_tmpdir();
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	test_write(root, "proc/mounts",
		   "/dev/sda1 / ext4 rw 0 0\nproc /proc proc rw 0 0\n"
		   "/dev/sdb1 /mnt/with\\040space xfs rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
	test_mkdir(root, "mnt/with space");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root, NULL), 0);
	struct config cfg;
	config_init(&cfg, "h");
	CHECK_INT(config_set(&cfg, "storage.mount=/mnt", &err), 0);
	CHECK_MSG(storage_snapshot_write(&fr, &cfg, &out, &err) == 0, "%s", err.buf);
	CHECK_CONTAINS(out.buf, "\n/ ");
	CHECK_CONTAINS(out.buf, "\n/mnt/with\\040space ");
	CHECK_CONTAINS(out.buf, "\n/mnt ");
	CHECK_NOT_CONTAINS(out.buf, "/proc");
	CHECK_NOT_CONTAINS(out.buf, "cgroup");
	struct fs_numbers n;
	CHECK(storage_snapshot_lookup(out.buf, "/mnt/with space", &n));
	CHECK(n.ok && n.total > 0);

	/* and the check reads it back under the same root */
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/fs.snapshot", root);
	struct strbuf werr = STRBUF_INIT;
	CHECK_INT(write_file(p.buf, out.buf, out.len, true, &werr), 0);
	struct check_ctx ctx = { .root = &fr, .cfg = &cfg, .host = "h" };
	struct check_result res;
	check_result_init(&res, "storage");
	CHECK_INT(check_storage_run(&ctx, &res, &err), 0);
	result_finish(&res);
	const struct finding *f = result_find(&res, "summary", NULL);
	CHECK_MSG(f, "no summary: first finding '%s'", res.nr ? res.findings[0].message : "");
	CHECK(!result_find(&res, "statfs", NULL));
	check_result_release(&res);
	strbuf_release(&p);
	strbuf_release(&werr);

	/* no /proc/mounts: an error, not an empty snapshot */
	strbuf_reset(&out);
	strbuf_reset(&err);
	struct strbuf empty = STRBUF_INIT;
	strbuf_addf(&empty, "%s/empty", root);
	test_mkdir(root, "empty");
	struct fsroot efr;
	CHECK_INT(fsroot_init(&efr, empty.buf, NULL), 0);
	CHECK_INT(storage_snapshot_write(&efr, &cfg, &out, &err), -1);
	fsroot_release(&efr);
	fsroot_release(&fr);
	CHECK_CONTAINS(err.buf, "/proc/mounts");
	strbuf_release(&empty);
	config_release(&cfg);
	strbuf_release(&out);
	strbuf_release(&err);
}

TEST_TIMEOUT(storage_probe_that_blocks_fails_in_bounded_time, 60)
{
	const char *root = test_tmpdir();
	struct strbuf fifo = STRBUF_INIT, state = STRBUF_INIT;
	test_write(root, "proc/mounts", "/dev/sda1 / ext4 rw 0 0\nsrv:/e /data nfs rw 0 0\n");
	test_write(root, "fs.snapshot", "/ 1000 500 500 0 0\n/data 1000 500 500 0 0\n");
	test_mkdir(root, "data");
	/* opening a FIFO for writing blocks until a reader comes: a filesystem that hangs */
	strbuf_addf(&fifo, "%s/data/probe.fifo", root);
	CHECK_INT(mkfifo(fifo.buf, 0644), 0);
	strbuf_addf(&state, "%s/state", root);
	const char *args[] = { "check",	    "--json",	     "--only",
			       "storage",   "--root",	     root,
			       "--state-dir", state.buf,	     "-c",
			       "storage.probe=/data", "-c", "storage.probe-file=probe.fifo",
			       "-c",	    "storage.probe-timeout=1", NULL };
	struct child c;
	uint64_t t0 = mono_ms();
	test_run_vigil(&c, args, NULL);
	uint64_t took = mono_ms() - t0;
	CHECK_MSG(c.exit_code == 1, "exit %d; stdout:\n%s\nstderr:\n%s", c.exit_code, c.out.buf,
		  c.err.buf);
	struct json_value *rep = test_parse_json(&c);
	CHECK_STR(json_get_string(rep, "verdict"), "unhealthy");
	CHECK_CONTAINS(json_get_string(rep, "reason"), "probe of /data timed out after 1 s");
	const struct json_value *ch = json_path(rep, "checks.0");
	CHECK_STR(json_get_string(ch, "status"), "fail");
	const struct json_value *fs = json_get(ch, "findings");
	bool found = false;
	for (size_t i = 0; fs && i < fs->nr; i++) {
		const char *code = json_get_string(fs->items[i], "code");
		const char *act = json_get_string(fs->items[i], "action");
		if (code && !strcmp(code, "probe") && act && !strcmp(act, "INSPECT_HARDWARE"))
			found = true;
	}
	CHECK_MSG(found, "no probe finding with INSPECT_HARDWARE:\n%s", c.out.buf);
	CHECK_MSG(took < 10000, "took %llu ms with a 1 s probe deadline", (unsigned long long)took);
	json_free(rep);
	child_release(&c);
	strbuf_release(&fifo);
	strbuf_release(&state);
}

/*
 * fs.snapshot is read inside the root: a planted absolute link means ROOT + target, so a link to a
 * file outside (here with numbers that would fail the host) is not read, and a link whose target
 * exists inside the root is.
 */
TEST(storage_snapshot_link_stays_inside_the_root)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, outside = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", tmp);
	strbuf_addf(&outside, "%s/outside/fs.snapshot", tmp);
	test_write(tmp, "outside/fs.snapshot", "/ 1000 999 1 0 0\n");
	test_write(root.buf, "proc/mounts", "/dev/sda1 / ext4 rw 0 0\n");
	test_mkdir(root.buf, "data");
	struct strbuf link = STRBUF_INIT;
	strbuf_addf(&link, "%s/fs.snapshot", root.buf);
	CHECK_INT(symlink(outside.buf, link.buf), 0);
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root.buf, NULL), 0);
	struct storage_options opt;
	opts(&opt, NULL);
	struct storage_readings r;
	memset(&r, 0, sizeof(r));
	struct check_ctx ctx = { .root = &fr, .host = "h" };
	CHECK_INT(storage_gather(&ctx, &opt, &r, &err), 0);
	/* ROOT/<tmp>/outside/fs.snapshot does not exist: no snapshot, never the outside numbers */
	CHECK(!r.from_snapshot);
	CHECK_INT(r.nr_fs, 1);
	CHECK(r.fs[0].n.avail != 1);
	storage_readings_release(&r);

	/* the same absolute link, its target made inside the root: that file is read */
	test_write(root.buf, outside.buf + 1, "/ 1000 500 500 0 0\n");
	memset(&r, 0, sizeof(r));
	CHECK_INT(storage_gather(&ctx, &opt, &r, &err), 0);
	CHECK(r.from_snapshot);
	CHECK(r.fs[0].n.ok && r.fs[0].n.avail == 500);
	storage_readings_release(&r);
	storage_options_release(&opt);
	fsroot_release(&fr);
	strbuf_release(&link);
	strbuf_release(&root);
	strbuf_release(&outside);
	strbuf_release(&err);
}

/* A probe directory under a root is resolved inside it: a planted data -> /elsewhere never makes
 * vigil create, write and unlink a file outside the root. */
TEST(storage_probe_link_stays_inside_the_root)
{
	const char *tmp = test_tmpdir();
	struct strbuf root = STRBUF_INIT, outside = STRBUF_INIT, link = STRBUF_INIT;
	struct strbuf err = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", tmp);
	strbuf_addf(&outside, "%s/outside", tmp);
	test_mkdir(tmp, "outside");
	test_write(root.buf, "proc/mounts", "/dev/sda1 / ext4 rw 0 0\n");
	test_write(root.buf, "fs.snapshot", "/ 1000 500 500 0 0\n");
	strbuf_addf(&link, "%s/data", root.buf);
	CHECK_INT(symlink(outside.buf, link.buf), 0);
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, root.buf, NULL), 0);
	struct storage_options opt;
	const char *sets[] = { "storage.probe=/data", NULL };
	opts(&opt, sets);
	struct storage_readings r;
	memset(&r, 0, sizeof(r));
	struct check_ctx ctx = { .root = &fr, .host = "h" };
	CHECK_INT(storage_gather(&ctx, &opt, &r, &err), 0);
	CHECK_INT(r.nr_probes, 1);
	CHECK_MSG(r.probes[0].outcome == PROBE_ERROR && r.probes[0].err_no == ENOENT,
		  "outcome %d errno %d %s", r.probes[0].outcome, r.probes[0].err_no,
		  r.probes[0].error);
	storage_readings_release(&r);
	storage_options_release(&opt);
	fsroot_release(&fr);
	strbuf_release(&root);
	strbuf_release(&outside);
	strbuf_release(&link);
	strbuf_release(&err);
}

/*
 * A root with nothing of a host's disks (a fixture of the InfiniBand ports only): statvfs there
 * measures the disk the directory lies on. That said "1 mount below 90 % full: /", healthy.
 */
TEST(storage_root_without_mounts_or_snapshot_is_unknown)
{
	const char *root = test_tmpdir();
	test_write(root, "sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	const char *args[] = { "check", "--only", "storage", "--root", root, NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 3, "exit %d; stdout:\n%s", c.exit_code, c.out.buf);
	CHECK_CONTAINS(c.out.buf, "no /proc/mounts or fs.snapshot under the root");
	CHECK_NOT_CONTAINS(c.out.buf, "below 90 % full");
	child_release(&c);
	/* with /proc/mounts the root is a host's tree (a mounted image): statvfs is its disk */
	test_write(root, "proc/mounts", "/dev/sda1 / ext4 rw 0 0\n");
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 0, "exit %d; stdout:\n%s", c.exit_code, c.out.buf);
	CHECK_CONTAINS(c.out.buf, "1 mount below 90 % full: /");
	child_release(&c);
}
