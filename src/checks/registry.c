/*
 * registry.c: the one table of checks. Order here is the order of output.
 * Deadlines are defaults; "<check>.timeout" in the configuration (seconds) overrides them.
 */
#include "check.h"
#include "gpu.h"
#include "kernel.h"
#include "pcie.h"
#include "infiniband.h"
#include "storage.h"
#include "system.h"

const struct check_def check_table[] = {
	{ "gpu", "GPUs through NVML: count, ECC, row remapping, NVLink, clocks, PCIe, versions",
	  15000, check_gpu_run },
	{ "kernel", "kernel log: Xid, SXid, GPU off the bus, OOM killer, PCIe downgrades, hung tasks",
	  10000, check_kernel_run },
	{ "pcie", "PCIe links of GPUs, NVSwitches and NICs: speed, width, AER counters", 5000,
	  check_pcie_run },
	{ "infiniband", "InfiniBand ports: state, rate, error counters rising", 5000,
	  check_infiniband_run },
	{ "storage", "mounts: space, inodes, presence, write/fsync/read probe", 15000,
	  check_storage_run },
	{ "system", "host: GPUDirect RDMA module, fabric manager, CPU frequency, swap, memory", 5000,
	  check_system_run },
};

const size_t check_table_nr = ARRAY_SIZE(check_table);

const struct check_def *check_find(const char *name)
{
	for (size_t i = 0; i < check_table_nr; i++)
		if (!strcmp(check_table[i].name, name))
			return &check_table[i];
	return NULL;
}
