/* pcie.c: the 'pcie' check. Placeholder until implemented: says so, never claims health. */
#include "pcie.h"

int check_pcie_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	UNUSED(ctx);
	UNUSED(res);
	return error_set(err, "the 'pcie' check is not implemented yet");
}
