/* fleetgen.c: a fleet's history with planted lemons, in the real inputs' shapes (fleetgen.h). */
#include "fleetgen.h"
#include "../src/lib/fileio.h"
#include "../src/lib/strbuf.h"
#include "../src/lib/util.h"

#include <math.h>
#include <time.h>

/* xoshiro256** seeded through splitmix64: the same numbers on every machine */
struct rng {
	uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

static double uni(struct rng *r)
{
	return (double)(next(r) >> 11) * 0x1.0p-53;
}

static unsigned poisson(struct rng *r, double lambda)
{
	/* Knuth's product of uniforms: lambda is small here (a node's faults in a window) */
	double l = exp(-lambda), p = 1;
	unsigned k = 0;
	do {
		k++;
		p *= uni(r);
	} while (p > l && k < 100000);
	return k - 1;
}

enum { G_BUS, G_HBM, G_NVL, G_IB, G_HOST, G_SLOW, G_SDC, G_NR };
static const struct {
	double weight, repair_h;
	const char *reason; /* the drain's reason ("%s" the GPU's bus id where it names one) */
	const char *key;    /* the agent history's key, NULL: not kept there (no reboot/reset) */
} gclass[G_NR] = {
	{ 165, 72, "vigil: gpu: Xid 79 (GPU has fallen off the bus) on %s", "kernel|xid|%s|xid=79" },
	{ 91, 72, "vigil: gpu: Xid 48 (double-bit ECC error) on %s, row remapping pending",
	  "kernel|xid|%s|xid=48" },
	{ 10, 72, "vigil: kernel: Xid 74 (NVLink error) on %s", "kernel|xid|%s|xid=74" },
	{ 42, 12, "vigil: infiniband: mlx5_%s port 1 is Down (was Active)", NULL },
	{ 46, 24, "Not responding", NULL },
	{ 6, 24, "vigil: gpu: GPU %s: clocks throttled (HW thermal slowdown)", NULL },
	{ 6, 72, "vigil: silent data corruption suspected: GPU %s digest differs", NULL },
};

static const char *const bus_ids[] = { "0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0",
				       "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0",
				       "0000:ba:00.0", "0000:db:00.0" };

struct gfault {
	unsigned node;
	int cls;
	unsigned gpu;
	double t, end;
	bool journal;
};

static void reason_for(const struct gfault *e, struct strbuf *out)
{
	char arg[32];
	if (e->cls == G_IB || e->cls == G_SLOW || e->cls == G_SDC)
		snprintf(arg, sizeof(arg), "%u", e->gpu);
	else
		snprintf(arg, sizeof(arg), "%s", bus_ids[e->gpu]);
	strbuf_reset(out);
	strbuf_addf(out, gclass[e->cls].reason, arg);
}

static int cmp_fault(const void *a, const void *b)
{
	const struct gfault *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

void fleetgen_node_name(unsigned i, char out[32])
{
	snprintf(out, 32, "gpu-%04u", i);
}

static void fmt_time(double t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
}

static int put(const char *dir, const char *rel, const struct strbuf *sb)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addf(&path, "%s/%s", dir, rel);
	char *slash = strrchr(path.buf, '/');
	*slash = '\0';
	int r = mkdir_p(path.buf, 0755, &err);
	*slash = '/';
	if (!r)
		r = write_file(path.buf, sb->buf, sb->len, false, &err);
	if (r)
		fprintf(stderr, "fleetgen: %s\n", err.buf);
	strbuf_release(&path);
	strbuf_release(&err);
	return r;
}

static void agent_history(const struct gfault *f, size_t nr, unsigned node, struct strbuf *out)
{
	char key[96];
	strbuf_addstr(out, "{\n  \"version\": 1,\n  \"entries\": [");
	bool first = true;
	/* one entry per (class, GPU): the boots it was seen in */
	for (size_t i = 0; i < nr; i++) {
		if (f[i].node != node || !gclass[f[i].cls].key)
			continue;
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = f[j].node == node && f[j].cls == f[i].cls && f[j].gpu == f[i].gpu;
		if (dup)
			continue;
		snprintf(key, sizeof(key), gclass[f[i].cls].key, bus_ids[f[i].gpu]);
		double last = f[i].t;
		strbuf_addf(out, "%s\n    {\"key\": \"%s\", \"first_seen\": %.3f, ", first ? "" : ",",
			    key, f[i].t + 30);
		struct strbuf boots = STRBUF_INIT;
		unsigned nb = 0;
		for (size_t j = i; j < nr; j++)
			if (f[j].node == node && f[j].cls == f[i].cls && f[j].gpu == f[i].gpu &&
			    nb < 16) {
				strbuf_addf(&boots, "%s\"%08x-5d1c-4b7e-9a0c-%012x\"", nb ? ", " : "",
					    node, (unsigned)(f[j].t));
				last = f[j].t;
				nb++;
			}
		strbuf_addf(out, "\"last_seen\": %.3f, \"boots\": [%s]}", last + 30, boots.buf);
		strbuf_release(&boots);
		first = false;
	}
	strbuf_addstr(out, "\n  ]\n}\n");
}

long fleetgen_write(const struct fleetgen *g, const char *dir, bool *is_lemon)
{
	struct rng r;
	uint64_t x = g->seed;
	for (int i = 0; i < 4; i++)
		r.s[i] = splitmix(&x);
	double wsum = 0;
	for (int c = 0; c < G_NR; c++)
		wsum += gclass[c].weight;
	struct gfault *f = NULL;
	size_t nr = 0, alloc = 0;
	unsigned nlemons = (unsigned)lround(g->nodes * g->lemon_share);
	for (unsigned i = 0; i < g->nodes; i++)
		is_lemon[i] = false;
	/* lemons spread over the fleet, chosen by the generator */
	for (unsigned k = 0; k < nlemons;) {
		unsigned i = (unsigned)(uni(&r) * g->nodes);
		if (!is_lemon[i]) {
			is_lemon[i] = true;
			k++;
		}
	}
	double span = g->days * 86400.0;
	for (unsigned i = 0; i < g->nodes; i++) {
		double lam = g->rate_node_day * g->days * (is_lemon[i] ? g->lemon_factor : 1);
		unsigned k = poisson(&r, lam);
		for (unsigned j = 0; j < k; j++) {
			ALLOC_GROW(f, nr + 1, alloc);
			struct gfault *e = &f[nr++];
			double u = uni(&r) * wsum;
			int c = 0;
			while (c < G_NR - 1 && u >= gclass[c].weight) {
				u -= gclass[c].weight;
				c++;
			}
			e->node = i;
			e->cls = c;
			/* a lemon's bad part is one GPU; a healthy node's fault any */
			e->gpu = is_lemon[i] ? i % 8 : (unsigned)(uni(&r) * 8);
			e->t = g->start + 60 + uni(&r) * (span - 120);
			e->end = e->t + gclass[c].repair_h * 3600 * (0.5 + uni(&r));
			e->journal = uni(&r) < 1.0 / 3;
		}
	}
	qsort(f, nr, sizeof(*f), cmp_fault);

	struct strbuf sacct = STRBUF_INIT, sb = STRBUF_INIT, reason = STRBUF_INIT;
	char node[32], t0[32], t1[32];
	/* the format vigil documents: sacctmgr show event -P format=NodeName,TimeStart,TimeEnd,
	 * State,Reason,User (run with TZ=UTC) */
	strbuf_addstr(&sacct, "NodeName|TimeStart|TimeEnd|State|Reason|User\n");
	for (size_t i = 0; i < nr; i++) {
		fleetgen_node_name(f[i].node, node);
		fmt_time(f[i].t + 5, t0);
		bool open = f[i].end > g->start + span;
		fmt_time(f[i].end, t1);
		reason_for(&f[i], &reason);
		bool slurm = f[i].cls == G_HOST;
		strbuf_addf(&sacct, "%s|%s|%s|%s|%s|%s\n", node, t0, open ? "Unknown" : t1,
			    slurm ? "DOWN*" : "DRAIN", reason.buf,
			    slurm ? "slurm(64030)" : "root(0)");
	}
	/* planned maintenance on a few nodes: drains that are not faults */
	for (unsigned i = 0; i < g->nodes; i += 97) {
		fleetgen_node_name(i, node);
		fmt_time(g->start + span / 2, t0);
		fmt_time(g->start + span / 2 + 4 * 3600, t1);
		strbuf_addf(&sacct, "%s|%s|%s|DRAIN|scheduled maintenance: BIOS update|root(0)\n",
			    node, t0, t1);
	}
	long ret = nr;
	if (put(dir, "slurm-events.txt", &sacct))
		ret = -1;

	/* every node's agent history, the healthy ones' empty */
	for (unsigned i = 0; i < g->nodes && ret >= 0; i++) {
		strbuf_reset(&sb);
		agent_history(f, nr, i, &sb);
		fleetgen_node_name(i, node);
		strbuf_reset(&reason);
		strbuf_addf(&reason, "agent/%s/history.json", node);
		if (put(dir, reason.buf, &sb))
			ret = -1;
	}

	/* run journals, one a 10 days: the faults the run saw, and software crashes */
	unsigned runs = (unsigned)ceil(g->days / 10);
	for (unsigned run = 0; run < runs && ret >= 0; run++) {
		double a = g->start + run * 10 * 86400.0, b = a + 10 * 86400.0;
		strbuf_reset(&sb);
		strbuf_addf(&sb, "{\"t\":%.3f,\"kind\":\"run_started\",\"attempt\":0}\n", a);
		strbuf_addf(&sb, "{\"t\":%.3f,\"kind\":\"attempt_started\",\"attempt\":1,"
				 "\"restarts\":0,\"step_id\":\"%u.0\",\"hosts\":[\"gpu-0000\"]}\n",
			    a + 1, 4000 + run);
		unsigned attempt = 1;
		double soft = g->soft_rate_node_day * g->nodes * 10;
		unsigned nsoft = poisson(&r, soft);
		double *st = xcalloc(nsoft + 1, sizeof(*st));
		for (unsigned k = 0; k < nsoft; k++)
			st[k] = a + 60 + uni(&r) * (10 * 86400.0 - 120);
		size_t fi = 0;
		unsigned sk = 0;
		for (;;) {
			while (fi < nr && (f[fi].t < a || !f[fi].journal))
				fi++;
			double tf = fi < nr && f[fi].t < b ? f[fi].t : INFINITY;
			double ts = INFINITY;
			for (unsigned k = 0; k < nsoft; k++)
				if (st[k] > 0 && st[k] < ts)
					ts = st[k], sk = k;
			if (tf == INFINITY && ts == INFINITY)
				break;
			if (tf <= ts) {
				fleetgen_node_name(f[fi].node, node);
				strbuf_addf(&sb, "{\"t\":%.3f,\"kind\":\"event\",\"attempt\":%u,"
						 "\"class\":\"%s\",\"host\":\"%s\",\"detail\":\"srun: "
						 "error: %s: task 3: Exited with exit code 1\","
						 "\"happened\":%.3f,\"detected\":%.3f,\"latency_s\":2.0}\n",
					    f[fi].t + 2, attempt,
					    f[fi].cls == G_HOST ? "lost" : "crash", node, node,
					    f[fi].t, f[fi].t + 2);
				if (f[fi].cls != G_HOST) {
					reason_for(&f[fi], &reason);
					strbuf_addf(&sb, "{\"t\":%.3f,\"kind\":\"host_excluded\","
							 "\"attempt\":%u,\"host\":\"%s\",\"reason\":"
							 "\"%s\"}\n",
						    f[fi].t + 40, attempt, node, reason.buf);
				}
				fi++;
			} else {
				strbuf_addf(&sb, "{\"t\":%.3f,\"kind\":\"event\",\"attempt\":%u,"
						 "\"class\":\"crash\",\"detail\":\"rank 17: "
						 "Traceback (most recent call last): RuntimeError: "
						 "CUDA error: an illegal memory access\"}\n",
					    ts + 2, attempt);
				st[sk] = 0;
			}
			strbuf_addf(&sb, "{\"t\":%.3f,\"kind\":\"attempt_ended\",\"attempt\":%u,"
					 "\"outcome\":\"crash\",\"code\":1}\n",
				    (tf <= ts ? tf : ts) + 50, attempt);
			attempt++;
			strbuf_addf(&sb, "{\"t\":%.3f,\"kind\":\"attempt_started\",\"attempt\":%u,"
					 "\"restarts\":%u,\"step_id\":\"%u.%u\",\"hosts\":[]}\n",
				    (tf <= ts ? tf : ts) + 120, attempt, attempt - 1, 4000 + run,
				    attempt - 1);
		}
		free(st);
		strbuf_addf(&sb, "{\"t\":%.3f,\"kind\":\"run_ended\",\"attempt\":%u,"
				 "\"outcome\":\"done\"}\n",
			    b - 1, attempt);
		strbuf_reset(&reason);
		strbuf_addf(&reason, "runs/run-%03u/journal.jsonl", run);
		if (put(dir, reason.buf, &sb))
			ret = -1;
	}
	strbuf_release(&sacct);
	strbuf_release(&sb);
	strbuf_release(&reason);
	free(f);
	return ret;
}
