/* system.h: the 'system' check (see system.c). */
#ifndef VIGIL_CHECK_SYSTEM_H
#define VIGIL_CHECK_SYSTEM_H

#include "check.h"

int check_system_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
