/* The families of names under which applications bundle a BLAS privately (docs/bundled-blas.md),
 * in the order they are looked up: X(prefix, Fortran suffix, CBLAS suffix, integer type). A
 * family's routines are prefix ?gemm Fortran-suffix, prefix cblas_?gemm CBLAS-suffix and prefix
 * openblas_get_num_threads CBLAS-suffix. The one list of them: the exported entry points
 * (shim/gemm_entry.c) and the bundled GEMMs the host engine may compute with (src/hostblas.c). */
#ifndef BLASFT_BUNDLED_NAMES_H
#define BLASFT_BUNDLED_NAMES_H

#define BLASFT_BUNDLED_FAMILIES(X)                                                                \
    X(scipy_, _64_, 64_, int64_t) /* numpy >= 2 (scipy-openblas64) */                             \
    X(, _64_, 64_, int64_t)       /* OpenBLAS built with INTERFACE64 and SYMBOLSUFFIX=64_ */      \
    X(scipy_, _, , int)           /* scipy (scipy-openblas32) */

#endif
