/*
 * infiniband.h: the 'infiniband' check: port state, rate and error counters rising between runs
 * (see infiniband.c and docs/checks-host.md).
 */
#ifndef VIGIL_CHECK_INFINIBAND_H
#define VIGIL_CHECK_INFINIBAND_H

#include "check.h"
#include "../lib/statefile.h"
#include "../lib/strlist.h"

#define IB_STATE_FILE "infiniband.state"
#define IB_CLASS_DIR "/sys/class/infiniband"

enum ib_counter {
	IBC_SYMBOL_ERROR,
	IBC_LINK_DOWNED,
	IBC_LINK_ERROR_RECOVERY,
	IBC_PORT_RCV_ERRORS,
	IBC_LOCAL_LINK_INTEGRITY_ERRORS,
	IBC_EXCESSIVE_BUFFER_OVERRUN_ERRORS,
	IBC_PORT_RCV_REMOTE_PHYSICAL_ERRORS,
	IBC_PORT_XMIT_DISCARDS,
	IBC__COUNT
};

struct ib_counter_def {
	const char *name;   /* file under counters/ */
	bool fails;         /* a rise fails the host (else it warns) */
	unsigned bits;      /* width in the PMA PortCounters attribute: it saturates there */
	enum action action;
	const char *meaning; /* for the message */
};
extern const struct ib_counter_def ib_counters[IBC__COUNT];

struct ib_port {
	char hca[64];
	unsigned port;
	char state[32];      /* "4: ACTIVE" */
	char phys_state[48]; /* "5: LinkUp" */
	char rate[64];       /* "400 Gb/sec (4X NDR)"; "" when unreadable (down ports) */
	char link_layer[32]; /* "InfiniBand", "Ethernet" */
	int state_num, phys_num; /* the leading numbers; -1 when unparsable */
	double rate_gbps;        /* 0 when unknown */
	/*
	 * Why a value could not be read ("" when it could), naming the file. error: the port as
	 * a whole (its state, or the HCA's ports directory when port is 0); the others matter
	 * only where the value is judged (rate and phys_state of down ports are not).
	 */
	char error[192];
	char phys_error[192], rate_error[192], layer_error[192];
	bool have[IBC__COUNT];       /* the counter was read (missing: the driver has none) */
	bool unreadable[IBC__COUNT]; /* the counter file exists but could not be read or parsed */
	char counter_error[192];     /* the first of those */
	uint64_t counter[IBC__COUNT];
	bool have_prev[IBC__COUNT]; /* the last run's reading of this counter */
	uint64_t prev[IBC__COUNT];
};

struct ib_readings {
	struct ib_port *ports;
	size_t nr, alloc;
	bool state_dir;  /* a state directory exists */
	bool have_state; /* it held a previous reading */
	enum statefile_base base; /* what that reading is worth (BASE_FIRST when none) */
	double age;      /* seconds since it was taken (-1: unknown) */
	double base_time; /* when it was taken, to keep it as the baseline (0: unknown) */
	double now, boot; /* this run's time and the host's boot time (-1: unknown) */
	char state_error[256]; /* why the state file was not usable ("" when it was or is absent) */
};

struct ib_options {
	struct strlist hcas;     /* patterns: "mlx5_0", "mlx5_*", "mlx5_0:1"; empty: all */
	struct strlist ignore;   /* same patterns */
	bool include_ethernet;   /* check RoCE (link_layer Ethernet) ports too */
	double rate;             /* expected Gb/s for InfiniBand ports; 0: the highest seen */
	uint64_t count;          /* expected active ports */
	bool count_set;
	double error_rate;       /* per hour: a rise of this within an hour, or this rate longer */
	double symbol_error_rate; /* the same for symbol_error */
	uint64_t min_rise;       /* a smaller rise never alarms, whatever its rate */
	uint64_t link_downed_threshold; /* a count: any such rise alarms, however slow */
};

/* "4: ACTIVE" -> 4; -1 when there is no leading number. */
int ib_parse_state(const char *s);
/* The kernel's name of a state number (phys: of a phys_state), and whether text like "4: ACTIVE"
 * names its number as the kernel does. */
const char *ib_port_state_name(int num, bool phys);
bool ib_state_agrees(const char *s, int num, bool phys);
/* "400 Gb/sec (4X NDR)" -> 400; false when unparsable. */
bool ib_parse_rate(const char *s, double *gbps);

/* Read every port (and the last reading from ctx->state_dir). 0, or -1 with *err. */
int ib_gather(const struct check_ctx *ctx, struct ib_readings *r, struct strbuf *err);
/* The state file (statefile.h, kind "infiniband", names "HCA PORT COUNTER", and its time base
 * "@time"/"@boot"): parse its text into the ports' prev values and r->base/age against r->now
 * and r->boot (nothing when it is not such a file) / format what the next run compares with:
 * the kept baseline while it is under STATEFILE_BASELINE_S old, else this reading. */
void ib_state_apply(struct ib_readings *r, const char *text);
void ib_state_format(const struct ib_readings *r, struct strbuf *out);
/* (infiniband_state.c) Set r->now/boot and read the kept reading from ctx->state_dir into the
 * ports (gather calls it) / keep what the next run compares with (a "state" warning when it
 * cannot be written). */
void ib_state_load(const struct check_ctx *ctx, struct ib_readings *r);
void ib_state_save(const struct check_ctx *ctx, const struct ib_readings *r,
		   struct check_result *res);
/* Pure: findings for the readings. */
void ib_evaluate(const struct ib_readings *r, const struct ib_options *opt,
		 struct check_result *res);
int ib_options_load(const struct config *cfg, struct ib_options *opt, struct strbuf *err);
void ib_options_release(struct ib_options *opt);
void ib_readings_release(struct ib_readings *r);

int check_infiniband_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
