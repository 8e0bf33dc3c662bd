/*
 * pci.h: PCI devices as sysfs shows them (/sys/bus/pci/devices/<bdf>/...), read through fsroot so
 * that a fixture root stands in for the host. Shared by the checks that care about GPUs, NVSwitches
 * and NICs on the PCI bus (pcie, system).
 *
 * A struct pci_dev is plain data (fixed-size strings, no pointers): copy it, build it by hand in
 * tests, free nothing.
 */
#ifndef VIGIL_SYS_PCI_H
#define VIGIL_SYS_PCI_H

#include "../lib/strbuf.h"
#include "../lib/strlist.h"

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_MELLANOX 0x15b3
#define PCI_DEVICES_DIR "/sys/bus/pci/devices"

enum pci_kind { PCI_KIND_OTHER, PCI_KIND_GPU, PCI_KIND_NVSWITCH, PCI_KIND_NIC };

/* One AER counter file (aer_dev_fatal, aer_dev_nonfatal, aer_dev_correctable). */
struct pci_aer {
	bool present;      /* the file exists (absent in most VMs and on old kernels) */
	uint64_t total;    /* the TOTAL_ERR_* line, or the sum of the others when it is missing */
	char nonzero[128]; /* "DLP 2, MalfTLP 1": the error kinds with a count, for messages */
};

struct pci_dev {
	char bdf[32];          /* "0000:1b:00.0" */
	uint32_t vendor, device, class_code; /* class_code: 0x030200 */
	bool is_vf;            /* an SR-IOV virtual function: no link of its own */
	bool has_link;         /* the link attribute files exist */
	char cur_speed[32], max_speed[32]; /* as sysfs says them: "32.0 GT/s PCIe", "Unknown" */
	unsigned cur_width, max_width;     /* lanes; 0 when unreadable */
	double cur_gts, max_gts;           /* parsed speeds; 0 when unknown */
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
int pci_list(struct strlist *bdfs, struct strbuf *err);
/*
 * Read one device's identity, link and AER files. Returns 0, READ_MISSING if the device is gone,
 * or -1 with *err when a file exists but cannot be read (a hung or broken sysfs attribute).
 * Missing link or AER files are not errors: has_link / aer_*.present say so.
 */
int pci_read(const char *bdf, struct pci_dev *d, struct strbuf *err);
/* Read only vendor and class (cheap; for "is there an NVSwitch here?"). */
int pci_read_id(const char *bdf, uint32_t *vendor, uint32_t *class_code, struct strbuf *err);

/* "1b:00.0" -> "0000:1b:00.0"; a full BDF is copied as it is (lowercased). */
void pci_normalize_bdf(const char *in, char *out, size_t n);

#endif
