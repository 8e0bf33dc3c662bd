/* infiniband.h: the 'infiniband' check (see infiniband.c). */
#ifndef VIGIL_CHECK_INFINIBAND_H
#define VIGIL_CHECK_INFINIBAND_H

#include "check.h"

int check_infiniband_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
