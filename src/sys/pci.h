/*
 * pci.h: PCI devices as sysfs shows them (/sys/bus/pci/devices/<bdf>/...), read through the root
 * given (fsroot.h) so that a fixture root stands in for the host. The one place that walks the PCI bus and parses its
 * attributes: checks that care about GPUs, NVSwitches and NICs (pcie, system) call pci_find().
 *
 * A struct pci_dev is plain data (fixed-size strings, no pointers): copy it, build it by hand in
 * tests, free nothing.
 */
#ifndef VIGIL_SYS_PCI_H
#define VIGIL_SYS_PCI_H

#include "../lib/strbuf.h"
#include "../lib/strlist.h"
#include "fsroot.h"

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_MELLANOX 0x15b3
#define PCI_DEVICES_DIR "/sys/bus/pci/devices"

enum pci_kind { PCI_KIND_OTHER, PCI_KIND_GPU, PCI_KIND_NVSWITCH, PCI_KIND_NIC };

/* One AER counter file (aer_dev_fatal, aer_dev_nonfatal, aer_dev_correctable). */
struct pci_aer {
	bool present;      /* the file exists and held counters (absent in most VMs, old kernels) */
	char error[192];   /* the file exists but cannot be read or holds no counters; "" if fine */
	uint64_t total;    /* the TOTAL_ERR_* line, or the sum of the others when it is missing */
	char nonzero[128]; /* "DLP 2, MalfTLP 1": the error kinds with a count, for messages (raw
			    * names from the file: quote them with strbuf_add_excerpt) */
};

struct pci_dev {
	char bdf[32];          /* "0000:1b:00.0" */
	uint32_t vendor, device, class_code; /* class_code: 0x030200 */
	char id_error[192];    /* vendor or class cannot be read: what the device is, is unknown */
	bool device_read;      /* the device id was read (it only goes into details) */
	bool is_vf;            /* an SR-IOV virtual function: no link of its own */
	bool has_link;         /* the link attribute files exist */
	char link_error[192];  /* a link attribute cannot be read or parsed; "" when all could */
	char cur_speed[32], max_speed[32]; /* as sysfs says them: "32.0 GT/s PCIe", "Unknown" */
	unsigned cur_width, max_width;     /* lanes as sysfs says them (63: all-ones) */
	double cur_gts, max_gts;           /* parsed speeds; 0 when sysfs says "Unknown" */
	struct pci_aer aer_fatal, aer_nonfatal, aer_correctable;
};

/* The classification vigil uses: NVIDIA display/3D controllers are GPUs, NVIDIA bridges of class
 * 0x0680 are NVSwitches, network controllers (0x0200 Ethernet, 0x0207 InfiniBand) of Mellanox or
 * NVIDIA are NICs. */
enum pci_kind pci_classify(uint32_t vendor, uint32_t class_code);
const char *pci_kind_name(enum pci_kind k); /* "GPU", "NVSwitch", "NIC", "device" */

/* "32.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> GT/s. False for "Unknown", empty or junk. */
bool pci_parse_speed(const char *s, double *gts);
/* "16" (or "x16") -> 16. False for junk. */
bool pci_parse_width(const char *s, unsigned *lanes);
/* Parse the text of an aer_dev_* file ("NAME COUNT" lines). Returns false when no line parsed. */
bool pci_parse_aer(const char *text, struct pci_aer *out);

/* Sorted BDFs under /sys/bus/pci/devices: 0, READ_MISSING (no PCI bus there), or -1 with *err. */
int pci_list(const struct fsroot *root, struct strlist *bdfs, struct strbuf *err);
/*
 * Read one device's identity, link and AER files. Returns 0, or READ_MISSING if the device is gone
 * (no vendor file). Everything else is said in *d: a file that exists but cannot be read, is empty,
 * NUL-filled or junk sets id_error, link_error or aer_*.error (naming the file), never a 0 or "".
 * Missing link or AER files are not errors: has_link / aer_*.present say so.
 */
int pci_read(const struct fsroot *root, const char *bdf, struct pci_dev *d);
/* Read only vendor and class: 0, READ_MISSING, or -1 with *err naming the file and what it held. */
int pci_read_id(const struct fsroot *root, const char *bdf, uint32_t *vendor,
		uint32_t *class_code, struct strbuf *err);

/* pci_find()'s mask of kinds. */
#define PCI_MASK(kind) (1u << (kind))
/*
 * The one walk of /sys/bus/pci/devices: appends to *devs (a growable array: *nr used, *alloc
 * allocated; free(*devs) when done) every device whose kind is in mask, in BDF order, read in
 * full (pci_read) when full is set, else vendor and class only. A device whose vendor or class
 * cannot be read is appended too, with id_error set: it may be of a kind asked for, and the caller
 * must say it could not tell. A device gone between listing and reading is left out.
 * Returns 0, READ_MISSING (no PCI bus: a VM without passthrough, a fixture without sys/bus/pci), or
 * -1 with *err when the directory exists but cannot be listed.
 */
int pci_find(const struct fsroot *root, unsigned mask, bool full, struct pci_dev **devs,
	     size_t *nr, size_t *alloc, struct strbuf *err);

/* "1b:00.0" -> "0000:1b:00.0"; a full BDF is copied as it is (lowercased). */
void pci_normalize_bdf(const char *in, char *out, size_t n);

#endif
