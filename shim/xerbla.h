/* Invalid arguments of a call that libblas_ft cannot pass to any other BLAS (a bundled name in a
 * process without that routine, shim/gemm_entry.c), reported as the reference BLAS would: through
 * the xerbla_ or cblas_xerbla in effect (a program's own, else libblas_ft's, which end the
 * program as the reference's do). */
#ifndef BLASFT_SHIM_XERBLA_H
#define BLASFT_SHIM_XERBLA_H

/* The Fortran routine srname (as the reference names it: "DGEMM"), parameter number info. */
void blasft_xerbla_fortran(const char *srname, int info);
/* The CBLAS routine rout, parameter `position` in CBLAS's numbering (the layout is 1). */
void blasft_xerbla_cblas(int position, const char *rout);

#endif
