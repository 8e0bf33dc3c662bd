/* storage.c: the 'storage' check. Placeholder until implemented: says so, never claims health. */
#include "storage.h"

int check_storage_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err)
{
	UNUSED(ctx);
	UNUSED(res);
	return error_set(err, "the 'storage' check is not implemented yet");
}
