/*
 * xidwatch.h: the agent's record of the driver's own Xid events (NVML), and how it weighs the
 * kernel log's Xid lines against it.
 *
 * Why: the kernel log echoes text a user chose (a comm name, an exec path), so a line that reads
 * "NVRM: Xid (PCI:...): 79" is not proof the driver said it (docs/SECURITY.md); and a log that was
 * rotated, cleared or flooded loses a real one. The gpu worker (gpuworker.h) registers every GPU
 * for nvmlEventTypeXidCriticalError and drains the event set each cycle (nvml_xid_drain()); the
 * agent keeps what it said here, durably (STATE_DIR/nvml-xid.json), with the watch windows: for
 * each GPU, from when to when NVML was watching it and every event up to that moment was taken.
 *
 * Then, for a cycle's report (xidwatch_judge()):
 *   - an Xid finding of the kernel log whose lines all fall inside one window of that GPU (with
 *     XIDWATCH_MARGIN_S either side), for which NVML reported no such Xid on that GPU in this
 *     boot, is doubtful (so is one naming an address none of the GPUs has, while NVML watched
 *     every GPU it knows): unknown, not fail (and so never a drain under the default
 *     slurm.on-unknown = nothing), its message saying why; unless NVML's own readings this
 *     cycle do not contradict it (the gpu check could not tell, or finds that GPU unhealthy: a
 *     GPU that fell off the bus may never post its Xid);
 *   - an Xid NVML reported on a GPU stands even when the kernel log no longer shows it: a finding
 *     with the catalog's policy (src/logs/xid.c) is added to the kernel result (to the gpu result
 *     when the kernel check did not run), sticky ones until the next boot, the others while
 *     recent (kernel.window); where the log has the same Xid on the same GPU, the log's finding
 *     (which knows about GPU resets after it) is the one kept, unless it says a GPU reset cleared
 *     a sticky one during an unbroken watch of that GPU (the worker holds it open: no reset can
 *     happen), then the Xid stands;
 *   - everything else is as before: lines with no boot-relative time (a saved dmesg -T), lines
 *     from before the watch began or after its last drain, GPUs or VMs without Xid events
 *     (NVML_ERROR_NOT_SUPPORTED), an NVML without the event API.
 *
 * Times are CLOCK_MONOTONIC seconds: /dev/kmsg stamps its records with that clock, so a line and
 * a window compare without the wall clock (which may jump). The record belongs to one boot (the
 * boot id); another boot's record is dropped on load, as is one whose windows lie in the future.
 *
 * Bounds: XIDWATCH_MAX_GPUS GPUs, XIDWATCH_MAX_WINDOWS windows a GPU (the oldest dropped: less
 * watched time, never more), XIDWATCH_MAX_EVENTS distinct (GPU, Xid) pairs (the rest counted),
 * XIDWATCH_FILE_MAX bytes of file. A file that is a link, not a regular file, too large or not
 * this format is set aside (NAME.damaged) and the record started anew: less is doubted, nothing
 * is lost that the log still shows.
 *
 * Ownership: plain data, no allocations but the error string (xidwatch_release()).
 */
#ifndef VIGIL_AGENT_XIDWATCH_H
#define VIGIL_AGENT_XIDWATCH_H

#include "../core/report.h"
#include "../gpu/nvml.h"
#include "../lib/json.h"

#define XIDWATCH_FILE "nvml-xid.json"
#define XIDWATCH_MAX_GPUS NVML_MAX_GPUS_WATCHED
#define XIDWATCH_MAX_WINDOWS 16
#define XIDWATCH_MAX_EVENTS 256
#define XIDWATCH_FILE_MAX (1u << 20)
/* Slack between a kernel stamp and NVML's watch: the driver prints and posts the event on one
 * path, within milliseconds; a line this close to a window's edge is not judged by it. */
#define XIDWATCH_MARGIN_S 2.0
/* And at a window's start, this much of the uptime more: printk stamps with sched_clock, the
 * watch with CLOCK_MONOTONIC, which NTP slews (by up to 500 ppm, by far less on a synced host);
 * a real Xid printed just before the watch began must not read as inside it. (At the end no such
 * slack is needed: a real Xid's event is in the drain taken after its line, whatever the stamp.) */
#define XIDWATCH_DRIFT_PPM 200.0

struct xidwatch_window {
	double from, to;
};

struct xidwatch_gpu {
	char bdf[32];
	int rc; /* the last drain's word on it: 0 watched, else why not */
	struct xidwatch_window win[XIDWATCH_MAX_WINDOWS];
	size_t nr_win;
};

struct xidwatch_event {
	char bdf[32];
	unsigned xid;
	uint64_t count;
	double first, last; /* the drains that took it: it happened before each */
};

struct xid_watch {
	char boot_id[64];
	int rc;            /* the last drain's rc (no watch at all: no event API, NVML not open) */
	bool drained;      /* a drain was merged */
	struct xidwatch_gpu gpus[XIDWATCH_MAX_GPUS];
	size_t nr_gpus;
	struct xidwatch_event ev[XIDWATCH_MAX_EVENTS];
	size_t nr_ev;
	uint64_t dropped, foreign;
	char *error;       /* why the file was set aside or could not be written, or NULL */
};

void xidwatch_init(struct xid_watch *w, const char *boot_id);
void xidwatch_release(struct xid_watch *w);

/* Merge one drain taken at (or before) the worker's d->at. */
void xidwatch_merge(struct xid_watch *w, const struct nvml_xid_drain *d);

/* A drain as JSON (the worker's answer) and back; from_json: 0, or -1 with *err. */
void xidwatch_drain_json(const struct nvml_xid_drain *d, struct strbuf *out);
int xidwatch_drain_from_json(const struct json_value *v, struct nvml_xid_drain *d,
			     struct strbuf *err);

/* The file's text; parse: 0 (w holds it), or -1 with *err (w as after xidwatch_init()). */
void xidwatch_serialize(const struct xid_watch *w, struct strbuf *out);
int xidwatch_parse(struct xid_watch *w, const char *text, size_t len, double mono_now,
		   struct strbuf *err);
/*
 * Load path into w (inited with this boot's id): a missing file is an empty record; a damaged
 * one is renamed NAME.damaged, w->error says so, and the record starts empty. Another boot's
 * record starts empty without a word (it is not this boot's).
 */
void xidwatch_load(struct xid_watch *w, const char *path, double mono_now);
/* Write atomically (never through a link); 0, or -1 with *err. */
int xidwatch_save(const struct xid_watch *w, const char *path, struct strbuf *err);

/* Weigh rep's Xid findings against the record (see above); window_s: kernel.window. Does not
 * call report_finish(). Returns how many findings it changed or added. */
unsigned xidwatch_judge(const struct xid_watch *w, struct report *rep, double mono_now,
			double window_s);

double xidwatch_mono_now(void);

#endif
