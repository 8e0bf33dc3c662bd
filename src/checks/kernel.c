/* kernel.c: the 'kernel' check. Placeholder until implemented: says so, never claims health. */
#include "kernel.h"

int check_kernel_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	UNUSED(ctx);
	UNUSED(res);
	return error_set(err, "the 'kernel' check is not implemented yet");
}
