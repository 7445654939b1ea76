/* Offload of host-memory GEMMs through the consistency layer (issue 6): the entry point for the
 * dispatch (src/dispatch.c, try_gpu, when BLASFT_CACHE is not off).
 *
 *   int blasft_offload_gemm(const blasft_gemm *g, const blasft_config *cfg);
 *
 * Runs g (host operands) protected on the GPU: A, B (and C when beta != 0) come from the
 * process's device cache (src/consistency/cache.h; BLASFT_CACHE selects off | hash | declared,
 * BLASFT_DEVICE_MEM its budget, BLASFT_STAGING the pinned staging size), the GEMM runs through
 * blasft_gpu_gemm_run on the device copies, C is copied back (and kept on the device, its hash
 * recorded, so that C used as the next operand is not uploaded again). Synchronous: returns when
 * the host C holds the result.
 * Returns 0; -1 if it could not run there (no GPU, a copy does not fit the budget, CUDA failure):
 * then the host C is unchanged and the caller runs the GEMM on the host.
 *
 * Still missing for issue 6 (docs/consistency.md): the engine's encodings are not yet kept (the
 * codec hook is NULL: the engine encodes every operand on every call), no tiling of operands
 * larger than the budget, no overlap of the change check with the GEMM. */
#ifndef BLASFT_OFFLOAD_H
#define BLASFT_OFFLOAD_H

#include "blas_ft.h"
#include "gemm.h"

int blasft_offload_gemm(const blasft_gemm *g, const blasft_config *cfg);

/* The process cache's counters (for tests and benchmarks); -1 if no cache exists (yet). */
struct blasft_cache_stats;
int blasft_offload_cache_stats(struct blasft_cache_stats *out);

#endif
