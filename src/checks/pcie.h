/*
 * pcie.h: the 'pcie' check: PCIe links of GPUs, NVSwitches and NICs (width, speed) and their AER
 * error counters (see pcie.c and docs/checks-host.md).
 */
#ifndef VIGIL_CHECK_PCIE_H
#define VIGIL_CHECK_PCIE_H

#include "check.h"
#include "../lib/strlist.h"
#include "../sys/pci.h"

#define PCIE_STATE_FILE "pcie-aer.state"

/* The previous run's AER reading of one device. */
struct pcie_prev {
	char bdf[32];
	uint64_t nonfatal, correctable;
};

struct pcie_readings {
	struct pci_dev *devs; /* GPUs, NVSwitches and NICs only, in BDF order */
	size_t nr, alloc;
	bool state_dir;       /* a state directory exists: the AER reading is kept */
	bool have_prev;       /* a previous reading was found in it */
	struct pcie_prev *prev;
	size_t nr_prev, alloc_prev;
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
/* Parse a state file's text into r->prev (replacing it). */
void pcie_state_parse(struct pcie_readings *r, const char *text);
int pcie_options_load(const struct config *cfg, struct pcie_options *opt, struct strbuf *err);
void pcie_options_release(struct pcie_options *opt);
void pcie_readings_release(struct pcie_readings *r);

int check_pcie_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
