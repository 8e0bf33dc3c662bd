/* nvml_errors.c: NVML's return codes in NVML's own words (nvml.h: nvml_error_name()). */
#include "nvml.h"

const char *nvml_error_name(int rc)
{
	static const struct {
		int rc;
		const char *name;
	} names[] = {
		{ NVML_SUCCESS, "Success" },
		{ NVML_NOT_READ, "Not read this time" },
		{ NVML_ERROR_UNINITIALIZED, "Uninitialized" },
		{ NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument" },
		{ NVML_ERROR_NOT_SUPPORTED, "Not Supported" },
		{ NVML_ERROR_NO_PERMISSION, "Insufficient Permissions" },
		{ NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized" },
		{ NVML_ERROR_NOT_FOUND, "Not Found" },
		{ NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size" },
		{ NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power" },
		{ NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded" },
		{ NVML_ERROR_TIMEOUT, "Timeout" },
		{ NVML_ERROR_IRQ_ISSUE, "Interrupt request issue" },
		{ NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found" },
		{ NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found" },
		{ NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM" },
		{ NVML_ERROR_GPU_IS_LOST, "GPU is lost" },
		{ NVML_ERROR_RESET_REQUIRED, "GPU requires restart" },
		{ NVML_ERROR_OPERATING_SYSTEM, "The operating system has blocked the request" },
		{ NVML_ERROR_LIB_RM_VERSION_MISMATCH, "RM has detected an NVML/RM version mismatch" },
		{ NVML_ERROR_IN_USE, "In use by another client" },
		{ NVML_ERROR_MEMORY, "Insufficient Memory" },
		{ NVML_ERROR_NO_DATA, "No data" },
		{ NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "ECC is not supported for vGPU" },
		{ NVML_ERROR_INSUFFICIENT_RESOURCES, "Insufficient resources" },
		{ NVML_ERROR_FREQ_NOT_SUPPORTED, "Frequency not supported" },
		{ NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "Argument version mismatch" },
		{ NVML_ERROR_DEPRECATED, "Deprecated" },
		{ NVML_ERROR_NOT_READY, "Not ready" },
		{ NVML_ERROR_GPU_NOT_FOUND, "GPU not found" },
		{ NVML_ERROR_INVALID_STATE, "Invalid state" },
		{ NVML_ERROR_UNKNOWN, "Unknown Error" },
	};
	static __thread char other[32];
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].rc == rc)
			return names[i].name;
	snprintf(other, sizeof(other), "error %d", rc);
	return other;
}
