/* libblas_ft public C API of the consistency layer (host/device copies of GEMM operands), for
 * programs relinked against libblas_ft (-lblas_ft). Optional: an unmodified program is safe
 * without it (with BLASFT_CACHE=hash every reuse of a device copy is checked by hashing the host
 * data); the declarations make that check free. See docs/consistency.md. */
#ifndef BLAS_FT_CACHE_H
#define BLAS_FT_CACHE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef BLASFT_API
#define BLASFT_API __attribute__((visibility("default")))
#endif

/* The program wrote host memory [ptr, ptr + bytes) (or will have, before its next BLAS call on
 * it): device copies of that memory are refreshed at their next use without a check. With
 * BLASFT_CACHE=declared only the declared part is uploaded (every write to an operand must be
 * declared); with BLASFT_CACHE=hash the whole copy is (the check is saved). */
BLASFT_API void blasft_cache_mark_changed(const void *ptr, size_t bytes);

/* The program did not write [ptr, ptr + bytes) since its last BLAS call on it, and will not
 * before the next: the next use of
 * each device copy lying wholly inside the range skips the check (one use; declare again before
 * the following one). A false declaration gives stale results. */
BLASFT_API void blasft_cache_mark_unchanged(const void *ptr, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
