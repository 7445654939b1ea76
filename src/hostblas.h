/* The host BLAS, loaded privately with dlopen on first use. */
#ifndef BLASFT_HOSTBLAS_H
#define BLASFT_HOSTBLAS_H

/* Address of `name` in the host BLAS, never one inside libblas_ft itself. Loads the library on
 * the first call (thread-safe). A routine the host lacks is fatal: it is named on stderr and the
 * process aborts, since no result at all can be given for it. */
void *blasft_host_sym(const char *name);

/* Like blasft_host_sym, but returns NULL for a missing routine. */
void *blasft_host_sym_optional(const char *name);

/* The path of the loaded host library ("" before it is loaded). */
const char *blasft_host_path(void);

#endif
