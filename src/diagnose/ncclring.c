/*
 * ncclring.c: one NCCL flight recorder file into struct nring (see ncclring.h).
 */
#include "ncclring.h"

#include <stddef.h>
#include <string.h>

bool nring_looks_like(const void *buf, size_t len)
{
	return len >= 8 && !memcmp(buf, NREC_MAGIC, 8);
}

/* A fixed-size field of the file as a C string: cut at its first NUL or its size. */
static void field(char *dst, const char *src, size_t size)
{
	size_t n = 0;
	while (n < size && src[n])
		n++;
	memcpy(dst, src, n);
	dst[n] = 0;
}

int nring_parse(const void *buf, size_t len, struct nring *r, struct strbuf *err)
{
	memset(r, 0, sizeof(*r));
	struct nrec_header h;
	if (len < sizeof(h) || !nring_looks_like(buf, len))
		return error_set(err, "not an NCCL recorder file (%zu bytes, no header)", len);
	memcpy(&h, buf, sizeof(h));
	if (h.version != NREC_VERSION)
		return error_set(err, "recorder format version %u (this vigil reads %u)", h.version,
				 NREC_VERSION);
	if (h.header_size != sizeof(h) || h.record_size != sizeof(struct nrec_record))
		return error_set(err, "recorder header says %u/%u bytes (expected %zu/%zu)",
				 h.header_size, h.record_size, sizeof(h), sizeof(struct nrec_record));
	if (!h.capacity || (len - sizeof(h)) / sizeof(struct nrec_record) < h.capacity)
		return error_set(err, "recorder file cut short: %u records announced, room for %zu",
				 h.capacity, (len - sizeof(h)) / sizeof(struct nrec_record));
	if (h.ncomms > NREC_COMMS_MAX)
		h.ncomms = NREC_COMMS_MAX; /* the writer counts past the table when it is full */
	r->pid = h.pid;
	r->global_rank = h.global_rank;
	r->api_version = h.api_version;
	r->dump_signal = h.dump_signal;
	r->reason = h.reason;
	r->capacity = h.capacity;
	r->ncomms = h.ncomms;
	r->created_ns = h.created_ns;
	r->written = h.written;
	r->dumped_ns = h.dumped_ns;
	field(r->host, h.host, sizeof(h.host));
	field(r->job, h.job, sizeof(h.job));
	for (uint32_t i = 0; i < h.ncomms; i++) {
		const struct nrec_comm *s = &h.comms[i];
		struct nring_comm *c = &r->comms[i];
		c->hash = s->hash;
		field(c->name, s->name, sizeof(s->name));
		c->nranks = s->nranks;
		c->rank = s->rank;
		c->nnodes = s->nnodes;
		c->flags = s->flags;
		c->coll_enqueued = s->coll_enqueued;
		c->coll_started = s->coll_started;
		c->coll_done = s->coll_done;
		c->p2p_enqueued = s->p2p_enqueued;
		c->p2p_done = s->p2p_done;
		c->last_enqueued_ns = s->last_enqueued_ns;
		c->last_done_ns = s->last_done_ns;
		c->last_bytes = s->last_bytes;
		c->created_ns = s->created_ns;
		field(c->last_func, s->last_func, sizeof(s->last_func));
	}
	/* the records, newest first (indexes written - 1 down to written - capacity): each
	 * communicator keeps its latest NRING_KEEP collectives, put in order at the end */
	const char *recs = (const char *)buf + sizeof(h);
	uint64_t first = h.written > h.capacity ? h.written - h.capacity : 0;
	for (uint64_t idx = h.written; idx-- > first;) {
		struct nrec_record rec;
		memcpy(&rec, recs + (size_t)(idx % h.capacity) * sizeof(rec), sizeof(rec));
		if (rec.stamp != 2 * idx + 2 || rec.comm >= h.ncomms ||
		    (rec.kind != NREC_COLL && rec.kind != NREC_P2P)) {
			r->torn++;
			continue;
		}
		r->records++;
		if (rec.kind != NREC_COLL)
			continue;
		struct nring_comm *c = &r->comms[rec.comm];
		if (c->nr_ops == NRING_KEEP)
			continue;
		struct nring_op *o = &c->ops[c->nr_ops++];
		o->index = idx;
		o->op_index = rec.op_index;
		o->nccl_seq = rec.nccl_seq;
		o->count = rec.count;
		o->bytes = rec.bytes;
		o->enqueued_ns = rec.enqueued_ns;
		o->started_ns = rec.started_ns;
		o->done_ns = rec.done_ns;
		o->peer = rec.peer;
		o->comm = rec.comm;
		o->kind = rec.kind;
		o->nchannels = rec.nchannels;
		field(o->func, rec.func, sizeof(rec.func));
		field(o->dtype, rec.dtype, sizeof(rec.dtype));
	}
	for (uint32_t i = 0; i < h.ncomms; i++) {
		struct nring_comm *c = &r->comms[i];
		for (size_t a = 0, b = c->nr_ops; b-- > a + 1; a++) {
			struct nring_op t = c->ops[a];
			c->ops[a] = c->ops[b];
			c->ops[b] = t;
		}
	}
	return 0;
}

const struct nring_op *nring_find(const struct nring *r, size_t c, uint64_t i)
{
	if (c >= NREC_COMMS_MAX)
		return NULL;
	const struct nring_comm *cm = &r->comms[c];
	for (size_t k = cm->nr_ops; k-- > 0;)
		if (cm->ops[k].op_index == i)
			return &cm->ops[k];
	return NULL;
}
