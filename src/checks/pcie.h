/* pcie.h: the 'pcie' check (see pcie.c). */
#ifndef VIGIL_CHECK_PCIE_H
#define VIGIL_CHECK_PCIE_H

#include "check.h"

int check_pcie_run(const struct check_ctx *ctx, struct check_result *res, struct strbuf *err);

#endif
