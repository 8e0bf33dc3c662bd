/*
 * gpu.c: the 'gpu' check (see gpu.h). NVML readings in, findings out; what each rule means and
 * why is said where the rule is.
 */
#include "gpu.h"
#include "gpu_agent.h"

#include <sys/stat.h>
#include "../sys/fsroot.h"
#include "../sys/pci.h"
#include "../lib/statefile.h"

#include <fnmatch.h>
#include <stdarg.h>


/* ---- gather ---- */

void gpu_readings_init(struct gpu_readings *r)
{
	memset(r, 0, sizeof(*r));
	nvml_host_init(&r->nvml);
	r->bus_rc = READ_MISSING;
}

void gpu_readings_release(struct gpu_readings *r)
{
	nvml_host_release(&r->nvml);
	strlist_release(&r->bus_gpus);
	strlist_release(&r->bus_unknown);
	strlist_release(&r->bus_unknown_why);
	free(r->prev);
	gpu_readings_init(r);
}

/* What names a GPU across runs: its UUID, else its PCI address, else its index. */
static void gpu_key(const struct nvml_gpu *g, char *buf, size_t n)
{
	if (!g->uuid.rc && g->uuid.s[0] && !strchr(g->uuid.s, ' '))
		snprintf(buf, n, "%s", g->uuid.s);
	else if (g->bdf[0])
		snprintf(buf, n, "%s", g->bdf);
	else
		snprintf(buf, n, "gpu%u", g->index);
}

#define GPU_STATE_KIND "gpu-nvlink"

/* Names in the state file: "KEY LINK COUNTER" (statefile.h). */
static void apply_set(struct gpu_readings *r, const struct counter_set *set)
{
	for (size_t i = 0; i < set->nr; i++) {
		struct strlist w = STRLIST_INIT;
		uint64_t link;
		strlist_split(&w, set->items[i].name, " ");
		if (w.nr == 3 && parse_u64(w.items[1], &link) && link < NVML_NVLINK_MAX_LINKS) {
			for (unsigned c = 0; c < NVML_NVLINK_ERROR_COUNT; c++) {
				if (strcmp(w.items[2], nvml_nvlink_counter_keys[c]))
					continue;
				ALLOC_GROW(r->prev, r->nr_prev + 1, r->alloc_prev);
				struct gpu_prev *p = &r->prev[r->nr_prev++];
				strlcpy_v(p->gpu, w.items[0], sizeof(p->gpu));
				p->link = (unsigned)link;
				p->counter = c;
				p->value = set->items[i].value;
			}
		}
		strlist_release(&w);
	}
}

static void readings_set(const struct gpu_readings *r, struct counter_set *set)
{
	char key[NVML_STR_MAX];
	struct strbuf name = STRBUF_INIT;
	for (size_t i = 0; i < r->nvml.nr; i++) {
		const struct nvml_gpu *g = &r->nvml.gpus[i];
		gpu_key(g, key, sizeof(key));
		for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
			for (unsigned c = 0; c < NVML_NVLINK_ERROR_COUNT; c++)
				if (!g->nvlink[l].errors[c].rc) {
					strbuf_reset(&name);
					strbuf_addf(&name, "%s %u %s", key, l,
						    nvml_nvlink_counter_keys[c]);
					counter_set_add(set, name.buf, g->nvlink[l].errors[c].v);
				}
	}
	strbuf_release(&name);
}

void gpu_state_apply(struct gpu_readings *r, const char *text)
{
	struct counter_set set = COUNTER_SET_INIT;
	if (statefile_parse(GPU_STATE_KIND, text, strlen(text), &set, NULL) == 0)
		apply_set(r, &set);
	counter_set_release(&set);
}

void gpu_state_format(const struct gpu_readings *r, struct strbuf *out)
{
	struct counter_set set = COUNTER_SET_INIT;
	readings_set(r, &set);
	statefile_format(GPU_STATE_KIND, &set, out);
	counter_set_release(&set);
}

/*
 * NVIDIA display (0x0300) and 3D (0x0302) controllers through the one PCI walk (NVSwitches, 0x0680,
 * are not GPUs). A device whose vendor or class cannot be read may be a GPU: kept apart, and
 * judged unknown by name rather than silently left out of the count.
 */
static void gather_bus(const struct fsroot *root, struct gpu_readings *r)
{
	struct pci_dev *devs = NULL;
	size_t nr = 0, alloc = 0;
	r->bus_rc = pci_find(root, PCI_MASK(PCI_KIND_GPU), false, &devs, &nr, &alloc, NULL);
	for (size_t i = 0; r->bus_rc == 0 && i < nr; i++) {
		if (devs[i].id_error[0]) {
			strlist_add(&r->bus_unknown, devs[i].bdf);
			strlist_add(&r->bus_unknown_why, devs[i].id_error);
		} else {
			strlist_add(&r->bus_gpus, devs[i].bdf);
		}
	}
	free(devs);
	/*
	 * The NVIDIA container runtime shows a container every GPU in sysfs but only its own GPUs to
	 * NVML: the bus then says nothing about missing GPUs.
	 */
	const char *vis = getenv("NVIDIA_VISIBLE_DEVICES");
	r->bus_restricted = fsroot_is_host(root) && vis && *vis && strcmp(vis, "all");
}

int gpu_gather_every(const struct fsroot *root, struct gpu_readings *r, const char *state_dir,
		     double counter_interval_s, struct strbuf *err)
{
	gather_bus(root, r);
	if (state_dir) {
		struct strbuf path = STRBUF_INIT, why = STRBUF_INIT;
		struct counter_set set = COUNTER_SET_INIT;
		double mtime = 0;
		r->state_dir = true;
		strbuf_addf(&path, "%s/%s", state_dir, GPU_STATE_FILE);
		int sr = statefile_load(path.buf, GPU_STATE_KIND, &set, &mtime, &why);
		if (sr == STATEFILE_LOADED) {
			r->have_state = true;
			apply_set(r, &set);
			r->state_age_s = wall_seconds() - mtime;
		} else if (sr == STATEFILE_UNUSABLE) {
			strlcpy_v(r->state_error, why.buf, sizeof(r->state_error));
		}
		counter_set_release(&set);
		strbuf_release(&path);
		strbuf_release(&why);
	}
	/* A clock set back makes the age negative: read then, rather than never. */
	r->counters_skipped = r->have_state && r->nr_prev && counter_interval_s > 0 &&
			      r->state_age_s >= 0 && r->state_age_s < counter_interval_s;
	r->nvml.skip_link_counters = r->counters_skipped;
	if (r->agent) {
		struct strbuf why = STRBUF_INIT;
		int ar = gpu_agent_reading(r->agent, r->counters_skipped, &r->nvml, &why);
		if (ar == 0) {
			r->source = "agent";
			strbuf_release(&why);
			return 0;
		}
		struct strbuf clean = STRBUF_INIT;
		strbuf_add_excerpt(&clean, why.buf, 150); /* escapes at most 4x: fits whole */
		strlcpy_v(r->agent_why, clean.buf, sizeof(r->agent_why));
		strbuf_release(&clean);
		strbuf_release(&why);
		nvml_host_init(&r->nvml);
		r->nvml.skip_link_counters = r->counters_skipped;
	}
	r->source = "nvml";
	return nvml_read_host(root, &r->nvml, err);
}

int gpu_gather(const struct fsroot *root, struct gpu_readings *r, const char *state_dir,
	       struct strbuf *err)
{
	return gpu_gather_every(root, r, state_dir, 0, err);
}

/* ---- policy ---- */

void gpu_policy_init(struct gpu_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->nvlink_error_threshold = 100;
	p->nvlink_counter_interval = 300;
	p->remapped_rows_max = 512;
}

void gpu_policy_release(struct gpu_policy *p)
{
	strlist_release(&p->driver_versions);
	strlist_release(&p->vbios_versions);
	gpu_policy_init(p);
}

static void load_list(struct strlist *l, const struct config *cfg, const char *key)
{
	const char **vals = NULL;
	size_t n = config_get_all(cfg, "gpu", key, &vals);
	for (size_t i = 0; i < n; i++)
		strlist_split(l, vals[i], ", \t");
	free(vals);
}

int gpu_policy_load(struct gpu_policy *p, const struct config *cfg, struct strbuf *err)
{
	p->count_set = config_get(cfg, "gpu", "count") != NULL;
	if (config_get_u64(cfg, "gpu", "count", 0, &p->count, err) < 0 ||
	    config_get_u64(cfg, "gpu", "nvlink-links", 0, &p->nvlink_links, err) < 0 ||
	    config_get_u64(cfg, "gpu", "nvlink-error-threshold", p->nvlink_error_threshold,
			   &p->nvlink_error_threshold, err) < 0 ||
	    config_get_u64(cfg, "gpu", "nvlink-counter-interval", p->nvlink_counter_interval,
			   &p->nvlink_counter_interval, err) < 0 ||
	    config_get_u64(cfg, "gpu", "remapped-rows-max", p->remapped_rows_max,
			   &p->remapped_rows_max, err) < 0)
		return -1;
	if (p->nvlink_links > NVML_NVLINK_MAX_LINKS)
		return error_set(err, "gpu.nvlink-links is %llu, at most %d",
				 (unsigned long long)p->nvlink_links, NVML_NVLINK_MAX_LINKS);
	const char *rp = config_get(cfg, "gpu", "remap-pending");
	if (rp && strcmp(rp, "drain") && strcmp(rp, "warn"))
		return error_set(err, "%s: gpu.remap-pending wants 'drain' or 'warn', not '%s'",
				 config_origin(cfg, "gpu", "remap-pending"), rp);
	p->remap_pending_warn = rp && !strcmp(rp, "warn");
	load_list(&p->driver_versions, cfg, "driver-version");
	load_list(&p->vbios_versions, cfg, "vbios-version");
	return 0;
}

static bool version_allowed(const struct strlist *l, const char *v)
{
	for (size_t i = 0; i < l->nr; i++)
		if (!fnmatch(l->items[i], v, 0))
			return true;
	return !l->nr;
}

static void join_list(struct strbuf *sb, const struct strlist *l)
{
	for (size_t i = 0; i < l->nr; i++)
		strbuf_addf(sb, "%s%s", i ? ", " : "", l->items[i]);
}

/* ---- evaluate ---- */

/* What an NVML error on a value means for the check: nothing, or "could not tell". */
static bool rc_benign(int rc)
{
	return rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_SUPPORTED ||
	       rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_GPU_IS_LOST ||
	       rc == NVML_ERROR_RESET_REQUIRED;
}

/* A finding's device and the start of its text: the bus id is what a ticket names the slot by. */
static void device_name(unsigned index, const char *bus, char *buf, size_t n)
{
	if (bus[0])
		snprintf(buf, n, "GPU %u (%s)", index, bus);
	else
		snprintf(buf, n, "GPU %u", index);
}

static bool ok(const struct nvml_val *v)
{
	return v->rc == NVML_SUCCESS;
}

struct gpu_eval {
	const struct gpu_readings *r;
	const struct gpu_policy *p;
	struct check_result *res;
	bool nvlink_in_use; /* some GPU of this host has an active NVLink */
	char dev[64];
	const struct nvml_gpu *g; /* the GPU judged now */
	char bus[32];             /* its PCI address (g->bdf, or found on the bus); "" unknown */
	bool bus_inferred;        /* bus came from the PCI bus, not from NVML */
	size_t problems;          /* findings other than ok for this GPU */
};

/*
 * Every finding on a GPU names the part fully, where known: index, PCI bus id, UUID and
 * serial (a ticket for a replacement needs the serial; a lost GPU has none of NVML's).
 */
static void gpu_identity(struct finding *f, const struct gpu_eval *e)
{
	const struct nvml_gpu *g = e->g;
	finding_detail_num(f, "index", g->index);
	if (e->bus[0])
		finding_detail(f, "pci_bus_id", "%s", e->bus);
	if (e->bus_inferred)
		finding_detail(f, "pci_bus_id_from", "the one NVIDIA GPU on the PCI bus that NVML "
						     "did not name");
	if (!g->uuid.rc && g->uuid.s[0])
		finding_detail(f, "uuid", "%s", g->uuid.s);
	if (!g->serial.rc && g->serial.s[0])
		finding_detail(f, "serial", "%s", g->serial.s);
}

/*
 * A GPU NVML cannot open (lost, no handle) has no address from NVML. When it is the only one
 * without an address and the bus shows exactly one NVIDIA GPU that no other GPU claims, that
 * one is it: by elimination, never by guessing from the index order.
 */
static void bus_of_unnamed(const struct gpu_readings *r, const struct nvml_gpu *g, char *bus,
			   size_t n, bool *inferred)
{
	const struct nvml_host *h = &r->nvml;
	const char *left = NULL;
	*inferred = false;
	if (g->bdf[0]) {
		snprintf(bus, n, "%s", g->bdf);
		return;
	}
	bus[0] = '\0';
	if (r->bus_rc != 0)
		return;
	for (size_t i = 0; i < h->nr; i++)
		if (&h->gpus[i] != g && !h->gpus[i].bdf[0])
			return; /* two without an address: which is which cannot be told */
	for (size_t i = 0; i < r->bus_gpus.nr; i++) {
		bool claimed = false;
		for (size_t k = 0; k < h->nr && !claimed; k++)
			claimed = !strcmp(h->gpus[k].bdf, r->bus_gpus.items[i]);
		if (claimed)
			continue;
		if (left)
			return;
		left = r->bus_gpus.items[i];
	}
	if (left && strlen(left) < n) {
		snprintf(bus, n, "%s", left);
		*inferred = true;
	}
}

static struct finding *problem(struct gpu_eval *e, enum status st, enum action act,
			       const char *code, const char *fmt, ...) PRINTF_LIKE(5, 6);
static struct finding *problem(struct gpu_eval *e, enum status st, enum action act,
			       const char *code, const char *fmt, ...)
{
	struct strbuf msg = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	struct finding *f = result_add(e->res, st, act, code, e->dev, "%s", msg.buf);
	strbuf_release(&msg);
	gpu_identity(f, e);
	e->problems++;
	return f;
}

static void eval_handle(struct gpu_eval *e, const struct nvml_gpu *g)
{
	int rc = g->handle_rc;
	const char *why = nvml_error_name(rc);
	struct finding *f;
	switch (rc) {
	case NVML_ERROR_GPU_IS_LOST:
		f = problem(e, STATUS_FAIL, ACTION_REBOOT, "lost",
			    "%s has fallen off the bus (NVML: GPU is lost)", e->dev);
		f->severity = SEV_CRITICAL;
		break;
	case NVML_ERROR_NO_PERMISSION:
		problem(e, STATUS_UNKNOWN, ACTION_FIX_CONFIG, "nvml",
			"%s cannot be opened: %s (run as root?)", e->dev, why);
		break;
	case NVML_ERROR_RESET_REQUIRED:
		problem(e, STATUS_FAIL, ACTION_RESET_GPU, "reset_required",
			"%s needs a reset before it can be used (NVML: %s)", e->dev, why);
		break;
	case NVML_ERROR_INSUFFICIENT_POWER:
	case NVML_ERROR_IRQ_ISSUE:
		problem(e, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "handle",
			"%s cannot be opened: %s", e->dev, why);
		break;
	default:
		/* What CUDA would meet too: the GPU is unusable until the driver reloads. */
		problem(e, STATUS_FAIL, ACTION_REBOOT, "handle", "%s cannot be opened: %s",
			e->dev, why);
		break;
	}
	finding_detail_num(&e->res->findings[e->res->nr - 1], "nvml_error", rc);
}

static void eval_ecc(struct gpu_eval *e, const struct nvml_gpu *g)
{
	if (ok(&g->ecc_current) && ok(&g->ecc_pending)) {
		if (!g->ecc_current.v && g->ecc_pending.v)
			problem(e, STATUS_FAIL, ACTION_RESET_GPU, "ecc_mode",
				"%s has ECC off until its next reset (pending: on)", e->dev);
		else if (!g->ecc_current.v)
			problem(e, STATUS_FAIL, ACTION_FIX_CONFIG, "ecc_mode",
				"%s has ECC off (nvidia-smi -e 1, then reset the GPU)",
				e->dev);
		else if (!g->ecc_pending.v)
			problem(e, STATUS_FAIL, ACTION_FIX_CONFIG, "ecc_mode",
				"%s turns ECC off at its next reset (pending: off)", e->dev);
	}
	if (ok(&g->ecc_volatile_uncorrected) && g->ecc_volatile_uncorrected.v > 0) {
		struct finding *f = problem(
			e, STATUS_FAIL, ACTION_RESET_GPU, "ecc_uncorrected",
			"%s had %llu uncorrectable ECC errors since its last reset", e->dev,
			(unsigned long long)g->ecc_volatile_uncorrected.v);
		finding_detail_num(f, "volatile_uncorrected", (double)g->ecc_volatile_uncorrected.v);
		if (ok(&g->ecc_aggregate_uncorrected))
			finding_detail_num(f, "aggregate_uncorrected",
					   (double)g->ecc_aggregate_uncorrected.v);
	}
}

static void eval_remap(struct gpu_eval *e, const struct nvml_gpu *g)
{
	struct finding *f;
	if (ok(&g->remap_failure) && g->remap_failure.v) {
		/* No spare rows left for a bad bank: the memory cannot be repaired in the field. */
		f = problem(e, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "row_remap_failure",
			    "%s failed to remap a memory row: replace the GPU", e->dev);
		f->severity = SEV_CRITICAL;
	}
	/*
	 * A pending remap is repaired only by a GPU reset, which needs the GPU idle. Left as a
	 * warning it is never done (docs/SLURM.md), so by default it fails: --slurm then drains the
	 * node (Slurm's DRAIN lets the running job finish and takes no new one), the reset
	 * happens once it is idle, and the next healthy check resumes it. The reason leads with
	 * what to do, so it survives the 80 characters of a Slurm reason. gpu.remap-pending =
	 * warn keeps the node in service for sites that reset GPUs by other means.
	 */
	if (ok(&g->remap_pending) && g->remap_pending.v) {
		if (e->p->remap_pending_warn)
			f = problem(e, STATUS_WARN, ACTION_RESET_GPU, "row_remap_pending",
				    "%s: reset GPU: pending row remap (gpu.remap-pending = warn: "
				    "not drained)", e->dev);
		else
			f = problem(e, STATUS_FAIL, ACTION_RESET_GPU, "row_remap_pending",
				    "%s: reset GPU: pending row remap", e->dev);
		finding_detail(f, "remap_pending", "%s",
			       e->p->remap_pending_warn ? "warn" : "drain");
	}
	if (ok(&g->remap_uncorrectable) && g->remap_uncorrectable.v > e->p->remapped_rows_max) {
		f = problem(e, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "row_remap_uncorrectable",
			    "%s has %llu rows remapped for uncorrectable errors (max %llu)",
			    e->dev, (unsigned long long)g->remap_uncorrectable.v,
			    (unsigned long long)e->p->remapped_rows_max);
		finding_detail_num(f, "remapped_rows_uncorrectable",
				   (double)g->remap_uncorrectable.v);
	}
}

static void eval_recovery(struct gpu_eval *e, const struct nvml_gpu *g)
{
	if (!ok(&g->recovery_action) || g->recovery_action.v == NVML_GPU_RECOVERY_ACTION_NONE)
		return;
	struct finding *f;
	unsigned long long a = g->recovery_action.v;
	switch (a) {
	case NVML_GPU_RECOVERY_ACTION_GPU_RESET:
		f = problem(e, STATUS_FAIL, ACTION_RESET_GPU, "recovery_action",
			    "%s: NVML asks for a GPU reset", e->dev);
		break;
	case NVML_GPU_RECOVERY_ACTION_NODE_REBOOT:
		f = problem(e, STATUS_FAIL, ACTION_REBOOT, "recovery_action",
			    "%s: NVML asks for a node reboot", e->dev);
		break;
	case NVML_GPU_RECOVERY_ACTION_DRAIN_P2P:
		/* Peer-to-peer traffic through this GPU is unsafe: NCCL jobs must not land here. */
		f = problem(e, STATUS_FAIL, ACTION_REBOOT, "recovery_action",
			    "%s: NVML asks to drain peer-to-peer traffic", e->dev);
		break;
	case NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET:
		f = problem(e, STATUS_FAIL, ACTION_RESET_GPU, "recovery_action",
			    "%s: NVML asks to drain work and reset the GPU", e->dev);
		break;
	default:
		f = problem(e, STATUS_WARN, ACTION_INVESTIGATE, "recovery_action",
			    "%s: NVML reports recovery action %llu, unknown to vigil", e->dev,
			    a);
		break;
	}
	finding_detail_num(f, "recovery_action", (double)a);
}

static const struct {
	uint64_t bit;
	const char *name;
	bool bad;
} clock_reasons[] = {
	{ NVML_CLOCKS_EVENT_GPU_IDLE, "idle", false },
	{ NVML_CLOCKS_EVENT_APP_CLOCKS, "application clocks", false },
	{ NVML_CLOCKS_EVENT_SW_POWER_CAP, "SW power cap", false },
	{ NVML_CLOCKS_EVENT_HW_SLOWDOWN, "HW slowdown", true },
	{ NVML_CLOCKS_EVENT_SYNC_BOOST, "sync boost", false },
	{ NVML_CLOCKS_EVENT_SW_THERMAL, "SW thermal slowdown", true },
	{ NVML_CLOCKS_EVENT_HW_THERMAL, "HW thermal slowdown", true },
	{ NVML_CLOCKS_EVENT_HW_POWER_BRAKE, "HW power brake", true },
	{ NVML_CLOCKS_EVENT_DISPLAY_CLOCK, "display clock", false },
};

/* "idle, SW power cap" for the bits of mask (bad ones only when only_bad). */
static void clock_reason_names(struct strbuf *sb, uint64_t mask, bool only_bad)
{
	uint64_t known = 0;
	for (size_t i = 0; i < ARRAY_SIZE(clock_reasons); i++) {
		known |= clock_reasons[i].bit;
		if ((mask & clock_reasons[i].bit) && (!only_bad || clock_reasons[i].bad))
			strbuf_addf(sb, "%s%s", sb->len ? ", " : "", clock_reasons[i].name);
	}
	if (!only_bad && (mask & ~known))
		strbuf_addf(sb, "%sother 0x%llx", sb->len ? ", " : "",
			    (unsigned long long)(mask & ~known));
}

static void eval_clocks(struct gpu_eval *e, const struct nvml_gpu *g)
{
	if (!ok(&g->clock_events))
		return;
	struct strbuf names = STRBUF_INIT;
	clock_reason_names(&names, g->clock_events.v, true);
	if (names.len) {
		struct finding *f = problem(e, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "clock_events",
					    "%s clocks slowed by %s (check cooling and power)",
					    e->dev, names.buf);
		finding_detail(f, "clocks_event_reasons", "0x%llx",
			       (unsigned long long)g->clock_events.v);
		if (ok(&g->temperature))
			finding_detail_num(f, "temperature_c", (double)g->temperature.v);
		if (ok(&g->power_usage))
			finding_detail_num(f, "power_w", g->power_usage.v / 1000.0);
	}
	strbuf_release(&names);
}

static void eval_pcie(struct gpu_eval *e, const struct nvml_gpu *g)
{
	/*
	 * Width is fixed by the slot and the card: fewer lanes than the GPU can use is a seating or
	 * riser fault. The generation drops at idle to save power, so it is not judged here.
	 */
	if (ok(&g->pcie_width) && ok(&g->pcie_width_max) && g->pcie_width.v &&
	    g->pcie_width.v < g->pcie_width_max.v) {
		struct finding *f = problem(e, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "pcie_link",
					    "%s PCIe link is x%llu of x%llu (reseat the GPU)",
					    e->dev, (unsigned long long)g->pcie_width.v,
					    (unsigned long long)g->pcie_width_max.v);
		finding_detail_num(f, "pcie_width", (double)g->pcie_width.v);
		finding_detail_num(f, "pcie_width_max", (double)g->pcie_width_max.v);
	}
}

static const struct gpu_prev *find_prev(const struct gpu_readings *r, const char *gpu,
					unsigned link, unsigned counter)
{
	for (size_t i = 0; i < r->nr_prev; i++)
		if (r->prev[i].link == link && r->prev[i].counter == counter &&
		    !strcmp(r->prev[i].gpu, gpu))
			return &r->prev[i];
	return NULL;
}

static void eval_nvlink(struct gpu_eval *e, const struct nvml_gpu *g)
{
	struct strbuf inactive = STRBUF_INIT, errs = STRBUF_INIT;
	unsigned active = 0, reporting = 0;
	bool rising = false;
	uint64_t total = 0; /* the rises (or first readings) listed in errs, summed */
	/* the span of a rise: since the last run's reading, when it is known */
	double rise_secs = e->r->have_state && e->r->state_age_s >= 0 ? e->r->state_age_s : -1;
	char key[NVML_STR_MAX];
	gpu_key(g, key, sizeof(key));
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		const struct nvml_link *k = &g->nvlink[l];
		if (!ok(&k->active))
			continue;
		reporting++;
		if (k->active.v)
			active++;
		else
			strbuf_addf(&inactive, "%s%u", inactive.len ? ", " : "", l);
		for (unsigned c = 0; c < NVML_NVLINK_ERROR_COUNT; c++) {
			/* ECC data errors were corrected: the link doing its job. */
			if (c == NVML_NVLINK_ERROR_DL_ECC_DATA || !ok(&k->errors[c]))
				continue;
			const struct gpu_prev *pv = find_prev(e->r, key, l, c);
			uint64_t v = k->errors[c].v;
			/* A counter below its last value was reset (driver reload, GPU reset). */
			uint64_t rise = !pv ? v : v >= pv->value ? v - pv->value : v;
			if (rise > e->p->nvlink_error_threshold) {
				strbuf_addf(&errs, "%slink %u %s ", errs.len ? ", " : "", l,
					    nvml_nvlink_counter_keys[c]);
				/* a rise is worded as IB and AER word theirs: "+N in T (R/h)" */
				if (pv)
					rate_format(&errs, rise, rise_secs);
				else
					strbuf_addf(&errs, "%llu", (unsigned long long)rise);
				rising |= pv != NULL;
				total += rise;
			}
		}
	}
	struct finding *f = NULL;
	if (e->p->nvlink_links && active < e->p->nvlink_links) {
		f = problem(e, STATUS_FAIL, ACTION_RESET_GPU, "nvlink_inactive",
			    "%s has %u of %llu NVLinks active", e->dev, active,
			    (unsigned long long)e->p->nvlink_links);
	} else if (!e->p->nvlink_links && e->nvlink_in_use && inactive.len) {
		/* Without NVLink on the host at all (PCIe cards, VMs), inactive links are normal. */
		f = problem(e, STATUS_FAIL, ACTION_RESET_GPU, "nvlink_inactive",
			    "%s NVLink %s inactive (%u of %u active)", e->dev, inactive.buf,
			    active, reporting);
	}
	if (f) {
		finding_detail_num(f, "nvlink_active", active);
		if (inactive.len)
			finding_detail(f, "nvlink_inactive", "%s", inactive.buf);
	}
	if (errs.len) {
		f = problem(e, STATUS_WARN, ACTION_INVESTIGATE, "nvlink_errors",
			    rising ? "%s NVLink errors rising by over %llu since the last run: %s"
				   : "%s NVLink errors over %llu since the driver loaded (the first "
				     "reading: later runs warn only when they rise): %s",
			    e->dev, (unsigned long long)e->p->nvlink_error_threshold, errs.buf);
		finding_detail(f, "counters", "%s", errs.buf);
		if (rising) {
			/* the same JSON as the IB and AER rises: delta, seconds, rate_per_hour */
			finding_detail_num(f, "delta", (double)total);
			if (rise_secs >= 0)
				finding_detail_num(f, "seconds", rise_secs);
			if (rise_secs >= 1)
				finding_detail_num(f, "rate_per_hour", rate_per_hour(total, rise_secs));
		}
	}
	strbuf_release(&inactive);
	strbuf_release(&errs);
}

static void eval_vbios(struct gpu_eval *e, const struct nvml_gpu *g)
{
	if (!e->p->vbios_versions.nr || g->vbios.rc)
		return;
	if (!version_allowed(&e->p->vbios_versions, g->vbios.s)) {
		struct strbuf want = STRBUF_INIT;
		join_list(&want, &e->p->vbios_versions);
		struct finding *f = problem(e, STATUS_FAIL, ACTION_FIX_CONFIG, "vbios_version",
					    "%s VBIOS is %s, expected %s", e->dev, g->vbios.s,
					    want.buf);
		finding_detail(f, "vbios_version", "%s", g->vbios.s);
		strbuf_release(&want);
	}
}

/* Values the rules above need that NVML could not give for a reason other than "no such thing". */
static void eval_errors(struct gpu_eval *e, const struct nvml_gpu *g)
{
	const struct {
		const char *what;
		int rc;
	} vals[] = {
		{ "ECC mode", g->ecc_current.rc },
		{ "ECC errors", g->ecc_volatile_uncorrected.rc },
		{ "remapped rows", g->remap_pending.rc },
		{ "clock event reasons", g->clock_events.rc },
		{ "PCIe width", g->pcie_width.rc },
		{ "PCIe max width", g->pcie_width_max.rc },
		{ "recovery action", g->recovery_action.rc },
		{ "VBIOS version", e->p->vbios_versions.nr ? g->vbios.rc : 0 },
	};
	struct strbuf sb = STRBUF_INIT;
	bool reset = false;
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		reset |= vals[i].rc == NVML_ERROR_RESET_REQUIRED;
		if (!rc_benign(vals[i].rc))
			strbuf_addf(&sb, "%s%s: %s", sb.len ? ", " : "", vals[i].what,
				    nvml_error_name(vals[i].rc));
	}
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		int rc = g->nvlink[l].active.rc;
		reset |= rc == NVML_ERROR_RESET_REQUIRED;
		/* INVALID_ARGUMENT: a link number this GPU does not have. */
		if (!rc_benign(rc) && rc != NVML_ERROR_INVALID_ARGUMENT) {
			strbuf_addf(&sb, "%sNVLink %u state: %s", sb.len ? ", " : "", l,
				    nvml_error_name(rc));
			break;
		}
	}
	if (reset)
		problem(e, STATUS_FAIL, ACTION_RESET_GPU, "reset_required",
			"%s needs a reset (NVML: GPU requires restart)", e->dev);
	if (sb.len)
		problem(e, STATUS_UNKNOWN, ACTION_INVESTIGATE, "nvml", "%s: cannot read %s", e->dev,
			sb.buf);
	strbuf_release(&sb);
}

static void gpu_summary(struct strbuf *msg, const char *dev, const struct nvml_gpu *g)
{
	strbuf_addf(msg, "%s healthy", dev);
	if (!g->name.rc && g->name.s[0])
		strbuf_addf(msg, ": %s", g->name.s);
	if (ok(&g->temperature))
		strbuf_addf(msg, ", %llu C", (unsigned long long)g->temperature.v);
	if (ok(&g->power_usage)) {
		strbuf_addf(msg, ", %.0f W", g->power_usage.v / 1000.0);
		if (ok(&g->power_limit))
			strbuf_addf(msg, " of %.0f W", g->power_limit.v / 1000.0);
	}
	if (ok(&g->sm_clock)) {
		strbuf_addf(msg, ", SM %llu", (unsigned long long)g->sm_clock.v);
		if (ok(&g->sm_clock_max))
			strbuf_addf(msg, " of %llu", (unsigned long long)g->sm_clock_max.v);
		strbuf_addstr(msg, " MHz");
	}
	if (ok(&g->pcie_gen) && ok(&g->pcie_width))
		strbuf_addf(msg, ", PCIe gen %llu x%llu", (unsigned long long)g->pcie_gen.v,
			    (unsigned long long)g->pcie_width.v);
}

static void num_detail(struct finding *f, const char *key, const struct nvml_val *v, double scale)
{
	if (ok(v))
		finding_detail_num(f, key, (double)v->v / scale);
}

static void eval_gpu_ok(struct gpu_eval *e, const struct nvml_gpu *g)
{
	struct strbuf msg = STRBUF_INIT;
	gpu_summary(&msg, e->dev, g);
	struct finding *f = result_add(e->res, STATUS_OK, ACTION_NONE, "gpu", e->dev, "%s",
				       msg.buf);
	gpu_identity(f, e);
	if (!g->name.rc)
		finding_detail(f, "name", "%s", g->name.s);
	if (!g->vbios.rc)
		finding_detail(f, "vbios_version", "%s", g->vbios.s);
	num_detail(f, "temperature_c", &g->temperature, 1);
	num_detail(f, "power_w", &g->power_usage, 1000);
	num_detail(f, "power_limit_w", &g->power_limit, 1000);
	num_detail(f, "sm_clock_mhz", &g->sm_clock, 1);
	num_detail(f, "sm_clock_max_mhz", &g->sm_clock_max, 1);
	num_detail(f, "pcie_gen", &g->pcie_gen, 1);
	num_detail(f, "pcie_gen_max", &g->pcie_gen_max, 1);
	num_detail(f, "pcie_width", &g->pcie_width, 1);
	num_detail(f, "pcie_width_max", &g->pcie_width_max, 1);
	num_detail(f, "pcie_replay_counter", &g->pcie_replay, 1);
	if (ok(&g->pcie_gen) && ok(&g->pcie_gen_max) && g->pcie_gen.v < g->pcie_gen_max.v)
		finding_detail(f, "pcie_note",
			       "gen %llu of %llu: links train down when idle, not a fault",
			       (unsigned long long)g->pcie_gen.v,
			       (unsigned long long)g->pcie_gen_max.v);
	num_detail(f, "ecc_volatile_corrected", &g->ecc_volatile_corrected, 1);
	num_detail(f, "ecc_aggregate_uncorrected", &g->ecc_aggregate_uncorrected, 1);
	num_detail(f, "remapped_rows_correctable", &g->remap_correctable, 1);
	num_detail(f, "remapped_rows_uncorrectable", &g->remap_uncorrectable, 1);
	if (ok(&g->persistence_mode))
		finding_detail(f, "persistence_mode", "%s", g->persistence_mode.v ? "on" : "off");
	if (ok(&g->clock_events)) {
		struct strbuf names = STRBUF_INIT;
		clock_reason_names(&names, g->clock_events.v, false);
		finding_detail(f, "clocks_event_reasons", "0x%llx%s%s%s",
			       (unsigned long long)g->clock_events.v, names.len ? " (" : "",
			       names.buf, names.len ? ")" : "");
		strbuf_release(&names);
	}
	unsigned active = 0, reporting = 0;
	for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		reporting += ok(&g->nvlink[l].active);
		active += ok(&g->nvlink[l].active) && g->nvlink[l].active.v;
	}
	if (reporting) {
		struct strbuf tot = STRBUF_INIT;
		finding_detail(f, "nvlink", "%u of %u active", active, reporting);
		for (unsigned c = 0; c < NVML_NVLINK_ERROR_COUNT; c++) {
			uint64_t sum = 0;
			bool any = false;
			for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
				if (ok(&g->nvlink[l].errors[c])) {
					sum += g->nvlink[l].errors[c].v;
					any = true;
				}
			}
			if (any)
				strbuf_addf(&tot, "%s%s %llu", tot.len ? ", " : "",
					    nvml_nvlink_counter_keys[c], (unsigned long long)sum);
		}
		if (tot.len)
			finding_detail(f, "nvlink_errors", "%s", tot.buf);
		strbuf_release(&tot);
	} else {
		finding_detail(f, "nvlink", "none");
	}
	strbuf_release(&msg);
}

static void eval_gpu(struct gpu_eval *e, const struct nvml_gpu *g)
{
	e->g = g;
	bus_of_unnamed(e->r, g, e->bus, sizeof(e->bus), &e->bus_inferred);
	device_name(g->index, e->bus, e->dev, sizeof(e->dev));
	e->problems = 0;
	if (g->handle_rc) {
		eval_handle(e, g);
		return;
	}
	if (g->lost) {
		/* Whatever else it said is stale: the GPU is gone. */
		struct finding *f = problem(e, STATUS_FAIL, ACTION_REBOOT, "lost",
					    "%s has fallen off the bus (NVML: GPU is lost)",
					    e->dev);
		f->severity = SEV_CRITICAL;
		return;
	}
	eval_ecc(e, g);
	eval_remap(e, g);
	eval_recovery(e, g);
	eval_clocks(e, g);
	eval_pcie(e, g);
	eval_nvlink(e, g);
	eval_vbios(e, g);
	eval_errors(e, g);
	if (!e->problems)
		eval_gpu_ok(e, g);
}

/* "0000:18:00.0 0000:2a:00.0 ...": the GPUs on the bus, for a message (at most about 8). */
static void bus_list(const struct strlist *l, struct strbuf *sb)
{
	for (size_t i = 0; i < l->nr; i++) {
		if (i == 8) {
			strbuf_addf(sb, " and %zu more", l->nr - i);
			break;
		}
		strbuf_addf(sb, "%s", i ? " " : "");
		strbuf_add_excerpt(sb, l->items[i], 32);
	}
}

/*
 * 1 when there is nothing to judge and the check is skipped or failed here; 0 to go on. NVIDIA
 * GPUs on the bus and no NVML (no library, or the module not loaded) is a driver problem, never a
 * configuration one: the module did not build for this kernel (DKMS), was blacklisted, or failed
 * to probe (dmesg says why).
 */
static int eval_no_nvml(const struct gpu_readings *r, const struct gpu_policy *p,
			struct check_result *res)
{
	const struct nvml_host *h = &r->nvml;
	bool no_lib = h->avail == NVML_NO_LIBRARY;
	bool bus_known = r->bus_rc == 0 && !r->bus_restricted;
	size_t bus = bus_known ? r->bus_gpus.nr : 0;
	uint64_t want = 0;
	const char *from = NULL;
	bool want_set = gpu_expect_count(&r->expect, p->count_set, p->count, &want, &from);
	if (!no_lib && !(h->avail == NVML_INIT_FAILED && h->init_rc == NVML_ERROR_DRIVER_NOT_LOADED))
		return 0;
	if (!bus && !(want_set && want > 0)) {
		result_add(res, STATUS_SKIPPED, ACTION_NONE, "nvml", NULL,
			   "no NVIDIA GPU and no driver on this host");
		return 1;
	}
	struct strbuf why = STRBUF_INIT;
	struct finding *f;
	if (bus) {
		strbuf_addf(&why, "%zu GPU%s on the PCI bus: ", bus, bus == 1 ? "" : "s");
		bus_list(&r->bus_gpus, &why);
	} else if (!strcmp(from, "gpu.count")) {
		strbuf_addf(&why, "gpu.count is %llu", (unsigned long long)want);
	} else {
		strbuf_addf(&why, "%s", from);
	}
	if (!bus && bus_known)
		/* Nothing NVIDIA on the bus at all: the GPUs are gone (or never passed through). */
		f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "count", NULL,
			       "no NVIDIA GPU on the PCI bus and no driver, but %s", why.buf);
	else
		f = result_add(res, STATUS_FAIL, ACTION_INVESTIGATE, "nvml", NULL,
			       "NVIDIA driver not loaded (check `lsmod | grep nvidia`, `dkms status`, "
			       "dmesg), %s", why.buf);
	if (h->note)
		finding_detail(f, "nvml", "%s", h->note);
	else
		finding_detail(f, "nvml", "nvmlInit: %s", nvml_error_name(h->init_rc));
	if (bus) {
		struct strbuf all = STRBUF_INIT;
		finding_detail_num(f, "pci_gpus", (double)bus);
		for (size_t i = 0; i < r->bus_gpus.nr; i++) {
			strbuf_addstr(&all, i ? " " : "");
			strbuf_add_excerpt(&all, r->bus_gpus.items[i], 32);
		}
		finding_detail(f, "pci_bus_ids", "%s", all.buf);
		strbuf_release(&all);
	}
	if (want_set) {
		finding_detail_num(f, "expected", (double)want);
		finding_detail(f, "expected_from", "%s", from);
	}
	strbuf_release(&why);
	return 1;
}

static bool bdf_in_nvml(const struct nvml_host *h, const char *bdf)
{
	for (size_t i = 0; i < h->nr; i++)
		if (!strcmp(h->gpus[i].bdf, bdf))
			return true;
	return false;
}

static void eval_count(const struct gpu_readings *r, const struct gpu_policy *p,
		       struct check_result *res)
{
	const struct nvml_host *h = &r->nvml;
	bool bus_known = r->bus_rc == 0 && !r->bus_restricted;
	size_t bus = bus_known ? r->bus_gpus.nr : 0, nv = h->nr;
	struct finding *f = NULL;
	uint64_t want = 0;
	const char *from = NULL;
	bool want_set = gpu_expect_count(&r->expect, p->count_set, p->count, &want, &from);
	/* gpu.count speaks for itself; Slurm's count names where it came from */
	bool slurm = want_set && strcmp(from, "gpu.count");
	char src[sizeof(r->expect.source) + 4] = "";
	if (slurm)
		snprintf(src, sizeof(src), " (%s)", from);
	if (want_set && nv < want) {
		/* Missing from the bus too: hardware. On the bus but not in NVML: the driver. */
		bool off_bus = bus_known && bus < want;
		if (bus_known)
			f = result_add(res, STATUS_FAIL,
				       off_bus ? ACTION_INSPECT_HARDWARE : ACTION_REBOOT, "count",
				       NULL, "%zu of %llu GPUs visible to NVML, %zu on the PCI bus%s",
				       nv, (unsigned long long)want, bus, src);
		else
			f = result_add(res, STATUS_FAIL, ACTION_INSPECT_HARDWARE, "count", NULL,
				       "%zu of %llu GPUs visible to NVML%s", nv,
				       (unsigned long long)want, src);
	} else if (bus_known && nv < bus) {
		f = result_add(res, STATUS_FAIL, ACTION_REBOOT, "count", NULL,
			       "%zu GPUs visible to NVML, %zu on the PCI bus", nv, bus);
	} else if (want_set && nv > want) {
		f = result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "count", NULL,
			       "%zu GPUs visible to NVML, %s says %llu", nv,
			       slurm ? "Slurm's configuration" : "gpu.count",
			       (unsigned long long)want);
	}
	if (!f)
		return;
	finding_detail_num(f, "nvml_gpus", (double)nv);
	if (want_set) {
		finding_detail_num(f, "expected", (double)want);
		finding_detail(f, "expected_from", "%s", from);
		if (slurm && r->expect.where[0])
			finding_detail(f, "expected_where", "%s", r->expect.where);
	}
	if (bus_known) {
		struct strbuf missing = STRBUF_INIT;
		finding_detail_num(f, "pci_gpus", (double)bus);
		for (size_t i = 0; i < r->bus_gpus.nr; i++)
			if (!bdf_in_nvml(h, r->bus_gpus.items[i]))
				strbuf_addf(&missing, "%s%s", missing.len ? " " : "",
					    r->bus_gpus.items[i]);
		if (missing.len)
			finding_detail(f, "not_in_nvml", "%s", missing.buf);
		strbuf_release(&missing);
	}
}

static void eval_driver(const struct nvml_host *h, const struct gpu_policy *p,
			struct check_result *res)
{
	if (!p->driver_versions.nr)
		return;
	if (h->driver_version.rc) {
		result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "driver_version", NULL,
			   "cannot read the driver version: %s",
			   nvml_error_name(h->driver_version.rc));
		return;
	}
	if (version_allowed(&p->driver_versions, h->driver_version.s))
		return;
	struct strbuf want = STRBUF_INIT;
	join_list(&want, &p->driver_versions);
	struct finding *f = result_add(res, STATUS_FAIL, ACTION_FIX_CONFIG, "driver_version", NULL,
				       "NVIDIA driver %s, expected %s", h->driver_version.s,
				       want.buf);
	finding_detail(f, "driver_version", "%s", h->driver_version.s);
	finding_detail(f, "expected", "%s", want.buf);
	strbuf_release(&want);
}

static void eval_summary(const struct gpu_readings *r, struct check_result *res)
{
	const struct nvml_host *h = &r->nvml;
	struct strbuf msg = STRBUF_INIT;
	const char *name = NULL;
	bool same = true;
	for (size_t i = 0; i < h->nr; i++) {
		const char *n = h->gpus[i].name.rc ? "" : h->gpus[i].name.s;
		if (!name)
			name = n;
		else if (strcmp(name, n))
			same = false;
	}
	strbuf_addf(&msg, "%zu GPU%s healthy", h->nr, h->nr == 1 ? "" : "s");
	if (name && *name)
		strbuf_addf(&msg, ": %s", same ? name : "mixed models");
	if (!h->driver_version.rc)
		strbuf_addf(&msg, "%sdriver %s", name && *name ? ", " : ": ", h->driver_version.s);
	struct finding *f = result_add(res, STATUS_OK, ACTION_NONE, "summary", NULL, "%s", msg.buf);
	finding_detail_num(f, "gpus", (double)h->nr);
	if (!h->driver_version.rc)
		finding_detail(f, "driver_version", "%s", h->driver_version.s);
	if (!h->nvml_version.rc)
		finding_detail(f, "nvml_version", "%s", h->nvml_version.s);
	if (ok(&h->cuda_driver_version))
		finding_detail(f, "cuda_driver_version", "%llu.%llu",
			       (unsigned long long)h->cuda_driver_version.v / 1000,
			       (unsigned long long)h->cuda_driver_version.v % 1000 / 10);
	if (h->library)
		finding_detail(f, "nvml_library", "%s", h->library);
	bool nvlink = false;
	for (size_t i = 0; i < h->nr && !nvlink; i++)
		for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
			nvlink |= ok(&h->gpus[i].nvlink[l].active);
	if (nvlink && r->counters_skipped)
		finding_detail(f, "nvlink_counters", "not read: last read %.0f s ago",
			       r->state_age_s);
	else if (nvlink)
		finding_detail(f, "nvlink_counters", "%s",
			       !r->state_dir ? "totals since the driver loaded (no state directory)"
			       : !r->have_state ? "totals since the driver loaded (first run)"
						: "rise since the last reading");
	strbuf_release(&msg);
}

/*
 * A device on the bus whose vendor or class cannot be read may be a GPU that NVML does not show:
 * the count cannot be trusted, so each is unknown by name (never left out as "not a GPU").
 */
static void eval_bus_unknown(const struct gpu_readings *r, struct check_result *res)
{
	if (r->bus_rc != 0 || r->bus_restricted)
		return;
	for (size_t i = 0; i < r->bus_unknown.nr; i++) {
		struct strbuf bdf = STRBUF_INIT, why = STRBUF_INIT;
		/* a fixture's directory names and file contents: quoted, never raw */
		strbuf_add_excerpt(&bdf, r->bus_unknown.items[i], 32);
		strbuf_add_excerpt(&why, i < r->bus_unknown_why.nr ? r->bus_unknown_why.items[i] : "",
				   200);
		struct finding *f = result_add(res, STATUS_UNKNOWN, ACTION_INVESTIGATE, "pci_id", bdf.buf,
					       "cannot tell whether PCI device %s is a GPU: %s",
					       bdf.buf, why.buf);
		finding_detail(f, "bdf", "%s", bdf.buf);
		strbuf_release(&bdf);
		strbuf_release(&why);
	}
}

static int evaluate_host(const struct gpu_readings *r, const struct gpu_policy *p,
			 struct check_result *res, struct strbuf *err)
{
	const struct nvml_host *h = &r->nvml;
	eval_bus_unknown(r, res);
	if (eval_no_nvml(r, p, res))
		return 0;
	if (h->avail == NVML_INIT_FAILED) {
		struct finding *f;
		switch (h->init_rc) {
		case NVML_ERROR_GPU_IS_LOST:
			f = result_add(res, STATUS_FAIL, ACTION_REBOOT, "lost", NULL,
				       "a GPU has fallen off the bus (nvmlInit: GPU is lost)");
			f->severity = SEV_CRITICAL;
			return 0;
		case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
			/* The usual cause: the driver was upgraded and the old module still runs. */
			result_add(res, STATUS_FAIL, ACTION_REBOOT, "driver_version", NULL,
				   "NVML and the loaded NVIDIA driver differ in version (reboot)");
			return 0;
		default:
			res->action = ACTION_RESET_GPU;
			return error_set(err, "nvmlInit failed: %s (NVML error %d): reset the GPU "
					 "or reboot; if it persists, collect nvidia-bug-report.sh",
					 nvml_error_name(h->init_rc), h->init_rc);
		}
	}
	if (h->count.rc) {
		res->action = ACTION_RESET_GPU;
		return error_set(err, "nvmlDeviceGetCount failed: %s: reset the GPU or reboot; if "
				 "it persists, collect nvidia-bug-report.sh",
				 nvml_error_name(h->count.rc));
	}
	uint64_t want = 0;
	const char *from;
	if (!h->nr && !(gpu_expect_count(&r->expect, p->count_set, p->count, &want, &from) && want) &&
	    !(r->bus_rc == 0 && !r->bus_restricted && r->bus_gpus.nr)) {
		struct finding *f = result_add(res, STATUS_SKIPPED, ACTION_NONE, "count", NULL,
					       "no NVIDIA GPU on this host");
		if (!h->driver_version.rc)
			finding_detail(f, "driver_version", "%s", h->driver_version.s);
		return 0;
	}
	size_t before = 0; /* the unknown devices too: no "healthy" summary beside them */
	eval_count(r, p, res);
	eval_driver(h, p, res);
	struct gpu_eval e = { .r = r, .p = p, .res = res };
	for (size_t i = 0; i < h->nr && !e.nvlink_in_use; i++)
		for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++)
			e.nvlink_in_use |= ok(&h->gpus[i].nvlink[l].active) &&
					   h->gpus[i].nvlink[l].active.v;
	for (size_t i = 0; i < h->nr; i++)
		eval_gpu(&e, &h->gpus[i]);
	bool healthy = true;
	for (size_t i = before; i < res->nr; i++)
		healthy &= res->findings[i].status == STATUS_OK;
	if (healthy)
		eval_summary(r, res);
	return 0;
}

int gpu_evaluate(const struct gpu_readings *r, const struct gpu_policy *p,
		 struct check_result *res, struct strbuf *err)
{
	int ret = evaluate_host(r, p, res, err);
	size_t seen = r->nvml.nr;
	if (r->bus_rc == 0 && !r->bus_restricted && r->bus_gpus.nr > seen)
		seen = r->bus_gpus.nr;
	if (ret == 0)
		gpu_expect_report(&r->expect, p->count_set, seen, res);
	return ret;
}

int check_gpu_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	struct gpu_readings r;
	struct gpu_policy p;
	int ret = -1;
	gpu_readings_init(&r);
	gpu_policy_init(&p);
	if (gpu_policy_load(&p, ctx->cfg, err) < 0)
		goto out;
	/* gpu.count, when set, is the word: Slurm's files are not read at all */
	if (!p.count_set)
		gpu_expect_gather(ctx->root, ctx->host, &r.expect);
	if (ctx->agent_socket)
		r.agent = ctx;
	if (gpu_gather_every(ctx->root, &r, ctx->state_dir, (double)p.nvlink_counter_interval,
			     err) < 0)
		goto out;
	ret = gpu_evaluate(&r, &p, res, err);
	/* where the reading came from, on every finding: the agent's worker or NVML here */
	for (size_t i = 0; ret == 0 && r.source && i < res->nr; i++) {
		finding_detail(&res->findings[i], "source", "%s", r.source);
		if (r.agent_why[0])
			finding_detail(&res->findings[i], "agent_not_used", "%s", r.agent_why);
	}
	if (ret == 0 && r.state_error[0])
		result_add(res, STATUS_WARN, ACTION_NONE, "state", NULL,
			   "no previous NVLink counter reading: %s (a new one is kept)",
			   r.state_error);
	/* Unread counters keep the last reading, and its age, as they are. */
	if (ret == 0 && ctx->state_dir && !r.counters_skipped) {
		struct strbuf path = STRBUF_INIT, werr = STRBUF_INIT;
		struct counter_set set = COUNTER_SET_INIT;
		readings_set(&r, &set);
		strbuf_addf(&path, "%s/%s", ctx->state_dir, GPU_STATE_FILE);
		/* Nothing to keep and nothing kept: leave no file behind; an unusable one is
		 * replaced. */
		if ((set.nr || r.have_state || r.state_error[0]) &&
		    statefile_save(path.buf, GPU_STATE_KIND, &set, &werr) < 0)
			result_add(res, STATUS_WARN, ACTION_FIX_CONFIG, "state", NULL,
				   "cannot keep the NVLink counters: %s", werr.buf);
		counter_set_release(&set);
		strbuf_release(&path);
		strbuf_release(&werr);
	}
out:
	gpu_readings_release(&r);
	gpu_policy_release(&p);
	return ret;
}
