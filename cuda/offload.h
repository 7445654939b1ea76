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
 * Operands larger than the budget together run in tiles, each one such call (halved along m, n
 * or k until a tile fits in half the budget; docs/consistency.md).
 * Returns 0; -1 if it could not run there (no GPU, CUDA failure before anything of C was
 * written, or with beta = 0): then the caller runs the GEMM elsewhere. A failure after part of C
 * was copied back with beta != 0 has the rest computed by the host engine (0). Once a tile has
 * run, a later tile that cannot run on the GPU runs on the host engine and the call returns 0.
 *
 * Still missing for issue 6 (docs/consistency.md): the engine's encodings are not kept (the
 * codec hook is NULL: the engine encodes every operand on every call). */
#ifndef BLASFT_OFFLOAD_H
#define BLASFT_OFFLOAD_H

#include "blas_ft.h"
#include "gemm.h"

int blasft_offload_gemm(const blasft_gemm *g, const blasft_config *cfg);

/* The process cache's counters (for tests and benchmarks); -1 if no cache exists (yet). */
struct blasft_cache_stats;
int blasft_offload_cache_stats(struct blasft_cache_stats *out);

#endif
