/*
 * nvml.h: vigil's NVML shim. No nvml.h is needed to build: the subset of NVML that vigil uses is
 * declared here (types, constants and layouts checked against NVIDIA's nvml.h of CUDA 13.0), the
 * library is dlopen'ed at run time, and every symbol is resolved from one table in nvml.c with
 * required/optional flags and _v2/_v3 fallbacks.
 *
 * Which library: $VIGIL_NVML_LIBRARY if set; else, under a root (--root / VIGIL_ROOT), never the
 * host's NVML (it would mix two hosts): ROOT/nvml.snapshot is served by libvigil-fakenvml.so, found
 * next to the vigil executable or in $(LIBDIR)/vigil; else libnvidia-ml.so.1, then libnvidia-ml.so.
 * Under a root, a library that exports vigil_fake_nvml_set_snapshot() (the test library) is
 * called right after dlopen with ROOT/nvml.snapshot resolved inside the root (NULL: none).
 *
 * nvml_read_host() is the gather half of the 'gpu' check: it reads everything vigil judges into a
 * plain struct nvml_host, each value with the NVML return code of the call that produced it. A
 * missing optional symbol reads as NVML_ERROR_FUNCTION_NOT_FOUND ("not reported"), never a fault.
 *
 * Ownership: struct nvml_host owns its gpus array and strings; nvml_host_release() frees them.
 * Everything else in it is plain data, so tests build one by hand (nvml_host_add_gpu()).
 */
#ifndef VIGIL_GPU_NVML_H
#define VIGIL_GPU_NVML_H

#include <stddef.h>

#define NVML_MAX_GPUS_WATCHED 64 /* GPUs one event set registers (hosts have 8 or 16) */

#include "../lib/strbuf.h"
#include "../sys/fsroot.h"

/* nvmlReturn_t values (nvml.h). */
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_UNKNOWN = 999,
};

/* Enumerations passed to NVML (nvml.h values). */
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum {
	NVML_NVLINK_ERROR_DL_REPLAY = 0,
	NVML_NVLINK_ERROR_DL_RECOVERY = 1,
	NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
	NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
	NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
	NVML_NVLINK_ERROR_COUNT = 5,
};
enum {
	NVML_VALUE_TYPE_DOUBLE = 0,
	NVML_VALUE_TYPE_UNSIGNED_INT = 1,
	NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
	NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
	NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
	NVML_VALUE_TYPE_SIGNED_INT = 5,
	NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};

#define NVML_NVLINK_MAX_LINKS 18
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define NVML_FI_DEV_MEMORY_TEMP 82 /* HBM temperature, C (nvml.h "Memory temperatures") */

/* nvmlDeviceGetUtilizationRates' and nvmlDeviceGetMemoryInfo's (v1) structs, as in nvml.h. */
typedef struct nvmlUtilization_st {
	unsigned int gpu;    /* percent of the last sample period a kernel ran */
	unsigned int memory; /* percent of it the memory was read or written */
} nvmlUtilization_t;
typedef struct nvmlMemory_st {
	unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

/* Recovery actions (field 230, nvmlDeviceGpuRecoveryAction_t). */
enum {
	NVML_GPU_RECOVERY_ACTION_NONE = 0,
	NVML_GPU_RECOVERY_ACTION_GPU_RESET = 1,
	NVML_GPU_RECOVERY_ACTION_NODE_REBOOT = 2,
	NVML_GPU_RECOVERY_ACTION_DRAIN_P2P = 3,
	NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET = 4,
};

/* Clock event reasons (nvmlClocksEventReason*, formerly ...ThrottleReason*). */
#define NVML_CLOCKS_EVENT_GPU_IDLE 0x1ULL
#define NVML_CLOCKS_EVENT_APP_CLOCKS 0x2ULL
#define NVML_CLOCKS_EVENT_SW_POWER_CAP 0x4ULL
#define NVML_CLOCKS_EVENT_HW_SLOWDOWN 0x8ULL
#define NVML_CLOCKS_EVENT_SYNC_BOOST 0x10ULL
#define NVML_CLOCKS_EVENT_SW_THERMAL 0x20ULL
#define NVML_CLOCKS_EVENT_HW_THERMAL 0x40ULL
#define NVML_CLOCKS_EVENT_HW_POWER_BRAKE 0x80ULL
#define NVML_CLOCKS_EVENT_DISPLAY_CLOCK 0x100ULL

/* Buffer sizes NVML documents (the _V2 ones where there are two). */
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30
#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

/*
 * nvmlPciInfo_t as nvmlDeviceGetPciInfo_v2/_v3 fill it. The plain (v1) call fills a shorter struct
 * whose busId[16] sits where busIdLegacy is, so passing this larger struct to it is safe.
 */
typedef struct nvmlPciInfo_st {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;    /* device id << 16 | vendor id */
	unsigned int pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef union nvmlValue_st {
	double dVal;
	int siVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
	unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
	unsigned int fieldId;
	unsigned int scopeId;
	long long timestamp;
	long long latencyUsec;
	int valueType;      /* nvmlValueType_t */
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;

/*
 * These structs cross into NVML's own code: their layout is NVML's ABI (nvml.h, x86-64 and
 * aarch64 alike), so a wrong edit here must fail the build, not corrupt a reading.
 */
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t is 68 bytes in NVML's ABI");
_Static_assert(offsetof(nvmlPciInfo_t, domain) == 16, "nvmlPciInfo_t.domain at 16");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId at 36");
_Static_assert(sizeof(nvmlValue_t) == 8, "nvmlValue_t is 8 bytes");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes in NVML's ABI");
_Static_assert(offsetof(nvmlFieldValue_t, timestamp) == 8, "nvmlFieldValue_t.timestamp at 8");
_Static_assert(offsetof(nvmlFieldValue_t, nvmlReturn) == 28, "nvmlFieldValue_t.nvmlReturn at 28");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t.value at 32");

/*
 * NVML's events (nvml.h): an event set, the devices registered on it, and what a wait returns.
 * nvmlEventSetWait_v2 fills all of nvmlEventData_t; the older nvmlEventSetWait the first 24
 * bytes (no gpuInstanceId/computeInstanceId), so the larger struct is safe for both.
 */
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlEventData_st {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;  /* the Xid for nvmlEventTypeXidCriticalError (999: unknown) */
	unsigned int gpuInstanceId;    /* 0xFFFFFFFF when not attributable to a MIG instance */
	unsigned int computeInstanceId;
} nvmlEventData_t;
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL /* nvmlEventTypeXidCriticalError */
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t is 32 bytes in NVML's ABI");
_Static_assert(offsetof(nvmlEventData_t, eventData) == 16, "nvmlEventData_t.eventData at 16");
_Static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24, "gpuInstanceId at 24");

/* "GPU is lost", "Not Supported", ... (NVML's own words); "error N" for codes vigil does not know. */
const char *nvml_error_name(int rc);

/*
 * The per-GPU readings with their snapshot keys (docs/nvml-snapshot.md), in snapshot order. One
 * list, so the snapshot writer, the fake's tests and nvml_gpu_clear() cannot drift apart.
 *   X(field, "key", hex)   -- hex: written as 0x... in snapshots
 */
#define NVML_GPU_STRINGS(X)                                                                    \
	X(name, "name")                                                                        \
	X(uuid, "uuid")                                                                        \
	X(serial, "serial")                                                                    \
	X(pci_bus_id, "pci_bus_id")                                                            \
	X(vbios, "vbios_version")
#define NVML_GPU_VALUES(X)                                                                     \
	X(pci_device_id, "pci_device_id", true)                                                \
	X(persistence_mode, "persistence_mode", false)                                         \
	X(ecc_current, "ecc_mode_current", false)                                              \
	X(ecc_pending, "ecc_mode_pending", false)                                              \
	X(ecc_volatile_corrected, "ecc_volatile_corrected", false)                             \
	X(ecc_volatile_uncorrected, "ecc_volatile_uncorrected", false)                         \
	X(ecc_aggregate_corrected, "ecc_aggregate_corrected", false)                           \
	X(ecc_aggregate_uncorrected, "ecc_aggregate_uncorrected", false)                       \
	X(remap_correctable, "remapped_rows_correctable", false)                               \
	X(remap_uncorrectable, "remapped_rows_uncorrectable", false)                           \
	X(remap_pending, "remapped_rows_pending", false)                                       \
	X(remap_failure, "remapped_rows_failure", false)                                       \
	X(clock_events, "clocks_event_reasons", true)                                          \
	X(pcie_gen, "pcie_gen_current", false)                                                 \
	X(pcie_gen_max, "pcie_gen_max", false)                                                 \
	X(pcie_width, "pcie_width_current", false)                                             \
	X(pcie_width_max, "pcie_width_max", false)                                             \
	X(pcie_replay, "pcie_replay_counter", false)                                           \
	X(temperature, "temperature_gpu", false)                                               \
	X(power_usage, "power_usage_mw", false)                                                \
	X(power_limit, "power_limit_mw", false)                                                \
	X(sm_clock, "sm_clock_mhz", false)                                                     \
	X(sm_clock_max, "sm_clock_max_mhz", false)                                             \
	X(recovery_action, "recovery_action", false)
/*
 * Readings only the agent's telemetry (docs/telemetry.md) and 'vigil gather' ask for
 * (nvml_want_telemetry()): no verdict rests on them. A snapshot leaves them out where they are
 * not supported or were not read, so older snapshots read back unchanged.
 */
#define NVML_GPU_TELEMETRY(X)                                                                  \
	X(memory_temperature, "temperature_memory", false)                                     \
	X(mem_clock, "mem_clock_mhz", false)                                                   \
	X(utilization_gpu, "utilization_gpu", false)                                           \
	X(memory_used, "memory_used_bytes", false)
/* NVLink counters by NVML_NVLINK_ERROR_DL_* index, as "nvlink N active=1 replay=0 ..." words. */
extern const char *const nvml_nvlink_counter_keys[NVML_NVLINK_ERROR_COUNT];

/* ---- readings ---- */

/* One reading: v is valid only when rc is NVML_SUCCESS; otherwise rc is the NVML error. */
struct nvml_val {
	uint64_t v;
	int rc;
};

#define NVML_STR_MAX 96
struct nvml_str {
	char s[NVML_STR_MAX];
	int rc;
};

struct nvml_link {
	struct nvml_val active; /* nvmlDeviceGetNvLinkState: 1 active, 0 inactive */
	struct nvml_val errors[NVML_NVLINK_ERROR_COUNT]; /* by NVML_NVLINK_ERROR_DL_* */
};

struct nvml_gpu {
	unsigned index;
	int handle_rc;   /* nvmlDeviceGetHandleByIndex; nothing else is read when it failed */
	bool lost;       /* a call said NVML_ERROR_GPU_IS_LOST */
	char bdf[32];    /* the PCI address as sysfs writes it, "0000:1b:00.0"; "" if unknown */
	struct nvml_str name, uuid, serial, vbios;
	struct nvml_str pci_bus_id;         /* as NVML says it: "00000000:1B:00.0" */
	struct nvml_val pci_device_id;      /* 0x233510de */
	struct nvml_val persistence_mode;
	struct nvml_val ecc_current, ecc_pending;     /* NVML_FEATURE_* */
	struct nvml_val ecc_volatile_corrected, ecc_volatile_uncorrected;
	struct nvml_val ecc_aggregate_corrected, ecc_aggregate_uncorrected;
	struct nvml_val remap_correctable, remap_uncorrectable, remap_pending, remap_failure;
	struct nvml_val clock_events;       /* NVML_CLOCKS_EVENT_* bits */
	struct nvml_val pcie_gen, pcie_gen_max, pcie_width, pcie_width_max, pcie_replay;
	struct nvml_val temperature;        /* C */
	struct nvml_val power_usage, power_limit; /* mW (enforced limit) */
	struct nvml_val sm_clock, sm_clock_max;   /* MHz */
	struct nvml_val recovery_action;    /* field 230 */
	/* NVML_GPU_TELEMETRY: NVML_NOT_READ unless asked for (nvml_want_telemetry()) */
	struct nvml_val memory_temperature; /* C, field 82 */
	struct nvml_val mem_clock;          /* MHz, nvmlDeviceGetClockInfo(NVML_CLOCK_MEM) */
	struct nvml_val utilization_gpu;    /* percent, nvmlDeviceGetUtilizationRates */
	struct nvml_val memory_used;        /* bytes, nvmlDeviceGetMemoryInfo */
	struct nvml_link nvlink[NVML_NVLINK_MAX_LINKS];
};

enum nvml_avail {
	NVML_AVAILABLE,    /* loaded and initialised: the readings are there */
	NVML_NO_LIBRARY,   /* no libnvidia-ml on this host (or no nvml.snapshot under the root) */
	NVML_INIT_FAILED,  /* nvmlInit said init_rc (NVML_ERROR_DRIVER_NOT_LOADED: no driver) */
};

struct nvml_host {
	enum nvml_avail avail;
	int init_rc;
	char *library;   /* what was loaded, or NULL */
	char *note;      /* why NVML is not available, or NULL */
	struct nvml_str driver_version, nvml_version;
	struct nvml_val cuda_driver_version; /* 13000 for CUDA 13.0 */
	struct nvml_val count;               /* nvmlDeviceGetCount */
	struct nvml_gpu *gpus;
	size_t nr, alloc;
	/*
	 * Set before nvml_read_host(): leave the NVLink error counters unread (their rc becomes
	 * NVML_NOT_READ). On an H200 they cost ~0.9 ms of CPU a call, 72 calls a GPU (bench/nvml_cost),
	 * most of a check's time; link state stays cheap and is always read.
	 */
	bool skip_link_counters;
};

/* rc of a value vigil chose not to read this time (not an NVML code). */
#define NVML_NOT_READ (-1)

void nvml_host_init(struct nvml_host *h);
void nvml_host_release(struct nvml_host *h);
/* Append a GPU with every value "not supported" (tests and the reader fill it in). */
struct nvml_gpu *nvml_host_add_gpu(struct nvml_host *h, unsigned index);
/* Reset every reading of g to "not supported". */
void nvml_gpu_clear(struct nvml_gpu *g, unsigned index);

/*
 * Load NVML, read the host (root: fsroot_host, or a fixture root whose nvml.snapshot the test
 * library serves) into h, shut NVML down again. Returns 0 with h->avail saying whether NVML was
 * there at all, or -1 with *err when a library that was asked for (VIGIL_NVML_LIBRARY, or the
 * fake library under a root) cannot be loaded or lacks a required symbol.
 */
int nvml_read_host(const struct fsroot *root, struct nvml_host *h, struct strbuf *err);
/*
 * keep: from the next nvml_read_host() that initialises NVML on, leave it loaded and initialised
 * for the reads after it (NVML's start and stop cost ~20 ms of CPU on an H200 host, its first
 * round of queries ~16 ms more: the agent's gpu worker process pays them once). For a process
 * that exists to read NVML again and again; the process's exit releases it.
 */
void nvml_keep_open(bool keep);

/*
 * want: from the next nvml_read_host() on, also read the NVML_GPU_TELEMETRY values (four more
 * calls a GPU); otherwise they read as NVML_NOT_READ. For the agent's gpu worker with telemetry
 * on, and for 'vigil gather' (its snapshots carry them). Process-wide, like nvml_keep_open().
 */
void nvml_want_telemetry(bool want);
/*
 * fn (NULL: none) is called at the end of every nvml_read_host() that read the GPUs, with what
 * was read, before it returns: the agent's gpu worker takes its telemetry from the gpu check's
 * own read this way, with no NVML call of its own. h is borrowed for the call only.
 */
void nvml_on_read(void (*fn)(const struct nvml_host *h, void *arg), void *arg);

/*
 * ---- the driver's own Xid events (the agent's gpu worker) ----
 *
 * A second source of Xids that no user can write to: the kernel log echoes text a user chose
 * (docs/SECURITY.md), NVML's Xid event comes from the driver. nvml_xid_drain() works only in a process
 * that keeps NVML open (nvml_keep_open(), after a first nvml_read_host() that initialised it):
 * its first call creates one event set and registers every GPU that supports
 * nvmlEventTypeXidCriticalError on it (since = that moment); each call then takes what the
 * driver queued, with a zero timeout (never waits for an event: the worker's cycle is not
 * stalled), until NVML says NVML_ERROR_TIMEOUT (nothing more). at is the moment just before that
 * last, empty wait: every Xid the driver raised before at on a watched GPU is in this drain or
 * an earlier one. Times are CLOCK_MONOTONIC seconds, the clock /dev/kmsg stamps its records
 * with, so a kernel line and a watch compare without the wall clock (which may jump).
 */
#define NVML_XID_DISTINCT_MAX 64   /* distinct (GPU, Xid) pairs a drain keeps; the rest counted */
#define NVML_XID_WAITS_MAX 100000  /* events one drain takes; a flood beyond is left for the next */

struct nvml_xid_gpu {
	char bdf[32]; /* "" when NVML did not say the address */
	int rc;       /* 0: registered (watched); else why not (NVML_ERROR_NOT_SUPPORTED: no events) */
};
struct nvml_xid_event {
	char bdf[32];  /* of the registered device it came for */
	unsigned xid;  /* 999: NVML did not know it */
	uint64_t count;
};
struct nvml_xid_drain {
	int rc;              /* 0, or why there is no watch at all (no event API, NVML not open) */
	int wait_rc;         /* 0 (drained to the end), or the error a wait said: the drain is not
			      * complete, at is not a moment up to which everything was seen */
	double since, at;    /* CLOCK_MONOTONIC seconds */
	struct nvml_xid_gpu gpus[NVML_MAX_GPUS_WATCHED];
	size_t nr_gpus;
	struct nvml_xid_event ev[NVML_XID_DISTINCT_MAX];
	size_t nr_ev;
	uint64_t dropped;    /* events beyond NVML_XID_DISTINCT_MAX distinct pairs */
	uint64_t foreign;    /* events for a device not registered, or not an Xid */
	bool flooded;        /* stopped at NVML_XID_WAITS_MAX: not drained to the end */
};
/* Fill d (zeroed here) with what NVML queued since the last call. */
void nvml_xid_drain(struct nvml_xid_drain *d);
/* Whether NVML is kept open in this process (a drain can be taken). */
bool nvml_xid_ready(void);

/* "00000000:1B:00.0" -> "0000:1b:00.0" (sysfs spelling); false if it does not parse. */
bool nvml_bus_id_to_bdf(const char *bus_id, char *out, size_t n);

#endif
