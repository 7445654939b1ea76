/* Shared by the host engine's tests: the engine configuration they start from (element access:
 * abft_ld / abft_st of abft_internal.h). */
#ifndef BLASFT_ABFT_TEST_UTIL_H
#define BLASFT_ABFT_TEST_UTIL_H

#include "abft/abft_internal.h"
#include "blas_ft.h"

#include <string.h>

/* Mode correct, on_error recompute, PEA (p 2, omega 3), linear weights; no environment read. */
static inline blasft_config abft_t_cfg(int bs, int checksums)
{
    blasft_config c;
    memset(&c, 0, sizeof c);
    c.block_size = bs;
    c.omega = 3.0;
    c.mode = BLASFT_MODE_CORRECT;
    c.checksums = checksums;
    c.weights = BLASFT_WEIGHTS_LINEAR;
    c.threshold = BLASFT_THRESHOLD_PEA;
    c.pea_p = 2;
    c.on_error = BLASFT_ON_ERROR_RECOMPUTE;
    c.promote = BLASFT_PROMOTE_OFF; /* S and C as themselves: the tests of the promoted path say so */
    return c;
}

#endif
