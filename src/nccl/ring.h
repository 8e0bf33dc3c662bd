/*
 * ring.h: the layout of the NCCL flight recorder's ring, shared by the plugin that writes it
 * (src/nccl/recorder.c, built as libnccl-profiler-vigil.so and loaded by NCCL inside the
 * trainer) and vigil, which reads it (src/diagnose/ncclring.c) from another process while the
 * trainer runs, or from a dump written at exit, at finalize or on a signal.
 *
 * One file per process: a header, a table of the communicators it saw, then a ring of
 * fixed-size records of its latest collective and point-to-point operations. Fixed-width
 * fields only, little-endian (every host vigil supports is), no pointers: the file means the
 * same in the reader as in the writer.
 *
 * Concurrency, writer side: a record is claimed by an atomic increment of `written`; its
 * `stamp` is odd while the record is being filled and 2 * (index + 1) once it is whole, so a
 * reader copying a record while the writer reuses its slot sees a stamp that changed or is odd
 * and drops the record rather than mixing two operations. The times of a record (started,
 * done) are filled later by other threads of the same process, each one 8-byte store: a reader
 * sees each either zero or whole. The communicator counters are 8-byte atomics too.
 */
#ifndef VIGIL_NCCL_RING_H
#define VIGIL_NCCL_RING_H

#include <stddef.h>
#include <stdint.h>

#define NREC_MAGIC "VIGILNR1"
/* 2: the owner's pid namespace, start time and boot id (the sweep of dead rings); 1 lacked them */
#define NREC_VERSION 2u
#define NREC_COMMS_MAX 64u
#define NREC_NAME_MAX 48u
#define NREC_FUNC_MAX 16u
#define NREC_DTYPE_MAX 16u

enum nrec_kind { NREC_COLL = 1, NREC_P2P = 2 };

/* Why a file was written: the live ring, or a dump of it. */
enum nrec_reason {
	NREC_LIVE = 0,     /* the ring itself, being written */
	NREC_SIGNAL = 1,   /* dumped on VIGIL_NCCL_DUMP_SIGNAL */
	NREC_EXIT = 2,     /* dumped at process exit */
	NREC_FINALIZE = 3, /* dumped when the last communicator was finalized */
	NREC_COPY = 4,     /* the live ring copied by another process (vigil stacks) */
};

/* Flags of a communicator. */
enum {
	NREC_COMM_KERNEL_EVENTS = 1u << 0, /* the API reports GPU start/stop: done times are known */
	NREC_COMM_FINALIZED = 1u << 1,
	NREC_COMM_SHARED = 1u << 2,        /* table was full: several communicators in this slot */
};

struct nrec_comm {            /* 256 bytes */
	uint64_t hash;            /* the communicator's id, the same on every rank */
	char name[NREC_NAME_MAX]; /* commName where the API gives it, NUL-padded */
	int32_t nranks;           /* -1 where the API does not say (v1 to v3) */
	int32_t rank;             /* this process's rank in it */
	int32_t nnodes;
	uint32_t flags;
	uint64_t coll_enqueued;   /* collectives enqueued: the last one's index (1-based) */
	uint64_t coll_started;    /* highest index whose GPU work began */
	uint64_t coll_done;       /* highest index completed */
	uint64_t p2p_enqueued;
	uint64_t p2p_done;
	uint64_t last_enqueued_ns; /* CLOCK_REALTIME */
	uint64_t last_done_ns;
	uint64_t last_bytes;      /* of the last collective enqueued */
	char last_func[NREC_FUNC_MAX];
	uint64_t created_ns;
	uint8_t pad[96];
};

struct nrec_record {          /* 128 bytes */
	uint64_t stamp;           /* 2 * (index + 1) when whole; odd while written */
	uint64_t op_index;        /* per communicator and kind, 1-based; the same on every rank */
	uint64_t nccl_seq;        /* NCCL's own sequence number (per function), 0 if none */
	uint64_t count;           /* elements */
	uint64_t bytes;           /* count x the datatype's size (0 if the type is unknown) */
	uint64_t enqueued_ns;     /* CLOCK_REALTIME: the host enqueued it */
	uint64_t started_ns;      /* the first GPU channel began (0: not yet, or not reported) */
	uint64_t done_ns;         /* every GPU channel finished (0: not yet, or not reported) */
	int32_t peer;             /* p2p: the peer; coll: the root (-1 none) */
	uint16_t comm;            /* slot in the communicator table */
	uint8_t kind;             /* enum nrec_kind */
	uint8_t nchannels;
	char func[NREC_FUNC_MAX];
	char dtype[NREC_DTYPE_MAX];
	uint8_t pad[128 - 8 * 8 - 8 - NREC_FUNC_MAX - NREC_DTYPE_MAX];
};

struct nrec_header {
	char magic[8];            /* NREC_MAGIC, no NUL */
	uint32_t version;         /* NREC_VERSION */
	uint32_t header_size;     /* sizeof(struct nrec_header): the first record follows it */
	uint32_t record_size;     /* sizeof(struct nrec_record) */
	uint32_t capacity;        /* records in the ring */
	int32_t pid;
	int32_t global_rank;      /* RANK / SLURM_PROCID / OMPI_COMM_WORLD_RANK / PMI_RANK; -1 */
	int32_t api_version;      /* the profiler API NCCL chose (1 to 5) */
	uint32_t ncomms;          /* slots used */
	uint32_t reason;          /* enum nrec_reason */
	int32_t dump_signal;      /* the signal that dumps it (0 none) */
	uint64_t created_ns;
	uint64_t written;         /* records ever claimed; the latest is written - 1 */
	uint64_t dumped_ns;       /* when this copy was taken (0 for the live ring) */
	char host[64];
	char job[64];
	/* who owns the ring, so that another process removes it only when that owner is provably
	 * gone: a pid means nothing outside its pid namespace, and a pid is reused */
	uint64_t pidns_dev;       /* st_dev and st_ino of the writer's /proc/self/ns/pid */
	uint64_t pidns_ino;
	uint64_t start_ticks;     /* the writer's start time, field 22 of /proc/self/stat (0 unknown) */
	uint8_t boot_id[16];      /* /proc/sys/kernel/random/boot_id as bytes (zeros unknown) */
	uint8_t pad[24];
	struct nrec_comm comms[NREC_COMMS_MAX];
};

_Static_assert(sizeof(struct nrec_comm) == 256, "nrec_comm layout");
_Static_assert(sizeof(struct nrec_record) == 128, "nrec_record layout");
/* version 2 took its new fields from the padding: magic, pid and every field vigil stacks reads
 * are where version 1 had them, and the header's size is unchanged */
_Static_assert(offsetof(struct nrec_header, pid) == 24, "nrec_header pid");
_Static_assert(offsetof(struct nrec_header, comms) == 264, "nrec_header layout");


#endif
