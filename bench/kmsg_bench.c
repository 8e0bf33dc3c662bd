/*
 * kmsg_bench.c: throughput of the kernel log parser (src/logs/kmsg.c).
 *
 * Generates a realistic kernel log in memory (default 128 MiB: ordinary boot and runtime lines
 * with a sprinkling of Xid, SXid and other interesting lines), parses it with kmsg_parse() and
 * prints MB/s beside a reference measured in the same run over the same buffer: a plain
 * memchr() newline scan, the least any line-oriented reader must do.
 *
 *   build/bench/kmsg_bench [MiB] [runs]
 *   build/bench/kmsg_bench file [MiB] [DIR]
 *
 * Each figure is the best of the runs (default 5). Inputs: dmesg ("[  123.456789] msg") and
 * /dev/kmsg records ("6,SEQ,USEC,-;msg"), one line in 5000 interesting; a dmesg log in an Xid
 * storm, one line in 20 interesting (each such line is parsed in full); and a dmesg log in a
 * storm of host hardware errors (EDAC CE, machine checks, GHES blocks, AER), one line in 20.
 * The first three inputs are the same as before the hardware errors were read, so that
 * bench/kmsg_before_after.sh compares an older parser with this one on the same bytes.
 *
 * 'file' is the huge-log case the 'kernel' check must read whole: it writes a dmesg log of MiB
 * (default 1024) to DIR (default $TMPDIR or /tmp) with an Xid 79 in its first line, reads it
 * back through kmsg_read_file() as the check does (twice: the first read may come from disk, the
 * second from the page cache), and prints the rate, whether the Xid was found, and the
 * process's peak memory, which must stay far below the file's size. The file is removed.
 */
#include "../src/logs/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 11);
}

/* Ordinary lines of a GPU training host's kernel log: nothing to report. */
static const char *const benign[] = {
	"systemd[1]: Started Session %u of User ubuntu.",
	"audit: type=1400 audit(1732960800.%03u:%u): apparmor=\"DENIED\" operation=\"open\" "
	"profile=\"snap.lxd.daemon\" name=\"/proc/%u/mounts\" pid=%u comm=\"lxd\"",
	"EXT4-fs (nvme0n1p%u): mounted filesystem with ordered data mode. Quota mode: none.",
	"docker0: port %u(veth%07x) entered blocking state",
	"docker0: port %u(veth%07x) entered forwarding state",
	"IPv6: ADDRCONF(NETDEV_CHANGE): veth%07x: link becomes ready",
	"eth0: renamed from veth%07x",
	"nvidia-nvlink: Nvlink Core is being initialized, major device number %u",
	"nvidia-uvm: Loaded the UVM driver, major device number %u.",
	"pcieport 0000:%02x:01.0: AER: enabled with IRQ %u",
	"pci 0000:%02x:00.0: [10de:2335] type 00 class 0x030200",
	"usb 1-%u: new high-speed USB device number %u using xhci_hcd",
	"xfs filesystem being remounted at /var/lib/kubelet/pods/%08x/volumes supports timestamps "
	"until 2038 (0x7fffffff)",
	"cgroup: fork rejected by pids controller in /kubepods/burstable/pod%08x",
	"infiniband mlx5_%u: mlx5_ib_add_port:%u:(pid %u): ports initialised",
	"mlx5_core 0000:%02x:00.0: E-Switch: Total vports %u, per vport: max uc(128) max mc(2048)",
	"TCP: request_sock_TCP: Possible SYN flooding on port %u. Sending cookies.",
	"kauditd_printk_skb: %u callbacks suppressed",
	"perf: interrupt took too long (%u > %u), lowering kernel.perf_event_max_sample_rate",
	"NFS: state manager: check lease failed on NFSv4 server 10.0.%u.%u with error 13",
};

static const char *const interesting[] = {
	"NVRM: Xid (PCI:0000:%02x:00): 13, pid=%u, name=python3, Graphics Exception: ESR 0x%x",
	"NVRM: Xid (PCI:0000:%02x:00): 94, pid=%u, Contained: CE User Channel (0x9). RST: No",
	"nvidia-nvswitch%u: SXid (PCI:0000:%02x:00.0): 20009, Non-fatal, Link %u RX Short Error "
	"Rate",
	"INFO: task python3:%u blocked for more than %u seconds.",
	"mlx5_core 0000:%02x:00.0 ibp%us0: Link %s",
};

/* Host hardware error lines (src/logs/kmsg_hwerr.c): the fourth input only. */
static const char *const hwerr[] = {
	"EDAC MC%u: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#%u_DIMM#0 (channel:%u slot:0 "
	"page:0x1f2e3 offset:0x0 grain:32 syndrome:0x0 - err_code:0x0000:0x009f)",
	"mce: [Hardware Error]: Machine check events logged",
	"{%u}[Hardware Error]: event severity: corrected",
	"pcieport 0000:%02x:01.0: AER: Uncorrectable (Non-Fatal) error message received from "
	"0000:%02x:00.0",
	"pcieport 0000:%02x:01.0: AER: Corrected error message received from 0000:%02x:00.0",
};

static const char *const *interesting_set = interesting;
static size_t interesting_nr = ARRAY_SIZE(interesting);

static void gen(struct strbuf *sb, size_t target, bool kmsg_records, uint32_t one_in,
		size_t *nr_interesting)
{
	double t = 0;
	uint64_t seq = 0;
	char msg[512];
	*nr_interesting = 0;
	while (sb->len < target) {
		uint32_t r = rnd();
		t += (r % 1000) / 1000.0;
		if (r % one_in == 0) {
			const char *fmt = interesting_set[rnd() % interesting_nr];
			if (strstr(fmt, "Link %s"))
				snprintf(msg, sizeof(msg), fmt, rnd() % 256, rnd() % 16,
					 rnd() % 2 ? "up" : "down");
			else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-extra-args"
				snprintf(msg, sizeof(msg), fmt, rnd() % 256, rnd() % 65536,
					 rnd() % 64);
#pragma GCC diagnostic pop
			(*nr_interesting)++;
		} else {
			const char *fmt = benign[r % ARRAY_SIZE(benign)];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-extra-args"
			snprintf(msg, sizeof(msg), fmt, rnd() % 256, rnd() % 100000, rnd() % 100000,
				 rnd() % 100000);
#pragma GCC diagnostic pop
		}
		if (kmsg_records)
			strbuf_addf(sb, "6,%llu,%llu,-;%s\n", (unsigned long long)seq++,
				    (unsigned long long)(t * 1e6), msg);
		else
			strbuf_addf(sb, "[%12.6f] %s\n", t, msg);
	}
}

static void drop_first_line(struct strbuf *sb)
{
	const char *nl = memchr(sb->buf, '\n', sb->len);
	size_t cut = nl ? (size_t)(nl + 1 - sb->buf) : sb->len;
	memmove(sb->buf, sb->buf + cut, sb->len - cut);
	strbuf_setlen(sb, sb->len - cut);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t memchr_lines(const char *b, size_t len)
{
	size_t n = 0;
	const char *p = b, *e = b + len;
	while (p < e && (p = memchr(p, '\n', (size_t)(e - p)))) {
		n++;
		p++;
	}
	return n;
}

static void bench(const char *label, const struct strbuf *sb, size_t nr_interesting, int runs)
{
	double best_ref = 1e30, best = 1e30;
	size_t lines = 0, events = 0;
	uint64_t parsed_lines = 0;
	for (int i = 0; i < runs; i++) {
		double t0 = now_s();
		lines = memchr_lines(sb->buf, sb->len);
		double t1 = now_s();
		struct kmsg_log log;
		kmsg_log_init(&log, NULL);
		kmsg_parse(&log, sb->buf, sb->len);
		kmsg_log_finish(&log);
		double t2 = now_s();
		events = log.nr;
		parsed_lines = log.lines;
		kmsg_log_release(&log);
		if (t1 - t0 < best_ref)
			best_ref = t1 - t0;
		if (t2 - t1 < best)
			best = t2 - t1;
	}
	double mb = (double)sb->len / 1e6;
	printf("%-14s %8.1f MB  %9zu lines  %6zu interesting  %6zu events\n", label, mb, lines,
	       nr_interesting, events);
	printf("  memchr newline scan   %9.1f MB/s   (reference)\n", mb / best_ref);
	printf("  kmsg_parse            %9.1f MB/s   %.2fx the reference's time\n", mb / best,
	       best / best_ref);
	if (parsed_lines != lines)
		printf("  MISMATCH: parser counted %llu lines\n", (unsigned long long)parsed_lines);
}

static int bench_file(size_t mib, const char *dir)
{
	struct strbuf path = STRBUF_INIT, sb = STRBUF_INIT, err = STRBUF_INIT;
	size_t n_int, piece = mib < 64 ? mib : 64;
	int ret = 1;
	strbuf_addf(&path, "%s/kmsg_bench.%d.log", dir, (int)getpid());
	int fd = open(path.buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "cannot write '%s': %s\n", path.buf, strerror(errno));
		goto out;
	}
	/* the fault first, then noise: what the old tail-only reader never saw */
	strbuf_addstr(&sb, "[    1.000000] NVRM: Xid (PCI:0000:9b:00): 79, pid=9962, name=python, "
			   "GPU has fallen off the bus.\n");
	gen(&sb, piece << 20, false, 5000, &n_int);
	double t0 = now_s();
	for (size_t done = 0; done < mib; done += piece) {
		if (write(fd, sb.buf, sb.len) != (ssize_t)sb.len) {
			fprintf(stderr, "cannot write '%s': %s\n", path.buf, strerror(errno));
			close(fd);
			goto out;
		}
		if (!done) /* later pieces repeat the noise, not the fault */
			drop_first_line(&sb);
	}
	close(fd);
	double t1 = now_s();
	for (int run = 0; run < 2; run++) {
		struct kmsg_log log;
		struct kmsg_read rd = { 0 };
		uint64_t xid79 = 0;
		kmsg_log_init(&log, NULL);
		double a = now_s();
		if (kmsg_read_file(path.buf, &log, &rd, &err) < 0) {
			fprintf(stderr, "%s\n", err.buf);
			kmsg_log_release(&log);
			goto out;
		}
		kmsg_log_finish(&log);
		double b = now_s();
		for (size_t i = 0; i < log.nr; i++)
			if (log.ev[i].kind == KMSG_XID && log.ev[i].num == 79)
				xid79 += log.ev[i].count;
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		printf("file read %d: %8.1f MB in %6.2f s = %7.1f MB/s  complete=%s  Xid 79 found=%llu  "
		       "events=%zu  peak RSS %ld MiB (the generator's buffer included)\n", run + 1,
		       (double)rd.done / 1e6, b - a, (double)rd.done / 1e6 / (b - a),
		       rd.complete ? "yes" : "no", (unsigned long long)xid79, log.nr,
		       ru.ru_maxrss / 1024);
		kmsg_log_release(&log);
	}
	printf("(writing the file took %.2f s)\n", t1 - t0);
	ret = 0;
out:
	unlink(path.buf);
	strbuf_release(&path);
	strbuf_release(&sb);
	strbuf_release(&err);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "file")) {
		size_t fmib = argc > 2 ? (size_t)atoi(argv[2]) : 1024;
		const char *dir = argc > 3 ? argv[3] : getenv("TMPDIR");
		if (fmib < 1) {
			fprintf(stderr, "usage: kmsg_bench file [MiB] [DIR]\n");
			return 2;
		}
		return bench_file(fmib, dir && *dir ? dir : "/tmp");
	}
	size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 128;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	if (mib < 1 || runs < 1) {
		fprintf(stderr, "usage: kmsg_bench [MiB] [runs]\n");
		return 2;
	}
	struct strbuf sb = STRBUF_INIT;
	size_t n_int;
	strbuf_grow(&sb, (mib << 20) + 1024);
	gen(&sb, mib << 20, false, 5000, &n_int);
	bench("dmesg", &sb, n_int, runs);
	strbuf_reset(&sb);
	gen(&sb, mib << 20, true, 5000, &n_int);
	bench("kmsg records", &sb, n_int, runs);
	/* an Xid storm: one line in 20 is parsed in full */
	strbuf_reset(&sb);
	gen(&sb, mib << 20, false, 20, &n_int);
	bench("dmesg, storm", &sb, n_int, runs);
	/* a storm of host hardware errors: one line in 20 */
	strbuf_reset(&sb);
	interesting_set = hwerr;
	interesting_nr = ARRAY_SIZE(hwerr);
	gen(&sb, mib << 20, false, 20, &n_int);
	bench("dmesg, hw storm", &sb, n_int, runs);
	strbuf_release(&sb);
	return 0;
}
