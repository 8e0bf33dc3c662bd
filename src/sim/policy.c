/*
 * policy.c: vigil sim's other policies (sim.h, docs/SIM.md "Policies"): what torchrun
 * --max-restarts does, and what an operator paged on each failure does, against the same
 * world's rules as vigil's run (sim.c) and the same fault schedule. Not the real supervisor
 * (only vigil's is): an event loop from one instant that matters to the next (a fault, a
 * broken host failing an attempt again, a failure seen, a repair, the end), with the
 * trainer of the simulated world (world.c): a start-up of --restart-cost, steps of
 * --step-time paced by the slowest host, a checkpoint stall every --checkpoint-every, a
 * restart from the last checkpoint.
 *
 *   torchrun: a crash is seen at its next monitor tick (half of --monitor-interval, on
 *   average), then the workers are stopped and started again after a rendezvous; a hang only
 *   at NCCL's watchdog timeout; a lost node ends the job until an operator (paged, after
 *   --operator-minutes) puts a spare in its place, or waits for its repair; nothing is ever
 *   checked or excluded: a broken host fails every attempt until its repair ends, a slow one
 *   slows every step until then, a sick one is never noticed.
 *   manual: no restart without the operator: every failure (a crash at once, a hang or a lost
 *   node at NCCL's timeout) pages; the operator answers after --operator-minutes, runs the
 *   checks on the job's hosts, replaces every broken host a check sees (a lost one too) by a
 *   whole spare (or waits for a repair) and starts the job again. A host no check sees (SDC)
 *   stays and fails again.
 */
#include "sim.h"

#include "../lib/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* As sim.c: a broken host fails each attempt it joins this long after the trainer's start. */
#define POL_RELAPSE_S 300.0
/* torchrun's own share of a restart beyond the trainer's start-up (stopping the workers, the
 * rendezvous): run-faults' torchrun went from a crash to its next first step in 2.7-4.2 s of
 * which the trainer's start was ~3 s and the monitor tick 0.9-1.7 s (docs/PERFORMANCE.md) */
#define POL_RDZV_S 1.0
/* torchrun stops its workers with SIGTERM and waits this long before SIGKILL (the elastic
 * agent's shutdown timeout): a rank frozen in a collective does not obey, so an attempt that
 * hung and was then ended by another rank's crash costs it (run-faults: 30 s of its 54 s).
 * A hang seen at NCCL's timeout is not: the watchdog aborts the rank itself. */
#define POL_TORCHRUN_GRACE_S 30.0

struct phost {
	bool broken, lost;
	int cls;
	double repair_until;
	bool in_job;
	bool used; /* a spare that took a place */
};

struct pol {
	const struct sim_params *p;
	const struct sim_model *m;
	struct sim_result *r;
	bool manual;
	double nccl_s, operator_s, monitor_s;
	struct phost *h;
	size_t nr;
	unsigned nodes;
	size_t *slot; /* the job's slots: host indices */
	size_t next;  /* the schedule's next fault */
	double now, horizon;
	/* the trainer, as world.c's */
	uint64_t step, ckpt, ckpt_every, ckpts, recomputed;
	double next_line, slow_lost, pace;
	unsigned launches;
	/* the attempt */
	bool live, hit;
	double hit_at, seen_at;
	double relapse_at; /* broken hosts let in fail it then (INFINITY: none) */
	bool hung, seen_by_crash; /* a hang held it; what ended it was another rank's crash */
};

static double class_detect(struct pol *P, const struct sim_class *k)
{
	double d;
	switch (k->seen) {
	case SIM_SEEN_CRASH:
		/* manual: the job ends, the page goes out; torchrun: its next monitor tick */
		d = P->manual ? 0 : P->monitor_s / 2;
		break;
	case SIM_SEEN_HANG:
	case SIM_SEEN_LOST: /* the other ranks wait in a collective on the dead one */
		d = P->nccl_s;
		break;
	default:
		return -1;
	}
	if (P->manual || k->seen == SIM_SEEN_LOST)
		d += P->operator_s;
	return d;
}

static void find_pace(struct pol *P)
{
	P->pace = 1;
	for (unsigned i = 0; i < P->nodes; i++) {
		const struct phost *h = &P->h[P->slot[i]];
		if (h->broken && P->m->classes[h->cls].seen == SIM_SEEN_SLOW &&
		    SIM_SLOW_FACTOR > P->pace)
			P->pace = SIM_SLOW_FACTOR;
	}
}

/* The trainer's steps up to t (none after the attempt was struck: a crash ends it, a hang
 * holds it). */
static void train_until(struct pol *P, double t)
{
	if (!P->live)
		return;
	if (P->hit && P->hit_at < t)
		t = P->hit_at;
	double step_s = P->p->step_s;
	while (P->next_line <= t) {
		P->step++;
		double dt = step_s * P->pace;
		P->slow_lost += dt - step_s;
		if (P->step % P->ckpt_every == 0) {
			P->ckpt = P->step;
			P->ckpts++;
			dt += P->p->checkpoint_cost_s;
		}
		P->next_line += dt;
	}
}

static void launch(struct pol *P)
{
	if (P->launches && P->step > P->ckpt)
		P->recomputed += P->step - P->ckpt;
	P->step = P->ckpt;
	P->launches++;
	P->live = true;
	P->hit = P->hung = false;
	find_pace(P);
	P->next_line = P->now + P->p->restart_cost_s;
	P->relapse_at = P->next_line + POL_RELAPSE_S;
}

/* A broken host of the attempt that fails it (a crash or a hang class), or -1. */
static int relapsing_class(struct pol *P)
{
	for (unsigned i = 0; i < P->nodes; i++) {
		const struct phost *h = &P->h[P->slot[i]];
		if (!h->broken)
			continue;
		enum sim_seen seen = P->m->classes[h->cls].seen;
		if (seen == SIM_SEEN_CRASH || seen == SIM_SEEN_HANG)
			return h->cls;
	}
	return -1;
}

static void strike(struct pol *P, int cls, double t)
{
	const struct sim_class *k = &P->m->classes[cls];
	P->r->interruptions++;
	P->r->by_class[cls]++;
	double d = class_detect(P, k);
	if (d < 0)
		return; /* slow, sick: the run goes on */
	if (k->seen == SIM_SEEN_HANG)
		P->hung = true;
	if (!P->hit) {
		P->hit = true;
		P->hit_at = t;
		P->seen_at = t + d;
		P->seen_by_crash = k->seen == SIM_SEEN_CRASH;
	} else if (t + d < P->seen_at) {
		P->seen_at = t + d;
		P->seen_by_crash = k->seen == SIM_SEEN_CRASH;
	}
}

static void heal_due(struct pol *P)
{
	bool pace = false;
	for (size_t i = 0; i < P->nr; i++)
		if (P->h[i].broken && P->h[i].repair_until <= P->now) {
			P->h[i].broken = P->h[i].lost = false;
			pace |= P->h[i].in_job;
		}
	if (pace)
		find_pace(P);
}

static double next_repair(struct pol *P)
{
	double t = INFINITY;
	for (size_t i = 0; i < P->nr; i++)
		if (P->h[i].broken && P->h[i].repair_until < t)
			t = P->h[i].repair_until;
	return t;
}

/* The schedule's fault f, at P->now. */
static void deliver(struct pol *P, const struct sim_fault_at *f)
{
	if (!P->live || (P->hit && P->now >= P->seen_at))
		return; /* no job runs: no one to strike (as sim.c) */
	size_t v = P->slot[f->slot % P->nodes];
	const struct sim_class *k = &P->m->classes[f->cls];
	struct phost *h = &P->h[v];
	if (k->host_fault) {
		if (h->broken)
			return; /* broken already: the one fault it has is what counts */
		h->broken = true;
		h->cls = f->cls;
		h->lost = k->seen == SIM_SEEN_LOST;
		double hours = P->p->repair_hours > 0 ? P->p->repair_hours : k->repair_hours;
		h->repair_until = P->now + hours * 3600;
		if (k->seen == SIM_SEEN_SLOW)
			find_pace(P);
	}
	strike(P, f->cls, P->now);
}

/* A whole host out of the job for slot i, waiting for repairs if there is none (the wait is
 * waiting_for_nodes). */
static void replace(struct pol *P, unsigned i)
{
	for (;;) {
		if (!P->h[P->slot[i]].broken)
			return; /* repaired while the operator waited: it stays */
		for (size_t j = 0; j < P->nr; j++) {
			struct phost *h = &P->h[j];
			if (h->in_job || h->broken)
				continue;
			P->h[P->slot[i]].in_job = false;
			h->in_job = true;
			if (j >= P->nodes && !h->used) {
				h->used = true;
				P->r->spares_used_max++;
			}
			P->slot[i] = j;
			return;
		}
		double t = next_repair(P);
		if (!(t < P->horizon)) {
			P->r->lost_s[SIM_LOST_WAITING] += P->horizon - P->now;
			P->now = P->horizon;
			return;
		}
		P->r->lost_s[SIM_LOST_WAITING] += t - P->now;
		P->r->requeues++; /* counted as the spares running out */
		P->now = t;
		heal_due(P);
	}
}

/* The attempt's failure is seen (and, for manual, the operator is there): stop it, put
 * whole hosts where they are needed, start again. */
static void recover(struct pol *P)
{
	double from = P->hit_at, to = P->now < P->horizon ? P->now : P->horizon;
	if (to > from)
		P->r->lost_s[SIM_LOST_DETECTION] += to - from;
	P->live = P->hit = false;
	for (unsigned i = 0; i < P->nodes && P->now < P->horizon; i++) {
		struct phost *h = &P->h[P->slot[i]];
		if (!h->broken)
			continue;
		/* torchrun's operator replaces a lost node only; manual's every host a check sees
		 * (a lost one does not answer: seen too) */
		bool out = h->lost || (P->manual && P->m->classes[h->cls].check_sees);
		if (out)
			replace(P, i);
	}
	if (P->now >= P->horizon)
		return;
	if (!P->manual)
		P->now += POL_RDZV_S + (P->hung && P->seen_by_crash ? POL_TORCHRUN_GRACE_S : 0);
	if (P->now < P->horizon)
		launch(P);
}

int sim_policy_run(const struct sim_params *p, const struct sim_model *m,
		   const struct sim_schedule *s, struct sim_result *r, struct strbuf *err)
{
	(void)err;
	struct pol P;
	memset(&P, 0, sizeof(P));
	P.p = p;
	P.m = m;
	P.r = r;
	P.manual = p->policy == SIM_POLICY_MANUAL;
	P.nccl_s = p->nccl_timeout_s > 0 ? p->nccl_timeout_s : SIM_NCCL_TIMEOUT_S;
	P.operator_s = 60 * (p->operator_minutes > 0 ? p->operator_minutes : SIM_OPERATOR_MINUTES);
	P.monitor_s = p->torchrun_monitor_s > 0 ? p->torchrun_monitor_s : SIM_TORCHRUN_MONITOR_S;
	P.nodes = r->nodes;
	P.nr = (size_t)r->nodes + p->spares;
	P.h = xcalloc(P.nr, sizeof(*P.h));
	P.slot = xcalloc(P.nodes, sizeof(*P.slot));
	for (unsigned i = 0; i < P.nodes; i++) {
		P.slot[i] = i;
		P.h[i].in_job = true;
	}
	P.horizon = r->wall_s;
	P.ckpt_every = (uint64_t)llround(p->checkpoint_every_s / p->step_s);
	if (!P.ckpt_every)
		P.ckpt_every = 1;
	launch(&P);
	while (P.now < P.horizon) {
		/* the next instant that matters */
		double t = P.horizon;
		if (P.next < s->nr && s->f[P.next].at < t)
			t = s->f[P.next].at;
		if (P.live && !P.hit && P.relapse_at < t)
			t = P.relapse_at;
		if (P.hit && P.seen_at < t)
			t = P.seen_at;
		double rep = next_repair(&P);
		if (rep < t)
			t = rep;
		if (t < P.now)
			t = P.now;
		train_until(&P, t);
		P.now = t;
		if (t >= P.horizon)
			break;
		heal_due(&P);
		if (P.next < s->nr && s->f[P.next].at <= t) {
			deliver(&P, &s->f[P.next++]);
			continue;
		}
		if (P.live && !P.hit && P.relapse_at <= t) {
			P.relapse_at = INFINITY;
			int c = relapsing_class(&P);
			if (c >= 0)
				strike(&P, c, t);
			continue;
		}
		if (P.hit && P.seen_at <= t)
			recover(&P);
	}
	if (P.hit) { /* seen after the end: detecting until then */
		if (P.horizon > P.hit_at)
			r->lost_s[SIM_LOST_DETECTION] += P.horizon - P.hit_at;
	}
	r->steps = P.step;
	r->restarts = P.launches > 1 ? P.launches - 1 : 0;
	r->productive_s = (double)P.step * p->step_s;
	r->lost_s[SIM_LOST_CHECKPOINT] = (double)P.ckpts * p->checkpoint_cost_s;
	r->lost_s[SIM_LOST_RECOMPUTE] = (double)P.recomputed * p->step_s;
	r->lost_s[SIM_LOST_SLOWDOWN] = P.slow_lost;
	double rest = r->wall_s - r->productive_s;
	for (int c = 0; c < SIM_CAUSE_NR; c++)
		if (c != SIM_LOST_RESTART)
			rest -= r->lost_s[c];
	r->lost_s[SIM_LOST_RESTART] = rest > 0 ? rest : 0;
	r->ettr = r->productive_s / r->wall_s;
	r->goodput = r->ettr * r->nodes / (double)(r->nodes + p->spares);
	free(P.h);
	free(P.slot);
	return 0;
}
