/* system.c: the 'system' check. Placeholder until implemented: says so, never claims health. */
#include "system.h"

int check_system_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	UNUSED(ctx);
	UNUSED(res);
	return error_set(err, "the 'system' check is not implemented yet");
}
