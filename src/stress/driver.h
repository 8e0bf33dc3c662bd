/*
 * driver.h: CUDA's words for "no usable driver" in a helper's error, told in the gpu check's
 * words. Without the NVIDIA kernel driver the CUDA runtime says "CUDA driver version is
 * insufficient for CUDA runtime version" (cudaErrorInsufficientDriver, 35), which reads as an
 * old driver; with a driver but no device, "no CUDA-capable device is detected"
 * (cudaErrorNoDevice / CUDA_ERROR_NO_DEVICE, 100). NVML, asked as the gpu check asks it, says
 * which: no driver loaded at all, or a driver too old for the helper's CUDA.
 */
#ifndef VIGIL_STRESS_DRIVER_H
#define VIGIL_STRESS_DRIVER_H

#include "../lib/strbuf.h"
#include "../sys/fsroot.h"

#include <stdbool.h>

/* A helper's message that is one of CUDA's driver errors above (pure). */
bool stress_cuda_driver_error(const char *msg);

enum stress_driver { STRESS_DRIVER_OTHER, STRESS_NO_DRIVER, STRESS_OLD_DRIVER };

/*
 * For msg, a helper's error: STRESS_NO_DRIVER with *out "no NVIDIA driver loaded (...)" when
 * NVML (under fs) finds no driver; STRESS_OLD_DRIVER with *out CUDA's reason and both
 * versions (the loaded driver's, the newest CUDA it supports) when it finds one and CUDA said
 * the driver is insufficient; else STRESS_DRIVER_OTHER and *out untouched. Reads NVML only
 * when msg is a driver error.
 */
enum stress_driver stress_driver_reason(const struct fsroot *fs, const char *msg,
					struct strbuf *out);

/*
 * The same applied to a run's error in place: *code and *msg (malloc'd, either may be NULL)
 * become "no_driver" and vigil's words for STRESS_NO_DRIVER, or "old_driver" and CUDA's
 * reason with the versions for STRESS_OLD_DRIVER. prefixed: msg is a "code: message" of vigil-nccl's errors,
 * whose code is replaced the same way.
 */
void stress_driver_fix(const struct fsroot *fs, char **code, char **msg);
void stress_driver_fix_prefixed(const struct fsroot *fs, char **line);

#endif
