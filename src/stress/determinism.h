/*
 * determinism.h: 'vigil stress gpu --determinism', the silent-data-corruption test
 * (docs/STRESS.md, "Determinism"):
 * what 'vigil-gpu determinism' printed, as plain structs, the reference digests shipped with
 * vigil, and the pure evaluation.
 *
 * The helper runs one fixed workload (cuda/det.cuh) R times on every GPU and prints a 64-bit
 * digest of the output bits after each repeat. The same computation on the same model, SM
 * count, driver major version, cuBLASLt and algorithm gives the same bits, so:
 *   - every repeat of a GPU must give its majority digest: one that differs is a GPU that
 *     computed wrong once (fail: "silent data corruption suspected: repeat 37 of 200 ...");
 *   - every GPU of one model must give the same digest: one that differs from the others'
 *     majority fails; two that disagree with nothing to decide fail together;
 *   - against the reference file (det_ref): a matching key and another digest fails a lone
 *     GPU and warns when several GPUs agree with each other; no reference for the key is
 *     unknown on a lone GPU (nothing else cross-checks it) and skipped beside siblings.
 *
 * Memory is bounded: per GPU at most DET_MAX_DIGESTS distinct digests are kept (each with its
 * count and first repeat); more distinct ones are counted, not kept.
 *
 * Ownership: struct det_run and struct det_refs own their strings; release with
 * det_run_release() / det_refs_release().
 */
#ifndef VIGIL_STRESS_DETERMINISM_H
#define VIGIL_STRESS_DETERMINISM_H

#include "gpu_stress.h"

#define DET_MAX_DIGESTS 8
#define DET_MAX_GPUS 64

struct det_digest {
	uint64_t digest;
	unsigned count;
	unsigned first_repeat, last_repeat;
};

struct det_gpu {
	int index;
	char *name, *uuid, *pci, *driver, *workload, *algo, *error;
	int sm_count;
	uint64_t cublaslt;
	struct det_digest d[DET_MAX_DIGESTS];
	size_t nr_d;
	unsigned others;          /* repeats whose digest did not fit in d[] */
	unsigned repeats;         /* "det" lines seen */
	unsigned last_repeat;
	unsigned injected_repeat; /* the helper's own note of --inject sdc (0: none) */
	bool done;                /* its "det_done" line was seen */
	double seconds, setup_s, work_ms, digest_ms;
};

struct det_run {
	bool started, ended;
	char *workload, *driver;
	int cuda_driver, cuda_runtime;
	uint64_t cublaslt;
	int *gpus_expected;
	size_t nr_expected;
	struct det_gpu *gpus;
	size_t nr, alloc;
	char *error_code, *error;
};

void det_run_init(struct det_run *r);
void det_run_release(struct det_run *r);
/* Fill r from the helper's lines (in order). A line of the wrong shape (a digest that is not 16
 * hex digits, a repeat that is not a positive count) is -1 with *err; what came before counts. */
int det_run_parse(struct det_run *r, const struct json_value *const *lines, size_t nr,
		  struct strbuf *err);
/* The GPU's majority digest (strictly more than half of its repeats), or NULL. */
const struct det_digest *det_majority(const struct det_gpu *g);

/* The reference digests (cuda/determinism-ref.tsv): one line per key, tab-separated:
 *   model  sm_count  driver_major  cublaslt  workload  algo  digest  [how it was made]
 * '#' starts a comment line. */
struct det_ref {
	char *model, *workload, *algo, *note;
	int sm_count, driver_major;
	uint64_t cublaslt, digest;
};
struct det_refs {
	struct det_ref *v;
	size_t nr, alloc;
	char *source;            /* the file it came from, for messages; NULL: none */
	char *why_none;          /* why there are none (the file could not be read), or NULL */
};
void det_refs_release(struct det_refs *r);
/* Parse text (bounded by the caller); a bad line is -1 with *err naming its number. */
int det_refs_parse(struct det_refs *r, const char *text, size_t len, struct strbuf *err);
/* The reference for g's key, or NULL. */
const struct det_ref *det_ref_find(const struct det_refs *r, const struct det_gpu *g);
/* "580.159.04" -> 580; -1 when not a version. */
int det_driver_major(const char *v);

/* Add "stress" (the run) and "determinism" results to rep. refs may be empty, not NULL. */
void det_evaluate(const struct det_run *r, const struct gs_end *end, const struct det_refs *refs,
		  struct report *rep);

#endif
