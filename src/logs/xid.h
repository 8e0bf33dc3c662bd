/*
 * xid.h: the catalog of NVIDIA Xid (GPU driver) and SXid (NVSwitch) error numbers: what each one
 * means and what the host needs (docs/codes.md; from NVIDIA's Xid catalog and the NVSwitch
 * fatal/non-fatal lists).
 *
 * The policy of one occurrence can depend on its text: Xid 144-150 say "Fatal" or "Nonfatal",
 * Xid 154 names the recovery action the driver now wants, SXid lines may carry a severity word.
 * The callers parse those (src/logs/kmsg_event.c) and pass them in.
 *
 * Everything returned points to static data: nothing to free.
 */
#ifndef VIGIL_XID_H
#define VIGIL_XID_H

#include "../core/finding.h"

/* Xid 154 recovery action codes (the driver's "GPU recovery action changed ... to 0xN"). */
enum xid_recovery {
	XID_RECOVERY_NONE = 0x0,
	XID_RECOVERY_GPU_RESET = 0x1,
	XID_RECOVERY_NODE_REBOOT = 0x2,
	XID_RECOVERY_DRAIN_RESET = 0x4,
};

struct xid_policy {
	const char *meaning; /* "GPU has fallen off the bus" */
	enum status status;  /* while the fault is current (sticky and not cleared, or recent) */
	enum severity severity;
	enum action action;
	enum action then;    /* follow-up when it recurs (INSPECT_HARDWARE for 79), else NONE */
	bool sticky;         /* stays a fault until the GPU is reset or the node rebooted; the
			      * others concern one application (or a pending, harmless state) and
			      * fade after a while */
	bool known;          /* the number is in the catalog */
	bool clears;         /* Xid 154 to 0x0: the driver says the GPU needs nothing any more */
};

/*
 * Policy for one Xid. fatal_word: 1 when the text says Fatal, 0 when it says Nonfatal/Non-fatal,
 * -1 when it says neither (used for 144-150). recovery: Xid 154's new action code, -1 if none.
 * Unknown numbers get warn / INVESTIGATE, not sticky.
 */
void xid_classify(int xid, int fatal_word, int recovery, struct xid_policy *out);

/*
 * Policy for an Xid 45 whose tail names its cause ("caused by previous Xid 149"): the cause's,
 * since the cleanup happened because of it. The driver removes channels only after an error it
 * could not contain, so an NVLink cause (144-150, whose own line says Fatal or Nonfatal) counts
 * as fatal here. A cause that is itself 45, 154 (its recovery code is on its own line) or not
 * in the catalog: warn / INVESTIGATE. meaning is the cause's.
 */
void xid_classify_cascade(int cause, struct xid_policy *out);

/*
 * Policy for one SXid. The fatal and non-fatal lists decide for listed numbers; the line's own
 * word (fatal_word as above) decides for the others; neither: warn / INVESTIGATE.
 * A fatal NVSwitch error needs the fabric reset, which in practice is a node reboot: REBOOT.
 */
void sxid_classify(int sxid, int fatal_word, struct xid_policy *out);

/* Catalog meaning of an Xid, or NULL when the number is not in the catalog. */
const char *xid_meaning(int xid);

/* Say an action as a person would: "reset the GPU", "reboot the node", ... ("" for NONE). */
const char *xid_action_text(enum action a);

/* The name of an Xid 154 recovery code: "GPU reset required", ..., or "unknown". */
const char *xid_recovery_name(int code);

#endif
