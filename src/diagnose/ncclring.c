/*
 * ncclring.c: one NCCL flight recorder file into struct nring (see ncclring.h).
 *
 * The file is read through a source (a buffer, or a file descriptor read with pread in chunks
 * of NRING_CHUNK records), so that its size is checked against the real file before anything
 * is allocated and a file of any size costs the same memory.
 */
#include "ncclring.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NRING_CHUNK 512 /* records read at once from a file: 64 KiB */

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

struct source {
	const char *buf; /* a buffer of len bytes, or NULL and a file */
	int fd;
	uint64_t len;
};

/* n bytes at off into dst: 0, or -1 with err set (the file shrank, or a read failed). */
static int source_read(const struct source *s, uint64_t off, void *dst, size_t n,
		       struct strbuf *err)
{
	if (off > s->len || n > s->len - off)
		return error_set(err, "cut short while read (%llu bytes)", (unsigned long long)s->len);
	if (s->buf) {
		memcpy(dst, s->buf + off, n);
		return 0;
	}
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(s->fd, (char *)dst + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return error_set(err, "read failed: %s", strerror(errno));
		if (r == 0)
			return error_set(err, "cut short while read: %llu of %llu bytes",
					 (unsigned long long)(off + got), (unsigned long long)s->len);
		got += (size_t)r;
	}
	return 0;
}

/* The header's checks: what every later step relies on. */
static int check_header(const struct nrec_header *h, uint64_t len, struct strbuf *err)
{
	if (h->version != NREC_VERSION)
		return error_set(err,
				 "recorder format version %u, this vigil reads version %u only (%s)",
				 h->version, NREC_VERSION,
				 h->version < NREC_VERSION
					 ? "an older libnccl-profiler-vigil.so wrote it"
					 : "a newer libnccl-profiler-vigil.so wrote it, or it is damaged");
	if (h->header_size != sizeof(*h) || h->record_size != sizeof(struct nrec_record))
		return error_set(err, "recorder header says %u/%u bytes (expected %zu/%zu)",
				 h->header_size, h->record_size, sizeof(*h),
				 sizeof(struct nrec_record));
	if (!h->capacity)
		return error_set(err, "recorder header says its ring holds 0 records");
	if (h->capacity > NRING_CAPACITY_MAX)
		return error_set(err, "recorder header claims %u records, more than the recorder "
				      "ever makes (%zu, 1024 MiB)", h->capacity,
				 (size_t)NRING_CAPACITY_MAX);
	uint64_t room = (len - sizeof(*h)) / sizeof(struct nrec_record);
	if (room < h->capacity)
		return error_set(err, "recorder file cut short: %u records announced, room for %llu",
				 h->capacity, (unsigned long long)room);
	return 0;
}

/*
 * The communicators' counters against each other and against the records: every record is
 * counted once by `written` and once by its communicator's enqueued count, nothing completes
 * or starts more than was enqueued, and the newest collective of a communicator in the ring,
 * where no newer record was lost, is its last one enqueued. A file that fails is damaged (or
 * was caught mid-update): refused, never read as a rank that stopped.
 */
static int check_counts(const struct nrec_header *h, uint32_t ncomms, struct strbuf *err)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < ncomms; i++) {
		const struct nrec_comm *c = &h->comms[i];
		if (c->coll_done > c->coll_enqueued || c->coll_started > c->coll_enqueued ||
		    c->p2p_done > c->p2p_enqueued)
			return error_set(err,
					 "communicator %u's counters disagree: %llu collectives "
					 "enqueued, %llu started, %llu completed; %llu point-to-point "
					 "enqueued, %llu completed",
					 i, (unsigned long long)c->coll_enqueued,
					 (unsigned long long)c->coll_started,
					 (unsigned long long)c->coll_done,
					 (unsigned long long)c->p2p_enqueued,
					 (unsigned long long)c->p2p_done);
		if (c->nranks > 0 && (c->rank < 0 || c->rank >= c->nranks))
			return error_set(err, "communicator %u says rank %d of %d", i, c->rank,
					 c->nranks);
		if (c->coll_enqueued > UINT64_MAX - sum ||
		    c->p2p_enqueued > UINT64_MAX - sum - c->coll_enqueued)
			return error_set(err, "communicator %u's counters overflow", i);
		sum += c->coll_enqueued + c->p2p_enqueued;
	}
	if (sum != h->written)
		return error_set(err, "the counters disagree: %llu operations in the ring, %llu "
				      "counted by its communicators",
				 (unsigned long long)h->written, (unsigned long long)sum);
	return 0;
}

static int parse(const struct source *s, struct nring *r, struct strbuf *err)
{
	memset(r, 0, sizeof(*r));
	/* static would not be reentrant; 16 KiB on the heap, once per file */
	struct nrec_header *hp = malloc(sizeof(*hp));
	struct nrec_record *chunk = NULL;
	int ret = -1;
	if (!hp)
		return error_set(err, "out of memory");
	char magic[8];
	if (s->len < sizeof(magic) || source_read(s, 0, magic, sizeof(magic), err) != 0 ||
	    !nring_looks_like(magic, sizeof(magic))) {
		strbuf_reset(err);
		ret = error_set(err, "not an NCCL recorder file (%llu bytes, no recorder magic)",
				(unsigned long long)s->len);
		goto out;
	}
	if (s->len < sizeof(*hp)) {
		ret = error_set(err, "recorder file cut short: %llu bytes, its header alone is %zu",
				(unsigned long long)s->len, sizeof(*hp));
		goto out;
	}
	if (source_read(s, 0, hp, sizeof(*hp), err) != 0 || check_header(hp, s->len, err) != 0)
		goto out;
	const struct nrec_header *h = hp;
	uint32_t ncomms = h->ncomms > NREC_COMMS_MAX ? NREC_COMMS_MAX : h->ncomms;
	/* the writer counts past the table when it is full, and then shares the last slot */
	if (h->ncomms > NREC_COMMS_MAX && !(h->comms[NREC_COMMS_MAX - 1].flags & NREC_COMM_SHARED)) {
		ret = error_set(err, "recorder header says %u communicators, the table holds %u",
				h->ncomms, NREC_COMMS_MAX);
		goto out;
	}
	if (check_counts(h, ncomms, err) != 0)
		goto out;
	r->pid = h->pid;
	r->global_rank = h->global_rank;
	r->api_version = h->api_version;
	r->dump_signal = h->dump_signal;
	r->reason = h->reason;
	r->capacity = h->capacity;
	r->ncomms = ncomms;
	r->created_ns = h->created_ns;
	r->written = h->written;
	r->dumped_ns = h->dumped_ns;
	field(r->host, h->host, sizeof(h->host));
	field(r->job, h->job, sizeof(h->job));
	for (uint32_t i = 0; i < ncomms; i++) {
		const struct nrec_comm *sc = &h->comms[i];
		struct nring_comm *c = &r->comms[i];
		c->hash = sc->hash;
		field(c->name, sc->name, sizeof(sc->name));
		c->nranks = sc->nranks;
		c->rank = sc->rank;
		c->nnodes = sc->nnodes;
		c->flags = sc->flags;
		c->coll_enqueued = sc->coll_enqueued;
		c->coll_started = sc->coll_started;
		c->coll_done = sc->coll_done;
		c->p2p_enqueued = sc->p2p_enqueued;
		c->p2p_done = sc->p2p_done;
		c->last_enqueued_ns = sc->last_enqueued_ns;
		c->last_done_ns = sc->last_done_ns;
		c->last_bytes = sc->last_bytes;
		c->created_ns = sc->created_ns;
		field(c->last_func, sc->last_func, sizeof(sc->last_func));
	}
	/* the records, newest first (indexes written - 1 down to written - capacity), read in
	 * chunks of consecutive slots: each communicator keeps its latest NRING_KEEP
	 * collectives, put in order at the end */
	uint64_t first = h->written > h->capacity ? h->written - h->capacity : 0;
	uint64_t last_op[NREC_COMMS_MAX] = { 0 };  /* op_index of the newer collective seen */
	bool seen[NREC_COMMS_MAX] = { false }, lost_newer = false;
	chunk = malloc(NRING_CHUNK * sizeof(*chunk));
	if (!chunk) {
		ret = error_set(err, "out of memory");
		goto out;
	}
	uint64_t idx = h->written;
	while (idx > first) {
		/* the slots of idx - n .. idx - 1, contiguous in the file */
		uint64_t slot_hi = (idx - 1) % h->capacity;
		uint64_t n = idx - first < NRING_CHUNK ? idx - first : NRING_CHUNK;
		if (n > slot_hi + 1)
			n = slot_hi + 1;
		uint64_t slot_lo = slot_hi + 1 - n;
		if (source_read(s, sizeof(*h) + slot_lo * sizeof(*chunk), chunk,
				(size_t)n * sizeof(*chunk), err) != 0)
			goto out;
		for (uint64_t k = n; k-- > 0;) {
			idx--;
			const struct nrec_record *rec = &chunk[k];
			if (rec->stamp != 2 * idx + 2 || rec->comm >= ncomms ||
			    (rec->kind != NREC_COLL && rec->kind != NREC_P2P)) {
				r->torn++;
				lost_newer = true;
				continue;
			}
			r->records++;
			if (rec->kind != NREC_COLL)
				continue;
			uint16_t cm = rec->comm;
			const struct nrec_comm *sc = &h->comms[cm];
			bool shared = sc->flags & NREC_COMM_SHARED;
			/* indexes only go down, newest first; the newest is the last enqueued */
			if (!shared && (rec->op_index == 0 || rec->op_index > sc->coll_enqueued ||
					(seen[cm] && rec->op_index >= last_op[cm]) ||
					(!seen[cm] && !lost_newer &&
					 rec->op_index != sc->coll_enqueued))) {
				ret = error_set(err,
						"record %llu says collective %llu of communicator %u, "
						"which counted %llu%s: the ring is damaged",
						(unsigned long long)idx,
						(unsigned long long)rec->op_index, (unsigned)cm,
						(unsigned long long)sc->coll_enqueued,
						seen[cm] ? " (its indexes go backwards)" : "");
				goto out;
			}
			seen[cm] = true;
			last_op[cm] = rec->op_index;
			struct nring_comm *c = &r->comms[cm];
			if (c->nr_ops == NRING_KEEP)
				continue;
			struct nring_op *o = &c->ops[c->nr_ops++];
			o->index = idx;
			o->op_index = rec->op_index;
			o->nccl_seq = rec->nccl_seq;
			o->count = rec->count;
			o->bytes = rec->bytes;
			o->enqueued_ns = rec->enqueued_ns;
			o->started_ns = rec->started_ns;
			o->done_ns = rec->done_ns;
			o->peer = rec->peer;
			o->comm = rec->comm;
			o->kind = rec->kind;
			o->nchannels = rec->nchannels;
			field(o->func, rec->func, sizeof(rec->func));
			field(o->dtype, rec->dtype, sizeof(rec->dtype));
		}
	}
	for (uint32_t i = 0; i < ncomms; i++) {
		struct nring_comm *c = &r->comms[i];
		for (size_t a = 0, b = c->nr_ops; b-- > a + 1; a++) {
			struct nring_op t = c->ops[a];
			c->ops[a] = c->ops[b];
			c->ops[b] = t;
		}
	}
	ret = 0;
out:
	if (ret != 0 && !err->len)
		error_set(err, "unreadable recorder file");
	if (ret != 0)
		memset(r, 0, sizeof(*r));
	free(chunk);
	free(hp);
	return ret;
}

int nring_parse(const void *buf, size_t len, struct nring *r, struct strbuf *err)
{
	struct source s = { buf, -1, len };
	return parse(&s, r, err);
}

int nring_read_fd(int fd, uint64_t size, struct nring *r, struct strbuf *err)
{
	/* a live ring can be caught mid-update (its counters read before a record was whole):
	 * read again, a few times, before calling it damaged */
	struct source s = { NULL, fd, size };
	int ret = -1;
	for (int i = 0; i < 3 && ret != 0; i++) {
		strbuf_reset(err);
		ret = parse(&s, r, err);
	}
	return ret;
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
