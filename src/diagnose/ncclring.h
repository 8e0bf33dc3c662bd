/*
 * ncclring.h: reading one NCCL flight recorder file (the live ring under /dev/shm or a dump of
 * it; layout in src/nccl/ring.h) into plain C structures, for 'vigil diagnose hang'.
 *
 * Bytes (or a file, streamed) in, structure out. Everything in the file is checked before it
 * is believed (magic, version, sizes against the file's real length before anything is read or
 * allocated, the communicators' counters against `written` and against the records, strings
 * NUL-terminated here whatever the file holds); a file that fails is an error naming what was
 * wrong, never a guess: its rank is then unknown, never one that stopped. Records torn by the writer (odd stamp, or a stamp that does not match
 * the slot) are dropped and counted. Only the latest NRING_KEEP collective records of each
 * communicator are kept: what the hang analysis looks at, in bounded memory however big the
 * ring.
 */
#ifndef VIGIL_DIAGNOSE_NCCLRING_H
#define VIGIL_DIAGNOSE_NCCLRING_H

#include "../lib/strbuf.h"
#include "../nccl/ring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NRING_KEEP 32
/* The most records a ring has: the recorder's own bound, 1024 MiB (VIGIL_NCCL_RING_MIB). A
 * header that claims more is refused before anything is read. */
#define NRING_CAPACITY_MAX ((1024u << 20) / sizeof(struct nrec_record))

struct nring_op {
	uint64_t index, op_index, nccl_seq, count, bytes;
	uint64_t enqueued_ns, started_ns, done_ns;
	int32_t peer;
	uint16_t comm;
	uint8_t kind, nchannels;
	char func[NREC_FUNC_MAX + 1], dtype[NREC_DTYPE_MAX + 1];
};

struct nring_comm {
	uint64_t hash;
	char name[NREC_NAME_MAX + 1];
	int32_t nranks, rank, nnodes;
	uint32_t flags;
	uint64_t coll_enqueued, coll_started, coll_done, p2p_enqueued, p2p_done;
	uint64_t last_enqueued_ns, last_done_ns, last_bytes, created_ns;
	char last_func[NREC_FUNC_MAX + 1];
	/* the latest collectives of this communicator, oldest first */
	struct nring_op ops[NRING_KEEP];
	size_t nr_ops;
};

struct nring {
	int32_t pid, global_rank, api_version, dump_signal;
	uint32_t reason, capacity, ncomms;
	uint64_t created_ns, written, dumped_ns;
	char host[65], job[65];
	struct nring_comm comms[NREC_COMMS_MAX];
	uint64_t records, torn; /* records read whole / dropped as torn or out of place */
	/* set by the caller who read the file (not from it): the file's owner */
	uint32_t file_uid;
};

/* True when buf starts like a recorder file (the magic). */
bool nring_looks_like(const void *buf, size_t len);

/* Parse len bytes into *r (zeroed here). 0, or -1 with err saying what was wrong. */
int nring_parse(const void *buf, size_t len, struct nring *r, struct strbuf *err);

/* Parse the recorder file open at fd, whose size (fstat) is size, in bounded memory (a chunk
 * of records at a time, whatever the file's size); read again where a live ring was caught
 * mid-update. 0, or -1 with err saying what was wrong (never empty). */
int nring_read_fd(int fd, uint64_t size, struct nring *r, struct strbuf *err);

/* The op of communicator slot c with op_index i, or NULL when it left the ring. */
const struct nring_op *nring_find(const struct nring *r, size_t c, uint64_t i);

#endif
