/* finding.c: findings, statuses, severities and actions (see finding.h). */
#include "finding.h"

#include <math.h>
#include <stdarg.h>

static const char *const status_names[] = { "skipped", "ok", "warn", "unknown", "fail" };
static const char *const severity_names[] = { "info", "warning", "error", "critical" };
#define X(a) #a,
static const char *const action_names[] = { ACTION_LIST(X) };
#undef X
_Static_assert(ARRAY_SIZE(status_names) == STATUS_FAIL + 1, "a name for every status");
_Static_assert(ARRAY_SIZE(severity_names) == SEV_CRITICAL + 1, "a name for every severity");
_Static_assert(ARRAY_SIZE(action_names) == ACTION__COUNT, "a name for every action");

const char *status_name(enum status s)
{
	return (unsigned)s < ARRAY_SIZE(status_names) ? status_names[s] : "unknown";
}

const char *severity_name(enum severity s)
{
	return (unsigned)s < ARRAY_SIZE(severity_names) ? severity_names[s] : "error";
}

const char *action_name(enum action a)
{
	return (unsigned)a < ARRAY_SIZE(action_names) ? action_names[a] : "NONE";
}

static int lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(names[i], s))
			return (int)i;
	return -1;
}

int status_from_name(const char *s)
{
	return lookup(status_names, ARRAY_SIZE(status_names), s);
}

int severity_from_name(const char *s)
{
	return lookup(severity_names, ARRAY_SIZE(severity_names), s);
}

int action_from_name(const char *s)
{
	return lookup(action_names, ARRAY_SIZE(action_names), s);
}

enum severity severity_default(enum status s)
{
	switch (s) {
	case STATUS_FAIL:
		return SEV_ERROR;
	case STATUS_WARN:
	case STATUS_UNKNOWN:
		return SEV_WARNING;
	default:
		return SEV_INFO;
	}
}

void check_result_init(struct check_result *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	r->name = xstrdup(name);
	r->status = STATUS_OK;
}

void check_result_release(struct check_result *r)
{
	for (size_t i = 0; i < r->nr; i++) {
		struct finding *f = &r->findings[i];
		for (size_t j = 0; j < f->nr_details; j++) {
			free(f->details[j].key);
			free(f->details[j].value);
		}
		free(f->details);
		free(f->code);
		free(f->device);
		free(f->message);
	}
	free(r->findings);
	free(r->name);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

struct finding *result_add(struct check_result *r, enum status st, enum action act,
			   const char *code, const char *device, const char *fmt, ...)
{
	struct strbuf msg = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	/* One line: a message never carries a newline into a table or a drain reason. */
	for (size_t i = 0; i < msg.len; i++)
		if (msg.buf[i] == '\n' || msg.buf[i] == '\r' || msg.buf[i] == '\t')
			msg.buf[i] = ' ';
	ALLOC_GROW(r->findings, r->nr + 1, r->alloc);
	struct finding *f = &r->findings[r->nr++];
	memset(f, 0, sizeof(*f));
	f->status = st;
	f->severity = severity_default(st);
	f->action = act;
	f->code = xstrdup(code ? code : "");
	f->device = xstrdup(device ? device : "");
	f->message = strbuf_detach(&msg, NULL);
	return f;
}

static void add_detail(struct finding *f, const char *key, char *value, bool numeric)
{
	ALLOC_GROW(f->details, f->nr_details + 1, f->alloc_details);
	f->details[f->nr_details].key = xstrdup(key);
	f->details[f->nr_details].value = value;
	f->details[f->nr_details].numeric = numeric;
	f->nr_details++;
}

void finding_detail(struct finding *f, const char *key, const char *fmt, ...)
{
	struct strbuf v = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&v, fmt, ap);
	va_end(ap);
	add_detail(f, key, strbuf_detach(&v, NULL), false);
}

void finding_detail_num(struct finding *f, const char *key, double v)
{
	struct strbuf s = STRBUF_INIT;
	if (!isfinite(v))
		strbuf_addstr(&s, "null");
	else if (v == floor(v) && fabs(v) < 1e15)
		strbuf_addf(&s, "%.0f", v);
	else
		strbuf_addf(&s, "%.6g", v);
	add_detail(f, key, strbuf_detach(&s, NULL), true);
}

void result_finish(struct check_result *r)
{
	enum status worst = STATUS_OK;
	bool any = false;
	for (size_t i = 0; i < r->nr; i++) {
		if (!any || r->findings[i].status > worst)
			worst = r->findings[i].status;
		any = true;
	}
	/* No finding is no evidence: a check that said nothing examined nothing we can see. */
	if (!any) {
		worst = STATUS_UNKNOWN;
		if (!r->error)
			r->error = xstrdup("the check reported nothing");
	}
	r->status = worst;
}

const struct finding *result_find(const struct check_result *r, const char *code,
				  const char *device)
{
	for (size_t i = 0; i < r->nr; i++) {
		const struct finding *f = &r->findings[i];
		if (code && strcmp(f->code, code))
			continue;
		if (device && !strstr(f->device, device))
			continue;
		return f;
	}
	return NULL;
}

const struct finding *result_worst(const struct check_result *r)
{
	const struct finding *w = NULL;
	for (size_t i = 0; i < r->nr; i++) {
		const struct finding *f = &r->findings[i];
		if (!w || f->status > w->status ||
		    (f->status == w->status && f->severity > w->severity))
			w = f;
	}
	return w;
}

enum action result_error_action(const struct check_result *r)
{
	const char *check = r->name, *error = r->error;
	if (r->action != ACTION_NONE)
		return r->action;
	/* NVML that fails to start or hangs is the GPU or its driver, not vigil: the driver's own
	 * advice for an unknown NVML error is a GPU reset, then a reboot */
	if (check && !strcmp(check, "gpu") && error &&
	    (strstr(error, "NVML") || strstr(error, "nvml") || strstr(error, "timed out") ||
	     strstr(error, "gpu worker")))
		return ACTION_RESET_GPU;
	return ACTION_INVESTIGATE;
}
