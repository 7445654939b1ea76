/* Host ABFT: the protected GEMM on the host, around the host BLAS (method.md). */
#ifndef BLASFT_ABFT_H
#define BLASFT_ABFT_H

#include "blas_ft.h"
#include "gemm.h"

/* Runs g with checksums, checks, corrects and reports as cfg says (mode correct or detect).
 * Returns 0, or -1 if the protection could not run (then nothing was changed, and the caller
 * runs the plain GEMM). */
int blasft_abft_host_gemm(const blasft_gemm *g, const blasft_config *cfg);

#endif
