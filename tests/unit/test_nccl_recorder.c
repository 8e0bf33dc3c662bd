/*
 * test_nccl_recorder.c: the NCCL flight recorder (libnccl-profiler-vigil.so) loaded with
 * dlopen by test processes that drive its entry points the way NCCL does (init per
 * communicator, a Coll event per collective, its GPU channels as KernelCh children, stop,
 * finalize), one process per rank; then 'vigil diagnose hang' on what they left: dumps at exit,
 * live rings of running processes, dumps on a signal. No GPU and no NCCL needed.
 */
#include "../harness.h"
#include "../../src/lib/fileio.h"
#include "../../src/lib/json.h"
#include "../../src/lib/run.h"
#include "../../src/nccl/profiler_api.h"
#include "../../src/nccl/ring.h"
#include "../../src/diagnose/ncclring.h"
#include "../../src/diagnose/hang.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *plugin_path(void)
{
	static char path[4096];
	const char *b = getenv("VIGIL_BUILD");
	if (!b)
		test_skip("VIGIL_BUILD not set: the recorder's path is unknown");
	snprintf(path, sizeof(path), "%s/libnccl-profiler-vigil.so", b);
	if (access(path, R_OK) != 0)
		test_skip("libnccl-profiler-vigil.so not built");
	return path;
}

/* What one rank does. */
struct rank_plan {
	int rank, nranks;
	int api;            /* 5, 4, 3, 2 or 1 */
	int colls;          /* collectives enqueued on the main communicator */
	int done;           /* of which completed (GPU channels stopped) */
	int started;        /* of which the GPU began (>= done) */
	bool second_comm;   /* also an idle communicator of ranks 0 and 1, 7 collectives */
	enum { END_EXIT, END_PAUSE, END_KILLED } end;
	bool finalize;
	bool fork_exit; /* fork a child that calls exit() (a worker inheriting atexit handlers) */
};

struct drv {
	int api;
	const ncclProfiler_v5_t *v5;
	const ncclProfiler_v4_t *v4;
	const ncclProfiler_v3_t *v3;
	const ncclProfiler_v2_t *v2;
	const ncclProfiler_v1_t *v1;
};

static void *drv_init(struct drv *d, void **ctx, uint64_t hash, int nranks, int rank)
{
	int mask = 0;
	int r = -1;
	switch (d->api) {
	case 5: r = d->v5->init(ctx, hash, &mask, "test-comm", 1, nranks, rank, NULL); break;
	case 4: r = d->v4->init(ctx, &mask, "test-comm", hash, 1, nranks, rank, NULL); break;
	case 3: r = d->v3->init(ctx, &mask); break;
	case 2: r = d->v2->init(ctx, &mask); break;
	case 1: r = d->v1->init(ctx, &mask); break;
	}
	if (r != 0)
		_exit(40);
	if (!(mask & 2)) /* ncclProfileColl */
		_exit(41);
	return *ctx;
}

/* One collective: Coll start (enqueue), its stop, then the GPU channels as NCCL's proxy
 * thread reports them: KernelCh start per channel, the stop state, stopEvent. */
static void drv_coll(struct drv *d, void *ctx, uint64_t hash, int rank, uint64_t seq, bool start,
		     bool finish)
{
	void *h = NULL;
	const int nch = 2;
	if (d->api == 5) {
		descr_v5 e = { 0 };
		e.type = 1 << 1;
		e.rank = rank;
		e.coll.seqNumber = seq;
		e.coll.func = "AllReduce";
		e.coll.count = 262144;
		e.coll.datatype = "ncclFloat32";
		e.coll.nChannels = nch;
		d->v5->startEvent(ctx, &h, &e);
	} else if (d->api == 4) {
		descr_v4 e = { 0 };
		e.type = 1 << 1;
		e.rank = rank;
		e.coll.seqNumber = seq;
		e.coll.func = "AllReduce";
		e.coll.count = 262144;
		e.coll.datatype = "ncclFloat32";
		e.coll.nChannels = nch;
		d->v4->startEvent(ctx, &h, &e);
	} else if (d->api == 3) {
		descr_v3 e = { 0 };
		e.type = 1 << 1;
		e.rank = rank;
		e.coll.commHash = hash;
		e.coll.seqNumber = seq;
		e.coll.func = "AllReduce";
		e.coll.count = 262144;
		e.coll.datatype = "ncclFloat32";
		e.coll.nMaxChannels = nch;
		d->v3->startEvent(ctx, &h, &e);
	} else if (d->api == 2) {
		descr_v2 e = { 0 };
		e.type = 1 << 1;
		e.rank = rank;
		e.coll.commHash = hash;
		e.coll.seqNumber = seq;
		e.coll.func = "AllReduce";
		e.coll.count = 262144;
		e.coll.datatype = "ncclFloat32";
		d->v2->startEvent(ctx, &h, &e);
	} else {
		descr_v1 e = { 0 };
		e.type = 1 << 1;
		e.rank = rank;
		e.coll.commHash = hash;
		e.coll.seqNumber = seq;
		e.coll.func = 4; /* ncclFuncAllReduce */
		e.coll.count = 262144;
		e.coll.datatype = 7; /* ncclFloat32 */
		d->v1->startEvent(ctx, &h, &e);
	}
	if (!h)
		_exit(42);
	/* NCCL's stopEvent of a collective: enqueued, nothing more */
	d->v5->stopEvent(h);
	if (!start || d->api < 3)
		return; /* v1/v2: no GPU channel events */
	void *ch[2] = { 0 };
	for (int c = 0; c < nch; c++) {
		if (d->api >= 4) {
			descr_v4 k = { 0 };
			k.type = 1 << 6; /* ncclProfileKernelCh */
			k.parentObj = h;
			if (d->api == 5) {
				descr_v5 k5 = { 0 };
				k5.type = 1 << 6;
				k5.parentObj = h;
				d->v5->startEvent(ctx, &ch[c], &k5);
			} else {
				d->v4->startEvent(ctx, &ch[c], &k);
			}
		} else {
			descr_v3 k = { 0 };
			k.type = 1 << 6;
			k.parentObj = h;
			d->v3->startEvent(ctx, &ch[c], &k);
		}
		if (!ch[c])
			_exit(43);
	}
	if (!finish)
		return;
	for (int c = 0; c < nch; c++) {
		d->v5->recordEventState(ch[c], ncclProfilerKernelChStop, NULL);
		d->v5->stopEvent(ch[c]);
	}
}

static int rank_main(const struct rank_plan *p, const char *ring_dir, const char *dump_dir,
		     const char *signal_name)
{
	char rank[16];
	snprintf(rank, sizeof(rank), "%d", p->rank);
	setenv("RANK", rank, 1);
	setenv("VIGIL_NCCL_RING_DIR", ring_dir, 1);
	if (dump_dir)
		setenv("VIGIL_NCCL_DUMP_DIR", dump_dir, 1);
	else
		unsetenv("VIGIL_NCCL_DUMP_DIR");
	if (signal_name)
		setenv("VIGIL_NCCL_DUMP_SIGNAL", signal_name, 1);
	setenv("VIGIL_NCCL_JOB", "t1", 1);
	setenv("VIGIL_NCCL_RING_MIB", "1", 1);
	void *lib = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		_exit(44);
	struct drv d = { .api = p->api };
	d.v5 = dlsym(lib, "ncclProfiler_v5");
	d.v4 = dlsym(lib, "ncclProfiler_v4");
	d.v3 = dlsym(lib, "ncclProfiler_v3");
	d.v2 = dlsym(lib, "ncclProfiler_v2");
	d.v1 = dlsym(lib, "ncclProfiler_v1");
	if (!d.v5 || !d.v4 || !d.v3 || !d.v2 || !d.v1)
		_exit(45);
	const uint64_t main_hash = 0x5eed0000a11ull, side_hash = 0x5eed0000b22ull;
	void *ctx = NULL, *ctx2 = NULL;
	drv_init(&d, &ctx, main_hash, p->nranks, p->rank);
	if (p->second_comm && p->rank < 2) {
		if (d.api >= 4)
			drv_init(&d, &ctx2, side_hash, 2, p->rank);
		for (int i = 0; i < 7; i++)
			drv_coll(&d, d.api >= 4 ? ctx2 : ctx, side_hash, p->rank, (uint64_t)i, true,
				 true);
	}
	for (int i = 0; i < p->colls; i++)
		drv_coll(&d, ctx, main_hash, p->rank, (uint64_t)i, i < p->started, i < p->done);
	if (p->finalize)
		d.v5->finalize(ctx);
	if (p->fork_exit) {
		pid_t k = fork();
		if (k == 0)
			exit(0);
		waitpid(k, NULL, 0);
	}
	if (p->end == END_PAUSE || p->end == END_KILLED) {
		/* tell the parent the work is done, then wait to be signalled or killed */
		char ready[4200];
		snprintf(ready, sizeof(ready), "%s/ready-%d", ring_dir, p->rank);
		FILE *f = fopen(ready, "w");
		if (f)
			fclose(f);
		for (;;)
			pause();
	}
	exit(0); /* atexit: the dump */
}

/* Start one process per plan; wait for those that exit; return the pids of the others. */
static void run_ranks(const struct rank_plan *plans, int n, const char *ring_dir,
		      const char *dump_dir, const char *signal_name, pid_t *pids)
{
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			rank_main(&plans[i], ring_dir, dump_dir, signal_name);
		pids[i] = pid;
	}
	for (int i = 0; i < n; i++) {
		if (plans[i].end != END_EXIT)
			continue;
		int st;
		CHECK(waitpid(pids[i], &st, 0) == pids[i]);
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d ended with status %d",
			  plans[i].rank, st);
		pids[i] = 0;
	}
	/* the paused ones: wait until each says its work is done */
	for (int i = 0; i < n; i++) {
		if (!pids[i])
			continue;
		char ready[4200];
		snprintf(ready, sizeof(ready), "%s/ready-%d", ring_dir, plans[i].rank);
		for (int t = 0; t < 1000 && access(ready, F_OK) != 0; t++)
			usleep(10000);
		CHECK_MSG(access(ready, F_OK) == 0, "rank %d never got ready", plans[i].rank);
		unlink(ready);
	}
}

static void reap(pid_t *pids, int n, int sig)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0) {
			kill(pids[i], sig);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
}

static size_t count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name), s = strlen(suffix);
		n += l > s && !strcmp(e->d_name + l - s, suffix);
	}
	if (d)
		closedir(d);
	return n;
}

static void dirs(const char *name, struct strbuf *ring, struct strbuf *dump)
{
	strbuf_reset(ring);
	strbuf_reset(dump);
	strbuf_addf(ring, "%s/%s-shm", test_tmpdir(), name);
	strbuf_addf(dump, "%s/%s-dump", test_tmpdir(), name);
	mkdir(ring->buf, 0700);
	mkdir(dump->buf, 0700);
}

static void four_ranks(struct rank_plan *p, int api, int culprit_colls)
{
	for (int r = 0; r < 4; r++) {
		p[r] = (struct rank_plan){ r, 4, api, 50, 49, 50, true, END_EXIT, false, false };
		if (r == 3)
			p[r].colls = p[r].done = p[r].started = culprit_colls;
	}
}

/* Rank 3 stops before its 50th all_reduce; the others enqueue it and wait in it. */
TEST(nccl_recorder_names_the_rank_that_never_entered)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("never", &ring, &dump);
	struct rank_plan p[4];
	pid_t pids[4];
	four_ranks(p, 5, 49);
	run_ranks(p, 4, ring.buf, dump.buf, NULL, pids);
	CHECK_INT((int)count_files(dump.buf, ".ring"), 4);
	CHECK_INT((int)count_files(ring.buf, ".ring"), 0); /* the live rings went with them */

	struct child c;
	const char *args[] = { "diagnose", "hang", dump.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "source"), "recorder");
	CHECK_STR(json_get_string(json_get(v, "recorder"), "state"), "never_entered");
	double d;
	CHECK(json_get_number(json_path(v, "recorder.culprits.0"), "rank", &d) && d == 3);
	CHECK_STR(json_get_string(json_path(v, "recorder.culprits.0"), "role"), "never_entered");
	CHECK(json_path(v, "recorder.culprits.1") == NULL);
	const struct json_value *main = NULL;
	for (int i = 0; i < 2; i++) {
		char path[64];
		snprintf(path, sizeof(path), "recorder.communicators.%d", i);
		const struct json_value *cm = json_path(v, path);
		CHECK(cm != NULL);
		if (!strcmp(json_get_string(cm, "state"), "never_entered"))
			main = cm;
		else
			CHECK_STR(json_get_string(cm, "state"), "idle"); /* the side communicator */
	}
	CHECK(main != NULL);
	CHECK(json_get_number(json_get(main, "waiting_in"), "index", &d) && d == 50);
	CHECK_STR(json_get_string(json_get(main, "waiting_in"), "op"), "AllReduce");
	CHECK(json_get_number(json_get(main, "waiting_in"), "bytes", &d) && d == 262144 * 4);
	CHECK(json_get_number(json_get(main, "waiting_in"), "nccl_seq", &d) && d == 49);
	CHECK(json_get_number(main, "nranks", &d) && d == 4);
	CHECK_CONTAINS(json_get_string(v, "summary"), "rank 3 (host ");
	CHECK_CONTAINS(json_get_string(v, "summary"), "never entered AllReduce #50, its 50th AllReduce (1.0 MiB Float32)");
	json_free(v);
	child_release(&c);

	const char *targs[] = { "diagnose", "hang", dump.buf, NULL };
	test_run_vigil(&c, targs, NULL);
	CHECK_INT(c.exit_code, 1);
	CHECK_CONTAINS(c.out.buf, "From the NCCL flight recorder:");
	CHECK_CONTAINS(c.out.buf, "the 3 other ranks entered it");
	child_release(&c);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* The same read from the live rings of running processes, nothing written to disk. */
TEST(nccl_recorder_live_rings_are_read_while_the_ranks_run)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("live", &ring, &dump);
	struct rank_plan p[4];
	pid_t pids[4];
	four_ranks(p, 4, 49);
	for (int r = 0; r < 4; r++)
		p[r].end = END_PAUSE;
	run_ranks(p, 4, ring.buf, NULL, NULL, pids);
	CHECK_INT((int)count_files(ring.buf, ".ring"), 4);
	CHECK_INT((int)count_files(dump.buf, ".ring"), 0);
	struct child c;
	const char *args[] = { "diagnose", "hang", ring.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	reap(pids, 4, SIGKILL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	double d;
	CHECK(json_get_number(json_path(v, "recorder.culprits.0"), "rank", &d) && d == 3);
	CHECK(json_path(v, "recorder.culprits.1") == NULL);
	json_free(v);
	/* killed: their rings stay; the next process on the host sweeps the dead ones away */
	CHECK_INT((int)count_files(ring.buf, ".ring"), 4);
	struct rank_plan one = { 0, 1, 5, 1, 1, 1, false, END_EXIT, false, false };
	pid_t pid;
	run_ranks(&one, 1, ring.buf, NULL, NULL, &pid);
	CHECK_INT((int)count_files(ring.buf, ".ring"), 0);
	child_release(&c);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* Every rank finished every collective, the same count: not inside NCCL. */
TEST(nccl_recorder_idle_ranks_mean_a_hang_above_nccl)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("idle", &ring, &dump);
	struct rank_plan p[4];
	pid_t pids[4];
	four_ranks(p, 5, 50);
	for (int r = 0; r < 4; r++)
		p[r].done = 50;
	run_ranks(p, 4, ring.buf, dump.buf, NULL, pids);
	struct child c;
	const char *args[] = { "diagnose", "hang", dump.buf, NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 0);
	CHECK_CONTAINS(c.out.buf, "no rank is inside NCCL");
	CHECK_CONTAINS(c.out.buf, "above NCCL");
	child_release(&c);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* Every rank entered the 50th and none finished; rank 2's GPU never began it. */
TEST(nccl_recorder_stuck_inside_names_the_gpu_that_never_began)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("inside", &ring, &dump);
	struct rank_plan p[4];
	pid_t pids[4];
	four_ranks(p, 5, 50);
	p[3].done = 49;
	p[2].started = 49;
	run_ranks(p, 4, ring.buf, dump.buf, NULL, pids);
	struct child c;
	const char *args[] = { "diagnose", "hang", dump.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(json_get(v, "recorder"), "state"), "stuck_inside");
	double d;
	CHECK(json_get_number(json_path(v, "recorder.culprits.0"), "rank", &d) && d == 2);
	CHECK_STR(json_get_string(json_path(v, "recorder.culprits.0"), "role"), "gpu_never_began");
	CHECK_CONTAINS(json_get_string(v, "summary"), "none finished it");
	json_free(v);
	child_release(&c);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* Older NCCLs (API v1, v2: no GPU channel events): told apart by what they enqueued. */
TEST(nccl_recorder_old_api_versions_without_completion)
{
	for (int api = 1; api <= 3; api++) {
		struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
		char name[16];
		snprintf(name, sizeof(name), "v%d", api);
		dirs(name, &ring, &dump);
		struct rank_plan p[4];
		pid_t pids[4];
		four_ranks(p, api, 49);
		run_ranks(p, 4, ring.buf, dump.buf, NULL, pids);
		struct child c;
		const char *args[] = { "diagnose", "hang", dump.buf, "--json", NULL };
		test_run_vigil(&c, args, NULL);
		CHECK_INT(c.exit_code, 1);
		struct json_value *v = test_parse_json(&c);
		CHECK_STR(json_get_string(json_get(v, "recorder"), "state"),
			  api < 3 ? "behind" : "never_entered");
		double d;
		CHECK(json_get_number(json_path(v, "recorder.culprits.0"), "rank", &d) && d == 3);
		CHECK(json_path(v, "recorder.culprits.1") == NULL);
		json_free(v);
		child_release(&c);
		strbuf_release(&ring);
		strbuf_release(&dump);
	}
}

/* A dump on the signal asked for; a signal the trainer handles itself is left alone. */
static int own_usr2;
static void usr2(int s)
{
	(void)s;
	own_usr2++;
}

TEST(nccl_recorder_dumps_on_its_signal_only_where_free)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("sig", &ring, &dump);
	struct rank_plan p = { 0, 1, 5, 3, 3, 3, false, END_PAUSE, false, false };
	pid_t pid;
	run_ranks(&p, 1, ring.buf, dump.buf, "USR2", &pid);
	CHECK_INT((int)count_files(dump.buf, ".ring"), 0);
	kill(pid, SIGUSR2);
	for (int t = 0; t < 500 && count_files(dump.buf, ".ring") == 0; t++)
		usleep(10000);
	CHECK_INT((int)count_files(dump.buf, ".ring"), 1);
	reap(&pid, 1, SIGKILL);

	/* the same with a trainer that handles SIGUSR2 itself: no dump, the trainer's handler
	 * still runs (here: the process survives the signal) */
	struct strbuf d2 = STRBUF_INIT;
	strbuf_addf(&d2, "%s/sig-dump2", test_tmpdir());
	mkdir(d2.buf, 0700);
	signal(SIGUSR2, usr2);
	run_ranks(&p, 1, ring.buf, d2.buf, "USR2", &pid);
	signal(SIGUSR2, SIG_DFL);
	kill(pid, SIGUSR2);
	usleep(200000);
	CHECK_INT((int)count_files(d2.buf, ".ring"), 0);
	CHECK(kill(pid, 0) == 0);
	reap(&pid, 1, SIGKILL);
	strbuf_release(&d2);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* init refuses (NCCL then runs without the plugin) where the ring cannot be made. */
TEST(nccl_recorder_declines_cleanly_when_it_cannot_record)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		setenv("VIGIL_NCCL_RING_DIR", "/nonexistent/vigil", 1);
		void *lib = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);
		if (!lib)
			_exit(2);
		const ncclProfiler_v5_t *v5 = dlsym(lib, "ncclProfiler_v5");
		void *ctx = NULL;
		int mask = 0;
		int r = v5->init(&ctx, 1, &mask, "c", 1, 2, 0, NULL);
		_exit(r != 0 ? 0 : 1);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* no symbol of a version it does not implement: NCCL falls back or runs without it */
	void *lib = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);
	CHECK(lib != NULL);
	CHECK(dlsym(lib, "ncclProfiler_v6") == NULL);
	CHECK(dlsym(lib, "ncclProfiler_v5") != NULL);
	CHECK(dlsym(lib, "init_v5") == NULL); /* nothing else exported */
	dlclose(lib);
}

/* Missing ranks, the same process twice, and files that are not what they claim. */
TEST(nccl_recorder_missing_ranks_duplicates_and_bad_files)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("bad", &ring, &dump);
	struct rank_plan p[4];
	pid_t pids[4];
	four_ranks(p, 5, 50);
	p[3].done = 49;
	run_ranks(p, 3, ring.buf, dump.buf, NULL, pids); /* rank 3's process never ran */
	/* a truncated copy and garbage with the magic, beside the real ones */
	struct strbuf first = STRBUF_INIT;
	DIR *dd = opendir(dump.buf);
	struct dirent *e;
	while (dd && (e = readdir(dd)))
		if (strstr(e->d_name, ".ring") && !first.len)
			strbuf_addf(&first, "%s/%s", dump.buf, e->d_name);
	if (dd)
		closedir(dd);
	struct strbuf raw = STRBUF_INIT;
	CHECK(read_file_bounded(first.buf, &raw, 8 << 20, NULL) == READ_OK);
	test_write_bytes(dump.buf, "cut.ring", raw.buf, raw.len / 2);
	test_write_bytes(dump.buf, "junk.ring", "VIGILNR1\xff\xff\xff\xff garbage", 21);
	/* the same process's dump twice (a copy of one of them): counted once */
	test_write_bytes(dump.buf, "zz-copy.ring", raw.buf, raw.len);
	struct child c;
	const char *args[] = { "diagnose", "hang", dump.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 3); /* the missing rank decides it: could not tell */
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(json_get(v, "recorder"), "state"), "incomplete");
	CHECK(json_path(v, "recorder.culprits.0") == NULL);
	double d;
	CHECK(json_get_number(json_path(v, "recorder.communicators.0"), "ranks_seen", &d) && d == 3);
	const struct json_value *miss = json_path(v, "recorder.communicators.0.missing_ranks.0");
	CHECK(miss != NULL);
	CHECK_CONTAINS(json_get_string(v, "summary"), "some ranks have no readable file");
	CHECK_CONTAINS(c.out.buf, "cut.ring");
	CHECK_CONTAINS(c.out.buf, "cut short");
	CHECK_CONTAINS(c.out.buf, "junk.ring");
	json_free(v);
	/* a planted link to a ring is not followed inside a directory */
	struct strbuf link = STRBUF_INIT;
	strbuf_addf(&link, "%s/evil.ring", dump.buf);
	CHECK(symlink(first.buf, link.buf) == 0);
	child_release(&c);
	test_run_vigil(&c, args, NULL);
	CHECK_CONTAINS(c.out.buf, "evil.ring");
	CHECK_CONTAINS(c.out.buf, "symbolic link, not a regular file");
	CHECK_NOT_CONTAINS(c.out.buf, "a a ");
	/* nothing at all: could not tell */
	struct strbuf empty = STRBUF_INIT;
	strbuf_addf(&empty, "%s/empty", test_tmpdir());
	mkdir(empty.buf, 0700);
	const char *eargs[] = { "diagnose", "hang", empty.buf, NULL };
	child_release(&c);
	test_run_vigil(&c, eargs, NULL);
	CHECK_INT(c.exit_code, 3);
	const char *nargs[] = { "diagnose", "hang", NULL };
	child_release(&c);
	test_run_vigil(&c, nargs, NULL);
	CHECK_INT(c.exit_code, 2);
	child_release(&c);
	strbuf_release(&empty);
	strbuf_release(&link);
	strbuf_release(&raw);
	strbuf_release(&first);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* The parser against what it must refuse: every length of a real file's prefix. */
TEST(nccl_ring_parser_refuses_short_and_wrong_files)
{
	struct nrec_header hd;
	memset(&hd, 0, sizeof(hd));
	memcpy(hd.magic, NREC_MAGIC, 8);
	hd.version = NREC_VERSION;
	hd.header_size = sizeof(hd);
	hd.record_size = sizeof(struct nrec_record);
	hd.capacity = 4;
	hd.ncomms = 1000; /* more than the table, which the writer then shares: clamped */
	hd.comms[NREC_COMMS_MAX - 1].flags = NREC_COMM_SHARED;
	hd.comms[0].coll_enqueued = 9; /* every operation counted by its communicator */
	hd.written = 9;
	size_t len = sizeof(hd) + 4 * sizeof(struct nrec_record);
	char *buf = calloc(1, len);
	memcpy(buf, &hd, sizeof(hd));
	struct nring *r = malloc(sizeof(*r));
	struct strbuf err = STRBUF_INIT;
	CHECK_INT(nring_parse(buf, len, r, &err), 0);
	CHECK_INT((int)r->ncomms, NREC_COMMS_MAX);
	CHECK_INT((int)r->records, 0);
	CHECK_INT((int)r->torn, 4); /* zeroed records are not records */
	for (size_t cut = 0; cut < len; cut += 997) {
		strbuf_reset(&err);
		CHECK_INT(nring_parse(buf, cut, r, &err), -1);
		CHECK(err.len > 0);
	}
	hd.version = 99;
	memcpy(buf, &hd, sizeof(hd));
	strbuf_reset(&err);
	CHECK_INT(nring_parse(buf, len, r, &err), -1);
	CHECK_CONTAINS(err.buf, "version 99");
	free(buf);
	free(r);
	strbuf_release(&err);
}

/* Recorded on the lent H200 (bench/nccl-recorder.sh): PyTorch 2.11 DDP on NCCL 2.28.9, rank 1
 * stopped before its 50th all_reduce, the watchdog fired on rank 0 after 45 s. From the logs
 * alone (no recorder file), rank 1 is named. */
TEST(nccl_hang_real_torch_watchdog_logs_name_the_rank)
{
	struct strbuf dir = STRBUF_INIT;
	test_src_path(&dir, "tests/data/hang/torch-2.11-device");
	struct child c;
	const char *args[] = { "diagnose", "hang", dir.buf, "--json", NULL };
	test_run_vigil(&c, args, NULL);
	CHECK_INT(c.exit_code, 1);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(v, "source"), "logs");
	CHECK_STR(json_get_string(json_get(v, "logs"), "verdict"), "culprit");
	double d;
	CHECK(json_get_number(json_path(v, "logs.groups.0.culprits.0"), "rank", &d) && d == 1);
	CHECK_STR(json_get_string(json_path(v, "logs.groups.0.culprits.0"), "why"), "never_entered");
	CHECK(json_get_number(json_path(v, "logs.groups.0"), "seq", &d) && d == 55);
	CHECK_STR(json_get_string(json_path(v, "logs.groups.0"), "op"), "ALLREDUCE");
	json_free(v);
	child_release(&c);
	strbuf_release(&dir);
}

/* A vigil run directory: its last attempt by default, every attempt with --all (the hang of
 * attempt 0 is not seen from attempt 1, where the run went on). */
TEST(nccl_hang_run_directory_last_attempt_or_all)
{
	struct strbuf src = STRBUF_INIT, raw = STRBUF_INIT, run = STRBUF_INIT;
	const char *names[] = { "rank-0.err", "rank-0.out", "rank-1.err", "rank-1.out" };
	for (size_t i = 0; i < 4; i++) {
		strbuf_reset(&src);
		test_src_path(&src, "tests/data/hang/torch-2.11-device/");
		strbuf_addstr(&src, names[i]);
		strbuf_reset(&raw);
		CHECK(read_file_bounded(src.buf, &raw, 1 << 20, NULL) == READ_OK);
		char rel[64];
		snprintf(rel, sizeof(rel), "run/attempt-0/%s", names[i]);
		test_write_bytes(test_tmpdir(), rel, raw.buf, raw.len);
	}
	test_write(test_tmpdir(), "run/attempt-1/rank-0.out",
		   "2026-12-01T05:50:00.000Z step 60 loss 0.1\n");
	test_write(test_tmpdir(), "run/attempt-1/rank-1.out",
		   "2026-12-01T05:50:00.000Z step 60 loss 0.1\n");
	strbuf_addf(&run, "%s/run", test_tmpdir());
	struct child c;
	const char *last[] = { "diagnose", "hang", run.buf, "--json", NULL };
	test_run_vigil(&c, last, NULL);
	CHECK_INT(c.exit_code, 3);
	struct json_value *v = test_parse_json(&c);
	CHECK_STR(json_get_string(json_get(v, "logs"), "verdict"), "unknown");
	json_free(v);
	child_release(&c);
	const char *all[] = { "diagnose", "hang", run.buf, "--all", "--json", NULL };
	test_run_vigil(&c, all, NULL);
	CHECK_INT(c.exit_code, 1);
	v = test_parse_json(&c);
	CHECK_STR(json_get_string(json_get(v, "logs"), "verdict"), "culprit");
	json_free(v);
	child_release(&c);
	strbuf_release(&src);
	strbuf_release(&raw);
	strbuf_release(&run);
}

/* A forked child that calls exit() runs the atexit handlers it inherited: it must neither dump
 * its parent's ring nor remove it. */
TEST(nccl_recorder_forked_child_leaves_the_parents_ring_alone)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("fork", &ring, &dump);
	struct rank_plan p = { 0, 1, 5, 3, 3, 3, false, END_PAUSE, false, true };
	pid_t pid;
	run_ranks(&p, 1, ring.buf, dump.buf, NULL, &pid);
	CHECK_INT((int)count_files(ring.buf, ".ring"), 1);
	CHECK_INT((int)count_files(dump.buf, ".ring"), 0);
	reap(&pid, 1, SIGKILL);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* ---- issue 17: a recorder never kills a trainer, never removes a live ring, and a damaged
 * ring is unknown, never evidence ---- */


/* In a child: a private mount namespace with a 1 MiB tmpfs at dir, nearly filled (what a
 * /dev/shm full of other jobs' files looks like). 0, or -1 where this host cannot. */
static int tiny_tmpfs(const char *dir, size_t leave)
{
	if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0)
		return -1;
	char fill[4200];
	snprintf(fill, sizeof(fill), "%s/filler", dir);
	int fd = open(fill, O_WRONLY | O_CREAT, 0600);
	static char zero[4096];
	for (size_t n = 0; fd >= 0 && n + leave < (1u << 20); n += sizeof(zero))
		if (write(fd, zero, sizeof(zero)) != (ssize_t)sizeof(zero))
			break;
	if (fd >= 0)
		close(fd);
	return 0;
}

/* /dev/shm nearly full: ftruncate succeeds, and the trainer died of SIGBUS on the recorder's
 * first store into the ring. Now the recorder reserves the pages first, and declines. */
TEST(nccl_recorder_full_ring_dir_declines_instead_of_sigbus)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT, errf = STRBUF_INIT;
	dirs("full", &ring, &dump);
	strbuf_addf(&errf, "%s/full-stderr", test_tmpdir());
	const char *plugin = plugin_path();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (tiny_tmpfs(ring.buf, 8192) != 0)
			_exit(77);
		int e = open(errf.buf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(e, 2);
		setenv("VIGIL_NCCL_RING_DIR", ring.buf, 1);
		setenv("VIGIL_NCCL_RING_MIB", "1", 1);
		setenv("RANK", "0", 1);
		void *lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
		if (!lib)
			_exit(44);
		struct drv d = { .api = 5 };
		d.v5 = dlsym(lib, "ncclProfiler_v5");
		void *ctx = NULL;
		int mask = 0;
		int r = d.v5->init(&ctx, 1, &mask, "c", 1, 2, 0, NULL);
		/* where init succeeds, NCCL records into the ring: 1,000 collectives (125 KiB of
		 * records) is where the sparse ring met the full tmpfs */
		for (int i = 0; r == 0 && i < 1000; i++)
			drv_coll(&d, ctx, 1, 0, (uint64_t)i, true, true);
		/* the trainer goes on (NCCL without the plugin); the ring is nowhere */
		_exit(r != 0 && count_files(ring.buf, ".ring") == 0 ? 0 : 1);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		test_skip("no private mount namespace for a small tmpfs here");
	struct strbuf msg = STRBUF_INIT;
	CHECK(read_file_bounded(errf.buf, &msg, 1 << 16, NULL) == READ_OK);
	/* SIGBUS, or ASan's report of it (ASan turns it into exit 1) */
	CHECK_MSG(!WIFSIGNALED(st), "the trainer died of signal %d", WTERMSIG(st));
	CHECK_NOT_CONTAINS(msg.buf, "BUS on");
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	CHECK_CONTAINS(msg.buf, "vigil nccl recorder: not recording: cannot reserve its ring in '");
	CHECK_CONTAINS(msg.buf, "No space left on device");
	strbuf_release(&msg);
	strbuf_release(&errf);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* A rank in a pid namespace of its own (a container sharing the ring directory): its child
 * there runs plan p (pid 1 of the namespace, a /proc of its own). Writes that child's pid as
 * seen from here to *inner; returns the pid of the process between, or -1 (skipped). */
static pid_t rank_in_new_pidns(const struct rank_plan *p, const char *ring_dir, pid_t *inner)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t mid = fork();
	if (mid == 0) {
		close(fds[0]);
		if (unshare(CLONE_NEWNS | CLONE_NEWPID) != 0 ||
		    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
			_exit(77);
		pid_t k = fork();
		if (k == 0) {
			if (mount("proc", "/proc", "proc", 0, NULL) != 0)
				_exit(78);
			rank_main(p, ring_dir, NULL, NULL);
		}
		if (write(fds[1], &k, sizeof(k)) != (ssize_t)sizeof(k))
			_exit(79);
		int st;
		waitpid(k, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 80);
	}
	close(fds[1]);
	*inner = 0;
	if (read(fds[0], inner, sizeof(*inner)) != (ssize_t)sizeof(*inner))
		*inner = 0;
	close(fds[0]);
	return mid;
}

/* The sweep of dead rings took kill(pid, 0) for proof: from another pid namespace sharing
 * /dev/shm, a live rank's pid does not exist, and its ring was removed. Now a ring is removed
 * only where its header's pid namespace is the sweeper's and that pid is gone or another
 * process (another start time). */
TEST(nccl_recorder_sweep_keeps_live_rings_of_other_pid_namespaces)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("pidns", &ring, &dump);
	/* a live rank here */
	struct rank_plan live = { 0, 2, 5, 3, 3, 3, false, END_PAUSE, false, false };
	pid_t lpid;
	run_ranks(&live, 1, ring.buf, NULL, NULL, &lpid);
	CHECK_INT((int)count_files(ring.buf, ".ring"), 1);
	/* a rank in another pid namespace starts (and sweeps), records, exits */
	struct rank_plan other = { 1, 2, 5, 3, 3, 3, false, END_EXIT, false, false };
	pid_t inner, mid = rank_in_new_pidns(&other, ring.buf, &inner);
	CHECK(mid > 0);
	int st;
	CHECK(waitpid(mid, &st, 0) == mid);
	if (WIFEXITED(st) && (WEXITSTATUS(st) == 77 || WEXITSTATUS(st) == 78)) {
		reap(&lpid, 1, SIGKILL);
		test_skip("no new pid namespace here");
	}
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	CHECK_MSG(count_files(ring.buf, ".ring") == 1, "the live rank's ring was removed");

	/* the other way: a live ring of the other namespace (pid 1 there) outlives this one's
	 * sweep */
	other.end = END_PAUSE;
	mid = rank_in_new_pidns(&other, ring.buf, &inner);
	CHECK(mid > 0 && inner > 0);
	char ready[4200];
	snprintf(ready, sizeof(ready), "%s/ready-1", ring.buf);
	for (int t = 0; t < 1000 && access(ready, F_OK) != 0; t++)
		usleep(10000);
	unlink(ready);
	CHECK_INT((int)count_files(ring.buf, ".ring"), 2);
	struct rank_plan next = { 0, 1, 5, 1, 1, 1, false, END_EXIT, false, false };
	pid_t npid;
	run_ranks(&next, 1, ring.buf, NULL, NULL, &npid);
	CHECK_MSG(count_files(ring.buf, ".ring") == 2, "a live ring was removed");
	kill(inner, SIGKILL);
	waitpid(mid, NULL, 0);
	reap(&lpid, 1, SIGKILL);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* The first ring file in dir (its name into *name), read whole into *raw. */
static void first_ring(const char *dir, struct strbuf *name, struct strbuf *raw)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	strbuf_reset(name);
	strbuf_reset(raw);
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".ring") && !name->len)
			strbuf_addstr(name, e->d_name);
	if (d)
		closedir(d);
	struct strbuf path = STRBUF_INIT;
	strbuf_addf(&path, "%s/%s", dir, name->buf);
	CHECK(read_file_bounded(path.buf, raw, 8 << 20, NULL) == READ_OK);
	strbuf_release(&path);
}

/* A pid reused by another process (another start time) is provably gone; the same pid and
 * start time is not; a file of another user, or of the old format, is never removed. */
TEST(nccl_recorder_sweep_removes_only_provably_dead_owners)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT, name = STRBUF_INIT, raw = STRBUF_INIT;
	dirs("reuse", &ring, &dump);
	struct rank_plan live = { 0, 2, 5, 3, 3, 3, false, END_PAUSE, false, false };
	pid_t lpid;
	run_ranks(&live, 1, ring.buf, NULL, NULL, &lpid);
	first_ring(ring.buf, &name, &raw);
	CHECK(raw.len > sizeof(struct nrec_header));
	struct nrec_header *h = (struct nrec_header *)raw.buf;
	CHECK_INT((int)h->version, 2);
	CHECK(h->start_ticks > 0 && h->pidns_ino > 0);
	/* names the sweep considers: PREFIX-PID.N.ring */
	char *dot = strstr(name.buf, ".ring");
	CHECK(dot != NULL);
	*dot = 0;
	char n[4][300];
	for (int i = 0; i < 4; i++)
		snprintf(n[i], sizeof(n[i]), "%s.%d.ring", name.buf, 5 + i);
	test_write_bytes(ring.buf, n[0], raw.buf, raw.len); /* the same process: kept */
	h->start_ticks++;
	test_write_bytes(ring.buf, n[1], raw.buf, raw.len); /* the pid, reused: removed */
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/%s", ring.buf, n[2]);
	test_write_bytes(ring.buf, n[2], raw.buf, raw.len); /* another user's: kept */
	CHECK(chown(p.buf, 65534, 65534) == 0);
	h->version = 1;
	test_write_bytes(ring.buf, n[3], raw.buf, raw.len); /* the old format: kept */
	struct rank_plan next = { 1, 2, 5, 1, 1, 1, false, END_EXIT, false, false };
	pid_t npid;
	run_ranks(&next, 1, ring.buf, NULL, NULL, &npid);
	struct stat st;
	for (int i = 0; i < 4; i++) {
		strbuf_reset(&p);
		strbuf_addf(&p, "%s/%s", ring.buf, n[i]);
		CHECK_MSG((stat(p.buf, &st) == 0) == (i != 1), "%s: %s", n[i],
			  i == 1 ? "not removed" : "removed");
	}
	reap(&lpid, 1, SIGKILL);
	strbuf_release(&p);
	strbuf_release(&name);
	strbuf_release(&raw);
	strbuf_release(&ring);
	strbuf_release(&dump);
}

/* Two ranks' dumps (rank 0 enqueues c0 and completes d0, rank 1 c1 and d1) in dump/; the
 * path of rank r's dump into *path. */
static void two_ranks(const char *name, int c0, int d0, int c1, int d1, struct strbuf *dump)
{
	struct strbuf ring = STRBUF_INIT;
	dirs(name, &ring, dump);
	struct rank_plan p[2] = {
		{ 0, 2, 5, c0, d0, c0, false, END_EXIT, false, false },
		{ 1, 2, 5, c1, d1, c1, false, END_EXIT, false, false },
	};
	pid_t pids[2];
	run_ranks(p, 2, ring.buf, dump->buf, NULL, pids);
	strbuf_release(&ring);
}

static void rank_dump(const char *dir, int rank, struct strbuf *path, struct strbuf *raw)
{
	char want[16];
	snprintf(want, sizeof(want), "-r%d-", rank);
	DIR *d = opendir(dir);
	struct dirent *e;
	strbuf_reset(path);
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, want) && strstr(e->d_name, ".ring") && !path->len)
			strbuf_addf(path, "%s/%s", dir, e->d_name);
	if (d)
		closedir(d);
	CHECK_MSG(path->len, "no dump of rank %d in %s", rank, dir);
	strbuf_reset(raw);
	CHECK(read_file_bounded(path->buf, raw, 8 << 20, NULL) == READ_OK);
}

static void put(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, buf, len) == (ssize_t)len);
	close(fd);
}

static void run_hang(struct child *c, const char *dir, struct json_value **v)
{
	const char *args[] = { "diagnose", "hang", dir, "--json", NULL };
	test_run_vigil(c, args, NULL);
	*v = test_parse_json(c);
	CHECK(*v != NULL);
}

/* Rank 1 stops before the 50th collective; rank 0 (the victim) waits in it. The victim's ring
 * cut short made 'diagnose hang' say the missing rank (the victim) is "likely the one that
 * never entered", exit 1. A rank with no readable file is unknown: exit 3, no culprit. */
TEST(nccl_hang_truncated_ring_of_the_victim_is_unknown_not_evidence)
{
	struct strbuf dump = STRBUF_INIT, path = STRBUF_INIT, raw = STRBUF_INIT;
	two_ranks("cutv", 50, 49, 49, 49, &dump);
	for (int victim_cut = 1; victim_cut >= 0; victim_cut--) {
		int who = victim_cut ? 0 : 1;
		rank_dump(dump.buf, who, &path, &raw);
		put(path.buf, raw.buf, raw.len - 4096); /* the end of its records gone */
		struct child c;
		struct json_value *v;
		run_hang(&c, dump.buf, &v);
		CHECK_MSG(c.exit_code == 3, "rank %d cut: exit %d", who, c.exit_code);
		CHECK_STR(json_get_string(json_get(v, "recorder"), "state"), "incomplete");
		CHECK(json_path(v, "recorder.culprits.0") == NULL);
		CHECK_NOT_CONTAINS(json_get_string(v, "summary"), "likely");
		CHECK_CONTAINS(json_get_string(v, "summary"), "cannot tell");
		CHECK_CONTAINS(c.out.buf, "cut short: 8192 records announced, room for 8160");
		json_free(v);
		child_release(&c);
		put(path.buf, raw.buf, raw.len);
	}
	/* whole again: rank 1 named */
	struct child c;
	struct json_value *v;
	run_hang(&c, dump.buf, &v);
	CHECK_INT(c.exit_code, 1);
	double d;
	CHECK(json_get_number(json_path(v, "recorder.culprits.0"), "rank", &d) && d == 1);
	json_free(v);
	child_release(&c);
	strbuf_release(&raw);
	strbuf_release(&path);
	strbuf_release(&dump);
}

/* Two healthy ranks, idle after the same 50 collectives. A damaged counter in rank 1's ring
 * (it "enqueued 49") made it the rank that never entered, exit 1, a healthy rank blamed. The
 * counters are checked against `written` and against the records: damaged is unknown. */
TEST(nccl_hang_damaged_ring_is_unknown_never_a_culprit)
{
	struct strbuf dump = STRBUF_INIT, path = STRBUF_INIT, raw = STRBUF_INIT;
	two_ranks("dmg", 50, 50, 50, 50, &dump);
	rank_dump(dump.buf, 1, &path, &raw);
	struct nrec_header h;
	for (int variant = 0; variant < 4; variant++) {
		struct strbuf bad = STRBUF_INIT;
		strbuf_add(&bad, raw.buf, raw.len);
		memcpy(&h, bad.buf, sizeof(h));
		struct nrec_record *rec = (struct nrec_record *)(bad.buf + sizeof(h));
		const char *why = "";
		switch (variant) {
		case 0: /* one counter damaged */
			h.comms[0].coll_enqueued = h.comms[0].coll_done = h.comms[0].coll_started = 49;
			why = "the counters disagree: 50 operations in the ring, 49 counted";
			break;
		case 1: /* counters and written agree, the records do not */
			h.comms[0].coll_enqueued = h.comms[0].coll_done = h.comms[0].coll_started = 49;
			h.written = 49;
			rec[48].op_index = 50;
			why = "record 48 says collective 50 of communicator 0, which counted 49";
			break;
		case 2: /* indexes that go backwards */
			rec[20].op_index = 40;
			why = "its indexes go backwards";
			break;
		case 3: /* more completed than enqueued */
			h.comms[0].coll_done = 51;
			why = "communicator 0's counters disagree: 50 collectives enqueued, 50 "
			      "started, 51 completed";
			break;
		}
		memcpy(bad.buf, &h, sizeof(h));
		put(path.buf, bad.buf, bad.len);
		struct child c;
		struct json_value *v;
		run_hang(&c, dump.buf, &v);
		CHECK_MSG(c.exit_code == 3, "variant %d: exit %d", variant, c.exit_code);
		CHECK(json_path(v, "recorder.culprits.0") == NULL);
		CHECK_CONTAINS(c.out.buf, path.buf);
		CHECK_CONTAINS(c.out.buf, why);
		json_free(v);
		child_release(&c);
		strbuf_release(&bad);
	}
	put(path.buf, raw.buf, raw.len);
	struct child c;
	struct json_value *v;
	run_hang(&c, dump.buf, &v);
	CHECK_INT(c.exit_code, 0);
	json_free(v);
	child_release(&c);
	strbuf_release(&raw);
	strbuf_release(&path);
	strbuf_release(&dump);
}

/* A 3 GiB sparse file whose header claims 3 GiB of records took 1 GB of memory and was
 * refused with an empty message. Its size is checked before anything is read: a clear
 * message naming the file, at once; and one within the bound that the file cannot hold. */
TEST(nccl_hang_huge_sparse_ring_is_refused_at_once_by_name)
{
	struct strbuf dump = STRBUF_INIT, path = STRBUF_INIT, raw = STRBUF_INIT;
	two_ranks("huge", 50, 49, 49, 49, &dump);
	rank_dump(dump.buf, 0, &path, &raw);
	struct nrec_header h;
	memcpy(&h, raw.buf, sizeof(h));
	uint64_t three = (uint64_t)3 << 30;
	h.capacity = (uint32_t)((three - sizeof(h)) / sizeof(struct nrec_record));
	/* in place of rank 0's dump: rank 0 is then unknown */
	CHECK(unlink(path.buf) == 0);
	struct strbuf big = STRBUF_INIT;
	strbuf_addf(&big, "%s/huge.ring", dump.buf);
	int fd = open(big.buf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h));
	CHECK(ftruncate(fd, (off_t)three) == 0);
	close(fd);
	struct child c;
	struct json_value *v;
	run_hang(&c, dump.buf, &v);
	CHECK_INT(c.exit_code, 3);
	CHECK(json_path(v, "recorder.culprits.0") == NULL);
	CHECK_CONTAINS(c.out.buf, "cannot use '");
	CHECK_CONTAINS(c.out.buf, "huge.ring': recorder header claims 25165693 records, more "
				  "than the recorder ever makes (8388608, 1024 MiB)");
	json_free(v);
	child_release(&c);
	/* within the bound, but the file is 1 MiB: cut short, without reading or allocating */
	h.capacity = 8000000;
	fd = open(big.buf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h));
	CHECK(ftruncate(fd, 1 << 20) == 0);
	close(fd);
	run_hang(&c, dump.buf, &v);
	CHECK_CONTAINS(c.out.buf, "huge.ring': recorder file cut short: 8000000 records "
				  "announced, room for 8061");
	json_free(v);
	child_release(&c);
	strbuf_release(&big);
	strbuf_release(&raw);
	strbuf_release(&path);
	strbuf_release(&dump);
}

/* Two files for one rank: another process's (another pid), or a copy of the real one planted
 * by another user with more written (which "the one that saw more" used to keep). Doubt:
 * no culprit, exit 3. */
TEST(nccl_hang_two_rings_for_one_rank_are_doubt)
{
	struct strbuf dump = STRBUF_INIT, path = STRBUF_INIT, raw = STRBUF_INIT;
	two_ranks("dup", 50, 50, 50, 50, &dump);
	rank_dump(dump.buf, 1, &path, &raw);
	struct nrec_header h;
	memcpy(&h, raw.buf, sizeof(h));
	struct strbuf bad = STRBUF_INIT, planted = STRBUF_INIT;
	for (int variant = 0; variant < 2; variant++) {
		strbuf_reset(&bad);
		strbuf_add(&bad, raw.buf, raw.len);
		struct nrec_header f = h;
		/* rank 1 "behind" at 49, consistent in itself: records 0..48 only */
		f.comms[0].coll_enqueued = f.comms[0].coll_done = f.comms[0].coll_started = 49;
		f.written = 49;
		if (variant == 0)
			f.pid = h.pid + 100000; /* another process claiming rank 1 */
		memcpy(bad.buf, &f, sizeof(f));
		strbuf_reset(&planted);
		strbuf_addf(&planted, "%s/planted.ring", dump.buf);
		put(planted.buf, bad.buf, bad.len);
		if (variant == 1)
			CHECK(chown(planted.buf, 65534, 65534) == 0); /* the same pid, another owner */
		struct child c;
		struct json_value *v;
		run_hang(&c, dump.buf, &v);
		CHECK_MSG(c.exit_code == 3, "variant %d: exit %d", variant, c.exit_code);
		CHECK(json_path(v, "recorder.culprits.0") == NULL);
		CHECK_STR(json_get_string(json_get(v, "recorder"), "state"), "incomplete");
		double d;
		CHECK(json_get_number(json_path(v, "recorder.communicators.0"), "duplicate_ranks", &d) &&
		      d == 1);
		CHECK_CONTAINS(json_get_string(v, "summary"), "more than one recorder file");
		json_free(v);
		child_release(&c);
		unlink(planted.buf);
	}
	strbuf_release(&planted);
	strbuf_release(&bad);
	strbuf_release(&raw);
	strbuf_release(&path);
	strbuf_release(&dump);
}

/* Header fields at their limits, and names that are not files: each refused by name, none
 * a culprit, none blocks (a FIFO named like a ring). */
TEST(nccl_hang_hostile_headers_and_names_are_refused)
{
	struct strbuf dump = STRBUF_INIT, path = STRBUF_INIT, raw = STRBUF_INIT;
	two_ranks("hostile", 50, 50, 50, 50, &dump);
	rank_dump(dump.buf, 1, &path, &raw);
	struct nrec_header h;
	memcpy(&h, raw.buf, sizeof(h));
	for (int variant = 0; variant < 5; variant++) {
		struct nrec_header f = h;
		const char *why = "";
		switch (variant) {
		case 0: f.capacity = UINT32_MAX; why = "claims 4294967295 records"; break;
		case 1: f.comms[0].rank = -1; why = "communicator 0 says rank -1 of 2"; break;
		case 2: f.comms[0].rank = INT32_MAX; why = "says rank 2147483647 of 2"; break;
		case 3: f.comms[0].coll_enqueued = UINT64_MAX; why = "counters"; break;
		case 4: f.version = 1; why = "recorder format version 1, this vigil reads version 2 only (an older"; break;
		}
		struct strbuf bad = STRBUF_INIT;
		strbuf_add(&bad, raw.buf, raw.len);
		memcpy(bad.buf, &f, sizeof(f));
		put(path.buf, bad.buf, bad.len);
		struct child c;
		struct json_value *v;
		run_hang(&c, dump.buf, &v);
		CHECK_MSG(c.exit_code == 3, "variant %d: exit %d", variant, c.exit_code);
		CHECK(json_path(v, "recorder.culprits.0") == NULL);
		CHECK_CONTAINS(c.out.buf, why);
		json_free(v);
		child_release(&c);
		strbuf_release(&bad);
	}
	put(path.buf, raw.buf, raw.len);
	/* a FIFO and a directory named like rings: refused, nothing blocks */
	struct strbuf fifo = STRBUF_INIT;
	strbuf_addf(&fifo, "%s/fifo.ring", dump.buf);
	CHECK(mkfifo(fifo.buf, 0600) == 0);
	strbuf_reset(&fifo);
	strbuf_addf(&fifo, "%s/dir.ring", dump.buf);
	CHECK(mkdir(fifo.buf, 0700) == 0);
	struct child c;
	struct json_value *v;
	run_hang(&c, dump.buf, &v);
	CHECK_CONTAINS(c.out.buf, "fifo.ring': a FIFO, not a regular file");
	CHECK_CONTAINS(c.out.buf, "dir.ring': a directory, not a regular file");
	CHECK_INT(c.exit_code, 3); /* idle, but with files refused: not healthy */
	json_free(v);
	child_release(&c);
	strbuf_release(&fifo);
	strbuf_release(&raw);
	strbuf_release(&path);
	strbuf_release(&dump);
}

/* The dump directory full when the trainer exits or gets its dump signal: the dump fails
 * (no half file left), the trainer exits normally or lives on. */
TEST(nccl_recorder_full_dump_dir_loses_the_dump_not_the_trainer)
{
	struct strbuf ring = STRBUF_INIT, dump = STRBUF_INIT;
	dirs("dfull", &ring, &dump);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (tiny_tmpfs(dump.buf, 0) != 0)
			_exit(77);
		pid_t k = fork();
		if (k == 0) {
			struct rank_plan p = { 0, 1, 5, 50, 50, 50, false, END_EXIT, false, false };
			rank_main(&p, ring.buf, dump.buf, "USR1");
		}
		int st;
		waitpid(k, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			_exit(1);
		/* no dump, no temporary left */
		_exit(count_files(dump.buf, ".ring") == 0 && count_files(dump.buf, ".tmp") == 0 ? 0 : 2);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		test_skip("no private mount namespace for a small tmpfs here");
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	strbuf_release(&ring);
	strbuf_release(&dump);
}
