/*
 * pcie.h: the 'pcie' check: PCIe links of GPUs, NVSwitches and NICs (width, speed) and their AER
 * error counters (see pcie.c and docs/checks-host.md).
 */
#ifndef VIGIL_CHECK_PCIE_H
#define VIGIL_CHECK_PCIE_H

#include "check.h"
#include "../lib/statefile.h"
#include "../lib/strlist.h"
#include "../sys/pci.h"

#define PCIE_STATE_FILE "pcie-aer.state"
/* The state file's kind (statefile.h): "# vigil pcie counters ...", then "BDF NONFATAL_TOTAL".
 * The file before statefile ("# vigil pcie: non-fatal AER totals ...") names the same kind
 * and has the same lines, so it loads as it is. */
#define PCIE_STATE_KIND "pcie"

struct pcie_readings {
	struct pci_dev *devs; /* GPUs, NVSwitches and NICs only, in BDF order */
	size_t nr, alloc;
	bool state_dir;       /* a state directory exists: the AER reading is kept */
	bool have_prev;       /* a previous reading was found in it and is a baseline (of this
			       * boot, under a day old: statefile_base()) */
	enum statefile_base base; /* what the kept reading is worth (BASE_FIRST when none) */
	double age;           /* seconds since it was taken (-1: unknown) */
	double now, boot;     /* this run's time and the host's boot time (<= 0: unknown) */
	struct counter_set prev; /* the last run's non-fatal totals, named by BDF */
	char state_error[256];   /* why the state file was not usable ("" when it was or is absent) */
};

struct pcie_options {
	struct strlist ignore; /* normalised BDFs */
};

/* Read the devices (and the last AER reading from ctx->state_dir). 0, or -1 with *err. */
int pcie_gather(const struct check_ctx *ctx, struct pcie_readings *r, struct strbuf *err);
/* Pure: findings for the readings. */
void pcie_evaluate(const struct pcie_readings *r, const struct pcie_options *opt,
		   struct check_result *res);
/* The state file's text for these readings (what the next run compares against). */
void pcie_state_format(const struct pcie_readings *r, struct strbuf *out);
/* Parse a state file's text into r->prev (replacing it): 0, or -1 with *why (NULL: not said)
 * and r->prev empty, as statefile_parse() does for text that is not a pcie counter file. */
int pcie_state_parse(struct pcie_readings *r, const char *text, struct strbuf *why);
int pcie_options_load(const struct config *cfg, struct pcie_options *opt, struct strbuf *err);
void pcie_options_release(struct pcie_options *opt);
void pcie_readings_release(struct pcie_readings *r);

int check_pcie_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
