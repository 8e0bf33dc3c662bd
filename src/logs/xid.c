/*
 * xid.c: the Xid and SXid catalog (see xid.h; docs/codes.md lists what it says). The tables
 * follow NVIDIA's Xid catalog and the NVSwitch fatal/non-fatal lists; the statuses are vigil's
 * policy:
 *   - sticky faults (the GPU needs a reset or the node a reboot) fail;
 *   - application-level faults fade: an app bug (13, 31, 43, 45) is no host fault at all (ok),
 *     the others (8, 32, 68, 69, 80, 94, ...) warn while recent;
 *   - 63 (row remap pending) warns: reset at convenience; 64 (remap failed) fails.
 */
#include "xid.h"

enum { F_STICKY = 1, F_APP = 2, F_CRIT = 4 };

struct xid_entry {
	int lo, hi; /* inclusive range of numbers */
	const char *meaning;
	enum status status;
	enum action action;
	enum action then;
	unsigned flags;
};

#define OK_ STATUS_OK
#define WARN_ STATUS_WARN
#define FAIL_ STATUS_FAIL
#define A(x) ACTION_##x

static const struct xid_entry xid_table[] = {
	{ 8, 8, "GPU stopped processing (FIFO idle timeout)", WARN_, A(RESTART_APP), A(NONE), F_APP },
	{ 13, 13, "graphics engine exception", OK_, A(RESTART_APP), A(NONE), F_APP },
	{ 31, 31, "GPU memory page fault", OK_, A(RESTART_APP), A(NONE), F_APP },
	{ 32, 32, "invalid or corrupted push buffer", WARN_, A(RESTART_APP), A(NONE), F_APP },
	{ 38, 38, "driver firmware watchdog", WARN_, A(NONE), A(CONTACT_SUPPORT), F_APP },
	{ 43, 43, "GPU stopped processing (application)", OK_, A(NONE), A(NONE), F_APP },
	{ 45, 45, "preemptive cleanup after another error", OK_, A(NONE), A(NONE), F_APP },
	{ 46, 46, "GPU timeout", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 48, 48, "double-bit ECC error", FAIL_, A(RESET_GPU), A(INSPECT_HARDWARE), F_STICKY },
	{ 54, 54, "auxiliary power not connected", FAIL_, A(INSPECT_HARDWARE), A(NONE), F_STICKY },
	{ 62, 62, "internal micro-controller halt", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 63, 63, "row remapping recorded, reset to activate", WARN_, A(RESET_GPU), A(NONE),
	  F_APP },
	{ 64, 64, "row remapping failed", FAIL_, A(RESET_GPU), A(INSPECT_HARDWARE), F_STICKY },
	{ 68, 69, "video decoder or graphics class error", WARN_, A(RESTART_APP), A(NONE), F_APP },
	{ 74, 74, "NVLink error", FAIL_, A(RESET_GPU), A(INSPECT_HARDWARE), F_STICKY },
	{ 79, 79, "GPU has fallen off the bus", FAIL_, A(REBOOT), A(INSPECT_HARDWARE),
	  F_STICKY | F_CRIT },
	{ 80, 80, "corrupted data sent to the GPU", WARN_, A(RESTART_APP), A(NONE), F_APP },
	{ 92, 92, "high single-bit ECC error rate", WARN_, A(NONE), A(CONTACT_SUPPORT), F_APP },
	{ 94, 94, "contained memory error", WARN_, A(RESTART_APP), A(NONE), F_APP },
	{ 95, 95, "uncontained memory error", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 109, 109, "context-switch timeout", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 110, 110, "security fault", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 119, 119, "GSP RPC timeout", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 120, 120, "GSP error", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 136, 136, "NVLink training failed", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 140, 140, "unrecovered ECC error", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 143, 143, "GPU initialisation error", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	/* 144-150 and 154 are refined by their text in xid_classify() */
	{ 144, 150, "NVLink error", WARN_, A(INVESTIGATE), A(NONE), 0 },
	{ 154, 154, "GPU recovery action changed", WARN_, A(INVESTIGATE), A(NONE), 0 },
	{ 155, 155, "NVLink software error", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
	{ 158, 158, "GPU fatal timeout", FAIL_, A(RESET_GPU), A(NONE), F_STICKY },
};

static const struct xid_entry *xid_find(int xid)
{
	for (size_t i = 0; i < ARRAY_SIZE(xid_table); i++)
		if (xid >= xid_table[i].lo && xid <= xid_table[i].hi)
			return &xid_table[i];
	return NULL;
}

const char *xid_meaning(int xid)
{
	const struct xid_entry *e = xid_find(xid);
	return e ? e->meaning : NULL;
}

static void from_entry(const struct xid_entry *e, struct xid_policy *out)
{
	memset(out, 0, sizeof(*out));
	out->meaning = e->meaning;
	out->status = e->status;
	out->action = e->action;
	out->then = e->then;
	out->sticky = e->flags & F_STICKY;
	out->known = true;
	out->severity = (e->flags & F_CRIT) ? SEV_CRITICAL : severity_default(e->status);
}

static void set(struct xid_policy *out, const char *meaning, enum status st, enum action act,
		bool sticky)
{
	out->meaning = meaning;
	out->status = st;
	out->action = act;
	out->sticky = sticky;
	out->severity = severity_default(st);
}

const char *xid_recovery_name(int code)
{
	switch (code) {
	case XID_RECOVERY_NONE: return "none";
	case XID_RECOVERY_GPU_RESET: return "GPU reset required";
	case XID_RECOVERY_NODE_REBOOT: return "node reboot required";
	case XID_RECOVERY_DRAIN_RESET: return "drain and reset required";
	default: return "unknown";
	}
}

void xid_classify(int xid, int fatal_word, int recovery, struct xid_policy *out)
{
	const struct xid_entry *e = xid_find(xid);
	if (!e) {
		memset(out, 0, sizeof(*out));
		set(out, "Xid not in vigil's catalog", STATUS_WARN, ACTION_INVESTIGATE, false);
		return;
	}
	from_entry(e, out);
	if (xid >= 144 && xid <= 150) {
		if (fatal_word == 1)
			set(out, "fatal NVLink error", STATUS_FAIL, ACTION_RESET_GPU, true);
		else if (fatal_word == 0)
			set(out, "non-fatal NVLink error", STATUS_WARN, ACTION_NONE, false);
		else
			set(out, "NVLink error (severity not given)", STATUS_WARN,
			    ACTION_INVESTIGATE, false);
	} else if (xid == 154) {
		switch (recovery) {
		case XID_RECOVERY_NONE:
			set(out, "GPU recovery action cleared", STATUS_OK, ACTION_NONE, false);
			out->clears = true;
			break;
		case XID_RECOVERY_GPU_RESET:
			set(out, "driver requires a GPU reset", STATUS_FAIL, ACTION_RESET_GPU, true);
			break;
		case XID_RECOVERY_NODE_REBOOT:
			set(out, "driver requires a node reboot", STATUS_FAIL, ACTION_REBOOT, true);
			out->severity = SEV_CRITICAL;
			break;
		case XID_RECOVERY_DRAIN_RESET:
			set(out, "driver requires drain and GPU reset", STATUS_FAIL,
			    ACTION_RESET_GPU, true);
			break;
		default:
			set(out, "GPU recovery action changed to an unknown action", STATUS_WARN,
			    ACTION_INVESTIGATE, false);
			break;
		}
	}
}

void xid_classify_cascade(int cause, struct xid_policy *out)
{
	if (cause == 45 || cause == 154 || !xid_find(cause)) {
		memset(out, 0, sizeof(*out));
		set(out, cause == 154 ? "GPU recovery action changed" : "Xid not in vigil's catalog",
		    STATUS_WARN, ACTION_INVESTIGATE, false);
		out->known = cause == 154;
		return;
	}
	xid_classify(cause, cause >= 144 && cause <= 150 ? 1 : -1, -1, out);
}

/*
 * SXid lists: numbers or inclusive ranges, checked against NVIDIA's published NVSwitch SXid
 * tables: "NVIDIA Fabric Manager User Guide", DU-09883-001 v1.3 (October 2023), appendix "NVSwitch
 * SXid Errors": "Non-Fatal NVSwitch SXid Errors", "Fatal NVSwitch SXid Errors", "Always Fatal
 * NVSwitch SXid Errors" and "Other Notable NVSwitch SXid Errors" (the tables as transcribed, with
 * each code's Impact and Recovery columns, in github.com/leptonai/gpud,
 * components/accelerator/nvidia/sxid/sxid.go). Every code's class matches the tables. Where a
 * code's own Impact and Recovery say more than its class, the action follows them:
 *   - 11004, 12028, 19084 are in the non-fatal table, but their impact is NVLink traffic stalled
 *     and GPU access hanging (12028: "the GPU driver ... will abort CUDA jobs with Xid 45"), and
 *     their recovery a restart or a reset of all GPUs and switches: fail, REBOOT, as fatal ones
 *     (another checker's catalog, gpud's, marks 12028 fatal for the same reason);
 *   - the single-bit ECC codes are corrected by the switch ("No guest VM impact"), and 22013 "can
 *     be safely ignored": ok;
 *   - 20001 (TX replay), 20009 (RX short error rate), 10001/10002 (host PRIV error and timeout):
 *     warn, INVESTIGATE; 20012 (broken or inconsistent connection) and 10004 (thermal event
 *     start): warn, INSPECT_HARDWARE; 10005 (thermal event end): ok.
 */
struct sxid_range {
	int lo, hi;
};

static const struct sxid_range sxid_always_fatal[] = {
	{ 10003, 10003 }, { 12020, 12020 }, { 22003, 22003 }, { 22011, 22011 }, { 23001, 23017 },
};

static const struct sxid_range sxid_fatal[] = {
	{ 11001, 11001 }, { 11009, 11009 }, { 11013, 11013 }, { 11018, 11020 }, { 12001, 12002 },
	{ 12022, 12022 }, { 12024, 12027 }, { 12030, 12032 }, { 14017, 14017 }, { 15001, 15001 },
	{ 15006, 15006 }, { 15009, 15010 }, { 15012, 15013 }, { 19047, 19048 }, { 19054, 19054 },
	{ 19056, 19056 }, { 19058, 19058 }, { 19060, 19061 }, { 19063, 19064 }, { 19066, 19067 },
	{ 19069, 19070 }, { 20034, 20034 }, { 22012, 22012 }, { 24004, 24007 },
};

/* non-fatal and notable codes with the policy their Impact and Recovery columns give */
struct sxid_note {
	int lo, hi;
	const char *meaning;
	enum status status;
	enum action action;
	bool sticky;
};

static const struct sxid_note sxid_notes[] = {
	{ 10001, 10002, "NVSwitch host PRIV error or timeout", STATUS_WARN, ACTION_INVESTIGATE, 0 },
	{ 10004, 10004, "NVSwitch thermal event (links may drop to a single lane)", STATUS_WARN,
	  ACTION_INSPECT_HARDWARE, 0 },
	{ 10005, 10005, "NVSwitch thermal event ended", STATUS_OK, ACTION_NONE, 0 },
	{ 11004, 11004, "NVSwitch ingress invalid ACL: NVLink traffic stalls", STATUS_FAIL,
	  ACTION_REBOOT, 1 },
	{ 11012, 11012, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 11021, 11023, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 12021, 12021, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 12023, 12023, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 12028, 12028, "NVSwitch egress non-posted PRIV error: NVLink traffic stalls",
	  STATUS_FAIL, ACTION_REBOOT, 1 },
	{ 15008, 15008, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 15011, 15011, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19049, 19049, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19055, 19055, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19057, 19057, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19059, 19059, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19062, 19062, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19065, 19065, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19068, 19068, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19071, 19071, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
	{ 19084, 19084, "NVSwitch AN1 heartbeat timeout (with a fatal error: reset the fabric)",
	  STATUS_FAIL, ACTION_REBOOT, 1 },
	{ 20001, 20001, "NVSwitch TX replay error (NVLink throughput may drop)", STATUS_WARN,
	  ACTION_INVESTIGATE, 0 },
	{ 20009, 20009, "NVSwitch non-fatal error (RX short error rate)", STATUS_WARN,
	  ACTION_INVESTIGATE, 0 },
	{ 20012, 20012, "NVSwitch broken or inconsistent NVLink connection", STATUS_WARN,
	  ACTION_INSPECT_HARDWARE, 0 },
	{ 22013, 22013, "NVSwitch MINION link DLREQ interrupt (harmless)", STATUS_OK, ACTION_NONE,
	  0 },
	{ 24001, 24003, "NVSwitch single-bit ECC error, corrected", STATUS_OK, ACTION_NONE, 0 },
};

static bool in_ranges(const struct sxid_range *r, size_t n, int v)
{
	for (size_t i = 0; i < n; i++)
		if (v >= r[i].lo && v <= r[i].hi)
			return true;
	return false;
}

void sxid_classify(int sxid, int fatal_word, struct xid_policy *out)
{
	memset(out, 0, sizeof(*out));
	out->known = true;
	if (in_ranges(sxid_always_fatal, ARRAY_SIZE(sxid_always_fatal), sxid)) {
		set(out, "NVSwitch fatal error (always fatal)", STATUS_FAIL, ACTION_REBOOT, true);
		out->severity = SEV_CRITICAL;
		return;
	}
	if (in_ranges(sxid_fatal, ARRAY_SIZE(sxid_fatal), sxid)) {
		set(out, "NVSwitch fatal error", STATUS_FAIL, ACTION_REBOOT, true);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(sxid_notes); i++) {
		const struct sxid_note *n = &sxid_notes[i];
		if (sxid >= n->lo && sxid <= n->hi) {
			set(out, n->meaning, n->status, n->action, n->sticky);
			return;
		}
	}
	out->known = false;
	if (fatal_word == 1)
		set(out, "NVSwitch fatal error", STATUS_FAIL, ACTION_REBOOT, true);
	else if (fatal_word == 0)
		set(out, "NVSwitch non-fatal error", STATUS_WARN, ACTION_INVESTIGATE, false);
	else
		set(out, "NVSwitch error (severity not listed)", STATUS_WARN, ACTION_INVESTIGATE,
		    false);
}

const char *xid_action_text(enum action a)
{
	switch (a) {
	case ACTION_RESTART_APP: return "restart the application";
	case ACTION_RESET_GPU: return "reset the GPU";
	case ACTION_REBOOT: return "reboot the node";
	case ACTION_INSPECT_HARDWARE: return "inspect the hardware";
	case ACTION_REPLACE_CABLE: return "check or replace the cable";
	case ACTION_INVESTIGATE: return "investigate";
	case ACTION_CONTACT_SUPPORT: return "contact support";
	default: return "";
	}
}
