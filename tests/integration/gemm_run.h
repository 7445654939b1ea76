/* Issues one gemm_case through the BLAS the program is linked with, as an ordinary program
 * would: CBLAS (row- or column-major) or the Fortran interface (column-major only). */
#ifndef GEMM_RUN_H
#define GEMM_RUN_H

#include "gemm_check.h"

enum gemm_api { API_CBLAS = 0, API_FORTRAN };

/* Name of the exported routine a call goes to, e.g. "cblas_dgemm" or "dgemm_". */
const char *gr_routine(enum gemm_api api, enum gemm_type t);

/* Runs the case; c is updated in place. API_FORTRAN requires g->order == ORDER_COL. */
void gr_run(enum gemm_api api, const gemm_case *g, const void *a, const void *b, void *c);

/* Allocates A, B, C and C0 for g, fills them from *state, runs it, checks it against the oracle
 * and frees everything. Returns the number of wrong elements. If nan_c is set and beta is 0, C is
 * filled with NaN first (the reference never reads C then). */
long gr_run_checked(enum gemm_api api, const gemm_case *g, uint64_t *state, int nan_c);

#endif
