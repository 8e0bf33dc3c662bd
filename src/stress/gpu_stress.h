/*
 * gpu_stress.h: 'vigil stress gpu' results: what vigil-gpu printed, as plain structs, and the
 * pure evaluation that turns them into findings (floors, outliers among sibling GPUs,
 * miscompares, new ECC errors, row remapping, Xid, slowdowns, GPUs that did not finish).
 *
 * gpu_stress_parse() reads the helper's JSON lines (docs/STRESS.md); gpu_stress_evaluate() adds
 * one check_result per test to a report: "stress" (the run itself), "gemm", "hbm", "memtest",
 * "stress-health". Tests build a struct gpu_stress_run from recorded output (tests/data/stress/).
 *
 * Ownership: struct gpu_stress_run owns every string and array in it;
 * gpu_stress_run_release() frees them.
 */
#ifndef VIGIL_STRESS_GPU_STRESS_H
#define VIGIL_STRESS_GPU_STRESS_H

#include "limits.h"
#include "../lib/json.h"
#include "../core/report.h"

struct gs_gemm {
	int dtype;            /* STRESS_* or -1 */
	char name[16];
	bool supported;
	char *note;
	double tflops, tflops_first, tflops_last; /* per product (events), median window */
	double tflops_wall;   /* delivered: products x FLOPs / the sustained window's wall time */
	double seconds;       /* that window */
	uint64_t gemms, verified, checksums, miscompares;
	uint64_t kat_runs, kat_elements, kat_miscompares;
	double max_err_ratio, detect_rms;
	char *first_error;
	char *error;          /* the first of the helper's errors, or NULL */
};

struct gs_health {
	bool read;
	bool ecc;             /* ECC counters reported */
	uint64_t ecc_corrected, ecc_uncorrected;
	bool remap;           /* remapping reported */
	uint64_t remap_correctable, remap_uncorrectable;
	bool remap_pending, remap_failure;
};

/* A compute process of someone else seen on a GPU during an active test. */
struct gs_proc {
	int gpu;
	unsigned pid;
	char *name;           /* /proc/PID/comm, NULL when not known */
	uint64_t used_bytes;
	bool at_start, during, at_end;
};

/* Processes as parsed from helper lines: "other_processes" arrays, merged by (gpu, pid). */
struct gs_procs {
	struct gs_proc *v;
	size_t nr, alloc;
	char *watch;          /* "ok" or why processes were not listed; NULL: not said */
};
void gs_procs_release(struct gs_procs *p);
/* Add the "other_processes" array arr (objects with pid, name, at_start, ...) for gpu (or each
 * object's own "gpu" when gpu < 0); the defaults mark objects that carry no phase flags (the
 * start line's list is "at the start", the procs helper's after a run "at the end"). */
void gs_procs_parse(struct gs_procs *p, const struct json_value *arr, int gpu,
		    bool at_start_default, bool at_end_default);
/* A pid seen during the test (older helpers' telemetry "other_pids"). */
void gs_procs_add_pid(struct gs_procs *p, int gpu, unsigned pid);
/* Fill in names the helper could not read, from /proc/PID/comm (the only I/O here). */
void gs_procs_fill_names(struct gs_procs *p);
/* How many processes on gpu; list them for a person into out ("pid 4242 (python3) at the
 * start, during and at the end, ..."). */
size_t gs_procs_on(const struct gs_procs *p, int gpu, struct strbuf *out);
/* One finding per GPU with a foreign process (check res): unknown, INVESTIGATE, code
 * "foreign_process", naming pid and name; what = "stress test" etc. */
void gs_procs_evaluate(const struct gs_procs *p, const char *what, struct check_result *res);
/* The same into rep's last result named check (added when there is none), finished again. */
void gs_procs_report(const struct gs_procs *p, const char *check, const char *what,
		     struct report *rep);

struct gs_gpu {
	int index;
	char *name, *pci, *uuid;
	uint64_t mem_total;
	struct gs_gemm *gemm;
	size_t nr_gemm;
	bool has_hbm;
	double hbm_read, hbm_write, hbm_copy, hbm_memcpy;
	uint64_t hbm_miscompares;
	char *hbm_error;
	bool has_memtest;
	uint64_t mt_bytes, mt_words, mt_miscompares, mt_free;
	int mt_rounds;
	size_t mt_patterns;
	char *mt_first_error, *mt_flipped, *mt_error;
	bool has_telemetry;
	double temp_max, power_max, power_avg, clock_min, clock_avg;
	uint64_t reasons;
	unsigned samples, thermal_samples, power_brake_samples, hw_slowdown_samples;
	unsigned other_processes;  /* most processes of others seen on the GPU at once */
	bool has_health;
	struct gs_health before, after;
	uint64_t xids[16];
	size_t nr_xids;
	char *error;               /* the first of the GPU's own errors */
	double seconds;
};

struct gs_run {
	bool started;              /* a "start" line was seen */
	char *nvml, *xid_watch;
	double duration;
	int *gpus_expected;
	size_t nr_expected;
	struct gs_gpu *gpus;
	size_t nr, alloc;
	bool ended;                /* the "end" line was seen */
	char *error_code, *error;  /* a {"type":"error"} line */
	struct gs_procs procs;     /* other compute processes on the GPUs, start to end */
};

/* How the helper run ended (filled by the command from struct child). */
struct gs_end {
	bool ran;                  /* false: it could not be started (no helper, ...) */
	const char *why_not;       /* when !ran */
	bool timed_out, signaled;
	int exit_code;
	const char *describe;      /* helper_describe_end() */
	uint64_t duration_ms;
};

void gs_run_init(struct gs_run *r);
void gs_run_release(struct gs_run *r);
/* Fill r from the helper's lines. Unknown fields are ignored; a line of the wrong shape is an
 * error (-1 with *err). */
int gs_run_parse(struct gs_run *r, const struct json_value *const *lines, size_t nr,
		 struct strbuf *err);

/* "GPU 0 (0000:1b:00.0)" */
void gs_device_name(const struct gs_gpu *g, struct strbuf *out);

/* Add the findings for one run. lim: limits for the host's GPU model (stress_limits_get). */
void gpu_stress_evaluate(const struct gs_run *r, const struct gs_end *end,
			 const struct stress_limits *lim, struct report *rep);

#endif
