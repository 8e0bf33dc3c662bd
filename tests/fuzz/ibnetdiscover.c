/*
 * ibnetdiscover.c: libFuzzer target for the ibnetdiscover reader of 'vigil fabric links' and
 * 'vigil fabric burnin plan' (src/fabric/topo.h, format forced to ibnetdiscover). The same
 * invariants as iblinkinfo.c (tests/fuzz/fabric_fuzz.h).
 */
#include "fabric_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fabric_fuzz_one(data, size, FABRIC_FMT_IBNETDISCOVER);
	return 0;
}
