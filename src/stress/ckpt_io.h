/*
 * ckpt_io.h: inside 'vigil stress storage' (ckpt.h), what ckpt.c (the parent) and
 * ckpt_io.c (the workers) share: the per-worker slot in the shared mapping, the job a worker
 * is forked with, the operations the stall watch names, and the data pattern.
 *
 * A slot is written by its worker only and read by the parent; the operation in progress
 * (op_start_ns, op, file) is stored with atomics so the parent can read it while the worker is
 * blocked in the kernel.
 */
#ifndef VIGIL_STRESS_STORAGE_IO_H
#define VIGIL_STRESS_STORAGE_IO_H

#include "ckpt.h"

enum ckpt_op {
	SOP_NONE,
	SOP_CREATE,
	SOP_WRITE,
	SOP_FSYNC,
	SOP_RENAME,
	SOP_DIRSYNC,
	SOP_OPEN,
	SOP_READ,
	SOP_STAT,
	SOP_UNLINK,
	SOP_MKDIR,
	SOP_ALLOC,
	SOP__COUNT,
};
const char *ckpt_op_name(unsigned op);

enum ckpt_phase { SPHASE_WRITE, SPHASE_READ, SPHASE_META };

/* latencies of fsync a worker keeps (beyond, they are counted, not kept: fsyncs_kept says) */
#define SLOT_FSYNC_CAP 4096
/* a file index that names a metadata file: META_FILE + i */
#define CKPT_META_FILE 0x40000000u

struct ckpt_slot {
	/* the operation in progress (0: none), for the parent's stall watch */
	uint64_t op_start_ns;
	uint32_t op, file;
	/* the worker's phase: when it started and ended, and what it moved */
	uint64_t t0_ns, t1_ns;
	uint64_t bytes, verified;
	uint32_t done;	/* the phase ran to its end (errors or not) */
	uint32_t ready; /* set up and waiting at the start line */
	/* findings */
	uint64_t bad_sectors;
	uint32_t nr_mm;
	struct {
		uint32_t file;
		uint64_t off;
	} mm[CKPT_MAX_FINDS];
	uint64_t stalls_total;
	uint32_t nr_stall;
	struct {
		uint32_t op, file;
		uint64_t ns;
	} stall[CKPT_MAX_FINDS];
	uint64_t errors_total;
	uint32_t nr_err;
	struct {
		uint32_t op, file;
		int32_t err_no;
	} err[CKPT_MAX_FINDS];
	/* fsync latencies (ms), dirsync's worst */
	uint64_t fsyncs;
	uint32_t kept;
	float fsync_ms[SLOT_FSYNC_CAP];
	uint64_t dirsync_max_ns;
	/* pages of the shards resident before the read-back (buffered only) */
	uint64_t cache_resident, cache_pages;
	uint64_t meta_ops;
};

struct ckpt_job {
	enum ckpt_phase phase;
	unsigned worker, nworkers, files;
	uint64_t size, file_size;
	uint32_t block;
	bool direct;
	bool huge_buf;		 /* I/O buffers in huge pages: on a memory file system only */
	enum ckpt_verify verify; /* INLINE, OVERLAPPED (block k checked while k+1 is read) or NONE */
	int subfd;
	uint64_t seed;
	uint64_t stall_ns;
	unsigned meta_files;
	enum ckpt_inject inject;
	struct ckpt_slot *slot;
	struct ckpt_slot *all; /* every worker's slot of this phase (the start line) */
};

/* The forked worker (struct child's fn): runs job->phase and returns 0 (failures are in the
 * slot). */
int ckpt_worker(void *job, int out_fd);

/* Names under the subdirectory: "shard-00003.part" while written, "shard-00003" in place,
 * "meta/m-000017" (and ".r" once renamed). Async-signal-safe. */
void ckpt_name(char *buf, size_t size, unsigned file, bool part);
void ckpt_meta_name(char *buf, size_t size, unsigned i, bool renamed);
/* Bytes of shard file f. */
uint64_t ckpt_file_len(const struct ckpt_job *j, unsigned f);

uint64_t ckpt_now_ns(void);

#endif
