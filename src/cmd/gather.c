/*
 * gather.c: 'vigil gather DIR', a fixture of this host: the sysfs and proc files vigil reads,
 * the kernel log, NVML values (nvml.snapshot) and filesystem numbers (fs.snapshot). 'vigil check
 * --root DIR' then judges the copy as it would the host. Each part is gathered in its own child
 * with a deadline, so a file that blocks costs that part, not the whole gather.
 *
 * vigil runs as root and DIR may sit where others write (/tmp): DIR must be new or empty and
 * ours, and every file and directory in it is made beneath DIR's fd, exclusively and without
 * following a link (fileio.h), so a link planted there (etc/hostname -> /etc/shadow) is refused,
 * never written through. Reads of a --root SRC stay inside SRC (fsroot.h).
 */
#include "cmd.h"
#include "common.h"
#include "../gpu/snapshot.h"
#include "../checks/gpu_expect.h"
#include "../checks/storage.h"
#include "../lib/run.h"
#include "../lib/strlist.h"
#include "../sys/fsroot.h"
#include "../sys/pci.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

static const char gather_usage[] =
	"usage: vigil gather [--root SRC] [--timeout SECONDS] DIR\n"
	"\n"
	"Copy what vigil reads from this host (or from the root SRC) into DIR, a fixture that\n"
	"'vigil check --root DIR' judges like the host itself:\n"
	"  sys/   PCI attributes of GPUs, NVSwitches and NVIDIA/Mellanox NICs (and of devices\n"
	"         whose vendor or class cannot be read), InfiniBand ports and counters, kernel\n"
	"         modules, cpufreq\n"
	"  proc/  meminfo, swaps, mounts, the NVIDIA driver version, daemons vigil looks for\n"
	"  dev/kmsg       the kernel log as kmsg records\n"
	"  nvml.snapshot  NVML values of every GPU (served by the fake NVML library in tests)\n"
	"  fs.snapshot    space and inode numbers of the checked mounts\n"
	"  etc/hostname, etc/vigil/vigil.conf, GATHERED (what was gathered and what failed)\n"
	"  etc/slurm/     slurm.conf, its Includes and gres.conf (the node's GPU count)\n"
	"\n"
	"DIR must be new or an empty directory of yours (not a link): gather never writes over\n"
	"or through anything already there. The kernel log copy is readable by its owner only.\n"
	"\n"
	"Exit status: 0 everything gathered, 3 some part could not be gathered (DIR is still\n"
	"usable; GATHERED says what is missing), 2 usage error or DIR refused (not empty, not\n"
	"yours, a link, cannot be made).\n";

#define FILE_CAP (1u << 20)
#define KMSG_CAP (64u << 20)

struct gather {
	const char *dir;
	struct host_env he;
	struct strbuf log; /* GATHERED */
	int failures;
};

/* DIR, opened once by cmd_gather(); the parts (forked children) inherit it. */
static int dir_fd = -1;
/* In a part's child: files it could not write, and the first reason. */
static unsigned put_failures;
static char put_first_error[256];

static void put_failed(const char *why)
{
	if (!put_failures++)
		strlcpy_v(put_first_error, why, sizeof(put_first_error));
}

/* Create DIR/path (a host path, "/etc/hostname") with data; counted when it fails. */
static int put_file_mode(const char *path, const char *data, size_t len, unsigned mode,
			 struct strbuf *err)
{
	struct strbuf e = STRBUF_INIT;
	int ret = create_file_beneath(dir_fd, path, data, len, mode, &e);
	if (ret < 0) {
		put_failed(e.buf);
		if (err)
			error_set(err, "%s", e.buf);
	}
	strbuf_release(&e);
	return ret;
}

static int put_file(const char *path, const char *data, size_t len, struct strbuf *err)
{
	return put_file_mode(path, data, len, 0644, err);
}

/* A part's exit status: not all written is incomplete, and its line says what went wrong. */
static int part_end(int fd, int ret)
{
	if (!put_failures)
		return ret;
	dprintf(fd, "; %u file%s not written (%s)", put_failures, put_failures == 1 ? "" : "s",
		put_first_error);
	return 1;
}

/* Copy one host file (path as on the host) if it exists: what fsroot_read() said. */
static int copy_one(const struct fsroot *root, const char *path, size_t cap)
{
	struct strbuf data = STRBUF_INIT, err = STRBUF_INIT;
	int r = fsroot_read(root, path, &data, cap, &err);
	if (r == READ_OK || r == READ_TRUNCATED)
		put_file(path, data.buf, data.len, &err);
	strbuf_release(&data);
	strbuf_release(&err);
	return r;
}

/*
 * Expand a host-path glob ("/sys/class/infiniband/x/ports/x/state", wildcards in any component)
 * one component at a time through fsroot_list(), so that under a root every directory is listed
 * and every link followed inside the root: glob(3) on ROOT + pattern would follow a planted
 * link out of it and list this host's directories. Wildcards do not match a leading dot, as in
 * glob(3). Host paths come back, sorted level by level.
 */
static void glob_walk(const struct fsroot *root, struct strbuf *at, const char *rest,
		      struct strlist *out)
{
	while (*rest == '/')
		rest++;
	if (!*rest) {
		if (fsroot_exists(root, at->buf))
			strlist_add(out, at->buf);
		return;
	}
	size_t len = strcspn(rest, "/"), base = at->len;
	char *comp = xstrndup(rest, len);
	if (!strpbrk(comp, "*?[")) {
		strbuf_addf(at, "/%s", comp);
		glob_walk(root, at, rest + len, out);
	} else {
		struct strlist names = STRLIST_INIT;
		if (fsroot_list(root, at->len ? at->buf : "/", &names, NULL) == 0) {
			for (size_t i = 0; i < names.nr; i++) {
				if (fnmatch(comp, names.items[i], FNM_PERIOD))
					continue;
				strbuf_setlen(at, base);
				strbuf_addf(at, "/%s", names.items[i]);
				glob_walk(root, at, rest + len, out);
			}
		}
		strlist_release(&names);
	}
	strbuf_setlen(at, base);
	free(comp);
}

static void glob_host(const struct fsroot *root, const char *pattern, struct strlist *out)
{
	struct strbuf at = STRBUF_INIT;
	glob_walk(root, &at, pattern, out);
	strbuf_release(&at);
}

static void copy_glob(const struct fsroot *root, const char *pattern)
{
	struct strlist l = STRLIST_INIT;
	glob_host(root, pattern, &l);
	for (size_t i = 0; i < l.nr; i++)
		copy_one(root, l.items[i], FILE_CAP);
	strlist_release(&l);
}

static const char *const pci_attrs[] = {
	"vendor", "device", "class", "subsystem_vendor", "subsystem_device",
	"current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
	"numa_node", "aer_dev_correctable", "aer_dev_fatal", "aer_dev_nonfatal",
};

/*
 * The devices the checks judge (GPUs, NVSwitches, NVIDIA/Mellanox NICs), found by the one PCI
 * walk, pci_find(). A device whose vendor or class cannot be read is copied too: the checks say
 * unknown for it, and so must the fixture. Such a file that exists but cannot be read at all is
 * written empty, which the checks read as unknown for that device as well.
 */
static int part_pci(void *arg, int fd)
{
	const struct fsroot *root = &((struct gather *)arg)->he.fs;
	unsigned mask = PCI_MASK(PCI_KIND_GPU) | PCI_MASK(PCI_KIND_NVSWITCH) |
			PCI_MASK(PCI_KIND_NIC);
	struct pci_dev *devs = NULL;
	size_t nr = 0, alloc = 0, unreadable = 0;
	struct strbuf p = STRBUF_INIT, err = STRBUF_INIT;
	int ret = 0;
	int r = pci_find(root, mask, false, &devs, &nr, &alloc, &err);
	if (r < 0) {
		dprintf(fd, "%s", err.buf);
		ret = 1;
	}
	for (size_t i = 0; i < nr; i++) {
		unreadable += devs[i].id_error[0] != '\0';
		for (size_t a = 0; a < ARRAY_SIZE(pci_attrs); a++) {
			strbuf_reset(&p);
			strbuf_addf(&p, PCI_DEVICES_DIR "/%s/%s", devs[i].bdf, pci_attrs[a]);
			bool id = !strcmp(pci_attrs[a], "vendor") || !strcmp(pci_attrs[a], "class");
			if (copy_one(root, p.buf, FILE_CAP) < 0 && id)
				put_file(p.buf, "", 0, NULL);
		}
	}
	if (r >= 0)
		dprintf(fd, "%zu GPU, NVSwitch and NIC PCI devices", nr);
	if (unreadable)
		dprintf(fd, " (%zu whose vendor or class cannot be read)", unreadable);
	free(devs);
	strbuf_release(&p);
	strbuf_release(&err);
	return part_end(fd, ret);
}

static int part_infiniband(void *arg, int fd)
{
	const struct fsroot *root = &((struct gather *)arg)->he.fs;
	static const char *const pats[] = {
		"/sys/class/infiniband/*/ports/*/state",
		"/sys/class/infiniband/*/ports/*/phys_state",
		"/sys/class/infiniband/*/ports/*/rate",
		"/sys/class/infiniband/*/ports/*/link_layer",
		"/sys/class/infiniband/*/ports/*/lid",
		"/sys/class/infiniband/*/ports/*/counters/*",
		"/sys/class/infiniband/*/ports/*/hw_counters/*",
		"/sys/class/infiniband/*/fw_ver",
		"/sys/class/infiniband/*/node_desc",
		"/sys/class/infiniband/*/board_id",
		"/sys/class/infiniband/*/hca_type",
	};
	for (size_t i = 0; i < ARRAY_SIZE(pats); i++)
		copy_glob(root, pats[i]);
	/* The HCA's PCI address, as the device link. */
	struct strlist hcas = STRLIST_INIT;
	struct strbuf p = STRBUF_INIT, t = STRBUF_INIT;
	fsroot_list(root, "/sys/class/infiniband", &hcas, NULL);
	for (size_t i = 0; i < hcas.nr; i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "/sys/class/infiniband/%s/device", hcas.items[i]);
		if (fsroot_readlink(root, p.buf, &t, true) == 0) {
			/* our own link in our own directory: symlinkat never replaces a thing */
			struct strbuf target = STRBUF_INIT, e = STRBUF_INIT;
			strbuf_addf(&target, "../../../bus/pci/devices/%s", t.buf);
			*strrchr(p.buf, '/') = '\0';
			int hfd = open_dir_beneath(dir_fd, p.buf, 0755, &e);
			if (hfd >= 0 && symlinkat(target.buf, hfd, "device") < 0)
				error_set(&e, "cannot link '%s/device': %s", p.buf, strerror(errno));
			if (e.len)
				put_failed(e.buf);
			if (hfd >= 0)
				close(hfd);
			strbuf_release(&target);
			strbuf_release(&e);
		}
	}
	dprintf(fd, "%zu InfiniBand devices", hcas.nr);
	strlist_release(&hcas);
	strbuf_release(&p);
	strbuf_release(&t);
	return part_end(fd, 0);
}

static int part_system(void *arg, int fd)
{
	const struct fsroot *root = &((struct gather *)arg)->he.fs;
	static const char *const mods[] = { "nvidia", "nvidia_peermem", "nvidia_uvm",
					    "nv_peer_mem", "mlx5_core", "ib_core", "gdrdrv" };
	struct strbuf p = STRBUF_INIT, e = STRBUF_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(mods); i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "/sys/module/%s", mods[i]);
		if (!fsroot_exists(root, p.buf))
			continue;
		/* the directory says the module is loaded, even without a version file */
		int mfd = open_dir_beneath(dir_fd, p.buf, 0755, &e);
		if (mfd < 0)
			put_failed(e.buf);
		else
			close(mfd);
		strbuf_addstr(&p, "/version");
		copy_one(root, p.buf, 4096);
	}
	/* the EDAC memory error counters the kernel check reads (checks/edac.h), per memory
	 * controller and per DIMM (dimmN, or rankN where the driver counts ranks) */
	static const char *const edac[] = { "ce_count", "ue_count", "ce_noinfo_count",
					    "ue_noinfo_count", "seconds_since_reset", "mc_name",
					    "size_mb" };
	static const char *const edac_dimm[] = { "dimm_ce_count", "dimm_ue_count", "dimm_label",
						 "dimm_location", "size" };
	for (size_t i = 0; i < ARRAY_SIZE(edac); i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "/sys/devices/system/edac/mc/mc[0-9]*/%s", edac[i]);
		copy_glob(root, p.buf);
	}
	for (size_t i = 0; i < ARRAY_SIZE(edac_dimm); i++) {
		for (int r = 0; r < 2; r++) {
			strbuf_reset(&p);
			strbuf_addf(&p, "/sys/devices/system/edac/mc/mc[0-9]*/%s[0-9]*/%s",
				    r ? "rank" : "dimm", edac_dimm[i]);
			copy_glob(root, p.buf);
		}
	}
	copy_glob(root, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor");
	copy_glob(root, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq");
	copy_glob(root, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/cpuinfo_max_freq");
	copy_glob(root, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_max_freq");
	static const char *const proc[] = { "/proc/meminfo", "/proc/swaps", "/proc/mounts",
					    "/proc/driver/nvidia/version", "/proc/uptime",
					    "/etc/vigil/vigil.conf", "/etc/os-release" };
	for (size_t i = 0; i < ARRAY_SIZE(proc); i++)
		copy_one(root, proc[i], FILE_CAP);
	/* Slurm's word on this node's GPUs (the gpu check's count without gpu.count): those files
	 * only, never a whole /etc/slurm (slurmdbd.conf holds a database password). */
	struct strlist slurm = STRLIST_INIT;
	gpu_expect_files(root, &slurm);
	for (size_t i = 0; i < slurm.nr; i++)
		copy_one(root, slurm.items[i], 4u << 20);
	strlist_release(&slurm);
	/* Daemons vigil looks for, by name only: nothing else about processes is kept. */
	struct strlist pids = STRLIST_INIT;
	struct strbuf comm = STRBUF_INIT;
	fsroot_list(root, "/proc", &pids, NULL);
	for (size_t i = 0; i < pids.nr; i++) {
		if (strspn(pids.items[i], "0123456789") != strlen(pids.items[i]))
			continue;
		strbuf_reset(&p);
		strbuf_addf(&p, "/proc/%s/comm", pids.items[i]);
		if (fsroot_read_attr(root, p.buf, &comm, NULL) != READ_OK)
			continue;
		/* comm is cut to 15 characters: "nv-fabricmanage" */
		if (starts_with(comm.buf, "nv-fabricmanage") ||
		    !strcmp(comm.buf, "nvidia-persistenced") || !strcmp(comm.buf, "slurmd") ||
		    !strcmp(comm.buf, "nvidia-dcgm") || !strcmp(comm.buf, "nv-hostengine")) {
			strbuf_addch(&comm, '\n');
			put_file(p.buf, comm.buf, comm.len, NULL);
		}
	}
	dprintf(fd, "modules, cpufreq, /proc files");
	strlist_release(&pids);
	strbuf_release(&comm);
	strbuf_release(&p);
	strbuf_release(&e);
	return part_end(fd, 0);
}

/* The kernel log as kmsg records: from /dev/kmsg on the host, copied under a root. */
static int part_kmsg(void *arg, int fd)
{
	const struct fsroot *root = &((struct gather *)arg)->he.fs;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	int ret = 0;
	bool cut = false;
	if (!fsroot_is_host(root)) {
		int r = fsroot_read(root, "/dev/kmsg", &out, KMSG_CAP, &err);
		if (r < 0 || r == READ_MISSING) {
			dprintf(fd, "no kernel log under the root");
			goto out;
		}
		cut = r == READ_TRUNCATED;
	} else {
		int kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (kfd < 0) {
			dprintf(fd, "cannot read /dev/kmsg: %s", strerror(errno));
			ret = 1;
			goto out;
		}
		char rec[8192];
		for (;;) {
			ssize_t n = read(kfd, rec, sizeof(rec));
			if (n < 0 && errno == EPIPE)
				continue; /* records overwritten while reading */
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			if (out.len + (size_t)n > KMSG_CAP) {
				cut = true;
				break;
			}
			strbuf_add(&out, rec, (size_t)n);
			if (rec[n - 1] != '\n')
				strbuf_addch(&out, '\n');
		}
		close(kfd);
	}
	/*
	 * Past the cap the copy is not the host's log: what came after (an Xid 79 at the end)
	 * is missing, so the part is incomplete (exit 3), and the copy ends at a record boundary,
	 * never inside a record that would read as another.
	 */
	if (cut) {
		size_t keep = out.len;
		while (keep && out.buf[keep - 1] != '\n')
			keep--;
		strbuf_setlen(&out, keep);
	}
	/* Owner only, as dmesg_restrict keeps the host's log from other users. */
	if (put_file_mode("/dev/kmsg", out.buf, out.len, 0600, &err) < 0) {
		dprintf(fd, "%s", err.buf);
		ret = 1;
		goto out;
	}
	if (cut) {
		dprintf(fd, "kernel log longer than %u MiB: the first %zu bytes copied, cut at a "
			"record boundary; the rest is missing", KMSG_CAP >> 20, out.len);
		ret = 1;
		goto out;
	}
	dprintf(fd, "%zu bytes of kernel log", out.len);
out:
	strbuf_release(&out);
	strbuf_release(&err);
	return ret;
}

static int part_nvml(void *arg, int fd)
{
	const struct fsroot *root = &((struct gather *)arg)->he.fs;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	int ret = 0;
	int r = nvml_snapshot_write(root, &out, &err);
	if (r < 0) {
		dprintf(fd, "no NVML snapshot: %s", err.buf);
		ret = 1;
	} else if (r > 0) {
		/* No driver or library: nothing to snapshot, and no file, so the fixture says the
		 * same as the host (the test NVML library reports no driver). */
		dprintf(fd, "no NVML snapshot (%s)", err.buf);
	} else if (put_file("/nvml.snapshot", out.buf, out.len, &err) < 0) {
		dprintf(fd, "%s", err.buf);
		ret = 1;
	} else {
		dprintf(fd, "NVML snapshot written");
	}
	strbuf_release(&out);
	strbuf_release(&err);
	return ret;
}

static int part_fs(void *arg, int fd)
{
	const struct gather *g = arg;
	const struct fsroot *root = &g->he.fs;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	int ret = 0;
	/* A fixture's numbers are in its own fs.snapshot: copy them, statvfs would see this host. */
	if (!fsroot_is_host(root)) {
		int r = fsroot_read(root, "/fs.snapshot", &out, FILE_CAP, &err);
		if (r == READ_MISSING) {
			dprintf(fd, "no fs.snapshot under the root");
		} else if (r != READ_OK ||
			   put_file("/fs.snapshot", out.buf, out.len, &err) < 0) {
			dprintf(fd, "%s", err.buf);
			ret = 1;
		} else {
			dprintf(fd, "filesystem numbers copied");
		}
		goto out;
	}
	if (storage_snapshot_write(root, &g->he.cfg, &out, &err) < 0 ||
	    put_file("/fs.snapshot", out.buf, out.len, &err) < 0) {
		dprintf(fd, "%s", err.buf);
		ret = 1;
	} else {
		dprintf(fd, "filesystem numbers written");
	}
out:
	strbuf_release(&out);
	strbuf_release(&err);
	return ret;
}

/*
 * Make DIR if it is missing and open it, without following a link at its last name: an fd, or
 * -1 with *err. Anything already there must be a directory of this user's.
 */
static int open_destination(const char *dir, struct strbuf *err)
{
	struct stat st;
	char *d = xstrdup(dir), *slash;
	int fd = -1;
	/* "link/" would follow the link whatever O_NOFOLLOW says */
	for (size_t n = strlen(d); n > 1 && d[n - 1] == '/'; n--)
		d[n - 1] = '\0';
	if ((slash = strrchr(d, '/')) && slash != d) {
		*slash = '\0';
		if (mkdir_p(d, 0755, err) < 0)
			goto out;
		*slash = '/';
	}
	if (mkdir(d, 0755) < 0 && errno != EEXIST) {
		error_set(err, "cannot create directory '%s': %s", d, strerror(errno));
		goto out;
	}
	fd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if ((e == ELOOP || e == ENOTDIR) && lstat(d, &st) == 0)
			error_set(err, "'%s' is %s, not a directory: give a new or empty directory",
				  d, file_kind(st.st_mode));
		else
			error_set(err, "cannot open '%s': %s", d, strerror(e));
		goto out;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		error_set(err, "'%s' belongs to uid %u, not to you (uid %u): refusing to write in it",
			  d, (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		fd = -1;
	}
out:
	free(d);
	return fd;
}

/* Is the directory empty? false with *err when it is not or cannot be read. */
static bool dir_empty(int fd, const char *dir, struct strbuf *err)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *dh = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;
	bool empty = true;
	if (!dh) {
		if (dup_fd >= 0)
			close(dup_fd);
		error_set(err, "cannot read '%s': %s", dir, strerror(errno));
		return false;
	}
	while (empty && (de = readdir(dh)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(dh);
	if (!empty)
		error_set(err, "'%s' is not empty: gather writes a new fixture into a new or empty "
			       "directory, never over what is there", dir);
	return empty;
}

static void run_part(struct gather *g, const char *name, int (*fn)(void *, int), void *arg,
		     unsigned timeout_ms)
{
	struct child c;
	struct strbuf err = STRBUF_INIT;
	child_init(&c);
	c.fn = fn;
	c.fn_arg = arg;
	c.timeout_ms = timeout_ms;
	c.out_cap = 4096;
	if (child_run(&c, &err) < 0) {
		strbuf_addf(&g->log, "%-11s failed: %s\n", name, err.buf);
		g->failures++;
	} else if (c.timed_out || c.signaled || c.exit_code) {
		struct strbuf how = STRBUF_INIT;
		child_describe(&c, &how);
		strbuf_addf(&g->log, "%-11s incomplete (%s)%s%s\n", name, how.buf,
			    c.out.len ? ": " : "", c.out.buf);
		strbuf_release(&how);
		g->failures++;
	} else {
		strbuf_addf(&g->log, "%-11s ok: %s\n", name, c.out.buf);
	}
	child_release(&c);
	strbuf_release(&err);
}

int cmd_gather(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gather g;
	struct strbuf err = STRBUF_INIT;
	double timeout_s = 20;
	int c, ret = EXIT_USAGE;
	memset(&g, 0, sizeof(g));
	strbuf_init(&g.log, 0);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': g.he.root = optarg; break;
		case 't':
			if (opt_seconds("gather", "--timeout", optarg, 1, 86400, &timeout_s) < 0)
				goto out;
			break;
		case 'h':
			fputs(gather_usage, stdout);
			ret = EXIT_HEALTHY;
			goto out;
		case ':':
			usage_error("gather", "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			usage_error("gather", "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (optind != argc - 1) {
		usage_error("gather", optind >= argc ? "which directory?" : "one directory only");
		goto out;
	}
	g.dir = argv[optind];
	if (host_env_setup(&g.he, NULL, 0, &err) < 0) {
		fprintf(stderr, "vigil gather: %s\n", err.buf);
		goto out_env;
	}
	dir_fd = open_destination(g.dir, &err);
	if (dir_fd < 0) {
		fprintf(stderr, "vigil gather: %s\n", err.buf);
		goto out_env;
	}
	char abs[4096];
	if (!realpath(g.dir, abs)) {
		fprintf(stderr, "vigil gather: cannot resolve '%s': %s\n", g.dir, strerror(errno));
		goto out_env;
	}
	if (g.he.root) {
		char rabs[4096];
		if (realpath(g.he.root, rabs) && !strcmp(rabs, abs)) {
			fprintf(stderr, "vigil gather: the root and DIR are the same directory\n");
			goto out_env;
		}
	}
	if (!dir_empty(dir_fd, g.dir, &err)) {
		fprintf(stderr, "vigil gather: %s\n", err.buf);
		goto out_env;
	}
	g.dir = abs;
	/* A host root has these even when nothing in them was gathered (no GPU, no InfiniBand):
	 * 'check --root' tells a fixture from a stray directory by them. */
	static const char *const skeleton[] = { "sys", "proc" };
	for (size_t i = 0; i < ARRAY_SIZE(skeleton); i++) {
		int sfd = open_dir_beneath(dir_fd, skeleton[i], 0755, &err);
		if (sfd < 0) {
			fprintf(stderr, "vigil gather: %s\n", err.buf);
			goto out_env;
		}
		close(sfd);
	}
	unsigned t = (unsigned)(timeout_s * 1000);
	/* each part gets the whole gather: its root (he.fs) and configuration */
	run_part(&g, "pci", part_pci, &g, t);
	run_part(&g, "infiniband", part_infiniband, &g, t);
	run_part(&g, "system", part_system, &g, t);
	run_part(&g, "kmsg", part_kmsg, &g, t);
	run_part(&g, "nvml", part_nvml, &g, t);
	run_part(&g, "filesystems", part_fs, &g, t);
	struct strbuf host = STRBUF_INIT, meta = STRBUF_INIT;
	strbuf_addf(&host, "%s\n", g.he.host);
	if (put_file("/etc/hostname", host.buf, host.len, &err) < 0) {
		strbuf_addf(&g.log, "%-11s failed: %s\n", "hostname", err.buf);
		g.failures++;
	}
	strbuf_addf(&meta, "# vigil gather\nvigil %s\nhost %s\ntime %.0f\nsource %s\n\n",
		    VIGIL_VERSION, g.he.host, wall_seconds(), g.he.root ? g.he.root : "host");
	strbuf_add(&meta, g.log.buf, g.log.len);
	if (put_file("/GATHERED", meta.buf, meta.len, &err) < 0) {
		strbuf_addf(&g.log, "%-11s failed: %s\n", "GATHERED", err.buf);
		g.failures++;
	}
	fputs(g.log.buf, stdout);
	printf("fixture written to %s\n", g.dir);
	ret = g.failures ? EXIT_UNKNOWN : EXIT_HEALTHY;
	strbuf_release(&host);
	strbuf_release(&meta);
out_env:
	if (dir_fd >= 0)
		close(dir_fd);
	dir_fd = -1;
	host_env_release(&g.he);
out:
	strbuf_release(&g.log);
	strbuf_release(&err);
	return ret;
}
