/* kernel.h: the 'kernel' check (see kernel.c). */
#ifndef VIGIL_CHECK_KERNEL_H
#define VIGIL_CHECK_KERNEL_H

#include "check.h"

int check_kernel_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
