/*
 * check_bench.c: wall and CPU time of one command, repeated; median and spread.
 *
 *   check_bench RUNS -- CMD ARGS...
 *
 * Each run forks and execs the command (stdout to /dev/null), timing wall clock around it and
 * CPU (user + system of the child and everything it waited for) from wait4()'s rusage. Prints one
 * line: "median_wall_ms p10 p90 median_cpu_ms p10 p90". bench/run compares vigil with a
 * reference run in the same command.
 */
#include "../src/lib/util.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(double), cmp);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

int main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: check_bench RUNS -- CMD ARGS...\n");
		return 2;
	}
	int runs = atoi(argv[1]);
	if (runs < 1 || runs > 100000)
		return 2;
	double *wall = xcalloc((size_t)runs, sizeof(double));
	double *cpu = xcalloc((size_t)runs, sizeof(double));
	for (int i = 0; i < runs; i++) {
		uint64_t t0 = mono_us();
		pid_t pid = fork();
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);
			dup2(fd, 1);
			execvp(argv[3], argv + 3);
			_exit(127);
		}
		int st;
		struct rusage ru;
		wait4(pid, &st, 0, &ru);
		wall[i] = (double)(mono_us() - t0) / 1000.0;
		/* wait4's rusage covers the child and the grandchildren it reaped (the checks). */
		cpu[i] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
			 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
			fprintf(stderr, "cannot run %s\n", argv[3]);
			return 1;
		}
	}
	printf("%.2f %.2f %.2f %.2f %.2f %.2f\n", pct(wall, runs, 0.5), pct(wall, runs, 0.1),
	       pct(wall, runs, 0.9), pct(cpu, runs, 0.5), pct(cpu, runs, 0.1), pct(cpu, runs, 0.9));
	free(wall);
	free(cpu);
	return 0;
}
