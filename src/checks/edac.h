/*
 * edac.h: the EDAC memory error counters in sysfs, judged inside the 'kernel' check. The EDAC
 * drivers count the memory errors each memory controller saw since its counters were reset (at
 * boot, or by writing reset_counters):
 *
 *   /sys/devices/system/edac/mc/mcN/ce_count, ue_count, seconds_since_reset, mc_name
 *   /sys/devices/system/edac/mc/mcN/dimmM/dimm_ce_count, dimm_ue_count, dimm_label  (or rankM/)
 *
 * They hold what the kernel log may have lost (a log rotated, cleared or flooded), so both are
 * read. Policy (docs/kernel-log.md):
 *   - ue_count above 0: fail, INSPECT_HARDWARE, for as long as the counters stand (the boot);
 *   - corrected errors rising fast: warn, INSPECT_HARDWARE, when ce_count rose by kernel.ce-rate
 *     or more within an hour, or at that rate an hour over a longer span. The rise is taken from
 *     the last run's reading kept in STATE_DIR/edac.state (as the InfiniBand counters are; a
 *     reading stays the baseline until it is an hour old, so that runs a minute apart still
 *     add up a slow storm), and on the first run from the counters themselves over
 *     seconds_since_reset;
 *   - counters that went back (seconds_since_reset or ce_count lower than the last reading: a
 *     reboot or a reset) start again from zero: the rise is what they now hold;
 *   - a controller whose counters cannot be read: unknown by name, INVESTIGATE.
 * No EDAC directory (no EDAC driver: most VMs) is said in an ok finding: the log is then the only
 * source of memory errors.
 *
 * Ownership: struct edac_readings owns its array; edac_readings_release() frees it.
 */
#ifndef VIGIL_CHECK_EDAC_H
#define VIGIL_CHECK_EDAC_H

#include "check.h"

#define EDAC_MC_DIR "/sys/devices/system/edac/mc"
#define EDAC_MAX_MCS 256
#define EDAC_MAX_DIMMS 64 /* per controller, for the per-DIMM counts the messages name */

struct edac_dimm {
	char dir[16];     /* "dimm3", "rank3" */
	char label[64];   /* dimm_label, printable */
	uint64_t ce, ue;
	bool have;        /* both counts read */
};

struct edac_mc {
	char name[16];    /* "mc0" */
	char mc_name[48]; /* the driver's name for it ("Skylake Socket#0 IMC#0") */
	uint64_t ce, ue, since;
	bool have_ce, have_ue, have_since;
	uint64_t prev_ce, prev_since;
	bool have_prev_ce, have_prev_since;
	char error[200];  /* why a count could not be read ("" when read) */
	struct edac_dimm *dimms;
	size_t nr_dimms;
};

struct edac_readings {
	struct edac_mc *mc;
	size_t nr, alloc;
	bool present;          /* the EDAC mc directory exists */
	char list_error[200];  /* it exists but cannot be listed */
	bool state_dir;        /* a state directory was given */
	bool have_state;       /* a previous reading was loaded */
	char state_error[200]; /* the previous reading could not be used */
	double state_age;      /* seconds since the previous reading (file time), -1 unknown */
};

/* Read the counters and the last run's reading. Never fails: what cannot be read is said per
 * controller. */
void edac_gather(const struct check_ctx *ctx, struct edac_readings *r);
/* Turn the readings into findings (pure). ce_rate: corrected errors an hour that warn. */
void edac_evaluate(const struct edac_readings *r, uint64_t ce_rate, struct check_result *res);
/* Keep this reading for the next run (a warn finding when it cannot be kept). */
void edac_state_save(const struct check_ctx *ctx, const struct edac_readings *r,
		     struct check_result *res);
void edac_readings_release(struct edac_readings *r);

/* The state file's text of a reading, and a reading's previous values from such text (tests). */
void edac_state_format(const struct edac_readings *r, struct strbuf *out);
void edac_state_apply(struct edac_readings *r, const char *text);

#endif
