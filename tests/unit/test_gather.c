/*
 * test_gather.c: 'vigil gather' makes fixtures that judge like their source. For every scenario,
 * gather --root SCENARIO/root into a new directory, then check both with the scenario's own
 * arguments: verdict, exit code, every check's status and every finding (check, code, status,
 * action, device) must agree. Then the destination as root meets it: a planted link, a link or
 * someone else's directory as DIR, links out of the source root, the kernel log's mode.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/strlist.h"

#include <sys/stat.h>
#include <unistd.h>

static void scenario_args(const char *dir, struct strlist *out)
{
	struct strbuf p = STRBUF_INIT, text = STRBUF_INIT;
	strbuf_addf(&p, "%s/args", dir);
	if (read_file_bounded(p.buf, &text, 1 << 16, NULL) == READ_OK) {
		struct strlist lines = STRLIST_INIT;
		strlist_split(&lines, text.buf, "\n");
		for (size_t i = 0; i < lines.nr; i++) {
			if (lines.items[i][0] == '#')
				continue;
			if (starts_with(lines.items[i], "@/")) {
				struct strbuf full = STRBUF_INIT;
				strbuf_addf(&full, "%s/%s", dir, lines.items[i] + 2);
				strlist_add_nodup(out, strbuf_detach(&full, NULL));
			} else {
				strlist_add(out, lines.items[i]);
			}
		}
		strlist_release(&lines);
	}
	strbuf_release(&p);
	strbuf_release(&text);
}

static struct json_value *check_root(const char *root, const struct strlist *extra,
				     const char *state, int *exit_code)
{
	const char *args[64];
	size_t n = 0;
	args[n++] = "check";
	args[n++] = "--json";
	args[n++] = "--root";
	args[n++] = root;
	args[n++] = "--state-dir";
	args[n++] = state;
	for (size_t i = 0; i < extra->nr && n < ARRAY_SIZE(args) - 1; i++)
		args[n++] = extra->items[i];
	args[n] = NULL;
	struct child c;
	test_run_vigil(&c, args, NULL);
	*exit_code = c.exit_code;
	struct json_value *v = test_parse_json(&c);
	child_release(&c);
	return v;
}

/* One line per finding, sorted: what must agree between the source and the copy. */
static void fingerprint(const struct json_value *rep, struct strlist *out)
{
	const struct json_value *checks = json_get(rep, "checks");
	for (size_t i = 0; checks && i < checks->nr; i++) {
		const struct json_value *ch = checks->items[i];
		struct strbuf line = STRBUF_INIT;
		strbuf_addf(&line, "%s %s", json_get_string(ch, "name"),
			    json_get_string(ch, "status"));
		strlist_add_nodup(out, strbuf_detach(&line, NULL));
		const struct json_value *fs = json_get(ch, "findings");
		for (size_t j = 0; fs && j < fs->nr; j++) {
			const struct json_value *f = fs->items[j];
			strbuf_addf(&line, "%s %s %s %s %s", json_get_string(ch, "name"),
				    json_get_string(f, "code"), json_get_string(f, "status"),
				    json_get_string(f, "action"), json_get_string(f, "device"));
			strlist_add_nodup(out, strbuf_detach(&line, NULL));
		}
	}
	strlist_sort(out);
}

static void roundtrip(void *arg)
{
	const char *dir = arg;
	const char *tmp = test_tmpdir();
	struct strbuf src = STRBUF_INIT, copy = STRBUF_INIT, s1 = STRBUF_INIT, s2 = STRBUF_INIT;
	struct strlist extra = STRLIST_INIT, f1 = STRLIST_INIT, f2 = STRLIST_INIT;
	strbuf_addf(&src, "%s/root", dir);
	strbuf_addf(&copy, "%s/copy", tmp);
	strbuf_addf(&s1, "%s/state1", tmp);
	strbuf_addf(&s2, "%s/state2", tmp);
	scenario_args(dir, &extra);

	const char *gargs[] = { "gather", "--root", src.buf, copy.buf, NULL };
	struct child c;
	test_run_vigil(&c, gargs, NULL);
	CHECK_MSG(c.exit_code == 0, "gather exited %d:\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	child_release(&c);

	int e1, e2;
	struct json_value *a = check_root(src.buf, &extra, s1.buf, &e1);
	struct json_value *b = check_root(copy.buf, &extra, s2.buf, &e2);
	CHECK_STR(json_get_string(b, "verdict"), json_get_string(a, "verdict"));
	CHECK_INT(e2, e1);
	fingerprint(a, &f1);
	fingerprint(b, &f2);
	for (size_t i = 0; i < f1.nr || i < f2.nr; i++)
		CHECK_MSG(i < f1.nr && i < f2.nr && !strcmp(f1.items[i], f2.items[i]),
			  "source and copy differ: '%s' vs '%s'", i < f1.nr ? f1.items[i] : "-",
			  i < f2.nr ? f2.items[i] : "-");
	json_free(a);
	json_free(b);
	strlist_release(&extra);
	strlist_release(&f1);
	strlist_release(&f2);
	strbuf_release(&src);
	strbuf_release(&copy);
	strbuf_release(&s1);
	strbuf_release(&s2);
}

TEST_HOOK(register_gather_roundtrips)
{
	test_register_per_scenario("gather-roundtrip", roundtrip, 60);
}

TEST(gather_this_host_judges_like_the_host)
{
	const char *tmp = test_tmpdir();
	struct strbuf out = STRBUF_INIT, gathered = STRBUF_INIT;
	strbuf_addf(&out, "%s/fx", tmp);
	/* this host's NVML, whatever it is (none on CI) */
	const char *env[] = { "VIGIL_NVML_LIBRARY=", NULL };
	const char *gargs[] = { "gather", out.buf, NULL };
	struct child c;
	test_run_vigil(&c, gargs, env);
	CHECK_MSG(c.exit_code == 0 || c.exit_code == 3, "gather exited %d: %s", c.exit_code,
		  c.err.buf);
	CHECK_CONTAINS(c.out.buf, "fixture written to");
	child_release(&c);
	strbuf_addf(&gathered, "%s/GATHERED", out.buf);
	CHECK(access(gathered.buf, F_OK) == 0);
	/* the copy is judged as the host is: each check's status, and each finding's status, code
	 * and device, the same (messages may differ: memory available moves between runs) */
	const char *only = "kernel,pcie,infiniband,system";
	const char *hargs[] = { "check", "--json", "--only", only, NULL };
	const char *cargs[] = { "check", "--root", out.buf, "--json", "--only", only, NULL };
	struct json_value *host, *copy;
	test_run_vigil(&c, hargs, env);
	host = test_parse_json(&c);
	child_release(&c);
	test_run_vigil(&c, cargs, NULL);
	copy = test_parse_json(&c);
	child_release(&c);
	const struct json_value *hc = json_get(host, "checks"), *cc = json_get(copy, "checks");
	CHECK(hc && cc);
	for (size_t i = 0; i < hc->nr; i++) {
		const struct json_value *h = hc->items[i], *k = NULL;
		const char *name = json_get_string(h, "name");
		for (size_t j = 0; j < cc->nr && !k; j++)
			if (!strcmp(json_get_string(cc->items[j], "name"), name))
				k = cc->items[j];
		CHECK_MSG(k, "check '%s' missing from the copy's report", name);
		/* the host's kernel log read needs root; without it there is nothing to compare */
		if (!strcmp(name, "kernel") && geteuid() != 0)
			continue;
		CHECK_MSG(!strcmp(json_get_string(h, "status"), json_get_string(k, "status")),
			  "%s: host %s, copy %s", name, json_get_string(h, "status"),
			  json_get_string(k, "status"));
		const struct json_value *hf = json_get(h, "findings"), *kf = json_get(k, "findings");
		CHECK_MSG(hf->nr == kf->nr, "%s: %zu findings on the host, %zu on the copy", name,
			  hf->nr, kf->nr);
		for (size_t j = 0; j < hf->nr; j++) {
			const char *keys[] = { "status", "code", "device" };
			for (size_t q = 0; q < ARRAY_SIZE(keys); q++) {
				const char *a = json_get_string(hf->items[j], keys[q]);
				const char *b = json_get_string(kf->items[j], keys[q]);
				CHECK_MSG(!strcmp(a ? a : "", b ? b : ""),
					  "%s finding %zu: %s '%s' on the host, '%s' on the copy",
					  name, j, keys[q], a ? a : "", b ? b : "");
			}
		}
	}
	CHECK_STR(json_get_string(copy, "verdict"), json_get_string(host, "verdict"));
	json_free(host);
	json_free(copy);
	strbuf_release(&out);
	strbuf_release(&gathered);
}

/* ---- the destination: new or empty, ours, never written through a link ---- */

static void run_gather(struct child *c, const char *src, const char *dir)
{
	struct strbuf root = STRBUF_INIT;
	test_src_path(&root, src);
	const char *args[] = { "gather", "--root", root.buf, dir, NULL };
	test_run_vigil(c, args, NULL);
	strbuf_release(&root);
}

static void check_file_is(const char *path, const char *want)
{
	struct strbuf sb = STRBUF_INIT;
	CHECK_MSG(read_file_bounded(path, &sb, 1 << 20, NULL) == READ_OK, "cannot read '%s'", path);
	CHECK_STR(sb.buf, want);
	strbuf_release(&sb);
}

TEST(gather_refuses_a_destination_with_a_planted_link)
{
	const char *tmp = test_tmpdir();
	struct strbuf dir = STRBUF_INIT, sentinel = STRBUF_INIT, link = STRBUF_INIT;
	test_write(tmp, "sentinel", "KEEP\n");
	strbuf_addf(&sentinel, "%s/sentinel", tmp);
	strbuf_addf(&dir, "%s/fx", tmp);
	test_mkdir(tmp, "fx/etc");
	strbuf_addf(&link, "%s/etc/hostname", dir.buf);
	CHECK_INT(symlink(sentinel.buf, link.buf), 0);
	struct child c;
	run_gather(&c, "tests/scenarios/kernel-clean/root", dir.buf);
	CHECK_MSG(c.exit_code == 2, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "vigil gather: '");
	CHECK_CONTAINS(c.err.buf, "fx' is not empty");
	CHECK_NOT_CONTAINS(c.out.buf, "fixture written");
	check_file_is(sentinel.buf, "KEEP\n");
	child_release(&c);
	strbuf_release(&dir);
	strbuf_release(&sentinel);
	strbuf_release(&link);
}

TEST(gather_refuses_a_destination_that_is_a_link_or_not_ours)
{
	const char *tmp = test_tmpdir();
	struct strbuf dir = STRBUF_INIT, target = STRBUF_INIT;
	struct child c;
	test_mkdir(tmp, "empty");
	strbuf_addf(&target, "%s/empty", tmp);
	strbuf_addf(&dir, "%s/fx", tmp);
	CHECK_INT(symlink(target.buf, dir.buf), 0);
	/* a trailing slash would make open() follow the link: refused all the same */
	strbuf_addch(&dir, '/');
	run_gather(&c, "tests/scenarios/kernel-clean/root", dir.buf);
	CHECK_MSG(c.exit_code == 2, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "fx' is a symbolic link, not a directory");
	CHECK_INT(rmdir(target.buf), 0); /* still empty */
	child_release(&c);

	if (geteuid() != 0)
		SKIP("not root: cannot make a directory someone else owns");
	strbuf_reset(&dir);
	strbuf_addf(&dir, "%s/theirs", tmp);
	CHECK_INT(mkdir(dir.buf, 0777), 0);
	CHECK_INT(chown(dir.buf, 65534, 65534), 0);
	run_gather(&c, "tests/scenarios/kernel-clean/root", dir.buf);
	CHECK_MSG(c.exit_code == 2, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.err.buf, "theirs' belongs to uid 65534, not to you");
	CHECK_INT(rmdir(dir.buf), 0); /* nothing written in it */
	child_release(&c);
	strbuf_release(&dir);
	strbuf_release(&target);
}

TEST(gather_keeps_the_kernel_log_copy_owner_only)
{
	const char *tmp = test_tmpdir();
	struct strbuf dir = STRBUF_INIT, p = STRBUF_INIT;
	struct stat st;
	struct child c;
	strbuf_addf(&dir, "%s/fx", tmp);
	run_gather(&c, "tests/scenarios/kernel-clean/root", dir.buf);
	CHECK_MSG(c.exit_code == 0, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	strbuf_addf(&p, "%s/dev/kmsg", dir.buf);
	CHECK(lstat(p.buf, &st) == 0 && S_ISREG(st.st_mode));
	CHECK_MSG((st.st_mode & 0777) == 0600, "dev/kmsg mode %o", st.st_mode & 0777);
	CHECK(st.st_size > 0);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/etc/hostname", dir.buf);
	CHECK(lstat(p.buf, &st) == 0 && S_ISREG(st.st_mode));
	child_release(&c);
	strbuf_release(&dir);
	strbuf_release(&p);
}

TEST(gather_never_follows_links_out_of_the_source_root)
{
	const char *tmp = test_tmpdir();
	struct strbuf secret = STRBUF_INIT, src = STRBUF_INIT, dir = STRBUF_INIT, p = STRBUF_INIT,
		      text = STRBUF_INIT;
	struct child c;
	test_write(tmp, "secret", "SECRET\n");
	strbuf_addf(&secret, "%s/secret", tmp);
	test_write(tmp, "src/proc/swaps", "Filename Type Size Used Priority\n");
	test_mkdir(tmp, "src/sys");
	strbuf_addf(&src, "%s/src", tmp);
	strbuf_addf(&p, "%s/proc/meminfo", src.buf);
	CHECK_INT(symlink(secret.buf, p.buf), 0); /* absolute: the host's file */
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/proc/mounts", src.buf);
	CHECK_INT(symlink("../../secret", p.buf), 0); /* relative, climbing out */
	strbuf_addf(&dir, "%s/fx", tmp);
	const char *args[] = { "gather", "--root", src.buf, dir.buf, NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 0 || c.exit_code == 3, "exit %d\n%s%s", c.exit_code, c.out.buf,
		  c.err.buf);
	static const char *const copies[] = { "proc/meminfo", "proc/mounts" };
	for (size_t i = 0; i < ARRAY_SIZE(copies); i++) {
		strbuf_reset(&p);
		strbuf_reset(&text);
		strbuf_addf(&p, "%s/%s", dir.buf, copies[i]);
		read_file_bounded(p.buf, &text, 1 << 20, NULL);
		CHECK_NOT_CONTAINS(text.buf, "SECRET");
	}
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/proc/swaps", dir.buf);
	check_file_is(p.buf, "Filename Type Size Used Priority\n");
	child_release(&c);
	strbuf_release(&secret);
	strbuf_release(&src);
	strbuf_release(&dir);
	strbuf_release(&p);
	strbuf_release(&text);
}

/*
 * The globs over sysfs (InfiniBand ports, cpufreq) are expanded inside the source root: a link
 * there with an absolute target means SRC + target, as every read does. glob(3) on SRC + pattern
 * followed such a link to this host's directory (here one that does not exist) and copied
 * nothing; and a link to a directory outside SRC is listed and copied from nowhere.
 */
TEST(gather_globs_stay_inside_the_source_root)
{
	const char *tmp = test_tmpdir();
	struct strbuf src = STRBUF_INIT, dir = STRBUF_INIT, p = STRBUF_INIT, out = STRBUF_INIT;
	struct child c;
	strbuf_addf(&src, "%s/src", tmp);
	strbuf_addf(&out, "%s/outside", tmp);
	test_mkdir(src.buf, "sys/class");
	test_mkdir(src.buf, "sys/devices/system");
	/* the HCA behind an absolute link whose target exists only inside SRC */
	test_write(src.buf, "vigil-inside/ib/mlx5_0/ports/1/state", "4: ACTIVE\n");
	strbuf_addf(&p, "%s/sys/class/infiniband", src.buf);
	CHECK_INT(symlink("/vigil-inside/ib", p.buf), 0);
	/* cpufreq behind a link to a directory outside SRC */
	test_write(out.buf, "cpu0/cpufreq/scaling_governor", "OUTSIDE\n");
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/sys/devices/system/cpu", src.buf);
	CHECK_INT(symlink(out.buf, p.buf), 0);
	strbuf_addf(&dir, "%s/fx", tmp);
	const char *args[] = { "gather", "--root", src.buf, dir.buf, NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 0 || c.exit_code == 3, "exit %d\n%s%s", c.exit_code, c.out.buf,
		  c.err.buf);
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/sys/class/infiniband/mlx5_0/ports/1/state", dir.buf);
	check_file_is(p.buf, "4: ACTIVE\n");
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/sys/devices/system/cpu", dir.buf);
	CHECK_MSG(access(p.buf, F_OK) != 0, "'%s' was made from outside the root", p.buf);
	child_release(&c);
	strbuf_release(&src);
	strbuf_release(&dir);
	strbuf_release(&p);
	strbuf_release(&out);
}

/*
 * A kernel log longer than the copy's cap (64 MiB) with an Xid 79 at its end: the copy was cut
 * mid-record and GATHERED said "kmsg ok", so the fixture looked healthy while the host was not.
 * Now the part is incomplete (exit 3, GATHERED says so) and the copy ends at a record boundary.
 */
TEST(gather_a_kernel_log_past_the_cap_is_incomplete)
{
	const char *tmp = test_tmpdir();
	struct strbuf log = STRBUF_INIT, src = STRBUF_INIT, dir = STRBUF_INIT, p = STRBUF_INIT,
		      text = STRBUF_INIT;
	struct child c;
	strbuf_addstr(&log, "6,0,0,-;Linux version 6.8.0 (b@h) #1\n");
	/* records of 101 bytes: the cap falls inside one */
	for (unsigned i = 1; log.len < (65u << 20); i++)
		strbuf_addf(&log, "6,%09u,%012u,-;%066u\n", i, i, i);
	strbuf_addstr(&log, "3,999999999,999999999999,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1, "
			    "name=x, GPU has fallen off the bus.\n");
	test_mkdir(tmp, "big/sys");
	test_mkdir(tmp, "big/proc");
	test_write_bytes(tmp, "big/dev/kmsg", log.buf, log.len);
	strbuf_addf(&src, "%s/big", tmp);
	strbuf_addf(&dir, "%s/fx", tmp);
	const char *args[] = { "gather", "--root", src.buf, dir.buf, NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_MSG(c.exit_code == 3, "exit %d\n%s%s", c.exit_code, c.out.buf, c.err.buf);
	CHECK_CONTAINS(c.out.buf, "kmsg        incomplete");
	CHECK_CONTAINS(c.out.buf, "cut at a record boundary");
	strbuf_addf(&p, "%s/GATHERED", dir.buf);
	read_file_bounded(p.buf, &text, 1 << 20, NULL);
	CHECK_CONTAINS(text.buf, "kmsg        incomplete");
	strbuf_reset(&p);
	strbuf_reset(&text);
	strbuf_addf(&p, "%s/dev/kmsg", dir.buf);
	CHECK_INT(read_file_bounded(p.buf, &text, 128u << 20, NULL), 0);
	CHECK(text.len > 0 && text.len <= (64u << 20));
	CHECK(text.buf[text.len - 1] == '\n');
	CHECK(!memcmp(text.buf, log.buf, text.len));
	child_release(&c);
	strbuf_release(&log);
	strbuf_release(&src);
	strbuf_release(&dir);
	strbuf_release(&p);
	strbuf_release(&text);
}
