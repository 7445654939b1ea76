/* The host BLAS, loaded privately with dlopen on first use. */
#ifndef BLASFT_HOSTBLAS_H
#define BLASFT_HOSTBLAS_H

/* Address of `name` in the host BLAS, never one inside libblas_ft itself. Loads the library on
 * the first call (thread-safe). A routine the host lacks is fatal: it is named on stderr and the
 * process aborts, since no result at all can be given for it. */
void *blasft_host_sym(const char *name);

/* Like blasft_host_sym, but returns NULL for a missing routine. */
void *blasft_host_sym_optional(const char *name);

/* Whether addr lies inside libblas_ft itself. */
int blasft_inside_self(const void *addr);

/* Whether a GEMM of type t (blasft_type) can be computed: the host BLAS's, or a bundled one of
 * the application where no host BLAS could be loaded or BLASFT_HOST_BLAS=none. */
int blasft_host_gemm_ready(int t);

/* openblas_get_num_threads (an int (void) function) of the library the GEMMs are computed with
 * (blasft_host_gemm_ready), NULL where it has none: the engine sizes its passes by it. */
void *blasft_host_threads_fn(void);

/* The path of the loaded host library ("" before it is loaded). */
const char *blasft_host_path(void);

/* How the host BLAS's idle threads were set up when it was loaded: "short" (libblas_ft gave an
 * OpenBLAS it loaded OPENBLAS_THREAD_TIMEOUT=4 so its workers sleep at once), "the user's" (the
 * program's environment sets it), "already loaded" (the program had loaded the library itself),
 * "unchanged (mode off)", or "not loaded". */
const char *blasft_host_spin(void);

#endif
