/* gpu.c: the 'gpu' check. Placeholder until implemented: says so, never claims health. */
#include "gpu.h"

int check_gpu_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	UNUSED(ctx);
	UNUSED(res);
	return error_set(err, "the 'gpu' check is not implemented yet");
}
