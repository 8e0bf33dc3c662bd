/*
 * sup_scale.c: the supervisor of `vigil run` at 1,024 to 16,384 nodes x 8 ranks, in virtual time
 * (src/sim/world.h): what its own loop costs in CPU and memory when Slurm, srun and the nodes
 * answer at once. Each case is one whole run in a forked child (so its peak RSS is its own):
 *
 *   rounds   preflight, 20 periodic watches with vigil check on every node, the run ends well
 *   crash    one rank crashes: stop, checks on every node, relaunch from the checkpoint
 *   lost     one node lost: excluded, drained, a spare takes its place, relaunch
 *   hang     the ranks hang: stacks, the stopped host excluded, relaunch
 *
 *   sup_scale [N...]          (default 1024 4096 16384)
 *
 * Prints per case: CPU seconds of the whole run, CPU per check round (the run's CPU over its
 * check rounds, an upper bound), vigil's own CPU from the fault to the relaunch's srun, and
 * the peak RSS. The ratio column compares each N with the first N: linear growth is N/N0.
 */
#include "../src/sim/world.h"

#include <ftw.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

static double cpu_now(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

struct result {
	double cpu, recover_cpu;
	long rss_kib;
	unsigned rounds, launches;
	int rc;
};

/* The CPU when the fault happened and when the next srun was asked for. */
static double fault_cpu, relaunch_cpu;
static int (*real_launch)(void *, struct sup *, const struct step_spec *, struct strbuf *);
static struct fakeworld *bench_fw;
static double fault_at;

static int timed_launch(void *ctx, struct sup *s, const struct step_spec *spec,
			struct strbuf *err)
{
	if (bench_fw->now >= fault_at && fault_cpu > 0 && relaunch_cpu == 0)
		relaunch_cpu = cpu_now();
	return real_launch(ctx, s, spec, err);
}

static void (*real_wait)(void *, struct sup *, int, struct sup_wake *);
static void timed_wait(void *ctx, struct sup *s, int ms, struct sup_wake *wk)
{
	real_wait(ctx, s, ms, wk);
	if (fault_cpu == 0 && bench_fw->now >= fault_at)
		fault_cpu = cpu_now();
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(path) < 0 ? 0 : 0;
}

static void one_case(const char *name, size_t n, int out_fd)
{
	struct fakeworld fw;
	fw_init(&fw, n, 8);
	fw.quiet = true;
	fw.total_steps = 60;
	fw.ckpt_every = 10;
	bench_fw = &fw;
	fault_at = 1e18;
	char dir[] = "/tmp/vigil-sup-scale-XXXXXX";
	if (!mkdtemp(dir))
		_exit(2);
	struct sup_options o;
	fw_options(&fw, &o, dir, 8);
	o.check_interval_s = 3;
	o.node_poll_s = 3;
	if (!strcmp(name, "crash")) {
		fault_at = 40;
		fw_fault(&fw, fault_at, FW_CRASH, "n2");
	} else if (!strcmp(name, "lost")) {
		fault_at = 40;
		fw_fault(&fw, fault_at, FW_LOST, "n3");
	} else if (!strcmp(name, "hang")) {
		fault_at = 40;
		fw_fault(&fw, fault_at, FW_HANG, NULL);
		snprintf(fw.evidence_sick, sizeof(fw.evidence_sick), "n5");
	}
	real_launch = fw.w.launch;
	real_wait = fw.w.wait;
	fw.w.launch = timed_launch;
	fw.w.wait = timed_wait;
	struct strbuf err = STRBUF_INIT;
	double c0 = cpu_now();
	struct result r = { 0 };
	r.rc = supervise_in(&o, &fw.w, &err);
	r.cpu = cpu_now() - c0;
	r.recover_cpu = relaunch_cpu > 0 ? relaunch_cpu - fault_cpu : -1;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	r.rss_kib = ru.ru_maxrss;
	r.rounds = fw.check_rounds;
	r.launches = fw.launches;
	(void)!write(out_fd, &r, sizeof(r));
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	_exit(0);
}

int main(int argc, char **argv)
{
	size_t ns[8] = { 1024, 4096, 16384 };
	int nn = 3;
	if (argc > 1) {
		nn = 0;
		for (int i = 1; i < argc && nn < 8; i++)
			ns[nn++] = (size_t)strtoul(argv[i], NULL, 10);
	}
	const char *cases[] = { "rounds", "crash", "lost", "hang" };
	double base_cpu[4] = { 0 };
	printf("%-7s %6s %7s %8s %7s %10s %12s %9s %7s\n", "case", "nodes", "ranks", "cpu_s",
	       "rounds", "cpu/round", "fault->srun", "rss_MiB", "x_cpu");
	for (int k = 0; k < nn; k++) {
		for (int c = 0; c < 4; c++) {
			int p[2];
			if (pipe(p) < 0)
				return 2;
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				close(p[0]);
				one_case(cases[c], ns[k], p[1]);
			}
			close(p[1]);
			struct result r;
			memset(&r, 0, sizeof(r));
			ssize_t got = read(p[0], &r, sizeof(r));
			close(p[0]);
			int st;
			waitpid(pid, &st, 0);
			if (got != (ssize_t)sizeof(r)) {
				printf("%-7s %6zu: the run died (status %d)\n", cases[c], ns[k], st);
				continue;
			}
			if (k == 0)
				base_cpu[c] = r.cpu;
			char rec[32];
			if (r.recover_cpu >= 0)
				snprintf(rec, sizeof(rec), "%.4f", r.recover_cpu);
			else
				snprintf(rec, sizeof(rec), "-");
			printf("%-7s %6zu %7zu %8.3f %7u %10.4f %12s %9.1f %7.2f%s\n", cases[c],
			       ns[k], ns[k] * 8, r.cpu, r.rounds, r.rounds ? r.cpu / r.rounds : 0,
			       rec, (double)r.rss_kib / 1024, base_cpu[c] > 0 ? r.cpu / base_cpu[c] : 0,
			       r.rc == 0 ? "" : "  (run failed)");
		}
	}
	return 0;
}
