/*
 * nvml_lite.cuh: what the CUDA helpers read from NVML while they load the GPUs: health counters
 * before and after (volatile ECC, remapped rows), Xid events as they happen, and telemetry
 * samples (temperature, power, SM clock, clock event reasons) every 200 ms.
 *
 * NVML is dlopen'ed (libnvidia-ml.so.1): the helpers must run where it is absent or refuses,
 * and then say so ("nvml": "unavailable: ...") instead of reporting zeros as if they were readings.
 * The few declarations used are written out here (no nvml.h on CI); values and layouts follow
 * NVIDIA's nvml.h of CUDA 13.0, as src/gpu/nvml.h does for vigil itself.
 */
#ifndef VIGIL_CUDA_NVML_LITE_CUH
#define VIGIL_CUDA_NVML_LITE_CUH

#include "common.cuh"

#include <thread>

struct nvml_health {
	bool ok = false;           /* read at all */
	int ecc_rc = -1, remap_rc = -1;
	unsigned long long ecc_corrected = 0, ecc_uncorrected = 0;
	unsigned remap_correctable = 0, remap_uncorrectable = 0, remap_pending = 0,
		 remap_failure = 0;
	std::string json() const;
};

struct nvml_telemetry {
	unsigned samples = 0;
	double temp_max = NAN, temp_sum = 0;
	double power_max_w = NAN, power_sum_w = 0;
	double sm_clock_min = NAN, sm_clock_sum = 0;
	unsigned long long reasons_seen = 0;
	unsigned thermal_samples = 0, power_brake_samples = 0, hw_slowdown_samples = 0;
	unsigned temp_n = 0, power_n = 0, clock_n = 0;
	unsigned other_processes_max = 0;      /* processes of others on the GPU at once */
	std::vector<unsigned> other_pids;
	std::string json() const;
};

/* A compute process of someone else seen on a GPU (nvmlDeviceGetComputeRunningProcesses, this
 * helper's own pid left out): when, how often, and its name from /proc/PID/comm when this pid
 * namespace has it. Any such process makes the figures of that GPU untrustworthy. */
enum { PROC_AT_START = 1, PROC_DURING = 2, PROC_AT_END = 4 };
struct nvml_proc {
	unsigned pid = 0;
	unsigned long long used_bytes = 0;
	std::string name;
	unsigned phases = 0; /* PROC_* */
	unsigned samples = 0;
	double first_s = 0, last_s = 0;
	std::string json() const;
};
std::string nvml_procs_json(const std::vector<nvml_proc> &v);

struct nvml_xid {
	unsigned long long xid;
	double at_s;
};

/* One per process; devices are the CUDA ordinals being tested. */
struct nvml_watch {
	bool available = false;
	std::string why; /* why not available */
	bool xid_supported = false;
	std::string xid_note;

	bool start(const std::vector<int> &cuda_devs);
	void stop();  /* stop sampling and watching (readings stay) */
	void close(); /* release NVML */
	/* Health of CUDA device dev now. */
	nvml_health health(int dev);
	nvml_telemetry telemetry(int dev);
	std::vector<nvml_xid> xids(int dev);
	/* List the other compute processes on CUDA device dev now, recording them under phase
	 * (PROC_AT_START, PROC_DURING, PROC_AT_END). False when NVML could not list them. */
	bool procs_now(int dev, unsigned phase);
	std::vector<nvml_proc> procs(int dev);
	/* "ok", or why processes are not listed */
	std::string procs_watch;
	~nvml_watch() { close(); }

private:
	struct dev_state;
	std::vector<dev_state *> devs;
	std::thread sampler, xid_thread;
	std::atomic<bool> running{ false };
	void *event_set = nullptr;
	std::mutex lock;
	double t0 = 0;
	void sample_loop();
	bool record_procs(dev_state *s, unsigned phase);
	void xid_loop();
};

#endif
