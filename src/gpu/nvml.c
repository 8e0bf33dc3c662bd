/*
 * nvml.c: the NVML shim (see nvml.h): choose and dlopen the library, resolve its symbols from one
 * table, and read this host's GPUs into a struct nvml_host.
 */
#include "nvml.h"
#include "../sys/fsroot.h"

#include <dlfcn.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#ifndef VIGIL_LIBDIR
#define VIGIL_LIBDIR "/usr/local/lib"
#endif

#define FAKE_NVML_NAME "libvigil-fakenvml.so"
#define NVML_MAX_GPUS 256 /* more than any host has; bounds what a bad library can make us do */

const char *const nvml_nvlink_counter_keys[NVML_NVLINK_ERROR_COUNT] = {
	"replay", "recovery", "crc_flit", "crc_data", "ecc_data",
};

/* ---- the symbol table ---- */

struct nvml_fns {
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	nvmlReturn_t (*driver_version)(char *, unsigned);
	nvmlReturn_t (*nvml_version)(char *, unsigned);
	nvmlReturn_t (*cuda_version)(int *);
	nvmlReturn_t (*count)(unsigned *);
	nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*serial)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*vbios)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*persistence)(nvmlDevice_t, int *);
	nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*total_ecc)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned *, unsigned *, unsigned *,
				      unsigned *);
	nvmlReturn_t (*clock_events)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*pcie_replay)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int *);
	nvmlReturn_t (*nvlink_error)(nvmlDevice_t, unsigned, int, unsigned long long *);
	nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t *);
	nvmlReturn_t (*event_set_create)(nvmlEventSet_t *);
	nvmlReturn_t (*event_set_free)(nvmlEventSet_t);
	nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*supported_events)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*event_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);
	nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*memory_info)(nvmlDevice_t, nvmlMemory_t *);
};

/* Newest name first: a library that has it is new enough for its semantics. */
static const struct nvml_sym {
	size_t off;
	bool required;
	const char *names[3];
} nvml_syms[] = {
#define F(field) offsetof(struct nvml_fns, field)
	{ F(init), true, { "nvmlInit_v2", "nvmlInit" } },
	{ F(shutdown), true, { "nvmlShutdown" } },
	{ F(count), true, { "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount" } },
	{ F(handle), true, { "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex" } },
	{ F(driver_version), false, { "nvmlSystemGetDriverVersion" } },
	{ F(nvml_version), false, { "nvmlSystemGetNVMLVersion" } },
	{ F(cuda_version), false,
	  { "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion" } },
	{ F(name), false, { "nvmlDeviceGetName" } },
	{ F(uuid), false, { "nvmlDeviceGetUUID" } },
	{ F(serial), false, { "nvmlDeviceGetSerial" } },
	{ F(vbios), false, { "nvmlDeviceGetVbiosVersion" } },
	{ F(pci_info), false,
	  { "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo" } },
	{ F(persistence), false, { "nvmlDeviceGetPersistenceMode" } },
	{ F(ecc_mode), false, { "nvmlDeviceGetEccMode" } },
	{ F(total_ecc), false, { "nvmlDeviceGetTotalEccErrors" } },
	{ F(remapped_rows), false, { "nvmlDeviceGetRemappedRows" } },
	{ F(clock_events), false,
	  { "nvmlDeviceGetCurrentClocksEventReasons",
	    "nvmlDeviceGetCurrentClocksThrottleReasons" } },
	{ F(pcie_gen), false, { "nvmlDeviceGetCurrPcieLinkGeneration" } },
	{ F(pcie_gen_max), false, { "nvmlDeviceGetMaxPcieLinkGeneration" } },
	{ F(pcie_width), false, { "nvmlDeviceGetCurrPcieLinkWidth" } },
	{ F(pcie_width_max), false, { "nvmlDeviceGetMaxPcieLinkWidth" } },
	{ F(pcie_replay), false, { "nvmlDeviceGetPcieReplayCounter" } },
	{ F(temperature), false, { "nvmlDeviceGetTemperature" } },
	{ F(power_usage), false, { "nvmlDeviceGetPowerUsage" } },
	{ F(power_limit), false, { "nvmlDeviceGetEnforcedPowerLimit" } },
	{ F(clock), false, { "nvmlDeviceGetClockInfo" } },
	{ F(max_clock), false, { "nvmlDeviceGetMaxClockInfo" } },
	{ F(nvlink_state), false, { "nvmlDeviceGetNvLinkState" } },
	{ F(nvlink_error), false, { "nvmlDeviceGetNvLinkErrorCounter" } },
	{ F(field_values), false, { "nvmlDeviceGetFieldValues" } },
	{ F(event_set_create), false, { "nvmlEventSetCreate" } },
	{ F(event_set_free), false, { "nvmlEventSetFree" } },
	{ F(register_events), false, { "nvmlDeviceRegisterEvents" } },
	{ F(supported_events), false, { "nvmlDeviceGetSupportedEventTypes" } },
	{ F(event_wait), false, { "nvmlEventSetWait_v2", "nvmlEventSetWait" } },
	{ F(utilization), false, { "nvmlDeviceGetUtilizationRates" } },
	/* the plain call: nvmlDeviceGetMemoryInfo_v2 takes a versioned struct of another shape */
	{ F(memory_info), false, { "nvmlDeviceGetMemoryInfo" } },
#undef F
};

struct nvml_lib {
	void *dl;
	struct nvml_fns fn;
	bool pci_v1; /* only the plain nvmlDeviceGetPciInfo: the bus id is in busIdLegacy */
	bool wait_v1; /* only the plain nvmlEventSetWait: no MIG instance ids */
};

static int lib_resolve(struct nvml_lib *lib, const char *path, struct strbuf *err)
{
	memset(&lib->fn, 0, sizeof(lib->fn));
	for (size_t i = 0; i < ARRAY_SIZE(nvml_syms); i++) {
		const struct nvml_sym *s = &nvml_syms[i];
		void *p = NULL;
		size_t k;
		for (k = 0; k < ARRAY_SIZE(s->names) && s->names[k] && !p; k++)
			p = dlsym(lib->dl, s->names[k]);
		if (!p) {
			if (s->required)
				return error_set(err, "NVML library '%s' has no '%s'", path,
						 s->names[0]);
			continue;
		}
		/* A function pointer slot: copy the address, as POSIX dlsym() intends. */
		memcpy((char *)&lib->fn + s->off, &p, sizeof(p));
		if (s->off == offsetof(struct nvml_fns, pci_info))
			lib->pci_v1 = !strcmp(s->names[k - 1], "nvmlDeviceGetPciInfo");
		if (s->off == offsetof(struct nvml_fns, event_wait))
			lib->wait_v1 = !strcmp(s->names[k - 1], "nvmlEventSetWait");
	}
	return 0;
}

/* The fake library that serves ROOT/nvml.snapshot: next to the executable, else installed. */
static int find_fake_library(struct strbuf *out)
{
	char exe[4096];
	if (exe_dir(exe, sizeof(exe))) {
		strbuf_reset(out);
		strbuf_addf(out, "%s/%s", exe, FAKE_NVML_NAME);
		if (access(out->buf, R_OK) == 0)
			return 0;
	}
	strbuf_reset(out);
	strbuf_addstr(out, VIGIL_LIBDIR "/vigil/" FAKE_NVML_NAME);
	return access(out->buf, R_OK) == 0 ? 0 : -1;
}

static bool is_not_found(const char *dlerr)
{
	return dlerr && strstr(dlerr, "No such file or directory");
}

/* What the test library (tests/fake-nvml/) exports to be told which snapshot to serve. */
#define FAKE_SET_SNAPSHOT "vigil_fake_nvml_set_snapshot"

/*
 * Under a root, tell the test library which snapshot to serve: the root's, resolved inside it,
 * or none. Passed by a call, not through the environment: nothing process-global says where the
 * root is. A library without the symbol (a real NVML named by VIGIL_NVML_LIBRARY) is left be.
 */
static void fake_set_snapshot(void *dl, const char *path)
{
	void *p = dlsym(dl, FAKE_SET_SNAPSHOT);
	void (*set)(const char *);
	if (!p)
		return;
	/* a function pointer from dlsym(): copy the address, as POSIX intends */
	memcpy(&set, &p, sizeof(p));
	set(path);
}

/*
 * Open the library: 1 (h->avail = NVML_NO_LIBRARY, h->note says why), 0 (open and resolved), or
 * -1 with *err.
 */
static int lib_open(const struct fsroot *root, struct nvml_lib *lib, struct nvml_host *h,
		    struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT, snap = STRBUF_INIT;
	const char *env = getenv("VIGIL_NVML_LIBRARY");
	bool under_root = !fsroot_is_host(root), have_snap = false;
	int ret = -1;
	memset(lib, 0, sizeof(*lib));
	if (under_root) {
		/* resolved inside the root: a planted nvml.snapshot -> /elsewhere serves nothing
		 * from outside it (the test library opens the path it is given) */
		int sr = fsroot_resolve(root, "/nvml.snapshot", &snap, err);
		if (sr < 0)
			goto out;
		have_snap = sr == READ_OK;
	}
	if (env && *env) {
		lib->dl = dlopen(env, RTLD_NOW | RTLD_LOCAL);
		if (!lib->dl) {
			error_set(err, "cannot load NVML library '%s' (VIGIL_NVML_LIBRARY): %s", env,
				  dlerror());
			goto out;
		}
		strbuf_addstr(&path, env);
	} else if (under_root) {
		if (!have_snap) {
			h->avail = NVML_NO_LIBRARY;
			h->note = xstrdup("no NVML under --root (no nvml.snapshot there)");
			ret = 1;
			goto out;
		}
		if (find_fake_library(&path) < 0) {
			error_set(err, "'%s' needs %s, found neither next to vigil nor in '%s'",
				  snap.buf, FAKE_NVML_NAME, VIGIL_LIBDIR "/vigil");
			goto out;
		}
		/* The fake serves this file; the host's NVML must not answer for a fixture. */
		lib->dl = dlopen(path.buf, RTLD_NOW | RTLD_LOCAL);
		if (!lib->dl) {
			error_set(err, "cannot load '%s': %s", path.buf, dlerror());
			goto out;
		}
	} else {
		static const char *const names[] = { "libnvidia-ml.so.1", "libnvidia-ml.so" };
		for (size_t i = 0; i < ARRAY_SIZE(names) && !lib->dl; i++) {
			lib->dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
			if (!lib->dl) {
				const char *e = dlerror();
				if (!is_not_found(e)) {
					error_set(err, "cannot load '%s': %s", names[i], e);
					goto out;
				}
				continue;
			}
			strbuf_addstr(&path, names[i]);
		}
		if (!lib->dl) {
			h->avail = NVML_NO_LIBRARY;
			h->note = xstrdup("libnvidia-ml.so.1 not found (no NVIDIA driver installed)");
			ret = 1;
			goto out;
		}
	}
	if (under_root)
		fake_set_snapshot(lib->dl, have_snap ? snap.buf : NULL);
	h->library = xstrdup(path.buf);
	if (lib_resolve(lib, path.buf, err) < 0) {
		dlclose(lib->dl);
		lib->dl = NULL;
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&path);
	strbuf_release(&snap);
	return ret;
}

/* ---- readings ---- */

void nvml_gpu_clear(struct nvml_gpu *g, unsigned index)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
#define X(field, key) g->field.rc = NVML_ERROR_NOT_SUPPORTED;
	NVML_GPU_STRINGS(X)
#undef X
#define X(field, key, hex) g->field.rc = NVML_ERROR_NOT_SUPPORTED;
	NVML_GPU_VALUES(X)
	NVML_GPU_TELEMETRY(X)
#undef X
	for (size_t l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		g->nvlink[l].active.rc = NVML_ERROR_NOT_SUPPORTED;
		for (size_t c = 0; c < NVML_NVLINK_ERROR_COUNT; c++)
			g->nvlink[l].errors[c].rc = NVML_ERROR_NOT_SUPPORTED;
	}
}

void nvml_host_init(struct nvml_host *h)
{
	memset(h, 0, sizeof(*h));
	h->avail = NVML_AVAILABLE;
	h->driver_version.rc = NVML_ERROR_NOT_SUPPORTED;
	h->nvml_version.rc = NVML_ERROR_NOT_SUPPORTED;
	h->cuda_driver_version.rc = NVML_ERROR_NOT_SUPPORTED;
	h->count.rc = NVML_ERROR_NOT_SUPPORTED;
}

void nvml_host_release(struct nvml_host *h)
{
	free(h->gpus);
	free(h->library);
	free(h->note);
	nvml_host_init(h);
}

struct nvml_gpu *nvml_host_add_gpu(struct nvml_host *h, unsigned index)
{
	ALLOC_GROW(h->gpus, h->nr + 1, h->alloc);
	struct nvml_gpu *g = &h->gpus[h->nr++];
	nvml_gpu_clear(g, index);
	return g;
}

bool nvml_bus_id_to_bdf(const char *bus_id, char *out, size_t n)
{
	unsigned dom, bus, dev, fn;
	int used = 0;
	if (!bus_id || sscanf(bus_id, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &used) != 4 ||
	    bus_id[used] || bus > 0xff || dev > 0x1f || fn > 7)
		return false;
	if (dom > 0xffff)
		snprintf(out, n, "%08x:%02x:%02x.%x", dom, bus, dev, fn);
	else
		snprintf(out, n, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return true;
}

/* Call a getter of a string; NUL-terminate and keep it printable whatever the library did. */
static void get_str(struct nvml_str *s, nvmlReturn_t (*fn)(nvmlDevice_t, char *, unsigned),
		    nvmlDevice_t dev, unsigned size)
{
	memset(s->s, 0, sizeof(s->s));
	if (!fn) {
		s->rc = NVML_ERROR_FUNCTION_NOT_FOUND;
		return;
	}
	if (size > sizeof(s->s))
		size = sizeof(s->s);
	s->rc = fn(dev, s->s, size);
	s->s[sizeof(s->s) - 1] = '\0';
	if (s->rc) {
		s->s[0] = '\0';
		return;
	}
	for (char *p = s->s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

#define CALL_U(val, fn, ...)                                                                   \
	do {                                                                                   \
		unsigned u_ = 0;                                                               \
		(val).rc = (fn) ? (fn)(__VA_ARGS__, &u_) : NVML_ERROR_FUNCTION_NOT_FOUND;      \
		(val).v = (val).rc ? 0 : u_;                                                   \
	} while (0)
#define CALL_ULL(val, fn, ...)                                                                 \
	do {                                                                                   \
		unsigned long long u_ = 0;                                                     \
		(val).rc = (fn) ? (fn)(__VA_ARGS__, &u_) : NVML_ERROR_FUNCTION_NOT_FOUND;      \
		(val).v = (val).rc ? 0 : u_;                                                   \
	} while (0)

static void set_pair(struct nvml_val *a, struct nvml_val *b, int rc, uint64_t va, uint64_t vb)
{
	a->rc = b->rc = rc;
	a->v = rc ? 0 : va;
	b->v = rc ? 0 : vb;
}

static void read_pci(const struct nvml_lib *lib, nvmlDevice_t dev, struct nvml_gpu *g)
{
	nvmlPciInfo_t pci;
	memset(&pci, 0, sizeof(pci));
	int rc = lib->fn.pci_info ? lib->fn.pci_info(dev, &pci) : NVML_ERROR_FUNCTION_NOT_FOUND;
	g->pci_bus_id.rc = g->pci_device_id.rc = rc;
	if (rc)
		return;
	const char *id = pci.busIdLegacy;
	if (!lib->pci_v1) {
		pci.busId[sizeof(pci.busId) - 1] = '\0';
		if (pci.busId[0])
			id = pci.busId;
	}
	pci.busIdLegacy[sizeof(pci.busIdLegacy) - 1] = '\0';
	strlcpy_v(g->pci_bus_id.s, id, sizeof(g->pci_bus_id.s));
	g->pci_device_id.v = pci.pciDeviceId;
	if (!nvml_bus_id_to_bdf(g->pci_bus_id.s, g->bdf, sizeof(g->bdf)))
		g->bdf[0] = '\0';
}

/* One field of nvmlDeviceGetFieldValues into v (a double or an unknown type: not supported). */
static void read_field(const struct nvml_lib *lib, nvmlDevice_t dev, unsigned id,
		       struct nvml_val *v)
{
	nvmlFieldValue_t fv;
	memset(&fv, 0, sizeof(fv));
	fv.fieldId = id;
	int rc = lib->fn.field_values ? lib->fn.field_values(dev, 1, &fv)
				      : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (!rc)
		rc = fv.nvmlReturn;
	v->rc = rc;
	v->v = 0;
	if (rc)
		return;
	switch (fv.valueType) {
	case NVML_VALUE_TYPE_UNSIGNED_LONG:
		v->v = fv.value.ulVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
		v->v = fv.value.ullVal;
		break;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
		v->v = fv.value.sllVal < 0 ? 0 : (uint64_t)fv.value.sllVal;
		break;
	case NVML_VALUE_TYPE_SIGNED_INT:
		v->v = fv.value.siVal < 0 ? 0 : (uint64_t)fv.value.siVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_SHORT:
		v->v = fv.value.usVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_INT:
		v->v = fv.value.uiVal;
		break;
	default: /* a double or a type NVML added later: not something vigil can judge */
		v->rc = NVML_ERROR_NOT_SUPPORTED;
		break;
	}
}

static bool want_telemetry;

void nvml_want_telemetry(bool want)
{
	want_telemetry = want;
}

/* The NVML_GPU_TELEMETRY values: four calls a GPU, made only when asked for. */
static void read_telemetry(const struct nvml_lib *lib, nvmlDevice_t dev, struct nvml_gpu *g)
{
	const struct nvml_fns *f = &lib->fn;
	if (!want_telemetry) {
#define X(field, key, hex) g->field.rc = NVML_NOT_READ;
		NVML_GPU_TELEMETRY(X)
#undef X
		return;
	}
	read_field(lib, dev, NVML_FI_DEV_MEMORY_TEMP, &g->memory_temperature);
	CALL_U(g->mem_clock, f->clock, dev, NVML_CLOCK_MEM);
	nvmlUtilization_t u;
	memset(&u, 0, sizeof(u));
	g->utilization_gpu.rc = f->utilization ? f->utilization(dev, &u)
					       : NVML_ERROR_FUNCTION_NOT_FOUND;
	/* a percent above 100 is a library's mistake, not a reading */
	if (!g->utilization_gpu.rc && u.gpu > 100)
		g->utilization_gpu.rc = NVML_ERROR_UNKNOWN;
	g->utilization_gpu.v = g->utilization_gpu.rc ? 0 : u.gpu;
	nvmlMemory_t m;
	memset(&m, 0, sizeof(m));
	g->memory_used.rc = f->memory_info ? f->memory_info(dev, &m)
					   : NVML_ERROR_FUNCTION_NOT_FOUND;
	g->memory_used.v = g->memory_used.rc ? 0 : m.used;
}

static void read_nvlink(const struct nvml_lib *lib, nvmlDevice_t dev, struct nvml_gpu *g,
			bool skip_counters)
{
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		struct nvml_link *k = &g->nvlink[l];
		int st = 0;
		k->active.rc = lib->fn.nvlink_state ? lib->fn.nvlink_state(dev, l, &st)
						    : NVML_ERROR_FUNCTION_NOT_FOUND;
		k->active.v = k->active.rc ? 0 : st == NVML_FEATURE_ENABLED;
		for (int c = 0; c < NVML_NVLINK_ERROR_COUNT; c++) {
			/* No such link: its counters are not there either. */
			if (k->active.rc || skip_counters) {
				k->errors[c].rc = k->active.rc ? k->active.rc : NVML_NOT_READ;
				k->errors[c].v = 0;
				continue;
			}
			CALL_ULL(k->errors[c], lib->fn.nvlink_error, dev, l, c);
		}
	}
}

static bool any_lost(const struct nvml_gpu *g)
{
	bool lost = false;
#define X(field, key) lost |= g->field.rc == NVML_ERROR_GPU_IS_LOST;
	NVML_GPU_STRINGS(X)
#undef X
#define X(field, key, hex) lost |= g->field.rc == NVML_ERROR_GPU_IS_LOST;
	NVML_GPU_VALUES(X)
	NVML_GPU_TELEMETRY(X)
#undef X
	for (size_t l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		lost |= g->nvlink[l].active.rc == NVML_ERROR_GPU_IS_LOST;
		for (size_t c = 0; c < NVML_NVLINK_ERROR_COUNT; c++)
			lost |= g->nvlink[l].errors[c].rc == NVML_ERROR_GPU_IS_LOST;
	}
	return lost;
}

static void read_gpu(const struct nvml_lib *lib, unsigned index, struct nvml_gpu *g,
		     bool skip_link_counters)
{
	const struct nvml_fns *f = &lib->fn;
	nvmlDevice_t dev = NULL;
	g->handle_rc = f->handle(index, &dev);
	if (g->handle_rc) {
		g->lost = g->handle_rc == NVML_ERROR_GPU_IS_LOST;
		return;
	}
	get_str(&g->name, f->name, dev, NVML_DEVICE_NAME_V2_BUFFER_SIZE);
	get_str(&g->uuid, f->uuid, dev, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
	get_str(&g->serial, f->serial, dev, NVML_DEVICE_SERIAL_BUFFER_SIZE);
	get_str(&g->vbios, f->vbios, dev, NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE);
	read_pci(lib, dev, g);

	int cur = 0, pend = 0, rc;
	rc = f->persistence ? f->persistence(dev, &cur) : NVML_ERROR_FUNCTION_NOT_FOUND;
	g->persistence_mode.rc = rc;
	g->persistence_mode.v = rc ? 0 : cur == NVML_FEATURE_ENABLED;
	rc = f->ecc_mode ? f->ecc_mode(dev, &cur, &pend) : NVML_ERROR_FUNCTION_NOT_FOUND;
	set_pair(&g->ecc_current, &g->ecc_pending, rc, cur == NVML_FEATURE_ENABLED,
		 pend == NVML_FEATURE_ENABLED);
	CALL_ULL(g->ecc_volatile_corrected, f->total_ecc, dev, NVML_MEMORY_ERROR_TYPE_CORRECTED,
		 NVML_VOLATILE_ECC);
	CALL_ULL(g->ecc_volatile_uncorrected, f->total_ecc, dev,
		 NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC);
	CALL_ULL(g->ecc_aggregate_corrected, f->total_ecc, dev, NVML_MEMORY_ERROR_TYPE_CORRECTED,
		 NVML_AGGREGATE_ECC);
	CALL_ULL(g->ecc_aggregate_uncorrected, f->total_ecc, dev,
		 NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC);

	unsigned corr = 0, unc = 0, pending = 0, failure = 0;
	rc = f->remapped_rows ? f->remapped_rows(dev, &corr, &unc, &pending, &failure)
			      : NVML_ERROR_FUNCTION_NOT_FOUND;
	set_pair(&g->remap_correctable, &g->remap_uncorrectable, rc, corr, unc);
	set_pair(&g->remap_pending, &g->remap_failure, rc, pending != 0, failure != 0);

	CALL_ULL(g->clock_events, f->clock_events, dev);
	CALL_U(g->pcie_gen, f->pcie_gen, dev);
	CALL_U(g->pcie_gen_max, f->pcie_gen_max, dev);
	CALL_U(g->pcie_width, f->pcie_width, dev);
	CALL_U(g->pcie_width_max, f->pcie_width_max, dev);
	CALL_U(g->pcie_replay, f->pcie_replay, dev);
	CALL_U(g->temperature, f->temperature, dev, NVML_TEMPERATURE_GPU);
	CALL_U(g->power_usage, f->power_usage, dev);
	CALL_U(g->power_limit, f->power_limit, dev);
	CALL_U(g->sm_clock, f->clock, dev, NVML_CLOCK_SM);
	CALL_U(g->sm_clock_max, f->max_clock, dev, NVML_CLOCK_SM);
	read_field(lib, dev, NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, &g->recovery_action);
	read_telemetry(lib, dev, g);
	read_nvlink(lib, dev, g, skip_link_counters);
	g->lost = any_lost(g);
}

static void read_system(const struct nvml_lib *lib, struct nvml_host *h)
{
	const struct nvml_fns *f = &lib->fn;
	struct nvml_str *s[2] = { &h->driver_version, &h->nvml_version };
	nvmlReturn_t (*fns[2])(char *, unsigned) = { f->driver_version, f->nvml_version };
	for (size_t i = 0; i < 2; i++) {
		memset(s[i]->s, 0, sizeof(s[i]->s));
		s[i]->rc = fns[i] ? fns[i](s[i]->s, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)
				  : NVML_ERROR_FUNCTION_NOT_FOUND;
		s[i]->s[sizeof(s[i]->s) - 1] = '\0';
		if (s[i]->rc)
			s[i]->s[0] = '\0';
	}
	int cuda = 0;
	h->cuda_driver_version.rc = f->cuda_version ? f->cuda_version(&cuda)
						    : NVML_ERROR_FUNCTION_NOT_FOUND;
	h->cuda_driver_version.v = h->cuda_driver_version.rc || cuda < 0 ? 0 : (uint64_t)cuda;
}

/* The library kept loaded and initialised between reads (nvml_keep_open()). */
static struct {
	bool wanted, ready;
	struct nvml_lib lib;
	char *library;
} kept;

void nvml_keep_open(bool keep)
{
	kept.wanted = keep;
}

static struct {
	void (*fn)(const struct nvml_host *, void *);
	void *arg;
} read_hook;

void nvml_on_read(void (*fn)(const struct nvml_host *h, void *arg), void *arg)
{
	read_hook.fn = fn;
	read_hook.arg = arg;
}

int nvml_read_host(const struct fsroot *root, struct nvml_host *h, struct strbuf *err)
{
	struct nvml_lib lib;
	bool skip = h->skip_link_counters; /* a request, kept across the reset */
	nvml_host_release(h);
	h->skip_link_counters = skip;
	if (kept.ready) {
		lib = kept.lib;
		h->library = xstrdup(kept.library);
		goto read;
	}
	int r = lib_open(root, &lib, h, err);
	if (r)
		return r < 0 ? -1 : 0;
	int rc = lib.fn.init();
	if (rc) {
		h->avail = NVML_INIT_FAILED;
		h->init_rc = rc;
		goto out;
	}
	if (kept.wanted) {
		kept.lib = lib;
		kept.library = xstrdup(h->library ? h->library : "");
		kept.ready = true;
	}
read:
	read_system(&lib, h);
	unsigned count = 0;
	h->count.rc = lib.fn.count(&count);
	h->count.v = h->count.rc ? 0 : count;
	if (!h->count.rc) {
		if (count > NVML_MAX_GPUS)
			count = NVML_MAX_GPUS;
		for (unsigned i = 0; i < count; i++)
			read_gpu(&lib, i, nvml_host_add_gpu(h, i), h->skip_link_counters);
	}
	if (read_hook.fn)
		read_hook.fn(h, read_hook.arg);
	if (kept.ready)
		return 0;
	lib.fn.shutdown();
out:
	/* nvmlInit failed: no GPU was read, which the hook hears too */
	if (h->avail == NVML_INIT_FAILED && read_hook.fn)
		read_hook.fn(h, read_hook.arg);
	dlclose(lib.dl);
	return 0;
}

/* ---- Xid events ---- */

/* The event set, made once in the process that keeps NVML open. */
static struct {
	bool tried;
	int rc;
	nvmlEventSet_t set;
	double since;
	nvmlDevice_t dev[NVML_MAX_GPUS_WATCHED];
	struct nvml_xid_gpu gpus[NVML_MAX_GPUS_WATCHED];
	size_t nr;
} xw;

static double mono_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void xid_register(const struct nvml_lib *lib)
{
	const struct nvml_fns *f = &lib->fn;
	xw.tried = true;
	if (!f->event_set_create || !f->register_events || !f->event_wait) {
		xw.rc = NVML_ERROR_FUNCTION_NOT_FOUND;
		return;
	}
	unsigned count = 0;
	if ((xw.rc = f->count(&count)))
		return;
	if (count > NVML_MAX_GPUS_WATCHED)
		count = NVML_MAX_GPUS_WATCHED;
	if ((xw.rc = f->event_set_create(&xw.set)))
		return;
	/* since: before the first registration, so that nothing raised after it predates it */
	xw.since = mono_seconds();
	for (unsigned i = 0; i < count; i++) {
		struct nvml_xid_gpu *g = &xw.gpus[xw.nr];
		nvmlDevice_t dev = NULL;
		memset(g, 0, sizeof(*g));
		g->rc = f->handle(i, &dev);
		if (!g->rc) {
			struct nvml_gpu tmp;
			nvml_gpu_clear(&tmp, i);
			read_pci(lib, dev, &tmp);
			strlcpy_v(g->bdf, tmp.bdf, sizeof(g->bdf));
		}
		unsigned long long types = 0;
		/* A GPU or VM without Xid events says NVML_ERROR_NOT_SUPPORTED: it is not watched
		 * (the kernel log alone is judged there, as before). */
		if (!g->rc && f->supported_events && !(g->rc = f->supported_events(dev, &types)) &&
		    !(types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
			g->rc = NVML_ERROR_NOT_SUPPORTED;
		if (!g->rc)
			g->rc = f->register_events(dev, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, xw.set);
		/* an address is how a kernel line names the GPU: without one, nothing to match */
		if (!g->rc && !g->bdf[0])
			g->rc = NVML_ERROR_UNKNOWN;
		xw.dev[xw.nr++] = g->rc ? NULL : dev;
	}
}

static void xid_note(struct nvml_xid_drain *d, const char *bdf, unsigned xid)
{
	for (size_t i = 0; i < d->nr_ev; i++)
		if (d->ev[i].xid == xid && !strcmp(d->ev[i].bdf, bdf)) {
			d->ev[i].count++;
			return;
		}
	if (d->nr_ev == NVML_XID_DISTINCT_MAX) {
		d->dropped++;
		return;
	}
	struct nvml_xid_event *e = &d->ev[d->nr_ev++];
	strlcpy_v(e->bdf, bdf, sizeof(e->bdf));
	e->xid = xid;
	e->count = 1;
}

bool nvml_xid_ready(void)
{
	return kept.ready;
}

void nvml_xid_drain(struct nvml_xid_drain *d)
{
	memset(d, 0, sizeof(*d));
	if (!kept.ready) {
		d->rc = NVML_ERROR_UNINITIALIZED;
		return;
	}
	const struct nvml_fns *f = &kept.lib.fn;
	if (!xw.tried)
		xid_register(&kept.lib);
	d->rc = xw.rc;
	d->since = xw.since;
	d->nr_gpus = xw.nr;
	memcpy(d->gpus, xw.gpus, xw.nr * sizeof(xw.gpus[0]));
	if (d->rc)
		return;
	for (unsigned n = 0;; n++) {
		if (n == NVML_XID_WAITS_MAX) {
			d->flooded = true;
			break;
		}
		nvmlEventData_t ev;
		memset(&ev, 0, sizeof(ev));
		double before = mono_seconds();
		int rc = f->event_wait(xw.set, &ev, 0);
		if (rc == NVML_ERROR_TIMEOUT) {
			d->at = before;
			break;
		}
		if (rc) {
			d->wait_rc = rc;
			break;
		}
		size_t i = 0;
		while (i < xw.nr && (!xw.dev[i] || xw.dev[i] != ev.device))
			i++;
		if (i == xw.nr || !(ev.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR)) {
			d->foreign++;
			continue;
		}
		xid_note(d, xw.gpus[i].bdf,
			 ev.eventData > 0xffffffu ? 999u : (unsigned)ev.eventData);
	}
}
