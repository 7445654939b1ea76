/* The application's own definition of a routine that libblas_ft also exports under the same name:
 * the GEMMs of BLAS builds that applications bundle privately under other names (numpy's and
 * scipy's wheels: scipy_cblas_dgemm64_, ...; ILP64 OpenBLAS: dgemm_64_), which such a call
 * reaches unchanged where libblas_ft does not take it (shim/gemm_entry.c). */
#ifndef BLASFT_FOREIGN_H
#define BLASFT_FOREIGN_H

/* The first definition of `name` outside libblas_ft: after it in the global scope, else in any
 * loaded object or its dependencies (a library an extension module loaded with RTLD_LOCAL is in
 * no global scope); NULL if there is none. Not cached: call once per name. */
void *blasft_foreign_sym(const char *name);

#endif
