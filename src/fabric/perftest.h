/*
 * perftest.h: reading what perftest's ib_write_bw and ib_read_lat said (their --out_json file,
 * or the text table where the build has no --out_json), telling why a run failed from its
 * output, and judging one HCA's figures against the floors (docs/FABRIC.md). Pure: no child
 * is started here ('vigil net ib' in src/cmd/net.c runs them).
 *
 * Ownership: plain structs, nothing to free.
 */
#ifndef VIGIL_FABRIC_PERFTEST_H
#define VIGIL_FABRIC_PERFTEST_H

#include "../core/finding.h"
#include "../lib/strbuf.h"

enum pt_kind { PT_BW, PT_LAT };

/* One test's figures. Bandwidth in Gb/s (vigil always passes --report_gbits), times in µs. */
struct pt_result {
	bool have;           /* a result row was understood */
	uint64_t bytes, iters;
	double bw_peak, bw_avg, msg_rate;
	double t_min, t_max, t_typical, t_avg, t_stdev, p99, p999;
	bool have_p99;       /* the duration mode of ib_read_lat reports only t_avg */
	int cuda_device;     /* the JSON file's cuda_device, -1 when not said */
	char device[64];     /* the JSON file's test_info.Device, "" when not said */
};

/*
 * Parse the --out_json file of one test. 0, or -1 with *err ("no 'results' object", "'BW_average'
 * is not a number"); a figure that is negative, not finite or absurd (over 100,000 Gb/s, over a
 * second of latency) is refused, not believed.
 */
int pt_parse_json(const char *text, size_t len, enum pt_kind kind, struct pt_result *r,
		  struct strbuf *err);
/*
 * Parse the text a test printed: the header line (' #bytes #iterations BW peak[Gb/sec] ...' or
 * the latency one) and the row under it. A bandwidth table in MiB/sec is refused (the floors are
 * in Gb/s and a unit guessed is a verdict guessed). 0, or -1 with *err.
 */
int pt_parse_text(const char *text, size_t len, enum pt_kind kind, struct pt_result *r,
		  struct strbuf *err);

/* Why a run that did not give figures failed, read from its output. */
enum pt_cause {
	PT_CAUSE_OTHER,     /* nothing known in the output */
	PT_CAUSE_NO_DEVICE, /* no RDMA device, or not the one asked for */
	PT_CAUSE_NO_PEER,   /* the TCP connection to the other side failed */
	PT_CAUSE_TRANSPORT, /* the fabric failed under load: completion errors, QP transitions */
	PT_CAUSE_NO_CUDA,   /* this build has no --use_cuda, or CUDA did not start */
	PT_CAUSE_USAGE,     /* perftest refused its arguments */
};
enum pt_cause pt_failure_cause(const char *out, size_t len);
const char *pt_cause_name(enum pt_cause c);

/* How one test ended, as the command saw it. */
enum pt_outcome {
	PT_RAN,            /* exited 0 (figures in result, or not understood: see why) */
	PT_NOT_RUN,        /* not asked for (latency off) */
	PT_MISSING,        /* the program is not installed */
	PT_TIMED_OUT,      /* killed at its deadline */
	PT_FAILED,         /* exited non-zero or was killed; cause from its output */
	PT_NOT_UNDERSTOOD, /* exited 0 but no figures could be read */
};

struct pt_test {
	enum pt_outcome outcome;
	enum pt_cause cause;
	const char *program; /* "ib_write_bw" */
	char why[320];       /* how it ended and what it said, clean, for the message */
	struct pt_result r;
};

/* One HCA of this host, both tests. */
struct pt_hca {
	char hca[64];
	int cuda;          /* GPU given as --use_cuda, -1: host memory */
	bool cuda_wanted;  /* a GPU was there, but perftest could not use it */
	bool server;       /* the serving side: a test that ran is "served", it has no figures */
	struct pt_test bw, lat;
};

struct pt_floors {
	double bw_gbps;    /* average bandwidth floor, per HCA */
	double lat_p99_us; /* ib_read_lat 99th percentile ceiling; 0: not judged */
};

#define PT_FLOOR_BW_GBPS 360.0
#define PT_FLOOR_LAT_P99_US 4.2

/*
 * Findings for one HCA into res: code "ib_bw" (ok, or fail "below the floor"), "ib_lat" (ok,
 * or warn over the ceiling), "ib_error" (fail: the fabric failed under load), and unknown by
 * name for a missing perftest, a device perftest does not see, a peer that never answered, a
 * deadline, and output that was not understood. Device: "mlx5_0". On the serving side a test
 * that ran is "ib_served" (ok): the client has the figures.
 */
void pt_evaluate(const struct pt_hca *h, const struct pt_floors *f, struct check_result *res);

#endif
