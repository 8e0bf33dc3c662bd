/*
 * finding.h: the finding model every layer above shares: status, severity, action, a finding with
 * its details, and a check's result (status, duration, findings). The bottom of vigil's model, so
 * parsers (logs/), checks and reports all speak it without including upward.
 *
 * Ownership: a check_result owns its findings and their strings; check_result_release() frees
 * them. The pointer result_add() returns is valid until the next result_add() on that result.
 */
#ifndef VIGIL_FINDING_H
#define VIGIL_FINDING_H

#include "../lib/strbuf.h"

/* Ordered by badness for "worst of"; skipped < ok so an all-skipped check stays skipped. */
enum status { STATUS_SKIPPED, STATUS_OK, STATUS_WARN, STATUS_UNKNOWN, STATUS_FAIL };

enum severity { SEV_INFO, SEV_WARNING, SEV_ERROR, SEV_CRITICAL };

#define ACTION_LIST(X)                                                                         \
	X(NONE)                                                                                \
	X(RESTART_APP)                                                                         \
	X(RESET_GPU)                                                                           \
	X(REBOOT)                                                                              \
	X(INSPECT_HARDWARE)                                                                    \
	X(REPLACE_CABLE)                                                                       \
	X(FREE_DISK)                                                                           \
	X(FIX_CONFIG)                                                                          \
	X(START_SERVICE)                                                                       \
	X(LOAD_MODULE)                                                                         \
	X(INVESTIGATE)                                                                         \
	X(CONTACT_SUPPORT)

#define X(a) ACTION_##a,
enum action { ACTION_LIST(X) ACTION__COUNT };
#undef X

struct detail {
	char *key;
	char *value;
	bool numeric; /* value is a number and goes into JSON unquoted */
};

struct finding {
	enum status status;
	enum severity severity;
	enum action action;
	char *code;    /* stable identifier within the check: "xid", "ecc_uncorrected", ... */
	char *device;  /* what it is about: "GPU 0 (0000:1b:00.0)", "mlx5_0 port 1", "/data" */
	char *message; /* one line for a person */
	struct detail *details;
	size_t nr_details, alloc_details;
};

struct check_result {
	char *name;
	enum status status;
	uint64_t duration_ms;
	char *error; /* why the check could not run or finish, when status is unknown */
	enum action action; /* what to do about error: never NONE once report_finish() ran */
	struct finding *findings;
	size_t nr, alloc;
};

const char *status_name(enum status s);
const char *severity_name(enum severity s);
const char *action_name(enum action a);
int status_from_name(const char *s);   /* -1 if unknown */
int severity_from_name(const char *s);
int action_from_name(const char *s);
enum severity severity_default(enum status s);
/*
 * What to do about a check that could not run or finish (r->error): r->action when the check
 * said; else a gpu check that NVML failed or that hung is RESET_GPU (reset the GPU or reboot; if
 * it persists, collect nvidia-bug-report), anything else INVESTIGATE. An unknown is a page that
 * needs an action most.
 */
enum action result_error_action(const struct check_result *r);

void check_result_init(struct check_result *r, const char *name);
void check_result_release(struct check_result *r);
/* Add a finding; severity defaults from status (see severity_default). */
struct finding *result_add(struct check_result *r, enum status st, enum action act,
			   const char *code, const char *device, const char *fmt, ...)
	PRINTF_LIKE(6, 7);
void finding_detail(struct finding *f, const char *key, const char *fmt, ...) PRINTF_LIKE(3, 4);
void finding_detail_num(struct finding *f, const char *key, double v);
/* Set r->status to the worst of its findings; none is unknown ("the check reported nothing"). */
void result_finish(struct check_result *r);
/* Lookups for tests and reports. */
const struct finding *result_find(const struct check_result *r, const char *code,
				  const char *device);
const struct finding *result_worst(const struct check_result *r);

#endif
