/*
 * iblinkinfo.c: libFuzzer target for the iblinkinfo reader of 'vigil fabric links' and
 * 'vigil fabric burnin plan' (src/fabric/topo.h, format forced to iblinkinfo). No crash, leak
 * or UB; every port, peer and link names nodes that exist; the survey's counts add up and its
 * JSON parses back; a plan over the graph passes plan_verify().
 */
#include "fabric_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fabric_fuzz_one(data, size, FABRIC_FMT_IBLINKINFO);
	return 0;
}
