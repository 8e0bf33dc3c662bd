/* sim.c: vigil sim's run: the real supervisor, the simulated world, faults from a model (sim.h). */
#include "sim.h"
#include "world.h"

#include "../lib/util.h"
#include "../supervise/options.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A broken host that no check sees fails again this long into each attempt it joins (an SDC
 * host corrupts the next run too): the supervisor's group testing is what finds it. */
#define SIM_RELAPSE_S 300.0
/* Lines of rank 0 come about this often (virtual seconds): the trainer prints every K steps. */
#define SIM_LINE_EVERY_S 5.0
/* Requeues of the job after which the run is called hopeless. */
#define SIM_REQUEUES_MAX 100000

static const char *const cause_names[SIM_CAUSE_NR] = {
	[SIM_LOST_DETECTION] = "detection", [SIM_LOST_RESTART] = "restart",
	[SIM_LOST_RECOMPUTE] = "recomputation", [SIM_LOST_WAITING] = "waiting_for_nodes",
	[SIM_LOST_CHECKPOINT] = "checkpoint", [SIM_LOST_SLOWDOWN] = "slowdown",
};

const char *sim_cause_name(enum sim_cause c)
{
	return c < SIM_CAUSE_NR ? cause_names[c] : "?";
}

static const char *const policy_names[SIM_POLICY_NR] = {
	[SIM_POLICY_VIGIL] = "vigil", [SIM_POLICY_TORCHRUN] = "torchrun",
	[SIM_POLICY_MANUAL] = "manual",
};

const char *sim_policy_name(enum sim_policy p)
{
	return p < SIM_POLICY_NR ? policy_names[p] : "?";
}

int sim_policy_parse(const char *name, enum sim_policy *out)
{
	for (int i = 0; i < SIM_POLICY_NR; i++)
		if (!strcmp(name, policy_names[i])) {
			*out = (enum sim_policy)i;
			return 0;
		}
	return -1;
}

/* ---- the generator ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void sim_rng_seed(struct sim_rng *g, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		g->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(struct sim_rng *g)
{
	uint64_t *s = g->s, r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

double sim_rng_uniform(struct sim_rng *g)
{
	return (double)(sim_rng_next(g) >> 11) * 0x1.0p-53;
}

/* ---- the run ---- */

struct sim_host {
	bool broken;
	int cls;
	double repair_until;
	unsigned used_gen; /* the vigil run it last joined a step in */
};

struct sim {
	const struct sim_params *p;
	const struct sim_model *m;
	struct sim_result *r;
	struct fakeworld fw;
	const struct sim_schedule *sched; /* the faults, fixed ahead (schedule.h) */
	size_t next;                      /* the schedule's next fault */
	double horizon;
	struct sim_host *h;
	size_t nr;
	double next_repair;
	bool strike;       /* a fault struck the step that runs; its end not yet seen */
	double strike_at;
	unsigned gen, used; /* this vigil run; hosts that joined a step in it */
	bool ended;        /* the horizon passed: the trainer's figures are taken */
	uint64_t end_step, end_ckpts, end_recomputed;
	double end_slow;
	int (*launch)(void *, struct sup *, const struct step_spec *, struct strbuf *);
	void (*wait)(void *, struct sup *, int, struct sup_wake *);
	int (*stop)(void *, struct sup *, unsigned, struct strbuf *);
};

static struct sim *the_sim; /* the world's callbacks get the fakeworld; one sim at a time */

static size_t host_index(struct sim *S, const char *name)
{
	struct fw_host *h = fw_host(&S->fw, name);
	return h ? (size_t)(h - S->fw.hosts) : (size_t)-1;
}

static void struck(struct sim *S, int cls, double at)
{
	S->r->interruptions++;
	S->r->by_class[cls]++;
	if (!S->strike) {
		S->strike = true;
		S->strike_at = at;
	}
}

static void fault_struck(struct fakeworld *fw, const struct fw_fault *f, void *arg)
{
	struct sim *S = arg;
	(void)fw;
	if (f->tag > 0)
		struck(S, f->tag - 1, f->at < S->fw.now ? f->at : S->fw.now);
}

static void find_next_repair(struct sim *S)
{
	S->next_repair = INFINITY;
	for (size_t i = 0; i < S->nr; i++)
		if (S->h[i].broken && S->h[i].repair_until < S->next_repair)
			S->next_repair = S->h[i].repair_until;
}

static void heal_due(struct sim *S, double now)
{
	if (now < S->next_repair)
		return;
	for (size_t i = 0; i < S->nr; i++)
		if (S->h[i].broken && S->h[i].repair_until <= now) {
			struct fw_host *fh = &S->fw.hosts[i];
			S->h[i].broken = false;
			/* whole again at once (a requeue's preflight may come before the world's
			 * next turn); the heal as a fault too, so the step's pace is found again */
			fh->sick = fh->lost = fh->silent = fh->bad_smoke = fh->drained = false;
			fw_fault(&S->fw, now, FW_HEAL, fh->name);
		}
	find_next_repair(S);
}

static void break_host(struct sim *S, size_t v, int c, double t)
{
	const struct sim_class *k = &S->m->classes[c];
	struct fw_host *fh = &S->fw.hosts[v];
	double hours = S->p->repair_hours > 0 ? S->p->repair_hours : k->repair_hours;
	S->h[v].broken = true;
	S->h[v].cls = c;
	S->h[v].repair_until = t + hours * 3600;
	if (S->h[v].repair_until < S->next_repair)
		S->next_repair = S->h[v].repair_until;
	if (k->check_sees && k->seen != SIM_SEEN_LOST) {
		fh->sick = true;
		fw_mark(&S->fw, fh);
		snprintf(fh->reason, sizeof(fh->reason), "%s",
			 k->check_says[0] ? k->check_says : k->name);
	} else if (!k->check_sees) {
		fh->bad_smoke = true;
	}
}

/* The schedule's fault f: what it does to the step and the host holding its slot. */
static void deliver(struct sim *S, const struct sim_fault_at *f0)
{
	struct fakeworld *fw = &S->fw;
	double t = f0->at;
	int c = f0->cls;
	if (!fw->live || !fw->nr_step_hosts)
		return; /* no job runs: no one to strike (hosts idle in the pool are not modelled) */
	const char *vname = fw->step_hosts[f0->slot % fw->nr_step_hosts];
	size_t v = host_index(S, vname);
	if (v == (size_t)-1)
		return;
	const struct sim_class *k = &S->m->classes[c];
	if (k->host_fault) {
		if (S->h[v].broken)
			return; /* broken already: the one fault it has is what counts */
		break_host(S, v, c, t);
	}
	struct fw_fault *f = NULL;
	switch (k->seen) {
	case SIM_SEEN_CRASH:
		f = fw_fault(fw, t, FW_CRASH, vname);
		break;
	case SIM_SEEN_HANG:
		f = fw_fault(fw, t, FW_HANG, NULL);
		break;
	case SIM_SEEN_LOST:
		f = fw_fault(fw, t, FW_LOST, vname);
		break;
	case SIM_SEEN_SLOW:
		fw_fault(fw, t, FW_SLOW, vname)->factor = SIM_SLOW_FACTOR;
		struck(S, c, t);
		break;
	case SIM_SEEN_SICK:
	case SIM_SEEN_NR:
		struck(S, c, t);
		break;
	}
	if (f)
		f->tag = c + 1;
}

/* The world's clock moved: repairs due, the trainer's figures at the horizon, the schedule's
 * faults due, fired faults dropped. */
static void tick(struct fakeworld *fw, void *arg)
{
	struct sim *S = arg;
	heal_due(S, fw->now);
	if (!S->ended && fw->now >= S->horizon) {
		S->ended = true;
		S->end_step = fw->step;
		S->end_ckpts = fw->ckpts;
		S->end_recomputed = fw->recomputed_steps;
		S->end_slow = fw->slow_lost_s;
	}
	while (S->next < S->sched->nr && S->sched->f[S->next].at <= fw->now &&
	       S->sched->f[S->next].at < S->horizon)
		deliver(S, &S->sched->f[S->next++]);
	fw->wake_at = S->next < S->sched->nr && S->sched->f[S->next].at < S->horizon
			      ? S->sched->f[S->next].at
			      : 0;
	size_t k = 0;
	for (size_t i = 0; i < fw->nr_faults; i++)
		if (!fw->faults[i].fired)
			fw->faults[k++] = fw->faults[i];
	fw->nr_faults = k;
}

static int sim_launch(void *ctx, struct sup *s, const struct step_spec *spec, struct strbuf *err)
{
	struct sim *S = the_sim;
	int ret = S->launch(ctx, s, spec, err);
	if (ret < 0)
		return ret;
	S->strike = false;
	for (size_t i = 0; i < spec->nr_hosts; i++) {
		size_t v = host_index(S, spec->hosts[i]);
		if (v == (size_t)-1)
			continue;
		if (S->h[v].used_gen != S->gen) {
			S->h[v].used_gen = S->gen;
			S->used++;
		}
		if (!S->h[v].broken)
			continue;
		/* a broken host the checks let in fails this attempt too */
		const struct sim_class *k = &S->m->classes[S->h[v].cls];
		double at = S->fw.now + S->fw.startup_s + SIM_RELAPSE_S;
		struct fw_fault *f = k->seen == SIM_SEEN_CRASH ? fw_fault(&S->fw, at, FW_CRASH,
									  spec->hosts[i])
				     : k->seen == SIM_SEEN_HANG ? fw_fault(&S->fw, at, FW_HANG, NULL)
								: NULL;
		if (f)
			f->tag = S->h[v].cls + 1;
	}
	if (S->used > S->r->nodes && S->used - S->r->nodes > S->r->spares_used_max)
		S->r->spares_used_max = S->used - S->r->nodes;
	return 0;
}

static void strike_ends(struct sim *S)
{
	if (!S->strike)
		return;
	double end = S->fw.now < S->horizon ? S->fw.now : S->horizon;
	if (end > S->strike_at)
		S->r->lost_s[SIM_LOST_DETECTION] += end - S->strike_at;
	S->strike = false;
}

static void sim_wait(void *ctx, struct sup *s, int ms, struct sup_wake *wk)
{
	struct sim *S = the_sim;
	S->wait(ctx, s, ms, wk);
	if (wk->step_ended)
		strike_ends(S);
}

static int sim_stop(void *ctx, struct sup *s, unsigned grace_ms, struct strbuf *err)
{
	struct sim *S = the_sim;
	strike_ends(S);
	return S->stop(ctx, s, grace_ms, err);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(path);
	return 0;
}

static int check_params(const struct sim_params *p, const struct sim_model *m,
			struct strbuf *err)
{
	if (!p->gpus_per_node || !p->gpus || p->gpus % p->gpus_per_node) {
		strbuf_addf(err, "--gpus %u is not a whole number of nodes of %u GPUs", p->gpus,
			    p->gpus_per_node);
		return -1;
	}
	if (!(p->days > 0) || !(p->step_s > 0) || !(p->checkpoint_every_s >= p->step_s) ||
	    !(p->check_interval_s > 0)) {
		strbuf_addstr(err, "--days, --step-time and --check-interval must be above 0, "
			      "--checkpoint-every at least one step");
		return -1;
	}
	if (!(sim_model_total_rate(m) > 0)) {
		strbuf_addstr(err, "the model has no fault at all (every rate is 0)");
		return -1;
	}
	/* each fault is a recovery of the real supervisor: more than one a minute is no run */
	double mtbf_s = 86400 / (sim_model_total_rate(m) * p->gpus);
	if (mtbf_s < 60) {
		strbuf_addf(err, "the model gives %u GPUs a fault every %.3g s: no job runs at that "
			    "rate (the least this simulates is one a minute)", p->gpus, mtbf_s);
		return -1;
	}
	return 0;
}

/* Until enough hosts are whole again for the job (or the horizon): the wait, in seconds. */
static double wait_for_hosts(struct sim *S)
{
	double start = S->fw.now;
	for (;;) {
		size_t whole = 0;
		for (size_t i = 0; i < S->nr; i++)
			whole += !S->h[i].broken;
		if (whole >= S->r->nodes || S->fw.now >= S->horizon)
			break;
		double t = S->next_repair < S->horizon ? S->next_repair : S->horizon;
		S->fw.now = t;
		heal_due(S, t);
	}
	return S->fw.now - start;
}

static int run_all(struct sim *S, const char *dir, struct strbuf *err)
{
	struct fakeworld *fw = &S->fw;
	const struct sim_params *p = S->p;
	for (unsigned run = 1;; run++) {
		char run_dir[4300];
		snprintf(run_dir, sizeof(run_dir), "%s/run%u", dir, run);
		struct sup_options o;
		fw_options(fw, &o, run_dir, p->spares);
		o.max_restarts = 1000000000u;
		o.check_interval_s = o.node_poll_s = p->check_interval_s;
		/* a checkpoint's stall is no hang: the floor is above it, as a user would set it */
		double line_s = (double)(fw->line_every ? fw->line_every : 1) * p->step_s;
		o.detect.hang_floor_s = p->hang_floor_s;
		if (o.detect.hang_floor_s < 2 * (p->checkpoint_cost_s + line_s))
			o.detect.hang_floor_s = 2 * (p->checkpoint_cost_s + line_s);
		o.detect.startup_timeout_s = 2 * p->restart_cost_s + 300;
		if (p->lat_restart_delay_s > 0)
			o.restart_delay_s = p->lat_restart_delay_s;
		if (run == 1) /* the allocation's end; it stays in the world's list until then */
			fw_fault(fw, S->horizon, FW_SIGNAL, NULL)->code = SIGTERM;
		S->gen = run;
		S->used = 0;
		for (size_t i = 0; i < S->nr; i++)
			fw->hosts[i].drained = false; /* a new allocation */
		struct strbuf e = STRBUF_INIT;
		unsigned launches = fw->launches;
		int rc = supervise_in(&o, &fw->w, &e);
		S->r->restarts += fw->launches - launches > 0 ? fw->launches - launches - 1 : 0;
		if (rc == 2) {
			strbuf_addf(err, "the supervisor did not start: %s", e.buf);
			strbuf_release(&e);
			return -1;
		}
		strbuf_release(&e);
		/* that run's journal and rank files are read by no one: tmpfs is memory */
		nftw(run_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		if (fw->now >= S->horizon)
			return 0;
		if (run >= SIM_REQUEUES_MAX) {
			strbuf_addf(err, "the job was requeued %u times: it cannot run", run);
			return -1;
		}
		S->r->requeues++;
		fw->live = false;
		strike_ends(S); /* the fault that ended the run was seen by now */
		double before = fw->now;
		double waited = wait_for_hosts(S);
		S->r->lost_s[SIM_LOST_WAITING] += waited;
		if (fw->now == before)
			fw->now += 1; /* time moves on even when no host was missing */
		tick(fw, S);
	}
}

static int run_vigil(const struct sim_params *p, const struct sim_model *m,
		     const struct sim_schedule *sched, struct sim_result *r, struct strbuf *err);

int sim_run(const struct sim_params *p, const struct sim_model *m, struct sim_result *r,
	    struct strbuf *err)
{
	memset(r, 0, sizeof(*r));
	if (check_params(p, m, err) < 0)
		return -1;
	r->nodes = p->gpus / p->gpus_per_node;
	r->wall_s = p->days * 86400;
	r->mtbf_s = 86400 / (sim_model_total_rate(m) * p->gpus);
	r->young_daly_s = sqrt(2 * r->mtbf_s * p->checkpoint_cost_s);
	/* the faults are fixed before the policy runs: every policy gets the same ones */
	struct sim_schedule drawn = { 0 };
	const struct sim_schedule *sched = p->schedule;
	if (!sched) {
		sim_schedule_draw(m, p->gpus, r->nodes, r->wall_s, p->seed, &drawn);
		sched = &drawn;
	}
	r->faults = (unsigned)sched->nr;
	int ret = p->policy == SIM_POLICY_VIGIL ? run_vigil(p, m, sched, r, err)
						: sim_policy_run(p, m, sched, r, err);
	sim_schedule_release(&drawn);
	return ret;
}

static int run_vigil(const struct sim_params *p, const struct sim_model *m,
		     const struct sim_schedule *sched, struct sim_result *r, struct strbuf *err)
{
	struct sim S;
	memset(&S, 0, sizeof(S));
	S.p = p;
	S.m = m;
	S.r = r;
	S.sched = sched;
	S.horizon = r->wall_s;
	S.nr = (size_t)r->nodes + p->spares;

	const char *tmp = p->tmpdir && *p->tmpdir ? p->tmpdir : "/tmp";
	char dir[4200];
	if (strlen(tmp) > 4000) {
		strbuf_addstr(err, "TMPDIR is too long");
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/vigil-sim-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		strbuf_addf(err, "cannot make a directory in '%s': %s", tmp, strerror(errno));
		return -1;
	}
	struct fakeworld *fw = &S.fw;
	fw_init(fw, S.nr, p->gpus_per_node);
	fw->quiet = true;
	fw->train_forever = true;
	fw->startup_s = p->restart_cost_s;
	fw->step_s = p->step_s;
	fw->ckpt_every = (uint64_t)llround(p->checkpoint_every_s / p->step_s);
	if (!fw->ckpt_every)
		fw->ckpt_every = 1;
	fw->ckpt_cost_s = p->checkpoint_cost_s;
	if (p->lat_check_s > 0)
		fw->check_s = p->lat_check_s;
	if (p->lat_stop_s > 0)
		fw->stop_s = p->lat_stop_s;
	if (p->lat_stacks_s > 0)
		fw->evidence_s = p->lat_stacks_s;
	if (p->lat_smoke_s > 0)
		fw->smoke_s = p->lat_smoke_s;
	fw->line_every = (uint64_t)ceil(SIM_LINE_EVERY_S / p->step_s);
	fw->tick = tick;
	fw->tick_arg = &S;
	fw->struck = fault_struck;
	S.h = xcalloc(S.nr, sizeof(*S.h));
	S.next_repair = INFINITY;
	fw->wake_at = sched->nr && sched->f[0].at < S.horizon ? sched->f[0].at : 0;
	S.launch = fw->w.launch;
	S.wait = fw->w.wait;
	S.stop = fw->w.stop;
	fw->w.launch = sim_launch;
	fw->w.wait = sim_wait;
	fw->w.stop = sim_stop;
	/* no step file, and the world wakes the loop for every line, end and watch: the loop
	 * need not turn four times a virtual second (world.h) */
	fw->w.turn_ms = 60000;
	fw->w.no_step_file = true;
	/* each run's directory is private, on /dev/shm, and removed when it ends: its journal
	 * need not be written a record at a time nor fsync'd (world.h) */
	fw->w.run_dir_private = true;
	fw->slurm_unusual_only = true;
	/* the watch asks about the few hosts that changed, not all of them each round */
	fw->watch_changed_only = true;
	the_sim = &S;

	int ret = run_all(&S, dir, err);
	if (ret == 0) {
		if (!S.ended) /* the horizon came in a wait with nothing else to do */
			tick(fw, &S);
		r->steps = S.end_step;
		r->check_rounds = fw->check_rounds;
		r->productive_s = (double)S.end_step * p->step_s;
		r->lost_s[SIM_LOST_CHECKPOINT] = (double)S.end_ckpts * p->checkpoint_cost_s;
		r->lost_s[SIM_LOST_RECOMPUTE] = (double)S.end_recomputed * p->step_s;
		r->lost_s[SIM_LOST_SLOWDOWN] = S.end_slow;
		/* what is left of the wall time is the recoveries' own: checks, stops, srun,
		 * the trainer's start-up, and the part of a step a fault cut short */
		double rest = r->wall_s - r->productive_s;
		for (int c = 0; c < SIM_CAUSE_NR; c++)
			if (c != SIM_LOST_RESTART)
				rest -= r->lost_s[c];
		r->lost_s[SIM_LOST_RESTART] = rest > 0 ? rest : 0;
		r->ettr = r->productive_s / r->wall_s;
		r->goodput = r->ettr * r->nodes / (double)(r->nodes + p->spares);
	}
	the_sim = NULL;
	fw_release(fw);
	free(S.h);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return ret;
}
