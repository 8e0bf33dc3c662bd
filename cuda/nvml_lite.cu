/* nvml_lite.cu: NVML loaded at run time for health counters, Xid events and telemetry. */
#include "nvml_lite.cuh"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;

enum { NV_SUCCESS = 0, NV_TIMEOUT = 10 };
#define NV_EVENT_XID 0x8ULL
#define NV_REASON_HW_SLOWDOWN 0x8ULL
#define NV_REASON_SW_THERMAL 0x20ULL
#define NV_REASON_HW_THERMAL 0x40ULL
#define NV_REASON_POWER_BRAKE 0x80ULL

static struct {
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*by_pci)(const char *, nvmlDevice_t *);
	nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*remap)(nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *);
	nvmlReturn_t (*set_create)(nvmlEventSet_t *);
	nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*set_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);
	nvmlReturn_t (*set_free)(nvmlEventSet_t);
	nvmlReturn_t (*procs)(nvmlDevice_t, unsigned *, void *);
} nv;

/* nvmlProcessInfo_t of the _v2/_v3 calls */
struct nv_proc {
	unsigned int pid;
	unsigned long long used;
	unsigned int gi, ci;
};

struct nvml_watch::dev_state {
	int cuda_dev;
	nvmlDevice_t h = nullptr;
	nvml_telemetry tel;
	std::vector<nvml_xid> xids;
	std::vector<nvml_proc> procs;
};

/* The name of pid from /proc/PID/comm in this pid namespace, "" when it has none; bytes that
 * are not printable ASCII become '?' (vigil quotes it again, but the JSON stays plain). */
static std::string proc_comm(unsigned pid)
{
	char path[64], buf[64];
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return "";
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	::close(fd);
	if (n <= 0)
		return "";
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		n--;
	std::string out;
	for (ssize_t i = 0; i < n; i++)
		out += buf[i] >= 0x20 && buf[i] < 0x7f ? buf[i] : '?';
	return out;
}

std::string nvml_proc::json() const
{
	jw j;
	j.num("pid", pid);
	if (!name.empty())
		j.str("name", name);
	if (used_bytes != ~0ULL)
		j.u64("used_bytes", used_bytes);
	j.boolean("at_start", phases & PROC_AT_START);
	j.boolean("during", phases & PROC_DURING);
	j.boolean("at_end", phases & PROC_AT_END);
	j.num("samples", samples);
	j.num("first_s", std::round(first_s * 10) / 10);
	j.num("last_s", std::round(last_s * 10) / 10);
	return j.done();
}

std::string nvml_procs_json(const std::vector<nvml_proc> &v)
{
	std::string s = "[";
	for (size_t i = 0; i < v.size(); i++)
		s += (i ? "," : "") + v[i].json();
	return s + "]";
}

static void *sym(const char *a, const char *b)
{
	void *p = dlsym(nv.lib, a);
	if (!p && b)
		p = dlsym(nv.lib, b);
	return p;
}

static std::string nv_err(nvmlReturn_t rc)
{
	if (nv.error_string)
		return nv.error_string(rc);
	return "error " + std::to_string(rc);
}

std::string nvml_health::json() const
{
	jw j;
	j.boolean("read", ok);
	if (ecc_rc == NV_SUCCESS) {
		j.u64("ecc_volatile_corrected", ecc_corrected);
		j.u64("ecc_volatile_uncorrected", ecc_uncorrected);
	} else {
		j.str("ecc", ecc_rc < 0 ? "not read" : ("not reported: " + nv_err(ecc_rc)).c_str());
	}
	if (remap_rc == NV_SUCCESS) {
		j.num("remap_correctable", remap_correctable);
		j.num("remap_uncorrectable", remap_uncorrectable);
		j.boolean("remap_pending", remap_pending != 0);
		j.boolean("remap_failure", remap_failure != 0);
	} else {
		j.str("remap",
		      remap_rc < 0 ? "not read" : ("not reported: " + nv_err(remap_rc)).c_str());
	}
	return j.done();
}

std::string nvml_telemetry::json() const
{
	jw j;
	char r[32];
	snprintf(r, sizeof(r), "0x%llx", reasons_seen);
	j.num("samples", samples);
	if (temp_n)
		j.num("temp_max_c", temp_max).num("temp_avg_c", std::round(temp_sum / temp_n));
	if (power_n)
		j.num("power_max_w", std::round(power_max_w))
			.num("power_avg_w", std::round(power_sum_w / power_n));
	if (clock_n)
		j.num("sm_clock_min_mhz", sm_clock_min)
			.num("sm_clock_avg_mhz", std::round(sm_clock_sum / clock_n));
	j.str("clock_event_reasons", r);
	j.num("thermal_slowdown_samples", thermal_samples);
	j.num("power_brake_samples", power_brake_samples);
	j.num("hw_slowdown_samples", hw_slowdown_samples);
	j.num("other_processes_max", other_processes_max);
	std::vector<int> pids(other_pids.begin(), other_pids.end());
	j.raw("other_pids", json_int_array(pids));
	return j.done();
}

bool nvml_watch::start(const std::vector<int> &cuda_devs)
{
	const char *lib = getenv("VIGIL_NVML_LIBRARY");
	nv.lib = dlopen(lib && *lib ? lib : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv.lib && !(lib && *lib))
		nv.lib = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
	if (!nv.lib) {
		why = std::string("cannot load NVML: ") + dlerror();
		return false;
	}
	nv.init = (nvmlReturn_t(*)(void))sym("nvmlInit_v2", "nvmlInit");
	nv.shutdown = (nvmlReturn_t(*)(void))sym("nvmlShutdown", nullptr);
	nv.error_string = (const char *(*)(nvmlReturn_t))sym("nvmlErrorString", nullptr);
	nv.by_pci = (nvmlReturn_t(*)(const char *, nvmlDevice_t *))sym(
		"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
	nv.temperature = (nvmlReturn_t(*)(nvmlDevice_t, int, unsigned *))sym(
		"nvmlDeviceGetTemperature", nullptr);
	nv.power = (nvmlReturn_t(*)(nvmlDevice_t, unsigned *))sym("nvmlDeviceGetPowerUsage",
								      nullptr);
	nv.clock = (nvmlReturn_t(*)(nvmlDevice_t, int, unsigned *))sym("nvmlDeviceGetClockInfo",
									  nullptr);
	nv.reasons = (nvmlReturn_t(*)(nvmlDevice_t, unsigned long long *))sym(
		"nvmlDeviceGetCurrentClocksEventReasons",
		"nvmlDeviceGetCurrentClocksThrottleReasons");
	nv.ecc = (nvmlReturn_t(*)(nvmlDevice_t, int, int, unsigned long long *))sym(
		"nvmlDeviceGetTotalEccErrors", nullptr);
	nv.remap = (nvmlReturn_t(*)(nvmlDevice_t, unsigned *, unsigned *, unsigned *,
				    unsigned *))sym("nvmlDeviceGetRemappedRows", nullptr);
	nv.set_create = (nvmlReturn_t(*)(nvmlEventSet_t *))sym("nvmlEventSetCreate", nullptr);
	nv.register_events = (nvmlReturn_t(*)(nvmlDevice_t, unsigned long long,
					      nvmlEventSet_t))sym("nvmlDeviceRegisterEvents",
								  nullptr);
	nv.set_wait = (nvmlReturn_t(*)(nvmlEventSet_t, nvmlEventData_t *, unsigned))sym(
		"nvmlEventSetWait_v2", "nvmlEventSetWait");
	nv.set_free = (nvmlReturn_t(*)(nvmlEventSet_t))sym("nvmlEventSetFree", nullptr);
	nv.procs = (nvmlReturn_t(*)(nvmlDevice_t, unsigned *, void *))sym(
		"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2");
	if (!nv.init || !nv.by_pci) {
		why = "NVML lacks nvmlInit or nvmlDeviceGetHandleByPciBusId";
		return false;
	}
	nvmlReturn_t rc = nv.init();
	if (rc != NV_SUCCESS) {
		why = "nvmlInit: " + nv_err(rc);
		return false;
	}
	for (int d : cuda_devs) {
		dev_state *s = new dev_state;
		s->cuda_dev = d;
		char bus[32];
		if (cudaDeviceGetPCIBusId(bus, sizeof(bus), d) == cudaSuccess)
			rc = nv.by_pci(bus, &s->h);
		else
			rc = -1;
		if (rc != NV_SUCCESS)
			s->h = nullptr;
		devs.push_back(s);
	}
	available = true;
	procs_watch = nv.procs ? "ok" : "NVML lacks nvmlDeviceGetComputeRunningProcesses";
	t0 = now_s();
	running = true;
	if (nv.set_create && nv.register_events && nv.set_wait) {
		nvmlEventSet_t set;
		if ((rc = nv.set_create(&set)) == NV_SUCCESS) {
			event_set = set;
			int registered = 0;
			std::string last;
			for (dev_state *s : devs) {
				if (!s->h)
					continue;
				nvmlReturn_t r = nv.register_events(s->h, NV_EVENT_XID, set);
				if (r == NV_SUCCESS)
					registered++;
				else
					last = nv_err(r);
			}
			xid_supported = registered == (int)devs.size() && registered > 0;
			if (!xid_supported)
				xid_note = "Xid events not reported: " + (last.empty() ? "no handle" : last);
			if (registered)
				xid_thread = std::thread([this] { xid_loop(); });
		} else {
			xid_note = "nvmlEventSetCreate: " + nv_err(rc);
		}
	} else {
		xid_note = "NVML lacks the event API";
	}
	sampler = std::thread([this] { sample_loop(); });
	return true;
}

/* Under lock: list the compute processes on s's GPU, note the others (not this process). */
bool nvml_watch::record_procs(dev_state *s, unsigned phase)
{
	if (!nv.procs || !s->h)
		return false;
	nv_proc pr[64];
	unsigned cnt = 64;
	nvmlReturn_t rc = nv.procs(s->h, &cnt, pr);
	if (rc != NV_SUCCESS) {
		if (procs_watch == "ok")
			procs_watch = "nvmlDeviceGetComputeRunningProcesses: " + nv_err(rc);
		return false;
	}
	unsigned me = (unsigned)getpid(), others = 0;
	double at = now_s() - t0;
	nvml_telemetry &t = s->tel;
	for (unsigned k = 0; k < cnt && k < 64; k++) {
		if (pr[k].pid == me)
			continue;
		others++;
		nvml_proc *p = nullptr;
		for (nvml_proc &q : s->procs)
			if (q.pid == pr[k].pid)
				p = &q;
		if (!p && s->procs.size() < 16) {
			s->procs.push_back(nvml_proc());
			p = &s->procs.back();
			p->pid = pr[k].pid;
			p->name = proc_comm(pr[k].pid);
			p->first_s = at;
		}
		if (p) {
			p->phases |= phase;
			p->samples++;
			p->last_s = at;
			p->used_bytes = pr[k].used;
		}
		bool known = false;
		for (unsigned q : t.other_pids)
			known |= q == pr[k].pid;
		if (!known && t.other_pids.size() < 8)
			t.other_pids.push_back(pr[k].pid);
	}
	t.other_processes_max = std::max(t.other_processes_max, others);
	return true;
}

bool nvml_watch::procs_now(int dev, unsigned phase)
{
	std::lock_guard<std::mutex> g(lock);
	bool ok = false;
	for (dev_state *s : devs)
		if (s->cuda_dev == dev)
			ok = record_procs(s, phase);
	return ok;
}

std::vector<nvml_proc> nvml_watch::procs(int dev)
{
	std::lock_guard<std::mutex> g(lock);
	for (dev_state *s : devs)
		if (s->cuda_dev == dev)
			return s->procs;
	return {};
}

void nvml_watch::sample_loop()
{
	unsigned tick = 0;
	while (running) {
		bool procs = nv.procs && tick++ % 5 == 0;
		for (dev_state *s : devs) {
			if (!s->h)
				continue;
			unsigned v;
			unsigned long long r;
			std::lock_guard<std::mutex> g(lock);
			nvml_telemetry &t = s->tel;
			t.samples++;
			if (nv.temperature && nv.temperature(s->h, 0, &v) == NV_SUCCESS) {
				t.temp_max = t.temp_n ? std::max(t.temp_max, (double)v) : v;
				t.temp_sum += v;
				t.temp_n++;
			}
			if (nv.power && nv.power(s->h, &v) == NV_SUCCESS) {
				double w = v / 1000.0;
				t.power_max_w = t.power_n ? std::max(t.power_max_w, w) : w;
				t.power_sum_w += w;
				t.power_n++;
			}
			if (nv.clock && nv.clock(s->h, 1, &v) == NV_SUCCESS) {
				t.sm_clock_min = t.clock_n ? std::min(t.sm_clock_min, (double)v) : v;
				t.sm_clock_sum += v;
				t.clock_n++;
			}
			if (nv.reasons && nv.reasons(s->h, &r) == NV_SUCCESS) {
				t.reasons_seen |= r;
				if (r & (NV_REASON_SW_THERMAL | NV_REASON_HW_THERMAL))
					t.thermal_samples++;
				if (r & NV_REASON_POWER_BRAKE)
					t.power_brake_samples++;
				if (r & NV_REASON_HW_SLOWDOWN)
					t.hw_slowdown_samples++;
			}
			if (procs)
				record_procs(s, PROC_DURING);
		}
		for (int i = 0; i < 20 && running; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
}

void nvml_watch::xid_loop()
{
	while (running) {
		nvmlEventData_t d;
		memset(&d, 0, sizeof(d));
		nvmlReturn_t rc = nv.set_wait((nvmlEventSet_t)event_set, &d, 200);
		if (rc == NV_TIMEOUT)
			continue;
		if (rc != NV_SUCCESS) {
			std::this_thread::sleep_for(std::chrono::milliseconds(200));
			continue;
		}
		if (!(d.eventType & NV_EVENT_XID))
			continue;
		std::lock_guard<std::mutex> g(lock);
		for (dev_state *s : devs)
			if (s->h == d.device)
				s->xids.push_back({ d.eventData, now_s() - t0 });
	}
}

void nvml_watch::stop()
{
	if (!running)
		return;
	running = false;
	if (sampler.joinable())
		sampler.join();
	if (xid_thread.joinable())
		xid_thread.join();
}

void nvml_watch::close()
{
	stop();
	if (!available)
		return;
	if (event_set && nv.set_free)
		nv.set_free((nvmlEventSet_t)event_set);
	event_set = nullptr;
	for (dev_state *s : devs)
		delete s;
	devs.clear();
	if (nv.shutdown)
		nv.shutdown();
	available = false;
}

nvml_health nvml_watch::health(int dev)
{
	nvml_health h;
	for (dev_state *s : devs) {
		if (s->cuda_dev != dev || !s->h)
			continue;
		h.ok = true;
		unsigned long long c = 0, u = 0;
		if (nv.ecc) {
			/* corrected = 0, uncorrected = 1; volatile = 0 */
			h.ecc_rc = nv.ecc(s->h, 0, 0, &c);
			if (h.ecc_rc == NV_SUCCESS)
				h.ecc_rc = nv.ecc(s->h, 1, 0, &u);
			h.ecc_corrected = c;
			h.ecc_uncorrected = u;
		}
		if (nv.remap)
			h.remap_rc = nv.remap(s->h, &h.remap_correctable, &h.remap_uncorrectable,
					      &h.remap_pending, &h.remap_failure);
	}
	return h;
}

nvml_telemetry nvml_watch::telemetry(int dev)
{
	std::lock_guard<std::mutex> g(lock);
	for (dev_state *s : devs)
		if (s->cuda_dev == dev)
			return s->tel;
	return nvml_telemetry();
}

std::vector<nvml_xid> nvml_watch::xids(int dev)
{
	std::lock_guard<std::mutex> g(lock);
	for (dev_state *s : devs)
		if (s->cuda_dev == dev)
			return s->xids;
	return {};
}
