/*
 * config_keys.c: the configuration schema (see config_keys.h). Ranges are those the readers
 * accept, so that a value the schema lets through is one the check, the agent or the test that
 * reads it can use, and a bad one stops the command at once (exit 2) with where it was written.
 */
#include "config_keys.h"
#include "../checks/check.h"

/* Counters and thresholds: any whole number a double holds exactly. */
#define MANY 9007199254740992.0
/* A week: the longest interval or window anything here waits on. */
#define WEEK 604800.0

#define CHECKS "check agent"

static const char *const on_unknown[] = { "nothing", "drain", NULL };
static const char *const peermem[] = { "required", "optional", NULL };
static const char *const swap[] = { "allowed", "warn", "fail", NULL };
static const char *const remap_pending[] = { "drain", "warn", NULL };

const struct config_key config_keys_fixed[] = {
	/* which checks run, and how long each may take */
	{ "check.skip", CONFIG_NAMES, 0, 0, CONFIG_LIST, NULL, CHECKS,
	  "checks not to run (comma-separated; reported as skipped)" },
	{ "check.timeout", CONFIG_SECONDS, 1, 3600, CONFIG_WHOLE, NULL, CHECKS,
	  "deadline of every check, in whole seconds (default: each check's own, see vigil list)" },
	{ "core.state-dir", CONFIG_PATH, 0, 0, CONFIG_HOST_ONLY, NULL, CHECKS,
	  "where readings are kept between runs (default /var/lib/vigil)" },

	{ "gpu.count", CONFIG_COUNT, 0, 1024, 0, NULL, CHECKS,
	  "GPUs expected (default: the node's Gres in Slurm's slurm.conf or gres.conf, else as many "
	  "as the PCI bus shows)" },
	{ "gpu.driver-version", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL, CHECKS,
	  "allowed driver versions (shell patterns)" },
	{ "gpu.vbios-version", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL, CHECKS,
	  "allowed VBIOS versions (shell patterns)" },
	{ "gpu.nvlink-links", CONFIG_COUNT, 0, 18, 0, NULL, CHECKS,
	  "active NVLink links expected per GPU (default: as many as the GPU has)" },
	{ "gpu.nvlink-error-threshold", CONFIG_COUNT, 0, MANY, 0, NULL, CHECKS,
	  "NVLink error counts rising by more than this warn (default 100)" },
	{ "gpu.nvlink-counter-interval", CONFIG_SECONDS, 0, WEEK, CONFIG_WHOLE, NULL, CHECKS,
	  "seconds between reads of the NVLink error counters (default 300)" },
	{ "gpu.remapped-rows-max", CONFIG_COUNT, 0, MANY, 0, NULL, CHECKS,
	  "remapped rows a GPU may have (default 512)" },
	{ "gpu.remap-pending", CONFIG_ENUM, 0, 0, 0, remap_pending, CHECKS,
	  "a GPU with a row remap pending: drain the node until it is reset, or only warn "
	  "(default drain)" },

	{ "kernel.window", CONFIG_SECONDS, 0, 31536000, CONFIG_MIN_EXCL, NULL, CHECKS,
	  "seconds after which an application-level event fades (default 3600)" },
	{ "kernel.strict", CONFIG_BOOL, 0, 0, 0, NULL, CHECKS,
	  "unknown kernel events of note count as failures (default false)" },
	{ "kernel.link-flaps", CONFIG_COUNT, 1, MANY, 0, NULL, CHECKS,
	  "link-down events of one device within the window that fail (default 3)" },
	{ "kernel.ce-rate", CONFIG_COUNT, 1, MANY, 0, NULL, CHECKS,
	  "corrected memory errors an hour (EDAC log lines and counters) that warn (default 60)" },
	{ "kernel.allow", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL, CHECKS,
	  "lines containing this text are ignored" },
	{ "kernel.ignore-xid", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL, CHECKS,
	  "Xid numbers to ignore (comma-separated)" },

	{ "pcie.ignore", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL, CHECKS,
	  "PCI addresses not to judge (comma-separated)" },

	{ "infiniband.hcas", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL, CHECKS,
	  "HCAs or HCA:port to judge (shell patterns; default all)" },
	{ "infiniband.ignore", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL, CHECKS,
	  "HCAs or HCA:port not to judge (shell patterns)" },
	{ "infiniband.include-ethernet", CONFIG_BOOL, 0, 0, 0, NULL, CHECKS,
	  "judge RoCE (Ethernet) ports too (default false)" },
	{ "infiniband.rate", CONFIG_NUMBER, 0, 1e6, 0, NULL, CHECKS,
	  "expected rate of every port in Gb/s (default: the port's own)" },
	{ "infiniband.count", CONFIG_COUNT, 0, 1024, 0, NULL, CHECKS, "ports expected" },
	{ "infiniband.error-rate", CONFIG_NUMBER, 0.001, 1e12, 0, NULL, CHECKS,
	  "errors per hour: a counter rising by this within an hour, or at this rate over longer, "
	  "alarms (default 10)" },
	{ "infiniband.symbol-error-rate", CONFIG_NUMBER, 0.001, 1e12, 0, NULL, CHECKS,
	  "the same for symbol_error, per hour (default: infiniband.error-rate)" },
	{ "infiniband.min-rise", CONFIG_COUNT, 1, MANY, 0, NULL, CHECKS,
	  "a smaller counter rise never alarms, whatever its rate (default 5)" },
	{ "infiniband.counter-threshold", CONFIG_COUNT, 1, MANY, 0, NULL, CHECKS,
	  "deprecated: read as infiniband.error-rate (the same number, per hour)" },
	{ "infiniband.link-downed-threshold", CONFIG_COUNT, 1, MANY, 0, NULL, CHECKS,
	  "link_downed rising by this much, in any time, fails (default 1)" },

	{ "storage.mount", CONFIG_PATH, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL,
	  CHECKS " gather",
	  "mounts whose space and inodes are judged (default /)" },
	{ "storage.require", CONFIG_PATH, 0, 0, CONFIG_LIST | CONFIG_FIXTURE_OK, NULL,
	  CHECKS " gather",
	  "paths that must be mount points" },
	{ "storage.probe", CONFIG_PATH, 0, 0, CONFIG_LIST | CONFIG_HOST_ONLY, NULL,
	  CHECKS " gather",
	  "directories where a file is written, synced, read and removed" },
	{ "storage.usage-threshold", CONFIG_PERCENT, 5, 100, CONFIG_MIN_EXCL, NULL, CHECKS,
	  "space or inode use above this percentage fails (default 95)" },
	{ "storage.probe-timeout", CONFIG_SECONDS, 0, 3600, CONFIG_MIN_EXCL, NULL, CHECKS,
	  "seconds one probe may take (default 5)" },
	{ "storage.probe-size", CONFIG_SIZE, 1, 67108864, 0, NULL, CHECKS,
	  "bytes each probe writes (default 1048576)" },
	{ "storage.probe-file", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, CHECKS,
	  "name of the probe's file in each probe directory" },

	{ "system.peermem", CONFIG_ENUM, 0, 0, 0, peermem, CHECKS,
	  "whether nvidia_peermem must be loaded (default optional)" },
	{ "system.governor", CONFIG_STRING, 0, 0, CONFIG_FIXTURE_OK, NULL, CHECKS,
	  "CPU frequency governor wanted, or any (default performance)" },
	{ "system.min-freq-ratio", CONFIG_NUMBER, 0, 1, 0, NULL, CHECKS,
	  "median CPU frequency below this share of the maximum warns (default 0: off)" },
	{ "system.swap", CONFIG_ENUM, 0, 0, 0, swap, CHECKS, "what swap in use is (default warn)" },
	{ "system.min-available", CONFIG_PERCENT, 0, 100, 0, NULL, CHECKS,
	  "available memory below this percentage fails (default 5)" },

	{ "slurm.on-unknown", CONFIG_ENUM, 0, 0, 0, on_unknown, "check fleet qualify",
	  "what --slurm does with an unknown verdict (default nothing)" },
	{ "slurm.timeout", CONFIG_SECONDS, 0, 600, CONFIG_MIN_EXCL, NULL, "check fleet run qualify",
	  "deadline of each Slurm command (default 10)" },
	{ "slurm.scontrol", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "check fleet run qualify",
	  "the scontrol program (default scontrol on PATH)" },
	{ "slurm.sinfo", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "check fleet run",
	  "the sinfo program (default sinfo on PATH)" },
	{ "slurm.srun", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "fleet run qualify",
	  "the srun program (default srun)" },
	{ "slurm.scancel", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "run",
	  "the scancel program (default scancel)" },

	{ "agent.interval", CONFIG_SECONDS, 1, WEEK, 0, NULL, "agent check",
	  "seconds between cycles (default 60)" },
	{ "agent.jitter", CONFIG_SECONDS, 0, WEEK, 0, NULL, "agent",
	  "random +- seconds on each interval (default interval/10)" },
	{ "agent.max-age", CONFIG_SECONDS, 1, WEEK, 0, NULL, "agent check",
	  "seconds after which the kept result is unknown (default three of the intervals the "
	  "agent recorded)" },
	{ "agent.timeout", CONFIG_SECONDS, 1, WEEK, 0, NULL, "agent",
	  "deadline of one cycle of checks (default 30)" },
	{ "agent.escalate-after", CONFIG_COUNT, 0, 1000, 0, NULL, "agent",
	  "reboots a hardware finding may survive before INSPECT_HARDWARE (default 2; 0 never)" },
	{ "agent.listen", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "agent",
	  "address:port of /metrics and /health, or off (default 127.0.0.1:9847)" },
	{ "agent.socket", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "agent check",
	  "Unix socket serving /health and /gpu-reading apart from the HTTP connections, or off "
	  "(default STATE/agent.sock); vigil check takes its GPU reading there" },
	{ "agent.prom", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "agent",
	  "also write Prometheus text to this file each cycle" },
	{ "agent.gpu-worker", CONFIG_BOOL, 0, 0, 0, NULL, "agent",
	  "run the gpu check in one process that keeps NVML initialised (default true; false: "
	  "a fresh process each cycle)" },
	{ "agent.gpu-telemetry", CONFIG_BOOL, 0, 0, 0, NULL, "agent",
	  "per-GPU telemetry (temperature, power, clocks, ECC, NVLink, Xids) in /metrics, read "
	  "by the gpu worker (default true)" },

	{ "deep.duration", CONFIG_SECONDS, 0, 86400, CONFIG_MIN_EXCL, NULL, "check",
	  "seconds of vigil stress gpu under check --deep (default 20)" },

	{ "fleet.timeout", CONFIG_SECONDS, 0, 3600, CONFIG_MIN_EXCL, NULL, "fleet",
	  "deadline of each node (default 60)" },
	{ "fleet.parallel", CONFIG_COUNT, 1, 1024, 0, NULL, "fleet",
	  "nodes checked at once (default 32)" },
	{ "fleet.one-step", CONFIG_BOOL, 0, 0, 0, NULL, "fleet qualify",
	  "check all the nodes in one srun step, one task a node (default true; false: one srun "
	  "a node, fleet.parallel at once)" },
	{ "fleet.command", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "fleet run qualify",
	  "the vigil that srun starts on each node (default this program)" },
	{ "fleet.srun-arg", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_HOST_ONLY, NULL, "fleet run qualify",
	  "one more argument to srun (repeatable)" },

	{ "qualify.storage-size", CONFIG_SIZE, 4096, 1099511627776.0, 0, NULL, "qualify",
	  "bytes each node writes in the storage stage (default 4294967296)" },
	{ "qualify.storage-writers", CONFIG_COUNT, 1, 256, 0, NULL, "qualify",
	  "writer processes on each node in the storage stage (default 8)" },
	{ "qualify.stall-ms", CONFIG_COUNT, 1, 3600000, 0, NULL, "qualify",
	  "a storage operation slower than this is a stall, by node (default 10000)" },
	{ "qualify.outlier-margin", CONFIG_NUMBER, 0, 1, CONFIG_MAX_EXCL, NULL, "qualify",
	  "a node this fraction worse than the median of its peers in a figure is an outlier "
	  "(default 0.10)" },
	{ "qualify.expected-busbw", CONFIG_NUMBER, 0, 100000, 0, NULL, "qualify",
	  "NCCL busbw in GB/s the fabric should give across nodes (default 0: not known; only "
	  "the fall-off is judged)" },
	{ "qualify.busbw-floor", CONFIG_NUMBER, 0, 1, 0, NULL, "qualify",
	  "a fabric point below this fraction of qualify.expected-busbw fails (default 0.8)" },
	{ "qualify.topology", CONFIG_PATH, 0, 0, CONFIG_HOST_ONLY, NULL, "qualify",
	  "the fabric for the burn-in step: ibnetdiscover or iblinkinfo output, or a fat-tree "
	  "file (default: ibnetdiscover run on the first node)" },
	{ "qualify.port", CONFIG_COUNT, 1024, 65000, 0, NULL, "qualify",
	  "first TCP port of the fabric stage's NCCL rendezvous, one per point (default 29650)" },

	{ "run.nodes", CONFIG_COUNT, 1, 65536, 0, NULL, "run",
	  "hosts a run uses (default: the allocation minus the spares)" },
	{ "run.spares", CONFIG_COUNT, 0, 65536, 0, NULL, "run",
	  "hosts kept aside to replace sick ones (default 0)" },
	{ "run.hosts", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "run",
	  "use only these hosts of the allocation, a Slurm hostlist (default: all of it)" },
	{ "run.tasks-per-node", CONFIG_COUNT, 1, 1024, 0, NULL, "run",
	  "ranks on each host (default 1)" },
	{ "run.run-dir", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "run",
	  "the run's directory (default ./vigil-run-$SLURM_JOB_ID)" },
	{ "run.max-restarts", CONFIG_COUNT, 0, 1000, 0, NULL, "run",
	  "relaunches allowed (default 10)" },
	{ "run.step-pattern", CONFIG_STRING, 0, 0, CONFIG_FIXTURE_OK, NULL, "run",
	  "POSIX extended regex whose first group is the step (default: the usual forms)" },
	{ "run.hang-after", CONFIG_NUMBER, 1, 1000, 0, NULL, "run",
	  "a hang is no new step for this many median step times (default 3)" },
	{ "run.hang-floor", CONFIG_SECONDS, 0, WEEK, CONFIG_MIN_EXCL, NULL, "run",
	  "the least seconds without a step that count as a hang (default 60)" },
	{ "run.startup-timeout", CONFIG_SECONDS, 0, WEEK, CONFIG_MIN_EXCL, NULL, "run",
	  "seconds from the launch to the first step (default 300)" },
	{ "run.slow-factor", CONFIG_NUMBER, 1, 1000, CONFIG_MIN_EXCL, NULL, "run",
	  "a step over this many times the running median is slow (default 2)" },
	{ "run.slow-steps", CONFIG_COUNT, 1, 100000, 0, NULL, "run",
	  "slow steps in a row that make a slowdown (default 5)" },
	{ "run.check-interval", CONFIG_SECONDS, 0, WEEK, 0, NULL, "run",
	  "seconds between vigil checks of the run's nodes while it runs; 0: none (default 30)" },
	{ "run.check-timeout", CONFIG_SECONDS, 0, 3600, CONFIG_MIN_EXCL, NULL, "run",
	  "deadline of one node's vigil check (default 60)" },
	{ "run.check-arg", CONFIG_STRING, 0, 0, CONFIG_LIST | CONFIG_HOST_ONLY, NULL, "run",
	  "one more argument of the nodes' vigil check (repeatable; e.g. --cached)" },
	{ "run.node-poll", CONFIG_SECONDS, 0, 3600, CONFIG_MIN_EXCL, NULL, "run",
	  "seconds between reads of Slurm's state of the run's nodes (default 5)" },
	{ "run.stacks-timeout", CONFIG_SECONDS, 0, 3600, CONFIG_MIN_EXCL, NULL, "run",
	  "deadline of one node's vigil stacks (default 30)" },
	{ "run.smoke", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "run",
	  "the group-testing command, words split on spaces (default: CMD with VIGIL_SMOKE=1)" },
	{ "run.smoke-timeout", CONFIG_SECONDS, 0, WEEK, CONFIG_MIN_EXCL, NULL, "run",
	  "deadline of one smoke run (default 300)" },
	{ "run.sdc-test", CONFIG_STRING, 0, 0, CONFIG_HOST_ONLY, NULL, "run",
	  "the test a host whose replica diverged must pass alone, words split on spaces; exit 1 "
	  "drains it, another status could not tell (default: vigil stress gpu --determinism, "
	  "with fleet.command's vigil)" },
	{ "run.restart-delay", CONFIG_SECONDS, 0, 3600, 0, NULL, "run",
	  "seconds between a stop and the next launch (default 2)" },
	{ "run.grace", CONFIG_SECONDS, 0, 3600, 0, NULL, "run",
	  "seconds between TERM and KILL when a step is stopped (default 10)" },
	{ "run.master-port", CONFIG_COUNT, 1024, 63535, 0, NULL, "run qualify",
	  "MASTER_PORT of attempt 0; attempt k uses this + k % 1000 (default 29500)" },
	{ "run.python-stacks", CONFIG_BOOL, 0, 0, 0, NULL, "run",
	  "put the faulthandler hook on the trainer's PYTHONPATH (default true)" },
	{ "run.drain", CONFIG_BOOL, 0, 0, 0, NULL, "run",
	  "drain the hosts a run excludes (default true)" },
	{ "run.nccl-recorder", CONFIG_BOOL, 0, 0, 0, NULL, "run",
	  "load vigil's NCCL flight recorder (libnccl-profiler-vigil.so) into the ranks; on a hang "
	  "vigil diagnose hang names the rank that stopped the collective (default false)" },
	{ "run.agent-cache", CONFIG_BOOL, 0, 0, 0, NULL, "run",
	  "ask each node's vigil agent for its cached result first; a node without a fresh one "
	  "is checked afresh (default true)" },

	{ "stress.floor-fraction", CONFIG_NUMBER, 0, 1, 0, NULL, "stress net check",
	  "share of the model's measured figure below which a result fails (default 0.85)" },
	{ "stress.floor-bf16", CONFIG_NUMBER, 0, 1e6, 0, NULL, "stress check",
	  "BF16 GEMM floor, TFLOP/s (default: from the model table)" },
	{ "stress.floor-fp16", CONFIG_NUMBER, 0, 1e6, 0, NULL, "stress check",
	  "FP16 GEMM floor, TFLOP/s" },
	{ "stress.floor-tf32", CONFIG_NUMBER, 0, 1e6, 0, NULL, "stress check",
	  "TF32 GEMM floor, TFLOP/s" },
	{ "stress.floor-fp8", CONFIG_NUMBER, 0, 1e6, 0, NULL, "stress check",
	  "FP8 GEMM floor, TFLOP/s" },
	{ "stress.floor-hbm-read", CONFIG_NUMBER, 0, 1e6, 0, NULL, "stress check",
	  "HBM read floor, GB/s" },
	{ "stress.floor-hbm-write", CONFIG_NUMBER, 0, 1e6, 0, NULL, "stress check",
	  "HBM write floor, GB/s" },
	{ "stress.floor-hbm-copy", CONFIG_NUMBER, 0, 1e6, 0, NULL, "stress check",
	  "HBM copy floor, GB/s" },
	{ "stress.outlier-margin", CONFIG_NUMBER, 0, 1, CONFIG_MAX_EXCL, NULL, "stress check",
	  "a GPU this share below the median of the others warns (default 0.10)" },
	{ "stress.memtest-min-fraction", CONFIG_NUMBER, 0, 1, 0, NULL, "stress check",
	  "share of free memory the memory test must cover (default 0.5)" },

	{ "net.floor-busbw", CONFIG_NUMBER, 0, 1e6, 0, NULL, "net check",
	  "NCCL bus bandwidth floor, GB/s (default: from the model table)" },
	{ "net.floor-pair", CONFIG_NUMBER, 0, 1e6, 0, NULL, "net check",
	  "GPU pair bandwidth floor, GB/s, one way" },
	{ "net.floor-min-bytes", CONFIG_SIZE, 0, MANY, 0, NULL, "net check",
	  "message size from which the busbw floor applies (default 1073741824)" },
	{ "net.outlier-margin", CONFIG_NUMBER, 0, 1, CONFIG_MAX_EXCL, NULL, "net check",
	  "a pair this share below the median of the others warns (default 0.15)" },
	{ "net.ib-floor-gbps", CONFIG_NUMBER, 0, 1e6, 0, NULL, "net",
	  "vigil net ib: bandwidth floor per HCA, Gb/s (default 360)" },
	{ "net.ib-lat-p99-us", CONFIG_NUMBER, 0, 1e6, 0, NULL, "net",
	  "vigil net ib: ib_read_lat p99 ceiling, us; 0 does not judge it (default 4.2)" },
};
const size_t config_keys_fixed_nr = ARRAY_SIZE(config_keys_fixed);

const struct config_key config_keys_per_check[] = {
	{ "<check>.enabled", CONFIG_BOOL, 0, 0, 0, NULL, CHECKS,
	  "false: the check does not run and is reported as skipped" },
	{ "<check>.timeout", CONFIG_SECONDS, 1, 3600, CONFIG_WHOLE, NULL, CHECKS,
	  "deadline of this check, in whole seconds (default check.timeout, else its own)" },
};
const size_t config_keys_per_check_nr = ARRAY_SIZE(config_keys_per_check);

const struct config_key *config_schema(size_t *nr)
{
	static struct config_key *all;
	static size_t nr_all;
	static const char **check_names;
	if (!all) {
		size_t n = config_keys_fixed_nr + check_table_nr * config_keys_per_check_nr;
		check_names = xcalloc(check_table_nr + 1, sizeof(*check_names));
		for (size_t i = 0; i < check_table_nr; i++)
			check_names[i] = check_table[i].name;
		all = xcalloc(n, sizeof(*all));
		for (size_t i = 0; i < config_keys_fixed_nr; i++) {
			all[nr_all] = config_keys_fixed[i];
			if (!strcmp(all[nr_all].name, "check.skip"))
				all[nr_all].choices = check_names;
			nr_all++;
		}
		for (size_t c = 0; c < check_table_nr; c++) {
			for (size_t i = 0; i < config_keys_per_check_nr; i++) {
				struct config_key *k = &all[nr_all++];
				*k = config_keys_per_check[i];
				struct strbuf name = STRBUF_INIT;
				strbuf_addf(&name, "%s%s", check_table[c].name,
					    strchr(k->name, '.'));
				k->name = strbuf_detach(&name, NULL);
			}
		}
	}
	*nr = nr_all;
	return all;
}

int config_keys_validate(const struct config *cfg, struct strbuf *err)
{
	size_t nr;
	const struct config_key *keys = config_schema(&nr);
	return config_validate(cfg, keys, nr, err);
}
