/* storage.h: the 'storage' check (see storage.c). */
#ifndef VIGIL_CHECK_STORAGE_H
#define VIGIL_CHECK_STORAGE_H

#include "check.h"

int check_storage_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
