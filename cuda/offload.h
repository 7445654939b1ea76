/* Offload of host-memory GEMMs through the consistency layer (issue 6): the entry point for the
 * dispatch (src/dispatch.c, try_gpu, when BLASFT_CACHE is not off).
 *
 *   int blasft_offload_gemm(const blasft_gemm *g, const blasft_config *cfg);
 *
 * Runs g (host operands) protected on the GPU: A, op(B)'s column panels and C are entries of the
 * process's device cache (src/consistency/cache.h; BLASFT_CACHE selects off | hash | declared,
 * BLASFT_DEVICE_MEM its budget, BLASFT_STAGING the pinned staging size). Copies go through the
 * pinned staging slots, packed/unpacked by the host thread pool with the change hash computed in
 * the same pass (cuda/offload_backend.c). The GEMM runs in column panels (blasft_gpu_gemm_run per
 * panel): B's panel j+1 is checked and uploaded while the GPU computes panel j, C's panels come
 * back as they finish. With beta = 0 and A unchanged at its last check, the GEMM starts on A's
 * cached copy and A's check runs beside it; a change found means the changed chunks are uploaded
 * and the GEMM runs again (never a result from stale data). C is kept on the device with its
 * hash, so that C used as the next operand is not uploaded again. Synchronous: returns when the
 * host C holds the result.
 * Returns 0; -1 if it could not run there (no GPU, a copy does not fit the budget, CUDA failure):
 * then the caller runs the GEMM elsewhere (a failure after C's copy back started can leave C
 * partly written: only with beta = 0 is a host rerun then still exact).
 *
 * Still missing for issue 6 (docs/consistency.md): the engine's encodings are not kept (the
 * codec hook is NULL: the engine encodes every operand on every call), no tiling of operands
 * larger than the budget (-1: the engine's plain copies, then the host). */
#ifndef BLASFT_OFFLOAD_H
#define BLASFT_OFFLOAD_H

#include "blas_ft.h"
#include "gemm.h"

int blasft_offload_gemm(const blasft_gemm *g, const blasft_config *cfg);

/* The process cache's counters (for tests and benchmarks); -1 if no cache exists (yet). */
struct blasft_cache_stats;
int blasft_offload_cache_stats(struct blasft_cache_stats *out);

#endif
