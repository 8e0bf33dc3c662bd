/*
 * fake_nvml.c: a stand-in for libnvidia-ml.so that serves an NVML snapshot file
 * (docs/nvml-snapshot.md), so tests load it through vigil's real dlopen/dlsym path.
 *
 * The snapshot is the file vigil names through vigil_fake_nvml_set_snapshot() (under --root:
 * the root's nvml.snapshot, resolved inside the root), else $VIGIL_NVML_SNAPSHOT. Without one,
 * nvmlInit says NVML_ERROR_DRIVER_NOT_LOADED, as on a host with no NVIDIA driver. A value "!CODE"
 * makes the call that reads it return that NVML error; a key that is absent reads as
 * NVML_ERROR_NOT_SUPPORTED. A malformed snapshot makes nvmlInit fail with NVML_ERROR_UNKNOWN and
 * says why on stderr.
 *
 * Built with -DFAKE_NVML_LEGACY it is an old NVML: none of the _v2/_v3 entry points, no
 * nvmlDeviceGetFieldValues, no nvmlDeviceGetRemappedRows, clocks event reasons under their older
 * "Throttle" name, and the v1 nvmlPciInfo_t layout; the shim's fallbacks are tested with it.
 *
 * Not part of vigil: built without sanitizers and loaded by any build of it.
 */
#include "../../src/gpu/snapshot.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <stdarg.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 256

struct kv {
	char *key, *val;
};

struct section {
	struct kv *kv;
	size_t nr, alloc;
	bool present;
};

struct nvmlDevice_st {
	unsigned index;
};

static const char *const counter_keys[NVML_NVLINK_ERROR_COUNT] = {
	"replay", "recovery", "crc_flit", "crc_data", "ecc_data",
};

static int init_count;
static struct section global;
static struct section gpus[MAX_GPUS];
static struct nvmlDevice_st devs[MAX_GPUS];
static unsigned nr_sections; /* highest [gpu N] + 1 */
static double fake_mono(void);
static double first_init_mono;

struct fake_event {
	unsigned gpu, xid;
	double after;
	unsigned long long repeat, served;
};
static struct fake_event *events;
static size_t nr_events, alloc_events;

/* ---- snapshot parsing ---- */

static void section_clear(struct section *s)
{
	for (size_t i = 0; i < s->nr; i++) {
		free(s->kv[i].key);
		free(s->kv[i].val);
	}
	free(s->kv);
	memset(s, 0, sizeof(*s));
}

static void snapshot_free(void)
{
	section_clear(&global);
	for (unsigned i = 0; i < MAX_GPUS; i++)
		section_clear(&gpus[i]);
	nr_sections = 0;
	free(events);
	events = NULL;
	nr_events = alloc_events = 0;
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

static int section_put(struct section *s, const char *key, const char *val)
{
	if (s->nr == s->alloc) {
		size_t na = s->alloc ? 2 * s->alloc : 32;
		struct kv *n = realloc(s->kv, na * sizeof(*n));
		if (!n)
			return -1;
		s->kv = n;
		s->alloc = na;
	}
	for (size_t i = 0; i < s->nr; i++) {
		if (!strcmp(s->kv[i].key, key)) {
			char *v = dup_str(val);
			if (!v)
				return -1;
			free(s->kv[i].val);
			s->kv[i].val = v;
			return 0;
		}
	}
	s->kv[s->nr].key = dup_str(key);
	s->kv[s->nr].val = dup_str(val);
	if (!s->kv[s->nr].key || !s->kv[s->nr].val) {
		free(s->kv[s->nr].key);
		free(s->kv[s->nr].val);
		return -1;
	}
	s->nr++;
	return 0;
}

static const char *const global_keys[] = {
	"init", "driver_version", "nvml_version", "cuda_driver_version", "device_count",
	"event_set_create", "event_wait",
};

static bool known_gpu_key(const char *key)
{
	static const char *const keys[] = {
		"handle", "supported_event_types", "register_events",
#define X(field, k) k,
		NVML_GPU_STRINGS(X)
#undef X
#define X(field, k, hex) k,
		NVML_GPU_VALUES(X)
		NVML_GPU_TELEMETRY(X)
#undef X
	};
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(keys[i], key))
			return true;
	return false;
}

static bool known_global_key(const char *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(global_keys); i++)
		if (!strcmp(global_keys[i], key))
			return true;
	return false;
}

static int bad(const char *path, unsigned line, const char *fmt, ...) PRINTF_LIKE(3, 4);
static int bad(const char *path, unsigned line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fake nvml: %s:%u: ", path, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return NVML_ERROR_UNKNOWN;
}

static void trim(char **s)
{
	char *p = *s;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strlen(p);
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' || p[n - 1] == '\n'))
		p[--n] = '\0';
	*s = p;
}

/* "!CODE" must be "!" and a decimal NVML return code. */
static bool bad_code(const char *v)
{
	if (v[0] != '!')
		return false;
	if (!v[1])
		return true;
	for (const char *p = v + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return true;
	return false;
}

/* "nvlink 3 active=1 replay=0 ..." into keys "nvlink3.active", ... of sec. */
static int parse_nvlink(struct section *sec, char *rest, const char *path, unsigned line)
{
	char *end;
	errno = 0;
	unsigned long link = strtoul(rest, &end, 10);
	if (end == rest || errno || link >= NVML_NVLINK_MAX_LINKS || (*end != ' ' && *end != '\t'))
		return bad(path, line, "nvlink needs a link number 0..%d and key=value words",
			   NVML_NVLINK_MAX_LINKS - 1);
	char *save = NULL;
	for (char *w = strtok_r(end, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(w, '=');
		if (!eq)
			return bad(path, line, "nvlink word '%s' is not key=value", w);
		*eq = '\0';
		bool ok = !strcmp(w, "active");
		for (size_t c = 0; c < NVML_NVLINK_ERROR_COUNT && !ok; c++)
			ok = !strcmp(w, counter_keys[c]);
		if (!ok)
			return bad(path, line, "unknown nvlink key '%s'", w);
		if (bad_code(eq + 1))
			return bad(path, line, "'%s' is not !CODE (a decimal NVML error)", eq + 1);
		char key[64];
		snprintf(key, sizeof(key), "nvlink%lu.%s", link, w);
		if (section_put(sec, key, eq + 1) < 0)
			return NVML_ERROR_MEMORY;
	}
	return 0;
}

/*
 * Xid events the driver raises: "xid_event GPU XID [after=SECONDS] [repeat=N]", GPU an index
 * (one beyond the GPUs the snapshot has is served too, with a handle nobody registered: a
 * library that misbehaves), SECONDS after the first nvmlInit (default 0: at once), N copies.
 */

static int parse_xid_event(char *rest, const char *path, unsigned line)
{
	struct fake_event e = { .repeat = 1 };
	char *save = NULL, *end;
	char *w = strtok_r(rest, " \t", &save);
	char *x = w ? strtok_r(NULL, " \t", &save) : NULL;
	if (!w || !x)
		return bad(path, line, "xid_event wants GPU XID [after=S] [repeat=N]");
	errno = 0;
	unsigned long g = strtoul(w, &end, 10);
	if (*end || errno || g >= MAX_GPUS)
		return bad(path, line, "xid_event GPU '%s' is not an index below %d", w, MAX_GPUS);
	unsigned long xid = strtoul(x, &end, 10);
	if (*end || errno || xid > 100000)
		return bad(path, line, "xid_event XID '%s' is not a number", x);
	e.gpu = (unsigned)g;
	e.xid = (unsigned)xid;
	while ((w = strtok_r(NULL, " \t", &save))) {
		if (!strncmp(w, "after=", 6)) {
			e.after = strtod(w + 6, &end);
			if (*end || !(e.after >= 0))
				return bad(path, line, "xid_event after '%s' is not seconds", w + 6);
		} else if (!strncmp(w, "repeat=", 7)) {
			e.repeat = strtoull(w + 7, &end, 10);
			if (*end || !e.repeat)
				return bad(path, line, "xid_event repeat '%s' is not a count", w + 7);
		} else {
			return bad(path, line, "unknown xid_event word '%s'", w);
		}
	}
	if (nr_events == alloc_events) {
		size_t na = alloc_events ? 2 * alloc_events : 16;
		struct fake_event *n = realloc(events, na * sizeof(*n));
		if (!n)
			return NVML_ERROR_MEMORY;
		events = n;
		alloc_events = na;
	}
	events[nr_events++] = e;
	return 0;
}

static int parse_line(char *s, struct section **cur, const char *path, unsigned line)
{
	trim(&s);
	if (!*s || *s == '#')
		return 0;
	if (*s == '[') {
		unsigned idx;
		int used = 0;
		if (sscanf(s, "[gpu %u]%n", &idx, &used) != 1 || s[used] || idx >= MAX_GPUS)
			return bad(path, line, "bad section '%s' (want [gpu N])", s);
		*cur = &gpus[idx];
		if ((*cur)->present)
			return bad(path, line, "section '%s' given twice", s);
		(*cur)->present = true;
		if (idx + 1 > nr_sections)
			nr_sections = idx + 1;
		return 0;
	}
	char *val = s + strcspn(s, " \t");
	if (*val)
		*val++ = '\0';
	trim(&val);
	if (!strcmp(s, "xid_event")) {
		if (*cur != &global)
			return bad(path, line, "xid_event inside a [gpu N] section");
		return parse_xid_event(val, path, line);
	}
	if (!strcmp(s, "nvlink")) {
		if (*cur == &global)
			return bad(path, line, "nvlink outside a [gpu N] section");
		return parse_nvlink(*cur, val, path, line);
	}
	if (*cur == &global ? !known_global_key(s) : !known_gpu_key(s))
		return bad(path, line, "unknown key '%s'", s);
	if (bad_code(val))
		return bad(path, line, "'%s' is not !CODE (a decimal NVML error)", val);
	return section_put(*cur, s, val) < 0 ? NVML_ERROR_MEMORY : 0;
}

/* What vigil said to serve (vigil_fake_nvml_set_snapshot()), if it said anything. */
static bool snapshot_told;
static char *snapshot_told_path;

/*
 * vigil calls this right after dlopen when it judges a root: the root's nvml.snapshot, resolved
 * inside the root, or NULL for none (no driver). It wins over $VIGIL_NVML_SNAPSHOT, which is for
 * a test that loads this library by hand.
 */
EXPORT void vigil_fake_nvml_set_snapshot(const char *path)
{
	free(snapshot_told_path);
	snapshot_told_path = path ? strdup(path) : NULL;
	snapshot_told = true;
}

/* dlclose() of this library: what vigil told it goes with it. */
__attribute__((destructor)) static void snapshot_told_free(void)
{
	free(snapshot_told_path);
	snapshot_told_path = NULL;
}

static const char *snapshot_path(void)
{
	if (snapshot_told)
		return snapshot_told_path;
	const char *p = getenv("VIGIL_NVML_SNAPSHOT");
	return p && *p ? p : NULL;
}

static int snapshot_load(void)
{
	char lbuf[4096];
	const char *path = snapshot_path();
	if (!path)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? NVML_ERROR_DRIVER_NOT_LOADED
				       : bad(path, 0, "cannot open: %s", strerror(errno));
	struct section *cur = &global;
	unsigned line = 0;
	int rc = 0;
	bool header = false;
	while (!rc && fgets(lbuf, sizeof(lbuf), f)) {
		line++;
		if (!strchr(lbuf, '\n') && !feof(f)) {
			rc = bad(path, line, "line too long");
			break;
		}
		if (!header) {
			char *s = lbuf;
			trim(&s);
			if (!*s || *s == '#')
				continue;
			if (strcmp(s, NVML_SNAPSHOT_HEADER))
				rc = bad(path, line, "not a snapshot: want '%s' first",
					 NVML_SNAPSHOT_HEADER);
			header = true;
			continue;
		}
		rc = parse_line(lbuf, &cur, path, line);
	}
	if (!rc && !header)
		rc = bad(path, line, "empty snapshot");
	fclose(f);
	return rc;
}

static void note_first_init(void); /* test hooks, below */

/* ---- lookups ---- */

static const char *lookup(const struct section *s, const char *key)
{
	for (size_t i = 0; i < s->nr; i++)
		if (!strcmp(s->kv[i].key, key))
			return s->kv[i].val;
	return NULL;
}

/* 0 with *val, NOT_SUPPORTED when absent, CODE for "!CODE". */
static int get(const struct section *s, const char *key, const char **val)
{
	const char *v = lookup(s, key);
	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	if (v[0] == '!') {
		char *end;
		long code = strtol(v + 1, &end, 10);
		if (end == v + 1 || *end)
			return NVML_ERROR_UNKNOWN;
		return (int)code;
	}
	*val = v;
	return 0;
}

static int get_u64(const struct section *s, const char *key, unsigned long long *out)
{
	const char *v = NULL;
	int rc = get(s, key, &v);
	if (rc)
		return rc;
	char *end;
	errno = 0;
	unsigned long long u = strtoull(v, &end, 0);
	if (end == v || *end || errno || v[0] == '-') {
		fprintf(stderr, "fake nvml: '%s' is '%s', not a number\n", key, v);
		return NVML_ERROR_UNKNOWN;
	}
	*out = u;
	return 0;
}

static int get_uint(const struct section *s, const char *key, unsigned *out)
{
	unsigned long long u = 0;
	int rc = get_u64(s, key, &u);
	if (!rc)
		*out = (unsigned)u;
	return rc;
}

static int copy_str(const struct section *s, const char *key, char *buf, unsigned len)
{
	const char *v = NULL;
	int rc = get(s, key, &v);
	if (rc)
		return rc;
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(v) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, v, strlen(v) + 1);
	return 0;
}

/* The device's section, or an error for a bad handle / before init. */
static int dev_section(nvmlDevice_t dev, const struct section **s)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (!dev || dev < devs || dev >= devs + MAX_GPUS)
		return NVML_ERROR_INVALID_ARGUMENT;
	*s = &gpus[dev->index];
	return 0;
}

#define DEV(dev, s)                                                                            \
	const struct section *s = NULL;                                                        \
	do {                                                                                   \
		int rc_ = dev_section(dev, &s);                                                \
		if (rc_)                                                                       \
			return rc_;                                                            \
	} while (0)

/* ---- the NVML API ---- */

EXPORT const char *nvmlErrorString(nvmlReturn_t rc);
const char *nvmlErrorString(nvmlReturn_t rc)
{
	switch (rc) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		return "Function Not Found";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	default:
		return "Unknown Error";
	}
}

/* $VIGIL_FAKE_NVML_NOISE set: print on stdout and stderr at init, as some NVML builds and
 * vendor plugins do, straight to the fds (a buffered line would die with _exit). */
static void init_noise(void)
{
	static const char out[] = "fake-nvml: chatter on stdout {\"not\": json\n";
	static const char err[] = "fake-nvml: chatter on stderr\n";
	if (!getenv("VIGIL_FAKE_NVML_NOISE"))
		return;
	if (write(1, out, sizeof(out) - 1) < 0 || write(2, err, sizeof(err) - 1) < 0)
		return;
}

static nvmlReturn_t do_init(void)
{
	init_noise();
	if (init_count) {
		init_count++;
		return NVML_SUCCESS;
	}
	int rc = snapshot_load();
	const char *v = NULL;
	if (!rc)
		rc = lookup(&global, "init") ? get(&global, "init", &v) : 0;
	if (rc) {
		snapshot_free();
		return rc;
	}
	for (unsigned i = 0; i < MAX_GPUS; i++)
		devs[i].index = i;
	init_count = 1;
	if (!first_init_mono)
		first_init_mono = fake_mono();
	note_first_init();
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInit(void)
{
	return do_init();
}

EXPORT nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlShutdown(void)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (--init_count == 0)
		snapshot_free();
	return NVML_SUCCESS;
}

static nvmlReturn_t global_str(const char *key, char *buf, unsigned len)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	return copy_str(&global, key, buf, len);
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned len);
nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
	return global_str("driver_version", buf, len);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *buf, unsigned len);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *buf, unsigned len)
{
	return global_str("nvml_version", buf, len);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	unsigned u = 0;
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	int rc = get_uint(&global, "cuda_driver_version", &u);
	if (!rc)
		*v = (int)u;
	return rc;
}

/*
 * Test hooks for a process that keeps NVML open (the agent's gpu worker):
 * $VIGIL_FAKE_NVML_INIT_LOG names a file that gets one line per first nvmlInit; while the file
 * $VIGIL_FAKE_NVML_HANG names exists, nvmlDeviceGetCount never returns, as a call stuck in the
 * driver.
 */
static void note_first_init(void)
{
	const char *log = getenv("VIGIL_FAKE_NVML_INIT_LOG");
	FILE *f = log && *log ? fopen(log, "ae") : NULL;
	if (f) {
		fprintf(f, "init %ld\n", (long)getpid());
		fclose(f);
	}
}

static void hang_if_asked(void)
{
	const char *hang = getenv("VIGIL_FAKE_NVML_HANG");
	while (hang && *hang && access(hang, F_OK) == 0)
		pause();
}

static nvmlReturn_t do_count(unsigned *n)
{
	hang_if_asked();
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (!n)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!lookup(&global, "device_count")) {
		*n = nr_sections;
		return NVML_SUCCESS;
	}
	int rc = get_uint(&global, "device_count", n);
	if (!rc && *n > MAX_GPUS)
		*n = MAX_GPUS;
	return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *n);
nvmlReturn_t nvmlDeviceGetCount(unsigned *n)
{
	return do_count(n);
}

static nvmlReturn_t do_handle(unsigned index, nvmlDevice_t *dev)
{
	unsigned n = 0;
	int rc = do_count(&n);
	if (rc)
		return rc;
	if (index >= n || !dev)
		return NVML_ERROR_INVALID_ARGUMENT;
	const char *v = NULL;
	if (lookup(&gpus[index], "handle") && (rc = get(&gpus[index], "handle", &v)))
		return rc;
	*dev = &devs[index];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *dev)
{
	return do_handle(index, dev);
}

#define DEV_STR(fn, key)                                                                       \
	EXPORT nvmlReturn_t fn(nvmlDevice_t dev, char *buf, unsigned len);                     \
	nvmlReturn_t fn(nvmlDevice_t dev, char *buf, unsigned len)                             \
	{                                                                                      \
		DEV(dev, s);                                                                   \
		return copy_str(s, key, buf, len);                                             \
	}
DEV_STR(nvmlDeviceGetName, "name")
DEV_STR(nvmlDeviceGetUUID, "uuid")
DEV_STR(nvmlDeviceGetSerial, "serial")
DEV_STR(nvmlDeviceGetVbiosVersion, "vbios_version")

#define DEV_UINT(fn, key)                                                                      \
	EXPORT nvmlReturn_t fn(nvmlDevice_t dev, unsigned *out);                               \
	nvmlReturn_t fn(nvmlDevice_t dev, unsigned *out)                                       \
	{                                                                                      \
		DEV(dev, s);                                                                   \
		return out ? get_uint(s, key, out) : NVML_ERROR_INVALID_ARGUMENT;              \
	}
DEV_UINT(nvmlDeviceGetCurrPcieLinkGeneration, "pcie_gen_current")
DEV_UINT(nvmlDeviceGetMaxPcieLinkGeneration, "pcie_gen_max")
DEV_UINT(nvmlDeviceGetCurrPcieLinkWidth, "pcie_width_current")
DEV_UINT(nvmlDeviceGetMaxPcieLinkWidth, "pcie_width_max")
DEV_UINT(nvmlDeviceGetPcieReplayCounter, "pcie_replay_counter")
DEV_UINT(nvmlDeviceGetPowerUsage, "power_usage_mw")
DEV_UINT(nvmlDeviceGetEnforcedPowerLimit, "power_limit_mw")

/* The first error of two keys read by one call. */
static int get_two(const struct section *s, const char *k1, const char *k2,
		   unsigned long long *a, unsigned long long *b)
{
	int rc = get_u64(s, k1, a);
	return rc ? rc : get_u64(s, k2, b);
}

EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode)
{
	DEV(dev, s);
	unsigned u = 0;
	int rc = get_uint(s, "persistence_mode", &u);
	if (!rc)
		*mode = u ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *cur, int *pend);
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *cur, int *pend)
{
	DEV(dev, s);
	unsigned long long a = 0, b = 0;
	int rc = get_two(s, "ecc_mode_current", "ecc_mode_pending", &a, &b);
	if (!rc) {
		*cur = a ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
		*pend = b ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	}
	return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter,
						unsigned long long *out);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter,
					 unsigned long long *out)
{
	DEV(dev, s);
	char key[64];
	if ((type != 0 && type != 1) || (counter != 0 && counter != 1) || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(key, sizeof(key), "ecc_%s_%s", counter ? "aggregate" : "volatile",
		 type ? "uncorrected" : "corrected");
	return get_u64(s, key, out);
}

static nvmlReturn_t do_clock_events(nvmlDevice_t dev, unsigned long long *out)
{
	DEV(dev, s);
	return out ? get_u64(s, "clocks_event_reasons", out) : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev,
							      unsigned long long *out);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *out)
{
	return do_clock_events(dev, out);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *out);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *out)
{
	DEV(dev, s);
	if (sensor != NVML_TEMPERATURE_GPU || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	return get_uint(s, "temperature_gpu", out);
}

/* key for NVML_CLOCK_SM, mem_key (NULL: none) for NVML_CLOCK_MEM; other types not supported */
static nvmlReturn_t clock_info(nvmlDevice_t dev, int type, unsigned *out, const char *key,
			       const char *mem_key)
{
	DEV(dev, s);
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (type == NVML_CLOCK_MEM && mem_key)
		return get_uint(s, mem_key, out);
	if (type != NVML_CLOCK_SM)
		return NVML_ERROR_NOT_SUPPORTED;
	return get_uint(s, key, out);
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *out);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *out)
{
	return clock_info(dev, type, out, "sm_clock_mhz", "mem_clock_mhz");
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned *out);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned *out)
{
	return clock_info(dev, type, out, "sm_clock_max_mhz", NULL);
}

/* "utilization_gpu" is the gpu percent; memory is served as 0 (vigil does not read it). */
EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u)
{
	DEV(dev, s);
	unsigned gpu = 0;
	if (!u)
		return NVML_ERROR_INVALID_ARGUMENT;
	int rc = get_uint(s, "utilization_gpu", &gpu);
	if (rc)
		return rc;
	u->gpu = gpu;
	u->memory = 0;
	return NVML_SUCCESS;
}

/* "memory_used_bytes"; total and free are served as used and 0 (vigil reads only used). */
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
	DEV(dev, s);
	unsigned long long used = 0;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	int rc = get_u64(s, "memory_used_bytes", &used);
	if (rc)
		return rc;
	m->used = m->total = used;
	m->free = 0;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, int *active);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, int *active)
{
	DEV(dev, s);
	char key[64];
	unsigned u = 0;
	if (link >= NVML_NVLINK_MAX_LINKS || !active)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(key, sizeof(key), "nvlink%u.active", link);
	int rc = get_uint(s, key, &u);
	if (!rc)
		*active = u ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t dev, unsigned link, int counter,
						    unsigned long long *out);
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t dev, unsigned link, int counter,
					     unsigned long long *out)
{
	DEV(dev, s);
	char key[64];
	if (link >= NVML_NVLINK_MAX_LINKS || counter < 0 || counter >= NVML_NVLINK_ERROR_COUNT ||
	    !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(key, sizeof(key), "nvlink%u.%s", link, counter_keys[counter]);
	return get_u64(s, key, out);
}

/* Fill the v1 nvmlPciInfo_t (busId[16] first) or the v2/v3 one. */
struct pci_info_v1 {
	char busId[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	unsigned reserved[4];
};

static nvmlReturn_t pci_info(nvmlDevice_t dev, nvmlPciInfo_t *p3, struct pci_info_v1 *p1)
{
	DEV(dev, s);
	char id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
	unsigned long long devid = 0;
	unsigned dom = 0, bus = 0, slot = 0, fn = 0;
	int rc = copy_str(s, "pci_bus_id", id, sizeof(id));
	if (!rc)
		rc = get_u64(s, "pci_device_id", &devid);
	if (rc)
		return rc;
	if (sscanf(id, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4) {
		fprintf(stderr, "fake nvml: pci_bus_id '%s' does not parse\n", id);
		return NVML_ERROR_UNKNOWN;
	}
	char legacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	snprintf(legacy, sizeof(legacy), "%04X:%02X:%02X.0", dom & 0xffff, bus & 0xff,
		 slot & 0x1f);
	if (p3) {
		memset(p3, 0, sizeof(*p3));
		memcpy(p3->busIdLegacy, legacy, sizeof(legacy));
		snprintf(p3->busId, sizeof(p3->busId), "%s", id);
		p3->domain = dom;
		p3->bus = bus;
		p3->device = slot;
		p3->pciDeviceId = (unsigned)devid;
	} else {
		memset(p1, 0, sizeof(*p1));
		memcpy(p1->busId, legacy, sizeof(legacy));
		p1->domain = dom;
		p1->bus = bus;
		p1->device = slot;
		p1->pciDeviceId = (unsigned)devid;
		/* What an old driver leaves there; the shim must not read it as a bus id. */
		memset(p1->reserved, 0x41, sizeof(p1->reserved));
	}
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, struct pci_info_v1 *p);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, struct pci_info_v1 *p)
{
	return p ? pci_info(dev, NULL, p) : NVML_ERROR_INVALID_ARGUMENT;
}

#ifndef FAKE_NVML_LEGACY
EXPORT nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit_v2(void)
{
	return do_init();
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
	return do_count(n);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev)
{
	return do_handle(index, dev);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	return nvmlSystemGetCudaDriverVersion(v);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *p);
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *p)
{
	return p ? pci_info(dev, p, NULL) : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *p);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *p)
{
	return p ? pci_info(dev, p, NULL) : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev,
							   unsigned long long *out);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *out)
{
	return do_clock_events(dev, out);
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned *corr, unsigned *unc,
					      unsigned *pending, unsigned *failure);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned *corr, unsigned *unc,
				       unsigned *pending, unsigned *failure)
{
	DEV(dev, s);
	unsigned long long a = 0, b = 0, c = 0, d = 0;
	if (!corr || !unc || !pending || !failure)
		return NVML_ERROR_INVALID_ARGUMENT;
	int rc = get_two(s, "remapped_rows_correctable", "remapped_rows_uncorrectable", &a, &b);
	if (!rc)
		rc = get_two(s, "remapped_rows_pending", "remapped_rows_failure", &c, &d);
	if (rc)
		return rc;
	*corr = (unsigned)a;
	*unc = (unsigned)b;
	*pending = c != 0;
	*failure = d != 0;
	return NVML_SUCCESS;
}

/*
 * Field 230 is "recovery_action". "recovery_action !13" makes the whole call say
 * FUNCTION_NOT_FOUND (an NVML that has the entry point but not the feature); any other !CODE is
 * returned in that field's nvmlReturn, as NVML does.
 */
EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int n, nvmlFieldValue_t *v);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int n, nvmlFieldValue_t *v)
{
	DEV(dev, s);
	if (n < 0 || (n && !v))
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < n; i++) {
		memset(&v[i].value, 0, sizeof(v[i].value));
		v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
		const char *key = v[i].fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION ? "recovery_action"
				  : v[i].fieldId == NVML_FI_DEV_MEMORY_TEMP	     ? "temperature_memory"
										     : NULL;
		if (!key) {
			v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			continue;
		}
		unsigned u = 0;
		int rc = get_uint(s, key, &u);
		if (rc == NVML_ERROR_FUNCTION_NOT_FOUND)
			return rc;
		v[i].nvmlReturn = rc;
		v[i].value.uiVal = u;
	}
	return NVML_SUCCESS;
}
#endif

/*
 * ---- events ----
 * One event set at a time is enough for vigil (its gpu worker makes one). A GPU is registered
 * when its snapshot section says "supported_event_types" with the Xid bit (0x8) and
 * "register_events" is not !CODE; absent, NVML_ERROR_NOT_SUPPORTED, as on a GPU or VM without
 * events. An event fires once its "after" has passed since the first nvmlInit and is served, in
 * snapshot order, to a wait on a set that registered its GPU. "event_wait !CODE" makes every
 * wait fail so; while the file $VIGIL_FAKE_NVML_EVENT_HANG names exists, a wait never returns.
 */
struct nvmlEventSet_st {
	bool registered[MAX_GPUS];
	bool live;
};
static struct nvmlEventSet_st the_set;

static double fake_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set);
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	const char *v = NULL;
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (lookup(&global, "event_set_create")) {
		int rc = get(&global, "event_set_create", &v);
		if (rc)
			return rc;
	}
	if (the_set.live)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	memset(&the_set, 0, sizeof(the_set));
	the_set.live = true;
	*set = &the_set;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	if (set != &the_set || !the_set.live)
		return NVML_ERROR_INVALID_ARGUMENT;
	the_set.live = false;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long *t);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long *t)
{
	DEV(dev, s);
	return t ? get_u64(s, "supported_event_types", t) : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types,
					     nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types,
				      nvmlEventSet_t set)
{
	DEV(dev, s);
	unsigned long long have = 0;
	const char *v = NULL;
	if (set != &the_set || !the_set.live)
		return NVML_ERROR_INVALID_ARGUMENT;
	int rc = get_u64(s, "supported_event_types", &have);
	if (rc)
		return rc;
	if (lookup(s, "register_events") && (rc = get(s, "register_events", &v)))
		return rc;
	if (types & ~have)
		return NVML_ERROR_NOT_SUPPORTED;
	the_set.registered[dev->index] = true;
	return NVML_SUCCESS;
}

static void event_hang_if_asked(void)
{
	const char *hang = getenv("VIGIL_FAKE_NVML_EVENT_HANG");
	while (hang && *hang && access(hang, F_OK) == 0)
		pause();
}

static nvmlReturn_t do_wait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms,
			    bool v2)
{
	const char *v = NULL;
	(void)timeout_ms; /* nothing new arrives while a test waits: no event is due later */
	event_hang_if_asked();
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (set != &the_set || !the_set.live || !data)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (lookup(&global, "event_wait")) {
		int rc = get(&global, "event_wait", &v);
		if (rc)
			return rc;
	}
	unsigned n = 0;
	do_count(&n);
	double now = fake_mono() - first_init_mono;
	for (size_t i = 0; i < nr_events; i++) {
		struct fake_event *e = &events[i];
		if (e->served >= e->repeat || e->after > now)
			continue;
		/* a GPU the snapshot has gets its events only where registered; one beyond them
		 * comes with a handle nobody registered */
		if (e->gpu < n && !the_set.registered[e->gpu])
			continue;
		e->served++;
		data->device = &devs[e->gpu];
		data->eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
		data->eventData = e->xid;
		if (v2) {
			data->gpuInstanceId = 0xFFFFFFFFu;
			data->computeInstanceId = 0xFFFFFFFFu;
		}
		return NVML_SUCCESS;
	}
	return NVML_ERROR_TIMEOUT;
}

#ifndef FAKE_NVML_LEGACY
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms)
{
	return do_wait(set, data, ms, true);
}
#endif

EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned ms)
{
	return do_wait(set, data, ms, false);
}
