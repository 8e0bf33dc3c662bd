/* infiniband.c: the 'infiniband' check. Placeholder until implemented: says so, never claims health. */
#include "infiniband.h"

int check_infiniband_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	UNUSED(ctx);
	UNUSED(res);
	return error_set(err, "the 'infiniband' check is not implemented yet");
}
