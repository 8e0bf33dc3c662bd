/* driver.c: a helper's CUDA driver error in the gpu check's words (see driver.h). */
#include "driver.h"
#include "../gpu/nvml.h"
#include "../lib/util.h"

#include <stdlib.h>
#include <string.h>

/* CUDA's names and strings for the two errors, runtime and driver API (cuda_err_str() prints
 * "cudaErrorInsufficientDriver (CUDA driver version is insufficient for CUDA runtime
 * version)"; the driver API's CUresult names are CUDA_ERROR_*). */
static const char *const insufficient[] = {
	"cudaErrorInsufficientDriver",
	"CUDA_ERROR_INSUFFICIENT_DRIVER",
	"CUDA driver version is insufficient for CUDA runtime version",
};
static const char *const no_device[] = {
	"cudaErrorNoDevice",
	"CUDA_ERROR_NO_DEVICE",
	"no CUDA-capable device is detected",
};

static bool any_of(const char *msg, const char *const *words, size_t n)
{
	for (size_t i = 0; msg && i < n; i++)
		if (strstr(msg, words[i]))
			return true;
	return false;
}

bool stress_cuda_driver_error(const char *msg)
{
	return any_of(msg, insufficient, ARRAY_SIZE(insufficient)) ||
	       any_of(msg, no_device, ARRAY_SIZE(no_device));
}

enum stress_driver stress_driver_reason(const struct fsroot *fs, const char *msg,
					struct strbuf *out)
{
	if (!stress_cuda_driver_error(msg))
		return STRESS_DRIVER_OTHER;
	struct nvml_host h;
	struct strbuf err = STRBUF_INIT;
	enum stress_driver r = STRESS_DRIVER_OTHER;
	nvml_host_init(&h);
	h.skip_link_counters = true;
	int rc = nvml_read_host(fs, &h, &err);
	bool no_lib = h.avail == NVML_NO_LIBRARY;
	if (no_lib || (h.avail == NVML_INIT_FAILED &&
		       h.init_rc == NVML_ERROR_DRIVER_NOT_LOADED)) {
		/* what the gpu check says of this host (src/checks/gpu.c), and its action */
		strbuf_addf(out, "no NVIDIA driver loaded (%s): load it (modprobe nvidia) or "
				 "install it; the GPU tests were not run",
			    no_lib ? "no NVML: the driver is not installed"
				   : "nvmlInit: the driver is not loaded");
		r = STRESS_NO_DRIVER;
	} else if (rc == 0 && h.avail == NVML_AVAILABLE &&
		   any_of(msg, insufficient, ARRAY_SIZE(insufficient))) {
		strbuf_addstr(out, "CUDA driver version is insufficient for CUDA runtime version: "
				   "the loaded NVIDIA driver is ");
		strbuf_add_clean(out, h.driver_version.rc == 0 ? h.driver_version.s : "(unknown)");
		if (h.cuda_driver_version.rc == 0 && h.cuda_driver_version.v)
			strbuf_addf(out, ", which runs CUDA up to %u.%u",
				    (unsigned)(h.cuda_driver_version.v / 1000),
				    (unsigned)(h.cuda_driver_version.v % 1000 / 10));
		strbuf_addstr(out, "; the helper was built with a newer CUDA: update the driver, or "
				   "build the helpers with a CUDA toolkit the driver runs");
		r = STRESS_OLD_DRIVER;
	}
	nvml_host_release(&h);
	strbuf_release(&err);
	return r;
}

void stress_driver_fix(const struct fsroot *fs, char **code, char **msg)
{
	struct strbuf out = STRBUF_INIT;
	if (!*msg)
		return;
	enum stress_driver r = stress_driver_reason(fs, *msg, &out);
	if (r != STRESS_DRIVER_OTHER) {
		free(*msg);
		*msg = strbuf_detach(&out, NULL);
	}
	if (r != STRESS_DRIVER_OTHER) {
		free(*code);
		*code = xstrdup(r == STRESS_NO_DRIVER ? "no_driver" : "old_driver");
	}
	strbuf_release(&out);
}

void stress_driver_fix_prefixed(const struct fsroot *fs, char **line)
{
	const char *colon = *line ? strstr(*line, ": ") : NULL;
	if (!colon)
		return;
	char *code = xstrndup(*line, (size_t)(colon - *line)), *msg = xstrdup(colon + 2);
	stress_driver_fix(fs, &code, &msg);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s: %s", code, msg);
	free(*line);
	*line = strbuf_detach(&sb, NULL);
	free(code);
	free(msg);
}
