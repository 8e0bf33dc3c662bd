/*
 * test_fsroot.c: reads under --root stay inside the root. Planted links (absolute, relative, ".."
 * chains, loops) are resolved inside the root as openat2(RESOLVE_IN_ROOT) does, through both the
 * kernel's resolver and the userspace walker; sysfs's relative links keep working; the host name
 * and file excerpts are never echoed raw; a root that holds no host is unknown. A property test
 * builds random trees beside a sentinel outside them and asserts that nothing outside is read.
 */
#include "../harness.h"
#include "../../src/sys/fsroot.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define SENTINEL "SENTINEL-b7f3c2-outside-the-root"

/* T/outside/secret (the sentinel), T/outside/dir/SENTINEL_ENTRY, T/root (made empty). */
struct tree {
	struct strbuf t, root, outside, secret;
};

static void tree_init(struct tree *tr)
{
	memset(tr, 0, sizeof(*tr));
	strbuf_addstr(&tr->t, test_tmpdir());
	strbuf_addf(&tr->root, "%s/root", tr->t.buf);
	strbuf_addf(&tr->outside, "%s/outside", tr->t.buf);
	strbuf_addf(&tr->secret, "%s/outside/secret", tr->t.buf);
	test_write(tr->t.buf, "outside/secret", SENTINEL "\n");
	test_write(tr->t.buf, "outside/dir/SENTINEL_ENTRY", SENTINEL "\n");
	test_write(tr->t.buf, "outside/1234", SENTINEL "\n"); /* a number, for read_u64 */
	struct strbuf l = STRBUF_INIT;
	strbuf_addf(&l, "%s/outside/dir/SENTINEL_LINK", tr->t.buf);
	CHECK(symlink("SENTINEL_LINK_TEXT", l.buf) == 0);
	strbuf_release(&l);
	test_mkdir(tr->t.buf, "root");
}

static void tree_release(struct tree *tr)
{
	strbuf_release(&tr->t);
	strbuf_release(&tr->root);
	strbuf_release(&tr->outside);
	strbuf_release(&tr->secret);
}

/* ln -s target root/rel (parents made) */
static void plant(const struct tree *tr, const char *rel, const char *target)
{
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/%s", tr->root.buf, rel);
	char *slash = strrchr(p.buf, '/');
	*slash = '\0';
	struct strbuf err = STRBUF_INIT;
	CHECK(mkdir_p(p.buf, 0755, &err) == 0);
	*slash = '/';
	CHECK_MSG(symlink(target, p.buf) == 0, "symlink %s: %s", p.buf, strerror(errno));
	strbuf_release(&p);
	strbuf_release(&err);
}

/* The root-escape cases, through one resolver. */
static void escapes(enum fsroot_resolver res)
{
	struct tree tr;
	tree_init(&tr);
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT, abs_dir = STRBUF_INIT;
	struct strlist l = STRLIST_INIT;
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, tr.root.buf, NULL), 0);
	fr.resolver = res;

	/* the case: etc/hostname -> an absolute path outside (here the sentinel) */
	plant(&tr, "etc/hostname", tr.secret.buf);
	CHECK_INT(fsroot_read_attr(&fr, "/etc/hostname", &sb, &err), READ_MISSING);
	CHECK(!fsroot_exists(&fr, "/etc/hostname"));
	/* ... which means root + target: the same path inside the root is what gets read */
	strbuf_addf(&abs_dir, "%s", tr.secret.buf);
	test_write(tr.root.buf, abs_dir.buf + 1, "inside\n");
	CHECK_INT(fsroot_read_attr(&fr, "/etc/hostname", &sb, &err), READ_OK);
	CHECK_STR(sb.buf, "inside");

	/* ".." cannot climb above the root: ../../../outside/secret from sys/a/b */
	plant(&tr, "sys/a/b", "../../../../../../../../outside/secret");
	CHECK_INT(fsroot_read(&fr, "/sys/a/b", &sb, 4096, &err), READ_MISSING);
	test_write(tr.root.buf, "outside/secret", "inside too\n");
	strbuf_reset(&sb);
	CHECK_INT(fsroot_read(&fr, "/sys/a/b", &sb, 4096, &err), READ_OK);
	CHECK_STR(sb.buf, "inside too\n");
	/* and plain ".." in the path asked for */
	strbuf_reset(&sb);
	CHECK_INT(fsroot_read(&fr, "/../../../../outside/secret", &sb, 4096, &err), READ_OK);
	CHECK_STR(sb.buf, "inside too\n");

	/* a directory link out: list, read, exists, readlink and statvfs all stay inside */
	plant(&tr, "sys/class/net", tr.outside.buf);
	plant(&tr, "sys/class/rel", "../../../outside/dir/../dir");
	CHECK_INT(fsroot_list(&fr, "/sys/class/net/dir", &l, &err), READ_MISSING);
	CHECK_INT(l.nr, 0);
	CHECK(!fsroot_exists(&fr, "/sys/class/net/dir/SENTINEL_ENTRY"));
	CHECK_INT(fsroot_readlink(&fr, "/sys/class/net/dir/SENTINEL_LINK", &sb, false), READ_MISSING);
	struct statvfs st;
	CHECK_INT(fsroot_statvfs(&fr, "/sys/class/net/dir", &st, &err), READ_MISSING);
	uint64_t v;
	CHECK_INT(fsroot_read_u64(&fr, "/sys/class/net/1234", &v, &err), READ_MISSING);
	CHECK_INT(fsroot_list(&fr, "/sys/class/rel", &l, &err), READ_MISSING);

	/* a link to a magic link of this host's /proc is only text inside the root */
	plant(&tr, "etc/self", "/proc/self/root/outside/secret");
	CHECK(!fsroot_exists(&fr, "/etc/self"));

	fsroot_release(&fr);
	strlist_release(&l);
	strbuf_release(&sb);
	strbuf_release(&err);
	strbuf_release(&abs_dir);
	tree_release(&tr);
}

TEST(fsroot_links_stay_in_root_openat2) { escapes(FSROOT_RESOLVER_AUTO); }
TEST(fsroot_links_stay_in_root_userspace) { escapes(FSROOT_RESOLVER_USERSPACE); }

/* sysfs is made of relative links: they must keep working, through both resolvers. */
static void sysfs_links(enum fsroot_resolver res)
{
	struct tree tr;
	tree_init(&tr);
	const char *dev = "sys/devices/pci0000:00/0000:00:01.0/0000:1b:00.0";
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT, err = STRBUF_INIT;
	struct strlist l = STRLIST_INIT;
	strbuf_addf(&p, "%s/vendor", dev);
	test_write(tr.root.buf, p.buf, "0x10de\n");
	test_write(tr.root.buf, "sys/bus/pci/drivers/nvidia/new_id", "");
	plant(&tr, "sys/bus/pci/devices/0000:1b:00.0",
	      "../../../devices/pci0000:00/0000:00:01.0/0000:1b:00.0");
	strbuf_reset(&p);
	strbuf_addf(&p, "%s/driver", dev);
	plant(&tr, p.buf, "../../../../bus/pci/drivers/nvidia");
	plant(&tr, "sys/class/infiniband/mlx5_0", "/sys/devices/pci0000:00/0000:00:01.0/0000:1b:00.0");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, tr.root.buf, NULL), 0);
	fr.resolver = res;
	uint64_t v = 0;
	CHECK_INT(fsroot_read_u64(&fr, "/sys/bus/pci/devices/0000:1b:00.0/vendor", &v, &err), 0);
	CHECK_INT(v, 0x10de);
	CHECK_INT(fsroot_readlink(&fr, "/sys/bus/pci/devices/0000:1b:00.0/driver", &sb, true), 0);
	CHECK_STR(sb.buf, "nvidia");
	CHECK_INT(fsroot_readlink(&fr, "/sys/bus/pci/devices/0000:1b:00.0", &sb, false), 0);
	CHECK_STR(sb.buf, "../../../devices/pci0000:00/0000:00:01.0/0000:1b:00.0");
	CHECK_INT(fsroot_list(&fr, "/sys/bus/pci/devices/0000:1b:00.0/driver/", &l, &err), 0);
	CHECK_INT(l.nr, 1);
	CHECK_STR(l.items[0], "new_id");
	CHECK(fsroot_exists(&fr, "/sys/class/infiniband/mlx5_0/vendor"));
	CHECK(fsroot_exists(&fr, "/"));
	CHECK(fsroot_exists(&fr, "/sys/bus/pci/devices/0000:1b:00.0/driver/../nvidia/new_id"));
	CHECK(!fsroot_exists(&fr, "/sys/bus/pci/devices/0000:1b:00.0/driver/../../nvidia/new_id"));
	/* not a link: readlink says so, as readlink(2) does */
	CHECK_INT(fsroot_readlink(&fr, "/sys/devices", &sb, false), -1);
	struct statvfs st;
	CHECK_INT(fsroot_statvfs(&fr, "/sys/class/infiniband/mlx5_0", &st, &err), 0);
	/* the resolved path of a link chain, for readers that want a path */
	CHECK_INT(fsroot_resolve(&fr, "/sys/class/infiniband/mlx5_0/vendor", &sb, &err), 0);
	CHECK_CONTAINS(sb.buf, "root/sys/devices/pci0000:00/0000:00:01.0/0000:1b:00.0/vendor");
	CHECK_INT(fsroot_resolve(&fr, "/sys/nothing", &sb, &err), READ_MISSING);
	fsroot_release(&fr);
	strlist_release(&l);
	strbuf_release(&p);
	strbuf_release(&sb);
	strbuf_release(&err);
	tree_release(&tr);
}

TEST(fsroot_sysfs_relative_links_openat2) { sysfs_links(FSROOT_RESOLVER_AUTO); }
TEST(fsroot_sysfs_relative_links_userspace) { sysfs_links(FSROOT_RESOLVER_USERSPACE); }

/* Loops end in ELOOP, never a hang; 40 links are followed, the 41st is refused. */
static void loops(enum fsroot_resolver res)
{
	struct tree tr;
	tree_init(&tr);
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT, name = STRBUF_INIT, to = STRBUF_INIT;
	plant(&tr, "dev/kmsg", "/dev/kmsg");
	plant(&tr, "etc/a", "b");
	plant(&tr, "etc/b", "../etc/a");
	plant(&tr, "sys/up", "../sys/up/x");
	test_write(tr.root.buf, "end", "end\n");
	for (int i = 0; i < 41; i++) {
		strbuf_reset(&name);
		strbuf_reset(&to);
		strbuf_addf(&name, "chain/l%d", i);
		if (i == 40)
			strbuf_addstr(&to, "/end");
		else
			strbuf_addf(&to, "l%d", i + 1);
		plant(&tr, name.buf, to.buf);
	}
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, tr.root.buf, NULL), 0);
	fr.resolver = res;
	CHECK_INT(fsroot_read(&fr, "/dev/kmsg", &sb, 4096, &err), -1);
	CHECK_CONTAINS(err.buf, "cannot open '");
	CHECK_CONTAINS(err.buf, strerror(ELOOP));
	CHECK(!fsroot_exists(&fr, "/etc/a"));
	struct strlist l = STRLIST_INIT;
	CHECK_INT(fsroot_list(&fr, "/etc/b", &l, &err), -1);
	CHECK_INT(fsroot_read(&fr, "/sys/up", &sb, 4096, &err), -1);
	CHECK_INT(fsroot_resolve(&fr, "/dev/kmsg", &sb, &err), -1);
	CHECK_CONTAINS(err.buf, strerror(ELOOP));
	/* the link itself is still readable */
	CHECK_INT(fsroot_readlink(&fr, "/etc/a", &sb, false), 0);
	CHECK_STR(sb.buf, "b");
	strbuf_reset(&sb);
	CHECK_INT(fsroot_read(&fr, "/chain/l1", &sb, 4096, &err), READ_OK); /* 40 links */
	CHECK_STR(sb.buf, "end\n");
	strbuf_reset(&sb);
	CHECK_INT(fsroot_read(&fr, "/chain/l0", &sb, 4096, &err), -1); /* 41 links */
	CHECK_CONTAINS(err.buf, strerror(ELOOP));
	fsroot_release(&fr);
	strlist_release(&l);
	strbuf_release(&sb);
	strbuf_release(&err);
	strbuf_release(&name);
	strbuf_release(&to);
	tree_release(&tr);
}

TEST_TIMEOUT(fsroot_loops_openat2, 20) { loops(FSROOT_RESOLVER_AUTO); }
TEST_TIMEOUT(fsroot_loops_userspace, 20) { loops(FSROOT_RESOLVER_USERSPACE); }

/* FIFOs do not block an open; reads stay bounded; a bad number is quoted as a short excerpt. */
static void odd_files(enum fsroot_resolver res)
{
	struct tree tr;
	tree_init(&tr);
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT, err = STRBUF_INIT, big = STRBUF_INIT;
	strbuf_addf(&p, "%s/etc/hostname", tr.root.buf);
	test_mkdir(tr.root.buf, "etc");
	CHECK(mkfifo(p.buf, 0600) == 0);
	plant(&tr, "etc/fifo-link", "/etc/hostname");
	for (int i = 0; i < 10000; i++)
		strbuf_addstr(&big, "\x1b[2J0123456789");
	test_write(tr.root.buf, "sys/huge", big.buf);
	test_write(tr.root.buf, "sys/empty", "");
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, tr.root.buf, NULL), 0);
	fr.resolver = res;
	CHECK_INT(fsroot_read_attr(&fr, "/etc/hostname", &sb, &err), READ_OK);
	CHECK_STR(sb.buf, "");
	CHECK_INT(fsroot_read_attr(&fr, "/etc/fifo-link", &sb, &err), READ_OK);
	strbuf_reset(&sb);
	CHECK_INT(fsroot_read(&fr, "/sys/huge", &sb, 1000, &err), READ_TRUNCATED);
	CHECK_INT(sb.len, 1000);
	strbuf_reset(&sb);
	CHECK_INT(fsroot_read(&fr, "/sys/empty", &sb, 1000, &err), READ_OK);
	CHECK_INT(sb.len, 0);
	uint64_t v;
	CHECK_INT(fsroot_read_u64(&fr, "/sys/huge", &v, &err), -1);
	CHECK_CONTAINS(err.buf, "not a number");
	CHECK_CONTAINS(err.buf, "\\x1b[2J");
	CHECK(!strchr(err.buf, '\x1b'));
	CHECK(err.len < 200);
	fsroot_release(&fr);
	strbuf_release(&p);
	strbuf_release(&sb);
	strbuf_release(&err);
	strbuf_release(&big);
	tree_release(&tr);
}

TEST_TIMEOUT(fsroot_fifo_and_sizes_openat2, 20) { odd_files(FSROOT_RESOLVER_AUTO); }
TEST_TIMEOUT(fsroot_fifo_and_sizes_userspace, 20) { odd_files(FSROOT_RESOLVER_USERSPACE); }

/* On the host (no root) the plain calls: an absolute link is followed as the system does. */
TEST(fsroot_host_unchanged)
{
	struct tree tr;
	tree_init(&tr);
	struct strbuf p = STRBUF_INIT, sb = STRBUF_INIT, err = STRBUF_INIT;
	plant(&tr, "link", tr.secret.buf);
	strbuf_addf(&p, "%s/link", tr.root.buf);
	CHECK(fsroot_is_host(fsroot_host));
	CHECK_INT(fsroot_read(fsroot_host, p.buf, &sb, 4096, &err), READ_OK);
	CHECK_STR(sb.buf, SENTINEL "\n");
	CHECK(fsroot_exists(fsroot_host, p.buf));
	CHECK_INT(fsroot_resolve(fsroot_host, p.buf, &sb, &err), 0);
	CHECK_STR(sb.buf, p.buf);
	strbuf_release(&p);
	strbuf_release(&sb);
	strbuf_release(&err);
	tree_release(&tr);
}

TEST(fsroot_looks_like_host)
{
	struct tree tr;
	tree_init(&tr);
	struct strbuf why = STRBUF_INIT;
	CHECK(fsroot_looks_like_host(fsroot_host, &why));
	struct fsroot fr;
	CHECK_INT(fsroot_init(&fr, tr.root.buf, NULL), 0);
	CHECK(!fsroot_looks_like_host(&fr, &why));
	CHECK_CONTAINS(why.buf, tr.root.buf);
	CHECK_CONTAINS(why.buf, "holds no sys/, proc/ or dev/kmsg: not a host root");
	/* a sys link out of the root does not make it a host */
	plant(&tr, "sys", tr.t.buf);
	CHECK(!fsroot_looks_like_host(&fr, &why));
	test_mkdir(tr.root.buf, "proc");
	CHECK(fsroot_looks_like_host(&fr, &why));
	/* what 'vigil gather' writes from a host with nothing under sys/ to keep is a host root */
	struct strbuf g = STRBUF_INIT;
	strbuf_addf(&g, "%s/gathered", tr.t.buf);
	test_write(g.buf, "GATHERED", "# vigil gather\n");
	fsroot_release(&fr);
	CHECK_INT(fsroot_init(&fr, g.buf, NULL), 0);
	CHECK(fsroot_looks_like_host(&fr, &why));
	strbuf_release(&g);
	fsroot_release(&fr);
	strbuf_release(&why);
	tree_release(&tr);
}

/* ---- through the binary ---- */

static void run_check(struct child *c, const char *root, const char *const *extra,
		      const char *const *env)
{
	const char *args[16] = { "check", "--json", "--root", root, "--state-dir", NULL };
	size_t n = 5;
	struct strbuf st = STRBUF_INIT;
	strbuf_addf(&st, "%s/state", test_tmpdir());
	args[n++] = xstrdup(st.buf);
	for (size_t i = 0; extra && extra[i] && n < 15; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	test_run_vigil(c, args, env);
	free((char *)args[5]);
	strbuf_release(&st);
}

/* The case: ln -s /etc/shadow R/etc/hostname printed the file in the header. */
static void hostname_link(const char *const *env)
{
	struct tree tr;
	tree_init(&tr);
	plant(&tr, "etc/hostname", tr.secret.buf);
	plant(&tr, "etc/vigil/vigil.conf", tr.secret.buf);
	test_mkdir(tr.root.buf, "sys");
	struct child c;
	run_check(&c, tr.root.buf, NULL, env);
	CHECK_NOT_CONTAINS(c.out.buf, "SENTINEL");
	CHECK_NOT_CONTAINS(c.err.buf, "SENTINEL");
	struct json_value *v = test_parse_json(&c);
	CHECK(json_get_string(v, "host"));
	json_free(v);
	child_release(&c);
	/* and in the table a person reads */
	const char *args[] = { "check", "--root", tr.root.buf, NULL };
	test_run_vigil(&c, args, env);
	CHECK_NOT_CONTAINS(c.out.buf, "SENTINEL");
	CHECK_NOT_CONTAINS(c.err.buf, "SENTINEL");
	child_release(&c);
	tree_release(&tr);
}

TEST(fsroot_cli_hostname_link_stays_in_root) { hostname_link(NULL); }
TEST(fsroot_cli_hostname_link_stays_in_root_userspace)
{
	const char *env[] = { "VIGIL_FSROOT_RESOLVER=userspace", NULL };
	hostname_link(env);
}

/* A host name with control bytes, or longer than 255 bytes, is replaced and the user told. */
TEST(fsroot_cli_hostname_sanitised)
{
	struct tree tr;
	tree_init(&tr);
	test_mkdir(tr.root.buf, "sys");
	test_write(tr.root.buf, "etc/hostname", "node\x1b]0;pwned\x07-1\n");
	struct child c;
	run_check(&c, tr.root.buf, NULL, NULL);
	struct json_value *v = test_parse_json(&c);
	const char *host = json_get_string(v, "host");
	CHECK(host && !strchr(host, '\x1b') && !strchr(host, '\x07'));
	CHECK_STR(host, "node\\x1b]0;pwned\\x07-1");
	CHECK_CONTAINS(c.err.buf, "not a valid host name");
	CHECK(!strchr(c.err.buf, '\x1b'));
	json_free(v);
	child_release(&c);

	struct strbuf long_name = STRBUF_INIT;
	for (int i = 0; i < 300; i++)
		strbuf_addch(&long_name, 'a' + i % 26);
	strbuf_addch(&long_name, '\n');
	test_write(tr.root.buf, "etc/hostname", long_name.buf);
	run_check(&c, tr.root.buf, NULL, NULL);
	v = test_parse_json(&c);
	host = json_get_string(v, "host");
	CHECK(host && strlen(host) <= 70);
	CHECK(host && ends_with(host, "..."));
	CHECK_CONTAINS(c.err.buf, "longer than 255 bytes");
	json_free(v);
	child_release(&c);

	/* a good name is kept as it is */
	test_write(tr.root.buf, "etc/hostname", "gpu-node-17.cluster\n");
	run_check(&c, tr.root.buf, NULL, NULL);
	v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "host"), "gpu-node-17.cluster");
	CHECK_NOT_CONTAINS(c.err.buf, "not a valid host name");
	json_free(v);
	child_release(&c);
	strbuf_release(&long_name);
	tree_release(&tr);
}

/* A FIFO at etc/hostname with no writer must not block vigil. */
TEST_TIMEOUT(fsroot_cli_hostname_fifo, 40)
{
	struct tree tr;
	tree_init(&tr);
	test_mkdir(tr.root.buf, "sys");
	test_mkdir(tr.root.buf, "etc");
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/etc/hostname", tr.root.buf);
	CHECK(mkfifo(p.buf, 0600) == 0);
	struct child c;
	const char *extra[] = { "--only", "system", NULL };
	run_check(&c, tr.root.buf, extra, NULL);
	CHECK(c.exited);
	struct json_value *v = test_parse_json(&c);
	CHECK(json_get_string(v, "host"));
	json_free(v);
	child_release(&c);
	strbuf_release(&p);
	tree_release(&tr);
}

/* An empty root, or a scenario folder given instead of its root/: unknown, naming the root. */
TEST(fsroot_cli_empty_root_is_unknown)
{
	struct tree tr;
	tree_init(&tr);
	struct child c;
	run_check(&c, tr.root.buf, NULL, NULL);
	CHECK_INT(c.exit_code, 3);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "unknown");
	CHECK_CONTAINS(json_get_string(v, "reason"), "root");
	CHECK_CONTAINS(c.out.buf, "holds no sys/, proc/ or dev/kmsg: not a host root");
	json_free(v);
	child_release(&c);

	/* a scenario folder: root/ and expect, no sys/ or proc/ of its own */
	struct strbuf scen = STRBUF_INIT;
	strbuf_addf(&scen, "%s/scen", tr.t.buf);
	test_write(scen.buf, "expect", "verdict healthy\n");
	test_mkdir(scen.buf, "root/sys");
	const char *args[] = { "check", "--root", scen.buf, NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3);
	CHECK_CONTAINS(c.out.buf, "not a host root");
	child_release(&c);
	strbuf_release(&scen);
	tree_release(&tr);
}

/* dev/kmsg under the root: a link out reads nothing of this host; a looping one is an error. */
static void kmsg_links(const char *const *env)
{
	struct tree tr;
	tree_init(&tr);
	test_mkdir(tr.root.buf, "sys");
	test_write(tr.t.buf, "outside/kmsg",
		   "4,1234,5678901,-;NVRM: Xid (PCI:0000:1b:00): 79, " SENTINEL "\n");
	struct strbuf klog = STRBUF_INIT;
	strbuf_addf(&klog, "%s/outside/kmsg", tr.t.buf);
	plant(&tr, "dev/kmsg", klog.buf);
	const char *only[] = { "--only", "kernel", NULL };
	struct child c;
	run_check(&c, tr.root.buf, only, env);
	CHECK_NOT_CONTAINS(c.out.buf, "SENTINEL");
	CHECK_NOT_CONTAINS(c.out.buf, "Xid 79");
	CHECK(c.exit_code != 1);
	child_release(&c);

	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/dev/kmsg", tr.root.buf);
	CHECK(unlink(p.buf) == 0);
	CHECK(symlink("/dev/kmsg", p.buf) == 0);
	run_check(&c, tr.root.buf, only, env);
	CHECK_INT(c.exit_code, 3);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "verdict"), "unknown");
	CHECK_CONTAINS(c.out.buf, strerror(ELOOP));
	json_free(v);
	child_release(&c);
	strbuf_release(&p);
	strbuf_release(&klog);
	tree_release(&tr);
}

TEST_TIMEOUT(fsroot_cli_kmsg_link_stays_in_root, 60) { kmsg_links(NULL); }
TEST_TIMEOUT(fsroot_cli_kmsg_link_stays_in_root_userspace, 60)
{
	const char *env[] = { "VIGIL_FSROOT_RESOLVER=userspace", NULL };
	kmsg_links(env);
}

/* ---- property test: random trees, nothing outside is ever read ---- */

static unsigned rnd_state;

static unsigned rnd(unsigned n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return ((rnd_state >> 16) & 0x7fff) % n;
}

static const char *const names[] = { "a", "b", "sys", "dev", "x", "kmsg", "secret", "dir",
				     "outside", "1234", "SENTINEL_ENTRY", "SENTINEL_LINK" };

/* What the tree inside may use: every name but the two that only the outside has. */
#define INSIDE_NAMES 10

/*
 * A random relative path of 1..4 components of the first nr_names names, and "..", "." when
 * allow_dots (the probes use every name, so that a read that escaped would find the outside's).
 */
static void rnd_rel(struct strbuf *sb, bool allow_dots, unsigned nr_names)
{
	unsigned n = 1 + rnd(4);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			strbuf_addch(sb, '/');
		unsigned k = rnd(allow_dots ? nr_names + 4 : nr_names);
		strbuf_addstr(sb, k < nr_names ? names[k] : k < nr_names + 3 ? ".." : ".");
	}
}

/* A link target: into the tree, out of it (absolute or by ".."), at itself, at this host. */
static void rnd_target(struct strbuf *sb, const struct tree *tr)
{
	switch (rnd(9)) {
	case 0: strbuf_addstr(sb, tr->secret.buf); break;
	case 1: strbuf_addf(sb, "%s/dir", tr->outside.buf); break;
	case 2:
		for (unsigned i = 0, n = 1 + rnd(8); i < n; i++)
			strbuf_addstr(sb, "../");
		strbuf_addstr(sb, rnd(2) ? "outside/secret" : "outside/dir");
		break;
	case 3: strbuf_addch(sb, '/'); rnd_rel(sb, true, INSIDE_NAMES); break;
	case 4: rnd_rel(sb, true, INSIDE_NAMES); break;
	case 5: strbuf_addstr(sb, rnd(2) ? "/proc/self/root" : "/proc/self/cwd"); break;
	case 6: strbuf_addstr(sb, rnd(2) ? "." : ".."); break;
	case 7: strbuf_addf(sb, "%s", tr->t.buf); break;
	default: strbuf_addstr(sb, "/dev/kmsg"); break;
	}
}

/* Is any directory on the way from root to path (below root) a symbolic link? */
static bool through_a_link(const char *root, const char *path)
{
	char *p = xstrdup(path);
	bool link = false;
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		struct stat st;
		*s = '\0';
		link = lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
		*s = '/';
		if (link)
			break;
	}
	free(p);
	return link;
}

/* Build a random tree under root: directories, files, links, FIFOs, devices (as root). */
static void rnd_tree(const struct tree *tr)
{
	struct strbuf rel = STRBUF_INIT, p = STRBUF_INIT, tgt = STRBUF_INIT, err = STRBUF_INIT;
	for (unsigned i = 0, n = 10 + rnd(30); i < n; i++) {
		strbuf_reset(&rel);
		rnd_rel(&rel, false, INSIDE_NAMES);
		strbuf_reset(&p);
		strbuf_addf(&p, "%s/%s", tr->root.buf, rel.buf);
		/* the generator itself must not build through a link it planted (root/x ->
		 * /proc/self/cwd would put the rest of the path in the runner's directory) */
		if (through_a_link(tr->root.buf, p.buf))
			continue;
		char *slash = strrchr(p.buf, '/');
		*slash = '\0';
		if (mkdir_p(p.buf, 0755, &err) < 0)
			continue; /* a file or link in the way: fine, the tree is random */
		*slash = '/';
		switch (rnd(7)) {
		case 0: mkdir(p.buf, 0755); break;
		case 1:
		case 2:
			strbuf_reset(&tgt);
			rnd_target(&tgt, tr);
			if (symlink(tgt.buf, p.buf) < 0)
				break;
			break;
		case 3: mkfifo(p.buf, 0600); break;
		case 4:
			if (geteuid() == 0)
				mknod(p.buf, S_IFCHR | 0600, makedev(1, rnd(2) ? 3 : 5)); /* null, zero */
			else
				mkfifo(p.buf, 0600);
			break;
		default: {
			int fd = open(p.buf, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0)
				break;
			unsigned kind = rnd(3);
			if (kind == 1) {
				if (write(fd, "inside\n", 7) != 7)
					break;
			} else if (kind == 2) {
				if (ftruncate(fd, 1 << 20) < 0)
					break;
			}
			close(fd);
			break;
		}
		}
	}
	strbuf_release(&rel);
	strbuf_release(&p);
	strbuf_release(&tgt);
	strbuf_release(&err);
}

static void rm_tree(const char *path)
{
	const char *argv[] = { "rm", "-rf", path, NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 20000;
	CHECK_INT(child_run(&c, NULL), 0);
	child_release(&c);
}

/* One operation on one path: what it returned, as text, for comparing the two resolvers. */
static void probe(const struct fsroot *root, const char *path, unsigned op, struct strbuf *out)
{
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT;
	struct strlist l = STRLIST_INIT;
	struct statvfs st;
	uint64_t v = 0;
	int r;
	strbuf_reset(out);
	switch (op) {
	case 0:
		r = fsroot_read(root, path, &sb, 65536, &err);
		strbuf_addf(out, "read %d %s", r, sb.buf);
		break;
	case 1:
		r = fsroot_read_u64(root, path, &v, &err);
		strbuf_addf(out, "u64 %d %llu", r, (unsigned long long)v);
		break;
	case 2: strbuf_addf(out, "exists %d", fsroot_exists(root, path)); break;
	case 3:
		r = fsroot_list(root, path, &l, &err);
		strbuf_addf(out, "list %d", r);
		for (size_t i = 0; i < l.nr; i++)
			strbuf_addf(out, " %s", l.items[i]);
		break;
	case 4:
		r = fsroot_readlink(root, path, &sb, false);
		strbuf_addf(out, "readlink %d %s", r, sb.buf);
		break;
	case 5: strbuf_addf(out, "statvfs %d", fsroot_statvfs(root, path, &st, &err)); break;
	default:
		r = fsroot_read_attr(root, path, &sb, &err);
		strbuf_addf(out, "attr %d %s", r, sb.buf);
		break;
	}
	/* an error message may quote a file's excerpt: it must not quote the sentinel either */
	strbuf_addf(out, " | %s", err.buf);
	strlist_release(&l);
	strbuf_release(&sb);
	strbuf_release(&err);
}

/*
 * Did an answer come from outside the root: the sentinel's content (in a read or an error's
 * excerpt), the outside link's text, or an outside-only name in what was listed or read?
 */
static bool leaked(const char *out)
{
	if (strstr(out, SENTINEL) || strstr(out, "SENTINEL_LINK_TEXT"))
		return true;
	const char *bar = strstr(out, " | "); /* after it: the error, which names the path asked */
	const char *hit = strstr(out, "SENTINEL_");
	return hit && (!bar || hit < bar);
}

TEST_TIMEOUT(fsroot_property_random_trees_never_leave_root, 120)
{
	struct tree tr;
	tree_init(&tr);
	const char *s = getenv("VIGIL_TEST_SEED");
	unsigned seed = s && *s ? (unsigned)strtoul(s, NULL, 10)
				: (unsigned)time(NULL) ^ ((unsigned)getpid() << 8);
	rnd_state = seed;
	struct strbuf path = STRBUF_INIT, a = STRBUF_INIT, b = STRBUF_INIT;
	unsigned probes = 0;
	for (int iter = 0; iter < 40; iter++) {
		rm_tree(tr.root.buf);
		test_mkdir(tr.t.buf, "root");
		rnd_tree(&tr);
		struct fsroot fr;
		CHECK_INT(fsroot_init(&fr, tr.root.buf, NULL), 0);
		for (int k = 0; k < 150; k++) {
			strbuf_reset(&path);
			strbuf_addch(&path, '/');
			rnd_rel(&path, true, ARRAY_SIZE(names));
			unsigned op = rnd(7);
			fr.resolver = FSROOT_RESOLVER_AUTO;
			probe(&fr, path.buf, op, &a);
			fr.resolver = FSROOT_RESOLVER_USERSPACE;
			probe(&fr, path.buf, op, &b);
			probes++;
			CHECK_MSG(!leaked(a.buf) && !leaked(b.buf),
				  "seed %u (VIGIL_TEST_SEED=%u replays), iteration %d: '%s' read "
				  "outside the root:\nopenat2: %s\nuserspace: %s",
				  seed, seed, iter, path.buf, a.buf, b.buf);
			/* the two resolvers agree on every answer */
			CHECK_MSG(!strcmp(a.buf, b.buf),
				  "seed %u (VIGIL_TEST_SEED=%u replays), iteration %d: '%s': the "
				  "resolvers disagree:\nopenat2: %s\nuserspace: %s",
				  seed, seed, iter, path.buf, a.buf, b.buf);
		}
		fsroot_release(&fr);
	}
	CHECK(probes == 40 * 150);
	strbuf_release(&path);
	strbuf_release(&a);
	strbuf_release(&b);
	tree_release(&tr);
}

/*
 * The root is a value passed down, not a process global set through the environment: vigil
 * exports no VIGIL_ROOT to what it runs (here the Slurm command of --slurm, a fake scontrol that
 * records the variable), so no child reads "the root" from anywhere but its caller.
 */
TEST(fsroot_cli_root_is_not_exported_to_children)
{
	const char *dir = test_tmpdir();
	struct strbuf root = STRBUF_INIT, scontrol = STRBUF_INIT, setting = STRBUF_INIT,
		      log = STRBUF_INIT, text = STRBUF_INIT, state = STRBUF_INIT;
	strbuf_addf(&root, "%s/root", dir);
	test_write(root.buf, "etc/hostname", "n7\n");
	test_mkdir(root.buf, "sys");
	test_write(dir, "bin/scontrol",
		   "#!/bin/sh\necho \"root=[${VIGIL_ROOT-unset}]\" >>\"$(dirname \"$0\")/../env.log\"\n"
		   "echo NodeName=n7 State=IDLE\n");
	strbuf_addf(&scontrol, "%s/bin/scontrol", dir);
	CHECK_INT(chmod(scontrol.buf, 0755), 0);
	strbuf_addf(&setting, "slurm.scontrol=%s", scontrol.buf);
	strbuf_addf(&state, "%s/state", dir);
	const char *args[] = { "check", "--slurm", "--root", root.buf, "--state-dir", state.buf,
			       "-c", setting.buf, "--only", "system", NULL };
	struct child c;
	test_run_vigil(&c, args, NULL);
	strbuf_addf(&log, "%s/env.log", dir);
	CHECK_INT(read_file_bounded(log.buf, &text, 4096, NULL), READ_OK);
	CHECK_CONTAINS(text.buf, "root=[unset]");
	CHECK_NOT_CONTAINS(text.buf, root.buf);
	child_release(&c);
	strbuf_release(&root);
	strbuf_release(&scontrol);
	strbuf_release(&setting);
	strbuf_release(&log);
	strbuf_release(&text);
	strbuf_release(&state);
}
