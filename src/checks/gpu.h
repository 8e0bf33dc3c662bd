/* gpu.h: the 'gpu' check (see gpu.c). */
#ifndef VIGIL_CHECK_GPU_H
#define VIGIL_CHECK_GPU_H

#include "check.h"

int check_gpu_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
