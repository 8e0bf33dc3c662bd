/*
 * model.h: the failure model of `vigil sim` (docs/SIM.md): failure classes, each with a rate
 * per GPU-day, what vigil run's supervisor sees when it strikes (a rank's crash, a hang, a
 * slowdown, a node lost, a host a periodic check finds sick), whether a host is at fault (then
 * whether vigil check can see it, and the hours of repair after which the host comes back and
 * may fail again) or only the software (a restart fixes it).
 *
 * The default model is built in (from Llama 3's 419 unexpected interruptions in 54 days on
 * 16,384 GPUs, by root cause; the numbers and the mapping are in docs/SIM.md) and written
 * with sim_model_json(); sim_model_parse() reads the same shape back, strictly: an unknown
 * key, a missing field, a negative or non-finite rate is an error naming the key.
 *
 * Ownership: a model is a plain value (fixed arrays), nothing to release.
 */
#ifndef VIGIL_SIM_MODEL_H
#define VIGIL_SIM_MODEL_H

#include "../lib/strbuf.h"

#include <stdbool.h>
#include <stddef.h>

#define SIM_CLASSES_MAX 32
#define SIM_CLASS_NAME_MAX 48
#define SIM_CHECK_TEXT_MAX 160
/* A model file is small: more than this is not a model. */
#define SIM_MODEL_FILE_MAX (256 << 10)

/* What the supervisor sees when the fault strikes. */
enum sim_seen {
	SIM_SEEN_CRASH, /* a rank's task exits (srun: "task N: Exited with exit code 1") */
	SIM_SEEN_HANG,  /* the ranks stop making steps (a collective that never ends) */
	SIM_SEEN_SLOW,  /* the host's steps take SIM_SLOW_FACTOR times as long */
	SIM_SEEN_LOST,  /* the node stops: Slurm NOT_RESPONDING, srun "Node failure" */
	SIM_SEEN_SICK,  /* the run goes on; the host's vigil check says unhealthy */
	SIM_SEEN_NR
};

#define SIM_SLOW_FACTOR 2.0

struct sim_class {
	char name[SIM_CLASS_NAME_MAX];
	double rate;       /* faults per GPU-day */
	enum sim_seen seen;
	bool host_fault;   /* a host is broken (else: the software; a restart fixes it) */
	bool check_sees;   /* vigil check on the host says unhealthy until it is repaired */
	double repair_hours; /* out of the pool this long, then healthy again (host faults) */
	char check_says[SIM_CHECK_TEXT_MAX]; /* the check's reason when check_sees */
};

struct sim_model {
	char source[256];
	struct sim_class classes[SIM_CLASSES_MAX];
	size_t nr;
};

/* The built-in model (docs/SIM.md). */
void sim_model_default(struct sim_model *m);
/* Faults per GPU-day, all classes together. */
double sim_model_total_rate(const struct sim_model *m);
/* The model as JSON (pretty, one trailing newline), the shape sim_model_parse() reads. */
void sim_model_json(const struct sim_model *m, struct strbuf *out);
/* The model's members after schema_version (source, rate_unit, classes) into an open object:
 * the same shape where a model sits inside another document (vigil fleet model). */
struct json_writer;
void sim_model_members(struct json_writer *w, const struct sim_model *m);
/* Parse a model: 0, or -1 with *err naming the key or value at fault. */
int sim_model_parse(const char *text, size_t len, struct sim_model *m, struct strbuf *err);
/* Read and parse a model file (at most SIM_MODEL_FILE_MAX bytes). */
int sim_model_load(const char *path, struct sim_model *m, struct strbuf *err);

const char *sim_seen_name(enum sim_seen s);

#endif
