/* osops.c: the real instance of the OS-ops table and NULL-tolerant callers (see osops.h). */
#include "osops.h"
#include "fileio.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double real_wall(void *ctx)
{
	UNUSED(ctx);
	return wall_seconds();
}

static uint64_t real_mono(void *ctx)
{
	UNUSED(ctx);
	return mono_ms();
}

static bool real_sleep(void *ctx, uint64_t ms)
{
	UNUSED(ctx);
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return true;
}

static uint32_t real_random(void *ctx)
{
	static uint64_t s;
	UNUSED(ctx);
	if (!s)
		s = mono_us() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	/* xorshift64*: jitter only needs to differ between hosts (never used for names) */
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return (uint32_t)((s * 0x2545f4914f6cdd1dull) >> 32);
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

static double real_cpu(void *ctx)
{
	struct rusage self, kids;
	UNUSED(ctx);
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return tv(self.ru_utime) + tv(self.ru_stime) + tv(kids.ru_utime) + tv(kids.ru_stime);
}

static int real_write(void *ctx, const char *path, const void *data, size_t len,
		      struct strbuf *err)
{
	UNUSED(ctx);
	return write_file(path, data, len, true, err);
}

static pid_t real_spawn(void *ctx)
{
	UNUSED(ctx);
	return fork();
}

static int real_kill(void *ctx, pid_t pid, int sig)
{
	UNUSED(ctx);
	return kill(pid, sig);
}

static pid_t real_wait(void *ctx, pid_t pid, int *status, int options)
{
	UNUSED(ctx);
	return waitpid(pid, status, options);
}

const struct os_ops os_real_ops = {
	.wall = real_wall,
	.mono_ms = real_mono,
	.sleep_ms = real_sleep,
	.random = real_random,
	.cpu_seconds = real_cpu,
	.write_file = real_write,
	.spawn = real_spawn,
	.kill = real_kill,
	.wait = real_wait,
};

const struct os_ops *os_ops_or_real(const struct os_ops *ops)
{
	return ops ? ops : &os_real_ops;
}

#define PICK(ops, f) ((ops) && (ops)->f ? (ops)->f : os_real_ops.f)

double os_wall(const struct os_ops *ops, void *ctx)
{
	return PICK(ops, wall)(ctx);
}

uint64_t os_mono_ms(const struct os_ops *ops, void *ctx)
{
	return PICK(ops, mono_ms)(ctx);
}

bool os_sleep_ms(const struct os_ops *ops, void *ctx, uint64_t ms)
{
	return PICK(ops, sleep_ms)(ctx, ms);
}

uint32_t os_random(const struct os_ops *ops, void *ctx)
{
	return PICK(ops, random)(ctx);
}

double os_cpu_seconds(const struct os_ops *ops, void *ctx)
{
	return PICK(ops, cpu_seconds)(ctx);
}

pid_t os_spawn(const struct os_ops *ops, void *ctx)
{
	return PICK(ops, spawn)(ctx);
}

int os_kill(const struct os_ops *ops, void *ctx, pid_t pid, int sig)
{
	return PICK(ops, kill)(ctx, pid, sig);
}

pid_t os_wait(const struct os_ops *ops, void *ctx, pid_t pid, int *status, int options)
{
	return PICK(ops, wait)(ctx, pid, status, options);
}

int os_write_file(const struct os_ops *ops, void *ctx, const char *path, const void *data,
		  size_t len, struct strbuf *err)
{
	return PICK(ops, write_file)(ctx, path, data, len, err);
}
