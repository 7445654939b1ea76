/* The identity of the current device's CUDA context (blasft_gpu.h, blasft_gpu_context_id).
 *
 * An application's cudaDeviceReset destroys the device's primary context and with it every
 * stream, event, cuBLAS handle and allocation this library made there; the next runtime call
 * makes a new context with the same CUcontext handle, and its allocations may get the old
 * addresses (seen on the H100: the first cudaMalloc after a reset returns the address freed by
 * it). Only the context's process-unique id (cuCtxGetId, CUDA 12.0) tells the two apart. The
 * driver functions are reached through the runtime, so that the library needs no link to the
 * driver (it must load on machines without one). */
#include "blasft_gpu.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>

static CUresult (*get_current)(CUcontext *);
static CUresult (*get_id)(CUcontext, unsigned long long *);
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    enum cudaDriverEntryPointQueryResult q;
    void *f = NULL, *g = NULL;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &f, 12000, cudaEnableDefault, &q) !=
            cudaSuccess || q != cudaDriverEntryPointSuccess ||
        cudaGetDriverEntryPointByVersion("cuCtxGetId", &g, 12000, cudaEnableDefault, &q) !=
            cudaSuccess || q != cudaDriverEntryPointSuccess)
        return;
    *(void **)&get_current = f;
    *(void **)&get_id = g;
}

uint64_t blasft_gpu_context_id(void)
{
    pthread_once(&resolve_once, resolve);
    if (!get_current || !get_id)
        return 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        CUcontext c = NULL;
        unsigned long long id = 0;
        if (get_current(&c) == CUDA_SUCCESS && c && get_id(c, &id) == CUDA_SUCCESS)
            return (uint64_t)id;
        /* no context current yet, or the one the application reset: the runtime makes the
         * device's primary context current (a new one after a reset) */
        if (attempt == 0 && cudaFree(NULL) != cudaSuccess)
            return 0;
    }
    return 0;
}
