/* Engine contexts that CUDA graphs may replay: see graph_hold.h. */
#include "graph_hold.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct graph_hold {
    blasft_gpu_ctx *ctx; /* NULL once forgotten (its device was reset) */
    int device;
    atomic_int graphs;   /* graphs (and their instances) that may replay ctx */
    unsigned long long capture; /* the last capture sequence that retained this hold */
    graph_hold *next;    /* on the retired list */
};

/* Retired holds whose graphs may still run; their count lets graph_hold_reap return at once in
 * the usual case of none. */
static graph_hold *retired;
static atomic_int retired_count;
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;

graph_hold *graph_hold_new(blasft_gpu_ctx *ctx, int device)
{
    graph_hold *h = calloc(1, sizeof *h);
    if (h) {
        h->ctx = ctx;
        h->device = device;
        atomic_init(&h->graphs, 0);
    }
    return h;
}

/* The user object's destructor: CUDA calls it on a thread of its own, where no CUDA call is
 * allowed; the hold itself is freed only by whoever sees the count at zero after retiring. */
static void CUDART_CB graph_gone(void *p)
{
    atomic_fetch_sub(&((graph_hold *)p)->graphs, 1);
}

int graph_hold_capture(graph_hold *h, cudaStream_t stream)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    cudaGraph_t graph = NULL;
#if CUDART_VERSION >= 13000
    if (cudaStreamGetCaptureInfo(stream, &cs, &id, &graph, NULL, NULL, NULL) != cudaSuccess)
#else
    if (cudaStreamGetCaptureInfo_v2(stream, &cs, &id, &graph, NULL, NULL) != cudaSuccess)
#endif
        return -1;
    if (cs != cudaStreamCaptureStatusActive || !graph)
        return -1;
    if (h->capture == id)
        return 0;
    cudaUserObject_t obj;
    atomic_fetch_add(&h->graphs, 1);
    if (cudaUserObjectCreate(&obj, h, graph_gone, 1, cudaUserObjectNoDestructorSync) != cudaSuccess) {
        atomic_fetch_sub(&h->graphs, 1);
        return -1;
    }
    if (cudaGraphRetainUserObject(graph, obj, 1, cudaGraphUserObjectMove) != cudaSuccess) {
        cudaUserObjectRelease(obj, 1); /* its destructor counts down */
        return -1;
    }
    h->capture = id;
    return 0;
}

int graph_hold_live(const graph_hold *h) { return atomic_load(&h->graphs) > 0; }

void graph_hold_drop(graph_hold *h) { free(h); }

static void release(graph_hold *h)
{
    if (h->ctx)
        blasft_gpu_ctx_release(h->ctx, h->device, 0);
    free(h);
}

void graph_hold_retire(graph_hold *h, int forget)
{
    if (forget && h->ctx) {
        blasft_gpu_ctx_forget(h->ctx);
        h->ctx = NULL;
    }
    if (!graph_hold_live(h)) {
        release(h);
        return;
    }
    pthread_mutex_lock(&retired_lock);
    h->next = retired;
    retired = h;
    atomic_fetch_add(&retired_count, 1);
    pthread_mutex_unlock(&retired_lock);
}

void graph_hold_reap(void)
{
    if (atomic_load(&retired_count) == 0)
        return;
    graph_hold *gone = NULL;
    pthread_mutex_lock(&retired_lock);
    for (graph_hold **p = &retired; *p;) {
        graph_hold *h = *p;
        if (graph_hold_live(h)) {
            p = &h->next;
            continue;
        }
        *p = h->next;
        h->next = gone;
        gone = h;
        atomic_fetch_sub(&retired_count, 1);
    }
    pthread_mutex_unlock(&retired_lock);
    while (gone) {
        graph_hold *h = gone;
        gone = h->next;
        release(h);
    }
}
