/*
 * classify.c: which class of vigil sim's failure model a recorded fault belongs to, from the
 * words the fleet wrote down: vigil's drain reasons ("vigil: " + the check's reason), Slurm's
 * own (Not responding, Kill task failed), other health checks' reasons, journal event details
 * and agent history keys. The Xid groups follow docs/kernel-log.md:
 * 79 off the bus; 48, 63, 64, 94, 95 and row remapping HBM; 74 and NVSwitch SXids NVLink;
 * 13, 31, 43 the application's own errors.
 */
#include "history.h"
#include "../lib/util.h"

#include <ctype.h>
#include <stdlib.h>

static const char *const class_names[FC_NR] = {
	"gpu_fell_off_bus", "gpu_hbm_ecc",   "nvlink",       "ib_link", "host_crash",
	"hang",             "slowdown",      "storage_stall", "software_bug", "sdc",
};

const char *fleet_class_name(int cls)
{
	if (cls >= 0 && cls < FC_NR)
		return class_names[cls];
	return cls == FC_PLANNED ? "planned" : "unclassified";
}

bool fleet_class_host_fault(int cls)
{
	/* as vigil sim's default model says (host_fault): the software classes are no host's */
	return cls >= 0 && cls < FC_NR && cls != FC_HANG && cls != FC_STORAGE_STALL &&
	       cls != FC_SOFTWARE_BUG;
}

static int xid_class(long x)
{
	switch (x) {
	case 79:
		return FC_GPU_FELL_OFF_BUS;
	case 48: case 63: case 64: case 94: case 95:
		return FC_GPU_HBM_ECC;
	case 74:
		return FC_NVLINK;
	case 13: case 31: case 43:
		return FC_SOFTWARE_BUG;
	}
	return FC_UNCLASSIFIED;
}

/* Case-insensitive search in a bounded copy. */
static bool has(const char *lower, const char *needle)
{
	return strstr(lower, needle) != NULL;
}

/* The number after "xid" (with ' ', ':', '=' between), or -1. SXid is looked for apart. */
static long find_xid(const char *lower)
{
	for (const char *p = lower; (p = strstr(p, "xid")); p += 3) {
		if (p > lower && p[-1] == 's')
			continue;
		const char *q = p + 3;
		while (*q == ' ' || *q == ':' || *q == '=')
			q++;
		if (isdigit((unsigned char)*q))
			return strtol(q, NULL, 10);
		/* the kernel's "Xid (PCI:0000:3b:00): 79, ..." */
		if (*q == '(') {
			const char *c = strchr(q, ')');
			if (c) {
				c++;
				while (*c == ':' || *c == ' ')
					c++;
				if (isdigit((unsigned char)*c))
					return strtol(c, NULL, 10);
			}
		}
	}
	return -1;
}

int fleet_classify_text(const char *text)
{
	char buf[512];
	size_t n = 0;
	if (!text)
		return FC_UNCLASSIFIED;
	for (; text[n] && n < sizeof(buf) - 1; n++)
		buf[n] = (char)tolower((unsigned char)text[n]);
	buf[n] = '\0';
	const char *s = buf;

	long xid = find_xid(s);
	if (xid >= 0 && xid_class(xid) != FC_UNCLASSIFIED)
		return xid_class(xid);
	if (has(s, "silent data corruption") || has(s, "sdc_"))
		return FC_SDC;
	if (has(s, "fallen off the bus") || has(s, "fell off the bus") || has(s, "gpu is lost") ||
	    has(s, "gpu lost"))
		return FC_GPU_FELL_OFF_BUS;
	if (has(s, "row remap") || has(s, "ecc error") || has(s, "uncorrectable ecc") ||
	    has(s, "double-bit") || has(s, "hbm"))
		return FC_GPU_HBM_ECC;
	if (has(s, "sxid") || has(s, "nvlink") || has(s, "nvswitch") || has(s, "fabricmanager"))
		return FC_NVLINK;
	if (has(s, "infiniband") || has(s, "mlx5") || has(s, "ib port") || has(s, "link_flap") ||
	    has(s, "link flap") || has(s, "link_downed") || has(s, "port_down") ||
	    has(s, "symbol error") || has(s, "hca") || has(s, "check_hw_ib") || has(s, " ib0") ||
	    has(s, "ib link"))
		return FC_IB_LINK;
	if (has(s, "silent") && has(s, "corrupt"))
		return FC_SDC;
	if (has(s, "throttl") || has(s, "thermal") || has(s, "slowdown") || has(s, "clock_events") ||
	    has(s, "slower"))
		return FC_SLOWDOWN;
	if (has(s, "storage") || has(s, "filesystem hangs") || has(s, "statfs") ||
	    has(s, "lustre") || has(s, "nfs") || has(s, "gpfs"))
		return FC_STORAGE_STALL;
	/* Slurm's own words for a node that went away (slurmctld: "Not responding", and the
	 * reason it sets when a node registers after an unplanned reboot) */
	if (has(s, "not responding") || has(s, "unexpectedly rebooted") ||
	    has(s, "unexpected reboot") || has(s, "node lost") || has(s, "node failure") ||
	    has(s, "kernel panic") || has(s, "power supply") || has(s, "psu"))
		return FC_HOST_CRASH;
	if (has(s, "kill task failed") || has(s, "hang") || has(s, "hung") ||
	    has(s, "watchdog") || has(s, "timed out") || has(s, "timeout"))
		return FC_HANG;
	if (has(s, "maint") || has(s, "reboot requested") || has(s, "reboot asap") ||
	    has(s, "upgrade") || has(s, "reserved") || has(s, "planned") || has(s, "decommission"))
		return FC_PLANNED;
	if (has(s, "traceback") || has(s, "exception") || has(s, "segfault") ||
	    has(s, "software") || has(s, "oom") || has(s, "out of memory"))
		return FC_SOFTWARE_BUG;
	return FC_UNCLASSIFIED;
}

int fleet_classify_key(const char *key)
{
	/* check|code|device[|xid=N][|sxid=N] (src/agent/history.c) */
	char check[64] = "", code[64] = "";
	const char *bar = strchr(key, '|');
	if (!bar)
		return FC_UNCLASSIFIED;
	snprintf(check, sizeof(check), "%.*s", (int)(bar - key), key);
	const char *bar2 = strchr(bar + 1, '|');
	size_t cl = bar2 ? (size_t)(bar2 - bar - 1) : strlen(bar + 1);
	snprintf(code, sizeof(code), "%.*s", (int)(cl < 63 ? cl : 63), bar + 1);
	const char *x = strstr(key, "|xid=");
	if (x) {
		int c = xid_class(strtol(x + 5, NULL, 10));
		if (c != FC_UNCLASSIFIED)
			return c;
	}
	if (strstr(key, "|sxid="))
		return FC_NVLINK;
	static const struct { const char *code; int cls; } codes[] = {
		{ "lost", FC_GPU_FELL_OFF_BUS },      { "gpu_off_bus", FC_GPU_FELL_OFF_BUS },
		{ "handle", FC_GPU_FELL_OFF_BUS },    { "count", FC_GPU_FELL_OFF_BUS },
		{ "ecc_uncorrected", FC_GPU_HBM_ECC }, { "row_remap_pending", FC_GPU_HBM_ECC },
		{ "row_remap_failure", FC_GPU_HBM_ECC }, { "row_remap_uncorrectable", FC_GPU_HBM_ECC },
		{ "remap_pending", FC_GPU_HBM_ECC },  { "remap_new", FC_GPU_HBM_ECC },
		{ "reset_required", FC_GPU_HBM_ECC }, { "nvlink_inactive", FC_NVLINK },
		{ "nvlink_errors", FC_NVLINK },       { "sxid", FC_NVLINK },
		{ "port_down", FC_IB_LINK },          { "link_downed", FC_IB_LINK },
		{ "link_flap", FC_IB_LINK },          { "link_error_recovery", FC_IB_LINK },
		{ "port_count", FC_IB_LINK },         { "clock_events", FC_SLOWDOWN },
		{ "thermal", FC_SLOWDOWN },           { "hw_slowdown", FC_SLOWDOWN },
		{ "probe", FC_STORAGE_STALL },        { "statfs", FC_STORAGE_STALL },
		{ "storage_stall", FC_STORAGE_STALL }, { "hung_task", FC_HANG },
		{ "gpu_hung", FC_HANG },              { "oom", FC_SOFTWARE_BUG },
	};
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (!strcmp(code, codes[i].code))
			return codes[i].cls;
	if (starts_with(code, "sdc_"))
		return FC_SDC;
	if (!strcmp(check, "infiniband"))
		return FC_IB_LINK;
	return FC_UNCLASSIFIED;
}
