/* Engine contexts that CUDA graphs may replay. A protected GEMM captured into a graph bakes the
 * context's workspace, cuBLAS handle and report slots into that graph, which the application
 * may launch at any time, on any stream, until it destroys it. Such a context must not grow
 * (reallocate), be shared with uncaptured GEMMs or be released while a graph holds it: each
 * graph captured with it retains a CUDA user object whose destructor (CUDA calls it once the
 * graph and its executable instances are destroyed and their launches completed) counts it
 * down. The interposer gives a held context up when it would use it outside a capture
 * (graph_hold_retire) and takes a fresh one; the retired context is released once its last
 * graph is gone (graph_hold_reap). */
#ifndef BLASFT_GRAPH_HOLD_H
#define BLASFT_GRAPH_HOLD_H

#include "blasft_gpu.h"

#include <cuda_runtime_api.h>

typedef struct graph_hold graph_hold;

/* A hold on ctx (made on device), not yet retained by any graph; NULL without memory. */
graph_hold *graph_hold_new(blasft_gpu_ctx *ctx, int device);

/* The graph being captured on stream retains h (once per capture sequence). 0, or -1 where the
 * capture's graph could not be read or could not retain it (the caller then must not enqueue
 * with h's context into that capture). */
int graph_hold_capture(graph_hold *h, cudaStream_t stream);

/* Whether a graph may still replay h's context. */
int graph_hold_live(const graph_hold *h);

/* h, which no graph holds any more, is freed; its context stays the caller's. */
void graph_hold_drop(graph_hold *h);

/* The caller lets go of h and its context: released at once where no graph holds it, else by a
 * later graph_hold_reap. forget: the context's device was reset, so its CUDA objects are gone
 * and only its host memory is freed. */
void graph_hold_retire(graph_hold *h, int forget);

/* Releases the retired contexts whose graphs are all gone. Not while the calling thread's
 * stream is being captured (releasing frees device memory). */
void graph_hold_reap(void);

#endif
