/*
 * ibrun.c: perftest run for one side of a host pair, and the srun command lines of a pair (see
 * ibrun.h). perftest's server blocks in accept() for ever when no client comes and its client
 * gives up at once when no server listens yet, so: servers get a deadline that covers every
 * test of the client, clients retry a refused connection for a while, and each child is killed
 * whole at its deadline (run.h) with the bound named in the message.
 */
#include "ibrun.h"
#include "../lib/fileio.h"
#include "../lib/run_group.h"
#include "../lib/json.h"
#include "../core/report.h"

#include <ctype.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IB_CLASS "/sys/class/infiniband"
#define NV_GPUS "/proc/driver/nvidia/gpus"
#define IB_JSON_CAP (1u << 20)

void ib_opts_init(struct ib_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->root = fsroot_host;
	o->latency = true;
	o->port = IB_DEFAULT_PORT;
	o->duration_s = 10;
	o->size = 1u << 20;
	o->timeout_ms = 60000;
	o->connect_wait_ms = 60000;
	o->bw_prog = "ib_write_bw";
	o->lat_prog = "ib_read_lat";
}

void ib_side_release(struct ib_side *s)
{
	free(s->hcas);
	memset(s, 0, sizeof(*s));
}

/* mlx5_0, mlx5_bond_0, ibp12s0, with an optional :PORT */
static bool hca_name_ok(const char *s)
{
	size_t n = 0;
	for (; s[n] && s[n] != ':'; n++)
		if (!isalnum((unsigned char)s[n]) && s[n] != '_' && s[n] != '-' && s[n] != '.')
			return false;
	if (!n || n >= 48 || s[0] == '-' || s[0] == '.')
		return false;
	if (s[n] == ':') {
		uint64_t p;
		if (!parse_u64(s + n + 1, &p) || p < 1 || p > 255)
			return false;
	}
	return true;
}

int ib_list_hcas(const struct fsroot *root, const char *list, struct strlist *out,
		 struct strbuf *err)
{
	if (list) {
		struct strlist l = STRLIST_INIT;
		strlist_split(&l, list, ",");
		for (size_t i = 0; i < l.nr; i++) {
			if (!hca_name_ok(l.items[i])) {
				struct strbuf q = STRBUF_INIT;
				strbuf_add_excerpt(&q, l.items[i], 48);
				error_set(err, "'%s' is not an HCA name (such as mlx5_0 or mlx5_0:1)",
					  q.buf);
				strbuf_release(&q);
				strlist_release(&l);
				return -1;
			}
			strlist_add(out, l.items[i]);
		}
		strlist_release(&l);
		if (!out->nr)
			return error_set(err, "--hca names no HCA");
		return 0;
	}
	struct strlist names = STRLIST_INIT;
	struct strbuf lerr = STRBUF_INIT, path = STRBUF_INIT;
	int ret = -1;
	fsroot_path(root, &path, IB_CLASS);
	int r = fsroot_list(root, IB_CLASS, &names, &lerr);
	if (r == READ_MISSING)
		error_set(err, "no RDMA device: '%s' is missing (no InfiniBand driver loaded?)",
			  path.buf);
	else if (r < 0)
		error_set(err, "cannot list '%s': %s", path.buf, lerr.buf);
	for (size_t i = 0; r == 0 && i < names.nr; i++)
		if (hca_name_ok(names.items[i]) && !strchr(names.items[i], ':'))
			strlist_add(out, names.items[i]);
	if (r == 0 && !out->nr)
		error_set(err, "no RDMA device: '%s' lists no HCA", path.buf);
	else if (r == 0)
		ret = 0;
	strlist_release(&names);
	strbuf_release(&lerr);
	strbuf_release(&path);
	return ret;
}

size_t ib_count_gpus(const struct fsroot *root)
{
	struct strlist names = STRLIST_INIT;
	size_t n = 0;
	if (fsroot_list(root, NV_GPUS, &names, NULL) == 0)
		n = names.nr;
	strlist_release(&names);
	return n;
}

/* The last few lines of what a child said, clean, on one line. */
static void buf_excerpt(const struct strbuf *s, struct strbuf *out);

static void out_excerpt(const struct child *c, struct strbuf *out)
{
	buf_excerpt(&c->out, out);
}

static void buf_excerpt(const struct strbuf *s, struct strbuf *out)
{
	size_t end = s->len, lines = 0, start = end;
	while (start > 0 && lines < 3) {
		size_t e = start;
		while (e > 0 && (s->buf[e - 1] == '\n' || s->buf[e - 1] == ' ' ||
				 s->buf[e - 1] == '\r' || s->buf[e - 1] == '\t'))
			e--;
		size_t b = e;
		while (b > 0 && s->buf[b - 1] != '\n')
			b--;
		if (b == e)
			break;
		start = b;
		lines++;
	}
	struct strbuf tail = STRBUF_INIT;
	for (size_t i = start; i < end; i++)
		strbuf_addch(&tail, s->buf[i] == '\n' || s->buf[i] == '\t' ? ' ' : s->buf[i]);
	/* squeeze the runs of spaces perftest pads its lines with */
	struct strbuf sq = STRBUF_INIT;
	for (size_t i = 0; i < tail.len; i++)
		if (tail.buf[i] != ' ' || (sq.len && sq.buf[sq.len - 1] != ' '))
			strbuf_addch(&sq, tail.buf[i]);
	while (sq.len && sq.buf[sq.len - 1] == ' ')
		sq.buf[--sq.len] = '\0';
	if (sq.len)
		strbuf_add_excerpt(out, sq.buf, 200);
	else
		strbuf_addstr(out, "(it printed nothing)");
	strbuf_release(&tail);
	strbuf_release(&sq);
}

/* What perftest's --help says it can do; false when it cannot be run at all. */
static bool probe(const char *prog, bool *cuda, bool *json, struct strbuf *err)
{
	const char *argv[] = { prog, "--help", NULL };
	struct child c;
	child_init(&c);
	c.argv = argv;
	c.timeout_ms = 10000;
	c.timeout_name = "the --help probe";
	c.merge_stderr = true;
	bool ok = child_run(&c, err) == 0;
	*cuda = ok && strstr(c.out.buf, "use_cuda") != NULL;
	*json = ok && strstr(c.out.buf, "out_json") != NULL;
	child_release(&c);
	return ok;
}

struct tctx {
	struct child c;
	struct strlist argv;
	char json[4200];
	char portbuf[16], ibport[8], dur[16], size[24], cuda[32], jopt[4300];
	char name[64];
};

static void build(const struct ib_opts *o, const struct ib_side *s, const struct pt_hca *h,
		  size_t idx, enum pt_kind kind, const char *dir, struct tctx *t)
{
	strlist_release(&t->argv);
	const char *colon = strchr(h->hca, ':');
	size_t nl = colon ? (size_t)(colon - h->hca) : strlen(h->hca);
	snprintf(t->name, sizeof(t->name), "%.*s", (int)nl, h->hca);
	strlist_add(&t->argv, kind == PT_BW ? o->bw_prog : o->lat_prog);
	strlist_add(&t->argv, "-d");
	strlist_add(&t->argv, t->name);
	if (colon) {
		strlist_add(&t->argv, "-i");
		strlist_add(&t->argv, colon + 1);
	}
	snprintf(t->portbuf, sizeof(t->portbuf), "%u",
		 o->port + 2 * (unsigned)idx + (kind == PT_LAT ? 1 : 0));
	strlist_add(&t->argv, "-p");
	strlist_add(&t->argv, t->portbuf);
	strlist_add(&t->argv, "-F");
	if (kind == PT_BW) {
		strlist_add(&t->argv, "--report_gbits");
		snprintf(t->dur, sizeof(t->dur), "%u", o->duration_s);
		strlist_add(&t->argv, "-D");
		strlist_add(&t->argv, t->dur);
		snprintf(t->size, sizeof(t->size), "%llu", (unsigned long long)o->size);
		strlist_add(&t->argv, "-s");
		strlist_add(&t->argv, t->size);
		if (h->cuda >= 0) {
			snprintf(t->cuda, sizeof(t->cuda), "--use_cuda=%d", h->cuda);
			strlist_add(&t->argv, t->cuda);
		}
	}
	t->json[0] = '\0';
	if (!s->server && s->have_out_json && dir) {
		snprintf(t->json, sizeof(t->json), "%s/%s-%zu.json", dir,
			 kind == PT_BW ? "bw" : "lat", idx);
		snprintf(t->jopt, sizeof(t->jopt), "--out_json_file=%s", t->json);
		strlist_add(&t->argv, "--out_json");
		strlist_add(&t->argv, t->jopt);
	}
	if (o->peer)
		strlist_add(&t->argv, o->peer);
}

static void start_child(struct tctx *t, unsigned timeout_ms, const char *bound)
{
	child_release(&t->c);
	child_init(&t->c);
	t->c.argv = (const char *const *)t->argv.items;
	t->c.timeout_ms = timeout_ms;
	t->c.timeout_name = bound;
	t->c.merge_stderr = true;
}

/* Turn a finished child into the test's outcome and figures. */
static void finish(struct tctx *t, const char *start_error, bool server, enum pt_kind kind,
		   struct pt_test *pt)
{
	struct strbuf why = STRBUF_INIT, e1 = STRBUF_INIT, e2 = STRBUF_INIT, d = STRBUF_INIT;
	const struct child *c = &t->c;
	pt->cause = PT_CAUSE_OTHER;
	if (start_error) {
		pt->outcome = PT_FAILED;
		strbuf_add_excerpt(&why, start_error, 200);
	} else if (c->timed_out) {
		pt->outcome = PT_TIMED_OUT;
		child_describe(c, &d);
		strbuf_add_clean(&why, d.buf);
		strbuf_addstr(&why, " and was killed; it said: ");
		out_excerpt(c, &why);
	} else if (!c->exited || c->exit_code != 0) {
		pt->outcome = PT_FAILED;
		pt->cause = pt_failure_cause(c->out.buf, c->out.len);
		child_describe(c, &d);
		strbuf_add_clean(&why, d.buf);
		strbuf_addstr(&why, ": ");
		out_excerpt(c, &why);
	} else if (server) {
		pt->outcome = PT_RAN;
	} else {
		struct strbuf js = STRBUF_INIT;
		int jr = READ_MISSING;
		pt->outcome = PT_NOT_UNDERSTOOD;
		if (t->json[0]) {
			jr = read_file_bounded(t->json, &js, IB_JSON_CAP, &e1);
			if (jr == READ_OK && pt_parse_json(js.buf, js.len, kind, &pt->r, &e1) == 0)
				pt->outcome = PT_RAN;
			else if (jr == READ_MISSING)
				strbuf_addstr(&e1, "no --out_json file");
			else if (jr == READ_TRUNCATED)
				strbuf_addstr(&e1, "its --out_json file is over 1 MiB");
		}
		if (pt->outcome != PT_RAN) {
			if (pt_parse_text(c->out.buf, c->out.len, kind, &pt->r, &e2) == 0) {
				pt->outcome = PT_RAN;
			} else {
				pt->outcome = PT_NOT_UNDERSTOOD;
				if (e1.len) {
					strbuf_add_excerpt(&why, e1.buf, 120);
					strbuf_addstr(&why, "; ");
				}
				strbuf_add_excerpt(&why, e2.buf, 120);
				strbuf_addstr(&why, "; it said: ");
				out_excerpt(c, &why);
			}
		}
		strbuf_release(&js);
	}
	strlcpy_v(pt->why, why.buf, sizeof(pt->why));
	strbuf_release(&why);
	strbuf_release(&e1);
	strbuf_release(&e2);
	strbuf_release(&d);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0)
		;
}

/* One client test, retrying while the server is not listening yet. */
static void client_test(const struct ib_opts *o, const struct ib_side *s, struct pt_hca *h,
			size_t idx, enum pt_kind kind, const char *dir, struct tctx *t)
{
	struct pt_test *pt = kind == PT_BW ? &h->bw : &h->lat;
	uint64_t t0 = mono_ms();
	build(o, s, h, idx, kind, dir, t);
	for (;;) {
		struct strbuf err = STRBUF_INIT;
		start_child(t, o->timeout_ms, "--timeout");
		if (t->json[0])
			unlink(t->json);
		int r = child_run(&t->c, &err);
		finish(t, r < 0 ? err.buf : NULL, false, kind, pt);
		strbuf_release(&err);
		if (pt->outcome != PT_FAILED || pt->cause != PT_CAUSE_NO_PEER ||
		    mono_ms() - t0 + 1000 > o->connect_wait_ms)
			break;
		sleep_ms(1000);
	}
	if (pt->outcome == PT_FAILED && pt->cause == PT_CAUSE_NO_PEER) {
		char more[64];
		snprintf(more, sizeof(more), " (tried for %.0f s: --connect-wait)",
			 (double)o->connect_wait_ms / 1000);
		size_t l = strlen(pt->why);
		if (l + strlen(more) < sizeof(pt->why))
			memcpy(pt->why + l, more, strlen(more) + 1);
	}
	if (t->json[0])
		unlink(t->json);
}

struct srv_done {
	struct tctx *t;
	struct pt_hca *hcas;
	size_t n;
};

static void on_server_done(struct child *c, const char *start_error, void *arg)
{
	struct srv_done *d = arg;
	for (size_t i = 0; i < 2 * d->n; i++)
		if (&d->t[i].c == c)
			finish(&d->t[i], start_error, true, i % 2 ? PT_LAT : PT_BW,
			       i % 2 ? &d->hcas[i / 2].lat : &d->hcas[i / 2].bw);
}

void ib_side_run(const struct ib_opts *o, struct ib_side *s)
{
	struct strlist hcas = STRLIST_INIT;
	struct strbuf err = STRBUF_INIT;
	bool cuda_ok = false;
	char dir[4200] = "";

	s->server = o->peer == NULL;
	if (ib_list_hcas(o->root, o->hcas, &hcas, &err) < 0) {
		strlcpy_v(s->problem_code, "no_hca", sizeof(s->problem_code));
		strlcpy_v(s->problem, err.buf, sizeof(s->problem));
		goto out;
	}
	strbuf_reset(&err);
	if (!probe(o->bw_prog, &cuda_ok, &s->have_out_json, &err)) {
		strlcpy_v(s->problem_code, "perftest_missing", sizeof(s->problem_code));
		snprintf(s->problem, sizeof(s->problem),
			 "%s cannot be run (Debian package perftest): %.200s", o->bw_prog,
			 err.buf);
		goto out;
	}
	size_t ngpu = o->no_cuda ? 0 : ib_count_gpus(o->root);
	struct strlist gl = STRLIST_INIT;
	if (o->gpus && !o->no_cuda)
		strlist_split(&gl, o->gpus, ",");
	s->hcas = xcalloc(hcas.nr, sizeof(*s->hcas));
	s->nr = hcas.nr;
	for (size_t i = 0; i < hcas.nr; i++) {
		struct pt_hca *h = &s->hcas[i];
		strlcpy_v(h->hca, hcas.items[i], sizeof(h->hca));
		h->server = s->server;
		h->cuda = -1;
		int64_t g = -1;
		if (gl.nr)
			parse_i64(gl.items[i % gl.nr], &g);
		else if (ngpu)
			g = (int64_t)(i % ngpu);
		if (g >= 0 && cuda_ok)
			h->cuda = (int)g;
		else if (g >= 0)
			h->cuda_wanted = !s->server;
		h->bw.program = o->bw_prog;
		h->lat.program = o->lat_prog;
		h->lat.outcome = PT_NOT_RUN;
	}
	strlist_release(&gl);
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/vigil-ib-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		dir[0] = '\0'; /* no JSON files: the text table is read */

	size_t ntests = s->nr * (o->latency ? 2 : 1);
	struct tctx *t = xcalloc(2 * s->nr, sizeof(*t));
	if (s->server) {
		struct run_group g;
		run_group_init(&g, 0);
		/* each server waits until the client reaches its HCA */
		uint64_t dl = (uint64_t)o->connect_wait_ms + (uint64_t)ntests * o->timeout_ms;
		unsigned sdl = dl > 86400000u ? 86400000u : (unsigned)dl;
		for (size_t i = 0; i < s->nr; i++)
			for (int k = 0; k < (o->latency ? 2 : 1); k++) {
				struct tctx *x = &t[2 * i + (size_t)k];
				build(o, s, &s->hcas[i], i, k ? PT_LAT : PT_BW, NULL, x);
				start_child(x, sdl, "--connect-wait + --timeout for each test");
				run_group_add(&g, &x->c);
			}
		struct srv_done d = { t, s->hcas, s->nr };
		run_group_run(&g, on_server_done, &d);
		run_group_release(&g);
	} else {
		for (size_t i = 0; i < s->nr; i++) {
			client_test(o, s, &s->hcas[i], i, PT_BW, dir[0] ? dir : NULL, &t[2 * i]);
			if (o->latency)
				client_test(o, s, &s->hcas[i], i, PT_LAT, dir[0] ? dir : NULL,
					    &t[2 * i + 1]);
		}
	}
	for (size_t i = 0; i < 2 * s->nr; i++) {
		child_release(&t[i].c);
		strlist_release(&t[i].argv);
	}
	free(t);
	if (dir[0])
		rmdir(dir);
out:
	strlist_release(&hcas);
	strbuf_release(&err);
}

void ib_side_evaluate(const struct ib_side *s, const struct pt_floors *f,
		      struct check_result *res)
{
	if (s->problem[0]) {
		struct finding *x = result_add(
			res, STATUS_UNKNOWN,
			strcmp(s->problem_code, "no_hca") ? ACTION_FIX_CONFIG : ACTION_INSPECT_HARDWARE,
			s->problem_code, "infiniband", "%s", s->problem);
		(void)x;
		return;
	}
	for (size_t i = 0; i < s->nr; i++)
		pt_evaluate(&s->hcas[i], f, res);
}

void ib_pair_argv(struct strlist *out, const char *srun, const char *vigil, const char *host,
		  bool server, const char *peer, const char *hca, const struct strlist *extra)
{
	strlist_add(out, srun ? srun : "srun");
	strlist_add(out, "-N1");
	strlist_add(out, "-n1");
	strlist_add(out, "--overlap");
	strlist_add(out, "-w");
	strlist_add(out, host);
	strlist_add(out, "--");
	strlist_add(out, vigil);
	strlist_add(out, "net");
	strlist_add(out, "ib");
	if (server) {
		strlist_add(out, "--server");
	} else {
		strlist_add(out, "--peer");
		strlist_add(out, peer);
	}
	if (hca) {
		strlist_add(out, "--hca");
		strlist_add(out, hca);
	}
	for (size_t i = 0; extra && i < extra->nr; i++)
		strlist_add(out, extra->items[i]);
	strlist_add(out, "--json");
}

const char *ib_verdict_name(enum ib_verdict v)
{
	switch (v) {
	case IBV_OK: return "ok";
	case IBV_SLOW: return "slow";
	case IBV_ERROR: return "error";
	case IBV_UNKNOWN: break;
	}
	return "unknown";
}

void ib_pair_setup(struct ib_pair *p, const char *srun, const char *vigil,
		   const struct strlist *extra, unsigned timeout_ms)
{
	strlist_release(&p->srv_argv);
	strlist_release(&p->cli_argv);
	ib_pair_argv(&p->srv_argv, srun, vigil, p->b, true, NULL, p->b_hca, extra);
	ib_pair_argv(&p->cli_argv, srun, vigil, p->a, false, p->b, p->a_hca, extra);
	child_init(&p->srv);
	child_init(&p->cli);
	p->srv.argv = (const char *const *)p->srv_argv.items;
	p->cli.argv = (const char *const *)p->cli_argv.items;
	/* the server outlives its client's retries by a margin, so the client's word comes first */
	p->srv.timeout_ms = timeout_ms + 30000;
	p->cli.timeout_ms = timeout_ms;
	p->srv.timeout_name = p->cli.timeout_name = "the srun step's deadline";
	p->srv_start_error[0] = p->cli_start_error[0] = '\0';
	p->verdict = IBV_UNKNOWN;
	p->bw_gbps = -1;
	p->message[0] = '\0';
}

void ib_pair_release(struct ib_pair *p)
{
	child_release(&p->srv);
	child_release(&p->cli);
	strlist_release(&p->srv_argv);
	strlist_release(&p->cli_argv);
}

/* A step's report (vigil net ib --json) into a result; false when it is not one. */
static bool step_report(const struct child *c, struct check_result *out, struct strbuf *why)
{
	struct strbuf err = STRBUF_INIT;
	bool ok = false;
	struct json_value *v = json_parse(c->out.buf, c->out.len, &err);
	const struct json_value *checks = v ? json_get(v, "checks") : NULL;
	if (!v) {
		strbuf_addstr(why, "its output is not a JSON report: ");
		out_excerpt(c, why);
	} else if (!checks || checks->type != JSON_ARRAY || checks->nr < 1) {
		strbuf_addstr(why, "its JSON report has no checks");
	} else if (result_from_json(checks->items[0], out, &err) < 0) {
		strbuf_addstr(why, "its JSON report is not understood: ");
		strbuf_add_excerpt(why, err.buf, 120);
	} else {
		ok = true;
	}
	json_free(v);
	strbuf_release(&err);
	return ok;
}

static void copy_findings(const struct check_result *from, const char *host,
			  struct check_result *res, bool problems_only)
{
	for (size_t i = 0; i < from->nr; i++) {
		const struct finding *f = &from->findings[i];
		if (problems_only && f->status <= STATUS_OK)
			continue;
		struct strbuf dev = STRBUF_INIT;
		strbuf_add_excerpt(&dev, host, 64);
		strbuf_addch(&dev, ' ');
		strbuf_add_excerpt(&dev, f->device ? f->device : "", 64);
		struct finding *n = result_add(res, f->status, f->action, f->code, dev.buf, "%s: %s",
					       host, f->message);
		for (size_t k = 0; k < f->nr_details; k++)
			finding_detail(n, f->details[k].key, "%s", f->details[k].value);
		for (size_t k = 0; k < f->nr_details; k++)
			n->details[k].numeric = f->details[k].numeric;
		strbuf_release(&dev);
	}
}

/* "srun step on HOST exited with 1: ..." for a step without a report. */
static void step_trouble(const struct child *c, const char *start_error, const char *host,
			 const char *role, struct strbuf *out)
{
	struct strbuf d = STRBUF_INIT;
	strbuf_addf(out, "the %s step on ", role);
	strbuf_add_excerpt(out, host, 64);
	if (start_error && *start_error) {
		strbuf_addstr(out, " did not start: ");
		strbuf_add_excerpt(out, start_error, 160);
	} else {
		child_describe(c, &d);
		strbuf_addch(out, ' ');
		strbuf_add_clean(out, d.buf);
		strbuf_addstr(out, ": ");
		/* srun's own complaint is on stderr; the step's report on stdout */
		buf_excerpt(c->err.len ? &c->err : &c->out, out);
	}
	strbuf_release(&d);
}

void ib_pair_judge(struct ib_pair *p, struct check_result *res)
{
	struct check_result cr, sr;
	struct strbuf why = STRBUF_INIT, swhy = STRBUF_INIT;
	check_result_init(&cr, "ib");
	check_result_init(&sr, "ib");
	bool have_c = !p->cli_start_error[0] && step_report(&p->cli, &cr, &why);
	bool have_s = !p->srv_start_error[0] && step_report(&p->srv, &sr, &swhy);
	p->verdict = IBV_UNKNOWN;
	if (have_c) {
		const struct finding *bw = result_find(&cr, "ib_bw", NULL);
		const struct finding *er = result_find(&cr, "ib_error", NULL);
		const struct finding *w = result_worst(&cr);
		if (er) {
			p->verdict = IBV_ERROR;
			w = er;
		} else if (bw && bw->status == STATUS_FAIL) {
			p->verdict = IBV_SLOW;
			w = bw;
		} else if (bw && bw->status == STATUS_OK) {
			p->verdict = IBV_OK;
			w = bw;
		}
		for (size_t k = 0; bw && k < bw->nr_details; k++)
			if (!strcmp(bw->details[k].key, "bw_gbps"))
				parse_double(bw->details[k].value, &p->bw_gbps);
		struct strbuf m = STRBUF_INIT;
		if (w)
			strbuf_add_excerpt(&m, w->message, 300);
		else
			strbuf_addstr(&m, "the client reported nothing");
		strlcpy_v(p->message, m.buf, sizeof(p->message));
		strbuf_release(&m);
		if (res)
			copy_findings(&cr, p->a, res, false);
	} else {
		struct strbuf m = STRBUF_INIT;
		step_trouble(&p->cli, p->cli_start_error, p->a, "client", &m);
		if (why.len && !p->cli_start_error[0] && p->cli.exited && !p->cli.exit_code) {
			strbuf_addstr(&m, " (");
			strbuf_addstr(&m, why.buf);
			strbuf_addch(&m, ')');
		}
		strlcpy_v(p->message, m.buf, sizeof(p->message));
		if (res)
			result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "step_failed", p->a,
				   "%s", p->message);
		strbuf_release(&m);
	}
	if (res && p->verdict != IBV_OK) {
		if (have_s) {
			copy_findings(&sr, p->b, res, true);
		} else {
			struct strbuf m = STRBUF_INIT;
			step_trouble(&p->srv, p->srv_start_error, p->b, "server", &m);
			result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "step_failed", p->b, "%s",
				   m.buf);
			strbuf_release(&m);
		}
	}
	check_result_release(&cr);
	check_result_release(&sr);
	strbuf_release(&why);
	strbuf_release(&swhy);
}
