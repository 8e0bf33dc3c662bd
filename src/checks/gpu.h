/*
 * gpu.h: the 'gpu' check: NVML's view of every GPU (count, lost GPUs, ECC, row remapping,
 * recovery action, clock event reasons, PCIe link, NVLink, versions), compared with the NVIDIA
 * GPUs on the PCI bus.
 *
 * gpu_gather() is the only part that touches the host (NVML through src/gpu/nvml.h, sysfs through
 * fsroot); gpu_evaluate() is pure. Configuration (section [gpu]):
 *   count = 8                      GPUs this host must have (default: what Slurm's configuration
 *                                  gives the node, gpu_expect.h; else what NVML and the bus show)
 *   nvlink-links = 18              active NVLinks each GPU must have (default: any link that
 *                                  reports a state must be active, when NVLink is in use at all)
 *   nvlink-error-threshold = 100   an NVLink error counter (replay, recovery, CRC flit, CRC
 *                                  data) that rose by more than this since the last run warns;
 *                                  with no last run (no state directory, first run), its value
 *                                  since the driver loaded is judged
 *   remapped-rows-max = 512        more rows remapped for uncorrectable errors fail (Azure's limit)
 *   remap-pending = drain          a GPU with a row remap pending fails (RESET_GPU), so that
 *                                  --slurm drains the node until the reset applies it; warn:
 *                                  it only warns and the node stays in service (docs/SLURM.md)
 *   driver-version = 580.159.04    accepted driver versions (repeat the key, or separate with
 *   vbios-version = 96.00.A5.00.1A commas; shell wildcards allowed); unset: any
 *
 * Ownership: gpu_readings and gpu_policy own what they hold; the _release() functions free it.
 */
#ifndef VIGIL_CHECK_GPU_H
#define VIGIL_CHECK_GPU_H

#include "check.h"
#include "gpu_expect.h"
#include "../gpu/nvml.h"
#include "../lib/strlist.h"

#define GPU_STATE_FILE "gpu-nvlink.state"

/* One NVLink error counter as the last run read it (from the state file). */
struct gpu_prev {
	char gpu[NVML_STR_MAX]; /* the GPU's UUID (its PCI address, or "gpuN", without one) */
	unsigned link;
	unsigned counter;       /* NVML_NVLINK_ERROR_DL_* */
	uint64_t value;
};

struct gpu_readings {
	struct nvml_host nvml;
	int bus_rc;              /* 0: bus_gpus was read; READ_MISSING or -1: the bus is unknown */
	struct strlist bus_gpus; /* BDFs of NVIDIA GPUs (class 0x0300/0x0302) in sysfs, sorted */
	/* Devices whose vendor or class cannot be read (each may be a GPU): their BDFs, and why
	 * (the same index), each judged unknown. */
	struct strlist bus_unknown, bus_unknown_why;
	bool bus_restricted;     /* in a container that sees only some GPUs: do not compare */
	bool state_dir;          /* a state directory was given */
	bool have_state;         /* ...and it held the last run's NVLink counters */
	double state_age_s;      /* seconds since those counters were read (have_state) */
	char state_error[256];   /* why the state file was not usable ("" when it was or is absent) */
	bool counters_skipped;   /* NVLink error counters left unread this run (too recent) */
	struct gpu_prev *prev;
	size_t nr_prev, alloc_prev;
	struct gpu_expect expect; /* Slurm's count for this node (read only without gpu.count) */
	/* Set before gathering (`vigil check`): ask the agent at agent->agent_socket for the NVML
	 * reading first (gpu_agent.h). source says where it came from: "agent" or "nvml";
	 * agent_why why the agent's was not used ("" when it was, or was not asked). */
	const struct check_ctx *agent;
	const char *source;
	char agent_why[640];
};

struct gpu_policy {
	bool count_set;
	uint64_t count;
	uint64_t nvlink_links; /* 0: not configured */
	uint64_t nvlink_error_threshold;
	uint64_t nvlink_counter_interval; /* seconds between reads of the NVLink error counters */
	uint64_t remapped_rows_max;
	bool remap_pending_warn; /* gpu.remap-pending = warn (default drain) */
	struct strlist driver_versions, vbios_versions; /* empty: any */
};

void gpu_readings_init(struct gpu_readings *r);
void gpu_readings_release(struct gpu_readings *r);
/*
 * Read NVML and the PCI bus of root (fsroot_host, or a fixture) and the last run's NVLink
 * counters (state_dir may be NULL). -1 with *err
 * only when NVML was asked for and cannot be loaded.
 */
int gpu_gather(const struct fsroot *root, struct gpu_readings *r, const char *state_dir,
	       struct strbuf *err);
/* The same, reading the NVLink error counters only when the last reading (the state file) is at
 * least counter_interval_s old: they matter as a rise over minutes and are most of the cost. */
int gpu_gather_every(const struct fsroot *root, struct gpu_readings *r, const char *state_dir,
		     double counter_interval_s, struct strbuf *err);
/* The state file (statefile.h, kind "gpu-nvlink", names "GPU LINK COUNTER"): parse its text into
 * r->prev (nothing when it is not such a file) / format from r->nvml. */
void gpu_state_apply(struct gpu_readings *r, const char *text);
void gpu_state_format(const struct gpu_readings *r, struct strbuf *out);

void gpu_policy_init(struct gpu_policy *p);
void gpu_policy_release(struct gpu_policy *p);
/* Fill p from the [gpu] section; -1 with *err on a bad value. */
int gpu_policy_load(struct gpu_policy *p, const struct config *cfg, struct strbuf *err);

/* Findings for readings r under policy p. -1 with *err when NVML could not tell at all. */
int gpu_evaluate(const struct gpu_readings *r, const struct gpu_policy *p,
		 struct check_result *res, struct strbuf *err);

int check_gpu_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
