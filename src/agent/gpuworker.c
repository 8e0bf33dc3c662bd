/* gpuworker.c: the agent's long-lived gpu worker process (see gpuworker.h). */
#include "gpuworker.h"
#include "../checks/runner.h"
#include "../core/report.h"
#include "../gpu/nvml.h"
#include "../gpu/snapshot.h"
#include "../lib/fileio.h"
#include "../lib/json.h"
#include "telemetry.h"
#include "xidwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define ANSWER_CAP (8u << 20)
#define DRAIN_CAP (1u << 20)
#define TEL_CAP (TELEMETRY_MAX_GPUS * sizeof(struct nvml_gpu) + 4096)
/* How long the agent waits for a drain alone (after the kernel log was read): NVML's wait with
 * a zero timeout returns at once; a worker that does not answer by then is stuck and killed. */
#define DRAIN_WAIT_MS 3000

struct gpu_worker_unreaped {
	pid_t pid;
	double cpu_s;
};


static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static double self_cpu(void)
{
	struct rusage ru[2];
	getrusage(RUSAGE_SELF, &ru[0]);
	getrusage(RUSAGE_CHILDREN, &ru[1]);
	double s = 0;
	for (int i = 0; i < 2; i++)
		s += (double)ru[i].ru_utime.tv_sec + (double)ru[i].ru_utime.tv_usec / 1e6 +
		     (double)ru[i].ru_stime.tv_sec + (double)ru[i].ru_stime.tv_usec / 1e6;
	return s;
}

/* "E LEN\n" and a drain as JSON: what NVML queued since the last one (xidwatch.h). */
static int send_drain(int out)
{
	struct nvml_xid_drain *d = xmalloc(sizeof(*d));
	struct strbuf js = STRBUF_INIT, head = STRBUF_INIT;
	nvml_xid_drain(d);
	xidwatch_drain_json(d, &js);
	strbuf_addf(&head, "E %zu\n", js.len);
	int r = write_all(out, head.buf, head.len) < 0 || write_all(out, js.buf, js.len) < 0 ? -1 : 0;
	strbuf_release(&js);
	strbuf_release(&head);
	free(d);
	return r;
}

/* The agent's telemetry record (gpu_worker_metrics()): one per process, as there is one agent. */
static struct gpu_telemetry tel;
static pthread_mutex_t tel_lock = PTHREAD_MUTEX_INITIALIZER;

void gpu_worker_init(struct gpu_worker *w, const struct check_def *def, const struct check_ctx *ctx)
{
	memset(w, 0, sizeof(*w));
	w->def = def;
	w->ctx = *ctx;
	w->req_fd = w->resp_fd = -1;
	if (!def) { /* no worker (a reload turned it off): no telemetry to serve either */
		pthread_mutex_lock(&tel_lock);
		telemetry_release(&tel);
		pthread_mutex_unlock(&tel_lock);
	}
}

/* In the worker: what the gpu check's NVML read said, encoded as it is read (nvml_on_read()). */
static struct {
	struct strbuf buf;
	double now;
} worker_tel = { STRBUF_INIT, 0 };

static void worker_tel_hook(const struct nvml_host *h, void *arg)
{
	(void)arg;
	strbuf_reset(&worker_tel.buf);
	/* also with no GPU read (nvmlInit failed): the agent then drops the last readings rather
	 * than serve them as if current */
	telemetry_encode(h, worker_tel.now, &worker_tel.buf);
}

/* "S LEN\n" and a fresh NVML reading as a snapshot (GET /gpu-reading), or "X LEN\n" and why
 * there is none: a host without NVML has nothing a snapshot could say. */
static int send_reading(const struct gpu_worker *w, bool skip_counters, int out)
{
	struct nvml_host h;
	struct strbuf body = STRBUF_INIT, head = STRBUF_INIT, err = STRBUF_INIT;
	nvml_host_init(&h);
	h.skip_link_counters = skip_counters;
	if (nvml_read_host(w->ctx.root, &h, &err) < 0 || h.avail == NVML_NO_LIBRARY)
		strbuf_addstr(&body, err.len ? err.buf : h.note ? h.note : "no NVML");
	else
		nvml_snapshot_format(&h, &body);
	strbuf_addf(&head, "%c %zu\n", err.len || h.avail == NVML_NO_LIBRARY ? 'X' : 'S', body.len);
	int r = write_all(out, head.buf, head.len) < 0 || write_all(out, body.buf, body.len) < 0 ? -1 : 0;
	nvml_host_release(&h);
	strbuf_release(&body);
	strbuf_release(&head);
	strbuf_release(&err);
	return r;
}

/*
 * The worker: one request line in, one answer out, until its pipe closes. "D" asks for a drain
 * of NVML's Xid events alone; a run first sends what NVML queued (once NVML is open: so that a
 * run stuck in NVML loses none of it), then the result.
 */
__attribute__((noreturn)) static void worker_main(const struct gpu_worker *w, int in, int out)
{
	char line[128];
	size_t n = 0;
	nvml_keep_open(true);
	if (w->telemetry) {
		nvml_want_telemetry(true);
		nvml_on_read(worker_tel_hook, NULL);
	}
	for (;;) {
		ssize_t got = read(in, line + n, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			_exit(0); /* the agent closed the pipe or is gone */
		if (line[n] != '\n' && n + 1 < sizeof(line)) {
			n++;
			continue;
		}
		line[n] = '\0';
		n = 0;
		if (!strcmp(line, "D")) {
			if (send_drain(out) < 0)
				_exit(1);
			continue;
		}
		if ((!strcmp(line, "S 0") || !strcmp(line, "S 1"))) {
			if (send_reading(w, line[2] == '1', out) < 0)
				_exit(1);
			continue;
		}
		if (nvml_xid_ready() && send_drain(out) < 0)
			_exit(1);
		double now = 0;
		unsigned timeout_ms = 0;
		if (sscanf(line, "%lf %u", &now, &timeout_ms) != 2)
			_exit(2);
		struct check_ctx ctx = w->ctx;
		ctx.now = now;
		ctx.timeout_ms = timeout_ms;
		struct check_result res;
		struct strbuf js = STRBUF_INIT, head = STRBUF_INIT;
		struct json_writer jw;
		check_result_init(&res, w->def->name);
		worker_tel.now = now;
		strbuf_reset(&worker_tel.buf);
		check_run_inline(&ctx, w->def, &res);
		if (worker_tel.buf.len) {
			strbuf_addf(&head, "T %zu\n", worker_tel.buf.len);
			if (write_all(out, head.buf, head.len) < 0 ||
			    write_all(out, worker_tel.buf.buf, worker_tel.buf.len) < 0)
				_exit(1);
			strbuf_reset(&head);
		}
		json_writer_init(&jw, &js, false);
		result_to_json(&jw, &res);
		strbuf_addf(&head, "%.6f %zu\n", self_cpu(), js.len);
		if (write_all(out, head.buf, head.len) < 0 || write_all(out, js.buf, js.len) < 0)
			_exit(1);
		check_result_release(&res);
		strbuf_release(&js);
		strbuf_release(&head);
	}
}

__attribute__((noreturn)) static void worker_child(const struct gpu_worker *w, int req_rd, int resp_wr)
{
	sigset_t none;
	setpgid(0, 0);
	/* a worker outliving the agent would hold NVML (and the agent's port) for nothing */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* only its two pipes: not the HTTP sockets, not the other checks' pipes; and under --root
	 * the root's directory (fd 5 here), which every read of the fixture resolves beneath */
	struct gpu_worker mine = *w;
	struct fsroot root = *w->ctx.root;
	int in = fcntl(req_rd, F_DUPFD, 10), out = fcntl(resp_wr, F_DUPFD, 10);
	int rfd = root.dir ? fcntl(root.fd, F_DUPFD, 10) : -1;
	if (in < 0 || out < 0 || dup2(in, 3) < 0 || dup2(out, 4) < 0 ||
	    (root.dir && (rfd < 0 || dup2(rfd, 5) < 0)))
		_exit(1);
	if (root.dir)
		root.fd = 5;
	mine.ctx.root = &root;
	for (int fd = root.dir ? 6 : 5; fd < 1024; fd++)
		close(fd);
	worker_main(&mine, 3, 4);
}

static int start(struct gpu_worker *w, struct strbuf *err)
{
	int req[2], resp[2];
	if (pipe2(req, O_CLOEXEC) < 0)
		return error_set(err, "cannot create a pipe for the gpu worker: %s", strerror(errno));
	if (pipe2(resp, O_CLOEXEC) < 0) {
		error_set(err, "cannot create a pipe for the gpu worker: %s", strerror(errno));
		close(req[0]);
		close(req[1]);
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		error_set(err, "cannot start the gpu worker: %s", strerror(errno));
		close(req[0]);
		close(req[1]);
		close(resp[0]);
		close(resp[1]);
		return -1;
	}
	if (pid == 0)
		worker_child(w, req[0], resp[1]);
	setpgid(pid, pid);
	close(req[0]);
	close(resp[1]);
	w->pid = pid;
	w->req_fd = req[1];
	w->resp_fd = resp[0];
	w->cpu_now_s = 0;
	w->starts++;
	return 0;
}

/* Reap without waiting long: a worker stuck in the kernel (D state) cannot be reaped yet. */
static bool reap(pid_t pid, int *status, unsigned tries)
{
	for (unsigned i = 0; i < tries; i++) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid || (r < 0 && errno == ECHILD))
			return true;
		if (i + 1 < tries)
			usleep(2000);
	}
	return false;
}

static void reap_old(struct gpu_worker *w)
{
	int st;
	for (size_t i = 0; i < w->nr_unreaped;) {
		struct gpu_worker_unreaped *u = &w->unreaped[i];
		if (reap(u->pid, &st, 1)) {
			/* reaped: its whole CPU is now in getrusage(RUSAGE_CHILDREN) */
			*u = w->unreaped[--w->nr_unreaped];
			continue;
		}
		i++;
	}
}

/* Kill the worker's group; it is started anew at the next request. *status: how it ended. */
static void drop(struct gpu_worker *w, int *status)
{
	int st = 0;
	if (!w->pid)
		return;
	close(w->req_fd);
	close(w->resp_fd);
	w->req_fd = w->resp_fd = -1;
	kill(-w->pid, SIGKILL);
	kill(w->pid, SIGKILL);
	if (!reap(w->pid, &st, 50)) {
		struct gpu_worker_unreaped *u;
		w->unreaped = xrealloc(w->unreaped, (w->nr_unreaped + 1) * sizeof(*u));
		u = &w->unreaped[w->nr_unreaped++];
		u->pid = w->pid;
		u->cpu_s = w->cpu_now_s;
	}
	if (status)
		*status = st;
	w->pid = 0;
	w->cpu_now_s = 0;
	w->pending = false;
}

/* Write the request with SIGPIPE held back: a worker that died must not take the agent along. */
static int send_line(int fd, const char *line, size_t len)
{
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	int r = write_all(fd, line, len);
	if (r < 0 && errno == EPIPE) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

int gpu_worker_send(struct gpu_worker *w, double now, unsigned timeout_ms, struct strbuf *err)
{
	char line[96];
	int st;
	reap_old(w);
	if (w->pending) /* an answer never collected: this worker's state is unknown */
		drop(w, NULL);
	if (w->pid && waitpid(w->pid, &st, WNOHANG) == w->pid) {
		/* it died between cycles (the OOM killer, say): reaped, so start another */
		close(w->req_fd);
		close(w->resp_fd);
		w->req_fd = w->resp_fd = -1;
		w->pid = 0;
	}
	if (!w->telemetry) { /* turned off (a reload): what was read before is not served */
		pthread_mutex_lock(&tel_lock);
		telemetry_release(&tel);
		pthread_mutex_unlock(&tel_lock);
	}
	int len = snprintf(line, sizeof(line), "%.6f %u\n", now, timeout_ms);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!w->pid && start(w, err) < 0)
			return -1;
		if (send_line(w->req_fd, line, (size_t)len) == 0) {
			w->pending = true;
			w->timeout_ms = timeout_ms;
			w->sent_ms = mono_ms();
			w->deadline_ms = w->sent_ms + timeout_ms;
			return 0;
		}
		drop(w, NULL);
	}
	return error_set(err, "cannot send a request to the gpu worker: %s", strerror(errno));
}

static void set_unknown(struct check_result *res, const char *msg)
{
	free(res->error);
	res->error = xstrdup(msg);
	res->status = STATUS_UNKNOWN;
}

/* ---- NVML's Xid record (xidwatch.h), kept here, in the agent: it outlives any worker ---- */

/* The record, loaded at first use: none without a boot id (its times would have no boot). */
static struct xid_watch *xw_get(struct gpu_worker *w)
{
	struct strbuf boot = STRBUF_INIT, p = STRBUF_INIT;
	if (w->xw || w->xw_off)
		return w->xw;
	if (fsroot_read_attr(w->ctx.root, "/proc/sys/kernel/random/boot_id", &boot, NULL) !=
		    READ_OK || !boot.len) {
		w->xw_off = true;
		goto out;
	}
	w->xw = xmalloc(sizeof(*w->xw));
	xidwatch_init(w->xw, boot.buf);
	if (w->ctx.state_dir) {
		strbuf_addf(&p, "%s/%s", w->ctx.state_dir, XIDWATCH_FILE);
		w->xw_path = strbuf_detach(&p, NULL);
		xidwatch_load(w->xw, w->xw_path, xidwatch_mono_now());
		if (w->xw->error)
			fprintf(stderr, "vigil agent: %s\n", w->xw->error);
	}
out:
	strbuf_release(&boot);
	strbuf_release(&p);
	return w->xw;
}

/* The record's Xids and watched GPUs, for the telemetry (the HTTP thread reads the copy). */
static void tel_xids(const struct xid_watch *xw)
{
	pthread_mutex_lock(&tel_lock);
	tel.xid_watch = true;
	tel.nr_xids = tel.nr_watched = 0;
	for (size_t i = 0; i < xw->nr_ev && tel.nr_xids < TELEMETRY_MAX_XIDS; i++) {
		struct telemetry_xid *x = &tel.xids[tel.nr_xids++];
		strlcpy_v(x->bdf, xw->ev[i].bdf, sizeof(x->bdf));
		x->xid = xw->ev[i].xid;
		x->count = xw->ev[i].count;
	}
	for (size_t i = 0; i < xw->nr_gpus && tel.nr_watched < TELEMETRY_MAX_GPUS; i++)
		if (xw->gpus[i].rc == 0)
			strlcpy_v(tel.watched[tel.nr_watched++], xw->gpus[i].bdf,
				  sizeof(tel.watched[0]));
	pthread_mutex_unlock(&tel_lock);
}

/* A telemetry message from the worker: replaces the last (a bad one is dropped, the last kept). */
static void tel_take(const char *buf, size_t len)
{
	pthread_mutex_lock(&tel_lock);
	telemetry_take(&tel, buf, len);
	pthread_mutex_unlock(&tel_lock);
}

void gpu_worker_metrics(struct strbuf *out)
{
	pthread_mutex_lock(&tel_lock);
	telemetry_prom(&tel, out);
	pthread_mutex_unlock(&tel_lock);
}

/* A drain from the worker: merged into the record, which is written at once (a worker killed
 * next, or the agent, loses nothing NVML already said). */
static void xw_take(struct gpu_worker *w, const char *json, size_t len)
{
	struct strbuf err = STRBUF_INIT;
	struct xid_watch *xw = xw_get(w);
	struct json_value *v = xw ? json_parse(json, len, &err) : NULL;
	struct nvml_xid_drain *d = v ? xmalloc(sizeof(*d)) : NULL;
	if (d && xidwatch_drain_from_json(v, d, &err) == 0) {
		xidwatch_merge(xw, d);
		tel_xids(xw);
		strbuf_reset(&err);
		if (w->xw_path && xidwatch_save(xw, w->xw_path, &err) < 0) {
			free(xw->error);
			xw->error = strbuf_detach(&err, NULL);
		}
	}
	free(d);
	json_free(v);
	strbuf_release(&err);
}

enum { MSG_OK, MSG_TIMEOUT, MSG_ENDED, MSG_BAD };

/*
 * Read until a whole message is at the front of in: a drain ("E LEN"), merged and consumed on
 * the way (want_result false: that is the message), or the result ("CPU_S LEN": *body is where
 * its LEN bytes start). MSG_TIMEOUT at the deadline, MSG_ENDED at EOF, MSG_BAD for anything else.
 */
static int read_msg(struct gpu_worker *w, struct strbuf *in, bool want_result, uint64_t deadline,
		    double *cpu, size_t *body, size_t *len)
{
	for (;;) {
		char *nl = memchr(in->buf, '\n', in->len);
		if (nl) {
			size_t hl = (size_t)(nl - in->buf) + 1, n = 0;
			bool t = in->len >= 2 && in->buf[0] == 'T' && in->buf[1] == ' ';
			if (in->len >= 2 && (in->buf[0] == 'E' || t) && in->buf[1] == ' ') {
				if (sscanf(in->buf + 2, "%zu", &n) != 1 ||
				    n > (t ? TEL_CAP : DRAIN_CAP))
					return MSG_BAD;
				if (in->len - hl >= n) {
					if (t)
						tel_take(in->buf + hl, n);
					else
						xw_take(w, in->buf + hl, n);
					memmove(in->buf, in->buf + hl + n, in->len - hl - n);
					strbuf_setlen(in, in->len - hl - n);
					if (!want_result && !t)
						return MSG_OK;
					continue;
				}
			} else {
				if (!want_result || sscanf(in->buf, "%lf %zu", cpu, len) != 2 ||
				    *len > ANSWER_CAP)
					return MSG_BAD;
				if (in->len - hl >= *len) {
					*body = hl;
					return MSG_OK;
				}
			}
		} else if (in->len >= 64) {
			return MSG_BAD;
		}
		uint64_t now = mono_ms();
		if (now >= deadline)
			return MSG_TIMEOUT;
		struct pollfd p = { w->resp_fd, POLLIN, 0 };
		int r = poll(&p, 1, (int)(deadline - now));
		if (r <= 0)
			continue;
		char buf[16384];
		ssize_t got = read(w->resp_fd, buf, sizeof(buf));
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return MSG_ENDED;
		strbuf_add(in, buf, (size_t)got);
	}
}

void gpu_worker_wait(struct gpu_worker *w, struct check_result *res)
{
	struct strbuf in = STRBUF_INIT, why = STRBUF_INIT;
	size_t head = 0, want = 0;
	double cpu = 0;
	if (!w->pending) {
		set_unknown(res, "the gpu worker was not asked to run");
		return;
	}
	w->pending = false;
	int r = read_msg(w, &in, true, w->deadline_ms, &cpu, &head, &want);
	if (r == MSG_TIMEOUT) {
		strbuf_addf(&why, "timed out after %.1f s (a read may be stuck in the kernel)",
			    w->timeout_ms / 1000.0);
		set_unknown(res, why.buf);
		res->duration_ms = mono_ms() - w->sent_ms;
		w->timeouts++;
		drop(w, NULL);
		goto out;
	}
	if (r == MSG_ENDED) {
		int st = 0;
		drop(w, &st);
		if (WIFSIGNALED(st))
			strbuf_addf(&why, "the gpu worker crashed (%s)", strsignal(WTERMSIG(st)));
		else
			strbuf_addf(&why, "the gpu worker ended without a result (exit %d)",
				    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		set_unknown(res, why.buf);
		goto out;
	}
	if (r == MSG_BAD) {
		drop(w, NULL);
		set_unknown(res, "the gpu worker answered something else than a result");
		goto out;
	}
	w->cpu_now_s = cpu;
	struct strbuf err = STRBUF_INIT;
	struct json_value *v = json_parse(in.buf + head, want, &err);
	if (!v || result_from_json(v, res, &err) < 0) {
		strbuf_addf(&why, "the gpu worker returned a bad result: %s", err.buf);
		set_unknown(res, why.buf);
		drop(w, NULL);
	}
	json_free(v);
	strbuf_release(&err);
out:
	strbuf_release(&in);
	strbuf_release(&why);
}

int gpu_worker_drain(struct gpu_worker *w)
{
	struct strbuf in = STRBUF_INIT;
	double cpu;
	size_t body, len;
	int ret = -1;
	if (!w->pid || w->pending || !xw_get(w))
		return -1;
	if (send_line(w->req_fd, "D\n", 2) < 0) {
		drop(w, NULL);
		return -1;
	}
	unsigned ms = w->timeout_ms && w->timeout_ms < DRAIN_WAIT_MS ? w->timeout_ms : DRAIN_WAIT_MS;
	int r = read_msg(w, &in, false, mono_ms() + ms, &cpu, &body, &len);
	if (r == MSG_OK) {
		ret = 0;
	} else {
		/* stuck in NVML's wait, or gone: what it said before is kept; a new one next cycle */
		if (r == MSG_TIMEOUT)
			w->timeouts++;
		drop(w, NULL);
	}
	strbuf_release(&in);
	return ret;
}

unsigned gpu_worker_xid_judge(struct gpu_worker *w, struct report *rep)
{
	double window = 3600;
	if (!w->def)
		return 0;
	gpu_worker_drain(w);
	/* what earlier drains said (this agent's, or before a restart in this boot) still holds
	 * when this one could not be taken */
	if (!xw_get(w))
		return 0;
	if (w->ctx.cfg)
		config_get_double(w->ctx.cfg, "kernel", "window", 3600, &window, NULL);
	return xidwatch_judge(w->xw, rep, xidwatch_mono_now(), window);
}

int gpu_worker_ready(struct gpu_worker *w, struct strbuf *err)
{
	int st;
	reap_old(w);
	if (w->pid && waitpid(w->pid, &st, WNOHANG) == w->pid) {
		close(w->req_fd);
		close(w->resp_fd);
		w->req_fd = w->resp_fd = -1;
		w->pid = 0;
	}
	return !w->pid && start(w, err) < 0 ? -1 : 0;
}

int gpu_worker_reading(struct gpu_worker *w, bool skip_counters, unsigned timeout_ms,
		       struct strbuf *out, struct strbuf *err)
{
	struct strbuf in = STRBUF_INIT;
	char kind = 0;
	size_t want = 0, hl = 0;
	int ret = -1;
	if (w->pending)
		return error_set(err, "the gpu worker is busy with a run");
	if (!w->pid)
		return error_set(err, "no gpu worker runs (gpu_worker_ready() first)");
	if (send_line(w->req_fd, skip_counters ? "S 1\n" : "S 0\n", 4) < 0) {
		drop(w, NULL);
		return error_set(err, "cannot ask the gpu worker: %s", strerror(errno));
	}
	uint64_t deadline = mono_ms() + timeout_ms;
	for (;;) {
		char *nl = hl ? NULL : memchr(in.buf, '\n', in.len);
		if (nl) {
			if (sscanf(in.buf, "%c %zu", &kind, &want) != 2 || (kind != 'S' && kind != 'X') ||
			    want > ANSWER_CAP) {
				error_set(err, "the gpu worker answered something else than a reading");
				drop(w, NULL);
				goto out;
			}
			hl = (size_t)(nl - in.buf) + 1;
		} else if (!hl && in.len >= 64) {
			error_set(err, "the gpu worker answered something else than a reading");
			drop(w, NULL);
			goto out;
		}
		if (hl && in.len - hl >= want)
			break;
		uint64_t now = mono_ms();
		if (now >= deadline) {
			error_set(err, "the gpu worker gave no reading within %u ms", timeout_ms);
			w->timeouts++;
			drop(w, NULL);
			goto out;
		}
		struct pollfd p = { w->resp_fd, POLLIN, 0 };
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		char buf[16384];
		ssize_t got = read(w->resp_fd, buf, sizeof(buf));
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0) {
			error_set(err, "the gpu worker ended without a reading");
			drop(w, NULL);
			goto out;
		}
		strbuf_add(&in, buf, (size_t)got);
	}
	if (kind == 'X') {
		strbuf_reset(err);
		strbuf_add(err, in.buf + hl, want);
		goto out;
	}
	strbuf_add(out, in.buf + hl, want);
	ret = 0;
out:
	strbuf_release(&in);
	return ret;
}

double gpu_worker_cpu(const struct gpu_worker *w)
{
	double s = w->pid ? w->cpu_now_s : 0;
	for (size_t i = 0; i < w->nr_unreaped; i++)
		s += w->unreaped[i].cpu_s;
	return s;
}

void gpu_worker_release(struct gpu_worker *w)
{
	int st;
	if (w->pid) {
		/* EOF first: a worker between requests exits by itself */
		close(w->req_fd);
		w->req_fd = -1;
		if (reap(w->pid, &st, 50)) {
			close(w->resp_fd);
			w->resp_fd = -1;
			w->pid = 0;
		} else {
			drop(w, NULL);
		}
	}
	reap_old(w);
	if (w->xw)
		xidwatch_release(w->xw);
	free(w->xw);
	w->xw = NULL;
	free(w->xw_path);
	w->xw_path = NULL;
	free(w->unreaped);
	w->unreaped = NULL;
	w->nr_unreaped = 0;
}
