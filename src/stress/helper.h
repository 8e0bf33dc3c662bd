/*
 * helper.h: finding and running vigil's CUDA helpers (vigil-gpu, vigil-nccl, built from cuda/ when
 * nvcc is found) and reading the JSON lines they print.
 *
 * Where a helper is looked for, in order: $VIGIL_CUDA_HELPER_DIR (only there, when set: tests
 * point it at fake helpers), the directory of the running vigil executable, then
 * $(LIBDIR)/vigil where 'make install' puts them. A helper runs from an argv, in its own process
 * group, under a deadline (lib/run.h); its stdout is parsed line by line, each line one JSON object.
 *
 * Ownership: struct helper_out owns the child's captured output and the parsed lines;
 * helper_out_release() frees them.
 */
#ifndef VIGIL_STRESS_HELPER_H
#define VIGIL_STRESS_HELPER_H

#include "../lib/json.h"
#include "../lib/run.h"
#include "../lib/strbuf.h"

/* Exit codes the helpers use (cuda/common.cuh). */
enum { HELPER_OK = 0, HELPER_FAIL = 1, HELPER_USAGE = 2, HELPER_NO_GPU = 3, HELPER_TIMEOUT = 4 };

/* Find helper NAME. 0 with *path set, or -1 with *err saying where it looked. */
int helper_find(const char *name, struct strbuf *path, struct strbuf *err);
/* The same places for a readable data file that ships with the helpers (the determinism
 * test's reference digests). */
int helper_find_file(const char *name, struct strbuf *path, struct strbuf *err);

struct helper_out {
	struct child c;
	struct json_value **lines; /* the objects, in order */
	size_t nr, alloc;
	size_t bad_lines;          /* lines that were not a JSON object */
	char *first_bad;           /* the first of them, cut to 200 bytes */
};

/*
 * Run path with args (NULL-terminated, without the program) under timeout_ms. When progress_fd
 * is >= 0, "--progress-fd N" is added so the helper writes progress for a person there.
 * Returns 0 when the helper ran (see out->c for how it ended), -1 with *err when it could not
 * be started.
 */
int helper_run(const char *path, const char *const *args, unsigned timeout_ms, int progress_fd,
	       struct helper_out *out, struct strbuf *err);
/* Parse text as JSON lines into out (also used by tests on recorded output). */
void helper_parse_lines(struct helper_out *out, const char *text, size_t len);
void helper_out_init(struct helper_out *out);
void helper_out_release(struct helper_out *out);

/* How a run ended, for a person: "exited with 1", "timed out after 90 s", ... plus the last
 * line of stderr when there is one. */
void helper_describe_end(const struct child *c, struct strbuf *out);

/* The first line whose "type" is type, or NULL. */
const struct json_value *helper_first(const struct helper_out *out, const char *type);

#endif
