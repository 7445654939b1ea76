/* The CUDA runtime keeps one "last error" per host thread, which the application reads after its
 * own calls (PyTorch after every kernel launch). The library's calls must leave it as they found
 * it: an error of the library's own is taken from it, one the application left pending stays. */
#ifndef BLASFT_CUDA_ERRORS_H
#define BLASFT_CUDA_ERRORS_H

#include <cuda_runtime_api.h>

/* The error pending now (not taken): call before the library's own calls. */
static inline cudaError_t blasft_err_pending(void) { return cudaPeekAtLastError(); }

/* Whether the launches since `before` was read all succeeded; an error of theirs is taken from
 * the application's view. */
static inline int blasft_launched_ok(cudaError_t before)
{
    const cudaError_t e = cudaPeekAtLastError();
    if (e == before || e == cudaSuccess)
        return 1;
    cudaGetLastError();
    return 0;
}

/* At the end of a library entry point: where nothing was pending at entry, whatever the
 * library's calls left is taken. */
static inline void blasft_err_restore(cudaError_t before)
{
    if (before == cudaSuccess)
        cudaGetLastError();
}

#endif
