/*
 * hang.c: the rank that stopped a hung collective, from the flight recorder files of every
 * rank (see hang.h for the states and the matching of collectives across ranks).
 */
#include "hang.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *hang_state_name(enum hang_state s)
{
	switch (s) {
	case HANG_IDLE: return "idle";
	case HANG_NEVER_ENTERED: return "never_entered";
	case HANG_NEVER_FINISHED: return "never_finished";
	case HANG_STUCK_INSIDE: return "stuck_inside";
	case HANG_BEHIND: return "behind";
	case HANG_SAME_COUNT: return "same_count";
	case HANG_INCOMPLETE: return "incomplete";
	}
	return "unknown";
}

void hang_init(struct hang *h)
{
	memset(h, 0, sizeof(*h));
}

void hang_release(struct hang *h)
{
	for (size_t i = 0; i < h->nr; i++) {
		for (size_t k = 0; k < h->comms[i].nr; k++)
			free(h->comms[i].m[k].ops);
		free(h->comms[i].m);
		free(h->comms[i].missing);
	}
	free(h->comms);
	for (size_t i = 0; i < h->nr_files; i++) {
		free(h->files[i].name);
		free(h->files[i].error);
	}
	free(h->files);
	free(h->stopped);
	memset(h, 0, sizeof(*h));
}

static void add_file(struct hang *h, const char *name, const char *why)
{
	ALLOC_GROW(h->files, h->nr_files + 1, h->alloc_files);
	h->files[h->nr_files].name = xstrdup(name);
	h->files[h->nr_files].error = why ? xstrdup(why) : NULL;
	h->nr_files++;
}

void hang_add_error(struct hang *h, const char *name, const char *why)
{
	add_file(h, name, why);
}

void hang_add_stopped(struct hang *h, int32_t rank, int32_t pid, unsigned t, unsigned samples)
{
	if (rank < 0 || pid <= 0 || !samples || 2 * (uint64_t)t <= samples)
		return;
	ALLOC_GROW(h->stopped, h->nr_stopped + 1, h->alloc_stopped);
	h->stopped[h->nr_stopped++] = (struct hang_stopped){ rank, pid, t, samples };
}

/* Inside the collective and stopped: the culprits are the stopped ranks, the others wait for
 * them (hang.h). */
static void mark_stopped(const struct hang *h, struct hang_comm *c)
{
	size_t n = 0;
	for (size_t k = 0; k < c->nr; k++)
		for (size_t i = 0; i < h->nr_stopped; i++)
			if (h->stopped[i].rank == c->m[k].global_rank &&
			    h->stopped[i].pid == c->m[k].pid && c->m[k].enqueued >= c->waiting) {
				c->m[k].stopped_t = h->stopped[i].t;
				c->m[k].stopped_samples = h->stopped[i].samples;
				n++;
				break;
			}
	if (!n)
		return;
	for (size_t k = 0; k < c->nr; k++)
		c->m[k].role = c->m[k].stopped_samples ? 4 : 0;
	c->culprits = n;
	c->stopped = true;
}

static struct hang_comm *comm_for(struct hang *h, uint64_t hash, const char *name)
{
	for (size_t i = 0; i < h->nr; i++)
		if (h->comms[i].hash == hash)
			return &h->comms[i];
	ALLOC_GROW(h->comms, h->nr + 1, h->alloc);
	struct hang_comm *c = &h->comms[h->nr++];
	memset(c, 0, sizeof(*c));
	c->hash = hash;
	c->nranks = -1;
	snprintf(c->name, sizeof(c->name), "%s", name);
	return c;
}

void hang_add_ring(struct hang *h, const char *name, const struct nring *r)
{
	add_file(h, name, NULL);
	h->rings++;
	uint64_t seen = r->dumped_ns;
	for (uint32_t i = 0; i < r->ncomms && i < NREC_COMMS_MAX; i++) {
		const struct nring_comm *rc = &r->comms[i];
		if (rc->flags & NREC_COMM_SHARED)
			continue; /* several communicators mixed in one slot: not comparable */
		struct hang_comm *c = comm_for(h, rc->hash, rc->name);
		if (rc->nranks > c->nranks && rc->nranks <= HANG_RANKS_MAX)
			c->nranks = rc->nranks;
		if (!c->name[0] && rc->name[0])
			snprintf(c->name, sizeof(c->name), "%s", rc->name);
		/* the same process twice (live ring and dump): keep the one that saw more */
		struct hang_member *m = NULL;
		for (size_t k = 0; k < c->nr; k++)
			/* the same process: its pid, host and rank, and a file of the same owner
			 * (a file another user planted that claims it is another rank file, a
			 * duplicate: doubt) */
			if (c->m[k].pid == r->pid && !strcmp(c->m[k].host, r->host) &&
			    c->m[k].comm_rank == rc->rank && c->m[k].file_uid == r->file_uid) {
				m = &c->m[k];
				break;
			}
		if (m) {
			if (m->written > r->written || (m->written == r->written && m->seen_ns >= seen))
				continue;
			free(m->ops);
		} else {
			ALLOC_GROW(c->m, c->nr + 1, c->alloc);
			m = &c->m[c->nr++];
		}
		memset(m, 0, sizeof(*m));
		m->comm_rank = rc->rank;
		m->file_uid = r->file_uid;
		m->global_rank = r->global_rank;
		m->pid = r->pid;
		snprintf(m->host, sizeof(m->host), "%s", r->host);
		snprintf(m->file, sizeof(m->file), "%s", name);
		m->enqueued = rc->coll_enqueued;
		m->started = rc->coll_started;
		m->done = rc->coll_done;
		m->last_enqueued_ns = rc->last_enqueued_ns;
		m->last_done_ns = rc->last_done_ns;
		m->seen_ns = seen;
		m->written = r->written;
		m->kernel_events = rc->flags & NREC_COMM_KERNEL_EVENTS;
		if (rc->nr_ops) {
			m->ops = xmalloc(rc->nr_ops * sizeof(*m->ops));
			memcpy(m->ops, rc->ops, rc->nr_ops * sizeof(*m->ops));
			m->nr_ops = rc->nr_ops;
		}
	}
}

static const struct nring_op *member_op(const struct hang_member *m, uint64_t idx)
{
	for (size_t k = m->nr_ops; k-- > 0;)
		if (m->ops[k].op_index == idx)
			return &m->ops[k];
	return NULL;
}

static int cmp_member(const void *a, const void *b)
{
	const struct hang_member *x = a, *y = b;
	return (x->comm_rank > y->comm_rank) - (x->comm_rank < y->comm_rank);
}

static void finish_comm(const struct hang *h, struct hang_comm *c, double now_s)
{
	qsort(c->m, c->nr, sizeof(*c->m), cmp_member);
	/* one rank, two processes (or two owners): which is the rank cannot be told, and a
	 * verdict on either would rest on a file anyone could have put there. Doubt, no verdict */
	for (size_t k = 1; k < c->nr; k++)
		if (c->m[k].comm_rank == c->m[k - 1].comm_rank &&
		    (k < 2 || c->m[k - 2].comm_rank != c->m[k].comm_rank)) {
			if (!c->nr_dup)
				c->dup_rank = c->m[k].comm_rank;
			c->nr_dup++;
		}
	/* the ranks with no file */
	if (c->nranks > 0 && c->nranks <= HANG_RANKS_MAX) {
		for (int32_t r = 0, k = 0; r < c->nranks; r++) {
			while ((size_t)k < c->nr && c->m[k].comm_rank < r)
				k++;
			if ((size_t)k < c->nr && c->m[k].comm_rank == r)
				continue;
			ALLOC_GROW(c->missing, c->nr_missing + 1, c->alloc_missing);
			c->missing[c->nr_missing++] = r;
		}
	}
	uint64_t min_enq = UINT64_MAX, max_enq = 0, min_done = UINT64_MAX;
	bool completion = true;
	for (size_t k = 0; k < c->nr; k++) {
		const struct hang_member *m = &c->m[k];
		min_enq = m->enqueued < min_enq ? m->enqueued : min_enq;
		max_enq = m->enqueued > max_enq ? m->enqueued : max_enq;
		min_done = m->done < min_done ? m->done : min_done;
		completion &= m->kernel_events || !m->enqueued;
	}
	if (!c->nr)
		return;
	if (c->nr_dup) {
		c->state = HANG_INCOMPLETE;
		return;
	}
	uint64_t w;
	if (completion) {
		w = min_done + 1;
		if (min_done == max_enq) {
			c->state = c->nr_missing ? HANG_INCOMPLETE : HANG_IDLE;
			c->waiting = 0;
			c->min_done_all = c->nr_missing > 0;
			if (c->nr_missing)
				c->waiting = max_enq + 1; /* maybe a missing rank is in the next */
			goto when;
		}
		size_t finished = 0, never = 0;
		for (size_t k = 0; k < c->nr; k++) {
			struct hang_member *m = &c->m[k];
			if (m->enqueued < w) {
				m->role = 1;
				never++;
			} else if (m->done >= w) {
				finished++;
			}
		}
		if (never) {
			c->state = HANG_NEVER_ENTERED;
			c->culprits = never;
		} else if (finished) {
			c->state = HANG_NEVER_FINISHED;
			for (size_t k = 0; k < c->nr; k++)
				if (c->m[k].done < w) {
					c->m[k].role = 2;
					c->culprits++;
				}
		} else if (c->nr_missing) {
			c->state = HANG_INCOMPLETE;
		} else {
			c->state = HANG_STUCK_INSIDE;
			/* every rank is inside it: a GPU that never began it points at its host */
			size_t began = 0;
			for (size_t k = 0; k < c->nr; k++)
				began += c->m[k].started >= w;
			if (began)
				for (size_t k = 0; k < c->nr; k++)
					if (c->m[k].started < w) {
						c->m[k].role = 3;
						c->culprits++;
					}
		}
	} else {
		if (min_enq == max_enq) {
			c->state = c->nr_missing ? HANG_INCOMPLETE : HANG_SAME_COUNT;
			c->waiting = max_enq;
			w = max_enq;
		} else {
			w = min_enq + 1;
			c->state = HANG_BEHIND;
			for (size_t k = 0; k < c->nr; k++)
				if (c->m[k].enqueued < w) {
					c->m[k].role = 1;
					c->culprits++;
				}
		}
	}
	c->waiting = w;
when:
	/* the collective's details and how long the first rank in it has waited */
	if (c->waiting) {
		uint64_t first = 0, seen = 0;
		for (size_t k = 0; k < c->nr; k++) {
			const struct hang_member *m = &c->m[k];
			const struct nring_op *o = member_op(m, c->waiting);
			if (!o)
				continue;
			if (!c->have_op) {
				c->op = *o;
				c->have_op = true;
			}
			if (!o->done_ns && (!first || o->enqueued_ns < first))
				first = o->enqueued_ns;
		}
		for (size_t k = 0; k < c->nr; k++)
			seen = c->m[k].seen_ns > seen ? c->m[k].seen_ns : seen;
		double until = seen ? (double)seen / 1e9 : now_s;
		if (first && until * 1e9 > (double)first)
			c->waited_s = until - (double)first / 1e9;
	}
}

static int severity(enum hang_state s)
{
	switch (s) {
	case HANG_NEVER_ENTERED: return 6;
	case HANG_BEHIND: return 5;
	case HANG_NEVER_FINISHED: return 4;
	case HANG_STUCK_INSIDE: return 3;
	case HANG_INCOMPLETE: return 2;
	case HANG_SAME_COUNT: return 1;
	case HANG_IDLE: return 0;
	}
	return 0;
}

void hang_finish(struct hang *h, double now_s)
{
	h->now_s = now_s;
	h->main = NULL;
	h->all_idle = h->nr > 0;
	for (size_t i = 0; i < h->nr; i++) {
		struct hang_comm *c = &h->comms[i];
		finish_comm(h, c, now_s);
		if (c->state == HANG_STUCK_INSIDE || c->state == HANG_NEVER_FINISHED)
			mark_stopped(h, c);
		if (c->state != HANG_IDLE)
			h->all_idle = false;
		/* the most telling communicator; among equals the one waited in longest */
		if (c->state != HANG_IDLE &&
		    (!h->main || severity(c->state) > severity(h->main->state) ||
		     (severity(c->state) == severity(h->main->state) &&
		      c->waited_s > h->main->waited_s)))
			h->main = c;
	}
}

bool hang_found(const struct hang *h)
{
	/* incomplete: ranks unknown (no file, a damaged one, two for one rank) decide it */
	return h->main && h->main->state != HANG_SAME_COUNT && h->main->state != HANG_INCOMPLETE;
}

/* ---- output ---- */

static void add_bytes(struct strbuf *out, uint64_t b)
{
	if (b >= (1u << 30))
		strbuf_addf(out, "%.1f GiB", (double)b / (1u << 30));
	else if (b >= (1u << 20))
		strbuf_addf(out, "%.1f MiB", (double)b / (1u << 20));
	else if (b >= 1024)
		strbuf_addf(out, "%.1f KiB", (double)b / 1024);
	else
		strbuf_addf(out, "%llu bytes", (unsigned long long)b);
}

static void add_member(struct strbuf *out, const struct hang_member *m)
{
	if (m->global_rank >= 0)
		strbuf_addf(out, "rank %d", m->global_rank);
	else
		strbuf_addf(out, "communicator rank %d", m->comm_rank);
	strbuf_addstr(out, " (host ");
	strbuf_add_clean(out, m->host[0] ? m->host : "?");
	strbuf_addf(out, ", pid %d)", m->pid);
}

static void add_role_list(struct strbuf *out, const struct hang_comm *c, int role, size_t max)
{
	size_t n = 0, total = 0;
	for (size_t k = 0; k < c->nr; k++)
		total += c->m[k].role == role;
	for (size_t k = 0; k < c->nr && n < max; k++) {
		if (c->m[k].role != role)
			continue;
		if (n)
			strbuf_addstr(out, n + 1 == total || n + 1 == max ? " and " : ", ");
		add_member(out, &c->m[k]);
		n++;
	}
	if (total > n)
		strbuf_addf(out, " (and %zu more)", total - n);
}

static void add_comm(struct strbuf *out, const struct hang_comm *c);

static void add_op(struct strbuf *out, const struct hang_comm *c)
{
	if (c->have_op) {
		strbuf_add_clean(out, c->op.func[0] ? c->op.func : "collective");
		strbuf_addf(out, " #%llu", (unsigned long long)c->waiting);
		/* NCCL's own count is per function: "the 50th AllReduce" is what a trainer counts */
		if (c->op.func[0] && c->op.nccl_seq < UINT64_MAX - 1) {
			unsigned long long n = (unsigned long long)c->op.nccl_seq + 1;
			const char *sfx = n % 100 >= 11 && n % 100 <= 13 ? "th"
					  : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
			strbuf_addf(out, ", its %llu%s ", n, sfx);
			strbuf_add_clean(out, c->op.func);
		}
		if (c->op.bytes) {
			strbuf_addstr(out, " (");
			add_bytes(out, c->op.bytes);
			if (c->op.dtype[0]) {
				strbuf_addch(out, ' ');
				strbuf_add_clean(out, c->op.dtype);
			}
			strbuf_addch(out, ')');
		}
	} else {
		strbuf_addf(out, "collective #%llu", (unsigned long long)c->waiting);
	}
	strbuf_addstr(out, " of ");
	add_comm(out, c);
}

static void add_comm(struct strbuf *out, const struct hang_comm *c)
{
	strbuf_addf(out, "communicator %016llx", (unsigned long long)c->hash);
	if (c->name[0]) {
		strbuf_addstr(out, " '");
		strbuf_add_clean(out, c->name);
		strbuf_addch(out, '\'');
	}
	if (c->nranks > 0)
		strbuf_addf(out, " (%d ranks)", c->nranks);
}

static void add_missing(struct strbuf *out, const struct hang_comm *c)
{
	if (!c->nr_missing)
		return;
	strbuf_addf(out, " No readable recorder file from %zu of its ranks (communicator rank%s ",
		    c->nr_missing, c->nr_missing > 1 ? "s" : "");
	for (size_t i = 0; i < c->nr_missing && i < 16; i++)
		strbuf_addf(out, "%s%d", i ? ", " : "", c->missing[i]);
	if (c->nr_missing > 16)
		strbuf_addstr(out, ", ...");
	strbuf_addstr(out, "): their state is unknown.");
}

void hang_write_text(const struct hang *h, struct strbuf *out)
{
	if (!h->rings) {
		strbuf_addstr(out, "No NCCL recorder file was found or readable.\n");
		return;
	}
	if (h->all_idle) {
		strbuf_addf(out,
			    "Every rank completed every collective it enqueued, the same number on "
			    "each of %zu communicator%s: no rank is inside NCCL. If the run hangs, it "
			    "hangs above NCCL (a data loader, a barrier in Python, a deadlock): look "
			    "at the Python stacks (vigil stacks).\n",
			    h->nr, h->nr == 1 ? "" : "s");
		return;
	}
	const struct hang_comm *c = h->main;
	if (!c) {
		strbuf_addstr(out, "The recorder files name no communicator.\n");
		return;
	}
	size_t waiting = c->nr - c->culprits;
	if (c->stopped) {
		add_role_list(out, c, 4, 8);
		strbuf_addf(out, " %s stopped (T in most of vigil stacks' samples) inside ",
			    c->culprits > 1 ? "are" : "is");
		add_op(out, c);
		strbuf_addstr(out, c->state == HANG_STUCK_INSIDE
					   ? "; every rank entered it and none finished it"
					   : "; some ranks finished it, the stopped ones did not");
		if (c->waited_s > 0)
			strbuf_addf(out, " in %.*f s", c->waited_s < 10 ? 1 : 0, c->waited_s);
		strbuf_addstr(out, ": a stopped process's NCCL threads make no progress, so the "
				   "collective waits for it. The culprit is the stopped rank: find "
				   "what stopped it on its host (a SIGSTOP, a debugger, a suspended "
				   "job); the others are victims, and the fabric is not implicated.");
		add_missing(out, c);
		strbuf_addch(out, '\n');
		return;
	}
	switch (c->state) {
	case HANG_NEVER_ENTERED:
	case HANG_BEHIND:
		strbuf_addstr(out, c->culprits > 1 ? "Ranks " : "");
		add_role_list(out, c, 1, 8);
		strbuf_addstr(out, " never entered ");
		add_op(out, c);
		strbuf_addf(out, "; the %zu other rank%s entered it", waiting, waiting == 1 ? "" : "s");
		if (c->waited_s > 0)
			strbuf_addf(out, " and %s waited %.*f s", waiting == 1 ? "has" : "have",
				    c->waited_s < 10 ? 1 : 0, c->waited_s);
		strbuf_addstr(out, ".");
		if (c->state == HANG_BEHIND)
			strbuf_addstr(out, " (This NCCL reports no completion: the ranks are told "
					   "apart by what they enqueued.)");
		strbuf_addstr(out, " The culprit is the rank that never entered: look at its stacks "
				   "(vigil stacks) and its host; the others are victims.");
		break;
	case HANG_NEVER_FINISHED:
		add_role_list(out, c, 2, 8);
		strbuf_addstr(out, " entered and never finished ");
		add_op(out, c);
		strbuf_addstr(out, ", which the other ranks completed. Look at that GPU and its "
				   "links (vigil check, vigil net) on its host.");
		break;
	case HANG_STUCK_INSIDE:
		strbuf_addf(out, "Every rank entered ");
		add_op(out, c);
		strbuf_addstr(out, " and none finished it");
		if (c->waited_s > 0)
			strbuf_addf(out, " in %.*f s", c->waited_s < 10 ? 1 : 0, c->waited_s);
		strbuf_addstr(out, ": no rank is missing, the collective is stuck inside NCCL (the "
				   "network, a link, or a GPU).");
		if (c->culprits) {
			strbuf_addstr(out, " The GPU of ");
			add_role_list(out, c, 3, 8);
			strbuf_addstr(out, " never began it (earlier GPU work still running, or the "
					   "GPU hung): start there.");
		} else {
			strbuf_addstr(out, " Check the fabric and the GPUs of its hosts (vigil check, "
					   "vigil net).");
		}
		break;
	case HANG_SAME_COUNT:
		strbuf_addf(out, "Every rank enqueued the same %llu collectives on communicator "
				 "%016llx, and this NCCL reports no completion: either all wait above "
				 "NCCL or all are inside the last one; the recorder cannot tell which. "
				 "Look at the stacks.",
			    (unsigned long long)c->waiting, (unsigned long long)c->hash);
		break;
	case HANG_INCOMPLETE:
		if (c->nr_dup) {
			strbuf_addf(out, "Communicator %016llx has more than one recorder file for "
					 "%zu of its ranks (communicator rank %d first), from different "
					 "processes or owners: which one is the rank cannot be told, so "
					 "the recorder names no culprit. Check the files (a file in a "
					 "shared directory can be planted).",
				    (unsigned long long)c->hash, c->nr_dup, c->dup_rank);
		} else if (c->min_done_all) {
			strbuf_addf(out, "Every rank with a readable recorder file completed every "
					 "collective it enqueued (%llu) on ",
				    (unsigned long long)(c->waiting ? c->waiting - 1 : 0));
			add_comm(out, c);
			strbuf_addstr(out, ", and some ranks have no readable file: the recorder "
					   "cannot tell whether one of them stopped.");
		} else {
			strbuf_addf(out, "Every rank with a readable recorder file is waiting in ");
			add_op(out, c);
			strbuf_addstr(out, ", and some ranks have no readable file: the recorder "
					   "cannot tell which rank stopped (look at the stacks of those "
					   "ranks: vigil stacks).");
		}
		break;
	case HANG_IDLE:
		break;
	}
	add_missing(out, c);
	strbuf_addch(out, '\n');
}

static void json_member(struct json_writer *w, const struct hang_member *m)
{
	static const char *const roles[] = { "waiting", "never_entered", "never_finished",
					     "gpu_never_began", "stopped" };
	json_open_object(w);
	json_key(w, "rank");
	json_int(w, m->global_rank);
	json_key(w, "comm_rank");
	json_int(w, m->comm_rank);
	json_key(w, "host");
	json_string(w, m->host);
	json_key(w, "pid");
	json_int(w, m->pid);
	json_key(w, "enqueued");
	json_uint(w, m->enqueued);
	json_key(w, "started");
	json_uint(w, m->started);
	json_key(w, "completed");
	json_uint(w, m->done);
	json_key(w, "completion_reported");
	json_bool(w, m->kernel_events);
	json_key(w, "role");
	json_string(w, m->role >= 0 && m->role <= 4 ? roles[m->role] : "waiting");
	json_key(w, "file");
	json_string(w, m->file);
	json_close_object(w);
}

void hang_write_json(const struct hang *h, struct json_writer *w)
{
	json_open_object(w);
	json_key(w, "files_read");
	json_uint(w, h->rings);
	json_key(w, "all_idle");
	json_bool(w, h->all_idle);
	json_key(w, "state");
	json_string(w, h->all_idle ? "idle" : h->main ? hang_state_name(h->main->state) : "none");
	json_key(w, "culprits");
	json_open_array(w);
	if (h->main)
		for (size_t k = 0; k < h->main->nr; k++)
			if (h->main->m[k].role)
				json_member(w, &h->main->m[k]);
	json_close_array(w);
	json_key(w, "communicators");
	json_open_array(w);
	for (size_t i = 0; i < h->nr; i++) {
		const struct hang_comm *c = &h->comms[i];
		char hex[17];
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)c->hash);
		json_open_object(w);
		json_key(w, "id");
		json_string(w, hex);
		json_key(w, "name");
		json_string(w, c->name);
		json_key(w, "nranks");
		json_int(w, c->nranks);
		json_key(w, "ranks_seen");
		json_uint(w, c->nr);
		json_key(w, "state");
		json_string(w, hang_state_name(c->state));
		json_key(w, "waiting_in");
		if (c->waiting && c->state != HANG_IDLE) {
			json_open_object(w);
			json_key(w, "index");
			json_uint(w, c->waiting);
			json_key(w, "op");
			json_string(w, c->have_op ? c->op.func : "");
			json_key(w, "bytes");
			json_uint(w, c->have_op ? c->op.bytes : 0);
			json_key(w, "count");
			json_uint(w, c->have_op ? c->op.count : 0);
			json_key(w, "dtype");
			json_string(w, c->have_op ? c->op.dtype : "");
			json_key(w, "nccl_seq");
			json_uint(w, c->have_op ? c->op.nccl_seq : 0);
			json_key(w, "waited_s");
			json_fixed(w, c->waited_s, 1);
			json_close_object(w);
		} else {
			json_null(w);
		}
		json_key(w, "duplicate_ranks");
		json_uint(w, c->nr_dup);
		json_key(w, "missing_ranks");
		json_open_array(w);
		for (size_t k = 0; k < c->nr_missing; k++)
			json_int(w, c->missing[k]);
		json_close_array(w);
		json_key(w, "ranks");
		json_open_array(w);
		for (size_t k = 0; k < c->nr; k++)
			json_member(w, &c->m[k]);
		json_close_array(w);
		json_close_object(w);
	}
	json_close_array(w);
	json_key(w, "files");
	json_open_array(w);
	for (size_t i = 0; i < h->nr_files; i++) {
		json_open_object(w);
		json_key(w, "path");
		json_string(w, h->files[i].name);
		json_key(w, "error");
		if (h->files[i].error)
			json_string(w, h->files[i].error);
		else
			json_null(w);
		json_close_object(w);
	}
	json_close_array(w);
	json_close_object(w);
}
